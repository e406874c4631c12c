"""The planner page under Streamlit's AppTest: widgets, share links, uploads, tabs."""

from __future__ import annotations

import json

import pytest
from app_harness import knee_line, open_app, upload_profile
from scalesim.app.plan import headline, make_plan
from scalesim.app.state import (
    AppState,
    decode_query,
    default_state,
    link_checksum,
    preset_fingerprint,
    preset_profile,
)
from streamlit.testing.v1 import AppTest
from test_app_state import measured_profile


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _query(at: AppTest) -> dict[str, str]:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def _charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


def test_opens_on_the_default_presets_with_the_curve_drawn():
    at = open_app()
    state = default_state()
    plan = make_plan(preset_profile(state), state)
    h = headline(plan)
    metrics = _metrics(at)
    assert metrics[f"Scaling efficiency at {h['devices']} devices"] == h["efficiency"]
    assert "crosses server boundary: inter-server link" in knee_line(at)
    assert h["best_remedy"] in knee_line(at)
    assert _charts(at) == 2  # throughput and efficiency on the first tab
    query = _query(at)  # the defaults: nothing else, the checksum of what it says and the
    # headline's figure (session 47: the address bar carries it as the share link does; 3,785
    # sequences/s since session 56's PyTorch DDP gradient bucket copies, Ψ 336e6 × 8 B / 1,555
    # GB/s = 1.73 ms more of the 16-device step, 133.56 -> 135.29 ms; 3,833 since session 48's
    # straggler stretch, 3,814 before)
    assert query == {"v": "2", "ck": query["ck"], "hs": f"{h['devices']}_3785", "ph": query["ph"]}
    assert "v=2" in at.code[0].value and "at=20" in at.code[0].value  # the visible share link
    assert not at.warning  # a fresh start is not a broken link


def test_a_widget_change_updates_numbers_and_link():
    at = open_app()
    before = _metrics(at)
    at.sidebar.selectbox(key="k_strat").set_value("zero3")
    at.sidebar.number_input(key="k_mb").set_value(64)
    at.run()
    assert not at.exception
    q = _query(at)
    assert q["strat"] == "zero3" and q["mb"] == "64"
    assert "strat=zero3" in at.code[0].value
    assert _metrics(at) != before
    state, profile, _ = decode_query(q)
    h = headline(make_plan(profile, state))
    assert _metrics(at)[f"Scaling efficiency at {h['devices']} devices"] == h["efficiency"]


def test_share_link_round_trip_opens_the_same_numbers():
    sender = open_app()
    sender.sidebar.selectbox(key="k_hw").set_value("dgx-a100").run()
    sender.sidebar.selectbox(key="k_inter").set_value("ethernet").run()
    sender.sidebar.number_input(key="k_price").set_value(3.5)
    sender.sidebar.number_input(key="k_train").set_value(2e9)
    sender.sidebar.select_slider(key="k_dmax").set_value(256)
    sender.run()
    assert not sender.exception
    link = _query(sender)
    receiver = open_app(link)
    assert not receiver.warning
    assert _metrics(receiver) == _metrics(sender)
    assert knee_line(receiver) == knee_line(sender)
    assert receiver.session_state["app_state"] == sender.session_state["app_state"]
    a = make_plan(sender.session_state["profile"], sender.session_state["app_state"])
    b = make_plan(receiver.session_state["profile"], receiver.session_state["app_state"])
    assert [r.model_dump() for r in a.rows] == [r.model_dump() for r in b.rows]
    assert _query(receiver) == link


def test_tampered_link_warns_falls_back_and_never_crashes():
    at = open_app({"v": "1", "dmax": "-5", "strat": "__import__('os')", "mb": "16",
                   "prof": "eJzLSM3JyVcozy_KSQEAGgQEXQ"})
    warnings = " ".join(w.value for w in at.warning)
    assert "dmax" in warnings and "strat" in warnings and "profile in the link" in warnings
    state: AppState = at.session_state["app_state"]
    assert state.dmax == AppState().dmax and state.strat == "ddp" and state.mb == 16
    assert _charts(at) == 2


def test_link_from_another_version_shows_the_defaults():
    at = open_app({"v": "19", "mb": "16"})
    assert "v1 to v18 links" in at.warning[0].value
    assert at.session_state["app_state"].mb == default_state().mb


def test_uploaded_profile_is_used_and_travels_in_the_link():
    at = open_app()
    profile = measured_profile()
    upload_profile(at, profile)
    assert any("Loaded profile" in s.value for s in at.sidebar.success)
    assert at.session_state["profile"] == profile
    q = _query(at)
    assert q["src"] == "custom" and "cv" not in q  # the profile's jitter is the control's value
    assert at.session_state["app_state"].cv == 0.03
    receiver = open_app(q)
    assert _metrics(receiver) == _metrics(at)
    assert receiver.session_state["profile"].compute == profile.compute.model_copy(
        update={"points": [], "source": ""})


def test_a_bad_upload_is_refused_with_one_line():
    at = open_app()
    at.sidebar.file_uploader(key="upload").set_value(("bad.json", b"{not json", "application/json"))
    at.run()
    assert not at.exception
    assert "bad.json: not valid JSON" in at.sidebar.error[0].value.replace("\\", "")
    foreign = json.loads(measured_profile().model_dump_json())
    foreign["schema_version"] = "scalesim-profile/0"
    at.sidebar.file_uploader(key="upload").set_value(
        ("old.json", json.dumps(foreign).encode(), "application/json"))
    at.run()
    assert "schema_version is 'scalesim-profile/0'" in at.sidebar.error[0].value.replace("\\", "")
    assert at.session_state["app_state"].src == "preset"


def test_an_upload_with_a_value_beyond_the_controls_warns_and_still_plans():
    """Controls and profile fields share scalesim.bounds; a measured noise scale (B_simple,
    the critical batch's default) may still lie below the critical-batch control's range."""
    from scalesim.schemas import NoiseScale

    at = open_app()
    base = measured_profile()
    profile = base.model_copy(update={
        "workload": base.workload.model_copy(update={"critical_batch_size": None}),
        "noise_scale": NoiseScale(b_simple=0.5, small_batch=8, big_batch=64)})
    upload_profile(at, profile, "huge.json")
    warning = at.sidebar.warning[0].value.replace("\\", "")
    assert "Loaded profile" in warning and "'cbs'" in warning and "\n" not in warning
    state = at.session_state["app_state"]
    assert state.cbs is None and AppState.model_validate(state.model_dump()) == state
    assert at.session_state["profile"] == profile


def test_profiles_folder_lists_and_loads(tmp_path, monkeypatch):
    (tmp_path / "lab.json").write_text(measured_profile().model_dump_json())
    (tmp_path / "notes.txt").write_text("ignored")
    monkeypatch.setenv("SCALESIM_APP_PROFILES", str(tmp_path))
    at = open_app()
    picker = at.sidebar.selectbox(key="folder_pick")
    assert picker.options == ["(choose a file)", "lab.json"]
    picker.set_value("lab.json").run()
    assert at.session_state["profile"].name == "lab-node (measured)"
    assert _query(at)["src"] == "custom"


@pytest.mark.parametrize("tab, charts", [("Step breakdown", 1), ("Remedies", 1),
                                         ("Hours & cost", 2), ("Time to quality", 1),
                                         ("A vs B", 1)])
def test_each_tab_draws(tab, charts):
    at = open_app({"v": "1", "cbs": "4096", "train": "1000000000", "price": "4"})
    at.session_state["k_tab"] = tab
    at.run()
    assert not at.exception
    assert _charts(at) == charts
    assert _query(at)["tab"] != "curve"
    if tab == "Remedies":
        table = at.dataframe[-1].value
        assert list(table["remedy"])[0].startswith("Faster inter-server network")
    if tab == "A vs B":
        deltas = [m.delta for m in at.metric if m.delta]
        assert any(d.startswith("+") for d in deltas)


def test_missing_price_explains_what_to_enter():
    at = open_app({"v": "1", "tab": "cost", "price": ""})
    assert any("price per device-hour" in i.value for i in at.info)
    assert _charts(at) == 0


@pytest.mark.parametrize("price", ["0", "4"])
def test_cost_table_says_predicts_zero_price_note(price):
    """The Hours & cost tab's table under a price of $0 says what predict says under its cost
    column (``training_time.zero_price_note``, one text); a real price says nothing of it."""
    from scalesim.app.markdown_text import escape_markdown

    from scalesim.training_time import Goal, zero_price_note

    note = escape_markdown(zero_price_note(Goal(None, None, 1e9, 0.0)))  # as Markdown shows it
    at = open_app({"v": "1", "tab": "cost", "train": "1000000000", "price": price})
    captions = [c.value for c in at.caption]
    # the table's own caption (the decision card above the tabs quotes it in its notes too)
    assert any(c == note[0].upper() + note[1:] + "." for c in captions) == (price == "0")
    assert any(note[1:] in c for c in captions) == (price == "0"), captions
    assert at.dataframe[-1].value["cost USD"].notna().all()


def _bound_links():
    """Two links with every numeric control at its lowest / highest allowed value."""
    import annotated_types as at_

    low, high = {"v": "17"}, {"v": "17"}  # v17: every control (mm and gmax since v17)
    for name, field in AppState.model_fields.items():
        for m in field.metadata:
            if isinstance(m, at_.Ge | at_.Gt):
                low[name] = str(m.ge if isinstance(m, at_.Ge) else m.gt + 1)
            if isinstance(m, at_.Le | at_.Lt):
                high[name] = str(m.le if isinstance(m, at_.Le) else m.lt - 1)
    # ended by the presets' fingerprint and with the checksum every v16+ link carries, as the app
    # writes them (a v16+ link without it looks cut: test_link_integrity)
    ph = preset_fingerprint(preset_profile(AppState()))
    return tuple({"v": "17", "ck": link_checksum({**x, "ph": ph}), **x, "ph": ph}
                 for x in (low, high))


@pytest.mark.parametrize("which", [0, 1])
def test_links_at_the_limits_render(which):
    link = _bound_links()[which]
    at = open_app(link)
    assert not at.warning
    # the highest micro-batch does not fit in memory: said as such, never as a number to praise
    assert all("not runnable" in e.value for e in at.error)
    assert at.session_state["app_state"].dmax == int(link["dmax"])


def test_my_device_list_draws_those_counts_and_says_what_it_left_out():
    at = open_app()
    at.sidebar.radio(key="k_grid").set_value("list").run()
    at.sidebar.text_input(key="k_dlist").set_value("1,4,8,12,32").run()
    assert not at.exception
    plan = make_plan(at.session_state["profile"], at.session_state["app_state"])
    assert [r.devices for r in plan.rows] == [1, 4, 8, 32]
    # a sentence, as the page's other notes (was 'left out 12' before session 49)
    assert any(i.value.startswith("Left out 12") for i in at.info)
    assert _query(at)["dlist"] == "1,4,8,12,32"


def test_text_from_a_link_is_shown_as_text_not_markup():
    at = open_app({"v": "1", "grid": "list", "dlist": "![x](http://example.invalid/t.png)"})
    refused = " ".join(e.value for e in at.error)  # a refusal of a typed value (session 44)
    assert "Device counts" in refused and "\\[x\\]" in refused  # escaped: no image is fetched
    assert [r.devices for r in make_plan(at.session_state["profile"],
                                         at.session_state["app_state"]).rows][0] == 1


def test_both_pages_escape_markdown_alike():
    """One escape for the planner and the diagnosis page (app/markdown_text.py)."""
    from scalesim.app import diagnose_page, planner_page
    from scalesim.app.markdown_text import escape_markdown, escape_markdown_keep_bold

    assert planner_page._md is diagnose_page._md is escape_markdown
    assert escape_markdown("![x](u) a_b $1 \\") == "!\\[x\\](u) a\\_b \\$1 \\\\"
    assert escape_markdown_keep_bold("**Knee:** 8 *x*") == "**Knee:** 8 \\*x\\*"
