"""Remedies for lost scaling efficiency, each applied alone and ranked by what the user cares about.

The remedies are the seed's list: a bigger per-device batch, overlap of communication with
backward, gradient accumulation, more loader workers or caching the input, sharding (ZeRO), a
faster interconnect, and fixing a slow device; then splitting the model, running a Hopper
attention kernel instead of a FlashAttention-2-class one, running the layers' weight matmuls in
fp8, and overlapping the tensor-parallel collectives with the matmuls (docs/model.md §10, §13,
§14). Each one
changes the scenario (or the profile's links) in one documented way; the model predicts the result
at the same device count; the gain is the change in throughput. A remedy that does not apply
(overlap already on, no data stall, no slow device...) is still returned with ``applicable=False``
and the reason, so a report can say why it was not suggested.

Ranking (``rank_remedies``): by time to train / to quality, large-batch penalty included
(``scalesim.training_time``), when the scenario gives a training length or E_min; by relative
time to quality when only a critical batch size is known; by throughput otherwise. Only a change
that runs (fits in device memory) and wins on that measure is a remedy
(``verdict == "remedy"``, a gain of at least ``NO_CHANGE``); one that changes nothing ("no
change", a gain under ``NO_CHANGE`` either way), loses, or does not fit, is listed as such and
never "best".
When a tenth or more of the step is data stall, the input-pipeline fix ranks first (the stall is
lost at one device too, so scaling efficiency cannot show it). When today's layout does not fit
in memory, every change that makes it fit is a remedy, ranked by its speed.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim import training_time
from scalesim.accuracy import MODEL_PARALLEL_MEDIAN_ERROR
from scalesim.attention_kernel import FLASH2_KERNEL, VENDOR_KERNEL
from scalesim.bounds import QUANTITIES
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns, replica_of
from scalesim.errors import ScalesimError, as_literal
from scalesim.figures import CHANGE_ARROW, busbw_words, multiple, percents_apart
from scalesim.layout import deepspeed_pipeline_error, deepspeed_refuses_pipeline
from scalesim.layout_change import (
    ARROW_FIELD,
    ZERO,
    Changes,
    arrowed_said,
    changes_said,
    gloss_said,
    layout_title,
    one_replica_said,
    retitled,
    split_title,
    titled,
)
from scalesim.model.memory import STRATEGIES, reduce_bytes_per_param_of, state_shards
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.model.zero_exchange import (
    framework_label,
    holds_full_gradients,
    reduce_scatters,
    reduce_wire_ratio,
    reduces_once,
    sent_units_at,
)
from scalesim.network_upgrades import UPGRADES_BY_KEY, NetworkUpgrade, network_scenario
from scalesim.precision import DEFAULT_PRECISION, FP8, no_fp8_peak_words
from scalesim.predict import (
    STALL_NOT_MODELLED,
    Prediction,
    accumulation_max,
    data_parallel_ranks,
    hybrid_sharded,
    input_pipeline_modelled,
    inter_busbw_GBps_of,
    intra_busbw_GBps_of,
    micro_batch_max,
    predict,
    server_part_words,
)
from scalesim.presets import flash2_slower_than_vendor, peak_tflops_of
from scalesim.schemas import (
    Hardware,
    LinkCalibration,
    LoaderCurve,
    LoaderPoint,
    Profile,
    Scenario,
    ScenarioLayout,
    Workload,
)

# The faster interconnect remedy: 8x 200 Gb/s HDR InfiniBand per node as network_upgrades names
# it, at presets.inter_link's busbw (192 GB/s, measured in nccl#812).
_FAST_INTER = UPGRADES_BY_KEY["ib-8x200"]
FAST_INTER_BUSBW_GBPS = _FAST_INTER.link().busbw_GBps
FAST_INTER_NAME = _FAST_INTER.name.split(" (")[0]  # "8 x 200 Gb/s HDR InfiniBand"
# A step that waits this share or more for input: fix the loader first. A setting between
# TensorFlow's profiler's "moderately" (5 %) and "highly" (20 %) input-bound steps (their
# geometric mean); removing it gains 11 %, more than twice the model's median error (docs/model.md §10).
DATA_STALL_SHARE = 0.10
# "Split the model" is offered where it could help: the model does not fit, or the data-parallel
# exchange left exposed is a share s of the step whose removal could gain the model's median
# error on layouts e (scalesim.accuracy): a split at the same devices and global batch shrinks each
# replica's gradient exchange by tp x pp and adds tensor / pipeline traffic, so it gains at most
# s / (1 - s); below s = e / (1 + e) no split can be a decision (docs/model.md §10).
DP_EXCHANGE_SHARE = MODEL_PARALLEL_MEDIAN_ERROR / (1.0 + MODEL_PARALLEL_MEDIAN_ERROR)
# A change whose gain on the ranking measure is under this (0.05 %) prints as +0.0 % at the one
# decimal every report shows, and is far below the model's median error (2.8-3 %,
# scalesim.accuracy): it is no change, not a remedy (a display rounding, not a model figure).
NO_CHANGE = 0.0005
VERDICTS = ("remedy", "no change", "loses", "not runnable", "not applicable")  # display order
# A diagnosis of runs without --params lays the exchange's buckets out for a gradient size it
# does not know (``runs_gradient_size``): a change that helps at some size the runs allow and not
# at another has this verdict instead, with no gain, ranked after the remedies. The planner knows
# its model's size and never gives it; a diagnosis's remedies are in DIAGNOSIS_VERDICTS' order.
SIZE_DEPENDENT = "depends on size"
DIAGNOSIS_VERDICTS = (VERDICTS[0], SIZE_DEPENDENT, *VERDICTS[1:])
# The batch remedies' factors, one place for every reader: each such remedy says its own
# (``RemedyResult.factor``, ``diagnosis.Remedy.factor``), which a traced pipeline's pricing of
# it reads (``trace_diagnosis.pipeline_batch_remedies``). Twice the per-device batch (or, where a
# global batch is set, twice it); gradient accumulation over 4x the micro-steps, or, where a set
# global batch splits into 2x but not 4x the micro-steps of each replica, 2x
# (``accumulation_factor``).
BIGGER_BATCH_FACTOR = 2
ACCUMULATION_FACTORS = (4, 2)  # tried in this order; the first is the one without a global batch
# The remedies whose gain is the data-parallel exchange's (overlapping it, sending it fewer times
# a sample or over other collectives, a faster link): held back where traces show none of its
# collectives (``trace_collectives.unseen_exchange_note``)
EXCHANGE_REMEDIES = ("overlap", "accumulation", "sharding", "interconnect", "grad_sync")
# Each verdict's group in a list of remedies (diagnose's text): the planner's word, so a remedy
# reads the same in the planner and in diagnose (``verdict_group``: "Other remedies" under a
# first remedy said above them), in ``DIAGNOSIS_VERDICTS``' order.
VERDICT_GROUPS = {"remedy": "Remedies", SIZE_DEPENDENT: "Depends on the model's size",
                  "no change": "No change", "loses": "Loses",
                  "not runnable": "Not runnable", "not applicable": "Not applicable"}


def verdict_group(verdict: str, first_said: bool) -> str:
    """The heading of ``verdict``'s group: ``VERDICT_GROUPS``'s, the remedies' "Other remedies"
    where a first remedy was said above them (``first_said``), "Remedies" where none was."""
    group = VERDICT_GROUPS[verdict]
    return f"Other {group.lower()}" if verdict == "remedy" and first_said else group


def gain_verdict(gain: float) -> str:
    """A runnable change's verdict from its gain on the ranking measure: 'remedy' from
    ``NO_CHANGE`` up, 'no change' under it either way (it prints as +0.0 %), else 'loses'."""
    return "remedy" if gain >= NO_CHANGE else "no change" if abs(gain) < NO_CHANGE else "loses"

# What a remedy is on a CPU calibration's processes (``device_nouns.nouns_for``): processes on
# one host share its cores and exchange through gloo over loopback TCP, and between hosts over
# TCP; GPU kernels and GPU links do not exist there. Why each GPU remedy does not apply:
CPU_NOT_APPLICABLE = {
    "intra_link": "the processes on one host exchange through gloo over loopback TCP, not a "
                  "link one can buy: its speed is the host's shared cores copying memory",
    "attention_kernel": "CPU processes run no Hopper attention kernel: cuDNN fused attention "
                        "and FlashAttention-3 need an NVIDIA Hopper GPU",
    "tp_overlap": "Transformer Engine's TP comm overlap and torchtitan's async TP run on CUDA "
                  "GPUs only, not on CPU processes under gloo",
    "fp8": "CPU processes have no fp8 matmuls: Transformer Engine's and torchao's float8 "
           "training need a GPU with fp8 matrix units (NVIDIA Hopper, Ada, Blackwell; AMD "
           "MI300)",
}
# The faster network for CPU processes: gloo sends over TCP, so twice today's network, not the
# InfiniBand figures (NCCL over RDMA) that GPU servers reach.
CPU_FASTER_NETWORK = "2x the TCP network gloo sends over"
# Each title that names the device, in GPU and CPU words.
SLOW_DEVICE_TITLE = {False: "Replace or fix the slow device",
                     True: "Fix the slow process (other work on its host's cores, or more "
                           "threads than cores)"}


def measure_words(measure: str) -> str:
    """What a ranking measure (``RemedyResult.measure``: time, quality or throughput) is called in
    a sentence: 'time to finish', 'time to quality', 'throughput'."""
    return {"time": "time to finish", "quality": "time to quality"}.get(measure, "throughput")


def verdict_words(verdict: str, measure: str = "throughput") -> str:
    """How a runnable change that is no remedy says so at the head of its note: 'loses
    throughput here', 'does not change the throughput here'; '' for a remedy (or any other
    verdict). ``measure``: ``RemedyResult.measure``."""
    what = measure_words(measure)
    return {"no change": f"does not change the {what} here",
            "loses": f"loses {what} here"}.get(verdict, "")


def global_batch_change(batch: int, now_batch: int, said: bool = False) -> str:
    """'global batch 4x' ('1.125x' exactly, ``figures.multiple``) where a run trains at global
    batch ``batch`` against today's ``now_batch``, so no report compares unlike runs unsaid
    (decide's options, the planner's largest gain, diagnose's and the planner's remedy notes);
    '' at today's batch or where the change's title says it already (``said``: strong
    scaling's 'Double the global batch (...)')."""
    if batch == now_batch or said:
        return ""
    return f"global batch {multiple(batch / now_batch)}"


@dataclass(frozen=True)
class RemedyResult:
    key: str  # bigger_batch, overlap, accumulation, loader, sharding, interconnect, slow_device,
    # fit_memory, split_model, attention_kernel, tp_overlap, grad_sync
    title: str  # what changes, in words a manager can read
    scenario: Scenario
    profile: Profile
    prediction: Prediction | None  # None when not applicable
    gain: float  # throughput ratio minus one (0.25 = +25 %); 0 when not applicable
    applicable: bool
    reason: str = ""  # why not applicable, or a caveat (memory, global batch changes)
    time_s: float | None = None  # time to train / to quality, large-batch penalty included
    cost_usd: float | None = None  # that time x billed devices x price per device-hour
    objective_gain: float = 0.0  # gain on the ranking measure: faster finish, else throughput
    verdict: str = "not applicable"  # one of VERDICTS
    measure: str = "throughput"  # what objective_gain measures: time, quality or throughput
    batch_change: str = ""  # 'global batch 4x' where it trains at another global batch than
    # today's and its title does not say so (``global_batch_change``); '' otherwise
    # the named hardware a faster-network remedy runs on (its price None where none is
    # public: the decision card then prices another, ``decision.card_upgrade``); None otherwise
    upgrade: NetworkUpgrade | None = None
    # the batch remedies' factor (``BIGGER_BATCH_FACTOR``, ``accumulation_factor``): how many
    # times today's batch or micro-steps it runs; None for the other remedies
    factor: int | None = None

    @property
    def helps(self) -> bool:
        """A real remedy: it runs and wins on the ranking measure."""
        return self.verdict == "remedy"


def unmeasured_link_in_use(profile: Profile, scenario: Scenario,
                           level: str) -> LinkCalibration | None:
    """The record of the ``level`` ("inter_node", "intra_node") figure the scenario runs on
    where no measurement of these servers gave it (``profiles.unmeasured_links``: a preset
    profile's links, or a preset a one-server calibration kept); None where it was measured or
    a flag (``--inter-busbw``, ``--intra-busbw``) replaces it."""
    from scalesim.profiles import unmeasured_links

    given = (scenario.inter_busbw_GBps if level == "inter_node"
             else scenario.intra_busbw_GBps)
    return None if given is not None else unmeasured_links(profile).get(level)


def not_measured_link(profile: Profile, scenario: Scenario, level: str) -> bool:
    """Whether the ``level`` figure the scenario runs on is one a calibration did not measure
    (one server, one process per server) and kept from a preset (``unmeasured_link_in_use``);
    a preset profile's links are the preset the user chose (``profiles.PRESET_LINKS``), not an
    unmeasured calibration."""
    from scalesim.profiles import PRESET_LINKS

    link = unmeasured_link_in_use(profile, scenario, level)
    return link is not None and link.not_measured_because != PRESET_LINKS


def link_change_words(before_GBps: float | None, after_GBps: float | None, preset: bool = False,
                      reached: tuple[float, float] | None = None, part: str = "",
                      arrow: str = CHANGE_ARROW, server: str = GPU_NOUNS.server) -> str:
    """'12 -> 192 GB/s busbw'; with ``preset`` (the figure a calibration kept from a preset,
    not measured: ``not_measured_link``) '6.8 (a preset, not measured) -> 192 GB/s busbw'; with
    ``reached`` (the figures the job's devices reach, GB/s) on part of each server (``part``,
    ``predict.server_part_words``) '12 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server
    (whole server 48 -> 192)' (``figures.busbw_words``). ``before_GBps`` None: today's whole
    server is not known (a link fitted to what the job's devices reached, no NIC count):
    '3.31 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 192)'; both None
    (twice such a link): the job's alone, '12.4 -> 24.8 GB/s busbw for the job's 1 of 8 GPUs
    per server'. ``arrow``: what goes between the figures; ``server``: the whole's noun, as
    ``part`` says it ('rack' on a GB200 NVL72) (``figures.busbw_words``)."""
    whole = (None if after_GBps is None else after_GBps if before_GBps is None
             else (before_GBps, after_GBps))
    return busbw_words(whole, reached, part, "(a preset, not measured)" if preset else "",
                       arrow, server)


def whole_inter_GBps(hw: Hardware, scenario: Scenario) -> float | None:
    """Today's inter-server busbw of a whole server, GB/s, as the link words name it (the
    scenario's override, else the hardware's); None where it is not known: a link without a NIC
    count (fitted to what the runs' devices reached) on part of each server
    (``predict.server_part_words``), whose figure is what the job's devices reach, not a whole
    server's (``link_change_words``)."""
    if server_part_words(hw, scenario) and hw.inter_node.nics_per_node is None:
        return None
    return scenario.inter_busbw_GBps or hw.inter_node.busbw_GBps


def _busbw_words(before_GBps: float | None, after_GBps: float | None, relative: bool,
                 preset: bool = False, reached: tuple[float, float] | None = None,
                 part: str = "", server: str = GPU_NOUNS.server) -> str:
    """A link remedy's change: '(12 -> 192 GB/s busbw)' (``link_change_words``, with what the
    job reaches where it differs; a ``LayoutTitle`` carrying its arrows, which a page writes as
    its own: ``arrowed_said``), or with ``relative`` (bandwidths fitted to a nominal gradient
    size, whose GB/s mean nothing alone) '(16x the fitted bandwidth)', the ratio of the figures
    the job reaches (``reached``, else the whole ones), not of their printed digits; ``server``:
    the whole's noun (``link_change_words``)."""
    if relative:
        before, after = reached or (before_GBps or after_GBps, after_GBps)
        return f"({after / before:.3g}x the fitted bandwidth)"
    return arrowed_said("(", link_change_words(before_GBps, after_GBps, preset, reached,
                                               as_literal(part), ARROW_FIELD, server), ")")


def _one(profile: Profile, scenario: Scenario, devices: int) -> Prediction:
    return predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]


MAX_SPLIT_HALVINGS = 20  # micro-batch / 2**20 at most when looking for one that fits


def _fitting_split(profile: Profile, scenario: Scenario, now: Prediction):
    """(scenario, reason-if-none): the largest micro-batch b/2^j (accumulation x 2^j, same global
    batch) that fits in device memory, searched in one vectorised sweep."""
    from scalesim.sweep import sweep

    b, k = now.micro_batch, scenario.accumulation
    factors = [2**j for j in range(1, MAX_SPLIT_HALVINGS + 1) if b // 2**j >= 1]
    if not factors:
        return scenario, f"per-{hardware_nouns(profile.hardware).device} batch is 1 already"
    factors = [f for f in factors if k * f <= accumulation_max()]
    if not factors:
        return scenario, (f"accumulation {k:,} cannot double within the bounds table's "
                          f"{accumulation_max():,} micro-steps")
    one = scenario.model_copy(update={"devices": [now.devices]})
    try:
        if scenario.global_batch is None:
            res = sweep(profile, one, {"micro_batch": [b // f for f in factors],
                                       "accumulation": [k]})
            fits, micro = res.columns["fits"], res.columns["micro_batch"]
            found = [(int(m), k * f) for m, f, ok in zip(micro, factors, fits, strict=True) if ok]
        else:
            res = sweep(profile, one, {"accumulation": [k * f for f in factors]})
            found = [(int(m), int(a)) for m, a, ok in zip(
                res.columns["micro_batch"], res.columns["accumulation"], res.columns["fits"],
                strict=True) if ok]
    except ScalesimError as exc:
        return scenario, str(exc)
    if not found:
        return scenario, "no smaller micro-batch fits either"
    micro, acc = found[0]
    if scenario.global_batch is None:
        return scenario.model_copy(update={"micro_batch": micro, "accumulation": acc}), ""
    return scenario.model_copy(update={"accumulation": acc}), ""


@dataclass(frozen=True)
class Candidate:
    """One remedy before it is predicted: the change (``scenario``, ``profile``) that
    ``rank_remedies`` predicts, or why it does not apply."""

    key: str  # RemedyResult.key
    title: str  # RemedyResult.title
    scenario: Scenario  # the scenario with the change
    profile: Profile  # the profile with the change (the loader remedy's; else today's)
    reason: str  # why the remedy does not apply; '' where it is to be predicted
    caveat: str  # what the change costs or assumes, said under its gain; '' for none
    upgrade: NetworkUpgrade | None = None  # RemedyResult.upgrade: a named faster network
    factor: int | None = None  # RemedyResult.factor: a batch remedy's factor


def accumulation_factor(global_batch: int | None, replicas: int,
                        accumulation: int) -> int | None:
    """The accumulation remedy's factor (``ACCUMULATION_FACTORS``): 4x the micro-steps; where a
    global batch is set (samples a step), the first factor f that splits it whole into f x
    ``accumulation`` micro-steps of each of the ``replicas`` model replicas, None where none
    does."""
    if global_batch is None:
        return ACCUMULATION_FACTORS[0]
    return next((f for f in ACCUMULATION_FACTORS
                 if global_batch % (replicas * f * accumulation) == 0), None)


def _candidates(profile: Profile, scenario: Scenario, now: Prediction,
                split_framework: dict | None = None, stall_examined: bool = False,
                relative_links: bool = False, split_layout: dict | None = None,
                ddp_reductions: int = 1) -> list[Candidate]:
    """A ``Candidate`` for each remedy; ``split_framework``, ``stall_examined``,
    ``relative_links``, ``split_layout`` and ``ddp_reductions`` as ``rank_remedies``'."""
    strong = scenario.global_batch is not None
    b = now.micro_batch
    words = hardware_nouns(profile.hardware)
    # a split model's micro-batch is per replica of tp x pp devices (``Prediction.dp``)
    per = ("per-replica" if now.dp is not None and now.tp * now.pp > 1
           else f"per-{words.device}")
    out = []
    big = BIGGER_BATCH_FACTOR
    big_reason = (f"a micro-batch of {big * b:,} is past the bounds table's {micro_batch_max():,}"
                  if big * b > micro_batch_max() else "")
    if strong:
        out.append(Candidate("bigger_batch", arrowed_said(
                             f"Double the global batch ({per} batch ",
                             f"{b}{ARROW_FIELD}{big * b}", ")"), scenario.model_copy(
                                 update={"global_batch": big * scenario.global_batch}), profile,
                             big_reason, "changes the optimisation: check time-to-quality",
                             factor=big))
    else:
        out.append(Candidate("bigger_batch", arrowed_said(f"Double the {per} batch (",
                                                          f"{b}{ARROW_FIELD}{big * b}", ")"),
                             scenario.model_copy(update={"micro_batch": big * b}), profile,
                             big_reason, "check time-to-quality",  # rank_remedies adds
                             factor=big))  # 'global batch 2x: '
    out.append(Candidate("overlap", "Overlap gradient exchange with backward",
                         scenario.model_copy(update={"overlap": True}), profile,
                         "overlap is already on" if scenario.overlap
                         else no_exchange_reason(scenario, now, words), ""))
    k = scenario.accumulation
    # the same global batch in 4x (else 2x) the micro-steps of each model replica
    whole = accumulation_factor(scenario.global_batch, now.dp or now.devices, k)
    factor = whole or ACCUMULATION_FACTORS[0]
    if strong:
        acc_reason = "" if whole else (
            "global batch does not split into "
            + " or ".join(f"{f}x" for f in sorted(ACCUMULATION_FACTORS)) + " more micro-steps")
        caveat = f"same global batch, {factor}x smaller micro-batches"
    else:
        acc_reason, caveat = "", "check time-to-quality"  # after 'global batch 4x: '
    acc_scn = scenario.model_copy(update={"accumulation": factor * k})
    if factor * k > accumulation_max():
        acc_reason = (f"{factor * k:,} micro-steps are past the bounds table's "
                      f"{accumulation_max():,}")
    reducing = ddp_reductions > 1 and scenario.strategy == "ddp"
    if reducing:
        acc_reason = acc_reason or DDP_REDUCING_ACCUMULATION
    out.append(Candidate("accumulation", f"Accumulate gradients over {factor * k} micro-steps (now {k})",
                         acc_scn, profile, acc_reason, caveat, factor=factor))
    if reducing:
        out.append(_ddp_no_sync(profile, scenario, ddp_reductions))
    out.append(Candidate("loader", "Cache the input / add loader workers (no data stall)",
                         scenario, without_stall(profile), _loader_reason(now, stall_examined), ""))
    out.append(_sharding(profile, scenario, now, words))
    hw = profile.hardware
    if now.nodes > 1:
        inter = scenario.inter_busbw_GBps or hw.inter_node.busbw_GBps
        # a node of replicas whose stages sit in other servers exchanges over all their NICs
        servers = hw.nic_servers_per_node
        # the named network runs as decide's network option runs it, its link's latency too
        # (``network_upgrades.network_scenario``); twice today's network keeps today's latency
        named = network_scenario(profile, scenario, _FAST_INTER)
        fast = named.link.busbw_GBps
        doubled = scenario.model_copy(update={"inter_busbw_GBps": 2 * inter})
        # the faster for the job: what its devices reach of each, their share of the NICs
        # (``inter_busbw_GBps_of``: one GPU of 8 reaches 24 of HDR's 192 GB/s, and all of a
        # fitted link's, which is what the runs' devices reached), the whole servers' on a tie
        is_named = not words.cpu and (named.reached_GBps, fast) >= (
            float(inter_busbw_GBps_of(hw, doubled)), 2 * inter)
        faster = fast if is_named else 2 * inter
        name = (CPU_FASTER_NETWORK if words.cpu else FAST_INTER_NAME
                if is_named else "2x the network")
        spans = (f"each {words.server}'s; its {words.devices}' stages span {servers} "
                 f"{words.servers}, whose NICs add up" if servers > 1 and is_named else "")
        # an upgrade of more NICs than the server has says so (``nics_needed_words``)
        caveat = "; ".join(w for w in (named.nics_needed if is_named else "", spans) if w)
        fast_scn = named.scenario if is_named else doubled
        fast_profile = named.profile if is_named else profile
        reached = (float(inter_busbw_GBps_of(hw, scenario)),
                   float(inter_busbw_GBps_of(fast_profile.hardware, fast_scn)))
        # today's whole server not known (a link fitted to what the job's devices reached):
        # nor is twice it
        whole_now = whole_inter_GBps(hw, scenario)
        whole_after = faster if is_named or whole_now is not None else None
        out.append(Candidate("interconnect", retitled(
                             _busbw_words(whole_now, whole_after, relative_links,
                                          not_measured_link(profile, scenario, "inter_node"),
                                          reached, server_part_words(hw, scenario),
                                          words.server),
                             f"Faster inter-{words.server} network: {name} "),
                             fast_scn, fast_profile, "", caveat,
                             named.upgrade if is_named else None))
    else:
        intra = scenario.intra_busbw_GBps or hw.intra_node.busbw_GBps
        one = f"one {words.device} does not communicate" if now.devices < 2 else ""
        doubled = scenario.model_copy(update={"intra_busbw_GBps": 2 * intra})
        # the ring over the job's devices of the server reaches what they hold of its links
        # (``intra_busbw_GBps_of``: 4 of a DGX-1V's 8 GPUs, 4 of its 6 NVLinks each, 80 of 120)
        used = min(scenario.devices_per_node or hw.devices_per_node, now.devices)
        reached = (intra_busbw_GBps_of(hw, scenario, used), intra_busbw_GBps_of(hw, doubled, used))
        part = server_part_words(hw, scenario.model_copy(update={"devices_per_node": used}))
        out.append(Candidate("interconnect", retitled(
                             _busbw_words(intra, 2 * intra, relative_links,
                                          not_measured_link(profile, scenario, "intra_node"),
                                          reached, part, words.server),
                             f"Faster intra-{words.server} links "),
                             doubled, profile,
                             one or (CPU_NOT_APPLICABLE["intra_link"] if words.cpu else ""), ""))
    if not now.fits:
        fit_scn, fit_reason = _fitting_split(profile, scenario, now)
        # a fixed global batch keeps micro-batch x accumulation: the micro-batch follows
        fk = fit_scn.accumulation
        fb = fit_scn.micro_batch or b * scenario.accumulation // fk
        out.append(Candidate("fit_memory", _smaller_micro_batches(b, k, fb, fk, fit_reason), fit_scn,
                             profile, fit_reason, "same global batch in smaller micro-steps"))
    out.append(_split_model(profile, scenario, now, split_framework, split_layout))
    out.append(_attention_kernel(profile, scenario))
    out.append(_fp8(profile, scenario))
    out.append(_tp_overlap(profile, scenario))
    has_slow = scenario.slow_device is not None and scenario.slow_factor > 1.0
    out.append(Candidate("slow_device", SLOW_DEVICE_TITLE[words.cpu],
                         scenario.model_copy(update={"slow_device": None, "slow_factor": 1.0}), profile,
                         "" if has_slow else f"no slow {words.device} in the scenario", ""))
    return out


def _smaller_micro_batches(b: int, k: int, fb: int, fk: int, reason: str) -> str:
    """The fitting remedy's title: 'Smaller micro-batches, more accumulation (32 x 1 -> 1 x 32;
    same global batch)', micro-batch ``b`` x accumulation ``k`` to ``fb`` x ``fk``, carrying the
    two changes (``layout_change.layout_settings``' names: a page names their controls);
    without the change where ``reason`` says why there is none."""
    head = "Smaller micro-batches, more accumulation"
    if reason:
        return head
    return titled(f"{head} (", f"{b} x {k} -> {fb} x {fk}", "; same global batch)",
                  said=Changes([("micro-batch", str(b), str(fb)), ("accumulation", str(k), str(fk))]))


# A DDP job that reduces its gradients in s >= 2 micro-steps of a step (no no_sync: traces,
# ``trace_collectives.ddp_reductions``), priced by the model's DDP (one exchange an optimizer
# step) as one exchange carrying the s all-reduces' time: its remedy, and why more accumulation
# is held back
DDP_NO_SYNC_TITLE = ("Reduce gradients once a step: DDP's no_sync() on every micro-step but the "
                     "last ({s} -> 1 all-reduce a step)")
DDP_REDUCING_ACCUMULATION = ("the job all-reduces its gradients in each micro-step (no "
                             "no_sync): more micro-steps would reduce as often and amortise no "
                             "exchange; with no_sync (the remedy above) they would")


def _ddp_no_sync(profile: Profile, scenario: Scenario, reductions: int) -> Candidate:
    """The candidate of a DDP job that all-reduces its gradients in ``reductions`` (s >= 2)
    micro-steps a step: under ``no_sync()`` on all but the last it reduces once, so the s
    all-reduces' time the model's one exchange carries becomes one's: its links at s times
    the bus bandwidth (2 units a step where it sent 2s; docs/model.md §4)."""
    hw = profile.hardware
    intra = scenario.intra_busbw_GBps or hw.intra_node.busbw_GBps
    inter = scenario.inter_busbw_GBps or hw.inter_node.busbw_GBps
    return Candidate("grad_sync", DDP_NO_SYNC_TITLE.format(s=reductions),
                     scenario.model_copy(update={"intra_busbw_GBps": reductions * intra,
                                                 "inter_busbw_GBps": reductions * inter}),
                     profile, "",
                     f"one exchange a step for {reductions}: the model's DDP exchange, which "
                     f"carried the {reductions} all-reduces' time, at {reductions}x its link's "
                     "bandwidth; DDP holds full gradients either way, so memory is unchanged")


def no_exchange_reason(scenario: Scenario, now: Prediction, words: Nouns = GPU_NOUNS) -> str:
    """Why overlapping the gradient exchange with backward changes nothing, or '' where it can:
    one device, or one data-parallel replica (``data_parallel_ranks`` 1), exchanges no gradients
    and the overlap flag times only that exchange (docs/model.md §3), but for the tensor-parallel
    collectives of a layout with ``tp_overlap`` on, which it also gates (§14)."""
    from scalesim.layout_predict import layout_of

    if data_parallel_ranks(now) > 1 or (now.tp > 1 and layout_of(scenario).tp_overlap):
        return ""
    if now.devices == 1:
        return f"one {words.device} exchanges no gradients"
    return one_replica_said("", " exchanges no gradients")  # a page leaves out ' (dp 1)'


def _sharding(profile: Profile, scenario: Scenario, now: Prediction, words: Nouns = GPU_NOUNS):
    """The sharding candidate: ZeRO-1 from DDP (ZeRO-3 where DDP does not fit), ZeRO-3 from
    ZeRO-1/2; from ZeRO-3 under hybrid sharding (a shard group below dp: the states held dp / s
    times), sharding over every data-parallel rank (the shard group dropped, docs/model.md §16);
    from ZeRO-3 over all of dp, the parameters held whole (ZeRO-2: FSDP SHARD_GRAD_OP, DeepSpeed
    stage 2), which spares the gathers of every forward and backward but one where memory
    allows (its memory judged as every remedy's)."""
    from scalesim.layout_predict import layout_of

    k, fw, sync = scenario.accumulation, scenario.zero_framework, scenario.grad_sync
    dp, shard, hybrid = data_parallel_ranks(now), now.shard_group, hybrid_sharded(now)
    if scenario.strategy == "zero3" and hybrid:
        split = layout_of(scenario).model_copy(update={"shard_group": None})
        # the changes carried (``layout_change.LayoutTitle``): a page names the Shard group
        # control, the strategy kept by the Strategy control's choice
        title = titled(f"Shard the states over all {dp} data-parallel ranks (",
                       f"HSDP shard group {shard} -> {dp}, zero3", ")",
                       said=Changes([("shard group", str(shard), str(dp)), (ZERO, "zero3", "zero3")]))
        return Candidate("sharding", title, scenario.model_copy(update={
                             "layout": None if split == type(split)() else split}), profile, "",
                         f"saves memory: each rank holds 1/{dp} of the states, not 1/{shard}; the "
                         f"gathers and reduce-scatters then span all {dp} ranks, not {shard}")
    target = ("zero2" if scenario.strategy == "zero3"
              else "zero1" if scenario.strategy == "ddp" and now.fits else "zero3")
    refused = bool(deepspeed_refuses_pipeline(fw, 2, now.pp))  # ZeRO-1 at most under pp
    if refused and scenario.strategy == "ddp":
        target = "zero1"  # as far as DeepSpeed shards a pipeline's states
    reason = (ONE_REPLICA if dp == 1 else deepspeed_pipeline_error(target, now.pp)
              if refused and target != "zero1" else "")
    return Candidate("sharding", sharding_title(scenario.strategy, target, fw, k, sync, hybrid),
                     scenario.model_copy(update={"strategy": target}), profile, reason,
                     sharding_caveat(scenario.strategy, target, fw, k, now.devices, sync, words,
                                     workload=profile.workload))


# Why sharding is no remedy where one data-parallel replica holds the states (dp 1: one device,
# or a split model whose tp x pp spans every device); a ``LayoutTitle``, which a page says
# without the CLI's ' (dp 1)' (``layout_change.one_replica_said``).
ONE_REPLICA = one_replica_said("", ": ZeRO has no other rank to shard the states over")

_STATES = ("optimizer state", "gradients", "parameters")  # memory.state_shards' order, reversed


def _sharded_states(strategy: str, framework: str, accumulation: int, grad_sync: str):
    """The model states ``strategy`` holds as 1/p shards (``memory.state_shards``, gradients
    whole under FSDP's ``no_sync`` with k > 1: ``zero_exchange.holds_full_gradients``)."""
    code = STRATEGIES[strategy]
    full = bool(holds_full_gradients(code, FRAMEWORKS[framework], GRAD_SYNCS[grad_sync],
                                     accumulation))
    params, grads, optim = state_shards(code, 2, full)
    return [name for name, share in zip(_STATES, (optim, grads, params), strict=True)
            if share < 1.0]


def _newly_sharded(strategy: str, target: str, framework: str, accumulation: int,
                   grad_sync: str):
    """(states ``strategy`` shards, states ``target`` shards that ``strategy`` does not)."""
    now = _sharded_states(strategy, framework, accumulation, grad_sync)
    return now, [s for s in _sharded_states(target, framework, accumulation, grad_sync)
                 if s not in now]


def _listed(names) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def sharding_title(strategy: str, target: str, framework: str, accumulation: int,
                   grad_sync: str = "every-micro-step", hybrid: bool = False) -> str:
    """The sharding remedy's title: the states ``target`` shards that ``strategy`` does not
    ("Shard optimizer state", "Shard gradients and parameters too"), or else those it holds whole
    that ``strategy`` shards ("Hold parameters whole"), the change and how the framework runs it
    (``hybrid``: within a shard group, ``framework_label``)."""
    now, new = _newly_sharded(strategy, target, framework, accumulation, grad_sync)
    _, lost = _newly_sharded(target, strategy, framework, accumulation, grad_sync)
    what = ("Shard " + _listed(new) + (" too" if now else "") if new
            else "Hold " + _listed(lost) + " whole" if lost else "Shard nothing more")
    how = framework_label(target, framework, grad_sync, hybrid)
    # the change carried (``layout_change.LayoutTitle``): a page says it by its Strategy control
    return changes_said([(ZERO, strategy, target)], f"{what} (", f", {how})")


# How each sharded strategy exchanges, per framework and grad_sync (zero_exchange's table).
_HOW = {
    ("ddp", "fsdp", False): "all-reduce in DDP's buckets behind the last backward",
    ("ddp", "deepspeed", False): "all-reduce in DDP's buckets behind the last backward",
    ("zero1", "fsdp", False): "reduce-scatter + all-gather, the gather overlapped with the "
                              "next forward where overlap is on",
    ("zero1", "deepspeed", False): "all-reduce, then all-gather of the parameters after the "
                                   "optimizer step, exposed",
    ("zero2", "fsdp", False): "parameters gathered before every forward, gradients "
                              "reduce-scattered in every micro-step",
    ("zero2", "fsdp", True): "parameters gathered once before the first forward and kept; full "
                             "gradients held, reduced once per step (no_sync)",
    ("zero2", "deepspeed", False): "gradients all-reduced in every micro-step, parameters "
                                   "all-gathered after the optimizer step, exposed",
    ("zero3", "fsdp", False): "parameters gathered in every forward and backward, gradients "
                              "reduce-scattered in every micro-step",
    ("zero3", "fsdp", True): "parameters gathered in every forward and backward; full "
                             "gradients held, reduced once per step (no_sync)",
    ("zero3", "deepspeed", False): "parameters gathered in every forward and backward, "
                                   "gradients reduce-scattered in every micro-step",
}


def reduce_bytes_of(strategy: str, framework: str, workload: Workload) -> float:
    """Bytes per parameter of ``strategy``'s gradient reduction under ``framework`` for
    ``workload``, as the model sends them (``memory.reduce_bytes_per_param_of``: Megatron-Core's
    ZeRO-1 its fp32 main grads, 4 for bf16 training; others the wire's, unless stated)."""
    return float(reduce_bytes_per_param_of(
        STRATEGIES[strategy], FRAMEWORKS[framework], workload.wire_bytes_per_param,
        workload.grad_bytes_per_param, workload.stated_reduce_bytes()))


def sent_bytes_units(strategy: str, framework: str, accumulation: int, grad_sync: str,
                     workload: Workload) -> float:
    """Bytes each device sends per step in ``sent_units``' units ((n - 1)/n x Psi x the wire's
    bytes per parameter), the gradients' reductions at the bytes the model reduces
    (``reduce_bytes_of``; ``zero_exchange.sent_units_at``, as predict's ``sent_per_byte``):
    Megatron-Core's ZeRO-1 with fp32 main grads 1 + 2 = 3 (DDP 2)."""
    ratio = reduce_wire_ratio(workload.wire_bytes_per_param,
                              reduce_bytes_of(strategy, framework, workload))
    return float(sent_units_at(STRATEGIES[strategy], FRAMEWORKS[framework], accumulation,
                               GRAD_SYNCS[grad_sync], ratio))


def sharding_caveat(strategy: str, target: str, framework: str, accumulation: int,
                    devices: int, grad_sync: str = "every-micro-step",
                    words: Nouns = GPU_NOUNS, *, workload: Workload) -> str:
    """What sharding changes, as the model has it (``zero_exchange``, ``memory.state_shards``):
    the memory (nothing where ``target`` holds every state ``strategy`` holds whole: ZeRO-2
    under ``no_sync`` with k > 1 after ZeRO-1), the optimizer step split over the devices where
    it was not, the bytes each device sends per step for ``workload`` (``sent_bytes_units``:
    Megatron-Core's ZeRO-1 reduces its fp32 main grads) and how they are exchanged (``words``:
    the devices' nouns, ``device_nouns.nouns_for``)."""
    sync = GRAD_SYNCS[grad_sync]
    ratio = (sent_bytes_units(target, framework, accumulation, grad_sync, workload)
             / sent_bytes_units(strategy, framework, accumulation, grad_sync, workload))
    sends = ("the same bytes as now" if abs(ratio - 1.0) < 1e-9
             else f"{ratio:.3g}x the bytes of now")
    reduced = {s: reduce_bytes_of(s, framework, workload) for s in (strategy, target)}
    dtype = (f"; gradients reduced at {reduced[target]:g} bytes each, now {reduced[strategy]:g}"
             if reduced[strategy] != reduced[target] else "")  # DDP -> Megatron's ZeRO-1: 2 -> 4
    # bytes in ring terms (sent_units); the gradients' all-reduce NCCL may run as a tree or
    # with NVLS (docs/model.md §2), which reduce-scatters and all-gathers, rings, cannot
    now_all_reduce, then_all_reduce = (
        not reduce_scatters(STRATEGIES[s], FRAMEWORKS[framework], accumulation, sync)
        for s in (strategy, target))
    whose = {(True, False): "today's", (False, True): "the new"}.get(
        (now_all_reduce, then_all_reduce))
    rings = (f"; bytes counted as rings: NCCL may run {whose} all-reduce as a tree or with "
             "NVLS, sending fewer" if whose else "")
    once = bool(reduces_once(FRAMEWORKS[framework], sync)) and accumulation > 1
    how = _HOW[target, framework, once and target in ("zero2", "zero3")]
    _, new = _newly_sharded(strategy, target, framework, accumulation, grad_sync)
    _, lost = _newly_sharded(target, strategy, framework, accumulation, grad_sync)
    memory = ("saves memory" if new else f"needs more memory ({_listed(lost)} held whole)"
              if lost else "saves no memory (the same states held whole as now)")
    if "optimizer state" in new:
        memory += (f"; each of the {words.count(devices)} updates 1/{devices} of the optimizer "
                   "state")
    return f"{memory}; sends {sends} per step ({how}{dtype}){rings}"


def dp_exchange_s(p: Prediction) -> float:
    """Exposed data-parallel / ZeRO exchange of a row, s (its exposed communication less the
    tensor-parallel and pipeline sends of a split model)."""
    return max(p.exposed_comm_s - p.tp_comm_s - p.cp_comm_s - p.pipeline_comm_s, 0.0)


def best_split(profile: Profile, scenario: Scenario, now: Prediction):
    """(scenario, ``layout_change.split_title``) of the fastest fitting layout that splits the
    model (tp x pp > 1) at ``now``'s device count and global batch (``layout_predict.plan_at``
    with ``split_only``): ranked with the scenario's slow device, overlap, jitter, recompute
    style and measured sends, as ``predict`` then predicts it.
    ScalesimError when no split layout is valid or fits."""
    from scalesim import layout_predict as lp

    row = lp.plan_at(profile, scenario, now.devices, now.global_batch, top=1,
                     split_only=True)[0]
    return lp.scenario_of_row(scenario, row), split_title(row)


def split_change(scenario: Scenario, title: str) -> dict:
    """What "split the model" changes in a scenario (``layout_predict.scenario_of_row``'s fields:
    layout, ZeRO strategy, accumulation, micro-batch) and its ``title`` ("Split the model: dp
    ..."), JSON-able, for ``rank_remedies``' ``split_layout``."""
    return {"title": title, "layout": scenario.layout.model_dump(mode="json"),
            "strategy": scenario.strategy, "accumulation": scenario.accumulation,
            "micro_batch": scenario.micro_batch}


def _split_model(profile: Profile, scenario: Scenario, now: Prediction,
                 framework: dict | None = None, split_layout: dict | None = None):
    """The "split the model" candidate: where it helps (the model does not fit, or the exposed
    data-parallel exchange is DP_EXCHANGE_SHARE of the step or more), the planner's best split
    layout at the same devices and global batch. A calibrated profile's parameter-count
    workload is split as the transformer its curve timed (``layout_predict.with_measured_shape``,
    as ``predict`` then splits it). ``framework``: ``ScenarioLayout`` fields of the framework
    the split layouts run under, which a data-parallel scenario cannot say (``tp_overlap``,
    where they have tp > 1, §14; ``p2p_overlap``, where they interleave, §15); None: the
    scenario's.
    ``split_layout``: the layout to try (``split_change``), instead of searching for the best."""
    from scalesim import layout_predict as lp

    title = "Split the model (tensor / pipeline parallelism)"
    if replica_of(profile.hardware.device_name) is not None:
        return Candidate("split_model", title, scenario, profile, REPLICA_REASONS["split_model"], "")
    shaped = lp.with_measured_shape(profile)
    if shaped.workload.transformer is None:
        return Candidate("split_model", title, scenario, profile, lp.no_shape_words(profile)
                         if profile.compute.measured else "the workload is a parameter count only: give "
                         "its transformer shape to split it", "")
    share = dp_exchange_s(now) / now.step_time_s if now.step_time_s > 0 else 0.0
    if now.fits and share < DP_EXCHANGE_SHARE:
        shown, least = percents_apart(share, DP_EXCHANGE_SHARE)
        return Candidate("split_model", title, scenario, profile,
                         f"the model fits and the data-parallel exchange is {shown} of the step "
                         f"(below {least}): removing it all would gain less than the "
                         f"model's median error ({MODEL_PARALLEL_MEDIAN_ERROR:.1%}), so no split can pay",
                         "")
    if now.devices < 2:
        one = hardware_nouns(profile.hardware).device
        return Candidate("split_model", title, scenario, profile, f"one {one} cannot split the model", "")
    if split_layout is not None:  # the layout given, with its title
        change = {k: v for k, v in split_layout.items() if k != "title"}
        split_scn = scenario.model_copy(update={
            **change, "layout": ScenarioLayout.model_validate(change["layout"])})
        title = split_layout["title"]
    else:
        try:
            asked = scenario if framework is None else scenario.model_copy(update={
                "layout": lp.layout_of(scenario).model_copy(update=framework)})
            split_scn, title = best_split(shaped, asked, now)
        except ScalesimError as exc:
            return Candidate("split_model", title, scenario, profile, f"no split layout: {exc}", "")
    why = "does not fit today" if not now.fits else f"data-parallel exchange {share:.0%} of the step"
    return Candidate("split_model", title, split_scn, profile, "",
                     f"{why}; same global batch; layout from the planner (scalesim plan)")


ATTENTION_KERNEL_TITLE = "Use a Hopper attention kernel (cuDNN fused attention or FlashAttention-3)"


def _kernel_knob_reason(profile: Profile, key: str, fixed: str, no_shape: str) -> str:
    """Why a kernel knob's remedy (``key``: "attention_kernel" or "fp8") cannot apply whatever
    the scenario, in one clause, or '': CPU processes (``CPU_NOT_APPLICABLE``), timings that
    cannot take another value of the knob (``fixed``: why, '' where they can), or a parameter
    count (``no_shape``: what it lacks)."""
    if hardware_nouns(profile.hardware).cpu:
        return CPU_NOT_APPLICABLE[key]
    if fixed:
        return fixed
    if profile.workload.transformer is None:
        return (f"workload '{profile.workload.name}' is a parameter count, not a transformer "
                f"shape: {no_shape}")
    return ""


def attention_kernel_reason(profile: Profile, scenario: Scenario) -> str:
    """Why running the vendor attention kernel instead of the scenario's is not a remedy here,
    in one clause, or '' where it is one to predict: the profile's timings ran a kernel the
    model cannot swap for another (``layout_predict.kernel_swappable``, the rule of
    ``check_attention_kernel``; for runs or traces diagnose fitted, what prices it instead:
    ``fitted_timings_words``), the workload has no attention core (a parameter count), the
    prediction runs the vendor kernel already (the scenario's, or the one the timings ran), or
    FlashAttention-2 runs as fast as the vendor kernel on the device by the published figures
    (``presets.flash2_slower_than_vendor``: every device but Hopper)."""
    from scalesim.layout_predict import (
        fitted_timings_words,
        kernel_for,
        kernel_swappable,
        refused_kernel_words,
        timed_own_kernel,
    )

    device = profile.hardware.device_name
    fixed = ("" if kernel_swappable(profile) else
             fitted_timings_words(profile, "attention kernel")
             or f"{refused_kernel_words(profile)}: the model cannot swap it for another")
    if why := _kernel_knob_reason(profile, "attention_kernel", fixed,
                                  "no attention core to time"):
        return why
    if kernel_for(profile, scenario.attention_kernel) == VENDOR_KERNEL:
        if scenario.attention_kernel is None and timed_own_kernel(profile):
            return f"the profile's timings ran the {VENDOR_KERNEL} kernel, as its calibration found"
        return f"the scenario runs the {VENDOR_KERNEL} kernel already"
    if not flash2_slower_than_vendor(device):
        return f"on {device} FlashAttention-2 runs as fast as the vendor kernel"
    return ""


def _attention_kernel(profile: Profile, scenario: Scenario):
    """The "Hopper attention kernel" candidate: the scenario with the vendor kernel
    (docs/model.md §13), the attention core at the matmuls' sustained efficiency; its gain is
    ``predict``'s like every other remedy's. On timings that ran FlashAttention-2 (a swap,
    ``layout_predict.kernel_swappable``) the how says to time the vendor kernel to confirm it."""
    from scalesim.layout_predict import own_attention_kernel, timed_own_kernel

    how = ("cuDNN through Transformer Engine or PyTorch SDPA's cuDNN backend (sdpa_kernel"
           "(SDPBackend.CUDNN_ATTENTION)), FlashAttention-3 from flash-attn's hopper/ build: "
           "exact attention as now")
    if timed_own_kernel(profile) and own_attention_kernel(profile) == FLASH2_KERNEL:
        how += ("; the gain reads the timings with FlashAttention-2's attention core at 0.35 of "
                "the peak: calibrate again with cuDNN attention to time it (PyTorch SDPA "
                "prefers it on Hopper where its build's cuDNN is recent, as torch 2.11's wheels "
                "are)")
    return Candidate("attention_kernel", ATTENTION_KERNEL_TITLE,
                     scenario.model_copy(update={"attention_kernel": VENDOR_KERNEL}), profile,
                     attention_kernel_reason(profile, scenario), how)


FP8_TITLE = "Run the layers' weight matmuls in fp8 (Transformer Engine, torchao float8)"


def fp8_reason(profile: Profile, scenario: Scenario) -> str:
    """Why running the layers' weight matmuls in fp8 is not a remedy here, in one clause, or ''
    where it is one to predict: CPU processes, timings measured at their own precision (the
    rule of ``layout_predict.check_precision``; for runs or traces diagnose fitted, what prices
    fp8 instead: ``fitted_timings_words``), a parameter-count workload (no matmul shapes
    to cast), the scenario in fp8 already, or a device with no fp8 peak."""
    from scalesim.layout_predict import fitted_timings_words, own_timings_words, timed_own_kernel

    device = profile.hardware.device_name
    fixed = ("" if not timed_own_kernel(profile) else fitted_timings_words(profile, "precision")
             or f"{own_timings_words(profile, 'precision')}, which the model cannot rerun in "
             "another")
    if why := _kernel_knob_reason(profile, "fp8", fixed, "no weight matmuls to run in fp8"):
        return why
    if scenario.precision == FP8:
        return "the scenario runs its weight matmuls in fp8 already"
    if peak_tflops_of(device, fp8=True) is None:
        return no_fp8_peak_words(device)
    return ""


def _fp8(profile: Profile, scenario: Scenario):
    """The "weight matmuls in fp8" candidate: the scenario at ``precision`` fp8 (docs/model.md
    §13, fp8: the layers' weight matmuls at the device's fp8 peak, each paying its operands'
    casts; the attention core and the output layer at the 16-bit peak); its gain is
    ``predict``'s like every other remedy's."""
    return Candidate("fp8", FP8_TITLE, scenario.model_copy(update={"precision": FP8}), profile,
                     fp8_reason(profile, scenario),
                     "changes the numerics: compare a short run's loss curve with "
                     f"{DEFAULT_PRECISION}'s (Megatron-LM --fp8-format hybrid, Transformer Engine's "
                     "fp8_autocast; torchtitan --model.converters float8 with --training.compile, which "
                     "fuses the casts the model charges)")


# Why a remedy of the model split is not predicted for runs fitted as data-parallel runs of model
# replicas (``runs.replica_runs``: the profile's device is one replica, ``device_nouns.replica_of``)
REPLICA_REASONS = {
    "split_model": "the runs split the model already and are fitted as data-parallel runs of "
                   "its replicas; which split is fastest is scalesim plan --workload's question "
                   "(it compares every layout)",
    "tp_overlap": "the runs' tensor-parallel traffic is part of a replica's fitted compute, "
                  "which their step times cannot tell apart; diagnose --trace measures it from "
                  "the job's profiler traces and offers this remedy from the traced time",
}
TP_OVERLAP_TITLE = ("Overlap tensor-parallel communication with the matmuls (Transformer Engine "
                    "TP comm overlap, torchtitan async TP)")
# a traced pipeline's remedies (``trace_diagnosis.pipeline_remedies``, priced by ``pipeline_trace``)
PIPELINE_EVEN_TITLE = "Even out the pipeline's stages"
PIPELINE_BUBBLE_TITLE = ("Halve the pipeline bubble (twice the virtual stages per rank, or "
                         "twice the micro-batches at half the size)")


def tp_overlap_reason(profile: Profile, scenario: Scenario) -> str:
    """Why overlapping the tensor-parallel collectives with the matmuls is not a remedy here, in
    one clause, or '' where it is one to predict: a parameter-count workload (not split), a
    layout without tensor parallelism, or the overlap already on (``ScenarioLayout.tp_overlap``,
    docs/model.md §14)."""
    from scalesim import layout_predict as lp

    split = lp.layout_of(scenario)
    if replica_of(profile.hardware.device_name) is not None:
        return REPLICA_REASONS["tp_overlap"]
    if hardware_nouns(profile.hardware).cpu:
        return CPU_NOT_APPLICABLE["tp_overlap"]
    if lp.with_measured_shape(profile).workload.transformer is None:
        return (f"workload '{profile.workload.name}' is a parameter count: no tensor "
                "parallelism to overlap")
    if split.tp == 1:
        return gloss_said("the layout has no tensor parallelism", " (tp 1)")  # a page: no gloss
    if split.tp_overlap:
        return "the tensor-parallel collectives are overlapped already"
    return ""


def _tp_overlap(profile: Profile, scenario: Scenario):
    """The "overlap tensor-parallel communication" candidate: the scenario's layout with
    ``tp_overlap`` on (docs/model.md §14: the collectives hide behind the layer's weight matmuls
    but for what those cannot cover and the contention share); its gain is ``predict``'s."""
    from scalesim import layout_predict as lp

    split = lp.layout_of(scenario)
    return Candidate("tp_overlap", TP_OVERLAP_TITLE,
                     scenario.model_copy(update={"layout": split.model_copy(update={"tp_overlap": True})}),
                     profile, tp_overlap_reason(profile, scenario),
                     "Megatron-LM --tp-comm-overlap (Transformer Engine userbuffers; NeMo / "
                     "Megatron-Bridge tp_comm_overlap), torchtitan enable_async_tensor_parallel (with "
                     "torch.compile): the same layout and numerics")


def _objective(goal: training_time.Goal, objective: str) -> str:
    if objective not in ("auto", "throughput", "time"):
        raise ScalesimError(f"objective must be auto, throughput or time, not {objective!r}")
    if objective == "auto":
        return "time" if goal.kind is not None else "throughput"
    if objective == "time" and goal.kind is None:
        raise ScalesimError("objective 'time' needs a training length or E_min with a critical "
                            "batch size", knobs=training_time.TRAINING_LENGTH_KNOBS)
    return objective


def _finish(goal: training_time.Goal, p: Prediction, reference_batch: int):
    """(seconds, USD) to finish the goal for prediction ``p`` (None, None when unknown)."""
    t = training_time.time_to_goal_s(goal, p.step_time_s, p.global_batch,
                                     reference_batch)
    if t is None:
        return None, None
    cost = training_time.cost_usd(goal, t, p.devices)
    return float(t), None if cost is None else float(cost)


def data_stall_share(p: Prediction) -> float:
    """Share of the step spent waiting for input (0..1); 0 where the stall is not modelled
    (``data_stall_s`` None: no input pipeline measured, nothing to fix that the model knows of)."""
    stall = p.data_stall_s or 0.0
    return stall / p.step_time_s if p.step_time_s > 0 else 0.0


# The loader remedy's reason where measured runs or traces were examined for input waits and the
# supply was not limiting (diagnose): no curve in the profile, but not an unmeasured pipeline.
# the loader remedy's reason where the modelled input supply stalls no step of the scenario
INPUT_KEEPS_UP = "the input pipeline keeps up already"
NO_STALL_FOUND = "the measured runs or traces show no data stall: the input supply is not limiting"


# The loader remedy's input supply: the largest throughput of the bounds table, so that its stall
# is a modelled 0 (no wait: the input cached, or enough workers), not "not modelled" as a profile
# without an input pipeline says (``predict.input_pipeline_modelled``): a B without its stall
# read "no input pipeline measured" beside an A whose pipeline was measured.
NO_STALL_PIPELINE = LoaderCurve(
    points=[LoaderPoint(workers=0, samples_per_s=QUANTITIES["samples_per_s"].high)],
    source="the loader remedy: the input cached, or enough loader workers (no data stall)")


def without_stall(profile: Profile) -> Profile:
    """``profile`` with an input supply that never stalls a step (``NO_STALL_PIPELINE``) where
    it has a measured input pipeline; unchanged without one (its stall is not modelled)."""
    if not input_pipeline_modelled(profile):
        return profile
    return profile.model_copy(update={"input_pipeline": NO_STALL_PIPELINE})


def _loader_reason(now: Prediction, stall_examined: bool = False) -> str:
    """Why the loader remedy does not help ('' where it does): the input pipeline keeps up (a
    modelled stall of 0); it is not modelled (``data_stall_s`` None), which is not saying it
    keeps up; or, where diagnose examined the runs for it (``stall_examined``), none was found."""
    if now.data_stall_s is None:
        return NO_STALL_FOUND if stall_examined else STALL_NOT_MODELLED
    return "" if now.data_stall_s > 0 else INPUT_KEEPS_UP


def rank_remedies(profile: Profile, scenario: Scenario, devices: int, objective: str = "auto",
                  split_framework: dict | None = None, stall_examined: bool = False,
                  relative_links: bool = False, split_layout: dict | None = None,
                  ddp_reductions: int = 1):
    """Baseline prediction at ``devices`` and every remedy, the best remedy first.

    ``objective``: "time" (time to train or to quality, large-batch penalty included), "throughput",
    or "auto" (time when the scenario gives a training length or E_min, else throughput).
    ``split_framework``: ``ScenarioLayout`` fields of the framework (``tp_overlap``,
    ``p2p_overlap``) in the layouts "split the model" tries, where the scenario itself has no
    tensor or pipeline parallelism to say them (diagnose's data-parallel runs: ``--tp-overlap``,
    ``--p2p-overlap``); None: the scenario's. ``stall_examined``: the profile was fitted to measured runs or
    traces that were examined for input waits (diagnose), so a profile without an input
    pipeline means none was found, not none measured (the loader remedy's reason).
    ``relative_links``: a link remedy's title gives its bandwidth as a multiple of the fitted
    one, not in GB/s (diagnose, where the fit rests on a nominal gradient size). ``split_layout``: the
    layout "split the model" tries (``split_change``), where it was found before (diagnose's gain
    bands: the fit's layout under each parameter draw); None: the planner's best.
    ``ddp_reductions``: the all-reduces a step of a DDP job that reduces in several micro-steps
    (traces, ``trace_collectives.ddp_reductions``; 1: once a step, as the model's DDP): its
    no_sync remedy (``_ddp_no_sync``) is added and more accumulation held back.
    """
    if devices < 1:
        raise ScalesimError("devices must be 1 or more", knobs=("devices",))
    now = _one(profile, scenario, devices)
    memory = hardware_nouns(profile.hardware).memory
    goal = training_time.resolve_goal(profile, scenario)
    measure = _objective(goal, objective)
    if measure == "throughput" and objective == "auto" and goal.critical_batch is not None:
        measure = "quality"  # only B_noise known: relative time to quality still ranks
    now_time, _ = _finish(goal, now, now.global_batch)
    now_rel = training_time.relative_quality_time(goal, now.step_time_s, now.global_batch)
    stalled = data_stall_share(now) >= DATA_STALL_SHARE
    results = []
    for c in _candidates(profile, scenario, now, split_framework, stall_examined,
                         relative_links, split_layout, ddp_reductions):
        key, title, scn, prof, caveat = c.key, c.title, c.scenario, c.profile, c.caveat
        if c.reason:
            results.append(RemedyResult(key, title, scn, prof, None, 0.0, False, c.reason,
                                        factor=c.factor))
            continue
        try:
            after = _one(prof, scn, devices)
        except ScalesimError as exc:
            results.append(RemedyResult(key, title, scn, prof, None, 0.0, False, str(exc),
                                        factor=c.factor))
            continue
        if key == "split_model":  # one title for every report: what changes, if split today
            title = layout_title(prof, scenario, now, scn, after, title)
        # strong scaling's bigger batch is titled 'Double the global batch (...)' (_candidates)
        said = key == "bigger_batch" and scenario.global_batch is not None
        batch = global_batch_change(after.global_batch, now.global_batch, said)
        caveat = ": ".join(w for w in (batch, caveat) if w)  # 'global batch 2x: check ...'
        note = caveat
        gain = after.samples_per_s / now.samples_per_s - 1.0
        t, cost = _finish(goal, after, now.global_batch)
        if measure == "time" and t and now_time:
            objective_gain = now_time / t - 1.0
        elif measure == "quality":
            rel = training_time.relative_quality_time(goal, after.step_time_s, after.global_batch)
            objective_gain = float(now_rel / rel - 1.0)
        else:
            objective_gain = gain
        if not after.fits:
            verdict = "not runnable"
            note = f"does not fit in {memory}" + (f"; {caveat}" if caveat else "")
        elif not now.fits:
            verdict = "remedy"
            note = f"makes it fit in {memory}" + (f"; {caveat}" if caveat else "")
        else:
            # no change (a gain that prints as +0.0 %) is not a loss, nor a remedy
            verdict = gain_verdict(objective_gain)
            if did := verdict_words(verdict, measure):
                note = did + (f"; {caveat}" if caveat else "")
        results.append(RemedyResult(key, title, scn, prof, after, gain, True, note, t, cost,
                                    objective_gain, verdict, measure, batch, c.upgrade,
                                    c.factor))

    def order(r: RemedyResult):
        loader_first = not (stalled and r.key == "loader" and r.helps)
        return (VERDICTS.index(r.verdict), loader_first, -r.objective_gain)

    results.sort(key=order)
    return now, results
