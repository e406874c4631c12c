"""``np.select`` for the model's few-element arrays, without its overhead.

``np.select`` broadcasts every condition and choice through ``np.broadcast_arrays`` on each
call: about 16 us on one-element arrays, and the model calls it six times per evaluation, a
fifth of a diagnosis fit's model time (docs/performance.md, "Start-up and small calls"). Nested
``np.where`` picks the same element from the same arrays (no arithmetic), so the result is
identical, in 4-5 us.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def select_first(conditions: Sequence, choices: Sequence, default=0):
    """Like ``np.select(conditions, choices, default)``: each element from the choice of the
    first condition that holds there, ``default`` where none does."""
    if len(conditions) != len(choices):
        raise ValueError("select_first: as many conditions as choices")
    out = np.asarray(default)
    for condition, choice in zip(reversed(conditions), reversed(choices), strict=True):
        out = np.where(condition, choice, out)
    return out
