"""Building, loading and combining calibration profiles.

A profile is what the model predicts from. A measured one comes from ``scalesim calibrate``; a
preset one is built here from a hardware preset and a workload preset: its compute curve comes
from the workload's published per-device throughput (``per_sample_s = 1/throughput``, no fixed
overhead known), scaled by the ratio of dense fp16/bf16 peak TFLOP/s when the published number is
for another device. That scaling is crude (utilisation differs between generations) and the
profile says so in its notes.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from scalesim import presets
from scalesim.attention_kernel import VENDOR_KERNEL
from scalesim.errors import (
    KNOB,
    ScalesimError,
    as_literal,
    cut_at_word,
    require_model,
    require_path,
    require_text,
)
from scalesim.figures import count, rate
from scalesim.jsonio import newer_version, parse_model, read_json, version_text
from scalesim.layout import knob_refusal, knob_value_refusal
from scalesim.model.compute import OPTIMIZER_MAX_SHARE, optimizer_roofline_s
from scalesim.model.memory import STRATEGIES, optimizer_with_copies_s
from scalesim.model.sharding import FSDP
from scalesim.precision import PUBLISHED_RUN
from scalesim.schemas import (
    CPU_CONTENTION_NOTE,
    PROFILE_VERSION,
    ComputeCurve,
    Fingerprint,
    Hardware,
    LinkCalibration,
    Profile,
    ReferenceThroughput,
    Scenario,
    TransformerShape,
    Workload,
)

T = TypeVar("T")  # what a build at another sequence length returns (sequence_built)

def device_peak_tflops(device_name: str, extra: Hardware | None = None) -> float | None:
    """Dense 16-bit peak of ``device_name``, TFLOP/s: a hardware preset's (or ``extra``'s) of
    that exact device, else the datasheet table's (``presets.peak_tflops_of``), else None (an
    unlisted device: the callers say its MFU is against a nominal peak, or refuse to estimate
    a compute from a shape). The one lookup of a device's peak for predict, the layout path
    (``layout_predict``) and ``scalesim plan``."""
    known = {h.device_name: h.peak_tflops for h in presets.HARDWARE.values()}
    if extra is not None and extra.peak_tflops is not None:
        known[extra.device_name] = extra.peak_tflops
    listed = presets.peak_tflops_of(device_name)
    return known.get(device_name) or (listed[0] if listed else None)


def unmeasured_links(profile: Profile) -> dict[str, LinkCalibration]:
    """The link levels a calibrated profile did not measure (``LinkCalibration.measured``
    false: one process per server, one server; every level of a preset profile), each with its
    record (why, and where its numbers came from). What
    the app lists as caveats and ``scalesim predict`` notes under rows that use such a link."""
    return {link.level: link for link in profile.links if not link.measured}


PRESET_LINKS = "a preset profile"  # why a preset profile's links are not measured
# Where a level's numbers came from, in a one-line note: their sources are its references, so
# every shipped one is shown whole (the longest, a2-highgpu-8g's inter-server link, is 525
# characters; the compute note beside it is longer); a profile file's longer text is cut at a
# word (``errors.cut_at_word``).
MAX_ORIGIN_CHARS = 600


def unmeasured_origin(link: LinkCalibration) -> str:
    """Why a level was not measured and where its numbers came from, for a one-line note:
    "(one server); numbers from preset ethernet:1x100" from the record's fields; a profile
    written before them gives its note as written ("profile note: ...", "" without one)."""
    if link.not_measured_because or link.numbers_from:
        origin = cut_at_word(link.numbers_from or "the presets", MAX_ORIGIN_CHARS)
        why = f"({link.not_measured_because}); " if link.not_measured_because else ""
        return f"{why}numbers from {origin}"
    note = cut_at_word(link.note, MAX_ORIGIN_CHARS)
    return f"(profile note: {note})" if note else ""


def memory_bandwidth_GBps(device_name: str, given: float | None = None) -> float | None:
    """``given``, else the datasheet memory bandwidth of ``device_name``
    (``presets.memory_bandwidth_of``), else None."""
    if given is not None:
        return given
    known = presets.memory_bandwidth_of(device_name)
    return known[0] if known else None


def device_bandwidth_GBps(profile: Profile) -> float | None:
    """Memory bandwidth of the profile's device, GB/s: its hardware record's, else the
    datasheet's, else (a CPU, an unlisted device) the byte rate its block calibration fitted
    (``model_parallel``); None when none is known."""
    hw, mp = profile.hardware, profile.model_parallel
    listed = memory_bandwidth_GBps(hw.device_name, hw.memory_bandwidth_GBps)
    return listed if listed is not None or mp is None else mp.memory_bandwidth_GBps


def optimizer_estimate_s(workload: Workload, bandwidth_GBps: float) -> float:
    """Memory-bound optimizer step of ``workload`` on a device of ``bandwidth_GBps``, s."""
    return float(optimizer_roofline_s(workload.params, workload.param_bytes_per_param,
                                      workload.grad_bytes_per_param,
                                      workload.optimizer_bytes_per_param, bandwidth_GBps))


RECOMPUTE_WORK = 4.0 / 3.0  # forward+backward work with full activation recomputation


def _reference_system(ref: ReferenceThroughput, hardware: Hardware) -> Hardware:
    """The servers and links of the reference run (``ref.system``, else ``hardware``)."""
    if ref.system is None:
        return hardware
    if ref.system not in presets.HARDWARE:
        raise ScalesimError(f"reference of '{ref.device_name}': system '{ref.system}' is not a "
                            f"hardware preset; use one of {', '.join(presets.HARDWARE)}")
    return presets.HARDWARE[ref.system]


def reference_run_step_s(ref: ReferenceThroughput, workload: Workload, system: Hardware,
                         per_sample_s, optimizer_s: float, bandwidth_GBps: float | None = None):
    """Modelled step time of the reference run, s, for each ``per_sample_s`` (array or scalar;
    overhead 0) with optimizer step ``optimizer_s``, on the run's devices, strategy and batch;
    PyTorch DDP's bucket copies at ``bandwidth_GBps``, the reference device's memory bandwidth
    (None: not known, at the optimizer sweep's rate, as predict does)."""
    from scalesim.model.step import evaluate
    from scalesim.predict import scenario_inputs

    profile = Profile(
        name="reference run", hardware=system, workload=workload,
        compute=ComputeCurve(overhead_s=0.0, per_sample_s=1.0, optimizer_step_s=optimizer_s))
    per_node = ref.devices_per_node or min(ref.devices, system.devices_per_node)
    scenario = Scenario(devices=[ref.devices], devices_per_node=per_node,
                        micro_batch=ref.micro_batch, accumulation=ref.accumulation,
                        strategy=ref.strategy)
    inputs, _ = scenario_inputs(profile, scenario)
    inputs = inputs.replace(memory_bandwidth_GBps=np.nan if bandwidth_GBps is None
                            else bandwidth_GBps)
    x = np.asarray(per_sample_s, dtype=float)
    step = np.asarray(evaluate(inputs.replace(per_sample_s=x.reshape(-1))).step_time_s)
    return step.reshape(x.shape) if x.ndim else float(step.reshape(-1)[0])


def per_sample_from_reference(ref: ReferenceThroughput, workload: Workload, system: Hardware,
                              optimizer_s: float, bandwidth_GBps: float | None = None) -> float:
    """Forward+backward time per sample on the reference device, s, such that the reference
    run reproduces its published throughput.

    The run's step is ``micro_batch * accumulation / samples_per_s``. Without communication in
    the figure the step is compute and the optimizer step, sharded over the run's devices for
    ZeRO (it paid ``optimizer_s / devices``, not ``optimizer_s``):
    ``per_sample = (step - optimizer_s / shards * r - t_copies) / (micro_batch * accumulation)``,
    r the default framework's sweep over the model's (``memory.optimizer_traffic_ratio``),
    t_copies PyTorch DDP's bucket copies on a run of more than one device at ``bandwidth_GBps``,
    the reference device's memory bandwidth (``memory.ddp_bucket_copies_s``; None: not known,
    they are in r at the sweep's rate), as the step model charges them whatever the optimizer
    estimate (zeroed by ``OPTIMIZER_MAX_SHARE`` or not). With
    communication included (a cluster average) the model's step of that run (compute,
    optimizer, exposed communication, straggler wait), monotone in the per-sample time, is
    solved for it by bracketing on grids of 64 (one vectorised model call each) and
    interpolating in the last bracket.
    """
    samples = ref.micro_batch * ref.accumulation
    step_s = samples / ref.samples_per_s
    shards = ref.devices if ref.strategy != "ddp" else 1
    if not ref.includes_communication:
        # the run's step under the default framework, as the step model pays it (Megatron-Core's
        # fp32 main grads, FSDP's fp32 shard: memory.optimizer_traffic_ratio, docs/model.md §4)
        paid = float(optimizer_with_copies_s(
            optimizer_s / shards, STRATEGIES[ref.strategy], FSDP, workload.param_bytes_per_param,
            workload.grad_bytes_per_param, workload.optimizer_bytes_per_param,
            workload.stated_reduce_bytes(), ranks=ref.devices, params=workload.params,
            memory_bandwidth_GBps=np.nan if bandwidth_GBps is None else bandwidth_GBps))
        return (step_s - paid) / samples

    def run_step_s(per_sample_s):
        return reference_run_step_s(ref, workload, system, per_sample_s, optimizer_s,
                                    bandwidth_GBps)

    hi = step_s / samples
    if run_step_s(hi) <= step_s:
        return hi  # nothing of the run's step is left to communication
    lo = 0.0
    if run_step_s(lo) >= step_s:
        raise ScalesimError(
            f"reference of '{ref.device_name}' ({rate(ref.samples_per_s, workload.sample_unit)} "
            f"per device on {count(ref.devices, 'device')}): the modelled communication of that "
            "run alone is slower than its step; check the reference's devices, strategy and system")
    # The step grows monotonically with per_sample: bracket the root on a grid of 64 per call
    # (one vectorised model evaluation each), then interpolate inside the last bracket.
    for _ in range(6):
        grid = np.linspace(lo, hi, 65)
        above = run_step_s(grid) > step_s
        i = int(np.argmax(above))  # first grid point above the target (grid[-1] is)
        lo, hi = grid[i - 1], grid[i]
    t_lo, t_hi = run_step_s(np.array([lo, hi]))
    return float(lo + (hi - lo) * (step_s - t_lo) / (t_hi - t_lo))


def compute_from_reference(workload: Workload, hardware: Hardware) -> tuple[ComputeCurve, str]:
    """``compute_curve_from_reference``, cached on the two models' JSON (the app rebuilds
    preset profiles on every render; the curve is a pure function of them)."""
    workload = require_model(workload, Workload, "workload")
    hardware = require_model(hardware, Hardware, "hardware")
    return _cached_curve(workload.model_dump_json(), hardware.model_dump_json())


@functools.lru_cache(maxsize=64)
def _cached_curve(workload_json: str, hardware_json: str) -> tuple[ComputeCurve, str]:
    return compute_curve_from_reference(Workload.model_validate_json(workload_json),
                                        Hardware.model_validate_json(hardware_json))


def compute_curve_from_reference(workload: Workload,
                                 hardware: Hardware) -> tuple[ComputeCurve, str]:
    """A compute curve for ``workload`` on ``hardware`` from the workload's reference numbers.

    The reference is converted as the run it declares (``per_sample_from_reference``): its
    optimizer step (memory-bound estimate on the reference device) is taken out as often as
    that run paid it (once per ``micro_batch * accumulation`` samples of each device, sharded
    over its devices for ZeRO), and a cluster average has that run's communication taken out
    with the model. Full activation recomputation costs one extra forward, 4/3 of the
    forward+backward work: a run and a workload that differ in it are converted by that
    factor. The optimizer step is then estimated on ``hardware`` and paid once per step by
    predictions.
    """
    workload = require_model(workload, Workload, "workload")
    hardware = require_model(hardware, Hardware, "hardware")
    if not workload.reference and workload.transformer is not None:
        return compute_curve_from_shape(workload, hardware)
    if not workload.reference:
        raise ScalesimError(
            f"workload '{workload.name}' has no reference throughput; add one to its 'reference' "
            "list or calibrate a profile (scalesim calibrate)"
        )
    same = [r for r in workload.reference if r.device_name == hardware.device_name]
    ref = same[0] if same else workload.reference[0]
    # written as it always was ('1376 images/s', '65536 samples'), not with figures.rate: a preset
    # link's fingerprint hashes the profile's notes (app.state.preset_fingerprint), so a new
    # wording would tell every older link that its numbers may have changed (session 43)
    note = (f"compute: {ref.samples_per_s:.4g} {workload.sample_unit}/s per device on "
            f"{count(ref.devices, 'device')}, {ref.samples_per_step} samples per optimizer step "
            f"({ref.source})")
    bandwidth = memory_bandwidth_GBps(hardware.device_name, hardware.memory_bandwidth_GBps)
    ref_bandwidth = bandwidth if same else memory_bandwidth_GBps(ref.device_name)
    system = _reference_system(ref, hardware)
    ref_optimizer_s = 0.0
    if bandwidth is not None and ref_bandwidth is not None:
        ref_optimizer_s = optimizer_estimate_s(workload, ref_bandwidth)
        shards = ref.devices if ref.strategy != "ddp" else 1
        step_s = ref.micro_batch * ref.accumulation / ref.samples_per_s
        if ref_optimizer_s / shards > OPTIMIZER_MAX_SHARE * step_s:
            ref_optimizer_s = 0.0  # the estimate would eat most of the measured step
    # DDP's copies in the run at its device's bandwidth (§4), whatever its optimizer estimate
    per_sample_s = per_sample_from_reference(ref, workload, system, ref_optimizer_s,
                                             ref_bandwidth)
    optimizer_s = optimizer_estimate_s(workload, bandwidth) if ref_optimizer_s > 0 else 0.0
    if ref.includes_communication:
        note += (f"; a {ref.strategy} run on {count(ref.devices, 'device')} of {system.name}: its "
                 "communication and straggler wait taken out with the model")
    if ref.activation_recompute and not workload.activation_recompute:
        per_sample_s /= RECOMPUTE_WORK
        note += "; the run recomputed activations, this workload does not: 3/4 of its time kept"
    elif workload.activation_recompute and not ref.activation_recompute:
        per_sample_s *= RECOMPUTE_WORK
        note += "; this workload recomputes activations, the run did not: 4/3 of its time"
    if not same:
        ref_peak = device_peak_tflops(ref.device_name, hardware)
        if ref_peak is None or hardware.peak_tflops is None:
            raise ScalesimError(
                f"workload '{workload.name}' has no reference for '{hardware.device_name}' and "
                "no peak TFLOP/s to scale one; add peak_tflops to the hardware or a reference"
            )
        per_sample_s *= ref_peak / hardware.peak_tflops
        note += (f"; scaled from {ref.device_name} to {hardware.device_name} by peak TFLOP/s "
                 f"({ref_peak:g} -> {hardware.peak_tflops:g}), an approximation")
    if optimizer_s > 0:
        note += (f"; optimizer step {optimizer_s * 1e3:.3g} ms, estimated as a memory-bound "
                 f"update at {bandwidth:g} GB/s")
    curve = parse_model(
        {"overhead_s": 0.0, "per_sample_s": per_sample_s, "optimizer_step_s": optimizer_s,
         "precision": PUBLISHED_RUN, "measured": False, "source": note},
        ComputeCurve, f"compute of workload '{workload.name}' on hardware '{hardware.name}'")
    return curve, note


def compute_curve_from_shape(workload: Workload, hardware: Hardware,
                             efficiency: float | None = None,
                             basis: str = "",
                             attention_kernel: str | None = None) -> tuple[ComputeCurve, str]:
    """A compute curve of a transformer workload with no reference: the layout model's
    unsplit one-device micro-step (``scalesim.model.layout_step``) at sustained matmul
    ``efficiency`` (default: the planner's, ``plan.DEFAULT_MATMUL_EFFICIENCY``; a block
    calibration's, with ``basis`` saying so), its attention core at ``attention_kernel``'s
    rate (default: the vendor kernel's, ``Scenario.attention_kernel``; the kernel a profile's
    timings ran, ``layout_predict.own_attention_kernel``, where predictions from the curve
    price it so). The model's micro-step is affine in the
    micro-batch (weights are read once per micro-step), so its times at 1 and 2 sequences give
    ``overhead_s`` and ``per_sample_s`` exactly; the optimizer step is the memory-bound
    estimate."""
    from scalesim.model.layout_step import evaluate_layouts
    from scalesim.model.transformer import RECOMPUTE
    from scalesim.plan import DEFAULT_MATMUL_EFFICIENCY

    bandwidth = memory_bandwidth_GBps(hardware.device_name, hardware.memory_bandwidth_GBps)
    peak = hardware.peak_tflops or device_peak_tflops(hardware.device_name)
    if bandwidth is None or peak is None:
        raise ScalesimError(
            f"workload '{workload.name}' has no reference throughput, and hardware "
            f"'{hardware.name}' lacks the peak_tflops and memory_bandwidth_GBps to estimate its "
            "compute; add them, add a reference, or calibrate a profile (scalesim calibrate)")
    from scalesim.layout_predict import base_inputs
    from scalesim.schemas import Scenario

    efficiency = DEFAULT_MATMUL_EFFICIENCY if efficiency is None else efficiency
    x = base_inputs(workload, hardware, Scenario(), peak * 1e12, bandwidth,
                    attention_kernel=attention_kernel).replace(
        efficiency=efficiency, device_cv=0.0, framework_bytes=0.0,
        recompute=RECOMPUTE["full" if workload.activation_recompute else "none"])
    optimizer_s = optimizer_estimate_s(workload, bandwidth)
    # the micro-step alone: the one-device step without its optimizer (which it pays at the
    # framework's sweep, memory.optimizer_traffic_ratio, not the estimate's, §4)
    t1, t2 = (float(evaluate_layouts(x.replace(micro_batch=b, global_batch=b,
                                                optimizer_step_s=0.0)).compute_s)
              for b in (1, 2))
    per_sample_s = t2 - t1
    kernels = hardware.kernel_bandwidth_GBps or bandwidth
    note = (f"compute: no reference run; the transformer shape's forward+backward on one "
            f"{hardware.device_name} at {efficiency:.3g} of its {peak:.4g} TFLOP/s peak ("
            + (basis or "the planner's default sustained matmul efficiency; docs/model.md §13")
            + f") and {kernels:.4g} GB/s for memory-bound work"
            + (f", the attention core at the {attention_kernel} kernel's rate"
               if attention_kernel not in (None, VENDOR_KERNEL) else "")
            + ("" if basis else ", an estimate: calibrate to measure it"))
    curve = parse_model(
        {"overhead_s": max(t1 - per_sample_s, 0.0), "per_sample_s": per_sample_s,
         "optimizer_step_s": optimizer_s, "precision": "estimated", "measured": False,
         "source": note},
        ComputeCurve, f"compute of workload '{workload.name}' on hardware '{hardware.name}'")
    return curve, note


def profile_from_presets(hardware: Hardware, workload: Workload) -> Profile:
    """A profile built from published numbers only (no measurement)."""
    hardware = require_model(hardware, Hardware, "hardware")
    workload = require_model(workload, Workload, "workload")
    compute, note = compute_from_reference(workload, hardware)
    return Profile(
        name=f"{hardware.name} + {workload.name} (presets)",
        fingerprint=Fingerprint(device_name=hardware.device_name,
                                device_count=hardware.devices_per_node),
        hardware=hardware,
        workload=workload,
        compute=compute,
        links=[
            LinkCalibration(level=level, measured=False, not_measured_because=PRESET_LINKS,
                            numbers_from=link.source, note=link.source)
            for level, link in (("intra_node", hardware.intra_node),
                                ("inter_node", hardware.inter_node))
        ],
        notes=[note, "no fixed per-micro-step overhead is known for presets, and the optimizer "
               "step is a memory-bandwidth estimate: calibrate to measure both"],
    )


def default_profile() -> Profile:
    """The built-in default: the default hardware and workload presets."""
    return profile_from_presets(
        presets.get_hardware(presets.DEFAULT_HARDWARE), presets.get_workload(presets.DEFAULT_WORKLOAD)
    )


def measured_shape(profile: Profile) -> TransformerShape | None:
    """The transformer the profile's measured compute curve timed: the curve's record
    (``ComputeCurve.model_shape``, calibrate's built-in gpt), else the workload's shape; for a
    profile written before the record, the built-in gpt read back from its name
    (``builtin_gpt.shape_from_name``: flash attention where it ran on GPUs, backend nccl) when
    that shape counts the profile's parameters exactly, as the calibration counted them.
    None: not a measured curve, or its model is not known to be a transformer."""
    from scalesim import builtin_gpt

    curve, workload = profile.compute, profile.workload
    if not curve.measured:
        return None
    if curve.model_shape is not None or workload.transformer is not None:
        return curve.model_shape or workload.transformer
    named = builtin_gpt.shape_from_name(workload.name, profile.fingerprint.backend == "nccl")
    if named is not None and named.param_count() == workload.params:
        return named
    return None


def _architecture(shape: TransformerShape, seq_len: int | None = None) -> TransformerShape:
    """``shape`` with its defaults spelled out (kv_heads = heads, ffn_hidden = 4 x hidden) and
    without the attention kernel (``flash_attention`` says which kernel ran, not which model:
    a measured curve timed the one that ran); ``seq_len`` replaces the sequence when given."""
    update = {"kv_heads": shape.kv_of(), "ffn_hidden": shape.ffn_of(), "flash_attention": False}
    if seq_len is not None:
        update["seq_len"] = seq_len
    return shape.model_copy(update=update)


MatchKind = Literal["same", "sequence", "other"]


def model_match(base: Profile, workload: Workload) -> MatchKind:
    """How ``workload`` relates to the model ``base``'s measured compute curve timed
    (``measured_shape``):

    - ``'same'``: the curve is the workload's: the same architecture and sequence (defaults
      spelled out alike, the attention kernel aside); a parameter-count workload, which only
      resizes the exchange and memory; a curve that is not measured, for the profile's own
      workload (an estimate of another model is ``'other'``: a saved preset profile's
      bert-large estimate pinned llama3-8b 27 % faster than its presets); or, with no shape
      known for the measured model, a parameter count within 2 % of its (the calibration
      counts its own model's parameters exactly);
    - ``'sequence'``: the same architecture at another sequence length: a sample holds other
      tokens and attention grows with the sequence, so the curve is scaled (``workload_compute``);
    - ``'other'``: another model (another shape, or with no shape known a parameter count more
      than 2 % away): its compute comes from its shape on the profile's device."""
    base = require_model(base, Profile, "base")
    workload = require_model(workload, Workload, "workload")
    if workload.transformer is None:
        return "same"
    if not base.compute.measured:  # an estimate: of the profile's own workload, if of any
        own = base.workload.transformer
        return ("same" if own is not None and _architecture(own) == _architecture(
            workload.transformer) else "other")
    timed = measured_shape(base)
    if timed is None:
        return "other" if abs(workload.params / base.workload.params - 1.0) > 0.02 else "same"
    wanted = workload.transformer
    if _architecture(timed) == _architecture(wanted):
        return "same"
    if _architecture(timed, wanted.seq_len) == _architecture(wanted):
        return "sequence"
    return "other"


def _shape_device(base: Profile, name: str,
                  calibrated_device: str) -> tuple[Hardware, float | None, str, Hardware, str]:
    """Where a transformer's compute is estimated from its shape on ``base``'s device: (the
    hardware and efficiency ``compute_curve_from_shape`` reads, its basis in words, the
    hardware to predict on, the note's reason). With a block calibration of that device
    (``calibrated_device``, before any ``--hardware``): its efficiency and kernel byte rate
    (``plan.calibrated_hardware``, as ``scalesim plan --profile`` ranks), the byte rates kept
    in the hardware so that predict's layouts split the work as the planner does; else the
    published default efficiency on the datasheet."""
    from scalesim.plan import calibrated_hardware

    hw, mp = base.hardware, base.model_parallel
    if mp is None or not presets.same_device(hw.device_name, calibrated_device):
        if device_peak_tflops(hw.device_name, hw) is None or memory_bandwidth_GBps(
                hw.device_name, hw.memory_bandwidth_GBps) is None:
            raise ScalesimError(
                f"workload '{name}' is not the model profile '{base.name}' "
                f"{'timed' if base.compute.measured else 'estimated the compute of'} (another "
                f"shape or sequence), and its device '{hw.device_name}' has no datasheet peak and "
                "memory bandwidth to estimate the workload's compute: calibrate with "
                "--block-hidden (docs/calibration.md), or on the workload's own model")
        why = ("the profile has no block calibration; calibrate --block-hidden" if mp is None
               else f"the profile's block calibration of {calibrated_device} does not describe "
               f"{hw.device_name}")
        return hw, None, "", hw, f"at the published default matmul efficiency ({why})"
    hardware, efficiency, note = calibrated_hardware(base)
    # the fit's kernel byte rate; the device bandwidth (datasheet, or the fit's on a CPU)
    rates = {"kernel_bandwidth_GBps": hardware.kernel_bandwidth_GBps,
             "memory_bandwidth_GBps": hardware.memory_bandwidth_GBps}
    return (hardware, efficiency, "the profile's block calibration", hw.model_copy(update=rates),
            f"at the profile's block calibration ({note})")


@dataclass(frozen=True)
class WorkloadCompute:
    """What ``workload_compute`` decided: the match (``model_match``), the compute curve, the
    hardware to predict on and the note that says how."""

    match: MatchKind
    workload: Workload  # the workload, with the timed run's attention kernel when it is that model
    compute: ComputeCurve
    hardware: Hardware
    note: str


def workload_compute(base: Profile, workload: Workload, name: str | None,
                     calibrated_device: str | None = None) -> WorkloadCompute:
    """The compute of ``workload`` (named ``name``) on measured profile ``base``: the one
    decision predict (``resolve_profile``: sweep, decide, goal) and ``scalesim plan --profile``
    take. ``calibrated_device``: the device the profile measured (default: its hardware's; the
    hardware may have been replaced by ``--hardware``). ``name`` None: no workload was given,
    the profile's own model is asked about (``scalesim plan --profile P`` alone), and the note
    says how its compute is decided without saying that a workload replaced it.

    - same model (``model_match``): the measured curve as it is;
    - the same transformer at sequence s' instead of the timed s: the measured curve with its
      per-sample time scaled by the layout model's per-sample ratio of the two shapes on the
      profile's device (``compute_curve_from_shape`` at the numbers the other-model path uses;
      with the timed run's fused or unfused attention for both, its core at the rate of the
      kernel the timings ran, ``layout_predict.own_attention_kernel``, as predictions from the
      scaled curve price it), its fixed per-micro-step time kept
      (launches and weight reads do not depend on s) and its optimizer step scaled by the
      parameter counts (the s x h position table); the memory ceiling it measured is dropped
      (it was in sequences of s tokens). docs/model.md §22;
    - another model: its compute from its shape on the device (``compute_curve_from_shape``),
      its core at the kernel ``layout_predict.kernel_for_another_model`` gives (the block's,
      else the one the timings ran, which the estimated curve then records)."""
    base = require_model(base, Profile, "base")
    workload = require_model(workload, Workload, "workload")
    calibrated_device = calibrated_device or base.hardware.device_name
    replaced = "" if name is None else f"workload replaced by '{name}', "
    name = workload.name if name is None else name
    match = model_match(base, workload)
    timed, kernel = measured_shape(base), ""
    if match != "other" and timed is not None and workload.transformer is not None \
            and workload.transformer.flash_attention != timed.flash_attention:
        workload = workload.model_copy(update={"transformer": workload.transformer.model_copy(
            update={"flash_attention": timed.flash_attention})})
        fused = "fused" if timed.flash_attention else "unfused"
        kernel = (f"; attention as the timed run computed it ({fused}: flash_attention "
                  f"{timed.flash_attention})")
    if match == "same":
        return WorkloadCompute(match, workload, base.compute, base.hardware,
                               ("" if not replaced else f"workload sizes replaced by '{name}'; ")
                               + f"{compute_kept_words(base)}{kernel}")
    hardware, efficiency, basis, predict_hw, where = _shape_device(base, name, calibrated_device)
    if match == "other":  # its core at the rate predictions from it price it at
        from scalesim.layout_predict import kernel_for_another_model, timed_attention_family

        curve, _ = compute_curve_from_shape(workload, hardware, efficiency, basis,
                                            kernel_for_another_model(base))
        if base.model_parallel is None:  # a datasheet estimate at the kernel the timings ran
            curve = curve.model_copy(update={"attention_kernel": timed_attention_family(base)})
        other = ("another model than the one timed" if base.compute.measured else
                 "another model than the profile's (its compute was estimated, not measured)")
        return WorkloadCompute(match, workload, curve, predict_hw, (
            f"{replaced}{other}: its compute from its shape {where}"))
    from scalesim.layout_predict import own_attention_kernel

    wanted, core = workload.transformer, own_attention_kernel(base)
    per_sample = [compute_curve_from_shape(
        workload.model_copy(update={"transformer": shape, "params": shape.param_count()}),
        hardware, efficiency, basis, core)[0].per_sample_s for shape in (timed, wanted)]
    if core != VENDOR_KERNEL:
        where += f", the attention core at the {core} kernel's rate (the kernel the timings ran)"
    ratio = per_sample[1] / per_sample[0]
    measured = base.compute
    curve = parse_model({
        **measured.model_dump(mode="json"), "per_sample_s": measured.per_sample_s * ratio,
        "optimizer_step_s": measured.optimizer_step_s * wanted.param_count()
        / timed.param_count(), "rel_rmse": None, "points": [], "max_micro_batch": None,
        "oom_micro_batch": None, "measured": False, "model_shape": wanted.model_dump(mode="json"),
        "source": (f"{measured.source}; measured at sequence {timed.seq_len}, scaled to "
                   f"{wanted.seq_len}: per sample x {ratio:.4g}, the layout model's ratio")},
        ComputeCurve, f"compute of workload '{name}'")
    return WorkloadCompute(match, workload, curve, predict_hw, (
        f"{replaced}the timed model at sequence {wanted.seq_len} instead of "
        f"{timed.seq_len}: the measured curve's per-sample time x {ratio:.4g}, the ratio of the "
        f"two shapes' per-sample times in the layout model {where}; fixed time per micro-step "
        f"as measured{kernel}"))


def parse_profile(data: Any, what: str = "profile") -> Profile:
    """Validate parsed JSON as a profile, naming a foreign or old schema version plainly."""
    if not isinstance(data, dict):
        raise ScalesimError(f"{what}: expected a JSON object with schema_version {PROFILE_VERSION}")
    version = data.get("schema_version")
    if version != PROFILE_VERSION:
        raise ScalesimError(f"{what}: {version_text(version, Profile)}")
    return parse_model(data, Profile, what)


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and validate a profile JSON file."""
    return parse_profile(read_json(require_path(path, "path")), str(path))


def refuse_newer_profile_out(path: str | os.PathLike[str]) -> None:
    """Raise (one line) where ``path``, an ``--out`` a calibration is about to write over, holds
    a profile a newer scalesim wrote: this version's profile would replace it, and what this
    version cannot read would be lost. No file, no JSON, another kind or an older profile: left
    to the writer, as before."""
    if not os.path.isfile(path):
        return
    try:
        data = read_json(path)
    except ScalesimError:
        return
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not (isinstance(version, str) and version.startswith(PROFILE_VERSION.rpartition("/")[0])
            and newer_version(version, PROFILE_VERSION)):
        return
    from scalesim import __version__

    raise ScalesimError(
        f"--out {path} is a profile a newer scalesim wrote (schema_version {version!r}); this "
        f"scalesim ({__version__}) writes {PROFILE_VERSION!r} and would replace it, losing what "
        "it cannot read: upgrade scalesim, or give another --out"
    )


def _json_path(spec: str) -> bool:
    """Whether ``spec`` names a JSON file rather than a preset: a ``.json`` name, or any file
    that exists (a pipe, ``<(cat hw.json)``, has no suffix)."""
    return spec.endswith(".json") or (os.path.exists(spec) and not os.path.isdir(spec))


def load_hardware(spec: str) -> Hardware:
    """A hardware preset name or a JSON file path."""
    spec = require_text(spec, "hardware")
    if spec in presets.HARDWARE or not _json_path(spec):
        return presets.get_hardware(spec)
    return parse_model(read_json(spec), Hardware, spec)


def load_workload(spec: str) -> Workload:
    """A workload preset name or a JSON file path."""
    spec = require_text(spec, "workload")
    if spec in presets.WORKLOADS or spec in presets.TRANSFORMERS or not _json_path(spec):
        return presets.get_workload(spec)
    return parse_model(read_json(spec), Workload, spec)


def resolve_profile(
    profile: str | None = None, hardware: str | None = None, workload: str | None = None,
    seq_len: int | None = None,
) -> Profile:
    """The profile a command predicts from.

    - no profile: presets (``hardware`` and ``workload`` or the defaults);
    - a profile: as measured; ``hardware`` then replaces its server layout and links (projecting
      measured compute onto other machines of the same device; another device is refused
      unless ``workload`` brings a compute curve of its own), ``workload`` its sizes.

    ``seq_len`` (``--seq-len``, tokens): the workload, or the profile's own model, at that
    sequence (``workload_at_sequence``), its compute decided as ``scalesim plan --seq-len``
    decides it: a measured curve scaled (``workload_compute``), else the shape's estimate.
    """
    for name, value in (("profile", profile), ("hardware", hardware), ("workload", workload)):
        if value is not None and require_text(value, name) == "":  # an unset shell variable
            what = "a JSON file" if name == "profile" else "a preset name or a JSON file"
            raise ScalesimError(f"{name}: the name is empty; give {what}")
    if profile is None:
        hw = load_hardware(presets.DEFAULT_HARDWARE if hardware is None else hardware)
        name = presets.DEFAULT_WORKLOAD if workload is None else workload
        own = load_workload(name)
        wl, note = _at_sequence(own, seq_len, name)
        made = sequence_built(lambda w: profile_from_presets(hw, w), own, wl)
        return made.model_copy(update={"notes": [note, *made.notes]}) if note else made
    base = load_profile(profile)
    device = base.hardware.device_name
    if hardware is not None:
        base = with_hardware(base, load_hardware(hardware),
                             f"hardware replaced by '{hardware}'; {compute_kept_words(base)}")
    if workload is None and seq_len is not None:  # its own model at another sequence
        base, match = profile_at_sequence(base, seq_len, device)
        if match == "other":
            return base
    if workload is not None:
        own = load_workload(workload)
        wl, note = _at_sequence(own, seq_len, workload)
        base, match = sequence_built(
            lambda w, b=base: profile_with_workload(b, w, workload, device), own, wl)
        if note:
            base = base.model_copy(update={"notes": [*base.notes, note]})
        if match == "other":  # its compute from its shape on the new hardware's device
            return base
    if hardware is not None:
        _require_same_device(base, device, profile, hardware)
    return base


def profile_at_sequence(base: Profile, seq_len: int,
                        calibrated_device: str | None = None) -> tuple[Profile, MatchKind]:
    """(``base`` predicting its own model at ``seq_len`` tokens per sequence, the match
    ``workload_compute`` decided): the model its workload names, or the transformer its
    measured curve timed (``layout_predict.with_measured_shape``), through
    ``workload_at_sequence`` (its note added) and ``profile_with_workload`` (a measured curve
    scaled to the sequence, else the shape's estimate); ``calibrated_device``: the device the
    curve timed where ``base`` holds another's hardware. What ``--profile P --seq-len S``
    predicts (``resolve_profile``), the app's sequence control on an uploaded profile and a
    library sweep's ``seq_len`` axis (``sweep.plan_sweep``). ScalesimError, one line, for a
    parameter count."""
    from scalesim.layout_predict import with_measured_shape

    base = require_model(base, Profile, "base")
    own = with_measured_shape(base).workload
    wl, note = workload_at_sequence(own, seq_len, own.name, base.name)
    device = calibrated_device or base.hardware.device_name
    at, match = sequence_built(lambda w: profile_with_workload(base, w, None, device), own, wl)
    if note:
        at = at.model_copy(update={"notes": [*at.notes, note]})
    return at, match


def sequence_built(build: Callable[[Workload], T], own: Workload, at: Workload) -> T:
    """``build(at)``, ``at`` being ``own`` at another sequence length (``--seq-len``). Where it
    fails and ``build(own)`` does not, the sequence is the cause (a compute time past its
    bounds: llama3-8b's per-sample time on an A100 passes 1e6 s above ~10.5 million tokens):
    the error says so and how to fix it, not only the derived field that broke."""
    try:
        return build(at)
    except ScalesimError as exc:
        mine, theirs = own.transformer, at.transformer
        if mine is None or theirs is None or mine.seq_len == theirs.seq_len:
            raise
        try:
            build(own)
        except ScalesimError:
            raise exc from None
        asked = f"{KNOB.seq_len} {theirs.seq_len:,}: the model cannot be predicted at that " \
                "sequence length"
        reach = _sequence_reach(build, own, theirs.seq_len)
        most = "at most" if reach >= mine.seq_len else "at least"
        raise ScalesimError(knob_refusal(  # the app: the range that works, not the field
            f"{asked}; give {most} {reach:,} tokens (the model's own: {mine.seq_len:,})",
            ("seq_len",),
            cli=f"{asked} ({as_literal(str(exc))}); give a sequence length nearer its own, "
                f"{mine.seq_len:,} tokens")) from None


def _sequence_reach(build: Callable[[Workload], Any], own: Workload, refused: int) -> int:
    """The sequence length farthest from ``own``'s toward ``refused`` (which ``build`` refuses)
    at which ``build`` still succeeds, to 3 significant digits toward ``own``'s: bisected on
    the logarithm of the length, as the compute a sequence takes grows with it (a time past
    its bound above, below a picosecond under). What the app's sequence refusal gives as the
    lengths that work."""
    good, bad = own.transformer.seq_len, refused
    while max(good, bad) / min(good, bad) > 1.001 and abs(bad - good) > 1:
        mid = round(math.sqrt(good * bad))
        if mid in (good, bad):
            break
        try:
            build(workload_at_sequence(own, mid, own.name)[0])
        except ScalesimError:
            bad = mid
        else:
            good = mid
    digits = 10 ** max(0, len(str(good)) - 3)  # 10,546,222 -> 10,500,000 (still below)
    shown = good // digits * digits if bad > good else -(-good // digits) * digits
    return shown if (shown - own.transformer.seq_len) * (bad - good) >= 0 else good


def _at_sequence(workload: Workload, seq_len: int | None, name: str,
                 profile: str | None = None) -> tuple[Workload, str]:
    """``workload_at_sequence`` where ``seq_len`` is given, else ``workload`` as it is."""
    if seq_len is None:
        return workload, ""
    return workload_at_sequence(workload, seq_len, name, profile)


def workload_at_sequence(workload: Workload, seq_len: int, name: str,
                         profile: str | None = None) -> tuple[Workload, str]:
    """(``workload`` at ``seq_len`` tokens per sequence, the note that says what changed; ''
    where the sequence is its own): what ``--seq-len`` plans (``scalesim plan``) and predicts
    (``resolve_profile``: predict, sweep, decide, goal). The transformer's sequence replaced and
    the parameters that shape's count (learned positions grow with it), as plan counts them. At
    another sequence than its own: a sample unit that names the tokens ('sequences of 8192
    tokens') names the new length; a training length the workload gives is kept in tokens (its
    sequences x old / new length); a published run's throughput (``reference``) is dropped, as
    plan never reads it: it was measured at the workload's own sequence, and the compute then
    comes from the shape (``compute_curve_from_reference``), as plan ranks it. The note (and a
    refusal) names the knob by its control (``layout.knob_value_refusal``): '--seq-len 4098:
    ...' as the CLI says it, its template kept so that the app says its control's label
    ('Sequence length 4098: ...', ``errors.in_words_of``). ScalesimError, one line, for a
    parameter-count workload (``name``; ``profile``: the profile whose own model it is)."""
    workload = require_model(workload, Workload, "workload")
    shape = workload.transformer
    if shape is None:
        whose = (f"profile '{profile}' records no transformer shape of its model (workload "
                 f"'{name}' is a parameter count)" if profile
                 else f"workload '{name}' is a parameter count only")
        hint = (f"the data-parallel preset; scalesim plan --workload {name} --seq-len {seq_len} "
                "plans the transformer preset of that name, or give a workload file with its "
                "'transformer' shape" if profile is None and name in presets.TRANSFORMERS else
                "give --workload with a 'transformer' shape (e.g. llama3-8b)")
        raise ScalesimError(knob_value_refusal(
            "seq_len", str(seq_len),
            f"{whose}, with no transformer shape whose sequence could change ({hint})"))
    old = shape.seq_len
    at = shape.model_copy(update={"seq_len": seq_len})
    update: dict[str, Any] = {"transformer": at, "params": at.param_count()}
    if seq_len == old:
        return workload.model_copy(update=update), ""
    said = [f"the transformer at {seq_len:,} tokens per sequence instead of the workload's "
            f"{old:,} ({at.param_count():,.0f} parameters)"]
    if workload.sample_unit == f"sequences of {old} tokens":
        update["sample_unit"] = f"sequences of {seq_len} tokens"
    if workload.train_samples is not None:
        update["train_samples"] = workload.train_samples * old / seq_len
        said.append(f"its training length kept in tokens: {workload.train_samples:.4g} "
                    f"sequences of {old} = {update['train_samples']:.4g} of {seq_len}")
    if workload.reference:
        update["reference"] = []
        said.append(f"its published throughput (reference) was measured at {old} tokens and is "
                    "not used: the compute comes from the shape, as scalesim plan ranks it")
    data = {**workload.model_dump(), **{k: v for k, v in update.items() if k != "transformer"},
            "transformer": at.model_dump()}
    note = knob_value_refusal("seq_len", str(seq_len), "; ".join(said))
    return parse_model(data, Workload, f"workload '{name}' at --seq-len {seq_len}"), note


def with_hardware(base: Profile, hardware: Hardware, note: str) -> Profile:
    """``base`` with ``hardware`` for its own and ``note`` added, validated as a loaded profile
    is (``Profile``'s notes): the note on a CPU hardware without ``comm_compute_contention``
    (``CPU_CONTENTION_NOTE``) follows the new hardware, not the one it replaces."""
    notes = [n for n in base.notes if n != CPU_CONTENTION_NOTE]
    fields = {name: getattr(base, name) for name in Profile.model_fields}
    return Profile(**{**fields, "hardware": hardware, "notes": [*notes, note]})


def profile_with_workload(base: Profile, workload: Workload, name: str | None,
                          calibrated_device: str | None = None) -> tuple[Profile, MatchKind]:
    """``base`` predicting ``workload`` (named ``name`` in the notes; None: the profile's own
    model, ``workload_compute``), with the compute and
    hardware ``workload_compute`` decides, and the match; what ``--profile P --workload W``
    predicts (``resolve_profile``) and ``scalesim plan --profile`` ranks."""
    decided = workload_compute(base, workload, name, calibrated_device)
    changes: dict[str, Any] = {"workload": decided.workload, "notes": [*base.notes, decided.note]}
    if decided.match != "same":
        changes.update(compute=decided.compute, hardware=decided.hardware)
    return base.model_copy(update=changes), decided.match


def measured_ceiling(base: Profile, workload: Workload) -> int:
    """The smallest micro-batch (samples per micro-step) ``base``'s calibration ran out of
    memory at (``ComputeCurve.oom_micro_batch``), where ``workload`` is the model it timed at
    its sequence; 0 where it saw none or for another sequence or model, whose activations
    differ (``workload_compute`` keeps it for the same model only, as ``--profile P
    --workload W`` predicts). What ``scalesim plan --profile`` gives ``plan.plan`` off the
    measured curve (``--efficiency``, ``--precision fp8``, a curve not measured), as
    ``layout_predict.plan_at`` takes it on the curve."""
    base = require_model(base, Profile, "base")
    if not base.compute.oom_micro_batch:
        return 0
    return workload_compute(base, workload, None).compute.oom_micro_batch or 0


def compute_kept_words(profile: Profile) -> str:
    """The note of a profile whose compute curve is kept as it is: true of a measured curve
    and of the presets' estimate that a ``calibrate --from-...`` profile holds."""
    if profile.compute.measured:
        return "compute stays as measured"
    return "compute stays as the profile's estimate (not measured)"


def _require_same_device(base: Profile, timed: str, profile: str, name: str) -> None:
    """A profile's compute curve times its own device ``timed``: refuse ``--hardware`` of another
    device (``presets.same_device``; ``base`` carries it) where that curve would stay, as measured
    or scaled to another sequence (ScalesimError, one line)."""
    other = base.hardware.device_name
    if presets.same_device(timed, other):
        return
    how = ("timed its compute on" if base.compute.measured else
           "holds a compute estimate (not measured) for")
    raise ScalesimError(
        f"--hardware '{name}' has device '{other}', but profile '{profile}' {how} "
        f"'{timed}' and {'those times describe' if base.compute.measured else 'it describes'} "
        "only that device: for another device predict from "
        "the presets (--hardware and --workload without --profile) or give --workload with a "
        "transformer shape (its compute from the device's datasheet); for other servers or links "
        f"of the same device give a hardware file with device_name '{timed}'")
