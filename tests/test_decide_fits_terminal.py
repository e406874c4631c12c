"""Session 42: decide's text fits a terminal of ``terminal.COLUMNS`` (110) characters. Its
option column was 122 characters wide on llama3-70b at 64 H100s (the planner's layout in the
title) and 224 on 72, its price and note lines up to 883: every line wrapped in an 80-120
column terminal. A long title is cut to a short one keyed '[1]' in the table and said whole in
a '[1] ...' line under it; the JSON keeps the whole title."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli, whole_lines

from scalesim.cli.terminal import COLUMNS, fit_table, short_title, wrap

LLAMA_64 = ["--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64"]
COMMANDS = [
    [],  # the default: bert-large on up to 16 A100s
    LLAMA_64,
    [*LLAMA_64, "--tp", "8", "--pp", "2", "--train-samples", "1e6"],
    ["--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "72", "--global-batch",
     "1152", "--tp", "8", "--strategy", "zero3", "--train-samples", "1e7"],
]


def _notes(text: str) -> dict[str, str]:
    """The '[n] ...' lines under the table, each joined to its wrapped continuation."""
    notes, last = {}, None
    for line in text.splitlines():
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m:
            last = m[1]
            notes[last] = m[2]
        elif last and line.startswith("    "):
            notes[last] += " " + line.strip()
        else:
            last = None
    return notes


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_line_of_decide_fits_and_every_title_is_said_whole(capsys, argv):
    code, out, err = run_cli(capsys, ["decide", *argv, "--json"])
    assert code == 0, err
    card = json.loads(out)
    titles = [o["title"] for o in [card["now"], *card["options"]]]
    code, text, err = run_cli(capsys, ["decide", *argv])
    assert code == 0, err
    too_long = [line for line in text.splitlines() if len(line) > COLUMNS]
    assert not too_long, too_long
    lines = text.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("option ")))
    rows = lines[start + 1:start + 1 + len(titles)]
    notes = _notes(text)
    for title, row in zip(titles, rows, strict=True):
        cell = re.match(r"(.*?)(?: \[(\d+)\])?(?=  )", row)
        if cell[2]:  # cut: its head in the row, the whole title (runnable or not) in its note
            whole = notes.pop(cell[2])
            assert whole.removesuffix(" (not runnable)") == title
            assert title.startswith(cell[1]) and len(cell[1]) < len(title)
        else:
            assert row.startswith(title + "  ") or row.startswith(title + " (not runnable)")
    assert not notes, notes  # no note without its row
    whole = whole_lines(text).splitlines()  # the tests' reader puts each title back in its row
    assert [x.startswith(tuple(titles)) for x in whole[start + 1:start + 1 + len(titles)]] == [
        True] * len(titles)


def test_the_planner_s_layout_is_said_under_the_table_not_in_the_row(capsys):
    """The task's case: the split's layout in a '[1]' line, 'Split the model [1]' in the row;
    the recommendation and the JSON keep the whole title."""
    code, text, err = run_cli(capsys, ["decide", *LLAMA_64])
    assert code == 0, err
    (row,) = [x for x in text.splitlines() if x.startswith("Split the model")]
    assert row.startswith("Split the model [1]  ")
    title = ("Split the model: dp 16 x tp 4 x pp 1, zero3, micro-batch 1 per replica x 4 "
             "accumulation, recompute none, sequence parallel")
    assert _notes(text)["1"] == title
    # a sentence of its own: not "sequence parallel first", as if a setting
    said = f"{title}. Do this first: today's layout does not fit in device memory."
    assert f"recommendation: {said}" in whole_lines(text)


def test_short_title_keeps_the_longest_clause_head_that_fits():
    title = ("Add 2 servers (64 -> 80 devices), the planner's layout: pipeline schedule 1F1B -> "
             "zero bubble, ddp -> zero1")
    assert short_title(title, 200, "[1]") == title
    assert short_title(title, 60, "[1]") == "Add 2 servers (64 -> 80 devices), the planner's layout [1]"
    assert short_title(title, 40, "[1]") == "Add 2 servers (64 -> 80 devices) [1]"
    assert short_title(title, 20, "[1]") == "Add 2 servers [1]"  # never inside '( )'
    assert short_title("Settings: double (a, b)", 12, "[2]") == "Settings [2]"


def test_fit_table_wraps_a_head_too_long_and_keeps_the_columns():
    rows = [{"option": "As is", "USD/h": "$1"},
            {"option": "averyveryverylongwordthatnothingcuts and more words after it " * 3,
             "USD/h": "$2 (+$1)"}]
    lines, notes = fit_table(rows)
    assert notes[0].startswith("[1] averyvery") and len(notes[0]) <= COLUMNS
    assert lines[2].endswith("$2 (+$1)") and all(len(x) <= COLUMNS for x in lines)
    assert wrap("x " * 100)[1].startswith("  x") and all(len(x) <= COLUMNS for x in wrap("x " * 100))
