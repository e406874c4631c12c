"""Session 21: the app's tables hold numbers in their number columns, so sorting a column in the
app sorts by value. Before, a table where a device count does not fit wrote every step time,
throughput and efficiency as text ('does not fit' beside '1234.56'), and the Remedies, Hours &
cost, Goal and shared-link tables wrote '12.3 ms', '$1,234', '3.0 days', '+4.5%' as text: a
click on the column sorted '101.2' before '27.0' and '10 days' before '2 hours'. Now each is a
number with its unit in the column name and a display format (``table_columns``); a run that
does not fit has an empty cell and its runnable cell says why."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from app_harness import open_app
from scalesim.app.state import default_state, encode_query, preset_profile
from scalesim.app.table_columns import number_columns, to_hours

LLAMA = {"hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "focus": 64, "mb": 1, "train": 1e6, "price": 3.0}
# 16 devices do not fit, 32 and 64 do; ZeRO-2 as conftest's PARTIAL_STATE (ZeRO-1 until session
# 44, when its fp32 main_grad buffer left 32 devices out too)
PARTIAL = {**LLAMA, "strat": "zero2", "tp": 8, "pp": 2}
A_MISFIT = {**LLAMA, "tp": 4, "pp": 4, "sched": "zb"}  # today's layout fits at no count
GOAL = {"train": 1e9, "price": 4.0, "dl": 48.0, "bud": 5000.0}
# a number followed by its unit, as text: what a column of numbers must never hold
NUMBER_WITH_UNIT = re.compile(
    r"^([-+]?[\d,]+(\.\d+)? ?(ms|GiB|%|hours?|days?|minutes?)|[-+]?\$[\d,]+(\.\d+)?)$"
)


def _tables(update: dict, tab: str):
    state = default_state().model_copy(update={**update, "tab": tab})
    at = open_app(encode_query(state, preset_profile(state)))
    return [(d.value, json.loads(d.proto.columns)) for d in at.dataframe]


def test_number_columns_formats_the_numeric_columns_named_with_a_unit():
    df = pd.DataFrame(
        {
            "option": ["a", "b"],
            "memory GiB": [101.2, 27.0],
            "hours to finish": [2.0, None],
            "cost USD": [10.0, 2.5],
            "devices": [8, 16],
            "runnable": ["yes", "NO"],
            "note GiB": ["x", "y"],
        }
    )
    config = number_columns(df, {"devices": "%d"})
    assert {c: v["type_config"]["format"] for c, v in config.items()} == {
        "memory GiB": "%.1f",
        "hours to finish": "%.1f",
        "cost USD": "dollar",
        "devices": "%d",
    }
    assert to_hours(5400.0) == 1.5 and to_hours(None) is None


@pytest.mark.parametrize("tab", ["curve", "breakdown"])
def test_the_scaling_table_where_a_count_does_not_fit_sorts_by_value(tab):
    ((table, config), *_) = _tables(PARTIAL, tab)
    for column in ("step ms", "compute ms", "sequences of 8192 tokens/s", "efficiency %", "memory GiB"):
        assert table[column].dtype.kind == "f", column  # was object: text beside 'does not fit'
    assert config["step ms"]["type_config"]["format"] == "%.2f"
    assert config["memory GiB"]["type_config"]["format"] == "%.1f"
    steps = dict(zip(table["devices"], table["step ms"], strict=True))
    by_step = table.sort_values("step ms", ascending=False)
    assert steps[32] != steps[64] and steps[16] != steps[16]  # 16 has none (NaN)
    assert list(by_step["devices"]) == [*sorted((32, 64), key=steps.get, reverse=True), 16]
    assert list(table["runnable"]) == ["NO: does not fit in memory", "yes", "yes"]


def test_the_remedies_cost_and_goal_tables_are_numbers():
    ((remedies, r_config),) = _tables(GOAL, "remedies")
    for column in (
        "faster to finish %",
        "throughput gain %",
        "sequences/s",
        "step ms",
        "hours to finish",
        "cost USD",
    ):
        assert remedies[column].dtype.kind == "f", column  # were '+4.5%', '61.7 ms', '$1,234'
    assert r_config["throughput gain %"]["type_config"]["format"] == "%+.1f"
    assert r_config["cost USD"]["type_config"]["format"] == "dollar"
    ((cost, c_config),) = _tables(GOAL, "cost")
    assert cost["hours to finish"].dtype.kind == "f"  # was '3.0 days' beside '10.9 hours'
    assert c_config["hours to finish"]["type_config"]["format"] == "%.1f"
    ((goal, g_config),) = _tables(GOAL, "goal")
    assert goal["hours"].dtype.kind == "f" and goal["cost USD"].dtype.kind == "f"
    assert list(goal.sort_values("hours")["hours"]) == sorted(goal["hours"])


def test_the_remedies_gains_are_words_where_todays_layout_does_not_fit():
    ((remedies, config),) = _tables(A_MISFIT, "remedies")
    assert "throughput gain %" not in remedies  # a gain against a run that cannot happen
    assert set(remedies["throughput gain"]) <= {"makes it run", "not runnable", "n/a"}
    assert remedies["sequences of 8192 tokens/s"].dtype.kind == "f"


@pytest.mark.parametrize(
    "update, tabs",
    [
        (GOAL, ["curve", "breakdown", "remedies", "cost", "goal"]),
        (PARTIAL, ["curve", "remedies", "cost"]),
        (A_MISFIT, ["breakdown", "remedies", "cost"]),
    ],
)
def test_no_table_holds_a_number_with_its_unit_as_text(update, tabs):
    for tab in tabs:
        for table, _ in _tables(update, tab):
            for column in table.columns:
                if table[column].dtype.kind != "O":
                    continue
                texts = [v for v in table[column] if isinstance(v, str)]
                assert not any(NUMBER_WITH_UNIT.match(v) for v in texts), (tab, column, texts)
