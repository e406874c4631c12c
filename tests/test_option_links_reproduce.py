"""Session 19 (splitname19): the decision card's "Open in the planner" link of every option that
carries scenario changes (more devices, the planner's layout at today's count, one more server in
the planner's layout) opens a what-if whose headline and "As is" row show the option's own
throughput, time and money, the card's figures (docs/reliability.md, "Session 19: one name").

Was: where a critical batch size is known, an option at another global batch counts its
large-batch penalty against today's batch, while the opened what-if counted it against its own:
'Add devices (1 -> 32 devices ...)' read 36.7 days on the card and 3.2 days once opened. The
link now carries the samples the option needs at its batch (``_Ctx.changes``)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from app_harness import open_app
from scalesim.app.plan import option_links
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import card_rows, duration_text, usd_text
from scalesim.figures import throughput

TRAIN = 1e6  # samples in the run at today's global batch
LLAMA_SPLIT = {"wl": "llama3-70b", "hw": "dgx-h100", "dmax": 64, "focus": 64, "tp": 8, "pp": 2,
               "train": TRAIN, "price": None}
GPT76_ONE = {"wl": "gpt-76.1b", "dmax": 1, "focus": 1, "train": TRAIN}


def _plan(update: dict):
    """The plan of ``update`` from the page's own cache (``planner_page._plan``): the page opened
    at its link plans the same what-if, and each test asks it twice (session 41: was
    ``make_plan`` on each call, the page's plan computed again beside it)."""
    from scalesim.app.planner_page import _plan as cached_plan

    state = default_state().model_copy(update=update)
    return cached_plan(preset_profile(state), state)


def _metric(at, label_start: str):
    return next(m for m in at.metric if m.label.startswith(label_start))


def _opens_each_option_with_its_figures(update: dict) -> set[str]:
    """Each linked option's what-if, opened from the app's own link button, shows the option's
    throughput, time and money in its headline and "As is" row; returns the keys checked."""
    plan = _plan(update)
    at = open_app(encode_query(plan.state, plan.profile))
    buttons = {b.proto.label: b.proto.url for b in at.get("link_button")}
    links = dict(option_links(plan))
    checked = set()
    for o in plan.decision.options:
        if not o.changes:
            continue
        label = f"Open in the planner: {o.title}"
        assert label in buttons and links[o.title] is not None, (label, list(buttons))
        opened = open_app(dict(parse_qsl(urlsplit(buttons[label]).query)))
        time_and_money = _metric(opened, "Time to")
        assert _metric(opened, "Throughput").value == throughput(o.samples_per_s), o.title
        # the link's figure (session 47: the card's) agrees with the page: no model change said
        assert not any("the model changed" in i.value for i in opened.info), o.title
        assert time_and_money.value == duration_text(o.time_s), o.title
        # the app's money at the card's precision (rev20: cents below $100)
        assert usd_text(o.total_usd) in str(time_and_money.proto.delta), o.title
        as_is = next(t for t in opened.get("table")).value.iloc[0]
        assert as_is.name.startswith(f"As is: {o.devices} devices")
        assert (as_is["time to finish"], as_is["total money"]) == (
            duration_text(o.time_s), usd_text(o.total_usd))
        checked.add(o.key)
    return checked


@pytest.mark.parametrize("cbs", [None, 512.0])
def test_the_split_models_links_reproduce_the_layout_and_add_server_options(cbs):
    """llama3-70b on 64 H100s, dp 4 x tp 8 x pp 2: the planner's layout at 64 and one more
    server in the planner's layout (its global batch 1.125x), with and without a critical
    batch size (the large-batch penalty in the time)."""
    assert _opens_each_option_with_its_figures({**LLAMA_SPLIT, "cbs": cbs}) == {
        "split_model", "add_server"}


def test_the_more_devices_link_reproduces_its_time_with_the_large_batch_penalty():
    """gpt-76.1b on one A100 does not fit: 'Add devices (1 -> 64 ...)' (session 59: fewer
    device-hours than the fewest that fit, 32, the penalty counted), global batch 64x, whose
    time counts the penalty of B_noise = 64 against today's batch; opened, the same days."""
    plan = _plan({**GPT76_ONE, "cbs": 64.0})
    (o,) = plan.decision.options
    assert o.title.endswith("global batch 64x (its large-batch penalty is in the time)")
    assert o.changes["train_samples"] > TRAIN  # the samples it needs at 32x today's batch
    assert card_rows(plan.decision)[1]["time to finish"] == duration_text(o.time_s)
    assert _opens_each_option_with_its_figures({**GPT76_ONE, "cbs": 64.0}) == {"more_devices"}


@pytest.mark.parametrize("cbs", [None, 4096.0])
def test_the_add_server_link_in_todays_layout_reproduces_its_count(cbs):
    """resnet50 on 8 A100s: 'Add one server (8 -> 16 devices), global batch 2x' keeps today's
    layout, so its change is the device count (and, with a critical batch size, the samples it
    needs at its batch). Was: no ``changes``, so the card gave it no "Open in the planner" link
    (session 19, rev19)."""
    update = {"wl": "resnet50", "dmax": 8, "focus": 8, "train": 1e7, "cbs": cbs}
    (added,) = [o for o in _plan(update).decision.options if o.key == "add_server"]
    assert added.title.startswith("Add one server (8 → 16 devices)"), added.title  # page's arrow
    assert added.changes["devices"] == [16]
    assert set(added.changes) <= {"devices", "train_samples"}
    assert _opens_each_option_with_its_figures(update) >= {"add_server"}
