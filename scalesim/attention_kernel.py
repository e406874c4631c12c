"""The framework's fused attention kernel: a scenario knob (``Scenario.attention_kernel``,
``--attention-kernel``, the app's link key ``ak``), its names, labels and help.

The names live here, below ``scalesim.bounds`` (the knob table) and ``scalesim.schemas``, so
both can read them without importing the presets; what each kernel sustains on each device is
``presets.attention_efficiency_of`` (docs/model.md §13, "Attention kernel"). Also the kernels'
names in a profiler trace (``TRACE_ATTENTION_KERNELS``, ``attention_family``: docs/diagnose.md).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal, get_args

FLASH2_KERNEL = "flash2"  # FlashAttention-2 class: flash-attn 2, PyTorch SDPA's flash backend
# (SDPA's first choice on Hopper until its builds prefer cuDNN: torch 2.11's wheels, below),
# Triton flash attention (what PyTorch-native stacks run)
VENDOR_KERNEL = "fused-vendor"  # cuDNN fused attention (Transformer Engine; PyTorch SDPA's cuDNN
# backend, which SDPA prefers on Hopper and Blackwell where its build's cuDNN is recent enough,
# ``check_prefer_cudnn_attention`` in aten/src/ATen/native/transformers/cuda/sdp_utils.cpp: the
# H200 of benchmarks/results/h200-2026-11-30 ran cuDNN's kernels under torch 2.11), FlashAttention-3
AttentionKernel = Literal["flash2", "fused-vendor"]
ATTENTION_KERNELS: tuple[str, ...] = get_args(AttentionKernel)
ATTENTION_KERNEL_HELP = (
    "the framework's fused attention kernel (docs/model.md §13, 'Attention kernel'): "
    "'fused-vendor' (cuDNN fused attention through Transformer Engine or PyTorch "
    "SDPA's cuDNN backend, FlashAttention-3: the attention core at the matmuls' sustained "
    "efficiency; Megatron, NeMo, SDPA on Hopper where its build prefers cuDNN) or 'flash2' "
    "(flash-attn 2, PyTorch SDPA's flash backend, Triton: the attention core at 0.35 of the "
    "16-bit peak on Hopper, FlashAttention-3 paper; FSDP, torchtitan with SDPA's flash). On "
    "an A100 both run FlashAttention-2 (Transformer Engine prefers cuDNN's kernel from Hopper "
    "on) at 0.66 of the peak, the FlashAttention-2 paper's forward and backward maxima. Not "
    "given: the kernel the profile's timings ran, as its calibration found (fused-vendor where "
    "it recorded none, and on a datasheet profile). With measured timings, another kernel is "
    "priced where their calibration recorded which one they ran (the timings read with its "
    "attention core, the rest kept), refused where it did not; a parameter-count workload "
    "ignores it")
# Each kernel in a few words, where a choice is shown (the app's control and report), and
# the choice of none (``Scenario.attention_kernel`` None, the app's ``OWN_KERNEL_CHOICE``)
ATTENTION_KERNEL_LABELS = {
    VENDOR_KERNEL: "fused vendor kernel (cuDNN / Transformer Engine, FlashAttention-3)",
    FLASH2_KERNEL: "FlashAttention-2 class (flash-attn 2, PyTorch SDPA's flash backend; 0.35 of "
                   "the peak on Hopper)",
}
OWN_KERNEL_LABEL = ("the kernel the profile's timings ran (default; the fused vendor kernel "
                    "where none was recorded, and on a datasheet profile)")

# ------------------------------------------------------------------ in a profiler trace

MEM_EFFICIENT_FAMILY = "mem-efficient"  # CUTLASS memory-efficient attention (xformers, SDPA)
# Attention kernels in a PyTorch profiler (Kineto) trace, by the kernel's name: (family, regular
# expression searched in the name, where the name comes from). The one table of them
# (``scalesim.traces`` sums their time per step, ``scalesim.diagnosis`` reads the family); the
# first pattern found names the family. Names as the sources define them:
TRACE_ATTENTION_KERNELS: tuple[tuple[str, str, str], ...] = (
    (FLASH2_KERNEL, r"flash_(?:fwd|bwd)_\w*kernel",
     "FlashAttention-2's kernels flash_fwd_kernel, flash_fwd_splitkv_kernel, "
     "flash_fwd_splitkv_combine_kernel, flash_bwd_dot_do_o_kernel, "
     "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel, flash_bwd_convert_dq_kernel...: namespace "
     "flash:: in flash-attn 2 (Dao-AILab/flash-attention csrc/flash_attn/src/"
     "flash_fwd_launch_template.h, flash_bwd_launch_template.h, commit 0251105a), "
     "pytorch_flash:: in PyTorch SDPA's flash backend (pytorch/pytorch aten/src/ATen/native/"
     "transformers/cuda/flash_attn/flash_fwd_launch_template.h, flash_bwd_launch_template.h)"),
    (VENDOR_KERNEL, r"cudnn_generated_fort_native_sdpa",
     "cuDNN fused attention (PyTorch SDPA's cuDNN backend, Transformer Engine's cuDNN "
     "backend): SDPBackend.CUDNN_ATTENTION launched "
     "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0 on an H100 "
     "(meta-pytorch/tritonbench#41); the kernels are generated inside cuDNN, no source names them"),
    (VENDOR_KERNEL, r"flash::FlashAttn(?:Fwd|Bwd)",
     "FlashAttention-3: cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>, FlashAttnBwdSm90, "
     "FlashAttnBwdPreprocess, FlashAttnBwdPostprocessConvertdQ, FlashAttnFwdCombine "
     "(Dao-AILab/flash-attention hopper/flash_fwd_launch_template.h, "
     "flash_bwd_launch_template.h, commit 0251105a)"),
    (MEM_EFFICIENT_FAMILY, r"fmha_cutlass[FB]_",
     "memory-efficient attention: fmha_cutlassF_* forward, fmha_cutlassB_* backward "
     "(facebookresearch/xformers xformers/csrc/attention/cuda/fmha/kernels/cutlassF.h; PyTorch "
     "SDPA's mem-efficient backend, aten/src/ATen/native/transformers/cuda/mem_eff_attention/"
     "kernels/cutlassF.h)"),
)
# one expression per row, each starting with a literal (re scans for it fast: about 1 us a name)
_TRACE_PATTERNS = tuple((family, re.compile(pattern))
                        for family, pattern, _ in TRACE_ATTENTION_KERNELS)


# What a calibration can read off its own timed step (calibration/attention_probe.py, the
# profile's ``attention_kernel``): one of the trace families
TimedAttention = Literal["flash2", "fused-vendor", "mem-efficient"]
TIMED_ATTENTION_FAMILIES: tuple[str, ...] = get_args(TimedAttention)


def attention_family(kernel_name: str) -> str | None:
    """The attention family of a GPU kernel named ``kernel_name`` in a profiler trace
    (``TRACE_ATTENTION_KERNELS``: flash2, fused-vendor, mem-efficient), or None for any other
    kernel."""
    return next((family for family, pattern in _TRACE_PATTERNS
                 if pattern.search(kernel_name)), None)


def most_named_family(families) -> str | None:
    """The attention family most of ``families`` name (a calibration's attention calls, a
    job's ranks), empty names and None left out; None where none is left."""
    counts = Counter(f for f in families if f)
    return counts.most_common(1)[0][0] if counts else None


def planner_kernel_of(family: str | None) -> str:
    """The planner's kernel (``ATTENTION_KERNELS``) that prices timings whose attention ran
    ``family`` (``TIMED_ATTENTION_FAMILIES``, or None where none was found or recorded):
    FlashAttention-2's class as itself; the vendor kernel, the memory-efficient kernel (no
    published rate of its own: its core at the matmuls' sustained share, as the vendor
    kernel's) and none found as the vendor kernel, the assumption of profiles that record no
    kernel (docs/model.md §13, "Attention kernel")."""
    return FLASH2_KERNEL if family == FLASH2_KERNEL else VENDOR_KERNEL
