"""A trace event other than a step whose dur is finite but past any event's bound (1e15 us:
31.7 years) was clipped in silence to the step windows it covered: an all-reduce kernel of
rank 0 that long made rank 1 "the slowest in 2 of 2 steps". It is now refused in one line
naming the event, its ts and dur and the bound (``traces.overlong_event_refusal``), as a
non-finite dur is; a ProfilerStep past the bound is still left out with a note."""

from __future__ import annotations

import json

import pytest
from test_traces import gpu_trace

from scalesim.cli.main import main

KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _two_ranks(tmp_path, dur_us: float) -> list[str]:
    """``gpu_trace``'s two ranks, rank 0's first all-reduce kernel (at ts 600 us, event 8) of
    ``dur_us``."""
    paths = []
    for rank in (0, 1):
        doc = gpu_trace(rank)
        if rank == 0:
            kernel = next(ev for ev in doc["traceEvents"] if ev["name"] == KERNEL)
            kernel["dur"] = dur_us
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(("dur_us", "said"), [
    (1e15, "1,000,000,000,000,000 us (31.7 years)"),
    (1.5e12, "1,500,000,000,000 us (17.4 days)"),
    (1e20, "1e20 us"),  # an exponent says how long: no 3,168,808,781,402 years
])
def test_an_event_longer_than_any_is_refused_naming_it(tmp_path, capsys, dur_us, said):
    paths = _two_ranks(tmp_path, dur_us)
    assert main(["diagnose", "--trace", *paths]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"scalesim diagnose: error: {paths[0]}: event 8 ({KERNEL[:80]}) at ts 600 us: dur {said}: "
        "past 1,000,000 s (11.6 days), the longest event read; torch.profiler records none that "
        "long, so the trace was edited, re-timed or written by another tool: re-record it with "
        "torch.profiler"]


def test_an_event_at_the_bound_is_read(tmp_path, capsys):
    """1e12 us (11.6 days) is the bound itself: read, clipped to the steps as any event."""
    paths = _two_ranks(tmp_path, 1e12)
    assert main(["diagnose", "--trace", *paths]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"Diagnosis of {paths[0]}, {paths[1]}\n") and err == ""
