"""Session 40: the planner's first screen says one thing about the network. The decision card
prices the network upgrades it can (4 x 100 Gb/s EFA, AWS p4d.24xlarge, for A100 40GB servers),
the "Largest single gain" line ranks the remedies, whose faster network is 8 x 200 Gb/s HDR
InfiniBand (no public price): the line now says why the card names another network."""

from __future__ import annotations

from scalesim.app.plan import headline, make_plan
from scalesim.app.state import default_state, preset_profile

from scalesim.network_upgrades import UPGRADES_BY_KEY


def _plan(**update):
    state = default_state().model_copy(update=update)
    return make_plan(preset_profile(state), state)


def test_the_largest_gain_says_why_the_card_prices_another_network():
    plan = _plan()  # a2-highgpu-8g + bert-large, 16 A100 40GB on two servers, 6.8 GB/s
    assert plan.best.key == "interconnect"
    assert plan.best.upgrade == UPGRADES_BY_KEY["ib-8x200"]  # the object, not its title
    assert plan.best.upgrade.extra_usd_per_server_hour is None
    (network,) = [o for o in plan.decision.options if o.key == "network"]
    assert network.title.startswith("Network: 4 x 100 Gb/s EFA (AWS p4d.24xlarge)")
    assert headline(plan)["best_remedy"].endswith(
        "+109.2% throughput; that network has no public price, so the decision card weighs "
        "4 x 100 Gb/s EFA (AWS p4d.24xlarge) instead")


def test_where_the_card_prices_the_same_network_the_line_adds_nothing():
    # A100 80GB servers: EFA is for p4d's A100 40GB, so the card's network is HDR too
    plan = _plan(hw="dgx-a100", inter="ethernet", nics=1, gbit=100.0)
    (network,) = [o for o in plan.decision.options if o.key == "network"]
    assert network.title.startswith("Network: 8 x 200 Gb/s HDR InfiniBand")
    assert plan.best.upgrade.key == "ib-8x200"
    assert headline(plan)["best_remedy"].endswith("+111.9% throughput")
