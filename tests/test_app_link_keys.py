"""Share links across a change of how the app names its link keys: 17 links captured with the
code of commit 1b52a95 (tests/fixtures/app_links_before_url_keys.json: the defaults, each layout
knob changed, a split llama3-70b, an uploaded profile's dated share link, v14 and v15 links, v2,
v3 and v14 links an older scalesim wrote without a checksum) must open the same what-if and
messages, and a link the app writes for the same state must be byte-identical (a dated share
link's checksum, since session 48 made over its date too, excepted)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl

import pytest
from scalesim.app.state import (
    CHECK_KEY,
    AppState,
    decode_query,
    encode_query,
    link_checksum,
    preset_fingerprint,
    query_string,
    share_query,
)

FIXTURE = Path(__file__).parent / "fixtures" / "app_links_before_url_keys.json"
LINKS = json.loads(FIXTURE.read_text())["links"]
# controls added after the capture, which every captured link opens at (their frozen link
# default): the sequence length (seq, v16: the workload's own), the memory margin (mm, v17: none),
# the largest count goal searches (gmax, v17: 1,024) and goal's layout choice (glay, v18: these
# links are a parameter-count workload or a split, where a link before v18 opens at auto, which
# keeps the Layout as their Goal tab did: ``state.opened_before``)
ADDED_SINCE_CAPTURE = {"seq": None, "mm": 0.0, "gmax": 1024, "glay": "auto"}


def _read(query: str):
    return decode_query(parse_qs(query, keep_blank_values=True))


@pytest.mark.parametrize("link", LINKS, ids=[x["name"] for x in LINKS])
def test_a_link_made_before_opens_the_same_what_if(link):
    state, profile, messages = _read(link["query"])
    assert state.model_dump(mode="json") == {**ADDED_SINCE_CAPTURE, **link["opens"]}
    assert preset_fingerprint(profile) == link["profile_fingerprint"]
    assert messages == link["messages"]


@pytest.mark.parametrize("link", [x for x in LINKS if x["written_by_app"]],
                         ids=[x["name"] for x in LINKS if x["written_by_app"]])
def test_a_link_written_now_is_byte_identical_to_before(link):
    state = AppState.model_validate(link["written_from"])
    _, profile, _ = _read(link["query"])  # the preset's, or the uploaded one the link carries
    params = encode_query(state, profile)
    date = parse_qs(link["query"]).get("at")
    if date:
        params = share_query(params, date[0])
    # a preset whose numbers changed since the capture (``preset_changed``): the same keys and
    # values, its new fingerprint and so its checksum (``query_now``)
    before = link.get("query_now", link["query"])
    if date:  # since session 48 a share link's checksum covers its date: made again over it
        captured = dict(parse_qsl(before, keep_blank_values=True))
        assert link_checksum(captured) != captured[CHECK_KEY]  # the capture's left it out
        before = query_string({**captured, CHECK_KEY: link_checksum(captured)})
    assert query_string(params) == before


def test_the_fixture_covers_every_layout_key_and_the_checksum():
    keys = {k for x in LINKS for k in parse_qs(x["query"])}
    assert {"tp", "pp", "sched", "vs", "rec", "rs", "sp", "tpo", "sg", "p2p", "cp", "ck",
            "ovl", "algo", "strat", "prof", "at"} <= keys
    assert {x["query"].split("&")[0] for x in LINKS} >= {"v=2", "v=3", "v=14", "v=15"}


# ------------------------------------------------------------------ the keys from the knob table


def test_every_layout_field_has_one_row_of_the_knob_table_and_the_app_its_key():
    """Before, sched, rec, sp and tpo had no row (their keys and choices written by hand in
    app/state.py, app/plan.py and the CLI), and STATE_OF_LAYOUT repeated all 11 keys."""
    from scalesim.app.plan import STATE_OF_LAYOUT, STATE_OF_SCENARIO
    from scalesim.app.state import LAYOUT_FIELDS

    from scalesim.bounds import KNOB_BY_FIELD, LAYOUT_KNOB_BY_FIELD
    from scalesim.schemas import ScenarioLayout

    assert set(LAYOUT_KNOB_BY_FIELD) == set(ScenarioLayout.model_fields)  # 11 fields, 11 rows
    # the link's layout keys, in the order 'ignored tp, pp, ...' has always named them
    assert LAYOUT_FIELDS == ("tp", "pp", "sched", "vs", "rec", "sp", "rs", "tpo", "sg", "p2p",
                             "cp")
    assert STATE_OF_LAYOUT == {
        "tp": "tp", "pp": "pp", "schedule": "sched", "virtual_stages": "vs", "recompute": "rec",
        "sequence_parallel": "sp", "recompute_style": "rs", "tp_overlap": "tpo",
        "shard_group": "sg", "p2p_overlap": "p2p", "cp": "cp"}
    assert STATE_OF_SCENARIO == {"strategy": "strat", "zero_framework": "zfw",
                                 "accumulation": "acc", "micro_batch": "mb",
                                 "train_samples": "train"}
    rows = {k: (KNOB_BY_FIELD.get(k) or LAYOUT_KNOB_BY_FIELD[k]) for k in (
        "schedule", "recompute", "sequence_parallel", "tp_overlap", "overlap", "algorithm",
        "strategy")}
    assert {k: (r.flag, r.url_key, r.choices, r.switch) for k, r in rows.items()} == {
        "schedule": ("--schedule", "sched", ("gpipe", "1f1b", "interleaved", "zb"), False),
        "recompute": ("--recompute", "rec", ("none", "selective", "full"), False),
        "sequence_parallel": ("--sequence-parallel", "sp", (), True),
        "tp_overlap": ("--tp-overlap", "tpo", (), True),
        "overlap": ("--no-overlap", "ovl", (), True),
        "algorithm": ("--algorithm", "algo", ("auto", "ring", "tree", "hierarchical"), False),
        "strategy": ("--strategy", "strat", ("ddp", "zero1", "zero2", "zero3"), False),
    }


def test_the_cli_takes_the_tables_choices_and_a_switch_row_sets_nothing_by_itself():
    """The choice rows now in LAYOUT_KNOBS are no numbers (add_layout_arguments' flag_type would
    fail on them) and --no-overlap's row is no value flag: a predict without it overlaps."""
    import argparse

    from scalesim.cli.options import add_scenario_arguments, scenario_from_args

    p = argparse.ArgumentParser()
    add_scenario_arguments(p)
    args = p.parse_args(["--tp", "2", "--schedule", "zb", "--recompute", "selective",
                         "--algorithm", "tree", "--sequence-parallel"])
    s = scenario_from_args(args)
    assert (s.layout.tp, s.layout.schedule, s.layout.recompute, s.layout.sequence_parallel,
            s.algorithm, s.overlap) == (2, "zb", "selective", True, "tree", True)
    assert scenario_from_args(p.parse_args(["--no-overlap"])).overlap is False
    with pytest.raises(SystemExit):  # 'auto' is the app's word for None, not a flag's choice
        p.parse_args(["--schedule", "auto"])


# ------------------------------------------------------------------ frozen defaults, both ways


def test_a_later_change_of_an_app_default_changes_no_link(monkeypatch):
    """Links were written against frozen defaults (V2_DEFAULTS) but read against AppState's: had
    the bucket default become 50 MiB and the cp default 2, the default link (bkt 25, cp 1 left
    out) opened at 50 MiB and cp 2, and a link written then with bkt 25 read back as 50. Reading
    now fills what a link leaves out from the same frozen defaults (LINK_DEFAULTS)."""
    import scalesim.app.state as st

    class Drifted(st.AppState):
        bkt: float = 50.0
        cp: int = 2

    monkeypatch.setattr(st, "AppState", Drifted)
    # the v15 link of tp 2 x cp 2: cp written, bkt left out
    state, _, messages = _read(next(x["query"] for x in LINKS if x["name"] == "cp_v15"))
    assert (state.bkt, state.cp, state.tp, messages) == (25.0, 2, 2, [])
    state, _, _ = _read(next(x["query"] for x in LINKS if x["name"] == "tp"))
    assert (state.bkt, state.cp) == (25.0, 1)  # cp 1 left out of a v3 link: still 1
    # a link written under the drifted defaults: bkt 25 and cp 1 left out, read back as such
    drifted = Drifted.model_validate({**state.model_dump(), "bkt": 25.0, "cp": 1})
    params = st.encode_query(drifted, st.preset_profile(drifted))
    assert "bkt" not in params and "cp" not in params and params["v"] == "3"
    assert _read(query_string(params))[0] == drifted


def test_every_control_has_a_frozen_link_default_equal_to_todays():
    """Today's AppState defaults are the frozen ones (no link changed by this change); a default
    changed later must leave LINK_DEFAULTS as it is, and the tests above say why."""
    from scalesim.app.state import FIELDS, LINK_DEFAULTS

    assert set(LINK_DEFAULTS) == set(FIELDS)
    assert {k: v.default for k, v in AppState.model_fields.items()} == LINK_DEFAULTS
