"""A run whose throughput or step time is off from the other runs by a factor no scaling gives:
one row written in other units (``step_time_s`` in milliseconds among seconds, tokens/s among
samples/s), which the fit would otherwise absorb as a 0.1 %-efficient run.

Scaling moves a run's throughput per device one way as devices grow: down (communication,
stragglers), or up a little (cache effects: ``runs_diagnosis``' super-linear note). So a run on
more devices never does ``UNIT_FACTOR`` times the per-device throughput of a run on
fewer, and adding devices never divides the total throughput by ``UNIT_FACTOR``: the published
runs closest to either (``scalesim/data/validation``: VGG-16 on 16 PCIe GPUs over 25 GbE with
distributed TF, 28x below one GPU per device, 1.75x below it in total; the reliability table,
session 43) stay far inside. Of the two runs that break it, the one farther from the median of
the other runs (per device) is named.
"""

from __future__ import annotations

import numpy as np

from scalesim.device_nouns import nouns_for
from scalesim.errors import ScalesimError
from scalesim.figures import number, sig3

# Per-device throughput up, or total throughput down, from a run on fewer devices to one on
# more: past this factor one of the two is in other units (ms for s: 1000x, min for s: 60x)
UNIT_FACTOR = 20.0
# a step time this many times what the other runs imply (within MIXUP_SPREAD either way: the
# row's own efficiency moves it) names the row's unit and theirs; the factors are >= 16x apart
MIXUP_SPREAD = 1.5
_TIME_MIXUPS = ((1000.0, "milliseconds", "seconds"), (1e6, "microseconds", "seconds"),
                (1 / 60, "minutes", "seconds"), (1 / 3600, "hours", "seconds"),
                (1e-3, "seconds", "milliseconds"))


def worst_pair(devices: np.ndarray, per_device: np.ndarray) -> tuple[float, int, int]:
    """(factor, i, j): the largest of per_device[j] / per_device[i] and total[i] / total[j]
    over runs i before j (runs sorted by devices; total = per_device x devices), with its
    runs; (1.0, 0, 0) where none is above 1. Linear in the runs (running minimum, maximum)."""
    if len(per_device) < 2:
        return 1.0, 0, 0
    total = per_device * devices
    up = per_device[1:] / np.minimum.accumulate(per_device)[:-1]  # against the least before
    down = np.maximum.accumulate(total)[:-1] / total[1:]  # the most before, against this one
    j = int(np.argmax(np.maximum(up, down))) + 1
    factor = float(max(up[j - 1], down[j - 1]))
    if factor <= 1.0:
        return 1.0, 0, 0
    i = int(np.argmin(per_device[:j]) if up[j - 1] >= down[j - 1] else np.argmax(total[:j]))
    return factor, i, j


def check_units(runs) -> None:
    """ScalesimError (one line) naming the run whose throughput is ``UNIT_FACTOR`` or more off
    from what the other runs imply (module docstring); nothing where none is. ``runs``: the
    aggregated ``runs.Runs`` (one per device count, sorted by devices)."""
    devices = runs.devices.astype(float)
    per_device = runs.samples_per_s / devices
    factor, i, j = worst_pair(devices, per_device)
    if factor <= UNIT_FACTOR:
        return
    k = i if _off_median(per_device, i) > _off_median(per_device, j) else j
    others = np.delete(per_device, k)
    off = float(per_device[k] / np.median(others))  # > 1: faster than the others imply
    row = runs.rows[k]
    words = nouns_for(runs.device_name)
    if row.step_time_s is not None:
        column, value, ratio, unit = "step_time_s", row.step_time_s, 1.0 / off, "s"
        named = next((f"in {mine} where the others are in {theirs}"
                      for factor, mine, theirs in _TIME_MIXUPS
                      if abs(np.log(ratio / factor)) < np.log(MIXUP_SPREAD)),
                     "in other units than the others")
        fix = "write every step_time_s in seconds per optimizer step"
    else:
        column, value, ratio, unit = "samples_per_s", row.samples_per_s, off, "samples/s"
        named = ("a rate in tokens (or other units) where the others count samples" if ratio > 1
                 else "a rate of one device where the others are of all devices")
        fix = "write every samples_per_s in samples per second of the whole run"
    raise ScalesimError(
        f"{runs.source}: the run on {words.count(row.devices)} gives {column} {number(value)}, "
        f"{_times(ratio)} the {sig3(value / ratio)} {unit} the other runs imply at their median "
        f"throughput per {words.device}; no scaling moves one run that far, so it is likely {named}: "
        f"{fix}")


def _off_median(per_device: np.ndarray, k: int) -> float:
    """How far (log factor) run k's per-device throughput is from the other runs' median."""
    return abs(float(np.log(per_device[k] / np.median(np.delete(per_device, k)))))


def _times(ratio: float) -> str:
    """'1000x' or '1/1000 of' a factor."""
    return f"{sig3(ratio)}x" if ratio >= 1 else f"1/{sig3(1 / ratio)} of"
