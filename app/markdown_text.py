"""Text that came from a profile, a file or the URL, escaped for Streamlit's Markdown (both
pages show such text; the report escapes it as HTML instead)."""

from __future__ import annotations

# backslash first, so the escapes added are not escaped again; '&' so that an HTML entity
# ('&lt;') is shown as typed, not as the character it names (CommonMark escapes any ASCII
# punctuation, '\\&lt;' included: Streamlit's micromark does)
MARKDOWN_CHARS = "\\`*_[]<>#|~$&"


def escape_markdown(text) -> str:
    """``text`` shown as written: every Markdown character and '&' backslash-escaped."""
    out = str(text)
    for ch in MARKDOWN_CHARS:
        out = out.replace(ch, "\\" + ch)
    return out


def escape_markdown_keep_bold(text: str) -> str:
    """``escape_markdown`` except the ``**bold**`` markers of the app's own sentences."""
    return "**".join(escape_markdown(part) for part in text.split("**"))
