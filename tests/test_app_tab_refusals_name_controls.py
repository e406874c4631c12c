"""Session 44: a refusal of what the Goal or the Layouts tab asks (goal's, plan's: the page
above them was predicted, so the page's fallback does not run) names the sidebar controls of its
knobs (``ScalesimError.knobs``, ``named_controls.controls_to_change``) after its own line, and
the page keeps working. Before, the box quoted the refusal alone: 'needs a training length
(train_samples)' named a scenario field the sidebar does not show."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app.named_controls import controls_to_change
from scalesim.app.state import AppState

from scalesim.device_nouns import GPU_NOUNS
from scalesim.errors import ScalesimError

GOAL = {"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "dl": "720", "bud": "1000000",
        "tab": "goal"}
# link, the tab box's start, a piece of the refusal, the controls the box names after it
CASES = {
    "goal without a training length": (
        {**GOAL, "price": "3"}, "Goal seeking needs more:", "needs a training length",
        # E_min: the line says it already (a label the line shows is not said twice)
        " Controls to change: Samples in the training run, Critical batch size."),
    "goal without a price (the H200 lists none)": (
        {**GOAL, "hw": "dgx-h200", "train": "1000000000"}, "Goal seeking needs more:",
        "needs a price per device-hour", " Control to change: Price per device-hour."),
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
        " Controls to change: Device list, Global batch.")
    assert controls_to_change(ScalesimError("refused"), AppState(), GPU_NOUNS) == ""
    assert controls_to_change(ScalesimError("refused", knobs=("first_bucket_mib",)), AppState(),
                              GPU_NOUNS) == ""  # a knob the planner has no control for
