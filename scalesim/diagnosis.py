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

This module holds what both diagnoses share: the causes, the ``Finding`` / ``Remedy`` /
``Report`` records and the model's remedies for a cause. Runs are diagnosed in
``scalesim.runs_diagnosis``, traces in ``scalesim.trace_diagnosis`` (their collectives read by
``scalesim.trace_collectives``), and a report is written as text by ``scalesim.diagnosis_text``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from scalesim.accuracy import median_error
from scalesim.device_nouns import (
    GPU_NOUNS,
    Nouns,
    hardware_nouns,
)
from scalesim.fit_runs import Z95
from scalesim.jsonio import to_json_text
from scalesim.layout_change import ARROW_FIELD, LayoutTitle, arrowed_said
from scalesim.remedies import DIAGNOSIS_VERDICTS

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
    "inter_server": ["interconnect", "overlap", "accumulation", "bigger_batch", "split_model",
                     "grad_sync"],
    "comm_growth": ["overlap", "tp_overlap", "accumulation", "bigger_batch", "interconnect",
                    "split_model", "grad_sync"],
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
    # one of ``remedies.DIAGNOSIS_VERDICTS``: the planner's words, or "depends on size"
    # (``runs_gradient_size``: it helps at some gradient size the runs allow, not at another)
    verdict: str = "not applicable"
    # the gain on the measure the verdict is judged on (``remedies.RemedyResult``'s names):
    # time to quality where a critical batch size is known, else throughput (None: ``gain``)
    objective_gain: float | None = None
    measure: str = "throughput"  # what objective_gain measures: time, quality or throughput
    # what its gain rests on that the measured runs do not pin ('' where nothing; for traces,
    # the reading of a data wait the steps cannot tell, ``other_gain``): said beside it in the
    # text, the app and --json (``remedy_caveat``)
    caveat: str = ""
    # the 95 % band of the shown gain (``shown_gain``) over the parameters the runs cannot rule
    # out (``set_gain_bands``); None where not banded (traces, a remedy that does not apply)
    gain_low: float | None = None
    gain_high: float | None = None
    # "split the model": the layout it runs (``remedies.split_change``: layout, ZeRO strategy,
    # accumulation, micro-batch); None for the other remedies and where it does not apply
    split_layout: dict | None = None
    # a batch remedy's factor, as the model's remedy says it (``remedies.RemedyResult.factor``:
    # twice the batch, 4x or 2x the micro-steps); None for the other remedies
    factor: int | None = None
    # runs without --params: [gradient bytes, shown gain] at each gradient size the runs allow
    # (``runs_gradient_size.judge_by_size``); None where the size is known, or not applicable
    gain_by_gradient_bytes: list[list[float]] | None = None
    # traces whose data wait may be a loader that paces the job or a fixed cost of each fetch,
    # the steps not telling which (``trace_data_wait``): the shown gain, relative, if it is the
    # fixed cost (``gain``: while the loader paces), its caveat giving both; None elsewhere
    other_gain: float | None = None
    helps: bool = field(init=False)  # a remedy: it runs and gains (verdict "remedy")

    def __post_init__(self) -> None:
        if self.verdict not in DIAGNOSIS_VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {DIAGNOSIS_VERDICTS}")
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
        from scalesim.diagnosis_text import render_text  # it reads Report: imported here

        return render_text(self)


def shown_gain(remedy: Remedy) -> float:
    """The figure every report shows for ``remedy`` (diagnose's text, the Diagnose page, the HTML
    report) and the first remedy's threshold compares: its gain on the measure its verdict is
    judged on (``objective_gain``), relative (0.05 = +5 %), so a remedy never shows a loss."""
    return remedy.objective_gain


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


# A positive fitted parameter (a transfer time, the input supply), or the inter- / intra-server
# ratio, is pinned by the runs where its 95 % band (Z95 standard errors of its log, from the fit's
# covariance) is within RATIO_PINNED_FACTOR either way. Beyond it (one server's runs whose exchange
# hides behind backward, say: the intra transfer time +-4000 %) a number from it, or a ratio of
# two point values, is one the runs do not show.
RATIO_PINNED_FACTOR = 2.0

# The fitted overlap is pinned by the runs where its 95 % band (Z95 standard errors) is within
# OVERLAP_PINNED_HALF_WIDTH of it; wider, the overlap remedy's gain rests on a share of the
# exchange hidden behind backward that the runs do not show (a setting: a quarter of the range).
OVERLAP_PINNED_HALF_WIDTH = 0.25


def band_factor(se: float) -> float:
    """The 95 % band of a positive fitted quantity whose standard error ``se`` is in log, as a
    factor either way: exp(Z95 se); inf where that passes a float (a standard error over ~360,
    runs that pin nothing), without numpy's overflow warning on the user's terminal."""
    with np.errstate(over="ignore"):
        return float(np.exp(Z95 * se))


def pinned(se: float, absolute: bool = False) -> bool:
    """Whether a fitted quantity's 95 % band is narrow enough to act on: the overlap within
    ``OVERLAP_PINNED_HALF_WIDTH`` (``absolute``), a positive parameter or a ratio of two within
    ``RATIO_PINNED_FACTOR`` either way (its error is in log)."""
    if absolute:
        return Z95 * se <= OVERLAP_PINNED_HALF_WIDTH
    return band_factor(se) <= RATIO_PINNED_FACTOR


# Traces record no batch size: the trace model runs a nominal micro-batch of 1, and these titles
# say so instead of quoting its "1 -> 2" ({device}: the devices' noun, ``device_nouns.nouns_for``);
# the accumulation title where the traces show no micro-step count either
# (``trace_ranks.traced_micro_steps``), else ``TRACED_ACCUMULATION_TITLE`` with the traced count
NOMINAL_BATCH_TITLES = {
    "bigger_batch": "Double the per-{device} batch (the traces do not record its size)",
    "accumulation": "Accumulate gradients over {factor}x the micro-steps (the traces do not "
                    "record how many)",
}


def traced_batch_title(device: str, now: int, after: int) -> LayoutTitle:
    """'Double the per-device batch (32 -> 64, from the traces' input shapes)': the batch
    remedy's title where the traces' input shapes give the micro-batch
    (``trace_ranks.traced_micro_batch``), today's and the doubled as the runs' title says them,
    a change of figures whose arrow a page writes its own (``arrowed_said``)."""
    return arrowed_said(f"Double the per-{device} batch (", f"{now}{ARROW_FIELD}{after}",
                        ", from the traces' input shapes)")


TRACED_ACCUMULATION_TITLE = ("Accumulate gradients over {after} micro-steps (the traces show "
                             "{now} micro-step{s} a step)")


def model_remedies(profile, scenario, devices: int, cause: str | tuple[str, ...],
                   nominal_links: bool = False,
                   split_framework: dict | None = None, nominal_batch: bool = False,
                   decisive_gain: float | None = None,
                   split_layout: dict | None = None,
                   traced_micro_steps: int | None = None,
                   ddp_reductions: int = 1) -> tuple[Remedy | None, list[Remedy]]:
    """All seed remedies at ``devices`` ranked by the model, and the first one to try.
    ``split_framework``: the framework's tensor-parallel and pipeline-send overlap in the
    split-the-model remedy's layouts (``remedies.rank_remedies``; None: the scenario's).
    ``decisive_gain``: the least gain a first remedy needs, where the caller has it for its report already
    (None: ``least_decisive_gain`` of ``profile`` and ``scenario``).

    ``nominal_links``: the profile's bandwidths rest on a nominal gradient size, so titles say
    "2x" instead of quoting GB/s that mean nothing on their own. ``nominal_batch``: the
    micro-batch and accumulation are nominal (traces): titles quote no count
    (``NOMINAL_BATCH_TITLES``), but for the accumulation a count the traces show,
    ``traced_micro_steps``, the scenario's (``TRACED_ACCUMULATION_TITLE``). ``split_layout``:
    the layout "split the model" tries (``remedies.split_change``; None: the planner's best),
    as ``Remedy.split_layout`` gives it. ``ddp_reductions``: the all-reduces a step of a DDP
    job that reduces in several micro-steps (``remedies.rank_remedies``).
    """
    from scalesim.remedies import rank_remedies, split_change

    # the runs or traces were examined for input waits: no input pipeline means none was found
    _, ranked = rank_remedies(profile, scenario, devices, split_framework=split_framework,
                              stall_examined=True, relative_links=nominal_links,
                              split_layout=split_layout, ddp_reductions=ddp_reductions)
    remedies = []
    for r in ranked:
        title = r.title
        if nominal_batch and r.key == "accumulation" and traced_micro_steps:
            title = TRACED_ACCUMULATION_TITLE.format(
                after=r.scenario.accumulation, now=traced_micro_steps,
                s="s" if traced_micro_steps != 1 else "")
        elif nominal_batch and r.key in NOMINAL_BATCH_TITLES:
            title = NOMINAL_BATCH_TITLES[r.key].format(
                device=hardware_nouns(profile.hardware).device, factor=r.factor)
        split = r.key == "split_model" and r.applicable
        remedies.append(Remedy(r.key, title, float(r.gain), r.applicable, r.reason, r.verdict,
                               float(r.objective_gain), r.measure,
                               split_layout=split_change(r.scenario, r.title) if split else None,
                               factor=r.factor))
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
