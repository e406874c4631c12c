"""PyTorch FSDP's ZeRO-2/3 optimizer step sweeps 2 K + 4 bytes per parameter it updates under
bf16 mixed precision: it reads and writes the fp32 parameter shard (K's master copy) and Adam's
m, v and reads the fp32 gradient shard, and touches no bf16 copy; the model's sweep counted
2 w_param + w_grad + 2 K = 2·2 + 2 + 2·12 = 30. One rule for both prediction paths
(``memory.optimizer_sweep_bytes_per_param``, ``optimizer_traffic_ratio``; docs/model.md §1, §4).
"""

from __future__ import annotations

import numpy as np
import pytest
from probe_runner import probe_lines
from test_collective_waits import GPT, HW

from scalesim.model.compute import optimizer_roofline_s
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import (
    DDP,
    ZERO1,
    ZERO2,
    ZERO3,
    optimizer_sweep_bytes_per_param,
    optimizer_traffic_ratio,
)
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

PSI = 8e9  # an 8B model
BW_GBPS = 3350.0  # H100 SXM, GB/s


def test_the_rule_by_strategy_framework_and_precision():
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    # bf16 mixed precision (w 2, g 2, K 12): PyTorch DDP under autocast, 2·12 + 4 = 28;
    # Megatron-Core's ZeRO-1, 2·12 + 4 + its fp32 -> bf16 copy 4 + 2 + its default clip of the
    # fp32 main grads 4 + 4 + 4 = 46; FSDP's ZeRO-2/3, 28 (the loop's clip is not counted)
    assert optimizer_sweep_bytes_per_param(strategies, FSDP, 2.0, 2.0, 12.0).tolist() == [
        28.0, 46.0, 28.0, 28.0]
    # DeepSpeed's stage 0 keeps the model's sweep; stages 1-3 take the fp64 norm (2 + 8 + 8),
    # flatten, cast, unscale, copy: 18 + 52 = 70
    assert optimizer_sweep_bytes_per_param(strategies, DEEPSPEED, 2.0, 2.0, 12.0).tolist() == [
        30.0, 70.0, 70.0, 70.0]
    # fp32 training (w 4, g 4, K 8: m, v, no master): 2·4 + 4 + 2·8 = 28 under the default
    # framework, Megatron's ZeRO-1 28 + its clip 12 = 40
    assert optimizer_sweep_bytes_per_param(strategies, FSDP, 4.0, 4.0, 8.0).tolist() == [
        28.0, 40.0, 28.0, 28.0]
    # a stated bf16 reduction does not change what FSDP's step reads: the shard is cast to fp32
    assert float(optimizer_sweep_bytes_per_param(ZERO3, FSDP, 2.0, 2.0, 12.0, 2.0)) == 28.0
    assert float(optimizer_traffic_ratio(ZERO3, FSDP, 2.0, 2.0, 12.0, ranks=8)) == pytest.approx(
        28 / 30)
    assert float(optimizer_traffic_ratio(ZERO3, DEEPSPEED, 2.0, 2.0, 12.0, ranks=8)) == pytest.approx(
        70 / 30)


def _dp(**changes):
    base = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
                per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
                wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
                inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32, strategy=ZERO3)
    return StepInputs(**{**base, **changes})


def test_eight_b_zero3_on_8_h100s_by_hand():
    """The sweep of all 8e9 parameters on one H100: 8e9 × 30 B / 3,350 GB/s = 71.64 ms (the
    estimate ``optimizer_step_s`` stands for). FSDP's ZeRO-3 on 8 ranks updates 1e9 of them at
    28 B: 1e9 × 28 / 3.35e12 = 8.358 ms (was 1e9 × 30 / 3.35e12 = 8.955 ms); DeepSpeed's stage 3
    at 70 B with its fp64 gradient norm, 20.896 ms (52 B, 15.522 ms before session 47's norm;
    8.955 before session 46's DeepSpeed sweep)."""
    full = float(optimizer_roofline_s(PSI, 2.0, 2.0, 12.0, BW_GBPS))
    assert full == pytest.approx(0.0716418, rel=1e-6)
    no_opt = float(evaluate(_dp()).compute_s)
    fsdp = float(evaluate(_dp(optimizer_step_s=full)).compute_s) - no_opt
    assert fsdp == pytest.approx(1e9 * 28 / 3.35e12, rel=1e-12)
    assert fsdp == pytest.approx(8.358e-3, rel=1e-4)
    ds = float(evaluate(_dp(optimizer_step_s=full, framework=DEEPSPEED)).compute_s) - no_opt
    assert ds == pytest.approx(1e9 * 70 / 3.35e12, rel=1e-12)
    # ZeRO-2 alike; FSDP's ZeRO-1 is Megatron-Core's, 46 B with its default clip
    z2 = float(evaluate(_dp(optimizer_step_s=full, strategy=ZERO2)).compute_s) - no_opt
    assert z2 == pytest.approx(fsdp, rel=1e-12)
    z1 = float(evaluate(_dp(optimizer_step_s=full, strategy=ZERO1)).compute_s) - no_opt
    assert z1 == pytest.approx(1e9 * 46 / 3.35e12, rel=1e-12)


def _layout(**changes):
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=3, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    return LayoutInputs(**{**GPT, **HW, **{**base, **changes}})


def test_the_layout_path_sweeps_the_same_bytes():
    """GPT (1.652e9 parameters) at dp 8 ZeRO-3 on A100s (2,039 GB/s), the estimate (NaN): each
    device sweeps 1.652e9 / 8 × 28 B / 2,039 GB/s = 2.836 ms (DeepSpeed 70 B: 7.089 ms); the
    data-parallel path given the one-device sweep of all parameters agrees."""
    x = _layout()
    no_opt = float(evaluate_layouts(x.replace(optimizer_step_s=0.0)).compute_s)
    fsdp = float(evaluate_layouts(x).compute_s) - no_opt
    assert fsdp == pytest.approx(1.652e9 / 8 * 28 / 2039e9, rel=1e-12)
    assert fsdp == pytest.approx(2.836e-3, rel=1e-3)
    ds = float(evaluate_layouts(x.replace(framework=DEEPSPEED)).compute_s) - float(
        evaluate_layouts(x.replace(framework=DEEPSPEED, optimizer_step_s=0.0)).compute_s)
    assert ds == pytest.approx(1.652e9 / 8 * 70 / 2039e9, rel=1e-12)
    assert ds == pytest.approx(7.089e-3, rel=1e-3)
    for zero in (ZERO2, ZERO3):
        full = float(optimizer_roofline_s(1.652e9, 2.0, 2.0, 12.0, 2039.0))
        dp_path = evaluate(_dp(params=1.652e9, strategy=zero, optimizer_step_s=full))
        dp_zero = evaluate(_dp(params=1.652e9, strategy=zero))
        layout = evaluate_layouts(x.replace(zero=zero))
        layout_zero = evaluate_layouts(x.replace(zero=zero, optimizer_step_s=0.0))
        assert float(dp_path.compute_s - dp_zero.compute_s) == pytest.approx(
            float(layout.compute_s - layout_zero.compute_s), rel=1e-12)



# the FSDP kinds the probe steps and the ZeRO stage of each
KINDS = {"SHARD_GRAD_OP": ZERO2, "FULL_SHARD": ZERO3, "fully_shard": ZERO3}


@pytest.mark.slow
@pytest.mark.parametrize("kind,zero", KINDS.items())
def test_a_real_fsdp_optimizer_step_sweeps_what_the_model_counts(kind, zero):
    """2 gloo ranks, MixedPrecision(param_dtype=bf16), fused AdamW
    (``tests/fsdp_optimizer_probe.py``): rank 0's step reads 16 B and writes 12 B per parameter it
    updates (fp32 shard, fp32 gradient, m, v; shard, m, v), all fp32, 28 B: the model's FSDP
    sweep, not its 30. One launch of the probe steps every kind (``probe_lines`` keeps it)."""
    step = {s["kind"]: s for s in probe_lines("fsdp_optimizer_probe.py", *KINDS)}[kind]
    assert step["updated"] == step["params"] / step["ranks"]
    assert step["param_dtypes"] == step["dtypes"] == ["float32"]
    assert step["read"] / step["updated"] == 16.0
    assert step["written"] / step["updated"] == 12.0
    assert (step["read"] + step["written"]) / step["updated"] == float(
        optimizer_sweep_bytes_per_param(zero, FSDP, 2.0, 2.0, 12.0))
