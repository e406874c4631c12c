"""Session 20: the A/B tab where a side does not fit in device memory. Before, with A running
and B not (llama3-70b on 64 H100s, tp 8 pp 4, micro-batch 1; B accumulates 4 micro-steps and
needs 101.8 GiB), B's throughput, step time, time and money carried deltas against A as if it
ran, and the chart drew its bar. Now the side that cannot run says so ('B does not fit (needs
X GiB per device of Y GiB)') in place of its numbers, no delta is shown unless both run, and
the chart leaves its slot empty, marked (``ab_misfit``)."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app import charts
from scalesim.app.plan import ab_misfit, make_plan, makes_it_run_text
from scalesim.app.report import report_html
from scalesim.app.state import default_state, encode_query, preset_profile

LLAMA = {"hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "focus": 64, "mb": 1,
         "train": 1e6, "price": 3.0}
A_FITS_B_NOT = {**LLAMA, "tp": 8, "pp": 4, "b": "accumulation"}
NEITHER = {**LLAMA, "tp": 4, "pp": 4, "sched": "zb", "b": "bigger_batch"}
BOTH = {**LLAMA, "tp": 8, "pp": 4, "b": "sharding"}
LABELS = ("Step time", "Scaling efficiency", "Time to finish", "Cost")


def _plan(update: dict):
    state = default_state().model_copy(update=update)
    return state, make_plan(preset_profile(state), state)


def _ab_tab(state, plan):
    """The page open on the A/B tab of ``state`` (``plan`` its plan, for the words of its
    count), and the tab's two columns (A's, B's)."""
    at = open_app(encode_query(state.model_copy(update={"tab": "ab"}), preset_profile(state)))
    left = next(c for c in at.columns if [h.value for h in c.subheader][:1] == [
        f"A: now, {plan.words.count(state.focus)}"])
    right = at.columns[list(at.columns).index(left) + 1]
    assert right.subheader[0].value.startswith("B: ")
    return at, (left, right)


def _metrics(column) -> dict[str, str | None]:
    return {m.label: m.delta for m in column.metric}


@pytest.fixture(scope="module")
def a_fits_b_not():
    state, plan = _plan(A_FITS_B_NOT)
    assert plan.focus.fits and plan.b_focus is not None and not plan.b_focus.fits
    return state, plan


def test_the_words_say_what_it_needs_of_what(a_fits_b_not):
    _, plan = a_fits_b_not
    b, mem = plan.b_focus, plan.b_profile.hardware.device_memory_bytes
    assert ab_misfit(plan, "A") is None
    assert ab_misfit(plan, "B") == (f"B does not fit (needs {b.memory_bytes / 2**30:,.1f} GiB "
                                    f"per device of {mem / 2**30:,.0f} GiB)")
    assert b.memory_bytes > mem


def test_a_b_that_does_not_fit_shows_no_numbers_and_no_deltas(a_fits_b_not):
    state, plan = a_fits_b_not
    at, (left, right) = _ab_tab(state, plan)
    shown = _metrics(left)
    assert {f"Throughput ({plan.unit}/s)", *LABELS} <= set(shown)
    assert not any(shown.values())  # A's own numbers, no change
    assert _metrics(right) == {}  # had B's throughput '-3.2%' and cost deltas against A
    assert [e.value for e in right.error] == [f"{ab_misfit(plan, 'B')}."]
    assert not right.success


def test_the_chart_has_no_bar_for_b_and_marks_its_slot(a_fits_b_not):
    _, plan = a_fits_b_not
    spec = charts.ab_chart(plan).to_dict()
    data = spec["datasets"]
    bars = next(v for v in data.values() if v and "part" in v[0])
    assert {r["bar"] for r in bars} == {f"A: now ({plan.words.count(64)})"}
    slots = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    assert slots[1].startswith("B: ") and len(slots) == 2
    marks = next(v for v in data.values() if v and "label" in v[0])
    assert marks == [{"bar": slots[1], "label": "does not fit"}]
    assert spec["title"]["subtitle"].startswith(f"{ab_misfit(plan, 'B')}; data stall not")
    text = charts.chart_text(plan, "a_vs_b")
    assert text.endswith(f"): {ab_misfit(plan, 'B')}.") and text.count(" ms") == 1


def test_the_report_s_a_b_chart_text_says_b_does_not_fit(a_fits_b_not):
    _, plan = a_fits_b_not
    html = report_html(plan, "http://example/?v=3")
    assert "B does not fit (needs " in html


def test_where_neither_fits_no_side_has_numbers_and_there_is_no_chart():
    state, plan = _plan(NEITHER)
    assert not plan.focus.fits and plan.b_focus is not None and not plan.b_focus.fits
    at, (left, right) = _ab_tab(state, plan)
    assert _metrics(left) == {} and _metrics(right) == {}
    assert [e.value for e in left.error] == [f"{ab_misfit(plan, 'A')}."]
    assert [e.value for e in right.error] == [f"{ab_misfit(plan, 'B')}."]
    assert charts.ab_chart(plan) is None
    assert "a_vs_b" not in charts.all_charts(plan)


def test_where_a_does_not_fit_b_has_its_own_numbers_and_makes_it_run():
    state, plan = _plan({**NEITHER, "b": "split_model"})
    assert not plan.focus.fits and plan.b_focus.fits
    at, (left, right) = _ab_tab(state, plan)
    assert _metrics(left) == {} and [e.value for e in left.error] == [f"{ab_misfit(plan, 'A')}."]
    shown = _metrics(right)
    assert {f"Throughput ({plan.unit}/s)", *LABELS} <= set(shown) and not any(shown.values())
    assert [s.value for s in right.success] == [
        f"B {makes_it_run_text(plan.b_focus.samples_per_s, plan.unit, plan.words)}."]
    bars = next(v for v in charts.ab_chart(plan).to_dict()["datasets"].values()
                if v and "part" in v[0])
    assert {r["bar"][:2] for r in bars} == {"B:"}


def test_where_both_fit_b_keeps_its_deltas_and_both_bars():
    state, plan = _plan(BOTH)
    assert plan.focus.fits and plan.b_focus.fits
    at, (left, right) = _ab_tab(state, plan)
    a, b = plan.focus, plan.b_focus
    shown = _metrics(right)
    assert shown["Step time"] == f"{b.step_time_s / a.step_time_s - 1:+.1%}"
    assert shown["Time to finish"] is not None and shown["Cost"] is not None
    assert not right.error and not left.error
    spec = charts.ab_chart(plan).to_dict()
    assert "layer" not in spec and len({r["bar"] for r in next(iter(spec["datasets"].values()))}) == 2
