"""Predictions of a transformer workload split by a layout: the scenario path to ``evaluate_layouts``.

A scenario predicts through ``scalesim.model.layout_step.evaluate_layouts`` when its workload
carries a ``transformer`` shape; a workload that is a parameter count only keeps the
data-parallel step model (``scalesim.model.step``). Asking a parameter-count workload for tp or
pp > 1 is an error (there is nothing to split). ``uses_layouts`` is that rule, in one place. A
measured profile whose workload is a parameter count but whose curve timed a known transformer
(``profiles.measured_shape``) is split as that transformer (``split_profile``).

The scenario gives the layout: dp = devices / (tp x pp) (``Scenario.layout``), the ZeRO stage from
``strategy``, sequences per micro-batch per replica from ``micro_batch`` (weak scaling) or
``global_batch / (dp x accumulation)`` (strong scaling), micro-batches from ``accumulation``.

**How the two paths agree.** The profile's compute curve pins the layout model's sustained
matmul efficiency (``pinned_compute``): at each row's micro-batch, the unsplit model on one
device (tp = pp = 1, the workload's own recompute setting) computes one micro-step in exactly the
curve's time, slowed by the row's busy devices per server as the data-parallel path slows it
(``colocation_factor``). So at tp = pp = 1 the compute of both paths is the same measured
number; so is the optimizer step of a measured profile (``measured_optimizer_s``: the layout
model scales it to the parameters each device updates, which at tp = pp = 1 is the data-parallel
path's Ψ or Ψ/p; the memory-bound roofline where the curve is not measured); the data-parallel
/ ZeRO exchange is one function for both (``model/zero_exchange.py``, with the scenario's
``zero_framework`` and DDP buckets); they differ in memory (the shape's activations and 2 GiB
of framework buffers; the model states are sharded by the same rule, ``memory.state_shards``).
docs/model.md §22 gives the equations and the measured gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalesim.attention_kernel import ATTENTION_KERNELS, VENDOR_KERNEL, planner_kernel_of
from scalesim.billing import job_sizes
from scalesim.counts_left_out import (
    LeftOut,
    batch_left_out,
    flag_of,
    micro_batch_left_out,
    shard_group_left_out,
    split_left_out,
)
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import (
    KNOB,
    ScalesimError,
    as_literal,
    controls_named_of,
    in_words_of,
    joined,
    knobs_of,
    said_at,
)
from scalesim.figures import MIB_BYTES, count_list, either, whole
from scalesim.layout import (
    SCHEDULES,
    ZERO_STRATEGIES,
    ParallelLayout,
    dp_ranks,
    early_stop_of,
    knob_refusal,
    knob_value_refusal,
    layout_problems,
    model_split_template,
    model_split_words,
    op_sac_of,
    replica_devices,
    schedule_words,
    shard_group_problem,
    shard_group_refusal,
    split_words,
    unused_settings,
    valid_mask,
)
from scalesim.model.collectives import ALGORITHMS
from scalesim.model.compute import colocation_factor, colocation_slope, micro_step_s, optimizer_roofline_s
from scalesim.model.kept import Kept
from scalesim.model.layout_step import (
    LayoutInputs,
    LayoutResult,
    distinct_rows,
    evaluate_layouts,
    evaluate_together,
)
from scalesim.model.memory import DDP, optimizer_traffic_ratio
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.model.transformer import RECOMPUTE
from scalesim.plan import Setting, checked_devices, measured_p2p, rank_layouts, setting_inputs
from scalesim.precision import DEFAULT_PRECISION, FP8, FP8_WORDS, PUBLISHED_RUN, no_fp8_peak_words
from scalesim.predict import (
    _pick,
    inter_busbw_GBps_of,
    jitter_cv_of,
    loader_supply,
    nvls_busbw_ratio,
)
from scalesim.presets import attention_efficiency_of, attention_efficiency_source, attention_share
from scalesim.schemas import Hardware, Profile, Scenario, ScenarioLayout, Workload

ZERO_OF_STRATEGY = {name: zero for zero, name in enumerate(ZERO_STRATEGIES)}
NOMINAL_PEAK_FLOPS = 1e15  # stands in for an unknown peak: only peak x efficiency matters then
MIN_EFFICIENCY = 1e-6


def layout_of(scenario: Scenario) -> ScenarioLayout:
    """The scenario's model split (tp = pp = 1 when it gives none)."""
    return scenario.layout if scenario.layout is not None else ScenarioLayout()


def asked_split(scenario: Scenario, shard_group: bool = True) -> list[str]:
    """What the scenario's layout asks beyond data parallelism, in the user's words ('tp 2 x pp
    1', 'tp 1 x pp 1 x cp 2', 'sequence parallel', 'tp overlap', 'blocking pipeline sends', 'recompute full',
    'schedule gpipe', 'virtual stages 2', 'shard group 8'; not 'tp 1 x pp 1' for a
    recompute); empty: data parallel (the recompute style alone changes nothing to split).
    ``shard_group`` False leaves the shard group out: hybrid sharding splits no model, and the
    data-parallel path runs it too (docs/model.md §16)."""
    split = layout_of(scenario)
    asked = [words] if (words := model_split_words(None, split.tp, split.pp, split.cp)) else []
    asked += ["sequence parallel"] if split.sequence_parallel else []
    asked += ["tp overlap"] if split.tp_overlap else []
    asked += ["blocking pipeline sends"] if not split.p2p_overlap else []
    asked += [f"recompute {split.recompute}"] if split.recompute not in (None, "none") else []
    asked += [f"schedule {split.schedule}"] if split.schedule not in (None, "none") else []
    asked += [f"virtual stages {split.virtual_stages}"] if split.virtual_stages > 1 else []
    asked += ([f"shard group {split.shard_group}"] if split.shard_group is not None and shard_group
              else [])
    return asked


def uses_layouts(profile: Profile, scenario: Scenario) -> bool:
    """True when predictions go through ``evaluate_layouts`` (the workload has a transformer
    shape); ScalesimError when a split is asked of a workload without one (for a measured
    profile that records no shape: recalibrate, or give a workload with the shape). A shard
    group alone splits nothing: the data-parallel path shards over it (§16)."""
    if profile.workload.transformer is not None:
        return True
    if asked := asked_split(scenario, shard_group=False):
        raise ScalesimError(f"layout {', '.join(asked)}: {no_shape_words(profile)}",
                            knobs=asked_knobs(scenario))
    return False


def asked_knobs(scenario: Scenario) -> tuple[str, ...]:
    """The layout knobs ``asked_split`` reads set away from their defaults (the shard group
    left out, as there): what a refusal of a split without a transformer shape is about."""
    split, default = layout_of(scenario), ScenarioLayout()
    return tuple(f for f in ScenarioLayout.model_fields
                 if f != "shard_group" and getattr(split, f) != getattr(default, f))


def no_shape_words(profile: Profile) -> str:
    """Why ``profile``'s model cannot be split, and what to do, in one clause: for a profile
    diagnose fitted to runs or traces (its compute's ``source``), what diagnose takes."""
    from scalesim.fit_runs import RUNS_SOURCE
    from scalesim.trace_diagnosis import TRACE_SOURCE

    wl = profile.workload
    if profile.compute.source == RUNS_SOURCE:
        return knob_refusal(  # diagnose's inputs by their flags, the app's by its labels
            "the runs were fitted as a parameter count, with no transformer shape to split: "
            f"give {KNOB.workload} with their 'transformer' shape (a preset such as llama3-8b, "
            f"or a workload file) together with {KNOB.gpu}, the GPU they ran on")
    if profile.compute.source == TRACE_SOURCE:
        return knob_refusal(  # as above: the CLI's flags, the app's labels (but the command)
            "a trace gives the model as a parameter count, with no transformer shape to "
            f"split ({KNOB.workload} is not read with {KNOB.trace}): scalesim plan --workload with the "
            "model's transformer compares the split layouts")
    if profile.compute.measured:
        return (f"profile '{profile.name}' does not record the transformer its compute curve "
                f"timed (workload '{wl.name}' is a parameter count: a profile written before "
                "calibrate recorded the shape, or a model that declares none); recalibrate "
                "(scalesim calibrate --model gpt, or a --model factory whose make_batch declares "
                "'transformer') or give --workload with its 'transformer' shape")
    from scalesim.presets import TRANSFORMERS

    if wl.name in TRANSFORMERS:  # bert-large: the data-parallel preset; its shape splits in plan
        return (f"workload '{wl.name}' is a parameter count only and cannot be split (the "
                f"data-parallel preset); scalesim plan --workload {wl.name} splits the transformer "
                "preset of that name, or give a workload file with its 'transformer' shape "
                "(scalesim presets lists it), or drop the layout")
    return (f"workload '{wl.name}' is a parameter count only and cannot be split; give a "
            "workload with a 'transformer' shape (e.g. --workload llama3-8b) or drop the layout")


def splittable_shape(profile: Profile):
    """The transformer a split of ``profile``'s model splits (``schemas.TransformerShape``): its
    workload's shape, else the one its measured compute curve timed (``with_measured_shape``);
    None: a parameter count only."""
    if profile.workload.transformer is not None:
        return profile.workload.transformer
    return _timed_shape(profile)


def _timed_shape(profile: Profile):
    """``profiles.measured_shape`` where it counts the workload's parameters (the workload is
    the timed model, not a parameter count put in its place by ``--workload``); else None."""
    from scalesim.profiles import measured_shape
    from scalesim.schemas import PARAMS_TOLERANCE

    shape = measured_shape(profile)
    if shape is None or abs(profile.workload.params / shape.param_count() - 1) > PARAMS_TOLERANCE:
        return None
    return shape


def with_measured_shape(profile: Profile) -> Profile:
    """``profile`` predicting its own measured model as the transformer it is: the workload gets
    the shape its compute curve timed (``profiles.measured_shape``: calibrate's record, or the
    built-in gpt read back from an older profile's name), so that predictions go through
    ``evaluate_layouts`` with every micro-batch's efficiency pinned to the measured curve (at
    tp = pp = 1 its compute is that curve's). The optimizer step is the measured one scaled to
    the parameters each device updates (``measured_optimizer_s``; the memory-bound estimate
    where the curve was not measured); the note says which. Unchanged where the workload has a
    shape already or none is known."""
    from scalesim.profiles import device_bandwidth_GBps

    if profile.workload.transformer is not None or (shape := _timed_shape(profile)) is None:
        return profile
    wl = profile.workload.model_copy(update={"transformer": shape})
    where = ("recorded by calibrate" if profile.compute.model_shape is not None
             else "read back from its name")
    note = (f"model split: the transformer this profile timed ({where}: "
            f"{shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, sequence "
            f"{shape.seq_len}, vocabulary {shape.vocab}) with every layout's compute pinned to "
            "its measured curve (docs/model.md §22)")
    bandwidth = device_bandwidth_GBps(profile)
    if profile.compute.measured:
        note += (f"; optimizer step as measured ({profile.compute.optimizer_step_s * 1e3:.3g} ms "
                 f"for all {wl.params:,.0f} parameters), each device's x the parameters it "
                 "updates / all (docs/model.md §16)")
    elif bandwidth is not None:
        estimate = optimizer_roofline_s(wl.params, wl.param_bytes_per_param,
                                        wl.grad_bytes_per_param, wl.optimizer_bytes_per_param,
                                        bandwidth)
        note += (f"; optimizer step {float(estimate) * 1e3:.3g} ms, the memory-bound estimate at "
                 f"{bandwidth:.4g} GB/s (the curve was not measured)")
    return profile.model_copy(update={"workload": wl, "notes": [*profile.notes, note]})


def optimizer_measured(curve) -> bool:
    """Whether a ``ComputeCurve``'s optimizer step is a measurement: a measured curve, or one
    scaled from it to another sequence of the same model (``profiles.workload_compute``: not
    ``measured``, its ``model_shape`` the scaled one, the optimizer step x the parameter
    counts); presets and curves estimated from a shape are not."""
    return bool(curve.measured or curve.model_shape is not None)


def measured_optimizer_s(profile: Profile, per_node):
    """The profile's measured optimizer step of all its parameters on one device with
    ``per_node`` devices of its server busy, s (numpy, shaped as ``per_node``): the
    data-parallel path's (``ComputeCurve.alone`` x ``colocation_factor``), for the layout model
    to scale to the parameters each device updates (``LayoutInputs.optimizer_step_s``); NaN where
    the curve was not measured (``optimizer_measured``: presets, a curve estimated for another
    model take the memory-bound estimate)."""
    g = np.asarray(per_node, dtype=float)
    curve = profile.compute
    if not optimizer_measured(curve):
        return np.full(g.shape, np.nan)
    slope = colocation_slope(curve.colocation_slowdown, curve.colocated_devices)
    return curve.alone()[2] * colocation_factor(g, slope)


def split_profile(profile: Profile, scenario: Scenario, axes=()) -> Profile:
    """The profile a scenario predicts from: ``with_measured_shape`` where the scenario's layout
    (``asked_split``) or a sweep axis in ``axes`` (tp, pp, cp) splits the model of a workload that is
    a parameter count; else ``profile`` as it is (data parallel keeps the measured curve and
    optimizer step). A shard group alone splits nothing: the data-parallel path shards over it
    (§16), as it does for a swept shard group, so that hybrid and full sharding compare on one
    model. A kernel asked that the profile's timings cannot be swapped for (``kernel_refused``:
    their kernel not recorded, or one with no rate of its own) is refused
    (``check_attention_kernel``), and so is fp8 of timings at their own precision
    (``check_precision``)."""
    check_attention_kernel(profile, scenario.attention_kernel)
    check_precision(profile, scenario.precision)
    if profile.workload.transformer is None and (
            asked_split(scenario, shard_group=False) or any(a in ("tp", "pp", "cp") for a in axes)):
        return with_measured_shape(profile)
    return profile


@dataclass(frozen=True)
class LayoutRows:
    """Rows of a scenario through ``evaluate_layouts``: the result and the layout columns."""

    result: LayoutResult
    speedup: np.ndarray
    efficiency: np.ndarray
    devices: np.ndarray
    nodes: np.ndarray
    devices_per_node: np.ndarray
    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    micro_batch: np.ndarray  # sequences per micro-batch per replica
    accumulation: np.ndarray
    global_batch: np.ndarray
    matmul_efficiency: np.ndarray  # pinned share of the peak
    peak_known: bool
    one_device_fits: np.ndarray  # the one-device run speed-up is against fits in memory
    # one device holds the model: its run fits at one sample per micro-step (predict's
    # ``Prediction.one_device_holds_model``; ``one_device_fits`` where that fits already)
    one_device_holds_model: np.ndarray


def layout_hardware(profile: Profile) -> Hardware:
    """The profile's hardware as the layout model reads it: with a block calibration, the
    fitted byte rate for the layers' kernels (``kernel_bandwidth_GBps``, docs/model.md §13), as
    ``plan.calibrated_hardware`` gives ``scalesim plan --profile``; the optimizer keeps the
    device's memory bandwidth."""
    hw, mp = profile.hardware, profile.model_parallel
    if mp is None or hw.kernel_bandwidth_GBps is not None:
        return hw
    return hw.model_copy(update={"kernel_bandwidth_GBps": mp.memory_bandwidth_GBps})


def _peak_and_bandwidth(profile: Profile) -> tuple[float, bool, float]:
    from scalesim.profiles import device_bandwidth_GBps, device_peak_tflops

    hw = profile.hardware
    peak = hw.peak_tflops or device_peak_tflops(hw.device_name)
    bandwidth = device_bandwidth_GBps(profile)
    if bandwidth is None:
        raise ScalesimError(f"hardware '{hw.name}' has no memory_bandwidth_GBps and none is known "
                            f"for '{hw.device_name}'; a transformer layout needs it for "
                            "memory-bound work (on a CPU: calibrate with --block-hidden, whose "
                            "fit gives it)")
    if peak is None:
        return NOMINAL_PEAK_FLOPS, False, bandwidth
    return peak * 1e12, True, bandwidth


def scenario_hardware(hw: Hardware, scenario: Scenario) -> Hardware:
    """``hw`` as the layout model reads it for ``scenario``'s job: the scenario's links (an intra
    busbw override scales NVLS alike, ``predict.nvls_busbw_ratio``; the inter-server busbw the
    job's GPUs of each server reach, ``predict.inter_busbw_GBps_of``: fewer GPUs of a server
    reach fewer of its NICs), ``devices_per_node`` the GPUs the job uses per server, the
    instance shapes a cloud bills (the scenario's, else the hardware's, else its whole server:
    a job on 4 GPUs of an 8-GPU server still rents the server, docs/model.md §9, §18),
    contention and device spread; the allocation unit (``Hardware.devices_per_allocation``)
    the largest that divides the devices used per server. The one rule for
    ``scenario_setting`` (predict, the planner of a scenario) and ``scalesim plan
    --gpus-per-node``."""
    intra, inter = hw.intra_node, hw.inter_node
    intra_busbw = _pick(scenario.intra_busbw_GBps, intra.busbw_GBps)
    nvls = nvls_busbw_ratio(intra)
    links = {
        "intra_node": intra.model_copy(update={
            "busbw_GBps": intra_busbw,
            "latency_s": _pick(scenario.intra_latency_s, intra.latency_s),
            "allreduce_busbw_GBps": (intra.allreduce_busbw_GBps if np.isnan(nvls) or
                                     scenario.intra_busbw_GBps is None else nvls * intra_busbw)}),
        "inter_node": inter.model_copy(update={
            "busbw_GBps": inter_busbw_GBps_of(hw, scenario),
            "latency_s": _pick(scenario.inter_latency_s, inter.latency_s)}),
    }
    used = scenario.devices_per_node or hw.devices_per_node
    return hw.model_copy(update={
        **links, "devices_per_node": used,
        # the trays of the domain's devices the job uses (whole trays where it uses some)
        "devices_per_allocation": (None if hw.devices_per_allocation is None
                                   else hw.allocation_for(used)),
        # shapes checked against the larger of the hardware's server and the GPUs used on
        # each (--gpus-per-node 16: a 16-GPU shape fits), as training_time.resolve_goal does
        "instance_sizes": job_sizes(scenario.instance_sizes, hw.instance_sizes,
                                    hw.devices_per_node, used, hw.allocation_devices),
        "comm_compute_contention": _pick(scenario.comm_compute_contention,
                                         hw.comm_compute_contention),
        "device_speed_cv": _pick(scenario.device_speed_cv, hw.device_speed_cv)})


def scenario_setting(workload: Workload, hardware: Hardware, scenario: Scenario,
                     peak_flops: float, bandwidth_GBps: float, jitter_cv: float = 0.0, p2p=None,
                     global_batch: int = 1, attention_kernel: str | None = None,
                     peak_known: bool = True) -> Setting:
    """The run's constants (``plan.Setting``) of a scenario: the workload's shape, parameters and
    bytes per parameter; the hardware with the scenario's links (an intra busbw override scales
    NVLS alike, ``predict.nvls_busbw_ratio``), server size, contention and device spread;
    ``peak_flops`` (FLOP/s, ``NOMINAL_PEAK_FLOPS`` when unknown: ``peak_known`` False, the
    rows' MFU then None) and ``bandwidth_GBps``
    (efficiency 1: the compute pin, ``pinned_compute``, sets it per micro-batch later); the
    scenario's overlap, slow device, recompute style, tensor-parallel overlap (applied where
    tp > 1), pipeline-send overlap (applied where the schedule is interleaved) and precision
    (fp8: ``plan.Setting.fp8``); ``jitter_cv`` the
    step-to-step
    jitter (``predict.jitter_cv_of``: it lives in the profile, not the hardware); ``p2p`` the
    profile's measured send/recv inside a server (``plan.measured_p2p``; None: the intra link).
    The hardware is ``scenario_hardware``'s; ``attention_kernel`` the kernel the prediction runs
    (``kernel_for`` the profile and the scenario's kernel, never the scenario's field as it is:
    measured timings may run their own; None: the vendor kernel). The one place a scenario
    becomes the
    layout model's constants, for predictions (``base_inputs``) and the planner of a scenario
    (``plan_at``) alike."""
    wl = workload
    hardware = scenario_hardware(hardware, scenario).model_copy(update={
        "peak_tflops": peak_flops / 1e12, "memory_bandwidth_GBps": bandwidth_GBps})
    return Setting(
        wl.transformer, hardware, global_batch, 1.0, params=wl.params,
        jitter_cv=jitter_cv, p2p=p2p, recompute_style=layout_of(scenario).recompute_style,
        tp_overlap=layout_of(scenario).tp_overlap,
        p2p_overlap=layout_of(scenario).p2p_overlap,
        attention_kernel=attention_kernel or VENDOR_KERNEL,
        fp8=scenario.precision == FP8,
        overlap=scenario.overlap,
        slow_device=scenario.slow_device, slow_factor=scenario.slow_factor,
        param_bytes_per_param=wl.param_bytes_per_param,
        grad_bytes_per_param=wl.grad_bytes_per_param,
        optimizer_bytes_per_param=wl.optimizer_bytes_per_param,
        wire_bytes_per_param=wl.wire_bytes_per_param,
        reduce_bytes_per_param=wl.stated_reduce_bytes(),
        framework=FRAMEWORKS[scenario.zero_framework], grad_sync=GRAD_SYNCS[scenario.grad_sync],
        algorithm=ALGORITHMS[scenario.algorithm],
        bucket_bytes=scenario.bucket_mib * MIB_BYTES,
        first_bucket_bytes=scenario.first_bucket_mib * MIB_BYTES,
        memory_margin=scenario.memory_margin, peak_known=peak_known)


def base_inputs(workload: Workload, hardware: Hardware, scenario: Scenario, peak_flops: float,
                bandwidth_GBps: float, jitter_cv: float = 0.0, p2p=None,
                attention_kernel: str | None = None) -> LayoutInputs:
    """Every input but the layout and the efficiency (set later): ``plan.setting_inputs`` of
    ``scenario_setting`` (one device, unsplit, as placeholders)."""
    return setting_inputs(scenario_setting(workload, hardware, scenario, peak_flops,
                                           bandwidth_GBps, jitter_cv, p2p,
                                           attention_kernel=attention_kernel))


def timed_attention_family(profile: Profile) -> str | None:
    """The attention kernel family (``attention_kernel.TIMED_ATTENTION_FAMILIES``) that
    ``profile``'s calibration found its compute timings ran: the compute curve's, the timings
    the compute pin reads (``pin_attention_share``), where its calibration found one; else
    the block's (a curve that records none; another model's curve estimated with the block's
    efficiency, ``kernel_for_another_model``); None where none was found or recorded."""
    if profile.compute.attention_kernel is not None:
        return profile.compute.attention_kernel
    mp = profile.model_parallel
    return None if mp is None else mp.block.attention_kernel


def own_attention_kernel(profile: Profile) -> str:
    """The planner's kernel (``attention_kernel.ATTENTION_KERNELS``) that prices ``profile``'s
    compute timings: the one its calibration found them to run (``timed_attention_family``,
    ``attention_kernel.planner_kernel_of``), else the vendor kernel, as the presets' curves are
    estimated and as profiles that record no kernel are read."""
    return planner_kernel_of(timed_attention_family(profile))


def kernel_swappable(profile: Profile) -> bool:
    """Whether a prediction from ``profile`` may run another attention kernel than its
    timings ran: where it has no timings of its own (``timed_own_kernel``), or where their
    calibration found which kernel they ran and the planner prices that one as itself
    (``timed_attention_family`` flash2 or fused-vendor): the compute pin then reads the
    timings with that kernel's core (``pin_attention_share``) and the prediction runs the
    other's, so the swap changes the step by the attention core alone (docs/model.md §13)."""
    return not timed_own_kernel(profile) or timed_attention_family(profile) in ATTENTION_KERNELS


def kernel_for(profile: Profile, kernel: str | None) -> str:
    """The kernel a prediction from ``profile`` runs where ``kernel`` is asked (None: none
    asked, ``Scenario.attention_kernel``'s default): ``kernel`` where the profile may swap
    (``kernel_swappable``), else the profile's own (``own_attention_kernel``: the kernel its
    timings ran, the vendor kernel where none was recorded; another kernel is refused there,
    ``check_attention_kernel``)."""
    return kernel if kernel is not None and kernel_swappable(profile) else (
        own_attention_kernel(profile))


def kernel_for_another_model(profile: Profile) -> str:
    """The attention kernel the compute of another model than the one ``profile``'s curve
    timed is estimated at (``profiles.workload_compute``'s 'other': that model's compute from
    its shape), which predictions of it run where no kernel is asked: with a block calibration
    the block's (its fit, whose efficiency the estimate takes, read the core at that rate; the
    vendor kernel where the block recorded none); without one the kernel the profile's timings
    ran (``own_attention_kernel``: the stack that timed one model runs the other too; the
    estimated curve records it). A kernel asked of that model is ``kernel_for`` of the profile
    ``profiles.profile_with_workload`` gives, as predict and ``scalesim plan --profile`` ask
    it."""
    mp = profile.model_parallel
    if mp is None:
        return own_attention_kernel(profile)
    return planner_kernel_of(mp.block.attention_kernel)


def pin_attention_share(profile: Profile) -> float | None:
    """The attention core's own share of the 16-bit peak a compute curve is read at by
    ``pinned_compute``: its own kernel's (``own_attention_kernel``: the vendor kernel unless
    the calibration found another) on the profile's device for the workload's attention
    (``presets.attention_share``: the A100's 0.656 where it is fused, FlashAttention-2's 0.35
    on Hopper), None where the core runs at the matmuls' efficiency or the workload has none."""
    shape = profile.workload.transformer
    if shape is None:
        return None
    return attention_share(profile.hardware.device_name, own_attention_kernel(profile),
                           shape.flash_attention)


# The pin's evaluations (``_pin_compute_s``) kept by their inputs' contents: diagnose's remedies
# and their gain bands predict one workload on one device type about 200 times (two pins each;
# the BERT-large runs of benchmarks/diagnose_bands.py, 30 parameter draws), and the unsplit
# one-device micro-step they pin to is the same for all at one micro-batch.
_PIN_KEPT = Kept()


def _pin_compute_s(x: LayoutInputs) -> np.ndarray:
    """``evaluate_layouts(x).compute_s`` (read-only), evaluated once per distinct ``x``
    (``model.kept.Kept``)."""
    return _PIN_KEPT(evaluate_layouts, x).compute_s


def _pin_terms(profile: Profile, base: LayoutInputs, micro_batch, per_node):
    """(A, C, K, F, target, rate) of ``pinned_compute``: the unsplit model's micro-step on one
    device is ``A / efficiency + C / attention share + F`` at kernel rate ``rate`` GB/s (s; A
    the weight matmuls and C the attention core at the peak, F all else, of which K the
    kernels' bytes), and ``target`` the profile's compute-curve time it is pinned to (s, times
    the colocation slowdown of ``per_node``)."""
    wl, curve = profile.workload, profile.compute
    b = np.asarray(micro_batch, dtype=float)
    one = base.replace(dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=b, global_batch=b,
                       schedule=0, virtual_stages=1, sequence_parallel=False, device_cv=0.0,
                       jitter_cv=0.0, slow_factor=1.0, recompute_early_stop=False,
                       recompute_op_sac=False,
                       optimizer_step_s=np.nan,  # the pin's target has the estimate
                       fp8=False,  # the curve's precision: 16-bit, at the 16-bit peak
                       # one device's compute reads no link nor the overlap (§13): held, so
                       # pins that differ in them alone (diagnose's draws) are one evaluation
                       intra_latency_s=0.0, intra_busbw_GBps=1.0, inter_latency_s=0.0,
                       inter_busbw_GBps=1.0, overlap=True,
                       peak_flops_per_s=(base.peak_flops_per_s if base.peak16_flops_per_s is None
                                         else base.peak16_flops_per_s),
                       recompute=RECOMPUTE["full" if wl.activation_recompute else "none"])
    rate = np.asarray(base.memory_bandwidth_GBps if base.kernel_bandwidth_GBps is None
                      else base.kernel_bandwidth_GBps, dtype=float)
    # the four evaluations in one call, on a leading axis of its own (rows broadcast behind it);
    # the attention core at the matmuls' share in the first three (NaN), at 0.5 in the last
    axis = (4,) + (1,) * one.row_ndim()
    c1, c2, c3, c4 = _pin_compute_s(one.replace(
        efficiency=np.array([1.0, 0.5, 1.0, 1.0]).reshape(axis),
        attention_efficiency=np.array([np.nan, np.nan, np.nan, 0.5]).reshape(axis),
        kernel_bandwidth_GBps=np.array([1.0, 1.0, 2.0, 1.0]).reshape(axis) * rate))
    core = c4 - c1
    a = c2 - c1 - core
    kernel_s = 2 * (c1 - c3)
    fixed = c1 - a - core
    overhead_s, per_sample_s, _ = curve.alone()
    slope = colocation_slope(curve.colocation_slowdown, curve.colocated_devices)
    # the one-device DDP step's optimizer as both paths pay it: the estimate x the framework's
    # sweep over the model's (PyTorch DDP's fp32 weights: memory.optimizer_traffic_ratio, §4)
    target = (micro_step_s(b, overhead_s, per_sample_s) * colocation_factor(per_node, slope)
              + optimizer_roofline_s(wl.params, wl.param_bytes_per_param,
                                     wl.grad_bytes_per_param, wl.optimizer_bytes_per_param,
                                     base.memory_bandwidth_GBps)
              * optimizer_traffic_ratio(DDP, base.framework, base.param_bytes_per_param,
                                        base.grad_bytes_per_param, base.optimizer_bytes_per_param,
                                        base.reduce_bytes_per_param, ranks=1))
    return a, core, kernel_s, fixed, target, rate


def pinned_compute(profile: Profile, base: LayoutInputs, micro_batch, per_node):
    """(sustained matmul share of the peak, kernel byte rate in GB/s) at which the unsplit
    model on one device computes a micro-step of ``micro_batch`` sequences in the profile's
    compute-curve time (times the colocation slowdown of ``per_node`` busy devices). The
    model's compute is ``A / efficiency + C / min(s, efficiency) + K / kernel_rate + R``
    (additive roofline; the attention core C at the curve's kernel's own share s of the peak
    where the device has one, ``presets.attention_efficiency_of``, else at the matmuls'), so
    four evaluations give A, C, K and the rest R exactly. The efficiency is solved with the
    kernel rate kept, clipped to (0, 1], on the side of s the curve lies (above s where the
    curve is faster than the step at efficiency s, the core then at s); where even efficiency 1
    cannot reach the curve because the kernels' bytes alone take longer than it (the byte rate
    a block fit found on a CPU is below what a smaller model's cache-resident tensors reach),
    the kernel rate rises until they fit in what is left, so the curve is still reproduced; a
    curve faster than the matmuls at the peak keeps 1 and the rate. A recomputing workload's
    curve is read as whole-forward recompute (the 4/3 convention), whatever the scenario's
    recompute style, so that style changes the prediction by what it skips (docs/model.md
    §22). The curve is read as run with its own attention kernel (``pin_attention_share``: the
    one its calibration found, else the vendor kernel, as the presets' curves are estimated),
    so that another kernel (``Scenario.attention_kernel``; refused where the curve's kernel
    was not recorded, ``check_attention_kernel``) changes the prediction by its attention core
    alone (§13); and as run in 16 bits, so that fp8 (``Scenario.precision``, refused where
    the curve was measured, ``check_precision``) runs the layers' matmuls at the fp8 peak at
    the same share of it, with their casts (§13, fp8)."""
    a, core, kernel_s, fixed, target, rate = _pin_terms(profile, base, micro_batch, per_node)
    share = pin_attention_share(profile)
    if share is None:  # the core at the matmuls' share: one term with them
        a, core = a + core, 0.0 * core
    else:  # above the share the core runs at it (a fixed time); below, at the matmuls' share
        above = target < (a + core) / share + fixed
        fixed = np.where(above, fixed + core / share, fixed)
        a = np.where(above, a, a + core)
    room = target - fixed  # the efficiency is solved with the kernel rate kept
    eff = np.where(room > a, a / np.where(room > 0, room, 1.0), 1.0)
    left = room - a + kernel_s  # what the kernels' bytes may take at efficiency 1
    faster = (room <= a) & (left > 0) & (kernel_s > 0)
    rate = np.where(faster, rate * kernel_s / np.where(faster, left, 1.0), rate)
    return np.clip(eff, MIN_EFFICIENCY, 1.0), rate


def curve_beyond_peak(profile: Profile, scenario: Scenario,
                      micro_batch: float) -> tuple[float, float, float]:
    """(s the workload shape's matmuls take at the device's datasheet peak; s the fastest the
    compute pin can run them: the same with the attention core at its kernel's own share of
    the peak where the device has one (``pin_attention_share``: an A100's 0.656), else the
    first; both NaN where no peak is listed; s of the profile's compute-curve micro-step,
    forward and backward) for one device running the unsplit model at ``micro_batch``
    sequences. A curve faster than the second was not timed on this shape and device:
    ``pinned_compute`` would hold efficiency 1 there, slower than the curve, and every
    prediction from it would be slower than what was measured."""
    wl, hw = profile.workload, layout_hardware(profile)
    peak, peak_known, bandwidth = _peak_and_bandwidth(profile)
    base = base_inputs(wl, hw, scenario, peak, bandwidth,
                       attention_kernel=kernel_for(profile, scenario.attention_kernel))
    a, core = _pin_terms(profile, base, float(micro_batch), 1)[:2]
    share = pin_attention_share(profile) or 1.0
    overhead_s, per_sample_s, _ = profile.compute.alone()
    nan = float("nan")
    return (float(a + core) if peak_known else nan,
            float(a + core / share) if peak_known else nan,
            float(micro_step_s(float(micro_batch), overhead_s, per_sample_s)))


def check_rows(profile: Profile, dp, tp, pp, micro, global_batch, schedule, virtual_stages,
               g: int, cp=1, allocation: int | None = None,
               sequence_parallel=False) -> np.ndarray:
    """True where the layout is valid (``scalesim.layout`` rules), numpy; ``allocation``: the
    devices of the job's allocation unit (``predict.job_unit``; None: the server's ``g``)."""
    s = profile.workload.transformer
    return valid_mask(dp, tp, pp, cp, micro, global_batch, schedule, virtual_stages, g,
                      s.layers, s.heads, s.kv_of(), s.seq_len, allocation, sequence_parallel)


def first_problem(profile: Profile, dp, tp, pp, zero, micro, global_batch, split: ScenarioLayout,
                  schedule: str, g: int, cp=1, allocation: int | None = None) -> str:
    """The first rule one layout breaks, in words (``layout.layout_problems``; ``allocation``
    as ``check_rows``')."""
    s = profile.workload.transformer
    layout = ParallelLayout(dp=int(dp), tp=int(tp), pp=int(pp), cp=int(cp), zero=int(zero),
                            micro_batch=int(micro), global_batch=int(global_batch),
                            schedule=schedule, virtual_stages=split.virtual_stages,
                            recompute=split.recompute or "none",
                            recompute_style=split.recompute_style,
                            sequence_parallel=split.sequence_parallel)
    problems = layout_problems(layout, g, layers=s.layers, heads=s.heads, kv_heads=s.kv_of(),
                               seq_len=s.seq_len, nouns=hardware_nouns(profile.hardware),
                               allocation=allocation)
    return problems[0] if problems else ""


def runnable_multiples(n: int, m: int, unit: int | None = None) -> tuple[int, int]:
    """(the largest, the smallest) multiple of ``m`` at or below and at or above ``n`` device
    count that runs on allocation units of ``unit`` devices (``layout.runs_on_count``: part of
    one unit, or whole units; None: any multiple); 0 where none is at or below ``n``. Pipeline
    stages 3 on servers of 8, near 64: 48 and 72 (multiples of 24), not 63 and 66."""
    below, above = n // m * m, -(-n // m) * m
    if unit is None:
        return below, above
    whole_units = math.lcm(m, unit)
    return (max(n // whole_units * whole_units, min(n, unit) // m * m),
            min((-(-n // whole_units) * whole_units, *((above,) if above <= unit else ()))))


def split_devices(devices, tp, pp, nouns: Nouns = GPU_NOUNS, cp=1, unit: int | None = None):
    """dp of each row; ScalesimError where tp x pp (x cp where cp > 1) does not divide the
    devices (``nouns``: the profile's, 'processes 3 are not divisible' on CPU), naming every
    count of the first row's split that it does not divide: 'devices 8 and 24 are not divisible
    by tp x pp = 16; give device counts that are multiples of it (16 or 32), or a tp x pp that
    divides 8' (the multiples of it nearest the smallest and the largest count that run on the
    job's allocation ``unit``, ``runnable_multiples``; 8: their gcd, offered where it is 2 or
    more; the counts cut past six, as ``figures.count_list`` writes them)."""
    p = np.asarray(devices, dtype=np.int64)
    model = replica_devices(np.asarray(tp, dtype=np.int64), np.asarray(pp, dtype=np.int64),
                            np.asarray(cp, dtype=np.int64))
    bad = p % model != 0
    if np.any(bad):
        pb, mb, cb = (a.ravel() for a in np.broadcast_arrays(p, model, np.asarray(cp)))
        rows = np.flatnonzero(np.broadcast_to(bad, pb.shape).ravel())
        i = int(rows[0])
        m, c = int(mb[i]), int(cb[i])
        t, s = (int(np.broadcast_to(np.asarray(a), bad.shape).ravel()[i]) for a in (tp, pp))
        what = "tp x pp x cp" if c > 1 else "tp x pp"
        counts = sorted({int(pb[j]) for j in rows if int(mb[j]) == m and int(cb[j]) == c})
        ends = (counts[0], counts[-1])  # the smallest and the largest count's nearest
        near = sorted({x for n in ends for x in runnable_multiples(n, m, unit) if x})
        common = math.gcd(*counts)  # offered where it is 2 or more, as the note offers it

        def line(split: str, fix: str) -> str:
            return (f"{nouns.devices} {count_list(counts)} are not divisible by {split} = "
                    f"{whole(m)}; give {nouns.device} counts that are multiples of it "
                    f"({either(near)})" + (f", or {fix} {whole(common)}" if common >= 2 else ""))

        # a template (``knob_refusal``): the page names its controls and their values once
        # ('Tensor parallel 1 x Pipeline stages 3 = 3'); the CLI keeps its notation
        said = model_split_template(t, s, c if c > 1 else None)
        raise ScalesimError(knob_refusal(
            line(said, "a split whose product divides"),
            ("devices", "tp", "pp", *(("cp",) if c > 1 else ())),
            cli=line(what, f"a {what} that divides")))
    return p // model


def shard_group_problems(shard_group, dp, zero, framework, cp=1) -> np.ndarray:
    """Why each row's shard group cannot run, '' where it can (arrays broadcast; a row's shard
    group None or 0: full sharding): a ZeRO 0 row, a DeepSpeed row, or one whose dp x cp it
    does not divide (``layout.shard_group_refusal``, ``layout.shard_group_problem``).
    ``framework``: a name ("fsdp", "deepspeed"), names, or codes (``sharding.FRAMEWORKS``).
    Each distinct combination is judged once."""
    names = {code: name for name, code in FRAMEWORKS.items()}
    f = np.asarray(framework)
    f = np.vectorize(names.get, otypes=[object])(f) if f.dtype.kind in "iu" else f.astype(str)
    s, d, z, f, c = np.broadcast_arrays(np.asarray(shard_group, dtype=object), np.asarray(dp),
                                        np.asarray(zero), f, np.asarray(cp))
    keys = [(None if not s.flat[i] else int(s.flat[i]), int(d.flat[i]), int(z.flat[i]),
             str(f.flat[i]), int(c.flat[i])) for i in range(s.size)]
    judged = {key: (shard_group_refusal(key[0], ZERO_STRATEGIES[key[2]], key[3])
                    or shard_group_problem(key[0], key[1], key[4])) for key in set(keys)}
    return np.array([judged[key] for key in keys], dtype=object).reshape(s.shape)


COUNT_RULES = ("split", "global_batch", "micro_batch", "shard_group")  # the one order of checks


def counts_that_run(profile: Profile, scenario: Scenario, skip=(), which: str = "",
                    named=flag_of, refuse=COUNT_RULES) -> tuple[list[int], list[str]]:
    """(the scenario's device counts that its one-value settings run, the notes naming those
    left out: ``counts_left_out``); the one function that decides it, for predict, sweep and
    the app. A count that fills no whole servers, then a tp past a server, are refused first.
    Each rule of ``COUNT_RULES`` judges the counts the one before kept: tp x pp x cp dividing
    the count, the fixed global batch splitting over dp x accumulation into micro-batches no
    larger than the bounds table's, the shard group dividing dp x cp. Where the rules leave no
    count, a rule of ``refuse`` that leaves the last out is refused in one line
    (``count_refusal``); any other returns every count and no note (a sweep's rows, dropped by
    its own checks; a shard group beside ddp rows). A shard group that runs at no count (DDP,
    a group of 1, DeepSpeed) is no rule here: predict refuses it in its layout's words.
    ``skip``: rules whose setting a sweep varies; ``which``: the shard group's rows where
    others run at its counts ('ZeRO '); ``named``: a knob's name in a fix (the CLI flag; the
    app's control label)."""
    judged = _judged_counts(profile, scenario, skip, which, named, refuse)
    if judged.last is None:
        return judged.counts, judged.notes
    if judged.last in refuse:
        raise count_refusal(profile, scenario, judged.outs, judged.on_layouts, named)
    return list(scenario.devices), []


def counts_left_out_by_rule(profile: Profile, scenario: Scenario, skip=(),
                            which: str = "") -> dict[str, tuple[int, ...]]:
    """Each rule of ``COUNT_RULES`` whose note ``counts_that_run`` gives (same arguments, no
    refusal) -> the device counts that note names; {} where no note is given (every count
    kept, or none: a sweep drops and counts those rows itself)."""
    judged = _judged_counts(profile, scenario, skip, which, refuse=())
    if judged.last is not None:
        return {}
    return {rule: out.counts for rule, out in judged.outs.items()}


def every_count_runs(profile: Profile, scenario: Scenario) -> None:
    """``predict.predict``'s refusal, as a library, of a list with any device count that
    cannot run: where a rule of ``COUNT_RULES`` leaves out a count (the rules, their order and
    the line are ``counts_that_run``'s: whole servers, then a tp past a server, then the first
    rule's check naming every count it leaves out and each other count with its rule's reason,
    ``count_refusal``), so predict's line is the one predict's CLI, sweep and the app give for
    the same what-if where no count runs."""
    judged = _judged_counts(profile, scenario)
    if judged.outs:
        raise count_refusal(profile, scenario, judged.outs, judged.on_layouts)


@dataclass(frozen=True)
class _Judged:
    """One pass of ``COUNT_RULES`` over a list (``_judged_counts``): the counts every rule
    keeps, the notes of those left out, each rule's ``LeftOut`` that leaves some out (in order),
    the rule that left the last count out (None where some run) and whether the counts run on
    the layout path."""

    counts: list[int]
    notes: list[str]
    outs: dict[str, LeftOut]
    last: str | None
    on_layouts: bool


def _judged_counts(profile: Profile, scenario: Scenario, skip=(), which: str = "",
                   named=flag_of, refuse=COUNT_RULES) -> _Judged:
    """``COUNT_RULES`` over the scenario's counts, each judging those the one before kept, up
    to the rule that leaves none (``counts_that_run``'s arguments); whole servers and a tp past
    or not dividing a server (``layout.tp_server_refusal``, where ``refuse`` holds the split and
    ``skip`` does not) refused first."""
    from scalesim.layout import shape_heads, tp_server_refusal
    from scalesim.predict import job_unit, layout

    nouns = hardware_nouns(profile.hardware)
    g, unit = job_unit(profile.hardware, scenario)
    layout(scenario.devices, g, nouns, unit)
    split = layout_of(scenario)
    on_layouts = uses_layouts(split_profile(profile, scenario), scenario)
    if on_layouts and "split" in set(refuse) - set(skip) and (why := tp_server_refusal(
            split.tp, g, nouns, profile.hardware.devices_per_node,
            **shape_heads(profile.workload.transformer))):
        raise ScalesimError(why)  # at every count
    model = replica_devices(split.tp, split.pp, split.cp) if on_layouts else 1
    cp = split.cp if on_layouts else 1  # the data-parallel path: every device a rank
    group = split.shard_group
    if group is not None and shard_group_refusal(group, scenario.strategy,
                                                 scenario.zero_framework):
        group = None  # predict refuses it at every count
    gb, k = scenario.global_batch, scenario.accumulation
    rules = {
        "split": lambda ps: split_left_out(model, ps, nouns.devices, cp > 1,
                                           (split.tp, split.pp, split.cp)),
        "global_batch": lambda ps: LeftOut() if gb is None else batch_left_out(
            gb, k, {p: p // model for p in ps}, nouns.devices, on_layouts),
        "micro_batch": lambda ps: LeftOut() if gb is None else micro_batch_left_out(
            gb, k, {p: p // model for p in ps}, nouns.devices, on_layouts),
        "shard_group": lambda ps: LeftOut() if group is None else shard_group_left_out(
            group, {p: (p // model, cp) for p in ps}, nouns.devices, which),
    }
    counts, notes, outs = list(scenario.devices), [], {}
    for name in COUNT_RULES:
        out = LeftOut() if name in skip else rules[name](counts)
        if out.counts:
            outs[name] = out
        if len(out.counts) == len(counts):
            return _Judged([], notes, outs, name, on_layouts)
        counts = [p for p in counts if p not in out.counts]
        # a template (``counts_left_out``): the CLI's line, in ``named``'s words where the
        # caller names the knobs its own way (the app's controls)
        notes += [out.note if named is flag_of else in_words_of(out.note, named)
                  ] if out.note else []
    return _Judged(counts, notes, outs, None, on_layouts)


def count_refusal(profile: Profile, scenario: Scenario, outs: dict[str, LeftOut],
                  on_layouts: bool, named=flag_of) -> ScalesimError:
    """The one line refusing a device list no count of which runs (``counts_that_run``):
    predict's refusal of the first rule that leaves out a count (``outs``: each rule's
    ``LeftOut``, in ``COUNT_RULES`` order; that rule judged every count, so its check names
    the counts it leaves out: ``split_devices``, ``predict.micro_batches``,
    ``check_shard_group``), then every other count with its rule's reason: '...; at 32
    devices, global batch 3 does not split evenly over dp x accumulation 2'."""
    from scalesim.predict import job_unit, micro_batches

    nouns = hardware_nouns(profile.hardware)
    split = layout_of(scenario)
    p = np.asarray(scenario.devices, dtype=np.int64)
    model = replica_devices(split.tp, split.pp, split.cp) if on_layouts else 1
    cp = split.cp if on_layouts else 1
    _, unit = job_unit(profile.hardware, scenario)
    checks = {
        "split": lambda: split_devices(p, split.tp, split.pp, nouns, split.cp, unit),
        "global_batch": lambda: micro_batches(scenario, profile, p,
                                              p // model if on_layouts else None, named),
        "shard_group": lambda: check_shard_group(split.shard_group, p, p // model,
                                                 ZERO_OF_STRATEGY[scenario.strategy],
                                                 scenario.zero_framework, nouns, cp),
    }
    checks["micro_batch"] = checks["global_batch"]
    first, *rest = outs
    try:
        checks[first]()
    except ScalesimError as exc:
        refused = exc
    else:  # its check passes where its rule left every count it judged out: the rule's note
        refused = ScalesimError(outs[first].note, knobs=outs[first].knobs)
    # each other rule's reason a template (``counts_left_out``), kept (``errors.joined``): the
    # page names its controls in them as in the first's line
    also = joined("", [part for r in rest for part in (
        f"; at {count_list(outs[r].counts)} "
        f"{nouns.device if list(outs[r].counts) == [1] else nouns.devices}, ", outs[r].why)])
    return ScalesimError(joined("", (refused, also)), knobs=dict.fromkeys(
        (*knobs_of(refused), *(k for r in rest for k in outs[r].knobs))),
        controls_named=controls_named_of(refused))


def runnable_counts(profile: Profile, scenario: Scenario) -> tuple[Scenario, list[str]]:
    """(``scenario`` with only the device counts it runs, the notes naming the rest):
    ``counts_that_run``, for predict (a list none of whose counts runs: its refusal)."""
    counts, notes = counts_that_run(profile, scenario)
    return (scenario.model_copy(update={"devices": counts}) if notes else scenario), notes


def check_shard_group(shard_group: int | None, devices, dp, zero, framework,
                      nouns: Nouns = GPU_NOUNS, cp=1) -> None:
    """ScalesimError in one line where the shard group cannot run at some row (arrays
    broadcast; ``shard_group_problems``; 'at 4 processes, ...' for a CPU profile's ``nouns``):
    the first row's reason at its count (``errors.said_at``), or where the group does not
    divide the dp x cp of several counts asked, every one of them ('shard group 16 does not
    divide dp 24 or 40; give a divisor of each (e.g. 8), or drop it: full sharding (at 24 and 40
    devices)')."""
    if shard_group is None:
        return
    why = shard_group_problems(shard_group, dp, zero, framework, cp)
    bad = np.flatnonzero(why.ravel() != "")
    if not bad.size:
        return
    p = np.broadcast_to(np.asarray(devices), why.shape).ravel()
    first = why.ravel()[bad[0]]
    d, c = (np.broadcast_to(np.asarray(a), why.shape).ravel() for a in (dp, cp))
    sizes = {int(p[i]): (int(d[i]), int(c[i])) for i in bad
             if shard_group_problem(shard_group, int(d[i]), int(c[i]))}
    if len(sizes) < 2 or not shard_group_problem(shard_group, int(d[bad[0]]), int(c[bad[0]])):
        raise ScalesimError(said_at(nouns.count(int(p[bad[0]])), first))
    with_cp = any(k > 1 for _, k in sizes.values())
    group = "dp x cp" if with_cp else "dp"
    ranks = list(dict.fromkeys(a * b for a, b in sizes.values()))
    common = math.gcd(*ranks)
    offer = f"give a divisor of each (e.g. {common}), or " if common >= 2 else ""
    rest = as_literal(f"; {offer}drop it: full sharding (at {count_list(sorted(sizes), None)} "
                      f"{nouns.devices})")
    # a template (``knob_refusal``): the page names its Shard group control and dp (no
    # control) in words, as ``layout.shard_group_problem``; the CLI keeps its line
    raise ScalesimError(knob_refusal(
        f"{KNOB.shard_group} {shard_group} does not divide the "
        f"{dp_ranks(either(ranks), with_cp)}{rest}", ("shard_group",),
        cli=f"shard group {shard_group} does not divide {group} {either(ranks)}{rest}"))


def _one_sample_fits(base: LayoutInputs, k, supply, fits_of) -> np.ndarray:
    """``fits_of(inputs, accumulation, loader supply)`` (the one-device run at one sample per
    micro-step, ``evaluate_rows``) of each row of ``base``, evaluated once per distinct row
    (``distinct_rows``: a sweep's rows differ in their splits, which that run has none of)."""
    distinct = distinct_rows(base, k, supply)
    if distinct is None:
        return fits_of(base, np.asarray(k), supply)
    inputs, (k1, supply1), row, shape = distinct
    return np.broadcast_to(fits_of(inputs, k1, supply1), k1.shape)[row].reshape(shape)


def evaluate_rows(profile: Profile, scenario: Scenario, devices, micro_batch, accumulation,
                  base_micro_batch, tp=None, pp=None, zero=None, shard_group=None,
                  overrides: dict | None = None, cp=None) -> LayoutRows:
    """Every row (arrays broadcast) through ``evaluate_layouts``, with speed-up and efficiency
    against one device running the unsplit model at ``base_micro_batch``. Rows must be valid
    layouts (``check_rows``). ``overrides``: ``LayoutInputs`` fields that replace the
    scenario's values (a sweep's axes, ``sweep.input_changes``: framework, algorithm, overlap,
    bucket_bytes, link bandwidths, jitter_cv). ``shard_group``: each row's (a sweep axis; rows
    the caller has checked), instead of the scenario's; ``tp``, ``pp``, ``cp``, ``zero`` the
    same (None: the scenario's)."""
    split = layout_of(scenario)
    wl, hw = profile.workload, layout_hardware(profile)
    g_max = scenario.devices_per_node or hw.devices_per_node
    tp = split.tp if tp is None else tp
    pp = split.pp if pp is None else pp
    cp = split.cp if cp is None else cp
    zero = ZERO_OF_STRATEGY[scenario.strategy] if zero is None else zero
    p = np.asarray(devices, dtype=np.int64)
    dp = split_devices(p, tp, pp, hardware_nouns(profile.hardware), cp)
    if shard_group is None:
        check_shard_group(split.shard_group, p, dp, zero,  # a sweep's framework axis per row
                          (overrides or {}).get("framework", scenario.zero_framework),
                          hardware_nouns(profile.hardware), cp)
        shard_group = split.shard_group or 0
    k = np.asarray(accumulation, dtype=np.int64)
    b = np.asarray(micro_batch, dtype=np.int64)
    gb = dp * b * k
    per_node = np.minimum(p, g_max)
    nodes = -(-p // per_node)
    peak, peak_known, bandwidth = _peak_and_bandwidth(profile)
    base = base_inputs(wl, hw, scenario, peak, bandwidth, jitter_cv_of(profile, scenario),
                       measured_p2p(profile),
                       attention_kernel=kernel_for(profile, scenario.attention_kernel)
                       ).replace(devices_per_node=g_max,
                                 oom_micro_batch=profile.compute.oom_micro_batch or 0,
                                 fetch_s=profile.compute.fetch_s,
                                 **(overrides or {}))
    supply, supply_alone = loader_supply(profile, scenario, per_node)  # one loader per replica
    # the schedule (default 1f1b / interleaved) where a row pipelines; none at pp 1, where a
    # given one (a sweep's --schedule beside --pp-values 1,4) runs nothing, as virtual stages
    schedule = np.where(np.asarray(pp) > 1, SCHEDULES[split.schedule or (
        "interleaved" if split.virtual_stages > 1 else "1f1b")], SCHEDULES["none"])
    virtual = np.where(np.asarray(pp) > 1, split.virtual_stages, 1)
    eff, kernel_rate = pinned_compute(profile, base, b, per_node)
    recompute = RECOMPUTE[split.recompute_of(wl)]
    early_stop = split.stops_early(wl)
    op_sac = split.saves_per_op(wl)
    x = base.replace(dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, micro_batch=b, global_batch=gb,
                     schedule=schedule, virtual_stages=virtual, recompute=recompute,
                     recompute_early_stop=early_stop, recompute_op_sac=op_sac,
                     sequence_parallel=split.sequence_parallel & (np.asarray(tp) > 1),
                     shard_group=shard_group, efficiency=eff, kernel_bandwidth_GBps=kernel_rate,
                     optimizer_step_s=measured_optimizer_s(profile, per_node),
                     per_step_s=profile.compute.per_step_s,
                     loader_samples_per_s=supply)
    base_b = np.asarray(base_micro_batch, dtype=np.int64)

    def one_device(inputs, k, b1, supply):  # the unsplit model on one device, b1 a micro-step
        return inputs.replace(dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=b1, global_batch=b1 * k,
                              schedule=0, virtual_stages=1, recompute=recompute,
                              recompute_early_stop=early_stop, recompute_op_sac=op_sac,
                              sequence_parallel=False, device_cv=0.0, jitter_cv=0.0,
                              slow_factor=1.0, devices_per_node=1,
                              optimizer_step_s=measured_optimizer_s(profile, 1),
                              per_step_s=profile.compute.per_step_s,
                              **dict(zip(("efficiency", "kernel_bandwidth_GBps"),
                                         pinned_compute(profile, inputs, b1, 1), strict=True)),
                              loader_samples_per_s=supply)

    result, one = evaluate_together([x, one_device(base, k, base_b, supply_alone)])  # at once
    holds = one.fits  # and where some baseline does not fit: the model, at one sample?
    if (~np.asarray(one.fits) & (base_b > 1)).any():
        holds = _one_sample_fits(base, k, supply_alone, lambda inputs, k1, supply: (
            evaluate_layouts(one_device(inputs, k1, np.ones_like(k1), supply)).fits))
    speedup = result.samples_per_s / one.samples_per_s
    shape = result.step_time_s.shape

    def full(v, dtype=np.int64):
        return np.broadcast_to(np.asarray(v, dtype=dtype), shape).copy()

    return LayoutRows(
        result=result, speedup=full(speedup, float), efficiency=full(speedup / p, float),
        devices=full(p), nodes=full(nodes), devices_per_node=full(per_node), dp=full(dp),
        tp=full(tp), pp=full(pp), cp=full(cp), micro_batch=full(b), accumulation=full(k),
        global_batch=full(gb), matmul_efficiency=full(eff, float), peak_known=peak_known,
        one_device_fits=full(one.fits, bool), one_device_holds_model=full(holds, bool))


def replica_loader_supply(profile: Profile, scenario: Scenario, counts,
                          devices_per_node: int) -> float:
    """Samples/s of one model replica's loader from ``profile``'s measured input pipeline (at
    ``scenario.loader_workers``, default its best count; infinite without one), one loader per
    replica of the largest of ``counts``' servers sharing its cores: what every layout of a
    plan is fed (``plan_at``, and ``scalesim plan`` off the measured curve)."""
    per_node = min(max(int(c) for c in np.atleast_1d(counts)), devices_per_node)
    return float(loader_supply(profile, scenario, per_node)[0])


def plan_at(profile: Profile, scenario: Scenario, devices: int | list[int], global_batch: int,
            **plan_kwargs):
    """``scalesim.plan.rank_layouts`` for this profile and scenario at one device count (or
    several, ranked together): every layout of the workload's shape evaluated with the inputs
    ``predict`` gives it (``scenario_setting``: the scenario's links, server size, overlap, slow
    device, jitter, recompute style, the profile's measured send/recv; each micro-batch's
    matmul efficiency pinned to the profile's compute curve as ``evaluate_rows`` pins it; the
    input supply per replica), so each row's step is what ``predict`` says of
    ``scenario_of_row``, at every count (the input supply: one loader per replica of the
    largest count's servers). The framework's tensor-parallel overlap is the scenario's
    (``ScenarioLayout.tp_overlap``, through ``scenario_setting``), and so is its precision.
    ``plan_kwargs`` go to ``rank_layouts`` (top, split_only, include_unfit, rank_by,
    cp_values; cp_values by default 1 and the scenario's own context-parallel degree, so a
    scenario split with cp is ranked beside its own layout)."""
    check_attention_kernel(profile, scenario.attention_kernel)
    check_precision(profile, scenario.precision)
    wl, hw = profile.workload, layout_hardware(profile)
    if wl.transformer is None:
        raise ScalesimError(f"workload '{wl.name}' has no transformer shape: there are no "
                            "layouts to plan")
    counts = checked_devices(np.atleast_1d(devices))  # before the loader's supply reads them
    peak, peak_known, bandwidth = _peak_and_bandwidth(profile)
    setting = scenario_setting(wl, hw, scenario, peak, bandwidth, jitter_cv_of(profile, scenario),
                               measured_p2p(profile), global_batch,
                               attention_kernel=kernel_for(profile, scenario.attention_kernel),
                               peak_known=peak_known)
    base = setting_inputs(setting)
    supply = replica_loader_supply(profile, scenario, counts, setting.hardware.devices_per_node)

    last: list = []  # the last call's (micro-batch, busy, pin): setting_inputs asks both fields

    def pinned(micro_batch, busy, which: int):  # once per distinct (micro-batch, busy devices)
        b, g = np.broadcast_arrays(np.asarray(micro_batch), np.asarray(busy))
        if not (last and np.array_equal(last[0], b) and np.array_equal(last[1], g)):
            last[:] = [b.copy(), g.copy(), _pinned_rows(profile, base, b, g)]
        return last[2][which]

    setting = setting.replace(efficiency_of=lambda b, g: pinned(b, g, 0),
                              kernel_bandwidth_of=lambda b, g: pinned(b, g, 1),
                              optimizer_step_of=lambda g: measured_optimizer_s(profile, g),
                              loader_samples_per_s=supply,
                              oom_micro_batch=profile.compute.oom_micro_batch or 0)
    plan_kwargs.setdefault("cp_values", tuple(sorted({1, layout_of(scenario).cp})))
    return rank_layouts(setting, counts, **plan_kwargs)


def _pinned_rows(profile: Profile, base: LayoutInputs, micro_batch: np.ndarray,
                 busy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pinned_compute`` of each row's (micro-batch, busy devices per server), arrays of one
    shape, computed once per distinct pair: (matmul share of the peak, kernel GB/s) per row.
    The pairs are found by one 1-D ``np.unique`` of each column and of their joint index (a
    2-D ``np.unique(axis=1)`` sorts the rows as bytes, a fifth of the planner's time)."""
    mb, at_b = np.unique(micro_batch.ravel(), return_inverse=True)
    busy_values, at_g = np.unique(busy.ravel(), return_inverse=True)
    pair, at = np.unique(at_b.ravel() * busy_values.size + at_g.ravel(), return_inverse=True)
    values = pinned_compute(profile, base, mb[pair // busy_values.size],
                            busy_values[pair % busy_values.size])
    return tuple(np.asarray(v)[np.ravel(at)].reshape(micro_batch.shape) for v in values)


def scenario_of_row(scenario: Scenario, row) -> Scenario:
    """``scenario`` running the planner's ``row`` (a ``plan.PlanRow``) at the same global
    batch: its layout (context parallelism too), ZeRO stage, micro-batch and accumulation; the
    framework's tensor-parallel overlap where the row has tp > 1 (without tp there is nothing
    to overlap, and predict refuses the overlap there: ``layout.TP_OVERLAP_NEEDS_TP``), and its
    blocking pipeline sends (``p2p_overlap`` off) where the row runs the interleaved schedule
    (elsewhere the sends block either way, and predict refuses the setting:
    ``layout.P2P_OVERLAP_NEEDS_INTERLEAVED``); ``layout.unused_settings`` decides both, as for
    predict and sweep."""
    schedule = row.schedule if row.pp > 1 else None
    unused = {field: bool(rows) for field, (rows, _) in unused_settings(
        row.tp, row.pp, schedule, row.virtual_stages, row.sequence_parallel, row.tp_overlap,
        row.p2p_overlap).items()}
    layout = ScenarioLayout(tp=row.tp, pp=row.pp, cp=row.cp, schedule=schedule,
                            virtual_stages=row.virtual_stages, recompute=row.recompute,
                            recompute_style=row.recompute_style,
                            sequence_parallel=row.sequence_parallel,
                            tp_overlap=row.tp_overlap and not unused["tp_overlap"],
                            p2p_overlap=row.p2p_overlap or unused["p2p_overlap"],
                            shard_group=row.shard_group if row.hybrid else None)
    update = {"layout": layout, "strategy": ZERO_STRATEGIES[row.zero],
              "accumulation": row.accumulation}
    if scenario.global_batch is None:
        update["micro_batch"] = row.micro_batch
    return scenario.model_copy(update=update)


# The recompute each style changes (docs/model.md §11, §13); whole-forward changes nothing
STYLE_RECOMPUTE = {"early-stop": "full", "op-sac": "selective"}


# the recompute knobs as the CLI's notes name them (``recompute_style_note``)
# the CLI's words of the knobs a scenario note names (a page passes its control labels instead)
NOTE_KNOB_WORDS = {"recompute_style": "recompute style", "recompute": "recompute",
                   "attention_kernel": "attention kernel", "precision": "precision"}


def recompute_style_note(profile: Profile, scenario: Scenario, recompute_named: bool = True,
                         named=NOTE_KNOB_WORDS.get) -> str:
    """'recompute style early-stop ignored: <why>' where the scenario names a style whose
    recompute it does not run (early-stop: full; op-sac: selective) or a parameter-count
    workload; else ''. ``recompute_named`` False: the why does not name the scenario's
    recompute ('recompute is not full'), so a sweep says it once of the rows at every recompute
    that ignores the style (``cmd_sweep.sweep_notes`` names them). ``named``: a knob's name
    ('recompute_style', 'recompute'; a page's control labels, the CLI's words by default)."""
    split = layout_of(scenario)
    style, wl = split.recompute_style, profile.workload
    if style not in STYLE_RECOMPUTE or split.stops_early(wl) or split.saves_per_op(wl):
        return ""
    recompute = named("recompute")
    if wl.transformer is None:
        why = f"workload '{wl.name}' is a parameter count, not a transformer shape"
    else:
        why = (f"{recompute} is {split.recompute_of(wl)}, not {STYLE_RECOMPUTE[style]}"
               if recompute_named else f"{recompute} is not {STYLE_RECOMPUTE[style]}")
    return f"{named('recompute_style')} {style} ignored: {why}"


def timed_own_kernel(profile: Profile) -> bool:
    """Whether ``profile``'s compute timings ran their own attention kernel and precision: a
    measured compute curve, one scaled from it to another sequence (``optimizer_measured``), a
    block calibration (``model_parallel``), or a transformer's curve read off a published
    run's throughput (a workload's ``reference``: ``precision.PUBLISHED_RUN``, an fp8 run as
    often as not on Hopper; a parameter count's ignores both knobs, with a note). Another
    precision cannot be asked of those timings, nor another kernel unless their calibration
    recorded theirs (``kernel_swappable``)."""
    return (optimizer_measured(profile.compute) or profile.model_parallel is not None
            or (profile.compute.precision == PUBLISHED_RUN
                and profile.workload.transformer is not None))


def own_timings_words(profile: Profile, what: str) -> str:
    """Why ``profile``'s timings cannot be asked another ``what`` ("attention kernel" or
    "precision"), where ``timed_own_kernel``: 'profile 'X' holds timings measured with its own
    attention kernel' / '... at their own precision', or, for a published run's throughput,
    'profile 'X' holds a published run's throughput (the reference of workload 'W'), at that
    run's own precision'."""
    if profile.compute.precision == PUBLISHED_RUN:  # --workload may have replaced the workload
        whose = (f"workload '{profile.workload.name}'" if profile.workload.reference
                 else "the workload it was made with")
        return (f"profile '{profile.name}' holds a published run's throughput (the reference of "
                f"{whose}), at that run's own {what}")
    own = ("with its own attention kernel" if what == "attention kernel"
           else "at their own precision")
    if what == "attention kernel" and (family := timed_attention_family(profile)) is not None:
        own += f" ({family}, as its calibration found)"
    return f"profile '{profile.name}' holds timings measured {own}"


# What diagnose's fitted timings cannot be asked, and the plan flag that prices it instead
FITTED_KNOBS = {"attention kernel": ("their own attention kernel",
                                     f"--attention-kernel {VENDOR_KERNEL}"),
                "precision": ("at their own precision", f"--precision {FP8}")}


def fitted_timings_words(profile: Profile, what: str) -> str:
    """For a profile diagnose fitted to runs or traces (its compute's ``source``:
    ``fit_runs.RUNS_SOURCE``, ``trace_diagnosis.TRACE_SOURCE``), why its timings cannot be asked
    another ``what`` ("attention kernel" or "precision", ``FITTED_KNOBS``) and what prices it
    instead, in one clause: diagnose takes neither knob, plan prices both from the datasheet;
    '' for any other profile (a calibration's words: ``own_timings_words``)."""
    from scalesim.fit_runs import RUNS_SOURCE
    from scalesim.trace_diagnosis import TRACE_SOURCE

    ran, flag = FITTED_KNOBS[what]
    plan = (f"scalesim plan --workload <the model's transformer> --hardware <a server of its "
            f"GPU> {flag} prices it from the datasheet")
    if profile.compute.source == RUNS_SOURCE:
        return (f"the runs' compute is fitted to their measured step times, which ran {ran} "
                f"(a runs file does not say which), and diagnose takes no other {what}: {plan}")
    if profile.compute.source == TRACE_SOURCE:  # diagnose's input by its flag, the app's label
        kernel = (f" (a model read from {KNOB.trace} prices the vendor kernel from "
                  "FlashAttention-2-class kernels traced on a Hopper GPU; none here)"
                  if what == "attention kernel" else "")
        return knob_refusal(f"the traced steps ran {ran}{kernel}, and no other {what} is read "
                            f"with {KNOB.trace}: {as_literal(plan)}")
    return ""


def _own_timings_fix(profile: Profile, instead: str) -> str:
    """What to use instead of the profile's own timings: ``instead``, or, for a published
    run's throughput, the workload without its reference (its shape then sets the compute)."""
    return ("drop the reference from the workload (its transformer shape then gives the "
            "compute)" if profile.compute.precision == PUBLISHED_RUN else f"use {instead}")


def kernel_refused(profile: Profile, kernel: str | None) -> bool:
    """Whether ``kernel`` is asked of ``profile`` and cannot be priced: not the kernel its
    timings ran, which cannot be swapped for another (``kernel_swappable``). The one rule of
    ``check_attention_kernel`` and the app's note."""
    return not (kernel is None or kernel_swappable(profile)
                or kernel == own_attention_kernel(profile))


def refused_kernel_words(profile: Profile) -> str:
    """Why another attention kernel cannot be asked of ``profile`` (``kernel_refused``), in one
    clause: 'profile 'X' holds timings measured with its own attention kernel and its
    calibration did not record which' (``own_timings_words``), or, for the memory-efficient
    kernel, '..., which has no published rate of its own to swap for another's'."""
    words = own_timings_words(profile, "attention kernel")
    if profile.compute.precision == PUBLISHED_RUN:  # its own words say it
        return words
    if timed_attention_family(profile) is None:
        return f"{words} and its calibration did not record which"
    return f"{words}, which has no published rate of its own to swap for another's"


def check_attention_kernel(profile: Profile, kernel: str | None, name: str | None = None,
                           instead: str = "a datasheet profile (--hardware and --workload)"):
    """ScalesimError, in one line, where ``kernel`` cannot be priced on ``profile``
    (``kernel_refused``); ``name`` is how the caller's user set it (the sweep's
    '--attention-kernel-values'), None for the knob's control (--attention-kernel, the app's
    label: ``knob_value_refusal``); ``instead`` what to use. The one check of predict, sweep,
    decide, goal, the planner of a scenario (``split_profile``, ``plan_at``) and ``scalesim plan
    --profile``. Left out, the kernel is the one the timings are read as
    (``own_attention_kernel``), not one they are known to have run: a refused kernel's timings
    recorded none, or one with no rate of its own."""
    if kernel_refused(profile, kernel):
        raise ScalesimError(knob_value_refusal(
            "attention_kernel", kernel, f"{refused_kernel_words(profile)}; leave the kernel out "
            f"(the timings read as the {own_attention_kernel(profile)} kernel's), or "
            f"{_own_timings_fix(profile, instead)}", name))


def check_precision(profile: Profile, precision: str, name: str | None = None,
                    instead: str = "a datasheet profile (--hardware and --workload)"):
    """ScalesimError, in one line, where ``precision`` is fp8 and ``profile``'s timings ran at
    their own precision (``timed_own_kernel``: a measured curve, a block calibration or a
    published run's throughput), or its
    device has no fp8 peak (no fp8 tensor cores, or a device no table lists); the check of every
    path ``check_attention_kernel`` guards, ``name`` as there (None: --precision, the app's
    label)."""
    from scalesim.presets import peak_tflops_of

    if precision != FP8:
        return
    if timed_own_kernel(profile):
        raise ScalesimError(knob_value_refusal(
            "precision", precision, f"{own_timings_words(profile, 'precision')}; leave it at "
            f"{DEFAULT_PRECISION}, or {_own_timings_fix(profile, instead)}", name))
    device = profile.hardware.device_name
    if profile.workload.transformer is not None and peak_tflops_of(device, fp8=True) is None:
        raise ScalesimError(knob_value_refusal(
            "precision", precision,
            f"{no_fp8_peak_words(device)}; leave it at {DEFAULT_PRECISION}", name))


def precision_inputs(profile: Profile, precisions) -> dict[str, np.ndarray]:
    """The ``LayoutInputs`` fields of each row's precision (a sweep axis: names, ``PRECISIONS``):
    ``fp8`` where the row is fp8, the layers' matmul peak there the 16-bit peak times the
    datasheet's fp8 ratio (``plan.fp8_peak_ratio``, as ``scenario_setting`` gives one
    scenario), and the 16-bit peak for the attention core, the output layer and the compute pin
    (§13, fp8). Rows must have passed ``check_precision``."""
    from scalesim.plan import fp8_peak_ratio

    peak16 = _peak_and_bandwidth(profile)[0]
    fp8 = np.asarray(precisions) == FP8
    ratio = fp8_peak_ratio(profile.hardware.device_name) if fp8.any() else 1.0
    return {"fp8": fp8, "peak_flops_per_s": np.where(fp8, peak16 * ratio, peak16),
            "peak16_flops_per_s": np.full(fp8.shape, peak16)}


def precision_note(profile: Profile, scenario: Scenario, named=NOTE_KNOB_WORDS.get) -> str:
    """What the scenario's precision does, where it is fp8: 'precision: fp8 ...' for a
    transformer workload, 'precision fp8 ignored: ...' for a parameter count (the data-parallel
    step model has no matmul shapes to cast); '' for 16 bits. ``named``: the knob's name (a
    page's control label, the CLI's word by default)."""
    if scenario.precision != FP8:
        return ""
    if profile.workload.transformer is None:
        return (f"{named('precision')} {scenario.precision} ignored: workload "
                f"'{profile.workload.name}' is "
                "a parameter count, not a transformer shape (no weight matmuls to run in fp8)")
    return FP8_WORDS


def attention_kernel_words(kernel: str, device_name: str, own: bool = False) -> str:
    """What ``kernel`` does on ``device_name`` (docs/model.md §13, attention kernel): 'attention:
    flash2 kernel, its attention core at 0.35 of the 16-bit peak on H100 (FlashAttention-3
    paper; ...)' or '... at the matmuls' efficiency on GB200 ...'; ``own``: the kernel a
    profile's timings ran (``own_attention_kernel``), which the words then say."""
    share = attention_efficiency_of(device_name, kernel)
    whose = " (the kernel the profile's timings ran, as its calibration found)" if own else ""
    if share is None:
        return (f"attention: {kernel} kernel{whose} at the matmuls' efficiency on {device_name} "
                "(no published figure gives it a rate of its own there)")
    return (f"attention: {kernel} kernel{whose}, its attention core at {share:.2g} of the "
            f"16-bit peak on {device_name} ({attention_efficiency_source(device_name, kernel)})")


def priced_kernel_words(profile: Profile | None, kernel: str,
                        device_name: str | None = None) -> str:
    """What the attention kernel a prediction from ``profile`` (None: a datasheet plan) runs
    (``kernel``: ``kernel_for`` of it) does on ``device_name``
    (default: the profile's), where it is not the vendor kernel the timings ran
    (``attention_kernel_words``): the kernel the profile's timings ran says so
    (``own_attention_kernel``), and another kernel swapped for it (``kernel_swappable``) says
    that, whichever it is; '' for the vendor kernel otherwise."""
    device_name = device_name or profile.hardware.device_name
    timed = profile is not None and timed_own_kernel(profile)
    own = kernel if profile is None else own_attention_kernel(profile)
    if timed and kernel != own:
        return (f"{attention_kernel_words(kernel, device_name)}; swapped for the {own} kernel "
                "the profile's timings ran, as its calibration found (the timings read with "
                "that kernel's attention core, the rest of them kept: docs/model.md §13)")
    if kernel == VENDOR_KERNEL:
        return ""
    # the kernel the timings ran, as their calibration found (another model's estimate too)
    return attention_kernel_words(kernel, device_name, own=profile is not None and kernel == own
                                  and timed_attention_family(profile) is not None)


def attention_kernel_note(profile: Profile, scenario: Scenario,
                          named=NOTE_KNOB_WORDS.get) -> str:
    """What the scenario's attention kernel does (``priced_kernel_words`` of ``kernel_for``) for
    a transformer workload; for a parameter count (the data-parallel step model has no
    attention core) 'attention kernel flash2 ignored: ...' where the kernel asked is not the
    one the profile's timings ran (``own_attention_kernel``: the vendor kernel on a datasheet
    profile), which a swap would have changed; else ''. ``named``: the knob's name (a page's
    control label, the CLI's words by default)."""
    if profile.workload.transformer is not None:
        return priced_kernel_words(profile, kernel_for(profile, scenario.attention_kernel))
    asked = scenario.attention_kernel
    if asked is None or asked == own_attention_kernel(profile):
        return ""
    return (f"{named('attention_kernel')} {asked} ignored: workload '{profile.workload.name}' "
            "is a parameter count, not a transformer shape (no attention core to time)")


def pipeline_fsdp_note(scenario: Scenario, strategy: str | None = None) -> str:
    """What FSDP's ZeRO-2/3 does under a pipeline, where the scenario runs one; else ''.
    ``strategy``: how the scenario's strategy is named (a page's; None: its value, 'zero3')."""
    if (layout_of(scenario).pp > 1 and scenario.strategy in ("zero2", "zero3")
            and scenario.zero_framework == "fsdp"):
        return (f"{strategy or scenario.strategy} under a pipeline: FSDP keeps each stage's "
                "parameters and "
                "gradients whole for the step and exchanges once (PyTorch pipelining; "
                "docs/model.md §16)")
    return ""


def recompute_words(recompute: str, style: str) -> str:
    """'recompute full (early stop)', 'recompute selective (per-op)', 'recompute full',
    'recompute none': the style is named where it changes something."""
    if recompute == "full" and early_stop_of(style):
        return "recompute full (early stop)"
    return f"recompute {recompute}" + (" (per-op)" if recompute == "selective"
                                       and op_sac_of(style) else "")


def row_split_title(row) -> str:
    """A plan row's split, schedule and ZeRO stage, ``row_title``'s start: 'dp 2 x tp 4 x pp 2
    (1F1B), zero1', 'dp 1 x tp 8 x pp 1, no data parallelism'."""
    schedule = (f" ({schedule_words(row.schedule, row.virtual_stages)})" if row.pp > 1
                else "")
    zero = ZERO_STRATEGIES[row.zero] if row.dp * row.cp > 1 else "no data parallelism"
    zero += f" (HSDP: shard group {row.shard_group})" if row.hybrid else ""
    split = split_words(row.dp, row.tp, row.pp, row.cp if row.cp > 1 else None)
    return f"{split}{schedule}, {zero}"


def row_title(row) -> str:
    """'dp 2 x tp 4 x pp 2 (1F1B), zero1, micro-batch 1 per replica x 8 accumulation, recompute
    none': ' x cp 2' after pp where context parallelism splits the sequence; the schedule as
    ``layout.schedule_words`` writes it ('(zero bubble)', '(interleaved 1F1B, 4 virtual
    stages)'); 'recompute full (early stop)' in the early-stop style; ', TP overlap' where the
    framework overlaps a tp > 1 layout's collectives. At dp x cp = 1 'no data parallelism' in
    place of the ZeRO stage: one replica has nothing to exchange or shard (not 'ddp')."""
    return (f"{row_split_title(row)}, micro-batch {row.micro_batch} per replica x "
            f"{row.accumulation} accumulation, {recompute_words(row.recompute, row.recompute_style)}"
            + (", sequence parallel" if row.sequence_parallel else "")
            + (", TP overlap" if row.tp_overlap and row.tp > 1 else ""))
