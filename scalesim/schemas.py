"""The file formats at scalesim's edges: hardware, workload, calibration profile, scenario.

Every format is a versioned pydantic v2 model (``schema_version``), exported as JSON Schema by
``scalesim schema NAME``. Units are in the field names (``_s`` seconds, ``_bytes`` bytes,
``_GBps`` gigabytes (1e9 bytes) per second, ``gbit_`` gigabits per second).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scalesim.bounds import bound, bounded, items_bounded, knob_field
from scalesim.model.overlap import GPU_COMM_CONTENTION
from scalesim.model.stragglers import DEVICE_SPEED_CV

HARDWARE_VERSION = "scalesim-hardware/1"
WORKLOAD_VERSION = "scalesim-workload/1"
PROFILE_VERSION = "scalesim-profile/1"
SCENARIO_VERSION = "scalesim-scenario/1"

Strategy = Literal["ddp", "zero1", "zero2", "zero3"]
Algorithm = Literal["auto", "ring", "tree", "hierarchical"]
LinkLevelName = Literal["intra_node", "inter_node"]


class _Strict(BaseModel):
    """Unknown fields, infinities and NaN are refused; every number has bounds (scalesim.bounds)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class LinkLevel(_Strict):
    """One level of the interconnect, described as nccl-tests would measure it."""

    kind: str = Field(description="nvlink2, nvswitch-a100, pcie4, infiniband, ethernet, loopback...")
    busbw_GBps: float = bounded(
        "busbw_GBps",
        description="all-reduce bus bandwidth, GB/s (1e9 bytes/s), nccl-tests convention; across "
        "servers: what one whole node sustains over all its NICs",
    )
    latency_s: float = bounded("latency_s", description="alpha: latency of one algorithm step, seconds")
    nics_per_node: int | None = bounded("nics_per_node", None, "NICs per server (inter)")
    gbit_per_nic: float | None = bounded("gbit_per_nic", None, "NIC line rate, Gbit/s")
    source: str = Field(default="", description="where the numbers come from")


class Hardware(_Strict):
    """A server type and how servers are joined."""

    schema_version: Literal["scalesim-hardware/1"] = HARDWARE_VERSION
    name: str
    device_name: str
    devices_per_node: int = bounded("devices_per_node")
    device_memory_bytes: float = bounded("device_memory_bytes")
    peak_tflops: float | None = bounded(
        "peak_tflops", None, description="dense fp16/bf16 tensor peak, TFLOP/s (for scaling compute)"
    )
    memory_bandwidth_GBps: float | None = bounded(
        "memory_bandwidth_GBps", None,
        description="device memory bandwidth, GB/s (vendor spec); preset profiles estimate the "
                    "optimizer step from it (memory-bound update)",
    )
    cpu_cores_per_node: int = bounded("cpu_cores", 64, "cores the data loaders share")
    device_speed_cv: float = bounded(
        "cv", DEVICE_SPEED_CV,
        description="std/mean of the speed of identical devices (default from Sinha et al. SC'22)",
    )
    intra_node: LinkLevel
    inter_node: LinkLevel
    comm_compute_contention: float = bounded(
        "fraction", GPU_COMM_CONTENTION,
        description="share of overlapped collective time that still takes compute time: 0 when "
        "collectives run beside compute for free, 0.159 for NCCL on GPUs (compute 18.9% slower "
        "while collectives run, Lee et al. arXiv:2507.03114), 1 when they share the compute "
        "cores (gloo on CPUs)",
    )
    price_per_device_hour: float | None = bounded("price_per_device_hour", None, "USD per device-hour")
    source: str = ""


class ReferenceThroughput(_Strict):
    """A published or measured per-device training throughput of a workload."""

    device_name: str
    samples_per_s: float = bounded("samples_per_s", description="per device, steady state")
    micro_batch: int = bounded("micro_batch")
    accumulation: int = bounded("accumulation", 1, "micro-steps per optimizer step")
    source: str


class Workload(_Strict):
    """What is being trained: sizes that set communication, memory and compute."""

    schema_version: Literal["scalesim-workload/1"] = WORKLOAD_VERSION
    name: str
    params: float = bounded("params", description="parameters Psi = gradient elements exchanged per step")
    wire_bytes_per_param: float = bounded(
        "wire_bytes_per_param", 2.0,
        description="bytes per gradient element on the wire (4 fp32, 2 fp16/bf16)")
    param_bytes_per_param: float = bounded("bytes_per_param", 2.0, "weights in memory")
    grad_bytes_per_param: float = bounded("bytes_per_param", 2.0, "gradients in memory")
    optimizer_bytes_per_param: float = bounded(
        "bytes_per_param", 12.0, description="optimizer state (mixed-precision Adam: 12, ZeRO paper K)"
    )
    activation_bytes_per_sample: float = bounded("activation_bytes", 0.0, "0 = unknown")
    micro_batch: int = bounded("micro_batch", 32, "default samples per device per micro-step")
    sample_unit: str = "samples"
    backward_fraction: float = bounded(
        "backward_fraction", 2.0 / 3.0, description="share of forward+backward time in backward"
    )
    critical_batch_size: float | None = bounded("critical_batch", None, "B_noise, samples")
    min_samples_to_quality: float | None = bounded(
        "samples_total", None, description="E_min: samples to the target at a tiny batch"
    )
    train_samples: float | None = bounded("samples_total", None, "samples in one training run")
    reference: list[ReferenceThroughput] = Field(default_factory=list)
    source: str = ""


class ComputePoint(_Strict):
    micro_batch: int = bounded("micro_batch")
    time_s: float = bounded("positive_duration_s",
                            description="median forward+backward time of one micro-step")
    spread_s: float = bounded("duration_s", 0.0, "interquartile range over repeats")
    repeats: int = bounded("repeats", 1)


class ComputeCurve(_Strict):
    """Forward+backward time per micro-step vs micro-batch: ``overhead_s + per_sample_s * b``,
    as timed with ``colocated_devices`` of one server busy (``alone()`` gives one device's)."""

    overhead_s: float = bounded("duration_s", description="fixed time per micro-step, s")
    per_sample_s: float = bounded("positive_duration_s", description="time per sample, s")
    optimizer_step_s: float = bounded("duration_s", 0.0, "optimizer update per step, s")
    rel_rmse: float | None = bounded("rel_error", None, "fit quality on the points")
    points: list[ComputePoint] = Field(default_factory=list)
    max_micro_batch: int | None = bounded(
        "micro_batch", None, description="largest micro-batch that ran (out-of-memory ceiling)"
    )
    oom_micro_batch: int | None = bounded(
        "micro_batch", None, description="smallest micro-batch that ran out of memory, if any"
    )
    colocated_devices: int = bounded(
        "devices_per_node", 1,
        description="devices of one server that computed at once while the points were timed",
    )
    colocation_slowdown: float = bounded(
        "slowdown", 0.0,
        description="extra micro-step time (fraction, 0.08 = 8%) with colocated_devices busy at "
                    "once against one device alone; the model scales it per extra busy device",
    )
    precision: str = "unknown"
    measured: bool = False
    source: str = ""

    @model_validator(mode="after")
    def _slowdown_needs_company(self) -> ComputeCurve:
        if self.colocation_slowdown > 0 and self.colocated_devices < 2:
            raise ValueError("colocation_slowdown is measured against devices that computed at "
                             "once: set colocated_devices to 2 or more, or the slowdown to 0")
        return self

    def alone(self) -> tuple[float, float, float]:
        """(overhead_s, per_sample_s, optimizer_step_s) of one device alone in its server (the
        timings were taken with ``colocated_devices`` busy)."""
        factor = 1.0 + self.colocation_slowdown if self.colocated_devices > 1 else 1.0
        return self.overhead_s / factor, self.per_sample_s / factor, self.optimizer_step_s / factor


class CollectivePoint(_Strict):
    """One row of an nccl-tests style table."""

    op: Literal["all_reduce", "reduce_scatter", "all_gather"]
    size_bytes: float = bounded("message_bytes")
    ranks: int = bounded("collective_ranks")
    time_s: float = bounded("positive_duration_s")
    algbw_GBps: float = bounded("bandwidth_GBps")
    busbw_GBps: float = bounded("bandwidth_GBps")


class LinkCalibration(_Strict):
    """Raw collective timings on one link level and the alpha-beta fit."""

    level: LinkLevelName
    measured: bool
    points: list[CollectivePoint] = Field(default_factory=list)
    rel_rmse: float | None = bounded("rel_error", None)
    note: str = ""


class LoaderPoint(_Strict):
    workers: int = bounded("loader_workers")
    samples_per_s: float = bounded("samples_per_s")


class LoaderCurve(_Strict):
    """Input-pipeline supply of one process vs DataLoader ``num_workers``."""

    points: list[LoaderPoint] = Field(min_length=1)
    measured: bool = False
    source: str = ""


class Jitter(_Strict):
    """Step-time spread across steps and ranks."""

    step_time_cv: float = bounded(
        "cv", description="std/mean of one rank's step time (calibration: the normal-consistent "
        "(IQR / 1.349) / median, robust to bursts from other processes)")
    per_rank_median_s: list[items_bounded("positive_duration_s")] = Field(  # type: ignore[valid-type]
        default_factory=list)
    slow_rank: int | None = bounded("rank", None)
    slow_factor: float = bounded("slow_factor", 1.0, "slow rank's median over the others'")


class NoiseScale(_Strict):
    """Gradient noise scale estimate (McCandlish et al. 2018, appendix A)."""

    b_simple: float = bounded("noise_scale", description="samples")
    small_batch: int = bounded("global_batch")
    big_batch: int = bounded("global_batch")


class Fingerprint(_Strict):
    """Where and how a profile was measured."""

    device_name: str = "unknown"
    device_count: int = bounded("devices", 1)
    nodes: int = bounded("nodes", 1)
    backend: str = "none"
    torch_version: str | None = None
    nccl_version: str | None = None
    cuda_version: str | None = None
    hostnames: list[str] = Field(default_factory=list)
    date_utc: str = ""


class Profile(_Strict):
    """A calibration profile: everything the model needs to predict for one setup."""

    schema_version: Literal["scalesim-profile/1"] = PROFILE_VERSION
    name: str
    fingerprint: Fingerprint = Field(default_factory=Fingerprint)
    hardware: Hardware
    workload: Workload
    compute: ComputeCurve
    links: list[LinkCalibration] = Field(default_factory=list)
    input_pipeline: LoaderCurve | None = None
    jitter: Jitter | None = None
    noise_scale: NoiseScale | None = None
    notes: list[str] = Field(default_factory=list)


class Scenario(_Strict):
    """The what-if knobs. ``None`` means "take it from the profile"."""

    schema_version: Literal["scalesim-scenario/1"] = SCENARIO_VERSION
    devices: list[items_bounded("devices")] = Field(  # type: ignore[valid-type]
        default=[1, 2, 4, 8, 16], min_length=1,
        description=f"device counts; allowed: {bound('devices').text()} each")
    devices_per_node: int | None = knob_field("devices_per_node", None)
    micro_batch: int | None = knob_field("micro_batch", None, "weak scaling: per device")
    global_batch: int | None = knob_field("global_batch", None, "strong scaling: fixed")
    accumulation: int = knob_field("accumulation", 1)
    overlap: bool = True
    bucket_mib: float = knob_field("bucket_mib", 25.0)
    first_bucket_mib: float = knob_field("first_bucket_mib", 1.0)
    strategy: Strategy = "ddp"
    algorithm: Algorithm = "auto"
    loader_workers: int | None = knob_field("loader_workers", None)
    straggler_cv: float | None = knob_field("straggler_cv", None, "std/mean of a micro-step")
    device_speed_cv: float | None = knob_field(
        "device_speed_cv", None, "std/mean of device speeds (persistent variation)")
    comm_compute_contention: float | None = knob_field(
        "comm_compute_contention", None, "0 free overlap .. 1 collectives steal compute")
    slow_device: int | None = knob_field("slow_device", None, "rank of a slow device")
    slow_factor: float = knob_field("slow_factor", 1.0, "its compute-time multiplier")
    intra_busbw_GBps: float | None = knob_field("intra_busbw_GBps", None)
    intra_latency_s: float | None = knob_field("intra_latency_s", None)
    inter_busbw_GBps: float | None = knob_field("inter_busbw_GBps", None)
    inter_latency_s: float | None = knob_field("inter_latency_s", None)
    critical_batch_size: float | None = knob_field("critical_batch_size", None)
    min_samples_to_quality: float | None = knob_field("min_samples_to_quality", None)
    train_samples: float | None = knob_field("train_samples", None)
    price_per_device_hour: float | None = knob_field("price_per_device_hour", None)

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if any(d < 1 for d in self.devices):
            raise ValueError("device counts must be 1 or more")
        if self.micro_batch is not None and self.global_batch is not None:
            raise ValueError("give a per-device micro-batch (weak scaling) or a global batch "
                             "(strong scaling), not both")
        return self


SCHEMAS: dict[str, type[BaseModel]] = {
    "profile": Profile,
    "hardware": Hardware,
    "workload": Workload,
    "scenario": Scenario,
}
