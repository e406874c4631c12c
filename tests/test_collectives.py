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


def test_hierarchical_by_hand():
    # 2 nodes x 4 devices, intra 100 GB/s, inter 10 GB/s, no latency, S = 1 GB:
    # RS intra 3/4 S/100 + AR inter 2*(1/2) S/10 + AG intra 3/4 S/100
    t = coll.allreduce_s(1e9, 4, 2, 0.0, 100.0, 0.0, 10.0, algorithm=coll.HIERARCHICAL)
    assert t == pytest.approx(0.0075 + 0.1 + 0.0075)


def test_ring_across_nodes_limited_by_slowest_level():
    t = coll.allreduce_s(1e9, 4, 2, 0.0, 100.0, 0.0, 10.0, algorithm=coll.RING)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 10e9)


def test_ring_latency_counts_intra_and_inter_hops_as_nccl_does():
    # NCCL tuning.cc: (nsteps - nInterSteps) * intraLat + nInterSteps * interLat.
    # 2 nodes x 4: all-reduce 2(p-1) = 14 steps, 2(N-1) = 2 of them across servers:
    # 12 * 1 us + 2 * 10 us = 32 us (the old flat ring charged 14 * 10 us = 140 us).
    a, _ = coll.ring_coeffs(2.0, 4, 2, 1e-6, 100.0, 10e-6, 10.0)
    assert a == pytest.approx(32e-6)
    # reduce-scatter / all-gather on 128 servers x 8: (1024 - 128) intra + 127 inter steps
    a, c = coll.reduce_scatter_coeffs(8, 128, 2e-6, 230.0, 6e-6, 192.0)
    assert a == pytest.approx(896 * 2e-6 + 127 * 6e-6)
    assert c == pytest.approx(1023 / 1024 / 192e9)
    # one device per server: no intra hop, and the intra level does not limit bandwidth
    a, c = coll.ring_coeffs(2.0, 1, 4, 1e-6, 1.0, 10e-6, 50.0)
    assert a == pytest.approx(6 * 10e-6) and c == pytest.approx(1.5 / 50e9)


def test_two_server_tree_sends_about_s_per_node():
    # Double binary tree on 2 servers: each server is the root of one tree and the only child
    # of the other and sends S/2 + S/2 = S across, so the inter term is S / B_inter (not 2 S).
    # 2 x 8, intra 230 GB/s, inter 25 GB/s, 1 GB: max(2/230, 1/25) * 1e9 = 0.04 s, plus latency
    # 2*7*2 us + 2*floor(log2 2)*6 us = 40 us.
    t = coll.allreduce_s(1e9, 8, 2, 2e-6, 230.0, 6e-6, 25.0, algorithm=coll.TREE)
    assert t == pytest.approx(0.04 + 40e-6)
    # nccl-tests busbw of that run exceeds the 25 GB/s the NICs carry (nccl#1576)
    assert coll.busbw_from_time_GBps("all_reduce", 1e9, 16, t) > 25.0
    # from 3 servers on, an inner node of one tree sends 2 S: 4 servers -> 2 * 1e9 / 25e9
    t4 = coll.allreduce_s(1e9, 8, 4, 0.0, 230.0, 0.0, 25.0, algorithm=coll.TREE)
    assert t4 == pytest.approx(0.08)
    # the tree beats the ring on two servers at large sizes: ring 2*15/16 S / 25 GB/s
    ring = coll.allreduce_s(1e9, 8, 2, 0.0, 230.0, 0.0, 25.0, algorithm=coll.RING)
    assert ring == pytest.approx(0.075)
    assert coll.allreduce_s(1e9, 8, 2, 0.0, 230.0, 0.0, 25.0) == pytest.approx(0.04)


def test_auto_is_the_faster_of_nccls_ring_and_tree_never_hierarchical():
    sizes = np.logspace(3, 10, 30)
    args = (8, 4, 2e-6, 230.0, 8e-6, 25.0)
    auto = coll.allreduce_s(sizes, *args)
    ring, tree, hier = (coll.allreduce_s(sizes, *args, algorithm=a)
                        for a in (coll.RING, coll.TREE, coll.HIERARCHICAL))
    assert np.allclose(auto, np.minimum(ring, tree))
    # tree wins small messages (latency), not large ones
    assert tree[0] < ring[0] and tree[-1] > ring[-1]
    # 32 GPUs of a2-highgpu-8g (230 GB/s NVSwitch, 11.75 GB/s Ethernet), 64 MiB: the
    # hierarchical all-reduce would be faster, but NCCL's ring and tree never reduce inside the
    # server first, so auto does not take it. Ring: 2*31/32 S / 11.75; hierarchical:
    # 2*(7/8) S/230 + 2*(3/4) S/11.75; tree (4 servers): 2 S / 11.75.
    s = 64 * 2**20
    net = (8, 4, 0.0, 230.0, 0.0, 11.75)
    assert coll.allreduce_s(s, *net) == pytest.approx(2 * 31 / 32 * s / 11.75e9)
    hier = coll.allreduce_s(s, *net, algorithm=coll.HIERARCHICAL)
    assert hier == pytest.approx(1.75 * s / 230e9 + 1.5 * s / 11.75e9)
    assert hier < coll.allreduce_s(s, *net)


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


def test_nvls_on_one_server_by_hand():
    # 8 H100 on NVSwitch: NVLS busbw 480 GB/s (nccl-tests#212), one NVLS step of 25 us
    # (tuning.cc's NVLS latency), 1 GB: 25e-6 + 2*7/8 * 1e9/480e9 = 3.6708 ms. The ring at
    # 370 GB/s and 2 us per hop takes 14*2e-6 + 1.75e9/370e9 = 4.758 ms, so auto takes NVLS.
    args = (8, 1, 2e-6, 370.0, 6e-6, 192.0)
    nvls = 25e-6 + 1.75 * 1e9 / 480e9
    assert coll.allreduce_s(1e9, *args, nvls_busbw_GBps=480.0) == pytest.approx(nvls)
    ring = coll.allreduce_s(1e9, *args, algorithm=coll.RING, nvls_busbw_GBps=480.0)
    assert ring == pytest.approx(28e-6 + 1.75e9 / 370e9)
    # no NVLS on the level (NaN), or one GPU per server: the ring/tree answer as before
    assert coll.allreduce_s(1e9, *args) == pytest.approx(ring)
    assert coll.allreduce_s(1e9, 1, 4, 2e-6, 370.0, 6e-6, 192.0, nvls_busbw_GBps=480.0) == (
        pytest.approx(coll.allreduce_s(1e9, 1, 4, 2e-6, 370.0, 6e-6, 192.0)))


def test_nvls_tree_across_servers_by_hand():
    # NVLS-tree (NVLS inside, double binary tree across; tuning.cc): latency 25 us +
    # 2*floor(log2 N)*alpha_inter, busbw min(B_nvls, f_N * B_inter), f_2 = 2, f_N>2 = 1.
    # 2 x 8 H100, 192 GB/s inter at 6 us, 1 GB: busbw min(480, 384) = 384,
    #   37 us + 2*15/16 * 1e9/384e9 = 4.9198 ms; tree: 40 us + max(2/370, 1/192) s/GB = 5.445 ms.
    t2 = coll.allreduce_s(1e9, 8, 2, 2e-6, 370.0, 6e-6, 192.0, nvls_busbw_GBps=480.0)
    assert t2 == pytest.approx(37e-6 + 1.875e9 / 384e9)
    tree = coll.allreduce_s(1e9, 8, 2, 2e-6, 370.0, 6e-6, 192.0, algorithm=coll.TREE)
    assert tree == pytest.approx(40e-6 + 2e9 / 370e9)
    # 4 servers: busbw min(480, 192) = 192; 25 + 2*2*6 = 49 us + 2*31/32 * 1e9/192e9
    t4 = coll.allreduce_s(1e9, 8, 4, 2e-6, 370.0, 6e-6, 192.0, nvls_busbw_GBps=480.0)
    assert t4 == pytest.approx(49e-6 + 1.9375e9 / 192e9)
    # small messages: the ring's/tree's latency can be lower than NVLS's 25 us; auto takes it
    small = coll.allreduce_s(1e3, 2, 1, 2e-6, 370.0, 6e-6, 192.0, nvls_busbw_GBps=480.0)
    assert small == pytest.approx(2 * 2e-6 + 1e3 / 370e9)
