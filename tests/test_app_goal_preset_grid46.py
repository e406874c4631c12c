"""Session 46 (issue 11, app): the Goal tab with no plan, a preset switch that resets typed
values, and a device grid that stops short of the Largest device count, walked as an ML
engineer uses them (docs/reliability.md, "Session 46").

The Goal tab where nothing fits (llama3-405b on at most 16 H100s) said "No plan runs" and drew
an empty 0 x 0 table of its Pareto front under it: the table is left out where the front is
empty (the sentence and the notes say why)."""

from __future__ import annotations

from app_harness import open_app, preset_query, run_clean, upload_profile
from scalesim.app.plan import device_counts
from scalesim.app.state import AppState, preset_profile, with_profile_defaults

GOAL_405B = {"hw": "dgx-h100", "wl": "llama3-405b", "tab": "goal", "dl": 720.0,
             "bud": 100000.0, "train": 1e7, "gmax": 16}



def test_the_goal_tab_with_no_plan_shows_why_and_no_empty_table():
    at = open_app(preset_query(**GOAL_405B))
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


def _sidebar_infos(at) -> list[str]:
    return [i.value for i in at.sidebar.info]


def test_a_preset_switch_says_which_typed_values_it_reset_to_the_new_profiles():
    """Switching the Hardware preset sets the new profile's global batch and devices per server
    (on purpose: ``_set_profile``); a typed 512 became 64 without a word. The sidebar now says
    which values it reset, from what to what; the values reset are the profile's."""
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", mode="strong", gb=512, dpn=4))
    state = at.session_state["app_state"]
    assert (state.gb, state.dpn) == (512, 4)
    at.sidebar.selectbox(key="k_hw").set_value("dgx-a100")
    run_clean(at)
    after = at.session_state["app_state"]
    new = with_profile_defaults(AppState(hw="dgx-a100", wl="llama3-8b"),
                                preset_profile(AppState(hw="dgx-a100", wl="llama3-8b")))
    assert (after.hw, after.gb, after.dpn) == ("dgx-a100", new.gb, new.dpn) == ("dgx-a100", 64, 8)
    (info,) = _sidebar_infos(at)
    assert info.startswith("Switched to dgx-a100 + llama3-8b. Reset to the new profile's "
                           "values: Devices per server 4 → 8, Global batch 512 → 64 ("), info
    # the price and the rest were the old profile's own: not reset by hand, not named
    assert "Price" not in info and "Samples" not in info


def test_a_preset_switch_with_nothing_typed_says_nothing_and_the_next_pick_clears_it():
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", mode="strong", gb=512))
    at.sidebar.selectbox(key="k_hw").set_value("dgx-a100")
    run_clean(at)
    assert len(_sidebar_infos(at)) == 1 and "Global batch 512 → 64" in _sidebar_infos(at)[0]
    at.sidebar.selectbox(key="k_wl").set_value("llama3-70b")  # nothing typed since
    run_clean(at)
    assert not any(i.startswith("Switched to") for i in _sidebar_infos(at)), _sidebar_infos(at)


def test_an_upload_and_leaving_it_say_the_typed_values_they_reset():
    """The same words where an uploaded profile, and leaving it, reset a typed value."""
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", mode="strong", gb=512))
    lab = preset_profile(AppState(hw="dgx-a100", wl="llama3-8b")).model_copy(
        update={"name": "lab"})
    upload_profile(at, lab)
    (loaded,) = [s.value for s in at.sidebar.success if s.value.startswith("Loaded profile")]
    assert loaded.startswith("Loaded profile 'lab' from lab.json. Reset to the new profile's "
                             "values: Global batch 512 → 64 ("), loaded
    at.sidebar.number_input(key="k_dpn").set_value(4)
    run_clean(at)
    at.sidebar.button(key="leave_profile").click()
    run_clean(at)
    (back,) = [s.value for s in at.sidebar.success if s.value.startswith("Back to the presets")]
    assert back.startswith("Back to the presets dgx-h100 + llama3-8b. Reset to the new "
                           "profile's values: Devices per server 4 → 8 ("), back


def _count_notes(at) -> list[str]:
    return [i.value for i in at.info if "the largest count plotted" in i.value]


def test_a_grid_that_stops_short_of_the_largest_count_says_which_and_why():
    """3 GPUs per server, Largest device count 64: the powers of two above one server double
    whole servers (3 ... 48) and stopped at 48 without a word."""
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", dmax=64, dpn=3))
    assert at.session_state["app_state"].dpn == 3
    assert _count_notes(at) == [
        "Largest device count 64: the largest count plotted is 48 (above one server the powers "
        "of two are 3 devices doubled: 3, 6, 12, 24, 48; the next, 96, is past 64)."]  # a
    # sentence, as the page's other notes, since session 49 (app.plan.as_sentence; was no stop)
    # the note's count is the grid's: the counts the page plots
    counts, _ = device_counts(at.session_state["app_state"], 3)
    assert max(counts) == 48
    at.sidebar.radio(key="k_grid").set_value("server")  # every server: 21 whole servers
    run_clean(at)
    assert _count_notes(at) == ["Largest device count 64: the largest count plotted is 63 "
                                "(whole servers of 3, 21 of them)."]


def test_no_note_where_the_grid_reaches_the_largest_count():
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", dmax=64))
    assert _count_notes(at) == []
    state = AppState(dmax=64)
    for g in (1, 2, 4, 8, 16, 32, 64):  # a power of two per server doubles up to 64
        counts, notes = device_counts(state, g)
        assert max(counts) == 64 and notes == [], g
    counts, notes = device_counts(AppState(dmax=6), 8)  # below one server: 1, 2, 4
    assert counts == [1, 2, 4] and notes == [
        "Largest device count 6: the largest count plotted is 4 (below one server of 8 the "
        "counts are powers of two)"]
