"""A profile (or any scalesim JSON file) cut short says so (session 39).

Before: ``scalesim predict --profile P`` on a profile whose copy stopped part-way said only
``P: not valid JSON (line 71, column 20: Expecting value)``. Now the line adds that the text
ends before the JSON does (truncated?). A wrong character inside a whole file is not called
cut short.
"""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim import presets
from scalesim.profiles import profile_from_presets

CUT = "; the text ends before the JSON does: the file is cut short (truncated?)"


@pytest.fixture()
def profile_text():
    profile = profile_from_presets(presets.get_hardware(presets.DEFAULT_HARDWARE),
                                   presets.get_workload(presets.DEFAULT_WORKLOAD))
    return profile.model_dump_json(indent=2) + "\n"


@pytest.mark.parametrize("anchor, kept", [
    ('"schema_version": "scalesim-profile/1"', 30),  # inside a string: "Unterminated string"
    ('"measured": false', 15),                       # inside a literal: '"measured": fa'
    ('"devices_per_node": 8,', 20),                  # before a value
    ('"devices_per_node": 8,', 22),                  # after a comma
])
def test_a_profile_cut_short_says_so(tmp_path, capsys, profile_text, anchor, kept):
    assert anchor in profile_text
    path = tmp_path / "p.json"
    path.write_text(profile_text[:profile_text.index(anchor) + kept])
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path)])
    assert code == 2 and out == ""
    assert err.startswith(f"scalesim predict: error: {path}: not valid JSON (line ")
    assert err.rstrip("\n").endswith(CUT), err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("before, after", [
    ('"devices_per_node": 8', '"devices_per_node"; 8'),  # a wrong character, file whole
    ('"measured": false', '"measured": fals'),           # a misspelt literal, file whole
])
def test_a_whole_file_with_a_wrong_character_is_not_called_cut_short(tmp_path, capsys,
                                                                    profile_text, before, after):
    assert before in profile_text
    path = tmp_path / "p.json"
    path.write_text(profile_text.replace(before, after, 1))
    code, _, err = run_cli(capsys, ["predict", "--profile", str(path)])
    assert code == 2 and "not valid JSON" in err and "truncated" not in err


def test_the_whole_file_still_reads(tmp_path, capsys, profile_text):
    assert json.loads(profile_text)["schema_version"] == "scalesim-profile/1"
    path = tmp_path / "p.json"
    path.write_text(profile_text)
    code, _, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "1"])
    assert code == 0, err
