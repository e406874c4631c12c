"""Session 45: the refusal of a tp past a server names every way out the tool runs, not only
'use tp <= 8': a smaller tp, more of the server's GPUs where the job uses fewer
(--gpus-per-node), and hardware whose server, one NVLink domain, holds tp (the presets that do,
or a hardware file). One wording (``layout.tp_above_server``) in the CLI, the library and goal;
each way it offers runs.

By hand: a DGX H100 server holds 8 GPUs; the gb200-nvl72 preset's server is its 72-GPU NVLink
rack, of which tp 16 divides 64 (16 x 4), not 72; at --gpus-per-node 4 a DGX H100's 8 GPUs hold
tp 8; no preset's server holds tp 128."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim import presets
from scalesim.device_nouns import CPU_NOUNS
from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout, layout_problems, tp_above_server
from scalesim.predict import predict
from scalesim.profiles import load_workload, profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout

LLAMA = ["--workload", "llama3-8b"]
TP16_ON_DGX = ("tp 16 > 8 GPUs per server (tensor parallelism stays inside one server); use tp "
               "<= 8, or hardware whose server (one NVLink domain) holds 16 GPUs: the preset "
               "gb200-nvl72 at 64 GPUs per rack, or a hardware file with devices_per_node a "
               "multiple of 16")


def _cli_refusal(capsys, argv) -> str:
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, err)
    return err.strip()


def test_the_cli_names_a_smaller_tp_and_the_hardware_that_holds_it(capsys):
    for command in ("predict", "sweep", "decide"):
        line = _cli_refusal(capsys, [command, *LLAMA, "--hardware", "dgx-h100", "--tp", "16",
                                     "--devices", "64"])
        assert line == f"scalesim {command}: error: {TP16_ON_DGX}"
    line = _cli_refusal(capsys, ["goal", *LLAMA, "--hardware", "dgx-h100", "--tp", "16",
                                 "--max-devices", "64", "--layout", "given", "--deadline", "30d",
                                 "--budget", "1e6", "--train-samples", "1e6", "--price", "3"])
    assert line == f"scalesim goal: error: {TP16_ON_DGX}"  # was 'change --tp/--pp or --max-devices'


def test_each_way_out_it_names_runs(capsys):
    """tp 8 on the DGX H100; tp 16 on gb200-nvl72 at 64 GPUs per rack."""
    for argv in (["--hardware", "dgx-h100", "--tp", "8"],
                 ["--hardware", "gb200-nvl72", "--gpus-per-node", "64", "--tp", "16"]):
        code, out, err = run_cli(capsys, ["predict", *LLAMA, *argv, "--devices", "64", "--json"])
        assert code == 0, err


def test_fewer_gpus_per_server_than_the_hardware_holds_names_more(capsys):
    line = _cli_refusal(capsys, ["predict", *LLAMA, "--hardware", "dgx-h100", "--gpus-per-node",
                                 "4", "--tp", "8", "--devices", "16"])
    assert line.endswith("tp 8 > 4 GPUs per server (tensor parallelism stays inside one server); "
                         "use tp <= 4, or 8 GPUs per server (the hardware's servers hold 8)")
    code, _, err = run_cli(capsys, ["predict", *LLAMA, "--hardware", "dgx-h100",
                                    "--gpus-per-node", "8", "--tp", "8", "--devices", "16"])
    assert code == 0, err
    # gb200-nvl72 at 8 GPUs per rack: its own rack holds tp 16 at 64 per rack
    line = _cli_refusal(capsys, ["predict", *LLAMA, "--hardware", "gb200-nvl72",
                                 "--gpus-per-node", "8", "--tp", "16", "--devices", "64"])
    assert line.endswith("use tp <= 8, or 64 GPUs per rack (the hardware's racks hold 72)")


def test_the_library_raises_the_same_line_with_both_knobs():
    """Both knobs, and the hardware preset's where the line names a preset that holds tp
    (session 46); not where none does, nor where the server's own devices are the way out."""
    profile = profile_from_presets(presets.get_hardware("dgx-h100"), load_workload("llama3-8b"))
    with pytest.raises(ScalesimError) as caught:
        predict(profile, Scenario(devices=[64], layout=ScenarioLayout(tp=16)))
    assert str(caught.value) == TP16_ON_DGX
    assert caught.value.knobs == ("tp", "devices_per_node", "hardware")
    assert tp_above_server(128, 8).knobs == ("tp", "devices_per_node")  # no preset holds 128
    assert tp_above_server(8, 4, server_devices=8).knobs == ("tp", "devices_per_node")
    assert tp_above_server(4, 2, CPU_NOUNS).knobs == ("tp", "devices_per_node")
    assert layout_problems(ParallelLayout(tp=16, dp=4, global_batch=4, micro_batch=1), 8)[0] == TP16_ON_DGX


def test_no_preset_holds_it_then_a_hardware_file_and_a_cpu_host_names_no_gpu_preset():
    assert tp_above_server(128, 8).endswith("use tp <= 8, or hardware whose server (one NVLink "
                                            "domain) holds 128 GPUs: a hardware file with "
                                            "devices_per_node a multiple of 128")
    assert tp_above_server(4, 2, CPU_NOUNS) == ("tp 4 > 2 processes per host (tensor parallelism "
                                                "stays inside one host); use tp <= 2")
    assert tp_above_server(4, 2, CPU_NOUNS, 4).endswith(
        "use tp <= 2, or 4 processes per host (the hardware's hosts hold 4)")


def test_the_presets_named_are_those_whose_server_holds_tp():
    held = presets.presets_holding_tp(16, 8)
    assert held == [(n, hw.devices_per_node // 16 * 16) for n, hw in presets.HARDWARE.items()
                    if hw.devices_per_node >= 16]
    assert held == [("gb200-nvl72", 64)]
    assert presets.presets_holding_tp(24, 8) == [("gb200-nvl72", 72)]
    assert presets.presets_holding_tp(128, 8) == []


def test_a_tp_that_does_not_divide_the_server_names_the_gpus_per_server_it_divides(capsys):
    line = _cli_refusal(capsys, ["predict", *LLAMA, "--hardware", "gb200-nvl72", "--tp", "16",
                                 "--devices", "64"])
    # the tps named are those the model's 64 heads (8 kv) allow too (session 60: 3, 6, 9, ...
    # divide the rack but not the heads, and were refused once given)
    assert line.endswith("tp 16 does not divide the 72 GPUs per rack; use tp 1, 2, 4 or 8, or "
                         "64 GPUs per rack")


def test_the_app_box_says_the_same_ways_out():
    """The app's 'Cannot predict' box holds the same line, and its controls to change."""
    from app_harness import open_app

    at = open_app({"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "grid": "list",
                   "dlist": "64", "tp": "16"})
    (box,) = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert "use Tensor parallel \\<= 8, or hardware whose server (one NVLink domain) holds 16 " \
           "GPUs: the preset gb200-nvl72 at 64 GPUs per rack" in box, box
    # the line names Tensor parallel itself (session 48): not listed again
    assert " Controls to change: Devices per server, Hardware preset." in box, box
