"""Collective communication time in the alpha-beta (latency-bandwidth) model.

Conventions follow nccl-tests (doc/PERFORMANCE.md): for a collective on ``n`` ranks moving a
buffer of ``size_bytes`` in time ``t``, ``algbw = size/t`` and the *bus bandwidth* is
``busbw = algbw * 2(n-1)/n`` for all-reduce and ``algbw * (n-1)/n`` for reduce-scatter and
all-gather. Bus bandwidth is what a link level is described by (``busbw_GBps``, in GB/s = 1e9
bytes/s), so a ring all-reduce takes ``2(n-1)*alpha + 2(n-1)/n * S / busbw``.

Multi-node: ``inter_busbw_GBps`` is the bus bandwidth one *node* sustains across servers (all of its
NICs together), which is what nccl-tests reports for a multi-node all-reduce with all GPUs.
"""

from __future__ import annotations

import numpy as np

from scalesim.model.fit_error import relative_rmse
from scalesim.model.select import select_first

GB = 1e9  # bytes in one GB (nccl-tests reports GB/s as 1e9 bytes per second)
# The collectives a link level is measured and fitted with (busbw_from_time_GBps, fit_alpha_beta):
# what calibration times and what an nccl-tests log is read for.
FITTED_OPS = ("all_reduce", "reduce_scatter", "all_gather")

# Algorithm codes (arrays of int carry these; names for the edges).
AUTO, RING, TREE, HIERARCHICAL = 0, 1, 2, 3
ALGORITHMS = {"auto": AUTO, "ring": RING, "tree": TREE, "hierarchical": HIERARCHICAL}


def _bytes_per_s(busbw_gbps):
    return np.asarray(busbw_gbps, dtype=float) * GB


# Every collective here is affine in the message size for a given set of ranks and links:
# t(S) = a + c*S. The *_coeffs functions return (a, c) so that a bucket timeline can evaluate
# many message sizes cheaply; the *_s functions evaluate them.


def ring_steps_volume(phases, ranks):
    """(steps, volume factor) of a ring of ``phases`` passes (2: all-reduce; 1: reduce-scatter
    or all-gather) over ``ranks`` ranks: ``phases (n-1)`` pipelined steps, and each rank sends
    ``phases (n-1)/n`` of the buffer, nccl-tests' busbw factor (PERFORMANCE.md); 0 and 0 on one
    rank. The one place of the ring's ``(n-1)/n`` (``step_and_volume``, the ring coefficients)."""
    n = np.asarray(ranks, dtype=float)
    steps = np.maximum(phases * (n - 1.0), 0.0)
    return steps, steps / np.maximum(n, 1.0)


def ring_allreduce_coeffs(ranks, latency_s, busbw_GBps):
    """(a, c) of a ring all-reduce on ``ranks`` ranks: a = 2(n-1)*alpha, c = 2(n-1)/n / B."""
    steps, volume = ring_steps_volume(2.0, ranks)
    return steps * latency_s, volume / _bytes_per_s(busbw_GBps)


def ring_reduce_scatter_coeffs(ranks, latency_s, busbw_GBps):
    """(a, c) of a ring reduce-scatter or all-gather: a = (n-1)*alpha, c = (n-1)/n / B."""
    steps, volume = ring_steps_volume(1.0, ranks)
    return steps * latency_s, volume / _bytes_per_s(busbw_GBps)


def affine_s(coeffs, size_bytes):
    """Evaluate t = a + c*S, and 0 for an empty message or a collective on one rank."""
    a, c = coeffs
    size = np.asarray(size_bytes, dtype=float)
    return np.where(size > 0, a + c * size, 0.0)


def ring_allreduce_s(size_bytes, ranks, latency_s, busbw_GBps):
    """Ring all-reduce of ``size_bytes`` on ``ranks`` ranks: 2(n-1)a + 2(n-1)/n * S/B seconds."""
    return affine_s(ring_allreduce_coeffs(ranks, latency_s, busbw_GBps), size_bytes)


def ring_reduce_scatter_s(size_bytes, ranks, latency_s, busbw_GBps):
    """Ring reduce-scatter (or all-gather) of a ``size_bytes`` buffer: (n-1)a + (n-1)/n * S/B."""
    return affine_s(ring_reduce_scatter_coeffs(ranks, latency_s, busbw_GBps), size_bytes)


def _ring_busbw(devices_per_node, nodes, intra_busbw_GBps, inter_busbw_GBps):
    """Bus bandwidth (GB/s) of the slowest level a ring over all ranks crosses (the intra level
    counts only where a server holds two or more of its ranks)."""
    multi = np.asarray(nodes, dtype=float) > 1
    shared = np.asarray(devices_per_node, dtype=float) > 1
    return np.where(multi, np.where(shared, np.minimum(intra_busbw_GBps, inter_busbw_GBps),
                                    inter_busbw_GBps), intra_busbw_GBps)


def ring_coeffs(phases, devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                inter_latency_s, inter_busbw_GBps):
    """(a, c) of NCCL's ring over ``p = g*N`` ranks, ``phases`` = 2 all-reduce, 1 RS or AG.

    Each phase has ``p - 1`` pipelined steps; a chunk crossing them passes ``N - 1`` server
    boundaries and ``p - N`` hops inside servers, so the latency is
    ``phases * [(p - N) alpha_intra + (N - 1) alpha_inter]`` (NCCL ``src/graph/tuning.cc``:
    ``(nsteps - nInterSteps) * intraLat + nInterSteps * interLat``). The bandwidth term is
    ``phases * (p-1)/p * S / B`` with ``B`` the slowest level the ring crosses.
    """
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    p = g * nn
    busbw = _ring_busbw(g, nn, intra_busbw_GBps, inter_busbw_GBps)
    a = phases * (np.maximum(p - nn, 0.0) * np.asarray(intra_latency_s, dtype=float)
                  + np.maximum(nn - 1.0, 0.0) * np.asarray(inter_latency_s, dtype=float))
    c = ring_steps_volume(phases, p)[1] / _bytes_per_s(busbw)
    return a, c


def ring_inter_latency_s(ring_latency_s, devices_per_node, nodes, intra_latency_s):
    """alpha_inter (s per server-boundary hop) that makes ``ring_coeffs``' latency equal that of
    a ring over all ``p = g*N`` ranks fitted with one alpha per step (``fit_alpha_beta``:
    ``phases (p-1) ring_latency_s``), given alpha_intra: the inverse of
    ``(p-N) alpha_intra + (N-1) alpha_inter = (p-1) alpha_ring``,
    ``alpha_inter = ((p-1) alpha_ring - (p-N) alpha_intra) / (N-1)``, at least 0 (intra hops
    alone slower than the whole ring measured: all of it charged to them). One server: the
    ring's own alpha."""
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    p = g * nn
    cross = np.maximum(nn - 1.0, 1.0)
    inter = ((p - 1.0) * np.asarray(ring_latency_s, dtype=float)
             - (p - nn) * np.asarray(intra_latency_s, dtype=float)) / cross
    return np.where(nn > 1, np.maximum(inter, 0.0), ring_latency_s)


def tree_coeffs(devices_per_node, nodes, intra_latency_s, intra_busbw_GBps, inter_latency_s,
                inter_busbw_GBps):
    """(a, c) of NCCL's tree all-reduce: an intra-server chain and a double binary tree across
    servers, reduce then broadcast, pipelined.

    Latency ``2(g-1) alpha_intra + 2 floor(log2 N) alpha_inter`` (tuning.cc, ``log2i``).
    Bandwidth: each GPU of the chain sends ``2S`` (S up and S down over the two trees), so
    ``2S / B_intra``; across servers a node of a double binary tree is an inner node of one
    tree and a leaf of the other and sends ``2S`` for ``N > 2``, but with two servers each is
    the root of one tree and the only child of the other and sends ``S`` (up in one, down in the
    other): ``S / B_inter``, which is why two-node tree busbw exceeds the NICs' line rate
    (nccl#1576). The slower of the two levels sets the pipeline's rate.
    """
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    p = g * nn
    depth = np.floor(np.log2(np.maximum(nn, 1.0)))
    a = (np.maximum(2.0 * (g - 1.0), 0.0) * np.asarray(intra_latency_s, dtype=float)
         + 2.0 * depth * np.asarray(inter_latency_s, dtype=float))
    intra = np.where(g > 1, 2.0, 0.0) / _bytes_per_s(intra_busbw_GBps)
    inter = tree_inter_volume(nn) / _bytes_per_s(inter_busbw_GBps)
    c = np.where(p > 1, np.maximum(intra, inter), 0.0)
    return a, c


def tree_inter_volume(nodes):
    """f_N: the bytes per byte of the buffer a server of NCCL's double binary tree sends across
    servers (``tree_coeffs``): 2 from three servers on, 1 with two (each the root of one tree and
    the only child of the other), 0 on one."""
    nn = np.asarray(nodes, dtype=float)
    return np.where(nn > 2, 2.0, np.where(nn == 2, 1.0, 0.0))


def tree_level_from_coeffs(a_s: float, c_s_per_byte: float, devices_per_node: int, nodes: int,
                           intra_latency_s: float = 0.0) -> tuple[float, float]:
    """(latency_s, busbw_GBps) of the link level a tree all-reduce timed as ``t = a + c*S``
    (``a_s`` s, ``c_s_per_byte`` s per byte) on ``nodes`` servers of ``devices_per_node``
    describes: ``tree_coeffs`` inverted for its last level.

    - one server (the chain alone): ``alpha_intra = a / (2(g-1))``, ``B_intra = 2 / c``;
    - several: ``alpha_inter = (a - 2(g-1) alpha_intra) / (2 floor(log2 N))``, at least 0 (the
      intra hops alone slower than the tree measured: all of it charged to them), and
      ``B_inter = f_N / c`` (``tree_inter_volume``), which is B_inter where the network term
      is the larger of ``tree_coeffs``' two; where the chain's ``2/B_intra`` is, the network
      is at least that fast (a lower bound: the caller says so).
    """
    g, nn = float(devices_per_node), float(nodes)
    if nn <= 1:
        return a_s / max(2.0 * (g - 1.0), 1.0), 2.0 / c_s_per_byte / GB
    depth = float(np.floor(np.log2(nn)))
    latency = max((a_s - 2.0 * (g - 1.0) * intra_latency_s) / (2.0 * depth), 0.0)
    return latency, float(tree_inter_volume(nn)) / c_s_per_byte / GB


# NCCL's tuner latency of one NVLS all-reduce (``src/graph/tuning.cc``: hwLatencies[NVLINK][NVLS]
# [Simple] = 25 us, with baseLatencies 0): the switch reduces and multicasts, so it is one step,
# not 2(g-1) hops.
NVLS_LATENCY_S = 25e-6


def nvls_coeffs(devices_per_node, nodes, nvls_busbw_GBps, inter_latency_s, inter_busbw_GBps):
    """(a, c) of NCCL's NVLS all-reduce on one server, NVLS-tree across several.

    From ``src/graph/tuning.cc`` (``ncclTopoTuneModel``), in nccl-tests bus bandwidth:

    - one server (NVLS; NVLS-tree is disabled there): ``a = NVLS_LATENCY_S``,
      ``c = 2(g-1)/g / B_nvls``;
    - several (NVLS-tree: NVLS inside each server, a double binary tree of servers across; plain
      NVLS across servers needs CollNet/SHARP): ``a = NVLS_LATENCY_S + 2 floor(log2 N) alpha_inter``
      and busbw ``min(B_nvls, (2/f_N) B_inter)`` with the tree's ``f_N`` (``f_2 = 1``: two servers
      each send S, not 2S, the tree's two-node case; ``f_N = 2`` above), so
      ``c = 2(p-1)/p / min(...)`` (docs/model.md §2).

    ``nvls_busbw_GBps`` NaN (the level has no NVLS) or one device per server (NCCL needs two GPUs
    for NVLS): ``a = inf``, never chosen.
    """
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    p = g * nn
    nvls = np.asarray(nvls_busbw_GBps, dtype=float)
    usable = ~np.isnan(nvls) & (g >= 2)
    depth = np.floor(np.log2(np.maximum(nn, 1.0)))
    a = NVLS_LATENCY_S + 2.0 * depth * np.asarray(inter_latency_s, dtype=float)
    inter = np.where(nn == 2, 2.0, 1.0) * np.asarray(inter_busbw_GBps, dtype=float)
    busbw = np.where(nn > 1, np.minimum(np.where(usable, nvls, 1.0), inter),
                     np.where(usable, nvls, 1.0))
    c = 2.0 * np.maximum(p - 1.0, 0.0) / np.maximum(p, 1.0) / _bytes_per_s(busbw)
    return np.where(usable, a, np.inf), np.where(usable, c, 0.0)


def allreduce_coeffs(devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                     inter_latency_s, inter_busbw_GBps, nvls_busbw_GBps=np.nan):
    """(a, c) pairs of the ring, tree, hierarchical and NVLS all-reduce on this layout.

    - ring and tree: NCCL's two all-reduce algorithms without switch offload (``ring_coeffs``,
      ``tree_coeffs``);
    - hierarchical (Horovod hierarchical all-reduce, never chosen by NCCL's ring or tree):
      intra-node reduce-scatter, inter-node ring all-reduce of each 1/g shard (the g shards
      share the node's NICs, so together they move S per node), intra-node all-gather;
    - NVLS / NVLS-tree where the intra-server level has NVLink SHARP (``nvls_coeffs``;
      ``nvls_busbw_GBps`` NaN: none).
    """
    links = (devices_per_node, nodes, intra_latency_s, intra_busbw_GBps, inter_latency_s,
             inter_busbw_GBps)
    ring = ring_coeffs(2.0, *links)
    tree = tree_coeffs(*links)
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    rs_a, rs_c = ring_reduce_scatter_coeffs(g, intra_latency_s, intra_busbw_GBps)
    ar_a, ar_c = ring_allreduce_coeffs(nn, inter_latency_s, inter_busbw_GBps)
    hier = (2.0 * rs_a + ar_a, 2.0 * rs_c + ar_c)
    nvls = nvls_coeffs(g, nn, nvls_busbw_GBps, inter_latency_s, inter_busbw_GBps)
    return ring, tree, hier, nvls


def allreduce_from_coeffs(coeffs, size_bytes, algorithm=AUTO):
    """All-reduce time from ``allreduce_coeffs``.

    ``auto`` is what NCCL's tuner does: the fastest of its ring, tree and (where the server has
    NVLink SHARP) NVLS / NVLS-tree for each message size. Hierarchical is used only when named.
    """
    ring_c, tree_c, hier_c, nvls_c = coeffs
    algorithm = np.asarray(algorithm)
    if algorithm.ndim == 0 and int(algorithm) != AUTO:
        return affine_s({RING: ring_c, TREE: tree_c, HIERARCHICAL: hier_c}[int(algorithm)],
                        size_bytes)
    ring, tree = affine_s(ring_c, size_bytes), affine_s(tree_c, size_bytes)
    best = np.minimum(np.minimum(ring, tree), affine_s(nvls_c, size_bytes))
    if algorithm.ndim == 0:
        return best
    return select_first([algorithm == RING, algorithm == TREE, algorithm == HIERARCHICAL],
                     [ring, tree, affine_s(hier_c, size_bytes)], best)


def allreduce_s(size_bytes, devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                inter_latency_s, inter_busbw_GBps, algorithm=AUTO, nvls_busbw_GBps=np.nan):
    """All-reduce time on ``nodes`` servers of ``devices_per_node`` devices each, in seconds.

    ``algorithm``: ring, tree, hierarchical (see ``allreduce_coeffs``) or auto, the fastest of
    NCCL's ring, tree and NVLS (where ``nvls_busbw_GBps`` is given) for each message, as NCCL's
    tuner picks per size.
    """
    coeffs = allreduce_coeffs(devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                              inter_latency_s, inter_busbw_GBps, nvls_busbw_GBps)
    return allreduce_from_coeffs(coeffs, size_bytes, algorithm)


def reduce_scatter_coeffs(devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                          inter_latency_s, inter_busbw_GBps):
    """(a, c) of a reduce-scatter (equally: all-gather) over all ranks: NCCL's ring.

    NCCL runs reduce-scatter and all-gather as rings (tuning.cc offers only ring, PAT, NVLS and
    CollNet for them; PAT only with one GPU per server, NVLS and CollNet only with switch
    offload), so ``ring_coeffs`` with one phase.
    """
    return ring_coeffs(1.0, devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
                       inter_latency_s, inter_busbw_GBps)


def step_and_volume(op: str, ranks):
    """(steps, volume factor) of ``op`` on ``ranks``: ``t = steps*alpha + volume*S/busbw``.
    Ring all-reduce ``2(n-1)``, ``2(n-1)/n``; reduce-scatter / all-gather ``n-1``, ``(n-1)/n``;
    a point-to-point ``send_recv`` one step of the whole message (nccl-tests ``sendrecv_perf``:
    busbw = algbw = S/t)."""
    if op == "send_recv":
        n = np.asarray(ranks, dtype=float)
        return np.ones_like(n), np.ones_like(n)
    return ring_steps_volume(2.0 if op == "all_reduce" else 1.0, ranks)


def busbw_from_time_GBps(op: str, size_bytes, ranks, time_s):
    """nccl-tests bus bandwidth (GB/s) of one measurement: algbw times the op's factor."""
    algbw = np.asarray(size_bytes, dtype=float) / np.asarray(time_s, dtype=float) / GB
    return algbw * step_and_volume(op, ranks)[1]


def algbw_GBps(size_bytes, time_s):
    """nccl-tests algorithm bandwidth (GB/s): bytes of the buffer over the time."""
    return np.asarray(size_bytes, dtype=float) / np.asarray(time_s, dtype=float) / GB


def fit_alpha_beta(op: str, size_bytes, ranks, time_s) -> tuple[float, float, float]:
    """Fit latency alpha (s per step) and bus bandwidth (GB/s) to measured collective times.

    The ring model is linear in (alpha, 1/B): ``t = steps*alpha + vol*S/B`` with ``steps`` and
    ``vol`` the op's step count and volume factor (``step_and_volume``; ``send_recv``: 1, 1).
    Solved by non-negative least squares on the *relative* error (each row divided by its
    time) so small messages weigh as much as large.
    Returns ``(latency_s, busbw_GBps, rel_rmse)``.
    """
    from scipy.optimize import nnls

    size = np.asarray(size_bytes, dtype=float)
    n = np.asarray(ranks, dtype=float) * np.ones_like(size)
    t = np.asarray(time_s, dtype=float)
    if size.size < 2 or np.any(t <= 0) or np.any(n < 2):
        raise ValueError("need at least two positive timings on two or more ranks to fit a link")
    steps, vol = step_and_volume(op, n)
    design = np.stack([steps, vol * size / GB], axis=1) / t[:, None]
    (alpha, inv_bw), _ = nnls(design, np.ones_like(t))
    if inv_bw <= 0:
        raise ValueError("measured times do not grow with message size; cannot fit a bandwidth")
    predicted = steps * alpha + vol * size / GB * inv_bw
    rel_rmse = relative_rmse(predicted, t)
    return float(alpha), float(1.0 / inv_bw), rel_rmse
