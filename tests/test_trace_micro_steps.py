"""Session 39: the micro-steps a step (gradient accumulation) read off profiler traces
(``traces.summarise``: the forwards of the DDP / FSDP module, else the DataLoader fetches), and
what reads them: calibrate --from-trace's forward+backward of one micro-step and diagnose
--trace's accumulation remedy. Hand-made traces for the rules, a real 2-rank gloo DDP job of 4
micro-steps a step (tests/trace_job.py --accumulate 4, under DDP no_sync) for the whole path."""

from __future__ import annotations

import json

import pytest
from trace_job import launch

from scalesim import trace_ranks, traces
from scalesim.sources.trace_compute import read_rank, read_runs
from scalesim.trace_diagnosis import diagnose_traces

DDP_FORWARD = "DistributedDataParallel.forward"
FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def event(name, ts_us, dur_us, cat="user_annotation", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us,
            "dur": dur_us, "args": {}}


def write(tmp_path, name, events, rank=0):
    path = tmp_path / name
    path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                    "world_size": 2},
                                "traceEvents": events}))
    return path


def steps_of(micro, forward=DDP_FORWARD, fetch=True, steps=3, step_us=1000.0):
    """``steps`` profiler steps of ``step_us``, each of ``micro`` micro-steps: a DataLoader
    fetch (10 us) then a forward (``forward``; None: none) of 100 us, one per
    ``step_us / micro``."""
    events = []
    for n in range(steps):
        t = n * step_us
        events.append(event(f"ProfilerStep#{n + 1}", t, step_us))
        for m in range(micro):
            at = t + m * step_us / micro
            if fetch:
                events.append(event(FETCH, at, 10.0))
            if forward:
                events.append(event(forward, at + 20.0, 100.0))
            events.append(event("aten::mm", at + 30.0, 50.0, cat="cpu_op"))
    return events


def test_the_wrapper_forwards_count_the_micro_steps(tmp_path):
    """4 DDP forwards a step: 4 micro-steps, read from them (not the fetches, which agree here;
    a step's fetches are the fallback only)."""
    s = traces.summarise(write(tmp_path, "r.json", steps_of(4)))
    assert [st.micro_steps for st in s.steps] == [4, 4, 4]
    assert (s.micro_steps, s.micro_steps_from) == (4, DDP_FORWARD)


def test_a_plain_module_is_counted_by_its_data_loader_fetches(tmp_path):
    """No DDP / FSDP forward (a plain module): 2 DataLoader fetches a step, 2 micro-steps; a
    GPU trace's copy of the fetch (gpu_user_annotation) is not counted again."""
    events = steps_of(2, forward=None)
    events += [dict(e, cat="gpu_user_annotation", tid=7) for e in events if e["name"] == FETCH]
    s = traces.summarise(write(tmp_path, "r.json", events))
    assert (s.micro_steps, s.micro_steps_from) == (2, traces.DATA_FETCHES)
    count, words = trace_ranks.traced_micro_steps([s])
    assert count == 2 and words == ("the traces show 2 micro-steps a step (DataLoader fetches "
                                    "in each profiler step)")


def test_fsdp1_units_nested_in_the_roots_forward_count_once(tmp_path):
    """FSDP1 writes FullyShardedDataParallel.forward for every unit, nested in the root's: 3
    micro-steps a step whose root forward holds two units' is 3, not 9; FSDP2's
    FSDP::root_pre_forward (the root's only) counts as one each."""
    fsdp1 = "FullyShardedDataParallel.forward"
    events = steps_of(3, forward=fsdp1)
    events += [event(fsdp1, e["ts"] + 10.0, 30.0) for e in list(events) if e["name"] == fsdp1]
    events += [event(fsdp1, e["ts"] + 50.0, 30.0) for e in list(events)
               if e["name"] == fsdp1 and e["dur"] == 100.0]
    s = traces.summarise(write(tmp_path, "r.json", events))
    assert [st.micro_steps for st in s.steps] == [3, 3, 3] and s.micro_steps_from == fsdp1
    s2 = traces.summarise(write(tmp_path, "r2.json", steps_of(2, forward="FSDP::root_pre_forward")))
    assert (s2.micro_steps, s2.micro_steps_from) == (2, "FSDP::root_pre_forward")


def test_neither_forward_nor_fetch_is_said_not_read(tmp_path):
    s = traces.summarise(write(tmp_path, "r.json", steps_of(4, forward=None, fetch=False)))
    assert s.micro_steps is None and s.micro_steps_from == ""
    assert [st.micro_steps for st in s.steps] == [None] * 3
    count, words = trace_ranks.traced_micro_steps([s])
    assert count is None and "is not read: a step is taken as one micro-step" in words


def test_the_count_most_steps_show_is_the_traces(tmp_path):
    """Steps of 2, 2 and 3 forwards: 2; of a tie, the larger; a count of 0 is none read."""
    assert traces.most_steps_count([2, 2, 3]) == 2
    assert traces.most_steps_count([2, 3]) == 3
    assert traces.most_steps_count([0, 0, 1]) is None
    assert traces.most_steps_count([None, None]) is None


def calibrate_trace(micro):
    """One 1000 us CPU step of ``micro`` DDP forwards (no fetch, no communication) and a
    50 us optimizer step at its end."""
    events = steps_of(micro, fetch=False, steps=1)
    events.append(event("Optimizer.step#SGD.step", 900.0, 50.0))
    return events


@pytest.mark.parametrize("micro", [1, 4])
def test_calibrate_times_one_micro_step(tmp_path, micro):
    """forward+backward of one micro-step = (step - exposed comm - data wait - optimizer) / k:
    (1000 - 0 - 0 - 50) / 4 = 237.5 us at 4 forwards a step, 950 us at 1 (before session 39,
    950 us whatever the count)."""
    rank = read_rank(write(tmp_path, "r.json", calibrate_trace(micro)))
    assert rank.fwd_bwd_s == [pytest.approx(950e-6 / micro)]


# ---------------------------------------------------------------- a real job, 4 micro-steps a step


@pytest.fixture(scope="module")
def accumulating(tmp_path_factory):
    """A 2-rank gloo DDP job, 4 micro-batches of 16 a step (3 under no_sync), 4 steps."""
    out = tmp_path_factory.mktemp("accumulate") / "job"
    return launch(out, "--steps", "4", "--dim", "256", "--batch", "16", "--record-shapes",
                  "--accumulate", "4")


@pytest.mark.slow
def test_a_real_accumulating_job_reads_4_micro_steps(accumulating, ddp_trace_jobs):
    summaries = trace_ranks.load_traces(accumulating)
    for s in summaries:
        assert [st.micro_steps for st in s.steps] == [4] * 4
        assert s.micro_steps_from == DDP_FORWARD
    # one micro-step a step in the shared DDP jobs
    assert {s.micro_steps for s in trace_ranks.load_traces(ddp_trace_jobs["loader"])} == {1}
    report = diagnose_traces(summaries, "accumulate")
    titles = {r.key: r.title for r in report.remedies}
    assert titles["accumulation"] == ("Accumulate gradients over 16 micro-steps (the traces "
                                      "show 4 micro-steps a step)")
    # session 44: each of the 4 forwards a step runs the micro-batch of 16 (record_shapes)
    assert {s.micro_batch for s in summaries} == {16}
    assert titles["bigger_batch"] == ("Double the per-process batch (16 -> 32, from the traces' "
                                      "input shapes)")
    assert ("the traces show 4 micro-steps a step (DistributedDataParallel.forward calls in "
            "each profiler step)") in report.notes


@pytest.mark.slow
def test_a_real_accumulating_jobs_calibration_is_per_micro_step(accumulating):
    """Each rank-step's forward+backward is its own time without the optimizer over 4."""
    (run,) = read_runs({16: accumulating})
    assert run.micro_steps()[0] == 4
    for rank in run.ranks:
        for st, fb, opt in zip(rank.summary.steps, rank.fwd_bwd_s, rank.optimizer_s, strict=True):
            own = st.step_s - st.exposed_comm_s - st.data_wait_s - opt
            assert fb == pytest.approx(own / 4) and fb > 0


# ---------------------------------------------------------------- the remedies' model of k micro-steps


@pytest.mark.parametrize("strategy, shard, k, busbw", [
    ("ddp", 0, 4, 1.5),     # one all-reduce a step whatever k: 2 x 3/4 of 1e8 B in 0.1 s
    ("zero3", 0, 2, 4.5),   # gathers twice and reduce-scatters in each micro-step: 3k x 3/4
    ("zero3", 2, 2, 4.0),   # 3k x 1/2 in shard groups of 2, then k x 2 x 1/2 of half the bytes
])
def test_the_traced_model_runs_the_traced_micro_steps(monkeypatch, strategy, shard, k, busbw):
    """The remedies' model accumulates over the k micro-steps the traces show: each a k-th of
    the compute (0.8 s / k), the exchange's link priced on the bytes k micro-steps send (a
    ZeRO-3 step of 2 micro-steps sends 6 units, not 3), so the model's step is the traced one:
    compute k x 0.8 / k, exchange 0.1 s, overlap off, and the step as at k = 1."""
    from types import SimpleNamespace

    import scalesim.trace_diagnosis as trace_diagnosis
    from scalesim.fit_runs import RunsExchange
    from scalesim.predict import predict

    seen = []
    monkeypatch.setattr(trace_diagnosis, "model_remedies",
                        lambda profile, scenario, *a, **kw: seen.append((profile, scenario))
                        or (None, []))
    cr = {"step_s": 1.0, "compute_s": 0.8, "comm_s": 0.1, "data_wait_s": 0.0,
          "overlap_share": 0.0, "idle_s": 0.0, "straggler_wait_s": 0.0}
    rows = []
    for micro_steps in (None, k):
        trace_diagnosis._trace_remedies(cr, [SimpleNamespace(world_size=4, device="gpu")],
                                        "comm_growth", RunsExchange(strategy, shard_group=shard),
                                        micro_steps=micro_steps)
        rows.append(predict(*seen[-1])[0])
    profile, scenario = seen[-1]
    assert scenario.accumulation == k and profile.compute.per_sample_s == pytest.approx(0.8 / k)
    assert profile.hardware.intra_node.busbw_GBps == pytest.approx(busbw, rel=1e-12)
    one, row = rows
    assert (row.compute_s, row.comm_total_s, row.exposed_comm_s) == pytest.approx((0.8, 0.1, 0.1))
    assert row.step_time_s == pytest.approx(one.step_time_s, rel=1e-12)


# ---------------------------------------------------------------- session 40: a forward with no backward


BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"


def with_eval_forward(forward=DDP_FORWARD, steps=3):
    """``steps`` 1000 us steps, each of 2 training micro-steps (a fetch at +0 / +300 us, the
    forward 100 us after it, a backward op 150 us after the fetch) and then an evaluation micro-
    step at +700 us: a fetch and a forward (under torch.no_grad) with no backward op."""
    events = []
    for n in range(steps):
        t = n * 1000.0
        events.append(event(f"ProfilerStep#{n + 1}", t, 1000.0))
        for at, trains in ((t, True), (t + 300.0, True), (t + 700.0, False)):
            events.append(event(FETCH, at, 10.0))
            if forward:
                events.append(event(forward, at + 20.0, 100.0))
            if trains:
                events.append(event(BACKWARD, at + 150.0, 80.0, cat="cpu_op"))
    return events


@pytest.mark.parametrize("forward, source", [(DDP_FORWARD, DDP_FORWARD),
                                             (None, traces.DATA_FETCHES)])
def test_an_evaluation_forward_is_no_micro_step(tmp_path, forward, source):
    """2 forward+backward pairs and 1 forward with no backward a step: 2 micro-steps, counted
    from the DDP forwards or, for a plain module, the fetches (before session 40: 3, the
    evaluation counted as a micro-step)."""
    s = traces.summarise(write(tmp_path, "r.json", with_eval_forward(forward)))
    assert [st.micro_steps for st in s.steps] == [2, 2, 2]
    assert (s.micro_steps, s.micro_steps_from) == (2, source)


def test_with_backward_keeps_the_starts_a_backward_follows():
    """Starts 0, 10, 20 s; backward ops at 5 and 25 s: the first (5 < 10) and the last (25,
    after it) trained, the second (nothing in [10, 20)) did not; no backward op at all: every
    start (the trace cannot tell)."""
    import numpy as np

    starts = np.array([0.0, 10.0, 20.0])
    assert traces.with_backward(starts, np.array([5.0, 25.0])).tolist() == [0.0, 20.0]
    assert traces.with_backward(starts, np.array([])).tolist() == [0.0, 10.0, 20.0]
    assert traces.backward_op("ReluBackward1", "cpu_op")
    assert traces.backward_op(BACKWARD, "cpu_op") and not traces.backward_op("aten::mm", "cpu_op")
