"""Session 51: the planner page's other scenario notes (``plan.build_scenario``) name the
page's controls and choices, where they said the CLI's words ('ZeRO framework deepspeed
ignored: strategy ddp shards nothing', 'layout tp 2 x pp 1 left out: ...'); the CLI's own
notes keep them."""

from __future__ import annotations

import pytest
from scalesim.app.plan import build_scenario
from scalesim.app.state import AppState, preset_profile

from scalesim.model.sharding import grad_sync_unused

# bert-large (the default workload) is a parameter count: no split, kernel or fp8 applies
COUNT_ONLY = "workload 'bert-large' is a parameter count only (pick a transformer workload such"


def _notes(**fields) -> list[str]:
    state = AppState(**fields)
    return build_scenario(state, preset_profile(state))[1]


@pytest.mark.parametrize(("fields", "note"), [
    # not ignored since session 60: DeepSpeed's stage 0 changes the numbers
    ({"zfw": "deepspeed"}, "ZeRO framework DeepSpeed with Strategy DDP is DeepSpeed's engine "
     "without ZeRO (stage 0: its own all-reduce and optimizer step, nothing sharded)"),
    ({"strat": "zero1", "gs": "once-per-step"}, "Gradient sync once-per-step ignored: Strategy "
     "ZeRO-1 reduces gradients once per step anyway (it applies to ZeRO-2/3)"),
    ({"strat": "zero2", "gs": "once-per-step"}, "Gradient sync once-per-step ignored: Gradient "
     "accumulation 1: one micro-step per step reduces once either way (it applies with 2 or "
     "more)"),
    ({"ak": "flash2"}, "Attention kernel flash2 ignored: workload 'bert-large' is a parameter "
     "count, not a transformer shape (no attention core to time)"),
    ({"pr": "fp8"}, "Matmul precision fp8 ignored: workload 'bert-large' is a parameter count, "
     "not a transformer shape (no weight matmuls to run in fp8)"),
])
def test_an_ignored_setting_is_said_by_its_control_and_choice(fields, note):
    """Were 'ZeRO framework deepspeed ignored: strategy ddp shards nothing', 'gradient sync
    once-per-step ignored: strategy zero1 reduces ...' / '... accumulation 1: ...', 'attention
    kernel flash2 ignored: ...', 'precision fp8 ignored: ...'."""
    assert note in _notes(**fields)


@pytest.mark.parametrize(("fields", "asked"), [
    ({"tp": 2}, "Tensor parallel 2"),  # was 'layout tp 2 x pp 1'
    ({"rec": "none"}, "Activation recompute none"),  # was 'layout tp 1 x pp 1': nobody's split
    ({"tp": 2, "pp": 2, "rec": "full", "sp": True},
     "Tensor parallel 2 x Pipeline stages 2, Activation recompute full, Sequence parallelism on"),
])
def test_a_layout_left_out_is_said_by_the_layout_controls(fields, asked):
    """The split as every layout title says it (a degree of 1 left out), then each other
    Layout control away from its default, in the knob table's order."""
    assert f"{asked} left out: {COUNT_ONLY}" in " ".join(_notes(**fields))
    assert not any("layout " in n or " x pp 1" in n for n in _notes(**fields))


def test_the_cli_keeps_its_words():
    """predict's reason, which the page now says by its controls."""
    assert grad_sync_unused("zero1", 1, "once-per-step") == (
        "strategy zero1 reduces gradients once per step anyway (it applies to ZeRO-2/3)")
    assert grad_sync_unused("zero2", 1, "once-per-step").startswith("accumulation 1: one micro")
