"""Text that came from a profile, a file or the URL, escaped for Streamlit's Markdown (both
pages show such text; the report escapes it as HTML instead)."""

from __future__ import annotations

import re

# backslash first, so the escapes added are not escaped again; '&' so that an HTML entity
# ('&lt;') is shown as typed, not as the character it names (CommonMark escapes any ASCII
# punctuation, '\\&lt;' included: Streamlit's micromark does)
MARKDOWN_CHARS = "\\`*_[]<>#|~$&"

# Streamlit reads ':rocket:' as an emoji, ':material/home:' as an icon, ':streamlit:' as its
# logo and ':red[x]' as coloured text. A backslash ('\\:') stops the ':red[' directive only:
# the emoji, icon and logo plugins match the text after Markdown's escapes are read, where it
# is ':' again. A word joiner (U+2060: no width, no line break) after a colon that a name could
# follow stops all four; the text a reader sees is unchanged.
SHORTCODE_BREAK = "\u2060"
_SHORTCODE_COLON = re.compile(r":(?=[\w+-])")


def escape_markdown(text) -> str:
    """``text`` shown as written: every Markdown character and '&' backslash-escaped, and a
    colon that could open a Streamlit shortcode (':rocket:', ':red[') followed by
    ``SHORTCODE_BREAK``."""
    out = _SHORTCODE_COLON.sub(":" + SHORTCODE_BREAK, str(text))
    for ch in MARKDOWN_CHARS:
        out = out.replace(ch, "\\" + ch)
    return out


def escape_markdown_keep_bold(text: str) -> str:
    """``escape_markdown`` except the ``**bold**`` markers of the app's own sentences."""
    return "**".join(escape_markdown(part) for part in text.split("**"))
