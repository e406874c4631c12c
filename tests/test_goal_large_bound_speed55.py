"""Goal at a large device bound (session 55): the work that grew with the number of device counts
searched, done once per distinct value, with the same numbers (docs/performance.md, "Goal at a
large device bound")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr

from scalesim.errors import ScalesimError
from scalesim.model import stragglers
from scalesim.model.memory import STRATEGIES
from scalesim.sweep import _codes, _grad_sync_refused_rows


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


def test_codes_of_a_column_are_each_name_s_code():
    column = np.array(["zero3", "ddp", "zero1", "ddp"])
    assert _codes(column, STRATEGIES, "strategy").tolist() == \
        [STRATEGIES["zero3"], STRATEGIES["ddp"], STRATEGIES["zero1"], STRATEGIES["ddp"]]


def test_codes_refuse_the_first_unknown_name_in_order():
    with pytest.raises(ScalesimError, match="^unknown strategy 'fsdp'; choose from ddp"):
        _codes(np.array(["ddp", "zero9", "fsdp"]), STRATEGIES, "strategy")


def test_a_scenario_s_one_framework_refuses_its_rows_as_a_column_did():
    """DeepSpeed with once-per-step syncs is refused on every row; a swept grad_sync on its own
    rows; the scenario's value compared as one value, not a column of it."""

    class Base:
        zero_framework, grad_sync = "deepspeed", "once-per-step"

    p = np.array([8, 16, 32])
    assert _grad_sync_refused_rows(Base, {}, p).tolist() == [True, True, True]
    syncs = np.array(["every-micro-step", "once-per-step", "every-micro-step"])
    assert _grad_sync_refused_rows(Base, {"grad_sync": syncs}, p).tolist() == [False, True, False]
    frameworks = np.array(["deepspeed", "fsdp", "fsdp"])
    assert _grad_sync_refused_rows(Base, {"zero_framework": frameworks}, p).tolist() == \
        [True, False, False]
