"""The alpha-beta fit of one link level from nccl-tests style rows (no torch: shared by the
collectives phase and by ``scalesim calibrate --from-nccl-tests``).

``fit_level`` takes ``CollectivePoint`` rows of one link level (any ops, any rank counts) and
returns, per op, the latency alpha (from ``fit_alpha_beta`` over every size), the bus bandwidth
refitted at the top of the sweep, and the relative RMSE; see its docstring.
"""

from __future__ import annotations

import numpy as np

from scalesim.errors import ScalesimError
from scalesim.model import collectives as coll
from scalesim.model.fit_error import relative_rmse
from scalesim.schemas import CollectivePoint, MessagePoint

LARGE_BYTES = 1024 * 1024  # beta is refitted only on messages from this size up
TOP_SHARE = 0.75  # ... and of at least this share of the largest message


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
