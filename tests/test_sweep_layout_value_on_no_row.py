"""One check (``sweep._ignorable``) refuses a layout setting's value that no row of a sweep
runs, one-value flag or swept value alike, in one line: predict's rule, the flag and its
values, what to give for it to apply and what to drop. Before (session 42) four checks ahead of
it refused the swept values with the tp of every row, one a server cannot hold too: ``--tp-values
1,16 --sequence-parallel-values on,off`` on 8-GPU servers exited 0 with one row, the 'on'
value in none and the only word '3 combinations dropped: ... tp 16 x pp 1 on 8 devices: tp x pp
does not divide the devices'; and their words named no flag ('virtual_stages 2 needs pp > 1 (a
pipeline)' for --virtual-stages-values)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.layout import SEQUENCE_PARALLEL_NEEDS_TP, TP_OVERLAP_NEEDS_TP, knob_refusal, knobs_said
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

CLI = ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8"]
# the swept tp by its grid flag, as typed, in the rule and the fix (before session 50:
# predict's '--tp 2 or more' and 'give --tp (in a sweep: or a --tp-values that reaches 2 within
# a server)', though --tp beside --tp-values is refused)
TO_TP = "give a --tp-values that reaches 2 within a server"
SWEPT_TP = {"tp": "--tp-values"}


@pytest.mark.parametrize(("axis", "field", "rule"), [
    ("--sequence-parallel-values", "sequence_parallel",
     str(knobs_said(knob_refusal(SEQUENCE_PARALLEL_NEEDS_TP), SWEPT_TP))),
    ("--tp-overlap-values", "tp_overlap", str(knobs_said(knob_refusal(TP_OVERLAP_NEEDS_TP), SWEPT_TP))),
])
def test_a_swept_value_no_row_a_server_holds_runs_is_refused(capsys, axis, field, rule):
    code, out, err = run_cli(capsys, [*CLI, "--tp-values", "1,16", axis, "on,off"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert (f"{rule}: 'on' of {axis} means nothing on every row of the sweep; {TO_TP}, or drop "
            f"'on' from {axis}") in err, err
    # where a row runs it: each row kept is predict's of its scenario, the tp 1 'on' row dropped
    code, out, err = run_cli(capsys, [*CLI, "--tp-values", "1,8", axis, "on,off", "--format",
                                      "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["tp"], r[field]) for r in rows] == [(1, False), (8, True), (8, False)]
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    for row in rows:
        want = predict(profile, Scenario(devices=[8], layout=ScenarioLayout(
            tp=row["tp"], **{field: row[field]})))[0]
        assert row["step_time_s"] == pytest.approx(want.step_time_s, rel=1e-9), row
        assert row["memory_bytes"] == pytest.approx(want.memory_bytes, rel=1e-9), row


@pytest.mark.parametrize(("one_value", "swept", "rule"), [
    (["--schedule", "gpipe"], ["--schedule-values", "gpipe"],
     "--schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 leave --schedule at its "
     "default"),
    (["--virtual-stages", "2"], ["--virtual-stages-values", "2"],
     "--virtual-stages 2 needs --pp 2 or more and --schedule interleaved (model chunks of a "
     "pipeline's stages); give both, or --virtual-stages 1"),
])
def test_a_flag_and_its_axis_get_the_same_rule_and_fix(capsys, one_value, swept, rule):
    """predict's rule (predict refuses the scenario in those words), then the flag as given."""
    fix = "give --pp (in a sweep: or a --pp-values that reaches 2)"
    code, _, err = run_cli(capsys, [*CLI, *one_value])
    assert code == 2, err
    assert f"{rule}: {' '.join(one_value)} means nothing on every row of the sweep; {fix}, or " \
           "drop it" in err, err
    code, _, err = run_cli(capsys, [*CLI, *swept])
    assert code == 2, err
    assert f"{rule}: '{swept[1]}' of {swept[0]} means nothing on every row of the sweep; {fix}, " \
           f"or drop '{swept[1]}' from {swept[0]}" in err, err
    code, out, err = run_cli(capsys, ["predict", *CLI[1:], *one_value])
    assert code == 2 and rule in err, err
