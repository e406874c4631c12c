"""Session 48: the interleaved schedule's micro-batch rule named Virtual stages as the control
to change, which no value of fixes it (the rule is of the micro-batches a step and pp; any
interleaved schedule needs 2 virtual stages or more), and said '1 micro-batches'.

A link or sidebar of llama3-8b on dgx-h100, pp 2, interleaved, virtual stages 3, accumulation 1:
before, "... 1 micro-batches per step are not a multiple of Pipeline stages 2 (Megatron's rule);
use Gradient accumulation 2 (a multiple of 2), or another Pipeline schedule. Control to change:
Virtual stages." Now the rule's knobs are accumulation, pp and the schedule, all named in the
line, so no "Controls to change" names another; the fix given runs."""

from __future__ import annotations

import pytest
from app_harness import cannot_predict_box, open_app
from scalesim.app.state import LINK_VERSION

from scalesim.layout import ParallelLayout, layout_problems

LINK = {"v": str(LINK_VERSION), "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "64", "pp": "2",
        "sched": "interleaved", "vs": "3"}


def test_the_box_names_no_control_that_cannot_fix_it():
    box = cannot_predict_box(open_app(LINK))
    assert ("Pipeline schedule interleaved: 1 micro-batch per step is not a multiple of Pipeline "
            "stages 2 (Megatron's rule); use Gradient accumulation 2 (a multiple of 2), or "
            "another Pipeline schedule.") in box
    assert "Virtual stages" not in box and "Control to change" not in box


@pytest.mark.parametrize("fix", [{"acc": "2"}, {"sched": "1f1b", "vs": "1"}])
def test_the_fix_it_gives_runs(fix):
    at = open_app({**LINK, **fix})
    assert not [e.value for e in at.error if e.value.startswith("Cannot predict")]


@pytest.mark.parametrize("accumulation, words", [(1, "1 micro-batch per step is"),
                                                 (3, "3 micro-batches per step are")])
def test_the_rule_says_its_count_and_its_knobs(accumulation, words):
    layout = ParallelLayout(pp=4, schedule="interleaved", virtual_stages=2,
                            global_batch=accumulation, micro_batch=1)
    (problem,) = [p for p in layout_problems(layout, 8) if "Megatron's rule" in p]
    assert words in problem
    assert problem.knobs == ("accumulation", "pp", "schedule")
