"""How a published case's words are read: other spellings of the formats' names, and defaults for
what a case leaves null or out.

Published-case files (``scalesim validate FILE``, formats ``scalesim-validation-cases/1`` and
``scalesim-parallel-cases/1``) are transcribed by hand from others' tables, so one case may write
``"InfiniBand"``, ``"bf16"``, ``"1F1B"`` or ``null`` where the format names ``infiniband``,
``bf16-mixed``, ``1f1b`` or a value. Each reader here turns such a word into the format's name,
or a missing value into a documented default, and says so in a flag on the case: the case is
predicted, not refused with its file (docs/validation.md, "Words a case may use"). A word no
reader knows is left as written, and the format's own check refuses the case with its reason.
A case that uses only the formats' names gets no flag and the same prediction.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import TypeAdapter, ValidationError

from scalesim.errors import excerpt
from scalesim.presets import INTRA_LINKS, name_has_words

MISSING = object()  # a field the case leaves out (a reader may give it a default)

# ---------------------------------------------------------------- links and network, both formats
# The model-parallel format's names for a server's link where they differ from the presets'
# (parallel_cases.md lists `nvlink-v100` for the V100 DGX-1's hybrid cube-mesh, which the
# data-parallel format and presets.INTRA_LINKS call `nvlink2`).
INTRA_NODE_ALIASES = {"nvlink-v100": "nvlink2"}


def intra_preset(intra_node: str) -> str:
    """The ``presets.INTRA_LINKS`` name of a case's ``hardware.intra_node``."""
    return INTRA_NODE_ALIASES.get(intra_node, intra_node)


# A null network kind, NIC count or line rate (the parallel format allows each; a data-parallel
# case that leaves one out gets the same): the GPU servers' usual fabric, one NIC per GPU (DGX/HGX
# rail design), at the NIC rate of the GPU's DGX system (DGX A100: HDR 200 Gb/s; DGX H100: NDR
# 400 Gb/s; GB200 NVL72 compute trays: ConnectX-7 400 Gb/s per GPU; datasheets), else 200 Gb/s.
DEFAULT_INTER_KIND = "infiniband"
NICS_PER_GPU = 1
DEFAULT_GBIT_PER_NIC = {"A100": 200.0, "H100": 400.0, "GB200": 400.0}
OTHER_GBIT_PER_NIC = 200.0


def gpu_family(gpu: str) -> str | None:
    """The ``DEFAULT_GBIT_PER_NIC`` family of a GPU name (GB200, H100, A100), or None."""
    return next((f for f in ("GB200", "H100", "A100") if name_has_words(gpu, (f,))), None)


def default_gbit_per_nic(gpu: str) -> float:
    """Line rate of one NIC, Gbit/s, where the case does not state it (``DEFAULT_GBIT_PER_NIC``)."""
    return DEFAULT_GBIT_PER_NIC.get(gpu_family(gpu) or "", OTHER_GBIT_PER_NIC)


# The server link of a GPU whose case names none the formats know (null, "NVLink", "xGMI"): the
# link of the vendor's multi-GPU server for that GPU, by its datasheet (first match wins): DGX
# GB200 / NVL72 and DGX B200 (NVLink 5, 1.8 TB/s per GPU both ways: nvl72-gb200's 900 GB/s a
# direction); DGX H100 / H200 (NVLink 4 through NVSwitch); DGX A100 (NVLink 3 through NVSwitch);
# DGX-2 (16 V100 on NVSwitch) and DGX-1V (8 V100, hybrid cube-mesh); DGX-1 (P100). A PCIe board
# of those GPUs sits on its PCIe generation (H100 PCIe: Gen5; A100 PCIe: Gen4; V100 and P100
# PCIe, T4, P40, P4, K80, M40, M60: Gen3; their datasheets); any other GPU on PCIe Gen4 x16,
# the host link of the PCIe training cards since 2020 (A10, A30, A40, L4, L40S, RTX 3090 and
# 4090 datasheets).
PCIE_OF_GPU = (("H100", "pcie5"), ("H200", "pcie5"), ("A100", "pcie4"), ("V100", "pcie3"),
               ("P100", "pcie3"), ("T4", "pcie3"), ("P40", "pcie3"), ("P4", "pcie3"),
               ("K80", "pcie3"), ("M40", "pcie3"), ("M60", "pcie3"))
NVLINK_OF_GPU = (("GB200", "nvl72-gb200"), ("B200", "nvl72-gb200"), ("H100", "nvswitch-h100"),
                 ("H200", "nvswitch-h100"), ("A100", "nvswitch-a100"), ("P100", "nvlink1"))
DEFAULT_PCIE = "pcie4"
_PCIE_GEN = re.compile(r"pci[\s_-]*e?[\s_-]*(?:gen)?[\s_-]*([345])(?:\.0)?$")


def server_link_of(gpu: str, gpus_per_node) -> str:
    """The ``INTRA_LINKS`` name of the usual server of ``gpu`` (``NVLINK_OF_GPU``, ``PCIE_OF_GPU``)."""
    pcie_board = name_has_words(gpu, ("PCIe",)) or name_has_words(gpu, ("NVL",))
    if not pcie_board:
        if name_has_words(gpu, ("V100",)):
            many = isinstance(gpus_per_node, int | float) and gpus_per_node > 8
            return "nvswitch-v100" if many else "nvlink2"
        link = next((v for k, v in NVLINK_OF_GPU if name_has_words(gpu, (k,))), None)
        if link is not None:
            return link
    return pcie_of(gpu)


def listed_gpu(gpu: str) -> bool:
    """Whether ``gpu`` is one whose server and PCIe generation the tables above list."""
    return any(name_has_words(gpu, (k,)) for k, _ in (*PCIE_OF_GPU, *NVLINK_OF_GPU))


def pcie_of(gpu: str) -> str:
    """The PCIe generation (``INTRA_LINKS`` name) of a PCIe board of ``gpu`` (``PCIE_OF_GPU``)."""
    return next((v for k, v in PCIE_OF_GPU if name_has_words(gpu, (k,))), DEFAULT_PCIE)


def _gpu_of(case: dict) -> str:
    hw = case.get("hardware")
    gpu = hw.get("gpu") if isinstance(hw, dict) else None
    return gpu if isinstance(gpu, str) else ""


def read_intra_node(value, case: dict):
    """``hardware.intra_node``: a preset's name in any case ('NVSwitch-A100'), 'PCIe 4.0' as
    pcie4; null, left out or a word no preset has: the usual link of the case's GPU
    (``server_link_of``), flagged."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in INTRA_LINKS or word in INTRA_NODE_ALIASES:
            return word, None if word == value else f"hardware.intra_node {_as(value, word)}"
        if m := _PCIE_GEN.match(word):
            return f"pcie{m.group(1)}", f"hardware.intra_node {_as(value, f'pcie{m.group(1)}')}"
    elif value is not None and value is not MISSING:
        return value, None  # a number, a list: the format's check names it
    hw = case.get("hardware") if isinstance(case.get("hardware"), dict) else {}
    link = server_link_of(_gpu_of(case), hw.get("gpus_per_node"))
    what = "the link of the usual server of"
    if isinstance(value, str) and "pci" in value.lower():  # PCIe of an unstated generation
        link, what = pcie_of(_gpu_of(case)), "the PCIe generation of"
    said = ("not stated" if value is None or value is MISSING
            else f"'{excerpt(value)}' is not a link the format names")
    gpu = _gpu_of(case)
    if not listed_gpu(gpu):  # no server of it is known here: the generic default, said so
        return link, (f"hardware.intra_node {said}: {link} assumed, the default for a GPU "
                      f"whose server scalesim does not list ('{excerpt(gpu)}'; "
                      "case_words.server_link_of): give its link to predict its own")
    return link, (f"hardware.intra_node {said}: {link} assumed, {what} GPU "
                  f"'{excerpt(gpu)}' (case_words.server_link_of)")


_KIND_WORDS = {"infiniband": ("infiniband", "ib", "hdr", "ndr", "edr", "fdr", "xdr",
                              "infiniband-hdr", "infiniband-ndr", "infiniband-edr", "hdr-infiniband",
                              "ndr-infiniband", "edr-infiniband"),
               "roce": ("roce", "rocev2", "roce-v2", "roce2"),
               "ethernet": ("ethernet", "eth", "tcp", "tcp/ip", "gbe", "socket", "sockets")}


# an Ethernet written with its rate: '100GbE', '25 GbE', '10GE', '40-Gbit-E'
_RATED_ETHERNET = re.compile(r"(\d+(\.\d+)?-?)?g(b|bit)?-?e")


def read_inter_kind(value, case: dict, nullable: bool):
    """``hardware.inter_node.kind``: 'InfiniBand', 'IB', 'NDR' as infiniband, 'RoCEv2' as roce,
    'TCP', 'GbE', '100GbE', '10 Gigabit Ethernet' as ethernet; null or a word no preset has:
    ``DEFAULT_INTER_KIND`` (left null where the format allows it, ``nullable``: the predictor
    then defaults it), flagged."""
    if isinstance(value, str):
        word = re.sub(r"[\s_]+", "-", value.strip().lower())
        kind = next((k for k, words in _KIND_WORDS.items() if word in words), None)
        if kind is None and "roce" in word:
            kind = "roce"  # 'RoCE over 100GbE': RDMA, whatever the Ethernet under it
        elif kind is None and (_RATED_ETHERNET.fullmatch(word) or "ethernet" in word):
            kind = "ethernet"  # '100GbE', '25 GbE', '10-Gigabit Ethernet
        if kind is not None:
            return kind, None if kind == value else f"hardware.inter_node.kind {_as(value, kind)}"
    elif value is not None and value is not MISSING:
        return value, None
    if (value is None or value is MISSING) and nullable:
        return value if value is None else None, None
    said = ("not stated" if value is None or value is MISSING
            else f"'{excerpt(value)}' is not a kind the presets have")
    return DEFAULT_INTER_KIND, f"hardware.inter_node.kind {said}: {DEFAULT_INTER_KIND} assumed"


def _hw(case: dict) -> dict:
    hw = case.get("hardware")
    return hw if isinstance(hw, dict) else {}


def _points(case: dict) -> list:
    """The case's points where they are a list, else none (the format's check names them)."""
    points = case.get("points")
    return points if isinstance(points, list) else []


def read_nics(value, case: dict):
    """``hardware.inter_node.nics_per_node`` null or left out (data-parallel format): one NIC
    per GPU of the server, flagged."""
    if value is not None and value is not MISSING:
        return value, None
    gpus = _count(_hw(case).get("gpus_per_node"))
    if gpus is None:
        return value, None  # the format's check names the missing server size
    nics = gpus * NICS_PER_GPU
    return nics, f"hardware.inter_node.nics_per_node not stated: {nics} assumed (one NIC per GPU)"


def read_gbit(value, case: dict):
    """``hardware.inter_node.gbit_per_nic`` null or left out (data-parallel format): the NIC rate
    of the GPU's DGX system (``default_gbit_per_nic``), flagged."""
    if value is not None and value is not MISSING:
        return value, None
    gbit = default_gbit_per_nic(_gpu_of(case))
    return gbit, f"hardware.inter_node.gbit_per_nic not stated: {gbit:g} Gb/s assumed"


def read_dp_inter_node(value, case: dict):
    """``hardware.inter_node`` null or left out (data-parallel format) while a point spans more
    than one node: the network read as unstated (each of its fields then defaulted), flagged,
    as the parallel format's predictor does, so the multi-node points are predicted."""
    if value is not None and value is not MISSING:
        return value, None
    spans = any(isinstance(p, dict) and (_count(p.get("nodes")) or 0) > 1 for p in _points(case))
    if not spans:
        return value, None
    return {}, "hardware.inter_node null but a point spans several nodes: the network is read as unstated"


def read_gpus_per_node(value, case: dict):
    """``hardware.gpus_per_node`` null or left out (data-parallel format): the most devices a
    point puts on one node, flagged."""
    if value is not None and value is not MISSING:
        return value, None
    per = [_count(p.get("devices")) / _count(p.get("nodes")) for p in _points(case)
           if isinstance(p, dict) and _whole(p.get("devices")) and _whole(p.get("nodes"))]
    if not per:
        return value, None
    gpus = int(max(per))
    return gpus, (f"hardware.gpus_per_node not stated: {gpus} assumed (the most devices a point "
                  "puts on one node)")


# ---------------------------------------------------------------- enumerated words
def _as(value, name) -> str:
    return f"'{excerpt(str(value))}' read as the format's '{name}'"


def _norm(value: str) -> str:
    return re.sub(r"[\s_]+", "-", value.strip().lower())


def words_reader(field: str, names: dict[str, tuple[str, ...]], default=MISSING, why: str = "",
                 unknown_default: bool = False) -> Callable:
    """A reader of an enumerated field: each format name with the other ways to write it
    (case, spaces, underscores ignored); null or left out: ``default`` (flagged with ``why``)
    where one is given; a word none names: ``default`` too where ``unknown_default``, else as
    written (the format's check refuses the case, naming its choices)."""

    def read(value, case: dict):
        if isinstance(value, str):
            word = _norm(value)
            name = next((n for n, spelled in names.items() if word == n or word in spelled), None)
            if name is not None:
                return name, None if name == value else f"{field} {_as(value, name)}"
            if not unknown_default:
                return value, None
            said = f"'{excerpt(value)}' is not one of the format's"
        elif value is None or value is MISSING:
            if default is None:  # the format's own null: the predictor defaults and flags it
                return value, None
            said = "not stated"
        else:
            return value, None
        if default is MISSING:
            return value, None
        shown = "null" if default is None else default
        return default, f"{field} {said}: {shown} assumed{why}"

    return read


_MIXED16 = ("fp16", "float16", "half", "amp", "fp16-amp", "amp-fp16", "mixed-fp16", "fp16-mixed-precision",
            "mixed-precision-fp16", "fp16-amp-mixed")
_MIXED_BF16 = ("bf16", "bfloat16", "bf16-amp", "amp-bf16", "mixed-bf16", "bf16-mixed-precision",
               "mixed-precision-bf16")
_FP8 = ("fp8-mixed", "fp8-bf16", "fp8-hybrid", "float8", "fp8-e4m3", "e4m3", "fp8-delayed-scaling")
_FP32 = ("float32", "single", "fp32-full")

# Data-parallel format: fp8 (matmuls in fp8, everything else in bf16) changes the compute, which
# the anchor pins; what the exchange and the optimizer move is bf16-mixed's.
DP_PRECISION = words_reader(
    "workload.precision",
    {"fp32": _FP32, "tf32": ("tensorfloat32", "tensorfloat-32"),
     "fp16-mixed": _MIXED16 + ("mixed", "mixed-precision"),
     "bf16-mixed": _MIXED_BF16 + ("fp8",) + _FP8},
    default="fp16-mixed",
    why=" (the optimizer moves 16 bytes per parameter in every precision the format names, and "
        "the wire 4 unless grad_bytes_per_param says: the choice moves no figure)",
)


def read_dp_precision(value, case: dict):
    """``workload.precision`` (``DP_PRECISION``), saying why fp8 is read as bf16-mixed."""
    read, flag = DP_PRECISION(value, case)
    if flag and isinstance(value, str) and "8" in value and read == "bf16-mixed":
        flag += (" (fp8 matmuls change only the compute, which the anchor pins; the gradients and "
                 "optimizer state are bf16-mixed's)")
    return read, flag


# Parallel format: tf32 runs as fp32 does here; 'mixed' or 'amp' alone is the format's null.
PC_PRECISION = words_reader(
    "precision",
    {"fp32": _FP32 + ("tf32", "tensorfloat32"), "fp16-mixed": _MIXED16, "bf16-mixed": _MIXED_BF16,
     "fp8": _FP8},
)


_MIXED_ONLY = ("mixed", "mixed-precision", "amp", "automatic-mixed-precision")


def read_pc_precision(value, case: dict):
    """``precision`` of the parallel format: ``PC_PRECISION``; 'mixed', 'amp' alone: the
    format's null (16-bit mixed, flagged by the predictor)."""
    if isinstance(value, str) and _norm(value) in _MIXED_ONLY:
        return None, f"precision {_as(value, 'null')} (mixed precision, 16-bit not stated)"
    return PC_PRECISION(value, case)


COMM = words_reader(
    "comm",
    {"allreduce": ("all-reduce", "ring-allreduce", "ring-all-reduce", "ring", "nccl", "horovod", "ddp",
                   "collective", "collectives"),
     "parameter-server": ("ps", "parameter-servers", "parameterserver", "param-server", "kvstore",
                          "kv-store", "dist-sync")},
    default="allreduce", why=" (NCCL-style all-reduce, the exchange of the format's cases since 2018)",
)
UNIT = words_reader(
    "throughput_unit",
    {"images": ("image", "img", "imgs", "images/s", "img/s", "images-per-second", "images/sec"),
     "tokens": ("token", "tok", "tokens/s", "tok/s", "tokens-per-second", "tokens/sec"),
     "sequences": ("sequence", "seq", "seqs", "sequences/s", "seq/s", "sentences", "sentence"),
     "samples": ("sample", "samples/s", "examples", "example", "samples/sec", "samples-per-second")},
    default="samples", unknown_default=True,
    why=" (the unit is only printed: errors are ratios of throughputs in one unit)",
)
SCALING = words_reader(
    "workload.scaling", {"weak": (), "strong": ()}, default="weak",
    why=" (per-device batch fixed as devices grow: the benchmarks' usual setting)",
)
TRUST = words_reader("trust", {"high": (), "medium": ("med",), "low": ()}, default="low",
                     unknown_default=True, why=" (only reported, never used by the model)")
SCHEDULE = words_reader(
    "layout.schedule",
    {"none": ("no", "off", "no-pipeline"), "gpipe": ("fill-drain", "all-forward-all-backward"),
     "1f1b": ("pipedream-flush", "one-forward-one-backward", "1f1b-non-interleaved"),
     "interleaved": ("interleaved-1f1b", "1f1b-interleaved", "vpp", "virtual-pipeline", "interleave"),
     "zb": ("zero-bubble", "zb-h1", "zbh1", "zb-h2", "zbh2", "zero-bubble-pipeline")},
    default=None, unknown_default=True, why=" (the predictor's default schedule)",
)
RECOMPUTE = words_reader(
    "layout.recompute",
    {"none": ("no", "off", "false", "disabled"),
     "selective": ("sac", "selective-recompute", "partial", "attention"),
     "full": ("uniform", "block", "full-recompute", "activation-checkpointing", "checkpointing",
              "activation", "activations", "activation-recompute", "gradient-checkpointing", "true",
              "on")},
    default=None, unknown_default=True, why=" (the predictor's default)",
)


def read_recompute(value, case: dict):
    """``layout.recompute``: ``RECOMPUTE``, and true/false as full/none."""
    if isinstance(value, bool):
        name = "full" if value else "none"
        return name, f"layout.recompute {_as(str(value).lower(), name)}"
    return RECOMPUTE(value, case)


def notes_text(field: str, flag: bool) -> Callable:
    """A text field null or left out: '' (flagged where ``flag``: the field matters somewhere)."""

    def read(value, case: dict):
        if value is None or value is MISSING:
            return "", (f"{field} not stated: no source-keyed framework rule applies" if flag else None)
        return value, None

    return read


def read_model_name(field: str) -> Callable:
    def read(value, case: dict):
        if value is None or value is MISSING:
            return "(not stated)", f"{field} not stated"
        return value, None

    return read


def read_assumed(value, case: dict):
    """``hardware.assumed`` null (none) or one text (a list of it)."""
    if value is None:
        return [], None
    if isinstance(value, str):
        return [value], None
    return value, None


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([kmbgt])\s*$", re.IGNORECASE)


def read_count(field: str) -> Callable:
    """A count written with a size suffix ('340M', '3.6B', '1.3T') as that number, flagged."""

    def read(value, case: dict):
        if isinstance(value, str) and (m := _COUNT.match(value)):
            number = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
            return number, f"{field} '{excerpt(value)}' read as {number:.4g}"
        return value, None

    return read


_THOUSANDS = re.compile(r"^\s*\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*$")


_INT = TypeAdapter(int)


def _count(value) -> int | None:
    """A positive count as the formats' check reads it (pydantic's lax int: 16, 16.0 and '16'
    alike; never a bool), else None: the defaults below fill in from any count the case is
    read with, not from JSON integers alone."""
    if isinstance(value, bool):
        return None
    try:
        number = _INT.validate_python(value)
    except ValidationError:
        return None
    return number if number > 0 else None


def _whole(value) -> bool:
    return _count(value) is not None


def read_points(value, case: dict):
    """``points`` (data-parallel format): a throughput written with thousands separators
    ('12,345.6') as that number; a point's ``nodes`` null or left out: the fewest servers of
    ``hardware.gpus_per_node`` that hold its devices. Each flagged, naming the point."""
    if not isinstance(value, list):
        return value, None
    gpus = _hw(case).get("gpus_per_node")
    flags = []
    for i, point in enumerate(value):
        if not isinstance(point, dict):
            continue
        text = point.get("throughput")
        if isinstance(text, str) and _THOUSANDS.match(text):
            point["throughput"] = float(text.replace(",", ""))
            flags.append(f"points.{i}.throughput '{excerpt(text)}' read as {point['throughput']:g}")
        devices, per_node = _count(point.get("devices")), _count(gpus)
        if point.get("nodes") is None and devices and per_node:
            point["nodes"] = -(-devices // per_node)
            flags.append(f"points.{i}.nodes not stated: {point['nodes']} assumed (the fewest "
                         f"servers of {per_node} that hold {devices} devices)")
    return value, "; ".join(flags) or None


def read_whole_default(field: str, default: int, why: str) -> Callable:
    def read(value, case: dict):
        if value is None or value is MISSING:
            return default, f"{field} not stated: {default} assumed{why}"
        return value, None

    return read


def read_null_one(field: str) -> Callable:
    """A degree the parallel format defaults to 1 (cp, ep) written as null: 1, flagged."""

    def read(value, case: dict):
        if value is None:
            return 1, f"{field} null: 1 assumed (the run not split that way)"
        return value, None

    return read


_METRICS = {"tflops_per_gpu": ("tflops-per-gpu", "tflop/s-per-gpu", "tflops/gpu", "tflop-s-per-gpu"),
            "step_time_s": ("step-time", "step-time-s", "iteration-time-s", "step-s", "sec-per-step",
                            "seconds-per-step"),
            "tokens_per_s_per_gpu": ("tokens-per-s-per-gpu", "tokens-per-sec-per-gpu",
                                     "tokens/s/gpu", "tokens-per-gpu-per-s", "tps-per-gpu"),
            "samples_per_s": ("samples-per-s", "samples-per-sec", "samples/s", "sequences-per-s",
                              "sequences/s")}


def read_metric(value, case: dict):
    """``measured.metric``: the format's names in other spellings ('TFLOPs_per_GPU'); a step
    time in milliseconds (``step_time_ms``) as ``step_time_s`` with its value in seconds.
    Flagged. A metric of another meaning ('tokens_per_s': per GPU or the whole job?) is left
    for the format's check to refuse."""
    if not isinstance(value, str):
        return value, None
    word = _norm(value)
    if word in ("step-time-ms", "iteration-time-ms", "step-ms", "ms-per-step"):
        measured = case.get("measured")
        number = measured.get("value") if isinstance(measured, dict) else None
        if isinstance(number, str):  # '2890.5', as the format's number fields are read
            try:
                number = float(number.strip())
            except ValueError:
                return value, None  # the format's check names the value
        if isinstance(number, int | float) and not isinstance(number, bool):
            measured["value"] = number / 1000
            return "step_time_s", (f"measured.metric '{excerpt(value)}' read as step_time_s: "
                                   f"value {number:g} ms is {number / 1000:g} s")
        return value, None
    name = next((n for n, spelled in _METRICS.items() if word in (n, n.replace("_", "-"))
                 or word in spelled), None)
    if name is None or name == value:
        return value, None
    return name, f"measured.metric {_as(value, name)}"


def read_mfu(value, case: dict):
    """``measured.mfu`` (never used by the model) above 1 and at most 100: a percentage, read as
    its share; any other value outside 0-1: ignored. Flagged either way."""
    if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value <= 1:
        if 1 < value <= 100:
            return value / 100, f"measured.mfu {value:g} read as a percentage: {value / 100:g}"
        return None, f"measured.mfu {value:g} is not a share between 0 and 1: ignored (not used)"
    return value, None


def read_anchor(value, case: dict):
    if value is None or value is MISSING:
        return False, "anchor not stated: false assumed (not its group's anchor)"
    return value, None


# ---------------------------------------------------------------- the two formats' tables
def read_inter_kind_required(value, case: dict):
    return read_inter_kind(value, case, nullable=False)


def read_inter_kind_nullable(value, case: dict):
    return read_inter_kind(value, case, nullable=True)


DP_WORDS: dict[str, Callable] = {
    "trust": TRUST,
    "source": notes_text("source", True),
    "notes": notes_text("notes", False),
    "workload.model": read_model_name("workload.model"),
    "workload.params": read_count("workload.params"),
    "workload.precision": read_dp_precision,
    "workload.scaling": SCALING,
    "hardware.gpus_per_node": read_gpus_per_node,
    "hardware.intra_node": read_intra_node,
    "hardware.inter_node": read_dp_inter_node,
    "hardware.inter_node.kind": read_inter_kind_required,
    "hardware.inter_node.nics_per_node": read_nics,
    "hardware.inter_node.gbit_per_nic": read_gbit,
    "hardware.assumed": read_assumed,
    "comm": COMM,
    "throughput_unit": UNIT,
    "points": read_points,
}

PC_WORDS: dict[str, Callable] = {
    "anchor": read_anchor,
    "trust": TRUST,
    "source": notes_text("source", True),
    "notes": notes_text("notes", False),
    "model.name": read_model_name("model.name"),
    "model.params": read_count("model.params"),
    "precision": read_pc_precision,
    "hardware.intra_node": read_intra_node,
    "hardware.inter_node.kind": read_inter_kind_nullable,
    "layout.cp": read_null_one("layout.cp"),
    "layout.ep": read_null_one("layout.ep"),
    "layout.zero": read_whole_default("layout.zero", 0, " (no optimizer sharding)"),
    "layout.schedule": SCHEDULE,
    "layout.recompute": read_recompute,
    "measured.metric": read_metric,
    "measured.mfu": read_mfu,
}


def read_words(case, words: dict[str, Callable]) -> tuple[object, list[str]]:
    """``(case with its words read, flags)``: each of ``words``' dotted paths ('a.*.b' for every
    item of the list a) read by its reader; a path under an object the case does not have is
    left alone (the format's check names it). ``case`` itself is not changed."""
    if not isinstance(case, dict):
        return case, []
    out, flags = _copy(case), []
    for path, reader in words.items():
        _apply(out, out, path.split("."), reader, flags)
    return out, flags


def _copy(value):
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _apply(case: dict, node, keys: list[str], reader, flags: list[str]) -> None:
    key, rest = keys[0], keys[1:]
    if key == "*":
        for item in node if isinstance(node, list) else ():
            if rest:
                _apply(case, item, rest, reader, flags)
        return
    if not isinstance(node, dict):
        return
    if rest:
        if key in node:
            _apply(case, node[key], rest, reader, flags)
        return
    value, flag = reader(node.get(key, MISSING), case)
    if value is not MISSING:
        node[key] = value
    if flag:
        flags.append(flag)
