"""Time of the traced pipeline's 1F1B replay and of the micro-batch fit (scalesim/pipeline_trace.py).

    python benchmarks/pipeline_replay.py [--repeats 3]

For p = 2 to 128 stages (uneven: a stage 1.5x the others): one replay at 512 micro-batches, and
the fit of the micro-batches to a span (the path taken where the traces neither annotate the
schedule nor name their receives). Prints the best of ``--repeats`` wall times, in milliseconds,
as a markdown table for docs/performance.md.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from scalesim.cli.main import OneLineParser
from scalesim.pipeline_trace import MOST_MICRO_BATCHES, fit_micro_batches, replay_1f1b_s


def best_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python benchmarks/pipeline_replay.py")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    print(f"| stages | replay at {MOST_MICRO_BATCHES} micro-batches, ms | fit of m, ms (m found) |")
    print("|---:|---:|---:|")
    for stages in (2, 8, 32, 64, 128):
        compute = np.ones(stages)
        compute[-1] = 1.5
        m = 24
        span = replay_1f1b_s(compute / m, m)
        replay = best_ms(lambda c=compute: replay_1f1b_s(c / MOST_MICRO_BATCHES,
                                                         MOST_MICRO_BATCHES), args.repeats)
        fit = best_ms(lambda c=compute, t=span: fit_micro_batches(c, t), args.repeats)
        print(f"| {stages} | {replay:.0f} | {fit:.0f} ({fit_micro_batches(compute, span)}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
