"""What measured runs' data wait is: a loader that paces the job, or a fixed cost of each fetch.

The runs' ``data_wait_s`` column read as traces read theirs (``trace_data_wait``): a loader that
paces the job supplies a server's batches at its own rate, so runs whose server takes the same
samples a step (devices a server x micro-batch x accumulation) share its period T, and each
waits T less its work (step - wait): slope -1 within them; a fixed cost of each fetch waits the
same whatever the work, slope 0. ``read_runs_wait`` fits that slope over such runs, an intercept
for each period, through ``trace_data_wait.read_wait_slope`` (docs/diagnose.md, "A data wait of
runs: a loader that paces, or a fixed fetch cost"). Read as a fixed cost, the runs are refitted
with the wait a fetch before each micro-step's forward (``fetch_layout``, ``fixed_fetch_runs``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.fit_runs import Layout, measured_layout
from scalesim.runs import Runs
from scalesim.trace_data_wait import (
    LOADER_MODELLED_SHARE,
    MIN_PAIRS,
    DataWaitReading,
    PointWords,
    read_wait_slope,
)


def server_samples(runs: Runs) -> np.ndarray:
    """Samples a server takes a step, run by run (devices a server x micro-batch x
    accumulation): runs with the same figure share a pacing loader's period."""
    return (runs.devices // runs.nodes) * runs.micro_batch * runs.accumulation


def read_runs_wait(runs: Runs, words: Nouns = GPU_NOUNS) -> DataWaitReading | None:
    """How the runs' measured data wait is read (``trace_data_wait``'s ``PACES``, ``FIXED`` or
    ``UNDECIDED``), at the largest run, where the remedies start: ``read_wait_slope`` on each
    run's (step - wait, wait) in seconds, the runs that share a period (``server_samples``)
    together, one alone telling nothing. None where the runs measure no wait, the largest run
    waits none (nothing to price where the remedies start: a loader that paced only smaller runs
    is the fit's), or every run's is under ``LOADER_MODELLED_SHARE`` of its step (too small to
    read)."""
    wait = runs.optional("data_wait_s")
    step = runs.step_time_s
    if wait is None or wait[-1] <= 0 or not np.any(wait >= LOADER_MODELLED_SHARE * step):
        return None
    period = np.round(server_samples(runs), 6)
    shared = np.array([np.sum(period == p) >= 2 for p in period])
    groups = len(np.unique(period[shared]))
    needed = MIN_PAIRS + max(groups - 1, 0)
    where = (f"{groups} groups that each share one" if groups > 1 else "share one")
    last = words.count(int(runs.devices[-1]))
    point_words = PointWords(
        f"{int(np.sum(shared))} runs {where} (the same {words.devices} a {words.server} x "
        f"micro-batch x accumulation), {needed} needed (runs on more {words.servers} at the "
        f"same {words.devices} a {words.server} and batch add them)",
        "the runs that share a loader's period did the same work (step less wait), so none "
        "shows whether the wait takes up its changes", "runs", f" at {last}")
    return read_wait_slope(step[shared] - wait[shared], wait[shared], float(wait[-1]),
                           float(step[-1]), point_words, groups=period[shared])


def fetch_layout(runs: Runs) -> Layout:
    """The runs' layout (``fit_runs.measured_layout``) with each run's data wait a fetch before
    each of its micro-steps (``Layout.fetch_s``, s: wait / accumulation; ``StepInputs.fetch_s``,
    outside the passes the exchange hides behind)."""
    return replace(measured_layout(runs),
                   fetch_s=runs.optional("data_wait_s") / runs.accumulation)


def fixed_fetch_runs(runs: Runs) -> Runs:
    """The runs without their data wait column: a refit on ``fetch_layout`` carries the wait as
    a fixed cost of each fetch, which no loader's stall is to explain."""
    return replace(runs, rows=[r.model_copy(update={"data_wait_s": None}) for r in runs.rows])


def fetch_of_largest(runs: Runs) -> tuple[float, float, int]:
    """The largest run's data wait a step and its step, s, and its micro-steps a step."""
    return (float(runs.optional("data_wait_s")[-1]), float(runs.step_time_s[-1]),
            int(runs.accumulation[-1]))
