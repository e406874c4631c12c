"""One synchronous data-parallel step, and scaling against one device.

    step = compute + exposed_comm + straggler_wait + data_stall

- compute: ``k`` micro-steps of forward+backward plus one optimizer step, all of it slowed by
  the other busy devices of the same server (``colocation_slope``), and ``k`` data fetches
  before the forwards (``StepInputs.fetch_s``), outside the passes the exchange hides behind;
- exposed_comm: what the bucket timeline leaves after the last backward (``overlap``), or every
  collective after it (no overlap), plus collectives that cannot overlap (DeepSpeed ZeRO-1/2
  parameter all-gather after the optimizer step; ZeRO-3 gathers exposed in forward and
  backward; ``zero_exchange``, shared with the layout step), plus the share ``comm_contention``
  of the hidden collective time that still takes compute resources. Each strategy communicates
  in its framework's units (``sharding``), over all devices or, under hybrid sharding
  (``StepInputs.shard_group``), over the shard group and then across its replicas
  (``shard_groups``, docs/model.md §16);
- straggler_wait: expected wait for the slowest of N jittered devices and a persistently slow one,
  once per step, or once per micro-step where a strategy synchronises every micro-step; the
  last device's passes, longer by that wait, are the windows the exchange hides behind
  (``straggler_stretch``), so exposed_comm is what outlasts them;
- data_stall: loading time of the step's samples not hidden behind the rest of the step.

All inputs broadcast; ``evaluate`` returns arrays of the broadcast shape.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import numpy as np

from scalesim.model import collectives as coll
from scalesim.model.compute import colocation_factor, micro_step_s
from scalesim.model.memory import (
    DDP,
    ZERO1,
    held_grad_bytes_per_param,
    memory_per_device_bytes,
    optimizer_with_copies_s,
    reduce_bytes_per_param_of,
    unreduced_fsdp_grad_bytes_per_param,
    usable_memory_bytes,
)
from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
from scalesim.model.pipeline import data_stall_s
from scalesim.model.shard_groups import group_coeffs, replica_all_reduce, shard_sizes
from scalesim.model.sharding import EVERY_MICRO_STEP, FSDP, block_count
from scalesim.model.stragglers import straggler_stretch, straggler_wait_s
from scalesim.model.subset_links import subset_busbw_GBps
from scalesim.model.zero_exchange import (
    exchange,
    holds_full_gradients,
    reduce_wire_ratio,
    sent_per_byte,
    syncs_every_micro_step,
)


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
    # how intra_busbw_GBps (the whole server's) falls for fewer GPUs of a server: (GPUs, share)
    # pairs, shape (k, 2), the link level's (LinkLevel.subset_shares; model/subset_links.py)
    intra_subset_shares: object = ()
    # NCCL's NVLS all-reduce busbw inside a server with NVLink SHARP over intra_busbw_GBps (the
    # ring's): all-reduces then use NVLS (one server) or NVLS-tree (several) where faster; NaN:
    # no NVLS. A ratio, so that any intra busbw (an override, a sweep axis) scales NVLS alike.
    nvls_busbw_ratio: object = np.nan
    strategy: object = DDP  # 0 DDP, 1 ZeRO-1, 2 ZeRO-2, 3 ZeRO-3/FSDP
    # 0 PyTorch-native (FSDP for ZeRO-2/3, Megatron-Core's distributed optimizer for ZeRO-1) or
    # 1 DeepSpeed (model/zero_exchange.py)
    framework: object = FSDP
    # when sharded gradients are reduced under accumulation: 0 every micro-step, 1 once per step
    # with full gradients held in between (FSDP's no_sync; sharding.GRAD_SYNCS; DeepSpeed: 0)
    grad_sync: object = EVERY_MICRO_STEP
    # s, ranks that shard the ZeRO states (hybrid sharding, HSDP: FSDP HYBRID_SHARD): the s
    # innermost devices, replicated across the devices / s groups of them (stride s); 0 (or
    # devices and above): all devices, full sharding. Must divide devices (the edges refuse one
    # that does not); no effect under DDP (docs/model.md §16, hybrid sharding)
    shard_group: object = 0
    blocks: object = 0  # FSDP-wrapped blocks (unit = Psi*w/blocks); 0: estimated from params
    algorithm: object = coll.AUTO  # 0 auto (NCCL ring, tree or NVLS), 1 ring, 2 tree, 3 hierarchical
    overlap: object = True  # overlap collectives with backward (and ZeRO-3 prefetch)
    bucket_bytes: object = DDP_BUCKET_BYTES  # DDP gradient bucket, bytes
    first_bucket_bytes: object = DDP_FIRST_BUCKET_BYTES  # DDP first bucket, bytes
    loader_samples_per_s: object = np.inf  # supply of one device's loader in this layout
    # supply of the loader of one device alone in its server (the one-device baseline of
    # speed-up and efficiency); NaN: the same as loader_samples_per_s
    loader_alone_samples_per_s: object = np.nan
    jitter_cv: object = 0.0  # std/mean of a micro-step's time, independent from step to step
    device_cv: object = 0.0  # std/mean of devices' speeds (persistent, device to device)
    comm_contention: object = 0.0  # share of overlapped collective time that still costs compute
    colocation_slope: object = 0.0  # compute slowdown per extra busy device of a server (fraction)
    slow_factor: object = 1.0  # compute-time multiplier of the one slow device (1 = none)
    param_bytes_per_param: object = 2.0
    grad_bytes_per_param: object = 2.0
    optimizer_bytes_per_param: object = 12.0
    # bytes per parameter of the gradients' reduction where stated (FSDP reduce_dtype float32:
    # 4; Megatron-Core's grad_reduce_in_fp32 False: 2); NaN: the framework's default
    # (``memory.reduce_bytes_per_param_of``: Megatron-Core's ZeRO-1 its fp32 main grads, the
    # rest wire_bytes_per_param), as LayoutInputs.reduce_bytes_per_param
    reduce_bytes_per_param: object = np.nan
    activation_bytes_per_sample: object = 0.0
    device_memory_bytes: object = np.inf
    memory_margin: object = 0.0  # share of device memory kept free (``usable_memory_bytes``)
    # micro-step times of pipeline fill and drain each optimizer step pays, where each device
    # of this model is a model replica that runs as a pipeline (diagnose's runs that split the
    # model): (pp - 1)/v for 1F1B and interleaved, model/pipeline_schedule.bubble_microbatches;
    # 0: no pipeline. The step then holds k micro-steps of compute and the bubble's idle
    # (``StepResult.bubble_s``, docs/model.md §7)
    bubble_micro_steps: object = 0.0
    # fixed time once per optimizer step, neither sharded nor colocated (ComputeCurve.per_step_s:
    # a metric all-reduced once a step), s; part of the step's compute (docs/model.md §1)
    per_step_s: object = 0.0
    # the device's memory bandwidth, GB/s: PyTorch DDP's bucket copies run at it
    # (memory.ddp_bucket_copies_s); NaN: not known, the copies at the optimizer sweep's rate
    # (optimizer_step_s over its bytes, memory.optimizer_traffic_ratio), docs/model.md §4
    memory_bandwidth_GBps: object = np.nan
    # fixed time of each micro-step's data fetch before its forward, s (the loader's next():
    # diagnose's data wait read as a fixed cost of each fetch): serial with the step and part of
    # its compute, but outside the forward and backward the exchange hides behind, the same on
    # every device (no straggler spread, no co-location slowdown) and no part of a pipeline's
    # fill and drain (docs/model.md §1, "A fetch before each forward"); 0: none
    fetch_s: object = 0.0

    def replace(self, **changes) -> StepInputs:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class StepResult:
    """Per-scenario arrays; the five parts (compute, bubble, exposed communication, straggler,
    data stall) sum to ``step_time_s``."""

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
    # a pipelined replica's fill and drain (``StepInputs.bubble_micro_steps`` micro-steps of
    # one stage), idle: 0 where the workload has none
    bubble_s: np.ndarray | float = 0.0


def _as(x, dtype=float):
    return np.asarray(x, dtype=dtype)


def with_contention(exposed_s, total_s, contention):
    """Exposed time once collectives that share the compute engine slow the compute they hide
    behind: ``exposed + c * (total - exposed)``, ``c`` in [0, 1] (0: free overlap, 1: none)."""
    c = np.clip(_as(contention), 0.0, 1.0)
    return exposed_s + c * np.maximum(total_s - exposed_s, 0.0)


def straggler_s(inp: StepInputs, devices, accumulation, micro_step_s, per_micro_step=False):
    """Expected wait for the slowest device in one step, seconds (see model/stragglers.py).

    Synchronised once per step, the k micro-steps jitter independently (std
    ``jitter_cv * t_micro * sqrt(k)``); each device's persistent speed offset lasts all k (std
    ``device_cv * k * t_micro``); independent normals add in variance. One device may be slower
    still, by ``(slow_factor - 1) * k * t_micro``. Where the devices synchronise every
    micro-step (``per_micro_step``) each micro-step waits for its own slowest device:
    ``k`` times the wait of one micro-step (std ``hypot(jitter_cv, device_cv) * t_micro``, slow
    device late by ``(slow_factor - 1) * t_micro``), so jitter costs ``k * e_N * sigma_micro``
    instead of ``sqrt(k) * e_N * sigma_micro``.
    """
    k = np.asarray(accumulation, dtype=float)
    per_micro = np.asarray(per_micro_step, dtype=bool)
    spans = np.where(per_micro, 1.0, k)  # micro-steps between two synchronisations
    sigma = np.hypot(_as(inp.jitter_cv) * micro_step_s * np.sqrt(spans),
                     _as(inp.device_cv) * spans * micro_step_s)
    slow_delay = (_as(inp.slow_factor) - 1.0) * spans * micro_step_s
    wait = straggler_wait_s(np.asarray(devices).astype(np.int64), sigma, slow_delay)
    return wait * k / spans


def intra_busbw_of(inp: StepInputs, g):
    """Intra-server ring busbw, GB/s, of a job using ``g`` GPUs of each server: the whole
    server's ``intra_busbw_GBps`` times its share for ``g`` (``subset_links``)."""
    return subset_busbw_GBps(inp.intra_busbw_GBps, g, inp.intra_subset_shares)


def _communication(inp: StepInputs, g, k, forward, backward, total_bytes, strategy, framework,
                   overlap, shard, replicas, reduce_bytes):
    """(exposed, total, bytes sent per device) of one step's collectives: the shared ZeRO
    exchange (``zero_exchange.exchange``) over the shard group of ``shard`` devices (all p
    devices without hybrid sharding) on its links (``shard_groups.group_coeffs``, stride 1: the
    job's ``g`` devices of a server), each gradient reduce-scatter followed under hybrid
    sharding by an all-reduce of its shard over the ``replicas`` (``replica_all_reduce``)."""
    links = inp.replace(devices_per_node=g)  # the devices of a server the job uses
    lat_args, ar_coeffs = group_coeffs(links, shard, 1)
    rs_coeffs = coll.reduce_scatter_coeffs(*lat_args)  # all-gather: the same ring volume and steps

    def all_reduce(size_bytes):  # seconds
        return coll.allreduce_from_coeffs(ar_coeffs, size_bytes, inp.algorithm)

    def ring(size_bytes):  # seconds of a reduce-scatter or all-gather
        return coll.affine_s(rs_coeffs, size_bytes)

    s, r = _as(shard), _as(replicas)
    exposed, total, _units = exchange(
        strategy, framework, total_bytes, s, block_count(inp.blocks, inp.params), k, forward,
        backward, overlap, all_reduce, ring, inp.wire_bytes_per_param, inp.bucket_bytes,
        inp.first_bucket_bytes, grad_sync=inp.grad_sync, reduce_bytes_per_param=reduce_bytes,
        replica_all_reduce=replica_all_reduce(links, shard, replicas, 1))
    ratio = reduce_wire_ratio(inp.wire_bytes_per_param, reduce_bytes)
    return exposed, total, sent_per_byte(strategy, framework, k, inp.grad_sync, s, r,
                                         ratio) * total_bytes


# Where a thread runs in ``lockstep.map_in_lockstep``, its ``evaluate`` calls are batched with
# those of the other threads (``evaluations``: a callable of one StepInputs); else None.
_LOCKSTEP = threading.local()


def evaluate(inp: StepInputs) -> StepResult:
    """Step time and its breakdown for every scenario in ``inp`` (``evaluate_alone``; in a
    thread of ``lockstep.map_in_lockstep``, batched with the others': the same numbers)."""
    evaluations = getattr(_LOCKSTEP, "evaluations", None)
    return evaluate_alone(inp) if evaluations is None else evaluations(inp)


def evaluate_alone(inp: StepInputs) -> StepResult:
    """Step time and its breakdown for every scenario in ``inp``."""
    p = _as(inp.devices)
    g = np.minimum(_as(inp.devices_per_node), p)
    nodes = np.maximum(np.ceil(p / g), 1.0)
    k = np.maximum(_as(inp.accumulation), 1.0)
    b = _as(inp.micro_batch)
    strategy = np.asarray(inp.strategy)
    framework = np.asarray(inp.framework)
    overlap = np.asarray(inp.overlap, dtype=bool)
    # the ZeRO states shard over s devices (all p without hybrid sharding), r replicas of them
    shard, replicas = shard_sizes(inp.shard_group, strategy, p.astype(int))

    shared = colocation_factor(g, inp.colocation_slope)
    micro = micro_step_s(b, inp.overhead_s, inp.per_sample_s) * shared
    backward = micro * _as(inp.backward_fraction)
    forward = micro - backward
    # one rule for the gradients' bytes (memory.held_grad_bytes_per_param): held, reduced on
    # the wire (Megatron-Core's fp32 main grads, §4; the optimizer step: optimizer_traffic_ratio)
    held_grad = held_grad_bytes_per_param(strategy, framework, inp.grad_bytes_per_param,
                                          inp.reduce_bytes_per_param, ranks=p)
    reduce_bytes = reduce_bytes_per_param_of(strategy, framework, inp.wire_bytes_per_param,
                                             inp.grad_bytes_per_param, inp.reduce_bytes_per_param)
    # ZeRO-1/2/3 shard the optimizer state: each device updates its 1/s of the parameters; the
    # given step swept 2 w_param + w_grad + 2 K bytes a parameter, this one the framework's
    # (Megatron-Core's fp32 main grads, FSDP's fp32 shards), plus PyTorch DDP's bucket copies on
    # p > 1 at the device's memory bandwidth (not co-location-slowed, as the layout path), where
    # it is not given (NaN) at the sweep's rate (memory.optimizer_with_copies_s, §4)
    optimizer = optimizer_with_copies_s(
        _as(inp.optimizer_step_s) * shared / np.where(strategy >= ZERO1, _as(shard), 1.0),
        strategy, framework, inp.param_bytes_per_param, inp.grad_bytes_per_param,
        inp.optimizer_bytes_per_param, inp.reduce_bytes_per_param, ranks=p, params=inp.params,
        memory_bandwidth_GBps=_as(inp.memory_bandwidth_GBps))
    # each micro-step's fetch before its forward: serial, outside the passes above (§1)
    compute = k * (micro + _as(inp.fetch_s)) + optimizer + _as(inp.per_step_s)
    bubble = _as(inp.bubble_micro_steps) * micro  # a pipelined replica's fill and drain

    total_bytes = _as(inp.params) * _as(inp.wire_bytes_per_param) * np.ones_like(p)
    total_bytes = np.where(p > 1, total_bytes, 0.0)
    straggler = straggler_s(inp, p, k, micro,
                            syncs_every_micro_step(strategy, framework, inp.grad_sync))
    if np.all(p <= 1):  # one device: nothing to exchange
        exposed = comm_total = comm_bytes = np.zeros_like(p)
    else:
        # every collective waits for the last device's tensors: the last device's forward and
        # backward, longer by the straggler wait (a slow device's f times, §3, §6), are the
        # windows the exchange hides behind
        stretch = straggler_stretch(straggler, k * micro)
        exposed, comm_total, comm_bytes = _communication(
            inp, g, k, forward * stretch, backward * stretch, total_bytes, strategy, framework,
            overlap, shard, replicas, reduce_bytes)
        exposed = with_contention(exposed, comm_total, inp.comm_contention)

    busy = compute + bubble + exposed + straggler
    samples_per_step = k * b
    stall = data_stall_s(samples_per_step, inp.loader_samples_per_s, busy)
    step = busy + stall

    global_batch = p * k * b
    # FSDP's no_sync holds whole gradients, in the reduce dtype where stated (FSDP2, §4)
    full_gradients = holds_full_gradients(strategy, framework, inp.grad_sync, k)
    memory_grad = np.where(full_gradients, unreduced_fsdp_grad_bytes_per_param(
        inp.grad_bytes_per_param, inp.reduce_bytes_per_param), held_grad)
    memory = memory_per_device_bytes(  # states sharded over the shard group
        strategy, _as(shard), inp.params, inp.param_bytes_per_param, memory_grad,
        inp.optimizer_bytes_per_param, inp.activation_bytes_per_sample, b, full_gradients,
        block_count(inp.blocks, inp.params), framework, overlap,
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
        fits=np.broadcast_to(
            memory <= usable_memory_bytes(inp.device_memory_bytes, inp.memory_margin), shape
        ).copy(),
        bubble_s=full(bubble),
    )


def evaluate_scaling(inp: StepInputs, baseline_micro_batch=None, with_baseline: bool = False):
    """Evaluate ``inp`` and the same job on one device; return (result, speedup, efficiency),
    and the one-device result last with ``with_baseline`` (whether it fits: ``predict``).

    The baseline is one typical device (no communication, no straggler, its own loader with the
    server's cores to itself: ``loader_alone_samples_per_s``) with ``baseline_micro_batch`` per
    micro-step: the same micro-batch under weak scaling, the whole global batch over the
    accumulation steps under strong scaling.
    """
    result = evaluate(inp)
    base_b = inp.micro_batch if baseline_micro_batch is None else baseline_micro_batch
    alone = _as(inp.loader_alone_samples_per_s)
    supply = np.where(np.isnan(alone), _as(inp.loader_samples_per_s), alone)
    base = evaluate(inp.replace(devices=1, devices_per_node=1, micro_batch=base_b, slow_factor=1.0,
                                loader_samples_per_s=supply))
    speedup = result.samples_per_s / base.samples_per_s
    efficiency = speedup / np.asarray(inp.devices, dtype=float)
    return (result, speedup, efficiency, base) if with_baseline else (result, speedup, efficiency)
