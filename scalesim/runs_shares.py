"""Each run's parts of its step as the runs diagnosis shows and reads them: exposed
communication, data stall, straggler wait, and compute the rest (docs/diagnose.md, "The
table's shares").

A part a column of the runs measures (``comm_s``, ``data_wait_s``; the straggler delay of
``rank_step_times_s``) is its share of the measured step. A part the fitted model gives is its
share of the model's step (``model ms``): where no part is measured, ``part / model step``;
where some are, the model's split of its step less its own figures of the measured parts, laid
on what the measured parts leave of the measured step::

    share_k = part_model_k / (step_model - sum_j part_model_j) * (1 - sum_j measured_j / step)

(``j`` the measured parts). So a row's shares add to at most 100 %, however far the fit misses
the run (a fit of 207 ms for a run of 130 ms once gave comm 20.0 % + data 93.1 % of it), and a
fit that meets the run gives the same figures over either step. Where measured parts add to
more than the step (timing noise the runs allow, ``runs.RANK_TIME_SLACK``), they are shares of
their sum. Seconds returned are within the measured step (the share times it), so the findings'
growth per sample reads the parts the table shows.
"""

from __future__ import annotations

import numpy as np

PARTS = ("comm", "data", "straggler")  # the table's columns, in its order
MEASURED, MODELLED = "measured", "fitted model"


def model_parts_s(breakdown) -> dict[str, np.ndarray]:
    """The fitted model's parts of each run's step, s (``model.step.StepResult``)."""
    return {"comm": np.asarray(breakdown.exposed_comm_s, dtype=float),
            "data": np.asarray(breakdown.data_stall_s, dtype=float),
            "straggler": np.asarray(breakdown.straggler_s, dtype=float)}


def shares_of_step(step_s, breakdown, measured_s: dict) -> dict[str, np.ndarray]:
    """Each part's share (0..1) of each run's step, by the rule above: ``step_s`` the measured
    steps, s; ``breakdown`` the fitted model at the runs; ``measured_s`` each part's measured
    seconds per run, None where the model gives it."""
    step = np.asarray(step_s, dtype=float)
    model = model_parts_s(breakdown)
    given = {k: np.asarray(measured_s[k], dtype=float) for k in PARTS
             if measured_s.get(k) is not None}
    told = sum(given.values(), np.zeros_like(step))
    whole = np.maximum(step, told)
    left = 1.0 - told / whole  # the measured step's share the measured parts leave
    model_rest = np.asarray(breakdown.step_time_s, dtype=float) - sum(
        (model[k] for k in given), np.zeros_like(step))
    over = np.divide(left, model_rest, out=np.zeros_like(step), where=model_rest > 0)
    return {k: given[k] / whole if k in given else model[k] * over for k in PARTS}


def parts_in_step_s(step_s, breakdown, measured_s: dict) -> dict[str, np.ndarray]:
    """Each part's seconds within each run's measured step: its share (``shares_of_step``)
    times the step."""
    step = np.asarray(step_s, dtype=float)
    return {k: v * step for k, v in shares_of_step(step, breakdown, measured_s).items()}


def raw_over_step(step_s, breakdown, measured_s: dict) -> dict[str, np.ndarray]:
    """Each part as given (measured, else the fitted model's) over the measured step: above
    1 apart or together, the fitted model does not describe the run (a note says so)."""
    step = np.asarray(step_s, dtype=float)
    model = model_parts_s(breakdown)
    return {k: (model[k] if measured_s.get(k) is None else np.asarray(measured_s[k], float))
            / step for k in PARTS}


def share_sources(measured_s: dict) -> dict[str, str]:
    """Which step each part's share is of: ``MEASURED`` (a column of the runs) or ``MODELLED``."""
    return {k: MODELLED if measured_s.get(k) is None else MEASURED for k in PARTS}


def shares_words(sources: dict[str, str], columns: dict[str, str], step: str, model: str) -> str:
    """The line under a table of shares that says which step each is of, in the table's own
    column names (``columns``: part -> its column; ``step``, ``model``: the measured and the
    model's step columns). '' for a report written before it said (no ``sources``)."""
    if not sources:
        return ""
    measured = [columns[k] for k in PARTS if sources.get(k) == MEASURED]
    modelled = [columns[k] for k in PARTS if sources.get(k) != MEASURED]
    said = []
    if measured:
        said.append(f"{', '.join(measured)}: measured, shares of the measured step ({step})")
    if modelled and measured:
        said.append(f"{', '.join(modelled)}: the fitted model's split of its step ({model}) less "
                    f"its {', '.join(measured)}, over the rest of the measured step")
    elif modelled:
        said.append(f"{', '.join(modelled)}: the fitted model's, shares of its step ({model})")
    return "; ".join(said)
