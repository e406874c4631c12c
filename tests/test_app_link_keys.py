"""Share links across a change of how the app names its link keys: 17 links captured with the
code of commit 1b52a95 (tests/fixtures/app_links_before_url_keys.json: the defaults, each layout
knob changed, a split llama3-70b, an uploaded profile's dated share link, v14 and v15 links, v2,
v3 and v14 links an older scalesim wrote without a checksum) must open the same what-if and
messages, and a link the app writes for the same state must be byte-identical."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from scalesim.app.state import (
    AppState,
    decode_query,
    encode_query,
    preset_fingerprint,
    query_string,
    share_query,
)

FIXTURE = Path(__file__).parent / "fixtures" / "app_links_before_url_keys.json"
LINKS = json.loads(FIXTURE.read_text())["links"]


def _read(query: str):
    return decode_query(parse_qs(query, keep_blank_values=True))


@pytest.mark.parametrize("link", LINKS, ids=[x["name"] for x in LINKS])
def test_a_link_made_before_opens_the_same_what_if(link):
    state, profile, messages = _read(link["query"])
    assert state.model_dump(mode="json") == link["opens"]
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
    assert query_string(params) == link["query"]


def test_the_fixture_covers_every_layout_key_and_the_checksum():
    keys = {k for x in LINKS for k in parse_qs(x["query"])}
    assert {"tp", "pp", "sched", "vs", "rec", "rs", "sp", "tpo", "sg", "p2p", "cp", "ck",
            "ovl", "algo", "strat", "prof", "at"} <= keys
    assert {x["query"].split("&")[0] for x in LINKS} >= {"v=2", "v=3", "v=14", "v=15"}
