"""Session 41: a share link damaged on its way (cut short by an address bar, a chat client or an
e-mail wrap, a key dropped, a number cut to one that still parses, a key repeated, its case
changed) opens either exactly the what-if that was sent or with a warning box that says so.

Before, an address-bar link (undated: session 40's cut rule read dated links only) cut anywhere
before its fingerprint opened in silence with the lost controls at their defaults ('gbit=10' of
'gbit=100', 49 of the 146 cut points of the split link below), as did a dated link cut right
after its date, a link cut to 'v=1' of 'v=14', a value changed or dropped in the middle, and a
repeated key (the last value used). A link now carries a checksum of what it says (``ck``,
right after its version, so a cut link keeps it and fails it)."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs, urlsplit

import pytest
from app_harness import open_app, upload_profile
from scalesim.app.state import (
    CHECK_KEY,
    CUT_SHORT,
    LOOKS_CUT,
    NO_CHECKSUM,
    NO_CHECKSUM_SINCE,
    decode_query,
    default_state,
    encode_query,
    preset_profile,
    query_string,
)

LIST = {"v": "2", "grid": "list", "dlist": "1,2,4,8,100", "cbs": "4000", "price": "2.5"}
SPLIT = {"v": "14", "hw": "dgx-h100", "wl": "llama3-70b", "dmax": "64", "gbit": "100", "tp": "8",
         "pp": "2", "sched": "interleaved", "vs": "2", "p2p": "0"}
ALTERED = ("the link's values do not match its checksum 'ck={ck}': a value was changed or dropped "
           "after the link was made; the values it holds are used and a control it lost shows "
           "its default: compare the sidebar with the sender's")


def _read(text: str):
    """A query string as Streamlit reads it (``parse_qs``: every value of a key, blanks kept)."""
    return decode_query(parse_qs(text, keep_blank_values=True))


def _links_the_page_makes(at) -> list[str]:
    """The page's share link (the "Share link" box, dated) and its address bar (undated)."""
    share = urlsplit(at.code[0].value).query
    bar = query_string({k: v[-1] if isinstance(v, list) else v
                        for k, v in at.query_params.items()})
    assert share.startswith(f"v={bar[2:bar.index('&')]}&at=20") and f"&{CHECK_KEY}=" in bar
    return [share, bar]


def _every_cut_is_exact_or_said(link: str) -> int:
    """Each cut of ``link`` (every length but 0, a bare address) decodes to the link's own
    what-if or says why it may not; returns how many cuts open another what-if."""
    whole = _read(link)
    assert whole[2] == [], whole[2]
    differ = 0
    for end in range(1, len(link)):
        state, profile, messages = _read(link[:end])
        if (state, profile) != whole[:2]:
            differ += 1
            assert messages, f"opened another what-if in silence: {link[:end]!r}"
    return differ


@pytest.mark.parametrize("query", [LIST, SPLIT], ids=["device list", "split v14"])
def test_every_cut_of_the_pages_links_is_exact_or_said(query):
    at = open_app(query)
    assert not at.warning
    for link in _links_the_page_makes(at):
        assert _every_cut_is_exact_or_said(link) > len(link) // 2  # most cuts lose something


def test_every_cut_of_an_uploaded_profiles_link_is_exact_or_said():
    at = open_app({"v": "14", "hw": "dgx-h100", "wl": "llama3-70b", "dmax": "64"})
    profile = preset_profile(default_state().model_copy(update={"hw": "dgx-h100",
                                                                "wl": "llama3-70b"}))
    upload_profile(at, profile.model_copy(update={"name": "my cluster"}))
    share, bar = _links_the_page_makes(at)
    assert "&src=custom&" in share and "&prof=" in share
    assert _every_cut_is_exact_or_said(share) > 0


def test_the_checksum_is_8_hex_digits_of_what_the_link_says_in_key_order():
    state = default_state().model_copy(update={"cbs": 4000.0, "price": 2.5})
    params = encode_query(state, preset_profile(state))
    assert list(params) == ["v", CHECK_KEY, "cbs", "price", "ph"]  # right after the version
    said = "cbs=4000&ph=31a4ae9a&price=2.5&v=2"  # sorted by key, the checksum and date left out
    # (the default presets' fingerprint since session 56: e222178e and ck 35ca4c73 before, when
    # bert-large's reference run did not pay PyTorch DDP's gradient bucket copies)
    assert params[CHECK_KEY] == hashlib.sha256(said.encode()).hexdigest()[:8] == "6af4b35e"


def _damaged(change) -> tuple[bool, list[str], str]:
    """(opens the sent what-if, messages, the link's checksum) of the split link's address bar
    after ``change``."""
    state = default_state().model_copy(update={
        "hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "gbit": 100.0, "tp": 8, "pp": 2,
        "sched": "interleaved", "vs": 2, "p2p": False})
    profile = preset_profile(state)
    params = encode_query(state, profile)
    got_state, got_profile, messages = decode_query(change(dict(params)))
    return (got_state, got_profile) == (state, profile), messages, params[CHECK_KEY]


def _set(**values):
    return lambda p: {**p, **values}


def _drop(key):
    return lambda p: {k: v for k, v in p.items() if k != key}


@pytest.mark.parametrize("change, same, says", [
    # a number cut in the middle of the link to one that still parses: 100 Gbit/s read as 10
    (_set(gbit="10"), False, [ALTERED]),
    (_drop("gbit"), False, [ALTERED]),  # 400 Gbit/s, the default
    (_drop("p2p"), False, [ALTERED]),  # the sends overlapped
    # a value's case changed: refused, and the checksum says the link is not as made
    (_set(sched="Interleaved"), False,
     ["'sched=Interleaved' is not valid (not one of 'auto', 'gpipe', '1f1b', 'interleaved' "
      "or 'zb'); using the default", ALTERED]),
    # a key given twice: the last value is used, and said
    (_set(tp=["8", "4"]), False,
     ["the link gives 'tp' 2 values ('8', '4'); using the last, '4'",
      ALTERED]),
    (_set(tp=["8", "8"]), True, []),  # twice the same value: the same what-if
    (_set(utm_source="chat"), True, ["ignored unknown link fields: utm_source"]),
    (lambda p: dict(reversed(p.items())), True, []),  # another order: the same what-if
    # cut to the version only ('v=1' of 'v=14'), or to the version and checksum
    (lambda p: {"v": "1"}, False, [f"the link holds nothing but its version: {CUT_SHORT}; showing "
                                   "the defaults"]),
    (lambda p: {"v": "14", "at": "2026-12-02", "ck": p["ck"]}, False,
     [f"the link holds nothing but its version, date and checksum: {CUT_SHORT}; showing the "
      "defaults"]),
], ids=["gbit 100 cut to 10", "gbit dropped", "p2p dropped", "case of a value",
        "tp twice", "tp twice alike", "a tracking key", "reordered", "v=1 of v=14",
        "version, date and checksum only"])
def test_a_damaged_link_opens_the_same_what_if_or_says_so(change, same, says):
    opened, messages, check = _damaged(change)
    assert (opened, messages) == (same, [m.format(ck=check) for m in says])


def test_an_old_link_without_a_checksum_opens_with_a_note():
    """Session 40's share link, as that scalesim wrote it (no checksum): the same what-if, and a
    note that a change in it cannot be told; cut before its end, it is said as before."""
    old = "v=2&at=2026-12-02&cbs=4000&price=2.5&ph=b0712dfb"
    state, _, messages = _read(old)
    # b0712dfb: the default presets before bert-large declared its 24 layers (session 41)
    presets_changed = ("the sender's presets 'a2-highgpu-8g' + 'bert-large' had other numbers "
                       "(another scalesim version): these predictions may differ from the sender's")
    assert (state.cbs, state.price) == (4000.0, 2.5)
    assert messages == [presets_changed, NO_CHECKSUM]
    state, _, messages = _read(old[:old.index("&ph=") - 2])
    assert state.price == 2.0 and messages[0].startswith("the link ends at 'price=2' without")


def test_the_page_says_a_link_changed_on_its_way():
    """The address bar link of the split what-if with 'gbit=100' cut to 'gbit=10' in its middle
    (the checksum kept): the warning box says so and the page shows what the link holds."""
    at = open_app(SPLIT)
    bar = {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert bar["gbit"] == "100"
    damaged = open_app({**bar, "gbit": "10"})
    (box,) = [w.value for w in damaged.warning]
    assert box.startswith("Share link: the link's values do not match its checksum 'ck=")
    assert damaged.session_state["app_state"].gbit == 10.0


CAPITALS = ("has capital letters, which the app never writes: the link was changed on its way "
            "(its letters put in capitals, as some chat clients and editors do), not cut short")


def test_a_checksum_or_fingerprint_in_capitals_is_said_changed_not_cut():
    """The default link 'v=2&ck=609ca338&ph=e222178e' with its checksum or fingerprint upper-cased
    was said to be 'not 8 hex digits: ... may have been cut short' (8 digits, nothing cut). Now
    the change is said once (the checksum's own note not added), and the link's what-if opens:
    the capitals are the same 8 digits. (The default link is 'v=2&ck=63a88240&ph=31a4ae9a' since
    session 56: bert-large's reference run pays PyTorch DDP's gradient bucket copies, so the
    preset's numbers and fingerprint changed.)"""
    link = query_string(encode_query(default_state(), preset_profile(default_state())))
    assert link == "v=2&ck=63a88240&ph=31a4ae9a"
    whole = _read(link)
    for key, value, what in (("ck", "63A88240", "checksum"),
                             ("ph", "31A4AE9A", "preset fingerprint")):
        state, profile, messages = _read(link.replace(value.lower(), value))
        assert messages == [f"the link's {what} '{key}={value}' {CAPITALS}"]
        assert (state, profile) == whole[:2]
    state, _, messages = _read("v=2&ck=63A8824&ph=31a4ae9a")  # 7 digits: cut, as before
    assert messages[0] == f"the link's checksum 'ck=63A8824' is not 8 hex digits: {CUT_SHORT}"


def test_a_link_cut_inside_a_key_says_it_was_cut():
    """'v=2&c' (the default link cut inside its checksum's key) opened the defaults with only
    'ignored unknown link fields: c'; an undated link without a checksum cut inside a key
    ('v=3&tp=2&p' of '...&pp=2') likewise. Now each says it was cut."""
    for cut, start in (("v=2&c", "c"), ("v=2&a", "a")):
        state, _, messages = _read(cut)
        assert messages == [f"the link holds nothing but its version and the start of a key "
                            f"('{start}'): {CUT_SHORT}; showing the defaults"]
        assert state == default_state()
    state, _, messages = _read("v=3&wl=llama3-8b&tp=2&p")
    assert messages == [f"the link ends inside a key ('p', with no value): {CUT_SHORT}"]
    assert (state.tp, state.pp) == (2, 1)
    assert _read("v=2&zz")[2] == ["ignored unknown link fields: zz"]  # no key starts so


def _without_checksum(link: str) -> str:
    return "&".join(kv for kv in link.split("&") if not kv.startswith(f"{CHECK_KEY}="))


def test_a_v16_link_without_its_checksum_looks_cut():
    """Every v16 link the app wrote carries a checksum (it came before v16). Without one, the
    whole link was said to be made by an older scalesim (NO_CHECKSUM, untrue), and 46 of its
    113 cuts before the fingerprint opened another what-if in silence (no date, no checksum to
    fail). Now each says it looks cut and to ask the sender for the whole link."""
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b", "dmax": 64,
                                               "tp": 2, "cp": 2, "seq": 32768})
    sent = query_string(encode_query(state, preset_profile(state)))
    link = _without_checksum(sent)
    assert link.startswith("v=16&hw=") and link.rsplit("&", 1)[1].startswith("ph=")
    whole = _read(link)
    assert whole[:2] == _read(sent)[:2] and whole[2] == [NO_CHECKSUM_SINCE]
    assert LOOKS_CUT in NO_CHECKSUM_SINCE and "v16 or later" in NO_CHECKSUM_SINCE
    silent = [link[:end] for end in range(len("v=16&"), len(link))
              if _read(link[:end])[:2] != whole[:2] and not _read(link[:end])[2]]
    assert silent == []
    cut = link[:link.index("&seq=")]  # the sequence length lost: another what-if
    cut_state, _, messages = _read(cut)
    assert cut_state.seq is None and messages == [NO_CHECKSUM_SINCE]


def test_links_before_v16_without_a_checksum_open_as_before():
    """A v15 link an older scalesim made (its fingerprint, no checksum) keeps its note, and one
    typed by hand (neither) opens in silence: no link of those versions must carry one."""
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b", "dmax": 64,
                                               "tp": 2, "cp": 2})
    link = _without_checksum(query_string(encode_query(state, preset_profile(state))))
    assert link.startswith("v=15&") and _read(link)[2] == [NO_CHECKSUM]
    assert _read(link[:link.index("&ph=")])[2] == []  # cut or typed: cannot be told


def test_the_page_says_a_v16_link_without_its_checksum_looks_cut():
    # (goal's layouts given: what a v16 link opens at, so the state is a v16 link: session 43)
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b",
                                               "seq": 16384, "glay": "given"})
    params = {k: v for k, v in encode_query(state, preset_profile(state)).items()
              if k not in (CHECK_KEY, "ph")}  # cut before its fingerprint, no checksum
    assert params["v"] == "16"
    (box,) = [w.value for w in open_app(params).warning]
    assert box.startswith(f"Share link: {NO_CHECKSUM_SINCE}.")
    assert "ask the sender for the whole link" in box
