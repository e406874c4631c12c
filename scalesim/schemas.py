"""The file formats at scalesim's edges: hardware, workload, calibration profile, scenario.

Every format is a versioned pydantic v2 model (``schema_version``), exported as JSON Schema by
``scalesim schema NAME``. Units are in the field names (``_s`` seconds, ``_bytes`` bytes,
``_GBps`` gigabytes (1e9 bytes) per second, ``gbit_`` gigabits per second).
"""

from __future__ import annotations

import functools
import math
import re
import types
import typing
from typing import Any, ClassVar, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from scalesim.attention_kernel import (
    ATTENTION_KERNEL_HELP,
    AttentionKernel,
    TimedAttention,
)
from scalesim.billing import shapes_problem
from scalesim.bounds import (
    BOOL_IS_NO_NUMBER,
    bound,
    bounded,
    holds_bool,
    items_bounded,
    knob_field,
    nonzero_floor,
)
from scalesim.errors import KNOB, Refusal, ScalesimError, excerpt, name_problem, printable
from scalesim.layout import (
    CP_HELP,
    SHARD_GROUP_HELP,
    ZERO_STRATEGIES,
    Recompute,
    RecomputeStyle,
    Schedule,
    deepspeed_pipeline_error,
    deepspeed_refuses_pipeline,
    early_stop_of,
    interleaves,
    knob_refusal,
    op_sac_of,
    p2p_overlap_field,
    recompute_style_field,
    tp_overlap_field,
)
from scalesim.model.overlap import CPU_COMM_CONTENTION, GPU_COMM_CONTENTION
from scalesim.model.stragglers import DEVICE_SPEED_CV
from scalesim.precision import DEFAULT_PRECISION, PRECISION_HELP, Precision

HARDWARE_VERSION = "scalesim-hardware/1"
WORKLOAD_VERSION = "scalesim-workload/1"
PROFILE_VERSION = "scalesim-profile/1"
SCENARIO_VERSION = "scalesim-scenario/1"
INSTANCE_SIZES_HELP = (
    "GPUs in each instance shape the provider rents with this GPU, each priced per device-hour "
    "as price_per_device_hour (AWS p4de/p5: [8]; AWS p3, Google Cloud a2-highgpu: [1, 4, 8], "
    "[1, 2, 4, 8]; a GPU cloud renting any count: [1]); a server's devices are billed as the "
    "smallest shape that holds them (docs/model.md §9, scalesim/billing.py); None: whole "
    "servers only"
)

Strategy = Literal["ddp", "zero1", "zero2", "zero3"]
ZeroFramework = Literal["fsdp", "deepspeed"]
GradSync = Literal["every-micro-step", "once-per-step"]  # model/sharding.GRAD_SYNCS
def grad_sync_deepspeed_error() -> Refusal:
    """The refusal of DeepSpeed with once-per-step reduction (``grad_sync_refused``), its knobs
    named as the CLI's flags (``layout.knob_refusal``)."""
    return knob_refusal(
        f"{KNOB.grad_sync} once-per-step is FSDP's no_sync; DeepSpeed stage 2/3 reduce gradients "
        f"in every micro-step: use {KNOB.zero_framework} fsdp or {KNOB.grad_sync} "
        "every-micro-step", ("grad_sync", "zero_framework"))


def grad_sync_refused(zero_framework: str, grad_sync: str) -> bool:
    """True for the pair refused with ``grad_sync_deepspeed_error`` (DeepSpeed, once-per-step);
    the scenario, the planner and the sweep's axes all ask this."""
    return zero_framework == "deepspeed" and grad_sync == "once-per-step"


Algorithm = Literal["auto", "ring", "tree", "hierarchical"]
LinkLevelName = Literal["intra_node", "inter_node"]
InterMethod = Literal["all_ranks", "one_rank"]


def _takes_bool(annotation: Any) -> bool:
    """Whether a field's type admits true/false (bool, bool | None, list[bool]...)."""
    return annotation is bool or any(_takes_bool(a) for a in get_args(annotation))


def _number_kind(annotation: Any) -> str | None:
    """'a whole number' or 'a number' where a field's type takes numbers and nothing else (int,
    float | None, list[int], tuple[float, ...]); None where text or anything else may go."""
    leaves: set[Any] = set()

    def walk(a: Any) -> None:
        origin = get_origin(a)
        if origin is typing.Annotated:
            walk(get_args(a)[0])
        elif origin in (typing.Union, types.UnionType, list, tuple, set, frozenset):
            for arg in get_args(a):
                walk(arg)
        elif a is not type(None) and a is not Ellipsis:
            leaves.add(a)

    walk(annotation)
    if not leaves or not leaves <= {int, float}:
        return None
    return "a number" if float in leaves else "a whole number"


@functools.cache
def _field_number_kind(model: type, field: str) -> str | None:
    return _number_kind(model.model_fields[field].annotation)


# text fields printed as words of every answer, so never blank: field -> what to give
_SAID_WORDS = {
    "name": "give the name it is printed under",
    # a throughput's unit ("images/s", "sequences of 2048 tokens/s"; the table's column header
    # is its first word)
    "sample_unit": "give what one sample is, such as images or sequences of 2048 tokens",
    # a hardware's and a reference's device: datasheet peaks, memory bandwidth, prices and a
    # reference's conversion are matched by it
    "device_name": "give the device as its datasheet names it, such as A100-SXM4 80GB",
}


class _Strict(BaseModel):
    """Unknown fields, infinities and NaN are refused; every number has bounds (scalesim.bounds);
    true/false is refused where a number goes (pydantic would read true as 1), and so is a
    number written as text (``"micro_batch": "16"``, which pydantic would read as 16: the JSON
    Schema that ``scalesim schema`` prints says a number, and every writer of these files, as
    calibrate, writes one; the app's share-link controls are ``app.state.AppState``, not these
    models, and stay lax); a ``name`` is one
    line of printable text (``errors.name_problem``); any other text (notes, sources) has its
    control characters escaped (``errors.printable``): it is printed as read."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    # Published-case files (``scalesim validate FILE``: others' measurements, transcribed by
    # hand) read a number written as text as that number, so one quoted value does not stop a
    # whole file; scalesim's own files (profiles, scenarios, hardware, workloads) refuse it.
    numbers_as_text: ClassVar[bool] = False

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        items = value if isinstance(value, list) else [value]
        if holds_bool(value) and not _takes_bool(cls.model_fields[info.field_name].annotation):
            raise ValueError(BOOL_IS_NO_NUMBER)
        texts = [v for v in items if isinstance(v, str)]
        if texts and not cls.numbers_as_text and (kind := _field_number_kind(cls, info.field_name)):
            shown = printable(texts[0])
            shown = repr(shown if len(shown) <= 40 else shown[:40] + "...")
            try:
                float(texts[0])
                fix = "write it without quotes"
            except ValueError:
                fix = "write one"
            raise ValueError(f"{shown} is text (in quotes); this field takes {kind}: {fix}")
        if info.field_name == "name" and isinstance(value, str) and (why := name_problem(value)):
            raise ValueError(why)
        if isinstance(value, str) and not value.strip() and info.field_name in _SAID_WORDS:
            raise ValueError(f"is empty; {_SAID_WORDS[info.field_name]}")
        if isinstance(value, float) and value == 0.0:
            return 0.0  # -0.0 (a file's "-0.0") printed as "-0" and "$-0"
        if isinstance(value, str):
            return printable(value)
        if isinstance(value, list) and any(isinstance(v, str) for v in value):
            return [printable(v) if isinstance(v, str) else v for v in value]
        return value


StrictModel = _Strict  # the input-file policy, for file formats outside this module (validate)


class SubsetShare(_Strict):
    """Share of a whole server's intra-server ring busbw that a ring over ``gpus`` of its GPUs
    gets (up to the next listed count): fewer NVLinks on a point-to-point mesh (DGX-1)."""

    gpus: int = bounded("devices_per_node", description="GPUs of one server in the ring")
    share: float = bounded("fraction", description="share of the server's busbw_GBps")

    @field_validator("share")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("share must be above 0 (a ring with no bandwidth cannot run)")
        return value


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
    algorithm: str = Field(
        default="",
        description="NCCL algorithm (and protocol) busbw_GBps belongs to, e.g. "
        "'Ring/Simple'; busbw_GBps is what ring collectives (reduce-scatter, all-gather, ring "
        "all-reduce) reach",
    )
    allreduce_busbw_GBps: float | None = bounded(
        "busbw_GBps",
        None,
        "all-reduce busbw of NCCL's default all-reduce where it "
        "beats the ring figure (NVLS on NVSwitch H100 servers), GB/s; None: busbw_GBps",
    )
    allreduce_algorithm: str = Field(
        default="", description="NCCL algorithm/protocol of allreduce_busbw_GBps, e.g. 'NVLS/Simple'"
    )
    source: str = Field(default="", description="where the numbers come from")
    subset_busbw_shares: list[SubsetShare] = Field(
        default_factory=list,
        description="intra-server level only: how its ring busbw falls "
        "for a group of fewer GPUs of the server (model/subset_links.py, docs/model.md §18); "
        "each entry holds from its GPU count up to the next; empty (the default): every group "
        "keeps busbw_GBps (NVSwitch, PCIe, a measured level)",
    )

    @field_validator("subset_busbw_shares")
    @classmethod
    def _distinct_counts(cls, value: list[SubsetShare]) -> list[SubsetShare]:
        counts = [s.gpus for s in value]
        if len(set(counts)) != len(counts):
            raise ValueError("subset_busbw_shares lists a GPU count twice; give each count once")
        return sorted(value, key=lambda s: s.gpus)

    @property
    def subset_shares(self) -> tuple[tuple[int, float], ...]:
        """``subset_busbw_shares`` as the model reads them (``subset_links.subset_busbw_GBps``)."""
        return tuple((s.gpus, s.share) for s in self.subset_busbw_shares)

    @property
    def allreduce_GBps(self) -> float:
        """All-reduce busbw of NCCL's default algorithm on this level, GB/s."""
        return self.allreduce_busbw_GBps or self.busbw_GBps


class TopologyNic(_Strict):
    """One NIC row of ``nvidia-smi topo -m``."""

    name: str = Field(description="NIC0, or the device name older drivers print (mlx5_0)")
    device: str | None = Field(default=None, description="device from the NIC legend (mlx5_0)")
    gpu_links: list[str] = Field(default_factory=list, description="link code to each GPU")
    nearest_gpus: list[items_bounded("rank")] = Field(  # type: ignore[valid-type]
        default_factory=list, description="GPUs at the closest code"
    )
    nearest_link: str = Field(default="SYS", description="PIX, PXB, PHB, NODE or SYS")


# NVLinks per GPU by generation: NVLink1 P100 4, NVLink2 V100 6, NVLink3 A100 12, NVLink4
# H100/H200 18, NVLink5 B200/GB200 18 (NVIDIA's P100, V100, A100 whitepapers; H100 datasheet; the
# NVLink/NVSwitch page: "up to 18 NVLink 100 GB/s connections" on Blackwell). A pair's NV# counts
# the links bonded between two GPUs, so it is at least 1 (topo -m's legend: "a bonded set of #
# NVLinks"; a pair without NVLink shows its PCIe path, PIX ... SYS, and no real output shows NV0)
# and at most one GPU's links.
NVLINKS_PER_GPU_MAX = 18
_NV_CELL = re.compile(r"^NV(\d+)$")


def nvlink_count_problem(cell: str) -> str | None:
    """The one-line problem of a link cell whose NV# no GPU pair has (NV0, NV19 and up); None
    for any other cell. Said by ``sources.nvidia_smi`` of a topo -m matrix and by ``Topology``
    of a stored one."""
    nv = _NV_CELL.match(cell)
    if nv is None:
        return None
    links = int(nv.group(1)) if len(nv.group(1)) < 9 else NVLINKS_PER_GPU_MAX + 1
    if 1 <= links <= NVLINKS_PER_GPU_MAX:  # a 5,000-digit count never reaches int()
        return None
    return (f"'{excerpt(cell, 24)}' is no NVLink count (a pair's NV# is 1 to "
            f"{NVLINKS_PER_GPU_MAX} bonded links: {NVLINKS_PER_GPU_MAX} per GPU on H100 and B200, "
            "and a pair without NVLink shows its PCIe path, PIX to SYS)")


class Topology(_Strict):
    """One server as ``nvidia-smi topo -m`` shows it (scalesim.sources.nvidia_smi)."""

    gpus: list[str]
    links: list[list[str]] = Field(description="GPU x GPU link codes: X, NV#, PIX, PXB, PHB, NODE, SYS")
    nics: list[TopologyNic] = Field(default_factory=list)
    cpu_affinity: list[str] = Field(default_factory=list, description="per GPU, e.g. 0-47,96-143")
    numa_affinity: list[items_bounded("rank") | None] = Field(  # type: ignore[valid-type]
        default_factory=list,
        description="per GPU, the NUMA node of its CPUs, an index (None where not "
        "shown or where the list names several CPU nodes)",
    )
    intra_kind: str = Field(default="", description="the intra-server link in words")
    suggested_intra_preset: str | None = None
    source: str = ""

    @field_validator("links")
    @classmethod
    def _nvlink_counts(cls, links: list[list[str]]) -> list[list[str]]:
        """A stored matrix is held to topo -m's NV# rule as a read one is (a profile edited by
        hand, or written before session 49: NV0 was read as NVLink between every pair)."""
        for i, row in enumerate(links):
            for j, cell in enumerate(row):
                if problem := nvlink_count_problem(cell):
                    raise ValueError(f"GPU{i}-GPU{j}: {problem}: an edited matrix?; recalibrate "
                                     "with scalesim calibrate --from-topo on `nvidia-smi topo -m` "
                                     "output")
        return links


def _sorted_sizes(sizes: list[int] | None) -> list[int] | None:
    """Instance shapes smallest first, each once."""
    return None if sizes is None else sorted(set(sizes))


ALLOCATION_HELP = (
    "devices of one allocation unit, GPUs: the node or compute tray a scheduler hands out "
    "(4 on a GB200 NVL72 compute tray: 2 Grace CPUs + 4 Blackwell GPUs with their own NICs, 18 "
    "trays a rack). It sets which device counts a job runs on (a multiple of it) and how many "
    "NICs a count reaches; devices_per_node (the NVLink domain) sets which groups ride the "
    "intra_node link. Must divide devices_per_node. None (absent: files written before the "
    "field): devices_per_node, the server is the unit (docs/model.md §12)")


def allocation_problem(allocation: int | None, devices_per_node: int) -> str | None:
    """The one-line problem where an allocation unit of ``allocation`` devices does not divide
    the ``devices_per_node`` devices of a server (an NVLink domain holds whole trays or nodes);
    None where it does or none is given."""
    if allocation is None or devices_per_node % allocation == 0:
        return None
    return (f"devices_per_allocation {allocation} does not divide devices_per_node "
            f"{devices_per_node}: an NVLink domain holds whole allocation units (trays or nodes); "
            "give a divisor of it, or leave it out (the server is the unit)")


class Hardware(_Strict):
    """A server type and how servers are joined."""

    schema_version: Literal["scalesim-hardware/1"] = HARDWARE_VERSION
    name: str
    device_name: str
    devices_per_node: int = bounded(
        "devices_per_node",
        description="devices of one server: its NVLink (or other intra-server link) domain, "
        "the devices whose groups ride the intra_node link (8 on DGX, 72 on a GB200 NVL72 rack)",
    )
    devices_per_allocation: int | None = bounded(
        "devices_per_node",
        None,
        description=ALLOCATION_HELP,
    )
    device_memory_bytes: float = bounded("device_memory_bytes")
    peak_tflops: float | None = bounded(
        "peak_tflops", None, description="dense fp16/bf16 tensor peak, TFLOP/s (for scaling compute)"
    )
    memory_bandwidth_GBps: float | None = bounded(
        "memory_bandwidth_GBps",
        None,
        description="device memory bandwidth, GB/s (vendor spec); preset profiles estimate the "
        "optimizer step from it (memory-bound update)",
    )
    kernel_bandwidth_GBps: float | None = bounded(
        "kernel_bandwidth_GBps",
        None,
        description="byte rate of a transformer layer's and the logits' kernels in the layout "
        "model's roofline, GB/s, as a block calibration fits it (scalesim calibrate "
        "--block-hidden; unfused eager kernels reach less than a streaming sweep); "
        "None: memory_bandwidth_GBps. The optimizer sweep keeps memory_bandwidth_GBps",
    )
    cpu_cores_per_node: int = bounded("cpu_cores", 64, "cores the data loaders share")
    nic_servers_per_node: int = bounded(
        "nic_servers_per_node",
        1,
        "servers whose NICs one node of this profile exchanges over: 1 for a server of devices; "
        "for a profile of model replicas (diagnose on runs that split the model), the servers "
        "that one server's data-parallel ranks' replicas span (pp where the stages sit in "
        "other servers), so a network upgrade of each server adds up that many times, and "
        "a decision that adds one of its servers buys that many",
    )
    device_speed_cv: float = bounded(
        "cv",
        DEVICE_SPEED_CV,
        description="std/mean of the speed of identical devices (default from Sinha et al. SC'22)",
    )
    intra_node: LinkLevel
    inter_node: LinkLevel
    comm_compute_contention: float = bounded(
        "fraction",
        GPU_COMM_CONTENTION,
        description="share of overlapped collective time that still takes compute time: 0 when "
        "collectives run beside compute for free, 0.159 for NCCL on GPUs (compute 18.9% slower "
        "while collectives run, Lee et al. arXiv:2507.03114), 1 when they share the compute "
        "cores (gloo on CPUs). Absent (a profile written before the field): 0.159, but 1 where "
        "the device is a CPU calibration's process ('CPU: ...'), the value scalesim calibrate "
        "writes there, and the profile's notes say it was taken",
    )
    price_per_device_hour: float | None = bounded("price_per_device_hour", None, "USD per device-hour")
    instance_sizes: list[items_bounded("devices_per_node")] | None = Field(  # type: ignore[valid-type]
        default=None, min_length=1, description=INSTANCE_SIZES_HELP
    )
    topology: Topology | None = Field(
        default=None, description="nvidia-smi topo -m of one server, when recorded"
    )
    source: str = ""

    _sizes_sorted = field_validator("instance_sizes")(lambda v: _sorted_sizes(v))
    _price_floor = field_validator("price_per_device_hour")(nonzero_floor("price_per_device_hour"))

    @model_validator(mode="after")
    def _sizes_fit(self) -> Hardware:
        if problem := shapes_problem(self.instance_sizes, self.devices_per_node):
            raise ValueError(problem)
        if problem := allocation_problem(self.devices_per_allocation, self.devices_per_node):
            raise ValueError(problem)
        if self.contention_defaulted_on_cpu():  # gloo's rule, not NCCL's figure
            object.__setattr__(self, "comm_compute_contention", CPU_COMM_CONTENTION)
        return self

    @model_serializer(mode="wrap")
    def _without_unset_unit(self, handler: SerializerFunctionWrapHandler) -> dict:
        """The file as before the field where it is None (the server is the unit): profiles,
        hardware files and the app's share-link hashes of every other hardware unchanged."""
        data = handler(self)
        if isinstance(data, dict) and data.get("devices_per_allocation", 0) is None:
            del data["devices_per_allocation"]
        return data

    @property
    def allocation_devices(self) -> int:
        """Devices of one allocation unit (a node or compute tray: what a scheduler hands out),
        which sets the device counts a job may run on; ``devices_per_node`` (the NVLink
        domain) where the file gives none (docs/model.md §12)."""
        return self.devices_per_allocation or self.devices_per_node

    def allocation_for(self, used: int | None = None) -> int:
        """Devices of one allocation unit of a job on ``used`` devices of each server (None:
        all of them, ``devices_per_node``): whole units of the devices it uses, the largest
        dividing both (``--gpus-per-node 64`` of a 72-GPU rack of 4-GPU trays: 4); ``used``
        itself where the file names no unit (the server as the job uses it). The unit every
        device-count check (``layout.runs_on_count``) and whole-unit bill of a job reads
        (docs/model.md §12)."""
        g = used or self.devices_per_node
        return g if self.devices_per_allocation is None else math.gcd(self.devices_per_allocation, g)

    def contention_defaulted_on_cpu(self) -> bool:
        """Whether ``comm_compute_contention`` was not given (a profile written before the field)
        for a CPU calibration's processes, which then take ``CPU_COMM_CONTENTION`` (1: gloo
        sums on the compute cores, as calibrate writes on CPU), not the GPU default."""
        from scalesim.device_nouns import is_cpu_device

        return ("comm_compute_contention" not in self.model_fields_set
                and is_cpu_device(self.device_name))


class ReferenceThroughput(_Strict):
    """A published or measured training throughput of a workload, declared as the run that
    produced it: its devices, samples per optimizer step and whether the figure includes the
    run's communication (``profiles.compute_from_reference`` converts it accordingly)."""

    device_name: str
    samples_per_s: float = bounded(
        "samples_per_s",
        description="per device, steady state: for a run on several devices its "
        "whole throughput divided by its devices",
    )
    micro_batch: int = bounded("micro_batch", description="samples per device per micro-step")
    accumulation: int = bounded("accumulation", 1, "micro-steps per optimizer step")
    devices: int = bounded("devices", 1, "devices of the run")
    devices_per_node: int | None = bounded(
        "devices_per_node",
        None,
        "devices per server in the run (default: as many as the system's servers hold, up to ``devices``)",
    )
    strategy: Strategy = Field(default="ddp", description="how the run shared its work")
    includes_communication: bool = Field(
        default=False,
        description="True when the figure is a multi-device run's throughput per device (a "
        "cluster average): it then contains that run's exposed communication and straggler "
        "wait, which are taken out with the model",
    )
    system: str | None = Field(
        default=None,
        description="hardware preset of the run's servers and links, used to "
        "take its communication out (default: the hardware the profile is built for)",
    )
    activation_recompute: bool = Field(
        default=False,
        description="the run recomputed activations in backward (full "
        "activation checkpointing): one extra forward, so 4/3 of the forward+backward work",
    )
    source: str

    @property
    def samples_per_step(self) -> int:
        """Samples of one optimizer step of the whole run: micro-batch x accumulation x devices."""
        return self.micro_batch * self.accumulation * self.devices

    @model_validator(mode="after")
    def _communication_needs_devices(self) -> ReferenceThroughput:
        if self.includes_communication and self.devices < 2:
            raise ValueError(
                "includes_communication: a run on one device communicates "
                "nothing; set devices to the run's device count"
            )
        if self.devices_per_node is not None and self.devices_per_node > self.devices:
            raise ValueError("devices_per_node is larger than the run's devices")
        return self


PARAMS_TOLERANCE = 0.05  # a given parameter count may differ this much from the shape's


def check_heads(hidden: int, heads: int, kv_heads: int | None = None) -> None:
    """Raise ValueError (a pydantic validator's error) naming the first attention-shape rule a
    transformer breaks: whole dimensions per head (hidden % heads), then whole query heads per
    key/value head (heads % kv_heads; None = heads). Shared by workload files and
    model-parallel validation cases."""
    kv = heads if kv_heads is None else kv_heads
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not divisible by heads {heads}")
    if heads % kv:
        raise ValueError(f"heads {heads} is not divisible by kv_heads {kv}")


class TransformerShape(_Strict):
    """The architecture of a transformer workload (``scalesim.model.transformer``).

    Defaults describe a GPT of Narayanan et al. 2021: multi-head attention (kv_heads = heads),
    MLP of 4 x hidden without a gate, biases, LayerNorm, learned positions, tied embeddings.
    """

    layers: int = bounded("layers", description="transformer layers L")
    hidden: int = bounded("model_width", description="hidden (model) dimension h")
    heads: int = bounded("model_width", description="attention heads a")
    kv_heads: int | None = bounded(
        "model_width", None, "key/value heads (grouped-query attention); None = heads"
    )
    ffn_hidden: int | None = bounded(
        "model_width", None, "MLP inner size f (each gated projection for SwiGLU); None = 4 x hidden"
    )
    gated_mlp: bool = Field(default=False, description="SwiGLU-style MLP: gate, up, down (3hf)")
    seq_len: int = bounded("seq_len", description="tokens per sequence s")
    vocab: int = bounded("vocab", description="vocabulary size V")
    tied_embeddings: bool = Field(default=True, description="output projection shares V x h")
    learned_positions: bool = Field(
        default=True, description="learned s x h position table (False for rotary)"
    )
    biases: bool = Field(default=True, description="linear layers carry biases")
    layernorm: bool = Field(default=True, description="LayerNorm (scale+shift); False = RMSNorm")
    flash_attention: bool = Field(
        default=False, description="attention keeps no s x s scores for backward (activation memory)"
    )

    @model_validator(mode="after")
    def _heads_divide(self) -> TransformerShape:
        check_heads(self.hidden, self.heads, self.kv_heads)
        return self

    def kv_of(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    def ffn_of(self) -> int:
        return 4 * self.hidden if self.ffn_hidden is None else self.ffn_hidden

    def words(self) -> str:
        """'32 layers, hidden 4096, 32 heads (8 kv), MLP 14336 SwiGLU, sequence 8192, vocabulary
        128256': the shape as the notes and errors say it."""
        kv = f" ({self.kv_of()} kv)" if self.kv_of() != self.heads else ""
        return (
            f"{self.layers} layers, hidden {self.hidden}, {self.heads} heads{kv}, MLP "
            f"{self.ffn_of()}{' SwiGLU' if self.gated_mlp else ''}, sequence {self.seq_len}, "
            f"vocabulary {self.vocab}"
        )

    def model_flops_per_token(self) -> float:
        """Model FLOPs per token of one training step, without recomputation: what MFU counts
        (``transformer.model_flops_per_token``)."""
        from scalesim.model.transformer import model_flops_per_token

        return float(model_flops_per_token(self.layers, self.hidden, self.heads, self.kv_of(),
                                           self.ffn_of(), self.gated_mlp, self.seq_len,
                                           self.vocab))

    def matmul_weights(self) -> float:
        """Weights a token passes through a matmul of (every layer's and the logits'): 2 FLOPs
        each forward, 6 a training step (``transformer.layer_matmul_weights``)."""
        from scalesim.model.transformer import layer_matmul_weights

        return float(self.layers * layer_matmul_weights(self.hidden, self.heads, self.kv_of(),
                                                        self.ffn_of(), self.gated_mlp)
                     + self.hidden * self.vocab)

    def param_count(self) -> float:
        """Parameters of this shape (``transformer.parameter_count``)."""
        from scalesim.model.transformer import parameter_count

        return float(
            parameter_count(
                self.layers,
                self.hidden,
                self.heads,
                self.kv_of(),
                self.ffn_of(),
                self.gated_mlp,
                self.seq_len,
                self.vocab,
                self.tied_embeddings,
                self.learned_positions,
                self.biases,
                self.layernorm,
            )
        )


class Workload(_Strict):
    """What is being trained: sizes that set communication, memory and compute."""

    schema_version: Literal["scalesim-workload/1"] = WORKLOAD_VERSION
    name: str
    params: float = bounded("params", description="parameters Psi = gradient elements exchanged per step")
    wire_bytes_per_param: float = bounded(
        "wire_bytes_per_param",
        2.0,
        description="bytes per gradient element on the wire (4 fp32, 2 fp16/bf16)",
    )
    param_bytes_per_param: float = bounded("bytes_per_param", 2.0, "weights in memory")
    grad_bytes_per_param: float = bounded("bytes_per_param", 2.0, "gradients in memory")
    reduce_bytes_per_param: float | None = bounded(
        "wire_bytes_per_param", None,
        "bytes per gradient element of the data-parallel reduction where stated; None: the "
        "framework's (Megatron-Core's ZeRO-1 reduces its fp32 main grads, docs/model.md §4)")
    optimizer_bytes_per_param: float = bounded(
        "bytes_per_param", 12.0, description="optimizer state (mixed-precision Adam: 12, ZeRO paper K)"
    )
    activation_bytes_per_sample: float = bounded("activation_bytes", 0.0, "0 = unknown")
    layers: int | None = bounded(
        "layers",
        None,
        "repeated blocks (transformer layers); FSDP wraps and communicates one at a "
        "time. Unknown: estimated from params as a transformer with width = 128 x depth",
    )
    activation_recompute: bool = Field(
        default=False,
        description="trained with full activation checkpointing: compute "
        "includes one extra forward (4/3 of forward+backward) and activation_bytes_per_sample "
        "counts the checkpoints",
    )
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
    transformer: TransformerShape | None = Field(
        default=None, description="architecture; None = a parameter count only (data parallel)"
    )
    pipeline_bubble_micro_steps: float = bounded(
        "bubble_micro_steps",
        0.0,
        "where each device of this parameter-count model is a model replica run as a pipeline "
        "(diagnose's runs that split the model): the fill and drain every optimizer step pays, in "
        "micro-step times, (pp - 1)/v for 1F1B and interleaved; 0: no pipeline",
    )
    source: str = ""

    @model_validator(mode="after")
    def _params_match_shape(self) -> Workload:
        if self.transformer is not None and self.pipeline_bubble_micro_steps:
            raise ValueError("pipeline_bubble_micro_steps is for a parameter-count workload; a "
                             "transformer's bubble comes from its layout's pp and schedule")
        if (self.transformer is not None and self.layers is not None
                and self.layers != self.transformer.layers):
            # the shape's layers are the ones priced: the other number was dropped in silence
            raise ValueError(
                f"layers {self.layers} disagrees with the transformer shape's "
                f"{self.transformer.layers} layers; drop layers (the shape's are used) or fix "
                "one of them"
            )
        if self.transformer is not None:
            counted = self.transformer.param_count()
            # the tolerance itself passes: 1.05 x a count is 5.000000000000004 % off in floats
            if abs(self.params / counted - 1.0) > PARAMS_TOLERANCE * (1.0 + 1e-9):
                raise ValueError(
                    f"params {self.params:.4g} disagrees with the transformer shape's "
                    f"{counted:.4g} by {100 * abs(self.params / counted - 1):.1f}% (more than "
                    f"{100 * PARAMS_TOLERANCE:g}%); fix params or the shape"
                )
        return self

    def stated_reduce_bytes(self) -> float:
        """``reduce_bytes_per_param`` where stated, else NaN (the model's inputs: the framework's
        default, ``memory.reduce_bytes_per_param_of``)."""
        return float("nan") if self.reduce_bytes_per_param is None else self.reduce_bytes_per_param


class ComputePoint(_Strict):
    micro_batch: int = bounded("micro_batch")
    time_s: float = bounded(
        "positive_duration_s", description="median forward+backward time of one micro-step"
    )
    spread_s: float = bounded("duration_s", 0.0, "interquartile range over repeats")
    repeats: int = bounded("repeats", 1)


def timed_attention_field():
    """The field of the attention kernel family a calibration's timings ran
    (``ComputeCurve.attention_kernel``, ``BlockShape.attention_kernel``)."""
    return Field(
        default=None,
        description="the attention kernel family the timed steps ran: the backend SDPA "
        "dispatched their attention to (calibration/attention_probe.py), or the attention "
        "kernels of the profiler traces they came from (calibrate --from-trace): 'flash2', "
        "'fused-vendor' or 'mem-efficient'; None: none found (a CPU, SDPA's math backend, "
        "attention outside SDPA) or not recorded (a profile written before it was); the "
        "planner prices the timings with it (attention_kernel.planner_kernel_of)",
    )


class ComputeCurve(_Strict):
    """Forward+backward time per micro-step vs micro-batch: ``overhead_s + per_sample_s * b``,
    as timed with ``colocated_devices`` of one server busy (``alone()`` gives one device's)."""

    overhead_s: float = bounded("duration_s", description="fixed time per micro-step, s")
    per_sample_s: float = bounded("positive_duration_s", description="time per sample, s")
    optimizer_step_s: float = bounded("duration_s", 0.0, "optimizer update per step, s")
    per_step_s: float = bounded(
        "duration_s", 0.0, "fixed time paid once per optimizer step beside the optimizer "
        "update, neither sharded nor slowed by colocation (diagnose's traces: collectives set "
        "aside as no gradient traffic that run once a step, a metric all-reduced for logging; "
        "a traced pipeline's fill and drain), s")
    fetch_s: float = bounded(
        "duration_s", 0.0, "fixed time of each micro-step's data fetch before its forward (the "
        "loader's next()), serial with the step and never hidden behind the passes the exchange "
        "overlaps, nor slowed by colocation (diagnose's data wait read as a fixed cost of each "
        "fetch), s")
    rel_rmse: float | None = bounded("rel_error", None, "fit quality on the points")
    points: list[ComputePoint] = Field(default_factory=list)
    max_micro_batch: int | None = bounded(
        "micro_batch", None, description="largest micro-batch that ran (out-of-memory ceiling)"
    )
    oom_micro_batch: int | None = bounded(
        "micro_batch", None, description="smallest micro-batch that ran out of memory, if any"
    )
    colocated_devices: int = bounded(
        "devices_per_node",
        1,
        description="devices of one server that computed at once while the points were timed",
    )
    colocation_slowdown: float = bounded(
        "slowdown",
        0.0,
        description="extra micro-step time (fraction, 0.08 = 8%) with colocated_devices busy at "
        "once against one device alone; the model scales it per extra busy device",
    )
    precision: str = "unknown"
    measured: bool = False
    model_shape: TransformerShape | None = Field(
        default=None,
        description="the transformer whose micro-steps the points timed "
        "(calibrate's built-in gpt), or that the curve was scaled to: decides whether another "
        "workload is that model (profiles.model_match); None: not recorded (a user's model, a "
        "profile written before it was)",
    )
    attention_kernel: TimedAttention | None = timed_attention_field()
    source: str = ""

    @model_validator(mode="after")
    def _slowdown_needs_company(self) -> ComputeCurve:
        if self.colocation_slowdown > 0 and self.colocated_devices < 2:
            raise ValueError(
                "colocation_slowdown is measured against devices that computed at "
                "once: set colocated_devices to 2 or more, or the slowdown to 0"
            )
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
    method: InterMethod | None = Field(
        default=None,
        description="how the level's numbers were obtained (inter_node): 'all_ranks' - "
        "collectives over every rank of every server, inter level derived given the intra "
        "level; 'one_rank' - one rank per server (each server's only process)",
    )
    ranks_per_node: int | None = bounded("devices_per_node", None, "ranks of each server in the timed group")
    lower_bound: bool = Field(
        default=False,
        description="the timed collective (calibrate's ring, or an imported nccl-tests "
        "ring or tree log) was limited by another level: the real busbw of this level is at "
        "least the recorded one",
    )
    not_measured_because: str = Field(
        default="",
        description='a level not measured: why not ("one server"); empty in '
        "profiles written before this field (the note says it)",
    )
    numbers_from: str = Field(
        default="",
        description="a level not measured: where its numbers came from (a preset, "
        "the user's flags); empty in profiles written before this field",
    )
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
        "cv",
        description="std/mean of one rank's step time (calibration: the normal-consistent "
        "(IQR / 1.349) / median, robust to bursts from other processes)",
    )
    per_rank_median_s: list[items_bounded("positive_duration_s")] = Field(  # type: ignore[valid-type]
        default_factory=list
    )
    slow_rank: int | None = bounded("rank", None)
    slow_factor: float = bounded("slow_factor", 1.0, "slow rank's median over the others'")


class NoiseScale(_Strict):
    """Gradient noise scale estimate (McCandlish et al. 2018, appendix A)."""

    b_simple: float = bounded("noise_scale", description="samples")
    small_batch: int = bounded("global_batch")
    big_batch: int = bounded("global_batch")


class BlockShape(_Strict):
    """The transformer block a calibration timed at tensor-parallel shard shapes."""

    hidden: int = bounded("model_width", description="hidden (model) dimension h")
    heads: int = bounded("model_width", description="attention heads a")
    ffn_hidden: int = bounded("model_width", description="MLP inner size f")
    seq_len: int = bounded("seq_len", description="tokens per sequence s")
    micro_batch: int = bounded("micro_batch", description="sequences per timed micro-step")
    element_bytes: float = bounded(
        "bytes_per_param",
        description="bytes of one activation element at the run's precision (4 fp32, 2 bf16/fp16)",
    )
    flash_attention: bool = Field(
        default=False,
        description="fused attention (on GPU: torch's scaled_dot_product_attention picks a flash kernel)",
    )
    module: str = Field(
        default="builtin",
        description="'builtin' (Megatron-style block of "
        "calibration/models.py) or the user's package.module:factory",
    )
    attention_kernel: TimedAttention | None = timed_attention_field()


class BlockPoint(_Strict):
    """Forward+backward of one block shard at tensor-parallel degree ``tp``, and the fit."""

    tp: int = bounded("devices_per_node", description="tensor-parallel degree of the shard")
    time_s: float = bounded("positive_duration_s", description="median forward+backward, s")
    forward_s: float = bounded("duration_s", description="median forward, s")
    backward_s: float = bounded("duration_s", description="median backward, s")
    spread_s: float = bounded("duration_s", 0.0, "interquartile range over repeats, s")
    repeats: int = bounded("repeats", 1)
    model_s: float = bounded(
        "duration_s",
        description="the layout model's layer time at this "
        "shard with the fitted sustained FLOP/s and memory bandwidth, s",
    )


class MessagePoint(_Strict):
    """One message that tensor or pipeline parallelism sends, timed, beside the link model."""

    op: Literal["all_reduce", "reduce_scatter", "all_gather", "send_recv"]
    purpose: str = Field(
        description="what sends it: 'tp' (per layer and micro-batch) or 'pp' (activations between stages)"
    )
    ranks: int = bounded("collective_ranks", description="ranks in the group (2 for send/recv)")
    size_bytes: float = bounded(
        "message_bytes",
        description="full buffer (all-reduce, reduce-scatter input, all-gather output) or the sent tensor",
    )
    time_s: float = bounded("positive_duration_s", description="slowest rank's mean per call")
    model_s: float = bounded(
        "duration_s", description="what the profile's intra-server link (alpha-beta) predicts for it, s"
    )


# The start of the profile note a calibration writes when its --block-hidden timings could not be
# fitted (calibration/assemble.py); the planner's refusal of such a profile quotes it.
BLOCK_NOT_USABLE = "block at tensor-parallel shapes not usable, no model_parallel section"


class ModelParallelCalibration(_Strict):
    """What a model-parallel (layout) prediction reads from a calibration: the sustained matmul
    rate and the memory bandwidth of the additive roofline (docs/model.md §13), fitted to one
    transformer block timed at the per-device shapes of several tensor-parallel degrees, and the
    tensor/pipeline-parallel messages timed on the intra-server link (docs/calibration.md)."""

    block: BlockShape
    points: list[BlockPoint] = Field(min_length=1)
    sustained_tflops: float = bounded(
        "peak_tflops", description="fitted sustained matmul rate F = peak x efficiency, TFLOP/s"
    )
    memory_bandwidth_GBps: float = bounded(
        "memory_bandwidth_GBps",
        description="fitted memory bandwidth of the roofline's byte "
        "term (the layout model's 2-byte accounting), GB/s",
    )
    peak_tflops: float | None = bounded(
        "peak_tflops",
        None,
        "the device's datasheet dense peak at the run's precision, TFLOP/s "
        "(None on CPUs and unlisted devices)",
    )
    matmul_efficiency: float | None = bounded(
        "matmul_efficiency", None, "sustained_tflops / peak_tflops: the layout model's efficiency"
    )
    rel_rmse: float = bounded(
        "rel_error", description="relative RMS error of the roofline fit over the points"
    )
    messages: list[MessagePoint] = Field(default_factory=list)
    p2p_latency_s: float | None = bounded("latency_s", None, "send/recv alpha fitted over the pp messages, s")
    p2p_bandwidth_GBps: float | None = bounded(
        "bandwidth_GBps", None, "send/recv bytes per second fitted over the pp messages, GB/s"
    )
    source: str = ""

    def above_peak(self, peak_tflops: float | None) -> bool:
        """``fit_above_peak`` of this block's fit."""
        return fit_above_peak(self.sustained_tflops, peak_tflops)


def fit_above_peak(sustained_tflops: float, peak_tflops: float | None) -> bool:
    """Whether a block fit's sustained rate is above the datasheet ``peak_tflops`` (None: no
    peak known), which only launch-bound timings give (``LAUNCH_BOUND``)."""
    return peak_tflops is not None and sustained_tflops > peak_tflops * (1 + 1e-9)


# Said where a block's fitted sustained rate is above its device's datasheet peak: small shards
# finish their kernels faster than the host launches them (measured on an H200,
# docs/calibration.md "GPU path"), which the roofline reads as a huge rate and a slow memory.
LAUNCH_BOUND = (
    "the fitted rate is above the datasheet peak: the block's shards were "
    "launch-bound; time a larger block (--block-batch, --block-seq)"
)


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
    model_parallel: ModelParallelCalibration | None = Field(
        default=None,
        description="transformer block at tensor-parallel shard shapes and the "
        "tp/pp messages (calibrate --block-hidden); None in profiles without it",
    )
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _say_defaulted_contention(self) -> Profile:
        if self.hardware.contention_defaulted_on_cpu() and CPU_CONTENTION_NOTE not in self.notes:
            object.__setattr__(self, "notes", [*self.notes, CPU_CONTENTION_NOTE])
        return self


# What a CPU profile without hardware.comm_compute_contention is told (``Profile`` adds it)
CPU_CONTENTION_NOTE = (
    f"hardware.comm_compute_contention not in this profile (written before the field): "
    f"{CPU_COMM_CONTENTION:g} taken, as scalesim calibrate writes on CPU (gloo's collectives run "
    f"on the compute cores, so overlap hides none of them), not the GPU default "
    f"{GPU_COMM_CONTENTION:.3f} (docs/model.md §3)")


class ScenarioLayout(_Strict):
    """How a scenario splits the model (``scalesim.layout``); the rest of the layout comes from
    the scenario: dp = devices / (tp x pp x cp), the ZeRO stage from ``strategy``, the micro-batch
    and accumulation from ``micro_batch`` / ``global_batch`` and ``accumulation``.

    Needs a workload with a ``transformer`` shape (a parameter count cannot be split; it takes
    the ``shard_group`` alone, hybrid sharding over its devices, docs/model.md §16)."""

    tp: int = bounded("tp_degree", 1, "tensor-parallel degree (ranks innermost, in one server)")
    pp: int = bounded("pp_degree", 1, "pipeline-parallel stages")
    cp: int = bounded("cp_degree", 1, CP_HELP)
    schedule: Schedule | None = Field(
        default=None,
        description="pipeline schedule: gpipe, 1f1b, interleaved, zb; None: 1f1b "
        "when pp > 1 (interleaved when virtual_stages > 1), none when pp = 1",
    )
    virtual_stages: int = bounded("virtual_stages", 1, "model chunks per pipeline rank (interleaved 1F1B)")
    recompute: Recompute | None = Field(
        default=None,
        description="activation recompute: none, selective, full; None: the "
        "workload's (full when activation_recompute, else none)",
    )
    recompute_style: RecomputeStyle = recompute_style_field()
    sequence_parallel: bool = Field(
        default=False, description="Megatron sequence parallelism in the tensor-parallel group (needs tp > 1)"
    )
    tp_overlap: bool = tp_overlap_field()
    p2p_overlap: bool = p2p_overlap_field()
    shard_group: int | None = bounded("shard_group", None, SHARD_GROUP_HELP)

    def schedule_of(self) -> str:
        """The schedule the layout runs: the given one, or its default for pp."""
        if self.schedule is not None:
            return self.schedule
        if self.pp == 1:
            return "none"
        return "interleaved" if self.virtual_stages > 1 else "1f1b"

    def recompute_of(self, workload: Workload) -> str:
        if self.recompute is not None:
            return self.recompute
        return "full" if workload.activation_recompute else "none"

    def stops_early(self, workload: Workload) -> bool:
        """Whether the layout's recompute stops early: full recompute (given or the workload's)
        in the 'early-stop' style (``LayoutInputs.recompute_early_stop``)."""
        return self.recompute_of(workload) == "full" and early_stop_of(self.recompute_style)

    def saves_per_op(self, workload: Workload) -> bool:
        """Whether the split's recompute is torchtitan's per-op selective checkpoint: selective
        recompute in the 'op-sac' style (``LayoutInputs.recompute_op_sac``)."""
        return self.recompute_of(workload) == "selective" and op_sac_of(self.recompute_style)

    @property
    def splits_model(self) -> bool:
        return self.tp > 1 or self.pp > 1 or self.cp > 1

    @property
    def interleaved(self) -> bool:
        """Whether the split runs the interleaved schedule (``layout.interleaves``), whose
        steady-state sends ``p2p_overlap`` hides."""
        return interleaves(self.schedule_of(), self.pp, self.virtual_stages)


# a validation context (``Scenario.model_validate(data, context={FIELDS_ALONE: True})``,
# ``jsonio.parse_model``'s ``context``) that checks a scenario's fields alone, each its type and
# bounds, and leaves the rules across fields (both batches, DeepSpeed's grad_sync and pipeline)
# to the scenario the fields go into: the CLI's --scenario file, read before its flags are put
# on top (``cli.options.scenario_from_args``), is refused for such a rule once, merged
FIELDS_ALONE = "fields_alone"


class Scenario(_Strict):
    """The what-if knobs. ``None`` means "take it from the profile"."""

    schema_version: Literal["scalesim-scenario/1"] = SCENARIO_VERSION
    devices: list[items_bounded("devices")] = Field(  # type: ignore[valid-type]
        default=[1, 2, 4, 8, 16],
        min_length=1,
        description=f"device counts, kept sorted with each count once (the rows of a "
        f"prediction, in order); allowed: {bound('devices').text()} each",
    )
    devices_per_node: int | None = knob_field("devices_per_node", None)
    micro_batch: int | None = knob_field("micro_batch", None, "weak scaling: per device")
    global_batch: int | None = knob_field("global_batch", None, "strong scaling: fixed")
    accumulation: int = knob_field("accumulation", 1)
    overlap: bool = True
    bucket_mib: float = knob_field("bucket_mib", 25.0, "DDP gradient bucket, MiB")
    first_bucket_mib: float = knob_field("first_bucket_mib", 1.0, "DDP first bucket, MiB")
    strategy: Strategy = "ddp"
    zero_framework: ZeroFramework = Field(
        default="fsdp",
        description="how ZeRO runs (docs/model.md §4, model/zero_exchange.py): 'fsdp' (PyTorch "
        "FSDP for ZeRO-2/3: one wrapped block per all-gather and reduce-scatter; ZeRO-1, which "
        "FSDP lacks, as Megatron-Core's distributed optimizer: reduce-scatter of its fp32 main "
        "grads and all-gather in its buckets, 0.75x the bytes of DDP's fp32 all-reduce in bf16 "
        "training) or "
        "'deepspeed' (its reduce/allgather/prefetch bucket "
        "defaults; ZeRO-1/2 all-reduce, then all-gather the parameters after the step). Sharded "
        "gradients (ZeRO-2/3) are reduced as grad_sync says",
    )
    grad_sync: GradSync = Field(
        default="every-micro-step",
        description="when ZeRO-2/3 reduce sharded gradients under gradient accumulation "
        "(docs/model.md §4): 'every-micro-step' (reduce-scatter in every backward, gradients "
        "stay sharded: DeepSpeed stage 2/3, FSDP by default, torchtitan) or 'once-per-step' "
        "(FSDP's no_sync / set_requires_gradient_sync(False), Hugging Face Accelerate's "
        "accumulate: full gradients held on every rank, one reduce-scatter in the last "
        "micro-step; FSDP only). DDP and ZeRO-1 reduce once per step either way",
    )
    attention_kernel: AttentionKernel | None = Field(
        default=None, description=ATTENTION_KERNEL_HELP
    )
    precision: Precision = Field(default=DEFAULT_PRECISION, description=PRECISION_HELP)
    algorithm: Algorithm = Field(
        default="auto",
        description="all-reduce algorithm: auto = NCCL's ring or tree, whichever is faster for "
        "each message (NCCL's tuner); hierarchical (Horovod) only when named",
    )
    loader_workers: int | None = knob_field("loader_workers", None)
    straggler_cv: float | None = knob_field("straggler_cv", None, "std/mean of a micro-step")
    device_speed_cv: float | None = knob_field(
        "device_speed_cv", None, "std/mean of device speeds (persistent variation)"
    )
    comm_compute_contention: float | None = knob_field(
        "comm_compute_contention", None, "0 free overlap .. 1 collectives steal compute"
    )
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
    memory_margin: float = knob_field(
        "memory_margin", 0.0, "share of each device's memory kept free: a row fits where its "
        "memory is at most (1 - margin) x the device's (docs/model.md §16); 0: all of it"
    )
    instance_sizes: list[items_bounded("devices_per_node")] | None = Field(  # type: ignore[valid-type]
        default=None, min_length=1, description=f"{INSTANCE_SIZES_HELP}; None: the hardware's"
    )
    layout: ScenarioLayout | None = Field(
        default=None,
        description="how the model is split (tensor, pipeline, schedule, "
        "recompute, sequence parallel); None: data parallel only, or tp = pp = 1 for a "
        "transformer workload",
    )

    _sizes_sorted = field_validator("instance_sizes")(lambda v: _sorted_sizes(v))
    _price_floor = field_validator("price_per_device_hour")(nonzero_floor("price_per_device_hour"))

    @field_validator("devices")
    @classmethod
    def _sorted_once(cls, devices: list[int]) -> list[int]:
        """Rows in order, one per count: the knee and the speed-up read neighbouring rows."""
        return sorted(set(devices))

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Scenario:
        if any(d < 1 for d in self.devices):
            raise ValueError("device counts must be 1 or more")
        if (info.context or {}).get(FIELDS_ALONE):
            return self  # the rules across fields wait for the scenario the fields go into
        if self.micro_batch is not None and self.global_batch is not None:
            raise ScalesimError(knob_refusal(
                f"give a per-device micro-batch ({KNOB.micro_batch}, weak scaling) or a global "
                f"batch ({KNOB.global_batch}, strong scaling), not both",
                ("micro_batch", "global_batch")))
        # a ScalesimError (a ValueError to pydantic) carries the knobs it refuses into the
        # ValidationError's context (``bounds.validation_knobs``)
        if grad_sync_refused(self.zero_framework, self.grad_sync):
            raise ScalesimError(grad_sync_deepspeed_error())
        if self.layout is not None and deepspeed_refuses_pipeline(
                self.zero_framework, ZERO_STRATEGIES.index(self.strategy), self.layout.pp):
            raise ScalesimError(deepspeed_pipeline_error(self.strategy, self.layout.pp))
        return self


SCHEMAS: dict[str, type[BaseModel]] = {
    "profile": Profile,
    "hardware": Hardware,
    "workload": Workload,
    "scenario": Scenario,
}
