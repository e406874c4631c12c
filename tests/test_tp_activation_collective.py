"""One tensor-parallel activation collective (an all-reduce of b x (s/cp) x h, or its
reduce-scatter plus all-gather with sequence parallelism) was written twice, five lines alike,
in ``tp_comm_per_layer_s`` (the layers) and ``tp_comm_end_stages_s`` (embedding and output
layer): one function now, ``tensor_parallel.activation_collective_s``; both bit-identical over
micro-batch 1/2/8 x tp 1/2/4/8 x sequence parallel, cp 1/2, recompute none/selective/full,
NVLS or not, early stop, op-SAC."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.model import collectives as coll
from scalesim.model import tensor_parallel as tpm


def test_sequence_parallel_is_two_rings_by_hand():
    # b 1 x s 1024 x h 1024 x 2 bytes = 2,097,152 bytes; tp 4, 1 us a step, 100 GB/s:
    # a ring reduce-scatter is 3 x 1 us + 3/4 x 2,097,152 / 1e11 s = 18.72864 us; two of them
    t = tpm.activation_collective_s(1, 1024, 1024, 4, 1, True, 1e-6, 100.0)
    assert float(t) == pytest.approx(2 * (3e-6 + 0.75 * 2_097_152 / 1e11), rel=1e-12)
    assert float(t) == pytest.approx(37.45728e-6, rel=1e-12)


def test_without_it_the_all_reduce_nccl_would_pick():
    size = 2_097_152.0
    t = tpm.activation_collective_s(1, 1024, 1024, 4, 1, False, 1e-6, 100.0)
    assert float(t) == float(coll.allreduce_s(size, 4, 1, 1e-6, 100.0, 1e-6, 100.0))
    # context parallelism over 2 halves the tokens, so the bytes
    half = tpm.activation_collective_s(1, 1024, 1024, 4, 2, True, 1e-6, 100.0)
    assert float(half) == pytest.approx(2 * (3e-6 + 0.75 * 1_048_576 / 1e11), rel=1e-12)


def test_the_layers_and_the_end_stages_read_the_same_collective():
    one = tpm.activation_collective_s(2, 4096, 4096, 8, 1, np.array([False, True]), 2e-6, 370.0)
    layer = tpm.tp_comm_per_layer_s(2, 4096, 4096, 8, 1, 0, np.array([False, True]), 2e-6, 370.0)
    assert np.array_equal(layer, 4.0 * one)  # 2 forward + 2 backward, no recompute
    first, _ = tpm.tp_comm_end_stages_s(2, 4096, 4096, 8, 1, np.array([False, True]), 2e-6,
                                        370.0)
    assert np.array_equal(first, one)  # the embedding's one collective
