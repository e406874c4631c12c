"""The diagnose fit leaves a local minimum its two starts stop in.

Session 23: on 225 synthetic fits (runs made by the model from seven parameters drawn at
random), the fit's two starts stopped in a local minimum 10 times, eight of them with residuals
of 1.5-5.5 % where the true parameters leave none (``python benchmarks/fit_restart.py``).
``FitProblem.best_solution`` restarts from spread points where the two starts leave the
residuals above ``RESTART_RMS``. The runs below are two of those fits (model-made, rounded to
the microsecond).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scalesim import fit_runs as fr
from scalesim.runs import runs_from_records


def _strong(step_s, comm_s=None):
    devices = [1, 2, 4, 8, 16, 32]
    rows = []
    for i, p in enumerate(devices):
        row = {"devices": p, "nodes": max(p // 8, 1), "step_time_s": step_s[i],
               "per_device_batch": 256 / p, "accumulation": 1}
        if comm_s is not None:
            row["comm_s"] = comm_s[i]
        rows.append(row)
    return rows


# per-sample 3.39 ms, overhead 2.87 ms, intra / inter transfer 66 / 105 ms, overlap 0.96,
# jitter 2.6 %, loader 4,212 samples/s per server; exposed communication measured
COMM_MEASURED = _strong([0.871211, 0.447274, 0.232423, 0.162087, 0.156535, 0.2159],
                        [0.0, 0.003941, 0.00669, 0.046629, 0.096823, 0.184314])
# per-sample 46.9 ms, overhead 255 ms, intra / inter transfer 47 / 54 ms, overlap 0.22,
# jitter 9.8 %, loader 117 samples/s per server: step times only
STEPS_ONLY = _strong([12.265622, 6.641557, 3.63966, 2.181067, 1.25198, 0.839409])


def test_the_restart_finds_the_fit_the_two_starts_miss():
    runs = runs_from_records(COMM_MEASURED, "synthetic")
    problem = fr.fit_problem(runs)
    two_starts = min((problem.solve(x0) for x0 in problem.starts), key=lambda s: s.cost)
    assert problem.data_rms(two_starts.fun) > fr.RESTART_RMS  # the case still needs the restart
    fit = fr.fit_runs(runs)
    # the runs are the model's own: the fit leaves them within 0.5 % (rounding and priors)
    assert np.max(np.abs(fit.residuals_rel)) < 0.005
    assert problem.cost(fit.x) < 0.5 * two_starts.cost


def test_the_restart_leaves_a_local_minimum_of_step_times_only():
    """Step times only: where the two starts stop depends on the machine's floating point (1.1 %
    residuals on session 23's machine, a local minimum the restart left; 0.95 % on session 34's,
    under the 1 % trigger, near the optimum's cost), so the local minimum is entered on purpose:
    from the spread point whose own solve stops worst (residuals far above 1 %), the restart
    finds a fit within 0.5 % of every run the model made."""
    runs = runs_from_records(STEPS_ONLY, "synthetic")
    problem = fr.fit_problem(runs)
    starts = problem.spread_starts()  # solved in lockstep: the same solutions as one by one
    solved = list(zip(problem.solve_all(starts), starts, strict=True))
    stuck, start = max(solved, key=lambda s: problem.data_rms(s[0].fun))
    assert problem.data_rms(stuck.fun) > 5 * fr.RESTART_RMS  # a local minimum, far from the truth
    from_there = replace(problem, starts=[start])
    best = from_there.best_solution()
    assert np.max(np.abs(best.fun[: problem.n_data])) < 0.005
    assert best.cost < 0.1 * stuck.cost


def test_spread_starts_cover_the_bounds_one_point_per_slice():
    runs = runs_from_records(STEPS_ONLY, "synthetic")
    problem = fr.fit_problem(runs)
    pts = problem.spread_starts(8)
    assert pts.shape == (8, len(problem.free))
    cell = np.floor((pts - problem.lower) / (problem.upper - problem.lower) * 8).astype(int)
    for j in range(len(problem.free)):  # each parameter's range: every eighth holds one point
        assert sorted(cell[:, j]) == list(range(8))
    np.testing.assert_array_equal(pts, problem.spread_starts(8))  # the same every time


def test_a_fit_that_explains_its_runs_does_not_restart(monkeypatch):
    runs = runs_from_records(STEPS_ONLY, "synthetic")
    problem = fr.fit_problem(runs)
    calls = []
    monkeypatch.setattr(fr.FitProblem, "spread_starts", lambda self, m: calls.append(m) or [])
    monkeypatch.setattr(fr, "RESTART_RMS", 1.0)  # any residual is small enough
    problem.best_solution()
    assert calls == []
    monkeypatch.setattr(fr, "RESTART_RMS", 0.0)
    problem.best_solution()
    assert calls == [fr.RESTART_POINTS]
