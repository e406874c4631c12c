"""Runs that scale past linear against the first (runs_diagnosis._superlinear): a little is real
(cache effects, a smaller footprint per device) and gets a note; 10x past linear is a wrong row,
refused in one line instead of reported as "No scaling problem found" (session 31 audit)."""

from __future__ import annotations

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs


def test_far_past_linear_is_refused_naming_the_run(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    # 10x per device past the first: past 20x a run is named as in other units (runs_units)
    path.write_text("devices,nodes,step_time_s\n1,1,1.0\n2,1,0.2\n4,1,0.1\n")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "the run at 4 devices is 1000% efficient" in err and "throughput 40x" in err


def test_somewhat_past_linear_gets_a_note():
    """1.2x the first run's per-device throughput at 2 devices (120 % efficient): a note."""
    runs = parse_runs_text("devices,nodes,step_time_s\n1,1,1.2\n2,1,1.0\n4,1,1.1\n", "runs.csv")
    report = diagnose_runs(runs)
    assert any("the run at 2 devices is 120% efficient" in n and "past linear" in n
               for n in report.notes)


def test_linear_or_below_says_nothing():
    runs = parse_runs_text("devices,nodes,step_time_s\n1,1,1.0\n2,1,1.05\n4,1,1.1\n", "runs.csv")
    assert not any("past linear" in n for n in diagnose_runs(runs).notes)
    with pytest.raises(ScalesimError, match="no job scales that far"):
        diagnose_runs(parse_runs_text("devices,nodes,step_time_s\n1,1,1.0\n8,1,0.3\n", "r.csv"))


def test_contradicting_rates_without_a_batch_are_refused(tmp_path, capsys):
    """Without a batch, step_time_s was used and samples_per_s dropped in silence (audit):
    their product is the samples per step, which must agree per device across the runs."""
    path = tmp_path / "both.csv"
    path.write_text("devices,nodes,step_time_s,samples_per_s\n1,1,0.1,1000\n2,1,0.11,5\n"
                    "4,1,0.12,99999\n")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "samples_per_s x step_time_s gives 100 samples per device a micro-step in run 1" in err
    path.write_text("devices,nodes,step_time_s,samples_per_s\n1,1,0.1,1000\n2,1,0.11,1818\n")
    assert main(["diagnose", str(path)]) == 0  # 100 a device a step in both: weak scaling


def test_a_rank_slower_than_its_run_is_refused(tmp_path, capsys):
    """A rank step time of 5 s in a 0.11 s step was read (a '50.00x' straggler, 1275 % rms
    residual): a synchronous step waits for its slowest rank, so it cannot be shorter."""
    path = tmp_path / "ranks.csv"
    path.write_text("devices,nodes,step_time_s,rank_step_times_s\n1,1,0.1,0.1\n2,1,0.11,0.1;5\n")
    assert main(["diagnose", str(path)]) == 2
    assert "run 2 lists a rank step time of 5 s, 45.5x its step time" in capsys.readouterr().err


def test_a_runs_file_through_a_pipe_is_read_once(tmp_path):
    """The gzip probe added in session 31 read the first bytes of a pipe (`<(cat runs.csv)`)
    and the runs then read an empty file; a pipe is read once, as before."""
    import os
    import threading

    from scalesim.runs import load_runs

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as fh:
            fh.write("devices,nodes,step_time_s\n1,1,1.0\n2,1,1.1\n")

    writer = threading.Thread(target=feed)
    writer.start()
    runs = load_runs(fifo)
    writer.join()
    assert list(runs.devices) == [1, 2]
