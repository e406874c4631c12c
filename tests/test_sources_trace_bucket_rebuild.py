"""calibrate --from-trace: DDP's bucket rebuild is no per-step communication (session 52).

Once in a job, in its first forward after the first backward, DDP's Reducer rebuilds its gradient
buckets and rank 0 broadcasts their parameter indices and sizes as 32-bit integers
(``Reducer::sync_bucket_indices``: on the 2-rank gloo test job, ``gloo:broadcast`` of int [7] and
[2] inside ProfilerStep#1, the job's second iteration, its first a warm-up). The report read them
as the job's per-step communication: "broadcast: 0.4 calls" over 5 traced steps, "1 calls" over
2. A model with buffers (BatchNorm) broadcasts them in each forward (``_sync_buffers``): those stay.
"""

from __future__ import annotations

import json

import pytest
from test_traces import event

from scalesim.cli.main import main
from scalesim.sources import trace_compute as tc

STEP_US = 1000.0


def gloo(name, t, dur, dims, dtype):
    """A gloo collective on its worker thread, its first input's shape and type recorded."""
    return event(f"gloo:{name}", t, dur, cat="user_annotation", tid=3,
                 **{"Input Dims": [dims], "Input type": [dtype]})


def ddp_trace(rank: int, steps: int = 4) -> dict:
    """A 2-rank gloo DDP job's rank: before the first step, DDP's construction broadcasts the
    1,000 fp32 parameters; each 1 ms step broadcasts 128 fp32 buffer elements (20 us) and
    all-reduces the 1,000 gradients (200 us); step 1 also broadcasts the rebuilt buckets' int32
    indices [7] and sizes [2] (20 us each)."""
    ev = [gloo("broadcast", -500.0, 100.0, [1000], "float")]
    for n in range(steps):
        t = n * STEP_US
        ev += [event(f"ProfilerStep#{n + 1}", t, STEP_US, cat="user_annotation"),
               gloo("broadcast", t + 10, 20.0, [128], "float"),
               event("aten::addmm", t + 100, 500.0),
               event("autograd::engine::evaluate_function: AddmmBackward0", t + 300, 300.0),
               gloo("all_reduce", t + 600, 200.0, [1000], "float")]
    ev += [gloo("broadcast", 40.0, 20.0, [7], "int"), gloo("broadcast", 70.0, 20.0, [2], "int")]
    return {"distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2},
            "traceEvents": ev}


def write_traces(tmp_path) -> list[str]:
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps(ddp_trace(rank)))
        paths.append(str(path))
    return paths


def test_the_bucket_rebuild_is_left_out_of_the_broadcasts_a_step(tmp_path):
    """Before: (4 + 2) / 4 = 1.5 broadcasts a step of (4 x 512 + 28 + 8) / 4 = 521 bytes, 30 us.
    Now the buffers' one of 512 bytes, 20 us; the construction's (before step 1) stays out."""
    rank = tc.read_rank(write_traces(tmp_path)[0])
    b = rank.comm["broadcast"]
    assert b.count == 1 and b.time_s == pytest.approx(20e-6)
    assert b.bytes == pytest.approx(512.0) and b.sizes == [512.0]
    assert rank.bucket_rebuild_calls == 2
    assert rank.comm["all_reduce"].count == 1


def test_calibrate_says_the_rebuild_it_left_out(tmp_path, capsys):
    paths = write_traces(tmp_path)
    assert main(["calibrate", "--from-trace", *(f"8={p}" for p in paths),
                 "--out", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "    broadcast: 1 call, 0.02 ms per step, 0.0004883 MiB per step" in out
    assert ("    left out: 2 broadcasts of 32-bit integers, DDP's bucket rebuild (once in a job: "
            "rank 0 sends the rebuilt buckets' parameter indices in the first forward after the "
            "first backward), no per-step communication") in out


def test_an_nccl_bucket_rebuild_is_left_out_too(tmp_path):
    """On a GPU, the rebuild is an NCCL broadcast kernel of dtype Int in step 1: (2 + 0) / 2 = 1
    broadcast a step before, none now; a Float one in each step (buffers) stays, one a step."""
    from test_sources_trace import gpu_step_trace

    def broadcast(t, elements, dtype):
        return event("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", t, 10,
                     cat="kernel", tid=8, **{"In msg nelems": elements,
                                             "Out msg nelems": elements, "dtype": dtype})

    trace = gpu_step_trace()
    trace["traceEvents"] += [broadcast(50.0, 7, "Int"), broadcast(70.0, 2, "Int"),
                             broadcast(90.0, 128, "Float"), broadcast(10_090.0, 128, "Float")]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(trace))
    rank = tc.read_rank(path)
    assert rank.bucket_rebuild_calls == 2
    b = rank.comm["broadcast"]
    assert b.count == 1 and b.bytes == pytest.approx(512.0) and b.time_s == pytest.approx(10e-6)
