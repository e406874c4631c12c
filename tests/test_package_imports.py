"""The app and the calibration install as ``scalesim.app`` and ``scalesim.calibration`` (pyproject
``package-dir``), never as top-level ``app`` / ``calibration``: a test that imports the bare name
collects under ``python -m pytest`` from the repository root (the root is then on sys.path) but
not under ``.ci/run``'s ``pytest`` (session 18: two test files failed to collect in CI only)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = {"app", "calibration"}


def _bare_imports(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0
                 and node.module else [])
        found += [f"{path.relative_to(root)}:{node.lineno}: {n}" for n in names
                  if n.split(".")[0] in BARE]
    return found


def test_no_source_imports_the_app_or_calibration_by_a_bare_top_level_name():
    files = [p for d in ("tests", "scalesim", "app", "calibration", "benchmarks")
             for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100
    assert [hit for p in files for hit in _bare_imports(p)] == []


def test_the_check_sees_a_bare_import(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("from app.plan import make_plan\nimport calibration.options\n"
                   "from scalesim.app.plan import make_plan\n")
    assert _bare_imports(bad, tmp_path) == ["probe.py:1: app.plan", "probe.py:2: calibration.options"]
