"""The framework's fused attention kernel: a scenario knob (``Scenario.attention_kernel``,
``--attention-kernel``, the app's link key ``ak``), its names, labels and help.

The names live here, below ``scalesim.bounds`` (the knob table) and ``scalesim.schemas``, so
both can read them without importing the presets; what each kernel sustains on each device is
``presets.attention_efficiency_of`` (docs/model.md §13, "Attention kernel").
"""

from __future__ import annotations

from typing import Literal, get_args

FLASH2_KERNEL = "flash2"  # FlashAttention-2 class: flash-attn 2, PyTorch SDPA's default flash
# backend, Triton flash attention (what PyTorch-native stacks run)
VENDOR_KERNEL = "fused-vendor"  # cuDNN fused attention (Transformer Engine), FlashAttention-3
AttentionKernel = Literal["flash2", "fused-vendor"]
ATTENTION_KERNELS: tuple[str, ...] = get_args(AttentionKernel)
DEFAULT_ATTENTION_KERNEL = VENDOR_KERNEL
ATTENTION_KERNEL_HELP = (
    "the framework's fused attention kernel (docs/model.md §13, 'Attention kernel'): "
    "'fused-vendor' (default; cuDNN fused attention through Transformer Engine, "
    "FlashAttention-3: the attention core at the matmuls' sustained efficiency; Megatron, NeMo) "
    "or 'flash2' (flash-attn 2, PyTorch SDPA's default flash backend, Triton: the attention "
    "core at 0.35 of the 16-bit peak on Hopper, FlashAttention-3 paper; the matmuls' "
    "efficiency elsewhere; FSDP, torchtitan). A transformer workload on a datasheet profile "
    "only: refused with a profile whose compute was measured (its timings ran its own kernel), "
    "ignored by a parameter-count workload")
# Each kernel in a few words, where a choice is shown (the app's control and report)
ATTENTION_KERNEL_LABELS = {
    VENDOR_KERNEL: "fused vendor kernel (cuDNN / Transformer Engine, FlashAttention-3; default)",
    FLASH2_KERNEL: "FlashAttention-2 class (flash-attn 2, PyTorch SDPA; 0.35 of the peak on "
                   "Hopper)",
}
