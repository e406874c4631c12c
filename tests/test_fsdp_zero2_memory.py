"""PyTorch FSDP's ZeRO-2 (SHARD_GRAD_OP, bf16 mixed precision) holds 2 + 16/d bytes per
parameter: the whole bf16 parameters kept from forward to backward (2), its fp32 parameter
shard (the master copy, 4/d), its gradient shard cast to that fp32 (4/d) and Adam's m, v (8/d).
The model counted the gradient shard in bf16, 2 + 14/d. Whole gradients accumulated under
``no_sync`` (and a pipeline's) stay bf16; DeepSpeed and ZeRO-3 are unchanged
(``memory.grad_state_bytes_per_param``, docs/model.md §4). Session 46: ZeRO-3's gradient shard is
widened alike, its parameter term 0 (``tests/test_fsdp_shard_memory.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from probe_runner import fsdp_held
from step_fixtures import dp8_states, one_server

from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.memory import DDP, FSDP_SHARD_BYTES, ZERO1, ZERO2, ZERO3, grad_state_bytes_per_param
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.zero_exchange import ONCE_PER_STEP

PSI = 8e9  # an 8B model
_DP = one_server(PSI, blocks=32)


def test_the_rule_by_strategy_framework_and_gradient_share():
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    # bf16 gradients (2 B) over 8 ranks: FSDP's ZeRO-2 and ZeRO-3 shards are widened to fp32
    # (ZeRO-3's since session 46, whose fp32 parameter shard is K's master: 0 + 4/8 + 12/8)
    assert grad_state_bytes_per_param(strategies, FSDP, 8, 2.0).tolist() == [2.0, 2.0, 0.5, 0.5]
    assert grad_state_bytes_per_param(strategies, DEEPSPEED, 8, 2.0).tolist() == [
        2.0, 2.0, 0.25, 0.25]
    # whole gradients (no_sync, a pipeline's FSDP) keep their bf16; one rank shards nothing
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, 8, 2.0, True)) == 2.0
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, 1, 2.0)) == 2.0
    # fp32 gradients are already fp32
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, 8, 4.0)) == 0.5
    assert FSDP_SHARD_BYTES == 4.0


def test_eight_b_at_d8_holds_two_plus_sixteen_over_eight_bytes_per_parameter():
    # by hand, 8e9 parameters on 8 ranks: 2 (bf16 weights, whole) + 4/8 (fp32 gradient shard)
    # + 12/8 (fp32 master shard, Adam m, v) = 4.0 B a parameter, 32.0e9 B
    # (before: 2 + 2/8 + 12/8 = 3.75 B, 30.0e9 B)
    z2 = evaluate(StepInputs(strategy=ZERO2, **_DP))
    assert float(z2.memory_bytes) == pytest.approx(PSI * (2 + 16 / 8), rel=1e-12)
    assert float(z2.memory_bytes) == pytest.approx(32.0e9, rel=1e-12)
    # DeepSpeed's stage 2 keeps 2 + 14/8 of states and, at its step, a bf16 copy and an fp32
    # cast of its gradient partition, 6/8 (more than its two 1e9-B buckets; session 46);
    # FSDP's ZeRO-3 16/8 plus its two gathered blocks
    ds = evaluate(StepInputs(strategy=ZERO2, framework=DEEPSPEED, **_DP))
    assert float(ds.memory_bytes) == pytest.approx(PSI * (2 + 14 / 8 + 6 / 8), rel=1e-12)
    z3 = evaluate(StepInputs(strategy=ZERO3, **_DP))
    assert float(z3.memory_bytes) == pytest.approx(PSI * 16 / 8 + 2 * PSI / 32 * 2, rel=1e-12)
    # under no_sync with k = 4 the whole bf16 gradients replace the shard: 2 + 2 + 12/8
    once = evaluate(StepInputs(strategy=ZERO2, grad_sync=ONCE_PER_STEP,
                               **{**_DP, "accumulation": 4}))
    assert float(once.memory_bytes) == pytest.approx(PSI * (4 + 12 / 8), rel=1e-12)


def test_the_layout_path_holds_the_same_shard():
    x, _, grads, states = dp8_states(2)
    assert grads == pytest.approx(4 / 8, rel=1e-12)
    assert states == pytest.approx(2 + 16 / 8, rel=1e-12)
    psi = float(x.params)
    assert float(evaluate_layouts(x.replace(framework=DEEPSPEED)).grads_bytes) == (
        pytest.approx(2 * psi / 8, rel=1e-12))



@pytest.mark.slow
def test_a_real_fsdp1_shard_grad_op_job_holds_what_the_model_counts():
    """2 gloo ranks of FSDP1 SHARD_GRAD_OP with MixedPrecision(param_dtype=bf16)
    (``tests/fsdp_zero2_probe.py``): rank 0's bytes per parameter of the model are the model's
    terms: 2 whole bf16 parameters, 4/d fp32 parameter shard, 4/d fp32 gradient shard
    (FSDP_SHARD_BYTES), and, under no_sync, 2 of whole bf16 gradients."""
    held = fsdp_held("SHARD_GRAD_OP", "bf16")
    psi, d = held["params"], held["ranks"]

    def per_param(name):
        return held[name]["bytes"] / psi

    assert held["unsharded_params_before_backward"]["dtype"] == "bfloat16"
    assert per_param("unsharded_params_before_backward") == 2.0
    assert held["param_shard"]["dtype"] == held["grad_shard"]["dtype"] == "float32"
    assert per_param("param_shard") == per_param("grad_shard") == FSDP_SHARD_BYTES / d
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, d, 2.0)) == per_param("grad_shard")
    assert held["no_sync_grad"]["dtype"] == "bfloat16"
    assert float(grad_state_bytes_per_param(ZERO2, FSDP, d, 2.0, True)) == per_param(
        "no_sync_grad")
