"""Megatron-Core's distributed optimizer (ZeRO-1 under the default framework) holds an fp32
main_grad buffer, whole, in bf16 training: 2 + 4 + 12/d bytes per parameter, Megatron-Core's
own table (docs/user-guide/features/dist_optimizer.md: bf16 parameters, fp32 gradients,
6 + 12/d), on both prediction paths (``memory.held_grad_bytes_per_param``, docs/model.md §4)."""

from __future__ import annotations

import numpy as np
import pytest
from test_collective_waits import GPT, HW

from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import (
    DDP,
    MAIN_GRAD_BYTES,
    ZERO1,
    ZERO2,
    ZERO3,
    held_grad_bytes_per_param,
)
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

PSI = 6.74e9  # a 7B model
_DP = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
           per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=PSI,
           wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
           inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32)


def test_the_rule_by_strategy_and_framework():
    assert MAIN_GRAD_BYTES == 4.0
    got = held_grad_bytes_per_param(np.array([DDP, ZERO1, ZERO2, ZERO3]), FSDP, 2.0)
    assert got.tolist() == [2.0, 4.0, 2.0, 2.0]
    assert float(held_grad_bytes_per_param(ZERO1, DEEPSPEED, 2.0)) == 2.0
    # a stated reduce dtype is the buffer's (Megatron-Core's grad_reduce_in_fp32 False: bf16)
    assert float(held_grad_bytes_per_param(ZERO1, FSDP, 2.0, 2.0)) == 2.0
    assert float(held_grad_bytes_per_param(ZERO1, FSDP, 4.0)) == 4.0


def test_seven_b_at_dp8_holds_six_plus_twelve_over_eight_bytes_per_parameter():
    # by hand: 2 (bf16 weights) + 4 (fp32 main grads) + 12 / 8 (fp32 master, m, v) = 7.5 B
    z1 = evaluate(StepInputs(strategy=ZERO1, **_DP))
    assert float(z1.memory_bytes) == pytest.approx(PSI * (6 + 12 / 8), rel=1e-12)
    # before: 2 + 2 + 12 / 8 = 5.5 B, 13.5 GB less; DeepSpeed's ZeRO-1 keeps that
    ds = evaluate(StepInputs(strategy=ZERO1, framework=DEEPSPEED, **_DP))
    assert float(ds.memory_bytes) == pytest.approx(PSI * (4 + 12 / 8), rel=1e-12)
    # DDP (PyTorch's, fp32 weights under autocast: 4 + 4 + 8) and FSDP's ZeRO-3 (16 / d) as before
    ddp = evaluate(StepInputs(strategy=DDP, **_DP))
    assert float(ddp.memory_bytes) == pytest.approx(PSI * 16, rel=1e-12)


def _layout(**changes):
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=1, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    return LayoutInputs(**{**GPT, **HW, **{**base, **changes}})


def test_the_layout_path_holds_the_same_buffer():
    x = _layout()
    r = evaluate_layouts(x)
    psi = float(x.params)
    assert float(r.grads_bytes) == pytest.approx(4 * psi, rel=1e-12)
    states = float(r.weights_bytes + r.grads_bytes + r.optimizer_bytes)
    assert states == pytest.approx(psi * (6 + 12 / 8), rel=1e-12)
    # bf16 gradient reduction stated (NVIDIA's performance recipes): 2 bytes, as before
    assert float(evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).grads_bytes) == (
        pytest.approx(2 * psi, rel=1e-12))
    assert float(evaluate_layouts(x.replace(framework=DEEPSPEED)).grads_bytes) == (
        pytest.approx(2 * psi, rel=1e-12))
    # the step time does not read the buffer: the exchange and optimizer are as before
    assert float(r.step_time_s) == float(
        evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).step_time_s)


def test_the_validator_states_bf16_main_grads_for_nvidias_performance_recipes():
    from scalesim.shipped import validation_path
    from scalesim.validate_parallel import bf16_main_grad_of, case_inputs, load_parallel_cases

    cases = {c.id: c for c in load_parallel_cases(validation_path(
        "collected_parallel_cases.json"))}
    llama, nemotron = cases["nemo2407_h100_llama2_70b"], cases["nemo2407_h100_nemotron_22b"]
    assert bf16_main_grad_of(llama.source, llama.model.name)
    assert not bf16_main_grad_of(nemotron.source, nemotron.model.name)  # its script drops it
    flags: list[str] = []
    x, _ = case_inputs(llama, flags)
    assert float(x.reduce_bytes_per_param) == 2.0
    assert any("main grads held and reduced in bf16" in f for f in flags)
    x, _ = case_inputs(nemotron, [])
    assert np.isnan(float(x.reduce_bytes_per_param))
