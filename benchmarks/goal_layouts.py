"""Benchmark: goal's time with its layouts searched against given (``goal --layout``).

Run: python benchmarks/goal_layouts.py  (pins itself to one core; prints a markdown table).
Times ``scalesim.goal.seek`` for llama3-8b on its default hardware (the default profile's
a2-highgpu-8g, eight A100 40GB a server) at goal's default device range (up to 1,024 devices,
``bounds.GOAL_DEFAULT_MAX_DEVICES``: 131 counts), 1e9 samples at $3 a GPU-hour within 30 days
and $1,000,000, in each mode: ``given`` (data parallel: one sweep of the grid, nothing fits on
40 GB) and ``search`` (the planner's best layout at each count, ``goal_layouts.searched_groups``,
then goal's sweep around each, then the layouts re-searched at the batches goal tries at the
counts near the answer, ``goal._refined``), and ``search`` with that refinement turned off (as
before session 44). The search's planner calls are timed apart. Best of N after one warm-up of
each.
"""

from __future__ import annotations

import os
import platform
import sys
import time

import scalesim.goal as goal_module
from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES
from scalesim.cli.main import OneLineParser
from scalesim.goal import device_grid, seek
from scalesim.goal_layouts import searched_groups
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: one_core

from one_core import pin_to_one_core  # noqa: E402

DEADLINE_S, BUDGET_USD = 30 * 86400.0, 1e6


def _best(call, repeats: int) -> tuple[float, float, object]:
    """(best wall-clock s, best CPU s of this process, the last answer): the CPU time is what
    a loaded machine's other work does not add to."""
    out = call()  # warm-up: imports, caches
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = call()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu, out


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    # another what-if (session 44: dgx-h100, 2e7 samples, $4, 3 days, $200,000 refines 4 counts)
    parser.add_argument("--hardware", default=None, help="default: the workload's")
    parser.add_argument("--train-samples", type=float, default=1e9)
    parser.add_argument("--price", type=float, default=3.0, help="USD per device-hour")
    parser.add_argument("--deadline-days", type=float, default=DEADLINE_S / 86400)
    parser.add_argument("--budget", type=float, default=BUDGET_USD, help="USD")
    args = parser.parse_args()
    pin_to_one_core()
    profile = resolve_profile(None, args.hardware, "llama3-8b")
    base = Scenario(train_samples=args.train_samples, price_per_device_hour=args.price)
    deadline_s, budget_usd = args.deadline_days * 86400, args.budget
    g = profile.hardware.devices_per_node
    grid = device_grid(g, GOAL_DEFAULT_MAX_DEVICES)
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"one core; {profile.hardware.name}, {len(grid)} device counts up to "
          f"{GOAL_DEFAULT_MAX_DEVICES:,}\n")
    print(f"| goal --layout | seek, best of {args.repeats}: wall / CPU (s) | plans evaluated | "
          "fit | layouts the planner tried | answer starts |")
    print("|---|---:|---:|---:|---:|---|")
    times = {}
    refine = goal_module._refined
    for mode, refined in (("given", True), ("search", False), ("search", True)):
        goal_module._refined = refine if refined else (lambda *a: None)
        wall, cpu, answer = _best(lambda m=mode: seek(profile, base, deadline_s, budget_usd,
                                                      GOAL_DEFAULT_MAX_DEVICES, layout=m),
                                  args.repeats)
        goal_module._refined = refine
        times[mode if refined else "unrefined"] = cpu
        mode = mode if refined else "search, not refined"
        tried = "-" if answer.layouts_tried is None else f"{answer.layouts_tried:,}"
        print(f"| {mode} | {wall:.2f} / {cpu:.2f} | {answer.evaluated:,} | {answer.runnable:,} | "
              f"{tried} | {answer.sentence[:50]}... |")
    reference = (profile.workload.micro_batch or 1) * g * base.accumulation
    wall, cpu, found = _best(lambda: searched_groups(profile, base, grid, reference, g,
                                             lambda row: ([row.micro_batch],
                                                          [row.accumulation], ("ddp",))),
                             args.repeats)
    print(f"\nsearch / given (CPU): {times['search'] / times['given']:.1f}x; refined / not refined "
          f"(CPU): {times['search'] / times['unrefined']:.2f}x; of search's time, "
          f"the planner's {len(grid)} calls (searched_groups) {wall:.2f} / {cpu:.2f} s "
          f"({found.layouts_tried:,} layouts, {len(found.groups)} layout groups)")


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
