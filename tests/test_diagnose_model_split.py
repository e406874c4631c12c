"""Runs of a job that splits its model (tp / pp / cp columns): read, fitted as data-parallel runs
of model replicas, reported in devices and replicas (docs/diagnose.md "Runs that split the
model")."""

import copy
import functools
import json
import subprocess
import sys

import numpy as np
import pytest

from scalesim.device_nouns import REPLICA_NOUNS, measured_nouns, nouns_for, replica_of
from scalesim.errors import ScalesimError
from scalesim.remedies import REPLICA_REASONS
from scalesim.runs import parse_runs_text, replica_runs, runs_from_records
from scalesim.runs_diagnosis import diagnose_runs

# A tp-8 job on servers of 8 GPUs, 1 -> 4 replicas, step times from a boundary at 16 GPUs
TP8 = """devices,nodes,step_time_s,global_batch,tp
8,1,1.00,64,8
16,2,1.10,128,8
32,4,1.20,256,8
64,8,1.26,512,8
"""
# The same runs as a data-parallel job of its replicas: one replica per server
REPLICAS = """devices,nodes,step_time_s,global_batch
1,1,1.00,64
2,2,1.10,128
4,4,1.20,256
8,8,1.26,512
"""


@functools.cache
def _tp8_diagnosis():
    """The report of ``TP8`` at 7e9 parameters, fitted once in this module (``tp8_diagnosis``)."""
    return diagnose_runs(parse_runs_text(TP8, "r.csv"), params=7e9)


def tp8_diagnosis():
    """A copy of the report of ``TP8`` at 7e9 parameters (a test may change its copy)."""
    return copy.deepcopy(_tp8_diagnosis())


def test_split_columns_are_read_and_a_replica_is_their_product():
    runs = parse_runs_text("devices,nodes,step_time_s,per_device_batch,tp,pp,cp\n"
                           "16,2,1.0,4,2,2,2\n32,4,1.1,4,2,2,2\n", "r.csv")
    assert runs.model_split == {"tp": 2, "pp": 2, "cp": 2}
    assert runs.replica_devices == 8
    assert runs.replicas.tolist() == [2, 4]
    # per_device_batch is one replica's micro-batch: 2 replicas x 4 = 8 samples per step
    assert runs.samples_per_step.tolist() == [8.0, 16.0]
    assert runs.samples_per_s.tolist() == pytest.approx([8.0, 16.0 / 1.1])
    assert not any("ignored column" in n for n in runs.notes)


def test_global_batch_is_per_replica_batch_times_replicas():
    text = "devices,nodes,step_time_s,global_batch,tp\n8,1,1.0,64,8\n16,2,1.1,128,8\n"
    runs = parse_runs_text(text, "r.csv")
    assert runs.micro_batch.tolist() == [64.0, 64.0]  # 64 / (1 replica x 1 micro-step)
    with pytest.raises(ScalesimError, match=r"global_batch 64 != per_device_batch \(per replica\) "
                                            r"x replicas x accumulation"):
        parse_runs_text("devices,nodes,step_time_s,global_batch,per_device_batch,tp\n"
                        "16,2,1.0,64,8,8\n32,4,1.1,128,8,8\n", "r.csv")


def test_empty_split_cells_mean_no_split():
    runs = parse_runs_text("devices,nodes,step_time_s,tp,pp,accumulation\n"
                           "1,1,1.0,,,\n2,1,1.1,,,\n", "r.csv")
    assert runs.replica_devices == 1 and runs.accumulation.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("text, message", [
    ("devices,nodes,step_time_s,tp\n8,1,1.0,8\n16,2,1.1,4\n",
     "run 1 splits the model as tp 8 x pp 1 x cp 1, run 2 as tp 4 x pp 1 x cp 1; diagnose "
     "compares runs of one model split"),
    ("devices,nodes,step_time_s,tp,pp\n8,1,1.0,4,2\n12,2,1.1,4,2\n",
     "12 devices do not split into model replicas of tp 4 x pp 2 x cp 1 = 8 devices"),
    ("devices,nodes,step_time_s,tp\n8,1,1.0,0\n16,2,1.1,0\n", "tp"),
])
def test_bad_splits_are_refused_with_the_rule(text, message):
    with pytest.raises(ScalesimError, match="r.csv") as err:
        parse_runs_text(text, "r.csv")
    assert message in str(err.value)


@pytest.mark.parametrize("split, devices, nodes, replicas, replica_nodes", [
    # tp 8 fills a server: each data-parallel group has one member per server
    ({"tp": 8}, [8, 16, 64], [1, 2, 8], [1, 2, 8], [1, 2, 8]),
    # tp 2 x pp 2 on servers of 8: dp 4 fills a server with tp (stride 2), stages on two servers
    ({"tp": 2, "pp": 2}, [4, 16], [1, 2], [1, 4], [1, 1]),
    # tp 4: two members of a group per server of 8 (stride 4)
    ({"tp": 4}, [8, 16, 32], [1, 2, 4], [2, 4, 8], [1, 2, 4]),
    # cp 2 x tp 2: stride 4, as tp 4
    ({"tp": 2, "cp": 2}, [8, 32], [1, 4], [2, 8], [1, 4]),
])
def test_replica_runs_place_the_data_parallel_group_as_megatron(split, devices, nodes, replicas,
                                                                  replica_nodes):
    records = [{"devices": d, "nodes": n, "step_time_s": 1.0 + 0.1 * i, "per_device_batch": 2,
                **split} for i, (d, n) in enumerate(zip(devices, nodes, strict=True))]
    runs = runs_from_records(records, "r.json")
    rr = replica_runs(runs)
    assert rr.devices.tolist() == replicas
    assert rr.nodes.tolist() == replica_nodes
    assert rr.samples_per_s.tolist() == pytest.approx(runs.samples_per_s.tolist())
    assert rr.replica_devices == 1 and rr.replica_split is not None
    assert replica_of(rr.device_name) == "measured"
    assert nouns_for(rr.device_name) is REPLICA_NOUNS
    assert measured_nouns(rr.device_name).device == "device"


def test_runs_without_a_split_are_their_own_replicas():
    runs = parse_runs_text(REPLICAS, "r.csv")
    assert replica_runs(runs) is runs
    assert runs.device_name == "measured"


def test_split_runs_diagnose_as_the_data_parallel_runs_of_their_replicas():
    """The fit, the cause and every remedy's gain of tp-8 runs are those of the same runs given
    as data-parallel runs of replicas (one per server); the report keeps the devices given."""
    split = tp8_diagnosis()
    plain = diagnose_runs(parse_runs_text(REPLICAS, "r.csv"), params=7e9)
    assert split.details["fit"]["parameters"] == pytest.approx(plain.details["fit"]["parameters"])
    assert split.cause.key == plain.cause.key
    assert [o.key for o in split.others] == [o.key for o in plain.others]
    gains = {r.key: r.gain for r in plain.remedies if r.applicable}
    assert gains and {r.key: r.gain for r in split.remedies if r.applicable} == pytest.approx(gains)
    assert [r["devices"] for r in split.table] == [8, 16, 32, 64]
    assert [r["replicas"] for r in split.table] == [1, 2, 4, 8]
    assert [r["efficiency"] for r in split.table] == pytest.approx(
        [r["efficiency"] for r in plain.table])
    knee = split.details["knee"]
    assert (knee["devices_before"], knee["devices_after"]) == (8, 16)
    assert (knee["replicas_before"], knee["replicas_after"]) == (1, 2)
    ex, ex_plain = split.details["extrapolation"], plain.details["extrapolation"]
    assert [e["replicas"] for e in ex] == [e["devices"] for e in ex_plain] == [16, 32, 64]
    assert [e["devices"] for e in ex] == [128, 256, 512]
    assert [e["samples_per_s"] for e in ex] == pytest.approx([e["samples_per_s"] for e in ex_plain])
    assert split.details["model_split"] == {"tp": 8, "pp": 1, "cp": 1}
    assert split.details["replica_devices"] == 8
    assert split.notes[0].startswith("the runs split the model (tp 8 x pp 1 x cp 1): one model "
                                     "replica is 8 devices")


def test_split_runs_report_text_says_devices_and_replicas():
    report = tp8_diagnosis()
    text = report.to_text()
    assert ("efficiency 100% at 1 replica, their data-parallel exchange inside one server; 91% "
            "at 2 replicas, the exchange across 2 servers") in text
    assert ("knee: 8 -> 16 devices (1 -> 2 replicas), efficiency -9.1 points, the data-parallel "
            "exchange crossing a server boundary") in text
    head = next(line for line in text.splitlines() if line.lstrip().startswith("devices"))
    assert head.split()[:3] == ["devices", "nodes", "replicas"]
    assert "16 replicas (128 devices) on  16 servers" in text
    # the remedies of the split itself are not predicted from step times, and say why
    reasons = {r.key: r.note for r in report.remedies if not r.applicable}
    assert REPLICA_REASONS["split_model"] in reasons["split_model"]
    assert REPLICA_REASONS["tp_overlap"] in reasons["tp_overlap"]


def test_extrapolation_is_asked_in_devices_and_must_be_whole_replicas():
    runs = parse_runs_text(TP8, "r.csv")
    report = diagnose_runs(runs, extrapolate_to=[96, 800])
    assert [(e["devices"], e["replicas"]) for e in report.details["extrapolation"]] == [
        (96, 12), (800, 100)]
    with pytest.raises(ScalesimError, match="extrapolate to 100 devices: not a whole number of "
                                            "model replicas of 8 devices .*multiples of 8"):
        diagnose_runs(runs, extrapolate_to=[64, 100])


# TP8's runs 16x slower: llama3-8b at 4 samples of 8,192 tokens a second on 8 H100s
SLOW_TP8 = """devices,nodes,step_time_s,global_batch,tp
8,1,16.0,64,8
16,2,17.6,128,8
32,4,19.2,256,8
64,8,20.16,512,8
"""
# llama3-8b by hand: a layer's matmul weights q, o 4096^2, k, v 4096 x 1024 (8 kv heads of
# 128), a SwiGLU MLP 3 x 4096 x 14336; 32 layers and the logits' 4096 x 128256: 2 FLOPs a
# weight and 4 s h for attention a layer forward, 3 x forward a step
LLAMA3_8B_FLOPS_PER_TOKEN = 3 * (2 * (32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
                                      + 4096 * 128256) + 32 * 4 * 8192 * 4096)


def test_workload_gives_split_runs_their_parameters_and_mfu():
    """--workload with runs that split the model (it had been refused): their parameter count
    and each run's MFU, model FLOPs x tokens/s over devices x the dense bf16 peak; the fit and
    the remedies stay the replicas'. 4 samples/s x 8,192 tokens x 57.9 GFLOP / (8 x 989
    TFLOP/s) = 24.0 % at 8 H100s."""
    from scalesim.runs_model import runs_model

    model = runs_model("llama3-8b", "H100 SXM")
    report = diagnose_runs(parse_runs_text(SLOW_TP8, "r.csv"), transformer=model)
    mfu = report.details["mfu"]
    assert [m["devices"] for m in mfu] == [8, 16, 32, 64]
    by_hand = [64 * d // 8 / t * 8192 * LLAMA3_8B_FLOPS_PER_TOKEN / (d * 989e12)
               for d, t in [(8, 16.0), (16, 17.6), (32, 19.2), (64, 20.16)]]
    assert [m["mfu"] for m in mfu] == pytest.approx(by_hand, rel=1e-9)
    assert by_hand[0] == pytest.approx(0.2398, abs=1e-4)
    (line,) = [n for n in report.notes if n.startswith("model FLOPs utilisation (MFU) 24.0% at 8")]
    assert "against H100 SXM's dense 16-bit peak of 989 TFLOP/s" in line
    assert "--workload gives the runs' parameter count and MFU" in report.notes[0]
    profile = report.details["fitted_profile"]
    assert profile["workload"]["transformer"] is None
    assert profile["workload"]["params"] == pytest.approx(model.params)


def test_split_runs_faster_than_their_workload_can_run_are_refused():
    """TP8's runs as llama3-8b on H100s: 64 samples of 8,192 tokens a second on 8 GPUs need
    the weight matmuls alone at 2.98x the peak (64 x 8,192 x 6 x 7.50e9 / 7.91e15): refused
    in one line, as the data-parallel
    runs' fitted micro-step is (``_check_runs_model``); and the split-the-model remedy's
    options, which split runs do not get, are refused."""
    from scalesim.runs_model import runs_model

    model = runs_model("llama3-8b", "H100 SXM")
    with pytest.raises(ScalesimError, match=r"the runs train 64 samples/s on 8 devices, faster "
                                            r"than llama3-8b .* weight matmuls alone need 298% "
                                            "of the 989 TFLOP/s datasheet peak"):
        diagnose_runs(parse_runs_text(TP8, "r.csv"), transformer=model)
    with pytest.raises(ScalesimError, match="--tp-overlap is for the layouts of the "
                                            "split-the-model remedy"):
        diagnose_runs(parse_runs_text(SLOW_TP8, "r.csv"), transformer=model, tp_overlap=True)


def test_measured_comm_and_rank_times_of_split_runs_are_per_device_step(tmp_path):
    """comm_s and data_wait_s are seconds per step as before; rank step times list every
    device (GPU) rank, and a straggler delay measured there is taken as it is."""
    rows = []
    for i, (d, n) in enumerate([(8, 1), (16, 2), (32, 4)]):
        step = 1.0 + 0.1 * i
        ranks = [step] * d
        ranks[3] = step * 1.05  # rank 3 slow in every run
        rows.append({"devices": d, "nodes": n, "step_time_s": step, "global_batch": 64 * d // 8,
                     "tp": 4, "pp": 2, "comm_s": 0.05 * i, "rank_step_times_s": ranks})
    runs = runs_from_records(rows, "r.json")
    report = diagnose_runs(runs)
    assert report.details["fit"]["parameters"]["per_sample_s"] > 0
    assert [r["comm_share"] for r in report.table] == pytest.approx(
        [0.0, 0.05 / 1.1, 0.1 / 1.2])
    # rank 3's delay, max - median of the 8 / 16 / 32 device ranks: 5 % of each step
    assert [r["straggler_share"] for r in report.table] == pytest.approx([0.05] * 3)
    assert report.details["fit"]["parameters"]["jitter_cv"] == 0.0  # measured, not fitted
    with pytest.raises(ScalesimError, match="lists 7 rank step times; give one per rank"):
        runs_from_records([{**rows[0], "rank_step_times_s": [1.0] * 7}, rows[1]], "r.json")


def test_cli_reads_split_runs_and_refuses_a_mixed_file(tmp_path):
    good, bad = tmp_path / "tp.csv", tmp_path / "mixed.csv"
    good.write_text(TP8)
    bad.write_text("devices,nodes,step_time_s,tp\n8,1,1.0,8\n16,2,1.1,2\n")
    cmd = [sys.executable, "-m", "scalesim.cli.main", "diagnose"]
    ok = subprocess.run([*cmd, str(good), "--json"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["details"]["model_split"]["tp"] == 8
    assert np.allclose([r["devices"] for r in data["table"]], [8, 16, 32, 64])
    err = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, timeout=120)
    assert err.returncode != 0
    assert len(err.stderr.strip().splitlines()) == 1
    assert "give one split per runs file" in err.stderr


# servers of 8: tp 8 x pp 2, one replica on two servers
PP2 = """devices,nodes,step_time_s,global_batch,tp,pp
16,2,1.00,64,8,2
32,4,1.10,128,8,2
64,8,1.20,256,8,2
128,16,1.26,512,8,2
"""


def test_extrapolation_servers_are_the_jobs_and_the_remedies_run_in_both_counts():
    report = diagnose_runs(parse_runs_text(PP2, "r.csv"), extrapolate_to=[256])
    (e,) = report.details["extrapolation"]
    assert (e["devices"], e["replicas"], e["nodes"]) == (256, 16, 32)  # 256 / 8 a server
    assert report.details["remedies_at_devices"] == 128
    assert report.details["remedies_at_replicas"] == 8
    note = report.notes[0]
    # each of the fit's servers holds one replica, whose stages sit in 2 servers: a faster
    # network is priced on both servers' NICs (it had been on one, "its gain understated")
    assert ("a replica spans 2 servers and the replicas of one of the fit's servers span 2: a "
            "faster network is priced on all 2 servers' NICs") in note
    assert ("pipeline (2 stages, schedule 1F1B, assumed: no schedule column) idles (pp - 1) = 1 "
            "micro-steps of one stage") in note


@pytest.mark.parametrize("text, devices", [(TP8, 8), (REPLICAS, 1)])
def test_extrapolating_to_one_replica_or_device_is_predicted(text, devices):
    """One run's worth of model (no exchange) at a single count used to raise IndexError (the
    model's fields that no overlap changes lost the overlap axis)."""
    report = diagnose_runs(parse_runs_text(text, "r.csv"), extrapolate_to=[devices])
    (e,) = report.details["extrapolation"]
    assert e["devices"] == devices
    # the fitted model at the first run's count, against that run's measured throughput
    assert e["efficiency"] == pytest.approx(report.table[0]["step_time_s"]
                                            / report.table[0]["model_step_time_s"], rel=1e-6)


def test_extrapolation_that_does_not_fill_servers_is_refused_in_devices():
    text = ("devices,nodes,step_time_s,per_device_batch,tp,pp\n4,1,1.0,4,2,2\n8,1,1.05,4,2,2\n"
            "16,2,1.1,4,2,2\n32,4,1.2,4,2,2\n")
    with pytest.raises(ScalesimError, match=r"extrapolate to 24 devices \(6 replicas\): its "
                                            r"data-parallel groups do not fill whole servers at 4 "
                                            r"replicas a server.*a multiple of 16 devices"):
        diagnose_runs(parse_runs_text(text, "r.csv"), extrapolate_to=[24])


@pytest.mark.parametrize("rank, split, replicas, replica", [
    (24, {"tp": 8, "pp": 1, "cp": 1}, 16, 3),
    (5, {"tp": 2, "pp": 2, "cp": 1}, 4, 2),   # ranks 4-5: dp rank 2 of stage 0
    (13, {"tp": 2, "pp": 2, "cp": 1}, 4, 2),  # ranks 12-13: dp rank 2 of stage 1
    (6, {"tp": 2, "pp": 1, "cp": 2}, 2, 1),   # tp x cp = 4 ranks a replica
])
def test_a_device_rank_belongs_to_its_data_parallel_replica(rank, split, replicas, replica):
    from scalesim.runs_diagnosis import replica_of_rank

    assert replica_of_rank(rank, split, replicas) == replica


@pytest.mark.parametrize("split, replicas, g, servers", [
    ({"tp": 8, "pp": 1, "cp": 1}, 4, 8, 1),
    ({"tp": 8, "pp": 2, "cp": 1}, 4, 8, 2),
    ({"tp": 2, "pp": 2, "cp": 1}, 4, 8, 2),   # ranks 0, 1 and 8, 9
    ({"tp": 2, "pp": 2, "cp": 1}, 1, 8, 1),   # ranks 0, 1, 2, 3: one server
    ({"tp": 16, "pp": 1, "cp": 1}, 2, 8, 2),
])
def test_the_servers_one_replica_spans(split, replicas, g, servers):
    from scalesim.runs_diagnosis import _replica_servers

    assert _replica_servers(split, replicas, g) == servers


def test_a_slow_device_is_priced_on_its_replica():
    """Ranks 24-31 (replica 3 of tp 8) slow in every run: the fitted scenario slows replica 3,
    and every remedy gains what the same runs written as data-parallel runs of replicas (device
    3 slow) gain."""
    def rows(split: bool):
        out = []
        for i, replicas in enumerate((4, 8, 16)):
            step = 1.0 + 0.1 * i
            m = 8 if split else 1
            ranks = [(0.8 - 0.1 * i) * step] * (replicas * m)  # the others ever faster
            ranks[3 * m:4 * m] = [step] * m
            out.append({"devices": replicas * m, "nodes": replicas, "step_time_s": step,
                        "global_batch": 64 * replicas, "rank_step_times_s": ranks,
                        **({"tp": 8} if split else {})})
        return runs_from_records(out, "r.json")

    split, plain = diagnose_runs(rows(True)), diagnose_runs(rows(False))
    assert split.details["fitted_scenario"]["slow_device"] == 3
    assert plain.details["fitted_scenario"]["slow_device"] == 3
    gains = {r.key: r.gain for r in plain.remedies if r.applicable}
    assert gains["slow_device"] > 0.05
    assert {r.key: r.gain for r in split.remedies if r.applicable} == pytest.approx(gains)
    assert "rank 24 is the slowest in every run (of replica 3 at 16 replicas)" in split.to_text()
    assert "128 devices: rank 24 slowest" in split.to_text()


def test_cpu_runs_that_split_the_model_count_processes_in_the_table_and_charts():
    from scalesim.app.diagnose_page import runs_throughput_chart, table_frame

    report = diagnose_runs(parse_runs_text(TP8.replace("tp\n", "tp,device\n").replace(
        ",8\n", ",8,cpu\n"), "r.csv"))
    assert table_frame(report).columns.tolist()[:3] == ["processes", "hosts", "replicas"]
    assert runs_throughput_chart(report).to_dict()["layer"][0]["encoding"]["x"]["title"] == (
        "processes (log scale)")
    assert "4 replicas updates" not in report.to_text()
    assert "knee: 8 -> 16 processes (1 -> 2 replicas)" in report.to_text()


def test_the_smaller_batch_says_per_replica():
    report = diagnose_runs(parse_runs_text(TP8, "r.csv"), critical_batch=200)
    smaller = next(r for r in report.remedies if r.key == "smaller_batch")
    assert "(per-replica 32)" in smaller.title


def test_data_parallel_runs_with_their_workload_report_mfu_too():
    """llama3-8b at 1 sample of 8,192 tokens per H100 in 1.2 s at 8 GPUs: 8 / 1.2 samples/s x
    8,192 x 57.9 GFLOP / (8 x 989 TFLOP/s) = 40.0 %; at 32 in 1.5 s, 32.0 %."""
    from scalesim.runs_model import runs_model

    runs = parse_runs_text("devices,nodes,step_time_s,per_device_batch\n8,1,1.2,1\n16,2,1.35,1\n"
                           "32,4,1.5,1\n", "runs.csv")
    report = diagnose_runs(runs, transformer=runs_model("llama3-8b", "H100 SXM"))
    by_hand = [d / t * 8192 * LLAMA3_8B_FLOPS_PER_TOKEN / (d * 989e12)
               for d, t in [(8, 1.2), (16, 1.35), (32, 1.5)]]
    assert [m["mfu"] for m in report.details["mfu"]] == pytest.approx(by_hand, rel=1e-9)
    assert any(n.startswith("model FLOPs utilisation (MFU) 40.0% at 8 -> 32.0% at 32 devices")
               for n in report.notes)
    assert diagnose_runs(runs).details["mfu"] is None  # no workload: no MFU


def test_data_parallel_runs_beyond_the_peak_are_refused_as_split_runs_are():
    """The same llama3-8b runs on A100s (312 TFLOP/s) at 8 / 0.8743 = 9.15 samples/s on 8 GPUs:
    the weight matmuls alone need 9.15 x 8,192 x 6 x 7.504e9 / (8 x 312e12) = 135 % of the
    peak. One batch leaves the fitted micro-step unpinned (its band reaches the peak's time),
    so the data-parallel runs had been reported at an MFU of 174 % while the same runs with a
    tp column were refused; both are refused now. Session 56: the steps 10 % longer (0.9617 s
    at 8: 8.318 samples/s, 123 % of the peak). The model's median error fell to 2.8 % (DDP's
    bucket copies in the validation), and with it the noise a fit with no degrees of freedom
    assumes (0.028 / 0.6745, ``fit_runs.NOISE_NO_DOF``), and the named GPU's fit now charges the
    copies (8.03e9 x 16 B / 2,039 GB/s = 63 ms a step) outside the micro-step: at 0.8743 s
    (and at 5 % longer) the micro-step's band no longer reached the peak's time and the
    micro-step check refused the runs first, not the throughput check this test is about."""
    from scalesim.runs_model import runs_model

    weights = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4096 * 128256
    by_hand = 8 / (0.8743152418423549 * 1.10) * 8192 * 6 * weights / (8 * 312e12)
    assert by_hand == pytest.approx(1.229, abs=1e-3)
    model = runs_model("llama3-8b", "A100 80GB")
    steps = [t * 1.10 for t in (0.8743152418423549, 0.8799911262118046, 0.8874901969497289)]
    runs = ("devices,nodes,step_time_s,per_device_batch\n"
            + "".join(f"{d},{n},{t!r},1\n" for (d, n), t in zip(((8, 1), (16, 2), (32, 4)), steps,
                                                              strict=True)))
    with pytest.raises(ScalesimError, match=r"the runs train 8.318 samples/s on 8 devices, "
                                            r"faster than llama3-8b .* need 123% of the 312"):
        diagnose_runs(parse_runs_text(runs, "r.csv"), transformer=model)


def test_cpu_runs_that_split_the_model_are_refused_naming_their_own_device():
    """--workload with CPU runs with a tp column: the refusal names the runs' device column
    ('CPU: AMD EPYC'), not the replica name the fit gives them ('model replica (tp 2 x pp 1 x
    cp 1) of CPU: AMD EPYC', which no runs file says)."""
    from scalesim.runs_model import runs_model

    text = ("devices,nodes,step_time_s,per_device_batch,device,tp\n2,1,1.0,8,CPU: AMD EPYC,2\n"
            "4,1,1.1,8,CPU: AMD EPYC,2\n8,2,1.3,8,CPU: AMD EPYC,2\n")
    with pytest.raises(ScalesimError, match=r"^the runs ran on CPU processes \(device 'CPU: AMD "
                                            r"EPYC'\); --workload"):
        diagnose_runs(parse_runs_text(text, "r.csv"), transformer=runs_model("llama3-8b",
                                                                             "H100 SXM"))
