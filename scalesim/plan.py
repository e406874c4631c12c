"""The layout planner: every valid layout of a transformer on N devices, ranked.

``plan(...)`` enumerates dp x tp x pp (x cp), ZeRO stage, micro-batch, pipeline schedule and
virtual stages, recompute and sequence parallelism for each device count, drops the layouts
that break a placement rule (``layout.valid_mask``), evaluates the rest in one vectorised call
(``model.layout_step.evaluate_layouts``) and ranks those that fit by throughput, or by cost
(billed device time per sample: whole instances, ``scalesim.billing``), saying for each
runner-up which part of the step makes it lose.
``evaluate_layout`` is the scalar path: one ``ParallelLayout``, checked by
``layout.check_layout``; tests check that the two agree. Everything but the layout is one
``Setting``, and ``setting_inputs`` is the one place it becomes the model's inputs, for the
planner, the scalar path and, through ``layout_predict``, predictions and the planner of a
scenario (``rank_layouts``). docs/model.md §17.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, field_serializer

from scalesim.attention_kernel import VENDOR_KERNEL
from scalesim.billing import billed_devices, job_sizes
from scalesim.bounds import bound, check_number, check_values, clip, list_text
from scalesim.device_nouns import Nouns, hardware_nouns
from scalesim.errors import KNOB, Refusal, ScalesimError
from scalesim.figures import MIB_BYTES, count, gib, latency_us, link_GBps
from scalesim.layout import (
    DEFAULT_RECOMPUTE_STYLE,
    HARDWARE_KNOB,
    SCHEDULES,
    ZERO_STRATEGIES,
    ParallelLayout,
    check_layout,
    count_problem,
    early_stop_of,
    hybrid_shard_groups,
    knob_refusal,
    knob_value_refusal,
    memory_ways,
    op_sac_of,
    presets_holding_layout,
    runs_on_count,
    valid_mask,
)
from scalesim.model import collectives as coll
from scalesim.model.layout_step import LayoutInputs, LayoutResult, evaluate_layouts
from scalesim.model.memory import usable_memory_bytes
from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
from scalesim.model.sharding import EVERY_MICRO_STEP, FRAMEWORKS, FSDP, GRAD_SYNCS
from scalesim.model.transformer import RECOMPUTE
from scalesim.model.zero_exchange import framework_label
from scalesim.pipeline_stages import stage_fields
from scalesim.precision import DEFAULT_PRECISION, FP8, no_fp8_peak_words
from scalesim.predict import nvls_busbw_ratio
from scalesim.presets import attention_efficiency_of, attention_share
from scalesim.schemas import (
    BLOCK_NOT_USABLE,
    LAUNCH_BOUND,
    Hardware,
    Profile,
    TransformerShape,
    grad_sync_deepspeed_error,
    grad_sync_refused,
)

# Sustained share of the datasheet peak that large matmuls reach when nothing calibrated it: the
# median of the efficiencies the anchors of the published model-parallel cases pin
# (../shared/validation/parallel_cases.json, docs/validation.md: 0.45 to 0.78, median 0.73).
DEFAULT_MATMUL_EFFICIENCY = 0.73
# every micro-batch of 1 to 32 sequences (those dividing a replica's share of the batch): 3 at
# 9 a replica runs 4.1 % faster than 1 (gpt-7.5b, 16 H100s, batch 72), which powers of two missed
MICRO_BATCHES = tuple(range(1, 33))
VIRTUAL_STAGES = (2, 3, 4, 6, 8)
SCHEDULE_CHOICES = (("none", 1), ("gpipe", 1), ("1f1b", 1), ("zb", 1)) + tuple(
    ("interleaved", v) for v in VIRTUAL_STAGES
)
RECOMPUTE_CHOICES = ("none", "selective", "full")
ZERO_CHOICES = (0, 1, 2, 3)
PARTS = ("compute_s", "tp_comm_s", "cp_comm_s", "bubble_s", "p2p_s", "dp_exposed_s", "straggler_s", "stall_s")
PART_NAMES = {
    "compute_s": "compute",
    "tp_comm_s": "tensor-parallel communication",
    "cp_comm_s": "context-parallel communication",
    "bubble_s": "pipeline bubble",
    "p2p_s": "pipeline sends",
    "dp_exposed_s": "data-parallel exchange",
    "straggler_s": "straggler wait",
    "stall_s": "input stall",
}


def row_strategy_words(row: dict, setting: Setting) -> str:
    """How the framework of ``setting`` runs a plan row's ZeRO stage, in the words every
    command uses (``zero_exchange.framework_label``; hybrid where the shard group is below
    dp x cp; under a pipeline where pp > 1): the plan's JSON, its table's note and the app's
    Layouts table."""
    hybrid = row["zero"] > 0 and row["shard_group"] < row["dp"] * row["cp"]
    return _strategy_words(row["zero"], setting.framework, setting.grad_sync, hybrid,
                           row["pp"] > 1, row["tp"] > 1)


@functools.cache
def _strategy_words(zero: int, framework: int, grad_sync: int, hybrid: bool,
                    piped: bool, tensor_split: bool) -> str:
    """``row_strategy_words`` of a ZeRO stage (0-3), ``sharding.FRAMEWORKS`` and
    ``GRAD_SYNCS`` codes, a hybrid shard group, pp > 1 and tp > 1: worked out once each (a plan
    has a row per layout, a few dozen such keys)."""
    names = {code: name for name, code in FRAMEWORKS.items()}
    syncs = {code: name for name, code in GRAD_SYNCS.items()}
    return framework_label(ZERO_STRATEGIES[zero], names[framework], syncs[grad_sync], hybrid,
                           piped, tensor_split)


def strategy_legend(rows) -> str:
    """'zero 1: Megatron-Core distributed optimizer; zero 2 with pp > 1: FSDP2
    reshard_after_forward=False, ...': what each ZeRO number of the table runs as, once each
    (the rows' ``strategy_words``); '' for none."""
    said = {}
    for r in rows:
        key = f"zero {r.zero}" + (" with pp > 1" if r.pp > 1 and r.zero >= 2 else
                                  " with tp or pp > 1" if r.zero == 0 and r.tp * r.pp > 1 else "")
        said.setdefault(key, r.strategy_words)
    return "; ".join(f"{k}: {w}" for k, w in said.items() if w)


class PlanRow(BaseModel):
    """One layout, its predicted step and memory, and why it ranks where it does."""

    rank: int
    devices: int
    dp: int
    tp: int
    pp: int
    cp: int
    zero: int
    micro_batch: int
    accumulation: int
    schedule: str
    virtual_stages: int
    recompute: str
    recompute_style: str  # the framework's (plan's recompute_style); early-stop matters for
    # full recompute only, op-sac for selective only
    sequence_parallel: bool
    tp_overlap: bool  # the framework's (plan's tp_overlap): tensor-parallel traffic overlapped
    p2p_overlap: bool  # the framework's (plan's p2p_overlap): the interleaved schedule's sends
    # overlap the next chunk (Megatron-Core's overlap_p2p_comm); matters on interleaved rows only
    precision: str  # the layers' matmul precision (plan's --precision): mfu and hfu are
    # against its peak (fp8: the device's fp8 peak)
    shard_group: int  # ranks that shard the ZeRO states: dp x cp (full sharding; DDP rows too)
    # or fewer (hybrid sharding, replicated across dp x cp / shard_group groups; §16)
    strategy_words: str = ""  # how the framework runs the row's ZeRO stage
    # (``zero_exchange.framework_label``: 'FSDP SHARD_GRAD_OP'; under a pipeline 'FSDP2
    # reshard_after_forward=False, gradients reduced once a step (PyTorch pipelining)')
    step_time_s: float
    samples_per_s: float
    tokens_per_s: float
    mfu: float | None  # None: no datasheet peak for the device (``Setting.peak_known``)
    hfu: float | None
    memory_bytes: float
    headroom_bytes: float
    fits: bool
    breakdown_s: dict[str, float]
    device_hours_per_million_samples: float  # billed devices' hours (whole instances)
    billed_devices: int  # devices a cloud bills for the layout (scalesim.billing)
    why: str
    # layers on each pipeline stage, first to last; where the model's stages are uneven (pp x v
    # does not divide the layers) what runs them, in words; and what a user must know of the
    # stages (those words, or torchtitan's split where it differs from the model's even one)
    # (``pipeline_stages.stage_fields``, predict's too); None where there is nothing to say
    layers_per_stage: list[int]
    uneven_stages: str | None
    stage_notes: str | None
    # False where no input pipeline gave the loader a supply (``Setting.loader_samples_per_s``
    # infinite: ``predict.input_pipeline_modelled`` false): breakdown_s's stall_s is then the
    # model's 0 for an infinitely fast loader, null in --json (not part of the JSON otherwise)
    stall_modelled: bool = Field(default=True, exclude=True)

    @field_serializer("breakdown_s", when_used="json")
    def _breakdown_out(self, breakdown_s: dict[str, float]) -> dict[str, float | None]:
        """``--json``: stall_s null where the stall is not modelled (``stall_modelled``)."""
        if self.stall_modelled or "stall_s" not in breakdown_s:
            return breakdown_s
        return {**breakdown_s, "stall_s": None}

    @field_serializer("shard_group")
    def _shard_group_out(self, shard_group: int) -> int | None:
        """``--json``: null for a DDP row (ZeRO 0 shards no state), as the table's '-'."""
        return shard_group if self.zero > 0 else None

    @property
    def hybrid(self) -> bool:
        """Hybrid sharding: a ZeRO row whose shard group is less than dp x cp."""
        return self.zero > 0 and self.shard_group < self.dp * self.cp

    def layout(self, global_batch: int) -> ParallelLayout:
        return ParallelLayout(
            dp=self.dp,
            tp=self.tp,
            pp=self.pp,
            cp=self.cp,
            zero=self.zero,
            micro_batch=self.micro_batch,
            global_batch=global_batch,
            schedule=self.schedule,
            virtual_stages=self.virtual_stages,
            recompute=self.recompute,
            recompute_style=self.recompute_style,
            sequence_parallel=self.sequence_parallel,
            tp_overlap=self.tp_overlap,
            p2p_overlap=self.p2p_overlap,
            shard_group=self.shard_group if self.hybrid else None,
        )


@dataclass(frozen=True)
class CountBest:
    """The best layout on one device count a plan was asked for: ``best``, its row (``rank``
    its place among every count's layouts, so it may lie past the rows listed), or None and
    ``note``: why that count has none (``no_layout_words``, ``nothing_fits_words``)."""

    devices: int
    best: PlanRow | None
    note: str | None = None


class RankedRows(list):
    """``rank_layouts``' rows, best first (a list of ``PlanRow``: the ranking of every count's
    layouts together), and ``by_count``: a ``CountBest`` for each device count asked, fewest
    first. Ranked together, the largest count's layouts fill the top rows (its throughput is
    the highest); ``by_count`` says what the others run at best, or why they run nothing;
    ``evaluated``: the valid layouts evaluated over every count, fitting or not;
    ``holders``: ``presets_holding_least``'s rule (None: no layout was evaluated)."""

    def __init__(self, rows: list[PlanRow], by_count: list[CountBest], evaluated: int = 0,
                 holders: Callable[[], list[tuple[str, float]]] | None = None):
        super().__init__(rows)
        self.by_count = by_count
        self.evaluated = evaluated
        self._holders = holders

    def presets_holding_least(self) -> list[tuple[str, float]]:
        """(preset name, device memory in bytes) of each other hardware preset whose devices
        hold the layout needing least memory over every count asked, evaluated there
        (``layout.presets_holding_layout``): the presets plan's nothing-fits error names, and
        goal's and decide's where nothing fits; [] where that layout fits on this hardware
        (a layout fits: no other device is asked for). Evaluated when asked (one layout per
        preset), not by ``rank_layouts``."""
        return self._holders() if self._holders is not None else []


ABOVE_LINEAR = 1.0005  # a count's scaling above this reads above 100.0% (``count_lines``)


def count_scaling(by_count: list[CountBest]) -> list[float | None]:
    """Each count's best samples/s per device over that of the fewest devices with a best (1
    there, None for a count without one): how the best layouts scale across the counts."""
    bests = [c for c in by_count if c.best is not None]
    if not bests:
        return [None] * len(by_count)
    base = bests[0].best.samples_per_s / bests[0].devices
    return [None if c.best is None else c.best.samples_per_s / c.devices / base for c in by_count]


def above_linear_count_note(by_count: list[CountBest], nouns: Nouns) -> str | None:
    """Why a count's best runs above 100% per device against the fewest devices' best
    (``count_scaling``), at the highest, from the two rows: each best's layout
    (``layout_predict.row_split_title``), the term that takes most of the fewer devices'
    step, its share there and its seconds in the other, and the fewer devices' step against
    the other's as a runner-up's why (``_why``); None where no count is above 100%."""
    from scalesim.layout_predict import row_split_title

    over = [(s, c) for s, c in zip(count_scaling(by_count), by_count, strict=True)
            if s is not None and s > ABOVE_LINEAR]
    if not over:
        return None
    scale, top = max(over, key=lambda sc: sc[0])
    base = next(c for c in by_count if c.best is not None)
    fewer, more = base.best, top.best
    parts = {p: v for p, v in fewer.breakdown_s.items() if p in PARTS and np.isfinite(v)}
    part = max(parts, key=parts.get)
    name = PART_NAMES[part]
    taken = [f"{name} takes {r.breakdown_s[part]:,.1f} s of its {r.step_time_s:,.1f} s step "
             f"({r.breakdown_s[part] / r.step_time_s:.0%})" for r in (fewer, more)]
    if row_split_title(more) == row_split_title(fewer):
        bests = (f"both bests run {row_split_title(fewer)}: on {base.devices} its {taken[0]}; "
                 f"on {top.devices} its {taken[1]}")
    else:
        bests = (f"the two bests are different layouts: on {base.devices}, "
                 f"{row_split_title(fewer)}, whose {taken[0]}; on {top.devices}, "
                 f"{row_split_title(more)}, whose {taken[1]}")
    against = _why(more.model_dump(), fewer.model_dump(), "step", nouns.device)
    return (f"per {nouns.device} above 100% ({scale:.1%} on {nouns.count(top.devices)} against "
            f"the best on {base.devices}): {bests}; the best on {base.devices} against it: "
            f"{against}")


@dataclass(frozen=True)
class MeasuredP2P:
    """Send/recv between two devices of one server as a calibration measured it
    (``profile.model_parallel``: ``p2p_latency_s``, ``p2p_bandwidth_GBps``), for the layout
    model's pipeline sends inside a server (docs/model.md §15)."""

    busbw_ratio: float  # measured bandwidth over the profile's intra-server ring busbw
    latency_s: float
    note: str

    def inputs(self) -> dict:
        """The ``LayoutInputs`` fields it sets."""
        return {"p2p_busbw_ratio": self.busbw_ratio, "p2p_latency_s": self.latency_s}


def p2p_inputs(p2p: MeasuredP2P | None) -> dict:
    """``LayoutInputs`` fields of the pipeline sends inside a server: the measured send/recv,
    or the intra link model (ratio 1, the level's latency) without one."""
    return p2p.inputs() if p2p is not None else {"p2p_busbw_ratio": 1.0, "p2p_latency_s": float("nan")}


def measured_p2p(profile: Profile) -> MeasuredP2P | None:
    """The profile's measured send/recv inside a server (``calibrate --block-hidden``), or None
    when it has none. The bandwidth is kept as a ratio to the profile's intra-server busbw, so a
    what-if on that busbw (``--intra-busbw``, a sweep axis) scales the sends alike, as NVLS is
    scaled (docs/model.md §2); the latency is used as measured."""
    mp = profile.model_parallel
    if mp is None or mp.p2p_bandwidth_GBps is None or mp.p2p_latency_s is None:
        return None
    intra = profile.hardware.intra_node
    ratio = mp.p2p_bandwidth_GBps / intra.busbw_GBps
    note = (
        f"pipeline sends inside a server: measured send/recv {latency_us(mp.p2p_latency_s)} "
        f"+ S / {link_GBps(mp.p2p_bandwidth_GBps)} ({ratio:.3g} x the intra link's "
        f"{link_GBps(intra.busbw_GBps)} busbw; profile {profile.name}, model_parallel)"
    )
    return MeasuredP2P(ratio, mp.p2p_latency_s, note)


@dataclass(frozen=True)
class Setting:
    """Everything but the layout: the transformer, the hardware and the run's constants.

    The one description of a run that ``setting_inputs`` turns into the layout model's inputs,
    for the planner (``plan``, ``rank_layouts``), its scalar path (``evaluate_layout``) and, built
    from a scenario by ``layout_predict.scenario_setting``, for predictions (``predict``,
    ``sweep``) and the planner of a scenario (``layout_predict.plan_at``, the "split the model"
    remedy), so that a layout ranks where it predicts (docs/model.md §17, §22)."""

    shape: TransformerShape
    hardware: Hardware  # links, server size, peak, memory and its bandwidth, contention, spread
    global_batch: int
    efficiency: float = DEFAULT_MATMUL_EFFICIENCY
    fp8: bool = False
    params: float | None = None  # default: the shape's count
    tp_overlap: bool = False  # tensor-parallel collectives overlapped (Transformer Engine)
    jitter_cv: float = 0.0  # std/mean of a micro-step, independent (the waits of §14, §16)
    p2p: MeasuredP2P | None = None  # measured send/recv inside a server (None: the intra link)
    recompute_style: str = DEFAULT_RECOMPUTE_STYLE  # how the framework's full or selective
    # recompute reruns the forward (``layout.RECOMPUTE_STYLES``): of the framework, not searched
    overlap: bool = True  # the framework overlaps communication with compute (Scenario.overlap)
    p2p_overlap: bool = True  # the interleaved schedule's sends overlap the next chunk's compute
    # (Megatron-Core's overlap_p2p_comm, ScenarioLayout.p2p_overlap; False: they block, §15)
    attention_kernel: str = VENDOR_KERNEL  # the framework's fused attention kernel
    # (``attention_kernel.ATTENTION_KERNELS``): 'flash2' runs the attention core at its own
    # share of the peak on Hopper (docs/model.md §13); the vendor kernel at the
    # matmuls' efficiency
    slow_device: int | None = None  # global rank of a persistently slow device (None: none)
    slow_factor: float = 1.0  # its compute-time multiplier
    loader_samples_per_s: float = np.inf  # input supply per model replica, samples/s
    param_bytes_per_param: float = 2.0  # the workload's bytes per parameter (Workload fields)
    grad_bytes_per_param: float = 2.0
    optimizer_bytes_per_param: float = 12.0
    wire_bytes_per_param: float = 2.0
    reduce_bytes_per_param: float = np.nan  # stated reduce bytes (Workload's; NaN: the framework's)
    framework: int = FSDP  # ZeRO over dp: PyTorch-native (FSDP; Megatron-Core's distributed
    # optimizer for ZeRO-1) or DeepSpeed (``sharding.FRAMEWORKS`` codes, Scenario.zero_framework)
    grad_sync: int = EVERY_MICRO_STEP  # when ZeRO-2/3 reduce under accumulation
    # (``sharding.GRAD_SYNCS`` codes, Scenario.grad_sync; once per step: FSDP's no_sync)
    algorithm: int = coll.AUTO  # all-reduce of the dp exchange (``collectives.ALGORITHMS`` codes)
    bucket_bytes: float = DDP_BUCKET_BYTES  # DDP gradient bucket (ZeRO-0), bytes
    first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES  # DDP's first bucket, bytes
    efficiency_of: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None  # sustained
    # share of the peak per (micro-batch, busy devices per server) of a layout (a scenario's
    # compute pin, ``layout_predict.pinned_compute``); None: ``efficiency`` everywhere
    kernel_bandwidth_of: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None  # the
    # layers' kernel byte rate alike, GB/s (the same pin); None: the hardware's
    optimizer_step_of: Callable[[np.ndarray], np.ndarray] | None = None  # the measured
    # optimizer step of all parameters on one device per busy devices per server of a layout, s
    # (``layout_predict.measured_optimizer_s``); None: the memory-bound estimate
    oom_micro_batch: int = 0  # the smallest micro-batch a calibration of this model ran out of
    # memory at, one whole replica a device (``ComputeCurve.oom_micro_batch``): the layouts
    # holding one (tp = pp = cp = 1) do not fit from it (``LayoutInputs.oom_micro_batch``,
    # ``layout_predict.plan_at``, ``plan``); 0: none seen
    memory_margin: float = 0.0  # share of device memory kept free: a layout fits where it
    # needs at most (1 - margin) x the device's (``memory.usable_memory_bytes``, §16)
    peak_known: bool = True  # False: the device has no datasheet peak (a CPU;
    # ``profiles.device_peak_tflops``), its ``peak_tflops`` a stand-in: the rows' MFU and HFU
    # are None

    def replace(self, **changes) -> Setting:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def fp8_peak_ratio(device_name: str) -> float:
    """The datasheet's fp8 / 16-bit dense peak ratio of ``device_name`` (2 on every listed
    GPU); ScalesimError where no fp8 peak is listed."""
    from scalesim.presets import peak_tflops_of

    peak8, peak16 = (peak_tflops_of(device_name, fp8=f) for f in (True, False))
    if peak8 is None:
        raise ScalesimError(knob_value_refusal(
            "precision", FP8, f"{no_fp8_peak_words(device_name)}; leave it at {DEFAULT_PRECISION}"))
    return peak8[0] / peak16[0]


def _peak_flops(hardware: Hardware, fp8: bool) -> float:
    """The device's dense peak, FLOP/s: the hardware's 16-bit ``peak_tflops``; in fp8 that times
    the datasheet's fp8 / 16-bit ratio for the device (``fp8_peak_ratio``), so a hardware file
    that states its own 16-bit peak scales its fp8 peak alike."""
    from scalesim.presets import peak_tflops_of

    if fp8:
        ratio = fp8_peak_ratio(hardware.device_name)
        if hardware.peak_tflops is None:
            return peak_tflops_of(hardware.device_name, fp8=True)[0] * 1e12
        return hardware.peak_tflops * ratio * 1e12
    if hardware.peak_tflops is None:
        raise ScalesimError(
            f"hardware '{hardware.name}' has no peak_tflops; the planner needs the device's dense 16-bit peak"
        )
    return hardware.peak_tflops * 1e12


def calibrated_hardware(profile: Profile) -> tuple[Hardware, float, str]:
    """(hardware, matmul efficiency, a note saying where they come from) for the layout model
    from a calibration profile: its device, memory and links (measured, or the presets its notes
    name); with a ``model_parallel`` section (``calibrate --block-hidden``) the roofline the
    block timings pinned: efficiency = sustained / peak, and the fitted byte rate as the layer
    kernels' (``kernel_bandwidth_GBps``) while the optimizer's streaming sweep keeps the device's
    memory bandwidth (datasheet; the fitted rate where none is known). The peak: the profile's,
    else the datasheet table's for a 16-bit block (a profile older than its device's row).
    Without a datasheet peak (CPUs, fp32) the sustained rate stands in as the peak (efficiency
    1, MFU against it); a sustained rate above the datasheet peak is clipped to it and the note
    says the block was too small.
    A profile without the section keeps the published default efficiency and needs its
    device's peak and memory bandwidth from the hardware record or the presets."""
    from scalesim.presets import memory_bandwidth_of, peak_tflops_of

    hw, mp = profile.hardware, profile.model_parallel
    listed_bw = memory_bandwidth_of(hw.device_name)
    if mp is not None:
        listed_peak = peak_tflops_of(hw.device_name) if mp.block.element_bytes == 2 else None
        # at the calibrated precision; the table's 16-bit peak for a 16-bit block whose profile
        # predates its device's row
        datasheet_peak = mp.peak_tflops or hw.peak_tflops or (listed_peak[0] if listed_peak else None)
        peak = datasheet_peak or mp.sustained_tflops
        efficiency = clip("matmul_efficiency", min(mp.sustained_tflops / peak, 1.0))
        from scalesim.profiles import device_bandwidth_GBps

        kernel_bw = mp.memory_bandwidth_GBps
        bandwidth = device_bandwidth_GBps(profile)
        of_what = "" if datasheet_peak else " (no datasheet peak: sustained)"
        note = (
            f"calibrated: matmul efficiency {efficiency:.3g} ({min(mp.sustained_tflops, peak):.4g}"
            f" of {peak:.4g} TFLOP/s{of_what}), layer kernels' bytes at {kernel_bw:.4g} GB/s "
            f"and the optimizer at {bandwidth:.4g} GB/s, from the block at tp "
            f"{','.join(str(x.tp) for x in mp.points)} (fit rel. RMSE {mp.rel_rmse:.1%}); "
            f"links intra {link_GBps(hw.intra_node.busbw_GBps)}, inter "
            f"{link_GBps(hw.inter_node.busbw_GBps)} from {profile.name}"
        )
        if mp.above_peak(datasheet_peak):
            note += f"; {LAUNCH_BOUND} ({mp.sustained_tflops:.4g} TFLOP/s fitted)"
        p2p = measured_p2p(profile)
        if p2p is not None:
            note += "; " + p2p.note
        return (
            hw.model_copy(
                update={
                    "peak_tflops": peak,
                    "memory_bandwidth_GBps": bandwidth,
                    "kernel_bandwidth_GBps": kernel_bw,
                }
            ),
            efficiency,
            note,
        )
    listed_peak = peak_tflops_of(hw.device_name)
    peak = hw.peak_tflops or (listed_peak[0] if listed_peak else None)
    bandwidth = hw.memory_bandwidth_GBps or (listed_bw[0] if listed_bw else None)
    if peak is None or bandwidth is None:
        missing = "peak_tflops" if peak is None else "memory_bandwidth_GBps"
        failed = next((n for n in profile.notes if n.startswith(BLOCK_NOT_USABLE + ": ")), None)
        if failed is not None:  # --block-hidden was given: "calibrate with it" would not help
            why = failed.removeprefix(BLOCK_NOT_USABLE + ": ").split("; measured (ms)")[0]
            raise ScalesimError(
                f"profile '{profile.name}': no {missing} for '{hw.device_name}', "
                f"and its --block-hidden timings could not be fitted: {why}"
            )
        raise ScalesimError(
            f"profile '{profile.name}': no {missing} for '{hw.device_name}' and "
            "no model_parallel calibration; calibrate with --block-hidden H "
            "(docs/calibration.md) or give a hardware record with it"
        )
    note = (
        f"profile {profile.name} has no block calibration: matmul efficiency "
        f"{DEFAULT_MATMUL_EFFICIENCY} is the published default; links from the profile"
    )
    return (
        hw.model_copy(update={"peak_tflops": peak, "memory_bandwidth_GBps": bandwidth}),
        DEFAULT_MATMUL_EFFICIENCY,
        note,
    )


def setting_from_profile(
    profile: Profile,
    shape: TransformerShape,
    global_batch: int,
    fp8: bool = False,
    params: float | None = None,
    tp_overlap: bool = False,
) -> Setting:
    """The ``Setting`` of a layout evaluation on a calibration profile's hardware, links and
    calibrated matmul efficiency (``calibrated_hardware``), its attention core at the kernel
    the block calibration ran (``layout_predict.kernel_for_another_model``, as predict prices
    another model on the profile)."""
    from scalesim.layout_predict import kernel_for_another_model

    hardware, efficiency, _ = calibrated_hardware(profile)
    return Setting(
        shape, hardware, global_batch, efficiency, fp8, params, tp_overlap, p2p=measured_p2p(profile),
        attention_kernel=kernel_for_another_model(profile),
    )


NO_LAYOUT = {
    "dp": 1,
    "tp": 1,
    "pp": 1,
    "cp": 1,
    "zero": 0,
    "micro_batch": 1,
    "schedule": 0,
    "virtual_stages": 1,
    "recompute": 0,
    "sequence_parallel": False,
}


def setting_inputs(setting: Setting, **layout_arrays) -> LayoutInputs:
    """The layout model's inputs of ``setting`` for the layouts in ``layout_arrays`` (the
    ``LayoutInputs`` layout fields, arrays or scalars; those not given: one device, unsplit,
    micro-batch 1, the setting's global batch). The one place a run's constants become
    ``LayoutInputs``: ``plan``, ``evaluate_layout``, ``layout_predict.base_inputs`` (predict,
    sweep) and ``layout_predict.plan_at`` all come here."""
    s, hw = setting.shape, setting.hardware
    if hw.memory_bandwidth_GBps is None:
        raise ScalesimError(
            f"hardware '{hw.name}' has no memory_bandwidth_GBps; the planner needs it for memory-bound work"
        )
    layout = {**NO_LAYOUT, "global_batch": setting.global_batch, **layout_arrays}
    busy = np.minimum(
        np.asarray(layout["dp"])
        * np.asarray(layout["tp"])
        * np.asarray(layout["pp"])
        * np.asarray(layout["cp"]),
        hw.devices_per_node,
    )
    efficiency = (
        setting.efficiency
        if setting.efficiency_of is None
        else setting.efficiency_of(layout["micro_batch"], busy)
    )
    return LayoutInputs(
        layers=s.layers,
        hidden=s.hidden,
        heads=s.heads,
        kv_heads=s.kv_of(),
        ffn_hidden=s.ffn_of(),
        gated=s.gated_mlp,
        seq_len=s.seq_len,
        vocab=s.vocab,
        tied_embeddings=s.tied_embeddings,
        flash_attention=s.flash_attention,
        params=setting.params or s.param_count(),
        **layout,
        devices_per_node=hw.devices_per_node,
        peak_flops_per_s=_peak_flops(hw, setting.fp8),
        efficiency=efficiency,
        memory_bandwidth_GBps=hw.memory_bandwidth_GBps,
        kernel_bandwidth_GBps=(
            hw.kernel_bandwidth_GBps
            if setting.kernel_bandwidth_of is None
            else setting.kernel_bandwidth_of(layout["micro_batch"], busy)
        ),
        intra_latency_s=hw.intra_node.latency_s,
        intra_busbw_GBps=hw.intra_node.busbw_GBps,
        intra_subset_shares=hw.intra_node.subset_shares,
        inter_latency_s=hw.inter_node.latency_s,
        inter_busbw_GBps=hw.inter_node.busbw_GBps,
        device_memory_bytes=hw.device_memory_bytes,
        memory_margin=setting.memory_margin,
        param_bytes_per_param=setting.param_bytes_per_param,
        grad_bytes_per_param=setting.grad_bytes_per_param,
        optimizer_bytes_per_param=setting.optimizer_bytes_per_param,
        wire_bytes_per_param=setting.wire_bytes_per_param,
        reduce_bytes_per_param=setting.reduce_bytes_per_param,
        optimizer_step_s=(np.nan if setting.optimizer_step_of is None else setting.optimizer_step_of(busy)),
        comm_contention=hw.comm_compute_contention,
        device_cv=hw.device_speed_cv,
        jitter_cv=setting.jitter_cv,
        tp_overlap=setting.tp_overlap,
        p2p_overlap=setting.p2p_overlap,
        overlap=setting.overlap,
        slow_factor=1.0 if setting.slow_device is None else setting.slow_factor,
        slow_rank=setting.slow_device or 0,
        loader_samples_per_s=setting.loader_samples_per_s,
        recompute_early_stop=early_stop_of(setting.recompute_style),
        recompute_op_sac=op_sac_of(setting.recompute_style),
        framework=setting.framework,
        grad_sync=setting.grad_sync,
        algorithm=setting.algorithm,
        bucket_bytes=setting.bucket_bytes,
        first_bucket_bytes=setting.first_bucket_bytes,
        nvls_busbw_ratio=nvls_busbw_ratio(hw.intra_node),
        # fp8 recipes cast the layers' Linear weights only: the attention core and the output
        # layer stay at the 16-bit peak
        peak16_flops_per_s=_peak_flops(hw, False), fp8=setting.fp8,
        attention_efficiency=attention_share(hw.device_name, setting.attention_kernel,
                                             s.flash_attention),
        oom_micro_batch=setting.oom_micro_batch,
        **p2p_inputs(setting.p2p),
    )


def _layout_arrays(layouts: list[ParallelLayout]) -> dict[str, np.ndarray]:
    return {
        "dp": np.array([x.dp for x in layouts]),
        "tp": np.array([x.tp for x in layouts]),
        "pp": np.array([x.pp for x in layouts]),
        "cp": np.array([x.cp for x in layouts]),
        "zero": np.array([x.zero for x in layouts]),
        "micro_batch": np.array([x.micro_batch for x in layouts]),
        "global_batch": np.array([x.global_batch for x in layouts]),
        "schedule": np.array([SCHEDULES[x.schedule] for x in layouts]),
        "virtual_stages": np.array([x.virtual_stages for x in layouts]),
        "recompute": np.array([RECOMPUTE[x.recompute] for x in layouts]),
        "sequence_parallel": np.array([x.sequence_parallel for x in layouts]),
        "shard_group": np.array([x.shard_group or 0 for x in layouts]),
    }


def evaluate_layout(setting: Setting, layout: ParallelLayout) -> LayoutResult:
    """The scalar path: check one layout's placement rules, then evaluate it alone. The
    layout's framework settings (recompute style, tp overlap) must be the setting's: a
    mismatch is refused by name, not silently resolved either way."""
    s = setting.shape
    check_layout(
        layout,
        setting.hardware.devices_per_node,
        hardware_nouns(setting.hardware),
        allocation=setting.hardware.allocation_devices,
        layers=s.layers,
        heads=s.heads,
        kv_heads=s.kv_of(),
        seq_len=s.seq_len,
    )
    if layout.global_batch != setting.global_batch:
        raise ScalesimError(f"layout global_batch {layout.global_batch} != the plan's {setting.global_batch}",
                            knobs=("global_batch",))
    if layout.recompute_style != setting.recompute_style:
        raise ScalesimError(
            f"layout recompute_style {layout.recompute_style} != the plan's "
            f"{setting.recompute_style} (the framework's)", knobs=("recompute_style",))
    if layout.tp_overlap != setting.tp_overlap:
        raise ScalesimError(
            f"layout tp_overlap {layout.tp_overlap} != the plan's {setting.tp_overlap} (the framework's)",
            knobs=("tp_overlap",))
    if layout.p2p_overlap != setting.p2p_overlap:
        raise ScalesimError(
            f"layout p2p_overlap {layout.p2p_overlap} != the plan's {setting.p2p_overlap} (the framework's)",
            knobs=("p2p_overlap",))
    return evaluate_layouts(setting_inputs(setting, **{k: v[0] for k, v in _layout_arrays([layout]).items()}))


def _splits(devices: list[int], devices_per_node: int, cp_values) -> list[tuple[int, int, int, int]]:
    """Every (dp, tp, pp, cp) of these device counts with tp dividing the server and cp among
    ``cp_values``, before any other placement rule."""
    g, splits = devices_per_node, []
    for n in devices:
        for tp in (t for t in range(1, g + 1) if g % t == 0 and n % t == 0):
            for cp in (c for c in cp_values if (n // tp) % c == 0):
                rest = n // (tp * cp)
                for pp in (p for p in range(1, rest + 1) if rest % p == 0):
                    splits.append((rest // pp, tp, pp, cp))
    return splits


def no_split_words(devices: list[int], cp_values) -> str:
    """Why ``devices`` have no dp x tp x pp x cp split at all (``_splits`` empty): no degree
    of ``cp_values`` divides a count (tp 1, pp 1 split any count): the plan's error where no
    count asked has one, a count's note where others do."""
    return Refusal(f"no dp x tp x pp x cp split of devices {list_text(devices)} with cp "
                   f"{list_text(cp_values)}: a context-parallel degree must divide the "
                   "device count (over tp); give --cp degrees that divide it, e.g. 1,2", ("cp",))


def fewest_replicas(devices: list[int], setting: Setting, cp_values=(1,)) -> int | None:
    """The smallest data-parallel degree of a split of these device counts that breaks no
    placement rule (``valid_mask`` at one micro-batch per pipeline stage, a batch every split
    divides), where none divides the global batch; None where one does (the batch splits,
    so no layout is left for another reason: too many micro-steps)."""
    g, s = setting.hardware.devices_per_node, setting.shape
    dp, tp, pp, cp = np.array(_splits(devices, g, cp_values)).T
    placed = valid_mask(dp, tp, pp, cp, 1, dp * pp, np.where(pp > 1, SCHEDULES["1f1b"], 0), 1, g,
                        s.layers, s.heads, s.kv_of(), s.seq_len,
                        setting.hardware.allocation_devices)
    if not placed.any() or np.any(setting.global_batch % dp[placed] == 0):
        return None
    return int(dp[placed].min())


def no_layout_words(devices: list[int], setting: Setting, cp_values=(1,)) -> str:
    """Why no layout is valid on ``devices`` at the setting's global batch, and what to change:
    the error of a plan with none, and the note of a count that has none beside others that do.
    Every split has more replicas than divide the batch (``fewest_replicas``: a multiple of
    that many; more devices only add replicas), or else too many micro-steps."""
    hardware = setting.hardware
    g, nouns = hardware.devices_per_node, hardware_nouns(hardware)
    head = (f"no valid layout for {nouns.devices} {list_text(devices)} and global batch "
            f"{setting.global_batch} on {nouns.servers} of {g}")
    if not _splits(sorted(set(devices)), g, sorted(set(cp_values))):  # cp divides no count
        return no_split_words(devices, cp_values)
    if fewest := fewest_replicas(sorted(set(devices)), setting, sorted(set(cp_values))):
        return Refusal(f"{head}: every valid split has {fewest} or more data-parallel replicas, "
                       "and none of their counts divides the global batch; give a global batch "
                       f"that is a multiple of {fewest}, or fewer {nouns.devices}",
                       ("global_batch", "devices"))
    return Refusal(f"{head}: no dp x micro-batch divides the global batch with a valid tp and pp "
                   f"in at most {bound('accumulation').high:,.0f} micro-steps; add "
                   f"{nouns.devices} or lower the global batch", ("devices", "global_batch"))


@functools.lru_cache(maxsize=256)
def capacity_words(device_memory_bytes: float, memory_margin: float = 0.0) -> str:
    """What a layout may fill of a device, in words: '80.0 GiB' (no margin), '76.0 GiB (80.0
    GiB less the 5% memory margin)' (``memory.usable_memory_bytes``). Cached: every row of a
    plan that does not fit says it (100,000 rows of ``plan --all``)."""
    if not memory_margin:
        return gib(device_memory_bytes)
    usable = float(usable_memory_bytes(device_memory_bytes, memory_margin))
    return (f"{gib(usable)} ({gib(device_memory_bytes)} less the {100 * memory_margin:g}% "
            "memory margin)")


def nothing_fits_words(devices: list[int], least: str, memory_bytes: float,
                       device_memory_bytes: float, nouns: Nouns,
                       memory_margin: float = 0.0) -> str:
    """Why no layout on the device counts ``devices`` is listed where every one needs more
    memory than a device has: ``least`` the one needing least in words
    (``layout_predict.row_title``, and its count where several are asked), ``memory_bytes``
    what it needs per device, against ``device_memory_bytes`` less ``memory_margin``
    (``capacity_words``): a count's note (one count) and the plan's error where no count has a
    layout that fits."""
    noun = nouns.noun(devices[0]) if len(devices) == 1 else nouns.devices
    return (f"nothing fits on {list_text(devices)} {noun}: the layout needing least memory "
            f"({least}) needs {gib(memory_bytes)} per {nouns.device}, of "
            f"{capacity_words(device_memory_bytes, memory_margin)}")


def candidate_grid(devices: list[int], setting: Setting, cp_values=(1,)) -> dict[str, np.ndarray]:
    """Every combination of knobs for these device counts, as flat arrays, valid ones only."""
    g = setting.hardware.devices_per_node
    shape = setting.shape
    splits = _splits(devices, g, cp_values)
    if not splits:  # tp 1, pp 1 split any count: only the cp degrees can leave none
        raise ScalesimError(no_split_words(devices, cp_values))
    used = sorted({split[3] for split in splits})  # the cp degrees that divide a count
    if all(c > 1 and shape.seq_len % (2 * c) for c in used):
        # valid_mask drops each of them, and rank_layouts then blamed the global batch
        raise ScalesimError(knob_refusal(  # the knobs by their controls (CLI: flags)
            f"{KNOB.cp} {list_text(used)}: context parallelism cuts each sequence into 2 x cp "
            f"chunks (load-balanced ring attention), and the sequence of {shape.seq_len:,} "
            f"tokens does not split so; give {KNOB.cp} degrees with 2 x cp dividing the "
            f"sequence length (or 1), or another {KNOB.seq_len}", ("cp", "seq_len")))
    split = np.array(splits)
    # each split with the micro-batches that divide its replicas' share of the global batch
    # (valid_mask's rule, taken first: of 32 micro-batches few divide it)
    pairs = np.array([(i, b) for i, (dp, *_) in enumerate(splits) for b in MICRO_BATCHES
                      if setting.global_batch % (dp * b) == 0], dtype=int).reshape(-1, 2)
    sched = np.array([SCHEDULES[name] for name, _ in SCHEDULE_CHOICES])
    virt = np.array([v for _, v in SCHEDULE_CHOICES])
    rec = np.array([RECOMPUTE[r] for r in RECOMPUTE_CHOICES])
    # the rules on the axes' own shapes (pair, zero, schedule, recompute, sequence parallel),
    # broadcast, then only the kept rows drawn, in the order of the full product's ravel
    # (ties are ranked by that order): the full product is ~200 rows a pair, most dropped
    i_pair = np.arange(len(pairs))[:, None, None, None, None]
    zero = np.array(ZERO_CHOICES)[None, :, None, None, None]
    i_sched = np.arange(len(sched))[None, None, :, None, None]
    i_sp = np.arange(2)[None, None, None, None, :]
    # (pair, 1, schedule, 1, 1) arrays: valid_mask's rules of the split and schedule
    dp, tp, pp, cp, micro, schedule, virtual = np.broadcast_arrays(
        *(split[pairs[i_pair, 0], j] for j in range(4)), pairs[i_pair, 1], sched[i_sched],
        virt[i_sched])
    keep = valid_mask(dp, tp, pp, cp, micro, setting.global_batch, schedule, virtual, g,
                      shape.layers, shape.heads, shape.kv_of(), shape.seq_len,
                      setting.hardware.allocation_devices, i_sp.astype(bool))
    keep = keep & ~(i_sp.astype(bool) & (tp == 1))  # SP is a no-op without tp
    # no more micro-steps per optimizer step than the bounds table allows (predict's and the
    # app's --accumulation): a plan no other command could run is no plan
    keep = keep & (setting.global_batch // np.maximum(dp * micro, 1) <= bound("accumulation").high)
    keep = keep & ~((zero > 0) & (dp * cp == 1))  # nothing to shard over
    # under a pipeline FSDP holds a ZeRO-3 stage whole for the step, as ZeRO-2 (the same row,
    # docs/model.md §16); DeepSpeed refuses ZeRO-2/3 with pipeline parallelism
    keep = keep & ~((pp > 1) & (zero >= (3 if setting.framework == FSDP else 2)))
    shape5 = (len(pairs), len(ZERO_CHOICES), len(sched), len(rec), 2)
    i_pair, i_zero, i_sched, i_rec, i_sp = np.nonzero(np.broadcast_to(keep, shape5))
    i_split = pairs[i_pair, 0]
    grid = {
        "dp": split[i_split, 0],
        "tp": split[i_split, 1],
        "pp": split[i_split, 2],
        "cp": split[i_split, 3],
        "zero": np.array(ZERO_CHOICES)[i_zero],
        "micro_batch": pairs[i_pair, 1],
        "global_batch": np.full(i_split.shape, setting.global_batch),
        "schedule": sched[i_sched],
        "virtual_stages": virt[i_sched],
        "recompute": rec[i_rec],
        "sequence_parallel": i_sp.astype(bool),
    }
    grid["shard_group"] = grid["dp"] * grid["cp"]  # full sharding
    # hybrid sharding (FSDP, Megatron-Core): the ZeRO layouts again with each hybrid shard group
    # of their dp x cp group where it spans several servers (``layout.hybrid_shard_groups``, §16)
    if setting.framework == FSDP:
        grid = _with_hybrid_rows(grid, g)
    return grid


def _with_hybrid_rows(grid: dict[str, np.ndarray], devices_per_node: int) -> dict[str, np.ndarray]:
    """``grid`` (full sharding) and after it each ZeRO row again with each of its hybrid shard
    groups (``layout.hybrid_shard_groups``), smallest group first."""
    group, tp = grid["dp"] * grid["cp"], grid["tp"]
    keys, where = np.unique(group * (devices_per_node + 1) + tp, return_inverse=True)
    choices = [hybrid_shard_groups(int(k // (devices_per_node + 1)), int(k % (devices_per_node + 1)),
                                   devices_per_node) for k in keys]
    rows, groups = [], []
    for s in sorted({s for c in choices for s in c}):
        at = np.flatnonzero((grid["zero"] > 0) & np.array([s in c for c in choices])[where])
        rows.append(at)
        groups.append(np.full(at.size, s))
    if not rows:
        return grid
    rows, groups = np.concatenate(rows), np.concatenate(groups)
    return {k: np.concatenate([v, groups if k == "shard_group" else v[rows]]) for k, v in grid.items()}


def _why(best: dict | None, row: dict, by: str, device: str = "device",
         memory_margin: float = 0.0) -> str:
    """Why a row ranks below the best; ``device``: the profile's noun ('process' on CPU). A row
    that does not fit says so against what it may fill (``capacity_words`` of
    ``memory_margin``), the first one too (``best`` None: nothing fits)."""
    if not row["fits"]:
        capacity = capacity_words(row["memory_bytes"] + row["headroom_bytes"], memory_margin)
        return f"does not fit: {gib(row['memory_bytes'])} > {capacity} per {device}"
    diffs = {p: row["breakdown_s"][p] - best["breakdown_s"][p] for p in PARTS}
    worst = max(diffs, key=diffs.get)
    slower = 100.0 * (row["step_time_s"] / best["step_time_s"] - 1.0)
    if by == "cost":
        more = 100.0 * (
            row["device_hours_per_million_samples"] / best["device_hours_per_million_samples"] - 1.0
        )
        # the cost's own parts: billed device-seconds a step (one global batch) of each part,
        # so a row on more devices is explained by what its devices spend, not by its shorter
        # step (whose parts all fall: "+0 s" explained nothing)
        spent = {p: row["billed_devices"] * row["breakdown_s"][p]
                 - best["billed_devices"] * best["breakdown_s"][p] for p in PARTS}
        spent = {p: v for p, v in spent.items() if np.isfinite(v)}
        top = max(spent, key=spent.get)
        part = (f" ({PART_NAMES[top]} {spent[top]:+.3g} billed device-s a step)"
                if spent[top] > 0 else "")
        return f"{more:+.1f}% billed device-hours per sample; step {slower:+.1f}%{part}"
    if diffs[worst] <= 0:
        return f"step {slower:+.1f}% on {count(int(row['devices']), 'device')}"
    return f"step {slower:+.1f}%: {PART_NAMES[worst]} {diffs[worst]:+.3g} s"


def plan(
    shape: TransformerShape,
    hardware: Hardware,
    devices: list[int],
    global_batch: int,
    efficiency: float = DEFAULT_MATMUL_EFFICIENCY,
    fp8: bool = False,
    rank_by: Literal["throughput", "cost"] = "throughput",
    top: int | None = 10,
    include_unfit: bool = False,
    params: float | None = None,
    cp_values=(1,),
    tp_overlap: bool = False,
    split_only: bool = False,
    jitter_cv: float = 0.0,
    p2p: MeasuredP2P | None = None,
    recompute_style: str = DEFAULT_RECOMPUTE_STYLE,
    overlap: bool = True,
    slow_device: int | None = None,
    slow_factor: float = 1.0,
    zero_framework: str = "fsdp",
    grad_sync: str = "every-micro-step",
    attention_kernel: str = VENDOR_KERNEL,
    algorithm: str = "auto",
    p2p_overlap: bool = True,
    bucket_mib: float = DDP_BUCKET_BYTES / MIB_BYTES,
    loader_samples_per_s: float = np.inf,
    param_bytes_per_param: float = Setting.param_bytes_per_param,
    grad_bytes_per_param: float = Setting.grad_bytes_per_param,
    optimizer_bytes_per_param: float = Setting.optimizer_bytes_per_param,
    wire_bytes_per_param: float = Setting.wire_bytes_per_param,
    oom_micro_batch: int = 0,
    memory_margin: float = 0.0,
    peak_known: bool = True,
) -> RankedRows:
    """Rank every valid layout of ``shape`` on each of ``devices`` for ``global_batch``.

    Fitting layouts first, best first (highest samples/s, or fewest device-hours per sample
    with ``rank_by='cost'``; a tie to the one needing less memory); with ``include_unfit`` the
    layouts that do not fit follow, most memory-frugal first. Each row says why it loses to the
    best; ``by_count`` of the rows returned (``RankedRows``) holds the best on each count, or
    why it has none. ``cp_values``: context-parallel degrees to try; ``tp_overlap``: the framework
    overlaps tensor-parallel traffic; ``split_only``: only layouts that split the model
    (tp x pp x cp > 1; the "split the model" remedy); ``jitter_cv``: std/mean of a device's
    micro-step, for the waits at collectives;
    ``p2p``: measured send/recv inside a server for the pipeline sends (``measured_p2p``).
    ``recompute_style``: how the framework reruns the forward ('whole-forward' or 'early-stop'
    for full recompute, 'op-sac' for selective, ``layout.RECOMPUTE_STYLES``): applied to every
    layout of the recompute it changes, not searched, and named in each row. ``overlap``
    False: the framework does not overlap communication with compute (every layout's exchange
    exposed, docs/model.md §16); ``p2p_overlap`` False: the interleaved schedule's
    steady-state sends block (no Megatron-Core ``overlap_p2p_comm``, §15), named in each row;
    ``slow_device``, ``slow_factor``: global rank and compute-time multiplier of a persistently
    slow device (its stage and replica under each layout's placement, §16); ``zero_framework``:
    how the ZeRO layouts run ('fsdp': FSDP, ZeRO-1 as Megatron-Core's distributed optimizer; or
    'deepspeed'; ``Scenario.zero_framework``, docs/model.md §4); ``grad_sync``: when ZeRO-2/3
    reduce under accumulation ('every-micro-step' or 'once-per-step', FSDP's no_sync;
    ``Scenario.grad_sync``); ``attention_kernel``: the framework's fused attention kernel
    ('fused-vendor': cuDNN through Transformer Engine, FlashAttention-3; 'flash2': flash-attn 2,
    PyTorch SDPA's flash backend, Triton; ``presets.attention_efficiency_of``, §13);
    ``algorithm``: the data-parallel all-reduce ('auto', 'ring', 'tree', 'hierarchical':
    ``Scenario.algorithm``, ``collectives.ALGORITHMS``); ``bucket_mib``: DDP's gradient
    bucket, MiB (``Scenario.bucket_mib``; the ZeRO-0 layouts); ``loader_samples_per_s``: the
    input supply of one model replica's loader, samples/s (``predict.loader_supply`` of a
    profile's measured input pipeline; infinite: no stall). ``param_bytes_per_param``,
    ``grad_bytes_per_param``, ``optimizer_bytes_per_param``, ``wire_bytes_per_param``: the
    workload's bytes per parameter (``Workload`` fields), as ``scenario_setting`` gives
    predict's layouts them (memory and the data-parallel exchange). ``oom_micro_batch``: the
    smallest micro-batch a calibration of this model ran out of memory at, samples per
    micro-step (``profiles.measured_ceiling``; 0: none seen): the layouts whose device holds a
    whole replica (tp = pp = cp = 1) do not fit from it (``memory.under_measured_ceiling``).
    ``memory_margin``: the share of each device's memory kept free (0 to 0.5): a layout fits
    where it needs at most (1 - margin) x the device's (``memory.usable_memory_bytes``).
    ``peak_known`` False: ``hardware.peak_tflops`` stands in for a datasheet peak the device
    has none of (``Setting.peak_known``): the rows' MFU and HFU are None.
    ``rank_layouts`` does the same for a ``Setting`` (a scenario's: ``layout_predict.plan_at``).
    """
    check_number("matmul_efficiency", efficiency, "efficiency")
    check_number("slow_factor", slow_factor, "slow_factor", knobs=("slow_factor",))
    check_number("params", params, "params", optional=True)
    check_number("cv", jitter_cv, "jitter_cv")
    for name, value in (("param_bytes_per_param", param_bytes_per_param),
                        ("grad_bytes_per_param", grad_bytes_per_param),
                        ("optimizer_bytes_per_param", optimizer_bytes_per_param)):
        check_number("bytes_per_param", value, name)
    check_number("wire_bytes_per_param", wire_bytes_per_param, "wire_bytes_per_param")
    if oom_micro_batch != 0:  # 0: no out-of-memory micro-batch seen
        check_number("micro_batch", oom_micro_batch, "oom_micro_batch")
    if slow_device is not None and slow_device < 0:
        raise ScalesimError(f"slow_device {slow_device}: give a device rank of 0 or more",
                            knobs=("slow_device",))
    if zero_framework not in FRAMEWORKS:
        raise ScalesimError(f"zero_framework {zero_framework!r}: choose {' or '.join(FRAMEWORKS)}",
                            knobs=("zero_framework",))
    if grad_sync not in GRAD_SYNCS:
        raise ScalesimError(f"grad_sync {grad_sync!r}: choose {' or '.join(GRAD_SYNCS)}",
                            knobs=("grad_sync",))
    if grad_sync_refused(zero_framework, grad_sync):  # the scenario validator's knobs
        raise ScalesimError(grad_sync_deepspeed_error())
    check_number("bucket_mib", bucket_mib, "bucket_mib", knobs=("bucket_mib",))
    check_number("memory_margin", memory_margin, "memory_margin", knobs=("memory_margin",))
    if not loader_samples_per_s > 0:
        raise ScalesimError(
            f"loader_samples_per_s {loader_samples_per_s}: give a positive "
            "supply, samples/s (inf: no input stall)"
        )
    if algorithm not in coll.ALGORITHMS:
        raise ScalesimError(f"algorithm {algorithm!r}: choose {', '.join(coll.ALGORITHMS)}",
                            knobs=("algorithm",))
    attention_efficiency_of(hardware.device_name, attention_kernel)  # a known kernel
    setting = Setting(
        shape,
        hardware,
        global_batch,
        efficiency,
        fp8,
        params,
        tp_overlap,
        jitter_cv,
        p2p,
        recompute_style,
        overlap=overlap,
        p2p_overlap=p2p_overlap,
        slow_device=slow_device,
        slow_factor=slow_factor,
        framework=FRAMEWORKS[zero_framework],
        grad_sync=GRAD_SYNCS[grad_sync],
        attention_kernel=attention_kernel,
        algorithm=coll.ALGORITHMS[algorithm],
        bucket_bytes=bucket_mib * MIB_BYTES,
        loader_samples_per_s=float(loader_samples_per_s),
        param_bytes_per_param=param_bytes_per_param,
        grad_bytes_per_param=grad_bytes_per_param,
        optimizer_bytes_per_param=optimizer_bytes_per_param,
        wire_bytes_per_param=wire_bytes_per_param,
        oom_micro_batch=oom_micro_batch,
        memory_margin=memory_margin,
        peak_known=peak_known,
    )
    return rank_layouts(setting, devices, rank_by, top, include_unfit, cp_values, split_only)


def checked_devices(devices) -> list[int]:
    """The device counts a plan ranks layouts on, as ints: one or more, each within the bounds
    table's; else ScalesimError naming the devices knob."""
    devices = [int(n) for n in check_values("devices", devices, "devices", knobs=("devices",))]
    if not devices:
        raise ScalesimError("devices: give one or more device counts of 1 or more",
                            knobs=("devices",))
    return devices


def rank_layouts(
    setting: Setting,
    devices: list[int],
    rank_by: Literal["throughput", "cost"] = "throughput",
    top: int | None = 10,
    include_unfit: bool = False,
    cp_values=(1,),
    split_only: bool = False,
) -> RankedRows:
    """``plan`` for a ``Setting``: every valid layout on each of ``devices`` at the setting's
    global batch, evaluated in one ``evaluate_layouts`` call of ``setting_inputs``, ranked
    (the rows, and the best on each count: ``RankedRows.by_count``)."""
    global_batch, hardware = setting.global_batch, setting.hardware
    recompute_style = setting.recompute_style
    devices = checked_devices(devices)
    check_number("global_batch", global_batch, "global_batch", knobs=("global_batch",))
    cp_values = [int(c) for c in check_values("cp_degree", cp_values, "cp_values",
                                              knobs=("cp",))]
    if not cp_values:
        raise ScalesimError("cp_values: give one or more context-parallel degrees (1: none)",
                            knobs=("cp",))
    if top is not None and (isinstance(top, bool) or not isinstance(top, int | np.integer)
                            or top < 1):
        raise ScalesimError(f"top {top!r}: give a whole number of layouts to list, 1 or more "
                            "(None: every layout)")
    if rank_by not in ("throughput", "cost"):
        raise ScalesimError(f"rank_by '{rank_by}': use throughput or cost")
    g, nouns = hardware.devices_per_node, hardware_nouns(hardware)
    a = hardware.allocation_devices
    for n in devices:
        if a != g and (problem := count_problem(n, g, a, nouns)):  # trays of an NVL72 rack
            raise ScalesimError(problem)
        if not runs_on_count(n, g, a):
            raise ScalesimError(
                f"{nouns.devices} {n} do not fill whole {nouns.servers} of {g} {nouns.gpus}; give a "
                f"multiple of {g} above one {nouns.server}", knobs=("devices", "devices_per_node"))
    early_stop_of(recompute_style)  # a clear error for an unknown style
    grid = candidate_grid(sorted(set(devices)), setting, sorted(set(cp_values)))
    if split_only:
        grid = {k: v[grid["tp"] * grid["pp"] * grid["cp"] > 1] for k, v in grid.items()}
    if grid["dp"].size == 0:
        raise ScalesimError(no_layout_words(devices, setting, cp_values))
    r = evaluate_layouts(setting_inputs(setting, **grid))
    modelled = bool(np.all(np.isfinite(setting.loader_samples_per_s)))  # inf: none given
    devices_arr = grid["dp"] * grid["tp"] * grid["pp"] * grid["cp"]
    # whole instances: the hardware's shapes, else whole allocation units (trays of a rack)
    billed = billed_devices(devices_arr, g, job_sizes(None, hardware.instance_sizes, g,
                                                      allocation=hardware.allocation_devices))
    cost = billed / r.samples_per_s * 1e6 / 3600.0
    key = -r.samples_per_s if rank_by == "throughput" else cost
    fits = r.fits
    # a tie (GPipe and 1F1B have one bubble) goes to the layout needing less memory
    mem = r.memory_bytes
    order = np.lexsort((mem, key, ~fits)) if include_unfit else np.lexsort((mem[fits], key[fits]))
    first: list[PlanRow] = []  # the row ranked 1, once built
    dumped: list[dict] = []

    def best_dump() -> dict | None:
        """The first row as a dict, dumped once (every row below it is compared with it)."""
        if first and not dumped:
            dumped.append(first[0].model_dump())
        return dumped[0] if dumped else None

    schedule_names = {v: k for k, v in reversed(SCHEDULES.items())}  # the first name of each
    grid_fields = ("dp", "tp", "pp", "cp", "zero", "micro_batch", "schedule", "virtual_stages",
                   "recompute", "sequence_parallel", "shard_group")
    result_fields = ("step_time_s", "samples_per_s", "tokens_per_s", "memory_bytes",
                     "headroom_bytes", "fits", *PARTS, *(("mfu", "hfu") if setting.peak_known
                                                         else ()))

    def rows_of(indices, first_rank: int) -> list[PlanRow]:
        """The ``PlanRow`` of each grid row in ``indices``, ranked from ``first_rank`` on. Each
        column is gathered once as Python numbers (``tolist``: the values ``int``/``float`` of
        each element give), not element by element: ``plan --all`` builds 100,000 rows."""
        at = np.asarray(indices, dtype=np.intp)
        g_ = {k: grid[k][at].tolist() for k in grid_fields}
        r_ = {k: getattr(r, k)[at].tolist() for k in result_fields}
        devices_of, cost_of, billed_of = (devices_arr[at].tolist(), cost[at].tolist(),
                                          billed[at].tolist())
        out = []
        for j in range(at.size):
            dp, micro = g_["dp"][j], g_["micro_batch"][j]
            row = {
                "rank": first_rank + j,
                "devices": int(devices_of[j]),
                "dp": int(dp),
                "tp": int(g_["tp"][j]),
                "pp": int(g_["pp"][j]),
                "cp": int(g_["cp"][j]),
                "zero": int(g_["zero"][j]),
                "micro_batch": int(micro),
                "accumulation": int(global_batch // (dp * micro)),
                "schedule": schedule_names[g_["schedule"][j]],
                "virtual_stages": int(g_["virtual_stages"][j]),
                "recompute": RECOMPUTE_CHOICES[int(g_["recompute"][j])],
                "recompute_style": recompute_style,
                "sequence_parallel": bool(g_["sequence_parallel"][j]),
                "tp_overlap": setting.tp_overlap,
                "p2p_overlap": setting.p2p_overlap,
                "precision": FP8 if setting.fp8 else DEFAULT_PRECISION,
                "shard_group": int(g_["shard_group"][j]),
                "step_time_s": float(r_["step_time_s"][j]),
                "samples_per_s": float(r_["samples_per_s"][j]),
                "tokens_per_s": float(r_["tokens_per_s"][j]),
                "mfu": float(r_["mfu"][j]) if setting.peak_known else None,
                "hfu": float(r_["hfu"][j]) if setting.peak_known else None,
                "memory_bytes": float(r_["memory_bytes"][j]),
                "headroom_bytes": float(r_["headroom_bytes"][j]),
                "fits": bool(r_["fits"][j]),
                "breakdown_s": {p: float(r_[p][j]) for p in PARTS},
                "device_hours_per_million_samples": float(cost_of[j]),
                "billed_devices": int(billed_of[j]),
                "stall_modelled": modelled,
            }
            row["strategy_words"] = row_strategy_words(row, setting)
            # an unfit first row (include_unfit, nothing fits) is no "best": it says it does
            # not fit
            row["why"] = ("best" if row["rank"] == 1 and row["fits"] else
                          _why(best_dump(), row, rank_by, nouns.device, setting.memory_margin))
            row.update(stage_fields(setting.shape.layers, row["pp"], row["virtual_stages"]))
            out.append(PlanRow(**row))
            if row["rank"] == 1:
                first[:] = out[-1:]
        return out

    def row_of(i: int, rank: int) -> PlanRow:
        return rows_of([i], rank)[0]

    def least_memory(counts: list[int]) -> int:
        """The index of the layout needing least memory on ``counts``."""
        at = np.flatnonzero(np.isin(devices_arr, counts))
        return int(at[np.argmin(mem[at])])

    def nothing_fits(counts: list[int]) -> str:
        """``nothing_fits_words`` of the layout needing least memory on ``counts``: a count's
        note (one count), the plan's error (every count asked)."""
        from scalesim.layout_predict import row_title

        i = least_memory(counts)
        on = f", on {nouns.count(int(devices_arr[i]))}" if len(counts) > 1 else ""
        return nothing_fits_words(counts, row_title(row_of(i, 0)) + on, float(mem[i]),
                                  hardware.device_memory_bytes, nouns, setting.memory_margin)

    # the presets whose devices hold the layout needing least memory on every count asked
    # (evaluated there, when asked): ``RankedRows.presets_holding_least``, where it does not
    # fit here; the layout is kept, not the grid's arrays
    least = least_memory(sorted(set(devices)))
    holders = None if fits[least] else functools.partial(
        presets_holding_layout, setting, row_of(least, 0).layout(global_batch))
    if not include_unfit:
        order = np.flatnonzero(fits)[order]
        if order.size == 0:
            counts = sorted(set(devices))
            held = holders()
            raise ScalesimError(
                f"{nothing_fits(counts)}; every ZeRO stage, recompute and micro-batch was "
                f"tried: add {nouns.devices}, or {memory_ways(held, nouns)}",
                knobs=("devices", *((HARDWARE_KNOB,) if held else ())))
    if include_unfit:
        unfit = order[~fits[order]]
        order = np.concatenate([order[fits[order]], unfit[np.argsort(r.memory_bytes[unfit], kind="stable")]])
    rows = rows_of(order if top is None else order[:top], 1)
    by_count = []
    for n in sorted(set(devices)):
        at = np.flatnonzero(devices_arr == n)
        if at.size == 0:  # no valid layout on n devices (others have some)
            by_count.append(CountBest(n, None, no_layout_words([n], setting, cp_values)))
            continue
        fitting = np.flatnonzero((devices_arr[order] == n) & fits[order])
        if fitting.size:
            k = int(fitting[0])  # its place in the ranking of every count's layouts
            by_count.append(CountBest(n, rows[k] if k < len(rows) else row_of(order[k], k + 1)))
            continue
        by_count.append(CountBest(n, None, nothing_fits([n])))
    return RankedRows(rows, by_count, int(grid["dp"].size), holders)


def exhaustive_scalar(setting: Setting, devices: list[int], cp_values=(1,)) -> list[tuple]:
    """Every valid layout by plain loops and the scalar path: (layout, result) pairs.

    The reference the vectorised ``plan`` is tested and benchmarked against."""
    from scalesim.layout import layout_problems

    g, s = setting.hardware.devices_per_node, setting.shape
    out = []
    for n in sorted(set(devices)):
        for tp, cp, pp in itertools.product(range(1, g + 1), cp_values, range(1, n + 1)):
            if n % (tp * cp * pp):
                continue
            dp = n // (tp * cp * pp)
            for zero, mb, (sch, v), rec, sp in itertools.product(
                ZERO_CHOICES, MICRO_BATCHES, SCHEDULE_CHOICES, RECOMPUTE_CHOICES, (False, True)
            ):
                if (
                    setting.global_batch % (dp * mb)  # layout_problems' rule, checked first
                    or (sp and tp == 1)
                    or (zero and dp * cp == 1)
                    or (pp > 1 and zero >= (3 if setting.framework == FSDP else 2))
                ):
                    continue
                layout = ParallelLayout(
                    dp=dp,
                    tp=tp,
                    pp=pp,
                    cp=cp,
                    zero=zero,
                    micro_batch=mb,
                    global_batch=setting.global_batch,
                    schedule=sch,
                    virtual_stages=v,
                    recompute=rec,
                    recompute_style=setting.recompute_style,
                    sequence_parallel=sp,
                    tp_overlap=setting.tp_overlap,
                    p2p_overlap=setting.p2p_overlap,
                )
                if layout_problems(
                    layout, g, layers=s.layers, heads=s.heads, kv_heads=s.kv_of(), seq_len=s.seq_len,
                    allocation=setting.hardware.allocation_devices,
                ):
                    continue
                out.append((layout, evaluate_layout(setting, layout)))
                for hybrid in hybrid_shard_groups(dp * cp, tp, g):
                    if zero and setting.framework == FSDP:
                        shared = layout.model_copy(update={"shard_group": hybrid})
                        out.append((shared, evaluate_layout(setting, shared)))
    return out
