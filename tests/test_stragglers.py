"""Expected maximum of N jittered step times, exactly."""

import numpy as np
import pytest

from scalesim.model.stragglers import expected_max_normal, expected_max_with_shift, straggler_wait_s


def test_known_expected_maxima():
    # e_2 = 1/sqrt(pi); tabulated e_8, e_64, e_1024 (order statistics of the normal)
    e = expected_max_normal([1, 2, 8, 64, 1024])
    assert e[0] == 0.0
    assert e[1] == pytest.approx(1 / np.sqrt(np.pi), abs=1e-6)
    assert e[2:] == pytest.approx([1.4236, 2.3437, 3.2482], abs=2e-4)


def test_exact_value_is_below_the_loose_bound():
    n = np.array([8, 64, 1024])
    assert np.all(expected_max_normal(n) < np.sqrt(2 * np.log(n)))


def test_monte_carlo_agrees_with_a_slow_device():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((200_000, 16))
    z[:, 0] += 1.5
    assert expected_max_with_shift(16, 1.5) == pytest.approx(z.max(axis=1).mean(), abs=0.01)


def test_wait_scales_with_sigma_and_has_no_wait_on_one_device():
    assert straggler_wait_s(1, 0.5, 2.0) == 0.0
    assert straggler_wait_s(8, 0.02, 0.0) == pytest.approx(0.02 * 1.4236, abs=1e-5)
    assert straggler_wait_s(8, 0.0, 0.3) == pytest.approx(0.3)
    # a slow device far beyond the jitter dominates the wait
    assert straggler_wait_s(8, 0.001, 1.0) == pytest.approx(1.0, rel=1e-3)


def test_default_device_variation_is_derived_from_the_published_range():
    from scalesim.model.stragglers import DEVICE_SPEED_CV, device_speed_cv_from_range

    # 8 % range over ~500 GPUs is 2 * e_500 = 6.07 sigma
    assert device_speed_cv_from_range(0.08, 500) == pytest.approx(0.08 / 6.07, rel=2e-3)
    assert round(device_speed_cv_from_range(), 4) == DEVICE_SPEED_CV


def test_slow_device_wait_is_continuous_as_jitter_vanishes():
    # A device 0.3 s slower with no jitter makes every step wait 0.3 s. With sigma = 1e-9 s the
    # slow device is last with certainty, so the wait is 0.3 s + sigma * E[max(Z0, M - s)]
    # ~ 0.3 s (the old cap of delay/sigma at 1e6 gave sigma * 1e6 = 1 ms).
    assert straggler_wait_s(8, 0.0, 0.3) == pytest.approx(0.3, abs=0)
    assert straggler_wait_s(8, 1e-9, 0.3) == pytest.approx(0.3, abs=1e-12)
    # and it never falls as the jitter grows (d/dsigma [sigma * g(d/sigma)] = g - s g' >= 0)
    sigmas = np.logspace(-12, 0, 400)
    waits = straggler_wait_s(np.full(sigmas.shape, 64), sigmas, 0.3)
    assert np.all(np.diff(waits) >= -1e-12 * waits[1:])
    assert waits[0] == pytest.approx(0.3) and waits[-1] > 0.3


def test_more_jitter_never_shortens_the_wait_for_a_slow_device():
    # the shift d/sigma was rounded to the 1e-3 sigma grid of the quadrature, so between grid
    # points the wait fell as sigma grew (64 devices, d = 1 s: 1.04526 -> 1.04505 s from
    # sigma 0.315308 to 0.315317 s) and a layout with more jitter predicted a faster step;
    # interpolated between the grid's neighbours it is continuous and never falls, in sigma
    # or in the delay
    for n in (2, 64, 16384):
        sigmas = np.linspace(0.05, 3.0, 20001)
        waits = straggler_wait_s(n, sigmas, 1.0)
        assert np.all(np.diff(waits) >= -1e-12 * waits[1:])
        delays = np.linspace(0.0, 3.0, 20001)
        assert np.all(np.diff(straggler_wait_s(n, 0.7, delays)) >= 0.0)
    # on the grid the quadrature's value itself
    assert straggler_wait_s(8, 1.0, 1.5) == pytest.approx(1.9006136, abs=1e-6)


def test_a_slow_device_is_an_outlier_beyond_the_published_spread_or_its_peers_own():
    from scalesim.model.stragglers import SLOW_DEVICE_FACTOR, peer_margin

    # identical peers: the published device spread sets the margin, 3.5 x 1.32 % = 4.62 %
    assert round(SLOW_DEVICE_FACTOR, 4) == 1.0462
    median, margin = peer_margin([1.0] * 7)
    assert (median, margin) == (1.0, pytest.approx(SLOW_DEVICE_FACTOR - 1.0))
    # peers that spread more widen it: MAD 0.05 -> sigma 0.0741 -> margin 0.259
    median, margin = peer_margin([0.90, 0.95, 1.0, 1.0, 1.0, 1.05, 1.10])
    assert median == 1.0 and margin == pytest.approx(3.5 * 1.4826 * 0.05)


@pytest.mark.parametrize("count, steps, ranks, persistent", [
    (5, 5, 2, True), (4, 5, 2, False),    # two ranks: 1/32 = 0.031 <= 0.05; 6/32 = 0.19 is not
    # 1/16 = 0.0625: four steps of two ranks can never be beyond chance by order alone, so the
    # rank must be slowest in every one and the size of its slowdown decides (order_can_tell)
    (4, 4, 2, True), (3, 4, 2, False), (2, 2, 2, True), (1, 2, 2, False),
    (9, 10, 2, True), (8, 10, 2, False),  # 0.0107 vs 0.0547
    (21, 40, 4, True), (20, 40, 4, False),  # chance is far below: a strict majority decides
    (3, 5, 8, True), (2, 5, 8, False),
    (1, 1, 2, True), (0, 1, 2, False), (0, 0, 4, False), (3, 3, 1, False),
])
def test_slowest_in_most_steps_is_a_majority_beyond_chance(count, steps, ranks, persistent):
    from scalesim.model.stragglers import slowest_in_most_steps

    assert slowest_in_most_steps(count, steps, ranks) is persistent


def test_chance_of_the_slowest_count_is_the_binomial_tail():
    from scipy.stats import binom

    from scalesim.model.stragglers import chance_of_slowest_count

    for count, steps, ranks in ((5, 5, 2), (9, 10, 2), (3, 5, 8), (21, 40, 4), (0, 7, 3)):
        assert chance_of_slowest_count(count, steps, ranks) == pytest.approx(
            binom.sf(count - 1, steps, 1.0 / ranks), rel=1e-12, abs=1e-15)


def test_persistence_words_say_why():
    from scalesim.model.stragglers import persistence_words

    assert persistence_words(4, 4, 2) == ("slowest in 4 of 4 steps (chance 0.062: every step; "
                                          "too few steps for the order alone, the size decides)")
    assert persistence_words(3, 4, 2) == ("slowest in 3 of 4 steps (chance 0.31: not every step, "
                                          "and too few steps for the order alone)")
    assert persistence_words(4, 5, 2).endswith("not beyond chance, needs 0.05 or less)")
    assert persistence_words(5, 5, 2) == "slowest in 5 of 5 steps (chance 0.031: most steps)"
    assert persistence_words(2, 5, 2).endswith("not a majority)")


@pytest.mark.parametrize("steps, ranks, can", [(4, 2, False), (5, 2, True), (2, 4, False),
                                               (3, 4, True), (2, 8, True), (1, 8, False)])
def test_the_order_can_tell_only_with_enough_steps(steps, ranks, can):
    """(1/ranks)**steps <= 0.05: two ranks need 5 steps, four 3, eight 2."""
    from scalesim.model.stragglers import order_can_tell

    assert order_can_tell(steps, ranks) is can


def test_a_layouts_slow_device_wait_is_integrated_in_the_form_it_keeps_only(monkeypatch):
    """Session 40: ``layout_step._straggler_s`` has two forms, spreads pooled (tp 1) and apart
    (tp > 1); both were integrated with the slow device on every row and one thrown away, so a
    planner grid with a slow device cost two quadratures a row (llama3-8b at 16 and 64 H100s,
    36,444 layouts: 21 s of 21.4). Two layouts on 16 H100s, tp 2 and tp 1, device 3 1.5x slow:
    each row's slow device is now one shift, integrated at the two 1e-3 grid points either side
    of it (``expected_max_with_shift``): 2 x 2 quadratures with a shift, not 3 x 2 (the fourth
    shift is past ``_CERTAIN_SHIFT``); the waits are the rows' own, whichever rows are beside."""
    from scalesim import presets
    from scalesim.model import stragglers
    from scalesim.model.layout_step import evaluate_layouts
    from scalesim.plan import Setting, setting_inputs
    from scalesim.profiles import load_hardware

    setting = Setting(presets.TRANSFORMERS["llama3-8b"][0], load_hardware("dgx-h100"), 256)

    def inputs(dp, tp):
        return setting_inputs(setting, dp=np.array(dp), tp=np.array(tp), pp=1, cp=1, zero=1,
                              micro_batch=2, schedule=0, virtual_stages=1, recompute=2,
                              sequence_parallel=False, shard_group=np.array(dp)).replace(
            jitter_cv=0.03, slow_factor=1.5, slow_rank=3)

    shifted, real = set(), stragglers._expected_max_units

    def integrate(n, shift):
        if shift > 0:
            shifted.add((n, shift))
        return real(n, shift)

    monkeypatch.setattr(stragglers, "_expected_max_units", integrate)
    both = evaluate_layouts(inputs([8, 16], [2, 1])).straggler_s
    assert len(shifted) == 4 and {n for n, _ in shifted} == {16}
    shifts = sorted(s for _, s in shifted)
    assert shifts[1] - shifts[0] == pytest.approx(1e-3) and shifts[3] - shifts[2] == pytest.approx(1e-3)
    alone = [evaluate_layouts(inputs([dp], [tp])).straggler_s[0] for dp, tp in ((8, 2), (16, 1))]
    assert both.tolist() == alone and both[0] != both[1] and np.all(both > 0)
