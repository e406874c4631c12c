"""The error every fit in scalesim reports: the relative RMS error of a model's times against
the measured ones (unit-free; 0.05 = the model is off by 5 % on a typical point)."""

from __future__ import annotations

import numpy as np


def relative_rmse(predicted, measured) -> float:
    """sqrt(mean((predicted / measured - 1)^2)) over the points (arrays of one unit, e.g. s)."""
    ratio = np.asarray(predicted, dtype=float) / np.asarray(measured, dtype=float)
    return float(np.sqrt(np.mean((ratio - 1.0) ** 2)))
