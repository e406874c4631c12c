"""Session 45: a manager's and an engineer's walk through the planner (docs/reliability.md,
"Session 45")."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from app_harness import open_app
from scalesim.app.state import AppState, decode_query, encode_query, preset_profile


def _opened(url: str):
    """The page a link button opens: its query read as the browser's Streamlit reads it (an
    empty value kept: 'dpn=' is a control emptied)."""
    return open_app(dict(parse_qsl(urlsplit(url).query, keep_blank_values=True)))


# a sequence length of its own, and a named intra-server link: the plan's profile is not the
# page's (``plan.sequence_profile``, ``plan.with_chosen_intra``)
DERIVED = {
    "sequence length": {"hw": "dgx-h100", "wl": "gpt-18.4b", "dmax": 64, "tp": 4,
                        "train": 1e7, "seq": 4096},
    "intra-server link": {"hw": "a2-highgpu-8g", "wl": "bert-large", "dmax": 16,
                          "train": 1e9, "intra": "nvswitch-h100"},
}


@pytest.mark.parametrize("name", list(DERIVED))
def test_an_options_link_opens_without_a_false_alarm(name):
    """The card's "Open in the planner" link carried the fingerprint of the profile the plan
    made (at the sequence length, with the chosen intra-server link), so the option opened with
    "the sender's presets ... had other numbers (another scalesim version)"; it carries the
    page's, as the share link does."""
    state = AppState(**DERIVED[name])
    at = open_app(encode_query(state, preset_profile(state)))
    buttons = [b.proto for b in at.get("link_button")]
    assert buttons, "the card has an option with a link"
    for button in buttons:
        opened = _opened(button.url)
        boxes = [w.value for w in (*opened.warning, *opened.error)]
        assert not any("Share link" in b for b in boxes), (button.label, boxes)
        assert opened.session_state["app_state"].seq == state.seq


def test_an_uploaded_profiles_option_link_carries_the_profile_as_uploaded():
    """With an uploaded profile the option's link carried the profile at the state's sequence
    length (4,096 where the model's own is 2,048): the receiver's "Sequence length" control then
    said 'empty: the model's own, 4,096' and emptying it did not give the sender's model back."""
    from scalesim.app.plan import make_plan, option_links

    state = AppState(hw="dgx-h100", wl="gpt-18.4b", dmax=64, tp=4, train=1e7, seq=4096,
                     src="custom")
    profile = preset_profile(state).model_copy(update={"name": "lab"})
    state, profile, messages = decode_query(encode_query(state, profile))
    assert messages == []
    links = [link for _, link in option_links(make_plan(profile, state)) if link]
    assert links
    for link in links:
        state2, profile2, messages = decode_query(dict(parse_qsl(urlsplit(link).query,
                                                                 keep_blank_values=True)))
        assert messages == [] and profile2 == profile
        assert profile2.workload.transformer.seq_len == 2048 and state2.seq == 4096
