"""Session 51: the HTML report's layout line (``layout_titles.page_layout_line``) said its
settings by the sidebar's labels since session 50 but its notes in the CLI's words: the HSDP
clause ('HSDP: ZeRO states sharded over 8 ranks, replicated across data-parallel ranks / shard
group copies, ...'), the ignored recompute style ('recompute style early-stop ignored: recompute
is selective, not full'), FSDP under a pipeline ('zero3 under a pipeline') and the stage note
('36 layers over pp 2 x 2 virtual stages'). Each now names the page's controls; predict's
layout line is as before."""

from __future__ import annotations

from scalesim.app.plan import make_plan
from scalesim.app.report import scenario_lines
from scalesim.app.state import decode_query, preset_profile

# gpt-7.5b (36 layers) on DGX A100 servers, up to 64 GPUs
BASE = {"v": "18", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64"}


def _layout_line(**link) -> str:
    state = decode_query({**BASE, **link})[0]
    return dict(scenario_lines(make_plan(preset_profile(state), state)))["layout"]


def test_the_shard_group_is_said_by_its_control():
    line = _layout_line(tp="2", strat="zero3", sg="8")
    assert ("Shard group (HSDP) 8: ZeRO states sharded over 8 ranks, replicated across the rest "
            "of the data-parallel ranks where they exceed 8 (elsewhere sharded over all of "
            "them);") in line
    assert "HSDP:" not in line and "shard group copies" not in line


def test_an_ignored_recompute_style_is_said_by_the_recompute_controls():
    line = _layout_line(tp="2", rec="selective", rs="early-stop")
    assert ("Activation recompute selective (Recompute style early-stop ignored: Activation "
            "recompute is selective, not full)") in line


def test_fsdp_under_a_pipeline_and_the_stages_are_said_by_the_controls():
    """ZeRO-3 under 2 stages x 2 virtual stages: 36 layers / (2 x 2) = 9 a chunk."""
    line = _layout_line(pp="2", strat="zero3", sched="interleaved", vs="2", acc="8")
    assert "; Strategy ZeRO-3 / FSDP under a pipeline: FSDP keeps each stage's" in line
    assert "; 36 layers over Pipeline stages 2 x Virtual stages 2: 9 layers a chunk" in line
    assert "zero3 under" not in line and "over pp " not in line


def test_uneven_stages_name_the_pipeline_control_and_keep_megatrons_flag():
    """36 layers over 5 stages: 4 of ceil(36 / 5) = 8 and one of 36 - 32 = 4; Megatron's own
    flag is Megatron's, kept."""
    line = _layout_line(pp="5", acc="10", grid="list", dlist="40")
    assert ("36 layers over Pipeline stages 5: 4 stages of 8 layers and one of 4 (Megatron-LM: "
            "--decoder-last-pipeline-num-layers 4;") in line


def test_a_degree_of_1_is_left_out_of_the_reports_split_as_every_layout_title_does():
    """Tensor parallel 2 alone: 'Tensor parallel 2' and dp = devices / Tensor parallel (was
    'Tensor parallel 2 x Pipeline stages 1' and '/ (Tensor parallel x Pipeline stages)');
    Pipeline stages 5 alone the same; recompute full unsplit: no degree at all, dp = devices."""
    line = _layout_line(tp="2")
    assert line.startswith("Tensor parallel 2, Activation recompute none, ")
    assert "; data-parallel ranks = devices / Tensor parallel; " in line
    assert "Pipeline stages" not in line
    line = _layout_line(pp="5", acc="10", grid="list", dlist="40")
    assert line.startswith("Pipeline stages 5 (1F1B), Activation recompute none, ")
    assert "; data-parallel ranks = devices / Pipeline stages; " in line
    assert "Tensor parallel" not in line
    line = _layout_line(rec="full")
    assert line.startswith("Activation recompute full, Sequence parallelism off; "
                           "data-parallel ranks = devices; ")


def test_both_splits_keep_the_product():
    line = _layout_line(tp="2", pp="2", mb="1", acc="8")
    assert line.startswith("Tensor parallel 2 x Pipeline stages 2 (1F1B), ")
    assert "; data-parallel ranks = devices / (Tensor parallel x Pipeline stages); " in line
