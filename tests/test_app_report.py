"""The manager's report and the charts behind it."""

from __future__ import annotations

import io
import re
import zipfile

from scalesim.app.charts import all_charts, throughput_chart
from scalesim.app.plan import headline, make_plan
from scalesim.app.report import charts_png_zip, report_html, scenario_lines
from scalesim.app.state import default_state, preset_profile

from scalesim.presets import HARDWARE, WORKLOADS

LINK = "http://localhost:8501/?v=1&mb=32"


def _plan(**changes):
    state = default_state().model_copy(update={"cbs": 4096.0, "train": 1e9, "price": 4.0,
                                               **changes})
    return make_plan(preset_profile(state), state)


def test_every_chart_is_valid_vega_lite_and_the_knee_is_labelled():
    plan = _plan()
    charts = all_charts(plan)
    assert set(charts) == {"throughput", "efficiency", "step_breakdown", "remedies",
                           "time_to_quality", "hours", "cost", "a_vs_b"}
    for chart in charts.values():
        chart.to_dict()  # Altair validates against the Vega-Lite schema
    spec = str(throughput_chart(plan).to_dict())
    assert "crosses server boundary: inter-server link" in spec
    assert "ideal (linear)" in spec


def test_charts_needing_unknown_inputs_are_left_out():
    state = default_state()  # no critical batch size, no price for this preset
    charts = all_charts(make_plan(preset_profile(state), state))
    assert "time_to_quality" not in charts and "hours" not in charts and "cost" not in charts


def test_report_is_one_offline_file_with_headline_scenario_and_link():
    plan = _plan()
    page = report_html(plan, LINK)
    h = headline(plan)
    for text in (h["efficiency"], h["knee"], h["best_remedy"], h["time_to_train"], h["cost"]):
        assert text.replace("->", "-&gt;") in page
    assert 'href="http://localhost:8501/?v=1&amp;mb=32"' in page
    assert page.count("<svg") == 8
    assert "<script" not in page.lower() and "<link" not in page.lower()
    # nothing is fetched: the only URLs are the share link, the card's options' planner links
    # (one server instead of two: decide's fewer-servers option) and SVG namespace names
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert "http://localhost:8501/?v=1&amp;mb=32" in sources and len(set(sources)) == 2
    assert all(s.startswith("http://localhost:8501/?v=") for s in sources)
    assert "devices per server" in page and "a2-highgpu-8g" in page


def test_report_escapes_text_from_an_uploaded_profile():
    plan = _plan()
    hostile = plan.profile.model_copy(update={"name": "<script>alert(1)</script>",
                                              "notes": ["<img src=x onerror=alert(2)>"]})
    plan = make_plan(hostile, plan.state)
    page = report_html(plan, LINK)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_png_charts_zip():
    data = charts_png_zip(_plan(), scale=1.0)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        assert names[0] == "01_throughput.png" and len(names) == 8
        for name in names:
            assert archive.read(name)[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_report_s_goal_lines_are_the_values_the_predictions_use():
    """The report's scenario table said 'price per device-hour: unknown' on the app's first
    screen (the link carries no price) while the decision card above it billed the preset's
    $58.77/h, and 'training run: unknown' for resnet50, whose preset's 90 epochs the time to
    train used. Each line now shows the value ``resolve_goal`` gives the model and its origin."""
    state = default_state().model_copy(update={"wl": "resnet50"})
    profile = preset_profile(state)
    hw, wl = HARDWARE[state.hw], WORKLOADS["resnet50"]
    lines = dict(scenario_lines(make_plan(profile, state)))
    assert lines["price per device-hour"] == (
        f"${hw.price_per_device_hour:,.2f} ({hw.name} list price)")
    assert lines["training run"] == f"{wl.train_samples:,.0f} images (the workload preset)"
    assert lines["critical batch size"] == "unknown" and "samples to quality (E_min)" not in lines
    given = state.model_copy(update={"price": 1.25, "cbs": 4096.0, "emin": 2e8})
    lines = dict(scenario_lines(make_plan(profile, given)))
    assert lines["price per device-hour"] == "$1.25 (given)"
    assert lines["critical batch size"] == "4,096 (given)"
    assert lines["samples to quality (E_min)"] == "200,000,000 images (given)"
    # the profile's own value, as the app fills it in when a profile is picked, is not "given"
    same = state.model_copy(update={"price": hw.price_per_device_hour})
    assert "list price" in dict(scenario_lines(make_plan(profile, same)))["price per device-hour"]
