"""Predict published scaling measurements from their anchor point and report the error.

Reads files of format ``scalesim-validation-cases/1`` (scalesim/data/validation/README.md). For each
case the anchor (smallest device count) pins down compute and nothing else: the per-sample time
of the compute curve (overhead 0) is solved so the model reproduces the anchor's throughput
exactly at the anchor's devices, nodes, batch and accumulation, its own communication included.
Every other point is then predicted from the case's hardware (link presets with sources), its
workload and one set of documented defaults (``DEFAULTS``); missing fields get a default and a
flag, never a skip. Errors are ``100 * (predicted - published) / published``; statistics are over
the points the model did not see (anchors excluded). docs/validation.md has the method.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Generic, Literal, TypeVar, get_args

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    field_validator,
)

from scalesim.bounds import bounded
from scalesim.case_words import DP_WORDS, intra_preset, read_words
from scalesim.errors import ScalesimError, excerpt, require_model
from scalesim.figures import count
from scalesim.jsonio import KeysTwice, key_twice_text, read_json, validation_message
from scalesim.model import collectives as coll
from scalesim.model.compute import OPTIMIZER_MAX_SHARE, optimizer_roofline_s
from scalesim.model.memory import DDP
from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, GPU_COMM_CONTENTION
from scalesim.model.param_server import evaluate_ps
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.stragglers import DEVICE_SPEED_CV
from scalesim.predict import nvls_busbw_ratio
from scalesim.presets import (
    DGX1_GPUS,
    INTRA_LINKS,
    gb_spelling,
    host_link,
    inter_link,
    intra_link,
    memory_bandwidth_of,
    partial_server_inter_busbw_GBps,
    stated_memory_problem,
)
from scalesim.schemas import StrictModel

FORMAT = "scalesim-validation-cases/1"
CaseT = TypeVar("CaseT", bound=BaseModel)

# One set of documented defaults, used for every case (docs/validation.md says why).
DEFAULT_PARAMS = 100e6  # gradient elements when a case gives none: a mid-size model
WIRE_BYTES_OF_PRECISION = {"fp32": 4.0, "tf32": 4.0, "fp16-mixed": 4.0, "bf16-mixed": 4.0}
DEFAULT_ANCHOR_MICRO_STEP_S = 0.25  # anchor forward+backward time when the batch is unknown, s
OVERHEAD_S = 0.0  # compute curve's fixed time per micro-step: the anchor cannot separate it
# Optimizer update per step: memory-bound (model/compute.py optimizer_roofline_s) at the GPU's
# datasheet memory bandwidth (presets.MEMORY_BANDWIDTH_GBPS), with Adam-type state: bytes per
# parameter of (parameter, gradient, optimizer state) by precision (mixed: fp16 parameter and
# gradient, fp32 master copy + m + v).
OPTIMIZER_BYTES_OF_PRECISION = {
    "fp32": (4.0, 4.0, 8.0),
    "tf32": (4.0, 4.0, 8.0),
    "fp16-mixed": (2.0, 2.0, 12.0),
    "bf16-mixed": (2.0, 2.0, 12.0),
}
BACKWARD_FRACTION = 2.0 / 3.0  # backward = 2 x forward (matmul FLOP count)
BUCKET_BYTES = DDP_BUCKET_BYTES  # torch DDP's 25 MiB, for every framework
FIRST_BUCKET_BYTES = DDP_FIRST_BUCKET_BYTES  # torch DDP's 1 MiB first bucket
ALGORITHM = coll.AUTO  # NCCL picks the fastest algorithm per message size
# Framework defaults keyed on the case's source (a documented list, docs/validation.md), each
# applied through the model's user-facing option of the same physics. Horovod under TensorFlow
# XLA auto-clustering sees a gradient only when the compiled cluster that produces it ends, so
# the all-reduces do not overlap backward (overlap off, ``--no-overlap``): Horovod maintainer in
# horovod/horovod#1673 ("Horovod will only be informed of tensors needing processing between XLA
# clusters"), nvprof in NVIDIA/DeepLearningExamples#156 and horovod/horovod#1283. The DLE TF1
# BERT scripts run with XLA on by default (scripts/run_squad.sh:21, run_pretraining_lamb_phase1.sh
# and _phase2.sh:24 ``use_xla=${..:-"true"}``; run_squad.py:162, DeepLearningExamples 729963dd);
# with accumulation they also clip by the global norm before the all-reduce
# (optimization.py:138-152, ``allreduce_post_accumulation``), which waits for every gradient.
# DLE TF1 ResNet-50 v1.5: every training-performance table of its README labels its columns
# "+ XLA" ("Throughput - FP32 + XLA", "- TF32 + XLA", "- mixed precision + XLA";
# resnet50v1.5/README.md at 4eaa4434 and b2e7f4a2), training_perf.sh passes --use_xla to the
# multi-GPU runs (mpiexec, Horovod's hvd.DistributedOptimizer, model/resnet.py:301) and --use_xla
# sets the same auto-clustering as TF1 BERT (runtime/runner.py:238-239,
# ``global_jit_level = ON_1``). Its ResNeXt101 / SE-ResNeXt101 siblings are not listed: some of
# their tables do not say XLA. DLE TF2 ELECTRA pre-training: the README's benchmark script
# (scripts/benchmark_pretraining.sh, README "Training performance benchmark", 96e17009) passes
# xla=${3:-"xla"} to run_pretraining.sh, which adds --xla (run_pretraining.sh:68-69); multi-GPU
# runs use Horovod. Its SQuAD fine-tuning tables (scripts/benchmark_squad.sh -> run_squad.sh,
# horovodrun) add --xla only with AMP (run_squad.sh:43-45 ``use_fp16=" --amp --xla "``;
# run_tf_squad.py:353 ``tf.config.optimizer.set_jit``): NO_OVERLAP_MIXED_PRECISION_SOURCES.
NO_OVERLAP_SOURCES = (
    "TensorFlow/LanguageModeling/BERT",
    "TensorFlow/Classification/ConvNets/resnet50v1.5",
    "TensorFlow2/LanguageModeling/ELECTRA README, 'Pre-training",
)
NO_OVERLAP_MIXED_PRECISION_SOURCES = ("TensorFlow2/LanguageModeling/ELECTRA README, 'Fine-tuning",)
# Overlap off for a second reason, keyed the same way: the source's model holds nearly all its
# parameters in the layers forward uses first, so their gradients are ready only when backward
# ends and nothing is left to overlap. DLE PyTorch NCF at its DGX-2 table's commit (5d6d417f,
# 2021-09-03, image pytorch:21.04-py3): four dense nn.Embedding tables (neumf.py:48-51, 165,237
# rows x (64 + 128) = 31.7 M of the 31.8 M parameters) are forward's first ops (neumf.py:81-87);
# autograd runs the later-created nodes first, so the tiny MLP's backward comes before the
# embeddings' and their gradients come last; ncf.py:236 wraps the model in Apex DDP, whose
# all-reduces follow gradient readiness.
GRADIENTS_LAST_SOURCES = ("PyTorch/Recommendation/NCF",)
# The whole gradient in one all-reduce after backward (DDP's 1 MiB first bucket aside), keyed on
# the source as above. DLE PyTorch BERT pre-training, at the commit that added its multi-node
# tables (NVIDIA/DeepLearningExamples a9e2c1d5, 2022-03-02, image pytorch:21.11-py3), wraps the
# model in torch DDP with ``bucket_cap_mb=torch.cuda.get_device_properties(device).total_memory``
# (run_pretraining.py:457 at 729963dd): the device's memory in bytes taken as megabytes, a cap far
# above any gradient, so after the first bucket (``[dist._DEFAULT_FIRST_BUCKET_BYTES,
# self.bucket_bytes_cap]`` in torch's distributed.py) one bucket holds every gradient and its
# all-reduce starts when the last gradient is ready, i.e. when backward ends. run.sub
# (--allreduce_post_accumulation) skips it in the accumulation micro-steps (``no_sync``,
# run_pretraining.py:679-680). Before a9e2c1d5 the same flag all-reduced one flattened buffer of
# every gradient after backward (apex ``flat_dist_call``; run_pretraining.py:431-451 at
# a9e2c1d5^): the same single exchange.
ONE_BUCKET_SOURCES = ("PyTorch/LanguageModeling/BERT",)
# Targets of issue 10, on this file and on unseen cases of the same kind alike.
TARGET_MEDIAN_PCT = 4.0  # all-reduce cases: median absolute error target
TARGET_MEAN_PCT = 7.0  # all-reduce cases: mean absolute error target
TARGET_PS_MEDIAN_PCT = 15.0  # parameter-server cases: median absolute error target

DEFAULTS = {
    "params": DEFAULT_PARAMS,
    "wire_bytes_of_precision": WIRE_BYTES_OF_PRECISION,
    "anchor_micro_step_s": DEFAULT_ANCHOR_MICRO_STEP_S,
    "overhead_s": OVERHEAD_S,
    "optimizer_step": "memory-bound Adam-type update at the GPU's datasheet memory bandwidth "
    "(0 when the GPU is not listed)",
    "optimizer_bytes_of_precision": OPTIMIZER_BYTES_OF_PRECISION,
    "backward_fraction": BACKWARD_FRACTION,
    "bucket_bytes": BUCKET_BYTES,
    "one_bucket_sources": "the whole gradient in one bucket (after DDP's first) for the sources in "
    "ONE_BUCKET_SOURCES (DeepLearningExamples PyTorch/LanguageModeling/BERT: DDP bucket_cap_mb "
    "= the device's memory in bytes)",
    "first_bucket_bytes": FIRST_BUCKET_BYTES,
    "algorithm": "auto (NCCL's ring, tree or, with NVLink SHARP, NVLS / NVLS-tree)",
    "partial_server_links": "a ring over 2 or 4 GPUs of a DGX-1 (nvlink1, nvlink2) gets the "
    "NVLinks of that subset (the link level's subset_busbw_shares, presets.subset_shares)",
    "overlap": "on, except sources in NO_OVERLAP_SOURCES (Horovod under TensorFlow XLA: "
    "DeepLearningExamples TensorFlow/LanguageModeling/BERT, XLA on by default; "
    "TensorFlow/Classification/ConvNets/resnet50v1.5, whose tables say '+ XLA'; TF2 ELECTRA "
    "pre-training, XLA by default; and, in mixed precision only, TF2 ELECTRA SQuAD fine-tuning: "
    "NO_OVERLAP_MIXED_PRECISION_SOURCES); also off for GRADIENTS_LAST_SOURCES (DLE PyTorch NCF: "
    "embeddings, 99.7% of the parameters, get their gradients last)",
    "comm_compute_contention": GPU_COMM_CONTENTION,
    "device_speed_cv": DEVICE_SPEED_CV,
    "jitter_cv": 0.0,
    "loader": "unlimited",
    "allreduce_per": "optimizer step (DDP no_sync during accumulation)",
    "parameter_server": "one node: the devices are the servers, 1/g of the parameters each, "
    "through the intra-server link (tf_cnn_benchmarks' default local_parameter_device=gpu); "
    "several: devices sum on their node's host over their PCIe links (tf_cnn_benchmarks' "
    "parameter_server mode, MXNet dist_sync), one colocated server per node through the NICs, "
    "over TCP (socket efficiency of the NICs' line rate, whatever their kind)",
}


# ---------------------------------------------------------------------------- the file format
class _Strict(StrictModel):
    numbers_as_text = True  # a published case's "1.3e9" is that number (schemas._Strict)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans(cls, value):
        """No field is a boolean: pydantic would silently read true as 1 (device, sample/s)."""
        if isinstance(value, bool):
            raise ValueError("true/false is not a value here; give a number or a string")
        return value


class InterNode(_Strict):
    kind: Literal["infiniband", "ethernet", "roce"]
    nics_per_node: int = bounded("nics_per_node")
    gbit_per_nic: float = bounded("gbit_per_nic")


class CaseHardware(_Strict):
    gpu: str
    gpus_per_node: int = bounded("devices_per_node")
    intra_node: str
    inter_node: InterNode | None = None
    assumed: list[str] = Field(default_factory=list)


class CaseWorkload(_Strict):
    model: str
    params: float | None = bounded("params", None)
    precision: Literal["fp32", "tf32", "fp16-mixed", "bf16-mixed"]
    grad_bytes_per_param: float | None = bounded("wire_bytes_per_param", None)
    samples_per_step_per_device: float | None = bounded("samples_per_device", None)
    scaling: Literal["weak", "strong"]


class CasePoint(_Strict):
    devices: int = bounded("devices")
    nodes: int = bounded("nodes")
    throughput: float = bounded("samples_per_s", description="samples per second, whole job")
    accumulation: int | None = bounded("accumulation", None)
    samples_per_step_per_device: float | None = bounded("samples_per_device", None)


# A case's id or group: text a report quotes on one line, so a 400,000-character id is refused
# (with its case) rather than printed whole.
CASE_NAME_MAX_CHARS = 200


def _visible(text: str) -> str:
    if not text.strip():  # '   ': a heading no one can find the case by
        raise ValueError("write at least one visible character (a name of spaces names nothing)")
    return text


CaseName = Annotated[
    str, StringConstraints(min_length=1, max_length=CASE_NAME_MAX_CHARS), AfterValidator(_visible)
]


class Case(_Strict):
    id: CaseName
    source: str
    trust: Literal["high", "medium", "low"]
    notes: str = ""
    workload: CaseWorkload
    hardware: CaseHardware
    comm: Literal["allreduce", "parameter-server"]
    throughput_unit: Literal["images", "tokens", "sequences", "samples"]
    points: list[CasePoint] = Field(min_length=1)
    WORDS: ClassVar[dict] = DP_WORDS  # other spellings and null defaults (case_words)
    _read_flags: tuple[str, ...] = PrivateAttr(default=())  # the reader's (read_case_list)
    # each point's index in the file's case, where the reader dropped some (_without_bad_points)
    _point_index: tuple[int, ...] | None = PrivateAttr(default=None)


def read_gpu_name(gpu: str, flags: list[str]) -> str:
    """The case's GPU name as the datasheet tables read it, with a flag where its stated memory
    needed reading: a size in another unit than GB ('A100 80G', 'A100 80GiB') is read as the
    nominal GB it means (``presets.gb_spelling``), and a size the tables do not take ('A100
    40GB 80GB', a size its GPU is not sold with) is flagged and predicted as the tables read
    it. Never a refusal: a case's name is the source's free text, and one odd name must not stop
    a whole file (``--gpu`` refuses it instead). Shared by both case formats."""
    read = gb_spelling(gpu)
    if read != gpu:
        flags.append(
            f"hardware.gpu '{excerpt(gpu)}' states its memory in another unit than "
            f"GB: read as '{excerpt(read)}'"
        )
    if problem := stated_memory_problem(read):
        flags.append(
            f"hardware.gpu '{excerpt(read)}' {problem}: predicted with what the datasheet tables read in it"
        )
    return read


def cube_mesh_note(intra_node: str, gpus_per_node: int) -> str | None:
    """The flag of a server larger than the DGX-1 whose point-to-point NVLinks ``intra_node``
    names (``nvlink1``, ``nvlink2``: ``presets.DGX1_GPUS`` GPUs), else None. Shared by both case
    formats."""
    if INTRA_LINKS[intra_node].links_per_gpu and gpus_per_node > DGX1_GPUS:
        return (
            f"hardware.intra_node {intra_node} is the {DGX1_GPUS}-GPU DGX-1 hybrid cube-mesh "
            f"but gpus_per_node is {gpus_per_node}: predicted with the whole "
            f"{DGX1_GPUS}-GPU server's NVLinks"
        )
    return None


POINT_NOT_READ = "point not read, not predicted: "  # the flag of a dropped point (summary counts)
FIELDS_IGNORED = "unknown field"  # the flag of a case's fields the format lacks, ignored


def _point_problems(case: Case) -> list[tuple[int, str]]:
    """``(index, reason)`` of each point the model cannot place: a device count given twice
    (the later point; a point dropped for another reason does not count), devices that do not
    fit the case's servers, more than one server without ``hardware.inter_node``."""
    hw, seen, problems = case.hardware, set(), []
    for i, pt in enumerate(case.points):
        if pt.devices in seen:
            problems.append((i, f"two points with {count(pt.devices, 'device')}; keep one"))
        elif pt.devices % pt.nodes or pt.devices // pt.nodes > hw.gpus_per_node:
            problems.append(
                (
                    i,
                    f"{pt.devices} devices on {count(pt.nodes, 'node')} do not fit "
                    f"servers of {hw.gpus_per_node}; give devices as a multiple of "
                    "nodes, at most gpus_per_node per node",
                )
            )
        elif pt.nodes > 1 and hw.inter_node is None:
            problems.append(
                (
                    i,
                    f"a point spans {pt.nodes} nodes but hardware.inter_node is null; "
                    "describe the network between the servers",
                )
            )
        if not problems or problems[-1][0] != i:
            seen.add(pt.devices)
    return problems


def _check_hardware(case: Case, where: str) -> None:
    hw = case.hardware
    if intra_preset(hw.intra_node) not in INTRA_LINKS:
        raise ScalesimError(
            f"{where}: unknown hardware.intra_node '{excerpt(hw.intra_node)}'; "
            f"use one of {', '.join(INTRA_LINKS)}"
        )
    net = hw.inter_node
    if net is not None:
        try:
            inter_link(net.kind, net.nics_per_node, net.gbit_per_nic)
        except ValidationError:  # the preset's bus bandwidth rounds to 0 GB/s
            raise ScalesimError(
                f"{where}: hardware.inter_node of {net.nics_per_node} x "
                f"{net.gbit_per_nic:g} Gb/s is too slow to model; give "
                "gbit_per_nic of at least 0.01"
            ) from None


def _check_case(case: Case, where: str) -> None:
    """Strict (the shipped files): the case's hardware and every point, first problem raised."""
    _check_hardware(case, where)
    if problems := _point_problems(case):
        raise ScalesimError(f"{where}: {problems[0][1]}")


def _check_case_dropping_points(case: Case, where: str) -> Case:
    """Tolerant (``read_cases``): the case without the points the model cannot place, each
    flagged; ScalesimError where the hardware cannot be modelled or such a point is at the
    anchor's device count (the smallest: a second anchor, or an anchor that does not fit)."""
    _check_hardware(case, where)
    problems = _point_problems(case)
    if not problems:
        return case
    anchor = min(pt.devices for pt in case.points)
    for i, reason in problems:
        if case.points[i].devices == anchor:
            raise ScalesimError(
                f"{where}: {reason}; the point is at the case's anchor (its "
                "smallest device count), so nothing is predicted"
            )
    dropped = {i for i, _ in problems}
    at = case._point_index or tuple(range(len(case.points)))  # flags name the file's indices
    kept = case.model_copy(update={"points": [pt for i, pt in enumerate(case.points) if i not in dropped]})
    kept._read_flags = (
        *case._read_flags,
        *(f"{POINT_NOT_READ}points.{at[i]}: {reason}" for i, reason in problems),
    )
    kept._point_index = tuple(at[i] for i in range(len(case.points)) if i not in dropped)
    return kept


class Skipped(BaseModel):
    """A published case that was not predicted: its ``id`` (``case 3 (no id)``, its place in
    the file counted from 1, where the id is not text: ``case_label``) and the one-line
    ``reason``."""

    id: str
    reason: str
    # its index in the file's cases (-1: not the reader's); the reader's, not the report's
    position: int = Field(default=-1, exclude=True)


@dataclass(frozen=True)
class CaseFile(Generic[CaseT]):
    """A published-case file as read case by case: the cases read, the ones refused
    (``Skipped``, in file order) and ``total``, how many cases the file holds."""

    cases: list[CaseT]
    skipped: list[Skipped]
    total: int
    ignored: list[str]  # unknown top-level fields, ignored


def _model_in(annotation) -> type[BaseModel] | None:
    """The pydantic model inside a field's annotation (``M``, ``M | None``, ``list[M]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for a in get_args(annotation) if (m := _model_in(a)) is not None), None)


def split_unknown(data, model: type[BaseModel], path: tuple[str, ...] = ()):
    """``(data without the keys model and its fields' models lack, their dotted paths)``: a
    published case's unknown field is ignored and flagged, never refused (scalesim's own files
    keep refusing one: this is for the validation-case readers only)."""
    if not isinstance(data, dict):
        return data, []
    kept, unknown = {}, []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown.append(".".join((*path, str(key))))
            continue
        sub = _model_in(field.annotation)
        if sub is not None and isinstance(value, dict):
            value, more = split_unknown(value, sub, (*path, key))
            unknown += more
        elif sub is not None and isinstance(value, list):
            items = []
            for i, item in enumerate(value):
                item, more = split_unknown(item, sub, (*path, key, str(i)))
                items.append(item)
                unknown += more
            value = items
        kept[key] = value
    return kept, unknown


def key_twice(value, path: tuple[str, ...] = ()) -> str | None:
    """The dotted path of the first key that appears twice in an object of ``value`` (read
    with ``jsonio.read_json(..., keys_twice=True)``), or None."""
    if isinstance(value, KeysTwice):
        return ".".join((*path, value.twice[0]))
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((k for key, v in items if (k := key_twice(v, (*path, str(key)))) is not None), None)


def _server_size_hint(exc: ValidationError) -> str:
    """What fixes a case whose server size is unreadable: either ``hardware.gpus_per_node`` or
    every point's ``nodes`` (``case_words`` fills each in from the other); '' otherwise."""
    locs = [tuple(str(k) for k in e.get("loc", ())) for e in exc.errors()]
    if any(loc == ("hardware", "gpus_per_node") or (loc[:1] == ("points",) and loc[-1:] ==
                                                     ("nodes",)) for loc in locs):
        return ("; give hardware.gpus_per_node (a whole number of GPUs per server) or each "
                "point's nodes: either fills in the other")
    return ""


def _read_case(item, model: type[CaseT], where: str, salvage=None) -> CaseT:
    """One case of a published-case file, its read flags set (``_read_flags``); ScalesimError,
    the one-line reason, when it cannot be read. ``salvage(clean, exc, where)`` may return
    ``(case, flags)`` read without its unreadable parts, or None."""
    if (twice := key_twice(item)) is not None:
        raise ScalesimError(key_twice_text(where, twice))
    item, word_flags = read_words(item, getattr(model, "WORDS", {}))
    clean, unknown = split_unknown(item, model)
    flags = (
        [
            f"{FIELDS_IGNORED}{'s' if len(unknown) > 1 else ''} ignored (not in the format): "
            + ", ".join(excerpt(u) for u in unknown)
        ]
        if unknown
        else []
    ) + word_flags
    try:
        case = model.model_validate(clean)
    except ValidationError as exc:
        salvaged = salvage(clean, exc, where) if salvage is not None else None
        if salvaged is None:
            raise ScalesimError(validation_message(exc, where, model)
                                + _server_size_hint(exc)) from None
        case, more = salvaged
        flags += more
    case._read_flags = tuple(flags)
    return case


def case_label(item, i: int) -> str:
    """How a report names the ``i``-th case (from 0) of a file so that its user finds it there:
    its id as written where it is text (``'toy'``), else its place counted from 1 and what its
    id is (``3 (id 7)`` for an id written as a number, ``3 (no id)``, ``3 (empty id)``,
    ``3 (blank id)`` for spaces)."""
    import json

    name = item.get("id") if isinstance(item, dict) else None
    if isinstance(name, str) and name.strip():
        return repr(excerpt(name, CASE_NAME_MAX_CHARS))
    if name is None:
        return f"{i + 1} (no id)"
    if isinstance(name, str):
        return f"{i + 1} ({'empty' if name == '' else 'blank'} id)"
    return f"{i + 1} (id {excerpt(json.dumps(name, default=str))})"


def format_words(data: dict) -> str:
    """A validation file's "format" field as a refusal says it, in the file's JSON words: 'no
    "format" field' (not Python's 'format is None'), 'format is null', "format is 'x'" (quoted,
    short). One wording for the library (``read_case_list``) and ``scalesim validate``."""
    if "format" not in data:
        return 'no "format" field'
    fmt = data["format"]
    if fmt is None:
        return "format is null"
    text = repr(fmt)
    return "format is " + (text if len(text) <= 60 else text[:57] + "...")


def read_case_list(
    data,
    fmt: str,
    model: type[CaseT],
    what: str,
    hint: str = "",
    check=None,
    salvage=None,
    strict: bool = False,
) -> CaseFile[CaseT]:
    """Read parsed JSON as ``{"format": fmt, "cases": [...]}``, every case a ``model`` of its
    own ``id`` read on its own; ``check(case, where)`` adds per-case checks (and may return the
    case to keep in its place, e.g. without some points), ``salvage`` reads a
    case without its unreadable parts (``_read_case``). A file that is not such an object, or
    whose cases none can be read, raises a one-line ScalesimError; a case that cannot be read is
    ``Skipped`` with the one-line reason naming it (``strict``: raised instead), as is the second
    case of an id. Shared by the validation file formats (this module, validate_parallel)."""
    if not isinstance(data, dict):
        raise ScalesimError(f"{what}: expected a JSON object with 'format' and 'cases'")
    if isinstance(data, KeysTwice):  # a top-level key twice: which cases the file holds is moot
        raise ScalesimError(key_twice_text(what, data.twice[0]))
    if data.get("format") != fmt:
        raise ScalesimError(f"{what}: {format_words(data)}, expected '{fmt}'{hint}")
    extra = sorted(set(data) - {"format", "cases"})
    if extra and strict:
        raise ScalesimError(f"{what}: unknown top-level field '{extra[0]}'; only format and cases")
    raw = data.get("cases")
    if not isinstance(raw, list) or not raw:
        raise ScalesimError(f"{what}: 'cases' must be a non-empty list of cases")
    cases, skipped, ids = [], [], set()
    for i, item in enumerate(raw):
        name = item.get("id") if isinstance(item, dict) else None
        label = case_label(item, i)
        where = f"{what}: case {label}"
        try:
            case = _read_case(item, model, where, None if strict else salvage)
            if case.id in ids:
                raise ScalesimError(f"{where}: id used twice; give every case its own id")
            if check is not None:
                case = check(case, where) or case
        except ScalesimError as exc:
            if strict:
                raise
            skipped.append(
                Skipped(
                    id=excerpt(name, CASE_NAME_MAX_CHARS)
                    if isinstance(name, str) and name.strip()
                    else f"case {label}",
                    reason=str(exc),
                    position=i,
                )
            )
            continue
        ids.add(case.id)
        cases.append(case)
    return CaseFile(cases=cases, skipped=skipped, total=len(raw), ignored=extra)


def none_read(what: str, skipped: list[Skipped], total: int) -> ScalesimError:
    """The one-line refusal of a file none of whose ``total`` cases could be predicted: the
    first case's reason, and the count."""
    first = skipped[0].reason
    if total == 1:
        return ScalesimError(first)
    return ScalesimError(f"{first} (none of the {total} cases of {what} can be predicted)")


def parse_case_list(data, fmt: str, model: type[CaseT], what: str, hint: str = "", check=None) -> list[CaseT]:
    """``read_case_list`` where every case must be read: the first case that cannot be raises
    its one-line error (the shipped files, the benchmarks)."""
    return read_case_list(data, fmt, model, what, hint, check, strict=True).cases


def parse_cases(data, what: str = "validation file") -> list[Case]:
    """Validate parsed JSON as a ``scalesim-validation-cases/1`` file; one-line errors."""
    return parse_case_list(data, FORMAT, Case, what, " (see scalesim/data/validation/README.md)", _check_case)


def load_cases(path: str | Path) -> list[Case]:
    """Read a validation file; a missing, malformed or foreign file raises ScalesimError."""
    return parse_cases(read_json(path), str(path))


def _readable_devices(point) -> float | None:
    """A point's device count as published, where it is a number (text or not), else None."""
    value = point.get("devices") if isinstance(point, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        value = float(value)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _without_bad_points(clean: dict, exc: ValidationError, where: str):
    """``(case, flags)`` of a case whose only unreadable parts are some of its points (a
    ``null`` throughput, a device count out of bounds): read without them, each flagged; None
    where anything else is unreadable, no point is left, or a dropped point may be the anchor
    (its device count unreadable or not above every readable point's: ScalesimError)."""
    locs = [tuple(e.get("loc", ())) for e in exc.errors()]
    if not all(len(loc) >= 2 and loc[0] == "points" and isinstance(loc[1], int) for loc in locs):
        return None
    bad = sorted({loc[1] for loc in locs})
    points = clean["points"]
    good = [p for i, p in enumerate(points) if i not in bad]
    if not good:
        return None
    try:
        case = Case.model_validate({**clean, "points": good})
    except ValidationError:
        return None
    case._point_index = tuple(i for i in range(len(points)) if i not in bad)
    anchor = min(p.devices for p in case.points)
    for i in bad:
        devices = _readable_devices(points[i])
        if devices is None or devices <= anchor:
            maybe = "may be" if devices is None else "is"
            raise ScalesimError(
                f"{validation_message(exc, where, Case)}; the point {maybe} the "
                "case's anchor (its smallest device count), so nothing is "
                "predicted"
            )
    flags = []
    for i in bad:
        try:
            CasePoint.model_validate(points[i])
        except ValidationError as point_exc:
            flags.append(POINT_NOT_READ + validation_message(point_exc, f"points.{i}", CasePoint))
    return case, flags


def read_cases(data, what: str = "validation file") -> CaseFile[Case]:
    """A ``scalesim-validation-cases/1`` file read case by case (``read_case_list``): a point
    that cannot be read is dropped and flagged unless it may be the anchor (then the case is
    skipped); a file none of whose cases can be read raises its one-line error."""
    read = read_case_list(
        data,
        FORMAT,
        Case,
        what,
        " (see scalesim/data/validation/README.md)",
        _check_case_dropping_points,
        _without_bad_points,
    )
    if not read.cases:
        raise none_read(what, read.skipped, read.total)
    return read


# ---------------------------------------------------------------------------- results
class PointResult(BaseModel):
    devices: int
    nodes: int
    published: float  # samples/s
    predicted: float  # samples/s
    error_pct: float  # 100 * (predicted - published) / published
    anchor: bool
    step_s: float
    compute_s: float
    exposed_comm_s: float
    straggler_s: float


class Stats(BaseModel):
    """Absolute errors over predicted (non-anchor) points, percent; None when there are none."""

    cases: int
    points: int
    mean_abs_pct: float | None
    median_abs_pct: float | None
    max_abs_pct: float | None


class CaseResult(BaseModel):
    id: str
    comm: str
    trust: str
    unit: str
    flags: list[str]
    points: list[PointResult]
    stats: Stats


class Report(BaseModel):
    cases: list[CaseResult]
    summary: dict
    skipped: list[Skipped] = Field(default_factory=list)  # cases not predicted, with why


def abs_error_figures(errors_pct) -> dict:
    """Mean, median and largest absolute error of ``errors_pct`` (percent); None when empty."""
    a = [abs(e) for e in errors_pct]
    if not a:
        return {"mean_abs_pct": None, "median_abs_pct": None, "max_abs_pct": None}
    return {
        "mean_abs_pct": statistics.fmean(a),
        "median_abs_pct": statistics.median(a),
        "max_abs_pct": max(a),
    }


def error_stats(errors_pct, cases: int = 1) -> Stats:
    errors_pct = list(errors_pct)
    return Stats(cases=cases, points=len(errors_pct), **abs_error_figures(errors_pct))


# ---------------------------------------------------------------------------- prediction
def _batches(case: Case, points: list[CasePoint], flags: list[str]):
    """Per-point micro-batch (samples, or relative units when unknown) and accumulation."""
    wl = case.workload
    n = np.array([p.devices for p in points], dtype=float)
    k = np.array([p.accumulation or 1 for p in points], dtype=float)
    per_point = [p.samples_per_step_per_device for p in points]
    base = wl.samples_per_step_per_device
    if base is None:
        base = next((b for b in per_point if b is not None), None)
    known = base is not None
    if not known:
        base = 1.0  # relative units: only ratios between points matter, see _solve
        flags.append(
            f"samples_per_step_per_device unknown: the anchor's micro-step is assumed "
            f"to take {DEFAULT_ANCHOR_MICRO_STEP_S:g} s"
        )
    b = np.array([v if v is not None else base for v in per_point], dtype=float)
    carried = any(p.accumulation is not None or p.samples_per_step_per_device is not None for p in points)
    if wl.scaling == "strong" and not carried and len(points) > 1:
        b = base * n[0] / n  # global batch fixed and nothing says how: split it evenly
        flags.append(
            "strong scaling with no per-point batch or accumulation: the anchor's "
            "global batch is split evenly over the devices"
        )
    elif wl.scaling == "strong" and wl.samples_per_step_per_device is None and known and None in per_point:
        # Only points state a batch: the others keep the global batch of the first that does.
        j = next(i for i, v in enumerate(per_point) if v is not None)
        missing = np.array([v is None for v in per_point])
        b = np.where(missing, base * k[j] * n[j] / (n * k), b)
        flags.append(
            f"strong scaling: points without samples_per_step_per_device get the "
            f"global batch of the {points[j].devices}-device point split evenly over "
            "their devices and accumulation"
        )
    if wl.scaling == "strong" and not np.allclose(n * k * b, n[0] * k[0] * b[0], rtol=1e-6):
        flags.append(
            "strong scaling but the global batch differs between points (devices x "
            "samples_per_step_per_device x accumulation); predicted as given"
        )
    return b, k, known


def network_transport(case: Case) -> str:
    """The inter-node link preset kind the case's exchange runs over: parameter servers talk TCP
    (gRPC in TensorFlow, ZeroMQ in MXNet's ps-lite) whatever the NIC, RDMA being an opt-in
    protocol (TensorFlow ``grpc+verbs``), so they get the socket transport's efficiency; an
    all-reduce uses the NIC kind (NCCL uses RDMA where the NIC offers it)."""
    if case.comm == "parameter-server":
        return "ethernet"
    return case.hardware.inter_node.kind


# Why a source rule turns the overlap off, in the case's flag (``no_overlap_rule``'s names).
NO_OVERLAP_WHY = {
    "GRADIENTS_LAST_SOURCES": "the source's model holds nearly all its parameters in forward's "
    "first layers (embeddings), whose gradients are ready only when "
    "backward ends",
    "NO_OVERLAP_MIXED_PRECISION_SOURCES": "in mixed precision the source's script adds XLA to "
    "its Horovod runs, which hands gradients over only "
    "when a compiled cluster ends (horovod#1673)",
    "NO_OVERLAP_SOURCES": "the source's runs use Horovod under XLA (its scripts' default, or its "
    "tables say so), which hands gradients over only when a compiled "
    "cluster ends (horovod#1673)",
}


def _names_any(case: Case, keys: tuple[str, ...]) -> bool:
    """Whether the case's ``source`` names one of ``keys`` (a script's path in a repository)."""
    return any(key in case.source for key in keys)


def no_overlap_rule(case: Case) -> str | None:
    """The source rule that turns the case's overlap off, by name (``NO_OVERLAP_WHY``), or None
    where the exchange overlaps backward: a model whose gradients are ready only when backward
    ends (``GRADIENTS_LAST_SOURCES``), a script that runs Horovod under XLA auto-clustering
    (``NO_OVERLAP_SOURCES``; in mixed precision only, ``NO_OVERLAP_MIXED_PRECISION_SOURCES``)."""
    mixed = case.workload.precision in ("fp16-mixed", "bf16-mixed")
    rules = (
        ("GRADIENTS_LAST_SOURCES", GRADIENTS_LAST_SOURCES, True),
        ("NO_OVERLAP_MIXED_PRECISION_SOURCES", NO_OVERLAP_MIXED_PRECISION_SOURCES, mixed),
        ("NO_OVERLAP_SOURCES", NO_OVERLAP_SOURCES, True),
    )
    return next((name for name, keys, applies in rules if applies and _names_any(case, keys)), None)


def overlaps_backward(case: Case) -> bool:
    """Whether the case's gradient exchange overlaps backward (no ``no_overlap_rule``)."""
    return no_overlap_rule(case) is None


def one_bucket(case: Case) -> bool:
    """Whether the case's training script puts every gradient in one DDP bucket
    (``ONE_BUCKET_SOURCES``)."""
    return _names_any(case, ONE_BUCKET_SOURCES)


def bucket_bytes_of(case: Case, params: float, wire_bytes: float) -> float:
    """Bytes of the case's gradient bucket: the whole gradient for ``one_bucket`` sources (their
    cap exceeds any gradient), else DDP's 25 MiB."""
    if one_bucket(case):
        return max(float(params) * float(wire_bytes), float(BUCKET_BYTES))
    return float(BUCKET_BYTES)


def _inputs(case: Case, points: list[CasePoint], b, k, params, wire_bytes) -> StepInputs:
    hw = case.hardware
    intra = intra_link(intra_preset(hw.intra_node))
    inter = (
        intra
        if hw.inter_node is None
        else inter_link(network_transport(case), hw.inter_node.nics_per_node, hw.inter_node.gbit_per_nic)
    )
    n = np.array([p.devices for p in points], dtype=float)
    nodes = np.array([p.nodes for p in points], dtype=float)
    return StepInputs(
        devices=n,
        devices_per_node=n / nodes,
        micro_batch=b,
        accumulation=k,
        overhead_s=OVERHEAD_S,
        per_sample_s=1.0,
        optimizer_step_s=0.0,
        backward_fraction=BACKWARD_FRACTION,
        params=params,
        wire_bytes_per_param=wire_bytes,
        # the case's gradient bytes are its all-reduce's (stated, or WIRE_BYTES_OF_PRECISION):
        # stated, not the default framework's (memory.reduce_bytes_per_param_of)
        reduce_bytes_per_param=wire_bytes,
        # the bytes its optimizer estimate swept (_optimizer_s), so the step's sweep of them
        # (memory.optimizer_traffic_ratio) reads the case's precision: fp32 weights in fp32
        **dict(zip(("param_bytes_per_param", "grad_bytes_per_param", "optimizer_bytes_per_param"),
                   OPTIMIZER_BYTES_OF_PRECISION[case.workload.precision], strict=True)),
        intra_latency_s=intra.latency_s,
        # fewer GPUs than a whole DGX-1 get fewer NVLinks: the model reads the link level's
        # subset_busbw_shares (presets.subset_shares, model/subset_links.py), as predict does
        intra_busbw_GBps=intra.busbw_GBps,
        intra_subset_shares=intra.subset_shares,
        inter_latency_s=inter.latency_s,
        # fewer GPUs per server than it holds reach only their share of its NICs (docs/model.md
        # §2, presets.partial_server_inter_busbw_GBps), as predict has it
        inter_busbw_GBps=partial_server_inter_busbw_GBps(inter, n / nodes, hw.gpus_per_node),
        # all-reduces use NVLS / NVLS-tree where the server has it (docs/model.md §2)
        nvls_busbw_ratio=nvls_busbw_ratio(intra),
        strategy=DDP,
        algorithm=ALGORITHM,
        overlap=overlaps_backward(case),
        device_cv=DEVICE_SPEED_CV,
        comm_contention=GPU_COMM_CONTENTION,
        bucket_bytes=bucket_bytes_of(case, params, wire_bytes),
        first_bucket_bytes=FIRST_BUCKET_BYTES,
    )


def _model(case: Case, inp: StepInputs):
    """(samples/s, step, compute, exposed comm, straggler) arrays (s) for every point of ``inp``."""
    if case.comm == "parameter-server":
        host = host_link(intra_preset(case.hardware.intra_node))
        r = evaluate_ps(inp, host.latency_s, host.busbw_GBps)
    else:
        r = evaluate(inp)
    return r.samples_per_s, r.step_time_s, r.compute_s, r.exposed_comm_s, r.straggler_s


def _solve_per_sample_s(case: Case, inp: StepInputs, target: float, flags: list[str]) -> float:
    """Per-sample compute time that reproduces the anchor (index 0) throughput ``target``."""
    from scipy.optimize import brentq

    anchor = inp.replace(
        devices=inp.devices[:1],
        devices_per_node=inp.devices_per_node[:1],
        micro_batch=inp.micro_batch[:1],
        accumulation=inp.accumulation[:1],
    )

    def gap(per_sample_s: float) -> float:
        got = float(_model(case, anchor.replace(per_sample_s=per_sample_s))[0][0])
        if not math.isfinite(got):  # the root finder would stop with a ValueError
            raise ScalesimError(
                f"case {case.id!r}: the model gave a non-finite throughput at "
                "the anchor; check its params, batch and links"
            )
        return got - target

    # Step >= k*b*s, so throughput <= devices/s: at hi the model is at or below the target.
    hi = float(anchor.devices[0]) / target
    if gap(hi) >= -1e-9 * target:
        return hi  # no exposed communication at the anchor
    lo = hi * 1e-9
    if gap(lo) < 0:
        flags.append(
            "anchor unreachable: the modelled communication alone is slower than the "
            "anchor's step, so compute was solved without it"
        )
        return hi
    return brentq(gap, lo, hi, xtol=hi * 1e-14, rtol=1e-12, maxiter=200)


def _optimizer_s(case: Case, params: float, anchor_step_s: float, flags: list[str]) -> float:
    """The memory-bound optimizer step of the case's model on its GPU, s (0, flagged, when the
    GPU's memory bandwidth is not listed or the estimate is implausibly large)."""
    gpu = read_gpu_name(case.hardware.gpu, flags)
    bandwidth = memory_bandwidth_of(gpu)
    if bandwidth is None:
        flags.append(f"memory bandwidth of '{gpu}' unknown: optimizer step 0")
        return 0.0
    param_b, grad_b, state_b = OPTIMIZER_BYTES_OF_PRECISION[case.workload.precision]
    optimizer_s = float(optimizer_roofline_s(params, param_b, grad_b, state_b, bandwidth[0]))
    if optimizer_s > OPTIMIZER_MAX_SHARE * anchor_step_s:
        flags.append(
            f"optimizer estimate {optimizer_s * 1e3:.3g} ms is over half the anchor's "
            "step: left inside the per-sample time"
        )
        return 0.0
    return optimizer_s


def predict_case(case: Case) -> CaseResult:
    """Anchor on the smallest device count, predict the rest; flags name every default used."""
    case = require_model(case, Case, "case")
    wl, flags = case.workload, list(case._read_flags)
    if case.hardware.assumed:
        flags.append("hardware assumed by the case: " + ", ".join(case.hardware.assumed))
    if note := cube_mesh_note(intra_preset(case.hardware.intra_node), case.hardware.gpus_per_node):
        flags.append(note)
    params = wl.params
    if params is None:
        params = DEFAULT_PARAMS
        flags.append(f"params unknown: {DEFAULT_PARAMS / 1e6:g}M assumed")
    wire = wl.grad_bytes_per_param
    if wire is None:
        wire = WIRE_BYTES_OF_PRECISION[wl.precision]
        flags.append(f"grad_bytes_per_param unknown: {wire:g} assumed from {wl.precision}")
    if rule := no_overlap_rule(case):
        flags.append(f"overlap off ({rule}): {NO_OVERLAP_WHY[rule]}")
    if one_bucket(case):
        flags.append(
            "one gradient bucket (ONE_BUCKET_SOURCES): the source's script sets DDP's "
            "bucket cap to the device's memory, so the exchange starts when backward "
            "ends"
        )
    points = sorted(case.points, key=lambda p: p.devices)
    b, k, known = _batches(case, points, flags)
    target = points[0].throughput
    anchor_step_s = points[0].devices * k[0] * b[0] / target if known else k[0] * DEFAULT_ANCHOR_MICRO_STEP_S
    inp = _inputs(case, points, b, k, params, wire).replace(
        optimizer_step_s=_optimizer_s(case, params, anchor_step_s, flags)
    )
    if known:
        per_sample = _solve_per_sample_s(case, inp, target, flags)
        scale = 1.0
    else:
        per_sample = DEFAULT_ANCHOR_MICRO_STEP_S / b[0]
    rate, step, compute, exposed, straggler = _model(case, inp.replace(per_sample_s=per_sample))
    if not known:
        scale = target / float(rate[0])  # relative units -> samples: the anchor's throughput
    if len(points) == 1:
        flags.append("only the anchor point: nothing to predict")

    results = []
    for i, pt in enumerate(points):
        predicted = float(rate[i]) * scale
        results.append(
            PointResult(
                devices=pt.devices,
                nodes=pt.nodes,
                published=pt.throughput,
                predicted=predicted,
                error_pct=100.0 * (predicted / pt.throughput - 1.0),
                anchor=i == 0,
                step_s=float(step[i]),
                compute_s=float(compute[i]),
                exposed_comm_s=float(exposed[i]),
                straggler_s=float(straggler[i]),
            )
        )
    if not all(
        math.isfinite(r.predicted) and r.predicted > 0 and math.isfinite(r.error_pct) for r in results
    ):
        raise ScalesimError(
            f"case {case.id!r}: the model gave a non-finite throughput; check its params, batch and links"
        )
    return CaseResult(
        id=case.id,
        comm=case.comm,
        trust=case.trust,
        unit=case.throughput_unit,
        flags=flags,
        points=results,
        stats=error_stats([r.error_pct for r in results if not r.anchor]),
    )


def summarize(results: list[CaseResult]) -> dict:
    """Mean, median and max absolute error per exchange kind and overall, and the targets."""

    def group(rs):
        # cases with a scored point (a case of its anchor alone scores nothing: not counted,
        # as the model-parallel summary counts its groups' non-anchor cases)
        scored = sum(1 for r in rs if any(not p.anchor for p in r.points))
        return error_stats([p.error_pct for r in rs for p in r.points if not p.anchor], scored)

    allreduce = group([r for r in results if r.comm == "allreduce"])
    ps = group([r for r in results if r.comm == "parameter-server"])
    summary = {
        "allreduce": allreduce.model_dump(),
        "parameter-server": ps.model_dump(),
        "all": group(results).model_dump(),
        "flagged_cases": sum(1 for r in results if r.flags),
        "defaults": DEFAULTS,
    }
    med, mean = allreduce.median_abs_pct, allreduce.mean_abs_pct
    summary["targets"] = {
        "allreduce_median_abs_pct": TARGET_MEDIAN_PCT,
        "allreduce_mean_abs_pct": TARGET_MEAN_PCT,
        # None where the group has no predicted point: nothing to meet or miss
        "median_met": None if med is None else bool(med <= TARGET_MEDIAN_PCT),
        "mean_met": None if mean is None else bool(mean <= TARGET_MEAN_PCT),
        "parameter_server_median_abs_pct": TARGET_PS_MEDIAN_PCT,
        "parameter_server_median_met": (
            None if ps.median_abs_pct is None else bool(ps.median_abs_pct <= TARGET_PS_MEDIAN_PCT)
        ),
    }
    return summary


def validate_cases(cases: list[Case], skipped: list[Skipped] = ()) -> Report:
    """Predict every case (``parse_cases``, ``load_cases`` or ``read_cases`` gives them); the
    cases the reader ``skipped``, and any whose prediction is not finite, are listed in the
    report's ``skipped`` and counted in ``summary["skipped_cases"]`` (dropped points in
    ``summary["skipped_points"]``)."""
    if not isinstance(cases, list | tuple):
        raise ScalesimError(f"cases: expected a list of Case, got {type(cases).__name__}")
    for case in cases:
        require_model(case, Case, "cases")
    results, skipped = [], list(skipped)
    for case in cases:
        try:
            results.append(predict_case(case))
        except ScalesimError as exc:
            skipped.append(Skipped(id=case.id, reason=str(exc)))
    summary = summarize(results)
    summary["skipped_cases"] = len(skipped)
    summary["skipped_points"] = sum(f.startswith(POINT_NOT_READ) for r in results for f in r.flags)
    return Report(cases=results, summary=summary, skipped=skipped)


def validate_file(path: str | Path) -> Report:
    """Read ``path`` and predict every case in it."""
    return validate_cases(load_cases(path))
