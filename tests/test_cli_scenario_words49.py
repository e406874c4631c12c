"""Session 49: the sweep's, goal's and decide's own lines say a setting a ``--scenario`` file
gave by the file's key, the file named first (``cli.given_words``), as main's error line says
the rules the scenario breaks; a flag's setting by its flag, as before."""

from __future__ import annotations

import json

from cli_harness import refused_line, run_cli, scenario_file

W = ["--workload", "llama3-8b"]
SWEEP = ["sweep", *W, "--format", "json"]
# DeepSpeed's refusal of once-per-step reduction (``schemas.grad_sync_deepspeed_error``), each
# knob in the slots '{grad_sync}', '{zero_framework}' said by the caller
NO_SYNC = ("{grad_sync} once-per-step is FSDP's no_sync; DeepSpeed stage 2/3 reduce gradients "
           "in every micro-step: use {zero_framework} fsdp or {grad_sync} every-micro-step")


def test_every_row_pairs_names_the_files_framework_by_its_key(tmp_path, capsys):
    """The file's DeepSpeed with --grad-sync-values once-per-step: every row is refused
    (``sweep.plan_sweep``); the framework is the file's, said by its key, the grid by its flag
    (the grid's knob by --grad-sync-values in DeepSpeed's rule too, as typed: was '--grad-sync'
    there before session 50)."""
    path = scenario_file(tmp_path, "ds.json", {"devices": [16], "zero_framework": "deepspeed"})
    assert refused_line(capsys, [*SWEEP, "--scenario", path, "--grad-sync-values", "once-per-step"]) == (
        f"scalesim sweep: error: {path}: every row pairs zero_framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync-values", zero_framework="zero_framework"))
    # the file's once-per-step with the grid's DeepSpeed: the other way round
    path = scenario_file(tmp_path, "sync.json", {"devices": [16], "grad_sync": "once-per-step"})
    assert refused_line(capsys, [*SWEEP, "--scenario", path, "--zero-framework-values",
                          "deepspeed"]) == (
        f"scalesim sweep: error: {path}: every row pairs --zero-framework-values deepspeed with "
        "grad_sync once-per-step: "
        + NO_SYNC.format(grad_sync="grad_sync", zero_framework="--zero-framework-values"))


def test_every_row_pairs_names_flags_as_before(capsys):
    """The flags alone: each by its flag, a swept one by its grid flag in DeepSpeed's rule too
    (session 50; was predict's flag there)."""
    assert refused_line(capsys, [*SWEEP, "--devices", "16", "--zero-framework", "deepspeed",
                          "--grad-sync-values", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync-values", zero_framework="--zero-framework"))
    # the grid's framework with the flag's sync
    assert refused_line(capsys, [*SWEEP, "--devices", "16", "--zero-framework-values", "deepspeed",
                          "--grad-sync", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework-values deepspeed with "
        "--grad-sync once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync", zero_framework="--zero-framework-values"))


def test_every_row_pairs_names_a_flag_over_the_file_by_the_flag(tmp_path, capsys):
    """The file's framework said again by --zero-framework: the flag's value is the one that
    runs, so the line is the flags' one (no file key in it)."""
    path = scenario_file(tmp_path, "ds.json", {"devices": [16], "zero_framework": "deepspeed"})
    assert refused_line(capsys, [*SWEEP, "--scenario", path, "--zero-framework", "deepspeed",
                          "--grad-sync-values", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync-values", zero_framework="--zero-framework"))


# DeepSpeed's refusal of ZeRO-2/3 under a pipeline (``layout.deepspeed_pipeline_error``), the
# first row the sweep drops for it: tp 1 x pp 2 on 16 devices
PIPELINE = ("tp 1 x pp 2 on 16 devices: {strategy} zero2 with {pp} 2: DeepSpeed refuses "
            "ZeRO-2/3 with pipeline parallelism; use {strategy} zero1, {pp} 1 or "
            "{zero_framework} fsdp")
DS_ZERO2 = {"devices": [16], "strategy": "zero2", "zero_framework": "deepspeed"}


def test_the_dropped_rows_note_names_the_files_strategy_by_its_key(tmp_path, capsys):
    """The file's DeepSpeed ZeRO-2 with --pp-values 1,2: the pp 2 row is dropped with a note
    (one row of two kept); the strategy and framework are the file's keys, the file named
    first, pp by the grid's flag, as typed (was '--pp' before session 50)."""
    path = scenario_file(tmp_path, "ds.json", DS_ZERO2)
    code, out, err = run_cli(capsys, [*SWEEP, "--scenario", path, "--pp-values", "1,2"])
    assert code == 0, err
    assert [row["pp"] for row in json.loads(out)] == [1]
    words = PIPELINE.format(strategy="strategy", pp="--pp-values", zero_framework="zero_framework")
    assert err.splitlines()[0] == (
        f"note: {path}: 1 combination dropped: 1 breaks a layout rule (e.g. {words})")
    # to a file: the same words in the 'wrote' line
    out_csv = str(tmp_path / "rows.csv")
    code, out, err = run_cli(capsys, ["sweep", *W, "--scenario", path, "--pp-values", "1,2",
                                      "--out", out_csv])
    assert code == 0 and out == "", err
    assert err.splitlines()[0] == (
        f"wrote 1 scenarios to {out_csv} ({path}: 1 combination dropped: 1 breaks a layout "
        f"rule (e.g. {words}))")
    # every row dropped: the sweep's refusal, in the same words
    assert refused_line(capsys, [*SWEEP, "--scenario", path, "--pp-values", "2"]) == (
        f"scalesim sweep: error: {path}: no combination of the sweep is left: all 1 dropped "
        f"(1 breaks a layout rule (e.g. {words})); nothing written")


def test_the_dropped_rows_note_names_flags_as_before(tmp_path, capsys):
    """The flags alone, or the file's strategy said again by --strategy (the flag's value
    runs): every knob by its flag, no file named; the swept pp by the grid's (session 50)."""
    words = PIPELINE.format(strategy="--strategy", pp="--pp-values",
                            zero_framework="--zero-framework")
    flags = ["--devices", "16", "--strategy", "zero2", "--zero-framework", "deepspeed"]
    path = scenario_file(tmp_path, "ds.json", DS_ZERO2)
    for given in (flags, ["--scenario", path, *flags]):
        code, out, err = run_cli(capsys, [*SWEEP, *given, "--pp-values", "1,2"])
        assert code == 0, err
        assert err.splitlines()[0] == (
            f"note: 1 combination dropped: 1 breaks a layout rule (e.g. {words})")
        assert refused_line(capsys, [*SWEEP, *given, "--pp-values", "2"]) == (
            "scalesim sweep: error: no combination of the sweep is left: all 1 dropped "
            f"(1 breaks a layout rule (e.g. {words})); nothing written")


def test_the_dropped_rows_note_names_the_files_grad_sync_by_its_key(tmp_path, capsys):
    """The file's once-per-step with --zero-framework-values fsdp,deepspeed at ZeRO-2: the
    DeepSpeed row is dropped (``sweep._grad_sync_refused_rows``), its rule naming the file's
    grad_sync by its key, the swept framework by the grid's flag (was '--zero-framework' before
    session 50)."""
    path = scenario_file(tmp_path, "sync.json", {"devices": [16], "grad_sync": "once-per-step"})
    code, out, err = run_cli(capsys, [*SWEEP, "--scenario", path, "--strategy", "zero2",
                                      "--zero-framework-values", "fsdp,deepspeed"])
    assert code == 0, err
    assert [row["zero_framework"] for row in json.loads(out)] == ["fsdp"]
    assert err.splitlines()[0] == (
        f"note: {path}: 1 combination dropped: 1 breaks a layout rule (e.g. zero_framework "
        "deepspeed: " + NO_SYNC.format(grad_sync="grad_sync",
                                       zero_framework="--zero-framework-values") + ")")


GOAL = ["goal", *W, "--deadline", "30d", "--budget", "100000", "--train-samples", "1e7",
        "--max-devices", "16"]  # a short search: the answer is at 16 devices


def test_goal_notes_the_files_devices_and_strategy_as_not_used(tmp_path, capsys, monkeypatch):
    """goal searches the device count and the strategy itself (``cmd_goal.SEARCHED``): a file's
    (one scenario shared with predict, sweep and decide) is said not used, by its key, the file
    first, and the answer is the one without them, byte for byte but those notes."""
    path = scenario_file(tmp_path, "s.json", {"devices": [64], "strategy": "zero3"})
    code, out, err = run_cli(capsys, [*GOAL, "--json", "--scenario", path])
    assert code == 0 and err == "", err
    noted = json.loads(out)
    assert noted["notes"][:2] == [
        f"{path}: devices is not used: goal searches every device count up to --max-devices",
        f"{path}: strategy is not used: goal searches DDP and ZeRO-1/2/3 and names the one it "
        "picks"]
    code, out, err = run_cli(capsys, [*GOAL, "--json"])
    assert code == 0, err
    alone = json.loads(out)
    assert noted == {**alone, "notes": noted["notes"][:2] + alone["notes"]}
    # text: the same notes, each a line of its own (a short path: none wraps)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, [*GOAL, "--scenario", "s.json"])
    assert code == 0, err
    assert ("\nnote: s.json: devices is not used: goal searches every device count up to "
            "--max-devices\nnote: s.json: strategy is not used: goal searches DDP and "
            "ZeRO-1/2/3 and names the one it picks\n") in out


def test_goal_refuses_the_files_global_batch_in_its_words(tmp_path, capsys):
    """A file's global batch: refused, as the flag (the answer would train at another global
    batch than the file fixes), by the file's key, the file first (was seek's line, no file
    named: 'goal seeking varies the per-device batch: give a micro-batch, not a fixed global
    batch'). The micro-batch to give is one the file does not hold: its flag, --batch (session
    50; was 'give micro_batch N', a key the file lacks)."""
    path = scenario_file(tmp_path, "s.json", {"global_batch": 512})
    assert refused_line(capsys, [*GOAL, "--scenario", path]) == (
        f"scalesim goal: error: {path}: global_batch is not used: goal varies the per-device "
        "batch (micro-batch and accumulation) itself; drop it, and give --batch N for the "
        "micro-batch it starts from")
    # --batch over it: the flag's per-device batch replaces the file's global batch
    # (``scenario_from_args``), and goal runs
    code, out, err = run_cli(capsys, [*GOAL, "--json", "--scenario", path, "--batch", "2"])
    assert code == 0 and json.loads(out), err


def test_goal_refuses_the_flags_as_before(capsys):
    for flag, value, line in (
            ("--devices", "8", "--devices is not used: goal searches every device count up to "
             "--max-devices; give --max-devices N instead"),
            ("--strategy", "zero3", "--strategy is not used: goal searches DDP and ZeRO-1/2/3 "
             "and names the one it picks; drop it"),
            ("--global-batch", "64", "--global-batch is not used: goal varies the per-device "
             "batch (micro-batch and accumulation) itself; drop it, and give --batch N for the "
             "micro-batch it starts from")):
        assert refused_line(capsys, [*GOAL, flag, value]) == f"scalesim goal: error: {line}"


def test_decide_focus_names_the_files_devices_by_its_key(tmp_path, capsys):
    """decide takes the file's devices as it takes --devices (it decides at one of them, the
    'As is' its scenario): a --focus outside them names the file's key, the file first."""
    decide = ["decide", *W, "--json"]
    path = scenario_file(tmp_path, "s.json", {"devices": [8]})
    assert refused_line(capsys, [*decide, "--scenario", path, "--focus", "3"]) == (
        f"scalesim decide: error: {path}: --focus 3 is not one of devices (8)")
    # the flag's counts over the file's, and the flag alone: the flag
    assert refused_line(capsys, [*decide, "--scenario", path, "--devices", "8,16", "--focus", "3"]) == (
        "scalesim decide: error: --focus 3 is not one of --devices (8, 16)")
    assert refused_line(capsys, [*decide, "--devices", "8", "--focus", "3"]) == (
        "scalesim decide: error: --focus 3 is not one of --devices (8)")


def test_decide_notes_a_files_ignored_setting_by_its_key(tmp_path, capsys):
    """decide prints predict's notes of settings that change no number before its card
    (``notes_before``, among its notes on stdout); they named a --scenario file's zero_framework as the flag
    '--zero-framework deepspeed ignored ... give --strategy zero1' though no flag was given.
    Now by the file's keys, the file first, as predict's notes since session 49; the flags'
    line is unchanged."""
    path = scenario_file(tmp_path, "s.json", {"devices": [8], "strategy": "ddp",
                                              "zero_framework": "deepspeed"})
    code, out, _ = run_cli(capsys, ["decide", "--scenario", path])
    assert code == 0
    assert (f"note: {path}: zero_framework deepspeed with strategy ddp is DeepSpeed's engine without ZeRO "
            "(stage 0: its own all-reduce and optimizer step, nothing sharded); give "
            "strategy zero1, zero2 or zero3 to shard") in " ".join(out.split())
    code, out, _ = run_cli(capsys, ["decide", "--devices", "8", "--strategy", "ddp",
                                    "--zero-framework", "deepspeed"])
    assert code == 0
    assert ("note: --zero-framework deepspeed with strategy ddp is DeepSpeed's engine without ZeRO "
            "(stage 0: its own all-reduce and optimizer step, nothing sharded); give "
            "--strategy zero1, zero2 or zero3 to shard") in " ".join(out.split())
