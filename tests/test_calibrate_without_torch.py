"""A calibration where torch (or tqdm) cannot be imported: one line and exit 2, not a traceback.

Session 39: ``scalesim calibrate`` (one process or ``--nproc-per-node 2``), ``python -m
scalesim.calibration`` and ``ddp_bench`` ended in a ``ModuleNotFoundError: No module named
'torch'`` traceback. Each case runs in a real subprocess whose ``torch`` (or ``tqdm``) is a
stand-in module first on ``PYTHONPATH`` that raises as a missing or broken install does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scalesim.calibration.options import require_extra

from scalesim.errors import ScalesimError

REPO = Path(__file__).resolve().parent.parent
MISSING = "raise ModuleNotFoundError(\"No module named '{name}'\", name='{name}')\n"
BROKEN = "raise ImportError('libc10.so: cannot open shared object file')\n"


def _run(tmp_path: Path, stand_ins: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    shadow = tmp_path / "shadow"
    shadow.mkdir(exist_ok=True)
    for name, text in stand_ins.items():
        (shadow / f"{name}.py").write_text(text.format(name=name))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), str(REPO)]))
    return subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("argv, prog", [
    (("scalesim.cli.main", "calibrate", "--quick", "--out", "p.json"), "scalesim calibrate"),
    (("scalesim.cli.main", "calibrate", "--nproc-per-node", "2", "--quick", "--out", "p.json"),
     "scalesim calibrate"),
    (("scalesim.calibration", "--quick", "--out", "p.json"), "scalesim calibration"),
    (("scalesim.calibration.ddp_bench", "--batch", "2"), "ddp_bench"),
])
def test_missing_torch_is_one_line(tmp_path, argv, prog):
    result = _run(tmp_path, {"torch": MISSING}, *argv)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{prog}: error: torch is not installed in this Python (")
    assert 'pip install -e ".[calibration]"' in lines[0] and "--from-nccl-tests" in lines[0]
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "p.json.state").exists()


def test_a_torch_that_fails_to_import_is_named_with_its_reason(tmp_path):
    result = _run(tmp_path, {"torch": BROKEN}, "scalesim.cli.main", "calibrate", "--out", "p.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        "scalesim calibrate: error: torch cannot be imported (libc10.so: cannot open shared "
        "object file) in this Python (")


def test_missing_tqdm_is_said_before_measuring(tmp_path):
    # before: torch imported, the run started and the first phase's progress bar raised
    result = _run(tmp_path, {"tqdm": MISSING}, "scalesim.cli.main", "calibrate", "--out", "p.json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("scalesim calibrate: error: tqdm is not installed in this Python")
    assert not (tmp_path / "p.json.state").exists()  # nothing was started


def test_require_extra_passes_where_the_modules_import():
    require_extra(("json", "math"))  # stdlib stand-ins: present, so nothing is raised
    with pytest.raises(ScalesimError, match=r"^no_such_module_39 is not installed in this Python"):
        require_extra(("json", "no_such_module_39"))
