"""What the two-rank checks of the layout model share (``tp_check``, ``pp_check``): timing a call
on every rank at once, reducing every rank's rounds, the all-reduce link fit with its flat-times
reading, and the command line (its shared flags) that prints (and writes) the summary.

A calibration point is the median over ranks of each rank's value over rounds (as the compute
phase reads its ranks); a run step is, per round, the slower rank's time (a synchronous step
waits for it).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from scalesim.model.fit_error import relative_rmse


def timed(dist, fn: Callable[[], object], reps: int) -> float:
    """Seconds per call of ``fn`` over ``reps`` calls, started together after a barrier."""
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def gathered_rounds(dist, rounds: list[dict]) -> list[list[dict]] | None:
    """Every rank's ``rounds``, on rank 0 (None on the others); the process group ends here."""
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, rounds)
    rank = dist.get_rank()
    dist.destroy_process_group()
    return everyone if rank == 0 else None


def calibrated(everyone: list[list[dict]], key: str, over_rounds=np.median) -> float:
    """A calibration point: the median over ranks of each rank's ``over_rounds`` of ``key``."""
    return float(np.median([over_rounds([r[key] for r in rounds]) for rounds in everyone]))


def slowest(everyone: list[list[dict]], key: str) -> list[float]:
    """Per round, the slower rank's ``key`` (seconds)."""
    return [max(rounds[i][key] for rounds in everyone) for i in range(len(everyone[0]))]


def allreduce_link(sizes_bytes, times_s, ranks: int = 2) -> tuple[float, float, float]:
    """(latency_s, busbw_GBps, rel_rmse) of ring all-reduces of ``sizes_bytes`` on ``ranks``
    (``collectives.fit_alpha_beta``). Flat times (on an idle machine gloo's loopback all-reduce
    sits at a ~2 ms wake-up floor whatever its size) leave no bandwidth to fit: the bytes cost
    nothing measurable, so all latency at the largest bus bandwidth the bounds allow."""
    from scalesim.bounds import QUANTITIES
    from scalesim.model.collectives import fit_alpha_beta, step_and_volume

    try:
        return fit_alpha_beta("all_reduce", sizes_bytes, [ranks] * len(sizes_bytes), times_s)
    except ValueError:
        steps = float(step_and_volume("all_reduce", ranks)[0])  # 2(n-1) ring steps
        times = np.asarray(times_s, dtype=float)
        latency_s = float(np.median(times)) / steps
        rel_rmse = relative_rmse(latency_s * steps, times)
        return latency_s, QUANTITIES["busbw_GBps"].high, rel_rmse


def check_parser(module: str, description: str) -> argparse.ArgumentParser:
    """The command line of ``python -m scalesim.calibration.<module>`` with the flags both checks
    take: the activation's shape (``--hidden --seq --batch``), threads per rank and ``--out``."""
    p = argparse.ArgumentParser(prog=f"python -m scalesim.calibration.{module}",
                                description=description)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out")
    return p


def main(build_parser: Callable, worker: Callable, argv: list[str] | None = None) -> int:
    """Parse ``argv``, run ``worker`` on this rank; rank 0's summary (a dict) is printed as one
    JSON object and written to ``--out`` when given."""
    args = build_parser().parse_args(argv)
    result = worker(args)
    if result is not None:
        text = json.dumps(result)
        if args.out:
            from scalesim.jsonio import atomic_write_text

            atomic_write_text(args.out, text + "\n")
        print(text)
    return 0

