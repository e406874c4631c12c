"""The bucket timeline: worked on paper, and vectorised vs plain loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalesim.model.overlap import (
    bucket_layout,
    bucket_times,
    prefetch_end,
    prefetch_end_scalar,
    serial_comm_s,
    timeline_end,
    timeline_end_scalar,
)


def _affine(a, c):
    return lambda size: np.where(np.asarray(size) > 0, a + c * np.asarray(size, dtype=float), 0.0)


def _end(duration, total, bucket, first, comm):
    b = bucket_layout(total, bucket, first)
    return timeline_end(duration, b, bucket_times(b, comm))


def test_two_bucket_timeline_on_paper():
    # 100 bytes in two buckets (first 40, then 60) over a 10 s backward; comm 0.1 s per byte.
    # bucket 1 ready at 4 s, runs 4 s -> ends 8 s; bucket 2 ready at 10 s, runs 6 s -> ends 16 s.
    comm = _affine(0.0, 0.1)
    assert _end(10.0, 100.0, 60.0, 40.0, comm) == pytest.approx(16.0)
    # Slower link (0.3 s/byte): bucket 1 ends 4 + 12 = 16; bucket 2 waits for it: 16 + 18 = 34.
    assert _end(10.0, 100.0, 60.0, 40.0, _affine(0.0, 0.3)) == pytest.approx(34.0)


def test_serial_is_sum_of_buckets():
    b = bucket_layout(100.0, 30.0, 10.0)  # 10 + 30 + 30 + 30
    assert serial_comm_s(b, bucket_times(b, _affine(1.0, 0.0))) == pytest.approx(4.0)


@settings(max_examples=200, deadline=None)
@given(
    duration=st.floats(0.0, 10.0),
    total=st.floats(1.0, 1e4),
    bucket=st.floats(1.0, 5e3),
    first=st.floats(0.0, 2e3),
    a=st.floats(0.0, 1.0),
    c=st.floats(0.0, 1e-2),
)
def test_vectorised_timeline_matches_loop(duration, total, bucket, first, a, c):
    comm = _affine(a, c)
    fast = float(_end(duration, total, bucket, first, comm))
    slow = timeline_end_scalar(duration, total, bucket, first, comm)
    assert fast == pytest.approx(slow, rel=1e-9, abs=1e-9)
    b = bucket_layout(total, bucket, first)
    fast_pf = float(prefetch_end(duration, b, bucket_times(b, comm)))
    assert fast_pf == pytest.approx(prefetch_end_scalar(duration, total, bucket, first, comm),
                                    rel=1e-9, abs=1e-9)


def test_timeline_is_never_shorter_than_backward_or_last_bucket():
    ends = _end(np.array([0.0, 1.0, 5.0]), 1e3, 100.0, 10.0, _affine(0.0, 1e-3))
    assert np.all(ends >= np.array([0.0, 1.0, 5.0]))
