"""One table of physically sensible bounds for every number scalesim reads.

Every number of a profile, hardware, workload, scenario, runs file, validation case, CLI flag,
sweep axis and share link is bounded by one entry of ``QUANTITIES`` (a physical quantity with
its unit), so a value is refused in the same words wherever it comes from and nothing infinite,
NaN or overflowing (whole numbers of 2**63 and more) reaches the model. ``KNOBS`` ties each
what-if knob's scenario field to its CLI flag, its share-link key and its quantity.

- pydantic fields: ``bounded("devices", default=...)`` (minimum/maximum in ``scalesim schema``,
  the reason in the field's description);
- CLI flags: ``flag_type("devices")``, ``flag_list_type("devices")`` (argparse ``type=``);
- arrays (sweep axes): ``check_values("bucket_mib", values, "sweep axis 'bucket_mib'")``.

``python -m scalesim.bounds`` prints the table as Markdown (docs/bounds.md is that output).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np
from pydantic import Field

from scalesim.attention_kernel import ATTENTION_KERNELS, VENDOR_KERNEL
from scalesim.errors import (
    NOT_FINITE,
    NOT_NUMBER,
    NOT_WHOLE,
    ScalesimError,
    excerpt,
    flag_error,
    knobs_of,
)
from scalesim.figures import DAYS_PER_YEAR, exact, number, sig3
from scalesim.layout import (
    HARDWARE_KNOB,
    P2P_OVERLAP_WORDS,
    RECOMPUTE_STYLES,
    SCHEDULES,
    Recompute,
)
from scalesim.model.collectives import ALGORITHMS
from scalesim.model.memory import STRATEGIES
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.precision import DEFAULT_PRECISION, PRECISIONS

DEVICES_MAX = 2**20  # 1,048,576 devices
# Goal seeking's default largest device count (scalesim.goal.seek, scalesim goal --max-devices;
# here so the CLI reads it without importing the model). A setting, not a physical bound: 128
# eight-GPU servers, 4x the largest data-parallel run the model is validated on (256 GPUs,
# docs/validation.md), which is as far as a data-parallel search should extrapolate unasked;
# --max-devices goes up to DEVICES_MAX.
GOAL_DEFAULT_MAX_DEVICES = 1024


BOOL_IS_NO_NUMBER = "true/false is not a number here"


def holds_bool(value) -> bool:
    """Whether ``value``, or an item of a list ``value``, is true/false: pydantic would read it
    as 1 or 0 where a number goes (a runs file's step of 1 s, a scenario's 1 device)."""
    return any(isinstance(v, bool) for v in (value if isinstance(value, list) else [value]))


@dataclass(frozen=True)
class Bound:
    """Allowed values of one physical quantity: ``low <= x <= high`` (``<`` where open); with
    ``least_nonzero``, a value other than 0 is at least that (a price: 0 for devices already
    paid for, but no nonzero price below what money is counted in)."""

    low: float
    high: float
    unit: str
    why: str
    integer: bool = False
    low_open: bool = False
    high_open: bool = False
    least_nonzero: float | None = None
    base: Bound | None = None  # the table's bound this one rescales (``scaled``)

    def scaled(self, factor: float, unit: str) -> Bound:
        """The same bounds in another unit (``factor`` new units per table unit)."""
        least = None if self.least_nonzero is None else self.least_nonzero * factor
        return Bound(
            self.low * factor,
            self.high * factor,
            unit,
            self.why,
            self.integer,
            self.low_open,
            self.high_open,
            least,
            self.base or self,
        )

    def _edge(self, value: float, table_value: float) -> tuple[str, bool]:
        """(an edge as ``text`` writes it, whether it carries its unit): ``figures.number``'s
        exact digits, or, where a rescaled edge needs more than ``EDGE_DIGITS`` of them (a
        deadline of 1 s is 0.0002777777777777778 hours), the table's edge in the table's unit
        and the rescaled one to 3 digits: '1 s (~0.000278 hours)'. No value changes."""
        if self.base is None or _written_exactly(value):
            return number(value), False
        unit = f" {self.unit}" if self.unit else ""
        return f"{number(table_value)} {self.base.unit} ({edge_number(value)}{unit})", True

    def field_kwargs(self) -> dict[str, float]:
        """pydantic ``Field`` constraints: ge/gt and le/lt."""
        lo = "gt" if self.low_open else "ge"
        hi = "lt" if self.high_open else "le"
        cast = int if self.integer else float
        return {lo: cast(self.low), hi: cast(self.high)}

    def text(self) -> str:
        """'1 <= x <= 1,048,576 devices'; 'x = 0 or 0.0001 <= x <= 1,000,000 USD' with a
        ``least_nonzero``."""
        lo = "<" if self.low_open else "<="
        hi = "<" if self.high_open else "<="
        base = self.base or self
        high, united = self._edge(self.high, base.high)
        unit = f" {self.unit}" if self.unit and not united else ""
        if self.least_nonzero is not None:  # low is 0 and closed: 0 or from the least
            least, _ = self._edge(self.least_nonzero, base.least_nonzero)
            return f"x = 0 or {least} <= x {hi} {high}{unit}"
        low, _ = self._edge(self.low, base.low)
        return f"{low} {lo} x {hi} {high}{unit}"  # exact, 1e20

    def problem(self, value: float, typed: str | None = None) -> str | None:
        """Why ``value`` is not allowed, or None when it is; the value quoted as ``typed`` (the
        text it was read from) when given, else written like the bounds (``figures.number``)."""
        if isinstance(value, bool):
            return BOOL_IS_NO_NUMBER
        if self.integer:
            if isinstance(value, float | np.floating):
                if not math.isfinite(value) or value != int(value):
                    return f"{_shown(value)} is {NOT_WHOLE}"
                value = int(value)
            elif not isinstance(value, int | np.integer):
                return f"{_shown(value)} is {NOT_WHOLE}"
        else:
            if not isinstance(value, int | float | np.integer | np.floating):
                return f"{_shown(value)} is {NOT_NUMBER}"
            if isinstance(value, float | np.floating) and not math.isfinite(value):
                return f"{_shown(value)} is {NOT_FINITE}"
        too_low = value <= self.low if self.low_open else value < self.low
        too_high = value >= self.high if self.high_open else value > self.high
        too_near_zero = self.least_nonzero is not None and 0 < abs(value) < self.least_nonzero
        if too_low or too_high or too_near_zero:
            shown = excerpt(typed) if typed is not None else _shown(value)
            return f"{shown} is outside {self.text()} ({self.why})"
        return None

    def allows(self, values: np.ndarray) -> bool:
        """Whether every number of a numeric array is allowed (what ``problem`` says of each,
        at array speed: a sweep checks a million device counts)."""
        x = np.asarray(values)
        ok = np.isfinite(x) if x.dtype.kind == "f" else np.ones(x.shape, dtype=bool)
        if self.integer and x.dtype.kind == "f":
            ok &= np.trunc(np.where(ok, x, 0.0)) == np.where(ok, x, 0.0)
        with np.errstate(invalid="ignore"):
            ok &= (x > self.low) if self.low_open else (x >= self.low)
            ok &= (x < self.high) if self.high_open else (x <= self.high)
            if self.least_nonzero is not None:
                ok &= ~((np.abs(x) > 0) & (np.abs(x) < self.least_nonzero))
        return bool(np.all(ok))

    def check(self, value: Any, name: str, typed: str | None = None, knobs=()) -> Any:
        """``value`` if allowed, else ScalesimError naming ``name`` (and quoting ``typed``, the
        text ``value`` was read from, when given) with ``knobs`` (``ScalesimError.knobs``: the
        knob the value is of, where it is one)."""
        why = self.problem(value, typed)
        if why is not None:
            raise ScalesimError(f"{name}: {why}", knobs=knobs)
        return value


EDGE_DIGITS = 6  # significant digits a rescaled bound's edge is written with exactly


def _written_exactly(value: float) -> bool:
    """Whether a bound's edge reads well exactly: a whole number (1,048,576), or a fraction whose
    shortest exact text (``figures.exact``) has at most ``EDGE_DIGITS`` significant digits
    (0.001, 1e-9; not 0.0002777777777777778)."""
    if not math.isfinite(value) or value == int(value):
        return True
    mantissa = exact(value).lstrip("-").partition("e")[0].replace(".", "")
    return len(mantissa.strip("0")) <= EDGE_DIGITS


def edge_number(value: float) -> str:
    """A bound's edge in a sentence: exactly (``figures.number``) where ``EDGE_DIGITS``
    significant digits say it, else about, to 3 ('~0.000278' for a second in hours)."""
    return number(value) if _written_exactly(value) else f"~{sig3(value)}"


def _shown(value: Any) -> str:
    """A value to quote in a message: short (a huge whole number by its size), a number written
    like the bounds beside it ('1e20 is outside 0.001 <= x <= 100,000', not '1e+20')."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"a whole number of {value.bit_length()} bits"
    if isinstance(value, float | int | np.number) and not isinstance(value, bool | np.bool_):
        return excerpt(number(value))
    return excerpt(repr(value))


# quantity -> bounds. Reasons say why the edge makes physical sense.
QUANTITIES: dict[str, Bound] = {
    # counts
    "devices": Bound(
        1,
        DEVICES_MAX,
        "devices",
        "2**20: ten times the largest 2025 training clusters (~100k GPUs)",
        integer=True,
    ),
    "nodes": Bound(1, DEVICES_MAX, "servers", "no more servers than devices", integer=True),
    "devices_per_node": Bound(
        1, 1024, "devices", "one server: 8-72 GPUs today, up to a few hundred CPU processes", integer=True
    ),
    "nic_servers_per_node": Bound(
        1, 1024, "servers", "the servers whose NICs one server of a profile of model replicas "
        "spans: its data-parallel ranks' stages sit in up to pp servers", integer=True
    ),
    "rank": Bound(0, DEVICES_MAX - 1, "", "an index: a rank of the largest job", integer=True),
    "micro_batch": Bound(
        1,
        2**24,
        "samples",
        "per device per micro-step; 16x the largest published (NCF: 2**20 user-item pairs per GPU)",
        integer=True,
    ),
    "samples_per_device": Bound(
        0.001, 2**24, "samples", "per device per step (an average: may be fractional)"
    ),
    "global_batch": Bound(
        1, 2**40, "samples", "per optimizer step: the largest micro-batch on 65,536 devices", integer=True
    ),
    "accumulation": Bound(
        1,
        4096,
        "micro-steps",
        "per optimizer step; 4096 micro-steps of a second each are over an hour per step",
        integer=True,
    ),
    "loader_workers": Bound(0, 1024, "workers", "DataLoader processes per device", integer=True),
    "cpu_cores": Bound(1, 4096, "cores", "of one server", integer=True),
    "nics_per_node": Bound(
        1,
        1024,
        "NICs",
        "network cards of one server or NVLink domain (8 on DGX, one per GPU of a 72-GPU NVL72)",
        integer=True,
    ),
    "collective_ranks": Bound(2, DEVICES_MAX, "ranks", "a collective needs two ranks", integer=True),
    "count": Bound(1, 2**53, "", "a count with no quantity of its own: exact as a float", integer=True),
    "repeats": Bound(1, 1_000_000, "", "a count of timed repeats or samples of a measurement",
                     integer=True),
    "steps": Bound(1, 1_000_000, "steps", "calibration steps or samples of one phase", integer=True),
    "model_size": Bound(
        1,
        1_000_000,
        "",
        "a built-in calibration model's width, depth, sequence length, vocabulary or image size",
        integer=True,
    ),
    "dataset_items": Bound(1, 100_000_000, "items", "built-in calibration images", integer=True),
    "threads": Bound(1, 4096, "threads", "torch CPU threads of one process", integer=True),
    "size_factor": Bound(
        2, 1024, "", "ratio between message sizes: 2 or more so the sweep ends", integer=True
    ),
    "seed": Bound(0, 2**32 - 1, "", "numpy and torch seeds are 32-bit", integer=True),
    "tp_degree": Bound(
        1,
        1024,
        "devices",
        "tensor-parallel degree: the ranks of one group, inside one server (no more than a server's devices)",
        integer=True,
    ),
    "pp_degree": Bound(1, 100_000, "stages", "pipeline stages: at most one per layer", integer=True),
    "cp_degree": Bound(
        1, DEVICES_MAX, "devices", "context-parallel degree: the ranks that split one sequence",
        integer=True,
    ),
    "shard_group": Bound(
        1,
        DEVICES_MAX,
        "devices",
        "ranks that shard the ZeRO states (hybrid sharding): a divisor of dp x cp",
        integer=True,
    ),
    "bubble_micro_steps": Bound(
        0.0,
        100_000,
        "micro-steps",
        "pipeline fill and drain per optimizer step, in micro-step times: (pp - 1)/v for 1F1B and "
        "interleaved; at most one stage per layer",
    ),
    "virtual_stages": Bound(
        1,
        100_000,
        "chunks",
        "model chunks per pipeline rank (interleaved 1F1B): at most one per layer",
        integer=True,
    ),
    # sizes
    "layers": Bound(
        1,
        100_000,
        "layers",
        "transformer layers or repeated blocks (GPT-3: 96; 1000x the deepest dense models)",
        integer=True,
    ),
    "model_width": Bound(
        1, 2**24, "", "a count: a hidden, MLP or attention-head dimension (GPT-3 hidden: 12,288)",
        integer=True
    ),
    "seq_len": Bound(1, 2**30, "tokens", "tokens per sequence (1M-token contexts exist)", integer=True),
    "vocab": Bound(1, 2**30, "tokens", "vocabulary size (Llama 3: 128,256)", integer=True),
    "params": Bound(1, 1e15, "parameters", "1000x the largest published dense models (~1.8e12)"),
    "wire_bytes_per_param": Bound(
        0.001, 64, "bytes", "per gradient element on the wire (4 fp32, 2 fp16; 1-bit compression 0.125)"
    ),
    "bytes_per_param": Bound(0, 64, "bytes", "per parameter in memory (Adam mixed precision: 2 + 2 + 12)"),
    "activation_bytes": Bound(0, 1e15, "bytes", "activations of one sample; 0 = unknown"),
    "device_memory_bytes": Bound(
        1e6,
        1e15,
        "bytes",
        "one device's memory, in bytes (not GB): a megabyte to a petabyte (10^4x an H100's)",
    ),
    "message_bytes": Bound(1, 2**40, "bytes", "one collective's message: 1 byte to 1 TiB"),
    "bucket_mib": Bound(
        0.1, 1e5, "MiB", "a gradient bucket: from 100 KiB (smaller only adds latency) to 100 GiB"
    ),
    "first_bucket_mib": Bound(0, 1e5, "MiB", "DDP's first bucket; 0 = none"),
    # rates
    "busbw_GBps": Bound(0.001, 1e5, "GB/s", "a link's bus bandwidth: 1 MB/s to 100 TB/s"),
    "bandwidth_GBps": Bound(0, 1e5, "GB/s", "a measured or datasheet bandwidth, up to 100 TB/s"),
    "memory_bandwidth_GBps": Bound(0.1, 1e5, "GB/s", "device memory (H100: 3350; a CPU socket: 50-500)"),
    "kernel_bandwidth_GBps": Bound(
        0.1,
        1e5,
        "GB/s",
        "a layer's kernels' byte rate as a block calibration fits it (H200, eager bf16: 1,687)",
    ),
    "gbit_per_nic": Bound(1, 10_000, "Gbit/s", "one NIC's line rate (400 today)"),
    "peak_tflops": Bound(0.001, 1e6, "TFLOP/s", "one device's dense peak (H100: 989; a CPU core: ~0.1)"),
    "samples_per_s": Bound(
        1e-6, 1e12, "samples/s", "a throughput: one sample in 11.6 days to a trillion a second"
    ),
    # times
    "latency_s": Bound(0, 1, "s", "one algorithm step's latency (microseconds in practice)"),
    "duration_s": Bound(0, 1e6, "s", "one step or micro-step, or part of one: up to 11.6 days"),
    "positive_duration_s": Bound(
        1e-12, 1e6, "s", "one step, micro-step, sample or timed collective: a picosecond to 11.6 days"
    ),
    "timeout_s": Bound(0.001, 604_800, "s", "a calibration timeout: a millisecond to a week"),
    "timed_s": Bound(0.001, 3600, "s", "timed seconds per calibration message size"),
    # ratios
    "cv": Bound(0, 10, "", "a ratio: std / mean of a time or speed"),
    "fraction": Bound(0, 1, "", "a share between 0 and 1"),
    "matmul_efficiency": Bound(
        1e-4, 1, "", "a ratio: sustained matmul rate / the device's peak, 0.01% to 100% (published large "
        "runs: 30-60%)"
    ),
    "backward_fraction": Bound(
        0, 1, "", "backward's share of forward+backward", low_open=True, high_open=True
    ),
    "memory_margin": Bound(
        0, 0.5, "", "share of a device's memory kept free for the caching allocator's "
        "fragmentation: 0 (none) to a half (more is no margin but a smaller device)"
    ),
    "slowdown": Bound(0, 10, "", "a fraction: extra time while colocated devices compute (0.08 = 8%)"),
    "slow_factor": Bound(1, 100, "", "a ratio: how many times slower one device or rank is"),
    "rel_error": Bound(0, 1000, "", "a ratio: a fit's relative error (0.05 = 5%)"),
    # training length and cost
    "critical_batch": Bound(1, 1e12, "samples", "critical batch size B_noise"),
    "noise_scale": Bound(
        1e-6,
        1e15,
        "samples",
        "a measured gradient noise scale B_simple (an estimate: may be below one sample)",
    ),
    "samples_total": Bound(
        1, 1e18, "samples", "samples of a training run (1e18: 10^4x the largest LLM runs in tokens)"
    ),
    "epochs": Bound(0, 1e6, "epochs", "passes over the data set", low_open=True),
    "steps_to_target": Bound(1, 1e15, "steps", "optimizer steps to a quality target"),
    "price_per_device_hour": Bound(
        0,
        1e6,
        "USD",
        "per device-hour; 0 for devices already "
        "paid for, else at least a hundredth of a cent: a CPU "
        "core's hour rents for about a cent",
        least_nonzero=1e-4,
    ),
    # goal seeking (scalesim goal --deadline --budget, the app's Goal tab)
    "deadline_s": Bound(
        1, 100 * DAYS_PER_YEAR * 86_400, "s", "a training run's deadline: a second to 100 years"
    ),
    "budget_usd": Bound(
        0.01,
        1e12,
        "USD",
        "a training run's budget: from a cent, the least "
        "amount money is counted in, up to a trillion dollars",
    ),
}


@dataclass(frozen=True)
class Knob:
    """A what-if knob: its scenario field, CLI flag, share-link key and quantity (a number), or
    the names it may take (``choices``, quantity None), or on/off (``switch``: a bool field, its
    flag a switch, its link value 1 or 0). A link key arrived in share-link version
    ``link_since``; a link older than that opens as ``link_before`` says (the words of 'a v3
    link has no ...'; app.state reads both)."""

    field: str
    flag: str | None
    url_key: str | None
    quantity: str | None
    url_factor: float = 1.0  # link units per scenario unit (latency: microseconds)
    url_unit: str | None = None
    choices: tuple[str, ...] = ()
    switch: bool = False
    link_since: int = 1  # the share-link version the url key arrived in (1: the first links)
    link_before: str = ""  # what a link older than link_since has instead, in words

    @property
    def bound(self) -> Bound:
        if self.quantity is None:
            what = "on or off" if self.switch else f"a choice of {', '.join(self.choices)}"
            raise ScalesimError(f"knob '{self.field}' is {what}, not a number")
        return QUANTITIES[self.quantity]


KNOBS: tuple[Knob, ...] = (
    Knob("devices", "--devices", "dlist", "devices"),
    Knob("devices_per_node", "--gpus-per-node", "dpn", "devices_per_node"),
    Knob("micro_batch", "--batch", "mb", "micro_batch"),
    Knob("global_batch", "--global-batch", "gb", "global_batch"),
    Knob("accumulation", "--accumulation", "acc", "accumulation"),
    # data parallelism: DDP or a ZeRO stage (diagnose's flag too: how the runs exchanged)
    Knob("strategy", "--strategy", "strat", None, choices=tuple(STRATEGIES)),
    # how ZeRO runs (docs/model.md §4)
    Knob("zero_framework", "--zero-framework", "zfw", None, choices=tuple(FRAMEWORKS),
         link_since=10, link_before="ZeRO framework choice (ZeRO runs as FSDP / Megatron-Core)"),
    # when ZeRO-2/3 reduce under accumulation (FSDP no_sync)
    Knob("grad_sync", "--grad-sync", "gs", None, choices=tuple(GRAD_SYNCS),
         link_since=5, link_before="gradient sync choice (ZeRO-2/3 reduce every micro-step)"),
    # the framework's fused attention kernel (docs/model.md §13)
    Knob("attention_kernel", "--attention-kernel", "ak", None, choices=ATTENTION_KERNELS,
         link_since=6, link_before=f"attention kernel choice (the {VENDOR_KERNEL} kernel)"),
    # the layers' matmul precision (docs/model.md §13, fp8)
    Knob("precision", "--precision", "pr", None, choices=PRECISIONS,
         link_since=11, link_before=f"precision choice ({DEFAULT_PRECISION} matmuls)"),
    # the all-reduce algorithm of the data-parallel exchange (docs/model.md §2)
    Knob("algorithm", "--algorithm", "algo", None, choices=tuple(ALGORITHMS)),
    # gradient communication overlapped with backward (docs/model.md §3; the flag turns it off)
    Knob("overlap", "--no-overlap", "ovl", None, switch=True),
    Knob("bucket_mib", "--bucket-mib", "bkt", "bucket_mib"),
    Knob("first_bucket_mib", None, None, "first_bucket_mib"),
    Knob("loader_workers", "--loader-workers", "lw", "loader_workers"),
    Knob("straggler_cv", "--straggler-cv", "cv", "cv"),
    Knob("device_speed_cv", "--device-cv", None, "cv"),
    Knob("comm_compute_contention", None, None, "fraction"),
    Knob("slow_device", "--slow-device", "slow", "rank"),
    Knob("slow_factor", "--slow-factor", "sf", "slow_factor"),
    Knob("intra_busbw_GBps", "--intra-busbw", "ibw", "busbw_GBps"),
    Knob("intra_latency_s", "--intra-latency", "ilat", "latency_s", 1e6, "us"),
    Knob("inter_busbw_GBps", "--inter-busbw", "ebw", "busbw_GBps"),
    Knob("inter_latency_s", "--inter-latency", "elat", "latency_s", 1e6, "us"),
    Knob("critical_batch_size", "--critical-batch", "cbs", "critical_batch"),
    Knob("min_samples_to_quality", "--min-samples", "emin", "samples_total"),
    Knob("train_samples", "--train-samples", "train", "samples_total"),
    Knob("price_per_device_hour", "--price", "price", "price_per_device_hour"),
    # share of device memory a layout may not fill (docs/model.md §16; the app's sidebar, v17)
    Knob("memory_margin", "--memory-margin", "mm", "memory_margin", link_since=17,
         link_before="memory margin (a layout may fill all of a device's memory)"),
    # no scenario field: the largest device count goal searches (goal.seek's max_devices; the
    # app's Goal tab, v17)
    Knob("max_devices", "--max-devices", "gmax", "devices", link_since=17,
         link_before=f"goal search range (up to {GOAL_DEFAULT_MAX_DEVICES:,} devices)"),
    # no scenario field: how goal chooses each plan's layout (goal.seek's layout,
    # scalesim.goal_layouts): the planner's best at each device count, or the scenario's own
    # (the app's Goal tab, v18; its link's 'auto': goal's default, goal_layouts.default_layout)
    # (a link older than v18 opens as its Goal tab showed: given; app.state.opened_before)
    Knob("goal_layout", "--layout", "glay", None, choices=("search", "given"), link_since=18,
         link_before="goal layout choice (the Goal tab keeps the sidebar's Layout)"),
    # GPUs of each instance shape a cloud rents (a list: scalesim.billing); from the hardware
    # in the app
    Knob("instance_sizes", "--instance-sizes", None, "devices_per_node"),
    # no scenario field: the transformer workload at that sequence length
    # (profiles.workload_at_sequence; sweep axis seq_len)
    Knob("seq_len", "--seq-len", "seq", "seq_len",
         link_since=16, link_before="sequence length choice (the workload's own)"),
)
# The model split of a scenario (``Scenario.layout``): field of ``ScenarioLayout``, CLI flag,
# share-link key (link version 3 and later: a v1 or v2 link ignores every one as MODEL_SPLIT
# says), quantity or choices; in the order the link's layout keys have always been listed
# (app.state.LAYOUT_FIELDS)
MODEL_SPLIT_SINCE = 3  # the link version the model split arrived in
MODEL_SPLIT = "model split (data parallel)"  # what a link older than that has instead
LAYOUT_KNOBS: tuple[Knob, ...] = (
    Knob("tp", "--tp", "tp", "tp_degree", link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    Knob("pp", "--pp", "pp", "pp_degree", link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    # the pipeline schedule (the link's 'auto': the field's None, 1f1b)
    Knob("schedule", "--schedule", "sched", None,
         choices=tuple(s for s in SCHEDULES if s != "none"),
         link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    Knob("virtual_stages", "--virtual-stages", "vs", "virtual_stages",
         link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    # activation recompute (the link's 'auto': the field's None, the workload's)
    Knob("recompute", "--recompute", "rec", None, choices=get_args(Recompute),
         link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    Knob("sequence_parallel", "--sequence-parallel", "sp", None, switch=True,
         link_since=MODEL_SPLIT_SINCE, link_before=MODEL_SPLIT),
    Knob("recompute_style", "--recompute-style", "rs", None, choices=RECOMPUTE_STYLES,
         link_since=4,
         link_before="recompute style (full recompute reruns the whole forward)"),
    # the framework overlaps the tensor-parallel collectives
    Knob("tp_overlap", "--tp-overlap", "tpo", None, switch=True, link_since=7,
         link_before="tensor-parallel overlap choice (the tensor-parallel collectives exposed)"),
    # hybrid sharding's shard group (docs/model.md §16)
    Knob("shard_group", "--shard-group", "sg", "shard_group", link_since=9,
         link_before="shard group (ZeRO shards over all of dp)"),
    # the interleaved schedule's sends overlapped (Megatron-Core's overlap_p2p_comm, docs/model.md
    # §15; the field a bool, the flag its words, the link 1 or 0)
    Knob("p2p_overlap", "--p2p-overlap", "p2p", None,
         choices=tuple(P2P_OVERLAP_WORDS.values()), link_since=14,
         link_before="pipeline send overlap choice (the interleaved schedule's sends overlapped)"),
    # context parallelism (ring attention, docs/model.md §14)
    Knob("cp", "--cp", "cp", "cp_degree", link_since=15,
         link_before="context parallelism (cp 1)"),
)
# Inputs of ``scalesim diagnose`` alone, with no what-if knob row (no scenario field, no link
# key): the flag a diagnosis's line names them by (``layout.knob_refusal``, '{params}' ->
# '--params'), which the app's Diagnose page says as its own control's label
# (``app.diagnose_page.DIAGNOSE_CONTROLS``)
DIAGNOSE_INPUTS: tuple[Knob, ...] = (
    Knob("params", "--params", None, "params"),  # model parameters (gradient elements)
    Knob("wire_bytes", "--wire-bytes", None, None),  # bytes per gradient element on the wire
    Knob("extrapolate", "--extrapolate", None, "devices"),  # device counts to extrapolate to
    Knob("workload", "--workload", None, None),  # the runs' transformer: a preset or a file
    Knob("gpu", "--gpu", None, None),  # the runs' GPU, by its preset device name
    Knob("trace", "--trace", None, None),  # profiler traces, one a rank
    Knob("smi", "--smi", None, None),  # an nvidia-smi log
)
KNOB_BY_FIELD = {k.field: k for k in KNOBS}
DIAGNOSE_INPUT_BY_FIELD = {k.field: k for k in DIAGNOSE_INPUTS}
KNOB_BY_URL_KEY = {k.url_key: k for k in KNOBS + LAYOUT_KNOBS if k.url_key}
LAYOUT_KNOB_BY_FIELD = {k.field: k for k in LAYOUT_KNOBS}


def flag_of(field: str) -> str:
    """The CLI flag of knob ``field`` ('--shard-group'): the knob table's, or for an input of
    diagnose alone its row of ``DIAGNOSE_INPUTS`` ('--params'); how the CLI's refusals and
    notes name a knob (``layout.knob_refusal``, ``counts_left_out``)."""
    return (KNOB_BY_FIELD.get(field) or LAYOUT_KNOB_BY_FIELD.get(field)
            or DIAGNOSE_INPUT_BY_FIELD[field]).flag


def values_flag(field: str) -> str:
    """The sweep's flag of knob ``field`` as an axis ('--tp-values', '--attention-kernel-values',
    '--batch-values'): its flag (``flag_of``) with '-values', a switch's without its 'no-'
    ('--overlap-values' of --no-overlap); the device counts' own list flag (--devices). How
    scalesim sweep spells its axis flags (``cmd_sweep.VALUE_FLAGS``) and how the sweep's
    refusals name them (``sweep.plan_sweep``)."""
    if field == "devices":
        return flag_of(field)
    return f"--{flag_of(field).removeprefix('--').removeprefix('no-')}-values"
# the names a refusal's ``ScalesimError.knobs`` may hold: the knob table's fields, the
# quantities a preset inter-server link is built from (no knob row: the app's NICs and Gbit/s),
# and the hardware preset (``layout.HARDWARE_KNOB``: --hardware, the app's Hardware preset)
REFUSABLE = (*KNOB_BY_FIELD, *LAYOUT_KNOB_BY_FIELD, "nics_per_node", "gbit_per_nic",
             HARDWARE_KNOB)


def validation_knobs(errors) -> tuple[str, ...]:
    """The knobs a pydantic ``ValidationError``'s ``errors`` (``exc.errors()``) refuse, in order:
    a validator's ``ScalesimError``'s own (``knobs``), else the knob field at the end of the
    error's location (``Scenario.global_batch``, ``ScenarioLayout.tp``)."""
    found: list[str] = []
    for error in errors:
        own = knobs_of((error.get("ctx") or {}).get("error"))
        at = [str(part) for part in error.get("loc", ()) if str(part) in REFUSABLE][-1:]
        found += own or at
    return tuple(dict.fromkeys(found))


def bound(quantity: str) -> Bound:
    try:
        return QUANTITIES[quantity]
    except KeyError:
        raise ScalesimError(f"no bounds for quantity '{quantity}'") from None


def scaled_bound(quantity: str, factor: float = 1.0, unit: str | None = None) -> Bound:
    """``quantity``'s bounds, in another unit where ``factor`` (new units per table unit) or
    ``unit`` is given."""
    b = bound(quantity)
    if factor != 1.0 or unit is not None:
        b = b.scaled(factor, unit if unit is not None else b.unit)
    return b


def url_bound(url_key: str) -> Bound:
    """A share-link key's bounds, in the link's unit (latency in microseconds)."""
    knob = KNOB_BY_URL_KEY[url_key]
    return scaled_bound(knob.quantity, knob.url_factor, knob.url_unit)


def bounded(
    quantity: str,
    default: Any = ...,
    description: str = "",
    factor: float = 1.0,
    unit: str | None = None,
    **kwargs: Any,
) -> Any:
    """A pydantic ``Field`` with ``quantity``'s bounds (in another unit: ``factor``, ``unit``).

    The bounds show in the JSON Schema as minimum/maximum and, with their reason, in the
    field's description.
    """
    b = scaled_bound(quantity, factor, unit)
    note = allowed_text(b)
    text = f"{description}; {note}" if description else note
    return Field(default, description=text, **b.field_kwargs(), **kwargs)


def allowed_text(b: Bound, each: bool = False) -> str:
    """'allowed: 1 <= x <= 1,024 devices (why)': a bounded field's refusal words, as its
    description ends (``bounded``); ``each``: a list item's ('... s each (why)', as its refusal
    says them: ``items_bounded``)."""
    return f"allowed: {b.text()}{' each' if each else ''} ({b.why})"


def items_bounded(quantity: str):
    """An ``Annotated`` element type for lists: ``list[items_bounded("devices")]``. The Bound
    rides along (pydantic ignores it) for a refused item's words (``jsonio._allowed``)."""
    from typing import Annotated

    b = bound(quantity)
    return Annotated[int if b.integer else float, Field(**b.field_kwargs()), b]


def nonzero_floor(quantity: str):
    """A pydantic ``field_validator`` body for a field of ``quantity`` with a ``least_nonzero``
    (which ``Field``'s ge/le cannot say): its refusal, as the CLI's, in the field's error."""
    b = bound(quantity)

    def check(value: Any) -> Any:
        if value is not None and (why := b.problem(value)) is not None:
            raise ValueError(why)
        return value

    return check


def knob_field(field: str, default: Any = ..., description: str = "", **kwargs: Any) -> Any:
    """``bounded`` for a scenario knob (its quantity from ``KNOBS``)."""
    return bounded(KNOB_BY_FIELD[field].quantity, default, description, **kwargs)


def url_field(url_key: str, default: Any = ..., description: str = "", **kwargs: Any) -> Any:
    """``bounded`` for a share-link key, in the link's unit (latency in microseconds)."""
    knob = KNOB_BY_URL_KEY[url_key]
    return bounded(knob.quantity, default, description, factor=knob.url_factor, unit=knob.url_unit, **kwargs)


# ---------------------------------------------------------------- text (CLI) and arrays


def parse_number(
    text: str,
    quantity: str,
    name: str,
    factor: float = 1.0,
    unit: str | None = None,
    typed: str | None = None,
) -> int | float:
    """``text`` as a bounded number of ``quantity`` (in another unit: ``factor`` new units per
    table unit, named ``unit``); ScalesimError naming ``name`` and quoting ``typed`` (the text
    ``text`` was read from: '$-5' for -5, ``money.parse_usd``) where the value is refused."""
    b = scaled_bound(quantity, factor, unit)
    raw = text.strip()
    try:
        value: int | float = read_number(raw, b.integer)
    except ValueError:
        digits = raw.lstrip("+-")
        if digits.isdigit():  # longer than Python converts (4300 digits): far outside any bound
            raise ScalesimError(
                f"{name}: a whole number of {len(digits)} digits is outside {b.text()} ({b.why})"
            ) from None
        kind = "a whole number" if b.integer else "a number"
        if b.integer and (why := _whole_outside(raw, b)):  # '1e40': not its 41 digits to write
            raise ScalesimError(f"{name}: {why}") from None
        raise ScalesimError(f"{name}: {_shown(raw)} is not {kind}{number_hint(raw, b)}") from None
    quoted = raw if typed is None else typed
    if isinstance(value, float) and math.isinf(value) and "inf" not in raw.lower():
        raise ScalesimError(f"{name}: {_overflow(quoted, b)}")
    # -0.0 -> 0.0; a refused value is quoted as typed ('1e6', not '1000000.0')
    return b.check(value + 0.0 if isinstance(value, float) else value, name, quoted)


def read_number(text: str, integer: bool) -> int | float:
    """``text`` as a whole number (``integer``) or a float, as Python reads one (a sign, a point,
    an exponent, spaces around) but for an underscore: Python reads '3_2' as 32, a typo or
    another notation taken in silence, so it raises ValueError as other text that is no number
    does. The one reader of a number typed as text: the CLI's flags (``parse_number``) and the
    app's share links (``app.state.AppState``)."""
    raw = text.strip()
    if "_" in raw:
        raise ValueError(f"{raw!r} holds an underscore")
    return int(raw) if integer else float(raw)


def _overflow(quoted: str, b: Bound) -> str:
    """Why a number typed past a float's range ('1e400') is refused: it overflows and so is
    outside ``b`` (the same words for whole-number and float flags)."""
    return f"{_shown(quoted)} overflows a float; it is outside {b.text()} ({b.why})"


def _whole_outside(raw: str, b: Bound) -> str | None:
    """Why ``raw``, a whole number written as a decimal ('1e40', '-1e3') or one past a float
    ('1e400': ``_overflow``), is outside ``b``; None where it is no such number or inside (then
    'write it in digits' says how to type it)."""
    try:
        value = read_number(raw, integer=False)
    except ValueError:
        return None
    if math.isinf(value) and "inf" not in raw.lower():
        return _overflow(raw, b)
    if not math.isfinite(value) or value != int(value):
        return None
    return b.problem(int(value), raw)


# A number a person writes with a sign of money, a unit or a multiplier: '$40', '100GB/s', '7B',
# '50%', '1,000' (a bare number is parsed before this is tried).
_DECORATED = re.compile(
    r"(?P<money>\$?)\s*(?P<num>[-+]?(?:\d[\d_,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
    r"\s*(?P<suffix>%|[A-Za-z/]+)?"
)
_MULTIPLIERS = {"k": 3, "K": 3, "M": 6, "B": 9, "G": 9, "T": 12}  # '7B' parameters, '1M' dollars


_GIGABITS = re.compile(r"[Gg](?:b|bits?)(?:ps|/s)?")  # '100Gbps', '100 Gb/s', 'gbit': bits, not bytes
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "sec": 1.0, "min": 60.0, "h": 3600.0}
_HEX = re.compile(r"0x[0-9a-f]+", re.IGNORECASE)
_PRODUCT = re.compile(r"(\d+)\s*[x×*]\s*(\d+)")  # '2x8' devices: 2 servers of 8


def _count_hint(typed: str, b: Bound) -> str:
    """'0x10' and '2x8', refused as whole numbers: the number in decimal digits ('; write 0x10
    in decimal digits: 16', '; write the product 2x8 in digits: 16'), '' for other text."""
    if not b.integer:
        return ""
    if _HEX.fullmatch(typed):
        value, said = int(typed, 16), f"write {typed} (hexadecimal) in decimal digits"
    elif m := _PRODUCT.fullmatch(typed):
        value, said = int(m[1]) * int(m[2]), f"write the product {typed} in digits"
    else:
        return ""
    why = b.problem(value)
    return f"; {said}: {value}" if why is None else f"; as a number {why}"


def number_hint(text: str, b: Bound) -> str:
    """How to write ``text``, refused as a number of ``b``'s quantity, so that it reads: '' when
    no better text is known, else '; ...' to end the refusal with: the number alone in the
    unit ('100GB/s', '100GBps' -> 100; a line rate in gigabits for a bus bandwidth, '100Gbps',
    its bytes and the presets' bus bandwidths of one such NIC: ``_gigabits_hint``), a
    multiplier as an exponent ('7B' -> 7e9), a percentage as a fraction ('50%' -> 0.5), a whole
    number in digits ('1e3' -> 1000), a number with digit groups in digits ('1_024' -> 1024),
    a time in seconds ('5us' -> 5e-6), a hexadecimal or a product in decimal digits ('0x10' ->
    16, '2x8' -> 16; one outside the bounds said so), and for nothing typed, to give a number
    or leave the flag out."""
    typed = text.strip()
    if not typed:
        return "; give a number or leave the flag out"
    if hint := _count_hint(typed, b):
        return hint
    m = _DECORATED.fullmatch(typed)
    if m is None:
        return ""
    digits, suffix = m["num"].replace(",", "").replace("_", ""), m["suffix"] or ""
    try:
        value = float(digits)
    except ValueError:
        return ""
    if not math.isfinite(value):
        return ""
    unit = f", in {b.unit}" if b.unit else ""
    if suffix == "%" and not b.unit:  # a share: cv, fraction
        return f"; write {text.strip()} as the fraction {exact(value / 100)}"
    if suffix in _MULTIPLIERS and b.unit[:1] in _MULTIPLIERS:  # 'GB/s', 'MiB': prefixed already
        same = suffix.upper() == b.unit[0].upper()  # '100G' for GB/s: 100 of the unit
        return f"; give the number alone{unit}" + (f": {exact(value)}" if same else "")
    if suffix in _MULTIPLIERS:
        value *= 10.0 ** _MULTIPLIERS[suffix]
        if not math.isfinite(value):  # '1e308T': past any float, no number to suggest
            return ""
        shown = (
            str(int(value))
            if b.integer and value == int(value) and value < 1e16
            else f"{digits}e{_MULTIPLIERS[suffix]}"
            if "e" not in digits.lower()
            else number(value)
        )  # '1e20k' -> 1e23
        return f"; write {text.strip()} as {shown}{unit}"
    if b.integer and value != int(value):
        return ""  # '1.5': no whole number to suggest
    shown = str(int(value)) if b.integer else exact(value) if "e" not in digits.lower() else digits
    same_unit = (suffix == b.unit or (suffix.isalpha() and suffix.lower() == b.unit.lower())
                 or suffix.replace("ps", "/s") == b.unit)  # '100GBps': GB/s
    if b.unit == "s" and suffix.lower() in _SECONDS:  # '5us' -> 5e-6, '2min' -> 120
        seconds = float(f"{value * _SECONDS[suffix.lower()]:.12g}")  # 5e-6, not 4.99...e-6
        return f"; write {typed} in seconds: {number(seconds)}"
    if b.unit == "GB/s" and _GIGABITS.fullmatch(suffix) and value > 0:  # a NIC's line rate
        return _gigabits_hint(value)
    if suffix and not same_unit:  # '5us' for seconds: not the same number
        return f"; give the number alone{unit}"
    if m["money"] or suffix or "," in m["num"]:
        return f"; give the number alone{unit}: {shown}"
    if b.integer and (why := b.problem(int(value), typed)) is not None:  # '1e40' of a link
        return f"; as a number {why}"
    if "_" in m["num"]:  # Python's digit groups ('1_000_000'): ``read_number`` reads none
        return f"; write it in digits: {shown}"
    return f"; write it in digits: {shown}" if b.integer and shown != text.strip() else ""


def _gigabits_hint(gbit_s: float) -> str:
    """How a link's bus bandwidth relates to a line rate typed in gigabits a second ('100Gbps'):
    an eighth of it in GB/s, and less again as a bus bandwidth, as the presets take one NIC of
    that rate (``presets.inter_link``: over TCP sockets, over InfiniBand or RoCE)."""
    from scalesim.presets import inter_link

    try:
        tcp, rdma = (inter_link(kind, 1, gbit_s).busbw_GBps for kind in ("ethernet", "infiniband"))
    except ScalesimError:  # the line rate itself outside a link's bounds: its bytes alone
        return f"; give the bus bandwidth alone, in GB/s ({number(gbit_s)} Gb/s is bits a second)"
    return (f"; give the bus bandwidth alone, in GB/s: {number(gbit_s)} Gb/s is a line rate in "
            f"bits, {number(gbit_s / 8)} GB/s, and a link's bus bandwidth is below it (one NIC "
            f"of {number(gbit_s)} Gb/s: {number(tcp)} GB/s over TCP sockets, {number(rdma)} GB/s "
            "over InfiniBand or RoCE, as scalesim presets takes it; nccl-tests' busbw measures "
            "it)")


def split_list(text: str, name: str) -> list[str]:
    """'1, 2,4' -> ['1', '2', '4'], every item stripped; an empty item ('8,', '8,,16', ',8') is
    a value left out, so it raises a ScalesimError naming ``name`` and the text ('' or spaces
    alone: no values). An item given twice is kept once, in its first place ('ddp,zero3,ddp'
    -> ['ddp', 'zero3']): a list is a set of values to try, and a repeat would repeat a sweep's
    rows or a plan's layouts. Every list flag of the CLI splits its text here."""
    parts = [x.strip() for x in text.split(",")]
    if not any(parts):
        raise ScalesimError(f"{name}: no values in {_shown(text)}")
    if not all(parts):
        raise ScalesimError(
            f"{name}: {_shown(text)} has an empty item (a value left out "
            "between commas or at an end); list values like 1,2,4"
        )
    return list(dict.fromkeys(parts))


def list_text(values) -> str:
    """A list as the CLI's list flags take it: [1, 2, 4] -> '1,2,4' (what ``parse_list`` reads),
    for every message that names values a user may type back (not Python's '[1, 2, 4]'); a float
    as a person writes it and exactly ('1000000', '0.25': ``figures.exact``, not ``:g``'s
    '1e+06' nor its six digits)."""
    return ",".join(exact(v) if isinstance(v, float) else str(v) for v in values)


def parse_list(text: str, quantity: str, name: str) -> list:
    """'1,2,4' -> [1, 2, 4]; for whole numbers also 'A-B', doubling from A to B ('1-8' -> 1, 2,
    4, 8); B must be a doubling of A (1-1000 would stop at 512 without saying so)."""
    b = bound(quantity)
    typed = text.strip()
    if re.fullmatch(r"\d{1,3}(,\d{3})+", typed) and ",0" in typed:  # '1,000': no value starts 0
        zero = next(x for x in typed.split(",") if x.startswith("0"))
        raise ScalesimError(
            f"{name}: '{typed}': commas separate values here ({zero} is no value); "
            f"write {typed.replace(',', '')} without them, or values like 1,2,4"
        )
    parts = split_list(text, name)
    if b.integer and len(parts) == 1 and "-" in parts[0].lstrip("-"):
        lo_text, _, hi_text = parts[0].partition("-")
        if not lo_text.strip() or not hi_text.strip():
            raise ScalesimError(f"{name}: range '{text.strip()}' needs both ends, as in 1-8 "
                                "(doubling from the first to the last)")
        lo = parse_number(lo_text, quantity, name)
        hi = parse_number(hi_text, quantity, name)
        if hi < lo or lo < 1:
            raise ScalesimError(
                f"{name}: range '{text}' must start at 1 or more and end at or above its start"
            )
        out, v = [], lo
        while v <= hi:
            out.append(v)
            v *= 2
        if out[-1] != hi:
            raise ScalesimError(
                f"{name}: range '{text.strip()}' doubles from {lo} and stops at {out[-1]}, short "
                f"of {hi}; end it at {out[-1]} or {out[-1] * 2}, or list the values with commas"
            )
        return out
    return list(dict.fromkeys(parse_number(x, quantity, name) for x in parts))  # 2, 2.0: once


def flag_type(quantity: str, factor: float = 1.0, unit: str | None = None):
    """argparse ``type=`` for one bounded number (argparse names the flag in its error); a flag
    in another unit than the table's gives ``factor`` (its units per table unit) and ``unit``."""

    def parse(text: str):
        with flag_error():
            return parse_number(text, quantity, "value", factor, unit)

    parse.__name__ = quantity  # argparse says "invalid <name> value" for other errors
    return parse


def flag_list_type(quantity: str):
    """argparse ``type=`` for a comma-separated list (or doubling range) of bounded numbers."""

    def parse(text: str):
        with flag_error():
            return parse_list(text, quantity, "value")

    parse.__name__ = f"{quantity} list"
    return parse


def clip(quantity: str, value: float) -> float:
    """``value`` moved into ``quantity``'s bounds (for fitted values, which carry no physics of
    their own); NaN becomes the lower bound."""
    b = bound(quantity)
    low = float(np.nextafter(b.low, np.inf)) if b.low_open else float(b.low)
    high = float(np.nextafter(b.high, -np.inf)) if b.high_open else float(b.high)
    value = float(value)
    if math.isnan(value):
        return low
    return min(max(value, low), high)


def check_number(quantity: str, value: Any, name: str, optional: bool = False,
                 knobs=()) -> Any:
    """``value`` within ``quantity``'s bounds (None allowed when ``optional``); ScalesimError
    naming ``name`` otherwise, with ``knobs`` (the knob the value is of, where it is one)."""
    if value is None and optional:
        return None
    return bound(quantity).check(value, name, knobs=knobs)


def check_values(quantity: str, values: Any, name: str, knobs=()) -> np.ndarray:
    """``values`` (a list or array) as a 1-D numpy array within ``quantity``'s bounds; else
    ScalesimError naming ``name``, with ``knobs`` (the knob the values are of, where one)."""
    b = bound(quantity)
    if isinstance(values, str | bytes | dict) or not hasattr(values, "__len__"):
        raise ScalesimError(f"{name}: expected a list of numbers, got {type(values).__name__}",
                            knobs=knobs)
    if isinstance(values, np.ndarray) and values.ndim != 1:  # a table's rows, or a scalar
        raise ScalesimError(f"{name}: expected a flat list of numbers, got an array of shape "
                            f"{values.shape}; give a one-dimensional one (numpy's ravel)",
                            knobs=knobs)
    if not isinstance(values, np.ndarray) and any(isinstance(v, list | tuple | np.ndarray)
                                                  for v in values):
        raise ScalesimError(f"{name}: expected a flat list of numbers, got a nested list; "
                            "give one number an item", knobs=knobs)
    if not (isinstance(values, np.ndarray) and values.dtype.kind in "iuf" and b.allows(values)):
        for v in values:  # a value-by-value check finds the first bad one and says why
            why = b.problem(v)
            if why is not None:
                raise ScalesimError(f"{name}: {why}", knobs=knobs)
    return np.asarray(values, dtype=np.int64 if b.integer else float)


def _field_rows() -> list[str]:
    """'| format | field | allowed |' rows for every bounded number of every file format."""
    from scalesim.schemas import SCHEMAS

    rows, seen = [], set()
    for fmt, model in SCHEMAS.items():
        schema = model.model_json_schema()
        for part in [schema, *schema.get("$defs", {}).values()]:
            title = part.get("title", fmt)
            for name, spec in part.get("properties", {}).items():
                text = spec.get("description", "")
                if "allowed: " not in text or (title, name) in seen:
                    continue
                seen.add((title, name))
                rows.append(f"| {title} | `{name}` | {text.split('allowed: ', 1)[1]} |")
    return rows


def markdown_table() -> str:
    """The bounds as Markdown tables (docs/bounds.md): quantities, knobs, fields."""
    lines = ["| quantity | allowed | why |", "|---|---|---|"]
    for name, b in QUANTITIES.items():
        kind = " (whole)" if b.integer else ""
        lines.append(f"| `{name}`{kind} | {b.text()} | {b.why} |")
    lines += ["", "| scenario field | CLI flag | link key | quantity | link since |",
              "|---|---|---|---|---|"]
    for k in KNOBS + LAYOUT_KNOBS:
        key = k.url_key or "-"
        if k.url_unit:
            key += f" ({k.url_unit})"
        kind = (
            f"`{k.quantity}`"
            if k.quantity is not None
            else "on or off (a switch; link 1 or 0)"
            if k.switch
            else "one of " + ", ".join(f"`{c}`" for c in k.choices)
        )
        since = f"v{k.link_since}" if k.url_key else "-"
        lines.append(f"| `{k.field}` | {k.flag or '-'} | {key} | {kind} | {since} |")
    lines += ["", "| model | field | allowed |", "|---|---|---|", *_field_rows()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
