"""A profile whose hardware block is of another version (session 43 audit) said pydantic's
"field 'hardware.schema_version': Input should be 'scalesim-hardware/1'": no version found, no
fix. It now says as the file's own version refusal does: the version found, the one this
scalesim reads, and the fix; a newer version's fix starts with upgrading scalesim."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim import __version__
from scalesim.errors import ScalesimError
from scalesim.jsonio import parse_model
from scalesim.profiles import default_profile
from scalesim.schemas import Profile

RECALIBRATE = "re-run the scalesim calibrate command that wrote it"


def _profile_file(tmp_path, top: str | None = None, hardware: str | None = None) -> str:
    data = json.loads(default_profile().model_dump_json())
    if top is not None:
        data["schema_version"] = top
    if hardware is not None:
        data["hardware"]["schema_version"] = hardware
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def _error(capsys, path: str) -> str:
    code, out, err = run_cli(capsys, ["predict", "--profile", path])
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_newer_hardware_block_says_the_versions_and_to_upgrade(tmp_path, capsys):
    path = _profile_file(tmp_path, hardware="scalesim-hardware/2")
    line = _error(capsys, path)
    assert line.endswith(
        f"{path}: its hardware block: schema_version is 'scalesim-hardware/2'; this scalesim "
        f"({__version__}) reads 'scalesim-hardware/1' only and converts no other version; a newer "
        f"scalesim wrote it: upgrade scalesim, or {RECALIBRATE} (with the same --from-... files "
        "if it read logs, traces or a topology)"), line
    assert "Input should be" not in line


def test_an_older_hardware_block_says_to_recalibrate_only(tmp_path, capsys):
    line = _error(capsys, _profile_file(tmp_path, hardware="scalesim-hardware/0"))
    assert "its hardware block: schema_version is 'scalesim-hardware/0'" in line
    assert RECALIBRATE in line and "upgrade" not in line


def test_a_block_of_another_kind_s_version_is_not_sent_to_another_flag(tmp_path, capsys):
    """The file-level rule says 'a scalesim profile file ... take it as --profile FILE'; for a
    block inside a profile that would send the user to the flag they used."""
    line = _error(capsys, _profile_file(tmp_path, hardware="scalesim-profile/1"))
    assert "its hardware block: schema_version is 'scalesim-profile/1'" in line
    assert "--profile FILE" not in line and RECALIBRATE in line


def test_the_profile_s_own_newer_version_says_to_upgrade_too(tmp_path, capsys):
    line = _error(capsys, _profile_file(tmp_path, top="scalesim-profile/2"))
    assert "schema_version is 'scalesim-profile/2'" in line and "upgrade scalesim, or" in line
    line = _error(capsys, _profile_file(tmp_path, top="scalesim-profile/0"))
    assert "upgrade" not in line and RECALIBRATE in line


def test_a_newer_hardware_file_says_to_upgrade_or_write_it_again(tmp_path, capsys):
    from scalesim.presets import HARDWARE

    data = json.loads(HARDWARE["dgx-a100"].model_dump_json())
    data["schema_version"] = "scalesim-hardware/3"
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["predict", "--hardware", str(path)])
    assert code == 2
    assert ("a newer scalesim wrote it: upgrade scalesim, or write it again for this version "
            "(scalesim schema hardware lists the fields)") in err


def test_parse_model_names_the_block_in_python_too():
    data = json.loads(default_profile().model_dump_json())
    data["hardware"]["schema_version"] = "scalesim-hardware/2"
    with pytest.raises(ScalesimError, match=r"^p: its hardware block: schema_version is "
                       r"'scalesim-hardware/2'; this scalesim"):
        parse_model(data, Profile, "p")
