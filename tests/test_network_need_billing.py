"""Session 42: goal's "enough" for a named network is judged on the bill its own row prices.

Before, ``network_need`` judged each named network on today's billing, the devices' money alone,
while goal's "faster networks" row bills the upgrade's whole servers (and its price where
public): at one GPU of each server the sentence said "enough" beside a row that misses the
goal. The default a2-highgpu-8g at one GPU a server (Google's 1-GPU a2-highgpu-1g shapes) said
EFA, HDR and NDR were all enough for 1e8 samples at micro-batch 8 within 1 h for $1,000, while
every row missed (EFA's best $1,860, NDR's $1,470). Hand figures: p3.16xlarge $24.48/h for 8
V100, $3.06 a GPU-hour; a 64-GPU plan at one GPU of each of 64 servers bills 64 GPUs on
today's 1-GPU p3.2xlarge shapes and 64 x 8 = 512 on whole servers.
"""

from __future__ import annotations

import pytest

from scalesim.cli.main import main
from scalesim.goal import UPGRADES_BASIS, seek
from scalesim.network_upgrades import network_scenarios
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import default_profile, profile_from_presets
from scalesim.schemas import Scenario

USD_PER_V100_HOUR = 24.48 / 8  # AWS p3.16xlarge on-demand, per GPU


def _dgx1():
    return profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))


def _verdicts(answer) -> tuple[dict, dict]:
    """(each named network's "enough" in the need, whether its row's plan meets the goal)."""
    need = {u.name: u.enough for u in answer.network_need.upgrades}
    rows = {n.name: n.plan is not None and n.plan.meets for n in answer.networks}
    return need, rows


def test_the_need_and_the_rows_agree_on_the_default_server_at_one_gpu_each(capsys):
    """The case found: every row misses the $1,000 budget on whole servers; the sentence said
    all three were enough (on today's 1-GPU shapes); now it says none is, on the rows' bill."""
    base = Scenario(devices_per_node=1, micro_batch=8, train_samples=1e8)
    answer = seek(default_profile(), base, 3600.0, 1000.0, max_devices=64)
    need, rows = _verdicts(answer)
    assert answer.network_need.reaches == "bandwidth" and len(need) == 3
    assert need == rows and not any(rows.values())
    assert f"of the named networks ({UPGRADES_BASIS}), " in answer.need_sentence
    assert ": enough" not in answer.need_sentence
    assert main(["goal", "--gpus-per-node", "1", "--batch", "8", "--train-samples", "1e8",
                 "--deadline", "1h", "--budget", "1000", "--max-devices", "64"]) == 0
    out = capsys.readouterr().out
    assert ": enough" not in out and out.count(": not enough") == 3


def test_an_upgrade_enough_on_todays_shapes_is_not_on_its_whole_servers():
    """One GPU of each DGX-1 within 3.9 h for $758: on NDR at today's 1-GPU shapes a plan
    meets it (the old verdict: enough), billed 1 GPU a server; the same plan on NDR's whole
    servers bills 8 times that, past the budget, and NDR's row misses: not enough."""
    profile, base = _dgx1(), Scenario(devices_per_node=1, train_samples=2e8)
    answer = seek(profile, base, 3.9 * 3600, 758.0, max_devices=64)
    ndr = [n for n in network_scenarios(profile, base) if "NDR" in n.upgrade.name][0]
    on_today = seek(ndr.profile, ndr.scenario, 3.9 * 3600, 758.0, max_devices=64).best
    assert on_today is not None and on_today.servers == on_today.devices  # one GPU each
    assert on_today.cost_usd == pytest.approx(
        on_today.devices * USD_PER_V100_HOUR * on_today.time_s / 3600.0, rel=1e-9)
    assert 8 * on_today.cost_usd > 758.0
    need, rows = _verdicts(answer)
    assert need == rows and need[ndr.upgrade.name] is False


def test_an_upgrade_whose_row_meets_is_enough_and_its_bill_is_whole_servers():
    """At $6,100 for 3.9 h HDR's and NDR's rows meet the goal on 64 whole servers: 512 billed
    GPUs x $3.06 x the plan's hours; the need calls both enough."""
    profile, base = _dgx1(), Scenario(devices_per_node=1, train_samples=2e8)
    answer = seek(profile, base, 3.9 * 3600, 6100.0, max_devices=64)
    need, rows = _verdicts(answer)
    assert need == rows and all(rows.values()) and len(rows) == 2
    for net in answer.networks:
        p = net.plan
        assert p.devices == p.servers == 64
        assert p.cost_usd == pytest.approx(512 * USD_PER_V100_HOUR * p.time_s / 3600.0, rel=1e-9)
