"""Several independent solves of one problem with their evaluations batched.

``least_squares`` asks for one residual vector (or one Jacobian's rows) at a time; a fit's
starts and restarts are independent solves of the same residuals, whose model broadcasts over
parameter rows (``fit_runs.FitProblem.residual_rows``: each row's residuals are the same
numbers whether it is evaluated alone or in a stack). ``solve_in_lockstep`` runs each solve in
its own thread and evaluates, each round, every row the live solves wait on in one broadcast
call: each solve sees the numbers it would alone, so its result is the same, at a fraction of
the model's per-call cost (docs/performance.md, "Diagnose's fits (session 52)").
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


class _Batcher:
    """Gathers the rows each live solve waits on; the last to arrive evaluates them all."""

    def __init__(self, residual_rows: Callable[[np.ndarray], np.ndarray], live: int):
        self._residual_rows = residual_rows
        self._live = live
        self._waiting: dict[int, np.ndarray] = {}
        self._answers: dict[int, np.ndarray | BaseException] = {}
        self._turn = threading.Condition()

    def rows(self, who: int, x: np.ndarray) -> np.ndarray:
        """The residuals of each row of ``x`` (shape (m, free)) for solve ``who``."""
        with self._turn:
            self._waiting[who] = x
            self._evaluate_if_all_wait()
            while who not in self._answers:
                self._turn.wait()
            answer = self._answers.pop(who)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def finished(self) -> None:
        """One solve ended: the others no longer wait for it."""
        with self._turn:
            self._live -= 1
            self._evaluate_if_all_wait()

    def _evaluate_if_all_wait(self) -> None:
        if not self._waiting or len(self._waiting) < self._live:
            return
        who = list(self._waiting)
        stack = np.concatenate([self._waiting[w] for w in who])
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = self._residual_rows(stack)
            ends = np.cumsum([len(self._waiting[w]) for w in who])[:-1]
            self._answers.update(zip(who, np.split(out, ends), strict=True))
        except Exception as exc:  # each waiting solve raises it, as it would alone
            self._answers.update((w, exc) for w in who)
        self._waiting.clear()
        self._turn.notify_all()


def solve_in_lockstep(solve: Callable, residual_rows: Callable[[np.ndarray], np.ndarray],
                      starts) -> list:
    """``solve(x0, rows)`` from each of ``starts``, ``rows`` the batched ``residual_rows`` its
    evaluations go through; the results in the order of ``starts``. A solve that raises raises
    here, the first in that order (as solving them one after another would)."""
    starts = list(starts)
    if len(starts) <= 1:
        return [solve(x0, residual_rows) for x0 in starts]
    batcher = _Batcher(residual_rows, len(starts))
    results: list = [None] * len(starts)

    def run(i: int) -> None:
        try:
            results[i] = solve(starts[i], lambda x: batcher.rows(i, x))
        except BaseException as exc:  # re-raised below, in order
            results[i] = exc
        finally:
            batcher.finished()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(starts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results
