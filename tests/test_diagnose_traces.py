"""scalesim diagnose --trace on real traces: torch.profiler around a 2-rank gloo DDP job (torchrun).

Three tiny jobs (a few steps of a 3-layer MLP on CPU): a deliberately slow data loader, one rank
deliberately slowed in every step (these two shared with test_sources_trace: conftest's
``ddp_trace_jobs``), and a different rank slowed in each step (uneven work).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_job import TRACE_SLEEP_S, assert_finished_calls, launch

from scalesim.cli.main import main
from scalesim.trace_diagnosis import diagnose_traces
from scalesim.trace_ranks import load_traces

SLEEP_S = TRACE_SLEEP_S

pytestmark = pytest.mark.slow


def run_job(out: Path, *flags: str) -> list[str]:
    files = launch(out, "--steps", "5", *flags)
    assert len(files) == 2, files
    return files


@pytest.fixture(scope="module")
def jobs(tmp_path_factory, ddp_trace_jobs):
    base = tmp_path_factory.mktemp("traces")
    uneven = run_job(base / "uneven", "--alternate-slow-s", str(SLEEP_S))
    return {**ddp_trace_jobs, "uneven": uneven}


def test_real_trace_is_read_as_pytorch_writes_it(jobs):
    summaries = load_traces(jobs["loader"])
    assert [s.rank for s in summaries] == [0, 1]
    for s in summaries:
        assert s.device == "cpu" and s.world_size == 2
        assert len(s.steps) == 5
        assert "gloo:all_reduce" in s.collectives
        assert s.median("comm_s") > 0 and s.median("compute_s") > 0
        for st in s.steps:
            parts = st.compute_s + st.exposed_comm_s + st.data_wait_s + st.idle_s
            assert parts == pytest.approx(st.step_s, rel=1e-6)


def test_slow_data_loader_is_the_input_pipeline(jobs):
    summaries = load_traces(jobs["loader"])
    report = diagnose_traces(summaries, "loader")
    assert report.cause.key == "input_pipeline", report.to_text()
    assert report.details["cross_rank"]["data_wait_s"] >= 0.8 * SLEEP_S
    assert report.first_remedy is not None and report.first_remedy.key == "loader"


def test_slowed_rank_is_a_device_far_slower(jobs):
    summaries = load_traces(jobs["slow_rank"])  # gzipped traces
    report = diagnose_traces(summaries, "slow rank")
    assert report.cause.key == "slow_device", report.to_text()
    cr = report.details["cross_rank"]
    assert cr["slowest_rank"] == 1 and cr["slowest_consistency"] >= 0.8
    assert cr["straggler_wait_s"] >= 0.7 * SLEEP_S
    assert report.first_remedy is not None and report.first_remedy.key == "slow_device"


def test_alternating_slow_rank_is_stragglers(jobs):
    report = diagnose_traces(load_traces(jobs["uneven"]), "uneven")
    assert report.cause.key == "stragglers", report.to_text()
    assert report.details["cross_rank"]["slowest_consistency"] <= 0.6


def test_cli_on_traces(jobs, capsys):
    assert main(["diagnose", "--trace", *jobs["slow_rank"]]) == 0
    text = capsys.readouterr().out
    # the ranks ran on CPU (gloo): the cause names a process (session 20, device_nouns)
    assert "Likely cause: A process far slower than the others" in text
    assert main(["diagnose", "--trace", *jobs["loader"], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cause"]["key"] == "input_pipeline"
    assert set(data["details"]["per_step"]) == {"0", "1"}


def test_truncated_real_trace_is_an_error(jobs, tmp_path, capsys):
    text = Path(jobs["loader"][0]).read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) * 2 // 3])
    assert main(["diagnose", "--trace", str(cut)]) == 2
    err = capsys.readouterr().err.strip()
    assert "ends early" in err and "\n" not in err


@pytest.mark.parametrize("fsdp, strategy", [("full", "zero3"), ("grad-op", "zero2")])
def test_a_real_fsdp_jobs_traces_read_as_its_zero_stage(tmp_path, jobs, fsdp, strategy):
    """Session 25: a 2-rank gloo job sharded by FSDP2 (tests/trace_job.py --fsdp, 3 units):
    FULL_SHARD gathers each unit before forward and again before backward, 6 times a step,
    SHARD_GRAD_OP 3 times; on gloo (no reduce-scatter) each unit's gradients are all-reduced,
    3 a step. Diagnose reads
    ZeRO-3 and ZeRO-2 off them, and the DDP job's traces stay DDP, with no note."""
    summaries = load_traces(run_job(tmp_path / fsdp, "--fsdp", fsdp))
    assert_finished_calls(summaries[0], {  # 5 steps
        "gloo:all_gather": 30 if fsdp == "full" else 15, "gloo:all_reduce": 15})
    report = diagnose_traces(summaries, fsdp)
    assert report.details["exchange"]["strategy"] == strategy
    assert any(n.startswith("the traces' collectives") and f"read as {strategy}" in n
               for n in report.notes)
    ddp = diagnose_traces(load_traces(jobs["loader"]), "loader")
    assert ddp.details["exchange"]["strategy"] == "ddp"
    assert not any(n.startswith("the traces' collectives") for n in ddp.notes)


def test_a_real_tensor_parallel_jobs_layout_is_read_from_its_process_groups(tmp_path):
    """Session 26: 4 gloo ranks as a DeviceMesh ("dp", "tp") of 2 x 2 (tests/trace_job.py
    --tp-sp): the tp group all-gathers activations in forward and all-reduces their gradient in
    backward, DDP exchanges over the dp group. Every collective read as the exchange, the
    gathers made this ZeRO-2; the traces' pg_config names mesh_dp and mesh_tp, gloo names no
    group with its collectives, so the layout is read and the strategy is left to --strategy."""
    files = launch(tmp_path / "tp", "--steps", "5", "--tp-sp", ranks=4)
    summaries = load_traces(files)
    assert len(summaries) == 4
    assert_finished_calls(summaries[0], {"gloo:all_gather": 10})  # 2 layers x 5 steps
    report = diagnose_traces(summaries, "tp")
    assert report.details["layout"] == {"dp": 2, "tp": 2, "cp": 1, "pp": 1}
    assert report.details["exchange"]["strategy"] == "ddp"
    assert any("split the model (tp 2 x dp 2: mesh_dp 2, mesh_tp 2)" in n and "--strategy" in n
               for n in report.notes)
