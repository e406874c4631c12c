"""Real calibrations on this machine: torchrun with 2 CPU processes and gloo, then a real DDP step.

Kept small (--quick flags, a 1M-parameter MLP) so the whole file takes about a minute on two
cores. Every run is a real subprocess; nothing is mocked.
"""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalesim.model import collectives as coll
from scalesim.profiles import load_profile

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
# A small GPT: heavy enough per sample that the built-in loader outpaces it (the DDP reference
# below feeds in-memory batches, so a prediction with a data stall would not be comparable).
MODEL = ["--model", "gpt", "--width", "128", "--depth", "2", "--seq-len", "64", "--vocab", "512"]
BATCHES = ["--batches", "2,4,8,16"]
DDP_BATCH = 16
# The transformer block at tensor-parallel shard shapes (docs/calibration.md, model-parallel).
# Sequence 512 (tests/tiny_gpt_calibration.py's block, session 22): at sequence 128 (60 rounds)
# the ops' fixed costs and a busy core's scheduler slices did not shrink with the shard, and in
# CI beside other tests (session 26) tp 1, 2, 4 timed 14.4, 7.4, 4.38 ms and the fit refused
# the block, so the profile had no model_parallel section; 4x the tokens give every shard 4x
# the work at the same fixed costs. 30 rounds, the CPU default.
BLOCK = ["--block-hidden", "256", "--block-seq", "512", "--block-tp", "1,2,4,8", "--block-repeats", "30"]
# Timed rounds per batch of the compute phase (and 2x as many busy/alone pairs of its co-location
# check): 16, was 8. The DDP reference is a median of 20 steps; the prediction was the noisy side
# of the comparison (83.5, 73.1, 95.3, 84.0 ms idle; 187, 176, 135, 146 ms at load 9.6).
REPEATS = "16"
# The factory models are tiny: large batches make the per-sample cost show above the overhead.
FACTORY_BATCHES = "256,1024,4096,16384"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


def torchrun(module: str, *args: str, nproc: int = 2) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        module,
        *args,
    ]


def calibrate_cli(*args: str) -> list[str]:
    """``scalesim calibrate ARGS`` as a user runs it (``--nproc-per-node N``: its own launcher)."""
    return [sys.executable, "-m", "scalesim.cli.main", "calibrate", *args]


def run(cmd: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _long_compute_run(out: Path, *flags: str) -> subprocess.Popen:
    """A 2-rank compute-phase calibration writing ``out`` (4 batch sizes x 400 repeats: long
    enough to kill or stop rank 1 in it), started in ``out``'s folder with ``flags`` added;
    stdout and stderr together, as text."""
    return subprocess.Popen(
        torchrun("scalesim.calibration", "--no-progress", *flags, "--batches", "8,16,32,64",
                 "--repeats", "400", "--phases", "compute", "--out", str(out)),
        cwd=out.parent, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _pid_of_rank_1_in_compute(out: Path, proc: subprocess.Popen) -> int:
    """Wait (up to 120 s) for rank 1's heartbeat file to say it is in the compute phase."""
    status = Path(f"{out}.state") / "ranks" / "rank-1.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            record = json.loads(status.read_text())
        except (OSError, ValueError):
            record = {}
        if record.get("phase") == "compute":
            return record["pid"]
        time.sleep(0.2)
    raise AssertionError("rank 1 never reached the compute phase")


def ddp_step_s(folder: Path, name: str) -> float:
    """One real 2-process DDP measurement of the test's model (median step of the slowest rank)."""
    ddp = run(
        torchrun(
            "scalesim.calibration.ddp_bench",
            *MODEL,
            "--batch",
            str(DDP_BATCH),
            "--steps",
            "20",
            "--warmup",
            "5",
            "--out",
            str(folder / name),
        ),
        folder,
    )
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    return json.loads((folder / name).read_text())["step_time_s"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """One 2-process calibration (every phase) and a real DDP measurement just before it."""
    folder = tmp_path_factory.mktemp("calib")
    out = folder / "profile.json"
    before = ddp_step_s(folder, "ddp-0.json")
    started = time.monotonic()
    # Messages up to 32 MiB (--quick stops at 8): large enough that the per-call latency of
    # gloo on loopback (~1.6 ms here) is a small share of the largest message's time.
    result = run(
        torchrun(
            "scalesim.calibration",
            "--quick",
            "--no-progress",
            *MODEL,
            *BATCHES,
            "--repeats",
            REPEATS,
            "--max-size-mib",
            "32",
            *BLOCK,
            "--out",
            str(out),
        ),
        folder,
    )
    wall_s = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        "profile": out,
        "stdout": result.stdout,
        "wall_s": wall_s,
        "ddp_before_s": before,
        "folder": folder,
    }


def test_profile_passes_schema_and_has_every_part(calibrated):
    profile = load_profile(calibrated["profile"])
    assert profile.fingerprint.device_count == 2
    assert profile.fingerprint.backend == "gloo"
    assert profile.hardware.devices_per_node == 2
    assert profile.compute.measured and len(profile.compute.points) >= 4
    assert profile.compute.per_sample_s > 0
    assert profile.compute.optimizer_step_s > 0
    assert 0 < profile.workload.backward_fraction < 1
    width, vocab, seq = 128, 512, 64
    block = (
        4 * width
        + (3 * width * width + 3 * width)
        + (width * width + width)
        + (4 * width * width + 4 * width)
        + (4 * width * width + width)
    )
    assert profile.workload.params == vocab * width + seq * width + 2 * block + 2 * width
    assert profile.input_pipeline is not None and profile.input_pipeline.measured
    assert [p.workers for p in profile.input_pipeline.points][:2] == [0, 1]
    assert profile.jitter is not None and len(profile.jitter.per_rank_median_s) == 2
    # Both ranks share the machine: rank 0 was timed with both busy and alone.
    assert profile.compute.colocated_devices == 2
    assert 0 <= profile.compute.colocation_slowdown < 10
    assert "alone" in profile.compute.source and "co-location:" in calibrated["stdout"]
    # a CPU run says its devices are processes of one host (session 18, device_nouns)
    assert "co-location: 2 processes of one host" in calibrated["stdout"]
    assert any("compute timed with 2 processes of one host busy" in n for n in profile.notes)
    # The summary prints the nccl-tests style table beside the fit.
    assert "busbw" in calibrated["stdout"] and "fit ms" in calibrated["stdout"]


def test_block_at_tensor_parallel_shapes_and_its_messages(calibrated):
    profile = load_profile(calibrated["profile"])
    mp = profile.model_parallel
    assert mp is not None, profile.notes
    assert mp.block.hidden == 256 and mp.block.heads == 4
    assert [p.tp for p in mp.points] == [1, 2, 4]  # tp 8 does not divide 4 heads
    assert mp.points[0].time_s > mp.points[2].time_s > 0  # a smaller shard takes less time
    assert mp.sustained_tflops > 0 and mp.memory_bandwidth_GBps > 0 and mp.rel_rmse < 1
    assert mp.peak_tflops is None and mp.matmul_efficiency is None  # CPU: no datasheet peak
    ops = {(m.op, m.purpose, m.ranks) for m in mp.messages}
    assert ops == {
        ("all_reduce", "tp", 2),
        ("reduce_scatter", "tp", 2),
        ("all_gather", "tp", 2),
        ("send_recv", "pp", 2),
    }
    activation = 512 * 256 * 4  # b*s*h fp32
    assert {m.size_bytes for m in mp.messages if m.purpose == "tp"} == {activation}
    assert {m.size_bytes for m in mp.messages if m.op == "send_recv"} == {
        activation,
        activation / 2,
        activation / 4,
    }
    assert all(m.time_s > 0 and m.model_s > 0 for m in mp.messages)
    assert "block (builtin)" in calibrated["stdout"] and "scalesim plan --profile" in calibrated["stdout"]
    # the planner reads it
    from scalesim.plan import calibrated_hardware

    hardware, efficiency, note = calibrated_hardware(profile)
    assert efficiency == 1.0 and hardware.peak_tflops == pytest.approx(mp.sustained_tflops)
    assert hardware.memory_bandwidth_GBps == pytest.approx(mp.memory_bandwidth_GBps)


def test_collective_sweep_and_fit(calibrated):
    profile = load_profile(calibrated["profile"])
    intra = next(link for link in profile.links if link.level == "intra_node")
    inter = next(link for link in profile.links if link.level == "inter_node")
    assert intra.measured
    sizes = sorted({p.size_bytes for p in intra.points if p.op == "all_reduce"})
    assert sizes[0] <= 1024 and sizes[-1] >= 8 * 2**20 and len(sizes) >= 6
    assert {p.op for p in intra.points} == {"all_reduce", "reduce_scatter", "all_gather"}
    for p in intra.points:
        assert p.busbw_GBps == pytest.approx(p.algbw_GBps * (1.0 if p.op == "all_reduce" else 0.5))
    largest = max((p for p in intra.points if p.op == "all_reduce"), key=lambda p: p.size_bytes)
    measured = largest.busbw_GBps
    fitted = profile.hardware.intra_node.busbw_GBps
    assert fitted == pytest.approx(measured, rel=0.35), (fitted, measured)
    # The fitted alpha-beta pair reproduces the largest message's measured time.
    link = profile.hardware.intra_node
    model_s = coll.ring_allreduce_s(largest.size_bytes, largest.ranks, link.latency_s, link.busbw_GBps)
    assert float(model_s) == pytest.approx(largest.time_s, rel=0.15)
    assert not inter.measured and "NOT MEASURED" in inter.note and "ethernet" in inter.note
    assert inter.method is None


def test_two_servers_time_the_inter_level_with_every_rank(tmp_path):
    """Two torchrun "servers" of 2 processes each on this machine (static rendezvous on
    localhost): the inter level is timed by one ring over all 4 ranks, as nccl-tests does
    with every GPU, and derived given the intra level; the profile records how. Batches 2 and
    16 (was 2 and 4: four processes on two cores once timed batch 4 faster than batch 2, and
    the compute phase refused the run): a per-sample cost 8x over the smaller batch's shows
    above the noise of an oversubscribed machine."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "two-servers.json"

    def node(rank: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            f"--node-rank={rank}",
            "--nproc-per-node=2",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
            "-m",
            "scalesim.calibration",
            "--quick",
            "--no-progress",
            *MODEL,
            "--batches",
            "2,16",
            "--repeats",
            "2",
            "--phases",
            "compute,collectives",
            "--out",
            str(out),
        ]

    procs = [
        subprocess.Popen(
            node(r), cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for r in (0, 1)
    ]
    outputs = [p.communicate(timeout=400) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs[0][1][-3000:] + outputs[1][1][-3000:]
    profile = load_profile(out)
    intra = next(link for link in profile.links if link.level == "intra_node")
    inter = next(link for link in profile.links if link.level == "inter_node")
    assert intra.measured and inter.measured
    assert {p.ranks for p in intra.points} == {2} and {p.ranks for p in inter.points} == {4}
    assert inter.method == "all_ranks" and inter.ranks_per_node == 2
    link = profile.hardware.inter_node
    assert link.algorithm == "gloo ring" and "all 2 ranks of each of 2 servers" in link.source
    # The inter figure is the all-ranks ring's alpha-beta fit: its latency split into 2 intra
    # hops at the intra level's alpha and 2 server-boundary hops at the inter alpha, and its
    # busbw, reproduce the largest message's time (the ring's busbw for both levels: on
    # loopback the 2-rank intra busbw can come out below the 4-rank ring's); a lower bound
    # exactly when that ring was within 90% of the intra busbw (both levels are one memory).
    largest = max((p for p in inter.points if p.op == "all_reduce"), key=lambda p: p.size_bytes)
    own = profile.hardware.intra_node
    model_s = coll.affine_s(coll.ring_coeffs(2.0, 2, 2, own.latency_s, link.busbw_GBps,
                                             link.latency_s, link.busbw_GBps), largest.size_bytes)
    assert float(model_s) == pytest.approx(largest.time_s, rel=0.25)
    intra_busbw = profile.hardware.intra_node.busbw_GBps
    assert inter.lower_bound == (link.busbw_GBps >= 0.9 * intra_busbw)
    assert ("lower bound" in inter.note) == inter.lower_bound


# Rounds of the predict-vs-measure comparison: calibration and DDP measurement alternate
# (d0 C1 d1 C2 d2 ... C4 d4, about 24 s per round in CI); each round's prediction is compared
# with the DDP run right after its calibration, and the test takes the median over rounds.
ROUNDS = 4


def test_predict_matches_a_real_ddp_step(calibrated):
    """Predicted step of 2-process DDP at batch 16 within 25% of the measured one.

    Built for a shared machine by pairing, as the emulated-cluster test does: each round
    calibrates and then measures the DDP step within the same minute, under the same load, and
    the test takes the median over ``ROUNDS`` rounds of the round's predicted / measured ratio.
    Round 1 uses the full calibration; later rounds re-time only compute and jitter
    (``--phases compute,jitter``), the parts that move with load, and keep the full
    calibration's links (its loopback all-reduce is about 5% of the step). The 25% tolerance is
    the model's, unchanged (the predicted step is about 90% compute at batch 16).

    Until 2026-12-01 it compared the fastest prediction with the fastest measurement (other work
    only adds time to a measurement). But a prediction is a fit through timings, wrong both ways:
    the fastest of four is biased low. On an idle machine it gave 0.795 (predicted 83.5, 73.1,
    95.3, 84.0 ms against measured 108.0, 97.9, 92.0, 93.0, 99.1 ms), 0.045 from failing; the
    paired median of the same numbers is 0.85; two more idle runs gave 0.851 and 0.961 (fastest
    over fastest 0.944 and 1.060). Under load each statistic has its weak side: beside one busy
    core the DDP step suffered more than the calibration (paired ratios 0.72-0.76, as this
    test's earlier docstring recorded), where the fastest pair held; beside three busy
    processes (load over 3) every calibration ran ~1.3x slower than the DDP runs between them
    and neither held. CI runs the real-process tests alone, after the others (README's test
    command).

    Since 2026-12-02 (session 20) each round's prediction is compared with the geometric mean of
    the DDP runs either side of its calibration (was the one after it), and every calibration
    times ``REPEATS`` = 16 rounds per batch (was 8): the measured step, a median of 20, was the
    steady side; the prediction, fitted from 8 rounds, spread 135-187 ms over four rounds at
    load 9.6 (3 busy loops beside other work), which passed at a paired ratio of 0.993. After:
    0.913 and 1.154 beside 3 busy loops (load 6.6, 10.1), 0.963 without them (load 5.3).
    """
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    folder = calibrated["folder"]
    base = load_profile(calibrated["profile"])
    profiles = [base]
    measured = [calibrated["ddp_before_s"], ddp_step_s(folder, "ddp-1.json")]
    for r in range(2, ROUNDS + 1):
        out = folder / f"compute-{r}.json"
        result = run(
            torchrun(
                "scalesim.calibration",
                "--quick",
                "--no-progress",
                *MODEL,
                *BATCHES,
                "--repeats",
                REPEATS,
                "--phases",
                "compute,jitter",
                "--out",
                str(out),
            ),
            folder,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        again = load_profile(out)
        profiles.append(base.model_copy(update={"compute": again.compute, "jitter": again.jitter}))
        measured.append(ddp_step_s(folder, f"ddp-{r}.json"))
    scenario = Scenario(devices=[2], micro_batch=DDP_BATCH)
    predicted = [predict(p, scenario)[0].step_time_s for p in profiles]
    # round i's prediction against the DDP runs either side of its calibration (measured[i] and
    # measured[i + 1]): their geometric mean, the load before and after the calibration saw
    bracketing = [math.sqrt(a * b) for a, b in zip(measured[:-1], measured[1:], strict=True)]
    ratios = [t / m for t, m in zip(predicted, bracketing, strict=True)]
    paired_ratio = statistics.median(ratios)
    print(
        f"calibration {calibrated['wall_s']:.1f} s; DDP step at batch {DDP_BATCH} per round: "
        "predicted "
        + ", ".join(f"{t * 1e3:.1f}" for t in predicted)
        + " ms; measured "
        + ", ".join(f"{t * 1e3:.1f}" for t in measured)
        + " ms; median paired ratio (against the runs either side) "
        f"{paired_ratio:.3f} (fastest over fastest {min(predicted) / min(measured):.3f}); "
        f"load {os.getloadavg()[0]:.1f}"
    )
    assert paired_ratio == pytest.approx(1.0, rel=0.25), (predicted, measured)


def test_user_model_and_dataset_factories_and_a_slow_rank(tmp_path):
    out = tmp_path / "user.json"
    # Through the CLI's own launcher (scalesim calibrate --nproc-per-node 2 starts torchrun).
    result = run(
        calibrate_cli("--nproc-per-node", "2", "--quick", "--no-progress",
                      "--model", "calib_factories:slow_rank_one_model",
                      "--dataset", "calib_factories:npy_dataset", "--batches", FACTORY_BATCHES,
                      "--micro-batch", "256", "--phases", "compute,loader,jitter", "--out", str(out)),
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    profile = load_profile(out)
    assert profile.workload.name == "calib_factories:slow_rank_one_model"
    assert profile.workload.params == 64 * 128 + 128 + 128 + 1
    assert "calib_factories:npy_dataset" in profile.input_pipeline.source
    assert profile.jitter.slow_rank == 1 and profile.jitter.slow_factor > 1.05
    assert not next(link for link in profile.links if link.level == "intra_node").measured


def test_a_killed_rank_stops_the_run_and_is_named(tmp_path):
    out = tmp_path / "killed.json"
    proc = _long_compute_run(out)
    victim = _pid_of_rank_1_in_compute(out, proc)
    time.sleep(1.0)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    output, _ = proc.communicate(timeout=120)
    stopped_after = time.monotonic() - killed_at
    assert proc.returncode != 0
    assert "rank 1" in output and "phase 'compute'" in output, output[-3000:]
    assert stopped_after < 60, stopped_after
    assert not out.exists()


def test_resume_keeps_finished_phases(tmp_path):
    out = tmp_path / "resume.json"
    base = calibrate_cli("--quick", "--no-progress", "--threads", "1",
                         "--model", "calib_factories:regression_model", "--batches", FACTORY_BATCHES,
                         "--out", str(out))
    first = run([*base, "--phases", "compute"], tmp_path)
    assert first.returncode == 0, first.stderr
    before = load_profile(out)
    assert before.jitter is None
    second = run([*base, "--phases", "compute,jitter", "--resume"], tmp_path)
    assert second.returncode == 0, second.stderr
    assert "compute" in second.stdout and "kept from an earlier run" in second.stdout
    after = load_profile(out)
    assert after.compute == before.compute
    assert after.jitter is not None and after.jitter.slow_rank is None
    assert (Path(f"{out}.state") / "phase-jitter.json").exists()


def test_out_of_memory_batch_is_the_ceiling(tmp_path):
    out = tmp_path / "oom.json"
    result = run(
        calibrate_cli("--quick", "--no-progress", "--threads", "1", "--model", "calib_factories:oom_model",
                      "--phases", "compute", "--batches", "256,1024,4096,16384", "--out", str(out)),
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    profile = load_profile(out)
    assert [p.micro_batch for p in profile.compute.points] == [256, 1024, 4096]
    assert profile.compute.max_micro_batch == 4096
    assert "out of memory" in profile.compute.source


@pytest.mark.parametrize(
    "factory, expected",
    [
        ("calib_factories:broken_model", "raised RuntimeError: weights file missing"),
        ("calib_factories:no_such_factory", "has no attribute 'no_such_factory'"),
        ("no_such_module:factory", "module 'no_such_module' not found"),
    ],
)
def test_bad_model_factories_give_one_clear_line(tmp_path, factory, expected):
    result = run(
        calibrate_cli("--quick", "--no-progress", "--phases", "compute", "--model", factory,
                      "--out", str(tmp_path / "x.json")),
        tmp_path,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0] and "phase 'compute'" in lines[0], lines
    assert not (tmp_path / "x.json").exists()


def test_a_factory_that_raises_under_the_cli_launcher_is_one_line(tmp_path):
    """``scalesim calibrate --nproc-per-node 2``: both ranks fail alike, rank 0 says so once,
    torchrun's traceback and failure table are dropped, exit 2."""
    result = run(
        calibrate_cli("--nproc-per-node", "2", "--quick", "--no-progress", "--phases", "compute",
                      "--model", "calib_factories:broken_model", "--out", str(tmp_path / "x.json")),
        tmp_path,
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr[-3000:]
    assert len(lines) == 1 and "weights file missing" in lines[0] and "(rank 0, 1)" in lines[0], lines


def test_a_factory_that_raises_under_torchrun(tmp_path):
    result = run(
        torchrun(
            "scalesim.calibration",
            "--quick",
            "--no-progress",
            "--phases",
            "compute",
            "--model",
            "calib_factories:broken_model",
            "--out",
            str(tmp_path / "x.json"),
        ),
        tmp_path,
    )
    assert result.returncode != 0
    assert "weights file missing" in result.stderr and "rank 0, 1" in result.stderr


def test_a_hung_rank_stops_the_run_within_the_timeout(tmp_path):
    out = tmp_path / "hung.json"
    proc = _long_compute_run(out, "--timeout", "5")
    victim = _pid_of_rank_1_in_compute(out, proc)
    os.kill(victim, signal.SIGSTOP)
    stopped_at = time.monotonic()
    ranks = Path(f"{out}.state") / "ranks"
    try:
        # Rank 0 must give up on its own: wait for it to report failure, then let rank 1 go so
        # torchrun's SIGTERM reaches it (a stopped process cannot act on it).
        while time.monotonic() - stopped_at < 60:
            record = json.loads((ranks / "rank-0.json").read_text())
            if record.get("status") == "failed":
                break
            time.sleep(0.2)
        # rank 1's last heartbeat, the one rank 0 judged (read while rank 1 is still stopped)
        last_beat = json.loads((ranks / "rank-1.json").read_text())
    finally:
        os.kill(victim, signal.SIGCONT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert record.get("status") == "failed", record
    # Silence as the ranks' own clocks saw it: from rank 1's last heartbeat to rank 0's failure
    # record, over --timeout 5 s by the monitor's rule (gives up once now - last > 5 s), within
    # the next heartbeat or two after. Was the test's clock from the SIGSTOP, 4 < t < 30: the
    # last heartbeat falls up to HEARTBEAT_S (1 s) before the stop, and the test's 0.2 s poll
    # after it, so it read 5.1-6.0 s beside 4 busy loops (load 6-12) and a heartbeat or poll
    # that a busy machine delayed past 1 s could read under 4 s; now 5.7-6.0 s there.
    silent_s = record["time_unix"] - last_beat["time_unix"]
    assert 5 < silent_s < 30, silent_s
    assert "rank 1" in output and "phase 'compute'" in output and "silent" in output, output[-3000:]
