"""PyTorch DDP's all-reduce buckets in memory (session 48): under its default
``gradient_as_bucket_view=False`` its ``Reducer`` keeps one flat buffer per bucket, allocated
once in the parameters' dtype, apart from ``param.grad`` (torch 2.13 ``distributed.py``
docstring: ``True`` saves "the total gradients size"; reducer.cpp ``initialize_buckets``): a
second copy of every gradient, in the reduce dtype. Counted on both paths where DDP is PyTorch's
(the default framework at tp = pp = 1) over more than one rank (``memory.held_grad_bytes_per_param``,
``ddp_bucket_bytes_per_param``; docs/model.md §4)."""

from __future__ import annotations

import numpy as np
import pytest
from probe_runner import run_probe
from step_fixtures import dp8_layout, one_server

from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.memory import (
    DDP,
    ZERO1,
    ZERO2,
    ZERO3,
    ddp_bucket_bytes_per_param,
    held_grad_bytes_per_param,
    reduce_bytes_per_param_of,
)
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

BERT_PSI = 336e6
# bert-large's activations at 32 sequences of 128 tokens (§4, Korthikanti eq. 1, no flash
# attention): 24 layers x s h (34 + 5 a s / h) = 24 x 128 x 1024 x (34 + 5 x 16 x 128 / 1024)
# = 24 x 131,072 x 44 = 138,412,032 B a sequence, x 32
BERT_ACTIVATIONS = 24 * 128 * 1024 * (34 + 5 * 16 * 128 / 1024) * 32


def test_the_buckets_by_strategy_framework_layout_and_ranks():
    # PyTorch DDP (default framework, unsplit, more than one rank): a bucket copy in the reduce
    # dtype, the very bytes its all-reduce sends (one rule with the wire)
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    got = ddp_bucket_bytes_per_param(strategies, FSDP, 2.0, ranks=8)
    assert got.tolist() == [4.0, 0.0, 0.0, 0.0]
    assert float(got[0]) == float(reduce_bytes_per_param_of(DDP, FSDP, 2.0, 2.0))
    # a stated 16-bit reduction (a model cast to fp16, bert-large's DLE recipe): 2-byte buckets
    assert float(ddp_bucket_bytes_per_param(DDP, FSDP, 2.0, 2.0, ranks=8)) == 2.0
    assert float(ddp_bucket_bytes_per_param(DDP, FSDP, 4.0, ranks=8)) == 4.0  # fp32 training
    # none on one rank (no DDP to wrap), under Megatron-Core's DDP (a split layout: its
    # main_grad is its bucket) or DeepSpeed's stage 0 (its own flat all-reduce, no Reducer)
    assert float(ddp_bucket_bytes_per_param(DDP, FSDP, 2.0, ranks=1)) == 0.0
    assert float(ddp_bucket_bytes_per_param(DDP, FSDP, 2.0, split=True, ranks=8)) == 0.0
    assert float(ddp_bucket_bytes_per_param(DDP, DEEPSPEED, 2.0, ranks=8)) == 0.0
    # held: the gradients and the buckets, 2 + 4 under autocast (fp32 weights and gradients,
    # counted 2 + 2 + 12 = 16 before: 4 + 4 + 8, now 4 + 4 + 4 + 8 = 20)
    assert float(held_grad_bytes_per_param(DDP, FSDP, 2.0, ranks=8)) == 6.0
    assert float(held_grad_bytes_per_param(DDP, FSDP, 2.0, ranks=1)) == 2.0
    assert float(held_grad_bytes_per_param(DDP, FSDP, 2.0, split=True, ranks=8)) == 4.0


def test_bert_large_ddp_on_eight_a100_40gb_by_hand():
    """bert-large (Ψ = 336e6, fp16 weights and gradients, fp16 reduction stated: DLE's
    ``model.half()``), DDP on a2-highgpu-8g (8x A100 40GB), 32 sequences a GPU: states
    Ψ x (2 + 2 + 12) = 5.376e9 B and activations 4.429185024e9 B, 9.805185024e9 B (9.13 GiB)
    on every count before; now 8 GPUs add its fp16 buckets, Ψ x 2 = 0.672e9 B:
    10.477185024e9 B (9.76 GiB). One GPU has no DDP: unchanged. A torch.autocast run (reduce
    4 B stated: fp32 weights, gradients and buckets) holds Ψ x 4 = 1.344e9 B more than it was
    counted: Ψ x 20 + activations = 11.149185024e9 B (10.38 GiB)."""
    from scalesim.predict import predict
    from scalesim.profiles import load_hardware, load_workload, profile_from_presets
    from scalesim.schemas import Scenario

    states = BERT_PSI * (2 + 2 + 12)
    assert states + BERT_ACTIVATIONS == 9.805185024e9
    hw, wl = load_hardware("a2-highgpu-8g"), load_workload("bert-large")
    scenario = Scenario(devices=[1, 8], strategy="ddp", micro_batch=32)
    one, eight = predict(profile_from_presets(hw, wl), scenario)
    assert one.memory_bytes == pytest.approx(states + BERT_ACTIVATIONS, rel=1e-12)
    assert eight.memory_bytes == pytest.approx(states + BERT_PSI * 2 + BERT_ACTIVATIONS, rel=1e-12)
    assert eight.memory_bytes == pytest.approx(10.477185024e9, rel=1e-12)
    assert eight.fits  # 9.76 GiB of 40
    autocast = wl.model_copy(update={"reduce_bytes_per_param": 4.0})
    one_a, eight_a = predict(profile_from_presets(hw, autocast), scenario)
    assert eight_a.memory_bytes == pytest.approx(BERT_PSI * 20 + BERT_ACTIVATIONS, rel=1e-12)
    assert eight_a.memory_bytes - one_a.memory_bytes == pytest.approx(BERT_PSI * 4, rel=1e-12)
    # the buckets are what the ring all-reduce sends: 2 x 7/8 of Ψ x 2 B (fp16), Ψ x 4 B (autocast)
    assert eight.comm_bytes == pytest.approx(7 / 8 * 2 * 2 * BERT_PSI, rel=1e-12)
    assert eight_a.comm_bytes == pytest.approx(7 / 8 * 2 * 4 * BERT_PSI, rel=1e-12)


def test_both_paths_hold_the_same_buckets():
    """GPT 1.652e9 at dp 8 (layout path, tp = pp = 1) and Ψ = 6.74e9 on one server's 8 GPUs
    (data-parallel path): 2 + (2 + 4) + 12 = 20 B a parameter of states on both."""
    layout = evaluate_layouts(dp8_layout(DDP))
    psi = 1.652e9
    assert float(layout.grads_bytes) == pytest.approx(psi * 6, rel=1e-12)
    assert float(layout.weights_bytes + layout.grads_bytes + layout.optimizer_bytes) == (
        pytest.approx(psi * 20, rel=1e-12))
    alone = evaluate_layouts(dp8_layout(DDP, dp=1, global_batch=1))  # one GPU: no DDP
    assert float(alone.grads_bytes) == pytest.approx(psi * 2, rel=1e-12)
    dp = evaluate(StepInputs(strategy=DDP, **one_server(6.74e9)))
    assert float(dp.memory_bytes) == pytest.approx(6.74e9 * 20, rel=1e-12)
    solo = evaluate(StepInputs(strategy=DDP, **one_server(6.74e9, devices=1)))
    assert float(solo.memory_bytes) == pytest.approx(6.74e9 * 16, rel=1e-12)


@pytest.mark.slow
def test_a_real_ddp_holds_its_buckets_beside_its_gradients():
    """2 gloo ranks under ``torch.autocast(bfloat16)`` (``tests/ddp_bucket_probe.py``): with the
    default ``gradient_as_bucket_view=False`` the buckets hold 4 B a parameter (fp32) and no
    gradient lies in them (4 B more beside: 8 B of gradients and copies); with ``True`` every
    gradient is a view into its bucket (4 B). The model's count is the default's."""
    held = run_probe("ddp_bucket_probe.py")
    psi, default, view = held["params"], held["default"], held["view"]
    assert default["bucket_dtypes"] == default["grad_dtypes"] == ["float32"]
    assert default["bucket_bytes"] / psi == 4.0 and default["grad_bytes"] / psi == 4.0
    assert default["grads_in_buckets"] == 0  # a copy beside each gradient
    assert view["grads_in_buckets"] == held["grads"]  # every gradient a view: no copy
    # the model's held gradients of fp32 training's 4-byte gradients on 2 ranks: the same 8 B
    assert (default["bucket_bytes"] + default["grad_bytes"]) / psi == 8.0 == float(
        held_grad_bytes_per_param(DDP, FSDP, 4.0, ranks=2))
