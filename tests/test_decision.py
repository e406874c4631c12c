"""The decision card: options that run and win, priced from sourced tables; CLI = app."""

from __future__ import annotations

import json

import pytest
from app_harness import open_app
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile

from scalesim.cli.main import main
from scalesim.decision import card_rows, decide
from scalesim.network_upgrades import UPGRADES, upgrades_for
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario


def test_the_default_card_asks_the_articles_question_and_prices_every_option():
    scenario = Scenario(devices=[1, 2, 4, 8, 16], train_samples=2e9)
    sixteen = predict(default_profile(), scenario)[-1]
    card = decide(default_profile(), scenario, 16)
    assert card.question.startswith(f"16 A100-SXM4 40GB devices give {sixteen.speedup:.1f}x")
    keys = [o.key for o in card.options]
    assert 2 <= len(keys) <= 3 and {"add_server", "network", "settings"} >= set(keys)
    for o in card.options:
        assert o.runnable and o.time_s is not None and o.time_s < card.now.time_s
        assert o.total_usd == pytest.approx(o.time_s / 3600 * o.usd_per_hour)
    # a third server over 100 Gb/s Ethernet is slower: the two-server tree sends S per node,
    # three servers 2S (docs/model.md section 2), so the card leaves it out and says why
    assert "add_server" not in keys
    assert any("Add one server (16 -> 24 devices)" in n for n in card.notes)
    network = next(o for o in card.options if o.key == "network")
    assert "4 x 100 Gb/s EFA" in network.title  # named hardware, not only GB/s
    assert network.extra_usd_per_hour == pytest.approx(2 * (32.7726 - 29.387))
    assert network.usd_per_hour == pytest.approx(16 * 29.387 / 8 + network.extra_usd_per_hour)
    assert card.recommendation.endswith(".") and card.recommendation.count(". ") == 0
    assert card.assumption


def test_options_that_lose_or_do_not_fit_are_not_offered():
    # one server: adding devices only helps up to the server, the network does not apply
    card = decide(default_profile(), Scenario(devices=[8], micro_batch=100_000), 8)
    assert all(o.runnable for o in card.options)
    assert card.options[0].key == "settings" and "fit in device memory" in card.recommendation
    assert any("not shown" in n for n in card.notes)


def test_every_network_upgrade_has_a_source_and_a_date():
    for up in UPGRADES:
        assert up.source and len(up.as_of) == 7 and up.as_of[4] == "-"
        assert up.link().busbw_GBps > 0
    assert [u.key for u in upgrades_for("A100-SXM4 40GB", 11.75)][0] == "efa-4x100"
    assert "efa-4x100" not in [u.key for u in upgrades_for("H100-SXM5 80GB", 11.75)]
    assert upgrades_for("H100-SXM5 80GB", 1000.0) == []


def _plan():
    state = default_state().model_copy(update={"dmax": 16, "train": 2e9})
    return make_plan(preset_profile(state), state)


def test_cli_decide_gives_the_apps_card(tmp_path, capsys):
    plan = _plan()
    path = tmp_path / "scenario.json"
    path.write_text(plan.scenario.model_dump_json())
    code = main(["decide", "--hardware", plan.state.hw, "--workload", plan.state.wl,
                 "--scenario", str(path), "--focus", str(plan.focus.devices), "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(plan.decision.to_dict()))


def test_cli_decide_table_and_bad_focus(capsys):
    assert main(["decide", "--devices", "1,2,4,8,16", "--train-samples", "2e9"]) == 0
    out = capsys.readouterr().out
    sixteen = predict(default_profile(), Scenario(devices=[16]))[-1]
    assert out.startswith(f"16 A100-SXM4 40GB devices give {sixteen.speedup:.1f}x")
    assert "recommendation:" in out
    assert main(["decide", "--devices", "1,2,4", "--focus", "16"]) == 2
    err = capsys.readouterr().err
    assert "--focus 16" in err and "\n" not in err.strip()


def test_the_page_and_the_report_lead_with_the_card():
    plan = _plan()
    at = open_app({"v": "1", "dmax": "16", "train": "2000000000"})
    shown = at.table[0].value.reset_index().to_dict("records")
    assert shown == card_rows(plan.decision)
    assert any(plan.decision.recommendation in s.value.replace("\\", "") for s in at.success)
    html = report_html(plan, "http://x/?v=1")
    assert html.index('id="decision"') < html.index("<h2>Headline</h2>") < html.index("share link")
