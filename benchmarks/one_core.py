"""One core for a benchmark: the timings the benchmarks print are of one core, whatever else the
machine runs (``pin_to_one_core``, called by each benchmark that says it pins itself)."""

from __future__ import annotations

import os


def pin_to_one_core() -> None:
    """Run this process on the lowest-numbered core it may use; nothing where the platform has
    no affinity call (macOS, Windows)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
