"""The Diagnose page: upload measured runs (CSV/JSON), profiler traces or an nvidia-smi log, see
why scaling is lost.

The same report as ``scalesim diagnose`` with the same options (``scalesim.diagnose_request``:
cause first, then evidence, then remedies with predicted gains), with charts: for runs, measured
throughput against the fitted model, ideal scaling and the extrapolation band, and where each
run's step time goes; for traces, where each rank's step goes and the step times per profiler
step; for an nvidia-smi log alone (``scalesim diagnose --smi``), each device's clock while busy.
Reports are cached by file contents and options, so moving a widget does not re-read a large
trace.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from scalesim import presets
from scalesim.bounds import bound, flag_of, parse_list
from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.diagnose_request import DEFAULT_WIRE_BYTES, GPUS_PER_NODE_HELP
from scalesim.diagnosis import Report, shown_gain
from scalesim.diagnosis_text import (
    by_verdict,
    gain_measure,
    gain_text,
    has_gain_bands,
    no_first_remedy,
    table_nouns,
)
from scalesim.errors import ScalesimError, with_text_removed
from scalesim.layout import (
    DEFAULT_RECOMPUTE_STYLE,
    P2P_OVERLAP_HELP,
    RECOMPUTE_STYLE_HELP,
    RECOMPUTE_STYLE_LABELS,
    SHARD_GROUP_HELP,
    TP_OVERLAP_HELP,
)
from scalesim.model.sharding import GRAD_SYNC_HELP, GRAD_SYNC_LABELS, TRACED_GRAD_SYNC_HELP
from scalesim.remedies import SIZE_DEPENDENT, measure_words
from scalesim.runs_shares import shares_words

from .charts import PALETTE, count_tooltip
from .control_labels import STRATEGY_LABELS, ZERO_FRAMEWORK_LABELS
from .layout_titles import page_title
from .markdown_text import escape_markdown as _md
from .table_columns import show_table

# The planner's words and colours (one colour per meaning across both pages).
RUN_PARTS = [("compute", "compute", PALETTE["compute"]),
             ("comm_share", "exposed communication", PALETTE["exposed communication"]),
             ("data_share", "data stall", PALETTE["data stall"]),
             ("straggler_share", "straggler wait", PALETTE["straggler wait"])]
# the table's share columns, by part (``runs_shares.PARTS``), as its frame names them
PAGE_SHARE_COLUMNS = {"comm": "comm_share", "data": "data_share", "straggler": "straggler_share"}
TRACE_PARTS = [("compute_s", "compute", PALETTE["compute"]),
               ("exposed_comm_s", "exposed communication", PALETTE["exposed communication"]),
               ("data_wait_s", "data stall", PALETTE["data stall"]), ("idle_s", "idle", "#8c8c8c")]
# Bytes per gradient element on the wire (``scalesim diagnose --wire-bytes``): the common cases
# (None: the transformer's, as predict charges it; without one 4)
WIRE_BYTES_LABELS = {None: "as the transformer's workload states (4 without one)",
                     DEFAULT_WIRE_BYTES: "4 (fp32 gradients, PyTorch DDP's default)",
                     2.0: "2 (bf16/fp16 gradients)"}
# The runs' GPU (``--gpu``): the hardware presets' devices, the default preset's first
GPUS = tuple(dict.fromkeys([presets.HARDWARE[presets.DEFAULT_HARDWARE].device_name,
                            *(hw.device_name for hw in presets.HARDWARE.values())]))
UPLOAD_WORKLOAD = "a workload JSON (upload)"
# How a line of the diagnosis names each input of ``scalesim diagnose`` on this page: its
# control's label (the CLI's flag, ``bounds.flag_of``, in its template: ``errors.in_words_of``);
# the controls' labels start with these words. The page's sources (the runs file, diagnose's
# FILE; the traces; the nvidia-smi log) are named by their upload's label, as controls are
DIAGNOSE_CONTROLS = {
    "params": "Model parameters", "critical_batch_size": "Critical batch size",
    "wire_bytes": "Bytes per gradient element on the wire", "extrapolate": "Extrapolate to",
    "workload": "The runs' transformer", "devices_per_node": "GPUs per server",
    "gpu": "The runs' GPU", "recompute_style": "How your framework reruns the forward",
    "tp_overlap": "Tensor-parallel overlap", "p2p_overlap": "Pipeline sends overlap compute",
    "strategy": "How the runs sharded", "zero_framework": "ZeRO framework",
    "grad_sync": "Gradient sync under accumulation", "shard_group": "Shard group",
    "trace": "Profiler traces", "smi": "nvidia-smi log", "runs": "Measured runs",
}
# the traced job's own words where they differ from the runs'
TRACED_CONTROLS = {**DIAGNOSE_CONTROLS, "strategy": "How the job sharded"}


def control_named(field: str, traced: bool = False) -> str:
    """Input ``field`` of ``scalesim diagnose`` as this page names it: its control's label
    (``DIAGNOSE_CONTROLS``; ``traced``: the traces' source, ``TRACED_CONTROLS``), else its
    CLI flag."""
    return (TRACED_CONTROLS if traced else DIAGNOSE_CONTROLS).get(field) or flag_of(field)


def control_in_line(field: str, traced: bool = False) -> str:
    """Input ``field`` as a line of the diagnosis names it on this page: its control's label in
    double quotes, as the page shows it, wherever the line splices it ('drop "The runs'
    transformer"', not 'drop The runs' transformer': a label is a phrase with its own capital,
    'How the job sharded'); an input without a control by its CLI flag, bare
    (``control_named``)."""
    label = (TRACED_CONTROLS if traced else DIAGNOSE_CONTROLS).get(field)
    return f'"{label}"' if label else flag_of(field)


def in_page_words(line, traced: bool = False, words: Nouns = GPU_NOUNS) -> str:
    """A line of the diagnosis (a note, evidence, a caveat, a refusal) with each input it names
    by its template said as this page's control (``control_in_line``); a layout's title (the
    split-the-model or sharding remedy's ``layout_change.LayoutTitle``) in the planner's labels,
    ``words`` its nouns (``layout_titles.page_title``: the page opens the fitted model in the
    planner), the inputs its words around the layout name said as the page's controls too; its
    own text where it names none. The text is never read."""
    return page_title(line, words, named=lambda f: control_in_line(f, traced))


def report_said(report: Report) -> Callable[[str], str]:
    """How the page and its HTML report say each line of ``report`` (``in_page_words``, its
    inputs as a runs' or a traces' page names them, a layout in the nouns of its table)."""
    traced, words = report.kind != "runs", table_nouns(report)
    return lambda line: in_page_words(line, traced, words)


def said_in_page(line, traced: bool = False) -> str:
    """``in_page_words`` escaped for Markdown: a line may quote an upload's text or a typed
    value (the page's error boxes; the report's lines are escaped the same way in
    ``show_report``)."""
    return _md(in_page_words(line, traced))


SMI_HELP = ("recorded during the run with `nvidia-smi --query-gpu=timestamp,index,clocks.sm,"
            "clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,"
            "clocks_throttle_reasons.active --format=csv -l 1`: names a device that runs slower, "
            "with its clocks, heat and throttling (the same as `scalesim diagnose --smi`)")
FORMAT_HELP = """One row per run: `devices`, `nodes` and `samples_per_s` or `step_time_s`; optional
`per_device_batch`, `global_batch`, `accumulation`, `data_wait_s`, `comm_s` (exposed),
`steps_to_target`, `rank_step_times_s` (`;`-separated), `gpus_per_node` (the GPUs one server
holds where the runs used fewer of each; the same in every row) and, for a job that splits its
model, `tp`, `pp`, `cp` (the same in every row: the runs are fitted over model replicas). Example:

```
devices,nodes,samples_per_s,per_device_batch
1,1,569,32
8,1,4541,32
16,2,6041,32
32,4,8795,32
```"""


def example_runs_csv() -> str:
    """Runs generated by the model (not measured): BERT-large (the bert-large workload preset,
    sequence 128) on 8-GPU servers, 100 Gb/s NIC."""
    from scalesim import presets
    from scalesim.predict import predict
    from scalesim.profiles import profile_from_presets
    from scalesim.schemas import Scenario

    profile = profile_from_presets(presets.get_hardware("a2-highgpu-8g"),
                                   presets.get_workload("bert-large"))
    rows = predict(profile, Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32))
    lines = ["devices,nodes,step_time_s,per_device_batch"]
    lines += [f"{r.devices},{r.nodes},{r.step_time_s:.6f},{r.micro_batch}" for r in rows]
    return "\n".join(lines) + "\n"


def _smi_report(smi: tuple[str, str] | None):
    """The nvidia-smi log (name, CSV text) parsed, or None."""
    if smi is None:
        return None
    from scalesim.sources.nvidia_smi import parse_smi_csv_text

    name, text = smi
    return parse_smi_csv_text(text, name)


@st.cache_data(show_spinner="Fitting the model to your runs...", max_entries=16)
def runs_report(text: str, name: str, params: float | None, critical: float | None,
                wire_bytes: float | None = None, extrapolate: tuple[int, ...] | None = None,
                workload: str | None = None, gpu: str | None = None,
                recompute_style: str | None = None, tp_overlap: bool = False,
                smi: tuple[str, str] | None = None, workload_text: str | None = None,
                strategy: str | None = None, zero_framework: str | None = None,
                grad_sync: str | None = None, shard_group: int | None = None,
                p2p_overlap: bool = True, gpus_per_node: int | None = None) -> Report:
    """``scalesim diagnose`` of the runs file ``text`` (named ``name``) with its options
    (``DiagnoseOptions``: parameters, bytes per gradient element on the wire, critical batch in
    samples, device counts, the runs' transformer preset and GPU, the framework's recompute style,
    TP overlap and pipeline-send overlap; an uploaded workload JSON: its name and
    ``workload_text``; how the runs exchanged: ZeRO strategy, framework, gradient sync, hybrid
    shard group; the devices a server of the runs holds, None: the most a run put in one) and
    the nvidia-smi log ``smi`` (name, CSV text) attached."""
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
    from scalesim.runs import parse_runs_text

    options = DiagnoseOptions(
        params=params, wire_bytes=wire_bytes, critical_batch=critical, extrapolate=extrapolate,
        workload=workload, gpu=gpu, recompute_style=recompute_style, tp_overlap=tp_overlap,
        workload_text=workload_text, strategy=strategy, zero_framework=zero_framework,
        grad_sync=grad_sync, shard_group=shard_group, p2p_overlap=p2p_overlap,
        gpus_per_node=gpus_per_node)
    log = _smi_report(smi)
    return diagnose_request(options, runs=parse_runs_text(text, name, gpu), smi=log)


@st.cache_data(show_spinner="Reading the traces...", max_entries=4)
def traces_report(files: tuple[tuple[str, bytes], ...],
                  smi: tuple[str, str] | None = None, strategy: str | None = None,
                  zero_framework: str | None = None, grad_sync: str | None = None,
                  shard_group: int | None = None) -> Report:
    """``scalesim diagnose --trace`` of the uploaded ``files`` (name, bytes), with the
    nvidia-smi log ``smi`` (name, CSV text) attached; ``strategy``, ``zero_framework``,
    ``grad_sync``, ``shard_group``: how the job exchanged (None: read off its collectives)."""
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
    from scalesim.trace_ranks import load_traces

    log = _smi_report(smi)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (name, data) in enumerate(files):
            folder = Path(tmp) / str(i)  # keeps the uploaded name for messages
            folder.mkdir()
            path = folder / Path(name).name
            path.write_bytes(data)
            paths.append(str(path))
        try:
            summaries = load_traces(paths)
        except ScalesimError as exc:  # name the uploaded file, not the temporary copy
            raise ScalesimError(with_text_removed(exc, re.escape(tmp) + r"/\d+/")) from None
        for s in summaries:
            s.path = Path(s.path).name
        options = DiagnoseOptions(strategy=strategy, zero_framework=zero_framework,
                                  grad_sync=grad_sync, shard_group=shard_group)
        return diagnose_request(options, traces=summaries,
                                trace_source=", ".join(name for name, _ in files), smi=log)


@st.cache_data(show_spinner="Reading the nvidia-smi log...", max_entries=4)
def smi_report(smi: tuple[str, str]):
    """``scalesim diagnose --smi`` of the uploaded log alone (name, CSV text): its
    ``SmiReport``."""
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    return diagnose_request(DiagnoseOptions(), smi=_smi_report(smi))


# ---------------------------------------------------------------- charts (pure)

def smi_clock_chart(report, width="container") -> alt.Chart:
    """Median SM clock of each device while busy, the slow ones marked, the maximum as a tick."""
    records = [{"device": f"GPU {d.index}", "MHz": d.sm_clock_MHz,
                "max MHz": d.max_sm_clock_MHz, "state": "slow" if d.index in report.slow
                else "as its peers", "temperature C": d.temperature_C}
               for d in report.devices]
    data = pd.DataFrame(records)
    x = alt.X("device:N", title=None, sort=None)
    bars = alt.Chart(data).mark_bar().encode(
        x=x, y=alt.Y("MHz:Q", title="SM clock while busy, MHz (median)"),
        color=alt.Color("state:N", title=None,
                        scale=alt.Scale(domain=["as its peers", "slow"],
                                        range=[PALETTE["compute"], PALETTE["straggler wait"]])),
        tooltip=["device:N", alt.Tooltip("MHz:Q", format=",.0f"),
                 alt.Tooltip("max MHz:Q", format=",.0f"),
                 alt.Tooltip("temperature C:Q", format=".0f")])
    ticks = alt.Chart(data).mark_tick(color="black", thickness=2).encode(x=x, y="max MHz:Q")
    return alt.layer(bars, ticks).properties(
        width=width, height=240, title="Each device's clock while busy (tick: its maximum)")


def _log2_x(values, words: Nouns) -> alt.X:
    return alt.X("devices:Q", title=f"{words.header('devices')} (log scale)",
                 scale=alt.Scale(type="log", base=2),
                 axis=alt.Axis(values=sorted(set(values)), format="d", labelOverlap=True))


def table_frame(report: Report) -> pd.DataFrame:
    """The report's table, its count columns named in the devices' nouns ('processes', 'hosts'
    for a CPU calibration's runs; ``Nouns.header``)."""
    words = table_nouns(report)
    return pd.DataFrame(report.table).rename(
        columns={h: words.header(h) for h in ("devices", "nodes")})


def runs_throughput_chart(report: Report, width="container") -> alt.LayerChart:
    """Measured throughput, the fitted model, ideal scaling and the extrapolation band."""
    t = report.table
    base = t[0]["samples_per_s"] / t[0]["devices"]
    points, lines = [], []
    for r in t:
        points.append({"devices": r["devices"], "series": "measured", "value": r["samples_per_s"]})
        model = r["samples_per_s"] * r["step_time_s"] / r["model_step_time_s"]
        lines.append({"devices": r["devices"], "series": "fitted model", "value": model})
    extra = report.details["extrapolation"]
    for e in extra:
        lines.append({"devices": e["devices"], "series": "fitted model", "value": e["samples_per_s"]})
    all_devices = [r["devices"] for r in t] + [e["devices"] for e in extra]
    for p in sorted(set(all_devices)):
        lines.append({"devices": p, "series": "ideal (linear)", "value": base * p})
    band = pd.DataFrame([{"devices": t[-1]["devices"], "low": lines[len(t) - 1]["value"],
                          "high": lines[len(t) - 1]["value"]}]
                        + [{"devices": e["devices"], "low": e["low"], "high": e["high"]}
                           for e in extra])
    colour = alt.Color("series:N", title=None, scale=alt.Scale(
        domain=["measured", "fitted model", "ideal (linear)"],
        range=["#000000", "#1f77b4", "#9d9d9d"]), legend=alt.Legend(orient="bottom-right"))
    y = alt.Y("value:Q", title="samples/s (log scale)", scale=alt.Scale(type="log"))
    words = table_nouns(report)
    x = _log2_x(all_devices, words)
    area = alt.Chart(band).mark_area(opacity=0.2, color="#1f77b4").encode(
        x=x, y=alt.Y("low:Q", scale=alt.Scale(type="log")), y2="high:Q",
        tooltip=[count_tooltip(words), alt.Tooltip("low:Q", format=".4g", title="95% low"),
                 alt.Tooltip("high:Q", format=".4g", title="95% high")])
    line = alt.Chart(pd.DataFrame(lines)).mark_line(point=True).encode(
        x=x, y=y, color=colour, strokeDash=alt.condition(
            "datum.series == 'ideal (linear)'", alt.value([4, 4]), alt.value([1, 0])),
        tooltip=["series:N", count_tooltip(words), alt.Tooltip("value:Q", format=".4g")])
    dots = alt.Chart(pd.DataFrame(points)).mark_point(size=80, filled=True).encode(
        x=x, y=y, color=colour, tooltip=[count_tooltip(words),
                                         alt.Tooltip("value:Q", format=".4g")])
    layers = [area, line, dots]
    knee = report.details.get("knee")
    if knee:
        rule = alt.Chart(pd.DataFrame([{"devices": knee["devices_after"]}])).mark_rule(
            color="#d62728", strokeWidth=2).encode(x="devices:Q")
        layers.append(rule)
    return alt.layer(*layers).properties(
        width=width, height=320,
        title="Throughput: measured, fitted model (band: 95% extrapolation), ideal; red: knee")


def _stacked_parts(records: list[dict], parts, x: alt.X, y: alt.Y, tooltip: list, title: str,
                   width) -> alt.Chart:
    """Bars of ``records`` (one per bar and part, with its ``order``) stacked in ``parts``' order
    and colours (``RUN_PARTS``, ``TRACE_PARTS``)."""
    return alt.Chart(pd.DataFrame(records)).mark_bar().encode(
        x=x, y=y,
        color=alt.Color("part:N", title=None, scale=alt.Scale(
            domain=[p[1] for p in parts], range=[p[2] for p in parts])),
        order="order:Q",
        tooltip=tooltip,
    ).properties(width=width, height=280, title=title)


def runs_breakdown_chart(report: Report, width="container") -> alt.Chart:
    """Share of each run's step time: compute, exposed communication, data stall, stragglers."""
    records, words = [], table_nouns(report)
    for r in report.table:
        other = r["comm_share"] + r["data_share"] + r["straggler_share"]
        values = {"compute": max(1.0 - other, 0.0), "comm_share": r["comm_share"],
                  "data_share": r["data_share"], "straggler_share": r["straggler_share"]}
        for i, (field, label, _) in enumerate(RUN_PARTS):
            records.append({"devices": str(r["devices"]), "part": label, "order": i,
                            "share": values[field]})
    return _stacked_parts(
        records, RUN_PARTS, alt.X("devices:N", title=words.header("devices"), sort=None),
        alt.Y("share:Q", title="share of the step", axis=alt.Axis(format="%"), stack="zero"),
        [count_tooltip(words, "N"), "part:N", alt.Tooltip("share:Q", format=".1%")],
        "Where each run's step time goes", width)


def trace_breakdown_chart(report: Report, width="container") -> alt.Chart:
    """Each rank's median step (``TraceSummary.median_step``) split into its own compute,
    exposed communication, data stall and idle, which add up to it."""
    records = []
    for r in report.table:
        for i, (field, label, _) in enumerate(TRACE_PARTS):
            records.append({"rank": f"rank {r['rank']}", "part": label, "order": i,
                            "ms": 1e3 * r[field]})
    return _stacked_parts(
        records, TRACE_PARTS, alt.X("rank:N", title=None, sort=None, axis=alt.Axis(labelAngle=0)),
        alt.Y("ms:Q", title="ms, each rank's median step (its own parts)", stack="zero"),
        ["rank:N", "part:N", alt.Tooltip("ms:Q", format=".2f")],
        "Where each rank's step goes", width)


def pipeline_stages_chart(report: Report, width="container") -> alt.LayerChart:
    """A traced pipeline's stages (``details.pipeline``): compute and exposed sends and receives
    per stage, the stages' mean compute as a rule: the pacing stage stands out above it."""
    pipeline = report.details["pipeline"]
    parts = [("compute_s", "compute"), ("wait_s", "sends and receives (exposed)")]
    records = [{"stage": f"stage {st['stage']}", "part": label, "order": i,
                "ms": 1e3 * st[field]}
               for st in pipeline["stages"] for i, (field, label) in enumerate(parts)]
    bars = alt.Chart(pd.DataFrame(records)).mark_bar().encode(
        x=alt.X("stage:N", title=None, sort=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("ms:Q", title="ms per step (median over the stage's ranks)", stack="zero"),
        color=alt.Color("part:N", title=None, sort=[label for _, label in parts]),
        order=alt.Order("order:Q"),
        tooltip=["stage:N", "part:N", alt.Tooltip("ms:Q", format=".2f")])
    mean = alt.Chart(pd.DataFrame([{"ms": 1e3 * pipeline["mean_compute_s"]}])).mark_rule(
        strokeDash=[4, 3]).encode(y="ms:Q", tooltip=[alt.Tooltip("ms:Q", format=".2f",
                                                                 title="mean compute")])
    return (bars + mean).properties(
        width=width, height=260,
        title=f"Pipeline stages: stage {pipeline['pacing_stage']} paces it "
              f"({pipeline['micro_batches']} micro-batches"
              + (f" x {pipeline['virtual_stages']} virtual stages"
                 if pipeline["virtual_stages"] > 1 else "") + ")")


def trace_steps_chart(report: Report, width="container") -> alt.Chart:
    """Step time and exposed communication per profiler step and rank."""
    records = []
    for rank, steps in report.details["per_step"].items():
        for s in steps:
            records.append({"rank": f"rank {rank}", "step": s["step"], "ms": 1e3 * s["step_s"],
                            "what": "step time"})
            records.append({"rank": f"rank {rank}", "step": s["step"],
                            "ms": 1e3 * s["exposed_comm_s"], "what": "exposed communication"})
    return alt.Chart(pd.DataFrame(records)).mark_line(point=True).encode(
        x=alt.X("step:O", title="profiler step"), y=alt.Y("ms:Q", title="ms"),
        color=alt.Color("rank:N", title=None), strokeDash=alt.StrokeDash("what:N", title=None),
        tooltip=["rank:N", "step:O", "what:N", alt.Tooltip("ms:Q", format=".2f")],
    ).properties(width=width, height=260,
                 title="Per step: ranks that wait for a straggler show it as communication")


# ---------------------------------------------------------------- page

BAND_LOW, BAND_HIGH = "95% low %", "95% high %"  # the remedies table's band columns


def remedies_frame(report: Report) -> tuple[pd.DataFrame, dict[str, str]]:
    """The page's remedies table and its signed columns' formats: the predicted gain in percent
    (a number, so the column sorts by value; empty where the remedy does not apply or its
    verdict rests on the gradient size, its verdict says so) and, for runs, the ends of its
    95 % band over the parameters the runs allow (``Remedy.gain_low`` / ``gain_high``), as
    ``diagnosis_text.gain_text`` writes them ('+25% (95%: +20% to +31%)')."""
    bands = has_gain_bands(report)  # the columns only where a remedy has a band
    gain = f"predicted gain in {gain_measure(report)} %"
    rows = []
    cautions = any(r.caveat for r in report.remedies)  # the column only where one has words
    said = report_said(report)  # an input a line names, as this page's control
    for x in by_verdict(report.remedies):
        g = shown_gain(x)
        shown = x.applicable and x.verdict != SIZE_DEPENDENT  # its caution gives each size's
        low, high = (x.gain_low, x.gain_high) if shown and x.gain_low is not None else (None, None)
        rows.append({"remedy": said(x.title), gain: g * 100 if shown else None,
                     **({BAND_LOW: None if low is None else low * 100,
                         BAND_HIGH: None if high is None else high * 100} if bands else {}),
                     "verdict": x.verdict, "note": said(x.note),
                     **({"caution": said(x.caveat)} if cautions else {})})
    return pd.DataFrame(rows), {gain: "%+.0f", BAND_LOW: "%+.0f", BAND_HIGH: "%+.0f"}


def planner_link(report: Report, base: str = "") -> str | None:
    """A planner link that opens the model fitted to the runs at the largest run's count, with
    the fitted scenario's batch, accumulation, overlap, ZeRO strategy (framework, gradient
    sync, shard group), slow device and critical batch (the link version its settings need)."""
    if report.kind != "runs" or "fitted_profile" not in report.details:
        return None
    from scalesim.schemas import Profile, Scenario

    from .plan import make_plan, plan_figure, state_of_scenario
    from .state import encode_query, query_string, with_figure

    profile = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    # the fitted model's devices: replicas where the runs split the model
    at = int(report.details.get("remedies_at_replicas", report.details["remedies_at_devices"]))
    state = state_of_scenario(scenario.model_copy(update={"devices": [max(at, 1)]}), profile)
    try:  # the headline the planner shows at the link, for its receiver to check
        figure = plan_figure(make_plan(profile, state))
    except ScalesimError:  # the planner's error box says why; no figure to check
        figure = None
    return f"{base}planner?{query_string(with_figure(encode_query(state, profile), figure))}"


def _planner_actions(report: Report) -> None:
    """Open the fitted model in the planner; share it; download a report of the diagnosis."""
    from .report import diagnosis_html

    base = st.context.url or ""
    base = base.rsplit("/", 1)[0] + "/" if base else ""
    link = planner_link(report, base)
    cols = st.columns(2)
    if link is not None:
        cols[0].link_button("Open the fitted model in the planner", link)
    cols[1].download_button("⬇ Diagnosis report (HTML)", data=lambda: diagnosis_html(
        report, link),
        file_name="scalesim-diagnosis.html", mime="text/html", on_click="ignore",
        key="dg_html")
    if link is not None:
        with st.expander("Share link (the fitted model in the planner; the runs stay here)"):
            st.code(link, language=None, wrap_lines=True)


def show_report(report: Report) -> None:
    """Cause, evidence, remedies; then the charts and tables."""
    of = "of the largest run's time" if report.kind == "runs" else "of the step"
    in_page = report_said(report)

    def said(line) -> str:  # an input the line names, as this page's control
        return _md(in_page(line))  # escaped as said_in_page's

    st.subheader(f"Likely cause: {report.cause.label}")
    st.markdown("\n".join(f"- {said(e)}" for e in report.cause.evidence))
    for other in report.others:
        st.markdown(f"**Also: {_md(other.label)}** ({other.share:.0%} {of}): "
                    + "; ".join(said(e) for e in other.evidence[:2]))
    r = report.first_remedy
    if r is not None:
        st.success(f"**First remedy to try:** {said(r.title)}: "
                   f"**{gain_text(r)}** {measure_words(r.measure)} predicted"
                   + (f" ({said(r.note)})" if r.note else ""))
        if r.caveat:
            st.warning(f"**Caution:** {said(r.caveat)}")
    else:
        st.info(f"**First remedy to try:** {said(no_first_remedy(report))}")
    _planner_actions(report)
    with st.expander("All remedies (model, each applied alone)"):
        show_table(*remedies_frame(report), width="stretch")
    if report.kind == "runs":
        st.altair_chart(runs_throughput_chart(report), width="stretch")
        st.altair_chart(runs_breakdown_chart(report), width="stretch")
        st.dataframe(table_frame(report), hide_index=True, width="stretch")
        which = shares_words(report.details.get("share_sources", {}), PAGE_SHARE_COLUMNS,
                             "step_time_s", "model_step_time_s")
        if which:
            st.caption(which)
        fit = report.details["fit"]
        st.caption(f"Fit: rms residual {fit['rmse_rel']:.1%}, noise {fit['noise_rel']:.1%}; "
                   f"fitted: {', '.join(fit['fitted'])}")
    else:
        st.altair_chart(trace_breakdown_chart(report), width="stretch")
        if report.details.get("pipeline"):
            st.altair_chart(pipeline_stages_chart(report), width="stretch")
        st.altair_chart(trace_steps_chart(report), width="stretch")
        st.dataframe(pd.DataFrame(report.table), hide_index=True, width="stretch")
    for note in report.notes:
        st.caption(f"note: {said(note)}")
    st.download_button("Download the report (JSON)", report.to_json(), "diagnosis.json",
                       "application/json", key="dg_download")
    with st.expander("Report as text (same as `scalesim diagnose`)"):
        st.code(report.to_text(), language=None)


def show_smi(report) -> None:
    """The device health of an nvidia-smi log alone: findings, the clocks chart, the table."""
    from scalesim.sources.nvidia_smi import no_finding, render_smi

    st.subheader("Device health")
    for finding in report.findings:
        st.warning(_md(finding))
    if not report.findings:
        none = no_finding(report)
        st.success(_md(none[0].upper() + none[1:]))
    st.altair_chart(smi_clock_chart(report), width="stretch")
    table = pd.DataFrame([{
        "device": d.index, "samples": d.samples, "busy": d.busy_samples,
        "SM MHz": round(d.sm_clock_MHz), "max MHz": d.max_sm_clock_MHz,
        "temp C": d.temperature_C, "max C": d.max_temperature_C, "power W": d.power_W,
        "util %": d.utilization_pct,
        "throttle reasons": ", ".join(f"{k} {v:.0%}" for k, v in d.reasons.items()) or "-"}
        for d in report.devices])
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("medians over samples at >= 50% utilization")
    for note in report.notes:
        st.caption(f"note: {_md(note)}")
    st.download_button("Download the device health (JSON)", json.dumps(report.to_dict(), indent=2),
                       "device-health.json", "application/json", key="dg_smi_download")
    with st.expander("Report as text (same as `scalesim diagnose --smi`)"):
        st.code(render_smi(report), language=None)


def _text_of(upload) -> str:
    return upload.getvalue().decode("utf-8-sig", errors="replace")


def _smi_upload(key: str) -> tuple[str, str] | None:
    """The nvidia-smi log uploaded (name, CSV text), or None."""
    upload = st.file_uploader(f"{DIAGNOSE_CONTROLS['smi']} (CSV, optional)", type=["csv", "txt"], key=key,
                              help=SMI_HELP)
    return None if upload is None else (upload.name, _text_of(upload))


def _runs_options() -> dict:
    """The runs' options as ``runs_report`` takes them (``scalesim diagnose``'s flags); the
    extrapolation counts as typed (parsed by the caller)."""
    c1, c2, c3 = st.columns(3)
    params = c1.number_input(f"{DIAGNOSE_CONTROLS['params']} (0 = unknown)", min_value=0.0,
                             max_value=float(bound("params").high), value=0.0, step=1e6,
                             format="%g", key="dg_params",
                             help="gradient elements: link bandwidths in GB/s, and the buckets "
                                  "the remedies' gains are priced with (0: a nominal gradient "
                                  "size, said in a note)")
    critical = c2.number_input(f"{DIAGNOSE_CONTROLS['critical_batch_size']} (0 = unknown)", min_value=0.0,
                               max_value=float(bound("critical_batch").high), value=0.0,
                               step=64.0, format="%g", key="dg_bcrit",
                               help="B_noise in samples, for large-batch effects")
    wire = c3.selectbox(DIAGNOSE_CONTROLS["wire_bytes"], list(WIRE_BYTES_LABELS),
                        format_func=WIRE_BYTES_LABELS.get, key="dg_wire",
                        help="the gradients' precision as all-reduced (--wire-bytes)")
    c1, c2, c3 = st.columns(3)
    extrapolate = c1.text_input(f"{DIAGNOSE_CONTROLS['extrapolate']} (devices)", key="dg_extrapolate",
                                placeholder="e.g. 64,128 (empty: 2x, 4x, 8x the largest run)",
                                help="device counts, comma-separated, or a doubling range 64-512")
    workload = c2.selectbox(f"{DIAGNOSE_CONTROLS['workload']} (optional)",
                            [None, *presets.TRANSFORMERS, UPLOAD_WORKLOAD],
                            format_func=lambda n: "none (data-parallel remedies only)"
                            if n is None else n, key="dg_workload",
                            help="a transformer preset (scalesim presets) or a workload JSON with "
                            "a 'transformer' shape: the remedies are then predicted by the layout "
                            "model and include splitting the model (--workload)")
    # the servers' size where the runs used fewer of each (--gpus-per-node; 0: not given)
    server = c3.number_input(f"{DIAGNOSE_CONTROLS['devices_per_node']} "
                             "(0 = the most a run put in one)", min_value=0,
                             max_value=int(bound("devices_per_node").high), value=0, step=1,
                             key="dg_gpus_per_node", help=GPUS_PER_NODE_HELP)
    options = {"params": params or None, "critical": critical or None, "wire_bytes": wire,
               "extrapolate": extrapolate.strip(), "gpus_per_node": int(server) or None,
               **_exchange_options()}
    if workload == UPLOAD_WORKLOAD:
        upload = c2.file_uploader("Workload JSON", type=["json"], key="dg_workload_file",
                                  help="a workload (scalesim schema workload) with its "
                                  "'transformer' shape: layers, hidden, heads, seq_len, vocab")
        workload = None if upload is None else upload.name
        options["workload_file"] = None if upload is None else (upload.name, upload.getvalue())
    if workload is not None:
        c1, c2, c3 = st.columns(3)
        gpu = c1.selectbox(DIAGNOSE_CONTROLS["gpu"], GPUS, key="dg_gpu",
                           help="its datasheet peak, memory bandwidth and memory (--gpu); "
                           f"default: the {GPUS[0]} of the default hardware preset "
                           f"({presets.DEFAULT_HARDWARE})")
        style = c2.selectbox(DIAGNOSE_CONTROLS["recompute_style"], list(RECOMPUTE_STYLE_LABELS),
                             index=list(RECOMPUTE_STYLE_LABELS).index(DEFAULT_RECOMPUTE_STYLE),
                             format_func=RECOMPUTE_STYLE_LABELS.get, key="dg_recompute_style",
                             help=RECOMPUTE_STYLE_HELP)
        overlap = c3.toggle(DIAGNOSE_CONTROLS["tp_overlap"], key="dg_tp_overlap", help=TP_OVERLAP_HELP)
        # the split layouts' interleaved sends (--p2p-overlap; on: Megatron-Core's default)
        p2p = c3.toggle(f"{DIAGNOSE_CONTROLS['p2p_overlap']} (interleaved)", value=True,
                        key="dg_p2p_overlap", help=P2P_OVERLAP_HELP)
        options.update(workload=workload, gpu=gpu, recompute_style=style, tp_overlap=overlap,
                       p2p_overlap=p2p)
    return options


# the traces' choice that leaves the strategy to their collectives (trace_collectives.traced_exchange)
FROM_COLLECTIVES = "as the traces' collectives say"
# the traces' choice that leaves the gradient sync to their micro-steps (traced_grad_sync)
FROM_MICRO_STEPS = "as the traces show"


def _exchange_options(prefix: str = "dg", traced: bool = False) -> dict:
    """How the runs (``traced``: the traced job) exchanged over their data-parallel ranks
    (``scalesim diagnose --strategy --zero-framework --grad-sync``): the framework only for
    ZeRO, the gradient sync only for ZeRO-2/3 under FSDP, as the CLI takes them; traces read
    it off their collectives unless a strategy is chosen, and the gradient sync off their
    micro-steps unless one is chosen (as ``--trace --grad-sync``, which overrides them).
    ``prefix``: the widgets' keys'."""
    c1, c2, c3 = st.columns(3)
    choices = [None, *STRATEGY_LABELS] if traced else list(STRATEGY_LABELS)
    strategy = c1.selectbox(
        f"{control_named('strategy', traced)} (ZeRO)", choices,
        format_func=lambda s: FROM_COLLECTIVES if s is None else STRATEGY_LABELS[s],
        key=f"{prefix}_strategy",
        help="the data-parallel strategy (--strategy): the remedies start from it"
        + ("; by default read off the traces' all-gathers and reduce-scatters" if traced else
           "; the fit reads the runs' communication, memory and straggler wait as its"))
    if strategy in (None, "ddp"):
        options = {"strategy": "ddp"} if strategy and traced else {}
        if traced:  # a job read (or named) as DDP: the user's word on its all-reduces
            options.update(_traced_grad_sync(c3, prefix))
        return options
    framework = c2.selectbox(DIAGNOSE_CONTROLS["zero_framework"], list(ZERO_FRAMEWORK_LABELS),
                             format_func=ZERO_FRAMEWORK_LABELS.get,
                             key=f"{prefix}_zero_framework", help="how ZeRO ran (--zero-framework)")
    options = {"strategy": strategy, "zero_framework": framework}
    if strategy in ("zero2", "zero3") and framework == "fsdp":
        syncs = [None, *GRAD_SYNC_LABELS] if traced else list(GRAD_SYNC_LABELS)
        options["grad_sync"] = c3.selectbox(
            DIAGNOSE_CONTROLS["grad_sync"], syncs,
            format_func=lambda g: FROM_MICRO_STEPS if g is None else GRAD_SYNC_LABELS[g],
            key=f"{prefix}_grad_sync", help=GRAD_SYNC_HELP
            + (TRACED_GRAD_SYNC_HELP if traced else ""))
    if framework == "fsdp":  # hybrid sharding (--shard-group)
        shard = st.number_input(f"{DIAGNOSE_CONTROLS['shard_group']} "
                                "(HSDP; 0 = all data-parallel ranks)", min_value=0,
                                max_value=int(bound("shard_group").high), value=0, step=1,
                                key=f"{prefix}_shard_group", help=SHARD_GROUP_HELP)
        options["shard_group"] = int(shard) or None
    return options


def _traced_grad_sync(column, prefix: str) -> dict:
    """The gradient sync of a traced job read or named as DDP (``--trace --grad-sync``): by
    default what the traces show; either value overrides them under accumulation."""
    sync = column.selectbox(
        DIAGNOSE_CONTROLS["grad_sync"], [None, *GRAD_SYNC_LABELS],
        format_func=lambda g: FROM_MICRO_STEPS if g is None else GRAD_SYNC_LABELS[g],
        key=f"{prefix}_grad_sync", help=GRAD_SYNC_HELP + TRACED_GRAD_SYNC_HELP)
    return {} if sync is None else {"grad_sync": sync}


def _runs_section() -> None:
    upload = st.file_uploader("Runs file (CSV or JSON)", type=["csv", "json"], key="dg_runs")
    example = st.toggle("Use an example", key="dg_example",
                        help="runs generated by the model (not measured): BERT-large "
                        "(sequence 128: the bert-large preset) on 8-GPU "
                        "servers (A100-SXM4 40GB) joined by one 100 Gb/s NIC")
    options = _runs_options()
    smi = _smi_upload("dg_smi")
    if upload is not None:
        text, name = _text_of(upload), upload.name
    elif example:
        text, name = example_runs_csv(), "example (model-generated)"
    else:
        st.info("Upload a runs file, or switch on the example.")
        st.markdown(FORMAT_HELP)
        return
    if options.get("workload_file", False) is None:
        st.info("Upload the workload JSON of the runs' transformer, or choose a preset.")
        return
    try:
        if file := options.pop("workload_file", None):
            from scalesim.jsonio import decode_text

            options["workload_text"] = decode_text(file[1], file[0])
        typed = options.pop("extrapolate")
        # the CLI's --extrapolate parser (a list of device counts, scalesim.bounds)
        counts = tuple(parse_list(typed, "devices", "Extrapolate to")) if typed else None
        report = runs_report(text, name, **options, extrapolate=counts, smi=smi)
    except ScalesimError as exc:
        st.error(said_in_page(exc))
        return
    show_report(report)


def _traces_section() -> None:
    uploads = st.file_uploader("PyTorch profiler traces, one per rank (.json or .json.gz)",
                               type=["json", "gz"], accept_multiple_files=True, key="dg_traces")
    smi = _smi_upload("dg_traces_smi")
    exchange = _exchange_options("dg_tr", traced=True)
    if not uploads:
        st.info("Upload the Chrome-trace JSON that `torch.profiler` wrote for each rank "
                "(`prof.export_chrome_trace` or `tensorboard_trace_handler`).")
        return
    files = tuple(sorted((u.name, u.getvalue()) for u in uploads))
    try:
        report = traces_report(files, smi, **exchange)
    except ScalesimError as exc:
        st.error(said_in_page(exc, traced=True))
        return
    show_report(report)


def _smi_section() -> None:
    upload = st.file_uploader("nvidia-smi log (CSV)", type=["csv", "txt"], key="dg_smi_only",
                              help=SMI_HELP)
    if upload is None:
        st.info("Upload the log that `nvidia-smi --query-gpu=timestamp,index,clocks.sm,"
                "clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,"
                "clocks_throttle_reasons.active --format=csv -l 1` wrote during the run: "
                "is one device slower than the others, and why (clocks, heat, power)?")
        return
    try:
        report = smi_report((upload.name, _text_of(upload)))
    except ScalesimError as exc:
        st.error(said_in_page(exc))
        return
    show_smi(report)


SOURCES = {DIAGNOSE_CONTROLS["runs"]: _runs_section, DIAGNOSE_CONTROLS["trace"]: _traces_section,
           "An nvidia-smi log": _smi_section}


def render() -> None:
    st.title("Diagnose")
    st.caption("Why does my job stop scaling? From step times measured at several device counts, "
               "or from PyTorch profiler traces of one run.")
    source = st.radio("What do you have?", list(SOURCES), horizontal=True, key="dg_source")
    SOURCES[source]()
