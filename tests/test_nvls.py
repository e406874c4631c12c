"""NVLS (NVLink SHARP) all-reduces in the step model and predictions: hand-computed values."""

import numpy as np
import pytest

from scalesim.model import collectives as coll
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict, scenario_inputs
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario

MIB = 2**20
# DDP on 8 H100 of one server, 101 MiB of 16-bit gradients (wire 2 B), every bucket after
# backward (overlap off), no contention or stragglers. DDP all-reduces fp32 gradients since
# session 45: 4 B x 101 MiB / 2 parameters = 202 MiB, a 1 MiB first bucket, eight of 25 MiB and
# a last one of 1 MiB (ten buckets; the 2-byte all-reduce had 101 MiB in five).
H100_DDP = dict(
    devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
    per_sample_s=0.1, optimizer_step_s=0.0, backward_fraction=2 / 3, params=101 * MIB / 2,
    wire_bytes_per_param=2.0, intra_latency_s=2e-6, intra_busbw_GBps=370.0,
    inter_latency_s=6e-6, inter_busbw_GBps=192.0, overlap=False,
)


def test_ddp_buckets_all_reduce_with_nvls_by_hand():
    # Each bucket: NVLS 25 us + 2*7/8 * S / 480 GB/s, below the ring's 14 * 2 us + 1.75 S/370
    # (25 MiB: 120.6 vs 152.0 us; 1 MiB: 28.8 vs 33.0 us), so all ten go over NVLS:
    # 10 * 25 us + 1.75 * 202 MiB / 480e9 = 1.0222 ms.
    nvls = evaluate(StepInputs(nvls_busbw_ratio=480.0 / 370.0, **H100_DDP))
    assert float(nvls.exposed_comm_s) == pytest.approx(10 * 25e-6 + 1.75 * 202 * MIB / 480e9)
    # without NVLS the same buckets take the ring: 10 * 28 us + 1.75 * 202 MiB / 370e9
    ring = evaluate(StepInputs(**H100_DDP))
    assert float(ring.exposed_comm_s) == pytest.approx(10 * 28e-6 + 1.75 * 202 * MIB / 370e9)
    # reduce-scatter and all-gather stay rings: FSDP ZeRO-2 is unchanged by NVLS
    zero2 = dict(H100_DDP, strategy=2)
    assert float(evaluate(StepInputs(nvls_busbw_ratio=1.3, **zero2)).exposed_comm_s) == (
        pytest.approx(float(evaluate(StepInputs(**zero2)).exposed_comm_s)))


def test_ratio_scales_with_an_intra_busbw_override():
    # the ratio multiplies whatever intra busbw is used: 185 GB/s ring -> 240 GB/s NVLS; every
    # bucket still goes over NVLS (25 MiB: 216 vs 276 us; 1 MiB: 32.6 vs 37.9 us), the ten
    # buckets of 202 MiB of fp32 gradients (H100_DDP)
    inp = StepInputs(nvls_busbw_ratio=480.0 / 370.0, **dict(H100_DDP, intra_busbw_GBps=185.0))
    assert float(evaluate(inp).exposed_comm_s) == pytest.approx(
        10 * 25e-6 + 1.75 * 202 * MIB / 240e9)


def test_predict_on_dgx_h100_uses_nvls_and_a100_does_not():
    h100 = profile_from_presets(get_hardware("dgx-h100"), get_workload("bert-large"))
    inputs, _ = scenario_inputs(h100, Scenario(devices=[8, 16]))
    assert np.all(np.asarray(inputs.nvls_busbw_ratio) == pytest.approx(480.0 / 370.0))
    a100 = profile_from_presets(get_hardware("dgx-a100"), get_workload("bert-large"))
    assert np.isnan(scenario_inputs(a100, Scenario(devices=[8]))[0].nvls_busbw_ratio)
    # the predicted total all-reduce time on one H100 server is what NVLS gives per bucket
    row = predict(h100, Scenario(devices=[8], overlap=False))[0]
    wl = h100.workload
    total = wl.params * wl.wire_bytes_per_param
    inp = inputs.replace(devices=8, devices_per_node=8)
    no_nvls = evaluate(inp.replace(nvls_busbw_ratio=np.nan, overlap=False))
    assert row.comm_total_s < float(np.ravel(no_nvls.comm_total_s)[0])
    # its bandwidth part is at least 1.75 * S / 480 GB/s and below the ring's 1.75 * S / 370
    assert 1.75 * total / 480e9 < row.comm_total_s < 1.75 * total / 370e9 + 1e-3
    assert coll.NVLS_LATENCY_S == 25e-6
