"""The planner page ranks the remedies once a render (session 55): its remedy list and the
decision card's options come from one ``rank_remedies`` call (the card's was a second, as long
as the first: a third of a render)."""

from __future__ import annotations

from scalesim.app import plan as app_plan
from scalesim.app.state import default_state, preset_profile

from scalesim import decision
from scalesim.decision import decide


def _counted(monkeypatch) -> list:
    calls = []
    real = decision.rank_remedies

    def counting(profile, scenario, devices, *args, **kwargs):
        calls.append(devices)
        return real(profile, scenario, devices, *args, **kwargs)

    monkeypatch.setattr(decision, "rank_remedies", counting)
    monkeypatch.setattr(app_plan, "rank_remedies", counting)
    return calls


def test_a_render_ranks_the_remedies_once(monkeypatch):
    calls = _counted(monkeypatch)
    state = default_state()
    page = app_plan.make_plan(preset_profile(state), state)
    assert page.decision is not None and page.remedies
    assert calls == [page.focus.devices]


def test_the_card_from_given_remedies_is_the_card_ranked_by_itself(monkeypatch):
    state = default_state()
    page = app_plan.make_plan(preset_profile(state), state)
    profile, scenario, devices = page.profile, page.scenario, page.focus.devices
    ranked = decision.rank_remedies(profile, scenario, devices)  # (at devices, the remedies)
    calls, real_one, todays = _counted(monkeypatch), decision._one, []

    def one(prof, scn, count):
        todays.append(scn is scenario and count == devices)
        return real_one(prof, scn, count)

    monkeypatch.setattr(decision, "_one", one)
    given = decide(profile, scenario, devices, ranked=ranked)
    assert calls == [] and not any(todays)  # today's run not predicted, nothing ranked again
    alone = decide(profile, scenario, devices)
    assert calls == [devices] and any(todays)  # predicted and ranked here
    assert given == alone and [o.key for o in given.options] == [o.key for o in alone.options]


def test_scenario_b_at_the_focus_is_its_remedy_s_prediction():
    """B's focus row, the best remedy at the focus count, is the prediction ranking made of it,
    not a second one; a fresh prediction of B's scenario gives the same figures."""
    from scalesim.predict import predict

    state = default_state().model_copy(update={"b": "best"})
    page = app_plan.make_plan(preset_profile(state), state)
    assert page.best is not None and page.b_focus is page.best.prediction
    again = predict(page.b_profile, page.b_scenario.model_copy(
        update={"devices": [page.focus.devices]}))[0]
    assert again == page.b_focus
