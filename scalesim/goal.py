"""Goal seeking: the cheapest plan that trains within a deadline and a budget, and the trade-off.

``seek(profile, base, deadline_s, budget_usd)`` evaluates, in one vectorised ``scalesim.sweep``
call, every combination of

* device counts: powers of two inside one server, then every whole number of servers up to
  ``max_devices`` (past ``WHOLE_SERVERS`` servers, counts 1/``WHOLE_SERVERS`` apart);
* per-device micro-batch: half, one, two and four times the base one (weak scaling);
* gradient accumulation: 1, 2, 4, 8 times the base;

(the batches and accumulations within the bounds table's: ``predict.micro_batch_max``,
``predict.accumulation_max``)
* strategy: DDP, ZeRO-1, ZeRO-2, ZeRO-3;
* inter-server network: today's and each faster upgrade of ``scalesim.network_upgrades``, each
  run on the scenario ``network_upgrades.network_scenario`` builds (its bandwidth, latency and
  NICs, as decide's network option runs it): a priced one joins the search, an unpriced one
  cannot be costed, so its plans are kept apart and priced for the devices alone;

keeps those that fit in device memory, and computes for each the time to finish
(``scalesim.training_time``: the training length is the samples needed at the *reference* global
batch, the base micro-batch x one full server's data-parallel replicas (its devices / tp x pp, at
least one) x the base accumulation; with a critical batch size
a bigger global batch needs proportionally more samples, a smaller one fewer) and the money:
hours x (billed devices x USD per device-hour + servers x the network's extra USD per
server-hour); billed devices are whole instances (``scalesim.billing``).

The answer: the cheapest plan that meets both limits by decide's rule (``cheapest.choose``:
of the plans whose money is within the model's median error of the lowest, the soonest, and of
it and those within that error of its time the plainest, on today's network, then on fewer
devices; notes name the lowest and the soonest where they are not the answer, and the most
devices searched where the soonest runs on them), the Pareto front of time
against money (no other plan is both sooner and cheaper), or, when no plan meets the goal, the
plan that comes closest (the smallest worst overshoot of the two limits) and by how much it
misses. Beside it, for each faster network the cheapest of its plans on two or more servers (on
one, its link carries nothing) that meets the goal (an unpriced one: within the budget on the
devices' price alone, plus its unknown price), else its closest, and which of them answers "what
network reaches my goal?" (``GoalAnswer.network_sentence``); none where every count searched
fits in one server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from scalesim import training_time
from scalesim.accuracy import median_error
from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES, LAYOUT_KNOB_BY_FIELD, bound
from scalesim.cheapest import cheapest, choose
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns, is_cpu_device
from scalesim.errors import KNOB, ScalesimError
from scalesim.figures import (
    amount,
    busbw_words,
    count,
    count_list,
    duration_text,
    durations_apart,
    link_GBps,
    percents_apart,
    whole,
)
from scalesim.goal_layouts import (
    MOST_REFINED,
    NEAR,
    LayoutGroup,
    Searched,
    check_layout_mode,
    default_layout,
    least_memory_holders,
    near_counts,
    refined_groups,
    searched_groups,
)
from scalesim.layout import (
    knob_refusal,
    memory_ways,
    replica_devices,
    runs_on_count,
    schedule_words,
    shape_heads,
    split_words,
)
from scalesim.layout_change import (
    REPLICA_MICRO_BATCH,
    ZERO,
    Changes,
    LayoutTitle,
    joined,
    retitled,
    titled,
)
from scalesim.model.memory import STRATEGIES as MEMORY_STRATEGIES
from scalesim.network_need import NetworkNeed, UNLIMITED_BUSBW_GBps, network_need
from scalesim.network_upgrades import CPU_NO_UPGRADES, NetworkScenario, network_scenarios
from scalesim.predict import accumulation_max, job_unit, micro_batch_max, server_part_words
from scalesim.schemas import Profile, Scenario
from scalesim.sweep import Drops, SweepResult, sweep

STRATEGIES = tuple(MEMORY_STRATEGIES)  # ddp, zero1, zero2, zero3
BATCH_FACTORS = (0.5, 1, 2, 4)
ACCUMULATION_FACTORS = (1, 2, 4, 8)
# the global batches goal's grid spans around a layout's own, as factors (½ to 32): where the
# layouts are searched, the planner is asked at each near the answer (``_refined``)
BATCH_SPAN = tuple(sorted({b * k for b in BATCH_FACTORS for k in ACCUMULATION_FACTORS}))
MAX_FRONT = 40  # Pareto points returned (spread evenly along the front when there are more,
# and the answer's plan: the cheapest that meets the goal, or the closest, is on the front)
# Every whole number of servers up to this many (twice the default search's 128 eight-GPU
# servers); past it, server counts grow by at most 1/WHOLE_SERVERS (0.4 %) a step, as whole
# servers do here: far below the model's median error (3.0 %, docs/model.md section 20), and the
# largest allowed --max-devices (2**20) stays about a second (1,800 counts, not 131,072 servers).
WHOLE_SERVERS = 256
LAID = "_layout_"  # prefix of the columns a searched layout adds to its rows (``_together``)
# How goal judges each named network "enough" (``network_need``'s ``upgrades_basis``): on the
# bill of its row in "faster networks", not on today's billing as the least bandwidth is
UPGRADES_BASIS = ("each judged on its own row's bill: its instances, and its price where public")


def searched_micro_batches(b0: int) -> list[int]:
    """The micro-batches goal seeking tries from the base ``b0`` (``BATCH_FACTORS`` within the
    bounds table's)."""
    return sorted({max(1, int(b0 * f)) for f in BATCH_FACTORS if b0 * f <= micro_batch_max()})


def searched_accumulations(k0: int) -> list[int]:
    """The gradient accumulations goal seeking tries from the base ``k0``
    (``ACCUMULATION_FACTORS`` within the bounds table's)."""
    return [k0 * f for f in ACCUMULATION_FACTORS if k0 * f <= accumulation_max()]


def _around(row) -> tuple[list[int], list[int], tuple[str, ...]]:
    """Goal's axes around the planner's ``row`` (a ``plan.PlanRow``): the micro-batches and
    accumulations it tries from the row's, and every strategy."""
    return (searched_micro_batches(row.micro_batch), searched_accumulations(row.accumulation),
            STRATEGIES)


def searched_scenarios(base: Scenario) -> list[Scenario]:
    """``base`` at each strategy and accumulation goal seeking tries (``STRATEGIES`` x
    ``searched_accumulations``): what a note of the base scenario's flags must hold for to be
    said of every plan searched (``--zero-framework`` and ``--grad-sync`` apply to its ZeRO
    plans, whatever the base's strategy)."""
    return [base.model_copy(update={"strategy": s, "accumulation": k})
            for s in STRATEGIES for k in searched_accumulations(base.accumulation)]


@dataclass(frozen=True)
class GoalPlan:
    devices: int
    servers: int
    micro_batch: int  # samples per device per micro-step (per replica of tp x pp devices)
    accumulation: int  # micro-steps per optimizer step
    global_batch: int  # samples per optimizer step
    strategy: str
    network: str  # "as is" or an upgrade's name
    samples_per_s: float
    time_s: float
    cost_usd: float
    meets: bool  # within both the deadline and the budget
    # a transformer workload's layout (devices = dp x tp x pp x cp); None where the workload is
    # not split (data parallel: one replica per device)
    tp: int | None = None
    pp: int | None = None
    cp: int = 1  # context-parallel degree (ranks that split each sequence)
    # a searched layout's rest (``--layout search``: the planner's at its device count,
    # ``goal_layouts``); None where the layout is the scenario's own (``given``)
    schedule: str | None = None  # pipeline schedule ('none' without pp)
    virtual_stages: int | None = None  # model chunks per pipeline rank
    recompute: str | None = None  # activation recompute: none, selective, full
    sequence_parallel: bool | None = None


@dataclass(frozen=True)
class GoalNetwork:
    """A faster network than today's, as decide offers it, and its best plan for the goal."""

    name: str
    nics_per_node: int  # NICs one node exchanges over (``network_upgrades.per_node``)
    gbit_per_nic: float  # line rate of each NIC, Gbit/s
    busbw_GBps: float  # the link's all-reduce bus bandwidth, GB/s
    latency_s: float  # the link's per-hop latency, s
    extra_usd_per_server_hour: float | None  # None: no public price (its plans' cost_usd is
    # then the devices' alone, a lower bound)
    price_source: str
    # the cheapest of its plans that meets the goal, else the closest (the smallest worst
    # overshoot); None where none of its plans fits
    plan: GoalPlan | None
    nics_needed: str = ""  # 'needs 8 NICs per server (this server has 4)', else ''
    # the link's busbw the job's devices of each server reach, over its own NICs, GB/s
    # (``NetworkScenario.reached_GBps``); busbw_GBps where the job uses whole servers
    reached_busbw_GBps: float | None = None
    server_part: str = ""  # '1 of 8 GPUs per server' (``predict.server_part_words``), else ''

    @property
    def priced(self) -> bool:
        return self.extra_usd_per_server_hour is not None

    def busbw_said(self, nouns: Nouns) -> str:
        """'24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 192)', '48 GB/s
        busbw' on whole servers (``figures.busbw_words``), the server in ``nouns`` (the
        answer's ``words``: 'whole rack' on a GB200 NVL72)."""
        return busbw_words(self.busbw_GBps, self.reached_busbw_GBps, self.server_part,
                           server=nouns.server)


@dataclass(frozen=True)
class GoalAnswer:
    deadline_s: float
    budget_usd: float
    goal: str  # "time to train" or "time to quality"
    train_samples: float | None  # at the reference global batch
    reference_batch: int  # B_ref, samples per optimizer step (docs/model.md §9)
    best: GoalPlan | None  # the cheapest plan that meets the goal
    closest: GoalPlan | None  # when none does: the smallest worst overshoot
    front: list[GoalPlan]  # the Pareto front, sooner first
    evaluated: int
    runnable: int
    notes: list[str] = field(default_factory=list)
    words: Nouns = GPU_NOUNS  # the devices' nouns (``device_nouns.nouns_for``); not in to_dict
    networks: list[GoalNetwork] = field(default_factory=list)  # faster than today's, upgrades_for's order
    # the least inter-server bandwidth (else per-hop latency) on today's servers with which a
    # plan meets the goal, its money the devices' alone (``network_need``); None on a CPU
    # calibration's processes and where no plan fits
    network_need: NetworkNeed | None = None
    # where no inter-server network reaches the goal: the closest plan on an unlimited one, and
    # the time its compute alone takes, s (what bounds it)
    unlimited: GoalPlan | None = None
    unlimited_compute_s: float | None = None
    # the cheapest plan on today's network that meets the goal (None: none does), said beside
    # a best plan on a faster network: today's is enough, the faster one only cheaper
    today: GoalPlan | None = None
    # how each plan's layout was chosen (``goal_layouts.LAYOUT_MODES``): the scenario's own
    # ('given'), or the planner's best at each device count ('search')
    layout: str = "given"
    # searched: the layouts the planner evaluated (fitting or not) to choose them, and the
    # device counts it searched; None where the layout is given
    layouts_tried: int | None = None
    layout_counts: int | None = None
    # given: the layout every plan kept, in words ('tp 1 x pp 1, recompute none'; 'data
    # parallel' for a workload with no transformer shape), said where none fits; None searched
    kept_layout: str | None = None
    # the model's median relative error ε (``accuracy.median_error``), a fraction: totals within
    # it of the lowest are the same money, and the cheapest is the soonest of them
    # (``cheapest.cheapest``, decide's rule); None only where no plan runs
    model_error: float | None = None

    def describe(self, p: GoalPlan) -> str:
        """``describe`` of one of this answer's plans, in its devices' nouns (a
        ``LayoutTitle`` carrying a split plan and every plan's strategy: a page says them in
        its labels)."""
        return describe(p, self.words)

    def searched_words(self, plans: str = "plans evaluated") -> str:
        """How much was searched: '12,576 plans evaluated, 6,824 fit in memory'; searched
        layouts add what the planner ranked to choose them; where none of its layouts fits, that
        it tried them and none fits, not '0 plans evaluated'. ``plans``: what the count is of
        (the app's 'plans searched (...)')."""
        counted = f"{self.evaluated:,} {plans}, {self.runnable:,} fit in memory"
        if self.layouts_tried is None:
            return counted
        counts = f"{self.layout_counts:,} {self.words.device} count" + (
            "s" if self.layout_counts != 1 else "")
        if not self.evaluated:
            return (f"the planner tried {self.layouts_tried:,} layouts at {counts} and none fits "
                    f"in {self.words.memory}, so there was no plan to evaluate")
        return (f"{counted} (around the planner's best layouts, chosen from the "
                f"{self.layouts_tried:,} it tried at {counts})")

    @property
    def sentence(self) -> str:
        """The answer in one sentence, each layout it says carried (``retitled``, ``joined``):
        a page says it in its labels."""
        describe = self.describe
        if self.best is not None:
            b = self.best
            return retitled(describe(b), "Cheapest plan that meets the goal: ", joined(
                f": {duration_text(b.time_s)} for ${amount(b.cost_usd)}.",
                self.today_enough_words))
        if self.closest is None:
            return retitled(self.no_fit_words, "No plan runs: ", ".")
        c = self.closest
        return retitled(describe(c), "No plan meets the goal. Closest: ",
                        f": {self.time_of(c)} for ${amount(c.cost_usd)} "
                        f"(misses {self.misses(c)}).")

    @property
    def no_fit_words(self) -> str:
        """Why no plan runs, by how the layouts were chosen: 'none of the layouts searched fits
        in device memory' (search), 'nothing fits in device memory at the layout kept as given
        (tp 1 x pp 1, recompute none)' (given)."""
        if self.kept_layout is None:
            return f"none of the layouts searched fits in {self.words.memory}"
        return retitled(self.kept_layout, f"nothing fits in {self.words.memory} at the layout "
                        "kept as given (", ")")

    @property
    def today_enough_words(self) -> str:
        """Where the best plan buys a faster network though today's meets the goal: that today's
        is enough, its cheapest plan, and why the faster one costs less: its plan bills fewer
        device-hours (devices x time) than today's, more than paying its higher price; or, where
        it costs more within the model's error (the same money, ``cheapest``), that it is
        sooner. '' else."""
        b, t, w = self.best, self.today, self.words
        if b is None or t is None or b.network == "as is":
            return ""
        enough = retitled(self.describe(t), " Today's network is enough: ",
                          f": {duration_text(t.time_s)} for ${amount(t.cost_usd)}; ")
        if t.cost_usd < b.cost_usd:  # the same money at the model's error (``cheapest``)
            return joined(enough, f"{b.network} costs ${amount(b.cost_usd - t.cost_usd)} more, "
                          f"within the model's median error of {self.model_error:.1%}: the "
                          "same money, and its plan is sooner.")
        return joined(enough, f"{b.network} meets the goal for "
                      f"${amount(t.cost_usd - b.cost_usd)} less because its faster exchanges let "
                      f"fewer {w.device}-hours do the training ({whole(b.devices)} {w.devices} "
                      f"for {duration_text(b.time_s)} against {whole(t.devices)} for "
                      f"{duration_text(t.time_s)}), which saves more than its higher price "
                      "costs.")

    def time_of(self, p: GoalPlan) -> str:
        """``p``'s time to the goal, where it misses the deadline written apart from it
        (``figures.durations_apart``: '14.41 h' past a deadline of 14.40 h), as ``misses``
        writes the deadline."""
        if p.time_s > self.deadline_s:
            return durations_apart(p.time_s, self.deadline_s)[0]
        return duration_text(p.time_s)

    def misses(self, p: GoalPlan) -> str:
        """What ``p`` misses, each limit said once (its time and money are said before, its time
        by ``time_of``): 'the deadline of 3.0 days and the budget of $50,000'; a deadline its
        time would read alike at one decimal at as many more as tell them apart."""
        misses = []
        if p.time_s > self.deadline_s:
            misses.append(f"the deadline of {durations_apart(p.time_s, self.deadline_s)[1]}")
        if p.cost_usd > self.budget_usd:  # by how much, where the two print alike
            by = (f" by ${amount(p.cost_usd - self.budget_usd)}"
                  if amount(p.cost_usd) == amount(self.budget_usd) else "")
            misses.append(f"the budget of ${amount(self.budget_usd)}{by}")
        return " and ".join(misses)

    @property
    def need_sentence(self) -> str:
        """The least inter-server network with which a plan meets the goal (``network_need``),
        in one sentence; where none does, what bounds it; '' where it was not searched."""
        need = self.network_need
        if need is None or (need.reaches == "none" and self.unlimited is None):
            return ""
        if need.reaches != "none":
            return (f"Least inter-{self.words.server} network with which a plan meets the goal "
                    f"(on today's {self.words.servers} and billing, the {self.words.devices}' "
                    f"money alone, the network's price not counted): "
                    f"{need.said(self.words)}.")
        p = self.unlimited
        return retitled(self.describe(p), f"No inter-{self.words.server} network reaches the "
                        "goal: on an "
                        f"unlimited one ({link_GBps(UNLIMITED_BUSBW_GBps)} busbw, 0 us a hop) "
                        "the closest plan is ",
                        f": {self.time_of(p)} for ${amount(p.cost_usd)} (misses "
                        f"{self.misses(p)}), of which its compute alone takes "
                        f"{duration_text(self.unlimited_compute_s)}.")

    @property
    def network_sentence(self) -> str:
        """Which faster network reaches the goal (``network_answer``), in one sentence; '' where
        none is faster than today's."""
        net = network_answer(self.networks, self.deadline_s, self.budget_usd, self.model_error)
        if net is None:
            return ""
        p, describe = net.plan, self.describe
        if p is None:
            return (f"No faster network has a plan that fits in {self.words.memory} "
                    f"({', '.join(n.name for n in self.networks)}).")
        price = (f"${amount(net.extra_usd_per_server_hour)} more a {self.words.server}-hour"
                 if net.priced else "no public price")
        price += f"; {net.nics_needed}" if net.nics_needed else ""
        money = (f"${amount(p.cost_usd)}" if net.priced else
                 f"${amount(p.cost_usd)} for the {self.words.devices} plus the network, whose "
                 "price is not public")
        lead = ("No faster network meets the goal. Closest" if not p.meets else
                "Cheapest faster network that meets the goal" if net.priced else
                "Faster network that meets the goal, if its price fits the budget")
        return retitled(describe(p), f"{lead}: {net.name} ({price}): ",
                        f": {duration_text(p.time_s)} for {money}.")

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["words"]
        out["sentence"] = self.sentence
        out["network_sentence"] = self.network_sentence
        if self.network_need is not None:  # its line rate, Gbit/s per server (None: none)
            out["network_need"]["gbit_per_server"] = self.network_need.gbit_per_server
            # the busbw the job's devices must reach, GB/s (None: none)
            out["network_need"]["reached_GBps"] = self.network_need.reached_GBps
        out["need_sentence"] = self.need_sentence
        return out


def network_answer(networks: list[GoalNetwork], deadline_s: float, budget_usd: float,
                   error: float) -> GoalNetwork | None:
    """The faster network that answers "what network reaches my goal?": the cheapest priced one
    whose plan meets the goal (``cheapest.choose``: the soonest of those within the model's
    median ``error`` of the lowest money, as decide takes it, a tie in speed going to the plan
    on fewer devices); else the first unpriced one
    whose plan meets it on the devices' price alone (the slowest step up: no price tells them
    apart); else the one whose plan comes
    closest (smallest worst overshoot, as ``seek``'s closest; an unpriced one's money a lower
    bound); else the first (no plan fits on any). None where no network is faster."""
    with_plan = [n for n in networks if n.plan is not None]
    meets = [n for n in with_plan if n.plan.meets]
    if priced := [n for n in meets if n.priced]:
        return priced[choose([n.plan.cost_usd for n in priced], [n.plan.time_s for n in priced],
                             lambda i: (priced[i].plan.devices,), error)]
    if meets:
        return meets[0]
    if with_plan:
        return min(with_plan, key=lambda n: max(n.plan.time_s / deadline_s,
                                                n.plan.cost_usd / budget_usd))
    return networks[0] if networks else None




def unpriced_network_note(name: str, nouns: Nouns) -> str:
    """Goal's note on a faster network with no public price (``name``), in words that need no
    place on the page: the CLI prints it under its tables, the app above its front's table."""
    return (f"{name}: no public price, so the answer and the time-against-money front leave it "
            f"out, and the money said for its plans is the {nouns.devices}' alone")


def _split_of(split) -> str:
    """A scenario's split (``ScenarioLayout``) in words: 'tp 2 x pp 1', ' x cp 2' after where
    context parallelism splits it."""
    return split_words(None, split.tp, split.pp, split.cp if split.cp > 1 else None)


def kept_said(split, recompute: str | None = None, before: str = "",
              after: str = "") -> LayoutTitle:
    """'<before>tp 2 x pp 1, recompute none<after>': a scenario's split (``ScenarioLayout``,
    ``_split_of``) and, where given, its ``recompute``, which goal keeps at every count,
    carrying each as a setting kept (``layout_change.Changes``, old = new: a page
    says it by its control, 'Tensor parallel 2, Pipeline stages 1, Activation recompute
    none')."""
    degrees = [("tp", split.tp), ("pp", split.pp), *([("cp", split.cp)] if split.cp > 1 else [])]
    kept = [(name, str(value), str(value)) for name, value in degrees]
    kept += [("recompute", recompute, recompute)] if recompute is not None else []
    text = _split_of(split) + (f", recompute {recompute}" if recompute is not None else "")
    return titled(before, text, after, said=Changes(kept))


def kept_setting_refusal(base: Scenario):
    """Where goal keeps the scenario's layout (``given``) and one of its settings means
    nothing on it (``layout.unused_settings``, predict's rule: ``--tp-overlap`` at ``--tp 1``),
    predict's rule and what to change in goal's words, a ``Refusal`` whose template names the
    knobs (the app says them in its labels, ``errors.in_words_of``); None where every setting
    applies. Before the sweep, whose words are its own ("every row of the sweep", --X-values)."""
    from scalesim.layout import unused_settings
    from scalesim.layout_predict import layout_of
    from scalesim.sweep import one_value_words

    split = layout_of(base)
    unused = unused_settings(split.tp, split.pp, split.schedule, int(split.virtual_stages),
                             bool(split.sequence_parallel), bool(split.tp_overlap),
                             bool(split.p2p_overlap))
    for name, (nowhere, rule) in unused.items():
        if not bool(nowhere):
            continue
        what = one_value_words(name, getattr(split, name), flag=getattr(KNOB, name))
        return knob_refusal(f"{rule.template}; goal keeps this layout at every device count, so "
                            f"none of its plans would use {what}: give the layout it needs, or "
                            f"drop {what}", (name,))
    return None


def kept_layout_words(profile: Profile, base: Scenario) -> str:
    """The layout ``--layout given`` keeps at every count, in words: its split and recompute
    ('tp 1 x pp 1, recompute none'), 'data parallel' for a workload with no transformer shape."""
    from scalesim.layout_predict import layout_of

    if profile.workload.transformer is None:
        return "data parallel"
    split = layout_of(base)
    return kept_said(split, split.recompute_of(profile.workload))


def describe(p: GoalPlan, words: Nouns = GPU_NOUNS) -> str:
    """A plan in words: '16 devices (2 servers), micro-batch 64 x 1 accumulation, ddp, network
    as is'; with a layout, whose micro-batch is per replica of tp x pp devices, '16 devices
    (2 servers) as dp 8 x tp 2 x pp 1, micro-batch 4 per replica x 8 accumulation (global batch
    256), ...', a ``LayoutTitle`` carrying ``p`` (a page says its layout in its labels), its
    strategy carried too (``strategy_said``); ``words``: the devices' nouns ('2 processes (1
    host)' on a CPU calibration)."""
    where = f"{words.count(p.devices)} ({words.count(p.servers, 'server')})"
    rest = strategy_said(p.strategy, ", ", f", network {p.network}")
    if p.tp is None or p.pp is None:
        return joined(where, joined(batch_said(p, ", "), rest))
    batch = joined(batch_said(p, ", ", f" (global batch {p.global_batch:,})"), rest)
    return titled(f"{where} as ", plan_layout_words(p), batch, said=p)


def batch_said(p: GoalPlan, before: str = "", after: str = "") -> LayoutTitle:
    """'<before>micro-batch 4 per replica x 8 accumulation<after>' (a split plan's micro-batch
    is per replica; 'micro-batch 64 x 1 accumulation' unsplit): each number carried as a setting
    kept (as ``strategy_said``; a split plan's as ``REPLICA_MICRO_BATCH``), so a page says it
    by its control, 'Micro-batch 4 per model replica x Gradient accumulation 8'."""
    micro, steps = str(p.micro_batch), str(p.accumulation)
    split = p.tp is not None and p.pp is not None
    setting, per = (REPLICA_MICRO_BATCH, " per replica") if split else ("micro-batch", "")
    return joined(titled(before, f"micro-batch {micro}{per}", " x ",
                         said=Changes([(setting, micro, micro)])),
                  titled("", f"{steps} accumulation", after,
                         said=Changes([("accumulation", steps, steps)])))


def strategy_said(strategy: str, before: str = "", after: str = "") -> LayoutTitle:
    """'<before>zero2<after>': a plan's ZeRO strategy, carried as a setting kept (a ``Changes``,
    old = new, as ``kept_said``: a page says it by its control, 'Strategy ZeRO-2')."""
    return titled(before, strategy, after, said=Changes([(ZERO, strategy, strategy)]))


def plan_dp(p: GoalPlan) -> int:
    """A split plan's data-parallel degree: its devices over tp x pp x cp."""
    return p.devices // (p.tp * p.pp * p.cp)


def plan_layout_words(p: GoalPlan) -> str:
    """A split plan's layout in words: 'dp 8 x tp 2 x pp 1' (``x cp 2`` where context
    parallelism splits it), a searched one's rest after it, 'dp 8 x tp 2 x pp 1 (recompute
    full, sequence parallel)' (``searched_layout_words``)."""
    split = split_words(plan_dp(p), p.tp, p.pp, p.cp if p.cp > 1 else None)
    return split if p.recompute is None else f"{split} ({searched_layout_words(p)})"


def searched_layout_words(p: GoalPlan) -> str:
    """The rest of a searched plan's layout in words: '1F1B, recompute full, sequence
    parallel'; 'recompute none' without a pipeline; the schedule as every title writes it
    (``layout.schedule_words``: 'interleaved 1F1B, 2 virtual stages')."""
    parts = [schedule_words(p.schedule, p.virtual_stages)] if p.pp and p.pp > 1 else []
    parts.append(f"recompute {p.recompute}")
    parts += ["sequence parallel"] if p.sequence_parallel else []
    return ", ".join(parts)


def device_grid(devices_per_node: int, max_devices: int,
                allocation: int | None = None) -> list[int]:
    """Powers of two below one server, and above it those that fill whole allocation units of
    ``allocation`` devices where that unit is smaller than the server (``layout.runs_on_count``;
    None: the server, none above it), then every whole number of servers up to the maximum
    (past ``WHOLE_SERVERS`` servers, server counts 1/``WHOLE_SERVERS`` apart, and the largest):
    128 and 256 GPUs of 72-GPU racks of 4-GPU trays beside 72, 144 and 216."""
    trays = allocation not in (None, devices_per_node)
    small = [2**i for i in range(0, 20) if 2**i <= max_devices and (
        2**i < devices_per_node or trays and runs_on_count(2**i, devices_per_node, allocation))]
    most = max_devices // devices_per_node
    servers = set(range(1, min(most, WHOLE_SERVERS) + 1))
    n = WHOLE_SERVERS
    while n < most:  # n // WHOLE_SERVERS >= 1 here: each step grows by at most 1/WHOLE_SERVERS
        n = min(n + n // WHOLE_SERVERS, most)
        servers.add(n)
    return sorted(set(small) | {n * devices_per_node for n in servers}) or [1]


def pareto_front(time_s: np.ndarray, cost_usd: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both (sooner and cheaper), sooner first."""
    order = np.lexsort((cost_usd, time_s))
    best_cost, keep = np.inf, []
    for i in order:
        if cost_usd[i] < best_cost:
            keep.append(i)
            best_cost = cost_usd[i]
    return np.asarray(keep, dtype=np.int64)


@dataclass(frozen=True)
class GoalControls:
    """How the caller of ``seek`` names what its notes tell a user to change: ``name`` of a
    layout knob's field ('tp', 'pp', 'cp': ``bounds.LAYOUT_KNOBS``), the largest device count
    searched (None: the caller has no control for it, and the notes say how far it searched),
    where the layouts that fit are ranked, and where those controls are. The CLI's flags by
    default (``CLI_CONTROLS``); the app passes its sidebar labels."""

    name: Callable[[str], str]
    max_devices: str | None
    layouts: str
    place: str = ""  # where those controls are ('in the sidebar's Layout')
    # how goal's layout choice ``mode`` (``goal_layouts.LAYOUT_MODES``) is asked: the CLI's
    # flag ('--layout given'), the app's control and where it is
    layout: str = "--layout {mode}"
    # where a workload with a transformer shape is found
    transformers: str = "give a transformer workload (scalesim presets)"
    # where the hardware preset is picked (``layout.HARDWARE_KNOB``)
    hardware: str = "--hardware"
    # how the kept layout's stage note names its pipeline (a ``schemas.Layout`` to words: the
    # app's 'Pipeline stages 3'); None: the CLI's 'pp 3' (``pipeline_stages.pipeline_words``)
    pipeline: Callable[..., str] | None = None

    def named(self, *fields: str) -> tuple[str, ...]:
        """``fields``, the knobs a refusal names through these controls, where they are the
        caller's own (the app's labels); () for the CLI's flags (``CLI_CONTROLS``): the
        refusal's ``ScalesimError.controls_named``."""
        return () if self is CLI_CONTROLS else fields

    def stage_words(self, profile: Profile, split) -> str:
        """What the stages of ``split`` (a ``schemas.Layout``) hold, where uneven in a framework
        (``pipeline_stages.layout_stage_words``), its pipeline named as ``pipeline`` names it."""
        from scalesim.pipeline_stages import layout_stage_words

        return layout_stage_words(profile, split, self.pipeline and self.pipeline(split))

    def split(self, *fields: str, sep: str = ", ") -> str:
        """'--tp, --pp' (the CLI), 'Tensor parallel, Pipeline stages in the sidebar's Layout'
        (the app)."""
        return sep.join(self.name(f) for f in fields) + (f" {self.place}" if self.place else "")


CLI_CONTROLS = GoalControls(name=lambda f: LAYOUT_KNOB_BY_FIELD[f].flag,
                            max_devices="--max-devices", layouts="scalesim plan ranks the layouts "
                            "that fit")


def memory_words(nouns: Nouns, held: tuple[int, list[tuple[str, float]]] | None,
                 controls: GoalControls = CLI_CONTROLS) -> str:
    """'use GPUs with more memory', naming the presets ``held`` found (the largest count
    searched and the presets whose devices hold the planner's layout needing least memory
    there: ``goal_layouts.least_memory_holders``) and where a preset is picked (``controls``)."""
    if held is None:
        return f"use {nouns.devices} with more memory"
    devices, presets = held
    words = memory_ways(presets, nouns, f"the layout needing least memory at {nouns.count(devices)}")
    return words + (f"; pick it with {controls.hardware}" if presets else "")


def no_fit_note(profile: Profile, base: Scenario, max_devices: int,
                controls: GoalControls = CLI_CONTROLS, searched: bool = False,
                held: tuple[int, list[tuple[str, float]]] | None = None) -> str:
    """What to change where no plan of ``seek`` fits in memory: the split (a transformer's tp x
    pp, which goal keeps as given) or the largest count searched, named as ``controls``;
    ``searched``: the layouts were the planner's (``--layout search``), none of which fits;
    ``held``: the presets whose devices hold its layout needing least memory (``memory_words``)."""
    from scalesim.layout_predict import layout_of

    nouns = hardware_nouns(profile.hardware)
    # where the caller can search further, say how; else how far it searched
    more = (f"search more {nouns.devices} ({controls.max_devices}, now {whole(max_devices)})"
            if controls.max_devices else None)
    upto = "" if more else f" up to {whole(max_devices)} {nouns.devices}"
    if searched:
        return (f"nothing fits in {nouns.memory}{upto} at any layout the planner searches (every "
                "tp x pp split, ZeRO stage, micro-batch and recompute): "
                + (f"{more}, or " if more else "") + memory_words(nouns, held, controls))
    if profile.workload.transformer is None:
        return (f"nothing fits in {nouns.memory}{upto}: "
                + (f"{more}, or " if more else "") + f"use {nouns.devices} with more memory")
    split = layout_of(base)
    further = (f"split the model further ({controls.split('tp', 'pp')}; {controls.layouts})"
               + (f", or {more}" if more else ""))
    recompute = split.recompute_of(profile.workload)
    if recompute == "full":  # the kept layout carried (``kept_said``): a page's labels
        return kept_said(split, None, "goal keeps the split as given (",
                         f") and nothing fits at it{upto}: {further}")
    # recompute is kept as given too: full recompute is often what makes a model fit (predict's
    # hint names it as well, cmd_predict._fit_hints)
    return kept_said(split, recompute, "goal keeps the split and recompute as given (",
                     f") and nothing fits at them{upto}: recompute the activations "
                     f"({controls.name('recompute')} full), {further}")


def seek(profile: Profile, base: Scenario, deadline_s: float, budget_usd: float,
         max_devices: int = GOAL_DEFAULT_MAX_DEVICES,
         controls: GoalControls = CLI_CONTROLS, layout: str | None = None) -> GoalAnswer:
    """See the module docstring. ``base`` gives the training length, price and fixed knobs;
    ``controls`` how the notes name what to change (the CLI's flags, or the app's labels);
    ``layout``: 'given' keeps the scenario's layout at every count, 'search' takes the
    planner's best at each (``goal_layouts``); None: ``goal_layouts.default_layout``."""
    from scalesim.layout import tp_server_refusal
    from scalesim.layout_predict import layout_of, uses_layouts

    bound("deadline_s").check(deadline_s, "deadline_s")
    bound("budget_usd").check(budget_usd, "budget_usd")
    bound("devices").check(max_devices, "max_devices", knobs=("max_devices",))
    if base.global_batch is not None:
        raise ScalesimError("goal seeking varies the per-device batch: give a micro-batch, not a "
                            "fixed global batch", knobs=("global_batch",))
    goal = training_time.resolve_goal(profile, base)
    if goal.kind is None:
        raise ScalesimError(knob_refusal(  # the controls as the caller names them (the app's)
            f"goal seeking needs a training length: give {KNOB.train_samples}, or "
            f"{KNOB.min_samples_to_quality} with {KNOB.critical_batch_size} for time to quality",
            training_time.TRAINING_LENGTH_KNOBS))
    if goal.price_per_device_hour is None:
        raise ScalesimError(knob_refusal(f"goal seeking needs a price per device-hour: give "
                                         f"{KNOB.price_per_device_hour}",
                                         ("price_per_device_hour",)))
    mode = layout or default_layout(profile, base)
    check_layout_mode(profile, mode, controls.transformers,
                      controls.layout.format(mode="search"), controls.named("goal_layout"))
    g, unit = job_unit(profile.hardware, base)
    b0 = base.micro_batch or profile.workload.micro_batch
    k0 = base.accumulation
    # B_ref: the global batch of the base knobs on one full server, micro-batch x its
    # data-parallel replicas x accumulation; a split model's micro-batch is per replica of
    # tp x pp devices, so one server of 8 at tp 8 runs one replica (dp 1), not 8
    split = layout_of(base)
    if mode == "given" and (why := tp_server_refusal(  # at every count: predict's refusal,
            split.tp, g, hardware_nouns(profile.hardware),  # not 'no count'
            profile.hardware.devices_per_node, **shape_heads(profile.workload.transformer))):
        raise ScalesimError(why)
    if mode == "given" and (unused := kept_setting_refusal(base)):
        raise ScalesimError(unused)
    replicas = max(1, g // replica_devices(split.tp, split.pp, split.cp))
    reference = b0 * replicas * k0
    notes: list[str] = []
    if (mode == "given" and base.layout is not None
            and base.layout.shard_group is not None):  # §16, hybrid sharding
        where = ("scalesim plan ranks hybrid sharding" if profile.workload.transformer
                 is not None else "scalesim predict --shard-group compares it")
        notes.append(f"shard group {base.layout.shard_group} left out: goal seeking tries DDP "
                     f"and every ZeRO stage at every device count, fully sharded ({where})")
        base = base.model_copy(update={"layout": base.layout.model_copy(
            update={"shard_group": None})})

    if is_cpu_device(profile.hardware.device_name):
        notes.append(CPU_NO_UPGRADES)
    # today's network (None), then each faster one as decide runs it (its link's bandwidth and
    # latency, NICs, billed shapes: ``network_scenario``); an unpriced one is searched for the
    # network answer only, its money the devices' alone
    grid = device_grid(g, max_devices, unit)
    faster = network_scenarios(profile, base)
    nets: list[NetworkScenario | None] = [None, *(faster if grid[-1] > g else [])]
    if faster and grid[-1] <= g:  # one server: no inter-server link for a faster one to speed
        nouns = hardware_nouns(profile.hardware)
        searched = f" ({controls.max_devices})" if controls.max_devices else ""
        notes.append(f"no faster network searched: every {nouns.device} count up to "
                     f"{whole(max_devices)}{searched} runs on one {nouns.server}, which no "
                     f"{nouns.link('inter_node')} joins")
    for net in nets[1:]:
        if not net.priced:
            notes.append(unpriced_network_note(net.upgrade.name,
                                               hardware_nouns(profile.hardware)))
    axes = {
        "devices": grid,
        "micro_batch": searched_micro_batches(b0),
        "accumulation": searched_accumulations(k0),
        "strategy": list(STRATEGIES),
    }
    groups, tried = [LayoutGroup(None, axes)], None
    if mode == "search":  # the planner's best layout at each count, on today's network
        chosen = searched_groups(profile, base, grid, reference, g, _around)
        groups, tried = chosen.groups, (chosen.layouts_tried, len(grid))
        notes.append(searched_note(reference, g, bool(faster and grid[-1] > g),
                                   controls.layout.format(mode="given")))
    if not groups:  # the planner found no layout that fits at any count
        return _nothing_fits(profile, base, deadline_s, budget_usd, goal, reference, max_devices,
                             controls, notes, tried, least_memory_holders(chosen))
    graded = _graded_on(profile, base, nets, groups, goal, reference)
    res = graded[0][0]
    if res.size == 0:  # every combination broke a layout rule: nothing to rank
        split, nouns = layout_of(base), hardware_nouns(profile.hardware)
        raise ScalesimError(
            f"no {nouns.device} count up to {whole(max_devices)} can run the layout "
            f"{_split_of(split)}: all {res.dropped:,} combinations break a "
            f"layout rule (tp x pp{' x cp' if split.cp > 1 else ''} must divide the "
            f"{nouns.devices}, tp stays in a {nouns.server}, the layers and heads must split"
            f"{', 2 x cp the sequence' if split.cp > 1 else ''}); change "
            + controls.split("tp", "pp", *(["cp"] if split.cp > 1 else []), sep="/")
            + (f" or {controls.max_devices}" if controls.max_devices else ""),
            knobs=("tp", "pp", *(("cp",) if split.cp > 1 else ()), "max_devices"),
            controls_named=controls.named("tp", "pp", *(("cp",) if split.cp > 1 else ()),
                                          *(("max_devices",) if controls.max_devices else ())))
    c, on, time_s, cost = _pooled(graded)
    costed = np.isin(on, [i for i, n in enumerate(nets) if n is None or n.priced])
    # totals within the model's median error of the lowest are the same money (decide's rule)
    error = median_error(uses_layouts(profile, base))
    if mode == "search":  # the layouts near the answer re-searched at the batches goal tries
        extra = _refined(profile, base, chosen, c, on, time_s, cost, costed, deadline_s,
                         budget_usd, error)
        if extra is not None:
            tried = (tried[0] + extra.layouts_tried, tried[1])
            notes.append(refined_note(extra, hardware_nouns(profile.hardware)))
        if extra is not None and extra.groups:  # priced beside the others, on every network
            more = _graded_on(profile, base, nets, extra.groups, goal, reference)
            graded = [_joined(a, b) for a, b in zip(graded, more, strict=True)]
            groups = groups + extra.groups
            c, on, time_s, cost = _pooled(graded)
            costed = np.isin(on, [i for i, n in enumerate(nets) if n is None or n.priced])
    runs_ok = _runs(c, time_s, cost)
    ok = runs_ok & costed  # the plans above: an unpriced network's money is not known
    within = runs_ok & (time_s <= deadline_s) & (cost <= budget_usd)
    meets = within & costed
    # a faster network's own plan spans servers: on one server its link carries nothing, and
    # that plan is today's (billed in the upgrade's shapes): no answer to "what network?"
    across = np.asarray(c["nodes"]) > 1

    def plan(i: int) -> GoalPlan:
        return _goal_plan(c, i, time_s, cost, bool(within[i]),
                          "as is" if nets[on[i]] is None else nets[on[i]].upgrade.name)

    idx = np.flatnonzero(ok)
    best = closest = today = None
    front: list[GoalPlan] = []
    plainer = plainer_rows(c["devices"], on)  # a tie in money and speed: less to buy or rent
    at_most: list[str] = []  # whose soonest plan of the same money is at the most devices
    if idx.size:
        answer_i = _best_on(ok, runs_ok, meets, time_s, cost, deadline_s, budget_usd, error,
                            plainer)
        lowest_i = answer_i  # the lowest money that meets the goal, named where not the answer
        lead_i = answer_i  # the soonest of the same money, named where the speed tie passed it
        if meets[answer_i]:
            best = plan(answer_i)
            lowest_i = _best_on(ok, runs_ok, meets, time_s, cost, deadline_s, budget_usd, 0.0)
            lead_i = _best_on(ok, runs_ok, meets, time_s, cost, deadline_s, budget_usd, error)
            words = hardware_nouns(profile.hardware)
            if lead_i != answer_i:  # the soonest of the same money, tied in speed
                notes.append(same_speed_note(best, plan(lead_i), error, words))
            if lowest_i not in (answer_i, lead_i):
                lowest = plan(lowest_i)
                notes.append(same_money_note(best, lowest, error, words)
                             if lowest.time_s > best.time_s
                             else same_speed_note(best, lowest, error, words))
            today_i = _best_on(on == 0, runs_ok, meets, time_s, cost, deadline_s, budget_usd,
                               error, plainer)
            if int(c["devices"][lead_i]) == grid[-1]:  # the same money's soonest: the bound's
                at_most.append("the answer")
            today = plan(today_i) if today_i is not None and meets[today_i] else None
        else:
            closest = plan(answer_i)
        pf = idx[pareto_front(time_s[idx], cost[idx])]
        if pf.size > MAX_FRONT:  # thinned evenly, the answer's plan kept (it is on the front)
            keep = set(np.linspace(0, pf.size - 1, MAX_FRONT).round().astype(int).tolist())
            keep |= set(np.flatnonzero((pf == answer_i) | (pf == lowest_i) | (pf == lead_i))
                        .tolist())
            among = ("the answer's plan" if answer_i in pf else  # off it: within ε of the lead
                     "the plan the answer ties with in speed and money")
            notes.append(f"{len(keep)} of the {pf.size} plans on the front shown: spread evenly "
                         f"from the soonest to the cheapest, {among} among them")
            pf = pf[sorted(keep)]
        front = [plan(int(i)) for i in pf]
    if not idx.size:  # the answer's "No plan runs": what to change
        notes.append(no_fit_note(profile, base, max_devices, controls, mode == "search",
                                 least_memory_holders(chosen) if mode == "search" else None))
    elif mode == "given" and (stages := controls.stage_words(profile, layout_of(base))):
        notes.append(stages)  # every plan keeps the split: what its stages hold, where uneven
    if note := training_time.zero_price_note(goal):
        notes.append(note)
    need = unlimited = compute_s = None
    if idx.size and not is_cpu_device(profile.hardware.device_name) and grid[-1] > g:
        # (every count on one server: no inter-server network to size, the note above says so)
        # each named network is enough where its own row meets the goal (its plans on two or
        # more servers, billed in its instances, its price where public): what its user pays
        row_meets = {net.upgrade.key: bool(((on == i) & across & within).any())
                     for i, net in enumerate(nets) if net is not None}
        need, unlimited, compute_s = _network_need(profile, base, groups, goal, reference,
                                                   deadline_s, budget_usd, faster, row_meets,
                                                   error)
    for i, net in enumerate(nets):  # each faster network's row, as the answer
        lead_i = None if net is None else _best_on((on == i) & across, runs_ok, within, time_s,
                                                   cost, deadline_s, budget_usd, error)
        if lead_i is not None and within[lead_i] and int(c["devices"][lead_i]) == grid[-1]:
            at_most.append(f"{net.upgrade.name}'s row")
    if at_most:
        notes.append(most_searched_note(at_most, grid[-1], controls,
                                        hardware_nouns(profile.hardware)))
    answer = best or closest
    if answer is not None and (note := training_time.partial_batch_note(
            goal, answer.global_batch, reference, "--batch")):
        notes.append(note)  # the answer's plan is charged one whole step
    if goal.critical_batch is None:
        notes.append("no critical batch size: a bigger global batch is assumed to need no more "
                     "samples, which favours large batches; give one to charge the penalty")
    elif goal.kind == "train":  # which batch --train-samples counts at decides every plan's
        notes.append(f"the training length counts samples at a global batch of {reference:,} "
                     f"(micro-batch {b0} x {count(replicas, 'replica')} of one "
                     f"{hardware_nouns(profile.hardware).server} x "
                     f"accumulation {k0}); at critical batch {goal.critical_batch:,.0f} a plan at "
                     "another global batch needs more samples (a bigger one) or fewer")
    return GoalAnswer(deadline_s=float(deadline_s), budget_usd=float(budget_usd),
                      goal=goal.label(), train_samples=goal.train_samples,
                      reference_batch=int(reference), best=best, closest=closest, front=front,
                      evaluated=int(costed.sum()), runnable=int(ok.sum()), notes=notes,
                      words=hardware_nouns(profile.hardware), network_need=need,
                      unlimited=unlimited, unlimited_compute_s=compute_s, today=today,
                      layout=mode, layouts_tried=None if tried is None else tried[0],
                      kept_layout=kept_layout_words(profile, base) if mode == "given" else None,
                      layout_counts=None if tried is None else tried[1], model_error=error,
                      networks=[_network_row(net, _best_on((on == i) & across, runs_ok, within,
                                                           time_s, cost, deadline_s, budget_usd,
                                                           error, plainer),
                                             plan, server_part_words(profile.hardware, base))
                                for i, net in enumerate(nets) if net is not None])


def same_money_note(answer: GoalPlan, lowest: GoalPlan, error: float,
                    words: Nouns = GPU_NOUNS) -> str:
    """Where the answer (``answer``) is not the plan of the lowest money that meets the goal
    (``lowest``): that the lowest costs less by under the model's median ``error`` (a
    fraction), so the two are the same money, and goal takes the sooner (``cheapest.cheapest``,
    the rule decide chooses by)."""
    less = answer.cost_usd - lowest.cost_usd
    share, within = percents_apart(less / lowest.cost_usd, error)  # never '2.9%' under '2.9%'
    share = "under 0.1%" if less / lowest.cost_usd < 0.0005 else share
    return retitled(describe(lowest, words), "",
                    f": {duration_text(lowest.time_s)} for ${amount(lowest.cost_usd)} costs "
                    f"${amount(less)} ({share}) less than the answer, within the model's median "
                    f"error of {within}: the same money, so goal takes the sooner plan, as "
                    "decide does")


def same_speed_note(answer: GoalPlan, other: GoalPlan, error: float,
                    words: Nouns = GPU_NOUNS) -> str:
    """Where a plan (``other``) the same money as the answer (``answer``) is sooner, or as soon,
    by under the model's median ``error`` (a fraction): that the two are the same speed and
    money, and goal takes the plainer, the answer (on today's network, or on fewer devices:
    ``plainer_rows``), as decide's tie goes to the option with less to buy
    (``cheapest.plainest``)."""
    sooner = other.time_s / answer.time_s - 1.0
    share, within = percents_apart(-sooner, error)  # never '2.9%' under '2.9%'
    speed = (f"{'under 0.1%' if -sooner < 0.0005 else share} sooner than" if sooner < 0
             else "as soon as")
    less = answer.cost_usd - other.cost_usd
    money = (f" and ${amount(less)} cheaper" if less > 0 else
             f" and ${amount(-less)} dearer" if less < 0 else "")
    plainer = ("on today's network, nothing to buy"
               if answer.network == "as is" != other.network else
               f"on fewer {words.devices}, fewer to rent at once")
    return retitled(describe(other, words), "",
                    f": {duration_text(other.time_s)} for ${amount(other.cost_usd)} is {speed} "
                    f"the answer{money}, within the model's median error of {within}: the same "
                    f"speed and money, so goal takes the plainer plan ({plainer}), as decide "
                    "takes the option with less to buy")


def most_searched_note(whose: list[str], most: int, controls: GoalControls,
                       words: Nouns = GPU_NOUNS) -> str:
    """Where the soonest plan of the same money as the answer (or as a faster network's row:
    ``whose``, "the answer", "<network>'s row") runs on the most devices goal searched
    (``most``): that the count is the search's bound, not the goal's (more devices might be
    as cheap and sooner still), and how to give the most the user can rent at once
    (``controls.max_devices``, where the caller has it)."""
    names = whose[0] if len(whose) == 1 else f"{', '.join(whose[:-1])} and {whose[-1]}"
    give = (f"; give {controls.max_devices} the most {words.devices} you can rent at once"
            if controls.max_devices else "")
    return (f"for {names}, the soonest plan of the same money runs on {whole(most)} "
            f"{words.devices}, the most searched: that count is the search's bound, not the "
            f"goal's (more {words.devices} may be as cheap and sooner still){give}")


def searched_note(reference: int, devices_per_node: int, networks: bool,
                  given: str = "--layout given") -> str:
    """What ``--layout search`` did, in a note; ``networks``: faster networks were searched
    too (they run the layouts chosen on today's); ``given``: how the scenario's own layout is
    asked (``GoalControls.layout``)."""
    share = reference / devices_per_node
    return (f"layouts searched: at each device count the planner's best (scalesim plan, ranked "
            f"by throughput at the reference global batch scaled to the count, {share:g} samples "
            "per device), its micro-batch and accumulation varied as goal varies them, every "
            "strategy, fully sharded"
            + ("; chosen on today's network, and run as chosen on each faster one (another "
               "layout may be faster there: its time is at most the one shown)" if networks
               else "")
            + f"; {given} keeps the scenario's own")


def refined_note(refined: Searched, nouns: Nouns) -> str:
    """What the refinement did (``_refined``), in a note: the counts it searched again, at how
    many global batches, and how many of the planner's rows it added."""
    counts = sorted(refined.best)
    batches = sum(len(rows) for rows in refined.best.values())
    return (f"layouts refined near the answer: at {count_list(counts)} {nouns.devices} (the "
            f"counts whose plans come within {NEAR:.0%} of the answer, at most {MOST_REFINED}) "
            f"the planner also ranked the layouts at each other global batch goal's grid spans "
            f"there ({BATCH_SPAN[0]:g} to {BATCH_SPAN[-1]:g} x the reference scaled to it); "
            f"{count(len(refined.groups), 'layout group')} added from its best rows at "
            f"{count(batches, 'global batch size')}")


def _nothing_fits(profile: Profile, base: Scenario, deadline_s: float, budget_usd: float,
                  goal: training_time.Goal, reference: int, max_devices: int,
                  controls: GoalControls, notes: list[str],
                  tried: tuple[int, int],
                  held: tuple[int, list[tuple[str, float]]] | None) -> GoalAnswer:
    """The answer where the planner found no layout that fits at any count searched;
    ``tried``: the layouts it evaluated and the device counts it searched; ``held``: the
    presets whose devices hold its layout needing least memory (``memory_words``)."""
    notes.append(no_fit_note(profile, base, max_devices, controls, searched=True, held=held))
    return GoalAnswer(deadline_s=float(deadline_s), budget_usd=float(budget_usd),
                      goal=goal.label(), train_samples=goal.train_samples,
                      reference_batch=int(reference), best=None, closest=None, front=[],
                      evaluated=0, runnable=0, notes=notes,
                      words=hardware_nouns(profile.hardware), layout="search",
                      layouts_tried=tried[0], layout_counts=tried[1])


def _goal_plan(c: dict, i: int, time_s: np.ndarray, cost: np.ndarray, meets: bool,
               network: str) -> GoalPlan:
    """Row ``i`` of a sweep's columns ``c`` as a plan, with its time (s) and money (USD)."""
    return GoalPlan(
        devices=int(c["devices"][i]), servers=int(c["nodes"][i]),
        micro_batch=int(c["micro_batch"][i]), accumulation=int(c["accumulation"][i]),
        global_batch=int(c["global_batch"][i]), strategy=str(c["strategy"][i]),
        network=network, samples_per_s=float(c["samples_per_s"][i]), time_s=float(time_s[i]),
        cost_usd=float(cost[i]), meets=meets,
        tp=int(c["tp"][i]) if "tp" in c else None, pp=int(c["pp"][i]) if "pp" in c else None,
        cp=int(c["cp"][i]) if "cp" in c else 1,
        **({name: c[LAID + name][i] for name in ("schedule", "recompute")}
           | {"virtual_stages": int(c[LAID + "virtual_stages"][i]),
              "sequence_parallel": bool(c[LAID + "sequence_parallel"][i])}
           if LAID + "recompute" in c else {}))


def _network_need(profile: Profile, base: Scenario, groups: list[LayoutGroup], goal: training_time.Goal,
                  reference: int, deadline_s: float, budget_usd: float,
                  networks: list[NetworkScenario], row_meets: dict[str, bool],
                  error: float) -> tuple[NetworkNeed, GoalPlan | None, float | None]:
    """The least inter-server network on today's servers with which a plan of ``groups`` meets
    the goal, its money the devices' alone (a bandwidth has no price: ``network_need``), and
    each of ``networks`` by what it gives the job and whether its own row meets the goal
    (``row_meets`` by upgrade key: its plans billed in its instances, with its price where
    public, as the user pays; so the sentence and the row agree); where none does, the plan
    that comes closest on an unlimited one (``UNLIMITED_BUSBW_GBps``, 0 s a hop) and its
    compute's share of its time, s (what bounds it), else None and None."""
    graded: dict[tuple, tuple] = {}  # by the network's (busbw, latency): the search's last
    # test (unlimited, 0 s a hop) is the closest plan's grid where nothing reaches the goal

    def meets(scenario: Scenario) -> tuple:
        key = (scenario.inter_busbw_GBps, scenario.inter_latency_s)
        if key not in graded:
            run, t, m = _graded(profile, scenario, groups, goal, reference, None)
            ok = _runs(run.columns, t, m)
            graded[key] = (run.columns, t, m, ok, ok & (t <= deadline_s) & (m <= budget_usd))
        return graded[key]

    need = network_need(profile, base, lambda s: bool(meets(s)[4].any()), networks,
                        enough=lambda net: row_meets[net.upgrade.key],
                        upgrades_basis=UPGRADES_BASIS)
    if need.reaches != "none":
        return need, None, None
    c, t, m, ok, within = meets(base.model_copy(update={
        "inter_busbw_GBps": UNLIMITED_BUSBW_GBps, "inter_latency_s": 0.0}))
    i = _best_on(ok, ok, within, t, m, deadline_s, budget_usd, error,
                 plainer_rows(c["devices"], np.zeros(len(t), dtype=int)))
    if i is None:
        return need, None, None
    compute_s = float(t[i] * c["compute_s"][i] / c["step_time_s"][i])
    return need, _goal_plan(c, i, t, m, False, "unlimited"), compute_s


def _graded_on(profile: Profile, base: Scenario, nets: list[NetworkScenario | None],
               groups: list[LayoutGroup], goal: training_time.Goal, reference: int) -> list:
    """``_graded`` of ``groups`` on each of ``nets`` (None: today's network)."""
    return [_graded(profile, base, groups, goal, reference, None) if n is None else
            _graded(n.profile, n.scenario, groups, goal, reference, n) for n in nets]


def _pooled(graded: list) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """The rows of every network's ``_graded`` together: (columns, each row's network index,
    time to the goal in s, money in USD)."""
    runs = [r for r, _, _ in graded]
    c = {k: np.concatenate([r.columns[k] for r in runs]) for k in runs[0].columns}
    on = np.concatenate([np.full(r.size, i) for i, r in enumerate(runs)])
    return (c, on, np.concatenate([t for _, t, _ in graded]),
            np.concatenate([m for _, _, m in graded]))


def _joined(a: tuple, b: tuple) -> tuple:
    """Two ``_graded`` of one network as one: the columns both have, row after row."""
    (ra, ta, ma), (rb, tb, mb) = a, b
    columns = {k: np.concatenate([ra.columns[k], rb.columns[k]])
               for k in ra.columns if k in rb.columns}
    return (SweepResult(columns=columns, drops=ra.drops + rb.drops),
            np.concatenate([ta, tb]), np.concatenate([ma, mb]))


def _refined(profile: Profile, base: Scenario, chosen: Searched, c: dict, on: np.ndarray,
             time_s: np.ndarray, cost: np.ndarray, costed: np.ndarray, deadline_s: float,
             budget_usd: float, error: float) -> Searched | None:
    """The searched layouts refined near goal's answer (docs/model.md section 21): at the
    counts whose plans come near it (``goal_layouts.near_counts``), the planner's best layout
    at each other global batch goal tries there (``goal_layouts.refined_groups``); None where
    no plan runs. Priced beside the others, a refined plan becomes the answer only where it
    meets the goal better."""
    runs_ok = _runs(c, time_s, cost)
    within = runs_ok & (time_s <= deadline_s) & (cost <= budget_usd)
    ok = runs_ok & costed
    answer = _best_on(ok, runs_ok, within & costed, time_s, cost, deadline_s, budget_usd, error,
                      plainer_rows(c["devices"], on))
    if answer is None:
        return None
    counts = near_counts(np.asarray(c["devices"]), time_s, cost, ok, answer, deadline_s,
                         budget_usd)
    return refined_groups(profile, base, chosen, counts, BATCH_SPAN, STRATEGIES)


def _graded(profile: Profile, scenario: Scenario, groups: list[LayoutGroup],
            goal: training_time.Goal, reference: int, net: NetworkScenario | None):
    """(the sweep of each group's axes on ``scenario`` at its layout, their rows together;
    each row's time to the goal in s, its money in USD): hours x (billed devices x USD per
    device-hour + servers x the network's extra USD per server-hour). A network upgrade
    (``net``) rents its own instance type: billed in its shapes (whole servers of AWS
    p4d.24xlarge), not today's 1, 2 or 4-GPU ones (``NetworkUpgrade.billed_sizes``); None:
    today's network, at no extra."""
    runs = [sweep(profile, scenario.model_copy(update={
        "devices": [1], **({"layout": g.layout} if g.searched else {})}), g.axes) for g in groups]
    run = runs[0] if len(groups) == 1 and not groups[0].searched else _together(runs, groups)
    c = run.columns
    time_s = training_time.time_to_goal_s(goal, c["step_time_s"], c["global_batch"], reference)
    extra = 0.0 if net is None else net.upgrade.extra_usd_per_server_hour or 0.0
    hourly = (goal.usd_per_hour(np.asarray(c["devices"]), None if net is None else
                                net.billed_sizes) + np.asarray(c["nodes"]) * extra)
    return run, np.asarray(time_s, dtype=float), np.asarray(time_s / 3600.0 * hourly, dtype=float)


def _together(runs: list[SweepResult], groups: list[LayoutGroup]) -> SweepResult:
    """The sweeps of searched layout groups as one: the columns they all have, and each row's
    layout beyond tp x pp x cp (schedule, virtual stages, recompute, sequence parallelism)."""
    keys = [k for k in runs[0].columns if all(k in r.columns for r in runs)]
    columns = {k: np.concatenate([r.columns[k] for r in runs]) for k in keys}
    for name, of in (("schedule", lambda lay: lay.schedule_of()),
                     ("virtual_stages", lambda lay: lay.virtual_stages),
                     ("recompute", lambda lay: lay.recompute),
                     ("sequence_parallel", lambda lay: lay.sequence_parallel)):
        columns[LAID + name] = np.concatenate([np.full(r.size, of(g.layout), dtype=object)
                                               for r, g in zip(runs, groups, strict=True)])
    return SweepResult(columns=columns, drops=sum((r.drops for r in runs), Drops()))


def _runs(columns: dict, time_s: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """The rows that run: they fit in device memory and have a finite time and money."""
    return np.asarray(columns["fits"], dtype=bool) & np.isfinite(time_s) & np.isfinite(cost)


def _best_on(rows: np.ndarray, runs_ok: np.ndarray, within: np.ndarray, time_s: np.ndarray,
             cost: np.ndarray, deadline_s: float, budget_usd: float, error: float,
             plainer: Callable[[int], tuple] | None = None) -> int | None:
    """The index of the cheapest row of ``rows`` within both limits by decide's rule
    (``cheapest.choose``: of those within the model's median ``error`` of the lowest money,
    the soonest, and of those the same speed as it the first by ``plainer(i)``, a row's sort
    key (``plainer_rows``; None: the soonest, ``cheapest.cheapest``)), else of the one with
    the smallest worst overshoot (``max(time/T, cost/M)``); None where none of them runs."""
    m = np.flatnonzero(rows & within)
    if m.size:
        if plainer is None:
            return int(m[cheapest(cost[m], time_s[m], error)])
        return int(m[choose(cost[m], time_s[m], lambda j: plainer(int(m[j])), error)])
    idx = np.flatnonzero(rows & runs_ok)
    if not idx.size:
        return None
    return int(idx[np.argmin(np.maximum(time_s[idx] / deadline_s, cost[idx] / budget_usd))])


def plainer_rows(devices, on) -> Callable[[int], tuple[bool, int]]:
    """The plainer of two plans goal cannot tell apart in money or speed, as a sort key of a
    row ``i``: on today's network (``on[i]`` 0: nothing to buy) first, then on fewer devices
    (``devices``, fewer to rent at once): decide's tie goes to the option with nothing to buy
    and, of its ways to add servers, to fewer servers (``decision._choose``)."""
    return lambda i: (bool(on[i] != 0), int(devices[i]))


def _network_row(net: NetworkScenario, i: int | None, plan, part: str) -> GoalNetwork:
    """A faster network's row of the answer, with its plan (``plan(i)``) where one runs;
    ``part``: the job's devices of each server in words (``predict.server_part_words``)."""
    link = net.link
    return GoalNetwork(
        reached_busbw_GBps=net.reached_GBps, server_part=part,
        name=net.upgrade.name, nics_per_node=net.upgrade.nics_per_node,
        gbit_per_nic=float(net.upgrade.gbit_per_nic), busbw_GBps=float(link.busbw_GBps),
        latency_s=float(link.latency_s),
        extra_usd_per_server_hour=net.upgrade.extra_usd_per_server_hour,
        price_source=net.price_source, plan=None if i is None else plan(i),
        nics_needed=net.nics_needed)
