"""Audit of decide's and goal's days and dollars, each pinned to a hand-computed value."""

from __future__ import annotations

import pytest

from scalesim.decision import decide
from scalesim.goal import seek
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

P4D_PER_HOUR = 32.7726  # AWS p4d.24xlarge, 8 GPUs, rented whole (presets.PRICES["aws-p4d"])
A2_PER_GPU_HOUR = 29.387 / 8  # Google Cloud a2-highgpu-8g, also rented as 1, 2 and 4 GPUs


def test_a_network_upgrade_on_part_servers_bills_the_upgrades_whole_instances():
    """16 GPUs as 4 per server of a2-highgpu-8g are billed 16 today (a2-highgpu-4g shapes),
    $58.774/h; the network upgrade is AWS p4d.24xlarge, rented only whole: 4 servers of it cost
    4 x $32.7726 = $131.0904/h (32 GPUs billed), not 16 x $3.673375 + 4 x $3.3856 = $72.3164
    (the extra per server-hour on today's 4-GPU shapes). At that price the upgrade is no longer
    the cheapest way: 4x accumulation is."""
    scenario = Scenario(devices=[16], devices_per_node=4, train_samples=2e9)
    card = decide(default_profile(), scenario, 16)
    assert card.now.usd_per_hour == pytest.approx(16 * A2_PER_GPU_HOUR)
    network = next(o for o in card.options if o.key == "network")
    assert network.usd_per_hour == pytest.approx(4 * P4D_PER_HOUR)
    assert network.billed_devices == 32
    assert network.total_usd == pytest.approx(network.time_s / 3600 * 4 * P4D_PER_HOUR)
    assert "billed per whole server of 8 GPUs" in network.price_source
    assert not card.recommendation.startswith("Upgrade the inter-server network")
    # on whole servers the upgrade's price is unchanged: 2 x p4d.24xlarge
    whole = decide(default_profile(), Scenario(devices=[16], train_samples=2e9), 16)
    network = next(o for o in whole.options if o.key == "network")
    assert network.usd_per_hour == pytest.approx(2 * P4D_PER_HOUR)
    assert network.billed_devices == 16


def test_goal_prices_a_network_upgrade_per_whole_upgraded_server():
    answer = seek(default_profile(), Scenario(train_samples=2e9, devices_per_node=4),
                  3 * 86400.0, 50_000, max_devices=64)
    upgraded = [p for p in answer.front if p.network != "as is"]
    assert upgraded
    for p in upgraded:
        assert p.cost_usd == pytest.approx(p.time_s / 3600 * p.servers * P4D_PER_HOUR)


def test_goals_reference_batch_of_a_split_model_is_one_servers_global_batch():
    """llama3-8b at tp 8 with --batch 8 (per replica) on 8-GPU DGX H100s: one full server runs
    one replica, global batch 8 x 1 x 1 = 8, so --train-samples 1e6 is the samples needed at
    B_ref = 8 (goal said 64, the micro-batch x 8 GPUs, as if each GPU were a replica: with
    B_noise 64 it then took 44% fewer samples than asked, 1e6 x (1 + 4/64) / (1 + 64/64), at
    the one-server plan's batch of 4, and answered 23.3 h where 1e6 x (1 + 4/64) / (1 + 8/64)
    samples take 41.4 h)."""
    import math

    from scalesim.profiles import resolve_profile

    base = Scenario(train_samples=1e6, critical_batch_size=64.0, micro_batch=8,
                    layout={"tp": 8, "pp": 1})
    profile = resolve_profile(hardware="dgx-h100", workload="llama3-8b")
    answer = seek(profile, base, 30 * 86400.0, 5e6, max_devices=16)
    assert answer.reference_batch == 8
    for p in answer.front:
        needed = 1e6 * (1 + p.global_batch / 64) / (1 + 8 / 64)
        steps = math.ceil(needed / p.global_batch)
        assert p.time_s == pytest.approx(steps * p.global_batch / p.samples_per_s)
    one = next(p for p in answer.front if p.devices == 8 and p.global_batch == 4)
    assert one.time_s == pytest.approx(math.ceil(1e6 * 1.0625 / 1.125 / 4) * 4
                                       / one.samples_per_s)
    # data parallel: unchanged, micro-batch x the server's 8 GPUs x accumulation
    assert seek(default_profile(), Scenario(train_samples=2e9, critical_batch_size=4096.0),
                86400.0, 1e5, max_devices=16).reference_batch == 32 * 8
    # the text says which batch --train-samples counts at (it was in the JSON alone)
    said = ("the training length counts samples at a global batch of 8 (micro-batch 8 x 1 "
            "replica of one server x accumulation 1); at critical batch 64")
    assert any(note.startswith(said) for note in answer.notes), answer.notes
