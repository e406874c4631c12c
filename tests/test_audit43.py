"""Session 43's adversarial audit of flag combinations and odd files: each finding, fixed, pinned."""

from __future__ import annotations

import json

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
