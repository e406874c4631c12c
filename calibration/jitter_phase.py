"""Jitter phase: per-step times on every rank, their spread, and a consistently slow rank.

All ranks run the same training step (forward, backward, optimizer) on their own, starting
each step together after a barrier, so the times are each rank's own work without waiting on
the others. Per rank: median and a robust coefficient of variation, the normal-consistent
``(IQR / 1.349) / median`` (a normal's interquartile range is 1.349 sigma), so that a few bursts
from other processes on the machine do not inflate the spread that the straggler model treats as
normal. The profile keeps the median CV over ranks. A rank is named slow when its median is at
least ``--slow-threshold`` times the median of the other ranks' medians and it was the slowest in
most steps (``scalesim.model.stragglers.slowest_in_most_steps``: a strict majority, beyond chance).
"""

from __future__ import annotations

import numpy as np
import torch.distributed as dist
from scalesim.calibration import compute_phase
from scalesim.calibration.dist import DistContext, gather_object
from scalesim.calibration.results import JitterResult
from scalesim.calibration.timing import Clock

from scalesim.bounds import clip
from scalesim.model.stragglers import slowest_in_most_steps
from scalesim.schemas import Jitter

IQR_PER_SIGMA = 1.349  # interquartile range of a normal distribution, in standard deviations


def step_times(ctx: DistContext, bundle, optimizer, b: int, steps: int, warmup: int,
               precision: str, progress) -> list[float]:
    """This rank's seconds for ``steps`` full training steps (after ``warmup`` untimed ones)."""
    clock = Clock(ctx.device)
    inputs, targets = compute_phase.make_batch(bundle, b, ctx.device)
    times = []
    for i in range(warmup + steps):
        clock.sync()
        if ctx.world > 1:
            dist.barrier(group=ctx.control)
        optimizer.zero_grad(set_to_none=True)
        start, _, _ = compute_phase.train_micro_step(bundle, inputs, targets, precision,
                                                     ctx.device, clock)
        optimizer.step()
        end = clock.mark()
        if i >= warmup:
            times.append(clock.seconds(start, end))
            progress.update(1)
    return times


def summarize(per_rank: list[list[float]], threshold: float) -> tuple[Jitter, float]:
    """Jitter record from every rank's step times (ranks x steps); also the slowest's share."""
    times = np.asarray(per_rank, dtype=float)
    medians = np.median(times, axis=1)
    q1, q3 = np.percentile(times, [25, 75], axis=1)
    cvs = (q3 - q1) / IQR_PER_SIGMA / medians
    slow_rank, slow_factor, share = None, 1.0, 0.0
    if times.shape[0] > 1:
        candidate = int(np.argmax(medians))
        others = np.delete(medians, candidate)
        ratio = float(medians[candidate] / np.median(others))
        slowest = np.argmax(times, axis=0) == candidate
        share = float(np.mean(slowest))
        if ratio >= threshold and slowest_in_most_steps(int(np.sum(slowest)), times.shape[1],
                                                        times.shape[0]):
            slow_rank, slow_factor = candidate, ratio
    jitter = Jitter(step_time_cv=clip("cv", float(np.median(cvs))),
                    per_rank_median_s=[clip("positive_duration_s", m) for m in medians],
                    slow_rank=slow_rank, slow_factor=clip("slow_factor", slow_factor))
    return jitter, share


def run(ctx: DistContext, bundle, micro_batch: int, args, progress) -> JitterResult:
    from scalesim.sources.nvml_sampler import health_lines, start_sampler

    optimizer = compute_phase.prepare(bundle, args, ctx.device)
    # Each GPU's clocks, heat and throttle reasons while it steps (NVML, optional dependency).
    sampler, why = start_sampler(ctx.device.index if ctx.on_gpu else None)
    try:
        mine = step_times(ctx, bundle, optimizer, micro_batch, args.jitter_steps, args.warmup,
                          args.precision, progress)
    finally:
        health = sampler.stop() if sampler is not None else None
    optimizer.zero_grad(set_to_none=True)
    gathered = gather_object(ctx, (mine, health, why))
    jitter, share = summarize([g[0] for g in gathered], args.slow_threshold)
    lines = health_lines([g[1] for g in gathered])
    if not lines:
        lines = [sorted({g[2] for g in gathered})[0]]
    return JitterResult(jitter=jitter, micro_batch=micro_batch, steps=args.jitter_steps,
                        slowest_share=share, device_health=lines)
