"""The app gets what the CLI got in session 42 (share link v17): the memory margin
(``--memory-margin``, link key ``mm``) and the largest device count goal searches (``goal
--max-devices``, link key ``gmax``), each from its knob table row.

Before: the app had neither control and no link key: its Layouts tab ranked GPT 145.6B on 1,536
A100 80GB at global batch 2,304 with a best of 79.8 of 80 GiB (0.2 GiB free) and said nothing,
a link could not ask for 5 % kept free, and the Goal tab always searched to 1,024 devices
(``GoalControls.max_devices`` None). The charts' "Largest device count" (``dmax``) is not that
control: it draws the curves (16 by default; a device list ignores it), so reusing it would have
cut every Goal tab's search from 1,024 devices to 16."""

from __future__ import annotations

import json

import pytest
from app_harness import link_param, open_app
from cli_harness import run_cli
from scalesim.app.plan import layout_memory_note, layout_ranking, layout_reference, make_plan
from scalesim.app.planner_page import goal_controls
from scalesim.app.state import (
    LINK_VERSION,
    AppState,
    decode_query,
    default_state,
    encode_query,
    keys_added_in,
    link_checksum,
    link_version,
    preset_fingerprint,
    preset_profile,
    with_profile_defaults,
)

from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES, KNOB_BY_FIELD
from scalesim.device_nouns import nouns_for
from scalesim.goal import seek

# Narayanan et al. 2021 Table 1's 145.6B row, split tp 4 x pp 8 in the sidebar so that the
# what-if runs (2,304 does not split over 1,536 data-parallel devices)
GPT = {"hw": "dgx-a100", "wl": "gpt-145.6b", "mode": "strong", "gb": 2304, "grid": "list",
       "dlist": "1536", "focus": 1536, "tp": 4, "pp": 8, "tab": "layouts"}
PLAN = ["plan", "--workload", "gpt-145.6b", "--hardware", "dgx-a100", "--devices", "1536",
        "--global-batch", "2304", "--json"]
# the Goal tab's no-fit case (test_app_goal_names_its_controls): llama3-8b on A100 40 GB
GOAL = {"wl": "llama3-8b", "train": "1000000000", "price": "3", "dl": "720", "bud": "1000000",
        "tab": "goal"}
SAME = ("dp", "tp", "pp", "micro_batch", "accumulation", "recompute", "schedule",
        "virtual_stages", "zero", "step_time_s", "memory_bytes")


def _gpt_state(**changes) -> AppState:
    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "gpt-145.6b"})
    return with_profile_defaults(state, preset_profile(state)).model_copy(
        update={**GPT, **changes})


def _link(version: int, **values) -> dict:
    """A link of the default presets of ``version`` with ``values`` and the checksum the app
    writes for it."""
    state = default_state()
    params = {"v": str(version), **{k: str(v) for k, v in values.items()},
              "ph": preset_fingerprint(preset_profile(state))}
    return {**params, "ck": link_checksum(params)}


def test_the_keys_come_from_the_knob_table_at_v17():
    assert (KNOB_BY_FIELD["memory_margin"].url_key, KNOB_BY_FIELD["memory_margin"].link_since,
            KNOB_BY_FIELD["max_devices"].url_key, KNOB_BY_FIELD["max_devices"].link_since) == (
        "mm", 17, "gmax", 17)
    assert LINK_VERSION >= 17 and keys_added_in(17) == ("mm", "gmax")
    assert AppState().mm == 0.0 and AppState().gmax == GOAL_DEFAULT_MAX_DEVICES


@pytest.mark.parametrize("update, key, text", [({"mm": 0.05}, "mm", "0.05"),
                                               ({"gmax": 4096}, "gmax", "4096")])
def test_a_v17_link_carries_each_and_reopens_it(update, key, text):
    state = default_state().model_copy(update=update)
    params = encode_query(state, preset_profile(state))
    assert (params["v"], params[key], link_version(state)) == ("17", text, 17)
    opened, _, messages = decode_query(params)
    assert messages == [] and opened == state
    # at their defaults neither makes a link v17: the default link is the one written before
    assert encode_query(default_state(), preset_profile(default_state()))["v"] == "2"


def test_an_older_link_ignores_them_in_the_rows_words():
    _, _, messages = decode_query(_link(16, mm=0.05, gmax=64))
    assert messages == ["ignored mm, gmax: a v16 link has no memory margin (a layout may fill "
                        "all of a device's memory) nor goal search range (up to 1,024 devices)"]
    state, _, messages = decode_query(_link(17, mm=0.05, gmax=64))
    assert messages == [] and (state.mm, state.gmax) == (0.05, 64)


@pytest.mark.parametrize("key, value", [("mm", "0.6"), ("mm", "-0.01"), ("mm", "nan"),
                                        ("gmax", "0"), ("gmax", "99999999")])
def test_a_value_out_of_the_rows_bounds_falls_back_alone(key, value):
    state, _, messages = decode_query(_link(17, **{key: value}))
    assert getattr(state, key) == AppState.model_fields[key].default
    assert len(messages) == 1 and f"'{key}={value}' is not valid" in messages[0]


def test_the_sidebar_has_both_controls_and_the_link_follows_them():
    at = open_app()
    margin, searched = at.sidebar.number_input(key="k_mm"), at.sidebar.number_input(key="k_gmax")
    assert (margin.value, searched.value) == (0.0, GOAL_DEFAULT_MAX_DEVICES)
    assert margin.label.startswith("Memory margin") and searched.label == (
        "Largest device count goal searches")
    margin.set_value(0.1)
    searched.set_value(2048)
    at.run()
    assert not at.exception
    assert (link_param(at, "v"), link_param(at, "mm"), link_param(at, "gmax")) == (
        "17", "0.1", "2048")


@pytest.mark.parametrize("margin", [0.0, 0.05])
def test_the_layouts_tabs_best_is_plans_with_the_same_margin(capsys, margin):
    """app == CLI: the Layouts tab's ranking with the sidebar's margin is ``plan
    --memory-margin``'s (the layout, its step and memory, exactly), and so is the memory
    note: without a margin the best (selective recompute, dp 96 x tp 2, all but 9.5 MiB of the
    80 GiB) gets plan's note, naming the sidebar's control where plan names its flag; with 5 %
    the best changes (dp 48 x tp 4) and there is no note."""
    state = _gpt_state(mm=margin)
    plan = make_plan(preset_profile(state), state)
    focus = layout_reference(plan)
    best = layout_ranking(plan.profile, plan.scenario, focus)[0]
    code, out, err = run_cli(capsys, [*PLAN, "--memory-margin", str(margin)])
    assert code == 0, err
    cli = json.loads(out)
    exact = [k for k in SAME if k != "step_time_s"]
    assert {k: getattr(best, k) for k in exact} == {k: cli["layouts"][0][k] for k in exact}
    # the same step to the last bits: since the optimizer step pays the framework's sweep
    # (841026b, memory.optimizer_traffic_ratio) the page's and plan's batches of rows round it
    # one ulp apart (16.55288657350136 / ...354 s)
    assert best.step_time_s == pytest.approx(cli["layouts"][0]["step_time_s"], rel=1e-12)
    note = layout_memory_note(plan.profile, plan.scenario, focus, best)
    # since session 60 (uneven interleaved chunks charged their peak in Megatron's order) the
    # best without a margin is selective recompute at tp 2 (9.5 MiB free; tp 4 without
    # recompute no longer fits), and with 5 % kept free tp 4 with selective recompute
    if margin:
        assert note is None and cli["memory_note"] is None
        assert (best.dp, best.tp, best.recompute) == (48, 4, "selective")
    else:
        assert (best.dp, best.tp, best.recompute) == (96, 2, "selective")
        assert note == cli["memory_note"].replace(
            "--memory-margin 0.05", "the sidebar's Memory margin at 0.05")
        assert note.startswith("the best layout leaves 0.0 GiB (0.0%) of 80.0 GiB free")


def test_the_layouts_tab_shows_the_note_and_a_margin_link_ranks_with_it():
    link = {k: str(v) for k, v in GPT.items()}
    at = open_app({"v": "17", **link})
    (warning,) = [w.value for w in at.warning if w.value.startswith("Memory:")]
    assert "the sidebar's Memory margin at 0.05 ranks with 5% kept free" in warning
    at = open_app({"v": "17", **link, "mm": "0.05"})
    assert not [w for w in at.warning if w.value.startswith("Memory:")]
    table = at.dataframe[-1].value  # the Layouts tab's ranked table
    assert (table["dp"][0], table["tp"][0], table["recompute"][0]) == (48, 4, "selective")


def test_the_goal_tab_searches_to_gmax_and_its_no_fit_note_names_it():
    """The Goal tab's answer is ``seek`` with ``max_devices`` = the control's value (a smaller
    search: fewer plans), and its no-fit note names the control and its value."""
    # the sidebar's split kept (Goal's layouts 'given', v18), where nothing fits unsplit
    at = open_app({"v": "18", **GOAL, "gmax": "64", "glay": "given"})
    caption = next(c.value for c in at.caption if "plans searched" in c.value)
    assert ("or search more devices (Largest device count goal searches in the sidebar's "
            "Training goal and price, now 64)") in caption
    state = at.session_state["app_state"]
    plan = make_plan(preset_profile(state), state)
    scenario = plan.scenario.model_copy(update={"global_batch": None})
    words = nouns_for(plan.profile.hardware.device_name)
    # the app keeps the sidebar's split (goal --layout given)
    small = seek(plan.profile, scenario, 720 * 3600.0, 1e6, 64, goal_controls(words), "given")
    full = seek(plan.profile, scenario, 720 * 3600.0, 1e6, GOAL_DEFAULT_MAX_DEVICES,
                goal_controls(words), "given")
    assert caption.startswith(f"{small.evaluated:,} plans searched")
    assert small.evaluated < full.evaluated


def test_a_run_the_margin_refuses_says_what_it_may_fill():
    """gpt-1.7b under DDP on A100 80GB needs 48.0 GiB (41.8 GiB before session 48's PyTorch
    DDP buckets: + Ψ x 4 B = 1.652e9 x 4 = 6.61e9 B, 6.16 GiB, fp32 under autocast): it fits,
    and with half of each device kept free (40 GiB) it does not. Before, the headline said 'not
    runnable: needs 41.8 GiB per device, 80 GiB available' (a need below what it named; 41.8
    then); now the memory it is held against,
    in plan's words (``scalesim.plan.capacity_words``); without a margin the words are as
    before."""
    from scalesim.app.charts import chart_text
    from scalesim.app.plan import ab_misfit, headline

    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "gpt-1.7b"})
    state = with_profile_defaults(state, preset_profile(state)).model_copy(update={"dmax": 8})
    loose = make_plan(preset_profile(state), state)
    assert loose.focus.fits and headline(loose)["runnable"] == "yes"
    tight = make_plan(preset_profile(state), state.model_copy(update={"mm": 0.5}))
    need = tight.focus.memory_bytes
    assert not tight.focus.fits and 0.5 * 80 * 2**30 < need < 80 * 2**30
    held = "40.0 GiB (80.0 GiB less the 50% memory margin)"
    assert headline(tight)["runnable"] == f"not runnable: needs 48.0 GiB per device, {held} available"
    assert ab_misfit(tight, "A") == f"A does not fit (needs 48.0 GiB per device of {held})"
    assert f"of {held}" in chart_text(tight, "step_breakdown")


def test_the_report_states_a_margin_where_one_is_set():
    """The HTML report's scenario lines say the margin the numbers were ranked with (before: no
    line, so a report of a 5 % margin read as one without); without one, no line."""
    from scalesim.app.report import scenario_lines

    state = default_state()
    plan = make_plan(preset_profile(state), state)
    assert not [w for w, _ in scenario_lines(plan) if w == "memory margin"]
    plan = make_plan(preset_profile(state), state.model_copy(update={"mm": 0.05}))
    assert dict(scenario_lines(plan))["memory margin"] == (
        "5% of each device's memory kept free (0.05)")
