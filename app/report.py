"""The manager's report: one self-contained HTML file, and the charts as PNG files.

The HTML embeds every chart as inline SVG rendered by vl-convert (no JavaScript, no external
file, so it opens offline and prints as is), the headline numbers, the scenario, the tables and
the share link. Every text that came from a profile or the URL is HTML-escaped.
"""

from __future__ import annotations

import html
import io
import zipfile
from datetime import UTC, datetime

import vl_convert as vlc

from scalesim.attention_kernel import ATTENTION_KERNEL_LABELS
from scalesim.decision import card_rows
from scalesim.diagnosis_text import (
    by_verdict,
    gain_measure,
    gain_text,
    has_gain_bands,
    no_first_remedy,
)
from scalesim.figures import GIB_BYTES, amount, count_list, throughput
from scalesim.layout import replica_devices, split_short
from scalesim.layout_predict import layout_of
from scalesim.model.sharding import GRAD_SYNC_LABELS
from scalesim.precision import PRECISION_LABELS
from scalesim.remedies import measure_words
from scalesim.training_time import resolve_goal

from .charts import all_charts, chart_text, stall_caption
from .control_labels import STRATEGY_LABELS, ZERO_FRAMEWORK_LABELS, in_words, label
from .layout_titles import PAGE_SPLIT_HEADER, PER_REPLICA, page_layout_line
from .plan import (
    Plan,
    as_sentence,
    card_notes,
    finish_title,
    headline,
    if_runs,
    option_links,
    remedy_gain_cell,
    remedy_note,
    run_cells,
    story,
)
from .state import profile_caveats

REPORT_CHART_WIDTH_PX = 720
CAPTIONS = {  # {device}, {server}: the profile's nouns (``caption``)
    "throughput": "Predicted throughput beside ideal linear scaling; the red line marks the knee "
                  "and its cause.",
    "efficiency": "Scaling efficiency: the share of ideal linear speedup each {device} count keeps.",
    "step_breakdown": "Where each training step's time goes at each {device} count.",
    "remedies": "Each remedy applied alone at the focus {device} count, ranked by predicted gain.",
    "time_to_quality": "Time to the quality target vs global batch (critical batch size model).",
    "hours": "{finish} for each {device} count, each remedy and one more {server}.",
    "cost": "Cost (billed {device}-hours x price: whole instances) of the same options.",
    "a_vs_b": "Scenario A (now) and B side by side.",
}



def caption(plan: Plan, name: str) -> str:
    """A chart's caption in the report, in the profile's nouns ('each process count' on CPU) and
    the hours chart's goal ('Time to quality for each device count...', ``finish_title``; the
    chart is drawn only where a goal is known)."""
    goal = resolve_goal(plan.profile, plan.scenario).label() or "time to finish"
    return CAPTIONS.get(name, name).format(device=plan.words.device, server=plan.words.server,
                                           finish=finish_title(goal))


_CSS = """
*{box-sizing:border-box}
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:960px;margin:1.5em auto;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{margin-top:1.4em;border-bottom:1px solid #ddd;font-size:1.2em}
.card{border:2px solid #2e7d32;border-radius:8px;padding:.6em 1em;margin:1em 0}
.card h2{margin-top:.2em;border:none}.rec{font-size:1.05em}.rec b{color:#1b5e20}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.headline td{font-size:1.05em}.headline td.l{font-weight:bold}
figure{margin:1.2em 0}figcaption{color:#444;font-size:.9em}
figure svg{max-width:100%;height:auto}
code{word-break:break-all;font-size:.8em;background:#f6f6f6;padding:.2em}
.note{color:#444;font-size:.9em}
@media (max-width:600px){body{margin:.5em auto;padding:0 .5em}h1{font-size:1.25em}
table{font-size:.8em}td,th{padding:.2em .35em}}
@media print{@page{size:A4;margin:10mm}body{max-width:none;margin:0;font-size:8pt;line-height:1.3}
.details{display:none}.card{break-inside:avoid;padding:.3em .6em;margin:.5em 0}
h1{font-size:13pt;margin:0}h2{font-size:10pt;margin:.5em 0 .2em}p{margin:.3em 0}
table{font-size:7.5pt;margin:.3em 0}td,th{padding:.1em .35em}
.headline tbody{display:grid;grid-template-columns:auto 1fr auto 1fr}
.headline tr{display:contents}.headline td{font-size:7.5pt}
ul{margin:.2em 0;padding-left:1.2em}.caveats li{font-size:7pt}
figure{margin:.3em 0}figure.first svg{max-height:48mm;width:auto}figcaption{font-size:7pt}
a{color:#222}}
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _bold(text: str) -> str:
    """Escaped text with our own ``**bold**`` markers as <b>."""
    parts = [_e(p) for p in text.split("**")]
    return "".join(p if i % 2 == 0 else f"<b>{p}</b>" for i, p in enumerate(parts))


def _scroll(table_html: str) -> str:
    """A table that scrolls sideways on a narrow screen instead of widening the page."""
    return f'<div class="scroll">{table_html}</div>'


def decision_html(plan: Plan, base: str = "") -> str:
    """The decision card: question, options table, recommendation, assumption, and a link
    (from ``base``, the planner's address) to each option that runs its own what-if (or '')."""
    card = plan.decision
    if card is None:
        return ""
    rows = card_rows(card)
    header = list(rows[0])
    table = _table(header, [[r[k] for k in header] for r in rows])
    notes = "".join(f"<li>{_e(n)}</li>" for n in card_notes(plan))
    opens = "".join(f'<p class="note"><a href="{_e(url)}">Open in the planner: {_e(title)}</a></p>'
                    for title, url in option_links(plan, base) if url is not None)
    return (f'<section class="card" id="decision"><h2>{_e(card.question)}</h2>'
            f"{_scroll(table)}"
            f'<p class="rec"><b>Recommendation:</b> {_e(card.recommendation)}</p>'
            f'<p class="note">Main assumption: {_e(card.assumption)}.'
            + (f" Time to finish = {_e(card.goal)}." if card.goal else "") + "</p>"
            + (f'<ul class="note">{notes}</ul>' if notes else "") + opens + "</section>")


def _table(header: list[str] | None, rows: list[list], left: int = 1, cls: str = "") -> str:
    head = "".join(f'<th class="{"l" if i < left else ""}">{_e(h)}</th>'
                   for i, h in enumerate(header or []))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{_e(v)}</td>'
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows)
    head = f"<tr>{head}</tr>" if head else ""
    return f'<table class="{cls}">{head}{body}</table>'


def _kernel_words(profile, scenario) -> str:
    """The attention kernel the predictions ran (``layout_predict.kernel_for``: the one the
    profile's timings ran unless another was asked and could be priced), in the control's
    words, and whether the timings ran it or it was swapped for theirs."""
    from scalesim.layout_predict import (
        kernel_for,
        own_attention_kernel,
        timed_attention_family,
        timed_own_kernel,
    )

    kernel, own = kernel_for(profile, scenario.attention_kernel), own_attention_kernel(profile)
    words = ATTENTION_KERNEL_LABELS[kernel]
    if timed_own_kernel(profile) and timed_attention_family(profile) is not None:
        words += ("; the kernel the profile's timings ran" if kernel == own else
                  f"; swapped for the {own} kernel the profile's timings ran")
    return words


def scenario_lines(plan: Plan) -> list[tuple[str, str]]:
    """The scenario in words: (what, value) pairs; the settings keep the controls' names (one
    name per knob), the values say processes for a CPU calibration (``Plan.words``)."""
    s, p, hw, words = plan.scenario, plan.profile, plan.profile.hardware, plan.words
    intra = s.intra_busbw_GBps or hw.intra_node.busbw_GBps
    inter = s.inter_busbw_GBps or hw.inter_node.busbw_GBps
    batch = (f"fixed global batch {s.global_batch} (strong scaling)" if s.global_batch
             else f"{plan.focus.micro_batch} {_micro_batch_per(s, words)} (weak scaling)")
    lines = [
        ("profile", p.name),
        ("hardware", f"{hw.name}: {hw.device_name}"),
        ("workload", f"{p.workload.name} ({p.workload.params:,.0f} parameters)"),
        (in_words("{device} counts", words), count_list(s.devices, None)),
        (label("dpn", words).lower(), str(s.devices_per_node)),
        # only where set (a report without one reads as before)
        *([("memory margin", f"{100 * s.memory_margin:g}% of each {words.device}'s memory kept "
            f"free ({s.memory_margin:g})")] if s.memory_margin else []),
        ("batch", batch),
        ("gradient accumulation", str(s.accumulation)),
        *([("layout", page_layout_line(p, s, words))]
          if plan.focus.dp is not None else []),
        ("overlap with backward", "on" if s.overlap else "off"),
        ("bucket size", f"{s.bucket_mib:g} MiB"),
        ("strategy", STRATEGY_LABELS[s.strategy]),
        ("ZeRO framework", ZERO_FRAMEWORK_LABELS[s.zero_framework]),
        ("ZeRO-2/3 gradient sync", GRAD_SYNC_LABELS[s.grad_sync]),
        ("attention kernel", _kernel_words(p, s)),
        ("matmul precision", PRECISION_LABELS[s.precision]),
        ("all-reduce algorithm", s.algorithm),
        (label("intra", words).lower(), f"{intra:g} GB/s bus bandwidth"),
        (label("inter", words).lower(), f"{inter:g} GB/s bus bandwidth"),
        ("loader workers", "profile's best" if s.loader_workers is None
         else str(s.loader_workers)),
        ("straggler spread (std/mean)", "profile's" if s.straggler_cv is None
         else f"{s.straggler_cv:g}"),
        (in_words("slow {device}", words), "none" if s.slow_device is None
         else f"rank {s.slow_device}, {s.slow_factor:g}x slower"),
        *goal_lines(plan),
    ]
    return lines


def _micro_batch_per(scenario, words) -> str:
    """What one micro-batch is of: 'per model replica' where the model is split (tp x pp x cp >
    1: a replica spans devices), else 'per device' (in the profile's nouns)."""
    split = layout_of(scenario)
    return (PER_REPLICA if replica_devices(split.tp, split.pp, split.cp) > 1
            else f"per {words.device}")


def goal_lines(plan: Plan) -> list[tuple[str, str]]:
    """Critical batch, training length, samples to quality and price as the predictions use
    them (``training_time.resolve_goal``: the scenario's value, else the workload's, the
    calibrated noise scale's or the hardware preset's), each with where it came from: a value
    the profile supplies is not 'unknown', and one equal to the profile's is not 'given'."""
    from scalesim.training_time import resolve_goal

    s, p = plan.scenario, plan.profile
    wl, hw = p.workload, p.hardware
    goal = resolve_goal(p, s)

    def origin(given, own, own_words: str) -> str:
        return "given" if given is not None and given != own else own_words

    noise = p.noise_scale.b_simple if p.noise_scale is not None else None
    b_own, b_words = ((wl.critical_batch_size, "the workload's") if wl.critical_batch_size
                      is not None else (noise, "measured by calibration: gradient noise scale"))
    lines = [
        ("critical batch size", "unknown" if goal.critical_batch is None
         else f"{goal.critical_batch:,.0f} ({origin(s.critical_batch_size, b_own, b_words)})"),
        ("training run", "unknown" if goal.train_samples is None
         else f"{goal.train_samples:,.0f} {plan.unit} "
         f"({origin(s.train_samples, wl.train_samples, 'the workload preset')})"),
    ]
    if goal.min_samples is not None:
        e_min = origin(s.min_samples_to_quality, wl.min_samples_to_quality, "the workload preset")
        lines.append(("samples to quality (E_min)",
                      f"{goal.min_samples:,.0f} {plan.unit} ({e_min})"))
    price = origin(s.price_per_device_hour, hw.price_per_device_hour, f"{hw.name} list price")
    lines.append((in_words("price per {device}-hour", plan.words), "unknown"
                  if goal.price_per_device_hour is None
                  else f"${amount(goal.price_per_device_hour)} ({price})"))  # $0.001, not $0.00
    return lines


def chart_svgs(plan: Plan) -> dict[str, str]:
    return {name: vlc.vegalite_to_svg(chart.to_dict())
            for name, chart in all_charts(plan, REPORT_CHART_WIDTH_PX).items()}


# the headline's entries a report lists where the plan has them (``headline`` key, title), in order
OPTIONAL_HEADS = (
    ("data_stall", "Data stall"),
    ("not_runnable", "Not runnable"),
    ("one_device", "One-device baseline"),
    ("above_linear", "Efficiency above 100%"),
    ("time_to_train", None),  # titled by its goal, time to train or quality (finish_title)
    ("cost", "Cost"),
)


def report_html(plan: Plan, link: str, generated: datetime | None = None) -> str:
    """The whole report as one HTML document with no external resources."""
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    h = headline(plan)
    unit = plan.unit
    heads = [
        (f"{plan.words.devices.capitalize()} in focus", h["devices"]),
        ("Runnable", h["runnable"]),
        ("Throughput", h["throughput"] if h["runnable"] == "yes"
         else f"not runnable (would be {h['throughput']})"),
        ("Scaling efficiency", h["efficiency"]),
        (f"Speedup over one {plan.words.device}", h["speedup"]),
        ("Knee", h["knee"]),
        ("Largest single gain", h["best_remedy"]),
    ]
    heads += [(title or finish_title(h["goal"]), h[key]) for key, title in OPTIONAL_HEADS if key in h]
    caveats = profile_caveats(plan.profile)
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>scalesim plan: {_e(plan.profile.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Scaling plan: {_e(plan.profile.name)}</h1>",
        f'<p class="note">Predicted by scalesim (an analytical model of distributed training) '
        f"on {_e(when)}. These are predictions, not measurements.</p>",
        f"<p>{_bold(story(plan))}</p>",
        decision_html(plan, link.split("?", 1)[0]),
        "<h2>Headline</h2>",
        _scroll(_table(None, [[k, v] for k, v in heads], left=2, cls="headline")),
    ]
    if caveats:
        parts.append('<h2>Caveats of the profile</h2><ul class="caveats">'
                     + "".join(f"<li>{_e(c)}</li>" for c in caveats) + "</ul>")
    svgs = chart_svgs(plan)
    first = next(iter(svgs), None)
    if first is not None:
        parts.append(f'<figure class="first">{svgs[first]}<figcaption>'
                     f"{_e(caption(plan, first))} {_e(chart_text(plan, first))}"
                     "</figcaption></figure>")
    parts.append('<div class="details"><h2>Charts</h2>')
    for name, svg in list(svgs.items())[1:]:
        parts.append(f"<figure>{svg}<figcaption>{_e(caption(plan, name))} "
                     f"{_e(chart_text(plan, name))}</figcaption></figure>")
    parts.append("<h2>Scenario</h2>")
    parts.append(_scroll(_table(["setting", "value"], [[k, v] for k, v in scenario_lines(plan)],
                                left=2)))
    parts.append(f"<h2>Prediction per {plan.words.device} count</h2>")
    split = plan.focus.dp is not None  # a split model: its layout and pipeline bubble too
    bubble = split or any(r.bubble_s for r in plan.rows)  # or a pipelined replica's bubble
    stall_note = stall_caption(plan)  # no input pipeline: no stall column, and why
    stall = not stall_note
    parts.append(_scroll(_table(
        [plan.words.header("devices"), plan.words.header("servers"),
         *([PAGE_SPLIT_HEADER] if split else []), "step ms", "compute ms",
         "exposed comm ms", *(["bubble ms"] if bubble else []),
         *(["data stall ms"] if stall else []),
         "straggler ms", f"{unit}/s", "efficiency", "memory GiB", "runnable"],
        [[r.devices, r.nodes, *([split_short(r.dp, r.tp, r.pp)] if split else []),
          *(if_runs(r, cell) for cell in (  # a run that does not fit: no time, pace or efficiency
              f"{r.step_time_s * 1e3:.2f}", f"{r.compute_s * 1e3:.2f}",
              f"{r.exposed_comm_s * 1e3:.2f}", *([f"{r.bubble_s * 1e3:.2f}"] if bubble else []),
              *([f"{r.data_stall_s * 1e3:.2f}"] if stall else []),
              f"{r.straggler_s * 1e3:.2f}", throughput(r.samples_per_s), f"{r.efficiency:.1%}")),
          f"{r.memory_bytes / GIB_BYTES:.1f}", "yes" if r.fits else "NO: not runnable"]
         for r in plan.rows])))
    if stall_note:
        parts.append(f'<p class="note">{_e(stall_note)}</p>')
    parts.append(f"<h2>Changes at {plan.words.count(plan.focus.devices)}</h2>")
    parts.append(_scroll(_table(
        ["change", "verdict", "throughput gain", f"{unit}/s", "time to finish", "cost", "note"],
        [[r.title, r.verdict, remedy_gain_cell(r, plan.focus.fits),
          *run_cells(r.prediction, r.prediction and r.prediction.samples_per_s, r.time_s,
                     r.cost_usd), remedy_note(r)]
         for r in plan.remedies])))
    parts.append("<h2>Hours and money</h2>")
    parts.append(_scroll(_table(
        ["option", plan.words.header("devices"), f"{unit}/s", "time to finish", "cost"],
        [[o.label, o.devices, *run_cells(o, o.samples_per_s, o.time_s, o.cost_usd)]
         for o in plan.options])))
    if plan.refusals or plan.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(as_sentence(n))}</li>"
                                                     for n in plan.refusals + plan.notes)
                     + "</ul>")
    parts.append("</div>")
    parts.append(f'<p class="note">Open this what-if in the planner: <a href="{_e(link)}">share '
                 f"link</a><br><code>{_e(link)}</code></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def charts_png_zip(plan: Plan, scale: float = 2.0) -> bytes:
    """Every chart as a PNG file, zipped (``01_throughput.png``...)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for i, (name, chart) in enumerate(all_charts(plan, REPORT_CHART_WIDTH_PX).items(), 1):
            archive.writestr(f"{i:02d}_{name}.png", vlc.vegalite_to_png(chart.to_dict(),
                                                                       scale=scale))
    return buffer.getvalue()


def gain_column(report) -> str:
    """The diagnosis remedies table's gain column (the Diagnose page's and this report's), naming
    the measure of its figures (``diagnosis.shown_gain``): 'predicted gain in time to quality'
    where a critical batch size is known, else 'predicted gain in throughput'; ' (95% band)'
    after it where the remedies have bands (runs, ``diagnosis_text.has_gain_bands``)."""
    return (f"predicted gain in {gain_measure(report)}"
            + (" (95% band)" if has_gain_bands(report) else ""))


def diagnosis_html(report, link: str | None, generated: datetime | None = None) -> str:
    """A Diagnose page's report as one self-contained, responsive HTML file: the cause and its
    evidence, the remedies with their predicted gains (95 % band), the notes, and a link that
    opens the fitted model in the planner. Each line says an input by its control and a layout
    in the planner's labels, as the page does (``diagnose_page.report_said``), not by
    diagnose's flag and notation."""
    from .diagnose_page import report_said

    said = report_said(report)  # an input the line names, as the Diagnose page's control

    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>scalesim diagnosis: {_e(report.source)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Why scaling is lost: {_e(report.source)}</h1>",
        f'<p class="note">Diagnosed by scalesim on {_e(when)} from measured '
        f"{'runs' if report.kind == 'runs' else 'profiler traces'}.</p>",
        f'<section class="card"><h2>Likely cause: {_e(report.cause.label)}</h2><ul>'
        + "".join(f"<li>{_e(said(e))}</li>" for e in report.cause.evidence) + "</ul>",
    ]
    if report.first_remedy is not None:
        gain = gain_text(report.first_remedy)
        what = measure_words(report.first_remedy.measure)
        parts.append(f'<p class="rec"><b>First remedy to try:</b> '
                     f"{_e(said(report.first_remedy.title))}: {_e(gain)} {_e(what)} predicted</p>")
    else:  # as diagnose's text says it: not "Other remedies" under no first one
        parts.append(f'<p class="rec"><b>First remedy to try:</b> '
                     f"{_e(said(no_first_remedy(report)))}</p>")
    parts.append("</section>")
    for other in report.others:
        parts.append(f"<p><b>Also: {_e(other.label)}</b>: "
                     + "; ".join(_e(said(e)) for e in other.evidence[:2]) + "</p>")
    cautions = any(x.caveat for x in report.remedies)  # the column only where one has words
    parts.append("<h2>Remedies (model, each applied alone)</h2>")
    parts.append(_scroll(_table(
        ["remedy", gain_column(report), "verdict", "note"] + (["caution"] if cautions else []),
        [[said(x.title), gain_text(x) if x.applicable else "n/a", x.verdict, said(x.note)]
         + ([said(x.caveat)] if cautions else []) for x in by_verdict(report.remedies)])))
    if report.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(said(n))}</li>" for n in report.notes)
                     + "</ul>")
    if link:
        parts.append(f'<p class="note">Open the fitted model in the planner: <a href="{_e(link)}">'
                     f"planner link</a><br><code>{_e(link)}</code></p>")
    parts.append("</body></html>")
    return "\n".join(parts)
