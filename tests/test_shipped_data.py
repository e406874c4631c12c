"""The published validation data shipped in the package: present, sourced, used by default, and
the same as ../shared/validation/ wherever that folder exists beside the checkout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.shipped import PROJECT_FILES, VALIDATION_FILES, validation_path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "validation"


def test_every_shipped_case_names_its_source():
    cases = json.loads(validation_path("cases.json").read_text())
    assert cases["format"] == "scalesim-validation-cases/1" and len(cases["cases"]) >= 50
    parallel = json.loads(validation_path("parallel_cases.json").read_text())
    assert parallel["format"] == "scalesim-parallel-cases/1" and parallel["cases"]
    links = json.loads(validation_path("interconnect.json").read_text())
    for entry in [*cases["cases"], *parallel["cases"], *links]:
        assert len(entry["source"].strip()) > 20, entry.get("id")
    for note in ("README.md", "parallel_cases.md", "SOURCES.md"):
        assert "source" in validation_path(note).read_text().lower()


def test_shipped_copies_equal_the_shared_folder_where_it_exists():
    """On a bare clone (no ../shared) only the shipped files are checked; beside ../shared every
    shipped copy must be byte-identical to its original."""
    originals = [name for name in VALIDATION_FILES if name not in PROJECT_FILES]
    for name in VALIDATION_FILES:
        assert validation_path(name).is_file(), name
    if SHARED.is_dir():
        for name in originals:
            assert validation_path(name).read_bytes() == (SHARED / name).read_bytes(), name


def test_validate_without_a_file_runs_the_shipped_cases(capsys):
    assert main(["validate", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main(["validate", str(validation_path("cases.json")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == default
    ids = [c["id"] for c in json.loads(validation_path("cases.json").read_text())["cases"]]
    assert [c["id"] for c in default["cases"]] == ids


def test_an_unknown_shipped_name_is_refused_with_the_argument():
    with pytest.raises(ScalesimError, match="name: no shipped validation file 'x.json'"):
        validation_path("x.json")
