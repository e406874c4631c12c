"""Time on a trace's timelines: sets of intervals and the device time that host time launched.

An interval set is sorted, disjoint (starts, ends) arrays in seconds (``merge``, ``union``);
``length_in`` measures one inside a step's window, ``count_in`` / ``in_window`` the starts that
fall in one. ``KernelLaunches`` matches host launches to the kernels, memcpys and memsets they
started by Kineto's ``correlation`` id, so a host window (a step, an optimizer step) maps to the
device time it put on the GPU (``device_windows``: each step's window on the device timeline).
"""

from __future__ import annotations

from array import array

import numpy as np


def is_int64(value) -> bool:
    """``value`` is an int (not a bool) that the traces' 64-bit integer columns (``array('q')``:
    thread ids, correlation ids, leading dimensions) hold: one past 2**63 overflowed them."""
    return type(value) is int and -(2**63) <= value < 2**63


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (starts, ends)."""
    if starts.size == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > running[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def union(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Union of interval sets, each (starts, ends) in s, as ``merge`` gives it."""
    return merge(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def length_in(merged: tuple[np.ndarray, np.ndarray], w0: float, w1: float) -> float:
    """Total length of disjoint intervals inside the window [w0, w1]."""
    s, e = merged
    lo, hi = np.searchsorted(e, w0, "right"), np.searchsorted(s, w1, "left")
    if hi <= lo:
        return 0.0
    return float(np.sum(np.clip(e[lo:hi], w0, w1) - np.clip(s[lo:hi], w0, w1)))


def last_end_in(merged: tuple[np.ndarray, np.ndarray], w0: float, w1: float) -> float | None:
    """The latest end (s) of the disjoint intervals ``merged`` inside the window [w0, w1], one
    that runs past it held at w1; None where none lies in it. One that starts within a
    nanosecond of w1 is the next window's (as ``count_in`` counts it; ts + dur rounded past)."""
    s, e = merged
    lo, hi = np.searchsorted(e, w0, "right"), np.searchsorted(s, w1 - 1e-9, "left")
    if hi <= lo:
        return None
    return float(min(e[hi - 1], w1))


def count_in(sorted_starts: np.ndarray, w0: float, w1: float) -> int:
    """How many of ``sorted_starts`` (s) fall in [w0, w1) (s), both ends a nanosecond early:
    an op that starts as the next step does (``ts + dur`` rounded past it) is the next step's."""
    lo, hi = w0 - 1e-9, w1 - 1e-9
    return int(np.searchsorted(sorted_starts, hi, "left") - np.searchsorted(sorted_starts, lo, "left"))


def in_window(sorted_starts: np.ndarray, w0: float, w1: float) -> np.ndarray:
    """``sorted_starts`` (s) in [w0, w1) (s), as ``count_in`` counts them."""
    lo, hi = np.searchsorted(sorted_starts, [w0 - 1e-9, w1 - 1e-9], "left")
    return sorted_starts[lo:hi]


class Intervals:
    """Intervals (s) added one at a time, kept as two arrays of floats; ``merged()`` their
    union."""

    def __init__(self):
        self.start, self.end = array("d"), array("d")

    def add(self, t0: float, dur: float) -> None:
        self.start.append(t0)
        self.end.append(t0 + dur)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        return merge(np.frombuffer(self.start), np.frombuffer(self.end))

    def __len__(self) -> int:
        return len(self.start)


LAUNCH_CATS = ("cuda_runtime", "cuda_driver")  # host calls that start device work
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class KernelLaunches:
    """Host launches and the device events they started, matched by Kineto's ``correlation``
    id: which device work a span of host time (a step, an optimizer step, a backward op) put on
    the GPU. Arrays of numbers, as ``Intervals``."""

    def __init__(self):
        self.launch_ts, self.launch_tid, self.launch_corr = array("d"), array("q"), array("q")
        self.dev_corr, self.dev_ts, self.dev_end = array("q"), array("d"), array("d")

    def see(self, cat: str, t0: float, d: float, args: dict, tid: int) -> None:
        corr = args.get("correlation")
        if not is_int64(corr):
            return
        if cat in LAUNCH_CATS:
            self.launch_ts.append(t0)
            self.launch_tid.append(tid)
            self.launch_corr.append(corr)
        elif cat in DEVICE_CATS:
            self.dev_corr.append(corr)
            self.dev_ts.append(t0)
            self.dev_end.append(t0 + d)

    def matched(self) -> bool:
        return len(self.launch_ts) > 0 and len(self.dev_corr) > 0

    def _device_of(self, inside: np.ndarray) -> np.ndarray:
        """Mask over device events whose launch is marked in ``inside`` (a launch mask)."""
        return np.isin(
            np.frombuffer(self.dev_corr, dtype=np.int64),
            np.frombuffer(self.launch_corr, dtype=np.int64)[inside],
        )

    def spans(self, windows: list[tuple[float, float]]) -> list[tuple[float, float] | None]:
        """Per host window (disjoint, any thread): (first start, last end) of the device events
        launched inside it, or None when it launched none. One pass over the arrays: each launch
        finds its window by binary search, each device event its launch by correlation."""
        n = len(windows)
        if n == 0:
            return []
        w = np.asarray(windows, dtype=float).reshape(n, 2)
        order = np.argsort(w[:, 0], kind="stable")
        ts = np.frombuffer(self.launch_ts)
        at = np.searchsorted(w[order, 0], ts, "right") - 1
        inside = (at >= 0) & (ts < w[order[np.maximum(at, 0)], 1])
        window_of_launch = np.where(inside, order[np.maximum(at, 0)], -1)
        corr = np.frombuffer(self.launch_corr, dtype=np.int64)
        by_corr = np.argsort(corr, kind="stable")
        dev_corr = np.frombuffer(self.dev_corr, dtype=np.int64)
        pos = np.minimum(np.searchsorted(corr[by_corr], dev_corr), max(corr.size - 1, 0))
        found = corr.size > 0 and (corr[by_corr][pos] == dev_corr)
        window_of_dev = np.where(found, window_of_launch[by_corr[pos]], -1)
        keep = window_of_dev >= 0
        first, last = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(first, window_of_dev[keep], np.frombuffer(self.dev_ts)[keep])
        np.maximum.at(last, window_of_dev[keep], np.frombuffer(self.dev_end)[keep])
        return [(float(a), float(b)) if np.isfinite(a) else None for a, b in zip(first, last, strict=True)]

    def device_intervals(self, host: dict[int, Intervals]) -> tuple[np.ndarray, np.ndarray]:
        """Merged device intervals of the work launched inside ``host``'s intervals, each on its
        own thread (tid -> intervals)."""
        ts = np.frombuffer(self.launch_ts)
        tids = np.frombuffer(self.launch_tid, dtype=np.int64)
        inside = np.zeros(ts.size, dtype=bool)
        for tid, iv in host.items():
            s, e = iv.merged()
            mask = tids == tid
            if not mask.any() or s.size == 0:
                continue
            idx = np.searchsorted(s, ts[mask], "right") - 1
            inside[np.flatnonzero(mask)[(idx >= 0) & (ts[mask] < e[np.maximum(idx, 0)])]] = True
        dev = self._device_of(inside)
        return merge(np.frombuffer(self.dev_ts)[dev], np.frombuffer(self.dev_end)[dev])


def device_windows(cpu_steps, gpu_steps, launches: KernelLaunches) -> list[tuple[int, float, float]]:
    """Each step's window on the device timeline (``scalesim.traces``' docstring): the span of the device
    work its CPU step launched, widened to its ``gpu_user_annotation``; the annotation (else
    the CPU window) where it launched none matched. Where the trace matches no launch to a
    device event (no correlation ids), the annotations alone, a step without one left out
    (``traces.unplaced_steps_notes`` names it), else the CPU windows."""
    annotated = {n: (w0, w1) for n, w0, w1 in gpu_steps}
    if not launches.matched() or not cpu_steps:
        return list(gpu_steps or cpu_steps)
    spans = launches.spans([(w0, w1) for _, w0, w1 in cpu_steps])
    out = []
    for (n, c0, c1), span in zip(cpu_steps, spans, strict=True):
        ann = annotated.get(n)
        if span is None:
            out.append((n, *(ann or (c0, c1))))
        else:
            out.append(
                (n, min(span[0], ann[0]) if ann else span[0], max(span[1], ann[1]) if ann else span[1])
            )
    return out
