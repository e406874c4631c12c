"""Session 51: three more places on the planner page and in its HTML report that said a layout
in the CLI's notation or with a degree of 1 where the page's layout titles use its control
labels and leave a 1 out (``layout_titles.page_title``, ``page_degrees``)."""

from __future__ import annotations

from scalesim.app.charts import chart_text
from scalesim.app.named_controls import in_control_words
from scalesim.app.plan import build_scenario, make_plan, remedy_note
from scalesim.app.state import AppState, decode_query, preset_profile

from scalesim.device_nouns import GPU_NOUNS
from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout, layout_problems
from scalesim.remedies import tp_overlap_reason

# gpt-7.5b (36 layers) on DGX A100 servers, up to 64 GPUs
BASE = {"v": "18", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64"}


def _notes(**link) -> list[str]:
    state = decode_query({**BASE, **link})[0]
    return build_scenario(state, preset_profile(state))[1]


def test_the_pages_scenario_notes_name_the_recompute_controls():
    """Was 'recompute style early-stop ignored: recompute is selective, not full'."""
    notes = _notes(tp="2", rec="selective", rs="early-stop")
    assert ("Recompute style early-stop ignored: Activation recompute is selective, not full"
            in notes)


def test_the_pages_stage_note_names_the_pipeline_control():
    """36 layers over 5 stages: 4 of ceil(36 / 5) = 8 and one of 36 - 32 = 4 (was '36 layers
    over pp 5: ...'); 2 x 2 virtual stages: 36 / 4 = 9 a chunk (was 'over pp 2 x 2 virtual
    stages')."""
    notes = _notes(pp="5", acc="10", grid="list", dlist="40")
    assert any(n.startswith("36 layers over Pipeline stages 5: 4 stages of 8 layers and one of "
                            "4 (Megatron-LM: --decoder-last-pipeline-num-layers 4;")
               for n in notes), notes
    notes = _notes(pp="2", sched="interleaved", vs="2", acc="8")
    assert any(n.startswith("36 layers over Pipeline stages 2 x Virtual stages 2: 9 layers a "
                            "chunk") for n in notes), notes
    assert not any("over pp " in n for n in notes)


def _count_box(**layout) -> str:
    """``layout.count_problem``'s refusal of ``layout`` on servers of 8, as the page says it
    (``in_control_words``) and as the CLI does."""
    schedule = "1f1b" if layout.get("pp", 1) > 1 else "none"
    refusal, = layout_problems(ParallelLayout(micro_batch=1, global_batch=layout["dp"],
                                              schedule=schedule, **layout), 8)
    return str(in_control_words(ScalesimError(refusal), AppState(), GPU_NOUNS)), str(refusal)


def test_a_count_refusals_split_leaves_a_degree_of_1_out_on_the_page():
    """3 x 2 x 2 = 12 devices, not whole servers of 8: each degree said; Pipeline stages 2
    alone: 'Tensor parallel 1' left out (was '(3 data-parallel ranks x Tensor parallel 1 x
    Pipeline stages 2)'); no split: the ranks alone. The CLI's line keeps its notation."""
    page, cli = _count_box(dp=3, tp=2, pp=2)
    assert page == ("12 devices (3 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2) "
                    "do not fill whole servers of 8")
    page, cli = _count_box(dp=6, pp=2)
    assert page == ("12 devices (6 data-parallel ranks x Pipeline stages 2) do not fill whole "
                    "servers of 8")
    assert cli == "12 devices (dp 6 x tp 1 x pp 2 x cp 1) do not fill whole servers of 8"
    page, _ = _count_box(dp=3, tp=1, pp=1, cp=4)
    assert page == ("12 devices (3 data-parallel ranks x Context parallelism 4) do not fill "
                    "whole servers of 8")
    page, _ = _count_box(dp=12)
    assert page == "12 devices (12 data-parallel ranks) do not fill whole servers of 8"


def test_a_product_keeps_its_degree_of_1():
    """'Tensor parallel 2 x Pipeline stages 1 = 2': the 1 is a factor of the product said."""
    notes = _notes(tp="2")
    assert any(n.startswith("Tensor parallel 2 x Pipeline stages 1 = 2 does not divide the "
                            "devices") for n in notes), notes


def test_the_reports_remedy_chart_text_says_the_titles_as_the_page():
    """Checked, no fix: the HTML report's caption of the remedies chart (``charts.chart_text``)
    reads ``plan.remedies``, whose titles ``make_plan`` says once in the page's labels
    (``layout_titles.with_page_titles``), as the page's remedy list and the report's table do:
    llama3-8b on 64 H100s, the split remedy 64 / (Tensor parallel 2) = 32 data-parallel ranks,
    not the CLI's 'dp 32 x tp 2 x pp 1'."""
    state = decode_query({"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "64"})[0]
    plan = make_plan(preset_profile(state), state)
    split, = (r for r in plan.remedies if r.title.startswith("Split the model: "))
    assert split.title.startswith("Split the model: 32 data-parallel ranks x Tensor parallel 2, "
                                  "ZeRO-2, Micro-batch 2 per model replica x ")
    text = chart_text(plan, "remedies")
    assert f"remedy: {plan.remedies[0].title} (makes it run, " in text
    assert f"; {split.title} (makes it run, " in text
    assert "dp 32" not in text and "tp 2 x pp 1" not in text


def test_the_tp_overlap_remedys_reason_leaves_the_clis_tp_1_gloss_out_on_the_page():
    """Found checking the report's remedies: the page's and the report's note said 'the layout
    has no tensor parallelism (tp 1)'; now without the gloss, as 'one data-parallel replica'
    leaves out ' (dp 1)'. The library's (and so the CLI's) reason keeps it."""
    state = decode_query({"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "64"})[0]
    plan = make_plan(preset_profile(state), state)
    overlap, = (r for r in plan.remedies if r.title.startswith("Overlap tensor-parallel"))
    assert remedy_note(overlap) == "the layout has no tensor parallelism"
    assert tp_overlap_reason(plan.profile, plan.scenario) == (
        "the layout has no tensor parallelism (tp 1)")
