"""ASGI entry of ``scalesim app``: the planner script served by ``st.App``, warmed at start-up.

``python -m streamlit run server.py`` finds ``app`` (Streamlit's documented ``st.App``) and serves
``streamlit_app.py``. Its lifespan hook imports the page's modules and draws the default plan's
charts once before the server accepts connections, so the first visitor does not wait for
pandas, Altair's schema and the model to load.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

import streamlit as st


def warm_up() -> None:
    """Import the page and build the default plan and its first charts once."""
    from scalesim.app import charts, planner_page  # noqa: F401 - importing is the point
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state()
    plan = make_plan(preset_profile(state), state)
    for chart in (charts.throughput_chart(plan), charts.efficiency_chart(plan)):
        chart.to_dict()


@asynccontextmanager
async def _lifespan(_app):
    warm_up()
    yield None


app = st.App("streamlit_app.py", lifespan=_lifespan)
