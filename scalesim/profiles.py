"""Building, loading and combining calibration profiles.

A profile is what the model predicts from. A measured one comes from ``scalesim calibrate``; a
preset one is built here from a hardware preset and a workload preset: its compute curve comes
from the workload's published per-device throughput (``per_sample_s = 1/throughput``, no fixed
overhead known), scaled by the ratio of dense fp16/bf16 peak TFLOP/s when the published number is
for another device. That scaling is crude (utilisation differs between generations) and the
profile says so in its notes.
"""

from __future__ import annotations

import os
from typing import Any

from scalesim import presets
from scalesim.errors import ScalesimError, require_model, require_path, require_text
from scalesim.jsonio import parse_model, read_json
from scalesim.model.compute import optimizer_roofline_s
from scalesim.schemas import (
    PROFILE_VERSION,
    ComputeCurve,
    Fingerprint,
    Hardware,
    LinkCalibration,
    Profile,
    Workload,
)


def _peak_tflops(device_name: str, extra: Hardware | None = None) -> float | None:
    known = {h.device_name: h.peak_tflops for h in presets.HARDWARE.values()}
    if extra is not None and extra.peak_tflops is not None:
        known[extra.device_name] = extra.peak_tflops
    return known.get(device_name)


def memory_bandwidth_GBps(device_name: str, given: float | None = None) -> float | None:
    """``given``, else the datasheet memory bandwidth of ``device_name``
    (``presets.memory_bandwidth_of``), else None."""
    if given is not None:
        return given
    known = presets.memory_bandwidth_of(device_name)
    return known[0] if known else None


def optimizer_estimate_s(workload: Workload, bandwidth_GBps: float) -> float:
    """Memory-bound optimizer step of ``workload`` on a device of ``bandwidth_GBps``, s."""
    return float(optimizer_roofline_s(workload.params, workload.param_bytes_per_param,
                                      workload.grad_bytes_per_param,
                                      workload.optimizer_bytes_per_param, bandwidth_GBps))


def compute_from_reference(workload: Workload, hardware: Hardware) -> tuple[ComputeCurve, str]:
    """A compute curve for ``workload`` on ``hardware`` from the workload's reference numbers.

    The reference throughput includes the optimizer step, once per ``micro_batch *
    accumulation`` samples. With the reference device's memory bandwidth known, that share
    (memory-bound estimate) is taken out of the per-sample time and the optimizer step is
    estimated on ``hardware`` the same way, so predictions at other batches and accumulations
    pay it once per step.
    """
    workload = require_model(workload, Workload, "workload")
    hardware = require_model(hardware, Hardware, "hardware")
    if not workload.reference:
        raise ScalesimError(
            f"workload '{workload.name}' has no reference throughput; add one to its 'reference' "
            "list or calibrate a profile (scalesim calibrate)"
        )
    same = [r for r in workload.reference if r.device_name == hardware.device_name]
    ref = same[0] if same else workload.reference[0]
    per_sample_s = 1.0 / ref.samples_per_s
    note = f"compute: {ref.samples_per_s:.4g} {workload.sample_unit}/s per device ({ref.source})"
    bandwidth = memory_bandwidth_GBps(hardware.device_name, hardware.memory_bandwidth_GBps)
    ref_bandwidth = bandwidth if same else memory_bandwidth_GBps(ref.device_name)
    optimizer_s = 0.0
    if bandwidth is not None and ref_bandwidth is not None:
        share_s = optimizer_estimate_s(workload, ref_bandwidth) / (
            ref.micro_batch * ref.accumulation)
        if share_s < 0.5 * per_sample_s:  # else the estimate would eat most of the measured time
            per_sample_s -= share_s
            optimizer_s = optimizer_estimate_s(workload, bandwidth)
    if not same:
        ref_peak = _peak_tflops(ref.device_name, hardware)
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
         "precision": "published", "measured": False, "source": note},
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
            LinkCalibration(level="intra_node", measured=False, note=hardware.intra_node.source),
            LinkCalibration(level="inter_node", measured=False, note=hardware.inter_node.source),
        ],
        notes=[note, "no fixed per-micro-step overhead is known for presets, and the optimizer "
               "step is a memory-bandwidth estimate: calibrate to measure both"],
    )


def default_profile() -> Profile:
    """The built-in default: the default hardware and workload presets."""
    return profile_from_presets(
        presets.get_hardware(presets.DEFAULT_HARDWARE), presets.get_workload(presets.DEFAULT_WORKLOAD)
    )


def parse_profile(data: Any, what: str = "profile") -> Profile:
    """Validate parsed JSON as a profile, naming a foreign or old schema version plainly."""
    if not isinstance(data, dict):
        raise ScalesimError(f"{what}: expected a JSON object with schema_version {PROFILE_VERSION}")
    version = data.get("schema_version")
    if version != PROFILE_VERSION:
        raise ScalesimError(
            f"{what}: schema_version is {version!r}, this scalesim reads '{PROFILE_VERSION}'; "
            "re-run scalesim calibrate or convert the file"
        )
    return parse_model(data, Profile, what)


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and validate a profile JSON file."""
    return parse_profile(read_json(require_path(path, "path")), str(path))


def load_hardware(spec: str) -> Hardware:
    """A hardware preset name or a JSON file path."""
    spec = require_text(spec, "hardware")
    if spec in presets.HARDWARE or not spec.endswith(".json"):
        return presets.get_hardware(spec)
    return parse_model(read_json(spec), Hardware, spec)


def load_workload(spec: str) -> Workload:
    """A workload preset name or a JSON file path."""
    spec = require_text(spec, "workload")
    if spec in presets.WORKLOADS or not spec.endswith(".json"):
        return presets.get_workload(spec)
    return parse_model(read_json(spec), Workload, spec)


def resolve_profile(
    profile: str | None = None, hardware: str | None = None, workload: str | None = None
) -> Profile:
    """The profile a command predicts from.

    - no profile: presets (``hardware`` and ``workload`` or the defaults);
    - a profile: as measured; ``hardware`` then replaces its server layout and links (projecting
      measured compute onto other machines of the same device), ``workload`` its sizes.
    """
    for name, value in (("profile", profile), ("hardware", hardware), ("workload", workload)):
        if value is not None:
            require_text(value, name)
    if profile is None:
        hw = load_hardware(hardware or presets.DEFAULT_HARDWARE)
        wl = load_workload(workload or presets.DEFAULT_WORKLOAD)
        return profile_from_presets(hw, wl)
    base = load_profile(profile)
    changes: dict[str, Any] = {}
    notes = list(base.notes)
    if hardware is not None:
        changes["hardware"] = load_hardware(hardware)
        notes.append(f"hardware replaced by '{hardware}'; compute stays as measured")
    if workload is not None:
        changes["workload"] = load_workload(workload)
        notes.append(f"workload sizes replaced by '{workload}'; compute stays as measured")
    if changes:
        changes["notes"] = notes
        return base.model_copy(update=changes)
    return base
