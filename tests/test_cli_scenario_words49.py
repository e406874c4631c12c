"""Session 49: the sweep's, goal's and decide's own lines say a setting a ``--scenario`` file
gave by the file's key, the file named first (``cli.given_words``), as main's error line says
the rules the scenario breaks; a flag's setting by its flag, as before."""

from __future__ import annotations

import json

from cli_harness import run_cli

W = ["--workload", "llama3-8b"]
SWEEP = ["sweep", *W, "--format", "json"]
# DeepSpeed's refusal of once-per-step reduction (``schemas.grad_sync_deepspeed_error``), each
# knob in the slots '{grad_sync}', '{zero_framework}' said by the caller
NO_SYNC = ("{grad_sync} once-per-step is FSDP's no_sync; DeepSpeed stage 2/3 reduce gradients "
           "in every micro-step: use {zero_framework} fsdp or {grad_sync} every-micro-step")


def _file(tmp_path, name, scenario):
    path = tmp_path / name
    path.write_text(json.dumps(scenario))
    return str(path)


def _line(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    return err.removesuffix("\n")


def test_every_row_pairs_names_the_files_framework_by_its_key(tmp_path, capsys):
    """The file's DeepSpeed with --grad-sync-values once-per-step: every row is refused
    (``sweep.plan_sweep``); the framework is the file's, said by its key, the grid by its flag
    (the grid's knob by --grad-sync in DeepSpeed's rule, as with flags alone)."""
    path = _file(tmp_path, "ds.json", {"devices": [16], "zero_framework": "deepspeed"})
    assert _line(capsys, [*SWEEP, "--scenario", path, "--grad-sync-values", "once-per-step"]) == (
        f"scalesim sweep: error: {path}: every row pairs zero_framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync", zero_framework="zero_framework"))
    # the file's once-per-step with the grid's DeepSpeed: the other way round
    path = _file(tmp_path, "sync.json", {"devices": [16], "grad_sync": "once-per-step"})
    assert _line(capsys, [*SWEEP, "--scenario", path, "--zero-framework-values",
                          "deepspeed"]) == (
        f"scalesim sweep: error: {path}: every row pairs --zero-framework-values deepspeed with "
        "grad_sync once-per-step: "
        + NO_SYNC.format(grad_sync="grad_sync", zero_framework="--zero-framework"))


def test_every_row_pairs_names_flags_as_before(capsys):
    """The flags alone: each by its flag, the line as it always read."""
    assert _line(capsys, [*SWEEP, "--devices", "16", "--zero-framework", "deepspeed",
                          "--grad-sync-values", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync", zero_framework="--zero-framework"))
    # the grid's framework with the flag's sync
    assert _line(capsys, [*SWEEP, "--devices", "16", "--zero-framework-values", "deepspeed",
                          "--grad-sync", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework-values deepspeed with "
        "--grad-sync once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync", zero_framework="--zero-framework"))


def test_every_row_pairs_names_a_flag_over_the_file_by_the_flag(tmp_path, capsys):
    """The file's framework said again by --zero-framework: the flag's value is the one that
    runs, so the line is the flags' one (no file key in it)."""
    path = _file(tmp_path, "ds.json", {"devices": [16], "zero_framework": "deepspeed"})
    assert _line(capsys, [*SWEEP, "--scenario", path, "--zero-framework", "deepspeed",
                          "--grad-sync-values", "once-per-step"]) == (
        "scalesim sweep: error: every row pairs --zero-framework deepspeed with "
        "--grad-sync-values once-per-step: "
        + NO_SYNC.format(grad_sync="--grad-sync", zero_framework="--zero-framework"))


# DeepSpeed's refusal of ZeRO-2/3 under a pipeline (``layout.deepspeed_pipeline_error``), the
# first row the sweep drops for it: tp 1 x pp 2 on 16 devices
PIPELINE = ("tp 1 x pp 2 on 16 devices: {strategy} zero2 with {pp} 2: DeepSpeed refuses "
            "ZeRO-2/3 with pipeline parallelism; use {strategy} zero1, {pp} 1 or "
            "{zero_framework} fsdp")
DS_ZERO2 = {"devices": [16], "strategy": "zero2", "zero_framework": "deepspeed"}


def test_the_dropped_rows_note_names_the_files_strategy_by_its_key(tmp_path, capsys):
    """The file's DeepSpeed ZeRO-2 with --pp-values 1,2: the pp 2 row is dropped with a note
    (one row of two kept); the strategy and framework are the file's keys, the file named
    first, pp by its flag (the grid's, as with flags alone)."""
    path = _file(tmp_path, "ds.json", DS_ZERO2)
    code, out, err = run_cli(capsys, [*SWEEP, "--scenario", path, "--pp-values", "1,2"])
    assert code == 0, err
    assert [row["pp"] for row in json.loads(out)] == [1]
    words = PIPELINE.format(strategy="strategy", pp="--pp", zero_framework="zero_framework")
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
    assert _line(capsys, [*SWEEP, "--scenario", path, "--pp-values", "2"]) == (
        f"scalesim sweep: error: {path}: no combination of the sweep is left: all 1 dropped "
        f"(1 breaks a layout rule (e.g. {words})); nothing written")


def test_the_dropped_rows_note_names_flags_as_before(tmp_path, capsys):
    """The flags alone, or the file's strategy said again by --strategy (the flag's value
    runs): every knob by its flag, no file named."""
    words = PIPELINE.format(strategy="--strategy", pp="--pp", zero_framework="--zero-framework")
    flags = ["--devices", "16", "--strategy", "zero2", "--zero-framework", "deepspeed"]
    path = _file(tmp_path, "ds.json", DS_ZERO2)
    for given in (flags, ["--scenario", path, *flags]):
        code, out, err = run_cli(capsys, [*SWEEP, *given, "--pp-values", "1,2"])
        assert code == 0, err
        assert err.splitlines()[0] == (
            f"note: 1 combination dropped: 1 breaks a layout rule (e.g. {words})")
        assert _line(capsys, [*SWEEP, *given, "--pp-values", "2"]) == (
            "scalesim sweep: error: no combination of the sweep is left: all 1 dropped "
            f"(1 breaks a layout rule (e.g. {words})); nothing written")


def test_the_dropped_rows_note_names_the_files_grad_sync_by_its_key(tmp_path, capsys):
    """The file's once-per-step with --zero-framework-values fsdp,deepspeed at ZeRO-2: the
    DeepSpeed row is dropped (``sweep._grad_sync_refused_rows``), its rule naming the file's
    grad_sync by its key."""
    path = _file(tmp_path, "sync.json", {"devices": [16], "grad_sync": "once-per-step"})
    code, out, err = run_cli(capsys, [*SWEEP, "--scenario", path, "--strategy", "zero2",
                                      "--zero-framework-values", "fsdp,deepspeed"])
    assert code == 0, err
    assert [row["zero_framework"] for row in json.loads(out)] == ["fsdp"]
    assert err.splitlines()[0] == (
        f"note: {path}: 1 combination dropped: 1 breaks a layout rule (e.g. zero_framework "
        "deepspeed: " + NO_SYNC.format(grad_sync="grad_sync", zero_framework="--zero-framework")
        + ")")
