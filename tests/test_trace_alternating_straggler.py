"""A rank slowed in turn is the stragglers' cause, not idle time (session 53,
``trace_ranks.cross_rank``'s ``idle_s``): the idle common to every rank is each step's least idle
rank's, median over steps. Taken as the least of each rank's median, a rank slowed in 3 of 5
steps counted its own sleeps, and one step where the other rank's wait read as idle (its
collective's span not covering it, as once under CI's load) made both medians the sleep."""

from __future__ import annotations

import json

import pytest

from scalesim.trace_diagnosis import diagnose_traces
from scalesim.trace_ranks import load_traces

STEP_MS, SLEEP_MS, COMPUTE_MS = 125.0, 120.0, 1.0


def _event(name, ts_ms, dur_ms, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_ms * 1e3,
            "dur": dur_ms * 1e3, "args": {}}


def _step(n: int, sleeps: bool) -> list[dict]:
    """One 125 ms step: 1 ms of compute, then the rank that sleeps is idle 120 ms before its
    all-reduce (4 ms); the other sits in the all-reduce from its compute's end (a rank whose
    wait reads as idle is drawn as the one that sleeps)."""
    t = n * STEP_MS
    start = COMPUTE_MS + (SLEEP_MS if sleeps else 0.0)
    return [_event(f"ProfilerStep#{n + 1}", t, STEP_MS, cat="user_annotation"),
            _event("aten::mm", t, COMPUTE_MS),
            _event("gloo:all_reduce", t + start, STEP_MS - start, cat="user_annotation", tid=2)]


def _traces(tmp_path, idle_steps: list[set[int]]):
    paths = []
    for rank, idle in enumerate(idle_steps):
        events = [e for n in range(5) for e in _step(n, n in idle)]
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
            "backend": "gloo", "rank": rank, "world_size": len(idle_steps)}}))
        paths.append(str(path))
    return load_traces(paths)


def test_a_rank_slowed_in_turn_with_one_wait_read_as_idle_is_the_stragglers(tmp_path):
    """Rank 1 sleeps in steps 1, 3, 5, rank 0 in 2 and 4, and in step 5 rank 0's wait reads as
    idle: rank 0 idle in 3 steps, rank 1 in 3, so the least of the two medians was the 120 ms
    sleep, 96 % of the step, tied with the stragglers' 96 % (the order left to noise: CI read
    98 % against 97 % once, the cause idle time). Every rank is idle in one step only (the 5th),
    so the common idle is the median step's, 0."""
    report = diagnose_traces(_traces(tmp_path, [{1, 3, 4}, {0, 2, 4}]), "t")
    cr = report.details["cross_rank"]
    assert cr["idle_s"] == pytest.approx(0.0, abs=1e-6)
    assert cr["straggler_wait_s"] == pytest.approx(SLEEP_MS * 1e-3, rel=0.01)
    assert report.cause.key == "stragglers", report.to_text()
    assert cr["slowest_consistency"] <= 0.6


def test_idle_every_rank_has_in_most_steps_is_still_idle(tmp_path):
    """Both ranks idle 120 ms in steps 1, 2 and 3 (host overhead no rank escapes): the common
    idle is the sleep, and the cause idle time, as before."""
    report = diagnose_traces(_traces(tmp_path, [{0, 1, 2}, {0, 1, 2}]), "t")
    assert report.details["cross_rank"]["idle_s"] == pytest.approx(SLEEP_MS * 1e-3, rel=0.01)
    assert report.cause.key == "idle", report.to_text()
