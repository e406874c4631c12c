"""Read ``nvidia-smi topo -m`` (server topology) and ``nvidia-smi --query-gpu ... --format=csv``
(per-device clocks, temperature, power, throttle reasons over time).

Topology (``nvidia-smi topo -m``; legend as nvidia-smi prints it): a matrix over GPUs and NICs
whose cells are ``X`` (self), ``NV#`` (a bonded set of # NVLinks), ``PIX`` (at most one PCIe
bridge), ``PXB`` (several PCIe bridges, no host bridge), ``PHB`` (a PCIe host bridge, typically
the CPU), ``NODE`` (between PCIe host bridges of one NUMA node), ``SYS`` (across the SMP
interconnect between NUMA nodes, QPI/UPI); older drivers print ``SOC`` for ``SYS`` and ``PSB``
for ``PXB``. Then ``CPU Affinity``, ``NUMA Affinity`` (and ``GPU NUMA ID``) per GPU and a
``NIC Legend`` (``NIC0: mlx5_0``). Closeness, best first: NV# (more links first), PIX, PXB, PHB,
NODE, SYS.

Device health (``nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.max.sm,
temperature.gpu,power.draw,utilization.gpu,clocks_throttle_reasons.active --format=csv -l 1``):
one row per device per second. ``clocks_throttle_reasons.active`` (newer drivers:
``clocks_event_reasons.active``) is NVML's bit mask (nvml.h, ``nvmlClocksThrottleReasons``):
0x1 idle, 0x2 application clocks setting, 0x4 software power cap, 0x8 hardware slowdown,
0x10 sync boost, 0x20 software thermal slowdown, 0x40 hardware thermal slowdown, 0x80 hardware
power brake, 0x100 display clock setting.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

import numpy as np

from scalesim.bounds import bound
from scalesim.errors import ScalesimError, excerpt
from scalesim.figures import count
from scalesim.jsonio import read_text
from scalesim.model.stragglers import peer_margin
from scalesim.schemas import Topology, TopologyNic, nvlink_count_problem

# Colour codes (newer nvidia-smi underlines the header: ESC[4m ... ESC[0m); a paste in an issue
# or a log often loses the ESC byte and keeps '[4mGPU0' (sgl-project/sglang#26039): both go
_ANSI = re.compile(r"\x1b?\[[0-9;]*m")
_LABEL_TEXT = r"GPU\d+|NIC\d+|[a-z]+\d+_\d+"  # mlx5_0; alternatives disjoint: no backtracking blow-up
# A NIC column named by its RDMA device, as nvidia-smi printed NICs before its NIC Legend
# ('mlx4_0' in kubernetes/kubernetes#53497; the kernel's names 'mlx5_bond_0', 'bnxt_re0',
# 'irdma0'): a header label too (a lower-case start, a digit at the end; possessive: linear)
_RDMA_DEVICE = r"[a-z][a-z0-9_]*+(?<=[0-9])"
_ONE_LABEL = re.compile(rf"^(?:{_LABEL_TEXT})$")  # what _unglue splits glued labels into
_LABEL = re.compile(rf"^(?:{_LABEL_TEXT}|{_RDMA_DEVICE})$")
_NV = re.compile(r"^NV(\d+)$")
# A matrix pasted where its tabs were lost (vllm-project/vllm#13855: header `NIC8NIC9`, cells
# `NODENODE`, `NODEPXB`) glues neighbours. Labels and link codes split back one way only: every
# label and code starts with a letter and ends where the next one's letter starts (an NV#'s
# digits run to the next letter), and each code is fixed by its first two letters (PIX, PXB, PHB,
# PSB; NODE, NVB, NV#; SYS, SOC; X).
_CODE_TEXT = r"X|NV\d+|NVB|PIX|PXB|PHB|PSB|NODE|SYS|SOC"
_GLUED_LABELS = re.compile(rf"^(?:{_LABEL_TEXT})+$")
_GLUED_CODES = re.compile(rf"^(?:{_CODE_TEXT})+$")
_ROW_START = re.compile(rf"^({_LABEL_TEXT})((?:{_CODE_TEXT})+)$")  # `NIC0PXB`: label and cell
_CODE_START = re.compile(rf"^(?:{_CODE_TEXT})")
# CPU and NUMA affinity as nvidia-smi prints them: comma-separated ranges ('0-23,96-119')
_ID_LIST = re.compile(r"^[0-9]{1,9}(?:-[0-9]{1,9})?(?:,[0-9]{1,9}(?:-[0-9]{1,9})?)*$")
NUMA_NODE_MAX = int(bound("rank").high)  # Topology.numa_affinity's bound (schemas.py)
RETYPE = ("the paste lost its tabs (labels or cells glued together); save the output itself: "
          "nvidia-smi topo -m > topo.txt")
_PCIE_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
_ALIASES = {"SOC": "SYS", "PSB": "PXB"}
PCIE_MEANING = {
    "PIX": "at most one PCIe bridge (same PCIe switch)",
    "PXB": "several PCIe bridges, no host bridge",
    "PHB": "through a PCIe host bridge (the CPU)",
    "NODE": "between PCIe host bridges of one NUMA node",
    "SYS": "across the CPU sockets' interconnect (QPI/UPI)",
}


# NV18 is 18 bonded links of either generation: NVLink4 on H100/H200/GH200 (25 GB/s per link and
# direction: 450 GB/s, nvswitch-h100) or NVLink5 on B200/GB200 (50 GB/s: 900 GB/s, nvl72-gb200);
# topo -m names no GPU, so no preset is suggested (NVIDIA H100 and GB200 NVL72 datasheets)
NV18_WORDS = ("; NVLink4 on H100/H200 (450 GB/s per GPU: preset nvswitch-h100) or NVLink5 "
              "on B200/GB200 (900 GB/s: nvl72-gb200 for an NVL72): topo -m does not name the GPU")
# NV6 between every pair: a DGX-2 (16 V100, 6 NVLink2 links each, all to the NVSwitches; or a
# slice of 8 or fewer of them), but on 4 GPUs also H100's full mesh (18 NVLink4 links, 6 to
# each of 3 peers: 150 GB/s per pair and direction, NVIDIA/nccl#1617 "4 H100 with NV6"), which
# no preset describes; the two differ 3x in bandwidth, so 4 or fewer GPUs suggest nothing
NV6_MESH_WORDS = ("; on 4 GPUs either a slice of a DGX-2 (V100 on NVSwitch, preset "
                  "nvswitch-v100) or H100's NVLink4 full mesh (6 of its 18 links to each peer, "
                  "150 GB/s per pair and direction), 3x apart: topo -m does not name the GPU")
# The PCIe generation is not in topo -m. Drivers that print the old codes SOC/PSB predate every
# PCIe 4.0 GPU (A100, 2020): by driver 440 (2019) SYS is printed (a DGX-1V's output in
# Oneflow-Inc DLPerf's WideDeepLearning README), and SOC appears in 2017 outputs (gist
# ashwin/e139748b); their servers are PCIe 3.0
PCIE_GENERATION_WORDS = ("; topo -m does not show the PCIe generation: nvidia-smi "
                         "--query-gpu=pcie.link.gen.max --format=csv does")


def closeness(code: str) -> int:
    """Sort key, closest first: NV# (more links first), then PIX, PXB, PHB, NODE, SYS."""
    m = _NV.match(code)
    if m:
        return -int(m.group(1))
    return _PCIE_ORDER.index(code) + 1 if code in _PCIE_ORDER else len(_PCIE_ORDER) + 1


def _code(cell: str, where: str, pair: str = "") -> str:
    """A link cell as its code (SOC, PSB: their names now); bad cells: one-line error naming
    ``where`` (source and line) and, for an NV# no GPU has, the ``pair`` ('GPU0-GPU1')."""
    cell = _ALIASES.get(cell, cell)
    nv = _NV.match(cell)
    if problem := nvlink_count_problem(cell):
        raise ScalesimError(f"{where}{pair and ', ' + pair}: {problem}: an edited matrix?; save "
                            "the output itself: nvidia-smi topo -m > topo.txt")
    if cell == "X" or nv or cell in _PCIE_ORDER or cell == "NVB":
        return cell
    if _CODE_START.match(cell):  # 'NV180-55,112-167': a code glued to what follows it
        raise ScalesimError(f"{where}: '{excerpt(cell, 24)}' starts with a link code but goes on: "
                            f"{RETYPE}")
    raise ScalesimError(f"{where}: '{excerpt(cell)}' is not a topo -m link code (X, NV#, PIX, PXB, PHB, "
                        "NODE, SYS)")


def _unglue(tokens: list[str], first_is_label: bool) -> list[str]:
    """Tokens with glued labels (`NIC8NIC9`) or glued link codes (`NODENODE`, and a row's label
    glued to its first cell, `NIC0PXB`) split apart; any other token as it is."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        start = _ROW_START.match(token) if i == 0 and first_is_label else None
        if start:
            out += [start.group(1), *re.findall(_CODE_TEXT, start.group(2))]
        elif _GLUED_LABELS.match(token) and not _ONE_LABEL.match(token):
            out += re.findall(_LABEL_TEXT, token)
        elif _GLUED_CODES.match(token):
            out += re.findall(_CODE_TEXT, token)
        else:
            out.append(token)
    return out


def id_ranges(text: str) -> list[tuple[int, int]] | None:
    """'0,3-9,11-17' as nvidia-smi prints a CPU or NUMA affinity -> [(0, 0), (3, 9), (11, 17)];
    None for anything else ('N/A', an empty cell)."""
    if not _ID_LIST.match(text):
        return None
    ranges = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        ranges.append((int(lo), int(hi or lo)))
    return ranges


def cpu_numa_node(affinity: str, gpu_memory_from: int | None) -> int | None:
    """The one CPU NUMA node of a GPU's ``NUMA Affinity`` list, None where it names none or
    several. On Grace systems (GH200, GB200) the list also names GPU-memory nodes, which have no
    CPUs and are numbered after the CPUs' nodes from the lowest ``GPU NUMA ID``
    (``gpu_memory_from``): a GB200 tray's ``0,3-9,11-17`` with GPU NUMA IDs 2, 10, 18, 26 is node
    0, its nodes 2-33 are GPU memory (docs/calibration.md, topology)."""
    ranges = id_ranges(affinity)
    if ranges is None:
        return None
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ranges[0][0]  # one node listed: the GPU's node, whatever the numbering
    limit = gpu_memory_from if gpu_memory_from is not None else float("inf")
    cpu = [(lo, min(hi, limit - 1)) for lo, hi in ranges if lo < limit]
    return cpu[0][0] if len(cpu) == 1 and cpu[0][0] == cpu[0][1] else None


def _summary(gpus: list[str], matrix: list[list[str]],
             old_codes: bool = False) -> tuple[str, str | None]:
    """The intra-server link kind in words, and the preset it suggests (None: unclear).
    ``old_codes``: the output uses SOC/PSB, a driver's older than PCIe 4.0 GPUs (so PCIe 3.0)."""
    pairs = [matrix[i][j] for i in range(len(gpus)) for j in range(len(gpus)) if i < j]
    if not pairs:
        return "one GPU: no intra-server link", None
    nv = [p for p in pairs if _NV.match(p)]
    worst = max(pairs, key=closeness)
    if len(nv) == len(pairs):
        counts = sorted({int(_NV.match(p).group(1)) for p in nv})
        if len(counts) == 1:
            mesh_of_4 = counts[0] == 6 and len(gpus) <= 4
            preset = None if mesh_of_4 else {12: "nvswitch-a100", 6: "nvswitch-v100"}.get(counts[0])
            words = {18: NV18_WORDS, 6: NV6_MESH_WORDS if mesh_of_4 else ""}.get(counts[0], "")
            return (f"NVLink between every pair (NV{counts[0]}: {counts[0]} bonded links; "
                    f"NVSwitch or a full mesh){words}", preset)
        return f"NVLink between every pair ({', '.join(f'NV{c}' for c in counts)})", None
    if nv:
        # the DGX-1 hybrid cube mesh: P100's 4 NVLinks give every neighbour one link (NV1 only:
        # nvlink1); V100's 6 double some of them (NV1 and NV2: nvlink2)
        links = {int(_NV.match(p).group(1)) for p in nv}
        cube_mesh = len(gpus) == 8 and links <= {1, 2}
        preset = ("nvlink1" if links == {1} else "nvlink2") if cube_mesh else None
        return (f"partial NVLink: {len(nv)} of {len(pairs)} GPU pairs on NVLink, the others "
                f"over PCIe (worst {worst}: {PCIE_MEANING.get(worst, worst)}); a ring over all "
                "GPUs runs at its slowest hop", preset)
    generation = "pcie3" if old_codes else "pcie4"
    return (f"PCIe only (worst pair {worst}: {PCIE_MEANING.get(worst, worst)}; PCIe "
            f"{'3.0: a driver older than PCIe 4.0 GPUs' if old_codes else '4.0 assumed'}"
            f"{PCIE_GENERATION_WORDS})", generation)


def parse_topo_text(text: str, source: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` output into a Topology; bad input: one-line error."""
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines)
                      if "GPU0" in _unglue(line.split(), first_is_label=False)), None)
    if header_at is None:
        raise ScalesimError(f"{source}: not nvidia-smi topo -m output (no 'GPU0 GPU1 ...' header "
                            "row); run: nvidia-smi topo -m > topo.txt")
    header = _unglue(lines[header_at].split(), first_is_label=False)
    labels = []
    for token in header:
        if not _LABEL.match(token):
            break
        labels.append(token)
    rows: dict[str, list[str]] = {}
    tails: dict[str, list[str]] = {}
    row_line: dict[str, int] = {}
    for number, line in enumerate(lines[header_at + 1:], header_at + 2):
        tokens = _unglue(line.split(), first_is_label=True)
        if not tokens or tokens[0] not in labels:
            if tokens and tokens[0] == "Legend:":
                break
            continue
        if tokens[0] in rows:  # the last row was read over the first, in silence
            raise ScalesimError(f"{source} line {number}: a second row for {tokens[0]} (the "
                                f"first on line {row_line[tokens[0]]}): not one topo -m "
                                "matrix (two joined?); save the output itself: nvidia-smi "
                                "topo -m > topo.txt")
        cells = tokens[1:1 + len(labels)]
        if len(cells) < len(labels):
            raise ScalesimError(f"{source} line {number}: {tokens[0]} has {len(cells)} of "
                                f"{len(labels)} cells: the matrix is cut short (truncated?)")
        rows[tokens[0]] = [_code(c, f"{source} line {number}", f"{tokens[0]}-{label}")
                           for c, label in zip(cells, labels, strict=True)]
        tails[tokens[0]] = tokens[1 + len(labels):]
        row_line[tokens[0]] = number
        extra = tails[tokens[0]][:1]
        if extra and _GLUED_CODES.match(extra[0]):  # never a link code read as CPU affinity
            raise ScalesimError(f"{source} line {number}: {tokens[0]} has more link cells than "
                                f"the header's {len(labels)} columns ('{excerpt(extra[0], 24)}' "
                                f"where the CPU affinity belongs): {RETYPE}")
    gpus = [label for label in labels if label.startswith("GPU")]
    if not gpus:
        raise ScalesimError(f"{source} line {header_at + 1}: the header row does not start with "
                            f"GPU columns ('{excerpt(header[0], 24)}' first): not nvidia-smi topo -m "
                            "output")
    missing = [g for g in gpus if g not in rows]
    if missing:
        raise ScalesimError(f"{source}: no row for {missing[0]}: the matrix is cut short "
                            "(truncated?)")
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", "\n".join(lines), re.M))
    gi = [labels.index(g) for g in gpus]
    matrix = [[rows[g][j] for j in gi] for g in gpus]
    for i, g in enumerate(gpus):
        if matrix[i][i] != "X":
            raise ScalesimError(f"{source}: {g}'s own cell is '{matrix[i][i]}', not X: not a "
                                "topo -m matrix")
    for i, j in itertools.combinations(range(len(gpus)), 2):
        if matrix[i][j] != matrix[j][i]:  # only the upper half was read, the other ignored
            raise ScalesimError(
                f"{source}: {gpus[i]}-{gpus[j]} is '{matrix[i][j]}' on {gpus[i]}'s row "
                f"(line {row_line[gpus[i]]}) but '{matrix[j][i]}' on {gpus[j]}'s (line "
                f"{row_line[gpus[j]]}): topo -m prints one link per pair both ways (an edited "
                f"matrix?); save the output itself: nvidia-smi topo -m > topo.txt")
    nics = []
    for label in labels:
        if label.startswith("GPU"):
            continue
        col = labels.index(label)
        to_gpus = [rows[g][col] for g in gpus]
        best = min(to_gpus, key=closeness) if to_gpus else "SYS"
        nics.append(TopologyNic(
            name=label, device=legend.get(label, label if not label.startswith("NIC") else None),
            gpu_links=to_gpus, nearest_gpus=[i for i, c in enumerate(to_gpus) if c == best],
            nearest_link=best))
    cpu_affinity = []
    for g in gpus:
        tail = tails[g]
        if tail and tail[0] != "N/A" and id_ranges(tail[0]) is None:
            raise ScalesimError(f"{source} line {row_line[g]}: {g}'s CPU affinity "
                                f"'{excerpt(tail[0], 24)}' is not a CPU list (such as 0-23,96-119): "
                                f"{RETYPE}")
        cpu_affinity.append(tail[0] if tail else "")
    # GPU NUMA ID (Grace systems): the node of each GPU's own memory; 'N/A' elsewhere
    gpu_numa_ids = [r[0][0] for g in gpus if len(tails[g]) > 2
                    for r in [id_ranges(tails[g][2])] if r and r[0][0] == r[-1][1]]
    numa = [cpu_numa_node(tails[g][1], min(gpu_numa_ids, default=None))
            if len(tails[g]) > 1 else None for g in gpus]
    for g, node in zip(gpus, numa, strict=True):
        if node is not None and node > NUMA_NODE_MAX:
            raise ScalesimError(
                f"{source} line {row_line[g]}: {g}'s NUMA Affinity "
                f"'{excerpt(tails[g][1], 24)}' names NUMA node {node:,}, above the "
                f"{NUMA_NODE_MAX:,} a node can be: the column holds the NUMA node(s) of the "
                "GPU's CPUs (such as 0, or 0,3-9 on Grace); save the output itself: "
                "nvidia-smi topo -m > topo.txt")
    old_codes = re.search("|".join(_ALIASES), "\n".join(lines[header_at:])) is not None
    kind, preset = _summary(gpus, matrix, old_codes)
    return Topology(gpus=gpus, links=matrix, nics=nics, cpu_affinity=cpu_affinity,
                    numa_affinity=numa, intra_kind=kind, suggested_intra_preset=preset,
                    source=source)


def parse_topo_file(path: str | os.PathLike[str]) -> Topology:
    return parse_topo_text(read_text(path), str(path))


def topology_here(timeout_s: float = 20.0) -> tuple[Topology | None, str]:
    """Run ``nvidia-smi topo -m`` on this machine: (topology, what happened in words)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found: the server topology (NVLink/PCIe, NICs) was not recorded"
    try:
        done = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi topo -m failed ({exc}): topology not recorded"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        return None, (f"nvidia-smi topo -m exited {done.returncode} "
                      f"({why[0] if why else 'no output'}): topology not recorded")
    try:
        topo = parse_topo_text(done.stdout, "nvidia-smi topo -m")
    except ScalesimError as exc:
        return None, f"{exc}: topology not recorded"
    return topo, f"topology recorded from nvidia-smi topo -m: {topo.intra_kind}"


def describe_topology(topo: Topology) -> list[str]:
    """Lines for ``scalesim topo``: GPUs, the link kind per pair, NICs and their affinity."""
    out = [f"{count(len(topo.gpus), 'GPU')}; intra-server link: {topo.intra_kind}"]
    if topo.suggested_intra_preset:
        out.append(f"nearest intra-link preset: {topo.suggested_intra_preset} (scalesim "
                   "presets; calibrate --from-topo takes its figures where the intra-server "
                   "link is not measured)")
    width = max([5, *(len(c) + 1 for row in topo.links for c in row)])
    out.append("")
    out.append(" " * 6 + "".join(f"{g:>{width}}" for g in topo.gpus) + "  CPU affinity  NUMA")
    for g, row, cpu, numa in zip(topo.gpus, topo.links, topo.cpu_affinity, topo.numa_affinity,
                                 strict=True):
        out.append(f"{g:<6}" + "".join(f"{c:>{width}}" for c in row)
                   + f"  {cpu:<12}  {'' if numa is None else numa}")
    sockets: dict[int, list[str]] = {}
    for g, numa in zip(topo.gpus, topo.numa_affinity, strict=False):
        if numa is not None:
            sockets.setdefault(numa, []).append(g)
    if len(sockets) > 1:
        out.append("GPUs per NUMA node: " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in sorted(sockets.items())))
    if topo.nics:
        out.append("")
        out.append("NICs (closest GPUs):")
        for nic in topo.nics:
            near = ", ".join(f"GPU{i}" for i in nic.nearest_gpus)
            named = nic.device is not None and nic.device != nic.name
            out.append(f"  {nic.name}{f' ({nic.device})' if named else ''}: "
                       f"{nic.nearest_link} to {near} ({PCIE_MEANING.get(nic.nearest_link, '')})")
        shared = [n for n in topo.nics if len(n.nearest_gpus) > 1 and n.nearest_link in
                  ("PIX", "PXB")]
        if shared:
            out.append(f"  {len(shared)} NIC(s) sit behind the same PCIe switch(es) as several "
                       "GPUs (PIX/PXB, no host bridge between them)")
    else:
        out.append("no NICs listed (topo -m shows RDMA NICs only)")
    return out


# ---------------------------------------------------------------------------------------------
# Device health: the --query-gpu CSV

THROTTLE_BITS = {
    0x1: "idle", 0x2: "application clocks setting", 0x4: "software power cap",
    0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown", 0x80: "hardware power brake",
    0x100: "display clock setting",
}
# A device is slow when its busy SM clock is an outlier below its peers' (slow_clock_limit_MHz).
# NVML's utilization.gpu is the share of the sample period in which a kernel ran; a sample with a
# kernel running for at least half of it reads the clock under load (an idle GPU drops its clocks,
# throttle reason 0x1 "idle"), so such samples count as busy.
BUSY_UTILIZATION = 50.0  # %
QUERY = ("timestamp,index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,"
         "clocks_throttle_reasons.active")
_FIELDS = {
    "index": ("index",),
    "clock": ("clocks.current.sm", "clocks.sm"),
    "max_clock": ("clocks.max.sm", "clocks.max.sm_clock"),
    "temp": ("temperature.gpu",),
    "power": ("power.draw", "power.draw.instant", "power.draw.average"),
    "util": ("utilization.gpu",),
    "reasons": ("clocks_throttle_reasons.active", "clocks_event_reasons.active",
                "clocks_throttle_reasons.active", "clocks_event_reasons.active"),
}


@dataclass
class DeviceHealth:
    """One device over the sampled period (medians over busy samples; MHz, degC, W)."""

    index: int
    samples: int
    busy_samples: int
    sm_clock_MHz: float
    max_sm_clock_MHz: float | None
    temperature_C: float | None
    max_temperature_C: float | None
    power_W: float | None
    utilization_pct: float | None
    reasons: dict[str, float] = field(default_factory=dict)  # reason -> share of busy samples


@dataclass
class SmiReport:
    source: str
    devices: list[DeviceHealth]
    slow: list[int]
    findings: list[str]
    notes: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


# A reading: a number (exponent included: '1e308' is that number, not 1), then nothing or a
# unit after a space ('1410 MHz', '300.50 W', '100 %'); anything else ('[N/A]') is no reading.
_READING = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?:\s+(\S+))?$")
# the unit nvidia-smi writes after each reading (none under --format=csv,nounits)
_UNITS = {"clock": "MHz", "max_clock": "MHz", "power": "W", "util": "%"}


MAX_READING = 1e9  # no clock (MHz), temperature, power (W), share or index comes near


def _reading(cell: str, source: str, line: int, whole: bool = False,
             unit: str | None = None) -> float | None:
    """The number in ``cell`` (None where there is none: '[N/A]'), refusing a value no sensor
    gives: negative, over ``MAX_READING`` (10^400 reads as infinity), or for a device index
    (``whole``) a fraction; and a unit other than the ``unit`` nvidia-smi writes ('300 kW' was
    read as 300 W)."""
    m = _READING.match(cell.strip())
    if m is None:
        return None
    value, written = float(m.group(1)), m.group(2)
    if unit is not None and written is not None and written != unit:
        raise ScalesimError(f"{source} line {line}: '{excerpt(cell, 24)}' is in {written}, "
                            f"where nvidia-smi writes {unit}: the log is edited or another "
                            "tool's; record it with nvidia-smi --query-gpu=... --format=csv")
    if not 0 <= value <= MAX_READING or (whole and value != int(value)):
        what = "a device index (a whole number from 0)" if whole else (
            f"a plausible reading (0 to {MAX_READING:g})")
        raise ScalesimError(f"{source} line {line}: '{excerpt(cell, 24)}' is not {what}")
    return value


def _column(names: list[str], key: str) -> int | None:
    for alias in _FIELDS[key]:
        for i, n in enumerate(names):
            if n.split("[")[0].strip().lower() == alias:
                return i
    return None


def parse_smi_csv_text(text: str, source: str) -> SmiReport:
    """Per-device health from the --query-gpu CSV (see the module docstring)."""
    reader = csv.reader(io.StringIO(text))
    try:
        return _parse_rows(reader, source)
    except csv.Error as exc:  # a cell over csv's 128 KiB limit, a NUL
        raise ScalesimError(f"{source} line {reader.line_num + 1}: not an nvidia-smi CSV row "
                            f"({exc})") from None


def _parse_rows(reader, source: str) -> SmiReport:
    header = None
    samples: dict[int, list[tuple]] = {}
    listed: set[int] = set()  # every device index a row names
    for number, row in enumerate(reader, 1):
        if not row or not "".join(row).strip():
            continue
        cells = [c.strip() for c in row]
        if any(c.split("[")[0].strip().lower() == "index" for c in cells):
            header = cells  # nvidia-smi -l repeats nothing, but concatenated logs may
            continue
        if header is None:
            raise ScalesimError(f"{source}: not an nvidia-smi --query-gpu CSV (no header with "
                                f"'index'); record it with: nvidia-smi --query-gpu={QUERY} "
                                "--format=csv -l 1")
        col = {k: _column(header, k) for k in _FIELDS}
        if col["index"] is None or col["clock"] is None:
            raise ScalesimError(f"{source}: the CSV has no index or clocks.sm column; record it "
                                f"with --query-gpu={QUERY}")
        if len(cells) < len(header):
            raise ScalesimError(f"{source} line {number}: {len(cells)} of {len(header)} fields "
                                "(truncated?)")
        index = _reading(cells[col["index"]], source, number, whole=True)
        clock = _reading(cells[col["clock"]], source, number, unit=_UNITS["clock"])
        if index is not None:
            listed.add(int(index))
        if index is None or clock is None:
            continue  # [N/A] or [Not Supported]
        values = [None if col[k] is None
                  else _reading(cells[col[k]], source, number, unit=_UNITS.get(k))
                  for k in ("max_clock", "temp", "power", "util")]
        if problem := _impossible(clock, values[0], values[1], values[3]):
            raise ScalesimError(f"{source} line {number}: {problem}; nvidia-smi writes no such "
                                "reading: the log is corrupt or edited")
        reasons = None
        if col["reasons"] is not None:
            text_mask = cells[col["reasons"]]
            try:
                reasons = int(text_mask, 16)
            except ValueError:
                if text_mask.lower().startswith("0x"):
                    raise ScalesimError(f"{source} line {number}: throttle reasons "
                                        f"'{excerpt(text_mask, 20)}' is not a hex mask; "
                                        "nvidia-smi writes 0x0000000000000004") from None
                reasons = None
            if reasons is not None and not 0 <= reasons < 2**64:  # a 64-bit mask: '-1' is none
                reasons = None
        samples.setdefault(int(index), []).append((clock, *values, reasons))
    if header is None:
        raise ScalesimError(f"{source}: empty; record it with: nvidia-smi --query-gpu={QUERY} "
                            "--format=csv -l 1")
    if not samples:
        raise ScalesimError(f"{source}: no rows with an SM clock (all [N/A]?)")
    report = analyse(samples, source)
    if unread := sorted(listed - set(samples)):
        report.notes.append(f"device{'s' if len(unread) > 1 else ''} "
                            f"{', '.join(map(str, unread))} in the log with no SM clock reading "
                            "in any row ([N/A], or not a number): left out of the comparison")
    return report


# the highest temperature a GPU reports before it shuts down is about 90-100 C (datasheets'
# slowdown/shutdown thresholds); 150 C is beyond every one
MAX_TEMPERATURE_C = 150.0


def _impossible(clock_MHz: float, max_clock_MHz: float | None, temp_C: float | None,
                util_pct: float | None = None) -> str:
    """What no nvidia-smi row holds: a zero maximum clock, a clock 10 % above its maximum, a
    temperature past any GPU's shutdown, a utilization above 100 %; '' for a plausible row."""
    if util_pct is not None and util_pct > 100:
        return f"utilization.gpu {util_pct:g} % (a share of the sample period: at most 100)"
    if max_clock_MHz is not None and max_clock_MHz <= 0:
        return f"clocks.max.sm {max_clock_MHz:g} MHz"
    if max_clock_MHz is not None and clock_MHz > 1.1 * max_clock_MHz:
        return f"SM clock {clock_MHz:g} MHz above its maximum {max_clock_MHz:g} MHz"
    if temp_C is not None and temp_C > MAX_TEMPERATURE_C:
        return f"temperature {temp_C:g} C"
    return ""


def analyse(samples: dict[int, list[tuple]], source: str) -> SmiReport:
    """Medians per device over busy samples and the slow-device verdict with its evidence."""
    devices = []
    notes = []
    for index in sorted(samples):
        rows = np.array([[np.nan if v is None else v for v in r[:5]] for r in samples[index]],
                        dtype=float)
        reasons = [r[5] for r in samples[index]]
        util = rows[:, 4]
        busy = util >= BUSY_UTILIZATION if np.any(np.isfinite(util)) else np.ones(len(rows), bool)
        if not busy.any():
            busy = np.ones(len(rows), bool)
            notes.append(f"device {index}: never {BUSY_UTILIZATION:.0f}% busy; all samples used")
        picked = rows[busy]

        def med(col, picked=picked):
            vals = picked[:, col][np.isfinite(picked[:, col])]
            return float(np.median(vals)) if vals.size else None

        shares = {}
        masks = [m for m, b in zip(reasons, busy, strict=True) if b and m is not None]
        for bit, name in THROTTLE_BITS.items():
            if bit in (0x1, 0x100):
                continue
            share = sum(1 for m in masks if m & bit) / len(masks) if masks else 0.0
            if share > 0:
                shares[name] = share
        temps = picked[:, 2][np.isfinite(picked[:, 2])]
        devices.append(DeviceHealth(
            index=index, samples=len(rows), busy_samples=int(busy.sum()),
            sm_clock_MHz=med(0), max_sm_clock_MHz=med(1), temperature_C=med(2),
            max_temperature_C=float(temps.max()) if temps.size else None, power_W=med(3),
            utilization_pct=med(4), reasons=shares))
    slow, findings = [], []
    if len(devices) >= 2:
        clocks = np.array([d.sm_clock_MHz for d in devices])
        for i, d in enumerate(devices):
            others = np.delete(clocks, i)
            if d.sm_clock_MHz < slow_clock_limit_MHz(others):
                slow.append(d.index)
                findings.append(slow_device_sentence(d, float(np.median(others))))
    elif devices:  # no peers: against its own maximum clock, with the published spread only
        d = devices[0]
        if d.max_sm_clock_MHz and d.sm_clock_MHz < slow_clock_limit_MHz([d.max_sm_clock_MHz]):
            findings.append(slow_device_sentence(d, None))
    for d in devices:
        if d.index not in slow and d.reasons:
            worst = max(d.reasons, key=d.reasons.get)
            if worst not in ("sync boost", "application clocks setting"):
                notes.append(f"device {d.index}: {worst} in {d.reasons[worst]:.0%} of busy samples")
    return SmiReport(source, devices, slow, findings, notes)


def slow_clock_limit_MHz(peers_MHz) -> float:
    """The SM clock (MHz) below which a device is slow against ``peers_MHz`` (the other devices'
    busy clocks): ``median − margin`` of ``scalesim.model.stragglers.peer_margin`` (3.5 robust
    standard deviations, at least 4.6 %; docs/model.md §19)."""
    median, margin = peer_margin(peers_MHz)
    return median - margin


def slow_device_sentence(d: DeviceHealth, others_MHz: float | None) -> str:
    """'device 5 runs at 1,110 MHz of 1,410 while the others hold 1,410; it throttles thermally
    at 87 °C (hardware thermal slowdown in 96% of busy samples)'."""
    of = f" of {d.max_sm_clock_MHz:,.0f}" if d.max_sm_clock_MHz else ""
    text = f"device {d.index} runs at {d.sm_clock_MHz:,.0f} MHz{of}"
    if others_MHz is not None:
        text += f" while the others hold {others_MHz:,.0f}"
    thermal = {k: v for k, v in d.reasons.items() if "thermal" in k}
    power = {k: v for k, v in d.reasons.items() if "power" in k}
    hot = f" at {d.max_temperature_C:.0f} °C" if d.max_temperature_C is not None else ""
    if thermal:
        name = max(thermal, key=thermal.get)
        text += f"; it throttles thermally{hot} ({name} in {thermal[name]:.0%} of busy samples)"
    elif power:
        name = max(power, key=power.get)
        watts = f" at {d.power_W:.0f} W" if d.power_W is not None else ""
        text += f"; it is power-capped{watts} ({name} in {power[name]:.0%} of busy samples)"
    elif "hardware slowdown" in d.reasons:
        text += (f"; hardware slowdown in {d.reasons['hardware slowdown']:.0%} of busy samples "
                 "(power brake or temperature: check the cooling and power supply)")
    else:
        text += "; no throttle reason was reported (check application clocks and the workload)"
    return text


def parse_smi_csv(path: str | os.PathLike[str]) -> SmiReport:
    return parse_smi_csv_text(read_text(path), str(path))


def no_finding(report: SmiReport) -> str:
    """What the log shows when no device is slow (or it has one device only)."""
    return ("no device runs slower than the others" if len(report.devices) > 1 else
            "one device only: no other to compare it with (record every GPU of the job: "
            "nvidia-smi --query-gpu=... without -i)")


def render_smi(report: SmiReport) -> str:
    lines = [f"Device health from {report.source}", ""]
    lines += [f"  - {f}" for f in report.findings] or [f"  {no_finding(report)}"]
    lines.append("")
    lines.append(f"{'device':>6} {'samples':>7} {'busy':>5} {'SM MHz':>7} {'max MHz':>7} "
                 f"{'temp C':>6} {'max C':>5} {'power W':>7} {'util %':>6}  throttle reasons")

    def f(v, fmt):
        return format(v, fmt) if v is not None else "-"

    for d in report.devices:
        reasons = ", ".join(f"{k} {v:.0%}" for k, v in d.reasons.items()) or "-"
        lines.append(f"{d.index:>6} {d.samples:>7} {d.busy_samples:>5} {d.sm_clock_MHz:>7.0f} "
                     f"{f(d.max_sm_clock_MHz, '>7.0f'):>7} {f(d.temperature_C, '>6.0f'):>6} "
                     f"{f(d.max_temperature_C, '>5.0f'):>5} {f(d.power_W, '>7.0f'):>7} "
                     f"{f(d.utilization_pct, '>6.0f'):>6}  {reasons}")
    lines.append("(medians over samples at >= 50% utilization)")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def attach_to_report(report, smi: SmiReport) -> None:
    """Add the device evidence to a diagnosis (``scalesim.diagnosis.Report``): the slow device's
    sentence joins the cause's evidence when the cause is a slow device, stragglers or compute;
    otherwise it is a note. The per-device table goes to ``details['smi']``."""
    report.details["smi"] = smi.to_dict()
    related = report.cause.key in ("slow_device", "stragglers", "compute")
    for text in smi.findings:
        if related:
            report.cause.evidence.append(f"nvidia-smi: {text}")
        else:
            report.notes.append(f"nvidia-smi ({smi.source}): {text}")
    if not smi.findings:
        report.notes.append(f"nvidia-smi ({smi.source}): every device held its clock "
                            f"({', '.join(f'{d.sm_clock_MHz:.0f}' for d in smi.devices)} MHz)")
    report.notes.extend(f"nvidia-smi: {n}" for n in smi.notes)
