"""A real 2-process gloo calibration (``scalesim calibrate --nproc-per-node 2 --phases
collectives``) whose sweep is one loopback message of 64 KiB: no bandwidth fits one size, so the
phase times doubled sizes until one does (calibration.size_extension), and the launcher says the
children's torch threads in one line, once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from scalesim.calibration.options import THREADS_NOTE_ENV

pytestmark = pytest.mark.slow


def test_a_sweep_too_small_for_loopback_is_extended_and_the_threads_are_said_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", THREADS_NOTE_ENV)}
    out = tmp_path / "links.json"
    result = subprocess.run(
        [sys.executable, "-m", "scalesim.cli.main", "calibrate", "--nproc-per-node", "2",
         "--quick", "--no-progress", "--phases", "collectives", "--ops", "all_reduce",
         "--min-size-kib", "64", "--max-size-mib", str(64 / 1024), "--coll-time-s", "0.1",
         "--out", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-3000:]

    said = [line for line in result.stdout.splitlines() if "torch thread" in line]
    assert len(said) == 1, result.stdout[-3000:]
    assert "torch thread" not in result.stderr, result.stderr[-3000:]  # stderr: errors only
    assert said[0].startswith("scalesim calibrate: note: ") and " per process" in said[0]
    assert "processes" in said[0] and "load average" in said[0]

    record = json.loads((tmp_path / "links.json.state" / "phase-collectives.json").read_text())
    threads = int(re.search(r"(\d+) torch threads? per process", said[0]).group(1))
    assert record["signature"]["threads"] == [threads, threads]  # as each rank resolved them
    intra = next(link for link in record["result"]["links"] if link["level"] == "intra_node")
    sizes = sorted({p["size_bytes"] for p in intra["points"]})
    assert sizes[0] == 64 * 1024 and len(sizes) >= 2
    assert sizes == [64 * 1024 * 2**k for k in range(len(sizes))]
    assert f"all_reduce timed up to {sizes[-1] / 1024:g} KiB" in intra["note"] or \
        f"all_reduce timed up to {sizes[-1] / 2**20:g} MiB" in intra["note"]
    assert "up to --max-size-mib (64 KiB) the times did not grow" in intra["note"]
