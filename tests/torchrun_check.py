"""Run one of the two-rank checks of the layout model (``scalesim.calibration.tp_check``,
``pp_check``) under torchrun on CPU (gloo) and read its JSON summary; the slow tests of
``test_model_parallel_calibration.py`` and ``test_pipeline_sends.py`` share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TIMEOUT_S = 300


def run_check(tmp_path: Path, module: str, *args: str) -> dict:
    """``torchrun --standalone --nproc-per-node=2 -m scalesim.calibration.<module> <args>`` in
    ``tmp_path``, OMP_NUM_THREADS unset (each check sets its own threads); its summary."""
    out = Path(tmp_path) / f"{module}.json"
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           "-m", f"scalesim.calibration.{module}", *args, "--out", str(out)]
    result = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())
