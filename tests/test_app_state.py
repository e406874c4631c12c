"""The planner's share link: state -> URL -> state, and what a broken link does."""

from __future__ import annotations

import base64
import json
import re
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from scalesim.app.markdown_text import escape_markdown
from scalesim.app.plan import build_scenario, device_counts, make_plan
from scalesim.app.state import (
    CHECK_KEY,
    FIELDS,
    MAX_PROFILE_JSON_BYTES,
    NO_CHECKSUM,
    AppState,
    compact_profile,
    decode_profile,
    decode_query,
    default_state,
    encode_profile,
    encode_query,
    preset_profile,
    profile_defaults,
    query_string,
)

from scalesim.errors import ScalesimError
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import (
    CollectivePoint,
    Jitter,
    LoaderCurve,
    LoaderPoint,
    NoiseScale,
)


def measured_profile():
    """A profile shaped like a calibrated one: loader curve, jitter, raw points, host names."""
    base = default_profile()
    compute = base.compute.model_copy(update={
        "overhead_s": 0.004, "per_sample_s": 0.0021, "optimizer_step_s": 0.012, "measured": True,
        "source": "measured on node-a",
    })
    links = [base.links[0].model_copy(update={"measured": True, "points": [
        CollectivePoint(op="all_reduce", size_bytes=2**20, ranks=8, time_s=1e-4, algbw_GBps=10.5,
                        busbw_GBps=18.4)]})]
    return base.model_copy(update={
        "name": "lab-node (measured)",
        "compute": compute,
        "links": links,
        "input_pipeline": LoaderCurve(points=[LoaderPoint(workers=0, samples_per_s=300.0),
                                              LoaderPoint(workers=4, samples_per_s=1500.0)],
                                      measured=True),
        "jitter": Jitter(step_time_cv=0.03, per_rank_median_s=[0.1, 0.11]),
        "noise_scale": NoiseScale(b_simple=3000.0, small_batch=32, big_batch=256),
        "fingerprint": base.fingerprint.model_copy(update={"hostnames": ["secret-host-1"]}),
        "notes": ["calibrated"],
    })


def _rows(profile, state):
    return [r.model_dump() for r in make_plan(profile, state).rows]


def test_default_link_round_trip_reproduces_state_profile_and_predictions():
    state, profile = default_state(), preset_profile(AppState())
    state2, profile2, messages = decode_query(encode_query(state, profile))
    assert messages == []
    assert state2 == state
    assert profile2 == profile  # the presets' full profile, notes included
    assert _rows(profile2, state2) == _rows(profile, state)


def test_every_control_survives_the_link():
    state = default_state().model_copy(update={
        "hw": "dgx-a100", "wl": "gpt-7b", "dmax": 256, "grid": "server", "dpn": 8,
        "mode": "strong", "gb": 4096, "acc": 2, "ovl": False, "bkt": 50.5, "strat": "zero3",
        "algo": "ring", "lw": 3, "cv": 0.05, "slow": 3, "sf": 1.3, "intra": "custom",
        "ibw": 123.25, "ilat": 3.5, "inter": "ethernet", "nics": 2, "gbit": 200.0,
        "cbs": 2048.0, "emin": 5e8, "train": 1e9, "price": 3.25, "focus": 64,
        "b": "interconnect", "tab": "cost",
    })
    profile = preset_profile(state)
    state2, profile2, messages = decode_query(encode_query(state, profile))
    assert messages == []
    assert state2 == state
    for name in FIELDS:
        assert getattr(state2, name) == getattr(state, name), name
    plan, plan2 = make_plan(profile, state), make_plan(profile2, state2)
    assert [r.model_dump() for r in plan2.rows] == [r.model_dump() for r in plan.rows]
    assert plan2.b_focus == plan.b_focus and plan2.b_focus is not None


def test_uploaded_profile_travels_compactly_with_identical_predictions():
    profile = measured_profile()
    state = default_state().model_copy(update={"src": "custom", "lw": 2})
    params = encode_query(state, profile)
    assert len("&".join(f"{k}={v}" for k, v in params.items())) < 4000
    state2, profile2, messages = decode_query(params)
    assert messages == []
    assert state2.src == "custom"
    assert "secret-host-1" not in profile2.model_dump_json()  # host names stay home
    assert profile2.compute.points == [] and profile2.links[0].points == []
    assert profile2.input_pipeline == profile.input_pipeline  # the fitted loader curve travels
    assert _rows(profile2, state2) == _rows(profile, state)
    scenario, _ = build_scenario(state, profile)
    assert [r.model_dump() for r in predict(profile2, scenario)] == \
        [r.model_dump() for r in predict(profile, scenario)]


def encode_query_v1(state, profile) -> dict[str, str]:
    """A link in the old v1 format: every control and the profile blob (old links still open)."""
    from scalesim.app.state import _to_text, encode_profile

    return {"v": "1", **{n: _to_text(getattr(state, n)) for n in FIELDS},
            "prof": encode_profile(profile)}


def test_v1_links_still_open_with_the_same_numbers():
    state = default_state().model_copy(update={"strat": "zero3", "mb": 64, "train": 2e9})
    profile = preset_profile(state)
    state2, profile2, messages = decode_query(encode_query_v1(state, profile))
    assert messages == [NO_CHECKSUM] and state2 == state  # made before links had a checksum
    assert _rows(profile2, state2) == _rows(profile, state)


def test_a_v2_preset_link_is_short_and_names_presets():
    state = default_state().model_copy(update={"strat": "zero3", "mb": 64, "inter": "infiniband",
                                               "gbit": 200.0, "train": 2e9, "price": 4.1})
    params = encode_query(state, preset_profile(state))
    assert "prof" not in params and len(query_string(params)) < 300
    assert decode_query(params)[:2] == (state, preset_profile(state))


def _slower_preset(state):
    """The preset profile of ``state`` with twice the per-sample compute time: numbers another
    scalesim version's presets could have."""
    profile = preset_profile(state)
    return profile.model_copy(update={"compute": profile.compute.model_copy(
        update={"per_sample_s": profile.compute.per_sample_s * 2})})


def test_a_v2_link_whose_presets_differ_says_so():
    state = default_state()
    changed = _slower_preset(state)
    _, _, messages = decode_query(encode_query(state, changed))
    assert any("may differ from the sender's" in m for m in messages)


def test_link_made_with_other_preset_numbers_keeps_the_links_numbers():
    state = default_state()
    changed = _slower_preset(state)
    state2, profile2, messages = decode_query(encode_query_v1(state, changed))
    assert any("differ from this version's presets" in m for m in messages)
    assert state2.src == "custom"
    assert _rows(profile2, state2) == _rows(changed, state)


def test_a_broken_field_falls_back_alone_and_says_so():
    state, profile = default_state(), preset_profile(AppState())
    params = dict(encode_query(state, profile), dmax="lots", strat="zero9", mb="64")
    state2, _, messages = decode_query(params)
    assert state2.dmax == AppState().dmax and state2.strat == "ddp"
    assert state2.mb == 64  # the valid field is kept
    assert any("dmax" in m for m in messages) and any("strat" in m for m in messages)
    _, _, messages = decode_query({"v": "5", "hw": "dgx-z9"})  # a validator's own sentence
    assert messages == [messages[0]] and "unknown hardware preset" in messages[0]
    assert "Value error" not in messages[0]  # without pydantic's wrapping


@pytest.mark.parametrize("params, expect", [
    ({"v": "19", "mb": "64"}, "format v19"),  # v18 is the newest this scalesim reads
    # a superscript two is a digit to str.isdigit but no number to int(): was a ValueError
    ({"v": "\u00b2", "mb": "64"}, "format v\u00b2; this scalesim reads v1 to v18"),
    ({"mb": "64"}, "has no version"),
    ({"v": "1", "mb": "9" * 5000}, "too long"),
    ({"v": "1", "hw": "<img src=x onerror=alert(1)>"}, "is not valid"),
    ({"v": "1", "prof": "!!!not-base64!!!"}, "not valid base64url"),
    ({"v": "1", "prof": base64.urlsafe_b64encode(b"plain text").decode()}, "not zlib"),
    ({"v": "1", "prof": "A" * 20000}, "too long"),
    ({"v": "1", "evil": "1"}, "unknown link fields"),
])
def test_tampered_links_show_a_message_and_fall_back(params, expect):
    state, profile, messages = decode_query(params)
    assert any(expect in m for m in messages), messages
    assert isinstance(state, AppState)
    assert make_plan(profile, state).rows  # the fallback still predicts
    # a value is quoted as given (session 50: was '?' for each markup character); the box
    # escapes it (``link_problems`` through ``escape_markdown``): no markup reaches the page
    assert all(re.search(r"(?<!\\)[<>]", escape_markdown(m)) is None for m in messages)


def _blob(obj) -> str:
    raw = json.dumps(obj).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def test_profile_blob_is_validated_and_size_limited():
    foreign = compact_profile(default_profile()).model_dump(mode="json")
    foreign["schema_version"] = "scalesim-profile/99"
    with pytest.raises(ScalesimError, match="schema_version"):
        decode_profile(_blob(foreign))
    with pytest.raises(ScalesimError, match="field"):
        decode_profile(_blob({"schema_version": "scalesim-profile/1", "name": "x"}))
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * (MAX_PROFILE_JSON_BYTES * 20), 9))
    assert len(bomb) < 12_000  # small in the link, huge inflated
    with pytest.raises(ScalesimError, match="larger than"):
        decode_profile(bomb.decode())
    assert decode_profile(encode_profile(default_profile())) == compact_profile(default_profile())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.dictionaries(hs.sampled_from([*FIELDS, "v", "prof", "x"]),
                       hs.text(max_size=30), max_size=8))
def test_any_query_decodes_to_a_usable_state(params):
    params = {"v": "1", **params}
    state, profile, messages = decode_query(params)
    assert isinstance(state, AppState)
    assert all(isinstance(m, str) and "\n" not in m for m in messages)


def test_device_grids_only_offer_counts_that_fill_servers():
    state = default_state()
    pow2, _ = device_counts(state.model_copy(update={"dmax": 1024}), 8)
    assert pow2 == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    six, _ = device_counts(state.model_copy(update={"dmax": 100}), 6)
    assert six == [1, 2, 4, 6, 12, 24, 48, 96]
    servers, _ = device_counts(state.model_copy(update={"grid": "server", "dmax": 64}), 8)
    assert servers == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    many, _ = device_counts(state.model_copy(update={"grid": "server", "dmax": 16384}), 8)
    assert len(many) <= 260 and all(d <= 8 or d % 8 == 0 for d in many)
    mine, notes = device_counts(state.model_copy(update={"grid": "list",
                                                         "dlist": "1,8,12,16,4096"}), 8)
    assert mine == [1, 8, 16, 4096] and "12" in notes[0]


def test_strong_scaling_leaves_out_counts_that_do_not_split_the_batch():
    state = default_state().model_copy(update={"mode": "strong", "gb": 96, "dmax": 64,
                                               "grid": "server"})
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.global_batch == 96
    assert all(96 % d == 0 for d in scenario.devices)
    assert 40 not in scenario.devices and 48 in scenario.devices and notes


_PROFILE = measured_profile()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.fixed_dictionaries({
    "dmax": hs.sampled_from([1, 3, 8, 64, 1000, 4096]),
    "grid": hs.sampled_from(["pow2", "server", "list"]),
    "dlist": hs.sampled_from(["", "1,2,3,16", "1-64", "x,y"]),
    "dpn": hs.sampled_from([None, 1, 4, 6, 8]),
    "mode": hs.sampled_from(["weak", "strong"]),
    "gb": hs.sampled_from([None, 1, 96, 4096]),
    "acc": hs.sampled_from([1, 3, 8]),
    "strat": hs.sampled_from(["ddp", "zero1", "zero2", "zero3"]),
    "ovl": hs.booleans(),
    "lw": hs.sampled_from([None, 0, 2, 64]),
    "slow": hs.sampled_from([None, 0, 5]),
    "sf": hs.sampled_from([1.0, 1.5]),
    "intra": hs.sampled_from(["profile", "custom", "pcie4"]),
    "inter": hs.sampled_from(["profile", "custom", "roce", "ethernet"]),
    "ebw": hs.sampled_from([None, 0.5, 50.0]),
    "cbs": hs.sampled_from([None, 1.0, 4096.0]),
    "emin": hs.sampled_from([None, 1e7]),
    "train": hs.sampled_from([None, 1e9]),
    "price": hs.sampled_from([None, 0.0, 2.5]),
    "focus": hs.sampled_from([None, 1, 16, 3000]),
    "b": hs.sampled_from(["best", "more_devices", "interconnect", "slow_device"]),
}))
def test_any_combination_of_controls_plans_or_says_why(changes):
    state = default_state().model_copy(update=changes)
    try:
        plan = make_plan(_PROFILE, state)
    except ScalesimError as exc:  # a one-line reason the page shows
        assert "\n" not in str(exc)
        return
    assert plan.rows and plan.focus in plan.rows
    assert all(r.step_time_s > 0 for r in plan.rows)


@pytest.mark.parametrize("changes", [
    {"dpn": 6, "dmax": 4}, {"dpn": 12, "dmax": 8},
    {"grid": "list", "dlist": "6"}, {"grid": "list", "dlist": "3,5,7"},
])
def test_more_devices_fills_the_scenarios_server_not_the_partial_focus(changes):
    state = default_state().model_copy(update={**changes, "b": "more_devices"})
    plan = make_plan(_PROFILE, state)
    server = plan.scenario.devices_per_node
    assert plan.focus.devices < server
    more = [o for o in plan.options if o.kind == "more devices"]
    assert [o.devices for o in more] == [server]
    assert plan.b_focus is not None and plan.b_focus.devices == server


@pytest.mark.parametrize("update, field", [
    # a measured noise scale (B_simple) may lie above the critical-batch control's bounds
    # (below one sample it is no problem: the model uses it, tests/test_audit31.py)
    ({"noise_scale": NoiseScale(b_simple=1e13, small_batch=8, big_batch=64)}, "cbs"),
])
def test_profile_values_outside_the_controls_fall_back_with_a_message(update, field):
    profile = default_profile().model_copy(update=update)
    messages: list[str] = []
    defaults = profile_defaults(profile, messages)
    assert defaults[field] is None
    assert any(f"'{field}'" in m and "\n" not in m for m in messages)
    AppState.model_validate(defaults)  # every value fits its control
    # A link that carries only the version and this profile: the missing controls come from it.
    state, decoded, notes = decode_query({"v": "1", "src": "custom",
                                          "prof": encode_profile(profile)})
    assert AppState.model_validate(state.model_dump()) == state
    assert decoded.model_dump() == compact_profile(profile).model_dump()
    assert any(f"'{field}'" in m for m in notes)
    try:
        assert make_plan(decoded, state).rows
    except ScalesimError as exc:  # the page shows a one-line reason, never a pydantic dump
        assert "\n" not in str(exc)


def test_profile_values_at_their_bounds_fit_the_controls():
    """Controls and profile fields share one table (scalesim.bounds): no fallback needed."""
    base = default_profile()
    profile = base.model_copy(update={
        "workload": base.workload.model_copy(update={"micro_batch": 2**24}),
        "hardware": base.hardware.model_copy(update={"devices_per_node": 1024})})
    messages: list[str] = []
    defaults = profile_defaults(profile, messages)
    assert (defaults["mb"], defaults["dpn"]) == (2**24, 1024) and messages == []


def test_a_damaged_profile_in_a_link_is_said_once():
    """A custom link whose profile blob is cut: one message (the blob is damaged, the presets
    are used), not a second one saying the link carries no profile."""
    params = encode_query(default_state().model_copy(update={"src": "custom"}),
                          preset_profile(default_state()))
    params["prof"] = params["prof"][:9]
    state, _, messages = decode_query(params)
    assert state.src == "preset"
    assert messages == ["the profile in the link is not valid base64url text; using the preset "
                        "profile instead"]


def test_decimal_controls_read_in_a_link_as_a_person_writes_them():
    """A float control was written in its shortest `.Ng` form: `price=1e+02`, `ebw=2e+04`; exact
    but read by a manager as exponents. Now as a person writes it, still exact; an old link's
    `1e+02` opens the same page."""
    state = default_state().model_copy(update={
        "price": 100.0, "inter": "custom", "ebw": 20000.0, "cv": 0.25, "train": 2e9,
        "gbit": 150.0, "elat": 1.5e-06})
    params = encode_query(state, preset_profile(state))
    assert {k: params[k] for k in ("price", "ebw", "cv", "train", "gbit", "elat")} == {
        "price": "100", "ebw": "20000", "cv": "0.25", "train": "2000000000", "gbit": "150",
        "elat": "1.5e-06"}
    assert decode_query(params)[0] == state
    old = {**{k: v for k, v in params.items() if k != CHECK_KEY},  # made before the checksum
           "price": "1e+02", "ebw": "2e+04", "train": "2e+09"}
    assert decode_query(old)[:2] == decode_query(params)[:2]
    assert decode_query(old)[2] == [NO_CHECKSUM] and decode_query(params)[2] == []


@settings(max_examples=200, deadline=None)
@given(hs.floats(min_value=1e-9, max_value=1e15, allow_nan=False, allow_infinity=False))
def test_a_decimal_in_a_link_reads_back_as_exactly_the_same_float(value):
    from scalesim.figures import exact

    text = exact(value)
    assert float(text) == value and not text.endswith(".0")
    assert ("e" in text) == (value < 1e-4)  # an exponent only where a person would use one


def test_an_empty_device_list_says_it_shows_powers_of_two():
    """The "my list" grid with no counts (or none left) showed powers of two without a word."""
    empty = default_state().model_copy(update={"grid": "list", "dlist": " "})
    counts, notes = device_counts(empty, 8)
    assert counts == [1, 2, 4, 8, 16]
    # named by its control's sidebar label, Device counts (was 'the device list'; session 44)
    assert notes == ["Device counts is empty; showing powers of two up to 16 (type counts in it, "
                     "e.g. 1,2,4,8,16, or pick another grid)"]
    assert make_plan(preset_profile(empty), empty).notes == notes  # the page shows plan.notes
    _, notes = device_counts(empty.model_copy(update={"dlist": "12,20"}), 8)
    assert notes == ["left out 12 and 20: above 8 devices a count must fill whole servers (a "
                     "multiple of 8); none of the list is left, showing powers of two"]
    # a multiple of 8 above the planner's largest is left out for that (session 31 audit: it
    # was told to fill whole servers, which it does)
    _, notes = device_counts(empty.model_copy(update={"dlist": "8,16,32768"}), 8)
    assert notes == ["left out 32,768: above the planner's largest, 16,384 devices"]


@pytest.mark.parametrize("typed, words", [
    ("1e6", "'ebw=1e6' is not valid (allowed: 0.001 <= x <= 100,000 GB/s"),
    ("1e20", "'ebw=1e20' is not valid (allowed: 0.001 <= x <= 100,000 GB/s"),
    ("-0.0", "'ebw=-0.0' is not valid (allowed: 0.001 <= x <= 100,000 GB/s"),
])
def test_a_link_value_out_of_bounds_is_quoted_as_given_beside_the_bounds(typed, words):
    """Session 19: it said pydantic's '(Input should be less than or equal to 100000)', the
    bound without its separators or unit."""
    state, _, messages = decode_query({"v": "9", "ebw": typed})
    assert state.ebw is None and len(messages) == 1
    assert messages[0].startswith(words) and messages[0].endswith("using the default"), messages


def test_more_than_five_unknown_fields_are_counted_not_listed_as_if_all():
    """Seven unknown keys: the message names five and counts the rest; before, it listed five
    as if they were all the link's unknown fields."""
    query = {"v": "2", **{f"x{i}": "1" for i in range(7)}}
    *_, messages = decode_query(query)
    assert messages == ["ignored unknown link fields: x0, x1, x2, x3, x4 and 2 more"]
    *_, messages = decode_query({"v": "2", "x0": "1", "x1": "1"})
    assert messages == ["ignored unknown link fields: x0, x1"]


def test_a_blank_link_key_is_named_as_one():
    """A link's '&=x' (a key with no name) was listed as an empty name, 'ignored unknown link
    fields: , foo' (session 48's app audit); now it is said."""
    *_, messages = decode_query({"v": "2", "": "x", "foo": "1"})
    assert messages == ["ignored unknown link fields: a field with no name, foo"]
