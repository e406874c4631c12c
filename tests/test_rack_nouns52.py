"""Session 52: a GB200 NVL72's server is said as a rack.

The gb200-nvl72 preset's server (``devices_per_node``, its NVLink domain) is a rack of 72 GPUs
handed out in compute trays of 4 (``devices_per_allocation``); every sentence called it a
"server" ('Add one server (256 -> 328 devices)'). ``device_nouns.hardware_nouns`` names it a
rack where the NVLink domain holds several allocation units; a DGX keeps "server", a CPU
calibration "host". By hand: 256 + one rack of 72 = 328 devices; 504 devices = 7 racks."""

from __future__ import annotations

from app_harness import open_app, preset_query
from cli_harness import run_cli

from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS, hardware_nouns, is_rack
from scalesim.presets import HARDWARE

GB200 = ["--hardware", "gb200-nvl72"]


def test_the_nvl72_rack_is_a_rack_and_a_dgx_stays_a_server():
    rack = hardware_nouns(HARDWARE["gb200-nvl72"])
    assert (rack.server, rack.servers, rack.count(2, "server")) == ("rack", "racks", "2 racks")
    assert rack.link("inter_node") == "inter-rack link"
    assert rack.devices == "devices" and rack.gpus == "GPUs"  # only the server's noun changes
    assert (rack.header("nodes"), rack.header("GPUs")) == ("racks", "GPUs")
    assert GPU_NOUNS.header("nodes") == "nodes"  # a DGX's table keeps its header
    assert hardware_nouns(HARDWARE["dgx-h100"]) == GPU_NOUNS
    # the allocation unit is the whole NVLink domain: a server, as before the field
    whole = HARDWARE["gb200-nvl72"].model_copy(update={"devices_per_allocation": 72})
    assert not is_rack(whole) and hardware_nouns(whole) == GPU_NOUNS
    cpu = HARDWARE["gb200-nvl72"].model_copy(update={"device_name": "CPU: AMD EPYC"})
    assert hardware_nouns(cpu) == CPU_NOUNS  # a CPU calibration's host stays a host


def test_decide_adds_one_rack(capsys):
    code, out, err = run_cli(capsys, ["decide", *GB200, "--workload", "llama3-70b", "--devices",
                                      "128,256", "--global-batch", "256"])
    assert code == 0, err
    assert "Add one rack (256 -> 328 devices) [2]" in out  # was 'Add one server'
    assert "server" not in out, out


def test_decide_bills_trays_not_whole_racks(capsys):
    code, out, err = run_cli(capsys, ["decide", *GB200, "--workload", "gpt-7b", "--devices",
                                      "144", "--global-batch", "576", "--price", "6",
                                      "--train-samples", "1e8"])
    assert code == 0, err
    assert "Add 2 racks (144 -> 288 devices) [1]" in out
    flat = " ".join(out.split())
    assert "whole trays of the job's GPUs, not whole racks of 72)" in flat, out
    assert "note: one more rack does not take today's layout" in out
    assert "server" not in out, out


def test_predict_and_plan_say_72_per_rack(capsys):
    code, out, err = run_cli(capsys, ["predict", *GB200, "--workload", "llama3-70b",
                                      "--devices", "144,288", "--global-batch", "1152"])
    assert code == 0, err
    assert ("hardware: gb200-nvl72 (GB200, 72 per rack; whole rack's busbw: intra 720 GB/s, "
            "inter 3456 GB/s over its 72 NICs (48 each))") in out
    assert "note: inter-rack link not measured (a preset profile)" in out
    assert "devices racks dp x tp x pp" in out  # the count columns (was 'devices nodes')
    assert "the rows on several racks use those numbers" in out
    assert "server" not in out, out
    code, out, err = run_cli(capsys, ["plan", *GB200, "--workload", "llama3-70b", "--devices",
                                      "144,288", "--global-batch", "1024"])
    assert code == 0, err
    assert "hardware: gb200-nvl72 (GB200, 72 per rack;" in out
    assert "server" not in out, out


def test_goal_counts_racks_and_sizes_the_inter_rack_network(capsys):
    code, out, err = run_cli(capsys, ["goal", *GB200, "--workload", "gpt-7b", "--train-samples",
                                      "1e8", "--deadline", "7d", "--budget", "500000",
                                      "--max-devices", "512", "--price", "6"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert "Cheapest plan that meets the goal: 504 devices (7 racks)" in flat
    assert "Least inter-rack network with which a plan meets the goal (on today's racks" in flat
    assert "any inter-rack bandwidth (even 0.001 GB/s busbw)" in flat
    assert "72 devices (1 rack)" in out
    assert "server" not in out, out


def test_the_page_labels_and_says_the_rack():
    at = open_app(preset_query(hw="gb200-nvl72", wl="llama3-70b", grid="list",
                               dlist="144,288"))
    assert at.sidebar.number_input(key="k_dpn").label == "Devices per rack"
    assert at.sidebar.number_input(key="k_tp").label == "Tensor parallel (tp, inside one rack)"
    said = [c.value for c in at.caption if "Not shown" in c.value]
    assert said and "Add one rack (288 → 360 devices)" in said[0], said
    notes = " ".join(m.value for m in at.markdown)
    assert "**inter-rack link**" in notes and "inter-server" not in notes
