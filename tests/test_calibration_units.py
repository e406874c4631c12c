"""Calibration pieces that need no second process: sizes, worker counts, jitter verdicts, flags,
unmeasured links, resume signatures, and the watchdog's verdict on dead or silent ranks."""

from __future__ import annotations

import json
import os
import subprocess
import time

import numpy as np
import pytest
from scalesim.calibration import options
from scalesim.calibration.collective_phase import message_sizes, parse_inter_link, unmeasured_level
from scalesim.calibration.compute_phase import colocation_slowdown
from scalesim.calibration.dist import DistContext, RankMonitor
from scalesim.calibration.jitter_phase import summarize
from scalesim.calibration.loader_phase import worker_counts
from scalesim.calibration.results import NoiseResult, PhaseRecord
from scalesim.calibration.state import load_matching, pid_alive, save

from scalesim import presets
from scalesim.errors import ScalesimError


def parse(*argv: str):
    return options.build_parser().parse_args(list(argv))


def test_message_sizes_span_the_sweep():
    sizes = message_sizes(1, 256, 2)
    assert sizes[0] == 1024 and sizes[-1] == 256 * 2**20 and len(sizes) == 19
    assert message_sizes(1, 32, 4)[-2:] == [16 * 2**20, 32 * 2**20]
    with pytest.raises(ScalesimError):
        message_sizes(4096, 1, 2)


def test_worker_counts_cover_zero_to_the_cores():
    assert worker_counts(2) == [0, 1, 2]
    assert worker_counts(6) == [0, 1, 2, 4, 6]
    assert worker_counts(0) == [0]


def test_jitter_names_a_consistently_slow_rank():
    rng = np.random.default_rng(1)
    times = rng.normal(0.100, 0.002, size=(4, 40))
    times[2] *= 1.2
    jitter, share = summarize(times.tolist(), threshold=1.05)
    assert jitter.slow_rank == 2 and jitter.slow_factor == pytest.approx(1.2, rel=0.03)
    assert share > 0.9 and jitter.step_time_cv == pytest.approx(0.02, rel=0.3)


@pytest.mark.parametrize("slowest_steps, named", [(21, True), (20, False)])
def test_jitter_slow_rank_needs_most_steps(slowest_steps, named):
    """The same 'slowest in most steps' rule as diagnose and calibrate --from-trace
    (stragglers.slowest_in_most_steps): of 4 ranks x 40 steps, a strict majority (21) is far
    beyond chance (0.0002), 20 is not a majority."""
    times = np.array([[0.1000] * 40, [0.1001] * 40, [0.0990] * 40, [0.1002] * 40])
    times[2, :slowest_steps] = 0.15  # rank 2 the slowest in these steps
    times[3, slowest_steps:] = 0.20  # rank 3 in the others
    jitter, share = summarize(times.tolist(), threshold=1.05)
    assert share == pytest.approx(max(slowest_steps, 40 - slowest_steps) / 40)
    assert (jitter.slow_rank is not None) is named
    if named:
        assert jitter.slow_rank == 2


def test_jitter_spread_is_robust_to_a_few_bursts():
    """The CV is the normal-consistent IQR: a normal's std, not inflated by rare outliers."""
    rng = np.random.default_rng(3)
    times = rng.normal(0.100, 0.003, size=(2, 200))
    clean, _ = summarize(times.tolist(), threshold=1.05)
    times[:, ::25] *= 1.8  # a burst from another process every 25 steps
    bursty, _ = summarize(times.tolist(), threshold=1.05)
    assert clean.step_time_cv == pytest.approx(0.03, rel=0.2)
    assert bursty.step_time_cv == pytest.approx(clean.step_time_cv, rel=0.25)
    assert float(np.median(times.std(axis=1) / times.mean(axis=1))) > 3 * bursty.step_time_cv


def test_colocation_slowdown_from_pairs():
    rng = np.random.default_rng(4)
    alone = rng.normal(0.070, 0.002, size=20)
    # Pure noise: no slowdown is recorded.
    assert colocation_slowdown(alone * rng.normal(1.0, 0.02, size=20), alone)[0] == 0.0
    # A real 10% slowdown is found, even with a drift of the machine's speed over the pairs.
    drift = np.linspace(1.0, 1.3, 20)
    busy = alone * 1.10 * rng.normal(1.0, 0.01, size=20)
    found, (q1, q2, q3) = colocation_slowdown(busy * drift, alone * drift)
    assert found == pytest.approx(0.10, abs=0.02) and q1 <= q2 <= q3
    # Bursts in a fifth of the busy steps do not move it.
    bursty = busy.copy()
    bursty[::5] *= 1.6
    assert colocation_slowdown(bursty, alone)[0] == pytest.approx(found, abs=0.02)


def test_jitter_names_no_rank_when_all_are_alike():
    rng = np.random.default_rng(2)
    jitter, _ = summarize(rng.normal(0.1, 0.01, size=(4, 40)).tolist(), threshold=1.05)
    assert jitter.slow_rank is None and jitter.slow_factor == 1.0
    single, _ = summarize([[0.1, 0.11, 0.09]], threshold=1.05)
    assert single.slow_rank is None and len(single.per_rank_median_s) == 1


def test_flags_survive_the_trip_to_a_child_process():
    args = parse("--quick", "--batches", "4,8,16,32", "--model", "cnn", "--timeout", "30",
                 "--phases", "compute,loader", "--inter-link", "infiniband:8x200")
    assert parse(*options.to_argv(args)) == args


def test_bad_flags_are_rejected_by_the_parser(capsys):
    for argv in (["--phases", "compute,warp"], ["--batches", "4,x"], ["--ops", "broadcast"]):
        with pytest.raises(SystemExit):
            parse(*argv)
    assert "unknown" in capsys.readouterr().err


def test_inter_link_not_measured_says_where_it_came_from():
    link, cal = unmeasured_level("inter_node", parse(), why="one node")
    preset = presets.inter_link("ethernet", 1, 100)
    assert link.busbw_GBps == preset.busbw_GBps and link.latency_s == preset.latency_s
    assert not cal.measured and "NOT MEASURED (one node)" in cal.note and "ethernet:1x100" in cal.note
    link, cal = unmeasured_level("inter_node", parse("--inter-link", "infiniband:4x100",
                                                     "--inter-busbw", "40"), "one node")
    assert link.busbw_GBps == 40 and link.nics_per_node == 4
    assert "40 GB/s from the user's flag" in cal.note
    # the same as fields, for readers that must not parse the note (scalesim predict's notes)
    assert cal.not_measured_because == "one node"
    assert cal.numbers_from == "preset infiniband:4x100; busbw 40 GB/s from the user's flag"
    assert parse_inter_link("roce:2x200") == ("roce", 2, 200.0)
    with pytest.raises(ScalesimError):
        parse_inter_link("ethernet")


def test_resume_reuses_only_phases_with_the_same_signature(tmp_path):
    record = PhaseRecord(phase="noise", signature={"world": 2}, wall_s=1.0,
                         result=NoiseResult(note="x").model_dump(mode="json"))
    save(tmp_path, record)
    kept, notes = load_matching(tmp_path, ["noise", "compute"], {"world": 2})
    assert set(kept) == {"noise"} and not notes
    kept, notes = load_matching(tmp_path, ["noise"], {"world": 4})
    assert not kept and "world" in notes[0]
    (tmp_path / "phase-noise.json").write_text("{broken")
    kept, notes = load_matching(tmp_path, ["noise"], {"world": 2})
    assert not kept and "unreadable" in notes[0]


def _context(world: int):
    import torch

    return DistContext(rank=0, world=world, local_rank=0, local_world=world, node=0, nodes=1,
                       backend="gloo", device=torch.device("cpu"), launched=True, run_id="r1")


def _status(monitor: RankMonitor, rank: int, **fields) -> None:
    record = {"run_id": "r1", "rank": rank, "pid": os.getpid(), "pidns": monitor.pidns,
              "host": monitor.host, "phase": "collectives", "status": "running",
              "time_unix": time.time()}
    record.update(fields)
    monitor.status_file(rank).write_text(json.dumps(record))


def test_watchdog_names_a_dead_rank_and_a_silent_one(tmp_path):
    monitor = RankMonitor(_context(3), tmp_path, silent_s=5.0, phase_limit_s=100.0)
    monitor.folder.mkdir(parents=True)
    _status(monitor, 1)
    _status(monitor, 2)
    assert monitor.problem() is None
    gone = subprocess.Popen(["true"])
    gone.wait()
    _status(monitor, 1, pid=gone.pid)
    assert "rank 1" in monitor.problem() and "died during phase 'collectives'" in monitor.problem()
    _status(monitor, 1)
    _status(monitor, 2, time_unix=time.time() - 30, phase="compute")
    assert "rank 2" in monitor.problem() and "silent" in monitor.problem()
    _status(monitor, 2, time_unix=time.time() - 30, status="done")
    _status(monitor, 1, run_id="an-older-run", pid=gone.pid)
    assert monitor.problem() is None


def test_pid_alive_is_the_one_liveness_check_of_the_watchdog_and_the_netns_harness():
    """``state.pid_alive`` serves the rank watchdog (``dist.RankMonitor``) and the emulated
    cluster's ``cleanup_stale`` (each had its own copy): this process lives, a reaped child does
    not, and pid 1 counts as alive even where signalling it is refused."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert pid_alive(os.getpid()) and pid_alive(1) and not pid_alive(gone.pid)


def _points(op, sizes, ranks, latency_s, busbw_GBps, slow_top=1.0):
    from scalesim.model import collectives as coll
    from scalesim.schemas import CollectivePoint

    model = coll.ring_allreduce_s if op == "all_reduce" else coll.ring_reduce_scatter_s
    rows = []
    for i, s in enumerate(sizes):
        t = float(model(s, ranks, latency_s, busbw_GBps / (slow_top if i == len(sizes) - 1
                                                           else 1.0)))
        rows.append(CollectivePoint(op=op, size_bytes=s, ranks=ranks, time_s=t,
                                    algbw_GBps=float(coll.algbw_GBps(s, t)),
                                    busbw_GBps=float(coll.busbw_from_time_GBps(op, s, ranks, t))))
    return rows


@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter"])
def test_link_fit_recovers_alpha_and_beta_of_exact_ring_timings(op):
    from scalesim.calibration.collective_phase import busbw_with_latency_GBps, fit_level

    rows = _points(op, message_sizes(1, 64, 4), 4, 20e-6, 12.5)
    fit = fit_level(rows)[op]
    assert fit["latency_s"] == pytest.approx(20e-6, rel=1e-6)
    assert fit["busbw_GBps"] == pytest.approx(12.5, rel=1e-6) and fit["rel_rmse"] < 1e-6
    assert busbw_with_latency_GBps(op, rows[-3:], 20e-6) == pytest.approx(12.5, rel=1e-9)


def test_link_beta_follows_the_largest_message_when_bandwidth_drops():
    from scalesim.calibration.collective_phase import fit_level

    rows = _points("all_reduce", message_sizes(1, 32, 4), 2, 300e-6, 1.5, slow_top=1.5)
    fit = fit_level(rows)["all_reduce"]
    largest = rows[-1]
    assert fit["busbw_GBps"] == pytest.approx(1.0, rel=0.01)  # the 32 MiB row's bandwidth
    assert fit["busbw_all_sizes_GBps"] > 1.2  # what one fit over every size would have said
    assert largest.busbw_GBps == pytest.approx(fit["busbw_GBps"], rel=0.05)


def test_message_sizes_below_one_element_are_refused():
    from scalesim.calibration.collective_phase import message_sizes

    from scalesim.errors import ScalesimError

    with pytest.raises(ScalesimError, match="below one 4-byte element"):
        message_sizes(0.0001, 1, 2)
    assert message_sizes(1, 1, 4) == [1024, 4096, 16384, 65536, 262144, 1048576]


def _flat_ring_points(g, nodes, intra, inter):
    """Exact all-reduce timings of NCCL's ring over ``g`` ranks in each of ``nodes`` servers
    (``collectives.ring_coeffs``: 2(p-N) intra and 2(N-1) inter hops, the slower busbw;
    latency_s, busbw_GBps per level)."""
    from scalesim.model import collectives as coll
    from scalesim.schemas import CollectivePoint

    a, c = coll.ring_coeffs(2.0, g, nodes, intra[0], intra[1], inter[0], inter[1])
    rows = []
    for s in message_sizes(1, 64, 4):
        t = float(a + c * s)
        rows.append(CollectivePoint(op="all_reduce", size_bytes=s, ranks=g * nodes, time_s=t,
                                    algbw_GBps=float(coll.algbw_GBps(s, t)),
                                    busbw_GBps=float(coll.busbw_from_time_GBps(
                                        "all_reduce", s, g * nodes, t))))
    return rows


@pytest.mark.parametrize("inter, expected, lower_bound", [
    # Network slower than the servers' inside: the all-ranks ring busbw is the inter level's.
    ((30e-6, 2.0), (30e-6, 2.0), False),
    # Network faster: the ring ran at the intra busbw, so the inter level is at least that;
    # the inter hop's 3 us is recovered although below the intra hop's 5 us.
    ((3e-6, 50.0), (3e-6, 20.0), True),
])
def test_inter_level_from_every_rank_given_the_intra_level(inter, expected, lower_bound):
    """2 servers x 2 ranks, intra alpha 5 us / busbw 20 GB/s. NCCL's ring over all 4 ranks takes
    2[2*5 us + 1*a_inter] + 1.5*S/min(B) (docs/model.md §2), so its fit gives the slowest
    level's busbw and, given the intra alpha, the inter hop's alpha."""
    from scalesim.calibration.collective_phase import derive_inter_level, fit_level

    intra_fit = fit_level(_points("all_reduce", message_sizes(1, 64, 4), 2, 5e-6, 20.0))
    all_fit = fit_level(_flat_ring_points(2, 2, (5e-6, 20.0), inter))
    latency, busbw, bound, method = derive_inter_level(all_fit["all_reduce"],
                                                       intra_fit["all_reduce"], 2, 2)
    assert (latency, busbw) == pytest.approx(expected, rel=1e-6)
    assert bound is lower_bound and method == "all_ranks"
    # One rank per server: the ring is the inter level itself, nothing to derive.
    assert derive_inter_level(all_fit["all_reduce"], None, 1, 2)[2:] == (False, "one_rank")


def test_inter_latency_is_the_boundary_hops_share_of_the_all_ranks_ring():
    """2 servers x 8 GPUs: a ring fitted at 2 us per step (60 us = 30 steps x 2 us for a tiny
    all-reduce) with intra hops of 1 us leaves (15 x 2 - 14 x 1) / 1 = 16 us for each
    server-boundary hop. Taking 2 us as alpha_inter (before) made the model predict
    2(14 x 1 + 1 x 2) = 32 us for the 60 us measured; with 16 us it is 2(14 + 16) = 60 us."""
    from scalesim.calibration.collective_phase import derive_inter_level

    from scalesim.model import collectives as coll

    latency, _, _, _ = derive_inter_level({"latency_s": 2e-6, "busbw_GBps": 20.0},
                                          {"latency_s": 1e-6, "busbw_GBps": 200.0}, 8, 2)
    assert latency == pytest.approx(16e-6)
    a, _ = coll.ring_coeffs(2.0, 8, 2, 1e-6, 200.0, latency, 20.0)
    assert a == pytest.approx(60e-6)
    # 4 servers x 4: (15 x 3 - 12 x 2) / 3 = 7 us; intra hops alone slower than the ring: 0
    assert coll.ring_inter_latency_s(3e-6, 4, 4, 2e-6) == pytest.approx(7e-6)
    assert coll.ring_inter_latency_s(1e-6, 4, 4, 2e-6) == 0.0
    assert coll.ring_inter_latency_s(3e-6, 8, 1, 2e-6) == pytest.approx(3e-6)


def test_one_rank_on_a_server_with_idle_gpus_is_a_lower_bound(monkeypatch):
    """One process per 8-GPU server reaches only the NICs near its GPU: 7 idle GPUs make its
    figure a lower bound of the server's busbw; on CPU (or all GPUs busy) nothing is idle."""
    import torch
    from scalesim.calibration.collective_phase import idle_devices

    ctx = DistContext(rank=0, world=2, local_rank=0, local_world=1, node=0, nodes=2,
                      backend="nccl", device=torch.device("cuda", 0), launched=True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    assert idle_devices(ctx) == 7
    assert idle_devices(DistContext(**{**ctx.__dict__, "local_world": 8})) == 0
    assert idle_devices(DistContext(**{**ctx.__dict__, "device": torch.device("cpu")})) == 0


def test_ranks_agree_on_a_failure_in_one_message_naming_every_failed_rank(monkeypatch):
    """One agreement for every phase (``dist.agree_on_error``; the compute phase's statuses go
    through it): payloads come back when no rank failed; otherwise every rank raises the first
    failure, naming all ranks that failed."""
    from types import SimpleNamespace

    from scalesim.calibration import compute_phase
    from scalesim.calibration import dist as cdist

    others = []  # what ranks 1.. send; this process is rank 0
    monkeypatch.setattr(cdist, "gather_object", lambda ctx, obj: [obj, *others])
    ctx = SimpleNamespace(world=3)
    others[:] = [(None, 2), (None, 3)]
    assert cdist.agree_on_error(ctx, None, 1) == [1, 2, 3]
    others[:] = [("disk full", 2), ("no weights", 3)]
    with pytest.raises(cdist.AgreedError, match=r"^disk full \(rank 1, 2\)$"):
        cdist.agree_on_error(ctx, None, 1)
    with pytest.raises(cdist.AgreedError, match=r"^no model \(rank 0, 1, 2\)$"):
        cdist.agree_on_error(ctx, "no model", 1)
    others[:] = [(None, ("oom", 0.0)), (None, ("ok", 2.0))]
    assert compute_phase._agree(ctx, "ok", 1.0) == [("ok", 1.0), ("oom", 0.0), ("ok", 2.0)]
    with pytest.raises(cdist.AgreedError, match=r"^micro-batch 4 raised \(rank 0\)$"):
        compute_phase._agree(ctx, "error: micro-batch 4 raised", 0.0)
    others[:] = []
    with pytest.raises(cdist.AgreedError, match=r"^alone$"):
        cdist.agree_on_error(SimpleNamespace(world=1), "alone")


def test_a_timed_point_is_the_median_over_ranks_of_each_ranks_median():
    """``timing.over_ranks``, for the compute and the block phase alike."""
    from scalesim.calibration.timing import over_ranks

    fast = ({8: [1.0, 1.0, 2.0, 9.0]}, {8: [2.0, 2.0, 2.0, 2.0]})  # steps 3, 3, 4, 11
    slow = ({8: [2.0, 2.0, 2.0, 2.0]}, {8: [4.0, 4.0, 4.0, 4.0]})  # steps 6 x 4
    step, spread, forward, backward = over_ranks([fast, slow], 8)
    assert step == pytest.approx((3.5 + 6.0) / 2)  # rank medians 3.5 and 6
    assert spread == pytest.approx((2.75 + 0.0) / 2)  # IQRs: 5.75 - 3.0 (numpy), and 0
    assert (forward, backward) == (pytest.approx((1.5 + 2.0) / 2), pytest.approx(3.0))


def test_an_unexpected_exception_is_said_in_one_line():
    from scalesim.calibration.dist import first_line, raised

    assert raised(RuntimeError("CUDA error: bad\nstack trace...")) == "RuntimeError: CUDA error: bad"
    assert raised(KeyError()) == "KeyError: " and first_line(ValueError("  \n")) == ""


@pytest.mark.parametrize("flags, says", [
    (["--intra-link", "foo"], "argument --intra-link: unknown intra-node link 'foo'"),
    (["--inter-link", "ib:8x"], "argument --inter-link: 'ib:8x': write KIND:NICSxGBIT"),
    (["--inter-link", "ib:8x200"], "'ib:8x200': unknown inter-node link 'ib'"),
    (["--inter-link", "infiniband:0x200"], "NICs per server: 0 is outside"),
    (["--inter-link", "infiniband:8xnan"], "Gbit/s per NIC: nan is not a finite number"),
    (["--min-size-kib", "2048", "--max-size-mib", "1"], "--min-size-kib 2048 is above "
     "--max-size-mib 1"),
    (["--quick", "--min-size-kib", "100000"], "--min-size-kib 100000 is above --max-size-mib 8"),
])
def test_collective_flags_are_refused_before_the_first_phase(tmp_path, capsys, monkeypatch, flags,
                                                             says):
    """`calibrate --inter-link ib:8x` (or an unknown --intra-link, or a smallest message above
    the largest) was refused only when the collectives phase started: after the compute phase
    had run (minutes on a GPU). Each is one line before any phase now: here the compute phase's
    model is a module that does not exist, so its error would come first if one ran."""
    from scalesim.cli.main import main

    monkeypatch.chdir(tmp_path)
    argv = ["calibrate", *flags, "--out", "p.json", "--no-progress", "--model",
            "scalesim_no_such_module:factory"]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert says in err and "no_such_module" not in err, err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("steps", ["1", "3"])
def test_too_few_jitter_steps_are_refused_before_measuring(tmp_path, monkeypatch, capsys, steps):
    """`calibrate --jitter-steps 1` measured and wrote `step-time CV 0.000`: the spread is read
    from the steps' quartiles, and one step has none, so the profile said 'no jitter' as a
    measurement. Fewer than 4 steps are refused before anything runs."""
    from scalesim.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main(["calibrate", "--jitter-steps", steps, "--out", "p.json", "--no-progress",
                 "--model", "scalesim_no_such_module:factory"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"--jitter-steps {steps}: the step-time spread" in err and "4 or more" in err, err
