"""Session 49: layout refusals whose words were notation ('tp x pp = 3', 'dp 16', 'dp 8 x
accumulation 1', 'dp 4 x micro-batch 2', '(dp 2 x tp 8 x pp 1)') name the page's controls in
the app's box; the CLI keeps its line byte for byte (``layout.knob_refusal(..., cli=)``).

The app's box is built here as ``planner_page._plan_or_fallback`` builds it (``make_plan``,
then ``named_controls.in_control_words`` and ``controls_to_change``), without Streamlit; the
page itself is walked in ``test_app_layout_words49.py``."""

from __future__ import annotations

import pytest
from cli_harness import run_cli
from scalesim.app.named_controls import controls_to_change, in_control_words
from scalesim.app.plan import make_plan
from scalesim.app.state import AppState, preset_profile, with_profile_defaults

from scalesim.device_nouns import GPU_NOUNS, nouns_for
from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout, layout_problems


def page_box(**fields) -> str:
    """The 'Cannot predict' box's line (markdown unescaped) of the what-if ``fields``."""
    state = AppState(**fields)
    profile = preset_profile(state)
    state = with_profile_defaults(state, profile).model_copy(update=fields)
    words = nouns_for(profile.hardware.device_name)
    with pytest.raises(ScalesimError) as caught:
        make_plan(profile, state)
    said = in_control_words(caught.value, state, words)
    return f"Cannot predict this scenario: {said}.{controls_to_change(said, state, words)}"


H100 = {"hw": "dgx-h100", "wl": "llama3-8b"}
# the notation the box no longer says
NOTATION = ("tp x", "x pp", "dp ", "shard group", " x accumulation", "global batch")
# each what-if's box after 'Cannot predict this scenario: ', by name (the page itself is walked
# on four of them in test_app_layout_words49.py)
BOXES = {
    "pp 3": (
        {**H100, "pp": 3},  # the default plot: 1, 2, 4, 8 and 16 devices
        "devices 1, 2, 4, 8 and 16 are not divisible by Tensor parallel 1 x Pipeline stages 3 = "
        "3; give device counts that are multiples of it (3, 6 or 24). Control to change: Largest "
        "device count."),
    "pp 64": (
        {**H100, "pp": 64},
        "devices 1, 2, 4, 8 and 16 are not divisible by Tensor parallel 1 x Pipeline stages 64 = "
        "64; give device counts that are multiples of it (64). Control to change: Largest device "
        "count."),
    "cp 3": (
        {**H100, "cp": 3},
        "devices 1, 2, 4, 8 and 16 are not divisible by Tensor parallel 1 x Pipeline stages 1 x "
        "Context parallelism 3 = 3; give device counts that are multiples of it (3, 6 or 24). "
        "Control to change: Largest device count."),
    "shard group 3": (
        {**H100, "strat": "zero3", "sg": 3, "grid": "list", "dlist": "16"},
        "at 16 devices, Shard group (HSDP) 3 does not divide the 16 data-parallel ranks; give a "
        "divisor of it (e.g. 16: full sharding)."),
    "shard group 16 at two counts": (
        {**H100, "strat": "zero3", "sg": 16, "grid": "list", "dlist": "24,40"},
        "Shard group (HSDP) 16 does not divide the 24 or 40 data-parallel ranks; give a divisor "
        "of each (e.g. 8), or drop it: full sharding (at 24 and 40 devices)."),
    "global batch over dp": (
        {**H100, "mode": "strong", "gb": 100, "grid": "list", "dlist": "8"},
        "Global batch 100 is not divisible by 8 data-parallel ranks x Gradient accumulation 1 (8 "
        "devices); pick one divisible by their product: 96 or 104."),
    "global batch over devices": (
        {"mode": "strong", "gb": 100, "grid": "list", "dlist": "8"},  # data parallel: no dp
        "Global batch 100 does not split evenly over 8 devices x Gradient accumulation 1; pick "
        "one divisible by their product: 96 or 104."),
}


@pytest.mark.parametrize("fields, box", list(BOXES.values()), ids=list(BOXES))
def test_the_box_names_the_pages_controls_and_no_notation(fields, box):
    """Before: 'devices ... not divisible by tp x pp = 3 ... Controls to change: Largest device
    count, Tensor parallel, Pipeline stages.', 'shard group 3 does not divide dp 16',
    'global batch 100 is not divisible by dp 8 x accumulation 1 ...; pick a global batch
    divisible by dp x accumulation'. A control the line names is not listed again."""
    said = page_box(**fields)
    assert said == f"Cannot predict this scenario: {box}", said
    for notation in NOTATION:
        assert notation not in said, said


def test_the_layout_rules_notation_is_said_in_the_pages_controls():
    """``layout.unrunnable_split``'s global batch line and ``count_problem``'s split, through
    the app's namer (``in_control_words``) and as the CLI and the library say them."""
    state, words = AppState(hw="dgx-h100", wl="llama3-8b"), GPU_NOUNS
    batch, = layout_problems(ParallelLayout(dp=4, tp=2, micro_batch=2, global_batch=6), 8)
    assert str(in_control_words(ScalesimError(batch), state, words)) == (
        "Global batch 6 is not divisible by 4 data-parallel ranks x Per-device micro-batch 2")
    assert str(batch) == "global batch 6 is not divisible by dp 4 x micro-batch 2"  # was, is
    count, = layout_problems(ParallelLayout(dp=3, tp=4, micro_batch=1, global_batch=3), 8)
    # a degree of 1 left out since session 51 (was '(3 data-parallel ranks x Tensor parallel
    # 4 x Pipeline stages 1)'); the CLI's line below keeps its 'pp 1 x cp 1'
    assert str(in_control_words(ScalesimError(count), state, words)) == (
        "12 devices (3 data-parallel ranks x Tensor parallel 4) do not fill whole servers of 8")
    assert str(count) == "12 devices (dp 3 x tp 4 x pp 1 x cp 1) do not fill whole servers of 8"
    unit, = layout_problems(ParallelLayout(dp=3, tp=2, micro_batch=1, global_batch=3), 72,
                            allocation=4)
    # was '6 devices (3 data-parallel ranks x Tensor parallel 2 x Pipeline stages 1) ...'
    assert str(in_control_words(ScalesimError(unit), state, words)) == (
        "6 devices (3 data-parallel ranks x Tensor parallel 2) do not fill whole allocation "
        "units of 4 GPUs (the tray or node a scheduler hands out, 72 to a server); give a "
        "multiple of 4, e.g. 4 or 8")
    assert str(unit) == (
        "6 devices (dp 3 x tp 2 x pp 1 x cp 1) do not fill whole allocation units of 4 GPUs (the "
        "hardware's devices_per_allocation: the tray or node a scheduler hands out, 72 to a "
        "server); give a multiple of 4, e.g. 4 or 8")


@pytest.mark.parametrize("flags, line", [
    (["--devices", "1,2,4,8,16", "--pp", "3"],
     "devices 1, 2, 4, 8 and 16 are not divisible by tp x pp = 3; give device counts that are "
     "multiples of it (3, 6 or 24)"),
    (["--devices", "16", "--cp", "3"],
     "devices 16 are not divisible by tp x pp x cp = 3; give device counts that are multiples "
     "of it (6 or 24), or a tp x pp x cp that divides 16"),
    (["--devices", "16", "--strategy", "zero3", "--shard-group", "3"],
     "at 16 devices, shard group 3 does not divide dp 16; give a divisor of it (e.g. 16: full "
     "sharding)"),
    (["--devices", "24,40", "--strategy", "zero3", "--shard-group", "16"],
     "shard group 16 does not divide dp 24 or 40; give a divisor of each (e.g. 8), or drop it: "
     "full sharding (at 24 and 40 devices)"),
    (["--devices", "8", "--global-batch", "100"],
     "global batch 100 is not divisible by dp 8 x accumulation 1 (8 devices); pick a global "
     "batch divisible by dp x accumulation: 96 or 104"),
], ids=["pp 3", "cp 3", "shard group 3", "shard group 16", "global batch"])
def test_the_cli_keeps_its_lines(capsys, flags, line):
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", *flags])
    assert (code, err) == (2, f"scalesim predict: error: {line}\n")


def test_validate_says_a_case_files_layout_in_its_fields():
    """validate's case-file checks say a refusal in the file's fields (``in_words_of(p, str,
    cli=True)``): the notation 'dp 4' a case file writes, not the page's '4 data-parallel
    ranks' (nor 'global_batch')."""
    from scalesim.errors import in_words_of

    batch, = layout_problems(ParallelLayout(dp=4, tp=2, micro_batch=2, global_batch=6), 8)
    assert str(in_words_of(batch, str, cli=True)) == \
        "global batch 6 is not divisible by dp 4 x micro-batch 2"
