"""The fit blends overlap on and off by a fitted share; the scenario its remedies run is one of
the two (on from a share of one half). Where the share lies well inside (0, 1) the remedies'
step misses the fit's (and the measured) step, and every gain is measured from it: a note says
by how much. Before, BERT-large runs on DGX A100s made by the model without overlap and with
1 MiB buckets fitted an overlap of 53 %, their remedies ran the largest run 18 % faster than
measured, the overlap remedy "already on", and nothing said so."""

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
    truth = Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32, overlap=False, bucket_mib=1.0)
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
    report = cases.diagnosis(case)
    assert not [n for n in report.notes if n.startswith(NOTE)]


def _miss(report) -> float:
    """The remedies' largest-run step over the fit's, less 1 (what the note reports)."""
    fitted = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    return predict(fitted, scenario)[0].step_time_s / report.table[-1]["model_step_time_s"] - 1.0


def test_the_inter_server_runs_get_the_note_only_where_their_size_is_not_given():
    """The inter-server runs (BERT-large, overlap on, made by the model) fitted at their own
    gradient (336 M parameters, 2 bytes each, the runs' buckets) overlap 84 %, and the scenario
    with overlap on runs their largest run 2.8 % under the fit's step, inside the decisive 3 %:
    no note. Without --params the fit lays its buckets out for a nominal 1 GB gradient, overlaps
    83 %, and the scenario misses by 3.07 %, past 3 %: the note says so. Before session 48 (the
    straggler stretch, docs/model.md §3) that miss was 2.996 %, a hair inside, and this case sat
    with the two above; the note's rule is unchanged, the figure crossed it."""
    own = diagnose_runs(parse_runs_text(cases.to_csv(cases.inter_server()), "runs.csv"),
                        params=336e6, wire_bytes_per_param=2.0)
    assert abs(_miss(own)) < own.decisive_gain
    assert not [n for n in own.notes if n.startswith(NOTE)]
    nominal = cases.diagnosis("inter_server")
    miss = _miss(nominal)
    assert miss == pytest.approx(-0.0306, abs=0.001) and abs(miss) >= nominal.decisive_gain
    [note] = [n for n in nominal.notes if n.startswith(NOTE)]
    assert f"({miss:+.0%})" in note and "with overlap on" in note
