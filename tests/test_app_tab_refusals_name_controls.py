"""Session 44: a refusal of what the Goal or the Layouts tab asks (goal's, plan's: the page
above them was predicted, so the page's fallback does not run) names the sidebar controls of its
knobs (``ScalesimError.knobs``, ``named_controls.controls_to_change``) after its own line, and
the page keeps working. Before, the box quoted the refusal alone: 'needs a training length
(train_samples)' named a scenario field the sidebar does not show."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app.named_controls import control_namer, controls_to_change
from scalesim.app.plan import build_scenario
from scalesim.app.planner_page import goal_controls
from scalesim.app.state import AppState, default_state, preset_profile

from scalesim.device_nouns import GPU_NOUNS
from scalesim.errors import ScalesimError
from scalesim.goal import CLI_CONTROLS, seek
from scalesim.layout_predict import counts_that_run
from scalesim.schemas import Scenario

GOAL = {"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "dl": "720", "bud": "1000000",
        "tab": "goal"}
# link, the tab box's start, a piece of the refusal, the controls the box names after it
CASES = {
    # session 47: goal's line names these controls itself, in the app's labels (a template:
    # errors.in_words_of), so none is listed again after it
    "goal without a training length": (
        {**GOAL, "price": "3"}, "Goal seeking needs more:",
        "needs a training length: give Samples in the training run, or E\\_min with Critical "
        "batch size for time to quality", ""),
    "goal without a price (the H200 lists none)": (
        {**GOAL, "hw": "dgx-h200", "train": "1000000000"}, "Goal seeking needs more:",
        "needs a price per device-hour: give Price per device-hour", ""),
    # its line names its controls in the app's words already (GoalControls): none repeated
    "goal's split that no count in its range runs": (
        {**GOAL, "tp": "8", "pp": "4", "dmax": "64", "gmax": "16", "train": "1000000000",
         "price": "3"}, "Goal seeking needs more:", "can run the layout tp 8 x pp 4", ""),
    "plan: nothing fits on the focus count": (
        {"v": "18", "hw": "dgx-a100", "wl": "gpt-145.6b", "dmax": "8", "tab": "layouts"},
        "No layout to rank:", "every ZeRO stage, recompute and micro-batch was tried",
        " Control to change: Largest device count."),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_tabs_refusal_names_the_controls_of_its_knobs_and_the_page_keeps_working(name):
    link, start, words, named = CASES[name]
    at = open_app(link)  # no exception raised
    (box,) = [i.value for i in at.info if i.value.startswith(start)]
    assert words in box, box
    assert box.endswith("." + named), box
    assert [e for e in at.error if e.value.startswith("Cannot predict")] == []
    assert len(at.metric) >= 4 and at.metric[0].label.startswith("Scaling efficiency at")


def test_the_devices_knob_names_the_control_the_sidebar_shows():
    exc = ScalesimError("refused", knobs=("devices", "global_batch"))
    assert controls_to_change(exc, AppState(), GPU_NOUNS) == (
        " Controls to change: Largest device count, Global batch.")
    assert controls_to_change(exc, AppState(grid="list"), GPU_NOUNS) == (
        " Controls to change: Device counts, Global batch.")  # its sidebar label (session 44)
    assert controls_to_change(ScalesimError("refused"), AppState(), GPU_NOUNS) == ""
    assert controls_to_change(ScalesimError("refused", knobs=("first_bucket_mib",)), AppState(),
                              GPU_NOUNS) == ""  # a knob the planner has no control for


def test_a_refusal_in_flag_or_field_words_that_holds_a_labels_text_still_names_its_controls():
    """Whether the line names the controls itself is the error's own field
    (``ScalesimError.controls_named``), set where its words came from the app's namer; the text
    is not read. Before, a line holding a label's text ('Global batch', 'E_min') lost it."""
    exc = ScalesimError("global batch 3 is odd (Global batch in the app); lower --global-batch",
                        knobs=("global_batch",))
    assert controls_to_change(exc, AppState(), GPU_NOUNS) == " Control to change: Global batch."
    state = default_state().model_copy(update={"wl": "llama3-8b", "cbs": 1024})
    profile = preset_profile(state)
    scenario, _ = build_scenario(state, profile)
    with pytest.raises(ScalesimError) as refused:  # the CLI's flags in the line, not labels
        seek(profile, scenario, 3600.0, 1e6)
    assert "--min-samples" in str(refused.value) and refused.value.controls_named == ()
    assert controls_to_change(refused.value, state, GPU_NOUNS) == (
        " Controls to change: Samples in the training run, E_min, Critical batch size.")


def _what_if(update: dict):
    state = default_state().model_copy(update=update)
    profile = preset_profile(state)
    return state, profile, build_scenario(state, profile)[0]


def test_goals_split_refusal_names_no_control_twice_in_the_apps_words_and_all_in_flags():
    state, profile, scenario = _what_if({
        "hw": "dgx-h100", "wl": "llama3-8b", "tp": 8, "pp": 4, "dmax": 64, "train": 10**9,
        "price": 3.0})
    scenario = scenario.model_copy(update={"devices": [32]})
    lines = {}
    for name, controls in (("app", goal_controls(GPU_NOUNS)), ("cli", CLI_CONTROLS)):
        with pytest.raises(ScalesimError) as refused:
            seek(profile, scenario, 720 * 3600.0, 1e6, max_devices=16, controls=controls)
        lines[name] = refused.value
    assert lines["app"].controls_named == ("tp", "pp", "max_devices")
    assert "Tensor parallel" in str(lines["app"]) and "--tp" in str(lines["cli"])
    assert controls_to_change(lines["app"], state, GPU_NOUNS) == ""
    assert lines["cli"].controls_named == ()  # flag words: the app's labels said after it
    assert controls_to_change(lines["cli"], state, GPU_NOUNS).startswith(
        " Controls to change: Tensor parallel, Pipeline stages, ")


@pytest.mark.parametrize("update, named, suffix", [
    # the micro-batch's fix names its three controls through the app's namer: none said again
    ({"grid": "list", "dlist": "1,2", "mode": "strong", "gb": 2**26},
     ("devices", "accumulation", "global_batch"), ""),
    # the split's line names no control (split_devices): every one said after it
    # (pp 3: a tp 3 is refused before the counts since session 48, ``layout.tp_server_refusal``)
    ({"wl": "llama3-8b", "pp": 3, "grid": "list", "dlist": "1,2,4,8,16"}, (),
     " Controls to change: Device counts, Tensor parallel, Pipeline stages."),
])
def test_a_count_refusal_marks_the_controls_its_namer_wrote(update, named, suffix):
    state = default_state().model_copy(update=update)
    profile = preset_profile(state)
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, profile)
    assert refused.value.controls_named == named
    assert controls_to_change(refused.value, state, GPU_NOUNS) == suffix


def test_a_count_refusal_in_the_clis_flags_marks_no_control():
    state = default_state()
    profile = preset_profile(state)
    scenario = Scenario(devices=[1, 2], global_batch=2**26)
    with pytest.raises(ScalesimError) as in_flags:
        counts_that_run(profile, scenario)
    with pytest.raises(ScalesimError) as in_labels:
        counts_that_run(profile, scenario, named=control_namer(state, GPU_NOUNS))
    assert "--global-batch" in str(in_flags.value) and in_flags.value.controls_named == ()
    assert "Global batch" in str(in_labels.value)
    assert in_labels.value.controls_named == ("devices", "accumulation", "global_batch")
    assert controls_to_change(in_flags.value, state, GPU_NOUNS) == (
        " Controls to change: Global batch, Gradient accumulation, Largest device count.")
