"""Overlap of communication with compute, from a bucket timeline.

Gradients become ready at a uniform byte rate through the backward pass (assumption: bytes of
gradient per second of backward are constant). They are grouped into buckets: a small first
bucket (DDP: 1 MiB) then equal buckets (DDP: 25 MiB), the last one holding the rest. Bucket i
is ready at ``r_i``; its collective starts when it is ready and the previous one is done, and
takes ``c_i``: ``end_i = max(r_i, end_{i-1}) + c_i``. The exposed communication is what is left
after the backward pass ends: ``end_last - T_backward``.

The recurrence unrolls to ``end_last = max_j (r_j + sum_{i>=j} c_i)``. For the equal middle
buckets the candidate is linear in j, so its maximum is at one of the two ends: the whole
timeline needs only the first, the first and last middle, and the last bucket. That gives an
exact O(1) formula per scenario, vectorised over arrays; ``timeline_end_scalar`` is the plain
loop it is tested against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from scalesim.figures import MIB_BYTES

# torch DDP defaults (PyTorch 2.13 torch/nn/parallel/distributed.py:31 _DEFAULT_BUCKET_CAP_MB = 25;
# :109 the first bucket, dist._DEFAULT_FIRST_BUCKET_BYTES = 1,048,576)
DDP_BUCKET_BYTES = 25 * MIB_BYTES  # bucket_cap_mb default
DDP_FIRST_BUCKET_BYTES = 1 * MIB_BYTES  # first bucket
# The model's overlap is on or off (``StepInputs.overlap``); a job is modelled as overlapping
# when at least this share of its communication time overlaps compute (the nearer of the two
# cases): a trace's measured share (``trace_diagnosis``) and runs' fitted overlap (``fit_runs``)
OVERLAPPED_SHARE = 0.5

# Compute kernels that run while NCCL collectives run take longer (the collectives hold SMs and
# memory bandwidth): 18.9% on average (max 40%) over GPT and LLaMA training on 4x A100, H100,
# MI250 and MI210, against the same kernels with no communication beside them. Lee, Oh, Kim,
# Go, Park, Mahajan, "Characterizing Compute-Communication Overlap in GPU-Accelerated
# Distributed Deep Learning: Performance and Power Implications", arXiv:2507.03114 (2025).
GPU_OVERLAP_COMPUTE_SLOWDOWN = 0.189
# While a hidden collective runs for h seconds, compute slowed by s does h / (1 + s) seconds of
# work, so h * s / (1 + s) of compute moves after it: the share of hidden time still charged.
GPU_COMM_CONTENTION = GPU_OVERLAP_COMPUTE_SLOWDOWN / (1.0 + GPU_OVERLAP_COMPUTE_SLOWDOWN)
# On CPUs the collectives (gloo: copies and sums) run on the same cores as forward and backward,
# so hiding them behind compute hides nothing: every collective second is a step second. A rule,
# not a measurement: ``scalesim calibrate`` on CPU writes it, and a CPU profile without the field
# (written before it) takes it (``schemas.Hardware``).
CPU_COMM_CONTENTION = 1.0


class Buckets(NamedTuple):
    """How a gradient of ``total`` bytes splits into buckets (arrays, broadcast together)."""

    total: np.ndarray  # bytes
    first: np.ndarray  # bytes of the first bucket
    n_mid: np.ndarray  # how many equal middle buckets
    mid: np.ndarray  # bytes of each middle bucket
    last: np.ndarray  # bytes of the last bucket (0 when the rest divides evenly)


def bucket_layout(total_bytes, bucket_bytes, first_bucket_bytes) -> Buckets:
    """Split ``total_bytes`` into a first bucket, ``n_mid`` equal buckets and a last one."""
    total = np.asarray(total_bytes, dtype=float)
    bucket = np.maximum(np.asarray(bucket_bytes, dtype=float), 1.0)
    first = np.minimum(np.asarray(first_bucket_bytes, dtype=float), total)
    rest = total - first
    n_full = np.floor(rest / bucket)
    last = rest - n_full * bucket
    # A remainder of a billionth of the gradient is floating-point noise: no bucket of its own.
    last = np.where(last <= 1e-9 * total, 0.0, last)
    return Buckets(total, first, n_full, bucket, last)


def bucket_times(buckets: Buckets, comm_s: Callable):
    """Collective time, s, of the first, a middle and the last bucket (``comm_s(bytes)``:
    seconds of one collective of that many bytes); an empty bucket costs 0."""
    return (
        np.where(buckets.first > 0, comm_s(buckets.first), 0.0),
        comm_s(buckets.mid),
        np.where(buckets.last > 0, comm_s(buckets.last), 0.0),
    )


def _rate(duration, total):
    shape = np.broadcast(duration, total).shape
    return np.divide(duration, total, out=np.zeros(shape), where=total > 0)


def timeline_end(duration_s, buckets: Buckets, times):
    """End time of the last bucket's collective, buckets ready uniformly over ``duration_s``.

    ``times`` = ``bucket_times(buckets, comm_s)``: seconds of the first, a middle and the last
    bucket's collective; ``duration_s`` and the result in seconds. Time 0 is the start of the
    backward pass (or of whatever phase produces the buckets).
    """
    duration = np.asarray(duration_s, dtype=float)
    total, first, n_mid, mid, last = buckets
    c_first, c_mid, c_last = times
    rate = _rate(duration, total)
    tail_after_mid = n_mid * c_mid + c_last
    end = np.maximum(rate * first + c_first + tail_after_mid, duration + c_last)
    cand_mid = np.maximum(rate * (first + mid) + tail_after_mid,
                          rate * (first + n_mid * mid) + c_mid + c_last)
    end = np.where(n_mid >= 1, np.maximum(end, cand_mid), end)
    return np.where(total > 0, end, duration)


def serial_comm_s(buckets: Buckets, times):
    """Sum of all bucket collectives run one after another (no overlap), seconds; ``times``:
    ``bucket_times``, seconds."""
    c_first, c_mid, c_last = times
    return np.where(buckets.total > 0, c_first + buckets.n_mid * c_mid + c_last, 0.0)


def prefetch_end(duration_s, buckets: Buckets, times):
    """End of a phase whose compute per bucket needs that bucket fetched first (ZeRO-3 forward).

    Collectives (all-gathers) run back to back from time 0; bucket j's compute, a share of
    ``duration_s`` proportional to its bytes, starts when its gather is done and the previous
    compute is done: ``fin_j = max(fin_{j-1}, gathered_j) + f_j``. Unrolled:
    ``fin_last = max_j (gathered_j + sum_{i>=j} f_i)``, linear in j over the equal buckets.
    ``duration_s``, ``times`` (``bucket_times``) and the result in seconds.
    """
    duration = np.asarray(duration_s, dtype=float)
    total, first, n_mid, mid, last = buckets
    c_first, c_mid, c_last = times
    rate = _rate(duration, total)
    end = np.maximum(c_first + duration, c_first + n_mid * c_mid + c_last + rate * last)
    cand_mid = np.maximum(c_first + c_mid + rate * (total - first),
                          c_first + n_mid * c_mid + rate * (mid + last))
    end = np.where(n_mid >= 1, np.maximum(end, cand_mid), end)
    return np.where(total > 0, end, duration)


def _scalar_buckets(total_bytes: float, bucket_bytes: float, first_bucket_bytes: float):
    sizes = []
    first = min(first_bucket_bytes, total_bytes)
    if first > 0:
        sizes.append(first)
    rest = total_bytes - first
    while rest > 1e-9 * total_bytes:
        size = min(bucket_bytes, rest)
        sizes.append(size)
        rest -= size
    return sizes


def timeline_end_scalar(duration_s, total_bytes, bucket_bytes, first_bucket_bytes, comm_s):
    """The bucket timeline as a plain loop over buckets (reference for the vectorised form)."""
    end, done_bytes = 0.0, 0.0
    for size in _scalar_buckets(total_bytes, bucket_bytes, first_bucket_bytes):
        done_bytes += size
        ready = duration_s * done_bytes / total_bytes
        end = max(ready, end) + float(comm_s(size))
    return max(end, duration_s)


def prefetch_end_scalar(duration_s, total_bytes, bucket_bytes, first_bucket_bytes, comm_s):
    """The prefetch timeline as a plain loop (reference for ``prefetch_end``)."""
    gathered, finished = 0.0, 0.0
    for size in _scalar_buckets(total_bytes, bucket_bytes, first_bucket_bytes):
        gathered += float(comm_s(size))
        finished = max(finished, gathered) + duration_s * size / total_bytes
    return finished if total_bytes > 0 else duration_s
