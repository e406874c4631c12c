"""Built-in hardware and workload presets, each number with its public source.

Link bandwidths are nccl-tests *bus* bandwidths. Where a maintainer or user published a
measurement for the system it is used as is (scalesim/data/validation/interconnect.json collects
them). Where none exists the preset derives one from the link's line rate and an efficiency
measured on a comparable link, and says so in ``source``:

- NVLink/NVSwitch/PCIe inside a server: ``0.8 x`` the per-direction line rate per GPU. The NCCL
  maintainer puts effective NVLink3 bandwidth at ~20 of 25 GB/s per link (nccl-tests#149), and
  measured A100 (230 of 300) and H100 (~370 of 450) bus bandwidths agree.
- InfiniBand/RoCE across servers: ``0.96 x`` the node's NIC line rate: 192 GB/s measured on
  8x200 Gb/s (nccl#812 via nccl#1576) and ~48 GB/s on 4x100 Gb/s (nccl-tests#29).
- Ethernet with TCP sockets: ``0.94 x`` line rate, the TCP payload share of a 1500-byte MTU frame
  (1448 of 1538 bytes on the wire with timestamps), an upper bound for NCCL's socket transport.

Latencies (alpha per algorithm step) are typical orders of magnitude, not measurements: ~2 us
per NVLink/NVSwitch hop, ~5 us per PCIe hop, ~6 us for InfiniBand/RoCE, ~30 us for TCP over
Ethernet. They matter only for small messages; calibrate to replace them.
"""

from __future__ import annotations

from scalesim.errors import ScalesimError
from scalesim.schemas import Hardware, LinkLevel, ReferenceThroughput, Workload

GIB = 1024**3
INTRA_EFFICIENCY = 0.8
IB_EFFICIENCY = 0.96
TCP_EFFICIENCY = 0.94

_NCCL_149 = "NVIDIA/nccl-tests#149 (NCCL maintainer: ~230 GB/s busbw, 8x A100 NVSwitch)"
_NCCL_212 = "NVIDIA/nccl-tests#212 (NCCL maintainer: ~370 GB/s effective, 8x H100 NVLink4)"
_NCCL_29 = "NVIDIA/nccl-tests#29 (NCCL maintainer: ~48 GB/s busbw, DGX-1 4x100 Gb/s EDR IB)"
_NCCL_812 = "NVIDIA/nccl#812 quoted in nccl#1576 (192 GB/s busbw, DGX A100 8x200 Gb/s HDR IB)"

# Intra-server link kinds: (per-direction line rate per GPU in GB/s, measured busbw or None, source)
INTRA_LINKS: dict[str, tuple[float, float | None, str, float]] = {
    "pcie3": (15.75, None, "PCIe 3.0 x16: 8 GT/s x 16 lanes, 128b/130b = 15.75 GB/s", 5e-6),
    "pcie4": (31.5, None, "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s", 5e-6),
    "pcie5": (63.0, None, "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s", 5e-6),
    "nvlink1": (80.0, None, "P100 NVLink 1: 4 links x 20 GB/s per direction (DGX-1 P100)", 2e-6),
    "nvlink2": (150.0, None, "V100 NVLink 2: 6 links x 25 GB/s per direction (DGX-1V)", 2e-6),
    "nvswitch-v100": (150.0, None, "DGX-2 NVSwitch: 300 GB/s bidirectional per GPU (pcper.com, "
                      "2018-03, vendor spec)", 2e-6),
    "nvswitch-a100": (300.0, 230.0, _NCCL_149, 2e-6),
    "nvswitch-h100": (450.0, 370.0, _NCCL_212, 2e-6),
}


def intra_link(kind: str) -> LinkLevel:
    """The preset intra-server link of ``kind`` (see INTRA_LINKS)."""
    if kind not in INTRA_LINKS:
        raise ScalesimError(f"unknown intra-node link '{kind}'; known: {', '.join(INTRA_LINKS)}")
    line_rate, measured, source, latency = INTRA_LINKS[kind]
    if measured is not None:
        return LinkLevel(kind=kind, busbw_GBps=measured, latency_s=latency, source=source)
    return LinkLevel(
        kind=kind, busbw_GBps=round(INTRA_EFFICIENCY * line_rate, 2), latency_s=latency,
        source=f"{INTRA_EFFICIENCY} x line rate; {source}; efficiency from {_NCCL_149}",
    )


# The PCIe generation that joins each intra-node link kind's GPUs to their host CPU (NVLink and
# NVSwitch join GPUs to each other only): P100/V100 SXM2/SXM3 boards attach over PCIe 3.0 x16
# (NVIDIA DGX-1 and DGX-2 datasheets), A100 SXM4 over PCIe 4.0 x16 (DGX A100 datasheet), H100 SXM5
# over PCIe 5.0 x16 (DGX H100 datasheet). Used for parameter servers on the host CPU.
HOST_PCIE_OF_INTRA: dict[str, str] = {
    "pcie3": "pcie3", "pcie4": "pcie4", "pcie5": "pcie5",
    "nvlink1": "pcie3", "nvlink2": "pcie3", "nvswitch-v100": "pcie3",
    "nvswitch-a100": "pcie4", "nvswitch-h100": "pcie5",
}


def host_link(intra_kind: str) -> LinkLevel:
    """One device's PCIe link to its host CPU in a server whose GPUs use ``intra_kind``."""
    if intra_kind not in HOST_PCIE_OF_INTRA:
        raise ScalesimError(
            f"unknown intra-node link '{intra_kind}'; known: {', '.join(HOST_PCIE_OF_INTRA)}"
        )
    pcie = intra_link(HOST_PCIE_OF_INTRA[intra_kind])
    return pcie.model_copy(update={"source": f"device-to-host link of {intra_kind}: {pcie.source}"})


# Device memory bandwidth, GB/s, from the vendors' datasheets, matched on the device name (every
# listed word must appear, case-insensitive; the first match wins). Used to estimate the
# optimizer step (``scalesim.model.compute.optimizer_roofline_s``) where nothing measured it.
MEMORY_BANDWIDTH_GBPS: list[tuple[tuple[str, ...], float, str]] = [
    (("H100",), 3350.0, "NVIDIA H100 Tensor Core GPU datasheet: H100 SXM 80 GB HBM3, 3.35 TB/s"),
    (("A100", "PCIe", "80GB"), 1935.0, "NVIDIA A100 datasheet: A100 80GB PCIe, 1,935 GB/s"),
    (("A100", "80GB"), 2039.0, "NVIDIA A100 datasheet: A100 80GB SXM, 2,039 GB/s"),
    (("A100",), 1555.0, "NVIDIA A100 datasheet: A100 40GB, 1,555 GB/s"),
    (("V100",), 900.0, "NVIDIA Tesla V100 datasheet: 900 GB/s HBM2 (SXM2 and PCIe)"),
    (("P100",), 732.0, "NVIDIA Tesla P100 datasheet: 732 GB/s (SXM2 and PCIe 16 GB)"),
    (("K80",), 240.0, "NVIDIA Tesla K80 datasheet: 480 GB/s per board of two GK210 devices"),
]


def memory_bandwidth_of(device_name: str) -> tuple[float, str] | None:
    """(GB/s, source) of the device memory of ``device_name``, or None when not listed."""
    name = device_name.lower().replace(" ", "").replace("-", "")
    for words, bandwidth, source in MEMORY_BANDWIDTH_GBPS:
        if all(word.lower() in name for word in words):
            return bandwidth, source
    return None


def _datasheet_bandwidth(device_name: str) -> float:
    return memory_bandwidth_of(device_name)[0]


def inter_link(kind: str, nics_per_node: int, gbit_per_nic: float, source: str = "") -> LinkLevel:
    """A preset inter-server link: ``nics_per_node`` NICs of ``gbit_per_nic`` Gbit/s each."""
    line_GBps = nics_per_node * gbit_per_nic / 8.0
    if kind in ("infiniband", "roce"):
        efficiency, latency, why = IB_EFFICIENCY, 6e-6, f"efficiency from {_NCCL_812}; {_NCCL_29}"
    elif kind == "ethernet":
        efficiency, latency, why = TCP_EFFICIENCY, 30e-6, "TCP payload share of a 1500 B frame"
    else:
        raise ScalesimError(f"unknown inter-node link '{kind}'; use infiniband, roce or ethernet")
    return LinkLevel(
        kind=kind, busbw_GBps=round(efficiency * line_GBps, 3), latency_s=latency,
        nics_per_node=nics_per_node, gbit_per_nic=gbit_per_nic,
        source=f"{nics_per_node}x{gbit_per_nic:g} Gb/s x {efficiency}: {why}. {source}".strip(),
    )


HARDWARE: dict[str, Hardware] = {
    "dgx1-v100": Hardware(
        name="dgx1-v100", device_name="Tesla V100-SXM2 16GB", devices_per_node=8,
        device_memory_bytes=16 * GIB, peak_tflops=125.0, cpu_cores_per_node=40,
        memory_bandwidth_GBps=_datasheet_bandwidth("Tesla V100-SXM2 16GB"),
        intra_node=intra_link("nvlink2"),
        inter_node=LinkLevel(kind="infiniband", busbw_GBps=48.0, latency_s=6e-6, nics_per_node=4,
                             gbit_per_nic=100, source=_NCCL_29),
        price_per_device_hour=31.212 / 8,
        source="NVIDIA DGX-1 datasheet (8x V100 SXM2, NVLink hybrid cube-mesh, 4x EDR IB, "
        "2x 20-core Xeon E5-2698 v4); price: AWS p3dn.24xlarge on-demand $31.212/h (us-east-1)",
    ),
    "dgx-a100": Hardware(
        name="dgx-a100", device_name="A100-SXM4 80GB", devices_per_node=8,
        device_memory_bytes=80 * GIB, peak_tflops=312.0, cpu_cores_per_node=128,
        memory_bandwidth_GBps=_datasheet_bandwidth("A100-SXM4 80GB"),
        intra_node=intra_link("nvswitch-a100"),
        inter_node=LinkLevel(kind="infiniband", busbw_GBps=192.0, latency_s=6e-6, nics_per_node=8,
                             gbit_per_nic=200, source=_NCCL_812),
        price_per_device_hour=32.7726 / 8,
        source="NVIDIA DGX A100 datasheet (8x A100 80GB, 6 NVSwitches, 8x 200 Gb/s HDR IB, "
        "2x 64-core EPYC 7742); price: AWS p4d.24xlarge on-demand $32.7726/h (us-east-1)",
    ),
    "dgx-h100": Hardware(
        name="dgx-h100", device_name="H100-SXM5 80GB", devices_per_node=8,
        device_memory_bytes=80 * GIB, peak_tflops=989.0, cpu_cores_per_node=112,
        memory_bandwidth_GBps=_datasheet_bandwidth("H100-SXM5 80GB"),
        intra_node=intra_link("nvswitch-h100"),
        inter_node=inter_link("infiniband", 8, 400, "NVIDIA DGX H100 datasheet: 8x 400 Gb/s NDR"),
        price_per_device_hour=98.32 / 8,
        source="NVIDIA DGX H100 datasheet (8x H100 SXM5 80GB, NVLink4 NVSwitch, 8x 400 Gb/s "
        "ConnectX-7, 2x 56-core Xeon 8480C); price: AWS p5.48xlarge on-demand $98.32/h",
    ),
    "a2-highgpu-8g": Hardware(
        name="a2-highgpu-8g", device_name="A100-SXM4 40GB", devices_per_node=8,
        device_memory_bytes=40 * GIB, peak_tflops=312.0, cpu_cores_per_node=48,
        memory_bandwidth_GBps=_datasheet_bandwidth("A100-SXM4 40GB"),
        intra_node=intra_link("nvswitch-a100"),
        inter_node=inter_link("ethernet", 1, 100, "Google Cloud A2 machine types: a2-highgpu-8g "
                              "has 100 Gbps maximum network bandwidth"),
        price_per_device_hour=29.387 / 8,
        source="Google Cloud Compute Engine GPU machine types, A2 standard: a2-highgpu-8g, 8x A100 "
        "40GB with NVSwitch, 96 vCPUs (48 cores), 100 Gbps networking; price: Google Cloud "
        "on-demand a2-highgpu-8g $29.387/h (us-central1, GPUs included)",
    ),
    "pcie-8gpu-100gbe": Hardware(
        name="pcie-8gpu-100gbe", device_name="A100-PCIe 80GB", devices_per_node=8,
        device_memory_bytes=80 * GIB, peak_tflops=312.0, cpu_cores_per_node=64,
        memory_bandwidth_GBps=_datasheet_bandwidth("A100-PCIe 80GB"),
        intra_node=intra_link("pcie4"),
        inter_node=inter_link("ethernet", 1, 100),
        price_per_device_hour=None,
        source="a generic 8-GPU PCIe 4.0 server (NVIDIA A100 PCIe datasheet: 80 GB, PCIe 4.0 x16) "
        "with one 100 Gb/s Ethernet NIC",
    ),
    "pcie-8gpu-25gbe": Hardware(
        name="pcie-8gpu-25gbe", device_name="A100-PCIe 80GB", devices_per_node=8,
        device_memory_bytes=80 * GIB, peak_tflops=312.0, cpu_cores_per_node=64,
        memory_bandwidth_GBps=_datasheet_bandwidth("A100-PCIe 80GB"),
        intra_node=intra_link("pcie4"),
        inter_node=inter_link("ethernet", 1, 25),
        price_per_device_hour=None,
        source="a generic 8-GPU PCIe 4.0 server with one 25 Gb/s Ethernet NIC",
    ),
}

_DLE_BERT = ("NVIDIA DeepLearningExamples PyTorch/LanguageModeling/BERT README, DGX A100 80GB "
             "pre-training phase 1 (seq 128, FP16): 4553 seq/s on 8 GPUs at micro-batch 256, "
             "32 accumulation steps (global batch 65536)")
_DLE_RN50 = ("NVIDIA DeepLearningExamples MxNet/Classification/RN50v1.5 README, DGX-1 V100 16GB "
             "FP16: 1376 img/s on 1 GPU at batch 192")
_LLAMA2 = ("Touvron et al. 2023, Llama 2 (arXiv:2307.09288): 7B trained on 2.0T tokens in "
           "184,320 A100-80GB GPU-hours = 3014 tokens/s per GPU; 4096-token sequences")
_KORTHIKANTI = ("activations per layer per sequence s*h*(34 + 5*a*s/h) bytes (Korthikanti et al. "
                "2022, eq. 1)")

WORKLOADS: dict[str, Workload] = {
    "resnet50": Workload(
        name="resnet50", params=25_557_032, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=8.0,
        activation_bytes_per_sample=60e6, micro_batch=192, sample_unit="images",
        train_samples=90 * 1_281_167,
        reference=[ReferenceThroughput(device_name="Tesla V100-SXM2 16GB", samples_per_s=1376,
                                       micro_batch=192, source=_DLE_RN50)],
        source="torchvision resnet50 parameter count; SGD momentum + fp32 master (8 B/param); "
        "activations ~60 MB/image in FP16 (an estimate below DLE's 16 GB / batch 192); "
        "training length 90 epochs of ImageNet-1k (1,281,167 images), Goyal et al. 2017",
    ),
    "bert-large": Workload(
        name="bert-large", params=336e6, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=12.0,
        activation_bytes_per_sample=24 * 128 * 1024 * (34 + 5 * 16 * 128 / 1024),
        micro_batch=32, sample_unit="sequences",
        reference=[ReferenceThroughput(device_name="A100-SXM4 80GB", samples_per_s=4553 / 8,
                                       micro_batch=256, accumulation=32, source=_DLE_BERT)],
        source="BERT-large 336M parameters (DLE README); FP16 gradients (--fp16); LAMB with fp32 "
        f"master, m, v (12 B/param); {_KORTHIKANTI} with L=24, s=128, h=1024, a=16. Default "
        "micro-batch 32 is a knob, not DLE's 256",
    ),
    "gpt-7b": Workload(
        name="gpt-7b", params=6.74e9, wire_bytes_per_param=2.0, param_bytes_per_param=2.0,
        grad_bytes_per_param=2.0, optimizer_bytes_per_param=12.0,
        activation_bytes_per_sample=32 * 4096 * 4096 * 34, micro_batch=1,
        sample_unit="sequences of 4096 tokens", train_samples=2.0e12 / 4096,
        reference=[ReferenceThroughput(device_name="A100-SXM4 80GB", samples_per_s=3014 / 4096,
                                       micro_batch=1, source=_LLAMA2)],
        source=f"Llama-2-7B shape (6.74B params, 32 layers, d=4096); bf16 weights and gradients, "
        f"Adam fp32 state (12 B/param); {_KORTHIKANTI} with flash attention (34*s*h per layer); "
        "2.0T training tokens",
    ),
}

DEFAULT_HARDWARE = "a2-highgpu-8g"
DEFAULT_WORKLOAD = "bert-large"


def get_hardware(name: str) -> Hardware:
    try:
        return HARDWARE[name]
    except KeyError:
        raise ScalesimError(
            f"unknown hardware preset '{name}'; choose one of {', '.join(HARDWARE)} "
            "or give a JSON file (scalesim schema hardware)"
        ) from None


def get_workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ScalesimError(
            f"unknown workload preset '{name}'; choose one of {', '.join(WORKLOADS)} "
            "or give a JSON file (scalesim schema workload)"
        ) from None
