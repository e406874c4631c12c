"""A GPU trace's DDP buckets are read from its NCCL kernels where its host posts record no size
(session 49, ``StepBreakdown.reduction_kernel_bytes``, ``trace_buckets.KERNEL_SIZES``).

Kineto copies a collective's arguments onto each NCCL kernel from the host's
``record_param_comms`` ("Collective name", "In msg nelems", "Out msg nelems", "Group size",
"dtype"; pytorch/kineto libkineto/src/output_json.cpp at 114171df, lines 718-737 and 899-905),
so a GPU trace whose host events were left out, or whose host posts record no size, keeps its
buckets on its kernels. Before, such a trace kept DDP's default buckets (20.3 % last).

The hand-made GPU job (``tests/trace_events.nccl_kernel``, the format verified above): two
identical ranks, each 9.9 ms step 3 ms of forward kernels and 6 ms of backward kernels on
stream 7, a 1-element metric all-reduce kernel at 1 ms (set aside; only where sized) and four
bucket all-reduce kernels on stream 8 of 1,000 Float, 4,000 Float, 8,000 BFloat16 and 1,000
Float elements: 4,000, 16,000, 16,000 and 4,000 bytes (10, 40, 40, 10 % of the bytes; by
elements 1/14, 4/14, 8/14, 1/14), at 0.3 ms per 4,000 bytes (3 ms in all), started at 3.6,
6.0, 8.4 and 9.6 ms: as tests/test_trace_buckets.py's job, the last ends 0.9 ms after backward."""

from __future__ import annotations

import pytest
from test_trace_buckets import assert_timeline_of, by_hand, modelled
from trace_events import BACKWARD, nccl_kernel, op

from scalesim.trace_buckets import KERNEL_SIZES

STEP_MS, STEPS = 9.9, 4
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage)"
BUCKETS = ((1000, "Float"), (4000, "Float"), (8000, "BFloat16"), (1000, "Float"))
ELEMENT_BYTES = {"Float": 4, "BFloat16": 2}  # c10::toString's names of float32 and bfloat16
STARTS_MS = (3.6, 6.0, 8.4, 9.6)
MS_PER_BYTE = 0.3 / 4000


def job(sized: bool = True, host: str | None = None):
    """Each rank's events: ``STEPS`` steps of the hand-made GPU job, its kernels' collective
    arguments where ``sized`` (else an older Kineto's bare kernels), and on the host, where
    ``host`` names one, that op (unsized: ``c10d::allreduce_`` without record_shapes) posting
    each bucket."""
    def events(rank: int) -> list[dict]:
        out = []
        for n in range(STEPS):
            t = n * STEP_MS * 1e3
            out += [op(f"ProfilerStep#{n + 1}", t, STEP_MS * 1e3, cat="user_annotation"),
                    {**op(f"ProfilerStep#{n + 1}", t, STEP_MS * 1e3, cat="gpu_user_annotation"),
                     "pid": 0, "tid": 7},
                    op("aten::mm", t, 3e3), op(BACKWARD, t + 3e3, 6e3),
                    nccl_kernel("sm90_xmma_gemm_forward", t, 3e3, stream=7),
                    nccl_kernel("sm90_xmma_gemm_backward", t + 3e3, 6e3, stream=7)]
            if sized:  # a metric's, set aside by its size (unsized, it could not be)
                out.append(nccl_kernel(ALL_REDUCE, t + 1e3, 10.0, "allreduce", 1, "Float"))
            for at, (n_el, dtype) in zip(STARTS_MS, BUCKETS, strict=True):
                dur_us = n_el * ELEMENT_BYTES[dtype] * MS_PER_BYTE * 1e3
                out.append(nccl_kernel(ALL_REDUCE, t + at * 1e3, dur_us,
                                       *(("allreduce", n_el, dtype) if sized else ())))
                if host:
                    out.append(op(host, t + at * 1e3 - 50, 20))
        return out
    return events


@pytest.mark.parametrize("host", [None, "c10d::allreduce_"])
def test_the_kernels_bytes_are_the_buckets_where_the_host_records_none(tmp_path, host):
    """The buckets read are the kernels' bytes, in order (the metric's set aside), and the
    model's exposed exchange is the timeline of their shares, 10/40/40/10 % of 3 ms over the
    6 ms backward: 0.9 ms by hand, over the last device's backward (its spread of device
    speeds, as in test_trace_buckets) 0.896 ms. Before: DDP's defaults, 0.609 ms (by hand in
    test_trace_buckets). Read by elements (1/14, 4/14, 8/14, 1/14 of 3 ms: 0.214, 0.857,
    1.714, 0.214 ms, ready at 6 x 1/14, 5/14, 13/14, 14/14 ms of backward) the timeline would
    end 1.5 ms after it (the third bucket ready at 5.571 ms, done at 7.286, the last then to
    7.5): the bytes, not the elements, are the buckets' shares."""
    report, now = modelled(tmp_path, job(host=host))
    nbytes = [n_el * ELEMENT_BYTES[d] for n_el, d in BUCKETS]
    assert nbytes == [4000, 16000, 16000, 4000]
    st = report.details["per_step"]["0"][1]
    assert list(st["reduction_elements"]) == []  # no host post with a size
    assert list(st["reduction_kernel_bytes"]) == nbytes
    buckets = report.details["exchange_buckets"]
    assert buckets["elements"] == nbytes
    assert buckets["sizes_from"] == KERNEL_SIZES
    assert buckets["last_share"] == pytest.approx(0.1)
    assert_timeline_of(now, [b / sum(nbytes) for b in nbytes])
    # by elements instead of bytes the model would say otherwise: the read is the bytes'
    by_elements = [n_el / 14000 for n_el, _ in BUCKETS]
    assert by_hand(by_elements, 6.0, 3.0) == pytest.approx(1.5)
    assert not any("DDP's default buckets" in n for n in report.notes)


def test_without_sizes_on_host_or_kernels_the_defaults_stay_and_the_note_says_why(tmp_path):
    """An older Kineto's kernels (no collective arguments) and no host post: DDP's default
    buckets, 0.609 ms exposed as before, and a note that names the kernels and what to record."""
    report, now = modelled(tmp_path, job(sized=False))
    assert float(now.exposed_comm_s) * 1e3 == pytest.approx(0.6092, abs=1e-4)
    assert report.details["exchange_buckets"]["elements"] == []
    assert report.details["exchange_buckets"]["sizes_from"] == ""
    note = next(n for n in report.notes if "DDP's default buckets" in n)
    assert "neither on their hosts' posts nor on their NCCL kernels" in note
    assert "is 20% of the exchange" in note
    assert note.endswith("record with ProfilerActivity.CPU beside CUDA for its own buckets")
