"""Issue 12 in a real browser (Debian's chromium via Playwright) on a running `scalesim app`.

Never praise what cannot run; an out-of-range value leaves the page responsive and the URL as it
was; an uploaded profile's link opens with the same numbers and caveats; the decision card's
numbers equal `scalesim decide`'s; a 390 px wide phone shows no horizontally clipped chart.
Set SCALESIM_SCREENSHOTS=DIR to keep the screenshots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from cli_harness import run_cli
from scalesim.app.layout_titles import SEARCHED_LAYOUTS
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, preset_profile
from test_app_browser import CHROMIUM, CHROMIUM_FLAGS, server  # noqa: F401 - the fixture
from test_app_profiles import one_server_profile

from scalesim.decision import card_rows
from scalesim.figures import throughput

pytestmark = pytest.mark.slow
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "install Debian's chromium (.ci/run does)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


def _shot(page, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("SCALESIM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _open(browser, url: str, width: int = 1400):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(url, wait_until="domcontentloaded")
    page.get_by_text("What this shows:").first.wait_for(timeout=WAIT_MS)
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(800)
    return page


def _query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def _settled(page, ms: int = 1500) -> None:
    """Wait until Streamlit's run ends (its status widget is gone) and a moment more."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector(\"[data-testid='stStatusWidget']\")", timeout=WAIT_MS)
    page.wait_for_timeout(ms)


def test_a_layout_that_does_not_fit_is_never_shown_as_best(server, browser, tmp_path):  # noqa: F811
    page = _open(browser, f"{server}?v=2&mb=100000")
    text = page.inner_text("body").replace("→", "->")
    metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
    efficiency = next(m for m in metrics if m.startswith("Scaling efficiency at 16 devices"))
    assert "not runnable" in efficiency and "%" not in efficiency
    assert "Largest single gain: Smaller micro-batches" in text  # the change that makes it fit
    assert "95.9%" not in text and "gain: none" not in text
    assert "first: today's layout does not fit in device memory" in text
    _shot(page, "not_runnable", tmp_path)
    page.close()


def test_an_out_of_range_value_leaves_the_page_responsive_and_the_url_unchanged(
        server, browser, tmp_path):  # noqa: F811
    page = _open(browser, f"{server}?v=2&strat=zero3")
    before = _query(page)
    box = page.get_by_label("Per-device micro-batch")
    box.fill("20000000")  # above 2**24, the micro-batch bound (scalesim/bounds.py)
    box.press("Enter")
    _settled(page)
    assert _query(page) == before  # refused before it reached the state
    assert "mb" not in _query(page)
    _shot(page, "out_of_range", tmp_path)
    servers = page.get_by_label("Devices per server")
    servers.fill("4")
    servers.press("Enter")
    page.wait_for_function("() => location.search.includes('dpn=4')", timeout=WAIT_MS)
    assert _query(page)["strat"] == "zero3" and "mb" not in _query(page)
    page.close()


def test_an_uploaded_profiles_link_opens_with_the_same_numbers_and_caveats(
        server, browser, tmp_path):  # noqa: F811
    path = tmp_path / "lab.json"
    path.write_text(one_server_profile().model_dump_json())
    page = _open(browser, server)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_text("Leave this profile: use the presets").wait_for(timeout=WAIT_MS)
    page.wait_for_function("() => location.search.includes('src=custom')", timeout=WAIT_MS)
    _settled(page)
    link = page.url
    sender = page.locator("[data-testid='stMetric']").all_inner_texts()
    receiver = _open(browser, link)
    _settled(receiver)
    assert receiver.locator("[data-testid='stMetric']").all_inner_texts() == sender
    receiver.get_by_text("Caveats of this profile").click()
    receiver.get_by_text("inter-server link not measured").first.wait_for(timeout=WAIT_MS)
    assert "Using one-server lab" in receiver.inner_text("[data-testid='stSidebar']")
    _shot(receiver, "uploaded_profile_receiver", tmp_path)
    page.close()
    receiver.close()


def test_the_decision_cards_numbers_equal_the_clis(server, browser, tmp_path, capsys):  # noqa: F811
    """The card's rows, question and recommendation are ``scalesim decide --json``'s (run in
    this process, ``cli_harness.run_cli``: the CLI's output is the point, not its entry point)."""
    state = default_state().model_copy(update={"train": 2e9})
    plan = make_plan(preset_profile(state), state)
    scenario = tmp_path / "scenario.json"
    scenario.write_text(plan.scenario.model_dump_json())
    code, out, err = run_cli(capsys, ["decide", "--hardware", state.hw, "--workload", state.wl,
                                      "--scenario", str(scenario), "--json"])
    assert code == 0, err
    data = json.loads(out)
    card = SimpleNamespace(now=SimpleNamespace(**data["now"]),
                           options=[SimpleNamespace(**o) for o in data["options"]])
    page = _open(browser, f"{server}?v=2&train=2e9")
    rows = page.locator("[data-testid='stTable'] tbody tr")
    body = [[c.strip().replace("→", "->") for c in rows.nth(i).locator("th, td").all_inner_texts()]
            for i in range(rows.count())]
    expected = [[v.strip() for v in r.values()] for r in card_rows(card)]
    assert body == expected
    text = page.inner_text("body").replace("→", "->")
    assert data["question"] in text and data["recommendation"] in text
    _shot(page, "decision_card", tmp_path)
    page.close()


def test_a_phone_viewport_clips_no_chart(server, browser, tmp_path):  # noqa: F811
    page = _open(browser, f"{server}?v=2&train=2e9", width=390)
    page.set_viewport_size({"width": 390, "height": 844})
    _settled(page)
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    charts = page.locator("[data-testid='stVegaLiteChart']")
    assert charts.count() >= 2
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box
        inner = charts.nth(i).locator("canvas, svg").first.bounding_box()
        assert inner["x"] >= 0 and inner["x"] + inner["width"] <= width + 1, inner
    _shot(page, "phone_390", tmp_path)
    charts.first.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    _shot(page, "phone_390_chart", tmp_path)
    page.close()


def test_the_report_prints_to_one_page_and_fits_a_phone(browser, tmp_path):
    from scalesim.app.report import report_html

    state = default_state().model_copy(update={"train": 2e9})
    html = tmp_path / "report.html"
    html.write_text(report_html(make_plan(preset_profile(state), state), "http://x/?v=2"),
                    encoding="utf-8")
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(html.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    first = page.locator("h2").first.inner_text()
    assert first.startswith("16 A100-SXM4 40GB devices give")  # the card leads
    _shot(page, "report_phone", tmp_path)
    pdf = page.pdf(path=str(tmp_path / "report.pdf"), format="A4")
    assert _pages(pdf) == 1  # printed from the browser: one A4 page
    page.close()


def _pages(pdf: bytes) -> int:
    import re

    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf))


def test_a_layout_link_opens_with_the_same_numbers(server, browser, tmp_path):  # noqa: F811
    """Issue 11: a v3 link with a model split opens with the numbers make_plan gives it, keeps
    the split in the address bar, and its Layouts tab ranks the layouts."""
    from scalesim.app.plan import headline
    from scalesim.app.state import decode_query

    query = {"v": "3", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64", "tp": "2", "pp": "2",
             "sp": "1", "mb": "1", "acc": "8"}
    state, profile, messages = decode_query(query)
    assert messages == []
    plan = make_plan(profile, state)
    h = headline(plan)
    page = _open(browser, server + "?" + "&".join(f"{k}={v}" for k, v in query.items()))
    _settled(page)
    metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
    shown = next(m for m in metrics if m.startswith(f"Throughput ({plan.unit}/s)"))
    assert throughput(plan.focus.samples_per_s) in shown  # as the app writes it
    efficiency = next(m for m in metrics if m.startswith("Scaling efficiency at"))
    assert h["efficiency"] in efficiency and f"at {h['devices']} devices" in efficiency
    got = _query(page)
    assert (got["v"], got["tp"], got["pp"], got["sp"]) == ("3", "2", "2", "1")
    page.get_by_role("tab", name="Layouts").click()
    page.get_by_text(f"Best of {SEARCHED_LAYOUTS}").first.wait_for(timeout=WAIT_MS)
    _settled(page)
    assert _query(page)["tab"] == "layouts"
    _shot(page, "layouts_tab", tmp_path)
    page.close()
