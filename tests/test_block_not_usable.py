"""A calibration whose --block-hidden timings could not be fitted says so when it ends, and the
planner's refusal of that profile quotes why instead of asking for the --block-hidden the user
gave (session 18: a newcomer ran docs/calibration.md's CPU example on a loaded machine)."""

from __future__ import annotations

import pytest

from scalesim.errors import ScalesimError
from scalesim.plan import calibrated_hardware
from scalesim.profiles import default_profile
from scalesim.schemas import BLOCK_NOT_USABLE

WHY = "the block timings do not follow the matmul work: time larger blocks on an idle machine"


def _cpu_profile(notes: list[str]):
    base = default_profile()
    hardware = base.hardware.model_copy(
        update={"device_name": "CPU: test", "peak_tflops": None, "memory_bandwidth_GBps": None}
    )
    return base.model_copy(update={"hardware": hardware, "model_parallel": None, "notes": notes})


def test_plan_quotes_why_the_block_calibration_was_not_usable():
    note = f"{BLOCK_NOT_USABLE}: {WHY}; measured (ms): tp 1: 942, tp 2: 1.15e+03"
    with pytest.raises(ScalesimError) as info:
        calibrated_hardware(_cpu_profile([note]))
    text = str(info.value)
    assert "could not be fitted: " + WHY in text
    assert "calibrate with --block-hidden" not in text and "measured (ms)" not in text


def test_without_a_block_calibration_plan_still_asks_for_one():
    with pytest.raises(ScalesimError, match="calibrate with --block-hidden H"):
        calibrated_hardware(_cpu_profile([]))


def test_the_calibration_ends_by_saying_the_block_was_not_usable():
    pytest.importorskip("torch")
    from scalesim.calibration.summary import block_not_usable_lines

    note = f"{BLOCK_NOT_USABLE}: {WHY}; measured (ms): tp 1: 942"
    profile = _cpu_profile(["calibrated with 1 process(es)", note])
    assert block_not_usable_lines(profile, "scalesim calibration") == [f"scalesim calibration: note: {note}"]
    assert block_not_usable_lines(_cpu_profile(["calibrated with 1 process(es)"]), "x") == []
