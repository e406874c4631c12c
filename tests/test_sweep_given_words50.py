"""Session 50: the sweep says a setting as the user gave it, in every note: a ``--scenario``
file's by the file's key (the file named first, ``cli.given_words``), a grid's by its
``--X-values`` flag (``bounds.values_flag``), a flag's by the flag."""

from __future__ import annotations

import json

from cli_harness import run_cli, scenario_file

BERT = ["sweep", "--workload", "bert-large", "--format", "json"]
LLAMA = ["sweep", "--workload", "llama3-8b", "--format", "json"]


def _notes(capsys, argv) -> tuple[list, list[str]]:
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return json.loads(out), err.splitlines()


def _rows_at(err: list[str]) -> list[str]:
    return [line for line in err if "rows at " in line and "precision fp8" not in line]


# a setting the ddp and zero1 rows ignore (``cmd_predict.unused_setting_notes``), said once of
# those rows (``cmd_sweep._rows_note``)
GRAD_SYNC = ("rows at strategy ddp, zero1: {grad_sync} once-per-step ignored: ddp and zero1 "
             "reduce gradients once per step anyway (it applies to ZeRO-2/3)")
TP_OVERLAP = ("rows at overlap off: {tp_overlap} ignored: overlap is off, so every collective, "
              "the tensor-parallel ones too, waits for its compute (docs/model.md §16)")


def test_a_files_setting_some_rows_ignore_is_said_by_its_key(tmp_path, capsys):
    """The file's grad_sync once-per-step with --strategy-values ddp,zero1,zero3: the 'rows
    at' note names it by the file's key, the file first. Before session 50 the note was built
    in an f-string, its template lost: 'note: rows at strategy ddp, zero1: --grad-sync
    once-per-step ignored: ...', a flag never given."""
    path = scenario_file(tmp_path, "gs.json", {"devices": [16], "accumulation": 2,
                                               "grad_sync": "once-per-step"})
    rows, err = _notes(capsys, [*BERT, "--scenario", path, "--strategy-values",
                                "ddp,zero1,zero3"])
    assert [row["strategy"] for row in rows] == ["ddp", "zero1", "zero3"]
    assert _rows_at(err) == [f"note: {path}: " + GRAD_SYNC.format(grad_sync="grad_sync")], err


def test_a_files_switch_some_rows_ignore_is_said_with_its_value(tmp_path, capsys):
    """The file's tp_overlap true with --overlap-values on,off: 'tp_overlap true' (the file's
    key and value, a switch), the file first (was '--tp-overlap')."""
    path = scenario_file(tmp_path, "tpo.json", {"devices": [16], "layout": {
        "tp": 2, "tp_overlap": True}})
    _, err = _notes(capsys, [*LLAMA, "--scenario", path, "--overlap-values", "on,off"])
    assert _rows_at(err) == [f"note: {path}: "
                             + TP_OVERLAP.format(tp_overlap="tp_overlap true")], err


def test_a_flags_setting_some_rows_ignore_is_said_by_its_flag(capsys):
    """The flags alone: the lines as before session 50."""
    _, err = _notes(capsys, [*BERT, "--devices", "16", "--accumulation", "2", "--grad-sync",
                             "once-per-step", "--strategy-values", "ddp,zero1,zero3"])
    assert _rows_at(err) == ["note: " + GRAD_SYNC.format(grad_sync="--grad-sync")], err
    _, err = _notes(capsys, [*LLAMA, "--devices", "16", "--tp", "2", "--tp-overlap",
                             "--overlap-values", "on,off"])
    assert _rows_at(err) == ["note: " + TP_OVERLAP.format(tp_overlap="--tp-overlap")], err
