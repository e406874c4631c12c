"""Session 50, continued: the planner page says the hybrid-sharding remedy, the fitting remedy
and the nothing-fits sentence's one data-parallel replica in the sidebar's labels, where
``scalesim decide`` keeps its notation ('HSDP shard group 4 -> 32, zero3', '64 x 1 -> 2 x 32',
'(dp 1)'). Each is a ``layout_change.LayoutTitle`` carrying its changes or split, said by
``app.layout_titles.page_title``; the text is never read."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app.layout_titles import page_changes
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import decide
from scalesim.device_nouns import GPU_NOUNS
from scalesim.layout_change import ZERO
from scalesim.remedies import rank_remedies


def _plan(**fields):
    state = default_state().model_copy(update=fields)
    return make_plan(preset_profile(state), state)


def _page_remedies(plan) -> list[str]:
    """The Remedies tab's titles as the page shows them."""
    at = open_app({**encode_query(plan.state, plan.profile), "tab": "remedies"})
    return list(next(d.value for d in at.dataframe if "remedy" in d.value.columns)["remedy"])


def _cli_title(plan, key: str) -> str:
    _, ranked = rank_remedies(plan.profile, plan.scenario, plan.focus.devices)
    return next(r.title for r in ranked if r.key == key)


def test_a_kept_setting_is_said_by_its_value_alone():
    assert page_changes([("shard group", "4", "32"), (ZERO, "zero3", "zero3")], GPU_NOUNS) == (
        "Shard group (HSDP) 4 → 32, Strategy ZeRO-3 / FSDP")
    assert page_changes([("micro-batch", "64", "2"), ("accumulation", "1", "32")],
                        GPU_NOUNS) == "Micro-batch 64 → 2, Gradient accumulation 1 → 32"


# (the plan's settings, the remedy, its CLI title, its page title, notation the page must not
# show): llama3-8b on 32 H100s under ZeRO-3 sharded in groups of 4 (32 data-parallel ranks at
# tp 1), the remedy shards over all 32; gpt-1.7b on 16 A100s at a per-GPU micro-batch of 64 does
# not fit, the same global batch (64 x 1 = 2 x 32) in micro-batches of 2
REMEDY_WORDS = [
    (dict(wl="llama3-8b", hw="dgx-h100", dmax=32, focus=32, strat="zero3", sg=4), "sharding",
     "Shard the states over all 32 data-parallel ranks (HSDP shard group 4 -> 32, zero3)",
     "Shard the states over all 32 data-parallel ranks (Shard group (HSDP) 4 → 32, "
     "Strategy ZeRO-3 / FSDP)", ("HSDP shard group", "zero3")),
    (dict(wl="gpt-1.7b", hw="dgx-a100", dmax=16, focus=16, mb=64), "fit_memory",
     "Smaller micro-batches, more accumulation (64 x 1 -> 2 x 32; same global batch)",
     "Smaller micro-batches, more accumulation (Micro-batch 64 → 2, Gradient accumulation "
     "1 → 32; same global batch)", ("64 x 1 ->", "per model replica 64")),
]


@pytest.mark.parametrize("settings, key, cli, page, notation", REMEDY_WORDS,
                         ids=["hybrid sharding: the Shard group control",
                              "fitting: the Micro-batch and accumulation controls"])
def test_a_remedy_names_the_pages_controls(settings, key, cli, page, notation):
    plan = _plan(**settings)
    assert _cli_title(plan, key) == cli
    titles = _page_remedies(plan)
    assert page in titles, titles
    assert not any(n in t for n in notation for t in titles), titles


def test_the_nothing_fits_sentence_says_one_replica_without_notation():
    """llama3-70b on 8 A100s at Tensor parallel 8: one data-parallel replica (8 / 8), nothing
    fits; the CLI glosses it '(dp 1)', the page's words say it already."""
    plan = _plan(wl="llama3-70b", hw="dgx-a100", dmax=8, focus=8, tp=8)
    cli = decide(plan.profile, plan.scenario, 8).recommendation
    assert "ZeRO shards nothing over one data-parallel replica (dp 1)): add devices" in cli
    at = open_app(encode_query(plan.state, plan.profile))
    said = next(s.value for s in at.success if s.value.startswith("**Recommendation:**"))
    assert "ZeRO shards nothing over one data-parallel replica): add devices" in said, said
    assert "(dp 1)" not in said
