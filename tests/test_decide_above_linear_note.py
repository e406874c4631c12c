"""``decide`` said "8 devices give 8.8x one device" (gpt-1.7b, ZeRO-2 on 8 H100s) without
predict's note on an efficiency above 100 % (``predict.above_linear_note``, session 46); the
card now says it. ``goal`` shows no efficiency or speed-up, so it owes none."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.decision import decide
from scalesim.predict import above_linear_note, predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario


def test_decide_explains_more_than_n_times_one_device_on_n():
    """'8 devices give 8.8x one device': the card's notes say why (predict's words), in the
    CLI's text and --json; a card at 100 % or under has no such note."""
    profile = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    scenario = Scenario(devices=[8], strategy="zero2")
    now = predict(profile, scenario)[0]
    assert now.efficiency > 1.05
    card = decide(profile, scenario, 8)
    assert above_linear_note([now]) in card.notes
    under = Scenario(devices=[16], strategy="ddp")
    row = predict(profile, under)[0]
    assert row.efficiency < 1
    assert not [n for n in decide(profile, under, 16).notes if n.startswith("efficiency above")]


def test_decide_cli_prints_the_note(capsys):
    argv = ["decide", "--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--strategy", "zero2",
            "--devices", "8"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    assert "give 8.8x one device" in out
    assert "note: efficiency above 100% (up to 109.8% at 8 devices)" in out
    code, out, err = run_cli(capsys, [*argv, "--json"])
    assert code == 0, err
    assert any(n.startswith("efficiency above 100% (up to 109.8%") for n in json.loads(out)["notes"])


def test_goal_shows_no_efficiency_so_owes_no_note(capsys):
    """goal names plans by time and money; neither its text nor its JSON gives an efficiency,
    a speed-up or 'x one device', so there is nothing above 100 % to explain."""
    argv = ["goal", "--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--deadline", "100h",
            "--budget", "100000", "--train-samples", "1e7", "--max-devices", "16"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    assert "x one" not in out and "efficien" not in out.lower()
    code, out, err = run_cli(capsys, [*argv, "--json"])
    assert code == 0, err
    text = json.dumps(json.loads(out)["front"]) + json.dumps(json.loads(out)["best"])
    assert "efficien" not in text and "speedup" not in text
