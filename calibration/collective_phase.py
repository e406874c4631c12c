"""Collectives phase: nccl-tests style timings per link level, fitted to alpha and beta.

Inside a server: the ranks of one node (all nodes at once, each in its own group). Across
servers: *every rank of every server* in one collective, as nccl-tests runs a multi-node test
with all GPUs, because the model's inter-server busbw is what a whole server sustains over all
its NICs (one rank per node would use only the NICs near its device). The inter level is then
derived from that all-ranks ring given the intra level (``derive_inter_level``). Per op and
message size:
one warm-up call, one call to estimate the time, then enough calls for ``--coll-time-s``
(same count on every rank); the time of one call is the slowest rank's mean. Rows carry
nccl-tests' ``algbw = S/t`` and ``busbw`` (all-reduce ``algbw*2(n-1)/n``, reduce-scatter and
all-gather ``algbw*(n-1)/n``), with ``S`` the full buffer (all-gather output, reduce-scatter
input). Each level is fitted with ``scalesim.model.collectives.fit_alpha_beta``; its all-reduce
fit describes the link, since that is what DDP runs. With ``--block-hidden`` the messages that
tensor and pipeline parallelism send for that block follow (``parallel_messages``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.distributed as dist
from scalesim.calibration import size_extension
from scalesim.calibration.block_fit import PRECISION_BYTES, block_from_args
from scalesim.calibration.dist import AgreedError, DistContext, gather_object
from scalesim.calibration.link_fit import (  # noqa: F401 - re-exported: the fit lives there
    INTRA_LIMITED_SHARE,
    LARGE_BYTES,
    TOP_SHARE,
    all_ranks_words,
    busbw_with_latency_GBps,
    derive_inter_level,
    fit_level,
    level_op,
)
from scalesim.calibration.options import parse_inter_link  # noqa: F401 - used below, tested here
from scalesim.calibration.results import CollectiveResult
from scalesim.calibration.timing import Clock

from scalesim import presets
from scalesim.bounds import clip
from scalesim.errors import ScalesimError
from scalesim.figures import MIB_BYTES, bytes_text, latency_us, link_GBps
from scalesim.schemas import CollectivePoint, LinkCalibration, LinkLevel
from scalesim.sources.nccl_tests import point_from_time

ELEMENT_BYTES = 4  # float32 buffers
DEFAULT_INTER = "ethernet:1x100"
ROUNDS = 3  # timed loops per message size; the median one is kept


def message_sizes(min_kib: float, max_mib: float, factor: int) -> list[int]:
    """Sizes in bytes from ``min_kib`` KiB by ``factor`` up to and including ``max_mib`` MiB."""
    lo, hi = int(min_kib * 1024), int(max_mib * MIB_BYTES)
    if lo < ELEMENT_BYTES:
        raise ScalesimError(f"--min-size-kib {min_kib:g} is below one {ELEMENT_BYTES}-byte "
                            "element; use 0.004 or more (1 KiB is the usual start)")
    if lo > hi:
        raise ScalesimError(f"--min-size-kib {min_kib:g} is above --max-size-mib {max_mib:g}")
    factor = max(factor, 2)
    sizes, s = [], lo
    while s < hi:
        sizes.append(s)
        s *= factor
    sizes.append(hi)
    return sizes


def _op_call(op: str, group, ranks: int, numel: int, device):
    buf = torch.zeros(numel, dtype=torch.float32, device=device)
    if op == "all_reduce":
        return lambda: dist.all_reduce(buf, group=group)
    shard = torch.zeros(numel // ranks, dtype=torch.float32, device=device)
    if op == "reduce_scatter":
        fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: fn(shard, buf, group=group)
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    return lambda: fn(buf, shard, group=group)


def _group_max(value: float, group, device) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t.item())


def time_call(call, group, device, target_s: float, rounds: int = ROUNDS,
              sync: bool = False) -> float:
    """Seconds of one ``call()`` across ``group``: a warm-up, a sizing call, then ``rounds``
    timed loops of equal length sharing ``target_s``; a round's time is the slowest rank's mean
    per call, and the result is the median round (robust to a busy moment). ``sync`` waits for
    the device before each end mark (point-to-point calls, whose ranks run different code)."""
    clock = Clock(device)

    def end():
        if sync:
            clock.sync()
        return clock.mark()

    call()
    clock.sync()
    dist.barrier(group=group)
    start = clock.mark()
    call()
    estimate = _group_max(clock.seconds(start, end()), group, device)
    iters = int(min(max(math.ceil(target_s / rounds / max(estimate, 1e-7)), 2), 1000))
    per_round = []
    for _ in range(rounds):
        dist.barrier(group=group)
        start = clock.mark()
        for _ in range(iters):
            call()
        per_round.append(_group_max(clock.seconds(start, end()) / iters, group, device))
    return float(np.median(per_round))


def time_collective(op: str, group, ranks: int, size_bytes: int, device, target_s: float,
                    rounds: int = ROUNDS) -> float:
    """Seconds of one ``op`` on ``size_bytes``, timed by ``time_call``."""
    numel = max(size_bytes // ELEMENT_BYTES // ranks, 1) * ranks
    return time_call(_op_call(op, group, ranks, numel, device), group, device, target_s, rounds)


def sweep(ctx: DistContext, group, ranks: int, args, progress, ops=None,
          sizes=None) -> list[CollectivePoint]:
    """``ops`` (default ``--ops``) over ``sizes`` (default the flags' sweep) on ``group``
    (called by its members only)."""
    points = []
    for op in ops or args.ops:
        for size in sizes or message_sizes(args.min_size_kib, args.max_size_mib, args.size_factor):
            numel = max(size // ELEMENT_BYTES // ranks, 1) * ranks
            nbytes = numel * ELEMENT_BYTES
            t = time_collective(op, group, ranks, nbytes, ctx.device, args.coll_time_s)
            points.append(point_from_time(op, nbytes, ranks, t))
            progress.update(1)
    return points


def measure_level(ctx: DistContext, level: str, group, ranks: int, args,
                  progress) -> tuple[list[CollectivePoint], str | None]:
    """The slowest group's points of one level (every rank calls it; ``group`` None on ranks
    outside the level), with sizes beyond ``--max-size-mib`` where its times did not grow
    with size (``size_extension.decide``, asked again after each new size; every rank gets the
    same points, so every rank decides alike), and a note saying so (None when not extended).
    A level no bandwidth fits even then is an ``AgreedError`` naming it."""
    from scalesim.calibration.runner import device_words

    points = sweep(ctx, group, ranks, args, progress) if group is not None else []
    slowest = _slowest(gather_object(ctx, points))
    swept_to = max((p.size_bytes for p in slowest), default=0)
    budget_s = size_extension.extension_budget_s(len(slowest), len({p.op for p in slowest}),
                                                 args.coll_time_s)
    while slowest:
        decision = size_extension.decide(device_words(ctx).link(level), slowest,
                                         args.coll_time_s, ROUNDS, budget_s)
        if decision.refusal:
            raise AgreedError(decision.refusal)
        if decision.extend_to is None:
            break
        budget_s -= decision.cost_s
        progress.total += len(decision.ops)
        if group is not None:
            points += sweep(ctx, group, ranks, args, progress, decision.ops, [decision.extend_to])
        elif ctx.is_main:
            progress.update(len(decision.ops))
        slowest = _slowest(gather_object(ctx, points))
    extended = max((p.size_bytes for p in slowest), default=0)
    if extended <= swept_to:
        return slowest, None
    ops = sorted({p.op for p in slowest if p.size_bytes > swept_to})
    return slowest, (f"{', '.join(ops)} timed up to {bytes_text(extended)}: up to "
                     f"--max-size-mib ({bytes_text(swept_to)}) the times did not grow "
                     "enough with size to fit a bandwidth (size_extension.decide)")


def _slowest(all_points: list[list[CollectivePoint]]) -> list[CollectivePoint]:
    """Per (op, size): the slowest of the groups that measured the same level."""
    best: dict[tuple, CollectivePoint] = {}
    for points in all_points:
        for p in points:
            key = (p.op, p.size_bytes)
            if key not in best or p.time_s > best[key].time_s:
                best[key] = p
    return sorted(best.values(), key=lambda p: (p.op, p.size_bytes))


def link_kind(ctx: DistContext, level: str) -> str:
    """What is honestly known about the link the measurement went over."""
    if level == "inter_node":
        return f"{ctx.backend}-network"
    if not ctx.on_gpu:
        return "gloo-loopback"
    n = min(ctx.local_world, torch.cuda.device_count())
    if n < 2:
        return "cuda (one GPU visible per process; link type not detected)"
    peer = all(torch.cuda.can_device_access_peer(i, j) for i in range(n) for j in range(n) if i != j)
    return "cuda-p2p" if peer else "cuda-via-host"


def idle_devices(ctx: DistContext) -> int:
    """GPUs of this server that no rank of the run uses (0 on CPU)."""
    if not ctx.on_gpu:
        return 0
    return max(torch.cuda.device_count() - ctx.local_world, 0)


def idle_gpus_words(ranks_per_node: int, idle: int) -> str:
    """What an all-ranks ring over ``ranks_per_node`` ranks of each server measured where
    ``idle`` more GPUs of it ran none: the busbw of the NICs near the ranks' GPUs, the
    profile's servers of ``ranks_per_node`` (``Hardware.devices_per_node``). Not scaled to the
    whole server by the per-NIC rule (docs/model.md §2): the run records neither the server's
    NIC count nor which NICs NCCL used."""
    return (f"; {idle} more GPUs of each server ran no rank: this is what {ranks_per_node} GPUs "
            f"a server reach over the NICs near them (the profile's servers are of "
            f"{ranks_per_node}); the NICs near the idle ones are not measured, and the run "
            "records neither the server's NIC count nor which NICs NCCL used, so no whole "
            "server's figure is derived from it: start one process per GPU (--nproc-per-node) "
            "to measure it")


def measured_level(ctx, level: str, points, fits, intra_fits: dict | None = None,
                   extended: str | None = None) -> tuple[LinkLevel, LinkCalibration]:
    op = level_op(fits)
    fit = fits[op]
    sizes = [p.size_bytes for p in points if p.op == op]
    span = f"{min(sizes) / 1024:g} KiB-{max(sizes) / MIB_BYTES:g} MiB"
    large = (f"beta from messages >= {fit['large_from_bytes'] / MIB_BYTES:g} MiB "
             f"(all sizes: {link_GBps(fit['busbw_all_sizes_GBps'])})"
             if fit["large_from_bytes"] else "beta from all sizes")
    algorithm = f"{ctx.backend} {ctx.coll_algorithm}".strip()
    source = (f"measured by scalesim calibrate: {op} on {points[0].ranks} ranks "
              f"({algorithm}), {span}; alpha-beta fit (fit_alpha_beta), {large}; "
              f"rel. RMSE {fit['rel_rmse']:.1%}")
    if extended:
        source += f"; {extended}"
    latency, busbw, lower_bound, method = fit["latency_s"], fit["busbw_GBps"], False, None
    per_node = None
    if level == "inter_node":
        per_node = points[0].ranks // max(ctx.nodes, 1)
        intra_fit = (intra_fits or {}).get(op)
        latency, busbw, lower_bound, method = derive_inter_level(fit, intra_fit, per_node,
                                                                 ctx.nodes)
        if method == "all_ranks":
            source += all_ranks_words(per_node, ctx.nodes, latency, fit["latency_s"], intra_fit,
                                      lower_bound, whole=idle_devices(ctx) == 0)
            if idle_devices(ctx) > 0:
                source += idle_gpus_words(per_node, idle_devices(ctx))
        elif idle_devices(ctx) > 0:
            lower_bound = True
            source += (f"; one rank per server while {idle_devices(ctx)} more GPUs of it were "
                       "idle: one rank reaches only the NICs near its GPU, so the whole "
                       "server's busbw is at least this (lower bound); start one process per "
                       "GPU (--nproc-per-node) to measure it")
        else:
            source += ("; one rank per server: each server's only device, so the whole "
                       "server's share of the network")
    else:
        per_node = points[0].ranks
    clipped = clip("busbw_GBps", busbw), clip("latency_s", latency)
    if clipped != (busbw, latency):
        source += (f"; fitted busbw {link_GBps(busbw)}, latency {latency_us(latency)} moved into the "
                   "bounds (docs/bounds.md)")
        busbw, latency = clipped
    link = LinkLevel(kind=link_kind(ctx, level), busbw_GBps=busbw, latency_s=latency,
                     algorithm=algorithm, source=source)
    return link, LinkCalibration(level=level, measured=True, points=points,
                                 rel_rmse=clip("rel_error", fit["rel_rmse"]), method=method,
                                 ranks_per_node=per_node, lower_bound=lower_bound, note=source)


def unmeasured_level(level: str, args, why: str) -> tuple[LinkLevel, LinkCalibration]:
    """A link level from the user's flags or a stated preset, marked as not measured: the
    record says why (``not_measured_because``) and where the numbers came from
    (``numbers_from``: the preset and any flag), the note the same with the preset's source."""
    if level == "inter_node":
        spec = args.inter_link or DEFAULT_INTER
        kind, nics, gbit = parse_inter_link(spec)
        link = presets.inter_link(kind, nics, gbit)
        chosen = f"{'--inter-link' if args.inter_link else 'the default'}; " \
                 f"scalesim.presets.inter_link: {link.source}"
        busbw, latency = args.inter_busbw, args.inter_latency
        flags = "--inter-link or --inter-busbw/--inter-latency"
    else:
        spec = args.intra_link or "pcie4"
        link = presets.intra_link(spec)
        chosen = f"{'--intra-link' if args.intra_link else 'the default'}; " \
                 f"scalesim.presets.intra_link: {link.source}"
        busbw, latency = args.intra_busbw, args.intra_latency
        flags = "--intra-link or --intra-busbw/--intra-latency"
    changes, given = {}, ""
    if busbw is not None:
        changes["busbw_GBps"] = busbw
        given += f"; busbw {busbw:g} GB/s from the user's flag"
    if latency is not None:
        if latency < 0:
            raise ScalesimError("link latencies must be 0 or more seconds")
        changes["latency_s"] = latency
        given += f"; latency {latency:g} s from the user's flag"
    note = (f"NOT MEASURED ({why}); numbers from preset {spec} ({chosen}){given}; set them "
            f"with {flags}")
    link = link.model_copy(update={**changes, "source": note})
    return link, LinkCalibration(level=level, measured=False, not_measured_because=why,
                                 numbers_from=f"preset {spec}{given}", note=note)


def run(ctx: DistContext, args, progress) -> CollectiveResult:
    sizes = message_sizes(args.min_size_kib, args.max_size_mib, args.size_factor)
    if ctx.intra is None and ctx.is_main:
        progress.update(len(args.ops) * len(sizes))
    intra_all, intra_note = measure_level(ctx, "intra_node", ctx.intra, len(ctx.intra_ranks),
                                          args, progress)
    inter_all, inter_note = [], None
    if ctx.nodes > 1:  # every rank of every server in one collective (the world group)
        inter_all, inter_note = measure_level(ctx, "inter_node", dist.group.WORLD, ctx.world,
                                              args, progress)
    extended = {"intra_node": intra_note, "inter_node": inter_note}
    links, result = [], CollectiveResult(links=[])
    fits: dict[str, dict[str, float]] = {}
    intra_fits: dict | None = None
    for level, points in (("intra_node", intra_all), ("inter_node", inter_all)):
        if points:
            level_fits = fit_level(points)
            if level == "intra_node":
                intra_fits = level_fits
            link, cal = measured_level(ctx, level, points, level_fits, intra_fits,
                                       extended[level])
            fits.update({f"{level}/{op}": f for op, f in level_fits.items()})
        else:
            why = ("one process per node" if level == "intra_node"
                   else "this calibration ran on one node")
            link, cal = unmeasured_level(level, args, why)
        links.append(cal)
        if level == "intra_node":
            result.intra = link
        else:
            result.inter = link
    result.links = links
    result.fits = fits
    block = block_from_args(args)
    if block is not None:  # the messages tensor and pipeline parallelism send for it
        from scalesim.calibration import parallel_messages

        result.messages = parallel_messages.run(ctx, block, block.tp_degrees(args.block_tp),
                                                PRECISION_BYTES[args.precision], result.intra, args)
    return result

