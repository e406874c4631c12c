"""Evaluate a grid of scenarios in one vectorised call.

``sweep`` takes a base scenario and lists of values for some knobs, forms their Cartesian product
and evaluates every combination with one call of the array model, so a million scenarios cost
one pass of numpy. Strong-scaling combinations whose global batch does not split evenly over
devices x accumulation are dropped and counted, never rounded silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.bounds import KNOB_BY_FIELD, check_values
from scalesim.errors import ScalesimError, require_model
from scalesim.model.collectives import ALGORITHMS
from scalesim.model.memory import STRATEGIES
from scalesim.model.overlap import MIB
from scalesim.model.sharding import FRAMEWORKS
from scalesim.model.step import evaluate_scaling
from scalesim.predict import layout, scenario_inputs
from scalesim.schemas import Profile, Scenario

# Knobs that can be swept, with how a value becomes a model input.
AXES = ("devices", "micro_batch", "global_batch", "accumulation", "strategy", "zero_framework",
        "algorithm", "overlap", "bucket_mib", "intra_busbw_GBps", "inter_busbw_GBps", "straggler_cv")

OUTPUT_COLUMNS = ("step_time_s", "compute_s", "exposed_comm_s", "data_stall_s", "straggler_s",
                  "comm_total_s", "samples_per_s", "speedup", "efficiency", "memory_bytes", "fits")


@dataclass(frozen=True)
class SweepResult:
    columns: dict[str, np.ndarray]  # the swept knobs, nodes, global_batch and every output
    dropped: int  # combinations dropped (strong scaling that does not split evenly)

    @property
    def size(self) -> int:
        return int(next(iter(self.columns.values())).size)


def _grid(axes: dict[str, list]) -> dict[str, np.ndarray]:
    names = list(axes)
    values = [np.asarray(axes[name]) for name in names]
    mesh = np.meshgrid(*values, indexing="ij")
    return {name: m.ravel() for name, m in zip(names, mesh, strict=True)}


def _checked_axes(axes: dict[str, list]) -> dict[str, np.ndarray]:
    """Each axis as a 1-D array of allowed values (scalesim.bounds); ScalesimError naming it."""
    if not isinstance(axes, dict):
        raise ScalesimError(f"axes: expected a dict of axis name -> list of values, got "
                            f"{type(axes).__name__}")
    unknown = sorted(str(name) for name in axes if name not in AXES)
    if unknown:
        raise ScalesimError(f"axes: cannot sweep {unknown}; sweepable: {', '.join(AXES)}")
    checked = {}
    for name, values in axes.items():
        what = f"sweep axis '{name}'"
        if isinstance(values, str | bytes | dict) or not hasattr(values, "__len__"):
            raise ScalesimError(f"{what}: expected a list of values, got {type(values).__name__}")
        if len(values) == 0:
            raise ScalesimError(f"{what} has no values")
        if name in ("strategy", "zero_framework", "algorithm"):
            bad = [v for v in values if not isinstance(v, str)]
            if bad:
                raise ScalesimError(f"{what}: expected names, got {bad[0]!r}")
            checked[name] = np.asarray(values)
        elif name == "overlap":
            bad = [v for v in values if not isinstance(v, bool | np.bool_)]
            if bad:
                raise ScalesimError(f"{what}: expected true/false values, got {bad[0]!r}")
            checked[name] = np.asarray(values, dtype=bool)
        else:
            checked[name] = check_values(KNOB_BY_FIELD[name].quantity, values, what)
    return checked


def sweep(profile: Profile, base: Scenario, axes: dict[str, list]) -> SweepResult:
    """Every combination of ``axes`` values on top of ``base``, evaluated at once.

    ``axes`` maps names of ``AXES`` to lists of values within the knobs' bounds
    (scalesim.bounds); a wrong type or value raises ScalesimError naming the axis.
    """
    profile = require_model(profile, Profile, "profile")
    base = require_model(base, Scenario, "base")
    axes = _checked_axes(axes)
    if "micro_batch" in axes and ("global_batch" in axes or base.global_batch is not None):
        raise ScalesimError("sweep per-device batches (weak scaling) or global batches "
                            "(strong scaling), not both")
    axes = {"devices": np.asarray(base.devices, dtype=np.int64), **axes}
    grid = _grid(axes)
    p = grid["devices"].astype(np.int64)
    g_max = base.devices_per_node or profile.hardware.devices_per_node
    layout(np.unique(p), g_max)  # clear error for device counts that do not fill servers
    k = grid.get("accumulation", np.full(p.shape, base.accumulation)).astype(np.int64)

    global_batch = grid.get("global_batch")
    if global_batch is None and base.global_batch is not None:
        global_batch = np.full(p.shape, base.global_batch)
    keep = np.ones(p.shape, dtype=bool)
    if global_batch is not None:
        global_batch = global_batch.astype(np.int64)
        keep = (global_batch % (p * k) == 0) & (global_batch >= p * k)
        grid = {name: col[keep] for name, col in grid.items()}
        p, k, global_batch = p[keep], k[keep], global_batch[keep]
        micro = global_batch // (p * k)
        base_micro = global_batch // k
    else:
        b0 = base.micro_batch or profile.workload.micro_batch
        micro = grid.get("micro_batch", np.full(p.shape, b0)).astype(np.int64)
        base_micro = micro
    if p.size == 0:
        raise ScalesimError("no combination of the sweep splits the global batch evenly")

    base_scn = base.model_copy(update={"global_batch": None, "micro_batch": 1, "devices": [1]})
    inputs, _ = scenario_inputs(profile, base_scn, devices=p)
    changes: dict = {"micro_batch": micro, "accumulation": k}
    if "strategy" in grid:
        changes["strategy"] = _codes(grid["strategy"], STRATEGIES, "strategy")
    if "zero_framework" in grid:
        changes["framework"] = _codes(grid["zero_framework"], FRAMEWORKS, "zero_framework")
    if "algorithm" in grid:
        changes["algorithm"] = _codes(grid["algorithm"], ALGORITHMS, "algorithm")
    if "overlap" in grid:
        changes["overlap"] = grid["overlap"].astype(bool)
    if "bucket_mib" in grid:
        changes["bucket_bytes"] = grid["bucket_mib"].astype(float) * MIB
    for name in ("intra_busbw_GBps", "inter_busbw_GBps"):
        if name in grid:
            changes[name] = grid[name].astype(float)
    if "straggler_cv" in grid:
        changes["jitter_cv"] = grid["straggler_cv"].astype(float)
    inputs = inputs.replace(**changes)
    result, speedup, efficiency = evaluate_scaling(inputs, base_micro)

    columns = dict(grid)
    columns["nodes"] = result.nodes.astype(np.int64)
    columns["micro_batch"] = micro
    columns["accumulation"] = k
    columns["global_batch"] = result.global_batch.astype(np.int64)
    for name in OUTPUT_COLUMNS:
        if name == "speedup":
            columns[name] = speedup
        elif name == "efficiency":
            columns[name] = efficiency
        elif name == "fits" and profile.compute.oom_micro_batch is not None:
            columns[name] = result.fits & (micro < profile.compute.oom_micro_batch)
        else:
            columns[name] = getattr(result, name)
    return SweepResult(columns=columns, dropped=int((~keep).sum()))


def _codes(values: np.ndarray, table: dict[str, int], what: str) -> np.ndarray:
    names = np.unique(values)
    bad = [str(v) for v in names if str(v) not in table]
    if bad:
        raise ScalesimError(f"unknown {what} {bad[0]!r}; choose from {', '.join(table)}")
    lookup = np.array([table[str(v)] for v in names])
    return lookup[np.searchsorted(names, values)]
