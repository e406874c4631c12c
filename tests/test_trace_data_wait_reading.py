"""A small data wait is read from the steps as a loader that paces the job or a fixed cost of
each fetch, and where the steps cannot tell, the remedies give both (session 46,
``trace_data_wait``). Before, a worker loader's wait of 2.9 % of the step or more was always a
supply at today's rate, which held the model's step at today's: "Fix the slow process" read
+0.0 % where, the wait being a fixed fetch cost, fixing it gains +122 %.

The fixtures: two gloo ranks; each step both fetch a batch (worker processes), rank 0 computes
3 ms, rank 1 c_n ms, then both all-reduce until 1 ms after rank 1 arrives."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trace_events import loaded_step, write_ranks

from scalesim import trace_ranks
from scalesim.model.stragglers import DEVICE_SPEED_CV
from scalesim.trace_data_wait import (
    FIXED,
    FIXED_FETCH_TITLE,
    PACES,
    PACING_ONLY_SHARE,
    UNDECIDED,
    read_data_wait,
)
from scalesim.trace_diagnosis import diagnose_traces
from scalesim.traces import StepBreakdown

FETCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
# rank 1's compute a step, ms: median 8.5, spread 8.1 to 8.9
SLOW_COMPUTE_MS = [8.5, 8.1, 8.9, 8.3, 8.7, 8.5, 8.2, 8.8]


def _job(tmp_path, slow_ms: list[float], fixed_wait_ms: float | None = None,
         supply_ms: float | None = None):
    """Both ranks' traces, simulated step by step: a step starts with a fetch that waits
    ``fixed_wait_ms`` (a fixed cost) or, with ``supply_ms``, until the loader's next batch
    (one every ``supply_ms``, the first at 0.5 ms); rank 0 computes 3 ms, rank 1 ``slow_ms[n]``;
    the all-reduce ends 1 ms after the later rank's compute, and the next step starts then."""
    events = [[], []]
    start = 0.0
    for n, slow in enumerate(slow_ms):
        wait = (fixed_wait_ms if supply_ms is None
                else max(0.5 + n * supply_ms - start, 0.0))
        computes = (3.0, slow)
        end = start + wait + max(computes) + 1.0
        for rank, compute in enumerate(computes):
            at = start + wait + compute
            events[rank] += loaded_step(n, start, end, FETCH, wait, compute, at)
        start = end
    return trace_ranks.load_traces(write_ranks(tmp_path, events))


def _by_key(report):
    return {r.key: r for r in report.remedies}


def test_a_wait_the_same_every_step_is_a_fixed_fetch_cost(tmp_path):
    """Both ranks wait 0.5 ms each step while rank 1's compute varies 8.1-8.9 ms: the work
    between two batches varies by as much, the wait not at all (slope 0): a fixed cost. By
    hand: median step 0.5 + 8.5 + 1 = 10 ms; rank 1 fixed, 0.5 + 3 + 1 = 4.5 ms, +122 %
    (before: +0.0 %, the loader held at one batch a 10 ms step). Taking the fetch cost off
    gains at most 10 / 9.5 - 1 = +5.3 %, so fixing the slow process comes first."""
    report = diagnose_traces(_job(tmp_path, SLOW_COMPUTE_MS, fixed_wait_ms=0.5), "t")
    reading = report.details["data_wait_reading"]
    assert reading["reading"] == FIXED
    assert reading["slope"] == pytest.approx(0.0, abs=1e-6)
    assert reading["pairs"] == 7
    remedies = _by_key(report)
    assert remedies["slow_device"].gain == pytest.approx(10 / 4.5 - 1, rel=0.02)
    assert remedies["slow_device"].other_gain is None
    assert report.first_remedy.key == "slow_device"
    assert remedies["loader"].title == FIXED_FETCH_TITLE
    assert remedies["loader"].gain == pytest.approx(0.5 / 9.5, rel=0.02)
    assert any("a fixed cost of each fetch, not a loader" in n for n in report.notes)


def test_a_wait_that_takes_up_the_work_before_it_is_a_loader_that_paces(tmp_path):
    """The loader hands over a batch every 10 ms: each wait is 10 ms less the work since the
    last batch (rank 1's compute before it + 1 ms), 0.1-0.9 ms, median 0.5 (slope -1). Steps
    keep 10 ms on average however fast rank 1 gets, so fixing it gains +0 %, and the loader's
    remedy (more workers) gains 10 / 9.5 - 1 = +5.3 % (the model, from the median step, 9.9 ms
    of 10, 9.6, 10.8, 9.4, 10.4, 9.8, 9.7, 10.6: 9.9 / 9.5 - 1 = +4.2 %); no second gain."""
    report = diagnose_traces(_job(tmp_path, SLOW_COMPUTE_MS, supply_ms=10.0), "t")
    reading = report.details["data_wait_reading"]
    assert reading["reading"] == PACES
    assert reading["slope"] == pytest.approx(-1.0, abs=1e-6)
    remedies = _by_key(report)
    assert abs(remedies["slow_device"].gain) < 0.0005
    assert all(r.other_gain is None for r in report.remedies)
    assert report.first_remedy.key == "loader"
    assert report.first_remedy.title != FIXED_FETCH_TITLE
    assert report.first_remedy.gain == pytest.approx(9.9 / 9.5 - 1, rel=0.02)
    assert any("a loader that paces the job" in n for n in report.notes)


def test_too_few_steps_give_both_readings(tmp_path):
    """3 steps (2 pairs of consecutive arrivals, 4 needed) with the fixed 0.5 ms wait: not
    read, so each remedy's gain is the pacing reading's (+0 % for rank 1's fix) with the
    fixed-cost reading's beside it (10 / 4.5 - 1 = +122 %), in the text and in --json; the
    first remedy, the loader's, gains +5.3 % under both."""
    report = diagnose_traces(_job(tmp_path, SLOW_COMPUTE_MS[:3], fixed_wait_ms=0.5), "t")
    assert report.details["data_wait_reading"]["reading"] == UNDECIDED
    assert report.details["data_wait_reading"]["pairs"] == 2
    slow = _by_key(report)["slow_device"]
    assert abs(slow.gain) < 0.0005
    assert slow.other_gain == pytest.approx(10 / 4.5 - 1, rel=0.02)
    assert slow.caveat.startswith("+12")
    assert ("% if the 0.5 ms data wait is a fixed cost of each fetch; +0% while the loader "
            "paces the job: add loader workers first") in slow.caveat
    assert report.first_remedy.key == "loader"
    assert report.first_remedy.gain == pytest.approx(0.5 / 9.5, rel=0.05)
    assert slow.caveat in report.to_text()
    data = json.loads(report.to_json())
    row = next(r for r in data["remedies"] if r["key"] == "slow_device")
    assert row["other_gain"] == pytest.approx(slow.other_gain)
    assert row["gain"] == pytest.approx(slow.gain)


def _overlapped_job(tmp_path, wait_ms: float = 0.5, tail_ms: float = 2.0):
    """Two ranks alike: each step fetches for ``wait_ms``, computes ``SLOW_COMPUTE_MS[n]`` (its
    work varies, its wait not), and all-reduces on a stream of its own from a third into the
    compute until ``tail_ms`` after it (overlapped, DDP's buckets during backward)."""
    events = [[], []]
    start = 0.0
    for n, compute in enumerate(SLOW_COMPUTE_MS):
        end = start + wait_ms + compute + tail_ms
        reduce_at = start + wait_ms + compute / 3
        for rank in (0, 1):
            events[rank] += loaded_step(n, start, end, FETCH, wait_ms, compute, reduce_at)
        start = end
    return trace_ranks.load_traces(write_ranks(tmp_path, events, prefix="o"))


def _ddp_exposed_s(backward_s: float, transfer_s: float) -> float:
    """Exposed time of the traced DDP model's nominal 1e8-byte gradient (a 1 MiB bucket, three
    of 25 MiB, the rest) all-reduced in ``transfer_s`` (latency 0: each bucket its bytes' share)
    as its buckets come ready evenly over ``backward_s``: the last end over the backward, s
    (docs/model.md §3: end = max_j (ready_j + the collectives from j on))."""
    total, first, mid = 1e8, 2.0**20, 25 * 2.0**20
    sizes = [first, mid, mid, mid, total - first - 3 * mid]
    ready = backward_s * np.cumsum(sizes) / total
    after = transfer_s * np.cumsum(sizes[::-1])[::-1] / total
    return float(np.max(ready + after)) - backward_s


def test_a_fixed_fetch_hides_none_of_an_overlapped_exchange(tmp_path):
    """Traced median step 0.5 + 8.5 + 2 = 11 ms, the all-reduce 8.5 x 2/3 + 2 = 7.667 ms, 5.667
    of it beside the compute. By hand, the model's step is the compute 8.5 ms, the fetch 0.5 ms,
    the devices' speed spread over the passes (e_2 x 0.0132 x 8.5 ms = 0.0633 ms) and the
    exchange DDP's buckets leave after the last device's backward, 2/3 x 8.5 ms stretched by
    s = 1 + 0.0633 / 8.5 = 1.00745 (docs/model.md §3, ``straggler_stretch``; the fetch comes
    before forward, no part of it): 3.4338 ms exposed, a 12.497 ms step; taking the fetch off
    saves the 0.5 ms alone, 0.5 / 11.997 = +4.168 % (under the traced 0.5 / 10.5 = +4.76 %;
    3.4645 ms, 12.528 ms and +4.157 % before session 48, the exchange timed over a typical
    device's backward). Before (session 47) the fetch sat in the fixed time, two thirds of it
    backward, which hid 0.24 ms more of the exchange that taking the fetch off gave back:
    +2.17 %."""
    report = diagnose_traces(_overlapped_job(tmp_path), "t")
    assert report.details["data_wait_reading"]["reading"] == FIXED
    assert report.details["cross_rank"]["comm_s"] == pytest.approx(7.6667e-3, rel=1e-4)
    wait = DEVICE_SPEED_CV * 8.5e-3 / np.sqrt(np.pi)  # two devices' spread, e_2 = 1/sqrt(pi)
    stretch = 1.0 + wait / 8.5e-3  # the last device's passes over a typical one's
    exposed = _ddp_exposed_s(stretch * 8.5e-3 * 2 / 3, 8.5e-3 * 2 / 3 + 2e-3)
    assert exposed == pytest.approx(3.4338e-3, rel=1e-4)
    model_step = 8.5e-3 + 0.5e-3 + exposed + wait
    loader = _by_key(report)["loader"]
    assert loader.title == FIXED_FETCH_TITLE
    assert loader.gain == pytest.approx(0.5e-3 / (model_step - 0.5e-3), rel=1e-6)
    assert loader.gain == pytest.approx(0.04168, abs=1e-5)
    assert loader.gain < 0.5 / 10.5  # no cap: the model's own figure
    # what the fetch in the backward had hidden: 2/3 of it, the exposed time's slope on B
    hidden = exposed - _ddp_exposed_s(stretch * (8.5e-3 + 0.5e-3) * 2 / 3,
                                      8.5e-3 * 2 / 3 + 2e-3)
    assert hidden == pytest.approx(0.24e-3, abs=0.01e-3)


def _steps(waits_ms: list[float], work_ms: list[float]) -> list[StepBreakdown]:
    """One rank's steps: step n waits ``waits_ms[n]`` for its batch then works ``work_ms[n]``."""
    steps, t = [], 0.0
    for n, (wait, work) in enumerate(zip(waits_ms, work_ms, strict=True)):
        span = (wait + work) * 1e-3
        steps.append(StepBreakdown(n + 1, span, work * 1e-3, 0.0, 0.0, 0.0, wait * 1e-3, 0.0,
                                   start_s=t, end_s=t + span, data_end_s=t + wait * 1e-3))
        t += span
    return steps


def test_a_wait_of_a_fifth_of_the_step_paces_and_a_wait_unlike_either_is_not_read():
    """20 % of the step or more (TensorFlow's "highly input-bound") reads as the loader pacing
    whatever the steps; a wait that neither stays put nor takes up the work (waits 0.5, 0.2,
    0.9, 0.1, 0.8 ms after work 9, 9.5, 9.2, 9.4, 9.1 ms: least squares, slope -50 / 43 =
    -1.16, its 95 % interval -3.45 to +1.13 across -0.5) is not read."""
    steps = _steps([0.5] * 6, [9.0, 9.5, 9.2, 9.4, 9.1, 9.0])
    assert read_data_wait(steps, PACING_ONLY_SHARE * 10e-3, 10e-3).reading == PACES
    assert read_data_wait(steps, 0.5e-3, 10e-3).reading == FIXED
    noisy = read_data_wait(_steps([0.5, 0.5, 0.2, 0.9, 0.1, 0.8],
                                  [9.0, 9.5, 9.2, 9.4, 9.1, 9.0]), 0.5e-3, 10e-3)
    assert noisy.reading == UNDECIDED and noisy.slope == pytest.approx(-50 / 43)
    assert noisy.low == pytest.approx(-3.45, abs=0.01) and noisy.high == pytest.approx(1.13, abs=0.01)
