"""DeepSpeed ZeRO's memory, read in deepspeedai/DeepSpeed edaa722 (``stage_1_and_2.py``,
``stage3.py``; docs/model.md §4, session 46). Beyond the states the model counted (16-bit
weights, the 16-bit gradient partition, the fp32 master partition and Adam's m, v) DeepSpeed
holds an ipg bucket of ``reduce_bucket_size`` = 5e8 elements in the weights' dtype during
backward (stage 2: one, two with ``overlap_comm``; stage 3: one, kept), and at its step flattens
the gradient partition into a copy and casts it to fp32 (``w_grad + 4`` bytes an element; stage 3
per ``sub_group_size`` = 1e9 elements), when activations are gone. Stages 1-2 also clone an
fp32 partition of fp32 weights (4/d, no master in K = 8)
(``memory.deepspeed_buffer_bytes``, ``memory.param_state_bytes_per_param``)."""

from __future__ import annotations

import pytest
from test_collective_waits import GPT, HW

from scalesim.model.layout_step import FRAMEWORK_BYTES, LayoutInputs, evaluate_layouts
from scalesim.model.memory import (
    ZERO1,
    ZERO2,
    ZERO3,
    gathered_parameter_bytes,
    param_state_bytes_per_param,
)
from scalesim.model.sharding import DEEPSPEED
from scalesim.model.step import StepInputs, evaluate

PSI = 8e9  # an 8B model in 32 blocks, on 8 ranks
_DP = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
           per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
           wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
           inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32, framework=DEEPSPEED,
           overlap=False)
FP32 = dict(param_bytes_per_param=4.0, grad_bytes_per_param=4.0, optimizer_bytes_per_param=8.0)


def _memory(strategy, **changes):
    return float(evaluate(StepInputs(strategy=strategy, **{**_DP, **changes})).memory_bytes)


def test_stage2_8b_at_d8_by_hand():
    """bf16, no activations: states 8e9 x (2 + 2/8 + 12/8) = 30.0e9; the step's bf16 copy and
    fp32 cast of the 1e9-element partition, 1e9 x (2 + 4) = 6.0e9, outweigh the one 1e9-B bucket:
    36.0e9 (was 30.0e9). With 10e9 B of activations the step's copies fit in what they free and
    the bucket shows: 30 + 10 + 1 = 41.0e9. overlap_comm (the model's overlap) two buckets:
    30 + 10 + 2 = 42.0e9."""
    assert _memory(ZERO2) == pytest.approx(36.0e9, rel=1e-12)
    assert _memory(ZERO2, activation_bytes_per_sample=10e9) == pytest.approx(41.0e9, rel=1e-12)
    assert _memory(ZERO2, activation_bytes_per_sample=10e9, overlap=True) == pytest.approx(
        42.0e9, rel=1e-12)


def test_stage3_8b_at_d8_by_hand():
    """bf16: states 8e9 x 16/8 = 16.0e9, the gathered parameters (session 47: the last R/2 =
    5e8 elements of the forward kept for their reuse and a 5e7-element prefetch, 5.5e8 x 2 =
    1.1e9; two FSDP blocks, 2 x 8e9/32 x 2 = 1.0e9, before), the kept bucket 1.0e9; the step's
    copies of min(1e9, 1e9 sub-group) x 6 = 6.0e9 exceed the gathered parameters they replace:
    16 + 1.1 + 1 + (6 - 1.1) = 23.0e9 (was 17.0e9 before session 46). With 10e9 B of
    activations: 16 + 1.1 + 10 + 1 = 28.1e9 (28.0e9 before session 47). At 16e9 parameters
    the partition (2e9) steps in two sub-groups of 1e9: 32 + 1.1 + 1 + (6 - 1.1) = 39.0e9, not
    32 + 1.1 + 1 + (12 - 1.1) = 45.0e9."""
    assert _memory(ZERO3) == pytest.approx(23.0e9, rel=1e-12)
    assert _memory(ZERO3, activation_bytes_per_sample=10e9) == pytest.approx(28.1e9, rel=1e-12)
    assert _memory(ZERO3, params=16e9) == pytest.approx(39.0e9, rel=1e-12)


def test_stage3_gathers_what_its_reuse_distance_keeps_by_hand():
    """DeepSpeed's defaults (``stage3_max_reuse_distance`` 1e9, ``stage3_prefetch_bucket_size``
    5e7, ``stage3_max_live_parameters`` 1e9), not FSDP's two blocks (session 47). 3e8
    parameters in 32 blocks at d = 8: all kept, 3e8 x 2 = 0.6e9 (FSDP's two blocks: 3.75e7):
    states 0.6 + 0.6 + bucket 1.0 = 2.2e9 (the step's 3.75e7 x 6 = 0.225e9 fits in what it
    frees). 5.2e8: 5e8 kept + 2e7 prefetched, 1.04e9: 1.04 + 1.04 + 1.0 = 3.08e9. 8e9 in 32
    blocks at d = 8 with 10e9 B of activations, fp32: 5.5e8 x 4 = 2.2e9 gathered, 16 + 2.2 +
    10 + 2 = 30.2e9; FSDP there keeps two 1e9 blocks."""
    assert float(gathered_parameter_bytes(ZERO3, 8, 3e8, 2.0, 32, DEEPSPEED)) == 0.6e9
    assert float(gathered_parameter_bytes(ZERO3, 8, 3e8, 2.0, 32)) == 2 * 3e8 / 32 * 2
    assert float(gathered_parameter_bytes(ZERO3, 8, 8e9, 4.0, 32)) == 2e9
    assert float(gathered_parameter_bytes(ZERO3, 1, 8e9, 2.0, 32, DEEPSPEED)) == 0.0
    assert _memory(ZERO3, params=3e8) == pytest.approx(2.2e9, rel=1e-12)
    assert _memory(ZERO3, params=5.2e8) == pytest.approx(3.08e9, rel=1e-12)
    assert _memory(ZERO3, activation_bytes_per_sample=10e9, **FP32) == pytest.approx(
        30.2e9, rel=1e-12)


def test_stage1_8b_at_d8_by_hand():
    """Stage 1 (session 47, ``stage_1_and_2.py`` at edaa722): states 8e9 x (2 + 2 + 12/8) =
    44.0e9 (whole bf16 gradients). Backward allocates one 5e8-element bf16 bucket (1.0e9,
    ``setup_buckets``); the boundary's reduction copies the gradients through it and, on rank
    0, allocates the 1e9-element gradient partition (2.0e9, ``grads_in_partition``) while the
    rest are still whole; the step's copies (1e9 x 6 = 6.0e9) beside that partition stay under
    the 16.0e9 of whole gradients they replace: 44 + max(1, 2) = 46.0e9 (was 44.0e9). With
    10e9 B of activations the bucket shows: 44 + 10 + 1 = 55.0e9. At d = 2 the partition is
    4e9: 8e9 x (2 + 2 + 6) = 80 plus 8 + 24 - 16 = 16: 96.0e9. fp32 (w = 4, K = 8):
    8e9 x (4 + 4/8 clone + 4 + 1) = 76 plus the 1e9 x 4 partition: 80.0e9. A 2e8-parameter
    model (1.1e9 of states) holds the whole 1e9-B bucket: 2.1e9."""
    assert _memory(ZERO1) == pytest.approx(46.0e9, rel=1e-12)
    assert _memory(ZERO1, activation_bytes_per_sample=10e9) == pytest.approx(55.0e9, rel=1e-12)
    assert _memory(ZERO1, devices=2) == pytest.approx(96.0e9, rel=1e-12)
    assert _memory(ZERO1, **FP32) == pytest.approx(80.0e9, rel=1e-12)
    assert _memory(ZERO1, params=2e8) == pytest.approx(2.1e9, rel=1e-12)


def test_fp32_by_hand():
    """fp32 (w = 4, K = 8): stage 2 holds 8e9 x (4 + 4/8 clone + 4/8 + 8/8) = 48.0e9 of states;
    its step casts nothing (fp32 already) and copies 1e9 x 4 = 4.0e9 > its 2.0e9 bucket: 52.0e9
    (was 44.0e9). Stage 3 updates its fp32 partition in place, 8e9 x 16/8 = 16.0e9, gathers
    2 x 8e9/32 x 4 = 2.0e9, keeps a 2.0e9 bucket, steps with 4.0e9: 16 + 2 + 2 + 2 = 22.0e9."""
    assert float(param_state_bytes_per_param(ZERO1, DEEPSPEED, 8, 4.0)) == 4.5
    assert float(param_state_bytes_per_param(ZERO2, DEEPSPEED, 8, 4.0)) == 4.5
    assert float(param_state_bytes_per_param(ZERO3, DEEPSPEED, 8, 4.0)) == 0.5
    assert float(param_state_bytes_per_param(ZERO2, DEEPSPEED, 8, 2.0)) == 2.0  # master in K
    assert _memory(ZERO2, **FP32) == pytest.approx(52.0e9, rel=1e-12)
    assert _memory(ZERO3, **FP32) == pytest.approx(22.0e9, rel=1e-12)


def test_the_layout_path_counts_the_same_buffers():
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=2, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, framework=DEEPSPEED,
                overlap=False)
    r = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base}))
    psi = float(r.weights_bytes) / 2.0  # whole bf16 weights at stage 2
    step = psi / 8 * 6.0
    want = max(1e9, step - float(r.activation_bytes))
    assert float(r.buffer_bytes) - FRAMEWORK_BYTES == pytest.approx(want, rel=1e-12)
    assert float(r.grads_bytes) == pytest.approx(2.0 * psi / 8, rel=1e-12)


def test_the_layout_path_counts_stage1_buffers():
    """Stage 1 on the layout path (session 47): beyond the states, the larger of the bucket in
    backward (5e8 x 2) and the gradient partition at the boundary (Psi/8 x 2), less the
    activations it replaces."""
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=1, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, framework=DEEPSPEED,
                overlap=False)
    r = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base}))
    psi = float(r.weights_bytes) / 2.0
    want = max(1e9, psi / 8 * 2.0 + max(psi / 8 * 6.0 - psi * 2.0, 0.0)
               - float(r.activation_bytes))
    assert float(r.buffer_bytes) - FRAMEWORK_BYTES == pytest.approx(want, rel=1e-12)
    assert float(r.grads_bytes) == pytest.approx(2.0 * psi, rel=1e-12)


def test_the_layout_path_gathers_the_same_parameters():
    """Stage 3 on the layout path (session 47): the gathered parameters are the stage's local
    ones that DeepSpeed keeps and prefetches, min(Psi, 5e8 + 5e7) x 2 B, where FSDP keeps two
    layers."""
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=3, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, overlap=False)
    ds = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base, "framework": DEEPSPEED}))
    fsdp = evaluate_layouts(LayoutInputs(**{**GPT, **HW, **base}))
    psi = float(fsdp.weights_bytes + fsdp.grads_bytes) / (4.0 / 8)  # FSDP: 0 + 4/8 a parameter
    gathered = min(psi, 5.5e8) * 2.0
    step = psi / 8 * 6.0
    want = gathered + 1e9 + max(step - gathered - float(ds.activation_bytes), 0.0)
    assert float(ds.buffer_bytes) - FRAMEWORK_BYTES == pytest.approx(want, rel=1e-12)
