"""Session 50: `decide --tp 2 --devices 1-64` stopped with an error because 1 device cannot hold
tp 2, where predict and the app leave that count out with a note. decide now takes the same
rule (``layout_predict.runnable_counts``): it answers over the counts that run, with predict's
note, and refuses in one line only where none runs."""

from __future__ import annotations

import json

from cli_harness import refused_line, run_cli

TP2 = ["--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--tp", "2"]
NOTE = ("tp x pp = 2 does not divide the devices: the row on 1 device is left out; give counts "
        "that are multiples of 2")


def test_decide_leaves_out_the_count_the_layout_cannot_use_with_predicts_note(capsys):
    code, out, err = run_cli(capsys, ["decide", *TP2, "--devices", "1-64", "--json"])
    assert code == 0, err
    card = json.loads(out)
    assert card["notes"][0] == NOTE
    assert card["now"]["devices"] in (2, 4, 8, 16, 32, 64)  # the knee of the counts that run
    code, out, _ = run_cli(capsys, ["predict", *TP2, "--devices", "1-64"])
    assert code == 0 and f"note: {NOTE}" in out  # the same note, one rule


def test_decide_refuses_in_one_line_where_no_count_runs(capsys):
    assert refused_line(capsys, ["decide", *TP2, "--devices", "1"]) == (
        "scalesim decide: error: devices 1 are not divisible by tp x pp = 2; give device counts "
        "that are multiples of it (2)")


def test_a_focus_on_a_count_left_out_is_refused_among_the_counts_that_run(capsys):
    assert refused_line(capsys, ["decide", *TP2, "--devices", "1-64", "--focus", "1"]) == (
        "scalesim decide: error: --focus 1 is not one of --devices that run (2, 4, 8, 16, 32, "
        "64)")
