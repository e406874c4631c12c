"""Intra-server bandwidth of a group that uses only some of a server's GPUs.

On a switch (NVSwitch) or PCIe every GPU keeps its links whatever the count; on a point-to-point
mesh (the DGX-1's hybrid cube-mesh) a ring over fewer GPUs has fewer links. A link level says so
with ``LinkLevel.subset_busbw_shares``: pairs (GPUs, share of the whole server's ring busbw that
a ring over that many of its GPUs gets), read here for every group of every path (docs/model.md
§18 "Fewer GPUs of a server").
"""

from __future__ import annotations

import numpy as np


def subset_busbw_GBps(busbw_GBps, gpus, shares=()):
    """Ring busbw, GB/s, of ``gpus`` GPUs of one server whose whole-server ring busbw is
    ``busbw_GBps``: ``busbw * share`` with the share of the largest listed count at or below
    ``gpus`` (a group holds at least the links of a smaller listed group); counts below the
    smallest listed, and every count where ``shares`` is empty, keep ``busbw_GBps``.

    ``shares``: (GPUs, share) pairs, shape (k, 2), a constant of the link level (a stack of
    equal-length tables, shape (..., k, 2), broadcasts with ``gpus`` as ``StepInputs`` stacked
    row by row do); ``busbw_GBps`` and ``gpus`` broadcast (numpy)."""
    busbw = np.asarray(busbw_GBps, dtype=float)
    g = np.asarray(gpus, dtype=float)
    table = np.asarray(shares, dtype=float)
    if table.size == 0:
        return busbw * np.ones_like(g)
    counts, values = table[..., 0], table[..., 1]
    held = counts <= g[..., None]  # the listed groups this many GPUs hold
    largest = np.argmax(np.where(held, counts, -np.inf), axis=-1)[..., None]
    share = np.take_along_axis(np.broadcast_to(values, held.shape), largest, axis=-1)[..., 0]
    return busbw * np.where(held.any(axis=-1), share, 1.0)
