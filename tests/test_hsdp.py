"""Hybrid sharding (HSDP: ZeRO states sharded inside a shard group of s ranks, replicated across
the (dp x cp) / s groups; docs/model.md §16): the exchange and memory by hand, full sharding
unchanged, the slow-network property, and the edges (predict, plan)."""

import itertools

import numpy as np
import pytest
from test_collective_waits import GPT, HW

from scalesim.model import collectives as coll
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts

RING = coll.ALGORITHMS["ring"]
P_BYTES = GPT["params"] * 2.0  # the whole model's 16-bit gradient (tp = pp = 1)
L = GPT["layers"]


def _inputs(**changes):
    base = dict(dp=16, tp=1, pp=1, cp=1, zero=2, micro_batch=1, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, device_cv=0.0,
                overlap=False, algorithm=RING)
    base.update(changes)
    return LayoutInputs(**GPT, **{**HW, **base})


def _ring_s(size, ranks, per_node, alpha_intra, alpha_inter, busbw_Bps, phases=1.0):
    """A ring collective by hand: phases x [(p - N) a_intra + (N - 1) a_inter + (p-1)/p S/B]."""
    nodes = ranks // per_node
    return phases * ((ranks - nodes) * alpha_intra + (nodes - 1) * alpha_inter
                     + (ranks - 1) / ranks * size / busbw_Bps)


def test_hsdp_exchange_by_hand():
    """dp 16 on two 8-GPU servers, FSDP SHARD_GRAD_OP, one micro-batch, overlap off: per block
    an all-gather and a reduce-scatter of P w / L. Full sharding (s = 16): rings over 16 ranks
    across the servers at min(intra, inter) busbw. HSDP (s = 8): the rings stay on NVLink
    (8 ranks of one server), then each block's 1/8 shard is all-reduced over the r = 2 replicas
    (one rank per server, each rank 1/8 of the server's NICs)."""
    a_in, a_out = HW["intra_latency_s"], HW["inter_latency_s"]
    intra, inter = HW["intra_busbw_GBps"] * 1e9, HW["inter_busbw_GBps"] * 1e9
    unit = P_BYTES / L
    full = evaluate_layouts(_inputs())
    ring16 = _ring_s(unit, 16, 8, a_in, a_out, min(intra, inter))
    assert float(full.dp_exposed_s) == pytest.approx(L * 2 * ring16, rel=1e-9)
    hsdp = evaluate_layouts(_inputs(shard_group=8))
    ring8 = _ring_s(unit, 8, 8, a_in, a_out, intra)
    all_reduce2 = _ring_s(unit / 8, 2, 1, a_in, a_out, inter / 8, phases=2.0)
    assert float(hsdp.dp_exposed_s) == pytest.approx(L * (2 * ring8 + all_reduce2), rel=1e-9)
    # nothing else moves but the optimizer step (1/8 of the states, not 1/16)
    for part in ("tp_comm_s", "cp_comm_s", "bubble_s", "p2p_s", "straggler_s"):
        assert float(getattr(hsdp, part)) == float(getattr(full, part)), part
    assert float(hsdp.compute_s) > float(full.compute_s)


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_hsdp_memory_is_zero_over_the_shard_group(zero):
    """States sharded over s, not dp x cp: each device holds the shares of ZeRO over s ranks
    (Rajbhandari et al. 2019 §5), activations and buffers as before."""
    hsdp = evaluate_layouts(_inputs(zero=zero, shard_group=4))
    full = evaluate_layouts(_inputs(zero=zero))
    p = GPT["params"]
    weights = {1: 2.0 * p, 2: 2.0 * p, 3: 2.0 * p / 4}[zero]
    grads = {1: 2.0 * p, 2: 2.0 * p / 4, 3: 2.0 * p / 4}[zero]
    assert float(hsdp.weights_bytes) == pytest.approx(weights, rel=1e-12)
    assert float(hsdp.grads_bytes) == pytest.approx(grads, rel=1e-12)
    assert float(hsdp.optimizer_bytes) == pytest.approx(12.0 * p / 4, rel=1e-12)
    assert float(full.optimizer_bytes) == pytest.approx(12.0 * p / 16, rel=1e-12)
    assert float(hsdp.activation_bytes) == float(full.activation_bytes)
    assert float(hsdp.buffer_bytes) == float(full.buffer_bytes)


def test_full_shard_group_is_todays_model_exactly():
    """s = dp x cp (and 0, the default) is full sharding bit for bit, over a grid of layouts,
    ZeRO stages, frameworks, overlap and accumulation; with ZeRO 0 the shard group is ignored."""
    grid = list(itertools.product((1, 2, 4, 16), (1, 2), (1, 2), (1, 2), (0, 1, 2, 3), (0, 1),
                                  (True, False), (1, 4)))
    dp, tp, pp, cp, zero, fw, ov, k = (np.array(c) for c in zip(*grid, strict=True))
    x = _inputs(dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, framework=fw, overlap=ov,
                global_batch=dp * k, schedule=np.where(pp > 1, 2, 0), algorithm=0)
    default = evaluate_layouts(x)
    for same in (dp * cp, np.where(zero == 0, 1, dp * cp)):
        r = evaluate_layouts(x.replace(shard_group=same))
        for field in ("step_time_s", "dp_exposed_s", "compute_s", "memory_bytes",
                      "straggler_s"):
            assert np.array_equal(getattr(r, field), getattr(default, field)), field


def test_hsdp_wins_on_a_slow_inter_server_network():
    """One 100 Gb/s NIC per 8-GPU server (12.5 GB/s): FSDP FULL_SHARD over 32 GPUs rings every
    gather and reduce-scatter through it; sharding inside each server (s = 8) keeps them on
    NVLink and sends only a 1/8 shard of the gradients across. The model fits either way, and
    HSDP is faster; with the servers' full NICs the gap narrows."""
    slow = dict(dp=32, zero=3, global_batch=64, micro_batch=2, inter_busbw_GBps=12.5,
                overlap=True, algorithm=0)
    full, hsdp = (evaluate_layouts(_inputs(**slow, shard_group=s)) for s in (0, 8))
    assert bool(full.fits) and bool(hsdp.fits)
    assert float(hsdp.step_time_s) < float(full.step_time_s)
    assert float(hsdp.dp_exposed_s) < float(full.dp_exposed_s)
    fast = {**slow, "inter_busbw_GBps": 400.0}
    f_full, f_hsdp = (evaluate_layouts(_inputs(**fast, shard_group=s)) for s in (0, 8))
    assert (float(f_full.step_time_s) / float(f_hsdp.step_time_s)
            < float(full.step_time_s) / float(hsdp.step_time_s))
