"""Share links and profiles across versions in the app (session 46 audit): a link cut to its
empty version says it was cut; a profile a newer scalesim wrote, uploaded or carried in a link,
is one box saying to upgrade scalesim and the page goes on with the presets; every pinned link
of every version opens without an exception and predicts what its sender's state predicts."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from app_harness import open_app, run_clean
from scalesim.app.plan import make_plan
from scalesim.app.state import AppState, decode_query, preset_profile

from scalesim.schemas import PROFILE_VERSION

FIXTURES = Path(__file__).parent / "fixtures"
PINNED = json.loads((FIXTURES / "app_links_before_url_keys.json").read_text())["links"]
NEWER = PROFILE_VERSION.rpartition("/")[0] + "/2"


@pytest.mark.parametrize("link", ["v=", "v"])
def test_a_link_cut_to_its_empty_version_says_it_was_cut(link):
    """Before: "this link is in format v; this scalesim reads v1 to v18 links"."""
    _, _, messages = decode_query(parse_qs(link, keep_blank_values=True))
    assert len(messages) == 1
    assert messages[0].startswith("this link has an empty version ('v='): the link may have "
                                  "been cut short when copied")
    assert "format v;" not in messages[0]


def test_the_page_says_a_link_cut_to_its_version_was_cut():
    at = open_app({"v": ""})
    boxes = [b.value for b in at.warning]
    assert any("empty version ('v='): the link may have been cut short" in b for b in boxes), boxes
    assert len(at.metric) == 4  # the defaults' headline


def _newer_blob(share: str) -> str:
    """``share`` (a link carrying a profile) with its profile's schema_version a newer one."""
    blob = parse_qs(share)["prof"][0]
    data = json.loads(zlib.decompress(base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))))
    data["schema_version"] = NEWER
    newer = base64.urlsafe_b64encode(zlib.compress(json.dumps(data).encode(), 9)).decode()
    return share.replace(blob, newer.rstrip("="))


def test_a_link_carrying_a_newer_profile_says_to_upgrade_and_shows_the_presets():
    share = next(e["query"] for e in PINNED if e["name"] == "uploaded_profile_share")
    at = open_app({k: v[0] for k, v in parse_qs(_newer_blob(share),
                                                keep_blank_values=True).items()})
    boxes = [b.value for b in at.warning]
    assert any(f"schema\\_version is '{NEWER}'" in b and "upgrade scalesim" in b
               and "using the preset profile instead" in b for b in boxes), boxes
    assert at.session_state["app_state"].src == "preset" and len(at.metric) == 4


def test_an_uploaded_newer_profile_is_one_error_box_saying_to_upgrade():
    at = open_app()
    data = json.loads(preset_profile(AppState()).model_dump_json())
    data["schema_version"] = NEWER
    at.sidebar.file_uploader(key="upload").set_value(
        ("newer.json", json.dumps(data).encode(), "application/json"))
    run_clean(at)
    errors = [b.value for b in at.sidebar.error]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert f"schema\\_version is '{NEWER}'" in errors[0] and "upgrade scalesim" in errors[0]
    assert at.session_state["app_state"].src == "preset" and len(at.metric) == 4


@pytest.mark.parametrize("pinned", [e for e in PINNED if e.get("written_from")],
                         ids=lambda e: e["name"])
def test_a_pinned_link_predicts_what_its_senders_state_predicts(pinned):
    """Each link the app wrote (v2 to v15, a carried profile, a dated one) opens to a what-if
    whose rows are those of the state it was written from, on today's model: what the link
    leaves out does not move a number (or the what-if is refused for both alike)."""
    state, profile, _ = decode_query(parse_qs(pinned["query"], keep_blank_values=True))
    sent = AppState.model_validate(pinned["written_from"])
    sent_profile = profile if sent.src == "custom" else preset_profile(sent)

    def rows(p, s):
        try:
            return [r.model_dump() for r in make_plan(p, s).rows]
        except Exception as exc:  # noqa: BLE001 - compared: both refused in the same words
            return f"{type(exc).__name__}: {exc}"

    assert rows(profile, state) == rows(sent_profile, sent)
