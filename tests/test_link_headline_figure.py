"""Session 46: a share link carries its sender's headline figure (``hs``: the throughput the
headline showed at its focus count), and the receiver's page says where this scalesim predicts
another for the same what-if: the model changed since the link was sent. Before, the link's
fingerprint (``ph``) covered the preset's numbers only, so after a change of the model's
equations an old link opened with other numbers and no word."""

from __future__ import annotations

import re
import urllib.parse

import pytest
from app_harness import open_app
from scalesim.app.sent_figure import (
    HEADLINE_KEY,
    SentFigure,
    differs,
    figure_text,
    parse_figure,
)
from scalesim.app.state import (
    MAX_DEVICES,
    decode_query,
    default_state,
    encode_query,
    preset_profile,
    query_string,
    read_link,
    share_query,
    with_figure,
)

import scalesim.model.collectives as collectives

CHANGED = "the model changed since the link was sent"
DATE = "2026-12-02"


@pytest.fixture(autouse=True)
def _fresh_plans():
    """The page's plan cache emptied before and after: a plan computed under another model (a
    test's patch) must not be shown, nor leak into a later test."""
    from scalesim.app.planner_page import _cached_plan

    _cached_plan.clear()
    yield
    _cached_plan.clear()


def _share_link(at) -> dict[str, str]:
    """The page's visible share link as its query parameters, in order."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(at.code[0].value).query,
                                       keep_blank_values=True))


def _throughput(at) -> str:
    return next(m.value for m in at.metric if m.label.startswith("Throughput"))


def _notes(at) -> list[str]:
    return [i.value for i in at.info if CHANGED in i.value]


def _model_changed(monkeypatch) -> None:
    """A model change: collectives' bytes per GB 2 % above a GB, so every transfer is 2 %
    faster than the sender's scalesim predicted (as a change of an equation would do); the
    page's plans of the model before it forgotten, as a new scalesim starts without them."""
    from scalesim.app.planner_page import _cached_plan

    monkeypatch.setattr(collectives, "GB", 1.02e9)
    _cached_plan.clear()


def test_the_share_link_carries_the_headline_after_its_checksum():
    at = open_app()
    link = _share_link(at)
    assert list(link)[:4] == ["v", "at", "ck", HEADLINE_KEY]
    focus = at.session_state["app_state"].focus or 16  # the knee of the default presets
    assert link[HEADLINE_KEY] == f"{focus}_{_throughput(at).replace(',', '')}"


def test_an_unchanged_model_opens_the_link_without_a_note():
    sent = open_app()
    receiver = open_app(_share_link(sent))
    assert not receiver.warning and _notes(receiver) == []
    assert "Shared what-if from" in receiver.info[0].value


def test_a_changed_model_names_both_figures(monkeypatch):
    sent = open_app()
    link, before = _share_link(sent), _throughput(sent)
    _model_changed(monkeypatch)
    receiver = open_app(link)
    after = _throughput(receiver)
    assert after != before  # the change moves the headline
    (note,) = _notes(receiver)
    devices = link[HEADLINE_KEY].split("_")[0]
    assert note.startswith(f"Sent as {before} sequences/s on {devices} devices; this scalesim "
                           f"predicts {after} sequences/s (+")
    assert "docs/model.md" in note
    assert not receiver.warning  # the link itself is whole


def test_a_link_from_before_the_figure_opens_as_before_even_after_a_model_change(monkeypatch):
    """Decided: no note. Such a link cannot tell a changed model from an unchanged one, and
    every link made until now is one: a note on each would be noise (no link version marks the
    key's arrival: like the checksum it needs none)."""
    sent = open_app()
    old = share_query(encode_query(default_state(), preset_profile(default_state())), DATE)
    assert HEADLINE_KEY not in old  # the share link as session 45 wrote it
    _model_changed(monkeypatch)
    receiver = open_app(old)
    assert not receiver.warning and _notes(receiver) == []
    assert _throughput(receiver) != _throughput(sent)


@pytest.mark.parametrize("value, why", [
    ("lots", "is not a device count and a throughput"),
    ("16_-3814", "is not a device count and a throughput"),
    ("-16_3814", "is not a device count and a throughput"),
    ("16_0", "its throughput is not above 0"),
    ("16_1e999", "its throughput is not above 0"),
    ("16_9e300", "its throughput is not above 0"),
    ("16_1.2.3", "its throughput is not a number"),
    ("999999_3814", "999999 devices is outside 1 to 16,384"),
    ("", "is not a device count and a throughput"),
])
def test_a_tampered_figure_is_ignored_with_a_warning_never_an_exception(value, why):
    link = {**_share_link(open_app()), HEADLINE_KEY: value}
    receiver = open_app(link)  # run_clean: no exception
    (box,) = [w.value for w in receiver.warning]
    assert f"headline figure '{HEADLINE_KEY}=" in box and why in box
    assert "whether the model changed since the link was sent cannot be told" in box
    assert _notes(receiver) == []
    assert _throughput(receiver)  # the page is drawn


def test_a_figure_in_a_cut_or_edited_link_is_not_compared():
    """A link whose checksum fails opens another what-if (its own warning says so): its numbers
    differ for that reason, not the model's."""
    params = share_query(with_figure(encode_query(default_state(),
                                                  preset_profile(default_state())), "16_3814"),
                         DATE)
    assert read_link(params)[3] == SentFigure(16, 3814.0)
    edited = {**params, "bkt": "50"}
    assert read_link(edited)[3] is None
    assert read_link({k: v for k, v in params.items() if k != "ck"})[3] is None


def test_a_fallback_plan_gives_the_link_no_figure():
    """A what-if the model cannot predict shows another below its error box: that one's
    headline is not this link's."""
    at = open_app({"v": "3", "wl": "llama3-8b", "tp": "3"})
    assert at.error and HEADLINE_KEY not in _share_link(at)


def test_not_runnable_is_sent_and_checked():
    assert figure_text(16, 3814.2, False) == "16_oom"
    assert parse_figure("16_oom", MAX_DEVICES) == SentFigure(16, None)
    link = share_query(with_figure(encode_query(default_state(),  # the sender's did not fit
                                                preset_profile(default_state())), "16_oom"), DATE)
    (note,) = _notes(open_app(link))
    assert re.match(r"Sent as not runnable on 16 devices; this scalesim predicts [\d,]+ "
                    r"sequences/s: the model changed", note)


@pytest.mark.parametrize("per_s, text", [
    (3814.2, "16_3814"), (140_912.0, "16_140900"), (17.114, "16_17.11"), (0.123449, "16_0.1234"),
    (3.21e-5, "16_3.21e-05"), (12_613_874.2, "16_12610000"),
])
def test_the_figure_is_the_headline_rounded_to_four_digits_without_a_plus(per_s, text):
    assert figure_text(16, per_s, True) == text
    sent = parse_figure(text, MAX_DEVICES)
    assert isinstance(sent, SentFigure) and not differs(sent.samples_per_s, per_s)


def test_a_difference_within_the_rounding_is_no_change():
    assert not differs(3814.0, 3814.49) and not differs(3814.0, 3813.5)
    assert differs(3814.0, 3814.6) and differs(3814.0, 3813.4)


def test_the_figure_opens_the_same_what_if_as_the_link_without_it():
    """Since session 47 the checksum covers the figure (``with_figure`` makes it again), so a
    link with it verifies, and its state is the one without it."""
    state = default_state().model_copy(update={"bkt": 50.0})
    params = encode_query(state, preset_profile(state))
    figured = share_query(with_figure(params, "16_3814"), DATE)
    assert query_string(figured).startswith(f"v=2&at={DATE}&ck=")
    assert decode_query(figured) == decode_query(share_query(params, DATE))
