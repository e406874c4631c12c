"""The Goal tab's table of plans had no layout columns (session 43), though its sentence names
each searched plan's layout ('as dp 4 x tp 4 x pp 4 (interleaved 1F1B, 2 virtual stages, ...)'):
a manager could not read which split each row on the front runs. Where the plans carry a
searched layout the table now has tp, pp (cp where one is above 1), schedule (virtual stages
where one is interleaved), recompute and sequence parallel, named as the Layouts tab's
(``table_columns.LAYOUT_COLUMNS``); with the layout given it has none (the notes say it)."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.table_columns import LAYOUT_COLUMNS, searched_layout_cells

from scalesim.goal import GoalPlan, seek
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

LINK = {"v": "18", "wl": "llama3-8b", "train": "1000000000", "price": "3", "dl": "720",
        "bud": "1000000", "gmax": "64", "tab": "goal"}
COLUMNS = ["tp", "pp", "schedule", "recompute", "seq. parallel"]


def _goal_table(query: dict):
    at = open_app(query)
    return at.dataframe[-1].value  # the Goal tab's table of plans on the front


def test_a_searched_answer_shows_each_plans_layout():
    table = _goal_table({**LINK, "glay": "search"})
    assert set(COLUMNS) <= set(table.columns), list(table.columns)
    # the same rows as goal's front (CLI: --layout search), cell for cell
    profile = resolve_profile(None, "a2-highgpu-8g", "llama3-8b")
    answer = seek(profile, Scenario(train_samples=1e9, price_per_device_hour=3.0),
                  720 * 3600.0, 1e6, 64, layout="search")
    assert len(table) == len(answer.front) > 0
    assert table["tp"].tolist() == [p.tp for p in answer.front]
    assert table["pp"].tolist() == [p.pp for p in answer.front]
    assert table["recompute"].tolist() == [p.recompute for p in answer.front]
    assert table["seq. parallel"].tolist() == [p.sequence_parallel for p in answer.front]
    assert "cp" not in table.columns  # none above 1 here
    # the split multiplies out to each row's devices (dp whole)
    devices = table.columns[3]
    assert all(n % (tp * pp) == 0 for n, tp, pp in zip(table[devices], table["tp"], table["pp"],
                                                       strict=True))


def test_a_given_answer_has_no_layout_columns():
    table = _goal_table({**LINK, "hw": "dgx-h100", "tp": "2",
                         "glay": "given"})
    assert len(table) > 0 and not set(COLUMNS) & set(table.columns)


def _plan(**layout) -> GoalPlan:
    return GoalPlan(devices=64, servers=8, micro_batch=1, accumulation=1, global_batch=16,
                    strategy="zero1", network="as is", samples_per_s=1.0, time_s=1.0,
                    cost_usd=1.0, meets=True, **layout)


def test_cp_and_virtual_stages_only_where_a_plan_has_them():
    flat = _plan(tp=2, pp=1, cp=1, schedule="none", virtual_stages=1, recompute="none",
                 sequence_parallel=True)
    ring = _plan(tp=2, pp=4, cp=2, schedule="interleaved", virtual_stages=2,
                 recompute="full", sequence_parallel=False)
    assert list(searched_layout_cells([flat])[0]) == COLUMNS
    cells = searched_layout_cells([flat, ring])
    assert list(cells[1]) == ["tp", "pp", "cp", "schedule", "virtual stages", "recompute",
                              "seq. parallel"]
    assert (cells[1]["cp"], cells[1]["schedule"], cells[1]["virtual stages"]) == (
        2, "interleaved 1F1B", 2)
    assert set(LAYOUT_COLUMNS.values()) == set(cells[1])
    # given: no searched layout, no cells
    assert searched_layout_cells([_plan(tp=8, pp=1)]) == [{}]
