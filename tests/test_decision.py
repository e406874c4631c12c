"""The decision card: options that run and win, priced from sourced tables; CLI = app."""

from __future__ import annotations

import json
from dataclasses import asdict
from types import SimpleNamespace

import pytest
from app_harness import open_app
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR, MODEL_PARALLEL_MEDIAN_ERROR
from scalesim.cli.main import main
from scalesim.decision import ASSUMPTIONS, DecisionOption, _recommend, card_rows, decide
from scalesim.device_nouns import GPU_NOUNS
from scalesim.network_upgrades import UPGRADES, upgrades_for
from scalesim.predict import predict
from scalesim.profiles import default_profile, resolve_profile
from scalesim.schemas import Scenario
from scalesim.shipped import validation_path
from scalesim.validate import load_cases, validate_cases
from scalesim.validate_parallel import load_parallel_cases, validate_parallel_cases


def test_the_default_card_asks_the_articles_question_and_prices_every_option():
    scenario = Scenario(devices=[1, 2, 4, 8, 16], train_samples=2e9)
    sixteen = predict(default_profile(), scenario)[-1]
    card = decide(default_profile(), scenario, 16)
    assert card.question.startswith(f"16 A100-SXM4 40GB devices give {sixteen.speedup:.1f}x")
    keys = [o.key for o in card.options]
    assert 2 <= len(keys) <= 3 and {"add_server", "fewer_servers", "network", "settings"} >= set(keys)
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


def test_a_network_upgrade_on_an_unmeasured_link_says_to_measure_it_before_buying():
    """Session 17: the default card leads with a network upgrade whose gain rests on the preset
    profile's 6.8 GB/s inter-server figure (NCCL sockets over 100 Gb/s TCP, from a published
    issue), not a measurement of the user's servers; a note says so and how to measure it. A
    figure the user gives (--inter-busbw) or a card without a network option has no such note."""
    scenario = Scenario(devices=[16])
    card = decide(default_profile(), scenario, 16)
    assert card.options[0].key == "network"
    (note,) = [n for n in card.notes if "measure it before buying" in n]
    assert note.startswith("the network upgrade's gain starts from today's inter-server 6.8 GB/s "
                           "busbw, not a measurement of these servers (a preset profile); ")
    assert "scalesim calibrate --from-nccl-tests inter=LOG" in note
    given = decide(default_profile(), scenario.model_copy(update={"inter_busbw_GBps": 6.8}), 16)
    assert [o.key for o in given.options] == [o.key for o in card.options]
    assert not any("measure it before buying" in n for n in given.notes)
    one_server = decide(default_profile(), Scenario(devices=[8]), 8)
    assert "network" not in [o.key for o in one_server.options]
    assert not any("measure it before buying" in n for n in one_server.notes)


def test_filling_the_server_assumes_no_inter_server_link():
    """Session 17's review: `decide --devices 1` offered "Fill the server (1 -> 8 devices)" with
    the extra server's assumption (the inter-server link scales as predicted), which a fill inside
    one server does not involve; adding a server keeps its own."""
    fill = decide(default_profile(), Scenario(devices=[1]), 1)
    (option,) = [o for o in fill.options if o.key == "add_server"]
    # session 19: at 8 devices the planner's ZeRO beats today's DDP, and the title says so;
    # ZeRO-2 since bert-large declares its 24 layers (session 41: 58.14 against ZeRO-1's 58.25 ms)
    assert option.title == ("Fill the server (1 -> 8 devices), the planner's layout: ddp -> zero2, "
                            "global batch 8x")  # session 19: at today's per-device batch
    assert option.assumption.startswith(ASSUMPTIONS["fill_server"] + "; ")
    assert "inter-server" not in option.assumption
    assert fill.recommendation.startswith("Fill the server") and fill.assumption == option.assumption
    more = decide(default_profile(), Scenario(devices=[8], inter_busbw_GBps=200.0), 8)
    (added,) = [o for o in more.options if o.key == "add_server"]
    assert added.title.startswith("Add one server (8 -> 16 devices)")
    assert added.assumption.startswith(ASSUMPTIONS["add_server"])


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
    cli = json.loads(capsys.readouterr().out)
    assert cli == json.loads(json.dumps(decide(plan.profile, plan.scenario,
                                               plan.focus.devices).to_dict()))
    # the page's card: the same options and figures, a layout said in its labels (session 50,
    # continued: the 'not shown' note's '..., the planner's layout: Strategy DDP → ZeRO-1', the
    # CLI's 'ddp -> zero1'; this pin compared the two whole and failed since 429d9859; the
    # count's change in the page's arrow too since session 51, '(16 → 24 devices)')
    page = json.loads(json.dumps(plan.decision.to_dict()))
    assert [o["samples_per_s"] for o in page["options"]] == [
        o["samples_per_s"] for o in cli["options"]]
    assert len(page["notes"]) == len(cli["notes"]) and page["question"] == cli["question"]
    (cli_note,) = [n for n in cli["notes"] if "the planner's layout: ddp -> zero1, " in n]
    assert cli_note.replace("ddp -> zero1", "Strategy DDP → ZeRO-1").replace(
        "(16 -> 24 devices)", "(16 → 24 devices)") in page["notes"]


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


# ------------------------------------------------ thresholds: the model's own measured error


def _option(key: str, gain: float, total_usd: float | None = None) -> DecisionOption:
    """An option with a throughput gain (its score) and maybe a total; "as is" totals $1,100."""
    return DecisionOption(
        key=key, title={"add_server": "Add one server", "network": "Network: faster",
                        "settings": "Settings: double the batch"}[key],
        devices=16, servers=2, runnable=True, samples_per_s=100 * (1 + gain),
        throughput_gain=gain, usd_per_hour=None, extra_usd_per_hour=None, time_s=None,
        time_change=None, total_usd=total_usd,
        total_change_usd=None if total_usd is None else total_usd - 1100.0, price_source="",
        assumption=ASSUMPTIONS[key])


def _ctx(error: float = DATA_PARALLEL_MEDIAN_ERROR):
    now = predict(default_profile(), Scenario(devices=[16]))[0]
    assert now.fits and now.data_stall_s is None  # the presets: no input pipeline, no stall
    return SimpleNamespace(error=error, now=now, unit="samples", words=GPU_NOUNS)


@pytest.mark.parametrize("gain, acts", [(DATA_PARALLEL_MEDIAN_ERROR, True),
                                        (DATA_PARALLEL_MEDIAN_ERROR - 1e-6, False)])
def test_a_gain_under_the_models_median_error_is_not_a_decision(gain, acts):
    text, _ = _recommend(_ctx(), [_option("add_server", gain)])
    assert text.startswith("Add one server") == acts
    assert text.startswith("Keep the current setup") != acts
    if not acts:
        assert "median error of 2.8%" in text and text.count(". ") == 0  # 3.0% before s56


@pytest.mark.parametrize("free_gain, free_wins", [(0.1674, True), (0.1673, False)])
def test_a_free_change_wins_when_the_purchase_is_faster_by_less_than_the_error(free_gain,
                                                                              free_wins):
    # the tie limit: 1.20 / (1 + x) - 1 < 0.028  <=>  x > 1.2 / 1.028 - 1 = 0.16732 (session 56:
    # the validation's median with DDP's bucket copies, 2.8 %; 0.030 and 0.16505 before)
    options = [_option("network", 0.20), _option("settings", free_gain)]
    text, _ = _recommend(_ctx(), options)
    assert text.startswith("Double the batch" if free_wins else "Upgrade the inter-server")


def test_with_money_known_an_option_within_the_error_is_not_the_cheapest_pick():
    cheap_but_tiny = _option("settings", 0.02, total_usd=900.0)
    faster = _option("network", 0.30, total_usd=1000.0)
    text, _ = _recommend(_ctx(), [faster, cheap_but_tiny])
    assert text.startswith("Upgrade the inter-server network")
    text, _ = _recommend(_ctx(), [faster, _option("settings", 0.04, total_usd=900.0)])
    assert text.startswith("Double the batch")


def test_the_card_uses_the_error_of_the_path_that_predicts():
    dp = decide(default_profile(), Scenario(devices=[16], train_samples=2e9), 16)
    assert dp.model_error == DATA_PARALLEL_MEDIAN_ERROR
    gpt = resolve_profile(None, "dgx-a100", "gpt-7.5b")
    split = decide(gpt, Scenario(devices=[16], micro_batch=1, accumulation=8), 16)
    assert split.model_error == MODEL_PARALLEL_MEDIAN_ERROR


def test_the_error_figures_are_the_shipped_validations_medians():
    """scalesim.accuracy writes the medians out, rounded to a tenth of a point; they must stay
    those of the validations (a half-point tolerance let 2.87 % stay written as 2.8 %)."""
    dp = validate_cases(load_cases(validation_path("cases.json")))
    median = dp.summary["allreduce"]["median_abs_pct"] / 100
    assert round(median, 3) == DATA_PARALLEL_MEDIAN_ERROR
    mp = validate_parallel_cases(load_parallel_cases(validation_path("parallel_cases.json")))
    median = mp.summary["all"]["median_abs_pct"] / 100
    assert round(median, 3) == MODEL_PARALLEL_MEDIAN_ERROR


@pytest.mark.parametrize("stall_s, first", [(0.100, True), (0.0999, False)])
def test_the_input_pipeline_comes_first_from_a_tenth_of_the_step(stall_s, first):
    """remedies.DATA_STALL_SHARE = 0.10 (docs/model.md section 10): at a 1 s step, 0.1 s of data
    stall puts the input pipeline before a faster purchase, 0.0999 s does not."""
    now = SimpleNamespace(fits=True, data_stall_s=stall_s, step_time_s=1.0)
    loader = DecisionOption(**{**asdict(_option("settings", stall_s / (1 - stall_s))),
                               "key": "input_pipeline", "title": "Input: cache the input",
                               "assumption": ASSUMPTIONS["input_pipeline"]})
    text, _ = _recommend(SimpleNamespace(error=DATA_PARALLEL_MEDIAN_ERROR, now=now, unit="samples",
                                         words=GPU_NOUNS), [_option("network", 0.30), loader])
    assert text.startswith("Fix the input pipeline first") == first
    assert text.startswith("Upgrade the inter-server network") != first


def test_a_named_slow_device_is_offered_its_repair_at_the_models_gain():
    """A scenario (or diagnose's fit) that names a slow device gets a 'fix or replace it' option:
    the same devices without the slow one, nothing to buy; its gain is predict's ratio."""
    slow = Scenario(devices=[8], slow_device=3, slow_factor=1.5)
    card = decide(default_profile(), slow, 8)
    fix = next(o for o in card.options if o.key == "fix_device")
    healthy = predict(default_profile(), Scenario(devices=[8]))[0]
    now = predict(default_profile(), slow)[0]
    assert fix.throughput_gain == pytest.approx(healthy.samples_per_s / now.samples_per_s - 1)
    assert fix.throughput_gain > 0.3 and "rank 3, 1.5x slower" in fix.title
    assert fix.extra_usd_per_hour in (None, pytest.approx(0.0))
    assert card.recommendation.startswith("Fix or replace the slow device")
    assert fix.assumption == ASSUMPTIONS["fix_device"]
    # without a slow device the option does not appear
    assert all(o.key != "fix_device" for o in decide(default_profile(), Scenario(devices=[8]),
                                                     8).options)


def test_one_duration_text_for_the_card_and_the_app():
    from scalesim.app.plan import duration

    from scalesim.decision import duration_text

    for seconds, text in ((1800, "30 min"), (7200, "2.0 h"), (47 * 3600, "47.0 h"),
                          (48 * 3600, "2.0 days")):
        assert duration_text(seconds) == duration(seconds) == text
    assert (duration_text(None), duration(None)) == ("n/a", "-")


def test_one_price_source_is_said_for_every_row_not_title_by_title(capsys):
    """The price line listed every option's title before its one source (four long titles on
    llama3-70b); with one source for all rows it says "price (every row)"."""
    from scalesim.cli.main import main

    code = main(["decide", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64",
                 "--tp", "8", "--pp", "2", "--train-samples", "1e6"])
    out = capsys.readouterr().out
    prices = [line for line in out.splitlines() if line.startswith("price (")]
    assert code == 0 and len(prices) == 1, out
    assert prices[0].startswith("price (every row): hardware preset dgx-h100"), prices
