"""The ring's steps and volume factor, ``phases (n-1)`` and ``phases (n-1)/n``, were written in
four places: ``step_and_volume`` (the link fits, nccl-tests' busbw), ``ring_allreduce_coeffs``,
``ring_reduce_scatter_coeffs`` and ``ring_coeffs`` (the model's collectives); the first had no
guard for one rank or none, the others had. One function now, ``ring_steps_volume``; every
value bit-identical for 0 to 4,096 ranks (1 to 4,096 for ``step_and_volume``)."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.model import collectives as coll


@pytest.mark.parametrize("phases, ranks, steps, volume", [
    (2.0, 8, 14.0, 1.75),      # all-reduce on 8: 2 x 7 steps, 2 x 7/8 of the buffer
    (1.0, 8, 7.0, 0.875),      # reduce-scatter / all-gather on 8
    (2.0, 2, 2.0, 1.0),
    (2.0, 1, 0.0, 0.0),        # one rank sends nothing
    (1.0, 0, 0.0, 0.0),        # nor does none (the guard the coefficients had)
])
def test_ring_steps_and_volume_by_hand(phases, ranks, steps, volume):
    assert coll.ring_steps_volume(phases, ranks) == (steps, volume)


def test_every_ring_reads_the_one_factor():
    # step_and_volume: the link fits' and nccl-tests' busbw factor
    assert coll.step_and_volume("all_reduce", 8) == (14.0, 1.75)
    assert coll.step_and_volume("all_gather", 8) == (7.0, 0.875)
    assert coll.step_and_volume("send_recv", 8) == (1.0, 1.0)
    # a = steps x alpha, c = volume / B (B = 10 GB/s: 1e10 bytes/s)
    assert coll.ring_allreduce_coeffs(8, 1e-6, 10.0) == pytest.approx((14e-6, 1.75e-10), rel=1e-15)
    assert coll.ring_reduce_scatter_coeffs(8, 1e-6, 10.0) == pytest.approx((7e-6, 0.875e-10),
                                                                            rel=1e-15)
    # two servers of 8: p = 16 ranks, c = 2 x 15/16 over the slower level, 24 GB/s
    _, c = coll.ring_coeffs(2.0, 8, 2, 1e-6, 300.0, 6e-6, 24.0)
    assert float(c) == pytest.approx(1.875 / 24e9, rel=1e-15)


def test_nccl_tests_busbw_is_the_volume_times_algbw():
    # 1 GB in 0.1 s on 8 ranks: algbw 10 GB/s, all-reduce busbw 10 x 1.75
    assert float(coll.busbw_from_time_GBps("all_reduce", 1e9, 8, 0.1)) == pytest.approx(17.5)
    ranks = np.array([2.0, 4.0, 16.0])
    assert coll.busbw_from_time_GBps("all_gather", 1e9, ranks, 0.1) == pytest.approx(
        [5.0, 7.5, 9.375])  # 10 x 1/2, 3/4, 15/16
