"""Session 47: the words users read name what they typed (the CLI's flags, the app's labels),
not the scenario's field names (``zero_framework``, ``grad_sync``, ...), and goal's refusals say
goal's plans, not "every row of the sweep"."""

from __future__ import annotations

from cli_harness import run_cli


def test_sweeps_deepspeed_once_per_step_refusal_names_the_flags_typed(capsys):
    """Before: 'axes zero_framework, grad_sync: ...', the scenario's field names; now the pair
    in the flags the user gave, swept ('--zero-framework-values deepspeed') or one value
    ('--grad-sync once-per-step'), exit 2 in one line."""
    for swept, fixed, words in (
            (["--zero-framework-values", "deepspeed"], ["--grad-sync", "once-per-step"],
             "every row pairs --zero-framework-values deepspeed with --grad-sync once-per-step"),
            (["--zero-framework", "deepspeed"], ["--grad-sync-values", "once-per-step"],
             "every row pairs --zero-framework deepspeed with --grad-sync-values once-per-step")):
        code, out, err = run_cli(capsys, ["sweep", "--devices", "8,16", "--strategy", "zero2",
                                          *swept, *fixed])
        assert code == 2 and not out
        assert err.startswith(f"scalesim sweep: error: {words}: --grad-sync once-per-step is "
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
