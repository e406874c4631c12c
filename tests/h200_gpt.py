"""The recorded H200 block calibration (benchmarks/results/h200-2026-11-30/gpu-check) and the
built-in gpt its compute curve timed, as a workload file, for the tests that predict from it
(``test_profile_shape``, ``test_profile_split``, ``test_profile_other_model``, the app's)."""

from __future__ import annotations

import json
from pathlib import Path

from scalesim.schemas import TransformerShape

H200 = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200-2026-11-30"
        / "gpu-check" / "gpu-profile.json")
TIMED = dict(layers=8, hidden=1024, heads=16, seq_len=1024, vocab=50304)  # the H200 run's gpt


def gpt_workload_file(path: Path, micro_batch: int = 4, fields: dict | None = None,
                      **shape) -> str:
    """Write at ``path`` a workload of the H200 run's gpt (``TIMED``, changed by ``shape``) with
    the bytes per parameter the run had (fp32 weights and gradients, AdamW: 4, 4, 8), its
    parameter count from the shape and ``fields`` added; its name is the file's stem."""
    s = TransformerShape(**{**TIMED, **shape})
    path.write_text(json.dumps({
        "schema_version": "scalesim-workload/1", "name": path.stem, "params": s.param_count(),
        "micro_batch": micro_batch, "param_bytes_per_param": 4, "grad_bytes_per_param": 4,
        "optimizer_bytes_per_param": 8, **(fields or {}),
        "transformer": s.model_dump(mode="json")}))
    return str(path)
