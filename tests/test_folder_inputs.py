"""A folder given where an input file goes (a newcomer's `scalesim validate
scalesim/data/validation/`) is refused in one line that says it is a folder and what to give,
by every command that reads a file (was: "cannot read it ([Errno 21] Is a directory)")."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

COMMANDS = [
    ["predict", "--profile", "{d}"],
    ["predict", "--scenario", "{d}"],
    ["diagnose", "{d}"],
    ["diagnose", "--trace", "{d}"],
    ["diagnose", "--smi", "{d}"],
    ["topo", "{d}"],
    ["validate", "{d}"],
    ["calibrate", "--from-nccl-tests", "{d}", "--out", "{d}/p.json"],
    ["calibrate", "--from-topo", "{d}", "--out", "{d}/p.json"],
    ["calibrate", "--from-trace", "32={d}", "--out", "{d}/p.json"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_a_folder_for_an_input_file_is_one_line_naming_the_remedy(tmp_path, capsys, argv):
    folder = tmp_path / "cases"
    folder.mkdir()
    code, out, err = run_cli(capsys, [a.format(d=folder) for a in argv])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{folder}: is a folder; give the path of a file in it" in err
    assert "Errno" not in err
    assert not (folder / "p.json").exists()
