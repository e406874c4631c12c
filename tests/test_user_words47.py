"""Session 47: the words users read name what they typed (the CLI's flags, the app's labels),
not the scenario's field names (``zero_framework``, ``grad_sync``, ...), and goal's refusals say
goal's plans, not "every row of the sweep"."""

from __future__ import annotations

from app_harness import open_app
from cli_harness import run_cli


def test_sweeps_deepspeed_once_per_step_refusal_names_the_flags_typed(capsys):
    """Before: 'axes zero_framework, grad_sync: ...', the scenario's field names; now the pair
    in the flags the user gave, swept ('--zero-framework-values deepspeed') or one value
    ('--grad-sync once-per-step'), exit 2 in one line."""
    # DeepSpeed's rule after it names a swept knob by its grid flag too (session 50; was
    # '--grad-sync once-per-step is ...' beside --grad-sync-values)
    for swept, fixed, words, sync in (
            (["--zero-framework-values", "deepspeed"], ["--grad-sync", "once-per-step"],
             "every row pairs --zero-framework-values deepspeed with --grad-sync once-per-step",
             "--grad-sync"),
            (["--zero-framework", "deepspeed"], ["--grad-sync-values", "once-per-step"],
             "every row pairs --zero-framework deepspeed with --grad-sync-values once-per-step",
             "--grad-sync-values")):
        code, out, err = run_cli(capsys, ["sweep", "--devices", "8,16", "--strategy", "zero2",
                                          *swept, *fixed])
        assert code == 2 and not out
        assert err.startswith(f"scalesim sweep: error: {words}: {sync} once-per-step is "
                              "FSDP's no_sync"), err
        assert "zero_framework" not in err and "grad_sync" not in err
        assert len(err.strip().splitlines()) == 1


GOAL = ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--train-samples", "1e9",
        "--deadline", "3d", "--budget", "50000"]


def test_goals_refusal_of_a_setting_its_layout_never_uses_says_goal_and_what_to_change(capsys):
    """Before: '--tp-overlap needs --tp 2 or more (...): --tp-overlap means nothing on every
    row of the sweep; give --tp (in a sweep: or a --tp-values that reaches 2 within a server),
    or drop it' (goal has no rows a user sees and no --tp-values). Now predict's rule, then
    that goal keeps this layout at every device count, so none of its plans would use it, and
    what to change, naming only goal's own flags; the same for each setting predict refuses."""
    for flags, rule in (
            (["--tp", "1", "--tp-overlap"], "--tp-overlap needs --tp 2 or more"),
            (["--tp", "1", "--sequence-parallel"], "--sequence-parallel needs --tp 2 or more"),
            (["--pp", "1", "--schedule", "1f1b"], "--schedule 1f1b needs --pp 2 or more"),
            (["--pp", "1", "--virtual-stages", "2"], "--virtual-stages 2 needs --pp 2 or more"),
            (["--pp", "2", "--p2p-overlap", "off"], "--p2p-overlap off needs the interleaved")):
        code, out, err = run_cli(capsys, [*GOAL, *flags])
        assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
        what = " ".join(flags[2:])
        assert err.startswith(f"scalesim goal: error: {rule}"), err
        assert err.rstrip().endswith(
            f"; goal keeps this layout at every device count, so none of its plans would use "
            f"{what}: give the layout it needs, or drop {what}"), err
        assert "row" not in err and "sweep" not in err and "-values" not in err, err
    # the sweep, whose rows are the user's, keeps its own words
    code, _, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--devices", "8", "--tp", "1", "--tp-overlap"])
    assert code == 2 and "means nothing on every row of the sweep" in err, err


def test_sweeps_refusals_of_an_axis_name_its_values_flag_not_the_field(capsys):
    """Before: 'sweep axis tp_overlap needs ...', 'sweep axis tp splits ...', 'sweep axes tp
    and pp split ...', 'sweep axis seq_len needs ...', 'unknown attention_kernel 'bogus''. Now
    each names the flag the user typed (``sweep.values_flag``), exit 2 in one line."""
    for argv, start in (
            (["--tp-overlap-values", "on,off"], "--tp-overlap-values needs a transformer"),
            (["--tp-values", "1,2"], "--tp-values splits the model: "),
            (["--tp-values", "1,2", "--pp-values", "1,2"],
             "--tp-values and --pp-values split the model: "),
            (["--seq-len-values", "512,1024"], "--seq-len-values needs a transformer workload"),
            (["--workload", "llama3-8b", "--attention-kernel-values", "bogus"],
             "--attention-kernel-values: unknown attention kernel 'bogus'; choose from flash2"),
            (["--strategy-values", "ddp,zero9"],
             "--strategy-values: unknown strategy 'zero9'; choose from ddp, zero1")):
        code, out, err = run_cli(capsys, ["sweep", "--devices", "8", *argv])
        assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"scalesim sweep: error: {start}"), err
        assert not any(f in err for f in ("tp_overlap", "seq_len", "attention_kernel",
                                          "sweep axis")), err


def test_goals_missing_length_is_said_in_the_apps_labels():
    """The app's goal tab said 'goal seeking needs a training length (train\\_samples) or E\\_min
    with a critical batch size' (a field name); now the line names its controls by their labels,
    and they are not listed again after it."""
    at = open_app({"v": "1", "dl": "72", "bud": "50000", "tab": "goal"})
    line = next(i.value for i in at.info if i.value.startswith("Goal seeking needs more"))
    assert "train\\_samples" not in line and "train_samples" not in line, line
    assert line.startswith("Goal seeking needs more: goal seeking needs a training length: give "
                           "Samples in the training run, or E\\_min with Critical batch size for "
                           "time to quality."), line
    assert "Controls to change" not in line
