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
from scalesim.layout_change import Arrowed, LayoutTitle

CLI_ARROW = re.compile(r" -\\?> ")  # '->', escaped for Markdown or not


def test_the_example_runs_evidence_takes_the_page_arrow():
    at = _example(dg_bcrit=100.0)
    shown = _shown(at)
    assert [t for t in shown if CLI_ARROW.search(t)] == []
    # 74% since session 56 (73% before): the example runs are the model's, whose steps on 2
    # devices or more carry PyTorch DDP's gradient bucket copies (1.73 ms: 32 devices 231.50 ->
    # 233.23 ms, one device 61.65 -> 61.64), and the runs' fit, which has no optimizer step
    # (fit_runs.step_inputs), reads them as exchange (and its straggler wait, 1.32 ms at 32, as
    # exchange too): exposed 168.57 -> 171.45 ms, 72.8% -> 73.5% of the step
    assert [t for t in shown
            if "exposed communication 0% of the step at 1 device → 74% at 32 devices" in t]
    assert [t for t in shown if t.startswith("Shrink the global batch 1024 → 512 ")]


def test_the_cli_keeps_its_arrow_in_every_evidence_line_and_the_remedy():
    """The report's text is the CLI's: the arrow there is '->', the page's from the template."""
    from scalesim.app.diagnose_page import example_runs_csv, runs_report

    report = runs_report(example_runs_csv(), "runs.csv", None, 100.0)
    lines = [e for f in [report.cause, *report.others] for e in f.evidence]
    titles = [r.title for r in report.remedies]
    arrowed = [x for x in lines + titles if isinstance(x, LayoutTitle) and isinstance(x.said, Arrowed)]
    assert len(arrowed) >= 3  # the communication, the global batch, the shrink title
    for x in arrowed:
        assert CHANGE_ARROW in x and PAGE_ARROW not in x
        assert in_page_words(x) == x.replace(CHANGE_ARROW, PAGE_ARROW)
    assert "Shrink the global batch 1024 -> 512 (per-device 16) towards B_noise 100" in titles


# The rest of the page's changes of figures (session 51's second pass): the runs' MFU and
# replicas notes and the 'timing ... at twice the batch' measure, the traces' batch title and
# the pipeline's accumulation title and remedy notes.


def _report_page():
    import streamlit as st
    from scalesim.app.diagnose_page import show_report

    show_report(st.session_state["report"])


def _shown_report(report) -> list[str]:
    from app_harness import TIMEOUT_S, run_clean
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_report_page, default_timeout=TIMEOUT_S)
    at.session_state["report"] = report
    shown = _shown(run_clean(at))
    assert [t for t in shown if CLI_ARROW.search(t)] == []
    return shown


def _runs_report(text: str, **kw):
    from scalesim.runs import parse_runs_text
    from scalesim.runs_diagnosis import diagnose_runs

    return diagnose_runs(parse_runs_text(text, "runs.csv"), **kw)


def test_the_runs_notes_and_the_twice_the_batch_measure_take_the_page_arrow():
    from test_diagnose_model_split import TP8
    from test_diagnose_unseparated import WALK_RUNS

    from scalesim.runs_model import runs_model

    walk = _runs_report(WALK_RUNS, params=336e6, wire_bytes_per_param=2)
    assert [t for t in _shown_report(walk) if "at twice the batch per device (32 → 64) " in t]
    mfu = _runs_report("devices,nodes,step_time_s,per_device_batch\n8,1,1.2,1\n16,2,1.35,1\n"
                       "32,4,1.5,1\n", transformer=runs_model("llama3-8b", "H100 SXM"))
    assert [t for t in _shown_report(mfu)
            if t.startswith("note: model FLOPs utilisation (MFU) 40.0% at 8 → 32.0% at 32 ")]
    split = _runs_report(TP8, params=7e9)
    assert [t for t in _shown_report(split) if "(the data-parallel degree), 1 → 8 for 8 → 64 "
            "devices; " in t and t.endswith('(docs/diagnose.md "Runs that split the model")')]
    # the CLI's text keeps its arrow
    assert "(32 -> 64)" in walk.to_text() and "40.0% at 8 -> 32.0% at 32" in mfu.to_text()
    assert "1 -> 8 for 8 -> 64 devices" in split.to_text()


def test_the_traces_batch_and_pipeline_titles_take_the_page_arrow(tmp_path):
    from test_pipeline_trace import _hand_made
    from test_trace_micro_batch import _trace

    from scalesim.trace_diagnosis import diagnose_traces

    ranks = [_trace(tmp_path, r, [[32, 512], [1024, 512], [1024]], [[32, 10], [32], [], []])
             for r in (0, 1)]
    batch = diagnose_traces(ranks, "t")
    assert [t for t in _shown_report(batch)
            if "Double the per-process batch (32 → 64, from the traces' input shapes)" in t]
    pipe = diagnose_traces(_hand_made(tmp_path / "pp"), "hand-made")
    shown = _shown_report(pipe)
    assert [t for t in shown if t.startswith("Accumulate gradients over 4x the pipeline's "
                                             "micro-batches (2 → 8 a step")]
    assert [t for t in shown if "span 1.5 ms → 1.35 ms, 0.15 ms off the step; 2 → 4 "
            "micro-batches of half the size, the bubble 1 → 2 virtual stages" in t]
    text = batch.to_text() + pipe.to_text()
    assert "(32 -> 64, from" in text and "(2 -> 8 a step" in text and "2 -> 4 micro-batches" in text
