"""Input pipeline: how many samples per second the data loader of one device supplies.

The calibration measures one process's loader throughput at several ``num_workers``. A node's
CPU cores are shared by the loaders of all its devices, so a device gets at most
``cpu_cores_per_node / devices_per_node`` useful workers. Between measured worker counts the
supply is interpolated linearly; beyond the largest measured count it stays flat (no credit for
workers that were never measured). With prefetching (DataLoader ``prefetch_factor``) loading
overlaps compute, so a step stalls only when loading the step's samples takes longer than the
rest of the step: ``stall = max(0, samples_per_step / supply - busy_time)``.
"""

from __future__ import annotations

import numpy as np


def loader_supply_per_device(workers, devices_per_node, cpu_cores_per_node, curve_workers,
                             curve_samples_per_s):
    """Samples/s one device's loader delivers with ``workers`` workers (vectorised over inputs).

    ``R(min(w, max(1, cores/g)))``: the loader throughput curve (``curve_workers`` workers ->
    ``curve_samples_per_s`` samples/s of one process), interpolated linearly and flat outside the
    measured workers, at the workers the server's ``cpu_cores_per_node`` cores give each of its
    ``devices_per_node`` devices, at least one (docs/model.md §5); 0 workers reads the curve
    at 0 (its smallest point where 0 was not measured)."""
    w = np.asarray(workers, dtype=float)
    share = np.asarray(cpu_cores_per_node, dtype=float) / np.maximum(
        np.asarray(devices_per_node, dtype=float), 1.0
    )
    effective = np.where(w > 0, np.minimum(w, np.maximum(share, 1.0)), 0.0)
    xs = np.asarray(curve_workers, dtype=float)
    ys = np.asarray(curve_samples_per_s, dtype=float)
    order = np.argsort(xs)
    return np.interp(effective, xs[order], ys[order])


def data_stall_s(samples_per_step, supply_samples_per_s, busy_s):
    """Seconds a step waits on its input, given the loader's supply rate per device."""
    supply = np.asarray(supply_samples_per_s, dtype=float)
    load_s = np.divide(
        np.asarray(samples_per_step, dtype=float), supply,
        out=np.zeros(np.broadcast(samples_per_step, supply).shape), where=np.isfinite(supply),
    )
    return np.maximum(load_s - busy_s, 0.0)
