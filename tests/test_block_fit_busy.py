"""A CPU calibration's block fit on a busy machine: torch threads are not given cores that other
work keeps busy, and a fit is refused when the timings' own spread leaves the matmul rate open
(docs/calibration.md, "Threads on a busy machine" and "The fit")."""

import os

import numpy as np
import pytest
from scalesim.calibration.block_fit import Block, fit_block, layer_terms, median_rel_error
from scalesim.calibration.options import busy_threads_note, default_threads

from scalesim.errors import ScalesimError

BLOCK = Block(hidden=256, heads=4, ffn_hidden=1024, seq_len=128, micro_batch=1)
TP = [1, 2, 4]
F, B = 4e10, 2e9  # the rates the synthetic timings are made of (FLOP/s, bytes/s)


def _rounds(sigma: float, repeats: int, seed: int):
    """Median and interquartile range of ``repeats`` interleaved rounds of the block's true times,
    each time multiplied by lognormal noise of ``sigma`` (another process taking the core)."""
    a, c = layer_terms(BLOCK, TP)
    rng = np.random.default_rng(seed)
    rounds = (a / F + c / B) * rng.lognormal(0.0, sigma, size=(repeats, len(TP)))
    q25, q50, q75 = np.percentile(rounds, [25, 50, 75], axis=0)
    return q50, q75 - q25


def test_the_medians_standard_error_follows_the_rounds_spread():
    rng = np.random.default_rng(0)
    medians = np.median(1.0 + 0.1 * rng.standard_normal((4000, 25)), axis=1)
    q25, q75 = np.percentile(1.0 + 0.1 * rng.standard_normal(100_000), [25, 75])
    predicted = median_rel_error([1.0], [q75 - q25], 25)[0]
    assert predicted == pytest.approx(np.std(medians), rel=0.1)
    assert median_rel_error([2.0], [0.0], 10)[0] == 0.0


def test_a_fit_the_spread_leaves_open_is_refused_not_returned():
    times, spread = _rounds(0.25, 10, seed=1)
    wrong = fit_block(BLOCK, TP, times).flops_per_s
    assert wrong > 2 * F  # the plain medians put F at more than twice the truth, silently
    with pytest.raises(
        ScalesimError,
        match=r"spread too much.*above [0-9.]+ TFLOP/s.*"
        r"more --block-repeats.*--threads 1",
    ):
        fit_block(BLOCK, TP, times, spread, 10)


def test_more_rounds_of_the_same_noise_pin_the_rate():
    times, spread = _rounds(0.25, 400, seed=1)  # standard errors 1/sqrt(40) of the 10 rounds'
    assert fit_block(BLOCK, TP, times, spread, 400).flops_per_s == pytest.approx(F, rel=0.2)


def test_noisy_but_usable_timings_fit_near_the_truth():
    for seed in range(5):
        times, spread = _rounds(0.1, 10, seed)
        assert fit_block(BLOCK, TP, times, spread, 10).flops_per_s == pytest.approx(F, rel=0.35)


def test_timings_that_stop_shrinking_beyond_their_spread_name_fixed_costs():
    # CI's busy machine: 10.2, 6.09, 4.16 ms with a 3% spread over 10 rounds: no noise explains
    # a 2.5x shrink where the work shrinks 4x and the bytes 2.7x
    times = np.array([10.2e-3, 6.09e-3, 4.16e-3])
    with pytest.raises(ScalesimError, match=r"work shrinks 4x but the time 2\.5x.*--threads"):
        fit_block(BLOCK, TP, times, 0.03 * times, 10)


def test_busy_cores_are_not_given_to_torch_threads(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert default_threads(1, {}, load=0.4) == 2  # idle: every core
    assert default_threads(1, {}, load=1.0) == 1  # one core busy
    assert default_threads(1, {}, load=7.9) == 1  # never fewer than one
    assert default_threads(1, {"OMP_NUM_THREADS": "2"}, load=7.9) == 2  # the user's choice
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert default_threads(2, {}, load=0.0) == 8
    assert default_threads(2, {}, load=4.5) == 6  # 12 free cores over two processes


def test_the_calibration_says_when_the_load_took_threads(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    note = busy_threads_note(1, 1, 7.44)
    assert "load average 7.4 on 2 cores" in note and "1 torch thread per process, not 2" in note
    assert note.endswith("give --threads 2 to time 2")
    assert busy_threads_note(1, 2, 0.1) is None


def test_the_block_gets_more_rounds_than_one_timing_needs_on_cpu():
    from scalesim.calibration.options import build_parser, resolve_defaults
    from scalesim.calibration.state import signature

    parse = build_parser().parse_args
    cpu = resolve_defaults(parse(["--block-hidden", "256"]), on_gpu=False)
    assert (cpu.repeats, cpu.block_repeats) == (10, 30)  # ratios need more rounds than a time
    assert resolve_defaults(parse(["--quick"]), on_gpu=False).block_repeats == 15
    assert resolve_defaults(parse([]), on_gpu=True).block_repeats == 10
    assert resolve_defaults(parse(["--block-repeats", "7"]), on_gpu=False).block_repeats == 7
    # a block timed over other rounds is not reused by --resume
    other = resolve_defaults(parse(["--block-hidden", "256", "--block-repeats", "7"]), on_gpu=False)
    assert signature(cpu, 1, 1, 1, "gloo", "cpu") != signature(other, 1, 1, 1, "gloo", "cpu")


def test_thirty_rounds_of_the_noise_that_refused_ten_pin_the_rate():
    # 25 % noise: 10 rounds leave F open (refused above), the CPU default's 30 rounds pin it
    times, spread = _rounds(0.25, 30, seed=1)
    assert fit_block(BLOCK, TP, times, spread, 30).flops_per_s == pytest.approx(F, rel=0.3)
