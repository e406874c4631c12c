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


def gemm_s(m, n, k, flops_per_s, memory_bytes_per_s, bytes_per_element=2.0,
           operand_bytes_per_element=None):
    """Seconds of one (M x K) @ (K x N) multiply: compute at ``flops_per_s`` plus the bytes of
    both operands and the result at ``memory_bytes_per_s`` (additive roofline); the operands at
    ``operand_bytes_per_element`` where given (fp8: 1, the result still 16-bit), else
    ``bytes_per_element``."""
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    operand = bytes_per_element if operand_bytes_per_element is None else (
        operand_bytes_per_element)
    flops = 2.0 * m * n * k
    traffic = operand * (m * k + k * n) + bytes_per_element * m * n
    return flops / flops_per_s + traffic / memory_bytes_per_s


def memory_bound_s(bytes_moved, memory_bytes_per_s):
    """Seconds of elementwise work (norms, activations, softmax, dropout) moving these bytes."""
    return np.asarray(bytes_moved, dtype=float) / memory_bytes_per_s


def fp8_cast_s(m, n, k, memory_bytes_per_s, input_share=1.0, grad_share=1.0):
    """(forward, backward) seconds of casting one fp8 Linear's operands (input M x K, weight
    K x N, gradient of the output M x N) from 16 bits, with dynamic tensorwise scales: bytes as
    torchao's float8 training roofline counts them, the activations' amax fused into the
    previous kernel (torch.compile; Transformer Engine's fused casts):

        forward   4 MK (read 2, write both layouts 1 + 1) + 5 KN (amax 2; read 2, write 1)
        backward  4 MN + 3 KN (the weight's second layout)

    ``input_share`` / ``grad_share``: the share of the M rows of the input / of the output's
    gradient this device casts (1/t where sequence parallelism shards them before a gather).
    """
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    return ((4.0 * m * k * input_share + 5.0 * k * n) / memory_bytes_per_s,
            (4.0 * m * n * grad_share + 3.0 * k * n) / memory_bytes_per_s)
