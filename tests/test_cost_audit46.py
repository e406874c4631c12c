"""Session 46: cost and time-to-quality answers checked by hand (docs/reliability.md, "Session
46"). The default profile is a2-highgpu-8g (Google Cloud, $29.387 an hour for 8 A100 40GB:
$3.673375 a GPU-hour, rented as 1, 2, 4 or 8 GPUs) + bert-large; hours = whole optimizer steps
x step time, dollars = hours x billed GPUs x price per GPU-hour (docs/model.md §9)."""

from __future__ import annotations

import math

import pytest
from app_harness import open_app
from scalesim.app.state import AppState, encode_query, preset_profile

A2_GPU_HOUR = 29.387 / 8  # USD, presets.PRICES["a2-highgpu-8g"]


def _plan(**fields):
    from scalesim.app.plan import make_plan

    state = AppState(**fields)
    return make_plan(preset_profile(state), state)


def test_ab_tabs_cost_of_a_network_with_no_public_price_says_it_leaves_the_network_out():
    """bert-large on 16 a2-highgpu-8g GPUs, 1e9 samples: scenario B (the best remedy) is 8 x 200
    Gb/s HDR InfiniBand, which has no public price. By hand: 1e9 / 512 = 1,953,125 whole steps
    at B's 65.9 ms = 35.8 h, x 16 GPUs x $3.673375 = $2,102, the devices' money alone (session
    56: B's step 64.2 -> 65.9 ms with DDP's bucket copies, 336e6 x 8 B / 1,555 GB/s = 1.73 ms;
    $2,047 before). The A/B tab showed "Cost $2,047, -52.2%" beside A's $4,281, as if the network
    halved the bill, while the decision card on the same page prices its network (EFA) at +$6.77
    an hour; now the metric says its cost is the devices only and gives no change against A's."""
    from scalesim.app.plan import UNPRICED_LINKS, ab_cost_label, finish

    plan = _plan(train=1e9)
    assert plan.best.key == "interconnect" and plan.b_unpriced_links
    b = plan.b_focus
    hand_s = math.ceil(1e9 / 512) * b.step_time_s
    hand_usd = hand_s / 3600 * 16 * A2_GPU_HOUR
    t, cost = finish(plan, b)
    assert t == pytest.approx(hand_s, rel=1e-12) and cost == pytest.approx(hand_usd, rel=1e-12)
    assert round(hand_usd) == 2102  # 2,047 before session 56's copies (+1.73 ms a step)
    assert ab_cost_label(True) == f"Cost ({UNPRICED_LINKS.removeprefix('cost: ')})"

    state = AppState(train=1e9, tab="ab")
    at = open_app(encode_query(state, preset_profile(state)))
    costs = [m for m in at.metric if m.label.startswith("Cost")]
    assert [m.label for m in costs] == ["Cost", ab_cost_label(True)], [m.label for m in costs]
    assert costs[1].value == "$2,102" and not costs[1].delta, costs[1].delta


def test_ab_tabs_cost_of_a_priced_change_keeps_its_change_against_a():
    """B = accumulate gradients over 4 micro-steps (nothing to buy): its cost is all it costs,
    so its metric stays 'Cost' with its change. By hand: 1e9 / 2,048 = 488,282 whole steps
    (488,281.25 rounded up) x B's step, x 16 x $3.673375; against A's 1,953,125 x 134.3 ms."""
    from scalesim.app.plan import finish

    plan = _plan(train=1e9, b="accumulation")
    assert not plan.b_unpriced_links
    b, a = plan.b_focus, plan.focus
    hand_b = math.ceil(1e9 / 2048) * b.step_time_s / 3600 * 16 * A2_GPU_HOUR
    hand_a = math.ceil(1e9 / 512) * a.step_time_s / 3600 * 16 * A2_GPU_HOUR
    assert finish(plan, b)[1] == pytest.approx(hand_b, rel=1e-12)
    assert finish(plan, a)[1] == pytest.approx(hand_a, rel=1e-12)

    state = AppState(train=1e9, tab="ab", b="accumulation")
    at = open_app(encode_query(state, preset_profile(state)))
    costs = [m for m in at.metric if m.label.startswith("Cost")]
    assert [m.label for m in costs] == ["Cost", "Cost"]
    assert costs[1].delta == f"{hand_b / hand_a - 1:+.1%}", costs[1].delta


def test_hours_and_cost_words_never_name_an_unpriced_network_the_cheapest():
    """bert-large on 32 a2-highgpu-8g GPUs (4 servers), 1e8 samples. By hand: HDR InfiniBand
    (no public price) 1.8 h x 32 x $3.673375 = $212, the devices alone; EFA (AWS p4d.24xlarge,
    $32.7726 a server-hour, 4 servers = $131.09/h) 1.9 h = $250, its network included (session
    56: 97,657 steps of 66.4 and 70.4 ms, each 1.73 ms more for DDP's bucket copies, 336e6 x 8 B
    / 1,555 GB/s: +$5.5 and +$6.1 on $206 and $244). The
    chart's words said "Fastest and cheapest that runs: ... HDR InfiniBand ... $206" while the
    decision card recommends EFA for $244: a lower bound was called the cheapest. Now the
    cheapest is named among the options whose cost is all they buy: EFA, as the card says."""
    from scalesim.app.charts import chart_text

    plan = _plan(grid="list", dlist="32", train=1e8)
    hdr = next(o for o in plan.options if o.label.startswith("Faster inter-server network"))
    efa = next(o for o in plan.options if o.label.startswith("Network: 4 x 100 Gb/s EFA"))
    assert not hdr.priced and efa.priced
    assert hdr.cost_usd == pytest.approx(hdr.time_s / 3600 * 32 * A2_GPU_HOUR, rel=1e-12)
    assert efa.cost_usd == pytest.approx(efa.time_s / 3600 * 4 * 32.7726, rel=1e-12)
    assert hdr.cost_usd < efa.cost_usd  # the lower bound is below the priced network's money
    assert min(o.cost_usd for o in plan.options if o.fits and o.priced) == efa.cost_usd
    words = chart_text(plan, "hours")
    assert words.startswith("Fastest that runs: Faster inter-server network"), words
    assert f"Cheapest that runs: {efa.label}, 1.9 h for $250." in words, words
    assert "cheapest" not in words.split("Cheapest that runs")[0].lower(), words
    assert plan.decision.recommendation.startswith("Upgrade the inter-server network to 4 x 100")
