"""A link level whose times do not grow with size is timed at larger sizes before it is refused
(calibration.size_extension.decide on synthetic timings: timings in, fit / extend / refuse out)."""

from __future__ import annotations

import pytest
from scalesim.calibration.size_extension import (
    MIN_SIZE_SHARE,
    SizeDecision,
    decide,
    extension_budget_s,
    size_term_share,
    timing_cost_s,
)

from scalesim.figures import bytes_text
from scalesim.sources.nccl_tests import point_from_time

KIB, MIB = 1024, 2**20
SWEEP = [KIB * 4**k for k in range(6)] + [2 * MIB]  # 1 KiB .. 1 MiB by 4, then 2 MiB
LEVEL = "intra-host link"


def ring_time(op: str, size: int, alpha_s: float = 250e-6, busbw_GBps: float = 1.0) -> float:
    """Two ranks' ring: all-reduce 2 steps and volume 1, reduce-scatter 1 step and volume 1/2."""
    steps, vol = (2, 1.0) if op == "all_reduce" else (1, 0.5)
    return steps * alpha_s + vol * size / 1e9 / busbw_GBps


def points(op: str, sizes, times):
    return [point_from_time(op, s, 2, t) for s, t in zip(sizes, times, strict=True)]


# What a busy 2-core host did to a loopback all-reduce (2026-12-02, --max-size-mib 2): the
# small messages as slow as the largest, so the times fall with size over the sweep.
BUSY = [2.1e-3, 1.9e-3, 2.0e-3, 1.8e-3, 1.9e-3, 1.7e-3, 1.6e-3]


COLL_S = 0.1  # --coll-time-s
BUDGET_S = len(SWEEP) * COLL_S  # what collective_phase.measure_level gives one op's sweep


def test_clean_timings_are_fitted_as_they_are():
    clean = points("all_reduce", SWEEP, [ring_time("all_reduce", s) for s in SWEEP])
    assert size_term_share("all_reduce", clean) > MIN_SIZE_SHARE
    assert decide(LEVEL, clean, COLL_S, 3, BUDGET_S) == SizeDecision()


def test_times_that_do_not_grow_are_extended_for_that_op_only():
    noisy = points("all_reduce", SWEEP, BUSY)
    fine = points("reduce_scatter", SWEEP, [ring_time("reduce_scatter", s) for s in SWEEP])
    assert size_term_share("all_reduce", noisy) is None
    decision = decide(LEVEL, noisy + fine, COLL_S, 3, 2 * BUDGET_S)
    # a 4 MiB call predicted at twice the 2 MiB one's 1.6 ms: warm-up, sizing, then the loops
    assert timing_cost_s(3.2e-3, COLL_S, 3) == pytest.approx(2 * 3.2e-3 + COLL_S)
    assert decision == SizeDecision(extend_to=4 * MIB, ops=("all_reduce",),
                                    cost_s=timing_cost_s(3.2e-3, COLL_S, 3))


def test_extension_doubles_until_the_size_term_shows_then_fits():
    """The loop the collectives phase runs, on a link whose small messages are drowned in 1.5 ms
    of noise: it doubles past 2 MiB until the size term is a fair share, then fits."""
    def busy_time(size):
        return max(ring_time("all_reduce", size, busbw_GBps=10.0), 1.5e-3) + (2e-4 if size == KIB else 0.0)

    rows = points("all_reduce", SWEEP, [busy_time(s) for s in SWEEP])
    tried, budget = [], BUDGET_S
    while (decision := decide(LEVEL, rows, COLL_S, 3, budget)).extend_to:
        tried.append(decision.extend_to)
        budget -= decision.cost_s
        rows += points("all_reduce", [decision.extend_to], [busy_time(decision.extend_to)])
    assert decision == SizeDecision()
    assert tried and tried == [2 ** k * 2 * MIB for k in range(1, len(tried) + 1)]
    assert size_term_share("all_reduce", rows) >= MIN_SIZE_SHARE and budget >= 0


def test_refused_when_the_next_size_would_not_fit_the_time_budget():
    noisy = points("all_reduce", SWEEP, BUSY)
    decision = decide(LEVEL, noisy, COLL_S, 3, budget_s=0.01)  # timing 4 MiB takes ~0.11 s
    assert decision.extend_to is None and decision.refusal is not None
    text = decision.refusal
    assert "\n" not in text
    assert text.startswith("intra-host link: all_reduce times do not grow with message size")
    assert "1 KiB-2 MiB (7 sizes" in text
    assert "timing all_reduce at 4 MiB would take about 0.11 s, more than the 0.01 s left" in text
    assert "--max-size-mib 4 or more" in text and "quieter machine" in text


def test_refused_at_the_size_cap():
    noisy = points("all_reduce", SWEEP, BUSY)
    decision = decide(LEVEL, noisy, COLL_S, 3, BUDGET_S, cap_bytes=2 * MIB)
    assert decision.refusal is not None and "4 MiB is above the 2 MiB cap" in decision.refusal


def test_the_default_one_gib_cap_is_said_in_gib():
    """Sizes are written by one function (``figures.bytes_text``, nccl-tests' and calibration's
    alike): a sweep that reached 512 MiB (its last 1 GiB timed, flat) is refused at the default
    cap as '2 GiB is above the 1 GiB cap' (calibration's own size_text said '2048 MiB is above
    the 1024 MiB cap')."""
    sizes = [KIB * 4**k for k in range(6)] + [512 * MIB, 1024 * MIB]
    decision = decide(LEVEL, points("all_reduce", sizes, BUSY + [1.6e-3]), COLL_S, 3, 100.0)
    assert decision.refusal is not None and "2 GiB is above the 1 GiB cap" in decision.refusal
    assert "over 1 KiB-1 GiB (8 sizes" in decision.refusal
    assert [bytes_text(n) for n in (8, 1536, MIB, 2**30, 3 * 2**30)] == [
        "8 B", "1.5 KiB", "1 MiB", "1 GiB", "3 GiB"]


def test_a_one_size_sweep_gets_a_few_doublings_of_budget():
    """One size fits no line: it is extended, and its budget is eight sizes' worth, not one."""
    one = points("all_reduce", [64 * KIB], [ring_time("all_reduce", 64 * KIB)])
    assert size_term_share("all_reduce", one) is None
    budget = extension_budget_s(len(one), 1, COLL_S)
    assert budget == pytest.approx(8 * COLL_S)
    assert extension_budget_s(7 * 3, 3, COLL_S) == pytest.approx(24 * COLL_S)  # the sweep's own
    assert decide(LEVEL, one, COLL_S, 3, budget).extend_to == 128 * KIB


@pytest.mark.parametrize("budget_s", [0.0, BUDGET_S])
def test_a_small_but_positive_size_term_is_fitted_when_it_cannot_grow(budget_s):
    """Latency-bound but growing times: extended while the budget allows, never refused."""
    rows = points("all_reduce", SWEEP, [ring_time("all_reduce", s, alpha_s=4e-3) for s in SWEEP])
    share = size_term_share("all_reduce", rows)
    assert share is not None and share < MIN_SIZE_SHARE
    decision = decide(LEVEL, rows, COLL_S, 3, budget_s)
    assert decision.refusal is None
    assert decision.extend_to == (4 * MIB if budget_s else None)


# ------------------------------------------------------------------ threads (signature, note)


def test_resume_runs_again_the_phases_timed_with_other_threads(tmp_path):
    """The signature keeps the threads each rank resolved (load-aware without --threads): a
    phase timed on 2 threads per process is not kept by a run that resolves 1, and the note says
    which phases and why."""
    import argparse

    from scalesim.calibration.results import NoiseResult, PhaseRecord
    from scalesim.calibration.state import SIGNATURE_FLAGS, load_matching, save, signature

    args = argparse.Namespace(**dict.fromkeys(SIGNATURE_FLAGS))
    then = signature(args, 2, 1, 2, "gloo", "cpu", [2, 2])
    now = signature(args, 2, 1, 2, "gloo", "cpu", [1, 1])
    assert then["threads"] == [2, 2] and then != now
    save(tmp_path, PhaseRecord(phase="noise", signature=then, wall_s=1.0,
                               result=NoiseResult(note="x").model_dump(mode="json")))
    kept, notes = load_matching(tmp_path, ["compute", "noise"], then)
    assert set(kept) == {"noise"} and not notes
    kept, notes = load_matching(tmp_path, ["compute", "noise"], now)
    assert not kept and "(threads); not reused" in notes[0]
    assert notes[-1].startswith("not reused because the threads changed: noise "
                                "measured with 2 torch threads per process, this run has "
                                "1 torch thread per process")
    uneven = signature(args, 2, 1, 2, "gloo", "cpu", [2, 1])
    assert "2,1 torch threads (by rank)" in load_matching(tmp_path, ["noise"], uneven)[1][-1]


def test_torchrun_children_get_the_load_aware_threads_and_the_line_that_says_so(monkeypatch):
    import argparse
    import os

    from scalesim.calibration.options import THREADS_NOTE_ENV, threads_line

    from scalesim.cli.cmd_calibrate import child_environment

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    args = argparse.Namespace(nproc_per_node=2, threads=None)
    idle = child_environment(args, {"PATH": "/bin"}, load=0.3)
    assert idle["OMP_NUM_THREADS"] == "4"
    assert idle[THREADS_NOTE_ENV] == ("4 torch threads per process: 8 cores shared by 2 "
                                      "processes (load average 0.3); give --threads N to time N")
    busy = child_environment(args, {"PATH": "/bin"}, load=4.2)  # 4 cores busy: 2 each
    assert busy["OMP_NUM_THREADS"] == "2"
    assert busy[THREADS_NOTE_ENV] == threads_line(2, 2, 4.2)
    assert busy[THREADS_NOTE_ENV].startswith("the machine is busy (load average 4.2 on 8 cores): "
                                             "2 torch threads per process, not 4")
    # the user's choice: no figure of ours, no line (and none left over from an outer run)
    chosen = child_environment(args, {"OMP_NUM_THREADS": "3", THREADS_NOTE_ENV: "old"}, load=4.2)
    assert chosen["OMP_NUM_THREADS"] == "3" and THREADS_NOTE_ENV not in chosen
    flagged = child_environment(argparse.Namespace(nproc_per_node=2, threads=5), {}, load=4.2)
    assert "OMP_NUM_THREADS" not in flagged and THREADS_NOTE_ENV not in flagged


def test_a_long_refusal_says_its_time_in_minutes():
    """calib19 wrote the times with '.2g' ('about 1.2e+02 s'); they are the card's durations
    now (``figures.duration_text``: '0.11 s', '2 min'), rev19."""
    slow = [p.model_copy(update={"time_s": p.time_s * 1000}) for p in
            points("all_reduce", SWEEP, BUSY)]
    text = decide(LEVEL, slow, COLL_S * 1000, 3, budget_s=10.0).refusal
    assert text is not None and "e+" not in text, text
    assert " min, more than the 10 s left of the level's" in text, text
