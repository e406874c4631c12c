"""ZeRO-3 holds the parameters of the unit it computes and of the one it prefetches whole
(FSDP: the current and the next wrapped block), on the data-parallel path as on the layout path
(``memory.ZERO3_GATHERED_UNITS``, docs/model.md §4): 2 x Psi w / L on top of the shards."""

from __future__ import annotations

import pytest
from step_fixtures import one_server

from scalesim.model.memory import DDP, ZERO2, ZERO3
from scalesim.model.step import StepInputs, evaluate

_ONE = one_server(1e9, blocks=10)


def test_zero3_memory_counts_two_gathered_blocks():
    # Psi = 1e9, 2 + 2 + 12 bytes per parameter over 8 devices: shards 16e9 / 8 = 2.00 GB; two
    # whole blocks of 1e9 / 10 parameters x 2 bytes = 0.40 GB: 2.40 GB
    z3 = evaluate(StepInputs(strategy=ZERO3, **_ONE))
    assert float(z3.memory_bytes) == pytest.approx(2.0e9 + 0.4e9, rel=1e-12)
    # 32 blocks estimated for 6.7e9 parameters (sharding.default_block_count): 2 x 6.7e9/32 x 2
    est = evaluate(StepInputs(strategy=ZERO3, **{**_ONE, "params": 6.7e9, "blocks": 0}))
    assert float(est.memory_bytes) == pytest.approx(6.7e9 * 16 / 8 + 2 * 6.7e9 / 32 * 2,
                                                     rel=1e-12)
    # ZeRO-2 and DDP hold the whole parameters already: nothing added (FSDP's ZeRO-2 holds its
    # gradient shard in fp32: 2 + 4/8 + 12/8; PyTorch DDP its fp32 buckets, 16 + 4, session 48)
    for strategy, states in ((ZERO2, 2 + 16 / 8), (DDP, 20.0)):
        r = evaluate(StepInputs(strategy=strategy, **_ONE))
        assert float(r.memory_bytes) == pytest.approx(1e9 * states, rel=1e-12)
    # one device: the whole model, one copy (no gathered buffer on top of 1/1 shards)
    one = evaluate(StepInputs(strategy=ZERO3, **{**_ONE, "devices": 1, "devices_per_node": 1}))
    assert float(one.memory_bytes) == pytest.approx(16e9, rel=1e-12)


def test_a_device_that_fits_the_shards_alone_does_not_fit():
    r = evaluate(StepInputs(strategy=ZERO3, device_memory_bytes=2.2e9, **_ONE))
    assert not bool(r.fits)


def test_the_layout_path_gathers_nothing_where_nothing_is_sharded():
    """A layout whose parameters are not sharded (dp x cp = 1: one replica, FSDP's NO_SHARD)
    holds no gathered units, as the data-parallel path has it on one device: ZeRO-3 at dp 1
    needs DDP's memory (one device; at tp 8 on 8, DDP's less its fp32 main grads); at dp 8
    it holds its 2 layers whole beside
    the shards, 2 x (12 h^2 + 4 h) x 2 B of gpt-1.7b (h 2304, the 4 h of two LayerNorms:
    254,840,832 B) beside ZeRO-3's shards."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    shape = profile.workload.transformer
    layer_bytes = (12 * shape.hidden**2 + 4 * shape.hidden) * profile.workload.param_bytes_per_param
    assert 2 * layer_bytes == 254_840_832

    def memory(strategy, devices, tp=1):
        return predict(profile, Scenario(devices=[devices], strategy=strategy,
                                         layout=ScenarioLayout(tp=tp)))[0].memory_bytes

    assert memory("zero3", 1) == pytest.approx(memory("ddp", 1), rel=1e-12)
    # at tp 8 DDP is Megatron-Core's, whose fp32 main_grad holds 2 B a parameter more than the
    # 16-bit gradients ZeRO-3's NO_SHARD keeps (session 48): Ψ / 8 x 2 B apart
    w = profile.workload
    assert memory("ddp", 8, tp=8) - memory("zero3", 8, tp=8) == pytest.approx(
        w.params / 8 * (4 - w.grad_bytes_per_param), rel=1e-9)
    ddp, zero3 = memory("ddp", 8), memory("zero3", 8)
    assert zero3 < ddp  # the shards save far more than the two gathered layers cost
    # zero3 - ddp at dp 8: weights, gradients and optimizer state sharded 8 ways, + 2 layers,
    # and PyTorch DDP's fp32 all-reduce buckets (session 48), Ψ x 4 B, which ZeRO-3 has not
    states = w.params * (w.param_bytes_per_param + w.grad_bytes_per_param
                         + w.optimizer_bytes_per_param)
    assert zero3 - ddp == pytest.approx(-states * 7 / 8 + 2 * layer_bytes - 4 * w.params,
                                        rel=1e-9)
