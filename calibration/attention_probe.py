"""Which attention kernel a timed step ran: the step once more under ``torch.profiler``, its
GPU kernels' names read by ``attention_kernel.dominant_attention_family`` (docs/calibration.md,
"The attention kernel").

PyTorch's ``scaled_dot_product_attention`` picks its backend at run time, by the build, the
device and the shapes: on Hopper, FlashAttention-2's kernel until its builds prefer cuDNN's
(torch 2.11's wheels do: the H200 of benchmarks/results/h200-2026-11-30 ran
``cudnn_generated_fort_native_sdpa_sm90_flash_*``), and the two sustain 0.35 and about 0.64 of
the peak there (docs/model.md §13). A block or a user's model may call flash-attn or
Transformer Engine instead. The kernel that ran is what the fit and the planner must price the
attention core at, so the calibration reads it rather than guess it from versions.
"""

from __future__ import annotations

from collections.abc import Callable

from scalesim.attention_kernel import dominant_attention_family


def profiled_kernels(step: Callable[[], object], activities) -> list[tuple[str, float]]:
    """(name, time in us) of every event ``torch.profiler`` records while ``step()`` runs
    once, with ``activities`` (``ProfilerActivity``); the device's time where the event has one
    (a GPU kernel), else its CPU time."""
    import torch
    from torch.profiler import profile

    with profile(activities=activities) as prof:
        step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    out = []
    for event in prof.key_averages():
        device_us = getattr(event, "device_time_total", None)
        if device_us is None:  # torch before 2.4
            device_us = getattr(event, "cuda_time_total", 0.0)
        out.append((str(event.key), float(device_us or event.cpu_time_total or 0.0)))
    return out


def timed_attention_kernel(step: Callable[[], object]) -> str | None:
    """The attention family ('flash2', 'fused-vendor', 'mem-efficient') whose GPU kernels took
    the most time in ``step()``, run once under the profiler; None where no kernel is an
    attention kernel (SDPA's math backend, an unfused attention) or the profiler fails (then
    ``step()`` runs once more without it, so that its effects, the gradients, are there; the
    profile records no kernel and is read as before, with the vendor kernel). Call it on a GPU:
    a CPU runs no GPU kernel, and the planner gives a CPU's attention core no rate of its own."""
    from torch.profiler import ProfilerActivity

    try:
        kernels = profiled_kernels(step, [ProfilerActivity.CPU, ProfilerActivity.CUDA])
    except Exception:  # noqa: BLE001 - a profiler that cannot run leaves the kernel unknown
        step()
        return None
    return dominant_attention_family(kernels)
