"""The collectives phase's model-parallel messages: what tensor and pipeline parallelism send for
the ``--block-*`` transformer, timed inside each server, beside what the link model predicts.

- Tensor parallelism (docs/model.md §14): per layer and micro-batch, all-reduces of the
  b x s x h activation (``S`` bytes at the run's precision), or with sequence parallelism a
  reduce-scatter and an all-gather of it. Timed for every degree t of ``--block-tp`` that splits
  a server's ranks evenly (2 <= t <= ranks per server), on groups of t consecutive ranks, all
  groups at once (as tensor-parallel groups run in training).
- Pipeline parallelism (§15): send/recv of one micro-batch's activations between neighbouring
  stages, ``S / t`` bytes with Megatron's scatter/gather of the tp-split activations, for every
  t (and ``S``); each even rank and the next exchange them (both directions at once, as 1F1B's
  steady state), all pairs at once.

Each message uses the collectives phase's loop (``collective_phase.time_call``: warm-up, a sizing call,
three equal timed loops sharing ``--coll-time-s``, the slowest rank's mean per call, the
median loop). ``model_s`` is what the link model predicts from the intra-server level the sweep
just fitted (ring formulas of §2; a pipeline send is ``latency + S / busbw`` as §15 charges it).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from scalesim.calibration.block_fit import Block
from scalesim.calibration.collective_phase import ROUNDS, time_call, time_collective
from scalesim.calibration.dist import DistContext

from scalesim.model import collectives as coll
from scalesim.model.pipeline_schedule import send_s
from scalesim.schemas import LinkLevel, MessagePoint

TP_OPS = ("all_reduce", "reduce_scatter", "all_gather")


def _groups_of(ctx: DistContext, size: int):
    """This rank's group of ``size`` consecutive ranks of its server (every rank creates every
    group, in the same order, as ``new_group`` requires)."""
    mine = None
    for node in sorted(set(ctx.node_of)):
        members = [r for r in range(ctx.world) if ctx.node_of[r] == node]
        for i in range(0, len(members) - size + 1, size):
            ranks = members[i:i + size]
            group = dist.new_group(ranks)
            if ctx.rank in ranks:
                mine = (group, ranks)
    return mine


def time_send_recv(group, ranks: list[int], rank: int, size_bytes: int, device,
                   target_s: float, rounds: int = ROUNDS) -> float:
    """Seconds of one paired exchange of ``size_bytes`` (float32 buffers) between ``ranks[0]``
    and ``ranks[1]``: each sends the buffer to the other while it receives one from it
    (``batch_isend_irecv``), as a 1F1B stage sends an activation forward while it receives a
    gradient back (Megatron's ``send_forward_recv_backward``) and as nccl-tests' ``sendrecv_perf``
    times a pair. Looped like ``time_collective``: the slowest of the pair's mean per call,
    median loop."""
    numel = max(size_bytes // 4, 1)
    out = torch.zeros(numel, dtype=torch.float32, device=device)
    into = torch.empty(numel, dtype=torch.float32, device=device)
    peer = ranks[1] if rank == ranks[0] else ranks[0]

    def call():
        for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer, group),
                                               dist.P2POp(dist.irecv, into, peer, group)]):
            request.wait()

    return time_call(call, group, device, target_s, rounds, sync=True)


def predicted_s(op: str, size_bytes: float, ranks: int, link: LinkLevel) -> float:
    """What the link model charges for this message on ``link`` (ring formulas; a pipeline send
    ``pipeline_schedule.send_s``: latency + S / busbw, as a profile without measured sends
    charges one)."""
    if op == "all_reduce":
        return float(coll.ring_allreduce_s(size_bytes, ranks, link.latency_s, link.busbw_GBps))
    if op in ("reduce_scatter", "all_gather"):
        return float(coll.ring_reduce_scatter_s(size_bytes, ranks, link.latency_s,
                                                link.busbw_GBps))
    return float(send_s(size_bytes, link.latency_s, link.busbw_GBps))


def run(ctx: DistContext, block: Block, degrees: list[int], element_bytes: float,
        intra: LinkLevel, args) -> list[MessagePoint]:
    """Every tp and pp message of ``block`` on this run's servers (none with one rank each)."""
    if ctx.local_world < 2:
        return []
    full = block.activation_bytes(element_bytes)
    points: list[MessagePoint] = []
    tp_sizes = [t for t in degrees if 2 <= t <= ctx.local_world and ctx.local_world % t == 0]
    pair = None
    for t in tp_sizes:
        group, _ranks = _groups_of(ctx, t)
        if t == 2:
            pair = (group, _ranks)
        size = int(full)
        for op in TP_OPS:
            numel = max(size // 4 // t, 1) * t
            time_s = time_collective(op, group, t, numel * 4, ctx.device, args.coll_time_s)
            points.append(MessagePoint(op=op, purpose="tp", ranks=t, size_bytes=numel * 4,
                                       time_s=time_s,
                                       model_s=predicted_s(op, numel * 4, t, intra)))
    if 2 not in tp_sizes:
        pair = _groups_of(ctx, 2)  # None on the odd rank out of a server
    for size in sorted({max(int(full / t) // 4 * 4, 4) for t in {1, *degrees}}):
        if pair is None:
            break
        group, ranks = pair
        time_s = time_send_recv(group, ranks, ctx.rank, size, ctx.device, args.coll_time_s)
        points.append(MessagePoint(op="send_recv", purpose="pp", ranks=2, size_bytes=size,
                                   time_s=time_s, model_s=predicted_s("send_recv", size, 2, intra)))
    # every server measured the same sizes; keep the slowest of each (like the sweep)
    from scalesim.calibration.dist import gather_object

    slowest: dict[tuple, MessagePoint] = {}
    for theirs in gather_object(ctx, points):
        for p in theirs:
            key = (p.op, p.ranks, p.size_bytes)
            if key not in slowest or p.time_s > slowest[key].time_s:
                slowest[key] = p
    return sorted(slowest.values(), key=lambda p: (p.purpose != "tp", p.op, p.ranks,
                                                   p.size_bytes))
