"""Altair charts of a ``Plan``, titled and labelled for a reader who has not seen the model.

Pure builders: each takes a Plan and returns an Altair chart (no streamlit). ``width`` is
"container" in the app and a number of pixels in the report (vl-convert needs a number).
Times are shown in milliseconds per step or hours, throughput in the workload's unit per second.
"""

from __future__ import annotations

from types import SimpleNamespace

import altair as alt
import pandas as pd

from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.errors import cut_at_word, in_words_of
from scalesim.figures import (
    amount,
    count,
    duration_text,
    rate,
    signed_percent,
    throughput,
    whole,
    whole_percent,
)
from scalesim.layout import split_short
from scalesim.remedies import VERDICTS
from scalesim.training_time import resolve_goal

from .layout_titles import PAGE_ARROW, page_title, short_legend
from .named_controls import control_namer
from .plan import (
    DOES_NOT_FIT,
    MAKES_IT_RUN,
    NOT_RUNNABLE_SUFFIX,
    Plan,
    ab_misfit,
    as_sentence,
    makes_it_run_text,
    misfit_band_text,
    misfit_counts_text,
    misfit_devices,
    misfit_words,
    quality_misfits_text,
)

# One colour per meaning, in every chart (and the report): a colour never means two things.
PALETTE = {
    "predicted": "#1f77b4",  # the prediction (throughput, efficiency, time to quality)
    "ideal": "#6e6e6e",  # ideal linear scaling
    "compute": "#6baed6",  # step part: compute
    "exposed communication": "#c51b7d",  # step part: communication not hidden by backward
    "data stall": "#f58518",  # step part: waiting for input
    "straggler wait": "#7b3294",  # step part: waiting for the slowest device
    "knee": "#b2182b",  # the knee and the critical batch size: where scaling stops paying
    "remedy": "#2e7d32",  # a change that runs and wins; "meets the goal"; "now"
    "no change": "#bababa",  # a change that runs and changes nothing (remedies.NO_CHANGE)
    "loses": "#8c510a",  # a change that runs and loses
    "not runnable": "#404040",  # does not fit in device memory
    "more devices": "#01665e",  # one more server of devices
    "pipeline bubble": "#bcbd22",  # step part: pipeline fill and drain (a split model)
}
PARTS = [  # (field, label, colour) in stacking order, bottom first
    ("compute_s", "compute", PALETTE["compute"]),
    ("exposed_comm_s", "exposed communication", PALETTE["exposed communication"]),
    ("data_stall_s", "data stall", PALETTE["data stall"]),
    ("straggler_s", "straggler wait", PALETTE["straggler wait"]),
]
KIND_COLOURS = {"devices": PALETTE["predicted"], "remedy": PALETTE["remedy"],  # an option's
                "more devices": PALETTE["more devices"]}  # kind (``plan.Option.kind``)
BUBBLE_PART = ("bubble_s", "pipeline bubble", PALETTE["pipeline bubble"])
KNEE_COLOUR = PALETTE["knee"]
NOT_RUNNABLE_COLOUR = PALETTE["not runnable"]  # layouts that do not fit in device memory
NOT_RUNNABLE = "not runnable (does not fit in memory)"
# each verdict a change can have on the chart, in ``remedies.VERDICTS``' order (one not applicable
# is not drawn)
VERDICT_COLOURS = {k: PALETTE[k] for k in VERDICTS if k != "not applicable"}
TEXT_COLOUR = "#222222"  # 15.9:1 on white
MUTED_TEXT_COLOUR = "#4d4d4d"  # 8.4:1 on white: axis labels, subtitles (WCAG AA needs 4.5:1)
LINEAR_AXES_UP_TO = 32  # device ranges up to 32x use linear axes (the knee reads at a glance)
AB_LABEL_CHARS = 40  # B's title on the A/B chart's axis, cut at a word (the tooltip has it all)


def count_tooltip(words: Nouns, kind: str = "Q") -> alt.Tooltip:
    """The tooltip of a chart's device count (field ``devices``): titled by the field on a GPU
    profile, 'processes' on a CPU calibration's (``Nouns.header``)."""
    field = f"devices:{kind}"
    return alt.Tooltip(field, title=words.header("devices")) if words.cpu else alt.Tooltip(field)


def misfit_spans(points: list[tuple]) -> list[list[tuple]]:
    """The runs of adjacent points that do not fit, in the sweep's order (``points``: (x, run)
    pairs, ``run.fits``): [[(16, p16)], [(64, p64), (128, p128)]] where 32 fits."""
    spans: list[list[tuple]] = []
    previous_fits = True
    for x, run in points:
        if not run.fits:
            if previous_fits:
                spans.append([])
            spans[-1].append((x, run))
        previous_fits = run.fits
    return spans


def _misfit_rules(points: list[tuple], field: str, height: int, plan: Plan) -> list[alt.Chart]:
    """Where the layout does not fit in device memory (``points``: every (x, run) of the
    curve, ``field``: 'devices' or 'global_batch'): a dashed rule at a lone x, ``DOES_NOT_FIT``
    written up it; over adjacent xs one shaded band from the first to the last, with one label
    saying the range and the memory they need (``misfit_band_text``), not a rule per x. A line
    chart has no point there and its line breaks (a line through a run that cannot run would
    say it runs)."""
    spans = misfit_spans(points)
    lone = [span[0][0] for span in spans if len(span) == 1]
    layers = []
    tip = (count_tooltip(plan.words) if field == "devices" else alt.Tooltip(f"{field}:Q"))
    if lone:
        df = pd.DataFrame([{field: x, "label": DOES_NOT_FIT} for x in lone])
        x = alt.X(f"{field}:Q")
        layers += [alt.Chart(df).mark_rule(color=NOT_RUNNABLE_COLOUR, strokeDash=[2, 3],
                                           strokeWidth=1.5).encode(
            x=x, tooltip=[tip, alt.Tooltip("label:N", title="status")]),
            alt.Chart(df).mark_text(angle=270, align="left", baseline="bottom", dx=6, dy=-3,
                                    color=NOT_RUNNABLE_COLOUR, fontSize=11,
                                    fontWeight="bold").encode(
                x=x, y=alt.YValue(height), text=alt.Text("label:N"))]
    bands = [_band_record(span, field, plan) for span in spans if len(span) > 1]
    if bands:
        df = pd.DataFrame(bands)
        layers += [alt.Chart(df).mark_rect(color=NOT_RUNNABLE_COLOUR, opacity=0.12).encode(
            x=alt.X(f"{field}:Q"), x2=alt.X2("end"),
            tooltip=[alt.Tooltip("label:N", title="status")]),
            alt.Chart(df).mark_text(angle=270, align="left", baseline="top", dx=6, dy=4,
                                    color=NOT_RUNNABLE_COLOUR, fontSize=11, fontWeight="bold",
                                    lineBreak="\n", limit=max(height - 12, 40)).encode(
                x=alt.X(f"{field}:Q"), y=alt.YValue(height), text=alt.Text("lines:N"))]
    return layers


def _band_record(span: list[tuple], field: str, plan: Plan) -> dict:
    """A misfit band's row: its first and last x, its label ('does not fit: 16–64 devices,
    needs ...'), and the label on two lines where the band is drawn (at the comma)."""
    first, last = span[0][0], span[-1][0]
    what = (f"{first:,}–{last:,} {plan.words.devices}" if field == "devices"
            else f"global batch {first:,}–{last:,}")
    profile = plan.profile
    label = misfit_band_text(what, [run for _, run in span], profile, plan.words,
                             plan.scenario.memory_margin)
    return {field: first, "end": last, "label": label, "lines": label.replace(", ", "\n", 1)}


def _none_there(misfits: str, what: str) -> str:
    """'the layout does not fit in device memory at 16 devices, so the chart has no point
    there': why a chart leaves out the counts or batches of ``misfits`` (``misfit_counts_text``,
    ``quality_misfits_text``), ``what`` ('point', 'bar') it draws for the others; the charts'
    subtitles and, as a sentence, their words."""
    return f"the layout {misfits}, so the chart has no {what} there"


def _misfit_note(plan: Plan, what: str) -> str:
    """' The layout does not fit in device memory at 16 devices, so the chart has no point
    there.' (``what``: 'point', 'bar') where a count of the curve does not fit, else '' (the
    charts' words)."""
    misfits = misfit_counts_text(plan)
    return f" {as_sentence(_none_there(misfits, what))}" if misfits else ""


def _misfit_subtitle_lines(plan: Plan, subtitle: str) -> str | list[str]:
    """A line chart's subtitle, with the counts that do not fit on a line of their own first."""
    misfits = misfit_counts_text(plan)
    return [_none_there(misfits, "point"), subtitle] if misfits else subtitle


CHART_CONFIG = alt.Config(
    title=alt.TitleConfig(anchor="start", color=TEXT_COLOUR, subtitleColor=MUTED_TEXT_COLOUR),
    axis=alt.AxisConfig(labelColor=MUTED_TEXT_COLOUR, titleColor=TEXT_COLOUR, labelFontSize=11,
                        titleFontSize=12),
    legend=alt.LegendConfig(labelColor=TEXT_COLOUR, titleColor=TEXT_COLOUR, labelFontSize=11,
                            labelLimit=400),
)


def _sized(chart):
    """Width fits the container (or the given pixels); height is the plot's own.

    Streamlit's default (``fit``) squeezes title, legend and axes into ``height``.
    """
    chart.autosize = alt.AutoSizeParams(type="fit-x", contains="padding")
    chart.config = CHART_CONFIG  # set in place: each configure_* call deep-copies the chart
    return chart


def _linear(devices: list[int]) -> bool:
    return max(devices) <= LINEAR_AXES_UP_TO * min(devices)


def _log2_devices(devices: list[int], title: str = "devices") -> alt.X:
    """Device axis: linear for a short range (1-16 shows the knee as it is), log-2 beyond, with
    a tick per device count, or per power of two on long curves."""
    ticks = devices if len(devices) <= 16 else [
        2**i for i in range(16) if min(devices) <= 2**i <= max(devices)]
    if _linear(devices):
        return alt.X("devices:Q", title=title, scale=alt.Scale(domain=[0, max(devices)]),
                     axis=alt.Axis(values=ticks, format="d", labelOverlap=True))
    return alt.X("devices:Q", title=f"{title} (log scale)", scale=alt.Scale(type="log", base=2),
                 axis=alt.Axis(values=ticks, format="d", labelOverlap=True))


def _knee_layers(plan: Plan) -> list[alt.Chart]:
    """A vertical rule at the knee and its cause written beside it."""
    if plan.knee is None:
        return []
    k = plan.knee
    text = f"knee {k.devices_before}->{k.devices_after}: {k.label_in(plan.words)}"
    df = pd.DataFrame([{"devices": k.devices_after, "label": text}])
    devices = [r.devices for r in plan.rows]
    # a knee in the right half is labelled on its left, so the text is never clipped
    if _linear(devices):
        right_half = k.devices_after > max(devices) / 2
    else:
        right_half = devices.index(k.devices_after) >= len(devices) / 2 if (
            k.devices_after in devices) else False
    rule = alt.Chart(df).mark_rule(color=KNEE_COLOUR, strokeWidth=2).encode(x=alt.X("devices:Q"))
    label = alt.Chart(df).mark_text(
        align="right" if right_half else "left", baseline="top", dx=-6 if right_half else 6,
        dy=4, color=KNEE_COLOUR, fontSize=12, fontWeight="bold", limit=260,
    ).encode(x=alt.X("devices:Q"), y=alt.YValue(4), text=alt.Text("label:N"))
    return [rule, label]


def throughput_chart(plan: Plan, width="container", height: int = 320) -> alt.LayerChart:
    """Predicted throughput beside ideal linear scaling, knee marked with its cause."""
    unit = plan.unit
    records = []
    for r in plan.rows:
        ideal = r.samples_per_s / r.efficiency if r.efficiency > 0 else None
        status = "runs" if r.fits else NOT_RUNNABLE
        records.append({"devices": r.devices, "series": "predicted",  # none: no point, no line
                        "value": r.samples_per_s if r.fits else None,
                        "pace": throughput(r.samples_per_s) if r.fits else None,
                        "efficiency": r.efficiency if r.fits else None, "fits": r.fits,
                        "status": status})
        records.append({"devices": r.devices, "series": "ideal (linear)", "value": ideal,
                        "pace": None if ideal is None else throughput(ideal),
                        "efficiency": 1.0, "fits": True, "status": "runs"})
    df = pd.DataFrame(records)
    colour = alt.Color("series:N", title=None, scale=alt.Scale(
        domain=["predicted", "ideal (linear)"], range=[PALETTE["predicted"], PALETTE["ideal"]]),
        legend=alt.Legend(orient="top", symbolType="stroke", symbolStrokeWidth=3))
    devices = [r.devices for r in plan.rows]
    linear = _linear(devices)
    base = alt.Chart().encode(  # data once, on the layer: one dataset, serialised once
        x=_log2_devices(devices, plan.words.devices),
        y=alt.Y("value:Q", title=f"{unit} per second" + ("" if linear else " (log scale)"),
                scale=alt.Scale(type="linear" if linear else "log")),
        color=colour,
        strokeDash=alt.StrokeDash("series:N", legend=None, scale=alt.Scale(
            domain=["predicted", "ideal (linear)"], range=[[1, 0], [6, 4]])),
        tooltip=[count_tooltip(plan.words), alt.Tooltip("series:N"),
                 alt.Tooltip("pace:N", title=f"{unit}/s"),  # figures.throughput's text
                 alt.Tooltip("efficiency:Q", format=".1%"), alt.Tooltip("status:N")],
    )
    layers = [base.mark_line(strokeWidth=2.5), base.mark_point(filled=True, size=40)]
    points = [(r.devices, r) for r in plan.rows]
    return _sized(alt.layer(*layers, *_knee_layers(plan),
                            *_misfit_rules(points, "devices", height, plan), data=df).properties(
        title=alt.TitleParams(f"Throughput vs {plan.words.devices}: predicted and ideal",
                              subtitle=_misfit_subtitle_lines(
                                  plan, "the gap between the lines is throughput lost to scaling")),
        width=width, height=height))


def efficiency_chart(plan: Plan, width="container", height: int = 260) -> alt.LayerChart:
    """Scaling efficiency (speedup / devices) per device count."""
    df = pd.DataFrame([{"devices": r.devices,  # none where it does not fit: no point, no line
                        "efficiency": r.efficiency if r.fits else None,
                        "speedup": r.speedup if r.fits else None, "fits": r.fits,
                        "status": "runs" if r.fits else NOT_RUNNABLE} for r in plan.rows])
    devices = [r.devices for r in plan.rows]
    base = alt.Chart().encode(
        x=_log2_devices(devices, plan.words.devices),
        y=alt.Y("efficiency:Q", title="scaling efficiency", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1.05])),
        tooltip=[count_tooltip(plan.words), alt.Tooltip("efficiency:Q", format=".1%"),
                 alt.Tooltip("speedup:Q", format=".1f"), alt.Tooltip("status:N")],
    )
    layers = [base.mark_line(strokeWidth=2.5, color=PALETTE["predicted"]),
              base.mark_point(filled=True, size=40, color=PALETTE["predicted"])]
    points = [(r.devices, r) for r in plan.rows]
    return _sized(alt.layer(*layers, *_knee_layers(plan),
                            *_misfit_rules(points, "devices", height, plan), data=df).properties(
        title=alt.TitleParams(f"Scaling efficiency vs {plan.words.devices}",
                              subtitle=_misfit_subtitle_lines(
                                  plan, f"100% = every added {plan.words.device} adds its full "
                                  "throughput")),
        width=width, height=height))


def _parts(rows) -> list[tuple[str, str, str]]:
    """PARTS, with the pipeline bubble after compute where a row has one (a split model), and
    without the data stall where no row models it (``data_stall_s`` None: no input pipeline)."""
    parts = PARTS
    if all(r.data_stall_s is None for r in rows):
        parts = [p for p in PARTS if p[0] != "data_stall_s"]
    if any(getattr(r, "bubble_s", 0.0) > 0 for r in rows):
        return [parts[0], BUBBLE_PART, *parts[1:]]
    return parts


def stall_left_out(rows) -> bool:
    """Whether a row of ``rows`` does not model the data stall (``predict.input_pipeline_modelled``):
    its column and bar are left out, not drawn as 0 (``stall_caption`` says why)."""
    return any(r.data_stall_s is None for r in rows)


def stall_caption(plan) -> str:
    """'' where every row of ``plan`` models the data stall; else the sentence the app's
    breakdowns (charts, tables, report) add: the stall is left out, not drawn as 0
    (``predict.input_pipeline_modelled``), the loader-workers knob said as its control."""
    from scalesim.predict import STALL_NOT_MODELLED

    rows = plan.rows
    if not stall_left_out(rows):
        return ""
    said = in_words_of(STALL_NOT_MODELLED, control_namer(plan.state, plan.words))
    return (said[0].upper() + said[1:] + ": no data-stall bar or "
            "number (a 0 would read as a loader that keeps up)"
            + ("" if all(r.data_stall_s is None for r in rows) else " where a row has none")
            + ".")


def _subtitle(text: str, rows) -> str:
    """A breakdown chart's subtitle, with the stall's note where a row does not model it."""
    return text + ("; data stall not modelled (no input pipeline measured)"
                   if stall_left_out(rows) else "")


def _breakdown_records(label_rows) -> pd.DataFrame:
    records = []
    parts = _parts([row for _, _, row in label_rows])
    for label, order, row in label_rows:
        for i, (name, part, _) in enumerate(parts):
            if getattr(row, name) is None:  # a data stall not modelled: no bar, not a 0 bar
                continue
            records.append({"bar": label, "order": order, "part": part, "stack": i,
                            "ms": getattr(row, name) * 1e3,
                            "step_ms": row.step_time_s * 1e3})
    return pd.DataFrame(records)


def _stacked_bars(df: pd.DataFrame, x_title: str | None, bars: list[str] | None = None,
                  titled: bool = False) -> alt.Chart:
    """The stacked step parts of ``df`` by bar; ``bars``: the x slots in order (a slot with no
    rows stays empty), else the bars of ``df``; ``titled``: ``df`` has each bar's full
    ``title``, shown first in the tooltip (a bar's name cut short on the axis)."""
    shown = set(df["part"]) if "part" in df else set()  # none: no slot has a bar
    parts = [p for p in [*PARTS[:1], BUBBLE_PART, *PARTS[1:]] if p[1] in shown]
    titles = [alt.Tooltip("title:N", title="scenario")] if titled else []
    y = alt.Y("ms:Q", title="milliseconds per training step", stack="zero")
    if not shown:  # every slot empty: an axis with no numbers, no legend of parts not drawn
        y = alt.Y("ms:Q", title="milliseconds per training step", stack="zero",
                  scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(labels=False, ticks=False,
                                                                grid=False))
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("bar:N", title=x_title, sort=bars or list(dict.fromkeys(df["bar"])),
                scale=alt.Scale(domain=bars) if bars else alt.Undefined,
                axis=alt.Axis(labelAngle=0, labelLimit=220)),
        y=y,
        color=alt.Color("part:N", title="step time", scale=alt.Scale(
            domain=[p for _, p, _ in parts], range=[c for _, _, c in parts]),
            legend=alt.Legend(orient="top") if parts else None),
        order=alt.Order("stack:Q"),
        tooltip=[*titles, alt.Tooltip("bar:N"), alt.Tooltip("part:N"),
                 alt.Tooltip("ms:Q", format=".2f"),
                 alt.Tooltip("step_ms:Q", title="whole step, ms", format=".2f")],
    )


def _misfit_slots(slots: list[str], height: int) -> alt.Chart:
    """``DOES_NOT_FIT`` written at the foot of each of the ``slots`` (x, by bar) left empty: a
    run that cannot run has no bar (the A/B chart, the step breakdown)."""
    return alt.Chart(pd.DataFrame([{"bar": slot, "label": DOES_NOT_FIT} for slot in slots])
                     ).mark_text(baseline="bottom", dy=-4, color=NOT_RUNNABLE_COLOUR, fontSize=12,
                                 fontWeight="bold").encode(
        x=alt.X("bar:N"), y=alt.YValue(height), text=alt.Text("label:N"))


def _stacked(df: pd.DataFrame, x_title: str, width, height, title, subtitle) -> alt.Chart:
    return _sized(_stacked_bars(df, x_title).properties(
        title=alt.TitleParams(title, subtitle=subtitle), width=width, height=height))


def breakdown_chart(plan: Plan, width="container", height: int = 300) -> alt.Chart:
    """Stacked step time per device count: compute, exposed comm, data stall, straggler wait.
    A count whose layout does not fit in memory has no bar: its slot is marked 'does not fit'
    and the subtitle names the counts (``misfit_counts_text``)."""
    runs = [r for r in plan.rows if r.fits]
    misfits = misfit_counts_text(plan)
    if not misfits:
        df = _breakdown_records([(str(r.devices), i, r) for i, r in enumerate(plan.rows)])
        return _stacked(df, plan.words.devices, width, height, "Where each step's time goes",
                        _subtitle("only the communication not hidden behind backward counts",
                                  plan.rows))
    df = _breakdown_records([(str(r.devices), i, r) for i, r in enumerate(plan.rows) if r.fits])
    bars = _stacked_bars(df, plan.words.devices, [str(r.devices) for r in plan.rows])
    mark = _misfit_slots([str(n) for n in misfit_devices(plan)], height)
    subtitle = [_none_there(misfits, "bar"),  # a line of its own: never clipped
                _subtitle("only the communication not hidden behind backward counts",
                          runs or plan.rows)]
    return _sized(alt.layer(bars, mark).properties(
        title=alt.TitleParams("Where each step's time goes", subtitle=subtitle),
        width=width, height=height))


# the short tags of ``layout_label``, which the layouts chart's subtitle explains
LAYOUT_TAGS = ("dp", "tp", "pp", "z", "mb", "rc", "sp")


def layout_label(row) -> str:
    """A planner row in a few characters: '#1 dp8 tp2 pp2 z1 mb1' ('z1/4': ZeRO-1 sharded over
    a shard group of 4, hybrid sharding)."""
    return (f"#{row.rank} {split_short(row.dp, row.tp, row.pp, 'tag')}"
            + (f"x{row.virtual_stages}" if row.virtual_stages > 1 else "")
            + f" z{row.zero}" + (f"/{row.shard_group}" if row.hybrid else "")
            + f" mb{row.micro_batch}"
            + ("" if row.recompute == "none" else f" rc-{row.recompute[:3]}")
            + (" sp" if row.sequence_parallel else ""))


def layout_parts(row) -> SimpleNamespace:
    """A planner row's breakdown in the curve's parts (tensor, context, pipeline and
    data-parallel communication together as exposed communication)."""
    b = row.breakdown_s
    return SimpleNamespace(
        compute_s=b["compute_s"], bubble_s=b["bubble_s"],
        data_stall_s=b["stall_s"] if row.stall_modelled else None,
        exposed_comm_s=b["tp_comm_s"] + b["cp_comm_s"] + b["p2p_s"] + b["dp_exposed_s"],
        straggler_s=b["straggler_s"], step_time_s=row.step_time_s)


def layouts_chart(rows, devices: int, width="container", height: int = 320,
                  words: Nouns = GPU_NOUNS) -> alt.Chart:
    """The planner's ranked layouts at ``devices``: where each one's step goes, best first
    (``words``: the devices' nouns, ``Plan.words``)."""
    parts = [layout_parts(r) for r in rows]
    df = _breakdown_records([(layout_label(r), i, p)
                             for i, (r, p) in enumerate(zip(rows, parts, strict=True))])
    return _stacked(df, "layout (best first)", width, height,
                    f"Ranked layouts on {words.count(devices)}: where each step's time goes",
                    [short_legend(LAYOUT_TAGS, words),  # a line of its own: never clipped
                     _subtitle("only layouts that fit in memory", parts)])


def remedies_chart(plan: Plan, width="container", height: int | None = None) -> alt.LayerChart:
    """Each applicable change at the focus count, applied alone, ranked as ``rank_remedies`` ranks
    (time to finish when a goal is known, else throughput): remedies, no change, losers, not
    runnable (``remedies.VERDICTS``)."""
    rows = [r for r in plan.remedies if r.applicable and r.prediction is not None]
    measure = rows[0].measure if rows else "throughput"
    df = pd.DataFrame([{"remedy": r.title, "gain": r.objective_gain, "rank": i,
                        "effect": r.verdict if r.verdict != "not runnable" else NOT_RUNNABLE,
                        "throughput_gain": r.gain,
                        "samples_per_s": r.prediction.samples_per_s,
                        "pace": throughput(r.prediction.samples_per_s),
                        "label": (signed_percent(r.objective_gain) if r.prediction.fits
                                  else "not runnable")} for i, r in enumerate(rows)])
    if df.empty:
        df = pd.DataFrame([{"remedy": "no remedy applies", "gain": 0.0, "rank": 0,
                            "effect": "remedy", "throughput_gain": 0.0, "samples_per_s": 0.0,
                            "pace": throughput(0.0), "label": ""}])
    now_fits = plan.focus.fits
    if not now_fits and rows:  # no gain against a run that cannot happen: each one's own pace
        df["gain"] = df["samples_per_s"]
        df["label"] = [MAKES_IT_RUN if r.prediction.fits else "not runnable" for r in rows]
        df = df.drop(columns="throughput_gain")
    df.loc[df["effect"] == NOT_RUNNABLE, "gain"] = 0.0  # no bar: it cannot run
    height = height or max(60, 36 * len(df))
    y = alt.Y("remedy:N", title=None, sort=list(df["remedy"]), axis=alt.Axis(labelLimit=360))
    what = {"time": "faster to finish (large-batch penalty included)",
            "quality": "faster to quality (critical batch size model)"}.get(measure,
                                                                            "throughput gain")
    ranked = f"ranked by {what}"
    tips = [alt.Tooltip("gain:Q", title=what, format="+.1%"),
            alt.Tooltip("throughput_gain:Q", title="throughput gain", format="+.1%")]
    if not now_fits and rows:
        what = f"{plan.unit}/s"
        ranked = f"today's layout does not fit in {plan.words.memory}: each change's own {what}"
        tips = []
    bars = alt.Chart(df).mark_bar().encode(
        x=alt.X("gain:Q", title=f"predicted: {what}",
                axis=alt.Axis(format="%" if now_fits or not rows else ",.0f"),
                scale=alt.Scale(domain=[min(0.0, df["gain"].min()) * 1.25,  # room for labels
                                        max(0.0, df["gain"].max()) * 1.25 or 0.1])),
        y=y,
        color=alt.Color("effect:N", title=None, scale=alt.Scale(
            domain=[NOT_RUNNABLE if k == "not runnable" else k for k in VERDICT_COLOURS],
            range=list(VERDICT_COLOURS.values())),
            legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("remedy:N"), *tips, alt.Tooltip("effect:N"),
                 alt.Tooltip("pace:N", title=f"{plan.unit}/s")],  # figures.throughput's
    )
    text = alt.Chart(df).mark_text(align="left", dx=4, fontWeight="bold", color="#222").encode(
        x=alt.X("gain:Q"), y=y, text=alt.Text("label:N"))
    return _sized(alt.layer(bars, text).properties(
        title=alt.TitleParams(f"Changes at {plan.words.count(plan.focus.devices)}, each applied alone",
                              subtitle=f"{ranked}; only green bars are remedies"),
        width=width, height=height))


def quality_chart(plan: Plan, width="container", height: int = 280) -> alt.LayerChart | None:
    """Time to reach the quality target vs global batch (needs a critical batch size)."""
    if not plan.quality:
        return None
    b_crit = resolve_goal(plan.profile, plan.scenario).critical_batch  # a noise scale too
    title_y = ("hours to quality target" if plan.quality_absolute
               else "time to quality (1 = fastest)")
    df = pd.DataFrame([{"global_batch": q.global_batch, "micro_batch": q.micro_batch,
                        "value": q.time_to_quality if q.fits else None,  # none: no point
                        "fits": "fits in memory" if q.fits else NOT_RUNNABLE}
                       for q in plan.quality])
    now = plan.focus.global_batch
    base = alt.Chart(df).encode(
        x=alt.X("global_batch:Q", title="global batch (samples per optimizer step, log scale)",
                scale=alt.Scale(type="log", base=2), axis=alt.Axis(format=",")),
        y=alt.Y("value:Q", title=title_y, scale=alt.Scale(type="log")),
        tooltip=[alt.Tooltip("global_batch:Q", format=","), alt.Tooltip("micro_batch:Q", format=","),
                 alt.Tooltip("value:Q", format=".3g"), alt.Tooltip("fits:N")],
    )
    line = base.mark_line(color=PALETTE["predicted"], strokeWidth=2.5)
    points = base.mark_point(filled=True, size=50).encode(
        color=alt.Color("fits:N", title=None, scale=alt.Scale(
            domain=["fits in memory", NOT_RUNNABLE],
            range=[PALETTE["predicted"], NOT_RUNNABLE_COLOUR])))
    misfits = [q.global_batch for q in plan.quality if not q.fits]
    subtitle = ("above the critical batch, bigger batches need more samples: faster steps stop "
                "paying off")
    if misfits:  # no point, the line broken, a rule: a batch that does not fit has no time
        points = base.mark_point(filled=True, size=50, color=PALETTE["predicted"])
        subtitle = [_none_there(quality_misfits_text(plan), "point"), subtitle]
    marks = pd.DataFrame([
        {"global_batch": b_crit, "label": "critical batch " + (
            f"{b_crit:,.0f}" if b_crit >= 1 else f"{b_crit:.2g}"), "colour": "crit"},
        {"global_batch": now, "label": f"now: {whole(now)}", "colour": "now"},
    ])
    rules = alt.Chart(marks).mark_rule(strokeDash=[4, 3]).encode(
        x=alt.X("global_batch:Q"), color=alt.Color("colour:N", legend=None, scale=alt.Scale(
            domain=["crit", "now"], range=[KNEE_COLOUR, PALETTE["remedy"]])))
    labels = alt.Chart(marks).mark_text(align="left", dx=4, baseline="top", fontWeight="bold").encode(
        x=alt.X("global_batch:Q"), y=alt.YValue(4), text=alt.Text("label:N"),
        color=alt.Color("colour:N", legend=None, scale=alt.Scale(
            domain=["crit", "now"], range=[KNEE_COLOUR, PALETTE["remedy"]])))
    layers = [line, points, rules, labels,
              *_misfit_rules([(q.global_batch, q) for q in plan.quality], "global_batch", height,
                             plan)]
    return _sized(alt.layer(*layers).resolve_scale(color="independent").properties(
        title=alt.TitleParams("Time to quality vs global batch at "
                              f"{plan.words.count(plan.focus.devices)}", subtitle=subtitle),
        width=width, height=height))


def _option_rows(plan: Plan):
    return [o for o in plan.options if o.cost_usd is not None and o.time_s]


def _option_chart(plan: Plan, field: str, title: str, subtitle: str, fmt: str,
                  width) -> alt.LayerChart | None:
    """Horizontal bars, one per option (device counts, remedies, more devices). An option that
    does not fit in memory has no time or money: no bar, its row marked 'does not fit' and the
    subtitle says so (``_misfit_subtitle``)."""
    every = _option_rows(plan)
    if not every:
        return None
    rows = [o for o in every if o.fits]
    out = [o for o in every if not o.fits]
    words = plan.words  # the legend's kinds: 'processes', 'more processes' on a CPU calibration
    kinds = {"devices": words.header("devices"), "remedy": "remedy",
             "more devices": f"more {words.header('devices')}"}
    drawn = [k for k in kinds if any(o.kind == k for o in rows)]  # the legend: kinds with a bar
    df = pd.DataFrame([{
        "option": o.label, "kind": kinds[o.kind],
        "hours": o.time_s / 3600.0, "cost": o.cost_usd,
        "label": (f"{o.time_s / 3600.0:,.1f} h" if field == "hours" else f"${amount(o.cost_usd)}"),
    } for o in rows], columns=["option", "kind", "hours", "cost", "label"])
    if out:
        subtitle = _misfit_subtitle(subtitle, len(out), len(every), words)
    y = alt.Y("option:N", title=None, sort=[o.label for o in every], axis=alt.Axis(labelLimit=340))
    base = alt.Chart(df).encode(y=y, tooltip=[
        alt.Tooltip("option:N"), alt.Tooltip("hours:Q", format=",.1f"),
        alt.Tooltip("cost:Q", format="$,.0f")])
    bars = base.mark_bar().encode(
        x=alt.X(f"{field}:Q", title=title, axis=alt.Axis(format=fmt),
                scale=alt.Scale(domain=[0, float(df[field].max() if rows else 0.0) * 1.2
                                        or 1.0])),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(
            domain=[kinds[k] for k in drawn], range=[KIND_COLOURS[k] for k in drawn]),
            legend=alt.Legend(orient="top") if drawn else None))
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(
        x=alt.X(f"{field}:Q"), text=alt.Text("label:N"))
    layers = [bars, text]
    if out:  # the row stays, marked at the axis: no time, no money
        layers.append(alt.Chart(pd.DataFrame([
            {"option": o.label, "label": DOES_NOT_FIT, field: 0.0} for o in out])).mark_text(
            align="left", dx=3, fontSize=11, fontWeight="bold", color=NOT_RUNNABLE_COLOUR).encode(
            x=alt.X(f"{field}:Q"), y=y, text=alt.Text("label:N"),
            tooltip=[alt.Tooltip("option:N"), alt.Tooltip("label:N", title="status")]))
    return _sized(alt.layer(*layers).properties(
        title=alt.TitleParams(title[0].upper() + title[1:] + f": {plan.words.device} counts and remedies",
                              subtitle=subtitle),
        width=width, height=22 * len(every)))


def _misfit_subtitle(subtitle: str, misfits: int, options: int, words: Nouns) -> list[str]:
    """The hours and cost charts' subtitle lines where ``misfits`` of the ``options`` do not fit
    in memory: said first, on a line of its own (a run that cannot run has no time or money,
    so no bar)."""
    which = ("none of the options fits" if misfits == options else
             f"{count(misfits, 'option')} {'does' if misfits == 1 else 'do'} not fit")
    return [f"{which} in {words.memory}: no bar, no time or money", subtitle]


def hours_chart(plan: Plan, width="container") -> alt.LayerChart | None:
    """Hours to train (or to quality) for every device count, remedy and 'add devices'."""
    goal = resolve_goal(plan.profile, plan.scenario)
    what = "to train" if goal.kind == "train" else "to quality"
    penalty = "; large-batch penalty included" if goal.penalised else ""
    return _option_chart(plan, "hours", f"hours {what}",
                         f"remedies at the focus {plan.words.device} count; shorter is better{penalty}",
                         ",.0f", width)


def money_chart(plan: Plan, width="container") -> alt.LayerChart | None:
    """Cost (billed device-hours x price) for every device count, remedy and 'add devices'."""
    hours = f"{plan.words.device}-hours"  # 'process-hours' on a CPU calibration
    return _option_chart(plan, "cost", f"cost in USD (billed {hours} x price)",
                         f"a remedy's cost counts {hours} only, not the price of new "
                         "network hardware", "$,.0f", width)


def ab_chart(plan: Plan, width="container", height: int = 260) -> alt.TopLevelMixin | None:
    """Step time of scenario A and B side by side, split into its parts. A side that cannot run
    has no bar: its slot is marked 'does not fit' and the subtitle says why (``ab_misfit``);
    None where neither runs."""
    if plan.b_focus is None:
        return None
    b_label = f"B: {cut_at_word(plan.b_label, AB_LABEL_CHARS)}"
    sides = [(f"A: now ({plan.words.count(plan.focus.devices)})", plan.focus, ab_misfit(plan, "A")),
             (b_label, plan.b_focus, ab_misfit(plan, "B"))]
    runs = [(label, order, p) for order, (label, p, out) in enumerate(sides) if out is None]
    if not runs:
        return None
    misfits = [(label, out) for label, _, out in sides if out is not None]
    df = _breakdown_records(runs)
    cut = b_label != f"B: {plan.b_label}"
    if cut:  # the axis has B's title cut at a word: the tooltip has it whole
        df["title"] = [f"B: {plan.b_label}" if bar == b_label else bar for bar in df["bar"]]
    bars = _stacked_bars(df, None,  # a slot kept for a side with no bar
                         [label for label, _, _ in sides] if misfits else None, titled=cut)
    title = alt.TitleParams("Scenario A vs B: time per training step", subtitle=_subtitle(
        "; ".join(out for _, out in misfits) or "B changes one thing; compare where the time goes",
        [p for _, _, p in runs]))
    if not misfits:
        return _sized(bars.properties(title=title, width=width, height=height))
    mark = _misfit_slots([label for label, _ in misfits], height)
    return _sized(alt.layer(bars, mark).properties(title=title, width=width, height=height))


def all_charts(plan: Plan, width="container") -> dict[str, alt.TopLevelMixin]:
    """Every chart of the plan that has data, by file-friendly name."""
    charts = {
        "throughput": throughput_chart(plan, width),
        "efficiency": efficiency_chart(plan, width),
        "step_breakdown": breakdown_chart(plan, width),
        "remedies": remedies_chart(plan, width),
        "time_to_quality": quality_chart(plan, width),
        "hours": hours_chart(plan, width),
        "cost": money_chart(plan, width),
        "a_vs_b": ab_chart(plan, width),
    }
    return {k: v for k, v in charts.items() if v is not None}


def pareto_chart(answer, width="container", height: int = 300) -> alt.LayerChart | None:
    """Time against money of the Pareto front (log axes), deadline and budget as rules, the
    cheapest plan that meets both (or the closest) marked."""
    if not answer.front:
        return None
    pick = answer.best or answer.closest
    df = pd.DataFrame([{"days": p.time_s / 86400.0, "cost": p.cost_usd,
                        "plan": page_title(answer.describe(p), answer.words),
                        "status": "meets the goal" if p.meets else "misses the goal"}
                       for p in answer.front])
    colour = alt.Color("status:N", title=None, scale=alt.Scale(
        domain=["meets the goal", "misses the goal"],
        range=[VERDICT_COLOURS["remedy"], NOT_RUNNABLE_COLOUR]), legend=alt.Legend(orient="top"))
    x = alt.X("days:Q", title="days to finish (log scale)", scale=alt.Scale(type="log"))
    y = alt.Y("cost:Q", title="total cost, USD (log scale)", scale=alt.Scale(type="log"),
              axis=alt.Axis(format="$,.0f"))
    points = alt.Chart(df).mark_point(filled=True, size=60).encode(
        x=x, y=y, color=colour, tooltip=[alt.Tooltip("plan:N"), alt.Tooltip("days:Q", format=".2f"),
                                         alt.Tooltip("cost:Q", format="$,.0f")])
    line = alt.Chart(df).mark_line(color=PALETTE["predicted"], strokeWidth=1.5).encode(x=x, y=y)
    limits = pd.DataFrame([{"days": answer.deadline_s / 86400.0, "cost": answer.budget_usd}])
    deadline = alt.Chart(limits).mark_rule(strokeDash=[4, 3], color="#222").encode(x="days:Q")
    budget = alt.Chart(limits).mark_rule(strokeDash=[4, 3], color="#222").encode(y="cost:Q")
    layers = [line, points, deadline, budget]
    if pick is not None:
        mark = pd.DataFrame([{"days": pick.time_s / 86400.0, "cost": pick.cost_usd,
                              "label": "cheapest that meets the goal" if answer.best
                              else "closest"}])
        layers.append(alt.Chart(mark).mark_point(shape="diamond", size=220, filled=True,
                                                 color=KNEE_COLOUR).encode(x=x, y=y))
        layers.append(alt.Chart(mark).mark_text(align="left", dx=9, dy=-9, fontWeight="bold",
                                                color="#222").encode(x=x, y=y, text="label:N"))
    return _sized(alt.layer(*layers).properties(
        title=alt.TitleParams("Time against money: every plan no other plan beats on both",
                              subtitle="dashed lines: your deadline and budget"),
        width=width, height=height))


def pareto_text(answer) -> str:
    """The Pareto chart in words (its text alternative)."""
    if not answer.front:
        return "No plan runs."
    fast, cheap = answer.front[0], answer.front[-1]
    return (f"{count(len(answer.front), 'plan')} of the front on the chart, from the fastest "
            f"({duration_text(fast.time_s)} for ${amount(fast.cost_usd)}, "
            f"{answer.words.count(fast.devices)}) to the cheapest ({duration_text(cheap.time_s)} "
            f"for ${amount(cheap.cost_usd)}, {answer.words.count(cheap.devices)}); "
            f"{sum(p.meets for p in answer.front)} of them meet the deadline and the budget.")


def chart_text(plan: Plan, name: str) -> str:
    """The chart ``name`` (a key of ``all_charts``) in words: its text alternative."""
    rows, unit, words = plan.rows, plan.unit, plan.words
    if name == "throughput":  # runnable counts only; those that do not fit named after
        runs, misfits = [r for r in rows if r.fits], _misfit_note(plan, "point")
        if not runs:
            return f"No {words.device} count runs.{misfits}"
        first, last = runs[0], runs[-1]
        ideal = last.samples_per_s / last.efficiency if last.efficiency > 0 else last.samples_per_s
        knee = (f"; the knee is at "
                f"{words.count_change(plan.knee.devices_before, plan.knee.devices_after, PAGE_ARROW)} "
                f"({plan.knee.label_in(words)})" if plan.knee else "; no knee")
        at_first = f"{rate(first.samples_per_s, unit)} at {words.count(first.devices)}"
        if len(runs) == 1:
            return (f"Predicted throughput {at_first}, against {throughput(ideal)} for ideal linear "
                    f"scaling.{misfits}")
        return (f"Predicted throughput rises from {at_first} to {throughput(last.samples_per_s)} at "
                f"{whole(last.devices)}, against {throughput(ideal)} for ideal linear scaling{knee}."
                f"{misfits}")
    if name == "efficiency":  # runnable counts only; those that do not fit named after
        runs, misfits = [r for r in rows if r.fits], _misfit_note(plan, "point")
        if not runs:
            return f"No {words.device} count runs.{misfits}"
        # past 12 counts: the ends, the middle, and the counts the story names (the knee's two,
        # the focus), so that the words show the drop the chart does
        named = {plan.focus.devices, *((plan.knee.devices_before, plan.knee.devices_after)
                                       if plan.knee else ())}
        shown = runs if len(runs) <= 12 else [
            r for i, r in enumerate(runs)
            if i in (0, len(runs) // 2, len(runs) - 1) or r.devices in named]
        return ("Scaling efficiency: " + ", ".join(
            f"{words.count(r.devices)} {whole_percent(r.efficiency)}" for r in shown) + "." + misfits)
    if name == "step_breakdown":
        f = plan.focus
        misfits = _misfit_note(plan, "bar")
        if not f.fits:  # no step time for a run that cannot happen
            return (f"At {words.count(f.devices)} the layout "
                    f"{misfit_words(f, plan.profile, words, plan.scenario.memory_margin)}: it "
                    f"has no step time.{misfits}")
        stall = ("data stall not modelled" if f.data_stall_s is None
                 else f"data stall {f.data_stall_s * 1e3:.1f}")
        bubble = f", pipeline bubble {f.bubble_s * 1e3:.1f}" if f.bubble_s > 0 else ""
        return (f"At {words.count(f.devices)} a step takes {f.step_time_s * 1e3:.1f} ms: compute "
                f"{f.compute_s * 1e3:.1f}{bubble}, exposed communication "
                f"{f.exposed_comm_s * 1e3:.1f}, {stall}, straggler wait {f.straggler_s * 1e3:.1f} ms"
                + (" (no input pipeline measured)." if f.data_stall_s is None else ".")
                + misfits)
    if name == "remedies":
        groups = {}
        for r in plan.remedies:
            if r.applicable and r.prediction is not None:
                gain = ("cannot run" if not r.prediction.fits else signed_percent(r.objective_gain)
                        if plan.focus.fits else
                        makes_it_run_text(r.prediction.samples_per_s, plan.unit, words))
                groups.setdefault(r.verdict, []).append(f"{r.title} ({gain})")
        parts = [f"{k}: {'; '.join(v)}" for k, v in groups.items()]
        return ("Changes at the focus count. " + ". ".join(parts) + ".") if parts else (
            "No change applies.")
    if name == "time_to_quality" and plan.quality:  # batches that fit; the others named after
        runs = [q for q in plan.quality if q.fits]
        misfits = (f" {as_sentence(_none_there(quality_misfits_text(plan), 'point'))}"
                   if len(runs) < len(plan.quality) else "")
        if not runs:
            return f"No global batch runs.{misfits}"
        best = min(runs, key=lambda q: q.time_to_quality)
        if len(runs) == 1:
            return (f"Time to quality is known at global batch {best.global_batch:,} (per-device "
                    f"{best.micro_batch}) only.{misfits}")
        return (f"Time to quality is lowest at global batch {best.global_batch:,} (per-device "
                f"{best.micro_batch}); larger batches take longer.{misfits}")
    if name in ("hours", "cost"):
        opts = _option_rows(plan)
        if not opts:
            return ""
        runs = [o for o in opts if o.fits]  # an option that does not fit has no bar
        out = [o.label.removesuffix(NOT_RUNNABLE_SUFFIX) for o in opts if not o.fits]
        if not runs:
            return (f"None of the options shown fits in {plan.words.memory}: no bar, no time "
                    "or money.")
        fast = min(runs, key=lambda o: o.time_s)
        # the cheapest of those whose cost is all they buy: a faster-links remedy's is today's
        # devices alone (``Option.priced``), a lower bound no priced option can be weighed against
        priced = [o for o in runs if o.priced]
        cheap = min(priced, key=lambda o: o.cost_usd) if priced else None
        said = [("Fastest and cheapest that runs", fast)] if fast is cheap else [
            ("Fastest that runs", fast), *([("Cheapest that runs", cheap)] if cheap else [])]
        return (" ".join(f"{head}: {o.label}, {duration_text(o.time_s)} for "
                         f"${amount(o.cost_usd)}." for head, o in said)
                + (f" No bar, {DOES_NOT_FIT} in {plan.words.memory}: {'; '.join(out)}."
                   if out else ""))
    if name == "a_vs_b" and plan.b_focus is not None:
        a_out, b_out = ab_misfit(plan, "A"), ab_misfit(plan, "B")
        a_text = a_out or f"{plan.focus.step_time_s * 1e3:.1f} ms"
        b_text = b_out or f"{plan.b_focus.step_time_s * 1e3:.1f} ms"
        return f"Step time A (now): {a_text}; B ({plan.b_label}): {b_text}."
    return ""
