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
