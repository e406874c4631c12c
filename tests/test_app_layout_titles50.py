"""Session 50: the planner page says a layout option's title in its control labels, where the
CLI keeps its notation. Before, the page wrote the CLI's 'Split the model: dp 32 x tp 2 x pp 1,
zero2, micro-batch 2 per replica x 1 accumulation, recompute none, sequence parallel' in the
headline, the Remedies and Hours & cost tables and the report; no control shows dp, tp or
zero2. The title carries the planner's row (``layout_change.LayoutTitle``), which the page says
in its labels (``app.layout_titles``); the text is never read."""

from __future__ import annotations

from app_harness import knee_line, open_app
from scalesim.app.layout_titles import page_title
from scalesim.app.plan import headline, make_plan
from scalesim.app.state import AppState, preset_profile, with_profile_defaults

# gpt-7.5b on 64 A100s, DDP: the model does not fit, and the planner's best split runs it
GPT = {"v": "2", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64"}
CLI_SPLIT = ("Split the model: dp 32 x tp 2 x pp 1, zero2, micro-batch 2 per replica x 1 "
             "accumulation, recompute none, sequence parallel")
# Pipeline stages 1 left out (session 50, continued: a degree of 1 splits nothing)
PAGE_SPLIT = ("Split the model: 32 data-parallel ranks x Tensor parallel 2, "
              "ZeRO-2, Micro-batch 2 per model replica x Gradient accumulation 1, Activation "
              "recompute none, Sequence parallelism")
NOTATION = "dp 32 x"


def _plan(**fields):
    state = AppState(hw=fields.pop("hw"), wl=fields.pop("wl"))
    state = with_profile_defaults(state, preset_profile(state)).model_copy(update=fields)
    return make_plan(preset_profile(state), state)


def test_the_split_remedy_is_said_in_the_pages_labels_and_the_cli_keeps_its_notation():
    """The planner's row: 32 x 2 x 1 = 64 devices, ZeRO-2, 2 sequences per replica, one
    micro-step, sequence parallel: each setting by the control that sets it ('Tensor parallel',
    'Strategy''s 'ZeRO-2'); the remedy the library ranks still prints the CLI's title."""
    from scalesim.remedies import rank_remedies

    plan = _plan(hw="dgx-a100", wl="gpt-7.5b", dmax=64)
    assert plan.best.key == "split_model" and plan.best.title == PAGE_SPLIT
    assert headline(plan)["best_remedy"].startswith(PAGE_SPLIT + ": makes it run")
    split = next(o.label for o in plan.options if o.label.startswith("Split the model"))
    assert split == PAGE_SPLIT + " (64 devices)"
    _, ranked = rank_remedies(plan.profile, plan.scenario, 64)
    cli = next(r.title for r in ranked if r.key == "split_model")
    assert str(cli) == CLI_SPLIT and page_title(cli, plan.words) == PAGE_SPLIT


def test_a_change_of_todays_split_is_said_by_the_controls_it_changes():
    """llama3-8b on 16 H100s at Tensor parallel 2, DDP: the planner keeps tp 2 and changes the
    ZeRO stage and sequence parallelism, 'Change the layout: ddp -> zero2, sequence parallel off
    -> on' on the CLI; the page names each change's control, a ZeRO stage by the Strategy's
    choice, with the page's arrow (as a reset names a control's change)."""
    plan = _plan(hw="dgx-h100", wl="llama3-8b", dmax=16, tp=2)
    assert plan.best.title == ("Change the layout: Strategy DDP → ZeRO-2, Sequence parallelism "
                               "off → on")


def test_the_page_and_its_report_say_the_split_in_words():
    """The decision card's option and recommendation, the headline's largest gain, the
    Remedies table and the Hours & cost table, and the HTML report: the page's words, no 'dp 32
    x'; decide's card on the CLI keeps its notation."""
    from scalesim.app.report import report_html

    from scalesim.decision import decide

    at = open_app({**GPT, "tab": "remedies"})
    (recommendation,) = [s.value for s in at.success if "Recommendation" in s.value]
    assert f"**Recommendation:** {PAGE_SPLIT}. Do this first: " in recommendation, recommendation
    assert PAGE_SPLIT in list(at.table[0].value.index)
    plan = _plan(hw="dgx-a100", wl="gpt-7.5b", dmax=64)
    card = decide(plan.profile, plan.scenario, 64)
    assert card.recommendation.startswith(CLI_SPLIT + ". Do this first")
    line = knee_line(at)
    assert f"**Largest single gain:** {PAGE_SPLIT}: makes it run" in line, line
    assert NOTATION not in line
    remedies = next(d.value for d in at.dataframe if "remedy" in d.value.columns)
    assert PAGE_SPLIT in list(remedies["remedy"])
    assert not any(NOTATION in t for t in remedies["remedy"])
    at = open_app({**GPT, "tab": "cost"})
    options = next(d.value for d in at.dataframe if "option" in d.value.columns)
    assert PAGE_SPLIT + " (64 devices)" in list(options["option"])
    html = report_html(_plan(hw="dgx-a100", wl="gpt-7.5b", dmax=64), "http://localhost/")
    assert PAGE_SPLIT in html and "Split the model: dp" not in html
