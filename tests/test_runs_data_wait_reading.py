"""Runs' data wait read as traces read theirs (``runs_data_wait``, through
``trace_data_wait.read_wait_slope`` and ``as_read``): a loader that paces the job, a fixed cost of
each fetch, or undecided (both gains). Before (session 47), ``diagnose_cases.inter_server`` with a
constant 3 ms fetch added to every run (``data_wait_s`` 0.003) fitted the wait into the compute
per sample (2.02 ms), "Double the per-device batch" +80.8 % doubled a fixed cost, and the loader
remedy said the input "paces the smaller runs, not this one" with no gain of removing it."""

from __future__ import annotations

import json

import diagnose_cases as cases
import numpy as np
import pytest
from cli_harness import kept_diagnoses, run_cli

from scalesim import runs_diagnosis
from scalesim.fit_runs import fit_runs, fitted_profile
from scalesim.predict import predict
from scalesim.runs import parse_runs_text
from scalesim.runs_data_wait import fetch_layout, fixed_fetch_runs, read_runs_wait, server_samples
from scalesim.schemas import Scenario
from scalesim.trace_data_wait import (
    FIXED,
    FIXED_FETCH_TITLE,
    PACES,
    UNDECIDED,
    fixed_fetch_remedy,
)

FETCH_S = 0.003


def _inter_server_rows(devices):
    profile = cases._profile("a2-highgpu-8g", "bert-large")
    return cases._rows(profile, Scenario(devices=devices, micro_batch=32))


def _with_fetch(rows, fetch_s=FETCH_S):
    return [dict(r, step_time_s=r["step_time_s"] + fetch_s, data_wait_s=fetch_s) for r in rows]


def _runs(rows, name="r.csv"):
    return parse_runs_text(cases.to_csv(rows), name)


def test_runs_of_one_loader_period_are_read_together():
    """8, 16, 32 (and 64) devices put 8 on each server at 32 samples: one period (256 samples a
    server a step); 1, 2, 4 devices each their own, telling nothing. Three runs of one period
    leave 1 degree of freedom (t = 12.7): undecided; four, 2: a wait the same in each, slope 0,
    reads as a fixed cost. A loader handing a server its batch every T s waits T - work: slope -1."""
    colleague = _runs(_with_fetch(_inter_server_rows([1, 2, 4, 8, 16, 32])))
    assert list(server_samples(colleague)) == [32, 64, 128, 256, 256, 256]
    reading = read_runs_wait(colleague)
    assert reading.reading == UNDECIDED and reading.pairs == 3
    assert "3 runs share one" in reading.words and "4 needed" in reading.words
    four = read_runs_wait(_runs(_with_fetch(_inter_server_rows([1, 2, 4, 8, 16, 32, 64]))))
    assert (four.reading, four.pairs) == (FIXED, 4)
    assert four.slope == pytest.approx(0.0, abs=1e-9)
    rows = _inter_server_rows([1, 2, 4, 8, 16, 32, 64])
    period = 0.245  # above every 8-a-server run's work (the largest's 236.5 ms)
    paced = [dict(r, step_time_s=period, data_wait_s=period - r["step_time_s"])
             if r["devices"] >= 8 else dict(r, data_wait_s=0.0) for r in rows]
    reading = read_runs_wait(_runs(paced))
    assert reading.reading == PACES and reading.slope == pytest.approx(-1.0)
    # no wait measured, none at all, or none at the largest run: not read (the fit's own path)
    assert read_runs_wait(_runs(rows)) is None
    assert read_runs_wait(_runs([dict(r, data_wait_s=0.0) for r in rows])) is None
    assert read_runs_wait(_runs([dict(r, data_wait_s=FETCH_S * (r["devices"] < 64))
                                 for r in rows])) is None


def test_a_fixed_fetch_in_three_runs_of_a_period_gives_both_gains(capsys, monkeypatch, tmp_path):
    """The colleague's runs (undecided): each remedy's gain is the fitted loader's (as before),
    the fixed-cost reading's beside it. By hand at 32 devices (235.31 ms step, 3 ms wait;
    234.50 ms since session 48's straggler stretch made the model-made runs' step):
    removing the wait saves 3 / 231.50 = +1.296 % (+1.29 % before; the refit's own step, 228.37 ms, less the
    fetch alone: +1.33 %, held to the measured); before the fetch was a fetch before forward
    (``StepInputs.fetch_s``), it sat in the fixed time two thirds backward and removing it
    exposed more of the exchange: +0.50 %. Doubling the batch doubles 3 ms less than the fit
    that carries it per sample (+80.8 %: 2 x 235.31 / 1.808 = 260.3 ms doubled; +81.4 % since
    session 48, the model-made runs' exchange hidden behind the last device's backward), so its gain
    lies above +80.8 % and at most 2 x 235.31 / 257.3 - 1 = +82.9 % (+81.7 %: the refit hides
    less of the exchange behind the doubled passes than the fit; +81.6 % before). Since session
    48: +81.4 %, at most 2 x 234.50 / 255.6 - 1 = +83.5 %, and +82.3 %. Since session 56's DDP
    bucket copies (+1.73 ms a step on 2 devices and more, docs/model.md §4): 236.23 ms, so
    3 / 233.23 = +1.286 %, and +81.6 % and +82.5 % for the doubled batch."""
    made = kept_diagnoses(monkeypatch)
    path = tmp_path / "colleague.csv"
    path.write_text(cases.to_csv(_with_fetch(_inter_server_rows([1, 2, 4, 8, 16, 32]))))
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["details"]["data_wait_reading"]["reading"] == UNDECIDED
    by_key = {r["key"]: r for r in data["remedies"]}
    step, wait = made[0].table[-1]["step_time_s"], FETCH_S
    loader = by_key["loader"]
    assert not loader["applicable"]  # the fitted loader paces no run: as before
    assert loader["other_gain"] == pytest.approx(wait / (step - wait), rel=1e-9)
    # 3 / 233.23 ms: the 32-device run's 236.23 ms (234.50 before session 56's DDP bucket
    # copies, + 336e6 x 8 B / 1,555 GB/s = 1.73 ms, docs/model.md §4) less its wait; 0.01296
    # before
    assert loader["other_gain"] == pytest.approx(0.01286, abs=5e-5)
    assert "if the 3 ms data wait is a fixed cost of each fetch" in loader["caveat"]
    batch = by_key["bigger_batch"]
    # 0.814 before session 56 (0.808 before session 48): the copies' 1.73 ms are paid once a
    # step, so doubling the batch halves their share: 2 x 236.23 / (258.55 + 1.73) - 1 = +81.5 %
    # by hand, the fit (which cannot price them) +81.6 %
    assert batch["objective_gain"] == pytest.approx(0.816, abs=0.002)
    doubled = 2 * step / (1 + batch["objective_gain"])
    assert batch["objective_gain"] < batch["other_gain"] <= 2 * step / (doubled - wait) - 1
    # the refit's, +0.25 points as the fit's (0.823 before session 56, 0.817 before session 48)
    assert batch["other_gain"] == pytest.approx(0.825, abs=0.002)
    assert any("priced on a refit" in n and "1.93 ms per sample" in n for n in data["notes"])


def test_a_fixed_fetch_in_four_runs_of_a_period_is_priced_as_one(capsys, monkeypatch, tmp_path):
    """Runs to 64 devices: four of one period read the 3 ms as a fixed cost. The loader remedy
    takes it off: on the refit's own step S (232.72 ms) it saves the 3 ms alone, 3 / (S - 3)
    = +1.31 % (before the fetch was a fetch before forward: +0.50 %, the fetch counted in the
    backward that hides the exchange), held to removing the measured wait, 3 / 236.5 = +1.27 %
    by hand (3 / 237.32 = +1.264 % since session 56's DDP bucket copies, +1.73 ms a step);
    no remedy carries a second gain, and the remedies rest on the refit (1.93 ms a sample, the
    fetch beside it)."""
    made = kept_diagnoses(monkeypatch)
    path = tmp_path / "fixed.csv"
    path.write_text(cases.to_csv(_with_fetch(_inter_server_rows([1, 2, 4, 8, 16, 32, 64]))))
    code, out, err = run_cli(capsys, ["diagnose", str(path)])
    assert code == 0, err
    report = made[0]
    assert report.details["data_wait_reading"]["reading"] == FIXED
    loader = next(r for r in report.remedies if r.key == "loader")
    step = report.table[-1]["step_time_s"]
    assert loader.title == FIXED_FETCH_TITLE and loader.applicable
    assert loader.gain == pytest.approx(FETCH_S / (step - FETCH_S), rel=1e-9)
    # 3 / 237.32 ms: the 64-device run 240.32 ms with DDP's bucket copies (+1.73 ms, session
    # 56, docs/model.md §4; 0.0127 before)
    assert loader.gain == pytest.approx(0.01264, abs=5e-5)
    runs = _runs(_with_fetch(_inter_server_rows([1, 2, 4, 8, 16, 32, 64])))
    refit = fit_runs(fixed_fetch_runs(runs), layout=fetch_layout(runs))
    profile, scenario, _ = fitted_profile(refit, fixed_fetch_runs(runs))
    assert profile.compute.fetch_s == FETCH_S  # accumulation 1: the whole wait a micro-step
    model_step = predict(profile, scenario)[0].step_time_s
    assert fixed_fetch_remedy(profile, scenario, FETCH_S).gain == pytest.approx(
        FETCH_S / (model_step - FETCH_S), rel=1e-9)
    assert all(r.other_gain is None for r in report.remedies)
    assert "Take the fixed cost off each fetch" in out
    assert "a fixed cost of each fetch, not a loader that paces the job" in out


def test_a_pacing_loader_keeps_todays_remedies(monkeypatch):
    """``diagnose_cases.input_pipeline`` (44 % of the 8-device step waiting: the loader paces by
    the 20 % bound) is priced on the fit's own loader, as without the reading: the same gains."""
    runs = _runs(cases.input_pipeline(), "pipe.csv")
    read = runs_diagnosis.diagnose_runs(runs)
    assert read.details["data_wait_reading"]["reading"] == PACES
    monkeypatch.setattr(runs_diagnosis, "read_runs_wait", lambda *a, **k: None)
    unread = runs_diagnosis.diagnose_runs(runs)
    assert [(r.key, r.gain, r.other_gain) for r in read.remedies] == [
        (r.key, r.gain, r.other_gain) for r in unread.remedies]
    assert read.first_remedy.key == unread.first_remedy.key == "loader"
    assert np.isclose(read.first_remedy.gain, unread.first_remedy.gain)
