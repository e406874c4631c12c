"""The optimizer step: a memory-bound estimate for presets, paid once per step, sharded by ZeRO."""

import pytest

from scalesim import presets
from scalesim.model.compute import optimizer_roofline_s
from scalesim.model.memory import DDP, ZERO1, ZERO3
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario


def test_roofline_counts_one_read_and_write_of_weights_and_state_and_one_gradient_read():
    # BERT-large, fp16 weights and gradients, fp32 master + m + v, on an A100 40GB.
    assert optimizer_roofline_s(336e6, 2, 2, 12, 1555.0) == pytest.approx(336e6 * 30 / 1555e9)


def test_datasheet_bandwidths_by_device_name():
    assert presets.memory_bandwidth_of("Tesla V100-SXM3 32GB (DGX-2)")[0] == 900.0
    assert presets.memory_bandwidth_of("A100-SXM4 80GB")[0] == 2039.0
    assert presets.memory_bandwidth_of("A100 80GB PCIe")[0] == 1935.0
    assert presets.memory_bandwidth_of("a100-sxm4 40gb")[0] == 1555.0
    assert presets.memory_bandwidth_of("MI300X") is None
    for hw in presets.HARDWARE.values():
        assert hw.memory_bandwidth_GBps == presets.memory_bandwidth_of(hw.device_name)[0]


def test_preset_profile_reproduces_its_reference_at_the_reference_batch():
    """BERT-large's reference: 4553/8 seq/s per A100 80GB at micro-batch 256 x 32 micro-steps.
    The per-sample time excludes the optimizer share, and the optimizer is paid per step, so
    the reference setting comes back exactly and smaller steps pay relatively more."""
    profile = profile_from_presets(presets.HARDWARE["dgx-a100"], presets.WORKLOADS["bert-large"])
    wl = profile.workload
    expected_s = optimizer_roofline_s(wl.params, wl.param_bytes_per_param,
                                      wl.grad_bytes_per_param, wl.optimizer_bytes_per_param,
                                      2039.0)
    assert profile.compute.optimizer_step_s == pytest.approx(expected_s)
    (ref,) = predict(profile, Scenario(devices=[1], micro_batch=256, accumulation=32))
    assert ref.samples_per_s == pytest.approx(4553 / 8, rel=1e-9)
    (small,) = predict(profile, Scenario(devices=[1], micro_batch=32, accumulation=1))
    assert small.samples_per_s < ref.samples_per_s * 0.93


@pytest.mark.parametrize("strategy", [ZERO1, ZERO3])
def test_zero_shards_the_optimizer_step(strategy):
    inp = StepInputs(
        devices=8, devices_per_node=8, micro_batch=32, accumulation=2, overhead_s=0.001,
        per_sample_s=0.002, optimizer_step_s=0.08, backward_fraction=2 / 3, params=1e9,
        wire_bytes_per_param=2, intra_latency_s=2e-6, intra_busbw_GBps=230,
        inter_latency_s=6e-6, inter_busbw_GBps=24)
    ddp = evaluate(inp.replace(strategy=DDP))
    sharded = evaluate(inp.replace(strategy=strategy))
    assert float(ddp.compute_s - sharded.compute_s) == pytest.approx(0.08 * (1 - 1 / 8))
