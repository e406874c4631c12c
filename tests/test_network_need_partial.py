"""Session 41: the least network that reaches a goal, on part of each server, against the named
upgrades as the job gets them.

``network_need`` found the least whole-server busbw on today's NIC count (as ``--inter-busbw``
reads it) and said only that: one GPU of each DGX-1 (4 EDR NICs for 8 GPUs: its GPU reaches
ceil(1 x 4 / 8) = 1 NIC, a quarter) needed 107 GB/s a server at 2 devices, 26.6 reached, beside
named upgrades listed at their whole figures: HDR's 192 looked enough, yet its one GPU reaches
1 of HDR's 8 NICs, 192 / 8 = 24. The need now says what the job's devices must reach and the
whole server's on today's NICs, and each named network by what it gives the job, 'enough' where
the goal's own test passes on its run; that verdict is checked here on predict and goal run on
the upgrade itself (``network_scenario``: its own link and NICs).
Figures by hand: DGX-1 4 x 100 Gb/s x 0.96 = 48 GB/s; HDR 8 x 200 x 0.96 = 192, one NIC of 8
= 24; NDR 8 x 400 x 0.96 = 384, one of 8 = 48; EFA 4 x 100 x 0.96 = 48.
"""

from __future__ import annotations

import pytest

from scalesim.decision import decide, network_enough, network_enough_words
from scalesim.goal import seek
from scalesim.network_need import REL_TOL, UNLIMITED_BUSBW_GBps
from scalesim.network_upgrades import network_scenarios
from scalesim.predict import predict
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import default_profile, profile_from_presets
from scalesim.schemas import Scenario

HDR = "8 x 200 Gb/s HDR InfiniBand (as in a DGX A100)"
NDR = "8 x 400 Gb/s NDR InfiniBand (as in a DGX H100)"
EFA = "4 x 100 Gb/s EFA (AWS p4d.24xlarge)"


def _dgx1():
    return profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))


def _step(profile, scenario, devices):
    return predict(profile, scenario.model_copy(update={"devices": [devices]}))[0].step_time_s


def _verdicts_agree_with_predict(profile, scenario, devices):
    """Each named network's verdict against decide's test run on the upgrade itself: its step
    within the model's error of today's profile's step at an unlimited bandwidth."""
    error = decide(profile, scenario, devices).model_error
    need = network_enough(profile, scenario, devices, error)
    limit = (1 + error) * _step(profile, scenario.model_copy(
        update={"inter_busbw_GBps": UNLIMITED_BUSBW_GBps}), devices)
    nets = network_scenarios(profile, scenario)
    assert [u.name for u in need.upgrades] == [n.upgrade.name for n in nets]
    for u, net in zip(need.upgrades, nets, strict=True):
        assert u.enough == (_step(net.profile, net.scenario, devices) <= limit), u.name
    return need, error


def test_one_gpu_of_each_dgx1_needs_a_quarter_of_the_whole_figure_and_hdr_falls_short():
    profile, scenario = _dgx1(), Scenario(devices=[2], devices_per_node=1)
    need, error = _verdicts_agree_with_predict(profile, scenario, 2)
    assert need.reaches == "bandwidth" and need.nic_share == 0.25  # 1 NIC of 4
    assert need.reached_GBps == pytest.approx(need.busbw_GBps / 4, rel=1e-12)
    # the whole figure is below HDR's 192 (it looked enough), the job's above HDR's 24
    assert 24.0 < need.reached_GBps < 48.0 and need.busbw_GBps < 192.0
    by = {u.name: u for u in need.upgrades}
    assert by[HDR].reached_GBps == pytest.approx(24.0) and not by[HDR].enough
    assert by[NDR].reached_GBps == pytest.approx(48.0) and by[NDR].enough
    # the whole figure is what --inter-busbw on today's 4 NICs means: it reaches the goal there,
    # not 1 % below (the bisection stops 0.1 % above the threshold)
    limit = (1 + error) * _step(profile, scenario.model_copy(
        update={"inter_busbw_GBps": UNLIMITED_BUSBW_GBps}), 2)
    at = scenario.model_copy(update={"inter_busbw_GBps": need.busbw_GBps})
    assert _step(profile, at, 2) <= limit
    below = scenario.model_copy(update={"inter_busbw_GBps": need.busbw_GBps / (1 + 10 * REL_TOL)})
    assert _step(profile, below, 2) > limit
    words = network_enough_words(profile, scenario, 2, error)
    assert words in decide(profile, scenario, 2).notes
    assert (f"{need.reached_GBps:.3g} GB/s busbw for the job's 1 of 8 GPUs per server (whole "
            f"server {need.busbw_GBps:.0f}) on today's 4 NICs (") in words
    assert "; today 12 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 48); " in words
    assert words.endswith(
        f"of the named networks, {HDR} gives 24 GB/s busbw for the job's 1 of 8 GPUs per server "
        f"(whole server 192) at 6 us a hop: not enough; {NDR} gives 48 GB/s busbw for the job's "
        "1 of 8 GPUs per server (whole server 384) at 6 us a hop: enough")


def test_whole_dgx1_servers_keep_the_whole_figure_and_every_upgrade_is_enough():
    profile, scenario = _dgx1(), Scenario(devices=[16])
    need, _ = _verdicts_agree_with_predict(profile, scenario, 16)
    assert need.nic_share == 1.0 and need.reached_GBps == need.busbw_GBps
    assert need.busbw_GBps < 192.0 and all(u.enough for u in need.upgrades)
    assert "for the job's" not in need.words
    assert need.words.endswith(f"{HDR} gives 192 GB/s busbw at 6 us a hop: enough; {NDR} gives "
                               "384 GB/s busbw at 6 us a hop: enough")


def test_the_default_a2_highgpu_needs_40_and_efa_is_enough():
    """16 A100 on two a2-highgpu-8g over one 100 Gb/s NIC: 41.4 GB/s busbw, EFA's
    48 (4 x 100 x 0.96) at 6 us is enough; one GPU of each server reaches all of today's one
    NIC (share 1) but one of EFA's four, 12: not enough there. 40.3 before session 56: the step
    may exceed the unlimited network's by the model's error, 0.030 x 64.43 ms = 1.933 ms then;
    DDP's bucket copies (336e6 x 8 B / 1,555 GB/s = 1.73 ms) make that step 66.15 ms and the
    validation's median 2.8 %, so 0.028 x 66.15 = 1.852 ms: a little less exchange may show."""
    profile = default_profile()
    need, _ = _verdicts_agree_with_predict(profile, Scenario(devices=[16]), 16)
    assert f"{need.busbw_GBps:.3g}" == "41.4"
    assert {u.name: u.enough for u in need.upgrades}[EFA]
    one, _ = _verdicts_agree_with_predict(profile, Scenario(devices=[16], devices_per_node=1), 16)
    assert one.nic_share == 1.0
    efa = {u.name: u for u in one.upgrades}[EFA]
    assert efa.reached_GBps == pytest.approx(12.0) and not efa.enough


def test_goals_verdicts_agree_with_goal_run_on_each_upgrade():
    """One GPU of each DGX-1, 2e8 samples within 3.9 h for $758 (no plan on today's 48 GB/s
    meets it): goal's need names the job's busbw (between HDR's 24 and NDR's 48 for the job);
    each named network is judged on its own row's bill (session 42: HDR and NDR are fitted to
    whole servers, billed 8 GPUs a server where today's 1-GPU p3.2xlarge shapes bill 1), so
    neither is enough at $758, as their rows say."""
    profile, base = _dgx1(), Scenario(devices_per_node=1, train_samples=2e8)
    answer = seek(profile, base, 3.9 * 3600, 758, max_devices=64)
    need = answer.network_need
    assert answer.best is None and need.reaches == "bandwidth" and need.nic_share == 0.25
    # HDR's whole 192 is above the whole figure (it looked enough); its 24 below the job's
    assert need.busbw_GBps < 192.0 and 24.0 < need.reached_GBps < 48.0
    assert answer.to_dict()["network_need"]["reached_GBps"] == pytest.approx(
        need.busbw_GBps / 4, rel=1e-12)
    by = {u.name: u for u in need.upgrades}
    rows = {n.name: n.plan.meets for n in answer.networks}
    assert {name: u.enough for name, u in by.items()} == rows == {HDR: False, NDR: False}
    assert "for the job's 1 of 8 GPUs per server (whole server" in answer.need_sentence
    assert f"{HDR} gives 24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server " \
        "192) at 6 us a hop: not enough" in answer.need_sentence
