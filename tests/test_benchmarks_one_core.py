"""The benchmarks that say they pin themselves to one core do it through one helper,
``benchmarks/one_core.pin_to_one_core`` (five of them had written the same two lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PINNED = sorted(p for p in BENCHMARKS.glob("*.py") if "pins itself to one core" in p.read_text())


def test_five_benchmarks_say_they_pin_themselves():
    assert [p.stem for p in PINNED] == ["goal_layouts", "model_sweep", "more_devices", "plan_search",
                                        "stage_split"]


@pytest.mark.parametrize("path", PINNED, ids=lambda p: p.stem)
def test_each_pins_through_the_helper_and_nothing_else(path):
    text = path.read_text()
    assert "pin_to_one_core()" in text and "sched_setaffinity" not in text


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity call on this platform")
def test_the_helper_leaves_a_process_on_its_lowest_core():
    """In a child process (the test's own process keeps its cores): one core, the lowest of those
    it was allowed."""
    code = ("import os, one_core; print(min(os.sched_getaffinity(0))); one_core.pin_to_one_core(); "
            "print(*sorted(os.sched_getaffinity(0)))")
    lowest, after = subprocess.run([sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True,
                                   text=True, check=True).stdout.splitlines()
    assert after == lowest
