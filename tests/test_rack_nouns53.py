"""Session 53: the sentences session 52 left saying "server" for a GB200 NVL72's rack.

The gb200-nvl72 preset's server (its NVLink domain) is a rack of 72 GPUs in compute trays of 4
(``device_nouns.hardware_nouns``); a DGX keeps "server". By hand: tp 16 does not divide 72, so
the preset runs it at 64 GPUs (the largest multiple of 16 a rack holds)."""

from __future__ import annotations

from app_harness import open_app, preset_query
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


# 8 of each rack's 72 GPUs at a 20 GB/s whole-rack busbw: they reach 8 of its 72 NICs' share,
# 20 x 8 / 72 = 2.22 GB/s; DGX A100's 8 x 200 Gb/s HDR network: 192 whole, 24 for the 8 GPUs
PART_OF_RACKS = [*GB200, "--workload", "gpt-7b", "--gpus-per-node", "8", "--price", "6",
                 "--train-samples", "1e8", "--inter-busbw", "20"]


def test_decide_says_the_whole_racks_busbw(capsys):
    code, out, err = run_cli(capsys, ["decide", *PART_OF_RACKS, "--devices", "144",
                                      "--global-batch", "576"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert ("2.22 -> 24 GB/s busbw for the job's 8 of 72 GPUs per rack (whole rack 20 -> 192)"
            in flat)  # was 'whole server 20 -> 192'
    assert "today 2.22 GB/s busbw for the job's 8 of 72 GPUs per rack (whole rack 20)" in flat
    assert "whole server" not in flat, out


def test_goal_says_the_whole_racks_busbw(capsys):
    code, out, err = run_cli(capsys, ["goal", *PART_OF_RACKS, "--deadline", "7d", "--budget",
                                      "500000", "--max-devices", "512"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert "today 2.22 GB/s busbw for the job's 8 of 72 GPUs per rack (whole rack 20)" in flat
    assert "24 GB/s busbw for the job's 8 of 72 GPUs per rack (whole rack 192), 6 us" in flat
    assert "whole server" not in flat, out


def test_decide_recommends_the_inter_rack_network(capsys):
    code, out, err = run_cli(capsys, ["decide", *PART_OF_RACKS, "--devices", "144",
                                      "--global-batch", "576"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert ("recommendation: Upgrade the inter-rack network to 8 x 200 Gb/s HDR InfiniBand (as "
            "in a DGX A100)") in flat  # was 'the inter-server network'
    assert "server" not in out, out


def test_sweeps_sequence_parallel_on_no_row_says_a_tp_within_a_rack(capsys):
    code, out, err = run_cli(capsys, ["sweep", *GB200, "--workload", "llama3-8b", "--devices",
                                      "72", "--global-batch", "576", "--sequence-parallel-values",
                                      "on,off", "--tp-values", "1"])
    assert code == 2 and out == ""
    assert "; give a --tp-values that reaches 2 within a rack, or drop 'on' from " \
           "--sequence-parallel-values" in err  # was 'within a server'
    code, out, err = run_cli(capsys, ["sweep", *GB200, "--workload", "llama3-8b", "--devices",
                                      "72", "--global-batch", "576", "--sequence-parallel"])
    assert code == 2
    assert "give --tp (in a sweep: or a --tp-values that reaches 2 within a rack)" in err


def test_goal_counts_the_training_length_at_one_racks_batch(capsys):
    """gpt-7b, one GPU a replica: one rack's 72 replicas at micro-batch 1 = global batch 72."""
    code, out, err = run_cli(capsys, ["goal", *GB200, "--workload", "gpt-7b", "--train-samples",
                                      "1e8", "--deadline", "7d", "--budget", "500000",
                                      "--max-devices", "288", "--price", "6", "--critical-batch",
                                      "2048", "--min-samples", "1e7"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert ("the training length counts samples at a global batch of 72 (micro-batch 1 x 72 "
            "replicas of one rack x accumulation 1)") in flat  # was 'of one server'
    assert "server" not in out, out


def test_the_pages_intra_link_help_says_a_whole_racks_ring():
    at = open_app(preset_query(hw="gb200-nvl72", wl="llama3-70b"))
    help_text = at.sidebar.selectbox(key="k_intra").help
    assert help_text.startswith("A whole rack's ring bus bandwidth."), help_text  # was server's
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-70b"))
    assert at.sidebar.selectbox(key="k_intra").help.startswith("A whole server's ring")


def test_an_upgrade_of_more_nics_than_the_rack_has_says_per_rack(capsys, tmp_path):
    """A GB200 NVL72 hardware file whose racks have 4 NICs (192 GB/s busbw): the 8 x 400 Gb/s
    NDR upgrade needs 8 NICs a rack, more than its 4."""
    from scalesim.presets import HARDWARE

    rack = HARDWARE["gb200-nvl72"]
    four = rack.inter_node.model_copy(update={"nics_per_node": 4, "busbw_GBps": 192.0})
    path = tmp_path / "gb200_4nic.json"
    path.write_text(rack.model_copy(update={"name": "gb200-4nic", "inter_node": four})
                    .model_dump_json(exclude_none=True))
    code, out, err = run_cli(capsys, ["decide", "--hardware", str(path), "--workload", "gpt-7b",
                                      "--devices", "144", "--global-batch", "576", "--price", "6",
                                      "--train-samples", "1e8"])
    assert code == 0, err
    flat = " ".join(out.split())
    assert "192 -> 384 GB/s busbw, needs 8 NICs per rack (this rack has 4)" in flat  # was server
    assert "server" not in out, out
