"""Session 53: a job on 8 of a GB200 NVL72 rack's 72 GPUs was billed two ways in one output.

decide's price line said "billed per allocation unit of 4 GPUs (...: whole trays of the job's
GPUs, not whole racks of 8)" (the rack's size taken from the job's 8 per rack), and the note of
the GPUs used per rack (``predict.server_use_words``) said "billed per whole rack of 72 GPUs"
(its shapes read without the allocation unit). The cost columns bill 4-GPU trays
(``training_time.resolve_goal``): 144 GPUs = 36 trays. Both lines now say the trays, of a
72-GPU rack; a DGX job on part of its servers keeps "billed per whole server of 8 GPUs"."""

from __future__ import annotations

from cli_harness import run_cli

TRAYS = ("billed per allocation unit of 4 GPUs (the compute tray a scheduler hands out: whole "
         "trays of the job's GPUs, not whole racks of 72)")


def _flat(capsys, argv: list[str]) -> str:
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return " ".join(out.split())


def test_decide_on_part_of_each_rack_bills_trays_in_every_line(capsys):
    out = _flat(capsys, ["decide", "--hardware", "gb200-nvl72", "--workload", "gpt-7b",
                         "--devices", "144", "--gpus-per-node", "8", "--global-batch", "576",
                         "--price", "6", "--train-samples", "1e8"])
    assert f"price (every row): price per device-hour given by the user, {TRAYS}" in out
    assert f"note: 8 of 72 GPUs per rack: intra 720, inter 384 GB/s busbw (the links and NICs " \
           f"they reach), {TRAYS}" in out
    assert "whole rack of 72" not in out and "racks of 8" not in out


def test_predict_on_part_of_each_rack_bills_as_its_cost_column(capsys):
    out = _flat(capsys, ["predict", "--hardware", "gb200-nvl72", "--workload", "gpt-7b",
                         "--devices", "144", "--gpus-per-node", "8", "--global-batch", "576",
                         "--price", "6"])
    assert out.count(TRAYS) == 2  # the scenario's line and the cost line
    assert "whole rack of 72" not in out


def test_a_dgx_job_on_part_of_each_server_still_rents_the_server(capsys):
    out = _flat(capsys, ["predict", "--hardware", "dgx-h100", "--workload", "gpt-7b",
                         "--devices", "16", "--gpus-per-node", "4", "--global-batch", "64",
                         "--price", "6"])
    assert "4 of 8 GPUs per server: " in out
    assert "busbw (the links and NICs they reach), billed per whole server of 8 GPUs" in out
