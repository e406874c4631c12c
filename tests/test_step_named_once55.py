"""A ProfilerStep whose host copy (user_annotation) and GPU copy (its gpu_user_annotation twin)
were both outside positive_duration_s (0, or past 1,000,000 s) was named twice in the note of
the steps left out ("ProfilerStep#3, ProfilerStep#3 of duration 0 ... left out"), and counted
twice in the refusal of a trace with no other step ("ProfilerStep#1 and 3 more" for two steps).
Each step is now named once, with the copies that were out (``traces.out_of_bounds_step_words``)."""

from __future__ import annotations

import json

import pytest
from test_traces import event, gpu_trace

from scalesim import traces
from scalesim.cli.main import main
from scalesim.errors import ScalesimError

BOUND = "1e-12 <= x <= 1,000,000 s"


def _with_step_3(tmp_path, dur_us: float, cats=("user_annotation", "gpu_user_annotation")):
    """``gpu_trace``'s rank 0 (steps 1 and 2, 1000 us each) and a step 3 at 2000 us of
    ``dur_us``, one copy for each of ``cats``."""
    doc = gpu_trace(0)
    doc["traceEvents"] += [event("ProfilerStep#3", 2000.0, dur_us, cat=cat, tid=7) for cat in cats]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("dur_us", [0.0, 2e12])  # 0, and 2e6 s past the bound's 1e6 s
def test_a_step_whose_two_copies_are_out_of_bounds_is_named_once(tmp_path, capsys, dur_us):
    path = _with_step_3(tmp_path, dur_us)
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1, 2]
    said = [n for n in s.notes if "ProfilerStep#3" in n]
    assert said == [f"r0.json: ProfilerStep#3 (host and GPU copies) of duration 0 or outside "
                    f"{BOUND} left out"]
    assert main(["diagnose", "--trace", str(path)]) == 0
    assert capsys.readouterr().out.count("ProfilerStep#3") == 1


def test_a_step_whose_gpu_copy_alone_is_out_is_said_so(tmp_path):
    """Step 3's GPU copy of duration 0, its host copy read: the note says which copy was left
    out. (Step 2's GPU copy of duration 0 in ``gpu_trace``, whose kernels carry no correlation
    ids, leaves the step out: test_unplaced_steps55.py.)"""
    doc = gpu_trace(0)
    doc["traceEvents"] += [event("ProfilerStep#3", 2000.0, 1000.0, cat="user_annotation"),
                           event("cudaLaunchKernel", 2010.0, 5.0, cat="cuda_runtime",
                                 correlation=3),
                           event("gemm", 2100.0, 400.0, cat="kernel", tid=7, correlation=3),
                           event("ProfilerStep#3", 2000.0, 0.0, cat="gpu_user_annotation",
                                 tid=7)]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(doc))
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1, 2, 3]
    assert f"r0.json: ProfilerStep#3 (GPU copy) of duration 0 or outside {BOUND} left out" \
        in s.notes


def test_a_step_whose_host_copy_alone_is_out_keeps_its_plain_name(tmp_path):
    s = traces.summarise(_with_step_3(tmp_path, 0.0, cats=("user_annotation",)))
    assert f"r0.json: ProfilerStep#3 of duration 0 or outside {BOUND} left out" in s.notes


def test_a_trace_of_no_step_in_bounds_counts_steps_not_copies(tmp_path):
    """Steps 1 and 2, each with both copies of duration 0: 'ProfilerStep#1 and 1 more'."""
    doc = gpu_trace(0)
    for ev in doc["traceEvents"]:
        if ev["name"].startswith("ProfilerStep#"):
            ev["dur"] = 0.0
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScalesimError, match=rf"r0.json: every ProfilerStep has duration 0 or "
                                            rf"one outside {BOUND} \(ProfilerStep#1 and 1 more\); "
                                            r"no step to measure$"):
        traces.summarise(path)


def test_a_step_read_by_its_gpu_copy_names_its_host_copy_left_out(tmp_path):
    """Step 2's host copy of duration 0 in ``gpu_trace`` (kernels of no correlation id, so steps
    are placed by their GPU copies): step 2 is read, 1000 us by its GPU copy, and the note names
    its host copy, not the step, as left out; with launches matched by correlation the host
    copy places the step, and the step is left out under its plain name."""
    doc = gpu_trace(0)
    host = next(ev for ev in doc["traceEvents"]
                if ev["name"] == "ProfilerStep#2" and ev["cat"] == "user_annotation")
    host["dur"] = 0.0
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(doc))
    s = traces.summarise(path)
    assert [(st.step, round(st.step_s * 1e6)) for st in s.steps] == [(1, 1000), (2, 1000)]
    assert s.notes == [f"r0.json: ProfilerStep#2 (host copy) of duration 0 or outside {BOUND} "
                       "left out"]
    doc["traceEvents"] += [event("cudaLaunchKernel", 70.0, 5.0, cat="cuda_runtime", correlation=1),
                           event("gemm", 100.0, 400.0, cat="kernel", tid=7, correlation=1)]
    path.write_text(json.dumps(doc))
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1]
    assert s.notes == [f"r0.json: ProfilerStep#2 of duration 0 or outside {BOUND} left out"]
