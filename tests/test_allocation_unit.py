"""The allocation unit apart from the NVLink domain (docs/reliability.md, session 44).

A GB200 NVL72 rack is one 72-GPU NVLink domain (the hardware's server, ``devices_per_node``)
while a scheduler hands out 4-GPU compute trays (``devices_per_allocation``): a job of 128 or
256 GPUs runs (it had no plan: every count had to be a multiple of 72), 130 is refused naming
the tray, and a group whose ranks straddle two domains is charged the inter-domain link.
"""

import json

import numpy as np
import pytest
from cli_harness import run_cli_as_process
from pydantic import ValidationError

from scalesim.layout import ParallelLayout, group_span, placement, straddles
from scalesim.model.shard_groups import group_link
from scalesim.presets import HARDWARE, allocation_devices_of
from scalesim.schemas import Hardware

GB200 = HARDWARE["gb200-nvl72"]


def _cli(capsys, *args):
    """``scalesim *args`` in this process: its returncode, stdout and stderr."""
    return run_cli_as_process(capsys, list(args))


def _domains_of_worst_group(size, stride, block_ranks, g, devices):
    """Brute force: the most NVLink domains of ``g`` ranks any group spans, the job's
    ``devices`` ranks filling domains in rank order, groups of ``size`` ranks ``stride`` apart
    inside blocks of ``block_ranks``."""
    worst = 0
    for base in range(0, devices, block_ranks):
        for offset in range(stride):
            ranks = base + offset + stride * np.arange(size)
            worst = max(worst, np.unique(ranks // g).size)
    return worst


def test_gb200_preset_separates_tray_from_domain():
    assert (GB200.devices_per_node, GB200.devices_per_allocation, GB200.allocation_devices) == (72, 4, 4)
    assert allocation_devices_of("NVIDIA GB200") == (4, allocation_devices_of("GB200")[1])
    assert allocation_devices_of("H100-SXM5 80GB") is None


def test_hardware_written_before_the_field_loads_with_the_domain_as_unit():
    """A hardware file (or a profile's hardware) without the field: the server is the unit."""
    old = HARDWARE["dgx-h100"].model_dump(mode="json")
    assert "devices_per_allocation" not in old  # written as before the field (share-link hashes)
    hw = Hardware.model_validate(old)
    assert hw.devices_per_allocation is None and hw.allocation_devices == 8
    assert GB200.model_dump()["devices_per_allocation"] == 4


def test_a_unit_that_does_not_divide_the_domain_is_refused():
    data = GB200.model_dump(mode="json") | {"devices_per_allocation": 5}
    with pytest.raises(ValidationError, match="devices_per_allocation 5 does not divide "
                                              "devices_per_node 72"):
        Hardware.model_validate(data)


def test_straddling_group_is_charged_across_domains_hand_computed():
    """tp 4 x dp 4 x pp 16 on 256 GPUs (Megatron-Bridge's GB200 405B): each dp group is 4 ranks
    4 apart in a block of 16; the block of ranks 64-79 holds the domain boundary at 72, so the
    group 64, 68, 72, 76 spans 2 domains, 2 ranks in each (the old rule said 1 domain)."""
    lay = ParallelLayout(dp=4, tp=4, pp=16, global_batch=64, schedule="1f1b")
    span = placement(lay, 72)
    assert (span["tp"].nodes, span["tp"].link) == (1, "intra_node")
    assert (span["dp"].per_node, span["dp"].nodes, span["dp"].link) == (2, 2, "inter_node")
    assert _domains_of_worst_group(4, 4, 16, 72, 256) == 2
    assert tuple(int(v) for v in group_span(4, 4, 72)) == (4, 1)  # the rule without the job
    # 64 GPUs a domain (Slurm --segment 16 trays): every block of 16 inside one domain
    assert (placement(lay, 64)["dp"].nodes, _domains_of_worst_group(4, 4, 16, 64, 256)) == (1, 1)
    # the link charged: the dp group's ring of 4 crosses the NICs, its 2 members of a domain
    # reach 2 of the domain's 72 NICs: 3456 GB/s x 2 / 72 = 96 GB/s (72 x 400 Gb/s x 0.96 / 8
    # = 3456), not the 720 GB/s NVLink busbw
    x = type("X", (), dict(devices_per_node=72, inter_busbw_GBps=GB200.inter_node.busbw_GBps,
                           dp=4, tp=4, pp=16, cp=1))
    per_node, nodes, share = group_link(x, 4, 4)
    assert (float(per_node), float(nodes)) == (2.0, 2.0)
    assert float(share) == pytest.approx(72 * 400 / 8 * 0.96 * 2 / 72) == pytest.approx(96.0)
    x.devices_per_node = 64  # the same job 64 a domain: inside NVLink
    assert float(group_link(x, 4, 4)[1]) == 1.0


@pytest.mark.parametrize("size,stride,g,devices", [
    (4, 4, 72, 256), (2, 8, 72, 128), (4, 2, 72, 72), (3, 2, 8, 24), (2, 1, 8, 16),
    (9, 8, 72, 144), (4, 4, 64, 256), (16, 1, 72, 256), (5, 1, 8, 40)])
def test_group_span_matches_brute_force_on_domains_spanned(size, stride, g, devices):
    """The worst group's domains, by enumerating every group's ranks, equal the rule's."""
    _per_node, nodes = group_span(size, stride, g, devices)
    assert int(nodes) == _domains_of_worst_group(size, stride, size * stride, g, devices)


def test_straddles_never_where_blocks_divide_the_server():
    """Power-of-two blocks on 8-GPU servers (every preset but the NVL72): never a straddle, so
    their answers are unchanged."""
    sizes = np.array([1, 2, 4, 8, 16, 64])
    for stride in (1, 2, 4, 8, 16):
        assert not straddles(sizes, stride, 8, 1024).any()


def _plan_json(capsys, *counts, extra=()):
    out = _cli(capsys, "plan", "--hardware", "gb200-nvl72", "--workload", "llama3-70b", "--devices",
               ",".join(map(str, counts)), "--global-batch", "256", "--cp", "1,2,4", "--top", "100000",
               "--json", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_plan_on_gb200_runs_128_and_256_gpus_with_tp_inside_a_domain(capsys):
    """Was 'devices 128 do not fill whole servers of 72 GPUs': no plan at all."""
    plan = _plan_json(capsys, 128, 256)
    rows = plan["layouts"]
    assert {r["devices"] for r in rows} == {128, 256}
    assert all(c["best"] is not None for c in plan["by_count"])
    spans = [placement(ParallelLayout(dp=r["dp"], tp=r["tp"], pp=r["pp"], cp=r["cp"],
                                      global_batch=256), 72) for r in rows]
    assert all(s["tp"].nodes == 1 for s in spans)  # tensor parallelism inside one NVL72
    best = spans[0]
    assert best["tp"].link != "inter_node" and best["cp"].link != "inter_node"
    # a layout whose cp groups straddle a domain (tp x cp = 16 does not divide 72) is charged
    # the NICs for them: slower ring attention than the same split on 64-GPU domains
    crossing = [r for r, s in zip(rows, spans, strict=True) if s["cp"].link == "inter_node"
                and s["cp"].per_node > 1]
    assert crossing, "the search holds layouts whose cp groups straddle a domain"


def test_plan_refuses_a_count_that_is_not_whole_trays(capsys):
    out = _cli(capsys, "plan", "--hardware", "gb200-nvl72", "--workload", "llama3-70b", "--devices",
               "130", "--global-batch", "260")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert ("130 devices do not fill whole allocation units of 4 GPUs" in out.stderr
            and "give a multiple of 4, e.g. 128 or 132" in out.stderr)


def test_plan_cp_charge_crossing_versus_segmented_domains(capsys):
    """The same cp-straddling layout: on 72-GPU domains its ring attention crosses the NICs,
    on 64 used of each (``--gpus-per-node 64``: Slurm segments of 16 trays) it stays on NVLink,
    so its ring-attention time is higher on 72."""
    def cp_s(extra):
        rows = _plan_json(capsys, 256, extra=extra)["layouts"]
        pick = [r for r in rows if (r["dp"], r["tp"], r["pp"], r["cp"], r["zero"], r["micro_batch"],
                                    r["recompute"], r["sequence_parallel"], r["schedule"])
                == (16, 4, 1, 4, 1, 1, "none", True, "none") and r["shard_group"] == 64]
        assert len(pick) == 1
        return pick[0]["breakdown_s"]["cp_comm_s"]
    assert cp_s(()) > cp_s(("--gpus-per-node", "64"))
