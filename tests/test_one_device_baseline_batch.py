"""Strong scaling's one-device baseline runs the whole global batch over the accumulation steps
per micro-step (docs/model.md §7). Where one device holds the model but not that micro-batch,
the note said 'one device cannot hold the model' (resnet50 on a 16 GB V100 at global batch
4,096: 229 GiB at 4,096 samples per micro-step, the model itself a few GiB); it now says which
(session 39)."""

from __future__ import annotations

from cli_harness import run_cli
from scalesim.app.plan import headline, make_plan, story
from scalesim.app.state import default_state, preset_profile

from scalesim.device_nouns import CPU_NOUNS
from scalesim.predict import one_device_note, predict
from scalesim.profiles import default_profile, load_hardware, load_workload, profile_from_presets
from scalesim.schemas import Scenario

AGAINST = ("speed-up, efficiency and 'Nx one device' are against the model's hypothetical "
           "one-device run")


def _profile(hardware: str, workload: str):
    return profile_from_presets(load_hardware(hardware), load_workload(workload))


def test_a_global_batch_one_device_cannot_hold_is_not_called_the_model(capsys):
    profile = _profile("dgx1-v100", "resnet50")
    rows = predict(profile, Scenario(devices=[1, 8, 16], global_batch=4096))
    # the model fits one V100 at one image per micro-step; the whole 4,096 does not
    alone = predict(profile, Scenario(devices=[1], micro_batch=1))[0]
    assert alone.fits and not rows[0].fits and rows[2].fits
    assert [r.one_device_micro_batch for r in rows] == [4096] * 3
    assert all(r.one_device_holds_model and not r.one_device_fits for r in rows)
    note = one_device_note(rows)
    assert note == ("one device holds the model but not 4,096 samples per micro-step, the global "
                    f"batch of 4,096 in one step: {AGAINST} at that micro-batch, not one that "
                    "accumulates smaller ones (docs/model.md §7, §10)")
    code, out, err = run_cli(capsys, ["predict", "--workload", "resnet50", "--hardware",
                                      "dgx1-v100", "--global-batch", "4096", "--devices",
                                      "1,8,16"])
    assert code == 0, err
    assert f"note: {note}" in out.splitlines() and "cannot hold the model" not in out


def test_with_accumulation_the_baseline_micro_batch_is_the_global_batch_over_the_steps():
    """bert-large at global batch 512 over 2 accumulation steps: the baseline runs 512 / 2 = 256
    sequences per micro-step on one 16 GB V100 (the model alone fits)."""
    rows = predict(_profile("dgx1-v100", "bert-large"),
                   Scenario(devices=[1, 8], global_batch=512, accumulation=2))
    assert [r.one_device_micro_batch for r in rows] == [256, 256]
    assert one_device_note(rows, CPU_NOUNS) == (
        "one process holds the model but not 256 samples per micro-step, the global batch of "
        "512 over 2 accumulation steps: speed-up, efficiency and 'Nx one process' are against "
        "the model's hypothetical one-process run at that micro-batch, not one that accumulates "
        "smaller ones (docs/model.md §7, §10)")


def test_a_layout_baseline_says_its_micro_batch_too():
    """gpt-1.7b through the layout model at global batch 64 on A100 80GB: the one-device run
    of 64 sequences per micro-step does not fit, one sequence does."""
    profile = _profile("dgx-a100", "gpt-1.7b")
    rows = predict(profile, Scenario(devices=[1, 8], global_batch=64))
    assert rows[0].dp == 1 and not rows[0].one_device_fits
    assert predict(profile, Scenario(devices=[1], micro_batch=1))[0].fits
    assert one_device_note(rows).startswith(
        "one device holds the model but not 64 samples per micro-step, the global batch of 64 "
        "in one step: ")


def test_a_model_one_device_cannot_hold_keeps_its_words():
    """gpt-7b under ZeRO-3 on A100 40GB: 102 GiB at one sequence per micro-step."""
    profile = default_profile().model_copy(update={"workload": load_workload("gpt-7b")})
    rows = predict(profile, Scenario(devices=[1, 8], strategy="zero3"))
    assert not predict(profile, Scenario(devices=[1], micro_batch=1))[0].fits
    assert [r.one_device_holds_model for r in rows] == [False, False]
    assert one_device_note(rows) == f"one device cannot hold the model: {AGAINST} (docs/model.md §10)"


def test_the_app_says_the_batch_not_the_model():
    state = default_state().model_copy(update={
        "hw": "dgx1-v100", "wl": "resnet50", "mode": "strong", "gb": 4096, "dmax": 16,
        "focus": 16})
    plan = make_plan(preset_profile(state), state)
    note = one_device_note(plan.rows)
    assert note.startswith("one device holds the model but not 4,096 samples per micro-step")
    assert f"({note})" in story(plan) and headline(plan)["one_device"] == note
