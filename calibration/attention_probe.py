"""Which attention kernel a timed step ran: its ``scaled_dot_product_attention`` calls asked,
with their own arguments, which backend PyTorch dispatches them to (``torch._fused_sdp_choice``,
the choice SDPA itself makes), during one untimed step (docs/calibration.md, "The attention
kernel").

PyTorch's SDPA picks its backend at run time, by the build, the device and the shapes: on
Hopper, FlashAttention-2's kernel until its builds prefer cuDNN's (torch 2.11's wheels do: the
H200 of benchmarks/results/h200-2026-11-30 ran ``cudnn_generated_fort_native_sdpa_sm90_flash_*``),
and the two sustain 0.35 of the peak and about the matmuls' rate there (docs/model.md §13). That
kernel is what the fit and the planner must price the attention core at, so the calibration asks
rather than guess it from versions.

Not ``torch.profiler``: a profiler session leaves CUPTI's callbacks in place in the torch builds
that do not tear it down (pytorch/pytorch#144455: training 10-20 % slower after the session),
which would slow every timing after it. Asking the dispatcher costs a few microseconds and
changes nothing. Every call of SDPA is asked, however its caller named it (``F.``, a name
imported from torch.nn.functional, ``nn.MultiheadAttention``: ``sdpa_choices``). What it cannot
see: attention that does not go through SDPA (flash-attn's or Transformer Engine's own calls in
a model of yours): then none is recorded, and the profile is read as before, with the vendor
kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from scalesim.attention_kernel import (
    FLASH2_KERNEL,
    MEM_EFFICIENT_FAMILY,
    VENDOR_KERNEL,
    most_named_family,
)

# SDPA's backends (torch.nn.attention.SDPBackend names) as the attention families of
# attention_kernel.TRACE_ATTENTION_KERNELS: its flash backend is FlashAttention-2's kernel
# (aten/src/ATen/native/transformers/cuda/flash_attn/), its cuDNN backend cuDNN's fused attention,
# its efficient backend CUTLASS's memory-efficient kernel; the math backend is no fused kernel
SDPA_BACKEND_FAMILIES = {"FLASH_ATTENTION": FLASH2_KERNEL, "CUDNN_ATTENTION": VENDOR_KERNEL,
                         "EFFICIENT_ATTENTION": MEM_EFFICIENT_FAMILY}


def sdpa_family(choice: int) -> str | None:
    """The attention family of SDPA backend number ``choice`` (``SDPBackend``'s value, as
    ``torch._fused_sdp_choice`` returns it), or None (math, another, unknown)."""
    from torch.nn.attention import SDPBackend

    try:
        name = SDPBackend(int(choice)).name
    except ValueError:
        return None
    return SDPA_BACKEND_FAMILIES.get(name)


def as_autocast_casts(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """SDPA's arguments as autocast hands them to SDPA's backend choice: under autocast SDPA is
    a lower-precision op (``KERNEL_CUDA(scaled_dot_product_attention, lower_precision_fp)`` in
    aten/src/ATen/autocast_mode.cpp), so its floating-point tensors but float64 (query, key,
    value, a float mask) are cast to the autocast dtype before ``scaled_dot_product_attention``
    picks its backend; ``torch._fused_sdp_choice`` asked from Python is no autocast op and sees
    them uncast (an fp32 query and key beside a bf16 value: the math backend, or fp32 ones:
    the memory-efficient backend, where SDPA runs bf16 on flash or cuDNN). Unchanged where
    autocast is off for the query's device."""
    import torch

    query = args[0] if args else kwargs.get("query")
    if not isinstance(query, torch.Tensor):
        return args, kwargs
    kind = query.device.type
    try:
        enabled, dtype = torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind)
    except (TypeError, AttributeError, RuntimeError):  # torch < 2.4: CUDA's own query only
        if kind != "cuda":
            return args, kwargs
        enabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
    if not enabled:
        return args, kwargs

    def cast(x):
        if (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64
                and x.device.type == kind):
            return x.to(dtype)
        return x

    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


@contextlib.contextmanager
def sdpa_choices(found: list):
    """Within it, every ``scaled_dot_product_attention`` call also appends to ``found`` the
    backend number SDPA dispatches that call to (its own arguments, as autocast casts them
    (``as_autocast_casts``), asked of ``torch._fused_sdp_choice``; None where the question
    fails), then runs as it would. Each call is asked once, however the caller named SDPA:
    ``torch.nn.functional.scaled_dot_product_attention`` is replaced, which catches the calls
    that look it up there (``F.scaled_dot_product_attention``; ``nn.MultiheadAttention``, whose
    ``multi_head_attention_forward`` calls it from inside torch.nn.functional, where no function
    mode reaches); a function mode catches those that bound the function itself (``from
    torch.nn.functional import scaled_dot_product_attention``, ``torch._C._nn``'s), which the
    replacement does not reach. torch.compile'd modules run eagerly within it (``_eager``)."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

    original = F.scaled_dot_product_attention
    sdpa = torch._C._nn.scaled_dot_product_attention

    def ask(args, kwargs):
        if _compiling():  # torch.compile tracing the step: no question in its graph
            return
        try:
            cast_args, cast_kwargs = as_autocast_casts(args, kwargs)
            found.append(int(torch._fused_sdp_choice(*cast_args, **cast_kwargs)))
        except Exception:  # noqa: BLE001 - a private op of another signature: not known
            found.append(None)

    class Asking(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is sdpa:
                ask(args, kwargs)
            return func(*args, **kwargs)

    mode = Asking()

    def asking(*args, **kwargs):
        if not any(m is mode for m in _get_current_function_mode_stack()):
            ask(args, kwargs)  # the mode is off (inside another torch function's handling)
        return original(*args, **kwargs)  # else the mode asks

    F.scaled_dot_product_attention = asking
    try:
        with mode, _eager():
            yield found
    finally:
        F.scaled_dot_product_attention = original


def _compiling() -> bool:
    """Whether torch.compile is tracing the code that calls this (its graph takes no question:
    ``_fused_sdp_choice`` returns no tensor, which a ``fullgraph=True`` compile refuses)."""
    import torch

    try:
        return bool(torch.compiler.is_compiling())
    except AttributeError:  # torch < 2.3
        return False


def _eager():
    """torch.compile'd modules run eagerly within it (torch 2.6+, ``set_stance('force_eager')``),
    so that their attention calls are asked, with no recompilation; SDPA picks the backend of
    their compiled graph by the same dispatcher. Older torch: as they are (a graph's calls are
    then not asked)."""
    import torch

    stance = getattr(torch.compiler, "set_stance", None)
    return stance("force_eager") if stance is not None else contextlib.nullcontext()


def timed_attention_kernel(step: Callable[[], object]) -> str | None:
    """The attention family ('flash2', 'fused-vendor', 'mem-efficient') SDPA dispatched most of
    ``step()``'s attention calls to, ``step()`` run once (torch.compile'd modules eagerly:
    ``sdpa_choices``); None where none was (no SDPA call, the math backend, a question that failed).
    Call it on a GPU: on a CPU SDPA's flash backend is a CPU kernel, which no GPU figure
    prices."""
    found: list = []
    with contextlib.ExitStack() as stack:
        # the probe's machinery on a torch it does not know: the step as it is, nothing
        # recorded (the timings never depend on the probe)
        with contextlib.suppress(Exception):
            stack.enter_context(sdpa_choices(found))
        step()
    return most_named_family(sdpa_family(c) for c in found if c is not None)
