"""Session 41: what a job's traces cannot show is said, never priced (``trace_diagnosis.
diagnose_traces``): a trace of one process (nothing exchanged), ranks with no collective in
any trace (the communication not recorded, or a job that never synchronised), and DDP
reducing its gradients in every micro-step of an accumulating step (no ``no_sync``), which
the model's DDP (one exchange an optimizer step) does not send. Hand-made CPU traces: each
micro-step a DDP forward (a 200 us matmul), a 100 us backward and, where it reduces, a 100 us
all-reduce (``record_param_comms``) after it, nothing overlapping."""

from __future__ import annotations

import json

from scalesim import traces
from scalesim.trace_diagnosis import ONE_PROCESS_NOTE, diagnose_traces

BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"
FORWARD_US, BACKWARD_US, ALL_REDUCE_US = 200.0, 100.0, 100.0
MICRO_US = FORWARD_US + BACKWARD_US + ALL_REDUCE_US


def op(name, ts_us, dur_us, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts_us,
            "dur": dur_us, "args": args}


def ddp_job(k: int, reducing: int, steps: int = 3) -> list[dict]:
    """``steps`` profiler steps of ``k`` micro-steps, the last ``reducing`` of which all-reduce
    after their backward (k: every micro-step, no no_sync; 1: no_sync on the first k - 1; 0:
    no collective at all)."""
    events = []
    for n in range(steps):
        t = n * k * MICRO_US
        events.append(op(f"ProfilerStep#{n + 1}", t, k * MICRO_US, cat="user_annotation"))
        for m in range(k):
            a = t + m * MICRO_US
            events.append(op("DistributedDataParallel.forward", a, FORWARD_US,
                             cat="user_annotation"))
            events.append(op("aten::mm", a, FORWARD_US))
            events.append(op(BACKWARD, a + FORWARD_US, BACKWARD_US))
            if m >= k - reducing:
                events.append(op("record_param_comms", a + FORWARD_US + BACKWARD_US,
                                 ALL_REDUCE_US, **{"Collective name": "allreduce"}))
    return events


def summaries(tmp_path, events, world: int, traced: int | None = None):
    out = []
    for rank in range(world if traced is None else traced):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                        "world_size": world},
                                    "traceEvents": events}))
        out.append(traces.summarise(path))
    return out


def test_one_process_says_why_no_remedy_is_predicted_and_what_answers_it(tmp_path):
    """World size 1: nothing to exchange, so no model remedy. Before, the report said "First
    remedy to try: not predicted (see the notes)" and no note said why."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 0), world=1), "r0.json")
    assert report.first_remedy is None and report.remedies == []
    assert ONE_PROCESS_NOTE in report.notes
    assert "one process (world size 1): it exchanges nothing" in ONE_PROCESS_NOTE
    assert "scalesim predict --profile p.json" in ONE_PROCESS_NOTE
    assert "scalesim calibrate --from-trace" in ONE_PROCESS_NOTE
    text = report.to_text()
    assert "First remedy to try: not predicted (see the notes)" in text
    assert f"note: {ONE_PROCESS_NOTE}" in text


def test_two_processes_get_no_one_process_note(tmp_path):
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 1), world=2), "r*.json")
    assert ONE_PROCESS_NOTE not in report.notes and report.remedies


def test_one_traced_rank_of_two_is_no_one_process_job(tmp_path):
    """Rank 0 of a 2-rank job traced alone: the job exchanges (world size 2), so remedies are
    priced and the one-process note is not given."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 1), world=2, traced=1), "r0.json")
    assert ONE_PROCESS_NOTE not in report.notes and report.remedies
