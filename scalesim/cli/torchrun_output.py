"""Pass torchrun's output through to the user, but not torchrun's own report of a failed rank
once the ranks have said why in one line (``scalesim calibrate --nproc-per-node N``).

When a rank exits non-zero, torchrun's elastic agent logs ``failed (exitcode: 2) local_rank:
...`` and ``Sending process N closing signal SIGTERM``, then raises ``ChildFailedError``, which
prints a Python traceback and a boxed table of the failed ranks: some thirty lines after the
rank's own ``scalesim calibration: error: ...``. Those lines are held back and dropped when a
rank has reported its error; anything else (a rank's own traceback, a torchrun failure with no
rank error) is passed on whole. Progress bars (``\\r`` without a newline) pass at once.
"""

from __future__ import annotations

import re
from typing import BinaryIO

RANK_ERROR = b"scalesim calibration: error:"
# torch.distributed.elastic's log lines (glog-style prefix, e.g. "E1130 18:04:43.583000 25579
# .../torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) ...")
_AGENT_LOG = re.compile(rb"^[EWI]\d{4} [\d:.]+ +\d+ \S*torch/distributed/elastic/")


def filter_stream(source: BinaryIO, sink: BinaryIO, chunk_bytes: int = 4096) -> bool:
    """Copy ``source`` to ``sink`` until EOF as described above; True when a rank reported a
    one-line error (the run failed cleanly)."""
    rank_error = False
    held: list[bytes] = []  # torchrun's own report, from its first line on
    pending = b""

    def emit(line: bytes) -> None:
        nonlocal rank_error
        if RANK_ERROR in line:  # a rank's one line always passes, even amid torchrun's report
            rank_error = True
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
        if b"\r" in pending and not held:  # a progress bar's redraw: show it now
            sink.write(pending)
            sink.flush()
            pending = b""
    if pending:
        emit(pending)
    report = b"".join(held)
    if held and not (rank_error and b"ChildFailedError" in report):
        sink.write(report)  # not torchrun's report of a rank's clean error: keep every line
        sink.flush()
    return rank_error
