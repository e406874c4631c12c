"""Read PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, one file per rank.

The file is read as a stream: the top-level object is walked key by key and the
``traceEvents`` array decoded one event at a time (``json.JSONDecoder.raw_decode`` on a buffer of
1 MiB chunks), so memory stays bounded by what is kept: two floats per interval of interest.

What the events mean (names as PyTorch 2.x writes them; HTA classifies GPU kernels the same way:
communication when the name contains ``nccl``, memory for memcpy/memset, computation otherwise):

- steps: ``ProfilerStep#N`` (``user_annotation`` on the CPU thread). On GPU traces a step's
  window is on the device timeline: from the first to the last end of the device events its
  CPU step launched (``cuda_runtime``/``cuda_driver`` launches matched to kernels, memcpys and
  memsets by ``correlation``), widened to the ``gpu_user_annotation`` copy when present. The
  annotation alone ended before the optimizer's kernels on a real H200 trace (torch 2.11,
  docs/calibration.md "GPU path"): the launch-matched span is what the step's CUDA events time;
  without launches or correlations the annotation (else the CPU window) is used;
- GPU: ``cat == "kernel"`` events; NCCL kernels (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``,
  ``ncclKernel_...``) are communication, other kernels and ``gpu_memcpy``/``gpu_memset`` compute;
- CPU-only traces (gloo): ``gloo:all_reduce``/``gloo:broadcast``... annotations (run on
  ``pt_gloo_runloop`` threads), ``record_param_comms``, ``c10d::*`` and ``nccl:*`` ops are
  communication; other ``cpu_op`` events are compute;
- data-loader waits: ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` and
  ``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__``;
- micro-steps (forward and backward passes a step, gradient accumulation's count): the
  forwards of a data-parallel wrapper that start in the step's host window
  (``MICRO_STEP_FORWARDS``: ``DistributedDataParallel.forward``; FSDP2's
  ``FSDP::root_pre_forward``, once per forward of the root; FSDP1's
  ``FullyShardedDataParallel.forward``, nested units merged into the root's), else, where no
  wrapper forward is traced (a plain module), the DataLoader fetches that start in it (nested
  ones merged); of those, only the ones a backward op (``BACKWARD_PREFIX``) follows before the
  next (``with_backward``: an evaluation forward under ``torch.no_grad`` is none; all where the
  trace records no backward op); the count most steps show (``TraceSummary.micro_steps``; None
  where neither is traced, or most steps show none);
- attention: compute kernels whose names ``attention_kernel.attention_family`` knows
  (FlashAttention-2, cuDNN, FlashAttention-3, memory-efficient); the device from the trace's
  ``deviceProperties`` (the name of the device most kernels ran on).

Per step (window W = the step's span), with C compute, M communication and D data-wait
interval sets: ``compute = |(C u D) n W| - |D n W|``; ``comm = |M n W|``;
``overlap = |(C u D) n M n W|`` (communication hidden behind compute or a data wait);
``exposed = comm - overlap``; ``data_wait = |D n W|``; ``idle = |W| - |(C u D u M) n W|``; so
``compute + exposed + data_wait + idle = |W|``. With A the attention kernels' intervals,
``attention = |A n W|``, a part of compute. M leaves out S, the collectives set aside as no
gradient traffic (``no_gradient``: a metric's or the loss's all-reduce):
``set_aside = |S n W|``, ``set_aside_exposed = |(C u D u M u S) n W| - |(C u D u M) n W|``,
the part of idle they took.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import zlib
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from scalesim.attention_kernel import attention_family
from scalesim.bounds import bound
from scalesim.errors import ScalesimError, check_distinct_files, excerpt, require_path
from scalesim.jsonio import ends_mid_json, json_kind, may_go_on, unreadable
from scalesim.process_groups import UNNAMED_ROLE, group_role, ranks_of, whole_or_none

CHUNK_CHARS = 1 << 20
MAX_VALUE_CHARS = 64 << 20  # one JSON value (event or metadata) larger than this is malformed
US = 1e-6  # Chrome-trace timestamps are microseconds
MAX_WORLD_SIZE = 1 << 20  # ranks; the largest training jobs run about 10^5
MAX_ELEMENTS = 1 << 63  # a message's elements past this are no collective's (``input_elements``)

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_STEP = re.compile(r"ProfilerStep#(\d+)$")
# point-to-point communication (a pipeline's sends and receives): c10d::send, c10d::recv_,
# gloo:send, gloo:recv, nccl:send, record_param_comms:send; NCCL's ncclDevKernel_SendRecv and
# ncclKernel_SendRecv_* kernels (which all-to-all runs on too: diagnose reads them as a
# pipeline's only where a process group or the schedule's annotations name one)
_POINT_TO_POINT = re.compile(r"(?:^|[:_])(?:send|recv|sendrecv)(?:[_\s]|$)", re.IGNORECASE)
# a pipeline schedule's forward of one micro-batch on one stage: torch.distributed.pipelining's
# runtime schedules (Interleaved1F1B, ZB, DualPipeV: "PP:<stage>F<micro-batch>", the action's
# repr, also inside an overlapped pair "PP:(0F3;3B1)OVERLAP_F_B") and GPipe ("Forward <i>" and
# "Backward <i>": a forward-only schedule, or a user's own "Forward <i>", has no backward);
# user annotations on the host. A split backward ("PP:0I3", "PP:0W3") marks a zero-bubble one.
_SCHEDULE_FORWARD = re.compile(r"(?:PP:|PP:\(|;)(\d+)F(\d+)(?=[;)]|$)")
_SCHEDULE_SPLIT_BACKWARD = re.compile(r"(?:PP:|PP:\(|;)\d+[IW]\d+(?=[;)]|$)")
_GPIPE = re.compile(r"(Forward|Backward) (\d+)$")

# the host ops of one receive each, by preference: the wait's own annotation, the parameter
# record, the op that posts it (nested or back to back, so one family is counted); recent torch
# names NCCL's with the peer ("nccl:recv 0<-1": the name's first word is matched), and copies
# them onto the device timeline (gpu_user_annotation, not counted)
RECEIVE_FAMILIES = (("gloo:recv", "nccl:recv"), ("record_param_comms:recv",), ("c10d::recv_",))
DATA_PREFIX = "enumerate(DataLoader)#"
# the host annotations of one forward of a data-parallel wrapper: one each per micro-step
# (``summarise``'s micro-step count; FSDP1 writes its name for every unit, nested in the root's)
MICRO_STEP_FORWARDS = ("DistributedDataParallel.forward", "FSDP::root_pre_forward",
                       "FullyShardedDataParallel.forward")
DATA_FETCHES = "DataLoader fetches"  # the micro-step count's fallback (``micro_steps_from``)
# a backward node's host op (the autograd engine's; PyTorch 1.8/1.9 record the node by its own
# name, "CudnnConvolutionBackward", "ReluBackward1": the pytorch/kineto tb_plugin resnet50
# samples, torch 1.9, without the prefix): a micro-step is a forward that a backward follows
BACKWARD_PREFIX = "autograd::engine::evaluate_function:"
OLD_BACKWARD = re.compile(r"^[A-Z]\w*Backward\d*$")
IN_PROCESS_LOADER = "_SingleProcessDataLoaderIter"  # num_workers=0: loads in the training process
CPU_COMM_PREFIXES = ("gloo:", "nccl:", "c10d::", "record_param_comms")


def first_input_elements(args: dict, argument: int = 0) -> int | None:
    """Elements of an op's first input (``argument``: the argument's place) from its ``Input
    Dims`` (traces recorded with ``record_shapes=True``; a tensor list's first tensor), None
    where absent or not a shape."""
    dims = args.get("Input Dims")
    if not isinstance(dims, list) or len(dims) <= argument:
        return None
    first = dims[argument]
    while isinstance(first, list) and first and isinstance(first[0], list):
        first = first[0]
    if not isinstance(first, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in first):
        return None
    return math.prod(first)  # a whole number, however large


def input_elements(args: dict, argument: int = 0) -> int | float | None:
    """Elements each rank puts into a collective: an NCCL kernel's or ``record_param_comms``'
    ``In msg nelems`` (an all-gather's shard, a reduce-scatter's or all-reduce's whole buffer),
    else a gloo op's first input (``first_input_elements``; ``argument``: the input's place,
    ``host_input_argument``); None where the trace has neither, or a count no message has
    (negative, not finite, 2^63 or more)."""
    n = args.get("In msg nelems")
    if type(n) not in _PLAIN_NUMBERS:
        n = first_input_elements(args, argument)
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return None
    return n if 0 <= n < MAX_ELEMENTS else None


def host_input_argument(name: str, collective: str) -> int:
    """The place of a host op's input among its ``Input Dims``: 1 for a ``c10d::`` all-gather
    (``c10d::allgather_(Tensor[][] outputs, Tensor[] inputs, ...)``, ``_allgather_base_(Tensor
    output, Tensor input, ...)``: its first, the outputs, a list of lists recorded as ``[]``
    that read as 1 element), else 0."""
    return int(name.startswith("c10d::") and collective_kind(collective) == "all-gather")


def backward_op(name: str, cat) -> bool:
    """Whether a trace event is a backward node's host op (``BACKWARD_PREFIX``, else a
    pre-1.10 trace's ``OLD_BACKWARD`` cpu_op)."""
    return name.startswith(BACKWARD_PREFIX) or (
        cat == "cpu_op" and "Backward" in name and OLD_BACKWARD.match(name) is not None)


def with_backward(starts: np.ndarray, backward_starts: np.ndarray) -> np.ndarray:
    """The micro-step events' ``starts`` (sorted, s) that a backward op (``backward_starts``,
    sorted, s) follows before the next of them starts (after the last: any time): a forward
    with no backward (an evaluation under ``torch.no_grad`` inside a profiler step) is no
    micro-step. All of ``starts`` where the trace records no backward op (it cannot tell)."""
    if backward_starts.size == 0 or starts.size == 0:
        return starts
    following = np.append(starts[1:], np.inf)
    first = np.searchsorted(backward_starts, starts, "left")  # the first backward at or after
    found = first < backward_starts.size
    return starts[found & (backward_starts[np.minimum(first, backward_starts.size - 1)]
                           < following)]


# The collectives a trace names, by kind (a name's letters, lower case, without '_': NCCL's
# ncclDevKernel_AllGather_RING_LL, gloo:all_gather, record_param_comms:_allgather_base).
COLLECTIVE_KINDS = {"allreduce": "all-reduce", "allgather": "all-gather",
                    "reducescatter": "reduce-scatter"}
# the host ops of one collective each, by preference (nested: c10d::allreduce_ holds
# record_param_comms; gloo's run later on its own threads): where a collective was posted
HOST_COLLECTIVE_FAMILIES = ("record_param_comms", "c10d::", "nccl:", "gloo:")


# The kinds that reduce (a gradient exchange's: DDP's buckets, ZeRO's reduce-scatters; a metric's
# or the loss's all-reduce for logging too, ``metric_sized``)
REDUCTION_KINDS = ("all-reduce", "reduce-scatter")
# A reduction whose message holds under this share of the elements of the largest reduction its
# rank's trace records (``input_elements``: an all-reduce's or a reduce-scatter's whole buffer)
# is no gradient traffic: a metric or the loss all-reduced for logging (``dist.all_reduce(loss)``,
# 1 element) or another control tensor. DDP's gradient buckets are 25 MiB (``bucket_cap_mb``),
# its first 1 MiB (4 % of one; its last holds what is left and may be smaller, but a micro-step
# that posts it posts the others too); an FSDP or DeepSpeed unit reduces a block's parameters.
# Set aside from the exchange's readings (strategy, gradient sync, DDP's reductions a step)
# and its time: ``TraceSummary.set_aside``, the tallies' "aside" (``new_record``),
# ``StepBreakdown.set_aside_s``; an all-gather by the elements it gathers (``no_gradient``)
METRIC_ELEMENTS_SHARE = 0.01
# the kinds the rule sets aside (``no_gradient``): the reductions, and the all-gathers by the
# elements they gather (a metric all-gathered each step, ``dist.all_gather`` of an accuracy)
SET_ASIDE_KINDS = (*REDUCTION_KINDS, "all-gather")


def metric_sized(elements, largest: float):
    """Whether a reduction of ``elements`` (a number or an array; NaN: no size recorded, never
    set aside) is no gradient traffic beside the trace's ``largest`` reduction (elements):
    under ``METRIC_ELEMENTS_SHARE`` of it."""
    return np.asarray(elements, dtype=float) < METRIC_ELEMENTS_SHARE * largest


def no_gradient(kind, elements, ranks, largest: float):
    """Whether collectives of ``kind`` (a ``COLLECTIVE_KINDS`` value, or an array of them; None
    or another: no rule) of ``elements`` each rank puts in (NaN: no size recorded) over
    ``ranks`` (NaN: not known) are set aside as no gradient traffic: what each carries,
    a reduction's buffer (its input) or an all-gather's gathered tensor (its input x the ranks;
    none where they are not known: a shard is a small part of its unit on many ranks), under
    ``METRIC_ELEMENTS_SHARE`` of the ``largest`` reduction (``metric_sized``); the rule's kinds
    are ``SET_ASIDE_KINDS``."""
    kinds = np.asarray(kind, dtype=object)
    elements = np.asarray(elements, dtype=float)
    carried = np.where(kinds == "all-gather", elements * np.asarray(ranks, dtype=float), elements)
    return np.isin(kinds, SET_ASIDE_KINDS) & metric_sized(carried, largest)


def collective_kind(name: str) -> str | None:
    """The kind (``COLLECTIVE_KINDS``) of a collective's name (``_collective_name``), None for
    one of no kind (broadcast, send/recv)."""
    letters = name.lower().replace("_", "")
    return next((k for key, k in COLLECTIVE_KINDS.items() if key in letters), None)


def micro_steps_with(micro_starts: np.ndarray, starts: np.ndarray) -> int:
    """In how many of a step's micro-steps (``micro_starts``: the step's, sorted, s; each runs
    to the next, the first from the step's start) one of ``starts`` (the step's collectives of
    one kind, s) starts."""
    if starts.size == 0:
        return 0
    at = np.maximum(np.searchsorted(micro_starts, starts, "right") - 1, 0)
    return int(np.unique(at).size)


def point_to_point(collective: str) -> bool:
    """Whether a communication op or kernel (its ``_collective_name`` key) sends or receives
    point to point."""
    return bool(_POINT_TO_POINT.search(collective))


class _Truncated(Exception):
    pass


class _Stream:
    """A JSON text read in chunks; ``value()`` decodes the next complete value."""

    def __init__(self, handle: IO[str], source: str):
        self.handle, self.source = handle, source
        self.buf, self.pos, self.eof = "", 0, False
        self.blank = True  # nothing but white space read so far: an empty file

    def _fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.blank = self.blank and not chunk.strip()
        self.pos = 0
        return True

    def peek(self) -> str:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                raise _Truncated

    def take(self, expected: str, opening: bool = False) -> None:
        """Consume one of ``expected``; ``opening``: the file's first character (an error says
        what else the file may be)."""
        ch = self.peek()
        if ch not in expected:
            hint = ("; a trace is the JSON object torch.profiler writes, and a runs file (CSV, "
                    "or a JSON list of runs) is read without --trace: scalesim diagnose FILE"
                    if opening else "")
            raise ScalesimError(
                f"{self.source}: not a Chrome trace (expected {expected!r}, found "
                f"{ch!r} at character {self.pos}){hint}"
            )
        self.pos += 1

    def value(self, what: str):
        """The next JSON value; ``what`` names it in errors ("event 12", "key 'x'")."""
        self.peek()
        while True:
            try:
                val, end = _DECODER.raw_decode(self.buf, self.pos)
            except RecursionError:  # json's decoder recurses once per nesting level
                raise ScalesimError(
                    f"{self.source}: {what} is nested too deeply (past Python's "
                    "recursion limit) to be a profiler trace"
                ) from None
            except ValueError as exc:
                if not isinstance(exc, json.JSONDecodeError):  # a number past the digit limit
                    raise ScalesimError(
                        f"{self.source}: {what} holds a number too long to read (over Python's "
                        "digit limit); torch's profiler writes none: re-export the trace"
                    ) from None
                # A value cut by the end of the buffer fails as the text running out
                # (``jsonio.ends_mid_json``): read on; anything else is malformed.
                if not ends_mid_json(self.buf, exc):
                    raise ScalesimError(f"{self.source}: {what}: malformed JSON ({exc.msg})") from None
                if len(self.buf) - self.pos > MAX_VALUE_CHARS:
                    raise ScalesimError(
                        f"{self.source}: {what} is over {MAX_VALUE_CHARS} characters; not a profiler trace"
                    ) from None
                if not self._fill():
                    raise _Truncated from None
                continue
            if not self.eof and may_go_on(self.buf, end) and self._fill():
                continue  # a number may continue in the next chunk
            self.pos = end
            return val


class _OwnedGzip(gzip.GzipFile):
    """A GzipFile that closes the file it reads (GzipFile leaves a given ``fileobj`` open)."""

    def __init__(self, raw) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _open_text(path: Path) -> IO[str]:
    """The trace as text, gunzipped where it starts with gzip's magic; opened once, so a pipe
    (``<(zcat trace.json.gz)``) reads as a file does."""
    raw = open(path, "rb")  # noqa: SIM115 (the caller closes what it returns)
    try:
        magic = raw.peek(2)[:2]
        stream = _OwnedGzip(raw) if magic == b"\x1f\x8b" else raw
        return io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace")  # -sig: a BOM
    except BaseException:
        raw.close()
        raise


# Kineto's event categories in PyTorch 1.8/1.9 traces, renamed in June 2021 (pytorch/kineto#206,
# "Refactor trace activities"; PyTorch 1.10 on) to the names read here; the pytorch/kineto
# tb_plugin samples (torch 1.9, resnet50) carry the old ones
OLD_CATEGORIES = {
    "Operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}


def _current_category(event: dict) -> dict:
    """``event`` with a pre-1.10 category under its current name (``OLD_CATEGORIES``)."""
    cat = event.get("cat")
    if isinstance(cat, str) and cat in OLD_CATEGORIES:
        event["cat"] = OLD_CATEGORIES[cat]
    return event


def _nothing_after(stream: _Stream) -> None:
    """ScalesimError where anything but white space follows the trace's top-level object: two
    exports joined (``cat``), or a file written over a longer one, whose second trace would be
    left out unread."""
    try:
        ch = stream.peek()
    except _Truncated:
        return
    raise ScalesimError(
        f"{stream.source}: {ch!r} after the trace's closing '}}': two traces joined in one "
        "file, or one written over a longer one; give one profiler export per file"
    )


def iter_trace(path: str | os.PathLike[str], metadata: dict):
    """Yield ``(number, event)`` for each trace event (a dict) of a Kineto JSON file, numbered from
    1 in file order (non-objects count too), its category as PyTorch >= 1.10 names it
    (``OLD_CATEGORIES``); top-level keys go into ``metadata``."""
    file = Path(require_path(path, "trace"))  # '' would be Path('.'), the folder
    try:
        handle = _open_text(file)
    except FileNotFoundError:
        raise ScalesimError(f"{file}: no such file") from None
    except OSError as exc:
        raise unreadable(file, exc) from None
    stream = _Stream(handle, str(file))
    seen_events = False
    try:
        with handle:
            stream.take("{", opening=True)
            if stream.peek() == "}":
                stream.pos += 1
            else:
                while True:
                    key = stream.value("a top-level key")
                    if not isinstance(key, str):
                        raise ScalesimError(f"{file}: not a JSON object with string keys")
                    stream.take(":")
                    if key == "traceEvents":
                        seen_events = True
                        stream.take("[")
                        if stream.peek() == "]":
                            stream.pos += 1
                        else:
                            number = 0
                            while True:
                                number += 1
                                event = stream.value(f"event {number}")
                                if isinstance(event, dict):
                                    yield number, _current_category(event)
                                stream.take(",]")
                                if stream.buf[stream.pos - 1] == "]":
                                    break
                    else:
                        metadata[key] = stream.value(f"key {key[:60]!r}")
                    stream.take(",}")
                    if stream.buf[stream.pos - 1] == "}":
                        break
            _nothing_after(stream)
    except _Truncated:
        if stream.blank:
            raise ScalesimError(f"{file}: empty (no trace in it); export one with "
                                "prof.export_chrome_trace") from None
        raise ScalesimError(
            f"{file}: the trace ends early (truncated file?); re-export it with prof.export_chrome_trace"
        ) from None
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if not isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error)):
            raise unreadable(file, exc) from None
        raise ScalesimError(f"{file}: cannot read it: corrupt or cut gzip data ({exc})") from None
    if not seen_events:
        raise ScalesimError(f"{file}: no traceEvents: not a PyTorch profiler (Kineto) trace")


@dataclass
class StepBreakdown:
    """One profiler step on one rank, seconds."""

    step: int
    step_s: float
    compute_s: float
    comm_s: float
    overlap_s: float
    exposed_comm_s: float
    data_wait_s: float
    idle_s: float
    start_s: float = 0.0  # the step's window on the timeline it was measured on (trace clock)
    end_s: float = 0.0
    attention_s: float = 0.0  # attention kernels (a part of compute_s)
    # point-to-point sends and receives (``point_to_point``) under nothing else: no compute,
    # data wait or other communication; a part of exposed_comm_s (a pipeline's waits)
    p2p_exposed_s: float = 0.0
    # the collectives that are not point to point (all-reduce, gather, scatter...): their time
    # in the step and the part under compute or a data wait; the data-parallel exchange's where
    # the trace names no groups but a pipeline sends (gloo), whose waits are not the exchange's
    collective_s: float = 0.0
    collective_hidden_s: float = 0.0
    # receives the host posted in the step (``RECEIVE_FAMILIES``; its host window); None where
    # the trace names none (a GPU trace's fused SendRecv kernels say no count)
    receives: int | None = None
    # each named group role's collective time in the step, s (``TraceSummary.groups``' roles;
    # {} where the collectives name no group): the per-step values behind its medians
    group_comm_s: dict[str, float] = field(default_factory=dict)
    # forwards of a data-parallel wrapper (else DataLoader fetches) that start in the step's
    # host window (``TraceSummary.micro_steps_from``); None where the trace has neither
    micro_steps: int | None = None
    # collective kind (``COLLECTIVE_KINDS``) -> how many of those micro-steps posted one on the
    # host (``HOST_COLLECTIVE_FAMILIES``; ``micro_steps_with``): a reduction in each micro-step,
    # or in one (no_sync); {} where micro-steps are not counted or the host posts none
    micro_steps_with: dict[str, int] = field(default_factory=dict)
    # the collectives set aside as no gradient traffic (``no_gradient``: a metric's, the
    # loss's), left out of comm_s and the exchange's time: their time in the step, and the part
    # under no compute, data wait or other communication (a part of idle_s)
    set_aside_s: float = 0.0
    set_aside_exposed_s: float = 0.0


@dataclass
class TraceSummary:
    path: str
    rank: int
    world_size: int | None
    host: str
    device: str  # "gpu" or "cpu": which timeline compute and communication come from
    steps: list[StepBreakdown]
    # name -> {"count", "total_s", "elements", "sized"} (``new_record``: the elements put in by
    # the "sized" calls that record their size, ``input_elements``)
    collectives: dict[str, dict]
    notes: list[str] = field(default_factory=list)
    device_name: str = ""  # deviceProperties' name of the GPU the kernels ran on; "" unknown
    attention_family: str = ""  # the attention kernels' family with the most time; "" none
    # GPU traces whose NCCL kernels name their process group: role (process_groups.ROLES, or
    # "unnamed") -> {"size", "descs", "collectives" (kernel name -> count, total_s), "by_desc"
    # (each group description's {"size", "collectives"}), "comm_s",
    # "hidden_s" (under compute or a data wait), "exposed_s" (under nothing else: no compute,
    # data wait or other group's collective); medians over steps, s}; {} where none is named
    groups: dict[str, dict] = field(default_factory=dict)
    # distributedInfo.pg_config: [{"name", "desc", "size", "ranks"}] of the groups this rank is in
    process_groups: list[dict] = field(default_factory=list)
    # a pipeline schedule's annotations (``_SCHEDULE_FORWARD``, ``_GPIPE``): the stages this
    # rank ran forwards of ([] for GPipe's, which name none) and how many micro-batches; [] and
    # 0 where none; whether it splits the backward (a zero-bubble schedule's I and W actions)
    schedule_stages: list[int] = field(default_factory=list)
    schedule_micro_batches: int = 0
    schedule_split_backward: bool = False
    # the DataLoader ran in the training process (``_SingleProcessDataLoaderIter``: PyTorch's
    # num_workers=0), so its time is serial with the step's compute, not a supply beside it
    loader_in_process: bool = False
    # micro-steps (forward and backward passes) a step: the count most steps show
    # (``StepBreakdown.micro_steps``), read from ``micro_steps_from`` (a ``MICRO_STEP_FORWARDS``
    # name or ``DATA_FETCHES``); None where the trace shows neither, or most steps show none
    micro_steps: int | None = None
    micro_steps_from: str = ""
    # elements of the largest reduction (``REDUCTION_KINDS``) the trace records (0: none sized);
    # kind -> host posts set aside under ``METRIC_ELEMENTS_SHARE`` of it (``metric_sized``: a
    # metric's or the loss's, no gradient traffic); host-posted reductions with no size recorded
    largest_reduction: float = 0.0
    set_aside: dict[str, int] = field(default_factory=dict)
    unsized_reductions: int = 0

    def median(self, name: str) -> float:
        return float(np.median([getattr(s, name) for s in self.steps]))

    def median_step(self) -> StepBreakdown:
        """The step whose length is the median (of an even count, the shorter of the two in
        the middle): its own parts add up to it (compute + exposed + data wait + idle), where
        each part's median over the steps, taken apart, need not (a DDP rank: step 9.87 ms,
        its parts' medians 4.18)."""
        ordered = sorted(self.steps, key=lambda st: st.step_s)
        return ordered[(len(ordered) - 1) // 2]


class _Intervals:
    def __init__(self):
        self.start, self.end = array("d"), array("d")

    def add(self, t0: float, dur: float) -> None:
        self.start.append(t0)
        self.end.append(t0 + dur)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        return merge(np.frombuffer(self.start), np.frombuffer(self.end))

    def __len__(self) -> int:
        return len(self.start)


class _Collectives(_Intervals):
    """Collectives' intervals (s) with each one's kind (``collective_kind``), its elements
    (``input_elements``; NaN: none recorded), its group's ranks (``call_ranks``) and thread:
    once the trace is read, those of no gradient traffic (``no_gradient``) are split off the
    exchange's time (``split``)."""

    def __init__(self):
        super().__init__()
        self.kinds: list[str | None] = []
        self.elements, self.ranks, self.tids = array("d"), array("d"), array("q")

    def add_call(self, t0: float, dur: float, collective: str, elements, tid: int,
                 ranks: int | None = None) -> None:
        self.add(t0, dur)
        self.kinds.append(collective_kind(collective))
        self.elements.append(math.nan if elements is None else float(elements))
        self.ranks.append(math.nan if ranks is None else float(ranks))
        self.tids.append(tid)

    def aside(self, largest: float, world: int | None = None) -> np.ndarray:
        """Mask of the calls set aside: those ``no_gradient`` at ``largest`` (elements; a call
        of no group size over the ``world``), and
        those of no recorded size of the same kind on the same thread that overlap one (the
        host ops nested around a sized one: ``c10d::allreduce_`` around its
        ``record_param_comms``)."""
        n = len(self.start)
        if n == 0:
            return np.zeros(0, bool)
        kinds, elements = np.asarray(self.kinds, dtype=object), np.frombuffer(self.elements)
        start, end = np.frombuffer(self.start), np.frombuffer(self.end)
        tids = np.frombuffer(self.tids, dtype=np.int64)
        ranks = np.frombuffer(self.ranks)
        sized_aside = no_gradient(kinds, elements, np.where(np.isnan(ranks), world or np.nan,
                                                             ranks), largest)
        out = sized_aside.copy()
        unsized = np.isnan(elements)
        for kind, tid in {(kinds[i], tids[i]) for i in np.flatnonzero(sized_aside)}:
            mine = sized_aside & (kinds == kind) & (tids == tid)
            s, e = merge(start[mine], end[mine])
            them = np.flatnonzero(unsized & (kinds == kind) & (tids == tid))
            j = np.searchsorted(s, end[them], "left") - 1  # the last set-aside one before its end
            out[them[(j >= 0) & (e[np.maximum(j, 0)] > start[them])]] = True
        return out

    def split(self, largest: float, world: int | None = None) -> tuple[tuple, tuple]:
        """(merged intervals of the calls kept, of those set aside: ``aside``)."""
        aside = self.aside(largest, world)
        start, end = np.frombuffer(self.start), np.frombuffer(self.end)
        return merge(start[~aside], end[~aside]), merge(start[aside], end[aside])


def thread_id(ev: dict) -> int:
    """An event's ``tid`` as an int (Kineto writes ints; a string is hashed, stably within the
    process)."""
    tid = ev.get("tid")
    return tid if isinstance(tid, int) else hash(str(tid)) & 0x7FFFFFFF


LAUNCH_CATS = ("cuda_runtime", "cuda_driver")  # host calls that start device work
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class KernelLaunches:
    """Host launches and the device events they started, matched by Kineto's ``correlation``
    id: which device work a span of host time (a step, an optimizer step, a backward op) put on
    the GPU. Arrays of numbers, as ``_Intervals``."""

    def __init__(self):
        self.launch_ts, self.launch_tid, self.launch_corr = array("d"), array("q"), array("q")
        self.dev_corr, self.dev_ts, self.dev_end = array("q"), array("d"), array("d")

    def see(self, cat: str, t0: float, d: float, args: dict, tid: int) -> None:
        corr = args.get("correlation")
        if not isinstance(corr, int) or isinstance(corr, bool):
            return
        if cat in LAUNCH_CATS:
            self.launch_ts.append(t0)
            self.launch_tid.append(tid)
            self.launch_corr.append(corr)
        elif cat in DEVICE_CATS:
            self.dev_corr.append(corr)
            self.dev_ts.append(t0)
            self.dev_end.append(t0 + d)

    def matched(self) -> bool:
        return len(self.launch_ts) > 0 and len(self.dev_corr) > 0

    def _device_of(self, inside: np.ndarray) -> np.ndarray:
        """Mask over device events whose launch is marked in ``inside`` (a launch mask)."""
        return np.isin(
            np.frombuffer(self.dev_corr, dtype=np.int64),
            np.frombuffer(self.launch_corr, dtype=np.int64)[inside],
        )

    def spans(self, windows: list[tuple[float, float]]) -> list[tuple[float, float] | None]:
        """Per host window (disjoint, any thread): (first start, last end) of the device events
        launched inside it, or None when it launched none. One pass over the arrays: each launch
        finds its window by binary search, each device event its launch by correlation."""
        n = len(windows)
        if n == 0:
            return []
        w = np.asarray(windows, dtype=float).reshape(n, 2)
        order = np.argsort(w[:, 0], kind="stable")
        ts = np.frombuffer(self.launch_ts)
        at = np.searchsorted(w[order, 0], ts, "right") - 1
        inside = (at >= 0) & (ts < w[order[np.maximum(at, 0)], 1])
        window_of_launch = np.where(inside, order[np.maximum(at, 0)], -1)
        corr = np.frombuffer(self.launch_corr, dtype=np.int64)
        by_corr = np.argsort(corr, kind="stable")
        dev_corr = np.frombuffer(self.dev_corr, dtype=np.int64)
        pos = np.minimum(np.searchsorted(corr[by_corr], dev_corr), max(corr.size - 1, 0))
        found = corr.size > 0 and (corr[by_corr][pos] == dev_corr)
        window_of_dev = np.where(found, window_of_launch[by_corr[pos]], -1)
        keep = window_of_dev >= 0
        first, last = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(first, window_of_dev[keep], np.frombuffer(self.dev_ts)[keep])
        np.maximum.at(last, window_of_dev[keep], np.frombuffer(self.dev_end)[keep])
        return [(float(a), float(b)) if np.isfinite(a) else None for a, b in zip(first, last, strict=True)]

    def device_intervals(self, host: dict[int, _Intervals]) -> tuple[np.ndarray, np.ndarray]:
        """Merged device intervals of the work launched inside ``host``'s intervals, each on its
        own thread (tid -> intervals)."""
        ts = np.frombuffer(self.launch_ts)
        tids = np.frombuffer(self.launch_tid, dtype=np.int64)
        inside = np.zeros(ts.size, dtype=bool)
        for tid, iv in host.items():
            s, e = iv.merged()
            mask = tids == tid
            if not mask.any() or s.size == 0:
                continue
            idx = np.searchsorted(s, ts[mask], "right") - 1
            inside[np.flatnonzero(mask)[(idx >= 0) & (ts[mask] < e[np.maximum(idx, 0)])]] = True
        dev = self._device_of(inside)
        return merge(np.frombuffer(self.dev_ts)[dev], np.frombuffer(self.dev_end)[dev])


def device_windows(cpu_steps, gpu_steps, launches: KernelLaunches) -> list[tuple[int, float, float]]:
    """Each step's window on the device timeline (module docstring): the span of the device
    work its CPU step launched, widened to its ``gpu_user_annotation``; the annotation (else
    the CPU window) where nothing can be matched."""
    annotated = {n: (w0, w1) for n, w0, w1 in gpu_steps}
    if not launches.matched() or not cpu_steps:
        return list(gpu_steps or cpu_steps)
    spans = launches.spans([(w0, w1) for _, w0, w1 in cpu_steps])
    out = []
    for (n, c0, c1), span in zip(cpu_steps, spans, strict=True):
        ann = annotated.get(n)
        if span is None:
            out.append((n, *(ann or (c0, c1))))
        else:
            out.append(
                (n, min(span[0], ann[0]) if ann else span[0], max(span[1], ann[1]) if ann else span[1])
            )
    return out


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (starts, ends)."""
    if starts.size == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > running[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def union(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return merge(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def _count_in(sorted_starts: np.ndarray, w0: float, w1: float) -> int:
    """How many of ``sorted_starts`` (s) fall in [w0, w1) (s), both ends a nanosecond early:
    an op that starts as the next step does (``ts + dur`` rounded past it) is the next step's."""
    lo, hi = w0 - 1e-9, w1 - 1e-9
    return int(np.searchsorted(sorted_starts, hi, "left") - np.searchsorted(sorted_starts, lo, "left"))


def length_in(merged: tuple[np.ndarray, np.ndarray], w0: float, w1: float) -> float:
    """Total length of disjoint intervals inside the window [w0, w1]."""
    s, e = merged
    lo, hi = np.searchsorted(e, w0, "right"), np.searchsorted(s, w1, "left")
    if hi <= lo:
        return 0.0
    return float(np.sum(np.clip(e[lo:hi], w0, w1) - np.clip(s[lo:hi], w0, w1)))


def new_record() -> dict:
    """A collective's tally (``TraceSummary.collectives``): calls, seconds, and the elements
    the calls that record their size put in (``input_elements``), with how many did; of them,
    the calls set aside as no gradient traffic (``metric_sized``): "aside", their seconds and
    elements (``gradient_record``: the tally without them)."""
    return {"count": 0, "total_s": 0.0, "elements": 0.0, "sized": 0,
            "aside": 0, "aside_s": 0.0, "aside_elements": 0.0}


RECORD_KEYS = tuple(new_record())


def see_record(record: dict, dur_s: float, args) -> int | float | None:
    """One call of ``dur_s`` seconds into ``record`` (``new_record``), its size from ``args``;
    that size (elements, ``input_elements``), None where not recorded."""
    record["count"] += 1
    record["total_s"] += dur_s
    n = input_elements(args) if isinstance(args, dict) else None
    if n is not None:
        record["elements"] += float(n)
        record["sized"] += 1
    return n


def add_record(into: dict, record: dict) -> None:
    """``record``'s tally added to ``into``'s (``new_record``'s keys; one without a size's
    keys adds none)."""
    for key in RECORD_KEYS:
        into[key] += record.get(key, 0)


def gradient_record(record: dict) -> dict:
    """``record`` (``new_record``) without its calls set aside as no gradient traffic
    ("aside": ``metric_sized``), which are none of an exchange's."""
    out = dict(record)
    for key, aside in (("count", "aside"), ("total_s", "aside_s"),
                       ("elements", "aside_elements"), ("sized", "aside")):
        out[key] = record[key] - record.get(aside, 0)
    out.update(aside=0, aside_s=0.0, aside_elements=0.0)
    return out


def call_ranks(args) -> int | None:
    """The ranks a collective runs over, as its event's ``Group size`` says (NCCL kernels,
    ``record_param_comms``); None where it says none (gloo's ops: the trace's world size)."""
    return whole_or_none(args.get("Group size")) if isinstance(args, dict) else None


class _CollectiveSizes:
    """One trace's sized collectives of ``SET_ASIDE_KINDS``: each call's tally, kind, elements,
    ranks and seconds, so that once the trace is read those of no gradient traffic
    (``no_gradient`` against the largest reduction, ``largest``) are set aside in their tallies
    (``new_record``'s "aside")."""

    def __init__(self):
        self.calls: list[tuple[dict, str, float, int | None, float]] = []
        self.largest = 0.0  # elements of the largest reduction (``REDUCTION_KINDS``)

    def see(self, record: dict, collective: str, elements, dur_s: float,
            ranks: int | None = None) -> None:
        kind = collective_kind(collective)
        if elements is None or kind not in SET_ASIDE_KINDS:
            return
        self.calls.append((record, kind, float(elements), ranks, dur_s))
        if kind in REDUCTION_KINDS:
            self.largest = max(self.largest, float(elements))

    def set_aside(self, largest: float, world: int | None) -> None:
        """Each call ``no_gradient`` at ``largest`` (elements; one of no group size over the
        ``world``) into its tally's "aside"."""
        for record, kind, n, ranks, d in self.calls:
            over = ranks or world
            if no_gradient(kind, n, math.nan if over is None else over, largest):
                record["aside"] += 1
                record["aside_s"] += d
                record["aside_elements"] += n


class _GroupComm:
    """NCCL kernels by the process group their arguments name (``process_groups``): intervals
    and per-name counts per group, resolved to roles once the trace (and its pg_config, which
    may follow the events) is read."""

    def __init__(self):
        self.intervals: dict[tuple, _Collectives] = {}
        self.collectives: dict[tuple, dict] = {}

    def see(self, collective: str, args, t0: float, d: float,
            tid: int = 0) -> tuple[dict, object] | None:
        """One NCCL kernel, ``collective`` its name as ``_collective_name`` keys it, on stream
        ``tid``: the tally it went into and its size (``see_record``), None where it names no
        group."""
        if not isinstance(args, dict):
            return None
        pg, desc = args.get("Process Group Name"), args.get("Process Group Description")
        size = whole_or_none(args.get("Group size"))
        if not isinstance(pg, str | int) and not isinstance(desc, str) and size is None:
            return None  # a kernel of a torch that writes no group: no roles
        key = (str(pg)[:60] if pg is not None else "", desc[:60] if isinstance(desc, str) else "",
               size)
        c = self.collectives.setdefault(key, {}).setdefault(collective, new_record())
        elements = see_record(c, d, args)
        self.intervals.setdefault(key, _Collectives()).add_call(t0, d, collective, elements, tid,
                                                                size)
        return c, elements

    def roles(self, process_groups: list[dict], world: int | None,
              largest: float = 0.0) -> dict[str, tuple]:
        """role -> (merged intervals, {"size", "descs", "collectives", "by_desc"}); a kernel's
        description is its own, else its group's in pg_config (matched by name); ``by_desc``:
        each description's {"size", "collectives"} (a role's groups apart: HSDP's shard and
        replicate groups are both data parallel). The intervals leave out the kernels set
        aside as no gradient traffic against ``largest`` (elements, ``_Collectives.split``)."""
        desc_of = {g["name"]: g["desc"] for g in process_groups}
        merged: dict[str, list] = {}
        for key, iv in self.intervals.items():
            pg, own_desc, size = key
            desc = own_desc or desc_of.get(pg, "")
            role = group_role(desc, size, world) or UNNAMED_ROLE
            entry = merged.setdefault(role, [[], [], {"size": None, "descs": [], "collectives": {},
                                                      "by_desc": {}}])
            (kept_s, kept_e), _ = iv.split(largest, world)
            entry[0].append(kept_s)
            entry[1].append(kept_e)
            info = entry[2]
            info["size"] = max(info["size"] or 0, size or 0) or None
            label = desc or (f"group {pg}" if pg else "")
            if label and label not in info["descs"]:
                info["descs"].append(label)
            own = info["by_desc"].setdefault(label, {"size": size, "collectives": {}})
            own["size"] = max(own["size"] or 0, size or 0) or None
            for name, c in self.collectives[key].items():
                for tally in (info["collectives"], own["collectives"]):
                    add_record(tally.setdefault(name, new_record()), c)
        return {role: (merge(np.concatenate(s), np.concatenate(e)), info)
                for role, (s, e, info) in sorted(merged.items())}


def _median_of(rows: list[tuple], i: int) -> float:
    return float(np.median([r[i] for r in rows])) if rows else 0.0


def _pg_config(meta: dict) -> list[dict]:
    """``distributedInfo.pg_config`` as [{"name", "desc", "size", "ranks"}]; [] where absent or
    not a list (an entry that is not an object is skipped: the groups are read, never required)."""
    info = meta.get("distributedInfo")
    config = info.get("pg_config") if isinstance(info, dict) else None
    if not isinstance(config, list):
        return []
    out = []
    for g in config[:4096]:
        if not isinstance(g, dict):
            continue
        name, desc = g.get("pg_name"), g.get("pg_desc")
        out.append({"name": str(name)[:60] if isinstance(name, str | int) else "",
                    "desc": desc[:60] if isinstance(desc, str) else "",
                    "size": whole_or_none(g.get("pg_size")),
                    "ranks": (ranks_of(g.get("ranks")) or [])[:64]})
    return out


def _collective_name(name: str, args: dict) -> str:
    if name == "record_param_comms":
        collective = args.get("Collective name")
        return f"record_param_comms:{collective[:60] if isinstance(collective, str) else '?'}"
    if "nccl" in name.lower():
        return name.split("(")[0][:60]
    return name


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _negative_kind(name) -> str:
    """What a skipped event was, for the note: steps, collectives or other events."""
    if isinstance(name, str) and _STEP.match(name):
        return "ProfilerStep(s)"
    if isinstance(name, str) and ("nccl" in name.lower() or name.startswith(CPU_COMM_PREFIXES)):
        return "collective(s)"
    return "other event(s)"


def _event_times(ev: dict, source: str, number: int, name) -> tuple[float, float] | None:
    """(ts, dur) of a complete event in microseconds; None when either is missing, not a number
    or dur is negative (such events are skipped); a non-finite or overflowing number is an error
    naming the event. JSON's plain numbers take the fast path: this runs once per event (660,000
    in a 100 MB trace), and the checked path builds the event's label for its errors."""
    ts, dur = ev.get("ts"), ev.get("dur")
    if type(ts) in _PLAIN_NUMBERS and type(dur) in _PLAIN_NUMBERS:
        try:
            t, d = float(ts), float(dur)
        except OverflowError:  # an integer past float: the checked path says which
            return _checked_event_times(ts, dur, source, number, name)
        if math.isfinite(t) and math.isfinite(d):
            if d < 0:
                return None
            if math.isfinite(t + d):
                return t, d
    return _checked_event_times(ts, dur, source, number, name)


_PLAIN_NUMBERS = (int, float)  # exact types (``type(x) in``): bool, an int subclass, is not one


def _checked_event_times(ts, dur, source: str, number: int, name) -> tuple[float, float] | None:
    """``_event_times`` for any value: the same answers, with the errors' words."""
    if (
        isinstance(ts, bool)
        or isinstance(dur, bool)
        or not isinstance(ts, (int, float))
        or (not isinstance(dur, (int, float)))
    ):
        return None
    label = f"{source}: event {number} ({str(name)[:80]})"
    values = []
    for field_name, value in (("ts", ts), ("dur", dur)):
        try:
            number_us = float(value)
        except OverflowError:
            raise ScalesimError(
                f"{label}: {field_name} is an integer of {len(str(abs(value)))} "
                "digits, too large for microseconds"
            ) from None
        if not np.isfinite(number_us):
            raise ScalesimError(
                f"{label}: {field_name} is {number_us}, not a finite number of microseconds"
            ) from None
        values.append(number_us)
    if values[1] < 0:
        return None
    if not np.isfinite(values[0] + values[1]):
        raise ScalesimError(f"{label}: ts + dur overflows ({values[0]:g} + {values[1]:g} us)")
    return values[0], values[1]


def _distributed_info(meta: dict, source: str) -> tuple[int | None, int | None]:
    """(rank, world_size) from the trace's ``distributedInfo`` (None where absent)."""
    info = meta.get("distributedInfo")
    if info is None:
        return None, None
    if not isinstance(info, dict):
        raise ScalesimError(
            f"{source}: distributedInfo is a {json_kind(info)}, expected an object with rank and world_size"
        )
    world, rank = info.get("world_size"), info.get("rank")
    if world is not None and (not _whole(world) or not 1 <= world <= MAX_WORLD_SIZE):
        raise ScalesimError(
            f"{source}: distributedInfo.world_size is {_short(world)}, expected a "
            f"whole number from 1 to {MAX_WORLD_SIZE:,}"
        )
    if rank is not None and (not _whole(rank) or rank < 0 or (world is not None and rank >= world)):
        limit = f"0 to {world - 1}" if world is not None else "0 or more"
        raise ScalesimError(
            f"{source}: distributedInfo.rank is {_short(rank)}, expected a whole number from {limit}"
        )
    return rank, world


def _device_name(meta: dict, devices: Counter) -> str:
    """The name in the trace's ``deviceProperties`` of the GPU most kernels ran on (their
    ``args.device``), else of the first GPU listed; '' when the trace names none."""
    props = meta.get("deviceProperties")
    if not isinstance(props, list):
        return ""
    names = {
        p.get("id") if _whole(p.get("id")) else None: p["name"]
        for p in props
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    }
    if not names:
        return ""
    most = devices.most_common(1)
    name = names.get(most[0][0]) if most else None
    return (name or next(iter(names.values())))[:200]


def _short(value) -> str:
    text = json.dumps(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge number"
    return f"{json_kind(value)} {excerpt(text)}"


# A profiler step's duration: the bounds table's positive_duration_s (1 ps to 11.6 days). A step
# outside it (0, a 1e-300 us step of a hand-made trace) is left out with a note, as duration 0
# always was: its times would reach the profile's jitter and compute out of their bounds.
STEP_BOUND = bound("positive_duration_s")


def summarise(
    path: str | os.PathLike[str], index: int = 0, observe=None, launches: KernelLaunches | None = None
) -> TraceSummary:
    """Read one rank's trace and break every profiler step down (see the module docstring).

    ``observe(event)``, when given, sees every event of the same single pass (for readers that
    need more than the step breakdown, e.g. ``scalesim.sources.trace_compute``); ``launches``,
    when given, is filled with the trace's launches and device events (else a private one)."""
    meta: dict = {}
    launches = KernelLaunches() if launches is None else launches
    cpu_steps, gpu_steps = [], []
    compute_cpu, compute_gpu, data, attention = (_Intervals() for _ in range(4))
    # communication, its point-to-point part and the rest (their union is all of it)
    p2p_cpu, p2p_gpu = _Intervals(), _Intervals()
    other_cpu, other_gpu = _Collectives(), _Collectives()  # sized, to set aside a metric's
    receive_starts = [array("d") for _ in RECEIVE_FAMILIES]
    forwards: dict[int, set[int]] = {}  # a schedule's stage -> micro-batches it ran forward
    gpipe = {"Forward": set(), "Backward": set()}  # GPipe's micro-batches, forward and backward
    split_backward = False
    loader_in_process = False
    wrapper_forwards, fetches = _Intervals(), _Intervals()  # the micro-step count's events
    backward_starts = array("d")  # backward ops' starts: which of those events trained
    posted = defaultdict(lambda: array("d"))  # (host family, collective kind) -> starts
    posted_sizes = defaultdict(lambda: array("d"))  # ... -> their elements (NaN: not recorded)
    posted_ranks = defaultdict(lambda: array("d"))  # ... -> their groups' ranks (NaN: unknown)
    sizes = _CollectiveSizes()  # the sized collectives, to set aside those of no gradient
    forward_names: Counter = Counter()  # MICRO_STEP_FORWARDS seen, by name
    family_s: Counter = Counter()  # attention family -> kernel seconds
    devices: Counter = Counter()  # GPU id -> kernels
    coll = defaultdict(new_record)
    by_group = _GroupComm()  # NCCL kernels by the process group their args name
    source = str(path)
    zero_steps = []
    negative: Counter = Counter()  # complete events skipped for a negative dur, by kind
    unusable_steps = 0  # ProfilerStep events without a complete event's numeric ts and dur
    for number, ev in iter_trace(path, meta):
        name = ev.get("name")
        # checked before ``observe`` sees the event: a non-finite ts or dur is one error here
        times = _event_times(ev, source, number, name) if ev.get("ph") == "X" else None
        if observe is not None:
            observe(ev)
        if times is None:
            dur = ev.get("dur")
            if type(dur) in _PLAIN_NUMBERS and dur < 0 and ev.get("ph") == "X":
                negative[_negative_kind(name)] += 1
            elif isinstance(name, str) and _STEP.match(name):
                unusable_steps += 1
            continue
        if not isinstance(name, str):
            continue
        ts, dur = times
        cat = ev.get("cat", "")
        t0, d = ts * US, dur * US
        if cat in LAUNCH_CATS or cat in DEVICE_CATS:
            args = ev.get("args")
            launches.see(cat, t0, d, args if isinstance(args, dict) else {}, thread_id(ev))
        if backward_op(name, cat):
            backward_starts.append(t0)
        m = _STEP.match(name)
        if m and STEP_BOUND.problem(d) is not None:  # 0, 1e-300 us or longer than 11.6 days
            zero_steps.append(name)
        elif m:
            (gpu_steps if cat == "gpu_user_annotation" else cpu_steps).append((int(m.group(1)), t0, t0 + d))
        elif name.startswith(DATA_PREFIX):
            data.add(t0, d)
            loader_in_process = loader_in_process or IN_PROCESS_LOADER in name
            if cat != "gpu_user_annotation":
                fetches.add(t0, d)
        elif cat == "user_annotation" and name in MICRO_STEP_FORWARDS:
            wrapper_forwards.add(t0, d)
            forward_names[name] += 1
        elif cat == "user_annotation" and name.startswith("PP:"):
            for stage, micro in _SCHEDULE_FORWARD.findall(name):
                forwards.setdefault(int(stage), set()).add(int(micro))
            split_backward = split_backward or bool(_SCHEDULE_SPLIT_BACKWARD.search(name))
        elif cat == "user_annotation" and (g := _GPIPE.match(name)):
            gpipe[g.group(1)].add(int(g.group(2)))
        elif cat == "kernel":
            if "nccl" in name.lower():
                collective = _collective_name(name, {})
                args = ev.get("args")
                n, ranks = see_record(coll[collective], d, args), call_ranks(args)
                if point_to_point(collective):
                    p2p_gpu.add(t0, d)
                else:
                    other_gpu.add_call(t0, d, collective, n, thread_id(ev), ranks)
                sizes.see(coll[collective], collective, n, d, ranks)
                if grouped := by_group.see(collective, args, t0, d, thread_id(ev)):
                    sizes.see(grouped[0], collective, grouped[1], d, ranks)
            else:
                compute_gpu.add(t0, d)
                family = attention_family(name)
                if family is not None:
                    attention.add(t0, d)
                    family_s[family] += d
            args = ev.get("args")
            device = args.get("device") if isinstance(args, dict) else None
            if _whole(device):
                devices[device] += 1
        elif cat in ("gpu_memcpy", "gpu_memset"):
            compute_gpu.add(t0, d)
        elif name.startswith(CPU_COMM_PREFIXES):
            args = ev.get("args")
            collective = _collective_name(name, args if isinstance(args, dict) else {})
            n = (input_elements(args, host_input_argument(name, collective))
                 if isinstance(args, dict) else None)
            ranks = call_ranks(args)
            if point_to_point(collective):
                p2p_cpu.add(t0, d)
            else:
                other_cpu.add_call(t0, d, collective, n, thread_id(ev), ranks)
            if cat != "gpu_user_annotation":
                word = collective.split(" ", 1)[0]
                for family, starts in zip(RECEIVE_FAMILIES, receive_starts, strict=True):
                    if word in family:
                        starts.append(t0)
                posting = next((f for f in HOST_COLLECTIVE_FAMILIES if name.startswith(f)), None)
                kind = collective_kind(collective)
                if posting is not None and kind is not None:
                    posted[posting, kind].append(t0)
                    posted_sizes[posting, kind].append(math.nan if n is None else float(n))
                    posted_ranks[posting, kind].append(math.nan if ranks is None else ranks)
            if not name.startswith("c10d::"):
                sizes.see(coll[collective], collective, see_record(coll[collective], d, args), d,
                          ranks)
        elif cat == "cpu_op":
            compute_cpu.add(t0, d)
    if not cpu_steps and not gpu_steps:
        if zero_steps:
            more = f" and {len(zero_steps) - 1} more" if len(zero_steps) > 1 else ""
            raise ScalesimError(
                f"{source}: every ProfilerStep has duration 0 or one outside "
                f"{STEP_BOUND.text()} ({zero_steps[0]}{more}); no step to measure"
            )
        unusable = unusable_steps + negative["ProfilerStep(s)"]
        if unusable:
            raise ScalesimError(
                f"{source}: {unusable} ProfilerStep#N events, none a complete event ('ph': 'X') "
                "with numeric 'ts' and a 'dur' of 0 or more; the trace is corrupt: re-export it "
                "from torch.profiler"
            )
        raise ScalesimError(
            f"{source}: no ProfilerStep#N events; record with torch.profiler and "
            "call prof.step() once per training step"
        )
    for steps_of, where in ((cpu_steps, "user_annotation"), (gpu_steps, "gpu_user_annotation")):
        seen = Counter(n for n, _, _ in steps_of)
        if seen and (twice := next((n for n, k in seen.items() if k > 1), None)) is not None:
            raise ScalesimError(
                f"{source}: ProfilerStep#{twice} appears {seen[twice]} times ({where}); torch "
                "numbers each step once, so the trace is corrupt or joins several runs: give "
                "one profiler run per file")
    notes = []
    ordered = sorted(cpu_steps, key=lambda w: w[1])
    # 1 us of slack: Kineto rounds ts and dur to the nanosecond
    overlapping = sum(1 for a, b in zip(ordered, ordered[1:], strict=False) if b[1] < a[2] - 1e-6)
    if overlapping:
        notes.append(f"{Path(source).name}: {overlapping} ProfilerStep(s) start before the step "
                     "before them ends; steps are read as given, so time between them counts "
                     "twice: re-export the trace from torch.profiler")
    if negative:
        notes.append(
            f"{Path(source).name}: " + ", ".join(f"{n} {kind}" for kind, n in negative.items())
            + " with a negative duration left out: a corrupt or re-timed trace, so its figures "
            "miss that time; re-export it from torch.profiler"
        )
    if zero_steps:
        notes.append(
            f"{Path(source).name}: {', '.join(zero_steps[:3])}"
            + (f" and {len(zero_steps) - 3} more" if len(zero_steps) > 3 else "")
            + f" of duration 0 or outside {STEP_BOUND.text()} left out"
        )
    rank, world_size = _distributed_info(meta, source)
    if rank is None:
        rank = index
        notes.append(
            f"{Path(source).name}: no distributedInfo.rank; taken as rank {index} from the order of the files"
        )
    gpu = len(compute_gpu) + len(p2p_gpu) + len(other_gpu) > 0
    # the reductions of no gradient (a metric's, the loss's: ``metric_sized``) against the
    # largest the trace records, set aside in their tallies (before the groups copy them) and
    # from the exchange's time (``aside``: their intervals)
    largest = max([sizes.largest, *(float(np.nanmax(a)) for (_, kind), v in posted_sizes.items()
                                     if kind in REDUCTION_KINDS
                                     for a in [np.frombuffer(v)] if np.isfinite(a).any())])
    sizes.set_aside(largest, world_size)
    if gpu:
        compute, p2p = compute_gpu.merged(), p2p_gpu.merged()
        other_comm, aside = other_gpu.split(largest, world_size)
        windows = device_windows(cpu_steps, gpu_steps, launches)
    else:
        compute, p2p = compute_cpu.merged(), p2p_cpu.merged()
        other_comm, aside = other_cpu.split(largest, world_size)
        windows = cpu_steps
    comm = union(p2p, other_comm)
    d_set, a_set = data.merged(), attention.merged()
    cd = union(compute, d_set)
    cdm = union(cd, comm)
    # what covers a send or receive: all but the sends and receives (the rest where there are none)
    cd_collectives = union(cd, other_comm)  # what hides a collective that is not point to point
    cd_other = cd_collectives if len(p2p[0]) else cdm
    counted = next((np.sort(np.frombuffer(s)) for s in receive_starts if len(s)), None)
    host_window = {num: (w0, w1) for num, w0, w1 in cpu_steps}
    process_groups = _pg_config(meta)
    roles = by_group.roles(process_groups, world_size, largest) if gpu else {}
    role_steps: dict[str, list[tuple[float, float, float]]] = {r: [] for r in roles}
    with_compute = {role: union(cd, merged) for role, (merged, _) in roles.items()}
    # what else covers a role's collectives: compute, a data wait or another group's
    # collective; hiding the role's saves only what nothing else covers
    covered_by_others = {role: union(cd, *[m for r, (m, _) in roles.items() if r != role])
                         for role in roles}
    # the micro-step count's events, nested ones merged (FSDP1's units in the root's forward),
    # those no backward follows left out (an evaluation forward)
    counted_from, micro_starts = ((forward_names.most_common(1)[0][0], wrapper_forwards.merged()[0])
                                  if len(wrapper_forwards) else
                                  (DATA_FETCHES, fetches.merged()[0]) if len(fetches) else
                                  ("", None))
    if micro_starts is not None:
        micro_starts = with_backward(micro_starts, np.sort(np.frombuffer(backward_starts)))
    posts, set_aside, unsized = _gradient_posts(posted, posted_sizes, posted_ranks, largest,
                                                world_size)
    steps = []
    for num, w0, w1 in sorted(windows):
        span = w1 - w0
        dw = length_in(d_set, w0, w1)
        cdw = length_in(cd, w0, w1)
        mw = length_in(comm, w0, w1)
        cdmw = length_in(cdm, w0, w1)
        overlap = max(cdw + mw - cdmw, 0.0)  # |(C u D) n M|: hidden behind other work
        sw = length_in(aside, w0, w1)  # the collectives set aside: |S n W|, and S under nothing
        alone = max(length_in(union(cdm, aside), w0, w1) - cdmw, 0.0)
        ow = length_in(other_comm, w0, w1)  # the collectives that are not point to point
        group_comm = {}
        for role, (merged, _) in roles.items():  # each role's collectives, and what hid them
            rw = group_comm[role] = length_in(merged, w0, w1)
            hidden = max(rw + cdw - length_in(with_compute[role], w0, w1), 0.0)
            alone = max(cdmw - length_in(covered_by_others[role], w0, w1), 0.0)
            role_steps[role].append((rw, hidden, min(alone, rw)))
        steps.append(
            StepBreakdown(
                step=num,
                step_s=span,
                compute_s=max(cdw - dw, 0.0),
                comm_s=mw,
                overlap_s=overlap,
                exposed_comm_s=max(mw - overlap, 0.0),
                data_wait_s=dw,
                idle_s=max(span - cdmw, 0.0),
                start_s=w0,
                end_s=w1,
                attention_s=length_in(a_set, w0, w1),
                p2p_exposed_s=max(cdmw - length_in(cd_other, w0, w1), 0.0),
                collective_s=ow,
                collective_hidden_s=max(ow + cdw - length_in(cd_collectives, w0, w1), 0.0),
                receives=None if counted is None else _count_in(counted, *host_window.get(num, (w0, w1))),
                group_comm_s=group_comm,
                micro_steps=None if micro_starts is None else
                _count_in(micro_starts, *host_window.get(num, (w0, w1))),
                micro_steps_with=_micro_steps_with(micro_starts, posts,
                                                   *host_window.get(num, (w0, w1))),
                set_aside_s=sw,
                set_aside_exposed_s=alone,
            )
        )
    micro_steps = most_steps_count([st.micro_steps for st in steps])
    collectives = {k: dict(v) for k, v in sorted(coll.items())}
    groups = {
        role: {
            "size": info["size"], "descs": info["descs"], "collectives": info["collectives"],
            "by_desc": info["by_desc"], "comm_s": _median_of(role_steps[role], 0),
            # per step: the part compute or a data wait hid
            "hidden_s": _median_of(role_steps[role], 1),
            # per step: the part nothing else covered (no compute, data wait or other
            # collective): what hiding this role's collectives would save
            "exposed_s": _median_of(role_steps[role], 2),
        }
        for role, (_, info) in roles.items()
    }
    host = meta.get("host_name")
    family = max(family_s, key=family_s.get) if family_s else ""
    return TraceSummary(
        source,
        rank,
        world_size,
        host[:200] if isinstance(host, str) else "",
        "gpu" if gpu else "cpu",
        steps,
        collectives,
        notes,
        _device_name(meta, devices),
        family,
        groups,
        process_groups,
        sorted(forwards),
        max((len(mbs) for mbs in forwards.values()), default=0)
        or (len(gpipe["Forward"]) if gpipe["Forward"] == gpipe["Backward"] else 0),
        split_backward,
        loader_in_process,
        micro_steps,
        counted_from if micro_steps is not None else "",
        largest_reduction=largest,
        set_aside=set_aside,
        unsized_reductions=unsized,
    )


def _gradient_posts(posted: dict, posted_sizes: dict, posted_ranks: dict, largest: float,
                    world: int | None):
    """(posts, set aside, unsized): each collective kind's host posts (s, sorted), of the first
    family that posts it (``HOST_COLLECTIVE_FAMILIES``), but those of no gradient traffic
    (``no_gradient`` against the ``largest`` reduction, elements; a post of no group size over
    the ``world``); kind -> how many were set aside; how many reductions recorded no size
    (which cannot be told apart). ``posted``, ``posted_sizes``, ``posted_ranks``: (family,
    kind) -> starts (s), elements, ranks (NaN: not recorded)."""
    posts, set_aside, unsized = {}, {}, 0
    for kind in COLLECTIVE_KINDS.values():
        family = next((f for f in HOST_COLLECTIVE_FAMILIES if len(posted.get((f, kind), ()))),
                      None)
        if family is None:
            continue
        starts, elements = np.frombuffer(posted[family, kind]), np.frombuffer(
            posted_sizes[family, kind])
        ranks = np.frombuffer(posted_ranks[family, kind])
        aside = no_gradient(kind, elements, np.where(np.isnan(ranks), world or np.nan, ranks),
                            largest)
        posts[kind] = np.sort(starts[~aside])
        if aside.any():
            set_aside[kind] = int(aside.sum())
        unsized += int(np.isnan(elements).sum()) if kind in REDUCTION_KINDS else 0
    return posts, set_aside, unsized


def _in_window(sorted_starts: np.ndarray, w0: float, w1: float) -> np.ndarray:
    """``sorted_starts`` (s) in [w0, w1) (s), as ``_count_in`` counts them."""
    lo, hi = np.searchsorted(sorted_starts, [w0 - 1e-9, w1 - 1e-9], "left")
    return sorted_starts[lo:hi]


def _micro_steps_with(micro_starts, posts: dict, w0: float, w1: float) -> dict[str, int]:
    """``StepBreakdown.micro_steps_with`` of the step whose host window is [w0, w1) (s)."""
    if micro_starts is None:
        return {}
    mine = _in_window(micro_starts, w0, w1)
    if mine.size == 0:
        return {}
    return {kind: micro_steps_with(mine, _in_window(starts, w0, w1))
            for kind, starts in posts.items()}


def traced_micro_steps_with(summaries: list[TraceSummary], kind: str) -> int | None:
    """How many micro-steps of a step post a collective of ``kind`` (``StepBreakdown.
    micro_steps_with``): the count most of the steps that post one show, every rank (of two
    equally common, the larger); None where no step says."""
    return most_steps_count([st.micro_steps_with[kind] for s in summaries for st in s.steps
                             if st.micro_steps_with.get(kind)])


def most_steps_count(counts: list[int | None]) -> int | None:
    """The micro-step count most steps show (``StepBreakdown.micro_steps``; of two equally
    common, the larger); None where none is counted or that count is 0 (the steps hold none of
    the events counted: they run elsewhere, a loader fetching in another thread)."""
    seen = Counter(c for c in counts if c is not None)
    if not seen:
        return None
    most = max(seen.values())
    count = max(c for c, n in seen.items() if n == most)
    return count or None


def traced_micro_steps(summaries: list[TraceSummary]) -> tuple[int | None, str]:
    """(micro-steps a step, the words of how it was read) of a job's traces: the count most
    ranks show (``TraceSummary.micro_steps``; of two equally common, the larger), None where no
    rank's can be read (the words then say so: callers take the step as one micro-step)."""
    known = [s for s in summaries if s.micro_steps is not None]
    count = most_steps_count([s.micro_steps for s in known])
    if count is None:
        return None, ("the traces show no forward of a DDP or FSDP module nor any DataLoader "
                      "fetch in their steps, so how many micro-steps a step runs (gradient "
                      "accumulation) is not read: a step is taken as one micro-step")
    names = sorted({s.micro_steps_from for s in known if s.micro_steps == count})
    what = ("DataLoader fetches" if names == [DATA_FETCHES] else
            " / ".join(n for n in names if n != DATA_FETCHES) + " calls")
    words = (f"the traces show {count} micro-step{'s' if count != 1 else ''} a step ({what} in "
             "each profiler step)")
    others = sorted({s.rank for s in summaries if s.micro_steps != count})
    if others:
        words += (f"; rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others[:8]))} "
                  "show another count or none")
    return count, words


def load_traces(paths: list[str]) -> list[TraceSummary]:
    """Summaries of one trace per rank, sorted by rank; duplicate ranks are an error."""
    if not paths:
        raise ScalesimError("give one or more trace files (--trace rank0.json rank1.json ...)")
    check_distinct_files(paths, "give each rank's trace once")
    summaries = [summarise(p, i) for i, p in enumerate(paths)]
    ranks = Counter(s.rank for s in summaries)
    dup = [r for r, n in ranks.items() if n > 1]
    if dup:
        raise ScalesimError(f"two traces are rank {dup[0]}; give one trace per rank")
    check_one_world(summaries)
    return sorted(summaries, key=lambda s: s.rank)


def check_one_world(summaries: list[TraceSummary], where: str = "") -> None:
    """ScalesimError where two traces name different ``distributedInfo.world_size``: one job has
    one world size, so they are traces of several runs (``where``: a prefix for the message)."""
    worlds = {s.world_size: s.path for s in summaries if s.world_size is not None}
    if len(worlds) > 1:
        (w1, f1), (w2, f2) = list(worlds.items())[:2]
        raise ScalesimError(
            f"{where}{Path(f1).name} says distributedInfo.world_size {w1}, "
            f"{Path(f2).name} says {w2}: traces of different runs; give the "
            "traces of one run (one per rank)"
        )


def missing_ranks_note(summaries: list[TraceSummary]) -> str | None:
    """A note where the traces are fewer than their world size says (ranks not traced are not
    compared: the slowest may be one of them); None when every rank is traced."""
    world = max((s.world_size or 0) for s in summaries)
    if world <= len(summaries):
        return None
    traced = sorted(s.rank for s in summaries)
    return (
        f"{len(summaries)} of the {world} ranks traced ({', '.join(map(str, traced[:8]))}"
        f"{', ...' if len(traced) > 8 else ''}): the others are not compared, and the "
        "slowest rank may be among them; trace every rank to name it"
    )


def cross_rank(summaries: list[TraceSummary]) -> dict:
    """Compare ranks step by step: who is slowest, how long the others wait for it.

    A rank's own time in a step is the step minus its exposed communication, the collectives
    set aside as no gradient traffic included (``StepBreakdown.set_aside_exposed_s``: what it
    spends computing, loading data or idle before it can sync). The slowest rank has the most;
    the wait of the others is their exposed communication beyond the slowest rank's (which is
    the communication itself: the exchange's ``intrinsic``, the set-aside collectives'
    ``set_aside_exposed_s``, a part of idle).
    """
    common = set.intersection(*(set(s.step for s in x.steps) for x in summaries))
    by_rank = [{s.step: s for s in x.steps} for x in summaries]
    med = {
        name: float(np.median([x.median(name) for x in summaries]))
        for name in ("step_s", "compute_s", "comm_s", "overlap_s", "data_wait_s", "idle_s")
    }
    total_comm = sum(s.comm_s for x in summaries for s in x.steps)
    total_overlap = sum(s.overlap_s for x in summaries for s in x.steps)
    own = np.array([[x.median("step_s") - x.median("exposed_comm_s")
                     - x.median("set_aside_exposed_s")] for x in summaries])[:, 0]
    result = dict(med)
    # Idle common to every rank (the slowest rank's own idle is the straggler, not overhead).
    result["idle_s"] = float(np.min([x.median("idle_s") for x in summaries]))
    result["overlap_share"] = total_overlap / total_comm if total_comm > 0 else 0.0
    result["own_s"] = own.tolist()
    if len(summaries) < 2 or not common:
        result.update(
            straggler_wait_s=0.0,
            slowest_rank=summaries[int(np.argmax(own))].rank,
            slowest_consistency=1.0,
            slowest_factor=1.0,
            slowest_counts={},
            steps_compared=0,
            intrinsic_exposed_comm_s=float(np.median([x.median("exposed_comm_s") for x in summaries])),
            set_aside_exposed_s=float(np.median([x.median("set_aside_exposed_s")
                                                 for x in summaries])),
        )
        return result
    slowest, waits, intrinsic, aside, factors = [], [], [], [], []
    for n in sorted(common):
        st = [r[n] for r in by_rank]
        # waiting on peers: in the exchange's collectives or in those set aside (a loss
        # all-reduced before backward waits for the slowest rank's forward)
        exposed = np.array([s.exposed_comm_s + s.set_aside_exposed_s for s in st])
        own_n = np.array([s.step_s for s in st]) - exposed
        i = int(np.argmax(own_n))
        slowest.append(i)
        intrinsic.append(st[i].exposed_comm_s)
        aside.append(st[i].set_aside_exposed_s)
        others = np.delete(np.arange(len(st)), i)
        waits.append(float(np.median(exposed[others] - exposed[i])))
        factors.append(float(own_n[i] / max(np.median(own_n[others]), 1e-12)))
    mode, count = Counter(slowest).most_common(1)[0]
    result.update(
        straggler_wait_s=max(float(np.median(waits)), 0.0),
        slowest_rank=summaries[mode].rank,
        slowest_consistency=count / len(slowest),
        slowest_counts={summaries[i].rank: slowest.count(i) for i in range(len(summaries))},
        steps_compared=len(slowest),
        slowest_factor=float(np.median(factors)),
        intrinsic_exposed_comm_s=float(np.median(intrinsic)),
        set_aside_exposed_s=float(np.median(aside)),
    )
    return result
