"""calibrate --from-trace: hand-made GPU traces (exact answers) and real CPU gloo DDP jobs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_traces import event
from trace_job import TRACE_DIM, TRACE_SLEEP_S, launch

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.profiles import load_profile
from scalesim.sources import trace_compute as tc
from scalesim.sources.calibrate_from import calibrate_from_sources

DIM = TRACE_DIM
PARAMS = 2 * (DIM * DIM + DIM) + DIM + 1  # trace_job's MLP: Linear(d,d), Linear(d,d), Linear(d,1)
SLEEP_S = TRACE_SLEEP_S


def gpu_step_trace(rank=0, steps=2):
    """Per 10 ms step: forward kernels 2 ms (launched on thread 1), backward kernels 4 ms
    (launched by the autograd thread 2 inside evaluate_function ops), an NCCL all-reduce of
    1,000 fp32 elements hidden behind the backward, and an optimizer whose two 0.3 ms kernels
    span 1 ms (launched inside Optimizer.step#)."""
    ev = []
    corr = 0

    def launch(t, tid, kt, kd):
        nonlocal corr
        corr += 1
        ev.append(event("cudaLaunchKernel", t, 5, cat="cuda_runtime", tid=tid, correlation=corr))
        ev.append(event("void gemm_kernel", kt, kd, cat="kernel", tid=7, correlation=corr))

    for n in range(steps):
        t = n * 10_000.0
        ev += [event(f"ProfilerStep#{n + 1}", t, 10_000, cat="user_annotation"),
               event(f"ProfilerStep#{n + 1}", t, 10_000, cat="gpu_user_annotation", tid=7)]
        launch(t + 10, 1, t + 100, 2000)  # forward
        ev.append(event("autograd::engine::evaluate_function: AddmmBackward0", t + 2100, 400,
                     tid=2))
        launch(t + 2200, 2, t + 2200, 4000)  # backward
        ev.append(event("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                     t + 3000, 500, cat="kernel", tid=8, **{"In msg nelems": 1000,
                                                           "Out msg nelems": 1000,
                                                           "dtype": "Float"}))
        ev.append(event("Optimizer.step#AdamW.step", t + 6300, 300, cat="user_annotation"))
        launch(t + 6310, 1, t + 7000, 300)
        launch(t + 6320, 1, t + 7700, 300)
    return {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 1},
            "traceEvents": ev}


def test_gpu_trace_phases_from_launch_correlation(tmp_path):
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(gpu_step_trace()))
    rank = tc.read_rank(path)
    assert rank.matched_gpu and rank.summary.device == "gpu"
    assert rank.optimizer_s == pytest.approx([1e-3, 1e-3])  # first to last optimizer kernel
    assert rank.backward_s == pytest.approx([4e-3, 4e-3])
    assert rank.backward_share == pytest.approx([4 / 6, 4 / 6])  # 4 ms of 2 + 4 ms
    assert rank.fwd_bwd_s == pytest.approx([9e-3, 9e-3])  # 10 ms step - optimizer, comm hidden
    ar = rank.comm["all_reduce"]
    assert ar.count == 1 and ar.time_s == pytest.approx(5e-4)
    assert ar.bytes == 4000 and ar.element_bytes == 4


def test_a_step_and_a_collective_still_open_at_the_stop_are_left_out(tmp_path, capsys):
    """Session 50: calibrate's own pass (``observe``) read Kineto's events still open at the
    profiler's stop ("finished": false, their dur run to the trace's end) as whole ones. A third
    step stopped 4 ms in, after its 2 ms forward kernel, gave a third micro-step time of 2 ms
    (no optimizer in it); a gloo all-reduce open from 9.9 ms to the stop (14.1 ms by its dur)
    was a third all-reduce: (0.5 + 0.5 + 14.1) / 3 windows = 5.03 ms a step. Now 9 ms twice,
    one all-reduce of 0.5 ms a step, and the note."""
    from test_traces import still_open

    data = gpu_step_trace()
    data["traceEvents"] += [
        still_open(event("ProfilerStep#3", 20_000.0, 4000.0, cat="user_annotation")),
        event("cudaLaunchKernel", 20_010.0, 5, cat="cuda_runtime", correlation=99),
        event("void gemm_kernel", 20_100.0, 2000, cat="kernel", tid=7, correlation=99),
        still_open(event("gloo:all_reduce", 9_900.0, 14_100.0, cat="user_annotation", tid=3)),
    ]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(data))
    rank = tc.read_rank(path)
    assert rank.fwd_bwd_s == pytest.approx([9e-3, 9e-3])  # was [9e-3, 9e-3, 2e-3]
    ar = rank.comm["all_reduce"]
    assert ar.count == 1 and ar.time_s == pytest.approx(5e-4)  # time was 5.03 ms
    assert main(["calibrate", "--from-trace", f"8={path}", "--out", str(tmp_path / "p.json")]) == 0
    assert ("  note: r0.json: 2 event(s) still open when the profiler stopped (1 ProfilerStep(s), "
            "1 collective(s); args 'finished': false) left out") in capsys.readouterr().out


def test_a_collective_still_open_at_the_stop_keeps_its_bytes(tmp_path):
    """Session 51: session 50 left a still-open event out of calibrate's own pass entirely, so a
    gloo all-reduce still open at the stop took its message with it, and the gradient size read
    from the bytes all-reduced a step fell short (the slow DDP job's MLP read as 492,993
    parameters of 525,825 once: one 262,656-parameter bucket of 8 steps missing). Two CPU steps,
    each with a finished all-reduce of 1,000 fp32 elements; step 2 also posts one of 500 still
    open at the stop: bytes (4,000 + 4,000 + 2,000) / 2 = 5,000 a step (were 4,000), while its
    call and time stay out: one call of 0.2 ms a step."""
    from test_traces import still_open

    def gloo(t, dur, elements):
        return event("gloo:all_reduce", t, dur, cat="user_annotation", tid=3,
                     **{"Input Dims": [[elements]], "Input type": ["float"]})

    data = {"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2}, "traceEvents": [
        event("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 0.0, 600.0),
        gloo(600.0, 200.0, 1000),
        event("ProfilerStep#2", 1000.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 1000.0, 600.0),
        gloo(1600.0, 200.0, 1000),
        still_open(gloo(1850.0, 650.0, 500)),
        event("aten::add", 2400.0, 100.0),
    ]}
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(data))
    ar = tc.read_rank(path).comm["all_reduce"]
    assert ar.bytes == pytest.approx(5000.0) and ar.element_bytes == 4  # was 4,000
    assert ar.count == 1 and ar.time_s == pytest.approx(2e-4)


@pytest.mark.parametrize("left_out", ["cut", "duration 0", "stopped early"])
def test_a_step_summarise_leaves_out_is_no_window_of_calibrates_own(tmp_path, left_out):
    """Session 51: a step Kineto ended at its 'Record Window End' unmarked (2f7ce6f5 to
    daa56485) is left out by ``summarise`` (``traces.cut_by_the_stop``), as a step of duration
    0 always was; calibrate's communication pass kept both windows. Two CPU steps, each an
    all-reduce of 1,000 fp32 of 0.2 ms after a backward op, and a third cut 250 us in before
    its all-reduce (or a ProfilerStep#0 of duration 0, or a ProfilerStep#3 of 0.044 ms that
    ran no backward, ``traces.stopped_early``): were 2 calls and 0.4 ms over 3 windows (0.67 a
    step, 0.13 ms, 2,667 bytes); one call, 0.2 ms and 4,000 bytes a step."""
    from test_traces import BACKWARD, window_end

    def gloo(t, dur, elements):
        return event("gloo:all_reduce", t, dur, cat="user_annotation", tid=3,
                     **{"Input Dims": [[elements]], "Input type": ["float"]})

    data = {"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2}, "traceEvents": [
        event("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 0.0, 300.0),
        event(BACKWARD, 300.0, 300.0),
        gloo(600.0, 200.0, 1000),
        event("ProfilerStep#2", 1000.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 1000.0, 300.0),
        event(BACKWARD, 1300.0, 300.0),
        gloo(1600.0, 200.0, 1000),
    ]}
    data["traceEvents"] += {
        "cut": [event("ProfilerStep#3", 2000.0, 250.0, cat="user_annotation"),
                event("aten::addmm", 2000.0, 200.0), window_end(2250.0)],
        "duration 0": [event("ProfilerStep#0", 0.0, 0.0, cat="user_annotation")],
        "stopped early": [event("ProfilerStep#3", 2000.0, 44.0, cat="user_annotation"),
                          window_end(2100.0)]}[left_out]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(data))
    rank = tc.read_rank(path)
    assert [st.step for st in rank.summary.steps] == [1, 2]
    ar = rank.comm["all_reduce"]
    assert ar.count == 1 and ar.time_s == pytest.approx(2e-4) and ar.bytes == 4000.0


@pytest.mark.parametrize("name, op", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "all_reduce"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "reduce_scatter"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "broadcast"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send_recv"),
    ("gloo:all_reduce", "all_reduce"), ("gloo:broadcast", "broadcast"),
    ("_reduce_scatter_base", "reduce_scatter"), ("allgather_into_tensor_coalesced", "all_gather"),
])
def test_collective_names_of_old_and_new_nccl_and_gloo(name, op):
    assert tc.collective_op(name) == op


def test_trace_entries_need_a_micro_batch(tmp_path):
    assert tc.parse_entries(["32=a.json", "32=b.json", "8=c.json"], None) == {
        8: ["c.json"], 32: ["a.json", "b.json"]}
    assert tc.parse_entries(["a.json"], 16) == {16: ["a.json"]}
    with pytest.raises(ScalesimError, match="say its micro-batch"):
        tc.parse_entries(["a.json"], None)
    with pytest.raises(ScalesimError, match="micro-batch: 0 is outside 1 <= x"):
        tc.parse_entries(["0=a.json"], None)
    with pytest.raises(ScalesimError, match="no such file"):
        tc.read_runs({4: [str(tmp_path / "missing.json")]})


def test_duplicate_ranks_in_one_run_are_refused(tmp_path):
    path, copy = tmp_path / "r0.json", tmp_path / "copy.json"
    path.write_text(json.dumps(gpu_step_trace()))
    copy.write_text(json.dumps(gpu_step_trace(), indent=1))  # rank 0 too, in other bytes
    with pytest.raises(ScalesimError, match="two traces are rank 0"):
        tc.read_runs({8: [str(path), str(copy)]})


def test_a_copy_of_a_trace_under_another_name_is_refused(tmp_path, monkeypatch, capsys):
    """Session 49's audit: the same trace under two names was read as two ranks of the run (or,
    without distributedInfo, as ranks 0 and 1). No two ranks' traces share every timestamp:
    the same bytes are one trace given twice, refused in one line before any is read."""
    monkeypatch.chdir(tmp_path)
    trace = gpu_step_trace()
    del trace["distributedInfo"]
    Path("a.json").write_text(json.dumps(trace))
    Path("b.json").write_text(json.dumps(trace))
    assert main(["calibrate", "--from-trace", "32=a.json", "32=b.json", "--out", "p.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith(
        "b.json: the same bytes as a.json (one run given twice under two names); give each "
        "rank's trace once")
    assert not Path("p.json").exists()
    assert main(["diagnose", "--trace", "a.json", "b.json"]) == 2
    assert "the same bytes as a.json" in capsys.readouterr().err


@pytest.mark.parametrize("entries", [["32={a}", "32={a}"], ["32={a}", "64={a}"],
                                     ["32={a}", "32={dot}"]])
def test_a_trace_given_twice_is_refused(tmp_path, monkeypatch, capsys, entries):
    """`calibrate --from-trace 32=cpu.json 32=cpu.json` read one file as two ranks ('2 rank(s),
    8 rank-steps'): a trace without distributedInfo takes its rank from its place in the list.
    `diagnose --trace a.json a.json` alike. The same file (by any name) is refused now."""
    monkeypatch.chdir(tmp_path)
    trace = gpu_step_trace()
    del trace["distributedInfo"]
    (tmp_path / "a.json").write_text(json.dumps(trace))
    argv = [e.format(a="a.json", dot="./a.json") for e in entries]
    assert main(["calibrate", "--from-trace", *argv, "--out", "p.json"]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "given twice" in err, err
    assert not (tmp_path / "p.json").exists()
    assert main(["diagnose", "--trace", "a.json", argv[1].split("=")[1]]) == 2
    assert "give each rank's trace once" in capsys.readouterr().err


def test_links_a_new_trace_profile_does_not_measure_say_why_in_the_traces_words(tmp_path):
    """A new profile from traces keeps the presets' links, whose records said 'not measured (a
    preset profile)': predict called a traced profile a preset one. They say the traces time
    no link now; where the numbers came from stays."""
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(gpu_step_trace()))
    profile, _ = calibrate_from_sources(tmp_path / "p.json", traces=[f"8={path}"], write=False)
    from scalesim.sources.calibrate_from import TRACES_TIME_NO_LINK

    assert [(c.measured, c.not_measured_because) for c in profile.links] == [
        (False, TRACES_TIME_NO_LINK), (False, TRACES_TIME_NO_LINK)]
    assert all(c.numbers_from for c in profile.links)


def test_one_batch_pins_one_point_and_says_so(tmp_path):
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(gpu_step_trace()))
    profile, report = calibrate_from_sources(tmp_path / "p.json", traces=[f"8={path}"])
    curve = profile.compute
    assert curve.measured and len(curve.points) == 1 and curve.overhead_s == 0
    assert curve.per_sample_s == pytest.approx(9e-3 / 8)
    assert curve.optimizer_step_s == pytest.approx(1e-3)
    assert profile.workload.backward_fraction == pytest.approx(4 / 6)
    assert any("ONE micro-batch (8)" in n for n in profile.notes)
    # a new profile takes the gradient size the trace all-reduces (DDP)
    assert profile.workload.params == 1000 and profile.workload.wire_bytes_per_param == 4


# ---------------------------------------------------------------- real CPU gloo DDP jobs


def run_job(out: Path, *flags: str) -> list[str]:
    return launch(out, "--steps", "4", "--dim", str(DIM), "--record-shapes", *flags)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory, ddp_trace_jobs):
    base = tmp_path_factory.mktemp("from_trace")
    return {
        "b16": ddp_trace_jobs["loader"],
        "b256": run_job(base / "b256", "--batch", "256", "--gzip"),
        "slow": ddp_trace_jobs["slow_rank"],
    }


@pytest.mark.slow
def test_two_batch_sizes_give_a_compute_curve(jobs, tmp_path, capsys):
    out = tmp_path / "p.json"
    entries = [f"16={p}" for p in jobs["b16"]] + [f"256={p}" for p in jobs["b256"]]
    assert main(["calibrate", "--from-trace", *entries, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    profile = load_profile(out)
    curve = profile.compute
    assert [p.micro_batch for p in curve.points] == [16, 256]
    assert curve.points[1].time_s > curve.points[0].time_s  # 16x the samples
    assert curve.per_sample_s > 0 and curve.measured and "2 micro-batches" in curve.source
    assert 0.3 < profile.workload.backward_fraction < 0.95
    assert profile.hardware.devices_per_node == 2
    # gradients all-reduced per step (record_shapes: gloo's message sizes) = the MLP's parameters
    assert profile.workload.params == PARAMS and profile.workload.wire_bytes_per_param == 4
    # DDP: a first bucket of 1 MiB, then the rest, 2 calls a step in each run. Under load
    # gloo's worker thread may not yet have closed a rank's last collective when the profiler
    # stops (Kineto writes it "finished": false; the note says so and it is left out): that
    # rank's count is 2 - 1/steps, the median of two ranks 1.9 (5 steps) or 1.875 (4), seen
    # once in CI (session 55) and once in 3 runs here
    counts = [float(c) for c in re.findall(r"all_reduce: ([\d.]+) calls", text)]
    left_open = len(re.findall(r"\(\d+ collective\(s\); args 'finished': false\)", text))
    assert len(counts) == 2 and all(1.75 <= c <= 2 for c in counts), text
    assert sum(c < 2 for c in counts) <= left_open, text
    # session 52: DDP's bucket rebuild in each run's ProfilerStep#1 (int [7] and [2]) was
    # "broadcast: 0.4 calls" a step (0.5 of the 4-step run); the MLP has no buffers to broadcast
    assert "  broadcast:" not in text
    assert text.count("left out: 2 broadcasts of 32-bit integers, DDP's bucket rebuild") == 2
    # the data-loader sleep is reported, and left out of the compute time
    b16 = tc.read_runs({16: jobs["b16"]})[0]
    assert b16.cross["data_wait_s"] >= 0.8 * SLEEP_S
    assert b16.fwd_bwd_s < b16.cross["step_s"] - 0.8 * SLEEP_S


@pytest.mark.slow
def test_a_slowed_rank_shows_in_the_jitter(jobs, tmp_path):
    profile, report = calibrate_from_sources(tmp_path / "p.json", traces=jobs["slow"],
                                             micro_batch=16)
    assert profile.jitter is not None and profile.jitter.slow_rank == 1
    assert profile.jitter.slow_factor > 1.5
    assert len(profile.jitter.per_rank_median_s) == 2
    assert any("slowest rank 1" in line for line in report)


@pytest.mark.slow
def test_a_real_trace_stopped_early_is_read_from_its_whole_steps(tmp_path):
    """Session 51: the job left after 3 of its schedule's 4 iterations (``--stop-after-steps``),
    so prof.stop() closed ProfilerStep#3 before it ran anything (0.014 ms on torch 2.13); read
    as a step, its window took a third off each per-step figure: the MLP's gradient read as
    350,550 parameters of 525,825 (1.33 all-reduces a step), the step-time cv 0.85 (0.29)."""
    files = launch(tmp_path / "t", "--steps", "3", "--dim", str(DIM), "--record-shapes",
                   "--stop-after-steps", "3")
    profile, report = calibrate_from_sources(tmp_path / "p.json", traces=files, micro_batch=8)
    assert profile.workload.params == PARAMS  # was 350,550
    assert sum("ProfilerStep#3 left out: it ran no backward, as every other step did; "
               "prof.stop() closed it early" in line for line in report) == 2  # each rank


def test_nccl_tests_of_the_same_call_keep_the_server_size(tmp_path):
    """Logs describe the server; the traces (here one rank) describe the job."""
    trace = tmp_path / "r0.json"
    trace.write_text(json.dumps(gpu_step_trace()))
    log = Path(__file__).parent / "fixtures" / "nccl_tests" / "h100_8gpu_all_reduce.txt"
    profile, _ = calibrate_from_sources(tmp_path / "p.json", [log], [f"8={trace}"])
    assert profile.hardware.devices_per_node == 8
    assert profile.compute.measured and profile.hardware.intra_node.busbw_GBps > 400


def test_reading_your_data_needs_no_torch(tmp_path):
    trace = tmp_path / "r0.json"
    trace.write_text(json.dumps(gpu_step_trace()))
    log = Path(__file__).parent / "fixtures" / "nccl_tests" / "h100_8gpu_all_reduce.txt"
    code = ("import sys; sys.modules['torch'] = None\n"
            "from scalesim.cli.main import main\n"
            f"sys.exit(main(['calibrate', '--from-nccl-tests', {str(log)!r}, '--from-trace', "
            f"'8={trace}', '--out', {str(tmp_path / 'p.json')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert load_profile(tmp_path / "p.json").compute.measured


def test_cpu_traces_into_a_new_profile_say_its_hardware_did_not_run_them(tmp_path):
    """`calibrate --from-trace 32=cpu.json` (a CPU run: no GPU kernel) wrote a new profile whose
    hardware is the presets' A100, with no word: predict then showed the CPU's step times under
    the A100's name, memory and links. A note in the report and the profile says so now (not a
    refusal: CPU gloo traces into a new profile are how the tests calibrate without a GPU)."""
    events = []
    for n in (1, 2, 3):
        t = (n - 1) * 10_000.0
        events += [event(f"ProfilerStep#{n}", t, 9_000.0, cat="user_annotation"),
                   event("aten::mm", t + 100, 6_000.0),
                   event("autograd::engine::evaluate_function: MmBackward0", t + 6_200, 2_000.0),
                   event("Optimizer.step#SGD.step", t + 8_300, 500.0, cat="user_annotation")]
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events,
                                "deviceProperties": []}))
    profile, report = calibrate_from_sources(tmp_path / "p.json", traces=[f"32={path}"])
    words = "the traces ran on the CPU (no GPU kernel in any step)"
    assert any(words in line and profile.hardware.device_name in line for line in report), report
    assert any(words in n for n in profile.notes)
    gpu = tmp_path / "r0.json"
    gpu.write_text(json.dumps(gpu_step_trace()))
    _, report = calibrate_from_sources(tmp_path / "q.json", traces=[f"8={gpu}"])
    assert not any("ran on the CPU" in line for line in report)


@pytest.mark.parametrize("nelems", [1e300, 10**400, -1000, 0],
                         ids=["1e300", "10**400", "-1000", "0"])
def test_a_message_size_no_collective_has_is_left_unknown(tmp_path, capsys, nelems):
    """Session 10: an all-reduce of 1e300 elements in a trace was summed into the step and taken
    as the model's parameters, and calibrate wrote a profile (params 1e300) that predict then
    refused; 10**400 elements (a whole number past a float) raised OverflowError. A size
    outside the bounds table's message_bytes is left unknown, as a message without sizes is."""
    data = gpu_step_trace()
    for ev in data["traceEvents"]:
        if ev["name"].startswith("ncclDevKernel"):
            ev["args"]["In msg nelems"] = ev["args"]["Out msg nelems"] = nelems
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-trace", f"8={path}", "--out", str(out)]) == 0
    report, _ = capsys.readouterr()
    assert "taken as the model's parameters" not in report
    assert load_profile(out).workload.params <= 1e15
    assert main(["predict", "--profile", str(out), "--devices", "1,8"]) == 0


def test_a_model_out_of_its_bounds_is_not_written(tmp_path):
    """Session 10: write_model wrote whatever ``model_copy(update=...)`` (which does not
    validate) produced, so a derived value out of its bounds became a file scalesim refuses
    to read. The text is read back first; nothing is written when it does not validate."""
    from scalesim.jsonio import write_model

    good = tmp_path / "good.json"
    (tmp_path / "r0.json").write_text(json.dumps(gpu_step_trace()))
    profile, _ = calibrate_from_sources(good, traces=[f"8={tmp_path / 'r0.json'}"], write=False)
    bad = profile.model_copy(update={"workload": profile.workload.model_copy(
        update={"params": 1e300})})
    path = tmp_path / "bad.json"
    # the value and the field's bounds (session 19: was '1e+300 given; Input should be less
    # than or equal to 1000000000000000', pydantic's words without the unit)
    with pytest.raises(ScalesimError, match=r"bad\.json: not written: Profile: field "
                       r".workload\.params.: 1e300 given; allowed: 1 <= x <= "
                       r"1,000,000,000,000,000 parameters"):
        write_model(path, bad)
    assert not path.exists()
    write_model(path, profile)
    assert load_profile(path).workload.params == profile.workload.params


def test_a_torch_1_9_trace_is_timed_on_its_gpu(tmp_path):
    # PyTorch 1.8/1.9's Kineto categories ("Operator", "Runtime", "Kernel"; the pytorch/kineto
    # tb_plugin samples of 2021-06): was read with no kernel, as a CPU run ("the traces ran on
    # the CPU", optimizer 18.4 ms of host time on the kineto resnet50 sample, 1.85 ms now)
    old = {"user_annotation": "Operator", "cpu_op": "Operator", "cuda_runtime": "Runtime",
           "kernel": "Kernel"}
    trace = gpu_step_trace()
    # and a backward node by its own name, without "autograd::engine::evaluate_function: "
    # (was: "backward share: not found"; 0.699 on the kineto resnet50 sample now)
    trace["traceEvents"] = [
        dict(e, cat=old.get(e["cat"], e["cat"]),
             name=e["name"].replace("autograd::engine::evaluate_function: AddmmBackward0",
                                    "AddmmBackward"))
        for e in trace["traceEvents"] if e["cat"] != "gpu_user_annotation"]
    path = tmp_path / "r0.json"
    path.write_text(json.dumps(trace))
    rank = tc.read_rank(path)
    assert rank.matched_gpu and rank.summary.device == "gpu"
    assert rank.optimizer_s == pytest.approx([1e-3, 1e-3])
    assert rank.comm["all_reduce"].time_s == pytest.approx(5e-4)
    assert rank.backward_s == pytest.approx([4e-3, 4e-3])
    assert rank.backward_share == pytest.approx([4 / 6, 4 / 6])
