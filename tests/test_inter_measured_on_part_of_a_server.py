"""Session 42: an inter-server figure measured with k GPUs of each server (k below its GPUs).

A calibration records how many ranks of each server took part (``LinkCalibration
.ranks_per_node``, the profile's ``devices_per_node``), but neither the server's NIC count nor
which NICs NCCL used (the measured level's ``nics_per_node`` is None), so the per-NIC rule of
docs/model.md §2 (B · n / ⌈k·n/G⌉) has no n to scale it by: the figure stays as measured, and
is said for what it is. Before, an all-ranks ring of 4 ranks on 8-GPU servers was written "the
inter level, whole server" with no word of the 4 idle GPUs, and predict planned at 8 a server
took the 4-GPU figure unchanged with a note that named only the intra-server link.
"""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim.predict import scenario_inputs, server_use_words
from scalesim.profiles import default_profile
from scalesim.schemas import CollectivePoint, LinkCalibration, Scenario

RING = {"latency_s": 2e-6, "busbw_GBps": 20.0, "rel_rmse": 0.01, "large_from_bytes": 0,
        "busbw_all_sizes_GBps": 20.0}  # an all-ranks ring below the intra busbw: the network's
INTRA = {"latency_s": 1e-6, "busbw_GBps": 200.0}


def _measured(monkeypatch, local_world: int):
    """``measured_level`` of an all-ranks ring over ``local_world`` ranks of each of 2 servers
    of 8 GPUs (torch's device count stood in)."""
    torch = pytest.importorskip("torch")
    from scalesim.calibration.collective_phase import measured_level
    from scalesim.calibration.dist import DistContext

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    ctx = DistContext(rank=0, world=2 * local_world, local_rank=0, local_world=local_world,
                      node=0, nodes=2, backend="nccl", device=torch.device("cuda", 0),
                      launched=True)
    ranks = 2 * local_world
    points = [CollectivePoint(op="all_reduce", size_bytes=s, ranks=ranks, time_s=1e-3,
                              algbw_GBps=1.0, busbw_GBps=1.0) for s in (1024.0, 2.0**20)]
    return measured_level(ctx, "inter_node", points, {"all_reduce": RING},
                          {"all_reduce": INTRA})


def test_a_ring_of_4_ranks_on_8_gpu_servers_is_said_as_4_gpus_and_kept(monkeypatch):
    link, cal = _measured(monkeypatch, 4)
    assert link.busbw_GBps == 20.0 and link.nics_per_node is None  # not scaled: no NIC count
    assert cal.method == "all_ranks" and cal.ranks_per_node == 4 and not cal.lower_bound
    assert "so this is the inter level, of 4 GPUs a server" in link.source
    assert "inter level, whole server" not in link.source
    assert ("; 4 more GPUs of each server ran no rank: this is what 4 GPUs a server reach over "
            "the NICs near them (the profile's servers are of 4)") in link.source


def test_a_ring_of_every_gpu_is_the_whole_server(monkeypatch):
    link, cal = _measured(monkeypatch, 8)
    assert link.busbw_GBps == 20.0 and cal.ranks_per_node == 8
    assert link.source.endswith("so this is the inter level, whole server")
    assert "ran no rank" not in link.source


def _calibrated_at_4():
    """The default profile as a calibration of 4 ranks a server would write it: servers of 4,
    an inter level of 24 GB/s measured by all of them, no NIC count."""
    p = default_profile()
    inter = p.hardware.inter_node.model_copy(update={
        "kind": "nccl-network", "busbw_GBps": 24.0, "nics_per_node": None, "gbit_per_nic": None})
    hw = p.hardware.model_copy(update={"devices_per_node": 4, "inter_node": inter,
                                       "instance_sizes": [1, 2, 4]})
    links = [c for c in p.links if c.level != "inter_node"] + [LinkCalibration(
        level="inter_node", measured=True, method="all_ranks", ranks_per_node=4)]
    return p.model_copy(update={"hardware": hw, "links": links})


def test_planned_at_8_a_server_the_4_gpu_figure_is_taken_unchanged_and_said(tmp_path, capsys):
    profile = _calibrated_at_4()
    at8 = Scenario(devices=[16], devices_per_node=8)
    inputs, _ = scenario_inputs(profile, at8)
    assert float(inputs.inter_busbw_GBps) == 24.0  # the 4-GPU figure, as the words say
    words = server_use_words(profile.hardware, at8)
    assert words.endswith("its intra-server link (230 GB/s busbw) taken for all 8, and its "
                          "inter-server link (24 GB/s busbw, what a server of 4 reaches over "
                          "its NICs) unchanged: the NICs 8 would reach are not known")
    assert server_use_words(profile.hardware, Scenario(devices=[16], devices_per_node=4)) is None
    path = tmp_path / "profile.json"
    path.write_text(profile.model_dump_json())
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "16",
                                      "--gpus-per-node", "8"])
    assert code == 0, err
    assert words in out
