"""A global batch splits into micro-batches and accumulation steps within the bounds table
(``scalesim.bounds``: at most 2**24 samples per micro-batch, 4,096 micro-steps): predict, sweep,
decide refuse a split past them in one line naming the flags; goal, the remedies and the app
leave out what would pass them (session 10 polish)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.bounds import bound
from scalesim.errors import ScalesimError
from scalesim.predict import accumulation_max, global_batch_splits, micro_batch_max
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

HUGE = str(2**40)  # within the global batch's own bound: 2**37 samples per device on 8


def test_the_limits_are_the_bounds_tables():
    assert (micro_batch_max(), accumulation_max()) == (int(bound("micro_batch").high),
                                                       int(bound("accumulation").high))
    assert list(global_batch_splits(2**27, [4, 8, 16, 3], 1)) == [False, True, True, False]
    assert list(global_batch_splits(2**27, 8, [1, 2, 4096])) == [True, True, True]
    assert not global_batch_splits(4, 8, 1)  # under one sample per device


@pytest.mark.parametrize("command", ["predict", "decide"])
@pytest.mark.parametrize("extra", [[], ["--workload", "llama3-8b", "--hardware", "dgx-h100"]])
def test_a_micro_batch_past_the_table_is_refused_in_one_line(capsys, command, extra):
    """`predict --global-batch 1099511627776 --devices 8` predicted a micro-batch of
    137,438,953,472 sequences per device ('fits no'); decide made a card of it."""
    code, out, err = run_cli(capsys, [command, "--global-batch", HUGE, "--devices", "8", *extra])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert "is a micro-batch of 137,438,953,472 samples, past the largest of the bounds " \
           "table (16,777,216); raise --devices or --accumulation (at most 4,096), or lower " \
           "--global-batch" in err
    assert ("over dp 8 x 1 accumulation step (8 devices)" if extra
            else "over 8 devices x 1 accumulation step") in err


@pytest.mark.parametrize("command", ["predict", "sweep"])
@pytest.mark.parametrize("extra, over", [
    ([], "over 1, 2 and 4 devices x 1 accumulation step"),
    (["--workload", "llama3-8b", "--hardware", "dgx-h100", "--tp", "8"],
     "over dp 1, 2 or 4 x 1 accumulation step (8, 16 and 32 devices)")])
def test_a_list_whose_every_micro_batch_is_past_the_table_names_every_count(capsys, command,
                                                                              extra, over):
    """`predict --devices 1,2 --global-batch 67108864` named only '1 devices' (session 43). By
    hand: 2**26 over 1, 2, 4 replicas is 2**26, 2**25, 2**24 x 2 samples, each past 2**24."""
    devices = "8,16,32" if extra else "1,2,4"
    code, out, err = run_cli(capsys, [command, "--global-batch", str(2**27), "--devices",
                                      devices, *extra])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert (f"global batch 134,217,728 {over} is a micro-batch of 134,217,728; 67,108,864 or "
            "33,554,432 samples, past the largest of the bounds table (16,777,216); raise "
            "--devices or --accumulation (at most 4,096), or lower --global-batch") in err


def test_predict_at_the_largest_micro_batch_still_runs(capsys):
    code, out, _ = run_cli(capsys, ["predict", "--global-batch", str(8 * 2**24), "--devices",
                                    "8", "--json"])
    assert code == 0 and json.loads(out)[0]["micro_batch"] == 2**24


@pytest.mark.parametrize("extra", [[], ["--workload", "llama3-8b", "--hardware", "dgx-h100"]])
def test_sweep_drops_a_micro_batch_past_the_table(capsys, extra):
    code, out, err = run_cli(capsys, ["sweep", "--global-batch", HUGE, "--devices", "8", *extra])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    # a one-value global batch no count runs: predict's line (session 43)
    _, _, said = run_cli(capsys, ["predict", "--global-batch", HUGE, "--devices", "8", *extra])
    assert err == said.replace("scalesim predict:", "scalesim sweep:")
    assert "past the largest of the bounds table (16,777,216)" in err
    code, out, err = run_cli(capsys, ["sweep", "--global-batch-values", HUGE, "--devices", "8",
                                      *extra])  # a swept one: sweep's own count of the drops
    assert code == 2 and "into micro-batches of at most 16,777,216 samples" in err
    # of 8 and 16 devices x 1 and 2 micro-steps, 8 x 1 is past the bound: dropped and counted
    code, out, err = run_cli(capsys, ["sweep", "--global-batch", str(2**28), "--devices", "8,16",
                                      "--accumulation-values", "1,2", "--format", "json"])
    assert code == 0
    assert sorted((r["devices"], r["accumulation"]) for r in json.loads(out)) == [
        (8, 2), (16, 1), (16, 2)]
    assert "1 combination dropped: 1 does not split the global batch evenly" in err


def test_goal_searches_within_the_table(capsys):
    """goal multiplies the micro-batch (up to 4x) and the accumulation (up to 8x): at the
    table's largest it refused with 'sweep axis 'micro_batch': 33554432 is outside ...', an
    axis the user never swept."""
    goal = ["goal", "--deadline", "1000", "--budget", "1e6", "--train-samples", "1e9", "--price",
            "2", "--max-devices", "16", "--json"]
    for flag, value in (("--batch", 2**24), ("--accumulation", 4096)):
        code, out, err = run_cli(capsys, [*goal, flag, str(value)])
        assert code == 0, err
        answer = json.loads(out)
        plans = [p for p in (answer["best"], answer["closest"], *answer["front"]) if p]
        assert answer["evaluated"] > 0 and (plans or flag == "--batch")  # 2**24 fits nowhere
        assert all(p["micro_batch"] <= 2**24 and p["accumulation"] <= 4096 for p in plans)


def test_remedies_past_the_table_are_not_applicable():
    """decide offered 'accumulate gradients over 16384 micro-steps (now 4096)', which predict
    --accumulation 16384 refuses."""
    profile = profile_from_presets(get_hardware("dgx-a100"), get_workload("bert-large"))
    _, results = rank_remedies(profile, Scenario(devices=[8], accumulation=4096,
                                                 micro_batch=2**24), 8)
    by_key = {r.key: r for r in results}
    for key, why in (("bigger_batch", "a micro-batch of 33,554,432 is past the bounds table's "
                      "16,777,216"),
                     ("accumulation", "16,384 micro-steps are past the bounds table's 4,096"),
                     ("fit_memory", "accumulation 4,096 cannot double within the bounds "
                      "table's 4,096 micro-steps")):
        assert not by_key[key].applicable and by_key[key].reason == why
    _, results = rank_remedies(profile, Scenario(devices=[8], accumulation=2048,
                                                 micro_batch=1024), 8)
    fit = next(r for r in results if r.key == "fit_memory")
    assert fit.applicable and fit.scenario.accumulation == 4096  # not 8192 and more


def test_the_app_leaves_out_device_counts_past_the_table():
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState, preset_profile

    state = AppState(mode="strong", gb=2**28, dmax=32)
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.devices == [16, 32] and scenario.global_batch == 2**28
    # the page's controls (was "global batch 268,435,456 over devices x accumulation 1, 2, 4 or
    # 8 ..., or give counts whose devices x accumulation is at least 16" before session 49:
    # notation no control shows)
    assert ("Global batch 268,435,456 over 1, 2, 4 or 8 devices x Gradient accumulation 1 is a "
            "micro-batch of 268,435,456; 134,217,728; 67,108,864 or 33,554,432 samples, past the "
            "largest of the bounds table (16,777,216): the rows on 1, 2, 4 and 8 devices are left "
            "out; Gradient accumulation 16 or Global batch 16777216 runs every count, or give "
            "counts whose devices x Gradient accumulation is at least 16") in notes
    state = AppState(mode="strong", gb=2**40, dmax=16)
    # predict's line, the app's controls for its flags (session 44: 'does not split evenly
    # over 1, 2, 4, 8 and 16 devices x 1 accumulation into micro-batches of at most ...')
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, preset_profile(state))  # as predict refuses it (no weak scaling)
    assert str(refused.value) == (
        "global batch 1,099,511,627,776 over 1, 2, 4, 8 and 16 devices x 1 accumulation step is "
        "a micro-batch of 1,099,511,627,776; 549,755,813,888; 274,877,906,944; 137,438,953,472 "
        "or 68,719,476,736 samples, past the largest of the bounds table (16,777,216); raise "
        "Largest device count or Gradient accumulation (at most 4,096), or lower Global batch")
