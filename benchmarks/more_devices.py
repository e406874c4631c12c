"""Benchmark: decide's "add devices" search where nothing fits at any count (its worst case).

Run: python benchmarks/more_devices.py  (pins itself to one core; prints a markdown table).
Times ``scalesim.decision.decide`` for gpt-76.1b on one A100 40GB (the default profile's
a2-highgpu-8g) with the device memory cut to 1 GiB, so that no layout fits at any doubling
and the search runs all 20 doublings to the device-count bound (2**20): at each, the planner's
vectorised search of every layout (``layout_predict.plan_at``). Best of N after one warm-up;
the 40 GiB case (stops at 32 devices) is timed alike for comparison.
"""

from __future__ import annotations

import os
import platform
import sys
import time

from scalesim.cli.main import OneLineParser
from scalesim.decision import decide
from scalesim.figures import GIB_BYTES
from scalesim.profiles import default_profile, load_workload
from scalesim.schemas import Scenario

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: one_core

from one_core import pin_to_one_core  # noqa: E402


def _time(profile, repeats: int) -> tuple[float, str]:
    decide(profile, Scenario(devices=[1]), 1)  # warm-up: imports, caches
    best, rec = float("inf"), ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        rec = decide(profile, Scenario(devices=[1]), 1).recommendation
        best = min(best, time.perf_counter() - t0)
    return best, rec


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pin_to_one_core()
    profile = default_profile().model_copy(update={"workload": load_workload("gpt-76.1b")})
    tiny = profile.model_copy(
        update={"hardware": profile.hardware.model_copy(update={"device_memory_bytes": GIB_BYTES})}
    )
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, one core\n")
    print("| case | decide, best of N (s) | recommendation starts |")
    print("|---|---:|---|")
    for name, prof in (("40 GiB: fits at 32 devices", profile), ("1 GiB: nothing fits up to 2**20", tiny)):
        s, rec = _time(prof, args.repeats)
        print(f"| {name} | {s:.2f} | {rec[:60]}... |")


if __name__ == "__main__":
    main()
