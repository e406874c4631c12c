"""Benchmark: the layout planner over 1 to 4,096 GPUs vs the scalar path.

Run: python benchmarks/plan_search.py  (pins itself to one core; prints a markdown table).
Times ``scalesim.plan.plan`` searching every valid layout (dp x tp x pp, ZeRO stage,
micro-batch, schedule and virtual stages, recompute, sequence parallelism) of one workload for
the 13 device counts 1, 2, 4, ..., 4096 in one vectorised call (best of N, after one warm-up
that pays the imports), then evaluates a sample of the same layouts one at a time through the
scalar path (``plan.evaluate_layout``: checked ``ParallelLayout`` -> ``evaluate_layouts`` on
scalars), checking each equals the vectorised value, for the per-layout comparison. Also times
the plan of every row (``top=None, include_unfit=True``: a ``PlanRow`` a layout, with its words
and why; best of ``--full-repeats``).
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np

from scalesim.cli.main import OneLineParser
from scalesim.plan import RECOMPUTE_CHOICES, Setting, candidate_grid, evaluate_layout, plan
from scalesim.presets import HARDWARE, TRANSFORMERS, get_transformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: one_core

from one_core import pin_to_one_core  # noqa: E402

DEVICES = [2**k for k in range(13)]  # 1 .. 4096


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--model", default="gpt-145.6b", choices=list(TRANSFORMERS))
    parser.add_argument("--hardware", default="dgx-a100", choices=list(HARDWARE))
    parser.add_argument("--global-batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scalar-samples", type=int, default=2000)
    parser.add_argument("--full-repeats", type=int, default=1)
    args = parser.parse_args()
    pin_to_one_core()
    shape, hw = get_transformer(args.model), HARDWARE[args.hardware]
    setting = Setting(shape, hw, args.global_batch)

    t0 = time.perf_counter()
    plan(shape, hw, DEVICES, args.global_batch, top=10)  # warm-up: imports, quadrature cache
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        rows = plan(shape, hw, DEVICES, args.global_batch, top=10)
        times.append(time.perf_counter() - t0)
    grid = candidate_grid(DEVICES, setting)
    n_layouts = grid["dp"].size
    full_times = []
    for _ in range(args.full_repeats):
        t0 = time.perf_counter()
        full = plan(shape, hw, DEVICES, args.global_batch, top=None, include_unfit=True)
        full_times.append(time.perf_counter() - t0)

    rng = np.random.default_rng(0)
    sample = rng.choice(len(full), size=min(args.scalar_samples, len(full)), replace=False)
    t0 = time.perf_counter()
    for i in sample:
        row = full[i]
        layout = row.layout(args.global_batch)  # its shard group too (hybrid sharding rows)
        res = evaluate_layout(setting, layout)
        if not np.isclose(float(res.step_time_s), row.step_time_s, rtol=1e-9):
            raise SystemExit(f"scalar and vectorised disagree on {layout}")
    scalar_per_s = len(sample) / (time.perf_counter() - t0)
    best = min(times)
    print(f"machine: {platform.machine()}, python {platform.python_version()}, one core; "
          f"model {args.model} on {args.hardware}, global batch {args.global_batch}, devices "
          f"1-4096 (13 counts); recompute choices {', '.join(RECOMPUTE_CHOICES)}")
    print("| valid layouts | first call (s) | best of "
          f"{args.repeats} (s) | layouts/s | scalar path layouts/s | scalar time for all (s) "
          "| speed-up per layout |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {n_layouts:,} | {first:.2f} | {best:.3f} | {n_layouts / best:,.0f} | "
          f"{scalar_per_s:,.0f} | {n_layouts / scalar_per_s:,.0f} | "
          f"{n_layouts / best / scalar_per_s:,.0f}x |")
    print(f"every row (top=None, include_unfit=True): {len(full):,} rows, best of "
          f"{args.full_repeats} {min(full_times):.2f} s")
    print(f"best layout: {rows[0].devices} GPUs dp {rows[0].dp} tp {rows[0].tp} pp {rows[0].pp} "
          f"zero {rows[0].zero} mb {rows[0].micro_batch} {rows[0].schedule}/"
          f"{rows[0].virtual_stages} {rows[0].recompute} sp {rows[0].sequence_parallel}")


if __name__ == "__main__":
    main()
