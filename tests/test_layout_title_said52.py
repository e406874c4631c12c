"""Session 52: a ``layout_change.LayoutTitle`` carries what its layout is in one field, ``said``
(a planner's row, a ``Split``, a goal plan, ``Changes`` or ``Arrowed``), where it had one
attribute per kind, each read in turn; the page dispatches on ``said``
(``app.layout_titles.page_layout``). st.cache_data pickles titles: each part keeps its
payload through a round trip, and the page says it as before."""

from __future__ import annotations

import pickle

import pytest
from scalesim.app.layout_titles import page_title

from scalesim.device_nouns import GPU_NOUNS
from scalesim.goal import GoalPlan, describe
from scalesim.layout_change import (
    ARROW_FIELD,
    ZERO,
    Arrowed,
    Changes,
    Split,
    arrowed_said,
    changes_said,
    joined,
    split_said,
    titled,
)

# 16 devices as dp 4 x tp 2 x pp 2 (16 / (2 x 2) = 4 ranks), micro-batch 4 x 8 accumulation
PLAN = GoalPlan(devices=16, servers=2, micro_batch=4, accumulation=8, global_batch=256,
                strategy="zero1", network="as is", samples_per_s=1.0, time_s=3600.0,
                cost_usd=100.0, meets=True, tp=2, pp=2, schedule="1f1b", virtual_stages=1,
                recompute="full", sequence_parallel=False)


def _sentence():
    """A split, a change of figures, changed settings and a goal plan in one sentence."""
    split = split_said(Split(4, 8, 2), "As is: 64 devices (", ")")
    added = arrowed_said("; add devices (", f"64{ARROW_FIELD}72", ")")
    changed = changes_said([("tp", "8", "4"), (ZERO, "ddp", "zero1")], ", ")
    return joined(joined(joined(split, added), changed), joined("; or ", describe(PLAN)))


def test_a_title_keeps_each_payload_through_pickle():
    title = _sentence()
    back = pickle.loads(pickle.dumps(title))
    assert back == title == (
        "As is: 64 devices (dp 4 x tp 8 x pp 2); add devices (64 -> 72), tp 8 -> 4, ddp -> "
        "zero1; or 16 devices (2 servers) as dp 4 x tp 2 x pp 2 (1F1B, recompute full), "
        "micro-batch 4 per replica x 8 accumulation (global batch 256), zero1, network as is")
    assert back.said == Split(4, 8, 2)
    assert isinstance(back.after.said, Arrowed) and back.after.said == f"64{ARROW_FIELD}72"
    assert back.after.after.said == Changes([("tp", "8", "4"), (ZERO, "ddp", "zero1")])
    assert back.after.after.after.said == PLAN
    assert page_title(back, GPU_NOUNS) == page_title(title, GPU_NOUNS) == (
        "As is: 64 devices (4 data-parallel ranks x Tensor parallel 8 x Pipeline stages 2); add "
        "devices (64 → 72), Tensor parallel 8 → 4, Strategy DDP → ZeRO-1; or 16 devices (2 "
        "servers) as 4 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2 (1F1B, "
        "Activation recompute full), Micro-batch 4 per model replica x Gradient accumulation 8 "
        "(global batch 256), Strategy ZeRO-1, network as is")


def test_a_title_says_one_layout_of_a_known_kind():
    """``said`` is one field, so a title cannot carry two layouts; one the page has no words
    for fails loudly, not as 'None' in the page's text."""
    with pytest.raises(TypeError):
        titled("As is (", "dp 4", ")", said=Split(4, 1, 1), changes=[("tp", "1", "2")])
    with pytest.raises(TypeError, match="no page words"):
        page_title(titled("As is (", "dp 4", ")", said=4), GPU_NOUNS)
