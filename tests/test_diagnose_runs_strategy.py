"""Diagnose runs that sharded (--strategy, --zero-framework, --grad-sync; session 25).

Until session 25 diagnose read every runs file as PyTorch DDP: FSDP runs were fitted with DDP's
exchange (their links came out several times too slow), their memory was DDP's (so "the runs ran
past the model's memory") and the sharding remedy offered to shard what they already sharded.
"""

from __future__ import annotations

import json

import diagnose_cases as cases
import pytest
from cli_harness import run_cli

from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
from scalesim.errors import ScalesimError
from scalesim.fit_runs import RunsExchange, fit_runs
from scalesim.presets import BERT_LARGE
from scalesim.profiles import resolve_profile
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.runs_model import runs_model
from scalesim.schemas import Scenario

BERT_PARAMS = 336e6  # the bert-large preset's parameters, bf16 gradients on the wire (2 bytes)


@pytest.fixture(scope="module")
def fsdp_runs():
    """BERT-large under FSDP FULL_SHARD (ZeRO-3), 16 a GPU x 2 micro-steps, on 1-32 PCIe GPUs of
    servers of 8 joined by 100 Gb/s Ethernet (pcie-8gpu-100gbe: 25.2 GB/s busbw inside a
    server, 6.8 GB/s across), made by the model."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "bert-large")
    scenario = Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=16, accumulation=2,
                        strategy="zero3")
    return cases.to_csv(cases._rows(profile, scenario))


def test_the_fit_reads_sharded_runs_with_their_exchange(fsdp_runs):
    """Read with ZeRO-3's exchange the fit finds the links the runs were made with (25.2 and
    6.8 GB/s busbw, within 4 and 5 %: the fit's link latency is 0, the preset's 5 and 30 us) and
    follows every run; read as DDP it cannot (15 % rms) and puts the link across servers at
    under half its speed (3.4x too slow here): the per-micro-step gathers and reduce-scatters
    are read as one all-reduce."""
    runs = parse_runs_text(fsdp_runs, "runs.csv")
    sharded = fit_runs(runs, BERT_PARAMS, 2.0, RunsExchange("zero3"))
    assert sharded.rmse_rel < 0.01
    # 24.4 and 6.53 since session 48 (within 3 % before): the runs' device spread now stretches
    # the backward their exchange hides behind (docs/model.md §3), which the fit reads through
    # its jitter, held towards 0 by its prior, so it trades a little of each link for it
    assert sharded.busbw_GBps("intra") == pytest.approx(25.2, rel=0.04)
    assert sharded.busbw_GBps("inter") == pytest.approx(6.8, rel=0.05)
    as_ddp = fit_runs(runs, BERT_PARAMS, 2.0)
    assert as_ddp.rmse_rel > 0.05
    assert as_ddp.busbw_GBps("inter") < 0.5 * 6.8


def test_the_report_says_how_the_runs_exchanged_and_starts_every_remedy_there(fsdp_runs):
    """The note, the JSON's details and the fitted scenario carry the strategy; the sharding
    remedy from ZeRO-3 holds the parameters whole (ZeRO-2, FSDP SHARD_GRAD_OP), sending 2/3 of
    the bytes: per micro-step FSDP ZeRO-2 sends 2 units (a gather, a reduce-scatter), ZeRO-3 3
    (a gather before forward and before backward, a reduce-scatter)."""
    runs = parse_runs_text(fsdp_runs, "runs.csv")
    report = diagnose_runs(runs, BERT_PARAMS, 2.0, exchange=RunsExchange("zero3"))
    assert ("the runs exchanged as zero3 (FSDP FULL_SHARD): the fit, the memory and every "
            "remedy start from it (docs/model.md §4)") in report.notes
    assert report.details["exchange"] == {"strategy": "zero3", "zero_framework": "fsdp",
                                          "grad_sync": "every-micro-step"}
    assert report.details["fitted_scenario"]["strategy"] == "zero3"
    sharding = next(r for r in report.remedies if r.key == "sharding")
    assert sharding.title == "Hold parameters whole (zero3 -> zero2, FSDP SHARD_GRAD_OP)"
    assert "sends 0.667x the bytes of now per step" in sharding.note
    assert sharding.gain > 0
    # read as DDP (the default), the sharding remedy is DDP's own: shard the optimizer state
    plain = diagnose_runs(runs, BERT_PARAMS, 2.0)
    assert plain.details["exchange"]["strategy"] == "ddp"
    assert not any("exchanged as" in n for n in plain.notes)
    assert next(r for r in plain.remedies if r.key == "sharding").title.startswith(
        "Shard optimizer state (ddp -> zero1")


@pytest.fixture(scope="module")
def llama8b_zero3():
    """Llama 3 8B under FSDP FULL_SHARD at 1 sequence a GPU on 8-32 A100 PCIe 80GB, made by the
    model: (the runs, their model, their diagnosis read as ZeRO-3), shared by the two tests
    below (one diagnosis, not two of the same runs)."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "llama3-8b")
    text = cases.to_csv(cases._rows(profile, Scenario(devices=[8, 16, 32], micro_batch=1,
                                                       strategy="zero3")))
    runs = parse_runs_text(text, "runs.csv")
    model = runs_model("llama3-8b", "A100 PCIe 80GB")
    return runs, model, diagnose_runs(runs, None, 4.0, transformer=model,
                                      exchange=RunsExchange("zero3"))


def test_sharded_runs_of_a_transformer_are_judged_on_their_own_memory(llama8b_zero3):
    """Llama 3 8B under FSDP FULL_SHARD at 1 sequence a GPU on 8-32 A100 PCIe 80GB: the model
    puts them at 58-46 GiB a GPU sharded, 162 GiB read as DDP. Read as DDP the note says they
    ran past the model's memory and memory is left unknown; read as ZeRO-3 memory is the
    GPU's and the note is gone."""
    runs, model, sharded = llama8b_zero3
    as_ddp = diagnose_runs(runs, None, 4.0, transformer=model)
    assert any("yet the runs ran" in n and "(ddp)" in n for n in as_ddp.notes)
    assert not any("yet the runs ran" in n for n in sharded.notes)
    assert sharded.details["fitted_profile"]["hardware"]["device_memory_bytes"] == 80 * 2**30
    assert sharded.details["fit"]["rmse_rel"] < 0.01 < as_ddp.details["fit"]["rmse_rel"]


def test_whole_parameters_are_judged_on_the_parameters_alone_where_memory_is_unknown(
        llama8b_zero3):
    """Session 26 (a session-25 leftover): Llama 3 70B ZeRO-3 runs at 1 sequence of 8,192 a GPU
    on 16-64 A100 PCIe 80GB, which the model puts at 203 GiB a GPU: they ran, so memory is
    treated as unknown and every remedy assumed to fit, "Hold parameters whole" among them,
    whose bf16 weights alone take 70.6 G x 2 bytes = 131.4 GiB. It is not runnable."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "llama3-70b")
    text = cases.to_csv(cases._rows(profile, Scenario(devices=[16, 32, 64], micro_batch=1,
                                                       strategy="zero3")))
    runs = parse_runs_text(text, "runs.csv")
    model = runs_model("llama3-70b", "A100 PCIe 80GB")
    report = diagnose_runs(runs, None, 4.0, transformer=model, exchange=RunsExchange("zero3"))
    assert any("yet the runs ran" in n for n in report.notes)  # memory left unknown
    whole = next(r for r in report.remedies if r.key == "sharding")
    assert whole.verdict == "not runnable" and not whole.helps
    assert "131.4 GiB (70.6 G x 2 bytes)" in whole.note
    assert report.first_remedy is None or report.first_remedy.key != "sharding"
    # the 8B's weights (15 GiB) fit the same GPU: its remedy is judged as before
    report8 = llama8b_zero3[2]
    assert next(r for r in report8.remedies if r.key == "sharding").verdict != "not runnable"


def test_the_cli_takes_the_runs_exchange_and_refuses_what_changes_nothing(tmp_path, capsys,
                                                                          fsdp_runs):
    path = tmp_path / "runs.csv"
    path.write_text(fsdp_runs)
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--params", "336e6", "--wire-bytes",
                                      "2", "--strategy", "zero3", "--json"])
    assert code == 0, err
    assert json.loads(out)["details"]["exchange"]["strategy"] == "zero3"
    for flags, words in (
        (["--zero-framework", "deepspeed"], "--zero-framework is for a job that sharded"),
        (["--strategy", "zero1", "--grad-sync", "once-per-step"], "--grad-sync is for a job that "
                                                                  "sharded its gradients"),
        (["--strategy", "zero3", "--zero-framework", "deepspeed", "--grad-sync",
          "once-per-step"], "DeepSpeed stage 2/3 reduce gradients in every micro-step"),
    ):
        code, out, err = run_cli(capsys, ["diagnose", str(path), *flags])
        assert code == 2 and words in err and len(err.splitlines()) == 1, err


def test_the_exchange_refuses_names_it_does_not_know():
    with pytest.raises(ScalesimError, match="strategy 'zero4': expected one of ddp, zero1"):
        RunsExchange("zero4")
    with pytest.raises(ScalesimError, match="blocks -1"):
        RunsExchange(blocks=-1)
    with pytest.raises(ScalesimError, match="--zero-framework is for a job that sharded"):
        diagnose_request(DiagnoseOptions(zero_framework="deepspeed"),
                         runs=parse_runs_text("devices,nodes,samples_per_s\n1,1,5\n2,1,9\n", "r"))


def _fsdp_trace(rank: int, gathers: int) -> dict:
    """Two 1000 us GPU steps of a 2-rank job: 500 us of matmul, ``gathers`` NCCL all-gathers of
    100 us and one 150 us reduce-scatter per step (FSDP: two gathers a block under FULL_SHARD,
    one under SHARD_GRAD_OP), each kernel with the CPU ops torch writes beside it
    (``record_param_comms``, ``nccl:*``), which the reading counts once with it."""
    from test_traces import event

    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "x"}}]
    for n in (1, 2):
        t = (n - 1) * 1000.0
        events += [event(f"ProfilerStep#{n}", t, 1000.0, cat="user_annotation"),
                   event(f"ProfilerStep#{n}", t, 1000.0, cat="gpu_user_annotation", tid=7),
                   event("sm80_xmma_gemm_f16f16", t + 100, 500.0, cat="kernel", tid=7)]
        for g in range(gathers):
            events += [event("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                             t + 100 + 150 * g, 100.0, cat="kernel", tid=8),
                       event("record_param_comms", t + 95 + 150 * g, 2.0,
                             **{"Collective name": "_allgather_base"}),
                       event("nccl:_allgather_base", t + 95 + 150 * g, 3.0)]
        events += [event("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgs"
                         "Storage<4096ul>)", t + 600, 150.0, cat="kernel", tid=8),
                   event("record_param_comms", t + 595, 2.0,
                         **{"Collective name": "_reduce_scatter_base"})]
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                    "world_size": 2},
            "traceEvents": events, "deviceProperties": [{"id": 0}], "traceName": "t"}


@pytest.mark.parametrize("gathers, strategy, label", [(2, "zero3", "FSDP FULL_SHARD"),
                                                      (1, "zero2", "FSDP SHARD_GRAD_OP")])
def test_traces_of_a_sharded_job_are_read_off_their_collectives(tmp_path, capsys, gathers,
                                                                strategy, label):
    """An FSDP job's trace names all-gathers and reduce-scatters, not all-reduces: diagnose reads
    the strategy off them (two gathers a reduce-scatter: ZeRO-3; one: ZeRO-2), says so, and its
    remedies start there; before, every trace was read as DDP and FSDP jobs were told to shard
    the optimizer state. --strategy overrides the reading."""
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(_fsdp_trace(rank, gathers)))
        paths.append(str(path))
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *paths, "--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["details"]["exchange"]["strategy"] == strategy
    (note,) = [n for n in report["notes"] if n.startswith("the traces' collectives")]
    assert (f"{4 * gathers} all-gathers ({0.4 * gathers:.3g} ms), 4 reduce-scatters (0.6 ms): "
            f"all-gathers per reduce-scatter {gathers}, read as {strategy} ({label}; ") in note
    sharding = next(r for r in report["remedies"] if r["key"] == "sharding")
    assert f"({strategy} -> " in sharding["title"]
    # --grad-sync is honoured on traces (session 40; refused before); these show no micro-step
    # count, one micro-step a step, which reduces once either way: said, not refused; the
    # exchange is run and named as reducing in its one micro-step (not 'under no_sync')
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *paths, "--strategy", "zero3",
                                      "--grad-sync", "once-per-step", "--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["details"]["exchange"]["grad_sync"] == "every-micro-step"
    assert not any("no_sync" in n for n in report["notes"])
    assert any("--grad-sync once-per-step changes nothing here: accumulation 1: one micro-step "
               "per step reduces once either way" in n for n in report["notes"])
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *paths, "--strategy", "ddp",
                                      "--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["details"]["exchange"]["strategy"] == "ddp"
    assert not any(n.startswith("the traces' collectives") for n in report["notes"])


def test_an_all_reduce_trace_stays_ddp(tmp_path):
    """The seed's GPU trace (one NCCL all-reduce a step) reads as DDP, with no note."""
    from test_traces import gpu_trace, write

    from scalesim.trace_collectives import traced_exchange
    from scalesim.trace_ranks import load_traces

    paths = [str(write(tmp_path, f"rank{r}.json", gpu_trace(r))) for r in (0, 1)]
    exchange, words = traced_exchange(load_traces(paths))
    assert exchange == RunsExchange() and words == ""


# ------------------------------------------------------------- hybrid sharding (--shard-group)

@pytest.fixture(scope="module")
def hsdp_runs():
    """BERT-large under FSDP HYBRID_SHARD with a shard group of 8 (one server), otherwise the
    runs of ``fsdp_runs``, on 1-64 GPUs, made by the model (docs/model.md §16)."""
    from scalesim.schemas import ScenarioLayout

    profile = resolve_profile(None, "pcie-8gpu-100gbe", "bert-large")
    scenario = Scenario(devices=[1, 2, 4, 8, 16, 32, 64], micro_batch=16, accumulation=2,
                        strategy="zero3", layout=ScenarioLayout(shard_group=8))
    return cases.to_csv(cases._rows(profile, scenario))


def test_the_fit_reads_hybrid_sharded_runs_with_their_shard_group(hsdp_runs):
    """Read with the shard group the fit finds the links the runs were made with (25.2 and 6.8
    GB/s, within 3 and 5 %) and follows every run (rms under 1 %); read as full sharding it cannot
    (over 5 % rms) and puts the link across servers 1.3x too fast or more: only the shard's
    all-reduce across the replicas crosses servers, not every gather and reduce-scatter."""
    runs = parse_runs_text(hsdp_runs, "runs.csv")
    # the runs' 24 FSDP blocks (the preset's layers since session 41)
    blocks = BERT_LARGE.layers
    hybrid = fit_runs(runs, BERT_PARAMS, 2.0, RunsExchange("zero3", blocks=blocks, shard_group=8))
    assert hybrid.rmse_rel < 0.01
    assert hybrid.busbw_GBps("intra") == pytest.approx(25.2, rel=0.03)
    # 6.58 since the preset's 24 layers (was within 3 % at 12 estimated blocks): the fit's own
    # reading of the exchange (its rms 0.7 %) trades the two links a little, 5 % holds both
    assert hybrid.busbw_GBps("inter") == pytest.approx(6.8, rel=0.05)
    full = fit_runs(runs, BERT_PARAMS, 2.0, RunsExchange("zero3", blocks=blocks))
    assert full.rmse_rel > 0.05
    assert full.busbw_GBps("inter") > 1.3 * 6.8  # 1.38x since session 48's stretch (1.4x+)


def test_the_report_carries_the_shard_group_to_its_remedies_and_the_planner(hsdp_runs):
    from urllib.parse import parse_qs, urlsplit

    from scalesim.app.diagnose_page import planner_link

    runs = parse_runs_text(hsdp_runs, "runs.csv")
    report = diagnose_runs(runs, BERT_PARAMS, 2.0, exchange=RunsExchange("zero3", shard_group=8))
    assert ("the runs exchanged as zero3 (FSDP HYBRID_SHARD, shard group 8): the fit, the memory "
            "and every remedy start from it (docs/model.md §4)") in report.notes
    assert report.details["exchange"]["shard_group"] == 8
    assert report.details["fitted_scenario"]["layout"]["shard_group"] == 8
    sharding = next(r for r in report.remedies if r.key == "sharding")
    assert sharding.title == ("Shard the states over all 64 data-parallel ranks (HSDP shard "
                              "group 8 -> 64, zero3)")
    query = {k: v[-1] for k, v in parse_qs(urlsplit(planner_link(report)).query).items()}
    assert query["sg"] == "8" and query["strat"] == "zero3"


@pytest.mark.parametrize("flags, message", [
    (["--shard-group", "8"], "shard group 8 needs a ZeRO strategy"),
    (["--strategy", "zero3", "--zero-framework", "deepspeed", "--shard-group", "8"],
     "hybrid sharding is modelled for FSDP and Megatron-Core"),
    (["--strategy", "zero3", "--shard-group", "1"], "--shard-group 1 with --strategy zero3 is plain "
     "replication"),
    (["--strategy", "zero3", "--shard-group", "3"],
     "the run on 4 devices: shard group 3 does not divide dp 4"),
    (["--strategy", "zero3", "--shard-group", "0"], "0 is outside 1 <= x"),
])
def test_a_shard_group_that_cannot_run_is_one_line(capsys, tmp_path, hsdp_runs, flags, message):
    path = tmp_path / "runs.csv"
    path.write_text(hsdp_runs)
    code, out, err = run_cli(capsys, ["diagnose", str(path), *flags])
    assert code == 2 and not out
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_shard_group_is_a_whole_number():
    with pytest.raises(ScalesimError, match="shard_group True: expected a whole number"):
        RunsExchange("zero3", shard_group=True)


def test_the_shard_group_holds_for_the_extrapolation_too(hsdp_runs):
    """An extrapolation the shard group does not divide is refused, as predict refuses it; the
    default counts it does not divide are left out, said (audit, session 27: 24 devices at a
    shard group of 16 were predicted)."""
    runs = parse_runs_text(hsdp_runs, "runs.csv")
    with pytest.raises(ScalesimError, match="extrapolate to 24 devices: shard group 16 does not "
                                            "divide dp 24"):
        diagnose_runs(runs, BERT_PARAMS, 2.0, extrapolate_to=[24],
                      exchange=RunsExchange("zero3", shard_group=16))
    odd = parse_runs_text("devices,nodes,step_time_s,per_device_batch\n"
                          "6,1,1.0,4\n12,2,1.1,4\n", "runs.csv")  # default: 24, 48, 96
    report = diagnose_runs(odd, exchange=RunsExchange("zero3", shard_group=6))
    assert [e["devices"] for e in report.details["extrapolation"]] == [24, 48, 96]
    report = diagnose_runs(odd, exchange=RunsExchange("zero3", shard_group=12))
    assert [e["devices"] for e in report.details["extrapolation"]] == [24, 48, 96]
    wide = parse_runs_text("devices,nodes,step_time_s,per_device_batch\n"
                           "4,1,1.0,4\n6,1,1.1,4\n", "runs.csv")  # default 12, 24, 48
    report = diagnose_runs(wide, exchange=RunsExchange("zero3", shard_group=8))
    assert [e["devices"] for e in report.details["extrapolation"]] == [24, 48]
    assert any("extrapolation to 12 devices left out: shard group 8 does not divide them" in n
               for n in report.notes)


def test_a_shard_group_above_every_run_is_said_to_shard_fully(hsdp_runs):
    runs = parse_runs_text(hsdp_runs, "runs.csv")
    report = diagnose_runs(runs, BERT_PARAMS, 2.0, exchange=RunsExchange("zero3", shard_group=64))
    assert any("shard group 64 at or above every run's data-parallel ranks: each run sharded "
               "over all of them (full sharding)" in n for n in report.notes)
    assert report.details["fitted_scenario"]["layout"] is None  # full at the largest run


def test_a_shard_group_of_split_runs_counts_dp_x_cp_ranks():
    """With cp 2 a replica holds 2 context-parallel ranks of the exchange: the shard group, in
    ranks of dp x cp as --shard-group says, is half as many replicas."""
    text = ("devices,nodes,step_time_s,per_device_batch,tp,cp\n8,1,1.0,1,2,2\n16,2,1.05,1,2,2\n"
            "32,4,1.1,1,2,2\n")  # 2, 4, 8 replicas; dp x cp 4, 8, 16
    runs = parse_runs_text(text, "runs.csv")
    report = diagnose_runs(runs, exchange=RunsExchange("zero3", shard_group=8))
    assert report.details["fitted_scenario"]["layout"]["shard_group"] == 4  # replicas
    with pytest.raises(ScalesimError, match="shard group 3 .* is not a whole number of replicas"):
        diagnose_runs(runs, exchange=RunsExchange("zero3", shard_group=3))
