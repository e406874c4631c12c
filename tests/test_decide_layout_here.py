"""decide offers the planner's layout at today's count, not only with a server more (session 25).

Session 24's audit: with Llama 3 8B under ZeRO-3 and full recompute on 16 H100, decide's only
layout change was "Add one server (16 -> 24), the planner's layout: zero3 -> zero1, ..., recompute
full -> none" at +94 %: most of that gain is the layout, which runs at 16 GPUs too, free. The
split-the-model remedy (the card's layout option until then) applies only where the model does
not fit or the exchange dominates (docs/model.md §10), so the change was never offered alone.
"""

from __future__ import annotations

import pytest

from scalesim.decision import decide
from scalesim.predict import predict
from scalesim.profiles import default_profile, resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout


def _one(profile, scenario, devices):
    return predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]


def test_the_planners_layout_at_todays_count_is_an_option_of_its_own():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    today = Scenario(devices=[16], micro_batch=2, strategy="zero3",
                     layout=ScenarioLayout(recompute="full"))
    card = decide(profile, today, 16)
    (here,) = [o for o in card.options if o.key == "split_model"]
    # session 44: ZeRO-2, not ZeRO-1, since Megatron-Core's ZeRO-1 holds and reduces fp32 grads
    assert here.title == ("Change the layout: zero3 -> zero2, micro-batch 2 -> 1, accumulation "
                          "1 -> 2, recompute full -> none")
    assert here.devices == 16 and here.extra_usd_per_hour == 0.0
    # its changes reproduce it, and its gain is that run's throughput over today's
    run = today.model_validate({**today.model_dump(mode="json"), **here.changes})
    assert run.strategy == "zero2" and run.accumulation == 2
    p, now = _one(profile, run, 16), _one(profile, today, 16)
    assert here.samples_per_s == p.samples_per_s
    assert here.throughput_gain == pytest.approx(p.samples_per_s / now.samples_per_s - 1.0)
    assert here.throughput_gain > 0.2
    # adding a server still runs the planner's layout there, and gains more than the change alone
    (grown,) = [o for o in card.options if o.key == "add_server"]
    assert grown.devices == 24 and grown.throughput_gain > here.throughput_gain


def test_a_layout_change_past_the_cards_three_rows_is_named_in_a_note():
    """BERT-large on 32 A100 of a2-highgpu-8g: the network, accumulation and a server more lead;
    the planner's ZeRO stage at 32 (+10 %: each GPU updates 1/32 of the optimizer state) is the
    fourth and was dropped unsaid; the others faster than today are now named with their gain.
    Session 44: ZeRO-2, as ZeRO-1 reduced fp32 grads (1.5x DDP's bytes: -24 % over 6.8 GB/s).
    Session 45: ZeRO-1 again (+11.2 %): bert-large states its fp16 all-reduce
    (reduce_bytes_per_param 2), so ZeRO-1's main_grad reduces 2 B as ZeRO-2's shard does, and
    ZeRO-1's step is 0.9 % shorter (0.2090 s against 0.2109 s)."""
    profile = default_profile()
    today = Scenario(devices=[32])
    card = decide(profile, today, 32)
    assert len(card.options) == 3
    zero1 = _one(profile, today.model_copy(update={"strategy": "zero1"}), 32)
    gain = zero1.samples_per_s / _one(profile, today, 32).samples_per_s - 1.0
    (note,) = [n for n in card.notes if n.startswith("also faster than today, not shown")]
    assert f"Change the layout: ddp -> zero1 ({gain:+.1%} throughput)" in note


def test_no_layout_option_where_today_is_the_planners_layout():
    profile = default_profile()
    # session 44: the planner's layout here was ZeRO-2 (ZeRO-1 reduced fp32 grads), ZeRO-1 before;
    # session 45: ZeRO-1 again, as bert-large states its fp16 all-reduce (ZeRO-1's main_grad 2 B)
    today = Scenario(devices=[32], strategy="zero1")
    card = decide(profile, today, 32)
    assert not any(o.key == "split_model" for o in card.options)
    assert not any("Change the layout" in n for n in card.notes)


def test_one_change_reached_two_ways_is_one_row():
    """Session-25 audit: at ZeRO-3 on 8 PCIe GPUs the settings row 'hold parameters whole
    (zero3 -> zero2)' and 'Change the layout: zero3 -> zero2' were the same run, two of the
    card's three rows."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "llama3-8b")
    card = decide(profile, Scenario(devices=[8], micro_batch=1, strategy="zero3"), 8)
    titles = [o.title for o in card.options] + card.notes
    assert any("hold parameters whole (zero3 -> zero2" in t for t in titles)
    assert not any("Change the layout: zero3 -> zero2" in t for t in titles)


def test_a_layout_change_under_the_models_error_is_no_option():
    """A planner's layout that gains less than the model's median error over today's is not
    worth a change (as a server more in the planner's layout is not): no row, no note."""
    from scalesim.decision import _Ctx, _planned_here
    from scalesim.decision import _one as one_of

    profile = default_profile()
    today = Scenario(devices=[8], strategy="zero2")
    ctx = _Ctx(profile, today, one_of(profile, today, 8))
    assert _planned_here(ctx, "") is None
