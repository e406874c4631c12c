"""One synchronous data-parallel step, and scaling against one device.

    step = compute + exposed_comm + straggler_wait + data_stall

- compute: ``k`` micro-steps of forward+backward plus one optimizer step, all of it slowed by
  the other busy devices of the same server (``colocation_slope``);
- exposed_comm: what the bucket timeline leaves after the last backward (``overlap``), or every
  collective after it (no overlap), plus collectives that cannot overlap (ZeRO-1/2 parameter
  all-gather after the optimizer step; ZeRO-3 gathers exposed in forward and backward), plus the
  share ``comm_contention`` of the hidden collective time that still takes compute resources;
- straggler_wait: expected wait for the slowest of N jittered devices and a persistently slow one;
- data_stall: loading time of the step's samples not hidden behind the rest of the step.

All inputs broadcast; ``evaluate`` returns arrays of the broadcast shape.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from scalesim.model import collectives as coll
from scalesim.model.compute import colocation_factor, micro_step_s
from scalesim.model.memory import DDP, ZERO1, ZERO2, ZERO3, memory_per_device_bytes
from scalesim.model.overlap import (
    bucket_layout,
    bucket_times,
    prefetch_end,
    serial_comm_s,
    timeline_end,
)
from scalesim.model.pipeline import data_stall_s
from scalesim.model.stragglers import straggler_wait_s


@dataclass(frozen=True)
class StepInputs:
    """Every input of the step model; each field is a scalar or an array (broadcast together)."""

    devices: object  # data-parallel devices in the job
    devices_per_node: object  # devices used in each server
    micro_batch: object  # samples per device per micro-step
    accumulation: object  # micro-steps per optimizer step (k)
    overhead_s: object  # compute curve: fixed time per micro-step, s
    per_sample_s: object  # compute curve: time per sample, s
    optimizer_step_s: object  # optimizer update once per step, s
    backward_fraction: object  # share of forward+backward spent in backward (about 2/3)
    params: object  # parameters (gradient elements) Psi
    wire_bytes_per_param: object  # bytes per gradient/parameter element on the wire
    intra_latency_s: object
    intra_busbw_GBps: object
    inter_latency_s: object
    inter_busbw_GBps: object
    strategy: object = DDP  # 0 DDP, 1 ZeRO-1, 2 ZeRO-2, 3 ZeRO-3/FSDP
    algorithm: object = coll.AUTO  # 0 auto, 1 ring, 2 tree, 3 hierarchical
    overlap: object = True  # overlap collectives with backward (and ZeRO-3 prefetch)
    bucket_bytes: object = 25 * 1024 * 1024
    first_bucket_bytes: object = 1024 * 1024
    loader_samples_per_s: object = np.inf  # supply of one device's loader
    jitter_cv: object = 0.0  # std/mean of a micro-step's time, independent from step to step
    device_cv: object = 0.0  # std/mean of devices' speeds (persistent, device to device)
    comm_contention: object = 0.0  # share of overlapped collective time that still costs compute
    colocation_slope: object = 0.0  # compute slowdown per extra busy device of a server (fraction)
    slow_factor: object = 1.0  # compute-time multiplier of the one slow device (1 = none)
    param_bytes_per_param: object = 2.0
    grad_bytes_per_param: object = 2.0
    optimizer_bytes_per_param: object = 12.0
    activation_bytes_per_sample: object = 0.0
    device_memory_bytes: object = np.inf

    def replace(self, **changes) -> StepInputs:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return StepInputs(**values)


@dataclass(frozen=True)
class StepResult:
    """Per-scenario arrays; the four parts sum to ``step_time_s``."""

    step_time_s: np.ndarray
    compute_s: np.ndarray
    exposed_comm_s: np.ndarray
    straggler_s: np.ndarray
    data_stall_s: np.ndarray
    comm_total_s: np.ndarray  # all collective time, hidden or not
    comm_bytes: np.ndarray  # bytes each device sends per step (ring volumes)
    nodes: np.ndarray
    global_batch: np.ndarray
    samples_per_s: np.ndarray
    memory_bytes: np.ndarray
    fits: np.ndarray


def _as(x, dtype=float):
    return np.asarray(x, dtype=dtype)


def with_contention(exposed_s, total_s, contention):
    """Exposed time once collectives that share the compute engine slow the compute they hide
    behind: ``exposed + c * (total - exposed)``, ``c`` in [0, 1] (0: free overlap, 1: none)."""
    c = np.clip(_as(contention), 0.0, 1.0)
    return exposed_s + c * np.maximum(total_s - exposed_s, 0.0)


def straggler_s(inp: StepInputs, devices, accumulation, micro_step_s):
    """Expected wait for the slowest device in one step, seconds (see model/stragglers.py).

    The k micro-steps jitter independently (std ``jitter_cv * t_micro * sqrt(k)``); each device's
    persistent speed offset lasts all k (std ``device_cv * k * t_micro``); independent normals add
    in variance. One device may be slower still, by ``(slow_factor - 1) * k * t_micro``.
    """
    k = np.asarray(accumulation, dtype=float)
    sigma = np.hypot(_as(inp.jitter_cv) * micro_step_s * np.sqrt(k),
                     _as(inp.device_cv) * k * micro_step_s)
    slow_delay = (_as(inp.slow_factor) - 1.0) * k * micro_step_s
    return straggler_wait_s(np.asarray(devices).astype(np.int64), sigma, slow_delay)


def _communication(inp: StepInputs, g, nodes, k, forward, backward, total_bytes, strategy, overlap):
    """(exposed, total, bytes sent per device) of one step's collectives for each strategy."""
    links = (g, nodes, inp.intra_latency_s, inp.intra_busbw_GBps, inp.inter_latency_s,
             inp.inter_busbw_GBps)
    ar_coeffs = coll.allreduce_coeffs(*links)
    rs_coeffs = coll.reduce_scatter_coeffs(*links)  # all-gather: the same ring volume and steps
    buckets = bucket_layout(total_bytes, inp.bucket_bytes, inp.first_bucket_bytes)
    present = set(np.unique(strategy).tolist())
    exposed, total = {}, {}

    rs_times = bucket_times(buckets, lambda size: coll.affine_s(rs_coeffs, size))
    if DDP in present:  # bucketed all-reduce during the last backward
        ar_times = bucket_times(
            buckets, lambda size: coll.allreduce_from_coeffs(ar_coeffs, size, inp.algorithm)
        )
        total[DDP] = serial_comm_s(buckets, ar_times)
        exposed[DDP] = np.where(overlap, timeline_end(backward, buckets, ar_times) - backward,
                                total[DDP])
    if present & {ZERO1, ZERO2}:  # reduce-scatter in backward, parameter all-gather after step
        param_gather = coll.affine_s(rs_coeffs, total_bytes)
        rs_serial = serial_comm_s(buckets, rs_times)
        rs_exposed = np.where(overlap, timeline_end(backward, buckets, rs_times) - backward,
                              rs_serial)
        exposed[ZERO1] = exposed[ZERO2] = rs_exposed + param_gather
        total[ZERO1] = total[ZERO2] = rs_serial + param_gather
    if ZERO3 in present:
        # Parameters gathered in forward and backward of every micro-step; gradients
        # reduce-scattered once per step (accumulation keeps them unsharded in between).
        ag_serial = serial_comm_s(buckets, rs_times)
        both_times = tuple(2.0 * t for t in rs_times)  # gather + reduce-scatter per bucket
        fwd = np.where(overlap, prefetch_end(forward, buckets, rs_times) - forward, ag_serial)
        bwd_gather = np.where(overlap, timeline_end(backward, buckets, rs_times) - backward,
                              ag_serial)
        bwd_last = np.where(overlap, timeline_end(backward, buckets, both_times) - backward,
                            2.0 * ag_serial)
        exposed[ZERO3] = (k - 1.0) * (fwd + bwd_gather) + fwd + bwd_last
        total[ZERO3] = (2.0 * k + 1.0) * ag_serial

    codes = sorted(present)
    if len(codes) == 1:
        exposed_all, total_all = exposed[codes[0]], total[codes[0]]
    else:
        exposed_all = np.select([strategy == c for c in codes], [exposed[c] for c in codes])
        total_all = np.select([strategy == c for c in codes], [total[c] for c in codes])
    p = g * nodes
    ring_share = (p - 1.0) / p
    volume_units = np.where(strategy == ZERO3, 2.0 * k + 1.0, 2.0)
    return exposed_all, total_all, volume_units * ring_share * total_bytes


def evaluate(inp: StepInputs) -> StepResult:
    """Step time and its breakdown for every scenario in ``inp``."""
    p = _as(inp.devices)
    g = np.minimum(_as(inp.devices_per_node), p)
    nodes = np.maximum(np.ceil(p / g), 1.0)
    k = np.maximum(_as(inp.accumulation), 1.0)
    b = _as(inp.micro_batch)
    strategy = np.asarray(inp.strategy)
    overlap = np.asarray(inp.overlap, dtype=bool)

    shared = colocation_factor(g, inp.colocation_slope)
    micro = micro_step_s(b, inp.overhead_s, inp.per_sample_s) * shared
    backward = micro * _as(inp.backward_fraction)
    forward = micro - backward
    # ZeRO-1/2/3 shard the optimizer state: each device updates its 1/p of the parameters.
    optimizer = _as(inp.optimizer_step_s) * shared / np.where(strategy >= ZERO1, p, 1.0)
    compute = k * micro + optimizer

    total_bytes = _as(inp.params) * _as(inp.wire_bytes_per_param) * np.ones_like(p)
    total_bytes = np.where(p > 1, total_bytes, 0.0)
    if np.all(p <= 1):  # one device: nothing to exchange
        exposed = comm_total = comm_bytes = np.zeros_like(p)
    else:
        exposed, comm_total, comm_bytes = _communication(
            inp, g, nodes, k, forward, backward, total_bytes, strategy, overlap
        )
        exposed = with_contention(exposed, comm_total, inp.comm_contention)

    straggler = straggler_s(inp, p, k, micro)

    busy = compute + exposed + straggler
    samples_per_step = k * b
    stall = data_stall_s(samples_per_step, inp.loader_samples_per_s, busy)
    step = busy + stall

    global_batch = p * k * b
    memory = memory_per_device_bytes(
        strategy, p, inp.params, inp.param_bytes_per_param, inp.grad_bytes_per_param,
        inp.optimizer_bytes_per_param, inp.activation_bytes_per_sample, b,
    )
    shape = np.broadcast(step, memory).shape

    def full(x):
        x = np.asarray(x, dtype=float)
        return x if x.shape == shape else np.broadcast_to(x, shape).copy()

    return StepResult(
        step_time_s=full(step),
        compute_s=full(compute),
        exposed_comm_s=full(exposed),
        straggler_s=full(straggler),
        data_stall_s=full(stall),
        comm_total_s=full(comm_total),
        comm_bytes=full(comm_bytes),
        nodes=full(nodes),
        global_batch=full(global_batch),
        samples_per_s=full(global_batch / step),
        memory_bytes=full(memory),
        fits=np.broadcast_to(memory <= _as(inp.device_memory_bytes), shape).copy(),
    )


def evaluate_scaling(inp: StepInputs, baseline_micro_batch=None):
    """Evaluate ``inp`` and the same job on one device; return (result, speedup, efficiency).

    The baseline is one typical device (no communication, no straggler, its own loader) with
    ``baseline_micro_batch`` per micro-step: the same micro-batch under weak scaling, the whole
    global batch over the accumulation steps under strong scaling.
    """
    result = evaluate(inp)
    base_b = inp.micro_batch if baseline_micro_batch is None else baseline_micro_batch
    base = evaluate(inp.replace(devices=1, devices_per_node=1, micro_batch=base_b, slow_factor=1.0))
    speedup = result.samples_per_s / base.samples_per_s
    efficiency = speedup / np.asarray(inp.devices, dtype=float)
    return result, speedup, efficiency
