"""Issue 11 in the app: a layout control, the Layouts tab, and v3 share links with the layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import link_param, open_app
from scalesim.app.layout_titles import PAGE_SPLIT_HEADER, SEARCHED_LAYOUTS
from scalesim.app.plan import build_scenario, layout_of_state, layout_ranking, make_plan
from scalesim.app.state import (
    AppState,
    decode_query,
    default_state,
    encode_query,
    preset_profile,
    with_profile_defaults,
)

from scalesim.figures import throughput
from scalesim.predict import predict
from scalesim.schemas import ScenarioLayout

LAYOUT_LINK = {"v": "3", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64", "tp": "2",
               "pp": "2", "sp": "1", "mb": "1", "acc": "8"}


def _gpt_state(**changes) -> AppState:
    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "gpt-7.5b"})
    state = with_profile_defaults(state, preset_profile(state))
    return state.model_copy(update=changes)


def test_a_layout_link_round_trips_and_predicts_the_split():
    state = _gpt_state(tp=2, pp=4, sched="interleaved", vs=2, rec="selective", sp=True,
                       dmax=64, acc=8, mb=1, tab="layouts", b="split_model")
    profile = preset_profile(state)
    params = encode_query(state, profile)
    assert params["v"] == "3" and params["tp"] == "2" and params["sched"] == "interleaved"
    state2, profile2, messages = decode_query(params)
    assert messages == [] and state2 == state and profile2 == profile
    scenario, notes = build_scenario(state2, profile2)
    assert scenario.layout == ScenarioLayout(tp=2, pp=4, schedule="interleaved",
                                             virtual_stages=2, recompute="selective",
                                             sequence_parallel=True)
    assert scenario.devices == [8, 16, 32, 64]  # 1, 2, 4 are not multiples of tp x pp = 8
    # "tp x pp = 8 ..." before session 49: notation no control shows
    assert any(n.startswith("Tensor parallel 2 x Pipeline stages 4 = 8 does not divide the "
                            "devices") for n in notes)
    rows = make_plan(profile2, state2).rows
    assert rows == predict(profile2, scenario)
    assert all((r.tp, r.pp) == (2, 4) and r.bubble_s > 0 for r in rows)


def test_data_parallel_links_stay_v2_and_old_links_open_data_parallel():
    state = default_state().model_copy(update={"strat": "zero3"})
    assert encode_query(state, preset_profile(state))["v"] == "2"  # older versions open it
    # a v2 link cannot carry a model split: layout keys are ignored and said so
    state2, _, messages = decode_query({"v": "2", "strat": "zero3", "tp": "2", "pp": "2"})
    assert (state2.tp, state2.pp, state2.strat) == (1, 1, "zero3")
    assert messages == ["ignored tp, pp: a v2 link has no model split (data parallel)"]
    state1, _, _ = decode_query({"v": "1", "tp": "4"})
    assert state1.tp == 1


@pytest.mark.parametrize(("key", "value"), [("tp", "0"), ("tp", "99999"), ("pp", "nan"),
                                            ("vs", "-1"), ("sched", "<b>"), ("rec", "all")])
def test_bad_layout_values_in_a_link_fall_back_alone(key, value):
    state, _, messages = decode_query({**LAYOUT_LINK, key: value})
    assert getattr(state, key) == AppState.model_fields[key].default
    assert state.pp == (2 if key != "pp" else 1) and len(messages) == 1


def test_a_layout_on_a_parameter_count_workload_is_left_out_with_a_note():
    state = default_state().model_copy(update={"tp": 2})
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.layout is None
    assert any("parameter count only" in n for n in notes)


def test_the_layout_link_opens_the_page_with_the_split_and_its_controls():
    at = open_app(LAYOUT_LINK)
    assert at.sidebar.number_input(key="k_tp").value == 2
    assert at.sidebar.number_input(key="k_pp").value == 2
    assert at.sidebar.toggle(key="k_sp").value is True
    state = AppState.model_validate({k: v for k, v in LAYOUT_LINK.items() if k != "v"})
    plan = make_plan(preset_profile(state), with_profile_defaults(state, preset_profile(state))
                     .model_copy(update={k: state.__dict__[k] for k in ("mb", "acc")}))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Throughput ({plan.unit}/s)"] == throughput(plan.focus.samples_per_s)
    # changing tp in the sidebar changes the link
    at.sidebar.number_input(key="k_tp").set_value(4)
    at.run()
    assert not at.exception
    assert link_param(at, "tp") == "4"


def test_the_layouts_tab_ranks_layouts_and_draws_their_breakdown():
    at = open_app({**LAYOUT_LINK, "tab": "layouts"})
    assert len(at.get("vega_lite_chart")) == 1
    table = at.dataframe[-1].value
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    assert table["why it ranks here"].iloc[0] == "best"
    assert list(table["step ms"]) == sorted(table["step ms"])
    state = decode_query({**LAYOUT_LINK, "tab": "layouts"})[0]
    plan = make_plan(preset_profile(state), state)
    best = layout_ranking(plan.profile, plan.scenario, plan.focus)[0]
    assert table["step ms"].iloc[0] == pytest.approx(best.step_time_s * 1e3)
    assert any(f"Best of {SEARCHED_LAYOUTS}" in m.value for m in at.markdown)


def test_the_layouts_tab_explains_a_parameter_count():
    at = open_app({"v": "3", "tab": "layouts"})
    assert any("parameter count only" in i.value for i in at.info)
    assert len(at.get("vega_lite_chart")) == 0


def test_the_report_shows_the_layout_and_the_bubble():
    from scalesim.app.report import report_html, scenario_lines

    state = decode_query(LAYOUT_LINK)[0]
    plan = make_plan(preset_profile(state), state)
    lines = dict(scenario_lines(plan))
    # the sidebar's labels, not the CLI's 'tp 2 x pp 2 (1F1B), recompute none, ...'
    assert lines["layout"].startswith(
        "Tensor parallel 2 x Pipeline stages 2 (1F1B), Activation recompute none, Sequence "
        "parallelism on, Tensor-parallel overlap off; data-parallel ranks = devices / (Tensor "
        "parallel x Pipeline stages); ")
    assert "tp 2" not in lines["layout"] and "batch = " not in lines["layout"]
    html = report_html(plan, "http://x/?v=3")
    assert PAGE_SPLIT_HEADER in html and "bubble ms" in html
    assert f"{plan.rows[0].dp} x 2 x 2" in html


def test_the_reports_layout_line_names_the_page_controls_and_keeps_the_notes():
    """An interleaved schedule's sends by the Pipeline send overlap control (the CLI's
    'pipeline sends overlapped (--p2p-overlap on)'), ignored where overlap with backward is off,
    and the stage note the CLI's line adds kept."""
    from scalesim.app.report import scenario_lines

    for ovl, sends in (("1", "Pipeline send overlap on"),
                       ("0", "Pipeline send overlap ignored (Overlap gradient exchange with "
                             "backward off)")):
        state = decode_query({**LAYOUT_LINK, "sched": "interleaved", "vs": "2", "p2p": "1",
                              "ovl": ovl})[0]
        layout = dict(scenario_lines(make_plan(preset_profile(state), state)))["layout"]
        assert f"Tensor-parallel overlap off, {sends}; data-parallel ranks" in layout
        assert "--p2p-overlap" not in layout
        assert "36 layers over Pipeline stages 2 x Virtual stages 2" in layout  # session 51


def test_the_reports_strategy_is_the_strategy_controls_choice():
    """'ZeRO-1', as the sidebar's Strategy says it (was the CLI's 'zero1')."""
    from scalesim.app.report import scenario_lines

    state = decode_query({**LAYOUT_LINK, "strat": "zero1"})[0]
    assert dict(scenario_lines(make_plan(preset_profile(state), state)))["strategy"] == "ZeRO-1"


def test_the_reports_batch_is_per_model_replica_where_the_model_is_split():
    """Tensor parallel 2 x Pipeline stages 2: 1 sequence per micro-batch of a replica of 4
    devices (was '1 per device'); unsplit, a replica is a device."""
    from scalesim.app.report import scenario_lines

    for split, per in (({}, "1 per model replica (weak scaling)"),
                       ({"tp": "1", "pp": "1"}, "1 per device (weak scaling)")):
        state = decode_query({**LAYOUT_LINK, **split})[0]
        assert dict(scenario_lines(make_plan(preset_profile(state), state)))["batch"] == per


def test_scenario_b_split_the_model_shows_beside_small_data_parallel_counts():
    """B = "split the model" on a 1-16 GPU grid: its layout (tp x pp > 1) cannot run at 1 GPU,
    so its curve keeps the counts it divides, and the A/B tab compares it (before: the curve's
    error at 1 device threw B away: "does not apply here" and a raw 'devices 1 are not
    divisible' note)."""
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-70b"})
    state = with_profile_defaults(state, preset_profile(state)).model_copy(
        update={"b": "split_model", "tab": "ab"})
    plan = make_plan(preset_profile(state), state)
    split = plan.b_scenario.layout
    assert split is not None and split.tp * split.pp > 1
    assert plan.b_focus is not None and plan.b_focus.devices == plan.focus.devices
    model = split.tp * split.pp
    assert plan.b_rows and all(r.devices % model == 0 for r in plan.b_rows)
    assert [r.devices for r in plan.b_rows] == [d for d in plan.scenario.devices if d % model == 0]
    assert not any(n.startswith("scenario B: devices") for n in plan.notes), plan.notes
    at = open_app({"v": "5", "hw": "dgx-h100", "wl": "llama3-70b", "b": "split_model",
                   "tab": "ab"})
    assert not any("does not apply here" in i.value for i in at.info)


# ------------------------------------------- a calibrated profile's own model, split in the app

H200 = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200-2026-11-30"
        / "gpu-check" / "gpu-profile.json")


def _h200(per_server: int = 8):
    """The recorded H200 profile (its gpt known from its name), as a server of ``per_server``
    such devices so that tp can split inside one."""
    from scalesim.profiles import load_profile

    base = load_profile(H200)
    return base.model_copy(update={"hardware": base.hardware.model_copy(
        update={"devices_per_node": per_server})})


def _state_of(profile, **changes) -> AppState:
    state = default_state().model_copy(update={"src": "custom"})
    return with_profile_defaults(state, profile).model_copy(update=changes)


def test_a_calibrated_profile_splits_the_model_it_timed():
    """tp 2 on an uploaded profile whose workload is a parameter count but whose curve timed a
    known gpt: the split is kept (no 'left out' note) and predicted as that transformer, the
    same rows as ``predict`` gives the shaped profile; without a split the plan is the
    data-parallel one on the measured curve, as before."""
    from scalesim.layout_predict import with_measured_shape

    profile = _h200()
    state = _state_of(profile, tp=2, dmax=8, mb=4)
    scenario, notes = build_scenario(state, profile)
    assert scenario.layout is not None and scenario.layout.tp == 2
    assert not any("parameter count" in n or "recalibrate" in n for n in notes), notes
    plan = make_plan(profile, state)
    assert plan.profile.workload.transformer is not None
    assert "model split: the transformer this profile timed" in plan.profile.notes[-1]
    expected = predict(with_measured_shape(profile), scenario)
    assert [(r.tp, r.step_time_s) for r in plan.rows] == [(2, e.step_time_s) for e in expected]
    plain = make_plan(profile, _state_of(profile, dmax=8, mb=4))
    assert plain.profile == profile and plain.rows[0].dp is None
    assert [r.step_time_s for r in plain.rows] == [r.step_time_s for r in predict(
        profile, plain.scenario)]


def test_a_calibrated_profile_without_a_shape_says_to_recalibrate():
    from test_app_state import measured_profile

    profile = measured_profile()
    scenario, notes = build_scenario(_state_of(profile, tp=2), profile)
    assert scenario.layout is None
    assert any("does not record the transformer" in n and "recalibrate" in n for n in notes)


def test_the_layouts_tab_ranks_a_calibrated_profiles_model_against_the_same_model():
    """On the data-parallel plan of a calibrated profile the Layouts tab ranks the timed gpt's
    layouts, and compares them with the focus run through the same layout model
    (``layout_reference``: the exchange and memory as every ranked row has them), so the focus
    run's own layout ranks at its step to 1e-9; on one device the two paths agree (the measured
    optimizer step on both, no exchange), where they were 3 ms apart when the layout path took
    the memory-bound estimate."""
    from scalesim.app.plan import layout_reference

    from scalesim.layout_predict import plan_at, with_measured_shape

    profile = _h200()
    plan = make_plan(profile, _state_of(profile, dmax=1, mb=4, acc=1))
    focus = plan.focus
    assert focus.devices == 1 and focus.dp is None
    reference = layout_reference(plan)
    best = layout_ranking(plan.profile, plan.scenario, focus)
    assert best and all(r.devices == 1 for r in best)
    rows = plan_at(with_measured_shape(profile), plan.scenario, 1, focus.global_batch, top=500,
                   include_unfit=True)
    same = next(r for r in rows if (r.zero, r.micro_batch, r.accumulation, r.recompute) ==
                (0, 4, 1, "none"))
    assert same.step_time_s == pytest.approx(reference.step_time_s, rel=1e-9)
    assert focus.step_time_s == pytest.approx(reference.step_time_s, rel=1e-9)


def test_an_uploaded_calibrated_profile_shows_the_layout_controls():
    from app_harness import upload_profile

    at = upload_profile(open_app(), _h200())
    assert any("The model this profile timed: 8 layers, hidden 1024" in c.value
               for c in at.caption), [c.value for c in at.caption]
    at.session_state["k_tab"] = "Layouts"  # its layouts ranked, the data-parallel one at +0 %
    at.run()
    assert not at.exception
    best = next(m.value for m in at.markdown if f"Best of {SEARCHED_LAYOUTS}" in m.value)
    assert "(+0.0% against the layout now" in best, best
    at.sidebar.number_input(key="k_tp").set_value(2)
    at.run()
    assert not at.exception
    assert link_param(at, "tp") == "2"
    assert not any("recalibrate" in str(getattr(w, "value", "")) for w in at.sidebar.info)


@pytest.mark.parametrize("key", ["tpo", "sp"])
def test_a_tp_only_toggle_at_tp_1_is_disabled_and_ignored_with_a_note(key):
    """Session 10: the Tensor-parallel overlap toggle at tp 1 showed the error box 'Cannot
    predict this scenario: tp_overlap needs tp > 1 (...)', naming the scenario's field, not the
    control (sequence parallelism alike). At tp 1 both toggles are disabled; one a link turns
    on is ignored with a note naming the controls, and the page predicts; tp 2 enables them."""
    label = {"tpo": "Tensor-parallel overlap", "sp": "Sequence parallelism"}[key]
    at = open_app({"v": "8", "wl": "llama3-8b", key: "1"})
    assert not any("needs tp > 1" in e.value for e in [*at.error, *at.sidebar.error])
    assert at.sidebar.toggle(key="k_tpo").disabled and at.sidebar.toggle(key="k_sp").disabled
    # a sentence, as the page's other notes (no full stop before session 49)
    assert f"{label} ignored: it applies with Tensor parallel above 1." in [i.value
                                                                           for i in at.info]
    assert at.metric  # the headline is there
    state = at.session_state["app_state"]
    assert getattr(state, key) is True and layout_of_state(state) is None  # kept, not used
    at.sidebar.number_input(key="k_tp").set_value(2)
    at.run()
    assert not at.exception
    assert not at.sidebar.toggle(key=f"k_{key}").disabled
    assert not any(" ignored: it applies with Tensor parallel" in i.value for i in at.info)
    assert getattr(layout_of_state(at.session_state["app_state"]),
                   {"tpo": "tp_overlap", "sp": "sequence_parallel"}[key]) is True


@pytest.mark.parametrize("update, note", [
    ({"sched": "zb"}, "Pipeline schedule ignored: it applies with Pipeline stages above 1"),
    ({"vs": 2}, "Virtual stages ignored: it applies with Pipeline stages above 1"),
    ({"pp": 2, "sched": "gpipe", "vs": 2},
     "Virtual stages ignored: it applies with the interleaved schedule"),
])
def test_pipeline_controls_where_they_do_not_apply_are_ignored_with_a_note(update, note):
    """A schedule or virtual stages at pp 1 (a link may carry them; the page disables them
    there), as sequence parallelism at tp 1: ignored with a note; before, the whole page could
    not predict ('schedule zb needs pp > 1; use schedule none', a schedule the app lacks)."""
    state = default_state().model_copy(update={"wl": "llama3-8b", **update})
    plan = make_plan(preset_profile(state), state)
    assert note in plan.notes
    layout = plan.scenario.layout
    assert layout is None or (layout.virtual_stages, layout.schedule) == (1, update.get("sched"))


def test_a_count_left_out_of_a_split_is_one_device_in_the_singular():
    state = default_state().model_copy(update={"wl": "llama3-8b", "tp": 2})
    plan = make_plan(preset_profile(state), state)
    assert ("Tensor parallel 2 x Pipeline stages 1 = 2 does not divide the devices: the row on "
            "1 device is left out; give counts that are multiples of 2"
            ) in plan.notes  # "tp x pp = 2 ..." before session 49: notation no control shows


def test_the_pipeline_controls_are_off_without_pipeline_stages():
    at = open_app({"v": "9", "wl": "llama3-8b", "tp": "2"})
    assert at.sidebar.selectbox(key="k_sched").disabled
    assert at.sidebar.number_input(key="k_vs").disabled
    at = open_app({"v": "9", "wl": "llama3-8b", "pp": "2", "sched": "1f1b"})
    assert not at.sidebar.selectbox(key="k_sched").disabled
    assert at.sidebar.number_input(key="k_vs").disabled


def test_a_layout_refused_at_one_device_says_device():
    from scalesim.errors import ScalesimError
    from scalesim.schemas import Scenario

    state = default_state().model_copy(update={"wl": "llama3-8b"})
    with pytest.raises(ScalesimError, match=r"^layout at 1 device: --virtual-stages 2 needs"):
        predict(preset_profile(state),
                Scenario(devices=[1, 2], layout=ScenarioLayout(virtual_stages=2)))
