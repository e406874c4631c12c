"""The links of a communication group, and hybrid sharding's groups (docs/model.md §16).

One place for both prediction paths: the layout step (``layout_step``: dp x cp at stride tp,
the tensor and pipeline groups' links) and the data-parallel step (``step``: all devices at
stride 1). ``x`` is any inputs object with the link fields the two share (``StepInputs``,
``LayoutInputs``): ``devices_per_node`` (devices of a server the job uses), ``intra_latency_s``,
``intra_busbw_GBps`` (the whole server's ring busbw, GB/s), ``intra_subset_shares``,
``inter_latency_s``, ``inter_busbw_GBps`` (one server over all its NICs, GB/s),
``nvls_busbw_ratio`` and ``algorithm``. Numpy, broadcasts.
"""

from __future__ import annotations

import numpy as np

from scalesim.layout import fewest_members, group_span
from scalesim.model import collectives as coll
from scalesim.model.subset_links import subset_busbw_GBps


def _f(x):
    return np.asarray(x, dtype=float)


def shard_sizes(shard_group, zero, group):
    """(s, r): the ranks that shard the ZeRO states and the replicas of them, for a
    data-parallel group of ``group`` ranks: ``shard_group`` where it is set (> 0) under ZeRO
    (``zero`` > 0) and below ``group``, else all of ``group`` (full sharding; DDP); ``r =
    group / s`` (ints)."""
    group = np.asarray(group, dtype=int)
    shard = np.asarray(shard_group, dtype=int)
    shard = np.where((shard > 0) & (np.asarray(zero) > 0), np.minimum(shard, group), group)
    return shard, group // np.maximum(shard, 1)


def job_devices(x):
    """The job's ranks: ``devices`` of the data-parallel path (``StepInputs``), dp x tp x pp x
    cp of the layout path (``LayoutInputs``), ints; they fill servers in rank order, so a group
    whose block of ranks straddles a server boundary crosses it (``layout.straddles``)."""
    if hasattr(x, "devices"):
        return np.asarray(x.devices, dtype=int)
    return np.asarray(x.dp * x.tp * x.pp * x.cp, dtype=int)


def group_link(x, size, stride):
    """(members per node, nodes, inter-server busbw share, GB/s) of groups of ``size`` ranks
    ``stride`` apart (``layout.group_span``); across servers the group gets its members' share
    of the node's NICs, ``inter_busbw * per_node / devices_per_node`` (every group of the node
    communicates at once): all of it where the group holds every device of a server. A group
that straddles a server boundary (``layout.straddles``) spans two servers."""
    g = _f(x.devices_per_node)
    span = (np.asarray(size, dtype=int), np.asarray(stride, dtype=int),
            np.asarray(x.devices_per_node, dtype=int), job_devices(x))
    per_node, nodes = group_span(*span)
    # the NICs of the domain holding fewest members (a partly filled last one) bound the group
    fewest = _f(fewest_members(*span))
    per_node, nodes = _f(per_node), _f(nodes)
    inter = _f(x.inter_busbw_GBps)
    inter_share = np.where(fewest == g, inter, inter * fewest / g)
    return per_node, nodes, inter_share


def group_coeffs(x, size, stride):
    """(latency/bandwidth arguments of ``coll.reduce_scatter_coeffs``, all-reduce coefficients)
    of a group of ``size`` ranks at ``stride`` (``group_link``: its members per server, its
    servers, its share of the NICs; inside a server the subset busbw; NVLS where the link has
    it)."""
    per_node, nodes, inter_share = group_link(x, size, stride)
    intra_GBps = subset_busbw_GBps(x.intra_busbw_GBps, per_node, x.intra_subset_shares)
    lat_args = (per_node, nodes, x.intra_latency_s, intra_GBps, x.inter_latency_s, inter_share)
    return lat_args, coll.allreduce_coeffs(*lat_args, _f(x.nvls_busbw_ratio) * intra_GBps)


def replica_all_reduce(x, shard, replicas, stride):
    """Hybrid sharding's second collective: ``f(bytes)``, seconds of the all-reduce, across the
    ``replicas`` copies of a shard group of ``shard`` ranks (stride ``stride * shard``: one
    member per replica of the same shard rank), of the ``bytes / shard`` a reduce-scatter of
    ``bytes`` leaves each rank (FSDP ``_reduce_grad``: reduce-scatter in the shard group, then
    all-reduce of the shard over ``_inter_node_pg``; docs/model.md §16). ``stride``: the shard
    group's own rank stride (tp on the layout path, 1 on the data-parallel path). Every shard
    rank's all-reduce runs at once, so across servers each gets its members' share of the NICs
    (``group_link``). None where nothing replicates (full sharding: the exchange unchanged)."""
    if np.all(np.asarray(replicas) <= 1):
        return None
    _, coeffs = group_coeffs(x, replicas, np.asarray(stride, dtype=int) * shard)
    shard_f = _f(np.maximum(shard, 1))

    def all_reduce(size_bytes):
        seconds = coll.allreduce_from_coeffs(coeffs, np.asarray(size_bytes) / shard_f,
                                             x.algorithm)
        return np.where(np.asarray(replicas) > 1, seconds, 0.0)

    return all_reduce
