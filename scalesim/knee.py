"""Where a scaling curve bends, and why.

The knee is the step between consecutive device counts where scaling efficiency falls the
most. Its cause is the part of the step time that grew the most across that step (per sample,
so weak and strong scaling compare alike); if the step also crosses from one server to several,
a communication cause is labelled as the server boundary. Compute per sample that grows while
the per-device work does not shrink and more devices share a server is those devices slowing
each other (co-location); where the work shrinks (strong scaling) it is fixed overheads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR, median_error
from scalesim.device_nouns import GPU_NOUNS, Nouns

# The least efficiency drop named a knee (and, in ``scalesim diagnose``, a drop at the server
# boundary): the model's median throughput error on the data-parallel validation
# (``scalesim.accuracy``; efficiency is a throughput ratio, so its error is at most this many
# points). A smaller drop is within what the model gets wrong half the time. docs/model.md §10.
MIN_EFFICIENCY_DROP = DATA_PARALLEL_MEDIAN_ERROR

# Each cause in words; {device}, {devices}, {server} are the devices' nouns (``cause_label``)
CAUSE_LABELS = {
    "boundary": "crosses {server} boundary: inter-{server} link",
    "comm": "communication grows with {devices}",
    "data": "input pipeline cannot keep up",
    "straggler": "waiting for the slowest {device}",
    "compute": "small per-{device} work (fixed overheads dominate)",
    "colocation": "more busy {devices} per {server} slow each other's compute",
    "bubble": "pipeline bubble: fill and drain of the stages",
}


def cause_label(cause: str, words: Nouns = GPU_NOUNS) -> str:
    """A knee's cause (a key of ``CAUSE_LABELS``) in the devices' nouns: 'crosses server
    boundary: inter-server link'; on a CPU calibration's processes 'crosses host boundary: ...'."""
    return CAUSE_LABELS[cause].format(device=words.device, devices=words.devices, server=words.server)


@dataclass(frozen=True)
class Knee:
    index: int  # row index of the device count after the drop
    devices_before: int
    devices_after: int
    efficiency_drop: float  # efficiency points lost (0..1)
    crosses_boundary: bool
    cause: str  # key of CAUSE_LABELS
    label: str  # the cause in GPU words (``cause_label``; ``--json``)

    def label_in(self, words: Nouns) -> str:
        """``label`` in ``words``' nouns (``device_nouns.nouns_for``)."""
        return cause_label(self.cause, words)


def find_knee(devices, nodes, efficiency, compute_s=None, exposed_comm_s=None,
              data_stall_s=None, straggler_s=None, samples_per_step=None,
              min_drop: float = MIN_EFFICIENCY_DROP, bubble_s=None) -> Knee | None:
    """The largest efficiency drop between consecutive rows, or None if it is under ``min_drop``
    (efficiency points, 0..1; default the model's median error, ``MIN_EFFICIENCY_DROP``).

    ``bubble_s``: the pipeline bubble of rows split by a layout or of a pipelined replica (a
    part of its own)."""
    p = np.asarray(devices)
    eff = np.asarray(efficiency, dtype=float)
    if p.size < 2:
        return None
    drops = eff[:-1] - eff[1:]
    i = int(np.argmax(drops))
    if drops[i] < min_drop:
        return None
    n = np.asarray(nodes)
    crosses = bool(n[i] == 1 and n[i + 1] > 1)
    cause = "boundary" if crosses else "comm"
    parts = [("comm", exposed_comm_s), ("data", data_stall_s), ("straggler", straggler_s),
             ("compute", compute_s)]
    if bubble_s is not None:
        parts.append(("bubble", bubble_s))
    if all(v is not None for _, v in parts):
        per = (np.ones_like(eff) if samples_per_step is None
               else np.asarray(samples_per_step, dtype=float))
        growth = {name: float(np.asarray(v)[i + 1] / per[i + 1] - np.asarray(v)[i] / per[i])
                  for name, v in parts}
        cause = max(growth, key=growth.get)
        if cause == "comm" and crosses:
            cause = "boundary"
        per_server = p / n
        if (cause == "compute" and samples_per_step is not None and per[i + 1] >= per[i]
                and per_server[i + 1] > per_server[i]):
            cause = "colocation"
    return Knee(index=i + 1, devices_before=int(p[i]), devices_after=int(p[i + 1]),
                efficiency_drop=float(drops[i]), crosses_boundary=crosses, cause=cause,
                label=cause_label(cause))


def _through_layouts(rows) -> bool:
    """Whether ``Prediction`` rows came from the layout path (any row has ``dp``)."""
    return any(r.dp is not None for r in rows)


def least_drop_of(rows) -> float:
    """The least efficiency drop (points, 0..1) named a knee among ``Prediction`` rows: the
    median error of the path that predicted them (``_through_layouts``)."""
    return median_error(through_layouts=_through_layouts(rows))


def no_knee_words(min_drop: float, between: str) -> str:
    """Why no knee was named, e.g. 'efficiency never drops by 3.0 points (the model's median
    error) between rows'."""
    return (f"efficiency never drops by {100.0 * min_drop:.1f} points (the model's median error) "
            f"between {between}")


def searched_words(rows, what: str, words: Nouns = GPU_NOUNS) -> str:
    """What ``knee_of_predictions`` searched, for ``no_knee_words``: ``what`` ('rows', 'device
    counts'), or '<what> that fit in device memory' (``words.memory``) where some rows do not."""
    return what if all(r.fits for r in rows) else f"{what} that fit in {words.memory}"


def why_no_knee(rows, what: str, words: Nouns = GPU_NOUNS) -> str:
    """Why ``knee_of_predictions`` named no knee among ``Prediction`` rows, for 'knee: none
    (...)': fewer than two of the ``what`` ('rows', 'device counts') to search (in all, or that
    fit in device memory: ``words.memory``), else ``no_knee_words`` over what was searched."""
    fitting = sum(1 for r in rows if r.fits)
    if len(rows) < 2:
        return f"a knee lies between two {what}, and there is {'only one' if rows else 'none'}"
    if fitting < 2:
        return (f"{'none' if fitting == 0 else 'only one'} of the {what} fits in {words.memory}, "
                "and a knee lies between two that do")
    return no_knee_words(least_drop_of(rows), searched_words(rows, what, words))


def knee_of_predictions(rows) -> Knee | None:
    """``find_knee`` over ``scalesim.predict.Prediction`` rows (one per device count); the least
    drop is the median error of the path that predicted them (``scalesim.accuracy``). Only the
    rows that fit in device memory are searched (a row that cannot run is no side of a knee:
    the curve a manager can buy starts at the first count that fits); ``Knee.index`` is the
    row's index in ``rows``."""
    runnable = [i for i, r in enumerate(rows) if r.fits]
    if len(runnable) < 2 <= len(rows):
        return None
    if len(runnable) < len(rows):
        knee = knee_of_predictions([rows[i] for i in runnable])
        return None if knee is None else replace(knee, index=runnable[knee.index])
    layouts = _through_layouts(rows)
    return find_knee(
        [r.devices for r in rows], [r.nodes for r in rows], [r.efficiency for r in rows],
        [r.compute_s for r in rows], [r.exposed_comm_s for r in rows],
        [r.data_stall_s or 0.0 for r in rows], [r.straggler_s for r in rows],
        [r.micro_batch * r.accumulation * (r.dp or r.devices) / r.devices for r in rows],
        bubble_s=[r.bubble_s for r in rows] if layouts or any(r.bubble_s for r in rows) else None,
        min_drop=median_error(through_layouts=layouts),
    )


def focus_devices(rows, wanted: int | None = None) -> int:
    """The device count a decision looks at: ``wanted`` when it is a row, else the knee's far
    side, else the largest count (the planner's and ``scalesim decide``'s default)."""
    counts = [r.devices for r in rows]
    if wanted in counts:
        return int(wanted)
    knee = knee_of_predictions(rows)
    return rows[knee.index].devices if knee is not None else counts[-1]
