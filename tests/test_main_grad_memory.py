"""Megatron-Core's distributed optimizer (ZeRO-1 under the default framework) holds an fp32
main_grad buffer, whole, in bf16 training: 2 + 4 + 12/d bytes per parameter, Megatron-Core's
own table (docs/user-guide/features/dist_optimizer.md: bf16 parameters, fp32 gradients,
6 + 12/d), on both prediction paths (``memory.held_grad_bytes_per_param``, docs/model.md §4)."""

from __future__ import annotations

import numpy as np
import pytest
from step_fixtures import dp8_states, one_server

from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.memory import (
    DDP,
    MAIN_GRAD_BYTES,
    ZERO1,
    ZERO2,
    ZERO3,
    held_grad_bytes_per_param,
    reduce_bytes_per_param_of,
)
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

PSI = 6.74e9  # a 7B model
_DP = one_server(PSI, blocks=32)


def test_the_rule_by_strategy_and_framework():
    assert MAIN_GRAD_BYTES == 4.0
    # PyTorch DDP (session 48): its 2 B gradients and their fp32 bucket copy, 2 + 4
    got = held_grad_bytes_per_param(np.array([DDP, ZERO1, ZERO2, ZERO3]), FSDP, 2.0, ranks=8)
    assert got.tolist() == [6.0, 4.0, 2.0, 2.0]
    assert float(held_grad_bytes_per_param(ZERO1, DEEPSPEED, 2.0, ranks=8)) == 2.0
    # a stated reduce dtype is the buffer's (Megatron-Core's grad_reduce_in_fp32 False: bf16)
    assert float(held_grad_bytes_per_param(ZERO1, FSDP, 2.0, 2.0, ranks=8)) == 2.0
    assert float(held_grad_bytes_per_param(ZERO1, FSDP, 4.0, ranks=8)) == 4.0


def test_seven_b_at_dp8_holds_six_plus_twelve_over_eight_bytes_per_parameter():
    # by hand: 2 (bf16 weights) + 4 (fp32 main grads) + 12 / 8 (fp32 master, m, v) = 7.5 B
    z1 = evaluate(StepInputs(strategy=ZERO1, **_DP))
    assert float(z1.memory_bytes) == pytest.approx(PSI * (6 + 12 / 8), rel=1e-12)
    # before: 2 + 2 + 12 / 8 = 5.5 B, 13.5 GB less; DeepSpeed's ZeRO-1 keeps that, and its two
    # ipg buckets (overlap_comm, session 47): 2 x 5e8 x 2 B = 2.0e9, more than its gradient
    # partition at the boundary (PSI / 8 x 2 B = 1.69e9)
    ds = evaluate(StepInputs(strategy=ZERO1, framework=DEEPSPEED, **_DP))
    assert float(ds.memory_bytes) == pytest.approx(PSI * (4 + 12 / 8) + 2.0e9, rel=1e-12)
    # DDP (PyTorch's, fp32 weights under autocast: 4 + 4 + 8) and its fp32 buckets (4, session
    # 48: gradient_as_bucket_view=False), counted 2 + (2 + 4) + 12 = 20 B
    ddp = evaluate(StepInputs(strategy=DDP, **_DP))
    assert float(ddp.memory_bytes) == pytest.approx(PSI * 20, rel=1e-12)


def test_the_layout_path_holds_the_same_buffer():
    x, r, grads, states = dp8_states(1)
    assert grads == pytest.approx(4, rel=1e-12)
    assert states == pytest.approx(6 + 12 / 8, rel=1e-12)
    psi = float(x.params)
    # bf16 gradient reduction stated (NVIDIA's performance recipes): 2 bytes, as before
    assert float(evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).grads_bytes) == (
        pytest.approx(2 * psi, rel=1e-12))
    assert float(evaluate_layouts(x.replace(framework=DEEPSPEED)).grads_bytes) == (
        pytest.approx(2 * psi, rel=1e-12))
    # the exchange and the optimizer read the same buffer (session 44): the step is slower
    # than with bf16 main grads stated, and the layout path's exchange sends their bytes
    assert float(r.step_time_s) > float(
        evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).step_time_s)


def test_one_rule_for_held_reduced_and_read_bytes():
    # memory, wire and optimizer follow one function (memory.py): where Megatron-Core holds
    # 4-byte main grads the reduction is 4 bytes on the wire; DDP under the default framework
    # reduces fp32 gradients too (torch.autocast's fp32 parameters; Megatron's --bf16 main
    # grads, session 45) while holding what it did; elsewhere the stated or the wire's
    strategies = np.array([DDP, ZERO1, ZERO2, ZERO3])
    held = held_grad_bytes_per_param(strategies, FSDP, 2.0, ranks=8)
    wire = reduce_bytes_per_param_of(strategies, FSDP, 2.0, 2.0)
    assert held.tolist() == [6.0, 4.0, 2.0, 2.0]  # DDP: 2 and its buckets' 4 (session 48)
    assert wire.tolist() == [4.0, 4.0, 2.0, 2.0]
    # DeepSpeed reduces in communication_data_type, the 16-bit model dtype: every stage the wire's
    assert reduce_bytes_per_param_of(strategies, DEEPSPEED, 2.0, 2.0).tolist() == [2.0] * 4
    assert reduce_bytes_per_param_of(DDP, FSDP, 2.0, 2.0, 2.0) == 2.0  # a model cast to bf16
    assert reduce_bytes_per_param_of(ZERO2, FSDP, 2.0, 2.0, 4.0) == 4.0  # FSDP reduce_dtype
    assert reduce_bytes_per_param_of(ZERO1, DEEPSPEED, 2.0, 2.0) == 2.0
    for stated in (2.0, 4.0):  # a stated reduce dtype is the buffer's and the wire's
        assert (held_grad_bytes_per_param(ZERO1, FSDP, 2.0, stated, ranks=8)
                == reduce_bytes_per_param_of(ZERO1, FSDP, 2.0, 2.0, stated) == stated)
    # fp32 training: the buffer is the gradients' own 4 bytes, nothing widened
    assert reduce_bytes_per_param_of(ZERO1, FSDP, 4.0, 4.0) == 4.0
    # bf16 gradients sent at 4 bytes whatever the wire; a nominal gradient (1 byte a
    # 'parameter', diagnose without --params) states its reduction and holds it
    assert reduce_bytes_per_param_of(ZERO1, FSDP, 1.0, 2.0) == 4.0
    assert reduce_bytes_per_param_of(ZERO1, FSDP, 1.0, 2.0, 1.0) == 1.0


def test_seven_b_zero1_at_dp8_on_a_dgx_a100_by_hand():
    """gpt-7b (Ψ = 6.74e9, bf16) with Megatron-Core's ZeRO-1 on one DGX A100 (8 GPUs, NVSwitch
    ring busbw 230 GB/s, 2 µs a step), no overlap. Buckets of max(4e7, 1e6·8) = 4e7 parameters:
    168 whole and one of 2e7. A ring reduce-scatter or all-gather of b bytes takes
    7·2 µs + 7/8·b / 230 GB/s. The fp32 main grads reduce-scatter 4Ψ = 26.96 GB: 169·14 µs +
    7/8·26.96e9 / 230e9 = 104.9 ms; the bf16 parameters gather 2Ψ = 13.48 GB: 53.6 ms; 158.6 ms
    and 7/8·6Ψ = 35.4 GB sent. The bf16 recipe (grad_reduce_in_fp32 False, stated 2 bytes):
    2 x 53.6 = 107.3 ms and 7/8·4Ψ = 23.6 GB, 1.48x less time."""
    from scalesim.predict import predict
    from scalesim.profiles import load_hardware, load_workload, profile_from_presets
    from scalesim.schemas import Scenario

    psi, alpha, busbw = 6.74e9, 2e-6, 230e9
    latency = 169 * 7 * alpha
    reduce = latency + 7 / 8 * 4 * psi / busbw
    gather = latency + 7 / 8 * 2 * psi / busbw
    assert reduce + gather == pytest.approx(0.1586, abs=1e-4)
    assert 2 * gather == pytest.approx(0.1073, abs=1e-4)
    hw, wl = load_hardware("dgx-a100"), load_workload("gpt-7b")
    scenario = Scenario(devices=[8], strategy="zero1", overlap=False)
    fp32 = predict(profile_from_presets(hw, wl), scenario)[0]
    bf16 = predict(profile_from_presets(hw, wl.model_copy(
        update={"reduce_bytes_per_param": 2.0})), scenario)[0]
    assert fp32.comm_total_s == pytest.approx(reduce + gather, rel=1e-9)
    assert fp32.comm_bytes == pytest.approx(7 / 8 * 6 * psi, rel=1e-12)
    assert bf16.comm_total_s == pytest.approx(2 * gather, rel=1e-9)
    assert bf16.comm_bytes == pytest.approx(7 / 8 * 4 * psi, rel=1e-12)
    # memory: 2 + 4 + 12/8 against 2 + 2 + 12/8 bytes a parameter, the same rule
    assert fp32.memory_bytes - bf16.memory_bytes == pytest.approx(2 * psi, rel=1e-9)


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


def test_the_sharding_remedy_says_the_bytes_the_model_sends():
    """DDP -> Megatron-Core's ZeRO-1 on a bf16 workload: the reduce-scatter carries the fp32 main
    grads (1 unit x 4 B) and the all-gather the bf16 weights (1 unit x 2 B), against DDP's
    all-reduce (2 units x 2 B): 6 / 4 = 1.5x the bytes, not "the same bytes" (session 44: the
    caveat counted units alone). Session 45: DDP's all-reduce carries fp32 gradients too
    (torch.autocast; Megatron's --bf16), 2 units x 4 B: 6 / 8 = 0.75x. Stated bf16 gradients
    (NVIDIA's recipes, a model cast to bf16) send the same bytes; DeepSpeed's ZeRO-1 (all-reduce
    + gather, 3 units at 2 B) 1.5x its stage 0's 2 units at 2 B, as before."""
    from scalesim.remedies import sharding_caveat
    from scalesim.schemas import Workload

    bf16 = Workload(name="w", params=1e9, wire_bytes_per_param=2.0, grad_bytes_per_param=2.0)
    assert "sends 0.75x the bytes of now per step" in sharding_caveat(
        "ddp", "zero1", "fsdp", 1, 8, workload=bf16)
    stated = bf16.model_copy(update={"reduce_bytes_per_param": 2.0})
    assert "sends the same bytes as now per step" in sharding_caveat(
        "ddp", "zero1", "fsdp", 1, 8, workload=stated)
    assert "sends 1.5x the bytes of now per step" in sharding_caveat(
        "ddp", "zero1", "deepspeed", 1, 8, workload=bf16)
    # an fp32 wire (the data-parallel presets' 4 B): the main grads are the wire's, same bytes
    fp32 = bf16.model_copy(update={"wire_bytes_per_param": 4.0})
    assert "sends the same bytes as now per step" in sharding_caveat(
        "ddp", "zero1", "fsdp", 1, 8, workload=fp32)


def test_a_split_layouts_ddp_holds_megatron_cores_fp32_main_grads():
    """tp 2 x dp 4, DDP, bf16 (GPT 1.652e9 parameters, 0.826e9 a device): Megatron-Core's DDP
    (a split layout's, session 47) keeps its fp32 ``main_grad`` buffer and no bf16 ``param.grad``
    beside it (the backward hook adds ``param.grad`` into ``main_grad`` and sets it to None,
    ``distributed_data_parallel.py:578-579``, d98e8a6): 0.826e9 x (2 + 4 + 12) = 14.868 GB of
    states, Megatron-Core's 18 B non-distributed (dist_optimizer.md), where the model held
    0.826e9 x 16 = 13.216 GB (grads 1.652 GB, now 3.304 GB). Memory alone moves: the same step."""
    from step_fixtures import dp8_layout

    local = 1.652e9 / 2
    split = evaluate_layouts(dp8_layout(DDP, dp=4, tp=2))
    assert float(split.grads_bytes) == pytest.approx(local * 4, rel=1e-12)
    assert float(split.weights_bytes + split.grads_bytes + split.optimizer_bytes) == (
        pytest.approx(14.868e9, rel=1e-12))
    # a pipeline is a split too: its fullest stage holds 4 B a parameter of its gradients
    piped = evaluate_layouts(dp8_layout(DDP, dp=4, pp=2))
    assert float(piped.grads_bytes) == pytest.approx(2 * float(piped.weights_bytes), rel=1e-12)
    # fp16 main grads stated (Megatron --fp16, --grad-reduce-in-bf16): the buffer's 2 bytes
    fp16 = evaluate_layouts(dp8_layout(DDP, dp=4, tp=2, reduce_bytes_per_param=2.0))
    assert float(fp16.grads_bytes) == pytest.approx(local * 2, rel=1e-12)
    assert float(fp16.step_time_s) != float(split.step_time_s)  # its bf16 wire and sweep
    # tp = pp = 1 stays PyTorch DDP's (fp32 weights, grads and buckets under autocast, 20 B
    # counted as 2 + (2 + 4) + 12, session 48), and DeepSpeed's stage 0 its 16-bit gradients
    assert float(evaluate_layouts(dp8_layout(DDP)).grads_bytes) == pytest.approx(
        1.652e9 * (2 + 4), rel=1e-12)
    deepspeed = evaluate_layouts(dp8_layout(DDP, dp=4, tp=2, framework=DEEPSPEED))
    assert float(deepspeed.grads_bytes) == pytest.approx(local * 2, rel=1e-12)
    # the rule itself: the same buffer the wire and the optimizer's sweep read (one rule)
    held = float(held_grad_bytes_per_param(DDP, FSDP, 2.0, split=True, ranks=4))
    assert held == float(reduce_bytes_per_param_of(DDP, FSDP, 2.0, 2.0)) == MAIN_GRAD_BYTES
    assert float(held_grad_bytes_per_param(DDP, FSDP, 2.0, 2.0, True, ranks=4)) == 2.0
    assert float(held_grad_bytes_per_param(ZERO2, FSDP, 2.0, split=True, ranks=4)) == 2.0
