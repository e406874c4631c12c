"""Session 45: the gradients of an FSDP ZeRO-2/3 pipeline stage as PyTorch's pipelining holds
them (docs/model.md §16). ``stage.py``'s ``backward_maybe_with_nosync`` runs every backward of
an ``FSDPModule`` with ``set_requires_gradient_sync(False)`` and reduces once after the last
micro-batch; FSDP2 keeps the unreduced unsharded gradient in its reduce dtype
(``FSDPParam.to_accumulated_grad_if_needed``). So the stage's gradients are whole even at one
micro-batch (they were charged their 1/dp shard) and held at the stated reduce bytes (they were
charged ``grad_bytes_per_param``).

By hand: Llama 3 8B (h 4,096, 32 heads of which 8 KV, FFN 14,336 gated, vocab 128,256). A layer
holds 2h^2 (Q, O) + 2h x 1,024 (K, V) + 3h x 14,336 (MLP) + 4h = 218,120,192 parameters; at
pp 2 the first stage holds 16 of them and the 525,336,576-parameter embedding: 4,015,259,648."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.layout import ParallelLayout
from scalesim.model.memory import unreduced_fsdp_grad_bytes_per_param
from scalesim.plan import Setting, evaluate_layout
from scalesim.presets import HARDWARE, get_transformer

LAYER = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 4 * 4096
STAGE = 16 * LAYER + 128256 * 4096


def _stage(global_batch, zero=2, reduce_bytes=np.nan, pp=2, dp=4, framework=None):
    extra = {} if framework is None else {"framework": framework}
    setting = Setting(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], global_batch,
                      reduce_bytes_per_param=reduce_bytes, **extra)
    return evaluate_layout(setting, ParallelLayout(
        dp=dp, pp=pp, zero=zero, micro_batch=1, global_batch=global_batch,
        schedule="1f1b" if pp > 1 else "none"))


def test_the_hand_count_of_a_stage():
    assert LAYER == 218_120_192 and STAGE == 4_015_259_648


@pytest.mark.parametrize("zero", [2, 3])
@pytest.mark.parametrize("global_batch", [16, 4])  # m = 4, and m = 1 (was STAGE: the fp32
# shard, 4 / 4 bytes a parameter)
def test_a_stage_holds_its_whole_gradients_at_any_micro_batch_count(zero, global_batch):
    r = _stage(global_batch, zero)
    assert float(r.grads_bytes) == 2 * STAGE == 8_030_519_296
    assert float(r.weights_bytes) == 2 * STAGE  # whole: no reshard with PP
    assert float(r.optimizer_bytes) == 12 * STAGE / 4  # sharded over dp 4


def test_stated_reduce_bytes_are_the_bytes_it_holds():
    """torchtitan reduces in float32 (``mixed_precision_reduce``): 4 bytes a parameter whole
    (was 2 x STAGE = 8,030,519,296); the step time does not change."""
    fp32 = _stage(16, reduce_bytes=4.0)
    assert float(fp32.grads_bytes) == 4 * STAGE == 16_061_038_592
    assert float(fp32.memory_bytes) - float(_stage(16).memory_bytes) == pytest.approx(2 * STAGE)
    assert unreduced_fsdp_grad_bytes_per_param(2.0, np.nan) == 2.0
    assert unreduced_fsdp_grad_bytes_per_param(2.0, 4.0) == 4.0


def test_without_a_pipeline_the_rule_is_unchanged():
    """One micro-batch without a pipeline reduce-scatters in its only backward and keeps its
    shard (§4's k = 1); stated reduce bytes do not change FSDP's held bytes there."""
    flat = _stage(4, pp=1, dp=4)  # m = 1
    # the shape's own count: RMSNorm's 2h a layer (the stage count above takes 4h), the final norm
    whole = 32 * (LAYER - 2 * 4096) + 2 * 128256 * 4096 + 4096
    assert float(flat.grads_bytes) == 4 * whole / 4  # FSDP's fp32 gradient shard (§4)
    assert float(_stage(4, pp=1, dp=4, reduce_bytes=4.0).grads_bytes) == float(flat.grads_bytes)
