"""Ring attention under activation recompute (docs/model.md §14): a recompute that reruns the
attention core reruns its forward, Transformer Engine's ``AttnFuncWithCPAndKVP2P.forward`` (or
torch's ring SDPA) with its c - 1 hops of K and V, in backward, each behind one forward step
(Megatron-Core's ``CheckpointFunction.backward`` calls the checkpointed forward again: the
whole layer under full recompute, ``core_attn`` under selective). torchtitan's per-op policy
saves the fused attention's output, so its ring is not rerun. Session 50: no recompute sent
any hop again."""

import pytest
from test_model_doc_equations import _inputs

from scalesim.model import transformer as tf
from scalesim.model.context_parallel import cp_exposed_per_layer_s
from scalesim.model.layout_step import evaluate_layouts


def test_a_rerun_forward_adds_its_exposed_hops_to_backward_by_hand():
    """c 4, a hop 1 s, attention 2 s forward (steps of 0.5) and 6 s backward, contention 0.1:
    forward 3 x (1 - 0.5 + 0.1 x 0.5) = 1.65 s; backward 0.2 + 1.3 = 1.5 s, and under
    recompute the rerun forward's 3 hops again, behind its 0.5 s steps: 1.5 + 1.65 = 3.15 s."""
    forward, backward = cp_exposed_per_layer_s(1.0, 4, 2.0, 6.0, 0.1, recomputed=True)
    assert float(forward) == pytest.approx(1.65, rel=1e-12)
    assert float(backward) == pytest.approx(3.15, rel=1e-12)
    # per row, and nothing at cp 1
    _, rows = cp_exposed_per_layer_s(1.0, [4, 4, 1], 2.0, 6.0, 0.1, [True, False, True])
    assert list(rows) == pytest.approx([3.15, 1.5, 0.0], rel=1e-12)


@pytest.mark.parametrize(("recompute", "op_sac", "flash", "reruns"), [
    ("none", False, False, False),
    ("full", False, False, True),
    ("full", False, True, True),       # early stop or not: the core precedes the down projection
    ("selective", False, True, True),  # Korthikanti / Megatron-Core core_attn
    ("selective", True, True, False),  # torchtitan per-op: the fused attention's output is saved
    ("selective", True, False, True),  # unfused: its batched matmuls are rerun (§11)
])
def test_which_recompute_reruns_the_attention_core(recompute, op_sac, flash, reruns):
    r = tf.RECOMPUTE[recompute]
    assert bool(tf.recomputes_attention_core(r, op_sac, flash)) is reruns


@pytest.mark.parametrize("changes", [
    dict(recompute=tf.RECOMPUTE_FULL),
    dict(recompute=tf.RECOMPUTE_FULL, recompute_early_stop=True),
    dict(recompute=tf.RECOMPUTE_SELECTIVE),
    dict(recompute=tf.RECOMPUTE_SELECTIVE, recompute_op_sac=True),  # unfused attention
])
def test_cp_2_across_servers_under_recompute_by_hand(changes):
    """test_ring_attention_steps50's GPT 1.7B, tp 8 x cp 2 across two A100 servers, 4,096
    tokens, m = 2: a hop 104.30 us, a forward step 22.12 us; the rerun forward's hop is exposed
    104.30 - 22.12 + 0.159 x 22.12 = 85.70 us a layer, 2 x 24 x 85.70 us = 4.113 ms more:
    cp_comm 10.554 -> 14.668 ms."""
    core = 4 * 2048 * 4096 * 2304 / 8 / (0.7 * 312e12)
    hop = 6e-6 + 2 * 2048 * 288 * 2 / (192e9 / 8)
    contention = 0.159
    rerun = hop - core / 2 + contention * core / 2
    assert rerun == pytest.approx(85.70e-6, rel=1e-4)
    base = _inputs(tp=8, cp=2, micro_batch=1, global_batch=2, seq_len=4096)
    before = float(evaluate_layouts(base).cp_comm_s)
    after = float(evaluate_layouts(base.replace(**changes)).cp_comm_s)
    assert after - before == pytest.approx(2 * 24 * rerun, rel=1e-9)
    assert after == pytest.approx(14.668e-3, rel=1e-4)


def test_per_op_recompute_over_fused_attention_sends_no_hop_again():
    base = _inputs(tp=8, cp=2, micro_batch=1, global_batch=2, seq_len=4096, flash_attention=True)
    per_op = base.replace(recompute=tf.RECOMPUTE_SELECTIVE, recompute_op_sac=True)
    assert float(evaluate_layouts(per_op).cp_comm_s) == float(evaluate_layouts(base).cp_comm_s)
