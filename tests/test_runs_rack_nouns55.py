"""diagnose of a runs file said "server" for a GB200 NVL72 rack even where --gpu named the GB200
and each run put 72 GPUs (a rack) in a node: "Likely cause: Inter-server link", "Faster
inter-server network". The runs' nouns now follow their GPU (``Runs.nouns``,
``device_nouns.rack_of``): a server that the GPU's compute trays fill several times over is a
rack, as predict says the gb200-nvl72 preset's; runs that count a GB200 job's 4-GPU trays as
their nodes keep "server" (the tray is their server).

By hand: 576 samples a step in 10 s on 72 GPUs (57.6 samples/s), 1,152 in 13 s on 144 (88.6):
88.6 / (2 x 57.6) = 77 % efficient."""

from __future__ import annotations

from cli_harness import run_cli

from scalesim import presets
from scalesim.device_nouns import hardware_nouns, rack_of

RACKS = ("devices,nodes,step_time_s,global_batch\n72,1,10,576\n144,2,13,1152\n"
         "288,4,16,2304\n576,8,19,4608\n")
TRAYS = "devices,nodes,step_time_s,global_batch\n4,1,10,32\n8,2,13,64\n16,4,16,128\n"
# the one sentence that names a server of any GPU: the remedies that send you to plan --hardware
ANY_SERVER = "--hardware <a server of its GPU>"


def _diagnosis(capsys, tmp_path, text: str, gpu: str) -> str:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--workload", "llama3-8b",
                                      "--gpu", gpu])
    assert code == 0, err
    return out


def test_runs_of_whole_gb200_racks_are_said_in_racks(capsys, tmp_path):
    out = _diagnosis(capsys, tmp_path, RACKS, "GB200")
    assert "Likely cause: Inter-rack link" in out
    assert "efficiency 100% at 72 devices in one rack, 77% at 144 on 2 racks" in out
    assert "Faster inter-rack network" in out
    assert "crossing a rack boundary" in out
    assert "1152 devices on  16 racks" in out
    assert "server" not in out.replace(ANY_SERVER, "")


def test_the_same_runs_on_another_gpu_keep_servers(capsys, tmp_path):
    out = _diagnosis(capsys, tmp_path, RACKS, "H100 SXM")
    assert "Likely cause: Inter-server link" in out
    assert "efficiency 100% at 72 devices in one server, 77% at 144 on 2 servers" in out
    assert "rack" not in out


def test_runs_that_count_gb200_trays_as_nodes_keep_servers(capsys, tmp_path):
    out = _diagnosis(capsys, tmp_path, TRAYS, "GB200")
    assert "at 4 devices in one server" in out and "rack" not in out


def test_a_server_is_a_rack_where_its_gpus_trays_fill_it_several_times():
    assert rack_of("GB200", 72) and rack_of("NVIDIA GB300", 72)
    assert not rack_of("GB200", 4)  # one tray: the server is the tray
    assert not rack_of("GB200", 6)  # trays of 4 do not fill 6
    assert not rack_of("H100 SXM", 72) and not rack_of(None, 72)


def test_a_hardware_file_of_a_gb200_rack_without_an_allocation_unit_says_rack():
    rack = presets.get_hardware("gb200-nvl72")
    assert hardware_nouns(rack.model_copy(update={"devices_per_allocation": None})).server == "rack"
    tray = rack.model_copy(update={"devices_per_allocation": None, "devices_per_node": 4})
    assert hardware_nouns(tray).server == "server"
