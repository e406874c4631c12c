"""The README's two first commands are what a new user pastes: each part (split at ``&&``)
names things that exist here, checked without a network or an install: pip's extras are
pyproject's, the pinned torch satisfies the calibration extra, ``scalesim`` is the installed
script and its command line parses with its flags written in full, pytest's flags are pytest's
(and pytest-xdist's) and its marker expression names registered markers; and ``.ci/run`` runs
the second one verbatim, as its comment says."""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from test_help_examples import _options

from scalesim.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _first_commands(readme: str) -> list[str]:
    """The first two fenced bash blocks of ``readme``, each one command line."""
    blocks = [
        body for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", readme, re.S | re.M) if lang == "bash"
    ][:2]
    assert len(blocks) == 2 and all(len(b.strip().splitlines()) == 1 for b in blocks), blocks
    return [b.strip() for b in blocks]


@functools.cache
def _pytest_options() -> frozenset[str]:
    """pytest's option strings with this environment's plugins (xdist's ``-n``), from its own
    ``--help``: the lines that list an option start with it."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    return frozenset(
        o
        for line in out.splitlines()
        if re.match(r"  -", line)
        for o in re.findall(r"(?:^|, )(--?[A-Za-z][\w-]*)", line.strip().split("  ")[0])
    )


def _marker_names() -> set[str]:
    return {m.split(":")[0].strip() for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}


def _problems(argv: list[str]) -> list[str]:
    """What in one command's ``argv`` does not exist here (empty: every name is real)."""
    tool, args = argv[0], argv[1:]
    if tool == "pip":
        assert args[0] == "install", argv
        extras = PYPROJECT["project"]["optional-dependencies"]
        out = []
        for arg in args[1:]:
            if arg == "-e":
                continue
            if arg.startswith("-"):
                out.append(f"pip install {arg}: not a flag this test knows pip to have")
            elif arg == "." or arg.startswith(".["):
                out += [
                    f"extra {e!r} is not in pyproject's optional-dependencies"
                    for e in re.findall(r"[\w-]+", arg[1:])
                    if e not in extras
                ]
            else:  # a pinned requirement: it must satisfy what the extras ask of it
                req = Requirement(arg)
                wanted = [
                    Requirement(r)
                    for deps in extras.values()
                    for r in deps
                    if Requirement(r).name == req.name
                ]
                pinned = next(iter(req.specifier)).version
                out += [
                    f"{arg} does not satisfy pyproject's {w}"
                    for w in wanted
                    if not w.specifier.contains(pinned)
                ]
                if not wanted:
                    out.append(f"{req.name} is in no extra of pyproject")
        return out
    if tool == "scalesim":
        if PYPROJECT["project"]["scripts"].get("scalesim") != "scalesim.cli.main:main":
            return ["pyproject installs no scalesim script running scalesim.cli.main:main"]
        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            return [f"scalesim {' '.join(args)} exits {exc.code}"]
        written = {a.split("=")[0] for a in args if a.startswith("-")}
        return [f"scalesim {args[0]} has no {f}" for f in sorted(written - _options()[args[0]])]
    if tool == "pytest":
        out = [
            f"pytest has no {a.split('=')[0]}"
            for a in args
            if a.startswith("-") and a.split("=")[0] not in _pytest_options()
        ]
        for flag, value in zip(args, args[1:], strict=False):
            if flag == "-m":
                names = set(re.findall(r"\w+", value)) - {"and", "or", "not"}
                out += [
                    f"marker {n!r} is not registered in pyproject" for n in sorted(names - _marker_names())
                ]
        return out
    return [f"{tool}: not a tool of the README's first commands"]


README = (ROOT / "README.md").read_text()
COMMANDS = _first_commands(README)


@pytest.mark.parametrize("line", COMMANDS)
def test_each_part_of_the_readmes_first_commands_exists(line):
    parts = [shlex.split(part) for part in line.split("&&")]
    assert [p[0] for p in parts][:2] == ["pip", "scalesim" if line is COMMANDS[0] else "pytest"]
    problems = [p for argv in parts for p in _problems(argv)]
    assert not problems, problems


def test_ci_runs_the_readmes_second_command_verbatim():
    assert COMMANDS[1] in (ROOT / ".ci" / "run").read_text().splitlines()


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "pip install . && scalesim predict --devices 8 --made-up-flag 3",
            "scalesim predict --devices 8 --made-up-flag 3 exits 2",
        ),
        (
            "pip install . && scalesim predict --devices 8 --strat zero2",  # an abbreviation
            "scalesim predict --devices 8 --strat zero2 exits 2",  # flags are written in full
        ),
        ('pip install -e ".[test,gpu]" && scalesim app', "extra 'gpu' is not in pyproject"),
        ("pip install torch==2.0.0 -e . && scalesim app", "torch==2.0.0 does not satisfy"),
        ('pytest -n auto -m "not slowest"', "marker 'slowest' is not registered"),
        ("pytest --made-up-flag -m slow", "pytest has no --made-up-flag"),
    ],
)
def test_a_made_up_name_in_the_first_commands_is_caught(line, said):
    """The check fails on what does not exist: each made-up flag, extra, pin or marker is
    named (and the README's real lines above pass the same check)."""
    problems = [p for part in line.split("&&") for p in _problems(shlex.split(part))]
    assert len(problems) == 1 and problems[0].startswith(said), problems
