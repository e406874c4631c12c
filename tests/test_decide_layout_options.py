"""Session 19: decide's layout and add-server options say what changes, and do not give up
(docs/reliability.md, "Session 19"). A layout option at today's split is named by the settings
it changes ('pipeline schedule 1F1B -> zero bubble'), not "Split the model"; a run that does
not fit has no time or money and nothing is measured against it; adding servers grows to a
count today's tp x pp divides, or runs the planner's layout at one more server, whichever finishes sooner."""

from __future__ import annotations

import html
import json

import pytest
from app_harness import open_app
from cli_harness import whole_lines
from scalesim.app.plan import make_plan, option_state
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.cli.main import main
from scalesim.decision import DOES_NOT_FIT, added_server_counts, card_rows, decide
from scalesim.figures import throughput
from scalesim.layout import SCHEDULE_WORDS
from scalesim.layout_predict import layout_of
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_workload, resolve_profile
from scalesim.schemas import Scenario

TRAIN = 1e6  # samples in the run: a time to train, so money
SPLIT = {"tp": 8, "pp": 2}  # llama3-70b on 64 H100s as dp 4 x tp 8 x pp 2


def _llama(**layout) -> tuple:
    profile = resolve_profile(None, "dgx-h100", "llama3-70b")
    scenario = Scenario.model_validate({"devices": [64], "train_samples": TRAIN,
                                        "layout": {**SPLIT, **layout.pop("layout", {})},
                                        **layout})
    return profile, scenario


def _run(profile, scenario, changes):
    """The option's scenario (today's with its ``changes``) and predict's row of it."""
    run = Scenario.model_validate({**scenario.model_dump(mode="json"), **changes})
    return run, predict(profile, run)[0]


def _settings(profile, scenario, p) -> dict:
    """The settings a layout runs with, read off the scenario and its prediction."""
    split = layout_of(scenario)
    return {"tp": p.tp, "pp": p.pp, "pipeline schedule": SCHEDULE_WORDS[split.schedule_of()],
            "zero": scenario.strategy,
            "micro-batch": p.micro_batch, "accumulation": p.accumulation,
            "recompute": split.recompute_of(profile.workload),
            "sequence parallel": "on" if split.sequence_parallel else "off"}


def _difference(before: dict, after: dict) -> list[str]:
    return [(f"{before[k]} -> {after[k]}" if k == "zero" else f"{k} {before[k]} -> {after[k]}")
            for k in before if before[k] != after[k]]


def _priced_like_every_option(profile, o):
    price = profile.hardware.price_per_device_hour
    assert o.billed_devices == o.devices
    assert o.usd_per_hour == pytest.approx(o.billed_devices * price)
    assert o.total_usd == pytest.approx(o.time_s / 3600 * o.billed_devices * price)


def test_a_layout_change_at_todays_split_is_named_by_what_changes():
    """Was "Split the model: dp 4 x tp 8 x pp 2 (zb), zero1, ..." where today's layout is
    dp 4 x tp 8 x pp 2 already: the option changes the schedule, ZeRO stage and sequence
    parallelism, and its title says exactly those, each old -> new."""
    profile, scenario = _llama()
    card = decide(profile, scenario, 64)
    (o,) = [o for o in card.options if o.key == "split_model"]
    # session 44: ddp -> zero2 (was zero1) since Megatron-Core's ZeRO-1 reduces fp32 main grads;
    # session 46: zero1 again, FSDP's ZeRO-2 under the pipeline waits for the first stage's
    # reduce-scatter (model/piped_reduce.py): 4.620 -> 4.087 sequences/s, ZeRO-1's 4.511
    assert o.title == ("Change the layout: pipeline schedule 1F1B -> zero bubble, ddp -> zero1, "
                       "sequence parallel off -> on")
    run, p = _run(profile, scenario, o.changes)
    assert o.changes["devices"] == [64] and p.fits
    assert p.samples_per_s == pytest.approx(o.samples_per_s)
    now = predict(profile, scenario)[0]
    changed = _difference(_settings(profile, scenario, now), _settings(profile, run, p))
    assert o.title == "Change the layout: " + ", ".join(changed)
    _priced_like_every_option(profile, o)


def test_a_model_not_split_today_is_still_split_the_model():
    profile = default_profile().model_copy(update={"workload": load_workload("gpt-76.1b")})
    card = decide(profile, Scenario(devices=[64], train_samples=TRAIN), 64)
    (o,) = [o for o in card.options if o.key == "split_model"]
    assert o.title.startswith("Split the model: dp ") and o.changes["layout"]["tp"] > 1


def test_a_run_that_does_not_fit_has_no_time_or_money_and_no_change_against_it():
    """Was 'As is ... (not runnable)  $787  as is  3.5 days  $65,590' and every option's
    '-25.7%' against it: a run that cannot happen. Now its row says it does not fit and the
    options show their own throughput, time and money."""
    profile, scenario = _llama()
    card = decide(profile, scenario, 64)
    now = card.now
    assert not now.runnable and now.time_s is None and now.total_usd is None
    assert now.usd_per_hour == pytest.approx(64 * profile.hardware.price_per_device_hour)
    rows = card_rows(card)
    assert rows[0] == {"option": "As is: 64 devices (dp 4 x tp 8 x pp 2)",
                       "USD/h": "$787", "throughput": DOES_NOT_FIT,
                       "time to finish": DOES_NOT_FIT, "total money": DOES_NOT_FIT}
    for o, row in zip(card.options, rows[1:], strict=True):
        assert o.throughput_gain is None and o.time_change is None and o.total_change_usd is None
        # the workload's unit, as predict and the app say it (session 20: was 'samples/s')
        assert row["throughput"] == f"{throughput(o.samples_per_s)} sequences of 8192 tokens/s"
        assert "(" not in row["time to finish"]
        assert "(" not in row["total money"] and o.time_s is not None
    times = [o.time_s for o in card.options]
    assert times == sorted(times)  # sooner first, by the options' own times


def test_add_server_runs_the_planners_layout_where_todays_does_not_take_one_more_server():
    """Was 'one more server not compared: devices 72 are not divisible by tp x pp = 16'. Today's
    layout at 80 devices (2 servers more, a multiple of 16) does not fit; the planner's layout
    fits at 72 and at 80, and the one at 80 finishes sooner (session 20: was the planner's at 72,
    the only count the planner was tried at): the option says it is the planner's, with what it
    changes, and a note says of each other one why it is not the option."""
    profile, scenario = _llama()
    card = decide(profile, scenario, 64)
    (o,) = [o for o in card.options if o.key == "add_server"]
    assert o.title.startswith("Add 2 servers (64 -> 80 devices), the planner's layout: ")
    run, p = _run(profile, scenario, o.changes)
    assert o.devices == 80 and (p.tp, p.pp) == (8, 2) and p.fits
    assert p.samples_per_s == pytest.approx(o.samples_per_s)
    now = predict(profile, scenario)[0]
    changed = _difference(_settings(profile, scenario, now), _settings(profile, run, p))
    assert o.title == ("Add 2 servers (64 -> 80 devices), the planner's layout: "
                       + ", ".join(changed) + ", global batch 1.25x")
    _priced_like_every_option(profile, o)
    assert not any("not compared" in n for n in card.notes)
    # one decimal, as the app's error box says it (session 20: was '101 GiB'); 101.2 GiB before
    # session 48 counted Megatron-Core DDP's fp32 main_grad (2 B more a parameter: 70.6e9 / 16
    # parameters a device x 2 B = 8.2 GiB)
    assert ("not shown: today's layout at 80 devices does not fit in device memory (109.4 GiB per "
            "device needed)") in card.notes
    (at72,) = [n for n in card.notes if n.startswith("not shown: the planner's layout (pp 2 -> 9")]
    # the batch against today's, as the option's own title says it (session 21: was "global
    # batch 0.8x", against the option shown: read as 0.8x today's, it is today's)
    assert ", at 72 devices, today's global batch), " in at72
    assert at72.endswith(" more expensive than the planner's layout at 80 devices"), at72
    slower, dearer = at72.split("), ")[-1].split(" than ")[0].split(" and ")
    assert slower.endswith("% slower") and dearer.startswith("$")


def test_add_server_grows_to_the_fewest_servers_todays_split_divides():
    """Today's ZeRO-1 layout fits. 72 devices are not a multiple of tp x pp = 16: the option adds
    two servers (80 devices, dp 5), faster than the planner's layout at 72, and a note says
    both."""
    profile, scenario = _llama(strategy="zero1", layout={"schedule": "zb",
                                                          "sequence_parallel": True})
    card = decide(profile, scenario, 64)
    (o,) = [o for o in card.options if o.key == "add_server"]
    assert o.title == "Add 2 servers (64 -> 80 devices), global batch 1.25x"
    assert o.changes == {"devices": [80]}  # today's layout: its change is the count (rev19)
    assert (o.devices, o.servers) == (80, 10) and o.devices % 16 == 0
    again = predict(profile, scenario.model_copy(update={"devices": [80]}))[0]
    assert (again.dp, again.tp, again.pp) == (5, 8, 2)
    assert o.samples_per_s == pytest.approx(again.samples_per_s)
    assert o.time_change == pytest.approx(o.time_s / card.now.time_s - 1)
    _priced_like_every_option(profile, o)
    assert ("one more server does not take today's layout (72 devices are not a multiple of "
            "today's tp x pp = 16): it takes 2 servers more") in card.notes
    # the rival by what differs from the option shown: its layout, count and global batch
    (rival,) = [n for n in card.notes if n.startswith("not shown: ")]
    assert rival.startswith("not shown: the planner's layout (pp 2 -> 9, "), rival
    # today's batch at 72 (dp 1 x accumulation 4), where the option's title says 1.25x today's
    # (session 21: was "global batch 0.8x", 72 against 80 devices' batch)
    assert ", at 72 devices, today's global batch), " in rival
    assert rival.endswith(" more expensive than today's layout at 80 devices") and (
        "Add one server" not in rival)


def test_add_server_in_todays_layout_is_not_judged_against_a_worse_layout():
    """One A100 filling its server: today's DDP fits at 8 devices, the planner's ZeRO-2 there
    (ZeRO-1 before bert-large declared its 24 layers, session 41) finishes sooner, so the option
    runs it and says so; DDP at 8 is the note's slower one."""
    profile = default_profile()
    card = decide(profile, Scenario(devices=[1], train_samples=TRAIN), 1)
    (o,) = [o for o in card.options if o.key == "add_server"]
    assert o.title == ("Fill the server (1 -> 8 devices), the planner's layout: ddp -> zero2, "
                       "global batch 8x")
    assert o.changes == {"devices": [8], "strategy": "zero2"}
    ddp = predict(profile, Scenario(devices=[8], train_samples=TRAIN))[0]
    assert ddp.fits and o.samples_per_s > ddp.samples_per_s
    (rival,) = [n for n in card.notes if n.startswith("not shown: ")]
    assert rival.startswith("not shown: today's layout, ") and rival.endswith(
        " more expensive than the planner's layout"), rival  # same count, same batch: unsaid
    assert "% slower and $" in rival  # session 21: days and dollars


def test_decide_json_and_text_agree(capsys):
    args = ["decide", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64",
            "--tp", "8", "--pp", "2", "--train-samples", "1e6"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["now"]["time_s"] is None and data["now"]["total_usd"] is None
    keys = {o["key"]: o for o in data["options"]}
    # session 44: zero2, was zero1, since Megatron-Core's ZeRO-1 reduces fp32 main grads;
    # session 46: zero1, piped FSDP ZeRO-2 waits for the first stage's reduce-scatter
    assert keys["split_model"]["changes"]["strategy"] == "zero1"
    assert keys["add_server"]["changes"]["devices"] == [80]
    assert main(args) == 0
    text = whole_lines(capsys.readouterr().out)
    (row,) = [line for line in text.splitlines() if line.startswith("As is: ")]
    assert row.split()[-10:] == ["$787", *DOES_NOT_FIT.split() * 3]
    for o in data["options"]:
        assert o["title"] in text and o["time_change"] is None


def _app_plan():
    state = default_state().model_copy(update={
        "wl": "llama3-70b", "hw": "dgx-h100", "dmax": 64, "focus": 64, "tp": 8, "pp": 2,
        "train": TRAIN, "price": None})
    return make_plan(preset_profile(state), state)


def test_the_apps_card_and_report_show_the_same_options(tmp_path, capsys):
    from scalesim.app.report import report_html

    plan = _app_plan()
    scenario = tmp_path / "scenario.json"
    scenario.write_text(plan.scenario.model_dump_json())
    assert main(["decide", "--hardware", "dgx-h100", "--workload", "llama3-70b",
                 "--scenario", str(scenario), "--focus", "64", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    titles = [data["now"]["title"], *(o["title"] for o in data["options"])]
    cli = decide(plan.profile, plan.scenario, 64)  # the CLI's card, in its notation
    assert [r["option"] for r in card_rows(cli)] == titles
    assert any(t.startswith("Change the layout: tp 8 -> 4") for t in titles)
    # the app's: the same options, a layout's title in the page's labels (session 50; was
    # the CLI's titles, 'Change the layout: tp 8 -> 4, pp 2 -> 4, ...')
    shown = [r["option"] for r in card_rows(plan.decision)]
    assert len(shown) == len(titles) and titles[0] == "As is: 64 devices (dp 4 x tp 8 x pp 2)"
    # the As-is row's split too (session 50, continued)
    assert shown[0] == ("As is: 64 devices (4 data-parallel ranks x Tensor parallel 8 x "
                        "Pipeline stages 2)")
    assert any(t.startswith("Change the layout: Tensor parallel 8 → 4, Pipeline stages 2 → 4")
               for t in shown) and not any(" tp 8 -> 4" in t for t in shown)
    at = open_app(encode_query(plan.state, plan.profile))
    card = next(c for c in at.get("table"))
    assert list(card.value.index) == shown
    assert list(card.value.loc[shown[0]])[1:] == [DOES_NOT_FIT] * 3
    page = report_html(plan, "http://x/")
    # the card's "as is" row: its three cells (the per-count table below says it too, charts2_20)
    row = next(r for r in page.split("<tr") if html.escape(shown[0]) in r)
    assert row.count(f'<td class="">{DOES_NOT_FIT}</td>') == 3, row
    for o in plan.decision.options:  # each runs a scenario of its own: the planner opens it
        assert option_state(plan.state, plan.profile, o.changes) is not None


def test_the_cost_tabs_add_devices_grows_to_a_count_the_split_divides():
    """Was 'more devices (64 -> 72) not compared: devices 72 are not divisible by tp x pp = 16'
    on the Cost tab; then "Add devices (64 -> 80)" in today's layout, which does not fit there
    (not runnable), beside the card's planner's layout at 72. Session 20: the row is the card's
    add-server option (the planner's layout at 80), with the card's title, time and money."""
    plan = _app_plan()
    (more,) = [o for o in plan.options if o.kind == "more devices"]
    (card,) = [o for o in plan.decision.options if o.key == "add_server"]
    assert more.label == card.title and more.devices == card.devices == 80 and more.fits
    # the page's arrow since session 51 (the CLI's '(64 -> 80 devices)')
    assert more.label.startswith("Add 2 servers (64 → 80 devices), the planner's layout: ")
    assert more.time_s == pytest.approx(card.time_s) and more.cost_usd == pytest.approx(
        card.total_usd)
    assert not any("not compared" in n for n in plan.notes)
    assert added_server_counts(64, 8, 16)[:2] == [80, 96]
    assert added_server_counts(4, 8, 1)[0] == 8 and added_server_counts(6, 8, 6) == [24, 48]
