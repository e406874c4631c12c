"""ZeRO-3 holds the parameters of the unit it computes and of the one it prefetches whole
(FSDP: the current and the next wrapped block), on the data-parallel path as on the layout path
(``memory.ZERO3_GATHERED_UNITS``, docs/model.md §4): 2 x Psi w / L on top of the shards."""

from __future__ import annotations

import pytest

from scalesim.model.memory import DDP, ZERO2, ZERO3
from scalesim.model.step import StepInputs, evaluate

_ONE = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
            per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=1e9,
            wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
            inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=10)


def test_zero3_memory_counts_two_gathered_blocks():
    # Psi = 1e9, 2 + 2 + 12 bytes per parameter over 8 devices: shards 16e9 / 8 = 2.00 GB; two
    # whole blocks of 1e9 / 10 parameters x 2 bytes = 0.40 GB: 2.40 GB
    z3 = evaluate(StepInputs(strategy=ZERO3, **_ONE))
    assert float(z3.memory_bytes) == pytest.approx(2.0e9 + 0.4e9, rel=1e-12)
    # 32 blocks estimated for 6.7e9 parameters (sharding.default_block_count): 2 x 6.7e9/32 x 2
    est = evaluate(StepInputs(strategy=ZERO3, **{**_ONE, "params": 6.7e9, "blocks": 0}))
    assert float(est.memory_bytes) == pytest.approx(6.7e9 * 16 / 8 + 2 * 6.7e9 / 32 * 2,
                                                     rel=1e-12)
    # ZeRO-2 and DDP hold the whole parameters already: nothing added
    for strategy, states in ((ZERO2, 2 + 14 / 8), (DDP, 16.0)):
        r = evaluate(StepInputs(strategy=strategy, **_ONE))
        assert float(r.memory_bytes) == pytest.approx(1e9 * states, rel=1e-12)
    # one device: the whole model, one copy (no gathered buffer on top of 1/1 shards)
    one = evaluate(StepInputs(strategy=ZERO3, **{**_ONE, "devices": 1, "devices_per_node": 1}))
    assert float(one.memory_bytes) == pytest.approx(16e9, rel=1e-12)


def test_a_device_that_fits_the_shards_alone_does_not_fit():
    r = evaluate(StepInputs(strategy=ZERO3, device_memory_bytes=2.2e9, **_ONE))
    assert not bool(r.fits)
