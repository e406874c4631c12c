"""Profiler traces of the user's own job -> compute calibration (``calibrate --from-trace``).

Each trace is read once, by the same streaming reader as ``scalesim diagnose --trace``
(``scalesim.traces.summarise``, with an ``observe`` hook for the events it does not keep, those
still open at the profiler's stop left out as there), so a 1 GB trace costs a few numbers per
event of interest, never the whole file.

Per profiler step ``W`` of one rank (``traces`` gives compute C, exposed communication E, data wait
D and the step length), this module adds:

- optimizer O: ``Optimizer.step#...`` annotations (CPU traces: their length inside ``W``; GPU
  traces: the span from the first to the last kernel launched inside them, matched by the
  ``correlation`` id of kernel and launch);
- backward B: ``autograd::engine::evaluate_function: ...`` ops (CPU: their length inside ``W``;
  GPU: busy time of the kernels launched inside them); backward share
  ``B / (C - O)`` (the same share ``Workload.backward_fraction`` holds);
- forward+backward time of one micro-step ``t = (|W| - E - D - O) / k``: the rank's own time
  (compute, launch gaps and idle before it syncs) without the optimizer, over the ``k``
  micro-steps a step its trace shows (``TraceSummary.micro_steps``: gradient accumulation's
  forwards of the DDP / FSDP module, else DataLoader fetches; 1 where it shows neither, which
  ``describe_run`` says); the point ``(b, median t)`` per
  micro-batch ``b``, several batches fit ``overhead_s + per_sample_s * b``
  (``scalesim.model.compute.fit_compute_curve``);
- communication per op (NCCL kernels ``ncclKernel_*``/``ncclDevKernel_*``, gloo ``gloo:*``):
  count, time and, when the trace has them (NCCL kernel or ``record_param_comms`` arguments
  ``In msg nelems``/``dtype``; with ``record_shapes=True`` the ``Input Dims`` of ``gloo:*``), the
  message sizes; DDP's bucket rebuild (``bucket_rebuild``), once in a job, left out and counted;
- per-rank spread: ``trace_ranks.cross_rank`` (slowest rank and factor) and the robust step-time cv
  ``(IQR / 1.349) / median`` per rank, as the jitter phase computes it.
"""

from __future__ import annotations

import math
import os
import re
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scalesim.bounds import bound, check_number, parse_number
from scalesim.errors import ScalesimError
from scalesim.trace_comm_calls import dtype_bytes, dtype_text, first_input_elements
from scalesim.trace_intervals import Intervals, KernelLaunches, length_in, merge
from scalesim.trace_ranks import (
    check_one_run_in_time,
    check_one_world,
    cross_rank,
    traced_micro_batch,
    traced_micro_steps,
)
from scalesim.traces import (
    OPTIMIZER_PREFIX,
    TraceSummary,
    backward_op,
    still_open,
    summarise,
    thread_id,
)

_STEP = re.compile(r"ProfilerStep#(\d+)$")
_COLL = (("allreduce", "all_reduce"), ("all_reduce", "all_reduce"),
         ("reducescatter", "reduce_scatter"), ("reduce_scatter", "reduce_scatter"),
         ("allgather", "all_gather"), ("all_gather", "all_gather"), ("broadcast", "broadcast"),
         ("sendrecv", "send_recv"), ("alltoall", "all_to_all"), ("barrier", "barrier"),
         ("reduce", "reduce"), ("send", "send_recv"), ("recv", "send_recv"))


def collective_op(name: str) -> str:
    """all_reduce, reduce_scatter, all_gather... from a kernel, gloo or c10d name."""
    low = name.lower().replace("ncclkernel_", "").replace("nccldevkernel_", "")
    low = low.split(":", 1)[-1] if low.startswith(("gloo:", "nccl:")) else low
    for key, op in _COLL:
        if key in low.replace("_", "") or key in low:
            return op
    return "other"


@dataclass
class CommStats:
    """One collective op of one rank (or one rank's share of a run): per profiler step."""

    count: float = 0.0  # calls per step
    time_s: float = 0.0  # kernel (GPU) or gloo (CPU) time per step
    bytes: float | None = None  # bytes per step, when the trace records sizes
    element_bytes: int | None = None  # bytes of one element of the messages (4 fp32, 2 bf16)
    sizes: list[float] = field(default_factory=list)  # distinct message sizes (<= 16)


OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "send_recv",
       "all_to_all", "barrier", "other")

# DDP's bucket rebuild (torch/csrc/distributed/c10d/reducer.cpp ``sync_bucket_indices``): once in
# a job, in its first forward after the first backward (``_pre_forward``'s ``_rebuild_buckets``),
# rank 0 broadcasts the rebuilt buckets' parameter indices and sizes as 32-bit integers (gloo:
# int [7] and [2] for the test job's 6 parameters in 2 buckets). DDP's per-step broadcast, of
# the module's buffers (``_sync_buffers``), is floating point or int64 (BatchNorm's counter).
INT32_NAMES = frozenset({"int", "int32"})


def bucket_rebuild(op: str, args: dict) -> bool:
    """Whether a collective (``collective_op``'s name) is DDP's bucket rebuild: a broadcast of
    32-bit integers (the ``dtype`` of an NCCL kernel or record_param_comms, the first ``Input
    type`` of a gloo op; not known without them)."""
    if op != "broadcast":
        return False
    types = args.get("Input type")
    dtype = args.get("dtype", types[0] if isinstance(types, list) and types else "")
    return dtype_text(dtype) in INT32_NAMES


class _Collector:
    """Everything ``summarise`` does not keep, gathered in the same pass (arrays of numbers)."""

    def __init__(self):
        self.cpu_steps: list[tuple[int, float, float]] = []
        self.backward: dict[int, Intervals] = defaultdict(Intervals)
        self.optimizer: dict[int, Intervals] = defaultdict(Intervals)
        # communication events: op code, start, duration (0: a size-only record), bytes (nan:
        # unknown), on the GPU timeline (1) or the CPU one (0), size-only record (1) or not (0)
        self.c_op, self.c_gpu, self.c_rec = array("b"), array("b"), array("b")
        self.c_t0, self.c_dur, self.c_bytes = array("d"), array("d"), array("d")
        self.c_elem, self.c_rebuild = array("b"), array("b")

    def _comm(self, op: str, t0: float, d: float, sized: tuple[float, int] | None, gpu: bool,
              record: bool, args: dict) -> None:
        nbytes, elem = sized if sized else (None, 0)
        self.c_elem.append(elem)
        self.c_rebuild.append(int(bucket_rebuild(op, args)))
        self.c_op.append(OPS.index(op))
        self.c_gpu.append(int(gpu))
        self.c_rec.append(int(record))
        self.c_t0.append(t0)
        self.c_dur.append(d)
        self.c_bytes.append(float("nan") if nbytes is None else nbytes)

    def __call__(self, ev: dict) -> None:
        if ev.get("ph") != "X":
            return
        name, ts, dur = ev.get("name"), ev.get("ts"), ev.get("dur")
        if not isinstance(name, str) or not isinstance(ts, (int, float)) \
                or not isinstance(dur, (int, float)) or dur < 0:
            return
        cat = ev.get("cat", "")
        t0, d = float(ts) * 1e-6, float(dur) * 1e-6
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        tid = thread_id(ev)
        m = _STEP.match(name)
        if still_open(ev):
            # open at the profiler's stop: its dur runs to the trace's end. A collective's message
            # was still sent (its bytes count towards the gradient size); its time (nan) and call
            # are left out, and no step, backward or optimizer interval is read from it.
            if m or not (cat == "kernel" or name.startswith("gloo:")
                         or name == "record_param_comms"):
                return
            d = 0.0 if name == "record_param_comms" else math.nan
        if m:
            if cat != "gpu_user_annotation":
                self.cpu_steps.append((int(m.group(1)), t0, t0 + d))
        elif backward_op(name, cat):
            self.backward[tid].add(t0, d)
        elif name.startswith(OPTIMIZER_PREFIX) and cat != "gpu_user_annotation":
            self.optimizer[tid].add(t0, d)
        elif cat == "kernel":
            if "nccl" in name.lower():
                # NCCL >= 2.19 may run several collectives in one ncclDevKernel_Generic: PyTorch
                # then names the collective in the kernel's arguments.
                named = args.get("Collective name")
                op = collective_op(str(named)) if named else collective_op(name)
                self._comm(op, t0, d, _msg_bytes(args), True, False, args)
        elif name.startswith("gloo:"):
            self._comm(collective_op(name), t0, d, _dims_bytes(args), False, False, args)
        elif name == "record_param_comms":
            sized = _msg_bytes(args)
            if sized is not None:
                op = collective_op(str(args.get("Collective name", "")))
                self._comm(op, t0, 0.0, sized, False, True, args)

    def _in_steps(self, gpu_windows, cpu_windows) -> tuple[np.ndarray, np.ndarray]:
        """(timing, sizing): masks of the communication events inside the step windows that
        time a call (on their own timeline) and that size one (record_param_comms when
        present, so a collective is not counted twice)."""
        op, t0 = np.frombuffer(self.c_op, dtype=np.int8), np.frombuffer(self.c_t0)
        gpu = np.frombuffer(self.c_gpu, dtype=np.int8).astype(bool)
        rec = np.frombuffer(self.c_rec, dtype=np.int8).astype(bool)

        def inside(windows, mask):
            if not windows:
                return np.zeros(op.size, dtype=bool)
            s, e = merge(np.array([w[0] for w in windows]), np.array([w[1] for w in windows]))
            idx = np.searchsorted(s, t0, "right") - 1
            return mask & (idx >= 0) & (t0 < e[np.maximum(idx, 0)])

        # a collective still open at the profiler's stop (duration nan) is sized, never timed
        timed = ~rec & np.isfinite(np.frombuffer(self.c_dur))
        timing = inside(gpu_windows, gpu & timed) | inside(cpu_windows, ~gpu & timed)
        sizes_from = rec if rec.any() else ~rec
        sized = inside(cpu_windows, sizes_from & ~gpu) | inside(gpu_windows, sizes_from & gpu)
        return timing, sized

    def comm_per_step(self, gpu_windows, cpu_windows) -> tuple[dict[str, CommStats], int]:
        """Per op: calls, time and bytes per step, from the events inside the step windows
        (``_in_steps``), less DDP's bucket rebuild (``bucket_rebuild``: once in a job); and the
        rebuild's calls in those windows, left out."""
        op = np.frombuffer(self.c_op, dtype=np.int8)
        if op.size == 0:
            return {}, 0
        dur, nbytes = np.frombuffer(self.c_dur), np.frombuffer(self.c_bytes)
        elem = np.frombuffer(self.c_elem, dtype=np.int8)
        rebuild = np.frombuffer(self.c_rebuild, dtype=np.int8).astype(bool)
        kept = ~rebuild
        timing, sized = self._in_steps(gpu_windows, cpu_windows)
        rebuild_calls = int((timing & rebuild).sum())
        timing &= kept
        sized &= kept & np.isfinite(nbytes) & (nbytes > 0)
        steps = max(len(cpu_windows), 1)
        out = {}
        for code in np.unique(op[timing | sized]):
            if not (timing & (op == code)).any() and not (sized & (op == code)).any():
                continue
            t = timing & (op == code)
            z = sized & (op == code)
            distinct = sorted({float(x) for x in nbytes[z]})
            out[OPS[code]] = CommStats(
                count=float(t.sum()) / steps, time_s=float(dur[t].sum()) / steps,
                bytes=float(nbytes[z].sum()) / steps if z.any() else None,
                element_bytes=int(np.median(elem[z])) if z.any() else None,
                sizes=distinct[:16])
        return out, rebuild_calls

    def phase_sets(self, gpu: bool, launches: KernelLaunches) -> tuple[tuple, tuple, bool]:
        """(backward, optimizer) merged intervals on the timeline compute is measured on (GPU:
        the device work launched inside them, ``KernelLaunches``); and whether GPU kernels
        could be matched to their launches."""
        def cpu_union(groups):
            starts = [np.frombuffer(g.start) for g in groups.values()]
            ends = [np.frombuffer(g.end) for g in groups.values()]
            if not starts:
                return np.empty(0), np.empty(0)
            return merge(np.concatenate(starts), np.concatenate(ends))

        if not gpu:
            return cpu_union(self.backward), cpu_union(self.optimizer), True
        if not launches.matched():
            return (np.empty(0), np.empty(0)), (np.empty(0), np.empty(0)), False
        return (launches.device_intervals(self.backward), launches.device_intervals(self.optimizer),
                True)


def _sized(nbytes: float, size: int) -> tuple[float, int] | None:
    """(bytes, element bytes) when ``nbytes`` is a message the bounds table allows
    (``message_bytes``: 1 B to 1 TiB), else None: a size no collective has (negative, zero,
    1e300 elements) is left unknown, as a message without sizes is, not summed into the step."""
    return None if bound("message_bytes").problem(nbytes) else (nbytes, size)


def _msg_bytes(args: dict) -> tuple[float, int] | None:
    """(bytes, element bytes) of an NCCL kernel's or record_param_comms' message."""
    n = args.get("In msg nelems", args.get("In msg size"))
    size = dtype_bytes(args.get("dtype", ""))
    if isinstance(n, (int, float)) and not isinstance(n, bool) and size:
        out = args.get("Out msg nelems")
        if isinstance(out, (int, float)) and not isinstance(out, bool):
            n = max(n, out)  # all-gather: the gathered buffer, as nccl-tests' S
        try:
            return _sized(float(n) * size, size)
        except OverflowError:  # a whole number past a float's range: no message is that long
            return None
    return None


def _dims_bytes(args: dict) -> tuple[float, int] | None:
    """(bytes, element bytes) of a gloo op's first input (traces with record_shapes=True)."""
    types = args.get("Input type")
    if not isinstance(types, list) or not types:
        return None
    size = dtype_bytes(types[0])
    elements = first_input_elements(args)  # a whole number, however large; bounded below
    if elements is None or not size:
        return None
    return _sized(float(elements) * size, size) if elements.bit_length() < 64 else None


@dataclass
class RankTrace:
    """One rank's trace: the step breakdown of ``traces`` and the additions of this module."""

    summary: TraceSummary
    optimizer_s: list[float]
    backward_s: list[float]
    fwd_bwd_s: list[float]
    backward_share: list[float]
    comm: dict[str, CommStats]
    matched_gpu: bool
    bucket_rebuild_calls: int = 0  # DDP's bucket rebuild in the steps, left out of ``comm``


def read_rank(path: str | os.PathLike[str], index: int = 0) -> RankTrace:
    """One pass over one rank's trace."""
    col, launches = _Collector(), KernelLaunches()
    summary = summarise(path, index, observe=col, launches=launches)
    gpu = summary.device == "gpu"
    backward, optimizer, matched = col.phase_sets(gpu, launches)
    opt, bwd, fb, share = [], [], [], []
    micro_steps = summary.micro_steps or 1  # not read: a step is one micro-step (said)
    for st in summary.steps:
        w0, w1 = st.start_s, st.end_s  # the step's window on the timeline compute is read on
        if gpu and optimizer[0].size:
            s, e = optimizer
            lo, hi = np.searchsorted(e, w0, "right"), np.searchsorted(s, w1, "left")
            o = float(min(e[hi - 1], w1) - max(s[lo], w0)) if hi > lo else 0.0
        else:
            o = length_in(optimizer, w0, w1)
        b = length_in(backward, w0, w1)
        # the collectives set aside as no gradient traffic (a metric's) are communication too
        own = st.step_s - st.exposed_comm_s - st.set_aside_exposed_s - st.data_wait_s - o
        opt.append(o)
        bwd.append(b)
        fb.append(max(own, 0.0) / micro_steps)
        busy = st.compute_s - (length_in(optimizer, w0, w1) if gpu else o)
        share.append(b / busy if busy > 0 and b > 0 else float("nan"))
    # the host windows of the steps ``summarise`` kept (not one it left out: of duration 0,
    # still open at the stop and unmarked, ``traces.cut_by_the_stop``, or the last one, closed
    # by prof.stop() before it ran any training work, ``traces.stopped_early``)
    kept = {st.step for st in summary.steps}
    cpu_w = [(w0, w1) for n, w0, w1 in col.cpu_steps if n in kept]
    gpu_w = [(st.start_s, st.end_s) for st in summary.steps] if gpu else cpu_w
    comm, rebuild_calls = col.comm_per_step(gpu_w, cpu_w)
    return RankTrace(summary, opt, bwd, fb, share, comm, matched, rebuild_calls)


@dataclass
class BatchRun:
    """The traces of one run (one micro-batch, one file per rank) and what they say."""

    micro_batch: int
    ranks: list[RankTrace]
    cross: dict

    @property
    def fwd_bwd_s(self) -> float:
        return float(np.median([np.median(r.fwd_bwd_s) for r in self.ranks]))

    def micro_steps(self) -> tuple[int | None, str]:
        """(micro-steps a step, the words of how it was read): ``trace_ranks.traced_micro_steps``."""
        return traced_micro_steps([r.summary for r in self.ranks])

    @property
    def spread_s(self) -> float:
        allsteps = np.concatenate([r.fwd_bwd_s for r in self.ranks])
        q1, q3 = np.percentile(allsteps, [25, 75])
        return float(q3 - q1)

    @property
    def steps(self) -> int:
        return int(sum(len(r.fwd_bwd_s) for r in self.ranks))

    @property
    def optimizer_s(self) -> float:
        return float(np.median([np.median(r.optimizer_s) for r in self.ranks]))

    @property
    def backward_fraction(self) -> float | None:
        vals = np.concatenate([r.backward_share for r in self.ranks])
        vals = vals[np.isfinite(vals) & (vals > 0) & (vals < 1)]
        return float(np.median(vals)) if vals.size else None

    def step_cv(self) -> float:
        """Median over ranks of the robust cv of step time, (IQR / 1.349) / median."""
        cvs = []
        for r in self.ranks:
            t = np.array([s.step_s for s in r.summary.steps])
            q1, q3 = np.percentile(t, [25, 75])
            cvs.append((q3 - q1) / 1.349 / max(float(np.median(t)), 1e-12))
        return float(np.median(cvs))

    def bucket_rebuild_calls(self) -> int:
        """The median rank's calls of DDP's bucket rebuild in its steps (left out of ``comm``)."""
        return int(np.median([r.bucket_rebuild_calls for r in self.ranks]))

    def comm(self) -> dict[str, CommStats]:
        """Per op, the median rank's calls, time and bytes per step."""
        out: dict[str, CommStats] = {}
        for op in sorted({op for r in self.ranks for op in r.comm}):
            per = [r.comm.get(op, CommStats()) for r in self.ranks]
            sized = [p.bytes for p in per if p.bytes is not None]
            out[op] = CommStats(
                count=float(np.median([p.count for p in per])),
                time_s=float(np.median([p.time_s for p in per])),
                bytes=float(np.median(sized)) if sized else None,
                element_bytes=next((p.element_bytes for p in per if p.element_bytes), None),
                sizes=sorted({x for p in per for x in p.sizes})[:16])
        return out


def parse_entries(entries: list[str], micro_batch: int | None) -> dict[int, list[str]]:
    """``B=FILE`` or ``FILE`` (with ``micro_batch``) -> {micro-batch: files of that run}."""
    groups: dict[int, list[str]] = {}
    for entry in entries:
        batch, sep, path = entry.partition("=")
        if sep and batch.strip().isdigit() and not os.path.exists(entry):  # never raises
            b = parse_number(batch, "micro_batch", f"--from-trace {entry[:80]}: the micro-batch")
        elif sep and not os.path.exists(entry) and os.path.exists(path):  # never raises
            # 'x=FILE', '1.5=FILE': was told to write '32=x=FILE', or 'no such file'
            raise ScalesimError(f"--from-trace {entry[:200]}: '{batch[:40]}' is not a "
                                f"micro-batch; give a whole number of samples, as 32={path[:200]}")
        elif micro_batch is not None:
            b, path = check_number("micro_batch", micro_batch, "--micro-batch"), entry
        else:
            raise ScalesimError(f"--from-trace {entry}: say its micro-batch, as 32={entry} (one "
                                "run per batch size), or give --micro-batch N for all traces")
        groups.setdefault(b, []).append(path)
    if not groups:
        raise ScalesimError("give one or more traces: --from-trace 32=rank0.json 32=rank1.json")
    return dict(sorted(groups.items()))


def read_runs(groups: dict[int, list[str]]) -> list[BatchRun]:
    """Every trace once; one BatchRun per micro-batch (duplicate ranks in one run: an error)."""
    from scalesim.errors import check_distinct_files

    check_distinct_files([p for paths in groups.values() for p in paths],
                         "give each rank's trace once")
    runs = []
    for b, paths in groups.items():
        ranks = [read_rank(p, i) for i, p in enumerate(paths)]
        seen = [r.summary.rank for r in ranks]
        dup = {x for x in seen if seen.count(x) > 1}
        if dup:
            raise ScalesimError(f"micro-batch {b}: two traces are rank {min(dup)}; give one trace "
                                "per rank of each run")
        check_one_world([r.summary for r in ranks], f"micro-batch {b}: ")
        check_one_run_in_time([r.summary for r in ranks])
        ranks.sort(key=lambda r: r.summary.rank)
        traced, words = traced_micro_batch([r.summary for r in ranks])
        if traced is not None and traced != b:  # said, not silent: its per-sample time is off
            ranks[0].summary.notes.append(
                f"micro-batch {b} as given ({b}={Path(ranks[0].summary.path).name}), but {words}: "
                f"the per-sample time is taken at {b}, {b / traced:.3g}x what the shapes say; "
                f"give {traced}={Path(ranks[0].summary.path).name} if they are right")
        runs.append(BatchRun(b, ranks, cross_rank([r.summary for r in ranks])))
    return runs
