"""Straggler wait: a synchronous step ends when the slowest device is done.

Each device's step time is ``mu + sigma*Z_i`` with ``Z_i`` i.i.d. standard normal (jitter);
optionally one device is persistently slower by ``delay`` seconds. The expected wait beyond
``mu`` is ``E[max_i X_i] - mu``, computed exactly by quadrature of
``E[M] = int x dF(x) = [x F(x)] - int F(x) dx`` with
``F(x) = Phi(x - delay/sigma) * Phi(x)^(N-1)`` (in units of sigma). With no slow device this is
``sigma * e_N``: e_2 = 0.564, e_8 = 1.424, e_64 = 2.344, e_1024 = 3.248, unlike the loose
``sqrt(2 ln N)`` bound, which overshoots by about half a sigma.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np

# Device-to-device speed variation of identical GPUs. Sinha et al., "Not All GPUs Are Created
# Equal" (SC'22, arXiv:2208.11035): 8% average performance variation (fastest vs slowest GPU of a
# cluster) across clusters of hundreds to thousands of same-SKU GPUs. Read as the expected range of
# ~500 normal draws, 2*e_500 = 6.07 standard deviations, that is a coefficient of variation of
# 0.08 / 6.07 = 1.3% per device (computed below, not fitted to anything).
PUBLISHED_RANGE_FRACTION = 0.08
PUBLISHED_CLUSTER_GPUS = 500

_GRID_HALF_WIDTH = 12.0  # standard deviations either side; covers N up to ~1e30
_GRID_POINTS = 6001


@lru_cache(maxsize=64)
def _quadrature_grid(shift: float) -> tuple[float, float, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, x, log Phi(x - shift), log Phi(x)) of the quadrature at ``shift`` (in sigmas),
    read-only: every device count at one shift integrates on the same grid, so ``log_ndtr``
    runs once per shift, not once per (count, shift)."""
    from scipy.special import log_ndtr  # imported here: it costs ~0.5 s at CLI start-up

    lo, hi = -_GRID_HALF_WIDTH, _GRID_HALF_WIDTH + max(shift, 0.0)
    x = np.linspace(lo, hi, _GRID_POINTS)
    arrays = (x, log_ndtr(x - shift), log_ndtr(x))
    for a in arrays:
        a.flags.writeable = False
    return (lo, hi, *arrays)


@lru_cache(maxsize=65536)
def _expected_max_units(n: int, shift: float) -> float:
    """E[max(Z_0 + shift, Z_1, ..., Z_{n-1})] for i.i.d. standard normals, by quadrature."""
    if n <= 1:
        return shift
    lo, hi, x, log_cdf_slow, log_cdf = _quadrature_grid(shift)
    cdf = np.exp(log_cdf_slow + (n - 1) * log_cdf)
    # E[M] = int x dF = [x F] - int F dx over a range where F goes from ~0 to ~1; the integrand
    # is smooth there, so the trapezoid rule is accurate to ~1e-7.
    return float(hi * cdf[-1] - lo * cdf[0] - np.trapezoid(cdf, x))


def expected_max_normal(n) -> np.ndarray:
    """e_N = E[max of N i.i.d. standard normals] (0 for N = 1), vectorised over N."""
    return expected_max_with_shift(n, 0.0)


def expected_max_with_shift(n, shift) -> np.ndarray:
    """E[max(Z_0 + shift, Z_1..Z_{N-1})], vectorised; each distinct (N, shift) is integrated once.

    ``shift`` is integrated on a grid of 1e-3 (in units of sigma) and interpolated linearly
    between its two neighbours, so a sweep over a million scenarios integrates only the few
    distinct pairs it contains, and the result stays continuous and increasing in ``shift``
    (a rounded shift made ``straggler_wait_s`` fall by up to 2e-4 sigma as sigma grew).
    """
    n_arr, shift_arr = np.broadcast_arrays(
        np.asarray(n, dtype=np.int64), np.asarray(shift, dtype=float)
    )
    scaled = shift_arr.ravel() * 1000.0
    below = np.floor(scaled).astype(np.int64)
    frac = scaled - below
    n_flat = n_arr.ravel()
    # the grid points either side (the one above only where the shift lies between two)
    key = np.concatenate([n_flat * (1 << 32) + below, (n_flat * (1 << 32) + below + 1)[frac > 0]])
    unique, inverse = np.unique(key, return_inverse=True)  # shifts stay below 2**32 milli-sigma
    values = np.array(
        [_expected_max_units(int(k >> 32), float(k & 0xFFFFFFFF) / 1000.0) for k in unique]
    )[inverse.ravel()]
    low = values[: below.size]
    high = low.copy()
    high[frac > 0] = values[below.size:]
    return ((1.0 - frac) * low + frac * high).reshape(n_arr.shape)


# Beyond this shift (in sigmas) the slow device is the last one with certainty for any N up to
# ~1e30 (e_N < 12): E[max(Z_0 + s, Z_1..Z_{N-1})] - s = E[max(Z_0, M - s)] is below 1e-100.
_CERTAIN_SHIFT = 40.0


def straggler_wait_s(devices, sigma_s, slow_delay_s):
    """Expected extra time of a synchronous step over the typical device's, seconds.

    ``sigma_s``: standard deviation of one device's step time (jitter); ``slow_delay_s``: how
    much longer the one persistently slow device takes (0 for none). One device waits on no
    one, so ``devices == 1`` gives 0.

    Written as ``delay + sigma * (E[max(Z_0 + s, Z_1..)] - s)`` with ``s = delay / sigma``: the
    second term falls to 0 as ``s`` grows (it is 0 beyond ``_CERTAIN_SHIFT``), so the wait is
    continuous in sigma and tends to ``delay`` as sigma -> 0, the value at sigma = 0.
    """
    devices = np.asarray(devices, dtype=np.int64)
    sigma = np.maximum(np.asarray(sigma_s, dtype=float), 0.0)
    delay = np.maximum(np.asarray(slow_delay_s, dtype=float), 0.0)
    safe_sigma = np.where(sigma > 0, sigma, 1.0)
    with np.errstate(over="ignore"):
        shift = np.where(sigma > 0, delay / safe_sigma, np.inf)
    certain = shift > _CERTAIN_SHIFT
    used = np.where(certain, 0.0, shift)
    excess = expected_max_with_shift(devices, used) - used  # E[max] beyond the slow device's mean
    wait = delay + np.where(certain, 0.0, sigma * np.maximum(excess, 0.0))
    return np.where(devices > 1, wait, 0.0)


def straggler_stretch(straggler_s, passes_s):
    """How many times a typical device's passes the last device's last: ``1 + straggler_s /
    passes_s`` (``passes_s``: a typical device's forward and backward of a step, s; 1 where it
    is 0). A collective starts when the last rank has its tensors, so the exchange hides behind
    the last device's passes, longer by the expected wait for it (docs/model.md §3, §6); one
    slow device alone (no spread): ``slow_factor``."""
    passes = np.asarray(passes_s, dtype=float)
    return 1.0 + np.asarray(straggler_s, dtype=float) / np.where(passes > 0, passes, np.inf)


def device_speed_cv_from_range(range_fraction: float = PUBLISHED_RANGE_FRACTION,
                               devices: int = PUBLISHED_CLUSTER_GPUS) -> float:
    """Coefficient of variation of device speed whose expected range over ``devices`` is
    ``range_fraction`` of the mean: ``range / (2 e_N)`` for normal variation."""
    return float(range_fraction / (2.0 * expected_max_normal(devices)))


# = round(device_speed_cv_from_range(), 4), written out so importing the model stays cheap; a
# test checks the two agree.
DEVICE_SPEED_CV = 0.0132

# A device is named slow (not merely at the slow end of healthy variation) when it lies more than
# SLOW_DEVICE_Z standard deviations from its peers' median, the standard deviation being the larger
# of the peers' own robust spread (MAD_TO_SIGMA x their median absolute deviation) and
# DEVICE_SPEED_CV x the median (``peer_margin``, docs/model.md section 19). 3.5 is Iglewicz &
# Hoaglin's cut-off for the modified z-score ("How to Detect and Handle Outliers", ASQC 1993).
SLOW_DEVICE_Z = 3.5
MAD_TO_SIGMA = 1.4826  # 1 / Phi^-1(0.75): a normal's median absolute deviation is 0.6745 sigma
# The least slowdown named slow, where only a ratio is known (the floor alone): 1.046
SLOW_DEVICE_FACTOR = 1.0 + SLOW_DEVICE_Z * DEVICE_SPEED_CV


def peer_margin(peers) -> tuple[float, float]:
    """(median, margin) of the peers' values (step times, clocks; any unit): a device is slow when
    its time is above ``median + margin`` or its clock below ``median - margin``, with
    ``margin = SLOW_DEVICE_Z * max(MAD_TO_SIGMA * MAD, DEVICE_SPEED_CV * median)``."""
    values = np.asarray(peers, dtype=float)
    median = float(np.median(values))
    spread = max(MAD_TO_SIGMA * float(np.median(np.abs(values - median))),
                 DEVICE_SPEED_CV * median)
    return median, SLOW_DEVICE_Z * spread


# "The slowest in most steps": the same rank is the slowest in a strict majority of the compared
# steps (so one rank at most), and more often than chance would make it: with no slow device each
# of ``ranks`` identical ranks is the slowest of a step with probability 1/ranks, and the count
# must lie in the binomial tail of probability PERSISTENCE_ALPHA or less (one-sided; 0.05 is
# Fisher's conventional significance level, "Statistical Methods for Research Workers", 1925).
# The slowdown itself is judged by SLOW_DEVICE_FACTOR / ``peer_margin``; this only asks whether
# it is one rank persistently rather than the slowest place moving around. docs/model.md §19.
PERSISTENCE_ALPHA = 0.05


def chance_of_slowest_count(count: int, steps: int, ranks: int) -> float:
    """Probability (0..1) that one given rank of ``ranks`` identical ones is the slowest in
    ``count`` or more of ``steps`` steps by chance: the binomial tail ``P(X >= count)``,
    ``X ~ Binomial(steps, 1/ranks)``."""
    p = 1.0 / max(int(ranks), 1)
    steps, count = int(steps), max(int(count), 0)
    return float(sum(comb(steps, k) * p**k * (1.0 - p) ** (steps - k)
                     for k in range(count, steps + 1)))


def order_can_tell(steps: int, ranks: int) -> bool:
    """Whether ``steps`` steps of ``ranks`` ranks are enough for the order alone to be beyond
    chance: a rank slowest in every one of them has ``chance_of_slowest_count <=
    PERSISTENCE_ALPHA`` (two ranks: 5 steps or more; four: 3; eight: 2)."""
    return steps >= 1 and ranks >= 2 and (
        chance_of_slowest_count(steps, steps, ranks) <= PERSISTENCE_ALPHA)


def slowest_in_most_steps(count: int, steps: int, ranks: int) -> bool:
    """Whether a rank slowest in ``count`` of ``steps`` compared steps (of ``ranks`` ranks) is so
    persistently: ``count > steps / 2`` and ``chance_of_slowest_count <= PERSISTENCE_ALPHA``.
    Two ranks need 5 of 5 steps, 7 of 7, 9 of 10 or 15 of 20; four ranks 4 of 5 or 21 of 40;
    eight ranks 3 of 5 or 11 of 20. With too few steps for the order ever to be beyond chance
    (``order_can_tell`` false: two ranks under 5 steps, as a profiler's usual 2-3 active steps)
    the rank must be the slowest in every step, and the size of its slowdown, an outlier test of
    its own (``SLOW_DEVICE_FACTOR``, ``peer_margin``: 3.5 robust standard deviations), decides:
    requiring an order that cannot be significant would never name a slow device there."""
    if steps < 1 or ranks < 2:
        return False
    if not order_can_tell(steps, ranks):
        return count == steps
    return 2 * count > steps and chance_of_slowest_count(count, steps, ranks) <= PERSISTENCE_ALPHA


def persistence_words(count: int, steps: int, ranks: int) -> str:
    """Why a rank is or is not the slowest in most steps, e.g. 'slowest in 4 of 4 steps (chance
    0.062: not beyond chance, needs 0.05 or less)'."""
    chance = chance_of_slowest_count(count, steps, ranks)
    if slowest_in_most_steps(count, steps, ranks):
        verdict = ("most steps" if order_can_tell(steps, ranks)
                   else "every step; too few steps for the order alone, the size decides")
    elif not order_can_tell(steps, ranks):
        verdict = "not every step, and too few steps for the order alone"
    elif 2 * count <= steps:
        verdict = "not a majority"
    else:
        verdict = f"not beyond chance, needs {PERSISTENCE_ALPHA:g} or less"
    return f"slowest in {count} of {steps} steps (chance {chance:.2g}: {verdict})"


def collective_waits_s(group, collectives, span_s, jitter_cv):
    """Expected seconds a group of ``group`` ranks waits for its slowest member at
    ``collectives`` collectives that cut one micro-step of ``span_s`` compute into equal segments.

    A collective ends when its slowest member has arrived, and all leave it together, so each
    one waits ``e_group`` standard deviations of its segment's compute. The coefficient of
    variation is scale-free, as §6 takes it at any micro-batch: a segment of ``span_s / n`` has
    std ``jitter_cv * span_s / n`` (a device's segments of one micro-step are slow together, and
    micro-steps are independent). The n waits add up to ``e_group * jitter_cv * span_s`` per
    micro-step, whatever n: a group that synchronises within every micro-step pays every
    micro-step's wait, where a barrier once per step of k micro-steps pools their jitter
    (``sqrt(k)``, §6). A group of one, or no collective, waits 0. docs/model.md §14."""
    n = np.maximum(np.asarray(collectives, dtype=float), 0.0)
    segment_sigma = (np.maximum(np.asarray(jitter_cv, dtype=float), 0.0)
                     * np.maximum(np.asarray(span_s, dtype=float), 0.0) / np.maximum(n, 1.0))
    group = np.maximum(np.asarray(group, dtype=np.int64), 1)
    return n * expected_max_normal(group) * segment_sigma
