"""A traced pipeline's bubble and uneven stages (scalesim/pipeline_trace.py, diagnose --trace).

The 1F1B replay against hand-worked schedules, the fit of the micro-batches, a hand-made GPU
trace of a two-stage pipeline whose every figure is worked out below, and a real gloo pipeline
(torch.distributed.pipelining's Schedule1F1B, tests/trace_job.py --pp-layers)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from trace_job import launch

from scalesim import trace_ranks, traces
from scalesim.pipeline_trace import (
    MOST_MICRO_BATCHES,
    annotated_schedule,
    counted_micro_batches,
    fit_micro_batches,
    replay_1f1b_s,
)
from scalesim.trace_diagnosis import diagnose_traces


def test_even_stages_replay_the_textbook_bubble():
    """(m + p - 1) t: 4 stages of 3 s a micro-batch, 8 micro-batches: 33 s (Narayanan 2021)."""
    assert replay_1f1b_s([3.0] * 4, 8) == pytest.approx(33.0)
    assert replay_1f1b_s([2.0] * 8, 1) == pytest.approx(16.0)  # one micro-batch: serial


def test_uneven_stages_replay_by_hand():
    """Two stages of 3 and 6 s a micro-batch (forward a third), 2 micro-batches. Stage 0 runs
    F0 0-1, F1 1-2, then waits for stage 1's backward; stage 1 runs F0 1-3, B0 3-7, F1 7-9,
    B1 9-13; stage 0 B0 7-9, B1 13-15: 15 s. Even (4.5 s each): 3 x 4.5 = 13.5 s. Half the
    micro-batch (1.5 and 3 s, 4 micro-batches), worked the same way: 13.5 s."""
    assert replay_1f1b_s([3.0, 6.0], 2) == pytest.approx(15.0)
    assert replay_1f1b_s([4.5, 4.5], 2) == pytest.approx(13.5)
    assert replay_1f1b_s([1.5, 3.0], 4) == pytest.approx(13.5)


def test_the_fit_finds_the_micro_batches_of_a_replayed_span():
    rng = random.Random(3)
    for _ in range(30):
        p, m = rng.choice([2, 3, 4, 8]), rng.choice([1, 2, 3, 4, 8, 16, 64])
        compute = np.array([rng.uniform(0.8, 1.6) for _ in range(p)]) * m
        assert fit_micro_batches(compute, replay_1f1b_s(compute / m, m)) == m
    compute = np.array([2.0, 3.0])
    assert fit_micro_batches(compute, 9.0) == 1  # longer than one micro-batch's span (5 s)
    assert fit_micro_batches(compute, 3.0) == MOST_MICRO_BATCHES  # no wait at all


def test_what_the_traces_say_of_the_schedule_must_agree():
    """Receives: the first and last stages' counts agree or none is taken; annotations: every
    rank's, the same micro-batches and stages a rank (GPipe's name no stage: v = 1)."""
    assert counted_micro_batches([4, 4], [4]) == 4
    assert counted_micro_batches([4], [8]) is None
    assert counted_micro_batches([4], [None]) is None and counted_micro_batches([0], [0]) is None
    assert annotated_schedule([[0, 2], [1, 3]], [4, 4]) == (4, 2)
    assert annotated_schedule([[], []], [6, 6]) == (6, 1)
    assert annotated_schedule([[0, 2], [1]], [4, 4]) is None
    assert annotated_schedule([[0], [1]], [4, 0]) is None


# ------------------------------------------------------ a hand-made trace of the schedule above
UNIT_US = 100.0  # one second of the schedule above is 100 us of trace
SCHEDULE = {  # stage -> compute intervals; everything else in the 15-unit step is a receive
    0: [(0, 1), (1, 2), (7, 9), (13, 15)],
    1: [(1, 3), (3, 7), (7, 9), (9, 13)],
}
STEP_UNITS, STEPS = 15.0, 4
# where each stage posts its receives: stage 0 the gradients of micro-batches 0 and 1 (they
# arrive at 7 and 13), stage 1 their activations (at 1 and 2, F1 running at 7)
RECEIVES_AT = {0: [2, 9], 1: [0, 7]}


def _event(name, ts, dur, cat="kernel", tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def _stage_trace(rank: int, desc: str = "PIPELINE_MODEL_PARALLEL_GROUP",
                 host_receives: bool = False, all_reduce: bool = False,
                 step_units: float = STEP_UNITS) -> dict:
    """Rank ``rank``'s trace of the schedule above, STEPS steps of ``step_units`` (units, the
    schedule's 15 or more: a stage waits out the rest of its step in a receive)."""
    group = {"Process Group Name": "1", "Process Group Description": desc, "Group size": 2,
             "Process Group Ranks": "[0, 1]"}
    events = []
    for n in range(1, STEPS + 1):
        t0 = (n - 1) * step_units * UNIT_US
        events += [_event(f"ProfilerStep#{n}", t0, step_units * UNIT_US, "user_annotation", 1),
                   _event(f"ProfilerStep#{n}", t0, step_units * UNIT_US, "gpu_user_annotation")]
        free = 0.0
        for a, b in SCHEDULE[rank]:
            if a > free:  # waiting on the other stage: a receive kernel
                events.append(_event("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                                     t0 + free * UNIT_US, (a - free) * UNIT_US, tid=8, **group))

            events.append(_event("sm90_xmma_gemm_bf16bf16_bf16f32", t0 + a * UNIT_US,
                                 (b - a) * UNIT_US))
            free = b
        if all_reduce:  # another collective on the group, under the compute
            events.append(_event("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
                                 t0 + 3 * UNIT_US, UNIT_US, tid=9, **group))
        if host_receives:  # as recent torch names them, on the host and the device
            name = f"nccl:recv {rank}<-{1 - rank}"
            for at in RECEIVES_AT[rank]:
                events += [_event(name, t0 + at * UNIT_US, 1.0, "user_annotation", 1),
                           _event(name, t0 + at * UNIT_US, 1.0, "gpu_user_annotation")]
        if free < step_units:
            events.append(_event("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                                 t0 + free * UNIT_US, (step_units - free) * UNIT_US, tid=8,
                                 **group))
    config = [{"pg_name": "1", "pg_desc": desc, "pg_size": 2, "ranks": [0, 1]}]
    return {"schemaVersion": 1, "traceEvents": events,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2,
                                "pg_config": config},
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


def _hand_made(tmp_path, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_stage_trace(rank, **kw)))
        paths.append(str(path))
    return trace_ranks.load_traces(paths)


def test_a_traced_pipeline_reads_as_its_schedule(tmp_path):
    """Stage 0 computes 6 units and waits 9, stage 1 computes 12 and waits 3 (0-1, 13-15):
    stage 1 paces it; its span 12 + 3 = 15 replays as 2 micro-batches; against even stages of
    9 without a bubble the pipeline loses 15 - 9 = 6 of the 15-unit step (40 %), 3 of it the
    bubble and 3 the uneven stages. Evening the stages replays at 13.5 (1.5 off the step:
    +11.1 %), and so does halving the bubble."""
    summaries = _hand_made(tmp_path)
    assert [s.median("p2p_exposed_s") for s in summaries] == pytest.approx(
        [9 * UNIT_US * 1e-6, 3 * UNIT_US * 1e-6])
    report = diagnose_traces(summaries, "hand-made")
    pipeline = report.details["pipeline"]
    assert report.details["layout"] == {"dp": 1, "tp": 1, "cp": 1, "pp": 2}
    assert pipeline["pacing_stage"] == 1 and pipeline["micro_batches"] == 2
    unit = UNIT_US * 1e-6
    assert pipeline["bubble_s"] == pytest.approx(3 * unit)
    assert pipeline["uneven_s"] == pytest.approx(3 * unit)
    assert report.cause.key == "pipeline" and report.cause.share == pytest.approx(0.4)
    gains = {r.key: r.gain for r in report.remedies}
    assert gains["pipeline_even"] == pytest.approx(15 / 13.5 - 1)
    assert gains["pipeline_bubble"] == pytest.approx(15 / 13.5 - 1)
    assert report.first_remedy.key in ("pipeline_even", "pipeline_bubble")
    assert "model_parallel_comm" not in [f.key for f in [report.cause, *report.others]]


def test_a_pipeline_without_data_parallelism_gets_its_batch_remedies(tmp_path):
    """dp 1: no exchange for the model to price, so the batch remedies are priced on the
    pipeline itself. 4x the micro-batches: the replay of 8 micro-batches of 3 and 6 units is
    1 + 8 x 6 + 2 = 51, so each more pass of 2 adds (51 - 15) / 3 = 12; the step grows
    15 -> 15 + 3 x 12 = 51 for 4x the samples, +17.6 %. Twice the micro-batch: the traced step
    is all span, so 2x the time for 2x the samples, no change."""
    report = diagnose_traces(_hand_made(tmp_path), "hand-made")
    by_key = {r.key: r for r in report.remedies}
    assert by_key["accumulation"].gain == pytest.approx(4 * 15 / 51 - 1)
    assert by_key["accumulation"].helps and "2 -> 8 a step" in by_key["accumulation"].title
    assert by_key["bigger_batch"].gain == pytest.approx(0.0, abs=1e-12)
    assert by_key["bigger_batch"].verdict == "no change"
    assert "global batch 4x" in by_key["accumulation"].note
    assert any("batch remedies are priced on the traced pipeline" in n for n in report.notes)


def test_pipeline_only_batch_remedies_by_hand(tmp_path):
    """The same pipeline in a 20-unit step with 1 unit of other groups' collectives and a
    2-unit data wait, both per sample: per sample 15 + 1 + 2 = 18, the rest 2 paid once.
    Twice the batch: 2 + 2 x 18 = 38 for 2x the samples, 40 / 38 - 1; 4x the micro-batches:
    each pass 12 + 1 + 2 = 15, 20 + 3 x 15 = 65 for 4x, 80 / 65 - 1."""
    from scalesim.trace_diagnosis import pipeline_only_batch_remedies

    report = diagnose_traces(_hand_made(tmp_path), "hand-made")
    reading = _reading(report)
    unit = UNIT_US * 1e-6
    gains = {r.key: r.gain for r in pipeline_only_batch_remedies(
        reading, 20 * unit, 1 * unit, 2 * unit, "GPU")}
    assert gains["bigger_batch"] == pytest.approx(40 / 38 - 1)
    assert gains["accumulation"] == pytest.approx(80 / 65 - 1)


def _reading(report):
    """The report's pipeline back as a ``PipelineReading``."""
    from scalesim.pipeline_trace import PipelineReading

    fields = PipelineReading.__dataclass_fields__
    return PipelineReading(**{k: v for k, v in report.details["pipeline"].items()
                              if k in fields})


def test_the_pages_stage_chart_and_the_text_table(tmp_path):
    """The Diagnose page draws each stage's compute and waits with the mean compute as a rule;
    the text report lists the stages and the replays."""
    from scalesim.app.diagnose_page import pipeline_stages_chart

    report = diagnose_traces(_hand_made(tmp_path), "hand-made")
    spec = pipeline_stages_chart(report).to_dict()
    bars = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert sorted((b["stage"], b["part"], round(b["ms"], 6)) for b in bars) == [
        ("stage 0", "compute", 0.6), ("stage 0", "sends and receives (exposed)", 0.9),
        ("stage 1", "compute", 1.2), ("stage 1", "sends and receives (exposed)", 0.3)]
    title = spec["title"]
    assert "stage 1 paces it" in (title["text"] if isinstance(title, dict) else title)
    text = report.to_text()
    assert "2 micro-batches, fitted; replayed 1F1B span 1.50, even stages 1.35" in text


def test_a_stage_not_traced_leaves_the_pipeline_unread_with_a_note(tmp_path):
    summaries = _hand_made(tmp_path)[:1]
    report = diagnose_traces(summaries, "one stage")
    assert report.details["pipeline"] is None
    assert any("no traced rank of stage 1 of 2" in n for n in report.notes)


def test_a_real_gloo_pipeline_is_read_from_its_traces(tmp_path):
    """Two gloo ranks run torch.distributed.pipelining's Schedule1F1B (4 micro-batches of 64
    samples), stage 0 one Linear layer of 512, stage 1 three and the loss, over a group named
    PIPELINE_MODEL_PARALLEL_GROUP in pg_config; the ranks' gloo:recv annotations count the 4
    micro-batches (plain Schedule1F1B annotates none of its actions). Stage 1 paces it, so
    evening the stages gains; what the replay leaves
    of the span (the sends' own time, and on a busy machine the ranks' time off the cores)
    doubles with twice the micro-batches, so halving the bubble is priced below the replay's
    own saving."""
    files = launch(tmp_path / "pp", "--pp-layers", "1,3", "--micro-batches", "4",
                   "--batch", "256", "--dim", "512", "--steps", "5")
    summaries = trace_ranks.load_traces(files)
    assert {st.receives for s in summaries for st in s.steps} == {4}
    report = diagnose_traces(summaries, "pp")
    assert report.details["layout"] == {"dp": 1, "tp": 1, "cp": 1, "pp": 2}
    pipeline = report.details["pipeline"]
    compute = [s["compute_s"] for s in pipeline["stages"]]
    # about 3x idle (1 layer against 3 and the loss); on a busy machine an op's time includes
    # the rank's time off the cores, so only the order is asserted
    assert pipeline["pacing_stage"] == 1 and compute[1] > compute[0]
    assert pipeline["micro_batches"] == 4 and pipeline["counted"]
    assert report.cause.key == "pipeline"
    gains = {r.key: r.gain for r in report.remedies}
    assert gains["pipeline_even"] > 0.0
    assert "accumulation" in gains  # priced on the pipeline: dp 1 has no exchange to model
    replay_half = replay_1f1b_s(np.array(compute) / 8, 8)
    unreplayed = max(pipeline["span_s"] - pipeline["replay_s"], 0.0)
    assert pipeline["halved_s"] == pytest.approx(replay_half + unreplayed)


def test_an_interleaved_pipelines_schedule_is_read_off_its_annotations(tmp_path):
    """ScheduleInterleaved1F1B on two gloo ranks, 2 stages each (0 and 2 on rank 0, 1 and 3 on
    rank 1), 4 micro-batches: its "PP:<stage>F<micro-batch>" annotations give m = 4 and v = 2,
    replayed as 8 chunks; the receives alone would have counted 3 x 4 = 12 ((2v - 1) m)."""
    files = launch(tmp_path / "il", "--pp-layers", "1,1", "--virtual-stages", "2",
                   "--micro-batches", "4", "--batch", "128", "--dim", "256", "--steps", "3")
    summaries = trace_ranks.load_traces(files)
    assert [s.schedule_stages for s in summaries] == [[0, 2], [1, 3]]
    assert {st.receives for s in summaries for st in s.steps} == {12}
    report = diagnose_traces(summaries, "interleaved")
    pipeline = report.details["pipeline"]
    assert (pipeline["micro_batches"], pipeline["virtual_stages"]) == (4, 2)
    assert pipeline["counted_from"] == "annotations"
    compute = np.array([s["compute_s"] for s in pipeline["stages"]])
    assert pipeline["replay_s"] == pytest.approx(replay_1f1b_s(compute / 8, 8))
    assert "8 chunks (4 micro-batches x 2 virtual stages a rank)" in report.cause.evidence[2]
    # its DeviceMesh of one dimension reused the default group: read from the annotations
    assert any("read as one pipeline over the 2 ranks" in n for n in report.notes)


def test_sends_beside_other_collectives_on_no_pipeline_group_are_not_a_pipeline(tmp_path):
    """The same kernels on the default group beside an all-reduce (an all-to-all runs on
    SendRecv kernels too, a monitored barrier on gloo's send and recv): no pipeline is read,
    the job is data parallel. With nothing but the sends (torch's PipelineStage without a
    group runs on the default one), it is one pipeline over the ranks, stage by rank."""
    report = diagnose_traces(_hand_made(tmp_path / "dp", desc="default_pg", all_reduce=True),
                             "default group")
    assert report.details["pipeline"] is None
    assert report.details["layout"] == {"dp": 2, "tp": 1, "cp": 1, "pp": 1}
    assert report.cause.key != "pipeline"
    report = diagnose_traces(_hand_made(tmp_path / "pp", desc="default_pg"), "pure pipeline")
    assert report.details["layout"] == {"dp": 1, "tp": 1, "cp": 1, "pp": 2}
    assert report.details["pipeline"]["pacing_stage"] == 1
    assert any("read as one pipeline over the 2 ranks" in n for n in report.notes)


def test_a_remedy_saves_no_more_than_the_traces_lost_to_it():
    """A replay longer than the traced span (a schedule that overlaps more than 1F1B) would
    promise more than was lost: halving the bubble saves at most the pacing stage's waits
    (3 ms of a 15 ms step: +25 %), evening at most the loss against even stages without a
    bubble; a saving of the whole step is held under it (no division by zero)."""
    from scalesim.pipeline_trace import PipelineReading
    from scalesim.trace_diagnosis import pipeline_remedies

    stages = [{"stage": 0, "ranks": [0], "compute_s": 0.006, "wait_s": 0.009},
              {"stage": 1, "ranks": [1], "compute_s": 0.012, "wait_s": 0.003}]
    reading = PipelineReading(stages, 1, 0.015, 0.009, 2, True, 0.020, 0.019, 0.010)
    gains = {r.key: r.gain for r in pipeline_remedies(reading, 0.015)}
    assert gains["pipeline_bubble"] == pytest.approx(0.015 / 0.012 - 1)
    assert gains["pipeline_even"] == pytest.approx(0.015 / 0.014 - 1)
    tiny = {r.key: r.gain for r in pipeline_remedies(reading, 0.001)}
    assert all(np.isfinite(g) and g > 0 for g in tiny.values())


def test_receives_named_with_their_peer_are_counted_once(tmp_path):
    """Recent torch names a NCCL receive with its peer ("nccl:recv 1<-0") on the host and copies
    it onto the device timeline: each of the two a step is counted once, so the micro-batches
    are read (2), not fitted, and the figures stay those of the schedule."""
    summaries = _hand_made(tmp_path, host_receives=True)
    assert {st.receives for s in summaries for st in s.steps} == {2}
    report = diagnose_traces(summaries, "named receives")
    pipeline = report.details["pipeline"]
    assert (pipeline["micro_batches"], pipeline["counted_from"]) == (2, "receives")
    gains = {r.key: r.gain for r in report.remedies}
    assert gains["pipeline_even"] == pytest.approx(15 / 13.5 - 1)


def _cpu_trace(tmp_path, names: list[str]) -> traces.TraceSummary:
    """One CPU rank's trace of two steps, each with a matmul and ``names`` as user
    annotations."""
    events = []
    for n in (1, 2):
        t0 = (n - 1) * 1000.0
        events += [_event(f"ProfilerStep#{n}", t0, 1000.0, "user_annotation", 1),
                   _event("aten::mm", t0 + 10, 500.0, "cpu_op", 1)]
        events += [_event(name, t0 + 20 + i, 1.0, "user_annotation", 1)
                   for i, name in enumerate(names)]
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return trace_ranks.load_traces([str(path)])[0]


def test_schedule_annotations_are_read_as_torch_writes_them(tmp_path):
    """DualPipeV runs some forwards inside an overlapped pair ("PP:(0F3;3B1)OVERLAP_F_B"):
    they count; GPipe's "Forward i" counts only beside its "Backward i" (a forward-only
    schedule, or a user's own "Forward i" in a data-parallel job, is no training pipeline);
    a zero-bubble schedule's split backward (I, W) is marked."""
    dual = _cpu_trace(tmp_path, ["PP:0F0", "PP:0F1", "PP:(0F2;3B0)OVERLAP_F_B", "PP:3F0",
                                 "PP:3F1", "PP:(3F2;0B1)OVERLAP_F_B", "PP:0SEND_F2"])
    assert (dual.schedule_stages, dual.schedule_micro_batches) == ([0, 3], 3)
    assert not dual.schedule_split_backward
    zero_bubble = _cpu_trace(tmp_path, ["PP:0F0", "PP:0I0", "PP:0W0"])
    assert zero_bubble.schedule_micro_batches == 1 and zero_bubble.schedule_split_backward
    gpipe = _cpu_trace(tmp_path, ["Forward 0", "Forward 1", "Backward 0", "Backward 1"])
    assert (gpipe.schedule_stages, gpipe.schedule_micro_batches) == ([], 2)
    forward_only = _cpu_trace(tmp_path, ["Forward 0", "Forward 1", "Forward 2"])
    assert forward_only.schedule_micro_batches == 0


def _gloo_rank(rank: int) -> dict:
    """One gloo rank of a pipelined data-parallel job, by hand (µs): each 1,000 µs step computes
    0-500, all-reduces 100-300 under that compute, and sends 500-1000 with nothing else running."""
    events = []
    for n in (1, 2, 3):
        t0 = (n - 1) * 1000.0
        events += [_event(f"ProfilerStep#{n}", t0, 1000.0, "user_annotation", 1),
                   _event("aten::mm", t0, 500.0, "cpu_op", 1),
                   _event("gloo:all_reduce", t0 + 100, 200.0, "cpu_op", 2),
                   _event("gloo:send", t0 + 500, 500.0, "cpu_op", 1)]
    return {"schemaVersion": 1, "traceEvents": events,
            "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2}}


def test_a_pipelines_sends_are_not_read_as_the_exchange_on_gloo(tmp_path):
    """gloo names no group with its collectives: the exchange's model had read every collective
    as the data-parallel exchange's, the sends (and their waits) too, so all-reduces hidden
    under compute looked mostly exposed and "overlap the exchange" was offered. By hand: the
    all-reduce is 0.2 ms a step, all of it under compute; the sends 0.5 ms, none."""
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_gloo_rank(rank)))
        paths.append(str(path))
    summaries = trace_ranks.load_traces(paths)
    step = summaries[0].steps[0]
    assert (step.comm_s, step.overlap_s) == pytest.approx((700e-6, 200e-6))
    assert (step.collective_s, step.collective_hidden_s) == pytest.approx((200e-6, 200e-6))
    report = diagnose_traces(summaries, "gloo dp x pp")
    overlap = next(r for r in report.remedies if r.key == "overlap")
    assert not overlap.applicable and overlap.note == "overlap is already on", overlap


def _loader_rank(rank: int, iterator: str) -> dict:
    """One gloo rank of a data-parallel job, by hand (µs): each 1,000 µs step waits 600 on its
    DataLoader (``iterator``), computes 600-900, and all-reduces 900-1000 under nothing."""
    events = []
    for n in (1, 2, 3):
        t0 = (n - 1) * 1000.0
        events += [_event(f"ProfilerStep#{n}", t0, 1000.0, "user_annotation", 1),
                   _event(f"enumerate(DataLoader)#{iterator}.__next__", t0, 600.0,
                          "user_annotation", 1),
                   _event("aten::mm", t0 + 600, 300.0, "cpu_op", 1),
                   _event("gloo:all_reduce", t0 + 900, 100.0, "cpu_op", 2)]
    return {"schemaVersion": 1, "traceEvents": events,
            "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2}}


def _loader_report(tmp_path, iterator: str):
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"{iterator}{rank}.json"
        path.write_text(json.dumps(_loader_rank(rank, iterator)))
        paths.append(str(path))
    summaries = trace_ranks.load_traces(paths)
    return summaries, diagnose_traces(summaries, iterator)


def test_a_loader_in_the_training_process_is_serial_with_the_step(tmp_path):
    """num_workers=0 (``_SingleProcessDataLoaderIter``): the 0.6 ms of loading a step is the
    training process's own work, not a supply beside the step, so hiding the 0.1 ms exposed
    all-reduce still gains (by hand 1000/900 - 1 = +11.1 % at most), and worker processes take
    the loading off: +150 % (1000/400 - 1). As a supply at today's rate (worker processes:
    ``_MultiProcessingDataLoaderIter``), the loader caps the step and the overlap gains nothing."""
    summaries, report = _loader_report(tmp_path, "_SingleProcessDataLoaderIter")
    assert all(s.loader_in_process for s in summaries)
    gains = {r.key: r for r in report.remedies}
    loader = gains["loader"]
    assert loader.title == "Load the input in DataLoader worker processes (num_workers > 0)"
    assert loader.gain == pytest.approx(1.5) and report.first_remedy.key == "loader"
    assert 0.0 < gains["overlap"].gain <= 1000 / 900 - 1 + 1e-9
    workers, supplied = _loader_report(tmp_path, "_MultiProcessingDataLoaderIter")
    assert not any(s.loader_in_process for s in workers)
    other = {r.key: r for r in supplied.remedies}
    assert other["loader"].title.startswith("Cache the input")
    assert other["overlap"].gain == pytest.approx(0.0, abs=1e-9)
