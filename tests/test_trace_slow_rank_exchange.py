"""A slow rank's exchange hides behind its own, longer, backward (docs/model.md §3, §6): every
bucket's all-reduce waits for the last rank's gradients, so the model's exposed exchange of a
job with a slow device is the bucket timeline over that device's passes (``model/step.py``,
``model/layout_step.py`` at pp 1), not over the others'. Checked on a real 2-rank gloo job
whose rank 1 is a slower device (``fixtures/traces/slow_device_rank*.json.gz``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from trace_events import diagnosed_model

from scalesim import trace_ranks
from scalesim.model.overlap import timeline_end_scalar
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict

TRACES = Path(__file__).parent / "fixtures" / "traces"
PATHS = [str(TRACES / f"slow_device_rank{r}.json.gz") for r in (0, 1)]


def _steps(path: str) -> list[dict]:
    """Per profiler step of one raw trace, ms: its length, its backward's span (first to last
    autograd node), the all-reduces' union and what of them runs after the backward's end."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    out = []
    for step in (e for e in events if e["name"].startswith("ProfilerStep#")):
        a, b = step["ts"], step["ts"] + step["dur"]
        inside = [e for e in events if a <= e["ts"] < b]
        bwd = [e for e in inside if e["name"].startswith("autograd::engine::evaluate_function")]
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in inside
                       if e["name"] == "gloo:all_reduce")
        union, end = 0.0, -np.inf
        for s, t in spans:
            union += max(t - max(s, end), 0.0)
            end = max(end, t)
        bwd_end = max(e["ts"] + e["dur"] for e in bwd)
        out.append({"step": step["dur"] / 1e3,
                    "backward": (bwd_end - min(e["ts"] for e in bwd)) / 1e3,
                    "exchange": union / 1e3, "after_backward": (end - bwd_end) / 1e3})
    return out


def _median(rows, key):
    return float(np.median([r[key] for r in rows]))


@pytest.fixture(scope="module")
def traced(request):
    """The diagnosis of the fixture and the model's prediction of the diagnosed job."""
    report, profile, scenario = diagnosed_model(trace_ranks.load_traces(PATHS))
    return report, scenario, predict(profile, scenario)[0]


def test_the_slow_ranks_exposed_exchange_follows_the_trace(traced):
    """Hand-read from the raw events (medians over the 6 steps): rank 1's backward lasts
    183.8 ms against rank 0's 72.8, its all-reduces 111.0 ms (their union), 26.6 ms of them
    after its last backward node. The model hid the exchange behind the fast ranks' backward:
    82.1 ms exposed (0.50 of the exchange off the trace's), a 396.8 ms step for the traced
    356.9 (+11 %); over the slow device's passes 27.5 ms (0.01) and 342.2 ms (-4 %); in the
    job's own four equal buckets (session 48, ``trace_buckets``) 33.9 ms (0.07: the last
    bucket a quarter of a 135.5 ms exchange, the slow rank's collective time with its host
    ops, against 111.0 ms of gloo all-reduces) and 348.6 ms (-2 %); with the exchange the gloo
    all-reduces alone (session 48, ``trace_comm_calls.WORKER_COMM_PREFIXES``: the
    ``c10d::allreduce_`` posting each, nested in its gradient hook, is the host's) 27.75 ms
    (0.01) and 342.5 ms (-4 %: the step's closer figure before was the two errors cancelling)."""
    report, scenario, now = traced
    fast, slow = _steps(PATHS[0]), _steps(PATHS[1])
    assert _median(slow, "backward") > 2 * _median(fast, "backward")  # the slow device's
    exchange, exposed = _median(slow, "exchange"), _median(slow, "after_backward")
    assert report.cause.key == "slow_device" and scenario.slow_factor > 2 and scenario.overlap
    # the model's exchange: each step's least union of a rank's gloo all-reduces, median (was
    # 135.5 ms, the slow rank's with its posting ops)
    last = float(np.median([min(a["exchange"], b["exchange"])
                            for a, b in zip(fast, slow, strict=True)]))
    assert float(now.comm_total_s) * 1e3 == pytest.approx(last, rel=1e-6)
    # within 2 % of the exchange of what the trace shows exposed (was 0.41 of it, then 0.07)
    assert abs(now.exposed_comm_s * 1e3 - exposed) <= 0.02 * exchange
    # the model's step within 8 % of the slow rank's (was 11 % over)
    assert now.step_time_s * 1e3 == pytest.approx(_median(slow, "step"), rel=0.08)


def test_fixing_the_slow_rank_promises_no_more_than_the_trace_allows(traced):
    """Without the slow rank the exchange can hide behind rank 0's backward at most: the step
    is at least rank 0's own time (step minus what its all-reduces leave after its backward,
    their wait for rank 1) plus the exchange beyond that backward: from the raw events and the
    waiting rank's compute and idle, 356.9 / (105.4 + 1.9 + 111.0 - 72.8) - 1 = +145 % at most.
    A guard (the model's +109 % before, over a step 11 % too long, was within it too): now
    +107.5 % (+80 % before session 48's traced buckets, +83.5 % with them over an exchange
    that held the posting ops, +107.0 % without them on the model before session 48's
    straggler stretch), the exchange exposed behind a 72 ms backward (the model's two
    thirds of the compute, rank 0's traced one 72.8 ms)."""
    report, _, _ = traced
    cr = report.details["cross_rank"]
    fast, slow = _steps(PATHS[0]), _steps(PATHS[1])
    least = (cr["waiting_compute_s"] + cr["idle_s"]) * 1e3 + max(
        _median(slow, "exchange") - _median(fast, "backward"), 0.0)
    gain = {r.key: r.gain for r in report.remedies}["slow_device"]
    assert report.first_remedy.key == "slow_device"
    assert 0 < gain <= _median(slow, "step") / least - 1


def _ddp(**kw) -> StepInputs:
    """8 devices of one server, DDP over 1 GB of gradients at 100 GB/s busbw, overlapped: a
    40 ms micro-step (backward 2/3 of it, 26.7 ms) and a slow device 3x slower."""
    base = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
                per_sample_s=0.04, optimizer_step_s=0.0, backward_fraction=2 / 3, params=250e6,
                wire_bytes_per_param=4.0,
                intra_busbw_GBps=100.0, inter_busbw_GBps=100.0, intra_latency_s=0.0,
                inter_latency_s=0.0, overlap=True, slow_factor=3.0, jitter_cv=0.0,
                device_cv=0.0)
    base.update(kw)
    return StepInputs(**base)


def test_the_exchange_runs_over_the_slow_devices_backward_by_hand():
    """The bucket timeline (§3) over the slow device's backward, 3 x 26.7 = 80 ms, leaves the
    last bucket's all-reduce exposed; fixing the device exposes what outlasts a 26.7 ms one.
    Without overlap the slow device changes nothing of the exchange."""
    slow, fixed = evaluate(_ddp()), evaluate(_ddp(slow_factor=1.0))
    comm = float(slow.comm_total_s)
    per_byte = comm / 1e9  # one bucket's all-reduce at latency 0: its bytes' share

    def by_hand(backward_s):
        return timeline_end_scalar(backward_s, 1e9, 25 * 2**20, 2**20,
                                   lambda b: b * per_byte) - backward_s

    assert float(slow.exposed_comm_s) == pytest.approx(by_hand(3 * 0.04 * 2 / 3), rel=1e-9)
    assert float(fixed.exposed_comm_s) == pytest.approx(by_hand(0.04 * 2 / 3), rel=1e-9)
    assert float(slow.exposed_comm_s) < float(fixed.exposed_comm_s)
    off = evaluate(_ddp(overlap=False)), evaluate(_ddp(overlap=False, slow_factor=1.0))
    assert float(off[0].exposed_comm_s) == float(off[1].exposed_comm_s) == pytest.approx(comm)
