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

GB = 1e9  # bytes in one GB (nccl-tests reports GB/s as 1e9 bytes per second)

# Algorithm codes (arrays of int carry these; names for the edges).
AUTO, RING, TREE, HIERARCHICAL = 0, 1, 2, 3
ALGORITHMS = {"auto": AUTO, "ring": RING, "tree": TREE, "hierarchical": HIERARCHICAL}


def _bytes_per_s(busbw_gbps):
    return np.asarray(busbw_gbps, dtype=float) * GB


def ring_allreduce_s(size_bytes, ranks, latency_s, busbw_GBps):
    """Ring all-reduce of ``size_bytes`` on ``ranks`` ranks: 2(n-1)a + 2(n-1)/n * S/B seconds."""
    n = np.asarray(ranks, dtype=float)
    steps = 2.0 * (n - 1.0)
    t = steps * latency_s + steps / np.maximum(n, 1.0) * size_bytes / _bytes_per_s(busbw_GBps)
    return np.where(n > 1, t, 0.0)


def ring_reduce_scatter_s(size_bytes, ranks, latency_s, busbw_GBps):
    """Ring reduce-scatter (or all-gather) of a ``size_bytes`` buffer: (n-1)a + (n-1)/n * S/B."""
    n = np.asarray(ranks, dtype=float)
    steps = n - 1.0
    t = steps * latency_s + steps / np.maximum(n, 1.0) * size_bytes / _bytes_per_s(busbw_GBps)
    return np.where(n > 1, t, 0.0)


ring_all_gather_s = ring_reduce_scatter_s


def tree_allreduce_s(size_bytes, ranks, latency_s, busbw_GBps):
    """Pipelined (double binary) tree all-reduce: 2*ceil(log2 n)*a + 2*S/B.

    Reduce up the tree then broadcast down, each pipelined so the buffer crosses each link
    once per phase; lower latency than a ring, slightly more bandwidth time (2 vs 2(n-1)/n).
    """
    n = np.asarray(ranks, dtype=float)
    depth = np.ceil(np.log2(np.maximum(n, 1.0)))
    t = 2.0 * depth * latency_s + 2.0 * size_bytes / _bytes_per_s(busbw_GBps)
    return np.where(n > 1, t, 0.0)


def allreduce_s(
    size_bytes,
    devices_per_node,
    nodes,
    intra_latency_s,
    intra_busbw_GBps,
    inter_latency_s,
    inter_busbw_GBps,
    algorithm=AUTO,
):
    """All-reduce time on ``nodes`` servers of ``devices_per_node`` devices each, in seconds.

    - ring: one flat ring over all ``p = g*N`` ranks; every step waits for the slowest hop, and
      the bandwidth term is set by the slowest level (``min`` of intra and inter busbw).
    - tree: intra-node chain plus an inter-node tree (NCCL's tree algorithm).
    - hierarchical: intra-node reduce-scatter, inter-node ring all-reduce of each 1/g shard (the
      g shards share the node's NICs), intra-node all-gather (Horovod hierarchical all-reduce).
    - auto: the fastest of the three for each message, as NCCL's tuner picks per size.
    """
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    p = g * nn
    multi = nn > 1
    slow_latency = np.where(multi, np.maximum(intra_latency_s, inter_latency_s), intra_latency_s)
    slow_bw = np.where(multi, np.minimum(intra_busbw_GBps, inter_busbw_GBps), intra_busbw_GBps)

    ring = ring_allreduce_s(size_bytes, p, slow_latency, slow_bw)

    intra_chain = np.where(g > 1, 2.0 * (g - 1.0) * intra_latency_s, 0.0)
    inter_depth = np.ceil(np.log2(np.maximum(nn, 1.0)))
    tree = np.where(
        p > 1,
        intra_chain
        + 2.0 * inter_depth * inter_latency_s
        + 2.0 * size_bytes / _bytes_per_s(slow_bw),
        0.0,
    )

    hier = (
        ring_reduce_scatter_s(size_bytes, g, intra_latency_s, intra_busbw_GBps)
        + ring_allreduce_s(size_bytes, nn, inter_latency_s, inter_busbw_GBps)
        + ring_all_gather_s(size_bytes, g, intra_latency_s, intra_busbw_GBps)
    )

    algorithm = np.asarray(algorithm)
    best = np.minimum(np.minimum(ring, tree), hier)
    return np.select(
        [algorithm == RING, algorithm == TREE, algorithm == HIERARCHICAL], [ring, tree, hier], best
    )


def reduce_scatter_s(
    size_bytes, devices_per_node, nodes, intra_latency_s, intra_busbw_GBps, inter_latency_s,
    inter_busbw_GBps,
):
    """Reduce-scatter (equally: all-gather) of a ``size_bytes`` buffer over all ranks, ring.

    NCCL runs reduce-scatter and all-gather as rings; across nodes the slowest level sets both
    the per-step latency and the bandwidth.
    """
    g = np.asarray(devices_per_node, dtype=float)
    nn = np.asarray(nodes, dtype=float)
    multi = nn > 1
    latency = np.where(multi, np.maximum(intra_latency_s, inter_latency_s), intra_latency_s)
    bw = np.where(multi, np.minimum(intra_busbw_GBps, inter_busbw_GBps), intra_busbw_GBps)
    return ring_reduce_scatter_s(size_bytes, g * nn, latency, bw)


all_gather_s = reduce_scatter_s


def busbw_from_time_GBps(op: str, size_bytes, ranks, time_s):
    """nccl-tests bus bandwidth (GB/s) of one measurement: algbw times the op's factor."""
    n = np.asarray(ranks, dtype=float)
    algbw = np.asarray(size_bytes, dtype=float) / np.asarray(time_s, dtype=float) / GB
    factor = 2.0 * (n - 1.0) / n if op == "all_reduce" else (n - 1.0) / n
    return algbw * factor


def algbw_GBps(size_bytes, time_s):
    """nccl-tests algorithm bandwidth (GB/s): bytes of the buffer over the time."""
    return np.asarray(size_bytes, dtype=float) / np.asarray(time_s, dtype=float) / GB


def fit_alpha_beta(op: str, size_bytes, ranks, time_s) -> tuple[float, float, float]:
    """Fit latency alpha (s per step) and bus bandwidth (GB/s) to measured collective times.

    The ring model is linear in (alpha, 1/B): ``t = steps*alpha + vol*S/B`` with ``steps`` and
    ``vol`` the op's step count and volume factor. Solved by non-negative least squares on the
    *relative* error (each row divided by its time) so small messages weigh as much as large.
    Returns ``(latency_s, busbw_GBps, rel_rmse)``.
    """
    from scipy.optimize import nnls

    size = np.asarray(size_bytes, dtype=float)
    n = np.asarray(ranks, dtype=float) * np.ones_like(size)
    t = np.asarray(time_s, dtype=float)
    if size.size < 2 or np.any(t <= 0) or np.any(n < 2):
        raise ValueError("need at least two positive timings on two or more ranks to fit a link")
    if op == "all_reduce":
        steps, vol = 2.0 * (n - 1.0), 2.0 * (n - 1.0) / n
    else:
        steps, vol = n - 1.0, (n - 1.0) / n
    design = np.stack([steps, vol * size / GB], axis=1) / t[:, None]
    (alpha, inv_bw), _ = nnls(design, np.ones_like(t))
    if inv_bw <= 0:
        raise ValueError("measured times do not grow with message size; cannot fit a bandwidth")
    predicted = steps * alpha + vol * size / GB * inv_bw
    rel_rmse = float(np.sqrt(np.mean((predicted / t - 1.0) ** 2)))
    return float(alpha), float(1.0 / inv_bw), rel_rmse
