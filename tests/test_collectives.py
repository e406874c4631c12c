"""Hand-checked alpha-beta collective times and the nccl-tests conventions."""

import numpy as np
import pytest

from scalesim.model import collectives as coll


def test_ring_allreduce_by_hand():
    # 8 ranks, alpha = 10 us, busbw 100 GB/s, 1 GB: 2*7*10e-6 + 2*7/8 * 1e9/100e9 = 0.01764 s
    t = coll.ring_allreduce_s(1e9, 8, 10e-6, 100.0)
    assert t == pytest.approx(14 * 10e-6 + 1.75 * 0.01)


def test_reduce_scatter_and_all_gather_move_half_of_allreduce():
    rs = coll.ring_reduce_scatter_s(1e9, 4, 0.0, 50.0)
    ar = coll.ring_allreduce_s(1e9, 4, 0.0, 50.0)
    assert rs == pytest.approx(0.75 * 1e9 / 50e9)
    assert ar == pytest.approx(2 * rs)


def test_one_rank_or_empty_message_costs_nothing():
    assert coll.ring_allreduce_s(1e9, 1, 1e-3, 1.0) == 0.0
    assert coll.allreduce_s(0.0, 8, 2, 1e-5, 100, 1e-5, 10) == 0.0


def test_tree_by_hand():
    # 16 ranks: depth 4 -> 8 alpha; bandwidth term 2 S / B
    t = coll.tree_allreduce_s(1e8, 16, 5e-6, 20.0)
    assert t == pytest.approx(8 * 5e-6 + 2 * 1e8 / 20e9)


def test_hierarchical_by_hand():
    # 2 nodes x 4 devices, intra 100 GB/s, inter 10 GB/s, no latency, S = 1 GB:
    # RS intra 3/4 S/100 + AR inter 2*(1/2) S/10 + AG intra 3/4 S/100
    t = coll.allreduce_s(1e9, 4, 2, 0.0, 100.0, 0.0, 10.0, algorithm=coll.HIERARCHICAL)
    assert t == pytest.approx(0.0075 + 0.1 + 0.0075)


def test_ring_across_nodes_limited_by_slowest_level():
    t = coll.allreduce_s(1e9, 4, 2, 0.0, 100.0, 0.0, 10.0, algorithm=coll.RING)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 10e9)


def test_auto_is_fastest_of_the_three():
    sizes = np.logspace(3, 10, 30)
    args = (8, 4, 2e-6, 230.0, 8e-6, 25.0)
    auto = coll.allreduce_s(sizes, *args)
    each = [coll.allreduce_s(sizes, *args, algorithm=a) for a in (coll.RING, coll.TREE,
                                                                   coll.HIERARCHICAL)]
    assert np.allclose(auto, np.minimum.reduce(each))
    # tree wins small messages (latency), not large ones
    assert each[1][0] < each[0][0] and each[1][-1] > min(each[0][-1], each[2][-1])


def test_busbw_convention_matches_nccl_tests():
    # nccl-tests: busbw = algbw * 2(n-1)/n for all-reduce; a ring with no latency reports busbw = B
    t = coll.ring_allreduce_s(256e6, 8, 0.0, 42.0)
    assert coll.busbw_from_time_GBps("all_reduce", 256e6, 8, t) == pytest.approx(42.0)
    t = coll.ring_reduce_scatter_s(256e6, 8, 0.0, 42.0)
    assert coll.busbw_from_time_GBps("reduce_scatter", 256e6, 8, t) == pytest.approx(42.0)
    assert coll.algbw_GBps(1e9, 0.5) == pytest.approx(2.0)


def test_fit_alpha_beta_recovers_parameters():
    sizes = np.logspace(10, 28, 10, base=2)
    times = coll.ring_allreduce_s(sizes, 4, 25e-6, 3.5)
    alpha, busbw, rmse = coll.fit_alpha_beta("all_reduce", sizes, 4, times)
    assert alpha == pytest.approx(25e-6, rel=1e-6)
    assert busbw == pytest.approx(3.5, rel=1e-6)
    assert rmse < 1e-9


def test_fit_alpha_beta_rejects_flat_times():
    with pytest.raises(ValueError):
        coll.fit_alpha_beta("all_reduce", [1e3, 1e6], 2, [1.0, 0.5])
    with pytest.raises(ValueError):
        coll.fit_alpha_beta("all_reduce", [1e3], 2, [1.0])
