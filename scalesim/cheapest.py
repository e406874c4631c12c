"""The one rule for "the cheapest" that decide and goal both take (docs/model.md §20 steps 4-5, §21).

Money here is total money, the predicted time x a known hourly price: it errs as the predicted
time does, by the model's median error ε (``scalesim.accuracy``). Two totals within ε of each
other are the same money to the model, so the lead is the soonest of the totals within ε of the
lowest (``same_money``, ``cheapest``), a time tie going to the cheaper: a cheaper plan is not
taken for a difference the model cannot tell, and a sooner one at the same money is not passed
over. Two times within ε of each other are the same speed (``same_speed``): of the lead and
those the model cannot tell from it in speed, the plainest is taken (``plainest``: less to buy
or rent, by the caller's sort key), the soonest among equally plain ones; a difference the
model cannot tell apart is no reason to buy or rent more. ``choose`` is the whole rule.
``decision._contest``/``_choose`` (decide's recommendation and its add-server option) and
``goal`` (the cheapest plan that meets the goal, today's, each faster network's, the network
answer) all call it.
"""

from __future__ import annotations

from collections.abc import Callable

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
    """The index of the lead of ``money_usd`` (array, USD): the soonest by ``time_s`` (array,
    seconds) of those that are the same money as the lowest (``same_money``), the cheaper of
    equally soon ones."""
    m = np.asarray(money_usd, dtype=float)
    t = np.asarray(time_s, dtype=float)
    pool = np.flatnonzero(same_money(m, error))
    return int(pool[np.lexsort((m[pool], t[pool]))[0]])


def same_speed(slower, lead: int, error: float) -> np.ndarray:
    """Which of the candidates are the same speed as the soonest (index ``lead``): ``slower``
    (array, each one's time over the lead's minus 1, a fraction; 0 for the lead) under
    ``error``, the lead always."""
    s = np.asarray(slower, dtype=float)
    ties = s < error
    ties[lead] = True
    return ties


def plainest(slower, lead: int, plainer: Callable[[int], tuple], error: float) -> int:
    """The index the rule takes of candidates that are the same money (``same_money``) with the
    soonest at ``lead``: of those the same speed as it (``same_speed``), the first by
    ``plainer(i)`` (a sort key: less to buy or rent first), the least slower among equally
    plain ones, the first of equal ones."""
    s = np.asarray(slower, dtype=float)
    ties = np.flatnonzero(same_speed(s, lead, error))
    return int(min(ties, key=lambda i: (plainer(int(i)), 0.0 if i == lead else s[i])))


def choose(money_usd, time_s, plainer: Callable[[int], tuple], error: float) -> int:
    """The index of "the cheapest" of ``money_usd`` (array, USD) by the one rule: the lead
    (``cheapest``: the soonest by ``time_s``, array of seconds, of the same money), then of
    the same money the plainest of those the same speed as the lead (``plainest``, with
    ``plainer(i)`` the sort key of index ``i``)."""
    m = np.asarray(money_usd, dtype=float)
    t = np.asarray(time_s, dtype=float)
    lead = cheapest(m, t, error)
    pool = np.flatnonzero(same_money(m, error))
    at = int(np.flatnonzero(pool == lead)[0])
    pick = plainest(t[pool] / t[lead] - 1.0, at, lambda j: plainer(int(pool[j])), error)
    return int(pool[pick])
