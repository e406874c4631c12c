"""A trace's communication calls: what each is, how large, and which carry no gradient.

Each collective or point-to-point event (an NCCL kernel, a gloo / c10d / record_param_comms host
op) is named (``collective_name``), given a kind (``collective_kind``: all-reduce, all-gather,
reduce-scatter; ``point_to_point``: a send or receive), a size (``input_elements``: elements
each rank puts in) and its group's ranks (``call_ranks``), and tallied (``new_record``). The 1 %
rule (``METRIC_ELEMENTS_SHARE``, ``no_gradient``) sets aside the calls too small to be gradient
traffic (a metric's or the loss's all-reduce) from the tallies (``CollectiveSizes``), the
exchange's time (``CollectiveIntervals``, ``GroupComm``) and the host posts
(``gradient_posts``).
"""

from __future__ import annotations

import math
import re
from array import array

import numpy as np

from scalesim.process_groups import UNNAMED_ROLE, group_role, whole_or_none
from scalesim.trace_files import PLAIN_NUMBERS
from scalesim.trace_intervals import Intervals, merge

MAX_ELEMENTS = 1 << 63  # a message's elements past this are no collective's (``input_elements``)

# point-to-point communication (a pipeline's sends and receives): c10d::send, c10d::recv_,
# gloo:send, gloo:recv, nccl:send, record_param_comms:send; NCCL's ncclDevKernel_SendRecv and
# ncclKernel_SendRecv_* kernels (which all-to-all runs on too: diagnose reads them as a
# pipeline's only where a process group or the schedule's annotations name one)
_POINT_TO_POINT = re.compile(r"(?:^|[:_])(?:send|recv|sendrecv)(?:[_\s]|$)", re.IGNORECASE)

# the host ops of one receive each, by preference: the wait's own annotation, the parameter
# record, the op that posts it (nested or back to back, so one family is counted); recent torch
# names NCCL's with the peer ("nccl:recv 0<-1": the name's first word is matched), and copies
# them onto the device timeline (gpu_user_annotation, not counted)
RECEIVE_FAMILIES = (("gloo:recv", "nccl:recv"), ("record_param_comms:recv",), ("c10d::recv_",))

# the host ops that communicate (a CPU trace's communication: gloo's, c10d's, NCCL's annotations)
CPU_COMM_PREFIXES = ("gloo:", "nccl:", "c10d::", "record_param_comms")
# the events of a CPU trace that time a collective's transfer itself: gloo's work, which runs on
# its ``pt_gloo_runloop`` threads from when a worker takes it up to its end (peers' lateness
# included). The other ``CPU_COMM_PREFIXES`` ops are the host's: the training thread posting it
# (``c10d::allreduce_``, nested in the autograd hook that fires it, with ``record_param_comms``
# inside) or annotating it (``nccl:*``); as an NCCL kernel is a GPU trace's transfer and its host
# ops none, where a CPU trace has worker events its collectives' time is theirs alone
# (``traces.summarise``; docs/diagnose.md, "the exchange's own time"). Point-to-point ops keep
# every family: gloo's sends and receives are the host's own waits.
WORKER_COMM_PREFIXES = ("gloo:",)

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


# bytes of an element by its dtype's name as traces write it: PyTorch's ScalarType names
# (``c10::toString``: "Float", "BFloat16", "Half", the ``dtype`` argument of record_param_comms
# and of the NCCL kernels Kineto copies it onto), torch's ("torch.float32"), NCCL's suffixes;
# and as nccl-tests' type column does (src/common.cu ``test_typenames``: int8 ... bfloat16,
# f8e4m3, f8e5m2; built against NCCL 1: char, int, half, float, double, int64, uint64)
DTYPE_BYTES = {"float": 4, "float32": 4, "f32": 4, "double": 8, "float64": 8, "half": 2,
               "float16": 2, "f16": 2, "bfloat16": 2, "bf16": 2, "int": 4, "int32": 4,
               "long": 8, "int64": 8, "int8": 1, "uint8": 1, "byte": 1, "char": 1, "bool": 1,
               "uint32": 4, "uint64": 8, "f8e4m3": 1, "f8e5m2": 1,
               # the C++ names torch.profiler writes in 'Input type' (torch 2.13, record_shapes)
               "long int": 8, "short int": 2, "signed char": 1, "unsigned char": 1,
               "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
               "complex<half>": 4, "complex<float>": 8, "complex<double>": 16}


def dtype_text(name) -> str:
    """A dtype's name as ``DTYPE_BYTES`` keys it: lower case, without 'c10::' or 'torch.'."""
    return str(name).lower().replace("c10::", "").replace("torch.", "")


def dtype_bytes(name) -> int | None:
    """Bytes of one element of the dtype ``name`` (``DTYPE_BYTES``), None where unknown."""
    return DTYPE_BYTES.get(dtype_text(name))


def first_input_elements(args: dict, argument: int = 0) -> int | None:
    """Elements of an op's first input (``argument``: the argument's place) from its ``Input
    Dims`` (traces recorded with ``record_shapes=True``; a tensor list's first tensor), None
    where absent or not a shape (a tensor list recorded as ``[]``, its ``Input type`` a list)."""
    dims = args.get("Input Dims")
    if not isinstance(dims, list) or len(dims) <= argument:
        return None
    first = dims[argument]
    kinds = args.get("Input type")
    if first == [] and isinstance(kinds, list) and len(kinds) > argument and isinstance(
            kinds[argument], str) and "List" in kinds[argument]:
        # a tensor list recorded without its tensors' shapes (torch 1.x's ``c10d::allreduce_``:
        # dims [] beside type 'TensorList'), not a 0-d tensor of 1 element
        return None
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
    if type(n) not in PLAIN_NUMBERS:
        n = first_input_elements(args, argument)
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return None
    return n if 0 <= n < MAX_ELEMENTS else None


def message_bytes(args, elements) -> float | None:
    """Bytes of a collective's message: its ``elements`` (``input_elements``) times its
    ``dtype``'s element bytes (``dtype_bytes``: an NCCL kernel's or ``record_param_comms``'
    ``dtype``), None where either is not recorded."""
    size = dtype_bytes(args.get("dtype", "")) if isinstance(args, dict) else None
    return None if elements is None or not size else float(elements) * size


def kernel_kind(collective: str, args) -> str | None:
    """The kind (``collective_kind``) of an NCCL kernel: of the collective its arguments name
    (``Collective name``, which Kineto copies from ``record_param_comms``: NCCL >= 2.19 may run
    several collectives in one ``ncclDevKernel_Generic``), else of its name (``collective``)."""
    named = args.get("Collective name") if isinstance(args, dict) else None
    return collective_kind(named if isinstance(named, str) and named else collective)


def host_input_argument(name: str, collective: str) -> int:
    """The place of a host op's input among its ``Input Dims``: 1 for a ``c10d::`` all-gather
    (``c10d::allgather_(Tensor[][] outputs, Tensor[] inputs, ...)``, ``_allgather_base_(Tensor
    output, Tensor input, ...)``: its first, the outputs, a list of lists recorded as ``[]``
    that read as 1 element) and reduce-scatter (``reduce_scatter_(Tensor[] outputs, Tensor[][]
    inputs, ...)``, ``_reduce_scatter_base_(Tensor output, Tensor input, ...)``: its first is
    the output shard, 1/n of the buffer that ``input_elements`` reads), else 0."""
    return int(name.startswith("c10d::")
               and collective_kind(collective) in ("all-gather", "reduce-scatter"))


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
    """The kind (``COLLECTIVE_KINDS``) of a collective's name (``collective_name``), None for
    one of no kind (broadcast, send/recv)."""
    letters = name.lower().replace("_", "")
    return next((k for key, k in COLLECTIVE_KINDS.items() if key in letters), None)


def point_to_point(collective: str) -> bool:
    """Whether a communication op or kernel (its ``collective_name`` key) sends or receives
    point to point."""
    return bool(_POINT_TO_POINT.search(collective))


def collective_name(name: str, args: dict) -> str:
    """The key a communication event is tallied under: ``record_param_comms:<its Collective
    name>``, an NCCL kernel's name up to its arguments, else the event's name."""
    if name == "record_param_comms":
        collective = args.get("Collective name")
        return f"record_param_comms:{collective[:60] if isinstance(collective, str) else '?'}"
    if "nccl" in name.lower():
        return name.split("(")[0][:60]
    return name


def call_ranks(args) -> int | None:
    """The ranks a collective runs over, as its event's ``Group size`` says (NCCL kernels,
    ``record_param_comms``); None where it says none (gloo's ops: the trace's world size)."""
    return whole_or_none(args.get("Group size")) if isinstance(args, dict) else None


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


class CollectiveIntervals(Intervals):
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


class CollectiveSizes:
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


class GroupComm:
    """NCCL kernels by the process group their arguments name (``process_groups``): intervals
    and per-name counts per group, resolved to roles once the trace (and its pg_config, which
    may follow the events) is read."""

    def __init__(self):
        self.intervals: dict[tuple, CollectiveIntervals] = {}
        self.collectives: dict[tuple, dict] = {}

    def see(self, collective: str, args, t0: float, d: float,
            tid: int = 0) -> tuple[dict, object] | None:
        """One NCCL kernel, ``collective`` its name as ``collective_name`` keys it, on stream
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
        self.intervals.setdefault(key, CollectiveIntervals()).add_call(t0, d, collective, elements, tid,
                                                                size)
        return c, elements

    def roles(self, process_groups: list[dict], world: int | None,
              largest: float = 0.0) -> dict[str, tuple]:
        """role -> (merged intervals, {"size", "descs", "collectives", "by_desc"}); a kernel's
        description is its own, else its group's in pg_config (matched by name); ``by_desc``:
        each description's {"size", "collectives"} (a role's groups apart: HSDP's shard and
        replicate groups are both data parallel). The intervals leave out the kernels set
        aside as no gradient traffic against ``largest`` (elements, ``CollectiveIntervals.split``)."""
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


def gradient_posts(posted: dict, posted_sizes: dict, posted_ranks: dict, largest: float,
                    world: int | None):
    """(posts, aside posts, set aside, unsized, sizes): each collective kind's host posts (s,
    sorted), of the first family that posts it (``HOST_COLLECTIVE_FAMILIES``; a later one as many
    times with sizes where the first records none), but those of no
    gradient traffic (``no_gradient`` against the ``largest`` reduction, elements; a post of
    no group size over the ``world``); those set aside, every kind's (s, sorted: how often
    they run, ``StepBreakdown.set_aside_posts``); kind -> how many were set aside; how many
    reductions recorded no size (which cannot be told apart); kind -> the elements of its
    posts, in the order of ``posts`` (NaN: not recorded; DDP's buckets as posted,
    ``StepBreakdown.reduction_elements``). ``posted``, ``posted_sizes``,
    ``posted_ranks``: (family, kind) -> starts (s), elements, ranks (NaN: not recorded)."""
    posts, aside_posts, set_aside, unsized, sizes = {}, [np.empty(0)], {}, 0, {}
    for kind in COLLECTIVE_KINDS.values():
        families = [f for f in HOST_COLLECTIVE_FAMILIES if len(posted.get((f, kind), ()))]
        if not families:
            continue
        # the first family that posts the kind, or a later one that posts each of its calls with
        # the size the first does not record (torch 1.x: ``c10d::allreduce_`` records its tensor
        # list as [], the ``nccl:all_reduce`` inside it the elements)
        family = next((f for f in families if len(posted[f, kind]) == len(posted[families[0], kind])
                       and not np.isnan(np.frombuffer(posted_sizes[f, kind])).all()), families[0])
        starts, elements = np.frombuffer(posted[family, kind]), np.frombuffer(
            posted_sizes[family, kind])
        ranks = np.frombuffer(posted_ranks[family, kind])
        aside = no_gradient(kind, elements, np.where(np.isnan(ranks), world or np.nan, ranks),
                            largest)
        order = np.argsort(starts[~aside], kind="stable")
        posts[kind], sizes[kind] = starts[~aside][order], elements[~aside][order]
        if aside.any():
            set_aside[kind] = int(aside.sum())
            aside_posts.append(starts[aside])
        unsized += int(np.isnan(elements).sum()) if kind in REDUCTION_KINDS else 0
    return posts, np.sort(np.concatenate(aside_posts)), set_aside, unsized, sizes
