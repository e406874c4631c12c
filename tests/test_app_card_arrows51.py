"""Session 51: the decision card on the page writes a change of counts or of bandwidth with the
page's arrow, '→', as its layout changes do; it mixed the CLI's '->' in ('Add one server (16
-> 24 devices), the planner's layout: Strategy DDP → ZeRO-1', 'Network: ..., 6.8 -> 48 GB/s
busbw'), and the plan's own 'more devices (16 -> 24) not compared' note too. Each title
carries its template (``layout_change.arrowed_said``); ``scalesim decide`` keeps '->'."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import decide

# bert-large on 16 A100s (the default page), a 6.8 GB/s busbw network; EFA's 4 x 100 Gb/s
# reaches 48 GB/s, +100.8 % throughput (+103.5 % before session 56's PyTorch DDP gradient bucket
# copies, 1.73 ms more a step on either side: 135.29 / 67.36 ms, was 133.56 / 65.64)
NETWORK = "Network: 4 x 100 Gb/s EFA (AWS p4d.24xlarge), 6.8 → 48 GB/s busbw"
FEWER = "Run on one server (16 → 8 devices), global batch 0.5x"
ADDED = "Add one server (16 → 24 devices), the planner's layout: Strategy DDP → ZeRO-1"


def _plan(**fields):
    state = default_state().model_copy(update=fields)
    return make_plan(preset_profile(state), state)


def _cli(text: str) -> str:
    return text.replace("→", "->").replace("Strategy DDP -> ZeRO-1", "ddp -> zero1")


def test_the_cards_titles_recommendation_and_notes_use_the_pages_arrow():
    plan = _plan()
    card = plan.decision
    titles = [o.title for o in card.options]
    assert NETWORK in titles and FEWER in titles, titles
    assert card.recommendation.startswith(f"Upgrade the inter-server network to "
                                          f"{NETWORK.removeprefix('Network: ')}: +100.8% "), (
        card.recommendation)
    assert any(f"{ADDED}, global batch 1.5x" in n for n in card.notes), card.notes
    assert not any("->" in t for t in [*titles, card.recommendation, *card.notes])
    cli = decide(plan.profile, plan.scenario, plan.focus.devices)
    assert {_cli(NETWORK), _cli(FEWER)} <= {o.title for o in cli.options}
    assert any(f"{_cli(ADDED)}, global batch 1.5x" in n for n in cli.notes), cli.notes


def test_the_page_shows_the_card_with_its_arrow():
    plan = _plan()
    at = open_app(encode_query(plan.state, plan.profile))
    rows = list(next(iter(at.get("table"))).value.index)
    assert NETWORK in rows and not any("->" in r for r in rows), rows


def test_more_devices_on_the_card_uses_the_pages_arrow():
    """llama3-70b on 8 H100s: nothing fits; 64 devices at Tensor parallel 4 x Pipeline stages 4
    under ZeRO-2 do, for fewer device-hours than the fewest that fit (16, session 59)."""
    plan = _plan(wl="llama3-70b", hw="dgx-h100", grid="list", dlist="8")
    (more,) = plan.decision.options
    assert more.title == ("Add devices (8 → 64 devices, Tensor parallel 4 x Pipeline stages 4, "
                          "ZeRO-2), global batch 8x")
    cli = decide(plan.profile, plan.scenario, 8)
    assert cli.options[0].title == "Add devices (8 -> 64 devices, tp 4 x pp 4, zero2), global batch 8x"


def test_the_plans_more_devices_note_uses_the_pages_arrow():
    """A global batch of 176 on 16 devices (11 each): no count of 24 to 64 divides 176, so the
    card compares no server more and the plan's note says why 24 does not run."""
    plan = _plan(mode="strong", gb=176)
    assert any(n.startswith("more devices (16 → 24) not compared: Global batch 176 ")
               for n in plan.notes), plan.notes
