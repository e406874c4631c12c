"""A loader too slow on the rank the others wait for is the input pipeline's loss, not a
straggler's (session 46, ``trace_ranks.cross_rank``'s ``loader_wait_s``): the others' loaders
prefetch while they sit in the all-reduce, so only that rank shows the data wait, and the
median over ranks halved it below the wait it caused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_trace_exchange_waits import _event

from scalesim import trace_ranks
from scalesim.trace_diagnosis import diagnose_traces

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
FETCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _loader_traces(tmp_path, ranks: list[tuple[float, float]], step_ms: float = 10.0,
                   steps: int = 5):
    """One gloo trace per rank of (data wait ms, compute ms): each step waits on its
    DataLoader (worker processes), computes, then all-reduces until the step's end (the
    all-reduce ends when the last rank arrives: 1 ms after it)."""
    paths = []
    for rank, (data, compute) in enumerate(ranks):
        events = []
        for n in range(steps):
            t = n * step_ms * 1e3
            events += [_event(f"ProfilerStep#{n + 1}", t, step_ms * 1e3, cat="user_annotation"),
                       _event(FETCH, t, data * 1e3, cat="user_annotation"),
                       _event("aten::mm", t + data * 1e3, compute * 1e3),
                       _event("gloo:all_reduce", t + (data + compute) * 1e3,
                              (step_ms - data - compute) * 1e3, cat="user_annotation", tid=2)]
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
            "backend": "gloo", "rank": rank, "world_size": len(ranks)}}))
        paths.append(str(path))
    return trace_ranks.load_traces(paths)


def test_a_slow_loader_on_one_rank_is_the_input_pipeline(tmp_path):
    """10 ms steps: rank 0 waits 6 ms on its loader and computes 3, rank 1 waits 0.5 ms and
    computes 3, then sits 6.5 ms in the all-reduce (5.5 ms of it for rank 0). By hand: the
    step holds 6 ms of data wait (rank 0's, which rank 1 waits out); without it the step is
    3 + 1 = 4 ms, +150 %. The median over ranks had read 3.25 ms of data wait against a
    5.5 ms straggler wait, and named a process far slower with "Fix the slow process"."""
    report = diagnose_traces(_loader_traces(tmp_path, [(6.0, 3.0), (0.5, 3.0)]), "t")
    cr = report.details["cross_rank"]
    assert cr["data_wait_s"] == pytest.approx(3.25e-3)  # the median over ranks, as before
    assert cr["loader_wait_s"] == pytest.approx(5.5e-3)
    assert cr["input_wait_s"] == pytest.approx(6e-3)
    assert cr["straggler_wait_s"] == pytest.approx(0.0, abs=1e-9)
    assert report.cause.key == "input_pipeline"
    assert report.cause.share == pytest.approx(0.6)
    assert "on the rank the others wait for" in report.cause.evidence[0]
    assert report.first_remedy.key == "loader"
    assert report.first_remedy.gain == pytest.approx(10 / 4 - 1, rel=0.02)
    assert all(f.key not in ("slow_device", "stragglers") for f in report.others)


def test_a_slow_compute_on_one_rank_stays_a_process_far_slower(tmp_path):
    """Rank 1 computes 8.7 ms, rank 0 3 ms, both wait 0.2 ms on their loaders (2 %, under
    ``LOADER_MODELLED_SHARE``): rank 0 waits 5.7 ms for rank 1's compute, the straggler's as
    before; no part of it is the loader's. Without the slow rank the step is 0.2 + 3 + 1 ms."""
    report = diagnose_traces(_loader_traces(tmp_path, [(0.2, 3.0), (0.2, 8.7)]), "t")
    cr = report.details["cross_rank"]
    assert cr["loader_wait_s"] == 0.0
    assert cr["straggler_wait_s"] == pytest.approx(5.7e-3)
    assert report.cause.key == "slow_device" and report.first_remedy.key == "slow_device"
    assert report.first_remedy.gain == pytest.approx(10 / 4.2 - 1, rel=0.03)


def test_a_slow_loader_on_every_rank_stays_the_input_pipeline(tmp_path):
    """Both ranks wait 6 ms on their loaders: no one waits for another, the data wait is the
    median over ranks as before, and removing it gains 10 / 4 - 1."""
    report = diagnose_traces(_loader_traces(tmp_path, [(6.0, 3.0), (6.0, 3.0)]), "t")
    cr = report.details["cross_rank"]
    assert cr["loader_wait_s"] == 0.0 and cr["straggler_wait_s"] == pytest.approx(0.0)
    assert report.cause.key == "input_pipeline" and report.cause.share == pytest.approx(0.6)
    assert "median over ranks" in report.cause.evidence[0]
    assert report.first_remedy.key == "loader"
    assert report.first_remedy.gain == pytest.approx(10 / 4 - 1, rel=0.02)


def test_a_real_job_whose_one_loader_worker_paces_rank_0(tmp_path):
    """The real 2-rank gloo DDP job of ``fixtures/traces/slow_loader_rank*.json.gz`` (one
    DataLoader worker sleeping 0.1 s a batch): rank 0 waits ~85 ms a step on it, rank 1's
    worker prefetches while rank 1 sits ~100 ms in the all-reduce. Before, the median over
    ranks read 44.8 ms of data wait (37 %) under a 102 ms straggler wait (85 %): "A process
    far slower", "Fix the slow process" +11 %. The loader's gain is held to removing the
    wait the step holds, and is above removing the median over ranks' (+60 %)."""
    summaries = trace_ranks.load_traces([str(FIXTURES / f"slow_loader_rank{r}.json.gz")
                                         for r in (0, 1)])
    report = diagnose_traces(summaries, "t")
    cr = report.details["cross_rank"]
    rank0 = summaries[0].median_step()
    assert cr["slowest_rank"] == 0
    assert report.cause.key == "input_pipeline", report.to_text()
    # the step holds about rank 0's own data wait, not the mean of the two ranks'
    assert report.cause.share * cr["step_s"] == pytest.approx(rank0.data_wait_s, rel=0.1)
    assert cr["loader_wait_s"] > cr["straggler_wait_s"]
    assert report.first_remedy.key == "loader"
    held = cr["input_wait_s"] / (cr["step_s"] - cr["input_wait_s"])
    median_over_ranks = cr["data_wait_s"] / (cr["step_s"] - cr["data_wait_s"])
    assert median_over_ranks < report.first_remedy.gain <= held + 1e-9
    text = report.to_text()
    assert "Likely cause: Input pipeline" in text
    assert "most of its excess is its own data wait" in text
