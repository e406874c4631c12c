"""Real DDP training steps of a model, timed: the reference a prediction is checked against.

Run under torchrun (or alone for one process)::

    torchrun --nproc-per-node=2 -m scalesim.calibration.ddp_bench --model mlp --width 512 \
        --batch 32 --steps 20 --out ddp.json

Every rank wraps the model (built-in or ``module:factory``, the same flags as the calibration)
in ``DistributedDataParallel`` (default 25 MiB buckets), and times whole steps: zero_grad,
forward, loss, backward (with DDP's overlapped all-reduce), optimizer step; CUDA events on GPU,
a monotonic clock on CPU. Batches are made once before timing (no data loading in the step).
A synchronous step ends when the slowest rank is done, so the step time is the median over
steps of the slowest rank's time. Threads per process on CPU follow the calibration's rule, so
the two see the same contention. Writes (atomically) and prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta

from scalesim.calibration.options import BUILTIN_MODELS, exit_calibration, require_extra

from scalesim.bounds import flag_type
from scalesim.errors import ScalesimError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scalesim.calibration.ddp_bench",
                                description="Time real DDP training steps; print JSON.")
    p.add_argument("--model", default="mlp", help=f"{', '.join(BUILTIN_MODELS)} or module:factory")
    p.add_argument("--width", type=flag_type("model_size"))
    p.add_argument("--depth", type=flag_type("model_size"))
    p.add_argument("--seq-len", type=flag_type("model_size"), default=128)
    p.add_argument("--vocab", type=flag_type("model_size"), default=1024)
    p.add_argument("--image-size", type=flag_type("model_size"), default=32)
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--batch", type=flag_type("micro_batch"), default=32, help="per-device micro-batch")
    p.add_argument("--steps", type=flag_type("steps"), default=20, help="timed steps")
    p.add_argument("--warmup", type=flag_type("steps"), default=5, help="untimed steps first")
    p.add_argument("--bucket-mib", type=flag_type("bucket_mib"), default=25.0, help="DDP bucket_cap_mb")
    p.add_argument("--threads", type=flag_type("threads"), help="torch threads per process on CPU")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    p.add_argument("--timeout", type=flag_type("timeout_s"), default=120.0)
    p.add_argument("--seed", type=flag_type("seed"), default=0)
    p.add_argument("--out", help="JSON file to write")
    return p


def bench(args) -> dict | None:
    """Time the steps on every rank; rank 0 returns the summary, other ranks None."""
    import numpy as np
    import torch
    import torch.distributed as dist
    from scalesim.calibration import compute_phase, models
    from scalesim.calibration.dist import choose_backend, choose_device, default_threads
    from scalesim.calibration.timing import Clock
    from torch.nn.parallel import DistributedDataParallel as DDP

    world = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    device = choose_device(args.device, local_rank)
    backend = choose_backend(args.backend, device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads or default_threads(local_world))
    timeout = timedelta(seconds=args.timeout)
    if "RANK" in os.environ:
        dist.init_process_group(backend, timeout=timeout)
    else:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                                timeout=timeout)
    try:
        bundle = models.load_model(args)
        torch.manual_seed(args.seed + 1 + dist.get_rank())  # own batches per rank
        bundle.model.to(device).train()
        ddp = DDP(bundle.model, device_ids=[device.index] if device.type == "cuda" else None,
                  bucket_cap_mb=args.bucket_mib)
        optimizer = models.make_optimizer(args.optimizer, ddp)
        inputs, targets = compute_phase.make_batch(bundle, args.batch, device)
        clock = Clock(device)
        times = []
        for i in range(args.warmup + args.steps):
            clock.sync()
            start = clock.mark()
            optimizer.zero_grad(set_to_none=True)
            with compute_phase.autocast(device, args.precision):
                loss = bundle.loss_fn(models.forward(ddp, inputs), targets)
            loss.backward()
            optimizer.step()
            end = clock.mark()
            if i >= args.warmup:
                times.append(clock.seconds(start, end))
        everyone: list = [None] * world
        dist.all_gather_object(everyone, times)
        dist.barrier()  # every rank has everything before any rank tears down
        if dist.get_rank() != 0:
            return None
        per_step_max = np.max(np.asarray(everyone, dtype=float), axis=0)
        return {
            "model": bundle.name, "params": models.parameter_count(bundle.model),
            "world_size": world, "local_world_size": local_world, "backend": backend,
            "device": device.type, "threads": torch.get_num_threads() if device.type == "cpu"
            else None, "micro_batch": args.batch, "precision": args.precision,
            "optimizer": args.optimizer, "bucket_mib": args.bucket_mib, "steps": args.steps,
            "warmup": args.warmup, "step_time_s": float(np.median(per_step_max)),
            "per_rank_median_s": [float(np.median(t)) for t in everyone],
            "per_step_max_s": [float(t) for t in per_step_max],
            "date_unix": time.time(),
        }
    finally:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        require_extra(("torch",))
        result = bench(args)
    except ScalesimError as exc:
        print(f"ddp_bench: error: {exc}", file=sys.stderr)
        return 2
    if result is not None:
        text = json.dumps(result, indent=2)
        if args.out:
            from scalesim.jsonio import atomic_write_text

            try:
                atomic_write_text(args.out, text + "\n")
            except ScalesimError as exc:
                print(f"ddp_bench: error: {exc}", file=sys.stderr)
                return 2
        print(text)
    return 0


if __name__ == "__main__":
    exit_calibration(main())
