"""Each share-link key states the link version it arrived in on its knob table row
(``bounds.Knob.link_since``, with ``link_before``: what an older link has instead). Before, the
versions' key lists were typed by hand in app/state.py (V4_FIELDS ... V16_FIELDS, one per
version, and a block of decode_query and link_version each), so a new knob needed its row and
those edits; now they are computed from the table (tests/test_link_versions_pinned.py: every
link opens and is written as before)."""

from __future__ import annotations

import dataclasses

import scalesim.app.state as st

from scalesim.bounds import KNOBS, LAYOUT_KNOBS

# the lists app/state.py held by hand before (LAYOUT_FIELDS less the later layout keys: v3)
HAND_LISTS = {3: ("tp", "pp", "sched", "vs", "rec", "sp"), 4: ("rs",), 5: ("gs",), 6: ("ak",),
              7: ("tpo",), 9: ("sg",), 10: ("zfw",), 11: ("pr",), 14: ("p2p",), 15: ("cp",),
              16: ("seq",)}


def test_each_versions_keys_are_the_ones_typed_by_hand_before():
    computed = {v: st.keys_added_in(v) for v in range(3, st.LINK_VERSION + 1)}
    assert {v: keys for v, keys in computed.items() if keys and v <= 16} == HAND_LISTS
    # session 42: v17, the first version only the table made (the memory margin, goal's range)
    assert computed[17] == ("mm", "gmax")
    # session 43: v18, goal's layout choice (glay)
    assert computed[18] == ("glay",)
    assert st.LINK_VERSION == 18 and tuple(str(v) for v in range(1, 19)) == st.READ_VERSIONS


def test_every_later_key_says_what_older_links_have_and_has_a_frozen_default():
    rows = [k for k in KNOBS + LAYOUT_KNOBS if k.url_key]
    later = {k.url_key for k in rows if k.link_since > 2}
    assert later == set(st.LATER_DEFAULTS)  # a frozen link default for each key v3+ added
    assert all(k.link_before for k in rows if k.link_since > 1)
    assert not any(k.link_before for k in rows if k.link_since == 1)
    assert max(k.link_since for k in rows) == st.LINK_VERSION  # a row of v19 would raise it


def test_a_key_moved_to_a_new_version_in_the_table_alone_is_written_and_read_so(monkeypatch):
    """The table is the one place: a row saying v18 (here seq's, moved) makes links that set it
    v18 and a v17 link that sets it ignores it in the row's words."""
    rows = dict(st.LINK_KEY_ROWS)
    rows["seq"] = dataclasses.replace(rows["seq"], link_since=18,
                                      link_before="sequence length (a test's words)")
    monkeypatch.setattr(st, "LINK_KEY_ROWS", rows)
    monkeypatch.setattr(st, "LINK_VERSION", 18)
    state = st.default_state().model_copy(update={"wl": "llama3-8b", "seq": 8192})
    assert st.link_version(state) == 18
    assert st.encode_query(state, st.preset_profile(state))["v"] == "18"
    old = {"v": "17", "wl": "llama3-8b", "seq": "8192",
           "ph": st.preset_fingerprint(st.preset_profile(state))}
    _, _, messages = st.decode_query({**old, "ck": st.link_checksum(old)})
    assert messages == ["ignored seq: a v17 link has no sequence length (a test's words)"]
