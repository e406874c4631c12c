"""docs/model.md's equations as the doc writes them, on round numbers: the pipeline (§15), the
layout's memory and stragglers (§16), and (second pass) the collectives (§2), ZeRO-3's backward
overlap (§3) and the optimizer's shard divisor (§1, §7, §13). Each pins a line of the doc that
had said something other than what the model computes (session 42's audits)."""

import numpy as np
import pytest
from test_collective_waits import GPT, HW
from test_layout_knobs import _layer_and_logits_s

from scalesim.layout import INTERLEAVED, ONE_F_ONE_B
from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.tensor_parallel import tp_comm_end_stages_s, tp_comm_per_layer_s


def _inputs(**changes):
    base = dict(dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=4, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    base.update(changes)
    return LayoutInputs(**{**GPT, **HW, **base})


def test_the_interleaved_last_stage_holds_its_warm_up_chunks_in_flight():
    """§15/§16: the last rank of an interleaved pipeline holds ((v - 1) p + 1) / v micro-batches
    of its layers in flight, not 1. GPT 1.7B's layer shape, 4 layers over p 2 x v 2 (2 layers a
    rank), m = 4, a 256,000-token vocabulary so that the last rank (fp32 logits of one
    micro-batch) is the fullest: 2 layers x 1.5 + 4 b s V bytes; the first holds 2 x 2.5."""
    x = _inputs(pp=2, schedule=INTERLEAVED, virtual_stages=2, layers=4, vocab=256000)
    act = float(tf.activation_bytes_per_layer(4, 2048, 2304, 24, 24, 9216, False))
    last = 2 * act * ((2 - 1) * 2 + 1) / 2 + 4 * 4 * 2048 * 256000
    first = 2 * act * 2 * (1 + 1 / 4)
    assert last > first
    assert float(evaluate_layouts(x).activation_bytes) == pytest.approx(last, rel=1e-12)
    # what the doc said (one micro-batch in flight on the last stage) is one layer, 2.65 GB, less
    assert last - (2 * act + 4 * 4 * 2048 * 256000) == pytest.approx(act, rel=1e-12)


def test_the_bubble_is_idle_times_the_average_stage_but_the_slowest_with_its_tp_time():
    """§15: bubble = idle · t_fill, t_fill = (p t_average_stage - t_slowest_stage) / (p - 1),
    t_average_stage = (L (t_layer + t_tp + t_cp) + t_logits + t_emb + t_out) / p. GPT 1.7B at
    tp 2 × pp 4, 1F1B, m = 8: idle p - 1 = 3, so the bubble is every stage's micro-batch once
    but the slowest's (the last: 6 layers, the logits, the output layer's collectives); the
    layer and logits compute from the unsplit model (tp 2), the collectives by §2's ring on the
    server's 230 GB/s, 2 µs."""
    layer, logits = _layer_and_logits_s()
    tp_layer = float(tp_comm_per_layer_s(4, 2048, 2304, 2, 1, 0, False, 2e-6, 230.0))
    emb, out = (float(t) for t in tp_comm_end_stages_s(4, 2048, 2304, 2, 1, False, 2e-6, 230.0))
    # one all-reduce of b s h 2 bytes over 2 ranks: 2 α + S / B (2 (n - 1)/n = 1)
    assert emb == pytest.approx(2 * 2e-6 + 4 * 2048 * 2304 * 2 / 230e9, rel=1e-12)
    average = (24 * (layer + tp_layer) + logits + emb + out) / 4
    last = 6 * (layer + tp_layer) + logits + out
    r = evaluate_layouts(_inputs(tp=2, pp=4, schedule=ONE_F_ONE_B, global_batch=32))
    assert float(r.bubble_s) == pytest.approx(4 * average - last, rel=1e-9)
    # three average stages (before session 50) charged the slowest's excess once more: 4.5 %
    assert 3 * average == pytest.approx(1.045 * float(r.bubble_s), rel=1e-3)


def _stage_parts(layers, vocab, m=4, **layout):
    """(one layer's compute, the output layer's and loss's compute, the evaluated split layout)
    per micro-batch at tp 8 with GPT 1.7B's layer: the compute from the unsplit model's
    micro-batch at ``layers`` and ``layers - 1`` layers (m = 4 less m = 1, over 3)."""

    def per_micro_batch(n_layers):
        unsplit = _inputs(tp=8, global_batch=4 * m).replace(layers=n_layers, vocab=vocab)
        return float(evaluate_layouts(unsplit).compute_s
                     - evaluate_layouts(unsplit.replace(global_batch=4)).compute_s) / (m - 1)

    layer = per_micro_batch(layers) - per_micro_batch(layers - 1)
    logits = per_micro_batch(layers) - layers * layer
    x = _inputs(tp=8, schedule=ONE_F_ONE_B, global_batch=4 * m, **layout).replace(
        layers=layers, vocab=vocab)
    return layer, logits, x


def _stage_term_per_micro_batch(x, m=4):
    """(compute, tensor-parallel) seconds per micro-batch the step charges its slowest stage:
    the step's compute and tp terms at m less at m = 1, over m - 1 (the optimizer cancels)."""
    r, one = evaluate_layouts(x), evaluate_layouts(x.replace(global_batch=4))
    return (float(r.compute_s - one.compute_s) / (m - 1),
            float(r.tp_comm_s - one.tp_comm_s) / (m - 1))


def test_the_slowest_stage_is_the_one_with_the_longest_compute_and_tp_time_by_hand():
    """§15: a synchronous pipeline waits for its slowest stage, the stage whose micro-batch,
    compute + exposed tensor-parallel time, is the longest: max over stages of the sum, not the
    sum of each term's maximum. GPT 1.7B's layer at tp 8 (b 4, s 2048, h 2304), 5 layers over
    p 2 (3, 2), V 64,000, m = 4, by hand:

    - a layer 4.016 ms of compute, the output layer and loss 4.837 ms (the unsplit model);
    - a layer's tp time 4 all-reduces of b s h 2 = 37.7 MB over 8 ranks on the server's
      230 GB/s, 2 µs (§2's ring: 2 (n - 1) α + 2 (n - 1)/n S / B = 0.3152 ms each): 1.2609 ms;
      the embedding's one all-reduce t_emb 0.3152 ms, the output layer's and loss's t_out
      0.4000 ms (§14);
    - stage 0: 3 × 4.016 + 3 × 1.2609 + 0.3152 = 16.145 ms; stage 1: 2 × 4.016 + 4.837 +
      2 × 1.2609 + 0.4000 = 15.789 ms; the step charges stage 0's 16.145 ms, its compute
      12.05 ms and its tp 4.098 ms. The last stage leads the compute (12.88 ms) and the first
      the tp time, so the maxima taken apart (before session 42) charged 16.97 ms, 5.1 % more
      of the stage term."""
    layer, logits, x = _stage_parts(5, 64000, pp=2)
    assert layer == pytest.approx(4.016e-3, rel=1e-3)
    assert logits == pytest.approx(4.837e-3, rel=1e-3)
    ring = 2 * 7 * 2e-6 + 2 * 7 / 8 * 4 * 2048 * 2304 * 2 / 230e9
    assert ring == pytest.approx(0.3152e-3, rel=1e-3)
    tp_layer = float(tp_comm_per_layer_s(4, 2048, 2304, 8, 1, 0, False, 2e-6, 230.0))
    emb, out = (float(t) for t in tp_comm_end_stages_s(4, 2048, 2304, 8, 1, False, 2e-6, 230.0))
    assert tp_layer == pytest.approx(4 * ring, rel=1e-12) and emb == pytest.approx(ring, rel=1e-12)
    assert out == pytest.approx(0.4000e-3, rel=1e-3)
    compute = [3 * layer, 2 * layer + logits]
    tp = [3 * tp_layer + emb, 2 * tp_layer + out]
    assert compute[1] > compute[0] and tp[0] > tp[1]  # each term led by another stage
    assert [c + t for c, t in zip(compute, tp, strict=True)] == pytest.approx(
        [16.145e-3, 15.789e-3], rel=1e-3)
    charged_compute, charged_tp = _stage_term_per_micro_batch(x)
    assert charged_compute == pytest.approx(compute[0], rel=1e-9)
    assert charged_tp == pytest.approx(tp[0], rel=1e-9)
    assert max(compute) + max(tp) == pytest.approx(1.051 * (charged_compute + charged_tp), rel=1e-3)


def test_the_slowest_stage_with_a_large_vocabulary_is_not_charged_two_stages_maxima():
    """§15, the audit's case: 32 layers over p 12 (1, 3 × 10, 1), V 256,000, GPT 1.7B's layer
    at tp 8, m = 4: the last stage (1 layer + the logits) leads the compute, a middle one (3
    layers) the tp time; the step charges the last stage's sum, which is the longest, where
    the two maxima taken apart over-charged 2.9 % of the step (3.0 % of the step since session
    50's bubble of the stages but the slowest, docs/model.md §15)."""
    m = 4
    layer, logits, x = _stage_parts(32, 256000, pp=12)
    tp_layer = float(tp_comm_per_layer_s(4, 2048, 2304, 8, 1, 0, False, 2e-6, 230.0))
    emb, out = (float(t) for t in tp_comm_end_stages_s(4, 2048, 2304, 8, 1, False, 2e-6, 230.0))
    compute = [1 * layer, 3 * layer, 1 * layer + logits]
    tp = [1 * tp_layer + emb, 3 * tp_layer, 1 * tp_layer + out]
    assert max(tp) == tp[1] and max(compute) == compute[2]
    sums = [c + t for c, t in zip(compute, tp, strict=True)]
    assert max(sums) == sums[2]
    charged_compute, charged_tp = _stage_term_per_micro_batch(x)
    assert (charged_compute, charged_tp) == pytest.approx((compute[2], tp[2]), rel=1e-9)
    step = float(evaluate_layouts(x).step_time_s)
    over = max(compute) + max(tp) - max(sums)
    assert m * over / (step + m * over) == pytest.approx(0.0303, abs=5e-4)  # what was charged


def test_a_slow_device_under_a_barrier_every_micro_batch_waits_with_that_micro_batchs_jitter():
    """§16 at tp 1: where the exchange is a barrier in every micro-batch (ZeRO-2 and ZeRO-3
    with FSDP's default sync), the wait is m · wait(p, σ_mb, d/m) with σ_mb = hypot(cv_d ·
    compute / m, cv_j · t_mb), not σ/m of the once-per-step σ = hypot(cv_d · compute, cv_j · t_mb
    · √m). GPT 1.7B on 8 data-parallel ranks, m = 4, cv_j 0.05, cv_d 0.0132, rank 5 1.2× slower."""
    from test_layout_knobs import _per_micro_batch_s

    from scalesim.model.stragglers import straggler_wait_s

    m = 4
    for zero in (2, 3):
        t_mb = _per_micro_batch_s(dp=8, tp=1, zero=zero)
        x = _inputs(dp=8, zero=zero, global_batch=128, jitter_cv=0.05, device_cv=0.0132,
                    slow_rank=5, slow_factor=1.2)
        r = evaluate_layouts(x)
        compute, d = float(r.compute_s), 0.2 * m * t_mb
        sigma_mb = float(np.hypot(0.0132 * compute / m, 0.05 * t_mb))
        assert float(r.straggler_s) == pytest.approx(
            m * float(straggler_wait_s(8, sigma_mb, d / m)), rel=1e-9)
        sigma_step = float(np.hypot(0.0132 * compute, 0.05 * t_mb * np.sqrt(m)))
        said = m * float(straggler_wait_s(8, sigma_step / m, d / m))  # what the doc wrote
        assert float(r.straggler_s) > said * (1 + 1e-4)
    # under FSDP's no_sync ZeRO-2 waits once per step: the once-per-step σ, d whole
    t_mb = _per_micro_batch_s(dp=8, tp=1, zero=2)
    once = evaluate_layouts(_inputs(dp=8, zero=2, global_batch=128, jitter_cv=0.05,
                                    device_cv=0.0132, slow_rank=5, slow_factor=1.2, grad_sync=1))
    sigma = float(np.hypot(0.0132 * float(once.compute_s), 0.05 * t_mb * np.sqrt(m)))
    assert float(once.straggler_s) == pytest.approx(
        float(straggler_wait_s(8, sigma, 0.2 * m * t_mb)), rel=1e-9)


def test_a_ring_attention_hop_carries_one_replicated_kv_head_where_kv_is_below_tp():
    """§14: a context-parallel hop is 2 b (s/c) (max(kv, t) h/a) / t 16-bit elements: with 2 kv
    heads at tp 8 each rank passes one head of K and V (§12), not a quarter of one. GPT 1.7B's
    widths, tp 8 × cp 2 on two 8-GPU servers (the ring crosses them: one GPU's NIC share,
    192/8 GB/s, 6 µs), m = 2, every hop exposed (contention 1): 3 (c - 1) hops a layer."""
    h, a, kv, t, c, b, s = 2304, 24, 2, 8, 2, 4, 2048
    gqa = dict(kv_heads=kv, params=tf.parameter_count(24, h, a, kv, 4 * h, False, s, 51200))
    x = _inputs(tp=t, cp=c, micro_batch=b, global_batch=2 * b, comm_contention=1.0).replace(**gqa)
    hop_bytes = 2 * b * (s / c) * (max(kv, t) * h / a) / t * 2
    assert hop_bytes == 2 * b * (s / c) * (h / a) * 2  # one head of K and of V
    hop = 6e-6 + hop_bytes / (192e9 / 8)
    assert float(evaluate_layouts(x).cp_comm_s) == pytest.approx(2 * 24 * 3 * (c - 1) * hop,
                                                                 rel=1e-12)


def test_fsdp_under_a_pipeline_holds_whole_gradients_at_any_micro_batch_count():
    """§16: a pipeline's FSDP runs as FSDP's no_sync ZeRO-2: weights whole, gradients whole
    (accumulated unsharded until the stage reduces after its last micro-batch), at m = 1 too:
    PyTorch's pipelining runs every backward, the only one included, without gradient sync
    (session 45; it had been sharded at m = 1, as §4's k = 1 without a pipeline). GPT 1.7B,
    dp 4 × pp 2, ZeRO-3, micro-batch 4."""
    stage = 12 * (tf.layer_matmul_weights(2304, 24, 24, 9216, False) + 4 * 2304) + 51200 * 2304
    for m in (1, 8):
        r = evaluate_layouts(_inputs(dp=4, pp=2, zero=3, schedule=ONE_F_ONE_B,
                                     global_batch=4 * 4 * m))
        assert float(r.weights_bytes) == pytest.approx(2 * stage, rel=1e-12)
        assert float(r.grads_bytes) == pytest.approx(2 * stage, rel=1e-12)
        assert float(r.optimizer_bytes) == pytest.approx(12 * stage / 4, rel=1e-12)


def test_the_tree_has_no_chain_term_with_one_gpu_per_server():
    """§2: the tree's time is latency + max(c_g S/B_intra, f_N S/B_inter), c_g = 2 where a server
    holds two or more ranks, 0 with one (no intra-server chain); f_1 = 0, f_2 = 1, f_{N>2} = 2.
    One GPU on each of 4 servers, 1 GB, a slow 10 GB/s intra figure the job never uses: 2·2·10 µs
    + 2 GB / 50 GB/s = 40.04 ms; the doc's old max(2S/B_intra, ...) read 200.04 ms."""
    from scalesim.model import collectives as coll

    size = 1e9
    t = float(coll.allreduce_s(size, 1, 4, 1e-6, 10.0, 10e-6, 50.0, coll.TREE))
    assert t == pytest.approx(2 * 2 * 10e-6 + 2 * size / 50e9, rel=1e-12)
    assert 2 * 2 * 10e-6 + max(2 * size / 10e9, 2 * size / 50e9) > 4.9 * t  # the old reading
    # two GPUs a server: the chain's 2 S / B_intra is back and sets the rate
    t2 = float(coll.allreduce_s(size, 2, 4, 1e-6, 10.0, 10e-6, 50.0, coll.TREE))
    assert t2 == pytest.approx(2 * 1 * 1e-6 + 2 * 2 * 10e-6 + 2 * size / 10e9, rel=1e-12)
    # one server (f_1 = 0): the chain alone, 2 (g - 1) α_intra + 2 S / B_intra
    t1 = float(coll.allreduce_s(size, 4, 1, 1e-6, 10.0, 10e-6, 50.0, coll.TREE))
    assert t1 == pytest.approx(2 * 3 * 1e-6 + 2 * size / 10e9, rel=1e-12)


def test_nvls_tree_bus_bandwidth_is_two_over_the_trees_f_n_times_the_network():
    """§2: NVLS-tree's busbw is min(B_NVLS, (2/f_N)·B_inter) with the tree's f_N (bytes a server
    sends per byte: f_2 = 1, f_{N>2} = 2), converted by the ring's 2(p-1)/p. 8 GPUs a server,
    NVLS 480 GB/s, 1 GB, inter 192 GB/s at 6 µs: 2 servers at min(480, 384), 4 and 8 at 192."""
    from scalesim.model import collectives as coll

    size = 1e9
    for nodes in (2, 3, 4, 8):
        f_n = float(coll.tree_inter_volume(nodes))
        p = 8 * nodes
        busbw = min(480.0, 2.0 / f_n * 192.0)
        doc = 25e-6 + 2 * np.floor(np.log2(nodes)) * 6e-6 + 2 * (p - 1) / p * size / (busbw * 1e9)
        t = float(coll.affine_s(coll.nvls_coeffs(8, nodes, 480.0, 6e-6, 192.0), size))
        assert t == pytest.approx(doc, rel=1e-12)
    assert float(coll.tree_inter_volume(2)) == 1.0  # so the old f_N·B_inter read 192 at 2
    two = 25e-6 + 2 * 6e-6 + 2 * 15 / 16 * size / 192e9
    assert two == pytest.approx(9.803e-3, rel=1e-3)


def test_zero3_backward_exposes_the_largest_of_four_bounds_less_the_backward():
    """§3: ZeRO-3 (FSDP) exposes, per micro-batch, its forward gathers' prefetch_end - F and, in
    backward, max(prefetch_end - T_b, timeline_end - T_b, Σ gather + Σ reduce - T_b,
    gather_first + reduce_last). 4 equal units, forward F = 1 s, backward T_b = 2 s, k = 1; a
    ring whose time is 1 ms per byte, units of 100 bytes gathered (0.1 s each)."""
    from scalesim.model.zero_exchange import exchange

    def ring(size):
        return 1e-3 * np.asarray(size, dtype=float)

    def exposed(reduce_bytes_per_param, per_byte=1.0):
        e, _total, _units = exchange(3, 0, 400.0 * per_byte, 8, 4, 1, 1.0, 2.0, True, ring, ring,
                                     2.0, reduce_bytes_per_param=reduce_bytes_per_param)
        return float(e)

    # forward: max(c + L f, L c + f) - F = max(0.1 + 1, 0.4 + 0.25) - 1 = 0.1 (every case below)
    # fast link: the first gather and the last reduce-scatter dominate, 0.1 + 0.1
    assert exposed(2.0) == pytest.approx(0.1 + 0.2, rel=1e-12)
    # what the doc's old words gave read as ends: max(2.1, 2.1, -1.2, 0.2) = 2.1 s of backward
    assert 0.1 + max(2.1, 2.1, 0.8 - 2.0, 0.2) > 7 * exposed(2.0)
    # reduce-scatters 8x the bytes (0.8 s a unit, ready every 0.5 s): their backlog dominates,
    # ends 1.3, 2.1, 2.9, 3.7 -> 1.7 s; the channel's 0.4 + 3.2 - 2 = 1.6 s is below it
    assert exposed(16.0) == pytest.approx(0.1 + 1.7, rel=1e-12)
    # 10x the bytes on both (1 s a unit): the channel carrying both dominates, 4 + 4 - 2 = 6 s;
    # gathers alone max(1 + 2, 4 + 0.5) - 2 = 2.5, reduce-scatters alone 2.5, first + last 2;
    # forward max(1 + 1, 4 + 0.25) - 1 = 3.25
    assert exposed(2.0, per_byte=10.0) == pytest.approx(3.25 + 6.0, rel=1e-12)


def test_zero_divides_the_optimizer_step_over_dp_times_cp():
    """§13 / §7: each device updates Ψ_local / s parameters, s = dp·cp (the ZeRO states shard
    over the data- and context-parallel ranks), not dp. GPT 1.7B, dp 2 × cp 2, ZeRO-1 against
    ZeRO-0: the memory-bound optimizer of Ψ (2·2 + 2 + 2·12 bytes at 2,039 GB/s) falls to a
    quarter, of each framework's sweep (§4, session 46): PyTorch DDP's fp32 weights and
    gradients 2·12 + 4 = 28 bytes, Megatron-Core's distributed optimizer 28 + its fp32 → bf16
    copy 6 + its default gradient-norm clip of the fp32 main grads 12 = 46 (session 47; bf16
    main grads: + their cast to fp32 6 = 52); PyTorch DDP over the 4 ranks also copies its fp32
    gradients into its buckets and back, 4·4 = 16 (session 56): 44; nothing else of compute
    moves."""
    psi = GPT["params"]
    whole = psi * 30.0 / 2039e9
    ddp = evaluate_layouts(_inputs(dp=2, cp=2, global_batch=8))
    zero1 = evaluate_layouts(_inputs(dp=2, cp=2, zero=1, global_batch=8))
    ddp_reads, reads = 44.0 / 30.0, 46.0 / 30.0
    assert float(ddp.compute_s - zero1.compute_s) == pytest.approx(
        whole * (ddp_reads - reads / 4), rel=1e-9)
    # a shard group of 2 of those 4 ranks (hybrid sharding) updates a half
    hsdp = evaluate_layouts(_inputs(dp=2, cp=2, zero=1, global_batch=8, shard_group=2))
    assert float(ddp.compute_s - hsdp.compute_s) == pytest.approx(
        whole * (ddp_reads - reads / 2), rel=1e-9)
    # bf16 main grads stated (grad_reduce_in_fp32 False): 52 bytes, a quarter; DDP's 16-bit
    # gradients stated (a model cast to bf16) keep the workload's 30, and copy bf16 buckets: + 8
    ddp16 = evaluate_layouts(_inputs(dp=2, cp=2, global_batch=8, reduce_bytes_per_param=2.0))
    bf16 = evaluate_layouts(_inputs(dp=2, cp=2, zero=1, global_batch=8,
                                    reduce_bytes_per_param=2.0))
    assert float(ddp16.compute_s - bf16.compute_s) == pytest.approx(
        whole * (38 / 30 - 52 / 30 / 4), rel=1e-9)


def test_zero3_gathers_at_most_the_layers_a_stage_holds():
    """§4 / §16: ZeRO-3 holds whole the layer it computes and the one it prefetches, min(2, n)
    layers of a stage holding n (FSDP: one unit a layer; with one unit there is nothing to
    prefetch). GPT 1.7B's layer, 4 h² + 2 h f + 4 h = 63,710,208 parameters at 2 bytes, on
    dp 2: one layer 127,420,416 bytes gathered, as §4's data-parallel rule min(2, L) Ψ w / L
    at L = 1; two or three layers twice that. Before session 42 the layout path charged two
    layers at L = 1 (254,840,832 bytes). DeepSpeed's ZeRO-3 gathers by module, keeping what its
    reuse distance keeps and prefetching (session 47, min(Psi, 5e8 + 5e7) of the stage's
    parameters): at pp 2 the first stage's tied 51,200 x 2,304 = 117,964,800-parameter
    embedding too, with one layer 2 x 181,675,008 = 363,350,016 bytes, with two
    2 x 245,385,216 = 490,770,432 (one and two layers, 127,420,416 and twice that, before)."""
    from scalesim.model.memory import ZERO3, gathered_parameter_bytes
    from scalesim.model.sharding import DEEPSPEED

    layer = 4 * 2304**2 + 2 * 2304 * 9216 + 4 * 2304
    assert layer == 63_710_208
    assert float(gathered_parameter_bytes(ZERO3, 2, layer, 2.0, 1)) == 2 * layer

    def gathered(**changes):
        r = evaluate_layouts(_inputs(dp=2, zero=3, global_batch=8, **changes))
        plain = evaluate_layouts(_inputs(dp=2, zero=2, global_batch=8, **changes))
        # DeepSpeed's ipg buckets of 5e8 bf16 elements: two at stage 2 (overlap_comm), one at
        # stage 3 (its step's gradient copies stay below the activations; session 46)
        buckets = 1e9 if changes.get("framework") == DEEPSPEED else 0.0
        return float(r.buffer_bytes - plain.buffer_bytes) + buckets

    assert gathered(layers=1) == 127_420_416
    assert gathered(layers=2) == gathered(layers=3) == 2 * 127_420_416
    embedding = 51_200 * 2_304
    assert gathered(layers=2, pp=2, schedule=ONE_F_ONE_B, framework=DEEPSPEED) == 2 * (
        layer + embedding) == 363_350_016
    assert gathered(layers=4, pp=2, schedule=ONE_F_ONE_B, framework=DEEPSPEED) == 2 * (
        2 * layer + embedding) == 490_770_432
