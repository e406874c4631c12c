"""Session 40: diagnose --trace's per-rank table is each rank's median step with its own parts
(``TraceSummary.median_step``), so the parts add up to the step; before, each column was its own
median over the steps and need not (a DDP rank: step 9.87 ms, parts 4.18 ms)."""

from __future__ import annotations

import json

import pytest

from scalesim import traces
from scalesim.trace_diagnosis import diagnose_traces

FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def op(name, ts_us, dur_us, cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts_us,
            "dur": dur_us, "args": {}}


def three_steps():
    """CPU steps of 10, 12 and 11 ms: 9 ms compute + 1 idle; 2 compute + 10 data wait; 5
    compute + 6 idle. Medians part by part: step 11, compute 5, data 0, idle 1 (sum 6); the
    median step (11 ms, the third): 5 + 0 + 0 + 6 = 11."""
    return [op("ProfilerStep#1", 0.0, 10_000.0, "user_annotation"), op("aten::mm", 0.0, 9_000.0),
            op("ProfilerStep#2", 10_000.0, 12_000.0, "user_annotation"),
            op("aten::mm", 10_000.0, 2_000.0), op(FETCH, 12_000.0, 10_000.0, "user_annotation"),
            op("ProfilerStep#3", 22_000.0, 11_000.0, "user_annotation"),
            op("aten::mm", 22_000.0, 5_000.0)]


def test_the_table_is_the_median_steps_own_breakdown(tmp_path):
    summaries = []
    for rank in (0, 1):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                        "world_size": 2},
                                    "traceEvents": three_steps()}))
        summaries.append(traces.summarise(path))
    s = summaries[0]
    assert [s.median(k) for k in ("step_s", "compute_s", "data_wait_s", "idle_s")] == \
        pytest.approx([11e-3, 5e-3, 0.0, 1e-3])  # the medians taken apart: 6 ms of 11
    assert s.median_step().step == 3
    report = diagnose_traces(summaries, "t")
    row = report.table[0]
    assert row["median_step"] == 3
    parts = [row[k] for k in ("compute_s", "exposed_comm_s", "data_wait_s", "idle_s")]
    assert parts == pytest.approx([5e-3, 0.0, 0.0, 6e-3])
    assert sum(parts) == pytest.approx(row["step_s"]) and row["step_s"] == pytest.approx(11e-3)
    text = report.to_text()
    assert "   0     3     11.00      5.00      0.00      0.00      0.00      0.00      6.00" \
        in text, text
    assert "each rank's median step, the step whose length is the median" in text


def test_of_an_even_count_the_shorter_middle_step():
    """Steps of 10, 12, 11 and 13 ms: the middle two are 11 and 12, the shorter taken (a step
    that ran, where the median 11.5 is none)."""
    steps = [traces.StepBreakdown(n, t, t, 0.0, 0.0, 0.0, 0.0, 0.0)
             for n, t in enumerate((10e-3, 12e-3, 11e-3, 13e-3), start=1)]
    s = traces.TraceSummary("p", 0, 1, "", "cpu", steps, {})
    assert s.median_step().step == 3
