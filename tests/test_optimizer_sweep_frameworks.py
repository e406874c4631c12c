"""Each framework's optimizer step, in bytes per parameter it updates, as read in its source
(``memory.optimizer_sweep_bytes_per_param``; docs/model.md §4 "The optimizer step by
framework"), by hand on 8e9 parameters at 3,350 GB/s (an H100), and the same on both paths."""

from __future__ import annotations

import pytest
from probe_runner import run_probe
from test_collective_waits import GPT, HW

from scalesim.model.compute import optimizer_roofline_s
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.memory import DDP, ZERO1, ZERO2, ZERO3, optimizer_sweep_bytes_per_param
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.zero_exchange import framework_label

PSI = 8e9
BW = 3.35e12  # B/s
FULL = PSI * 30 / BW  # the model's sweep of all parameters on one device, 71.642 ms


def _optimizer_s(strategy, framework=FSDP, devices=8, **bytes_):
    base = dict(devices=devices, devices_per_node=8, micro_batch=1, accumulation=1,
                overhead_s=0.0, per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3,
                params=PSI, wire_bytes_per_param=2.0, intra_latency_s=1e-6,
                intra_busbw_GBps=100.0, inter_latency_s=1e-6, inter_busbw_GBps=100.0,
                blocks=32, strategy=strategy, framework=framework, **bytes_)
    x = StepInputs(**base)
    return float(evaluate(x.replace(optimizer_step_s=FULL)).compute_s
                 - evaluate(x).compute_s)


def test_pytorch_ddp_under_autocast_steps_fp32_weights_and_gradients():
    """fused AdamW on fp32 weights (K's master) and fp32 gradients: reads w, g, m, v (16 B),
    writes w, m, v (12 B): 8e9 × 28 / 3.35e12 = 66.866 ms on one device (was 30 B, 71.642 ms).
    On 8 the fp32 gradients are also copied into DDP's buckets and back, 4 × 4 = 16 B (session
    56): 8e9 × 44 / 3.35e12 = 105.07 ms."""
    assert _optimizer_s(DDP, devices=1) == pytest.approx(PSI * 28 / BW, rel=1e-12)
    assert _optimizer_s(DDP, devices=1) == pytest.approx(66.866e-3, rel=1e-4)
    assert _optimizer_s(DDP) == pytest.approx(PSI * 44 / BW, rel=1e-12)
    assert _optimizer_s(DDP) == pytest.approx(105.07e-3, rel=1e-4)
    # fp32 training sweeps 2·4 + 4 + 2·8 = 28 as before; a stated 16-bit reduction (a model
    # cast to bf16, apex O2) keeps the model's 30, and copies bf16 buckets on 8: 30 + 4 × 2
    assert float(optimizer_sweep_bytes_per_param(DDP, FSDP, 4.0, 4.0, 8.0)) == 28.0
    assert float(optimizer_sweep_bytes_per_param(DDP, FSDP, 2.0, 2.0, 12.0, 2.0)) == 30.0
    assert _optimizer_s(DDP, devices=1, reduce_bytes_per_param=2.0) == pytest.approx(
        FULL, rel=1e-12)
    assert _optimizer_s(DDP, reduce_bytes_per_param=2.0) == pytest.approx(PSI * 38 / BW,
                                                                          rel=1e-12)


def test_megatron_distributed_optimizer_casts_and_copies_back():
    """ZeRO-1 on 8: 1e9 parameters a device. fp32 main grads: Adam 2·12 + 4 = 28, the fp32 main
    shard copied into the bf16 parameter buffer 4 + 2, the gradient-norm clip on by default
    (``clip_grad`` 1.0: norm of the fp32 main grads 4, TE's ``multi_tensor_scale_tensor`` 4 + 4):
    46 B, 1e9 × 46 / 3.35e12 = 13.731 ms (was 34 B, 10.149 ms, without the clip). bf16 main
    grads: their cast to fp32 first, 2 + 4: 52 B, 15.522 ms (was 40 B, 11.940 ms)."""
    assert _optimizer_s(ZERO1) == pytest.approx(1e9 * 46 / BW, rel=1e-12)
    assert _optimizer_s(ZERO1) == pytest.approx(13.731e-3, rel=1e-4)
    assert _optimizer_s(ZERO1, reduce_bytes_per_param=2.0) == pytest.approx(
        1e9 * 52 / BW, rel=1e-12)
    assert _optimizer_s(ZERO1, reduce_bytes_per_param=2.0) == pytest.approx(15.522e-3, rel=1e-4)
    # fp32 training: the main shard is the parameter (a view), nothing to cast or copy; the
    # clip reads and scales the fp32 grads as in bf16: 28 + 12 = 40
    assert float(optimizer_sweep_bytes_per_param(ZERO1, FSDP, 4.0, 4.0, 8.0)) == 40.0


def test_deepspeed_flattens_casts_unscales_and_copies_back():
    """Stages 1-3 in bf16: the gradient norm every step, each bf16 gradient cast to fp64 and
    normed (2 + 8, read 8: 18), flatten the gradient partition 2 + 2, cast it to fp32 2 + 4,
    unscale (and clip) in place 4 + 4, Adam 2·12 + 4, copy the fp32 partition into the bf16 one
    4 + 2: 70 B, 1e9 × 70 / 3.35e12 = 20.896 ms a device on 8 (was 52 B, 15.522 ms, without the
    norm)."""
    for zero in (ZERO1, ZERO2, ZERO3):
        assert _optimizer_s(zero, DEEPSPEED) == pytest.approx(1e9 * 70 / BW, rel=1e-12)
    assert _optimizer_s(ZERO2, DEEPSPEED) == pytest.approx(20.896e-3, rel=1e-4)
    # fp32 training: no cast; the norm casts fp32 to fp64, 4 + 8 + 8 = 20; stages 1-2 copy
    # their fp32 clone back (4 + 4): 20 + 8 + 8 + 28 + 8 = 72; stage 3's fp32 partition is the
    # parameters' own, no copy: 64
    assert float(optimizer_sweep_bytes_per_param(ZERO2, DEEPSPEED, 4.0, 4.0, 8.0)) == 72.0
    assert float(optimizer_sweep_bytes_per_param(ZERO3, DEEPSPEED, 4.0, 4.0, 8.0)) == 64.0
    # stage 0 (its BF16_Optimizer) keeps the model's sweep
    assert _optimizer_s(DDP, DEEPSPEED) == pytest.approx(FULL, rel=1e-12)


@pytest.mark.parametrize("framework", [FSDP, DEEPSPEED])
@pytest.mark.parametrize("zero", [DDP, ZERO1, ZERO2, ZERO3])
def test_both_paths_pay_the_same_sweep(framework, zero):
    """GPT (1.652e9 parameters) at dp 8 on A100s, tp = pp = 1: the layout step's optimizer
    equals the data-parallel step's given the one-device sweep of all parameters (both told the
    A100's bandwidth, so PyTorch DDP's bucket copies, 16 B a parameter since session 56, run at
    it on either path, in both computes compared)."""
    x = LayoutInputs(**{**GPT, **HW, **dict(dp=8, tp=1, pp=1, cp=1, zero=zero, micro_batch=1,
                                            global_batch=8, schedule=0, virtual_stages=1,
                                            recompute=0, sequence_parallel=False,
                                            framework=framework)})
    layout = float(evaluate_layouts(x).compute_s
                   - evaluate_layouts(x.replace(optimizer_step_s=0.0)).compute_s)
    full = float(optimizer_roofline_s(1.652e9, 2.0, 2.0, 12.0, 2039.0))
    shards = 8 if zero >= ZERO1 else 1
    swept = float(optimizer_sweep_bytes_per_param(zero, framework, 2.0, 2.0, 12.0))
    assert layout == pytest.approx(1.652e9 / shards * swept / 2039e9, rel=1e-12)
    base = dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
                per_sample_s=1.0, backward_fraction=2 / 3, params=1.652e9,
                wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
                inter_latency_s=1e-6, inter_busbw_GBps=100.0, blocks=32, strategy=zero,
                framework=framework, memory_bandwidth_GBps=2039.0)
    dp = float(evaluate(StepInputs(**base, optimizer_step_s=full)).compute_s
               - evaluate(StepInputs(**base, optimizer_step_s=0.0)).compute_s)
    assert dp == pytest.approx(layout, rel=1e-12)



def _layout_optimizer_s(**layout):
    """The layout step's optimizer time of GPT (1.652e9 parameters) on A100s (2,039 GB/s)."""
    x = LayoutInputs(**{**GPT, **HW, **dict(cp=1, micro_batch=1, global_batch=8, schedule=0,
                                            virtual_stages=1, recompute=0,
                                            sequence_parallel=False), **layout})
    return float(evaluate_layouts(x).compute_s
                 - evaluate_layouts(x.replace(optimizer_step_s=0.0)).compute_s)


def test_a_split_layouts_ddp_is_megatron_cores_float16_optimizer():
    """tp 2 × dp 4, DDP: Megatron-Core's DDP with its non-distributed optimizer
    (``Float16OptimizerWithFloat16Params``: ``main_grad.float()``, Adam on the fp32 main params,
    ``_copy_main_params_to_model_params``) and its default gradient-norm clip (norm 4 + scale
    4 + 4 of the fp32 main grads), 46 B with fp32 main grads, 52 with fp16/bf16 ones.
    Each device updates 1.652e9 / 2 = 0.826e9 parameters: 0.826e9 × 46 / 2.039e12 = 18.635 ms
    (was 34 B without the clip, 13.773 ms); fp16 main grads (Megatron ``--fp16``, stated 2)
    0.826e9 × 52 / 2.039e12 = 21.065 ms (was 40 B, 16.204 ms). tp 1 stays PyTorch DDP's 28
    (PyTorch DDP does not clip by default; its bucket copies, session 56, run at the device's
    bandwidth whatever the optimizer's step, so they are in both computes compared)."""
    split = _layout_optimizer_s(dp=4, tp=2, pp=1, zero=DDP)
    assert split == pytest.approx(0.826e9 * 46 / 2.039e12, rel=1e-12)
    assert split == pytest.approx(18.635e-3, rel=1e-4)
    fp16 = _layout_optimizer_s(dp=4, tp=2, pp=1, zero=DDP, reduce_bytes_per_param=2.0)
    assert fp16 == pytest.approx(21.065e-3, rel=1e-4)
    piped = _layout_optimizer_s(dp=4, tp=1, pp=2, zero=DDP)  # the larger stage's share
    assert piped > _layout_optimizer_s(dp=8, tp=1, pp=1, zero=DDP) / 2 * 46 / 28
    assert _layout_optimizer_s(dp=8, tp=1, pp=1, zero=DDP) == pytest.approx(
        1.652e9 * 28 / 2.039e12, rel=1e-12)
    # the rule itself, per parameter: fp32 training has nothing to cast or copy (FP32Optimizer),
    # and clips as the mixed-precision one does (FP32Optimizer.step, optimizer.py:1351): 40
    assert float(optimizer_sweep_bytes_per_param(DDP, FSDP, 2.0, 2.0, 12.0, split=True)) == 46.0
    assert float(optimizer_sweep_bytes_per_param(DDP, FSDP, 2.0, 2.0, 12.0, 2.0, True)) == 52.0
    assert float(optimizer_sweep_bytes_per_param(DDP, FSDP, 4.0, 4.0, 8.0, split=True)) == 40.0
    # and the words every command prints for it
    assert framework_label("ddp", "fsdp", split=True) == "Megatron-Core DDP"
    assert framework_label("ddp", "fsdp", pipeline=True) == "Megatron-Core DDP"
    assert framework_label("ddp", "fsdp") == "PyTorch DDP"


@pytest.mark.slow
def test_a_real_ddp_step_under_autocast_sweeps_what_the_model_counts():
    """2 gloo ranks, ``torch.autocast(bfloat16)``, fused AdamW (``tests/ddp_optimizer_probe.py``):
    rank 0's step reads 16 B and writes 12 B per parameter (fp32 weight, gradient, m, v; weight,
    m, v), all fp32, 28 B: the model's DDP sweep, not its 30."""
    step = run_probe("ddp_optimizer_probe.py")
    assert step["updated"] == step["params"]  # DDP updates every parameter on every rank
    assert step["param_dtypes"] == step["grad_dtypes"] == step["dtypes"] == ["float32"]
    assert step["read"] / step["updated"] == 16.0
    assert step["written"] / step["updated"] == 12.0
    assert (step["read"] + step["written"]) / step["updated"] == float(
        optimizer_sweep_bytes_per_param(DDP, FSDP, 2.0, 2.0, 12.0))
