"""The emulated two-server cluster: its links, its clean-up, and the calibrate -> predict ->
measure experiment run on it (issue 4).

Accuracy figures are printed and recorded in docs/emulated-cluster.md, not asserted; what is
asserted is what must hold: the slow link really is slow, the namespaces always go away, the
profile has both links measured, and the knee is in both the predicted and the measured curve.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
from netns_fixture import HARNESS_PATH, emulated_cluster, load_harness, require_namespaces

pytestmark = pytest.mark.slow
__all__ = ["emulated_cluster"]  # the fixture, imported for pytest to find


def _alive(names):
    nc = load_harness()
    return set(names) & set(nc.list_namespaces())


def test_veth_is_shaped_to_the_tc_rate_and_loopback_is_not(emulated_cluster):
    rate = emulated_cluster.rate_mbit
    for server in (0, 1):
        assert f"rate {rate:g}Mbit" in emulated_cluster.qdisc(server)
    a_to_b = emulated_cluster.transfer_Mbps(0, 1)
    b_to_a = emulated_cluster.transfer_Mbps(1, 0)
    loopback = emulated_cluster.transfer_Mbps(0, 0, size_bytes=64 * 2**20)
    print(f"\nveth a->b {a_to_b:.0f} Mbit/s, b->a {b_to_a:.0f} Mbit/s (tc rate {rate:g}); "
          f"loopback {loopback:.0f} Mbit/s")
    for measured in (a_to_b, b_to_a):
        assert 0.75 * rate <= measured <= 1.1 * rate
    assert loopback > 5 * rate


def test_torchrun_two_nodes_gloo_allreduce_across_namespaces(emulated_cluster, tmp_path):
    nc = load_harness()
    records = nc.allreduce_across(emulated_cluster, nproc_per_node=2, out_dir=str(tmp_path))
    assert [r["rank"] for r in records] == [0, 1, 2, 3]
    assert {r["world"] for r in records} == {4}
    assert sorted(r["node"] for r in records) == [0, 0, 1, 1]
    assert all(r["sum"] == 4.0 and r["uniform"] for r in records)


def test_a_failing_launch_says_why_and_leaves_nothing_running(emulated_cluster):
    nc = load_harness()
    with pytest.raises(nc.ClusterError, match="unknown internal command _nope"):
        emulated_cluster.launch(2, 1, [str(HARNESS_PATH), "_nope"], timeout_s=120)
    for ns in emulated_cluster.names:
        assert subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split() == []


def test_namespaces_removed_when_the_body_raises():
    nc = require_namespaces()
    names = []
    with pytest.raises(RuntimeError, match="deliberate"), nc.EmulatedCluster() as cluster:
        names = cluster.names
        assert _alive(names) == set(names)
        raise RuntimeError("deliberate failure inside the cluster")
    assert names and not _alive(names)


def test_fixture_removes_namespaces_after_a_failing_test(tmp_path):
    require_namespaces()
    record = tmp_path / "names.json"
    inner = tmp_path / "test_inner.py"
    inner.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(HARNESS_PATH.parents[1] / "tests")!r})
        from netns_fixture import emulated_cluster

        def test_fails(emulated_cluster):
            with open({str(record)!r}, "w") as f:
                json.dump(emulated_cluster.names, f)
            assert False, "deliberate failure"
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(inner)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-2000:]
    names = json.loads(record.read_text())
    assert len(names) == 2 and not _alive(names)


def test_interpreter_exit_without_close_still_removes_them(tmp_path):
    require_namespaces()
    script = (f"import sys; sys.path.insert(0, {str(HARNESS_PATH.parent)!r}); "
              "import json, netns_cluster as nc; c = nc.EmulatedCluster().open(); "
              "print(json.dumps(c.names)); sys.exit(3)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3, done.stderr
    names = json.loads(done.stdout)
    assert len(names) == 2 and not _alive(names)


def test_cleanup_stale_removes_what_a_killed_run_left():
    nc = require_namespaces()
    script = (f"import sys, os, signal; sys.path.insert(0, {str(HARNESS_PATH.parent)!r}); "
              "import json, netns_cluster as nc; c = nc.EmulatedCluster().open(); "
              "print(json.dumps(c.names), flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == -signal.SIGKILL
    names = json.loads(done.stdout)
    assert _alive(names) == set(names)  # SIGKILL skips atexit: they are left behind...
    with nc.EmulatedCluster() as live:  # ...and a live run's namespaces must survive clean-up
        removed = nc.cleanup_stale()
        assert set(names) <= set(removed)
        assert _alive(live.names) == set(live.names)
    assert not _alive(names)
    assert not set(live.names) & set(removed)


def test_calibrate_predict_measure_shows_the_knee_in_both_curves(emulated_cluster, tmp_path):
    """Issue 4's experiment end to end; the accuracy figures are printed, not asserted.

    Built to hold on a busy machine: two rounds, each calibrating compute right before its
    own measurements (same minute, same load), efficiencies taken within a round and then their
    medians over rounds (``compare``); and a slow link (netns_fixture.TEST_RATE_MBIT). Rounds
    are lighter than the benchmark's (two compute sizes, 6 timed repeats, 10 timed DDP steps)
    to keep the test short; a third round (65 s) bought nothing the assertion needs. Link
    messages stop at 2 MiB (the benchmark's 8 MiB took 58 s to calibrate the links here, 2 MiB
    about 30 s): 2 MiB over the veth takes ~250 ms per all-reduce, far above gloo's ~1 ms
    latency, so the largest message still shows the veth's rate.

    Asserted: crossing the server boundary costs at least 10 efficiency points in both curves
    (the seed's knee; seen at 31.8 measured and 46.2 predicted points, 2026-12-01). Where the
    *largest* drop sits is printed, not asserted: both emulated servers share this machine's 2
    cores, so under other load two ranks in one server lose efficiency to the host's
    oversubscription (one rank alone gets 2/5 of the cores beside four busy processes, two get
    2/6 each, and each all-reduce waits for a descheduled partner). In two of five runs beside
    four busy processes (load 8-14) the in-server drop was the larger, once in the measured
    curve and once in the predicted one (co-location calibrated at +61% and +48% in two
    rounds); keeping the boundary's larger under any load would need the exchange to take over
    twice the loaded step (below 30 Mbit/s here), minutes more per run. The benchmark
    (benchmarks/netns_cluster.py, docs/emulated-cluster.md) records where the knee sits on an
    idle machine: at the boundary in both curves.
    """
    from scalesim.profiles import parse_profile

    nc = load_harness()
    cfg = nc.ExperimentConfig(rate_mbit=emulated_cluster.rate_mbit, rounds=2, steps=10, warmup=3,
                              compute_batches=(256, 1024), compute_repeats=6,
                              link_max_size_mib=2.0)
    report, profile = nc.run_experiment(cfg, tmp_path, cluster=emulated_cluster)
    print("\n" + nc.render_markdown(report))

    # The profile is valid and measured both links, and they are the links the cluster has.
    assert parse_profile(json.loads(profile.model_dump_json())) == profile
    assert report["links_measured"] == {"intra_node": True, "inter_node": True}
    assert profile.hardware.devices_per_node == 2 and profile.compute.measured
    # Issue 10: the inter level is one ring over all 4 ranks of both servers; the veth limits
    # it, so the derived inter busbw is the veth's rate (a ring's busbw is its slowest edge's),
    # not a lower bound, and the profile says it was measured that way. (Its own test before:
    # it calibrated the links again, 55 s of CI, for what this run's links already show.)
    inter = next(link for link in profile.links if link.level == "inter_node")
    assert inter.measured and inter.method == "all_ranks" and inter.ranks_per_node == 2
    assert {p.ranks for p in inter.points} == {4} and not inter.lower_bound
    largest = max((p for p in inter.points if p.op == "all_reduce"), key=lambda p: p.size_bytes)
    inter_Mbps = largest.busbw_GBps * 8e3  # ring busbw = the slowest edge's rate, the veth's
    print(f"veth {cfg.rate_mbit:g} Mbit/s; all-ranks ring: largest all-reduce busbw "
          f"{inter_Mbps:.0f} Mbit/s, fitted inter busbw "
          f"{profile.hardware.inter_node.busbw_GBps * 8e3:.0f} Mbit/s, intra "
          f"{profile.hardware.intra_node.busbw_GBps:.3g} GB/s")
    assert 0.6 * cfg.rate_mbit <= inter_Mbps <= 1.1 * cfg.rate_mbit
    assert (0.6 * cfg.rate_mbit <= profile.hardware.inter_node.busbw_GBps * 8e3
            <= 1.2 * cfg.rate_mbit)
    assert profile.hardware.intra_node.busbw_GBps > 5 * profile.hardware.inter_node.busbw_GBps

    # The seed's knee: efficiency drops across the slow link, in both curves.
    rows = report["comparison"]["rows"]
    assert [(r["servers"], r["devices"]) for r in rows[:3]] == [(1, 1), (1, 2), (2, 2)]
    assert all(r["measured_step_s"] > 0 and r["predicted_step_s"] > 0 for r in rows)
    for key in ("predicted", "measured"):
        inside, across = rows[1][f"{key}_efficiency"], rows[2][f"{key}_efficiency"]
        assert inside - across >= 0.10, (
            f"the {key} curve loses only {100 * (inside - across):.1f} points across servers")
