"""One bad value never freezes the page; a link's profile blob holds only what a profile file may."""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from app_harness import open_app
from scalesim.app.planner_page import WIDGET_FIELDS
from scalesim.app.state import (
    AppState,
    decode_query,
    default_state,
    encode_query,
    field_bounds,
    preset_profile,
    refusal,
    widget_bounds,
)

from scalesim.errors import ScalesimError


def test_every_number_widget_takes_its_bounds_from_the_state():
    at = open_app()
    widgets = {w.key: w for w in at.sidebar.number_input}
    assert widgets, "no number inputs drawn"
    for key, w in widgets.items():
        field = key.removeprefix("k_")
        lo, hi = field_bounds(field)
        assert w.min == lo, (field, w.min, lo)
        assert w.max == hi, (field, w.max, hi)
    assert set(widget_bounds("mb")) == {"min_value", "max_value"}
    assert all(f in AppState.model_fields for f in WIDGET_FIELDS)


def test_refusal_is_one_plain_sentence_and_names_what_is_kept():
    state = default_state()
    assert refusal(state, "mb", 64) is None
    text = refusal(state, "mb", 20_000_000)
    assert text == ("Per-device micro-batch: 20,000,000 is above the largest value the planner "
                    "takes, 16,777,216; keeping 32.")  # 2**24, scalesim/bounds.py micro_batch
    assert "below the smallest" in refusal(state, "train", 0.5)
    assert "\n" not in text and "pydantic" not in text and "http" not in text


def test_an_out_of_range_value_leaves_the_page_following_the_other_controls():
    # A browser's number input refuses a value beyond its bounds before sending it (checked in
    # test_app_decide_browser.py); a value injected past the widget never reaches the state.
    at = open_app()
    at.sidebar.number_input(key="k_mb").set_value(20_000_000)
    at.run()
    assert not at.exception
    # reset to the input's default: empty (the profile's micro-batch) since session 44 keeps an
    # input whose field may be None clearable (test_app_walk44)
    mb = at.session_state["app_state"].mb
    assert mb is None or mb <= field_bounds("mb")[1]
    linked = at.query_params.get("mb", "")
    assert linked == "" or int(linked) <= field_bounds("mb")[1]
    at.sidebar.number_input(key="k_dpn").set_value(4)
    at.run()
    assert not at.exception
    assert at.session_state["app_state"].dpn == 4 and at.query_params["dpn"] == "4"


def _blob(data) -> str:
    raw = json.dumps(data).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def _profile_json() -> dict:
    state = default_state()
    return json.loads(preset_profile(state).model_dump_json())


@pytest.mark.parametrize("poison", ["infinity", "huge_int", "long_name"])
def test_a_poisoned_profile_blob_is_refused_and_the_page_still_draws(poison):
    data = _profile_json()
    if poison == "infinity":
        data["workload"]["params"] = float("inf")
    elif poison == "huge_int":
        data["hardware"]["devices_per_node"] = 10**25
    else:
        data["name"] = "x" * 150_000
    params = encode_query(default_state().model_copy(update={"src": "custom"}),
                          preset_profile(default_state()))
    params["prof"] = _blob(data)
    state, profile, messages = decode_query(params)
    assert any("profile in the link" in m for m in messages), messages
    assert profile == preset_profile(state)
    at = open_app(params)  # the cache round trip must not crash
    assert any("profile in the link" in w.value for w in at.warning)


def test_checked_profile_refuses_non_finite_numbers_with_the_field_name():
    from scalesim.app.state import checked_profile

    data = _profile_json()
    data["compute"]["per_sample_s"] = float("nan")
    with pytest.raises(ScalesimError, match="compute.per_sample_s"):
        checked_profile(data, "upload.json")


def test_a_slow_device_beyond_every_count_is_said_as_predict_says_it(capsys):
    """Slow device rank 15 on 1-4 devices slows no row: the page says so in the words of
    ``scalesim predict`` (before: the page said nothing, predict printed a note)."""
    from cli_harness import run_cli

    at = open_app({"v": "5", "slow": "15", "sf": "2", "dmax": "4"})
    shown = [i.value for i in at.info]
    # a sentence on the page, as its other notes (was 'device 15 ...' before session 49)
    assert any(s.startswith("Device 15 is not among the 1, 2 and 4 devices") for s in shown), shown
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,2,4", "--slow-device", "15",
                                    "--slow-factor", "2"])
    assert code == 0 and "note: device 15 is not among the 1, 2 and 4 devices" in out
    at = open_app({"v": "5", "slow": "0", "sf": "2", "dmax": "4"})  # rank 0 is in every row
    assert not any("is not among" in i.value for i in at.info)


def test_a_gradient_sync_that_changes_nothing_is_noted_as_predict_notes_it():
    """The app took 'once per step' with DDP (or no accumulation) as predict did, with the same
    numbers and no word; the page's notes say why now, predict's reason by the page's controls
    (session 51; was 'gradient sync once-per-step ignored: strategy ddp reduces ...')."""
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState, preset_profile

    for strat, acc, why in (("ddp", 4, "Strategy DDP reduces gradients once per step"),
                            ("zero2", 1, "Gradient accumulation 1: one micro-step per step")):
        state = AppState(strat=strat, acc=acc, gs="once-per-step")
        _, notes = build_scenario(state, preset_profile(state))
        assert any(n.startswith(f"Gradient sync once-per-step ignored: {why}") for n in notes)
    state = AppState(strat="zero2", acc=4, gs="once-per-step")
    _, notes = build_scenario(state, preset_profile(state))
    assert not any("Gradient sync" in n for n in notes)


@pytest.mark.parametrize("dpn", [16, 4])
def test_devices_per_server_other_than_the_hardwares_is_said_as_predict_says_it(capsys, dpn):
    """`predict --gpus-per-node 16` on 8-GPU servers says the 16 share one server's link (and 4
    what 4 of 8 GPUs reach, and how they are billed); the app's 'Devices per server' at 16 or 4
    said nothing. The page's notes say predict's words now (the control named, not the flag)."""
    from cli_harness import run_cli
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState, preset_profile

    from scalesim.predict import server_use_words

    state = AppState(dpn=dpn, dmax=16)
    profile = preset_profile(state)
    scenario, notes = build_scenario(state, profile)
    words = server_use_words(profile.hardware, scenario, "the Devices per server setting")
    assert words is not None and words in notes, notes
    code, out, err = run_cli(capsys, ["predict", "--devices", "16", "--gpus-per-node", str(dpn),
                                      "--hardware", profile.hardware.name])
    assert code == 0, err
    assert words.replace("the Devices per server setting", "--gpus-per-node") in out
    at = open_app({"v": "5", "dpn": str(dpn), "dmax": "16"})
    assert not at.exception
    assert any(words.split(":")[0] in i.value for i in at.info), [i.value for i in at.info]
    _, notes = build_scenario(AppState(dmax=16), profile)  # the hardware's own: nothing said
    assert not any("GPUs per server" in n for n in notes)


def test_a_refused_control_value_is_written_like_its_bound_never_1e_plus():
    """Session 19: '1e+20 is above the largest value ..., 100,000' (Python's float text)."""
    state = default_state()
    assert refusal(state, "ebw", 1e20).startswith(
        "Inter-server bus bandwidth (GB/s): 1e20 is above the largest value the planner takes, "
        "100,000")  # named as its sidebar label (session 44)
    assert "100,000.5 is above" in refusal(state, "ebw", 100000.5)
