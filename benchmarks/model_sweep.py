"""Benchmark: a sweep of >= 1,000,000 scenarios in one vectorised call vs the scalar path.

Run: python benchmarks/model_sweep.py  (pins itself to one core; prints a markdown table).
Reports scenarios per second of the vectorised sweep, its peak extra memory, and the per-scenario
speed-up over evaluating the same model one scenario at a time in a Python loop.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import tracemalloc

import numpy as np

from scalesim.cli.main import OneLineParser
from scalesim.model.step import evaluate_scaling
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario
from scalesim.sweep import sweep

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: one_core

from one_core import pin_to_one_core  # noqa: E402

DEVICES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
AXES = {
    "micro_batch": [8, 16, 32, 64, 128],
    "accumulation": [1, 2, 4, 8],
    "strategy": ["ddp", "zero1", "zero2", "zero3"],
    "overlap": [True, False],
}


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--bandwidths", type=int, default=600, help="inter busbw values (grid)")
    parser.add_argument("--scalar-samples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pin_to_one_core()

    profile = default_profile()
    base = Scenario(devices=DEVICES)
    axes = dict(AXES, inter_busbw_GBps=list(np.linspace(5.0, 400.0, args.bandwidths)))

    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = sweep(profile, base, axes)
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    sweep(profile, base, axes)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = result.size

    # The scalar path: the same model, one scenario per call, in a Python loop.
    rng = np.random.default_rng(0)
    idx = rng.choice(n, size=min(args.scalar_samples, n), replace=False)
    from scalesim.predict import scenario_inputs

    inputs, _ = scenario_inputs(profile, Scenario(devices=[1]))
    cols = result.columns
    from scalesim.model.collectives import ALGORITHMS  # noqa: F401  (codes are the same)
    from scalesim.model.memory import STRATEGIES

    start = time.perf_counter()
    for i in idx:
        p = int(cols["devices"][i])
        one = inputs.replace(
            devices=p, devices_per_node=min(p, 8), micro_batch=int(cols["micro_batch"][i]),
            accumulation=int(cols["accumulation"][i]),
            strategy=STRATEGIES[str(cols["strategy"][i])], overlap=bool(cols["overlap"][i]),
            inter_busbw_GBps=float(cols["inter_busbw_GBps"][i]),
        )
        r, _, eff = evaluate_scaling(one)
        assert abs(r.step_time_s.item() - cols["step_time_s"][i]) <= 1e-9 * cols["step_time_s"][i]
    scalar_per_s = len(idx) / (time.perf_counter() - start)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
          "(pinned to one), numpy " + np.__version__)
    print(f"| scenarios | best of {args.repeats} (s) | scenarios/s | peak extra memory (MiB) | "
          "scalar loop scenarios/s | speed-up per scenario |")
    print("|---|---|---|---|---|---|")
    print(f"| {n:,} | {best:.3f} | {n / best:,.0f} | {peak / 2**20:,.0f} | {scalar_per_s:,.0f} | "
          f"{n / best / scalar_per_s:,.0f}x |")


if __name__ == "__main__":
    main()
