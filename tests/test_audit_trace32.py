"""Session 32's audit of ``diagnose --trace``: what real and odd traces made it say wrongly."""

from __future__ import annotations

import json

import pytest

from scalesim import traces
from scalesim.diagnosis import diagnose_traces

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _event(name, ts_us, dur_us, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us,
            "dur": dur_us, "args": {}}


def _write(tmp_path, name, events, rank=0, world=2, **info):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
        "backend": "gloo", "rank": rank, "world_size": world, **info}}))
    return str(path)


def test_the_loader_remedy_gains_no_more_than_the_traced_data_wait(tmp_path):
    """One rank of a DDP job whose 1000 us steps each wait 60 us on the DataLoader and spend
    the rest differently (compute, then the all-reduce, then idle): the medians of the parts
    (100 us compute, 100 us communication, 140 us idle) fall far short of the step, and the
    model, holding the loader at today's rate, had read the gap as the loader's: "Cache the
    input" +194 %, where removing the wait gives 60 / 940 = +6.4 % at most."""
    events = []
    for n, (compute, comm) in enumerate([(700, 100), (100, 700), (100, 100)]):
        t = n * 1000.0
        events += [_event(f"ProfilerStep#{n + 1}", t, 1000.0, cat="user_annotation"),
                   _event(LOADER, t, 60.0, cat="user_annotation"),
                   _event("aten::mm", t + 60, compute),
                   _event("gloo:all_reduce", t + 60 + compute, comm, cat="user_annotation",
                          tid=2)]
    report = diagnose_traces(traces.load_traces([_write(tmp_path, "r0.json", events)]), "t")
    loader = next(r for r in report.remedies if r.key == "loader")
    assert loader.gain == pytest.approx(60 / 940)
    assert "capped at removing the traced data wait" in loader.note
