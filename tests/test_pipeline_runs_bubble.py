"""Runs of a pipelined model: the replicas' fill and drain is part of the fitted model, so the
remedies that add micro-batches shrink it (docs/model.md §7, docs/diagnose.md "Runs that split
the model"). Before, a replica's step was k micro-steps of its whole compute, and "accumulate 4x"
on a pp-2 job predicted the exchange's amortisation alone."""

import pytest

from scalesim.errors import ScalesimError
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Scenario, Workload


def test_a_pipelined_replica_computes_k_plus_its_bubble_micro_steps():
    """By hand: 4 micro-batches of 2 samples at 10 ms a sample, 3 micro-steps of fill and drain
    (1F1B on 4 stages): (4 + 3) x 20 ms = 140 ms a step, of it 80 ms compute and 60 ms bubble
    (its own part, as a layout's: it had been inside compute_s, so predict said bubble 0);
    without the bubble 80 ms."""
    base = dict(devices=1, devices_per_node=1, micro_batch=2, accumulation=4, overhead_s=0.0,
                per_sample_s=0.01, optimizer_step_s=0.0, backward_fraction=2 / 3, params=1e6,
                wire_bytes_per_param=4.0, intra_latency_s=1e-5, intra_busbw_GBps=100.0,
                inter_latency_s=1e-5, inter_busbw_GBps=10.0)
    piped = evaluate(StepInputs(**base, bubble_micro_steps=3.0))
    assert piped.step_time_s == pytest.approx(0.14)
    assert piped.compute_s == pytest.approx(0.08) and piped.bubble_s == pytest.approx(0.06)
    flat = evaluate(StepInputs(**base))
    assert flat.compute_s == pytest.approx(0.08) and flat.bubble_s == pytest.approx(0.0)


@pytest.mark.parametrize("columns, cells, bubble", [
    ("pp", "4", 3.0),  # 1F1B assumed: pp - 1
    ("pp,schedule", "4,1F1B", 3.0),  # as Megatron prints it
    ("pp,schedule", "4,gpipe", 3.0),
    ("pp,virtual_stages", "4,2", 1.5),  # interleaved implied: (pp - 1)/v
    ("pp,schedule,virtual_stages", "4,interleaved,3", 1.0),
    ("pp,schedule", "4,zb", 1.0),  # ZB-H1: a third of 1F1B's (Qi et al. 2023)
    # as torchtitan and torch.distributed.pipelining name them
    ("pp,schedule,virtual_stages", "4,Interleaved1F1B,2", 1.5),
    ("pp,schedule", "4,ZB-H1", 1.0),
    ("pp,schedule", "4,ScheduleGPipe", 3.0),
    ("tp", "4", 0.0),  # no pipeline
])
def test_the_bubble_of_a_runs_file_follows_its_schedule(columns, cells, bubble):
    text = f"devices,nodes,step_time_s,{columns}\n8,1,1.0,{cells}\n16,2,1.1,{cells}\n"
    runs = parse_runs_text(text, "r.csv")
    assert runs.rows[0].pipeline_bubble == pytest.approx(bubble)


@pytest.mark.parametrize("columns, rows, message", [
    ("schedule", ["1f1b", "1f1b"], "schedule and virtual_stages describe a pipeline: they need pp > 1"),
    ("pp,schedule", ["2,interleaved", "2,interleaved"], "the interleaved schedule needs virtual_stages >= 2"),
    ("pp,schedule,virtual_stages", ["2,1f1b,2", "2,1f1b,2"],
     "virtual_stages 2 needs the interleaved schedule"),
    ("pp,schedule", ["2,1f1b", "2,gpipe"], "give one schedule per runs file"),
    ("pp,schedule", ["2,zigzag", "2,zigzag"], "schedule"),
])
def test_a_schedule_that_cannot_run_is_refused_in_one_line(columns, rows, message):
    text = (f"devices,nodes,step_time_s,{columns}\n8,1,1.0,{rows[0]}\n"
            f"16,2,1.1,{rows[1]}\n")
    with pytest.raises(ScalesimError, match=message) as info:
        parse_runs_text(text, "r.csv")
    assert "\n" not in str(info.value)


# 1 -> 4 replicas of a pp-2 job inside one server, each step 2 micro-batches, scaling perfectly:
# nothing to gain from the exchange, so the accumulation remedy's gain is the bubble's alone
PIPELINE = """devices,nodes,step_time_s,per_device_batch,accumulation,pp
2,1,1.50,8,2,2
4,1,1.50,8,2,2
6,1,1.50,8,2,2
8,1,1.50,8,2,2
"""


def _accumulation_gain(report) -> float:
    (remedy,) = [r for r in report.remedies if r.key == "accumulation"]
    return remedy.gain


def test_accumulating_4x_the_micro_batches_of_a_pipeline_shrinks_its_bubble():
    """By hand, 1F1B on 2 stages: a step of 2 micro-batches takes 2 + 1 stage micro-steps, of
    8 it takes 8 + 1: per sample 3/2 against 9/8 of a micro-step, +33.3 %. The same runs
    without a pipeline (tp 2) gain nothing from it."""
    report = diagnose_runs(parse_runs_text(PIPELINE, "r.csv"), params=1e9)
    assert _accumulation_gain(report) == pytest.approx(3 / 2 / (9 / 8) - 1, abs=0.01)
    assert report.details["fit"]["bubble_micro_steps"] == 1.0
    # the fitted compute is one stage's micro-step: 1.5 s = (2 + 1) x 8 samples x 62.5 ms
    assert report.details["fit"]["parameters"]["per_sample_s"] == pytest.approx(
        1.5 / 3 / 8, rel=0.01)
    plain = diagnose_runs(parse_runs_text(PIPELINE.replace(",pp\n", ",tp\n"), "r.csv"),
                          params=1e9)
    assert abs(_accumulation_gain(plain)) < 0.01


def test_the_fitted_profile_carries_the_bubble_and_predicts_the_runs():
    """The profile diagnose fits (and the app opens) predicts the largest run's step as the fit
    does, bubble included; the bubble field refuses a transformer (its layout sets the bubble)."""
    from scalesim.schemas import Profile

    report = diagnose_runs(parse_runs_text(PIPELINE, "r.csv"), params=1e9)
    profile = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    assert profile.workload.pipeline_bubble_micro_steps == 1.0
    (row,) = predict(profile, scenario)
    assert row.step_time_s == pytest.approx(report.table[-1]["model_step_time_s"], rel=1e-6)
    # the bubble is its own part of the step (it had been inside compute_s, bubble_s 0): one
    # micro-step of a stage, and the parts sum to the step
    micro_step = profile.compute.overhead_s + row.micro_batch * profile.compute.per_sample_s
    assert row.bubble_s == pytest.approx(micro_step, rel=1e-6)
    assert row.compute_s + row.bubble_s + row.exposed_comm_s + row.straggler_s \
        + (row.data_stall_s or 0.0) == pytest.approx(row.step_time_s, rel=1e-9)
    from scalesim.sweep import sweep

    swept = sweep(profile, scenario.model_copy(update={"devices": [1]}),
                  {"devices": [8, 16]}).columns
    assert swept["bubble_s"] == pytest.approx([micro_step] * 2, rel=1e-6)
    shape = default_profile().workload.model_dump()
    with pytest.raises(ValueError, match="a transformer's bubble comes from its layout"):
        Workload.model_validate({**shape, "pipeline_bubble_micro_steps": 1.0,
                                 "transformer": {"layers": 2, "hidden": 64, "heads": 4,
                                                 "seq_len": 16, "vocab": 100}})


# strong scaling of a 1F1B pipeline of 4 stages at a fixed global batch of 256: each replica's
# micro-batches fall 128 -> 16, and with them its step, (k + 3) x 2 samples x 50 ms, by hand
STRONG = """devices,nodes,step_time_s,per_device_batch,global_batch,accumulation,tp,pp
8,1,13.1,2,256,128,2,4
16,2,6.7,2,256,64,2,4
32,4,3.5,2,256,32,2,4
64,8,1.9,2,256,16,2,4
"""


def test_small_work_under_strong_scaling_names_the_bubble_it_grows():
    """Compute per sample rises 51 -> 59 ms as each replica runs fewer micro-batches: the fill
    and drain, 3 stage micro-steps, is 3/131 = 2 % of a replica's compute at 128 micro-batches
    and 3/19 = 16 % at 16. Before, the finding's evidence was a fixed cost per micro-step alone
    (1.5 ms against 98 ms of per-sample work), which cannot account for it."""
    report = diagnose_runs(parse_runs_text(STRONG, "r.csv"), params=1e9)
    assert report.cause.key == "small_work"
    assert ("the pipeline's fill and drain, 3 stage micro-steps a step: 2% of a replica's "
            "compute at 128 micro-batches -> 16% at 16") in report.cause.evidence


@pytest.mark.parametrize("cells", [("2,1f1b,", "2,,"), ("2,interleaved,2", "2,,2"),
                                   ("2,1F1B,1", "2,,1")])
def test_an_empty_schedule_cell_is_the_default_the_other_rows_name(cells):
    """An empty cell takes the column's default (docs/diagnose.md): 1f1b, or interleaved where
    virtual_stages > 1. Rows that name that schedule beside rows that leave it empty run one
    pipeline; they had been refused as two schedules ('run 1 ... 1f1b, run 2 as (none
    given)'), and the note says the schedule was given."""
    text = (f"devices,nodes,step_time_s,pp,schedule,virtual_stages\n8,1,1.0,{cells[0]}\n"
            f"16,2,1.1,{cells[1]}\n")
    runs = parse_runs_text(text, "r.csv")
    bubble = runs.rows[0].pipeline_bubble
    assert [r.pipeline_bubble for r in runs.rows] == [bubble, bubble]
    report = diagnose_runs(runs, params=1e9)
    assert "assumed: no schedule column" not in report.notes[0]


def test_a_pipeline_beside_runs_without_one_is_refused_as_two_splits():
    text = "devices,nodes,step_time_s,pp,schedule\n8,1,1.0,1,\n16,2,1.1,2,1f1b\n"
    with pytest.raises(ScalesimError, match="give one split per runs file"):
        parse_runs_text(text, "r.csv")


def test_strong_scaling_extrapolates_with_fewer_micro_steps_as_the_runs_did():
    """The runs kept 2 samples a micro-batch and ran 128 -> 16 micro-batches: extrapolated to
    16 and 64 replicas the job runs 8 and 2 micro-batches of 2 (by hand, steps of (8 + 3) and
    (2 + 3) x 2 x 50 ms plus the exchange), not 16 micro-batches of 1 and of a quarter sample,
    which had read 1.75x faster at 64 replicas; a note says so."""
    from scalesim.fit_runs import extrapolation_layout, splits_by_accumulation
    from scalesim.runs import replica_runs

    runs = replica_runs(parse_runs_text(STRONG, "r.csv"))
    assert splits_by_accumulation(runs)
    layout = extrapolation_layout(runs, [16, 64], 1)
    assert layout.accumulation.tolist() == [8.0, 2.0] and layout.micro_batch.tolist() == [2.0, 2.0]
    assert extrapolation_layout(runs, [512], 1).accumulation.tolist() == [1.0]  # then b shrinks
    report = diagnose_runs(parse_runs_text(STRONG, "r.csv"), params=1e9,
                           extrapolate_to=[128, 512])
    per_sample = report.details["fit"]["parameters"]["per_sample_s"]
    for e, k in zip(report.details["extrapolation"], (8, 2), strict=True):
        compute_only = 256 / ((k + 3) * 2 * per_sample)  # no exchange: the most it can be
        assert 0.5 * compute_only <= e["samples_per_s"] <= compute_only
    assert any("ran fewer micro-steps as they grew: so does the extrapolation" in n
               for n in report.notes)
    # the planner's link cannot keep the micro-batch: the note says it matches the largest run
    assert any("holds the largest run's 16 micro-steps at its global batch instead" in n
               for n in report.notes)
    # runs that kept their micro-steps keep them
    held = STRONG.replace(",2,256,128,", ",16,256,16,").replace(",2,256,64,", ",8,256,16,")
    held = held.replace(",2,256,32,", ",4,256,16,").replace(",2,256,16,", ",2,256,16,")
    assert not splits_by_accumulation(replica_runs(parse_runs_text(held, "r.csv")))


def test_strong_scaling_accumulates_2x_where_4x_does_not_split():
    """A fixed global batch of 256 over 8 replicas at 16 micro-batches of 2: 4x the micro-steps
    would need half a sample each, 2x runs 32 of 1, which shrinks the pipeline's bubble share
    from 3/19 to 3/35 (the remedy had been 'not applicable'); and the split is judged per
    model replica (dp), not per device: 16 H100s as dp 8 x tp 2 at a global batch of 32 split
    into 4x the micro-steps, which 16 devices would not."""
    from scalesim.profiles import resolve_profile
    from scalesim.remedies import rank_remedies

    report = diagnose_runs(parse_runs_text(STRONG, "r.csv"), params=1e9)
    (acc,) = [r for r in report.remedies if r.key == "accumulation"]
    assert acc.applicable and acc.title == "Accumulate gradients over 32 micro-steps (now 16)"
    assert "same global batch, 2x smaller micro-batches" in acc.note and acc.gain > 0
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    scenario = Scenario(devices=[16], global_batch=32, accumulation=1,
                        layout={"tp": 2})
    _, ranked = rank_remedies(profile, scenario, 16)
    (acc,) = [r for r in ranked if r.key == "accumulation"]
    assert acc.applicable, acc.reason
    assert acc.title == "Accumulate gradients over 4 micro-steps (now 1)"
