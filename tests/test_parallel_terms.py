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
    from scalesim.model.context_parallel import cp_comm_per_layer_s, kv_chunk_bytes

    # b=1, s=8192 over c=4, GQA 8 of 64 heads, h=8192, t=2: K and V of 2048 tokens x 1024 / 2
    size = kv_chunk_bytes(1, 8192, 8192, 64, 8, 2, 4)
    assert size == 2 * 2048 * 1024 / 2 * 2
    t = cp_comm_per_layer_s(size, 4, 2e-6, 100.0)
    assert t == pytest.approx(3 * 3 * (2e-6 + size / 100e9))
    assert cp_comm_per_layer_s(size, 1, 2e-6, 100.0) == 0


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
    assert float(rs[2].grads_bytes) == pytest.approx(2 * psi / 8)
    assert float(rs[3].weights_bytes) == pytest.approx(2 * psi / 8)
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
    assert float(inter.p2p_s) > float(one.p2p_s)


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
