"""The figures docs/performance.md records for ``benchmarks/goal_layouts.py`` (session 43: goal
for llama3-8b at its default device range, ``--layout search`` against ``given``) are what the
benchmark's own what-if gives: the counts, the plans evaluated and fitting, the layouts the
planner tried (session 44: with the layouts refined near the answer), and that search costs
more of the same work than given. No time is asserted
(the timings are the benchmark's, on a loaded machine)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES
from scalesim.goal import device_grid, seek
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("goal_layouts_bench",
                                              ROOT / "benchmarks" / "goal_layouts.py")
BENCH = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(BENCH)


def test_the_recorded_figures_are_the_benchmarks_what_if():
    section = (ROOT / "docs" / "performance.md").read_text().split(
        "## Goal's layouts searched against given (session 43)")[1]
    profile = resolve_profile(None, None, "llama3-8b")
    base = Scenario(train_samples=1e9, price_per_device_hour=3.0)
    grid = device_grid(profile.hardware.devices_per_node, GOAL_DEFAULT_MAX_DEVICES)
    given, search = (seek(profile, base, BENCH.DEADLINE_S, BENCH.BUDGET_USD,
                          GOAL_DEFAULT_MAX_DEVICES, layout=m) for m in ("given", "search"))
    assert (profile.hardware.name, len(grid)) == ("a2-highgpu-8g", 131)
    assert f"{len(grid)} counts" in section and profile.hardware.name in section
    assert f"| {given.evaluated:,} | {given.runnable:,} | - |" in section
    # search as it is now (session 44: refined near the answer), the table's "after" figures
    assert all(f"→ {n:,} |" in section
               for n in (search.evaluated, search.runnable, search.layouts_tried))
    assert given.runnable == 0 and given.closest is None  # nothing fits data parallel
    assert search.closest is not None and f"on {search.closest.devices} GPUs" in section
    # search does given's kind of work (a sweep of about as many plans) plus the planner's
    assert search.layouts_tried > 100 * search.evaluated
