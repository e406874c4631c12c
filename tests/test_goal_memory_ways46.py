"""Session 46 (issue 11, app): where nothing fits, the Goal tab's note and the decision card
name the hardware presets whose devices hold the layout needing least memory, as plan's error
does (docs/reliability.md, "Session 46").

Both said only "use devices with more memory". Now goal names the presets holding the
planner's least-memory layout at the largest count it searched, decide those holding it at the
largest count its more-devices search modelled: each the layout evaluated on every other
preset (``plan.RankedRows.presets_holding_least``, ``layout.presets_holding_layout``, the rule
plan's error names them by)."""

from __future__ import annotations

import json

from app_harness import open_app, preset_query
from cli_harness import run_cli

from scalesim import presets
from scalesim.decision import decide
from scalesim.figures import GIB_BYTES
from scalesim.goal import seek
from scalesim.layout_predict import plan_at
from scalesim.profiles import default_profile, load_workload, resolve_profile
from scalesim.schemas import Scenario

GOAL = ["--workload", "llama3-405b", "--hardware", "dgx-h100", "--train-samples", "1e6",
        "--price", "3", "--deadline", "300d", "--budget", "1e9"]
HELD = ("or use devices with more memory (the layout needing least memory at 64 devices fits "
        "the 141.0 GiB of the preset dgx-h200, or the 186.0 GiB of the preset gb200-nvl72)")


def _goal(capsys, *args: str) -> str:
    code, out, err = run_cli(capsys, ["goal", *GOAL, *args])
    assert code == 0, err
    return " ".join(out.split())  # the note's wrapped lines as one


def test_goal_names_the_presets_that_hold_the_least_memory_layout_and_they_run_it(capsys):
    """llama3-405b on H100s up to 64: nothing fits (102.9 GiB a device at least, at 64); the
    note names dgx-h200 and gb200-nvl72, and goal on each finds a plan; none of the 80 GiB
    presets is named. Up to 16 (384.4 GiB at least) no preset holds it: none named."""
    out = _goal(capsys, "--max-devices", "64")
    assert out.startswith("No plan runs: none of the layouts searched fits in device memory.")
    assert HELD + "; pick it with --hardware" in out, out
    named = [n for n in presets.HARDWARE if f"of the preset {n})" in out or
             f"of the preset {n}," in out]
    assert named == ["dgx-h200", "gb200-nvl72"]
    for name in named:  # the way out runs: goal on that preset has a plan
        code, there, err = run_cli(capsys, ["goal", *GOAL, "--max-devices", "64",
                                            "--hardware", name])
        assert code == 0 and there.startswith("Cheapest plan that meets the goal"), there + err
    code, a100, _ = run_cli(capsys, ["goal", *GOAL, "--max-devices", "64",
                                     "--hardware", "dgx-a100"])
    assert a100.startswith("No plan runs")  # an 80 GiB preset, not named, has none either
    sixteen = _goal(capsys, "--max-devices", "16")
    assert "the preset" not in sixteen
    assert sixteen.endswith("search more devices (--max-devices, now 16), or use devices with "
                            "more memory")


def test_goal_names_a_preset_by_evaluating_the_layout_not_by_its_name(monkeypatch):
    """dgx-h200 given the H100's 80 GiB and gb200-nvl72 left out: none holds the layout."""
    profile = resolve_profile(None, "dgx-h100", "llama3-405b")
    base = Scenario(train_samples=1e6, price_per_device_hour=3.0)
    note = seek(profile, base, 300 * 86400.0, 1e9, 64).notes[-1]
    assert "the preset dgx-h200" in note
    h100 = presets.HARDWARE["dgx-h100"].device_memory_bytes
    monkeypatch.setattr(presets, "HARDWARE", {
        n: hw.model_copy(update={"device_memory_bytes": h100}) if n == "dgx-h200" else hw
        for n, hw in presets.HARDWARE.items() if n != "gb200-nvl72"})
    note = seek(profile, base, 300 * 86400.0, 1e9, 64).notes[-1]
    assert "the preset" not in note and note.endswith("or use devices with more memory"), note



def test_the_goal_tab_names_them_and_the_hardware_preset(capsys):
    for most, held in ((64, True), (16, False)):
        at = open_app(preset_query(hw="dgx-h100", wl="llama3-405b", train=1e6, price=3.0, dl=7200.0,
                             bud=1e9, gmax=most, tab="goal"))
        assert [w.value for w in at.warning] == [
            "No plan runs: none of the layouts searched fits in device memory."]
        (caption,) = [c.value for c in at.caption if "Nothing fits in device memory" in c.value]
        if held:
            assert HELD + "; pick it with the Hardware preset in the sidebar." in caption
        else:
            assert "the preset" not in caption and caption.endswith(
                "now 16), or use devices with more memory."), caption


def _small(memory_gib: float = 4.0):
    """gpt-76.1b on the default profile's A100 servers given ``memory_gib`` a device."""
    profile = default_profile().model_copy(update={"workload": load_workload("gpt-76.1b")})
    return profile.model_copy(update={"hardware": profile.hardware.model_copy(
        update={"device_memory_bytes": memory_gib * GIB_BYTES})})


def test_the_decision_card_names_the_presets_holding_the_least_layout_it_reached():
    """gpt-76.1b at global batch 1 on 4 GiB devices: no layout fits up to 256 devices (the
    most a batch of 1 splits over); the card said 'use devices with more memory' alone. It
    names every preset whose devices hold the least-memory layout at 256, each checked by the
    planner on that preset (the same layout's row fits there)."""
    profile = _small()
    rec = decide(profile, Scenario(devices=[1], global_batch=1), 1).recommendation
    assert "nor at up to 256 devices" in rec
    assert "use devices with more memory (the layout needing least memory at 256 devices fits " in rec
    least = plan_at(profile, Scenario(devices=[1], global_batch=1), 256, 1, top=1,
                    include_unfit=True)[0]
    assert not least.fits
    named = [n for n in presets.HARDWARE if f"of the preset {n}" in rec]
    assert named and profile.hardware.name not in named
    for name in presets.HARDWARE:
        if name == profile.hardware.name:
            continue
        there = profile.model_copy(update={"hardware": presets.HARDWARE[name]})
        same = [r for r in plan_at(there, Scenario(devices=[1], global_batch=1), 256, 1,
                                   top=None, include_unfit=True) if r.layout(1) == least.layout(1)]
        assert (name in named) == (len(same) == 1 and same[0].fits), name


def test_the_card_names_none_where_no_preset_holds_it(monkeypatch):
    profile = _small()
    monkeypatch.setattr(presets, "HARDWARE", {
        n: hw.model_copy(update={"device_memory_bytes": GIB_BYTES})
        for n, hw in presets.HARDWARE.items()})
    rec = decide(profile, Scenario(devices=[1], global_batch=1), 1).recommendation
    assert "the preset" not in rec
    assert rec.endswith(": use devices with more memory, a smaller model or a larger global "
                        "batch.")


def test_scalesim_decide_says_it_as_the_card(capsys, tmp_path):
    hardware = tmp_path / "small.json"
    hardware.write_text(json.dumps(_small().hardware.model_dump(mode="json")))
    code, out, err = run_cli(capsys, ["decide", "--hardware", str(hardware), "--workload",
                                      "gpt-76.1b", "--devices", "1", "--global-batch", "1",
                                      "--price", "3", "--train-samples", "1e5"])
    assert code == 0, err
    line = " ".join(out.split())
    assert ("use devices with more memory (the layout needing least memory at 256 devices fits "
            "the 16.0 GiB of the preset dgx1-v100,") in line, line
    assert "the 141.0 GiB of the preset dgx-h200" in line
