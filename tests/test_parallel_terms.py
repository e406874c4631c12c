"""The model-parallel time and memory terms against hand-computed values, and properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_collective_waits import GPT
from test_collective_waits import HW as A100_SERVERS

from scalesim.layout import GPIPE, INTERLEAVED, NO_PIPELINE, ONE_F_ONE_B, SCHEDULES, ZERO_BUBBLE
from scalesim.model import transformer as tf
from scalesim.model.layout_step import FRAMEWORK_BYTES, LayoutInputs, evaluate_layouts
from scalesim.model.matmul import gemm_s
from scalesim.model.pipeline_schedule import (
    bubble_microbatches,
    microbatches_in_flight,
    p2p_s,
)
from scalesim.model.tensor_parallel import tp_comm_per_layer_s


def test_bubble_fractions_narayanan():
    # Narayanan 2021 §2.2: bubble over ideal time (p-1)/m for GPipe and 1F1B, (p-1)/(v m)
    # interleaved: the bubble's micro-batches (of the whole stage) over m
    def bubble_fraction(schedule, pp, microbatches, virtual_stages=1):
        return bubble_microbatches(schedule, pp, virtual_stages) / microbatches

    assert bubble_fraction(ONE_F_ONE_B, 8, 32) == pytest.approx(7 / 32)
    assert bubble_fraction(GPIPE, 4, 8) == pytest.approx(3 / 8)
    assert bubble_fraction(INTERLEAVED, 8, 32, 4) == pytest.approx(7 / 128)
    assert bubble_fraction(ZERO_BUBBLE, 8, 32) == pytest.approx(7 / 32 / 3)
    assert bubble_fraction(NO_PIPELINE, 1, 32) == 0


def test_microbatches_in_flight():
    assert microbatches_in_flight(GPIPE, 4, 16) == 16
    assert microbatches_in_flight(ONE_F_ONE_B, 4, 16) == 4
    assert microbatches_in_flight(ONE_F_ONE_B, 8, 3) == 3
    # Korthikanti §4.2.3: interleaving multiplies by 1 + (p-1)/(p v)
    assert microbatches_in_flight(INTERLEAVED, 4, 16, 2) == pytest.approx(4 * (1 + 3 / 8))
    assert microbatches_in_flight(NO_PIPELINE, 1, 16) == 1


def test_p2p_by_hand():
    # interleaved, p = 4 stages in one server (4 per node), m = 8, v = 2: 2 (p - 1) fill and
    # drain hops plus two boundaries per micro-batch and chunk, 10 MB at 25 GB/s plus 5 us each
    one = 5e-6 + 10e6 / 25e9
    t = p2p_s(INTERLEAVED, 4, 8, 2, 10e6, 4, 5e-6, 25.0, 6e-6, 24.0)
    assert t == pytest.approx(2 * (16 + 3) * one)
    assert p2p_s(NO_PIPELINE, 1, 8, 1, 10e6, 1, 5e-6, 25.0, 6e-6, 24.0) == 0


def test_tp_comm_by_hand():
    # b=2, s=2048, h=4096, bf16: 33.5 MB per all-reduce, ring on 8 at 200 GB/s, alpha 2 us
    size = 2 * 2048 * 4096 * 2
    one = 2 * 7 * 2e-6 + 2 * 7 / 8 * size / 200e9
    none = tp_comm_per_layer_s(2, 2048, 4096, 8, 1, tf.RECOMPUTE_NONE, False, 2e-6, 200.0)
    full = tp_comm_per_layer_s(2, 2048, 4096, 8, 1, tf.RECOMPUTE_FULL, False, 2e-6, 200.0)
    sp = tp_comm_per_layer_s(2, 2048, 4096, 8, 1, tf.RECOMPUTE_NONE, True, 2e-6, 200.0)
    assert none == pytest.approx(4 * one)
    assert full == pytest.approx(6 * one)
    assert sp == pytest.approx(none)  # RS + AG move what an all-reduce moves (ring)


def test_context_parallel_ring_by_hand():
    from scalesim.model.context_parallel import cp_exposed_per_layer_s, cp_hop_s, kv_chunk_bytes

    # b=1, s=8192 over c=4, GQA 8 of 64 heads, h=8192, t=2: K and V of 2048 tokens x 1024 / 2
    size = kv_chunk_bytes(1, 8192, 8192, 64, 8, 2, 4)
    assert size == 2 * 2048 * 1024 / 2 * 2
    hop = cp_hop_s(size, 2e-6, 100.0)
    assert hop == pytest.approx(2e-6 + size / 100e9)
    # nothing to hide behind: c - 1 hops forward and 2 (c - 1) backward, all exposed
    forward, backward = cp_exposed_per_layer_s(hop, 4, 0.0, 0.0, 0.0)
    assert (forward, backward) == (pytest.approx(3 * hop), pytest.approx(6 * hop))
    assert cp_exposed_per_layer_s(hop, 1, 0.0, 0.0, 0.0) == (0, 0)


def test_context_parallel_term_in_the_step():
    base = dict(dp=2, cp=4, micro_batch=1, global_batch=8)
    with_cp = evaluate_layouts(_inputs(**base))
    assert float(with_cp.cp_comm_s) > 0
    slow = evaluate_layouts(_inputs(**base).replace(intra_busbw_GBps=0.5))
    assert float(slow.cp_comm_s) > float(with_cp.cp_comm_s)


def test_gemm_roofline_by_hand_and_smaller_shards_are_less_efficient():
    t = gemm_s(4096, 1024, 8192, 1e15, 2e12)
    assert t == pytest.approx(2 * 4096 * 1024 * 8192 / 1e15
                              + 2 * (4096 * 8192 + 8192 * 1024 + 4096 * 1024) / 2e12)
    n = np.array([12288, 1536, 96])  # the share of the peak a multiply of this shape reaches
    eff = 2.0 * 4096 * n * 12288 / 312e12 / gemm_s(4096, n, 12288, 312e12, 2.039e12)
    assert eff[0] > eff[1] > eff[2] and eff[0] < 1


HW = {**A100_SERVERS, "device_cv": 0.0132}  # the GPT on A100 servers of test_collective_waits


def _inputs(**layout):
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=0, micro_batch=4, global_batch=64, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    base.update(layout)
    return LayoutInputs(**GPT, **base, **HW)


PARTS = ("compute_s", "tp_comm_s", "cp_comm_s", "bubble_s", "p2p_s", "dp_exposed_s", "straggler_s", "stall_s")


def test_parts_sum_to_step_and_throughput_is_batch_over_step():
    r = evaluate_layouts(_inputs(dp=4, tp=2, pp=4, schedule=SCHEDULES["1f1b"], zero=1))
    assert sum(float(getattr(r, p)) for p in PARTS) == pytest.approx(float(r.step_time_s))
    assert float(r.samples_per_s) == pytest.approx(64 / float(r.step_time_s))
    assert float(r.tokens_per_s) == pytest.approx(64 * 2048 / float(r.step_time_s))


def test_mfu_by_hand():
    r = evaluate_layouts(_inputs())
    per_token = tf.model_flops_per_token(24, 2304, 24, 24, 9216, False, 2048, 51200)
    assert float(r.mfu) == pytest.approx(per_token * float(r.tokens_per_s) / (8 * 312e12))
    assert float(r.hfu) == pytest.approx(float(r.mfu))  # no recompute


def test_memory_per_zero_stage_by_hand():
    psi = GPT["params"]
    rs = [evaluate_layouts(_inputs(zero=z)) for z in range(4)]
    assert float(rs[0].weights_bytes) == pytest.approx(2 * psi)
    assert float(rs[1].optimizer_bytes) == pytest.approx(12 * psi / 8)
    assert float(rs[2].grads_bytes) == pytest.approx(4 * psi / 8)  # FSDP's fp32 shard (§4)
    # ZeRO-3 (FSDP): its fp32 parameter shard is the master in the optimizer's 12 B, its
    # gradient shard fp32: 0 + 4/8 + 12/8 (session 46; 2/8 + 2/8 + 12/8 before, the same sum)
    assert float(rs[3].weights_bytes) == 0.0
    assert float(rs[3].grads_bytes) == pytest.approx(4 * psi / 8)
    mem = [float(r.memory_bytes) for r in rs]
    assert mem[0] > mem[1] > mem[2] and mem[3] < mem[2] + 2 * psi
    # activations: Korthikanti per layer x 24 layers + fp32 logits, plus framework buffers
    act = tf.activation_bytes_per_layer(4, 2048, 2304, 24, 24, 9216, False)
    assert float(rs[0].activation_bytes) == pytest.approx(24 * act + 4 * 4 * 2048 * 51200)
    assert float(rs[0].buffer_bytes) == FRAMEWORK_BYTES


def test_recompute_trades_time_for_memory():
    none, sel, full = (evaluate_layouts(_inputs(recompute=r)) for r in (0, 1, 2))
    assert float(full.activation_bytes) < float(sel.activation_bytes) < float(none.activation_bytes)
    assert float(full.compute_s) > float(sel.compute_s) > float(none.compute_s)
    assert float(full.hfu) > float(full.mfu)


def test_tp_overlap_hides_tensor_traffic():
    plain = evaluate_layouts(_inputs(tp=8, dp=1, micro_batch=4, global_batch=16))
    overlapped = evaluate_layouts(_inputs(tp=8, dp=1, micro_batch=4, global_batch=16,
                                          tp_overlap=True))
    assert 0 < float(overlapped.tp_comm_s) < float(plain.tp_comm_s)


def test_interleaving_shrinks_the_bubble():
    base = dict(dp=2, tp=1, pp=4, micro_batch=1, global_batch=32)
    one = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["1f1b"]))
    inter = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["interleaved"], virtual_stages=3))
    assert float(inter.bubble_s) == pytest.approx(float(one.bubble_s) / 3)
    # blocking, v chunks send v times as often; Megatron's overlap_p2p_comm hides them (§15)
    blocking = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["interleaved"],
                                        virtual_stages=3, p2p_overlap=False))
    assert float(blocking.p2p_s) > float(one.p2p_s)
    assert float(inter.p2p_s) < float(blocking.p2p_s)


def test_vectorised_equals_one_by_one():
    layouts = [dict(dp=8), dict(dp=4, tp=2, zero=3), dict(dp=2, pp=4, schedule=2),
               dict(dp=1, tp=8, recompute=2, sequence_parallel=True, global_batch=32)]
    singles = [evaluate_layouts(_inputs(**k)) for k in layouts]
    keys = set().union(*layouts)
    arrays = {k: np.array([d.get(k, _inputs().__getattribute__(k)) for d in layouts])
              for k in keys}
    many = evaluate_layouts(_inputs(**arrays))
    for i, one in enumerate(singles):
        assert float(many.step_time_s[i]) == pytest.approx(float(one.step_time_s), rel=1e-12)
        assert float(many.memory_bytes[i]) == pytest.approx(float(one.memory_bytes), rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(dp=st.sampled_from([1, 2, 4, 16]), tp=st.sampled_from([1, 2, 8]),
       pp=st.sampled_from([1, 2, 4]), zero=st.integers(0, 3), rec=st.integers(0, 2),
       sched=st.sampled_from([1, 2, 3, 4]), factor=st.floats(1.01, 10.0),
       which=st.sampled_from(["intra_busbw_GBps", "inter_busbw_GBps"]))
def test_more_bandwidth_never_slows_a_layout(dp, tp, pp, zero, rec, sched, factor, which):
    layout = dict(dp=dp, tp=tp, pp=pp, zero=zero, recompute=rec, micro_batch=1,
                  global_batch=dp * 8, schedule=sched if pp > 1 else 0,
                  virtual_stages=2 if sched == INTERLEAVED and pp > 1 else 1)
    slow = evaluate_layouts(_inputs(**layout))
    fast = evaluate_layouts(_inputs(**layout).replace(**{which: HW[which] * factor}))
    assert float(fast.step_time_s) <= float(slow.step_time_s) * (1 + 1e-12)


def test_fsdp_backward_prefetch_post_exposes_the_backward_gathers_by_hand():
    # FSDP over 8 GPUs of one server, 2 micro-batches of 4: one gather (or reduce-scatter) pass of
    # the 1.652e9 x 2-byte model in 24 units is 24 x 7 x 2 us + 7/8 x 3.304e9 B / 230 GB/s.
    one_pass = 24 * 7 * 2e-6 + 7 / 8 * GPT["params"] * 2 / 230e9
    pre = evaluate_layouts(_inputs(zero=3))
    post = evaluate_layouts(_inputs(zero=3, fsdp_backward_prefetch_post=True))
    # BACKWARD_POST issues each unit's backward gather after the previous unit's gradient
    # computation: all of a pass per micro-batch waits (one_pass), and the last unit's
    # reduce-scatter (u = one_pass / 24) after the backward. With the default prefetch the
    # backward is long enough to hide all but the first unit's gather and the last unit's
    # reduce-scatter (2u). Per micro-batch post - pre = one_pass - u, of which the contention
    # share c was charged already.
    u = one_pass / 24
    assert float(post.dp_exposed_s) - float(pre.dp_exposed_s) == pytest.approx(
        (1 - 0.159) * 2 * (one_pass - u))
    assert float(post.compute_s) == float(pre.compute_s)
    # ZeRO-1/2 keep the weights between forward and backward: nothing to gather in backward
    z2 = [evaluate_layouts(_inputs(zero=2, fsdp_backward_prefetch_post=p)) for p in (False, True)]
    assert float(z2[0].step_time_s) == float(z2[1].step_time_s)


def test_microbatches_in_flight_of_the_last_stage():
    # Megatron's schedules: 1F1B rank r runs p - r - 1 warm-up forwards, then one more before
    # its first backward (forward_backward_pipelining_without_interleaving): the last stage
    # holds 1; interleaved rank r runs 2 (p - r - 1) + (v - 1) p warm-up chunk forwards
    # (get_pp_rank_microbatches), so the last rank holds (v - 1) p + 1 chunks = that / v stages
    assert microbatches_in_flight(ONE_F_ONE_B, 4, 16, 1, stage=3) == 1
    assert microbatches_in_flight(ZERO_BUBBLE, 4, 16, 1, stage=3) == 1
    assert microbatches_in_flight(GPIPE, 4, 16, 1, stage=3) == 16
    assert microbatches_in_flight(INTERLEAVED, 4, 16, 2, stage=3) == pytest.approx((4 + 1) / 2)
    # the first stage is the old rule (Korthikanti §4.2.3)
    assert microbatches_in_flight(INTERLEAVED, 4, 16, 2, stage=0) == pytest.approx(4 * (1 + 3 / 8))


def test_logits_sit_on_the_last_stage_and_the_fullest_stage_is_reported():
    # Megatron-LM theoretical_memory_usage.py: the inputs of the output layer and the loss
    # (4 s b h (1 + V/h) / t) count on the first stage only when pp == 1; with pp > 1 they sit
    # on the last stage, which holds one micro-batch in flight under 1F1B. GPT 1.7B, pp 2,
    # 1F1B, micro-batch 4, 8 micro-batches, tp 1: each stage 12 layers and a V x h embedding
    # (the first the input embedding, the last the output layer).
    r = evaluate_layouts(_inputs(dp=4, pp=2, schedule=SCHEDULES["1f1b"], global_batch=128))
    act = tf.activation_bytes_per_layer(4, 2048, 2304, 24, 24, 9216, False)
    first = 12 * act * 2  # two micro-batches in flight, no logits
    last = 12 * act * 1 + 4 * 4 * 2048 * 51200  # one in flight + fp32 logits
    assert first > last
    assert float(r.activation_bytes) == pytest.approx(first)
    stage_params = 12 * (tf.layer_matmul_weights(2304, 24, 24, 9216, False) + 4 * 2304) \
        + 51200 * 2304
    assert float(r.weights_bytes) == pytest.approx(2 * stage_params)
    # a last stage that is fuller: one layer per stage, a large vocabulary
    big_v = _inputs(dp=4, pp=2, schedule=SCHEDULES["1f1b"], global_batch=128).replace(
        layers=2, vocab=256000)
    r = evaluate_layouts(big_v)
    assert float(r.activation_bytes) == pytest.approx(1 * act * 1 + 4 * 4 * 2048 * 256000)


def test_a_faster_device_never_slows_a_layout_with_overlapped_tp_and_zero3():
    # tp 8 overlapped with the matmuls (on NVLink), ZeRO-2 over dp x cp = 2 across servers: the
    # exchange runs while the layer waits for its exposed tensor-parallel traffic too, so a
    # faster device (1.5x the peak) must not lengthen the step; it did (0.1984 -> 0.2036 s)
    # when each exchange took the compute alone as its window
    x = _inputs(dp=1, tp=8, cp=2, zero=2, micro_batch=1, global_batch=8, tp_overlap=True)
    slow, fast = evaluate_layouts(x), evaluate_layouts(x.replace(peak_flops_per_s=1.5 * 312e12))
    assert float(fast.step_time_s) < float(slow.step_time_s)


@settings(max_examples=150, deadline=None)
@given(dp=st.sampled_from([1, 2, 4, 16]), tp=st.sampled_from([1, 2, 8]),
       pp=st.sampled_from([1, 2, 4]), cp=st.sampled_from([1, 2]), zero=st.integers(0, 3),
       rec=st.integers(0, 2), sched=st.sampled_from([1, 2, 3, 4]), tpo=st.booleans(),
       factor=st.floats(1.01, 3.0),
       which=st.sampled_from(["efficiency", "peak_flops_per_s", "memory_bandwidth_GBps"]))
def test_a_faster_device_never_slows_a_layout(dp, tp, pp, cp, zero, rec, sched, tpo, factor,
                                              which):
    layout = dict(dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, recompute=rec, micro_batch=1,
                  global_batch=dp * 8, schedule=sched if pp > 1 else 0,
                  virtual_stages=2 if sched == INTERLEAVED and pp > 1 else 1,
                  sequence_parallel=tp > 1, tp_overlap=tpo)
    x = _inputs(**layout)
    slow = evaluate_layouts(x)
    fast = evaluate_layouts(x.replace(**{which: getattr(x, which) * factor}))
    assert float(fast.step_time_s) <= float(slow.step_time_s) * (1 + 1e-12)


def test_zero_bubble_h1_bubble_is_qi_table_2_with_the_layouts_own_pass_times():
    # Qi et al. 2023 (arXiv 2401.10241) Table 2: 1F1B idles (p - 1)(T_F + T_B + T_W), ZB-H1
    # (p - 1)(T_F + T_B - T_W), T_W the weight-gradient pass; a third only when the three are
    # equal. GPT 1.7B, pp 4, micro-batch 4, tp 1: T_W of an average stage is its layers' and the
    # output layer's weight-gradient matmuls (one of each matmul's two backward passes)
    base = dict(dp=2, pp=4, micro_batch=4, global_batch=64)
    one = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["1f1b"]))
    zb = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["zb"]))
    flops, mem = 312e12 * 0.7, 2039e9
    m_tok, h = 4 * 2048, 2304
    layer_w = (gemm_s(m_tok, 3 * h, h, flops, mem) + gemm_s(m_tok, h, h, flops, mem)
               + gemm_s(m_tok, 4 * h, h, flops, mem) + gemm_s(m_tok, h, 4 * h, flops, mem))
    t_w = (24 * layer_w + gemm_s(m_tok, 51200, h, flops, mem)) / 4
    # T_F + T_B + T_W of an average stage: the unsplit model's micro-batch over the 4 stages
    # (its compute at 2 micro-batches less at 1; the optimizer cancels)
    def average_stage_s(**knobs):
        def compute(k):
            return float(evaluate_layouts(_inputs(dp=1, micro_batch=4, global_batch=4 * k,
                                                  **knobs)).compute_s)
        return (compute(2) - compute(1)) / 4

    # the ratio of Table 2's two bubbles, 1 - 2 T_W / (T_F + T_B + T_W), whatever the stages
    w = t_w / average_stage_s()
    assert float(zb.bubble_s) == pytest.approx(float(one.bubble_s) * (1 - 2 * w), rel=1e-9)
    # attention and elementwise work sit in T_F and T_B, not T_W: more than a third remains
    assert float(zb.bubble_s) > float(one.bubble_s) / 3
    # full recompute reruns the forward inside T_B: the bubble share grows again
    one_r = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["1f1b"], recompute=2))
    zb_r = evaluate_layouts(_inputs(**base, schedule=SCHEDULES["zb"], recompute=2))
    w_r = t_w / average_stage_s(recompute=2)
    assert float(zb_r.bubble_s) == pytest.approx(float(one_r.bubble_s) * (1 - 2 * w_r), rel=1e-9)
    assert float(zb_r.bubble_s) / float(one_r.bubble_s) > float(zb.bubble_s) / float(one.bubble_s)


def test_zero_bubble_share_from_the_weight_gradient_share():
    # T_W / (T_F + T_B + T_W) = w: ZB-H1 idles (1 - 2w) of 1F1B's (p - 1) micro-batch times
    assert bubble_microbatches(ZERO_BUBBLE, 8, 1, weight_grad_share=0.25) / 32 == pytest.approx(
        7 / 32 * 0.5)


def test_the_embedding_and_the_loss_add_their_tensor_parallel_collectives():
    # Megatron-Core: VocabParallelEmbedding all-reduces its b x s x h output in forward (with
    # sequence parallelism a reduce-scatter, all-gathered in backward); the output layer's input
    # is all-reduced in backward (sequence parallel: all-gathered in forward, reduce-scattered in
    # backward); VocabParallelCrossEntropy all-reduces 3 fp32 values per token (max, sum of
    # exponentials, target logit). GPT 1.7B, tp 8 in one server, pp 1, micro-batch 4, 2 micro-
    # batches: 24 layers x 4 all-reduces + 2 + the loss's 3 small ones, per micro-batch.
    from scalesim.model import collectives as coll

    r = evaluate_layouts(_inputs(dp=1, tp=8, micro_batch=4, global_batch=8))
    size = 4 * 2048 * 2304 * 2

    def allreduce(n_bytes):
        return coll.allreduce_s(n_bytes, 8, 1, 2e-6, 230.0, 2e-6, 230.0)

    per_micro = (24 * 4 + 2) * allreduce(size) + 3 * allreduce(4 * 2048 * 4)
    assert float(r.tp_comm_s) == pytest.approx(2 * per_micro, rel=1e-9)
    # pp 2: the first stage has the embedding's, the last the output layer's and the loss's;
    # the busier end sets the pace (12 layers each)
    r2 = evaluate_layouts(_inputs(dp=1, tp=8, pp=2, micro_batch=4, global_batch=8,
                                  schedule=SCHEDULES["1f1b"]))
    per_micro = (12 * 4 + 1) * allreduce(size) + 3 * allreduce(4 * 2048 * 4)
    assert float(r2.tp_comm_s) == pytest.approx(2 * per_micro, rel=1e-9)


def test_context_parallel_keeps_scores_of_its_queries_against_every_key():
    # unfused attention under context parallelism: each rank's s/c queries score all s keys
    # (ring: every chunk's block; all-to-all: a/c heads over the whole sequence), so the
    # Korthikanti score term 5 a s^2 b / t becomes 5 a (s/c) s b / t, not 5 a (s/c)^2 b / t;
    # the rest of the layer's activations shrink with s/c. GPT 1.7B, cp 2, tp 1, micro-batch 4.
    r = evaluate_layouts(_inputs(dp=4, cp=2, micro_batch=4, global_batch=16))
    s, c, b, h, a = 2048, 2, 4, 2304, 24
    per_layer = (s / c) * b * h * 34 + 5 * a * (s / c) * s * b
    logits = 4 * b * (s / c) * 51200
    assert float(r.activation_bytes) == pytest.approx(24 * per_layer + logits)


def test_kv_heads_fewer_than_tp_are_replicated_not_split_below_one_head():
    # Megatron-Core attention (num_query_groups < tp): every tensor-parallel rank holds one key/
    # value head, so K and V are replicated t/kv times, not split into fractions of a head.
    # GPT 1.7B's widths with 2 kv heads at tp 8, pp 2 (12 layers a stage): per rank K and V
    # keep h x (h/a) weights each and activations of one head, 4 (h/a) bytes per token
    h, a, kv, t = 2304, 24, 2, 8
    gqa = dict(kv_heads=kv, params=tf.parameter_count(24, h, a, kv, 4 * h, False, 2048, 51200))
    layout = dict(dp=1, tp=t, pp=2, micro_batch=4, global_batch=8, schedule=SCHEDULES["1f1b"])
    r = evaluate_layouts(_inputs(**layout).replace(**gqa))
    q_o_mlp = 2 * h * h + 2 * h * 4 * h
    per_rank_layer = (q_o_mlp + 4 * h) / t + 2 * h * (h / a)  # K, V: one head each
    assert float(r.weights_bytes) == pytest.approx(2 * (12 * per_rank_layer + 51200 * h / t))
    sbh = 2048 * 4 * h
    per_layer = sbh * (10 + (2 + 2 + 16) / t + 5 * a * 2048 / (h * t)) + sbh * 4 / a
    assert float(r.activation_bytes) == pytest.approx(12 * per_layer * 2)


def test_fsdp_under_a_pipeline_keeps_parameters_and_gradients_whole_for_the_step():
    # PyTorch pipelining (torch.distributed.pipelining, torchtitan's PP) disables FSDP's
    # reshard-after-backward and gradient sync for every micro-batch but the last
    # (set_reshard_after_backward(False), set_requires_gradient_sync(False)), and torchtitan
    # does not reshard after forward with PP: a ZeRO-2/3 stage holds its whole parameters and
    # gradients through the step and exchanges once (one all-gather, one reduce-scatter), as
    # FSDP's no_sync ZeRO-2. GPT 1.7B, dp 4 x pp 2, 4 micro-batches of 4.
    from scalesim.model.sharding import ONCE_PER_STEP

    layout = dict(dp=4, pp=2, micro_batch=4, global_batch=64, schedule=SCHEDULES["1f1b"])
    z3 = evaluate_layouts(_inputs(**layout, zero=3))
    z2_once = evaluate_layouts(_inputs(**layout, zero=2).replace(grad_sync=ONCE_PER_STEP))
    stage = 12 * (tf.layer_matmul_weights(2304, 24, 24, 9216, False) + 4 * 2304) + 51200 * 2304
    assert float(z3.weights_bytes) == pytest.approx(2 * stage)  # whole, not / dp
    assert float(z3.grads_bytes) == pytest.approx(2 * stage)
    assert float(z3.optimizer_bytes) == pytest.approx(12 * stage / 4)
    for part in PARTS + ("memory_bytes",):
        assert float(getattr(z3, part)) == pytest.approx(float(getattr(z2_once, part)))
    # without a pipeline ZeRO-3 shards as before
    flat = evaluate_layouts(_inputs(dp=8, micro_batch=4, global_batch=64, zero=3))
    # (its fp32 parameter shard the master in the optimizer's 12 B, its gradient shard fp32)
    assert float(flat.weights_bytes) == 0.0
    assert float(flat.grads_bytes) == pytest.approx(4 * GPT["params"] / 8)
