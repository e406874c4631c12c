"""Session 52: the Goal tab said a split plan's micro-batch 'Micro-batch 4 per replica' (goal's
'per replica' after the control's label), where the sidebar's control says 'sequences per model
replica' and every layout title the page writes 'per model replica'. The micro-batch is carried
as the setting ``layout_change.REPLICA_MICRO_BATCH``; ``scalesim goal`` keeps its words."""

from __future__ import annotations

from scalesim.app.layout_titles import PER_REPLICA, page_title
from test_app_goal_strategy_words51 import _plan

from scalesim.device_nouns import GPU_NOUNS
from scalesim.goal import describe


def test_a_split_plans_micro_batch_is_per_model_replica_on_the_page():
    """dp = 16 / (tp 2 x pp 1) = 8; global batch 4 x 8 x 8 = 256."""
    line = describe(_plan(tp=2, pp=1, strategy="zero1", micro_batch=4, accumulation=8,
                          global_batch=256))
    assert line == ("16 devices (2 servers) as dp 8 x tp 2 x pp 1, micro-batch 4 per replica x "
                    "8 accumulation (global batch 256), zero1, network as is")
    page = page_title(line, GPU_NOUNS)
    assert PER_REPLICA == "per model replica"
    assert ", Micro-batch 4 per model replica x Gradient accumulation 8 (global batch 256), " in page
    assert " per replica" not in page


def test_a_data_parallel_plans_micro_batch_says_no_replica():
    page = page_title(describe(_plan(micro_batch=64, accumulation=2)), GPU_NOUNS)
    assert ", Micro-batch 64 x Gradient accumulation 2, Strategy DDP, " in page
    assert "replica" not in page
