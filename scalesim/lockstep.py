"""Several independent solves of one problem with their evaluations batched.

``least_squares`` asks for one residual vector (or one Jacobian's rows) at a time; a fit's
starts and restarts are independent solves of the same residuals, whose model broadcasts over
parameter rows (``fit_runs.FitProblem.residual_rows``: each row's residuals are the same
numbers whether it is evaluated alone or in a stack). ``solve_in_lockstep`` runs each solve in
its own thread and evaluates, each round, every row the live solves wait on in one broadcast
call: each solve sees the numbers it would alone, so its result is the same, at a fraction of
the model's per-call cost (docs/performance.md, "Diagnose's fits (session 52)").

``map_in_lockstep`` does the same for independent work items that call ``step.evaluate`` or
``layout_step.evaluate_together`` (diagnose's gain-band draws, each predicting every remedy):
one thread an item, each round the calls every live item waits on evaluated together, one
stack per set of calls that can share one (docs/performance.md, "Diagnose's gain-band draws in
lockstep").
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


class _Rounds:
    """Gathers the item each live thread waits on; the last to arrive answers them all
    (``answer_all``: the waiting items by thread -> each one's answer or exception)."""

    def __init__(self, answer_all: Callable[[dict], dict], live: int):
        self._answer_all = answer_all
        self._live = live
        self._waiting: dict[int, object] = {}
        self._answers: dict[int, object] = {}
        self._turn = threading.Condition()

    def wait_for(self, who: int, item):
        """Thread ``who``'s answer to ``item``, once every live thread waits or has finished."""
        with self._turn:
            self._waiting[who] = item
            self._answer_if_all_wait()
            while who not in self._answers:
                self._turn.wait()
            answer = self._answers.pop(who)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def finished(self) -> None:
        """One thread ended: the others no longer wait for it."""
        with self._turn:
            self._live -= 1
            self._answer_if_all_wait()

    def _answer_if_all_wait(self) -> None:
        if not self._waiting or len(self._waiting) < self._live:
            return
        self._answers.update(self._answer_all(self._waiting))
        self._waiting.clear()
        self._turn.notify_all()


def _rows_of_all(residual_rows: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], dict]:
    """Each waiting solve's residuals (its rows, shape (m, free)) from one stacked call."""

    def answer_all(waiting: dict) -> dict:
        who = list(waiting)
        stack = np.concatenate([waiting[w] for w in who])
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = residual_rows(stack)
            ends = np.cumsum([len(waiting[w]) for w in who])[:-1]
            return dict(zip(who, np.split(out, ends), strict=True))
        except Exception as exc:  # each waiting solve raises it, as it would alone
            return {w: exc for w in who}

    return answer_all


def solve_in_lockstep(solve: Callable, residual_rows: Callable[[np.ndarray], np.ndarray],
                      starts) -> list:
    """``solve(x0, rows)`` from each of ``starts``, ``rows`` the batched ``residual_rows`` its
    evaluations go through; the results in the order of ``starts``. A solve that raises raises
    here, the first in that order (as solving them one after another would)."""
    starts = list(starts)
    if len(starts) <= 1:
        return [solve(x0, residual_rows) for x0 in starts]
    batcher = _Rounds(_rows_of_all(residual_rows), len(starts))
    results: list = [None] * len(starts)

    def run(i: int) -> None:
        try:
            results[i] = solve(starts[i], lambda x: batcher.wait_for(i, x))
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


# StepInputs fields that only enter the step model element by element (never a branch of it
# or a whole-array test): calls that differ only in these are evaluated as one stack. Every
# other field (devices, strategy, buckets, ...) must be equal for two calls to share one.
ELEMENTWISE_FIELDS = frozenset({
    "overhead_s", "per_sample_s", "optimizer_step_s", "backward_fraction", "intra_latency_s",
    "intra_busbw_GBps", "inter_latency_s", "inter_busbw_GBps", "nvls_busbw_ratio",
    "loader_samples_per_s", "loader_alone_samples_per_s", "jitter_cv", "device_cv",
    "comm_contention", "colocation_slope", "slow_factor", "activation_bytes_per_sample",
    "device_memory_bytes", "memory_margin", "bubble_micro_steps", "per_step_s", "fetch_s",
})


def _same_key(value) -> tuple:
    """A hashable of ``value`` that two calls share only where it is the same input."""
    a = np.asarray(value)
    return (a.dtype.str, a.shape, a.tobytes()) if a.dtype != object else ("object", id(value))


def _call_key(inp) -> tuple:
    """What two ``step.evaluate`` calls must share to be evaluated as one stack: every field's
    shape and dtype kind, and the value of every field outside ``ELEMENTWISE_FIELDS``."""
    key = []
    for name in inp.__dataclass_fields__:
        value = getattr(inp, name)
        if name in ELEMENTWISE_FIELDS:
            a = np.asarray(value)
            key.append((a.dtype.kind, a.shape))
        else:
            key.append(_same_key(value))
    return tuple(key)


def _stacked(inputs: list):
    """One StepInputs of ``inputs`` (same ``_call_key``): each elementwise field that differs
    between them stacked on a new leading axis (shape (m, 1.., own shape), so that it
    broadcasts with the others' rows as each call's did), the rest as the first call's."""
    first = inputs[0]
    ndim = max(np.ndim(getattr(first, name)) for name in first.__dataclass_fields__)
    changes = {}
    for name in ELEMENTWISE_FIELDS:
        given = [getattr(inp, name) for inp in inputs]
        if all(v is given[0] for v in given):
            continue
        values = np.array(given, dtype=float)  # (m, own shape): the key gave them one shape
        if np.all((values == values[0]) | (np.isnan(values) & np.isnan(values[0]))):
            continue
        own = values.shape[1:]
        changes[name] = values.reshape((len(given),) + (1,) * (ndim - len(own)) + own)
    return first.replace(**changes)


def _layout_call_key(inputs: list) -> tuple:
    """What two ``layout_step.evaluate_together`` calls (lists of LayoutInputs) must share to
    be evaluated as one: their length and each input's fields' shapes and dtypes, and the values
    ``layout_step.stacked`` requires equal (``intra_subset_shares``, which fields are None)."""
    key: list = ["layout"]
    for x in inputs:
        for name in x.__dataclass_fields__:
            value = getattr(x, name)
            if name == "intra_subset_shares" or value is None:
                key.append(_same_key(value))
            else:
                a = np.asarray(value)
                key.append((a.dtype.str, a.shape))
    return tuple(key)


def _evaluations_of_all(waiting: dict) -> dict:
    """Each waiting call's result: ``step.evaluate``'s (``_evaluate_group``: the calls that
    share a ``_call_key`` as one stack) and ``layout_step.evaluate_together``'s (a list of
    LayoutInputs: ``_evaluate_layout_group``, those that share a ``_layout_call_key``)."""
    groups: dict[tuple, list[int]] = {}
    for who, item in waiting.items():
        key = _layout_call_key(item) if isinstance(item, list) else _call_key(item)
        groups.setdefault(key, []).append(who)
    answers = {}
    for key, members in groups.items():
        group = _evaluate_layout_group if key[0] == "layout" else _evaluate_group
        answers.update(zip(members, group([waiting[w] for w in members]), strict=True))
    return answers


def _same_results(a, b) -> bool:
    """Whether two results (dataclasses of arrays) are the same numbers in the same shapes."""
    return all(np.shape(getattr(a, f)) == np.shape(getattr(b, f))
               and np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
               for f in a.__dataclass_fields__)


def _called(fn: Callable, item):
    """``fn(item)``, or the exception it raised."""
    try:
        return fn(item)
    except Exception as exc:  # noqa: BLE001 - handed to the caller in its place
        return exc


def _checked_group(evaluate: Callable, calls: list, together: Callable,
                   same: Callable = _same_results) -> list:
    """``evaluate`` of each of ``calls`` (results or exceptions), from ``together(calls,
    first)`` (their results from one model call, ``first`` the first call's alone) where that
    gives the first call the same numbers in the same shapes (``same``); else each alone."""
    first = _called(evaluate, calls[0])
    if len(calls) > 1 and not isinstance(first, BaseException):
        try:
            with np.errstate(all="ignore"):
                results = together(calls, first)
            if same(results[0], first):
                return [first] + results[1:]
        except Exception:  # noqa: BLE001, S110 - the stack failed: each alone, as it would have been
            pass
    return [first] + [_called(evaluate, c) for c in calls[1:]]


def _evaluate_group(inputs: list) -> list:
    """``step.evaluate_alone`` of each of ``inputs`` (one ``_call_key``), the same numbers, from
    one stacked call (``_stacked``; each member's arrays in the first's shapes, the stack's
    padding dropped), checked against the first alone (``_checked_group``)."""
    from scalesim.model.step import StepResult, evaluate_alone

    def together(calls: list, first) -> list:
        stack = evaluate_alone(_stacked(calls))
        return [StepResult(**{f: np.array(getattr(stack, f)[i]).reshape(
            np.shape(getattr(first, f))) for f in StepResult.__dataclass_fields__})
            for i in range(len(calls))]

    return _checked_group(evaluate_alone, inputs, together)


def _evaluate_layout_group(calls: list[list]) -> list:
    """``layout_step.evaluate_together_alone`` of each of ``calls`` (lists of LayoutInputs of
    one ``_layout_call_key``), the same numbers, from one call of all their inputs together,
    checked against the first alone (``_checked_group``)."""
    from scalesim.model.layout_step import evaluate_together_alone

    def together(group: list[list], first) -> list[list]:
        size = len(group[0])
        flat = evaluate_together_alone([x for call in group for x in call])
        return [flat[i:i + size] for i in range(0, len(flat), size)]

    def same_lists(a: list, b: list) -> bool:
        return all(_same_results(x, y) for x, y in zip(a, b, strict=True))

    return _checked_group(evaluate_together_alone, calls, together, same_lists)


def map_in_lockstep(fn: Callable, items, batched: bool = True) -> list:
    """``fn(item)`` for each of ``items``, each in its own thread, their ``step.evaluate`` and
    ``layout_step.evaluate_together`` calls batched (``_evaluations_of_all``): the results in
    the order of ``items``, an exception ``fn`` raised in its item's place (the caller decides,
    as a loop over them would). ``batched`` False: one after another in this thread, the same
    results (the reference the benchmark and tests compare with); so are the items left where
    no more threads can be started."""
    from scalesim.model import step

    items = list(items)
    if not batched or len(items) <= 1:
        return [_called(fn, item) for item in items]
    batcher = _Rounds(_evaluations_of_all, len(items))
    results: list = [None] * len(items)

    def run(i: int) -> None:
        step._LOCKSTEP.evaluations = lambda inp: batcher.wait_for(i, inp)
        try:
            results[i] = fn(items[i])
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in its place
            results[i] = exc
        finally:
            step._LOCKSTEP.evaluations = None
            batcher.finished()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(items))]
    started = 0
    try:
        for t in threads:
            t.start()
            started += 1
    except RuntimeError:  # no more threads here (a process or container limit)
        for _ in range(started, len(items)):  # the others no longer wait for these
            batcher.finished()
    for t in threads[:started]:
        t.join()
    for i in range(started, len(items)):  # one after another in this thread: the same numbers
        results[i] = _called(fn, items[i])
    return results
