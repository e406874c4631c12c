"""Name the likely cause of lost scaling from measured runs or profiler traces, with evidence.

The causes are the seed's symptoms table. For runs, the time per sample per device at the
largest run is compared with the first run's; the growth is split into exposed communication,
data wait, straggler wait and compute (measured columns where given, the fitted model where not).
The part that grew most names the cause, refined by its pattern:

- communication -> **inter-server link** when efficiency held inside one server and the drop
  comes where the runs cross to several servers, else **growing communication share**;
- data wait -> **input pipeline**;
- straggler wait -> **a device far slower than the others** when the same rank is the slowest in
  every run (or, traced, in a strict majority of steps beyond chance:
  ``stragglers.slowest_in_most_steps``) and an outlier above the others (more than 3.5 robust
  standard deviations, at least 4.6 %, over their median: ``scalesim.model.stragglers``), else
  **stragglers or uneven data**;
- compute per sample -> **small per-device work under strong scaling** when the per-device batch
  shrinks (fixed costs per micro-step dominate), else "compute per sample grows";
- (traces, one run) idle common to every rank -> **idle time between operations** (launch or host
  overhead; "process idle" for a CPU job);
- **large-batch effects** from time-to-quality evidence: a ``steps_to_target`` column (steps
  each run needed to reach one quality target) or a critical batch size (``--critical-batch``,
  McCandlish et al. 2018: samples needed ``E = E_min (1 + B/B_noise)``). The share of speed-up the
  batch costs, ``r = samples needed at the first run / samples needed at the last``, names it when
  ``r < 0.9`` (GOOD_EFFICIENCY) and it costs more than the systems loss (``r < efficiency``).

When efficiency at the largest run is 90 % or more (what Horovod reports for tuned all-reduce
jobs) and no large-batch loss shows, the report says the job scales well.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR, median_error
from scalesim.bounds import bound, clip
from scalesim.device_nouns import (
    CPU_DEVICE_PREFIX,
    CPU_NOUNS,
    GPU_NOUNS,
    Nouns,
    measured_nouns,
    nouns_for,
)
from scalesim.errors import ScalesimError, require_model, require_text
from scalesim.figures import count_columns, link_GBps, sig3, whole
from scalesim.fit_runs import TIED_WORDS, Z95, from_fitted_x
from scalesim.jsonio import to_json_text
from scalesim.knee import MIN_EFFICIENCY_DROP, find_knee, no_knee_words
from scalesim.layout import DEFAULT_RECOMPUTE_STYLE, early_stop_of, op_sac_of, replica_servers
from scalesim.model.stragglers import (
    SLOW_DEVICE_FACTOR,
    peer_margin,
    persistence_words,
    slowest_in_most_steps,
)
from scalesim.process_groups import (
    ROLE_WORDS,
    ROLES,
    UNNAMED_ROLE,
    exchange_replicas,
    group_role,
    layout_words,
    splits_the_model,
    traced_degrees,
)
from scalesim.remedies import VERDICTS, gain_verdict, measure_words, verdict_group

# ({server}, {device}: the devices' nouns, ``device_nouns.nouns_for``: 'Inter-host link' of a
# CPU calibration's processes)
CAUSES = {
    "inter_server": "Inter-{server} link",
    "comm_growth": "Growing communication share",
    "input_pipeline": "Input pipeline",
    "stragglers": "Stragglers or uneven data",
    "slow_device": "A {device} far slower than the others",
    "large_batch": "Large-batch effects",
    "small_work": "Small per-{device} work under strong scaling",
    # a trace is one run: its idle is overhead seen in each step, not a trend across runs
    "idle": "Idle time between operations",
    "compute": "Compute per sample grows (contention or throttling)",
    "attention_kernel": "A FlashAttention-2-class attention kernel on Hopper",
    # traces whose process groups split the model: their collectives the compute did not hide
    "model_parallel_comm": "Exposed communication outside the data-parallel exchange",
    # traces of a pipeline with every stage traced (``pipeline_trace``): fill, drain, uneven stages
    "pipeline": "Pipeline bubble and uneven stages",
    "none": "No scaling problem found",
}

# Remedies (scalesim.remedies keys) that address each cause first.
PREFERRED_REMEDIES = {
    "inter_server": ["interconnect", "overlap", "accumulation", "bigger_batch", "split_model"],
    "comm_growth": ["overlap", "tp_overlap", "accumulation", "bigger_batch", "interconnect",
                    "split_model"],
    "input_pipeline": ["loader"],
    "stragglers": ["accumulation", "bigger_batch"],
    "slow_device": ["slow_device"],
    "large_batch": [],
    "small_work": ["bigger_batch", "accumulation"],
    "idle": ["bigger_batch", "accumulation"],
    "compute": [],
    "attention_kernel": ["attention_kernel"],
    "model_parallel_comm": ["tp_overlap", "split_model"],
    "pipeline": ["pipeline_even", "pipeline_bubble"],
    "none": [],
}
BATCH_GROWING = {"bigger_batch", "accumulation"}
# At or above this efficiency no cause is named: the scaling efficiency the Horovod README
# reports for tuned all-reduce jobs (90 % for Inception V3 and ResNet-101 on 512 Pascal GPUs, 128
# servers over 25 Gb/s RoCE; github.com/horovod/horovod), as good as published jobs get.
GOOD_EFFICIENCY = 0.9
# The same yardstick for the batch: large-batch effects are named when the run keeps less than
# GOOD_EFFICIENCY of its ideal speed-up in samples needed (r, module docstring) and loses more
# there than in systems efficiency (r < efficiency): both are shares of ideal speed-up kept.
# "Also" lists every other part of at least this share (of the largest run's time for runs, of
# the step for traces): 5 % is the least input-wait share the TensorFlow profiler flags
# ("moderately input bound", tensorflow.org/guide/profiler), used for every part. A trace whose
# largest part is under 1 - GOOD_EFFICIENCY of the step (the step is 90 % compute) names no cause.
OTHER_CAUSE_SHARE = 0.05
# Inter-server link: the drop where the runs cross to several servers is worth naming
# (knee.MIN_EFFICIENCY_DROP, the model's median error), efficiency held inside one server
# (IN_SERVER_HELD_EFFICIENCY or more) and the crossing loses BOUNDARY_DOMINANCE times the points of
# any step inside a server. These two are settings (docs/diagnose.md), not measured: three
# quarters of ideal is where scaling inside a server still counts as working, and twice the
# largest in-server drop says the crossing is where the curve bends, not one more step of a
# steady decline.
IN_SERVER_HELD_EFFICIENCY = 0.75
BOUNDARY_DOMINANCE = 2.0
# Traces: the loader is modelled (and its remedy predicted) when removing the data wait could
# gain the model's median error, wait / (step - wait) >= e, i.e. wait >= e / (1 + e) of the step.
LOADER_MODELLED_SHARE = DATA_PARALLEL_MEDIAN_ERROR / (1.0 + DATA_PARALLEL_MEDIAN_ERROR)
# Traces: the model's overlap is on or off; a job is modelled as overlapping when at least half of
# its communication time overlaps compute (the nearer of the two cases).
OVERLAPPED_SHARE = 0.5
# Remedy-gain bands (``set_gain_bands``): the remedies are predicted again from the first
# REMEDY_BAND_DRAWS parameter vectors the runs cannot rule out (``fit_runs.plausible_draws``),
# LAYOUT_BAND_DRAWS where the runs' transformer is given (the layout model: ~80 ms a draw
# against ~8 ms, docs/performance.md).
REMEDY_BAND_DRAWS = 100
LAYOUT_BAND_DRAWS = 30
# A band reaches a loss (``_band_caveat``) from -0.5 %, what the report prints as -1 %; a band
# narrower than BAND_NARROW (it prints as one figure) leaves nothing for a one-parameter caution.
BAND_LOSS = 0.005
BAND_NARROW = 0.005


@dataclass
class Finding:
    key: str
    label: str
    share: float  # share of the largest run's time (of the step, for traces) lost to this cause
    evidence: list[str] = field(default_factory=list)
    # causes (``CAUSES`` keys) the runs cannot rule out in its place: which of them loses most
    # rests on a parameter the runs do not show (``_undetermined_cause``); empty where none
    rivals: list[str] = field(default_factory=list)


@dataclass
class Remedy:
    key: str
    title: str
    gain: float  # predicted throughput ratio minus one
    applicable: bool
    note: str = ""
    verdict: str = "not applicable"  # one of ``remedies.VERDICTS``, the planner's words
    # the gain on the measure the verdict is judged on (``remedies.RemedyResult``'s names):
    # time to quality where a critical batch size is known, else throughput (None: ``gain``)
    objective_gain: float | None = None
    measure: str = "throughput"  # what objective_gain measures: time, quality or throughput
    # what its gain rests on that the measured runs do not pin ('' where nothing, and for
    # traces): said beside it in the text, the app and --json (``_remedy_caveat``)
    caveat: str = ""
    # the 95 % band of the shown gain (``shown_gain``) over the parameters the runs cannot rule
    # out (``set_gain_bands``); None where not banded (traces, a remedy that does not apply)
    gain_low: float | None = None
    gain_high: float | None = None
    # "split the model": the layout it runs (``remedies.split_change``: layout, ZeRO strategy,
    # accumulation, micro-batch); None for the other remedies and where it does not apply
    split_layout: dict | None = None
    helps: bool = field(init=False)  # a remedy: it runs and gains (verdict "remedy")

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.objective_gain is None:
            self.objective_gain = self.gain
        self.helps = self.verdict == "remedy"


@dataclass
class Report:
    kind: str  # "runs" or "traces"
    source: str
    cause: Finding
    others: list[Finding]
    first_remedy: Remedy | None
    remedies: list[Remedy]
    table: list[dict]  # per run or per rank rows
    details: dict  # knee, fit, extrapolation, steps...
    notes: list[str]
    # the least gain named first: the model's median error (``model_remedies``), relative
    decisive_gain: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return to_json_text(self.to_dict(), what="the diagnosis")

    def to_text(self) -> str:
        return render_text(self)


def set_gain_bands(remedies: list[Remedy], drawn: list[list[Remedy]],
                   ends: list[list[Remedy]] | None = None) -> None:
    """Give each applicable remedy the 95 % band of its shown gain (``shown_gain``) over
    ``drawn``: the same remedies predicted from parameter vectors the runs cannot rule out
    (``fit_runs.plausible_draws``), matched by key. The band is their 2.5 and 97.5 percentiles,
    widened to hold the fit's own gain and the gain from each of ``ends``: the remedies at
    either end of the range the runs allow a parameter the fit holds (``fit_runs.held_ends``),
    which no share of draws rules out; none where no draw was predicted or the remedy cannot
    run (verdict "not runnable": it does not fit in memory). A draw where the
    remedy does not apply gains nothing from it (0): the overlap already on, no data stall, no
    slow device, an exchange too small to split for, under those parameters."""
    for r in remedies:
        if not r.applicable or r.verdict == "not runnable" or not drawn:
            continue  # a change that cannot run has no gain to band
        def gains(sets, key=r.key):
            return [next((shown_gain(d) if d.applicable else 0.0 for d in one if d.key == key),
                         0.0) for one in sets]

        held = [shown_gain(r), *gains(ends or [])]
        band = np.percentile(gains(drawn), [2.5, 97.5])
        # a rounding speck (-2e-16 where nothing changes) is no loss: printed '-0.0', cautioned
        low, high = np.where(np.abs(band) < 1e-9, 0.0, band)
        r.gain_low = float(min(low, *held))
        r.gain_high = float(max(high, *held))


def _ranked_position(remedies: list[Remedy], new: Remedy) -> int:
    """Where ``new`` goes in ``remedies`` (ranked by verdict, then by shown gain, as
    ``remedies.rank_remedies`` ranks them): before the first that ranks below it."""
    def rank(r):
        return VERDICTS.index(r.verdict), -shown_gain(r)

    return next((i for i, r in enumerate(remedies) if rank(r) > rank(new)), len(remedies))


def shown_gain(remedy: Remedy) -> float:
    """The figure every report shows for ``remedy`` (diagnose's text, the Diagnose page, the HTML
    report) and the first remedy's threshold compares: its gain on the measure its verdict is
    judged on (``objective_gain``), relative (0.05 = +5 %), so a remedy never shows a loss."""
    return remedy.objective_gain


def gain_text(remedy: Remedy, digits: int = 0) -> str:
    """A remedy's shown gain (``shown_gain``) with its 95 % band where it has one (``gain_low``,
    ``gain_high``): '+25% (95%: +20% to +31%)', else '+25%'; ``digits`` after the point. The
    first remedy's line in the text, the Diagnose page and its HTML report."""
    gain = f"{shown_gain(remedy):+.{digits}%}"
    if remedy.gain_low is None or remedy.gain_high is None:
        return gain
    return f"{gain} (95%: {remedy.gain_low:+.{digits}%} to {remedy.gain_high:+.{digits}%})"


def has_gain_bands(report: Report) -> bool:
    """Whether any remedy of ``report`` has a 95 % band (runs: ``set_gain_bands``; traces none)."""
    return any(r.gain_low is not None for r in report.remedies)


def gain_measure(report: Report) -> str:
    """What the report's remedy figures measure, in words (``remedies.measure_words``): 'time to
    quality' where a critical batch size is known, else 'throughput'; one measure per report."""
    measures = {r.measure for r in report.remedies if r.applicable}
    return measure_words(measures.pop() if len(measures) == 1 else "throughput")


def least_decisive_gain(profile, scenario) -> float:
    """The least gain a first remedy needs, relative: the model's median error for the scenario
    (``accuracy.median_error``, the layout model's where it splits the model; docs/model.md
    section 20); under it the model cannot tell the change from running as today."""
    from scalesim.layout_predict import uses_layouts

    return median_error(uses_layouts(profile, scenario))


def finding(key: str, share: float, evidence: list[str], words: Nouns = GPU_NOUNS) -> Finding:
    """The finding ``key`` (``CAUSES``) titled in ``words``, the devices' nouns."""
    label = CAUSES[key].format(server=words.server, device=words.device)
    return Finding(key, label, float(share), evidence)


def report_nouns(report: Report) -> Nouns:
    """The nouns of a report's devices: the fitted profile's of runs (a CPU ``device`` column
    names processes on hosts), a traced job's where no rank ran on a GPU (``traced_device_name``)."""
    if report.kind == "runs":
        return nouns_for(report.details["fitted_profile"]["hardware"]["device_name"])
    return GPU_NOUNS if any(r.get("device") == "gpu" for r in report.table) else CPU_NOUNS


def table_nouns(report: Report) -> Nouns:
    """The nouns of the counts in a report's table and charts: the devices themselves, where the
    runs split the model too (the table counts devices beside replicas; ``report_nouns`` then
    says replicas)."""
    if report.kind == "runs":
        return measured_nouns(report.details["fitted_profile"]["hardware"]["device_name"])
    return report_nouns(report)


def bends_at_boundary(efficiency, last_single: int) -> bool:
    """Whether the efficiency curve (0..1 per run, in device order) bends where the runs cross
    from one server (run ``last_single``, the last on one server) to several: the crossing drop
    is at least ``MIN_EFFICIENCY_DROP`` and ``BOUNDARY_DOMINANCE`` times any drop inside a
    server, and efficiency held (``IN_SERVER_HELD_EFFICIENCY``) inside the server."""
    eff = np.asarray(efficiency, dtype=float)
    drops = -np.diff(eff)
    in_server = float(np.max(drops[:last_single])) if last_single > 0 else 0.0
    crossing = float(drops[last_single])
    return bool(crossing >= MIN_EFFICIENCY_DROP and crossing >= BOUNDARY_DOMINANCE * in_server
                and eff[last_single] >= IN_SERVER_HELD_EFFICIENCY)


def _pct(x: float) -> str:
    return f"{100.0 * x:.0f}%"


def _series(items: list[str], most: int = 12) -> str:
    """'a, b, c', or the first and last few with '...' between when there are over ``most``."""
    if len(items) <= most:
        return ", ".join(items)
    half = most // 2
    return ", ".join(items[:half]) + f", ... ({len(items) - most} more), " + ", ".join(
        items[-half:])


def _ms(x: float) -> str:
    """Seconds as milliseconds to three significant digits, as every fitted figure ('104 ms',
    '5.3 ms', '0.0937 ms': not '0.1 ms' for 94 us), ``figures.sig3``."""
    return f"{sig3(1e3 * x)} ms"


ABSOLUTE_SE = ("overlap", "jitter_cv")  # fitted parameters whose standard error is absolute
# A positive fitted parameter (a transfer time, the input supply), or the inter- / intra-server
# ratio, is pinned by the runs where its 95 % band (Z95 standard errors of its log, from the fit's
# covariance) is within RATIO_PINNED_FACTOR either way. Beyond it (one server's runs whose exchange
# hides behind backward, say: the intra transfer time +-4000 %) a number from it, or a ratio of
# two point values, is one the runs do not show.
RATIO_PINNED_FACTOR = 2.0
WIDE_BAND_FACTOR = 100.0  # a band wider than this either way is said so, not printed to its ends
# The fitted overlap is pinned by the runs where its 95 % band (Z95 standard errors) is within
# OVERLAP_PINNED_HALF_WIDTH of it; wider, the overlap remedy's gain rests on a share of the
# exchange hidden behind backward that the runs do not show (a setting: a quarter of the range).
OVERLAP_PINNED_HALF_WIDTH = 0.25


def _overlap_words(fit: dict) -> str:
    """The fitted overlap's uncertainty for the report: +-points, or not pinned / held."""
    if "overlap" not in fit["fitted"]:
        return " (fixed)"
    se = fit["stderr_abs"].get("overlap")
    if se is None:
        return " (at its bound: not measurable)" if "overlap" in fit["at_bound"] else ""
    if not _pinned(se, absolute=True):
        return " (not pinned by these runs)"
    return f" (+-{Z95 * se * 100:.0f} points, 95%)"


# What a first remedy's gain rests on, by remedy key: the fitted parameter (the link level's
# transfer time for a faster link: across servers where the largest run crosses them) and what
# measures it. The caveat is said where the runs do not pin that parameter (``_pinned``).
CAVEAT_MEASURES = {
    "overlap": "a profiler trace of one step measures the overlap (scalesim diagnose --trace)",
    "interconnect": ("an all-reduce measured over that link pins it (nccl-tests all_reduce_perf, "
                     "read by scalesim calibrate --from-nccl-tests)"),
    "loader": ("a data_wait_s column in the runs file, or a profiler trace, measures the input "
               "supply"),
}


def _pinned(se: float, absolute: bool = False) -> bool:
    """Whether a fitted quantity's 95 % band is narrow enough to act on: the overlap within
    ``OVERLAP_PINNED_HALF_WIDTH`` (``absolute``), a positive parameter or a ratio of two within
    ``RATIO_PINNED_FACTOR`` either way (its error is in log)."""
    if absolute:
        return Z95 * se <= OVERLAP_PINNED_HALF_WIDTH
    return float(np.exp(Z95 * se)) <= RATIO_PINNED_FACTOR


def _remedy_caveat(fit, remedy, multi_server: bool, words: Nouns = GPU_NOUNS) -> str:
    """What a remedy's gain rests on that the runs do not pin ('' where nothing, or where it
    does not apply): the fitted parameter with its 95 % band, and what would measure it
    (``CAVEAT_MEASURES``)."""
    if remedy is None or remedy.key not in CAVEAT_MEASURES or not remedy.applicable:
        return ""
    if remedy.verdict == "not runnable":  # no gain to qualify: it does not fit
        return ""
    if remedy.gain_low is not None and remedy.gain_high - remedy.gain_low < BAND_NARROW:
        return ""  # whatever that parameter is, the runs pin this remedy's gain
    name = {"overlap": "overlap", "loader": "node_loader_samples_per_s",
            "interconnect": "inter_transfer_s" if multi_server else "intra_transfer_s"}[remedy.key]
    se = fit.stderr(name) if name in fit.fitted else None
    if se is None or _pinned(se, absolute=name in ABSOLUTE_SE):  # None: fixed, or held at a bound
        return ""
    value = fit.values[name]
    if name == "overlap":
        what = (f"a fitted overlap of {value:.0%} (95%: {max(value - Z95 * se, 0.0):.0%}-"
                f"{min(value + Z95 * se, 1.0):.0%})")
        tail = "if the exchange already overlaps backward in full there is nothing to gain; "
    else:
        spread = float(np.exp(Z95 * se))
        loader = name == "node_loader_samples_per_s"
        unit = (lambda v: f"{sig3(v)}") if loader else (lambda v: f"{sig3(v * 1e3)} ms")
        band = (f"95%: {unit(value / spread)}-{unit(value * spread)}" if spread <= WIDE_BAND_FACTOR
                else f"its 95% band over {WIDE_BAND_FACTOR:g}x either way")
        if loader:
            what = f"a fitted input supply of {sig3(value)} samples/s per {words.server} ({band})"
        else:
            where = f"across {words.servers}" if multi_server else f"inside a {words.server}"
            what = f"a fitted gradient transfer {where} of {unit(value)} ({band})"
        tail = ""
    return (f"its gain rests on {what} that these runs do not pin: {tail}"
            f"{CAVEAT_MEASURES[remedy.key]}")


def _band_caveat(remedy: Remedy) -> str:
    """'' unless ``remedy`` is a remedy (it helps) whose 95 % band reaches a loss: then that the
    runs do not show it helps. For remedies whose gain rests on several fitted parameters at
    once (a bigger batch, accumulation, sharding, the smaller batch), which ``_remedy_caveat``
    cannot name one of."""
    if not remedy.helps or remedy.gain_low is None or remedy.gain_low > -BAND_LOSS:
        return ""
    return (f"its 95% band over the parameters these runs allow reaches {remedy.gain_low:+.0%}: "
            "they do not show that it helps; runs at more device counts or batches, or with less "
            "noise, narrow it")


def _log_ratio_stderr(fit, upper: str, lower: str) -> float | None:
    """Standard error of log(upper / lower) of two fitted positive parameters (their covariance
    in log coordinates); None where either is not estimated."""
    if fit.stderr(upper) is None or fit.stderr(lower) is None:
        return None
    i, j = fit.fitted.index(upper), fit.fitted.index(lower)
    var = fit.cov[i, i] + fit.cov[j, j] - 2.0 * fit.cov[i, j]
    return float(np.sqrt(max(var, 0.0)))


def _link_ratio_words(fit, words, inter_ms: str) -> str:
    """The fitted inter-server link against the intra-server one: the ratio with its 95 % band
    where the runs pin it (``RATIO_PINNED_FACTOR``), else both transfer times and why no ratio."""
    ratio = fit.values["inter_transfer_s"] / fit.values["intra_transfer_s"]
    spread = _log_ratio_stderr(fit, "inter_transfer_s", "intra_transfer_s")
    if spread is not None and _pinned(spread):
        low, high = ratio * np.exp(-Z95 * spread), ratio * np.exp(Z95 * spread)
        return (f"fitted {words.link('inter_node')} {ratio:.1f}x slower than intra-{words.server} "
                f"(95%: {low:.1f}-{high:.1f}x; gradient transfer {inter_ms})")
    return (f"fitted gradient transfer across {words.servers} {inter_ms}, inside a {words.server} "
            f"{_ms(fit.values['intra_transfer_s'])}: these runs do not pin the ratio of the two "
            f"(95% band wider than {RATIO_PINNED_FACTOR:g}x either way)")


# --------------------------------------------------------------------------------------------
# Remedies through the model


# Traces record no batch size nor accumulation count: the trace model runs a nominal micro-batch
# of 1 without accumulation, and these titles say so instead of quoting its "1 -> 2"
# ({device}: the devices' noun, ``device_nouns.nouns_for``)
NOMINAL_BATCH_TITLES = {
    "bigger_batch": "Double the per-{device} batch (the traces do not record its size)",
    "accumulation": "Accumulate gradients over 4x the micro-steps (the traces do not record how "
                    "many)",
}


def model_remedies(profile, scenario, devices: int, cause: str | tuple[str, ...],
                   nominal_links: bool = False,
                   split_tp_overlap: bool | None = None, nominal_batch: bool = False,
                   decisive_gain: float | None = None,
                   split_layout: dict | None = None) -> tuple[Remedy | None, list[Remedy]]:
    """All seed remedies at ``devices`` ranked by the model, and the first one to try.
    ``split_tp_overlap``: the framework's tensor-parallel overlap in the split-the-model
    remedy's layouts (``remedies.rank_remedies``; None: the scenario's). ``decisive_gain``:
    the least gain a first remedy needs, where the caller has it for its report already
    (None: ``least_decisive_gain`` of ``profile`` and ``scenario``).

    ``nominal_links``: the profile's bandwidths rest on a nominal gradient size, so titles say
    "2x" instead of quoting GB/s that mean nothing on their own. ``nominal_batch``: the
    micro-batch and accumulation are nominal (traces): titles quote no count
    (``NOMINAL_BATCH_TITLES``). ``split_layout``: the layout "split the model" tries
    (``remedies.split_change``; None: the planner's best), as ``Remedy.split_layout`` gives it.
    """
    from scalesim.remedies import rank_remedies, split_change

    # the runs or traces were examined for input waits: no input pipeline means none was found
    _, ranked = rank_remedies(profile, scenario, devices, split_tp_overlap=split_tp_overlap,
                              stall_examined=True, relative_links=nominal_links,
                              split_layout=split_layout)
    remedies = []
    for r in ranked:
        title = r.title
        if nominal_batch and r.key in NOMINAL_BATCH_TITLES:
            title = NOMINAL_BATCH_TITLES[r.key].format(
                device=nouns_for(profile.hardware.device_name).device)
        split = r.key == "split_model" and r.applicable
        remedies.append(Remedy(r.key, title, float(r.gain), r.applicable, r.reason, r.verdict,
                               float(r.objective_gain), r.measure,
                               split_layout=split_change(r.scenario, r.title) if split else None))
    error = least_decisive_gain(profile, scenario) if decisive_gain is None else decisive_gain
    return first_remedy(remedies, cause, error), remedies


def first_remedy(remedies: list[Remedy], cause: str | tuple[str, ...],
                 error: float) -> Remedy | None:
    """The first remedy to try: its gain is a decision, at least the model's median error
    ``error`` (``least_decisive_gain``), a remedy for the cause before the best remedy overall
    (for any of several: a cause and the rivals the runs cannot rule out, ``Finding.rivals``);
    under it the model cannot tell the change from today (a +0.08 % "first remedy" printed as
    +0 %). The gain compared is the one shown (``shown_gain``), on the measure the verdict is
    judged on."""
    causes = (cause,) if isinstance(cause, str) else tuple(cause)
    usable = [r for r in remedies if r.helps]
    if "large_batch" in causes:
        usable = [r for r in usable if r.key not in BATCH_GROWING]
    decisive = [r for r in usable if shown_gain(r) >= error]
    preferred = [r for r in decisive
                 if any(r.key in PREFERRED_REMEDIES.get(c, []) for c in causes)]
    pool = preferred or decisive
    return max(pool, key=shown_gain) if pool else None


# --------------------------------------------------------------------------------------------
# From measured runs


def _large_batch(runs, critical_batch: float | None, speedup_ratio: float,
                 words: Nouns = GPU_NOUNS) -> tuple[float, list[str]] | None:
    """Share of the speed-up kept after large-batch effects (r), with evidence, or None."""
    steps = runs.optional("steps_to_target")
    if steps is not None:
        samples = steps * runs.samples_per_step
        r = float(samples[0] / samples[-1])
        ttq = steps * runs.step_time_s
        return r, [
            f"throughput speed-up {speedup_ratio:.2f}x from {whole(runs.devices[0])} to "
            f"{words.count(int(runs.devices[-1]))}, but time to target only {ttq[0] / ttq[-1]:.2f}x "
            f"({steps[0]:.0f} -> {steps[-1]:.0f} steps at global batch "
            f"{runs.samples_per_step[0]:.0f} -> {runs.samples_per_step[-1]:.0f})",
            f"samples needed to reach the target grew {samples[-1] / samples[0]:.2f}x",
        ]
    if critical_batch is not None and runs.batch_known:
        b0, b1 = runs.samples_per_step[0], runs.samples_per_step[-1]
        r = float((1.0 + b0 / critical_batch) / (1.0 + b1 / critical_batch))
        return r, [
            f"global batch {b0:.0f} -> {b1:.0f} against a critical batch size of "
            f"{critical_batch:g}: samples to quality grow {1.0 / r:.2f}x (McCandlish et al. 2018)",
        ]
    return None


def _critical_batch_from_steps(runs) -> float | None:
    """B_noise from steps to target at two or more global batches: fit ``S = S_min + S_min*B_noise/B``."""
    steps = runs.optional("steps_to_target")
    if steps is None or not runs.batch_known or np.unique(runs.samples_per_step).size < 2:
        return None
    design = np.stack([np.ones_like(steps), 1.0 / runs.samples_per_step], axis=1)
    (s_min, c), *_ = np.linalg.lstsq(design, steps, rcond=None)
    if s_min <= 0 or c <= 0:
        return None
    return float(c / s_min)


SMALLER_BATCH_FACTORS = (2, 4, 8, 16)  # the global batches the smaller-batch remedy tries: 1/f


def smaller_batch_remedy(profile, scenario, devices: int, b_noise: float,
                         factors: tuple[int, ...] = SMALLER_BATCH_FACTORS,
                         ) -> tuple[Remedy, int] | None:
    """(remedy, f): the smaller global batch 1/f (of ``factors``) with the best predicted time to
    quality among those that fit in device memory (the best of all, "not runnable", where none
    does), judged as ``remedies.rank_remedies`` judges a change; None where no smaller batch can
    be predicted."""
    from scalesim.errors import ScalesimError
    from scalesim.predict import predict

    def one(scn):
        return predict(profile, scn.model_copy(update={"devices": [devices]}))[0]

    now = one(scenario)
    best = None
    for f in factors:
        if scenario.global_batch is None:
            b = now.micro_batch // f
            if b < 1:
                break
            scn = scenario.model_copy(update={"micro_batch": b})
        else:
            scn = scenario.model_copy(update={"global_batch": scenario.global_batch // f})
        try:
            after = one(scn)
        except ScalesimError:
            break
        ratio = ((1.0 + b_noise / now.global_batch) * now.step_time_s
                 / ((1.0 + b_noise / after.global_batch) * after.step_time_s))
        if best is None or (after.fits, ratio) > (best[1].fits, best[0]):  # fitting ones first
            best = (ratio, after, f)
    if best is None:
        return None
    ratio, after, factor = best
    throughput = float(after.samples_per_s / now.samples_per_s - 1.0)
    note = f"gain in time to quality (McCandlish et al. 2018); throughput {throughput:+.1%}"
    words = nouns_for(profile.hardware.device_name)
    memory = words.memory
    verdict = gain_verdict(float(ratio - 1.0))
    if not after.fits:
        verdict, note = "not runnable", f"does not fit in {memory}; {note}"
    elif not now.fits:
        verdict, note = "remedy", f"makes it fit in {memory}; {note}"
    # "towards" only where the smaller batch is nearer B_noise (from above it)
    where = ("towards" if after.global_batch >= b_noise
             else "further below" if now.global_batch <= b_noise else "past")
    return Remedy("smaller_batch", f"Shrink the global batch {now.global_batch} -> "
                  f"{after.global_batch} (per-{words.device} {after.micro_batch}) {where} B_noise "
                  f"{b_noise:.0f}", throughput, True, note, verdict=verdict,
                  objective_gain=float(ratio - 1.0), measure="quality"), factor


def replica_of_rank(rank: int, split: dict[str, int], replicas: int) -> int:
    """The model replica (data-parallel rank) of device ``rank`` in a job split as ``split``
    (tp, pp, cp) over ``replicas``: Megatron / torchtitan order, tp innermost, then cp, then
    dp, pp outermost (``layout.strides``)."""
    return (rank // (split["tp"] * split["cp"])) % replicas


def _rank_pattern(runs, words: Nouns = GPU_NOUNS) -> tuple[int | None, float, list[str]]:
    """(consistently slowest rank or None, its worst slowdown factor, evidence lines)."""
    slowest, factors, beyond, lines = [], [], [], []
    for r in runs.rows:
        t = r.rank_step_times_s
        if not t or len(t) < 2:
            continue
        t = np.asarray(t)
        i = int(np.argmax(t))
        others = np.delete(t, i)
        median, margin = peer_margin(others)
        factor = float(t[i] / median)
        slowest.append(i)
        factors.append(factor)
        beyond.append(bool(t[i] > median + margin))
        lines.append(f"{words.count(r.devices)}: rank {i} slowest, {factor:.2f}x the median of the "
                     f"others; spread max-median {_ms(float(t.max() - np.median(t)))}")
    if not slowest:
        return None, 1.0, lines
    same = len(set(slowest)) == 1 and all(beyond)
    return (slowest[0] if same else None), max(factors), lines


def _implausible_links(fit, params: float | None, words: Nouns = GPU_NOUNS) -> list[str]:
    """A note per fitted link whose gradient rate (``params`` x wire bytes / fitted transfer
    time) is below the floor of a link's bus bandwidth (``busbw_GBps``: 1 MB/s), where the
    model holds it: --params is then not the parameter count (340 for 340e6), or the transfer
    is latency, not bandwidth (a tiny model); either way its network remedies start there."""
    if not fit.params_known:
        return []
    floor = bound("busbw_GBps").low
    levels = ["intra", "inter"] if fit.multi_node_measured else ["intra"]
    slow = [f"{level}-{words.server} {link_GBps(fit.busbw_GBps(level))}" for level in levels
            if fit.busbw_GBps(level) < floor]
    if not slow:
        return []
    return [f"--params {params:g}: the fitted links move the gradients at {', '.join(slow)}, "
            f"below the {floor:g} GB/s floor of any link, where the model holds them (and the "
            "network remedies start): check --params is the model's parameter count (e.g. 340e6, "
            "not 340)"]


# Efficiency against the first run above these (per sample, so per-device batches may differ):
# a note past the first (cache effects, a smaller per-device footprint give some), a refusal past
# the second, which no same job reaches (the rows' numbers or batches are wrong)
SUPERLINEAR_NOTE, SUPERLINEAR_REFUSED = 1.10, 2.0


def _superlinear(runs, sc, words: Nouns) -> str:
    """A note where a run scales past linear against the first; ScalesimError where far past."""
    worst = int(np.argmax(sc.efficiency))
    eff = float(sc.efficiency[worst])
    if eff <= SUPERLINEAR_NOTE:
        return ""
    said = (f"the run at {words.count(int(runs.devices[worst]))} is {_pct(eff)} efficient "
            f"against the one at {words.count(int(runs.devices[0]))} (throughput "
            f"{float(sc.samples_per_s[worst] / sc.samples_per_s[0]):.3g}x on "
            f"{float(runs.devices[worst] / runs.devices[0]):.3g}x the {words.devices})")
    if eff > SUPERLINEAR_REFUSED:
        raise ScalesimError(f"{said}: no job scales that far past linear; check its step_time_s "
                            "or samples_per_s and its batch columns (micro_batch, accumulation)")
    return (f"{said}: past linear, which cache effects or a smaller per-{words.device} footprint "
            "can give; the diagnosis reads the runs as the same job at the same work per "
            f"{words.device}")


def _parts_lost(step, work, comm, wait, strag) -> tuple[dict, dict]:
    """Each part of the step per sample of work, run by run (exposed communication, data stall,
    straggler wait, and compute: the rest of the measured step), and the share of the largest
    run's time each loses: its growth per sample from the first run to the largest (none where it
    shrinks), over the largest run's time per sample. Keys in the order the findings are made."""
    compute = np.maximum(step - comm - wait - strag, 0.0)
    per = {"comm": comm / work, "data": wait / work, "straggler": strag / work,
           "compute": compute / work}
    growth = {k: max(float(v[-1] - v[0]), 0.0) for k, v in per.items()}
    t_last = float(step[-1] / work[-1])
    return per, {k: g / t_last for k, g in growth.items()}


PART_WORDS = {"comm": "communication", "data": "input pipeline", "straggler": "stragglers",
              "compute": "compute"}


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _undetermined_cause(fit, step, work, measured: dict, shares: dict, parts: dict,
                        words: Nouns = GPU_NOUNS) -> tuple[list[str], list[str]]:
    """The causes the runs cannot rule out in place of the part that loses most at the fit
    (``shares``, the parts' keys to their findings' in ``parts``), and the evidence that says so.

    A part the runs do not measure (``measured``: each part's measured seconds per run, None
    where the fitted model gives it) is the fitted model's, so it moves with every fitted
    parameter, those the runs do not show too (``fit.not_shown``: held at a start value that no
    run chose). Each of those is set to either end of the range the runs allow it
    (``fit_runs.held_ends``, its 95 % profile-likelihood interval); where another part then loses
    most, that part's cause is a rival: which cause it is rests on a parameter the runs do not
    determine. ([], []) where none is held or every end keeps the cause."""
    from scalesim.fit_runs import drawn_fit, held_ends

    top = max(shares, key=shares.get)
    rivals, lines = [], []
    rows = held_ends(fit)
    for i, (name, (low, high)) in enumerate(fit.held_range_x.items()):
        at_ends = []
        for x in rows[2 * i: 2 * i + 2]:
            b = drawn_fit(fit, x).breakdown
            model = {"comm": b.exposed_comm_s, "data": b.data_stall_s, "straggler": b.straggler_s}
            given = {k: model[k] if measured[k] is None else measured[k] for k in model}
            at_ends.append(_parts_lost(step, work, given["comm"], given["data"],
                                       given["straggler"])[1])
        tops = [max(end, key=end.get) for end in at_ends]
        if all(t == top for t in tops):
            continue
        rivals += [parts[t] for t in tops if t != top and parts[t] not in rivals]
        involved = [top] + [t for t in dict.fromkeys(tops) if t != top]

        def lost(end, involved=involved):
            return " / ".join(_pct(end[k]) for k in involved)

        j = fit.fitted.index(name)
        bottom = low <= fit.lower[j] + 1e-9  # the fit's bound: as good as none of it
        span = (f"anything up to {_ms(from_fitted_x(name, high))}" if bottom else
                f"anything from {_ms(from_fitted_x(name, low))} to {_ms(from_fitted_x(name, high))}")
        lines.append(
            f"which part loses most rests on the {TIED_WORDS[name]}, which no run shows (held at its "
            f"start value, {_ms(fit.values[name])}): {span} fits the runs, the other parts as "
            f"fitted; {' / '.join(PART_WORDS[k] for k in involved)} lose {lost(shares)} of the "
            f"largest run's time as fitted, {lost(at_ends[0])} "
            + ("with it near 0" if bottom else f"at {_ms(from_fitted_x(name, low))}")
            + f", {lost(at_ends[1])} at {_ms(from_fitted_x(name, high))}")
    return rivals, lines


def diagnose_runs(runs, params: float | None = None, wire_bytes_per_param: float = 4.0,
                  critical_batch: float | None = None, extrapolate_to: list[int] | None = None,
                  transformer=None, recompute_style: str = DEFAULT_RECOMPUTE_STYLE,
                  tp_overlap: bool = False, exchange=None) -> Report:
    """Fit, find the knee, name the cause and the first remedy for measured ``runs``.

    ``transformer`` (``scalesim.runs_model.RunsModel``): the transformer the runs trained and their
    GPU; the fitted profile then carries the shape, so its remedies are predicted by the layout
    model and "split the model" can apply (docs/model.md §22). Its parameter count stands in
    for ``params`` when that is not given. ``recompute_style``: how the runs' framework reruns
    the forward under full or selective recompute (``layout.RECOMPUTE_STYLES``), for the
    layouts of the split-the-model remedy; it needs ``transformer``. ``tp_overlap``: the runs' framework
    overlaps the tensor-parallel collectives with the matmuls (``ScenarioLayout.tp_overlap``),
    for that remedy's layouts with tp > 1 (the runs themselves have no tensor parallelism); it
    needs ``transformer`` too. ``exchange`` (``fit_runs.RunsExchange``, None: DDP): how the runs
    exchanged over their data-parallel ranks (ZeRO stage, framework, gradient sync); the fit,
    the memory and every remedy start from it (FSDP's blocks: the transformer's layers)."""
    from scalesim.bounds import check_number, check_values
    from scalesim.fit_runs import (
        DDP_EXCHANGE,
        RunsExchange,
        drawn_fit,
        extrapolate,
        fit_runs,
        fitted_profile,
        held_ends,
        plausible_draws,
        splits_by_accumulation,
    )
    from scalesim.runs import Runs, scaling, thin

    runs = require_model(runs, Runs, "runs")
    check_number("critical_batch", critical_batch, "critical_batch", optional=True)
    if extrapolate_to is not None:
        extrapolate_to = [int(p) for p in check_values("devices", extrapolate_to, "extrapolate_to")]

    if (early_stop_of(recompute_style) or op_sac_of(recompute_style)) and transformer is None:
        raise ScalesimError(f"recompute_style {recompute_style}: it applies to the runs' "
                            "transformer (diagnose --workload); give the workload or drop it")
    if not isinstance(tp_overlap, bool | np.bool_):
        raise ScalesimError(f"tp_overlap: expected true or false, got {tp_overlap!r}")
    if tp_overlap and transformer is None:
        raise ScalesimError("tp_overlap: it applies to the split layouts of the runs' "
                            "transformer (diagnose --workload); give the workload or drop it")
    runs = thin(runs)
    measured = runs  # as given: devices and servers (the model split's, where the runs split it)
    split_note = ""
    if runs.replica_devices > 1:  # fitted as data-parallel runs of model replicas
        runs, extrapolate_to, split_note = _as_replicas(runs, transformer, extrapolate_to,
                                                        tp_overlap, recompute_style)
    if transformer is not None and nouns_for(runs.device_name).cpu:
        raise ScalesimError(f"the runs ran on CPU processes (device '{measured.device_name}'); "
                            "--workload predicts their transformer on a GPU (--gpu): drop "
                            "--workload, or the runs' device column")
    if transformer is not None and params is None:
        params = transformer.params
    if runs.replica_split:  # no fitted micro-step of theirs is held to the peak (below)
        refuse_beyond_peak(measured, transformer)
    mfu, mfu_note = runs_mfu(measured, transformer)
    if transformer is not None and runs.replica_split:  # its parameters and MFU only
        transformer = None
        split_note += (" --workload gives the runs' parameter count and MFU; the remedies are "
                       "the replicas' (which other split is faster is scalesim plan "
                       "--workload's question).")
    exchange = DDP_EXCHANGE if exchange is None else require_model(exchange, RunsExchange, "exchange")
    if transformer is not None:
        exchange = replace(exchange, blocks=transformer.shape.layers)
    exchange, extrapolate_to, shard_note = _runs_shard_group(runs, measured, exchange,
                                                             extrapolate_to)
    sc = scaling(runs)
    superlinear_note = _superlinear(runs, sc, words=nouns_for(runs.device_name))
    fit = fit_runs(runs, params, wire_bytes_per_param, exchange)
    model = fit.breakdown
    step = runs.step_time_s
    work = runs.micro_batch * runs.accumulation

    comm = runs.optional("comm_s")
    comm_src = "measured" if comm is not None else "fitted model"
    comm = comm if comm is not None else model.exposed_comm_s
    wait = runs.optional("data_wait_s")
    wait_src = "measured" if wait is not None else "fitted model"
    wait = wait if wait is not None else model.data_stall_s
    if fit.rank_times_measured:
        strag = np.array([float(np.max(r.rank_step_times_s) - np.median(r.rank_step_times_s))
                          if r.rank_step_times_s else 0.0 for r in runs.rows])
        strag_src = "measured rank times"
    else:
        strag, strag_src = model.straggler_s, "fitted model"
    per, shares = _parts_lost(step, work, comm, wait, strag)
    compute = per["compute"] * work

    knee = find_knee(runs.devices, runs.nodes, sc.efficiency, compute, comm, wait, strag, work)
    words = nouns_for(runs.device_name)
    eff_last = float(sc.efficiency[-1])
    share_of_step = {k: v * work / step for k, v in per.items()}

    findings: list[Finding] = []
    # Communication: boundary or steady growth.
    single = (runs.nodes == 1) & (runs.devices > 1)
    single_server = np.nonzero(runs.nodes == 1)[0]
    # A boundary needs a multi-server run right after the last single-server one.
    crossing = bool(single_server.size and single_server[-1] + 1 < len(runs.rows))
    comm_lines = [f"exposed communication {_pct(share_of_step['comm'][0])} of the step at "
                  f"{words.count(int(runs.devices[0]))} -> {_pct(share_of_step['comm'][-1])} at "
                  f"{words.count(int(runs.devices[-1]))} ({comm_src}): "
                  + _series([_pct(s) for s in share_of_step["comm"]])]
    boundary = False
    if crossing:
        last_single = int(single_server[-1])
        first_multi = last_single + 1
        eff_in = float(sc.efficiency[last_single])
        eff_out = float(sc.efficiency[first_multi])
        drops = -np.diff(sc.efficiency)
        in_server_drops = drops[:last_single] if last_single > 0 else np.array([0.0])
        boundary = bends_at_boundary(sc.efficiency, last_single)
        inside = words.count(int(runs.devices[last_single]))
        largest = _pct(max(float(np.max(in_server_drops)), 0.0))
        if runs.replica_split:  # the servers the data-parallel exchange spans, not the job's
            comm_lines.insert(0, f"efficiency {_pct(eff_in)} at {inside}, their data-parallel "
                              f"exchange inside one {words.server}; {_pct(eff_out)} at "
                              f"{words.count(int(runs.devices[first_multi]))}, the exchange "
                              f"across {runs.nodes[first_multi]} {words.servers} (largest drop "
                              f"with it inside a {words.server}: {largest})")
        else:
            comm_lines.insert(0, f"efficiency {_pct(eff_in)} at {inside} "
                              f"in one {words.server}, {_pct(eff_out)} at "
                              f"{whole(runs.devices[first_multi])} on {runs.nodes[first_multi]} "
                              f"{words.servers} (largest drop inside a {words.server}: "
                              f"{largest})")
        if np.any(single) and "inter_transfer_s" in fit.fitted:
            inter_ms = _ms(fit.values["inter_transfer_s"])
            if "intra_transfer_s" in fit.at_bound or "intra_transfer_s" not in fit.fitted:
                comm_lines.append(f"fitted gradient transfer across {words.servers} {inter_ms}; "
                                  f"inside a {words.server} too fast to measure")
            else:
                comm_lines.append(_link_ratio_words(fit, words, inter_ms))
    findings.append(finding("inter_server" if boundary else "comm_growth", shares["comm"],
                            comm_lines, words))
    # Input pipeline.
    thr = runs.samples_per_s
    findings.append(finding("input_pipeline", shares["data"], [
        f"data stall {_pct(share_of_step['data'][0])} of the step at "
        f"{words.count(int(runs.devices[0]))} "
        f"-> {_pct(share_of_step['data'][-1])} at {words.count(int(runs.devices[-1]))} ({wait_src})",
        f"throughput {thr[0]:.4g} -> {thr[-1]:.4g} samples/s for {runs.devices[-1] / runs.devices[0]:g}x "
        f"the {words.devices}",
    ], words))
    # Stragglers vs one slow device.
    # ranks are devices' (a split model's too: its replica is the device's data-parallel rank)
    device_words = measured_nouns(runs.device_name)
    slow_rank, slow_factor, rank_lines = _rank_pattern(measured, device_words)
    strag_lines = [f"straggler wait {_pct(share_of_step['straggler'][0])} -> "
                   f"{_pct(share_of_step['straggler'][-1])} of the step ({strag_src})"] + rank_lines
    slow_replica = slow_rank
    if slow_rank is not None:
        of = ""
        if runs.replica_split:  # the model's slow device is that rank's replica
            slow_replica = replica_of_rank(slow_rank, measured.model_split, int(runs.devices[-1]))
            of = f" (of replica {slow_replica} at {words.count(int(runs.devices[-1]))})"
        strag_lines.insert(0, f"rank {slow_rank} is the slowest in every run{of}, up to "
                              f"{slow_factor:.2f}x the others")
    elif rank_lines:
        strag_lines.insert(0, "the slowest rank changes from run to run: spread, not one "
                              f"{device_words.device}")
    findings.append(finding("slow_device" if slow_rank is not None else "stragglers",
                            shares["straggler"], strag_lines, words))
    # Compute per sample.
    cps = compute / work
    compute_lines = [f"compute per sample per {words.device} {cps[0] * 1e3:.3g} -> "
                     f"{cps[-1] * 1e3:.3g} ms"
                     + (f" ({cps[-1] / cps[0]:.2f}x)" if cps[0] > 0 else "")]  # no ratio to 0
    if runs.strong_scaling:
        compute_lines.insert(0, f"strong scaling: per-{words.device} batch {work[0]:g} -> {work[-1]:g} "
                                "samples per step")
        if "overhead_s" in fit.fitted:
            v = fit.values
            compute_lines.append(f"fitted fixed cost {_ms(v['overhead_s'])} per micro-step vs "
                                 f"{_ms(v['per_sample_s'] * runs.micro_batch[-1])} of per-sample "
                                 f"work at {words.count(int(runs.devices[-1]))}")
        if runs.bubble_micro_steps:  # fewer micro-batches a replica: the bubble's share grows
            compute_lines.append(_bubble_share_words(runs.bubble_micro_steps, runs.accumulation))
    findings.append(finding("small_work" if runs.strong_scaling else "compute", shares["compute"],
                            compute_lines, words))

    findings_of_parts = list(findings)  # comm, data, straggler, compute: as ``shares``
    findings.sort(key=lambda f: -f.share)
    speedup_ratio = float(thr[-1] / thr[0])
    lb = _large_batch(runs, critical_batch, speedup_ratio, words)
    if lb is not None:
        r, lines = lb
        lb_finding = finding("large_batch", 1.0 - r, lines + [
            f"systems efficiency at {words.count(int(runs.devices[-1]))}: {_pct(eff_last)}"],
                             words)
        if r < GOOD_EFFICIENCY and r < eff_last:
            findings.insert(0, lb_finding)
        else:
            findings.append(lb_finding)
    if findings[0].key != "large_batch" and eff_last >= GOOD_EFFICIENCY:
        findings.insert(0, finding("none", 0.0, [
            f"efficiency {_pct(eff_last)} at {words.count(int(runs.devices[-1]))} "
            f"(speed-up {sc.speedup[-1]:.2f}x)"], words))
    cause, others = findings[0], [f for f in findings[1:] if f.share >= OTHER_CAUSE_SHARE]
    parts = dict(zip(shares, (f.key for f in findings_of_parts), strict=True))
    if cause.key == parts[max(shares, key=shares.get)]:  # a part of the step: does it rest on
        measured_parts = {"comm": runs.optional("comm_s"), "data": runs.optional("data_wait_s"),
                          "straggler": strag if fit.rank_times_measured else None}
        rivals, lines = _undetermined_cause(fit, step, work, measured_parts, shares, parts, words)
        if rivals:  # a parameter the runs do not show? Then they cannot tell it from its rivals
            cause.rivals = rivals
            cause.label = (f"{cause.label}, or "
                           + ", or ".join(_lower_first(finding(k, 0.0, [], words).label)
                                          for k in rivals)
                           + ": these runs cannot tell which")
            cause.evidence = lines + cause.evidence

    b_noise = critical_batch or _critical_batch_from_steps(runs)
    fitted = {"name": f"fitted to {runs.source}", "critical_batch_size": b_noise,
              "slow_rank": slow_replica, "recompute_style": recompute_style}
    profile, scenario, at = fitted_profile(fit, runs, **fitted, model=transformer)
    ran_note = peak_note = ""
    gpu_memory_bytes = None  # the GPU's, where memory is treated as unknown (below)
    if transformer is not None:
        peak_note = _check_runs_model(profile, scenario, runs, transformer, fit)
        refuse_beyond_peak(measured, transformer)  # unpinned: the samples/s still are
        ran_note = _ran_beyond_memory(profile, scenario, at, transformer, exchange)
        if ran_note:  # they ran: the estimate, not the runs, is off; judge no remedy by it
            gpu_memory_bytes = transformer.memory_bytes
            transformer = replace(transformer, memory_bytes=None)
            profile, scenario, at = fitted_profile(fit, runs, **fitted, model=transformer)
    decisive = least_decisive_gain(profile, scenario)
    overlap_note = _overlap_rounding_note(profile, scenario, fit, decisive, words)

    def remedies_of(one_fit, split_layout=None, batch_factors=SMALLER_BATCH_FACTORS):
        """The first remedy, all remedies the model predicts from ``one_fit``'s parameters and
        the smaller batch's factor (None: none). ``split_layout``: the layout splitting the model
        tries (None: the planner's best); ``batch_factors``: the smaller batches tried."""
        prof, scn, at = fitted_profile(one_fit, runs, **fitted, model=transformer)
        first, remedies = model_remedies(prof, scn, at, (cause.key, *cause.rivals),
                                         nominal_links=not fit.params_known,
                                         split_tp_overlap=bool(tp_overlap),
                                         decisive_gain=decisive, split_layout=split_layout)
        if _parameters_alone(prof, remedies, exchange, gpu_memory_bytes, transformer):
            first = first_remedy(remedies, (cause.key, *cause.rivals), decisive)
        factor = None
        if b_noise is not None and remedies:
            smaller = smaller_batch_remedy(prof, scn, at, b_noise, batch_factors)
            if smaller is not None:
                smaller, factor = smaller
                remedies.insert(_ranked_position(remedies, smaller), smaller)
                if cause.key == "large_batch" and smaller.helps and shown_gain(smaller) >= decisive:
                    first = smaller
        return first, remedies, factor

    try:
        first, remedies, factor = remedies_of(fit)
    except ScalesimError as exc:  # e.g. a global batch the model cannot split evenly
        first, remedies, factor = None, [], None
        fit.notes.append(f"remedies not predicted: {exc}")
    if remedies:  # each draw makes the changes the fit's own remedies make (split, batch)
        split_layout = next((r.split_layout for r in remedies if r.split_layout), None)
        factors = (factor,) if factor is not None else SMALLER_BATCH_FACTORS
        count = REMEDY_BAND_DRAWS if transformer is None else LAYOUT_BAND_DRAWS
        drawn, ends = [], []
        for rows, into in ((plausible_draws(fit, runs)[0][1:count + 1], drawn),  # [0]: the fit
                           (held_ends(fit), ends)):
            for x in rows:
                try:
                    into.append(remedies_of(drawn_fit(fit, x), split_layout, factors)[1])
                except ScalesimError:  # parameters the model cannot predict from: not banded
                    continue
        set_gain_bands(remedies, drawn, ends)
    extra = extrapolate(fit, runs, extrapolate_to)

    table = []
    for i, r in enumerate(measured.rows):
        replicas = {"replicas": int(runs.devices[i])} if runs.replica_split else {}
        table.append({
            "devices": r.devices, "nodes": r.nodes, **replicas, "samples_per_s": float(thr[i]),
            "step_time_s": float(step[i]), "speedup": float(sc.speedup[i]),
            "efficiency": float(sc.efficiency[i]), "comm_share": float(share_of_step["comm"][i]),
            "data_share": float(share_of_step["data"][i]),
            "straggler_share": float(share_of_step["straggler"][i]),
            "model_step_time_s": float(model.step_time_s[i]),
            "residual": float(fit.residuals_rel[i]),
        })
    v = fit.values
    fit_info = {
        "parameters": {k: float(val) for k, val in v.items()},
        "fitted": list(fit.fitted),
        "at_bound": list(fit.at_bound),
        "not_shown": list(fit.not_shown),
        "stderr_rel": {k: fit.stderr(k) for k in fit.fitted if k not in ABSOLUTE_SE},
        # overlap and jitter_cv are fitted as they are (not in log): their errors are absolute
        "stderr_abs": {k: fit.stderr(k) for k in fit.fitted if k in ABSOLUTE_SE},
        "intra_busbw_GBps": fit.busbw_GBps("intra") if fit.params_known else None,
        "inter_busbw_GBps": (fit.busbw_GBps("inter") if fit.params_known
                             and fit.multi_node_measured else None),
        "rmse_rel": fit.rmse_rel,
        "noise_rel": fit.noise_rel,
        # held transfer times the runs bound from above (``fit_runs.held_upper_bounds``), s
        "held_at_most_s": dict(fit.held_at_most_s),
        # of each held parameter, the range the runs allow it, the others as fitted
        # (``fit_runs.held_ranges``: its 95 % profile-likelihood interval), [low, high]
        "held_range": {k: [from_fitted_x(k, lo), from_fitted_x(k, hi)] for k, (lo, hi) in
                       fit.held_range_x.items()},
        "bubble_micro_steps": runs.bubble_micro_steps,  # a step: k + this stage micro-steps
        "loader_limiting": bool(np.any(model.data_stall_s > 0)),
    }
    details = {
        "knee": None if knee is None else {
            "devices_before": knee.devices_before, "devices_after": knee.devices_after,
            "efficiency_drop": knee.efficiency_drop, "crosses_boundary": knee.crosses_boundary,
            "cause": knee.cause, "label": knee.label},
        "fit": fit_info,
        "extrapolation": [asdict(e) for e in extra],
        "remedies_at_devices": at,
        **({"model_split": measured.model_split, "replica_devices": measured.replica_devices}
           if runs.replica_split else {}),
        "exchange": exchange.described(),
        "strong_scaling": runs.strong_scaling,
        # each run's model FLOPs utilisation where --workload and its GPU's peak are known
        "mfu": mfu,
        # the fitted model, so the planner can open it (scalesim.app.diagnose_page)
        "fitted_profile": profile.model_dump(mode="json"),
        "fitted_scenario": scenario.model_dump(mode="json"),
    }
    if runs.replica_split:  # the knee and extrapolation in devices too, as the table
        _with_devices(details, measured.replica_devices, measured.devices_per_node)
    notes = ([n for n in (superlinear_note, split_note, shard_note) if n]
             + _parts_over_the_step(share_of_step, runs.devices, fit, words) + list(runs.notes)
             + fit.notes + _implausible_links(fit, params, words)
             + [n for n in (peak_note, ran_note, mfu_note, overlap_note) if n])
    if extra and splits_by_accumulation(runs):
        per = "replica" if runs.replica_split else words.device
        notes.append(f"the runs kept a micro-batch of {whole(runs.micro_batch[-1])} per {per} "
                     "and ran fewer micro-steps as they grew: so does the extrapolation, down to "
                     "one micro-step (then the micro-batch shrinks); the fitted scenario (the "
                     "planner's link) holds the largest run's "
                     f"{whole(runs.accumulation[-1])} micro-steps at its global batch instead, "
                     "as a scenario splits a fixed global batch, so at other counts it changes "
                     "the micro-batch where the runs kept it")
    if exchange.sharded:
        notes.append(f"the runs exchanged as {exchange.label()}: the fit, the memory and every "
                     "remedy start from it (docs/model.md §4)")
    if not fit.params_known:
        notes.append("no --params: link speeds are reported as gradient transfer times; give "
                     "--params (model parameters) for bandwidths in GB/s")
    if profile.workload.transformer is not None:
        notes.append(f"remedy gains are the layout model's predictions at the largest run for "
                     f"the shape of --workload {transformer.name} on {transformer.gpu}; "
                     + profile.notes[0])
    else:
        notes.append(f"remedy gains are model predictions at the largest run; {words.memory} is "
                     "unknown, so check that bigger batches fit")
    for r in remedies:
        r.caveat = _remedy_caveat(fit, r, bool(runs.nodes[-1] > 1), words) or _band_caveat(r)
    return Report("runs", runs.source, cause, others, first, remedies, table, details, notes,
                  decisive_gain=decisive)


def _overlap_rounding_note(profile, scenario, fit, decisive: float,
                           words: Nouns = GPU_NOUNS) -> str:
    """A note where the remedies' model misses the fitted largest run by the model's median
    error or more: the fit blends overlap on and off by its fitted share, a scenario runs one of
    the two (``fit_runs.fitted_profile``: on from a share of one half), so with a share well
    inside (0, 1) the step every remedy is measured against is not the fit's. '' otherwise, or
    where the model cannot predict the scenario (the remedies then say so)."""
    from scalesim.predict import predict

    phi = float(fit.values["overlap"])
    fitted = float(fit.breakdown.step_time_s[-1])
    try:
        row = predict(profile, scenario)[0]
        other = predict(profile, scenario.model_copy(update={"overlap": not scenario.overlap}))[0]
    except ScalesimError:
        return ""
    off = row.step_time_s / fitted - 1.0
    low, high = sorted((row.step_time_s, other.step_time_s))
    # the blend of the two cases is what the fit's step is: a miss from elsewhere is not this
    between = low * (1 - 1e-6) <= fitted <= high * (1 + 1e-6)
    if not fitted > 0 or abs(off) < decisive or not between:
        return ""
    case = ("on: the overlap remedy finds nothing left to hide" if scenario.overlap
            else "off")
    return (f"the fit overlaps {phi:.0%} of the exchange with backward, a scenario all of it or "
            f"none: the remedies run the largest run at {_ms(row.step_time_s)} a step against the "
            f"fit's {_ms(fitted)} ({off:+.0%}), with overlap {case}; each remedy's gain is "
            "measured from that step, so read them with that error; a profiler trace of one step "
            "measures the overlap (scalesim diagnose --trace)")


def runs_mfu(runs, transformer) -> tuple[list[dict] | None, str]:
    """(each run's {"devices", "mfu"}, the report's line) of ``runs`` (as measured: their own
    devices) that trained ``transformer`` (``runs_model.RunsModel``): model FLOPs a token
    (3 x forward, no recompute, attention without causal halving: Narayanan et al. 2021 Eq. 3,
    ``TransformerShape.model_flops_per_token``, as predict's and plan's ``mfu``) x seq_len
    tokens a sample x samples/s, over devices x the GPU's dense 16-bit peak. (None, '') without
    a transformer; (None, why) where the GPU's peak is not listed."""
    if transformer is None:
        return None, ""
    if transformer.peak_tflops is None:
        return None, (f"MFU not computed: no dense 16-bit peak listed for {transformer.gpu} "
                      "(name the GPU as the presets do, --gpu)")
    shape = transformer.shape
    per_sample = shape.model_flops_per_token() * shape.seq_len
    peak_s = runs.devices * transformer.peak_tflops * 1e12  # FLOP/s of each run's devices
    mfu = runs.samples_per_s * per_sample / peak_s
    rows = [{"devices": int(d), "mfu": float(u)} for d, u in zip(runs.devices, mfu, strict=True)]
    ends = (f"{mfu[0]:.1%} at {whole(runs.devices[0])}" if len(mfu) == 1 else
            f"{mfu[0]:.1%} at {whole(runs.devices[0])} -> {mfu[-1]:.1%} at "
            f"{whole(runs.devices[-1])}")
    words = measured_nouns(runs.device_name)
    return rows, (f"model FLOPs utilisation (MFU) {ends} {words.devices}: {transformer.name}'s "
                  f"{shape.model_flops_per_token() / 1e9:.4g} GFLOP a token (3 x forward, no "
                  f"recompute; Narayanan et al. 2021), {whole(shape.seq_len)} tokens a sample, "
                  f"against {transformer.gpu}'s dense 16-bit peak of "
                  f"{transformer.peak_tflops:g} TFLOP/s (fp8 runs: against the 16-bit peak "
                  "still)")


def refuse_beyond_peak(runs, transformer) -> None:
    """Refuse, in one line, ``runs`` (as measured) whose samples/s need ``transformer``'s weight
    matmuls alone (6 FLOPs a weight a token; the attention core left out: a causal kernel runs
    half what MFU counts) above its GPU's datasheet peak. Runs that split the model have no
    fitted micro-step to hold to the peak (``_check_runs_model``), so this is their check;
    data-parallel runs get it after that one, whose band can leave a fitted micro-step
    unpinned while the measured samples/s are not (llama3-8b on A100s at 868 ms a sample had
    been reported at an MFU of 174 %, where the same runs with a tp column were refused)."""
    if transformer is None or transformer.peak_tflops is None:
        return
    shape = transformer.shape
    peak_s = runs.devices * transformer.peak_tflops * 1e12  # FLOP/s of each run's devices
    matmuls = runs.samples_per_s * 6.0 * shape.matmul_weights() * shape.seq_len / peak_s
    if np.any(matmuls > 1.0):
        i = int(np.argmax(matmuls))
        raise ScalesimError(
            f"the runs train {runs.samples_per_s[i]:.4g} samples/s on {whole(runs.devices[i])} "
            f"{measured_nouns(runs.device_name).devices}, faster than {transformer.name} "
            f"({shape.words()}) can on {transformer.gpu}: its weight matmuls alone need "
            f"{matmuls[i]:.0%} of the {transformer.peak_tflops:g} TFLOP/s datasheet peak; "
            "describe the runs' own model (a workload JSON with their sequence length and "
            "sizes) and GPU")


def _as_replicas(runs, transformer, extrapolate_to: list[int] | None, tp_overlap: bool = False,
                 recompute_style: str = DEFAULT_RECOMPUTE_STYLE):
    """(replica runs, the extrapolation's replica counts, the report's note) of ``runs`` that
    split the model (``runs.replica_runs``). ``extrapolate_to``: device counts, each a whole
    number of replicas. The runs' transformer (``transformer``) gives their parameter count
    and MFU only: the layout model predicts data-parallel runs, so the options of its layouts
    (``tp_overlap``, ``recompute_style``) are refused."""
    from scalesim.fit_runs import unfilled_servers
    from scalesim.runs import replica_runs

    replicas = replica_runs(runs)
    split, m = replicas.replica_split, runs.replica_devices
    words = nouns_for(runs.device_name)
    if transformer is not None and (tp_overlap or recompute_style != DEFAULT_RECOMPUTE_STYLE):
        flag = "--tp-overlap" if tp_overlap else f"--recompute-style {recompute_style}"
        raise ScalesimError(f"the runs split the model ({split}); {flag} is for the layouts of "
                            "the split-the-model remedy, which runs fitted as model replicas do "
                            "not get (another split is scalesim plan --workload's question): "
                            f"drop {flag}")
    if extrapolate_to is not None:
        odd = [p for p in extrapolate_to if p % m]
        if odd:
            raise ScalesimError(f"extrapolate to {whole(odd[0])} {words.devices}: not a whole "
                                f"number of model replicas of {words.count(m)} ({split}); give "
                                f"multiples of {m}")
        g = replicas.devices_per_node  # replicas a server holds, as the fit places them
        uneven = [p for p in extrapolate_to if unfilled_servers(p // m, g)]
        if uneven:
            raise ScalesimError(f"extrapolate to {whole(uneven[0])} {words.devices} "
                                f"({whole(uneven[0] // m)} replicas): its data-parallel groups "
                                f"do not fill whole {words.servers} at {g} replicas a "
                                f"{words.server}, as the runs placed them; give a multiple of "
                                f"{whole(m * g)} {words.devices}")
        extrapolate_to = [p // m for p in extrapolate_to]
    first, last = runs.rows[0], runs.rows[-1]
    spans = _replica_servers(runs.model_split, last.replicas, runs.devices_per_node)
    note = (f"the runs split the model ({split}): one model replica is {words.count(m)}, and the "
            f"fit, the knee, the remedies and the extrapolation count replicas (the data-parallel "
            f"degree), {whole(first.replicas)} -> {whole(last.replicas)} for {whole(first.devices)} "
            f"-> {words.count(last.devices)}; the findings' and the fit's {words.servers} are "
            "those one data-parallel group spans (tp innermost, pp outermost), the table's and "
            f"the extrapolation's the job's. Tensor-, context- and pipeline-parallel traffic is "
            "part of a replica's compute, so a change in it between runs reads as compute, and a "
            "link's fitted bandwidth is a replica's, the sum of its "
            f"{words.devices}' concurrent exchanges")
    if runs.model_split["pp"] > 1:
        note += "; " + pipeline_bubble_words(next((r for r in runs.rows if r.schedule), first))
    if replicas.nic_servers_per_node > 1:
        n = replicas.nic_servers_per_node
        note += (f"; a replica spans {words.count(spans, 'server')} and the replicas of one of "
                 f"the fit's {words.servers} span {n}: a faster network is priced on all {n} "
                 f"{words.servers}' NICs")
    note += ' (docs/diagnose.md "Runs that split the model")'
    return replicas, extrapolate_to, note


def pipeline_bubble_words(row) -> str:
    """How the fit charges the fill and drain of ``row``'s pipeline (a ``runs.RunRow`` with
    pp > 1): its schedule, as given or assumed, and the micro-step times it idles a step."""
    v = row.virtual_stages
    schedule = row.pipeline_schedule
    given = "" if row.schedule else ", assumed: no schedule column"
    chunks = f" x {v} chunks" if schedule == "interleaved" else ""
    rule = {"1f1b": "(pp - 1)", "gpipe": "(pp - 1)", "interleaved": "(pp - 1)/v",
            "zb": "a third of (pp - 1)"}[schedule]
    return (f"the replicas' pipeline ({row.pp} stages{chunks}, schedule {schedule}{given}) idles "
            f"{rule} = {row.pipeline_bubble:.3g} micro-steps of one stage a step in fill and drain "
            "(Narayanan et al. 2021 §2.2; zero bubble: Qi et al. 2023), so a step of k "
            f"micro-batches is fitted as k + {row.pipeline_bubble:.3g} stage micro-steps and "
            "more micro-batches (accumulation) shrink the bubble's share")


def _bubble_share_words(bubble: float, accumulation) -> str:
    """The pipeline's fill and drain as a share of a replica's compute, ``bubble / (k +
    bubble)`` stage micro-steps, at the first and the last run's ``k`` (micro-batches a step)."""
    k0, k1 = float(accumulation[0]), float(accumulation[-1])
    return (f"the pipeline's fill and drain, {bubble:.3g} stage micro-steps a step: "
            f"{_pct(bubble / (k0 + bubble))} of a replica's compute at {k0:g} micro-batches -> "
            f"{_pct(bubble / (k1 + bubble))} at {k1:g}")


def _runs_shard_group(runs, measured, exchange, extrapolate_to: list[int] | None):
    """(exchange, extrapolation counts, note) of ``runs`` (replicas where ``measured`` split
    the model) under ``exchange``'s hybrid shard group: given in ranks of dp x cp, so in
    replicas of a split with cp > 1 it is ``shard_group / cp``; at or above every run's
    data-parallel ranks each run shards fully (a note says so); refused in one line where it
    does not divide a run's, or an extrapolation count's (a default count that cannot run is
    left out, said in the note)."""
    from scalesim.fit_runs import default_extrapolation_devices

    words, device_words, note = nouns_for(runs.device_name), measured_nouns(runs.device_name), ""
    cp = measured.model_split["cp"] if runs.replica_split else 1
    if exchange.shard_group and cp > 1:
        if exchange.shard_group % cp:
            raise ScalesimError(f"shard group {exchange.shard_group} (ranks of dp x cp) is not a "
                                f"whole number of replicas of cp {cp}; give a multiple of {cp}")
        exchange = replace(exchange, shard_group=exchange.shard_group // cp)
    if exchange.shard_group and exchange.shard_group >= int(runs.devices.max()):
        note = (f"shard group {exchange.shard_group * cp} at or above every run's data-parallel "
                "ranks: each run sharded over all of them (full sharding), as the fit and the "
                "remedies do; extrapolations beyond it shard hybrid")
    for r in runs.rows:  # the fit's devices: its data-parallel ranks (replicas where split)
        if why := exchange.run_problem(r.devices):
            raise ScalesimError(f"the run on {words.count(r.devices)}: {why}")
    if exchange.shard_group:
        m = measured.replica_devices
        for p in extrapolate_to or []:
            if why := exchange.run_problem(p):
                raise ScalesimError(f"extrapolate to {device_words.count(p * m)}: {why}")
        if extrapolate_to is None:
            wanted = default_extrapolation_devices(runs)
            extrapolate_to = [p for p in wanted if not exchange.run_problem(p)]
            if len(extrapolate_to) < len(wanted):
                left = [p * m for p in wanted if p not in extrapolate_to]
                note = "; ".join(n for n in (note, (
                    f"extrapolation to {', '.join(map(whole, left))} "
                    f"{device_words.devices} left out: shard group "
                    f"{exchange.shard_group * cp} does not divide them")) if n)
            extrapolate_to = extrapolate_to or None
    return exchange, extrapolate_to, note


def _replica_servers(split: dict[str, int], replicas: int, devices_per_node: int) -> int:
    """Servers of ``devices_per_node`` devices that one model replica's devices sit in, for a
    job split as ``split`` (tp, pp, cp) over ``replicas`` (``layout.replica_servers``)."""
    return replica_servers(split["tp"], split["cp"], split["pp"], replicas, 1, devices_per_node)


def _with_devices(details: dict, replica_devices: int, devices_per_node: int) -> None:
    """Give the knee, the extrapolation and the remedies' run of runs fitted as model replicas
    (``_as_replicas``) in devices, as the report's table, beside their replica counts, and the
    extrapolation's servers as the job's (``devices_per_node`` devices each), in place."""
    knee = details["knee"]
    if knee is not None:
        for end in ("before", "after"):
            knee[f"replicas_{end}"] = knee[f"devices_{end}"]
            knee[f"devices_{end}"] *= replica_devices
    for e in details["extrapolation"]:
        e["replicas"] = e["devices"]
        e["devices"] *= replica_devices
        e["nodes"] = -(-e["devices"] // devices_per_node)
    details["remedies_at_replicas"] = details["remedies_at_devices"]
    details["remedies_at_devices"] *= replica_devices


def _parameters_alone(profile, remedies: list[Remedy], exchange, memory_bytes, transformer) -> bool:
    """Where memory is treated as unknown (``_ran_beyond_memory``: the runs ran beyond the
    model's estimate), the remedy that holds the parameters whole (ZeRO-3 -> ZeRO-2, the
    sharding remedy of ZeRO-3 runs) is still judged on the parameters alone: ``params x
    param_bytes_per_param`` above the GPU's ``memory_bytes`` cannot fit, whatever else the
    estimate got wrong (Llama 3 70B: 141 GB of bf16 weights against an 80 GB GPU). True where
    it changed one."""
    if memory_bytes is None or exchange.strategy != "zero3":
        return False
    need = profile.workload.params * profile.workload.param_bytes_per_param
    if need <= memory_bytes:
        return False
    changed = False
    for i, r in enumerate(remedies):
        if r.key == "sharding" and r.verdict != "not runnable":
            remedies[i] = replace(r, verdict="not runnable", note=(
                f"does not fit in the {transformer.gpu}'s {memory_bytes / 2**30:.4g} GiB: the "
                f"parameters alone, held whole, take {need / 2**30:.4g} GiB "
                f"({profile.workload.params / 1e9:.3g} G x "
                f"{profile.workload.param_bytes_per_param:g} bytes)"))
            changed = True
    return changed


def _ran_beyond_memory(profile, scenario, devices: int, transformer, exchange) -> str:
    """'' unless the layout model's memory estimate for the runs' own largest run (``scenario``
    at ``devices``) exceeds ``transformer``'s GPU memory: they ran, so the estimate is off for
    them (recompute, sharding, a shorter sequence than the shape says), and judging remedies
    by it would call today's run "does not fit" and any change "makes it fit" (session-24
    audit: GPT 1.7B at 4 a GPU on A100 40GB). Then the note that says so (with the flag that
    says how the runs sharded, where they were read as DDP: ``exchange``); the caller treats
    memory as unknown."""
    from scalesim.predict import predict

    now = predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]
    if now.fits:
        return ""
    words = nouns_for(profile.hardware.device_name)
    how = ("sharding (--strategy zero1-3 says so)" if not exchange.sharded
           else "offloading" if exchange.strategy == "zero3"
           else "more sharding than " + exchange.strategy)
    return (f"the model estimates {now.memory_bytes / 2**30:.1f} GiB per {words.device} for the "
            f"largest run's own layout ({exchange.strategy}), more than the {transformer.gpu}'s "
            f"{transformer.memory_bytes / 2**30:.4g} GiB, yet the runs ran (with recompute, "
            f"{how} or a shorter sequence than the shape says?): memory is treated as unknown, "
            "so every remedy is assumed to fit")


def _check_runs_model(profile, scenario, runs, transformer, fit) -> str:
    """One line (an error) where the runs' fitted micro-step is faster than ``transformer``'s
    matmuls alone at its GPU's datasheet peak (the attention core at its kernel's own share of
    it where the pin holds it there, an A100's 0.656: ``layout_predict.curve_beyond_peak``),
    even at the top of its 95 % band: that shape on that GPU cannot have run them (a sequence
    length or model size that is not theirs, another GPU), and every remedy the layout model
    predicts would hold compute at the peak, slower than measured (the example runs,
    BERT-large at sequence 128, described as BERT-large at sequence 512: 'faster network
    +13 %' where the runs' own fit says +253 %). Where the band reaches the peak's time the
    runs do not pin their compute (three runs of one batch, session-24 audit: 454 ms +-
    415 %): no error, but the note returned says the remedies take the peak's time; '' where
    the fit is slower than the peak."""
    from scalesim.layout_predict import curve_beyond_peak, pin_attention_share

    b = float(runs.micro_batch[-1])
    at_peak_s, fastest_s, measured_s = curve_beyond_peak(profile, scenario, b)
    if not fastest_s > measured_s:  # NaN: no datasheet peak to hold the runs to
        return ""

    slow_core = fastest_s > at_peak_s  # the pin's attention core at its kernel's share (A100)

    def core(ms: str) -> str:
        return (f", {ms} with its attention core at {pin_attention_share(profile):.2g} of it "
                "(FlashAttention-2's rate there)") if slow_core else ""

    errors = [fit.stderr(n) for n in ("per_sample_s", "overhead_s") if n in fit.fitted]
    spread = float(np.exp(Z95 * max(errors))) if errors and None not in errors else np.inf
    if measured_s * spread >= fastest_s:  # the runs leave room for the peak's time
        return (f"the fitted micro-step of {b:g} samples, {_ms(measured_s)} (95% band up to "
                + ("unbounded" if not np.isfinite(spread) else _ms(measured_s * spread))
                + f"), is faster than {transformer.name}"
                + (" can run" if slow_core else "'s matmuls alone")
                + f" at the {transformer.peak_tflops:g} TFLOP/s peak of {transformer.gpu} ("
                + ("its matmuls alone " if slow_core else "")
                + f"{_ms(at_peak_s)}{core(_ms(fastest_s))}); the runs do not pin it, so the "
                "remedies compute at that peak's time")
    raise ScalesimError(
        f"the runs compute a micro-step of {b:g} samples in {measured_s * 1e3:.3g} ms, faster "
        f"than {transformer.name} ({transformer.shape.words()}) can on {transformer.gpu}: its "
        f"matmuls alone take {at_peak_s * 1e3:.3g} ms at the {transformer.peak_tflops:g} "
        f"TFLOP/s datasheet peak{core(f'{fastest_s * 1e3:.3g} ms')}; describe the runs' own "
        "model (a workload JSON with their sequence length and sizes) and GPU")


# --------------------------------------------------------------------------------------------
# From profiler traces


def _mixed_ranks_notes(summaries) -> list[str]:
    """Notes where the ranks' traces disagree on what should be the same in one job: the GPU
    they ran on, or how many steps they recorded (the comparison uses the steps they share)."""
    out = []
    gpus = {}
    for s in summaries:
        if s.device_name:
            gpus.setdefault(s.device_name, []).append(s.rank)
    if len(gpus) > 1:
        out.append("the ranks name different GPUs (" + "; ".join(
            f"{name}: rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r[:4]))}"
            + (" ..." if len(r) > 4 else "") for name, r in gpus.items())
            + "): one job's traces run on one kind; check that the files are of one job")
    counts = {s.rank: len(s.steps) for s in summaries}
    if len(set(counts.values())) > 1:
        few, most = min(counts, key=counts.get), max(counts, key=counts.get)
        out.append(f"the ranks recorded different numbers of steps (rank {few} {counts[few]}, "
                   f"rank {most} {counts[most]}): ranks are compared on the steps they share")
    return out


def traced_device_name(summaries) -> str:
    """The device name of a traced job's model profile: 'traced', or where no rank ran on a GPU
    (``TraceSummary.device``) a CPU job's 'CPU: traced', whose devices are its processes
    (``device_nouns``)."""
    gpu = any(s.device == "gpu" for s in summaries)
    return "traced" if gpu else f"{CPU_DEVICE_PREFIX}traced"


# The collectives a trace names, by kind (a name's letters, lower case, without '_': NCCL's
# ncclDevKernel_AllGather_RING_LL, gloo:all_gather, record_param_comms:_allgather_base).
COLLECTIVE_KINDS = {"allreduce": "all-reduce", "allgather": "all-gather",
                    "reducescatter": "reduce-scatter"}
# ZeRO-3 (FSDP FULL_SHARD) gathers each block before its forward and again before its
# backward, and reduce-scatters it once: twice the all-gathers of reductions (a root unit left
# unsharded after forward, FSDP2's default for it, gathers once: 7 gathers for 4 units);
# ZeRO-2 (SHARD_GRAD_OP) and Megatron-Core's ZeRO-1 gather once per reduction. The threshold
# between the two ratios:
ZERO3_GATHERS_PER_SCATTER = 1.5
# A job shards where its all-gathers take at least this share of the collective time and come at
# least half as often as its reductions: a DDP job that all-gathers a metric now and then does
# not (a few scalars: latency alone, far under this share of an exchange of gradients). FSDP2 on
# gloo, which has no reduce-scatter, reduces with all-reduce: its gathers took 43 % of the
# collective time in a 2-rank CPU trace (session 25), 32-38 % in two more (session 28), and
# under 25 % (the share first chosen) once in a loaded CI run, where the all-reduces also time
# the other rank's lateness
SHARDED_GATHER_SHARE = 0.15
SHARDED_GATHERS_PER_REDUCTION = 0.5


def _one_record_each(summary) -> dict[str, dict]:
    """The collectives of one rank's trace, each once: a GPU trace's NCCL kernels (not the CPU
    ops torch writes beside each, ``record_param_comms`` and ``nccl:*``), a CPU trace's
    ``gloo:*`` work where it has any, else its ``record_param_comms`` (else what there is)."""
    names = summary.collectives
    if summary.device == "gpu":
        kernels = {n: c for n, c in names.items() if "nccl" in n.lower()
                   and not n.startswith(("nccl:", "record_param_comms"))}
        if kernels:
            return kernels
    for prefix in ("gloo:", "record_param_comms"):
        if picked := {n: c for n, c in names.items() if n.startswith(prefix)}:
            return picked
    return names


def _role_records(summary, roles) -> dict[str, dict]:
    """The NCCL kernels of a rank's trace over groups of ``roles`` (``TraceSummary.groups``)."""
    out: dict[str, dict] = {}
    for role in roles:
        for name, c in summary.groups.get(role, {}).get("collectives", {}).items():
            into = out.setdefault(name, {"count": 0, "total_s": 0.0})
            into["count"] += c["count"]
            into["total_s"] += c["total_s"]
    return out


def collective_kinds(summaries, roles=None) -> dict[str, dict[str, float]]:
    """Count and seconds of each kind of collective (``COLLECTIVE_KINDS``) over every traced
    rank and step, each collective once (``_one_record_each``); names of no kind (broadcast,
    send/recv) are left out. ``roles``: only the groups of those roles (``TraceSummary.groups``;
    None: every collective)."""
    out = {kind: {"count": 0.0, "total_s": 0.0} for kind in COLLECTIVE_KINDS.values()}
    for s in summaries:
        records = _one_record_each(s) if roles is None else _role_records(s, roles)
        for kind, c in kinds_of(records).items():
            out[kind]["count"] += c["count"]
            out[kind]["total_s"] += c["total_s"]
    return out


def kinds_of(records: dict[str, dict]) -> dict[str, dict[str, float]]:
    """kind (``COLLECTIVE_KINDS``) -> {"count", "total_s"} of kernel records (name -> count,
    total_s); names of no kind are left out."""
    out: dict[str, dict[str, float]] = {}
    for name, c in records.items():
        letters = name.lower().replace("_", "")
        kind = next((k for key, k in COLLECTIVE_KINDS.items() if key in letters), None)
        if kind is not None:
            into = out.setdefault(kind, {"count": 0.0, "total_s": 0.0})
            into["count"] += c["count"]
            into["total_s"] += c["total_s"]
    return out


@dataclass(frozen=True)
class ShardGroups:
    """What a traced job's data-parallel groups say of its sharding (``shard_groups``): the
    group that carries its reduce-scatters and all-gathers (``desc``, ``size``) and, under
    hybrid sharding, the size of the one that all-reduces each shard across the replicas
    (``replicas``; 0: none)."""

    desc: str
    size: int
    replicas: int

    @property
    def hybrid(self) -> int:
        """The shard group where the job sharded hybrid (0: not)."""
        return self.size if self.replicas > 1 else 0


def shard_groups(summaries, ranks: int) -> ShardGroups | None:
    """The sharding ``summaries``' data-parallel groups show, over the exchange's ``ranks``
    (``_exchange_ranks``): on the first rank whose named groups carry reduce-scatters or
    all-gathers, the group with the most of that time, and hybrid (FSDP2 / torchtitan HSDP on a
    mesh ``(dp_replicate, dp_shard)``) where it holds fewer than ``ranks`` and another group of
    ``ranks / size`` all-reduces; None where no group shards. A loss all-reduce over every rank
    (``default_pg``) is no replica group: its size is the whole exchange's."""
    for s in summaries:
        by_desc = s.groups.get("dp", {}).get("by_desc", {})
        sharding = {d: g for d, g in by_desc.items() if {"reduce-scatter", "all-gather"}
                    & set(kinds_of(g["collectives"]))}
        if not sharding:
            continue
        desc = max(sharding, key=lambda d: _sharding_s(sharding[d]))
        size = sharding[desc]["size"] or 0
        replicas = next((g["size"] for d, g in by_desc.items() if d != desc
                         and "all-reduce" in kinds_of(g["collectives"])
                         and 1 < size < ranks and (g["size"] or 0) * size == ranks), 0)
        return ShardGroups(desc, size, replicas)
    return None


def _sharding_s(group: dict) -> float:
    """Seconds of a traced group's reduce-scatters and all-gathers (``by_desc`` entry)."""
    kinds = kinds_of(group["collectives"])
    return sum(kinds.get(k, {}).get("total_s", 0.0) for k in ("reduce-scatter", "all-gather"))


def _shard_group_collectives(summaries, desc: str) -> dict[str, dict[str, float]]:
    """``collective_kinds`` of the data-parallel group ``desc`` alone, every rank."""
    out = {kind: {"count": 0.0, "total_s": 0.0} for kind in COLLECTIVE_KINDS.values()}
    for s in summaries:
        group = s.groups.get("dp", {}).get("by_desc", {}).get(desc)
        for kind, c in kinds_of(group["collectives"] if group else {}).items():
            out[kind]["count"] += c["count"]
            out[kind]["total_s"] += c["total_s"]
    return out


def traced_exchange(summaries, degrees: dict | None = None):
    """How the traced job exchanged (``fit_runs.RunsExchange``) and the words of why. Its
    reductions are its reduce-scatters, or its all-reduces where it has none (FSDP on gloo);
    it sharded where its all-gathers take at least ``SHARDED_GATHER_SHARE`` of the all-reduce /
    all-gather / reduce-scatter time and number at least ``SHARDED_GATHERS_PER_REDUCTION`` per
    reduction: ZeRO-3 (FSDP FULL_SHARD) at ``ZERO3_GATHERS_PER_SCATTER`` or more per
    reduction, else ZeRO-2 (SHARD_GRAD_OP; Megatron-Core's ZeRO-1 looks alike and sends the
    same bytes); else DDP, with no words. ``degrees``: ``traced_layout(summaries)`` where the
    caller has it (None: read here)."""
    from scalesim.fit_runs import DDP_EXCHANGE, RunsExchange

    degrees = traced_layout(summaries) if degrees is None else degrees
    grouped = by_group(summaries)
    if splits_the_model(degrees) and exchange_replicas(degrees) < 2:
        return DDP_EXCHANGE, ""  # no data-parallel exchange to read
    if splits_the_model(degrees) and not grouped:
        return DDP_EXCHANGE, (
            f"the traces' process groups split the model ({layout_words(degrees)}: "
            f"{', '.join(degrees['named'])}), but not every trace's collectives say which group "
            "each served (gloo records none; NCCL kernels name theirs in recent torch): the "
            "data-parallel exchange is read as DDP; if it sharded, give --strategy")
    ranks = _exchange_ranks(summaries, degrees)
    found = shard_groups(summaries, ranks) if grouped else None
    hybrid = found.hybrid if found is not None else 0
    # a hybrid job's strategy from its shard group's collectives (the replicas' all-reduces, and
    # whatever else they run, are not ZeRO's per-block ones)
    kinds = (_shard_group_collectives(summaries, found.desc) if hybrid
             else collective_kinds(summaries, DP_ROLES if grouped else None))
    gather = kinds["all-gather"]
    reduction = "reduce-scatter" if kinds["reduce-scatter"]["count"] else "all-reduce"
    reductions = kinds[reduction]["count"]
    total = sum(k["total_s"] for k in kinds.values())
    if (reductions == 0 or gather["total_s"] < SHARDED_GATHER_SHARE * total
            or gather["count"] < SHARDED_GATHERS_PER_REDUCTION * reductions):
        return DDP_EXCHANGE, ""
    ratio = gather["count"] / reductions
    exchange = RunsExchange("zero3" if ratio >= ZERO3_GATHERS_PER_SCATTER else "zero2",
                            shard_group=hybrid)
    seen = ", ".join(f"{whole(k['count'])} {kind}s ({_ms(k['total_s'])})"
                     for kind, k in kinds.items() if k["count"])
    alike = ("the shard group's, with the all-reduces across its replicas" if hybrid else
             "DeepSpeed stage 3 alike" if exchange.strategy == "zero3"
             else "Megatron-Core's ZeRO-1 alike")
    unnamed = grouped and any(UNNAMED_ROLE in s.groups for s in summaries)
    whose = (f"the shard group {found.desc}'s collectives" if hybrid else
             "the traces' collectives" if not grouped else
             "the collectives of the data-parallel groups and of groups no name places"
             if unnamed else "the data-parallel groups' collectives")
    caveat = ("To say otherwise, give --strategy (--shard-group for hybrid sharding)"
              if grouped and not unnamed else
              "Tensor parallelism with sequence parallelism also gathers and reduce-scatters "
              "(activations), and these traces do not say which parallelism each collective "
              "served: for such a job, or to say otherwise, give --strategy (--shard-group for "
              "hybrid sharding)")
    if found is not None and not hybrid and 1 < found.size < ranks:
        caveat += (f". Its sharding collectives ran in groups of {found.size} of the "
                   f"{ranks} data-parallel ranks ({found.desc}) with no all-reduce across them "
                   f"traced: read as full sharding; if it sharded hybrid, give --shard-group "
                   f"{found.size}")
    return exchange, (f"{whose}, all ranks and steps: {seen}: "
                      f"all-gathers per {reduction} {ratio:.2g}, read as "
                      f"{exchange.label(alike)}; the remedies start from it. {caveat}")


# Collectives read as the data-parallel exchange: the dp groups', and those of groups no name
# places (as every collective was read before the traces' groups were)
DP_ROLES = ("dp", UNNAMED_ROLE)


def by_group(summaries) -> bool:
    """True where every traced rank's collectives name their process group."""
    return all(s.groups for s in summaries)


def every_rank_sends(summaries) -> bool:
    """Whether every traced rank sends or receives point to point (``traces.point_to_point``)."""
    from scalesim.traces import point_to_point

    return all(any(point_to_point(name) for name in s.collectives) for s in summaries)


def traced_layout(summaries) -> dict:
    """The traced job's degrees (``process_groups.traced_degrees``). Where no group splits the
    model but every traced rank sends and receives point to point (``traces.point_to_point``)
    and either ran a pipeline schedule's annotated actions (``TraceSummary.
    schedule_micro_batches``: torch.distributed.pipelining) or runs no other collective, a
    pipeline over all the ranks (pp = the world, dp 1, ``pipeline_over_ranks``): a pipeline
    over the whole job runs on the default group (torch's PipelineStage without a group; a
    DeviceMesh dimension over every rank reuses it), so no group names it. Sends and receives
    beside other collectives do not make one: all-to-all runs on NCCL's SendRecv kernels, a
    monitored barrier on gloo's send and recv."""
    from scalesim.traces import point_to_point

    world = max(len(summaries), max((s.world_size or 1) for s in summaries))
    degrees = traced_degrees([s.process_groups for s in summaries], [s.groups for s in summaries],
                             world)
    only_sends = all(point_to_point(name) for s in summaries for name in s.collectives)
    annotated = all(s.schedule_micro_batches > 0 for s in summaries)
    if world >= 2 and every_rank_sends(summaries) and (annotated or only_sends) \
            and not splits_the_model(degrees):
        degrees = {**degrees, "pp": world, "dp": 1, "pipeline_over_ranks": True}
    return degrees


def model_parallel_exposed(summaries) -> dict[str, dict[str, float]]:
    """role -> {"comm_s", "exposed_s"}: medians over the ranks that have the role of their
    median step's collectives over groups that are not data parallel (``DP_ROLES``), and the
    part nothing else covered (no compute, data wait or other group's collective: what hiding
    them saves); {} where the collectives name no group."""
    if not by_group(summaries):
        return {}
    out = {}
    for role in ROLES:
        if role == "dp":
            continue
        have = [s.groups[role] for s in summaries if role in s.groups]
        if have:
            out[role] = {k: float(np.median([g[k] for g in have])) for k in ("comm_s", "exposed_s")}
    return out


def _exchange_source(summaries) -> str:
    """Which of a traced step's collectives are the data-parallel exchange's: 'groups' (its
    dp groups', ``DP_ROLES``, where the collectives name groups); 'collectives' (those that
    are not point to point, where some rank sends point to point but no group is named: a
    pipeline's sends and their waits are not the exchange's); 'all' (all its communication)."""
    from scalesim.traces import point_to_point

    if by_group(summaries):
        return "groups"
    if any(point_to_point(name) for s in summaries for name in s.collectives):
        return "collectives"
    return "all"


def _exchange_step_s(source: str, step) -> float:
    """One rank's data-parallel exchange time in one traced step, s, waits for peers
    included, read as ``source`` (``_exchange_source``) says."""
    if source == "groups":
        return sum(step.group_comm_s.get(r, 0.0) for r in DP_ROLES)
    return step.collective_s if source == "collectives" else step.comm_s


def exchange_transfer_s(summaries, staged) -> float:
    """The exchange's own time a step, s: in each step, the least any rank of a pipeline stage
    spent in its collectives (the last rank to arrive waits for no one, so its time is the
    transfer; the others' extra is waiting for it, the straggler finding's), the most of that
    over stages (each stage's replicas exchange their shard at once), median over steps.
    ``staged``: ``pipeline_stages``; one stage where the job has no pipeline or a rank's stage
    is unknown. Taking every rank's own time instead counted the waits twice, once as the
    exchange and once as the straggler (a real dp x pp job: 5.3 ms priced, 1.6 ms its own).
    Where no step is traced on every rank, no straggler counts the waits
    (``traces.cross_rank`` compares no step), so the exchange keeps them: the median of the
    ranks' own times."""
    p, stages, _ = staged
    if p < 2 or None in stages or len(stages) != len(summaries):
        stages = [0] * len(summaries)
    source = _exchange_source(summaries)
    by_step = [{st.step: _exchange_step_s(source, st) for st in s.steps} for s in summaries]
    common = set.intersection(*(set(d) for d in by_step))
    if not common:  # no step every rank traced: the ranks' own times, waits included
        # (``traces.cross_rank`` then compares no step and counts no wait as a straggler's,
        # so the least rank's time had dropped the waits from the model's step: 8 ms traced
        # steps rebuilt as 6 ms, overlap +15 % where hiding 1 ms gains 1/7 at most)
        return float(np.median([float(np.median(list(d.values()))) for d in by_step]))
    return float(np.median([
        max(min(d[n] for d, k in zip(by_step, stages, strict=True) if k == stage)
            for stage in set(stages))
        for n in sorted(common)]))


def _dp_comm(summaries, staged) -> tuple[float, float]:
    """(comm_s, hidden_s) of the data-parallel exchange: its own time a step
    (``exchange_transfer_s``: no waits for peers) and the part of it compute or a data wait
    hid, at the share the ranks' collectives had hidden. The share is of the exchange's
    collectives (``_exchange_source``): their per-role medians where groups are named; the
    collectives that are not point to point where a pipeline sends but no group is named
    (read with its sends, hidden all-reduces had read as exposed: 'overlap the exchange
    +37 %' on a dp x pp job); else all the traced communication."""
    transfer = exchange_transfer_s(summaries, staged)
    source = _exchange_source(summaries)
    if source == "groups":
        comm = float(np.median([sum(s.groups.get(r, {}).get("comm_s", 0.0) for r in DP_ROLES)
                                for s in summaries]))
        hidden = float(np.median([sum(s.groups.get(r, {}).get("hidden_s", 0.0)
                                      for r in DP_ROLES) for s in summaries]))
    elif source == "collectives":
        comm = float(np.median([s.median("collective_s") for s in summaries]))
        hidden = float(np.median([s.median("collective_hidden_s") for s in summaries]))
    else:
        comm = sum(st.comm_s for s in summaries for st in s.steps)
        hidden = sum(st.overlap_s for s in summaries for st in s.steps)
    share = hidden / comm if comm > 0 else 0.0
    return transfer, transfer * share


def _groups_notes(summaries, degrees: dict, model_parallel: dict,
                  pipeline_read: bool = False) -> list[str]:
    """Notes on how the traces' groups were read: sizes left out, groups no name places,
    a split whose collectives were not seen, sends no group places, no data parallelism to
    model (``pipeline_read``: a pipeline was read, whose batch remedies are priced on it)."""
    notes = []
    if degrees["conflict"]:
        notes.append(f"the traces' process groups: {degrees['conflict']}")
    unnamed = sorted({d for s in summaries for d in s.groups.get(UNNAMED_ROLE, {}).get("descs", [])})
    if unnamed:
        notes.append(f"collectives over groups no name places ({', '.join(unnamed[:4])}: created "
                     "without group_desc, fewer ranks than the job) are read as the "
                     "data-parallel exchange's")
    if splits_the_model(degrees) and by_group(summaries) and not model_parallel \
            and exchange_replicas(degrees) > 1:
        notes.append(f"the traces' process groups split the model ({layout_words(degrees)}) but "
                     "no collective names a tensor-, context- or pipeline-parallel group: all "
                     "are read as the data-parallel exchange's")
    if degrees.get("pp", 1) < 2 and len(summaries) > 1 and every_rank_sends(summaries) \
            and not by_group(summaries):
        notes.append("every rank sends and receives point to point beside other collectives, "
                     "and no process group names a pipeline: the sends are read as the "
                     "data-parallel exchange's. A pipeline is read where a group names it "
                     "(Megatron-LM's PIPELINE_MODEL_PARALLEL_GROUP, a DeviceMesh's mesh_pp over "
                     "part of the job) or torch.distributed.pipelining's schedules annotate "
                     "their actions (Interleaved1F1B, GPipe, ...)")
    if splits_the_model(degrees) and exchange_replicas(degrees) < 2:
        notes.append(f"{layout_words(degrees)}: no data-parallel exchange, so the model's "
                     + ("remedies (links, overlap, sharding) have nothing to price; the batch "
                        "remedies are priced on the traced pipeline (its span per sample, the "
                        "rest of the step once), the others are what the traces measure"
                        if pipeline_read else
                        "remedies (links, overlap, sharding, batch) have nothing to price; only "
                        "what the traces measure is listed"))
    return notes


def _pipeline_stage(summary) -> int | None:
    """The rank's stage: its place in its pipeline group's ranks (pg_config), None unknown."""
    for g in summary.process_groups:
        if (g["size"] or 0) > 1 and group_role(g["desc"], g["size"], None) == "pp" \
                and summary.rank in g["ranks"]:
            return g["ranks"].index(summary.rank)
    return None


def pipeline_stages(summaries, degrees: dict) -> tuple[int, list[int | None], str]:
    """(stages p, each summary's stage or None where unknown, note) of a traced job
    (``traced_layout``): a named pp group's (``_pipeline_stage``), or the ranks' order for a
    pipeline over them all that no group names, with a note; (1, [], '') without a pipeline."""
    p = degrees.get("pp", 1)
    if p < 2:
        return 1, [], ""
    if degrees.get("pipeline_over_ranks"):  # a rank's stage: the first it runs, else its rank
        return p, [min(s.schedule_stages, default=s.rank) for s in summaries], (
            f"no process group names a pipeline, but every rank sends and receives point to "
            f"point and ran a pipeline schedule's actions or no other collective: read as one "
            f"pipeline over the {p} ranks, stage by rank (a pipeline over the whole job runs "
            "on the default group, which no name says is a pipeline's)")
    return p, [_pipeline_stage(s) for s in summaries], ""


def _within_stages(summaries, cr: dict, staged: tuple) -> tuple[dict, str]:
    """``cr`` (``traces.cross_rank``) with its straggler fields from ranks of one pipeline
    stage compared with each other (the stage whose slowest rank keeps the others waiting the
    longest), and a note; unchanged where the job has no pipeline or a rank's stage is unknown
    (``staged``: the traces' ``pipeline_stages``).
    Stages do different work (embedding, loss; a receive waits on the stage before), so across
    them the slowest is the pipeline's shape, not a straggler."""
    from scalesim.traces import cross_rank

    p, stages, _ = staged  # ``pipeline_stages``
    if p < 2 or None in stages:
        return cr, ""
    keys = ("straggler_wait_s", "slowest_rank", "slowest_consistency", "slowest_factor",
            "slowest_counts", "steps_compared")
    per_stage = [cross_rank([s for s, k in zip(summaries, stages, strict=True) if k == stage])
                 for stage in sorted(set(stages)) if stages.count(stage) > 1]
    out = dict(cr)
    if not per_stage:
        out.update(straggler_wait_s=0.0, slowest_factor=1.0, slowest_counts={},
                   steps_compared=0, slowest_consistency=1.0)
        return out, ("one traced rank a pipeline stage: stages do different work, so no rank "
                     "is compared with another (trace the data-parallel peers of a stage)")
    worst = max(per_stage, key=lambda c: c["straggler_wait_s"])
    out.update({k: worst[k] for k in keys})
    return out, ("ranks compared within their pipeline stage (stages do different work): the "
                 "stage whose slowest rank keeps its peers waiting the longest")


def diagnose_traces(summaries, source: str, exchange=None, shard_group: int | None = None) -> Report:
    """Name the cause from per-rank trace summaries (scalesim.traces.summarise). ``exchange``
    (``fit_runs.RunsExchange``): how the job exchanged; None: read off its collectives
    (``traced_exchange``). ``shard_group``: a hybrid shard group for the strategy read off the
    collectives (with ``exchange`` None; ``--shard-group`` without ``--strategy``)."""
    from scalesim.traces import TraceSummary, cross_rank, missing_ranks_note

    if not isinstance(summaries, list | tuple) or not summaries:
        raise ScalesimError("summaries: expected a non-empty list of TraceSummary "
                            "(scalesim.traces.load_traces)")
    for s in summaries:
        require_model(s, TraceSummary, "summaries")
    source = require_text(source, "source")
    degrees = traced_layout(summaries)
    exchange, exchange_note = _traced_or_given(summaries, degrees, exchange, shard_group)

    staged = pipeline_stages(summaries, degrees)
    cr, stage_note = _within_stages(summaries, cross_rank(summaries), staged)
    step = cr["step_s"]
    pipeline, pipeline_notes = traced_pipeline(summaries, staged)
    model_parallel = model_parallel_exposed(summaries)
    # the pipeline's sends and receives are its own finding's where it is read
    outside = {role: v for role, v in model_parallel.items()
               if pipeline is None or role != "pp"}
    # collectives over groups that split the model: not the data-parallel exchange's
    mp_exposed = min(sum(v["exposed_s"] for v in outside.values()),
                     cr["intrinsic_exposed_comm_s"])
    # the pacing stage's waits on its sends and receives are the pipeline's, not the exchange's
    pp_waits = 0.0 if pipeline is None else pipeline.bubble_s
    parts = {
        "data": cr["data_wait_s"],
        "straggler": cr["straggler_wait_s"],
        "comm": max(cr["intrinsic_exposed_comm_s"] - mp_exposed - pp_waits, 0.0),
        "model_parallel": mp_exposed,
        "pipeline": 0.0 if pipeline is None else pipeline.lost_s,
        "idle": cr["idle_s"],
    }
    share = {k: v / step for k, v in parts.items()}
    findings = []
    multi_host = len({s.host for s in summaries if s.host}) > 1
    held = [f"the other groups' collectives {_ms(mp_exposed)}"] if mp_exposed > 0 else []
    if pp_waits > 0:
        held.append(f"the pipeline's waits {_ms(pp_waits)} (its finding's)")
    split = (f"; of it the data-parallel exchange {_ms(parts['comm'])}, " + ", ".join(held)
             if held else "")
    comm_lines = [
        f"communication {_ms(cr['comm_s'])} per step, {_pct(cr['overlap_share'])} of it "
        f"overlapping compute; exposed {_ms(cr['intrinsic_exposed_comm_s'])} on the slowest "
        f"rank ({_pct(cr['intrinsic_exposed_comm_s'] / step)} of the step{split})",
    ]
    # a CPU job (TraceSummary.device) has no device timeline and no kernel launches
    words = nouns_for(traced_device_name(summaries))
    if not multi_host:
        comm_lines.append(f"one run traced: whether the share grows with {words.devices} needs "
                          f"runs at several {words.device} counts (scalesim diagnose runs.csv)")
    if multi_host:
        comm_lines.append(f"ranks on {len({s.host for s in summaries})} hosts: collectives cross "
                          f"{words.servers}")
    findings.append(finding("inter_server" if multi_host else "comm_growth", share["comm"],
                            comm_lines, words))
    if mp_exposed > 0:
        findings.append(finding("model_parallel_comm", share["model_parallel"],
                                _model_parallel_lines(degrees, outside, step, mp_exposed),
                                words))
    if pipeline is not None:
        findings.append(finding("pipeline", share["pipeline"], _pipeline_lines(pipeline, step),
                                words))
    findings.append(finding("input_pipeline", share["data"], [
        f"waiting on the DataLoader {_ms(parts['data'])} per step ({_pct(share['data'])}), "
        "median over ranks",
    ]))
    slow = cr["slowest_rank"]
    persistence = persistence_words(cr["slowest_counts"].get(slow, 0), cr["steps_compared"],
                                    len(summaries))
    persistent = slowest_in_most_steps(cr["slowest_counts"].get(slow, 0), cr["steps_compared"],
                                       len(summaries))
    # the factor is of each step's slowest rank, which is this rank only where it persists
    own = (f"its own time (step minus exposed communication) {cr['slowest_factor']:.2f}x the "
           "others' (median over steps)" if persistent else
           f"the slowest rank of each step has {cr['slowest_factor']:.2f}x the others' own time "
           "(step minus exposed communication; median over steps)")
    strag_lines = [
        f"ranks wait {_ms(parts['straggler'])} per step for the slowest "
        f"({_pct(share['straggler'])} of the step)",
        f"rank {slow} is the {persistence}, {own}",
    ]
    if cr["steps_compared"]:
        strag_lines.append("slowest rank per step: " + ", ".join(
            f"rank {r} in {n} of {cr['steps_compared']}" for r, n in cr["slowest_counts"].items()
            if n))
    is_slow_device = persistent and cr["slowest_factor"] >= SLOW_DEVICE_FACTOR
    findings.append(finding("slow_device" if is_slow_device else "stragglers", share["straggler"],
                            strag_lines, words))
    findings.append(finding("idle", share["idle"], [
        f"{words.device} idle {_ms(parts['idle'])} per step "
        f"({_pct(share['idle'])}): neither computing, communicating nor loading data "
        + ("(host overhead between operators: Python, the framework)" if words.cpu else
           "(launch or host overhead)"),
    ]))
    findings.sort(key=lambda f: -f.share)
    if findings[0].share < 1.0 - GOOD_EFFICIENCY:
        findings.insert(0, finding("none", 0.0, [
            f"compute {_pct(cr['compute_s'] / step)} of a {_ms(step)} step; no other part "
            f"above {_pct(1.0 - GOOD_EFFICIENCY)}"]))
    cause, others = findings[0], [f for f in findings[1:] if f.share >= OTHER_CAUSE_SHARE]
    # the pipeline's loss is a fixed time of the step for the exchange's model, as the other
    # groups' exposed collectives are
    pipeline_fixed = 0.0 if pipeline is None else max(pipeline.span_s - cr["compute_s"], 0.0)
    dp_comm = _dp_comm(summaries, staged)
    first, remedies = _trace_remedies(cr, summaries, cause.key, exchange, degrees,
                                      dp_comm, mp_exposed + pipeline_fixed)
    if pipeline is not None and any(r.key in BATCH_FACTORS for r in remedies):
        def model(per_sample_extra_s: float, per_step_s: float, fixed_s: float):
            return _trace_remedies(cr, summaries, cause.key, exchange, degrees,
                                   dp_comm, fixed_s, per_sample_extra_s, per_step_s)

        for priced in pipeline_batch_remedies(pipeline, model, mp_exposed, pipeline_fixed):
            remedies = _with_measured(remedies, priced)
        first = first_remedy(remedies, cause.key, median_error(False))
    elif pipeline is not None and exchange_replicas(degrees) < 2:  # no exchange to model
        for priced in pipeline_only_batch_remedies(pipeline, step, mp_exposed,
                                                   cr["data_wait_s"], words.device):
            remedies = _with_measured(remedies, priced)
        first = first_remedy(remedies, cause.key, median_error(False))
    for measured in ([] if pipeline is None else pipeline_remedies(pipeline, step)):
        remedies = _with_measured(remedies, measured)
        decisive = measured.helps and shown_gain(measured) >= median_error(False)
        if decisive and (first is None or shown_gain(measured) > shown_gain(first)
                         or (cause.key == "pipeline"
                             and first.key not in PREFERRED_REMEDIES["pipeline"])):
            first = measured
    overlap_tp = tp_overlap_remedy(model_parallel, step)
    if overlap_tp is not None:
        remedies = _with_measured(remedies, overlap_tp)
        decisive = shown_gain(overlap_tp) >= median_error(False)
        if first is None or shown_gain(overlap_tp) > shown_gain(first) or (
                decisive and cause.key == "model_parallel_comm"):
            first = overlap_tp
    kernel, kernel_remedy = attention_kernel_finding(summaries, step)
    if kernel is not None:  # lost at one device too: beside the scaling cause, never it
        if kernel.share >= OTHER_CAUSE_SHARE:
            others = sorted([*others, kernel], key=lambda f: -f.share)
        remedies = _with_measured(remedies, kernel_remedy)
        if first is None or shown_gain(kernel_remedy) > shown_gain(first):
            first = kernel_remedy
    table = [{
        "rank": s.rank, "steps": len(s.steps), "step_s": s.median("step_s"),
        "compute_s": s.median("compute_s"), "comm_s": s.median("comm_s"),
        "overlap_s": s.median("overlap_s"), "exposed_comm_s": s.median("exposed_comm_s"),
        "data_wait_s": s.median("data_wait_s"), "idle_s": s.median("idle_s"),
        "attention_s": s.median("attention_s"), "attention_family": s.attention_family,
        "device": s.device, "device_name": s.device_name, "host": s.host,
    } for s in summaries]
    details = {
        "per_step": {str(s.rank): [asdict(st) for st in s.steps] for s in summaries},
        "cross_rank": {k: v for k, v in cr.items() if k != "own_s"},
        "collectives": {str(s.rank): s.collectives for s in summaries},
        "exchange": exchange.described(),
        # the degrees the traces' process groups name, and each group role's collectives
        "layout": {k: degrees[k] for k in ("dp", "tp", "cp", "pp")},
        "pipeline": None if pipeline is None else {
            **asdict(pipeline), "bubble_s": pipeline.bubble_s, "uneven_s": pipeline.uneven_s,
            "lost_s": pipeline.lost_s},
        "groups": {str(s.rank): {role: {k: v for k, v in g.items()
                                        if k not in ("collectives", "by_desc")}
                                 for role, g in s.groups.items()} for s in summaries},
    }
    notes = [n for s in summaries for n in s.notes]
    if missing := missing_ranks_note(summaries):
        notes.insert(0, missing)
    notes += _mixed_ranks_notes(summaries)
    if exchange_note:
        notes.append(exchange_note)
    notes += _groups_notes(summaries, degrees, model_parallel, pipeline is not None)
    if stage_note:
        notes.append(stage_note)
    notes += pipeline_notes
    if pipeline is not None:
        notes += pipeline.notes
    replicas = exchange_replicas(degrees)
    if splits_the_model(degrees) and replicas > 1:
        held = ("the other groups' collectives are held as they were traced"
                if model_parallel else "the traces do not say which collectives split the "
                "model, so all are read as that exchange's")
        over = (f"dp {replicas}" if degrees["cp"] == 1 else
                f"dp x cp = {replicas} (context-parallel ranks hold the same weights)")
        if pipeline is not None:
            held += ("; the pipeline's loss (bubble and uneven stages) is held as a fixed time "
                     "of each step, but for the batch remedies, priced on the pipeline: a "
                     "bigger per-device batch grows its span with the micro-batch, more "
                     "micro-batches pay its fill and drain once a step")
        notes.append(f"the remedies' model is the data-parallel exchange over {over} of the "
                     f"traced layout ({layout_words(degrees)}); {held}")
    notes.append("remedy gains are model predictions built from the median traced step"
                 + ("; the pipeline's are replays of its traced schedule, which also splits "
                    "its loss for the batch remedies" if pipeline is not None else ""))
    return Report("traces", source, cause, others, first, remedies, table, details, notes,
                  decisive_gain=median_error(False))  # the trace model is data parallel


def traced_pipeline(summaries, staged: tuple):
    """(``pipeline_trace.PipelineReading``, notes) of a traced pipeline (``staged``: its
    ``pipeline_stages``) with a traced rank in every stage; (None, [why not]) where a stage is
    missing, (None, []) without a pipeline. Each stage's compute and exposed sends and
    receives are its ranks' median steps' (``traces.StepBreakdown.p2p_exposed_s``)."""
    from scalesim.pipeline_trace import annotated_schedule, counted_micro_batches, read_pipeline

    p, stages, over_world = staged  # ``pipeline_stages``
    if p < 2:
        return None, []
    traced = sorted({k for k in stages if k is not None})
    if traced != list(range(p)):
        missing = [k for k in range(p) if k not in traced]
        return None, [f"the pipeline's bubble and its stages' balance are not read: no traced "
                      f"rank of stage {_series([str(k) for k in missing])} of {p}; trace a rank "
                      "of every stage (the first rank of each pipeline group is enough)"]
    compute, wait, ranks, receives = {}, {}, {}, {}
    for s, k in zip(summaries, stages, strict=True):
        if k is not None:
            compute.setdefault(k, []).append(s.median("compute_s"))
            # the pp group's where kernels name theirs (an expert group's all-to-all runs on
            # SendRecv kernels too), else every send and receive
            wait.setdefault(k, []).append(s.groups["pp"]["exposed_s"] if "pp" in s.groups
                                          else s.median("p2p_exposed_s"))
            ranks.setdefault(k, []).append(s.rank)
            counts = [st.receives for st in s.steps]
            receives.setdefault(k, []).append(
                None if None in counts else int(round(float(np.median(counts)))))
    traced = [s for s, k in zip(summaries, stages, strict=True) if k is not None]
    schedule = annotated_schedule([s.schedule_stages for s in traced],
                                  [s.schedule_micro_batches for s in traced])
    notes = [over_world] if over_world else []
    if any(s.schedule_split_backward for s in traced):
        notes.append("the schedule splits its backward (a zero-bubble schedule's I and W "
                     "actions): it is replayed as 1F1B, whose bubble is larger, so the bubble "
                     "remedy's gain is overstated and the schedule already shrinks its bubble")
    if schedule is not None:
        return read_pipeline(compute, wait, ranks, *schedule, "annotations"), notes
    interleaved = any(len(s.schedule_stages) > 1 for s in traced)
    m = None if interleaved else counted_micro_batches(receives[0], receives[p - 1])
    reading = read_pipeline(compute, wait, ranks, m, 1, "receives")
    ends = [*receives[0], *receives[p - 1]]
    if any(s.schedule_micro_batches for s in traced):
        reading.count_note = ("the ranks' schedule annotations disagree (stages a rank or "
                              "micro-batches), and with several stages a rank the receives do "
                              "not count micro-batches, so they are fitted" if interleaved else
                              "the ranks' schedule annotations disagree")
    if m is None and not interleaved and None not in ends and min(ends) > 0:  # they disagree
        reading.count_note = (f"the first and last stages' receives disagree ({receives[0][0]} "
                              f"and {receives[p - 1][0]} a step: several tensors cross a stage "
                              "boundary?), so the micro-batches are fitted")
    return reading, notes


def _pipeline_lines(pipeline, step_s: float) -> list[str]:
    """The evidence of the ``pipeline`` finding: each stage's compute, what the pacing stage
    waits and how much of it the replayed schedule accounts for, the schedule read."""
    k = pipeline.pacing_stage
    stages = ", ".join(f"{st['stage']}: {_ms(st['compute_s'])}" for st in pipeline.stages)
    waits = ", ".join(f"{st['stage']}: {_ms(st['wait_s'])}" for st in pipeline.stages)
    if pipeline.counted:
        source = ("read off the schedule's annotations" if pipeline.counted_from == "annotations"
                  else "counted from the first and last stages' receives")
        outside = pipeline.unreplayed_s
        j = pipeline.spanning_stage
        k_span = pipeline.stages[k]["compute_s"] + pipeline.bubble_s
        longer = "" if pipeline.span_s - k_span < OTHER_CAUSE_SHARE * step_s else (
            f"; stage {j} computes and waits {_ms(pipeline.span_s)} a step, longer than stage "
            f"{k}: it waits on time the others spend outside their ops (idle: host work, a "
            "sleep, a synchronisation)")
        wait = (f"stage {k}'s {_ms(pipeline.bubble_s)}{longer}: the replayed bubble (fill and "
                f"drain) {_ms(pipeline.replay_s - pipeline.stages[k]['compute_s'])}, the sends' "
                f"own time and waits outside the schedule {_ms(outside)}")
        if pipeline.count_note:
            source += f"; {pipeline.count_note}"
        schedule = (f"{_replayed_at(pipeline)} per step ({source}), replayed as 1F1B "
                    "(docs/model.md §15)")
    else:
        from scalesim.pipeline_trace import MOST_MICRO_BATCHES

        wait = (f"stage {k}'s {_ms(pipeline.bubble_s)} is the bubble (fill and drain; any "
                "transfer it waited on)")
        unread = pipeline.count_note or ("the traces carry no schedule annotations and count "
                                         "no receive")
        if pipeline.micro_batches == 1 and pipeline.span_s > pipeline.replay_s * 1.0005:
            fit = ("the waits exceed a one-micro-batch 1F1B's (replayed, docs/model.md §15): "
                   "transfers or waits outside the schedule")
        elif pipeline.micro_batches == MOST_MICRO_BATCHES:
            fit = (f"the waits are within a 1F1B of {MOST_MICRO_BATCHES} micro-batches' "
                   "(replayed, docs/model.md §15): next to no bubble")
        else:
            fit = (f"the waits match a 1F1B schedule of {_replayed_at(pipeline)} per step "
                   "(replayed, docs/model.md §15): a job that runs more also waited on its "
                   "transfers")
        schedule = f"{fit} ({unread})"
    return [
        f"compute per step by stage ({stages}; medians over each stage's ranks); stage {k} "
        f"paces the pipeline, {_ms(pipeline.uneven_s)} above the stages' mean",
        f"exposed sends and receives by stage ({waits}): {wait}; the others' also their wait "
        f"for stage {k}; together {_ms(pipeline.lost_s)} per step "
        f"({_pct(pipeline.lost_s / step_s)}) against even stages without a bubble",
        schedule,
    ]


def _replayed_at(pipeline) -> str:
    """'4 micro-batches', or '8 chunks (4 micro-batches x 2 virtual stages a rank)'."""
    m = pipeline.micro_batches
    micro = f"{m} micro-batch{'es' if m != 1 else ''}"
    if pipeline.virtual_stages == 1:
        return micro
    return f"{pipeline.chunks} chunks ({micro} x {pipeline.virtual_stages} virtual stages a rank)"


def pipeline_remedies(pipeline, step_s: float) -> list[Remedy]:
    """Evening the stages and halving the bubble, priced by replaying the traced schedule
    (``pipeline_trace``): each saves its replayed span's difference off the measured step,
    gain ``step / (step - saving) - 1``."""
    from scalesim.remedies import PIPELINE_BUBBLE_TITLE, PIPELINE_EVEN_TITLE

    k, m, v = pipeline.pacing_stage, pipeline.micro_batches, pipeline.virtual_stages
    out = []
    for key, title, new_s, most_s, how in (
        ("pipeline_even", PIPELINE_EVEN_TITLE, pipeline.even_s, pipeline.lost_s,
         f"every stage at the stages' mean compute, stage {k} {_ms(pipeline.uneven_s)} less; "
         "layers move whole, so this is a ceiling. Megatron-LM "
         "--account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split or "
         "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers; torchtitan "
         "parallelism.module_fqns_per_model_part"),
        ("pipeline_bubble", PIPELINE_BUBBLE_TITLE, pipeline.halved_s, pipeline.bubble_s,
         f"{m} -> {2 * m} micro-batches of half the size, the bubble {v} -> {2 * v} virtual "
         "stages per rank (an interleaved schedule) also halves"
         + (f", twice the messages adding {_ms(pipeline.unreplayed_s)} once more"
            if pipeline.counted else "")
         + "; a ceiling: a micro-batch's fixed costs stay and smaller ones run the matmuls less "
         "efficiently. Megatron-LM "
         "--num-layers-per-virtual-pipeline-stage; torchtitan pipeline_parallel_schedule "
         "Interleaved1F1B"),
    ):
        saving = pipeline.replay_s - new_s
        saving = saving if abs(saving) > 1e-9 * pipeline.replay_s else 0.0  # 0 but rounding
        # never more than the traces lost to it: even stages without a bubble, the pacing
        # stage's waits (a replay longer than the traced span would promise more)
        capped = saving > min(most_s, 0.99 * step_s)
        saving = min(saving, most_s, 0.99 * step_s)
        gain = step_s / (step_s - saving) - 1.0
        change = (f"{_ms(saving)} off the step" if saving >= 0
                  else f"{_ms(-saving)} onto the step")
        extra = (" with the extra messages' time" if key == "pipeline_bubble"
                 and pipeline.unreplayed_s > 0 else "")
        cap = (f", capped at what the traces lost to it ({_ms(saving)})" if capped else "")
        note = (f"replayed 1F1B at {_replayed_at(pipeline)}: span {_ms(pipeline.replay_s)} -> "
                f"{_ms(new_s)}{extra}, {change}{cap}; {how}")
        out.append(Remedy(key, title, float(gain), True, note, verdict=gain_verdict(float(gain))))
    return out


def pipeline_batch_remedies(pipeline, model, mp_exposed_s: float,
                            loss_s: float) -> list[Remedy]:
    """The exchange's model's batch remedies of a data-parallel x pipeline job, with the
    pipeline's loss split as each change meets it (``pipeline_trace.accumulation_split_s``)
    instead of held as a fixed time of the micro-step. ``model(per_sample_extra_s,
    per_step_s, fixed_s)`` ranks the remedies (``_trace_remedies``) with ``fixed_s`` of
    exposed time besides the compute in each micro-step, ``per_sample_extra_s`` of it moved to
    the per-sample time and ``per_step_s`` paid once a step; ``mp_exposed_s``: the other groups'
    exposed collectives (tensor parallelism's grow with the micro-batch and run in each);
    ``loss_s``: the pipeline's span beyond the traced compute, which the model held fixed.

    - Twice the per-device batch: every stage's micro-batch doubles, so the pipeline's whole
      span (its loss T - C with it) and the other groups' collectives grow with the batch: both
      per sample.
    - 4x the micro-batches (more accumulation): one more pass of m micro-batches adds the
      replay's steady-state time and the sends the replay leaves, and the fill and drain are
      paid once a step.

    Everything else (the data wait, the exchange and its overlap, the straggler wait) stays the
    model's, as for any other job."""
    from scalesim.pipeline_trace import accumulation_split_s

    fixed = mp_exposed_s + loss_s
    _, bigger = model(fixed, 0.0, fixed)
    per_pass, once = accumulation_split_s(pipeline, BATCH_FACTORS["accumulation"])
    once = min(once, fixed)  # what the micro-step holds beside the compute
    _, more = model(0.0, once, fixed - once)
    m, v = pipeline.micro_batches, pipeline.virtual_stages
    out = []
    for key, ranked, how in (
        ("bigger_batch", bigger, f"the pipeline's span {_ms(pipeline.span_s)} (its stages' "
         "compute, bubble and sends) and the other groups' collectives grow with the "
         "micro-batch"),
        ("accumulation", more, f"each more pass of {m * v} micro-batch chunks adds "
         f"{_ms(per_pass)} (the replayed 1F1B's steady state and the sends' own time), the fill "
         f"and drain {_ms(once)} paid once a step"),
    ):
        r = next((r for r in ranked if r.key == key), None)
        if r is None or not r.applicable:
            continue
        title = r.title if key == "bigger_batch" else _pipeline_accumulation_title(pipeline)
        note = f"{how}; " + r.note if r.note else how
        out.append(replace(r, title=title, note=note))
    return out


def _pipeline_accumulation_title(pipeline) -> str:
    """'Accumulate gradients over 4x the pipeline's micro-batches (m -> 4m a step)'."""
    k, m = BATCH_FACTORS["accumulation"], pipeline.micro_batches
    fitted = "" if pipeline.counted else ", fitted"
    return (f"Accumulate gradients over {k}x the pipeline's micro-batches ({m} -> {k * m} a "
            f"step{fitted})")


def pipeline_only_batch_remedies(pipeline, step_s: float, mp_exposed_s: float,
                                 data_wait_s: float, device: str) -> list[Remedy]:
    """The batch remedies of a pipeline with no data-parallel exchange (dp 1: nothing for the
    exchange's model to price), from the traced step ``step_s`` split the way
    ``pipeline_batch_remedies`` splits it: per sample the pipeline's span T (its stages'
    compute, bubble and sends), the other groups' exposed collectives ``mp_exposed_s`` and the
    data wait ``data_wait_s`` (a loader supplies samples at its rate); once a step the rest
    (optimizer, host work between steps).

    - Twice the per-device batch: step' = rest + 2 (T + x + d), gain 2 step / step' - 1.
    - 4x the micro-batches: each more pass of m adds the replay's steady state and the sends'
      own time p (``pipeline_trace.accumulation_split_s``) with its x and d; step' = step +
      3 (p + x + d), gain 4 step / step' - 1. Both train at a larger global batch."""
    from scalesim.pipeline_trace import accumulation_split_s
    from scalesim.remedies import gain_verdict

    per_sample = pipeline.span_s + mp_exposed_s + data_wait_s
    rest = step_s - per_sample
    rest = rest if rest > 1e-9 * step_s else 0.0  # 0 but rounding
    big, acc = BATCH_FACTORS["bigger_batch"], BATCH_FACTORS["accumulation"]
    per_pass, once = accumulation_split_s(pipeline, acc)
    per_pass += mp_exposed_s + data_wait_s
    others = [f"the other groups' collectives {_ms(mp_exposed_s)}"] if mp_exposed_s > 0 else []
    if data_wait_s > 0:
        others.append(f"the data wait {_ms(data_wait_s)}")
    with_them = f", with {' and '.join(others)}," if others else ""
    m, v = pipeline.micro_batches, pipeline.virtual_stages
    out = []
    for key, title, new_step, samples, how in (
        ("bigger_batch", NOMINAL_BATCH_TITLES["bigger_batch"].format(device=device),
         rest + big * per_sample, big,
         f"the pipeline's span {_ms(pipeline.span_s)} (its stages' compute, bubble and "
         f"sends){with_them} grows with the micro-batch"
         + (f", the rest of the step {_ms(rest)} is paid once" if rest else
            ": the traced step is all of it, so nothing is amortised")),
        ("accumulation", _pipeline_accumulation_title(pipeline),
         step_s + (acc - 1) * per_pass, acc,
         f"each more pass of {m * v} micro-batch chunks adds {_ms(per_pass)} (the replayed "
         f"1F1B's steady state and the sends' own time{with_them.rstrip(',')}), the fill "
         f"and drain {_ms(once)}"
         + (f" and the rest of the step {_ms(rest)}" if rest else "") + " paid once a step"),
    ):
        gain = float(samples * step_s / new_step - 1.0)
        note = f"{how}; global batch {samples}x: check time-to-quality"
        out.append(Remedy(key, title, gain, True, note, verdict=gain_verdict(gain)))
    return out


# The batch remedies of the exchange's model (``remedies._candidates``): twice the per-device
# batch, 4x the micro-steps
BATCH_FACTORS = {"bigger_batch": 2, "accumulation": 4}


def _with_measured(remedies: list[Remedy], measured: Remedy) -> list[Remedy]:
    """``remedies`` with ``measured`` (a remedy priced from the traces themselves) in place of
    the model's of the same key, ranked by its gain among the applicable ones."""
    out = [r for r in remedies if r.key != measured.key]
    at = next((i for i, r in enumerate(out)
               if not r.applicable or shown_gain(r) < shown_gain(measured)), len(out))
    out.insert(at, measured)
    return out


def _model_parallel_lines(degrees: dict, model_parallel: dict, step_s: float,
                          exposed_s: float) -> list[str]:
    """The evidence of the ``model_parallel_comm`` finding (two lines, as a report shows an
    "Also" finding's): the layout the process groups name; each role's collectives per step
    with the part nothing else covered, and the share they make together."""
    named = f" ({', '.join(degrees['named'])})" if degrees["named"] else ""
    parts = []
    for role, v in model_parallel.items():
        what = "sends and receives" if role == "pp" else "collectives"
        parts.append(f"{ROLE_WORDS[role]} {what} {_ms(v['comm_s'])} per step, "
                     f"{_ms(v['exposed_s'])} of it exposed")
    total = sum(v["exposed_s"] for v in model_parallel.values())
    capped = (", at most the slowest rank's exposed communication" if total > exposed_s * 1.0005
              else "")
    line = (f"{'; '.join(parts)} (medians over ranks; together {_ms(exposed_s)}, "
            f"{_pct(exposed_s / step_s)} of the step{capped}; exposed: covered by no compute, "
            "data wait or other collective)")
    if "pp" in model_parallel:
        line += ("; a stage's exposed receives include its waits for the stage before, the "
                 "pipeline bubble among them (more micro-batches or an interleaved schedule "
                 "shrink it: scalesim plan prices both)")
    return [f"the traces' process groups: {layout_words(degrees)}{named}", line]


def tp_overlap_remedy(model_parallel: dict, step_s: float) -> Remedy | None:
    """Overlapping the tensor-parallel collectives with the matmuls (Transformer Engine's TP
    comm overlap, torchtitan's async TP), priced from the traces: the exposed tensor-parallel
    time t is hidden, the matmuls it runs beside slowed by the contention of docs/model.md §3,
    saving ``t x (1 - GPU_COMM_CONTENTION)``; gain ``step / (step - saving) - 1``. None where
    the traces show no exposed tensor-parallel collective."""
    from scalesim.model.overlap import GPU_COMM_CONTENTION
    from scalesim.remedies import TP_OVERLAP_TITLE

    exposed = model_parallel.get("tp", {}).get("exposed_s", 0.0)
    if exposed <= 0 or step_s <= 0:
        return None
    saving = exposed * (1.0 - GPU_COMM_CONTENTION)
    gain = step_s / (step_s - saving) - 1.0
    note = (f"the traced exposed tensor-parallel time {_ms(exposed)} hidden behind the matmuls, "
            f"which run {GPU_COMM_CONTENTION:.0%} of it slower beside the collectives "
            "(docs/model.md §3)")
    return Remedy("tp_overlap", TP_OVERLAP_TITLE, float(gain), True, note,
                  verdict=gain_verdict(float(gain)))


def attention_kernel_finding(summaries, step_s: float) -> tuple[Finding | None, Remedy | None]:
    """(finding, remedy) where the traced ranks ran a FlashAttention-2-class attention kernel on
    a device where it is slower than the vendor kernel (Hopper:
    ``presets.flash2_slower_than_vendor``), else (None, None). The attention time t is the median over
    those ranks of their median step's attention kernels; the vendor kernel would take
    ``t x FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER`` (pytorch/pytorch#142132's one benchmark), so
    the step loses ``t x (1 - ratio)``: the finding's share of the step, and the remedy's gain
    ``step / (step - saving) - 1``, the attention kernels assumed on the step's critical path
    (the compute stream). Lost at one device too, like a data stall: not a scaling cause."""
    from scalesim.attention_kernel import FLASH2_KERNEL
    from scalesim.presets import FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER as ratio
    from scalesim.presets import flash2_slower_than_vendor
    from scalesim.remedies import ATTENTION_KERNEL_TITLE

    slow = [s for s in summaries if s.attention_family == FLASH2_KERNEL and s.device_name
            and flash2_slower_than_vendor(s.device_name)]
    if not slow or step_s <= 0:
        return None, None
    t_attn = float(np.median([s.median("attention_s") for s in slow]))
    saving = t_attn * (1.0 - ratio)
    if saving <= 0:
        return None, None
    names = sorted({s.device_name for s in slow})
    evidence = [
        f"FlashAttention-2-class kernels (flash-attn 2 or PyTorch SDPA's flash backend) on "
        f"{', '.join(names)}: {_ms(t_attn)} per step, {_pct(t_attn / step_s)} of the step "
        f"(median over {len(slow)} rank{'s' if len(slow) > 1 else ''})",
        f"the vendor kernel (cuDNN, FlashAttention-3) ran {1.0 / ratio:.2f}x faster on an H100 "
        f"in one published benchmark (pytorch/pytorch#142132): it would save {_ms(saving)} per "
        f"step ({_pct(saving / step_s)}), lost at one device as at many",
    ]
    gain = step_s / (step_s - saving) - 1.0
    note = (f"measured attention time {_ms(t_attn)} x (1 - {ratio:.3f}), pytorch/pytorch#142132's "
            "one-benchmark ratio; the kernels assumed on the step's critical path")
    return (finding("attention_kernel", saving / step_s, evidence),
            Remedy("attention_kernel", ATTENTION_KERNEL_TITLE, float(gain), True, note,
                   verdict=gain_verdict(float(gain))))


def _parts_over_the_step(share_of_step: dict, devices, fit, words: Nouns = GPU_NOUNS) -> list[str]:
    """A note where a part of the step (fitted or measured) is more than the measured step:
    the fitted model does not describe the runs (a data stall of 138 % of the step, a remedy of
    +125,501 %), and its shares and remedy gains should not be read as findings."""
    over = [(float(v[i]), name, int(devices[i])) for name, v in share_of_step.items()
            if name != "compute" for i in range(len(v)) if v[i] > 1.0]
    if not over:
        return []
    share, name, n = max(over)
    part = {"comm": "exposed communication", "data": "data stall",
            "straggler": "straggler wait"}.get(name, name)
    return [f"the {part} is {share:.0%} of the measured step at {words.count(n)}: more than the step "
            f"itself, so the fitted model does not describe these runs (rms residual "
            f"{fit.rmse_rel:.0%}); read its shares and remedy gains as unreliable, and check the "
            f"runs (the same settings in every row, each run's {words.devices} and throughput)"]


def _traced_or_given(summaries, degrees: dict, exchange, shard_group: int | None):
    """(exchange, note) of a traced job: ``exchange`` as given (its shard group, where it gives
    none, the one the traces' groups show: ``shard_groups``) or read off the collectives with
    ``shard_group`` on it; a shard group at or above the exchange's ranks is full sharding.
    ScalesimError where the shard group cannot run."""
    from scalesim.fit_runs import RunsExchange

    ranks = _exchange_ranks(summaries, degrees)
    notes = []
    if exchange is None:  # traced_exchange reads the shard group the groups show
        exchange, note = traced_exchange(summaries, degrees)
        notes.append(note)
        if shard_group is not None:
            try:
                exchange = replace(exchange, shard_group=shard_group)
            except ScalesimError as exc:
                raise ScalesimError(f"the traces' collectives read as {exchange.strategy}: "
                                    f"{exc}") from None
    else:
        exchange = require_model(exchange, RunsExchange, "exchange")
        found = shard_groups(summaries, ranks) if by_group(summaries) else None
        traced = found.hybrid if found is not None else 0
        given = exchange.shard_group
        if not given and traced and exchange.sharded and exchange.zero_framework == "fsdp":
            exchange = replace(exchange, shard_group=traced)
        if exchange.sharded:
            notes.append(f"the job exchanged as {exchange.label()} (--strategy): the remedies "
                         "start from it")
        if traced and not given and exchange.shard_group == traced:
            notes.append(f"its shard group {traced} is the traces' ({found.desc}, all-reducing "
                         f"across {found.replicas} replicas); give --shard-group to say otherwise")
        elif traced and given and given != traced:
            notes.append(f"--shard-group {given} is used; the traces' groups show a shard group "
                         f"of {traced} ({found.desc})")
    if exchange.shard_group >= ranks:
        notes.append(f"shard group {exchange.shard_group} at or above the exchange's {ranks} "
                     "data-parallel ranks: it shards over all of them (full sharding)")
        exchange = replace(exchange, shard_group=0)
    if why := exchange.run_problem(ranks):
        raise ScalesimError(f"the traced job's data-parallel exchange: {why}")
    return exchange, "; ".join(n for n in notes if n)


def _exchange_ranks(summaries, degrees=None) -> int:
    """The ranks a traced job's data-parallel exchange runs over: the job's, or where its
    groups split the model (``degrees``) its replicas (dp x cp, ``exchange_replicas``)."""
    if degrees is not None and splits_the_model(degrees):
        return exchange_replicas(degrees)
    return max(len(summaries), max((s.world_size or 1) for s in summaries))


def _trace_remedies(cr, summaries, cause: str, exchange=None, degrees=None, dp_comm=None,
                    model_parallel_s: float = 0.0, per_sample_extra_s: float = 0.0,
                    per_step_s: float = 0.0):
    """Rank the seed remedies with a model profile built from the traced breakdown, the job
    exchanging as ``exchange`` (None: DDP; its link's bus bandwidth from the bytes that
    strategy sends, ``zero_exchange.sent_units``). Where the traces' groups split the model
    (``degrees``), the model's devices are the exchange's replicas (dp x cp,
    ``process_groups.exchange_replicas``), and the exposed
    collectives of the other groups (``model_parallel_s``) a fixed time of each micro-step, of
    which ``per_sample_extra_s`` grows with the micro-batch instead, and ``per_step_s`` more
    paid once a step (a pipeline's fill and drain, ``pipeline_batch_remedies``). The exchange
    takes ``dp_comm`` (``_dp_comm``: its own time a step and the part hidden, whose share is
    its overlap); None: the traced communication (``cr``'s, waits for peers included)."""
    from scalesim.fit_runs import DDP_EXCHANGE
    from scalesim.model import collectives as coll
    from scalesim.model.memory import ZERO1
    from scalesim.model.stragglers import expected_max_normal
    from scalesim.model.zero_exchange import sent_units
    from scalesim.schemas import (
        ComputeCurve,
        Hardware,
        Jitter,
        LinkLevel,
        LoaderCurve,
        LoaderPoint,
        Profile,
        Scenario,
        ScenarioLayout,
        Workload,
    )

    world = _exchange_ranks(summaries, degrees)
    if world < 2:
        return None, []
    step = cr["step_s"]
    compute = max(cr["compute_s"], 1e-6 * step)
    grad_bytes = 100e6
    ring = 2.0 * (world - 1) / world
    # all the exchange's collective time of one step, hidden or not
    transfer = max(cr["comm_s"] if dp_comm is None else dp_comm[0], 1e-9)
    # a fitted value: held within the busbw bounds; traces with no collective (ranks of no
    # all-reduce, or runs of one process each) gave 1e8 GB/s, which the link refused
    exchange = DDP_EXCHANGE if exchange is None else exchange
    codes = exchange.step_fields()
    units = float(sent_units(codes["strategy"], codes["framework"], 1,
                             codes["grad_sync"]))  # DDP: 2 (an all-reduce)
    # seconds per (bytes / busbw) the exchange takes: units x (n - 1) / n over all n ranks; under
    # hybrid sharding over the shard group s, then the shard's all-reduce across the r replicas
    shard = exchange.shard_group if 0 < exchange.shard_group < world else world
    replicas = world // shard
    per_byte = units / 2.0 * ring if shard == world else (
        units * (shard - 1) / shard + 2.0 * (replicas - 1) / replicas / shard)
    busbw = clip("busbw_GBps", per_byte * grad_bytes / transfer / coll.GB)
    link = LinkLevel(kind="traced", busbw_GBps=busbw, latency_s=0.0, source="from traces")
    hw = Hardware(name="traced job", device_name=traced_device_name(summaries),
                  devices_per_node=world,
                  device_memory_bytes=1e15, cpu_cores_per_node=world, intra_node=link,
                  inter_node=link, comm_compute_contention=0.0)  # traced compute includes it
    loader, loading = None, 0.0
    if cr["data_wait_s"] >= LOADER_MODELLED_SHARE * step:
        if any(s.loader_in_process for s in summaries):  # num_workers=0: serial, per sample
            loading = cr["data_wait_s"]
        else:  # worker processes: a supply beside the step, at today's rate
            loader = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=1.0 / step)],
                                 measured=True, source="from traces")
    overlap_share = (cr["overlap_share"] if dp_comm is None or dp_comm[0] <= 0
                     else dp_comm[1] / dp_comm[0])
    overlap = overlap_share >= OVERLAPPED_SHARE
    idle = max(cr["idle_s"], 0.0) + model_parallel_s
    micro = compute + idle + loading  # the model's micro-step, an in-process loader's time in it
    slow_factor, cv = 1.0, 0.0
    if cause == "stragglers":  # spread over all ranks: sigma * e_N = measured wait
        # a fitted value: held within the cv bounds (scalesim.bounds) like every profile number
        cv = clip("cv", cr["straggler_wait_s"] / (float(expected_max_normal(world)) * micro))
    else:  # one rank late by the measured wait
        slow_factor = 1.0 + cr["straggler_wait_s"] / micro
    # once a step: the model divides the optimizer step over the shard group (ZeRO), so the
    # time paid once a step is given times that divisor
    once = per_step_s * (shard if codes["strategy"] >= ZERO1 else 1)
    profile = Profile(
        name="traced job", hardware=hw,
        workload=Workload(name="traced", params=grad_bytes, wire_bytes_per_param=1.0, micro_batch=1),
        compute=ComputeCurve(overhead_s=idle - per_sample_extra_s,
                             per_sample_s=compute + per_sample_extra_s + loading,
                             optimizer_step_s=once, measured=True, source="from traces"),
        input_pipeline=loader, jitter=Jitter(step_time_cv=cv),
    )
    scenario = Scenario(devices=[world], devices_per_node=world, micro_batch=1, overlap=overlap,
                        **exchange.names(),
                        slow_device=0 if slow_factor > 1.0 + 1e-3 else None,
                        slow_factor=max(slow_factor, 1.0),
                        layout=ScenarioLayout(shard_group=shard) if shard < world else None)
    first, remedies = model_remedies(profile, scenario, world, cause, nominal_links=True,
                                     nominal_batch=True)
    if loading:
        remedies = [_loader_workers(profile, scenario, loading) if r.key == "loader" else r
                    for r in remedies]
        first = first_remedy(remedies, cause, least_decisive_gain(profile, scenario))
    capped = [_loader_within_wait(r, cr["data_wait_s"], step) for r in remedies]
    if capped == remedies:
        return first, remedies
    return first_remedy(capped, cause, least_decisive_gain(profile, scenario)), capped


# the loader remedy where the traces' DataLoader runs in the training process
LOADER_WORKERS_TITLE = "Load the input in DataLoader worker processes (num_workers > 0)"


def _loader_workers(profile, scenario, loading_s: float) -> Remedy:
    """The loader remedy of traces whose DataLoader ran in the training process
    (``traces.IN_PROCESS_LOADER``, num_workers=0): its ``loading_s`` a step is serial with the
    compute, so the traced job's model carries it as compute per sample (the other remedies
    scale it with the batch, and overlap still hides the exchange: a supply beside the step at
    today's rate had made them gain nothing); worker processes take it off the step."""
    from scalesim.predict import predict
    from scalesim.traces import IN_PROCESS_LOADER

    now = predict(profile, scenario)[0]
    compute = profile.compute.model_copy(
        update={"per_sample_s": profile.compute.per_sample_s - loading_s})
    after = predict(profile.model_copy(update={"compute": compute}), scenario)[0]
    gain = float(after.samples_per_s / now.samples_per_s - 1.0)
    note = (f"the traces' DataLoader loads in the training process ({IN_PROCESS_LOADER}: "
            f"num_workers=0), {_ms(loading_s)} a step serial with the compute; worker "
            "processes (DataLoader(num_workers=N), as many as keep up) load the next batches "
            "beside it")
    return Remedy("loader", LOADER_WORKERS_TITLE, gain, True, note, verdict=gain_verdict(gain))


def _loader_within_wait(remedy: Remedy, data_wait_s: float, step_s: float) -> Remedy:
    """``remedy`` with, where it is the loader's, its gain held to what removing the traced
    data wait gives, ``step / (step - wait) - 1``: the model holds the loader at today's rate
    (one step's samples a step) and rebuilds the rest of the step from medians of its parts,
    which can fall short of the traced step (one rank's step 2.58 ms, its parts 2.02), and
    that shortfall read as the loader's had promised +33 % for a 0.135 ms wait."""
    if remedy.key != "loader" or not remedy.applicable or step_s <= data_wait_s:
        return remedy
    most = data_wait_s / (step_s - data_wait_s)
    if shown_gain(remedy) <= most:
        return remedy
    note = (f"capped at removing the traced data wait ({_ms(data_wait_s)} of a {_ms(step_s)} "
            "step)")
    return replace(remedy, gain=float(most), objective_gain=float(most),
                   note=f"{remedy.note}; {note}" if remedy.note else note,
                   verdict=gain_verdict(float(most)))


# --------------------------------------------------------------------------------------------
# Text


def render_text(report: Report) -> str:
    lines = [f"Diagnosis of {report.source}", "",
             f"Likely cause: {report.cause.label}"]
    lines += [f"  - {e}" for e in report.cause.evidence]
    for other in report.others:
        of = "of the largest run's time" if report.kind == "runs" else "of the step"
        lines.append(f"Also: {other.label} ({_pct(other.share)} {of})")
        lines += [f"  - {e}" for e in other.evidence[:2]]
    lines.append("")
    if report.first_remedy is not None:
        r = report.first_remedy
        lines.append(f"First remedy to try: {r.title}: {gain_text(r)} "
                     f"{measure_words(r.measure)} predicted" + (f" ({r.note})" if r.note else ""))
        if r.caveat:
            lines.append(f"  caution: {r.caveat}")
    else:
        lines.append(f"First remedy to try: {no_first_remedy(report)}")
    lines += _verdict_groups(report)
    lines.append("")
    if report.kind == "runs":
        lines += _runs_tables(report)
    else:
        lines += _trace_tables(report)
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def no_first_remedy(report: Report) -> str:
    """Why a report names no first remedy (diagnose's text and the app's Diagnose page): none
    was predicted, none is predicted to help, or those that help do not treat the likely cause
    (a smaller batch where the batch is not too large, a larger one where it is): they are
    listed under "Remedies", not "Other remedies", with what they change."""
    if not report.remedies:
        return "not predicted (see the notes)"
    gains = [shown_gain(r) for r in report.remedies if r.helps]
    if gains and max(gains) < report.decisive_gain:
        return (f"none is predicted to gain {report.decisive_gain:.1%} or more (the model's median "
                "error), so none is told apart from running as today; those below gain less")
    if any(r.helps for r in report.remedies):
        return ("none advised for the likely cause; the remedies listed below help only as "
                "their notes say")
    return "none of the seed remedies is predicted to help"


def by_verdict(remedies: list[Remedy]) -> list[Remedy]:
    """``remedies`` in the planner's verdict order (``remedies.VERDICTS``), each verdict's in
    their own order: the order of diagnose's lists, the app's table and the HTML report."""
    return sorted(remedies, key=lambda r: VERDICTS.index(r.verdict))


def _verdict_groups(report: Report) -> list[str]:
    """The remedies but the first, grouped by the planner's verdict (``by_verdict``), each group
    titled by ``remedies.verdict_group`` ("Other remedies" only under a first remedy); a figure
    for each that was predicted (``shown_gain``, its measure said once above the groups), the
    note or why it does not apply after its title."""
    lines = []
    bands = has_gain_bands(report)
    if any(r is not report.first_remedy and r.applicable for r in report.remedies):
        lines.append(f"Gains in {gain_measure(report)}, the measure each verdict is judged on"
                     + (" [95% band over the parameters the runs allow]:" if bands else ":"))
    for verdict in VERDICTS:
        group = [r for r in by_verdict(report.remedies)
                 if r.verdict == verdict and r is not report.first_remedy]
        if group:
            first_said = report.first_remedy is not None
            lines.append(f"{verdict_group(verdict, first_said)} (model, applied alone):")
            for r in group:
                lines.append((f"  {shown_gain(r):+7.1%}" if r.applicable else f"  {'n/a':>7}")
                             + (f" {_band_column(r):<16}" if bands else "")
                             + f"  {r.title}" + (f" ({r.note})" if r.note else ""))
                if r.caveat:
                    lines.append(" " * (28 if bands else 11) + f"caution: {r.caveat}")
    return lines


def _band_column(remedy: Remedy) -> str:
    """'[+20.1, +31.0]': a listed remedy's 95 % band in percent, '' where it has none."""
    if remedy.gain_low is None or remedy.gain_high is None:
        return ""
    return f"[{remedy.gain_low * 100:+.1f}, {remedy.gain_high * 100:+.1f}]"


def _runs_tables(report: Report) -> list[str]:
    words = report_nouns(report)
    split = "model_split" in report.details  # runs fitted as model replicas (_as_replicas)
    device_words = table_nouns(report)
    (devices, wd), (nodes, wn) = count_columns(device_words)  # 'processes hosts' on CPU
    replicas = f" {words.devices:>8}" if split else ""
    out = [f"{devices:>{wd}} {nodes:>{wn}}{replicas} {'samples/s':>11} {'step ms':>9} {'speedup':>8} "
           f"{'eff':>6} {'comm':>6} {'data':>6} {'strag':>6} {'model ms':>9} {'resid':>7}"]
    for r in report.table:
        replicas = f" {r['replicas']:>8}" if split else ""
        out.append(f"{r['devices']:>{wd}} {r['nodes']:>{wn}}{replicas} {r['samples_per_s']:>11.4g} "
                   f"{r['step_time_s'] * 1e3:>9.2f} {r['speedup']:>8.2f} {r['efficiency']:>6.1%} "
                   f"{r['comm_share']:>6.1%} {r['data_share']:>6.1%} {r['straggler_share']:>6.1%} "
                   f"{r['model_step_time_s'] * 1e3:>9.2f} {r['residual']:>+7.1%}")
    knee = report.details["knee"]
    out.append("")
    if knee is None:
        out.append(f"knee: none ({no_knee_words(MIN_EFFICIENCY_DROP, 'runs')})")
    else:
        change = device_words.count_change(knee['devices_before'], knee['devices_after'])
        if split:
            change += f" ({words.count_change(knee['replicas_before'], knee['replicas_after'])})"
        crossing = (f", the data-parallel exchange crossing a {words.server} boundary" if split
                    else f", crossing a {words.server} boundary")
        out.append(f"knee: {change}, efficiency "
                   f"-{knee['efficiency_drop'] * 100:.1f} points"
                   + (crossing if knee["crosses_boundary"] else ""))
    fit = report.details["fit"]
    p = fit["parameters"]
    se = fit["stderr_rel"]

    def pm(name):
        if se.get(name) is not None:
            return f" (+-{se[name]:.0%})"
        if name in fit["at_bound"]:
            return " (at its bound: not measurable)"
        if name not in fit["not_shown"]:
            return " (fixed)"
        most = fit.get("held_at_most_s", {}).get(name)  # a report written before had none
        if most is None:
            return " (not shown by the runs: held)"
        level = name.split("_")[0]  # intra, inter
        bound = (f"at least {link_GBps(fit[f'{level}_busbw_GBps'] * p[name] / most)}"
                 if fit.get(f"{level}_busbw_GBps") else f"at most {most * 1e3:.3g} ms")
        return f" (not shown by the runs: held; they bound it only: {bound})"

    out.append(f"fit (rms residual {fit['rmse_rel']:.1%}, noise {fit['noise_rel']:.1%}):")
    bubble = fit.get("bubble_micro_steps", 0.0)  # a report written before it had none
    out.append(f"  compute: {p['overhead_s'] * 1e3:.3g} ms per micro-step{pm('overhead_s')} + "
               f"{p['per_sample_s'] * 1e3:.3g} ms per sample{pm('per_sample_s')}"
               + (f", one pipeline stage's: a step of k micro-batches takes k + {bubble:.3g} of "
                  "them (fill and drain)" if bubble else ""))
    intra = (f"{link_GBps(fit['intra_busbw_GBps'])} busbw" if fit["intra_busbw_GBps"]
             else f"gradient transfer {p['intra_transfer_s'] * 1e3:.3g} ms")
    out.append(f"  {words.link('intra_node')}: {intra}{pm('intra_transfer_s')}")
    if "inter_transfer_s" in fit["fitted"]:
        inter = (f"{link_GBps(fit['inter_busbw_GBps'])} busbw" if fit["inter_busbw_GBps"]
                 else f"gradient transfer {p['inter_transfer_s'] * 1e3:.3g} ms")
        out.append(f"  {words.link('inter_node')}: {inter}{pm('inter_transfer_s')}")
    else:
        out.append(f"  {words.link('inter_node')}: not measured")
    out.append(f"  overlap of communication with backward: {p['overlap']:.0%}"
               f"{_overlap_words(fit)}; jitter cv "
               f"{p['jitter_cv']:.3f}; input supply per {words.server} "
               + (f"{p['node_loader_samples_per_s']:.4g} samples/s" if fit["loader_limiting"]
                  else "not limiting"))
    out.append("extrapolation (95% band):")
    for e in report.details["extrapolation"]:
        flag = "" if e["constrained"] else f"  ({words.link('inter_node')} not measured: wide guess)"
        many = (f"{e['replicas']:>6} {words.noun(e['replicas'])} "
                f"({device_words.count(e['devices'])})" if split
                else f"{e['devices']:>6} {words.noun(e['devices'])}")
        out.append(f"  {many} on {e['nodes']:>3} "
                   f"{words.noun(e['nodes'], 'server')}: "
                   f"{e['samples_per_s']:.4g} samples/s [{e['low']:.4g} .. {e['high']:.4g}], "
                   f"efficiency {e['efficiency']:.0%}{flag}")
    return out


def _trace_tables(report: Report) -> list[str]:
    columns = ["step_s", "compute_s", "comm_s", "overlap_s", "exposed_comm_s", "data_wait_s",
               "idle_s"]
    head = (f"{'rank':>4} {'steps':>5} {'step ms':>9} {'compute':>9} {'comm':>9} {'overlap':>9} "
            f"{'exposed':>9} {'data':>9} {'idle':>9}")
    if any(r.get("attention_s", 0.0) > 0 for r in report.table):  # traced attention kernels
        columns.append("attention_s")
        head += f" {'attn':>9}"
    out = [head]
    for r in report.table:
        out.append(f"{r['rank']:>4} {r['steps']:>5} " + " ".join(
            f"{r[k] * 1e3:>9.2f}" for k in columns))
    pipeline = report.details.get("pipeline")
    if pipeline:  # each stage's compute and waits, and the replays the remedies come from
        out += ["", f"{'stage':>5} {'ranks':<12} {'compute':>9} {'waits':>9}"]
        for st in pipeline["stages"]:
            ranks = _series([str(r) for r in st["ranks"]], most=4)
            out.append(f"{st['stage']:>5} {ranks:<12} {st['compute_s'] * 1e3:>9.2f} "
                       f"{st['wait_s'] * 1e3:>9.2f}")
        how = {"annotations": "from the schedule's annotations",
               "receives": "counted from the receives", "": "fitted"}[pipeline["counted_from"]]
        v = pipeline["virtual_stages"]
        out.append(f"(waits: exposed sends and receives; {pipeline['micro_batches']} "
                   f"micro-batches{f' x {v} virtual stages' if v > 1 else ''}, {how}; "
                   f"replayed 1F1B span {pipeline['replay_s'] * 1e3:.2f}, "
                   f"even stages {pipeline['even_s'] * 1e3:.2f}, half the bubble "
                   f"{pipeline['halved_s'] * 1e3:.2f})")
    cr = report.details["cross_rank"]
    out.append("")
    steps = cr["steps_compared"]
    count = round(cr["slowest_consistency"] * steps)
    persistent = steps and slowest_in_most_steps(count, steps, len(report.table))
    if persistent and cr["slowest_factor"] >= SLOW_DEVICE_FACTOR:
        out.append(f"straggler: rank {cr['slowest_rank']} (slowest in "
                   f"{_pct(cr['slowest_consistency'])} of steps, own time "
                   f"{cr['slowest_factor']:.2f}x the median of the others)")
    elif persistent:  # the same rank, but no slower than healthy devices differ (or a tie)
        out.append(f"straggler: none beyond healthy device variation (rank "
                   f"{cr['slowest_rank']} the slowest in {_pct(cr['slowest_consistency'])} of "
                   f"steps at {cr['slowest_factor']:.3f}x the others' own time, under the "
                   f"{SLOW_DEVICE_FACTOR:.3f}x of a slow device)")
    elif steps:  # the slowest changes: no one rank to name, its factor is of each step's slowest
        turns = ", ".join(f"rank {r} in {n} of {steps}" for r, n in cr["slowest_counts"].items()
                          if n)
        out.append(f"straggler: no one rank (the slowest changes from step to step: {turns}); "
                   f"each step's slowest takes {cr['slowest_factor']:.2f}x the median own time "
                   "of the others")
    elif len(report.table) < 2:
        out.append("straggler: one rank traced: no other to compare it with (trace every rank)")
    elif any(n.startswith("one traced rank a pipeline stage") for n in report.notes):
        out.append("straggler: not compared: one traced rank a pipeline stage (trace the "
                   "data-parallel peers of a stage)")
    else:  # ranks profiled over different steps (another schedule, or runs of another job)
        out.append("straggler: not compared: the ranks' traces share no ProfilerStep number "
                   "(record the same steps on every rank)")
    out.append("(times in ms, medians over profiler steps)")
    return out
