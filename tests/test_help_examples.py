"""Every example a command's --help prints is a command line its parser takes as written (a
renamed or removed flag breaks this test, not a user copying the example). Running them needs
the user's files (my-node.json, runs.csv...): the reviewer ran each one on fixtures (report
of the s6_rev_edges branch); the parse is what can drift silently."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from scalesim.cli.main import _command_modules, build_parser

ROOT = Path(__file__).resolve().parents[1]


def _command_lines(text: str) -> list[str]:
    """The 'scalesim ...' command lines of ``text`` (continued lines joined; a leading
    'then:', 'cmd &&' or 'cmd |', and trailing comments, pipes and redirections cut off)."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        start = line.find("scalesim ")
        before = line[:start].strip()
        if start < 0 or not (before in ("", "then:") or before.endswith(("&&", "|"))):
            continue
        example = re.split(r"\s#|\s{2,}\(|\s\||\s>|\s&&|\s\(adds", line[start:])[0]
        out.append(example.strip())
    return out


def _examples() -> list[tuple[str, str]]:
    """(where, example line) for every command line of every command's --help epilog and of
    the README's code blocks."""
    out = [(module.NAME, line) for module in _command_modules()
           for line in _command_lines(getattr(module, "EXAMPLE", "") or "")]
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    out += [("README.md", line) for block in blocks for line in _command_lines(block)]
    return out


EXAMPLES = _examples()


def test_every_command_has_examples():
    names = {m.NAME for m in _command_modules()}
    assert {name for name, _ in EXAMPLES} == names | {"README.md"}


@pytest.mark.parametrize("command, example", EXAMPLES, ids=[e for _, e in EXAMPLES])
def test_the_example_parses_as_written(command, example):
    argv = shlex.split(example)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse refused it: exit 2 and its one line on stderr
        pytest.fail(f"{command} shows '{example}', which exits {exc.code}")
    assert args.command == argv[0]
