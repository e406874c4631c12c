"""predict explains an efficiency above 100 % (``predict.above_linear_note``) and a one-device
baseline that does not fit (``predict.one_device_note``); ``scalesim sweep`` wrote the same
rows (gpt-1.7b, ZeRO-2 on 8 H100s: efficiency 1.098) with neither note (session 46). Its rows
stream out, so ``cmd_sweep.BaselineRows`` records what the two functions read, chunk by
chunk, and the notes go to stderr after the rows (stdout and its CSV/JSON schema unchanged)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_harness import run_cli

from scalesim import layout_predict as lp
from scalesim import sweep as sweep_module
from scalesim.predict import above_linear_note, one_device_note, predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

NOTES = ("note: efficiency above 100%", "note: one device")


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(NOTES)]


CASES = {
    # ZeRO-2 on one server: above 100 % (the brief's case), one device fits
    "zero2": ["--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--strategy", "zero2",
              "--devices", "1,2,4,8"],
    # HSDP over 8 of 16 and 32: above 100 %, and one device cannot hold the model
    "hsdp": ["--workload", "llama3-8b", "--hardware", "dgx-h100", "--strategy", "zero3",
             "--shard-group", "8", "--devices", "16,32"],
    # one device holds the model but not 8 samples a micro-step
    "batch": ["--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--strategy", "zero2",
              "--batch", "8", "--devices", "1,2,4"],
    # a parameter-count workload (the data-parallel path), strong scaling
    "data-parallel": ["--strategy", "zero3", "--global-batch", "4096", "--devices", "1,2,4,8"],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_sweep_says_predicts_notes_of_efficiency_and_the_one_device_baseline(capsys, case, fmt):
    """The same scenario, no axis swept: sweep's stderr ends with predict's two lines, word for
    word; stdout holds the rows alone, in the columns it wrote before."""
    code, out, err = run_cli(capsys, ["predict", *CASES[case]])
    assert code == 0, err
    expected = _notes(out)
    assert expected, out  # every case has at least one of the notes
    code, rows, err = run_cli(capsys, ["sweep", *CASES[case], "--format", fmt])
    assert code == 0, err
    assert _notes(err) == expected
    assert err.splitlines()[-len(expected):] == expected  # after the other notes
    assert not _notes(rows)
    if fmt == "json":
        data = json.loads(rows)
        assert isinstance(data, list) and "notes" not in data[0]
        assert {"devices", "efficiency", "speedup", "fits"} <= set(data[0])
        assert max(r["efficiency"] for r in data) > 1 or "batch" in case or "data" in case
    else:
        assert rows.splitlines()[0].startswith("devices,")


def test_a_swept_grid_notes_the_highest_row_and_each_rows_baseline_as_predict_would():
    """Swept strategy x tp: the note names the row of highest efficiency of all the rows, as
    predict's note over the predictions of every combination does; the seq-len axis (its rows
    evaluated per value and put back in order) where the first row short of memory holds the
    model but a later one cannot: 'cannot hold the model', predict's words for those rows."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    rows = [r for strategy in ("ddp", "zero1", "zero3") for tp in (1, 2)
            for r in predict(profile, Scenario(devices=[8, 16], strategy=strategy,
                                               layout=ScenarioLayout(tp=tp)))]
    plan = _plan(profile, Scenario(devices=[8, 16]),
                 {"strategy": ["ddp", "zero1", "zero3"], "tp": [1, 2]})
    assert _baseline_notes(plan) == [above_linear_note(rows), one_device_note(rows)]
    assert None not in _baseline_notes(plan)
    assert "1/8 of the optimizer state" in above_linear_note(rows)

    profile = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    scenario = Scenario(devices=[2, 4], strategy="zero2", micro_batch=8)
    rows = [r for seq in (2048, 131072)
            for r in predict(resolve_profile(None, "dgx-h100", "gpt-1.7b", seq_len=seq),
                             scenario)]
    assert rows[0].one_device_holds_model and not rows[0].one_device_fits
    assert not rows[-1].one_device_holds_model
    plan = _plan(profile, scenario, {"seq_len": [2048, 131072]},
                 lambda seq: resolve_profile(None, "dgx-h100", "gpt-1.7b", seq_len=seq))
    notes = _baseline_notes(plan)
    assert notes == [above_linear_note(rows), one_device_note(rows)]
    assert notes[1].startswith("one device cannot hold the model")


def test_the_notes_do_not_depend_on_how_the_rows_are_chunked(capsys, monkeypatch):
    """One row a chunk (the top row and the row that cannot hold the model in later chunks
    than the first short one): the same lines as the whole grid in one chunk."""
    argv = ["sweep", "--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--strategy", "zero2",
            "--devices", "2,4", "--batch", "8", "--seq-len-values", "2048,131072"]
    code, _, whole = run_cli(capsys, argv)
    assert code == 0, whole
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", 1)
    code, _, chunked = run_cli(capsys, argv)
    assert code == 0, chunked
    assert len(_notes(whole)) == 2 and _notes(chunked) == _notes(whole)
    assert "cannot hold the model" in _notes(whole)[1]


def test_one_device_holds_model_evaluated_once_per_distinct_row_is_every_rows_own():
    """``evaluate_rows`` evaluates the one-sample baseline once per distinct row
    (``layout_step.distinct_rows``): each row's flag is what evaluating every row at one sample
    gives (predict's rule before), over rows that differ in split, bandwidth and batch."""
    profile = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    p = np.array([2, 4, 8, 8, 16, 16, 2, 4])
    tp = np.array([1, 1, 2, 1, 2, 1, 1, 2])
    micro = np.array([16, 8, 64, 4, 32, 2, 1, 16])
    k = np.array([1, 2, 1, 4, 1, 2, 1, 1])
    base_b = np.array([32, 32, 128, 64, 256, 32, 2, 64])
    overrides = {"inter_busbw_GBps": np.array([50.0, 100, 50, 100, 50, 100, 50, 100])}
    rows = lp.evaluate_rows(profile, Scenario(devices=[1]), p, micro, k, base_b, tp=tp,
                            overrides=overrides)
    one = lp.evaluate_rows(profile, Scenario(devices=[1]), p, micro, k, np.ones_like(base_b),
                           tp=tp, overrides=overrides)
    assert not rows.one_device_fits.all()  # the second evaluation is needed
    assert (rows.one_device_holds_model == one.one_device_fits).all()


def _plan(profile, scenario, axes, at_sequence=None):
    from scalesim.sweep import plan_sweep

    return plan_sweep(profile, scenario, {"devices": scenario.devices, **axes},
                      at_sequence=at_sequence)


def _baseline_notes(plan) -> list[str | None]:
    """``BaselineRows``'s two notes over the plan's rows, streamed (None where one says
    nothing)."""
    from scalesim.cli.cmd_sweep import BaselineRows

    tracker = BaselineRows()
    for chunk in sweep_module.iter_sweep(plan):
        tracker.add(chunk.columns, chunk.baseline)
    return [above_linear_note([tracker.top] if tracker.top else []),
            one_device_note(tracker.short)]
