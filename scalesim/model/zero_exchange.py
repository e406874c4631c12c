"""The data-parallel / ZeRO exchange of one model replica, per strategy and framework.

One function for both prediction paths (docs/model.md §4): the data-parallel step
(``model/step.py``) calls it for the whole model over all devices, the layout step
(``model/layout_step.py``) for one stage's tensor shard over its dp x cp group. The caller gives
the two collectives on its group's link (``all_reduce(bytes)``, ``ring(bytes)`` for a
reduce-scatter or all-gather, seconds) and the compute they hide behind (one micro-batch's
forward and backward); the units, the volumes and the overlap are decided here.

- DDP (any framework): all-reduce in DDP buckets behind the last backward; 2 units sent.
- ZeRO-1, default framework = Megatron-Core's distributed optimizer: reduce-scatter in buckets of
  max(4e7, 1e6 n) parameters behind the last backward, all-gather of the updated parameters in
  the same buckets before their use in the next forward (--overlap-grad-reduce,
  --overlap-param-gather); 2 units, DDP's volume (Rajbhandari et al. 2019, §7), the
  reduce-scatter's unit at its main grads' bytes (fp32 by default since session 44,
  ``reduce_units``, docs/model.md §4).
- ZeRO-1, DeepSpeed: all-reduce in 5e8-element buckets behind the last backward, all-gather of
  the parameters after the optimizer step, exposed; 3 units.
- ZeRO-2, FSDP SHARD_GRAD_OP: per micro-batch, per block, an all-gather before its forward and a
  reduce-scatter behind its backward; 2k units.
- ZeRO-2, DeepSpeed: all-reduce of 5e8-element buckets in every backward, all-gather after the
  step; 2k + 1 units.
- ZeRO-3, FSDP FULL_SHARD: per micro-batch, per block, all-gathers before forward and backward,
  a reduce-scatter behind backward; 3k units. DeepSpeed: the same in its 5e7-element prefetch
  and 5e8-element reduce buckets.

Sharded gradients are reduced in every micro-batch by default (gradients stay sharded: FSDP2
without ``set_requires_gradient_sync(False)``, torchtitan, Composer, DeepSpeed stage 2/3); ZeRO-1
keeps full gradients and reduces once at the accumulation boundary (DeepSpeed
``allreduce_gradients``, Megatron-Core's ``finish_grad_sync`` on the last micro-batch).

FSDP under ``no_sync`` (``grad_sync`` ``ONCE_PER_STEP``: FSDP1's ``no_sync()``, FSDP2's
``set_requires_gradient_sync(False)``, Accelerate's ``accumulate``) holds full gradients through
the first k - 1 micro-batches and reduce-scatters once, in the last backward:

- ZeRO-2 (SHARD_GRAD_OP) also keeps its gathered parameters between micro-batches (FSDP1's
  ``_should_free_in_backward``): one all-gather and one reduce-scatter per step, 2 units;
- ZeRO-3 (FULL_SHARD) still gathers in every forward and backward: 2k + 1 units.
DeepSpeed has no such mode (stage 2/3 reduce in every backward): ``grad_sync`` is ignored there
and refused at the edges (``Scenario``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scalesim.model.collectives import ring_steps_volume
from scalesim.model.memory import DDP, ZERO1, ZERO2, ZERO3
from scalesim.model.overlap import (
    DDP_BUCKET_BYTES,
    DDP_FIRST_BUCKET_BYTES,
    Buckets,
    bucket_layout,
    bucket_times,
    prefetch_end,
    serial_comm_s,
    timeline_end,
)
from scalesim.model.select import select_first
from scalesim.model.sharding import (
    DEEPSPEED,
    DS_ALLGATHER_BUCKET_ELEMENTS,
    DS_PREFETCH_BUCKET_ELEMENTS,
    DS_REDUCE_BUCKET_ELEMENTS,
    FSDP,
    ONCE_PER_STEP,
    megatron_bucket_elements,
)


def reduces_once(framework, grad_sync):
    """True where sharded gradients are held full and reduced once per step: FSDP with
    ``grad_sync`` ONCE_PER_STEP (``no_sync``); DeepSpeed always reduces per micro-step."""
    return (np.asarray(grad_sync) == ONCE_PER_STEP) & (np.asarray(framework) == FSDP)


def syncs_every_micro_step(strategy, framework=FSDP, grad_sync=0):
    """True where devices wait for each other in every micro-batch, not once per step: ZeRO-2
    and ZeRO-3 reduce their sharded gradients in every backward (and ZeRO-3 gathers parameters
    in every forward and backward); a collective is a barrier. Under FSDP's ``no_sync``
    (``reduces_once``) ZeRO-2 communicates only in the first forward and the last backward, so
    it waits once per step like DDP; ZeRO-3 still gathers in every micro-batch."""
    strategy = np.asarray(strategy)
    return (strategy >= ZERO3) | ((strategy == ZERO2) & ~reduces_once(framework, grad_sync))


def holds_full_gradients(strategy, framework, grad_sync, accumulation):
    """True where a ZeRO-2/3 rank holds the whole model's gradients (s_G = 1, not 1/n): under
    FSDP's ``no_sync`` with k > 1 the first k - 1 micro-batches accumulate unsharded gradients
    (FSDP1 ``no_sync`` docstring: "FSDP will accumulate the full model gradients (instead of
    gradient shards) until the eventual sync"). k = 1 reduces in its only backward."""
    return ((np.asarray(strategy) >= ZERO2) & reduces_once(framework, grad_sync)
            & (np.asarray(accumulation) > 1))


def framework_label(strategy: str, framework: str, grad_sync: str = "every-micro-step",
                    hybrid: bool = False, pipeline: bool = False, split: bool = False) -> str:
    """How ``strategy`` ("ddp", "zero1".."zero3") runs under ``framework`` ("fsdp" or
    "deepspeed", ``Scenario.zero_framework``) and ``grad_sync`` (``Scenario.grad_sync``), in
    words; ``hybrid``: under a shard group (HSDP, docs/model.md §16: FSDP's hybrid strategies,
    Megatron-Core's distributed optimizer instances); ``pipeline``: with pp > 1, where FSDP's
    ZeRO-2/3 runs as PyTorch's pipelining runs FSDP2 (torchtitan: ``reshard_after_forward``
    False, gradients reduced once a step after the last micro-batch; §16) whatever the stage
    and the gradient sync asked; ``split``: with tp or pp > 1, where DDP is Megatron-Core's
    (its non-distributed optimizer: fp32 main params and grads, §4)."""
    if strategy == "ddp":
        return "Megatron-Core DDP" if split or pipeline else "PyTorch DDP"
    if framework == "deepspeed":
        return f"DeepSpeed stage {strategy[-1]}"
    if strategy == "zero1":
        return "Megatron-Core distributed optimizer" + (
            " with --num-distributed-optimizer-instances" if hybrid else "")
    if pipeline:
        return (f"FSDP2{' HSDP' if hybrid else ''} reshard_after_forward=False, gradients "
                "reduced once a step (PyTorch pipelining)")
    name = ({"zero2": "FSDP _HYBRID_SHARD_ZERO2", "zero3": "FSDP HYBRID_SHARD"} if hybrid else
            {"zero2": "FSDP SHARD_GRAD_OP", "zero3": "FSDP FULL_SHARD"})[strategy]
    return name + (" under no_sync" if grad_sync == "once-per-step" else "")


def sent_units(strategy, framework, accumulation, grad_sync=0):
    """Bytes each device sends per step in units of ``(n - 1) / n * Psi * w`` (DDP: 2):
    Megatron-Core's ZeRO-1 2, DeepSpeed's ZeRO-1 3, FSDP ZeRO-2 2k (under ``no_sync`` 2),
    DeepSpeed ZeRO-2 2k + 1, ZeRO-3 3k (FSDP under ``no_sync`` 2k + 1) (the list above)."""
    strategy = np.asarray(strategy)
    k = np.asarray(accumulation, dtype=float)
    deepspeed = np.asarray(framework) == DEEPSPEED
    once = reduces_once(framework, grad_sync)
    return select_first([strategy == DDP, strategy == ZERO1, strategy == ZERO2],
                     [2.0, np.where(deepspeed, 3.0, 2.0),
                      np.where(deepspeed, 2.0 * k + 1.0, np.where(once, 2.0, 2.0 * k))],
                     np.where(once, 2.0 * k + 1.0, 3.0 * k))


def reduce_scatters(strategy, framework, accumulation, grad_sync=0):
    """Passes of gradient reduce-scatters over the whole model per step (each followed, under
    hybrid sharding, by the all-reduce of its shard across the replicas, ``exchange``): none for
    DDP and DeepSpeed's ZeRO-1/2 (all-reduces), one for Megatron-Core's ZeRO-1 and FSDP under
    ``no_sync``, k for ZeRO-2/3 reducing in every backward (the list above)."""
    strategy = np.asarray(strategy)
    k = np.asarray(accumulation, dtype=float)
    deepspeed = np.asarray(framework) == DEEPSPEED
    per_step = np.where(reduces_once(framework, grad_sync), 1.0, k)
    return select_first([strategy == DDP, strategy == ZERO1, strategy == ZERO2],
                     [0.0, np.where(deepspeed, 0.0, 1.0), np.where(deepspeed, 0.0, per_step)],
                     np.where(deepspeed, k, per_step))


def reduce_units(strategy, framework, accumulation, grad_sync=0):
    """Of ``sent_units``, those of the gradients' reductions (the rest gather parameters): DDP
    2 (all-reduce), Megatron-Core's ZeRO-1 1 (reduce-scatter), DeepSpeed's ZeRO-1 2 (all-reduce),
    FSDP ZeRO-2 and ZeRO-3 k (under ``no_sync`` 1), DeepSpeed ZeRO-2 2k (all-reduces), DeepSpeed
    ZeRO-3 k (the list above)."""
    strategy = np.asarray(strategy)
    k = np.asarray(accumulation, dtype=float)
    deepspeed = np.asarray(framework) == DEEPSPEED
    per_step = np.where(reduces_once(framework, grad_sync), 1.0, k)
    return select_first([strategy == DDP, strategy == ZERO1, strategy == ZERO2],
                     [2.0, np.where(deepspeed, 2.0, 1.0), np.where(deepspeed, 2.0 * k, per_step)],
                     np.where(deepspeed, k, per_step))


def sent_units_at(strategy, framework, accumulation, grad_sync=0, reduce_ratio=1.0):
    """``sent_units`` with the reductions' (``reduce_units``) at ``reduce_ratio``
    (``reduce_wire_ratio``: bytes of a reduced gradient over a gathered parameter's;
    Megatron-Core's fp32 main grads: 2, so its ZeRO-1 sends 1 + 2 = 3 where DDP sends 2).
    Arrays broadcast."""
    ratio = np.asarray(reduce_ratio, dtype=float)
    sent, reduced = (sent_units(strategy, framework, accumulation, grad_sync),
                     reduce_units(strategy, framework, accumulation, grad_sync))
    return sent - reduced + ratio * reduced


def sent_per_byte(strategy, framework, accumulation, grad_sync, shard, replicas,
                  reduce_ratio=1.0):
    """Bytes each device sends per step per byte of the replica's gathered parameters (Psi w):
    the ``sent_units`` over the shard group of ``shard`` ranks s, ``(s - 1) / s`` each, the
    reductions' (``reduce_units``) at ``reduce_ratio`` (``reduce_wire_ratio``: bytes of a
    reduced gradient over a gathered parameter's; Megatron-Core's fp32 main grads: 2), and under
    hybrid sharding each gradient reduce-scatter's (``reduce_scatters``) all-reduce of its
    ``1 / s`` shard across the ``replicas`` r, ``2 (r - 1) / r`` of it (none where r = 1): the
    ring volumes of ``collectives.ring_steps_volume`` (docs/model.md §4, §16). Arrays broadcast."""
    s = np.asarray(shard, dtype=float)
    ratio = np.asarray(reduce_ratio, dtype=float)
    return (sent_units_at(strategy, framework, accumulation, grad_sync, ratio)
            * ring_steps_volume(1.0, s)[1]
            + ratio * reduce_scatters(strategy, framework, accumulation, grad_sync)
            * ring_steps_volume(2.0, replicas)[1] / s)


def reduce_wire_ratio(wire_bytes_per_param, reduce_bytes_per_param=None):
    """Bytes of a gradient reduction over those of a parameter gather, per parameter: 1 where
    ``reduce_bytes_per_param`` is None or NaN (gradients reduced in the gathered dtype)."""
    wire = np.asarray(wire_bytes_per_param, dtype=float)
    if reduce_bytes_per_param is None:
        return np.ones_like(wire)
    reduce = np.asarray(reduce_bytes_per_param, dtype=float)
    return np.where(np.isnan(reduce), 1.0, reduce / np.where(wire > 0, wire, 1.0))


class _Phase:
    """Collectives of one kind over one unit layout: serial time and its overlapped exposure."""

    def __init__(self, units: Buckets, comm_s: Callable):
        self.units = units
        self.times = bucket_times(units, comm_s)
        self.serial = serial_comm_s(units, self.times)

    def after_ready(self, duration_s, overlap):
        """Exposed time, s, when unit i is ready at its share of ``duration_s`` (gradients in
        backward) and the collectives run one after another (``overlap.timeline_end``)."""
        return np.where(overlap, timeline_end(duration_s, self.units, self.times) - duration_s,
                        self.serial)

    def before_use(self, duration_s, overlap):
        """Exposed time, s, when the compute of unit i (its share of ``duration_s``) needs its
        collective first (parameter gathers with prefetch, ``overlap.prefetch_end``)."""
        return np.where(overlap, prefetch_end(duration_s, self.units, self.times) - duration_s,
                        self.serial)

    def first_unit(self):
        c_first, c_mid, c_last = self.times
        return np.where(self.units.first > 0, c_first, np.where(self.units.n_mid >= 1, c_mid,
                                                                   c_last))

    def last_unit(self):
        c_first, c_mid, c_last = self.times
        return np.where(self.units.last > 0, c_last, np.where(self.units.n_mid >= 1, c_mid,
                                                                 c_first))


def _gather_and_reduce_in_backward(gather: _Phase, reduce: _Phase, backward, overlap,
                                   prefetch_post=False):
    """Exposed time of a backward pass that gathers each unit's parameters before its compute
    and reduce-scatters its gradient after it, on one communication channel (ZeRO-3).

    Prefetch "pre" (PyTorch FSDP's default, FSDP2, Megatron): the max-plus timeline of both is
    bounded below by each alone, by the channel carrying all of both, and by the first gather
    plus the last reduce-scatter around the whole backward; the largest of those bounds is used
    (exact when one of them dominates, within one unit's compute of the timeline otherwise).
    Prefetch "post" (``BackwardPrefetch.BACKWARD_POST``, Composer's default): each gather is
    issued after the previous unit's gradient computation, so the whole gather pass waits and
    only the reduce-scatters hide.
    """
    both = gather.serial + reduce.serial
    bound = np.maximum(gather.before_use(backward, True), reduce.after_ready(backward, True))
    bound = np.maximum(bound, np.maximum(both - backward, gather.first_unit() + reduce.last_unit()))
    post = gather.serial + reduce.after_ready(backward, True)
    hidden = np.where(np.asarray(prefetch_post, dtype=bool), post, np.maximum(bound, 0.0))
    return np.where(overlap, hidden, both)


def _reduce_ring(ring: Callable, replica_all_reduce: Callable | None) -> Callable:
    """Seconds of one gradient reduce-scatter of ``size`` bytes on the ring, then (hybrid
    sharding) the all-reduce of its shard across the replicas."""
    if replica_all_reduce is None:
        return ring
    return lambda size: ring(size) + replica_all_reduce(size)


def _unit_reduces(grad_bytes, units, reduce_ring: Callable) -> _Phase:
    """FSDP's gradient reduce-scatters: one per unit (``units``, at least 1) of ``grad_bytes /
    units`` bytes each."""
    units = np.maximum(units, 1.0)
    return _Phase(bucket_layout(grad_bytes, grad_bytes / units, 0.0), reduce_ring)


def unit_reduce_scatter_s(total_bytes, units, ring: Callable, wire_bytes_per_param,
                          reduce_bytes_per_param=None,
                          replica_all_reduce: Callable | None = None):
    """Seconds of one pass of FSDP's per-unit gradient reduce-scatters run one after another
    (nothing to hide behind): ``total_bytes`` of gathered parameters at
    ``wire_bytes_per_param`` (reduced at ``reduce_bytes_per_param``, ``reduce_wire_ratio``) in
    ``units`` units, each followed by hybrid sharding's ``replica_all_reduce`` (as in
    ``exchange``). 0 for 0 bytes. Arrays broadcast."""
    grad_bytes = total_bytes * reduce_wire_ratio(wire_bytes_per_param, reduce_bytes_per_param)
    return _unit_reduces(grad_bytes, units, _reduce_ring(ring, replica_all_reduce)).serial


def exchange(strategy, framework, total_bytes, group_size, blocks, accumulation, forward_s,
             backward_s, overlap, all_reduce: Callable, ring: Callable, wire_bytes_per_param,
             bucket_bytes=DDP_BUCKET_BYTES, first_bucket_bytes=DDP_FIRST_BUCKET_BYTES,
             backward_prefetch_post=False, grad_sync=0, reduce_bytes_per_param=None,
             replica_all_reduce: Callable | None = None, reduce_exposed_s=None):
    """(exposed_s, total_s, sent_units) of one step's data-parallel / ZeRO exchange.

    ``total_bytes``: gradient bytes of the replica's shard (Psi w); ``group_size``: ranks that
    exchange it (n); ``blocks``: FSDP units (one per transformer block); ``accumulation``:
    micro-batches per step (k); ``forward_s``, ``backward_s``: one micro-batch's forward and
    backward, what the collectives hide behind; ``overlap``: hide them at all;
    ``all_reduce(bytes)``, ``ring(bytes)``: seconds of one all-reduce and of one reduce-scatter
    or all-gather on the group's link; ``bucket_bytes``, ``first_bucket_bytes``: DDP's buckets;
    ``backward_prefetch_post``: FSDP's BACKWARD_POST; ``grad_sync``: ``sharding.GRAD_SYNCS``
    code (ONCE_PER_STEP: FSDP's ``no_sync``, ``reduces_once``); ``reduce_bytes_per_param``: bytes
    per parameter of the gradient reductions where they differ from the gathered parameters'
    ``wire_bytes_per_param`` (FSDP ``MixedPrecision(param_dtype=bf16, reduce_dtype=float32)``:
    2 gathered, 4 reduced), None or NaN: the same. ``replica_all_reduce(bytes)``: seconds of
    hybrid sharding's all-reduce, across the replicas of the shard group, of the shard that a
    reduce-scatter of ``bytes`` leaves (``bytes / n``; FSDP HYBRID_SHARD, docs/model.md §16,
    "Hybrid sharding"): it follows each ZeRO gradient reduce-scatter of the bucket or unit on
    the same channel;
    None: full sharding (nothing after the reduce-scatter). ``reduce_exposed_s``: seconds of
    FSDP's once-a-step (``no_sync``) ZeRO-2 reduce-scatter left exposed where the caller knows
    its window (FSDP under a pipeline, ``model/piped_reduce.py``), in place of its timeline
    behind one micro-batch's backward; None or NaN: that timeline. ``exposed_s`` is before the contention
    share of the hidden time (``step.with_contention``); ``sent_units`` times
    ``(n - 1) / n * total_bytes`` is what each device sends (at ``wire_bytes_per_param``).
    Arrays broadcast.
    """
    strategy = np.asarray(strategy)
    k = np.asarray(accumulation, dtype=float)
    wire = np.asarray(wire_bytes_per_param, dtype=float)
    reduce_ratio = reduce_wire_ratio(wire, reduce_bytes_per_param)
    grad_bytes = total_bytes * reduce_ratio  # the gradients' reductions
    overlap = np.asarray(overlap, dtype=bool)
    deepspeed = np.asarray(framework) == DEEPSPEED
    plan_framework = np.where((strategy > DDP) & deepspeed, DEEPSPEED, FSDP)  # DDP: PyTorch's
    codes = np.unique(plan_framework * 4 + strategy)  # the (framework, strategy) pairs present
    plans = {(int(c) // 4, int(c) % 4) for c in codes}
    exposed, total = {}, {}
    reduce_ring = _reduce_ring(ring, replica_all_reduce)  # HSDP: then across the replicas

    def ds_units(elements):
        return bucket_layout(total_bytes, elements * wire, 0.0)

    if (FSDP, DDP) in plans:  # bucketed all-reduce during the last backward
        grads = _Phase(bucket_layout(grad_bytes, bucket_bytes, first_bucket_bytes), all_reduce)
        exposed[FSDP, DDP], total[FSDP, DDP] = grads.after_ready(backward_s, overlap), grads.serial
    if (FSDP, ZERO1) in plans:  # Megatron-Core distributed optimizer
        elements = megatron_bucket_elements(group_size)
        grads = _Phase(bucket_layout(grad_bytes, elements * wire * reduce_ratio, 0.0),
                       reduce_ring)
        params = _Phase(bucket_layout(total_bytes, elements * wire, 0.0), ring)
        exposed[FSDP, ZERO1] = (grads.after_ready(backward_s, overlap)
                                + params.before_use(forward_s, overlap))
        total[FSDP, ZERO1] = grads.serial + params.serial
    if plans & {(DEEPSPEED, ZERO1), (DEEPSPEED, ZERO2)}:
        grads = _Phase(bucket_layout(grad_bytes, DS_REDUCE_BUCKET_ELEMENTS * wire * reduce_ratio,
                                     0.0), all_reduce)
        params = _Phase(ds_units(DS_ALLGATHER_BUCKET_ELEMENTS), ring)
        once = grads.after_ready(backward_s, overlap)
        exposed[DEEPSPEED, ZERO1] = once + params.serial  # gathered after the optimizer step
        total[DEEPSPEED, ZERO1] = grads.serial + params.serial
        exposed[DEEPSPEED, ZERO2] = k * once + params.serial  # reduced in every backward
        total[DEEPSPEED, ZERO2] = k * grads.serial + params.serial
    if plans & {(FSDP, ZERO2), (FSDP, ZERO3)}:
        units = np.maximum(blocks, 1.0)
        gather = _Phase(bucket_layout(total_bytes, total_bytes / units, 0.0), ring)
        reduce = _unit_reduces(grad_bytes, units, reduce_ring)
        fwd = gather.before_use(forward_s, overlap)
        # under no_sync the first k - 1 micro-batches reduce nothing (k_reduce = 1) and
        # SHARD_GRAD_OP keeps its gathered parameters between them (k_gather2 = 1)
        once = reduces_once(framework, grad_sync)
        k_reduce = np.where(once, 1.0, k)
        reduced = reduce.after_ready(backward_s, overlap)
        if reduce_exposed_s is not None:  # a window the caller knows (a pipeline's stages)
            given = np.asarray(reduce_exposed_s, dtype=float)
            reduced = np.where(once & ~np.isnan(given) & overlap, given, reduced)
        # SHARD_GRAD_OP: gathered in forward, kept through backward, freed after it.
        exposed[FSDP, ZERO2] = k_reduce * (fwd + reduced)
        total[FSDP, ZERO2] = k_reduce * (gather.serial + reduce.serial)
        # FULL_SHARD: gathered in forward and again in backward; under no_sync the backward of
        # the first k - 1 micro-batches gathers only.
        last_backward = _gather_and_reduce_in_backward(gather, reduce, backward_s, overlap,
                                                       backward_prefetch_post)
        gather_only = np.where(overlap & ~np.asarray(backward_prefetch_post, dtype=bool),
                               gather.before_use(backward_s, overlap), gather.serial)
        exposed[FSDP, ZERO3] = (k * fwd + k_reduce * last_backward
                                + (k - k_reduce) * gather_only)
        total[FSDP, ZERO3] = 2.0 * k * gather.serial + k_reduce * reduce.serial
    if (DEEPSPEED, ZERO3) in plans:  # prefetched gathers; reduce-scatter in every backward
        gather = _Phase(ds_units(DS_PREFETCH_BUCKET_ELEMENTS), ring)
        reduce = _Phase(bucket_layout(grad_bytes, DS_REDUCE_BUCKET_ELEMENTS * wire * reduce_ratio,
                                      0.0), reduce_ring)
        micro = (gather.before_use(forward_s, overlap)
                 + _gather_and_reduce_in_backward(gather, reduce, backward_s, overlap,
                                                  backward_prefetch_post))
        exposed[DEEPSPEED, ZERO3] = k * micro
        total[DEEPSPEED, ZERO3] = k * (2.0 * gather.serial + reduce.serial)
    keys = sorted(plans)

    def select(values):
        if not keys:  # no layouts at all (every combination of a sweep dropped): empty arrays
            return np.zeros(np.broadcast_shapes(strategy.shape, k.shape, np.shape(backward_s)))
        if len(keys) == 1:
            return values[keys[0]]
        return select_first([(plan_framework == f) & (strategy == s) for f, s in keys],
                         [values[key] for key in keys])

    return select(exposed), select(total), sent_units(strategy, framework, k, grad_sync)
