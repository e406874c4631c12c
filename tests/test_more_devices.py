"""'Add devices' where nothing fits: the planner's layouts at doublings up to the device bound,
and the one-device baseline said where one device cannot hold the model (docs/reliability.md,
"Session 18")."""

from __future__ import annotations

import json

import pytest
from scalesim.app.plan import headline, make_plan, story
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile

from scalesim.bounds import bound
from scalesim.cli.main import main
from scalesim.decision import decide
from scalesim.errors import ScalesimError
from scalesim.figures import GIB_BYTES, gib
from scalesim.layout_predict import plan_at
from scalesim.predict import one_device_note, predict
from scalesim.profiles import default_profile, load_workload
from scalesim.schemas import Scenario, ScenarioLayout


def _on_a100_40gb(workload: str):
    """The default profile (a2-highgpu-8g: A100 40GB) running ``workload``."""
    return default_profile().model_copy(update={"workload": load_workload(workload)})


def test_gpt_76b_on_one_a100_40gb_is_told_more_devices_not_more_memory():
    """gpt-76.1b on one A100 40GB was told 'use devices with more memory' (ZeRO-3 of today's
    split up to 16 devices). Its weights, gradients and Adam state are 16 B/param: 1,134 GiB,
    so no layout of 16 devices fits 40 GiB (71 GiB per device even fully split), and 32 can
    (35 GiB). The card names more devices and the planner's layout there: since session 59
    64, whose pipeline trains for fewer device-hours than 32's ZeRO-3, with 32 in a note."""
    profile = _on_a100_40gb("gpt-76.1b")
    memory = profile.hardware.device_memory_bytes
    states = 16 * profile.workload.params  # 76.1e9 parameters
    assert states / 16 > memory >= states / 32  # by hand: 71 GiB > 40 GiB >= 35 GiB
    card = decide(profile, Scenario(devices=[1]), 1)
    rec = card.recommendation
    assert "use devices with more memory" not in rec
    # dp 1 x tp 8 x pp 4 with DDP no longer fits (session 48): Megatron-Core's DDP holds its
    # fp32 main_grad buffer, 18 B a parameter, 43.9 GiB; ZeRO-3 over dp 4 does: the fewest
    layout = ScenarioLayout(tp=8, pp=1, recompute="full", sequence_parallel=True)
    fewest = predict(profile, Scenario(devices=[32], micro_batch=2, accumulation=4,
                                       strategy="zero3", layout=layout))[0]
    ddp = predict(profile, Scenario(devices=[32], micro_batch=2, accumulation=16, layout=ScenarioLayout(
        tp=8, pp=4, schedule="interleaved", virtual_stages=4, recompute="full",
        sequence_parallel=True)))[0]
    assert not ddp.fits
    assert fewest.fits and fewest.global_batch == 32  # weak scaling: batch 1 per device
    (passed,) = [n for n in card.notes if n.startswith("not shown: the fewest devices")]
    assert ("the fewest devices at which a layout fits, 32 devices (dp 4 x tp 8 x pp 1, zero3, "
            "micro-batch 2 per replica x 4 accumulation, recompute full, sequence parallel)"
            in passed)
    # session 59: twice as many, a pipeline of 16 with DDP, trains for fewer device-seconds a
    # sample (64 / its samples/s against 32 / the fewest's, by more than the model's error)
    named = predict(profile, Scenario(devices=[64], micro_batch=1, accumulation=64, layout=ScenarioLayout(
        tp=4, pp=16, schedule="interleaved", virtual_stages=2, recompute="selective",
        sequence_parallel=True)))[0]
    assert named.fits
    assert 64 / named.samples_per_s < (1 - 0.028) * 32 / fewest.samples_per_s
    assert ("add devices: at 64 devices (dp 1 x tp 4 x pp 16 (interleaved 1F1B, 2 virtual "
            "stages), no data parallelism, micro-batch 1 per replica x 64 accumulation, "
            "recompute selective, sequence parallel)") in rec
    assert f"it needs {gib(named.memory_bytes)} per device, which fits" in rec
    # half the count: no layout the planner considers fits (the best is the most frugal)
    assert not plan_at(profile, Scenario(devices=[1]), 16, 16, top=1, include_unfit=True)[0].fits


def test_the_layout_named_is_the_fastest_that_fits_not_just_zero3():
    """A parameter-count workload (gpt-7b, 102 GiB on one device) has no split: each ZeRO stage
    is tried and the fastest that fits is named. At 4 A100 40GB ZeRO-2 (36 GiB) and ZeRO-3
    (27 GiB) fit; ZeRO-2 runs faster, so decide (which ranks by speed at one global batch)
    names it. At 2 devices every stage needs more than 40 GiB."""
    profile = _on_a100_40gb("gpt-7b")
    rec = decide(profile, Scenario(devices=[1]), 1).recommendation
    at = {
        (n, s): predict(profile, Scenario(devices=[n], strategy=s))[0]
        for n in (2, 4)
        for s in ("ddp", "zero1", "zero2", "zero3")
    }
    assert not any(p.fits for (n, _), p in at.items() if n == 2)
    assert [s for (n, s), p in at.items() if n == 4 and p.fits] == ["zero2", "zero3"]
    assert at[(4, "zero2")].samples_per_s > at[(4, "zero3")].samples_per_s
    assert (
        f"add devices: at 4 devices (zero2) it needs "
        f"{gib(at[(4, 'zero2')].memory_bytes)} per device, which fits"
    ) in rec


def test_nothing_fits_anywhere_says_how_far_it_searched():
    """With 1 GiB devices nothing fits at any doubling: the sentence said 'up to 16 devices';
    it now searches to the device-count bound (1,048,576) and says so."""
    profile = _on_a100_40gb("gpt-76.1b")
    tiny = profile.model_copy(
        update={"hardware": profile.hardware.model_copy(update={"device_memory_bytes": GIB_BYTES})}
    )
    rec = decide(tiny, Scenario(devices=[1]), 1).recommendation
    most = int(bound("devices").high)
    assert most == 2**20
    assert f"nor at up to {most:,} devices (2x, 4x, ... today's; the planner's" in rec
    # the presets whose devices hold the least-memory layout at the bound (session 46): the
    # most sharded layout there needs well under 16 GiB, so every other preset holds it
    assert (f"use devices with more memory (the layout needing least memory at {most:,} devices "
            "fits the 16.0 GiB of the preset dgx1-v100, or the 80.0 GiB of the preset dgx-a100,"
            ) in rec
    assert rec.endswith("or the 186.0 GiB of the preset gb200-nvl72), or a smaller model.")
    assert not plan_at(tiny, Scenario(devices=[1]), most, most, top=1, include_unfit=True)[0].fits


def test_a_fixed_global_batch_bounds_the_search_and_the_sentence_says_where():
    """gpt-7b with a global batch of 2 on one A100 40GB: no ZeRO stage fits 2 devices, and the
    batch does not split over 4 or more, so nothing beyond 2 was modelled. The sentence said
    (and, searching to the bound, would say) 'up to 1,048,576 devices'; it now says 2 and why."""
    profile = _on_a100_40gb("gpt-7b")
    scenario = Scenario(devices=[1], global_batch=2)
    rec = decide(profile, scenario, 1).recommendation
    assert "nor at up to 2 devices (2x, 4x, ... today's;" in rec
    assert "no layout is valid at more for a global batch of 2" in rec
    assert rec.endswith("use devices with more memory, a smaller model or a larger global batch.")
    for strategy in ("ddp", "zero1", "zero2", "zero3"):
        two = scenario.model_copy(update={"devices": [2], "strategy": strategy})
        assert not predict(profile, two)[0].fits
        with pytest.raises(ScalesimError):
            predict(profile, two.model_copy(update={"devices": [4]}))
    one = decide(profile, Scenario(devices=[1], global_batch=1), 1).recommendation
    assert "and no layout is valid at 2x today's devices or more for a global batch of 1" in one


def test_a_count_at_the_bound_searches_nothing_more_and_says_so():
    profile = _on_a100_40gb("gpt-76.1b")
    tiny = profile.model_copy(
        update={"hardware": profile.hardware.model_copy(update={"device_memory_bytes": GIB_BYTES})}
    )
    most = int(bound("devices").high)
    scenario = Scenario(devices=[most], global_batch=most)
    rec = decide(tiny, scenario, most).recommendation
    assert f"and {most:,} devices is the most the model takes" in rec


def test_efficiency_against_a_one_device_run_that_cannot_happen_is_said(capsys):
    """gpt-7b with ZeRO-3 on 8 A100 40GB 'gives 8.4x one device', a device that cannot hold its
    102 GiB. predict, decide and the app's story now say the baseline is hypothetical; a model
    that one device holds (the default bert-large) gets no such note."""
    profile = _on_a100_40gb("gpt-7b")
    scenario = Scenario(devices=[1, 8], strategy="zero3")
    rows = predict(profile, scenario)
    assert not rows[0].fits and rows[1].fits  # one device: 102 GiB > 40 GiB
    assert [r.one_device_fits for r in rows] == [False, False]
    note = one_device_note(rows)
    assert note.startswith("one device cannot hold the model")
    card = decide(profile, scenario, 8)
    assert "x one device" in card.question and note in card.notes
    assert main(["predict", "--workload", "gpt-7b", "--devices", "1,8", "--strategy", "zero3"]) == 0
    assert f"note: {note}" in capsys.readouterr().out
    fits = predict(default_profile(), Scenario(devices=[1, 8]))
    assert all(r.one_device_fits for r in fits) and one_device_note(fits) is None
    assert note not in decide(default_profile(), Scenario(devices=[8]), 8).notes
    assert main(["predict", "--workload", "gpt-7b", "--devices", "1,8", "--strategy", "zero3", "--json"]) == 0
    assert [r["one_device_fits"] for r in json.loads(capsys.readouterr().out)] == [False, False]


def test_the_app_says_the_one_device_baseline_where_one_device_cannot_hold_the_model():
    """The app's story, headline and HTML report give the efficiency of gpt-7b with ZeRO-3 on
    8 A100 40GB against one device that cannot hold it: each now says so; the default
    workload (bert-large, 9 GiB) gets no such words."""
    state = default_state().model_copy(
        update={"wl": "gpt-7b", "strat": "zero3", "dmax": 8, "mb": 1, "focus": 8}
    )
    plan = make_plan(preset_profile(state), state)
    assert plan.focus.devices == 8 and plan.focus.fits and not plan.rows[0].fits
    note = one_device_note(plan.rows)
    assert note is not None and f"({note})" in story(plan)
    assert headline(plan)["one_device"] == note
    assert "One-device baseline" in report_html(plan, "http://x")
    plain = make_plan(preset_profile(default_state()), default_state())
    assert plain.focus.fits and "one device cannot hold" not in story(plain)
    assert "one_device" not in headline(plain)
    assert "One-device baseline" not in report_html(plain, "http://x")
