"""Session 32's audit of ``diagnose --trace``: what real and odd traces made it say wrongly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalesim import trace_ranks, traces
from scalesim.errors import ScalesimError
from scalesim.trace_diagnosis import diagnose_traces

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
    report = diagnose_traces(trace_ranks.load_traces([_write(tmp_path, "r0.json", events)]), "t")
    loader = next(r for r in report.remedies if r.key == "loader")
    assert loader.gain == pytest.approx(60 / 940)
    assert "capped at removing the traced data wait" in loader.note


def test_a_stage_idle_outside_its_ops_paces_the_pipeline(tmp_path):
    """A gloo pipeline of 2 stages, 2 micro-batches, 20 ms steps: stage 1 computes 1.5 ms a
    micro-batch and then sits 7.5 ms in no op (a sleep, host work the profiler does not
    record), while stage 0 computes 2 ms a step and waits 18 ms on its receives. Read off the
    stage with the most compute alone, the pipeline spanned 3 + 1.1 ms: "no scaling problem"
    (compute 12 % of the step, the pipeline 8 %) and the 15.9 ms left counted once a step, so
    4x the micro-batches promised +173 % (twice the batch +66 %), though stage 1's idle comes
    with every micro-batch. The span is the longest a stage computes and waits, 20 ms: the
    pipeline is the cause, and more micro-batches gain a few per cent (each pass costs about
    the step)."""
    config = [{"pg_name": "1", "pg_desc": "PIPELINE_MODEL_PARALLEL_GROUP", "pg_size": 2,
               "ranks": [0, 1]}]
    plans = {0: ([(0, 1), (19, 20)], [(1, 10), (10, 19)]),  # (compute, receives) in ms
             1: ([(1, 2.5), (10, 11.5)], [(0, 1), (9.9, 10)])}
    paths = []
    for rank, (compute, receives) in plans.items():
        events = []
        for n in range(4):
            t = n * 20_000.0
            events.append(_event(f"ProfilerStep#{n + 1}", t, 20_000.0, cat="user_annotation"))
            events += [_event("aten::mm", t + a * 1e3, (b - a) * 1e3) for a, b in compute]
            events += [_event("gloo:recv", t + a * 1e3, (b - a) * 1e3, cat="user_annotation",
                              tid=2) for a, b in receives]
        paths.append(_write(tmp_path, f"r{rank}.json", events, rank=rank, pg_config=config))
    report = diagnose_traces(trace_ranks.load_traces(paths), "t")
    pipeline = report.details["pipeline"]
    assert pipeline["pacing_stage"] == 1 and pipeline["micro_batches"] == 2
    assert pipeline["span_s"] == pytest.approx(20e-3)
    assert report.cause.key == "pipeline" and report.cause.share > 0.8
    assert "outside their ops" in " ".join(report.cause.evidence)
    gains = {r.key: r.gain for r in report.remedies}
    assert 0 < gains["accumulation"] < 0.1 and gains["bigger_batch"] == pytest.approx(0.0,
                                                                                     abs=1e-9)


@pytest.mark.parametrize("after", ["{}", " garbage", "\n]}"])
def test_anything_after_the_trace_is_refused(tmp_path, capsys, after):
    """Two exports joined (``cat rank0.json old.json > rank0.json``) read as the first alone,
    the second left out in silence; now one line, exit 2. White space after it is fine."""
    from scalesim.cli.main import main

    events = [_event("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
              _event("aten::mm", 0.0, 500.0)]
    path = Path(_write(tmp_path, "r0.json", events))
    text = path.read_text()
    path.write_text(text + " \n\t")
    assert len(traces.summarise(path).steps) == 1
    path.write_text(text + after)
    assert main(["diagnose", "--trace", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "after the trace's closing '}'" in err[0]


def test_a_trace_without_all_reduces_says_nothing_of_their_sizes(tmp_path):
    """One process, no collective (session 59 bug hunt): the notes said "the traces record no
    size for the gradient all-reduces ... record with record_shapes=True", of all-reduces the
    trace has none of."""
    events = []
    for n in range(3):
        t = n * 1000.0
        events += [_event(f"ProfilerStep#{n + 1}", t, 1000.0, cat="user_annotation"),
                   _event("aten::mm", t + 10, 900.0)]
    path = _write(tmp_path, "r0.json", events, world=1)
    report = diagnose_traces(trace_ranks.load_traces([path]), "t")
    assert not any("record no size" in n for n in report.notes)


def _steps(offset_us):
    return [_event(f"ProfilerStep#{n + 1}", offset_us + n * 1000.0, 1000.0, cat="user_annotation")
            for n in range(3)] + [_event("aten::mm", offset_us + n * 1000.0 + 10, 900.0)
                                  for n in range(3)]


def _on_host(path, base_ns):
    data = json.loads(Path(path).read_text())
    data.update(host_name="node7", baseTimeNanoseconds=base_ns)
    Path(path).write_text(json.dumps(data))
    return path


def test_ranks_of_different_runs_on_one_host_are_refused(tmp_path):
    """Rank 0 of one run and rank 1 of another, both on host node7 (session 59 bug hunt: their
    steps 154 s apart on one clock, read as one job: "rank 1 slowest in 100% of steps",
    "Fix the slow process +18.5%"). Steps that never overlap on one host's clock are refused;
    the times compare as baseTimeNanoseconds + ts, so a rank whose base is 3 s later and its
    ts 3 s earlier is the same moment, and ranks on two hosts (two clocks) are not compared."""
    first = _on_host(_write(tmp_path, "a0.json", _steps(0.0), rank=0), 10**18)
    later = _on_host(_write(tmp_path, "b1.json", _steps(154e6), rank=1), 10**18)
    with pytest.raises(ScalesimError, match=r"a0.json and b1.json ran on one host "
                                                    r"\(node7\), but their traced steps never "
                                                    r"overlap in time \(154 s apart\)"):
        trace_ranks.load_traces([first, later])
    rebased = _on_host(_write(tmp_path, "c1.json", _steps(-3e6), rank=1), 10**18 + 3 * 10**9)
    assert len(trace_ranks.load_traces([first, rebased])) == 2
    other = _write(tmp_path, "d1.json", _steps(154e6), rank=1)
    data = json.loads(Path(other).read_text())
    Path(other).write_text(json.dumps({**data, "host_name": "node8"}))
    assert len(trace_ranks.load_traces([first, other])) == 2
