"""Compute phase: forward and backward time vs micro-batch on every local device at once.

All ranks time their own model at the same time (as in training, so shared cores, memory
bandwidth or power limits are in the numbers). Per micro-batch: ``warmup`` untimed steps, then
``repeats`` timed ones, forward (with the loss) and backward timed separately so the backward
share is measured. A point is the median over ranks of each rank's median; its spread is the
median interquartile range. An out-of-memory at one micro-batch (on any rank) ends the sweep
and sets the ceiling. The optimizer step is timed on its own after the sweep.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.distributed as dist
from scalesim.calibration import models
from scalesim.calibration.dist import DistContext, gather_object
from scalesim.calibration.results import ComputeResult
from scalesim.calibration.timing import Clock, free_memory, is_out_of_memory, median_iqr

from scalesim.errors import ScalesimError
from scalesim.model.compute import fit_compute_curve
from scalesim.schemas import ComputeCurve, ComputePoint

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def autocast(device: torch.device, precision: str):
    """The autocast context for ``precision`` (fp32: none)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=DTYPES[precision])


def make_batch(bundle: models.ModelBundle, b: int, device: torch.device):
    """A batch of ``b`` on ``device``; an error in the user's make_batch is one line."""
    try:
        inputs, targets = bundle.make_batch(b)
    except Exception as exc:
        if is_out_of_memory(exc):
            raise
        raise ScalesimError(f"make_batch({b}) of model '{bundle.name}' raised "
                            f"{type(exc).__name__}: {exc}") from None
    return models.to_device(inputs, device), models.to_device(targets, device)


def train_micro_step(bundle, inputs, targets, precision: str, device, clock: Clock):
    """One forward (with loss) and backward; returns the three clock marks."""
    start = clock.mark()
    with autocast(device, precision):
        outputs = models.forward(bundle.model, inputs)
        loss = bundle.loss_fn(outputs, targets)
    middle = clock.mark()
    loss.backward()
    end = clock.mark()
    return start, middle, end


def time_batch(bundle, optimizer, b: int, warmup: int, repeats: int, precision: str,
               device) -> tuple[list[float], list[float]]:
    """Forward and backward seconds of ``repeats`` timed micro-steps at micro-batch ``b``."""
    clock = Clock(device)
    inputs, targets = make_batch(bundle, b, device)
    fwd, bwd = [], []
    for i in range(warmup + repeats):
        optimizer.zero_grad(set_to_none=True)
        start, middle, end = train_micro_step(bundle, inputs, targets, precision, device, clock)
        if i >= warmup:
            fwd.append(clock.seconds(start, middle))
            bwd.append(clock.seconds(middle, end))
    return fwd, bwd


def time_optimizer(optimizer, device, warmup: int, repeats: int) -> list[float]:
    """Seconds of ``repeats`` optimizer steps on the gradients left by the last backward."""
    clock = Clock(device)
    for _ in range(warmup):
        optimizer.step()
    times = []
    for _ in range(repeats):
        start = clock.mark()
        optimizer.step()
        times.append(clock.seconds(start, clock.mark()))
    return times


def align(ctx: DistContext) -> None:
    """Start all ranks together (nothing that can fail runs between this and the timing)."""
    Clock(ctx.device).sync()
    if ctx.world > 1:
        dist.barrier(group=ctx.control)


def prepare(bundle: models.ModelBundle, args, device):
    """Move the model to ``device`` and make its optimizer."""
    bundle.model.to(device).train()
    return models.make_optimizer(args.optimizer, bundle.model)


def run(ctx: DistContext, bundle: models.ModelBundle, args, progress) -> ComputeResult:
    device = ctx.device
    optimizer = prepare(bundle, args, device)
    points: list[ComputePoint] = []
    fwd_points, bwd_points, peaks = [], [], []
    oom_batch = None
    for b in sorted(set(args.batches)):
        status, fwd, bwd, peak = "ok", [], [], 0.0
        align(ctx)
        try:
            if ctx.on_gpu:
                torch.cuda.reset_peak_memory_stats(device)
            fwd, bwd = time_batch(bundle, optimizer, b, args.warmup, args.repeats,
                                  args.precision, device)
            if ctx.on_gpu:
                peak = float(torch.cuda.max_memory_allocated(device))
        except ScalesimError as exc:
            status = f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
            status = "oom" if is_out_of_memory(exc) else (
                f"error: micro-batch {b} of '{bundle.name}' raised {type(exc).__name__}: "
                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
        optimizer.zero_grad(set_to_none=True)
        if status == "oom":
            free_memory(device)
        everyone = gather_object(ctx, (status, fwd, bwd, peak))
        errors = [(r, s) for r, (s, *_rest) in enumerate(everyone) if s.startswith("error")]
        if errors:
            where = f" (rank {errors[0][0]})" if ctx.world > 1 else ""
            raise ScalesimError(errors[0][1][7:] + where)
        if any(s == "oom" for s, *_ in everyone):
            oom_batch = b
            progress.update(len(args.batches) - progress.n)
            break
        medians = [median_iqr(np.add(f, w)) for _, f, w, _ in everyone]
        points.append(ComputePoint(
            micro_batch=b, time_s=float(np.median([m for m, _ in medians])),
            spread_s=float(np.median([s for _, s in medians])), repeats=args.repeats))
        fwd_points.append(float(np.median([np.median(f) for _, f, _, _ in everyone])))
        bwd_points.append(float(np.median([np.median(w) for _, _, w, _ in everyone])))
        peaks.append(max(p for *_, p in everyone))
        progress.update(1)
    if len(points) < 2:
        ceiling = f"; batch {oom_batch} ran out of memory" if oom_batch else ""
        raise ScalesimError(f"only {len(points)} micro-batch size(s) ran{ceiling}: give smaller "
                            "--batches (the compute fit needs at least two)")
    # Gradients for the optimizer timing: one more micro-step at the smallest size.
    clock = Clock(device)
    inputs, targets = make_batch(bundle, points[0].micro_batch, device)
    train_micro_step(bundle, inputs, targets, args.precision, device, clock)
    align(ctx)
    opt_times = gather_object(ctx, time_optimizer(optimizer, device, 2, args.repeats))
    optimizer_s = float(np.median([np.median(t) for t in opt_times]))
    optimizer.zero_grad(set_to_none=True)

    overhead, per_sample, rel_rmse = fit_compute_curve(
        [p.micro_batch for p in points], [p.time_s for p in points])
    if per_sample <= 0:
        measured = ", ".join(f"{p.micro_batch}: {p.time_s * 1e3:.2f} ms" for p in points)
        raise ScalesimError(f"measured times do not grow with the micro-batch ({measured}); "
                            "use larger --batches so the per-sample cost shows")
    total = np.add(fwd_points, bwd_points)
    backward_fraction = float(np.clip(np.median(np.divide(bwd_points, total)), 0.01, 0.99))
    activation = 0.0
    if ctx.on_gpu and len(peaks) >= 2:
        slope = np.polyfit([p.micro_batch for p in points], peaks, 1)[0]
        activation = float(max(slope, 0.0))
    ceiling_note = (f"micro-batch {oom_batch} ran out of memory" if oom_batch
                    else f"no out-of-memory up to micro-batch {points[-1].micro_batch}")
    curve = ComputeCurve(
        overhead_s=overhead, per_sample_s=per_sample, optimizer_step_s=optimizer_s,
        rel_rmse=rel_rmse, points=points,
        max_micro_batch=points[-1].micro_batch if oom_batch else None,
        precision=args.precision, measured=True,
        source=(f"measured by scalesim calibrate: {bundle.name}, {ctx.world} rank(s) at once on "
                f"{device.type}, {args.warmup} warm-up + {args.repeats} timed steps per size "
                f"({'CUDA events' if ctx.on_gpu else 'monotonic clock'}); {ceiling_note}"),
    )
    return ComputeResult(
        model_name=bundle.name, sample_unit=bundle.sample_unit,
        params=models.parameter_count(bundle.model),
        element_bytes=models.element_bytes(bundle.model), optimizer=args.optimizer,
        optimizer_state_elements=models.optimizer_state_elements(args.optimizer),
        precision=args.precision, curve=curve, forward_s=fwd_points, backward_s=bwd_points,
        backward_fraction=backward_fraction, activation_bytes_per_sample=activation,
        oom_batch=oom_batch,
    )
