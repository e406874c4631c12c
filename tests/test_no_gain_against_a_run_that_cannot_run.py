"""Where today's layout does not fit in device memory (llama3-8b on 16 H100s, ddp, micro-batch 32),
no place writes a gain against that run: a remedy that fits 'makes it run' at its own pace, one
that does not stays 'not runnable' (the Remedies tab's table, chart and chart text, the A/B tab,
the Layouts tab and the HTML report), as the headline and decide's card say it. Where today's
fits, the gains stay."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app import charts
from scalesim.app.plan import (
    MAKES_IT_RUN,
    make_plan,
    makes_it_run_text,
    remedy_gain_cell,
)
from scalesim.app.report import report_html
from scalesim.app.state import default_state, encode_query, preset_profile

NOT_FITTING = {"hw": "dgx-h100", "wl": "llama3-8b", "dmax": 16, "train": 1e6, "price": 3.0}


@pytest.fixture(scope="module")
def unfit():
    state = default_state().model_copy(update=NOT_FITTING)
    plan = make_plan(preset_profile(state), state)
    assert not plan.focus.fits  # the case these tests guard
    fit = [r for r in plan.remedies if r.prediction is not None and r.prediction.fits]
    misfit = [r for r in plan.remedies if r.prediction is not None and not r.prediction.fits]
    assert fit and misfit and fit[0].gain < 0  # slower than the run that cannot happen
    return state, plan, fit, misfit


def _open(state, tab: str):
    return open_app(encode_query(state.model_copy(update={"tab": tab}),
                                 preset_profile(state)))


def test_the_remedies_table_says_makes_it_run_not_a_loss(unfit):
    state, plan, fit, misfit = unfit
    table = _open(state, "remedies").dataframe[0].value.set_index("remedy")
    for r in fit:
        row = table.loc[r.title]
        assert row["throughput gain"] == MAKES_IT_RUN, row
        assert row["faster to finish"] == MAKES_IT_RUN, row  # a goal is known: it had a %
        assert row[f"{plan.unit}/s"] == pytest.approx(r.prediction.samples_per_s)  # a number
    for r in misfit:
        assert table.loc[r.title, "throughput gain"] == "not runnable"
        assert table.loc[r.title, "faster to finish"] == ""
    assert not table["throughput gain"].str.endswith("%").any()


def test_the_remedies_chart_draws_each_change_s_own_pace(unfit):
    _, plan, fit, misfit = unfit
    spec = charts.remedies_chart(plan).to_dict()
    rows = {d["remedy"]: d for d in next(iter(spec["datasets"].values()))}
    for r in fit:
        assert rows[r.title]["gain"] == pytest.approx(r.prediction.samples_per_s)
        assert rows[r.title]["label"] == MAKES_IT_RUN
    for r in misfit:
        assert rows[r.title]["gain"] == 0.0 and rows[r.title]["label"] == "not runnable"
    assert all("throughput_gain" not in d for d in rows.values())
    assert spec["layer"][0]["encoding"]["x"]["title"] == f"predicted: {plan.unit}/s"
    text = charts.chart_text(plan, "remedies")
    for r in fit:
        assert (f"{r.title} ({makes_it_run_text(r.prediction.samples_per_s, plan.unit, plan.words)})"
                in text)
    assert "%)" not in text, text


def test_the_report_s_remedies_table_says_makes_it_run(unfit):
    _, plan, fit, misfit = unfit
    html = report_html(plan, "http://example/?v=3")
    changes = html.split("<h2>Changes at ", 1)[1].split("<h2>", 1)[0]
    assert changes.count(f">{MAKES_IT_RUN}</td>") == len(fit)
    assert f"{fit[0].gain:+.1%}" not in changes
    assert changes.count(">not runnable</td>") >= 2 * len(misfit)  # verdict and gain cells


def test_the_ab_tab_gives_b_its_own_numbers_and_says_it_makes_it_run(unfit):
    state, plan, _, _ = unfit
    at = _open(state.model_copy(update={"b": "best"}), "ab")
    b = plan.b_focus
    assert b is not None and b.fits
    labels = (f"Throughput ({plan.unit}/s)", "Step time", "Scaling efficiency",
              "Time to finish", "Cost")
    ab = [m for m in at.metric if m.label in labels]
    # B's (a goal and a price given) and the headline's; A's say it does not fit in their place
    # (session 20, tests/test_ab_where_one_side_does_not_fit.py)
    assert len(ab) >= len(labels)
    assert any(e.value.startswith("A does not fit (needs ") for e in at.error)
    assert all(not m.delta for m in ab), [(m.label, m.delta) for m in ab]  # had '-6.8%'
    assert f"B {makes_it_run_text(b.samples_per_s, plan.unit, plan.words)}." in [
        s.value for s in at.success]


def test_the_layouts_tab_says_the_best_layout_makes_it_run(unfit):
    state, plan, _, _ = unfit
    best = [m.value for m in _open(state, "layouts").markdown if m.value.startswith("**Best of")]
    assert len(best) == 1
    assert "against the layout now" not in best[0]
    assert best[0].endswith(f"/s (today's layout does not fit in {plan.words.memory}).")
    assert f": {MAKES_IT_RUN}, " in best[0]


def test_where_today_fits_the_gains_stay():
    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "resnet50", "dmax": 16})
    plan = make_plan(preset_profile(state), state)
    assert plan.focus.fits
    r = next(r for r in plan.remedies if r.applicable)
    assert remedy_gain_cell(r, plan.focus.fits) == f"{r.gain:+.1%}"
    rows = next(iter(charts.remedies_chart(plan).to_dict()["datasets"].values()))
    assert rows[0]["gain"] == pytest.approx(plan.remedies[0].objective_gain)
    assert rows[0]["label"] == f"{plan.remedies[0].objective_gain:+.1%}"  # one formatter: signed_percent
    assert MAKES_IT_RUN not in charts.chart_text(plan, "remedies")
