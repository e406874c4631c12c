"""Kineto trace reading: step breakdown on hand-made traces, gzip, streaming, bad files."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from scalesim import trace_files, trace_intervals, trace_ranks, traces
from scalesim.errors import ScalesimError


def event(name, ts_us, dur_us, cat="cpu_op", tid=1, **args):
    """A Chrome-trace complete event ("X") of process 1, as torch.profiler writes it."""
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us, "dur": dur_us,
            "args": args}



def gpu_trace(rank=0, slow_us=0.0):
    """Two 1000 us steps on a GPU: 600 us compute, a 300 us NCCL all-reduce overlapping 100 us
    of it, a 50 us DataLoader wait on the CPU, the rest idle."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "x"}}]
    for n in (1, 2):
        t = (n - 1) * 1000.0
        events += [
            event(f"ProfilerStep#{n}", t, 1000.0, cat="user_annotation"),
            event(f"ProfilerStep#{n}", t, 1000.0, cat="gpu_user_annotation", tid=7),
            event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t, 50.0,
               cat="user_annotation"),
            event("aten::mm", t + 60, 30.0),
            event("sm80_xmma_gemm_f16f16", t + 100, 400.0 + slow_us, cat="kernel", tid=7),
            event("elementwise_kernel", t + 500 + slow_us, 200.0, cat="kernel", tid=7),
            event("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               t + 600 + slow_us, 300.0 - slow_us, cat="kernel", tid=8),
            event("record_param_comms", t + 590, 5.0, **{"Collective name": "allreduce"}),
        ]
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                    "world_size": 2},
            "traceEvents": events, "deviceProperties": [{"id": 0}], "traceName": "t"}


def write(tmp_path, name, data, gz=False):
    path = tmp_path / name
    text = json.dumps(data)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def test_a_gpu_step_spans_the_kernels_its_cpu_step_launched(tmp_path):
    """The device window of a step runs to the end of the last kernel its CPU step launched
    (matched by correlation), past a gpu_user_annotation that ends early (as torch 2.11's did
    before the optimizer's kernels on an H200); a kernel launched in the next step does not
    count."""
    events = [
        event("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
        event("ProfilerStep#1", 100.0, 700.0, cat="gpu_user_annotation", tid=7),  # ends at 800
        event("cudaLaunchKernel", 50.0, 5.0, cat="cuda_runtime", correlation=1),
        event("gemm", 100.0, 700.0, cat="kernel", tid=7, correlation=1),
        event("cudaLaunchKernel", 900.0, 5.0, cat="cuda_runtime", correlation=2),  # optimizer
        event("adamw", 820.0, 130.0, cat="kernel", tid=7, correlation=2),  # ends at 950
        event("ProfilerStep#2", 1000.0, 1000.0, cat="user_annotation"),
        event("cudaLaunchKernel", 1010.0, 5.0, cat="cuda_runtime", correlation=3),
        event("gemm", 1020.0, 500.0, cat="kernel", tid=7, correlation=3),
    ]
    s = traces.summarise(write(tmp_path, "r.json", {"traceEvents": events}))
    first, second = s.steps
    assert (first.start_s, first.end_s) == pytest.approx((100e-6, 950e-6))
    assert first.step_s == pytest.approx(850e-6) and first.idle_s == pytest.approx(20e-6)
    # no annotation for step 2: the span of its own kernel
    assert (second.start_s, second.end_s) == pytest.approx((1020e-6, 1520e-6))
    # without correlations the annotation decides, as before
    for ev in events:
        ev["args"].pop("correlation", None)
    s = traces.summarise(write(tmp_path, "r2.json", {"traceEvents": events}))
    assert s.steps[0].step_s == pytest.approx(700e-6)


def test_gpu_step_breakdown(tmp_path):
    s = traces.summarise(write(tmp_path, "r0.json", gpu_trace()))
    assert s.device == "gpu" and s.rank == 0 and s.world_size == 2
    assert [st.step for st in s.steps] == [1, 2]
    st = s.steps[0]
    assert st.step_s == pytest.approx(1000e-6)
    assert st.compute_s == pytest.approx(600e-6)  # kernels 100..700
    assert st.comm_s == pytest.approx(300e-6)  # 600..900
    assert st.overlap_s == pytest.approx(100e-6)  # 600..700
    assert st.exposed_comm_s == pytest.approx(200e-6)
    assert st.data_wait_s == pytest.approx(50e-6)
    assert st.idle_s == pytest.approx(1000e-6 - 50e-6 - 800e-6)  # 50..100 and 900..1000
    assert any(k.startswith("ncclDevKernel_AllReduce") for k in s.collectives)


def test_gzip_and_small_chunks_give_the_same_answer(tmp_path, monkeypatch):
    plain = traces.summarise(write(tmp_path, "a.json", gpu_trace()))
    gz = traces.summarise(write(tmp_path, "b.json.gz", gpu_trace(), gz=True))
    monkeypatch.setattr(trace_files, "CHUNK_CHARS", 7)  # values split across many chunk boundaries
    tiny = traces.summarise(write(tmp_path, "c.json", gpu_trace()))
    for other in (gz, tiny):
        assert [vars(a) for a in other.steps] == [vars(b) for b in plain.steps]


def test_a_leading_byte_order_mark_is_ignored(tmp_path):
    plain = traces.summarise(write(tmp_path, "a.json", gpu_trace()))
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(gpu_trace()).encode())
    bom_gz = tmp_path / "bom.json.gz"
    bom_gz.write_bytes(gzip.compress(bom.read_bytes()))
    for path in (bom, bom_gz):
        assert [vars(a) for a in traces.summarise(path).steps] == [vars(b) for b in plain.steps]


def test_cpu_gloo_trace_uses_cpu_ops(tmp_path):
    """A gloo job has no kernels: gloo annotations are communication, cpu ops compute; the
    ``c10d::allreduce_`` that posts the all-reduce is the host's, not the transfer (session 48:
    it had added its 10 us to the communication, hidden under the addmm that holds it)."""
    data = {"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
        event("ProfilerStep#5", 0.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 0.0, 400.0),
        event("aten::mm", 100.0, 100.0),  # nested: counted once
        event("gloo:all_reduce", 300.0, 500.0, cat="user_annotation", tid=2),
        event("c10d::allreduce_", 250.0, 10.0),
    ]}
    s = traces.summarise(write(tmp_path, "cpu.json", data))
    st = s.steps[0]
    assert s.device == "cpu" and s.rank == 1 and st.step == 5
    assert st.compute_s == pytest.approx(400e-6)
    assert st.comm_s == pytest.approx(500e-6)  # 300..800 (was 510: and 250..260)
    assert st.overlap_s == pytest.approx(100e-6)  # 300..400 (was 110)
    assert st.idle_s == pytest.approx(1000e-6 - 800e-6)
    assert s.collectives["gloo:all_reduce"]["count"] == 1


def test_merge_and_length_in():
    s, e = trace_intervals.merge(np.array([5.0, 0.0, 1.0, 10.0]), np.array([6.0, 2.0, 3.0, 12.0]))
    assert s.tolist() == [0.0, 5.0, 10.0] and e.tolist() == [3.0, 6.0, 12.0]
    assert trace_intervals.length_in((s, e), 2.0, 11.0) == pytest.approx(1.0 + 1.0 + 1.0)


def test_cross_rank_names_the_rank_others_wait_for(tmp_path):
    fast = traces.summarise(write(tmp_path, "r0.json", gpu_trace(0)))
    slow = traces.summarise(write(tmp_path, "r1.json", gpu_trace(1, slow_us=200.0)))
    cr = trace_ranks.cross_rank([fast, slow])
    assert cr["slowest_rank"] == 1 and cr["slowest_consistency"] == 1.0
    assert cr["straggler_wait_s"] == pytest.approx(200e-6)


@pytest.mark.parametrize("content, message", [
    ('{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 5}, {"ph": "X", "na',
     "ends early"),
    ('{"schemaVersion": 1, "traceEvents": [', "ends early"),
    ('{"hello": "world"}', "no traceEvents"),
    ('[1, 2, 3]', "not a Chrome trace"),
    ('{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 0, "dur": 5}]}', "ProfilerStep"),
    ('{"traceEvents": [{"ph": "X", "name": nonsense}' + ', {"ph": "i"}' * 20 + "]}",
     "malformed JSON"),
    ("", r"empty \(no trace in it\)"),
])
def test_bad_traces_are_one_line_errors(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ScalesimError, match=message) as info:
        traces.summarise(p)
    assert "\n" not in str(info.value)


def test_truncated_gzip_is_an_error(tmp_path):
    p = write(tmp_path, "t.json.gz", gpu_trace(), gz=True)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ScalesimError, match="truncated|ends early|cannot read"):
        traces.summarise(p)


def test_duplicate_ranks_are_an_error(tmp_path):
    """Two traces of rank 0. The second differs in a byte (its display unit), as two recordings
    always do: the same bytes under two names are refused before as one file given twice
    (``errors.check_distinct_files``, session 49)."""
    a = write(tmp_path, "a.json", gpu_trace(0))
    b = write(tmp_path, "b.json", {**gpu_trace(0), "displayTimeUnit": "ms"})
    with pytest.raises(ScalesimError, match="rank 0"):
        trace_ranks.load_traces([str(a), str(b)])


def test_ranks_with_no_collective_are_diagnosed_not_refused(tmp_path, capsys):
    """Two rank traces with no collective (two single-process CPU runs, or ranks whose
    all-reduce was not recorded) ended in `error: LinkLevel: field 'busbw_GBps': 1e+08 given`:
    the remedies' link derived from no communication time left its bounds. The fitted link is
    held within them (as the fitted jitter is) and the diagnosis is printed."""
    from scalesim.cli.main import main

    paths = []
    for rank in (0, 1):
        data = gpu_trace(rank)
        data["traceEvents"] = [e for e in data["traceEvents"]
                               if "nccl" not in e["name"] and e["name"] != "record_param_comms"]
        paths.append(str(write(tmp_path, f"rank{rank}.json", data)))
    code = main(["diagnose", "--trace", *paths])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    assert "Likely cause:" in out and "busbw" not in out, out


def test_traces_of_different_world_sizes_are_refused(tmp_path, capsys):
    """Session 10: rank 0's trace saying world_size 2 and rank 1's saying 4 (two runs) were
    diagnosed and calibrated from as one job without a word."""
    from scalesim.cli.main import main

    other = gpu_trace(1)
    other["distributedInfo"]["world_size"] = 4
    a, b = write(tmp_path, "r0.json", gpu_trace(0)), write(tmp_path, "r1.json", other)
    for argv in (["diagnose", "--trace", str(a), str(b)],
                 ["calibrate", "--from-trace", f"8={a}", f"8={b}", "--out",
                  str(tmp_path / "p.json")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1
        assert ("r0.json says distributedInfo.world_size 2, r1.json says 4: traces of different "
                "runs") in err
    assert not (tmp_path / "p.json").exists()


def test_the_straggler_line_claims_no_comparison_it_did_not_make(tmp_path, capsys):
    """Session 10: one trace, or two ranks profiled over different steps (1-2 and 11-12), were
    reported as `straggler: rank 0 (slowest in 100% of steps, own time 1.00x the median of the
    others)`, of no step compared; 2 of 4 ranks traced got no word that the slowest may be
    one of the others."""
    from scalesim.cli.main import main

    a = write(tmp_path, "r0.json", gpu_trace(0))
    assert main(["diagnose", "--trace", str(a)]) == 0
    out = capsys.readouterr().out
    assert "straggler: one rank traced: no other to compare it with" in out
    assert "slowest in 100%" not in out
    later = gpu_trace(1)
    for ev in later["traceEvents"]:
        if ev["name"].startswith("ProfilerStep#"):
            ev["name"] = ev["name"].replace("#", "#1")  # steps 11 and 12
    b = write(tmp_path, "r1.json", later)
    assert main(["diagnose", "--trace", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "straggler: not compared: the ranks' traces share no ProfilerStep number" in out
    first, fourth = gpu_trace(0), gpu_trace(3)
    for data in (first, fourth):
        data["distributedInfo"]["world_size"] = 4
    paths = [write(tmp_path, "q0.json", first), write(tmp_path, "q3.json", fourth)]
    assert main(["diagnose", "--trace", *map(str, paths), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes[0].startswith("2 of the 4 ranks traced (0, 3): the others are not compared")
    assert main(["diagnose", "--trace", *map(str, paths)]) == 0
    # two ranks compared step by step; alike, so no straggler is named (session 31: a tie was
    # "straggler: rank 0 (slowest in 100% of steps, own time 1.00x ...)")
    out = capsys.readouterr().out
    assert "straggler: none beyond healthy device variation (rank 0 the slowest" in out
    assert "at 1.000x the others' own time, under the 1.046x of a slow device" in out
    slow = [write(tmp_path, "s0.json", gpu_trace(0)), write(tmp_path, "s1.json",
                                                             gpu_trace(1, slow_us=100.0))]
    assert main(["diagnose", "--trace", *map(str, slow)]) == 0
    assert "straggler: rank 1 (slowest in 100% of steps" in capsys.readouterr().out


@pytest.mark.parametrize("world, shown", [
    ("x" * 500, 'string "' + "x" * 36 + "..."),  # 40 characters of the JSON text, cut
    ("a\x1bb", 'string "a\\u001bb"'),  # as JSON writes it: no raw ESC
    (2.5, "number 2.5"),
], ids=["long", "escape", "fraction"])
def test_a_bad_world_size_is_quoted_short(tmp_path, world, shown):
    """distributedInfo.world_size that is not a whole number is one error line quoting it with
    ``errors.excerpt`` (at most 40 characters, control characters escaped), its JSON kind first."""
    data = gpu_trace(0)
    data["distributedInfo"]["world_size"] = world
    p = write(tmp_path, "t.json", data)
    with pytest.raises(ScalesimError) as err:
        traces.summarise(p)
    message = str(err.value)
    assert f"distributedInfo.world_size is {shown}" in message
    assert "x" * 41 not in message and "\x1b" not in message


def _as_torch_1_9(trace: dict) -> dict:
    """The trace with the event categories of PyTorch 1.8/1.9's Kineto ("Operator", "Runtime",
    "Kernel", "Memcpy", "Memset"; the pytorch/kineto tb_plugin samples of 2021-06, resnet50 on
    torch 1.9, carry these, and their user annotations are "Operator" too), NCCL 2.x's kernel
    name (``ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)``, as in those days) and no
    GPU-side step annotation."""
    old = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime",
           "kernel": "Kernel", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset"}
    events = []
    for ev in trace["traceEvents"]:
        if ev.get("cat") == "gpu_user_annotation":
            continue
        ev = dict(ev, cat=old.get(ev.get("cat"), ev.get("cat")))
        if ev["name"].startswith("ncclDevKernel_AllReduce"):
            ev["name"] = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
        events.append(ev)
    return {**trace, "traceEvents": events}


def test_a_torch_1_9_trace_reads_its_kernels(tmp_path):
    # was: no "kernel" event seen, so a GPU run read as a CPU one: compute 0 and "device idle
    # 60% (launch or host overhead)" on the kineto sample, and calibrate called it a CPU trace
    s = traces.summarise(write(tmp_path, "r0.json", _as_torch_1_9(gpu_trace())))
    assert s.device == "gpu"
    st = s.steps[0]
    assert st.compute_s == pytest.approx(600e-6) and st.comm_s == pytest.approx(300e-6)
    assert st.exposed_comm_s == pytest.approx(200e-6) and st.data_wait_s == pytest.approx(50e-6)
    assert any(k.startswith("ncclKernel_AllReduce") for k in s.collectives)


def test_trace_remedies_quote_no_batch_the_traces_do_not_record(tmp_path, capsys):
    # the trace model runs a nominal micro-batch of 1: was "Double the per-device batch
    # (1 -> 2)" and "Accumulate gradients over 4 micro-steps (now 1)" for any traced job (HTA's
    # real nccl_data trace, whose batch is not 1, read so). Session 39: the micro-steps are
    # read (here one DataLoader fetch a step), so the accumulation title quotes the traced count;
    # without a fetch (nor a DDP/FSDP forward) it says the traces do not record it
    from scalesim.cli.main import main

    paths = [str(write(tmp_path, f"rank{r}.json", gpu_trace(r, slow_us=50.0 * r))) for r in (0, 1)]
    assert main(["diagnose", "--json", "--trace", *paths]) == 0
    report = json.loads(capsys.readouterr().out)
    titles = {r["key"]: r["title"] for r in report["remedies"]}
    assert titles["bigger_batch"] == "Double the per-device batch (the traces do not record its size)"
    assert titles["accumulation"] == ("Accumulate gradients over 4 micro-steps (the traces show "
                                      "1 micro-step a step)")
    assert not any("1 -> 2" in t or "(now 1)" in t for t in titles.values())
    for r in (0, 1):
        trace = gpu_trace(r, slow_us=50.0 * r)
        trace["traceEvents"] = [e for e in trace["traceEvents"]
                                if "DataLoader" not in e["name"]]
        write(tmp_path, f"rank{r}.json", trace)
    assert main(["diagnose", "--json", "--trace", *paths]) == 0
    report = json.loads(capsys.readouterr().out)
    titles = {r["key"]: r["title"] for r in report["remedies"]}
    assert titles["accumulation"].startswith("Accumulate gradients over 4x the micro-steps (the "
                                             "traces do not record how many)")
    assert any(n.startswith("the traces show no forward of a DDP or FSDP module nor any "
                            "DataLoader fetch") for n in report["notes"])


def test_a_remedy_that_changes_nothing_is_not_said_to_lose(tmp_path, capsys):
    """Session 16 user's pass: on two traced ranks, ZeRO-1 sends DDP's bytes and the traces
    record no optimizer step, so its predicted gain is exactly 0; the report printed '+0.0%
    Shard optimizer state ... (loses throughput here; ...)'."""
    from scalesim.cli.main import main

    paths = [str(write(tmp_path, f"rank{r}.json", gpu_trace(r, slow_us=300.0 * r)))
             for r in (0, 1)]
    assert main(["diagnose", "--json", "--trace", *paths]) == 0
    shard = {r["key"]: r for r in json.loads(capsys.readouterr().out)["remedies"]}["sharding"]
    assert shard["gain"] == 0.0
    assert shard["note"].startswith("does not change the throughput here; saves memory")


ODD_TIMES = [0, 1, 5, 2.5, -1, -0.0, 1e308, -1e308, 10**400, -(10**400), float("inf"),
             float("nan"), True, False, None, "12", [1], {"a": 1}]


def _answer(fn, ts, dur):
    """What ``fn`` says of an event with these ts and dur: its times, or its error's words."""
    try:
        return ("times", fn({"ts": ts, "dur": dur, "ph": "X"}, "t.json", 7, "k"))
    except ScalesimError as exc:
        return ("error", str(exc))


def test_event_times_fast_path_says_what_the_checked_path_says():
    """``_event_times`` takes a fast path for JSON's plain numbers (session 23: the label of its
    errors was built for every event); every pair of odd values gets the checked path's answer."""
    tr = traces

    def checked(ev, source, number, name):
        return tr._checked_event_times(ev.get("ts"), ev.get("dur"), source, number, name)

    class Int(int):
        pass

    values = [*ODD_TIMES, Int(3)]
    for ts in values:
        for dur in values:
            assert _answer(tr._event_times, ts, dur) == _answer(checked, ts, dur), (ts, dur)
    with pytest.raises(ScalesimError, match="ts \\+ dur overflows"):
        tr._event_times({"ts": 1e308, "dur": 1e308}, "t.json", 1, "k")


def test_a_trace_with_events_of_a_negative_duration_is_refused_in_one_line(tmp_path, capsys):
    """Session 50: torch.profiler writes no negative dur (Kineto clamps one to 0 since
    pytorch/kineto#646, 2022, and ends an event still open at the stop at the trace's end,
    "finished": "false"); session 49 left such events out with a note and read the rest, so a
    negated all-reduce read as no exchange at all. Now the trace is refused: which file, how
    many events of which kind, re-record."""
    from scalesim.cli.main import main

    data = gpu_trace()
    for ev in data["traceEvents"]:
        if ev["name"].startswith("ncclDevKernel"):
            ev["dur"] = -ev["dur"]
    path = write(tmp_path, "r0.json", data)
    with pytest.raises(ScalesimError, match=r"r0.json: 2 event\(s\) with a negative duration "
                                            r"\(2 collective\(s\)\); torch.profiler writes "
                                            r"none .* re-record it with torch.profiler$"):
        traces.summarise(path)
    other = write(tmp_path, "r1.json", gpu_trace(1))
    assert main(["diagnose", "--trace", str(path), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "r0.json: 2 event(s) with a negative duration" in err


def test_a_dur_of_minus_one_is_refused_as_any_negative_one(tmp_path):
    """Session 49 read dur -1 as PyTorch's mark of an event still open at the profiler's stop
    (pytorch/pytorch#150131) and left it out quietly; that -1 is the end time PyTorch hands
    Kineto, which ends the event at the trace's end (kineto 7cb6ac63) and clamps any negative
    dur to 0 as it writes the trace, so no torch.profiler trace holds it: refused as -5 is."""
    data = gpu_trace()
    data["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": "train_loop",
                                "pid": 1, "tid": 1, "ts": 0, "dur": -1})
    with pytest.raises(ScalesimError, match=r"1 event\(s\) with a negative duration \(1 other "
                                            r"event\(s\)\)"):
        traces.summarise(write(tmp_path, "r0.json", data))
    data["traceEvents"][-1]["dur"] = 0  # an event Kineto clamped: read
    assert not any("negative" in n for n in traces.summarise(write(tmp_path, "r1.json",
                                                                   data)).notes)


def still_open(ev, finished=False):
    """``ev`` as Kineto writes an event still open when the profiler stopped: its dur run to the
    trace's end, args "finished": false (a JSON boolean: kineto 18d5a85e, March 2025)."""
    ev["args"]["finished"] = finished
    return ev


def test_a_step_still_open_at_the_profilers_stop_is_left_out_with_a_note(tmp_path, capsys):
    """Session 50: Kineto ends a host event still open at the profiler's stop at the trace's end
    and marks it "finished": false; its dur is not the event's. A ProfilerStep#3 stopped 400 us
    in, its device copy 2100..2350 us (the one kernel it had run), was read as a third step of
    250 us; it is no complete step: left out, with its device copy, and said in one note."""
    from scalesim.cli.main import main

    data = gpu_trace()
    data["traceEvents"] += [
        still_open(event("ProfilerStep#3", 2000.0, 400.0, cat="user_annotation")),
        event("ProfilerStep#3", 2100.0, 250.0, cat="gpu_user_annotation", tid=7),
        event("sm80_xmma_gemm_f16f16", 2100.0, 250.0, cat="kernel", tid=7),
    ]
    path = write(tmp_path, "r0.json", data)
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1, 2]  # was [1, 2, 3], step 3 0.25 ms
    assert s.notes == ["r0.json: 1 event(s) still open when the profiler stopped (1 "
                       "ProfilerStep(s); args 'finished': false) left out: Kineto ends them at "
                       "the trace's end, so how long they ran is unknown"]
    assert main(["diagnose", "--trace", str(path), str(write(tmp_path, "r1.json",
                                                                 gpu_trace(1)))]) == 0
    out = capsys.readouterr().out
    assert "\n   0     2      1.00 " in out  # rank 0's two complete steps (was 3)
    assert "note: r0.json: 1 event(s) still open when the profiler stopped" in out


@pytest.mark.parametrize("finished", [False, "false"])
def test_a_collective_still_open_at_the_stop_is_left_out_of_the_sums(tmp_path, finished):
    """A gloo all-reduce still running at the stop (900 us, ended at the trace's end, 1000 us)
    took an unknown time: the step's communication is the finished one's, 300..500 us, 100 us
    of it under the addmm (0..400): comm 200 us, exposed 100 us, idle 1000 - 400 - 100 = 500 us
    (were 300, 200 and 400 with the open one's 100 us in). Kineto writes a JSON false; a
    string "false" (a re-serialised trace) is read alike."""
    data = {"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
        event("ProfilerStep#5", 0.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 0.0, 400.0),
        event("gloo:all_reduce", 300.0, 200.0, cat="user_annotation", tid=2),
        still_open(event("gloo:all_reduce", 900.0, 100.0, cat="user_annotation", tid=2),
                   finished),
    ]}
    s = traces.summarise(write(tmp_path, "cpu.json", data))
    st = s.steps[0]
    assert st.comm_s == pytest.approx(200e-6) and st.exposed_comm_s == pytest.approx(100e-6)
    assert st.idle_s == pytest.approx(500e-6)
    assert s.collectives["gloo:all_reduce"]["count"] == 1
    assert s.notes[0].startswith("cpu.json: 1 event(s) still open when the profiler stopped (1 "
                                 "collective(s); ")


def test_a_collective_still_open_keeps_its_size_through_its_host_post(tmp_path):
    """Session 51 (calibrate's pass lost a still-open collective's bytes, 6b42dc68): the
    gradient set-aside's sizes lose nothing here. gloo's transfer runs on its worker thread and
    can be open at the stop; the training thread's post (c10d::allreduce_, which returns at
    once, on the thread that stops the profiler) is whole and carries the same elements. A
    bucket of 100,000 elements posted at 900 us, its transfer open: the largest reduction is
    100,000, the step posts (1,000, 100,000), and the 20-element metric is set aside (under 1%
    of it; of the 1,000 bucket alone it would not be); the open call stays out of the tally."""
    def gloo(t, dur, elements):
        return event("gloo:all_reduce", t, dur, cat="user_annotation", tid=3,
                     **{"Input Dims": [[elements]], "Input type": ["float"]})

    def post(t, elements):
        return event("c10d::allreduce_", t, 10.0, **{"Input Dims": [[[elements]], [], [], [], [],
                                                                      []]})

    data = {"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2}, "traceEvents": [
        event("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
        event("aten::addmm", 0.0, 300.0),
        post(300.0, 1000), gloo(310.0, 200.0, 1000),
        post(520.0, 20), gloo(530.0, 10.0, 20),
        post(900.0, 100_000), still_open(gloo(910.0, 90.0, 100_000)),
    ]}
    s = traces.summarise(write(tmp_path, "cpu.json", data))
    assert s.largest_reduction == 100_000 and s.set_aside == {"all-reduce": 1}
    assert s.steps[0].reduction_elements == (1000.0, 100_000.0)
    tally = s.collectives["gloo:all_reduce"]
    assert tally["count"] == 2 and tally["aside"] == 1 and tally["aside_elements"] == 20


@pytest.mark.parametrize("finished", [True, "true", 0, None])
def test_an_event_not_marked_open_is_read(tmp_path, finished):
    """"finished": true (kineto daa56485 wrote it on every host event, January to March 2025),
    0 or null mark no open event: the all-reduce's 100 us is read, comm 300 us."""
    data = {"traceEvents": [
        event("ProfilerStep#5", 0.0, 1000.0, cat="user_annotation"),
        still_open(event("gloo:all_reduce", 900.0, 100.0, cat="user_annotation"), finished),
        event("gloo:all_reduce", 300.0, 200.0, cat="user_annotation"),
    ]}
    s = traces.summarise(write(tmp_path, "cpu.json", data))
    assert s.steps[0].comm_s == pytest.approx(300e-6)
    assert not any("still open" in n for n in s.notes)


def test_a_trace_whose_steps_are_all_still_open_is_refused_as_no_complete_step(tmp_path,
                                                                               capsys):
    """One step, stopped mid-way: no step to measure, said as such (was read as a whole step
    of the time up to the stop; "call prof.step()" would be wrong: it was called)."""
    from scalesim.cli.main import main

    data = {"traceEvents": [
        still_open(event("ProfilerStep#1", 0.0, 700.0, cat="user_annotation")),
        event("aten::addmm", 0.0, 400.0),
    ]}
    path = write(tmp_path, "r0.json", data)
    with pytest.raises(ScalesimError, match=r"r0.json: no complete ProfilerStep: 1 still open "
                                            r"when the profiler stopped \('finished': false\), "
                                            r"so no step is whole to measure: trace one whole "
                                            r"step or more$"):
        traces.summarise(path)
    data["traceEvents"].append(event("ProfilerStep#0", 0.0, 0.0, cat="user_annotation"))
    with pytest.raises(ScalesimError, match=r"1 still open .* and 1 malformed or of duration 0"):
        traces.summarise(write(tmp_path, "r1.json", data))
    assert main(["diagnose", "--trace", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def window_end(ts_us):
    """Kineto's last event: the instant its capture window ended (``traces.WINDOW_END``)."""
    return {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": ts_us}


def test_a_step_ending_at_the_record_window_end_is_left_out_unmarked(tmp_path, capsys):
    """Kineto 2f7ce6f5 to daa56485 (September 2024 to January 2025) ended a step still open at
    the profiler's stop at its capture window's end without marking it: ProfilerStep#3 cut
    400 us in, ending at the trace's 'Record Window End' (2400 us), was read as a third step
    of 0.25 ms (its device copy). Now left out with its copy, and said."""
    from scalesim.cli.main import main

    data = gpu_trace()
    data["traceEvents"] += [
        event("ProfilerStep#3", 2000.0, 400.0, cat="user_annotation"),
        event("ProfilerStep#3", 2100.0, 250.0, cat="gpu_user_annotation", tid=7),
        event("sm80_xmma_gemm_f16f16", 2100.0, 250.0, cat="kernel", tid=7),
        window_end(2400.0),
    ]
    path = write(tmp_path, "r0.json", data)
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1, 2]  # was [1, 2, 3]
    assert s.notes == ["r0.json: ProfilerStep#3 left out: it ends at the trace's 'Record "
                       "Window End', where Kineto ends a step still open at the profiler's "
                       "stop (unmarked before kineto daa56485, January 2025), so how long it "
                       "ran is unknown"]
    assert main(["diagnose", "--trace", str(path), str(write(tmp_path, "r1.json",
                                                                 gpu_trace(1)))]) == 0
    assert "\n   0     2      1.00 " in capsys.readouterr().out  # rank 0's two steps (was 3)


@pytest.mark.parametrize("end_us", [2400.001, 2400.5, 2403.0])
def test_a_step_that_ends_before_the_window_end_is_read(tmp_path, end_us):
    """A step torch.profiler closed ends before Kineto's window does (torch 2.13: 0.1 ms or
    more before); 1 ns before is another end, as Kineto writes nanoseconds: read as before.
    The common trace, ending with a whole step, keeps it."""
    data = gpu_trace()
    data["traceEvents"] += [
        event("ProfilerStep#3", 2000.0, 400.0, cat="user_annotation"),
        event("ProfilerStep#3", 2100.0, 250.0, cat="gpu_user_annotation", tid=7),
        event("sm80_xmma_gemm_f16f16", 2100.0, 250.0, cat="kernel", tid=7),
        window_end(end_us),
    ]
    s = traces.summarise(write(tmp_path, "r0.json", data))
    assert [st.step for st in s.steps] == [1, 2, 3] and s.notes == []
    whole = gpu_trace()
    whole["traceEvents"].append(window_end(2000.167))  # ends with ProfilerStep#2, whole
    assert [st.step for st in traces.summarise(write(tmp_path, "w.json", whole)).steps] == [1, 2]


def test_the_window_end_is_matched_on_a_real_traces_clock():
    """torch 2.13's record_function range open at prof.stop() (args 'finished': false): ts
    5739009512417.827 us, dur 943.738, its trace's 'Record Window End' 5739009513361.565 (the
    floats' sum is 1 ulp, 0.98 ns, off); the trace's last whole step ended 962 us before it."""
    ends = [5739009512065.484 + 334.146, 5739009512417.827 + 943.738]
    assert traces.cut_by_the_stop(ends, 5739009513361.565) == [False, True]
    for unread in (None, "5739009513361.565", 10**400, float("inf")):  # none, or no number
        assert traces.cut_by_the_stop(ends, unread) == [False, False]


def test_a_trace_whose_one_step_ends_at_the_window_end_is_refused(tmp_path):
    data = {"traceEvents": [event("ProfilerStep#1", 0.0, 700.0, cat="user_annotation"),
                            event("aten::addmm", 0.0, 400.0), window_end(700.0)]}
    with pytest.raises(ScalesimError, match=r"r0.json: no complete ProfilerStep: 1 still open "
                                            r"when the profiler stopped \(ending at its 'Record "
                                            r"Window End'\), so no step is whole"):
        traces.summarise(write(tmp_path, "r0.json", data))
    data["traceEvents"].insert(0, still_open(event("ProfilerStep#0", 0.0, 0.0,
                                                   cat="user_annotation")))
    with pytest.raises(ScalesimError, match=r": 2 still open when the profiler stopped "
                                            r"\('finished': false or ending at its 'Record"):
        traces.summarise(write(tmp_path, "r1.json", data))


BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"


def trained_step(n, t_us, dur_us, backward=True, optimizer=True):
    """A CPU ProfilerStep#n from ``t_us`` of ``dur_us``: a forward matmul over its first 30 %,
    then, where asked, a backward op over the next 30 % and an SGD step over 10 %."""
    events = [event(f"ProfilerStep#{n}", t_us, dur_us, cat="user_annotation"),
              event("aten::addmm", t_us, 0.3 * dur_us)]
    if backward:
        events.append(event(BACKWARD, t_us + 0.4 * dur_us, 0.3 * dur_us))
    if optimizer:
        events.append(event("Optimizer.step#SGD.step", t_us + 0.8 * dur_us, 0.1 * dur_us,
                            cat="user_annotation"))
    return events


def stopped_early_trace(backward=True, optimizer=True, last=(False, False)):
    """Rank 0's two steps of 1000 and 1200 us (``trained_step``'s flags), then ProfilerStep#3
    of 0.044 ms (torch 2.13's prof.stop() closing the step the last prof.step() opened),
    holding a backward op and an optimizer step where ``last`` asks (nothing by default)."""
    return {"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 1},
            "traceEvents": trained_step(1, 0.0, 1000.0, backward, optimizer)
            + trained_step(2, 1000.0, 1200.0, backward, optimizer)
            + trained_step(3, 2200.0, 44.0, *last) + [window_end(2300.0)]}


def test_a_last_step_that_ran_no_training_work_is_left_out(tmp_path, capsys):
    """Session 51: a trace stopped before its schedule's active steps ran out ends with the
    step prof.stop() closed, which ran nothing (0.014 ms on torch 2.13 here, after steps of
    10 to 18 ms); it was read as a third step (median step 1.0 ms of 1.0, 1.2 and 0.044); now
    left out, said, and the median is the two whole steps' 1.1 ms."""
    from scalesim.cli.main import main

    path = write(tmp_path, "r0.json", stopped_early_trace())
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [1, 2]  # was [1, 2, 3]
    assert s.median("step_s") == pytest.approx(1.1e-3)  # was 1.0e-3
    assert s.notes == ["r0.json: ProfilerStep#3 left out: it ran no backward, as every other "
                       "step did; prof.stop() closed it early"]
    assert main(["diagnose", "--trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\n   0     2 " in out and "note: r0.json: ProfilerStep#3 left out" in out


@pytest.mark.parametrize("backward, optimizer, named", [
    (True, False, "backward"),  # no optimizer annotation in the trace
    (False, True, "optimizer step"),  # no backward op recorded: the optimizer's steps tell
])
def test_the_step_is_told_by_the_training_work_the_trace_records(tmp_path, backward, optimizer,
                                                                named):
    s = traces.summarise(write(tmp_path, "r0.json", stopped_early_trace(backward, optimizer)))
    assert [st.step for st in s.steps] == [1, 2]
    assert s.notes == [f"r0.json: ProfilerStep#3 left out: it ran no {named}, as every other "
                       "step did; prof.stop() closed it early"]


@pytest.mark.parametrize("last", [(True, True), (True, False), (False, True)])
def test_a_last_step_that_ran_training_work_is_kept(tmp_path, last):
    """A whole last step, or one that ran a backward or the optimizer's step (work, however
    short), is read."""
    s = traces.summarise(write(tmp_path, "r0.json", stopped_early_trace(last=last)))
    assert [st.step for st in s.steps] == [1, 2, 3] and s.notes == []


def test_no_step_is_left_out_of_a_forward_only_trace_one_step_or_the_middle(tmp_path):
    """Only the last step, and only against work every other step ran: a forward-only
    (inference) trace, a trace of one step, a middle step without work and a last one where
    another step ran none too (an evaluation step) are read as before."""
    def steps_of(data):
        data["distributedInfo"] = {"rank": 0, "world_size": 1}
        s = traces.summarise(write(tmp_path, "r.json", data))
        assert s.notes == []
        return [st.step for st in s.steps]

    assert steps_of(stopped_early_trace(backward=False, optimizer=False)) == [1, 2, 3]
    assert steps_of({"traceEvents": trained_step(1, 0.0, 44.0, False, False)}) == [1]
    middle = trained_step(1, 0.0, 1000.0) + trained_step(2, 1000.0, 44.0, False, False) \
        + trained_step(3, 1044.0, 1000.0)
    assert steps_of({"traceEvents": middle}) == [1, 2, 3]
    evaluation = trained_step(1, 0.0, 1000.0) + trained_step(2, 1000.0, 500.0, False, False) \
        + trained_step(3, 1500.0, 44.0, False, False)
    assert steps_of({"traceEvents": evaluation}) == [1, 2, 3]


def test_the_early_steps_device_copy_is_left_out_too(tmp_path):
    """On a GPU trace the step's gpu_user_annotation copy was read as the step; it goes with
    its host step."""
    data = gpu_trace()
    data["traceEvents"] += [event(BACKWARD, 300.0, 100.0), event(BACKWARD, 1300.0, 100.0),
                            event("ProfilerStep#3", 2000.0, 44.0, cat="user_annotation"),
                            event("ProfilerStep#3", 2010.0, 20.0, cat="gpu_user_annotation",
                                  tid=7)]
    s = traces.summarise(write(tmp_path, "r0.json", data))
    assert [st.step for st in s.steps] == [1, 2] and s.device == "gpu"
    assert s.notes[-1].startswith("r0.json: ProfilerStep#3 left out: it ran no backward")


@pytest.mark.parametrize("change", [{"dur": -1000.0}, {"dur": "1000"}, {"ts": None}, {"ph": "i"}])
def test_unusable_profiler_steps_are_named_as_such(tmp_path, change):
    """Every ProfilerStep malformed: not 'call prof.step()', which they did."""
    data = gpu_trace()
    for ev in data["traceEvents"]:
        if ev["name"].startswith("ProfilerStep"):
            ev.update(change)
    with pytest.raises(ScalesimError, match="4 ProfilerStep#N events, none a complete event"):
        traces.summarise(write(tmp_path, "r0.json", data))


def test_a_number_past_pythons_digit_limit_is_one_line(tmp_path, capsys):
    """int() of a 5,001-digit JSON number raised a ValueError traceback in every reader."""
    from scalesim.cli.main import main

    long_number = "1" + "0" * 5000
    trace = tmp_path / "r0.json"
    trace.write_text(json.dumps(gpu_trace()).replace('"world_size": 2', '"world_size": '
                                                     + long_number))
    with pytest.raises(ScalesimError, match="number too long to read"):
        traces.summarise(trace)
    workload = tmp_path / "w.json"
    workload.write_text('{"name": "x", "params": ' + long_number + "}")
    assert main(["predict", "--workload", str(workload), "--devices", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "number too long to read" in err


def test_a_step_number_given_twice_is_refused(tmp_path):
    """Every step named ProfilerStep#2: steps were paired with the wrong ones across ranks and a
    straggler named (session 31 audit); torch numbers each step once."""
    data = gpu_trace()
    for ev in data["traceEvents"]:
        if ev["name"].startswith("ProfilerStep#"):
            ev["name"] = "ProfilerStep#2"
    with pytest.raises(ScalesimError, match="ProfilerStep#2 appears 2 times"):
        traces.summarise(write(tmp_path, "r0.json", data))


def test_overlapping_steps_mixed_gpus_and_step_counts_are_noted(tmp_path):
    from scalesim.trace_diagnosis import diagnose_traces

    data = gpu_trace()
    for ev in data["traceEvents"]:
        if ev["name"] == "ProfilerStep#2" and ev["cat"] == "user_annotation":
            ev["ts"] -= 200.0  # starts 200 us before step 1 ends
    summary = traces.summarise(write(tmp_path, "r0.json", data))
    assert any("1 ProfilerStep(s) start before the step before them ends" in n
               for n in summary.notes)
    other = gpu_trace(1)
    other["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
    other["traceEvents"] = [ev for ev in other["traceEvents"]
                            if not ev["name"].endswith("#2")]  # one step of two
    first = gpu_trace(0)
    first["deviceProperties"] = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    for ev in (*first["traceEvents"], *other["traceEvents"]):
        if ev.get("cat") == "kernel":
            ev["args"] = {**ev.get("args", {}), "device": 0}
    report = diagnose_traces(trace_ranks.load_traces(
        [str(write(tmp_path, "a.json", first)), str(write(tmp_path, "b.json", other))]), "x")
    assert any(n.startswith("the ranks name different GPUs (NVIDIA A100-SXM4-80GB: rank 0; "
                            "NVIDIA H100 80GB HBM3: rank 1)") for n in report.notes), report.notes
    assert ("the ranks recorded different numbers of steps (rank 1 1, rank 0 2): ranks are "
            "compared on the steps they share") in report.notes


def test_a_trace_through_a_pipe_is_read_once(tmp_path):
    """`diagnose --trace <(zcat r0.json.gz)` failed: the gzip probe opened the pipe, read its
    first bytes and closed it, and the read found the rest."""
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    payload = gzip.compress(json.dumps(gpu_trace()).encode())

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(payload)

    writer = threading.Thread(target=feed)
    writer.start()
    summary = traces.summarise(fifo)
    writer.join()
    assert len(summary.steps) == 2


def test_a_gpu_groups_exposed_collectives_are_not_counted_as_set_aside(tmp_path):
    """Session 59 bug hunt: on a GPU trace whose NCCL kernels name their process group (every
    torch since 2.2 writes it), the step's exposed time of the collectives set aside as no
    gradient traffic took the last group's exposed time instead (one variable for both), so
    calibrate --from-trace took the gradient all-reduce's exposed 200 us out of forward+backward
    twice and diagnose called it 'waiting in collectives set aside'. Here nothing is set aside:
    0 us; the data-parallel group's exposed time stays 300 - 100 = 200 us a step."""
    data = gpu_trace()
    for ev in data["traceEvents"]:
        if ev["name"].startswith("ncclDevKernel"):
            ev["args"].update({"Process Group Name": "0", "Process Group Description": "default_pg",
                               "Group size": 2, "In msg nelems": 1_000_000})
    summary = trace_ranks.load_traces([write(tmp_path, "r0.json", data)])[0]
    assert [st.set_aside_s for st in summary.steps] == [0.0, 0.0]
    assert [st.set_aside_exposed_s for st in summary.steps] == [0.0, 0.0]
    assert [st.exposed_comm_s for st in summary.steps] == pytest.approx([200e-6, 200e-6])
    (group,) = summary.groups.values()
    assert group["exposed_s"] == pytest.approx(200e-6)


def test_a_torch_1_trace_takes_its_all_reduce_sizes_from_the_nccl_annotation(tmp_path):
    """torch 1.x records ``c10d::allreduce_``'s tensor list as Input Dims ``[]`` (Input type
    'TensorList'), which read as a 0-d tensor of 1 element: the gradient buckets were set aside
    as 1-element metrics and diagnose said the traces record no size (HolisticTraceAnalysis'
    trace_diff test trace, an 8-rank job). The ``nccl:all_reduce`` annotation inside each
    records the bucket's elements: those are read, and nothing is set aside."""
    data = gpu_trace()
    for n in (1, 2):
        t = (n - 1) * 1000.0
        data["traceEvents"] += [
            event("c10d::allreduce_", t + 580, 20.0, **{
                "Input Dims": [[], [], [], []], "Input type": ["TensorList", "", "Scalar", "Scalar"]}),
            event("nccl:all_reduce", t + 585, 10.0, **{
                "Input Dims": [[4_000_000]], "Input type": ["float"]})]
    summary = trace_ranks.load_traces([write(tmp_path, "r0.json", data)])[0]
    assert [list(st.reduction_elements) for st in summary.steps] == [[4_000_000], [4_000_000]]
    assert [st.set_aside_posts for st in summary.steps] == [0, 0]


def test_a_host_reduce_scatter_is_sized_by_the_buffer_it_reduces():
    """``c10d::_reduce_scatter_base_(output, input)`` records the output shard first: read from
    it, an FSDP2 reduce-scatter of a 5,130-element gradient on 2 ranks was 2,565 elements, and on
    8 ranks any unit under 8 % of the largest was set aside as a metric. Its size is the input,
    the whole buffer, as NCCL's ``In msg nelems`` gives a reduce-scatter's (and the shard for an
    all-gather, whose input is the shard)."""
    from scalesim.trace_comm_calls import collective_name, host_input_argument, input_elements

    def elements(name, dims):
        return input_elements({"Input Dims": dims}, host_input_argument(name, collective_name(name, {})))

    assert elements("c10d::_reduce_scatter_base_", [[2565], [5130]]) == 5130
    assert elements("c10d::_allgather_base_", [[5130], [2565]]) == 2565
    assert elements("c10d::allreduce_", [[[5130]], [], []]) == 5130
