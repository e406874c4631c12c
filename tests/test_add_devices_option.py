"""'Add devices' as an option on the decision card: where nothing fits at today's count, the
fewest devices at which the planner's layout fits is priced like every option (billed devices,
time, money), recommended, in decide --json, and opened in the app by a link that reproduces
it (docs/reliability.md, "Session 18: add devices on the card")."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from app_harness import open_app
from scalesim.app.plan import finish, make_plan, option_links, option_state
from scalesim.app.state import decode_query, default_state, encode_query, preset_profile
from test_cpu_words import cpu_profile

from scalesim.cli.main import main
from scalesim.decision import ASSUMPTIONS, CPU_ASSUMPTIONS, decide, duration_text, usd_text
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_workload
from scalesim.schemas import Scenario

TRAIN = 1e6  # samples in the run: a time to train, so money


def _on_a100_40gb(workload: str):
    """The default profile (a2-highgpu-8g: 8 A100 40GB per server) running ``workload``."""
    return default_profile().model_copy(update={"workload": load_workload(workload)})


def _more(card):
    assert [o.key for o in card.options] == ["more_devices"], card.options
    return card.options[0]


def test_gpt_76b_on_one_a100_40gb_gets_a_64_device_option_with_days_and_dollars():
    """The sentence named 32 devices but the card had no option: no days, no dollars. The
    option runs at the planner's layout of the count it names, priced as every option: since
    session 59 that is 64 devices on 8 servers, a pipeline of 16 with no data parallelism,
    where 32 (the fewest that fit, ZeRO-3 over 4 servers) costs more device-hours for the
    same training; 64 devices are billed (8 whole a2-highgpu-8g), so its money is time x 64 x
    the preset's price per device-hour, and the sentence quotes the option's own figures."""
    profile = _on_a100_40gb("gpt-76.1b")
    price = profile.hardware.price_per_device_hour
    card = decide(profile, Scenario(devices=[1], train_samples=TRAIN), 1)
    o = _more(card)
    assert (o.devices, o.servers, o.billed_devices, o.runnable) == (64, 8, 64, True)
    assert o.usd_per_hour == pytest.approx(64 * price)
    assert o.total_usd == pytest.approx(o.time_s / 3600 * 64 * price)
    # today's layout does not fit: it has no time or money, and nothing is measured against it
    assert card.now.time_s is None and card.now.total_usd is None
    assert o.total_change_usd is None and o.time_change is None and o.throughput_gain is None
    assert o.assumption == ASSUMPTIONS["more_devices"] == card.assumption
    rec = card.recommendation
    assert ("add devices: at 64 devices (dp 1 x tp 4 x pp 16 (interleaved 1F1B, 2 virtual "
            "stages), no data parallelism, micro-batch 1 per replica x 64 accumulation, recompute "
            "selective, sequence parallel) it needs 38.4 GiB") in rec
    assert (
        f"which fits: it finishes in {duration_text(o.time_s)} and costs "
        f"{usd_text(o.total_usd)} in total (64 devices billed)."
    ) in rec
    # the fewest that fit are named in a note, with what they would cost
    (fewest,) = [n for n in card.notes if n.startswith("not shown: the fewest devices")]
    assert fewest.startswith("not shown: the fewest devices at which a layout fits, 32 devices "
                             "(dp 4 x tp 8 x pp 1, zero3, ")
    # the option runs the scenario it carries: predict says the same of it
    today = Scenario(devices=[1], train_samples=TRAIN).model_dump(mode="json")
    again = predict(profile, Scenario.model_validate({**today, **o.changes}))[0]
    assert again.fits and again.samples_per_s == pytest.approx(o.samples_per_s)
    assert o.changes["layout"]["tp"] == 4 and o.changes["layout"]["pp"] == 16
    assert "strategy" not in o.changes  # today's DDP


def test_a_count_that_needs_a_larger_instance_bills_the_whole_instance():
    """gpt-7b on one A100 40GB fits at 4 devices (ZeRO-2). Rented per GPU, 4 it is; rented only
    as whole 8-GPU instances, 4 devices would bill 8, and 8 devices bill the same 8 and finish
    sooner: since session 59 the option is 8 (the money is time x 8 x price either way), and
    a note names the 4 passed over."""
    profile = _on_a100_40gb("gpt-7b")
    price = profile.hardware.price_per_device_hour
    per_gpu = _more(decide(profile, Scenario(devices=[1], train_samples=TRAIN), 1))
    assert (per_gpu.devices, per_gpu.billed_devices) == (4, 4)
    card = decide(profile, Scenario(devices=[1], train_samples=TRAIN, instance_sizes=[8]), 1)
    o = _more(card)
    assert (o.devices, o.billed_devices) == (8, 8)
    assert o.total_usd == pytest.approx(o.time_s / 3600 * 8 * price)
    assert "(8 devices billed)" in card.recommendation
    assert o.changes == {"devices": [8], "strategy": "zero2"}
    assert any(n.startswith("not shown: the fewest devices at which a layout fits, 4 devices")
               for n in card.notes), card.notes


def test_without_a_price_the_option_is_there_and_the_sentence_says_what_is_known():
    profile = _on_a100_40gb("gpt-7b")
    unpriced = profile.model_copy(
        update={"hardware": profile.hardware.model_copy(update={"price_per_device_hour": None})}
    )
    card = decide(unpriced, Scenario(devices=[1], train_samples=TRAIN), 1)
    o = _more(card)
    assert o.usd_per_hour is None and o.total_usd is None and o.time_s is not None
    assert card.recommendation.endswith(f"which fits: it finishes in {duration_text(o.time_s)}.")


def test_a_cpu_calibration_gets_the_option_in_its_words_billed_per_whole_host():
    """Processes on hosts of 8: 4 processes would bill a whole host of 8, so the option is the
    host's 8 (session 59: the same bill, sooner); its assumption is the CPU one (no tensor x
    pipeline split, gloo over TCP)."""
    cpu = cpu_profile(per_host=8).model_copy(update={"workload": load_workload("gpt-7b")})
    card = decide(cpu, Scenario(devices=[1], train_samples=TRAIN, price_per_device_hour=0.5), 1)
    o = _more(card)
    assert (o.devices, o.billed_devices) == (8, 8)
    assert o.total_usd == pytest.approx(o.time_s / 3600 * 8 * 0.5)
    assert o.assumption == CPU_ASSUMPTIONS["more_devices"] == card.assumption
    assert o.title.startswith("Add processes (1 -> 8 processes")
    assert "(8 processes billed)" in card.recommendation


def test_decide_json_carries_the_option_like_the_others(capsys):
    args = ["decide", "--workload", "gpt-76.1b", "--devices", "1", "--train-samples", "1e6"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (o,) = data["options"]
    assert o["key"] == "more_devices" and o["billed_devices"] == 64
    assert o["changes"]["devices"] == [64] and o["changes"]["layout"]["pp"] == 8
    assert data["now"]["billed_devices"] == 1 and data["now"]["changes"] is None
    assert o["total_usd"] == pytest.approx(o["time_s"] / 3600 * o["usd_per_hour"])
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Add devices (1 -> 64 devices, tp 4 x pp 8, zero2)" in text
    assert usd_text(o["total_usd"]) in text.split("recommendation:")[0]


def _gpt76_plan():
    state = default_state().model_copy(update={"wl": "gpt-76.1b", "dmax": 1, "focus": 1, "train": TRAIN})
    return make_plan(preset_profile(state), state)


def test_the_apps_link_opens_the_option_as_a_what_if_with_its_numbers():
    """The card's 'Open in the planner' link decodes to a what-if whose focus is the option:
    64 devices in the planner's layout, the same throughput, time and money."""
    plan = _gpt76_plan()
    o = _more(plan.decision)
    ((title, link),) = option_links(plan, "http://x/")
    assert title == o.title and link.startswith("http://x/?")
    state, profile, messages = decode_query(dict(parse_qsl(urlsplit(link).query)))
    assert messages == []
    assert (state.focus, state.tp, state.pp, state.sched, state.rec, state.sp, state.strat) == (
        64,
        4,
        16,
        "interleaved",
        "selective",
        True,
        "ddp",
    )
    opened = make_plan(profile, state)
    assert opened.focus.devices == 64 and opened.focus.fits
    assert opened.focus.samples_per_s == pytest.approx(o.samples_per_s)
    t, cost = finish(opened, opened.focus)
    assert t == pytest.approx(o.time_s) and cost == pytest.approx(o.total_usd)


def test_a_count_off_the_grid_is_listed_and_one_above_the_planner_gets_no_link():
    plan = _gpt76_plan()
    changes = _more(plan.decision).changes
    listed = plan.state.model_copy(update={"grid": "list", "dlist": "1"})
    state = option_state(listed, plan.profile, changes)
    assert (state.grid, state.dlist, state.focus) == ("list", "1,64", 64)
    assert option_state(plan.state, plan.profile, {**changes, "devices": [32_768]}) is None
    assert option_state(plan.state, plan.profile, {**changes, "overlap": False}) is None


def test_the_app_card_shows_the_option_and_its_link():
    plan = _gpt76_plan()
    at = open_app(encode_query(plan.state, plan.profile))
    assert not at.exception
    card = next(c for c in at.get("table"))
    # in the page's labels since session 50 (was '(1 -> 32 devices, tp 8 x pp 1, zero3)'), its
    # arrow since session 51, 64 devices since session 59
    assert ("Add devices (1 → 64 devices, Tensor parallel 4 x Pipeline stages 16, DDP), global "
            "batch 64x" in card.value.index)
    buttons = [b for b in at.get("link_button")]
    assert any(
        "Add devices (1 → 64 devices" in b.proto.label and "focus=64" in b.proto.url for b in buttons
    ), buttons


def test_the_html_report_links_the_option_to_its_what_if():
    from html import escape

    from scalesim.app.report import report_html

    plan = _gpt76_plan()
    ((title, link),) = option_links(plan, "http://x/")
    page = report_html(plan, "http://x/?v=3&wl=gpt-76.1b")
    assert f'<a href="{escape(link)}">Open in the planner: {escape(title)}</a>' in page
    # the default card's one option with a what-if of its own: one server (session 39)
    default = make_plan(preset_profile(default_state()), default_state())
    ((title, link),) = option_links(default, "http://x/")
    page = report_html(default, "http://x/")
    assert title.startswith("Run on one server (16 → 8 devices)")  # the page's arrow
    assert page.count("Open in the planner") == 1
    assert f'<a href="{escape(link)}">Open in the planner: {escape(title)}</a>' in page


def test_an_add_server_option_at_the_fewest_that_fit_gives_way_to_the_cheaper_doubling(capsys):
    """llama3-70b at global batch 64 on 16 A100 40GB fits first at 32 devices (add 2 servers,
    ZeRO-3 over 4 servers: 6.9 days, $19,579) and trains for 1/5.7 the device-hours at 64. The
    card kept the add-server option at 32 (the more-devices option replaced it only at its own
    count, 64) while its note said 32 was 'not shown': from 16 devices as from 8, the option is
    now the 64 devices, 14.5 h and $3,420 (1,563 steps x 64 / 1.91 sequences/s x 64 x
    $3.673/h)."""
    price = default_profile().hardware.price_per_device_hour
    for devices in ("8", "16"):
        assert main(["decide", "--workload", "llama3-70b", "--global-batch", "64", "--devices",
                     devices, "--train-samples", "1e5", "--json"]) == 0
        card = json.loads(capsys.readouterr().out)
        (o,) = card["options"]
        assert (o["key"], o["devices"], o["billed_devices"]) == ("more_devices", 64, 64)
        assert o["total_usd"] == pytest.approx(o["time_s"] / 3600 * 64 * price)
        assert o["time_s"] == pytest.approx(1563 * 64 / o["samples_per_s"])
        assert 14 * 3600 < o["time_s"] < 15 * 3600 and 3_300 < o["total_usd"] < 3_550
        assert "at 64 devices" in card["recommendation"]
        (fewest,) = [n for n in card["notes"] if n.startswith("not shown: the fewest devices")]
        assert "32 devices" in fewest and "x the billed device-hours of 64 devices" in fewest
