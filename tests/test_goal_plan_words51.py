"""Session 51: the Goal tab said a plan's layout in the CLI's notation ('64 devices (8 servers)
as dp 16 x tp 2 x pp 2 (interleaved 1F1B, 2 virtual stages, recompute none, sequence
parallel)') where the kept layout and every remedy title speak the sidebar's labels. A plan's
words (``goal.describe``) are now a ``layout_change.LayoutTitle`` carrying the plan, and each
sentence that says one keeps it (``retitled``, ``joined``: two plans in one sentence too), so
the page says '16 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2 (interleaved
1F1B, 2 virtual stages, Activation recompute none, Sequence parallelism)'. The CLI's words are
as before; the text is never read."""

from __future__ import annotations

from scalesim.app.layout_titles import page_title

from scalesim.device_nouns import GPU_NOUNS
from scalesim.goal import GoalAnswer, GoalPlan, describe, same_money_note
from scalesim.layout_change import joined, retitled


def _plan(**fields) -> GoalPlan:
    """16 devices on 2 servers, micro-batch 4 x 8 accumulation, an hour for $100 (``fields``
    another's)."""
    plain = dict(devices=16, servers=2, micro_batch=4, accumulation=8, global_batch=256,
                 strategy="zero1", network="as is", samples_per_s=1.0, time_s=3600.0,
                 cost_usd=100.0, meets=True)
    return GoalPlan(**{**plain, **fields})


# dp = 16 / (tp 2 x pp 2) = 4; pp > 1: the schedule said first
SEARCHED = _plan(tp=2, pp=2, schedule="1f1b", virtual_stages=1, recompute="full",
                 sequence_parallel=True)
BATCH = ", micro-batch 4 per replica x 8 accumulation (global batch 256), zero1, network as is"
# the page says the strategy by the Strategy control's choice (``goal.strategy_said``), the
# micro-batch and accumulation by their controls (``goal.batch_said``)
PAGE_BATCH = (", Micro-batch 4 per model replica x Gradient accumulation 8 (global batch 256), "
              "Strategy ZeRO-1, network as is")


def test_a_searched_plan_is_said_by_the_sidebar_labels():
    line = describe(SEARCHED)
    assert line == ("16 devices (2 servers) as dp 4 x tp 2 x pp 2 (1F1B, recompute full, sequence "
                    "parallel)" + BATCH)
    assert page_title(line, GPU_NOUNS) == (
        "16 devices (2 servers) as 4 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2 "
        "(1F1B, Activation recompute full, Sequence parallelism)" + PAGE_BATCH)


def test_a_kept_unsplit_plan_says_its_ranks_alone():
    """goal --layout given at tp 1 x pp 1: the CLI writes the degrees of 1, the page leaves
    them out as every layout title does (16 / 1 = 16 data-parallel ranks)."""
    line = describe(_plan(tp=1, pp=1))
    assert line.startswith("16 devices (2 servers) as dp 16 x tp 1 x pp 1, micro-batch 4 per")
    assert page_title(line, GPU_NOUNS).startswith(
        "16 devices (2 servers) as 16 data-parallel ranks, Micro-batch 4 per")


def test_a_data_parallel_plan_is_plain_words():
    assert describe(_plan()) == ("16 devices (2 servers), micro-batch 4 x 8 accumulation, zero1, "
                                 "network as is")


def test_two_plans_in_one_sentence_are_both_said_by_the_labels():
    """The best plan on a faster network and today's that meets the goal too: both layouts."""
    today = _plan(tp=2, pp=1, recompute="none", sequence_parallel=False)
    best = _plan(tp=2, pp=2, schedule="1f1b", virtual_stages=1, recompute="full",
                 sequence_parallel=True, network="EFA", cost_usd=90.0)
    answer = GoalAnswer(deadline_s=7200.0, budget_usd=1000.0, goal="time to train",
                        train_samples=1e6, reference_batch=256, best=best, closest=None,
                        front=[best], evaluated=2, runnable=2, today=today, model_error=0.03)
    cli, page = answer.sentence, page_title(answer.sentence, GPU_NOUNS)
    assert "as dp 4 x tp 2 x pp 2 (1F1B" in cli and "as dp 8 x tp 2 x pp 1 (recompute none)" in cli
    assert page == cli.replace(
        "dp 4 x tp 2 x pp 2 (1F1B, recompute full, sequence parallel)",
        "4 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2 (1F1B, Activation "
        "recompute full, Sequence parallelism)").replace(
        "dp 8 x tp 2 x pp 1 (recompute none)",
        "8 data-parallel ranks x Tensor parallel 2 (Activation recompute none)").replace(
        ", zero1, ", ", Strategy ZeRO-1, ").replace(
        "micro-batch 4 per replica x 8 accumulation",
        "Micro-batch 4 per model replica x Gradient accumulation 8")


def test_a_note_that_names_a_plan_says_it_by_the_labels():
    lowest = _plan(tp=2, pp=1, recompute="none", sequence_parallel=False, cost_usd=99.0)
    note = same_money_note(SEARCHED, lowest, 0.03)
    assert note.startswith("16 devices (2 servers) as dp 8 x tp 2 x pp 1 (recompute none), micro")
    assert page_title(note, GPU_NOUNS).startswith(
        "16 devices (2 servers) as 8 data-parallel ranks x Tensor parallel 2 (Activation recompute "
        "none), Micro-batch 4 per model replica x Gradient accumulation 8")


def test_joined_keeps_each_layout_and_plain_words_stay_plain():
    first, second = describe(SEARCHED), describe(_plan(tp=1, pp=1))
    both = joined(retitled(first, "A: ", "; "), retitled(second, "B: "))
    assert both == f"A: {first}; B: {second}"
    assert page_title(both, GPU_NOUNS) == (f"A: {page_title(first, GPU_NOUNS)}; "
                                           f"B: {page_title(second, GPU_NOUNS)}")
    assert type(joined("a", "b")) is str and joined("a", "b") == "ab"
