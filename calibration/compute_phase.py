"""Compute phase: forward and backward time vs micro-batch on every local device at once.

All ranks time their own model at the same time (as in training, so shared cores, memory
bandwidth or power limits are in the numbers). First every micro-batch gets ``warmup`` untimed
steps, in ascending order (the out-of-memory probe); then ``repeats`` rounds each time one step
of every size in turn, forward (with the loss) and backward timed separately so the backward
share is measured. A point is the median over ranks of each rank's median; its spread is the
median interquartile range. An out-of-memory at one micro-batch (on any rank) ends the sweep
and sets the ceiling. Where rank 0's server has several ranks, rank 0 then times the largest size
with all of them busy and alone, pair by pair: the co-location slowdown (the pairs' lower-quartile
ratio), with which predictions scale compute to the number of busy devices per server. The
optimizer step is timed on its own after the sweep. With ``--block-hidden`` a transformer block
is then timed at the per-device shapes of several tensor-parallel degrees (``block_phase``).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.distributed as dist
from scalesim.calibration import attention_probe, models
from scalesim.calibration.block_fit import block_from_args
from scalesim.calibration.dist import DistContext, agree_on_error, gather_object, raised
from scalesim.calibration.results import ComputeResult
from scalesim.calibration.timing import Clock, free_memory, is_out_of_memory, over_ranks

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


def _failure(exc: BaseException, b: int, bundle) -> str:
    """'oom', or 'error: <one line>' for any other failure at micro-batch ``b``."""
    if isinstance(exc, ScalesimError):
        return f"error: {exc}"
    if is_out_of_memory(exc):
        return "oom"
    return f"error: micro-batch {b} of '{bundle.name}' raised {raised(exc)}"


def _timing_failure(exc: BaseException, b: int, bundle) -> str:
    """Like ``_failure``, but an out-of-memory is an error: sizes being timed ran before."""
    status = _failure(exc, b, bundle)
    if status == "oom":
        return "error: out of memory while timing sizes that ran before; retry with smaller " \
               "--batches"
    return status


def _agree(ctx: DistContext, status: str, payload) -> list:
    """Every rank's (status, payload); a rank's 'error: ...' status is raised on every rank
    (``dist.agree_on_error``)."""
    error = status.removeprefix("error: ") if status.startswith("error: ") else None
    return agree_on_error(ctx, error, (status, payload))


def probe(ctx: DistContext, bundle, optimizer, args, progress):
    """Warm up every micro-batch in ascending order until one runs out of memory (any rank).

    Returns ({micro_batch: (inputs, targets)} that ran, peak memory per size, the OOM size).
    """
    device, clock = ctx.device, Clock(ctx.device)
    ready, peaks, oom_batch = {}, [], None
    for b in sorted(set(args.batches)):
        status, peak = "ok", 0.0
        align(ctx)
        try:
            if ctx.on_gpu:
                torch.cuda.reset_peak_memory_stats(device)
            inputs, targets = make_batch(bundle, b, device)
            for _ in range(args.warmup):
                optimizer.zero_grad(set_to_none=True)
                train_micro_step(bundle, inputs, targets, args.precision, device, clock)
            clock.sync()
            if ctx.on_gpu:
                peak = float(torch.cuda.max_memory_allocated(device))
            ready[b] = (inputs, targets)
        except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
            status = _failure(exc, b, bundle)
            inputs = targets = None
        optimizer.zero_grad(set_to_none=True)
        if status == "oom":
            ready.pop(b, None)
            free_memory(device)
        everyone = _agree(ctx, status, peak)
        progress.update(1)
        if any(st == "oom" for st, _ in everyone):
            oom_batch = b
            ready.pop(b, None)
            break
        peaks.append(max(p for _, p in everyone))
    return ready, peaks, oom_batch


def time_interleaved(ctx: DistContext, bundle, optimizer, ready: dict, args, progress):
    """``repeats`` rounds, each timing one micro-step of every size in turn (so a busy moment
    of the machine spreads over all sizes instead of bending the curve at one of them)."""
    device, clock = ctx.device, Clock(ctx.device)
    fwd = {b: [] for b in ready}
    bwd = {b: [] for b in ready}
    status = "ok"
    align(ctx)
    try:
        for _ in range(args.repeats):
            for b, (inputs, targets) in ready.items():
                optimizer.zero_grad(set_to_none=True)
                start, middle, end = train_micro_step(bundle, inputs, targets, args.precision,
                                                      device, clock)
                fwd[b].append(clock.seconds(start, middle))
                bwd[b].append(clock.seconds(middle, end))
            progress.update(1)
    except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
        status = _timing_failure(exc, max(ready), bundle)
    optimizer.zero_grad(set_to_none=True)
    return [payload for _, payload in _agree(ctx, status, (fwd, bwd))]


def server_ranks(ctx: DistContext) -> int:
    """Ranks on rank 0's server (all compute at once during the sweep)."""
    return ctx.node_of.count(ctx.node_of[0]) if ctx.node_of else ctx.local_world


def time_colocation(ctx: DistContext, bundle, b: int, inputs, targets,
                    args) -> tuple[list[float], list[float]]:
    """Rank 0's micro-step with every rank busy, then with rank 0 alone, in turn ``2 * repeats``
    times; returns rank 0's (busy, alone) seconds, pair by pair, on every rank.

    Their ratio is the slowdown that devices of one server cause each other (shared host cores,
    memory bandwidth, PCIe, power); it is 1 when they do not interfere.
    """
    clock = Clock(ctx.device)
    together, alone = [], []
    status = "ok"

    def timed_step(into: list) -> str:
        try:
            start, _, end = train_micro_step(bundle, inputs, targets, args.precision,
                                             ctx.device, clock)
        except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
            return _timing_failure(exc, b, bundle)
        into.append(clock.seconds(start, end))
        return "ok"

    # A rank that failed stops computing but keeps meeting the others at every barrier, so all
    # ranks reach the final agreement together (and it names the failure).
    for _ in range(2 * args.repeats):
        align(ctx)
        if status == "ok":
            status = timed_step(together)
        align(ctx)
        if ctx.is_main and status == "ok":
            status = timed_step(alone)
    return _agree(ctx, status, (together, alone))[0][1]


def colocation_slowdown(together_s, alone_s) -> tuple[float, tuple[float, float, float]]:
    """(slowdown, quartiles of the pairs' ratios - 1) from paired busy/alone times.

    Each pair is two adjacent steps, so a drift of the machine's speed cancels in its ratio. The
    slowdown is the lower quartile of the ratios minus 1, floored at 0: a slowdown that three
    pairs in four agree on. Noise alone (ratios spread around 1) gives 0, and a burst from
    another process during a quarter of the pairs does not move it.
    """
    ratios = np.asarray(together_s, dtype=float) / np.asarray(alone_s, dtype=float) - 1.0
    q1, q2, q3 = (float(q) for q in np.percentile(ratios, [25, 50, 75]))
    return max(q1, 0.0), (q1, q2, q3)


def colocation(ctx: DistContext, bundle, optimizer, ready: dict, args) -> tuple[int, float, str]:
    """(devices timed at once on one server, slowdown fraction, a note) at the largest size."""
    g = server_ranks(ctx)
    if g < 2:
        return 1, 0.0, ""
    b = max(ready)
    inputs, targets = ready[b]
    optimizer.zero_grad(set_to_none=True)
    together, alone = time_colocation(ctx, bundle, b, inputs, targets, args)
    optimizer.zero_grad(set_to_none=True)
    slowdown, (q1, q2, q3) = colocation_slowdown(together, alone)
    note = (f"; co-location: rank 0's micro-step at batch {b} took {np.median(together) * 1e3:.3g} "
            f"ms with all {g} ranks of its server busy, {np.median(alone) * 1e3:.3g} ms alone; "
            f"per-pair slowdown quartiles {q1:+.1%} / {q2:+.1%} / {q3:+.1%} over {len(alone)} "
            f"pairs, {slowdown:.1%} used")
    return g, slowdown, note


def run(ctx: DistContext, bundle: models.ModelBundle, args, progress) -> ComputeResult:
    device = ctx.device
    optimizer = prepare(bundle, args, device)
    ready, peaks, oom_batch = probe(ctx, bundle, optimizer, args, progress)
    if len(ready) < 2:
        ceiling = f"; batch {oom_batch} ran out of memory" if oom_batch else ""
        raise ScalesimError(f"only {len(ready)} micro-batch size(s) ran{ceiling}: give smaller "
                            "--batches (the compute fit needs at least two)")
    everyone = time_interleaved(ctx, bundle, optimizer, ready, args, progress)
    colocated, slowdown, colocation_note = colocation(ctx, bundle, optimizer, ready, args)
    points: list[ComputePoint] = []
    fwd_points, bwd_points = [], []
    for b in ready:
        time_s, spread_s, forward_s, backward_s = over_ranks(everyone, b)
        points.append(ComputePoint(micro_batch=b, time_s=time_s, spread_s=spread_s,
                                   repeats=args.repeats))
        fwd_points.append(forward_s)
        bwd_points.append(backward_s)
    # Gradients for the optimizer timing: one more micro-step at the smallest size; on a GPU
    # its attention calls say which backend SDPA runs them on (attention_probe)
    inputs, targets = ready[points[0].micro_batch]

    def gradients():
        train_micro_step(bundle, inputs, targets, args.precision, device, Clock(device))

    kernel = None
    if ctx.on_gpu and bundle.transformer is not None:
        kernel = attention_probe.timed_attention_kernel(gradients)
    else:
        gradients()
    ready.clear()
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
        rel_rmse=rel_rmse, points=points, colocated_devices=colocated,
        colocation_slowdown=slowdown,
        max_micro_batch=points[-1].micro_batch if oom_batch else None, oom_micro_batch=oom_batch,
        precision=args.precision, measured=True,
        model_shape=(bundle.transformer.model_copy(update={"flash_attention": ctx.on_gpu})
                     if bundle.attention_by_device else bundle.transformer),  # the block's rule
        attention_kernel=kernel,
        source=(f"measured by scalesim calibrate: {bundle.name}, {ctx.world} rank(s) at once on "
                f"{device.type}, {args.warmup} warm-up + {args.repeats} timed steps per size "
                f"({'CUDA events' if ctx.on_gpu else 'monotonic clock'}); {ceiling_note}"
                f"{colocation_note}"
                + (f"; attention kernel: {kernel} (SDPA's dispatch)" if kernel else "")),
    )
    block = None
    shape = block_from_args(args)
    if shape is not None:  # the transformer block at tensor-parallel shard shapes
        from scalesim.calibration import block_phase

        block = block_phase.run(ctx, shape, shape.tp_degrees(args.block_tp),
                                args.block_model or "builtin", args)
    return ComputeResult(
        block=block, model_name=bundle.name, sample_unit=bundle.sample_unit,
        params=models.parameter_count(bundle.model),
        element_bytes=models.element_bytes(bundle.model), optimizer=args.optimizer,
        optimizer_state_elements=models.optimizer_state_elements(args.optimizer),
        precision=args.precision, curve=curve, forward_s=fwd_points, backward_s=bwd_points,
        backward_fraction=backward_fraction, activation_bytes_per_sample=activation,
        oom_batch=oom_batch,
    )
