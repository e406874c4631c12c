"""The remedy "use a Hopper attention kernel" (``remedies`` key ``attention_kernel``; docs/model.md
§10 and §13): the scenario run with the vendor kernel instead of a FlashAttention-2-class one,
its gain predicted by the model like every other remedy's, shared by ``rank_remedies``,
``decide``, diagnose and the app; not applicable, with the reason in one clause, where the
scenario runs the vendor kernel already, the workload has no attention core, the device runs
FlashAttention-2 near the matmuls' rate, or the profile's timings ran their own kernel."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.decision import decide
from scalesim.model.layout_step import FLASH_BACKWARD_FACTOR
from scalesim.plan import DEFAULT_MATMUL_EFFICIENCY
from scalesim.presets import FLASH2_ON_HOPPER_EFFICIENCY
from scalesim.profiles import default_profile, load_profile, resolve_profile
from scalesim.remedies import ATTENTION_KERNEL_TITLE, rank_remedies
from scalesim.schemas import Scenario

FLASH2_ZERO3 = Scenario(devices=[8], micro_batch=1, strategy="zero3", attention_kernel="flash2")


def _kernel_remedy(profile, scenario, devices):
    now, ranked = rank_remedies(profile, scenario, devices)
    return now, next(r for r in ranked if r.key == "attention_kernel")


def _extra_core_s(shape) -> float:
    """By hand: the attention core's time at FlashAttention-2's 0.35 of the H100's 989 TFLOP/s
    less its time at the matmuls' efficiency, forward (4 s^2 h FLOPs per sequence and layer)
    plus flash backward (2.5x), over the layers, for one sequence."""
    core_s = 4.0 * shape.seq_len ** 2 * shape.hidden / 989e12
    return shape.layers * (1 + FLASH_BACKWARD_FACTOR) * core_s * (
        1 / FLASH2_ON_HOPPER_EFFICIENCY - 1 / DEFAULT_MATMUL_EFFICIENCY)


def test_the_gain_is_the_attention_core_time_the_vendor_kernel_saves():
    """One H100, one Llama 3 8B sequence of 8,192 tokens: no exchange, no straggler wait, so
    the step shrinks by the attention core's time difference alone (185 ms) and the gain is
    the step ratio. (The model holds more than 80 GB here: "not runnable", but predicted.)"""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    now, r = _kernel_remedy(profile, Scenario(devices=[1], micro_batch=1,
                                              attention_kernel="flash2"), 1)
    extra = _extra_core_s(profile.workload.transformer)
    assert extra == pytest.approx(0.1852, abs=1e-4)
    assert now.step_time_s - r.prediction.step_time_s == pytest.approx(extra, rel=1e-9)
    assert r.gain == pytest.approx(now.step_time_s / (now.step_time_s - extra) - 1, rel=1e-9)
    assert r.scenario.attention_kernel == "fused-vendor" and r.title == ATTENTION_KERNEL_TITLE


def test_it_is_the_best_remedy_for_llama3_8b_on_eight_h100s_with_flash2():
    """ZeRO-3 on 8 H100s (fits): the compute shrinks by the same 185 ms per sequence, the
    exchange is unchanged, and the straggler wait, a share of the micro-step (§6), shrinks
    with it; about +23 %. It ranks first of the remedies that keep the numerics: only fp8
    weight matmuls, which change them, gain more here (+27 %)."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    now, r = _kernel_remedy(profile, FLASH2_ZERO3, 8)
    after = r.prediction
    assert r.applicable and r.verdict == "remedy" and after.fits
    assert now.compute_s - after.compute_s == pytest.approx(
        _extra_core_s(profile.workload.transformer), rel=1e-9)
    assert after.exposed_comm_s == now.exposed_comm_s
    assert now.step_time_s - after.step_time_s == pytest.approx(
        now.compute_s - after.compute_s + now.straggler_s - after.straggler_s, rel=1e-9)
    assert 0.15 < r.gain < 0.25
    ranked = rank_remedies(profile, FLASH2_ZERO3, 8)[1]
    assert [x.key for x in ranked[:2]] == ["fp8", "attention_kernel"]
    assert ranked[0].gain == pytest.approx(0.272, abs=0.001)
    assert "cuDNN" in r.reason and "exact attention" in r.reason  # the caveat: how to run it


def test_decide_offers_it_with_nothing_to_buy(capsys):
    """In fp8 already (so the fp8 option, which gains more in 16 bits, is not on the card), the
    kernel is the recommendation; in 16 bits it is on the card beside fp8."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    in_fp8 = FLASH2_ZERO3.model_copy(update={"precision": "fp8"})
    card = decide(profile, in_fp8.model_copy(update={"train_samples": 1e6}), 8)
    option = next(o for o in card.options if o.key == "attention_kernel")
    _, r = _kernel_remedy(profile, in_fp8, 8)
    assert option.throughput_gain == pytest.approx(r.gain, rel=1e-12)
    assert option.extra_usd_per_hour == 0.0
    assert card.recommendation.startswith("Use a Hopper attention kernel")  # cheapest in total
    code, out, err = run_cli(capsys, ["decide", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--batch", "1", "--strategy",
                                      "zero3", "--attention-kernel", "flash2", "--json"])
    assert code == 0, err
    keys = [o["key"] for o in json.loads(out)["options"]]
    assert "attention_kernel" in keys
    # the vendor kernel today: nothing to offer
    card = decide(profile, FLASH2_ZERO3.model_copy(update={"attention_kernel": "fused-vendor"}),
                  8)
    assert all(o.key != "attention_kernel" for o in card.options)


@pytest.mark.parametrize("hardware, workload, kernel, reason", [
    ("dgx-h100", "llama3-8b", "fused-vendor", "the scenario runs the fused-vendor kernel already"),
    ("dgx-a100", "llama3-8b", "flash2",
     "on A100-SXM4 80GB FlashAttention-2 runs as fast as the vendor kernel"),
    ("dgx-h100", "bert-large", "flash2", "workload 'bert-large' is a parameter count, not a "
     "transformer shape: no attention core to time"),
])
def test_not_applicable_with_the_reason(hardware, workload, kernel, reason):
    profile = resolve_profile(None, hardware, workload)
    scenario = Scenario(devices=[8], micro_batch=1, strategy="zero3", attention_kernel=kernel)
    _, r = _kernel_remedy(profile, scenario, 8)
    assert (r.applicable, r.verdict, r.gain, r.prediction) == (False, "not applicable", 0.0,
                                                               None)
    assert r.reason == reason


def test_not_applicable_where_the_timings_ran_their_own_kernel():
    """A measured profile (the H200 block calibration): the model cannot swap the kernel its
    timings ran, the rule of ``layout_predict.check_attention_kernel``; the default profile's
    parameter count says why in its own words."""
    measured = load_profile(H200)
    _, r = _kernel_remedy(measured, Scenario(devices=[1]), 1)
    assert not r.applicable
    assert r.reason == (f"profile '{measured.name}' holds timings measured with its own "
                        "attention kernel and its calibration did not record which: the model "
                        "cannot swap it for another")
    _, r = _kernel_remedy(default_profile(), Scenario(devices=[8]), 8)
    assert not r.applicable and "parameter count" in r.reason


# ------------------------------------------------------------------------------------ the app

LINK = {"v": "7", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "strat": "zero3",
        "mb": "1", "ak": "flash2", "b": "attention_kernel"}


def test_the_app_choice_list_takes_the_key_and_labels_it():
    from typing import get_args

    from scalesim.app.planner_page import B_LABELS
    from scalesim.app.state import AppState, RemedyChoice

    assert "attention_kernel" in get_args(RemedyChoice)
    assert set(B_LABELS) == set(get_args(RemedyChoice))
    assert AppState(b="attention_kernel").b == "attention_kernel"


def test_a_link_with_the_remedy_as_scenario_b_opens_and_predicts_it():
    from app_harness import open_app
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query, encode_query, link_version

    state, profile, messages = decode_query(LINK)
    assert messages == [] and state.b == "attention_kernel"
    plan = make_plan(profile, state)
    assert plan.b_label == ATTENTION_KERNEL_TITLE
    assert plan.b_scenario.attention_kernel == "fused-vendor"
    assert plan.b_focus.samples_per_s > 1.15 * plan.focus.samples_per_s
    params = encode_query(state, profile)
    assert (params["v"], params["b"]) == ("7", "attention_kernel")
    assert decode_query(params)[0] == state
    # B = the kernel remedy with the default kernel: still written as v7, the version that has
    # it; the vendor kernel asked is v13's (before, the default: v7's fused-vendor opens as it)
    assert link_version(state.model_copy(update={"ak": ""})) == 7
    assert link_version(state.model_copy(update={"ak": "fused-vendor"})) == 13
    at = open_app({**LINK, "tab": "ab"})
    assert not any("does not apply here" in i.value for i in at.info)
    at = open_app({**LINK, "ak": "fused-vendor", "tab": "ab"})
    assert any("does not apply here: the scenario runs the fused-vendor kernel already" in
               i.value for i in at.info), [i.value for i in at.info]
