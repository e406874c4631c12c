"""Session 41: a network upgrade is evaluated on its own inter-server link, NICs included.

A job on fewer GPUs of each server than it holds reaches only the NICs next to its GPUs
(``presets.partial_server_inter_busbw_GBps``: g of G GPUs reach ceil(g x N / G) of N NICs). The
upgrade's scenario carried only its busbw and latency, so that share was taken of today's NIC
count: one GPU of 8 on the default profile (one 100 Gb/s NIC, share 1) upgraded to AWS p4d's EFA
(4 x 100 Gb/s, 48 GB/s busbw) ran at all 48 GB/s, where it reaches one NIC of four, 12; one GPU of
a DGX-1 (4 NICs: a quarter) on 8 x 200 Gb/s HDR (192 GB/s) ran at 48, where one NIC of eight
gives 24. ``network_scenario`` now carries the profile on the upgrade's whole link
(``network_upgrades.on_link``), and decide, goal and diagnose's remedy evaluate on it.
"""

from __future__ import annotations

import json

import pytest

from scalesim.cli.main import main
from scalesim.decision import decide
from scalesim.network_upgrades import UPGRADES_BY_KEY, network_scenario
from scalesim.predict import inter_busbw_GBps_of, predict, scenario_inputs
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import default_profile, profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

EFA_LATENCY_S = 6e-6  # presets.inter_link's RDMA hop


def _dgx1():
    return profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))


@pytest.mark.parametrize("profile, key, gpus, reached_GBps", [
    # default: EFA 4 x 100 Gb/s = 50 GB/s line x 0.96 = 48 GB/s; 1 of 8 GPUs: ceil(1 x 4 / 8) = 1
    # of 4 NICs: 12 (was 48: today's single NIC's share, 1)
    (default_profile, "efa-4x100", 1, 12.0),
    # DGX-1 on 8 x 200 Gb/s = 200 GB/s x 0.96 = 192; 1 of 8 GPUs: 1 of 8 NICs: 24 (was 48:
    # today's 4 NICs, 1 of 4); 3 of 8: 3 of 8 NICs, 72 (was 96: ceil(1.5) = 2 of 4)
    (_dgx1, "ib-8x200", 1, 24.0),
    (_dgx1, "ib-8x200", 3, 72.0),
    # whole servers: all the NICs, unchanged
    (_dgx1, "ib-8x200", 8, 192.0),
    (default_profile, "efa-4x100", 8, 48.0),
])
def test_the_upgrade_is_shared_over_its_own_nics(profile, key, gpus, reached_GBps):
    net = network_scenario(profile(), Scenario(devices=[24], devices_per_node=gpus),
                           UPGRADES_BY_KEY[key])
    assert net.profile.hardware.inter_node == net.link  # busbw, latency, NICs, kind
    assert inter_busbw_GBps_of(net.profile.hardware, net.scenario) == pytest.approx(reached_GBps)
    inputs, _ = scenario_inputs(net.profile, net.scenario)
    assert float(inputs.inter_busbw_GBps) == pytest.approx(reached_GBps)


def test_decide_cli_runs_efa_at_one_nic_of_four(capsys):
    """`decide --gpus-per-node 1 --devices 16`: the card's EFA row is the run at 12 GB/s and
    6 us on today's profile (one NIC: a figure given is what the GPU reaches), +49.7 %, not the
    +105 % of 48 GB/s."""
    assert main(["decide", "--gpus-per-node", "1", "--devices", "16", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    row = next(o for o in card["options"] if o["key"] == "network")
    assert row["title"].startswith("Network: 4 x 100 Gb/s EFA")
    at = Scenario(devices=[16], devices_per_node=1, inter_busbw_GBps=12.0,
                  inter_latency_s=EFA_LATENCY_S)
    assert row["samples_per_s"] == pytest.approx(predict(default_profile(), at)[0].samples_per_s,
                                                 rel=1e-9)
    at48 = at.model_copy(update={"inter_busbw_GBps": 48.0})
    assert row["samples_per_s"] < 0.9 * predict(default_profile(), at48)[0].samples_per_s


def test_decide_on_a_dgx1_runs_hdr_at_one_nic_of_eight():
    """DGX-1 (4 NICs, one per two GPUs), one GPU per server: today's profile at 96 GB/s gives
    it a quarter, 24, what one of 8 x 200 Gb/s HDR's eight NICs gives (192 / 8)."""
    profile, scenario = _dgx1(), Scenario(devices=[16], devices_per_node=1)
    row = next(o for o in decide(profile, scenario, 16).options if o.key == "network")
    assert "HDR InfiniBand" in row.title
    at = scenario.model_copy(update={"inter_busbw_GBps": 96.0, "inter_latency_s": EFA_LATENCY_S})
    assert float(scenario_inputs(profile, at)[0].inter_busbw_GBps) == pytest.approx(24.0)
    assert row.samples_per_s == pytest.approx(predict(profile, at)[0].samples_per_s, rel=1e-9)


def test_diagnoses_named_network_runs_hdr_at_one_nic_of_eight():
    """The faster-network remedy (diagnose, the app's remedies; ``rank_remedies``) on the same
    DGX-1 job: 8 x 200 Gb/s HDR (192 > twice today's 48), at 24 GB/s for its one GPU."""
    profile, scenario = _dgx1(), Scenario(devices=[16], devices_per_node=1)
    now, ranked = rank_remedies(profile, scenario, 16)
    row = next(r for r in ranked if r.key == "interconnect")
    # the title says what the one GPU reaches, 12 -> 24 (a quarter of 48, an eighth of 192),
    # the whole servers' figures after it (session 41; was '(48 -> 192 GB/s busbw)' alone)
    assert row.title.endswith("8 x 200 Gb/s HDR InfiniBand (12 -> 24 GB/s busbw for the job's "
                              "1 of 8 GPUs per server (whole server 48 -> 192))")
    assert float(scenario_inputs(row.profile, row.scenario)[0].inter_busbw_GBps) == \
        pytest.approx(24.0)
    at = scenario.model_copy(update={"inter_busbw_GBps": 96.0, "inter_latency_s": EFA_LATENCY_S})
    assert row.gain == pytest.approx(
        predict(profile, at)[0].samples_per_s / now.samples_per_s - 1.0, rel=1e-9)


def test_goal_cli_runs_efa_at_one_nic_of_four(capsys):
    """`goal` on one GPU per server: the EFA row's plan is predict's at 12 GB/s and 6 us; the
    README goal (3 days, $50,000) no longer names EFA as the faster network that meets it (at
    48 GB/s it did: 18 servers, 2.9 days, $40,809)."""
    args = ["goal", "--gpus-per-node", "1", "--train-samples", "2e9", "--critical-batch", "4096",
            "--deadline", "3d", "--budget", "50000", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    efa = next(n for n in data["networks"] if n["name"].startswith("4 x 100 Gb/s EFA"))
    plan = efa["plan"]
    at = Scenario(devices=[plan["devices"]], devices_per_node=1, micro_batch=plan["micro_batch"],
                  accumulation=plan["accumulation"], strategy=plan["strategy"],
                  train_samples=2e9, critical_batch_size=4096.0, inter_busbw_GBps=12.0,
                  inter_latency_s=EFA_LATENCY_S)
    assert plan["samples_per_s"] == pytest.approx(
        predict(default_profile(), at)[0].samples_per_s, rel=1e-9)
    assert "EFA" not in data["network_sentence"].split(":")[1]
