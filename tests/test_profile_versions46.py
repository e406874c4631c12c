"""Versioned profiles (session 46 audit): a profile today's calibrate writes round-trips byte
for byte through load and save; profiles older scalesims wrote still open and keep every value;
a newer scalesim's profile is refused on reading (upgrade scalesim) and never written over by a
calibration, which would replace it with this version's format and lose what it cannot read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import run_cli

from scalesim.errors import ScalesimError
from scalesim.jsonio import write_model
from scalesim.profiles import load_profile, refuse_newer_profile_out
from scalesim.schemas import PROFILE_VERSION

ROOT = Path(__file__).resolve().parent.parent
NCCL = ROOT / "tests" / "fixtures" / "nccl_tests" / "h100_2node_16gpu_all_reduce.txt"
# profiles that scalesim calibrate wrote on an H200 with an older scalesim (fields added since
# are missing from them)
OLDER = sorted((ROOT / "benchmarks" / "results").rglob("*.json"))
OLDER = [p for p in OLDER if f'"{PROFILE_VERSION}"' in p.read_text(encoding="utf-8")]
NEWER = PROFILE_VERSION.rpartition("/")[0] + "/2"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                                         os.environ.get("PYTHONPATH", "")])}


def _round_trips(path: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.json"
    write_model(again, load_profile(path))
    assert again.read_bytes() == path.read_bytes()


def test_a_profile_from_the_sources_round_trips_byte_for_byte(tmp_path, capsys):
    out = tmp_path / "node.json"
    code, _, err = run_cli(capsys, ["calibrate", "--from-nccl-tests", str(NCCL), "--out", str(out)])
    assert code == 0, err
    _round_trips(out, tmp_path)


@pytest.mark.slow
def test_a_measured_profile_round_trips_byte_for_byte(tmp_path):
    out = tmp_path / "node.json"
    done = subprocess.run([sys.executable, "-m", "scalesim.cli.main", "calibrate", "--quick",
                           "--no-progress", "--threads", "1", "--out", str(out)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    _round_trips(out, tmp_path)


def test_profiles_an_older_scalesim_wrote_still_open_with_every_value(tmp_path):
    assert len(OLDER) >= 5
    for path in OLDER:
        old = json.loads(path.read_text(encoding="utf-8"))
        again = tmp_path / path.name
        write_model(again, load_profile(path))
        new = json.loads(again.read_text(encoding="utf-8"))
        assert _holds(new, old), path  # fields added since only: at their defaults


def _holds(new, old) -> bool:
    """Whether ``new`` holds every key and value of ``old`` (JSON objects compared deeply)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(new[k], v) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(
            _holds(n, o) for n, o in zip(new, old, strict=True))
    return new == old


def _newer_profile(path: Path) -> bytes:
    """A profile as a newer scalesim may write it: another schema_version, a field this one
    lacks. Returns its bytes."""
    data = json.loads(load_profile(OLDER[0]).model_dump_json())
    data["schema_version"], data["measured_by_a_newer_phase"] = NEWER, {"x": 1}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path.read_bytes()


def test_a_newer_profile_is_refused_in_one_line_saying_to_upgrade(tmp_path, capsys):
    newer = tmp_path / "newer.json"
    _newer_profile(newer)
    code, out, err = run_cli(capsys, ["predict", "--profile", str(newer), "--devices", "1"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"schema_version is '{NEWER}'" in err and "a newer scalesim wrote it: upgrade scalesim" \
        in err


def test_calibrate_from_sources_over_a_newer_profile_with_a_base_leaves_it(tmp_path, capsys):
    """Before: with --base the --out was not read, and a newer profile there was replaced."""
    newer = tmp_path / "newer.json"
    before = _newer_profile(newer)
    code, out, err = run_cli(capsys, ["calibrate", "--from-nccl-tests", str(NCCL), "--base",
                                      "dgx-h100", "--out", str(newer)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "a newer scalesim wrote" in err and "upgrade scalesim, or give another --out" in err
    assert newer.read_bytes() == before
    code, _, err = run_cli(capsys, ["calibrate", "--from-nccl-tests", str(NCCL), "--out",
                                    str(newer)])  # no --base: read as the base, refused so
    assert code == 2 and "upgrade scalesim" in err and newer.read_bytes() == before


@pytest.mark.slow
def test_a_calibration_over_a_newer_profile_stops_before_measuring_and_leaves_it(tmp_path):
    """Before: the run measured and wrote this version's profile over it (exit 0, no word)."""
    newer = tmp_path / "newer.json"
    before = _newer_profile(newer)
    done = subprocess.run([sys.executable, "-m", "scalesim.cli.main", "calibrate", "--quick",
                           "--no-progress", "--threads", "1", "--phases", "compute", "--out",
                           str(newer)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2, done.stdout[-2000:]
    assert done.stderr.count("\n") == 1 and "a newer scalesim wrote" in done.stderr
    assert "== compute" not in done.stdout  # refused before the measuring
    assert newer.read_bytes() == before


def test_only_a_newer_profile_is_refused_as_an_out(tmp_path):
    """An older profile, another kind of file, a file that is not JSON and no file at all are
    written over as before (the writer says what is wrong with the place, if anything)."""
    older = json.loads(load_profile(OLDER[0]).model_dump_json())
    cases = {"older.json": json.dumps({**older, "schema_version": "scalesim-profile/0"}),
             "hardware.json": json.dumps({"schema_version": "scalesim-hardware/9"}),
             "notes.txt": "not json", "list.json": "[1, 2]"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        refuse_newer_profile_out(tmp_path / name)
    refuse_newer_profile_out(tmp_path / "absent.json")
    _newer_profile(tmp_path / "newer.json")
    with pytest.raises(ScalesimError, match=r"^--out .*newer.json is a profile a newer scalesim"):
        refuse_newer_profile_out(tmp_path / "newer.json")
