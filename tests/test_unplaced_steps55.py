"""A GPU trace whose kernels carry no ``correlation`` ids places each step on the device
timeline by its GPU copy (``gpu_user_annotation``) alone: the host's window runs ahead of the
GPU's, so a step whose GPU copy was missing, or left out for its duration, was dropped with no
word (diagnose --trace and calibrate --from-trace read one step of ``gpu_trace``'s two). It is
now named in a note that says why (``traces.unplaced_steps_notes``); with correlation ids the
step is still placed by the work its host copy launched."""

from __future__ import annotations

import json

import pytest
from test_traces import event, gpu_trace

from scalesim import traces
from scalesim.cli.main import main

BOUND = "1e-12 <= x <= 1,000,000 s"
BY_HOST = "the kernels carry no correlation ids to place it by the work its host copy launched"


def _step_2_gpu_copy(tmp_path, dur_us: float | None, correlated: bool = False):
    """``gpu_trace``'s rank 0 (steps 1 and 2, 1000 us each), step 2's GPU copy of ``dur_us``
    (None: none); ``correlated``: each step's host launches its GEMM (correlation ids)."""
    doc = gpu_trace(0)
    events = doc["traceEvents"]
    twin = next(ev for ev in events
                if ev["name"] == "ProfilerStep#2" and ev["cat"] == "gpu_user_annotation")
    if dur_us is None:
        events.remove(twin)
    else:
        twin["dur"] = dur_us
    if correlated:
        for n, t in ((1, 0.0), (2, 1000.0)):
            events.append(event("cudaLaunchKernel", t + 70, 5.0, cat="cuda_runtime",
                                correlation=n))
            gemm = next(ev for ev in events if ev["name"].startswith("sm80") and ev["ts"] == t + 100)
            gemm["args"]["correlation"] = n
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_step_with_no_gpu_copy_and_no_correlation_is_named(tmp_path, capsys):
    path = _step_2_gpu_copy(tmp_path, None)
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1]
    assert s.notes == ["r0.json: ProfilerStep#2 left out: it has no GPU copy "
                       f"(gpu_user_annotation) to place it on the device timeline, and {BY_HOST}"]
    assert main(["diagnose", "--trace", str(path)]) == 0
    assert "note: r0.json: ProfilerStep#2 left out: it has no GPU copy" in capsys.readouterr().out


@pytest.mark.parametrize("dur_us", [0.0, 2e12])  # 0, and 2e6 s past the bound's 1e6 s
def test_a_step_whose_gpu_copy_is_out_of_bounds_and_no_correlation_is_named_once(tmp_path,
                                                                                  dur_us):
    """The step is named once, with the duration that left its copy out."""
    s = traces.summarise(_step_2_gpu_copy(tmp_path, dur_us))
    assert [st.step for st in s.steps] == [1]
    assert s.notes == ["r0.json: ProfilerStep#2 left out: its GPU copy (gpu_user_annotation), "
                       "which places it on the device timeline, is of duration 0 or outside "
                       f"{BOUND}, and {BY_HOST}"]


@pytest.mark.parametrize("dur_us", [None, 0.0])
def test_with_correlation_ids_the_step_is_placed_by_what_its_host_launched(tmp_path, dur_us):
    """Step 2's GEMM, launched in its host window, runs 1100 to 1500 us: its window."""
    s = traces.summarise(_step_2_gpu_copy(tmp_path, dur_us, correlated=True))
    assert [st.step for st in s.steps] == [1, 2]
    assert (s.steps[1].start_s, s.steps[1].end_s) == pytest.approx((1100e-6, 1500e-6))
    assert not any(BY_HOST in n for n in s.notes)


def test_calibrate_from_trace_reads_the_same_steps_and_note(tmp_path):
    from scalesim.sources.trace_compute import read_rank

    rank = read_rank(_step_2_gpu_copy(tmp_path, None))
    assert [st.step for st in rank.summary.steps] == [1] and len(rank.fwd_bwd_s) == 1
    assert any(n.startswith("r0.json: ProfilerStep#2 left out: it has no GPU copy")
               for n in rank.summary.notes)
