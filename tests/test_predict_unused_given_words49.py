"""Session 49 (follow-up): predict's notes of the settings that change no number of its
scenario (``cmd_predict.unused_setting_notes``: --zero-framework under ddp, --grad-sync
once-per-step where every step reduces once anyway, --tp-overlap with overlap off) say a
setting a ``--scenario`` file gave by the file's key, the file named first
(``cli.given_words``), as its 'left out' notes do; a flag's setting by its flag, as before."""

from __future__ import annotations

from cli_harness import run_cli, scenario_file

PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100"]
# the three notes, each knob in its slot; the rules' words are ``layout.
# TP_OVERLAP_UNDER_NO_OVERLAP`` and ``sharding.grad_sync_unused`` at strategy ddp
TP_OVERLAP = ("{tp_overlap} ignored: overlap is off, so every collective, the tensor-parallel "
              "ones too, waits for its compute (docs/model.md §16)")
FRAMEWORK = ("{zero_framework} deepspeed with strategy ddp is DeepSpeed's engine without ZeRO "
            "(stage 0: its own all-reduce and optimizer step, nothing sharded); give {strategy} "
             "zero1, zero2 or zero3 to shard")
GRAD_SYNC = ("{grad_sync} once-per-step ignored: strategy ddp reduces gradients once per step "
             "anyway (it applies to ZeRO-2/3)")


def _ignored(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    # the setting notes: the ignored ones, and DeepSpeed's stage 0 beside ddp (session 60: said
    # as what it is, no longer 'ignored')
    return [line for line in out.splitlines() if line.startswith("note:")
            and (" ignored: " in line or "DeepSpeed's engine" in line)]


def test_the_files_settings_are_named_by_their_keys(tmp_path, capsys):
    """Before session 49: 'note: --tp-overlap ignored: ...', 'note: --zero-framework deepspeed
    ignored: ... (give --strategy zero1, ...)', '--grad-sync once-per-step ignored: ...', flags
    the user never gave; now the file's keys (a switch with its value: 'tp_overlap true'), the
    file first. (grad_sync once-per-step with DeepSpeed is refused, so its own file.)"""
    path = scenario_file(tmp_path, "s.json", {
        "devices": [8, 16], "strategy": "ddp", "zero_framework": "deepspeed", "overlap": False,
        "layout": {"tp": 2, "tp_overlap": True}})
    assert _ignored(capsys, [*PREDICT, "--scenario", path]) == [
        f"note: {path}: " + TP_OVERLAP.format(tp_overlap="tp_overlap true"),
        f"note: {path}: " + FRAMEWORK.format(zero_framework="zero_framework",
                                             strategy="strategy")]
    sync = scenario_file(tmp_path, "g.json", {"devices": [8, 16], "strategy": "ddp",
                                              "grad_sync": "once-per-step"})
    assert _ignored(capsys, [*PREDICT, "--scenario", sync]) == [
        f"note: {sync}: " + GRAD_SYNC.format(grad_sync="grad_sync")]


def test_the_flags_settings_are_named_by_their_flags(tmp_path, capsys):
    """The flags alone: the lines as before session 49; the file's framework and strategy given
    again by their flags: that note by the flags, the file's tp_overlap still by its key."""
    assert _ignored(capsys, [*PREDICT, "--devices", "8,16", "--strategy", "ddp",
                             "--zero-framework", "deepspeed", "--no-overlap", "--tp", "2",
                             "--tp-overlap"]) == [
        "note: " + TP_OVERLAP.format(tp_overlap="--tp-overlap"),
        "note: " + FRAMEWORK.format(zero_framework="--zero-framework", strategy="--strategy")]
    assert _ignored(capsys, [*PREDICT, "--devices", "8,16", "--strategy", "ddp",
                             "--grad-sync", "once-per-step"]) == [
        "note: " + GRAD_SYNC.format(grad_sync="--grad-sync")]
    path = scenario_file(tmp_path, "s.json", {
        "devices": [8, 16], "strategy": "ddp", "zero_framework": "deepspeed", "overlap": False,
        "layout": {"tp": 2, "tp_overlap": True}})
    assert _ignored(capsys, [*PREDICT, "--scenario", path, "--zero-framework", "deepspeed",
                             "--strategy", "ddp"]) == [
        f"note: {path}: " + TP_OVERLAP.format(tp_overlap="tp_overlap true"),
        "note: " + FRAMEWORK.format(zero_framework="--zero-framework", strategy="--strategy")]
