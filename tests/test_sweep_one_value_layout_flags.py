"""A one-value layout flag beside an axis whose rows it means nothing for (``--tp-overlap`` or
``--sequence-parallel`` beside ``--tp-values 1,8``, ``--p2p-overlap off`` where a row does not
interleave, ``--schedule gpipe`` or ``--virtual-stages 2`` beside ``--pp-values 1,2``): each
row runs the settings its layout uses, says them in a column (the tp 1 row: tp_overlap false)
and equals predict of that scenario, which refuses the flag on it (``layout.unused_settings``,
one judge for predict, sweep and plan); the sweep says once which rows ran without which flag,
with predict's rule; a flag no row runs is refused in one line. Before (session 42): no column,
no word, and the tp 1 row was a scenario predict refuses ('tp_overlap needs tp > 1')."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from sweep_llama_case import BASE, CLI

from scalesim.errors import ScalesimError
from scalesim.layout import (
    P2P_OVERLAP_NEEDS_INTERLEAVED,
    SEQUENCE_PARALLEL_NEEDS_TP,
    TP_OVERLAP_NEEDS_TP,
    knob_refusal,
    knobs_said,
)
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

PIPELINE_RULES = {"schedule": "--schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 "
                              "leave --schedule at its default",
                  "virtual_stages": "--virtual-stages 2 needs --pp 2 or more and --schedule "
                                    "interleaved (model chunks of a pipeline's stages); give both, "
                                    "or --virtual-stages 1"}


@pytest.fixture(scope="module")
def profile():
    return resolve_profile(None, "dgx-h100", "llama3-8b")


def _row_scenario(base: Scenario, columns: dict, i: int, names) -> Scenario:
    """The scenario of row ``i``: ``base`` with the row's layout values of ``names``."""
    return base.model_copy(update={"layout": base.layout.model_copy(update={
        name: columns[name][i].item() for name in names})})


@pytest.mark.parametrize(("flags", "axis", "runs", "example"), [
    ({"tp_overlap": True}, {"tp": [1, 8]}, {"tp_overlap": [False, True]},
     "tp 1 x pp 1 on 8 devices"),
    ({"sequence_parallel": True}, {"tp": [1, 8]}, {"sequence_parallel": [False, True]},
     "tp 1 x pp 1 on 8 devices"),
    ({"schedule": "gpipe"}, {"pp": [1, 2]}, {"schedule": ["none", "gpipe"]},
     "tp 1 x pp 1 on 8 devices"),
    ({"virtual_stages": 2, "p2p_overlap": False}, {"pp": [1, 2]},
     {"virtual_stages": [1, 2], "p2p_overlap": [True, False]}, "tp 1 x pp 1 on 8 devices"),
    ({"pp": 2, "p2p_overlap": False}, {"virtual_stages": [1, 2]},
     {"p2p_overlap": [True, False]}, "tp 1 x pp 2 on 8 devices"),
])
def test_each_row_runs_the_settings_its_layout_uses_and_is_predicts(profile, flags, axis, runs,
                                                                    example):
    """Two rows, the first one whose layout does not use the flag: its column holds the
    default (the scenario predict accepts), the second the flag's value; each row equals
    predict of its scenario (step, memory, bubble), predict refuses the first row with the flag
    (its rule), and the result counts the one row that ran without each flag."""
    base = BASE.model_copy(update={"layout": ScenarioLayout(**flags)})
    res = sweep(profile, base, axis)
    c = res.columns
    assert res.size == 2 and res.dropped == 0
    for name, values in runs.items():
        assert c[name].tolist() == values, name
    assert res.ignored == {name: (1, example) for name in runs}
    for i in range(2):
        want = predict(profile, _row_scenario(base, c, i, [*axis, *runs]))[0]
        for name in ("step_time_s", "memory_bytes", "bubble_s", "samples_per_s"):
            assert c[name][i] == pytest.approx(getattr(want, name), rel=1e-12), (i, name)
    first = _row_scenario(base, c, 0, axis)  # the first row with every flag as given
    name = next(iter(runs))
    rule = {"tp_overlap": str(knob_refusal(TP_OVERLAP_NEEDS_TP)),
            "sequence_parallel": str(knob_refusal(SEQUENCE_PARALLEL_NEEDS_TP)),
            "p2p_overlap": str(knob_refusal(P2P_OVERLAP_NEEDS_INTERLEAVED)), **PIPELINE_RULES}[name]
    with pytest.raises(ScalesimError, match=rule.split(" (")[0].replace("(", r"\(")):
        predict(profile, first)


def test_the_cli_row_carries_the_setting_and_the_note_names_the_rows(capsys):
    """``--tp-values 1,8 --tp-overlap``: the tp 1 row's tp_overlap is false, the tp 8 row's
    true (JSON), and stderr says once that the flag was ignored on 1 of the 2 rows, with
    predict's rule."""
    code, out, err = run_cli(capsys, [*CLI, "--tp-values", "1,8", "--tp-overlap",
                                      "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["tp"], r["tp_overlap"]) for r in rows] == [(1, False), (8, True)]
    notes = [line for line in err.splitlines() if "--tp-overlap ignored" in line]
    # the rule names the swept tp by its grid flag, as typed (was '--tp' before session 49
    # (follow-up): the rule's words were predict's, a flag this sweep was not given)
    rule = str(knob_refusal(TP_OVERLAP_NEEDS_TP)).replace("--tp 2", "--tp-values 2")
    assert notes == [f"note: --tp-overlap ignored on 1 of the 2 rows (e.g. tp 1 x pp 1 on 8 "
                     f"devices): {rule}; they run without it, as predict runs "
                     # was 'without the flag' before session 49 (follow-up): the phrase names
                     # the setting as the line does (a --scenario file's by its key)
                     "their scenario without --tp-overlap, and column tp_overlap says what each "
                     "row runs"], err


def test_the_csv_has_the_column_and_no_note_where_every_row_uses_the_flag(capsys):
    """``--tp-values 2,8 --tp-overlap``: every row overlaps, so no column and no note (as
    before)."""
    code, out, err = run_cli(capsys, [*CLI, "--tp-values", "2,8", "--tp-overlap"])
    assert code == 0, err
    assert "tp_overlap" not in out.splitlines()[0] and "ignored" not in err, (out, err)
    code, out, err = run_cli(capsys, [*CLI, "--pp-values", "1,2", "--schedule", "gpipe"])
    assert code == 0, err
    header, *rows = out.splitlines()
    at = header.split(",").index("schedule")
    assert [row.split(",")[at] for row in rows] == ["none", "gpipe"]
    assert "note: --schedule gpipe ignored on 1 of the 2 rows" in err, err


# the rule's swept tp by its grid flag, as typed, and the fix a --tp-values (before session
# 50: predict's '--tp 2 or more' and 'give --tp (in a sweep: or a --tp-values ...)', though
# --tp beside --tp-values is refused)
TO_TP = "give a --tp-values that reaches 2 within a server, or drop it"


@pytest.mark.parametrize(("argv", "words"), [
    # tp 16 does not fit the 8 GPUs of a server: every row kept is tp 1
    (["--tp-values", "1,16", "--tp-overlap"],
     f"{knobs_said(knob_refusal(TP_OVERLAP_NEEDS_TP), {'tp': '--tp-values'})}: --tp-overlap "
     f"means nothing on every row of the sweep; {TO_TP}"),
    (["--tp-values", "1,16", "--sequence-parallel"],
     f"{knobs_said(knob_refusal(SEQUENCE_PARALLEL_NEEDS_TP), {'tp': '--tp-values'})}: "
     f"--sequence-parallel means nothing on every row of the sweep; {TO_TP}"),
])
def test_a_flag_no_row_runs_is_refused_in_one_line(capsys, argv, words):
    """Before: exit 0, one tp 1 row, the flag in no column and no word of it."""
    code, out, err = run_cli(capsys, [*CLI, *argv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err


@pytest.mark.parametrize(("argv", "note", "wrong"), [
    # the full row runs early stop (predict's), the selective one does not
    (["--tp", "2", "--recompute-style", "early-stop", "--recompute-values", "selective,full"],
     "note: rows at recompute selective: recompute style early-stop ignored: recompute is "
     "not full", "recompute is none"),
    (["--tp", "2", "--tp-overlap", "--overlap-values", "on,off"],
     "note: rows at overlap off: --tp-overlap ignored: overlap is off, so every collective",
     None),
    (["--strategy-values", "ddp,zero3", "--zero-framework", "deepspeed"],
     "note: rows at strategy ddp: --zero-framework deepspeed with strategy ddp is DeepSpeed's "
     "engine without ZeRO", None),
])
def test_a_flag_predict_notes_as_ignored_on_some_rows_is_said_of_those_rows(capsys, argv, note,
                                                                           wrong):
    """predict does not refuse these flags where they change nothing; it notes them. Before:
    the recompute style's note was the base scenario's ('recompute is none', a recompute no
    row ran, while the full row ran early stop) and the other two said nothing."""
    code, out, err = run_cli(capsys, [*CLI, *argv])
    assert code == 0, err
    assert sum(line.startswith(note) for line in err.splitlines()) == 1, err
    assert wrong is None or wrong not in err, err


def test_the_rows_a_note_is_true_of_are_named_by_the_axes_that_tell_them_apart():
    from scalesim.cli.cmd_sweep import _rows_words

    swept = {"strategy": ["ddp", "zero3"], "overlap": [True, False]}
    assert _rows_words(swept, [("ddp", True), ("ddp", False)]) == "strategy ddp"
    assert _rows_words(swept, [("ddp", False)]) == "strategy ddp with overlap off"
    assert _rows_words(swept, [("ddp", True), ("zero3", False)]) == (
        "strategy ddp with overlap on; strategy zero3 with overlap off")


def test_the_rows_beside_a_noted_flag_are_predicts(profile):
    """``--tp 2 --tp-overlap --overlap-values on,off`` and ``--recompute-style early-stop
    --recompute-values selective,full``: each row equals predict of its scenario with the
    flag (predict runs it, noting it where it changes nothing)."""
    for split, axes in (({"tp": 2, "tp_overlap": True}, {"overlap": [True, False]}),
                        ({"tp": 2, "recompute_style": "early-stop"},
                         {"recompute": ["selective", "full"]})):
        base = BASE.model_copy(update={"layout": ScenarioLayout(**split)})
        c = sweep(profile, base, axes).columns
        (name, values), = axes.items()
        for i, value in enumerate(values):
            scenario = (base.model_copy(update={name: value}) if name == "overlap" else
                        _row_scenario(base, c, i, [name]))
            want = predict(profile, scenario)[0]
            assert c["step_time_s"][i] == pytest.approx(want.step_time_s, rel=1e-12)
