"""Share links of every version across the change that computes each version's keys from the
knob table (``bounds.Knob.link_since``) instead of lists typed by hand (V4_FIELDS ... V16_FIELDS).

Captured with the code of commit 73f732a, before that change: the links the app writes for a
state of each version 2 to 16 (byte for byte), and how a link of each version 1 to 16 opens when
it sets each key or value a later version added (the what-if and the messages:
tests/fixtures/app_link_versions_before_table.json). Each captured link carries the checksum
the app would write for it, so what is pinned is the version rules, not the checksum note."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from scalesim.app.state import (
    AppState,
    decode_query,
    default_state,
    encode_query,
    link_checksum,
    preset_fingerprint,
    preset_profile,
    query_string,
)

FIXTURE = Path(__file__).parent / "fixtures" / "app_link_versions_before_table.json"
BASE = {"hw": "dgx-h100", "wl": "llama3-8b", "dmax": "64"}
# each key or value a version after v2 added, set away from its default (with what it needs)
PROBES = {
    "tp": {"tp": "2"}, "pp": {"pp": "2"}, "sched_vs": {"pp": "4", "sched": "interleaved",
                                                        "vs": "2"},
    "rec": {"rec": "full"}, "sp": {"tp": "2", "sp": "1"}, "rs": {"rec": "full", "rs": "early-stop"},
    "rs_default": {"rs": "whole-forward"}, "op_sac": {"rec": "selective", "rs": "op-sac"},
    "gs": {"strat": "zero2", "acc": "4", "gs": "once-per-step"}, "ak": {"ak": "flash2"},
    "ak_vendor": {"ak": "fused-vendor"}, "tpo": {"tp": "2", "tpo": "1"},
    "sg": {"strat": "zero3", "sg": "8"}, "zfw": {"strat": "zero3", "zfw": "deepspeed"},
    "pr": {"pr": "fp8"}, "b_attention": {"b": "attention_kernel"}, "b_tpo": {"b": "tp_overlap"},
    "b_fp8": {"b": "fp8"}, "b_split": {"b": "split_model"},
    "p2p": {"pp": "4", "sched": "interleaved", "vs": "2", "p2p": "0"},
    "cp": {"tp": "2", "cp": "2"}, "seq": {"seq": "8192"},
    "all": {"tp": "2", "pp": "2", "rec": "selective", "rs": "op-sac", "strat": "zero3",
            "gs": "once-per-step", "acc": "2", "ak": "flash2", "tpo": "1", "sg": "8",
            "zfw": "deepspeed", "pr": "fp8", "cp": "2", "seq": "8192", "b": "fp8"},
}


def _link(version: int, probe: dict[str, str]) -> str:
    """A link of ``version`` setting ``probe``, ended by its preset's fingerprint and with the
    checksum of what it says, as the app writes them."""
    ph = preset_fingerprint(preset_profile(AppState(hw=BASE["hw"], wl=BASE["wl"])))
    params = {"v": str(version), **BASE, **probe, "ph": ph}
    return query_string({"v": params["v"], "ck": link_checksum(params),
                         **{k: v for k, v in params.items() if k != "v"}})


def _opened(link: str) -> dict:
    """What a link opens: the controls away from AppState's defaults, and the messages."""
    state, _, messages = decode_query(parse_qs(link, keep_blank_values=True))
    dump, defaults = state.model_dump(mode="json"), AppState().model_dump(mode="json")
    return {"state": {k: v for k, v in dump.items() if v != defaults[k]}, "messages": messages}


def _old_links() -> list[str]:
    return [_link(v, p) for v in range(1, 17) for p in PROBES.values()]


# states of every link version the app writes, and the link written for each (commit 73f732a)
# (the default presets' links: their fingerprint and so their checksum made again in session 56,
# e222178e -> 31a4ae9a: bert-large's reference run, 8 GPUs under PyTorch DDP, now pays DDP's
# gradient bucket copies, Ψ 336e6 × 8 B / 2,039 GB/s = 1.32 ms a step, so its per-sample compute
# is 1.72396 -> 1.72380 ms; keys, values and their order as captured)
WRITTEN = [
    ({}, "v=2&ck=63a88240&ph=31a4ae9a"),
    ({"cbs": 4000.0, "bkt": 50.0}, "v=2&ck=6b7cd704&bkt=50&cbs=4000&ph=31a4ae9a"),
    ({"wl": "llama3-8b", "tp": 2}, "v=3&ck=5557ae6b&wl=llama3-8b&mb=32&gb=2048&tp=2&ph=5d48c9ba"),
    ({"tab": "layouts"}, "v=3&ck=9754fbc1&tab=layouts&ph=31a4ae9a"),
    ({"b": "split_model"}, "v=3&ck=f8596efd&b=split_model&ph=31a4ae9a"),
    ({"wl": "llama3-8b", "rec": "full", "rs": "early-stop"},
     "v=4&ck=3a5a332d&wl=llama3-8b&mb=32&gb=2048&rec=full&rs=early-stop&ph=5d48c9ba"),
    ({"strat": "zero2", "gs": "once-per-step", "acc": 4},
     "v=5&ck=8cc95943&acc=4&strat=zero2&gs=once-per-step&ph=31a4ae9a"),
    ({"ak": "flash2"}, "v=6&ck=ff95987d&ak=flash2&ph=31a4ae9a"),
    ({"wl": "llama3-8b", "tp": 2, "tpo": True},
     "v=7&ck=1d943f35&wl=llama3-8b&mb=32&gb=2048&tp=2&tpo=1&ph=5d48c9ba"),
    ({"b": "attention_kernel"}, "v=7&ck=4f7f34f1&b=attention_kernel&ph=31a4ae9a"),
    ({"b": "tp_overlap"}, "v=7&ck=731a6041&b=tp_overlap&ph=31a4ae9a"),
    ({"wl": "llama3-8b", "rec": "selective", "rs": "op-sac"},
     "v=8&ck=91dccf06&wl=llama3-8b&mb=32&gb=2048&rec=selective&rs=op-sac&ph=5d48c9ba"),
    ({"strat": "zero3", "sg": 8}, "v=9&ck=56e324e0&strat=zero3&sg=8&ph=31a4ae9a"),
    ({"strat": "zero3", "zfw": "deepspeed"},
     "v=10&ck=860515f6&strat=zero3&zfw=deepspeed&ph=31a4ae9a"),
    ({"strat": "ddp", "zfw": "deepspeed"}, "v=2&ck=63a88240&ph=31a4ae9a"),  # zfw off under DDP
    ({"pr": "fp8"}, "v=11&ck=441216d7&pr=fp8&ph=31a4ae9a"),
    ({"b": "fp8"}, "v=12&ck=43f45e57&b=fp8&ph=31a4ae9a"),
    ({"ak": "fused-vendor"}, "v=13&ck=ab83e5d1&ak=fused-vendor&ph=31a4ae9a"),
    ({"wl": "llama3-8b", "pp": 4, "sched": "interleaved", "vs": 2, "p2p": False},
     "v=14&ck=331d4d5d&wl=llama3-8b&mb=32&gb=2048&pp=4&sched=interleaved&vs=2&p2p=0&ph=5d48c9ba"),
    ({"wl": "llama3-8b", "tp": 2, "cp": 2},
     "v=15&ck=519565f0&wl=llama3-8b&mb=32&gb=2048&tp=2&cp=2&ph=5d48c9ba"),
    # glay given: what a v16 link opens llama3-8b with no split at (session 43); at auto, the
    # default, the Goal tab searches, which no link before v18 says: v18
    ({"wl": "llama3-8b", "seq": 8192, "glay": "given"},
     "v=16&ck=74507efd&wl=llama3-8b&mb=32&gb=2048&seq=8192&ph=5d48c9ba"),
]


@pytest.mark.parametrize("update, link", WRITTEN, ids=[w[1][:5] + str(i) for i, w in
                                                        enumerate(WRITTEN)])
def test_a_link_written_now_is_the_one_written_before(update, link):
    state = default_state().model_copy(update=update)
    assert query_string(encode_query(state, preset_profile(state))) == link


# the fields that set a split (goal_layouts.PLANNED_FIELDS in the app's keys; sg under ZeRO)
SPLIT_KEYS = ("tp", "pp", "cp", "sched", "vs", "rec", "sp")


def _goal_tab_as_sent(opened: dict) -> dict:
    """What a captured link opens since session 43: the same, and where its llama3-8b sets no
    split, Goal's layouts at given, as its Goal tab kept the Layout before v18 (captured then
    at auto, which now searches; ``state.opened_before``)."""
    state = opened["state"]
    split = any(k in state for k in SPLIT_KEYS) or (
        state.get("sg") is not None and state.get("strat", "ddp") != "ddp")
    return opened if split else {**opened, "state": {**state, "glay": "given"}}


def test_every_version_opens_each_later_key_and_value_as_before():
    captured = json.loads(FIXTURE.read_text())["links"]
    links = _old_links()
    assert list(captured) == links  # 16 versions x the probes, none lost
    changed = [link for link in links if _opened(link) != _goal_tab_as_sent(captured[link])]
    assert changed == []
    given = [link for link in links if _goal_tab_as_sent(captured[link]) != captured[link]]
    assert len(given) > len(links) // 4  # v1/v2 links ignore every split: many open at given


def test_a_transformer_state_at_auto_with_no_split_is_a_v18_link():
    state = default_state().model_copy(update={"wl": "llama3-8b", "seq": 8192})
    params = encode_query(state, preset_profile(state))
    assert (params["v"], "glay" in params) == ("18", False)
    assert decode_query(params)[0] == state


def test_the_capture_ignores_something_in_every_version_but_the_newest():
    """The probes reach each version's rules: every version below 16 ignores at least one."""
    captured = json.loads(FIXTURE.read_text())["links"]
    said = {link.split("&")[0] for link, got in captured.items()
            if any(m.startswith("ignored ") for m in got["messages"])}
    assert said == {f"v={v}" for v in range(1, 16)}


@pytest.mark.parametrize("wl", ["bert-large", "resnet50"])
def test_a_preset_stating_its_wires_reduce_bytes_keeps_its_older_fingerprint(wl):
    """Session 46: ``ADDED_SINCE_FINGERPRINTS`` says a default "equal to another field"
    (``EqualTo``): bert-large and resnet50 state a reduction of their wire's 2 bytes (session
    45), the bytes their links' fingerprints were made with when none was stated, so the stated
    and the unstated workload fingerprint alike; a reduction other than the wire's does not."""
    from scalesim.app.state import ADDED_SINCE_FINGERPRINTS, EqualTo, _at_default, compact_profile

    profile = preset_profile(AppState(wl=wl))
    assert profile.workload.reduce_bytes_per_param == profile.workload.wire_bytes_per_param == 2.0

    def stating(reduce_bytes):
        return profile.model_copy(update={"workload": profile.workload.model_copy(
            update={"reduce_bytes_per_param": reduce_bytes})})

    assert preset_fingerprint(profile) == preset_fingerprint(stating(None))
    assert preset_fingerprint(stating(4.0)) != preset_fingerprint(profile)
    equal = [f for f in ADDED_SINCE_FINGERPRINTS if isinstance(f[2], EqualTo)]
    assert equal == [("workload", "reduce_bytes_per_param", EqualTo("wire_bytes_per_param"))]
    assert "reduce_bytes_per_param" in _at_default(compact_profile(profile), equal)["workload"]
    assert _at_default(compact_profile(stating(4.0)), equal) == {}
