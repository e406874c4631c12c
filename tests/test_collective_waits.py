"""Per-collective waits for the slowest rank (docs/model.md §14, §16) and NVLS in the layout
model's data-parallel all-reduce (§2, §16), against hand-computed values."""

import numpy as np
import pytest

from scalesim.model import collectives as coll
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.stragglers import collective_waits_s, straggler_wait_s
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

E2, E4, E8 = 1 / np.sqrt(np.pi), 1.0294, 1.4236  # expected maxima of 2, 4, 8 standard normals

GPT = dict(layers=24, hidden=2304, heads=24, kv_heads=24, ffn_hidden=9216, gated=False,
           seq_len=2048, vocab=51200, tied_embeddings=True, flash_attention=False, params=1.652e9)
HW = dict(devices_per_node=8, peak_flops_per_s=312e12, efficiency=0.7, memory_bandwidth_GBps=2039,
          intra_latency_s=2e-6, intra_busbw_GBps=230, inter_latency_s=6e-6, inter_busbw_GBps=192,
          device_memory_bytes=80 * 2**30, comm_contention=0.159)


def _inputs(**changes):
    base = dict(dp=1, tp=2, pp=1, cp=1, zero=0, micro_batch=4, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, device_cv=0.0)
    base.update(changes)
    return LayoutInputs(**GPT, **{**HW, **base})


def _micro_step_s(**changes):
    """One micro-batch's compute (without the optimizer): compute of m = 4 less m = 1, / 3."""
    mb = changes.get("micro_batch", 4) * changes.get("dp", 1)  # sequences of one micro-batch
    four = evaluate_layouts(_inputs(**{**changes, "global_batch": 4 * mb})).compute_s
    one = evaluate_layouts(_inputs(**{**changes, "global_batch": mb})).compute_s
    return float(four - one) / 3.0


def test_collective_waits_by_hand():
    # 2 ranks, 16 collectives in a 40 ms micro-step at cv 0.3: each waits e_2 x 0.3 x 2.5 ms
    per_collective = E2 * 0.3 * 0.040 / 16
    assert collective_waits_s(2, 16, 0.040, 0.3) == pytest.approx(16 * per_collective)
    assert collective_waits_s(2, 16, 0.040, 0.3) == pytest.approx(6.770e-3, rel=1e-3)
    # the segments' waits add up to one expected maximum of the micro-step's jitter, whatever
    # the number of collectives, and a group of 8 waits e_8 standard deviations
    assert collective_waits_s(2, 4, 0.040, 0.3) == pytest.approx(6.770e-3, rel=1e-3)
    assert collective_waits_s(8, 96, 0.1, 0.02) == pytest.approx(E8 * 0.02 * 0.1, rel=1e-4)
    # one collective is one barrier: the straggler wait of one micro-step
    assert collective_waits_s(8, 1, 0.1, 0.02) == pytest.approx(
        float(straggler_wait_s(8, 0.002, 0.0)))
    # nobody to wait for, nothing to wait at, no jitter: no wait
    assert collective_waits_s([1, 2, 2], [16, 0, 16], 0.04, [0.3, 0.3, 0.0]) == pytest.approx(0.0)


def test_tensor_group_waits_at_every_micro_batch():
    """dp 1 x tp 2, 4 micro-batches: each micro-batch's collectives wait e_2 x cv x t_micro;
    one tp group has nobody else to wait for at the end of the step."""
    t_mb = _micro_step_s()
    r = evaluate_layouts(_inputs(jitter_cv=0.05))
    assert float(r.straggler_s) == pytest.approx(4 * E2 * 0.05 * t_mb, rel=1e-6)
    # without jitter or device spread nobody waits, and jitter moves nothing else
    quiet = evaluate_layouts(_inputs())
    assert float(quiet.straggler_s) == 0.0
    assert float(r.step_time_s - r.straggler_s) == pytest.approx(float(quiet.step_time_s))


def test_groups_wait_for_each_other_once_per_step():
    """dp 4 x tp 2 (8 devices): the device spread over all 8, the 4 tp groups' jitter pooled over
    the 4 micro-batches (one barrier), and every micro-batch's tp waits."""
    t_mb = _micro_step_s(dp=4)
    r = evaluate_layouts(_inputs(dp=4, global_batch=64, jitter_cv=0.05, device_cv=0.0132))
    compute = float(r.compute_s)
    expected = (E8 * 0.0132 * compute + E4 * 0.05 * t_mb * np.sqrt(4)
                + 4 * E2 * 0.05 * t_mb)
    assert float(r.straggler_s) == pytest.approx(expected, rel=1e-3)


def test_without_tensor_parallelism_the_spreads_add_in_variance_as_in_section_6():
    t_mb = _micro_step_s(dp=8, tp=1)
    r = evaluate_layouts(_inputs(dp=8, tp=1, global_batch=128, jitter_cv=0.05,
                                 device_cv=0.0132))
    sigma = np.hypot(0.0132 * float(r.compute_s), 0.05 * t_mb * np.sqrt(4))
    assert float(r.straggler_s) == pytest.approx(E8 * sigma, rel=1e-3)
    # ZeRO-3 gathers in every micro-batch: each one waits, jitter is not pooled (§6)
    z3 = evaluate_layouts(_inputs(dp=8, tp=1, global_batch=128, zero=3, jitter_cv=0.05,
                                  device_cv=0.0132))
    sigma_mb = np.hypot(0.0132 * float(z3.compute_s) / 4, 0.05 * t_mb)
    assert float(z3.straggler_s) == pytest.approx(4 * E8 * sigma_mb, rel=1e-3)
    assert float(z3.straggler_s) > float(r.straggler_s)


@pytest.fixture(scope="module")
def gpt():
    return resolve_profile(None, "dgx-a100", "gpt-1.7b")


def test_predict_and_sweep_take_the_jitter_for_a_split_model(gpt):
    split = Scenario(devices=[8, 16], micro_batch=4, layout=ScenarioLayout(tp=4))
    quiet = predict(gpt, split)
    noisy = predict(gpt, split.model_copy(update={"straggler_cv": 0.05}))
    for q, n in zip(quiet, noisy, strict=True):
        assert n.straggler_s > q.straggler_s + 0.5 * 0.05 * q.compute_s / 4  # >= e_4/4 of it
        assert n.compute_s == pytest.approx(q.compute_s)
    res = sweep(gpt, Scenario(devices=[8], micro_batch=4), {"tp": [1, 4],
                                                           "straggler_cv": [0.0, 0.05]})
    s = res.columns["straggler_s"]
    cv, tp = res.columns["straggler_cv"], res.columns["tp"]
    assert s[(cv == 0.05) & (tp == 4)][0] > s[(cv == 0.0) & (tp == 4)][0]
    assert s[(cv == 0.05) & (tp == 1)][0] > s[(cv == 0.0) & (tp == 1)][0]


def test_split_and_data_parallel_paths_charge_the_same_jitter_at_tp_1(gpt):
    scenario = Scenario(devices=[8], micro_batch=4, accumulation=4, straggler_cv=0.05)
    split = predict(gpt, scenario)[0]
    flat = predict(gpt.model_copy(update={"workload": gpt.workload.model_copy(
        update={"transformer": None})}), scenario)[0]
    # the same §6 wait; the two paths' computes differ only by the optimizer step (§22)
    assert split.straggler_s == pytest.approx(flat.straggler_s, rel=0.05)


# -------------------------------------------------------------- NVLS in the dp all-reduce

def test_nvls_in_the_data_parallel_allreduce_by_hand():
    """The gradient all-reduce of the 1.652e9-parameter 16-bit model on H100 servers (ring
    busbw 370 GB/s, NVLS 480 GB/s, 192 GB/s of NICs per server). With contention 1 every second
    of the exchange is charged (§3), so dp_exposed is the all-reduce's time."""
    size = GPT["params"] * 4  # DDP all-reduces fp32 gradients since session 45: 4 B x 1.652e9
    h100 = dict(intra_latency_s=2e-6, intra_busbw_GBps=370.0, comm_contention=1.0)
    # one DDP bucket holding the whole gradient, so that one all-reduce is timed
    ring = _inputs(dp=8, tp=1, global_batch=32, bucket_bytes=size, first_bucket_bytes=0.0,
                   **h100)
    nvls = ring.replace(nvls_busbw_ratio=480 / 370)
    # one server, dp 8: NVLS, 25 us + 2 x 7/8 x S / 480 GB/s (the ring: 14 x 2 us + S / 370)
    assert float(evaluate_layouts(nvls).dp_exposed_s) == pytest.approx(
        25e-6 + 1.75 * size / 480e9, rel=1e-9)
    assert float(evaluate_layouts(ring).dp_exposed_s) == pytest.approx(
        14 * 2e-6 + 1.75 * size / 370e9, rel=1e-9)
    # dp 4 over the stride-2 ranks of one server (tp 2): NVLS of the half-model shard
    half = evaluate_layouts(nvls.replace(dp=4, tp=2, global_batch=16))
    assert float(half.dp_exposed_s) == pytest.approx(25e-6 + 1.5 * size / 2 / 480e9, rel=1e-9)
    # two servers, dp 16: NVLS-tree, 25 us + 2 x log2(2) x 6 us + 2 x 15/16 x S / min(480,
    # 2 x 192), faster than the tree (the ring of nccl's tuner is slower still)
    two = evaluate_layouts(nvls.replace(dp=16, global_batch=64))
    assert float(two.dp_exposed_s) == pytest.approx(37e-6 + 1.875 * size / 384e9, rel=1e-9)
    tree = float(coll.allreduce_s(size, 8, 2, 2e-6, 370.0, 6e-6, 192.0))
    assert float(two.dp_exposed_s) < tree
    # the ratio scales with an intra-busbw override, as StepInputs' does
    faster = evaluate_layouts(nvls.replace(intra_busbw_GBps=740.0))
    assert float(faster.dp_exposed_s) == pytest.approx(25e-6 + 1.75 * size / 960e9, rel=1e-9)
    # DDP's own buckets (1 MiB, then 25 MiB of 6.608e9 B: 1 + 252 + a last one of 0.0352 x 25
    # MiB = 254), each an NVLS all-reduce paying its 25 us (the last, 0.92 MB: 28.4 us against
    # the ring's 32.4): the same bandwidth term, 254 latencies
    bucketed = nvls.replace(bucket_bytes=25 * 2**20, first_bucket_bytes=2**20)
    assert float(evaluate_layouts(bucketed).dp_exposed_s) == pytest.approx(
        254 * 25e-6 + 1.75 * size / 480e9, rel=1e-9)
    # no NVLS figure (NaN, the default): the ring/tree of before
    assert float(evaluate_layouts(ring.replace(nvls_busbw_ratio=np.nan)).step_time_s) == \
        float(evaluate_layouts(ring).step_time_s)


def test_the_planner_charges_the_waits_too(gpt):
    """plan() takes the jitter (the split remedy ranks layouts as predict then times them)."""
    from scalesim.plan import plan

    shape, hw = gpt.workload.transformer, gpt.hardware
    rows = {cv: {(r.dp, r.tp, r.pp, r.zero, r.micro_batch, r.schedule, r.recompute,
                  r.sequence_parallel): r for r in plan(shape, hw, [8], 64, top=None,
                                                        jitter_cv=cv)}
            for cv in (0.0, 0.05)}
    split = [k for k in rows[0.0] if k[1] > 1][0]
    assert rows[0.05][split].breakdown_s["straggler_s"] > rows[0.0][split].breakdown_s[
        "straggler_s"]


def test_nvls_in_the_tensor_parallel_allreduce_by_hand():
    """tp 8 on one H100 server, b = 2, s = 2048, h = 4096 (33.5 MB per all-reduce): NVLS, 25 us +
    2 x 7/8 x S / 480 GB/s, 4 per layer; sequence parallelism's reduce-scatter and all-gather
    stay rings; a small message keeps the ring where its latency is lower."""
    from scalesim.model import transformer as tf
    from scalesim.model.tensor_parallel import tp_comm_per_layer_s

    size = 2 * 2048 * 4096 * 2
    args = (2, 2048, 4096, 8, 1, tf.RECOMPUTE_NONE)
    nvls = tp_comm_per_layer_s(*args, False, 2e-6, 370.0, 2.0, 480.0)
    assert nvls == pytest.approx(4 * (25e-6 + 1.75 * size / 480e9), rel=1e-9)
    ring = tp_comm_per_layer_s(*args, False, 2e-6, 370.0)
    assert ring == pytest.approx(4 * (14 * 2e-6 + 1.75 * size / 370e9), rel=1e-9)
    sp = tp_comm_per_layer_s(*args, True, 2e-6, 370.0, 2.0, 480.0)
    assert sp == pytest.approx(ring)
    tiny = tp_comm_per_layer_s(1, 16, 64, 8, 1, tf.RECOMPUTE_NONE, False, 1e-6, 370.0, 2.0, 480.0)
    assert tiny == pytest.approx(4 * (14 * 1e-6 + 1.75 * 16 * 64 * 2 / 370e9), rel=1e-9)
    # and the layout step passes the level's NVLS figure to it
    x = _inputs(dp=1, tp=8, global_batch=4, intra_busbw_GBps=370.0)
    faster = evaluate_layouts(x.replace(nvls_busbw_ratio=480 / 370))
    assert float(faster.tp_comm_s) < float(evaluate_layouts(x).tp_comm_s)
