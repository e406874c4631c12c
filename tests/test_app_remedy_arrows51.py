"""Session 51: the page writes a remedy title's change of figures with its own arrow, '→', as
its layout changes do ('Strategy DDP → ZeRO-1'), where it mixed the CLI's '->' in ('Double
the per-device batch (32 -> 64)', '(6.8 -> 192 GB/s busbw)'); the CLI keeps '->', which
terminals and logs keep. The title carries its template (``layout_change.arrowed_said``): the
page never reads the text."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.layout_titles import page_title
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.device_nouns import GPU_NOUNS
from scalesim.errors import as_literal
from scalesim.layout_change import ARROW_FIELD, arrowed_said
from scalesim.remedies import rank_remedies

# bert-large on 16 A100s (the default page): micro-batch 32, a 6.8 GB/s busbw network
BATCH = "Double the per-device batch (32 → 64)"
NETWORK = "Faster inter-server network: 8 x 200 Gb/s HDR InfiniBand (6.8 → 192 GB/s busbw)"


def _titles(**fields) -> tuple[dict[str, str], dict[str, str]]:
    """{remedy key: title} as the page says them and as the CLI's ``rank_remedies`` does."""
    state = default_state().model_copy(update=fields)
    plan = make_plan(preset_profile(state), state)
    _, ranked = rank_remedies(plan.profile, plan.scenario, plan.focus.devices)
    return {r.key: r.title for r in plan.remedies}, {r.key: r.title for r in ranked}


def test_the_pages_remedy_titles_use_its_arrow_and_the_cli_keeps_its_own():
    page, cli = _titles()
    assert (page["bigger_batch"], page["interconnect"]) == (BATCH, NETWORK)
    assert (cli["bigger_batch"], cli["interconnect"]) == (
        BATCH.replace("→", "->"), NETWORK.replace("→", "->"))


def test_the_strong_scaling_title_too():
    """A fixed global batch of 512 on 16 devices: 32 a device, doubled."""
    page, cli = _titles(mode="strong", gb=512)
    assert page["bigger_batch"] == "Double the global batch (per-device batch 32 → 64)"
    assert cli["bigger_batch"] == "Double the global batch (per-device batch 32 -> 64)"


def test_the_remedies_tab_shows_the_pages_arrow():
    state = default_state()
    at = open_app({**encode_query(state, preset_profile(state)), "tab": "remedies"})
    column = next(d.value for d in at.dataframe if "remedy" in d.value.columns)["remedy"]
    assert {BATCH, NETWORK} <= set(column) and not any("->" in t for t in column)


def test_a_brace_in_the_figures_words_is_kept():
    """The template's other braces are doubled (``as_literal``), so a name with one is said as
    it is, in both."""
    title = arrowed_said("(", as_literal("{x} 1") + ARROW_FIELD + "2", ")")
    assert (title, page_title(title, GPU_NOUNS)) == ("({x} 1 -> 2)", "({x} 1 → 2)")
