"""Session 51: the Goal tab said a plan's strategy raw, the CLI's 'zero2' and 'ddp' ('...,
micro-batch 1 per replica x 128 accumulation (global batch ...), zero2, network as is',
'micro-batch 64 x 1 accumulation, ddp, network as is'), in its sentences, notes and chart
tooltips, and its table's strategy column too, where the sidebar's Strategy control says
'ZeRO-2' and 'DDP'. A plan's words (``goal.describe``) now carry the strategy as a setting kept
(``goal.strategy_said``), data-parallel plans too, so the page says 'Strategy ZeRO-2';
``scalesim goal`` keeps 'zero2'."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.charts import pareto_chart
from scalesim.app.control_labels import STRATEGY_LABELS
from scalesim.app.layout_titles import page_title
from scalesim.app.planner_page import goal_controls
from scalesim.app.state import default_state, preset_profile

from scalesim.device_nouns import GPU_NOUNS
from scalesim.goal import GoalPlan, describe, seek
from scalesim.schemas import Scenario

# the default page (bert-large on A100s) with a goal: 1e9 samples in 720 h for $1,000,000 at
# $3 a device-hour
GOAL = {"v": "18", "train": "1e9", "price": "3", "dl": "720", "bud": "1000000", "tab": "goal"}


def _plan(**fields) -> GoalPlan:
    plain = dict(devices=16, servers=2, micro_batch=64, accumulation=1, global_batch=1024,
                 strategy="ddp", network="as is", samples_per_s=1.0, time_s=3600.0,
                 cost_usd=100.0, meets=True)
    return GoalPlan(**{**plain, **fields})


def test_a_data_parallel_plan_says_the_strategy_control():
    line = describe(_plan())
    assert line == "16 devices (2 servers), micro-batch 64 x 1 accumulation, ddp, network as is"
    # the batch by its controls since goal.batch_said (session 51)
    assert page_title(line, GPU_NOUNS) == ("16 devices (2 servers), Micro-batch 64 x Gradient "
                                           "accumulation 1, Strategy DDP, network as is")


def test_a_split_plan_says_it_after_its_layout():
    """dp = 16 / (tp 2 x pp 1) = 8, kept as given (no recompute searched)."""
    line = describe(_plan(tp=2, pp=1, strategy="zero3", micro_batch=2, accumulation=64))
    assert line.endswith("(global batch 1,024), zero3, network as is")
    assert page_title(line, GPU_NOUNS) == (
        "16 devices (2 servers) as 8 data-parallel ranks x Tensor parallel 2, Micro-batch 2 per model "
        "replica x Gradient accumulation 64 (global batch 1,024), Strategy ZeRO-3 / FSDP, "
        "network as is")


def test_the_goal_tab_says_it_in_its_sentence_and_table():
    at = open_app(GOAL)
    (box,) = [w.value for w in at.success if "Cheapest plan" in w.value]
    assert ", Strategy ZeRO-1, network as is: " in box, box
    (table,) = [d.value for d in at.dataframe if "strategy" in d.value.columns]
    assert set(table["strategy"]) <= set(STRATEGY_LABELS.values()), set(table["strategy"])


def test_the_pareto_charts_tooltips_say_it():
    state = default_state()
    profile = preset_profile(state)
    answer = seek(profile, Scenario(train_samples=1e9, price_per_device_hour=3.0),
                  720 * 3600.0, 1e6, controls=goal_controls(GPU_NOUNS))
    rows = [r for data in pareto_chart(answer).to_dict()["datasets"].values() for r in data]
    plans = [r["plan"] for r in rows if "plan" in r]
    assert plans and all(", Strategy " in p for p in plans), plans
    raw = [f", {s}, network" for s in STRATEGY_LABELS]
    assert not any(r in p for p in plans for r in raw), plans
