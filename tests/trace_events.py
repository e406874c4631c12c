"""Hand-made Kineto trace events for the diagnose tests that build a job's traces by hand
(test_trace_sharding_readings, test_trace_unseen_exchange, test_trace_zero_accumulation,
test_trace_metric_collectives, test_trace_set_aside_time): a CPU op, a collective's
``record_param_comms``, an NCCL kernel with the arguments Kineto copies onto it
(test_trace_kernel_buckets), the skeleton of profiler steps of k micro-steps, and the ranks'
summaries of the same events (or each rank's own); and one rank's step of a data wait, compute
and all-reduce, written as a gloo job's rank files (test_trace_data_wait_reading,
test_data_wait_one_reading)."""

from __future__ import annotations

import json
from collections.abc import Callable

from scalesim import traces

BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"


def op(name, ts_us, dur_us, cat="cpu_op", **args):
    """One complete event ("X") on thread 1 of process 1."""
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts_us,
            "dur": dur_us, "args": args}


def comm(collective, ts_us, elements=None, sized=True, dur_us=5.0):
    """A ``record_param_comms`` of ``collective`` ('allreduce', '_allgather_base', ...) of
    ``dur_us``, its size (``In msg nelems``) recorded where ``elements`` is given and ``sized``
    (gloo's traces with record_shapes; without, none)."""
    args = {"Collective name": collective,
            **({"In msg nelems": elements} if sized and elements is not None else {})}
    return op("record_param_comms", ts_us, dur_us, **args)


def nccl_kernel(name, ts_us, dur_us, collective=None, elements=None, dtype=None, ranks=2,
                stream=8, group=("0", "default_pg")):
    """An NCCL kernel on GPU 0's ``stream`` as Kineto writes it (cat "kernel"), with the
    collective's arguments where ``collective``, ``elements`` and ``dtype`` are given: those
    Kineto copies from the kernel's record_param_comms (pytorch/kineto
    libkineto/src/output_json.cpp at 114171df, ``appendCollectiveArgs``, lines 718-737: all of
    "Collective name", "In msg nelems", "Out msg nelems", "Group size" and "dtype", or none;
    the group's name, description and ranks beside them). ``dtype`` as PyTorch names it
    (``c10::toString``: "Float", "BFloat16"); without them, an older Kineto's kernel."""
    args = {"device": 0, "stream": stream}
    if collective is not None and elements is not None and dtype is not None:
        args.update({"Collective name": collective, "In msg nelems": elements,
                     "Out msg nelems": elements, "Group size": ranks, "dtype": dtype,
                     "Process Group Name": group[0], "Process Group Description": group[1],
                     "Process Group Ranks": str(list(range(ranks)))})
    return {**op(name, ts_us, dur_us, cat="kernel", **args), "pid": 0, "tid": stream}


def stepped(k: int, micro_us: float, micro_step: Callable[[int, float], list[dict]],
            steps: int = 3) -> list[dict]:
    """``steps`` profiler steps (``ProfilerStep#n`` annotations) of ``k`` micro-steps of
    ``micro_us`` each, back to back; ``micro_step(m, start_us)`` gives the events of micro-step
    ``m`` (0 to k - 1) of a step, starting at ``start_us``."""
    events = []
    for n in range(steps):
        t = n * k * micro_us
        events.append(op(f"ProfilerStep#{n + 1}", t, k * micro_us, cat="user_annotation"))
        for m in range(k):
            events += micro_step(m, t + m * micro_us)
    return events


def summaries(tmp_path, events, world: int = 2, traced: int | None = None):
    """``traces.summarise`` of the same ``events`` (or ``events(rank)``, each rank's own) as
    the traces of ranks 0.. of a gloo job of ``world`` ranks, written to
    ``tmp_path``/r<rank>.json: all of them, or the first ``traced``."""
    out = []
    for rank in range(world if traced is None else traced):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                        "world_size": world},
                                    "traceEvents": events(rank) if callable(events)
                                    else events}))
        out.append(traces.summarise(path))
    return out


def loaded_step(n: int, start_ms: float, end_ms: float, wait_name: str, wait_ms: float,
                compute_ms: float, reduce_at_ms: float) -> list[dict]:
    """One rank's events of profiler step ``n + 1`` (times in ms): the step from ``start_ms``
    to ``end_ms``, a data wait ``wait_name`` of ``wait_ms`` at its start, ``compute_ms`` of
    matmul after it, and a gloo all-reduce (thread 2) from ``reduce_at_ms`` to the step's end."""
    return [op(f"ProfilerStep#{n + 1}", start_ms * 1e3, (end_ms - start_ms) * 1e3,
               cat="user_annotation"),
            op(wait_name, start_ms * 1e3, wait_ms * 1e3, cat="user_annotation"),
            op("aten::mm", (start_ms + wait_ms) * 1e3, compute_ms * 1e3),
            {**op("gloo:all_reduce", reduce_at_ms * 1e3, (end_ms - reduce_at_ms) * 1e3,
                  cat="user_annotation"), "tid": 2}]


def write_ranks(tmp_path, events_by_rank: list[list[dict]], prefix: str = "r") -> list[str]:
    """The paths of ``events_by_rank`` written as the traces of ranks 0.. of a gloo job
    (``tmp_path``/<prefix><rank>.json)."""
    paths = []
    for rank, events in enumerate(events_by_rank):
        path = tmp_path / f"{prefix}{rank}.json"
        path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
            "backend": "gloo", "rank": rank, "world_size": len(events_by_rank)}}))
        paths.append(str(path))
    return paths


def diagnosed_model(ranks, source: str = "t"):
    """(report, profile, scenario) of ``trace_diagnosis.diagnose_traces(ranks)``: the model
    profile and scenario its remedies were priced on, caught as they are handed to
    ``model_remedies`` (the diagnosed job as the model sees it)."""
    from scalesim import trace_diagnosis

    caught = []
    original = trace_diagnosis.model_remedies

    def spy(profile, scenario, *args, **kwargs):
        caught.append((profile, scenario))
        return original(profile, scenario, *args, **kwargs)

    trace_diagnosis.model_remedies = spy
    try:
        report = trace_diagnosis.diagnose_traces(ranks, source)
    finally:
        trace_diagnosis.model_remedies = original
    return (report, *caught[0])
