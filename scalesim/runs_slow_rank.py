"""One device slower than the others in every run, read from the runs' ``rank_step_times_s``.

A run's slowest rank is a *slow device* where it is the same rank in every run with two or more
ranks and each time beyond the others' spread (``model.stragglers.peer_margin``). Each run's
straggler delay, s, the wait the step model adds (docs/model.md §6):

- one slow device: its time less the median of the *other* ranks, its lateness behind a typical
  device (the model's ``(f - 1) * k * t_micro``). The median of all ranks holds the slow one too:
  of two ranks it is their mean, half the delay (a 1.4x slow device of 2 ranks read 2.79 ms for
  its 5.59, and the fit missed that run by 8 %, docs/diagnose.md);
- otherwise (spread): the slowest time less the median of all ranks, the model's
  ``E[max] - mean`` of ranks that jitter (of two, ``|t1 - t2| / 2 = 0.564 sigma`` on average).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.model.stragglers import peer_margin


@dataclass(frozen=True)
class SlowestRank:
    """A run's slowest rank: ``row`` (index of the run), ``rank``, its step time ``time_s``,
    the median of the other ranks' ``others_median_s``, the median of all ranks'
    ``all_median_s`` (s), and whether it is ``beyond`` the others' spread."""

    row: int
    rank: int
    time_s: float
    others_median_s: float
    all_median_s: float
    beyond: bool


def slowest_ranks(runs) -> list[SlowestRank]:
    """The slowest rank of each run that times two or more ranks."""
    out = []
    for row, r in enumerate(runs.rows):
        t = r.rank_step_times_s
        if not t or len(t) < 2:
            continue
        t = np.asarray(t, dtype=float)
        i = int(np.argmax(t))
        median, margin = peer_margin(np.delete(t, i))
        out.append(SlowestRank(row, i, float(t[i]), median, float(np.median(t)),
                               bool(t[i] > median + margin)))
    return out


def one_slow_rank(runs) -> int | None:
    """The rank that is the slowest in every run timing two or more ranks, each time beyond the
    others' spread; None where no one rank is (or no run times two ranks)."""
    slowest = slowest_ranks(runs)
    if slowest and len({s.rank for s in slowest}) == 1 and all(s.beyond for s in slowest):
        return slowest[0].rank
    return None


def straggler_delays(runs) -> np.ndarray:
    """Each run's straggler delay, s (0 where it times fewer than two ranks): the slow device's
    lateness behind the median other rank where ``one_slow_rank``, else max - median."""
    delays = np.zeros(len(runs.rows))
    slowest = slowest_ranks(runs)
    one = one_slow_rank(runs) is not None
    for s in slowest:
        delays[s.row] = s.time_s - (s.others_median_s if one else s.all_median_s)
    return delays
