"""A fit's starts and restarts solved in lockstep (``lockstep.solve_in_lockstep``) give the
solutions they give solved one after another, with fewer model calls (session 52)."""

from __future__ import annotations

import numpy as np
import pytest
from test_fit_restart import COMM_MEASURED

from scalesim import fit_runs as fr
from scalesim.lockstep import solve_in_lockstep
from scalesim.runs import runs_from_records


def _counted(problem):
    """``problem.residual_rows`` and a list that records the rows of each call."""
    calls = []

    def rows(x):
        calls.append(len(x))
        return problem.residual_rows(x)
    return rows, calls


def test_each_spread_start_solves_to_the_same_numbers_in_lockstep():
    problem = fr.fit_problem(runs_from_records(COMM_MEASURED, "synthetic"))
    starts = problem.spread_starts(fr.RESTART_POINTS)
    alone = [problem.solve(x0, max_nfev=fr.SCREEN_NFEV) for x0 in starts]
    rows, calls = _counted(problem)
    together = solve_in_lockstep(lambda x0, r: problem.solve(x0, fr.SCREEN_NFEV, r), rows, starts)
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(a.x, b.x)  # bit for bit, not close
        assert a.cost == b.cost and a.nfev == b.nfev and a.njev == b.njev
    evaluations = sum(s.nfev + s.njev for s in alone)  # one call each, solved one at a time
    assert len(calls) <= max(s.nfev + s.njev for s in alone) < evaluations / 4
    assert sum(calls) == sum(s.nfev + s.njev * (len(problem.free) + 1) for s in alone)


def test_the_first_failing_start_raises_as_it_would_alone():
    def solve(x0, rows):
        rows(np.array([[x0]]))
        if x0 >= 1:
            raise ValueError(f"start {x0}")
        return x0

    with pytest.raises(ValueError, match="start 1"):
        solve_in_lockstep(solve, lambda x: x * 2.0, [0.0, 1.0, 2.0])
    assert solve_in_lockstep(solve, lambda x: x * 2.0, [0.0, 0.5]) == [0.0, 0.5]
