"""Goal at a large device bound (session 55): the work that grew with the number of device counts
searched, done once per distinct value, with the same numbers (docs/performance.md, "Goal at a
large device bound")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr

from scalesim.model import stragglers


def _quadrature_as_before(n: int, shift: float) -> float:
    """The quadrature as written before session 55: its own grid and both log-CDFs per call."""
    lo, hi = -stragglers._GRID_HALF_WIDTH, stragglers._GRID_HALF_WIDTH + max(shift, 0.0)
    x = np.linspace(lo, hi, stragglers._GRID_POINTS)
    cdf = np.exp(log_ndtr(x - shift) + (n - 1) * log_ndtr(x))
    return float(hi * cdf[-1] - lo * cdf[0] - np.trapezoid(cdf, x))


@pytest.mark.parametrize("shift", [0.0, 0.001, 0.5, 39.999])
def test_the_shared_grid_integrates_to_the_same_bits(shift):
    counts = [2, 3, 8, 1000, 65536, 1048576]
    stragglers._expected_max_units.cache_clear()
    assert [stragglers._expected_max_units(n, shift) for n in counts] == \
        [_quadrature_as_before(n, shift) for n in counts]


def test_each_shift_computes_its_grid_once(monkeypatch):
    """2,006 device counts at one shift (goal --max-devices 1048576) built one grid, not 2,006."""
    stragglers._expected_max_units.cache_clear()
    stragglers._quadrature_grid.cache_clear()
    waits = stragglers.expected_max_normal(np.arange(2, 102))
    info = stragglers._quadrature_grid.cache_info()
    assert (info.misses, info.hits) == (1, 99)
    assert waits[0] == pytest.approx(1 / np.sqrt(np.pi), abs=1e-7)  # e_2 = 1/sqrt(pi)
    x = stragglers._quadrature_grid(0.0)[2]
    with pytest.raises(ValueError):  # shared between calls: nobody may write into it
        x[0] = 1.0
