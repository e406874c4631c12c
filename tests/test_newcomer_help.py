"""--help says what a flag does now: a flag a command refuses is not offered with a default, and
the scenario flags whose default is not a constant say where it comes from (session 18: a
newcomer read the help texts against the commands' behaviour)."""

from __future__ import annotations

import argparse
import re

import pytest
from cli_harness import run_cli

from scalesim.cli.main import build_parser


def _flag_help(command: str, flag: str) -> str:
    """What ``command --help`` prints for ``flag`` (its help string as argparse expands it)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    action = next(a for a in parser._actions if flag in a.option_strings)
    said = parser._get_formatter()._expand_help(action)
    assert re.sub(r"\s+", " ", said) in re.sub(r"\s+", " ", parser.format_help())
    return said


@pytest.mark.parametrize("flag, value", [("--devices", "8,16"), ("--strategy", "zero3")])
def test_goal_help_says_the_flags_it_refuses_are_not_used(capsys, flag, value):
    code, _, err = run_cli(
        capsys, ["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "5e4", flag, value]
    )
    assert code == 2 and f"{flag} is not used" in err  # what goal does
    said = _flag_help("goal", flag)
    assert "is not used" in said and "default" not in said, said  # and what its --help says


@pytest.mark.parametrize(
    "flag, words",
    [
        ("--strategy", "default ddp"),
        ("--accumulation", "default 1"),
        ("--batch", "default: the workload's"),
        ("--gpus-per-node", "default: the hardware's"),
        ("--price", "default: the hardware's list price"),
        ("--straggler-cv", "default: the profile's measured jitter, else 0"),
        ("--inter-busbw", "default: the profile's"),
        ("--intra-latency", "seconds"),
    ],
)
@pytest.mark.parametrize("command", ["predict", "sweep", "decide"])
def test_scenario_flags_say_their_default(command, flag, words):
    assert words in _flag_help(command, flag)


def test_the_defaults_the_help_names_are_the_scenarios(capsys):
    """'default 1' and 'default ddp' are what a prediction without the flags runs."""
    code, out, _ = run_cli(capsys, ["predict", "--devices", "8"])
    assert code == 0 and "scenario: ddp, accumulation 1," in out


@pytest.mark.parametrize(
    "flag, words",
    [
        ("--overlap-values", "on, off"),
        ("--tp-overlap-values", "on, off"),
        ("--strategy-values", "ddp, zero1, zero2, zero3"),
        ("--algorithm-values", "auto, ring, tree, hierarchical"),
        ("--grad-sync-values", "every-micro-step, once-per-step"),
        ("--inter-busbw-values", "as --inter-busbw takes one (GB/s)"),
        ("--bucket-mib-values", "(MiB)"),
    ],
)
def test_sweep_axis_help_says_what_values_it_takes(flag, words):
    """'values of overlap' left a newcomer guessing 1/0, yes/no (refused) or on/off."""
    assert words in _flag_help("sweep", flag)


def test_the_overlap_values_the_help_names_are_taken(capsys):
    code, out, _ = run_cli(capsys, ["sweep", "--devices", "8", "--overlap-values", "on,off"])
    assert code == 0 and [line.split(",")[1] for line in out.splitlines()[1:]] == ["True", "False"]


def test_top_level_help_names_what_the_readme_says_it_plans(capsys):
    """It said 'for data-parallel training' while plan, predict --tp/--pp and sweep split models."""
    code, out, _ = run_cli(capsys, ["--help"])
    text = " ".join(out.split())
    assert code == 0 and "for distributed training" in text and "pipeline parallelism" in text
    assert "for data-parallel training" not in text


def test_every_flag_of_every_command_says_what_it_does():
    """Session 39 newcomer pass: `calibrate --help` listed --optimizer, --seed, --loader-batch
    and the four unmeasured-link numbers (--intra-busbw ... --inter-latency) with no word:
    neither what they set nor their default. Every flag of every command now has its text."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.option_strings[0]}"
        for name, parser in sub.choices.items()
        for action in parser._actions
        if action.option_strings and not (action.help or "").strip()
    ]
    assert silent == []
    assert "(default adam)" in _flag_help("calibrate", "--optimizer")
    assert "(default 32)" in _flag_help("calibrate", "--loader-batch")
