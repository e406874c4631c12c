"""Session 50: three kinds of box quoted text without escaping it for Markdown, where the page's
other boxes escape what may quote user input (``markdown_text.escape_markdown``): the sidebar's
refusal of a control's value (``planner_page._Controls``), the planner's box for a control value
the state refuses (``planner_page.render``) and the Diagnose page's error boxes (a refused upload
or typed value, ``diagnose_page.said_in_page``). A typed '*x*' showed as an italic x."""

from __future__ import annotations

from app_harness import TIMEOUT_S, open_diagnose_page, run_clean
from streamlit.testing.v1 import AppTest


def _a_typed_control():
    """The planner's controls with E_min as a text input: each value the page's number inputs
    send is within the state's bounds, so only a typed text reaches ``refusal`` today."""
    import streamlit as st
    from scalesim.app import planner_page

    planner_page._init_session()
    planner_page._Controls(st.session_state["app_state"])(st.sidebar.text_input, "emin", "E_min")


def test_a_refused_sidebar_value_is_escaped_as_the_other_boxes():
    at = run_clean(AppTest.from_function(_a_typed_control, default_timeout=TIMEOUT_S))
    at.sidebar.text_input(key="k_emin").input("*x*")
    run_clean(at)
    # was "E_min: *x* is not ...": state.refusal's sentence shown unescaped, an italic x
    assert [e.value for e in at.sidebar.error] == [
        "E\\_min: \\*x\\* is not a value the planner takes (not a number); keeping empty."]


def _planner_whose_controls_raise():
    from scalesim.app import planner_page

    def refused(*_):
        raise ValueError("'hw=<b>x</b>*' is not a preset")

    kept = planner_page._sidebar
    planner_page._sidebar = refused
    try:
        planner_page.render()
    finally:
        planner_page._sidebar = kept


def test_the_box_of_a_control_value_the_state_refuses_is_escaped():
    at = run_clean(AppTest.from_function(_planner_whose_controls_raise, default_timeout=TIMEOUT_S))
    assert ("A control has a value the planner cannot use ('hw=\\<b\\>x\\</b\\>\\*' is not a "
            "preset); using the last good one") in [e.value for e in at.error]  # was '<b>x</b>*'


def test_a_diagnose_refusal_quoting_a_typed_value_is_escaped():
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.text_input(key="dg_extrapolate").input("8,*x*")
    run_clean(at)
    assert [e.value for e in at.error] == ["Extrapolate to: '\\*x\\*' is not a whole number"]
