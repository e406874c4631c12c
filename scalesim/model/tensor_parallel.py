"""Tensor-parallel (Megatron) communication per layer and micro-batch.

Megatron's tensor parallelism (Shoeybi et al. 2019, arXiv 1909.08053, §3) splits the attention
and MLP matrices over t devices; each layer all-reduces its b x s x h output twice in forward
(after attention, after the MLP) and twice in backward (their conjugates). Full activation
recomputation repeats the forward, so two more. With sequence parallelism (Korthikanti et al.
2022, §4.2.2) each all-reduce becomes a reduce-scatter plus an all-gather of the same total
volume and time in the ring model. The collectives run on the tensor group's link (inside one
server when the placement keeps tp there) and are exposed: the layer waits for its result.
docs/model.md §14.
"""

from __future__ import annotations

import numpy as np

from scalesim.model import collectives as coll
from scalesim.model.transformer import RECOMPUTE_FULL, RECOMPUTE_SELECTIVE


def collectives_per_layer(recompute, early_stop=False, sequence_parallel=False, op_sac=False):
    """All-reduces (or RS + AG pairs) per layer per micro-batch: 2 forward + 2 backward, + 2
    more in the recomputed forward of full recomputation. With ``early_stop`` (PyTorch's
    non-reentrant checkpoint, torch >= 2.1) the recomputation ends before the MLP's down
    projection, so the all-reduce of its output is not rerun (1 more, not 2); with sequence
    parallelism only that reduce-scatter is skipped, the all-gather before the MLP is rerun
    (1.5 pairs). Selective recompute with ``op_sac`` (torchtitan's per-op policy) saves the
    reduce-scatters' outputs and reruns the two all-gathers (1 pair); without sequence
    parallelism it reruns the attention output's all-reduce, which the MLP's norm input needs
    (1; the recomputation stops before the MLP's, early stop). Korthikanti's selective: 0."""
    stop = np.asarray(early_stop, dtype=bool)
    rerun = np.where(stop, np.where(np.asarray(sequence_parallel, dtype=bool), 1.5, 1.0), 2.0)
    r = np.asarray(recompute)
    per_op = np.where((r == RECOMPUTE_SELECTIVE) & np.asarray(op_sac, dtype=bool), 1.0, 0.0)
    return 4.0 + np.where(r == RECOMPUTE_FULL, rerun, per_op)


def allreduce_bytes(micro_batch, seq_len, hidden, cp=1, activation_bytes=2.0):
    """Bytes of one tensor-parallel all-reduce: the layer's b x (s/cp) x h output, with
    ``activation_bytes`` bytes per element (2: 16-bit activations)."""
    return (np.asarray(micro_batch, dtype=float) * np.asarray(seq_len, dtype=float)
            / np.asarray(cp, dtype=float) * np.asarray(hidden, dtype=float) * activation_bytes)


def activation_collective_s(micro_batch, seq_len, hidden, tp, cp, sequence_parallel, latency_s,
                            busbw_GBps, activation_bytes=2.0, nvls_busbw_GBps=np.nan):
    """Seconds of one tensor-parallel collective of a b x (s/cp) x h activation
    (``allreduce_bytes``) over the ``tp`` ranks: NCCL's all-reduce inside one server
    (``collectives.allreduce_s``: the ring, or NVLS where ``nvls_busbw_GBps`` is not NaN,
    whichever is faster), or with ``sequence_parallel`` its reduce-scatter plus all-gather, two
    rings (docs/model.md §14); ``latency_s`` per ring step, ``busbw_GBps`` GB/s."""
    size = allreduce_bytes(micro_batch, seq_len, hidden, cp, activation_bytes)
    allreduce = coll.allreduce_s(size, tp, 1, latency_s, busbw_GBps, latency_s, busbw_GBps,
                                 nvls_busbw_GBps=nvls_busbw_GBps)
    rs_ag = 2.0 * coll.ring_reduce_scatter_s(size, tp, latency_s, busbw_GBps)
    return np.where(np.asarray(sequence_parallel, dtype=bool), rs_ag, allreduce)


def tp_comm_per_layer_s(micro_batch, seq_len, hidden, tp, cp, recompute, sequence_parallel,
                        latency_s, busbw_GBps, activation_bytes=2.0, nvls_busbw_GBps=np.nan,
                        early_stop=False, op_sac=False):
    """Seconds of tensor-parallel collectives of one layer and one micro-batch on one device.

    ``micro_batch`` sequences of ``seq_len`` tokens, ``hidden`` elements per token,
    ``activation_bytes`` bytes per element; ``latency_s`` per ring step and ``busbw_GBps`` (GB/s,
    nccl-tests bus bandwidth) of the tensor group's link.

    The all-reduces are NCCL's choice inside one server (``collectives.allreduce_s``): the ring,
    or NVLS where the server's switch reduces (``nvls_busbw_GBps``; NaN: none), whichever is
    faster for the message; reduce-scatter and all-gather (sequence parallelism) are rings
    (docs/model.md §2)."""
    one = activation_collective_s(micro_batch, seq_len, hidden, tp, cp, sequence_parallel,
                                  latency_s, busbw_GBps, activation_bytes, nvls_busbw_GBps)
    return collectives_per_layer(recompute, early_stop, sequence_parallel, op_sac) * one


LOSS_ALLREDUCES = 3  # VocabParallelCrossEntropy: max, sum of exponentials, target logit
LOSS_BYTES_PER_TOKEN = 4.0  # one fp32 value per token each


def tp_comm_end_stages_s(micro_batch, seq_len, hidden, tp, cp, sequence_parallel, latency_s,
                         busbw_GBps, activation_bytes=2.0, nvls_busbw_GBps=np.nan):
    """(first stage, last stage) seconds of the tensor-parallel collectives outside the layers
    for one micro-batch (Megatron-Core, docs/model.md §14): the vocabulary-parallel embedding
    all-reduces its b x (s/cp) x h output in forward (``VocabParallelEmbedding``; with sequence
    parallelism a reduce-scatter, all-gathered in backward); the output layer all-reduces its
    input's gradient in backward (with sequence parallelism: all-gather forward, reduce-scatter
    backward); the vocabulary-parallel cross entropy all-reduces 3 fp32 values per token
    (``VocabParallelCrossEntropy``). Not overlapped (userbuffers cover the layers' linears)."""
    one = activation_collective_s(micro_batch, seq_len, hidden, tp, cp, sequence_parallel,
                                  latency_s, busbw_GBps, activation_bytes, nvls_busbw_GBps)
    loss = LOSS_ALLREDUCES * coll.allreduce_s(
        allreduce_bytes(micro_batch, seq_len, 1.0, cp, LOSS_BYTES_PER_TOKEN), tp, 1, latency_s,
        busbw_GBps, latency_s, busbw_GBps, nvls_busbw_GBps=nvls_busbw_GBps)
    return one, one + loss
