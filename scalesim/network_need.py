"""The least inter-server network that reaches a goal, found on the model (docs/model.md §21).

Between the named networks (``scalesim.network_upgrades``) a buyer asks "what inter-server
bandwidth is enough?". The step time is monotone non-increasing in the inter-server bus
bandwidth and non-decreasing in its per-hop latency (``tests/test_step_properties.py``,
``tests/test_physics_grid_properties.py``), so whether a scenario reaches a goal (``passes``:
one plan of goal's grid meets the deadline and budget, decide's run is within the model's error
of an unlimited network) flips once along each: ``network_need`` bisects it.

* bandwidth at today's latency, geometric bisection on [``LEAST_BUSBW_GBps``,
  ``UNLIMITED_BUSBW_GBps``] (the bounds table's busbw range) until the bracket is ``REL_TOL``
  wide; the answer is the bracket's top, which passes (a little above the threshold, never below);
* where even an unlimited bandwidth does not reach it, latency at unlimited bandwidth: the largest
  per-hop latency in [0, today's] that does, bisected to ``REL_TOL`` of today's (its bottom);
* else nothing on the inter-server network reaches it (the caller says what bounds it).

The bandwidth is the whole server's bus bandwidth (as ``--inter-busbw``, GB/s); its line rate is
that over the RDMA efficiency the named upgrades are modelled at (``presets.IB_EFFICIENCY``:
NCCL's busbw / line rate over InfiniBand or RoCE), in Gbit/s per server and per NIC of today's.
A job on fewer GPUs of each server than it holds reaches only its share of today's NICs
(``predict.inter_nic_share``), and a named upgrade its share of its own NICs: the need is said
as the busbw the job's devices must reach (``NetworkNeed.reached_GBps``) and the whole server's
on today's NICs, and each named upgrade by what it gives the job; whether it is enough is the
caller's test on the upgrade's run (``enough``): decide's, a step test with no money in it, on its
reached busbw and latency (all the model reads of an inter-server link), so the verdict agrees
with predict run on it; goal's, the upgrade's own row (its instances and its price where public:
what its user pays), so the sentence and the row that prices the upgrade never disagree
(``upgrades_basis`` says which).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scalesim.bounds import bound
from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.figures import busbw_words, latency_us, link_GBps, sig3
from scalesim.network_upgrades import NetworkScenario
from scalesim.predict import inter_nic_share, server_part_words
from scalesim.presets import IB_EFFICIENCY
from scalesim.schemas import Profile, Scenario

LEAST_BUSBW_GBps = bound("busbw_GBps").low  # 1 MB/s: below it, no network at all
UNLIMITED_BUSBW_GBps = bound("busbw_GBps").high  # 100 TB/s: the bounds table's largest busbw
REL_TOL = 1e-3  # bisection stops at a bracket 0.1 % wide: far below the model's 3 % median error


@dataclass(frozen=True)
class UpgradeReach:
    """A named faster network as the job gets it (``NetworkNeed.upgrades``)."""

    name: str  # the upgrade's name (``NetworkUpgrade.name``)
    busbw_GBps: float  # its whole server's busbw over all its NICs, GB/s
    reached_GBps: float  # the busbw the job's devices reach of it (``reached_GBps``), GB/s
    latency_s: float  # its per-hop latency, s
    enough: bool  # the goal's test passes on its run (its reached busbw and latency)


@dataclass(frozen=True)
class NetworkNeed:
    """What inter-server network reaches a goal (``network_need``)."""

    reaches: str  # "any": even LEAST_BUSBW_GBps does; "bandwidth": busbw_GBps does at today's
    # latency; "latency": only a per-hop latency of at most latency_s, at unlimited bandwidth;
    # "none": not even an unlimited network (UNLIMITED_BUSBW_GBps, 0 s a hop)
    busbw_GBps: float | None  # the least whole-server inter-server bus bandwidth, GB/s
    latency_s: float | None  # the largest per-hop latency at unlimited bandwidth, s
    today_busbw_GBps: float  # today's whole-server inter-server bus bandwidth, GB/s
    today_latency_s: float  # today's per-hop latency, s
    nics_per_node: int | None  # today's NICs per server (None: not known), for Gbit/s per NIC
    servers_per_node: int  # servers whose NICs one node exchanges over (nic_servers_per_node)
    # share of a whole server's busbw the job's devices of each server reach on today's NICs
    # (``predict.inter_nic_share``): 1 on whole servers, 1/4 for one GPU of a DGX-1's 8
    nic_share: float = 1.0
    server_part: str = ""  # '1 of 8 GPUs per server' (``predict.server_part_words``), else ''
    # the named faster networks (``network_upgrades.network_scenarios``), each with what it
    # gives the job and whether that reaches the goal (``UpgradeReach``)
    upgrades: tuple[UpgradeReach, ...] = ()
    # how the upgrades' "enough" was judged, in words after "of the named networks" ('': on
    # the busbw and latency the job gets of each, as the need itself)
    upgrades_basis: str = ""

    @property
    def reached_GBps(self) -> float | None:
        """The least busbw the job's devices of each server must reach, GB/s: ``busbw_GBps``
        (a whole server's, on today's NICs) times ``nic_share``."""
        return None if self.busbw_GBps is None else self.busbw_GBps * self.nic_share

    @property
    def gbit_per_server(self) -> float | None:
        """``busbw_GBps``'s line rate per server over RDMA, Gbit/s: busbw x 8 / IB_EFFICIENCY,
        over the servers a node spans."""
        if self.busbw_GBps is None:
            return None
        return self.busbw_GBps * 8.0 / IB_EFFICIENCY / self.servers_per_node

    @property
    def words(self) -> str:
        """The answer in a GPU server's words (``said``)."""
        return self.said(GPU_NOUNS)

    def said(self, nouns: Nouns) -> str:
        """The answer in words, for a sentence that names its goal ('' for "none": the caller
        says what bounds it); the server in ``nouns`` ('any inter-rack bandwidth' on a GB200
        NVL72: ``device_nouns.hardware_nouns``)."""
        now = latency_us(self.today_latency_s)
        today = f"today {link_GBps(self.today_busbw_GBps)} busbw, {now} a hop"
        if self.reaches == "any":
            return (f"any inter-{nouns.server} bandwidth (even {link_GBps(LEAST_BUSBW_GBps)} "
                    f"busbw); {today}")
        if self.reaches == "latency":
            return (f"no bandwidth at today's {now} a hop; an unlimited one with at most "
                    f"{latency_us(self.latency_s)} a hop ({today}){self.upgrades_said(nouns)}")
        if self.reaches != "bandwidth":
            return ""
        line = self.gbit_per_server
        nic = (f", {sig3(line / self.nics_per_node)} Gb/s per NIC on {self.nics_per_node}"
               if self.nics_per_node and self.nics_per_node > 1 else "")
        rate = (f"{sig3(line)} Gb/s line rate per {nouns.server} over RDMA at {IB_EFFICIENCY:g} "
                f"efficiency{nic}")
        if self.partial:
            need = (f"{self._busbw_said(self.busbw_GBps, self.reached_GBps, nouns)} on "
                    f"today's {self.nics_per_node} NICs ({rate})")
            today = self._busbw_said(self.today_busbw_GBps, self.today_busbw_GBps * self.nic_share,
                                     nouns)
        else:
            need = f"{link_GBps(self.busbw_GBps)} busbw ({rate})"
            today = link_GBps(self.today_busbw_GBps)
        enough = ": enough" if self.today_busbw_GBps >= self.busbw_GBps else ""
        return f"{need} at today's {now} a hop; today {today}{enough}{self.upgrades_said(nouns)}"

    @property
    def partial(self) -> bool:
        """Whether the job's devices reach less than a whole server's busbw today."""
        return bool(self.server_part) and self.nic_share < 1.0

    def _busbw_said(self, whole_GBps: float, reached_GBps: float, nouns: Nouns) -> str:
        """A busbw of the whole server and what the job's devices of each reach, GB/s
        (``figures.busbw_words``), the server in ``nouns``."""
        return busbw_words(whole_GBps, reached_GBps, self.server_part, server=nouns.server)

    def upgrades_said(self, nouns: Nouns) -> str:
        """'; of the named networks, 8 x 200 Gb/s HDR InfiniBand (...) gives the job 24 GB/s
        busbw for the job's 1 of 8 GPUs per server (whole server 192) at 6 us a hop: not
        enough; ...' ('' where none is named): each by what the job's devices reach of it, the
        server in ``nouns`` ('whole rack' on a GB200 NVL72)."""
        if not self.upgrades:
            return ""
        rows = [f"{u.name} gives {self._busbw_said(u.busbw_GBps, u.reached_GBps, nouns)} "
                f"at {latency_us(u.latency_s)} a hop: {'enough' if u.enough else 'not enough'}"
                for u in self.upgrades]
        basis = f" ({self.upgrades_basis})" if self.upgrades_basis else ""
        return f"; of the named networks{basis}, " + "; ".join(rows)


def least_passing(passes: Callable[[float], bool], low: float, high: float,
                  rel_tol: float = REL_TOL) -> float:
    """The least x in [``low``, ``high``] (both > 0) with ``passes(x)``, to within ``rel_tol``
    above it: geometric bisection of a test that is False at ``low``, True at ``high`` and flips
    once between them (monotone); the returned x passes."""
    while high > low * (1.0 + rel_tol):
        mid = (low * high) ** 0.5
        if passes(mid):
            high = mid
        else:
            low = mid
    return high


def largest_passing(passes: Callable[[float], bool], high: float, tol: float) -> float:
    """The largest x in [0, ``high``] with ``passes(x)``, to within ``tol`` below it: bisection
    of a test that is True at 0, False at ``high`` and flips once between them; x passes."""
    low = 0.0
    while high - low > tol:
        mid = 0.5 * (low + high)
        if passes(mid):
            low = mid
        else:
            high = mid
    return low


def network_need(profile: Profile, scenario: Scenario, passes: Callable[[Scenario], bool],
                 networks: Sequence[NetworkScenario] = (),
                 enough: Callable[[NetworkScenario], bool] | None = None,
                 upgrades_basis: str = "") -> NetworkNeed:
    """The least inter-server network with which ``scenario`` reaches a goal (``passes`` of the
    scenario at a network's ``inter_busbw_GBps`` and ``inter_latency_s``; monotone in each), and
    each of ``networks`` (``network_upgrades.network_scenarios``) by what it gives the job and
    whether it reaches the goal: ``enough`` of it where given (the caller's own verdict on the
    upgrade as its user pays for it, said as ``upgrades_basis``), else ``passes`` on its run
    (its reached busbw and latency): see the module docstring."""
    hw = profile.hardware
    inter = hw.inter_node
    busbw = scenario.inter_busbw_GBps or inter.busbw_GBps
    latency = inter.latency_s if scenario.inter_latency_s is None else scenario.inter_latency_s

    def at(busbw_GBps: float, latency_s: float) -> bool:
        return passes(scenario.model_copy(update={"inter_busbw_GBps": busbw_GBps,
                                                  "inter_latency_s": latency_s}))

    reaches, least, most = "none", None, None
    if at(LEAST_BUSBW_GBps, latency):
        reaches = "any"
    elif at(UNLIMITED_BUSBW_GBps, latency):
        reaches = "bandwidth"
        least = least_passing(lambda b: at(b, latency), LEAST_BUSBW_GBps, UNLIMITED_BUSBW_GBps)
    elif latency > 0 and at(UNLIMITED_BUSBW_GBps, 0.0):
        reaches = "latency"
        most = largest_passing(lambda s: at(UNLIMITED_BUSBW_GBps, s), latency, latency * REL_TOL)
    share = inter_nic_share(hw, scenario)

    def on_run(net: NetworkScenario) -> bool:
        # the model reads of a link only the busbw the job reaches and its latency: the
        # upgrade's run is today's profile at the whole figure that reaches as much on today's NICs
        return at(net.reached_GBps / share, float(net.link.latency_s))

    upgrades = tuple(UpgradeReach(
        name=net.upgrade.name, busbw_GBps=float(net.link.busbw_GBps),
        reached_GBps=net.reached_GBps, latency_s=float(net.link.latency_s),
        enough=(enough or on_run)(net))
        for net in networks) if reaches != "none" else ()
    return NetworkNeed(reaches=reaches, busbw_GBps=least, latency_s=most,
                       today_busbw_GBps=float(busbw), today_latency_s=float(latency),
                       nics_per_node=inter.nics_per_node,
                       servers_per_node=hw.nic_servers_per_node, nic_share=share,
                       server_part=server_part_words(hw, scenario), upgrades=upgrades,
                       upgrades_basis=upgrades_basis if upgrades else "")
