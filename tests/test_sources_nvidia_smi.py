"""nvidia-smi topo -m (published outputs, tests/fixtures/nvidia_smi) and the --query-gpu CSV."""

from __future__ import annotations

import json
import re
import shutil
import stat
from pathlib import Path

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.profiles import load_profile
from scalesim.schemas import Topology
from scalesim.sources import nvidia_smi
from scalesim.sources.calibrate_from import calibrate_from_sources

FIX = Path(__file__).parent / "fixtures" / "nvidia_smi"
DGX1 = FIX / "dgx1_v100_topo.txt"
PCIE = FIX / "rtx5090_x2_pcie_topo.txt"
H100 = FIX / "h100_x8_nics_topo.txt"


def test_dgx1_hybrid_cube_mesh_is_partial_nvlink():
    topo = nvidia_smi.parse_topo_file(DGX1)
    assert topo.gpus == [f"GPU{i}" for i in range(8)]
    assert topo.links[0][1] == "NV1" and topo.links[0][3] == "NV2" and topo.links[0][4] == "SYS"
    assert all(topo.links[i][j] == topo.links[j][i] for i in range(8) for j in range(8))
    assert "16 of 28 GPU pairs on NVLink" in topo.intra_kind
    assert topo.suggested_intra_preset == "nvlink2" and topo.nics == []
    assert topo.cpu_affinity == ["0-95"] * 8


def test_two_pcie_gpus_through_the_host_bridge():
    topo = nvidia_smi.parse_topo_file(PCIE)
    assert topo.links == [["X", "PHB"], ["PHB", "X"]]
    assert topo.intra_kind.startswith("PCIe only (worst pair PHB")
    assert topo.numa_affinity == [0, 0] and topo.suggested_intra_preset == "pcie4"


def test_h100_nvswitch_server_with_a_nic_per_gpu():
    topo = nvidia_smi.parse_topo_file(H100)
    assert topo.intra_kind.startswith("NVLink between every pair (NV18")
    # NV18 is NVLink4 (H100) or NVLink5 (B200/GB200): both named, none suggested (session 15:
    # was nvswitch-h100, half a GB200's rate, for the GB200 tray below too)
    assert topo.suggested_intra_preset is None
    assert "NVLink4 on H100/H200" in topo.intra_kind and "NVLink5 on B200/GB200" in topo.intra_kind
    assert [n.device for n in topo.nics] == [f"mlx5_{i}" for i in range(8)]
    assert [(n.nearest_gpus, n.nearest_link) for n in topo.nics] == [([i], "PIX") for i in range(8)]
    assert topo.nics[0].gpu_links[:5] == ["PIX", "NODE", "NODE", "NODE", "SYS"]
    assert topo.numa_affinity == [0, 0, 0, 0, 1, 1, 1, 1]
    text = "\n".join(nvidia_smi.describe_topology(topo))
    assert "NIC0 (mlx5_0): PIX to GPU0" in text
    assert "GPUs per NUMA node: 0: GPU0, GPU1, GPU2, GPU3; 1: GPU4" in text


@pytest.mark.parametrize("change, message", [
    (lambda t: t[:t.index("GPU5    NV18")], "no row for GPU5"),
    (lambda t: t.replace("GPU3    NV18    NV18    NV18     X      NV18    NV18",
                         "GPU3    NV18    NV18"), "cut short"),
    (lambda t: t.replace("GPU2    NV18    NV18     X", "GPU2    NV18    NV18     QQ"),
     "'QQ' is not a topo -m link code"),
    (lambda t: '{"traceEvents": []}', "not nvidia-smi topo -m output"),
    # fuzz finding: junk before the header's GPU0 gave a topology of no GPUs, then a TypeError
    (lambda t: "\x00\x00\t" + t.lstrip(), "does not start with GPU columns"),
])
def test_bad_topology_files_are_one_line_errors(tmp_path, change, message):
    path = tmp_path / "topo.txt"
    path.write_text(change(H100.read_text()))
    with pytest.raises(ScalesimError, match=message) as exc:
        nvidia_smi.parse_topo_file(path)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("cell", ["NV0", "NV19", "NV99999999999999999999", "NV" + "9" * 5000])
def test_an_nvlink_count_no_gpu_has_is_refused_naming_its_cell(tmp_path, capsys, cell):
    """Session 49's calibration audit: NV0 ("0 bonded links") and NV99999999999999999999 were read
    as NVLink between every pair. A pair's NV# is 1 to 18 (18 NVLinks per GPU on H100 and B200;
    a pair without NVLink shows its PCIe path); GPU0-GPU1 is the first cell, on line 2."""
    path = tmp_path / "topo.txt"
    path.write_text(H100.read_text().replace("NV18", cell))
    assert main(["topo", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and len(err) < 400
    assert "topo.txt line 2, GPU0-GPU1: 'NV" in err and "is no NVLink count" in err


@pytest.mark.parametrize("cell", ["NV0", "NV19", "NV99999999999999999999"])
def test_a_stored_topology_with_an_nvlink_count_no_gpu_has_is_refused_on_load(tmp_path, capsys,
                                                                               cell):
    """A profile whose stored topology says NV0 (written before session 49, or edited by hand)
    was loaded and used as NVLink between every pair: the schema holds it to the same rule as
    topo -m (``schemas.nvlink_count_problem``), one line naming the field and the pair."""
    good = tmp_path / "p.json"
    calibrate_from_sources(good, topo_file=str(H100))
    assert load_profile(good).hardware.topology.links[0][1] == "NV18"
    bad = tmp_path / "edited.json"
    bad.write_text(good.read_text().replace('"NV18"', f'"{cell}"'))
    with pytest.raises(ScalesimError) as refused:
        load_profile(bad)
    msg = str(refused.value)
    assert "\n" not in msg and "hardware.topology.links" in msg
    assert f"GPU0-GPU1: '{cell}' is no NVLink count (a pair's NV# is 1 to 18" in msg
    assert main(["predict", "--profile", str(bad), "--devices", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "is no NVLink count" in err


def test_the_widest_nvlink_counts_are_read():
    """NV1 (DGX-1) and NV18 (H100, B200) bound the counts: both still read."""
    text = H100.read_text()
    assert nvidia_smi.parse_topo_text(text, "t").links[0][1] == "NV18"
    assert nvidia_smi.parse_topo_text(text.replace("NV18", "NV1"), "t").links[0][1] == "NV1"


def test_a_numa_node_above_bounds_is_named_by_its_gpu_and_column(tmp_path, capsys):
    """Session 16's "found and left": NUMA Affinity 999999999 was refused as "Topology: field
    'numa_affinity.0': ..." (an internal field name). Now the line names the GPU, the column,
    the value, what the column holds and how to fix it."""
    path = tmp_path / "topo.txt"
    path.write_text(H100.read_text().replace("0-47,96-143     0 ", "0-47,96-143     999999999 ", 1))
    assert main(["topo", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "numa_affinity" not in err and "Topology" not in err
    assert err.endswith(
        "topo.txt line 2: GPU0's NUMA Affinity '999999999' names NUMA node 999,999,999, above the "
        "1,048,575 a node can be: the column holds the NUMA node(s) of the GPU's CPUs (such as 0, "
        "or 0,3-9 on Grace); save the output itself: nvidia-smi topo -m > topo.txt")


@pytest.mark.parametrize("where, change", [
    ("link code", lambda t, big: t.replace("GPU2    NV18    NV18     X",
                                           f"GPU2    NV18    NV18     {big}", 1)),
    ("CPU affinity", lambda t, big: t.replace("0-47,96-143", f"0-47,{big}", 1)),
    ("header", lambda t, big: f"{big}\tGPU0 GPU1\n" + t),
])
def test_a_huge_cell_is_quoted_as_a_bounded_excerpt(tmp_path, capsys, where, change):
    """Session 16's "found and left": a 400,000-character cell that is no link code was quoted
    whole (a 400,000-character line). Every quote of the file's text is an excerpt
    (errors.excerpt)."""
    path = tmp_path / "topo.txt"
    path.write_text(change(H100.read_text(), "Q" * 400_000))
    assert main(["topo", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and len(err) < 400, (where, len(err))
    assert "QQQ..." in err


def test_topo_command_prints_and_exports_json(capsys):
    assert main(["topo", str(DGX1)]) == 0
    assert "partial NVLink" in capsys.readouterr().out
    assert main(["topo", "--json", str(H100)]) == 0
    topo = Topology.model_validate(json.loads(capsys.readouterr().out))
    assert len(topo.nics) == 8


def test_calibration_records_topology_when_nvidia_smi_exists(tmp_path, monkeypatch):
    """topology_here runs the real nvidia-smi found on PATH (here a script that prints a
    published topo -m) and says so when there is none."""
    cat = shutil.which("cat")
    monkeypatch.setenv("PATH", str(tmp_path))
    topo, what = nvidia_smi.topology_here()
    assert topo is None and "nvidia-smi not found" in what
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\n[ \"$1 $2\" = \"topo -m\" ] && exec '{cat}' '{H100}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    topo, what = nvidia_smi.topology_here()
    assert topo is not None and len(topo.gpus) == 8 and "recorded" in what


def test_from_topo_puts_the_topology_in_the_hardware(tmp_path):
    out = tmp_path / "p.json"
    calibrate_from_sources(out, topo_file=str(DGX1))
    hw = load_profile(out).hardware
    assert hw.topology is not None and hw.topology.links[0][1] == "NV1"


# ---------------------------------------------------------------- the --query-gpu CSV

HEADER = ("timestamp, index, clocks.current.sm [MHz], clocks.max.sm [MHz], temperature.gpu, "
          "power.draw [W], utilization.gpu [%], clocks_throttle_reasons.active")


def smi_csv(path, devices=8, seconds=20, slow=None, slow_mhz=1110, reason=0x40, slow_temp=87,
            units=True, idle_first=2):
    """An nvidia-smi --query-gpu CSV as `-l 1` writes it: one row per device per second."""
    lines = [HEADER if units else HEADER.replace(" [MHz]", "").replace(" [W]", "")
             .replace(" [%]", "")]
    for t in range(seconds):
        for i in range(devices):
            busy = t >= idle_first
            hot = busy and i == slow
            mhz = slow_mhz if hot else (1410 if busy else 210)
            temp = slow_temp if hot else (66 if busy else 35)
            watts = 300.5 if hot else (388.2 if busy else 55.0)
            util = 100 if busy else 0
            mask = reason if hot else (0 if busy else 0x1)
            u = (" MHz", " W", " %") if units else ("", "", "")
            lines.append(f"2024/05/01 10:00:{t:02d}.123, {i}, {mhz}{u[0]}, 1410{u[0]}, {temp}, "
                         f"{watts:.2f}{u[1]}, {util}{u[2]}, 0x{mask:016x}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_thermally_throttled_device_is_named_with_its_evidence(tmp_path):
    report = nvidia_smi.parse_smi_csv(smi_csv(tmp_path / "smi.csv", slow=5))
    assert report.slow == [5]
    assert report.findings == [
        "device 5 runs at 1,110 MHz of 1,410 while the others hold 1,410; it throttles "
        "thermally at 87 °C (hardware thermal slowdown in 100% of busy samples)"]
    d5 = report.devices[5]
    assert d5.busy_samples == 18 and d5.samples == 20  # the idle first seconds are left out
    assert d5.power_W == pytest.approx(300.5)


def test_power_cap_and_healthy_devices(tmp_path):
    capped = nvidia_smi.parse_smi_csv(smi_csv(tmp_path / "a.csv", slow=2, slow_mhz=1200,
                                              reason=0x4, slow_temp=60, units=False))
    assert capped.slow == [2] and "power-capped at 300 W (software power cap" in capped.findings[0]
    healthy = nvidia_smi.parse_smi_csv(smi_csv(tmp_path / "b.csv"))
    assert healthy.slow == [] and healthy.findings == []


@pytest.mark.parametrize("mhz, slow", [(1345, False), (1344, True)])
def test_slow_clock_boundary_is_the_published_spread_times_3_5(tmp_path, mhz, slow):
    """Peers all at 1,410 MHz: no spread of their own, so the floor (cv_device = 1.32 %,
    docs/model.md §6) sets the limit at 1,410 (1 - 3.5 x 0.0132) = 1,344.86 MHz."""
    assert nvidia_smi.slow_clock_limit_MHz([1410] * 7) == pytest.approx(1410 * (1 - 3.5 * 0.0132))
    report = nvidia_smi.parse_smi_csv(smi_csv(tmp_path / "smi.csv", slow=3, slow_mhz=mhz))
    assert report.slow == ([3] if slow else [])
    assert bool(report.findings) == slow


def _busy(clocks_MHz):
    """analyse()'s input: ten busy samples per device at the given clock."""
    return {i: [(c, 1410.0, 70.0, 300.0, 100.0, 0x4)] * 10 for i, c in enumerate(clocks_MHz)}


def test_peers_that_wander_widen_the_limit_and_a_far_outlier_is_still_named():
    # power-capped peers spread over 1,260-1,410 MHz (median 1,335, MAD 45 -> sigma 66.7 MHz):
    # the limit is 1,335 - 3.5 x 66.7 = 1,101 MHz, so 1,200 MHz (0.90 of the median) is within
    # the spread, while 1,050 MHz is named
    peers = [1260, 1290, 1320, 1335, 1350, 1380, 1410]
    limit = nvidia_smi.slow_clock_limit_MHz(peers)
    assert limit == pytest.approx(1335 - 3.5 * 1.4826 * 45)
    assert nvidia_smi.analyse(_busy([1200, *peers]), "x").slow == []
    assert nvidia_smi.analyse(_busy([1050, *peers]), "x").slow == [0]
    assert nvidia_smi.analyse(_busy([limit + 0.5, *peers]), "x").slow == []
    assert nvidia_smi.analyse(_busy([limit - 0.5, *peers]), "x").slow == [0]


def test_one_device_is_compared_with_its_maximum_clock_but_not_named_slow():
    near = nvidia_smi.analyse(_busy([1345]), "x")  # 1,410 max: limit 1,344.86 MHz
    far = nvidia_smi.analyse(_busy([1300]), "x")
    assert near.findings == [] and near.slow == []
    assert far.slow == [] and far.findings[0].startswith("device 0 runs at 1,300 MHz of 1,410")


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("a,b,c\n1,2,3\n", "not an nvidia-smi --query-gpu CSV"),
    (HEADER + "\n2024/05/01 10:00:00.1, 0, 1410 MHz\n", "3 of 8 fields"),
    ("index, name\n0, A100\n", "no index or clocks.sm column"),
])
def test_bad_csv_is_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "smi.csv"
    path.write_text(text)
    with pytest.raises(ScalesimError, match=message):
        nvidia_smi.parse_smi_csv(path)


def test_not_available_values_are_skipped(tmp_path):
    path = smi_csv(tmp_path / "smi.csv", devices=2, seconds=5, idle_first=0)
    text = path.read_text().replace(", 388.20 W,", ", [N/A],")
    path.write_text(text)
    report = nvidia_smi.parse_smi_csv(path)
    assert [d.power_W for d in report.devices] == [None, None]
    assert [d.sm_clock_MHz for d in report.devices] == [1410, 1410]


def test_diagnose_smi_alone_and_with_runs(tmp_path, capsys):
    smi = smi_csv(tmp_path / "smi.csv", slow=5)
    assert main(["diagnose", "--smi", str(smi)]) == 0
    out = capsys.readouterr().out
    assert "device 5 runs at 1,110 MHz of 1,410 while the others hold 1,410" in out
    assert main(["diagnose", "--smi", str(smi), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slow"] == [5]  # strict JSON (jsonio)
    runs = tmp_path / "runs.csv"
    runs.write_text("devices,nodes,samples_per_s\n1,1,100\n2,1,190\n4,1,330\n8,1,560\n")
    assert main(["diagnose", str(runs), "--smi", str(smi), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["details"]["smi"]["slow"] == [5]
    said = report["cause"]["evidence"] + report["notes"]
    assert any("device 5 runs at 1,110 MHz" in s for s in said)
    assert main(["diagnose", "--smi", str(tmp_path / "none.csv")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1



def test_a_calibrated_profile_carries_the_topology_the_run_recorded():
    """calibration.runner.describe_machine puts topology_here() into Machine on a GPU node;
    build_profile writes it into the hardware description."""
    import argparse

    from scalesim.calibration.assemble import Machine, build_profile
    from scalesim.calibration.results import ComputeResult, PhaseRecord

    from scalesim import presets
    from scalesim.schemas import ComputeCurve, ComputePoint, Fingerprint

    topo = nvidia_smi.parse_topo_file(H100)
    compute = ComputeResult(
        model_name="mlp", params=1000, element_bytes=4, optimizer="adam",
        optimizer_state_elements=2, precision="fp32", backward_fraction=0.6,
        curve=ComputeCurve(overhead_s=1e-3, per_sample_s=1e-4, measured=True,
                           points=[ComputePoint(micro_batch=16, time_s=2.6e-3)]))
    record = PhaseRecord(phase="compute", signature={}, wall_s=1.0,
                         result=compute.model_dump(mode="json"))
    machine = Machine(device_name="NVIDIA H100 80GB HBM3", device_memory_bytes=8e10,
                      devices_per_node=8, cpu_cores_per_node=64, fingerprint=Fingerprint(),
                      comm_compute_contention=0.159, topology=topo)
    links = (presets.intra_link("nvswitch-h100"), presets.inter_link("infiniband", 8, 400), [])
    args = argparse.Namespace(name=None, micro_batch=None, batches=[8, 16])
    profile = build_profile(args, machine, {"compute": record}, links)
    assert profile.hardware.topology == topo


@pytest.mark.parametrize("cell, message", [
    ("9" * 200_000, "not an nvidia-smi CSV row (field larger than field limit"),
    ("9" * 400, "line 3: '999999999999999999999...' is not a plausible reading"),  # excerpt
], ids=["cell over 128 KiB", "400 digits"])
def test_a_huge_cell_is_one_line_naming_the_row(tmp_path, cell, message):
    """Fuzz findings (issue 14): a cell over csv's 128 KiB limit raised _csv.Error; a 400-digit
    clock read as infinity."""
    path = smi_csv(tmp_path / "smi.csv", devices=2, seconds=3)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace("1410 MHz", cell, 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScalesimError, match=message.replace("(", r"\(")):
        nvidia_smi.parse_smi_csv(path)


@pytest.mark.parametrize("column, cell, message", [
    (2, "1e308 MHz", "line 3: '1e308 MHz' is not a plausible reading"),
    (4, "1e308", "line 3: '1e308' is not a plausible reading"),
    (4, "-5", "line 3: '-5' is not a plausible reading"),
    (2, "-1410 MHz", "line 3: '-1410 MHz' is not a plausible reading"),
    (1, "-1", "line 3: '-1' is not a device index"),
    (1, "1.5", "line 3: '1.5' is not a device index"),
    (1, "1e308", "line 3: '1e308' is not a device index"),
])
def test_a_reading_is_read_whole_and_refused_when_no_sensor_gives_it(tmp_path, column, cell,
                                                                    message):
    """Session 10: a reading was its leading digits: '1e308' (or '1e-300') read as 1, so a
    device 'throttles thermally at 1 °C' and 'runs at 1,110 MHz of 1'; a temperature of -5,
    a clock of -1410 MHz and device index -1 or 1.5 (read as device 1) passed. The number is
    read with its exponent, and a negative reading, one past MAX_READING or a device index
    that is not a whole number is one line naming the row."""
    path = smi_csv(tmp_path / "smi.csv", devices=2, seconds=3)
    lines = path.read_text().splitlines()
    cells = lines[2].split(", ")
    cells[column] = cell
    lines[2] = ", ".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScalesimError, match=message):
        nvidia_smi.parse_smi_csv(path)


def test_a_throttle_mask_that_is_no_64_bit_mask_is_no_reason(tmp_path):
    """Session 10: a mask of '-1' read as every throttle bit set (int('-1', 16))."""
    path = smi_csv(tmp_path / "smi.csv", devices=2, seconds=3, idle_first=0)
    lines = path.read_text().splitlines()
    lines[1:] = [line.rsplit(", ", 1)[0] + ", -1" for line in lines[1:]]
    path.write_text("\n".join(lines) + "\n")
    report = nvidia_smi.parse_smi_csv(path)
    assert all(d.reasons == {} for d in report.devices)


def _profile_of_one_device(path):
    """A profile as `scalesim calibrate` writes on one GPU (devices_per_node 1)."""
    from scalesim.jsonio import write_model
    from scalesim.profiles import default_profile
    from scalesim.schemas import Fingerprint

    p = default_profile()
    hw = p.hardware.model_copy(update={"devices_per_node": 1, "instance_sizes": None})
    write_model(path, p.model_copy(update={
        "hardware": hw, "fingerprint": Fingerprint(device_count=1),
        "notes": ["calibrated with 1 process(es) on 1 node(s), backend nccl"]}))
    return path


def test_from_topo_of_more_gpus_than_the_profile_says_so_in_the_report_and_the_notes(
        tmp_path, capsys):
    """An 8-GPU topology merged into a profile of 1 device per server was taken without a
    word: the notes then said "1 process" and "16 of 28 GPU pairs on NVLink" side by side.
    The merge keeps the profile's server size (as nccl-tests logs of another size do) and
    records the mismatch, naming both counts, in the report and the profile's notes."""
    base = _profile_of_one_device(tmp_path / "one.json")
    out = tmp_path / "merged.json"
    code = main(["calibrate", "--from-topo", str(DGX1), "--base", str(base), "--out", str(out)])
    report = capsys.readouterr().out
    assert code == 0
    merged = load_profile(out)
    assert merged.hardware.devices_per_node == 1 and len(merged.hardware.topology.gpus) == 8
    said = [n for n in merged.notes if "8 GPUs" in n]
    assert len(said) == 1 and "1 device per server" in said[0] and "kept" in said[0], merged.notes
    assert f"note: {said[0]}" in report, report


ONE_GPU = """\
        GPU0    CPU Affinity    NUMA Affinity
GPU0     X      0-7             0
"""


def test_a_one_gpu_topology_has_no_link_and_says_so_in_the_singular(tmp_path, capsys):
    """Session 49's audit: a 1-GPU topology has no pair, so no link (no mean over gpus - 1
    pairs is taken anywhere: _summary reads "one GPU"); `topo` said "1 GPUs", and the merge
    note asked to "calibrate on 1 GPUs to model the whole server" beside a profile of 8 per
    server whose intra-server link this server does not have. It says so now, and how to model
    servers of one GPU."""
    path = tmp_path / "topo.txt"
    path.write_text(ONE_GPU)
    topo = nvidia_smi.parse_topo_file(path)
    assert (topo.links, topo.intra_kind, topo.suggested_intra_preset) == (
        [["X"]], "one GPU: no intra-server link", None)
    assert main(["topo", str(path)]) == 0
    assert capsys.readouterr().out.startswith("1 GPU; intra-server link: one GPU: no intra-")
    profile, report = calibrate_from_sources(tmp_path / "p.json", topo_file=str(path))
    (said,) = [line for line in report if "topology shows" in line]
    assert "1 GPU in a server, which has no intra-server link" in said
    assert "8 devices per server (kept" in said and "--gpus-per-node 1" in said
    assert "GPUs" not in said and profile.hardware.devices_per_node == 8


def test_from_topo_of_as_many_gpus_adds_no_note(tmp_path, capsys):
    out = tmp_path / "p.json"
    profile, report = calibrate_from_sources(out, topo_file=str(H100))  # presets: 8 per server
    assert profile.hardware.devices_per_node == 8
    assert not any("per server" in line for line in [*report, *profile.notes]), report
    profile, report = calibrate_from_sources(out, topo_file=str(PCIE), write=False)
    assert any("2 GPUs" in line and "8 devices per server" in line for line in report), report


def test_one_device_is_not_said_to_be_no_slower_than_the_others(tmp_path, capsys):
    """`diagnose --smi` of one GPU (`nvidia-smi -i 0 ...`) said `no device runs slower than
    the others`, of others it never saw. It says there is no other to compare with now."""
    path = tmp_path / "smi.csv"
    path.write_text(
        "timestamp, index, clocks.current.sm [MHz], clocks.max.sm [MHz], temperature.gpu, "
        "power.draw [W], utilization.gpu [%], clocks_throttle_reasons.active\n"
        + "".join(f"2024/01/01 00:00:0{s}.000, 0, 1410 MHz, 1410 MHz, 60, 300.00 W, 100 %, "
                  "0x0000000000000000\n" for s in range(3)))
    assert main(["diagnose", "--smi", str(path)]) == 0
    out = capsys.readouterr().out
    assert "one device only: no other to compare it with" in out, out
    assert "than the others" not in out


GB200 = FIX / "gb200_x4_tray_topo.txt"


def test_a_gb200_tray_is_not_offered_the_h100_link():
    # was: "nearest intra-link preset: nvswitch-h100" (450 GB/s) for NVLink5's 900 GB/s
    topo = nvidia_smi.parse_topo_file(GB200)
    assert topo.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert all(topo.links[i][j] == "NV18" for i in range(4) for j in range(4) if i != j)
    assert topo.suggested_intra_preset is None and "nvl72-gb200" in topo.intra_kind
    assert topo.cpu_affinity == ["0-71", "0-71", "72-143", "72-143"]
    assert [(n.device, n.nearest_link) for n in topo.nics] == [(f"mlx5_{i}", "SYS") for i in range(8)]
    text = "\n".join(nvidia_smi.describe_topology(topo))
    assert "nearest intra-link preset" not in text


def test_partial_nvlink_that_is_not_a_cube_mesh_suggests_no_nvlink2(tmp_path):
    # an 8-GPU NV18 server one of whose GPUs reaches the others over PCIe only (the B200 matrix
    # of vllm-project/vllm#16336: GPU2 NODE to GPUs 0-3, SYS to 4-7) was offered the DGX-1's
    # V100 nvlink2 preset
    def cell(i, j):
        if i == j:
            return "X"
        if 2 in (i, j):
            return "NODE" if max(i, j) < 4 else "SYS"
        return "NV18"
    lines = ["      " + "  ".join(f"GPU{j}" for j in range(8))]
    lines += [f"GPU{i}  " + "  ".join(cell(i, j) for j in range(8)) for i in range(8)]
    path = tmp_path / "b200_gpu2_pcie.txt"
    path.write_text("\n".join(lines) + "\n")
    topo = nvidia_smi.parse_topo_file(path)
    assert topo.intra_kind.startswith("partial NVLink: 21 of 28 GPU pairs on NVLink")
    assert topo.suggested_intra_preset is None
    assert nvidia_smi.parse_topo_file(DGX1).suggested_intra_preset == "nvlink2"  # NV1/NV2


def test_a_cube_mesh_of_single_links_is_the_p100_dgx1(tmp_path):
    """A DGX-1 P100 (4 NVLinks a GPU: one to each cube-mesh neighbour, NV1 only) is offered
    nvlink1 (80 GB/s), not the V100's nvlink2, whose 6 links double some pairs (NV2)."""
    text = DGX1.read_text()
    assert " NV2 " in text or "\tNV2" in text or "NV2 " in text
    path = tmp_path / "dgx1_p100.txt"
    path.write_text(text.replace("NV2", "NV1"))
    assert nvidia_smi.parse_topo_file(path).suggested_intra_preset == "nvlink1"
    assert nvidia_smi.parse_topo_file(DGX1).suggested_intra_preset == "nvlink2"


def test_a_gb200_tray_reads_its_numa_lists():
    """Session 15's "found and left": the tray's NUMA Affinity `0,3-9,11-17` (the Grace node and
    GPU-memory nodes; GPU NUMA IDs 2, 10, 18, 26) read as no NUMA node. It is node 0 for GPU0-1
    and 1 for GPU2-3, as their CPU affinity (0-71, 72-143) says."""
    topo = nvidia_smi.parse_topo_file(GB200)
    assert topo.numa_affinity == [0, 0, 1, 1]
    assert topo.cpu_affinity == ["0-71", "0-71", "72-143", "72-143"]
    text = "\n".join(nvidia_smi.describe_topology(topo))
    assert "GPUs per NUMA node: 0: GPU0, GPU1; 1: GPU2, GPU3" in text


@pytest.mark.parametrize("affinity, gpu_memory_from, node", [
    ("0,3-9,11-17", 2, 0), ("1,19-25,27-33", 2, 1),  # the GB200 tray
    ("0,2-8", 1, 0),  # a GH200 listing its GPU's memory nodes (GPU NUMA ID 1)
    ("3", None, 3), ("3", 2, 3),  # one node: that node
    ("0-1", None, None), ("0,2", None, None),  # two nodes, none of them GPU memory: no one node
    ("0-1", 2, None), ("N/A", 2, None), ("", None, None),
])
def test_the_cpu_node_of_a_numa_affinity_list(affinity, gpu_memory_from, node):
    assert nvidia_smi.cpu_numa_node(affinity, gpu_memory_from) == node


def test_id_ranges_read_as_nvidia_smi_prints_them():
    assert nvidia_smi.id_ranges("0,3-9,11-17") == [(0, 0), (3, 9), (11, 17)]
    assert nvidia_smi.id_ranges("0-23,96-119") == [(0, 23), (96, 119)]
    assert [nvidia_smi.id_ranges(t) for t in ("N/A", "", "NODE", "0-", "1,,2", "9" * 10)] == [None] * 6


TABS_LOST = FIX / "dgx_nv18_tabs_lost_topo.txt"


def _tabs_restored(text):
    return (text.replace("NIC8NIC9", "NIC8\tNIC9").replace("NODENODE", "NODE\tNODE")
            .replace("NODEPXB", "NODE\tPXB"))


def test_a_matrix_pasted_with_its_tabs_lost_is_split_back(tmp_path):
    """vllm-project/vllm#13855: header `NIC8NIC9`, cells `NODENODE`/`NODEPXB` in GPU4-7's rows.
    Was: 8 NICs (cut at the glued label) and GPU4-7's CPU affinity 'NODENODE'/'NODEPXB'."""
    topo = nvidia_smi.parse_topo_file(TABS_LOST)
    assert [n.name for n in topo.nics] == [f"NIC{i}" for i in range(12)]
    assert topo.nics[8].gpu_links == ["SYS"] * 4 + ["NODE"] * 4
    assert topo.nics[9].gpu_links == ["SYS"] * 4 + ["NODE", "PXB", "NODE", "NODE"]
    assert [(n.nearest_gpus, n.nearest_link) for n in topo.nics[9:]] == [
        ([5], "PXB"), ([6], "PXB"), ([7], "PXB")]
    assert topo.cpu_affinity == ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4
    assert topo.numa_affinity == [0] * 4 + [1] * 4
    # the same matrix with its tabs put back reads the same
    whole = tmp_path / "whole.txt"
    whole.write_text(_tabs_restored(TABS_LOST.read_text()))
    assert "NODENODE" not in whole.read_text()
    assert nvidia_smi.parse_topo_file(whole).model_dump(exclude={"source"}) == topo.model_dump(
        exclude={"source"})


@pytest.mark.parametrize("change, message", [
    # the header's last label glued to `CPU Affinity`: 19 labels, 20 cells a row
    (lambda t: t.replace("NIC11\tCPU", "NIC11CPU"),
     "line 4: GPU0 has more link cells than the header's 19 columns ('SYS' where the CPU "
     "affinity belongs): the paste lost its tabs"),
    # a cell glued to the CPU affinity after it
    (lambda t: t.replace("SYS\t0-55,112-167\t0", "SYS0-55,112-167\t0", 1),
     "line 4: 'SYS0-55,112-167' starts with a link code but goes on: the paste lost its tabs"),
    (lambda t: t.replace("PXB\t56-111", "PXB56-111", 1), "line 11: 'PXB56-111,168-223' starts"),
    # one cell more than the header has labels, glued to the CPU affinity
    (lambda t: _tabs_restored(t).replace("SYS\t0-55,112-167\t0", "SYS\tSYS0-55,112-167\t0", 1),
     "line 4: GPU0's CPU affinity 'SYS0-55,112-167' is not a CPU list"),
])
def test_a_paste_that_cannot_be_split_is_refused_in_one_line(tmp_path, change, message):
    path = tmp_path / "topo.txt"
    path.write_text(change(TABS_LOST.read_text()))
    with pytest.raises(ScalesimError, match=re.escape(message)) as exc:
        nvidia_smi.parse_topo_file(path)
    assert "\n" not in str(exc.value) and "nvidia-smi topo -m > topo.txt" in str(exc.value)


def test_glued_labels_and_codes_split_one_way():
    assert nvidia_smi._unglue(["GPU7NIC0", "mlx5_0mlx5_1", "NIC8NIC9"], False) == [
        "GPU7", "NIC0", "mlx5_0", "mlx5_1", "NIC8", "NIC9"]
    assert nvidia_smi._unglue(["NIC0PXB", "NV12NV12", "SYSSYS", "PIXPXB", "X", "0-7"], True) == [
        "NIC0", "PXB", "NV12", "NV12", "SYS", "SYS", "PIX", "PXB", "X", "0-7"]


@pytest.mark.parametrize("names", [
    [f"mlx5_bond_{i}" for i in range(8)],  # RoCE LAG devices, as the kernel names them
    [f"bnxt_re{i}" for i in range(8)],  # Broadcom RoCE devices
])
def test_nic_columns_named_by_their_rdma_device_are_read(tmp_path, names):
    """Session 16 review: before its NIC Legend, nvidia-smi named NIC columns by their RDMA
    device (kubernetes/kubernetes#53497: `mlx4_0`). A name the label pattern did not know
    (`mlx5_bond_0`, `bnxt_re0`) cut the header there, so each GPU row had more link cells than
    labels: session 16's check refused the saved output as 'the paste lost its tabs' (before
    it, the NICs were dropped and CPU affinity read 'PIX'). The H100 x8 matrix with its NICs so
    named reads as with NIC#: the same links, affinity and NUMA nodes, the names as devices."""
    text = H100.read_text().split("\nLegend:")[0]
    for i, name in enumerate(names):
        text = re.sub(rf"\bNIC{i}\b", name, text)
    path = tmp_path / "topo.txt"
    path.write_text(text)
    topo, plain = nvidia_smi.parse_topo_file(path), nvidia_smi.parse_topo_file(H100)
    assert [(n.name, n.device) for n in topo.nics] == [(n, n) for n in names]
    assert [n.gpu_links for n in topo.nics] == [n.gpu_links for n in plain.nics]
    assert topo.links == plain.links and topo.cpu_affinity == plain.cpu_affinity
    assert topo.numa_affinity == plain.numa_affinity == [0] * 4 + [1] * 4


@pytest.mark.parametrize("base, says", [
    ("dgx-a10", "--base dgx-a10: no such profile file, nor a hardware preset: give a profile JSON "
                "file or one of dgx1-v100, dgx-a100, dgx-h100,"),
    ("missing.json", "missing.json: no such file"),
])
def test_a_base_that_is_neither_a_file_nor_a_preset_says_which_presets_there_are(
        tmp_path, monkeypatch, capsys, base, says):
    """Session 39 newcomer pass: `--base dgx-a10` (a typo of dgx-a100) said only "dgx-a10: no
    such file", where `--hardware dgx-a10` lists the presets: a name that is no file and no
    JSON name now gets the presets listed; a missing .json file is still a missing file."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "p.json"
    code = main(["calibrate", "--from-topo", str(H100), "--base", base, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err
    assert not out.exists()


# ------------------------------------------------ session 60: real outputs misread before

H100_MESH = FIX / "h100_x4_nv6_topo.txt"
B300_PASTED = FIX / "b300_x8_colour_codes_pasted_topo.txt"
RTX4090 = FIX / "rtx4090_x8_sys_topo.txt"
OLD_DRIVER = FIX / "old_driver_x4_soc_topo.txt"


def test_four_h100_in_an_nv6_mesh_are_not_offered_the_dgx2_link():
    """NV6 between every pair is a DGX-2 (V100 on NVSwitch, 16 GPUs) or, on 4 GPUs, H100's
    NVLink4 mesh at 3x its bandwidth: 4 GPUs suggest no preset and name both."""
    topo = nvidia_smi.parse_topo_file(H100_MESH)
    assert len(topo.gpus) == 4 and topo.suggested_intra_preset is None
    assert "H100's NVLink4 full mesh" in topo.intra_kind and "DGX-2" in topo.intra_kind
    # a DGX-2 slice of 8 GPUs is still the DGX-2's link: NV6 on more than 4 GPUs
    text = H100_MESH.read_text()
    rows = [f"GPU{i}\t" + "\t".join(" X " if i == j else "NV6" for j in range(8)) for i in range(8)]
    eight = "\t" + "\t".join(f"GPU{i}" for i in range(8)) + "\n" + "\n".join(rows) + "\n"
    assert nvidia_smi.parse_topo_text(eight, "x").suggested_intra_preset == "nvswitch-v100"
    assert "NV6" in text


def test_a_header_whose_colour_codes_lost_their_escape_byte_is_read():
    """'[4mGPU0 ... GPU NUMA ID[0m' (a paste of nvidia-smi's underlined header) reads as the
    terminal's capture does, not as 'no row for GPU0: cut short'."""
    pasted = nvidia_smi.parse_topo_file(B300_PASTED)
    text = B300_PASTED.read_text().replace("[4m", "\x1b[4m").replace("[0m", "\x1b[0m")
    captured = nvidia_smi.parse_topo_text(text, str(B300_PASTED))
    assert pasted.gpus == captured.gpus == [f"GPU{i}" for i in range(8)]
    assert pasted.links == captured.links and pasted.links[0][1] == "NV18"
    assert pasted.numa_affinity == captured.numa_affinity
    assert [n.name for n in pasted.nics] == [f"NIC{i}" for i in range(9)]


def test_pcie_generation_follows_the_driver_era():
    """topo -m has no PCIe generation: SOC (SYS by driver 440, 2019) dates a driver older than
    any PCIe 4.0 GPU (pcie3); a current driver's PCIe-only matrix assumes pcie4 and says so."""
    old = nvidia_smi.parse_topo_file(OLD_DRIVER)
    assert old.links[0] == ["X", "PHB", "SYS", "SYS"] and old.suggested_intra_preset == "pcie3"
    assert "PCIe 3.0" in old.intra_kind and "pcie.link.gen.max" in old.intra_kind
    new = nvidia_smi.parse_topo_file(RTX4090)
    assert new.suggested_intra_preset == "pcie4" and "4.0 assumed" in new.intra_kind


def test_nics_without_a_legend_print_no_none(capsys):
    assert main(["topo", str(RTX4090)]) == 0
    out = capsys.readouterr().out
    assert "NIC0: PHB to GPU6" in out and "(None)" not in out
    assert "GPUs per NUMA node: 0: GPU0, GPU1, GPU2, GPU3; 1: GPU4" in out


def test_from_topo_replaces_a_presets_intra_link_the_server_does_not_have(tmp_path, capsys):
    """The default profile's NVSwitch A100 link (230 GB/s) on a PCIe-only 4090 box was predicted
    in silence; --from-topo now takes the topology's preset where the link is not measured,
    and says so."""
    out = tmp_path / "p.json"
    profile, report = calibrate_from_sources(out, topo_file=str(RTX4090))
    intra = profile.hardware.intra_node
    assert (intra.kind, intra.busbw_GBps) == ("pcie4", 25.2)
    assert any("preset pcie4's figures (25.2 GB/s busbw)" in line and "nvswitch-a100" in line
               for line in report)
    record = next(c for c in profile.links if c.level == "intra_node")
    assert not record.measured and record.numbers_from.startswith("preset pcie4")
    saved = load_profile(out)
    assert saved.hardware.intra_node.kind == "pcie4"
    assert any("preset pcie4's figures" in n for n in saved.notes)
    # the prediction now pays PCIe: 8 devices lose efficiency they did not on NVSwitch
    assert main(["predict", "--profile", str(out), "--devices", "8", "--json"]) == 0
    pcie_eff = json.loads(capsys.readouterr().out)[0]["efficiency"]
    assert main(["predict", "--devices", "8", "--json"]) == 0
    assert pcie_eff < json.loads(capsys.readouterr().out)[0]["efficiency"] - 0.1


def test_from_topo_keeps_a_measured_intra_link_and_says_when_it_names_none(tmp_path):
    """nccl-tests' measured intra link stays whatever the topology suggests; a topology that
    suggests no preset keeps the preset's link with a note saying it is not this server's."""
    nccl = Path(__file__).parent / "fixtures" / "nccl_tests" / "h100_8gpu_all_reduce.txt"
    measured, _ = calibrate_from_sources(tmp_path / "m.json", nccl_tests_files=[str(nccl)],
                                         topo_file=str(RTX4090))
    assert measured.hardware.intra_node.kind != "pcie4"
    assert next(c for c in measured.links if c.level == "intra_node").measured
    kept, report = calibrate_from_sources(tmp_path / "k.json", topo_file=str(H100_MESH))
    assert kept.hardware.intra_node.kind == "nvswitch-a100"
    assert any("kept, not this server's" in line and "names no preset" in line
               for line in report)
