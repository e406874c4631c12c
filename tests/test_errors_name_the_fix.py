"""Layout refusals a user hits name the setting to change and a valid value where one is
computable (session 42): '--pp 64' on a 32-layer model says 'use pp <= 32', goal's
'--global-batch' names the flag to drop and the one to give."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim.layout import ParallelLayout, chunks_fix, layout_problems

LLAMA8 = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]


@pytest.mark.parametrize("argv, fix", [
    (["--devices", "64", "--pp", "64"], "32 layers cannot fill --pp 64 x --virtual-stages 1 model "
                                        "chunks; use --pp <= 32"),
    (["--devices", "64", "--tp", "16"], "(tensor parallelism stays inside one server); use tp <= 8"),
    # tp 3 divides no server of 8, so no count runs it (session 48: was '... multiples of it
    # (63 or 66)', counts that fill no whole servers, each refused in turn)
    (["--devices", "64", "--tp", "3"], "tp 3 does not divide the 8 GPUs per server; use tp 1, 2, "
                                       "4 or 8, or 6 GPUs per server"),
    (["--devices", "64", "--pp", "3"], "devices 64 are not divisible by tp x pp = 3; give device "
                                       "counts that are multiples of it (48 or 72), or a tp x pp "
                                       "that divides 64"),
    (["--devices", "64", "--pp", "4", "--virtual-stages", "2", "--accumulation", "3"],
     "3 micro-batches per step are not a multiple of --pp 4 (Megatron's rule); use --accumulation 4"),
    (["--devices", "16", "--cp", "16", "--seq-len", "4100"],
     "sequence length 4100 is not divisible by 2 x --cp 16 (load-balanced context parallelism); use --cp 2, "
     "or --seq-len 4096 or 4128"),
])
def test_a_layout_refusal_names_a_valid_value(capsys, argv, fix):
    code, out, err = run_cli(capsys, ["predict", *LLAMA8, *argv])
    assert code == 2 and out == ""
    assert fix in err and len(err.strip().splitlines()) == 1


def test_the_suggested_value_runs(capsys):
    """The value an error offers is one the command takes: pp 32 on the 32-layer model."""
    code, out, err = run_cli(capsys, ["predict", *LLAMA8, "--devices", "64", "--pp", "32",
                                      "--accumulation", "32"])
    assert code == 0, err


def test_too_few_layers_for_the_chunks_offer_pp_and_virtual_stages():
    assert chunks_fix(32, 64, 1) == "use {pp} <= 32"  # a template: the knobs by their controls
    assert chunks_fix(32, 8, 8) == "use {pp} <= 4 or {virtual_stages} <= 4"
    assert chunks_fix(2, 4, 4) == "use {pp} 1 (the 2 layers fill no pipeline)"
    layout = ParallelLayout(dp=1, tp=1, pp=8, global_batch=8, micro_batch=1, schedule="interleaved",
                            virtual_stages=8)
    assert "use --pp <= 4 or --virtual-stages <= 4" in " ".join(layout_problems(layout, 8, layers=32))


def test_goal_names_the_global_batch_flag_and_the_one_to_give(capsys):
    code, out, err = run_cli(capsys, ["goal", "--train-samples", "2e9", "--deadline", "3d",
                                      "--budget", "5e4", "--global-batch", "512"])
    assert code == 2 and out == ""
    assert "--global-batch is not used" in err and "give --batch N" in err
