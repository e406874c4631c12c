"""Large-batch effects: steps and samples to reach a quality target vs the global batch.

McCandlish et al. 2018, "An Empirical Model of Large-Batch Training": with B_noise the critical
batch size (gradient noise scale), the optimizer steps needed are ``S = S_min (1 + B_noise/B)``
and the samples ``E = E_min (1 + B/B_noise)``, with ``E_min = S_min * B_noise``. Above B_noise,
doubling the batch no longer halves the steps: throughput can scale while time-to-quality does not.
"""

from __future__ import annotations

import numpy as np


def steps_to_quality(global_batch, critical_batch, min_samples):
    """Optimizer steps to the target: ``S_min (1 + B_noise/B)`` with ``S_min = E_min/B_noise``;
    ``global_batch`` B, ``critical_batch`` B_noise and ``min_samples`` E_min in samples."""
    b = np.asarray(global_batch, dtype=float)
    b_noise = np.asarray(critical_batch, dtype=float)
    s_min = np.asarray(min_samples, dtype=float) / b_noise
    return s_min * (1.0 + b_noise / b)


def samples_to_quality(global_batch, critical_batch, min_samples):
    """Samples to the target: ``E_min (1 + B/B_noise)`` (B, B_noise and E_min in samples)."""
    return np.asarray(min_samples, dtype=float) * (
        1.0 + np.asarray(global_batch, dtype=float) / np.asarray(critical_batch, dtype=float)
    )


def b_simple_from_two_batches(small_batch, small_grad_sq_norm, big_batch, big_grad_sq_norm):
    """Estimate B_simple = tr(Sigma)/|G|^2 from squared gradient norms at two batch sizes.

    McCandlish et al. 2018 appendix A.1: ``E|G_B|^2 = |G|^2 + tr(Sigma)/B``; two batch sizes give
    unbiased estimates ``|G|^2 = (B_big|G_big|^2 - B_small|G_small|^2)/(B_big - B_small)`` and
    ``tr(Sigma) = (|G_small|^2 - |G_big|^2)/(1/B_small - 1/B_big)``.
    """
    b_s, b_b = float(small_batch), float(big_batch)
    g2 = (b_b * big_grad_sq_norm - b_s * small_grad_sq_norm) / (b_b - b_s)
    trace = (small_grad_sq_norm - big_grad_sq_norm) / (1.0 / b_s - 1.0 / b_b)
    if g2 <= 0 or trace <= 0:
        raise ValueError("gradient norms too noisy to estimate the noise scale; use more steps")
    return float(trace / g2)
