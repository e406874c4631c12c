"""From the planner's state and a profile to everything the page shows: a ``Plan``.

Pure (no streamlit): the page, the report, the tests and the benchmark all call ``make_plan``.
It builds the ``Scenario`` the controls describe, predicts the scaling curve in one vectorised
call, finds the knee, ranks the remedies at the focus device count, compares time-to-train and
cost, sweeps time-to-quality over the global batch, and predicts scenario B.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pydantic import ValidationError

from scalesim import presets
from scalesim.bounds import KNOB_BY_FIELD, LAYOUT_KNOBS, validation_knobs
from scalesim.cli.options import parse_int_list
from scalesim.decision import (
    DOES_NOT_FIT,
    DecisionCard,
    added_server_counts,
    card_upgrade,
    ceiling_words,
    decide,
    duration_text,
)
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import (
    ScalesimError,
    controls_named_of,
    in_words_of,
    template_of,
    unsaid_at,
)
from scalesim.figures import (
    GIB_BYTES,
    amount,
    count_list,
    gib,
    rate,
    signed_percent,
    throughput,
    whole,
)
from scalesim.jsonio import error_text
from scalesim.knee import (
    Knee,
    focus_devices,
    knee_of_predictions,
    why_no_knee,
)
from scalesim.layout import (
    DEFAULT_RECOMPUTE_STYLE,
    TP_OVERLAP_UNDER_NO_OVERLAP,
    count_problem,
    interleaves,
    replica_devices,
    runs_on_count,
)
from scalesim.layout_change import lower_first
from scalesim.layout_predict import (
    attention_kernel_note,
    counts_that_run,
    kernel_refused,
    layout_of,
    own_timings_words,
    precision_note,
    recompute_style_note,
    refused_kernel_words,
    split_profile,
    splittable_shape,
    timed_own_kernel,
    with_measured_shape,
)
from scalesim.model.quality import steps_to_quality
from scalesim.model.sharding import STAGE0_WORDS, grad_sync_unused
from scalesim.pipeline_stages import layout_stage_words
from scalesim.precision import DEFAULT_PRECISION, no_fp8_peak_words
from scalesim.predict import (
    Prediction,
    above_linear_note,
    cores_shared_note,
    input_pipeline_modelled,
    one_device_note,
    predict,
    server_use_words,
    slow_device_note,
)
from scalesim.remedies import DATA_STALL_SHARE, RemedyResult, data_stall_share, rank_remedies
from scalesim.schemas import Profile, Scenario, ScenarioLayout, grad_sync_refused
from scalesim.training_time import Goal, cost_usd, resolve_goal, time_to_goal_s

from .control_labels import in_words, label
from .layout_titles import (
    PAGE_ARROW,
    page_asked_layout,
    page_pipeline,
    page_pipeline_words,
    page_setting,
    page_title,
    with_page_titles,
)
from .named_controls import control_namer
from .sent_figure import figure_text
from .state import FIELD_LABELS, MAX_DEVICES, AppState

MAX_CURVE_POINTS = 256  # device counts on one curve
TTQ_MICRO_BATCHES = tuple(2**i for i in range(0, 13))  # per-device batches swept for time-to-quality


@dataclass(frozen=True)
class Option:
    """One way to spend money: a device count, a remedy, or more servers; hours and USD."""

    kind: str  # "devices", "remedy", "more devices"
    label: str
    devices: int
    samples_per_s: float
    time_to_train_s: float | None
    time_to_quality_s: float | None
    cost_usd: float | None  # of the time to finish (below)
    fits: bool
    time_s: float | None = None  # time to finish, large-batch penalty included (training_time)
    billed_devices: int | None = None  # a card option's (its own billing); None: the goal's
    # False where the cost leaves out links it buys (``unpriced_links``: today's devices alone,
    # a lower bound), so it is never named the cheapest (``charts.chart_text``)
    priced: bool = True


@dataclass(frozen=True)
class QualityPoint:
    global_batch: int
    micro_batch: int
    time_to_quality: float  # hours when E_min is known, else relative to the best (1 = best)
    fits: bool
    memory_bytes: float = 0.0  # per device at this batch (the chart's 'needs X GiB' words)


@dataclass(frozen=True)
class Plan:
    profile: Profile
    state: AppState
    scenario: Scenario
    rows: list[Prediction]
    knee: Knee | None
    focus: Prediction
    remedies: list[RemedyResult]
    best: RemedyResult | None
    options: list[Option]
    quality: list[QualityPoint]
    quality_absolute: bool  # quality times are hours (E_min known), not relative
    b_label: str
    b_profile: Profile
    b_scenario: Scenario
    b_focus: Prediction | None
    b_rows: list[Prediction]
    notes: list[str] = field(default_factory=list)
    decision: DecisionCard | None = None  # scalesim.decision.decide at the focus count
    # refusals of a typed value the plan went on without (``device_list_refusal``): error boxes
    refusals: list[str] = field(default_factory=list)
    # the profile the page holds and its links carry (``make_plan``'s argument), before the
    # state's sequence length, intra-server link and split made ``profile`` of it; None: profile
    page_profile: Profile | None = None
    # scenario B is a faster-links remedy costed at today's devices alone (``unpriced_links``):
    # its cost leaves the links' price out, so the A/B tab says so and gives no change in money
    b_unpriced_links: bool = False

    @property
    def unit(self) -> str:
        return self.profile.workload.sample_unit

    @property
    def words(self) -> Nouns:
        """The devices' nouns: processes and hosts for a CPU calibration, racks for a GB200
        NVL72's NVLink domain (``hardware_nouns``)."""
        return hardware_nouns(self.profile.hardware)


def valid_device_counts(counts, devices_per_node: int,
                        allocation: int | None = None) -> tuple[list[int], list[int]]:
    """(kept, dropped): counts above one allocation unit of ``allocation`` devices (None: the
    server) must fill whole units (``layout.runs_on_count``), and stay within the planner's
    largest."""
    kept, dropped = [], []
    for d in sorted(set(int(c) for c in counts)):
        ok = 1 <= d <= MAX_DEVICES and bool(runs_on_count(d, devices_per_node, allocation))
        (kept if ok else dropped).append(d)
    return kept, dropped


def count_unit(state: AppState, profile: Profile) -> tuple[int, int]:
    """(devices of each server the controls use, devices of their allocation unit): the
    Devices-per-server control, else the server's, and ``Hardware.allocation_for`` of it (the
    unit ``predict.job_unit`` reads of the scenario the controls build)."""
    hw = profile.hardware
    return state.dpn or hw.devices_per_node, hw.allocation_for(state.dpn)


def server_stride(servers: int, devices_per_node: int, replica: int = 1) -> int:
    """Servers between the points of the "every server" grid: 1 where ``servers`` fit on one
    curve (``MAX_CURVE_POINTS``); else a power of two of servers, at least 1 / ``MAX_CURVE_POINTS``
    of them, and a multiple of the servers whole model replicas of ``replica`` devices (tp x pp)
    fill, so that the thinned counts run the model split (thinning from the first server, 9,
    17, 25 ... servers of 8: no count of tp 8 x pp 4 was left but the largest)."""
    if servers <= MAX_CURVE_POINTS:
        return 1
    need = -(-servers // MAX_CURVE_POINTS)
    whole = math.lcm(devices_per_node, replica) // devices_per_node
    return math.lcm(1 << (need - 1).bit_length(), whole)


def device_list_refusal(state: AppState, words: Nouns = GPU_NOUNS) -> str | None:
    """"Device counts: 'abc' is not a whole number; showing powers of two": the refusal of a
    typed device list that does not parse (the page's error box, the report's notes), named
    by its control's sidebar label; None where the grid is not the list or the list parses."""
    if state.grid != "list" or not state.dlist.strip():
        return None
    try:
        parse_int_list(state.dlist)
    except argparse.ArgumentTypeError as exc:
        return f"{in_words(FIELD_LABELS['dlist'], words)}: {exc}; showing powers of two"
    return None


def device_counts(state: AppState, devices_per_node: int, words: Nouns = GPU_NOUNS,
                  allocation: int | None = None) -> tuple[list[int], list[str]]:
    """Device counts to plot for the state's grid, and notes about what was left out
    (``words``: the profile's nouns, 'above 2 processes ... whole hosts' on CPU;
    ``allocation``: ``count_unit``'s, a list's counts refused in ``layout.count_problem``'s
    words where it is not the server)."""
    g, top = devices_per_node, state.dmax
    notes: list[str] = []
    if state.grid == "list":
        try:  # a list that does not parse: refused by device_list_refusal, not noted
            wanted = parse_int_list(state.dlist) if state.dlist.strip() else []
        except argparse.ArgumentTypeError:
            wanted = []
        if not state.dlist.strip():
            notes.append(f"{in_words(FIELD_LABELS['dlist'], words)} is empty; showing powers "
                         f"of two up to {top} (type counts in it, e.g. 1,2,4,8,16, or pick "
                         "another grid)")
        if wanted:
            kept, dropped = valid_device_counts(wanted, g, allocation)
            too_many = [d for d in dropped if d > MAX_DEVICES]
            partial = [d for d in dropped if d <= MAX_DEVICES]
            why = []
            if partial and allocation not in (None, g):  # trays of a rack: predict's words,
                # as the page says them (its template: no hardware file's field; no knob)
                why.append(f"left out {count_list(partial, 8)}: "
                           f"{in_words_of(count_problem(partial[0], g, allocation, words), str)}")
            elif partial:
                why.append(f"left out {count_list(partial, 8)}: above {g} "
                           f"{words.devices} a count must fill whole {words.servers} (a multiple "
                           f"of {g})")
            if too_many:
                why.append(f"left out {count_list(too_many, 8)}: above the planner's "
                           f"largest, {MAX_DEVICES:,} {words.devices}")
            if why:
                notes.append("; ".join(why) + ("" if kept else "; none of the list is left, "
                                               "showing powers of two"))
            if kept:
                return kept[:MAX_CURVE_POINTS], notes
    small = [d for d in (2**i for i in range(15)) if d < g and d <= top]
    if state.grid == "server":
        servers = max(top // g, 1)
        stride = server_stride(servers, g, replica_devices(state.tp, state.pp, state.cp))
        # thinned: the first server, every stride-th, and the largest count (said in a note)
        big = sorted({g, *(n * g for n in range(stride, servers + 1, stride)), servers * g})
        if stride > 1:
            notes.append(f"every {words.server}: {servers:,} {words.servers} thinned to one "
                         f"point every {stride} {words.servers} up to {whole(servers * g)} "
                         f"{words.devices}, the first and the largest kept "
                         f"({len(small) + len(big)} points)")
    else:
        big, n = [], 1
        while n * g <= max(top, g):
            big.append(n * g)
            n *= 2
    counts = sorted(set(small + big))
    if top < g:
        counts = [d for d in counts if d <= top] or [1]
    if max(counts) < top:
        notes.append(top_short_words(state, counts, g, words))
    return counts, notes


def top_short_words(state: AppState, counts: list[int], devices_per_node: int,
                    words: Nouns = GPU_NOUNS) -> str:
    """Why the grid's largest count is below the Largest device count: 'Largest device count
    64: the largest count plotted is 48 (above one server the powers of two are 3 devices
    doubled: 3, 6, 12, 24, 48; the next, 96, is past 64)'; every server's whole servers, and
    below one server the powers of two, alike."""
    g, top, largest = devices_per_node, state.dmax, max(counts)
    head = (f"{in_words(FIELD_LABELS['dmax'], words)} {top:,}: the largest count plotted is "
            f"{largest:,}")
    if largest < g:
        why = f"below one {words.server} of {g:,} the counts are powers of two"
    elif state.grid == "server":
        why = f"whole {words.servers} of {g:,}, {largest // g:,} of them"
    else:
        doubled = ", ".join(f"{d:,}" for d in counts if d >= g)
        why = (f"above one {words.server} the powers of two are {g:,} {words.devices} doubled: "
               f"{doubled}; the next, {2 * largest:,}, is past {top:,}")
    return f"{head} ({why})"


def _links(state: AppState) -> dict:
    """Scenario overrides for the link levels the state chose."""
    out: dict = {}
    if state.intra == "custom":
        out["intra_busbw_GBps"] = state.ibw
        out["intra_latency_s"] = None if state.ilat is None else state.ilat * 1e-6
    elif state.intra != "profile":
        link = presets.intra_link(state.intra)
        out["intra_busbw_GBps"], out["intra_latency_s"] = link.busbw_GBps, link.latency_s
    if state.inter == "custom":
        out["inter_busbw_GBps"] = state.ebw
        out["inter_latency_s"] = None if state.elat is None else state.elat * 1e-6
    elif state.inter != "profile":
        link = presets.inter_link(state.inter, state.nics, state.gbit)
        out["inter_busbw_GBps"], out["inter_latency_s"] = link.busbw_GBps, link.latency_s
    return out


TP_ONLY = ("sp", "tpo")  # the layout toggles that apply with tensor parallelism only


def tp_only_notes(state: AppState) -> list[str]:
    """'<control> ignored: it applies with Tensor parallel above 1' for each toggle of
    ``TP_ONLY`` that is on at tp 1 (the page disables them there; a link may carry them on)."""
    if state.tp > 1:
        return []
    return [f"{FIELD_LABELS[f]} ignored: it applies with {FIELD_LABELS['tp']} above 1"
            for f in TP_ONLY if getattr(state, f)]


PP_ONLY = ("sched", "vs")  # the layout controls that apply with pipeline stages only
VS_SCHEDULES = ("auto", "interleaved")  # the schedules virtual stages apply with


def pipeline_of(state: AppState) -> tuple[str, int]:
    """(schedule, virtual stages) the scenario runs: the controls', where they apply (pp above
    1; virtual stages with the interleaved schedule or auto); else auto and 1, with
    ``pipeline_notes`` saying why."""
    if state.pp == 1:
        return "auto", 1
    return state.sched, state.vs if state.sched in VS_SCHEDULES else 1


def pipeline_notes(state: AppState) -> list[str]:
    """'<control> ignored: ...' for each pipeline control set where it does not apply (the page
    disables it there; a link may carry it)."""
    if state.pp == 1:
        return [f"{FIELD_LABELS[f]} ignored: it applies with {FIELD_LABELS['pp']} above 1"
                for f in PP_ONLY if getattr(state, f) != AppState.model_fields[f].default]
    if state.vs != 1 and state.sched not in VS_SCHEDULES:
        return [f"{FIELD_LABELS['vs']} ignored: it applies with the interleaved schedule"]
    return []


def runs_interleaved(pp: int, sched: str, vs: int) -> bool:
    """Whether the pipeline controls (stages, schedule, virtual stages) run the interleaved
    schedule (``layout.interleaves``; 'auto' with virtual stages is interleaved): where the
    pipeline send overlap applies (the page's toggle, ``p2p_overlap_of``)."""
    return sched in VS_SCHEDULES and interleaves("interleaved", pp, vs)


def p2p_overlap_of(state: AppState) -> bool:
    """Whether the interleaved schedule's sends overlap (``ScenarioLayout.p2p_overlap``): the
    control's where the controls run the interleaved schedule (``runs_interleaved``), else on,
    the default (the other schedules' sends block either way; ``p2p_notes`` says the control is
    ignored)."""
    return state.p2p or not runs_interleaved(state.pp, state.sched, state.vs)


def p2p_notes(state: AppState) -> list[str]:
    """'Pipeline send overlap ignored: ...' where the control is off and the controls run no
    interleaved schedule (the page disables it there; a link may carry it)."""
    if p2p_overlap_of(state) == state.p2p:
        return []
    return [f"{FIELD_LABELS['p2p']} ignored: it applies with the interleaved schedule "
            f"({FIELD_LABELS['pp']} and {FIELD_LABELS['vs']} above 1)"]


def shard_group_of(state: AppState) -> int | None:
    """The shard group the scenario runs: the control's, where it applies (a ZeRO strategy and
    2 or more ranks); else None, with ``shard_group_notes`` saying why."""
    return state.sg if state.sg is not None and state.sg > 1 and state.strat != "ddp" else None


def shard_group_notes(state: AppState) -> list[str]:
    """'Shard group (HSDP) ignored: ...' where the control is set but does not apply (the page
    disables it under ddp; a link may carry it)."""
    if state.sg is None or shard_group_of(state) is not None:
        return []
    why = ("it applies with a ZeRO strategy (zero1 to zero3)" if state.strat == "ddp" else
           "a shard group of 1 is plain replication (DDP)")
    return [f"{FIELD_LABELS['sg']} ignored: {why}"]


def layout_of_state(state: AppState) -> ScenarioLayout | None:
    """The model split the layout controls describe (None: not split, all at their defaults);
    the ``TP_ONLY`` toggles off at tp 1 (``tp_only_notes``), the ``PP_ONLY`` controls at their
    defaults where they do not apply (``pipeline_of``)."""
    sp, tpo = (state.sp, state.tpo) if state.tp > 1 else (False, False)
    sg = shard_group_of(state)
    sched, vs = pipeline_of(state)
    p2p = p2p_overlap_of(state)
    if (state.tp, state.pp, state.cp, sched, vs, state.rec, sp, state.rs, tpo, sg, p2p) == (
            1, 1, 1, "auto", 1, "auto", False, DEFAULT_RECOMPUTE_STYLE, False, None, True):
        return None
    try:
        return ScenarioLayout(tp=state.tp, pp=state.pp, cp=state.cp,
                              schedule=None if sched == "auto" else sched,
                              virtual_stages=vs,
                              recompute=None if state.rec == "auto" else state.rec,
                              recompute_style=state.rs, sequence_parallel=sp, tp_overlap=tpo,
                              p2p_overlap=p2p, shard_group=sg)
    except ValidationError as exc:
        raise ScalesimError(f"layout: {exc}", knobs=validation_knobs(exc.errors())) from None


def goal_layout_mode(state: AppState, profile: Profile, scenario: Scenario) -> str:
    """The Goal tab's layout mode (``goal_layouts.LAYOUT_MODES``): the sidebar's choice, or
    for auto goal --layout's default (``goal_layouts.default_layout``) of the split the
    sidebar sets, as the CLI's flags give it: the layout fields away from their defaults (a
    control at its default is a flag not given; ``scenario`` is ``build_scenario``'s)."""
    from scalesim.goal_layouts import default_layout

    if state.glay != "auto":
        return state.glay
    split = scenario.layout
    asked = None if split is None else ScenarioLayout(**split.model_dump(exclude_defaults=True))
    return default_layout(profile, scenario.model_copy(update={"layout": asked}))


def state_of_scenario(scenario: Scenario, profile: Profile, focus: int | None = None) -> AppState:
    """The planner's controls for ``scenario`` on ``profile``: ``build_scenario``'s inverse
    for every field the planner has a control for (a scenario's value of None keeps the
    profile's, ``state.profile_defaults``; link overrides become custom links), its device
    range up to the scenario's largest count (its counts and the powers of two below, listed,
    where one is no power of two), in focus at ``focus`` (None: that count). The
    fields the planner has no control for (first bucket, device speed spread, contention,
    instance sizes) are not carried. Unvalidated, as a link's fields are read one by one."""
    from .state import profile_defaults

    largest = max(scenario.devices)
    split = scenario.layout or ScenarioLayout()
    given = {  # planner key: the scenario's value (None: the profile's)
        "dpn": scenario.devices_per_node, "acc": scenario.accumulation, "ovl": scenario.overlap,
        "bkt": scenario.bucket_mib, "strat": scenario.strategy, "zfw": scenario.zero_framework,
        "gs": scenario.grad_sync, "ak": scenario.attention_kernel, "pr": scenario.precision,
        "algo": scenario.algorithm,
        "lw": scenario.loader_workers, "cv": scenario.straggler_cv, "slow": scenario.slow_device,
        "sf": scenario.slow_factor, "cbs": scenario.critical_batch_size,
        "emin": scenario.min_samples_to_quality, "train": scenario.train_samples,
        "price": scenario.price_per_device_hour, "mm": scenario.memory_margin,
        "tp": split.tp, "pp": split.pp, "sched": split.schedule or "auto",
        "vs": split.virtual_stages, "rec": split.recompute or "auto",
        "rs": split.recompute_style, "sp": split.sequence_parallel, "tpo": split.tp_overlap,
        "sg": split.shard_group, "p2p": split.p2p_overlap, "cp": split.cp,
    }
    update = {**profile_defaults(profile), "dmax": largest, "focus": focus or largest}
    if largest & (largest - 1) or any(d & (d - 1) for d in scenario.devices):  # not all 2^k
        below = [2**i for i in range(largest.bit_length()) if 2**i < largest]
        update.update(grid="list", dlist=",".join(map(str, sorted({*below, *scenario.devices}))))
    update.update({k: v for k, v in given.items() if v is not None or k in ("slow", "sg")})
    if scenario.global_batch is not None:
        update.update(mode="strong", gb=scenario.global_batch)
    elif scenario.micro_batch is not None:
        update["mb"] = scenario.micro_batch
    for level, mode, bw, lat in (("intra", "intra", "ibw", "ilat"), ("inter", "inter", "ebw", "elat")):
        busbw, latency = getattr(scenario, f"{level}_busbw_GBps"), getattr(scenario, f"{level}_latency_s")
        if busbw is not None or latency is not None:
            update.update({mode: "custom", bw: busbw, lat: None if latency is None else latency * 1e6})
    return AppState(src="custom").model_copy(update=update)


def _precision(state: AppState, profile: Profile, fields: dict, words: Nouns) -> list[str]:
    """The state's fp8 into the scenario ``fields`` where the profile can take it, as
    ``layout_predict.check_precision`` would refuse it on the CLI: the notes that say it was left
    out (timings measured at their own precision, a device with no fp8 peak) or ignored (a
    parameter count), by the page's control ('Matmul precision fp8 left out: ...'), else none."""
    from scalesim.presets import peak_tflops_of

    asked = page_setting("precision", state.pr, words)
    if timed_own_kernel(profile):  # as the layout is left out: a note, not a refusal
        return [f"{asked} left out: {own_timings_words(profile, 'precision')}"]
    device = profile.hardware.device_name
    if splittable_shape(profile) is not None and peak_tflops_of(device, fp8=True) is None:
        return [f"{asked} left out: {no_fp8_peak_words(device)}"]
    fields["precision"] = state.pr
    if splittable_shape(profile) is None:
        return [precision_note(profile, Scenario(precision=state.pr),
                               control_namer(state, words))]
    return []


def top_count_refusal(state: AppState, profile: Profile, scenario: Scenario) -> str | None:
    """'64 devices, the largest count asked, cannot run: Global batch 100 is not divisible by
    32 data-parallel ranks x Gradient accumulation 1; ... The page shows 8 devices.' where a
    setting leaves the grid's largest count out of those predicted (``counts_that_run``, its
    one-count refusal and knobs, the count said once: ``errors.unsaid_at``), so that the
    headline moves to a smaller count: an error box, not the note alone (the note lists every
    count left out); None where the largest count runs. ``scenario``: ``build_scenario``'s for
    ``profile``."""
    from .named_controls import controls_to_change, in_control_words

    (g, unit), words = count_unit(state, profile), hardware_nouns(profile.hardware)
    top = max(device_counts(state, g, words, unit)[0])
    if top in scenario.devices:
        return None
    try:
        counts_that_run(profile, scenario.model_copy(update={"devices": [top]}),
                        named=control_namer(state, words))
    except ScalesimError as exc:  # in the page's controls, as its 'Cannot predict' box says it
        said = unsaid_at(words.count(top), in_control_words(exc, state, words))
        return (f"{words.count(top)}, the largest count asked, cannot run: {said}."
                f"{controls_to_change(said, state, words)} The page shows "
                f"{words.count(max(scenario.devices))}.")
    return None


def build_scenario(state: AppState, profile: Profile) -> tuple[Scenario, list[str]]:
    """The Scenario the controls describe (device counts that cannot run are left out, noted)."""
    (g, unit), words = count_unit(state, profile), hardware_nouns(profile.hardware)
    devices, notes = device_counts(state, g, words, unit)
    fields: dict = {
        "devices_per_node": g, "accumulation": state.acc, "overlap": state.ovl,
        "bucket_mib": state.bkt, "strategy": state.strat,
        "zero_framework": state.zfw if state.strat != "ddp" else "fsdp",  # off under DDP
        "grad_sync": state.gs, "algorithm": state.algo,
        "loader_workers": state.lw, "straggler_cv": state.cv, "slow_device": state.slow,
        "slow_factor": state.sf, "critical_batch_size": state.cbs,
        "min_samples_to_quality": state.emin, "train_samples": state.train,
        "price_per_device_hour": state.price, "memory_margin": state.mm,
    }
    fields.update(_links(state))
    named = control_namer(state, words)  # the notes name the page's controls, as predict's
    # name the CLI's flags

    def said(knob: str, value) -> str:
        return page_setting(knob, value, words)

    if state.strat == "ddp" and state.zfw != "fsdp":  # as predict notes it
        notes.append(f"{said('zero_framework', state.zfw)} with {said('strategy', 'ddp')} is "
                     f"{STAGE0_WORDS}")
    if state.strat != "ddp" and grad_sync_refused(state.zfw, state.gs):  # a note, not a refusal
        fields["grad_sync"] = "every-micro-step"
        notes.append(f"{said('grad_sync', state.gs)} ignored: DeepSpeed stage 2/3 reduce "
                     "gradients in every micro-step (no_sync is FSDP's)")
    elif why := grad_sync_unused(state.strat, state.acc, state.gs, said=said):  # as predict
        notes.append(f"{said('grad_sync', state.gs)} ignored: {why}")
    if state.ak:
        if kernel_refused(profile, state.ak):  # as the layout is left out: a note, not a refusal
            notes.append(f"{said('attention_kernel', state.ak)} left out: "
                         f"{refused_kernel_words(profile)}")
        else:
            fields["attention_kernel"] = state.ak
            # 'ignored' (a parameter count), or on the profile's own timings their kernel's
            # words or the swap's; the control says a datasheet profile's choice itself
            if (splittable_shape(profile) is None or timed_own_kernel(profile)) and (
                    note := attention_kernel_note(profile, Scenario(attention_kernel=state.ak),
                                                  named)):
                notes.append(note)
    elif note := attention_kernel_note(profile, Scenario()):  # the kernel the timings ran
        notes.append(note)
    if state.pr != DEFAULT_PRECISION:
        notes += _precision(state, profile, fields, words)
    notes += (tp_only_notes(state) + pipeline_notes(state) + p2p_notes(state)
              + shard_group_notes(state))
    if state.tpo and state.tp > 1 and not state.ovl:  # the model drops it (§16), as predict says
        notes.append(f"{FIELD_LABELS['tpo']} ignored: {TP_OVERLAP_UNDER_NO_OVERLAP}")
    if state.lw is not None and not input_pipeline_modelled(profile):  # the CLI refuses it
        notes.append(f"{FIELD_LABELS['lw']} ignored: this profile has no measured input "
                     "pipeline (the control is off; a link may carry it)")
    split = layout_of_state(state)
    if split is not None and splittable_shape(profile) is None:
        # a shard group splits no model: the data-parallel path shards over it (§16)
        hsdp = (ScenarioLayout(shard_group=split.shard_group) if split.shard_group is not None
                else None)
        split = split.model_copy(update={"shard_group": None})
        # what was asked, by the Layout controls ('Tensor parallel 2, Activation recompute
        # full'; the CLI's 'tp 2 x pp 1, recompute full')
        asked = page_asked_layout(split, words)
        if split == ScenarioLayout(recompute_style=split.recompute_style):  # the style alone
            if note := recompute_style_note(profile, Scenario(layout=split), named=named):
                notes.append(note)
        elif profile.compute.measured:
            notes.append(f"{asked} left out: profile "
                         f"'{profile.name}' does not record the transformer it timed (workload "
                         f"'{profile.workload.name}' is a parameter count); recalibrate it "
                         "(scalesim calibrate --model gpt) to split its model")
        else:
            notes.append(f"{asked} left out: workload "
                         f"'{profile.workload.name}' is a parameter count only (pick a "
                         "transformer workload such as llama3-8b to split the model)")
        split = None
        if hsdp is not None:
            fields["layout"] = hsdp
    if split is not None:  # the notes by the page's controls, as the report's layout line
        if note := recompute_style_note(profile, Scenario(layout=split), named=named):
            notes.append(note)
        if note := layout_stage_words(profile, split, page_pipeline(split, words)):
            notes.append(note)  # what the pipeline's stages hold, where uneven in a framework
        fields["layout"] = split
    if state.mode == "strong":
        gb = state.gb or profile.workload.micro_batch * g
        fields["global_batch"] = gb
    else:
        fields["micro_batch"] = state.mb
    fields["devices"] = devices
    try:
        scenario = Scenario(**fields)
    except ValidationError as exc:  # a combination the scenario refuses: its words, one line
        parts = [in_words_of(error_text(e), named) for e in exc.errors()]
        raise ScalesimError("scenario: " + "; ".join(parts), knobs=validation_knobs(exc.errors()),
                            controls_named=[k for p in parts for k in controls_named_of(p)]
                            ) from None
    # the counts the split, the fixed global batch and the shard group cannot run: left out in
    # predict's and sweep's notes, a list none runs refused in predict's line (one function,
    # ``counts_that_run``), each fix naming the control
    counts, left = counts_that_run(profile, scenario, named=named)
    if left:
        notes += left
        scenario = scenario.model_copy(update={"devices": counts})
    if note := slow_device_note(state.slow, scenario.devices, nouns=words):
        notes.append(note)
    words = hardware_nouns(profile.hardware)
    used = server_use_words(profile.hardware, scenario, f"the {label('dpn', words)} setting")
    if used:  # predict's header words, as the CLI shows them
        notes.append(used)
    if shared := cores_shared_note(profile, scenario):  # predict's note
        notes.append(shared)
    return scenario, notes


def _knee(rows: list[Prediction]) -> Knee | None:
    return knee_of_predictions(rows)


def _focus(state: AppState, rows: list[Prediction]) -> Prediction:
    wanted = focus_devices(rows, state.focus)
    return next(r for r in rows if r.devices == wanted)


def _server_size(profile: Profile, scenario: Scenario) -> int:
    """Devices in one full server of the scenario (not the focus run's, which may be partial)."""
    return scenario.devices_per_node or profile.hardware.devices_per_node


def _split_of(scenario: Scenario) -> int:
    """The devices of one model replica of the scenario, tp x pp x cp (1: data parallel), as
    its prediction splits them (``layout.replica_devices``)."""
    split = layout_of(scenario)
    return replica_devices(split.tp, split.pp, split.cp)


def more_devices_count(devices: int, devices_per_node: int, split: int = 1,
                       global_batch: int | None = None, accumulation: int = 1) -> int:
    """One more server's worth: fill the server first, then add whole servers, as few as give
    a count ``split`` (the layout's tp x pp) divides and a fixed ``global_batch`` splits over
    (``decision.added_server_counts``, decide's count); where none within its cap splits the
    batch, the first ``split`` divides (its prediction then says why it does not run)."""
    return (added_server_counts(devices, devices_per_node, split, global_batch, accumulation)
            or added_server_counts(devices, devices_per_node, split))[0]


def _more_devices(focus: Prediction, profile: Profile, scenario: Scenario) -> int:
    """``more_devices_count`` for ``scenario``'s focus run: its server size, tp x pp, batch."""
    return more_devices_count(focus.devices, _server_size(profile, scenario),
                              _split_of(scenario), scenario.global_batch,
                              scenario.accumulation)


def counts_said(before: int, after: int) -> str:
    """'16 → 24': a device count's change as the page writes it, with its arrow
    (``layout_titles.PAGE_ARROW``; the CLI's '16 -> 24')."""
    return f"{whole(before)}{PAGE_ARROW}{whole(after)}"


def _added_servers(decision: DecisionCard | None, focus: Prediction, profile: Profile,
                   scenario: Scenario, rows: list[Prediction], goal: Goal, reference_batch: int,
                   notes: list[str], named: Callable[[str], str]) -> list[Option]:
    """The "more devices" row: the decision card's add-server option (``DecisionCard.added``:
    its count and layout, today's or the planner's, titled as the card titles it), left out
    where it is today's layout at a count the curve has; where the card compared none, today's
    layout at ``_more_devices``' count (a note says why it does not predict there, in the
    page's controls: ``named``, ``control_namer``)."""
    if decision is not None and decision.added is not None:
        added = decision.added
        if not added.changed and added.option.devices in {r.devices for r in rows}:
            return []
        return [_option("more devices", added.option.title, added.p, goal, reference_batch)]
    words, more = hardware_nouns(profile.hardware), _more_devices(focus, profile, scenario)
    if more in {r.devices for r in rows}:
        return []
    counts = counts_said(focus.devices, more)
    try:
        extra = predict(profile, scenario.model_copy(update={"devices": [more]}))[0]
    except ScalesimError as exc:
        notes.append(f"more {words.devices} ({counts}) not compared: "
                     f"{in_words_of(exc, named)}")
        return []
    return [_option("more devices", f"Add {words.devices} ({counts})", extra, goal,
                    reference_batch)]


NOT_RUNNABLE_SUFFIX = " (not runnable)"  # an option's label where it does not fit in memory
# what the money of a faster-links remedy leaves out (the card prices a named network instead)
UNPRICED_LINKS = "cost: the devices only, the faster links' price not counted"


def unpriced_links(r: RemedyResult) -> bool:
    """Whether ``r``'s cost leaves out hardware it buys: a faster network or intra-server
    links (``interconnect``), priced at today's devices alone (``remedies._finish``)."""
    return (r.key == "interconnect" and r.cost_usd is not None and r.prediction is not None
            and r.prediction.fits)


def ab_cost_label(unpriced: bool) -> str:
    """The A/B tab's cost metric's label: 'Cost', or where the run buys faster links its cost
    leaves out (``Plan.b_unpriced_links``) 'Cost (the devices only, ...)', ``UNPRICED_LINKS``'
    words, so a network with no public price does not read as halving the bill."""
    return f"Cost ({UNPRICED_LINKS.removeprefix('cost: ')})" if unpriced else "Cost"


def remedy_note(r: RemedyResult) -> str:
    """A remedy's note in the app's and the report's tables: its reason, and where its cost
    leaves out the links it buys, that (``UNPRICED_LINKS``)."""
    return "; ".join(n for n in (r.reason, UNPRICED_LINKS if unpriced_links(r) else "") if n)
# the card's options that are a run of their own (its devices, layout or network), beside the
# device counts and remedies: the kind each is drawn as
CARD_KINDS = {"split_model": "remedy", "network": "remedy", "fewer_servers": "devices",
              "more_devices": "more devices"}


def card_options(decision: DecisionCard | None, options: list[Option]) -> list[Option]:
    """The decision card's options that ``options`` (the device counts, remedies and added
    servers) do not already run, at the card's time, money and billing: the Hours & cost tab
    then weighs what the card weighs (its planner's layout at today's count, a priced network
    with the network's price, fewer servers in the planner's layout), and never calls another
    option the cheapest or the fastest of a card that shows a cheaper or faster one."""
    out: list[Option] = []
    for o in decision.options if decision is not None else []:
        if o.key not in CARD_KINDS or any(
                o.devices == x.devices and o.runnable == x.fits
                and math.isclose(o.samples_per_s, x.samples_per_s, rel_tol=1e-9)
                for x in (*options, *out)):
            continue
        out.append(Option(CARD_KINDS[o.key], o.title + ("" if o.runnable else NOT_RUNNABLE_SUFFIX),
                          o.devices, o.samples_per_s, None, None, o.total_usd, o.runnable,
                          o.time_s, o.billed_devices))
    return out


def _option(kind: str, label: str, p: Prediction, goal: Goal, reference_batch: int,
            priced: bool = True) -> Option:
    """An option with its time to finish (large-batch penalty against ``reference_batch``);
    ``priced`` False where its cost leaves out links it buys (``Option.priced``)."""
    t = time_to_goal_s(goal, p.step_time_s, p.global_batch, reference_batch)
    cost = cost_usd(goal, t, p.devices)
    if not p.fits:
        label += NOT_RUNNABLE_SUFFIX
    return Option(kind, label, p.devices, p.samples_per_s, p.time_to_train_s,
                  p.time_to_quality_s, None if cost is None else float(cost), p.fits,
                  None if t is None else float(t), priced=priced)


def _quality_sweep(profile: Profile, scenario: Scenario, devices: int):
    """Time to quality vs global batch at ``devices`` (needs a critical batch size)."""
    b_crit = resolve_goal(profile, scenario).critical_batch  # the profile's noise scale too
    if b_crit is None:
        return [], False
    e_min = scenario.min_samples_to_quality or profile.workload.min_samples_to_quality
    base = scenario.model_copy(update={"devices": [devices], "global_batch": None})
    points = []
    for b in TTQ_MICRO_BATCHES:
        row = predict(profile, base.model_copy(update={"micro_batch": b}))[0]
        if e_min is not None:  # predict's time to quality: whole optimizer steps (model.md §9)
            t = row.time_to_quality_s
        else:  # S_min cancels in a relative curve, so E_min = B_noise gives the right shape
            t = float(steps_to_quality(row.global_batch, b_crit, b_crit)) * row.step_time_s
        points.append((row.global_batch, b, t, row.fits, row.memory_bytes))
    if e_min is not None:
        return [QualityPoint(gb, b, t / 3600.0, f, m) for gb, b, t, f, m in points], True
    best = min(t for _, _, t, _, _ in points)
    return [QualityPoint(gb, b, t / best, f, m) for gb, b, t, f, m in points], False


def _scenario_b(state: AppState, profile: Profile, scenario: Scenario, focus: Prediction,
                remedies: list[RemedyResult], best: RemedyResult | None,
                decision: DecisionCard | None = None):
    """(label, profile, scenario, focus devices) of scenario B. More devices: the decision
    card's add-server option where it has one (``DecisionCard.added``: its title, count and
    layout, as the card and the Hours & cost tab have it), else today's layout at
    ``_more_devices``' count."""
    if state.b == "more_devices" and decision is not None and decision.added is not None:
        option = decision.added.option
        run = Scenario.model_validate({**scenario.model_dump(mode="json"),
                                       **(option.changes or {})})
        return option.title, profile, run, option.devices
    if state.b == "more_devices":
        more = _more_devices(focus, profile, scenario)
        return (f"Add devices ({counts_said(focus.devices, more)})", profile,
                scenario.model_copy(update={"devices": [more]}), more)
    pick = best if state.b == "best" else next((r for r in remedies if r.key == state.b), None)
    if pick is None or not pick.applicable:  # B's label says why (the remedy's reason)
        return (pick.reason if pick is not None and pick.reason else "no applicable remedy",
                profile, scenario, None)
    return pick.title, pick.profile, pick.scenario, focus.devices


def _split_counts(scenario: Scenario) -> Scenario:
    """``scenario`` on the device counts its model split divides (all of them without a
    split): B's curve, where a split remedy's tp x pp cannot run on the smallest counts."""
    if scenario.layout is None:
        return scenario
    model = _split_of(scenario)
    kept = [d for d in scenario.devices if d % model == 0]
    return scenario.model_copy(update={"devices": kept}) if kept else scenario


def with_chosen_intra(profile: Profile, state: AppState) -> Profile:
    """``profile`` with the intra-server link preset the state chose (its busbw, latency and how
    fewer GPUs of a server share it, ``LinkLevel.subset_busbw_shares``), as ``scalesim predict
    --hardware`` has it; the profile's own link for 'profile' and 'custom' (a custom busbw is
    a whole server's figure, scaled alike)."""
    if state.intra in ("profile", "custom"):
        return profile
    hw = profile.hardware
    return profile.model_copy(update={"hardware": hw.model_copy(update={
        "intra_node": presets.intra_link(state.intra)})})


def sequence_profile(profile: Profile, state: AppState) -> tuple[Profile, list[str]]:
    """(``profile`` at the state's sequence length, the notes that say so): the Layout
    expander's ``seq`` (None: the workload's own, ``profile`` as it is) as ``predict --seq-len``
    resolves it (``profiles.resolve_profile``: the presets' workload at that sequence, its
    compute the shape's estimate; an uploaded profile's own model, its measured curve scaled,
    ``profiles.profile_at_sequence``), the notes its resolution adds, each knob they name said
    as the sidebar's control ('Sequence length 4098: the transformer at ...'; the CLI's
    '--seq-len 4098', ``errors.in_words_of`` of the note's template). A parameter count has no
    sequence: left out with a note, as a layout is (the control is shown for a transformer only;
    a link may carry it). ScalesimError, one line, where it cannot be resolved."""
    if state.seq is None:
        return profile, []
    if splittable_shape(profile) is None:
        whose = (f"profile '{profile.name}' does not record the transformer it timed"
                 if profile.compute.measured else
                 f"workload '{profile.workload.name}' is a parameter count only")
        return profile, [f"{FIELD_LABELS['seq']} {state.seq:,} left out: {whose} (pick a "
                         "transformer workload such as llama3-8b to change its sequence)"]
    from scalesim.profiles import profile_at_sequence, resolve_profile

    if state.src == "preset":
        at = resolve_profile(None, state.hw, state.wl, state.seq)
    else:
        at, _ = profile_at_sequence(profile, state.seq)
    named = control_namer(state, hardware_nouns(profile.hardware))
    return at, [in_words_of(n, named) for n in at.notes if n not in profile.notes]


def in_control_reasons(remedies: list[RemedyResult], named) -> list[RemedyResult]:
    """``remedies`` with each reason that names a knob (its template: the loader
    remedy's '--loader-workers then reads it') said as ``named`` says it (``control_namer``:
    the sidebar's labels); the others as they are."""
    return [replace(r, reason=in_words_of(r.reason, named)) if template_of(r.reason) else r
            for r in remedies]


def make_plan(profile: Profile, state: AppState) -> Plan:
    """Everything the planner page shows for ``state`` on ``profile`` (at the state's sequence
    length, ``sequence_profile``; a calibrated profile's model split, where the layout controls
    ask it, as the transformer it timed: ``layout_predict.split_profile``)."""
    page_profile = profile  # what the page's links carry (``Plan.page_profile``)
    profile, sequence_notes = sequence_profile(profile, state)
    profile = with_chosen_intra(profile, state)
    scenario, notes = build_scenario(state, profile)
    notes = [*sequence_notes, *notes]
    profile = split_profile(profile, scenario)
    rows = predict(profile, scenario)
    knee = _knee(rows)
    focus = _focus(state, rows)
    if state.focus is not None and focus.devices != state.focus:  # a count the plan left out
        words = hardware_nouns(profile.hardware)
        notes.append(f"focus {words.count(state.focus)} is not among the counts predicted "
                     f"(see the note above on what was left out); showing "
                     f"{words.count(focus.devices)}")
    words = hardware_nouns(profile.hardware)
    named = control_namer(state, words)
    ranked = rank_remedies(profile, scenario, focus.devices)  # (focus predicted, remedies)
    remedies = with_page_titles(in_control_reasons(ranked[1], named), words)  # the page's labels
    best = next((r for r in remedies if r.helps), None)

    goal, ref = resolve_goal(profile, scenario), focus.global_batch
    options = [_option("devices", words.count(r.devices), r, goal, ref) for r in rows]
    for r in remedies:
        if r.helps and r.prediction is not None:
            options.append(_option("remedy", f"{r.title} ({words.count(focus.devices)}"
                                   f"{'; ' + UNPRICED_LINKS if unpriced_links(r) else ''})",
                                   r.prediction, goal, ref, priced=not unpriced_links(r)))
    try:
        decision = decide(profile, scenario, focus.devices,
                          lambda title: page_title(title, words),  # the page's labels
                          lambda pp, v: page_pipeline_words(pp, v, words),
                          ranked)  # the focus and remedies above: ranked once a render
    except ScalesimError as exc:  # in the page's controls, as the 'left out' notes say it
        notes.append(f"decision card: {in_words_of(exc, named)}")
        decision = None
    options += _added_servers(decision, focus, profile, scenario, rows, goal, ref, notes,
                              named)
    options += card_options(decision, options)

    quality, absolute = _quality_sweep(profile, scenario, focus.devices)

    b_label, b_profile, b_scenario, b_devices = _scenario_b(state, profile, scenario, focus,
                                                            remedies, best, decision)
    b_focus, b_rows = None, []
    b_pick = (None if state.b == "more_devices" else best if state.b == "best"
              else next((r for r in remedies if r.key == state.b), None))
    if state.b == "more_devices" and decision is not None and decision.added is not None:
        b_focus = decision.added.p  # the card's own prediction: its time and money, no other
    elif b_devices is not None:
        try:
            b_focus = (b_pick.prediction if b_pick is not None and b_pick.applicable
                       else predict(b_profile, b_scenario.model_copy(  # the remedy's own
                           update={"devices": [b_devices]}))[0])
            if state.b != "more_devices":
                b_rows = predict(b_profile, _split_counts(b_scenario))
        except ScalesimError as exc:  # in the page's controls, as the 'left out' notes say it
            notes.append(f"scenario B: {in_words_of(exc, named)}")
            b_focus = None
    return Plan(profile=profile, state=state, scenario=scenario, rows=rows, knee=knee,
                focus=focus, remedies=remedies, best=best, options=options, quality=quality,
                quality_absolute=absolute, b_label=b_label, b_profile=b_profile,
                b_scenario=b_scenario, b_focus=b_focus, b_rows=b_rows, notes=notes,
                decision=decision, refusals=[r for r in [device_list_refusal(state, words),
                                                         top_count_refusal(state, profile,
                                                                           scenario)] if r],
                page_profile=page_profile,
                b_unpriced_links=b_pick is not None and unpriced_links(b_pick))


def as_sentence(note: str) -> str:
    """A note of the page (``Plan.notes``) said as the page's other notes end (the decision
    card's, goal's and the headline's captions, the boxes): its first letter upper case and a
    full stop at its end (none added after one); the report's notes alike."""
    text = str(note)
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def card_notes(plan: Plan) -> list[str]:
    """The decision card's notes as the page and the report show them: each knob a note names
    (its template: the measure-before-buying note's '--inter-busbw') said as the sidebar's
    control (``control_namer``); the card itself stays ``scalesim decide``'s."""
    named = control_namer(plan.state, plan.words)
    return [in_words_of(n, named) for n in plan.decision.notes] if plan.decision else []


LAYOUT_TOP = 12  # layouts in the Layouts tab's ranked table and chart


def layout_ranking(profile: Profile, scenario: Scenario, focus: Prediction, top: int = LAYOUT_TOP):
    """The planner's best layouts that fit at the focus device count and global batch
    (``layout_predict.plan_at``; a calibrated profile's model as the transformer it timed,
    ``with_measured_shape``), best first; ScalesimError when there is none (or the workload
    has no transformer shape)."""
    from scalesim.layout_predict import plan_at

    return plan_at(with_measured_shape(profile), scenario, focus.devices, focus.global_batch,
                   top=top)


def layout_memory_note(profile: Profile, scenario: Scenario, focus: Prediction,
                       best) -> str | None:
    """Plan's memory note for the Layouts tab's ``best`` row (``memory_margin.margin_note``):
    where it leaves under 5 % of a device free and the sidebar's memory margin is 0, the
    same ranking (``layout_ranking``) with 5 % kept free, the margin named by its sidebar
    label (the CLI's by --memory-margin); else None."""
    from scalesim.memory_margin import margin_note

    def rerank(share: float):
        kept = scenario.model_copy(update={"memory_margin": share})
        return layout_ranking(profile, kept, focus, top=1)[0]

    words = hardware_nouns(profile.hardware)
    return margin_note(best, scenario.memory_margin, rerank, words,
                       f"the sidebar's {in_words(FIELD_LABELS['mm'], words)} at")


def layout_reference(plan: Plan) -> Prediction:
    """The focus run as the Layouts tab compares layouts with it: the plan's focus, or where the
    plan is a calibrated profile's data-parallel prediction, the same run through the layout
    model (``with_measured_shape``: the data-parallel exchange and memory as every ranked layout
    has them; compute and optimizer step are the same on both), so that the same layout compares
    at +0 %."""
    shaped = with_measured_shape(plan.profile)
    if shaped is plan.profile:
        return plan.focus
    return predict(shaped, plan.scenario.model_copy(update={"devices": [plan.focus.devices]}))[0]


ALMOST_LINEAR = 0.9  # scaling efficiency (1 = linear) the story calls "almost linear"; a word


def story(plan: Plan) -> str:
    """What the first view shows and what to do, in two short sentences."""
    f, rows, words = plan.focus, plan.rows, plan.words
    todo = plan.decision.recommendation if plan.decision else (
        f"try {lower_first(plan.best.title)}" if plan.best else "nothing we model helps here")
    todo = lower_first(todo)  # after 'What to do:': its first letter only, a name's kept
    first = next((r for r in rows if r.fits), None)
    # the curve starts where the layout fits: fewer devices cannot run it (the knee too,
    # knee.knee_of_predictions)
    start = ("" if first is None or first is rows[0] else
             f"below {words.count(first.devices)} this layout does not fit in "
             "memory; from there, ")
    if not f.fits:
        shows = (f"at {words.count(f.devices)} this layout needs {gib(f.memory_bytes)} per "
                 f"{words.device} and does not fit in memory, so it cannot run")
    elif data_stall_share(f) >= DATA_STALL_SHARE:
        shows = (f"{data_stall_share(f):.0%} of each step waits for input at {words.count(f.devices)} "
                 f"(and at one {words.device} too, so efficiency looks fine while time is lost)")
    elif plan.knee is not None:
        k = plan.knee
        before = next(r for r in rows if r.devices == k.devices_before)
        after = next(r for r in rows if r.devices == k.devices_after)
        upto = (f"throughput grows almost linearly to {words.count(k.devices_before)} "
                f"({before.efficiency:.0%} efficiency)"
                if before.efficiency >= ALMOST_LINEAR else
                f"scaling efficiency is {before.efficiency:.0%} at "
                f"{words.count(k.devices_before)}")
        shows = (f"{upto}, then drops to {after.efficiency:.0%} at "
                 f"{words.count(k.devices_after)}: "
                 f"{k.label_in(words)}")
    else:
        last = rows[-1]
        shows = (f"throughput scales to {words.count(last.devices)} at {last.efficiency:.0%} "
                 "efficiency with no knee")
    if f.fits and (baseline := one_device_note(rows, words)):  # the efficiency said above
        shows += f" ({baseline})"
    if f.fits and start:
        shows = start + shows
    return f"**What this shows:** {shows}. **What to do:** {todo.rstrip('.')}."


def against_now_text(samples_per_s: float, now: Prediction, words: Nouns = GPU_NOUNS,
                     unit: str = "samples") -> str:
    """A layout's throughput against the layout now (the Layouts tab): '+55.8% against the layout
    now, 3,833' (``signed_percent``, as the remedy that runs the best layout writes its gain;
    today's pace as ``figures.throughput`` writes it in every table);
    where the layout now does not fit in device memory (``words.memory``), no change
    against a run that cannot happen: ``makes_it_run_text`` (``unit``: the profile's)."""
    if not now.fits:
        return makes_it_run_text(samples_per_s, unit, words)
    return (f"{signed_percent(samples_per_s / now.samples_per_s - 1)} against the layout now, "
            f"{throughput(now.samples_per_s)}")


MAKES_IT_RUN = "makes it run"  # an option's gain where today's layout does not fit in memory


def makes_it_run_text(samples_per_s: float, unit: str, words: Nouns = GPU_NOUNS) -> str:
    """'makes it run, 18.13 sequences/s (today's layout does not fit in device memory)': a
    runnable option's own pace (``unit``/s) where today's does not fit, in place of a change
    against a run that cannot happen (headline, Remedies tab, A/B, Layouts, report)."""
    return (f"{MAKES_IT_RUN}, {rate(samples_per_s, unit)} (today's layout does not fit "
            f"in {words.memory})")


def remedy_gain_cell(r: RemedyResult, now_fits: bool) -> str:
    """A remedy's throughput gain in a table (Remedies tab, report): '+4.5%'; where today's
    layout does not fit, ``MAKES_IT_RUN`` for one that fits (its pace is in its own column),
    'not runnable' for one that does not; 'n/a' where it does not apply."""
    if not r.applicable:
        return "n/a"
    if not now_fits:
        return MAKES_IT_RUN if r.prediction is not None and r.prediction.fits else "not runnable"
    return signed_percent(r.gain)


def _needs(p: Prediction, words: Nouns) -> str:
    """'needs 101.8 GiB per device' ('per process' for a CPU profile's ``words``)."""
    return f"needs {gib(p.memory_bytes)} per {words.device}"


def _capacity(device_memory_bytes: float, memory_margin: float = 0.0) -> str:
    """'80 GiB' (no margin), else what a run may fill in plan's words ('40.0 GiB (80.0 GiB less
    the 50% memory margin)', ``scalesim.plan.capacity_words``): the memory a misfit is held
    against, so a need below the device's memory never reads as one that fits."""
    from scalesim.plan import capacity_words

    if memory_margin:
        return capacity_words(device_memory_bytes, memory_margin)
    return f"{device_memory_bytes / GIB_BYTES:,.0f} GiB"


def memory_sentence(p: Prediction, device_memory_bytes: float, words: Nouns = GPU_NOUNS,
                    memory_margin: float = 0.0) -> str:
    """'not runnable: needs X GiB per device, Y GiB available' for a layout that does not fit
    ('per process' for a CPU profile's ``words``; less the scenario's ``memory_margin``)."""
    return (f"not runnable: {_needs(p, words)}, "
            f"{_capacity(device_memory_bytes, memory_margin)} available")


def ab_misfit(plan: Plan, side: str) -> str | None:
    """Why scenario ``side`` ('A' or 'B') cannot run, in place of its numbers on the A/B tab,
    its chart and chart text: 'B does not fit (needs 101.8 GiB per device of 80 GiB)'; where
    its memory fits but calibration ran out of memory at its micro-batch, that. None where it
    runs (B: also where it was not predicted)."""
    p, profile = (plan.focus, plan.profile) if side == "A" else (plan.b_focus, plan.b_profile)
    if p is None or p.fits:
        return None
    scenario = plan.scenario if side == "A" else plan.b_scenario
    return f"{side} {misfit_words(p, profile, plan.words, scenario.memory_margin)}"


def misfit_words(p: Prediction, profile: Profile, words: Nouns = GPU_NOUNS,
                 memory_margin: float = 0.0) -> str:
    """Why the run ``p`` (one that does not fit) cannot run: 'does not fit (needs 101.8 GiB per
    device of 80 GiB)'; where its memory fits but calibration ran out of memory at its
    micro-batch, that (``decision.ceiling_words``, decide's rule; ``ab_misfit``, the
    step-breakdown chart's words); held against the device less ``memory_margin``."""
    if ceiling := ceiling_words(p, profile):
        return f"{DOES_NOT_FIT} ({ceiling})"
    mem = profile.hardware.device_memory_bytes
    return f"{DOES_NOT_FIT} ({_needs(p, words)} of {_capacity(mem, memory_margin)})"


def misfit_band_text(span: str, runs: list, profile: Profile, words: Nouns = GPU_NOUNS,
                     memory_margin: float = 0.0) -> str:
    """One label for adjacent points of a chart that do not fit (``runs``: their predictions or
    ``QualityPoint``s, each with ``memory_bytes`` and ``micro_batch``; ``span``: '16–64 devices',
    'global batch 8192–65536'): 'does not fit: 16–64 devices, needs 81.2–95.0 GiB per device of
    80 GiB'; where their memory fits but calibration ran out of memory at their micro-batch,
    that (``misfit_words``' reasons, over a range; against the device less ``memory_margin``)."""
    from scalesim.model.memory import usable_memory_bytes

    mem = profile.hardware.device_memory_bytes
    usable = float(usable_memory_bytes(mem, memory_margin))
    oom = profile.compute.oom_micro_batch
    over = [r.memory_bytes for r in runs if r.memory_bytes > usable or oom is None]
    why = []
    if over:
        low, high = gib(min(over)), gib(max(over))
        needs = low if low == high else f"{low.removesuffix(' GiB')}–{high}"
        why.append(f"needs {needs} per {words.device} of {_capacity(mem, memory_margin)}")
    if len(over) < len(runs):
        why.append(f"micro-batch {whole(oom)} and above ran out of memory in calibration")
    return f"{DOES_NOT_FIT}: {span}, {'; '.join(why)}"


def misfit_devices(plan: Plan) -> list[int]:
    """The curve's device counts whose layout does not fit in memory (no point, no bar)."""
    return [r.devices for r in plan.rows if not r.fits]


def misfit_counts_text(plan: Plan) -> str:
    """'does not fit in device memory at 16, 32 and 64 devices': the curve's device counts whose
    layout cannot run (``misfit_devices``; headline, the charts' words); '' where every count
    runs."""
    misfits = misfit_devices(plan)
    if not misfits:
        return ""
    noun = plan.words.device if misfits == [1] else plan.words.devices
    return f"{DOES_NOT_FIT} in {plan.words.memory} at {count_list(misfits)} {noun}"


def if_runs(p: Prediction, cell):
    """``cell`` where the run ``p`` (a Prediction, or an ``Option``) fits in memory, else
    ``DOES_NOT_FIT``: a table's step-time, throughput, efficiency, time or money cell (a run
    that cannot run has none; its memory stays, it says why; the page's and the report's
    tables)."""
    return cell if p.fits else DOES_NOT_FIT


def run_cells(run, samples_per_s: float | None, time_s: float | None,
              cost_usd: float | None) -> list[str]:
    """A run's pace, time to finish and money as the report's table cells (its Changes and its
    Hours and money tables): ``run`` a Prediction or an ``Option`` (anything with ``fits``),
    None where there is no run ('-' in each cell); a run that does not fit in memory has no
    pace, time or money (``if_runs``: ``DOES_NOT_FIT``, as the page's Remedies and Cost tabs
    leave those cells empty and predict's and decide's text say 'does not fit'); '-' where a
    figure is unknown (no goal, no price)."""
    if run is None:
        return ["-", "-", "-"]
    return [if_runs(run, cell) for cell in (
        "-" if samples_per_s is None else throughput(samples_per_s),
        "-" if time_s is None else duration(time_s),
        "-" if cost_usd is None else f"${amount(cost_usd)}")]


def quality_misfits_text(plan: Plan) -> str:
    """'does not fit in device memory at global batch 8,192 and above' (or '... at global batch
    64 and 256'): the time-to-quality sweep's batches that cannot run (its chart and words); ''
    where all run."""
    misfits = [q.global_batch for q in plan.quality if not q.fits]
    if not misfits:
        return ""
    tail = [q.global_batch for q in plan.quality if q.global_batch >= misfits[0]]
    # one batch, or from the batch that first runs out of memory on (the usual case), as the
    # chart's rule and 'now' label write it (``whole``: '32,768'); else the list (``count_list``:
    # '64 and 256', '4,096; 16,384 and 65,536')
    which = (whole(misfits[0]) if len(misfits) == 1 else f"{whole(misfits[0])} and above"
             if misfits == tail else count_list(misfits))
    return f"{DOES_NOT_FIT} in {plan.words.memory} at global batch {which}"


def stall_sentence(plan: Plan) -> str | None:
    """A sentence when the focus run waits for input a tenth of its step or more, else None."""
    f = plan.focus
    share = data_stall_share(f)
    if share < DATA_STALL_SHARE:
        return None
    ones, words = [r for r in plan.rows if r.devices == 1], plan.words
    at_one = (f" ({data_stall_share(ones[0]):.0%} at one {words.device} too, so scaling efficiency "
              "cannot show it)") if ones and data_stall_share(ones[0]) >= DATA_STALL_SHARE else ""
    return (f"data stall: {share:.0%} of each step at {words.count(f.devices)} waits for input"
            f"{at_one}; fix the input pipeline first")


def plan_figure(plan: Plan) -> str:
    """The share link's headline figure of ``plan`` (``sent_figure.figure_text``): its focus
    count and the throughput its headline shows there, or that it does not fit."""
    f = plan.focus
    return figure_text(f.devices, f.samples_per_s, f.fits)


def headline(plan: Plan) -> dict[str, str]:
    """The numbers a manager reads first, as display strings (page, report and tests agree).

    A layout that does not fit in device memory is said to be not runnable (key ``runnable``),
    and its efficiency is never praised; a data stall is said even when efficiency hides it.
    """
    f = plan.focus
    mem = plan.profile.hardware.device_memory_bytes
    out = {
        "devices": whole(f.devices),
        "runnable": "yes" if f.fits else memory_sentence(f, mem, plan.words,
                                                         plan.scenario.memory_margin),
        "efficiency": f"{f.efficiency:.1%}" if f.fits else "not runnable",
        "throughput": rate(f.samples_per_s, plan.unit),
        "speedup": f"{f.speedup:.1f}x",
        "knee": ("none: " + why_no_knee(plan.rows, f"{plan.words.device} counts", plan.words)
                 if plan.knee is None else
                 f"{plan.words.count_change(plan.knee.devices_before, plan.knee.devices_after, PAGE_ARROW)}: "
                 f"{plan.knee.label_in(plan.words)}"),
        "best_remedy": ("none predicted to help" if plan.best is None
                        else f"{plan.best.title}"
                        + (f", {plan.best.batch_change}" if plan.best.batch_change else "")
                        + f": {_best_gain_text(plan)}"),
    }
    out["best_remedy"] += unpriced_upgrade_words(plan)
    card, best = plan.decision, plan.best
    if (f.fits and card is not None and best is not None
            and best.objective_gain < card.model_error):  # decide's rule (decision._material)
        out["best_remedy"] += (f", under the model's median error of {card.model_error:.1%}, "
                               "so not a recommendation")
    stall = stall_sentence(plan)
    if stall:
        out["data_stall"] = stall
        out["stall_share"] = f"{data_stall_share(f):.0%}"
        if plan.knee is None:
            out["knee"] = ("none in scaling efficiency, but the data stall is lost at every "
                           f"{plan.words.device} count (one {plan.words.device} too)")
    if f.fits and (note := one_device_note([f], plan.words)):  # efficiency and speedup's baseline
        out["one_device"] = note
    # why a runnable count's efficiency (the metric, the chart) is above 100 %
    if note := above_linear_note([r for r in plan.rows if r.fits], plan.words):
        out["above_linear"] = note
    if misfits := misfit_counts_text(plan):
        out["not_runnable"] = f"{misfits} (not runnable)"
    t, cost = finish(plan, f)
    if t is not None:  # a layout that does not fit has no time or money (decide's card)
        out["time_to_train"] = duration(t) if f.fits else DOES_NOT_FIT
        out["goal"] = resolve_goal(plan.profile, plan.scenario).label()
    if cost is not None and f.fits:
        out["cost"] = f"${amount(cost)}"
    return out


def finish_title(goal: str) -> str:
    """A time to finish titled by its goal (``Goal.label``, the headline's ``goal``): 'Time to
    train' or 'Time to quality', as decide's card says it (its ``goal``), the page's metric and
    the report's headline row and hours caption alike."""
    return goal[0].upper() + goal[1:]


def unpriced_upgrade_words(plan: Plan) -> str:
    """Why the largest gain's network is not the card's: where the best remedy runs on named
    hardware with no public price (``RemedyResult.upgrade``, 8 x 200 Gb/s HDR InfiniBand) and
    the card prices another (``decision.card_upgrade``, AWS p4d's EFA), '; that network has no
    public price, so the decision card weighs <the priced one> instead'; '' otherwise."""
    best = plan.best
    up = None if best is None else best.upgrade
    if up is None or up.extra_usd_per_server_hour is not None or plan.decision is None:
        return ""
    priced = card_upgrade(plan.profile, plan.scenario)
    if priced is None or priced.key == up.key:
        return ""
    return (f"; that network has no public price, so the decision card weighs {priced.name} "
            "instead")


def finish(plan: Plan, p: Prediction | None) -> tuple[float | None, float | None]:
    """(seconds, USD) to finish the plan's goal with ``p``, penalty against the focus's batch."""
    if p is None:
        return None, None
    goal = resolve_goal(plan.profile, plan.scenario)
    t = time_to_goal_s(goal, p.step_time_s, p.global_batch, plan.focus.global_batch)
    if t is None:
        return None, None
    cost = cost_usd(goal, t, p.devices)
    return float(t), None if cost is None else float(cost)


def _best_gain_text(plan: Plan) -> str:
    """The headline's gain of the first remedy: where today's layout does not fit, the
    remedy's own pace (a change against a run that cannot happen, '-6.8% throughput', would
    read as a loss), else ``remedy_gain_text``."""
    r, f = plan.best, plan.focus
    if not f.fits and r.prediction is not None and r.prediction.fits:
        return makes_it_run_text(r.prediction.samples_per_s, plan.unit, plan.words)
    return remedy_gain_text(r, plan.words)


def remedy_gain_text(r: RemedyResult, words: Nouns = GPU_NOUNS) -> str:
    """'+22.0% faster to finish (+47.0% throughput)', '+47.0% throughput (time to finish
    -32.0%)' where the two gains are one, or '+47.0% throughput', as ranked (``words``: the
    profile's nouns, 'the host's memory' on CPU)."""
    if r.prediction is not None and not r.prediction.fits:
        return f"not runnable (does not fit in {words.memory})"
    thr = f"{signed_percent(r.gain)} throughput"
    what = {"time": "finish", "quality": "quality"}.get(r.measure)
    if what is None:
        return thr
    if abs(r.objective_gain - r.gain) > 5e-4:
        return f"{signed_percent(r.objective_gain)} faster to {what} ({thr})"
    return f"{thr} (time to {what} {signed_percent(1 / (1 + r.objective_gain) - 1)})"


def duration(seconds: float | None) -> str:
    """The card's ``duration_text``, '-' where there is no time (the app's tables)."""
    return duration_text(seconds, "-")


# A decision option's scenario fields (``DecisionOption.changes``) as the planner's controls:
# the fields an option may change that a control holds in the scenario's unit, each control
# named by its link key in the knob table (``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``)
STATE_OF_SCENARIO = {f: KNOB_BY_FIELD[f].url_key for f in (
    "strategy", "zero_framework", "accumulation", "micro_batch", "train_samples")}
STATE_OF_LAYOUT = {k.field: k.url_key for k in LAYOUT_KNOBS}
AUTO_WHEN_NONE = ("sched", "rec")  # the controls whose "auto" is the scenario's None


def option_state(state: AppState, profile: Profile, changes: dict | None) -> AppState | None:
    """The planner's state that runs a decision option's scenario (``DecisionOption.changes``:
    its device count in focus, ZeRO stage, accumulation, micro-batch and layout), so that its
    link reproduces the option's numbers; None where the option changes nothing the controls
    hold, or a count the planner cannot show (above ``MAX_DEVICES``, or off its grid)."""
    from pydantic import ValidationError

    if not changes or len(changes.get("devices") or []) != 1:
        return None
    update: dict = {}
    for key, value in changes.items():
        if key == "devices":
            continue
        if key == "layout":
            for name, field_name in STATE_OF_LAYOUT.items():
                value_of = (value or {}).get(name)
                update[field_name] = ("auto" if value_of is None and field_name in AUTO_WHEN_NONE
                                      else value_of)
        elif key in STATE_OF_SCENARIO:
            update[STATE_OF_SCENARIO[key]] = value
        else:  # a field no control holds: a link could not reproduce it
            return None
    devices = int(changes["devices"][0])
    if devices > MAX_DEVICES:
        return None
    update.update(focus=devices, dmax=max(state.dmax, devices))
    try:
        out = AppState.model_validate({**state.model_dump(), **update})
        g, unit = count_unit(out, profile)
        if devices not in device_counts(out, g, allocation=unit)[0]:  # the grid skips it:
            shown = device_counts(state, g, allocation=unit)[0]  # list the counts
            out = AppState.model_validate({**out.model_dump(), "grid": "list", "dlist": ",".join(
                map(str, sorted({*shown, devices})))})
    except ValidationError:
        return None
    return out if devices in device_counts(out, g, allocation=unit)[0] else None


def option_links(plan: Plan, base: str = "") -> list[tuple[str, str | None]]:
    """(title, planner link) of each decision option that runs a scenario of its own
    (``DecisionOption.changes``: more devices with the planner's layout), the link opening that
    what-if (``option_state``; None where the planner cannot show it). The link carries the
    page's profile (``Plan.page_profile``), as the share link does: the profile the plan made of
    it at the state's sequence length or intra-server link would open as another version's
    presets, or an uploaded profile with those baked in. It carries the card's figure of the
    option (``state.with_figure``), the headline the opened what-if shows."""
    from .state import encode_query, query_string, with_figure

    profile = plan.page_profile or plan.profile
    out = []
    for o in plan.decision.options if plan.decision else []:
        if o.changes:
            state = option_state(plan.state, profile, o.changes)
            figure = figure_text(state.focus, o.samples_per_s, o.runnable) if state else None
            out.append((o.title, None if state is None else
                        f"{base}?{query_string(with_figure(encode_query(state, profile), figure))}"))
    return out
