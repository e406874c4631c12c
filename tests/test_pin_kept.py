"""Session 40: the compute pin's one-device evaluations (``layout_predict._pin_compute_s``) are
kept by their inputs' contents, with the links and the overlap (which one device's compute does
not read) held fixed, so diagnose's remedies and their gain bands (30 parameter draws with
``--workload``, each predicting ~7 remedies, two pins each) evaluate the pin once per distinct
micro-batch: 403 pin evaluations -> 5, 803 -> 405 ``evaluate_layouts`` calls for the BERT-large
runs of ``benchmarks/diagnose_bands.py``. The reports must be the same to the bit as evaluating
every pin as before (the one-at-a-time path, kept here as the reference)."""

from __future__ import annotations

import json

import diagnose_cases as cases
import numpy as np
import pytest

from scalesim import layout_predict
from scalesim.model import layout_step
from scalesim.predict import predict
from scalesim.presets import get_hardware, get_transformer, transformer_workload
from scalesim.profiles import default_profile, profile_from_presets
from scalesim.runs import parse_runs_text, runs_from_records
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.runs_model import runs_model
from scalesim.schemas import Scenario


def _every_pin(x):
    """The one-at-a-time path: every pin evaluated, nothing kept."""
    return layout_predict.evaluate_layouts(x).compute_s


def _bert_report(tmp_path):
    rows = cases._rows(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32))
    runs = parse_runs_text(cases.to_csv(rows), "runs.csv")
    path = tmp_path / "bert128.json"
    path.write_text(json.dumps({"name": "bert-large at 128", "params": 336e6,
                                "transformer": get_transformer("bert-large").model_dump()}))
    model = runs_model(str(path), "A100 40GB")
    return diagnose_runs(runs, None, 2.0, transformer=model)


def _slow_device_report(tmp_path):
    return diagnose_runs(runs_from_records(cases.slow_device(), "slow_device"), params=25.6e6)


def assert_same_report(together, apart):
    """Two diagnoses of the same runs (one path and its one-at-a-time reference) say the same
    to the bit: each remedy's gain, band and verdict, and everything else (``to_json``)."""
    assert together.remedies and any(r.gain_low is not None for r in together.remedies)
    for a, b in zip(together.remedies, apart.remedies, strict=True):
        assert (a.key, a.gain, a.objective_gain, a.gain_low, a.gain_high, a.verdict) == (
            b.key, b.gain, b.objective_gain, b.gain_low, b.gain_high, b.verdict)
    assert together.to_json() == apart.to_json()


@pytest.mark.parametrize("report", [_bert_report, _slow_device_report],
                         ids=["bert-large --workload", "slow_device data-parallel"])
def test_kept_pins_give_the_same_report_to_the_bit(report, tmp_path, monkeypatch):
    layout_predict._PIN_KEPT.clear()
    kept = report(tmp_path)
    monkeypatch.setattr(layout_predict, "_pin_compute_s", _every_pin)
    every = report(tmp_path)
    assert_same_report(kept, every)


def test_a_second_prediction_evaluates_no_pin_again(monkeypatch):
    """GPT 1.7B on 8 GPUs of one DGX A100 at micro-batch 1 (it fits on one GPU): a prediction
    evaluates one pin (the unsplit model on one device at that micro-batch; the 8 busy GPUs of
    the server enter the pin's target only, so the rows' pin and the baseline's are one
    evaluation) and the rows with their one-device baseline (one call,
    ``layout_step.evaluate_together``): 2 calls, where every pin evaluated made 3; the same
    prediction again only the rows and the baseline: 1."""
    profile = profile_from_presets(get_hardware("dgx-a100"), transformer_workload("gpt-1.7b"))
    calls = []  # counted from here: the profile's curve estimate evaluates its own
    evaluate = layout_step.evaluate_layouts

    def counted(x):
        calls.append(x)
        return evaluate(x)

    monkeypatch.setattr(layout_predict, "evaluate_layouts", counted)
    monkeypatch.setattr(layout_step, "evaluate_layouts", counted)
    scenario = Scenario(devices=[8], micro_batch=1)
    layout_predict._PIN_KEPT.clear()
    first = predict(profile, scenario)
    assert first[0].fits and len(calls) == 2
    again = predict(profile, scenario)
    assert again == first and len(calls) == 3
    monkeypatch.setattr(layout_predict, "_pin_compute_s", _every_pin)
    assert predict(profile, scenario) == first and len(calls) == 3 + 3


def test_one_devices_compute_reads_no_link_nor_the_overlap():
    """The pin holds the links and the overlap fixed (one device exchanges nothing), so draws
    that differ in them share one evaluation: its compute is the same to the bit under links
    of 1 and 600 GB/s, latencies of 0 and 1 ms, the overlap on and off."""
    profile = profile_from_presets(get_hardware("dgx-a100"), transformer_workload("gpt-1.7b"))
    x = layout_predict.base_inputs(
        profile.workload, layout_predict.layout_hardware(profile), Scenario(), 312e12, 1555.0
    ).replace(dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=2, global_batch=2, schedule=0,
              virtual_stages=1, sequence_parallel=False, recompute=0, efficiency=0.6)
    slow = x.replace(intra_latency_s=1e-3, intra_busbw_GBps=1.0, inter_latency_s=1e-3,
                     inter_busbw_GBps=1.0, overlap=False)
    fast = x.replace(intra_latency_s=0.0, intra_busbw_GBps=600.0, inter_latency_s=0.0,
                     inter_busbw_GBps=600.0, overlap=True)
    a, b = (layout_step.evaluate_layouts(v).compute_s for v in (slow, fast))
    assert float(a) > 0 and a.tobytes() == b.tobytes()


def test_kept_holds_small_inputs_only_and_shares_them_read_only():
    """A ``Kept`` of 2 entries and 10 elements: inputs of 3 elements are evaluated once and
    kept (read-only); of 11 (a sweep's grid) evaluated every time and not kept; a third small
    one drops the two kept first."""
    from dataclasses import dataclass

    from scalesim.model.kept import Kept

    @dataclass(frozen=True)
    class Inputs:
        a: object
        b: object = None

    calls = []

    def evaluate(x):
        calls.append(x)
        return np.asarray(x.a) * 2.0

    kept = Kept(entries=2, elements=10)
    first = kept(evaluate, Inputs(np.arange(3)))
    assert kept(evaluate, Inputs(np.arange(3))) is first and len(calls) == 1
    assert not first.flags.writeable and first.tolist() == [0.0, 2.0, 4.0]
    assert kept(evaluate, Inputs(np.arange(3.0))) is not first and len(calls) == 2  # dtype
    kept(evaluate, Inputs(np.arange(11)))
    kept(evaluate, Inputs(np.arange(11)))
    assert len(calls) == 4 and len(kept) == 2
    kept(evaluate, Inputs(np.arange(3), b=1))
    assert len(calls) == 5 and len(kept) == 1


def test_a_kept_dataclass_result_shares_its_own_arrays_read_only():
    """A kept result that is a dataclass (``StepResult``) has its own arrays flagged read-only:
    ``dataclasses.astuple`` would have flagged deep copies and left the shared ones writable."""
    from dataclasses import dataclass

    from scalesim.model.kept import Kept

    @dataclass(frozen=True)
    class Inputs:
        a: object

    @dataclass(frozen=True)
    class Result:
        twice: np.ndarray
        label: str

    kept = Kept()
    result = kept(lambda x: Result(np.asarray(x.a) * 2.0, "r"), Inputs(np.arange(3)))
    assert not result.twice.flags.writeable
    with pytest.raises(ValueError):
        result.twice[0] = 1.0
