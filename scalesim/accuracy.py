"""How accurate the model is, as measured: the yardstick for which predicted gains are decisions.

Each figure is the median absolute throughput error of one shipped validation (docs/validation.md),
as a fraction. Every validated point is predicted from an anchor run of the same system (the
smallest device count, or one anchor per system), so the error is that of a predicted *ratio*
of throughputs, the quantity a decision compares (an option against running as is). A predicted
gain smaller than this error is within what the model gets wrong half the time: not a reason to
buy or change anything (``scalesim.decision``, docs/model.md §20).

The figures are written out so that importing them costs nothing; ``tests/test_decision.py``
recomputes both validations and checks they agree to a tenth of a percentage point.
"""

from __future__ import annotations

# scalesim validate: 101 predicted points of 41 all-reduce (data-parallel) cases, median 2.8 %
# (3.0 % before session 56: DDP's bucket copies, docs/model.md §4 "Their copies, in time", lower
# every multi-device point's predicted throughput by Ψ·4·w_r/B_mem a step; its median 3.02 -> 2.80)
DATA_PARALLEL_MEDIAN_ERROR = 0.028
# scalesim validate --parallel: 76 predicted model-parallel runs (tp, pp, sp, FSDP), median 2.9 %
# (2.92 -> 2.86 % in session 56: the copies on Narayanan's unsplit data-parallel run move its anchor)
MODEL_PARALLEL_MEDIAN_ERROR = 0.029


def median_error(through_layouts: bool) -> float:
    """The median relative throughput error (dimensionless) of the path that predicts: the
    model-parallel validation's for a transformer workload (``evaluate_layouts``, docs/model.md
    §16 and §22, whatever its split), the data-parallel one's for a parameter count (§1–§8)."""
    return MODEL_PARALLEL_MEDIAN_ERROR if through_layouts else DATA_PARALLEL_MEDIAN_ERROR
