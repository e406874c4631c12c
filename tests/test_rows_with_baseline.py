"""Session 40: ``layout_predict.evaluate_rows`` evaluates a prediction's rows and their
one-device baseline in one ``evaluate_layouts`` call (``layout_step.evaluate_together``: the
two stacked on a leading axis), not one call each: 405 -> 205 calls for the BERT-large runs of
``benchmarks/diagnose_bands.py`` (200 predictions of its remedies and their gain bands). The
model has no branch on the rows' values, so each row's figures are its own; the reports must
be the same to the bit as one call each (the one-at-a-time path, kept here as the
reference)."""

from __future__ import annotations

import numpy as np
import pytest
from test_pin_kept import _bert_report, _slow_device_report, assert_same_report

from scalesim import layout_predict
from scalesim.model import layout_step
from scalesim.presets import get_hardware, transformer_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario


def _one_call_each(inputs):
    """The one-at-a-time path."""
    return [layout_step.evaluate_layouts(x) for x in inputs]


@pytest.mark.parametrize("report", [_bert_report, _slow_device_report],
                         ids=["bert-large --workload", "slow_device data-parallel"])
def test_rows_with_their_baseline_give_the_same_report_to_the_bit(report, tmp_path, monkeypatch):
    together = report(tmp_path)
    monkeypatch.setattr(layout_predict, "evaluate_together", _one_call_each)
    apart = report(tmp_path)
    assert_same_report(together, apart)


def _layouts():
    """GPT 1.7B on a DGX A100: rows of dp 8, 16 x tp 1, 2 (four rows) and one device alone."""
    profile = profile_from_presets(get_hardware("dgx-a100"), transformer_workload("gpt-1.7b"))
    base = layout_predict.base_inputs(profile.workload, layout_predict.layout_hardware(profile),
                                      Scenario(), 312e12, 1555.0)
    rows = base.replace(dp=np.array([[8], [16]]), tp=np.array([1, 2]), pp=1, cp=1, zero=1,
                        micro_batch=2, global_batch=np.array([[16], [32]]), schedule=0,
                        virtual_stages=1, sequence_parallel=False, recompute=0, efficiency=0.6)
    alone = rows.replace(dp=1, tp=1, global_batch=2, devices_per_node=1)
    return rows, alone


def test_together_each_row_is_its_own_call_to_the_bit():
    rows, alone = _layouts()
    together = layout_step.evaluate_together([rows, alone])
    for got, x in zip(together, (rows, alone), strict=True):
        want = layout_step.evaluate_layouts(x)
        for name in ("step_time_s", "compute_s", "dp_exposed_s", "memory_bytes", "fits"):
            a, b = getattr(got, name), np.broadcast_to(getattr(want, name), (2, 2))
            assert a.shape == (2, 2) and a.tobytes() == np.ascontiguousarray(b).tobytes()


def test_inputs_that_cannot_share_a_call_are_evaluated_apart():
    """A field None in one and set in the other, or of another dtype, cannot stack: each is
    evaluated alone (the same figures)."""
    rows, alone = _layouts()
    assert layout_step.stacked([rows, alone]) is not None
    assert layout_step.stacked([rows, alone.replace(kernel_bandwidth_GBps=2000.0)]) is None
    assert layout_step.stacked([rows, alone.replace(micro_batch=2.0)]) is None
    got = layout_step.evaluate_together([rows, alone.replace(micro_batch=2.0)])
    assert got[1].step_time_s.shape == () and np.array_equal(
        got[1].step_time_s, layout_step.evaluate_layouts(alone).step_time_s)
