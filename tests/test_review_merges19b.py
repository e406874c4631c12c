"""Session 19 review (branch rev19b, docs/reliability.md): decide's add-server notes name what
differs from the option shown, not two full titles; a fixed global batch that splits over no
added-server count says which counts were tried."""
from __future__ import annotations

import json
from types import SimpleNamespace

from scalesim.cli.main import main
from scalesim.decision import _splits_nowhere
from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.schemas import Scenario


def _notes(capsys, *args: str) -> list[str]:
    assert main(["decide", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["notes"]


def test_the_kept_layout_note_says_only_what_the_planners_layout_changes(capsys):
    """Was 'kept today's layout at 24 devices: Add one server (16 -> 24 devices), the planner's
    layout: zero1 -> zero2, global batch 1.5x is 0.1% faster, ...' (both runs at 24 devices,
    global batch 1.5x: only the ZeRO stage differs). ZeRO-3 since session 44: Megatron-Core's
    ZeRO-1 reduces its fp32 main grads, and the add-a-server row of today's ZeRO-1 is no longer
    within the median error of the planner's (no kept note there)."""
    notes = _notes(capsys, "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "16",
                   "--strategy", "zero3")
    (kept,) = [n for n in notes if n.startswith("kept today's layout")]
    assert kept.startswith("kept today's layout at 24 devices: the planner's layout (zero3 -> "
                           "zero2) is 1."), kept
    assert kept.endswith("% faster, under the model's median error of 2.9%"), kept


def test_a_batch_that_splits_over_no_added_count_names_every_count_tried(capsys):
    """8 devices at global batch 8: 16, 24 and 32 devices were tried; the note said only 'does
    not split evenly over 16 devices', as if 24 might."""
    notes = _notes(capsys, "--devices", "8", "--global-batch", "8")
    assert ("one more server not compared: global batch 8 does not split evenly over any of "
            "16, 24 and 32 devices x 1 accumulation steps; pick a global batch divisible by devices "
            "x accumulation") in notes, notes


def _ctx(devices: int, tp: int, pp: int, global_batch: int | None, words=GPU_NOUNS):
    scenario = Scenario(devices=[devices], global_batch=global_batch)
    return SimpleNamespace(scenario=scenario, words=words,
                           now=SimpleNamespace(devices=devices, tp=tp, pp=pp))


def test_splits_nowhere_names_dp_for_a_split_model_and_processes_on_a_cpu():
    # tp x pp 16 on 8-device servers from 64: 80, 96, ... are dp 5, 6, ...; batch 4 splits none
    why = _splits_nowhere(_ctx(64, 8, 2, 4), 8, 16)
    assert why.startswith("global batch 4 does not split evenly over any of 80, 96, "), why
    assert "devices (dp 5, 6, " in why and why.endswith(
        "divisible by dp (devices / tp x pp 16) x accumulation"), why
    cpu = _splits_nowhere(_ctx(2, 1, 1, 3, CPU_NOUNS), 2, 1)
    assert "over any of 4, 6 and 8 processes x 1 accumulation steps" in cpu, cpu
    # a batch some count takes, or none fixed: nothing to say
    assert _splits_nowhere(_ctx(16, 1, 1, 256), 8, 1) == ""
    assert _splits_nowhere(_ctx(16, 1, 1, None), 8, 1) == ""
