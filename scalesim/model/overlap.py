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

import math
from collections.abc import Callable

import numpy as np

MIB = 1024 * 1024
DDP_BUCKET_BYTES = 25 * MIB  # torch DDP bucket_cap_mb default (c10d reducer)
DDP_FIRST_BUCKET_BYTES = 1 * MIB  # torch DDP first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)


def bucket_layout(total_bytes, bucket_bytes, first_bucket_bytes):
    """Sizes of the first, middle and last buckets and how many middle buckets there are.

    Returns ``(first, n_mid, mid, last)``: ``first`` bytes, then ``n_mid`` buckets of ``mid``
    bytes, then one bucket of ``last`` bytes (0 when the rest divides evenly or is empty).
    """
    total = np.asarray(total_bytes, dtype=float)
    bucket = np.maximum(np.asarray(bucket_bytes, dtype=float), 1.0)
    first = np.minimum(np.asarray(first_bucket_bytes, dtype=float), total)
    rest = total - first
    n_full = np.floor(rest / bucket)
    last = rest - n_full * bucket
    # A remainder below one byte is rounding noise: fold it into the full buckets.
    tiny = last < 1.0
    last = np.where(tiny, 0.0, last)
    return first, n_full, bucket, last


def _bucket_times(comm_s: Callable, first, mid, last):
    """Collective time of the first, a middle and the last bucket; an empty bucket costs 0."""
    return (
        np.where(first > 0, comm_s(first), 0.0),
        comm_s(mid),
        np.where(last > 0, comm_s(last), 0.0),
    )


def timeline_end(duration_s, total_bytes, bucket_bytes, first_bucket_bytes, comm_s: Callable):
    """End time of the last bucket's collective, with buckets ready uniformly over ``duration_s``.

    ``comm_s(size_bytes)`` gives one bucket's collective time (vectorised). Time 0 is the start
    of the backward pass (or of whatever phase produces the buckets).
    """
    total = np.asarray(total_bytes, dtype=float)
    duration = np.asarray(duration_s, dtype=float)
    first, n_mid, mid, last = bucket_layout(total, bucket_bytes, first_bucket_bytes)
    rate = np.divide(duration, total, out=np.zeros(np.broadcast(duration, total).shape),
                     where=total > 0)
    c_first, c_mid, c_last = _bucket_times(comm_s, first, mid, last)
    tail_after_mid = n_mid * c_mid + c_last

    cand_first = rate * first + c_first + tail_after_mid
    has_mid = n_mid >= 1
    cand_mid_first = rate * (first + mid) + tail_after_mid
    cand_mid_last = rate * (first + n_mid * mid) + c_mid + c_last
    cand_last = duration + c_last
    end = np.maximum(cand_first, cand_last)
    end = np.where(has_mid, np.maximum(end, np.maximum(cand_mid_first, cand_mid_last)), end)
    return np.where(total > 0, end, duration)


def serial_comm_s(total_bytes, bucket_bytes, first_bucket_bytes, comm_s: Callable):
    """Sum of all bucket collectives run one after another (no overlap), seconds."""
    first, n_mid, mid, last = bucket_layout(total_bytes, bucket_bytes, first_bucket_bytes)
    c_first, c_mid, c_last = _bucket_times(comm_s, first, mid, last)
    total = c_first + n_mid * c_mid + c_last
    return np.where(np.asarray(total_bytes, dtype=float) > 0, total, 0.0)


def prefetch_end(duration_s, total_bytes, bucket_bytes, first_bucket_bytes, comm_s: Callable):
    """End of a phase whose compute per bucket needs that bucket fetched first (ZeRO-3 forward).

    Collectives (all-gathers) run back to back from time 0; bucket j's compute, a share of
    ``duration_s`` proportional to its bytes, starts when its gather is done and the previous
    compute is done: ``fin_j = max(fin_{j-1}, gathered_j) + f_j``. Unrolled:
    ``fin_last = max_j (gathered_j + sum_{i>=j} f_i)``, linear in j over the equal buckets.
    """
    total = np.asarray(total_bytes, dtype=float)
    duration = np.asarray(duration_s, dtype=float)
    first, n_mid, mid, last = bucket_layout(total, bucket_bytes, first_bucket_bytes)
    rate = np.divide(duration, total, out=np.zeros(np.broadcast(duration, total).shape),
                     where=total > 0)
    c_first, c_mid, c_last = _bucket_times(comm_s, first, mid, last)
    cand_first = c_first + duration
    cand_mid_first = c_first + c_mid + rate * (total - first)
    cand_mid_last = c_first + n_mid * c_mid + rate * (mid + last)
    cand_last = c_first + n_mid * c_mid + c_last + rate * last
    end = np.maximum(cand_first, cand_last)
    end = np.where(n_mid >= 1, np.maximum(end, np.maximum(cand_mid_first, cand_mid_last)), end)
    return np.where(total > 0, end, duration)


def _scalar_buckets(total_bytes: float, bucket_bytes: float, first_bucket_bytes: float):
    sizes = []
    first = min(first_bucket_bytes, total_bytes)
    if first > 0:
        sizes.append(first)
    rest = total_bytes - first
    while rest >= 1.0:
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


def bucket_count(total_bytes: float, bucket_bytes: float, first_bucket_bytes: float) -> int:
    """How many buckets a gradient of ``total_bytes`` makes (for reports)."""
    if total_bytes <= 0:
        return 0
    rest = max(total_bytes - first_bucket_bytes, 0.0)
    return 1 + math.ceil(rest / bucket_bytes - 1e-12)
