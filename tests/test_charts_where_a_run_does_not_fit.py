"""Session 20: the app's charts never show a run that cannot run as if it ran. Before, the step
breakdown drew bars at device counts whose layout does not fit in device memory, unmarked; the
hours and cost charts drew such options with their time and money (only a '(not runnable)'
label); the A/B tab's 'more devices' B was today's layout at decide's count, not the decision
card's add-server option (llama3-70b on 64 H100s, tp 4 pp 4: B did not fit while the card's
option, the planner's layout on 80, runs); and B's label on the A/B axis was cut at 40
characters mid-word. Now a run that does not fit has no bar, its slot says 'does not fit' and
the subtitle and the chart's words say which; B is the card's option; B's label is cut at a
word with an ellipsis, the full title in the tooltip."""

from __future__ import annotations

import json

import pytest
import vl_convert as vlc
from app_harness import open_app
from scalesim.app import charts
from scalesim.app.markdown_text import escape_markdown
from scalesim.app.plan import _scenario_b, duration, finish, make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.predict import predict

LLAMA = {"hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "focus": 64, "mb": 1,
         "train": 1e6, "price": 3.0}
A_MISFIT = {**LLAMA, "tp": 4, "pp": 4, "sched": "zb", "b": "more_devices"}  # no count fits
FITTING = [{}, {"price": 2.5, "train": 1e8}, {**LLAMA, "tp": 8, "pp": 4, "b": "sharding"},
           {"mb": 64, "price": 2.5, "train": 1e8, "strat": "zero3"}]


def _plan(update: dict):
    state = default_state().model_copy(update=update)
    return state, make_plan(preset_profile(state), state)


def _data(spec: dict, key: str) -> list[list[dict]]:
    """The spec's datasets whose rows have ``key``."""
    return [rows for rows in spec["datasets"].values() if rows and key in rows[0]]


def _page_specs(state, tab: str) -> list[dict]:
    """The Vega-Lite specs the page draws on ``tab`` (Streamlit keeps their data apart), and
    the page."""
    at = open_app(encode_query(state.model_copy(update={"tab": tab}), preset_profile(state)))
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")], at


def test_the_breakdown_has_no_bar_at_a_count_that_does_not_fit(partial):
    state, plan = partial
    spec = charts.breakdown_chart(plan).to_dict()
    bars = next(d for d in _data(spec, "part"))
    assert {r["bar"] for r in bars} == {"32", "64"}  # had a bar at 16 too
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == ["16", "32", "64"]
    assert _data(spec, "label") == [[{"bar": "16", "label": "does not fit"}]]
    # session 50: was "no bar where the layout does not fit ...", read as "it fits everywhere"
    assert spec["title"]["subtitle"][0] == ("the layout does not fit in device memory at 16 "
                                            "devices, so the chart has no bar there")
    text = charts.chart_text(plan, "step_breakdown")
    assert text.startswith("At 64 devices a step takes ")
    assert text.endswith(" The layout does not fit in device memory at 16 devices, so the "
                         "chart has no bar there.")
    shown, at = _page_specs(state, "breakdown")
    assert shown[0]["title"] == spec["title"] and len(shown[0]["layer"]) == 2  # the page's
    assert any(text.removesuffix(".") in c.value for c in at.caption)


def test_the_breakdown_where_the_focus_does_not_fit_has_no_step_time():
    _, plan = _plan(A_MISFIT)
    assert not any(r.fits for r in plan.rows)
    spec = charts.breakdown_chart(plan, 720).to_dict()
    assert _data(spec, "part") == []  # not one bar: no count runs
    assert [r["bar"] for r in _data(spec, "label")[0]] == ["16", "32", "64"]
    vlc.vegalite_to_svg(spec)  # draws (the report renders it)
    need = plan.focus.memory_bytes / 2**30
    text = charts.chart_text(plan, "step_breakdown")
    assert text.startswith(f"At 64 devices the layout does not fit (needs {need:,.1f} GiB per "
                           "device of 80 GiB): it has no step time.")
    assert " ms" not in text  # had 'a step takes 1234.5 ms' for a run that cannot happen
    assert "no step time" in report_html(plan, "http://example/?v=3")


@pytest.mark.parametrize("name, field", [("hours", "hours"), ("cost", "cost")])
def test_hours_and_cost_draw_no_bar_for_an_option_that_does_not_fit(partial, name, field):
    _, plan = partial
    chart = charts.hours_chart(plan) if name == "hours" else charts.money_chart(plan)
    spec = chart.to_dict()
    runs = [o for o in plan.options if o.fits]
    bars = _data(spec, "kind")[0]
    assert [r["option"] for r in bars] == [o.label for o in runs]  # had '16 devices (not ...'
    marked = [d for d in _data(spec, "label") if "kind" not in d[0]]
    assert marked == [[{"option": "16 devices (not runnable)", "label": "does not fit",
                        field: 0.0}]]
    assert spec["layer"][0]["encoding"]["y"]["sort"] == [o.label for o in plan.options]
    top = max(o.time_s / 3600.0 if field == "hours" else o.cost_usd for o in runs) * 1.2
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0, top]
    assert spec["title"]["subtitle"][0] == ("1 option does not fit in device memory: no bar, "
                                            "no time or money")
    text = charts.chart_text(plan, name)
    assert text.endswith(" No bar, does not fit in device memory: 16 devices.")


def test_the_cost_tab_draws_the_marked_charts_and_its_table_agrees(partial):
    state, plan = partial
    shown, at = _page_specs(state, "cost")
    assert len(shown) == 2
    for spec in shown:
        assert len(spec["layer"]) == 3 and spec["title"]["subtitle"][0] == (
            "1 option does not fit in device memory: no bar, no time or money")
    table = at.dataframe[-1].value
    (row,) = table[table["option"] == "16 devices (not runnable)"].to_dict("records")
    assert row["runnable"] == "NO: does not fit"  # session 21: the hours a number, empty here
    assert row["hours to finish"] != row["hours to finish"] and row["cost USD"] != row["cost USD"]
    runs = table[table["runnable"] == "yes"]
    assert len(runs) == len(plan.options) - 1 and runs["cost USD"].notna().all()


def test_the_efficiency_words_give_no_efficiency_where_a_count_does_not_fit(partial):
    _, plan = partial
    text = charts.chart_text(plan, "efficiency")  # charts2_20: the counts that run, then those
    assert text.startswith("Scaling efficiency: 32 devices ")  # that do not, named after
    assert text.endswith(" The layout does not fit in device memory at 16 devices, so the "
                         "chart has no point there.")


@pytest.mark.parametrize("update", FITTING)
def test_charts_of_runs_that_all_fit_mark_nothing(update):
    _, plan = _plan(update)
    assert all(r.fits for r in plan.rows) and all(o.fits for o in plan.options)
    for name, chart in charts.all_charts(plan).items():
        spec = json.dumps(chart.to_dict())
        assert '"label": "does not fit"' not in spec and "no bar" not in spec, name
        assert "no point" not in spec, name
        assert "No bar" not in charts.chart_text(plan, name), name
        assert "No point" not in charts.chart_text(plan, name), name
    assert "layer" not in charts.breakdown_chart(plan).to_dict()


@pytest.fixture(scope="module")
def card_b():
    state, plan = _plan(A_MISFIT)
    assert plan.decision is not None and plan.decision.added is not None
    return state, plan, plan.decision.added


def test_more_devices_b_is_the_decision_card_s_add_server_option(card_b):
    state, plan, added = card_b
    option = added.option
    assert plan.b_label == option.title and "the planner's layout" in option.title
    assert plan.b_focus is added.p and plan.b_focus.fits  # was today's layout, not fitting
    assert plan.b_focus.devices == option.devices == 80
    again = predict(plan.b_profile, plan.b_scenario.model_copy(update={"devices": [80]}))[0]
    assert again.step_time_s == pytest.approx(added.p.step_time_s, rel=1e-12)
    t, cost = finish(plan, plan.b_focus)  # the A/B tab's time and money
    assert t == pytest.approx(option.time_s, rel=1e-9)
    assert cost == pytest.approx(option.total_usd, rel=1e-9)
    hours = next(o for o in plan.options if o.kind == "more devices")  # the Hours & cost tab's
    assert (hours.label, hours.devices, hours.time_s, hours.cost_usd) == (
        option.title, 80, pytest.approx(t), pytest.approx(cost))


def test_the_ab_tab_shows_the_card_s_option_as_b(card_b):
    state, plan, added = card_b
    _, at = _page_specs(state, "ab")
    # B's subheader is escaped since session 51 ('64 -\\> 80 devices'; was the raw title)
    right = next(c for c in at.columns if [h.value for h in c.subheader][:1] == [
        f"B: {escape_markdown(added.option.title)}"])
    shown = {m.label: m.value for m in right.metric}
    assert shown["Time to finish"] == duration(added.option.time_s)
    assert shown["Cost"] == f"${added.option.total_usd:,.0f}"
    assert not right.error and right.success  # B makes it run


def test_without_a_card_option_b_is_today_s_layout_at_decide_s_count():
    state, plan = _plan({"b": "more_devices"})
    label, _, scenario, devices = _scenario_b(state, plan.profile, plan.scenario, plan.focus,
                                              plan.remedies, plan.best, None)
    assert (label, devices) == ("Add devices (16 → 24)", 24)  # the page's arrow (session 51)
    assert scenario == plan.scenario.model_copy(update={"devices": [24]})  # today's layout


def test_b_s_axis_label_is_cut_at_a_word_with_the_full_title_in_the_tooltip():
    _, plan = _plan({})
    assert plan.b_label.startswith("Faster inter-server network: 8 x 200 Gb/s")
    spec = charts.ab_chart(plan).to_dict()
    b = "B: Faster inter-server network: 8 x 200…"  # was '...8 x 200 Gb/', cut mid-word
    assert spec["encoding"]["x"]["sort"] == [f"A: now ({plan.words.count(16)})", b]
    rows = _data(spec, "part")[0]
    assert {r["title"] for r in rows if r["bar"] == b} == {f"B: {plan.b_label}"}
    assert spec["encoding"]["tooltip"][0] == {"field": "title", "title": "scenario",
                                              "type": "nominal"}


def test_a_short_b_label_is_whole_and_the_tooltip_unchanged():
    _, plan = _plan({"b": "bigger_batch"})
    spec = charts.ab_chart(plan).to_dict()
    rows = _data(spec, "part")[0]
    assert f"B: {plan.b_label}" in {r["bar"] for r in rows} and "title" not in rows[0]
    assert spec["encoding"]["tooltip"][0]["field"] == "bar"


@pytest.mark.parametrize("text, cut", [
    ("Shard optimizer state (ddp -> zero1, Megatron-Core distributed optimizer)",
     "Shard optimizer state (ddp -> zero1…"),
    ("Change the layout: schedule 1f1b -> zb, sequence parallel off -> on",
     "Change the layout: schedule 1f1b -> zb…"),
    ("x" * 50, "x" * 39 + "…"),
    ("Double the per-device batch (32 -> 64)", "Double the per-device batch (32 -> 64)"),
])
def test_cut_at_word(text, cut):
    out = charts.cut_at_word(text, 40)
    assert out == cut and len(out) <= 40 and not out.removesuffix("…").endswith(" ")
