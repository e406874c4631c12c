"""Full recompute by PyTorch's non-reentrant checkpoint with early stop (torch >= 2.1): the
recomputation ends once the last tensor saved for backward is back, so a block's MLP down
projection (and the residual add after it) is not rerun. docs/model.md §12-14."""

import pytest

from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.tensor_parallel import collectives_per_layer, tp_comm_per_layer_s
from scalesim.shipped import validation_path
from scalesim.validate_parallel import (
    case_inputs,
    load_parallel_cases,
    recompute_early_stop_of,
)

# one device (no exchange), 4 layers, h 1024, f 4096, s 1024, micro-batch 2, 4 micro-batches,
# 1e14 FLOP/s, 1e12 B/s
SMALL = dict(layers=4, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, gated=False,
             seq_len=1024, vocab=50368, tied_embeddings=True, flash_attention=True,
             params=60e6, dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=2, global_batch=8,
             schedule=0, virtual_stages=1, recompute=tf.RECOMPUTE_FULL, sequence_parallel=False,
             devices_per_node=8, peak_flops_per_s=100e12, efficiency=1.0,
             memory_bandwidth_GBps=1000.0, intra_latency_s=2e-6, intra_busbw_GBps=200.0,
             inter_latency_s=6e-6, inter_busbw_GBps=100.0, device_cv=0.0)


def test_early_stop_saves_the_down_projection_and_last_add_by_hand():
    full = evaluate_layouts(LayoutInputs(**SMALL))
    stop = evaluate_layouts(LayoutInputs(**SMALL, recompute_early_stop=True))
    # per layer and micro-batch of 2 x 1024 = 2048 tokens:
    #   down projection (2048 x 4096) @ (4096 x 1024): 2*2048*1024*4096 = 17,179,869,184 FLOP
    #     / 1e14 = 1.7179869184e-4 s, plus 2 B x (2048*4096 + 4096*1024 + 2048*1024) =
    #     29,360,128 B / 1e12 = 2.9360128e-5 s
    #   residual (bias-dropout-)add: 7 B x 1024 x 2048 = 14,680,064 B / 1e12 = 1.4680064e-5 s
    # x 4 layers x 4 micro-batches
    saved = (1.7179869184e-4 + 2.9360128e-5 + 1.4680064e-5) * 16
    assert float(full.compute_s) - float(stop.compute_s) == pytest.approx(saved, rel=1e-9)
    none = evaluate_layouts(LayoutInputs(**{**SMALL, "recompute": tf.RECOMPUTE_NONE},
                                         recompute_early_stop=True))
    assert float(none.compute_s) < float(stop.compute_s)  # the rest is still recomputed
    assert float(stop.activation_bytes) == float(full.activation_bytes)  # same tensors kept


def test_recompute_flops_with_early_stop_by_hand():
    # GPT layer, h 1024, s 2048, 2 layers: full = 2 (24 h^2 + 4 s h) = 2 (25,165,824 + 8,388,608)
    full = tf.recompute_flops_per_token(tf.RECOMPUTE_FULL, 2, 1024, 8, 8, 4096, False, 2048)
    assert full == pytest.approx(67_108_864)
    # early stop: less 2 f h = 8,388,608 per layer
    stop = tf.recompute_flops_per_token(tf.RECOMPUTE_FULL, 2, 1024, 8, 8, 4096, False, 2048,
                                        early_stop=True)
    assert stop == pytest.approx(67_108_864 - 2 * 8_388_608)
    assert tf.recompute_flops_per_token(tf.RECOMPUTE_NONE, 2, 1024, 8, 8, 4096, False, 2048,
                                        early_stop=True) == 0
    r = evaluate_layouts(LayoutInputs(**SMALL, recompute_early_stop=True))
    model = tf.model_flops_per_token(4, 1024, 8, 8, 4096, False, 1024, 50368)
    rec = 4 * (24 * 1024**2 + 4 * 1024 * 1024 - 2 * 4096 * 1024)
    assert float(r.hfu) / float(r.mfu) == pytest.approx((model + rec) / model)


def test_tensor_parallel_rerun_collectives_with_early_stop():
    assert collectives_per_layer(tf.RECOMPUTE_FULL) == 6
    assert collectives_per_layer(tf.RECOMPUTE_FULL, early_stop=True) == 5  # not the MLP's
    assert collectives_per_layer(tf.RECOMPUTE_FULL, True, sequence_parallel=True) == 5.5
    assert collectives_per_layer(tf.RECOMPUTE_NONE, True) == 4
    args = (2, 2048, 4096, 8, 1)
    none = tp_comm_per_layer_s(*args, tf.RECOMPUTE_NONE, False, 2e-6, 200.0)
    stop = tp_comm_per_layer_s(*args, tf.RECOMPUTE_FULL, False, 2e-6, 200.0, early_stop=True)
    assert stop == pytest.approx(none * 5 / 4)


def test_which_sources_use_early_stop():
    foundry = "mosaicml/llm-foundry scripts/train/benchmarking/README.md"
    assert recompute_early_stop_of(f"{foundry} (added in commit 5e85bd62d, 2024-01-06)")
    assert recompute_early_stop_of(f"{foundry} (2023-12-07)")  # torch >= 2.1 required that day
    # the October-2023 tables: their sweep.sh ran every row in the torch 2.1.0 image
    assert recompute_early_stop_of(f"{foundry} (added in commit b2a43a147, 2023-10-19)")
    assert not recompute_early_stop_of(f"{foundry} (2023-10-18)")
    assert not recompute_early_stop_of(f"{foundry} (at 300cc5c58, 2023-05-03)")  # torch 1.13.1
    assert not recompute_early_stop_of(foundry)  # no date: not known
    assert not recompute_early_stop_of("Narayanan et al. 2021, arXiv 2104.04473, 2024-01-01")
    titan = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
    assert recompute_early_stop_of(f"{titan} (runs of 2024-12-26)")  # ptd_checkpoint_wrapper
    assert recompute_early_stop_of(f"{titan} (torchtitan 820504e, 2025-06-13)")
    assert not recompute_early_stop_of(f"{titan} (2024-12-25)")  # before the runs' commit


def test_shipped_cases_get_it_only_where_the_source_says_torch_2_1():
    cases = {c.id: c for c in load_parallel_cases(validation_path("parallel_cases.json"))}
    for case_id, expected in (("llmfoundry_h100l_70b_s2048_128gpu", True),
                              ("llmfoundry_h100l_7b_s2048_128gpu", False),  # no recompute
                              ("llmfoundry_h100_70b_s2048_32gpu", True),  # 2023-10: 2.1.0
                              ("llmfoundry_a100_40gb_7b_s2048_8gpu", False),  # torch 1.13
                              ("narayanan2021_t1_3p6b", False)):  # Megatron: reentrant
        flags: list[str] = []
        inputs, layout = case_inputs(cases[case_id], flags)
        assert bool(inputs.recompute_early_stop) is expected, case_id
        assert layout.recompute_style == ("early-stop" if expected else "whole-forward")
        assert any("early stop" in f for f in flags) is expected, case_id


def test_pytorch_non_reentrant_checkpoint_skips_the_down_projection():
    """Measured on the installed PyTorch: the matmul FLOPs the backward of one checkpointed
    pre-norm block spends beyond an unchecked one are the forward's (reentrant, or early stop
    off: torch < 2.1 behaviour) or the forward's less the MLP's second matmul (non-reentrant
    with early stop, torch >= 2.1's default), as the model charges them."""
    torch = pytest.importorskip("torch")
    from scalesim.calibration.models import ShardedBlock
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
    from torch.utils.flop_counter import FlopCounterMode

    h, a, f, b, s = 128, 4, 512, 2, 64

    def matmul_flops(counter):
        return sum(v for k, v in counter.get_flop_counts()["Global"].items()
                   if str(k) in ("aten.mm", "aten.addmm"))

    def backward_flops(mode, early_stop=True):
        torch.manual_seed(0)
        block = ShardedBlock(h, a, f)
        x = torch.randn(b, s, h, requires_grad=True)
        with set_checkpoint_early_stop(early_stop), FlopCounterMode(display=False) as fwd:
            y = block(x) if mode is None else checkpoint(block, x, use_reentrant=mode)
        with FlopCounterMode(display=False) as bwd:
            y.sum().backward()
        return matmul_flops(fwd), matmul_flops(bwd)

    forward, plain = backward_flops(None)
    tokens = b * s
    assert forward == 2 * tokens * (4 * h * h + 2 * f * h)
    assert backward_flops(True)[1] - plain == forward  # reentrant: the whole forward
    assert backward_flops(False, early_stop=False)[1] - plain == forward
    rerun = backward_flops(False, early_stop=True)[1] - plain
    assert rerun == forward - 2 * tokens * f * h  # all but the down projection
    model = tf.recompute_flops_per_token(tf.RECOMPUTE_FULL, 1, h, a, a, f, False, s, True)
    assert rerun == pytest.approx(tokens * (model - 4 * s * h))  # attention core not counted
