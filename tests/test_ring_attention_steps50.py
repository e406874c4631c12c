"""Ring attention (context parallelism) hides each send behind one attention step, as Transformer
Engine's ``AttnFuncWithCPAndKVP2P`` runs it (docs/model.md §14): forward, c - 1 hops behind c - 1
of the c steps of attention_forward / c; backward, 2 (c - 1) hops over c steps of
attention_backward / c (the ends one hop each, the c - 2 middle steps K, V with dK, dV: two).
Session 50: all 3 (c - 1) hops hid behind the layer's whole attention, forward and backward."""

import pytest
from test_model_doc_equations import _inputs

from scalesim.model.context_parallel import cp_exposed_per_layer_s
from scalesim.model.layout_step import evaluate_layouts


def test_each_send_is_exposed_by_what_outlasts_its_step_by_hand():
    """c 4, a hop 1 s, attention 2 s forward (steps of 0.5) and 6 s backward (1.5), contention
    0.1: forward 3 x (0.5 + 0.1 x 0.5) = 1.65; backward, the ends 2 x 0.1 x 1 = 0.2 and the
    middle steps 2 x (2 - 1.5 + 0.1 x 1.5) = 1.3. The whole attention (8 s) hid 8 of the 9 hops:
    1 + 0.1 x 8 = 1.8 s before."""
    forward, backward = cp_exposed_per_layer_s(1.0, 4, 2.0, 6.0, 0.1)
    assert float(forward) == pytest.approx(1.65, rel=1e-12)
    assert float(backward) == pytest.approx(0.2 + 1.3, rel=1e-12)


def test_no_ring_sends_nothing_and_long_steps_leave_the_contention_share():
    assert [float(t) for t in cp_exposed_per_layer_s(1.0, 1, 2.0, 6.0, 0.1)] == [0.0, 0.0]
    # steps longer than every send: the 3 (c - 1) hops cost their contention share alone
    forward, backward = cp_exposed_per_layer_s([1.0, 1.0], [2, 4], 40.0, 80.0, 0.1)
    assert list(forward + backward) == pytest.approx([0.1 * 3, 0.1 * 9], rel=1e-12)


def test_cp_2_across_servers_at_4k_tokens_by_hand():
    """GPT 1.7B's widths (h 2304, 24 heads), tp 8 x cp 2 on two 8-GPU A100 servers, 4,096 tokens,
    micro-batch 1, m = 2, no fused attention. A hop: K and V of 2,048 tokens, 3 heads of 96 a
    rank, 2 x 2,048 x 288 x 2 B = 2,359,296 B at one GPU's NIC share, 192/8 GB/s, + 6 us:
    104.30 us. The attention core: 4 x 2,048 x 4,096 x 2304/8 FLOPs at 0.7 x 312 TFLOP/s =
    44.25 us forward, twice that backward, so a step is 22.12 us forward and 44.25 us backward
    and every hop outlasts its step: per layer and micro-batch (104.30 - 22.12) + 0.159 x 22.12
    + 2 x (104.30 - 44.25) + 0.159 x 2 x 44.25 = 219.88 us; 2 x 24 of them 10.554 ms (the whole
    attention hiding 132.7 of 312.9 us: 9.661 ms)."""
    core = 4 * 2048 * 4096 * 2304 / 8 / (0.7 * 312e12)
    hop = 6e-6 + 2 * 2048 * 288 * 2 / (192e9 / 8)
    contention = 0.159
    layer = (hop - core / 2 + contention * core / 2) + 2 * (hop - core + contention * core)
    assert layer == pytest.approx(219.88e-6, rel=1e-4)
    x = _inputs(tp=8, cp=2, micro_batch=1, global_batch=2, seq_len=4096)
    assert float(evaluate_layouts(x).cp_comm_s) == pytest.approx(2 * 24 * layer, rel=1e-12)
    assert 2 * 24 * layer == pytest.approx(10.554e-3, rel=1e-4)
