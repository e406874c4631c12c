"""A real tensor-parallel run against the layout model's prediction from a calibration made in
the same processes, interleaved with it (CPU, gloo; ``tests/test_tp_check.py``).

Run under torchrun (two ranks)::

    torchrun --standalone --nproc-per-node=2 -m scalesim.calibration.tp_check --out tp.json

Every round, on both ranks, after a barrier:

1. *calibration*, as ``scalesim calibrate --block-hidden`` does it: the block's shard alone at
   tp 1, 2 and 4 (``models.ShardedBlock`` without communication), and all-reduces of the
   block's activation at four sizes (S/4 .. 2S);
2. *the run*: ``--layers`` Megatron tensor-parallel blocks over the two ranks
   (``ShardedBlock`` with the group: two all-reduces forward and two backward per block),
   forward and backward, ``--steps`` steps per timing.

The calibration is fitted as the profile assembly fits it (``block_fit.fit_block``: the layout
model's layer time A/F + C/B over the shards; ``collectives.fit_alpha_beta`` over the
all-reduces), and the prediction is the layout model's: layers x (layer time at tp 2 +
``tensor_parallel.tp_comm_per_layer_s``). Rounds interleave the two, so a busy moment of the
machine falls on both; a calibration point is the median over ranks of each rank's median (as
the compute phase), a run step the median over rounds of the slower rank's time (a synchronous
step waits for it). Rank 0 prints (and writes) one JSON object with the ratio measured /
predicted.

Noise on a shared machine: every rank computes on one thread (``torch.set_num_threads(1)``,
one inter-op thread), so two ranks on two cores do not oversubscribe them as the default
(cores per process) would; a timing spans ``--steps`` whole steps, so a preemption of a few
milliseconds is a small share of it; and the comparison is a ratio of medians over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

SIZES = (1 / 16, 0.25, 1.0, 4.0, 16.0)  # all-reduce sizes timed, in activations of the block


def build_parser() -> argparse.ArgumentParser:
    from scalesim.calibration.check_rounds import check_parser

    p = check_parser("tp_check", "Measured tensor-parallel step vs the layout model.")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--rounds", type=int, default=24)
    p.add_argument("--steps", type=int, default=3, help="steps per timing")
    p.add_argument("--calls", type=int, default=4, help="all-reduce calls per timing")
    p.add_argument("--quantile", type=float, default=50.0,
                   help="percentile over rounds of every timing (default 50: the median)")
    p.add_argument("--pin", action="store_true", help="pin rank r to core r")
    p.add_argument("--raw", help="also write every rank's rounds to this JSON file")
    return p


def _worker(args) -> dict | None:
    import numpy as np
    import torch
    import torch.distributed as dist
    from scalesim.calibration.check_rounds import gathered_rounds, timed
    from scalesim.calibration.models import ShardedBlock

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.pin and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    h, a, f = args.hidden, args.heads, 4 * args.hidden
    torch.manual_seed(0)
    shards = {t: ShardedBlock(h, a, f, t) for t in (1, 2, 4)}
    group = dist.new_group(list(range(world)))
    run = torch.nn.ModuleList(ShardedBlock(h, a, f, world, group) for _ in range(args.layers))
    solo = torch.nn.Sequential(*(ShardedBlock(h, a, f, world) for _ in range(args.layers)))
    x = torch.randn(args.batch, args.seq, h, requires_grad=True)
    grad = torch.randn(args.batch, args.seq, h)
    numel = args.batch * args.seq * h
    buffers = {s: torch.ones(int(numel * s)) for s in SIZES}

    def fwd_bwd(module) -> None:
        module(x).backward(grad)
        x.grad = None
        module.zero_grad(set_to_none=True)

    def layers_step() -> None:
        y = x
        for block in run:
            y = block(y)
        y.backward(grad)
        x.grad = None
        run.zero_grad(set_to_none=True)

    def solo_steps() -> list[float]:
        """The run's compute without its all-reduces, one time per step, each step started
        together after a barrier, as the jitter phase times steps: each rank's own jitter."""
        times = []
        for _ in range(args.steps):
            dist.barrier()
            t0 = time.perf_counter()
            fwd_bwd(solo)
            times.append(time.perf_counter() - t0)
        return times

    def after_compute(buf) -> float:
        """One all-reduce right after a shard's forward, as tensor parallelism calls it
        (diagnostic: the calibration's loop times calls back to back)."""
        dist.barrier()
        with torch.no_grad():
            shards[world](x)
        t0 = time.perf_counter()
        dist.all_reduce(buf)
        return time.perf_counter() - t0

    for _ in range(2):  # warm-up
        for t in shards:
            fwd_bwd(shards[t])
        layers_step()
        fwd_bwd(solo)
        for buf in buffers.values():
            dist.all_reduce(buf)
    rounds = []
    for _ in range(args.rounds):
        r = {f"block_tp{t}": timed(dist, lambda t=t: fwd_bwd(shards[t]), args.steps)
             for t in shards}
        r.update({f"ar_{s}": timed(dist, lambda b=buf: dist.all_reduce(b), args.calls)
                  for s, buf in buffers.items()})
        r["run"] = timed(dist, layers_step, args.steps)
        r["solo_steps"] = solo_steps()
        r["ar_after_compute"] = after_compute(buffers[1.0])
        rounds.append(r)
    everyone = gathered_rounds(dist, rounds)
    if everyone is None:
        return None
    if args.raw:  # atomically, as every file scalesim writes
        from scalesim.jsonio import atomic_write_text

        atomic_write_text(args.raw, json.dumps(everyone) + "\n")
    return summarise(args, everyone, np)


def summarise(args, everyone: list[list[dict]], np, quantile: float | None = None) -> dict:
    """The fits, the prediction and the ratio from every rank's rounds; every timing reduced by
    its ``quantile`` over rounds (default ``args.quantile``; 50 = median)."""
    from scalesim.calibration.block_fit import Block, fit_block, layer_time_s
    from scalesim.calibration.check_rounds import allreduce_link, slowest
    from scalesim.calibration.check_rounds import calibrated as calibrated_over
    from scalesim.calibration.jitter_phase import summarize as jitter_of

    from scalesim.model.stragglers import SLOW_DEVICE_FACTOR, collective_waits_s
    from scalesim.model.tensor_parallel import collectives_per_layer, tp_comm_per_layer_s
    from scalesim.model.transformer import RECOMPUTE_NONE

    q = args.quantile if quantile is None else quantile

    def over_rounds(values):
        return float(np.percentile(values, q))

    def calibrated(key):  # the compute phase's point: median over ranks of each rank's value
        return calibrated_over(everyone, key, over_rounds)

    block = Block(args.hidden, args.heads, 4 * args.hidden, args.seq, args.batch)
    tps = [1, 2, 4]
    block_s = [calibrated(f"block_tp{t}") for t in tps]
    fit = fit_block(block, tps, block_s)
    element = 4.0  # fp32
    size = args.batch * args.seq * args.hidden * element
    sizes = [size * s for s in SIZES]
    times = [over_rounds(slowest(everyone, f"ar_{s}")) for s in SIZES]
    latency_s, busbw_GBps, ar_rmse = allreduce_link(sizes, times)
    world = len(everyone)
    layer_s = float(layer_time_s(block, world, fit.flops_per_s, fit.memory_bytes_per_s))
    comm_s = float(tp_comm_per_layer_s(args.batch, args.seq, args.hidden, world, 1,
                                       RECOMPUTE_NONE, False, latency_s, busbw_GBps, element))
    # the jitter phase's figure from the run's compute alone (per rank, all rounds' steps), and
    # the per-collective waits it predicts: every all-reduce waits for the slower rank
    jitter, _ = jitter_of([[t for r in rounds for t in r["solo_steps"]] for rounds in everyone],
                          SLOW_DEVICE_FACTOR)
    collectives = args.layers * float(collectives_per_layer(RECOMPUTE_NONE))
    wait_s = float(collective_waits_s(world, collectives, args.layers * layer_s,
                                      jitter.step_time_cv))
    without_wait = args.layers * (layer_s + comm_s)
    predicted = without_wait + wait_s
    run = slowest(everyone, "run")
    measured = over_rounds(run)
    return {
        "ratio": measured / predicted, "ratio_without_wait": measured / without_wait,
        "quantile": q, "measured_s": measured,
        "predicted_s": predicted, "predicted_compute_s": args.layers * layer_s,
        "predicted_comm_s": args.layers * comm_s, "comm_share": comm_s / (layer_s + comm_s),
        "predicted_wait_s": wait_s, "jitter_cv": jitter.step_time_cv,
        "rank_median_solo_s": jitter.per_rank_median_s,
        "run_quartiles_s": [float(x) for x in np.percentile(run, [25, 50, 75])],
        "sustained_gflops": fit.flops_per_s / 1e9, "memory_GBps": fit.memory_bytes_per_s / 1e9,
        "block_s": dict(zip(tps, block_s, strict=True)), "block_fit_rel_rmse": fit.rel_rmse,
        "allreduce_s": times, "latency_s": latency_s, "busbw_GBps": busbw_GBps,
        "allreduce_fit_rel_rmse": ar_rmse,
        "allreduce_after_compute_s": over_rounds(slowest(everyone, "ar_after_compute")),
        "rounds": len(run), "layers": args.layers,
        "hidden": args.hidden, "seq": args.seq, "batch": args.batch, "ranks": world,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def main(argv: list[str] | None = None) -> int:
    from scalesim.calibration.check_rounds import main as check_main

    return check_main(build_parser, _worker, argv)


if __name__ == "__main__":
    sys.exit(main())
