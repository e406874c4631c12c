"""Session 50: the share link's warnings quoted a value with every character other than letters,
digits and '.,:+-' replaced by '?' ('ibw=100GB?s' for 'ibw=100GB/s'), a rule from before the
box escaped Markdown. The box escapes it now (``planner_page.link_problems`` through
``markdown_text.escape_markdown``), so a value is quoted as given, cut to 40 characters, a
control character written as its escape (``errors.printable``) so that the box stays one line."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.state import decode_query


def test_a_link_value_is_quoted_as_given_and_escaped_for_markdown_in_the_box():
    at = open_app({"v": "3", "ibw": "100GB/s", "hw": "<b>dgx</b>*"})
    [box] = [w.value for w in at.warning]
    # was "'ibw=100GB?s'" and "'hw=?b?dgx??b??'"
    assert "'ibw=100GB/s' is not valid (not a number; give the number alone, in GB/s: 100)" in box
    assert "'hw=\\<b\\>dgx\\</b\\>\\*' is not valid (unknown hardware preset" in box  # escaped


def test_a_control_character_is_written_as_its_escape_and_a_long_value_cut_to_40():
    _, _, messages = decode_query({"v": "3", "ibw": "a\nb", "wl": "x" * 50})
    assert "'ibw=a\\nb' is not valid (not a number); using the default" in messages  # was 'a?b'
    assert any(m.startswith(f"'wl={'x' * 40}' is not valid") for m in messages), messages
