"""The gradient buckets a traced DDP job all-reduced, as the trace model's buckets.

DDP all-reduces its gradients in buckets (``bucket_cap_mb``: 25 MiB after a 1 MiB first by
default), posted in the order backward fills them. The model lays a gradient out as a first
bucket, equal middle ones and a last one (``overlap.bucket_layout``); the last is ready only
as backward ends, so its all-reduce is the least of the exchange left exposed (docs/model.md
§3). The trace model's gradient is a nominal ``NOMINAL_GRADIENT_BYTES`` in units of the traced
exchange's bytes; where the traces record the sizes of the all-reduces a step posts
(``StepBreakdown.reduction_elements``; on a GPU trace whose host posts record none, the bytes
of its all-reduce NCCL kernels, ``StepBreakdown.reduction_kernel_bytes``), its buckets are
those sizes' shares of it (``model_buckets``), so its exposure floor is the traced last
bucket's; else DDP's defaults, said in a note (``default_buckets_note``). docs/diagnose.md,
"The exchange's buckets".
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from scalesim.bounds import bound
from scalesim.figures import MIB_BYTES, whole_percent
from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, bucket_layout

# The trace model's gradient, bytes in units of the traced exchange's: the shares of its
# buckets and the link's bus bandwidth (which moves it in the traced time) are what count
NOMINAL_GRADIENT_BYTES = 100e6
# a middle bucket a millionth larger than the traced last one, so the model's layout keeps the
# last as traced (``bucket_layout``: the last holds what is left, less than a middle one)
_ABOVE_LAST = 1.0 + 1e-6


class ModelBuckets(NamedTuple):
    """The trace model's gradient and DDP buckets (``Scenario`` knobs)."""

    grad_bytes: float  # the model's gradient, bytes (units of the traced exchange's)
    bucket_mib: float  # each middle bucket, MiB of that gradient
    first_bucket_mib: float  # the first bucket, MiB of that gradient
    elements: tuple[float, ...]  # the traced buckets' sizes in post order; () default
    # what those sizes are (``HOST_SIZES``, ``KERNEL_SIZES``); "" for the defaults
    sizes_from: str = ""


# where the traced buckets' sizes were read: the host posts' elements, else (a GPU trace whose
# host posts record none) the all-reduce NCCL kernels' bytes (``StepBreakdown`` fields)
HOST_SIZES = "host posts' elements"
KERNEL_SIZES = "NCCL kernels' bytes"
_SIZE_FIELDS = {HOST_SIZES: "reduction_elements", KERNEL_SIZES: "reduction_kernel_bytes"}

DEFAULT_BUCKETS = ModelBuckets(NOMINAL_GRADIENT_BYTES, DDP_BUCKET_BYTES / MIB_BYTES,
                               DDP_FIRST_BUCKET_BYTES / MIB_BYTES, ())


def traced_buckets(summaries, reductions: int = 1,
                   sizes_from: str = HOST_SIZES) -> tuple[float, ...]:
    """Sizes of one gradient reduction's all-reduces, in post order: the sequence most steps
    of every rank post (``StepBreakdown.reduction_elements``, elements; ``sizes_from``
    ``KERNEL_SIZES``: ``reduction_kernel_bytes``, bytes), its last ``reductions``-th where
    the job reduces that many times a step (DDP without ``no_sync``,
    ``trace_collectives.ddp_reductions``) and it splits so (else all of it: the reductions the
    user says, ``--grad-sync``, that the traces do not show); () where no step records them."""
    seen = Counter(sizes for s in summaries for st in s.steps
                   if (sizes := getattr(st, _SIZE_FIELDS[sizes_from])))
    if not seen:
        return ()
    posts = seen.most_common(1)[0][0]
    r = max(int(reductions), 1)
    one = posts[len(posts) - len(posts) // r:] if len(posts) % r == 0 else posts
    return one if sum(one) > 0 else ()


def model_buckets(elements: tuple[float, ...], sizes_from: str = HOST_SIZES) -> ModelBuckets:
    """The model's buckets for the traced ones (``elements``, in post order): its first the
    first's share, its last the last's, its middle ones their mean (``bucket_layout``: first,
    equal middle ones, the rest last), of a gradient of ``NOMINAL_GRADIENT_BYTES`` (more where a
    middle bucket would fall under the bucket knob's least, 0.1 MiB: the same shares).
    Where the last traced bucket is larger than the middle ones' mean (a large embedding
    reduced last), the middle ones take its size and the first what is left, so the last stays
    as traced. () gives DDP's defaults (``DEFAULT_BUCKETS``). ``sizes_from``: what the sizes
    are (``ModelBuckets.sizes_from``)."""
    total = float(sum(elements))
    if not elements or total <= 0:
        return DEFAULT_BUCKETS
    shares = [n / total for n in elements]
    first, last, m = shares[0], shares[-1], len(shares)
    if m == 1:  # one bucket: all of it first (nothing left for a middle one)
        first, middle = 1.0, 1.0
    elif m == 2:
        middle = last
    else:
        middle = (1.0 - first - last) / (m - 2)
        if last > middle * _ABOVE_LAST:
            middle = last * _ABOVE_LAST
            first = max(1.0 - last - (1.0 - first - last) // middle * middle, 0.0)
    least = bound("bucket_mib").low * MIB_BYTES
    grad = max(NOMINAL_GRADIENT_BYTES, least / middle)
    if middle * grad / MIB_BYTES > bound("bucket_mib").high:
        return DEFAULT_BUCKETS
    return ModelBuckets(grad, middle * grad / MIB_BYTES, first * grad / MIB_BYTES,
                        tuple(elements), sizes_from)


def last_share(buckets: ModelBuckets) -> float:
    """The model's last bucket's share of its gradient (the exchange's least exposed part;
    a gradient that fills its buckets evenly: a middle one's)."""
    layout = bucket_layout(buckets.grad_bytes, buckets.bucket_mib * MIB_BYTES,
                           buckets.first_bucket_mib * MIB_BYTES)
    tail = float(layout.last) if layout.last > 0 else (
        float(layout.mid) if layout.n_mid >= 1 else float(layout.first))
    return tail / buckets.grad_bytes


# why the traces' buckets are not read, where they record no size
NO_SIZES = ("the traces record no size for the gradient all-reduces their hosts posted "
            "(gloo's under record_shapes=True; record_param_comms carries its own)")
# ... on GPU traces, whose NCCL kernels record none either (Kineto copies In msg nelems and
# dtype onto a kernel from the record_param_comms the host recorded for it)
NO_GPU_SIZES = ("the traces record no size for the gradient all-reduces, neither on their "
                "hosts' posts nor on their NCCL kernels (In msg nelems and dtype, which Kineto "
                "copies from the host's record_param_comms)")
# what to record for the job's own buckets, by why they are not read
_RECORD = {NO_SIZES: "record with record_shapes=True for its own buckets",
           NO_GPU_SIZES: "record with ProfilerActivity.CPU beside CUDA for its own buckets"}


def default_buckets_note(why: str = NO_SIZES) -> str:
    """The note of a DDP job whose model keeps DDP's default buckets, ``why`` its words."""
    return (f"{why}, so the "
            "remedies' model lays the exchange out in DDP's default buckets (25 MiB after a "
            f"1 MiB first, of a nominal {NOMINAL_GRADIENT_BYTES / 1e6:.0f} MB gradient): its "
            "least exposed part, the last bucket's all-reduce, is "
            f"{whole_percent(last_share(DEFAULT_BUCKETS))} of the exchange, whatever the job's "
            "bucket_cap_mb" + (f"; {_RECORD[why]}" if why in _RECORD else ""))
