"""What a traced data wait is: a loader that paces the job, or a fixed cost of each fetch.

One median step cannot tell them apart, and the remedies differ: a loader that supplies a
batch every step's length (it paces the job) keeps the step at that length whatever else gets
faster, while a fixed cost of each fetch (the hand-off of a batch the workers have ready) stays
as it is and lets every other remedy gain. The steps tell them apart where the work between two
batches varies: a pacing loader's batches arrive at its own rate, so the next wait takes up that
variation (wait = supply time - work since the last batch, slope -1), while a fixed cost's wait
stays the same (slope 0). ``read_data_wait`` fits that slope over the slowest rank's steps
(docs/diagnose.md, "A small data wait: a loader that paces, or a fixed fetch cost").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from scalesim.diagnosis import Remedy, shown_gain
from scalesim.figures import milliseconds, whole_percent
from scalesim.remedies import NO_CHANGE

# At or above this share of the step the data wait is read as a loader that paces the job:
# TensorFlow's profiler calls such a job "highly input-bound" (kHighlyInfeedBoundThresholdInPercent
# = 20, tensorflow/core/profiler/convert/op_stats_to_input_pipeline_analysis.cc), the input the
# bottleneck. Under it a loader that falls a little short and a fixed cost of each fetch both fit:
# rank 1 of tests/fixtures/traces/slow_loader_rank1.json.gz, whose worker had its batches ready,
# still waited 5.4 ms (5 % of its step) for each hand-off.
PACING_ONLY_SHARE = 0.20
# The slope of the wait on the work before it is -1 where the loader paces, 0 where the wait is a
# fixed cost; its 95 % interval wholly on one side of the midpoint decides.
PACING_SLOPE_BOUND = -0.5
# The fewest pairs of consecutive arrivals the slope is fitted on: with 2 degrees of freedom the
# 95 % t factor is 4.3 (with 1, 12.7, an interval that spans both readings on any real trace).
MIN_PAIRS = 4
# Under this spread (s) the work between batches did not vary: the slope is not measured.
MIN_WORK_SPREAD_S = 1e-6

PACES, FIXED, UNDECIDED = "paces", "fixed", "undecided"


@dataclass
class DataWaitReading:
    """How a step's data wait is read (``PACES``, ``FIXED`` or ``UNDECIDED``), the fitted slope
    of each wait on the work since the batch before (-1: the loader paces; 0: a fixed cost) and
    its 95 % interval (None where not fitted), the pairs of steps it rests on, and why in words."""

    reading: str
    slope: float | None
    low: float | None
    high: float | None
    pairs: int
    words: str


def arrival_pairs(steps) -> tuple[np.ndarray, np.ndarray]:
    """(work s, wait s) over consecutive steps of one rank (``traces.StepBreakdown``) that both
    wait on data: the wait of the later step, and the work between the two batches' arrivals
    (``data_end_s``) but that wait. A loader's batches arriving every T s give wait = T - work."""
    by_step = sorted(steps, key=lambda st: st.step)
    work, wait = [], []
    for a, b in zip(by_step, by_step[1:], strict=False):
        if b.step != a.step + 1 or a.data_end_s is None or b.data_end_s is None:
            continue
        work.append(b.data_end_s - a.data_end_s - b.data_wait_s)
        wait.append(b.data_wait_s)
    return np.array(work), np.array(wait)


def _slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of ``y`` on ``x`` and its standard error (0 where the line fits every
    point, a wait that never changes included, which scipy's linregress gives as nan)."""
    dx = x - x.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ (y - y.mean())) / sxx
    residual = y - y.mean() - slope * dx
    return slope, float(np.sqrt(residual @ residual / (len(x) - 2) / sxx))


def read_data_wait(steps, wait_s: float, step_s: float) -> DataWaitReading:
    """Read the data wait ``wait_s`` of a ``step_s`` step from one rank's ``steps``: at or above
    ``PACING_ONLY_SHARE`` of the step, the loader paces; under it, the slope of each wait on the
    work before it (``arrival_pairs``) decides where its 95 % interval lies wholly on one side of
    ``PACING_SLOPE_BOUND``, and is undecided with fewer than ``MIN_PAIRS`` pairs, work that does
    not vary, or an interval across the bound."""
    wait = milliseconds(wait_s)
    if wait_s >= PACING_ONLY_SHARE * step_s:
        return DataWaitReading(PACES, None, None, None, 0, (
            f"the data wait ({wait}, {whole_percent(wait_s / step_s)} of the step) is read as a "
            f"loader that paces the job: at {whole_percent(PACING_ONLY_SHARE)} or more of the "
            "step the input is the bottleneck"))
    work, waits = arrival_pairs(steps)
    if len(work) < MIN_PAIRS:
        return DataWaitReading(UNDECIDED, None, None, None, len(work), (
            f"whether the {wait} data wait is a loader that paces the job or a fixed cost of each "
            f"fetch is not read: {len(work)} pairs of consecutive steps that wait on data, "
            f"{MIN_PAIRS} needed (trace more steps); the remedies give both"))
    if float(np.std(work)) < MIN_WORK_SPREAD_S:
        return DataWaitReading(UNDECIDED, None, None, None, len(work), (
            f"whether the {wait} data wait is a loader that paces the job or a fixed cost of each "
            "fetch is not read: the work between batches is the same in every step, so no "
            "step shows whether the wait takes up its changes; the remedies give both"))
    slope, stderr = _slope(work, waits)
    half = float(stats.t.ppf(0.975, len(work) - 2)) * stderr
    low, high = slope - half, slope + half
    band = f"slope {slope:+.2f}, 95 %: {low:+.2f} to {high:+.2f}, over {len(work)} steps"
    if high < PACING_SLOPE_BOUND:
        return DataWaitReading(PACES, slope, low, high, len(work), (
            f"the {wait} data wait takes up the changes of the work before it ({band}; -1: "
            "its batches arrive at the loader's rate): a loader that paces the job"))
    if low > PACING_SLOPE_BOUND:
        return DataWaitReading(FIXED, slope, low, high, len(work), (
            f"the {wait} data wait stays the same however the work before it changes ({band}; "
            "0: a fixed cost): a fixed cost of each fetch, not a loader that paces the job"))
    return DataWaitReading(UNDECIDED, slope, low, high, len(work), (
        f"whether the {wait} data wait is a loader that paces the job (slope -1) or a fixed cost "
        f"of each fetch (0) is not read: {band}; the remedies give both"))


def both_readings(paced: list[Remedy], fixed: list[Remedy], wait_s: float) -> list[Remedy]:
    """``paced`` (the remedies priced with the loader pacing the job), each whose gain under the
    fixed-cost reading (the same remedy of ``fixed``) differs by what a report shows (``NO_CHANGE``)
    given that gain beside its own (``Remedy.other_gain``) and both in its caveat: '+122% if the
    0.5 ms data wait is a fixed cost of each fetch; +0% while the loader paces the job: add loader
    workers first'."""
    other = {(r.key, r.factor): r for r in fixed}
    out = []
    for r in paced:
        f = other.get((r.key, r.factor))
        if (f is None or not (r.applicable and f.applicable)
                or abs(shown_gain(f) - shown_gain(r)) < NO_CHANGE):
            out.append(r)
            continue
        pace = "while the loader paces the job" + (": add loader workers first"
                                                    if r.key != "loader" else "")
        words = (f"{shown_gain(f):+.0%} if the {milliseconds(wait_s)} data wait is a fixed cost "
                 f"of each fetch; {shown_gain(r):+.0%} {pace}")
        out.append(replace(r, other_gain=float(shown_gain(f)),
                           caveat=f"{words}; {r.caveat}" if r.caveat else words))
    return out


def as_read(price, reading: DataWaitReading | None, wait_s: float) -> list[Remedy]:
    """The remedies ``price(wait_reading)`` gives under the steps' ``reading`` of the
    ``wait_s`` data wait: ``price(None)`` where it was not read (an in-process loader's wait,
    or one too small to model), ``price(PACES)`` or ``price(FIXED)`` as read, and where the
    steps cannot tell (``UNDECIDED``) the pacing reading's with the fixed-cost reading's gain
    beside each it differs on (``both_readings``). Every diagnose path that prices a data wait
    goes through it."""
    if reading is None:
        return price(None)
    if reading.reading != UNDECIDED:
        return price(reading.reading)
    return both_readings(price(PACES), price(FIXED), wait_s)
