"""Session 21 (refactor21): each thing said once, outputs unchanged. The decision card holds
its throughput unit (callers stop passing it); diagnose's fit builds its problem and the
measured layout once; the runs' report asks the gain a decision needs once; one helper sizes
the count column of predict's table and diagnose's runs tables."""

from __future__ import annotations

import dataclasses

from scalesim.decision import card_rows, decide
from scalesim.figures import amount
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

SEQUENCES = "sequences of 8192 tokens"  # llama3-70b's sample_unit


def _llama_card():
    """llama3-70b at tp 8, pp 2 on 64 H100s does not fit: its options show their own
    throughput, in the workload's unit (``card_rows``)."""
    profile = resolve_profile(None, "dgx-h100", "llama3-70b")
    scenario = Scenario.model_validate({"devices": [64], "train_samples": 1e6, "layout": {"tp": 8, "pp": 2}})
    return profile, decide(profile, scenario, 64)


def test_the_card_carries_its_workloads_unit_and_its_rows_say_it():
    profile, card = _llama_card()
    assert card.unit == profile.workload.sample_unit == SEQUENCES
    assert "unit" not in card.to_dict()  # the JSON's keys are unchanged
    shown = [o for o in card.options if o.throughput_gain is None]
    assert shown, "today's layout fits: no option shows its own throughput"
    rows = card_rows(card)[1:]
    for o, row in zip(card.options, rows, strict=True):
        if o.throughput_gain is None:
            assert row["throughput"] == f"{amount(o.samples_per_s)} {SEQUENCES}/s"
    # the rows read the card's unit, not a default: another unit is said in its place
    other = card_rows(dataclasses.replace(card, unit="images"))[1:]
    for o, row in zip(card.options, other, strict=True):
        if o.throughput_gain is None:
            assert row["throughput"] == f"{amount(o.samples_per_s)} images/s"
