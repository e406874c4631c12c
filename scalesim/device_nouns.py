"""The nouns a sentence uses for a profile's devices, in one place (docs/reliability.md, session 18).

GPU profiles keep their words: devices (GPUs) in servers. A CPU calibration's "devices" are its
processes on one host, sharing the host's cores and memory, exchanging through gloo over
loopback TCP (``scalesim calibrate`` on CPU names the device ``CPU: <model>``,
``CPU_DEVICE_PREFIX``); its sentences say processes and hosts. ``nouns_for`` is the only place
that decides which words a device gets; sentences take their nouns from it. Sentences that differ
in more than their nouns (a GPU remedy that does not apply to processes) sit in tables keyed by
``Nouns.cpu`` beside their GPU words (``remedies.CPU_NOT_APPLICABLE``, ``decision.CPU_ASSUMPTIONS``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from scalesim.figures import CHANGE_ARROW, whole

if TYPE_CHECKING:
    from scalesim.schemas import Hardware

# How ``scalesim calibrate`` names the device of a run on CPUs (calibration/runner.py), and how
# diagnose names a traced CPU job's: its devices are processes, which no cloud GPU price applies to.
CPU_DEVICE_PREFIX = "CPU: "
# What a price per device-hour buys on a CPU calibration (predict's cost line, decide's price)
CPU_HOUR = "an hour of one CPU process"


def is_cpu_device(device_name: str) -> bool:
    """Whether a profile's device is a CPU calibration's process ('CPU: AMD EPYC')."""
    return device_name.startswith(CPU_DEVICE_PREFIX)


@dataclass(frozen=True)
class Nouns:
    """The words for a device, the GPU itself, its server and its memory."""

    cpu: bool
    device: str  # 'device' / 'process'
    devices: str
    gpu: str  # where a GPU sentence names the GPU: 'GPU' / 'process'
    gpus: str
    server: str  # 'server' / 'rack' (an NVL72's NVLink domain of trays) / 'host'
    servers: str
    memory: str  # 'device memory' / 'the host's memory'
    holders: str  # what holds more memory: 'devices' / 'hosts'
    column: str  # a table's count column: 'GPUs' / 'procs'

    def noun(self, n: int, noun: str = "device") -> str:
        """The noun for ``n`` of them: 'server' for 1, 'servers' else; 'host' / 'hosts' for a CPU
        device (``noun``: device, gpu or server), for a count printed apart (a table's column)."""
        return getattr(self, noun) if n == 1 else getattr(self, noun + "s")

    def count(self, n: int, noun: str = "device") -> str:
        """'16 devices', '1 server'; for a CPU device '2 processes', '1 host' (``noun``: device,
        gpu or server)."""
        return f"{whole(n)} {self.noun(n, noun)}"

    def count_change(self, before: int, after: int, arrow: str = CHANGE_ARROW) -> str:
        """'8 -> 16 devices', '1,024 -> 2,048 devices'; '2 -> 4 processes' (``figures.count_change``);
        ``arrow``: what goes between the counts (a template's '{arrow}',
        ``layout_change.arrowed_said``)."""
        return f"{whole(before)}{arrow}{self.count(after)}"

    def header(self, gpu_header: str) -> str:
        """A table's column header or a chart's axis title for a count: a GPU profile's as it
        was ('devices', 'nodes', 'servers', 'GPUs'), a CPU calibration's in its nouns
        ('processes', 'hosts'); ``HEADER_NOUNS`` says which noun each header is. A fitted
        replica profile's count headers say 'replicas' (its servers keep the GPU words), as a
        CPU replica profile's do: its 'devices' had headed a column of replicas. A rack's
        (``hardware_nouns``: GB200 NVL72) server headers say 'racks'."""
        if self.cpu or (self.server == RACK and HEADER_NOUNS[gpu_header] == "servers"):
            return getattr(self, HEADER_NOUNS[gpu_header])
        if self.device == "replica" and HEADER_NOUNS[gpu_header] in ("devices", "gpus"):
            return self.devices
        return gpu_header

    def link(self, level: str) -> str:
        """'intra-server link' / 'inter-host link' of a link level ('intra_node', 'inter_node')."""
        return f"{'intra' if level == 'intra_node' else 'inter'}-{self.server} link"


# the server of a hardware whose NVLink domain is a rack of allocation units (``hardware_nouns``)
RACK, RACKS = "rack", "racks"

# the count headers GPU tables and charts print, and the noun each is ('nodes' is predict's word
# for servers)
HEADER_NOUNS = {"devices": "devices", "GPUs": "gpus", "nodes": "servers", "servers": "servers"}

GPU_NOUNS = Nouns(
    cpu=False,
    device="device",
    devices="devices",
    gpu="GPU",
    gpus="GPUs",
    server="server",
    servers="servers",
    memory="device memory",
    holders="devices",
    column="GPUs",
)
CPU_NOUNS = Nouns(
    cpu=True,
    device="process",
    devices="processes",
    gpu="process",
    gpus="processes",
    server="host",
    servers="hosts",
    memory="the host's memory",
    holders="hosts",
    column="procs",
)


# Runs of a job that splits its model are fitted as data-parallel runs of model replicas
# (``runs.replica_runs``): the fitted profile's "device" is one replica of tp x pp x cp devices,
# named REPLICA_PREFIX + the split + " of " + the devices' own name, and its sentences say
# replicas (their memory and servers stay the devices').
REPLICA_PREFIX = "model replica ("
# where a sentence names the profile's GPUs (a server of g GPUs, billed per whole server) they
# are its replicas too: the profile's devices per server and its price count replicas
REPLICA_NOUNS = replace(GPU_NOUNS, device="replica", devices="replicas", column="replicas",
                        gpu="replica", gpus="replicas")
CPU_REPLICA_NOUNS = replace(CPU_NOUNS, device="replica", devices="replicas", column="replicas",
                            gpu="replica", gpus="replicas")


def replica_device_name(split_words: str, device_name: str) -> str:
    """The device name of one model replica: 'model replica (tp 8 x pp 2 x cp 1) of measured'."""
    return f"{REPLICA_PREFIX}{split_words}) of {device_name}"


def named_count(n: int, device_name: str) -> str:
    """``n`` devices named by their kind: '8 H100 GPUs' ... '8 NVIDIA H100 devices', 'One
    NVIDIA H100 device'; a replica's kind after its noun, '8 replicas (tp 2 x pp 2 x cp 1 of
    measured)', where '8 model replica (...) of measured replicas' read as nonsense."""
    words = nouns_for(device_name)
    noun = words.device if n == 1 else words.devices
    count = "One" if n == 1 else whole(n)
    if (parts := replica_parts(device_name)) is not None:
        return f"{count} {noun} ({parts[0]} of {parts[1]})"
    return f"{count} {device_name} {noun}"


def replica_parts(device_name: str) -> tuple[str, str] | None:
    """(the split's words, the devices' own name) of a replica's name ('tp 8 x pp 2 x cp 1',
    'measured'): ``replica_device_name`` read back; None where ``device_name`` names no
    replica."""
    if not device_name.startswith(REPLICA_PREFIX) or ") of " not in device_name:
        return None
    split, inner = device_name[len(REPLICA_PREFIX):].split(") of ", 1)
    return split, inner


def replica_of(device_name: str) -> str | None:
    """The devices' own name inside a replica's name ('measured', 'CPU: AMD EPYC'), or None
    where ``device_name`` names no replica."""
    parts = replica_parts(device_name)
    return None if parts is None else parts[1]


def measured_nouns(device_name: str) -> Nouns:
    """The nouns of the devices themselves: a replica's devices' (GPUs, or processes), else
    ``nouns_for``'s."""
    return nouns_for(replica_of(device_name) or device_name)


def nouns_for(device_name: str) -> Nouns:
    """The nouns of a device named ``device_name`` (``Hardware.device_name``)."""
    inner = replica_of(device_name)
    if inner is not None:
        return CPU_REPLICA_NOUNS if is_cpu_device(inner) else REPLICA_NOUNS
    return CPU_NOUNS if is_cpu_device(device_name) else GPU_NOUNS


def is_rack(hardware: Hardware) -> bool:
    """Whether ``hardware``'s server, its NVLink domain, is a rack of several allocation units
    (GB200 NVL72: 72 GPUs in 18 compute trays of 4, ``Hardware.devices_per_allocation``; where
    the hardware states none, its GPU's trays, ``rack_of``)."""
    allocation = hardware.devices_per_allocation
    if allocation is None:
        return rack_of(hardware.device_name, hardware.devices_per_node)
    return allocation < hardware.devices_per_node


def rack_of(device_name: str | None, devices_per_node: int) -> bool:
    """Whether a server of ``devices_per_node`` GPUs named ``device_name`` (None: not named) is
    a rack of several compute trays (``presets.server_tray``: a GB200 NVL72's 72 in trays of
    4); a server of one tray is that tray (a runs file that counts a GB200 job's trays as its
    nodes)."""
    from scalesim.presets import server_tray

    tray = server_tray(device_name, devices_per_node) if device_name else None
    return tray is not None and tray < devices_per_node


def rack_nouns(words: Nouns, rack: bool) -> Nouns:
    """``words`` with their server a 'rack' where ``rack`` (``is_rack``, ``rack_of``); a CPU
    calibration's stays a 'host'."""
    return replace(words, server=RACK, servers=RACKS) if rack and not words.cpu else words


def hardware_nouns(hardware: Hardware) -> Nouns:
    """The nouns of ``hardware``'s devices (``nouns_for``), its server a 'rack' where the NVLink
    domain is a rack of trays (``is_rack``: GB200 NVL72); a CPU calibration's stays a 'host'."""
    return rack_nouns(nouns_for(hardware.device_name), is_rack(hardware))
