"""Session 50, continued: goal's kept layout ('--layout given', the Goal tab's 'given') is a
``layout_change.LayoutTitle`` (``goal.kept_said``) carrying each kept setting, so the app says
'(Tensor parallel 2, Pipeline stages 2)' where the CLI writes '(tp 2 x pp 2)'; the CLI's
words as before. The text is never read."""

from __future__ import annotations

from scalesim.app.layout_titles import page_title

from scalesim.device_nouns import GPU_NOUNS
from scalesim.goal import kept_said, no_fit_note
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout


def test_a_kept_split_with_full_recompute_is_said_by_its_controls():
    """llama3-8b on A100 40 GB servers, Tensor parallel 2 x Pipeline stages 2 with full
    recompute, up to 4 GPUs: nothing fits; the note keeps the split alone."""
    profile = resolve_profile(None, "a2-highgpu-8g", "llama3-8b")
    base = Scenario(train_samples=1e9, price_per_device_hour=3.0,
                    layout=ScenarioLayout(tp=2, pp=2, recompute="full"))
    note = no_fit_note(profile, base, 4)
    assert note.startswith("goal keeps the split as given (tp 2 x pp 2) and nothing fits at it")
    assert page_title(note, GPU_NOUNS).startswith(
        "goal keeps the split as given (Tensor parallel 2, Pipeline stages 2) and nothing fits "
        "at it")


def test_context_parallelism_is_kept_where_it_splits():
    title = kept_said(ScenarioLayout(tp=2, cp=2), "none", "(", ")")
    assert title == "(tp 2 x pp 1 x cp 2, recompute none)"
    assert page_title(title, GPU_NOUNS) == ("(Tensor parallel 2, Pipeline stages 1, Context "
                                            "parallelism 2, Activation recompute none)")
