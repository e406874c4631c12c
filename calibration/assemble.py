"""From finished phases to one validated Profile (pure: no measurement here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scalesim.calibration.results import (
    BlockResult,
    CollectiveResult,
    ComputeResult,
    JitterResult,
    LoaderResult,
    NoiseResult,
    PhaseRecord,
)

from scalesim.bounds import clip
from scalesim.errors import ScalesimError
from scalesim.figures import latency_us, link_GBps
from scalesim.schemas import (
    BLOCK_NOT_USABLE,
    LAUNCH_BOUND,
    BlockPoint,
    BlockShape,
    Fingerprint,
    Hardware,
    LinkLevel,
    MessagePoint,
    ModelParallelCalibration,
    Profile,
    Topology,
    Workload,
    fit_above_peak,
)


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
    on_gpu: bool = False


def default_micro_batch(args, compute: ComputeResult | None) -> int:
    """--micro-batch, else the largest micro-batch the compute phase ran, else the largest asked."""
    if args.micro_batch:
        return args.micro_batch
    if compute is not None:
        return compute.curve.points[-1].micro_batch
    return max(args.batches)


def build_profile(
    args, machine: Machine, records: dict[str, PhaseRecord], links: tuple[LinkLevel, LinkLevel, list]
) -> Profile:
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
        device_name=machine.device_name,
        devices_per_node=machine.devices_per_node,
        device_memory_bytes=machine.device_memory_bytes,
        cpu_cores_per_node=machine.cpu_cores_per_node,
        intra_node=intra,
        inter_node=inter,
        comm_compute_contention=machine.comm_compute_contention,
        topology=machine.topology,
        source=f"scalesim calibrate on {hosts}, {fp.date_utc}; {machine.memory_note}".strip("; "),
    )
    e = compute.element_bytes
    workload = Workload(
        name=compute.model_name,
        params=compute.params,
        wire_bytes_per_param=e,
        param_bytes_per_param=e,
        grad_bytes_per_param=e,
        optimizer_bytes_per_param=compute.optimizer_state_elements * e,
        activation_bytes_per_sample=compute.activation_bytes_per_sample,
        micro_batch=default_micro_batch(args, compute),
        sample_unit=compute.sample_unit,
        backward_fraction=compute.backward_fraction,
        source=(
            f"calibrated model {compute.model_name}: {compute.params:,} parameters of {e} "
            f"bytes (gradients all-reduced at that size), {compute.optimizer} optimizer "
            f"state {compute.optimizer_state_elements}x, precision {compute.precision}; "
            f"backward share measured ({compute.backward_fraction:.3f})"
        ),
    )
    notes = list(machine.notes)
    for rec in records.values():
        notes.extend(rec.notes)
    if noise is not None and noise.note:
        notes.append(noise.note)
    if jitter is not None:
        notes.extend(jitter.device_health)
    try:
        model_parallel = model_parallel_section(
            compute.block,
            records["collectives"].parsed().messages if "collectives" in records else [],
            machine.device_name,
            compute.precision,
            machine.on_gpu,
        )
    except ScalesimError as exc:  # the rest of the calibration stands without it
        model_parallel = None
        notes.append(
            f"{BLOCK_NOT_USABLE}: {exc}; measured (ms): "
            + ", ".join(f"tp {p.tp}: {p.time_s * 1e3:.3g}" for p in compute.block.points)
        )
    return Profile(
        name=hardware.name + f" + {compute.model_name}",
        fingerprint=fp,
        hardware=hardware,
        workload=workload,
        compute=compute.curve,
        links=link_cals,
        input_pipeline=loader.curve if loader else None,
        jitter=jitter.jitter if jitter else None,
        noise_scale=noise.noise if noise else None,
        model_parallel=model_parallel,
        notes=notes,
    )


POOR_FIT = 0.25  # a block fit's relative RMS error above which the profile warns


def model_parallel_section(
    block: BlockResult | None, messages: list[MessagePoint], device_name: str, precision: str, on_gpu: bool
) -> ModelParallelCalibration | None:
    """The profile's model-parallel section: the layout model's roofline fitted to the block
    timings (``block_fit.fit_block``), the device's datasheet peak where one is listed for the
    run's precision, and the tp/pp messages with a send/recv alpha-beta."""
    if block is None:
        return None
    from scalesim.calibration.block_fit import Block, fit_block
    from scalesim.calibration.link_fit import fit_send_recv

    from scalesim.attention_kernel import planner_kernel_of
    from scalesim.presets import attention_share, peak_tflops_of

    shape = Block(
        block.hidden, block.heads, block.ffn_hidden, block.seq_len, block.micro_batch, block.flash_attention
    )
    tps = [p.tp for p in block.points]
    listed = peak_tflops_of(device_name) if on_gpu and precision in ("bf16", "fp16") else None
    peak = listed[0] if listed else None
    # the planner runs the block's attention core at min(share, efficiency) of the peak where
    # the kernel the block ran (SDPA's dispatch said; the vendor kernel where none was) has
    # a rate of its own on the device (the A100's FlashAttention-2, FlashAttention-2 on Hopper,
    # docs/model.md §13): the fit runs it so too, and the profile reproduces its own timings
    kernel = planner_kernel_of(block.attention_kernel)
    share = attention_share(device_name, kernel, block.flash_attention) if peak else None
    fit = fit_block(
        shape,
        tps,
        [p.time_s for p in block.points],
        [p.spread_s for p in block.points],
        [p.repeats for p in block.points],
        core_flops_per_s=peak * 1e12 * share if share else None,
    )
    sustained = clip("peak_tflops", fit.flops_per_s / 1e12)
    bandwidth = clip("memory_bandwidth_GBps", fit.memory_bytes_per_s / 1e9)
    efficiency = clip("matmul_efficiency", sustained / peak) if peak else None
    p2p = fit_send_recv(messages)
    where = (
        f"; efficiency against the {peak:g} TFLOP/s {precision} peak ({listed[1]})"
        + (f", the attention core at min({share:.3g}, efficiency) of it ({kernel} kernel)"
           if share else "")
        if peak
        else "; no datasheet peak for this device and precision: the planner "
        "takes the sustained rate as the peak (efficiency 1, MFU against it)"
    )
    return ModelParallelCalibration(
        block=BlockShape(
            hidden=block.hidden,
            heads=block.heads,
            ffn_hidden=block.ffn_hidden,
            seq_len=block.seq_len,
            micro_batch=block.micro_batch,
            element_bytes=block.element_bytes,
            flash_attention=block.flash_attention,
            module=block.module,
            attention_kernel=block.attention_kernel,
        ),
        points=[
            BlockPoint(
                tp=p.tp,
                time_s=p.time_s,
                forward_s=p.forward_s,
                backward_s=p.backward_s,
                spread_s=p.spread_s,
                repeats=p.repeats,
                model_s=float(m),
            )
            for p, m in zip(block.points, fit.model_s, strict=True)
        ],
        sustained_tflops=sustained,
        memory_bandwidth_GBps=bandwidth,
        peak_tflops=peak,
        matmul_efficiency=efficiency,
        rel_rmse=clip("rel_error", fit.rel_rmse),
        messages=messages,
        p2p_latency_s=clip("latency_s", p2p[0]) if p2p else None,
        p2p_bandwidth_GBps=clip("bandwidth_GBps", p2p[1]) if p2p else None,
        source=(
            f"{block.source}; the layout model's layer time A/F + C/B (docs/model.md §13) "
            f"fitted to the {len(tps)} shard(s) by relative least squares: sustained "
            f"{sustained:.4g} TFLOP/s, memory {bandwidth:.4g} GB/s, rel. RMSE "
            f"{fit.rel_rmse:.1%}{where}"
            + (
                f"; the roofline explains these timings poorly (error above "
                f"{POOR_FIT:.0%}): check that the --block-* flags describe the block timed, "
                "and time a larger one"
                if fit.rel_rmse > POOR_FIT
                else ""
            )
            + (f"; {LAUNCH_BOUND}" if fit_above_peak(sustained, peak) else "")
            + (
                f"; send/recv inside a server fitted like the collectives (alpha "
                f"{latency_us(p2p[0])}, {link_GBps(p2p[1])}, rel. RMSE {p2p[2]:.1%}): layout "
                "predictions charge pipeline sends inside a server with it (docs/model.md "
                "§15)"
                if p2p
                else ""
            )
        ),
    )


def link_levels(collectives: CollectiveResult | None, fallback) -> tuple[LinkLevel, LinkLevel, list]:
    """Links from the collectives phase, or from flags/presets (``fallback(level)``) without it."""
    if collectives is not None and collectives.intra and collectives.inter:
        return collectives.intra, collectives.inter, list(collectives.links)
    intra, intra_cal = fallback("intra_node")
    inter, inter_cal = fallback("inter_node")
    return intra, inter, [intra_cal, inter_cal]
