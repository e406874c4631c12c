"""Parameter-server gradient exchange (Li et al., OSDI 2014; TensorFlow and MXNet PS modes).

Every step each worker *pushes* its gradient to the servers; ``S`` servers each hold ``1/S`` of
the ``Psi*w`` bytes of parameters, sum what the workers pushed and update their shard; then
every worker *pulls* the new parameters. The pull moves the same bytes as the push, the other
way round, so one phase time serves both. For one phase of a buffer of ``size`` bytes:

    worker side   bytes_w = m * size * (1 - c/S)          (c = 1: a server runs on this machine,
                                                           so its own shard never leaves it)
    server side   bytes_s = h * m * size * (M - c) / S    (M machines with workers, h >= 1 the
                                                           load of the busiest server over the mean)
    t_phase       = alpha + max(bytes_w / B_worker, bytes_s / B_server)

``m`` is the number of workers on one machine that share its link (1 when the machine sums its
devices' gradients before pushing). Links are full duplex: on a machine that runs a worker and
a server, the push leaves through the NIC while other workers' pushes arrive, so the phase
takes the larger of the two, not their sum.

What this shows: with ``S`` dedicated servers the server side grows as ``M/S`` and the servers'
NICs saturate as workers are added (why all-reduce replaced parameter servers); with a server
on every machine (``S = M``, colocated) push + pull move ``2(M-1)/M * size``, exactly a ring
all-reduce's bandwidth term, and nothing is gained over it.

Placement used by ``ps_phase_s`` (and the validation):

- one machine: every device is a worker and the servers are the devices themselves
  (tf_cnn_benchmarks' default ``local_parameter_device=gpu``: ``ParamServerDeviceSetter`` places
  the variables on the GPUs, greedily by size), so each device is a colocated server of ``1/g``
  and the phase is ``server_phase_s`` over ``g`` machines and ``g`` servers through the
  intra-server link (``intra_*``; push + pull move a ring all-reduce's bytes). With
  ``server_on_host`` (``local_parameter_device=cpu``) the server is the host CPU instead: each
  device moves ``size`` over its own PCIe link to the host (``host_*``); the host's side is one
  such link per device, so it is never the bottleneck;
- several machines: a machine's devices first copy their gradients to its host over their own
  PCIe links, where the host CPU sums them (the pulled parameters come back the same way), then
  the machine is one worker and one server runs on each machine (``S = M``, colocated), through
  the node's NICs (``inter_*``). That is what the frameworks' defaults do: tf_cnn_benchmarks'
  default ``variable_update=parameter_server`` in a distributed job sums the towers' gradients
  with ``aggregate_gradients_using_copy`` on ``param_server_device``, a
  ``replica_device_setter`` whose worker device is the worker's ``/cpu:0``
  (``benchmark_cnn.py``, ``variable_mgr.py`` ``VariableMgrDistributedFetchFromPS``), and
  pushes once per worker; MXNet's ``dist_sync`` kvstore reduces a machine's devices in its
  local (CPU) store before pushing (ps-lite, Li et al., OSDI 2014).

Overlap (``ps_exposed_s``): gradients are pushed bucket by bucket as backward produces them
(``overlap.timeline_end``) and parameters pulled bucket by bucket as the next forward needs them
(``overlap.prefetch_end``). Not modelled: the servers' CPU time to sum and update, RPC
(de)serialisation and copies (gRPC), TCP throughput below line rate, shards of uneven size
unless ``imbalance`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.model import collectives as coll
from scalesim.model.compute import colocation_factor, micro_step_s
from scalesim.model.overlap import (
    bucket_layout,
    bucket_times,
    prefetch_end,
    serial_comm_s,
    timeline_end,
)
from scalesim.model.step import StepInputs, intra_busbw_of, straggler_s, with_contention


def _GBps_to_bytes_per_s(busbw_GBps):
    return np.asarray(busbw_GBps, dtype=float) * coll.GB


def server_phase_s(size_bytes, machines, servers, worker_GBps, server_GBps, latency_s,
                   workers_per_machine=1.0, colocated=True, imbalance=1.0):
    """One push (or pull) of ``size_bytes`` per worker between ``machines`` and ``servers``, s.

    ``worker_GBps`` is one machine's link (shared by its ``workers_per_machine`` workers),
    ``server_GBps`` one server's link. ``colocated``: the servers run on ``servers`` of the
    worker machines (needs ``servers <= machines``); otherwise on machines of their own.
    ``imbalance`` is the busiest server's share over the mean share, between 1 and ``servers``.
    """
    size = np.asarray(size_bytes, dtype=float)
    m_count = np.asarray(machines, dtype=float)
    s_count = np.maximum(np.asarray(servers, dtype=float), 1.0)
    per_machine = np.asarray(workers_per_machine, dtype=float)
    c = np.where(np.asarray(colocated, dtype=bool), 1.0, 0.0)
    # The busiest worker machine: one that hosts a server only when every machine hosts one.
    local_share = np.where(c * s_count >= m_count, c / s_count, 0.0)
    worker_bytes = per_machine * size * (1.0 - local_share)
    # The busiest shard is at most all of it: imbalance <= S.
    h = np.minimum(np.maximum(np.asarray(imbalance, dtype=float), 1.0), s_count)
    server_bytes = h * per_machine * size * (m_count - c) / s_count
    t = np.asarray(latency_s, dtype=float) + np.maximum(
        worker_bytes / _GBps_to_bytes_per_s(worker_GBps),
        server_bytes / _GBps_to_bytes_per_s(server_GBps),
    )
    return np.where((m_count > 1) | (c == 0.0), t, 0.0)


def ps_phase_s(size_bytes, devices_per_node, nodes, intra_latency_s, intra_busbw_GBps,
               host_latency_s, host_busbw_GBps, inter_latency_s, inter_busbw_GBps,
               imbalance=1.0, aggregate_in_node=True, server_on_host=False):
    """Push time of a ``size_bytes`` gradient buffer (= pull time of the parameters), s.

    The placement of the module docstring: on one node the devices are the servers of a
    ``1/g`` share each, through the intra-server link (``server_on_host``: one server on the
    host, over each device's PCIe link); several nodes sum on each node's host (each device over
    its own PCIe link), then exchange with one colocated server per node through the NICs.
    ``aggregate_in_node=False``: every device is its own worker across nodes (one worker
    process per GPU), ``g`` of them sharing the node's NICs, and ``g`` times the bytes cross the
    network.
    """
    g = np.asarray(devices_per_node, dtype=float)
    n = np.asarray(nodes, dtype=float)
    size = np.asarray(size_bytes, dtype=float)
    on_host = np.asarray(host_latency_s, dtype=float) + size / _GBps_to_bytes_per_s(host_busbw_GBps)
    on_host = np.where(g > 1, on_host, 0.0)
    aggregate = np.asarray(aggregate_in_node, dtype=bool)
    within = np.where(aggregate, on_host, 0.0)
    across = server_phase_s(size, n, n, inter_busbw_GBps, inter_busbw_GBps, inter_latency_s,
                            workers_per_machine=np.where(aggregate, 1.0, g), imbalance=imbalance)
    on_devices = server_phase_s(size, g, g, intra_busbw_GBps, intra_busbw_GBps, intra_latency_s,
                                imbalance=imbalance)
    one_node = np.where(np.asarray(server_on_host, dtype=bool), on_host, on_devices)
    return np.where(n > 1, within + across, one_node)


def ps_exposed_s(forward_s, backward_s, total_bytes, bucket_bytes, first_bucket_bytes,
                 phase_s, overlap=True):
    """(exposed, total) exchange time of one step, s.

    ``phase_s(size)`` is one bucket's push (= pull) time. With ``overlap`` the pushes follow the
    bucket timeline of backward and the pulls are prefetched ahead of the forward that needs
    them; without it both run whole, after backward and before forward.
    """
    buckets = bucket_layout(total_bytes, bucket_bytes, first_bucket_bytes)
    times = bucket_times(buckets, phase_s)
    serial = serial_comm_s(buckets, times)
    forward = np.asarray(forward_s, dtype=float)
    backward = np.asarray(backward_s, dtype=float)
    push = timeline_end(backward, buckets, times) - backward
    pull = prefetch_end(forward, buckets, times) - forward
    exposed = np.where(np.asarray(overlap, dtype=bool), push + pull, 2.0 * serial)
    return exposed, 2.0 * serial


@dataclass(frozen=True)
class PSResult:
    """Per-scenario arrays of a parameter-server step; compute + exposed + straggler = step."""

    step_time_s: np.ndarray
    compute_s: np.ndarray
    exposed_comm_s: np.ndarray
    comm_total_s: np.ndarray  # push + pull of every bucket, hidden or not
    samples_per_s: np.ndarray
    straggler_s: np.ndarray  # wait for the slowest worker, as in the all-reduce model


def evaluate_ps(inp: StepInputs, host_latency_s, host_busbw_GBps, imbalance=1.0,
                aggregate_in_node=True, server_on_host=False) -> PSResult:
    """Step time of ``inp`` with a parameter-server exchange instead of its all-reduce.

    ``step = k * micro + optimizer + exposed push/pull``, the push after the last micro-step's
    backward and the pull before the next forward (accumulated micro-steps exchange nothing).
    Uses the links, buckets, overlap, compute curve and co-location of ``inp``; strategy and algorithm are
    ignored; the slowest worker is waited for as in the all-reduce model; no loader stalls. One
    device exchanges nothing.
    """
    p = np.asarray(inp.devices, dtype=float)
    g = np.minimum(np.asarray(inp.devices_per_node, dtype=float), p)
    nodes = np.maximum(np.ceil(p / g), 1.0)
    k = np.maximum(np.asarray(inp.accumulation, dtype=float), 1.0)
    b = np.asarray(inp.micro_batch, dtype=float)
    shared = colocation_factor(g, inp.colocation_slope)
    micro = micro_step_s(b, inp.overhead_s, inp.per_sample_s) * shared
    backward = micro * np.asarray(inp.backward_fraction, dtype=float)
    compute = (k * (micro + np.asarray(inp.fetch_s, dtype=float))  # a fetch before forward, §1
               + np.asarray(inp.optimizer_step_s, dtype=float) * shared
               + np.asarray(inp.per_step_s, dtype=float))
    total_bytes = np.where(p > 1, np.asarray(inp.params, dtype=float)
                           * np.asarray(inp.wire_bytes_per_param, dtype=float), 0.0)

    intra_GBps = intra_busbw_of(inp, g)  # fewer GPUs of a mesh server: fewer links

    def phase(size_bytes):  # seconds of one push (= one pull)
        return ps_phase_s(size_bytes, g, nodes, inp.intra_latency_s, intra_GBps,
                          host_latency_s, host_busbw_GBps, inp.inter_latency_s,
                          inp.inter_busbw_GBps, imbalance, aggregate_in_node, server_on_host)

    exposed, total = ps_exposed_s(micro - backward, backward, total_bytes, inp.bucket_bytes,
                                  inp.first_bucket_bytes, phase, inp.overlap)
    exposed = with_contention(exposed, total, inp.comm_contention)
    straggler = straggler_s(inp, p, k, micro)
    step = compute + exposed + straggler
    shape = np.broadcast(step, p, b, k).shape

    def full(x):
        return np.broadcast_to(np.asarray(x, dtype=float), shape).copy()

    return PSResult(full(step), full(compute), full(exposed), full(total),
                    full(p * k * b / step), full(straggler))
