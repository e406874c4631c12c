"""A trace's exchange is priced at its own time, not at the waits for peers inside its
collectives (``trace_collectives.exchange_transfer_s``)."""

from __future__ import annotations

import json

import pytest

from scalesim import trace_ranks
from scalesim.trace_collectives import exchange_transfer_s, pipeline_stages
from scalesim.trace_diagnosis import diagnose_traces


def _event(name, ts_us, dur_us, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us,
            "dur": dur_us, "args": {}}


def _ddp_traces(tmp_path, compute_ms: list[float], step_ms: float = 8.0, steps: int = 5,
                config: list | None = None, recv_ms: float = 0.0):
    """One gloo trace per rank: each step computes, then all-reduces until the step's end (the
    all-reduce ends when the last rank arrives, so a rank that computes less waits in it);
    ``recv_ms`` of a point-to-point receive before the compute."""
    paths = []
    for rank, compute in enumerate(compute_ms):
        events = []
        for n in range(steps):
            t = n * step_ms * 1e3
            events += [_event(f"ProfilerStep#{n + 1}", t, step_ms * 1e3, cat="user_annotation"),
                       _event("aten::mm", t + recv_ms * 1e3, compute * 1e3),
                       _event("gloo:all_reduce", t + (recv_ms + compute) * 1e3,
                              (step_ms - recv_ms - compute) * 1e3, cat="user_annotation",
                              tid=2)]
            if recv_ms:
                events.append(_event("gloo:recv", t, recv_ms * 1e3, cat="user_annotation",
                                     tid=2))
        info = {"backend": "gloo", "rank": rank, "world_size": len(compute_ms)}
        if config:
            info["pg_config"] = config
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"traceEvents": events, "distributedInfo": info}))
        paths.append(str(path))
    return trace_ranks.load_traces(paths)


def test_the_exchange_is_the_last_arrivals_time_and_the_slow_process_comes_first(tmp_path):
    """Four ranks, 8 ms steps: rank 3 computes 7 ms, the others 5 ms, then an all-reduce that
    takes 1 ms once all have arrived (the early ranks sit 3 ms in it). The exchange's own time
    is 1 ms. Priced at the median rank's 3 ms, "overlap the exchange" came first at +30 %
    (slow process +24 %); hiding 1 ms of an 8 ms step gains 1/7 at most, and without the slow
    process the step is 5 + 1 = 6 ms, +33 %."""
    summaries = _ddp_traces(tmp_path, [5.0, 5.0, 5.0, 7.0])
    report = diagnose_traces(summaries, "t")
    degrees = {"pp": 1}
    assert exchange_transfer_s(summaries, pipeline_stages(summaries, degrees)) \
        == pytest.approx(1e-3)
    gains = {r.key: r.gain for r in report.remedies}
    assert report.cause.key == "slow_device"
    assert gains["slow_device"] == pytest.approx(8 / 6 - 1, abs=0.03)
    assert 0 < gains["overlap"] <= 1 / 7 + 1e-9
    assert report.remedies[0].key == "slow_device"


def test_ranks_that_wait_alike_keep_their_exchange(tmp_path):
    """Equal ranks (no one waits): the exchange is every rank's collective time, 2 ms."""
    summaries = _ddp_traces(tmp_path, [6.0, 6.0])
    assert exchange_transfer_s(summaries, (1, [], "")) == pytest.approx(2e-3)


def test_each_pipeline_stage_exchanges_its_own_shard(tmp_path):
    """dp 2 x pp 2 on gloo (pg_config names the pipeline groups {0, 2} and {1, 3}), 8 ms steps
    that receive 1 ms first: stage 0's replicas (ranks 0, 1) compute 5.5 and 5 ms, so sit 1.5
    and 2 ms in the all-reduce (the second waits 0.5 ms); stage 1's compute 3 ms and sit 4 ms.
    The step waits for the slower stage's own exchange, 4 ms; the least over all ranks
    (1.5 ms) is stage 0's."""
    config = [{"pg_name": "1", "pg_desc": "PIPELINE_MODEL_PARALLEL_GROUP", "pg_size": 2,
               "ranks": [0, 2]},
              {"pg_name": "2", "pg_desc": "PIPELINE_MODEL_PARALLEL_GROUP", "pg_size": 2,
               "ranks": [1, 3]}]
    summaries = _ddp_traces(tmp_path, [5.5, 5.0, 3.0, 3.0], recv_ms=1.0, config=config)
    from scalesim.trace_collectives import traced_layout

    staged = pipeline_stages(summaries, traced_layout(summaries))
    assert staged[0] == 2 and staged[1] == [0, 0, 1, 1]
    assert exchange_transfer_s(summaries, staged) == pytest.approx(4e-3)
    assert exchange_transfer_s(summaries, (1, [], "")) == pytest.approx(1.5e-3)


def test_ranks_with_no_step_in_common_keep_their_waits_in_the_exchange(tmp_path):
    """The ranks of the first test traced different steps (no step number in common): no step
    compares them, so no straggler wait is counted, and the exchange keeps the ranks' own time,
    waits included: the median rank's 3 ms (by hand: 8 - 5), so the model's step is the traced
    8 ms (5 ms compute + 3 ms). The least rank's 1 ms had rebuilt it as 6 ms, and overlap
    gained +15 %, more than hiding the all-reduce can."""
    summaries = _ddp_traces(tmp_path, [5.0, 5.0, 5.0, 7.0])
    for n, s in enumerate(summaries):  # rank n's steps renumbered past the others'
        for st in s.steps:
            st.step += 100 * n
    assert exchange_transfer_s(summaries, (1, [], "")) == pytest.approx(3e-3)
    report = diagnose_traces(summaries, "t")
    assert report.cause.key != "slow_device"  # no step compared


def _hidden_by_the_last_rank(tmp_path):
    """Two gloo ranks, 10 ms steps: rank 0 computes 3 ms, then sits in the all-reduce to the
    step's end (7 ms, all of it waiting, exposed); rank 1 computes 9 ms, its all-reduce from
    5 ms to 10 ms (4 ms of it under its backward, 1 ms exposed): DDP overlapping, as the last
    rank to arrive shows."""
    paths = []
    for rank, (compute, start) in enumerate([(3.0, 3.0), (9.0, 5.0)]):
        events = []
        for n in range(5):
            t = n * 10e3
            events += [_event(f"ProfilerStep#{n + 1}", t, 10e3, cat="user_annotation"),
                       _event("aten::mm", t, compute * 1e3),
                       _event("gloo:all_reduce", t + start * 1e3, (10 - start) * 1e3,
                              cat="user_annotation", tid=2)]
        path = tmp_path / f"h{rank}.json"
        path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
            "backend": "gloo", "rank": rank, "world_size": 2}}))
        paths.append(str(path))
    return trace_ranks.load_traces(paths)


def test_the_exchange_hides_as_the_last_rank_hid_it(tmp_path):
    """The exchange is the last rank's 5 ms, of which 4 ms hid (80 %, session 46). Its hidden
    share over every rank's collectives, (4 + 0) / (5 + 7) = 33 %, counted rank 0's 7 ms wait,
    exposed by nature, as exchange left unhidden: the model ran the job without overlap and
    offered "Overlap gradient exchange with backward" at +12.1 % to a job that overlaps."""
    from scalesim.trace_collectives import traced_dp_comm, traced_layout

    summaries = _hidden_by_the_last_rank(tmp_path)
    comm, hidden = traced_dp_comm(summaries, pipeline_stages(summaries, traced_layout(summaries)))
    assert (comm, hidden) == (pytest.approx(5e-3), pytest.approx(4e-3))
    report = diagnose_traces(summaries, "t")
    overlap = next(r for r in report.remedies if r.key == "overlap")
    assert not overlap.applicable and "already on" in overlap.note
