"""Session 43: goal's text fits a terminal of ``terminal.COLUMNS`` (110) characters, as decide's
does. The README's example printed 59 lines, 49 of them over 110 characters, the longest 640:
its sentences and notes were not wrapped, and each row of its Pareto front and faster-network
tables ran its plan past the edge. Now its sentences wrap (``terminal.wrap``) and its tables are
``terminal.hanging_table``s (the time left-aligned, so no row starts with a space; the plan
wraps inside its column), and ``cli_harness.whole_lines`` reads each back whole."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli, sought_once, whole_lines

from scalesim.cli.terminal import COLUMNS, GAP, MIN_TITLE, hanging_table
from scalesim.figures import amount, duration_text
from scalesim.goal import GoalPlan, describe

README = ["goal", "--train-samples", "2e9", "--critical-batch", "4096", "--deadline", "3d",
          "--budget", "50000"]
# a transformer workload whose searched layouts lengthen each plan, beside three faster networks
LONG = ["goal", "--workload", "gpt-18.4b", "--train-samples", "2e6", "--deadline", "30d",
        "--budget", "5e6", "--max-devices", "256"]


_SOUGHT: dict = {}  # goal.seek's answers in this module, by their arguments


@pytest.fixture
def sought(monkeypatch):
    """The text and the --json of one command, and the long case's two tests, read one search
    (the long one 3-4 s) instead of one a command (``cli_harness.sought_once``)."""
    sought_once(monkeypatch, _SOUGHT)


def _plan(d: dict) -> GoalPlan:
    return GoalPlan(**d)


def _cells(plan: GoalPlan | None) -> list[str]:
    if plan is None:
        return ["-", "-", "no"]
    return [duration_text(plan.time_s), amount(plan.cost_usd), "yes" if plan.meets else "no"]


@pytest.mark.parametrize("argv", [README, LONG], ids=["readme", "long"])
def test_every_line_of_goal_fits_and_reads_back_whole(capsys, argv, sought):
    code, out, err = run_cli(capsys, [*argv, "--json"])
    assert code == 0, err
    answer = json.loads(out)
    code, text, err = run_cli(capsys, argv)
    assert code == 0, err
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= COLUMNS, [x for x in lines if len(x) > COLUMNS]
    assert sum(len(x) > COLUMNS - 20 for x in lines) > 10  # long text, wrapped near the edge
    whole = whole_lines(text).splitlines()
    for sentence in ("sentence", "network_sentence", "need_sentence"):  # each one line again
        assert answer[sentence] in whole, sentence
    assert [f"note: {n}" for n in answer["notes"]] == [x for x in whole if x.startswith("note: ")]
    head = whole.index("time against money (Pareto front: no plan is both sooner and cheaper):")
    assert re.fullmatch(r"time +USD  meets  plan", whole[head + 1])
    rows = whole[head + 2:head + 2 + len(answer["front"])]
    for row, p in zip(rows, answer["front"], strict=True):  # time, USD, meets, the plan whole
        assert re.split(" {2,}", row, maxsplit=3) == [*_cells(_plan(p)), describe(_plan(p))]
    if answer["networks"]:
        at = whole.index("faster networks (as scalesim decide runs them), each one's best plan:")
        rows = whole[at + 2:at + 2 + len(answer["networks"])]
        for row, n in zip(rows, answer["networks"], strict=True):
            plan = _plan(n["plan"]) if n["plan"] else None
            time, usd, meets, said = re.split(" {2,}", row, maxsplit=3)
            assert [time, usd, meets] == _cells(plan)
            assert said.startswith(n["name"] + " (")
            assert said.endswith(f": {describe(plan)}" if plan else ": no plan fits")


def test_the_long_case_has_what_made_it_long(capsys, sought):
    """The long case is long for the reasons it was chosen: three faster networks, and plans
    split by the planner's layouts (whose words lengthened each row past 300 characters)."""
    code, out, err = run_cli(capsys, [*LONG, "--json"])
    assert code == 0, err
    answer = json.loads(out)
    assert len(answer["networks"]) == 3 and answer["layout"] == "search"
    assert any(p["pp"] and p["pp"] > 1 for p in answer["front"])
    assert max(len(describe(_plan(p))) for p in answer["front"]) > 2 * (COLUMNS - 30)


def test_hanging_table_wraps_the_last_cell_in_its_column_and_no_row_starts_with_a_space():
    plan = "16 devices (2 servers), " + "micro-batch 32 x 1 accumulation, " * 6 + "ddp"
    rows = [{"time": "3.0 days", "USD": "4,689", "meets": "yes", "plan": plan},
            {"time": "39.9 days", "USD": "123,456", "meets": "no", "plan": "1 device"}]
    lines = hanging_table(rows)
    indent = len("39.9 days") + len("123,456") + len("meets") + 3 * len(GAP)
    assert lines[0] == "time".ljust(9) + GAP + "USD".rjust(7) + GAP + "meets" + GAP + "plan"
    assert lines[1].startswith("3.0 days " + GAP + "  4,689" + GAP + "  yes" + GAP + "16 devices")
    assert all(len(x) <= COLUMNS for x in lines)
    more = [x for x in lines if x.startswith(" ")]  # the long plan's later lines, at its column
    assert len(more) >= 2 and all(x[:indent].isspace() and x[indent] != " " for x in more)
    assert " ".join([lines[1][indent:], *(x.strip() for x in more)]) == plan
    assert lines[-1] == "39.9 days" + GAP + "123,456" + GAP + "   no" + GAP + "1 device"
    with pytest.raises(ValueError, match="empty 'time' cell"):
        hanging_table([{**rows[0], "time": ""}])


def test_hanging_table_keeps_a_least_room_for_its_last_column():
    """Middle columns wider than a line leave the last one ``MIN_TITLE`` characters."""
    rows = [{"a": "x", "b": "9" * (COLUMNS - 10), "c": "word " * 20}]
    lines = hanging_table(rows)
    assert max(len(x) for x in lines[1:]) - (len("x") + COLUMNS - 10 + 2 * len(GAP)) <= MIN_TITLE
