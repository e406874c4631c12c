"""Session 43's adversarial audit of flag combinations and odd files: each finding, fixed, pinned."""

from __future__ import annotations

import json
import math

import pytest
from cli_harness import run_cli


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_count_no_cp_degree_divides_beside_counts_it_does_gets_a_note(capsys):
    """``plan --cp 2 --devices 1,8``: 8 devices split with cp 2, one device does not. Before, the
    note of the count without a layout unpacked an empty split list (``fewest_replicas``): a
    ValueError traceback. Now the plan runs and the count's note says why and what to give."""
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--global-batch", "64", "--cp", "2", "--devices", "1,8"])
    assert code == 0, err
    note = next(line for line in out.splitlines() if "split of devices 1 " in line)
    assert note.startswith("note: no dp x tp x pp x cp split of devices 1 with cp 2")
    assert "give --cp degrees that divide it" in note
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--global-batch", "64", "--cp", "2", "--devices", "1,8",
                                      "--json"])
    assert code == 0, err
    plan = json.loads(out)
    assert plan["layouts"] and all(r["devices"] == 8 for r in plan["layouts"])
    one, eight = plan["by_count"]
    assert one["best"] is None and "with cp 2" in one["note"] and eight["best"]["cp"] == 2
    # one count alone keeps its one-line refusal
    code, _, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--global-batch", "64", "--cp", "2", "--devices", "1"])
    assert code == 2 and "no dp x tp x pp x cp split of devices 1 with cp 2" in _one_line(err)


def test_runs_no_fitted_band_can_hold_print_no_numpy_overflow_warning(tmp_path, capsys):
    """A runs file whose last row is a million devices at 5 s a step, beside 1-32 GPUs that
    scale: a fitted parameter's standard error (in log) passes ~360, and exp(Z95 se) overflowed
    in ``diagnosis.pinned``: exit 0 under numpy's 'RuntimeWarning: overflow encountered in exp'
    (two lines of source on the user's terminal). Now the band factor is inf in silence and
    the parameter reads as not pinned."""
    import warnings

    import diagnose_cases

    from scalesim.diagnosis import band_factor, pinned
    from scalesim.fit_runs import Z95

    text = diagnose_cases.to_csv(diagnose_cases.inter_server()).strip()
    path = tmp_path / "runs.csv"
    path.write_text(text + "\n1048576,131072,5,32,1\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, ["diagnose", str(path)])
        assert band_factor(400.0) == float("inf") and not pinned(400.0)
    assert code == 0, err
    assert "1048576" in out.replace(",", "")
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert band_factor(0.1) == pytest.approx(math.exp(Z95 * 0.1), rel=1e-12)
