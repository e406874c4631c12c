"""From finished phases to one validated Profile (pure: no measurement here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scalesim.calibration.results import (
    CollectiveResult,
    ComputeResult,
    JitterResult,
    LoaderResult,
    NoiseResult,
    PhaseRecord,
)

from scalesim.schemas import Fingerprint, Hardware, LinkLevel, Profile, Topology, Workload


@dataclass
class Machine:
    """What the run knows about where it ran (filled by the runner)."""

    device_name: str
    device_memory_bytes: float
    devices_per_node: int
    cpu_cores_per_node: int
    fingerprint: Fingerprint
    comm_compute_contention: float  # 1 on CPUs (gloo sums on the compute cores), 0.159 on GPUs
    memory_note: str = ""
    notes: list[str] = field(default_factory=list)
    topology: Topology | None = None  # nvidia-smi topo -m of this server, when it ran


def default_micro_batch(args, compute: ComputeResult | None) -> int:
    """--micro-batch, else the largest micro-batch the compute phase ran, else the largest asked."""
    if args.micro_batch:
        return args.micro_batch
    if compute is not None:
        return compute.curve.points[-1].micro_batch
    return max(args.batches)


def build_profile(args, machine: Machine, records: dict[str, PhaseRecord],
                  links: tuple[LinkLevel, LinkLevel, list]) -> Profile:
    """The profile from the compute record (required) and whatever other phases finished."""
    compute: ComputeResult = records["compute"].parsed()
    loader: LoaderResult | None = records["loader"].parsed() if "loader" in records else None
    jitter: JitterResult | None = records["jitter"].parsed() if "jitter" in records else None
    noise: NoiseResult | None = records["noise"].parsed() if "noise" in records else None
    intra, inter, link_cals = links
    fp = machine.fingerprint
    hosts = ", ".join(sorted(set(fp.hostnames))) or "unknown host"
    hardware = Hardware(
        name=args.name or f"calibrated {machine.device_name} x{machine.devices_per_node} ({hosts})",
        device_name=machine.device_name, devices_per_node=machine.devices_per_node,
        device_memory_bytes=machine.device_memory_bytes,
        cpu_cores_per_node=machine.cpu_cores_per_node, intra_node=intra, inter_node=inter,
        comm_compute_contention=machine.comm_compute_contention, topology=machine.topology,
        source=f"scalesim calibrate on {hosts}, {fp.date_utc}; {machine.memory_note}".strip("; "),
    )
    e = compute.element_bytes
    workload = Workload(
        name=compute.model_name, params=compute.params, wire_bytes_per_param=e,
        param_bytes_per_param=e, grad_bytes_per_param=e,
        optimizer_bytes_per_param=compute.optimizer_state_elements * e,
        activation_bytes_per_sample=compute.activation_bytes_per_sample,
        micro_batch=default_micro_batch(args, compute), sample_unit=compute.sample_unit,
        backward_fraction=compute.backward_fraction,
        source=(f"calibrated model {compute.model_name}: {compute.params:,} parameters of {e} "
                f"bytes (gradients all-reduced at that size), {compute.optimizer} optimizer "
                f"state {compute.optimizer_state_elements}x, precision {compute.precision}; "
                f"backward share measured ({compute.backward_fraction:.3f})"),
    )
    notes = list(machine.notes)
    for rec in records.values():
        notes.extend(rec.notes)
    if noise is not None and noise.note:
        notes.append(noise.note)
    if jitter is not None:
        notes.extend(jitter.device_health)
    return Profile(
        name=hardware.name + f" + {compute.model_name}",
        fingerprint=fp, hardware=hardware, workload=workload, compute=compute.curve,
        links=link_cals,
        input_pipeline=loader.curve if loader else None,
        jitter=jitter.jitter if jitter else None,
        noise_scale=noise.noise if noise else None,
        notes=notes,
    )


def link_levels(collectives: CollectiveResult | None, fallback) -> tuple[LinkLevel, LinkLevel,
                                                                            list]:
    """Links from the collectives phase, or from flags/presets (``fallback(level)``) without it."""
    if collectives is not None and collectives.intra and collectives.inter:
        return collectives.intra, collectives.inter, list(collectives.links)
    intra, intra_cal = fallback("intra_node")
    inter, inter_cal = fallback("inter_node")
    return intra, inter, [intra_cal, inter_cal]
