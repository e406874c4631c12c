"""Session 53: the sentences session 52 left saying "server" for a GB200 NVL72's rack.

The gb200-nvl72 preset's server (its NVLink domain) is a rack of 72 GPUs in compute trays of 4
(``device_nouns.hardware_nouns``); a DGX keeps "server". By hand: tp 16 does not divide 72, so
the preset runs it at 64 GPUs (the largest multiple of 16 a rack holds)."""

from __future__ import annotations

from cli_harness import run_cli

GB200 = ["--hardware", "gb200-nvl72"]


def test_the_tp_refusal_names_the_nvl72_preset_by_its_rack(capsys):
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--workload",
                                      "llama3-70b", "--devices", "64", "--tp", "16"])
    assert code == 2 and out == ""
    assert "the preset gb200-nvl72 at 64 GPUs per rack, or a hardware file" in err  # was 'server'
    assert err.startswith("scalesim predict: error: tp 16 > 8 GPUs per server (tensor "
                          "parallelism stays inside one server)")  # the DGX's own server
    code, out, err = run_cli(capsys, ["predict", *GB200, "--workload", "llama3-70b",
                                      "--devices", "144", "--tp", "144"])
    assert code == 2
    assert err == ("scalesim predict: error: tp 144 > 72 GPUs per rack (tensor parallelism "
                   "stays inside one rack); use tp <= 72, or hardware whose rack (one NVLink "
                   "domain) holds 144 GPUs: a hardware file with devices_per_node a multiple of "
                   "144\n")
