"""Session 40: diagnose re-evaluated the fitted model at the measured runs once per parameter
draw of the gain bands (``fit_runs.drawn_fit``: 100 draws, 30 with ``--workload``, and the
held parameters' ends), one ``blended`` call each; ``fit_runs.drawn_fits`` evaluates them all
in one broadcast call (a leading axis of draws). Each draw's values and breakdown, and the
reports, must be the same to the bit as one call per draw (the one-at-a-time path, kept here
as the reference)."""

from __future__ import annotations

from dataclasses import replace

import diagnose_cases as cases
import numpy as np
import pytest
from test_pin_kept import _bert_report, _slow_device_report, assert_same_report

from scalesim import fit_runs
from scalesim.fit_runs import blended, drawn_fits, from_fitted_x, plausible_draws
from scalesim.model.step import StepResult
from scalesim.runs import runs_from_records


def _one_draw(fit, x):
    """The one-at-a-time path (``drawn_fit`` before session 40)."""
    values = dict(fit.values)
    for j, name in enumerate(fit.fitted):
        values[name] = from_fitted_x(name, x[j])
    if "inter_transfer_s" not in fit.fitted:
        values["inter_transfer_s"] = values["intra_transfer_s"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        breakdown = blended(values, fit.layout, fit.gradient_bytes, fit.exchange)
    return replace(fit, values=values, x=np.asarray(x, dtype=float), breakdown=breakdown)


@pytest.mark.parametrize("case", ["slow_device", "input_pipeline"])
def test_each_draw_is_its_own_call_to_the_bit(case):
    runs = runs_from_records(cases.CASES[case](), case)
    fit = fit_runs.fit_runs(runs, 25.6e6)
    xs = plausible_draws(fit, runs)[0][:101]
    together = drawn_fits(fit, xs)
    assert len(together) == 101
    for got, x in zip(together, xs, strict=True):
        want = _one_draw(fit, x)
        assert got.values == want.values and got.x.tobytes() == want.x.tobytes()
        for name in StepResult.__dataclass_fields__:
            a, b = np.asarray(getattr(got.breakdown, name)), np.asarray(getattr(want.breakdown, name))
            assert a.shape == b.shape == runs.step_time_s.shape and a.tobytes() == b.tobytes(), name
    assert drawn_fits(fit, xs[:0]) == []


@pytest.mark.parametrize("report", [_bert_report, _slow_device_report],
                         ids=["bert-large --workload", "slow_device data-parallel"])
def test_draws_in_one_call_give_the_same_report_to_the_bit(report, tmp_path, monkeypatch):
    together = report(tmp_path)
    monkeypatch.setattr(fit_runs, "drawn_fits", lambda fit, xs: [_one_draw(fit, x) for x in xs])
    apart = report(tmp_path)
    assert_same_report(together, apart)
