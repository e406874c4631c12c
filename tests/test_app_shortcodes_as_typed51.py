"""Session 51: Streamlit reads ':rocket:' in a box as an emoji, ':material/home:' as an icon,
':streamlit:' as its logo and ':red[x]' as coloured text; ``markdown_text.escape_markdown``
escaped Markdown but not these, so a name or value a user typed with colons (a link value, a
profile's or workload's name, a typed list) could show as an icon. A word joiner (U+2060) now
follows each colon a name could follow: the Markdown source (AppTest's ``value``) holds it, the
text a reader sees is as typed. A backslash before the colon would stop the ':red[' directive
only: Streamlit's emoji, icon and logo plugins match the text after Markdown's escapes are read
(its StreamlitMarkdown.tsx, remark-emoji's findAndReplace), where '\\:' is ':' again."""

from __future__ import annotations

import re

from app_harness import open_app, open_diagnose_page, preset_query, run_clean, upload_profile
from scalesim.app.markdown_text import SHORTCODE_BREAK, escape_markdown
from scalesim.app.state import AppState, encode_query, preset_profile, with_profile_defaults

TYPED = ":rocket: :red[x] :material/home: :+1: :streamlit: :1234:"
# what Streamlit's frontend matches in the text it renders (JavaScript's ASCII \w): its test
# for emoji shortcodes, remark-emoji's, its icon and logo patterns and a text directive's start
STREAMLIT_PATTERNS = [r":(?!material/|streamlit:)[\w+-][\w_+-]*:", r":\+1:|:-1:|:[\w-]+:",
                      r":material/(\w+):", r":streamlit:", r":[A-Za-z]"]


def as_read(markdown: str) -> str:
    """The text a reader sees of escaped Markdown: its backslash escapes read, its word joiners
    (no width) dropped."""
    return re.sub(r"\\(.)", r"\1", markdown).replace(SHORTCODE_BREAK, "")


def _text_value(markdown: str) -> str:
    """The text Streamlit's plugins match: the backslash escapes read, the word joiners kept."""
    return re.sub(r"\\(.)", r"\1", markdown)


def test_no_shortcode_streamlit_reads_is_left_and_the_text_reads_as_typed():
    escaped = escape_markdown(TYPED)
    for pattern in STREAMLIT_PATTERNS:
        assert re.search(pattern, _text_value(TYPED), re.ASCII)  # each would turn into an icon
        assert re.search(pattern, _text_value(escaped), re.ASCII) is None, pattern
    assert as_read(escaped) == TYPED
    assert escaped.count(":" + SHORTCODE_BREAK) == 6  # one per shortcode, after its first colon


def test_a_colon_no_name_follows_is_left_alone():
    """The app's own 'cannot run: at 64 devices' and a link's 'http://' stay as they were."""
    for text in ("cannot run: at 64 devices", "http://localhost/?v=3", "ends with a colon:"):
        assert escape_markdown(text) == text


def test_a_link_value_with_a_shortcode_is_quoted_as_typed():
    (box,) = [w.value for w in open_app({"v": "3", "hw": ":rocket:"}).warning]
    assert ":" + SHORTCODE_BREAK + "rocket:" in box, box  # was ':rocket:', a rocket on the page
    assert "'hw=:rocket:' is not valid (unknown hardware preset" in as_read(box)


def test_a_diagnose_value_with_a_shortcode_is_quoted_as_typed():
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.text_input(key="dg_extrapolate").input("8,:red[x]")
    run_clean(at)
    (box,) = [e.value for e in at.error]
    assert SHORTCODE_BREAK in box and as_read(box) == "Extrapolate to: ':red[x]' is not a whole number"


def test_an_uploaded_profile_named_with_shortcodes_is_named_as_typed():
    state = AppState(hw="dgx-h100", wl="llama3-8b")
    profile = preset_profile(state)
    named = profile.model_copy(update={"name": ":rocket:", "workload": profile.workload.model_copy(
        update={"name": ":material/home:"})})
    at = upload_profile(open_app(preset_query(hw="dgx-h100", wl="llama3-8b")), named)
    (box,) = [i.value for i in at.sidebar.info if i.value.startswith("Using")]
    assert "**:" + SHORTCODE_BREAK + "rocket:**" in box, box
    assert as_read(box).startswith("Using **:rocket:** (") and ":material/home:)" in as_read(box)


def test_a_scenario_b_that_does_not_apply_quotes_the_workload_name_as_typed():
    """The A/B tab's box quotes the remedy's reason, which names the workload: it was shown
    unescaped (no Markdown escape at all) before session 51."""
    state = AppState(hw="dgx-h100", wl="llama3-8b", b="attention_kernel", tab="ab", src="custom")
    profile = preset_profile(state)
    profile = profile.model_copy(update={"name": "lab", "workload": profile.workload.model_copy(
        update={"name": ":rocket:", "transformer": None})})  # a parameter count: no attention
    at = open_app(encode_query(with_profile_defaults(state, profile).model_copy(
        update={"b": "attention_kernel", "tab": "ab", "src": "custom"}), profile))
    (box,) = [i.value for i in at.info if "does not apply here" in i.value]
    assert "workload ':" + SHORTCODE_BREAK + "rocket:' is a parameter count" in box, box
    assert "workload ':rocket:' is a parameter count, not a transformer shape" in as_read(box)
