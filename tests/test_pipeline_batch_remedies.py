"""The batch remedies of a data-parallel x pipeline job's traces, with the pipeline's loss split
as each change meets it (``trace_diagnosis.pipeline_batch_remedies``,
``pipeline_trace.accumulation_split_s``; docs/diagnose.md "Pipeline bubble and uneven stages"):
a bigger per-device batch grows the pipeline's whole span with the batch, more micro-batches add
passes of its replayed steady state with the fill and drain paid once a step; the data wait,
the exchange and the straggler wait stay the exchange's model's. Before, that model held the
pipeline's loss as a fixed time of each micro-step: +28.0 % and +4.9 % on the trace below, an
upper bound for the first and a lower bound for the second.

A hand-made GPU trace of dp 2 x pp 2 (4 ranks): each pipeline runs the two-stage 1F1B of
tests/test_pipeline_trace.py (stage 0 computes 6 units and waits 9, stage 1 computes 12 and waits
3, 2 micro-batches, a 15-unit span), then every rank all-reduces its gradients over its
data-parallel group for 1 unit, exposed: a 16-unit step."""

from __future__ import annotations

import json

import pytest

from scalesim import trace_ranks
from scalesim.pipeline_trace import accumulation_split_s, read_pipeline, replay_1f1b_s
from scalesim.trace_diagnosis import diagnose_traces

UNIT_US = 100.0
SCHEDULE = {0: [(0, 1), (1, 2), (7, 9), (13, 15)], 1: [(1, 3), (3, 7), (7, 9), (9, 13)]}
SPAN_UNITS, STEP_UNITS, STEPS = 15.0, 16.0, 4
PP_GROUPS = {"1": [0, 1], "2": [2, 3]}
DP_GROUPS = {"3": [0, 2], "4": [1, 3]}
SEND_RECV = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


def _event(name, ts, dur, cat="kernel", tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def _group_args(name: str, ranks: list[int], desc: str) -> dict:
    return {"Process Group Name": name, "Process Group Description": desc,
            "Group size": len(ranks), "Process Group Ranks": str(ranks)}


def _rank_trace(rank: int, data_wait_units: float = 0.0) -> dict:
    pp = next(n for n, r in PP_GROUPS.items() if rank in r)
    dp = next(n for n, r in DP_GROUPS.items() if rank in r)
    stage = PP_GROUPS[pp].index(rank)
    pp_args = _group_args(pp, PP_GROUPS[pp], "PIPELINE_MODEL_PARALLEL_GROUP")
    dp_args = _group_args(dp, DP_GROUPS[dp], "DATA_PARALLEL_GROUP")
    events, step_units = [], STEP_UNITS + data_wait_units
    for n in range(1, STEPS + 1):
        start = (n - 1) * step_units * UNIT_US
        events += [_event(f"ProfilerStep#{n}", start, step_units * UNIT_US, "user_annotation", 1),
                   _event(f"ProfilerStep#{n}", start, step_units * UNIT_US,
                          "gpu_user_annotation")]
        if data_wait_units:  # the step waits on its DataLoader first
            events.append(_event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                                 start, data_wait_units * UNIT_US, "user_annotation", 1))
        t0 = start + data_wait_units * UNIT_US
        free = 0.0
        for a, b in SCHEDULE[stage]:
            if a > free:  # waiting on the other stage
                events.append(_event(SEND_RECV, t0 + free * UNIT_US, (a - free) * UNIT_US,
                                     tid=8, **pp_args))
            events.append(_event("sm90_xmma_gemm_bf16bf16_bf16f32", t0 + a * UNIT_US,
                                 (b - a) * UNIT_US))
            free = b
        if free < SPAN_UNITS:
            events.append(_event(SEND_RECV, t0 + free * UNIT_US, (SPAN_UNITS - free) * UNIT_US,
                                 tid=8, **pp_args))
        events.append(_event("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)",
                             t0 + SPAN_UNITS * UNIT_US, (STEP_UNITS - SPAN_UNITS) * UNIT_US,
                             tid=9, **dp_args))
    config = [{"pg_name": name, "pg_desc": desc, "pg_size": len(ranks), "ranks": ranks}
              for groups, desc in ((PP_GROUPS, "PIPELINE_MODEL_PARALLEL_GROUP"),
                                   (DP_GROUPS, "DATA_PARALLEL_GROUP"))
              for name, ranks in groups.items()]
    return {"schemaVersion": 1, "traceEvents": events,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 4,
                                "pg_config": config},
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


def _report(tmp_path, data_wait_units: float = 0.0):
    paths = []
    for rank in range(4):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_rank_trace(rank, data_wait_units)))
        paths.append(str(path))
    return diagnose_traces(trace_ranks.load_traces(paths), "hand-made dp x pp")


@pytest.fixture
def report(tmp_path):
    return _report(tmp_path)


def test_more_micro_batches_replay_by_hand():
    """Stages of 3 and 6 units a micro-batch (a third forward): 2 micro-batches span 15 units,
    8 span 1 + 8 x 6 + 2 = 51 (stage 1 paces the steady state; stage 0's first forward before
    it, its last backward after it)."""
    assert replay_1f1b_s([3.0, 6.0], 2) == pytest.approx(15.0)
    assert replay_1f1b_s([3.0, 6.0], 8) == pytest.approx(51.0)


def test_the_batch_remedies_are_priced_on_the_pipeline(report):
    """dp 2 x pp 2, a 16-unit step of which a 15-unit pipeline span and 1 unit of exchange.
    Twice the per-device batch: the span doubles, 16 + 15 = 31 units for twice the samples,
    +3.2 %; 4x the micro-batches (2 -> 8, fitted): 4 passes of the 12-unit steady state and the
    3-unit fill and drain once, 16 - 15 + 51 = 52 units for 4x the samples, +23.1 %. The model
    adds the same small wait on the devices' speed spread (1.32 %, docs/model.md §6) to both
    steps: within 0.3 point."""
    unit = UNIT_US * 1e-6
    assert report.details["layout"] == {"dp": 2, "tp": 1, "cp": 1, "pp": 2}
    pipeline = report.details["pipeline"]
    assert pipeline["micro_batches"] == 2 and pipeline["span_s"] == pytest.approx(15 * unit)
    remedies = {r.key: r for r in report.remedies}
    bigger, more = remedies["bigger_batch"], remedies["accumulation"]
    assert bigger.gain == pytest.approx(2 * 16 / 31 - 1, abs=0.003)
    assert more.gain == pytest.approx(4 * 16 / 52 - 1, abs=0.003)
    assert more.title == ("Accumulate gradients over 4x the pipeline's micro-batches (2 -> 8 a "
                          "step, fitted)")
    assert more.note.startswith("each more pass of 2 micro-batch chunks adds 1.2 ms (the "
                                "replayed 1F1B's steady state and the sends' own time), the "
                                "fill and drain 0.3 ms paid once a step")
    assert bigger.note.startswith("the pipeline's span 1.5 ms (its stages' compute, bubble and "
                                  "sends) and the other groups' collectives grow with the "
                                  "micro-batch")
    assert bigger.verdict == more.verdict == "remedy"
    notes = " ".join(report.notes)
    assert "upper bound" not in notes and "priced on the pipeline" in notes


def test_a_loader_bound_job_gains_nothing_from_more_samples(tmp_path):
    """The same job waiting 20 units a step on its DataLoader: the input is the cause, and the
    batch remedies stay the model's "no change" (more samples a step need as much more input),
    as they were before the pipeline priced them."""
    report = _report(tmp_path, data_wait_units=20.0)
    assert report.cause.key == "input_pipeline" and report.first_remedy.key == "loader"
    remedies = {r.key: r for r in report.remedies}
    assert remedies["bigger_batch"].verdict == remedies["accumulation"].verdict == "no change"


def test_the_split_of_the_span_by_hand():
    """Stages of 6 and 12 units a step, 2 micro-batches: one more pass adds the steady state
    (51 - 15) / 3 = 12 units, the fill and drain 15 - 12 = 3 once; counted, with a unit the
    replay leaves (a 16-unit span), a pass adds 13 and the fill and drain stay 3."""
    unit = UNIT_US * 1e-6
    fitted = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [9 * unit], 1: [3 * unit]},
                           {0: [0, 2], 1: [1, 3]})
    assert fitted.micro_batches == 2 and not fitted.counted
    assert accumulation_split_s(fitted, 4) == pytest.approx((12 * unit, 3 * unit))
    counted = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [9 * unit], 1: [4 * unit]},
                            {0: [0, 2], 1: [1, 3]}, micro_batches=2)
    assert accumulation_split_s(counted, 4) == pytest.approx((13 * unit, 3 * unit))
    # m fitted at its floor: what one micro-batch's schedule cannot explain grows per pass
    floor = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [24 * unit], 1: [18 * unit]},
                          {0: [0], 1: [1]})
    assert floor.micro_batches == 1
    per_pass, once = accumulation_split_s(floor, 4)
    steady = (replay_1f1b_s([6.0, 12.0], 4) - replay_1f1b_s([6.0, 12.0], 1)) / 3 * unit
    assert per_pass == pytest.approx(steady + (30 - 18) * unit) and once == pytest.approx(
        30 * unit - per_pass)


def test_a_real_gloo_dp_x_pp_job_is_read_and_its_batch_remedies_split_its_loss(dp_pp_traces):
    """Four gloo ranks: two replicas of the 1 + 3 layer Schedule1F1B pipeline
    (tests/trace_job.py --pp-replicas 2), each stage's ranks all-reducing their gradients over a
    DATA_PARALLEL_GROUP: read as dp 2 x pp 2 from pg_config, 4 micro-batches counted from the
    receives, and the batch remedies are the pipeline's (titles and notes); their sizes depend
    on the machine's load, so only their presence is asserted."""
    report = diagnose_traces(trace_ranks.load_traces(dp_pp_traces), "dp x pp")
    assert report.details["layout"] == {"dp": 2, "tp": 1, "cp": 1, "pp": 2}
    pipeline = report.details["pipeline"]
    assert pipeline["micro_batches"] == 4 and pipeline["counted"]
    remedies = {r.key: r for r in report.remedies}
    more = remedies["accumulation"]
    assert more.title == "Accumulate gradients over 4x the pipeline's micro-batches (4 -> 16 a step)"
    assert "the fill and drain" in more.note
    assert remedies["bigger_batch"].note.startswith("the pipeline's span")


def test_the_fill_and_drain_are_not_an_optimizer_step_zero_shards(tmp_path, monkeypatch):
    """The model that prices 4x the micro-batches pays the 3-unit fill and drain once a step.
    It is the schedule's idle, not an optimizer update: sharding the optimizer state (DDP ->
    ZeRO-1 over the 2 replicas, the same bytes sent) leaves it whole. Before, it went in as
    ``optimizer_step_s`` and ZeRO-1 halved it: 16 -> 14.5 units, sharding +10.28 % (by hand
    16 / 14.5 - 1 = 10.34 %, less the device-spread wait the model adds to both steps) in that
    model; the report took only its accumulation remedy, which is the same either way."""
    from scalesim import trace_diagnosis

    models = []
    real = trace_diagnosis.pipeline_batch_remedies

    def keep(pipeline, model, mp_exposed_s, loss_s):
        models.append((pipeline, model, mp_exposed_s + loss_s))
        return real(pipeline, model, mp_exposed_s, loss_s)

    monkeypatch.setattr(trace_diagnosis, "pipeline_batch_remedies", keep)
    report = _report(tmp_path)
    (pipeline, model, fixed), = models
    unit = UNIT_US * 1e-6
    _, once = accumulation_split_s(pipeline, 4)
    assert once == pytest.approx(3 * unit) and fixed == pytest.approx(6 * unit)
    _, ranked = model(0.0, once, fixed - once)
    priced = {r.key: r for r in ranked}
    assert priced["sharding"].title.startswith("Shard optimizer state (ddp -> zero1")
    assert priced["sharding"].gain == pytest.approx(0.0, abs=1e-9)
    # the same model's 4x the micro-batches is the report's: 16 - 15 + 51 = 52 units
    more = {r.key: r for r in report.remedies}["accumulation"]
    assert priced["accumulation"].gain == pytest.approx(more.gain, rel=1e-12)
    assert more.gain == pytest.approx(4 * 16 / 52 - 1, abs=0.003)
