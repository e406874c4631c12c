"""Published validation data shipped inside the package (scalesim/data/validation/SOURCES.md).

Copies of ``../shared/validation/``, so ``scalesim validate`` with no file and the test suite work
on a bare clone and an installed package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from scalesim.errors import ScalesimError

VALIDATION_FILES = ("cases.json", "README.md", "parallel_cases.json", "parallel_cases.md",
                    "interconnect.json", "SOURCES.md", "collected_dp_cases.json", "COLLECTED.md")
# Written by this project (COLLECTED.md), not copies of ../shared/validation: held-out cases that no
# default was set with.
PROJECT_FILES = ("SOURCES.md", "collected_dp_cases.json", "COLLECTED.md")


def validation_path(name: str = "cases.json") -> Path:
    """Path of one shipped validation file (default: the data-parallel cases)."""
    if name not in VALIDATION_FILES:
        raise ScalesimError(f"name: no shipped validation file {name!r} (one of {VALIDATION_FILES})")
    return Path(str(files("scalesim") / "data" / "validation" / name))
