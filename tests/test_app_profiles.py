"""Uploaded profiles drive the controls; leaving one is explicit; caveats travel with the link."""

from __future__ import annotations

from app_harness import open_app, upload_profile
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import compact_profile, decode_query, encode_query, profile_caveats
from test_app_state import measured_profile

from scalesim.schemas import LinkCalibration

NOT_MEASURED = "NOT MEASURED (one server); numbers from preset ethernet:1x100"


def one_server_profile():
    """A calibrated one-server profile: the inter-server link was not measured."""
    base = measured_profile()
    hw = base.hardware
    return base.model_copy(update={
        "name": "one-server lab",
        "hardware": hw.model_copy(update={"inter_node": hw.inter_node.model_copy(update={
            "nics_per_node": 2, "gbit_per_nic": 200.0, "kind": "roce"})}),
        "links": [*base.links, LinkCalibration(level="inter_node", measured=False,
                                               note=NOT_MEASURED)],
    })


def test_caveats_survive_the_compact_profile_and_reach_the_report():
    profile = one_server_profile()
    caveats = profile_caveats(profile)
    assert caveats[0].startswith("inter-server link not measured (profile note: NOT MEASURED")
    assert "calibrated" in caveats
    state, received, _ = decode_query(encode_query(
        make_plan(profile, _state_for(profile)).state, profile))
    assert profile_caveats(received) == caveats
    assert compact_profile(received) == received
    html = report_html(make_plan(received, state), "http://x/?v=1")
    assert "inter-server link not measured" in html


def _state_for(profile):
    from scalesim.app.state import default_state, profile_defaults

    return default_state().model_copy(update={**profile_defaults(profile), "src": "custom"})


def test_an_upload_replaces_the_preset_pickers_and_sets_the_link_controls():
    at = upload_profile(open_app(), one_server_profile())
    keys = {w.key for w in at.sidebar.selectbox}
    assert "k_hw" not in keys and "k_wl" not in keys  # no picker showing unused presets
    assert any("Using" in i.value and "one-server lab" in i.value for i in at.sidebar.info)
    state = at.session_state["app_state"]
    assert (state.src, state.inter, state.nics, state.gbit) == ("custom", "profile", 2, 200.0)
    assert at.sidebar.selectbox(key="k_inter").value == "profile"


def test_leaving_a_profile_is_an_explicit_button():
    at = upload_profile(open_app(), one_server_profile())
    at.sidebar.button(key="leave_profile").click()
    at.run()
    assert not at.exception
    assert at.session_state["app_state"].src == "preset"
    assert at.session_state["profile"].name != "one-server lab"
    assert "src" not in at.query_params and "prof" not in at.query_params  # presets by name
    assert {"k_hw", "k_wl"} <= {w.key for w in at.sidebar.selectbox}


def test_the_receiver_of_an_uploaded_profile_sees_the_same_numbers_and_caveats():
    sender = upload_profile(open_app(), one_server_profile())
    query = {k: (v[-1] if isinstance(v, list) else v) for k, v in sender.query_params.items()}
    receiver = open_app(query)
    assert {m.label: m.value for m in receiver.metric} == {m.label: m.value
                                                          for m in sender.metric}
    text = " ".join(e.value for e in receiver.markdown)
    assert "inter-server link not measured" in text
    assert receiver.session_state["app_state"].src == "custom"


def test_an_unmeasured_link_is_said_in_predicts_words_from_its_fields():
    """A calibrated profile records why a level was not measured and where its numbers came from
    as fields (LinkCalibration.not_measured_because, numbers_from); predict and plan build
    their note from them (profiles.unmeasured_origin), the app cut the prose note instead:
    "not measured: NOT MEASURED (...)", and nothing at all for a level with the fields and no
    note. One wording now, the CLI's."""
    from scalesim.cli.cmd_predict import unmeasured_link_notes

    base = one_server_profile()
    link = LinkCalibration(level="inter_node", measured=False, not_measured_because="one server",
                           numbers_from="preset ethernet:1x100")
    profile = base.model_copy(update={"links": [*base.links[:-1], link]})
    caveat = profile_caveats(profile)[0]
    assert caveat == "inter-server link not measured (one server); numbers from preset " \
        "ethernet:1x100"
    cli = unmeasured_link_notes(profile, inter=True, intra=False)
    assert cli == [caveat + "; the rows on several servers use those numbers: measure it or "
                   "give --inter-busbw"]
