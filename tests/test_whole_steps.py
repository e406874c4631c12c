"""A run trains in whole optimizer steps: ceil(samples / global batch) x step time (model.md §9).

Before, time to train was samples / throughput, so ``goal --train-samples 1`` answered a fraction
of one step; a run cannot end mid-step (a last partial batch is dropped or padded to a full one).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from cli_harness import run_cli, whole_lines

from scalesim.goal import seek
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario
from scalesim.training_time import (
    Goal,
    partial_batch_note,
    run_time_s,
    time_to_goal_s,
    whole_steps,
)

TRAIN = Goal(critical_batch=None, min_samples=None, train_samples=1e7, price_per_device_hour=2.0)


def test_one_sample_at_a_batch_of_256_is_one_whole_step():
    assert whole_steps(1, 256) == 1.0
    assert run_time_s(1, 256, 0.5) == 0.5  # the full step, not 1/256 of it


def test_1e7_samples_at_a_batch_of_256_take_39063_steps():
    # 1e7 / 256 = 39,062.5: the half step is a whole one
    assert whole_steps(1e7, 256) == 39_063.0
    assert run_time_s(1e7, 256, 0.25) == 39_063 * 0.25
    assert time_to_goal_s(TRAIN, 0.25, 256, 256) == 39_063 * 0.25


def test_a_whole_number_of_steps_gets_no_extra_step_from_float_noise():
    assert whole_steps(2560, 256) == 10.0
    # E_min (1 + B/B_noise) / B in floats: 0.1 x 3 / 0.3 is 1.0000000000000002
    assert whole_steps(0.1 * 3, 0.3) == 1.0
    assert whole_steps(1000 * 256 * (1 + 1e-12), 256) == 1000.0
    np.testing.assert_array_equal(whole_steps(np.array([1.0, 256, 257, 512]), 256), [1, 1, 2, 2])


def test_a_whole_count_beyond_a_billion_steps_loses_none():
    """The slack was applied as ceil(steps x (1 - 1e-9)): 1e12 whole steps came out 999,999,999,000
    (a run of 1e12 samples at batch 1 charged $9,117,902.49 where 1e12 x 0.0082061122511 s /
    3,600 x $4 = $9,117,902.50)."""
    assert whole_steps(1e12, 1) == 1e12
    assert whole_steps(1e18, 16) == 6.25e16
    assert whole_steps(1e12 + 0.5, 1) == 1e12  # within 1e-9 relative: float noise of 1e12
    assert whole_steps(1e8 + 0.5, 1) == 1e8 + 1  # half a step, beyond the slack: a whole one


def test_the_large_batch_penalty_is_counted_in_whole_steps():
    # train 1,000 samples at B_ref 100 with B_noise 100; at B = 300 the run needs
    # 1000 x (1 + 3) / (1 + 1) = 2,000 samples = 6.67 steps -> 7 steps of 0.5 s
    goal = Goal(critical_batch=100.0, min_samples=None, train_samples=1000.0, price_per_device_hour=None)
    assert time_to_goal_s(goal, 0.5, 300, 100) == pytest.approx(7 * 0.5)
    # quality: E_min 1,000 at B_noise 100, B 300: 1000 x 4 / 300 = 13.33 -> 14 steps
    quality = Goal(critical_batch=100.0, min_samples=1000.0, train_samples=None, price_per_device_hour=None)
    assert time_to_goal_s(quality, 0.5, 300, 300) == pytest.approx(14 * 0.5)


def test_predict_charges_whole_steps_for_time_and_cost():
    rows = predict(default_profile(), Scenario(devices=[1, 16], train_samples=1e7, price_per_device_hour=2.0))
    for r in rows:
        steps = math.ceil(1e7 / r.global_batch)
        assert r.time_to_train_s == pytest.approx(steps * r.step_time_s, rel=1e-12)
        assert r.cost_usd == pytest.approx(r.time_to_train_s / 3600 * r.billed_devices * 2.0)
    one = predict(default_profile(), Scenario(devices=[1, 16], train_samples=1.0))
    assert [r.time_to_train_s for r in one] == [r.step_time_s for r in one]


def test_predict_steps_to_quality_are_whole():
    rows = predict(
        default_profile(), Scenario(devices=[1, 8], critical_batch_size=64, min_samples_to_quality=1e6)
    )
    for r in rows:
        # E = E_min (1 + B/B_noise), steps = ceil(E / B)
        steps = math.ceil(1e6 * (1 + r.global_batch / 64) / r.global_batch)
        assert r.steps_to_quality == steps
        assert r.time_to_quality_s == pytest.approx(steps * r.step_time_s, rel=1e-12)


def test_goal_with_one_sample_answers_one_whole_step(capsys):
    """The brief's command: before, 0.0017 s for $1.8e-6 (micro-batch 128 x 8 accumulation, a
    1/1024 of its step); now the cheapest plan is the shortest step, one of them. (ZeRO-2, not
    DDP, since session 46: on one device FSDP's step sweeps 28 B a parameter, DDP's
    16-bit-reduced step the model's 30; $3.5e-5 under DDP.)"""
    answer = seek(default_profile(), Scenario(train_samples=1.0), 1.0, 0.01)
    best = answer.best
    assert best is not None
    step_s = best.global_batch / best.samples_per_s
    assert best.time_s == pytest.approx(step_s, rel=1e-9)
    assert best.cost_usd == pytest.approx(best.time_s / 3600 * best.devices * 3.673375)
    assert all(p.time_s == pytest.approx(p.global_batch / p.samples_per_s, rel=1e-9) for p in answer.front)
    code, out, _ = run_cli(capsys, ["goal", "--train-samples", "1", "--deadline", "1s", "--budget", "0.01"])
    assert code == 0
    out = whole_lines(out)  # each sentence and note on one line again
    assert out.splitlines()[0] == (
        "Cheapest plan that meets the goal: 1 device (1 server), micro-batch 16 x 1 "
        "accumulation, zero2, network as is: 0.034 s for $3.4e-5."
    )
    assert (
        "note: the training length (1 sample) is less than one global batch (16 samples): "
        "a run ends at a whole optimizer step, so it is charged one full step; give a "
        "smaller --batch or more --train-samples"
    ) in out
    # goal refuses --global-batch (it varies the batch itself): the note names its --batch
    code, out, _ = run_cli(capsys, ["goal", "--train-samples", "1", "--deadline", "1s",
                                    "--budget", "0.01", "--batch", "1"])
    assert code == 0 and "less than one global batch" not in out


def test_predict_and_decide_say_when_the_run_is_under_one_global_batch(capsys):
    note = "is less than one global batch"
    code, out, _ = run_cli(capsys, ["predict", "--train-samples", "1", "--devices", "1,16"])
    assert code == 0
    assert "note: the training length (1 sample) is less than one global batch (32 samples)" in out
    code, out, _ = run_cli(capsys, ["decide", "--train-samples", "1"])
    assert code == 0 and "(1 sample) is less than one global batch (512 samples)" in out
    for argv in (["predict", "--train-samples", "1e9"], ["decide", "--train-samples", "1e9"]):
        code, out, _ = run_cli(capsys, argv)
        assert code == 0 and note not in out


def test_the_note_names_the_smallest_short_batch_and_is_silent_otherwise():
    goal = Goal(critical_batch=None, min_samples=None, train_samples=100.0, price_per_device_hour=None)
    text = partial_batch_note(goal, [64, 128, 256], [64, 128, 256])
    assert text is not None and "(100 samples) is less than one global batch (128 samples)" in text
    assert partial_batch_note(goal, [64, 100], [64, 100]) is None
    nothing = Goal(critical_batch=None, min_samples=None, train_samples=None, price_per_device_hour=None)
    assert partial_batch_note(nothing, [64], [64]) is None
