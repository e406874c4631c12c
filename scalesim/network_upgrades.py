"""Inter-server network upgrades as named hardware, each with its price, source and date.

A row names what you would buy or rent (NICs x line rate, the machine type that carries it), how
the model sees it (``scalesim.presets.inter_link`` of its kind, NICs and Gbit/s) and what it adds
per server-hour, or None where no public price exists (the decision card then says "price not
known" instead of guessing). Prices are on-demand list prices; the date is when that price was
listed, so a reader knows how old it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scalesim import presets
from scalesim.billing import billing_words
from scalesim.device_nouns import hardware_nouns, is_cpu_device
from scalesim.predict import inter_busbw_GBps_of
from scalesim.schemas import Hardware, LinkLevel, Profile, Scenario


@dataclass(frozen=True)
class NetworkUpgrade:
    key: str
    name: str  # what it is, in words a buyer uses
    kind: str  # presets.inter_link kind: infiniband, roce, ethernet
    nics_per_node: int
    gbit_per_nic: float
    extra_usd_per_server_hour: float | None  # None: no public price
    source: str
    as_of: str  # when the price (or the spec, when unpriced) was published, YYYY-MM
    device_words: tuple[str, ...] = ()  # only for devices whose name has all these words
    # GPUs of each shape the upgrade's instance is rented in (``scalesim.billing``); None: only
    # whole servers (AWS p4d.24xlarge has no smaller shape, so 4 GPUs of one bill its 8)
    instance_sizes: tuple[int, ...] | None = None
    # True: another instance type rented with these NICs in it (AWS p4d), so no NIC count of
    # today's servers limits it; False: adapters fitted to today's servers (``nics_needed_words``)
    rented_server: bool = False

    def link(self) -> LinkLevel:
        return presets.inter_link(self.kind, self.nics_per_node, self.gbit_per_nic, self.source)

    def applies_to(self, device_name: str) -> bool:
        return presets.name_has_words(device_name, self.device_words)

    def billed_sizes(self, server_devices: int) -> tuple[int, ...]:
        """The instance shapes a run with this upgrade is billed in: the upgrade's own instance
        (``instance_sizes``), else whole servers of ``server_devices`` GPUs (the hardware's
        server), whatever shapes today's provider rents: its extra per server-hour is the
        difference of two whole servers' prices, so a run on 4 GPUs of each 8-GPU server, or
        on 1, 2 and 4-GPU shapes today, rents whole servers of the upgrade's instance."""
        return self.instance_sizes or (int(server_devices),)


# AWS p4d.24xlarge: 8x A100 40GB with NVSwitch and 400 Gb/s EFA (4x 100 Gb/s); Google Cloud
# a2-highgpu-8g: the same 8x A100 40GB with 100 Gbps. Same GPUs, so the difference of their
# prices (presets.PRICES, each with its date and source) is what the faster network costs.
_P4D = presets.PRICES["aws-p4d"]
_A2 = presets.PRICES["a2-highgpu-8g"]

UPGRADES: tuple[NetworkUpgrade, ...] = (
    NetworkUpgrade(
        key="efa-4x100",
        name="4 x 100 Gb/s EFA (AWS p4d.24xlarge)",
        kind="roce", nics_per_node=4, gbit_per_nic=100.0,
        extra_usd_per_server_hour=round(_P4D.usd_per_hour - _A2.usd_per_hour, 4),
        source=f"{_P4D.instance} on-demand ${_P4D.usd_per_hour:g}/h ({_P4D.source}, listed "
               f"{_P4D.as_of}) minus {_A2.instance} ${_A2.usd_per_hour:g}/h ({_A2.source}, "
               f"listed {_A2.as_of}); EFA modelled as RDMA (the roce efficiency). AWS cut P4 "
               "prices in June 2025, so today's difference may be smaller",
        as_of=_P4D.as_of, device_words=("A100", "40GB"), instance_sizes=_P4D.instance_sizes,
        rented_server=True),
    NetworkUpgrade(
        key="ib-8x200",
        name="8 x 200 Gb/s HDR InfiniBand (as in a DGX A100)",
        kind="infiniband", nics_per_node=8, gbit_per_nic=200.0, extra_usd_per_server_hour=None,
        source="NVIDIA DGX A100 datasheet: 8x single-port ConnectX-6 200 Gb/s HDR InfiniBand; "
               "no public list price for the adapters and switch ports",
        as_of="2020-05"),
    NetworkUpgrade(
        key="ib-8x400",
        name="8 x 400 Gb/s NDR InfiniBand (as in a DGX H100)",
        kind="infiniband", nics_per_node=8, gbit_per_nic=400.0, extra_usd_per_server_hour=None,
        source="NVIDIA DGX H100 datasheet: 8x ConnectX-7 400 Gb/s NDR InfiniBand; no public "
               "list price for the adapters and switch ports",
        as_of="2022-03"),
)

UPGRADES_BY_KEY = {u.key: u for u in UPGRADES}


# Why a CPU calibration's processes get no upgrade (``device_nouns.is_cpu_device``).
CPU_NO_UPGRADES = ("network upgrades left out: CPU processes exchange through gloo over TCP, and "
                   "the upgrades' figures are NCCL's over RDMA between GPU servers")


def nics_needed_words(upgrade: NetworkUpgrade, hardware: Hardware) -> str:
    """'needs 8 NICs per server (this server has 4)' where ``upgrade`` (one server's, as
    ``UPGRADES`` lists it) is adapters fitted to today's servers and has more NICs than
    ``hardware``'s inter-server level (``nics_per_node``: a preset's datasheet count, as a
    DGX-1's 4 EDR ports); '' where the count is not known (a calibrated or fitted level), the
    upgrade fits in it, or it is another server rented with its NICs (``rented_server``). The
    presets know the NICs a server ships with, not its free slots, so the upgrade is kept and
    said (docs/model.md §20); the server in ``hardware``'s nouns ('per rack (this rack has 4)'
    on a GB200 NVL72)."""
    today = hardware.inter_node.nics_per_node
    if upgrade.rented_server or not today or upgrade.nics_per_node <= today:
        return ""
    server = hardware_nouns(hardware).server  # 'rack' on a GB200 NVL72
    return f"needs {upgrade.nics_per_node} NICs per {server} (this {server} has {today})"


def per_node(upgrade: NetworkUpgrade, servers: int) -> NetworkUpgrade:
    """``upgrade`` for one node of a profile whose node exchanges over ``servers`` servers'
    NICs (``Hardware.nic_servers_per_node``: a profile of model replicas whose stages sit in
    other servers): that many times its NICs and its price a server; unchanged for 1."""
    if servers == 1:
        return upgrade
    price = upgrade.extra_usd_per_server_hour
    return replace(upgrade, nics_per_node=upgrade.nics_per_node * servers,
                   extra_usd_per_server_hour=None if price is None else price * servers)


def upgrades_for(device_name: str, inter_busbw_GBps: float,
                 servers: int = 1) -> list[NetworkUpgrade]:
    """Upgrades that apply to ``device_name`` and are faster than today's inter-server link,
    priced ones first, the cheapest first (ties: the slowest), then the unpriced by bandwidth
    (slowest first: the cheapest step up, where no price tells them apart); none for a CPU
    calibration's processes (``CPU_NO_UPGRADES``). ``servers``: the servers whose NICs one node
    of the profile exchanges over (``per_node``, ``Hardware.nic_servers_per_node``)."""
    if is_cpu_device(device_name):
        return []
    rows = [per_node(u, servers) for u in UPGRADES if u.applies_to(device_name)]
    rows = [u for u in rows if u.link().busbw_GBps > inter_busbw_GBps * 1.05]
    return sorted(rows, key=lambda u: (u.extra_usd_per_server_hour is None,
                                       u.extra_usd_per_server_hour or 0.0, u.link().busbw_GBps))


@dataclass(frozen=True)
class NetworkScenario:
    """A run on a network upgrade, as every command that offers one runs it (decide's network
    option, diagnose's named faster network, goal's networks: ``network_scenario``)."""

    upgrade: NetworkUpgrade  # for one node of the profile (``per_node``): NICs and USD/h
    profile: Profile  # the profile with the upgrade's whole inter-server link (``on_link``)
    scenario: Scenario  # the scenario on the upgrade's inter-server link: busbw and latency
    billed_sizes: tuple[int, ...]  # the instance shapes it is billed in (``billed_sizes``)
    price_source: str  # the upgrade's source, its date and how it is billed, for a card's row
    nics_needed: str = ""  # 'needs 8 NICs per server (this server has 4)' (``nics_needed_words``)

    @property
    def link(self) -> LinkLevel:
        return self.upgrade.link()

    @property
    def priced(self) -> bool:
        """Whether a public price exists (else its cost is left blank)."""
        return self.upgrade.extra_usd_per_server_hour is not None

    @property
    def reached_GBps(self) -> float:
        """The upgrade's inter-server busbw the job's devices of each server reach, GB/s: its
        whole link's over its own NICs (``predict.inter_busbw_GBps_of``: one GPU of 8 reaches
        one of 8 x 200 Gb/s HDR's eight NICs, 24 of 192 GB/s)."""
        return float(inter_busbw_GBps_of(self.profile.hardware, self.scenario))


def on_link(profile: Profile, link: LinkLevel) -> Profile:
    """``profile`` whose servers are joined by ``link``: its whole inter-server level (busbw,
    latency, NIC count, kind), so that a job on fewer GPUs of each server than it holds reaches
    its share of the upgrade's NICs, not of today's (``predict.inter_nic_share``: one GPU of 8
    reaches 1 of EFA's 4 NICs, 12 of 48 GB/s, and 1 of 8 x 200 HDR's 8, 24 of 192 GB/s)."""
    return profile.model_copy(update={"hardware": profile.hardware.model_copy(
        update={"inter_node": link})})


def network_scenario(profile: Profile, scenario: Scenario,
                     upgrade: NetworkUpgrade) -> NetworkScenario:
    """``scenario`` on ``upgrade`` (one server's, as ``UPGRADES`` lists it) for ``profile``'s
    node: the NICs and price of the servers a node exchanges over
    (``Hardware.nic_servers_per_node``, ``per_node``), the profile on the named hardware's
    inter-server link (``on_link``: its bus bandwidth, latency and NICs, ``presets.inter_link``)
    and the scenario at that link's busbw and latency, the instance shapes it bills in, where
    its price comes from ('price not known' where none is public) and the NICs it needs beyond
    the server's (``nics_needed_words``). Every command evaluates the upgrade on this profile
    and scenario together."""
    hw = profile.hardware
    up = per_node(upgrade, hw.nic_servers_per_node)
    link = up.link()
    sizes = up.billed_sizes(hw.devices_per_node)
    billing = billing_words(scenario.devices_per_node or hw.devices_per_node, sizes,
                            hw.device_name, hardware_nouns(hw), hw.devices_per_node)
    source = f"{up.source} (as of {up.as_of}); {billing}"
    if up.extra_usd_per_server_hour is None:
        source += "; price not known, so its cost is left blank"
    return NetworkScenario(
        upgrade=up, profile=on_link(profile, link), billed_sizes=sizes, price_source=source,
        nics_needed=nics_needed_words(upgrade, hw),
        scenario=scenario.model_copy(update={"inter_busbw_GBps": link.busbw_GBps,
                                             "inter_latency_s": link.latency_s}))


def network_scenarios(profile: Profile, scenario: Scenario) -> list[NetworkScenario]:
    """``network_scenario`` of each upgrade faster than the scenario's inter-server link, in
    ``upgrades_for``'s order (the cheapest priced first, then the slowest step up); none on a CPU
    calibration's processes."""
    hw = profile.hardware
    inter = scenario.inter_busbw_GBps or hw.inter_node.busbw_GBps
    faster = upgrades_for(hw.device_name, inter, hw.nic_servers_per_node)
    return [network_scenario(profile, scenario, UPGRADES_BY_KEY[u.key]) for u in faster]
