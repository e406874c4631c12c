"""diagnose --trace's headline gives the communication and its exposed part of one aggregate
(session 44). It said "communication 17.5 ms per step ... exposed 18 ms on the slowest rank" on a
first-day user's 2-process gloo job: the median rank's median total beside each step's slowest
rank's exposed time, so the part read larger than the whole."""

from __future__ import annotations

import re

import pytest
from trace_events import comm, op, summaries

from scalesim.trace_diagnosis import diagnose_traces
from scalesim.trace_ranks import cross_rank


def _uneven(rank: int) -> list[dict]:
    """Rank 0 computes 1.2 ms and then waits 0.8 ms in its all-reduce; ranks 1 and 2 compute
    0.9 ms and exchange in 0.1 ms (steps of unequal length, as a CPU job's are)."""
    step_us, own_us = (2000.0, 1200.0) if rank == 0 else (1000.0, 900.0)
    events = []
    for n in range(3):
        t = n * step_us
        events.append(op(f"ProfilerStep#{n + 1}", t, step_us, cat="user_annotation"))
        events.append(op("aten::addmm", t, own_us))
        events.append(comm("allreduce", t + own_us, 1000, dur_us=step_us - own_us))
    return events


def test_the_headline_says_the_total_and_its_exposed_part_of_the_same_ranks(tmp_path):
    ranks = summaries(tmp_path, _uneven, world=3)
    cr = cross_rank(ranks)
    # the two aggregates differ here: the median rank's total is under the slowest's exposed
    assert cr["comm_s"] < cr["intrinsic_exposed_comm_s"]
    assert cr["intrinsic_exposed_comm_s"] <= cr["intrinsic_comm_s"]
    line = diagnose_traces(ranks, "t").cause.evidence[0]
    total, exposed = (float(x) for x in re.match(
        r"communication ([\d.]+) ms per step on the slowest rank \(each step's, median over "
        r"steps\), exposed ([\d.]+) ms of it", line).groups())
    assert (total, exposed) == (0.8, 0.8), line
    assert "of all ranks' communication overlaps compute" in line


def test_the_exposed_part_is_the_slowest_ranks_own_share_of_its_total(tmp_path):
    """Rank 0 computes 0.8 ms with its 0.4 ms all-reduce from 0.6 ms, half under the compute;
    rank 1 computes 0.5 ms and then waits 0.5 ms for it. Rank 0 is the slowest (0.8 ms of its
    own): 0.4 ms of communication a step, 0.2 ms of it exposed."""
    def half_hidden(rank):
        events = []
        for n in range(3):
            t = n * 1000.0
            events.append(op(f"ProfilerStep#{n + 1}", t, 1000.0, cat="user_annotation"))
            events.append(op("aten::addmm", t, 800.0 if rank == 0 else 500.0))
            events.append(comm("allreduce", t + (600.0 if rank == 0 else 500.0), 1000,
                               dur_us=400.0 if rank == 0 else 500.0))
        return events

    ranks = summaries(tmp_path, half_hidden, world=2)
    cr = cross_rank(ranks)
    assert cr["slowest_rank"] == 0
    assert cr["intrinsic_comm_s"] == pytest.approx(400e-6)
    assert cr["intrinsic_exposed_comm_s"] == pytest.approx(200e-6)
    report = diagnose_traces(ranks, "t")  # its cause the wait for rank 0; communication too
    line = next(f for f in [report.cause, *report.others] if f.key == "comm_growth").evidence[0]
    assert line.startswith("communication 0.4 ms per step on the slowest rank (each step's, "
                           "median over steps), exposed 0.2 ms of it"), line
