"""PyTorch FSDP keeps its sharded flat parameter in the parameters' original dtype, fp32, 4/d
bytes per parameter (``_flat_param.py``: ``flat_param.data = flat_param._local_shard``). In
16-bit training that shard is the optimizer's fp32 master copy, one of K's 12 bytes; in fp32
training K (8: Adam's m, v) holds none and the shard comes on top. Two counts were off
(``memory.param_state_bytes_per_param``, docs/model.md §4, session 46):

- ZeRO-3 (FULL_SHARD) under ``no_sync``: whole bf16 gradients, the fp32 shard (K's master) and
  Adam's m, v, 2 + 12/d; the model counted a bf16 parameter shard besides, 2/d + 2 + 12/d.
- fp32 ZeRO-2 (SHARD_GRAD_OP): whole fp32 weights, the fp32 shard beside them, the fp32
  gradient shard and m, v, 4 + 16/d; the model counted 4 + 12/d.
"""

from __future__ import annotations

import numpy as np
import pytest
from probe_runner import fsdp_held
from test_collective_waits import GPT, HW

from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import (
    DDP,
    FSDP_SHARD_BYTES,
    ZERO1,
    ZERO2,
    ZERO3,
    grad_state_bytes_per_param,
    param_state_bytes_per_param,
)
from scalesim.model.sharding import FSDP
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.zero_exchange import ONCE_PER_STEP

PSI = 8e9  # an 8B model in 32 blocks
_DP = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
           per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
           wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
           inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32)
FP32 = dict(param_bytes_per_param=4.0, grad_bytes_per_param=4.0, optimizer_bytes_per_param=8.0)
GATHERED = 2 * PSI / 32 * 2.0  # ZeRO-3's two whole bf16 blocks, 1.0e9 B


def test_the_weights_rule_by_strategy_and_precision():
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    # 16-bit (2 B) over 8 ranks: ZeRO-2 its whole bf16 weights, ZeRO-3 none beside K's master
    assert param_state_bytes_per_param(strategies, FSDP, 8, 2.0).tolist() == [2.0, 2.0, 2.0, 0.0]
    # fp32 (4 B): the fp32 shard beside ZeRO-2's whole weights; ZeRO-3's shard alone
    assert param_state_bytes_per_param(strategies, FSDP, 8, 4.0).tolist() == [4.0, 4.0, 4.5, 0.5]
    # one rank: NO_SHARD, the weights themselves
    assert float(param_state_bytes_per_param(ZERO3, FSDP, 1, 2.0)) == 2.0
    assert float(param_state_bytes_per_param(ZERO2, FSDP, 1, 4.0)) == 4.0


def test_zero3_no_sync_8b_at_d8_by_hand():
    """8e9 parameters at d = 8, k = 4, bf16 mixed precision, ZeRO-3 (FSDP) under no_sync:
    8e9 x (0 + 2 + 12/8) = 28.0e9 B of states + 1.0e9 B of two gathered blocks = 29.0e9 B
    (was 8e9 x (2/8 + 2 + 12/8) + 1.0e9 = 31.0e9 B: a bf16 parameter shard FSDP does not hold).
    Every micro-step reducing it keeps 8e9 x (0 + 4/8 + 12/8) + 1.0e9 = 17.0e9 B, as before."""
    once = evaluate(StepInputs(strategy=ZERO3, grad_sync=ONCE_PER_STEP,
                               **{**_DP, "accumulation": 4}))
    assert float(once.memory_bytes) == pytest.approx(29.0e9, rel=1e-12)
    every = evaluate(StepInputs(strategy=ZERO3, **{**_DP, "accumulation": 4}))
    assert float(every.memory_bytes) == pytest.approx(17.0e9, rel=1e-12)


def test_fp32_zero2_8b_at_d8_by_hand():
    """8e9 parameters at d = 8 in fp32 (w = 4, K = 8), ZeRO-2 (FSDP SHARD_GRAD_OP):
    8e9 x (4 + 4/8 + 4/8 + 8/8) = 48.0e9 B (was 8e9 x (4 + 4/8 + 8/8) = 44.0e9 B: the fp32
    parameter shard beside the whole weights left out). fp32 ZeRO-3 keeps
    8e9 x (4/8 + 4/8 + 8/8) + 2 x 8e9/32 x 4 = 18.0e9 B, as before."""
    z2 = evaluate(StepInputs(strategy=ZERO2, **{**_DP, **FP32}))
    assert float(z2.memory_bytes) == pytest.approx(48.0e9, rel=1e-12)
    z3 = evaluate(StepInputs(strategy=ZERO3, **{**_DP, **FP32}))
    assert float(z3.memory_bytes) == pytest.approx(16.0e9 + 2 * PSI / 32 * 4, rel=1e-12)
    # under no_sync (k = 4) ZeRO-2 holds whole fp32 gradients for the shard: 4 + 4/8 + 4 + 8/8
    once = evaluate(StepInputs(strategy=ZERO2, grad_sync=ONCE_PER_STEP,
                               **{**_DP, **FP32, "accumulation": 4}))
    assert float(once.memory_bytes) == pytest.approx(PSI * 9.5, rel=1e-12)


def _layout(**changes):
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=2, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    return LayoutInputs(**{**GPT, **HW, **{**base, **changes}})


def test_the_layout_path_counts_the_same_weights():
    psi = float(_layout().params)
    z2 = evaluate_layouts(_layout(**FP32))
    assert float(z2.weights_bytes) == pytest.approx(psi * (4 + 4 / 8), rel=1e-12)
    assert float(z2.grads_bytes + z2.optimizer_bytes) == pytest.approx(psi * 12 / 8, rel=1e-12)
    z3 = evaluate_layouts(_layout(zero=3, global_batch=32).replace(grad_sync=ONCE_PER_STEP))
    assert float(z3.weights_bytes) == 0.0
    assert float(z3.grads_bytes + z3.optimizer_bytes) == pytest.approx(psi * (2 + 12 / 8),
                                                                        rel=1e-12)



@pytest.mark.slow
def test_a_real_fsdp1_full_shard_no_sync_job_holds_what_the_model_counts():
    """FSDP1 FULL_SHARD, bf16 mixed precision, 2 gloo ranks: after a no_sync backward rank 0
    holds the whole bf16 gradient (2 B a parameter), its fp32 shard (4/d, K's master) and no
    unsharded weights; the model's weights term is 0 and its gradients 2."""
    held = fsdp_held("FULL_SHARD", "bf16")
    psi, d = held["params"], held["ranks"]
    assert held["no_sync_grad"]["dtype"] == "bfloat16"
    assert held["no_sync_grad"]["bytes"] / psi == 2.0
    assert held["unsharded_params_after_no_sync"]["bytes"] == 0
    assert held["param_shard_after_no_sync"]["dtype"] == "float32"
    assert held["param_shard_after_no_sync"]["bytes"] / psi == FSDP_SHARD_BYTES / d
    assert float(param_state_bytes_per_param(ZERO3, FSDP, d, 2.0)) == 0.0
    assert float(grad_state_bytes_per_param(ZERO3, FSDP, d, 2.0, True)) == 2.0


@pytest.mark.slow
def test_a_real_fsdp1_fp32_shard_grad_op_job_holds_what_the_model_counts():
    """FSDP1 SHARD_GRAD_OP without mixed precision, 2 gloo ranks: rank 0 holds the whole fp32
    weights (4 B a parameter) and, in its own storage, the fp32 shard (4/d) beside them, and an
    fp32 gradient shard (4/d): the model's 4 + 4/d and 4/d."""
    held = fsdp_held("SHARD_GRAD_OP", "fp32")
    psi, d = held["params"], held["ranks"]
    whole, shard = held["unsharded_params_before_backward"], held["param_shard"]
    assert whole["dtype"] == shard["dtype"] == held["grad_shard"]["dtype"] == "float32"
    assert float(param_state_bytes_per_param(ZERO2, FSDP, d, 4.0)) == (
        (whole["bytes"] + shard["bytes"]) / psi)
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, d, 4.0)) == (
        held["grad_shard"]["bytes"] / psi)
