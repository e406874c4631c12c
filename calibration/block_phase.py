"""The compute phase's transformer block: forward+backward of one block at the per-device shapes
of several tensor-parallel degrees (``--block-hidden`` and friends), on every local rank at once.

Each degree t gets the shard one rank of a Megatron tensor-parallel group holds
(``models.ShardedBlock``: heads/t heads, MLP f/t, norms whole; or the user's
``--block-model`` factory called with ``tp=t``), timed without communication (the collectives
phase times the messages). Like the micro-batch sweep: ``warmup`` untimed steps per degree,
then ``block_repeats`` rounds that time one step of every degree in turn, so a busy moment of the
machine spreads over all shapes. The layout model's roofline is fitted to these points when the
profile is assembled (``block_fit``). Where a point's median is less certain than
``TARGET_REL_ERROR`` (a busy machine's spread), more rounds are timed, ``block_repeats / 2`` at a
time up to ``MAX_ROUNDS_FACTOR`` x ``block_repeats`` in all: an idle machine's block costs no
more, a busy one's gets the rounds its noise needs. The fit's refusals are the assembly's, as
before.
"""

from __future__ import annotations

import numpy as np
import torch
from scalesim.calibration import attention_probe, models
from scalesim.calibration.block_fit import PRECISION_BYTES, Block, median_rel_error
from scalesim.calibration.compute_phase import _agree, align, autocast
from scalesim.calibration.dist import DistContext, raised
from scalesim.calibration.results import BlockResult, BlockTiming
from scalesim.calibration.timing import Clock, is_out_of_memory, over_ranks

from scalesim.errors import ScalesimError
from scalesim.figures import count

MAX_ROUNDS_FACTOR = 3  # the most rounds timed, in multiples of --block-repeats
TARGET_REL_ERROR = 0.025  # a point's median's relative standard error that ends the timing


def _failure(exc: BaseException, tp: int, block: Block) -> str:
    if is_out_of_memory(exc):
        tokens = block.micro_batch * block.seq_len
        return (
            f"error: the block at tp {tp} ({tokens:,} tokens) ran out of memory; time a "
            "smaller one with --block-batch or --block-seq"
        )
    return f"error: the block at tp {tp} raised {raised(exc)}"


def _points(everyone, degrees: list[int], rounds: int) -> list[BlockTiming]:
    """Every degree's point from every rank's (forward, backward) rounds."""
    points = []
    for t in degrees:
        time_s, spread_s, forward_s, backward_s = over_ranks(everyone, t)
        points.append(BlockTiming(tp=t, time_s=time_s, spread_s=spread_s, forward_s=forward_s,
                                  backward_s=backward_s, repeats=rounds))
    return points


def too_spread(points: list[BlockTiming]) -> bool:
    """Whether a point's median is less certain than ``TARGET_REL_ERROR`` (its relative standard
    error from its spread, ``block_fit.median_rel_error``). Decided by the spreads alone, not by
    whether the fit takes the medians: timing until a fit passes would give a block whose times
    do not pin the rate several chances to pass by luck."""
    error = median_rel_error([p.time_s for p in points], [p.spread_s for p in points],
                             [p.repeats for p in points])
    return bool(np.max(error) > TARGET_REL_ERROR)


def run(ctx: DistContext, block: Block, degrees: list[int], spec: str, args) -> BlockResult:
    device, clock = ctx.device, Clock(ctx.device)
    shape = (block.micro_batch, block.seq_len, block.hidden)
    fwd = {t: [] for t in degrees}
    bwd = {t: [] for t in degrees}
    status, at = "ok", [degrees[0]]  # at: the degree being built or run
    kernel = None  # the attention family SDPA dispatches to (attention_probe)
    try:
        torch.manual_seed(args.seed)
        shards = {}
        for t in degrees:
            at[0] = t
            shards[t] = (
                models.block_module(spec, block.hidden, block.heads, block.ffn_hidden, block.seq_len, t)
                .to(device)
                .train()
            )
        x = torch.randn(*shape, device=device, requires_grad=True)
        grads: dict[int, torch.Tensor] = {}

        def step(t: int):
            at[0] = t
            start = clock.mark()
            with autocast(device, args.precision):
                out = shards[t](x)
            middle = clock.mark()
            if t not in grads:
                grads[t] = torch.randn_like(out)
            out.backward(grads[t])
            end = clock.mark()
            x.grad = None
            shards[t].zero_grad(set_to_none=True)
            return start, middle, end

        for t in degrees:
            for _ in range(args.warmup):
                step(t)
        if ctx.on_gpu:  # one more step, its attention calls' backends asked (attention_probe)
            kernel = attention_probe.timed_attention_kernel(lambda: step(degrees[0]))
    except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
        status = f"error: {exc}" if isinstance(exc, ScalesimError) else _failure(exc, at[0], block)
    _agree(ctx, status, None)  # a failure so far: raised on every rank before any round
    rounds, extra = 0, max(1, args.block_repeats // 2)
    wanted = args.block_repeats
    while True:
        try:
            align(ctx)
            for _ in range(wanted - rounds):
                for t in degrees:
                    start, middle, end = step(t)
                    fwd[t].append(clock.seconds(start, middle))
                    bwd[t].append(clock.seconds(middle, end))
        except Exception as exc:  # noqa: BLE001 - every rank must hear about any failure
            status = f"error: {exc}" if isinstance(exc, ScalesimError) else _failure(exc, at[0], block)
        # every rank gets the same rounds, so every rank takes the same decision
        everyone = [payload for _, payload in _agree(ctx, status, (fwd, bwd))]
        rounds = wanted
        points = _points(everyone, degrees, rounds)
        wanted = min(rounds + extra, MAX_ROUNDS_FACTOR * args.block_repeats)
        if wanted == rounds or not too_spread(points):
            break
    more = rounds - args.block_repeats
    return BlockResult(
        module=spec,
        hidden=block.hidden,
        heads=block.heads,
        ffn_hidden=block.ffn_hidden,
        seq_len=block.seq_len,
        micro_batch=block.micro_batch,
        element_bytes=PRECISION_BYTES[args.precision],
        flash_attention=ctx.on_gpu,
        attention_kernel=kernel,
        points=points,
        source=(
            f"block {spec} timed by scalesim calibrate at tp {','.join(map(str, degrees))}: "
            f"{ctx.world} rank(s) at once on {device.type}, {args.warmup} warm-up + "
            f"{args.block_repeats} interleaved rounds"
            + (f" and {more} more, the medians' spread being over {TARGET_REL_ERROR:.1%}" if more else "")
            + f", precision {args.precision}"
            + ("" if ctx.on_gpu else f", {count(torch.get_num_threads(), 'torch thread')} per rank")
            + (f"; attention kernel: {kernel} (SDPA's dispatch)" if kernel else "")
        ),
    )
