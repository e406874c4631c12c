"""Halving a traced pipeline's bubble where the time its replay leaves outweighs the bubble
(``trace_diagnosis.pipeline_remedies``; docs/diagnose.md "Pipeline bubble and uneven stages").

Session 43's audit: on a real gloo dp 2 x pp 2 job (tests/trace_job.py) the remedy read -36.6 %.
By hand from that job's trace: a 39.8 ms step, the spanning stage 20.5 ms (1.29 compute,
19.2 waits), the 1F1B replay at the 4 counted micro-batches 4.26 ms, so 16.2 ms the replay
leaves; at 8 micro-batches the replay is 4.10 ms (0.16 ms off), and twice the messages pay the
16.2 ms once more: 39.8 / (39.8 + 16.1) - 1 = -28.7 % on that run. The loss is true for the job:
run at 8 micro-batches instead of 4 (6 runs of each on the same busy 2-core machine, medians),
its step went 21.2 -> 39.2 ms (-46 % throughput) and its span 14.8 -> 22.7 ms, the time the
replay leaves 11.3 -> 17.7 ms. So the figure stays, and the remedy now says, as the model's
remedies that lose do, that it loses and why; its note gave the replay's 4.26 ms -> the traced
time 20.3 ms as "span", now the replayed spans and the traced span each as they move."""

from __future__ import annotations

import numpy as np
import pytest
from test_pipeline_trace import STEP_UNITS, UNIT_US, _hand_made

from scalesim import trace_ranks
from scalesim.diagnosis_text import render_text
from scalesim.pipeline_trace import read_pipeline, replay_1f1b_s
from scalesim.trace_diagnosis import diagnose_traces, pipeline_remedies

SPAN_UNITS = STEP_UNITS  # the schedule's replayed span, 15 (tests/test_pipeline_trace.py)
OUTSIDE_UNITS = 3.0  # what each stage waits a step beyond it: the time the replay leaves


def _report(tmp_path):
    """tests/test_pipeline_trace.py's two-stage 1F1B (2 micro-batches counted from the host's
    receives), each step then waiting OUTSIDE_UNITS more in a receive: an 18-unit step."""
    traces = _hand_made(tmp_path, host_receives=True, step_units=SPAN_UNITS + OUTSIDE_UNITS)
    return diagnose_traces(traces, "hand-made")


def test_halving_the_bubble_loses_where_the_time_the_replay_leaves_outweighs_it(tmp_path):
    """Stage 1 computes 12 units and waits 3 + 3: an 18-unit span, the replay at 2 micro-batches
    15, so 3 units the replay leaves. Half the bubble: 4 micro-batches replay at 13.5 (1.5 off),
    twice the messages pay the 3 units once more: 18 -> 19.5 units, 18 / 19.5 - 1 = -7.69 %,
    which loses, and the note says so and why."""
    report = _report(tmp_path)
    unit = UNIT_US * 1e-6
    pipeline = report.details["pipeline"]
    assert pipeline["counted"] and pipeline["micro_batches"] == 2
    assert pipeline["span_s"] == pytest.approx(18 * unit)
    assert pipeline["replay_s"] == pytest.approx(15 * unit)
    assert pipeline["halved_s"] == pytest.approx((13.5 + 3) * unit)
    bubble = {r.key: r for r in report.remedies}["pipeline_bubble"]
    assert bubble.gain == pytest.approx(18 / 19.5 - 1)
    assert bubble.verdict == "loses" and not bubble.helps
    assert bubble.note.startswith(
        "loses throughput here: twice the messages pay the 0.3 ms a step the replay leaves "
        "(the sends' own time and waits outside the schedule) once more, more than the 0.15 ms "
        "the halved bubble saves; replayed 1F1B at 2 micro-batches: span 1.5 ms -> 1.35 ms, the "
        "traced span 1.8 ms -> 1.95 ms with the extra messages' time, 0.15 ms onto the step")
    assert report.first_remedy is None or report.first_remedy.key != "pipeline_bubble"
    # the text's table gives the halved replay and the time it pays once more apart
    assert "half the bubble 1.35 (+ 0.30 the replay leaves, paid once more)" in render_text(report)


def test_where_the_bubble_outweighs_the_time_the_replay_leaves_it_helps():
    """The same stages with 1 unit the replay leaves (a 16-unit span): 1.5 - 1 = 0.5 unit off a
    16-unit step, 16 / 15.5 - 1 = +3.2 %, a remedy with no "loses" in its note."""
    unit = UNIT_US * 1e-6
    reading = read_pipeline({0: [6 * unit], 1: [12 * unit]}, {0: [10 * unit], 1: [4 * unit]},
                            {0: [0], 1: [1]}, micro_batches=2)
    bubble = {r.key: r for r in pipeline_remedies(reading, 16 * unit)}["pipeline_bubble"]
    assert bubble.gain == pytest.approx(16 / 15.5 - 1)
    assert bubble.verdict == "remedy"
    assert bubble.note.startswith("replayed 1F1B at 2 micro-batches: span 1.5 ms -> 1.35 ms, "
                                  "the traced span 1.6 ms -> 1.55 ms")


def test_the_real_jobs_figure_by_hand(dp_pp_traces):
    """A real gloo dp 2 x pp 2 job (tests/trace_job.py): its bubble remedy is, from its own
    reading, step / (step - (replay(m) - replay(2m) - (T - replay(m)))) - 1, replay(2m) of its
    stages' compute over 2m micro-batches; where it loses, the note says why. Ratios of the
    traced figures only: the machine's load moves them all."""
    report = diagnose_traces(trace_ranks.load_traces(dp_pp_traces), "dp x pp")
    pipeline = report.details["pipeline"]
    step = report.details["cross_rank"]["step_s"]
    compute = np.array([st["compute_s"] for st in pipeline["stages"]])
    m = pipeline["micro_batches"]
    assert m == 4 and pipeline["counted"]
    replay, span = pipeline["replay_s"], pipeline["span_s"]
    saving = replay - replay_1f1b_s(compute / (2 * m), 2 * m) - max(span - replay, 0.0)
    saving = min(saving, pipeline["bubble_s"], 0.99 * step)
    bubble = {r.key: r for r in report.remedies}["pipeline_bubble"]
    assert bubble.gain == pytest.approx(step / (step - saving) - 1, rel=1e-9)
    if bubble.verdict == "loses":
        assert bubble.note.startswith("loses throughput here: twice the messages pay the ")
