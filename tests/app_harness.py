"""Shared helpers of the app tests under Streamlit's AppTest: the planner script, a run that
must not raise, the Diagnose page and a file uploaded to it, a sidebar choice changed, a link
parameter, a link round trip, a profile upload and the headline's knee line."""

from __future__ import annotations

from pathlib import Path

import scalesim.app
from streamlit.testing.v1 import AppTest

SCRIPT = str(Path(scalesim.app.__file__).with_name("streamlit_app.py"))
TIMEOUT_S = 120  # the first run imports pandas, Altair and the model on a busy CI machine


def run_clean(at: AppTest) -> AppTest:
    """``at`` run (again); the run must not raise (the exceptions are shown if it does)."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_app(query: dict | None = None) -> AppTest:
    """The planner page run once with ``query`` as its URL parameters; no exception raised."""
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return run_clean(at)


def _diagnose_page():
    from scalesim.app.diagnose_page import render

    render()


def open_diagnose_page(runs: str | None = None) -> AppTest:
    """The Diagnose page alone, run once; with ``runs`` (a runs file's text), that text then
    uploaded as runs.csv (``upload_file``); no exception raised."""
    at = run_clean(AppTest.from_function(_diagnose_page, default_timeout=TIMEOUT_S))
    return at if runs is None else upload_file(at, "dg_runs", "runs.csv", runs)


def upload_file(at: AppTest, key: str, name: str, text: str | bytes,
                mime: str = "text/csv") -> AppTest:
    """``text`` (or bytes) uploaded as the file ``name`` through the page's uploader ``key``,
    rerun; no exception raised."""
    data = text.encode() if isinstance(text, str) else text
    at.file_uploader(key=key).set_value((name, data, mime))
    return run_clean(at)


def change_select(query: dict, key: str, start: str, value: str):
    """The page opened at ``query``, its sidebar select ``key`` checked to show ``start`` and
    set to ``value``, rerun without an exception; returns (app, state before, state after)."""
    at = open_app(query)
    control = at.sidebar.selectbox(key=key)
    assert control.value == start
    before = at.session_state["app_state"]
    control.set_value(value)
    run_clean(at)
    return at, before, at.session_state["app_state"]


def link_param(at: AppTest, name: str) -> str:
    """The share link's parameter ``name`` now (AppTest may hold it as a one-item list)."""
    value = at.query_params[name]
    return value[0] if isinstance(value, list) else value


def select_into_link(query: dict, key: str, field: str, start: str, value: str, version: int):
    """``change_select`` of the sidebar select ``key`` from ``start`` to ``value``; the state's
    ``field`` and the share link's parameter ``field`` then say ``value``, the link v``version``.
    Returns (app, state before, state after)."""
    at, before, after = change_select(query, key, start, value)
    assert getattr(after, field) == value
    assert (link_param(at, field), link_param(at, "v")) == (value, str(version))
    return at, before, after


def focus_samples_per_s(state, *others) -> list[float]:
    """Samples/s at the plan's focus device count of ``state`` and of each of ``others``, all on
    ``state``'s preset profile."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import preset_profile

    profile = preset_profile(state)
    return [make_plan(profile, s).focus.samples_per_s for s in (state, *others)]


def link_round_trip(query: dict, field: str, value: str, version: int):
    """``query`` decoded without a message, ``field`` set to ``value`` and encoded: a
    v``version`` link that carries it and decodes back to the same state and profile.
    Returns (state, profile) of ``query`` and (state, profile) decoded from the new link."""
    from scalesim.app.state import decode_query, encode_query, link_version

    state, profile, messages = decode_query(query)
    assert messages == []
    changed = state.model_copy(update={field: value})
    params = encode_query(changed, profile)
    assert (params["v"], params[field], link_version(changed)) == (str(version), value, version)
    state2, profile2, messages = decode_query(params)
    assert messages == [] and state2 == changed and profile2 == profile
    return (state, profile), (state2, profile2)


def link_round_trip_plans(query: dict, field: str, value: str, version: int):
    """``link_round_trip``, then what the app makes of both links: the changed link's scenario
    and notes (``build_scenario``), its rows, which must be what ``predict`` gives that
    scenario, and the rows of ``query`` itself, which stays a v3 link. Returns (scenario,
    notes, rows, rows before)."""
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import encode_query

    from scalesim.predict import predict

    (state, profile), (state2, profile2) = link_round_trip(query, field, value, version)
    assert getattr(state, field) != value
    assert encode_query(state, profile)["v"] == "3"  # the default: still a v3 link
    scenario, notes = build_scenario(state2, profile2)
    rows, before = make_plan(profile2, state2).rows, make_plan(profile, state).rows
    assert rows == predict(profile2, scenario)
    return scenario, notes, rows, before


def upload_profile(at: AppTest, profile, name: str = "lab.json") -> AppTest:
    """Upload ``profile`` (a pydantic Profile) through the sidebar and rerun; no exception."""
    at.sidebar.file_uploader(key="upload").set_value(
        (name, profile.model_dump_json().encode(), "application/json"))
    return run_clean(at)


def knee_line(at: AppTest) -> str:
    """The headline's knee / best-remedy line (the first markdown is the story sentence)."""
    return next(m.value for m in at.markdown if m.value.startswith("**Knee:**"))


def preset_query(**fields) -> dict:
    """The share link of the what-if ``fields`` on their presets' defaults (with its checksum),
    as the app writes it."""
    from scalesim.app.state import AppState, encode_query, preset_profile, with_profile_defaults

    state = AppState(**fields)
    profile = preset_profile(state)
    return encode_query(with_profile_defaults(state, profile).model_copy(update=fields), profile)


def cannot_predict_box(at: AppTest) -> str:
    """The page's one 'Cannot predict' error box."""
    (box,) = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    return box


def url_query(url: str) -> dict[str, str]:
    """A link's query as one value a key (blank values kept, as the page reads them)."""
    import urllib.parse

    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query,
                                       keep_blank_values=True))


def shown_share_link(at: AppTest) -> dict[str, str]:
    """The share link the page shows (its first code block), as a query."""
    return url_query(at.code[0].value)
