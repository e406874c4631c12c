"""One run in other units than the rest (runs_units.check_units, session 43 audit): a step time
in milliseconds among seconds was fitted in silence (0.1 % efficiency, 372 % rms residual); it
is refused in one line naming the run, its value, what the others imply and the likely mix-up.
Runs that scale badly but in one unit are read as before."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text
from scalesim.runs_units import UNIT_FACTOR, worst_pair

HEADER = "devices,nodes,step_time_s\n"


def _refusal(tmp_path, capsys, text: str) -> str:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_a_step_time_in_milliseconds_mid_file_is_named(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, HEADER + "1,1,0.100\n2,1,0.104\n4,1,106\n8,1,0.110\n"
                   "16,2,0.125\n")
    assert "the run on 4 devices gives step_time_s 106, 991x the 0.107 s the other runs imply" in err
    assert "likely in milliseconds where the others are in seconds" in err
    assert "write every step_time_s in seconds" in err


def test_the_last_run_in_milliseconds_is_named_not_fitted_as_a_slow_network(tmp_path, capsys):
    """Before: 'Likely cause: Inter-server link', a fitted 124,954 ms gradient transfer."""
    err = _refusal(tmp_path, capsys, HEADER + "1,1,0.100\n2,1,0.104\n4,1,0.106\n8,1,0.110\n"
                   "16,2,125\n")
    assert "the run on 16 devices gives step_time_s 125" in err
    assert "milliseconds where the others are in seconds" in err


def test_the_first_run_in_milliseconds_is_named_not_the_others_as_past_linear(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, HEADER + "1,1,100\n2,1,0.104\n4,1,0.106\n8,1,0.110\n")
    assert "the run on 1 device gives step_time_s 100," in err
    assert "efficient" not in err  # not the super-linear refusal of the run at 8


def test_a_rate_in_tokens_among_samples_is_named(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, "devices,nodes,samples_per_s\n1,1,100\n2,1,195\n"
                   "4,1,780000\n8,1,760\n")
    assert "the run on 4 devices gives samples_per_s 780,000" in err
    assert "tokens" in err and "write every samples_per_s in samples per second" in err


def test_a_minutes_row_among_seconds_is_named(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, HEADER + "1,1,6\n2,1,6.2\n4,1,0.104\n8,1,6.5\n")
    assert "likely in minutes where the others are in seconds" in err


def test_cpu_runs_say_processes(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, "devices,nodes,step_time_s,device\n1,1,0.1,cpu\n"
                   "2,1,0.104,cpu\n4,1,106,cpu\n8,2,0.11,cpu\n")
    assert "the run on 4 processes gives step_time_s 106" in err and "per process" in err


def test_published_bad_scaling_in_one_unit_is_read():
    """Horovod's README: VGG-16, 1 GPU 130.9 images/s, 16 GPUs on 4 servers 74.7 (28x less per
    GPU, 1.75x less in total), and a total throughput falling 15x (under the 20x) are runs."""
    vgg = parse_runs_text("devices,nodes,samples_per_s\n1,1,130.9\n16,4,74.7\n", "vgg.csv")
    assert list(vgg.devices) == [1, 16]
    slow = parse_runs_text(HEADER + "1,1,0.1\n2,1,0.1\n4,2,3\n", "r.csv")
    assert list(slow.devices) == [1, 2, 4]


def test_the_factor_is_the_bound():
    """Total throughput 20 -> 1.33 samples/s (15x) is read; 20 -> 0.8 (25x) refused."""
    parse_runs_text(HEADER + "1,1,0.1\n2,1,0.1\n4,2,3\n", "r.csv")
    with pytest.raises(ScalesimError, match="the run on 4 devices gives step_time_s 5"):
        parse_runs_text(HEADER + "1,1,0.1\n2,1,0.1\n4,2,5\n", "r.csv")


def test_worst_pair_is_the_brute_force_maximum():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 9))
        devices = np.sort(rng.integers(1, 64, n)).astype(float)
        per = np.exp(rng.normal(0, 2, n))
        total = per * devices
        brute = max(max(per[j] / per[i], total[i] / total[j])
                    for i in range(n) for j in range(i + 1, n))
        factor, i, j = worst_pair(devices, per)
        assert factor == pytest.approx(max(brute, 1.0))
        if factor > 1.0:
            assert i < j and factor == pytest.approx(max(per[j] / per[i], total[i] / total[j]))
    assert UNIT_FACTOR == 20.0
