"""The remedy "overlap tensor-parallel communication" (``remedies`` key ``tp_overlap``;
docs/model.md §10 and §14): the scenario's layout with the tensor-parallel collectives overlapped
with the matmuls, its gain predicted by the model like every other remedy's, shared by
``rank_remedies``, ``decide`` (a settings change), diagnose's ranking and the app's scenario B;
not applicable, with the reason in one clause, without tensor parallelism, with the overlap on
already, or for a parameter-count workload."""

from __future__ import annotations

import pytest

from scalesim.decision import decide
from scalesim.predict import predict
from scalesim.profiles import default_profile, resolve_profile
from scalesim.remedies import TP_OVERLAP_TITLE, rank_remedies
from scalesim.schemas import Scenario, ScenarioLayout

TP8 = Scenario(devices=[8], micro_batch=1, layout=ScenarioLayout(tp=8, sequence_parallel=True))


def _remedy(profile, scenario, devices=8):
    now, ranked = rank_remedies(profile, scenario, devices)
    return now, next(r for r in ranked if r.key == "tp_overlap")


def test_the_gain_is_the_tensor_parallel_time_the_overlap_hides():
    """Llama 3 8B on 8 H100s at tp 8: the remedy's step is predict's with the overlap on, and
    the two steps differ by the tensor-parallel time the overlap hides, nothing else (compute,
    data-parallel exchange and the rest unchanged)."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    now, r = _remedy(profile, TP8)
    assert r.verdict == "remedy" and r.title == TP_OVERLAP_TITLE
    assert r.scenario.layout.tp_overlap and r.scenario.layout.tp == 8
    after = predict(profile, r.scenario)[0]
    assert r.prediction.step_time_s == pytest.approx(after.step_time_s, rel=1e-12)
    assert after.tp_comm_s < now.tp_comm_s
    assert now.step_time_s - after.step_time_s == pytest.approx(
        now.tp_comm_s - after.tp_comm_s, rel=1e-9)
    assert after.compute_s == pytest.approx(now.compute_s, rel=1e-12)
    assert r.gain == pytest.approx(after.samples_per_s / now.samples_per_s - 1, rel=1e-12)


@pytest.mark.parametrize("profile, scenario, reason", [
    (resolve_profile(None, "dgx-h100", "llama3-8b"), Scenario(devices=[8], micro_batch=1),
     "the layout has no tensor parallelism (tp 1)"),
    (resolve_profile(None, "dgx-h100", "llama3-8b"), TP8.model_copy(update={
        "layout": TP8.layout.model_copy(update={"tp_overlap": True})}),
     "the tensor-parallel collectives are overlapped already"),
    (default_profile(), Scenario(devices=[8]), "is a parameter count: no tensor parallelism"),
])
def test_not_applicable_with_the_reason(profile, scenario, reason):
    _, r = _remedy(profile, scenario)
    assert r.verdict == "not applicable" and not r.applicable and reason in r.reason


def test_decide_offers_it_as_a_settings_change_with_nothing_to_buy():
    """The decision card's settings option is the best free settings change: here the
    overlap, at the remedy's predicted throughput and no price."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    card = decide(profile, TP8, 8)
    settings = next(o for o in card.options if o.key == "settings")
    assert "overlap tensor-parallel communication" in settings.title
    _, r = _remedy(profile, TP8)
    assert settings.samples_per_s == pytest.approx(r.prediction.samples_per_s, rel=1e-12)
    assert settings.extra_usd_per_hour == 0.0


def test_the_app_takes_it_as_scenario_b_and_writes_a_v7_link():
    from typing import get_args

    from scalesim.app.plan import make_plan
    from scalesim.app.planner_page import B_LABELS
    from scalesim.app.state import RemedyChoice, decode_query, encode_query, link_version

    assert "tp_overlap" in get_args(RemedyChoice) and set(B_LABELS) == set(get_args(RemedyChoice))
    link = {"v": "7", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "tp": "8", "sp": "1",
            "mb": "1", "b": "tp_overlap"}
    state, profile, messages = decode_query(link)
    assert messages == [] and state.b == "tp_overlap"
    plan = make_plan(profile, state)
    assert plan.b_label == TP_OVERLAP_TITLE and plan.b_scenario.layout.tp_overlap
    assert plan.b_focus.samples_per_s > plan.focus.samples_per_s
    params = encode_query(state, profile)
    assert (params["v"], params["b"]) == ("7", "tp_overlap") and link_version(state) == 7
    assert decode_query(params)[0] == state
