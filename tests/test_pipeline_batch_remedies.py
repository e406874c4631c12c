"""The batch remedies of a data-parallel x pipeline job's traces, priced on its pipeline
(``diagnosis.pipeline_batch_remedies``, ``pipeline_trace.more_micro_batches_s``; docs/diagnose.md
"Pipeline bubble and uneven stages"): a bigger per-device batch doubles the pipeline's whole span,
more micro-batches replay its schedule with the bubble paid once a step. Before, the exchange's
model held the pipeline's loss as a fixed time of each micro-step, an upper bound for the first
and a lower bound for the second.

A hand-made GPU trace of dp 2 x pp 2 (4 ranks): each pipeline runs the two-stage 1F1B of
tests/test_pipeline_trace.py (stage 0 computes 6 units and waits 9, stage 1 computes 12 and waits
3, 2 micro-batches, a 15-unit span), then every rank all-reduces its gradients over its
data-parallel group for 1 unit, exposed: a 16-unit step."""

from __future__ import annotations

import json

import pytest

from scalesim import traces
from scalesim.diagnosis import diagnose_traces
from scalesim.pipeline_trace import more_micro_batches_s, replay_1f1b_s

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


def _rank_trace(rank: int) -> dict:
    pp = next(n for n, r in PP_GROUPS.items() if rank in r)
    dp = next(n for n, r in DP_GROUPS.items() if rank in r)
    stage = PP_GROUPS[pp].index(rank)
    pp_args = _group_args(pp, PP_GROUPS[pp], "PIPELINE_MODEL_PARALLEL_GROUP")
    dp_args = _group_args(dp, DP_GROUPS[dp], "DATA_PARALLEL_GROUP")
    events = []
    for n in range(1, STEPS + 1):
        t0 = (n - 1) * STEP_UNITS * UNIT_US
        events += [_event(f"ProfilerStep#{n}", t0, STEP_UNITS * UNIT_US, "user_annotation", 1),
                   _event(f"ProfilerStep#{n}", t0, STEP_UNITS * UNIT_US, "gpu_user_annotation")]
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


@pytest.fixture
def report(tmp_path):
    paths = []
    for rank in range(4):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_rank_trace(rank)))
        paths.append(str(path))
    return diagnose_traces(traces.load_traces(paths), "hand-made dp x pp")


def test_more_micro_batches_replay_by_hand():
    """Stages of 3 and 6 units a micro-batch (a third forward): 2 micro-batches span 15 units,
    8 span 1 + 8 x 6 + 2 = 51 (stage 1 paces the steady state; stage 0's first forward before
    it, its last backward after it)."""
    assert replay_1f1b_s([3.0, 6.0], 2) == pytest.approx(15.0)
    assert replay_1f1b_s([3.0, 6.0], 8) == pytest.approx(51.0)


def test_the_batch_remedies_are_priced_on_the_pipeline(report):
    """dp 2 x pp 2, a 16-unit step of which a 15-unit pipeline span and 1 unit of exchange.
    Twice the per-device batch: the span doubles, 16 + 15 = 31 units for twice the samples,
    +3.2 %; 4x the micro-batches (2 -> 8, fitted): the replay 15 -> 51 units, the step
    16 - 15 + 51 = 52 for 4x the samples, +23.1 %."""
    unit = UNIT_US * 1e-6
    assert report.details["layout"] == {"dp": 2, "tp": 1, "cp": 1, "pp": 2}
    pipeline = report.details["pipeline"]
    assert pipeline["micro_batches"] == 2 and pipeline["span_s"] == pytest.approx(15 * unit)
    remedies = {r.key: r for r in report.remedies}
    bigger, more = remedies["bigger_batch"], remedies["accumulation"]
    assert bigger.gain == pytest.approx(2 * 16 / 31 - 1)
    assert more.gain == pytest.approx(4 * 16 / 52 - 1)
    assert more.title == ("Accumulate gradients over 4x the pipeline's micro-batches (2 -> 8 a "
                          "step, fitted)")
    assert "span 1.5 ms -> 5.1 ms" in more.note and "global batch 4x" in more.note
    assert "doubles with the micro-batch" in bigger.note and "activations fit" in bigger.note
    assert bigger.verdict == more.verdict == "remedy"
    notes = " ".join(report.notes)
    assert "upper bound" not in notes and "priced on the pipeline" in notes


def test_the_replay_helper_reads_the_reading(report):
    """``more_micro_batches_s`` of the report's own reading: 4 x 2 micro-batches, 51 units."""
    from scalesim.pipeline_trace import read_pipeline

    unit = UNIT_US * 1e-6
    reading = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [9 * unit], 1: [3 * unit]},
                            {0: [0, 2], 1: [1, 3]})
    assert reading.micro_batches == 2 and not reading.counted
    assert more_micro_batches_s(reading, 4) == pytest.approx(51 * unit)
    # counted: the time the replay leaves is paid 4x (4x the messages)
    counted = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [9 * unit], 1: [4 * unit]},
                            {0: [0, 2], 1: [1, 3]}, micro_batches=2)
    assert counted.unreplayed_s == pytest.approx(1 * unit)
    assert more_micro_batches_s(counted, 4) == pytest.approx(55 * unit)
