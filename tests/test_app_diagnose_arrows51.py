"""The Diagnose page says a diagnosis's changes of figures with the page's arrow (session 51).

The runs' evidence lines ('exposed communication 0% of the step at 1 device -> 73% at 32
devices', 'throughput 512 -> 2,844 samples/s', 'straggler wait 0% -> 11%') and the
smaller-batch remedy's title ('Shrink the global batch 1024 -> 512 ...') carry their change as
a template (``layout_change.arrowed_said``): the page writes ``layout_titles.PAGE_ARROW`` as its
remedy titles do ('Double the per-device batch (32 → 64)'), the CLI its '->'."""

from __future__ import annotations

import re

from scalesim.app.diagnose_page import in_page_words
from scalesim.app.layout_titles import PAGE_ARROW
from test_app_diagnose_words import _example, _shown

from scalesim.figures import CHANGE_ARROW
from scalesim.layout_change import LayoutTitle

CLI_ARROW = re.compile(r" -\\?> ")  # '->', escaped for Markdown or not


def test_the_example_runs_evidence_takes_the_page_arrow():
    at = _example(dg_bcrit=100.0)
    shown = _shown(at)
    assert [t for t in shown if CLI_ARROW.search(t)] == []
    assert [t for t in shown
            if "exposed communication 0% of the step at 1 device → 73% at 32 devices" in t]
    assert [t for t in shown if t.startswith("Shrink the global batch 1024 → 512 ")]


def test_the_cli_keeps_its_arrow_in_every_evidence_line_and_the_remedy():
    """The report's text is the CLI's: the arrow there is '->', the page's from the template."""
    from scalesim.app.diagnose_page import example_runs_csv, runs_report

    report = runs_report(example_runs_csv(), "runs.csv", None, 100.0)
    lines = [e for f in [report.cause, *report.others] for e in f.evidence]
    titles = [r.title for r in report.remedies]
    arrowed = [x for x in lines + titles if isinstance(x, LayoutTitle) and x.arrowed]
    assert len(arrowed) >= 3  # the communication, the global batch, the shrink title
    for x in arrowed:
        assert CHANGE_ARROW in x and PAGE_ARROW not in x
        assert in_page_words(x) == x.replace(CHANGE_ARROW, PAGE_ARROW)
    assert "Shrink the global batch 1024 -> 512 (per-device 16) towards B_noise 100" in titles
