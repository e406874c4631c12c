"""Session 50, continued: the decision card on the planner page says every layout in the
sidebar's labels, where ``scalesim decide`` keeps its notation. Before, the page wrote the
CLI's 'As is: 64 devices (dp 4 x tp 8 x pp 2)', 'Add devices (8 -> 16 devices, tp 2 x pp 1,
zero3)', the nothing-fits sentence's '(the model is split already, tp 8 x pp 1, ...)' and
'at 16 devices (dp 8 x tp 2 x pp 1, zero3, ...)', and the notes' 'the planner's layout (tp 8
-> 4, pp 2 -> 9, ...)'. Each is a ``layout_change.LayoutTitle`` said by
``app.layout_titles.page_title`` through decide's ``said``; the text is never read."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.plan import card_notes, make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import card_rows, decide


def _plan(**fields):
    state = default_state().model_copy(update=fields)
    return make_plan(preset_profile(state), state)


def _page_card(plan):
    """(the card's rows, its caption) as the planner page shows them."""
    at = open_app(encode_query(plan.state, plan.profile))
    card = next(c for c in at.get("table"))
    caption = next(c.value for c in at.caption if c.value.startswith("Main assumption"))
    return list(card.value.index), caption


def test_as_is_and_the_notes_name_the_split_by_the_pages_controls():
    """llama3-70b on 64 H100s as dp 4 x tp 8 x pp 2 (4 x 8 x 2 = 64): the As-is row names the
    4 data-parallel ranks and the two controls; the note on the planner's layout at 72
    devices (pp 2 -> 9: 72 / (4 x 9) = 2 ranks) names each change by its control."""
    plan = _plan(wl="llama3-70b", hw="dgx-h100", dmax=64, focus=64, tp=8, pp=2, train=1e6,
                 price=None)
    cli = decide(plan.profile, plan.scenario, 64)
    assert card_rows(cli)[0]["option"] == "As is: 64 devices (dp 4 x tp 8 x pp 2)"
    assert cli.now.title.split(" (") == ["As is: 64 devices", "dp 4 x tp 8 x pp 2)"]  # a str
    assert any("the planner's layout (tp 8 -> 4, pp 2 -> 9, " in n for n in cli.notes)
    rows, caption = _page_card(plan)
    assert rows[0] == ("As is: 64 devices (4 data-parallel ranks x Tensor parallel 8 x "
                       "Pipeline stages 2)")
    assert ("Passed over: the planner's layout (Tensor parallel 8 → 4, Pipeline stages 2 → 9, "
            in caption), caption
    assert not any(n in caption for n in ("tp 8 ->", "pp 2 ->", "ddp ->")), caption
    assert any("the planner's layout (Tensor parallel 8 → 4" in n for n in card_notes(plan))


def test_more_devices_and_the_nothing_fits_sentence_in_the_pages_words():
    """llama3-70b on 8 A100s at Tensor parallel 8 does not fit, nor does any layout at 8: the
    card's option is 64 devices at tp 4 x pp 4 under ZeRO-2 (session 59: fewer device-hours
    than the fewest that fit, 16 at tp 2 under ZeRO-3), and its sentence names the split
    already run and the planner's row at 64 (4 x 4 x 4) by the controls."""
    plan = _plan(wl="llama3-70b", hw="dgx-a100", dmax=8, focus=8, tp=8)
    cli = decide(plan.profile, plan.scenario, 8)
    assert cli.options[0].title.startswith("Add devices (8 -> 64 devices, tp 4 x pp 4, zero2)")
    assert "(the model is split already, tp 8 x pp 1, " in cli.recommendation
    assert "at 64 devices (dp 4 x tp 4 x pp 4 (zero bubble), zero2, " in cli.recommendation
    rows, _ = _page_card(plan)
    # the data-parallel ranks said, each degree by its control
    assert rows[1].startswith("Add devices (8 → 64 devices, Tensor parallel 4 x Pipeline "
                              "stages 4, ZeRO-2)"), rows  # the page's arrow since session 51
    said = plan.decision.recommendation
    assert "(the model is split already, Tensor parallel 8, and no other split fits; " in said
    assert ("at 64 devices (4 data-parallel ranks x Tensor parallel 4 x Pipeline stages 4 (zero "
            "bubble), ZeRO-2, Micro-batch 1 per model replica" in said), said
    assert not any(n in said for n in (" tp 8", "dp 4 x", "zero2,")), said


SHARD_ALL = "Shard optimizer state, gradients and parameters"


def test_the_sharding_remedy_names_the_strategy_by_its_control():
    """llama3-8b on 16 H100s at Tensor parallel 2, DDP: sharding every state is ZeRO-3 under
    FSDP's FULL_SHARD; the CLI writes 'ddp -> zero3', the page the Strategy control and its
    choices, in the Remedies table and on the card's settings row (decide's run of
    ``scalesim decide --tp 2``, where the card shows it, said as the page says it)."""
    from scalesim.app.layout_titles import page_title

    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    page = f"{SHARD_ALL} (Strategy DDP → ZeRO-3 / FSDP, FSDP FULL_SHARD)"
    plan = _plan(wl="llama3-8b", hw="dgx-h100", dmax=16, focus=16, tp=2)
    assert page in [r.title for r in plan.remedies]
    at = open_app({**encode_query(plan.state, plan.profile), "tab": "remedies"})
    remedies = next(d.value for d in at.dataframe if "remedy" in d.value.columns)
    assert page in list(remedies["remedy"])
    assert not any("ddp -> " in t for t in remedies["remedy"])
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    scenario = Scenario.model_validate({"devices": [16], "layout": {"tp": 2}})
    cli = [r["option"] for r in card_rows(decide(profile, scenario, 16))]
    assert f"Settings: {SHARD_ALL.lower()} (ddp -> zero3, FSDP FULL_SHARD)" in cli
    card = decide(profile, scenario, 16, lambda title: page_title(title, plan.words))
    assert f"Settings: {page[0].lower()}{page[1:]}" in [r["option"] for r in card_rows(card)]
