"""The faster-network remedy (diagnose, plan) runs the named network as decide's network option
runs it: its bandwidth and its latency. The remedy had kept today's link latency (30 us of TCP)
under the name "8 x 200 Gb/s HDR InfiniBand" (6 us): ResNet-50 on 64 PCIe GPUs over 100 Gb/s
Ethernet read +163 % in diagnose and +176 % in decide for the same upgrade."""

from __future__ import annotations

import diagnose_cases as cases
import pytest
from cli_harness import fitted_of

from scalesim import presets
from scalesim.decision import decide
from scalesim.network_upgrades import UPGRADES_BY_KEY
from scalesim.predict import predict
from scalesim.profiles import profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Scenario


def _interconnect(profile, scenario, devices):
    _, ranked = rank_remedies(profile, scenario, devices)
    return next(r for r in ranked if r.key == "interconnect")


def test_the_named_network_is_predicted_with_its_own_latency():
    profile = profile_from_presets(presets.get_hardware("pcie-8gpu-100gbe"),
                                   presets.get_workload("resnet50"))
    scenario = Scenario(devices=[64], micro_batch=8)
    remedy = _interconnect(profile, scenario, 64)
    assert remedy.title.startswith("Faster inter-server network: 8 x 200 Gb/s HDR InfiniBand")
    link = UPGRADES_BY_KEY["ib-8x200"].link()
    now = predict(profile, scenario)[0]
    upgraded = predict(profile, scenario.model_copy(update={
        "inter_busbw_GBps": link.busbw_GBps, "inter_latency_s": link.latency_s}))[0]
    by_hand = upgraded.samples_per_s / now.samples_per_s - 1.0
    assert remedy.gain == pytest.approx(by_hand, rel=1e-9)
    network = next(o for o in decide(profile, scenario, 64).options if o.key == "network")
    assert "HDR InfiniBand" in network.title
    assert remedy.gain == pytest.approx(network.throughput_gain, rel=1e-9)


def test_diagnose_and_decide_give_one_gain_for_the_network_of_the_fitted_scenario():
    rows = cases.inter_server()
    report = diagnose_runs(parse_runs_text(cases.to_csv(rows), "runs.csv"), params=336e6)
    remedy = next(r for r in report.remedies if r.key == "interconnect")
    profile, scenario = fitted_of(report)
    network = next(o for o in decide(profile, scenario, 32).options if o.key == "network")
    assert "HDR InfiniBand" in network.title
    assert remedy.gain == pytest.approx(network.throughput_gain, rel=1e-9)
