"""FSDP2 under ``no_sync`` (``set_requires_gradient_sync(False)``, grad_sync 'once-per-step')
accumulates the unsharded gradients of the skipped micro-steps in its reduce dtype: PyTorch
2.13 ``_fully_shard/_fsdp_param_group.py`` ``post_backward`` (``if not self.reduce_grads``:
reshard, then ``to_accumulated_grad_if_needed`` for every parameter) and ``_fsdp_param.py``
``to_accumulated_grad_if_needed`` (``unsharded_accumulated_grad = unsharded_grad.to(
self.reduce_dtype)``; ``init_dtype_attrs`` sets ``reduce_dtype`` None where it equals
``param_dtype``). So with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=float32)``
(a stated 4-byte reduction) the whole gradients take 4 bytes a parameter, not 2
(``memory.unreduced_fsdp_grad_bytes_per_param``, both paths; docs/model.md §4, session 47)."""

from __future__ import annotations

import pytest
from test_collective_waits import GPT, HW

from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import ZERO2, ZERO3
from scalesim.model.sharding import EVERY_MICRO_STEP, FSDP, ONCE_PER_STEP
from scalesim.model.step import StepInputs, evaluate

PSI = 8e9  # an 8B model in 32 blocks, on 8 ranks, 4 micro-steps
_DP = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=4, overhead_s=0.0,
           per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
           wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
           inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32, framework=FSDP)


def _memory(strategy, sync, **changes):
    return float(evaluate(StepInputs(strategy=strategy, grad_sync=sync,
                                     **{**_DP, **changes})).memory_bytes)


def test_no_sync_holds_whole_gradients_in_the_stated_reduce_dtype_by_hand():
    """bf16 weights and gradients, K = 12. ZeRO-3 under no_sync with a 4-byte reduction:
    8e9 x (0 + 4 + 12/8) + 1.0e9 = 45.0e9 (was 8e9 x (0 + 2 + 12/8) + 1.0e9 = 29.0e9); ZeRO-2:
    8e9 x (2 + 4 + 12/8) = 60.0e9 (was 44.0e9). No reduction stated, or a bf16 one (FSDP2 clamps
    ``reduce_dtype`` equal to ``param_dtype`` to None): 29.0e9 as before. Reducing every
    micro-step keeps the fp32 gradient shard: 8e9 x (0 + 4/8 + 12/8) + 1.0e9 = 17.0e9 either
    way."""
    assert _memory(ZERO3, ONCE_PER_STEP, reduce_bytes_per_param=4.0) == pytest.approx(
        45.0e9, rel=1e-12)
    assert _memory(ZERO2, ONCE_PER_STEP, reduce_bytes_per_param=4.0) == pytest.approx(
        60.0e9, rel=1e-12)
    assert _memory(ZERO3, ONCE_PER_STEP) == pytest.approx(29.0e9, rel=1e-12)
    assert _memory(ZERO3, ONCE_PER_STEP, reduce_bytes_per_param=2.0) == pytest.approx(
        29.0e9, rel=1e-12)
    for reduce in (float("nan"), 4.0):
        assert _memory(ZERO3, EVERY_MICRO_STEP, reduce_bytes_per_param=reduce) == pytest.approx(
            17.0e9, rel=1e-12)
    # one micro-step reduces in its only backward: no whole gradients to hold
    assert _memory(ZERO3, ONCE_PER_STEP, reduce_bytes_per_param=4.0, accumulation=1) == (
        pytest.approx(17.0e9, rel=1e-12))


def test_the_layout_path_holds_the_same_gradients():
    """GPT at dp 8, ZeRO-3 under no_sync with 4 micro-batches: whole gradients of 4 bytes a
    parameter with a stated fp32 reduction, 2 without."""
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=3, micro_batch=1, global_batch=32, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, framework=FSDP,
                grad_sync=ONCE_PER_STEP)
    plain = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base}))
    fp32 = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base, "reduce_bytes_per_param": 4.0}))
    psi = float(GPT["params"])
    assert float(plain.grads_bytes) == pytest.approx(2.0 * psi, rel=1e-12)
    assert float(fp32.grads_bytes) == pytest.approx(4.0 * psi, rel=1e-12)
    every = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base, "reduce_bytes_per_param": 4.0,
                                             "grad_sync": EVERY_MICRO_STEP}))
    assert float(every.grads_bytes) == pytest.approx(4.0 * psi / 8, rel=1e-12)
