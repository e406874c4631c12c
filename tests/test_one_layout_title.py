"""Session 19 (splitname19): the split-the-model remedy carries one title, built once in the
remedy object (``layout_change.layout_title``), that decide, the planner's Remedies tab, its
Cost tab and the HTML report all print: "Change the layout: ..." where today's model is split
already. Was: decide said "Change the layout: schedule 1f1b -> zb, ..." and the app's Remedies
tab "Split the model: dp 4 x tp 8 x pp 2 ..." for the same remedy (docs/reliability.md)."""

from __future__ import annotations

from app_harness import open_app, run_clean
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.cli.main import main
from scalesim.decision import decide
from scalesim.profiles import resolve_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

# session 44: ddp -> zero2 (was zero1) since Megatron-Core's ZeRO-1 reduces fp32 main grads;
# session 46: zero1 again, FSDP's ZeRO-2 under the pipeline waits for the first stage's
# reduce-scatter after its last backward (model/piped_reduce.py)
CHANGE = ("Change the layout: pipeline schedule 1F1B -> zero bubble, ddp -> zero1, sequence "
          "parallel off -> on")


def _llama():
    profile = resolve_profile(None, "dgx-h100", "llama3-70b")
    return profile, Scenario.model_validate({"devices": [64], "train_samples": 1e6,
                                             "layout": {"tp": 8, "pp": 2}})


def test_the_remedy_and_decides_option_have_one_title(capsys):
    profile, scenario = _llama()
    _, ranked = rank_remedies(profile, scenario, 64)
    (split,) = [r for r in ranked if r.key == "split_model"]
    assert split.title == CHANGE and split.helps
    (option,) = [o for o in decide(profile, scenario, 64).options if o.key == "split_model"]
    assert option.title == split.title
    assert main(["decide", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices",
                 "64", "--tp", "8", "--pp", "2", "--train-samples", "1e6"]) == 0
    text = capsys.readouterr().out
    assert CHANGE in text and "Split the model" not in text


def test_a_model_not_split_today_keeps_split_the_model():
    profile = resolve_profile(None, "dgx-h100", "llama3-70b")
    _, ranked = rank_remedies(profile, Scenario(devices=[64], train_samples=1e6), 64)
    (split,) = [r for r in ranked if r.key == "split_model"]
    assert split.title.startswith("Split the model: dp ")


def test_the_apps_remedies_cost_tab_and_report_say_the_cards_words():
    from html import escape

    from scalesim.app.report import report_html

    state = default_state().model_copy(update={
        "wl": "llama3-70b", "hw": "dgx-h100", "dmax": 64, "focus": 64, "tp": 8, "pp": 2,
        "train": 1e6, "price": None})
    plan = make_plan(preset_profile(state), state)
    (card,) = [o.title for o in plan.decision.options if o.key == "split_model"]
    assert card.startswith("Change the layout: ")
    (split,) = [r for r in plan.remedies if r.key == "split_model"]
    assert split.title == card
    assert any(o.label.startswith(card) for o in plan.options if o.kind == "remedy")
    at = open_app(encode_query(plan.state, plan.profile))
    as_is = next(t for t in at.get("table")).value.index[0]
    at.session_state["k_tab"] = "Remedies"
    remedies = run_clean(at).dataframe[-1].value
    assert card in list(remedies["remedy"])
    assert not any(t.startswith("Split the model") for t in remedies["remedy"])
    assert as_is == plan.decision.now.title and "not runnable" not in as_is
    page = report_html(plan, "http://x/")
    assert page.count(escape(card)) >= 2 and "Split the model: dp" not in page  # card and remedies
    assert escape(f"{plan.decision.now.title} (not runnable)") not in page


def test_a_layout_change_names_the_schedule_as_a_reader_does():
    """Session 40: 'schedule 1f1b -> none' (the schema's values) where the pipeline goes. 16
    H100s at global batch 64: tp 2 x pp 2 is dp 4 (64 / 4 = 16 a replica), tp 2 x pp 1 dp 8 (8)."""
    from scalesim.layout_change import layout_changes, layout_settings
    from scalesim.predict import predict

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    runs = [Scenario.model_validate({"devices": [16], "global_batch": 64,
                                     "layout": {"tp": 2, "pp": pp}}) for pp in (2, 1)]
    before, after = (layout_settings(profile, s, predict(profile, s)[0]) for s in runs)
    assert layout_changes(before, after) == [
        "pp 2 -> 1", "pipeline schedule 1F1B -> none (no pipeline)", "micro-batch 16 -> 8"]
