"""Session 46 (issue 11, app): the Goal tab with no plan, a preset switch that resets typed
values, and a device grid that stops short of the Largest device count, walked as an ML
engineer uses them (docs/reliability.md, "Session 46").

The Goal tab where nothing fits (llama3-405b on at most 16 H100s) said "No plan runs" and drew
an empty 0 x 0 table of its Pareto front under it: the table is left out where the front is
empty (the sentence and the notes say why)."""

from __future__ import annotations

from app_harness import open_app, run_clean
from scalesim.app.state import AppState, encode_query, preset_profile, with_profile_defaults

GOAL_405B = {"hw": "dgx-h100", "wl": "llama3-405b", "tab": "goal", "dl": 720.0,
             "bud": 100000.0, "train": 1e7, "gmax": 16}


def _query(**fields) -> dict:
    """The share link of the what-if ``fields`` on their presets' defaults (with its checksum)."""
    state = AppState(**fields)
    profile = preset_profile(state)
    return encode_query(with_profile_defaults(state, profile).model_copy(update=fields), profile)


def test_the_goal_tab_with_no_plan_shows_why_and_no_empty_table():
    at = open_app(_query(**GOAL_405B))
    assert [w.value for w in at.warning if w.value.startswith("No plan runs")] == [
        "No plan runs: none of the layouts searched fits in device memory."]
    assert any("so there was no plan to evaluate" in c.value for c in at.caption)
    assert [d.value.shape for d in at.dataframe] == []  # was one (0, 0) table
    # the way out the note names (Largest device count goal searches): plans, and their table
    at.sidebar.number_input(key="k_gmax").set_value(256)
    run_clean(at)
    assert [w for w in at.warning if w.value.startswith("No plan runs")] == []
    (table,) = at.dataframe
    assert table.value.shape[0] >= 1 and "cost USD" in table.value.columns
