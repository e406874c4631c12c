"""Noise phase: the simple gradient noise scale B_simple (McCandlish et al. 2018, appendix A).

Every rank computes ``--noise-accum`` gradients of micro-batch ``b`` (fresh batches each), so
per sample round there are ``m = accum * ranks`` small-batch gradients g_i. Their mean squared
norm estimates E|G_b|^2; the all-reduced mean of all of them is a gradient at the big batch
``B = m*b`` and its squared norm estimates E|G_B|^2 (the per-rank and the all-reduced gradient,
as the paper suggests for data-parallel training). Both are averaged over ``--noise-steps``
rounds, then ``b_simple_from_two_batches`` gives tr(Sigma)/|G|^2. The model is at its
initial weights (after the few steps of the earlier phases): the noise scale grows during
training, so this is an early-training value, and with the built-in synthetic batches it
describes synthetic data. Use --model/--dataset factories for a real task.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from scalesim.calibration import compute_phase
from scalesim.calibration.dist import DistContext
from scalesim.calibration.results import NoiseResult
from scalesim.calibration.timing import Clock

from scalesim.bounds import check_number
from scalesim.model.quality import b_simple_from_two_batches
from scalesim.schemas import NoiseScale


def flat_grad(model) -> torch.Tensor:
    return torch.cat([p.grad.detach().float().reshape(-1) for p in model.parameters()
                      if p.requires_grad and p.grad is not None])


def one_round(ctx: DistContext, bundle, optimizer, b: int, accum: int,
              precision: str) -> tuple[float, float]:
    """(mean |g_small|^2 over all small gradients, |mean of them|^2) for one round."""
    clock = Clock(ctx.device)
    total, sq_sum = None, 0.0
    for _ in range(accum):
        optimizer.zero_grad(set_to_none=True)
        inputs, targets = compute_phase.make_batch(bundle, b, ctx.device)
        compute_phase.train_micro_step(bundle, inputs, targets, precision, ctx.device, clock)
        g = flat_grad(bundle.model)
        sq_sum += float(g.double().pow(2).sum())
        total = g.clone() if total is None else total.add_(g)
    stats = torch.tensor([sq_sum], dtype=torch.float64, device=ctx.device)
    if ctx.world > 1:
        dist.all_reduce(total)
        dist.all_reduce(stats)
    m = accum * ctx.world
    big = float((total.double() / m).pow(2).sum())
    return float(stats.item()) / m, big


def run(ctx: DistContext, bundle, micro_batch: int, args, progress) -> NoiseResult:
    optimizer = compute_phase.prepare(bundle, args, ctx.device)
    m = args.noise_accum * ctx.world
    if m < 2:
        return NoiseResult(note="noise scale needs two or more small batches per round: use "
                           "--noise-accum 2 or more")
    small, big = [], []
    for _ in range(args.noise_steps):
        s, g = one_round(ctx, bundle, optimizer, micro_batch, args.noise_accum, args.precision)
        small.append(s)
        big.append(g)
        progress.update(1)
    optimizer.zero_grad(set_to_none=True)
    small_sq, big_sq = float(np.mean(small)), float(np.mean(big))
    big_batch = micro_batch * m
    try:
        b_simple = b_simple_from_two_batches(micro_batch, small_sq, big_batch, big_sq)
        check_number("noise_scale", b_simple, "B_simple")
    except ValueError as exc:  # ScalesimError is one: an estimate outside the bounds
        return NoiseResult(small_sq_norm=small_sq, big_sq_norm=big_sq,
                           note=f"noise scale not estimated: {exc}")
    return NoiseResult(
        noise=NoiseScale(b_simple=b_simple, small_batch=micro_batch, big_batch=big_batch),
        small_sq_norm=small_sq, big_sq_norm=big_sq,
        note=(f"B_simple from |G|^2 at batch {micro_batch} (per-rank gradients) and "
              f"{big_batch} (all-reduced), {args.noise_steps} rounds, at initial weights"))
