"""PyTorch DDP copies every gradient into its bucket in backward and back after the bucket's
all-reduce (``gradient_as_bucket_view=False``, the default): 4 w_r bytes per parameter per step
on more than one rank, w_r the bucket's dtype (fp32 under autocast), paid on the compute stream
at the memory bandwidth the optimizer sweep stands for (``memory.ddp_bucket_copy_bytes_per_param``,
docs/model.md §4 "Their copies, in time")."""

from __future__ import annotations

import numpy as np
import pytest
from probe_runner import run_probe
from test_collective_waits import GPT, HW

from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import (
    DDP,
    ZERO1,
    ZERO2,
    ZERO3,
    ddp_bucket_copy_bytes_per_param,
    optimizer_traffic_ratio,
    optimizer_with_copies_s,
)
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

PSI = 1e9  # parameters
SWEEP_S = 0.030  # the estimate: 1e9 × 30 B (2·2 + 2 + 2·12, bf16 Adam) at 1,000 GB/s


def test_the_bytes_by_strategy_framework_ranks_and_dtype():
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    # autocast: fp32 parameters, so fp32 buckets: 2 copies × (read 4 + write 4) = 16
    assert ddp_bucket_copy_bytes_per_param(strategies, FSDP, 2.0, ranks=8).tolist() == [
        16.0, 0.0, 0.0, 0.0]
    # one rank runs no DDP; DeepSpeed's stage 0 and a split layout (Megatron-Core's DDP,
    # whose backward hook adds into main_grad) make no such copies
    assert float(ddp_bucket_copy_bytes_per_param(DDP, FSDP, 2.0, ranks=1)) == 0.0
    assert float(ddp_bucket_copy_bytes_per_param(DDP, DEEPSPEED, 2.0, ranks=8)) == 0.0
    assert float(ddp_bucket_copy_bytes_per_param(DDP, FSDP, 2.0, split=True, ranks=8)) == 0.0
    # a model cast to bf16 with a stated bf16 reduction: bf16 buckets, 4 × 2 = 8
    assert float(ddp_bucket_copy_bytes_per_param(DDP, FSDP, 2.0, 2.0, ranks=8)) == 8.0
    # the ratio: (28 + 16) / 30 on 8 ranks, 28 / 30 on one
    assert float(optimizer_traffic_ratio(DDP, FSDP, 2.0, 2.0, 12.0, ranks=8)) == pytest.approx(
        44 / 30, rel=1e-15)
    assert float(optimizer_traffic_ratio(DDP, FSDP, 2.0, 2.0, 12.0, ranks=1)) == pytest.approx(
        28 / 30, rel=1e-15)


def _dp(**changes):
    base = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=4, overhead_s=0.0,
                per_sample_s=0.1, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
                wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
                inter_latency_s=1e-6, inter_busbw_GBps=100.0, strategy=DDP)
    return StepInputs(**{**base, **changes})


def _paid_s(**changes):
    """What the optimizer step (30 ms unless changed) and the copies add to the step's compute,
    s: against the step without either (no optimizer, one device's worth of nothing)."""
    changes = {"optimizer_step_s": SWEEP_S, **changes}
    with_opt = float(evaluate(_dp(**changes)).compute_s)
    bare = {**changes, "optimizer_step_s": 0.0, "memory_bandwidth_GBps": np.inf}
    return with_opt - float(evaluate(_dp(**bare)).compute_s)


def test_the_step_pays_them_once_per_step_on_more_than_one_device():
    """1e9 parameters, the 30 B sweep in 30 ms: one device sweeps DDP's 28 B in 28 ms; 8 devices
    add the 16 B of copies, 44 ms, once per step whatever the accumulation (4 here: DDP's
    ``no_sync`` micro-steps run no hooks); ZeRO-1 on 8 (Megatron-Core's 46 B, sharded by 8)
    5.75 ms, no copies."""
    assert _paid_s(devices=1) == pytest.approx(0.028, rel=1e-12)
    assert _paid_s() == pytest.approx(0.044, rel=1e-12)
    assert _paid_s(accumulation=1) == pytest.approx(0.044, rel=1e-12)
    assert _paid_s(strategy=ZERO1) == pytest.approx(0.00575, rel=1e-12)
    assert _paid_s(strategy=ZERO2) == pytest.approx(0.028 / 8, rel=1e-12)


def _layout(**changes):
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=0, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    return LayoutInputs(**{**GPT, **HW, **{**base, **changes}})


def _layout_paid_s(x):
    """What the optimizer step and the copies add to a layout's compute, s: against the same
    layout on one data-parallel rank (the same work a device, no copies) without an optimizer."""
    bare = x.replace(optimizer_step_s=0.0, dp=1, global_batch=x.global_batch // x.dp)
    return float(evaluate_layouts(x).compute_s) - float(evaluate_layouts(bare).compute_s)


def test_the_layout_path_pays_them_on_an_unsplit_data_parallel_group_only():
    """GPT (1.652e9 parameters) on A100s (2,039 GB/s), DDP at dp 8: (28 + 16) B ×
    1.652e9 / 2,039 GB/s = 35.65 ms; at dp 1, 28 B, 22.69 ms; split (tp 2) Megatron-Core's DDP
    sweeps its 46 B of half the parameters (18.63 ms) and copies nothing."""
    assert _layout_paid_s(_layout()) == pytest.approx(1.652e9 * 44 / 2039e9, rel=1e-12)
    assert _layout_paid_s(_layout()) == pytest.approx(35.65e-3, rel=1e-3)
    one = _layout(dp=1, global_batch=1)
    assert _layout_paid_s(one) == pytest.approx(1.652e9 * 28 / 2039e9, rel=1e-12)
    split = _layout(tp=2, dp=4, global_batch=4)
    assert _layout_paid_s(split) == pytest.approx(1.652e9 / 2 * 46 / 2039e9, rel=1e-12)


@pytest.mark.slow
def test_a_real_ddp_step_copies_what_the_model_counts():
    """2 gloo ranks (``tests/ddp_copy_probe.py``), the third backward after
    ``zero_grad(set_to_none=True)``: DDP under ``torch.autocast(bfloat16)`` copies each of the
    8,192 fp32 gradients into its bucket and back, 2 ops a bucket, 16 B a parameter
    (``ddp_bucket_copy_bytes_per_param``: 4 x 4); a model cast to bf16, 8 B (4 x 2); the model
    alone none. ``gradient_as_bucket_view=True`` still copies into the bucket once (the gradient
    set to None is made anew, then pointed at the bucket) but not back: 8 B, the option the model
    does not take (docs/model.md, "What the model does not capture")."""
    copies = run_probe("ddp_copy_probe.py")
    params = copies["params"]
    assert copies["alone"] == {"bytes": 0, "ops": 0}
    assert copies["ddp"]["bytes"] == params * float(
        ddp_bucket_copy_bytes_per_param(DDP, FSDP, 2.0, ranks=copies["ranks"]))
    assert copies["ddp"]["bytes"] == 16 * params
    assert copies["ddp_bf16_model"]["bytes"] == params * float(
        ddp_bucket_copy_bytes_per_param(DDP, FSDP, 2.0, 2.0, ranks=copies["ranks"]))
    assert copies["ddp_bf16_model"]["bytes"] == 8 * params
    assert copies["ddp_bucket_view"]["bytes"] == 8 * params


def test_a_known_bandwidth_prices_them_whatever_the_optimizer_measured():
    """Given the device's memory bandwidth the copies run at it, not at the optimizer's rate:
    an optimizer step measured at 90 ms (3x the 30 B sweep at 1,000 GB/s: an unfused one) costs
    90 × 28/30 = 84 ms on one device and 84 + 1e9 × 16 B / 1,000 GB/s = 100 ms on 8 (at its
    own rate the copies would have taken 48 ms); at 2,000 GB/s 84 + 8 = 92 ms. The layout path
    alike: GPT 1.7B at dp 8 with a measured step of 100 ms (of the 30 B sweep) pays 100 × 28/30
    and copies 1.652e9 × 16 B / 2,039 GB/s = 12.96 ms."""
    measured = 3 * SWEEP_S
    assert _paid_s(devices=1, optimizer_step_s=measured, memory_bandwidth_GBps=1000.0) == (
        pytest.approx(0.084, rel=1e-12))
    assert _paid_s(optimizer_step_s=measured, memory_bandwidth_GBps=1000.0) == pytest.approx(
        0.100, rel=1e-12)
    assert _paid_s(optimizer_step_s=measured, memory_bandwidth_GBps=2000.0) == pytest.approx(
        0.092, rel=1e-12)
    assert _paid_s(optimizer_step_s=measured) == pytest.approx(0.084 + 0.048, rel=1e-12)
    x = _layout(optimizer_step_s=0.100)
    sweep = 0.100 * 28 / 30  # the measured step of all parameters at DDP's fp32 sweep
    assert _layout_paid_s(x) == pytest.approx(sweep + 1.652e9 * 16 / 2039e9, rel=1e-12)


def test_one_rule_prices_them_at_a_known_bandwidth_else_at_the_sweeps_rate():
    # fp32 Adam, 1e9 parameters: the sweep is 2·4 + 4 + 2·8 = 28 B a parameter, the copies 16 B
    # (2 copies × read 4 + write 4). A 10 ms update on one rank: no copies. On 8 ranks at a known
    # 1,000 GB/s: 10 ms + 16e9 B / 1e12 B/s = 26 ms. Bandwidth not known (NaN): the copies at the
    # sweep's rate, 10 ms × (28 + 16) / 28 = 15.714 ms (memory.optimizer_with_copies_s).
    got = optimizer_with_copies_s(0.010, DDP, FSDP, 4.0, 4.0, 8.0, ranks=np.array([1.0, 8.0, 8.0]),
                                  params=1e9, memory_bandwidth_GBps=np.array([1e3, 1e3, np.nan]))
    assert got == pytest.approx([0.010, 0.026, 0.010 * 44.0 / 28.0], rel=1e-12)
    # ZeRO-2 makes none of DDP's copies: its update only, at either rate
    zero2 = optimizer_with_copies_s(0.010, ZERO2, FSDP, 4.0, 4.0, 8.0, ranks=8.0, params=1e9,
                                    memory_bandwidth_GBps=np.array([1e3, np.nan]))
    assert zero2[0] == zero2[1] == pytest.approx(
        0.010 * float(optimizer_traffic_ratio(ZERO2, FSDP, 4.0, 4.0, 8.0, ranks=1)), rel=1e-12)
