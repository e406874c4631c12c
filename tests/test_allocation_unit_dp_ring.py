"""The data-parallel ring of a GB200 job that leaves its last rack partly filled (docs/model.md
§12; docs/reliability.md, session 44), by hand.

128 GPUs fill one 72-GPU rack and 56 of the next, 256 three racks and 40 of a fourth (ranks
fill domains in order; whole 4-GPU trays). The ring over every rank crosses each rack's NICs
(one 400 Gb/s NIC a GPU), so the partly filled rack, which reaches only its own GPUs' NICs, is
its slowest inter-rack level: 56/72 and 40/72 of a rack's busbw. Before, every rack was charged
all 72 NICs. At the preset's 3456 GB/s a rack that share (2688, 1920 GB/s) is still above
NVLink's 720, so the ring stays NVLink-bound (unchanged); below it (--inter-busbw 500) the
partial rack binds.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from scalesim.layout import fewest_members
from scalesim.model import collectives as coll
from scalesim.model.shard_groups import group_coeffs, group_link
from scalesim.predict import scenario_inputs
from scalesim.presets import HARDWARE, WORKLOADS
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario

PROFILE = profile_from_presets(HARDWARE["gb200-nvl72"], WORKLOADS["gpt-7b"])
COUNTS = [72, 128, 256]
LAST_RACK = [72, 56, 40]  # GPUs of the last rack: 72, 128 - 72, 256 - 3 x 72


def _links(inter_busbw=None):
    x, _ = scenario_inputs(PROFILE, Scenario(devices=COUNTS, strategy="zero1",
                                             inter_busbw_GBps=inter_busbw))
    return x.replace(devices_per_node=np.minimum(x.devices_per_node, x.devices)), x


@pytest.mark.parametrize("rack_busbw", [3456.0, 500.0])
def test_the_ring_of_every_rank_gets_the_partial_racks_nics(rack_busbw):
    links, x = _links(None if rack_busbw == 3456.0 else rack_busbw)
    assert float(HARDWARE["gb200-nvl72"].inter_node.busbw_GBps) == 3456.0  # 72 x 50 x 0.96
    per_node, nodes, share = group_link(links, x.devices, 1)
    assert per_node.tolist() == [72, 72, 72] and nodes.tolist() == [1, 2, 4]
    by_hand = [rack_busbw * n / 72 for n in LAST_RACK]  # one NIC per GPU of the last rack
    assert share == pytest.approx(by_hand)  # was rack_busbw at every count
    # the reduce-scatter (ZeRO-1's gradient exchange) over the ring of g x N ranks: bandwidth
    # term (p - 1)/p bytes over the slowest level, NVLink's 720 GB/s or the partial rack's NICs
    lat, _ = group_coeffs(links, x.devices, 1)
    _, c = coll.reduce_scatter_coeffs(*lat)
    p = 72 * np.array([1, 2, 4])
    slowest = [720.0] + [min(720.0, s) for s in by_hand[1:]]
    assert np.asarray(c) == pytest.approx((p - 1) / p / (np.array(slowest) * 1e9), rel=1e-12)


def test_whole_racks_and_whole_servers_keep_every_member():
    assert fewest_members(72, 1, 72, 144).tolist() == 72  # two whole racks
    assert fewest_members(64, 2, 72, 128).tolist() == 28  # dp 64 at tp 2: 36 + 28 members
    assert fewest_members(16, 2, 72, 128).tolist() == 8  # a straddling block: half a side
    for g, p in ((8, 64), (8, 8), (4, 16)):  # the server is the unit: whole servers
        assert fewest_members(p, 1, g, p).tolist() == min(g, p)


def test_predict_charges_the_partial_rack_below_nvlink():
    """--inter-busbw 500 (GB/s a rack, below NVLink's 720): the step at 128 and 256 GPUs
    grows with the partial rack's 56/72 and 40/72 of it; 72 GPUs (one rack) do not move."""
    def rows(*extra):
        out = subprocess.run([sys.executable, "-m", "scalesim.cli.main", "predict",
                              "--workload", "gpt-7b", "--hardware", "gb200-nvl72", "--devices",
                              "72,128,256", "--strategy", "zero1", "--json", *extra],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return {r["devices"]: r for r in json.loads(out.stdout)}

    slow, fast = rows("--inter-busbw", "500"), rows()
    assert slow[72]["step_time_s"] == fast[72]["step_time_s"]
    assert slow[256]["comm_total_s"] > slow[128]["comm_total_s"] > 1.4 * slow[72]["comm_total_s"]
