"""What a data wait is: a loader that paces the job, or a fixed cost of each fetch.

One median step cannot tell them apart, and the remedies differ: a loader that supplies a
batch every step's length (it paces the job) keeps the step at that length whatever else gets
faster, while a fixed cost of each fetch (the hand-off of a batch the workers have ready) stays
as it is and lets every other remedy gain. The steps tell them apart where the work between two
batches varies: a pacing loader's batches arrive at its own rate, so the next wait takes up that
variation (wait = supply time - work since the last batch, slope -1), while a fixed cost's wait
stays the same (slope 0). ``read_data_wait`` fits that slope over the slowest rank's steps
(docs/diagnose.md, "A small data wait: a loader that paces, or a fixed fetch cost");
``runs_data_wait`` over measured runs that share a loader's period, through the same
``read_wait_slope``, and both price the remedies under the reading through ``as_read``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR
from scalesim.diagnosis import Remedy, shown_gain
from scalesim.figures import milliseconds, whole_percent
from scalesim.quantiles import student_t_quantile
from scalesim.remedies import NO_CHANGE, gain_verdict

# A data wait is modelled (and its remedy predicted) when removing it could gain the model's
# median error, wait / (step - wait) >= e, i.e. wait >= e / (1 + e) of the step (2.9 %).
LOADER_MODELLED_SHARE = DATA_PARALLEL_MEDIAN_ERROR / (1.0 + DATA_PARALLEL_MEDIAN_ERROR)

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
# Points in several groups (runs of several loader periods, ``read_wait_slope``) need the same
# degrees of freedom: one point more for each group past the first.
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


@dataclass(frozen=True)
class PointWords:
    """What the (work, wait) points of a slope reading are, in the reading's words: ``too_few``
    (how many there are, how many are needed and how to get more), ``same_work`` (why a work
    that does not vary tells nothing), ``unit`` (what the slope is 'over N' of: steps, runs) and
    ``at`` (where the wait was measured, after its figure: '' for a trace's step)."""

    too_few: str
    same_work: str
    unit: str
    at: str = ""


def _within(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``x`` less the mean of its group (the points of one ``groups`` value)."""
    out = np.empty_like(x)
    for g in np.unique(groups):
        at = groups == g
        out[at] = x[at] - x[at].mean()
    return out


def _slope(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float, int]:
    """Least-squares slope of ``y`` on ``x`` with an intercept of each group (the points of one
    ``groups`` value share it), its standard error (0 where the lines fit every point, a wait that
    never changes included, which scipy's linregress gives as nan) and its degrees of freedom,
    points less groups less one."""
    dx, dy = _within(x, groups), _within(y, groups)
    sxx = float(dx @ dx)
    slope = float(dx @ dy) / sxx
    residual = dy - slope * dx
    dof = len(x) - len(np.unique(groups)) - 1
    return slope, float(np.sqrt(residual @ residual / dof / sxx)), dof


def read_wait_slope(work: np.ndarray, waits: np.ndarray, wait_s: float, step_s: float,
                    words: PointWords, groups: np.ndarray | None = None) -> DataWaitReading:
    """Read the data wait ``wait_s`` of a ``step_s`` step from (``work``, ``waits``) points, s:
    at or above ``PACING_ONLY_SHARE`` of the step, the loader paces; under it, the slope of each
    wait on the work before it (within each of ``groups``, points that share a loader's period;
    None: one group) decides where its 95 % interval lies wholly on one side of
    ``PACING_SLOPE_BOUND``, and is undecided with under the degrees of freedom of ``MIN_PAIRS``
    points in one group, work that does not vary, or an interval across the bound. The one
    reading of traces (``read_data_wait``) and runs (``runs_data_wait``)."""
    wait = milliseconds(wait_s) + words.at
    groups = np.zeros(len(work)) if groups is None else np.asarray(groups)
    if wait_s >= PACING_ONLY_SHARE * step_s:
        return DataWaitReading(PACES, None, None, None, 0, (
            f"the data wait ({wait}, {whole_percent(wait_s / step_s)} of the step) is read as a "
            f"loader that paces the job: at {whole_percent(PACING_ONLY_SHARE)} or more of the "
            "step the input is the bottleneck"))
    if len(work) - len(np.unique(groups)) + 1 < MIN_PAIRS:
        return DataWaitReading(UNDECIDED, None, None, None, len(work), (
            f"whether the {wait} data wait is a loader that paces the job or a fixed cost of each "
            f"fetch is not read: {words.too_few}; the remedies give both"))
    if float(np.sqrt(np.mean(_within(work, groups) ** 2))) < MIN_WORK_SPREAD_S:
        return DataWaitReading(UNDECIDED, None, None, None, len(work), (
            f"whether the {wait} data wait is a loader that paces the job or a fixed cost of each "
            f"fetch is not read: {words.same_work}; the remedies give both"))
    slope, stderr, dof = _slope(work, waits, groups)
    half = student_t_quantile(0.975, dof) * stderr
    low, high = slope - half, slope + half
    band = f"slope {slope:+.2f}, 95 %: {low:+.2f} to {high:+.2f}, over {len(work)} {words.unit}"
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


def read_data_wait(steps, wait_s: float, step_s: float) -> DataWaitReading:
    """Read the data wait ``wait_s`` of a ``step_s`` step from one rank's ``steps`` through
    ``read_wait_slope``: each wait on the work before it (``arrival_pairs``), one group."""
    work, waits = arrival_pairs(steps)
    return read_wait_slope(work, waits, wait_s, step_s, PointWords(
        f"{len(work)} pairs of consecutive steps that wait on data, {MIN_PAIRS} needed (trace "
        "more steps)",
        "the work between batches is the same in every step, so no step shows whether the "
        "wait takes up its changes", "steps"))


def both_readings(paced: list[Remedy], fixed: list[Remedy], wait_s: float) -> list[Remedy]:
    """``paced`` (the remedies priced with the loader pacing the job), each whose gain under the
    fixed-cost reading (the same remedy of ``fixed``) differs by what a report shows (``NO_CHANGE``)
    given that gain beside its own (``Remedy.other_gain``) and both in its caveat: '+122% if the
    0.5 ms data wait is a fixed cost of each fetch; +0% while the loader paces the job: add loader
    workers first'. A remedy that does not apply while the loader paces (runs whose fitted loader
    paces no run, so no data stall) but does as a fixed cost gets that gain beside it too, the
    fixed-cost remedy named where its title differs."""
    other = {(r.key, r.factor): r for r in fixed}
    out = []
    for r in paced:
        f = other.get((r.key, r.factor))
        if (f is None or not f.applicable
                or abs(shown_gain(f) - shown_gain(r) * r.applicable) < NO_CHANGE):
            out.append(r)
            continue
        pace = "while the loader paces the job" + (": add loader workers first"
                                                    if r.key != "loader" else "")
        paced_gain = f"{shown_gain(r):+.0%} {pace}" if r.applicable else f"not {pace}"
        named = f" ({f.title})" if r.title != f.title else ""  # the fixed-cost remedy's own
        words = (f"{shown_gain(f):+.0%} if the {milliseconds(wait_s)} data wait is a fixed cost "
                 f"of each fetch{named}; {paced_gain}")
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


def gain_of_compute(profile, scenario, **curve) -> float:
    """The throughput gain (a fraction) of the scenario's first device count with the profile's
    compute curve changed to ``curve`` (its fields, seconds)."""
    from scalesim.predict import predict

    now = predict(profile, scenario)[0]
    compute = profile.compute.model_copy(update=curve)
    after = predict(profile.model_copy(update={"compute": compute}), scenario)[0]
    return float(after.samples_per_s / now.samples_per_s - 1.0)


# the loader remedy where the data wait reads as a fixed cost of each fetch
FIXED_FETCH_TITLE = ("Take the fixed cost off each fetch (pin_memory, a lighter collate_fn, the "
                     "next batch copied to the device ahead)")


def fixed_fetch_remedy(profile, scenario, fetch_s: float, micro_steps: int = 1,
                       whose: str = "the traces'") -> Remedy:
    """The loader remedy where the data wait (``whose``: 'the traces'', 'the runs'') reads as
    a fixed cost of each fetch (``FIXED``): its ``fetch_s`` a micro-step (of ``micro_steps`` a
    step) is the model's fetch before each forward (``ComputeCurve.fetch_s``, serial with the
    step, never hidden behind the passes the exchange overlaps); taking it off is the gain (held
    to removing the wait, ``loader_within_wait``). More workers do not shorten the hand-off of a
    batch they already have ready."""
    gain = gain_of_compute(profile, scenario,
                           fetch_s=max(profile.compute.fetch_s - fetch_s, 0.0))
    note = (f"{whose} data wait, {milliseconds(fetch_s * micro_steps)} a step, is read as "
            "the same cost in every fetch (see the notes), not a loader falling short")
    return Remedy("loader", FIXED_FETCH_TITLE, gain, True, note, verdict=gain_verdict(gain))


def loader_within_wait(remedy: Remedy, data_wait_s: float, step_s: float,
                       whose: str = "traced") -> Remedy:
    """``remedy`` with, where it is the loader's, its gain held to what removing the ``whose``
    ('traced', 'measured') data wait gives, ``step / (step - wait) - 1``: the model holds the
    loader at today's rate (one step's samples a step) and rebuilds the rest of the step from
    medians of its parts, which can fall short of the traced step (one rank's step 2.58 ms, its
    parts 2.02), and that shortfall read as the loader's had promised +33 % for a 0.135 ms
    wait."""
    if remedy.key != "loader" or not remedy.applicable or step_s <= data_wait_s:
        return remedy
    most = data_wait_s / (step_s - data_wait_s)
    if shown_gain(remedy) <= most:
        return remedy
    note = (f"capped at removing the {whose} data wait ({milliseconds(data_wait_s)} of a "
            f"{milliseconds(step_s)} step)")
    return replace(remedy, gain=float(most), objective_gain=float(most),
                   note=f"{remedy.note}; {note}" if remedy.note else note,
                   verdict=gain_verdict(float(most)))
