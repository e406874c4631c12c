"""The decision card: the question a scaling run raises, the options that matter, a recommendation.

``decide(profile, scenario, devices)`` looks at one device count (the planner's focus) and
compares, against running as is:

* **one more server** (fill the server first, then add a whole one; at one more server and at
  the fewest more that today's tp x pp divides, the planner's fastest layout and today's where
  it divides: chosen by the recommendation's own rule, days and dollars at the model's error,
  ``_choose``, a tie going to fewer servers, then today's layout, ``_add_servers``), priced at
  the profile's or scenario's USD per device-hour for
  the devices billed (whole instances, ``scalesim.billing``);
* **fewer servers** (whole-server counts below today's, today's settings at today's per-device
  batch or, for a fixed global batch, the accumulation that keeps today's micro-batch, and the
  planner's fastest layout for a transformer; chosen by the same rule, ``_fewer_servers``),
  priced for the devices kept;
* **a faster inter-server network** as named hardware (``scalesim.network_upgrades``: NICs x
  Gbit/s, priced per server-hour where a public price exists), when the run spans servers;
* **a settings change** (batch, accumulation, overlap, tensor-parallel overlap, sharding, smaller
  micro-batches: ``SETTINGS_KEYS``): the best
  of ``scalesim.remedies.rank_remedies`` among those, free of hardware;
* **splitting the model** (a transformer workload whose model does not fit or whose
  data-parallel exchange dominates): the planner's best tensor x pipeline layout at the same
  devices and global batch (the ``split_model`` remedy; "Change the layout: old -> new, ..."
  where today's model is split already), free of hardware;
* **a Hopper attention kernel** (cuDNN fused attention, FlashAttention-3) where the scenario runs
  a FlashAttention-2-class kernel on Hopper (the ``attention_kernel`` remedy), free of hardware;
* **fp8 weight matmuls** where a 16-bit transformer runs on a device with fp8 tensor cores (the
  ``fp8`` remedy), free of hardware;
* **fixing the input pipeline**, when the step waits for data;
* **fixing or replacing the slow device** the scenario names (``slow_device``, as diagnose
  finds it), free of new hardware.

Each option carries its hourly price, throughput gain, time to finish and total money (time to
train / to quality with the large-batch penalty, ``scalesim.training_time``); a run that does not
fit has no time or money, and where today's does not, no option has a change against it. Only options that
run (fit in memory) and win (faster, or as fast for less money: ``_saves``) are kept; the best
two or three are shown, the recommended one always (``_shown``). The recommendation is one
sentence with the option's main assumption; a gain smaller than the model's measured median
error (``scalesim.accuracy``) is not a reason to change, unless it saves that error in money
without losing it in time (``_material``); where money is known for each, the
cheapest (two totals within that error are the same money: then the sooner), and two options
whose speeds differ by less than it are a tie that goes to the one with nothing to buy
(``_choose``, docs/model.md §20). Where no
option makes today's layout fit, the sentence names what is done already and the fewest devices
(doubling up to the device-count bound) at which the planner's fastest layout fits, or one or
two doublings more where a sample costs less there (``_cheaper_doubling``), or how far it
searched (``_nothing_fits``); that count is the card's **more devices** option, priced for
its billed devices like the others, with the scenario changes that reproduce it (``changes``).
Where "Nx one device" is against a device that cannot hold the model, a note says so
(``predict.one_device_note``); where it is more than N, a note says why
(``predict.above_linear_note``). The CLI (``scalesim decide``) and the app call this same
function, so their numbers are equal.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from scalesim import figures, training_time
from scalesim.accuracy import median_error
from scalesim.bounds import bound
from scalesim.cheapest import cheapest, plainest, same_money, same_speed
from scalesim.device_nouns import (
    CPU_HOUR,
    GPU_NOUNS,
    Nouns,
    hardware_nouns,
    is_cpu_device,
    named_count,
    nouns_for,
)
from scalesim.errors import KNOB, ScalesimError, as_literal, said_at, within
from scalesim.figures import amount, gib, link_GBps, rate, whole
from scalesim.figures import signed_percent as pct_text
from scalesim.layout import (
    ZERO_STRATEGIES,
    dp_ranks,
    knob_refusal,
    memory_ways,
    model_split_template,
    model_split_words,
    replica_devices,
)
from scalesim.layout_change import (
    ARROW_FIELD,
    CHANGE_HEAD,
    LayoutTitle,
    Split,
    arrowed_said,
    change_title,
    changes_said,
    changes_words,
    joined,
    layout_settings,
    lower_first,
    one_replica_said,
    retitled,
    row_layout,
    setting_changes,
    split_said,
)
from scalesim.layout_predict import uses_layouts
from scalesim.network_need import NetworkNeed, UNLIMITED_BUSBW_GBps, network_need
from scalesim.network_upgrades import NetworkUpgrade, network_scenarios
from scalesim.predict import (
    Prediction,
    above_linear_note,
    data_parallel_ranks,
    inter_busbw_GBps_of,
    one_device_note,
    predict,
    server_part_words,
)
from scalesim.presets import FLASH2_ON_HOPPER_EFFICIENCY
from scalesim.remedies import (
    DATA_STALL_SHARE,
    RemedyResult,
    data_stall_share,
    global_batch_change,
    link_change_words,
    not_measured_link,
    rank_remedies,
    unmeasured_link_in_use,
    whole_inter_GBps,
)
from scalesim.schemas import Profile, Scenario

SETTINGS_KEYS = ("fit_memory", "bigger_batch", "accumulation", "overlap", "tp_overlap",
                 "sharding")
# Options shown besides "as is": a display setting, not a decision threshold (the card is read at
# a glance, in a terminal and on a phone; the others are listed in a note).
MAX_OPTIONS = 3
FREE_KEYS = ("settings", "split_model", "attention_kernel", "fp8", "input_pipeline",
             "fix_device")  # no hardware to buy, at today's price
# ... nor where the option runs on fewer servers (it costs less per hour): a tie goes to both
NOTHING_TO_BUY = (*FREE_KEYS, "fewer_servers")

ASSUMPTIONS = {
    "now": "the model's prediction for today's settings",
    "add_server": "the extra server's devices are priced like today's and the inter-server "
                  "link scales as the model predicts",
    # the same option inside one server: no inter-server link is involved
    "fill_server": "the added devices are priced like today's and the links inside the server "
                   "scale as the model predicts",
    # fewer servers than today's: the devices kept bill as today's, whole instances each; on
    # one server (``fewer_assumption``) no inter-server link is left, on several it still runs
    "fewer_servers": "the devices kept are priced like today's, billed per whole instance, and "
                     "the links they use scale as the model predicts (on one server, no "
                     "inter-server link)",
    "fewer_servers_several": "the devices kept are priced like today's, billed per whole "
                             "instance, and the links they use, the inter-server link among "
                             "them, scale as the model predicts",
    "network": "the model's bandwidth for the named network and its listed price difference",
    "settings": "the change trains as well as today's settings (a larger global batch is charged "
                "its large-batch penalty only when a critical batch size is known)",
    "input_pipeline": "the input can be cached or read by enough loader workers to keep up",
    "split_model": "the framework runs the planner's layout (Megatron-style tensor and pipeline "
                   "parallelism) at the model's predicted efficiency, same global batch",
    "attention_kernel": "the framework runs the vendor attention kernel (cuDNN fused attention, "
                        "FlashAttention-3) at the weight matmuls' sustained efficiency on Hopper, "
                        f"where FlashAttention-2 reaches {FLASH2_ON_HOPPER_EFFICIENCY:g} of the "
                        "peak (docs/model.md §13)",
    "fp8": "the framework runs the layers' weight matmuls in fp8 at the matmuls' sustained "
           "efficiency of the device's fp8 peak, each paying its operands' casts, the attention "
           "core and the output layer at the 16-bit peak (docs/model.md §13, fp8), and the run "
           "trains as well as in 16 bits (check a short run's loss curve)",
    "fix_device": "the slow device runs at its peers' speed once repaired, replaced or drained "
                  "(a spare of the same kind, at today's price)",
    "more_devices": "the planner's fastest layout that fits at the larger count (tensor x "
                    "pipeline split, ZeRO stage, recompute; today's split and the fastest ZeRO "
                    "stage for a parameter count), at the model's memory estimate, the added "
                    "devices priced like today's and billed per whole instance "
                    "(docs/model.md §4, §9, §17, §20)",
}
# What an add-server option in the planner's layout assumes besides the added server's (the
# global batch it runs at follows: ``_planned_assumption``)
PLANNED_LAYOUT = ("the framework runs the planner's layout (ZeRO stage, tensor x pipeline split, "
                  "recompute, micro-batches) at the model's predicted efficiency")
# The assumptions that name a GPU server's parts, in the words of a CPU calibration's processes
# on a host (``device_nouns.nouns_for``): ``_Ctx.assumptions`` puts them in ASSUMPTIONS' place.
CPU_ASSUMPTIONS = {
    "add_server": "the extra host's processes are priced like today's and the inter-host link "
                  "(gloo over TCP) scales as the model predicts",
    "fill_server": "the added processes are priced like today's, share the host's cores as "
                   "calibrated, and gloo over loopback TCP inside the host scales as the model "
                   "predicts",
    "fewer_servers": "the processes kept are priced like today's and gloo over TCP between "
                     "the hosts kept (loopback TCP on one host) scales as the model predicts",
    "fewer_servers_several": "the processes kept are priced like today's and gloo over TCP "
                             "between the hosts kept scales as the model predicts",
    "fix_device": "the slow process runs at its peers' speed once the other work on its host's "
                  "cores is moved off",
    "more_devices": "the fastest ZeRO stage that fits at the larger count, at the model's "
                    "memory estimate, the added processes priced like today's and billed per "
                    "whole host, gloo over TCP scaling as the model predicts "
                    "(docs/model.md §4, §9, §20)",
}


def assumptions_for(words: Nouns) -> dict[str, str]:
    """The options' assumptions in ``words``: ASSUMPTIONS; a CPU calibration's with
    CPU_ASSUMPTIONS in their place; a rack's (``device_nouns.hardware_nouns``: GB200 NVL72)
    with its server named so ('the extra rack's devices', 'the inter-rack link')."""
    if words.cpu:
        return {**ASSUMPTIONS, **CPU_ASSUMPTIONS}
    return {key: text.replace(GPU_NOUNS.server, words.server) for key, text in ASSUMPTIONS.items()}
# What the more-devices search tries at each doubling, where nothing fits at the focus count
# (``_fits_at``); it doubles up to the device-count bound (``bounds``, ``_most_devices``).
MORE_DEVICES_SEARCHED = ("the planner's tensor x pipeline splits, ZeRO stages and recompute for "
                         "a transformer, every ZeRO stage otherwise")
# The slow-device option's title, in GPU and CPU words (``Nouns.cpu``).
SLOW_DEVICE_FIX = {False: "Fix or replace the slow device",
                   True: "Move other work off the slow process's cores"}


@dataclass(frozen=True)
class DecisionOption:
    """One way forward at the focus device count, with what it costs and gains."""

    key: str  # now, add_server, fewer_servers, network, settings, split_model,
    # attention_kernel, fp8, input_pipeline, fix_device, more_devices
    title: str
    devices: int
    servers: int
    runnable: bool
    samples_per_s: float
    throughput_gain: float | None  # vs now, 0.25 = +25 %; None where today's does not fit
    usd_per_hour: float | None  # the whole job's hourly price; None without a price
    extra_usd_per_hour: float | None  # vs now; None when the option's price is not known
    time_s: float | None  # time to finish (training_time); None without a goal or a fit
    time_change: float | None  # vs now, -0.2 = 20 % sooner; None where today's does not fit
    total_usd: float | None  # time x hourly price
    total_change_usd: float | None  # vs now; None where today's does not fit
    price_source: str
    assumption: str
    quality_change: float | None = None  # relative time to quality vs now (only B_noise known)
    billed_devices: int | None = None  # devices a cloud bills for it (whole instances, billing)
    # the scenario fields it runs with that today's do not have (more_devices, split_model,
    # add_server: its device count, and its layout where it changes one, Scenario's JSON
    # names), for a link or a file that reproduces it; None where it runs at today's count
    # and layout (settings, network, kernel, input, device fix)
    changes: dict | None = None


@dataclass(frozen=True)
class AddedServers:
    """One way to grow by whole servers the add-server option compares (``_add_servers``):
    its option, its prediction and what its layout changes against today's
    (``layout_change.setting_changes``' triples; () for today's layout)."""

    option: DecisionOption
    p: Prediction
    changes: tuple[tuple[str, str, str], ...] = ()

    @property
    def changed(self) -> list[str]:
        """``changes`` in the CLI's words ('ddp -> zero2', ``layout_change.changes_words``)."""
        return changes_words(self.changes)


@dataclass(frozen=True)
class DecisionCard:
    question: str
    goal: str  # "time to train", "time to quality" or "" (no goal known)
    model_error: float  # the model's median relative throughput error here (scalesim.accuracy)
    now: DecisionOption
    options: list[DecisionOption]  # the two or three that matter, best first
    recommendation: str
    assumption: str
    # the workload's ``sample_unit``: the words of its throughput (``figures.rate``), so the
    # card's table says them without its callers passing them; not in the card's JSON
    unit: str
    notes: list[str] = field(default_factory=list)
    # the add-server option decide chose, shown on the card or not (the app's Hours & cost
    # tab runs it); not in the card's JSON, whose notes name it where it is not shown
    added: AddedServers | None = None

    def to_dict(self) -> dict:
        card = asdict(replace(self, added=None))
        card.pop("added")
        card.pop("unit")
        return card


def _one(profile: Profile, scenario: Scenario, devices: int) -> Prediction:
    return predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]


class _Ctx:
    """What every option is measured against."""

    def __init__(self, profile: Profile, scenario: Scenario, now: Prediction, said=None,
                 ranked: list[RemedyResult] | None = None):
        self.profile, self.scenario, self.now = profile, scenario, now
        self.ranked = ranked  # the remedies at ``now`` ranked (``decide``'s); None: not yet
        # how an option's title is said (``decide``'s ``said``); the CLI's: as written
        self.said = said or (lambda title: title)
        self.words = hardware_nouns(profile.hardware)
        self.unit = profile.workload.sample_unit  # throughput's unit words (figures.rate)
        self.assumptions = assumptions_for(self.words)
        self.goal = training_time.resolve_goal(profile, scenario)
        self.price = self.goal.price_per_device_hour
        # a run that does not fit has no time and no money; nothing is measured against it
        self.now_time = self._time(now) if now.fits else None
        self.now_hourly = self._hourly(now, 0.0)
        self.error = median_error(uses_layouts(profile, scenario))
        # notes of the more-devices search: the fewest that fit, where a doubling is named
        # instead (``_cheaper_doubling``)
        self.passed_over: list[str] = []
        # the fewest devices at which some layout fits, where the search found one (the
        # more-devices option may be a doubling of it)
        self.fewest_that_fit: int | None = None

    def _time(self, p: Prediction) -> float | None:
        t = training_time.time_to_goal_s(self.goal, p.step_time_s, p.global_batch,
                                         self.now.global_batch)
        return None if t is None else float(t)

    def _hourly(self, p: Prediction, extra_per_server_hour: float,
                instance_sizes: tuple[int, ...] | None = None) -> float | None:
        """USD per hour of ``p``'s billed devices (whole instances of today's shapes, or of
        ``instance_sizes``: a network upgrade's instance) plus a network's extra."""
        hourly = self.goal.usd_per_hour(p.devices, instance_sizes)
        return None if hourly is None else float(hourly) + extra_per_server_hour * p.nodes

    def option(self, key: str, title: str, p: Prediction, extra_per_server_hour: float | None,
               price_source: str, priced: bool = True,
               assumption: str | None = None, changes: dict | None = None,
               batch_change: str | None = None,
               instance_sizes: tuple[int, ...] | None = None) -> DecisionOption:
        """``instance_sizes``: the shapes the option is billed in where it rents another
        instance type (a network upgrade, ``NetworkUpgrade.billed_sizes``); None: today's."""
        hourly = None
        if priced:
            hourly = self._hourly(p, extra_per_server_hour or 0.0, instance_sizes)
        t = self._time(p) if p.fits else None  # a run that does not fit never finishes
        against = self.now.fits  # no change against a run that cannot happen
        total = None if (t is None or hourly is None) else t / 3600.0 * hourly
        now_total = (None if (self.now_time is None or self.now_hourly is None)
                     else self.now_time / 3600.0 * self.now_hourly)
        return DecisionOption(
            key=key, title=self.said(title) + self._batch_words(p, batch_change),
            devices=p.devices,
            servers=p.nodes, runnable=p.fits,
            samples_per_s=p.samples_per_s,
            throughput_gain=p.samples_per_s / self.now.samples_per_s - 1.0 if against else None,
            usd_per_hour=hourly,
            extra_usd_per_hour=None if (hourly is None or self.now_hourly is None)
            else hourly - self.now_hourly,
            time_s=t,
            time_change=None if (t is None or not self.now_time) else t / self.now_time - 1.0,
            total_usd=total,
            total_change_usd=None if (total is None or now_total is None) else total - now_total,
            price_source=price_source, assumption=assumption or self.assumptions[key],
            quality_change=self._quality_change(p) if against and p.fits else None,
            billed_devices=int(self.goal.billed_devices(p.devices, instance_sizes)),
            changes=changes)

    def _batch_words(self, p: Prediction, batch_change: str | None = None) -> str:
        """', global batch 4x' where ``p`` trains at another global batch than today's (more
        accumulation, a bigger batch, more devices at today's per-device batch), so the card
        never compares unlike runs unsaid (``remedies.global_batch_change``); with '(its
        large-batch penalty is in the time)' where a critical batch size is known and ``p`` fits,
        so the time column counts it; '' at today's batch. A remedy's option passes the remedy's
        own words (``RemedyResult.batch_change``: '' where its title names its global batch
        already, 'Double the global batch (...)', which then gets only the penalty's words)."""
        if p.global_batch == self.now.global_batch:
            return ""
        counted = (" (its large-batch penalty is in the time)"
                   if self.goal.critical_batch is not None and p.fits else "")
        words = (global_batch_change(p.global_batch, self.now.global_batch)
                 if batch_change is None else batch_change)
        return f", {words}{counted}" if words else counted

    def changes(self, run: Scenario, p: Prediction) -> dict:
        """The scenario fields ``run`` (predicted ``p``) sets that today's does not
        (``_changes``), so a link or a file reproduces the option's time and money: where a
        training length and a critical batch size are known and ``p`` trains at another global
        batch, the training length becomes the samples it needs at that batch
        (``training_time.samples_needed``, its large-batch penalty against today's batch), as
        the option's time counts them; a what-if measures its penalty against its own batch."""
        if (self.goal.kind == "train" and self.goal.penalised
                and p.global_batch != self.now.global_batch):
            needed = training_time.samples_needed(self.goal, p.global_batch,
                                                  self.now.global_batch)
            run = run.model_copy(update={"train_samples": float(needed)})
        return _changes(self.scenario, run, p.devices)

    def _quality_change(self, p: Prediction) -> float | None:
        """Relative change of time to quality when only B_noise is known (no absolute time)."""
        if self.goal.kind is not None:
            return None
        rel = training_time.relative_quality_time(self.goal, p.step_time_s, p.global_batch)
        now = training_time.relative_quality_time(self.goal, self.now.step_time_s,
                                                  self.now.global_batch)
        return None if rel is None else float(rel / now - 1.0)


def _server_size(profile: Profile, scenario: Scenario) -> int:
    return scenario.devices_per_node or profile.hardware.devices_per_node


def _price_source(profile: Profile, scenario: Scenario) -> str:
    goal = training_time.resolve_goal(profile, scenario)
    device = profile.hardware.device_name
    billing = goal.billing_said(device, hardware_nouns(profile.hardware))
    if scenario.price_per_device_hour is not None:
        return f"price per {nouns_for(device).device}-hour given by the user, {billing}"
    if profile.hardware.price_per_device_hour is not None:
        from scalesim.presets import HARDWARE

        hw = profile.hardware
        kind = "hardware preset" if HARDWARE.get(hw.name) == hw else "hardware"
        return f"{kind} {hw.name}, {billing}: {hw.source or 'no source given'}"
    if is_cpu_device(device):
        return (f"no price known: a CPU calibration's devices ({device}) have no cloud GPU "
                f"price and none is assumed (money left blank): enter a price per process-hour, "
                f"{CPU_HOUR}")
    return "no price known: enter a price per device-hour (--price on the command line)"


def _layout_changes(ctx: _Ctx, run: Scenario, p: Prediction) -> list[tuple[str, str, str]]:
    """What ``run`` (predicted ``p``) changes against today's layout, (setting, old, new) each
    (``layout_change.setting_changes``)."""
    return setting_changes(*_settings(ctx, run, p))


def _settings(ctx: _Ctx, run: Scenario, p: Prediction,
              today: Prediction | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(today's, ``run``'s) layout settings (``layout_change.layout_settings``): today's run,
    or today's layout predicted as ``today`` (at another count), against ``run`` predicted
    ``p``."""
    return (layout_settings(ctx.profile, ctx.scenario, ctx.now if today is None else today),
            layout_settings(ctx.profile, run, p))


def _layout_option(ctx: _Ctx, split, source: str) -> DecisionOption:
    """The planner's layout at today's count (key ``split_model``) from the split-the-model
    remedy ``split``, titled as the remedy is (``layout_change.layout_title``: "Change the
    layout: old -> new, ..." where today's model is split), with the scenario changes that
    reproduce it (``changes``)."""
    return ctx.option("split_model", split.title, split.prediction, 0.0, source,
                      changes=ctx.changes(split.scenario, split.prediction),
                      batch_change=split.batch_change)


def _planned_here(ctx: _Ctx, source: str) -> DecisionOption | None:
    """The planner's fastest layout that fits at today's count (``_fits_at``: ZeRO stage,
    micro-batches, recompute, tp x pp), key ``split_model``, where the split-the-model remedy
    does not offer one (it needs a model that does not fit or an exchange past the model's
    error, docs/model.md §10) and that layout gains the model's error over today's (a change
    of layout is worth it only past it, as ``_pick_grown`` has it): "Change the layout: zero3 ->
    zero1, recompute full -> none". Without it the card credited that change to adding a server,
    whose option runs the planner's layout at the larger count (session-24 audit); None where it
    is today's layout, gains less, or nothing fits."""
    found, _ = _fits_at(ctx, ctx.now.devices)
    if found is None:
        return None
    p, _, run = found
    changed = _layout_changes(ctx, run, p)
    if not changed or (ctx.now.fits and p.samples_per_s < ctx.now.samples_per_s * (1 + ctx.error)):
        return None
    return ctx.option("split_model", changes_said(changed, f"{CHANGE_HEAD}: "), p, 0.0, source,
                      assumption=f"{PLANNED_LAYOUT}, same global batch",
                      changes=ctx.changes(run, p))


def _same_run(a: DecisionOption, b: DecisionOption) -> bool:
    """Whether two options predict the same run (devices, throughput, memory fit): one change
    reached two ways, listed once."""
    return (a.devices == b.devices and a.runnable == b.runnable
            and abs(a.samples_per_s - b.samples_per_s) <= 1e-9 * abs(b.samples_per_s))


MAX_ADDED_SERVERS = 8  # the most servers the add-server option grows by
MAX_SERVER_GROWTH = 4  # ... and at most 4x today's servers (one tp x pp cycle at least)


def added_server_counts(devices: int, per_server: int, split: int = 1,
                        global_batch: int | None = None, accumulation: int = 1) -> list[int]:
    """The device counts of growing ``devices`` by whole servers of ``per_server`` (filling
    today's first), fewest first, that ``split`` (today's tp x pp) divides and, for a fixed
    ``global_batch``, over whose dp = count / split replicas x ``accumulation`` it splits: 64
    devices of tp 8 x pp 2 on servers of 8 give [80, 96, ...] (72 is no multiple of 16); 16
    devices at global batch 256 give [32, 64, ...] (256 does not split over 24). Up to
    ``MAX_ADDED_SERVERS`` more servers and ``MAX_SERVER_GROWTH`` x today's, but never less
    than one cycle of ``split`` servers (one count in it is always a multiple of ``split``);
    [] where none splits the batch."""
    servers = -(-devices // per_server)
    more = per_server if devices < per_server else devices + per_server
    cycle = more + (split - 1) * per_server
    last = max(cycle, min((servers + MAX_ADDED_SERVERS) * per_server,
                          MAX_SERVER_GROWTH * servers * per_server))
    return [n for n in range(more, last + 1, per_server) if n % split == 0 and (
        global_batch is None or global_batch % (n // split * accumulation) == 0)]


def _server_key(ctx: _Ctx, p: Prediction) -> str:
    """The option key of running ``p`` on another number of servers than today's: fewer
    (``fewer_servers``) or more, today's filled first (``add_server``)."""
    return "fewer_servers" if p.nodes < ctx.now.nodes else "add_server"


def fewer_assumption(ctx: _Ctx, p: Prediction) -> str:
    """The assumption of running on fewer servers than today's, ``p``'s: on one server no
    inter-server link is left ('on one server, no inter-server link'); on several (a GB200 job
    of 512 GPUs on 6 racks of 72) the inter-server link is among the links that scale as the
    model predicts. One server as ``_added_title`` counts it (``nic_servers_per_node``)."""
    kept = p.nodes * ctx.profile.hardware.nic_servers_per_node
    return ctx.assumptions["fewer_servers" if kept == 1 else "fewer_servers_several"]


def _grown_assumption(ctx: _Ctx, p: Prediction) -> str:
    """The assumption of running on ``p``'s servers: filling today's server, adding one, or
    fewer (``fewer_assumption``)."""
    if p.nodes < ctx.now.nodes:
        return fewer_assumption(ctx, p)
    return ctx.assumptions["fill_server" if p.nodes == ctx.now.nodes else "add_server"]


def _planned_assumption(ctx: _Ctx, p: Prediction) -> str:
    """The assumption of growing to ``p`` in the planner's layout: the added server's, the
    layout's (``PLANNED_LAYOUT``) and its global batch, today's or as its title says."""
    change = global_batch_change(p.global_batch, ctx.now.global_batch)
    batch = f"{change} today's" if change else "same global batch"
    return f"{_grown_assumption(ctx, p)}; {PLANNED_LAYOUT}, {batch}"


def _added_title(ctx: _Ctx, p: Prediction) -> LayoutTitle:
    """'Fill the server (4 -> 8 devices)', 'Add one server (64 -> 72 devices)', 'Add 2 servers
    (64 -> 80 devices)': the servers ``p`` runs on beyond today's; 'Run on one server (16 -> 8
    devices)', 'Run on 6 servers (64 -> 48 devices)' where ``p`` runs on fewer
    (``_fewer_servers``); carrying its arrow (``arrowed_said``: a page writes its own)."""
    nouns, now = ctx.words, ctx.now
    # a profile of model replicas: each of its servers is the job's servers its replicas'
    # stages sit in (``Hardware.nic_servers_per_node``, pp of them), which are what is bought
    per_node = ctx.profile.hardware.nic_servers_per_node
    added = (p.nodes - now.nodes) * per_node
    kept = p.nodes * per_node
    what = (f"Run on one {nouns.server}" if added < 0 and kept == 1
            else f"Run on {nouns.count(kept, 'server')}" if added < 0
            else f"Fill the {nouns.server}" if added == 0 else f"Add one {nouns.server}"
            if added == 1 else f"Add {nouns.count(added, 'server')}")
    return arrowed_said(f"{what} (", nouns.count_change(now.devices, p.devices, ARROW_FIELD), ")")


def _todays_grown(ctx: _Ctx, source: str, per_server: int,
                  split: int) -> tuple[AddedServers | None, str | None]:
    """Today's layout at the fewest added servers its tp x pp (``split``) divides and the batch
    splits over (``added_server_counts``), or None; and why the first count tried refused it."""
    scenario, now, why = ctx.scenario, ctx.now, None
    for count in added_server_counts(now.devices, per_server, split, scenario.global_batch,
                                     scenario.accumulation):
        try:
            p = _one(ctx.profile, scenario, count)
        except ScalesimError as exc:  # a global batch that does not split over the count
            why = why or within(exc, str(exc))  # its template kept: the app's words
            continue
        option = ctx.option("add_server", _added_title(ctx, p), p, 0.0, source,
                            assumption=_grown_assumption(ctx, p),
                            changes=ctx.changes(scenario, p))
        return AddedServers(option, p), why
    return None, why


def _planned_grown(ctx: _Ctx, source: str, devices: int,
                   todays: AddedServers | None) -> AddedServers | None:
    """The planner's fastest layout that fits at ``devices`` (``_fits_at``; more servers than
    today's, or fewer: ``_server_key``), titled by what it
    changes against today's layout there (``todays``, where it runs at ``devices``: a fixed
    global batch's smaller micro-batch at more devices is no change of layout), else against
    today's run; None where none fits or it is today's layout."""
    found, _ = _fits_at(ctx, devices)
    if found is None:
        return None
    p, _, run = found
    settings = _settings(ctx, run, p, todays.p if todays is not None
                         and todays.option.devices == devices else None)
    changes = setting_changes(*settings)
    if not changes:
        return None
    title = joined(_added_title(ctx, p), change_title(", the planner's layout", *settings))
    option = ctx.option(_server_key(ctx, p), title, p, 0.0, source,
                        assumption=_planned_assumption(ctx, p), changes=ctx.changes(run, p))
    return AddedServers(option, p, tuple(changes))


def _pick_grown(ctx: _Ctx, grown: list[AddedServers]) -> AddedServers:
    """The add-server option among ``grown``: of those that fit, decide's choice (``_choose``,
    the rule of the card's recommendation), a speed tie going to fewer servers, then to today's
    layout (a layout change or a server more is worth it only past the model's error, not for
    0.1 %); where none gains the model's error over today's run, the fastest (so the card says
    how close adding servers comes); the first (today's layout, fewest servers) where none
    fits."""
    runs = [g for g in grown if g.option.runnable]
    if not runs:
        return grown[0]
    of = {id(g.option): g for g in runs}
    options = [g.option for g in runs]

    def plainer(o: DecisionOption) -> tuple[int, bool]:  # fewer servers, then today's layout
        return o.devices, bool(of[id(o)].changed)

    chosen = _choose(ctx, options, plainer) or _choose(ctx, options, plainer, gains=False)
    return of[id(chosen)]


def _add_servers(ctx: _Ctx, source: str) -> tuple[AddedServers | None, list[str]]:
    """The add-server option (or None) and its notes. The ways to grow by whole servers (fill
    today's first) it compares: today's layout at the fewest servers where its tp x pp divides
    the count and the batch splits (the counts repeat within tp x pp servers:
    ``_todays_grown``), and the planner's fastest layout that fits (``_planned_grown``) at one
    more server and at that count, where today's does not run at one more server or fits
    there (where it runs and does not fit, the fewest devices at which some layout fits are the
    card's more-devices option). The option is the one decide's rule takes among those that fit
    (``_choose``: days and dollars at the model's median error), a tie going to fewer servers,
    then to today's layout (``_pick_grown``); a note says
    of each other one why it is not the option (``_grown_notes``); its title says which layout:
    today's bare, the planner's with what it changes."""
    profile, scenario, now, nouns = ctx.profile, ctx.scenario, ctx.now, ctx.words
    g = _server_size(profile, scenario)
    more = g if now.devices < g else now.devices + g
    split, notes = replica_devices(now.tp, now.pp, now.cp), []
    keep, why = _todays_grown(ctx, source, g, split)
    grown = [keep] if keep is not None else []
    if keep is None or keep.option.devices > more or keep.option.runnable:
        # else: ``_more_devices_option``; the planner at each count compared
        for count in sorted({more} | ({keep.option.devices} if keep is not None else set())):
            if (planned := _planned_grown(ctx, source, count, keep)) is not None:
                grown.append(planned)
    if not grown:
        why = why or _splits_nowhere(ctx, g, split) or _refusal(ctx, more)
        # ``within``: the refusal's template kept, so the app says it in its controls
        notes.append(within(why, f"one more {nouns.server} not compared: {why}") if why else
                     f"one more {nouns.server} not compared: no layout fits at "
                     f"{nouns.count(more)}")
        return None, notes
    best = _pick_grown(ctx, grown)
    if keep is not None and keep.option.devices > more and (
            best is keep or _wins(ctx, best.option)):  # today's layout does not run at one more
        degrees = "tp x pp x cp" if now.cp > 1 else "tp x pp"
        cp = now.cp if now.cp > 1 else None
        reason = why or _refusal(ctx, more)
        # templates (``knob_refusal``, ``errors.within``): the CLI's line in its notation, the
        # app's naming its controls ('Tensor parallel 4 x Pipeline stages 2', 'the 24
        # data-parallel ranks'; ``app.plan.card_notes``)
        because = (knob_refusal(f"{nouns.count(more)} are not a multiple of today's "
                                f"{model_split_template(now.tp, now.pp, cp)} = {whole(split)}",
                                ("tp", "pp", *(("cp",) if cp else ())),
                                cli=f"{nouns.count(more)} are not a multiple of today's "
                                    f"{degrees} = {whole(split)}")
                   if more % split else said_at(nouns.count(more), reason))
        notes.append(within(because, f"one more {nouns.server} does not take today's layout "
                                     f"({because}): it takes "
                                     f"{nouns.count(keep.option.servers - now.nodes, 'server')} "
                                     "more"))
    if _wins(ctx, best.option):
        notes += _grown_notes(ctx, best, [o for o in grown if o is not best])
    return best, notes


def fewer_server_counts(devices: int, per_server: int) -> list[int]:
    """The device counts of running ``devices`` on fewer whole servers of ``per_server``,
    nearest first: today's servers less one, two, ..., at most ``MAX_ADDED_SERVERS`` fewer and
    down to a ``MAX_SERVER_GROWTH``-th of today's (the add-server option's bounds, mirrored),
    never below one server: 16 devices on servers of 8 give [8]; 64 give [56, 48, ..., 16];
    12 (a partial second server) give [8]; [] on one server."""
    servers = -(-devices // per_server)
    low = max(1, -(-servers // MAX_SERVER_GROWTH), servers - MAX_ADDED_SERVERS)
    return [k * per_server for k in range(servers - 1, low - 1, -1)]


def accumulation_to_keep(global_batch: int, replicas: int, micro_batch: int,
                         accumulation: int) -> int | None:
    """The fewest micro-steps per optimizer step, today's ``accumulation`` or more, over which
    ``replicas`` split a fixed ``global_batch`` (samples) into whole micro-batches of at most
    today's ``micro_batch`` samples (so no device holds more activations than today): global
    batch 512 on 8 replicas at micro-batch 32 takes 2 (16 replicas took 1); batch 480 on 10
    replicas at micro-batch 24 takes 2 (2 x 10 x 24 = 480); None where no count splits it."""
    for steps in range(max(accumulation, 1), global_batch // replicas + 1):
        if global_batch % (replicas * steps) == 0 and global_batch // (replicas * steps) <= micro_batch:
            return steps
    return None


def _todays_fewer(ctx: _Ctx, source: str, count: int) -> AddedServers | None:
    """Today's settings on ``count`` devices, fewer servers than today's: today's per-device
    batch under weak scaling (the global batch shrinks with the devices, as the title says),
    today's global batch under strong scaling at the accumulation that keeps today's
    micro-batch or a smaller one (``accumulation_to_keep``; the title says 'accumulation 1 ->
    2'); None where today's tp x pp does not divide ``count`` or the batch does not split."""
    scenario, now = ctx.scenario, ctx.now
    split = replica_devices(now.tp, now.pp, now.cp)
    if count % split:
        return None
    run = scenario
    if scenario.global_batch is not None:
        steps = accumulation_to_keep(scenario.global_batch, count // split, now.micro_batch,
                                     now.accumulation)
        if steps is None:
            return None
        run = scenario.model_copy(update={"accumulation": steps})
    try:
        p = _one(ctx.profile, run, count)
    except ScalesimError:  # past the bounds table's accumulation, a split it refuses
        return None
    changed = _layout_changes(ctx, run, p)  # the accumulation a fixed global batch needs
    title = joined(_added_title(ctx, p), changes_said(changed, ", ") if changed else "")
    option = ctx.option("fewer_servers", title, p, 0.0, source,
                        assumption=fewer_assumption(ctx, p),
                        changes=ctx.changes(run, p))
    return AddedServers(option, p)


def _fewer_servers(ctx: _Ctx, source: str) -> AddedServers | None:
    """The fewer-servers option where today's run fits on more than one server: at each whole
    server count below today's (``fewer_server_counts``), today's settings (``_todays_fewer``)
    and, for a transformer, the planner's fastest layout that fits (``_planned_grown``, as one
    more server has it); decide's rule picks among those that fit (``_pick_grown``: days and
    dollars at the model's median error, a tie going to fewer servers, then today's layout;
    the fastest where none is a decision), so the card keeps it where it is faster, or saves
    the model's error in money without losing it in time (``_saves``). None where no count
    runs today's split or today's run does not fit (the card then looks for devices to add)."""
    from scalesim.layout_predict import splittable_shape

    now = ctx.now
    if not now.fits:
        return None
    planner = splittable_shape(ctx.profile) is not None
    ways: list[AddedServers] = []
    for count in fewer_server_counts(now.devices, _server_size(ctx.profile, ctx.scenario)):
        todays = _todays_fewer(ctx, source, count)
        ways += [todays] if todays is not None else []
        if planner and (planned := _planned_grown(ctx, source, count, todays)) is not None:
            ways.append(planned)
    return _pick_grown(ctx, ways) if ways else None


def _money_words(other: DecisionOption, best: DecisionOption) -> str:
    """'$4,100 cheaper', '$4,100 more expensive' or 'the same money': ``other``'s total money
    against ``best``'s; '' where either is not known."""
    if other.total_usd is None or best.total_usd is None:
        return ""
    diff = other.total_usd - best.total_usd
    return ("the same money" if diff == 0 else f"{usd_text(abs(diff))} cheaper" if diff < 0
            else f"{usd_text(diff)} more expensive")


def _passed_over(ctx: _Ctx, other: DecisionOption, gains: bool) -> str:
    """Why decide's rule (``_contest``) passed over ``other``, cheaper than the option shown
    but slower and not tied with it: today's run does not fit (the soonest is taken), no way to
    add servers gains the model's error (``gains`` False: the fastest is shown), or ``other``
    gains under it over today's run (the cheapest of those that gain it is taken)."""
    if not ctx.now.fits:
        return "where today's run does not fit, decide takes the soonest that fits"
    if not gains:
        return (f"no way to add {ctx.words.servers} gains the model's median error of "
                f"{ctx.error:.1%} over today's run, so the card shows the fastest")
    gain = _score(other)
    if gain <= 0:
        return "it is no faster than today's run"
    return (f"it is {gain:.1%} faster than today's run, under the model's median error of "
            f"{ctx.error:.1%}")


def _grown_notes(ctx: _Ctx, best: AddedServers, others: list[AddedServers]) -> list[str]:
    """Why each of ``others`` is not the add-server option ``best``, in days and dollars
    (``_contest``'s rule, ``_pick_grown``): "not shown: today's layout, 7.5% slower and $2,300
    more expensive than the planner's layout" ('at 80 devices' where the counts differ; the
    money where known), "passed over: today's layout (at 80 devices, ...), 8.0% faster but
    $4,100 more expensive than the planner's layout at 72 devices: of the ways that gain the
    model's median error over today's run, decide takes the cheapest ..." (money leads),
    "passed over: ..., 9.9% slower and $160 cheaper than ...: money within the model's median
    error of 2.9% is the same money, and decide takes the soonest", "passed over: ..., 17.0%
    slower and $4,000 cheaper than ...: it is 2.6% faster than today's run, under the model's
    median error of 2.9%" (why, from ``_passed_over``), "kept today's layout at 24 devices:
    the planner's layout (zero1 -> zero2) is 0.1% faster, under the model's median error of
    2.9%" (a tie, money's or speed's; ", and takes one more server" where it does), or "not
    shown: today's layout at 80 devices does not fit in device memory (101.2 GiB per device
    needed)" (its count always said); each named by what differs from ``best``
    (``_rival_words``)."""
    nouns, notes = ctx.words, []
    name = "the planner's layout" if best.changed else "today's layout"
    runs = [g.option for g in [best, *others] if g.option.runnable]
    ties, cheap, by_money = _contest(ctx, runs)
    gains = bool(ties)
    if not gains:  # none gains the error: the fastest is shown (``_pick_grown``)
        ties, cheap, _ = _contest(ctx, runs, gains=False)
    tied = {id(o) for o in ties}
    for other in others:
        rival = _rival_words(ctx, other.p, best.p, other.changes)
        if not other.option.runnable:  # its count said even where it is the shown one's:
            # today's run does not fit either, and the note is about the grown count
            at = (f" at {nouns.count(other.option.devices)}"
                  if other.option.devices == best.option.devices else "")
            notes.append(f"not shown: {rival}{at} does not fit in {nouns.memory} "
                         f"({need_words(other.p, ctx.profile, nouns)})")
            continue
        gain = _faster(other.option, best.option)
        speed = (f"{gain:.1%} faster" if gain > 0
                 else _slower_words(_faster(best.option, other.option)))
        money = _money_words(other.option, best.option)
        cheaper = money.endswith("cheaper")
        at = (f" at {nouns.count(best.option.devices)}"
              if other.option.devices != best.option.devices else "")
        if {id(other.option), id(best.option)} <= tied:  # the model cannot tell them apart
            servers = other.option.servers - best.option.servers
            more = ("" if servers < 1 else f", and takes one more {nouns.server}"
                    if servers == 1 else f", and takes {nouns.count(servers, 'server')} more")
            verb = "chose" if best.changed else "kept"
            both = f" and {money}" if money else ""
            notes.append(f"{verb} {name} at {nouns.count(best.option.devices)}: {rival} is "
                         f"{speed}{both}, under the model's median error of {ctx.error:.1%}"
                         f"{more}")
        elif gain <= 0 and not cheaper:  # slower, and no cheaper
            notes.append(f"not shown: {rival}, {speed}{' and ' + money if money else ''} "
                         f"than {name}{at}")
        elif gain > 0:  # faster, and dearer past the error: money counts first
            notes.append(f"passed over: {rival}, {speed} but {money} than {name}{at}: of the "
                         "ways that gain the model's median error over today's run, decide "
                         f"takes the cheapest (within {ctx.error:.1%} of its money, the "
                         "soonest)")
        elif by_money and id(other.option) in {id(o) for o in cheap}:  # a little cheaper
            notes.append(f"passed over: {rival}, {speed} and {money} than {name}{at}: money "
                         f"within the model's median error of {ctx.error:.1%} is the same "
                         "money, and decide takes the soonest")
        else:  # slower and cheaper
            notes.append(f"passed over: {rival}, {speed} and {money} than {name}{at}: "
                         f"{_passed_over(ctx, other.option, gains)}")
    return notes


def _rival_words(ctx: _Ctx, rival: Prediction, shown: Prediction, changes) -> str:
    """The add-server option left out, by what differs from the ``shown`` one: "the planner's
    layout (zero1 -> zero2)" where the ``rival`` run changes today's layout (``changes``,
    ``layout_change.setting_changes``' triples, said as the card says a title: ``_Ctx.said``),
    else "today's layout"; its device count and global batch only where they differ from
    ``shown``'s, the batch against today's as every title says it ("global batch 1.25x
    today's", "today's global batch": ``remedies.global_batch_change``), not against the
    option shown, which a reader cannot see."""
    words = []
    if rival.devices != shown.devices:
        words.append(f"at {ctx.words.count(rival.devices)}")
    if rival.global_batch != shown.global_batch:
        batch = global_batch_change(rival.global_batch, ctx.now.global_batch)
        words.append(f"{batch} today's" if batch else "today's global batch")
    if changes:
        rest = "".join(f", {w}" for w in words)
        return ctx.said(changes_said(changes, "the planner's layout (", f"{rest})"))
    return f"today's layout ({', '.join(words)})" if words else "today's layout"


def _splits_nowhere(ctx: _Ctx, per_server: int, split: int) -> str:
    """Why no added-server count takes today's fixed global batch, naming every count tried
    (``added_server_counts``, tp x ``split`` dividing them, servers of ``per_server``
    devices), so a note never reads as if only one more server were tried; '' where some
    count splits it or the batch is not fixed. A template (``knob_refusal``): the CLI's line
    in its notation, the app's naming its controls and dp in words (``dp_ranks``)."""
    s, now, nouns = ctx.scenario, ctx.now, ctx.words
    tried = added_server_counts(now.devices, per_server, split)
    if s.global_batch is None or not tried or added_server_counts(
            now.devices, per_server, split, s.global_batch, s.accumulation):
        return ""
    counts = (nouns.count(tried[0]) if len(tried) == 1 else
              f"any of {figures.count_list(tried, None)} {nouns.devices}")
    over = nouns.devices if split == 1 else f"dp ({nouns.devices} / tp x pp {whole(split)})"
    page, gb, k = counts, figures.whole(s.global_batch), s.accumulation
    if split > 1:
        dps = figures.count_list([n // split for n in tried], None)
        counts += f" (dp {dps})"
        page += f" ({dp_ranks(dps)})"
    return knob_refusal(f"{KNOB.global_batch} {gb} does not split evenly over {page} x "
                        f"{KNOB.accumulation} {k}; pick one divisible by their product",
                        ("global_batch", "accumulation"),
                        cli=f"global batch {gb} does not split evenly over {counts} x {k} "
                            f"accumulation steps; pick a global batch divisible by {over} x "
                            "accumulation")


def _refusal(ctx: _Ctx, devices: int) -> str:
    """Why today's scenario does not predict at ``devices`` (a global batch that does not
    split over them), or '' where it does."""
    try:
        _one(ctx.profile, ctx.scenario, devices)
    except ScalesimError as exc:
        return within(exc, str(exc))  # its template kept: the app says it in its controls
    return ""


def card_upgrade(profile: Profile, scenario: Scenario) -> NetworkUpgrade | None:
    """The network upgrade the card prices for a run over several servers: the first of
    ``network_scenarios`` (the cheapest priced one, before any with no public price, then the
    slowest step up), for one node of the profile; None where none is faster than today's
    inter-server link."""
    ups = network_scenarios(profile, scenario)
    return ups[0].upgrade if ups else None


def network_enough(profile: Profile, scenario: Scenario, devices: int,
                   error: float) -> NetworkNeed:
    """The least inter-server bandwidth with which the run at ``devices`` is within the model's
    median ``error`` of its step on an unlimited one (``network_need``, at today's latency):
    past it, a faster network gains less than the model can tell apart; on part of each server,
    as the job's devices reach it and as a whole server on today's NICs, and each named network
    (``network_scenarios``) by what it gives the job, enough where its own run is within that
    error."""
    def step_s(s: Scenario) -> float:
        return _one(profile, s, devices).step_time_s

    unlimited = step_s(scenario.model_copy(update={"inter_busbw_GBps": UNLIMITED_BUSBW_GBps}))
    return network_need(profile, scenario, lambda s: step_s(s) <= unlimited * (1.0 + error),
                        network_scenarios(profile, scenario))


def network_enough_words(profile: Profile, scenario: Scenario, devices: int,
                         error: float) -> str:
    """Where the card names a faster network: ``network_enough`` in words."""
    need, words = network_enough(profile, scenario, devices, error), hardware_nouns(profile.hardware)
    return (f"inter-{words.server} network enough for this run (its step within the model's "
            f"median error of {error:.1%} of an unlimited bandwidth's): {need.said(words)}")


def _candidates(ctx: _Ctx) -> tuple[list[DecisionOption], list[str], AddedServers | None]:
    """The options compared at the focus count, notes on them, and the add-server one."""
    profile, scenario, now = ctx.profile, ctx.scenario, ctx.now
    out: list[DecisionOption] = []
    notes: list[str] = []
    base_source = _price_source(profile, scenario)
    added, said = _add_servers(ctx, base_source)
    out += [added.option] if added is not None else []
    notes += said
    if (fewer := _fewer_servers(ctx, base_source)) is not None:
        out.append(fewer.option)
    if now.nodes > 1 and (ups := network_scenarios(profile, scenario)):
        net = ups[0]  # the card's (``card_upgrade``)
        p = _one(net.profile, net.scenario, now.devices)
        # today's whole server not known on a fitted link of part of each server
        words = link_change_words(whole_inter_GBps(profile.hardware, scenario),
                                  net.link.busbw_GBps,
                                  not_measured_link(profile, scenario, "inter_node"),
                                  (float(inter_busbw_GBps_of(profile.hardware, scenario)),
                                   net.reached_GBps),
                                  as_literal(server_part_words(profile.hardware, scenario)),
                                  ARROW_FIELD,  # a template: a page writes its own arrow
                                  ctx.words.server)
        needs = f", {net.nics_needed}" if net.nics_needed else ""
        title = arrowed_said(f"Network: {net.upgrade.name}, ", words, needs)
        out.append(ctx.option("network", title, p,
                              net.upgrade.extra_usd_per_server_hour, net.price_source,
                              net.priced, instance_sizes=net.billed_sizes))
        notes.append(network_enough_words(profile, scenario, now.devices, ctx.error))
    ranked = ctx.ranked if ctx.ranked is not None else rank_remedies(profile, scenario,
                                                                      now.devices)[1]
    helping = {r.key: r for r in ranked if r.helps}  # one remedy per key, best first
    settings = [r for key, r in helping.items() if key in SETTINGS_KEYS]
    if settings:
        r = settings[0]
        out.append(ctx.option("settings", retitled(lower_first(r.title), "Settings: "),
                              r.prediction, 0.0, base_source, batch_change=r.batch_change))
    split = helping.get("split_model")
    if split is not None:  # where it helps: the model does not fit, or the exchange dominates
        out.append(_layout_option(ctx, split, base_source))
    elif (planned := _planned_here(ctx, base_source)) is not None and not any(
            _same_run(planned, o) for o in out):  # e.g. the settings row's zero3 -> zero2
        out.append(planned)
    kernel = helping.get("attention_kernel")
    if kernel is not None:  # a FlashAttention-2-class kernel on Hopper: the vendor kernel
        out.append(ctx.option("attention_kernel", kernel.title, kernel.prediction, 0.0,
                              base_source, batch_change=kernel.batch_change))
    fp8 = helping.get("fp8")
    if fp8 is not None:  # a 16-bit run on a device with fp8 tensor cores
        out.append(ctx.option("fp8", fp8.title, fp8.prediction, 0.0, base_source,
                              batch_change=fp8.batch_change))
    loader = helping.get("loader")
    if loader is not None:
        out.append(ctx.option("input_pipeline", "Input: cache the input or add loader workers",
                              loader.prediction, 0.0, base_source))
    fix = helping.get("slow_device")
    if fix is not None:  # a device the scenario (or diagnose) names as slow: its repair
        out.append(ctx.option("fix_device", f"{SLOW_DEVICE_FIX[ctx.words.cpu]} (rank "
                              f"{scenario.slow_device}, {scenario.slow_factor:g}x slower)",
                              fix.prediction, 0.0, base_source))
    return out, notes, added


def _uneven_stage_notes(profile: Profile, scenario: Scenario, options: list[DecisionOption],
                        pipeline=None) -> list[str]:
    """What today's layout and the options' pipelines hold where their stages are uneven, and
    what runs them (``pipeline_stages.uneven_notes``: once per pp x virtual stages, each
    pipeline named by ``pipeline``, ``decide``'s)."""
    from scalesim.layout_predict import layout_of, splittable_shape
    from scalesim.pipeline_stages import uneven_notes

    shape = splittable_shape(profile)
    if shape is None:
        return []
    today = layout_of(scenario)
    splits = [(today.pp, today.virtual_stages)] + [
        (layout["pp"], layout["virtual_stages"]) for o in options
        if (layout := (o.changes or {}).get("layout")) is not None]
    return uneven_notes(shape.layers, splits, pipeline)


# The card's goal where only a critical batch size is known (``_relative_quality``)
RELATIVE_QUALITY = "time to quality relative to today's"


def _relative_quality(now: DecisionOption, options: list[DecisionOption]) -> bool:
    """Whether the card's time column compares relative times to quality
    (``DecisionOption.quality_change``: a critical batch size known, no training length nor
    E_min, today's run fits): its As-is row then reads 'as is' there (``card_rows``), its goal
    says so (``RELATIVE_QUALITY``) and a note what it is (``_relative_quality_note``)."""
    return now.time_s is None and any(o.quality_change is not None for o in [now, *options])


def _relative_quality_note(critical_batch: float) -> str:
    """What the time column's '-42.3% to quality' is where no training length is known: the
    time to reach today's quality against today's, (1 + B_noise/B) x step time (docs/model.md
    §8, §20), which at today's global batch is only the throughput gain inverted."""
    return (f"no training length: 'to quality' is the time to reach the same quality against "
            f"today's, (1 + B_noise / B) x step time at critical batch size B_noise = "
            f"{figures.sig3(critical_batch)} samples: at today's global batch B it is the "
            "throughput gain inverted, and where an option changes B it counts that batch's "
            "large-batch penalty; enter a training length (or E_min) for hours and total money")


def _score(o: DecisionOption) -> float:
    """The option's speed-up over running as is, minus one (higher is better): time to finish
    (or to quality) now over the option's when a goal is known, else the throughput ratio. A
    ratio of two predictions, like the validation's (scalesim.accuracy). Where today's layout
    does not fit there is no ratio: the option's own pace orders the card, 1 / its time to
    finish in s (sooner first) where known, else its samples/s."""
    if o.time_change is not None:
        return 1.0 / (1.0 + o.time_change) - 1.0
    if o.quality_change is not None:
        return 1.0 / (1.0 + o.quality_change) - 1.0
    if o.throughput_gain is not None:
        return o.throughput_gain
    return 1.0 / o.time_s if o.time_s else o.samples_per_s


def _wins(ctx: _Ctx, o: DecisionOption) -> bool:
    """An option the card keeps: it runs, and beats today's run where that runs: faster, or
    the same time at the model's resolution for less money (``_saves``)."""
    return o.runnable and (not ctx.now.fits or _score(o) > 0 or _saves(ctx, o))


def money_ratio(o: DecisionOption) -> float | None:
    """``o``'s money over today's for the same work: its hourly price over today's (both known,
    today's above zero) divided by its speed-up (``_score`` + 1), which is total money over
    today's total where a goal is known (money = time x hourly price), and price per sample
    (hourly price / throughput) where it is not; None where either price is not known."""
    if o.usd_per_hour is None or o.extra_usd_per_hour is None:
        return None
    now_hourly = o.usd_per_hour - o.extra_usd_per_hour
    return o.usd_per_hour / now_hourly / (1.0 + _score(o)) if now_hourly > 0 else None


def _saves(ctx: _Ctx, o: DecisionOption) -> bool:
    """Whether ``o`` saves at least the model's median error in money (``money_ratio`` - 1 <=
    -error) and loses less than it in time (``_score`` > -error): days and dollars at the
    model's resolution, the same days for fewer dollars (fewer servers where the inter-server
    link wastes the second). False where today's run does not fit (nothing to save on)."""
    if not ctx.now.fits or _score(o) <= -ctx.error:
        return False
    ratio = money_ratio(o)
    return ratio is not None and ratio - 1.0 <= -ctx.error


def _slower_words(x: float) -> str:
    """'1.5% slower' for ``_faster``'s ``x`` = 0.015; a time or speed two or more times as far
    as '3.4x slower' (x = 2.376), never '237.6% slower'."""
    return f"{x:.1%} slower" if x < 1 else f"{figures.multiple(round(1 + x, 1))} slower"


def _faster(a: DecisionOption, b: DecisionOption) -> float:
    """How much sooner ``a`` finishes than ``b`` (0.1 = 10 % faster), from their own times
    where both are known, else their relative times to quality (only a critical batch size
    known, as ``_score``), else their throughputs (same global batch)."""
    if a.time_s and b.time_s:
        return b.time_s / a.time_s - 1.0
    if a.quality_change is not None and b.quality_change is not None:
        return (1.0 + b.quality_change) / (1.0 + a.quality_change) - 1.0
    return a.samples_per_s / b.samples_per_s - 1.0


def _buys(o: DecisionOption) -> bool:
    """The card's plainer option in a tie: False (first) where there is nothing to buy
    (``NOTHING_TO_BUY``)."""
    return o.key not in NOTHING_TO_BUY


def _material(ctx: _Ctx, options: list[DecisionOption]) -> list[DecisionOption]:
    """The ``options`` whose gain over today's run is a decision: at least the model's median
    error in time (``_score``), or in money at the same time (``_saves``); all of them where
    today's run does not fit (nothing to gain over)."""
    return options if not ctx.now.fits else [o for o in options
                                             if _score(o) >= ctx.error or _saves(ctx, o)]


def _by_money(ctx: _Ctx, options: list[DecisionOption]) -> bool:
    """Whether decide chooses among ``options`` by money (``_contest``): today's run fits and
    total money is known for each that gains the model's error."""
    material = _material(ctx, options)
    return ctx.now.fits and bool(material) and all(o.total_usd is not None for o in material)


def _led(ctx: _Ctx, options: list[DecisionOption],
         gains: bool = True) -> tuple[DecisionOption | None, list[DecisionOption], bool]:
    """decide's lead among ``options`` that fit (docs/model.md §20), before the speed tie: (the
    lead, the options it was taken from, whether money counted). Where today's run fits, only
    those that gain at least the model's median error over it count (``_material``; all with
    ``gains`` False); of them, where total money is known for each, those within that error of
    the cheapest's money and the soonest of them (``cheapest.cheapest``, goal's rule too);
    else the soonest (``_faster``). (None, [], False) where none gains the error."""
    pool = _material(ctx, options) if gains else options
    if not pool:
        return None, [], False
    by_money = gains and _by_money(ctx, options)
    if by_money:  # the one rule for "the cheapest", goal's too (``cheapest``)
        money = [o.total_usd for o in pool]
        lead = pool[cheapest(money, [o.time_s for o in pool], ctx.error)]
        pool = [o for o, same in zip(pool, same_money(money, ctx.error), strict=True) if same]
    else:
        lead = pool[0]
        for o in pool[1:]:
            if _faster(o, lead) > 0:
                lead = o
    return lead, pool, by_money


def _index(pool: list[DecisionOption], o: DecisionOption) -> int:
    """Where ``o`` itself (not an equal option) is in ``pool``."""
    return next(i for i, p in enumerate(pool) if p is o)


def _contest(ctx: _Ctx, options: list[DecisionOption],
             gains: bool = True) -> tuple[list[DecisionOption], list[DecisionOption], bool]:
    """decide's one rule for choosing among ``options`` that fit (docs/model.md §20), up to
    the last tie: (the lead (``_led``) and those the model cannot tell from it in speed
    (``cheapest.same_speed``), soonest first; the options it was taken from; whether money
    counted). Days and dollars both count: a cheaper way is not taken for a difference the
    model cannot tell, nor a dearer one for a speed it cannot. ([], [], False) where none
    gains the error."""
    lead, pool, by_money = _led(ctx, options, gains)
    if lead is None:
        return [], [], False
    slower = [_faster(lead, o) for o in pool]
    tied = same_speed(slower, _index(pool, lead), ctx.error)
    ties = [o for o, tie in zip(pool, tied, strict=True) if tie]
    return sorted(ties, key=lambda o: _faster(lead, o)), pool, by_money


def _choose(ctx: _Ctx, options: list[DecisionOption], plainer,
            gains: bool = True) -> DecisionOption | None:
    """decide's choice among ``options`` that fit: the card's recommendation and its
    add-server option (``_pick_grown``) both take it, and goal takes the same rule
    (``cheapest.plainest``): of the lead (``_led``) and those tied with it in speed, the first
    by ``plainer`` (a sort key: less to buy or change), the leader among equally plain ones: a
    difference the model cannot tell apart is no reason to buy or change more. None where none
    gains the error."""
    lead, pool, _ = _led(ctx, options, gains)
    if lead is None:
        return None
    slower = [_faster(lead, o) for o in pool]
    return pool[plainest(slower, _index(pool, lead), lambda i: plainer(pool[i]), ctx.error)]


def _measure_before_buying(profile: Profile, scenario: Scenario,
                           options: list[DecisionOption]) -> str | None:
    """Where a network upgrade is shown and today's inter-server figure is no measurement of
    these servers (a preset profile's, or a preset a one-server calibration kept:
    ``profiles.unmeasured_links``), a note that the upgrade's gain rests on that figure and how
    to measure it before buying, the figure's knob named by its control (``layout.knob_refusal``:
    the CLI's --inter-busbw, the app's label); None otherwise (a measured link, or one given by
    flag)."""
    from scalesim.profiles import unmeasured_origin

    link = unmeasured_link_in_use(profile, scenario, "inter_node")
    if link is None or not any(o.key == "network" for o in options):
        return None
    return knob_refusal(as_literal(
        f"the network upgrade's gain starts from today's inter-server "
        f"{link_GBps(profile.hardware.inter_node.busbw_GBps)} busbw, not a measurement of "
        f"these servers {unmeasured_origin(link)}: measure it before buying (nccl-tests "
        "all_reduce_perf over two servers, then scalesim calibrate --from-nccl-tests "
        "inter=LOG, or give the measured figure: ") + f"{KNOB.inter_busbw_GBps})")


def _most_devices(devices: int) -> int:
    """The largest doubling of ``devices`` within the device-count bound (``bounds``)."""
    high = int(bound("devices").high)
    most = devices
    while most * 2 <= high:
        most *= 2
    return most


def _batch_at(ctx: _Ctx, devices: int) -> int:
    """The global batch today's scenario has at ``devices``: the same where it is fixed, the
    per-device batch's under weak scaling."""
    now = ctx.now
    return now.global_batch if ctx.scenario.global_batch is not None else (
        now.global_batch * devices // now.devices)


def _least_memory_holders(ctx: _Ctx, devices: int) -> list[tuple[str, float]]:
    """The other hardware presets whose devices hold the planner's layout needing least memory
    at ``devices`` (the largest count the more-devices search modelled) and today's batch there
    (``_batch_at``), evaluated on each (``plan.RankedRows.presets_holding_least``, the rule
    plan's nothing-fits error names them by): the most sharded layout the search reached, so a
    preset that holds it runs some layout there. [] for a parameter count (no layout to
    plan), a count the planner cannot place, or a CPU host."""
    from scalesim import layout_predict as lp

    shaped = lp.with_measured_shape(ctx.profile)
    if shaped.workload.transformer is None:
        return []
    try:
        ranked = lp.plan_at(shaped, ctx.scenario, devices, _batch_at(ctx, devices), top=1,
                            include_unfit=True)
    except ScalesimError:
        return []
    return ranked.presets_holding_least()


def _fits_at(ctx: _Ctx, devices: int) -> tuple[tuple[Prediction, str, Scenario] | None, bool]:
    """((prediction, layout words, scenario) of the fastest layout that fits at ``devices``, or
    None where none fits; whether any layout could be modelled there at all), at the global
    batch today's scenario has there (the same where it is fixed; the per-device batch's under
    weak scaling): the planner's best row for a transformer (``layout_predict.plan_at``: tp x
    pp splits, ZeRO stages, recompute, micro-batches), predicted as ``predict`` says of it;
    else (a parameter count, or a count the planner cannot place) today's split with the
    fastest ZeRO stage that fits. Fastest is decide's ranking: at one global batch, time to
    finish goes as 1 / throughput. Not modelled: no valid layout (a batch that does not split)."""
    from scalesim import layout_predict as lp

    profile, scenario = ctx.profile, ctx.scenario
    batch = _batch_at(ctx, devices)
    shaped = lp.with_measured_shape(profile)
    if shaped.workload.transformer is not None:
        try:
            row = lp.plan_at(shaped, scenario, devices, batch, top=1, include_unfit=True)[0]
        except ScalesimError:  # a count the planner cannot place: today's split below
            pass
        else:
            if not row.fits:
                return None, True
            run = lp.scenario_of_row(scenario, row)
            try:  # predict says of the row what the planner says (layout_predict.plan_at)
                p = _one(profile, run, devices)
            except ScalesimError:
                return None, True
            return ((p, row_layout(row), run) if p.fits else None), True  # all it needs
    best, modelled = None, False
    for strategy in ZERO_STRATEGIES:
        run = scenario.model_copy(update={"strategy": strategy})
        try:
            p = _one(profile, run, devices)
        except ScalesimError:  # a global batch that does not split, ZeRO at dp 1...
            continue
        modelled = True
        if p.fits and (best is None or p.samples_per_s > best[0].samples_per_s):
            best = (p, split_said(Split(p.dp, p.tp, p.pp, p.cp, strategy)), run)
    return best, modelled


# Beyond the fewest devices at which some layout fits, the doublings also tried where fewer
# devices per sample may finish cheaper (a layout that needs ZeRO-3 across a slow network at the
# fewest may pipeline at twice as many: llama3-70b on a2-highgpu-8g, 32 devices 6.9 days and
# $19,579, 64 devices 14.5 hours and $3,420)
MORE_DEVICES_DOUBLINGS = 2


def _device_seconds(ctx: _Ctx, p: Prediction) -> float:
    """Billed device-seconds of ``p``'s run: its billed devices (whole instances, as every
    option is billed) x its time to train (``_Ctx._time``: the goal's samples, the large-batch
    penalty in where a critical batch is known; a larger count under weak scaling trains at a
    larger global batch), else per sample (no goal): what it costs at one price per
    device-hour, decide's price of added devices."""
    t = ctx._time(p)
    return float(ctx.goal.billed_devices(p.devices)) * (1.0 / p.samples_per_s if t is None else t)


def _more_devices(ctx: _Ctx) -> tuple[tuple[Prediction, str, Scenario] | None, int]:
    """The fewest devices (2x, 4x, ... today's, up to ``_most_devices``) at which some layout
    fits (``_fits_at``), with that layout's words and scenario, or None where none does; and the
    largest count at which any layout could be modelled (today's where none could). From the
    first count that fits, ``MORE_DEVICES_DOUBLINGS`` more doublings are tried, and a larger
    count is taken where training costs fewer billed device-seconds there (``_device_seconds``)
    by more than the model's median error (decide's same-money rule: then the fewer devices)."""
    most = _most_devices(ctx.now.devices)
    n, searched = ctx.now.devices * 2, ctx.now.devices
    while n <= most:
        found, modelled = _fits_at(ctx, n)
        if found is not None:
            return _cheaper_doubling(ctx, found, n, most)
        searched = n if modelled else searched
        n *= 2
    return None, searched


def _cheaper_doubling(ctx: _Ctx, found: tuple[Prediction, str, Scenario], n: int,
                      most: int) -> tuple[tuple[Prediction, str, Scenario], int]:
    """``found`` at ``n`` devices, or the layout of a doubling of ``n`` (up to
    ``MORE_DEVICES_DOUBLINGS`` of them, within ``most``) at which training costs less by more
    than the model's median error, and its count; where a doubling is taken, ``ctx.passed_over``
    says the fewest that fit and what they would cost (a note of the card)."""
    best, best_n = found, n
    first, first_n = found, n
    ctx.fewest_that_fit = n
    for _ in range(MORE_DEVICES_DOUBLINGS):
        n *= 2
        if n > most:
            break
        other, _modelled = _fits_at(ctx, n)
        if other is not None and (_device_seconds(ctx, other[0])
                                  < (1 - ctx.error) * _device_seconds(ctx, best[0])):
            best, best_n = other, n
    if best_n != first_n:
        ratio = _device_seconds(ctx, first[0]) / _device_seconds(ctx, best[0])
        ctx.passed_over.append(
            f"not shown: the fewest {ctx.words.devices} at which a layout fits, "
            f"{ctx.words.count(first_n)} ({first[1]}): {ratio:.2g}x the billed "
            f"{ctx.words.device}-hours of {ctx.words.count(best_n)} for the same training")
    return best, best_n


def _changes(scenario: Scenario, run: Scenario, devices: int) -> dict:
    """The fields (Scenario's JSON names) ``run`` at ``devices`` sets that ``scenario`` does not."""
    old, new = scenario.model_dump(mode="json"), run.model_dump(mode="json")
    return {"devices": [devices], **{k: v for k, v in new.items()
                                     if k != "devices" and old.get(k) != v}}


@dataclass(frozen=True)
class _MoreDevices:
    """The more-devices answer: the option on the card, the memory and the layout's words."""

    option: DecisionOption
    memory_bytes: float
    layout: str


def _more_devices_option(ctx: _Ctx, price_source: str) -> tuple[_MoreDevices | None, int]:
    """The option of the fewest devices at which some layout fits (``_more_devices``), priced
    for its billed devices as every option is (``_Ctx.option``), or None; and how far the
    search went."""
    found, searched = _more_devices(ctx)
    if found is None:
        return None, searched
    p, layout, run = found
    words = ctx.words
    # the sentence: the layout
    title = joined(arrowed_said(f"Add {words.devices} (",
                                words.count_change(ctx.now.devices, p.devices, ARROW_FIELD), ", "),
                   split_said(Split(None, p.tp, p.pp, p.cp, run.strategy), after=")"))
    option = ctx.option("more_devices", title, p, 0.0, price_source,
                        changes=ctx.changes(run, p))
    return _MoreDevices(option, p.memory_bytes, layout), searched


def _cost_words(ctx: _Ctx, o: DecisionOption) -> str:
    """': it finishes in 3.2 days and costs $1,234 in total (32 devices billed)', from the
    option's own figures; what is not known is left out."""
    said = []
    if o.time_s is not None:
        said.append(f"finishes in {duration_text(o.time_s)}")
    if o.total_usd is not None:
        said.append(f"costs {usd_text(o.total_usd)} in total")
    elif o.usd_per_hour is not None:
        said.append(f"costs {usd_text(o.usd_per_hour)} per hour")
    if not said:
        return ""
    billed = (f" ({ctx.words.count(o.billed_devices)} billed)"
              if o.usd_per_hour is not None and o.billed_devices is not None else "")
    return f": it {' and '.join(said)}{billed}"


def _nothing_fits(ctx: _Ctx, more: _MoreDevices | None, searched: int) -> str:
    """The recommendation where no change we model fits at today's devices: what is already done
    (split, fully sharded, dp 1 where ZeRO shards nothing) is not advised again; the answer is
    ``more``, the more-devices option, where the model says some layout fits (its time and money
    as its row on the card says them), else devices with more memory, saying how far the search
    went (``searched``)."""
    now, scn = ctx.now, ctx.scenario
    done = []
    if model_split_words(None, now.tp, now.pp, now.cp):
        done.append(ctx.said(split_said(Split(None, now.tp, now.pp, now.cp),
                                        "the model is split already, ",
                                        ", and no other split fits")))
    if data_parallel_ranks(now) == 1:
        done.append(ctx.said(one_replica_said("ZeRO shards nothing over ")))
    elif scn.strategy == "zero3":
        done.append("the states are fully sharded already (ZeRO-3)")
    why = f" ({'; '.join(done)})" if done else ""
    words = ctx.words
    head = f"Nothing we model fits in {words.memory} at {words.count(now.devices)}{why}"
    if more is None:
        most = _most_devices(now.devices)
        batch = (f" for a global batch of {scn.global_batch:,}" if scn.global_batch is not None
                 else "")
        if most == now.devices:
            tried = f"and {words.count(now.devices)} is the most the model takes"
        elif searched == now.devices:
            tried = f"and no layout is valid at 2x today's {words.devices} or more{batch}"
        else:
            tried = (f"nor at up to {words.count(searched)} (2x, 4x, ... today's; "
                     f"{MORE_DEVICES_SEARCHED})")
            tried += f"; no layout is valid at more{batch}" if searched < most else ""
        advice = ("a smaller model or a larger global batch" if batch and searched < most
                  else "or a smaller model")
        # the presets whose devices hold the least-memory layout at the largest count modelled
        held = _least_memory_holders(ctx, searched)
        memory = (memory_ways(held, words, "the layout needing least memory at "
                              + words.count(searched)) if held
                  else f"use {words.holders} with more memory")
        return f"{head}, {tried}: {memory}, {advice}."
    o = more.option
    return (f"{head}: add {words.devices}: at {words.count(o.devices)} ({ctx.said(more.layout)}) "
            f"it needs {gib(more.memory_bytes)} per {words.device}, which fits"
            f"{_cost_words(ctx, o)}.")


def _recommend(ctx: _Ctx, options: list[DecisionOption],
               more: _MoreDevices | None = None, searched: int | None = None) -> tuple[str, str]:
    """The sentence and its main assumption; ``more`` and ``searched``: the more-devices search
    where nothing fits at today's count (``_more_devices_option``)."""
    now = ctx.now
    if not options:
        if not now.fits:
            return (_nothing_fits(ctx, None, now.devices if searched is None else searched),
                    ctx.assumptions["more_devices"])
        return ("Keep the current setup: no option we model finishes sooner or runs faster here.",
                ASSUMPTIONS["now"])
    if not now.fits:
        o = _choose(ctx, options, _buys)
        if more is not None and o is more.option:
            return _nothing_fits(ctx, more, o.devices), o.assumption
        # a sentence of its own: a title ending in a layout ('..., sequence parallel') would
        # read 'sequence parallel first' as one of its settings
        return (f"{_action(o, ctx.words)}. Do this first: today's layout does not fit in "
                f"{ctx.words.memory}.", o.assumption)
    stall = next((o for o in options if o.key == "input_pipeline"), None)
    if stall is not None and data_stall_share(now) >= DATA_STALL_SHARE:
        return (f"Fix the input pipeline first: {data_stall_share(now):.0%} of each step waits "
                f"for data; it gives {pct_text(stall.throughput_gain)} throughput before any "
                "purchase.", stall.assumption)
    o = _choose(ctx, options, _buys)
    if o is None:  # every gain is within the model's error
        best = options[0]
        return (f"Keep the current setup: the best option ({best.title}: {_gain_words(best, ctx.unit)}) "
                f"gains less than the model's median error of {ctx.error:.1%}, so the gain may "
                "not be real.", ASSUMPTIONS["now"])
    if _by_money(ctx, options):  # money known for every option: the cheapest
        money = ("costs the same in total" if o.total_change_usd == 0
                 else f"saves {usd_text(-o.total_change_usd)}" if o.total_change_usd < 0
                 else f"costs {usd_text(o.total_change_usd)} more in total")
        free = " with no new hardware" if o.key in FREE_KEYS else ""
        return (f"{_action(o, ctx.words)}: {_gain_words(o, ctx.unit)}{free}, and {money}.", o.assumption)
    if o.key in FREE_KEYS:  # as good as the best within the model's error, nothing to buy
        return (f"{_action(o, ctx.words)}: {_gain_words(o, ctx.unit)} with no new hardware.", o.assumption)
    extra = ("" if o.extra_usd_per_hour is None or o.extra_usd_per_hour == 0
             else f", for {usd_text(o.extra_usd_per_hour)} more per hour"
             if o.extra_usd_per_hour > 0 else
             f", for {usd_text(-o.extra_usd_per_hour)} less per hour")
    return f"{_action(o, ctx.words)}: {_gain_words(o, ctx.unit)}{extra}.", o.assumption


def _action(o: DecisionOption, nouns: Nouns) -> str:
    """The option's title as an instruction ('Settings: double ...' -> 'Double ...', 'Network:
    ...' -> 'Upgrade the inter-server network to ...', the server in ``nouns``: 'inter-rack'
    on a GB200 NVL72)."""
    for prefix, verb in (("Settings: ", ""), ("Input: ", "Fix the input pipeline: "),
                         ("Network: ", f"Upgrade the inter-{nouns.server} network to ")):
        if o.title.startswith(prefix):
            rest = o.title[len(prefix):]
            return (verb + rest) if verb else rest[0].upper() + rest[1:]
    return o.title


def _gain_words(o: DecisionOption, unit: str) -> str:
    """An option's gain in the recommendation, as the card's table writes it (``pct_text``:
    '+104.5% throughput', never '+105%' beside it); ``unit``: the workload's (``figures.rate``)."""
    if o.time_change is not None and o.time_s is not None:
        return f"finishes in {duration_text(o.time_s)} ({pct_text(o.time_change)})"
    if o.quality_change is not None:
        return (f"reaches quality sooner ({pct_text(o.quality_change)} to quality, "
                f"{pct_text(o.throughput_gain)} throughput)")
    if o.throughput_gain is None:  # today's does not fit: nothing to compare with
        return rate(o.samples_per_s, unit)
    return f"{pct_text(o.throughput_gain)} throughput"


def _shown(ctx: _Ctx, winners: list[DecisionOption]) -> list[DecisionOption]:
    """The options on the card: the best ``MAX_OPTIONS`` of ``winners`` (sorted by ``_score``),
    with decide's choice among all of them (``_choose``) in the last place where it ranks below
    those: an option that saves money at the same time (``_saves``: fewer servers) scores under
    every faster one, and the recommendation must be able to name it."""
    shown = winners[:MAX_OPTIONS]
    if ctx.now.fits and len(winners) > MAX_OPTIONS:
        pick = _choose(ctx, winners, _buys)
        if pick is not None and pick not in shown:
            shown = [*shown[:MAX_OPTIONS - 1], pick]
    return shown


def decide(profile: Profile, scenario: Scenario, devices: int, said=None,
           pipeline=None,
           ranked: tuple[Prediction, list[RemedyResult]] | None = None) -> DecisionCard:
    """The decision card at ``devices`` (see the module docstring). ``said``: how the card says
    an option's title (``layout_change.LayoutTitle`` in the app's control labels,
    ``app.layout_titles.page_title``), in its table, recommendation and notes alike; None: as
    the CLI writes it. ``pipeline``: how its stage notes name a pipeline of (pp, virtual
    stages) (the app's 'Pipeline stages 3', ``app.layout_titles.page_pipeline_words``); None:
    the CLI's 'pp 3' (``pipeline_stages.pipeline_words``). ``ranked``: what
    ``rank_remedies(profile, scenario, devices)`` gave (the prediction at ``devices`` and the
    remedies ranked), where the caller has it (the app's page, which shows them too); None:
    predicted and ranked here."""
    if devices < 1:
        raise ScalesimError("devices must be 1 or more", knobs=("devices",))
    now = _one(profile, scenario, devices) if ranked is None else ranked[0]
    ctx = _Ctx(profile, scenario, now, said, None if ranked is None else ranked[1])
    # a split model's micro-batch is per replica of tp x pp devices: the layout says so
    words = ctx.words
    as_is = f"As is: {words.count(devices)}"
    if model_split_words(now.dp, now.tp, now.pp, now.cp):
        as_is = split_said(Split(now.dp, now.tp, now.pp, now.cp), f"{as_is} (", ")")
    base = ctx.option("now", as_is, now, 0.0, _price_source(profile, scenario))
    candidates, notes, added = _candidates(ctx)
    winners = [o for o in candidates if _wins(ctx, o)]
    losers = [o.title for o in candidates if o not in winners]
    if losers:
        notes.append("not shown (slower, or does not fit in memory): " + "; ".join(losers))
    winners.sort(key=lambda o: -_score(o))
    options = _shown(ctx, winners)
    if rest := [o for o in winners if o not in options]:  # the best few shown; the rest named
        cheaper = " or as fast for less money" if any(_score(o) <= 0 for o in rest) else ""
        notes.append(f"also faster than today{cheaper}, not shown (the card shows the best "
                     f"{MAX_OPTIONS}): "
                     + "; ".join(o.title + (f" ({pct_text(o.throughput_gain)} throughput)"
                                            if o.throughput_gain is not None else "")
                                 for o in rest))
    more = searched = None
    if not now.fits and all(o.key == "add_server" for o in options):
        # nothing fits at today's count: the fewest devices that fit (``_more_devices_option``),
        # whose sentence says why, also where the add-server option runs at that same count
        more, searched = _more_devices_option(ctx, base.price_source)
        notes += ctx.passed_over
        # an add-server option at the fewest that fit is the more-devices option's count, or
        # one it beats by a doubling that trains for fewer billed device-hours
        if more is not None and (not options or options[0].devices in
                                 (more.option.devices, ctx.fewest_that_fit)):
            options = [more.option]
    recommendation, assumption = _recommend(ctx, options, more, searched)
    notes += _uneven_stage_notes(profile, scenario, options, pipeline)
    if note := _measure_before_buying(profile, scenario, options):
        notes.append(note)
    within = [o.title for o in options if o not in _material(ctx, options)]
    if within and len(within) < len(options):
        notes.append(f"gains under the model's median error ({ctx.error:.1%}, docs/validation.md) "
                     "are not recommended: " + "; ".join(within))
    gpus = named_count(devices, profile.hardware.device_name)
    if now.fits and devices == 1:
        question = f"{gpus}: what should we do?"
    elif now.fits:
        question = f"{gpus} give {now.speedup:.1f}x one {words.device}: what should we do?"
        if note := above_linear_note([now], words):  # more than Nx on N devices: why
            notes.append(note)
        if note := one_device_note([now], words):
            notes.append(note)
    else:
        question = (f"{gpus} {'does' if devices == 1 else 'do'} not fit this layout in memory "
                    f"({need_words(now, profile, words)}): what should we do?")
    relative = _relative_quality(base, options)
    if relative:
        notes.append(_relative_quality_note(ctx.goal.critical_batch))
    elif ctx.goal.kind is None:
        notes.append("enter a training length (or E_min with a critical batch size) to compare "
                     "time and total money, not only throughput")
    if ctx.price is None:
        notes.append(f"enter a price per {words.device}-hour (--price on the command line) to "
                     "compare money")
    if note := training_time.zero_price_note(ctx.goal):
        notes.append(note)
    if note := training_time.partial_batch_note(ctx.goal, now.global_batch, now.global_batch):
        notes.append(note)
    return DecisionCard(question=question, goal=RELATIVE_QUALITY if relative else ctx.goal.label(),
                        model_error=ctx.error,
                        now=base, options=options,
                        recommendation=recommendation, assumption=assumption, unit=ctx.unit,
                        notes=notes, added=added)


# ---------------------------------------------------------------- display (CLI and app)

NOT_KNOWN = "n/a"  # a cell with no number (no price, no goal); not "-", which Markdown makes a bullet
DOES_NOT_FIT = "does not fit"  # today's time and money where its layout does not fit in memory


def ceiling_words(p: Prediction, profile: Profile) -> str | None:
    """Why the run ``p`` (one that does not fit) cannot run where its memory fits but
    calibration ran out of memory at its micro-batch (``compute.oom_micro_batch``, the ceiling
    ``memory.under_measured_ceiling`` applies): 'micro-batch 8 ran out of memory in calibration,
    from 8 on'; None where its memory is what does not fit. '40.2 GiB needed' of 80 would read
    as a contradiction: one rule for decide's question and notes and the app's words."""
    oom = profile.compute.oom_micro_batch
    if p.memory_bytes > profile.hardware.device_memory_bytes or oom is None:
        return None
    return (f"micro-batch {whole(p.micro_batch)} ran out of memory in calibration, from "
            f"{whole(oom)} on")


def need_words(p: Prediction, profile: Profile, words: Nouns = GPU_NOUNS) -> str:
    """'101.2 GiB per device needed', or where the calibrated ceiling is why, its words
    (``ceiling_words``)."""
    return ceiling_words(p, profile) or f"{gib(p.memory_bytes)} per {words.device} needed"


def usd_text(x: float | None, signed: bool = False) -> str:
    if x is None:
        return NOT_KNOWN
    text = f"${amount(abs(x))}"
    if signed:
        return ("+" if x >= 0 else "-") + text
    return text


def duration_text(seconds: float | None, missing: str = NOT_KNOWN) -> str:
    """``figures.duration_text`` of ``seconds``; ``missing`` where there is no time."""
    return missing if seconds is None else figures.duration_text(seconds)


def card_rows(card: DecisionCard) -> list[dict[str, str]]:
    """The card's table as display strings (the CLI's table and the app's use the same): five
    columns, each change against "as is" in brackets, so it reads on a phone. Where today's
    layout does not fit, its row says so (``DOES_NOT_FIT``) in place of a time and money it
    cannot have (its title says it once, without '(not runnable)'), and the options show their
    own throughput (in the card's ``unit``/s, the workload's ``sample_unit``), time and
    money, unbracketed."""
    def with_change(value: str, change: str | None, now: bool) -> str:
        return value if now or not change else f"{value} ({change})"

    rows = []
    for o in [card.now, *card.options]:
        now = o.key == "now"
        if now and not o.runnable:  # said once, by its cells
            rows.append({"option": o.title, "USD/h": usd_text(o.usd_per_hour),
                         "throughput": DOES_NOT_FIT, "time to finish": DOES_NOT_FIT,
                         "total money": DOES_NOT_FIT})
            continue
        time_change = (pct_text(o.time_change) if o.time_change is not None else
                       f"{pct_text(o.quality_change)} to quality"
                       if o.quality_change is not None else None)
        rows.append({
            "option": o.title + ("" if o.runnable else " (not runnable)"),
            "USD/h": with_change(usd_text(o.usd_per_hour),
                                 None if o.extra_usd_per_hour is None
                                 else usd_text(o.extra_usd_per_hour, signed=True), now),
            "throughput": ("as is" if now else rate(o.samples_per_s, card.unit)
                           if o.throughput_gain is None else pct_text(o.throughput_gain)),
            "time to finish": ("as is" if now and o.time_s is None and time_change is not None
                               else with_change(duration_text(o.time_s), time_change, now)
                               if o.time_s is not None or now or time_change is None
                               else time_change),
            "total money": with_change(usd_text(o.total_usd),
                                       None if o.total_change_usd is None
                                       else usd_text(o.total_change_usd, signed=True), now),
        })
    return rows
