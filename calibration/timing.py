"""Timing on GPU (CUDA events) and CPU (monotonic clock), robust statistics, OOM detection."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import torch


class Clock:
    """Marks on the device's timeline: CUDA events on GPU, ``time.perf_counter`` on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, start, end) -> float:
        """Seconds between two marks (waits for the GPU to reach ``end``)."""
        if self.cuda:
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        return end - start

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


def median_iqr(values) -> tuple[float, float]:
    """Median and interquartile range (75th minus 25th percentile) of ``values``."""
    arr = np.asarray(values, dtype=float)
    q25, q50, q75 = np.percentile(arr, [25, 50, 75])
    return float(q50), float(q75 - q25)


def over_ranks(everyone, key) -> tuple[float, float, float, float]:
    """A timed point from every rank's ``(forward, backward)`` rounds (dicts of seconds by
    ``key``): (step, spread, forward, backward) seconds, each the median over ranks of the rank's
    median (spread: interquartile range) of its rounds; a step is forward + backward."""
    medians = [median_iqr(np.add(f[key], w[key])) for f, w in everyone]
    return (float(np.median([m for m, _ in medians])), float(np.median([s for _, s in medians])),
            float(np.median([np.median(f[key]) for f, _ in everyone])),
            float(np.median([np.median(w[key]) for _, w in everyone])))


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a CUDA out-of-memory error or a CPU allocation failure."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "can't allocate memory" in text or isinstance(exc, MemoryError)
    )


def free_memory(device: torch.device) -> None:
    if device.type == "cuda":
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()
