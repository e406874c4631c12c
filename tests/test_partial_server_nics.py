"""A job that uses fewer GPUs of each server than it holds reaches only their NICs: the preset's
inter-server busbw (all NICs of a whole server) is scaled to the NICs of the GPUs used
(``presets.partial_server_inter_busbw_GBps``, docs/model.md §2), on both prediction paths, in
a sweep axis and an override alike (each a whole server's figure, as the hardware's)."""

from __future__ import annotations

import pytest

from scalesim.predict import predict, scenario_inputs
from scalesim.presets import get_hardware, get_workload, partial_server_inter_busbw_GBps
from scalesim.profiles import profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario


def _profile(hardware: str, workload: str = "bert-large"):
    return profile_from_presets(get_hardware(hardware), get_workload(workload))


def test_nic_share_by_hand():
    a100 = get_hardware("dgx-a100").inter_node  # 8 x 200 Gb/s, 192 GB/s busbw for 8 GPUs
    assert [float(partial_server_inter_busbw_GBps(a100, g, 8)) for g in (1, 2, 4, 8)] == \
        pytest.approx([24.0, 48.0, 96.0, 192.0])
    v100 = get_hardware("dgx1-v100").inter_node  # 4 x 100 Gb/s (one NIC per two GPUs), 48 GB/s
    assert [float(partial_server_inter_busbw_GBps(v100, g, 8)) for g in (1, 2, 3, 4, 8)] == \
        pytest.approx([12.0, 12.0, 24.0, 24.0, 48.0])
    one_nic = get_hardware("a2-highgpu-8g").inter_node  # one 100 Gb/s NIC: shared by any count
    assert float(partial_server_inter_busbw_GBps(one_nic, 1, 8)) == one_nic.busbw_GBps
    # larger servers than the hardware's (a user's --gpus-per-node 16): the whole figure
    assert float(partial_server_inter_busbw_GBps(a100, 16, 8)) == 192.0


def test_one_gpu_per_dgx_a100_gets_one_nic():
    profile = _profile("dgx-a100")
    scenario = Scenario(devices=[4], devices_per_node=1)
    inputs, _ = scenario_inputs(profile, scenario)
    assert float(inputs.inter_busbw_GBps) == pytest.approx(24.0)  # was 192: all 8 NICs
    # the prediction is the one with 24 GB/s given, not with the whole server's 192
    scaled = predict(profile, scenario)[0]
    whole = predict(profile, Scenario(devices=[4], devices_per_node=1, inter_busbw_GBps=192.0
                                      * 8))[0]  # 8 x the figure: one NIC of it is 192
    assert scaled.exposed_comm_s > whole.exposed_comm_s
    # an override replaces the whole server's figure, so it is scaled alike: 100 / 8
    inputs, _ = scenario_inputs(profile, scenario.model_copy(update={"inter_busbw_GBps": 100.0}))
    assert float(inputs.inter_busbw_GBps) == pytest.approx(12.5)
    # whole servers: unchanged
    inputs, _ = scenario_inputs(profile, Scenario(devices=[16]))
    assert float(inputs.inter_busbw_GBps) == 192.0


def test_the_layout_path_and_the_sweep_scale_alike():
    from scalesim.presets import transformer_workload
    from scalesim.sweep import sweep

    hw = get_hardware("dgx-a100")
    profile = profile_from_presets(hw, transformer_workload("gpt-1.7b"))
    scenario = Scenario(devices=[4], devices_per_node=2, strategy="zero3", micro_batch=1)
    scaled = predict(profile, scenario)[0]
    # 2 GPUs of 8 reach 2 of the 8 NICs: 48 GB/s, as a whole server of 4 x 192 would give
    whole = hw.model_copy(update={"inter_node": hw.inter_node.model_copy(
        update={"busbw_GBps": 48.0, "nics_per_node": None})})
    given = predict(profile_from_presets(whole, transformer_workload("gpt-1.7b")), scenario)[0]
    assert scaled.dp == 4 and scaled.nodes == 2
    assert scaled.step_time_s == pytest.approx(given.step_time_s, rel=1e-12)
    # a sweep axis of the whole-server figure 192 is the prediction's
    res = sweep(profile, scenario, {"inter_busbw_GBps": [192.0]})
    assert float(res.columns["step_time_s"][0]) == pytest.approx(scaled.step_time_s, rel=1e-12)
    counted = profile_from_presets(hw, get_workload("bert-large"))
    res = sweep(counted, Scenario(devices=[4], devices_per_node=1), {"inter_busbw_GBps": [192.0]})
    assert float(res.columns["step_time_s"][0]) == pytest.approx(
        predict(counted, Scenario(devices=[4], devices_per_node=1))[0].step_time_s, rel=1e-12)


def test_the_faster_network_remedy_says_what_the_job_reaches_and_the_whole_server():
    # the remedy doubles a whole server's figure, as the hardware's: 192 -> 384 (2x; the 8 x 200
    # Gb/s upgrade is no faster), which one GPU per server reaches as 24 -> 48 GB/s; the title
    # says the job's figures first (session 41; was '(192 -> 384 GB/s busbw)' alone)
    profile = _profile("dgx-a100")
    scenario = Scenario(devices=[4], devices_per_node=1)
    now, results = rank_remedies(profile, scenario, 4)
    row = next(r for r in results if r.key == "interconnect")
    assert row.title.endswith("2x the network (24 -> 48 GB/s busbw for the job's 1 of 8 GPUs "
                              "per server (whole server 192 -> 384))")
    after = predict(profile, row.scenario)[0]
    inputs, _ = scenario_inputs(profile, row.scenario)
    assert float(inputs.inter_busbw_GBps) == pytest.approx(48.0)
    assert row.gain == pytest.approx(after.samples_per_s / now.samples_per_s - 1.0, rel=1e-12)
