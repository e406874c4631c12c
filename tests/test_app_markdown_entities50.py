"""Session 50: ``markdown_text.escape_markdown`` left '&' alone, so a share-link value like
'a&lt;b' was shown as 'a<b' (Streamlit's Markdown, CommonMark, reads an HTML entity as the
character it names). '&' is backslash-escaped now, as the other Markdown characters: CommonMark
shows a backslash-escaped ASCII punctuation character as itself ('\\&lt;' reads '&lt;')."""

from __future__ import annotations

import string

from app_harness import open_app
from scalesim.app.markdown_text import MARKDOWN_CHARS, escape_markdown


def test_an_ampersand_is_escaped_so_an_entity_is_shown_as_typed():
    assert escape_markdown("a&lt;b & c") == "a\\&lt;b \\& c"  # was 'a&lt;b & c': 'a<b & c'
    # a backslash escape holds only before ASCII punctuation (CommonMark 2.4)
    assert set(MARKDOWN_CHARS) <= set(string.punctuation)


def test_a_link_value_with_an_entity_is_quoted_as_typed_in_the_box():
    at = open_app({"v": "3", "hw": "a&lt;b"})
    [box] = [w.value for w in at.warning]
    assert "'hw=a\\&lt;b' is not valid (unknown hardware preset" in box  # was 'hw=a&lt;b'
