"""Session 22: two checks that ran value by value in Python now run at array speed, with the same
answers. A sweep's bound check of its million device counts (``bounds.check_values``) took 2 of
its 3 s; the planner's split lookup (``pipeline_stages.stage_layers``) sorted 137,130 rows as
records, 1 of its 1.3 s (docs/performance.md, "Re-measured in session 22")."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.bounds import QUANTITIES, bound, check_values
from scalesim.errors import ScalesimError
from scalesim.pipeline_stages import _split_stages, _unique_rows, stage_layers

ODD = [0, 0.5, 1, 2, -1, -0.0, 1e-5, 1e-4, 1e-9, 3.7, np.nan, np.inf, -np.inf, 2**20, 2**40,
       2**53, 1e300, 4096, 4097, 1e6, 1e7]


@pytest.mark.parametrize("quantity", list(QUANTITIES))
def test_the_array_check_allows_what_the_value_check_allows(quantity):
    b = bound(quantity)
    for value in ODD:
        for dtype in (float, np.int64):
            if dtype is np.int64 and not (np.isfinite(value) and value == int(value) and abs(value) < 2**62):
                continue
            array = np.array([value], dtype=dtype)
            assert b.allows(array) == (b.problem(array[0]) is None), (value, dtype)


def test_a_bad_value_in_a_numpy_array_is_refused_in_the_same_words_as_in_a_list():
    for bad, words in [(0, "0 is outside 1 <= x"), (1.5, "1.5 is not a whole number"),
                       (np.nan, "is not a whole number")]:
        values = [1, 2, bad, 8]
        with pytest.raises(ScalesimError) as from_list:
            check_values("devices", values, "devices")
        with pytest.raises(ScalesimError) as from_array:
            check_values("devices", np.array(values, dtype=float), "devices")
        assert str(from_list.value) == str(from_array.value)
        assert words in str(from_array.value)
    good = np.arange(1, 1025, dtype=float)
    assert check_values("devices", good, "devices").dtype == np.int64


def test_unique_rows_numbers_rows_as_numpy_unique_does():
    rng = np.random.default_rng(0)
    for rows, high in [(1, 1), (7, 3), (5000, 9), (20000, 10**6), (3000, 2**40)]:
        keys = rng.integers(0, high, size=(rows, 4)).astype(np.int64)
        unique, inverse = _unique_rows(keys)
        assert np.array_equal(unique[inverse], keys)
        assert len(unique) == len(np.unique(keys, axis=0))


def test_stage_layers_on_a_grid_read_the_split_of_each_row():
    layers = np.array([126, 32, 80, 96, 126, 7])
    pp = np.array([64, 13, 4, 8, 8, 3])
    v = np.array([1, 1, 2, 3, 8, 1])
    for stage in (0, 1, 2):
        got = stage_layers(layers, pp, v, stage)
        want = [_split_stages(n, p, k)[stage] for n, p, k in zip(layers, pp, v, strict=True)]
        assert got.tolist() == want
    assert stage_layers(layers, pp, v, pp - 1).tolist() == [
        _split_stages(n, p, k)[-1] for n, p, k in zip(layers, pp, v, strict=True)
    ]
