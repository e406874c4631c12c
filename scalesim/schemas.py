"""The file formats at scalesim's edges: hardware, workload, calibration profile, scenario.

Every format is a versioned pydantic v2 model (``schema_version``), exported as JSON Schema by
``scalesim schema NAME``. Units are in the field names (``_s`` seconds, ``_bytes`` bytes,
``_GBps`` gigabytes (1e9 bytes) per second, ``gbit_`` gigabits per second).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkLevel(_Strict):
    """One level of the interconnect, described as nccl-tests would measure it."""

    kind: str = Field(description="nvlink2, nvswitch-a100, pcie4, infiniband, ethernet, loopback...")
    busbw_GBps: float = Field(
        gt=0,
        description="all-reduce bus bandwidth, GB/s (1e9 bytes/s), nccl-tests convention; across "
        "servers: what one whole node sustains over all its NICs",
    )
    latency_s: float = Field(ge=0, description="alpha: latency of one algorithm step, seconds")
    nics_per_node: int | None = Field(default=None, ge=1, description="NICs per server (inter)")
    gbit_per_nic: float | None = Field(default=None, gt=0, description="NIC line rate, Gbit/s")
    source: str = Field(default="", description="where the numbers come from")


class TopologyNic(_Strict):
    """One NIC row of ``nvidia-smi topo -m``."""

    name: str = Field(description="NIC0, or the device name older drivers print (mlx5_0)")
    device: str | None = Field(default=None, description="device from the NIC legend (mlx5_0)")
    gpu_links: list[str] = Field(default_factory=list, description="link code to each GPU")
    nearest_gpus: list[int] = Field(default_factory=list, description="GPUs at the closest code")
    nearest_link: str = Field(default="SYS", description="PIX, PXB, PHB, NODE or SYS")


class Topology(_Strict):
    """One server as ``nvidia-smi topo -m`` shows it (scalesim.sources.nvidia_smi)."""

    gpus: list[str]
    links: list[list[str]] = Field(description="GPU x GPU link codes: X, NV#, PIX, PXB, PHB, "
                                   "NODE, SYS")
    nics: list[TopologyNic] = Field(default_factory=list)
    cpu_affinity: list[str] = Field(default_factory=list, description="per GPU, e.g. 0-47,96-143")
    numa_affinity: list[int | None] = Field(default_factory=list)
    intra_kind: str = Field(default="", description="the intra-server link in words")
    suggested_intra_preset: str | None = None
    source: str = ""


class Hardware(_Strict):
    """A server type and how servers are joined."""

    schema_version: Literal["scalesim-hardware/1"] = HARDWARE_VERSION
    name: str
    device_name: str
    devices_per_node: int = Field(ge=1)
    device_memory_bytes: float = Field(gt=0)
    peak_tflops: float | None = Field(
        default=None, gt=0, description="dense fp16/bf16 tensor peak, TFLOP/s (for scaling compute)"
    )
    memory_bandwidth_GBps: float | None = Field(
        default=None, gt=0,
        description="device memory bandwidth, GB/s (vendor spec); preset profiles estimate the "
                    "optimizer step from it (memory-bound update)",
    )
    cpu_cores_per_node: int = Field(default=64, ge=1, description="cores the data loaders share")
    device_speed_cv: float = Field(
        default=DEVICE_SPEED_CV, ge=0,
        description="std/mean of the speed of identical devices (default from Sinha et al. SC'22)",
    )
    intra_node: LinkLevel
    inter_node: LinkLevel
    comm_compute_contention: float = Field(
        default=GPU_COMM_CONTENTION, ge=0, le=1,
        description="share of overlapped collective time that still takes compute time: 0 when "
        "collectives run beside compute for free, 0.159 for NCCL on GPUs (compute 18.9% slower "
        "while collectives run, Lee et al. arXiv:2507.03114), 1 when they share the compute "
        "cores (gloo on CPUs)",
    )
    price_per_device_hour: float | None = Field(default=None, ge=0, description="USD per device-hour")
    topology: Topology | None = Field(
        default=None, description="nvidia-smi topo -m of one server, when recorded")
    source: str = ""


class ReferenceThroughput(_Strict):
    """A published or measured per-device training throughput of a workload."""

    device_name: str
    samples_per_s: float = Field(gt=0, description="per device, steady state")
    micro_batch: int = Field(ge=1)
    accumulation: int = Field(default=1, ge=1, description="micro-steps per optimizer step")
    source: str


class Workload(_Strict):
    """What is being trained: sizes that set communication, memory and compute."""

    schema_version: Literal["scalesim-workload/1"] = WORKLOAD_VERSION
    name: str
    params: float = Field(gt=0, description="parameters Psi = gradient elements exchanged per step")
    wire_bytes_per_param: float = Field(
        default=2.0, gt=0, description="bytes per gradient element on the wire (4 fp32, 2 fp16/bf16)"
    )
    param_bytes_per_param: float = Field(default=2.0, ge=0, description="weights in memory")
    grad_bytes_per_param: float = Field(default=2.0, ge=0, description="gradients in memory")
    optimizer_bytes_per_param: float = Field(
        default=12.0, ge=0, description="optimizer state (mixed-precision Adam: 12, ZeRO paper K)"
    )
    activation_bytes_per_sample: float = Field(default=0.0, ge=0, description="0 = unknown")
    micro_batch: int = Field(default=32, ge=1, description="default samples per device per micro-step")
    sample_unit: str = "samples"
    backward_fraction: float = Field(
        default=2.0 / 3.0, gt=0, lt=1, description="share of forward+backward time in backward"
    )
    critical_batch_size: float | None = Field(default=None, gt=0, description="B_noise, samples")
    min_samples_to_quality: float | None = Field(
        default=None, gt=0, description="E_min: samples to the target at a tiny batch"
    )
    train_samples: float | None = Field(default=None, gt=0, description="samples in one training run")
    reference: list[ReferenceThroughput] = Field(default_factory=list)
    source: str = ""


class ComputePoint(_Strict):
    micro_batch: int = Field(ge=1)
    time_s: float = Field(gt=0, description="median forward+backward time of one micro-step")
    spread_s: float = Field(default=0.0, ge=0, description="interquartile range over repeats")
    repeats: int = Field(default=1, ge=1)


class ComputeCurve(_Strict):
    """Forward+backward time per micro-step vs micro-batch: ``overhead_s + per_sample_s * b``,
    as timed with ``colocated_devices`` of one server busy (``alone()`` gives one device's)."""

    overhead_s: float = Field(ge=0, description="fixed time per micro-step, s")
    per_sample_s: float = Field(gt=0, description="time per sample, s")
    optimizer_step_s: float = Field(default=0.0, ge=0, description="optimizer update per step, s")
    rel_rmse: float | None = Field(default=None, ge=0, description="fit quality on the points")
    points: list[ComputePoint] = Field(default_factory=list)
    max_micro_batch: int | None = Field(
        default=None, ge=1, description="largest micro-batch that ran (out-of-memory ceiling)"
    )
    oom_micro_batch: int | None = Field(
        default=None, ge=1, description="smallest micro-batch that ran out of memory, if any"
    )
    colocated_devices: int = Field(
        default=1, ge=1,
        description="devices of one server that computed at once while the points were timed",
    )
    colocation_slowdown: float = Field(
        default=0.0, ge=0, le=10,
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
    size_bytes: float = Field(gt=0)
    ranks: int = Field(ge=2)
    time_s: float = Field(gt=0)
    algbw_GBps: float = Field(ge=0)
    busbw_GBps: float = Field(ge=0)


class LinkCalibration(_Strict):
    """Raw collective timings on one link level and the alpha-beta fit."""

    level: LinkLevelName
    measured: bool
    points: list[CollectivePoint] = Field(default_factory=list)
    rel_rmse: float | None = None
    note: str = ""


class LoaderPoint(_Strict):
    workers: int = Field(ge=0)
    samples_per_s: float = Field(gt=0)


class LoaderCurve(_Strict):
    """Input-pipeline supply of one process vs DataLoader ``num_workers``."""

    points: list[LoaderPoint] = Field(min_length=1)
    measured: bool = False
    source: str = ""


class Jitter(_Strict):
    """Step-time spread across steps and ranks."""

    step_time_cv: float = Field(
        ge=0, description="std/mean of one rank's step time (calibration: the normal-consistent "
        "(IQR / 1.349) / median, robust to bursts from other processes)")
    per_rank_median_s: list[float] = Field(default_factory=list)
    slow_rank: int | None = Field(default=None, ge=0)
    slow_factor: float = Field(default=1.0, ge=1.0, description="slow rank's median over the others'")


class NoiseScale(_Strict):
    """Gradient noise scale estimate (McCandlish et al. 2018, appendix A)."""

    b_simple: float = Field(gt=0, description="samples")
    small_batch: int = Field(ge=1)
    big_batch: int = Field(ge=1)


class Fingerprint(_Strict):
    """Where and how a profile was measured."""

    device_name: str = "unknown"
    device_count: int = Field(default=1, ge=1)
    nodes: int = Field(default=1, ge=1)
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
    devices: list[int] = Field(default=[1, 2, 4, 8, 16], min_length=1)
    devices_per_node: int | None = Field(default=None, ge=1)
    micro_batch: int | None = Field(default=None, ge=1, description="weak scaling: per device")
    global_batch: int | None = Field(default=None, ge=1, description="strong scaling: fixed")
    accumulation: int = Field(default=1, ge=1)
    overlap: bool = True
    bucket_mib: float = Field(default=25.0, gt=0)
    first_bucket_mib: float = Field(default=1.0, ge=0)
    strategy: Strategy = "ddp"
    algorithm: Algorithm = "auto"
    loader_workers: int | None = Field(default=None, ge=0)
    straggler_cv: float | None = Field(default=None, ge=0, description="std/mean of a micro-step")
    device_speed_cv: float | None = Field(
        default=None, ge=0, description="std/mean of device speeds (persistent variation)"
    )
    comm_compute_contention: float | None = Field(
        default=None, ge=0, le=1, description="0 free overlap .. 1 collectives steal compute"
    )
    slow_device: int | None = Field(default=None, ge=0, description="rank of a slow device")
    slow_factor: float = Field(default=1.0, ge=1.0, description="its compute-time multiplier")
    intra_busbw_GBps: float | None = Field(default=None, gt=0)
    intra_latency_s: float | None = Field(default=None, ge=0)
    inter_busbw_GBps: float | None = Field(default=None, gt=0)
    inter_latency_s: float | None = Field(default=None, ge=0)
    critical_batch_size: float | None = Field(default=None, gt=0)
    min_samples_to_quality: float | None = Field(default=None, gt=0)
    train_samples: float | None = Field(default=None, gt=0)
    price_per_device_hour: float | None = Field(default=None, ge=0)

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
