"""A real browser (Debian's chromium, Playwright) uploads runs and traces on the Diagnose page."""

from __future__ import annotations

import json

import diagnose_cases as cases
import pytest
from test_app_browser import CHROMIUM, CHROMIUM_FLAGS, server  # noqa: F401 (fixture)
from test_traces import gpu_trace

pytestmark = pytest.mark.slow
WAIT_MS = 90_000


def test_upload_runs_and_traces_in_a_real_browser(server, tmp_path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    runs = tmp_path / "runs.csv"
    runs.write_text(cases.to_csv(cases.inter_server()))
    traces = []
    for r in (0, 1):
        traces.append(tmp_path / f"rank{r}.json")
        traces[-1].write_text(json.dumps(gpu_trace(r, slow_us=300.0 * r)))

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.goto(f"{server}diagnose", timeout=WAIT_MS)
        expect(page.get_by_role("heading", name="Diagnose")).to_be_visible(timeout=WAIT_MS)

        page.locator("input[type=file]").first.set_input_files(str(runs))
        expect(page.get_by_role("heading", name="Likely cause: Inter-server link")).to_be_visible(
            timeout=WAIT_MS)
        expect(page.get_by_text("First remedy to try:").first).to_be_visible(timeout=WAIT_MS)
        charts = page.locator(".vega-embed")
        expect(charts).to_have_count(2, timeout=WAIT_MS)
        expect(charts.first.locator("canvas, svg").first).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)

        page.get_by_test_id("stRadioGroup").get_by_text("Profiler traces").click()
        many = page.locator("input[type=file][multiple]")
        expect(many).to_have_count(1, timeout=WAIT_MS)
        many.set_input_files([str(p) for p in traces])
        expect(page.get_by_role("heading", name="Likely cause: A device far slower than the "
                                "others")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator(".vega-embed")).to_have_count(2, timeout=WAIT_MS)
        page.screenshot(path=str(tmp_path / "traces.png"), full_page=True)
        browser.close()
