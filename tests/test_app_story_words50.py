"""Session 50, continued: the first view's story lowered the whole of the best remedy's title
where no decision card was made ('try split the model: 32 data-parallel ranks x tensor parallel
2 x pipeline stages 1, zero-2, ...': the page's control labels and ZeRO-2 lowered). Now only its
first letter is lowered, and a first word that is a name ('ZeRO-3', 'FSDP') is kept
(``layout_change.lower_first``)."""

from __future__ import annotations

from dataclasses import replace

from scalesim.app.plan import make_plan, story
from scalesim.app.state import default_state, preset_profile

from scalesim.layout_change import lower_first


def test_the_story_lowers_only_the_first_letter_of_the_best_remedy():
    """gpt-7.5b on 64 A100s, DDP: the best remedy splits the model 32 x 2 x 1 = 64 under
    ZeRO-2 (the page's labels); with no card, the story says to try it."""
    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": 64})
    plan = make_plan(preset_profile(state), state)
    assert plan.best.title.startswith("Split the model: 32 data-parallel ranks x Tensor "
                                      "parallel 2, ZeRO-")
    said = story(replace(plan, decision=None))
    assert ("**What to do:** try split the model: 32 data-parallel ranks x Tensor parallel 2, "
            "ZeRO-") in said, said
    assert "tensor parallel" not in said and "zero-" not in said


def test_a_name_first_is_kept_and_a_title_carrying_a_layout_stays_one():
    from scalesim.layout_change import LayoutTitle, changes_said

    assert lower_first("ZeRO-3 everywhere") == "ZeRO-3 everywhere"
    assert lower_first("FSDP first") == "FSDP first"
    assert lower_first("Use a Hopper attention kernel (cuDNN)") == (
        "use a Hopper attention kernel (cuDNN)")
    title = lower_first(changes_said([("tp", "2", "4")], "Change (", ")"))
    assert isinstance(title, LayoutTitle) and title == "change (tp 2 -> 4)"
