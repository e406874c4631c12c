"""``scalesim calibrate --nproc-per-node N``: torchrun's own report of a failed rank is dropped
once a rank said why in one line; everything else passes (scalesim/cli/torchrun_output.py)."""

from __future__ import annotations

import io

from scalesim.cli.torchrun_output import filter_stream

RANK_LINE = (b"scalesim calibration: error: phase 'compute': model factory 'json:loads' raised "
             b"TypeError: loads() missing 1 required positional argument: 's' (rank 0, 1)\n")
# what torch 2.13's torchrun printed after it, here (abridged in the middle, kept at both ends)
AGENT_REPORT = b"".join(line + b"\n" for line in [
    b"E1130 18:04:43.583000 25579 site-packages/torch/distributed/elastic/multiprocessing/"
    b"api.py:1002] failed (exitcode: 2) local_rank: 0 (pid: 25583) of binary: /usr/bin/python3",
    b"Traceback (most recent call last):",
    b'  File "<frozen runpy>", line 198, in _run_module_as_main',
    b'  File "/usr/lib/python3.11/site-packages/torch/distributed/run.py", line 1032, in <module>',
    b"    main()",
    b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    b"=" * 60,
    b"scalesim.calibration FAILED",
    b"-" * 60,
    b"Failures:",
    b"  <NO_OTHER_FAILURES>",
    b"=" * 60,
])


def _filtered(data: bytes) -> tuple[bytes, bool]:
    sink = io.BytesIO()
    said = filter_stream(io.BytesIO(data), sink, chunk_bytes=7)  # small chunks split lines
    return sink.getvalue(), said


def test_a_ranks_clean_error_leaves_one_line():
    out, said = _filtered(b"compute: gpt ...\n" + RANK_LINE + AGENT_REPORT)
    assert said and out == b"compute: gpt ...\n" + RANK_LINE


def test_a_rank_line_amid_the_report_still_passes():
    out, said = _filtered(AGENT_REPORT[:120] + b"\n" + RANK_LINE + AGENT_REPORT[120:])
    assert said and RANK_LINE in out and b"ChildFailedError" not in out


def test_without_a_rank_error_the_report_is_kept_whole():
    """A rank that crashed (its own traceback, no one-line error) keeps everything."""
    crash = b"Traceback (most recent call last):\n  File \"x.py\"\nZeroDivisionError: x\n"
    out, said = _filtered(crash + AGENT_REPORT)
    assert not said and out == crash + AGENT_REPORT


def test_progress_bars_pass_before_their_newline():
    sink = io.BytesIO()

    class Source(io.BytesIO):  # one redraw, then stop: the bar must already be out
        def read1(self, n=-1):
            data = super().read1(n)
            if not data:
                assert b"\r 50%" in sink.getvalue()
            return data

    filter_stream(Source(b"\r 10%|#   |\r 50%|##  |"), sink)
    assert sink.getvalue().endswith(b"\r 50%|##  |")


def test_two_processes_on_one_gpu_are_refused_before_nccl():
    """NCCL refuses two ranks on one GPU ("Duplicate GPU detected", seen on a one-GPU H200);
    without CUDA_VISIBLE_DEVICES every process sees the node's GPUs, so the count decides."""
    from scalesim.calibration.dist import shared_gpu_problem

    assert shared_gpu_problem(1, 1, {}) is None
    assert shared_gpu_problem(8, 8, {}) is None
    problem = shared_gpu_problem(1, 2, {})
    assert "2 processes per node but 1 GPU(s)" in problem and "--nproc-per-node 1" in problem
    assert shared_gpu_problem(4, 8, {"CUDA_VISIBLE_DEVICES": ""}) is not None
    # each process given its own GPU by the scheduler: one visible is right
    assert shared_gpu_problem(1, 8, {"CUDA_VISIBLE_DEVICES": "3"}) is None


def test_a_ranks_own_traceback_is_kept_when_another_rank_reports_cleanly():
    """Rank 1 crashed with a Python traceback (its own cause: a CUDA error outside the
    calibration's error handling); rank 0 then failed cleanly in one line. torchrun's report
    is dropped, rank 1's traceback is not: it is the reason."""
    crash = (b"Traceback (most recent call last):\n  File \"x.py\", line 3, in setup\n"
             b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    out, said = _filtered(crash + RANK_LINE + AGENT_REPORT)
    assert said and RANK_LINE in out and b"ChildFailedError" not in out
    assert crash in out


def test_a_rank_error_after_a_progress_redraw_split_across_reads_is_seen():
    """A progress bar's redraw has no newline, so a rank's error line follows it on the same
    line; a read that ends inside the error line must not hide it."""
    data = b"\r 50%|##  |" + RANK_LINE + AGENT_REPORT

    class Source(io.BytesIO):
        def __init__(self, data, cut):
            super().__init__(data)
            self.cut = cut

        def read1(self, n=-1):  # the first read ends at the cut
            return super().read1(self.cut if self.tell() == 0 else n)

    for cut in range(len(b"\r 50%|##  |") + 1, len(b"\r 50%|##  |") + len(RANK_ERROR_WORDS)):
        sink = io.BytesIO()
        said = filter_stream(Source(data, cut), sink, chunk_bytes=4096)
        assert said, cut
        assert b"ChildFailedError" not in sink.getvalue(), cut


RANK_ERROR_WORDS = b"scalesim calibration: error:"


def test_ctrl_c_keeps_reading_torchruns_output_until_it_exits(tmp_path):
    """After Ctrl-C torchrun and its ranks still write (their interrupted tracebacks): the
    pipe is read until they exit, else a full pipe blocks them and the wait never ends."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    import pytest

    from scalesim.cli.torchrun_output import run_filtered

    child = tmp_path / "child.py"
    child.write_text(
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    for _ in range(300): sys.stderr.buffer.write(b'y' * 1000 + b'\\n')\n"
        "    sys.stderr.flush(); sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "time.sleep(30)\n")
    started = {}

    def popen(command, **kw):
        proc = subprocess.Popen(command, **kw)
        started["proc"] = proc
        return proc

    sink = io.BytesIO()

    def interrupt():  # Ctrl-C reaches the whole foreground group: the child and this process
        # once the child's handler is in place and run_filtered reads it: its 'ready' line in
        # the sink (was a fixed 1 s after the start, which a child slower to start on a busy
        # machine would lose: SIGINT's default kills it, exit 1, not the handler's 130)
        while b"ready" not in sink.getvalue():
            time.sleep(0.05)
        started["proc"].send_signal(signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)

    def guard():  # a hang fails the test instead of hanging it
        time.sleep(20)
        if "proc" in started and started["proc"].poll() is None:
            started["proc"].kill()

    threading.Thread(target=interrupt, daemon=True).start()
    threading.Thread(target=guard, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_filtered([sys.executable, str(child)], dict(os.environ), sink, popen=popen)
    assert started["proc"].returncode == 130 and time.monotonic() - t0 < 15


def test_a_gpu_shortage_is_an_agreed_error_every_rank_says(monkeypatch):
    """Too few GPUs for the processes: every rank of the node raises it in the same words
    (AgreedError, no rank prefix) and prints it, so whichever rank torchrun lets speak first
    says it (on the H200 rank 1 failed first and torchrun stopped rank 0 before it spoke, when
    rank 0 alone was to say it); the launcher shows the repeats once."""
    import pytest
    from scalesim.calibration import dist as cdist

    monkeypatch.setattr(cdist.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(cdist.torch.cuda, "device_count", lambda: 1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(cdist.AgreedError) as raised:
        cdist.choose_device("cuda", 1, 2)
    assert "2 processes per node but 1 GPU(s)" in str(raised.value)


def test_the_same_error_from_every_rank_is_shown_once():
    line = b"scalesim calibration: error: 2 processes per node but 1 GPU(s) visible\n"
    other = b"scalesim calibration: error: rank 1, phase 'compute': out of memory\n"
    out, said = _filtered(line + line + other + AGENT_REPORT)
    assert said and out == line + other


def _run(cmd, tmp_path):
    import os
    import subprocess

    return subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          text=True, timeout=240, check=False)


def test_a_flag_error_under_the_cli_launcher_is_one_line_before_torchrun(tmp_path):
    """``scalesim calibrate --nproc-per-node 2`` with flags no rank can run: one line, exit 2,
    from the launcher itself (before: each rank printed it, and torch was imported twice)."""
    import sys

    result = _run([sys.executable, "-m", "scalesim.cli.main", "calibrate", "--nproc-per-node",
                   "2", "--quick", "--no-progress", "--phases", "compute", "--block-hidden",
                   "100", "--block-heads", "3", "--out", str(tmp_path / "x.json")], tmp_path)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "--block-hidden 100 is not divisible by --block-heads 3" in lines[0]


def test_a_flag_error_every_rank_sees_is_the_same_line_under_torchrun(tmp_path):
    """Under torchrun itself every rank checks the flags and says the same line (fp16 needs a
    GPU; this machine's ranks run on the CPU): the launcher would show it once."""
    import sys

    result = _run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node=2", "-m", "scalesim.calibration", "--quick",
                   "--no-progress", "--phases", "compute", "--precision", "fp16", "--out",
                   str(tmp_path / "x.json")], tmp_path)
    said = [line for line in result.stderr.splitlines() if "scalesim calibration: error:" in line]
    assert result.returncode != 0 and len(set(said)) == 1, result.stderr[-2000:]
    assert "--precision fp16 needs a GPU" in said[0]


def test_sigterm_to_the_launcher_stops_torchrun_instead_of_orphaning_it(tmp_path):
    """``timeout 600 scalesim calibrate --nproc-per-node 2`` or ``kill PID`` sends SIGTERM to
    the launcher alone: it died at once (143) and torchrun with its ranks ran on, finished the
    calibration and wrote the profile after the command had exited. Now the signal is passed
    on, the launcher waits for torchrun to stop and says so (audit of the calibration path)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    child = tmp_path / "torchrun.py"  # stands for torchrun: stops on SIGTERM, says so
    child.write_text(
        "import os, signal, sys, time\n"
        f"open({str(tmp_path / 'child.pid')!r}, 'w').write(str(os.getpid()))\n"
        "def stop(*_):\n"
        f"    open({str(tmp_path / 'stopped')!r}, 'w').write('yes')\n"
        "    sys.exit(1)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "time.sleep(60)\n")
    launcher = tmp_path / "launcher.py"
    launcher.write_text(
        "import os, sys\n"
        "from scalesim.cli.torchrun_output import run_filtered\n"
        f"sys.exit(run_filtered([sys.executable, {str(child)!r}], dict(os.environ), "
        "sys.stderr.buffer))\n")
    proc = subprocess.Popen([sys.executable, str(launcher)], stderr=subprocess.PIPE,
                            env=dict(os.environ))
    pid_file = tmp_path / "child.pid"
    try:
        assert proc.stderr.readline() == b"ready\n"  # the child runs, the handler is in place
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        deadline = time.monotonic() + 30
        while not (tmp_path / "stopped").exists() and time.monotonic() < deadline:
            time.sleep(0.1)  # before the fix this waits in vain: the child never heard of it
        assert (tmp_path / "stopped").exists(), "torchrun was left running"
        assert proc.returncode == 128 + signal.SIGTERM
        assert "stopped by SIGTERM" in err and "--resume" in err
    finally:
        if pid_file.exists():  # never leave the stand-in running
            import contextlib

            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
