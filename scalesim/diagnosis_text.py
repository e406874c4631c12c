"""A diagnosis report as text: the cause, its evidence, the remedies by verdict and the runs' or
the traces' tables (``scalesim diagnose``'s default output).
"""

from __future__ import annotations

from scalesim.device_nouns import (
    CPU_NOUNS,
    GPU_NOUNS,
    Nouns,
    measured_nouns,
    nouns_for,
    rack_nouns,
    rack_of,
)
from scalesim.diagnosis import Remedy, Report, pinned, shown_gain
from scalesim.errors import KNOB
from scalesim.figures import (
    count_columns,
    link_GBps,
    milliseconds,
    rate,
    series,
    speedup,
    throughput,
    whole_percent,
)
from scalesim.fit_runs import Z95
from scalesim.knee import MIN_EFFICIENCY_DROP, no_knee_words
from scalesim.layout import knob_refusal
from scalesim.model.stragglers import (
    SLOW_DEVICE_FACTOR,
    slowest_in_most_steps,
)
from scalesim.pipeline_trace import unreplayed_s
from scalesim.remedies import DIAGNOSIS_VERDICTS, SIZE_DEPENDENT, measure_words, verdict_group
from scalesim.runs_shares import shares_words

# the runs table's share columns, by part (``runs_shares.PARTS``)
TEXT_SHARE_COLUMNS = {"comm": "comm", "data": "data", "straggler": "strag"}
# what the runs table's last column is (``fit_runs.Fit.residuals_rel``), said under the table
RESIDUAL_WORDS = "resid: model ms / step ms - 1, the fit's miss of each run"


def gain_text(remedy: Remedy, digits: int = 0) -> str:
    """A remedy's shown gain (``shown_gain``) with its 95 % band where it has one (``gain_low``,
    ``gain_high``): '+25% (95%: +20% to +31%)', else '+25%'; ``digits`` after the point. The
    first remedy's line in the text, the Diagnose page and its HTML report. A remedy whose verdict
    rests on the gradient size (``remedies.SIZE_DEPENDENT``) shows none: 'depends on size'."""
    if remedy.verdict == SIZE_DEPENDENT:
        return SIZE_DEPENDENT
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


def report_nouns(report: Report) -> Nouns:
    """The nouns of a report's devices: the fitted profile's of runs (a CPU ``device`` column
    names processes on hosts), a traced job's where no rank ran on a GPU (``traced_device_name``)."""
    if report.kind == "runs":
        return _fitted_nouns(report, nouns_for)
    return GPU_NOUNS if any(r.get("device") == "gpu" for r in report.table) else CPU_NOUNS


def table_nouns(report: Report) -> Nouns:
    """The nouns of the counts in a report's table and charts: the devices themselves, where the
    runs split the model too (the table counts devices beside replicas; ``report_nouns`` then
    says replicas)."""
    if report.kind == "runs":
        return _fitted_nouns(report, measured_nouns)
    return report_nouns(report)


def _fitted_nouns(report: Report, nouns_of) -> Nouns:
    """``nouns_of``'s words for a runs report's fitted device, its server a rack where the
    runs' GPU fills it with compute trays (``rack_of``, as ``Runs.nouns``; a fitted profile
    states no allocation unit)."""
    hardware = report.details["fitted_profile"]["hardware"]
    return rack_nouns(nouns_of(hardware["device_name"]),
                      rack_of(hardware["device_name"], hardware["devices_per_node"]))


def overlap_words(fit: dict) -> str:
    """The fitted overlap's uncertainty for the report: +-points, or not pinned / held."""
    if "overlap" not in fit["fitted"]:
        return " (fixed)"
    se = fit["stderr_abs"].get("overlap")
    if se is None:
        return " (at its bound: not measurable)" if "overlap" in fit["at_bound"] else ""
    if not pinned(se, absolute=True):
        return " (not pinned by these runs)"
    return f" (+-{Z95 * se * 100:.0f} points, 95%)"


def render_text(report: Report) -> str:
    lines = [f"Diagnosis of {report.source}", "",
             f"Likely cause: {report.cause.label}"]
    lines += [f"  - {e}" for e in report.cause.evidence]
    for other in report.others:
        of = "of the largest run's time" if report.kind == "runs" else "of the step"
        lines.append(f"Also: {other.label} ({whole_percent(other.share)} {of})")
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
    if any(r.verdict == SIZE_DEPENDENT for r in report.remedies):
        return knob_refusal("none is predicted to help at every gradient size these runs "
                            f"allow; give {KNOB.params} (the model's parameter count) to judge "
                            "those that depend on it")
    return "none of the seed remedies is predicted to help"


def by_verdict(remedies: list[Remedy]) -> list[Remedy]:
    """``remedies`` in the planner's verdict order (``remedies.DIAGNOSIS_VERDICTS``), each
    verdict's in their own order: the order of diagnose's lists, the app's table and the HTML
    report."""
    return sorted(remedies, key=lambda r: DIAGNOSIS_VERDICTS.index(r.verdict))


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
    for verdict in DIAGNOSIS_VERDICTS:
        group = [r for r in by_verdict(report.remedies)
                 if r.verdict == verdict and r is not report.first_remedy]
        if group:
            first_said = report.first_remedy is not None
            lines.append(f"{verdict_group(verdict, first_said)} (model, applied alone):")
            for r in group:
                lines.append((f"  {'n/a':>7}" if not r.applicable
                              else f"  {'depends':>7}" if r.verdict == SIZE_DEPENDENT
                              else f"  {shown_gain(r):+7.1%}")
                             + (f" {_band_column(r):<16}" if bands else "")
                             + f"  {r.title}" + (f" ({r.note})" if r.note else ""))
                if r.caveat:
                    lines.append(" " * (28 if bands else 11) + f"caution: {r.caveat}")
    return lines


def _band_column(remedy: Remedy) -> str:
    """'[+20.1, +31.0]': a listed remedy's 95 % band in percent, '' where it has none or its
    verdict rests on the gradient size (its caution gives each size's gain)."""
    if remedy.gain_low is None or remedy.gain_high is None or remedy.verdict == SIZE_DEPENDENT:
        return ""
    return f"[{remedy.gain_low * 100:+.1f}, {remedy.gain_high * 100:+.1f}]"


def _runs_tables(report: Report) -> list[str]:
    words = report_nouns(report)
    split = "model_split" in report.details  # runs fitted as model replicas (_as_replicas)
    device_words = table_nouns(report)
    (devices, wd), (nodes, wn) = count_columns(device_words)  # 'processes hosts' on CPU
    replicas = f" {words.devices:>8}" if split else ""
    out = [f"{devices:>{wd}} {nodes:>{wn}}{replicas} {'samples/s':>11} {'step ms':>9} {'speedup':>8} "
           f"{'eff':>6} " + " ".join(f"{c:>6}" for c in TEXT_SHARE_COLUMNS.values())
           + f" {'model ms':>9} {'resid':>7}"]
    for r in report.table:
        replicas = f" {r['replicas']:>8}" if split else ""
        pace = throughput(r["samples_per_s"])
        out.append(f"{r['devices']:>{wd}} {r['nodes']:>{wn}}{replicas} {pace:>11} "
                   f"{r['step_time_s'] * 1e3:>9.2f} {speedup(r['speedup']):>8} {r['efficiency']:>6.1%} "
                   f"{r['comm_share']:>6.1%} {r['data_share']:>6.1%} {r['straggler_share']:>6.1%} "
                   f"{r['model_step_time_s'] * 1e3:>9.2f} {r['residual']:>+7.1%}")
    which = shares_words(report.details.get("share_sources", {}), TEXT_SHARE_COLUMNS,
                         "step ms", "model ms")
    out.append("; ".join(filter(None, [which, RESIDUAL_WORDS])))
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
                 if fit.get(f"{level}_busbw_GBps") else f"at most {milliseconds(most)}")
        return f" (not shown by the runs: held; they bound it only: {bound})"

    out.append(f"fit (rms residual {fit['rmse_rel']:.1%}, noise {fit['noise_rel']:.1%}):")
    bubble = fit.get("bubble_micro_steps", 0.0)  # a report written before it had none
    out.append(f"  compute: {milliseconds(p['overhead_s'])} per micro-step{pm('overhead_s')} + "
               f"{milliseconds(p['per_sample_s'])} per sample{pm('per_sample_s')}"
               + (f", one pipeline stage's: a step of k micro-batches takes k + {bubble:.3g} of "
                  "them (fill and drain)" if bubble else ""))
    intra = (f"{link_GBps(fit['intra_busbw_GBps'])} busbw" if fit["intra_busbw_GBps"]
             else f"gradient transfer {milliseconds(p['intra_transfer_s'])}")
    out.append(f"  {words.link('intra_node')}: {intra}{pm('intra_transfer_s')}")
    if "inter_transfer_s" in fit["fitted"]:
        inter = (f"{link_GBps(fit['inter_busbw_GBps'])} busbw" if fit["inter_busbw_GBps"]
                 else f"gradient transfer {milliseconds(p['inter_transfer_s'])}")
        out.append(f"  {words.link('inter_node')}: {inter}{pm('inter_transfer_s')}")
    else:
        out.append(f"  {words.link('inter_node')}: not measured")
    out.append(f"  overlap of communication with backward: {p['overlap']:.0%}"
               f"{overlap_words(fit)}; jitter cv "
               f"{p['jitter_cv']:.3f}; input supply per {words.server} "
               + (rate(p['node_loader_samples_per_s'], "samples") if fit["loader_limiting"]
                  else "not limiting"))
    out.append("extrapolation (95% band):")
    for e in report.details["extrapolation"]:
        flag = "" if e["constrained"] else f"  ({words.link('inter_node')} not measured: wide guess)"
        if e.get("assumed"):  # a report written before it had none
            flag += f"  ({e['assumed']})"
        many = (f"{e['replicas']:>6} {words.noun(e['replicas'])} "
                f"({device_words.count(e['devices'])})" if split
                else f"{e['devices']:>6} {words.noun(e['devices'])}")
        out.append(f"  {many} on {e['nodes']:>3} "
                   f"{words.noun(e['nodes'], 'server')}: "
                   f"{rate(e['samples_per_s'], 'samples')} "
                   f"[{throughput(e['low'])} .. {throughput(e['high'])}], "
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
            ranks = series([str(r) for r in st["ranks"]], most=4)
            out.append(f"{st['stage']:>5} {ranks:<12} {st['compute_s'] * 1e3:>9.2f} "
                       f"{st['wait_s'] * 1e3:>9.2f}")
        how = {"annotations": "from the schedule's annotations",
               "receives": "counted from the receives", "": "fitted"}[pipeline["counted_from"]]
        v = pipeline["virtual_stages"]
        # half the bubble's replay, and the time the replay leaves that it pays once more
        extra = unreplayed_s(pipeline["span_s"], pipeline["replay_s"], pipeline["counted"])
        extra = extra if extra > 1e-9 * pipeline["span_s"] else 0.0  # 0 but rounding
        halved = (f"{(pipeline['halved_s'] - extra) * 1e3:.2f} (+ {extra * 1e3:.2f} the replay "
                  "leaves, paid once more)" if extra else f"{pipeline['halved_s'] * 1e3:.2f}")
        out.append(f"(waits: exposed sends and receives; {pipeline['micro_batches']} "
                   f"micro-batches{f' x {v} virtual stages' if v > 1 else ''}, {how}; "
                   f"replayed 1F1B span {pipeline['replay_s'] * 1e3:.2f}, "
                   f"even stages {pipeline['even_s'] * 1e3:.2f}, half the bubble {halved})")
    cr = report.details["cross_rank"]
    out.append("")
    steps = cr["steps_compared"]
    count = round(cr["slowest_consistency"] * steps)
    persistent = steps and slowest_in_most_steps(count, steps, len(report.table))
    # most of the slowest rank's excess its own data wait: the input pipeline's, said so
    loader = (f"; most of its excess is its own data wait ({cr['loader_wait_s'] * 1e3:.1f} of "
              f"the others' {(cr['loader_wait_s'] + cr['straggler_wait_s']) * 1e3:.1f} ms "
              "wait): the input pipeline's" if cr.get("loader_wait_s", 0.0)
              > cr["straggler_wait_s"] else "")
    if persistent and cr["slowest_factor"] >= SLOW_DEVICE_FACTOR:
        out.append(f"straggler: rank {cr['slowest_rank']} (slowest in "
                   f"{whole_percent(cr['slowest_consistency'])} of steps, own time "
                   f"{cr['slowest_factor']:.2f}x the median of the others{loader})")
    elif persistent:  # the same rank, but no slower than healthy devices differ (or a tie)
        out.append(f"straggler: none beyond healthy device variation (rank "
                   f"{cr['slowest_rank']} the slowest in {whole_percent(cr['slowest_consistency'])} of "
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
    out.append("(times in ms: each rank's median step, the step whose length is the median, "
               "and its own parts: compute + exposed + data + idle = step, comm = overlap + "
               "exposed)")
    return out
