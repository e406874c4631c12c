"""Session 50: the sweep says a setting as the user gave it, in every note: a ``--scenario``
file's by the file's key (the file named first, ``cli.given_words``), a grid's by its
``--X-values`` flag (``bounds.values_flag``), a flag's by the flag."""

from __future__ import annotations

import json

from cli_harness import refused_line, run_cli, scenario_file

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


# DeepSpeed's ZeRO-3 with pipeline stages (``layout.deepspeed_pipeline_error``): the pp 2 row of
# --pp-values 1,2 is dropped, its rule naming the swept pp by the grid's flag
DEEPSPEED_PP = ("1 combination dropped: 1 breaks a layout rule (e.g. tp 1 x pp 2 on 16 devices: "
                "{strategy} zero3 with --pp-values 2: DeepSpeed refuses ZeRO-2/3 with pipeline "
                "parallelism; use {strategy} zero1, --pp-values 1 or {framework} fsdp)")


def test_the_dropped_rows_rule_names_the_swept_pp_by_its_grid_flag(tmp_path, capsys):
    """Before session 50: '... with --pp 2: ...; use --strategy zero1, --pp 1 or ...', predict's
    flag, which the sweep was not given (and refuses beside --pp-values). A file's strategy and
    framework by its keys, the file first; the flags' by their flags."""
    rows, err = _notes(capsys, [*LLAMA, "--devices", "16", "--strategy", "zero3",
                                "--zero-framework", "deepspeed", "--pp-values", "1,2"])
    assert [row["pp"] for row in rows] == [1]
    assert err[0] == "note: " + DEEPSPEED_PP.format(strategy="--strategy",
                                                    framework="--zero-framework"), err
    path = scenario_file(tmp_path, "ds.json", {"devices": [16], "strategy": "zero3",
                                               "zero_framework": "deepspeed"})
    _, err = _notes(capsys, [*LLAMA, "--scenario", path, "--pp-values", "1,2"])
    assert err[0] == f"note: {path}: " + DEEPSPEED_PP.format(strategy="strategy",
                                                             framework="zero_framework"), err


# a schedule no row runs: --pp-values 1 gives no pipeline (``sweep._ignorable``)
GPIPE_NOWHERE = ("{schedule} gpipe needs --pp-values 2 or more (a pipeline); at --pp-values 1 "
                 "leave {schedule} at its default: {schedule} gpipe means nothing on every row "
                 "of the sweep; give a --pp-values that reaches 2, or drop it")


def test_a_schedule_no_row_runs_is_refused_naming_the_swept_pp_by_its_grid_flag(tmp_path, capsys):
    """Before session 50: '--schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 leave
    ...; give --pp (in a sweep: or a --pp-values that reaches 2), or drop it': --pp, which the
    sweep refuses beside --pp-values. A file's schedule by its key, the file first."""
    line = refused_line(capsys, [*LLAMA, "--devices", "16", "--pp-values", "1", "--schedule",
                                 "gpipe"])
    assert line == "scalesim sweep: error: " + GPIPE_NOWHERE.format(schedule="--schedule")
    path = scenario_file(tmp_path, "gp.json", {"devices": [16], "layout": {"schedule": "gpipe"}})
    line = refused_line(capsys, [*LLAMA, "--scenario", path, "--pp-values", "1"])
    assert line == f"scalesim sweep: error: {path}: " + GPIPE_NOWHERE.format(schedule="schedule")
    # a one-value pp of 1 (the flag's default): --pp is the way, the grid the other
    line = refused_line(capsys, [*LLAMA, "--devices", "16", "--tp-values", "1,2",
                                 "--schedule", "gpipe"])
    assert line.endswith("; give --pp (in a sweep: or a --pp-values that reaches 2), or drop "
                         "it"), line


def test_a_shard_group_no_row_runs_names_the_swept_framework_by_its_grid_flag(tmp_path, capsys):
    """A file's shard group 4 with --zero-framework-values deepspeed: every ZeRO row is
    DeepSpeed's, which has no hybrid sharding (``sweep._one_value_shard_group``). Before
    session 50: '... with --zero-framework deepspeed: ...; use --zero-framework fsdp or drop
    shard_group'."""
    path = scenario_file(tmp_path, "sg.json", {"devices": [16], "strategy": "zero3",
                                               "layout": {"shard_group": 4}})
    line = refused_line(capsys, [*LLAMA, "--scenario", path, "--zero-framework-values",
                                 "deepspeed"])
    assert line == (f"scalesim sweep: error: {path}: shard_group 4 with --zero-framework-values "
                    "deepspeed: hybrid sharding is modelled for FSDP and Megatron-Core "
                    "(DeepSpeed's MiCS / ZeRO++ hpZ are not); use --zero-framework-values fsdp "
                    "or drop shard_group")


# interleaved 1F1B at accumulation 1: one micro-batch a step is not a multiple of pp 2
# (Megatron's rule, ``layout_predict.check_rows``), so the pp 2 row is dropped
INTERLEAVED = ["--pp-values", "1,2", "--schedule", "interleaved", "--virtual-stages", "2",
               "--p2p-overlap", "off"]
WHY_PP2 = ("tp 1 x pp 2 on 16 devices: {schedule} interleaved: 1 micro-batch per step is not a "
           "multiple of --pp-values 2 (Megatron's rule); use {accumulation} 2 (a multiple of 2), "
           "or another {schedule}")


def _ignored_lines(err: list[str]) -> dict[str, str]:
    return {line.split(" ignored on ")[0].removeprefix("note: "): line for line in err
            if " ignored on " in line}


def test_a_setting_ignored_on_every_row_kept_says_its_rows_were_dropped_and_why(capsys):
    """Before session 50 each note said '--schedule interleaved ignored on every row (e.g. tp 1
    x pp 1 on 16 devices): --schedule interleaved needs --pp-values 2 or more ...' and no more,
    beside --pp-values 1,2: the pp 2 row it applies to was dropped, which the note did not say.
    Now each ends with the rows it applies to, dropped, and the rule they break: the rule on
    the first, the others the same drop '(as above)' (``test_sweep_drop_said_once50``)."""
    rows, err = _notes(capsys, [*LLAMA, "--devices", "16", *INTERLEAVED])
    assert [row["pp"] for row in rows] == [1]
    lines = _ignored_lines(err)
    assert list(lines) == ["--schedule interleaved", "--virtual-stages 2", "--p2p-overlap off"]
    why = WHY_PP2.format(schedule="--schedule", accumulation="--accumulation")
    for i, line in enumerate(lines.values()):
        assert " ignored on every row (e.g. tp 1 x pp 1 on 16 devices): " in line, line
        assert line.endswith("; the 1 combination it applies to was dropped "
                             + ("(as above)" if i else f"({why})")), line
    # 2 counts x pp 2, 4: all 4 pipelined combinations dropped, the first named
    _, err = _notes(capsys, [*LLAMA, "--devices", "16,32", *INTERLEAVED[:1], "1,2,4",
                             *INTERLEAVED[2:]])
    assert _ignored_lines(err)["--schedule interleaved"].endswith(
        f"; all 4 combinations it applies to were dropped (e.g. {why})")


def test_a_setting_a_kept_row_runs_says_no_drop(capsys):
    """At --accumulation 2 the pp 2 row is kept (2 micro-batches, a multiple of 2): 'ignored on
    1 of the 2 rows', as before, with no word of a drop."""
    rows, err = _notes(capsys, [*LLAMA, "--devices", "16", "--accumulation", "2", *INTERLEAVED])
    assert [(row["pp"], row["schedule"]) for row in rows] == [(1, "none"), (2, "interleaved")]
    for line in _ignored_lines(err).values():
        assert " ignored on 1 of the 2 rows " in line and "dropped" not in line, line


def test_the_dropped_rows_rule_names_a_files_setting_by_its_key(tmp_path, capsys):
    """The file's schedule and virtual stages: the rule of the dropped row names them by its
    keys, the file first, pp by the grid's flag, the accumulation the file does not hold by its
    flag (was 'use accumulation 2', a key the file lacks)."""
    path = scenario_file(tmp_path, "il.json", {"devices": [16], "layout": {
        "schedule": "interleaved", "virtual_stages": 2}})
    _, err = _notes(capsys, [*LLAMA, "--scenario", path, "--pp-values", "1,2"])
    line = _ignored_lines(err)[f"{path}: schedule interleaved"]
    why = WHY_PP2.format(schedule="schedule", accumulation="--accumulation")
    assert line.endswith(f"; the 1 combination it applies to was dropped ({why})"), line


ZERO_FRAMEWORK = ("{zero_framework} deepspeed with strategy ddp is DeepSpeed's engine without ZeRO "
            "(stage 0: its own all-reduce and optimizer step, nothing sharded); give "
                  "--strategy-values zero1, zero2 or zero3 to shard")


def test_a_note_names_the_swept_strategy_by_its_grid_flag(tmp_path, capsys):
    """predict's note of a framework under ddp says 'give --strategy zero1, ...'; beside
    --strategy-values the sweep says its grid flag, as typed (before session 50: --strategy,
    which the sweep refuses beside --strategy-values); a file's framework by its key."""
    _, err = _notes(capsys, [*BERT, "--devices", "16", "--zero-framework", "deepspeed",
                             "--strategy-values", "ddp,zero1"])
    assert _rows_at(err) == ["note: rows at strategy ddp: "
                             + ZERO_FRAMEWORK.format(zero_framework="--zero-framework")], err
    path = scenario_file(tmp_path, "zf.json", {"devices": [16], "zero_framework": "deepspeed"})
    _, err = _notes(capsys, [*BERT, "--scenario", path, "--strategy-values", "ddp"])
    assert f"note: {path}: " + ZERO_FRAMEWORK.format(zero_framework="zero_framework") in err, err
