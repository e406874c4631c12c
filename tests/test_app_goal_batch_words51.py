"""Session 51: the Goal tab said a plan's micro-batch and accumulation in the CLI's words
('micro-batch 128 x 8 accumulation', 'micro-batch 4 per replica x 8 accumulation (global batch
256)') in its sentences, notes and chart tooltips, where the sidebar's controls are
'Micro-batch (sequences per model replica)' and 'Gradient accumulation'. A plan's words
(``goal.describe``) now carry each as a setting kept (``goal.batch_said``), so the page says
'Micro-batch 128 x Gradient accumulation 8'; ``scalesim goal`` keeps its words."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.layout_titles import page_title
from test_app_goal_strategy_words51 import GOAL, _plan

from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.goal import describe


def test_a_split_plan_says_its_batch_by_the_controls():
    """dp = 16 / (tp 2 x pp 1) = 8; global batch 4 x 8 x 8 = 256."""
    line = describe(_plan(tp=2, pp=1, strategy="zero1", micro_batch=4, accumulation=8,
                          global_batch=256))
    assert ", micro-batch 4 per replica x 8 accumulation (global batch 256), zero1," in line
    assert ", Micro-batch 4 per model replica x Gradient accumulation 8 (global batch 256), " \
           "Strategy ZeRO-1, network as is" in page_title(line, GPU_NOUNS)


def test_a_data_parallel_plan_on_processes_says_them_too():
    line = describe(_plan(micro_batch=64, accumulation=2), CPU_NOUNS)
    assert line == "16 processes (2 hosts), micro-batch 64 x 2 accumulation, ddp, network as is"
    assert page_title(line, CPU_NOUNS) == ("16 processes (2 hosts), Micro-batch 64 x Gradient "
                                           "accumulation 2, Strategy DDP, network as is")


def test_the_goal_tab_says_them_in_its_sentence():
    at = open_app(GOAL)
    (box,) = [w.value for w in at.success if "Cheapest plan" in w.value]
    assert "micro-batch" not in box and " accumulation," not in box, box
    assert ", Micro-batch 128 x Gradient accumulation 8, Strategy ZeRO-1, " in box, box
