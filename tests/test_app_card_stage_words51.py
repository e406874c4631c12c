"""Session 51: the decision card's note of uneven pipeline stages named the pipeline in the
CLI's words on the page ('32 layers over pp 3: ...', ``decision._uneven_stage_notes``), where
the planner page's own stage note and the Goal tab's name its control ('32 layers over
Pipeline stages 3: ...'); decide now takes how to name a pipeline (``pipeline``, the app's
``page_pipeline_words``), and ``scalesim decide`` keeps 'over pp 3'."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.layout_titles import page_pipeline_words
from scalesim.app.plan import card_notes, make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import decide
from scalesim.device_nouns import GPU_NOUNS
from scalesim.pipeline_stages import uneven_notes

# llama3-8b (32 layers) on 24 H100s at Tensor parallel 2 x Pipeline stages 3: 2 stages of
# ceil(32 / 3) = 11 layers and one of 32 - 22 = 10
STAGES = ("32 layers over {} 3: 2 stages of 11 layers and one of 10 (Megatron-LM: "
          "--decoder-last-pipeline-num-layers 10; torchtitan splits it so by itself)")


def _plan():
    state = default_state().model_copy(update={
        "wl": "llama3-8b", "hw": "dgx-h100", "tp": 2, "pp": 3, "grid": "list", "dlist": "24",
        "train": 1e8, "price": 3})
    return make_plan(preset_profile(state), state)


def test_the_cards_stage_note_names_the_pipeline_control_and_the_cli_keeps_pp():
    plan = _plan()
    assert STAGES.format("Pipeline stages") in card_notes(plan)
    assert not any("over pp 3" in n for n in plan.decision.notes)
    cli = decide(plan.profile, plan.scenario, 24)
    assert STAGES.format("pp") in cli.notes


def test_the_page_shows_it_under_the_card():
    plan = _plan()
    at = open_app(encode_query(plan.state, plan.profile))
    caption = next(c.value for c in at.caption if c.value.startswith("Main assumption"))
    assert STAGES.format("Pipeline stages") in caption and "over pp 3" not in caption, caption


def test_virtual_stages_are_named_by_their_control_once_per_pipeline():
    """80 layers over 3 x 2 chunks: 6 does not divide 80; the same pipeline twice, one note."""
    named = uneven_notes(80, [(3, 2), (3, 2)], lambda pp, v: page_pipeline_words(pp, v, GPU_NOUNS))
    assert len(named) == 1
    assert named[0].startswith("80 layers over Pipeline stages 3 x Virtual stages 2: ")
    assert named[0].split(": ", 1)[1] == uneven_notes(80, [(3, 2)])[0].split(": ", 1)[1]
