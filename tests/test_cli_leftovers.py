"""CLI defects a review found and left (branch s8_leftovers): each one line on stderr, exit 2."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim.cli.main import ORDER


def test_no_command_prints_the_help_and_says_why_on_stderr(capsys):
    """`scalesim` alone printed the help and exited 2 with nothing on stderr: a script saw a
    failure with no reason. Now the help still goes to stdout and one line names the commands."""
    code, out, err = run_cli(capsys, [])
    assert code == 2
    assert out.startswith("usage: scalesim")
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("scalesim: error: no command given: choose one of ")
    assert all(name in lines[0] for name in [*ORDER, "decide", "goal"])


GOAL = ["goal", "--train-samples", "2e9", "--budget", "50000"]


@pytest.mark.parametrize("argv", [["--deadline", "-3d"], ["--deadline=-3d"],
                                  ["--deadline", "-72h"], ["--deadline", "-.5d"]])
def test_a_negative_deadline_reaches_its_bound(capsys, argv):
    """`--deadline -3d` was taken by argparse for an option ("expected one argument") and
    `--deadline=-3d` was "not a duration"; both now reach the deadline's bound, which names the
    value and the rule."""
    code, _, err = run_cli(capsys, [*GOAL, *argv])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "expected one argument" not in err and "not a duration" not in err, err
    assert "argument --deadline" in err and "is outside 0 < x" in err, err
    assert "a training run's deadline" in err, err  # the rule


def test_an_option_after_a_flag_is_still_an_option(capsys):
    """Values that start with a digit after '-' are values; a flag is still a flag."""
    code, _, err = run_cli(capsys, [*GOAL, "--deadline", "--json"])
    assert code == 2 and "argument --deadline: expected one argument" in err, err
