"""``select_first`` and ``quantiles`` stand in for ``np.select`` and ``scipy.stats`` to save
their per-call and import costs (docs/performance.md): each must give the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scalesim.model.select import select_first
from scalesim.quantiles import CHI2_95_ONE_DOF, chi2_quantile, student_t_quantile


def _random_case(rng):
    shape = [(), (1,), (3,), (2, 3)][rng.integers(0, 4)]
    n = int(rng.integers(1, 5))
    conditions = [rng.random(shape) < 0.4 for _ in range(n)]
    choices = [rng.random(shape) if rng.random() < 0.5 else float(rng.integers(0, 4))
               for _ in range(n)]
    default = rng.random(shape) if rng.random() < 0.5 else int(rng.integers(0, 3))
    return conditions, choices, default


def test_select_first_is_np_select_bit_for_bit():
    rng = np.random.default_rng(55)
    for _ in range(500):
        conditions, choices, default = _random_case(rng)
        want = np.select(conditions, choices, default)
        got = select_first(conditions, choices, default)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


def test_select_first_takes_the_first_condition_that_holds():
    picked = select_first([np.array([True, False, False]), np.array([True, True, False])],
                          [1.0, 2.0], default=9.0)
    assert picked.tolist() == [1.0, 2.0, 9.0]
    integers = select_first([np.array([False, True])], [np.array([4, 5])])
    assert integers.dtype == np.array([4]).dtype and integers.tolist() == [0, 5]


def test_select_first_refuses_unpaired_lists():
    with pytest.raises(ValueError, match="as many conditions as choices"):
        select_first([np.array([True])], [1.0, 2.0])


@pytest.mark.parametrize("dof", [1, 2, 3, 5, 8, 13, 40, 200])
def test_quantiles_are_scipy_stats_bit_for_bit(dof):
    for p in (0.5, 0.9, 0.95, 0.975):
        assert chi2_quantile(p, dof) == float(stats.chi2.ppf(p, dof))
        assert student_t_quantile(p, dof) == float(stats.t.ppf(p, dof))


def test_the_one_parameter_bound_is_the_textbook_3_841():
    assert pytest.approx(3.841459, abs=1e-6) == CHI2_95_ONE_DOF


def test_the_diagnose_command_does_not_load_scipy_stats():
    """Its import took about half a second of each diagnosis (docs/performance.md)."""
    import subprocess
    import sys

    code = ("import sys, scalesim.cli.main, scalesim.runs_diagnosis, scalesim.trace_diagnosis; "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
