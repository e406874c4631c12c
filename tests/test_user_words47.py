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
