"""Time of matrix multiplies and memory-bound (elementwise) work on one device.

A layout changes the shapes each device multiplies: tensor parallelism divides one dimension of
every weight matrix by t, a smaller micro-batch or context parallelism shrinks the token
dimension. Small matrices run at a lower share of the device's peak because they move more
bytes per FLOP. The model is the roofline (Williams, Waterman & Patterson, CACM 2009) in its
additive form, so the efficiency falls smoothly with the arithmetic intensity:

    t(M, N, K) = 2MNK / (peak * efficiency) + e (MK + KN + MN) / memory_bandwidth

(read both operands, write the result; e bytes per element). ``efficiency`` is the sustained
share of the datasheet peak that large multiplies reach (pinned by a measurement: a calibration
or a validation anchor). docs/model.md §13.
"""

from __future__ import annotations

import numpy as np


def gemm_s(m, n, k, flops_per_s, memory_bytes_per_s, bytes_per_element=2.0):
    """Seconds of one (M x K) @ (K x N) multiply: compute at ``flops_per_s`` plus the bytes of
    both operands and the result at ``memory_bytes_per_s`` (additive roofline)."""
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    flops = 2.0 * m * n * k
    traffic = bytes_per_element * (m * k + k * n + m * n)
    return flops / flops_per_s + traffic / memory_bytes_per_s


def memory_bound_s(bytes_moved, memory_bytes_per_s):
    """Seconds of elementwise work (norms, activations, softmax, dropout) moving these bytes."""
    return np.asarray(bytes_moved, dtype=float) / memory_bytes_per_s
