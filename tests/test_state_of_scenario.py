"""``app.plan.state_of_scenario``: the planner's controls for a scenario, the inverse of
``build_scenario`` (the diagnose page's planner link opens a fitted model through it)."""

import pytest
from scalesim.app.plan import build_scenario, state_of_scenario

from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

# every field the planner has a control for, away from its default where a scenario allows it
SCENARIOS = [
    Scenario(devices=[64], micro_batch=8, accumulation=4, overlap=False, bucket_mib=50.0,
             strategy="zero2", zero_framework="fsdp", grad_sync="once-per-step",
             algorithm="ring", straggler_cv=0.03, slow_device=5, slow_factor=1.2,
             critical_batch_size=4096.0, min_samples_to_quality=1e7, train_samples=2e8,
             price_per_device_hour=2.5, devices_per_node=8),
    Scenario(devices=[32], global_batch=512, strategy="zero3", zero_framework="deepspeed",
             intra_busbw_GBps=150.0, intra_latency_s=8e-6, inter_busbw_GBps=40.0,
             inter_latency_s=2e-5),
    Scenario(devices=[64], micro_batch=1, strategy="zero3", attention_kernel="flash2",
             layout=ScenarioLayout(tp=4, pp=2, schedule="interleaved", virtual_stages=2,
                                   recompute="selective", recompute_style="op-sac",
                                   sequence_parallel=True, tp_overlap=True)),
    Scenario(devices=[128], micro_batch=2, strategy="zero3",
             layout=ScenarioLayout(shard_group=8)),
]
COMPARED = ("micro_batch", "global_batch", "accumulation", "overlap", "bucket_mib", "strategy",
            "zero_framework", "grad_sync", "attention_kernel", "algorithm", "straggler_cv",
            "slow_device", "slow_factor", "critical_batch_size", "min_samples_to_quality",
            "train_samples", "price_per_device_hour", "intra_busbw_GBps", "intra_latency_s",
            "inter_busbw_GBps", "inter_latency_s", "layout")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_planner_rebuilds_the_scenario_it_was_given(scenario):
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    state = state_of_scenario(scenario, profile)
    assert state.dmax == state.focus == max(scenario.devices)
    rebuilt, _ = build_scenario(state, profile)
    assert max(rebuilt.devices) == max(scenario.devices)
    for name in COMPARED:
        mine, theirs = getattr(rebuilt, name), getattr(scenario, name)
        if theirs is None and name != "slow_device":  # the profile's (the test below)
            continue
        if isinstance(theirs, float):
            assert mine == pytest.approx(theirs, rel=1e-9), name
        else:
            assert mine == theirs, name


def test_values_the_scenario_leaves_to_the_profile_stay_the_profiles():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    state = state_of_scenario(Scenario(devices=[16]), profile, focus=8)
    assert state.focus == 8
    assert state.mb == profile.workload.micro_batch
    assert state.dpn == profile.hardware.devices_per_node
    assert (state.intra, state.inter) == ("profile", "profile")


def test_counts_that_are_no_power_of_two_are_listed():
    """A scenario at 24 or 48 devices (3 or 6 servers of 8) opened on a powers-of-two grid that
    never reached them (audit, session 27): the planner lists them with the powers below."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    state = state_of_scenario(Scenario(devices=[24, 48], micro_batch=2), profile)
    assert state.grid == "list" and state.dlist == "1,2,4,8,16,24,32,48"
    rebuilt, _ = build_scenario(state, profile)
    assert rebuilt.devices == [1, 2, 4, 8, 16, 24, 32, 48]
    assert state.focus == 48
