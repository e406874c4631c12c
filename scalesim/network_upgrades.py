"""Inter-server network upgrades as named hardware, each with its price, source and date.

A row names what you would buy or rent (NICs x line rate, the machine type that carries it), how
the model sees it (``scalesim.presets.inter_link`` of its kind, NICs and Gbit/s) and what it adds
per server-hour, or None where no public price exists (the decision card then says "price not
known" instead of guessing). Prices are on-demand list prices; the date is when that price was
listed, so a reader knows how old it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim import presets
from scalesim.schemas import LinkLevel


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

    def link(self) -> LinkLevel:
        return presets.inter_link(self.kind, self.nics_per_node, self.gbit_per_nic, self.source)

    def applies_to(self, device_name: str) -> bool:
        name = device_name.lower().replace(" ", "").replace("-", "")
        return all(w.lower() in name for w in self.device_words)


# AWS p4d.24xlarge: 8x A100 40GB with NVSwitch and 400 Gb/s EFA (4x 100 Gb/s), on-demand
# $32.7726/h in us-east-1 at its November 2020 launch (aws.amazon.com/ec2/instance-types/p4);
# Google Cloud a2-highgpu-8g: the same 8x A100 40GB with 100 Gbps, $29.387/h (the a2-highgpu-8g
# hardware preset's price). Same GPUs, so the difference is what the faster network costs.
_P4D_USD_PER_HOUR = 32.7726
_A2_USD_PER_HOUR = 29.387

UPGRADES: tuple[NetworkUpgrade, ...] = (
    NetworkUpgrade(
        key="efa-4x100",
        name="4 x 100 Gb/s EFA (AWS p4d.24xlarge)",
        kind="roce", nics_per_node=4, gbit_per_nic=100.0,
        extra_usd_per_server_hour=round(_P4D_USD_PER_HOUR - _A2_USD_PER_HOUR, 4),
        source="AWS EC2 P4 instance page: p4d.24xlarge (8x A100 40GB, 400 Gbps EFA) on-demand "
               "$32.7726/h us-east-1, minus Google Cloud a2-highgpu-8g (8x A100 40GB, 100 Gbps) "
               "$29.387/h; EFA modelled as RDMA (the roce efficiency). AWS cut P4 prices in "
               "June 2025, so today's difference may be smaller",
        as_of="2020-11", device_words=("A100", "40GB")),
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


def upgrades_for(device_name: str, inter_busbw_GBps: float) -> list[NetworkUpgrade]:
    """Upgrades that apply to ``device_name`` and are faster than today's inter-server link,
    priced ones first, then by bandwidth (slowest first: the cheapest step up)."""
    rows = [u for u in UPGRADES
            if u.applies_to(device_name) and u.link().busbw_GBps > inter_busbw_GBps * 1.05]
    return sorted(rows, key=lambda u: (u.extra_usd_per_server_hour is None, u.link().busbw_GBps))
