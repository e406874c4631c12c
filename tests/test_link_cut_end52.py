"""Session 52: a share link cut near its end says what the cut may have lost, by the order the
app writes a link's keys (``state.cut_before_fingerprint``). Before, a link cut right after
'&p' was read as the start of 'pr', 'price', 'pp' or 'p2p' whatever came before it ('check
Matmul precision or Price per device-hour or Pipeline stages or Pipeline send overlap'), though
after 'pp' only the fingerprint 'ph' starts with 'p'; a value at the end named its control
alone, not the controls written after it; and a cut inside 'ph' did not say the controls
before it arrived whole.

The link: 'v=3&at=2026-12-02&ck=...&hw=dgx-h100&wl=llama3-70b&mb=32&gb=2048&nics=1&gbit=100&
price=3.673375&tp=8&pp=2&ph=db433aa2'. A v3 link writes, after tp: pp, sched, vs, rec, sp (rs
is v4, tpo v7, sg v9, p2p v14, cp v15, seq v16, mm and gmax v17, glay v18), then ph."""

from __future__ import annotations

import urllib.parse

from scalesim.app.state import (
    decode_query,
    default_state,
    encode_query,
    preset_profile,
    query_string,
    share_query,
)

CUT = "the link may have been cut short when copied (its end is missing)"
HEAD = "without the preset fingerprint (ph) a share link ends with: " + CUT
ONLY_PH = "only that key was lost, and the controls before it arrived whole"


def _link(**split) -> str:
    """The dated share link of llama3-70b on dgx-h100 split ``split``."""
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-70b", **split})
    return query_string(share_query(encode_query(state, preset_profile(state)), "2026-12-02"))


def _open(text: str):
    """(state, messages) of a link's query ``text`` as the page reads it."""
    state, _, messages = decode_query(dict(urllib.parse.parse_qsl(text,
                                                                  keep_blank_values=True)))
    return state, messages


def test_a_link_cut_after_p_where_only_the_fingerprint_starts_with_p_lost_only_it():
    link = _link(tp=8, pp=2)
    assert link.endswith("&tp=8&pp=2&ph=db433aa2")
    state, messages = _open(link[:link.index("&ph=") + 2])  # '...&pp=2&p'
    assert messages == [f"the link ends at 'p' {HEAD}, inside the key of the preset fingerprint "
                        "(ph) (the only key a v3 link writes after 'pp' that starts with 'p'): "
                        f"{ONLY_PH}"]  # before: 'check Matmul precision or ... in the sidebar'
    assert (state.tp, state.pp) == (8, 2)


def test_a_link_cut_after_p_that_may_be_a_control_names_it_and_those_after_it():
    link = _link(tp=8)
    state, messages = _open(link[:link.index("&ph=") + 2])  # '...&tp=8&p': pp=... or ph=...
    assert messages == [f"the link ends at 'p' {HEAD}, inside the key of Pipeline stages or the "
                        "preset fingerprint (ph) (the keys a v3 link writes after 'tp' that start "
                        "with 'p'): compare the sidebar with the sender's for the 5 controls a v3 "
                        "link writes from Pipeline stages to Sequence parallelism; the values "
                        "before it arrived whole"]
    assert state.tp == 8


def test_a_link_cut_after_the_ampersand_of_its_last_control_names_those_written_after_it():
    link = _link(tp=8, pp=2)
    # '...&pp=2&' reads as '...&pp=2': the value may be cut ('pp=2' of 'pp=24') too
    _, messages = _open(link[:link.index("&ph=") + 1])
    assert messages == [f"the link ends at 'pp=2' {HEAD}, perhaps inside that value: check "
                        "Pipeline stages in the sidebar; a v3 link writes Pipeline schedule, "
                        "Virtual stages, Activation recompute and Sequence parallelism after it, "
                        "which may be lost: check them too; the values before it arrived whole"]


def test_a_link_cut_inside_its_last_value_refuses_it_and_says_what_may_be_lost():
    link = _link(tp=8, pp=2)
    state, messages = _open(link[:link.index("&ph=") - 1])  # '...&pp='
    assert messages[0].startswith("'pp=' is not valid")
    assert messages[1] == (f"the link ends at 'pp=' {HEAD}, perhaps inside that value: check "
                           "Pipeline stages in the sidebar; a v3 link writes Pipeline schedule, "
                           "Virtual stages, Activation recompute and Sequence parallelism after "
                           "it, which may be lost: check them too; the values before it arrived "
                           "whole")
    assert (state.tp, state.pp) == (8, 1)


def test_a_link_cut_inside_its_fingerprint_lost_only_it():
    link = _link(tp=8, pp=2)
    for end, shown in (("&ph", "ph="), ("&ph=", "ph="), ("&ph=db4", "ph=db4")):
        state, messages = _open(link[:link.index("&ph=") + len(end)])
        assert messages == [f"the link's preset fingerprint '{shown}' is not 8 hex digits: {CUT}, "
                            f"inside that key, the last a link holds: {ONLY_PH}"], end
        assert (state.tp, state.pp) == (8, 2)


def test_a_custom_profile_link_cut_after_p_lost_its_profile_only():
    link = _link(tp=8, pp=2, src="custom")
    _, messages = _open(link[:link.index("&prof=") + 2])
    assert messages[0] == (f"the link ends at 'p' without the profile (prof) a share link ends "
                           f"with: {CUT}, inside the key of the profile (prof) (the only key a v3 "
                           f"link writes after 'pp' that starts with 'p'): {ONLY_PH}")


def test_keys_out_of_the_writers_order_prove_nothing_after_the_cut():
    link = _link(tp=8, pp=2)
    swapped = link.replace("&tp=8&pp=2", "&pp=2&tp=8")  # edited by hand
    _, messages = _open(swapped[:swapped.index("&ph=") + 2])
    assert messages == [f"the link ends at 'p' {HEAD}, perhaps inside that key: a control after "
                        "it may be lost: compare the sidebar with the sender's; the values before "
                        "it arrived whole"]
    _, messages = _open(swapped[:swapped.index("&ph=") + 5])  # '...&tp=8&ph=d': not said whole
    assert messages == [f"the link's preset fingerprint 'ph=d' is not 8 hex digits: {CUT}"]


def test_the_app_doc_quotes_the_cut_messages():
    """docs/app.md's share-link paragraph quotes these messages."""
    import pathlib
    import re

    doc = re.sub(r"\s+", " ", (pathlib.Path(__file__).parents[1] / "docs" / "app.md").read_text())
    after_tp = _open(_link(tp=8)[:_link(tp=8).index("&ph=") + 2])[1][0]
    after_pp = _open(_link(tp=8, pp=2)[:_link(tp=8, pp=2).index("&ph=") + 2])[1][0]
    for quote, message in (("compare the sidebar with the sender's for the 5 controls a v3 link "
                            "writes from Pipeline stages to Sequence parallelism", after_tp),
                           (ONLY_PH, after_pp)):
        assert quote in doc and quote in message
