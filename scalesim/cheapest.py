"""The one rule for "the cheapest" that decide and goal both take (docs/model.md §20 step 4, §21).

Money here is total money, the predicted time x a known hourly price: it errs as the predicted
time does, by the model's median error ε (``scalesim.accuracy``). Two totals within ε of each
other are the same money to the model, so "the cheapest" is the soonest of the totals within ε
of the lowest (``same_money``), a time tie going to the cheaper: a cheaper plan is not taken for
a difference the model cannot tell, and a sooner one at the same money is not passed over.
``decision._contest`` (decide's recommendation and its add-server option) and ``goal.seek``
(the cheapest plan that meets the goal, today's, each faster network's) both call it.
"""

from __future__ import annotations

import numpy as np


def same_money(money_usd, error: float) -> np.ndarray:
    """Which of ``money_usd`` (array, USD, one total each) are the same money as the lowest:
    ``M <= M_min`` or ``M / M_min - 1 < error`` (``error``: the model's median relative error,
    a fraction); a lowest of 0 USD or less is the same money only as itself."""
    m = np.asarray(money_usd, dtype=float)
    low = float(m.min())
    if low <= 0:
        return m <= low
    return (m <= low) | (m / low - 1.0 < error)


def cheapest(money_usd, time_s, error: float) -> int:
    """The index of "the cheapest" of ``money_usd`` (array, USD): the soonest by ``time_s``
    (array, seconds) of those that are the same money as the lowest (``same_money``), the
    cheaper of equally soon ones."""
    m = np.asarray(money_usd, dtype=float)
    t = np.asarray(time_s, dtype=float)
    pool = np.flatnonzero(same_money(m, error))
    return int(pool[np.lexsort((m[pool], t[pool]))[0]])
