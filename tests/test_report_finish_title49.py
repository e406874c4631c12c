"""Session 49: the report titles its time to finish by its goal, as the page and decide do.

With a critical batch size and E_min (no training length) the goal is time to quality: decide's
card says 'time to quality' and the page's metric 'Time to quality / cost', but the HTML
report's headline row read 'Time to train' beside the same 40.8 h. Both now take
``plan.finish_title``."""

from __future__ import annotations

import json

from app_harness import open_app, preset_query
from cli_harness import run_cli
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import decode_query

from scalesim.decision import duration_text
from scalesim.figures import amount

FIELDS = dict(cbs=4096.0, emin=5e8, price=3.0, grid="list", dlist="8,16,32", focus=16)


def _card(capsys) -> dict:
    code, out, err = run_cli(capsys, ["decide", "--devices", "16", "--critical-batch", "4096",
                                      "--min-samples", "5e8", "--price", "3", "--json"])
    assert code == 0, err
    return json.loads(out)


def _row(title: str, value: str) -> str:
    return f'<td class="l">{title}</td><td class="l">{value}</td>'


def test_the_reports_time_to_quality_is_titled_so_as_decide_and_the_page(capsys):
    card = _card(capsys)
    assert card["goal"] == "time to quality" and card["now"]["time_s"] is not None
    time, cost = duration_text(card["now"]["time_s"]), f"${amount(card['now']['total_usd'])}"
    state, profile, messages = decode_query(preset_query(**FIELDS))
    assert messages == []
    report = report_html(make_plan(profile, state), "http://x/?v=1")
    assert _row("Time to quality", time) in report  # was 'Time to train'
    assert _row("Cost", cost) in report
    assert ">Time to train<" not in report
    at = open_app(preset_query(**FIELDS))
    (metric,) = [m for m in at.metric if m.label.endswith("/ cost")]
    assert (metric.label, metric.value, metric.delta) == ("Time to quality / cost", time, cost)


def test_a_training_length_keeps_time_to_train():
    state, profile, _ = decode_query(preset_query(train=1e9, price=2.5, grid="list",
                                                  dlist="8,16"))
    report = report_html(make_plan(profile, state), "http://x/?v=1")
    assert '<td class="l">Time to train</td>' in report
    assert ">Time to quality<" not in report


def test_the_reports_hours_chart_caption_names_its_goal():
    """The hours chart plots hours to quality here (its own title, ``charts.hours_chart``); its
    caption in the report said 'Time to train for each device count'."""
    state, profile, _ = decode_query(preset_query(**FIELDS))
    report = report_html(make_plan(profile, state), "http://x/?v=1")
    assert "Time to quality for each device count, each remedy and one more server." in report
    assert "Time to train for each" not in report
    state, profile, _ = decode_query(preset_query(train=1e9, price=2.5, grid="list",
                                                  dlist="8,16"))
    report = report_html(make_plan(profile, state), "http://x/?v=1")
    assert "Time to train for each device count, each remedy and one more server." in report
