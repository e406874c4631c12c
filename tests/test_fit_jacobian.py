"""The diagnose fit's forward-difference steps (fit_runs._forward_steps), by hand.

The fit evaluates its Jacobian's columns in one broadcast model call, with the steps scipy's
least_squares would take for '2-point' differences at ``diff_step`` 1e-4 (approx_derivative's
rules): ``1e-4 * |x|`` signed as ``x``; ``sqrt(eps) * max(1, |x|)`` where that rounds to no step;
reversed where the step would leave the bounds; the distance to the farther bound where neither
direction has room.
"""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.fit_runs import _forward_steps, fit_runs
from scalesim.runs import runs_from_records


def test_steps_follow_the_forward_difference_rules():
    lo = np.array([-10.0, 0.0, 0.0, 0.0, -1.0])
    hi = np.array([10.0, 1.0, 1.0, 1.0, 1.0])
    x = np.array([-2.0, 0.5, 1.0, 0.0, 1.0])
    steps = _forward_steps(x, lo, hi)
    assert steps[0] == pytest.approx(-2e-4)  # signed as x
    assert steps[1] == pytest.approx(5e-5)
    assert steps[2] == pytest.approx(-1e-4)  # at the upper bound: turned back
    assert steps[3] == pytest.approx(np.sqrt(np.finfo(float).eps))  # x = 0: no relative step
    assert steps[4] == pytest.approx(-1e-4)
    # a bound closer than the step on both sides: the distance to the farther one
    tight = _forward_steps(np.array([5.0]), np.array([5.0 - 1e-5]), np.array([5.0 + 2e-5]))
    assert tight[0] == pytest.approx(2e-5)


def test_the_fit_recovers_the_runs_it_was_made_from():
    """Runs made by a 40 ms + 0.5 ms/sample compute curve, perfect scaling: the fit gives the
    curve back (several per-device batches separate the overhead)."""
    rows = [{"devices": d, "nodes": 1, "per_device_batch": b, "accumulation": 1,
             "step_time_s": 0.04 + 0.0005 * b} for d, b in ((1, 32), (2, 256), (4, 64), (8, 128))]
    fit = fit_runs(runs_from_records(rows, "made"))
    assert fit.values["per_sample_s"] == pytest.approx(0.0005, rel=0.02)
    assert fit.values["overhead_s"] == pytest.approx(0.04, rel=0.05)
    assert np.max(np.abs(fit.residuals_rel)) < 0.01
