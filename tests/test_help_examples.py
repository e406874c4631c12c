"""Every example a command's --help prints, and every command line of the docs' code blocks,
is a command line its parser takes as written (a renamed or removed flag breaks this test, not
a user copying the example). Running them needs the user's files (my-node.json, runs.csv...):
the reviewer ran each one on fixtures (report of the s6_rev_edges branch); the parse is what
can drift silently."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from test_doc_references import DOCS  # the docs users copy command lines from, listed once

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


def _doc_lines(doc: str) -> list[str]:
    """The command lines of ``doc``'s shell code blocks (fenced bash, or unlabelled)."""
    return _block_lines((ROOT / doc).read_text())


def _block_lines(text: str) -> list[str]:
    """The command lines of the shell code blocks of ``text``; a quoted error line ('scalesim
    predict: error: ...', after a '$ ' prompt line) is output, not a command."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    return [
        line
        for lang, body in blocks
        if lang in ("", "bash")
        for line in _command_lines(body)
        if not shlex.split(line)[1].endswith(":")
    ]


def _examples() -> list[tuple[str, str]]:
    """(where, example line) for every command line of every command's --help epilog and of
    the docs' code blocks."""
    out = [
        (module.NAME, line)
        for module in _command_modules()
        for line in _command_lines(getattr(module, "EXAMPLE", "") or "")
    ]
    out += [(doc, line) for doc in DOCS for line in _doc_lines(doc)]
    return out


EXAMPLES = _examples()


def test_every_command_has_examples():
    names = {m.NAME for m in _command_modules()}
    assert names <= {name for name, _ in EXAMPLES}
    assert {"README.md", "docs/calibration.md", "docs/diagnose.md"} <= {name for name, _ in EXAMPLES}


@pytest.mark.parametrize("command, example", EXAMPLES, ids=[e for _, e in EXAMPLES])
def test_the_example_parses_as_written(command, example):
    argv = shlex.split(example)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse refused it: exit 2 and its one line on stderr
        pytest.fail(f"{command} shows '{example}', which exits {exc.code}")
    assert args.command == argv[0]
    # argparse also takes a flag's abbreviation: the example writes each flag in full
    written = {word.split("=")[0] for word in argv[1:] if word.startswith("--")}
    assert written <= _options()[argv[0]], written - _options()[argv[0]]


def _options() -> dict[str, set[str]]:
    """Each command's option strings, from the parser itself."""
    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {o for action in p._actions for o in action.option_strings} for name, p in sub.choices.items()
    }


def _inline_commands() -> list[tuple[str, str, list[str]]]:
    """(doc, command, flags) of every inline `scalesim CMD --flag ...` or `CMD --flag ...` span
    of the docs' prose (code blocks are parsed whole above)."""
    return [span for doc in DOCS for span in _prose_commands(doc, (ROOT / doc).read_text())]


def _prose_commands(doc: str, text: str) -> list[tuple[str, str, list[str]]]:
    """(doc, command, flags) of the inline command spans of ``text``'s prose."""
    commands = set(_options())
    out = []
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for span in re.findall(r"`([^`\n]+)`", prose):
        words = span.split()
        if words[:1] == ["scalesim"]:
            words = words[1:]
        if len(words) > 1 and words[0] in commands and words[1].startswith("--"):
            out.append((doc, words[0], re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span)))
    return out


def _wrong_flags(spans: list[tuple[str, str, list[str]]]) -> list[tuple[str, str, str]]:
    """(doc, command, flag) of each flag of ``spans`` that is not an option of its command."""
    options = _options()
    return [
        (doc, command, flag)
        for doc, command, flags in spans
        for flag in flags
        if flag not in options[command]
    ]


def test_every_flag_the_docs_name_on_a_command_is_one_of_its_options():
    """'`scalesim plan --shard-group N`' in prose named a flag plan does not have; each flag of
    such a span must be an option of that command."""
    spans = _inline_commands()
    assert len(spans) > 20
    wrong = _wrong_flags(spans)
    assert not wrong, wrong


MADE_UP = """Plan with `scalesim plan --global-batch 64 --made-up-flag 3` or `predict --tp 2 --tpp 2`.

```bash
scalesim predict --devices 8 --made-up-flag 3
```
"""


def test_a_made_up_flag_in_prose_is_caught_and_a_real_one_is_not():
    """The check above fails on a flag no command has: the prose span's made-up flag (and a
    misspelt one) is named, its real flags are not."""
    assert _wrong_flags(_prose_commands("doc", MADE_UP)) == [
        ("doc", "plan", "--made-up-flag"),
        ("doc", "predict", "--tpp"),
    ]
    assert (
        _wrong_flags(_prose_commands("doc", MADE_UP.replace("made-up-flag", "top").replace("--tpp", "--pp")))
        == []
    )


def test_a_made_up_flag_in_a_code_block_does_not_parse(capsys):
    """The parse above fails on a code block's made-up flag: argparse exits 2 naming it."""
    (line,) = _block_lines(MADE_UP)
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(shlex.split(line)[1:])
    assert exc.value.code == 2 and "--made-up-flag" in capsys.readouterr().err
    # an abbreviation does not parse (flags are written in full: allow_abbrev=False)
    short = shlex.split(line.replace("--made-up-flag 3", "--strat zero2"))
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(short[1:])
    assert exc.value.code == 2 and "--strat" in capsys.readouterr().err
    assert "--strat" not in _options()["predict"]
    build_parser().parse_args(shlex.split(line.replace(" --made-up-flag 3", ""))[1:])


def _benchmark_flags(text: str) -> list[tuple[str, str]]:
    """(script, flag) of every `python benchmarks/NAME.py --flag ...` command of ``text``,
    in its code blocks and its prose."""
    return [
        (script, flag)
        for script, rest in re.findall(r"python (benchmarks/\w+\.py)([^`#|\n]*)", text)
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)
    ]


def _missing_benchmark_flags(text: str) -> list[tuple[str, str]]:
    """The flags of ``text``'s benchmark commands that their script does not define."""
    return [
        (script, flag)
        for script, flag in _benchmark_flags(text)
        if not (ROOT / script).exists() or f'"{flag}"' not in (ROOT / script).read_text()
    ]


def test_every_benchmark_flag_the_docs_show_is_its_scripts():
    """docs/performance.md and docs/emulated-cluster.md tell how to rerun a measurement with
    flags (`--repeats 20 --browser`, `--rate-mbit 200`): each is an option its script defines."""
    shown = [pair for doc in DOCS for pair in _benchmark_flags((ROOT / doc).read_text())]
    assert len(shown) >= 5
    missing = [(doc, pair) for doc in DOCS for pair in _missing_benchmark_flags((ROOT / doc).read_text())]
    assert not missing, missing


def test_a_made_up_benchmark_flag_or_script_is_caught():
    text = "Run `python benchmarks/app_render.py --repeats 2 --made-up` or\n" + (
        "```bash\npython benchmarks/no_such.py --fast\n```\n"
    )
    assert _missing_benchmark_flags(text) == [
        ("benchmarks/app_render.py", "--made-up"),
        ("benchmarks/no_such.py", "--fast"),
    ]
