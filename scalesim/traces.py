"""Summarise one rank's PyTorch profiler (Kineto) trace: each profiler step broken down.

One pass over the events ``trace_files.iter_trace`` streams from the file (memory bounded by
what is kept: two floats per interval of interest, ``trace_intervals``), each event classified
as below; communication is sized and tallied, and the 1 % rule applied, by ``trace_comm_calls``.
A job's ranks are loaded and compared in ``trace_ranks``.

What the events mean (names as PyTorch 2.x writes them; HTA classifies GPU kernels the same way:
communication when the name contains ``nccl``, memory for memcpy/memset, computation otherwise):

- steps: ``ProfilerStep#N`` (``user_annotation`` on the CPU thread). On GPU traces a step's
  window is on the device timeline: from the first to the last end of the device events its
  CPU step launched (``cuda_runtime``/``cuda_driver`` launches matched to kernels, memcpys and
  memsets by ``correlation``), widened to the ``gpu_user_annotation`` copy when present. The
  annotation alone ended before the optimizer's kernels on a real H200 trace (torch 2.11,
  docs/calibration.md "GPU path"): the launch-matched span is what the step's CUDA events time;
  without launches or correlations the annotation (else, where the trace has none, the CPU
  window) is used, and a step without one in bounds is left out with a note
  (``unplaced_steps_notes``: its host window runs ahead of the GPU's);
- GPU: ``cat == "kernel"`` events; NCCL kernels (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``,
  ``ncclKernel_...``) are communication, other kernels and ``gpu_memcpy``/``gpu_memset`` compute;
- CPU-only traces (gloo): ``gloo:all_reduce``/``gloo:broadcast``... annotations (run on
  ``pt_gloo_runloop`` threads) are communication; ``record_param_comms``, ``c10d::*`` and
  ``nccl:*`` ops, the host's posting a collective, are only where the trace has no gloo
  collective (``WORKER_COMM_PREFIXES``; sends and receives keep them); other ``cpu_op`` events
  are compute;
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
- events still open when the profiler stopped (``still_open``: args "finished": false, their
  dur run to the trace's end) are left out of all of the above, with a note; so is a step
  Kineto ended there unmarked (``cut_by_the_stop``: it ends at the trace's ``WINDOW_END``);
  and the last step where it ran no training work (backward ops, else ``Optimizer.step#``
  annotations) that every other step ran (``stopped_early``: ``prof.stop()`` closed it early);
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

import json
import math
import os
import re
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scalesim import figures
from scalesim.attention_kernel import attention_family
from scalesim.bounds import bound
from scalesim.errors import ScalesimError, excerpt
from scalesim.jsonio import json_kind
from scalesim.process_groups import ranks_of, whole_or_none
from scalesim.trace_batch import WRAPPER_HOOKS, ShapeReads
from scalesim.trace_comm_calls import (
    CPU_COMM_PREFIXES,
    HOST_COLLECTIVE_FAMILIES,
    RECEIVE_FAMILIES,
    REDUCTION_KINDS,
    WORKER_COMM_PREFIXES,
    CollectiveIntervals,
    CollectiveSizes,
    GroupComm,
    call_ranks,
    collective_kind,
    collective_name,
    gradient_posts,
    host_input_argument,
    input_elements,
    kernel_kind,
    message_bytes,
    new_record,
    no_gradient,
    point_to_point,
    see_record,
)
from scalesim.trace_files import PLAIN_NUMBERS, iter_trace
from scalesim.trace_intervals import (
    DEVICE_CATS,
    LAUNCH_CATS,
    Intervals,
    KernelLaunches,
    count_in,
    device_windows,
    in_window,
    is_int64,
    last_end_in,
    length_in,
    union,
)

US = 1e-6  # Chrome-trace timestamps are microseconds
MAX_WORLD_SIZE = 1 << 20  # ranks; the largest training jobs run about 10^5
_STEP = re.compile(r"ProfilerStep#(\d+)$")

# a pipeline schedule's forward of one micro-batch on one stage: torch.distributed.pipelining's
# runtime schedules (Interleaved1F1B, ZB, DualPipeV: "PP:<stage>F<micro-batch>", the action's
# repr, also inside an overlapped pair "PP:(0F3;3B1)OVERLAP_F_B") and GPipe ("Forward <i>" and
# "Backward <i>": a forward-only schedule, or a user's own "Forward <i>", has no backward);
# user annotations on the host. A split backward ("PP:0I3", "PP:0W3") marks a zero-bubble one.
_SCHEDULE_FORWARD = re.compile(r"(?:PP:|PP:\(|;)(\d+)F(\d+)(?=[;)]|$)")
_SCHEDULE_SPLIT_BACKWARD = re.compile(r"(?:PP:|PP:\(|;)\d+[IW]\d+(?=[;)]|$)")
_GPIPE = re.compile(r"(Forward|Backward) (\d+)$")

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


def micro_steps_with(micro_starts: np.ndarray, starts: np.ndarray) -> int:
    """In how many of a step's micro-steps (``micro_starts``: the step's, sorted, s; each runs
    to the next, the first from the step's start) one of ``starts`` (the step's collectives of
    one kind, s) starts."""
    if starts.size == 0:
        return 0
    at = np.maximum(np.searchsorted(micro_starts, starts, "right") - 1, 0)
    return int(np.unique(at).size)


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


def thread_id(ev: dict) -> int:
    """An event's ``tid`` as a 64-bit int (``is_int64``: Kineto writes such ints; a string, or
    an int past 64 bits, is hashed, stably within the process)."""
    tid = ev.get("tid")
    return tid if is_int64(tid) else hash(str(tid)) & 0x7FFFFFFF


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
    # when the step's last data wait ended, s on the same clock (the batch's arrival: the gaps
    # between steps' arrivals say whether a loader paces the job, ``trace_data_wait``); None
    # where the step waits on no data
    data_end_s: float | None = None
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
    # of each role's time in the step, the part compute or a data wait hid, s
    group_hidden_s: dict[str, float] = field(default_factory=dict)
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
    # how often those run: the ones the host posted in the step's host window
    # (``HOST_COLLECTIVE_FAMILIES``; 0 where none is posted, a GPU trace's kernels alone), and the
    # fewest of them any of its micro-steps posted (None where micro-steps are not counted):
    # against the step's micro_steps, once a step or in each micro-step
    # (``trace_collectives.set_aside_cadence``)
    set_aside_posts: int = 0
    set_aside_each_micro_step: int | None = None
    # elements of the gradient all-reduces the host posted in the step's host window, in the
    # order posted (``gradient_posts``: the set-aside ones left out): DDP's buckets as the job
    # ran them (``trace_buckets``); () where none is posted or one records no size
    reduction_elements: tuple[float, ...] = ()
    # bytes of the gradient all-reduce NCCL kernels that started in the step's window, in the
    # order they started (``In msg nelems`` x ``dtype``'s bytes, which Kineto copies onto each
    # kernel from its record_param_comms; the set-aside ones left out): the buckets where the
    # host posts record no size (``trace_buckets``); () on a CPU trace, where none ran or
    # where one records no size
    reduction_kernel_bytes: tuple[float, ...] = ()


def _base_time_s(meta: dict) -> float:
    """Kineto's ``baseTimeNanoseconds`` in seconds, 0 where absent or no plain number."""
    base = meta.get("baseTimeNanoseconds")
    if type(base) not in (int, float) or not math.isfinite(base) or abs(base) > 1e20:
        return 0.0
    return float(base) / 1e9


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
    # Kineto's ``baseTimeNanoseconds`` (s; 0 where not written): its events' ``ts`` count from
    # it, so two processes' times compare as base + ts (``trace_ranks.check_one_run_in_time``)
    base_time_s: float = 0.0
    # samples a micro-step, read from the input shapes torch.profiler's record_shapes writes
    # (``trace_batch.ShapeReads.micro_batch``), and where it was read; None and why not where
    # the trace records no shapes or its readings disagree
    micro_batch: int | None = None
    micro_batch_from: str = ""

    def median(self, name: str) -> float:
        return float(np.median([getattr(s, name) for s in self.steps]))

    def median_step(self) -> StepBreakdown:
        """The step whose length is the median (of an even count, the shorter of the two in
        the middle): its own parts add up to it (compute + exposed + data wait + idle), where
        each part's median over the steps, taken apart, need not (a DDP rank: step 9.87 ms,
        its parts' medians 4.18)."""
        ordered = sorted(self.steps, key=lambda st: st.step_s)
        return ordered[(len(ordered) - 1) // 2]


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


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# torch.profiler writes no negative dur: Kineto's trace writer clamps one to 0 ("should never
# happen": pytorch/kineto#646, c4597ab3, August 2022, after a zero end timestamp gave huge negative
# ones), and an event still open at the profiler's stop (pytorch/pytorch#150131's end time -1)
# is ended at the trace's end and marked (``still_open``). A negative dur is an edited, re-timed
# or foreign trace's (or a pre-2022 Kineto fault's): the time those events took is missing, so
# the trace is refused (``negative_duration_refusal``), not read with figures short of it.

# Kineto's mark of a host event still open at the profiler's stop: args "finished": false, a JSON
# boolean (``addMetadata`` writes the value unquoted), its dur run to the trace's end. Written
# on user annotations since kineto daa56485 (January 2025; 2f7ce6f5, September 2024, had ended
# them there unmarked, and daa56485 wrote "finished": true on every other host event), on any
# host event (cpu_op, user_annotation: ProfilerStep#N, record_function ranges, gloo's and the
# c10d ops) since 18d5a85e (March 2025; 7cb6ac63 left a dur-0 one unmarked). GPU events are
# CUPTI's records of finished work and never carry it. The string "false" is read alike.


def still_open(ev: dict) -> bool:
    """Whether a complete event was still open when the profiler stopped (Kineto's args
    "finished": false): its dur runs to the trace's end, so its real duration is unknown."""
    args = ev.get("args")
    if not isinstance(args, dict):
        return False
    finished = args.get("finished")
    return finished is False or finished == "false"


# Kineto's instant event at the end of its capture window (``captureWindowEndTime_``), last in
# every trace it writes (since 9c66d1eb, December 2020). An event still open at the profiler's
# stop is ended exactly there: marked "finished": false since daa56485 (``still_open``), unmarked
# from 2f7ce6f5 (September 2024, user annotations) to daa56485 (January 2025; before 2f7ce6f5 it
# was written of dur 0). A step torch.profiler closes (``prof.step()``, ``prof.stop()``) ends
# before PyTorch stops collecting, which precedes Kineto's stop (torch 2.13: 0.1 ms or more).
WINDOW_END = "Record Window End"


def cut_by_the_stop(step_ends: list[float], window_end) -> list[bool]:
    """Which host ProfilerSteps (``step_ends``: each one's ts + dur, us) end where the trace's
    capture window ends (``window_end``: the ``WINDOW_END`` instant's ts, us; None where the
    trace has none), to the nanosecond Kineto writes: steps still open at the profiler's stop,
    unmarked (``WINDOW_END``)."""
    none = [False] * len(step_ends)
    if type(window_end) not in PLAIN_NUMBERS:
        return none
    try:
        end = float(window_end)
    except OverflowError:
        return none
    if not math.isfinite(end):
        return none
    slack = 0.5e-3 + 4 * math.ulp(end)  # half a nanosecond, and the floats' rounding
    return [abs(e - end) <= slack for e in step_ends]


def first_named(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names``, joined, and how many more there are."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def cut_by_the_stop_note(source: str, cut: set[int]) -> str:
    """The note of the steps ``summarise`` left out as ``cut_by_the_stop``."""
    named = first_named([f"ProfilerStep#{n}" for n in sorted(cut)])
    return (f"{Path(source).name}: {named} left out: it ends at the trace's "
            f"'{WINDOW_END}', where Kineto ends a step still open at the profiler's stop "
            "(unmarked before kineto daa56485, January 2025), so how long it ran is unknown")


# the optimizer's step, a host annotation torch.optim writes ("Optimizer.step#SGD.step")
OPTIMIZER_PREFIX = "Optimizer.step#"


def stopped_early(host_steps: list[tuple[int, float, float]],
                  work: dict[str, np.ndarray]) -> tuple[int, str] | None:
    """(number, kind) of the last host ProfilerStep (``host_steps``: number, start, end, s;
    the highest number) when it ran none of the kinds of training work that every other step
    ran (``work``: kind -> its events' starts, s, sorted; "backward" first, the most reliable,
    named): the step ``prof.stop()`` closed when a trace stopped before its schedule's active
    steps ran out (what ran after the last ``prof.step()``: 0.01 to 0.05 ms of nothing on
    torch 2.13), which no timing tells from a whole step. None for a trace of one step, a
    forward-only one (no kind that every other step ran) or a last step that ran one."""
    if len(host_steps) < 2:
        return None
    last = max(host_steps)
    others = [w for w in host_steps if w[0] != last[0]]
    held = [kind for kind, starts in work.items()
            if all(count_in(starts, w0, w1) for _, w0, w1 in others)]
    if not held or any(count_in(work[kind], last[1], last[2]) for kind in held):
        return None
    return last[0], held[0]


def stopped_early_note(source: str, step: int, kind: str) -> str:
    """The note of the step ``summarise`` left out as ``stopped_early`` (it ran no ``kind``)."""
    return (f"{Path(source).name}: ProfilerStep#{step} left out: it ran no {kind}, as every "
            "other step did; prof.stop() closed it early")


def still_open_note(source: str, kinds: Counter) -> str:
    """The note of the events ``summarise`` left out as still open at the profiler's stop
    (``kinds``: kind -> count): which file, how many of which kind, why."""
    said = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    return (f"{Path(source).name}: {kinds.total()} event(s) still open when the profiler "
            f"stopped ({said}; args 'finished': false) left out: Kineto ends them at the "
            "trace's end, so how long they ran is unknown")


def negative_duration_refusal(source: str, negative: Counter) -> ScalesimError:
    """The one line refusing a trace whose complete events include ``negative`` (kind -> count)
    of a negative dur: which file, how many, why no figure is read from it, what to do."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in negative.items())
    return ScalesimError(
        f"{source}: {negative.total()} event(s) with a negative duration ({kinds}); "
        "torch.profiler writes none (Kineto clamps one to 0 and ends an event still open at "
        "its stop at the trace's end), so the trace was edited, re-timed or written by another "
        "tool and the time those events took is missing: re-record it with torch.profiler")


def no_complete_step(source: str, still_open_steps: int, other_steps: int,
                     unmarked: int = 0) -> ScalesimError:
    """The refusal of a trace none of whose ProfilerSteps is complete, ``still_open_steps`` of
    them still open at the profiler's stop, ``unmarked`` of those told by their end alone
    (``cut_by_the_stop``), ``other_steps`` malformed or of duration 0."""
    rest = f" and {other_steps} malformed or of duration 0" if other_steps else ""
    how = " or ".join(words for n, words in (
        (still_open_steps - unmarked, "'finished': false"),
        (unmarked, f"ending at its '{WINDOW_END}'")) if n)
    return ScalesimError(
        f"{source}: no complete ProfilerStep: {still_open_steps} still open when the profiler "
        f"stopped ({how}){rest}, so no step is whole to measure: trace one whole "
        "step or more")


def out_of_bounds_step_words(number: int, copies: list[str], read: bool = False) -> str:
    """One ProfilerStep left out for its duration (``STEP_BOUND``), named once whichever of
    its ``copies`` ("host": the CPU's user_annotation, "GPU": its gpu_user_annotation twin)
    were: 'ProfilerStep#3 (host and GPU copies)', 'ProfilerStep#3 (GPU copy)'; the host copy
    alone is the step's plain name (the step left out), 'ProfilerStep#3 (host copy)' where the
    step is ``read`` all the same (by its GPU copy: kernels of no correlation id)."""
    said = {("GPU",): " (GPU copy)", ("GPU", "host"): " (host and GPU copies)"}
    return f"ProfilerStep#{number}" + said.get(tuple(sorted(set(copies))),
                                               " (host copy)" if read else "")


def unplaced_steps_notes(source: str, unplaced: list[int], out_of_bounds: dict) -> list[str]:
    """The notes of the host ProfilerSteps ``summarise`` left out of a GPU trace whose kernels
    carry no correlation ids: ``device_windows`` places each step by its GPU copy alone, as
    the host's window runs ahead of the GPU's; one note for the steps whose GPU copy is
    missing, one for those whose copy was left out (in ``out_of_bounds``: ``STEP_BOUND``)."""
    left = [n for n in unplaced if "GPU" in out_of_bounds.get(n, ())]
    missing = [n for n in unplaced if n not in left]
    why = ((missing, "it has no GPU copy (gpu_user_annotation) to place it on the device "
                     "timeline"),
           (left, "its GPU copy (gpu_user_annotation), which places it on the device timeline, "
                  f"is of duration 0 or outside {STEP_BOUND.text()}"))
    return [f"{Path(source).name}: {first_named([f'ProfilerStep#{n}' for n in steps])} left "
            f"out: {words}, and the kernels carry no correlation ids to place it by the work "
            "its host copy launched" for steps, words in why if steps]


def _skipped_kind(name) -> str:
    """What a refused or left-out event was, for its line: steps, collectives or other events."""
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
    if type(ts) in PLAIN_NUMBERS and type(dur) in PLAIN_NUMBERS:
        try:
            t, d = float(ts), float(dur)
        except OverflowError:  # an integer past float: the checked path says which
            return _checked_event_times(ts, dur, source, number, name)
        if math.isfinite(t) and math.isfinite(d):
            if d < 0:
                return None
            if d <= LONGEST_EVENT_US and math.isfinite(t + d):
                return t, d
    return _checked_event_times(ts, dur, source, number, name)


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
    if values[1] > LONGEST_EVENT_US and not (isinstance(name, str) and _STEP.match(name)):
        raise overlong_event_refusal(label, *values)
    return values[0], values[1]


def overlong_event_refusal(label: str, ts_us: float, dur_us: float) -> ScalesimError:
    """The one line refusing an event (``label``: file, number, name) whose dur is past
    ``LONGEST_EVENT_US``: its ts and dur, how long that is and the bound."""
    # how long that is where the dur is written in digits (an exponent from 1e16 us says it)
    said = f" ({figures.duration_text(dur_us / 1e6)})" if dur_us < 1e16 else ""
    return ScalesimError(
        f"{label} at ts {figures.number(ts_us)} us: dur {figures.number(dur_us)} us{said}: "
        f"past {figures.number(STEP_BOUND.high)} "
        f"{STEP_BOUND.unit} ({figures.duration_text(STEP_BOUND.high)}), the longest event read; "
        "torch.profiler records none that long, so the trace was edited, re-timed or written by "
        "another tool: re-record it with torch.profiler")


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
# Any other event past its upper bound (a kernel of 1e15 us, 31.7 years) is refused, naming the
# event (``overlong_event_refusal``), as a non-finite dur is: the step windows would clip it to
# whatever they hold, and leaving it out would drop time it took, as a negative dur's is.
LONGEST_EVENT_US = STEP_BOUND.high * 1e6


def summarise(
    path: str | os.PathLike[str], index: int = 0, observe=None, launches: KernelLaunches | None = None
) -> TraceSummary:
    """Read one rank's trace and break every profiler step down (see the module docstring).
    Events still open at the profiler's stop (``still_open``) are left out, with a note.

    ``observe(event)``, when given, sees every event of the same single pass, those still open
    included (for readers that need more than the step breakdown, e.g.
    ``scalesim.sources.trace_compute``, which keeps an open collective's bytes and leaves out
    only its duration); ``launches``,
    when given, is filled with the trace's launches and device events (else a private one)."""
    meta: dict = {}
    launches = KernelLaunches() if launches is None else launches
    cpu_steps, gpu_steps = [], []
    compute_cpu, compute_gpu, data, attention = (Intervals() for _ in range(4))
    # communication, its point-to-point part and the rest (their union is all of it)
    p2p_cpu, p2p_gpu = Intervals(), Intervals()
    other_cpu, other_gpu = CollectiveIntervals(), CollectiveIntervals()  # sized, to set aside a metric's
    worker_cpu = CollectiveIntervals()  # gloo's own work (``WORKER_COMM_PREFIXES``): the transfer
    receive_starts = [array("d") for _ in RECEIVE_FAMILIES]
    forwards: dict[int, set[int]] = {}  # a schedule's stage -> micro-batches it ran forward
    gpipe = {"Forward": set(), "Backward": set()}  # GPipe's micro-batches, forward and backward
    split_backward = False
    loader_in_process = False
    wrapper_forwards, fetches = Intervals(), Intervals()  # the micro-step count's events
    backward_starts = array("d")  # backward ops' starts: which of those events trained
    optimizer_starts = array("d")  # the optimizer's steps' host starts (``stopped_early``)
    posted = defaultdict(lambda: array("d"))  # (host family, collective kind) -> starts
    posted_sizes = defaultdict(lambda: array("d"))  # ... -> their elements (NaN: not recorded)
    posted_ranks = defaultdict(lambda: array("d"))  # ... -> their groups' ranks (NaN: unknown)
    sizes = CollectiveSizes()  # the sized collectives, to set aside those of no gradient
    # the all-reduce NCCL kernels: starts (s), elements, bytes, ranks (NaN: not recorded)
    reduce_kernels = [array("d") for _ in range(4)]
    forward_names: Counter = Counter()  # MICRO_STEP_FORWARDS seen, by name
    shapes = ShapeReads()  # the ops' input shapes, to read the micro-batch (record_shapes)
    family_s: Counter = Counter()  # attention family -> kernel seconds
    devices: Counter = Counter()  # GPU id -> kernels
    coll = defaultdict(new_record)
    by_group = GroupComm()  # NCCL kernels by the process group their args name
    source = str(path)
    zero_steps: dict[int, list[str]] = {}  # steps out of STEP_BOUND -> copies ("host", "GPU")
    negative: Counter = Counter()  # complete events of a negative dur, by kind (refused below)
    unusable_steps = 0  # ProfilerStep events without a complete event's numeric ts and dur
    open_at_stop: Counter = Counter()  # events still open at the profiler's stop, by kind
    open_steps: set[int] = set()  # ... the steps among them (their device copies left out too)
    host_step_ends: list[float] = []  # each of ``cpu_steps``' end (us), for ``cut_by_the_stop``
    window_end = None  # the trace's ``WINDOW_END`` (us)
    for number, ev in iter_trace(path, meta):
        name = ev.get("name")
        if ev.get("ph") == "X" and still_open(ev):  # its dur runs to the trace's end: left out
            open_at_stop[_skipped_kind(name)] += 1
            if isinstance(name, str) and (m := _STEP.match(name)):
                open_steps.add(int(m.group(1)))
            if observe is not None:
                observe(ev)
            continue
        # checked before ``observe`` sees the event: a non-finite ts or dur is one error here
        times = _event_times(ev, source, number, name) if ev.get("ph") == "X" else None
        if observe is not None:
            observe(ev)
        if times is None:
            if name == WINDOW_END:
                window_end = ev.get("ts")
            dur = ev.get("dur")
            if type(dur) in PLAIN_NUMBERS and dur < 0 and ev.get("ph") == "X":
                negative[_skipped_kind(name)] += 1
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
        elif name.startswith(OPTIMIZER_PREFIX) and cat != "gpu_user_annotation":
            optimizer_starts.append(t0)
        m = _STEP.match(name)
        if m and STEP_BOUND.problem(d) is not None:  # 0, 1e-300 us or longer than 11.6 days
            zero_steps.setdefault(int(m.group(1)), []).append(
                "GPU" if cat == "gpu_user_annotation" else "host")
        elif m:
            (gpu_steps if cat == "gpu_user_annotation" else cpu_steps).append((int(m.group(1)), t0, t0 + d))
            if cat != "gpu_user_annotation":
                host_step_ends.append(ts + dur)
        elif name.startswith(DATA_PREFIX):
            data.add(t0, d)
            loader_in_process = loader_in_process or IN_PROCESS_LOADER in name
            if cat != "gpu_user_annotation":
                fetches.add(t0, d)
        elif cat == "user_annotation" and name in MICRO_STEP_FORWARDS:
            wrapper_forwards.add(t0, d)
            forward_names[name] += 1
            shapes.see_forward(name, t0, d)
        elif cat == "user_annotation" and name in WRAPPER_HOOKS:
            shapes.see_hook(name, t0, d)
        elif cat == "user_annotation" and name.startswith("PP:"):
            for stage, micro in _SCHEDULE_FORWARD.findall(name):
                forwards.setdefault(int(stage), set()).add(int(micro))
            split_backward = split_backward or bool(_SCHEDULE_SPLIT_BACKWARD.search(name))
        elif cat == "user_annotation" and (g := _GPIPE.match(name)):
            gpipe[g.group(1)].add(int(g.group(2)))
        elif cat == "kernel":
            if "nccl" in name.lower():
                collective = collective_name(name, {})
                args = ev.get("args")
                n, ranks = see_record(coll[collective], d, args), call_ranks(args)
                if point_to_point(collective):
                    p2p_gpu.add(t0, d)
                else:
                    other_gpu.add_call(t0, d, collective, n, thread_id(ev), ranks)
                sizes.see(coll[collective], collective, n, d, ranks)
                if kernel_kind(collective, args) == "all-reduce":
                    nbytes = message_bytes(args, n)
                    for a, v in zip(reduce_kernels, (t0, n, nbytes, ranks), strict=True):
                        a.append(math.nan if v is None else float(v))
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
            collective = collective_name(name, args if isinstance(args, dict) else {})
            n = (input_elements(args, host_input_argument(name, collective))
                 if isinstance(args, dict) else None)
            ranks = call_ranks(args)
            if point_to_point(collective):
                p2p_cpu.add(t0, d)
            else:
                (worker_cpu if name.startswith(WORKER_COMM_PREFIXES) else other_cpu).add_call(
                    t0, d, collective, n, thread_id(ev), ranks)
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
            shapes.see(name, t0, ev.get("args"))
    cut_at = cut_by_the_stop(host_step_ends, window_end)  # still open, unmarked
    cut = {w[0] for w, c in zip(cpu_steps, cut_at, strict=True) if c}
    cpu_steps = [w for w, c in zip(cpu_steps, cut_at, strict=True) if not c]
    open_steps |= cut
    # a step still open: its device copy, which ends at the last kernel it ran, is no step either
    gpu_steps = [w for w in gpu_steps if w[0] not in open_steps]
    if not cpu_steps and not gpu_steps:
        if open_steps:
            raise no_complete_step(source, open_at_stop["ProfilerStep(s)"] + len(cut),
                                   len(zero_steps) + unusable_steps + negative["ProfilerStep(s)"],
                                   len(cut))
        if zero_steps:
            named = first_named([f"ProfilerStep#{n}" for n in zero_steps], shown=1)
            raise ScalesimError(
                f"{source}: every ProfilerStep has duration 0 or one outside "
                f"{STEP_BOUND.text()} ({named}); no step to measure"
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
    # the last step, if it ran no training work where every other step did (its device copy too)
    early = stopped_early(cpu_steps, {"backward": np.sort(np.frombuffer(backward_starts)),
                                      "optimizer step": np.sort(np.frombuffer(optimizer_starts))})
    if early is not None:
        cpu_steps = [w for w in cpu_steps if w[0] != early[0]]
        gpu_steps = [w for w in gpu_steps if w[0] != early[0]]
    notes = []
    ordered = sorted(cpu_steps, key=lambda w: w[1])
    # 1 us of slack: Kineto rounds ts and dur to the nanosecond
    overlapping = sum(1 for a, b in zip(ordered, ordered[1:], strict=False) if b[1] < a[2] - 1e-6)
    if overlapping:
        notes.append(f"{Path(source).name}: {overlapping} ProfilerStep(s) start before the step "
                     "before them ends; steps are read as given, so time between them counts "
                     "twice: re-export the trace from torch.profiler")
    if negative:
        raise negative_duration_refusal(source, negative)
    if open_at_stop:
        notes.append(still_open_note(source, open_at_stop))
    if cut:
        notes.append(cut_by_the_stop_note(source, cut))
    if early is not None:
        notes.append(stopped_early_note(source, *early))
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
        # the transfer's own events where gloo's workers ran them, else the host's ops
        # (``WORKER_COMM_PREFIXES``): the ops that post them time the host, not the transfer
        other_comm, aside = (worker_cpu if len(worker_cpu) else other_cpu).split(largest,
                                                                                 world_size)
        windows = cpu_steps
    # the steps read, and those no GPU copy placed (kernels of no correlation id), whose note
    # says their copy's duration
    read = {w[0] for w in windows}
    unplaced = sorted({w[0] for w in cpu_steps} - read)
    if out := {n: c for n, c in zero_steps.items() if n not in unplaced}:
        named = first_named([out_of_bounds_step_words(n, c, n in read) for n, c in out.items()])
        notes.append(f"{Path(source).name}: {named} of duration 0 or outside "
                     f"{STEP_BOUND.text()} left out")
    notes += unplaced_steps_notes(source, unplaced, zero_steps)
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
    posts, aside_posts, set_aside, unsized, post_sizes = gradient_posts(
        posted, posted_sizes, posted_ranks, largest, world_size)
    kernel_posts, kernel_bytes = _gradient_kernels(reduce_kernels, largest, world_size)
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
        group_comm, group_hidden = {}, {}
        for role, (merged, _) in roles.items():  # each role's collectives, and what hid them
            rw = group_comm[role] = length_in(merged, w0, w1)
            hidden = group_hidden[role] = max(rw + cdw - length_in(with_compute[role], w0, w1),
                                              0.0)
            # the part of the role's collectives nothing else covered (not ``alone``: the
            # set-aside collectives' exposed time of the step, below)
            role_alone = max(cdmw - length_in(covered_by_others[role], w0, w1), 0.0)
            role_steps[role].append((rw, hidden, min(role_alone, rw)))
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
                data_end_s=last_end_in(d_set, w0, w1),
                attention_s=length_in(a_set, w0, w1),
                p2p_exposed_s=max(cdmw - length_in(cd_other, w0, w1), 0.0),
                collective_s=ow,
                collective_hidden_s=max(ow + cdw - length_in(cd_collectives, w0, w1), 0.0),
                receives=None if counted is None else count_in(counted, *host_window.get(num, (w0, w1))),
                group_comm_s=group_comm,
                group_hidden_s=group_hidden,
                micro_steps=None if micro_starts is None else
                count_in(micro_starts, *host_window.get(num, (w0, w1))),
                micro_steps_with=_micro_steps_with(micro_starts, posts,
                                                   *host_window.get(num, (w0, w1))),
                set_aside_s=sw,
                set_aside_exposed_s=alone,
                set_aside_posts=count_in(aside_posts, *host_window.get(num, (w0, w1))),
                set_aside_each_micro_step=_fewest_a_micro_step(
                    micro_starts, aside_posts, *host_window.get(num, (w0, w1))),
                reduction_elements=_sizes_in(posts, post_sizes, "all-reduce",
                                             *host_window.get(num, (w0, w1))),
                reduction_kernel_bytes=_sizes_in(kernel_posts, kernel_bytes, "all-reduce", w0,
                                                 w1),
            )
        )
    micro_steps = most_steps_count([st.micro_steps for st in steps])
    micro_batch, micro_batch_from = shapes.micro_batch(np.sort(np.frombuffer(backward_starts)))
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
        base_time_s=_base_time_s(meta),
        micro_batch=micro_batch,
        micro_batch_from=micro_batch_from,
    )


def _gradient_kernels(kernels: list, largest: float, world: int | None) -> tuple[dict, dict]:
    """({"all-reduce": starts (s, sorted)}, {"all-reduce": their bytes, NaN: not recorded}) of
    the all-reduce NCCL kernels (``kernels``: starts, elements, bytes, ranks), those of no
    gradient traffic (``no_gradient`` against the ``largest`` reduction, elements; one of no
    group size over the ``world``) left out, as ``gradient_posts`` leaves out the host's."""
    starts, elements, nbytes, ranks = (np.frombuffer(a) for a in kernels)
    keep = ~no_gradient("all-reduce", elements,
                        np.where(np.isnan(ranks), world or np.nan, ranks), largest)
    order = np.argsort(starts[keep], kind="stable")
    return {"all-reduce": starts[keep][order]}, {"all-reduce": nbytes[keep][order]}


def _sizes_in(posts: dict, sizes: dict, kind: str, w0: float, w1: float) -> tuple[float, ...]:
    """``StepBreakdown.reduction_elements`` of the step whose host window is [w0, w1) (s): the
    elements of ``kind``'s posts (``gradient_posts``) in it, as posted; () where there are
    none or one records no size."""
    if kind not in posts:
        return ()
    lo, hi = np.searchsorted(posts[kind], [w0 - 1e-9, w1 - 1e-9], "left")  # as ``in_window``
    mine = sizes[kind][lo:hi]
    return tuple(float(n) for n in mine) if np.isfinite(mine).all() else ()


def _fewest_a_micro_step(micro_starts, starts: np.ndarray, w0: float, w1: float) -> int | None:
    """``StepBreakdown.set_aside_each_micro_step`` of the step whose host window is [w0, w1)
    (s): the fewest of ``starts`` (s, sorted) any of its micro-steps holds (each runs to the
    next, the first from the step's start, as ``micro_steps_with``); None where it counts none."""
    if micro_starts is None:
        return None
    mine = in_window(micro_starts, w0, w1)
    if mine.size == 0:
        return None
    at = np.maximum(np.searchsorted(mine, in_window(starts, w0, w1), "right") - 1, 0)
    return int(np.bincount(at, minlength=mine.size).min())


def _micro_steps_with(micro_starts, posts: dict, w0: float, w1: float) -> dict[str, int]:
    """``StepBreakdown.micro_steps_with`` of the step whose host window is [w0, w1) (s)."""
    if micro_starts is None:
        return {}
    mine = in_window(micro_starts, w0, w1)
    if mine.size == 0:
        return {}
    return {kind: micro_steps_with(mine, in_window(starts, w0, w1))
            for kind, starts in posts.items()}
