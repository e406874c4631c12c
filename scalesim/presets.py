"""Built-in hardware and workload presets, each number with its public source.

Link bandwidths are nccl-tests *bus* bandwidths, each stated with the NCCL algorithm and protocol
it belongs to (``LinkLevel.algorithm``). Where a maintainer or user published a measurement for
the system it is used as is (scalesim/data/validation/interconnect.json
collects them). Where none
exists the preset derives one from the link's line rate and an efficiency measured on a
comparable link, and says so in ``source``:

- NVLink/NVSwitch/PCIe inside a server: ``0.8 x`` the per-direction line rate per GPU (Ring,
  Simple protocol at large messages). The NCCL maintainer puts effective NVLink3 bandwidth at
  ~20 of 25 GB/s per link (nccl-tests#149), and measured A100 (230 of 300) and H100 (~370 of
  450) ring bus bandwidths agree. On NVSwitch H100 servers NCCL's default all-reduce is NVLS
  (NVLink SHARP: the switch reduces), ~480 GB/s busbw on 8 GPUs (nccl-tests#212); ring
  collectives (reduce-scatter, all-gather) stay at ~370.
- InfiniBand/RoCE across servers: ``0.96 x`` the node's NIC line rate: 192 GB/s measured on
  8x200 Gb/s (nccl#812 via nccl#1576) and ~48 GB/s on 4x100 Gb/s (nccl-tests#29); Ring, Simple
  (large messages, NCCL_ALGO=Ring as the calibration pins it; two-node Tree can report more).
- Ethernet with NCCL's socket transport (TCP): the median of published socket busbw over line
  rate, ``SOCKET_EFFICIENCY`` (below). TCP's payload share of a 1500-byte frame, 0.94, is only a
  ceiling: NCCL's socket transport moves each channel over few TCP streams with a proxy thread
  copying through host memory and reaches about half the line rate.

Latencies (alpha per algorithm step) are typical orders of magnitude, not measurements: ~2 us
per NVLink/NVSwitch hop, ~5 us per PCIe hop, ~6 us for InfiniBand/RoCE, ~30 us for TCP over
Ethernet. They matter only for small messages; calibrate to replace them.

Prices are on-demand list prices of the matching cloud instance, each with the date it was
listed and its source (``PRICES``); a price that is known to have been cut since says so.
"""

from __future__ import annotations

import difflib
import functools
import re
import statistics
from dataclasses import dataclass

import numpy as np

from scalesim.attention_kernel import ATTENTION_KERNELS, FLASH2_KERNEL, VENDOR_KERNEL
from scalesim.bounds import bound
from scalesim.errors import ScalesimError, excerpt
from scalesim.figures import GIB_BYTES
from scalesim.model.transformer import activation_bytes_per_layer
from scalesim.schemas import (
    Hardware,
    LinkLevel,
    ReferenceThroughput,
    SubsetShare,
    TransformerShape,
    Workload,
)

INTRA_EFFICIENCY = 0.8
IB_EFFICIENCY = 0.96
TCP_PAYLOAD_CEILING = 1448 / 1538  # TCP payload of a 1500 B MTU frame on the wire: 0.94

# Published NCCL all-reduce busbw over TCP sockets: (busbw GB/s, line rate GB/s, source).
SOCKET_BUSBW_FIGURES: list[tuple[float, float, str]] = [
    (5.0, 12.5, "NVIDIA/nccl#450: 4 servers of 8 V100, 100 Gb/s TCP, all_reduce_perf 8-128 MB: "
                "busbw 4-6 GB/s at best (midpoint 5)"),
    (1.7, 3.125, "NVIDIA/nccl-tests#83: Azure VMs, 25 Gb/s TCP, NCCL_ALGO=Ring NCCL_PROTO=Simple, "
                 "tuned sockets: busbw maxed out at 1.7 GB/s"),
    (2.4, 4.0, "NVIDIA/nccl#209: 32 Gb/s TCP, large messages: 'not more than 60% of wire speed'"),
]
SOCKET_EFFICIENCY = round(statistics.median(b / line for b, line, _ in SOCKET_BUSBW_FIGURES), 3)

_NCCL_149 = "NVIDIA/nccl-tests#149 (NCCL maintainer: ~230 GB/s busbw, 8x A100 NVSwitch)"
_NCCL_212 = "NVIDIA/nccl-tests#212 (NCCL maintainer: ~370 GB/s effective, 8x H100 NVLink4)"
_NCCL_212_NVLS = ("NVIDIA/nccl-tests#212 (NCCL maintainer, 2024-05-06: all-reduce with NVLink "
                  "SHARP peaks at ~480 GB/s busbw, algbw ~275 GB/s, on 8 H100 at large sizes)")
_NCCL_29 = "NVIDIA/nccl-tests#29 (NCCL maintainer: ~48 GB/s busbw, DGX-1 4x100 Gb/s EDR IB)"
_NCCL_812 = "NVIDIA/nccl#812 quoted in nccl#1576 (192 GB/s busbw, DGX A100 8x200 Gb/s HDR IB)"
RING_SIMPLE = "Ring/Simple (large messages)"


@dataclass(frozen=True)
class IntraLinkSpec:
    """An intra-server link kind: line rate, measured ring busbw (or None), its default
    all-reduce where it beats the ring (NVLS), sources and latency."""

    line_rate_GBps: float  # per direction per GPU
    measured_GBps: float | None
    source: str
    latency_s: float
    allreduce_GBps: float | None = None
    allreduce_algorithm: str = ""
    allreduce_source: str = ""
    # Point-to-point links (DGX-1 hybrid cube-mesh): NVLinks per GPU in the whole server, and
    # (GPUs, NVLinks per GPU that NCCL's rings over the first that many GPUs can use).
    links_per_gpu: int = 0
    partial_links: tuple[tuple[int, int], ...] = ()


DGX1_GPUS = 8  # GPUs of a DGX-1 server: the whole hybrid cube-mesh
_CUBE_MESH = ("fewer GPUs than 8 get fewer NVLinks: DGX-1 hybrid cube-mesh, two quads of four "
              "GPUs (NVIDIA DGX-1 system architecture whitepapers; P100: 4 single NVLinks per "
              "GPU, its quad fully connected; V100: 6 per GPU, some pairs doubled); a DGX-1V "
              "topology dump in NVIDIA/nccl#671: GPU0-GPU1 one NVLink, at least 4 NVLinks per "
              "GPU inside GPUs 0-3")

INTRA_LINKS: dict[str, IntraLinkSpec] = {
    "pcie3": IntraLinkSpec(15.75, None, "PCIe 3.0 x16: 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s",
                           5e-6),
    "pcie4": IntraLinkSpec(31.5, None, "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s",
                           5e-6),
    "pcie5": IntraLinkSpec(63.0, None, "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s",
                           5e-6),
    "nvlink1": IntraLinkSpec(80.0, None, "P100 NVLink 1: 4 links x 20 GB/s per direction "
                             "(DGX-1 P100); " + _CUBE_MESH, 2e-6, links_per_gpu=4,
                             partial_links=((2, 1), (4, 2))),
    "nvlink2": IntraLinkSpec(150.0, None, "V100 NVLink 2: 6 links x 25 GB/s per direction "
                             "(DGX-1V); " + _CUBE_MESH, 2e-6, links_per_gpu=6,
                             partial_links=((2, 1), (4, 4))),
    "nvswitch-v100": IntraLinkSpec(150.0, None, "DGX-2 NVSwitch: 300 GB/s bidirectional per GPU "
                                   "(pcper.com, 2018-03, vendor spec)", 2e-6),
    "nvswitch-a100": IntraLinkSpec(300.0, 230.0, _NCCL_149, 2e-6),
    "nvswitch-h100": IntraLinkSpec(450.0, 370.0, _NCCL_212, 2e-6, allreduce_GBps=480.0,
                                   allreduce_algorithm="NVLS/Simple (8 GPUs, large messages)",
                                   allreduce_source=_NCCL_212_NVLS),
    "nvl72-gb200": IntraLinkSpec(900.0, None, "GB200 NVL72: fifth-generation NVLink, 1.8 TB/s "
                                 "bidirectional per GPU (NVIDIA GB200 NVL72 datasheet)", 2e-6),
}


def preset_name(name: str, names, what: str, alternative: str = "") -> str:
    """The one of ``names`` (a preset kind's names: hardware, workload, link...) that ``name``
    means: itself, else the one name equal to it but for case ('llama3-70B' -> 'llama3-70b');
    else a ``ScalesimError`` in one line naming the nearest names (``difflib``) and every one:
    "unknown hardware preset 'dgx-a10' (did you mean dgx-a100?); choose one of ...
    ``alternative``". The one lookup of every preset kind a user types."""
    names = list(names)
    if name in names:
        return name
    same = [n for n in names if n.casefold() == name.casefold()]
    if len(same) == 1:
        return same[0]
    by_fold = {n.casefold(): n for n in names}
    near = same or [by_fold[n] for n in difflib.get_close_matches(name.casefold(), by_fold,
                                                                   n=3, cutoff=0.6)]
    said = ", ".join(near[:-1]) + " or " * (len(near) > 1) + "".join(near[-1:])
    hint = f" (did you mean {said}?)" if near else ""
    raise ScalesimError(f"unknown {what} '{name}'{hint}; choose one of {', '.join(names)}"
                        f"{alternative}")


def intra_link(kind: str) -> LinkLevel:
    """The preset intra-server link of ``kind`` (see INTRA_LINKS)."""
    kind = preset_name(kind, INTRA_LINKS, "intra-node link")
    spec = INTRA_LINKS[kind]
    extra = {"subset_busbw_shares": subset_shares(kind)}
    if spec.allreduce_GBps is not None:
        extra.update(allreduce_busbw_GBps=spec.allreduce_GBps,
                     allreduce_algorithm=spec.allreduce_algorithm)
    if spec.measured_GBps is not None:
        source = spec.source + (f"; all-reduce: {spec.allreduce_source}" if spec.allreduce_GBps
                                is not None else "")
        return LinkLevel(kind=kind, busbw_GBps=spec.measured_GBps, latency_s=spec.latency_s,
                         algorithm=RING_SIMPLE, source=source, **extra)
    return LinkLevel(
        kind=kind, busbw_GBps=round(INTRA_EFFICIENCY * spec.line_rate_GBps, 2),
        latency_s=spec.latency_s, algorithm=RING_SIMPLE, **extra,
        source=f"{INTRA_EFFICIENCY} x line rate; {spec.source}; efficiency from {_NCCL_149}",
    )


def subset_shares(kind: str) -> list[SubsetShare]:
    """How the ring busbw of intra-server link ``kind`` falls for fewer GPUs of a server
    (``LinkLevel.subset_busbw_shares``), from ``INTRA_LINKS``: none on NVSwitch and PCIe (every
    GPU keeps its bandwidth whatever the count); on the DGX-1's point-to-point hybrid cube-mesh
    (``nvlink1``, ``nvlink2``) a ring over fewer GPUs has fewer NVLinks. NCCL's ring all-reduce
    busbw is the per-direction bandwidth of the links each GPU's rings use (each undirected ring
    used both ways), so the share is ``usable / links_per_gpu``: 2 GPUs share one NVLink (1/4 on
    P100, 1/6 on V100); 4 GPUs of a quad give P100 one undirected ring of its 3 quad links (2/4)
    and V100 4 of 6 links; the whole server (8) all of them. A count between two listed ones
    takes the smaller's share (a subset holds at least its links)."""
    spec = INTRA_LINKS.get(kind)
    if spec is None or not spec.partial_links:
        return []
    rows = (*spec.partial_links, (DGX1_GPUS, spec.links_per_gpu))
    return [SubsetShare(gpus=gpus, share=links / spec.links_per_gpu) for gpus, links in rows]


def partial_server_inter_busbw_GBps(link: LinkLevel, gpus, gpus_per_server):
    """Inter-server busbw the first ``gpus`` GPUs of each server reach, GB/s.

    ``link.busbw_GBps`` is what a whole server of ``gpus_per_server`` GPUs sustains over all its
    ``link.nics_per_node`` NICs (docs/model.md §2). The NICs are spread over the GPUs, each GPU
    next to its share on a PCIe switch (DGX A100 / H100: one NIC per GPU; DGX-1: one per two),
    and NCCL's rings and trees send each GPU's traffic through the NICs nearest to it, so ``g``
    GPUs reach ``ceil(g * nics / G)`` NICs, at least one, at most all: busbw times that share.
    One GPU of a DGX A100 reaches one of its eight 200 Gb/s NICs, 24 GB/s, not 192 (as issue
    #10 found of one rank's calibration), which its own PCIe 4.0 x16 link (~25 GB/s) bounds as
    well. Unknown NIC count (a calibrated level) or one NIC: the figure as it is.
    """
    busbw = np.asarray(link.busbw_GBps, dtype=float)
    nics = link.nics_per_node
    if not nics or nics <= 1:
        return busbw
    g = np.minimum(np.asarray(gpus, dtype=float), gpus_per_server)
    reached = np.clip(np.ceil(g * nics / gpus_per_server - 1e-9), 1.0, nics)
    return busbw * reached / nics


# The PCIe generation that joins each intra-node link kind's GPUs to their host CPU (NVLink and
# NVSwitch join GPUs to each other only): P100/V100 SXM2/SXM3 boards attach over PCIe 3.0 x16
# (NVIDIA DGX-1 and DGX-2 datasheets), A100 SXM4 over PCIe 4.0 x16 (DGX A100 datasheet), H100 SXM5
# over PCIe 5.0 x16 (DGX H100 datasheet). Used for parameter servers on the host CPU.
HOST_PCIE_OF_INTRA: dict[str, str] = {
    "pcie3": "pcie3", "pcie4": "pcie4", "pcie5": "pcie5",
    "nvlink1": "pcie3", "nvlink2": "pcie3", "nvswitch-v100": "pcie3",
    "nvswitch-a100": "pcie4", "nvswitch-h100": "pcie5", "nvl72-gb200": "pcie5",
}


def host_link(intra_kind: str) -> LinkLevel:
    """One device's PCIe link to its host CPU in a server whose GPUs use ``intra_kind``."""
    intra_kind = preset_name(intra_kind, HOST_PCIE_OF_INTRA, "intra-node link")
    pcie = intra_link(HOST_PCIE_OF_INTRA[intra_kind])
    return pcie.model_copy(update={"source": f"device-to-host link of {intra_kind}: {pcie.source}"})


# Device memory bandwidth, GB/s, from the vendors' datasheets, matched on the device name (every
# listed word must appear, case-insensitive; the first match wins). H100 comes in three memory
# systems (SXM 3.35, PCIe 2.0, NVL 3.9 TB/s), so a bare "H100" matches none of them. Used to estimate the
# optimizer step (``scalesim.model.compute.optimizer_roofline_s``) where nothing measured it.
# Order: a row whose words are inside another's name comes after it ("A10" after "A100" and
# "A10G", "L4" after "L40", "P4" after "P40", "H20" after "H200"; tests/test_device_rows.py walks
# every row). A figure of None lists a name only so that a later row does not take it (a laptop
# "RTX 4090 Laptop GPU" is not the desktop card): no figure, as if unlisted.
MEMORY_BANDWIDTH_GBPS: list[tuple[tuple[str, ...], float | None, str]] = [
    (("Laptop",), None, "laptop GPUs: another chip and memory than the desktop card of that "
     "number (NVIDIA GeForce RTX 4090 Laptop GPU product page: AD103, 16 GB GDDR6): not listed"),
    (("GB200",), 8000.0, "NVIDIA GB200 NVL72 datasheet: 8 TB/s HBM3e per GPU"),
    (("GB300",), 8000.0, "NVIDIA Technical Blog, 'Inside NVIDIA Blackwell Ultra' (developer."
     "nvidia.com, 2025): 8 TB/s HBM3e per Blackwell Ultra GPU; the GB300 NVL72 rack's 576 TB/s over "
     "72 GPUs (as quoted by glennklockwood.com/garden/processors/B300) is the same"),
    (("B300",), 8000.0, "NVIDIA Technical Blog, 'Inside NVIDIA Blackwell Ultra' (developer."
     "nvidia.com, 2025): 288 GB HBM3e at 8 TB/s per Blackwell Ultra GPU (verda.com lists 7.7 TB/s "
     "for HGX B300: docs/model.md; listed after 'GB300', which its name contains)"),
    (("GH200", "144G"), 4900.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 144 GB HBM3e, "
     "4.9 TB/s"),
    (("GH200",), 4000.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 96 GB HBM3, 4 TB/s"),
    (("H200",), 4800.0, "NVIDIA H200 Tensor Core GPU datasheet: H200 SXM and H200 NVL, 141 GB "
     "HBM3e, 4.8 TB/s"),
    (("H20", "141G"), None, "NVIDIA H20 141 GB HBM3e board: no bandwidth published (the row below "
     "is the 96 GB board's)"),
    (("H20",), 4000.0, "NVIDIA publishes no H20 datasheet; secondary: partners' spec sheets as "
     "reported in November 2023 (SemiAnalysis, Tom's Hardware): 96 GB HBM3, 4.0 TB/s (listed "
     "after 'H200' and 'GH200', whose names contain it)"),
    (("H100", "NVL"), 3900.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 NVL 94 GB, 3.9 TB/s"),
    (("H100", "PCIe"), 2000.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 PCIe 80 GB, 2 TB/s"),
    (("H100", "SXM"), 3350.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM 80 GB, 3.35 TB/s"),
    (("H100", "DGX"), 3350.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM 80 GB, 3.35 TB/s "
     "(DGX H100 servers hold the SXM5 board, DGX H100 datasheet)"),
    (("H100", "HBM3"), 3350.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM 80 GB, 3.35 "
     "TB/s (nvidia-smi names the SXM5 board 'NVIDIA H100 80GB HBM3')"),
    (("H800", "PCIe"), 2000.0, "NVIDIA H800 Tensor Core GPU datasheet (China market): H800 PCIe "
     "80 GB, 2 TB/s (the H100 PCIe's; NVLink bridge 400 GB/s)"),
    (("H800",), 3350.0, "NVIDIA H800 Tensor Core GPU datasheet (China market): H800 SXM5 80 GB, "
     "3.35 TB/s (the H100 SXM's; NVLink 400 GB/s against 900); nvidia-smi names the SXM5 board "
     "'NVIDIA H800'"),
    (("A100", "PCIe", "80GB"), 1935.0, "NVIDIA A100 datasheet: A100 80GB PCIe, 1,935 GB/s"),
    (("A100", "80GB"), 2039.0, "NVIDIA A100 datasheet: A100 80GB SXM, 2,039 GB/s"),
    (("A100",), 1555.0, "NVIDIA A100 datasheet: A100 40GB, 1,555 GB/s"),
    (("A800", "PCIe", "80GB"), 1935.0, "NVIDIA A800 datasheet (China market): A800 80GB PCIe, "
     "1,935 GB/s (the A100's figures; NVLink 400 GB/s against 600)"),
    (("A800", "80GB"), 2039.0, "NVIDIA A800 datasheet (China market): A800 80GB SXM, 2,039 GB/s"),
    (("A800",), 1555.0, "NVIDIA A800 datasheet (China market): A800 40GB PCIe, 1,555 GB/s"),
    (("A10G",), 600.0, "AWS A10G (EC2 G5): NVIDIA publishes no datasheet; secondary: TechPowerUp "
     "GPU database, 24 GB GDDR6, 384-bit, 600 GB/s as the A10 (listed before 'A10', inside its "
     "name)"),
    (("A10",), 600.0, "NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s (after 'A100' and 'A10G', "
     "whose names contain it)"),
    (("A30",), 933.0, "NVIDIA A30 datasheet: 24 GB HBM2, 933 GB/s"),
    (("A4000",), 448.0, "NVIDIA RTX A4000 datasheet: 16 GB GDDR6, 448 GB/s (listed before 'A40', "
     "inside its name)"),
    (("A40",), 696.0, "NVIDIA A40 datasheet: 48 GB GDDR6, 696 GB/s"),
    (("A5000",), 768.0, "NVIDIA RTX A5000 datasheet: 24 GB GDDR6, 768 GB/s"),
    (("A6000",), 768.0, "NVIDIA RTX A6000 datasheet: 48 GB GDDR6, 768 GB/s"),
    (("RTX6000", "Ada"), 960.0, "NVIDIA RTX 6000 Ada Generation datasheet: 48 GB GDDR6, 960 GB/s"),
    (("Quadro", "RTX6000"), 672.0, "NVIDIA Quadro RTX 6000 datasheet: 24 GB GDDR6, 672 GB/s"),
    (("RTX8000",), 672.0, "NVIDIA Quadro RTX 8000 datasheet: 48 GB GDDR6, 672 GB/s"),
    (("TITANV",), 652.8, "NVIDIA TITAN V product page: 12 GB HBM2, 652.8 GB/s"),
    (("TITANRTX",), 672.0, "NVIDIA TITAN RTX product page: 24 GB GDDR6, 672 GB/s"),
    (("TITANX", "Pascal"), 480.0, "NVIDIA TITAN X (Pascal) product page: 12 GB GDDR5X, 480 GB/s "
     "(listed before 'TITAN Xp': 'Titan X Pascal' holds 'TitanXp')"),
    (("TITANXp",), 547.7, "NVIDIA TITAN Xp product page: 12 GB GDDR5X, 547.7 GB/s"),
    (("RTX5090",), 1792.0, "NVIDIA GeForce RTX 5090 product page: 32 GB GDDR7, 512-bit, 1,792 "
     "GB/s"),
    (("RTX4090",), 1008.0, "NVIDIA Ada Lovelace architecture whitepaper: GeForce RTX 4090, 24 GB "
     "GDDR6X, 1,008 GB/s (the RTX 4090 D has the same memory)"),
    (("RTX3090Ti",), 1008.0, "NVIDIA GeForce RTX 3090 Ti product page: 24 GB GDDR6X at 21 Gbps, "
     "384-bit: 1,008 GB/s (listed before 'RTX 3090', inside its name)"),
    (("RTX3090",), 936.0, "NVIDIA Ampere GA102 GPU architecture whitepaper: GeForce RTX 3090, 24 GB "
     "GDDR6X, 936 GB/s"),
    (("RTX2080Ti",), 616.0, "NVIDIA Turing GPU architecture whitepaper: GeForce RTX 2080 Ti, 11 GB "
     "GDDR6, 616 GB/s"),
    (("GTX1080Ti",), 484.0, "NVIDIA GeForce GTX 1080 Ti product page: 11 GB GDDR5X, 484 GB/s"),
    (("V100S", "PCIe"), 1134.0, "NVIDIA V100S PCIe datasheet: 32 GB HBM2, 1,134 GB/s"),
    (("B200",), 7700.0, "NVIDIA Blackwell datasheet table (GB200 NVL72 and HGX B200): HGX B200 "
     "180 GB HBM3e, 7.7 TB/s per GPU (listed after 'GB200', which its name contains)"),
    (("MI325X",), 6000.0, "AMD Instinct MI325X data sheet: 256 GB HBM3E, 6 TB/s"),
    (("MI300X",), 5300.0, "AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s"),
    (("MI300A",), 5300.0, "AMD Instinct MI300A data sheet: 128 GB unified HBM3, 5.3 TB/s"),
    (("MI250X",), 1638.4, "AMD Instinct MI250X data sheet: 3,276.8 GB/s per OAM of two GCDs, "
     "each one device to PyTorch: half per device (listed before 'MI250', inside its name)"),
    (("MI250",), 1638.4, "AMD Instinct MI250 data sheet: 3,276.8 GB/s per OAM of two GCDs, each "
     "one device to PyTorch: half per device"),
    (("MI210",), 1638.4, "AMD Instinct MI210 data sheet: 64 GB HBM2e, 1,638.4 GB/s"),
    (("MI100",), 1228.8, "AMD Instinct MI100 data sheet: 32 GB HBM2, 1,228.8 GB/s"),
    (("V100",), 900.0, "NVIDIA Tesla V100 datasheet: 900 GB/s HBM2 (SXM2 and PCIe)"),
    (("L40",), 864.0, "NVIDIA L40S and L40 datasheets: 48 GB GDDR6, 864 GB/s"),
    (("L4",), 300.0, "NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s (after 'L40', inside its name)"),
    (("T4",), 320.0, "NVIDIA T4 datasheet: 16 GB GDDR6, 320+ GB/s"),
    (("P100", "12GB"), 549.0, "NVIDIA Tesla P100 datasheet: P100 PCIe 12 GB, 549 GB/s"),
    (("P100",), 732.0, "NVIDIA Tesla P100 datasheet: 732 GB/s (SXM2 and PCIe 16 GB)"),
    (("P40",), 346.0, "NVIDIA Tesla P40 datasheet: 24 GB GDDR5, 346 GB/s"),
    (("P4",), 192.0, "NVIDIA Tesla P4 datasheet: 8 GB GDDR5, 192 GB/s (after 'P40', inside its "
     "name)"),
    (("M60",), 160.0, "NVIDIA Tesla M60 datasheet: 2x 160 GB/s per board of two GM204 devices"),
    (("M40",), 288.0, "NVIDIA Tesla M40 datasheet: 12 or 24 GB GDDR5, 288 GB/s"),
    (("K80",), 240.0, "NVIDIA Tesla K80 datasheet: 480 GB/s per board of two GK210 devices"),
    (("K40",), 288.0, "NVIDIA Tesla K40 datasheet: 12 GB GDDR5, 288 GB/s"),
]


# Dense tensor-core peak of one device, TFLOP/s, 16-bit (bf16/fp16) and fp8, from the vendors'
# datasheets (without sparsity), matched like MEMORY_BANDWIDTH_GBPS (a 16-bit figure of None: listed
# only so that a later row does not take the name). GeForce cards: the FP16 rate with FP32
# accumulate that mixed-precision training uses, half their FP16-accumulate rate (the
# architecture whitepapers list both). Devices without tensor cores (P100, P40, K80...) have no row.
PEAK_TFLOPS: list[tuple[tuple[str, ...], float | None, float | None, str]] = [
    (("Laptop",), None, None, "laptop GPUs: another chip and clocks than the desktop card of that "
     "number (NVIDIA GeForce RTX 4090 Laptop GPU product page: AD103): not listed"),
    (("GB200",), 2500.0, 5000.0, "NVIDIA GB200 NVL72 datasheet: 180 PFLOPS FP16/BF16 and 360 "
     "PFLOPS FP8 dense over 72 GPUs"),
    (("GB300",), 2500.0, 5000.0, "NVIDIA GB300 NVL72 product page (as quoted by "
     "glennklockwood.com/garden/processors/B300 and verda.com/blog/gb300-nvl72-architecture, "
     "2025): 360 PFLOPS FP8 for training, 180 PFLOPS FP16/BF16 dense over 72 GPUs"),
    (("B300",), 2250.0, 4500.0, "NVIDIA HGX B300 (Blackwell Ultra; as quoted by glennklockwood.com/"
     "garden/processors/B300, 2025): FP16/BF16 2,250 and FP8 4,500 TFLOPS dense, as the B200 "
     "(listed after 'GB300', which its name contains)"),
    (("H100", "PCIe"), 756.5, 1513.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 PCIe 1,513 "
     "TFLOPS BF16 and 3,026 FP8 with sparsity, half of each dense"),
    (("H100", "NVL"), 835.5, 1670.5, "NVIDIA H100 Tensor Core GPU datasheet: H100 NVL 1,671 "
     "TFLOPS BF16 and 3,341 FP8 with sparsity, half of each dense"),
    (("H100",), 989.0, 1979.0, "NVIDIA H100 datasheet (SXM): 989 TFLOPS BF16, 1,979 FP8 dense"),
    (("H800", "PCIe"), 756.5, 1513.0, "NVIDIA H800 Tensor Core GPU datasheet (China market): H800 "
     "PCIe 1,513 TFLOPS BF16 and 3,026 FP8 with sparsity, half of each dense (the H100 PCIe's)"),
    (("H800",), 989.0, 1979.0, "NVIDIA H800 Tensor Core GPU datasheet (China market): H800 SXM5 "
     "1,979 TFLOPS BF16 and 3,958 FP8 with sparsity, half of each dense (the H100 SXM's)"),
    (("GH200",), 989.0, 1979.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 990 TFLOPS "
     "BF16 and 1,979 FP8 dense (the H100/H200 Hopper GPU; listed before 'H200', which its name "
     "contains, so that a 'GH200 NVL2' is not read as an H200 NVL)"),
    (("H200", "NVL"), 835.5, 1670.5, "NVIDIA H200 Tensor Core GPU datasheet: H200 NVL 1,671 "
     "TFLOPS BF16 and 3,341 FP8 with sparsity, half of each dense"),
    (("H200",), 989.0, 1979.0, "NVIDIA H200 Tensor Core GPU datasheet: H200 SXM 1,979 TFLOPS "
     "BF16 and 3,958 FP8 with sparsity, half of each dense (GH200 has the same Hopper GPU: "
     "GH200 datasheet 990 TFLOPS BF16 dense)"),
    (("H20",), 148.0, 296.0, "NVIDIA publishes no H20 datasheet; secondary: partners' spec sheets "
     "as reported in November 2023 (SemiAnalysis, Tom's Hardware): 148 TFLOPS FP16/BF16 and 296 "
     "FP8 dense (listed after 'H200' and 'GH200', whose names contain it)"),
    (("B200",), 2250.0, 4500.0, "NVIDIA Blackwell datasheet table (GB200 NVL72 and HGX B200, "
     "individual GPU): HGX B200 FP16/BF16 Tensor Core 4.5 PFLOPS and FP8 9 PFLOPS with sparsity, "
     "half of each dense (listed after 'GB200', which its name contains)"),
    (("MI325X",), 1307.4, 2614.9, "AMD Instinct MI325X data sheet: 1,307.4 TFLOPS FP16/BF16 and "
     "2,614.9 FP8 dense (the MI300X's compute)"),
    (("MI300X",), 1307.4, 2614.9, "AMD Instinct MI300X data sheet: 1,307.4 TFLOPS FP16/BF16 and "
     "2,614.9 FP8 dense (2,614.9 and 5,229.8 with sparsity)"),
    (("MI300A",), 980.6, 1961.2, "AMD Instinct MI300A data sheet: 980.6 TFLOPS FP16/BF16 and "
     "1,961.2 FP8 dense"),
    (("MI250X",), 191.5, None, "AMD Instinct MI250X data sheet: 383 TFLOPS FP16/BF16 per OAM of two "
     "GCDs, each one device to PyTorch: half per device; no FP8 (listed before 'MI250')"),
    (("MI250",), 181.05, None, "AMD Instinct MI250 data sheet: 362.1 TFLOPS FP16/BF16 per OAM of "
     "two GCDs, each one device to PyTorch: half per device; no FP8"),
    (("MI210",), 181.0, None, "AMD Instinct MI210 data sheet: 181 TFLOPS FP16/BF16, no FP8"),
    (("MI100",), 184.6, None, "AMD Instinct MI100 data sheet: 184.6 TFLOPS FP16 matrix (BF16 "
     "92.3: half), no FP8"),
    (("A100",), 312.0, None, "NVIDIA A100 datasheet: 312 TFLOPS BF16/FP16 dense, no FP8"),
    (("A800",), 312.0, None, "NVIDIA A800 datasheet (China market): 312 TFLOPS BF16/FP16 dense, "
     "the A100's; no FP8"),
    (("A10G",), None, None, "AWS A10G (EC2 G5): NVIDIA publishes no tensor peak (not the A10's "
     "125; listed before 'A10', inside its name)"),
    (("A10",), 125.0, None, "NVIDIA A10 datasheet: 125 TFLOPS BF16/FP16 dense (250 with "
     "sparsity), no FP8"),
    (("A30",), 165.0, None, "NVIDIA A30 datasheet: 165 TFLOPS BF16/FP16 dense (330 with "
     "sparsity), no FP8"),
    (("A4000",), 76.7, None, "NVIDIA RTX A4000 datasheet: 153.4 TFLOPS tensor with sparsity, half "
     "dense (listed before 'A40', inside its name)"),
    (("A40",), 149.7, None, "NVIDIA A40 datasheet: 149.7 TFLOPS BF16/FP16 dense (299.4 with "
     "sparsity), no FP8"),
    (("A5000",), 111.1, None, "NVIDIA RTX A5000 datasheet: 222.2 TFLOPS tensor with sparsity, half "
     "dense"),
    (("A6000",), 154.85, None, "NVIDIA RTX A6000 datasheet: 309.7 TFLOPS tensor with sparsity, "
     "half dense"),
    (("RTX6000", "Ada"), 364.25, 728.5, "NVIDIA RTX 6000 Ada Generation datasheet: 1,457 TFLOPS "
     "FP8 tensor with sparsity: 728.5 FP8 and 364.25 FP16 dense"),
    (("Quadro", "RTX6000"), 130.5, None, "NVIDIA Quadro RTX 6000 datasheet: 130.5 TFLOPS tensor "
     "(Turing: no sparsity)"),
    (("RTX8000",), 130.5, None, "NVIDIA Quadro RTX 8000 datasheet: 130.5 TFLOPS tensor (Turing: no "
     "sparsity)"),
    (("TITANV",), 110.0, None, "NVIDIA TITAN V product page: 110 TFLOPS tensor"),
    (("TITANRTX",), 130.0, None, "NVIDIA TITAN RTX product page: 130 TFLOPS tensor"),
    (("RTX4090D",), None, None, "GeForce RTX 4090 D: fewer SMs than the RTX 4090, no whitepaper "
     "figure (listed before 'RTX 4090', inside its name)"),
    (("RTX4090",), 165.2, 330.3, "NVIDIA Ada Lovelace architecture whitepaper: GeForce RTX 4090 "
     "FP16 and BF16 tensor with FP32 accumulate 165.2 TFLOPS, FP8 330.3, dense"),
    (("RTX3090Ti",), None, None, "GeForce RTX 3090 Ti: no whitepaper figure (listed before "
     "'RTX 3090', inside its name)"),
    (("RTX3090",), 71.0, None, "NVIDIA Ampere GA102 GPU architecture whitepaper: GeForce RTX 3090 "
     "FP16 tensor with FP32 accumulate 71 TFLOPS dense (142 FP16 accumulate)"),
    (("RTX2080Ti",), 53.8, None, "NVIDIA Turing GPU architecture whitepaper: GeForce RTX 2080 Ti "
     "FP16 tensor with FP32 accumulate 53.8 TFLOPS (Founders Edition clocks 56.9)"),
    # "V100S" with "PCIe": without hyphens "V100-SXM2" reads "v100sxm2", which holds "v100s"
    (("V100S", "PCIe"), 130.0, None, "NVIDIA V100 datasheet: V100S PCIe 130 TFLOPS tensor"),
    (("V100", "PCIe"), 112.0, None, "NVIDIA V100 datasheet: V100 PCIe 112 TFLOPS tensor"),
    (("V100",), 125.0, None, "NVIDIA V100 datasheet (SXM2): 125 TFLOPS FP16 tensor"),
    (("L40S",), 362.05, 733.0, "NVIDIA L40S datasheet: 362.05 TFLOPS BF16 and 733 FP8 dense "
     "(733 and 1,466 with sparsity)"),
    (("L40",), 181.05, 362.0, "NVIDIA L40 datasheet: 181.05 TFLOPS BF16 and 362 FP8 dense "
     "(362.1 and 724 with sparsity)"),
    (("L4",), 121.0, 242.5, "NVIDIA L4 datasheet: 242 TFLOPS BF16 and 485 FP8 with sparsity, "
     "half of each dense (after 'L40', inside its name)"),
    (("T4",), 65.0, None, "NVIDIA T4 datasheet: 65 TFLOPS FP16/FP32 mixed-precision tensor (Turing: "
     "no sparsity), no BF16 or FP8"),
]


# Attention kernels (names: scalesim.attention_kernel), by the share of the dense 16-bit peak
# their attention core sustains where it differs from the weight matmuls' (docs/model.md §13,
# "attention kernel").
HOPPER_GPUS = ("H100", "H200", "GH200", "H800")  # H800: the H100's GH100 silicon (H800 datasheet)
# FlashAttention-2 was written for Ampere and uses none of Hopper's new instructions (WGMMA,
# TMA): "FlashAttention-2 ... achieving only 35% utilization on the H100 GPU" (Shah et al. 2024,
# FlashAttention-3, arXiv 2407.08608, abstract). PyTorch's SDPA, which then tried its flash backend
# before cuDNN (cuDNN opt-in since pytorch/pytorch#138522, 2024-10, cherry-picked to 2.5; later
# builds prefer cuDNN on Hopper: calibration/attention_probe.py reads which one ran), measured
# 329 TFLOP/s on an H100 (seq 4,608, head dim 128: 0.33 of 989) against 631 for cuDNN's kernel
# and 632 for FlashAttention-3 (pytorch/pytorch#142132, 2024-12-05); pytorch/benchmark PR #2296
# (commit d5f0a12, 2024-06) timed SDPA's forward on H100 at head dim 128 at 287-304 TFLOP/s
# for 1K-16K tokens (0.29-0.31 of 989). The vendor kernels on Hopper (cuDNN's, FlashAttention-3)
# run near the matmuls' rate (631 of 989): there the attention core keeps the matmuls' sustained
# efficiency.
FLASH2_ON_HOPPER_EFFICIENCY = 0.35
# On the A100 (Ampere GA100; the A800 is the same die) FlashAttention-2 reaches "up to 73% of the
# theoretical max throughput in the forward pass, and up to 63% ... in the backward pass" (Dao
# 2023, arXiv 2307.08691, section 1; measured on an A100 80GB SXM4), the backward counted at 2.5
# times the forward's FLOPs (the paper's convention and layout_step.FLASH_BACKWARD_FACTOR): the
# attention core forward and backward sustains 3.5 / (1/0.73 + 2.5/0.63) = 0.656 of the 16-bit
# peak. That is the vendor stack's rate there too: Transformer Engine prefers its cuDNN fused
# attention over FlashAttention only on compute capability 9.0 and above ("Disabling
# FlashAttention to give FusedAttention preference on Hopper+", get_attention_backend in
# transformer_engine/pytorch/attention/dot_product_attention/utils.py), so on an A100 it runs
# flash-attn's kernel, and FlashAttention-3 needs Hopper. The paper's figures are its maxima
# (head dimension 128, 16K tokens); shorter sequences and head dimension 64 run slower (its
# abstract: 50-73 %), which this one figure does not follow.
FA2_A100_FORWARD_SHARE = 0.73
FA2_A100_BACKWARD_SHARE = 0.63
AMPERE_GA100_GPUS = ("A100", "A800")
ATTENTION_ON_A100_EFFICIENCY = (1.0 + 2.5) / (1.0 / FA2_A100_FORWARD_SHARE
                                              + 2.5 / FA2_A100_BACKWARD_SHARE)
# FlashAttention-2's speed as a share of the vendor kernel's on Hopper, from the one benchmark that
# timed both on one H100 at one shape: PyTorch SDPA's default (flash) backend 329.483 TFLOP/s,
# cuDNN's kernel 631.338 (FlashAttention-3 631.827) at batch 1, 24 heads, 4,608 tokens, head dim
# 128 (Tritonbench's flash_attention operator, pytorch/pytorch#142132, 2024-12-05). Unit-free (a
# ratio of two throughputs): traced flash2 attention time t takes t x this with the vendor kernel,
# which saves t x (1 - this) (diagnose's finding on traces, docs/diagnose.md). Assumption: the
# same ratio at other shapes and in the backward.
FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER = 329.483 / 631.338


def attention_efficiency_of(device_name: str, kernel: str) -> float | None:
    """Sustained share of the dense 16-bit peak of the attention core of ``kernel`` (one of
    ``ATTENTION_KERNELS``) on ``device_name``, or None where it runs at the weight matmuls'
    sustained efficiency (the vendor kernels on Hopper, and devices no published figure
    covers). FlashAttention-2 on Hopper: 0.35; either kernel on an A100 (the vendor stack runs
    FlashAttention-2 there): 0.656 (docs/model.md §13, attention kernel)."""
    if kernel not in ATTENTION_KERNELS:
        raise ScalesimError(f"unknown attention kernel '{kernel}'; known: "
                            f"{', '.join(ATTENTION_KERNELS)}")
    if _is_a100(device_name):
        return ATTENTION_ON_A100_EFFICIENCY
    hopper = any(name_has_words(device_name, (gpu,)) for gpu in HOPPER_GPUS)
    return FLASH2_ON_HOPPER_EFFICIENCY if kernel == FLASH2_KERNEL and hopper else None


def attention_share(device_name: str, kernel: str, fused_attention: bool) -> float | None:
    """``attention_efficiency_of`` for a workload whose attention is fused or not: without
    fused attention (``TransformerShape.flash_attention`` false) the vendor stack runs the core
    as batched matmuls with the softmax between them, at the matmuls' rate (None); a named
    FlashAttention-2 kernel is fused attention whatever the shape says, at its own rate."""
    share = attention_efficiency_of(device_name, kernel)  # refuses an unknown kernel
    return None if not fused_attention and kernel == VENDOR_KERNEL else share


def attention_efficiency_source(device_name: str, kernel: str) -> str:
    """Where ``attention_efficiency_of``'s figure for ``kernel`` on ``device_name`` comes from,
    in a few words ('' where it is None: the matmuls' efficiency)."""
    if attention_efficiency_of(device_name, kernel) is None:
        return ""
    if _is_a100(device_name):
        return ("FlashAttention-2 paper's A100 maxima, 73 % forward and 63 % backward; "
                "Transformer Engine runs FlashAttention-2 before Hopper")
    return "FlashAttention-3 paper; pytorch/pytorch#142132"


def _is_a100(device_name: str) -> bool:
    """Whether ``device_name`` is an A100-class die (``AMPERE_GA100_GPUS``)."""
    return any(name_has_words(device_name, (gpu,)) for gpu in AMPERE_GA100_GPUS)


def flash2_slower_than_vendor(device_name: str) -> bool:
    """Whether the vendor attention kernel's core runs faster than FlashAttention-2's on
    ``device_name`` by a published figure (Hopper), so that switching is a remedy."""
    return (attention_efficiency_of(device_name, FLASH2_KERNEL)
            != attention_efficiency_of(device_name, VENDOR_KERNEL))


def name_has_words(device_name: str, words) -> bool:
    """Whether every one of ``words`` appears in ``device_name``, ignoring case, spaces and
    hyphens ("A100-SXM4 80GB" has A100 and 80GB): how the datasheet tables match a device. A
    word ending in a digit is a whole model number: not followed by another digit ("Quadro
    P1000" has no P100, "Quadro K4000" no K40, "H100 80GB" has H100); a word of letters only is
    not followed by another letter ("H200 (NVLink)" has no NVL, "H100 SXM5" has SXM)."""
    return all(_word_pattern(word).search(device_name) for word in words)


@functools.cache
def _word_pattern(word: str) -> re.Pattern:
    """``word`` as a regex: its characters with optional spaces or hyphens between them, no
    digit right after a final digit and no letter right after a word of letters only
    (``name_has_words``)."""
    chars = r"[\s-]*".join(re.escape(c) for c in word.replace(" ", "").replace("-", ""))
    end = r"(?!\d)" if word[-1:].isdigit() else r"(?![a-z])" if word.isalpha() else ""
    return re.compile(chars + end, re.IGNORECASE)


def _first_row(table, device_name: str):
    """The first row of a datasheet table whose words all appear in ``device_name``, or None."""
    return next((row for row in table if name_has_words(device_name, row[0])), None)


# Export variants listed with their sibling's peak and bandwidth but not that device: the A800
# and H800 are the A100's and H100's silicon with NVLink cut to 400 GB/s (from 600 and 900; their
# datasheets), so a profile's links or an nccl-tests log of one do not describe the other. Two
# names are one device only if each of these words is in both or in neither.
OWN_DEVICE_WORDS = ("A800", "H800")
# A board form factor its SXM sibling may share peak and bandwidth with: the A100 40GB PCIe and
# SXM4 both list 312 TFLOP/s and 1,555 GB/s (NVIDIA A100 datasheet), but the PCIe board draws
# 250 W against 400 and reaches its peers over PCIe (or a 2-GPU bridge), not NVSwitch, so a
# preset or profile of one does not describe the other. nvidia-smi names every PCIe board so
# ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 PCIe", "Tesla V100-PCIE-16GB").
# Compared as OWN_DEVICE_WORDS are.
FORM_FACTOR_WORDS = ("PCIe",)


def same_device(a: str, b: str) -> bool:
    """Whether device names ``a`` and ``b`` name one device: equal, or listed with the same
    peak and memory bandwidth (a calibration's "NVIDIA H100 80GB HBM3" and a preset's
    "H100-SXM5 80GB"); an H100 and an H200 share a peak, not a bandwidth, so they differ; an
    H800 and an H100 share both but not their NVLink (``OWN_DEVICE_WORDS``), nor a PCIe board
    and an SXM one (``FORM_FACTOR_WORDS``: an A100 40GB). Memory size is not compared: a V100
    16GB and 32GB, a Quadro RTX 6000 and 8000, are one device."""
    if a.strip().lower() == b.strip().lower():
        return True
    if any(name_has_words(a, (w,)) != name_has_words(b, (w,))
           for w in (*OWN_DEVICE_WORDS, *FORM_FACTOR_WORDS)):
        return False
    figures = [(of(a), of(b)) for of in (peak_tflops_of, memory_bandwidth_of)]
    return all(x is not None and y is not None and x[0] == y[0] for x, y in figures)


def peak_tflops_of(device_name: str, fp8: bool = False) -> tuple[float, str] | None:
    """(dense TFLOP/s, source) of ``device_name`` at 16-bit or fp8 precision, or None."""
    row = _first_row(PEAK_TFLOPS, device_name)
    if row is None or row[1] is None:
        return None
    _, bf16, f8, source = row
    if fp8 and f8 is None:
        return None
    return (f8 if fp8 else bf16), source


def memory_bandwidth_of(device_name: str) -> tuple[float, str] | None:
    """(GB/s, source) of the device memory of ``device_name``, or None when not listed."""
    row = _first_row(MEMORY_BANDWIDTH_GBPS, device_name)
    return None if row is None or row[1] is None else (row[1], row[2])


def _datasheet_bandwidth(device_name: str) -> float:
    return memory_bandwidth_of(device_name)[0]


def _datasheet(device_name: str) -> dict:
    """A hardware preset's device: its name, 16-bit dense peak (TFLOP/s, PEAK_TFLOPS) and memory
    bandwidth (GB/s, MEMORY_BANDWIDTH_GBPS), each stated once in those tables."""
    return {"device_name": device_name, "peak_tflops": peak_tflops_of(device_name)[0],
            "memory_bandwidth_GBps": _datasheet_bandwidth(device_name)}


def inter_link(kind: str, nics_per_node: int, gbit_per_nic: float, source: str = "") -> LinkLevel:
    """A preset inter-server link: ``nics_per_node`` NICs of ``gbit_per_nic`` Gbit/s each."""
    line_GBps = nics_per_node * gbit_per_nic / 8.0
    kind = preset_name(kind, ("infiniband", "roce", "ethernet"), "inter-node link")
    if kind in ("infiniband", "roce"):
        efficiency, latency, why = IB_EFFICIENCY, 6e-6, f"efficiency from {_NCCL_812}; {_NCCL_29}"
    elif kind == "ethernet":
        efficiency, latency = SOCKET_EFFICIENCY, 30e-6
        why = ("NCCL socket transport over TCP: median busbw / line rate of "
               + "; ".join(src for _, _, src in SOCKET_BUSBW_FIGURES)
               + f" (TCP payload ceiling {TCP_PAYLOAD_CEILING:.2f} is not reached)")
    else:  # never: preset_name refused any other kind
        raise AssertionError(kind)
    busbw = round(efficiency * line_GBps, 3)
    if problem := bound("busbw_GBps").problem(busbw):  # each factor in bounds, the product not
        raise ScalesimError(f"{nics_per_node} NICs x {gbit_per_nic:g} Gbit/s gives a bus "
                            f"bandwidth of {busbw:,.6g} GB/s: {problem}; give fewer NICs or "
                            "slower ones", knobs=("nics_per_node", "gbit_per_nic"))
    return LinkLevel(
        kind=kind, busbw_GBps=busbw, latency_s=latency,
        nics_per_node=nics_per_node, gbit_per_nic=gbit_per_nic, algorithm=RING_SIMPLE,
        source=f"{nics_per_node}x{gbit_per_nic:g} Gb/s x {efficiency}: {why}. {source}".strip(),
    )


@dataclass(frozen=True)
class Price:
    """An on-demand list price of a cloud instance, with when and where it was listed."""

    instance: str
    usd_per_hour: float
    devices: int
    as_of: str
    source: str
    caveat: str = ""
    # GPUs of each shape the provider rents with this GPU at the same price per GPU-hour, as
    # listed with the price (scalesim.billing); None: only this instance, billed whole
    instance_sizes: tuple[int, ...] | None = None

    @property
    def per_device_hour(self) -> float:
        return self.usd_per_hour / self.devices

    def describe(self) -> str:
        text = (f"price: {self.instance} on-demand ${self.usd_per_hour:g}/h for {self.devices} "
                f"GPUs, listed {self.as_of} ({self.source})")
        sizes = ("billed whole" if self.instance_sizes is None else "also rented as "
                 + ", ".join(f"{n}" for n in self.instance_sizes) + " GPUs at the same price "
                 "per GPU")
        return text + f"; {sizes}" + (f"; {self.caveat}" if self.caveat else "")


_AWS_2025_CUT = ("AWS cut on-demand prices of P4 (p4d, p4de) and P5 instances by up to 45% in "
                 "June 2025 (reported by usage.ai and costnimbus.com, checked 2026-11; no AWS "
                 "price page was reachable from here to confirm the new rate): this pre-cut "
                 "list price is an upper bound, give today's with --price")
PRICES: dict[str, Price] = {
    "dgx1-v100": Price("AWS p3.16xlarge (8x V100 SXM2 16GB, NVLink)", 24.48, 8, "2017-10",
                       "aws.amazon.com/ec2/instance-types/p3, us-east-1 Linux (p3.2xlarge 1 "
                       "GPU $3.06/h, p3.8xlarge 4 GPUs $12.24/h)", "P3 was not "
                       "part of the June 2025 GPU price cut", instance_sizes=(1, 4, 8)),
    "dgx-a100": Price("AWS p4de.24xlarge (8x A100 SXM4 80GB)", 40.96608, 8, "2022-05",
                      "aws.amazon.com/ec2/instance-types/p4, us-east-1 Linux", _AWS_2025_CUT),
    "dgx-h100": Price("AWS p5.48xlarge (8x H100 SXM5 80GB)", 98.32, 8, "2023-07",
                      "aws.amazon.com/ec2/instance-types/p5, us-east-1 Linux; nextplatform.com "
                      "2023-07-27", _AWS_2025_CUT),
    # Not a hardware preset: the same GPUs as a2-highgpu-8g with a faster network, priced for
    # the network upgrade it stands for (scalesim/network_upgrades.py).
    "aws-p4d": Price("AWS p4d.24xlarge (8x A100 SXM4 40GB, 400 Gbps EFA)", 32.7726, 8, "2020-11",
                     "aws.amazon.com/ec2/instance-types/p4, us-east-1 Linux, at launch",
                     _AWS_2025_CUT),
    "a2-highgpu-8g": Price("Google Cloud a2-highgpu-8g (8x A100 40GB, GPUs included)", 29.387, 8,
                           "2024", "cloud.google.com/compute/gpus-pricing, us-central1; "
                           "shapes a2-highgpu-1g, -2g, -4g, -8g: cloud.google.com/compute/docs/"
                           "gpus#a100-gpus", "not re-checked: Google's price page was not "
                           "reachable from here", instance_sizes=(1, 2, 4, 8)),
}


def _server(name: str, device_name: str, memory_gib: int, cpu_cores: int, intra: str,
            inter: LinkLevel, source: str) -> Hardware:
    """A preset server of 8 ``device_name`` GPUs of ``memory_gib`` GiB, ``cpu_cores`` cores, the
    ``intra`` link (INTRA_LINKS) and ``inter``; a listed price (PRICES[name]) and its source
    where there is one."""
    price = PRICES.get(name)
    return Hardware(
        name=name, **_datasheet(device_name), devices_per_node=8,
        device_memory_bytes=memory_gib * GIB_BYTES, cpu_cores_per_node=cpu_cores,
        intra_node=intra_link(intra), inter_node=inter,
        price_per_device_hour=None if price is None else price.per_device_hour,
        instance_sizes=(None if price is None or price.instance_sizes is None
                        else list(price.instance_sizes)),
        source=source if price is None else f"{source}; {price.describe()}")


# Devices of one allocation unit (the node or compute tray a scheduler hands out) where it is
# smaller than the server, the NVLink domain (Hardware.devices_per_allocation, docs/model.md
# §12): matched like the datasheet tables above, first row first.
ALLOCATION_DEVICES: list[tuple[tuple[str, ...], int, str]] = [
    (("GB200",), 4, "NVIDIA GB200 NVL72 product page and datasheet: one rack of 18 compute trays, "
     "each 2 Grace CPUs + 4 Blackwell GPUs (two GB200 superchips) with its own NICs, joined by 9 "
     "NVLink switch trays into one 72-GPU NVLink domain; a scheduler hands out trays (Slurm "
     "topology/block: a node is a tray, a block the rack)"),
    (("GB300",), 4, "NVIDIA GB300 NVL72 product page: 18 compute trays of 4 Blackwell Ultra GPUs "
     "(and 2 Grace CPUs) per 72-GPU NVLink rack, as the GB200 NVL72"),
]


def allocation_devices_of(device_name: str) -> tuple[int, str] | None:
    """(devices, source) of the allocation unit of ``device_name``'s systems where it is not
    the server (GB200 / GB300 NVL72: a compute tray of 4 GPUs), or None (the server is the
    unit)."""
    row = _first_row(ALLOCATION_DEVICES, device_name)
    return None if row is None else (row[1], row[2])


def server_tray(device_name: str, devices_per_node: int) -> int | None:
    """Devices of one compute tray of a server of ``devices_per_node`` ``device_name`` GPUs
    (``allocation_devices_of``: a GB200 NVL72's 4) where trays of it fill the server, else
    None (the server is the unit: docs/model.md §12)."""
    tray = allocation_devices_of(device_name)
    return tray[0] if tray and devices_per_node % tray[0] == 0 else None


def _nvl72(name: str, device_name: str, cpu_cores: int, gbit_per_nic: float, nic_source: str,
           source: str) -> Hardware:
    """A preset NVL72 rack: 72 ``device_name`` GPUs in one NVLink domain, handed out in compute
    trays (``allocation_devices_of``), one NIC of ``gbit_per_nic`` per GPU on the trays;
    memory, peak and bandwidth from the datasheet tables."""
    tray, tray_source = allocation_devices_of(device_name)
    memory, memory_source = device_memory_of(device_name)
    return Hardware(
        name=name, **_datasheet(device_name), devices_per_node=72, devices_per_allocation=tray,
        device_memory_bytes=memory, cpu_cores_per_node=cpu_cores,
        intra_node=intra_link("nvl72-gb200"),
        inter_node=inter_link("infiniband", 72, gbit_per_nic, nic_source),
        source=f"{source}; trays: {tray_source}; memory: {memory_source}; no price listed (give "
               "yours with --price)")


HARDWARE: dict[str, Hardware] = {h.name: h for h in (
    _server("dgx1-v100", "Tesla V100-SXM2 16GB", 16, 40, "nvlink2",
            inter_link("infiniband", 4, 100, "DGX-1 datasheet: 4x 100 Gb/s EDR IB"),
            "NVIDIA DGX-1 datasheet (8x V100 SXM2 16GB, NVLink hybrid cube-mesh, 4x EDR IB, "
            "2x 20-core Xeon E5-2698 v4)"),
    _server("dgx-a100", "A100-SXM4 80GB", 80, 128, "nvswitch-a100",
            inter_link("infiniband", 8, 200, "DGX A100 datasheet: 8x 200 Gb/s HDR IB"),
            "NVIDIA DGX A100 datasheet (8x A100 80GB, 6 NVSwitches, 8x 200 Gb/s HDR IB, "
            "2x 64-core EPYC 7742)"),
    _server("dgx-h100", "H100-SXM5 80GB", 80, 112, "nvswitch-h100",
            inter_link("infiniband", 8, 400, "NVIDIA DGX H100 datasheet: 8x 400 Gb/s NDR"),
            "NVIDIA DGX H100 datasheet (8x H100 SXM5 80GB, NVLink4 NVSwitch, 8x 400 Gb/s "
            "ConnectX-7, 2x 56-core Xeon 8480C)"),
    _server("dgx-h200", "H200-SXM 141GB", 141, 112, "nvswitch-h100",
            inter_link("infiniband", 8, 400, "NVIDIA DGX H200 datasheet: 8x 400 Gb/s ConnectX-7"),
            "NVIDIA DGX H200 datasheet (8x H200 SXM 141GB, NVLink4 NVSwitch as the DGX H100's, "
            "8x 400 Gb/s ConnectX-7, 2x 56-core Xeon 8480C); no price listed (no public "
            "on-demand price page could be checked from here: give yours with --price)"),
    _server("a2-highgpu-8g", "A100-SXM4 40GB", 40, 48, "nvswitch-a100",
            inter_link("ethernet", 1, 100, "Google Cloud A2 machine types: a2-highgpu-8g has "
                       "100 Gbps maximum network bandwidth"),
            "Google Cloud Compute Engine GPU machine types, A2 standard: a2-highgpu-8g, 8x A100 "
            "40GB with NVSwitch, 96 vCPUs (48 cores), 100 Gbps networking"),
    _server("pcie-8gpu-100gbe", "A100-PCIe 80GB", 80, 64, "pcie4",
            inter_link("ethernet", 1, 100),
            "a generic 8-GPU PCIe 4.0 server (NVIDIA A100 PCIe datasheet: 80 GB, PCIe 4.0 x16) "
            "with one 100 Gb/s Ethernet NIC"),
    _server("pcie-8gpu-25gbe", "A100-PCIe 80GB", 80, 64, "pcie4",
            inter_link("ethernet", 1, 25),
            "a generic 8-GPU PCIe 4.0 server with one 25 Gb/s Ethernet NIC"),
)}

_DLE_BERT = ("NVIDIA DeepLearningExamples PyTorch/LanguageModeling/BERT README, DGX A100 80GB "
             "pre-training phase 1 (seq 128, FP16): 4553 seq/s on 8 GPUs at micro-batch 256, "
             "32 accumulation steps (global batch 65536)")
_DLE_RN50 = ("NVIDIA DeepLearningExamples MxNet/Classification/RN50v1.5 README, DGX-1 V100 16GB "
             "FP16: 1376 img/s on 1 GPU at batch 192")
_MPT7B = ("mosaicml/llm-foundry scripts/train/benchmarking/README.md, table 'A100 80GB with 1600 "
          "Gbps node-node interconnect (RoCE)': MPT 7b (6,667,247,616 params), seq 4096, 8 GPUs "
          "a100_80gb, micro-batch 16, accumulation 2, global batch 256, 3684 tokens/s per GPU, "
          "amp_bf16, FSDP FULL_SHARD, activation checkpointing (HFU 73.12 / MFU 54.84 = 4/3). "
          "Not Llama 2's 3014 tokens/s per GPU (Touvron et al. 2023: 184,320 GPU-hours for "
          "2.0T tokens), a cluster average whose devices and batch split are not published")
_KORTHIKANTI = ("activations per layer per sequence s*h*(34 + 5*a*s/h) bytes (Korthikanti et al. "
                "2022, eq. 1)")

# BERT-large, one model: the transformer preset (plan, diagnose --workload bert-large) and the
# data-parallel workload preset (predict, sweep, the app's default), whose activation bytes are
# this shape's. Sequence 128: pre-training phase 1 (_BERT), as the workload's DLE reference.
BERT_LARGE = TransformerShape(layers=24, hidden=1024, heads=16, seq_len=128, vocab=30522)
_BERT = ("Devlin et al. 2018, arXiv 1810.04805, §3: BERT-large L=24, H=1024, A=16, 340M; "
         "vocabulary 30,522 from google-research/bert's released config; sequence 128: "
         "pre-training phase 1 (Devlin et al. appendix A.2: 90% of the steps at sequence 128, the "
         "rest at 512; NVIDIA DLE's phase 1); plan --seq-len 512 gives phase 2. Counted here "
         f"{BERT_LARGE.param_count() / 1e6:.1f}M with {BERT_LARGE.seq_len} learned positions "
         f"({BERT_LARGE.model_copy(update={'seq_len': 512}).param_count() / 1e6:.1f}M with the "
         "released config's 512); Devlin's 340M also counts 512 positions, the pooler and the "
         "masked-LM head, which the shape does not")

WORKLOADS: dict[str, Workload] = {
    "resnet50": Workload(
        name="resnet50", params=25_557_032, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=8.0, reduce_bytes_per_param=2.0,
        activation_bytes_per_sample=60e6, micro_batch=192, sample_unit="images",
        train_samples=90 * 1_281_167,
        reference=[ReferenceThroughput(device_name="Tesla V100-SXM2 16GB", samples_per_s=1376,
                                       micro_batch=192, source=_DLE_RN50)],
        source="torchvision resnet50 parameter count; SGD momentum + fp32 master (8 B/param); "
        "gradients all-reduced in fp16 as the reference run does (DLE MXNet RN50: net.cast("
        "'float16'), Horovod all-reduces the fp16 gradients; a torch.autocast run reduces fp32: "
        "state reduce_bytes_per_param 4); "
        "activations ~60 MB/image in FP16 (an estimate below DLE's 16 GB / batch 192); "
        "training length 90 epochs of ImageNet-1k (1,281,167 images), Goyal et al. 2017",
    ),
    "bert-large": Workload(
        name="bert-large", params=336e6, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=12.0, reduce_bytes_per_param=2.0,
        activation_bytes_per_sample=BERT_LARGE.layers * float(activation_bytes_per_layer(
            1, BERT_LARGE.seq_len, BERT_LARGE.hidden, BERT_LARGE.heads, BERT_LARGE.kv_of(),
            BERT_LARGE.ffn_of(), BERT_LARGE.gated_mlp,
            flash_attention=BERT_LARGE.flash_attention)),
        micro_batch=32, sample_unit="sequences", layers=BERT_LARGE.layers,
        reference=[ReferenceThroughput(device_name="A100-SXM4 80GB", samples_per_s=4553 / 8,
                                       micro_batch=256, accumulation=32, devices=8,
                                       includes_communication=True, system="dgx-a100",
                                       source=_DLE_BERT)],
        source="BERT-large 336M parameters (DLE README); FP16 gradients (--fp16, model.half()) "
        "all-reduced in fp16 (DLE run.sub: --allreduce_post_accumulation_fp16; a torch.autocast "
        "run reduces fp32: state reduce_bytes_per_param 4); LAMB with fp32 "
        f"master, m, v (12 B/param); {_KORTHIKANTI} of the bert-large transformer preset's "
        f"shape (L={BERT_LARGE.layers}, s={BERT_LARGE.seq_len}, h={BERT_LARGE.hidden}, "
        f"a={BERT_LARGE.heads}: pre-training phase 1, as DLE's reference; plan and diagnose "
        "--workload bert-large use the same shape). Default micro-batch 32 is a knob, not "
        "DLE's 256",
    ),
    "gpt-7b": Workload(
        name="gpt-7b", params=6.74e9, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=12.0,
        activation_bytes_per_sample=4096 * 4096 * (2 * 31 + 34), activation_recompute=True,
        micro_batch=1,
        sample_unit="sequences of 4096 tokens", train_samples=2.0e12 / 4096,
        reference=[ReferenceThroughput(device_name="A100-SXM4 80GB", samples_per_s=3684 / 4096,
                                       micro_batch=16, accumulation=2, devices=8,
                                       strategy="zero3", includes_communication=True,
                                       system="dgx-a100", activation_recompute=True,
                                       source=_MPT7B)],
        source=f"Llama-2-7B shape (6.74B params, 32 layers, d=4096); bf16 weights and gradients, "
        "Adam fp32 state (12 B/param); full activation checkpointing as the reference run: "
        "the 2*s*h-byte input of each of the 32 layers kept plus one layer's activations "
        "during its recompute, 34*s*h, of which its kept input is one part, s*h*(2(L-1) + 34) "
        f"({_KORTHIKANTI}, full-recompute case 2*s*h*L, flash attention); 2.0T training "
        "tokens (Touvron et al. 2023). Compute from MPT-7B (6.67B params, same width and depth) "
        "on A100 80GB",
    ),
}

DEFAULT_HARDWARE = "a2-highgpu-8g"
DEFAULT_WORKLOAD = "bert-large"


def get_hardware(name: str) -> Hardware:
    """The hardware preset ``name``, its case aside (``preset_name``)."""
    return HARDWARE[preset_name(name, HARDWARE, "hardware preset",
                                " or give a JSON file (scalesim schema hardware)")]


def get_workload(name: str) -> Workload:
    """The workload preset ``name``: a data-parallel preset, else a transformer preset's
    workload (``transformer_workload``), the names the error below lists."""
    names = [*WORKLOADS, *(t for t in TRANSFORMERS if t not in WORKLOADS)]
    name = preset_name(name, names, "workload preset",
                       " or give a JSON file (scalesim schema workload)")
    return WORKLOADS[name] if name in WORKLOADS else transformer_workload(name)


# ---------------------------------------------------------------------------- transformer shapes
_NARAYANAN_T1 = ("Narayanan et al. 2021, arXiv 2104.04473, Table 1 (layers, hidden, heads; "
                 "sequence 2048, vocabulary 51,200, MLP 4h: paper appendix/§5.1)")
_LLAMA3 = ("Llama Team 2024, 'The Llama 3 Herd of Models', arXiv 2407.21783, Table 3 (layers, "
           "model dimension, FFN dimension, heads, 8 key/value heads, vocabulary 128,256); "
           "SwiGLU, RMSNorm, rotary positions, no biases, untied output layer; sequence 8,192")


def _gpt(layers: int, hidden: int, heads: int) -> TransformerShape:
    return TransformerShape(layers=layers, hidden=hidden, heads=heads, seq_len=2048, vocab=51200)


def _llama(layers: int, hidden: int, heads: int, ffn: int) -> TransformerShape:
    return TransformerShape(layers=layers, hidden=hidden, heads=heads, kv_heads=8, ffn_hidden=ffn,
                            gated_mlp=True, seq_len=8192, vocab=128256, tied_embeddings=False,
                            learned_positions=False, biases=False, layernorm=False,
                            flash_attention=True)


# name -> (shape, published parameter count, source)
TRANSFORMERS: dict[str, tuple[TransformerShape, float, str]] = {
    "gpt-1.7b": (_gpt(24, 2304, 24), 1.7e9, _NARAYANAN_T1),
    "gpt-3.6b": (_gpt(30, 3072, 32), 3.6e9, _NARAYANAN_T1),
    "gpt-7.5b": (_gpt(36, 4096, 32), 7.5e9, _NARAYANAN_T1),
    "gpt-18.4b": (_gpt(40, 6144, 48), 18.4e9, _NARAYANAN_T1),
    "gpt-39.1b": (_gpt(48, 8192, 64), 39.1e9, _NARAYANAN_T1),
    "gpt-76.1b": (_gpt(60, 10240, 80), 76.1e9, _NARAYANAN_T1),
    "gpt-145.6b": (_gpt(80, 12288, 96), 145.6e9, _NARAYANAN_T1),
    "gpt-310.1b": (_gpt(96, 16384, 128), 310.1e9, _NARAYANAN_T1),
    "gpt-529.6b": (_gpt(105, 20480, 128), 529.6e9, _NARAYANAN_T1),
    "gpt-1t": (_gpt(128, 25600, 160), 1008.0e9, _NARAYANAN_T1),
    "llama3-8b": (_llama(32, 4096, 32, 14336), 8.0e9, _LLAMA3),
    "llama3-70b": (_llama(80, 8192, 64, 28672), 70.6e9, _LLAMA3),
    "llama3-405b": (_llama(126, 16384, 128, 53248), 405e9, _LLAMA3),
    "bert-large": (BERT_LARGE, 340e6, _BERT),
}


def get_transformer(name: str) -> TransformerShape:
    """The preset transformer shape ``name`` (see TRANSFORMERS). A data-parallel workload preset
    without a shape (resnet50, gpt-7b) is refused as such, not as an unknown name."""
    alternative = (" or give a workload JSON file with a 'transformer' shape (scalesim schema "
                   "workload)")
    if name in WORKLOADS and name not in TRANSFORMERS:
        raise ScalesimError(f"workload preset '{name}' is a parameter count with no transformer "
                            f"shape to split; choose one of {', '.join(TRANSFORMERS)}{alternative}")
    return TRANSFORMERS[preset_name(name, TRANSFORMERS, "transformer preset", alternative)][0]


def transformer_workload(name: str, precision_bytes: float = 2.0) -> Workload:
    """A workload of the preset transformer ``name``: 16-bit weights, gradients and wire,
    mixed-precision Adam (12 bytes/parameter), one sequence per sample. Its parameters are the
    shape's count (``TransformerShape.param_count``), as ``plan`` counts them, not the paper's
    rounded figure (gpt-1.7b: 1.65B), so one preset is one model in every command."""
    shape, published, source = TRANSFORMERS[name] if name in TRANSFORMERS else (
        get_transformer(name), None, "")  # get_transformer refuses a name it does not list
    return Workload(
        name=name, params=shape.param_count(), wire_bytes_per_param=precision_bytes,
        param_bytes_per_param=precision_bytes, grad_bytes_per_param=precision_bytes,
        optimizer_bytes_per_param=12.0, micro_batch=1,
        sample_unit=f"sequences of {shape.seq_len} tokens", transformer=shape, source=source)


# Memory of one device when its name does not carry the size ("A100 40GB" does; GiB as the
# hardware presets above count it). A100 comes in 40 and 80 GB, so it needs the size in the name
# (so do the A800, V100, P100 and M40: SOLD_MEMORY_GB). Matched like MEMORY_BANDWIDTH_GBPS.
DEVICE_MEMORY_GIB: list[tuple[tuple[str, ...], float | None, str]] = [
    (("Laptop",), None, "laptop GPUs: other memory than the desktop card of that number (NVIDIA "
     "GeForce RTX 4090 Laptop GPU product page: 16 GB): not listed"),
    (("GB200",), 186.0, "NVIDIA GB200 NVL72 datasheet: 13.4 TB HBM3e over 72 GPUs = 186 GB each"),
    (("GB300",), 288.0, "NVIDIA Technical Blog, 'Inside NVIDIA Blackwell Ultra' (developer."
     "nvidia.com, 2025): 288 GB HBM3e per Blackwell Ultra GPU, as NVIDIA's NIM support matrices "
     "list GB300 (docs.nvidia.com/nim/bionemo/boltz2/1.8.0/support-matrix.html); the rack's "
     "quoted '20 TB' is 72 x 288 GB = 20.7 TB rounded down (session 16's 278 divided it)"),
    (("B300",), 288.0, "NVIDIA Technical Blog, 'Inside NVIDIA Blackwell Ultra' (developer."
     "nvidia.com, 2025): 288 GB HBM3e per Blackwell Ultra GPU; NIM support matrices: 'NVIDIA "
     "B300 (NVIDIA-B300-SXM6-AC)' 288 GB (docs.nvidia.com/nim/bionemo/boltz2/1.8.0/"
     "support-matrix.html; verda.com lists 270 GB: docs/model.md; listed after 'GB300', which "
     "its name contains)"),
    (("H100", "NVL"), 94.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 NVL 94 GB HBM3"),
    (("H100",), 80.0, "NVIDIA H100 SXM datasheet and DGX H100 (640 GB over 8 GPUs): 80 GB"),
    (("H800",), 80.0, "NVIDIA H800 Tensor Core GPU datasheet (China market): 80 GB, SXM5 and PCIe"),
    (("GH200", "144G"), 144.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 144 GB HBM3e"),
    (("GH200",), 96.0, "NVIDIA GH200 Grace Hopper Superchip datasheet: 96 GB HBM3"),
    (("H200",), 141.0, "NVIDIA H200 Tensor Core GPU datasheet: 141 GB HBM3e (SXM and NVL)"),
    (("H20",), 96.0, "NVIDIA publishes no H20 datasheet; secondary: partners' spec sheets as "
     "reported in November 2023 (SemiAnalysis, Tom's Hardware): 96 GB HBM3 (a later board states "
     "its 141 GB in the name; listed after 'H200' and 'GH200', whose names contain it)"),
    (("L40",), 48.0, "NVIDIA L40S and L40 datasheets: 48 GB GDDR6"),
    (("L4",), 24.0, "NVIDIA L4 datasheet: 24 GB GDDR6 (after 'L40', inside its name)"),
    (("A10G",), 24.0, "AWS EC2 G5 instance types: NVIDIA A10G Tensor Core GPU, 24 GB per GPU"),
    (("A10",), 24.0, "NVIDIA A10 datasheet: 24 GB GDDR6 (after 'A10G', inside its name)"),
    (("A30",), 24.0, "NVIDIA A30 datasheet: 24 GB HBM2"),
    (("A4000",), 16.0, "NVIDIA RTX A4000 datasheet: 16 GB GDDR6 (before 'A40', inside its name)"),
    (("A40",), 48.0, "NVIDIA A40 datasheet: 48 GB GDDR6"),
    (("A5000",), 24.0, "NVIDIA RTX A5000 datasheet: 24 GB GDDR6"),
    (("A6000",), 48.0, "NVIDIA RTX A6000 datasheet: 48 GB GDDR6"),
    (("RTX6000", "Ada"), 48.0, "NVIDIA RTX 6000 Ada Generation datasheet: 48 GB GDDR6"),
    (("Quadro", "RTX6000"), 24.0, "NVIDIA Quadro RTX 6000 datasheet: 24 GB GDDR6"),
    (("RTX8000",), 48.0, "NVIDIA Quadro RTX 8000 datasheet: 48 GB GDDR6"),
    (("TITANV",), 12.0, "NVIDIA TITAN V product page: 12 GB HBM2"),
    (("TITANRTX",), 24.0, "NVIDIA TITAN RTX product page: 24 GB GDDR6"),
    (("TITANX", "Pascal"), 12.0, "NVIDIA TITAN X (Pascal) product page: 12 GB GDDR5X"),
    (("TITANXp",), 12.0, "NVIDIA TITAN Xp product page: 12 GB GDDR5X"),
    (("RTX5090",), 32.0, "NVIDIA GeForce RTX 5090 product page: 32 GB GDDR7"),
    (("RTX4090",), 24.0, "NVIDIA Ada Lovelace architecture whitepaper: GeForce RTX 4090, 24 GB "
     "GDDR6X (the RTX 4090 D: 24 GB too)"),
    (("RTX3090",), 24.0, "NVIDIA GeForce RTX 3090 and 3090 Ti product pages: 24 GB GDDR6X"),
    (("RTX2080Ti",), 11.0, "NVIDIA Turing GPU architecture whitepaper: GeForce RTX 2080 Ti, 11 GB "
     "GDDR6"),
    (("GTX1080Ti",), 11.0, "NVIDIA GeForce GTX 1080 Ti product page: 11 GB GDDR5X"),
    (("T4",), 16.0, "NVIDIA T4 datasheet: 16 GB GDDR6"),
    (("P40",), 24.0, "NVIDIA Tesla P40 datasheet: 24 GB GDDR5"),
    (("P4",), 8.0, "NVIDIA Tesla P4 datasheet: 8 GB GDDR5 (after 'P40', inside its name)"),
    (("M60",), 8.0, "NVIDIA Tesla M60 datasheet: 2x 8 GB per board of two GM204 devices"),
    (("K80",), 12.0, "NVIDIA Tesla K80 datasheet: 24 GB per board of two GK210 devices, 12 each"),
    (("K40",), 12.0, "NVIDIA Tesla K40 datasheet: 12 GB GDDR5"),
    (("B200",), 180.0, "NVIDIA Blackwell datasheet table: HGX B200 180 GB HBM3e per GPU (after "
     "'GB200', which its name contains)"),
    (("MI325X",), 256.0, "AMD Instinct MI325X data sheet: 256 GB HBM3E"),
    (("MI300X",), 192.0, "AMD Instinct MI300X data sheet: 192 GB HBM3"),
    (("MI300A",), 128.0, "AMD Instinct MI300A data sheet: 128 GB unified HBM3 (shared with its "
     "CPU cores)"),
    (("MI250X",), 64.0, "AMD Instinct MI250X data sheet: 128 GB HBM2e per OAM of two GCDs, each "
     "one device to PyTorch: 64 per device (listed before 'MI250')"),
    (("MI250",), 64.0, "AMD Instinct MI250 data sheet: 128 GB HBM2e per OAM of two GCDs, each one "
     "device to PyTorch: 64 per device"),
    (("MI210",), 64.0, "AMD Instinct MI210 data sheet: 64 GB HBM2e"),
    (("MI100",), 32.0, "AMD Instinct MI100 data sheet: 32 GB HBM2"),
]
# Names whose stated size is not the GPU's memory: nvidia-smi's "NVIDIA GH200 480GB" states the
# superchip's 480 GB of LPDDR5X CPU memory (GH200 datasheet), its GPU holds 96 GB HBM3.
SIZE_NOT_IN_NAME = (("GH200",),)


# The memory sizes, GB, a GPU sold in several is made with (the size a name states must be one):
# matched like the tables above, first row first.
SOLD_MEMORY_GB = [
    (("A100",), (40, 64, 80), "NVIDIA A100 Tensor Core GPU datasheet: A100 40GB and 80GB, PCIe "
     "and SXM; 64 GB: the custom A100 SXM4 64GB of CINECA's Leonardo booster (4 per node, "
     "leonardo-supercomputer.cineca.eu/hpc-system)"),
    (("V100",), (16, 32), "NVIDIA Tesla V100 datasheet: 16 GB or 32 GB HBM2 (V100S: 32 GB)"),
    (("H100",), (80, 94, 96), "NVIDIA H100 Tensor Core GPU datasheet: SXM and PCIe 80 GB, NVL "
     "94 GB; 96 GB: the Hopper GPU of a GH200 (GH200 datasheet, DEVICE_MEMORY_GIB)"),
    (("A800",), (40, 80), "NVIDIA A800 datasheet (China market): A800 40GB PCIe, 80GB PCIe and SXM"),
    (("P100",), (12, 16), "NVIDIA Tesla P100 datasheet: PCIe 12 GB or 16 GB, SXM2 16 GB"),
    (("Tesla", "M40"), (12, 24), "NVIDIA Tesla M40 datasheets: 12 GB and 24 GB GDDR5 ('Tesla' too: "
     "a 'Quadro M4000 8GB' holds 'M40')"),
]


# A token right before "GB" ("80GB", "40 GB", "1e308GB"): letters, digits, dots and signs, not
# part of a longer word ("A100-SXM4-80GB" gives 80; "GB200" has no size). The token is found
# alone, then checked for a digit: one pass over the name (a digit inside the pattern made the
# search quadratic: 3,000 digits took 10 s).
_STATED_SIZE = re.compile(r"(?<![\w.+])([\w.+]+?)\s*GB\b", re.IGNORECASE)
_PLAIN_SIZE = re.compile(r"\d{1,4}(?:\.\d+)?")
# A size written in another unit than the datasheets' GB ("80GiB", "80G", "0.5TB"): the tables
# match "80GB", so such a name read the A100 40GB's figures; not a MIG profile's "1g.5gb"
_OTHER_UNIT = re.compile(r"(?<![\w.+])(\d+(?:\.\d+)?\s*(?:GiB|TiB|TB|MiB|MB|G))(?![\w.])",
                         re.IGNORECASE)


# Sizes the datasheet tables themselves match with a "G" ("GH200 144G", "H20 141G"): those
# names are read by their rows, not refused as another unit
_TABLE_G_SIZES = frozenset(word.upper() for table in (MEMORY_BANDWIDTH_GBPS, DEVICE_MEMORY_GIB)
                           for row in table for word in row[0] if re.fullmatch(r"\d+G", word))


def _size_text(match: re.Match) -> str:
    """An ``_OTHER_UNIT`` match without its spaces ("80 GiB" -> "80GiB")."""
    return re.sub(r"\s", "", match.group(1))


def _table_size(match: re.Match) -> bool:
    """Whether an ``_OTHER_UNIT`` match is a size the tables read themselves (``_TABLE_G_SIZES``)."""
    return _size_text(match).upper() in _TABLE_G_SIZES


def _stated_sizes(device_name: str) -> list[tuple[str, float | None]]:
    """(text, GB) of every memory size ``device_name`` states, in order: GB None where the text
    is not a plain size of 1 to 9999 GB ("1e308GB", "0GB")."""
    sizes = []
    for stated in _STATED_SIZE.finditer(device_name):
        text = stated.group(1)
        if not any(c.isdigit() for c in text):
            continue
        plain = _PLAIN_SIZE.fullmatch(text) is not None and float(text) > 0
        sizes.append((text, float(text) if plain else None))
    return sizes


def _stated_size(device_name: str) -> tuple[str, float | None] | None:
    """(text, GB) of the memory size ``device_name`` states first: GB None where the text is not
    a plain size of 1 to 9999 GB ("1e308GB", "0GB"); None where the name states no size."""
    sizes = _stated_sizes(device_name)
    return sizes[0] if sizes else None


_TO_GB = {"G": 1.0, "GIB": 1.0, "MIB": 1 / 1024, "MB": 1e-3, "TB": 1e3, "TIB": 1024.0}


def gb_spelling(device_name: str) -> str:
    """``device_name`` with each memory size written in another unit than the datasheets' GB
    ("A100 80G", "A100 80GiB", "81920 MiB", "0.5TB") rewritten as a whole number of GB ("80GB",
    "500GB"), so the tables read the size the name means; a GiB or MiB figure is taken as the
    nominal size in GB that it is the binary reading of (nvidia-smi's 81920 MiB on an 80 GB
    card). For published names the project does not control (validation cases), where
    ``--gpu`` refuses such a name instead (``stated_memory_problem``)."""
    def spelled(match: re.Match) -> str:
        if _table_size(match):
            return match.group(1)
        number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]+)", _size_text(match)).groups()
        return f"{round(float(number) * _TO_GB[unit.upper()])}GB"

    return _OTHER_UNIT.sub(spelled, device_name)


def stated_memory_problem(device_name: str) -> str | None:
    """Why the memory size ``device_name`` states ("A100 4GB", "H100 1e308GB") is not one to plan
    on, in words: not a plain size in GB, two sizes ("A100 40GB 80GB"), a size in another unit
    ("A100 80GiB", read as no size while the tables took the A100 40GB's bandwidth), or not one
    its GPU is sold with (``SOLD_MEMORY_GB``); None when it is, or when no size or no list
    applies."""
    if any(name_has_words(device_name, words) for words in SIZE_NOT_IN_NAME):
        return None  # the size in the name is not the GPU's memory
    other = next((m for m in _OTHER_UNIT.finditer(device_name) if not _table_size(m)), None)
    if other is not None:
        return (f"states its memory as {excerpt(other.group(1))}, not in GB; write the size as "
                "the datasheets do, a plain number of GB such as 80GB")
    sizes = _stated_sizes(device_name)
    if not sizes:
        return None
    text, size = sizes[0]
    if size is None:
        return (f"states its memory as {excerpt(text)} GB, not a number from 1 to 9999; write "
                "the size as a plain number of GB such as 80GB")
    plain = [t for t, gb in sizes if gb is not None]  # not a MIG profile's "1g.5gb"
    if len({float(t) for t in plain}) > 1:
        shown = ", ".join(excerpt(t) for t in plain[:3]) + (", ..." if len(plain) > 3 else "")
        return f"states more than one memory size ({shown} GB); keep the one of this GPU"
    row = _first_row(SOLD_MEMORY_GB, device_name)
    if row is None or size in row[1]:
        return None
    sizes_sold = ", ".join(str(n) for n in row[1])
    return (f"states {text} GB, but the {' '.join(row[0])} is sold with {sizes_sold} GB "
            f"({row[2]})")


def device_memory_of(device_name: str) -> tuple[float, str] | None:
    """(bytes, source) of one device's memory: the size the name states ("A100 40GB",
    "H100 SXM 96GB HBM2e"), else the datasheet size of a device sold in one size; None when
    neither (an A100 without its size)."""
    stated = _stated_size(device_name)
    if (stated is not None and stated[1] is not None
            and not any(name_has_words(device_name, words) for words in SIZE_NOT_IN_NAME)):
        return stated[1] * GIB_BYTES, f"the size in the name '{device_name}'"
    row = _first_row(DEVICE_MEMORY_GIB, device_name)
    return None if row is None or row[1] is None else (row[1] * GIB_BYTES, row[2])


# The NVL72 rack preset, after the memory table it reads (device_memory_of)
HARDWARE["gb200-nvl72"] = (
    _nvl72("gb200-nvl72", "GB200", 72 * 36, 400.0,
           "GB200 NVL72 compute trays: one ConnectX-7 400 Gb/s InfiniBand NIC per GPU (NVIDIA "
           "GB200 NVL72 reference architecture)",
           "NVIDIA GB200 NVL72 (one rack: 72 Blackwell GPUs and 36 Grace CPUs of 72 cores, "
           "fifth-generation NVLink 1.8 TB/s per GPU across the rack); the server here is the "
           "rack's NVLink domain")
)


def presets_holding_tp(tp: int, above: int) -> list[tuple[str, int]]:
    """(name, GPUs per server a job of tensor-parallel size ``tp`` uses there: the largest
    multiple of ``tp`` the server holds) of each hardware preset whose server, one NVLink
    domain, holds at least ``tp`` GPUs and more than ``above``: the presets that take a tp
    past today's server (``layout.tp_above_server``)."""
    return [(name, hw.devices_per_node // tp * tp) for name, hw in HARDWARE.items()
            if hw.devices_per_node >= tp and hw.devices_per_node > above]
