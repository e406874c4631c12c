"""The batch remedies' factors are one concept in one place (scalesim/remedies.py:
``BIGGER_BATCH_FACTOR``, ``ACCUMULATION_FACTORS``, ``accumulation_factor``): each batch remedy
says its own (``RemedyResult.factor``, ``diagnosis.Remedy.factor``), and a traced pipeline's
pricing of the accumulation remedy reads it (``trace_diagnosis.pipeline_batch_remedies``).
Before, trace_diagnosis.BATCH_FACTORS repeated the literal 4 of ``remedies._candidates``, which
picks 2 where a set global batch splits into 2x but not 4x the micro-steps.

A trace never sets a global batch (diagnose --trace takes none; its model's scenario has none),
so on a trace the factor is 4; the 2 is reached through the planner's scenarios, and a model
that says 2 is priced as 2 by the pipeline's split."""

from __future__ import annotations

import pytest
from test_pipeline_batch_remedies import UNIT_US, _report

from scalesim.diagnosis import model_remedies
from scalesim.pipeline_trace import accumulation_split_s
from scalesim.profiles import resolve_profile
from scalesim.remedies import (
    ACCUMULATION_FACTORS,
    BIGGER_BATCH_FACTOR,
    accumulation_factor,
    rank_remedies,
)
from scalesim.schemas import Scenario
from scalesim.trace_diagnosis import pipeline_batch_remedies


def test_the_factor_rule_by_hand():
    """No global batch: 4x. 16 samples over 8 replicas of 1 micro-step: 4x would be 32
    micro-steps of half a sample, 2x is 16 of 1; 64 splits 4x; 12 splits neither."""
    assert accumulation_factor(None, 8, 1) == ACCUMULATION_FACTORS[0] == 4
    assert accumulation_factor(16, 8, 1) == 2
    assert accumulation_factor(64, 8, 1) == 4
    assert accumulation_factor(12, 8, 1) is None


def test_a_traced_pipeline_prices_the_factor_its_remedy_says(tmp_path):
    """The hand-made dp 2 x pp 2 trace (tests/test_pipeline_batch_remedies.py): the model's
    accumulation remedy says 4 and the bigger batch 2; the pipeline's accumulation is titled and
    priced with that 4 (2 -> 8 micro-batches: 16 - 15 + 51 = 52 units for 4x the samples)."""
    report = _report(tmp_path)
    remedies = {r.key: r for r in report.remedies}
    more, bigger = remedies["accumulation"], remedies["bigger_batch"]
    assert more.factor == ACCUMULATION_FACTORS[0] == 4
    assert bigger.factor == BIGGER_BATCH_FACTOR == 2
    assert more.title == ("Accumulate gradients over 4x the pipeline's micro-batches (2 -> 8 a "
                          "step, fitted)")
    assert more.gain == pytest.approx(4 * 16 / 52 - 1, abs=0.003)
    assert bigger.gain == pytest.approx(2 * 16 / 31 - 1, abs=0.003)
    # the other remedies say no factor
    assert all(r.factor is None for r in report.remedies
               if r.key not in ("accumulation", "bigger_batch"))


def test_a_global_batch_that_splits_only_2x_gives_factor_2():
    """8 H100s of dp 8 at a global batch of 16 (2 a device, 1 micro-step): 4x the micro-steps
    would need half a sample each, so the remedy runs 2x (2 micro-steps of 1) and says 2, in
    the planner's result and in diagnosis's remedy."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    scenario = Scenario(devices=[8], global_batch=16, accumulation=1)
    _, ranked = rank_remedies(profile, scenario, 8)
    (acc,) = [r for r in ranked if r.key == "accumulation"]
    assert acc.factor == 2 and acc.scenario.accumulation == 2
    assert acc.title == "Accumulate gradients over 2 micro-steps (now 1)"
    _, remedies = model_remedies(profile, scenario, 8, "comm_growth")
    (acc,) = [r for r in remedies if r.key == "accumulation"]
    assert acc.factor == 2


def test_the_pipeline_split_reads_a_factor_of_2_off_the_model(tmp_path, monkeypatch):
    """A model whose accumulation remedy says 2 (as a set global batch makes it): the
    pipeline's accumulation is titled 2 -> 4 micro-batches, and the split it hands the model is
    accumulation_split_s at 2 (stages of 6 and 12 units, 2 micro-batches: 4 micro-batches of
    3 and 6 units span 1 + 4 x 6 + 2 = 27, one more pass (27 - 15) / 1 = 12 units, the fill and
    drain 15 - 12 = 3 once)."""
    from dataclasses import replace

    from scalesim import trace_diagnosis

    kept = []
    real = trace_diagnosis.pipeline_batch_remedies

    def keep(pipeline, model, mp_exposed_s, loss_s):
        kept.append((pipeline, model, mp_exposed_s, loss_s))
        return real(pipeline, model, mp_exposed_s, loss_s)

    monkeypatch.setattr(trace_diagnosis, "pipeline_batch_remedies", keep)
    _report(tmp_path)
    (pipeline, model, mp_exposed, loss), = kept
    asked = []

    def says_two(per_sample_extra_s, per_step_s, fixed_s):
        asked.append(per_step_s)
        first, ranked = model(per_sample_extra_s, per_step_s, fixed_s)
        return first, [replace(r, factor=2) if r.key == "accumulation" else r for r in ranked]

    out = {r.key: r for r in pipeline_batch_remedies(pipeline, says_two, mp_exposed, loss)}
    unit = UNIT_US * 1e-6
    assert accumulation_split_s(pipeline, 2) == pytest.approx((12 * unit, 3 * unit))
    assert out["accumulation"].title == ("Accumulate gradients over 2x the pipeline's "
                                         "micro-batches (2 -> 4 a step, fitted)")
    assert asked[1] == pytest.approx(3 * unit)  # the fill and drain, once a step
