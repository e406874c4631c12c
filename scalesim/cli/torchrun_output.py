"""Pass torchrun's output through to the user, but not torchrun's own report of a failed rank
once the ranks have said why in one line (``scalesim calibrate --nproc-per-node N``).

When a rank exits non-zero, torchrun's elastic agent logs ``failed (exitcode: 2) local_rank:
...`` and ``Sending process N closing signal SIGTERM``, then raises ``ChildFailedError``, which
prints a Python traceback and a boxed table of the failed ranks: some thirty lines after the
rank's own ``scalesim calibration: error: ...``. Those lines are held back and dropped when a
rank has reported its error; anything else (a rank's own traceback, even held among them; a
torchrun failure with no rank error) is passed on whole. A rank's error line that another rank
already said word for word (an error every rank raises alike, ``calibration.dist.AgreedError``)
is shown once. Progress bars (``\\r`` without a newline) pass at once. ``run_filtered`` runs
torchrun so, and keeps reading after Ctrl-C (without the tracebacks Ctrl-C gives every rank).
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import threading
from typing import BinaryIO

RANK_ERROR = b"scalesim calibration: error:"
# torch.distributed.elastic's log lines (glog-style prefix, e.g. "E1130 18:04:43.583000 25579
# .../torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) ...")
_AGENT_LOG = re.compile(rb"^[EWI]\d{4} [\d:.]+ +\d+ \S*torch/distributed/elastic/")


def filter_stream(source: BinaryIO, sink: BinaryIO, chunk_bytes: int = 4096) -> bool:
    """Copy ``source`` to ``sink`` until EOF as described above; True when a rank reported a
    one-line error (the run failed cleanly)."""
    rank_error = False
    held: list[bytes] = []  # from torchrun's report's (or a traceback's) first line on
    pending = b""
    shown = b""  # the end of the current line already passed on (a progress bar's redraw)

    said: set[bytes] = set()  # the ranks' error lines shown: every rank says an agreed one

    def emit(line: bytes) -> None:
        nonlocal rank_error
        if RANK_ERROR in shown + line:  # a rank's one line always passes, even amid a report
            rank_error = True
            if line in said:  # the same words from another rank: shown once
                return
            said.add(line)
        elif held or line.startswith(b"Traceback (most recent call last)") or \
                _AGENT_LOG.match(line):
            held.append(line)
            return
        sink.write(line)
        sink.flush()

    while chunk := source.read1(chunk_bytes) if hasattr(source, "read1") else source.read(
            chunk_bytes):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            emit(line + b"\n")
            shown = b""
        if b"\r" in pending and not held:  # a progress bar's redraw: show it now
            sink.write(pending)
            sink.flush()
            shown = (shown + pending)[-len(RANK_ERROR):]
            pending = b""
    if pending:
        emit(pending)
    kept = held if not rank_error else _without_torchrun_report(held)
    if kept:
        sink.write(b"".join(kept))  # a rank's own traceback, or a report of no clean error
        sink.flush()
    return rank_error


def drain_after_interrupt(source: BinaryIO, sink: BinaryIO, chunk_bytes: int = 65536) -> None:
    """Read torchrun's output to its end after Ctrl-C (a full pipe would block it) and pass on
    only the ranks' one-line errors. The rest is every rank's ``KeyboardInterrupt`` traceback and
    torchrun's ``SignalException`` one (106 lines with 2 ranks on this machine, before the
    command's own line), which say only that Ctrl-C was pressed: the command says that once,
    and that --resume keeps the phases already finished (``cli.main``)."""
    pending = b""
    while chunk := source.read1(chunk_bytes):
        *lines, pending = (pending + chunk).split(b"\n")
        sink.write(b"".join(line + b"\n" for line in lines if RANK_ERROR in line))
    if RANK_ERROR in pending:
        sink.write(pending + b"\n")
    sink.flush()


# the exception torchrun ends on: a failed rank, or a signal it got (passed on by run_filtered)
TORCHRUN_REPORTS = (b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
                    b"torch.distributed.elastic.multiprocessing.api.SignalException")


def _without_torchrun_report(held: list[bytes]) -> list[bytes]:
    """``held`` without torchrun's own report of the failed ranks: its elastic agent's log
    lines, and the ``ChildFailedError`` traceback with the table of failures after it. What
    else is there (a rank's own traceback, printed before it) is kept."""
    end = next((i for i, line in enumerate(held) if line.startswith(TORCHRUN_REPORTS)), None)
    if end is None:
        return held  # no report of torchrun's: nothing of it to drop
    start = max((i for i in range(end) if held[i].startswith(b"Traceback (most recent call")),
                default=end)
    return [line for line in held[:start] if not _AGENT_LOG.match(line)]


def run_filtered(command: list[str], env: dict[str, str], sink: BinaryIO,
                 popen=subprocess.Popen) -> int:
    """Run torchrun's ``command`` with its stderr through ``filter_stream`` into ``sink``;
    its exit code, or 2 when it failed and a rank said why in one line (as with one process).
    On Ctrl-C (torchrun got it too and stops its ranks) its output is still read until it
    exits, so that a full pipe cannot block it, showing only the ranks' one-line errors
    (``drain_after_interrupt``), then KeyboardInterrupt is raised again.
    A SIGTERM or SIGHUP sent to this process alone (``timeout``, ``kill``, a closed terminal)
    is passed on to torchrun, which stops its ranks; this process waits for them, says so
    and returns 128 + the signal's number. Before, it died at once and left torchrun and the
    ranks running on: they finished the calibration and wrote the profile after the command
    had exited 143."""
    with _passing_on() as (received, started), \
            popen(command, env=env, stderr=subprocess.PIPE) as proc:
        started.append(proc)  # a signal that came while it started is passed on now
        for signum in received:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)
        try:
            rank_error = filter_stream(proc.stderr, sink)
        except KeyboardInterrupt:
            try:
                drain_after_interrupt(proc.stderr, sink)
            finally:
                proc.wait()
            raise
        code = proc.wait()
    if received:
        name = signal.Signals(received[0]).name
        sink.write(f"scalesim calibrate: stopped by {name}: torchrun stopped its ranks; "
                   "--resume keeps the phases already finished\n".encode())
        sink.flush()
        return 128 + received[0]
    return 2 if code != 0 and rank_error else code


PASSED_ON = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _passing_on():
    """While inside: SIGTERM and SIGHUP to this process go to the process put in the second
    list yielded (from before it starts, so that none is lost in between; main thread only,
    where Python can handle signals); yields (the signals received, that list)."""
    received: list[int] = []
    started: list[subprocess.Popen] = []
    if threading.current_thread() is not threading.main_thread():
        yield received, started
        return

    def pass_on(signum, frame):
        received.append(signum)
        for proc in started:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

    old = {sig: signal.signal(sig, pass_on) for sig in PASSED_ON}
    try:
        yield received, started
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
