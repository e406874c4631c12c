"""Decisions that stay right where the model does not fit, is already split, or a remedy does not
help (docs/reliability.md, "Session 17: decisions where it does not fit")."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import diagnose_cases as cases
from scalesim.app.plan import against_now_text, make_plan, story
from scalesim.app.state import default_state, preset_profile

from scalesim import presets
from scalesim.cli.main import main
from scalesim.decision import decide
from scalesim.diagnosis_text import render_text
from scalesim.figures import gib, throughput
from scalesim.knee import knee_of_predictions, searched_words
from scalesim.layout_predict import plan_at
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_profile, load_workload, profile_from_presets
from scalesim.remedies import NO_CHANGE, ONE_REPLICA, rank_remedies
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import LinkCalibration, Scenario, ScenarioLayout

H200 = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200-2026-11-30"
        / "gpu-check" / "gpu-profile.json")


def _llama405_split():
    profile = profile_from_presets(presets.get_hardware("dgx-h100"), load_workload("llama3-405b"))
    return profile, Scenario(devices=[64], micro_batch=1, layout=ScenarioLayout(tp=8, pp=8))


def test_a_split_model_at_dp_1_that_does_not_fit_is_told_to_add_devices_not_zero3():
    """llama3-405b split 8 x 8 on 64 H100s (dp 1) needs 127 GiB per device. The card said
    'shard it (ZeRO-3) or split the model': it is split already, and ZeRO over one replica
    shards nothing. It now says so and names the devices where the model says it fits."""
    profile, scenario = _llama405_split()
    card = decide(profile, scenario, 64)
    # session 18 (card18): the count found is the card's one option, priced like the others
    assert not card.now.runnable and [o.key for o in card.options] == ["more_devices"]
    assert (card.options[0].devices, card.options[0].servers) == (128, 16)
    rec = card.recommendation
    assert "shard it (ZeRO-3) or split the model" not in rec
    assert "the model is split already, tp 8 x pp 8" in rec
    assert "ZeRO shards nothing over one data-parallel replica (dp 1)" in rec
    # the count named is the first doubling at which some layout the planner considers fits
    # (session 18: the planner's layouts, not only this split with ZeRO-3, which needed 256)
    # (zero2 since session 44: ZeRO-1's Megatron-Core fp32 main grads, 2 B a parameter more;
    # session 46: dp 1 x pp 16 x 2 accumulation, 0.7049 sequences/s, since FSDP's ZeRO-2 under
    # the pipeline waits for the first stage's reduce-scatter: dp 2 x pp 8 0.7309 -> 0.7028;
    # session 47: dp 2 x pp 8 zero2 again, 0.7033 sequences/s, since dp 1 x pp 16's DDP is
    # Megatron-Core's with its default gradient-norm clip, 46 B a parameter of the first stage's
    # ~3.1e9, not PyTorch DDP's 28: 18 B x 3.1e9 / 3,350 GB/s = 16.7 ms more, 0.7049 -> 0.7007)
    assert ("add devices: at 128 devices (dp 2 x tp 8 x pp 8 (zero bubble), zero2, "
            "micro-batch 1 per replica x 1 accumulation, recompute none, sequence parallel)") in rec
    # micro-batch 1 per replica: global batch 1 at dp 1 (64 devices), 2 at dp 2 (128)
    layout = ScenarioLayout(tp=8, pp=8, schedule="zb", recompute="none", sequence_parallel=True)
    named = scenario.model_copy(update={"devices": [128], "strategy": "zero2", "accumulation": 1,
                                        "layout": layout})
    p = predict(profile, named)[0]
    assert (p.dp, p.tp, p.pp, p.global_batch, p.fits) == (2, 8, 8, 2, True)
    # the dp 1 x pp 16 DDP layout it named in session 46 fits there too, and is now the slower
    pp16 = predict(profile, named.model_copy(update={"strategy": "ddp", "accumulation": 2,
                                                     "layout": layout.model_copy(update={"pp": 16})}))[0]
    assert (pp16.dp, pp16.global_batch, pp16.fits) == (1, 2, True)
    assert pp16.samples_per_s < p.samples_per_s
    assert f"it needs {gib(p.memory_bytes)} per device, which fits" in rec
    assert not plan_at(profile, scenario, 64, 1, top=1, include_unfit=True)[0].fits


def test_sharding_over_one_data_parallel_replica_is_not_a_remedy():
    """The sharding remedy at dp 1 read 'each of the 64 devices updates 1/64 of the optimizer
    state': no rank shares the replica's states, so it does not apply."""
    profile, scenario = _llama405_split()
    _, ranked = rank_remedies(profile, scenario, 64)
    shard = next(r for r in ranked if r.key == "sharding")
    assert not shard.applicable and shard.reason == ONE_REPLICA


def _slow_csv(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv(cases.slow_device()))
    return path


def test_diagnose_lists_remedies_that_do_not_help_apart_with_their_figure(tmp_path, capsys):
    """The slow-device runs listed '+0.0%' (bigger batch, accumulation, links) and '-0.2%'
    (ZeRO-1) under 'Other remedies'. They now stand apart, with their figure: 'No change' for
    the +0.0 % (session 18: the planner's verdict), 'Loses' for the loss (branch diag18: the
    planner's verdict, was 'Does not help here'); --json keeps every remedy with its gain and
    whether it helps."""
    path = _slow_csv(tmp_path)
    assert main(["diagnose", str(path)]) == 0
    text = capsys.readouterr().out
    head, _, rest = text.partition("Loses (model, applied alone):")
    assert rest, text
    # session 47 (runs_slow_rank): the 2-rank run's slow device read at its whole delay, the fit
    # follows every run (it missed that one by -10.6 %): the bigger batch gains +0.5 % (the
    # model that made the runs +1.0 %), an other remedy, no longer +0.0 %; sharding -0.6 %
    others = head.partition("Other remedies (model, applied alone):")[2]
    assert re.search(r"\+0\.5% \[[^]]+\]\s+Double the per-device batch", others)
    idle = rest.split("\n\n")[0]
    assert re.search(r"-0\.6% \[[^]]+\]\s+Shard optimizer state \(ddp -> zero1", idle)
    assert "+0.0%" not in idle
    assert main(["diagnose", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_key = {r["key"]: r for r in data["remedies"]}
    assert data["first_remedy"]["key"] == "slow_device" and by_key["slow_device"]["helps"]
    assert by_key["sharding"]["helps"] is False and by_key["sharding"]["gain"] < 0
    assert by_key["bigger_batch"]["helps"] is True
    assert all(r["helps"] == (r["gain"] >= NO_CHANGE) for r in data["remedies"] if r["applicable"])


def test_a_gain_that_prints_as_zero_is_no_remedy_for_decide_either(tmp_path):
    """The same rule in rank_remedies, which decide and the app's card read: a change whose gain
    is under NO_CHANGE 'does not change the throughput here' and is not a remedy."""
    # the loader-paced runs: every other change +0.0 % (session 47: the slow-device runs' bigger
    # batch, +0.0 % while the fit missed their 2-rank run, gains +0.5 %; runs_slow_rank)
    runs = parse_runs_text(cases.to_csv(cases.input_pipeline()), "runs.csv")
    report = diagnose_runs(runs)
    assert [r.verdict for r in report.remedies if r.key == "bigger_batch"] == ["no change"]
    assert "Other remedies" not in render_text(report)
    profile = default_profile()
    _, ranked = rank_remedies(profile, Scenario(devices=[8]), 8)
    for r in ranked:
        if r.applicable and r.prediction.fits:
            assert r.helps == (r.objective_gain >= NO_CHANGE), r
            if abs(r.objective_gain) < NO_CHANGE:
                assert r.reason.startswith("does not change") and r.verdict == "no change"


def _network_title(profile, *flags):
    card = decide(profile, Scenario(devices=[16], **dict(flags)), 16)
    return next(o.title for o in card.options if o.key == "network")


def test_a_network_upgrade_from_a_link_the_calibration_did_not_measure_says_preset(tmp_path):
    """A one-node calibration keeps the preset inter-server link (6.8 GB/s over 100 Gb/s
    Ethernet); decide offered '6.8 -> 192 GB/s' as if 6.8 were measured."""
    profile = load_profile(str(H200))
    assert "6.8 (a preset, not measured) -> 192 GB/s busbw" in _network_title(profile)
    # the record's fields say it too (a calibration written with them)
    links = [x for x in profile.links if x.level != "inter_node"] + [LinkCalibration(
        level="inter_node", measured=False, not_measured_because="one node",
        numbers_from="preset ethernet:1x100")]
    recorded = profile.model_copy(update={"links": links})
    assert "(a preset, not measured)" in _network_title(recorded)
    # a figure the user gives is not a preset; a preset profile's link is the preset chosen
    assert "(a preset" not in _network_title(profile, ("inter_busbw_GBps", 6.8))
    assert "(a preset" not in _network_title(default_profile())


def test_the_knee_starts_where_the_layout_fits():
    """Rows that do not fit are no side of a knee: 8 -> 16 devices was the knee of a curve whose
    counts up to 8 cannot run; the knee is now searched among 16 and 32."""
    rows = predict(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32]))
    assert knee_of_predictions(rows).devices_before == 8
    unfit = [r.model_copy(update={"fits": r.devices > 8}) for r in rows]
    knee = knee_of_predictions(unfit)
    assert (knee.devices_before, knee.devices_after, knee.index) == (16, 32, 5)
    assert searched_words(unfit, "rows") == "rows that fit in device memory"
    assert searched_words(rows, "rows") == "rows"


def test_the_story_and_the_layouts_reference_say_what_does_not_fit():
    plan = make_plan(preset_profile(default_state()), default_state())
    rows = [r.model_copy(update={"fits": r.devices >= 4}) for r in plan.rows]
    unfit = dataclasses.replace(plan, rows=rows, knee=knee_of_predictions(rows))
    assert plan.focus.fits and plan.focus.devices >= 4
    assert "below 4 devices this layout does not fit in memory; from there, " in story(unfit)
    assert "does not fit" not in story(plan).split("**What to do:**")[0]
    now = plan.focus
    assert against_now_text(1.5 * now.samples_per_s, now) == (
        f"+50.0% against the layout now, {throughput(now.samples_per_s)}")
    gone = now.model_copy(update={"fits": False})
    assert against_now_text(1.5 * now.samples_per_s, gone) == (  # no '+50%' against it
        f"makes it run, {throughput(1.5 * now.samples_per_s)} samples/s (today's layout does not "
        "fit in device memory)")


def test_no_knee_says_so_where_fewer_than_two_rows_fit(capsys):
    """Where no row fits, 'knee: none' said efficiency 'never drops ... between rows that fit in
    device memory', as if some did; it now says none fit (one row: a knee needs two)."""
    from scalesim.cli.main import main
    from scalesim.knee import why_no_knee

    rows = predict(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32]))
    unfit = [r.model_copy(update={"fits": False}) for r in rows]
    assert knee_of_predictions(unfit) is None
    assert why_no_knee(unfit, "rows") == ("none of the rows fits in device memory, and a knee "
                                           "lies between two that do")
    one = [r.model_copy(update={"fits": r.devices == 32}) for r in rows]
    assert why_no_knee(one, "device counts").startswith("only one of the device counts fits")
    # session 21: 'only one', not a bare '1' (the app's first screen: every number has a unit)
    assert why_no_knee(rows[:1], "rows") == "a knee lies between two rows, and there is only one"
    assert main(["predict", "--workload", "gpt-7b", "--devices", "1,2,4,8"]) == 0
    assert "knee: none (none of the rows fits in device memory" in capsys.readouterr().out
