"""The fit blends overlap on and off by a fitted share; the scenario its remedies run is one of
the two (on from a share of one half). Where the share lies well inside (0, 1) the remedies'
step misses the fit's (and the measured) step, and every gain is measured from it: a note says
by how much. Before, BERT-large runs on DGX A100s made by the model without overlap and with
1 MiB buckets fitted an overlap of 53 %, their remedies ran the largest run 18 % faster than
measured, the overlap remedy "already on", and nothing said so.

Session 56: the runs here are made by the model in DeepSpeed's stage 0 (``zero_framework
deepspeed``, strategy ddp), which reduces from its own buffers: PyTorch DDP's bucket copies
(docs/model.md §4 "Their copies, in time", 336e6 x 8 B / 2,039 GB/s = 1.32 ms on every run of
2 devices or more, none on one) would be a step from 1 to 2 devices that the runs fit cannot
write as compute (its fitted profile folds the optimizer into the per-sample time:
optimizer_step_s 0, so no copies), only as exchange: made under PyTorch DDP the 1 MiB runs fit an
overlap of 96 % (no longer inside the blend) and the 25 MiB overlapped runs 91 % (missing by
-5.3 %, no longer under half the decisive gain). These tests are about the blend, not the
copies; DeepSpeed's runs are the runs they were written on (phi 0.66, 0.98, 0.89)."""

from __future__ import annotations

import diagnose_cases as cases
import pytest

from scalesim import presets
from scalesim.predict import predict
from scalesim.profiles import profile_from_presets
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Profile, Scenario

NOTE = "the fit overlaps"


def _report(rows):
    return diagnose_runs(parse_runs_text(cases.to_csv(rows), "runs.csv"), params=336e6)


def test_a_blended_overlap_the_scenario_cannot_run_is_said():
    profile = profile_from_presets(presets.get_hardware("dgx-a100"),
                                   presets.get_workload("bert-large"))
    truth = Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32, overlap=False, bucket_mib=1.0,
                     zero_framework="deepspeed")  # no DDP bucket copies (the module's note)
    rows = [{"devices": r.devices, "nodes": r.nodes, "step_time_s": r.step_time_s,
             "per_device_batch": 32} for r in predict(profile, truth)]
    report = _report(rows)
    phi = report.details["fit"]["parameters"]["overlap"]
    assert 0.1 < phi < 0.9
    fitted = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    step = predict(fitted, scenario)[0].step_time_s
    measured = rows[-1]["step_time_s"]
    assert abs(step / measured - 1.0) > report.decisive_gain  # the miss the note is about
    [note] = [n for n in report.notes if n.startswith(NOTE)]
    assert f"{phi:.0%} of the exchange" in note
    assert f"({step / report.table[-1]['model_step_time_s'] - 1.0:+.0%})" in note
    assert "the overlap remedy finds nothing left to hide" in note


@pytest.mark.parametrize("case", ["input_pipeline", "small_work"])
def test_runs_whose_scenario_gives_the_fits_step_get_no_note(case):
    if case == "small_work":  # made without DDP's bucket copies (the module's note): resnet50's
        # 25.6e6 x 16 B / 2,039 GB/s = 0.2 ms on 2-8 devices fit as a 95 % overlapped exchange
        runs = parse_runs_text(cases.to_csv(cases.small_work("deepspeed")), "runs.csv")
        report = diagnose_runs(runs)
    else:
        report = cases.diagnosis(case)
    assert not [n for n in report.notes if n.startswith(NOTE)]


def _miss(report) -> float:
    """The remedies' largest-run step over the fit's, less 1 (what the note reports)."""
    fitted = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    return predict(fitted, scenario)[0].step_time_s / report.table[-1]["model_step_time_s"] - 1.0


def _made(overlap: bool):
    """BERT-large on DGX A100s, micro-batch 32, 25 MiB buckets, made by the model with overlap
    on or off (DeepSpeed's stage 0: no DDP bucket copies, the module's note), and diagnosed at
    their own 336 M parameters."""
    profile = profile_from_presets(presets.get_hardware("dgx-a100"),
                                   presets.get_workload("bert-large"))
    truth = Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32, overlap=overlap,
                     bucket_mib=25.0, zero_framework="deepspeed")
    rows = [{"devices": r.devices, "nodes": r.nodes, "step_time_s": r.step_time_s,
             "per_device_batch": 32} for r in predict(profile, truth)]
    return _report(rows)


@pytest.mark.parametrize("overlap", [True, False])
def test_the_note_is_given_from_the_decisive_gain_and_not_inside_it(overlap):
    """The fit's largest step is the blend phi x on + (1 - phi) x off of the scenario's two
    cases (checked below), so a scenario with overlap on misses it by
    -(1 - phi) x (off - on) / fit. Runs made with overlap on fit phi = 0.98: -(0.018 x 40.3 ms)
    / 63.1 ms = -1.16 %, under half the decisive 3 % (2.8 % since session 56): no note. Made
    with it off (the fit still rounds to on): phi = 0.89, -(0.109 x 41.4 ms) / 70.0 ms =
    -6.44 %, over twice 2.8 %: the note, with that figure. Both sit inside the blend, so the
    threshold alone decides. (Session 49: this replaced the seed's inter-server runs, whose
    misses, -2.82 % at their own size and
    -3.07 % without --params, sat a hair either side of 3 % and crossed it under session 48's
    straggler stretch.)"""
    report = _made(overlap)
    phi = report.details["fit"]["parameters"]["overlap"]
    fitted = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    assert scenario.overlap  # phi >= 1/2: the remedies run overlap on
    on, off = (predict(fitted, scenario.model_copy(update={"overlap": o}))[0].step_time_s
               for o in (True, False))
    fit = report.table[-1]["model_step_time_s"]
    assert fit == pytest.approx(phi * on + (1 - phi) * off, rel=1e-6) and on < fit < off
    miss = _miss(report)
    assert miss == pytest.approx(-(1 - phi) * (off - on) / fit, rel=1e-6)
    notes = [n for n in report.notes if n.startswith(NOTE)]
    if overlap:
        assert -report.decisive_gain / 2 < miss < 0.0
        assert notes == []
    else:
        assert miss < -2 * report.decisive_gain
        [note] = notes
        assert f"({miss:+.0%})" in note and "with overlap on" in note
