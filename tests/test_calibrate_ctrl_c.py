"""Ctrl-C of ``scalesim calibrate --nproc-per-node N``: the command's one line, not N + 1 tracebacks.

Session 39: Ctrl-C reaches the launcher, torchrun and every rank (one foreground process
group). Each rank died in a ``KeyboardInterrupt`` traceback and torchrun in a
``SignalException`` one; the launcher passed all of it on after Ctrl-C: 106 lines with 2 ranks
above its own "interrupted; run it again with --resume ..." line.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalesim.cli.torchrun_output import drain_after_interrupt

REPO = Path(__file__).resolve().parent.parent
RANK_TRACEBACK = (b"[rank1]: Traceback (most recent call last):\n"
                  b"[rank1]:   File \"x.py\", line 1, in <module>\n"
                  b"[rank1]: KeyboardInterrupt\n")
TORCHRUN_TRACEBACK = (b"Traceback (most recent call last):\n  File \"run.py\", line 9\n"
                      b"torch.distributed.elastic.multiprocessing.api.SignalException: "
                      b"Process 7 got signal: 2\n")


def test_after_ctrl_c_only_the_ranks_one_line_errors_pass():
    error = b"[rank0]: scalesim calibration: error: rank 0, phase 'compute': out of memory"
    source = io.BytesIO(RANK_TRACEBACK + error + b"\n" + TORCHRUN_TRACEBACK + error)
    sink = io.BytesIO()
    drain_after_interrupt(source, sink, chunk_bytes=7)  # lines split across reads
    assert sink.getvalue() == error + b"\n" + error + b"\n"


def test_after_ctrl_c_the_interrupt_tracebacks_are_read_and_dropped():
    source = io.BytesIO(RANK_TRACEBACK * 1000 + TORCHRUN_TRACEBACK)  # more than a pipe holds
    sink = io.BytesIO()
    drain_after_interrupt(source, sink)
    assert sink.getvalue() == b"" and source.read() == b""  # all read, none shown


def _rank0_phase(status: Path) -> str | None:
    try:
        return json.loads(status.read_text()).get("phase")
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_ctrl_c_of_two_ranks_is_one_line_and_resume_keeps_the_finished_phase(tmp_path):
    out = tmp_path / "p.json"
    argv = [sys.executable, "-m", "scalesim.cli.main", "calibrate", "--nproc-per-node", "2",
            "--quick", "--no-progress", "--model", "gpt", "--width", "64", "--depth", "1",
            "--seq-len", "32", "--vocab", "256", "--batches", "2,4", "--repeats", "3",
            "--phases", "compute,collectives", "--coll-time-s", "0.5", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    # a terminal's foreground job: its own process group, SIGINT at its default
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    status = Path(f"{out}.state") / "ranks" / "rank-0.json"
    deadline = time.monotonic() + 180  # a bound on waiting, not an assertion on speed
    while proc.poll() is None and time.monotonic() < deadline:
        if _rank0_phase(status) == "collectives":
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    assert _rank0_phase(status) == "collectives"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    assert "Traceback" not in err.decode() and "KeyboardInterrupt" not in err.decode(), err
    assert err.decode().strip().splitlines() == [
        "scalesim calibrate: interrupted; run it again with --resume to keep the phases "
        "already finished"]
    assert (Path(f"{out}.state") / "phase-compute.json").exists()
    assert not out.exists()
