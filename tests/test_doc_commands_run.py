"""The docs' code-block command lines that need nothing but the repository run as written: exit
0, no traceback. tests/test_help_examples.py checks that each one parses; a flag combination a
later rule refuses (a layout that no longer fits, a value now out of bounds) still parses, and a
reader pasting it gets an error. Lines that read a user's file (my-node.json, runs.csv,
rank0.json...), start torch or a server (calibrate, app), or run a benchmark script are left to
the reviewer's run of every command (docs/reliability.md, Session 47)."""

from __future__ import annotations

import re
import shlex

import pytest
from cli_harness import run_cli
from test_doc_references import DOCS
from test_help_examples import ROOT, _doc_lines

# the commands that read only their flags and the repository's shipped files
RUNS_HERE = {"predict", "sweep", "plan", "decide", "goal", "validate", "presets", "schema"}
FILE_ENDINGS = (".json", ".csv", ".txt", ".gz")


def _runnable(argv: list[str]) -> bool:
    """``argv`` (after 'scalesim') is a command of RUNS_HERE whose every input file is one of
    the repository's (an output, ``--out X``, is written to a temporary folder instead)."""
    if argv[0] not in RUNS_HERE:
        return False
    inputs = [w for i, w in enumerate(argv) if w.endswith(FILE_ENDINGS) and argv[i - 1] != "--out"]
    return all((ROOT / w).is_file() for w in inputs)


def _commands() -> list[tuple[str, str]]:
    """(doc, line) of each runnable code-block command line of the docs, each line once."""
    seen, out = set(), []
    for doc in DOCS:
        for line in _doc_lines(doc):
            if line not in seen and _runnable(shlex.split(line)[1:]):
                seen.add(line)
                out.append((doc, line))
    return out


COMMANDS = _commands()


def test_the_docs_have_runnable_commands_and_the_filter_keeps_user_files_out():
    """The selection is not empty (README's examples, validate's), and a line naming a file the
    repository lacks, or a command that starts torch, is not in it."""
    lines = {line for _, line in COMMANDS}
    assert len(COMMANDS) >= 20, COMMANDS
    assert any(line.startswith("scalesim predict --hardware dgx-a100") for line in lines)
    assert "scalesim validate scalesim/data/validation/collected_dp_cases.json" in lines
    assert not _runnable(["predict", "--profile", "my-node.json", "--devices", "8"])
    assert not _runnable(["calibrate", "--out", "my-node.json"])
    assert _runnable(["sweep", "--devices", "8", "--out", "grid.csv"])


def _problem(line: str, capsys, monkeypatch, tmp_path) -> str | None:
    """What goes wrong when ``line`` runs from the repository root, or None."""
    argv = shlex.split(line)[1:]
    argv = [str(tmp_path / w) if i and argv[i - 1] == "--out" else w for i, w in enumerate(argv)]
    monkeypatch.chdir(ROOT)  # the docs' paths (scalesim/data/validation/...) are the repository's
    code, out, err = run_cli(capsys, argv)
    if code != 0 or "Traceback" in out + err:
        return f"exits {code}: {err.strip()[-300:]}"
    if not (out.strip() or list(tmp_path.iterdir())):
        return "prints nothing"
    return None


@pytest.mark.parametrize("doc, line", COMMANDS, ids=[line for _, line in COMMANDS])
def test_the_docs_command_runs_as_written(doc, line, capsys, monkeypatch, tmp_path):
    problem = _problem(line, capsys, monkeypatch, tmp_path)
    assert problem is None, f"{doc} shows '{line}', which {problem}"


def test_a_line_that_parses_but_is_refused_is_caught(capsys, monkeypatch, tmp_path):
    """A split of a parameter-count workload parses (test_help_examples passes it) and is
    refused when it runs: this test's check names the refusal."""
    line = "scalesim predict --devices 8 --tp 2"
    problem = _problem(line, capsys, monkeypatch, tmp_path)
    assert problem and problem.startswith("exits 2:"), problem


def _block_files(lines: list[str]) -> list[tuple[str, str]]:
    """(line, JSON file it reads) of each line of one code block that reads a JSON file neither
    the repository holds nor an earlier line of the block writes (``--out``)."""
    written, unmade = set(), []
    for line in lines:
        argv = shlex.split(line)[1:]
        for i, word in enumerate(argv):
            if word.endswith(".json") and argv[i - 1] != "--out" and word not in written \
                    and not (ROOT / word).is_file():
                unmade.append((line, word))
        written |= {argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "--out"}
    return unmade


def _blocks_that_write() -> list[tuple[str, list[str]]]:
    """(doc, command lines) of each code block of the docs where a line writes a file."""
    from test_help_examples import _command_lines

    out = []
    for doc in DOCS:
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", (ROOT / doc).read_text(), re.S | re.M):
            lines = _command_lines(body) if lang in ("", "bash") else []
            if any("--out" in shlex.split(line) for line in lines):
                out.append((doc, lines))
    return out


def test_a_block_that_writes_a_profile_reads_only_what_it_wrote():
    """Session 51: docs/calibration.md's CPU gpt block wrote cpu.json, then read
    ``--workload my-gpt.json``, a file no line of it made nor the page described: a reader
    pasting the block got 'no such file'. In a block that writes a file, each JSON file a
    later line reads is one an earlier line wrote (or the repository's)."""
    blocks = _blocks_that_write()
    assert any("cpu.json" in " ".join(lines) for _, lines in blocks)
    unmade = [(doc, pair) for doc, lines in blocks for pair in _block_files(lines)]
    assert not unmade, unmade
    assert _block_files(["scalesim calibrate --out a.json",
                         "scalesim plan --profile a.json --workload b.json"]) == [
        ("scalesim plan --profile a.json --workload b.json", "b.json")]
