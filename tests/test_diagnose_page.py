"""The Diagnose page under Streamlit's AppTest: example runs, uploads, bad files, traces."""

from __future__ import annotations

import json

import diagnose_cases as cases
from app_harness import TIMEOUT_S, open_app, run_clean
from streamlit.testing.v1 import AppTest
from test_traces import gpu_trace


def _page():
    from scalesim.app.diagnose_page import render

    render()


def _app() -> AppTest:
    return run_clean(AppTest.from_function(_page, default_timeout=TIMEOUT_S))


def _charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


def test_opens_with_format_help_and_no_report():
    at = _app()
    assert at.title[0].value == "Diagnose"
    assert "Upload a runs file" in at.info[0].value
    assert _charts(at) == 0


def test_example_runs_show_the_cause_remedy_and_charts():
    at = _app()
    at.toggle(key="dg_example").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == "Likely cause: Inter-server link"
    assert "First remedy to try" in at.success[0].value
    assert "Faster inter-server network" in at.success[0].value
    assert _charts(at) == 2


def test_uploaded_csv_is_diagnosed():
    at = _app()
    data = cases.to_csv(cases.slow_device()).encode()
    at.file_uploader(key="dg_runs").set_value(("runs.csv", data, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == "Likely cause: A device far slower than the others"


def test_bad_upload_is_one_line_error():
    at = _app()
    at.file_uploader(key="dg_runs").set_value(
        ("runs.csv", b"devices,nodes,samples_per_s\n1,1,10\n", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "two or more device counts" in at.error[0].value
    assert "\n" not in at.error[0].value


def test_traces_are_diagnosed_with_charts():
    at = _app()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    files = [(f"rank{r}.json", json.dumps(gpu_trace(r, slow_us=200.0 * r)).encode(),
              "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value.startswith("Likely cause:")
    assert _charts(at) == 2


def test_truncated_trace_upload_names_the_file():
    at = _app()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    text = json.dumps(gpu_trace(0))
    at.file_uploader(key="dg_traces").set_value(
        [("rank0.json", text[: len(text) // 2].encode(), "application/json")]).run()
    assert not at.exception
    assert at.error[0].value.startswith("rank0.json: the trace ends early")


def test_charts_render_to_svg(tmp_path):
    """The chart specs are valid Vega-Lite: vl-convert renders each with its data."""
    import vl_convert as vlc
    from scalesim.app import diagnose_page as page

    from scalesim.diagnosis import diagnose_runs
    from scalesim.runs import parse_runs_text

    runs = diagnose_runs(parse_runs_text(cases.to_csv(cases.inter_server()), "r.csv"))
    paths = []
    for r in (0, 1):
        paths.append(tmp_path / f"rank{r}.json")
        paths[-1].write_text(json.dumps(gpu_trace(r, slow_us=200.0 * r)))
    from scalesim.diagnosis import diagnose_traces
    from scalesim.traces import load_traces

    tr = diagnose_traces(load_traces([str(p) for p in paths]), "t")
    charts = [page.runs_throughput_chart(runs, width=500), page.runs_breakdown_chart(runs, 500),
              page.trace_breakdown_chart(tr, 500), page.trace_steps_chart(tr, 500)]
    for chart in charts:
        svg = vlc.vegalite_to_svg(chart.to_dict())
        assert svg.startswith("<svg") and "<path" in svg


def test_the_fitted_model_opens_in_the_planner_with_gains_and_their_band():
    from urllib.parse import parse_qs, urlsplit

    from scalesim.app.diagnose_page import example_runs_csv, gain_text, planner_link, runs_report
    from scalesim.app.report import diagnosis_html

    report = runs_report(example_runs_csv(), "example", None, None)
    link = planner_link(report, "http://host/")
    assert link.startswith("http://host/planner?v=2&")
    query = {k: v[-1] for k, v in parse_qs(urlsplit(link).query).items()}
    assert query["src"] == "custom" and query["focus"] == "32"
    planner = open_app(query)  # the planner page at the link
    assert not planner.warning
    assert planner.session_state["profile"].name.startswith("fitted to example")
    assert planner.session_state["app_state"].focus == 32
    text = gain_text(report, report.first_remedy.gain)
    assert "±" in text and text.startswith("+")
    html = diagnosis_html(report, link, [gain_text(report, x.gain) for x in report.remedies])
    assert "Likely cause" in html and "±" in html and "planner?v=2" in html


def test_the_diagnose_page_uses_the_planners_words_and_offers_the_planner():
    from scalesim.app.charts import PALETTE
    from scalesim.app.diagnose_page import RUN_PARTS, TRACE_PARTS

    assert ("data stall", PALETTE["data stall"]) in [(p[1], p[2]) for p in RUN_PARTS]
    assert "data stall" in [p[1] for p in TRACE_PARTS]
    at = _app()
    at.toggle(key="dg_example").set_value(True)
    at.run()
    assert not at.exception
    assert "±" in at.success[0].value
    assert any(b.label == "Open the fitted model in the planner" for b in at.get("link_button"))
