"""The Streamlit entry script of ``scalesim app``: page setup and navigation.

Run it with ``scalesim app`` (or ``python -m streamlit run`` on this file). The planner is the
default page; the Diagnose page is imported only when opened, from ``scalesim.app.diagnose_page``.
"""

from __future__ import annotations

import importlib

import streamlit as st
from scalesim.app import planner_page

DIAGNOSE_MODULE = "scalesim.app.diagnose_page"


def diagnose() -> None:
    """The Diagnose page: upload runs and traces (drawn by ``diagnose_page.render``)."""
    try:
        module = importlib.import_module(DIAGNOSE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != DIAGNOSE_MODULE:
            raise
        st.title("Diagnose")
        st.info("The diagnose page is not part of this installation of scalesim.")
        return
    module.render()


def main() -> None:
    st.set_page_config(page_title="scalesim planner", page_icon="📈", layout="wide")
    page = st.navigation(
        [st.Page(planner_page.render, title="What-if planner", url_path="planner", default=True),
         st.Page(diagnose, title="Diagnose", url_path="diagnose")],
        position="top",
    )
    page.run()


main()
