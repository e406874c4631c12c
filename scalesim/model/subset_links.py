"""Intra-server bandwidth of a group that uses only some of a server's GPUs.

On a switch (NVSwitch) or PCIe every GPU keeps its links whatever the count; on a point-to-point
mesh (the DGX-1's hybrid cube-mesh) a ring over fewer GPUs has fewer links. A link level says so
with ``LinkLevel.subset_busbw_shares``: pairs (GPUs, share of the whole server's ring busbw that
a ring over that many of its GPUs gets), read here for every group of every path (docs/model.md
§2 "Fewer GPUs of a server", §18).
"""

from __future__ import annotations

import numpy as np


def subset_busbw_GBps(busbw_GBps, gpus, shares=()):
    """Ring busbw, GB/s, of ``gpus`` GPUs of one server whose whole-server ring busbw is
    ``busbw_GBps``: ``busbw * share`` with the share of the largest listed count at or below
    ``gpus`` (a group holds at least the links of a smaller listed group); counts below the
    smallest listed, and every count where ``shares`` is empty, keep ``busbw_GBps``.

    ``shares``: (GPUs, share) pairs, a constant of the link level, not broadcast; ``busbw_GBps``
    and ``gpus`` broadcast (numpy), and the result has their broadcast shape."""
    busbw = np.asarray(busbw_GBps, dtype=float)
    g = np.asarray(gpus, dtype=float)
    if not len(shares):
        return busbw * np.ones_like(g)
    rows = sorted(((float(n), float(s)) for n, s in shares), reverse=True)  # largest count first
    share = np.select([g >= n for n, _ in rows], [s for _, s in rows], 1.0)
    return busbw * share
