"""How long the planner takes to re-run after a widget change, and to render first in a browser.

Server side (Streamlit's AppTest runs the real page script in this process): for each case the
script is run once to warm up, then the micro-batch widget is set to a new value ``--repeats``
times (a new state each time, so the cached plan is never reused) and each re-run is timed
(``AppTest.run``: script execution and element serialisation, no network).

Browser (``--browser``): ``scalesim app --headless`` on a free port, then Debian's chromium via
Playwright opens the page; the time from navigation to the headline and to the first drawn chart
is measured for a first visit right after the server is up and for later visits.

    python benchmarks/app_render.py [--repeats 20] [--browser]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [  # (name, query parameters, tab label)
    ("1-1024, powers of two (11 counts), Scaling curve tab", {"dmax": "1024"}, "Scaling curve"),
    ("1-1024, every server (131 counts), Scaling curve tab",
     {"dmax": "1024", "grid": "server"}, "Scaling curve"),
    ("1-1024, every server, Step breakdown tab", {"dmax": "1024", "grid": "server"},
     "Step breakdown"),
    ("1-1024, powers of two, Remedies tab", {"dmax": "1024"}, "Remedies"),
    ("1-1024, powers of two, Hours & cost tab (price, run length)",
     {"dmax": "1024", "price": "4", "train": "1e9"}, "Hours & cost"),
    ("1-1024, powers of two, Time to quality tab", {"dmax": "1024", "cbs": "4096"},
     "Time to quality"),
    ("1-1024, powers of two, A vs B tab", {"dmax": "1024"}, "A vs B"),
    ("1-8192, every server (256 counts), Scaling curve tab",
     {"dmax": "8192", "grid": "server"}, "Scaling curve"),
]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def _script() -> str:
    import scalesim.app

    return str(Path(scalesim.app.__file__).with_name("streamlit_app.py"))


def server_rerun(repeats: int) -> list[tuple[str, float, float, float]]:
    from streamlit.testing.v1 import AppTest

    rows = []
    for name, query, tab in CASES:
        at = AppTest.from_file(_script(), default_timeout=120)
        at.query_params["v"] = "1"
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        at.session_state["k_tab"] = tab
        at.run()
        assert not at.exception, at.exception
        times = []
        for i in range(repeats):
            at.sidebar.number_input(key="k_mb").set_value(33 + i)  # new state: no cache hit
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
            assert not at.exception, at.exception
        times.sort()
        rows.append((name, statistics.median(times), times[int(0.9 * (len(times) - 1))],
                     max(times)))
    return rows


def plan_only(repeats: int) -> tuple[float, float]:
    """make_plan and the first tab's two charts (to_dict) without Streamlit, medians in s."""
    from scalesim.app.charts import efficiency_chart, throughput_chart
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"grid": "server"})
    profile = preset_profile(state)
    plans, charts = [], []
    for i in range(repeats):
        s = state.model_copy(update={"mb": 32 + i})
        start = time.perf_counter()
        plan = make_plan(profile, s)
        plans.append(time.perf_counter() - start)
        start = time.perf_counter()
        throughput_chart(plan).to_dict(validate=False)  # as the page draws them
        efficiency_chart(plan).to_dict(validate=False)
        charts.append(time.perf_counter() - start)
    return statistics.median(plans), statistics.median(charts)


BARE_PAGE = """import streamlit as st
st.title("bare page")
st.metric("Scaling efficiency at 1 devices", "100%")
"""


def browser_first_render(visits: int = 3, bare: bool = False) -> list[tuple[float, float]]:
    """(headline, first chart) seconds per visit; ``bare``: a two-element Streamlit page."""
    import socket
    import tempfile
    import urllib.request

    from playwright.sync_api import sync_playwright

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    if bare:
        script = Path(tempfile.mkdtemp()) / "bare.py"
        script.write_text(BARE_PAGE)
        command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port",
                   str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    else:
        command = [sys.executable, "-m", "scalesim.cli.main", "app", "--headless", "--port",
                   str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        out = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                         args=CHROMIUM_FLAGS, headless=True)
            for _ in range(visits):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                start = time.perf_counter()
                page.goto(f"http://localhost:{port}/", wait_until="commit")
                page.get_by_text("Scaling efficiency at").first.wait_for(timeout=60_000)
                headline = time.perf_counter() - start
                if not bare:
                    page.locator("[data-testid='stVegaLiteChart'] canvas, "
                                 "[data-testid='stVegaLiteChart'] svg").first.wait_for(
                                     timeout=60_000)
                out.append((headline, time.perf_counter() - start))
                page.close()
            browser.close()
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    from scalesim.cli.main import OneLineParser  # here: the module imports no scalesim

    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--browser", action="store_true", help="also time a real first render")
    args = parser.parse_args()

    plan_s, charts_s = plan_only(args.repeats)
    print(f"make_plan, 1-1024 every server (131 counts): median {plan_s * 1e3:.1f} ms; "
          f"first tab's two charts built + serialised: {charts_s * 1e3:.1f} ms")
    print(f"\nwidget change -> page re-run on the server (AppTest, {args.repeats} re-runs each)")
    print(f"{'case':<62} {'median':>8} {'p90':>8} {'max':>8}")
    for name, median, p90, worst in server_rerun(args.repeats):
        print(f"{name:<62} {median * 1e3:>6.0f}ms {p90 * 1e3:>6.0f}ms {worst * 1e3:>6.0f}ms")
    if args.browser:
        print("\nbrowser (chromium): navigation -> headline / first chart drawn")
        for i, (headline, chart) in enumerate(browser_first_render()):
            label = "first visit after start-up" if i == 0 else f"visit {i + 1}"
            print(f"{label:<30} headline {headline:.2f} s, first chart {chart:.2f} s")
        bare = ", ".join(f"{h:.2f} s" for h, _ in browser_first_render(bare=True))
        print(f"for scale: a bare two-element Streamlit page, same browser: {bare}")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
