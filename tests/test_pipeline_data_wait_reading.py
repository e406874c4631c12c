"""A pipeline with no data-parallel exchange prices its batch remedies under the steps' reading
of its data wait (``trace_data_wait.as_read``), as the exchange's model does (session 47).

Before, ``pipeline_only_batch_remedies`` carried the wait one way, serial with the step (an
in-process loader's): on the hand-made 2-stage pipeline of ``test_pipeline_trace`` with a 2-unit
fetch before each 15-unit schedule (17-unit steps, 4 steps: 3 pairs, not read), 4x the
micro-batches read +15.3 % alone, where a loader that paces the job gives +0 %."""

from __future__ import annotations

import json

import pytest
from app_harness import open_diagnose_page
from cli_harness import run_cli
from test_pipeline_trace import STEP_UNITS, UNIT_US, _reading, _stage_trace

from scalesim import trace_ranks
from scalesim.trace_data_wait import FIXED, PACES, UNDECIDED
from scalesim.trace_diagnosis import diagnose_traces, pipeline_only_batch_remedies

FETCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
UNIT = UNIT_US * 1e-6


def _with_fetch(trace: dict, fetch_units: float) -> dict:
    """``trace`` with each step starting in a worker loader's fetch of ``fetch_units``."""
    step_us, fetch_us = STEP_UNITS * UNIT_US, fetch_units * UNIT_US
    events = []
    for e in trace["traceEvents"]:
        e = dict(e, ts=e["ts"] + int(e["ts"] // step_us) * fetch_us)
        if e["name"].startswith("ProfilerStep#"):
            e["dur"] += fetch_us
            if e["cat"] == "user_annotation":
                events.append(dict(e, name=FETCH, dur=fetch_us))
        else:
            e["ts"] += fetch_us
        events.append(e)
    return dict(trace, traceEvents=events)


def _paths(tmp_path, fetch_units: float = 2.0) -> list[str]:
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_with_fetch(_stage_trace(rank), fetch_units)))
        paths.append(str(path))
    return paths


def test_each_reading_prices_the_pipelines_batch_remedies_by_hand(tmp_path):
    """The pipeline of span 15 in a 20-unit step, 1 unit of other groups' collectives, a 2-unit
    wait, 2 of rest: serial (None, as before) 40/38 and 80/65; a fixed fetch cost paid once a
    step for twice the batch, 2 + 2 + 2 x 16 = 36, 40/36 - 1, each pass for 4x, 80/65 - 1; a
    loader that paces the job: 2x and 4x the step, +0 % both."""
    reading = _reading(diagnose_traces(trace_ranks.load_traces(_paths(tmp_path, 0.0)), "t"))

    def gains(wait_reading):
        return {r.key: r.gain for r in pipeline_only_batch_remedies(
            reading, 20 * UNIT, 1 * UNIT, 2 * UNIT, "GPU", wait_reading)}

    assert gains(None) == pytest.approx({"bigger_batch": 40 / 38 - 1,
                                         "accumulation": 80 / 65 - 1})
    assert gains(FIXED) == pytest.approx({"bigger_batch": 40 / 36 - 1,
                                          "accumulation": 80 / 65 - 1})
    assert gains(PACES) == pytest.approx({"bigger_batch": 0.0, "accumulation": 0.0}, abs=1e-12)


def test_an_unread_wait_gives_both_gains(tmp_path):
    """17-unit steps (the 2-unit wait 12 %, under the 20 % that reads as pacing), 4 steps: not
    read. 4x the micro-batches +0 % while the loader paces, 4 x 17 / (17 + 3 x (12 + 2)) - 1 =
    +15.3 % beside it (before: +15.3 % alone); twice the batch +0 %, 2 x 17 / 32 - 1 = +6.25 %
    beside it (before +0 % alone)."""
    report = diagnose_traces(trace_ranks.load_traces(_paths(tmp_path)), "t")
    assert report.details["data_wait_reading"]["reading"] == UNDECIDED
    by_key = {r.key: r for r in report.remedies}
    acc, big = by_key["accumulation"], by_key["bigger_batch"]
    assert acc.gain == pytest.approx(0.0, abs=1e-12)
    assert acc.other_gain == pytest.approx(4 * 17 / 59 - 1)
    assert big.gain == pytest.approx(0.0, abs=1e-12)
    assert big.other_gain == pytest.approx(2 * 17 / 32 - 1)
    assert acc.caveat.startswith("+15% if the 0.2 ms data wait is a fixed cost of each fetch; "
                                 "+0% while the loader paces the job")


def test_a_wait_of_a_fifth_of_the_step_paces_the_pipeline(tmp_path):
    """A 4.5-unit wait, 23 % of the 19.5-unit step: the loader paces, so neither batch remedy
    gains and none carries a second gain."""
    report = diagnose_traces(trace_ranks.load_traces(_paths(tmp_path, 4.5)), "t")
    assert report.details["data_wait_reading"]["reading"] == PACES
    by_key = {r.key: r for r in report.remedies}
    for key in ("accumulation", "bigger_batch"):
        assert by_key[key].gain == pytest.approx(0.0, abs=1e-12)
        assert by_key[key].other_gain is None


def test_the_cli_gives_both_gains(tmp_path, capsys):
    """The text's caution and --json's other_gain of 4x the micro-batches."""
    paths = _paths(tmp_path)
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *paths])
    assert code == 0, err
    assert "+15% if the 0.2 ms data wait is a fixed cost of each fetch" in out
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *paths, "--json"])
    assert code == 0, err
    row = next(r for r in json.loads(out)["remedies"] if r["key"] == "accumulation")
    assert row["other_gain"] == pytest.approx(4 * 17 / 59 - 1)


def test_the_diagnose_page_gives_both_gains(tmp_path):
    """The page's remedy table carries the caution with both gains."""
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    files = [(f"rank{r}.json", json.dumps(_with_fetch(_stage_trace(r), 2.0)).encode(),
              "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(d.value.to_dict()) for d in at.dataframe) + " ".join(
        w.value for w in at.warning)
    assert "+15% if the 0.2 ms data wait is a fixed cost of each fetch" in shown
