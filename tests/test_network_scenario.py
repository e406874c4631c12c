"""Session 40: one function builds a network-upgrade scenario (``network_upgrades.network_scenario``:
the inter-server link's bandwidth and latency, the NICs and price of a node, the billed shapes and
the price's source), and decide's network option and diagnose's named faster network both run it.
Before, each built its own ``scenario.model_copy`` of the link, with its own NIC count and source."""

from __future__ import annotations

import pytest

from scalesim.decision import card_upgrade, decide
from scalesim.network_upgrades import UPGRADES_BY_KEY, network_scenario, network_scenarios
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario


def test_the_network_scenario_is_the_named_hardwares_link_nics_and_price():
    """Default profile: 8 A100 40GB a server over 100 Gb/s Ethernet (6.8 GB/s busbw).
    AWS p4d's EFA is 4 x 100 Gb/s = 50 GB/s of line, x 0.96 (the RDMA efficiency of
    presets.inter_link) = 48 GB/s busbw at 6 us; its extra is p4d's $32.7726/h less
    a2-highgpu-8g's $29.387/h = $3.3856 a server-hour, billed per whole p4d of 8 GPUs. A node
    of replicas whose stages span 2 servers exchanges over both servers' NICs: 8 NICs,
    96 GB/s, $6.7712 a node-hour."""
    profile = default_profile()
    scenario = Scenario(devices=[16])
    net = network_scenario(profile, scenario, UPGRADES_BY_KEY["efa-4x100"])
    assert net.upgrade.nics_per_node == 4 and net.link.busbw_GBps == pytest.approx(48.0)
    assert net.scenario.inter_busbw_GBps == pytest.approx(48.0)
    assert net.scenario.inter_latency_s == pytest.approx(6e-6)
    assert net.upgrade.extra_usd_per_server_hour == pytest.approx(3.3856)
    assert net.priced and net.billed_sizes == (8,)
    assert net.price_source.endswith("(as of 2020-11); billed per whole server of 8 GPUs")
    spans = profile.model_copy(update={"hardware": profile.hardware.model_copy(
        update={"nic_servers_per_node": 2})})
    two = network_scenario(spans, scenario, UPGRADES_BY_KEY["efa-4x100"])
    assert two.upgrade.nics_per_node == 8 and two.scenario.inter_busbw_GBps == pytest.approx(96.0)
    assert two.upgrade.extra_usd_per_server_hour == pytest.approx(6.7712)
    # no public price: the source says so and the cost is left blank
    hdr = network_scenario(profile, scenario, UPGRADES_BY_KEY["ib-8x200"])
    assert not hdr.priced and hdr.scenario.inter_busbw_GBps == pytest.approx(192.0)
    assert hdr.price_source.endswith("; price not known, so its cost is left blank")
    # today's faster ones in upgrades_for's order: the priced EFA, then the unpriced HDR
    # (192 GB/s) and NDR (384 GB/s), slowest first
    assert [n.upgrade.key for n in network_scenarios(profile, scenario)] == [
        "efa-4x100", "ib-8x200", "ib-8x400"]
    assert card_upgrade(profile, scenario).key == "efa-4x100"


def test_decide_and_diagnoses_remedy_run_the_network_scenario():
    """The card's network row and the faster-network remedy predict the scenario
    ``network_scenario`` builds: the same throughput (at its latency, 6 us, not today's 30 us)
    and the card's price source is the scenario's."""
    profile = default_profile()
    scenario = Scenario(devices=[16], train_samples=2e9)
    card = decide(profile, scenario, 16)
    option = next(o for o in card.options if o.key == "network")
    efa = network_scenario(profile, scenario, UPGRADES_BY_KEY["efa-4x100"])
    assert option.samples_per_s == predict(profile, efa.scenario)[0].samples_per_s
    assert option.price_source == efa.price_source
    _, ranked = rank_remedies(profile, scenario, 16)
    link = next(r for r in ranked if r.key == "interconnect")
    hdr = network_scenario(profile, scenario, UPGRADES_BY_KEY["ib-8x200"])
    assert link.scenario == hdr.scenario and link.upgrade == hdr.upgrade
    today = predict(profile, hdr.scenario.model_copy(update={"inter_latency_s": None}))[0]
    assert link.prediction.samples_per_s > today.samples_per_s  # the latency is the named one's


def test_the_cards_network_is_the_cheapest_priced_one_not_the_slowest(monkeypatch):
    """Session 41. Two priced upgrades for the A100 40GB: a 4 x 100 Gb/s one (48 GB/s busbw) at
    $5 a server-hour and a 4 x 200 Gb/s one (96 GB/s) at $2: the faster one is cheaper, so
    the slower is never the cheaper step up. upgrades_for sorted priced ones by bandwidth, so
    the card (and diagnose's 'decide prices another') named the $5 one; now by price: the $2
    one, then the $5 one, then the unpriced HDR and NDR, slowest first."""
    from dataclasses import replace

    from scalesim import network_upgrades as nu

    efa = nu.UPGRADES_BY_KEY["efa-4x100"]
    dear = replace(efa, key="dear-4x100", extra_usd_per_server_hour=5.0)
    cheap = replace(efa, key="cheap-4x200", gbit_per_nic=200.0, extra_usd_per_server_hour=2.0)
    rows = (dear, cheap, nu.UPGRADES_BY_KEY["ib-8x200"], nu.UPGRADES_BY_KEY["ib-8x400"])
    monkeypatch.setattr(nu, "UPGRADES", rows)
    monkeypatch.setattr(nu, "UPGRADES_BY_KEY", {u.key: u for u in rows})
    assert cheap.link().busbw_GBps == pytest.approx(96.0)  # 4 x 200 / 8 x 0.96
    profile, scenario = default_profile(), Scenario(devices=[16])
    assert [n.upgrade.key for n in network_scenarios(profile, scenario)] == [
        "cheap-4x200", "dear-4x100", "ib-8x200", "ib-8x400"]
    assert card_upgrade(profile, scenario).key == "cheap-4x200"
