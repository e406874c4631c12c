"""``lockstep.map_in_lockstep``: work items in threads whose ``step.evaluate`` calls are
evaluated together, one stack per set of calls that differ only in elementwise inputs, and give
each item the numbers it gets alone (diagnose's gain-band draws, session 54)."""

from __future__ import annotations

import numpy as np
import pytest
from diagnose_cases import inter_server
from test_rows_with_baseline import _layouts

from scalesim import lockstep, runs_diagnosis
from scalesim.errors import ScalesimError
from scalesim.lockstep import map_in_lockstep
from scalesim.model import layout_step, step
from scalesim.model.memory import DDP, ZERO3
from scalesim.model.step import StepInputs, StepResult, evaluate_scaling
from scalesim.runs import runs_from_records


def _inputs(i: int, strategy: int) -> StepInputs:
    """A 1-32 device job whose compute, links, jitter and loader differ with ``i``."""
    return StepInputs(
        devices=np.array([1, 2, 8, 16, 32]), devices_per_node=8, micro_batch=32,
        accumulation=1, overhead_s=0.002 * i, per_sample_s=1e-3 * (1 + 0.1 * i),
        optimizer_step_s=0.01, backward_fraction=2 / 3, params=3.4e8, wire_bytes_per_param=2.0,
        intra_latency_s=1e-5, intra_busbw_GBps=150.0 + i, inter_latency_s=3e-5,
        inter_busbw_GBps=5.0 * (1 + i), jitter_cv=0.01 * i, loader_samples_per_s=4e3 + 100 * i,
        strategy=strategy, blocks=24)


def _scaling(inp: StepInputs):
    """Two ``step.evaluate`` calls: the job, and its one-device baseline."""
    return evaluate_scaling(inp, with_baseline=True)


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, StepResult):
        return all(_same(getattr(a, f), getattr(b, f)) for f in StepResult.__dataclass_fields__)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_each_item_gets_the_bits_it_gets_alone_in_fewer_model_calls(monkeypatch):
    """12 jobs, 6 DDP and 6 ZeRO-3: two model calls each alone (24); in lockstep each round's
    calls form one stack per strategy (a structural input) and each stack's first is also
    evaluated alone, so 2 rounds x 2 strategies x 2 calls = 8."""
    items = [_inputs(i, DDP if i % 2 else ZERO3) for i in range(12)]
    alone = [_scaling(inp) for inp in items]
    calls, real = [], step.evaluate_alone
    monkeypatch.setattr(step, "evaluate_alone", lambda inp: calls.append(1) or real(inp))
    together = map_in_lockstep(_scaling, items)
    assert len(calls) == 8
    assert all(_same(a, t) for a, t in zip(alone, together, strict=True))
    calls.clear()
    assert all(_same(a, t) for a, t in zip(alone, map_in_lockstep(_scaling, items, False),
                                           strict=True))
    assert len(calls) == 24  # not batched: each alone, in this thread


def test_calls_of_other_device_counts_are_not_stacked_together():
    """Device counts decide whole-array branches of the step (one device exchanges nothing):
    jobs on other counts are evaluated apart, and still get their own numbers."""
    items = [_inputs(i, DDP).replace(devices=np.array([1, 2][: 1 + i % 2])) for i in range(6)]
    alone = [_scaling(inp) for inp in items]
    assert all(_same(a, t) for a, t in zip(alone, map_in_lockstep(_scaling, items), strict=True))


def test_an_item_that_raises_gets_its_exception_and_the_others_their_numbers():
    def fn(inp):
        if float(inp.overhead_s) == 0.004:
            raise ScalesimError("this one cannot be predicted")
        return _scaling(inp)

    items = [_inputs(i, DDP) for i in range(5)]
    out = map_in_lockstep(fn, items)
    assert isinstance(out[2], ScalesimError) and str(out[2]) == "this one cannot be predicted"
    assert all(_same(_scaling(items[i]), out[i]) for i in (0, 1, 3, 4))


def test_items_past_the_threads_the_process_may_start_run_one_after_another(monkeypatch):
    """A container's thread limit: starting the fourth thread fails ("can't start new thread");
    the three started are batched, the rest run in the calling thread, the same numbers."""
    import threading

    real, starts = threading.Thread.start, []

    def start(thread):
        if len(starts) == 3:
            raise RuntimeError("can't start new thread")
        starts.append(thread)
        real(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    items = [_inputs(i, DDP) for i in range(8)]
    alone = [_scaling(inp) for inp in items]
    assert all(_same(a, t) for a, t in zip(alone, map_in_lockstep(_scaling, items), strict=True))
    assert len(starts) == 3


def test_a_stack_whose_first_member_differs_from_alone_is_not_used(monkeypatch):
    """The safety net: a stacked evaluation that does not reproduce its first member's own
    numbers (here made to differ) is dropped and each member evaluated alone."""
    real = lockstep._stacked

    def off_by_one(inputs):
        stacked = real(inputs)
        return stacked.replace(per_step_s=np.asarray(stacked.per_step_s) + 1.0)

    monkeypatch.setattr(lockstep, "_stacked", off_by_one)
    items = [_inputs(i, DDP) for i in range(4)]
    alone = [_scaling(inp) for inp in items]
    assert all(_same(a, t) for a, t in zip(alone, map_in_lockstep(_scaling, items), strict=True))


def test_a_diagnosis_is_the_same_with_its_draws_in_lockstep(monkeypatch):
    """The report of the seed's inter-server runs (BERT-large's 336 M parameters: 100 draws,
    their held ends and link valley) is the same JSON with the gain-band draws in lockstep as
    one after another."""
    runs = runs_from_records(inter_server(), "runs.csv")
    together = runs_diagnosis.diagnose_runs(runs, 3.36e8).to_json()
    monkeypatch.setattr(runs_diagnosis, "map_in_lockstep",
                        lambda fn, items, batched=True: map_in_lockstep(fn, items, False))
    assert runs_diagnosis.diagnose_runs(runs, 3.36e8).to_json() == together


def _layout_pair(i: int) -> list:
    """A prediction's layout rows and their one-device baseline (``layout_predict.evaluate_rows``'
    call) whose efficiency, links and jitter differ with ``i``."""
    rows, alone = _layouts()
    change = {"efficiency": 0.5 + 0.02 * i, "inter_latency_s": 1e-5 * (1 + i),
              "jitter_cv": 0.01 * i}
    return [rows.replace(**change), alone.replace(**change)]


def test_layout_calls_are_one_call_of_every_threads_inputs(monkeypatch):
    """8 threads each evaluating a layout's rows with their baseline: alone, one
    ``evaluate_layouts`` call each (8); in lockstep the first thread's alone and all 16 inputs
    in one call (2), each thread's results the same bits and shapes."""
    items = [_layout_pair(i) for i in range(8)]
    alone = [layout_step.evaluate_together(pair) for pair in items]
    calls, real = [], layout_step.evaluate_layouts
    monkeypatch.setattr(layout_step, "evaluate_layouts", lambda x: calls.append(1) or real(x))
    together = map_in_lockstep(layout_step.evaluate_together, items)
    assert len(calls) == 2
    for a, t in zip(alone, together, strict=True):
        assert all(lockstep._same_results(x, y) for x, y in zip(a, t, strict=True))


@pytest.mark.parametrize("field", sorted(lockstep.ELEMENTWISE_FIELDS))
def test_every_elementwise_field_is_a_step_input(field):
    """The table names fields the step model has (a renamed field would be stacked never)."""
    assert field in StepInputs.__dataclass_fields__
