"""The alpha-beta fit of one link level from nccl-tests style rows (no torch: shared by the
collectives phase and by ``scalesim calibrate --from-nccl-tests``).

``fit_level`` takes ``CollectivePoint`` rows of one link level (any ops, any rank counts) and
returns, per op, the latency alpha (from ``fit_alpha_beta`` over every size), the bus bandwidth
refitted at the top of the sweep, and the relative RMSE; see its docstring.
``derive_inter_level`` turns the fit of a ring over every rank of several servers into the
inter-server level as the model charges it (``all_ranks_words`` says how, for the level's source).
"""

from __future__ import annotations

import numpy as np

from scalesim.errors import ScalesimError
from scalesim.figures import MIB_BYTES, latency_us, link_GBps
from scalesim.model import collectives as coll
from scalesim.model.fit_error import relative_rmse
from scalesim.schemas import CollectivePoint, MessagePoint

LARGE_BYTES = MIB_BYTES  # beta is refitted only on messages from this size up
TOP_SHARE = 0.75  # ... and of at least this share of the largest message
# An all-ranks ring within this share of the intra-node busbw may have been limited by the
# intra level (measurement spread of a few percent): its inter figure is then a lower bound.
INTRA_LIMITED_SHARE = 0.9


def _fit(op: str, rows: list[CollectivePoint]) -> tuple[float, float, float]:
    try:
        return coll.fit_alpha_beta(op, [p.size_bytes for p in rows], [p.ranks for p in rows],
                                   [p.time_s for p in rows])
    except ValueError as exc:
        raise ScalesimError(f"cannot fit {op}: {exc}") from None


def _rel_rmse(op: str, rows, latency_s: float, busbw_GBps: float) -> float:
    steps, vol = coll.step_and_volume(op, [p.ranks for p in rows])
    size = np.array([p.size_bytes for p in rows], dtype=float) / coll.GB
    predicted = steps * latency_s + vol * size / busbw_GBps
    measured = np.array([p.time_s for p in rows])
    return relative_rmse(predicted, measured)


def busbw_with_latency_GBps(op: str, rows, latency_s: float) -> float | None:
    """Bus bandwidth fitted to ``rows`` with alpha held at ``latency_s`` (relative least squares).

    With ``s_i`` steps and volume factor ``v_i`` (``collectives.step_and_volume``: ring
    all-reduce ``2(n-1)``, ``2(n-1)/n``; reduce-scatter/all-gather ``n-1``, ``(n-1)/n``;
    send/recv 1, 1), ``t_i = s_i*alpha + v_i*S_i*x`` with
    ``x = 1/busbw``; minimising ``sum((model_i/t_i - 1)^2)`` over x gives
    ``x = sum(a_i*(1 - s_i*alpha/t_i)) / sum(a_i^2)`` with ``a_i = v_i*S_i/t_i``.
    None when the data leave no positive bandwidth.
    """
    size = np.array([p.size_bytes for p in rows], dtype=float) / coll.GB
    t = np.array([p.time_s for p in rows], dtype=float)
    steps, vol = coll.step_and_volume(op, [p.ranks for p in rows])
    a = vol * size / t
    x = float(np.sum(a * (1.0 - steps * latency_s / t)) / np.sum(a * a))
    return 1.0 / x if x > 0 else None


def level_op(fits: dict) -> str:
    """The op a link level is read from, of its fits by op (``fit_level``): the all-reduce
    where it was timed (the op DDP's exchange and the model's ring coefficients are written
    for), else the first one fitted."""
    return "all_reduce" if "all_reduce" in fits else next(iter(fits))


def fit_level(points: list[CollectivePoint | MessagePoint]) -> dict[str, dict[str, float]]:
    """alpha, beta and relative RMSE per op (collectives, or ``send_recv`` messages: the same
    fit with one step of the whole message).

    ``fit_alpha_beta`` over the whole sweep gives alpha (set by the small messages). Bus
    bandwidth is not constant over sizes everywhere (over gloo on CPUs an 8 MiB all-reduce moves
    fewer bytes per second than a 4 MiB one: the buffers leave the caches), so beta is refitted
    with that alpha at the top of the sweep (messages of at least TOP_SHARE of the largest, so the
    largest one with the default size factors, and at least LARGE_BYTES;
    ``busbw_with_latency_GBps``): the sizes nearest DDP's 25 MiB buckets.
    ``rel_rmse`` is the pair's relative error over every point.
    """
    fits = {}
    for op in sorted({p.op for p in points}):
        rows = sorted((p for p in points if p.op == op), key=lambda p: p.size_bytes)
        latency, busbw_all, rmse_all = _fit(op, rows)
        threshold = max(LARGE_BYTES, rows[-1].size_bytes * TOP_SHARE)
        large = [p for p in rows if p.size_bytes >= threshold]
        refit = busbw_with_latency_GBps(op, large, latency) if large else None
        busbw = refit if refit is not None else busbw_all
        if refit is None:
            threshold = 0.0
        fits[op] = {"latency_s": latency, "busbw_GBps": busbw,
                    "rel_rmse": _rel_rmse(op, rows, latency, busbw),
                    "busbw_all_sizes_GBps": busbw_all, "rel_rmse_all_sizes": rmse_all,
                    "large_from_bytes": float(threshold)}
    return fits


def fit_send_recv(points: list[MessagePoint]) -> tuple[float, float, float] | None:
    """(latency_s, bandwidth_GBps, rel_rmse) of ``t = latency + S / bandwidth`` fitted to the
    ``send_recv`` messages of ``points`` by ``fit_level`` (the collectives' fit: alpha by
    non-negative least squares on relative error, the bandwidth refitted at the top of the
    sweep); None with fewer than two sizes or no positive bandwidth."""
    sends = [p for p in points if p.op == "send_recv"]
    if len({p.size_bytes for p in sends}) < 2:
        return None
    try:
        fit = fit_level(sends)["send_recv"]
    except ScalesimError:
        return None
    return fit["latency_s"], fit["busbw_GBps"], fit["rel_rmse"]


def derive_inter_level(all_ranks: dict[str, float], intra: dict[str, float] | None,
                       ranks_per_node: int, nodes: int) -> tuple[float, float, bool, str]:
    """(latency_s, busbw_GBps, lower_bound, method) of the inter-server level from the fit of an
    all-ranks ring (``all_ranks``: latency_s, busbw_GBps) over ``ranks_per_node`` ranks on each
    of ``nodes`` servers, given the intra level's fit.

    NCCL's ring over ``p = g*N`` ranks (docs/model.md §2, ``collectives.ring_coeffs``) takes
    ``2[(p-N)*a_intra + (N-1)*a_inter] + 2(p-1)/p * S / min(B_intra, B_inter)``. So the
    fitted ring busbw is ``min(B_intra, B_inter)``: below the intra busbw it *is* the inter
    level's (what the node sustains over all its NICs); within ``INTRA_LIMITED_SHARE`` of it
    the ring may have been limited inside the servers and it is a lower bound of the inter
    level. The fitted alpha is one per step of the ``2(p-1)``; the inter latency is what is left
    of them for the ``2(N-1)`` server-boundary hops once the intra hops have their measured
    alpha (``collectives.ring_inter_latency_s``), so the model gives back the ring measured.
    With one rank per node (``ranks_per_node == 1``) the ring is the inter level itself.
    """
    latency, busbw = all_ranks["latency_s"], all_ranks["busbw_GBps"]
    if ranks_per_node <= 1 or intra is None:
        return latency, busbw, False, "one_rank"
    latency = float(coll.ring_inter_latency_s(latency, ranks_per_node, nodes,
                                              intra["latency_s"]))
    return latency, busbw, busbw >= INTRA_LIMITED_SHARE * intra["busbw_GBps"], "all_ranks"


def derive_tree_level(tree: dict[str, float], intra: dict[str, float] | None,
                      ranks_per_node: int, nodes: int) -> tuple[float, float, bool, str | None]:
    """(latency_s, busbw_GBps, lower_bound, method) of the link level a tree all-reduce
    (NCCL_ALGO=Tree) over ``ranks_per_node`` ranks on each of ``nodes`` servers describes, from
    its fit in nccl-tests' form (``tree``: latency_s, busbw_GBps of ``fit_level``, which writes
    any all-reduce as ``2(p-1) alpha + 2(p-1)/p * S / busbw``, nccl-tests' busbw convention
    whatever the algorithm), given the intra level's fit (None on one server).

    For one layout both forms are ``t = a + c*S``, so the least-squares (a, c) is the same;
    ``a = 2(p-1) alpha``, ``c = 2(p-1)/p / busbw`` are read through the model's tree
    (``collectives.tree_level_from_coeffs``, docs/model.md §2): the chain's and the trees'
    latency, and the busbw of the level that sets the pipeline's rate. Across servers the
    network's busbw is a lower bound where the chain's rate ``2/c`` comes within
    ``INTRA_LIMITED_SHARE`` of the intra busbw (the chain may have set the rate), as for the
    ring. method: 'all_ranks' (several GPUs per server), 'one_rank', None (one server).
    """
    p = ranks_per_node * nodes
    steps, vol = coll.step_and_volume("all_reduce", p)
    a = float(steps) * tree["latency_s"]
    c = float(vol) / (tree["busbw_GBps"] * coll.GB)
    if nodes <= 1:
        latency, busbw = coll.tree_level_from_coeffs(a, c, ranks_per_node, 1)
        return latency, busbw, False, None
    intra_latency = intra["latency_s"] if intra is not None and ranks_per_node > 1 else 0.0
    latency, busbw = coll.tree_level_from_coeffs(a, c, ranks_per_node, nodes, intra_latency)
    if ranks_per_node <= 1 or intra is None:
        return latency, busbw, False, "one_rank"
    chain_GBps = 2.0 / c / coll.GB
    return latency, busbw, chain_GBps >= INTRA_LIMITED_SHARE * intra["busbw_GBps"], "all_ranks"


def tree_words(ranks_per_node: int, nodes: int, latency_s: float, busbw_GBps: float,
               tree: dict[str, float], intra: dict[str, float], lower_bound: bool) -> str:
    """How ``derive_tree_level`` read a tree over several servers, for the inter level's
    source."""
    p = ranks_per_node * nodes
    hops = 2 * int(np.floor(np.log2(nodes)))
    a = 2 * (p - 1) * tree["latency_s"]
    words = (f"; read through the model's tree (docs/model.md §2): of its {latency_us(a)} "
             f"latency, {2 * (ranks_per_node - 1)} intra hops at {latency_us(intra['latency_s'])} "
             f"and {hops} server-boundary hops, so alpha {latency_us(latency_s)} per "
             f"server-boundary hop")
    if latency_s == 0.0:
        words += " (the intra hops alone take longer than the tree measured)"
    volume = "S" if nodes == 2 else "2S"
    words += (f"; each server sends {volume} across, so busbw {link_GBps(busbw_GBps)} for the "
              f"logged {link_GBps(tree['busbw_GBps'])} (nccl-tests' 2(p-1)/p form)")
    if lower_bound:
        words += (f"; the chain inside the servers ran within {INTRA_LIMITED_SHARE:.0%} of the "
                  f"intra busbw ({link_GBps(intra['busbw_GBps'])}) and may have set the rate, so "
                  "the network is at least this fast (lower bound)")
    return words


def all_ranks_words(ranks_per_node: int, nodes: int, latency_s: float, ring_latency_s: float,
                    intra: dict[str, float], lower_bound: bool, whole: bool = True) -> str:
    """How ``derive_inter_level`` read an all-ranks ring (``method`` 'all_ranks'), for the inter
    level's source: the ring's busbw is min(intra, inter) and its alpha per step becomes
    ``latency_s`` per server-boundary hop given the intra hops' ``intra['latency_s']``.
    ``whole``: the ranks were all of each server's GPUs (False: some ran none, and the figure
    is what the ranks' GPUs reach, not the whole server's)."""
    hop = (f"alpha {latency_us(latency_s)} per server-boundary hop, from the ring's "
           f"{latency_us(ring_latency_s)} per step with the intra hops at "
           f"{latency_us(intra['latency_s'])}")
    if latency_s == 0.0:
        hop += (" (the intra hops alone take longer than the ring measured, so none is left "
                "for the server-boundary hops)")
    return (f"; all {ranks_per_node} ranks of each of {nodes} servers in one ring, so its busbw "
            f"is min(intra, inter) (docs/calibration.md); {hop}"
            + (f"; within {INTRA_LIMITED_SHARE:.0%} of the intra busbw "
               f"({link_GBps(intra['busbw_GBps'])}): the servers' inside may have limited the "
               "ring, so the inter busbw is at least this (lower bound)" if lower_bound else
               f"; below the intra busbw ({link_GBps(intra['busbw_GBps'])}): the network "
               "limited the ring, so this is the inter level, "
               + ("whole server" if whole else f"of {ranks_per_node} GPUs a server")))
