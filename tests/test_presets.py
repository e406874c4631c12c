"""Preset data: prices with a date and a source for the right instance, precise datasheet
matches, and link figures that say which NCCL algorithm they belong to (issue 10, must 9)."""

import re

import pytest

from scalesim import presets
from scalesim.model.subset_links import subset_busbw_GBps


def test_every_price_has_a_date_a_source_and_the_matching_instance():
    for name, hw in presets.HARDWARE.items():
        if hw.price_per_device_hour is None:
            continue
        price = presets.PRICES[name]
        assert re.fullmatch(r"20\d\d(-\d\d)?", price.as_of) and price.source
        assert hw.price_per_device_hour == pytest.approx(price.usd_per_hour / price.devices)
        assert price.as_of in hw.source and price.instance in hw.source
    # The 80 GB DGX A100 is priced as p4de (A100 80GB), not p4d (A100 40GB): $40.96608 / 8.
    assert "p4de" in presets.PRICES["dgx-a100"].instance
    assert presets.HARDWARE["dgx-a100"].price_per_device_hour == pytest.approx(5.12076)
    # The 16 GB DGX-1 is priced as p3.16xlarge (V100 16GB), not p3dn (V100 32GB): $24.48 / 8.
    assert "p3.16xlarge" in presets.PRICES["dgx1-v100"].instance
    assert presets.HARDWARE["dgx1-v100"].price_per_device_hour == pytest.approx(3.06)
    # Prices cut since they were listed say so.
    for name in ("dgx-a100", "dgx-h100"):
        assert "June 2025" in presets.HARDWARE[name].source


@pytest.mark.parametrize("name, bandwidth", [
    ("NVIDIA H100 80GB HBM3", 3350.0), ("H100-SXM5 80GB", 3350.0), ("NVIDIA H100 PCIe", 2000.0),
    ("NVIDIA H100 NVL", 3900.0), ("H100", None),
])
def test_h100_memory_bandwidth_matches_its_board(name, bandwidth):
    found = presets.memory_bandwidth_of(name)
    assert (found[0] if found else None) == bandwidth


def test_nvswitch_h100_all_reduce_is_nvls_and_ring_collectives_are_not():
    link = presets.intra_link("nvswitch-h100")
    assert link.busbw_GBps == 370.0 and link.allreduce_GBps == 480.0
    assert link.allreduce_algorithm.startswith("NVLS") and "#212" in link.source
    assert presets.intra_link("nvswitch-a100").allreduce_GBps == 230.0  # no NVLS on A100


def test_every_link_preset_names_its_algorithm_and_protocol():
    links = [presets.intra_link(k) for k in presets.INTRA_LINKS]
    links += [presets.inter_link(k, 1, 100) for k in ("infiniband", "roce", "ethernet")]
    links += [hw.inter_node for hw in presets.HARDWARE.values()]
    for link in links:
        assert link.algorithm == "Ring/Simple (large messages)"


def test_ethernet_preset_is_what_nccl_sockets_reach_not_the_tcp_ceiling():
    # Published socket busbw / line rate: 5/12.5 = 0.40, 1.7/3.125 = 0.544, 2.4/4 = 0.60.
    assert presets.SOCKET_EFFICIENCY == 0.544
    assert presets.inter_link("ethernet", 1, 100).busbw_GBps == pytest.approx(6.8)
    assert presets.inter_link("ethernet", 1, 25).busbw_GBps == pytest.approx(1.7)
    assert abs(presets.TCP_PAYLOAD_CEILING - 0.9415) < 1e-4


def test_network_upgrade_price_is_read_from_prices():
    """The EFA upgrade costs the p4d's price minus the a2-highgpu-8g's (same GPUs), both read
    from presets.PRICES with their dates, not copied: $32.7726 - $29.387 per server-hour."""
    from scalesim.network_upgrades import UPGRADES

    efa = next(u for u in UPGRADES if u.key == "efa-4x100")
    p4d, a2 = presets.PRICES["aws-p4d"], presets.PRICES["a2-highgpu-8g"]
    assert efa.extra_usd_per_server_hour == pytest.approx(32.7726 - 29.387)
    assert efa.extra_usd_per_server_hour == pytest.approx(p4d.usd_per_hour - a2.usd_per_hour)
    assert efa.as_of == p4d.as_of and p4d.as_of in efa.source and a2.as_of in efa.source


def test_dgx1_partial_server_gets_fewer_nvlinks():
    """DGX-1 hybrid cube-mesh: a ring over 2 GPUs has one NVLink, over a quad P100 one ring of
    its 3 quad links (2 of 4 used both ways) and V100 4 of 6; NVSwitch keeps its busbw."""
    def f(kind, busbw_GBps, gpus):  # the rule every path reads from the link level
        return subset_busbw_GBps(busbw_GBps, gpus, presets.intra_link(kind).subset_shares)

    v100 = presets.intra_link("nvlink2").busbw_GBps  # 0.8 x 150 = 120 GB/s
    assert list(f("nvlink2", v100, [2, 3, 4, 6, 8, 16])) == pytest.approx(
        [20.0, 20.0, 80.0, 80.0, 120.0, 120.0])
    assert list(f("nvlink1", 64.0, [2, 4, 8])) == pytest.approx([16.0, 32.0, 64.0])
    assert list(f("nvswitch-v100", 120.0, [2, 4])) == pytest.approx([120.0, 120.0])
    assert "nccl#671" in presets.intra_link("nvlink2").source


def test_a_reference_run_on_one_device_is_one_device(capsys):
    """Session 16 user's pass: `scalesim presets` said resnet50's reference ran on '1 devices',
    and predict's compute note '8 device(s)'. One count, one noun (figures.count)."""
    from scalesim.cli.main import main
    from scalesim.profiles import default_profile

    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "(192 samples per step; 1 device, ddp, compute only)" in out
    assert "1 devices" not in out
    notes = " ".join(default_profile().notes)
    assert "per device on 8 devices, 65536 samples" in notes and "device(s)" not in notes


def test_predict_on_a_preset_without_a_price_says_why_cost_is_blank(capsys):
    """dgx-h200 lists no price (session 36): predict with a training length left each cost
    cell "-" and said nothing of why; it says now, in one line, what to give."""
    from scalesim.cli.main import main

    assert main(["predict", "--hardware", "dgx-h200", "--devices", "8", "--train-samples",
                 "1e9"]) == 0
    out = capsys.readouterr().out
    assert "cost: no price known (the hardware dgx-h200 lists none): give --price USD per " \
           "device-hour" in out
    assert main(["predict", "--hardware", "dgx-h200", "--devices", "8", "--train-samples",
                 "1e9", "--price", "4"]) == 0
    assert "no price known" not in capsys.readouterr().out


def test_decide_on_a_preset_without_a_price_names_the_flag(capsys):
    """decide's words for a missing price were the app's alone ('enter a price'): on the
    command line they name --price too."""
    from scalesim.cli.main import main

    assert main(["decide", "--hardware", "dgx-h200", "--devices", "8", "--train-samples",
                 "1e9"]) == 0
    assert "no price known: enter a price per device-hour (--price on the command line)" in \
        capsys.readouterr().out


def test_a_reference_run_s_throughput_is_written_as_every_table_writes_one(capsys):
    """Session 43: `scalesim presets` wrote each reference run's pace with ':.4g' and no unit
    ('1376/s', past 1e4 an exponent), not ``figures.rate``: '1,376 images/s', thousands
    separated, in the workload's own unit."""
    from scalesim.cli.main import main
    from scalesim.figures import rate
    from scalesim.presets import WORKLOADS

    assert main(["presets"]) == 0
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines() if "compute: " in ln]
    refs = [(wl, ref) for wl in WORKLOADS.values() for ref in wl.reference]
    assert refs and len(lines) == len(refs)
    for line, (wl, ref) in zip(lines, refs, strict=True):
        assert line.startswith(f"compute: {rate(ref.samples_per_s, wl.sample_unit)} per "), line
    assert any(ln.startswith("compute: 1,376 images/s per ") for ln in lines), lines
    assert not [ln for ln in lines if "e+" in ln.split(" per ")[0]]


def test_a_reference_run_s_pace_in_a_profile_note_and_its_refusal_is_figures_rate(capsys, tmp_path):
    """Session 43: the refusal of a reference whose communication alone outlasts its step wrote
    '1.235e+05 samples/s', an exponent and not the workload's unit; it is now written as every
    table writes a pace (``figures.rate``). The profile's compute note keeps its wording
    ('1376 images/s', '65536 samples'): a preset link's fingerprint hashes the notes, and a new
    wording would tell every older link that its numbers may have changed."""
    import json

    from scalesim.cli.main import main
    from scalesim.presets import WORKLOADS, get_hardware, get_workload
    from scalesim.profiles import default_profile, profile_from_presets

    resnet = profile_from_presets(get_hardware("dgx1-v100"), get_workload("resnet50"))
    notes = " ".join(resnet.notes)
    assert "compute: 1376 images/s per device on 1 device, 192 samples per optimizer step" in notes
    notes = " ".join(default_profile().notes)
    assert "compute: 569.1 sequences/s per device on 8 devices, 65536 samples per " in notes
    workload = WORKLOADS["bert-large"].model_dump(mode="json")
    workload["reference"][0].update(samples_per_s=123456.7, micro_batch=1, accumulation=1,
                                    devices=64)  # a step of 8 us: no all-reduce is that fast
    path = tmp_path / "fast.json"
    path.write_text(json.dumps(workload))
    code = main(["predict", "--workload", str(path), "--hardware", "dgx-a100", "--devices", "8"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("reference of 'A100-SXM4 80GB' (123,500 sequences/s per device on 64 devices): the "
            "modelled communication of that run alone is slower than its step") in err


def test_presets_write_a_reference_run_s_samples_per_step_thousands_separated(capsys):
    """Session 43: `scalesim presets` wrote bert-large's reference run as '(65536 samples per
    step; ...)' beside '569.1 sequences/s' of ``figures.rate``; a count is ``figures.whole``."""
    from scalesim.cli.main import main
    from scalesim.figures import whole
    from scalesim.presets import WORKLOADS

    assert main(["presets"]) == 0
    said = re.findall(r"\(([\d,]+) samples per step; ", capsys.readouterr().out)
    steps = [ref.samples_per_step for wl in WORKLOADS.values() for ref in wl.reference]
    assert said == [whole(n) for n in steps] and "65,536" in said
