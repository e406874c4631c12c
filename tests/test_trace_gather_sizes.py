"""Session 39: a DDP job that all-gathers a small tensor (a metric) every step was read as
ZeRO-2 off its collectives' counts and times; where the traces record the messages' sizes
(``trace_comm_calls.input_elements``) the exchange is read off the elements gathered against those
reduced (``trace_collectives.traced_exchange``). Hand-made gloo traces for the rule, real
2-rank gloo jobs (tests/trace_job.py --gather-group, --fsdp) for the whole path."""

from __future__ import annotations

import json

import pytest
from trace_job import assert_finished_calls, launch

from scalesim import trace_ranks
from scalesim.trace_collectives import traced_exchange
from scalesim.trace_diagnosis import diagnose_traces

PARAMS = 263_169  # the all-reduced gradient of each step, elements


def event(name, ts_us, dur_us, dims=None):
    args = {} if dims is None else {"Input Dims": [list(dims)], "Input type": ["float"]}
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1,
            "ts": ts_us, "dur": dur_us, "args": args}


def trace(rank, gather_elements, sizes=True, steps=4):
    """``steps`` 1000 us steps of a 2-rank gloo job: one 300 us all-reduce of ``PARAMS``
    elements and one 200 us all-gather of ``gather_elements`` (each rank's input) a step, the
    sizes as record_shapes=True writes them (``sizes``) or none; counts and times pass the
    sizeless rule (1 gather a reduction, 40 % of the collective time)."""
    events = []
    for n in range(steps):
        t = n * 1000.0
        events += [
            event(f"ProfilerStep#{n + 1}", t, 1000.0),
            event("aten::mm", t + 10.0, 400.0),
            event("gloo:all_reduce", t + 420.0, 300.0, [PARAMS] if sizes else None),
            event("gloo:all_gather", t + 730.0, 200.0, [gather_elements] if sizes else None),
        ]
    for e in events:
        if e["name"] == "aten::mm":
            e["cat"] = "cpu_op"
    return {"distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2},
            "traceEvents": events}


def summaries_of(tmp_path, gather_elements, sizes=True):
    paths = []
    for r in (0, 1):
        path = tmp_path / f"rank{r}.json"
        path.write_text(json.dumps(trace(r, gather_elements, sizes)))
        paths.append(str(path))
    return trace_ranks.load_traces(paths)


def test_the_collectives_record_the_elements_put_in(tmp_path):
    (s, _) = summaries_of(tmp_path, 1)
    assert s.collectives["gloo:all_reduce"] == pytest.approx(
        {"count": 4, "total_s": 1200e-6, "elements": 4 * PARAMS, "sized": 4,
         "aside": 0, "aside_s": 0.0, "aside_elements": 0.0})
    assert s.collectives["gloo:all_gather"]["elements"] == 4


@pytest.mark.parametrize("gather_elements, strategy", [
    (1, "ddp"),                # 1 x 2 ranks per 263,169 reduced: a metric
    (50_000, "ddp"),           # 100,000 / 263,169 = 0.38, under 0.5
    (PARAMS // 2, "zero2"),    # a shard of half the parameters x 2 ranks: 1.0
])
def test_sizes_decide_whether_the_gathers_are_the_parameters(tmp_path, gather_elements, strategy):
    """The counts pass (1 gather a reduction, 40 % of the time): before session 39 all three
    read as ZeRO-2; the elements gathered (each rank's input x 2 ranks) against those reduced
    decide. A 1-element gather (2 gathered, under 1 % of the 263,169-element all-reduce) is
    set aside before the reading (session 42, ``trace_comm_calls.no_gradient``), so no gather is left to
    say anything of."""
    summaries = summaries_of(tmp_path, gather_elements)
    exchange, note = traced_exchange(summaries)
    assert exchange.strategy == strategy
    aside = {"all-gather": 4} if 2 * gather_elements < 0.01 * PARAMS else {}
    assert [s.set_aside for s in summaries] == [aside] * 2
    if aside:
        assert note == ""
    elif strategy == "ddp":
        gathered = 2 * 4 * 2 * gather_elements  # ranks' traces x steps x group ranks x input
        assert (f"their sizes say {gathered:,} elements all-gathered for {2 * 4 * PARAMS:,} "
                "all-reduced") in note and "read as DDP" in note
    else:
        assert "all-gathered elements per all-reduced element 1 (the messages' sizes), read " \
               "as zero2" in note


def test_without_sizes_the_counts_decide_and_the_note_says_the_limit(tmp_path):
    """No Input Dims: the count rule stands (a metric gathered once a reduction reads as
    ZeRO-2), and the note says why a DDP job may read so and how to say otherwise."""
    exchange, note = traced_exchange(summaries_of(tmp_path, 1, sizes=False))
    assert exchange.strategy == "zero2"
    assert "all-gathers per all-reduce 1, read as zero2" in note
    assert ("The traces record no message sizes (record_shapes=True records gloo's; NCCL "
            "kernels carry theirs in recent torch): a DDP job that all-gathers a metric once "
            "every two reductions or more often reads alike; give --strategy ddp for one") in note


# ---------------------------------------------------------------- real gloo jobs


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """2-rank gloo jobs of 4 steps with record_shapes (tests/trace_job.py): DDP all-gathering
    its 1-element loss over a second group (METRICS) each step; FSDP2 SHARD_GRAD_OP."""
    base = tmp_path_factory.mktemp("gather_sizes")
    common = ("--steps", "4", "--dim", "256", "--batch", "16", "--record-shapes")
    return {
        "metric": launch(base / "metric", *common, "--gather-group", "METRICS"),
        "grad_op": launch(base / "grad_op", *common, "--fsdp", "grad-op"),
    }


@pytest.mark.slow
def test_a_real_ddp_jobs_metric_gather_is_not_zero2(jobs):
    """The MLP of width 256 (131,841 parameters) all-reduces in one DDP bucket a step: 1
    gather a reduction, past the count rule's half (its time share decides the rest: 30 % at
    width 512 in the session's run, past 15 %, so read as ZeRO-2); its sizes, 2 x 4 elements
    gathered a rank against 4 x 131,841 reduced, say DDP whatever the times (each finished
    call counted with its size: ``assert_finished_calls``)."""
    summaries = trace_ranks.load_traces(jobs["metric"])
    for s in summaries:
        assert_finished_calls(s, {"gloo:all_gather": 4, "gloo:all_reduce": 4})
        gathers, reduces = s.collectives["gloo:all_gather"], s.collectives["gloo:all_reduce"]
        assert gathers["elements"] == gathers["count"]  # one element a step
        assert reduces["elements"] == reduces["count"] * 131_841
    report = diagnose_traces(summaries, "metric")
    assert report.details["exchange"]["strategy"] == "ddp"


@pytest.mark.slow
def test_a_real_fsdp_jobs_gathers_are_the_parameters_by_size(jobs):
    """FSDP2 SHARD_GRAD_OP on 2 ranks gathers each unit's half once per all-reduce of it:
    elements gathered x 2 ranks = elements all-reduced (1.0), ZeRO-2."""
    report = diagnose_traces(trace_ranks.load_traces(jobs["grad_op"]), "grad-op")
    assert report.details["exchange"]["strategy"] == "zero2"
    assert any("all-gathered elements per all-reduced element 1 (the messages' sizes), read "
               "as zero2" in n for n in report.notes)
