"""Preset constants are the published figures they cite, computed as docs/model.md §18 says."""

import statistics

import pytest

from scalesim import presets


def test_socket_efficiency_is_the_median_of_its_three_published_figures():
    # nccl#450: 5 of 12.5 GB/s; nccl-tests#83: 1.7 of 3.125; nccl#209: 2.4 of 4.0 (by hand)
    assert pytest.approx(statistics.median([0.40, 0.544, 0.60])) == presets.SOCKET_EFFICIENCY
    assert presets.inter_link("ethernet", 1, 100).busbw_GBps == pytest.approx(6.8)


@pytest.mark.parametrize("nics, gbit, busbw", [(8, 200, 192.0), (4, 100, 48.0)])
def test_infiniband_efficiency_reproduces_its_cited_nccl_tests_figures(nics, gbit, busbw):
    # nccl#812: 192 GB/s on 8x200 Gb/s; nccl-tests#29: 48 GB/s on 4x100 Gb/s
    assert presets.inter_link("infiniband", nics, gbit).busbw_GBps == pytest.approx(busbw)


def test_intra_server_figures_are_the_cited_measurements_or_0_8_of_line_rate():
    assert presets.intra_link("nvswitch-a100").busbw_GBps == 230.0  # nccl-tests#149
    assert presets.intra_link("nvswitch-h100").busbw_GBps == 370.0  # nccl-tests#212
    assert presets.intra_link("nvswitch-h100").allreduce_busbw_GBps == 480.0  # NVLS, #212
    assert presets.intra_link("nvlink2").busbw_GBps == pytest.approx(0.8 * 6 * 25)  # DGX-1V
