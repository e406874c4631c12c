"""When a pipeline's bubble is a large share of the step, and the micro-batches that shrink it.

With p stages and m micro-batches per step, 1F1B idles (p - 1) micro-batch times per step,
a bubble fraction (p - 1)/m of the compute (interleaved: (p - 1)/(v·m); Narayanan et al. 2021,
§2.2; docs/model.md §15). Narayanan's runs keep m >= 4·p, a bubble of at most a quarter of the
compute, which is a fifth of the step: so ``predict`` says so when the predicted bubble is
``BUBBLE_NOTE_SHARE`` of a row's step or more, and names the accumulation that splits the same
samples per replica into at least ``MICRO_BATCHES_PER_STAGE``·p micro-batches
(``fewer_bubble_flags``: flags to paste). A note, not a remedy: the remedies' accumulation
(``remedies``: 4x today's micro-steps) is a what-if on every workload; this names the count a
pipeline needs.
"""

from __future__ import annotations

BUBBLE_NOTE_SHARE = 0.2  # of the step: (p - 1)/(m + p - 1) at m = 4(p - 1)
MICRO_BATCHES_PER_STAGE = 4  # Narayanan 2021: m >= 4·p


def fewer_bubble_accumulation(per_replica: int, accumulation: int, pp: int, interleaved: bool) -> int | None:
    """Micro-batches per step that split ``per_replica`` samples (per replica per step) whole,
    more than ``accumulation``: the fewest from ``MICRO_BATCHES_PER_STAGE``·pp on, else the most
    there are (micro-batches of one sample); interleaved, a multiple of pp (Megatron's rule).
    None where no count beats ``accumulation``."""
    counts = [
        k
        for k in range(accumulation + 1, per_replica + 1)
        if per_replica % k == 0 and (not interleaved or k % pp == 0)
    ]
    if not counts:
        return None
    enough = [k for k in counts if k >= MICRO_BATCHES_PER_STAGE * pp]
    return enough[0] if enough else counts[-1]


def large_bubble(pp, bubble_s, step_time_s):
    """Whether a row's bubble (s) is ``BUBBLE_NOTE_SHARE`` of its step (s) or more: scalars
    (predict's rows) or numpy arrays of a sweep's columns alike, so both say it of the same rows."""
    return (pp > 1) & (step_time_s > 0) & (bubble_s >= BUBBLE_NOTE_SHARE * step_time_s)


def bubble_note(row, strong: bool, schedule: str, device_word: str = "devices") -> str | None:
    """The note on ``row`` (a ``Prediction`` of a split model) whose bubble is
    ``BUBBLE_NOTE_SHARE`` of its step or more, else None: the micro-batches m, the share, and
    the flags that give a smaller bubble at the same global batch (``--accumulation k`` under a
    global batch, ``strong``; ``--batch b --accumulation k`` otherwise)."""
    if not large_bubble(row.pp, row.bubble_s, row.step_time_s):
        return None
    m, b, p = row.accumulation, row.micro_batch, row.pp
    per_replica = b * m
    k = fewer_bubble_accumulation(per_replica, m, p, schedule == "interleaved")
    # the fraction of 1F1B and GPipe (docs/model.md §15); interleaved and zb idle less of it
    fraction = (
        f" (idle (pp - 1)/m = {p - 1}/{m} of the compute, Narayanan 2021)"
        if schedule in ("1f1b", "gpipe")
        else ""
    )
    said = (
        f"pipeline bubble: {row.bubble_s / row.step_time_s:.0%} of each step at "
        f"{row.devices:,} {device_word} is fill and drain: {m} micro-batch"
        f"{'' if m == 1 else 'es'} of {b} through {p} stages{fraction}"
    )
    plan = (
        f"scalesim plan with the same --workload and --hardware (or --profile), --devices "
        f"{row.devices} --global-batch {per_replica * row.dp} (it ranks splits and "
        "micro-batches)"
    )
    if k is None:
        return f"{said}; micro-batches of one sample already: a larger global batch, or {plan}"
    flags = f"--accumulation {k}" if strong else f"--batch {per_replica // k} --accumulation {k}"
    enough = (
        f"; m >= {MICRO_BATCHES_PER_STAGE} x pp keeps the bubble under a quarter"
        if k >= MICRO_BATCHES_PER_STAGE * p
        else ""
    )
    return (
        f"{said}; give {flags} ({k} micro-batches of {per_replica // k}, the same global "
        f"batch{enough}), or {plan}"
    )


SWEEP_ROWS_NAMED = 10  # row numbers a sweep's bubble note lists; the rest are counted


def sweep_bubble_note(
    rows: list[int],
    count: int,
    written: int,
    first,
    strong: bool,
    schedule: str,
    device_word: str = "devices",
) -> str | None:
    """``bubble_note`` once for a sweep: ``rows`` the first row numbers (1 = the first row
    written) of the ``count`` rows of ``written`` whose bubble is large (``large_bubble``),
    ``first`` the first of them (its columns as attributes); the note's flags are that row's."""
    note = bubble_note(first, strong, schedule, device_word) if rows else None
    if note is None:
        return None
    more = count - len(rows)
    named = ", ".join(map(str, rows)) + (f" and {more:,} more" if more else "")
    return (
        f"{count:,} of the {written:,} rows written ({'row' if count == 1 else 'rows'} "
        f"{named}; row 1 is the first written) have a pipeline bubble of "
        f"{BUBBLE_NOTE_SHARE:.0%} of the step or more; row {rows[0]}: {note}"
    )
