"""Session 50: a dated share link cut inside its last key. 'pr' of 'price=2.5' (a v2 link,
which has no 'pr' of its own: a v11 key, dropped as a later version's) was said to end at the
whole value before it ('strat=zero1': 'check Strategy'), and 'ta' of 'tab=goal' was listed as
an unknown field besides the cut. Now the cut names the key where the link ends and each
control it may be the start of (``state.cut_before_fingerprint``)."""

from __future__ import annotations

from app_harness import open_app, preset_query, url_query

CUT = "the link may have been cut short when copied (its end is missing)"


def _cut_at(key: str, **fields) -> dict[str, str]:
    """The dated share link of ``fields`` cut right after '&' and ``key``, the start of a key."""
    from scalesim.app.state import query_string, share_query

    link = query_string(share_query(preset_query(**fields), "2026-11-30"))
    return url_query("?" + link[:link.index(f"&{key}") + 1 + len(key)])


def _box(at) -> str:
    (box,) = [w.value.replace("\\", "") for w in at.warning if w.value.startswith("Share link")]
    return box


def test_a_link_cut_inside_price_names_price_not_the_value_before():
    query = _cut_at("pr", strat="zero1", price=2.5)
    assert list(query)[-2:] == ["strat", "pr"] and query["v"] == "2"
    at = open_app(query)
    box = _box(at)
    # session 52: a v2 link holds no 'pr' (a v11 key), so its 'pr' after 'strat' is 'price'
    # (was 'check Matmul precision or Price per device-hour'), and the controls after it
    assert (f"the link ends at 'pr' without the preset fingerprint (ph) a share link ends with: "
            f"{CUT}, inside the key of Price per device-hour (the only key a v2 link writes after "
            "'strat' that starts with 'pr'): compare the sidebar with the sender's for the 6 "
            "controls a v2 link writes from Price per device-hour to Budget (USD); the values "
            "before it arrived whole") in box, box
    assert "check Strategy" not in box  # before: 'the link ends at 'strat=zero1' ...'
    state = at.session_state["app_state"]
    assert (state.strat, state.price) == ("zero1", 3.673375)  # the preset's price: the cut's


def test_a_link_cut_inside_a_key_that_is_no_key_is_one_cut_not_an_unknown_field():
    at = open_app(_cut_at("ta", price=2.5, tab="goal"))
    box = _box(at)
    assert box.startswith(f"Share link: the link ends at 'ta' without the preset fingerprint "
                          f"(ph) a share link ends with: {CUT}, inside the key of 'tab' (the "
                          "only key a v2 link writes after 'price' that starts with 'ta'): check "
                          "'tab', Deadline (hours) and Budget (USD) in the sidebar; "), box
    assert "unknown" not in box  # before: '2 problems: (1) ignored unknown link fields: ta'
    assert at.session_state["app_state"].price == 2.5  # the values before the cut kept
