"""Published validation data shipped inside the package (scalesim/data/validation/SOURCES.md).

Copies of ``../shared/validation/``, so ``scalesim validate`` with no file and the test suite work
on a bare clone and an installed package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from scalesim.errors import ScalesimError

# Written by this project, not copies of ../shared/validation/: the note on where the copies come
# from, and the held-out cases it collected (COLLECTED.md, COLLECTED_PARALLEL.md, COLLECTED_PS.md say
# what they are; no default was set with them).
PROJECT_FILES = ("SOURCES.md", "collected_dp_cases.json", "COLLECTED.md",
                 "collected_parallel_cases.json", "COLLECTED_PARALLEL.md",
                 "collected_ps_cases.json", "COLLECTED_PS.md")
VALIDATION_FILES = ("cases.json", "README.md", "parallel_cases.json", "parallel_cases.md",
                    "interconnect.json", *PROJECT_FILES)


def validation_path(name: str = "cases.json") -> Path:
    """Path of one shipped validation file (default: the data-parallel cases)."""
    if name not in VALIDATION_FILES:
        raise ScalesimError(f"name: no shipped validation file {name!r} (one of {VALIDATION_FILES})")
    return Path(str(files("scalesim") / "data" / "validation" / name))
