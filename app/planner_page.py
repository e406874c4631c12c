"""The what-if planner page: controls in the sidebar, headline numbers, charts in tabs.

The state lives in ``st.session_state["app_state"]`` (an ``AppState``) and is mirrored into the
URL query string after every run, so the address bar is always the share link. A session starts
from the link (``state.read_link``); afterwards the widgets are the source of truth. Widgets
that are hidden (a custom-link field while a preset link is chosen) keep their last value in the
state. Only the open tab's charts are built (lazy tabs), to keep a rerun fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pandas as pd
import streamlit as st

from scalesim import presets
from scalesim.attention_kernel import (
    ATTENTION_KERNEL_HELP,
    ATTENTION_KERNEL_LABELS,
    OWN_KERNEL_LABEL,
)
from scalesim.bounds import LAYOUT_KNOB_BY_FIELD
from scalesim.cli.cmd_app import PUBLIC_URL_ENV  # set by `scalesim app --public-url URL`
from scalesim.cli.options import MEMORY_MARGIN_HELP, SEQ_LEN_HELP
from scalesim.decision import DOES_NOT_FIT, card_rows
from scalesim.device_nouns import Nouns, hardware_nouns
from scalesim.errors import ScalesimError, in_words_of
from scalesim.figures import GIB_BYTES, MIB_BYTES, amount, rate, signed_percent, throughput, whole
from scalesim.goal import GoalControls, device_grid, seek
from scalesim.jsonio import decode_text, parse_json_text, read_json
from scalesim.layout import (
    CP_HELP,
    P2P_OVERLAP_HELP,
    RECOMPUTE_STYLE_HELP,
    RECOMPUTE_STYLE_LABELS,
    SCHEDULE_SHORT,
    SCHEDULE_WORDS,
    SHARD_GROUP_HELP,
    TP_OVERLAP_HELP,
    split_short,
)
from scalesim.layout_predict import splittable_shape
from scalesim.model.sharding import GRAD_SYNC_HELP, GRAD_SYNC_LABELS
from scalesim.precision import PRECISION_HELP, PRECISION_LABELS
from scalesim.predict import Prediction
from scalesim.schemas import Profile, Scenario
from scalesim.sources.provenance import provenance
from scalesim.training_time import resolve_goal, zero_price_note

from . import charts, control_labels
from .control_labels import (
    B_LABELS,
    GRID_LABELS,
    MODE_LABELS,
    OVERLAP_LABEL,
    STRATEGY_LABELS,
    ZERO_FRAMEWORK_LABELS,
    choice_labels,
    in_words,
)
from .layout_titles import (
    PAGE_SPLIT_HEADER,
    SEARCHED_LAYOUTS,
    page_pipeline,
    page_row_title,
    page_title,
    short_legend,
)
from .link_date import banner_date, today_utc
from .markdown_text import escape_markdown as _md
from .markdown_text import escape_markdown_keep_bold
from .named_controls import (
    control_namer,
    controls_to_change,
    in_control_words,
    named_controls,
)
from .plan import (
    MAKES_IT_RUN,
    VS_SCHEDULES,
    Plan,
    ab_cost_label,
    ab_misfit,
    against_now_text,
    as_sentence,
    card_notes,
    count_unit,
    device_counts,
    duration,
    finish,
    finish_title,
    goal_layout_mode,
    headline,
    layout_memory_note,
    layout_ranking,
    layout_reference,
    make_plan,
    makes_it_run_text,
    misfit_counts_text,
    option_links,
    plan_figure,
    remedy_gain_cell,
    remedy_note,
    runs_interleaved,
    story,
)
from .sent_figure import changed_note
from .state import (
    FIELD_LABELS,
    LAYOUT_FIELDS,
    MAX_DEVICES,
    MAX_VALUE_CHARS,
    NULLABLE,
    WORKLOAD_PRESETS,
    AppState,
    checked_profile,
    encode_query,
    link_limit_words,
    preset_profile,
    profile_caveats,
    profile_defaults,
    query_string,
    read_link,
    refusal,
    reset_words,
    share_query,
    shared_date,
    widget_bounds,
    with_figure,
    with_profile_defaults,
)
from .table_columns import LAYOUT_COLUMNS as LAID
from .table_columns import RATE_FORMAT, searched_layout_cells, show_table, to_hours

PROFILES_DIR_ENV = "SCALESIM_APP_PROFILES"  # set by `scalesim app --profiles DIR`
MAX_UPLOAD_MB = 2
MAX_FOLDER_FILES = 200
TABS = {  # state id -> tab label
    "curve": "Scaling curve",
    "breakdown": "Step breakdown",
    "remedies": "Remedies",
    "cost": "Hours & cost",
    "quality": "Time to quality",
    "ab": "A vs B",
    "goal": "Goal: deadline & budget",
    "layouts": "Layouts",
}
LABEL_TO_TAB = {v: k for k, v in TABS.items()}
WIDGET_FIELDS = tuple(f for f in AppState.model_fields if f not in ("src", "tab"))
ss = st.session_state


# ---------------------------------------------------------------- state and profile

def _key(field: str) -> str:
    return f"k_{field}"


def _set_profile(profile: Profile, src: str, origin: str) -> tuple[list[str], str]:
    """Switch to ``profile``; its server size, batch, price... become the controls' values (on
    purpose: the default global batch is the new server's, and the links, price and training
    length are the profile's own).

    Returns a message for each value that did not fit a control (it keeps the default), and
    the sentence naming each value set away from the old profile's that this reset
    (``reset_sentence``; '' where none was).
    """
    state: AppState = ss["app_state"]
    messages: list[str] = []
    defaults = profile_defaults(profile, messages, messages)  # the loaded message says both
    resets = reset_words(state, ss["profile"], defaults, hardware_nouns(profile.hardware))
    ss["profile"], ss["profile_origin"] = profile, origin
    ss["app_state"] = state.model_copy(update={**defaults, "src": src})
    for name, value in defaults.items():
        ss[_key(name)] = value
    return messages, reset_sentence(resets)


def reset_sentence(resets: str) -> str:
    """' Reset to the new profile's values: Global batch 512 → 64 (...).' for ``resets``
    (``state.reset_words``); '' for none."""
    return (f" Reset to the new profile's values: {resets} (a profile brings its own "
            "server size, global batch, links, price and training length; set them again to "
            "keep yours)." if resets else "")


def _loaded_message(profile: Profile, name: str, messages: list[str],
                    resets: str = "") -> tuple[str, str]:
    text = f"Loaded profile '{profile.name}' from {name}"
    after = f".{resets}" if resets else ""  # the text as before where nothing was reset
    return (("warning", f"{text}; {'; '.join(messages)}{after}") if messages else
            ("success", f"{text}{after}"))


def _init_session() -> None:
    if "app_state" in ss:
        return
    try:
        # every value of a repeated key, so the link's problems can say it (to_dict keeps the last)
        params = {key: st.query_params.get_all(key) for key in st.query_params}
    except Exception:  # noqa: BLE001 - a malformed query string must never stop the page
        params = {"v": "?"}
    state, profile, messages, sent = read_link(params)
    ss["app_state"], ss["profile"], ss["link_messages"] = state, profile, messages
    date = shared_date(params)
    ss["shared"] = None if date is None else {"date": banner_date(date), "state": state,
                                              "profile": profile}
    # the sender's figure, on any link whose checksum covers it: the address bar's too
    ss["sent"] = None if sent is None else {"sent": sent, "state": state, "profile": profile}
    ss["profile_origin"] = "presets" if state.src == "preset" else "the link"
    for name in WIDGET_FIELDS:
        ss[_key(name)] = getattr(state, name)
    ss[_key("tab")] = TABS[state.tab]


def _on_preset() -> None:
    state = ss["app_state"].model_copy(update={"hw": ss[_key("hw")], "wl": ss[_key("wl")]})
    ss["app_state"] = state
    _, resets = _set_profile(preset_profile(state), "preset", "presets")
    ss["profile_message"] = ("info", f"Switched to {state.hw} + {state.wl}.{resets}") \
        if resets else None


def _on_upload() -> None:
    upload = ss.get("upload")
    if upload is None:
        return
    try:
        raw = upload.getvalue()
        if len(raw) > MAX_UPLOAD_MB * MIB_BYTES:
            raise ScalesimError(f"{upload.name}: larger than {MAX_UPLOAD_MB} MB")
        data = parse_json_text(decode_text(raw, upload.name), upload.name)
        profile = checked_profile(data, upload.name)
    except ScalesimError as exc:
        ss["profile_message"] = ("error", str(exc))
        return
    messages, resets = _set_profile(profile, "custom", f"uploaded file {upload.name}")
    ss["profile_message"] = _loaded_message(profile, upload.name, messages, resets)


def _profiles_dir() -> Path | None:
    folder = os.environ.get(PROFILES_DIR_ENV)
    return Path(folder) if folder and Path(folder).is_dir() else None


def _folder_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.json") if p.is_file())[:MAX_FOLDER_FILES]


def _on_folder() -> None:
    folder, name = _profiles_dir(), ss.get("folder_pick")
    if folder is None or not name or name not in _folder_files(folder):
        return
    try:
        profile = checked_profile(read_json(folder / name), name)
    except ScalesimError as exc:
        ss["profile_message"] = ("error", str(exc))
        return
    messages, resets = _set_profile(profile, "custom", f"{folder.name}/{name}")
    ss["profile_message"] = _loaded_message(profile, name, messages, resets)


# ---------------------------------------------------------------- widgets

class _Controls:
    """Renders widgets bound to the state's fields (keys ``k_<field>``); returns their values."""

    def __init__(self, state: AppState):
        self.state = state
        self.values: dict = {}
        self.refused: dict[str, str] = {}

    @property
    def words(self) -> Nouns:
        """The loaded profile's nouns, which the labels take ('processes' on a CPU profile)."""
        return hardware_nouns(ss["profile"].hardware)

    def label(self, field: str) -> str:
        """The label of ``field``'s control in the profile's nouns (``control_labels``)."""
        return control_labels.label(field, self.words)

    def __call__(self, widget, field: str, label: str, **kwargs):
        key = _key(field)
        if key not in ss:  # dropped by Streamlit while hidden: restore the state's value
            ss[key] = getattr(self.state, field)
        if getattr(widget, "__name__", "") == "number_input":  # the state's bounds are its own
            # a field None means something ('empty: none'): the input stays clearable once a
            # number is typed (Streamlit's default 'min' makes it so only while the state is
            # None, and reads an emptied input as its smallest value)
            kwargs = {**widget_bounds(field), **({"value": None} if field in NULLABLE else {}),
                      **kwargs}
        value = widget(label, key=key, **kwargs)
        sentence = refusal(self.state, field, value, self.words)
        if sentence:  # keep the last good value of this control only; the others follow
            # escaped as every box that quotes what was typed (a widget's value)
            (getattr(widget, "__self__", None) or st.sidebar).error(_md(sentence))
            self.refused[field] = sentence
            return getattr(self.state, field)
        self.values[field] = value
        return value


def _on_leave_profile() -> None:
    """The explicit way back from an uploaded (or linked) profile to the presets."""
    state = ss["app_state"]
    _, resets = _set_profile(preset_profile(state), "preset", "presets")
    ss[_key("hw")], ss[_key("wl")] = state.hw, state.wl
    ss["profile_message"] = ("success", f"Back to the presets {state.hw} + {state.wl}"
                             + (f".{resets}" if resets else ""))


def _profile_section(c: _Controls) -> None:
    st.sidebar.header("Profile")
    state: AppState = ss["app_state"]
    profile: Profile = ss["profile"]
    if state.src == "custom":
        # The pickers would show presets the numbers do not use: show the profile instead, and
        # make leaving it an explicit action (a preset pick never drops an upload silently).
        st.sidebar.info(f"Using **{_md(profile.name)}** ({_md(profile.hardware.device_name)}, "
                        f"{profile.hardware.devices_per_node} per "
                        f"{hardware_nouns(profile.hardware).server}; "
                        f"{_md(profile.workload.name)}) from {_md(ss['profile_origin'])}.")
        st.sidebar.button("Leave this profile: use the presets", key="leave_profile",
                          on_click=_on_leave_profile)
    else:
        hw_names, wl_names = list(presets.HARDWARE), list(WORKLOAD_PRESETS)
        c(st.sidebar.selectbox, "hw", c.label("hw"), options=hw_names, on_change=_on_preset,
          format_func=lambda n: f"{n} ({presets.HARDWARE[n].device_name})")
        c(st.sidebar.selectbox, "wl", c.label("wl"), options=wl_names, on_change=_on_preset)
    st.sidebar.file_uploader("Upload a calibration profile (JSON)", type=["json"],
                             key="upload", on_change=_on_upload, max_upload_size=MAX_UPLOAD_MB)
    folder = _profiles_dir()
    if folder is not None:
        files = _folder_files(folder)
        st.sidebar.selectbox(f"Or pick one from {folder.name}/", options=[""] + files,
                             key="folder_pick", on_change=_on_folder,
                             format_func=lambda n: n or "(choose a file)")
    message = ss.get("profile_message")
    if message:
        show = {"error": st.sidebar.error, "warning": st.sidebar.warning,
                "info": st.sidebar.info}.get(message[0], st.sidebar.success)
        show(_md(message[1]))
    profile = ss["profile"]
    if ss["app_state"].src != "custom":
        st.sidebar.caption(f"Predicting with **{_md(profile.name)}** "
                           f"(from {_md(ss['profile_origin'])})")
    with st.sidebar.expander("Where these numbers come from"):
        named = control_namer(ss["app_state"], hardware_nouns(profile.hardware))
        for part, source in provenance(profile):  # a knob it names, as its control
            st.markdown(f"**{part}**: {_md(in_words_of(source, named))}")


def _device_section(c: _Controls, state: AppState) -> None:
    st.sidebar.header(c.words.devices.capitalize())  # 'Processes' on a CPU profile
    options = sorted({2**i for i in range(15)} | {state.dmax})
    c(st.sidebar.select_slider, "dmax", c.label("dmax"), options=options)
    grids = choice_labels(GRID_LABELS, c.words)
    grid = c(st.sidebar.radio, "grid", c.label("grid"), options=list(grids),
             format_func=grids.get, horizontal=True)
    if grid == "list":
        c(st.sidebar.text_input, "dlist", c.label("dlist"), max_chars=MAX_VALUE_CHARS)
    c(st.sidebar.number_input, "dpn", c.label("dpn"), step=1)
    c(st.sidebar.number_input, "mm", c.label("mm"), step=0.01, format="%.2f",
      help=MEMORY_MARGIN_HELP)


def _batch_section(c: _Controls) -> None:
    st.sidebar.header("Batch")
    modes = choice_labels(MODE_LABELS, c.words)
    mode = c(st.sidebar.radio, "mode", "Batch", options=list(modes),
             format_func=modes.get, label_visibility="collapsed")
    if mode == "weak":
        split = splittable_shape(ss["profile"]) is not None
        c(st.sidebar.number_input, "mb", "Micro-batch (sequences per model replica)" if split
          else c.label("mb"), step=1)
    else:
        c(st.sidebar.number_input, "gb", "Global batch (samples per step)", step=1)
    c(st.sidebar.number_input, "acc", "Gradient accumulation (micro-steps per step)",
      step=1)


def _comm_section(c: _Controls, state: AppState) -> None:
    st.sidebar.header("Communication")
    strategy = c(st.sidebar.selectbox, "strat", "Strategy", options=list(STRATEGY_LABELS),
                 format_func=STRATEGY_LABELS.get)
    c(st.sidebar.selectbox, "zfw", "ZeRO framework", options=list(ZERO_FRAMEWORK_LABELS),
      format_func=ZERO_FRAMEWORK_LABELS.get, disabled=strategy == "ddp",
      help="how ZeRO runs: FSDP gathers and reduce-scatters one wrapped block at a time "
      "(ZeRO-1: Megatron-Core's distributed optimizer); DeepSpeed its bucket defaults, its "
      "ZeRO-1/2 parameter all-gather after the optimizer step exposed (docs/model.md §4)")
    c(st.sidebar.selectbox, "gs", c.label("gs"),
      options=list(GRAD_SYNC_LABELS), format_func=GRAD_SYNC_LABELS.get, help=GRAD_SYNC_HELP)
    kernels = {"": OWN_KERNEL_LABEL, **ATTENTION_KERNEL_LABELS}  # '': none asked
    c(st.sidebar.selectbox, "ak", "Attention kernel", options=list(kernels),
      format_func=kernels.get, help=ATTENTION_KERNEL_HELP)
    c(st.sidebar.selectbox, "pr", "Matmul precision", options=list(PRECISION_LABELS),
      format_func=PRECISION_LABELS.get, help=PRECISION_HELP)
    c(st.sidebar.toggle, "ovl", OVERLAP_LABEL)
    hw = ss["profile"].hardware
    intra = c(st.sidebar.selectbox, "intra", c.label("intra"),
              options=["profile", *presets.INTRA_LINKS, "custom"],
              format_func=lambda k: (f"as profiled ({hw.intra_node.kind}, "
                                     f"{hw.intra_node.busbw_GBps:g} GB/s)") if k == "profile"
              else "custom..." if k == "custom" else k, help=intra_help(c.words))
    if intra == "custom":
        c(st.sidebar.number_input, "ibw", c.label("ibw"), step=10.0, help=intra_help(c.words))
        c(st.sidebar.number_input, "ilat", c.label("ilat"), step=1.0)
    inter = c(st.sidebar.selectbox, "inter", c.label("inter"),
              options=["profile", "infiniband", "roce", "ethernet", "custom"],
              format_func=lambda k: (f"as profiled ({hw.inter_node.kind}, "
                                     f"{hw.inter_node.busbw_GBps:g} GB/s)") if k == "profile"
              else "custom..." if k == "custom" else k)
    if inter in ("infiniband", "roce", "ethernet"):
        c(st.sidebar.number_input, "nics", c.label("nics"), step=1)
        c(st.sidebar.number_input, "gbit", "Gbit/s per NIC", step=25.0)
    elif inter == "custom":
        c(st.sidebar.number_input, "ebw", c.label("ebw"), step=5.0)
        c(st.sidebar.number_input, "elat", c.label("elat"), step=1.0)


# '{server}': the hardware's ('rack' on a GB200 NVL72, ``device_nouns.hardware_nouns``)
INTRA_HELP = ("A whole {server}'s ring bus bandwidth. On a DGX-1's NVLink cube-mesh (nvlink1, "
              "nvlink2) fewer GPUs have fewer NVLinks, and a data-parallel ring or tensor-"
              "parallel group over 2 or 4 GPUs gets their share (V100: 1/6 over 2, 4/6 over 4; "
              "docs/model.md §18); NVSwitch and PCIe servers keep the whole figure.")
# a CPU calibration's intra-host link: its processes' collectives through gloo over loopback TCP
CPU_INTRA_HELP = ("The bus bandwidth of a collective among the host's processes: gloo over the "
                  "host's loopback TCP, as calibration measured it; the named links are "
                  "those of GPU servers.")


def intra_help(words: Nouns) -> str:
    """The intra-server link controls' help: a GPU server's ring (a rack's on a GB200 NVL72),
    or a CPU host's loopback."""
    return CPU_INTRA_HELP if words.cpu else INTRA_HELP.format(server=words.server)
SCHEDULE_LABELS = {"auto": "auto (1F1B; interleaved with virtual stages)",
                   **{k: v for k, v in SCHEDULE_WORDS.items() if k != "none"}}
RECOMPUTE_LABELS = {"auto": "the workload's", "none": "none", "selective": "selective",
                    "full": "full"}


def _layout_section(c: _Controls) -> None:
    """The model split (tensor, pipeline, schedule, recompute, sequence parallel), folded away;
    ZeRO is the strategy control and the micro-batch the batch control."""
    profile = ss["profile"]
    shape, words = splittable_shape(profile), hardware_nouns(profile.hardware)
    devices = words.devices  # 'processes' for a CPU calibration
    box = st.sidebar.expander("Layout: split the model (tensor / pipeline)")
    if shape is None:
        box.caption("This profile does not record the transformer it timed: recalibrate it "
                    f"(scalesim calibrate --model gpt) to split its model across {devices}."
                    if profile.compute.measured else
                    "This workload is a parameter count only: pick a transformer workload "
                    f"(e.g. llama3-8b, gpt-7.5b) to split the model across {devices}. Hybrid "
                    f"sharding splits no model: its shard group applies over all {devices}.")
        _shard_group_control(c, box)
        return
    timed = ("The model this profile timed: " if profile.workload.transformer is None else "")
    box.caption(f"{timed}{shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
                f"sequence {shape.seq_len} (its own; the sequence length below changes it). "
                # in the page's labels (no control shows dp, tp, pp): the split below, the
                # Strategy and Micro-batch controls above
                f"The {devices} are the data-parallel ranks x {control_labels.NAMES['tp']} x "
                "Pipeline stages x Context-parallel degree (below); the Strategy above shards "
                "over the data-parallel ranks, and the Micro-batch is per model replica. The "
                "Layouts tab ranks every layout."
                + (" A split computes on the measured curve, with the measured optimizer step "
                   f"scaled to the parameters each {words.device} updates (docs/model.md §22)."
                   if timed else ""))
    # the transformer at another sequence length, as predict --seq-len (plan.sequence_profile)
    c(box.number_input, "seq", f"Sequence length (tokens; empty: the model's own, "
      f"{shape.seq_len:,})", step=1, help=SEQ_LEN_HELP)
    tp = c(box.number_input, "tp", c.label("tp"), step=1)
    pp = c(box.number_input, "pp", "Pipeline stages (pp)", step=1)
    c(box.number_input, "cp", "Context-parallel degree (cp: ranks that split each sequence)",
      step=1, help=CP_HELP)
    # without pipeline stages these do not apply: disabled, and ignored with a note
    # (``plan.pipeline_notes``), as the tensor-parallel toggles below
    sched = c(box.selectbox, "sched", "Pipeline schedule (with pp > 1)",
              options=list(SCHEDULE_LABELS), format_func=SCHEDULE_LABELS.get, disabled=pp == 1)
    vs = c(box.number_input, "vs", "Virtual stages per pipeline rank (interleaved, with pp > 1)",
           step=1, disabled=pp == 1 or sched not in VS_SCHEDULES)
    c(box.selectbox, "rec", "Activation recompute", options=list(RECOMPUTE_LABELS),
      format_func=RECOMPUTE_LABELS.get)
    c(box.selectbox, "rs", "How your framework reruns the forward (full or selective recompute)",
      options=list(RECOMPUTE_STYLE_LABELS), format_func=RECOMPUTE_STYLE_LABELS.get,
      help=RECOMPUTE_STYLE_HELP)
    # without tensor parallelism these do not apply: disabled, and ignored with a note
    # (``plan.tp_only_notes``), as the loader workers are without a measured input pipeline
    c(box.toggle, "sp", "Sequence parallelism (with tp > 1)", disabled=tp == 1)
    c(box.toggle, "tpo", "Tensor-parallel overlap (with tp > 1)", help=TP_OVERLAP_HELP,
      disabled=tp == 1)
    # the interleaved schedule's sends: disabled, and ignored with a note (``plan.p2p_notes``),
    # where the controls run no interleaved schedule
    c(box.toggle, "p2p", "Pipeline sends overlap compute (interleaved, with pp > 1)",
      help=P2P_OVERLAP_HELP, disabled=not runs_interleaved(pp, sched, vs))
    _shard_group_control(c, box)


def _shard_group_control(c: _Controls, box) -> None:
    """The hybrid sharding shard group (link key sg), for both prediction paths (§16)."""
    c(box.number_input, "sg", c.label("sg"), step=1,
      help=SHARD_GROUP_HELP, disabled=c.values.get("strat", c.state.strat) == "ddp")


def _data_section(c: _Controls) -> None:
    st.sidebar.header("Input pipeline")
    has_loader = ss["profile"].input_pipeline is not None
    c(st.sidebar.number_input, "lw", c.label("lw"), step=1, disabled=not has_loader,
      help=None if has_loader else "this profile has no measured input pipeline")


GOAL_SECTION = "Training goal and price"  # the sidebar section of the Goal tab's controls
GOAL_MAX_SHOWN = 12  # the first device counts goal searches that its control's help lists


def goal_max_help(devices_per_node: int, allocation: int, max_devices: int, words: Nouns) -> str:
    """The help of the largest count the Goal tab searches: the device counts ``goal.seek``
    searches on the hardware shown (``goal.device_grid`` of the server's ``devices_per_node``
    and its ``allocation`` unit, up to ``max_devices``), the first ``GOAL_MAX_SHOWN`` and the
    largest; ``words``: the hardware's nouns (a GB200 NVL72's rack)."""
    counts = device_grid(devices_per_node, max_devices, allocation)
    shown = [whole(n) for n in counts]
    if len(shown) > GOAL_MAX_SHOWN + 1:
        shown = [*shown[:GOAL_MAX_SHOWN], "...", shown[-1]]
    return (f"How far the Goal tab searches: the {words.device} counts {', '.join(shown)} on "
            f"this hardware ({words.count(devices_per_node)} a {words.server}), up to this count "
            "(scalesim goal --max-devices). Its own control, not the largest count the charts "
            "plot: goal looks for the cheapest plan that meets the deadline, often far past the "
            "counts plotted.")


GOAL_LAYOUT_HELP = ("How the Goal tab chooses each plan's layout (scalesim goal --layout): "
                    "search runs the planner's best layout at each device count (tp x pp x cp, "
                    "schedule, recompute, sequence parallelism, as the Layouts tab ranks them); "
                    "given keeps the sidebar's Layout at every count; auto searches unless the "
                    "Layout sets a split (tp, pp, cp, schedule, virtual stages, recompute, "
                    "sequence parallelism, shard group), as the CLI does without --layout. A "
                    "workload without a transformer shape has no layouts to search.")


def _goal_section(c: _Controls) -> None:
    st.sidebar.header(GOAL_SECTION)
    c(st.sidebar.number_input, "cbs", "Critical batch size (samples; empty: unknown)",
      step=256.0, format="%.0f")
    c(st.sidebar.number_input, "train", "Samples in the training run",
      step=1e6, format="%.0f")
    c(st.sidebar.number_input, "price", c.label("price"), step=0.5, format="%.2f")
    c(st.sidebar.number_input, "dl", c.label("dl"), step=24.0, format="%.1f")
    c(st.sidebar.number_input, "bud", c.label("bud"), step=1000.0, format="%.0f")
    # the counts goal searches at the server size and largest count the controls give now
    now = c.state.model_copy(update={"dpn": c.values.get("dpn", c.state.dpn)})
    devices_per_node, allocation = count_unit(now, ss["profile"])
    c(st.sidebar.number_input, "gmax", c.label("gmax"), step=64, help=goal_max_help(
        devices_per_node, allocation, ss.get(_key("gmax"), c.state.gmax), c.words))
    labels = control_labels.choice_labels(control_labels.GOAL_LAYOUT_LABELS, c.words)
    c(st.sidebar.selectbox, "glay", c.label("glay"), options=list(labels),
      format_func=labels.get, help=GOAL_LAYOUT_HELP,
      disabled=ss["profile"].workload.transformer is None and c.state.glay != "search")


def _advanced_section(c: _Controls) -> None:
    """Controls most readers never need, folded away."""
    adv = st.sidebar.expander("Advanced: buckets, algorithm, stragglers, E_min")
    c(adv.number_input, "bkt", c.label("bkt"), step=5.0)
    c(adv.selectbox, "algo", "All-reduce algorithm",
      options=["auto", "ring", "tree", "hierarchical"])
    c(adv.number_input, "cv", "Straggler spread (step-time std / mean)", step=0.01,
      format="%.3f")
    c(adv.number_input, "slow", c.label("slow"), step=1)
    c(adv.number_input, "sf", c.label("sf"), step=0.1)
    c(adv.number_input, "emin", c.label("emin"),
      step=1e6, format="%.0f")


def _focus_section(c: _Controls, devices: list[int]) -> None:
    st.sidebar.header("Compare")
    if c.state.focus not in [None, *devices]:  # the device counts changed under it
        st.sidebar.info(f"Device count {c.state.focus} is no longer plotted: remedies and A vs B "
                        "are at auto (the knee).")
        ss[_key("focus")] = None
    c(st.sidebar.selectbox, "focus", c.label("focus"),
      options=[None, *devices], format_func=lambda d: "auto (the knee)" if d is None else str(d))
    b_labels = choice_labels(B_LABELS, c.words)
    c(st.sidebar.selectbox, "b", "Scenario B", options=list(b_labels), format_func=b_labels.get)


# ---------------------------------------------------------------- plan (cached)

@st.cache_resource(max_entries=64, show_spinner=False)
def _cached_plan(profile_json: str, state_json: str) -> Plan:
    return make_plan(Profile.model_validate_json(profile_json),
                     AppState.model_validate_json(state_json))


def _plan(profile: Profile, state: AppState) -> Plan:
    return _cached_plan(profile.model_dump_json(), state.model_dump_json())


# ---------------------------------------------------------------- main area

def _headline(plan: Plan) -> None:
    h = headline(plan)
    cols = st.columns(4)
    runs = h["runnable"] == "yes"
    stall = h.get("stall_share")
    words = plan.words  # processes for a CPU calibration
    cols[0].metric(f"Scaling efficiency at {words.count(plan.focus.devices)}", h["efficiency"],
                   f"-{stall} of each step is data stall" if stall else None,
                   delta_color="normal", delta_arrow="off" if stall else "auto")
    cols[1].metric(f"Throughput ({plan.unit}/s)",
                   throughput(plan.focus.samples_per_s) if runs else "not runnable")
    cols[2].metric(f"Speedup over one {words.device}", h["speedup"] if runs else "not runnable")
    if "time_to_train" in h:
        cols[3].metric(f"{finish_title(h['goal'])} / cost", h["time_to_train"],
                       h.get("cost"),
                       delta_color="off", delta_arrow="off")
    else:
        cols[3].metric("Time to train", "-", "enter training length", delta_color="off",
                       delta_arrow="off")
    if h["runnable"] != "yes":
        st.error(f"**{words.count(plan.focus.devices)}: {h['runnable']}.** These numbers "
                 "describe a layout that cannot run; see the remedies for one that fits.")
    elif "not_runnable" in h:
        st.warning(f"{h['not_runnable'][0].upper()}{h['not_runnable'][1:]}.")
    if "data_stall" in h:
        st.warning(h["data_stall"][0].upper() + h["data_stall"][1:] + ".")
    for key in ("one_device", "above_linear"):  # the efficiency's baseline, above 100 %
        if key in h:
            st.caption(_md(h[key][0].upper() + h[key][1:]) + ".")
    st.markdown(f"**Knee:** {h['knee']}  \n**Largest single gain:** {h['best_remedy']}")


def _shared_banner(plan: Plan) -> None:
    """'Shared what-if from <date>, <profile>' (a date the link's checksum does not vouch for:
    'said to be from <date> (...)', ``link_date.banner_date``) and, on request, the shared
    numbers beside mine."""
    shared = ss.get("shared")
    if shared:
        st.info(f"Shared what-if {shared['date']}, {_md(shared['profile'].name)}. Change "
                "the controls to try your own settings; compare them with the shared ones below.")
    if ss.get("sent") and (note := _sent_figure_note(ss["sent"])) is not None:
        st.info(_md(note))
    if not shared or not st.toggle("Compare with my settings", key="compare_shared"):
        return
    try:
        theirs = _plan(shared["profile"], shared["state"])
    except ScalesimError as exc:  # the shared what-if itself cannot run (the banner's box said)
        st.warning(f"The shared what-if cannot be predicted, so there is nothing to compare: "
                   f"{_md(str(exc))}")
        return
    rows = []
    for who, p in (("shared", theirs), ("mine", plan)):
        h = headline(p)
        t, cost = finish(p, p.focus)
        runs = p.focus.fits  # a run that does not fit has no pace, time or money: empty cells
        rows.append({"what-if": who, plan.words.header("devices"): p.focus.devices,
                     f"{p.unit}/s": p.focus.samples_per_s if runs else None,
                     "efficiency %": p.focus.efficiency * 100 if runs else None,
                     "runnable": h["runnable"], "hours to finish": to_hours(t) if runs else None,
                     "cost USD": cost if runs else None,
                     "recommendation": p.decision.recommendation if p.decision else "-"})
    show_table(pd.DataFrame(rows), key="compare_table")


def _sent_figure_note(opened: dict) -> str | None:
    """Where the opened link carries its sender's headline (``state.read_link``: ``sent``, of
    its ``state`` and ``profile``) and this scalesim predicts another for the same what-if at
    the same count: both figures and that the model changed since
    (``sent_figure.changed_note``); None where they agree."""
    sent, profile = opened["sent"], opened["profile"]
    words = hardware_nouns(profile.hardware)
    try:
        theirs = _plan(profile, opened["state"])
    except ScalesimError:  # the error box says why
        return changed_note(sent, None, profile.workload.sample_unit, words)
    row = next((r for r in theirs.rows if r.devices == sent.devices), None)
    return changed_note(sent, None if row is None else (row.samples_per_s, row.fits),
                        theirs.unit, theirs.words)


def _decision_card(plan: Plan) -> None:
    """The question, the options that matter with cost and gain, and the recommendation."""
    card = plan.decision
    if card is None:
        return
    with st.container(border=True, key="decision_card"):
        st.subheader(card.question)
        st.table(pd.DataFrame(card_rows(card)).set_index("option"))  # HTML: phones, readers
        st.success(f"**Recommendation:** {_md(card.recommendation)}")
        st.caption(f"Main assumption: {_md(card.assumption)}."
                   + (f" Time to finish = {card.goal}." if card.goal else "")
                   + "".join(f" {_md(n[0].upper() + n[1:])}." for n in card_notes(plan)))
        for i, (title, link) in enumerate(option_links(plan, _base_url())):
            if link is None:
                st.caption(f"{_md(title)}: the planner shows up to {plan.words.count(MAX_DEVICES)}; "
                           "`scalesim decide --json` gives its scenario (changes).")
            else:
                st.link_button(f"Open in the planner: {title}", link, key=f"option_link_{i}")


def _share(plan: Plan, link: str) -> None:
    from .report import charts_png_zip, report_html

    cols = st.columns([1, 1, 1, 2])
    with cols[0]:
        safe = json.dumps(link).replace("</", "<\\/")
        st.iframe(
            "<button id='c' style='font:14px sans-serif;padding:6px 12px;border-radius:6px;"
            "border:1px solid #bbb;background:#fff;cursor:pointer'>Copy share link</button>"
            f"<script>const link={safe};const b=document.getElementById('c');"
            "b.onclick=async()=>{try{await navigator.clipboard.writeText(link);}catch(e){"
            "const t=document.createElement('textarea');t.value=link;document.body.appendChild(t);"
            "t.select();document.execCommand('copy');t.remove();}b.textContent='Link copied';};"
            "</script>", height=44)
    cols[1].download_button("⬇ Report (HTML)", data=lambda: report_html(plan, link),
                            file_name="scalesim-plan.html", mime="text/html", on_click="ignore",
                            key="dl_html")
    cols[2].download_button("⬇ Charts (PNG, zip)", data=lambda: charts_png_zip(plan),
                            file_name="scalesim-charts.zip", mime="application/zip",
                            on_click="ignore", key="dl_png")
    with cols[3].expander("Share link (opens this exact what-if)"):
        if too_long := link_limit_words(dict(parse_qsl(urlsplit(link).query))):
            st.warning(too_long)
        st.code(link, language=None, wrap_lines=True)
        if local_only(link):
            st.caption("This link points at this computer (localhost): it opens only here. "
                       "Start the planner with `scalesim app --public-url https://...` to share "
                       "an address others can reach.")


def _rows_table(plan: Plan) -> pd.DataFrame:
    unit = plan.unit
    split = plan.focus.dp is not None  # a split model: its layout and pipeline bubble too
    bubble = any(r.bubble_s for r in plan.rows)  # a pipelined replica's (a fitted profile)
    words = plan.words  # the count columns: processes and hosts on a CPU calibration
    df = pd.DataFrame([{
        words.header("devices"): r.devices, words.header("servers"): r.nodes,
        **({PAGE_SPLIT_HEADER: split_short(r.dp, r.tp, r.pp)} if split else {}),
        "micro-batch": r.micro_batch,
        "global batch": r.global_batch, "step ms": r.step_time_s * 1e3,
        "compute ms": r.compute_s * 1e3, "exposed comm ms": r.exposed_comm_s * 1e3,
        **({"bubble ms": r.bubble_s * 1e3} if split or bubble else {}),
        **({"MFU %": None if r.mfu is None else r.mfu * 100} if split else {}),
        # no input pipeline: no stall column (``charts.stall_caption`` says why), not 0s
        **({} if charts.stall_left_out(plan.rows) else {"data stall ms": r.data_stall_s * 1e3}),
        "straggler ms": r.straggler_s * 1e3,
        f"{unit}/s": r.samples_per_s, "efficiency %": r.efficiency * 100,
        "memory GiB": round(r.memory_bytes / GIB_BYTES, 1),  # figures.gib's one decimal
        "runnable": "yes" if r.fits else "NO: does not fit in memory",
    } for r in plan.rows])
    # a row that does not fit has no step time, pace or efficiency: empty cells (its runnable
    # cell says why); the columns stay numbers, so a column sorts by value
    for column in (c for c in df.columns if c.endswith((" ms", " %", "/s"))):
        df[column] = [v if r.fits else None for r, v in zip(plan.rows, df[column], strict=True)]
    return df


def _chart(chart, words: str = "") -> None:
    """Draw an Altair chart and its text alternative. The spec is exported without Altair's
    JSON-schema validation, which took about half of a re-run (every chart builder is validated
    in the tests)."""
    st.vega_lite_chart(spec=chart.to_dict(validate=False), width="stretch")
    if words:
        st.caption(f"Chart in words: {_md(words)}")


def _tab_curve(plan: Plan) -> None:
    _chart(charts.throughput_chart(plan), charts.chart_text(plan, "throughput"))
    _chart(charts.efficiency_chart(plan), charts.chart_text(plan, "efficiency"))
    with st.expander("The numbers"):
        show_table(_rows_table(plan))
        if note := charts.stall_caption(plan):
            st.caption(_md(note))


def _tab_breakdown(plan: Plan) -> None:
    _chart(charts.breakdown_chart(plan), charts.chart_text(plan, "step_breakdown"))
    if misfits := misfit_counts_text(plan):
        st.warning(f"Not runnable: {misfits}: try ZeRO-3 or a smaller batch.")
    show_table(_rows_table(plan))
    if note := charts.stall_caption(plan):
        st.caption(_md(note))


def _tab_remedies(plan: Plan) -> None:
    _chart(charts.remedies_chart(plan), charts.chart_text(plan, "remedies"))
    unit, now_fits = plan.unit, plan.focus.fits
    show_table(*_remedies_table(plan.remedies, unit, now_fits))


def _remedies_table(remedies, unit: str, now_fits: bool) -> tuple[pd.DataFrame, dict]:
    """The Remedies tab's table and its signed columns' formats: gains as signed percentages where
    today's layout runs (numbers: they sort by value); where it does not fit, the gain columns
    are words (``MAKES_IT_RUN``, 'not runnable': a gain against a run that cannot happen has
    no number). A run that does not fit has no pace, time or money (empty cells)."""
    rows = []
    for r in remedies:
        p, shown = r.prediction, r.verdict != "not runnable" and r.time_s is not None
        runs = p is not None and p.fits
        gains = ({"faster to finish %": r.objective_gain * 100 if shown else None,
                  "throughput gain %": r.gain * 100 if r.applicable else None}
                 if now_fits else
                 {"faster to finish": MAKES_IT_RUN if shown else "",
                  "throughput gain": remedy_gain_cell(r, now_fits)})
        rows.append({
            "remedy": r.title, "verdict": r.verdict, **gains,
            f"{unit}/s": p.samples_per_s if runs else None,
            "step ms": p.step_time_s * 1e3 if runs else None,
            "fits in memory": ("yes" if p.fits else "NO") if p else "",
            "hours to finish": to_hours(r.time_s) if runs else None,
            "cost USD": r.cost_usd if runs else None,
            "note": remedy_note(r),
        })
    df = pd.DataFrame(rows)
    return df, {c: "%+.1f" for c in ("faster to finish %", "throughput gain %")}


def _tab_cost(plan: Plan) -> None:
    hours, money = charts.hours_chart(plan), charts.money_chart(plan)
    if hours is None or money is None:
        st.info(f"Enter a **price per {plan.words.device}-hour** and the **samples in the training run** "
                f"(sidebar: Training goal and price) to compare {plan.words.device} counts and remedies in "
                "hours and money.")
    else:
        _chart(hours, charts.chart_text(plan, "hours"))
        _chart(money)
    goal = resolve_goal(plan.profile, plan.scenario)
    billing = goal.billing_said(plan.profile.hardware.device_name, plan.words)
    st.caption(f"Cost counts the {plan.words.devices} a cloud bills: {billing} (the hardware's "
               "instance_sizes; docs/model.md §9).")
    if note := zero_price_note(goal):  # predict's note under its cost column
        st.caption(_md(note[0].upper() + note[1:]) + ".")
    show_table(pd.DataFrame([{
        "option": o.label, plan.words.header("devices"): o.devices,
        f"billed {plan.words.header('devices')}": o.billed_devices or int(
            goal.billed_devices(o.devices)),
        f"{plan.unit}/s": o.samples_per_s if o.fits else None,
        # a run that does not fit has no time or money (the card's, the charts' words)
        "hours to finish": to_hours(o.time_s) if o.fits else None,
        "cost USD": o.cost_usd if o.fits else None,
        "runnable": "yes" if o.fits else f"NO: {DOES_NOT_FIT}",
    } for o in plan.options]))


def _tab_quality(plan: Plan) -> None:
    chart = charts.quality_chart(plan)
    if chart is None:
        st.info("Enter a **critical batch size** (sidebar: Training goal and price) to see how "
                "time to quality changes with the global batch. `scalesim calibrate` estimates "
                "it from gradient norms (the gradient noise scale).")
        return
    _chart(chart, charts.chart_text(plan, "time_to_quality"))
    if not plan.quality_absolute:
        st.caption("Relative times (1 = fastest batch): enter E_min, the samples to quality at a "
                   "tiny batch, to see hours.")


def _tab_ab(plan: Plan) -> None:
    """A and B side by side; a side that cannot run says why in place of its numbers, and no
    change of B against A is shown unless both run (``ab_misfit``)."""
    if plan.b_focus is None:
        st.info(f"Scenario B ({choice_labels(B_LABELS, plan.words)[plan.state.b]}) does not "
                "apply here: "
                f"{_md(plan.b_label)}. Pick another B in the sidebar.")  # may quote a name
        return
    a, b = plan.focus, plan.b_focus
    left, right = st.columns(2)
    left.subheader(f"A: now, {plan.words.count(a.devices)}")
    right.subheader(f"B: {_md(plan.b_label)}")
    a_out, b_out = ab_misfit(plan, "A"), ab_misfit(plan, "B")
    for column, p, out in ((left, a, a_out), (right, b, b_out)):
        if out is not None:
            column.error(f"{out}.")
        else:
            _ab_metrics(column, plan, p, a if column is right and a_out is None else None,
                        unpriced=column is right and plan.b_unpriced_links)
    if a_out is not None and b_out is None:
        right.success(f"B {makes_it_run_text(b.samples_per_s, plan.unit, plan.words)}.")
    chart = charts.ab_chart(plan)
    if chart is not None:
        _chart(chart, charts.chart_text(plan, "a_vs_b"))


def _ab_metrics(column, plan: Plan, p: Prediction, ref: Prediction | None,
                unpriced: bool = False) -> None:
    """A run's numbers on the A/B tab, with its change against ``ref`` (A, where both run).
    ``unpriced``: the run buys faster links its cost leaves out (``Plan.b_unpriced_links``):
    its cost is labelled so (``UNPRICED_LINKS``) and has no change against A, whose money it
    does not compare with."""

    def rel(new: float | None, old: float | None) -> str | None:
        if ref is None or new is None or old is None or old == 0:
            return None
        return signed_percent(new / old - 1)

    column.metric(f"Throughput ({plan.unit}/s)", throughput(p.samples_per_s),
                  rel(p.samples_per_s, ref and ref.samples_per_s))
    column.metric("Step time", f"{p.step_time_s * 1e3:.1f} ms",
                  rel(p.step_time_s, ref and ref.step_time_s), delta_color="inverse")
    column.metric("Scaling efficiency", f"{p.efficiency:.1%}",
                  None if ref is None else f"{(p.efficiency - ref.efficiency) * 100:+.1f} points")
    (t, cost), (t_ref, cost_ref) = finish(plan, p), finish(plan, ref)
    if t is not None:
        column.metric("Time to finish", duration(t), rel(t, t_ref), delta_color="inverse")
    if cost is not None and unpriced:
        column.metric(ab_cost_label(True), f"${amount(cost)}")
    elif cost is not None:
        column.metric(ab_cost_label(False), f"${amount(cost)}", rel(cost, cost_ref),
                      delta_color="inverse")


def goal_controls(words: Nouns) -> GoalControls:
    """How the Goal tab's notes name what to change: the sidebar's labels of the layout knobs
    (their knob table row's link key, ``FIELD_LABELS``), where the layouts are ranked, and of
    the largest count goal searches (link key gmax, goal --max-devices), where it is, and the
    Hardware preset (goal --hardware) where another preset's devices hold a layout, and the
    kept layout's pipeline in its stage note ('Pipeline stages 3', ``page_pipeline``)."""
    return GoalControls(
        name=lambda f: in_words(FIELD_LABELS[LAYOUT_KNOB_BY_FIELD[f].url_key], words),
        max_devices=f"{in_words(FIELD_LABELS['gmax'], words)} in the sidebar's {GOAL_SECTION}",
        layouts="the Layouts tab ranks the layouts that fit", place="in the sidebar's Layout",
        layout=f"{FIELD_LABELS['glay']} '{{mode}}' in the sidebar's {GOAL_SECTION}",
        transformers="pick a transformer workload (e.g. llama3-8b) in the sidebar",
        hardware=f"the {FIELD_LABELS['hw']} in the sidebar",
        pipeline=lambda split: page_pipeline(split, words))


@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_goal(profile_json: str, scenario_json: str, deadline_s: float, budget_usd: float,
                 max_devices: int, layout: str):
    """``seek`` at the sidebar's what-if; ``layout``: goal's layout mode, resolved by
    ``goal_layout_mode`` (before the scenario's JSON, which marks every field given)."""
    profile = Profile.model_validate_json(profile_json)
    return seek(profile, Scenario.model_validate_json(scenario_json), deadline_s, budget_usd,
                max_devices, controls=goal_controls(hardware_nouns(profile.hardware)),
                layout=layout)


def _tab_goal(plan: Plan) -> None:
    state = plan.state
    if state.dl is None or state.bud is None:
        st.info("Enter a **deadline** and a **budget** (sidebar: Training goal and price) to find "
                "the cheapest plan that trains in time, and see time against money for every "
                "plan that runs.")
        return
    try:
        answer = _cached_goal(plan.profile.model_dump_json(),
                              plan.scenario.model_copy(update={"global_batch": None})
                              .model_dump_json(), state.dl * 3600.0, state.bud, state.gmax,
                              goal_layout_mode(state, plan.profile, plan.scenario))
    except ScalesimError as exc:
        exc = in_control_words(exc, state, plan.words)  # the knobs named as the sidebar's
        st.info(f"Goal seeking needs more: {_md(str(exc))}."
                + _md(controls_to_change(exc, state, plan.words)))
        return

    def said(line: str) -> str:  # a kept layout (``goal.kept_said``) or a plan's
        return page_title(line, plan.words)  # (``goal.describe``) in the sidebar's labels

    (st.success if answer.best is not None else st.warning)(_md(said(answer.sentence)))
    if answer.network_sentence:  # which faster network reaches the goal (goal.network_answer)
        st.markdown(_md(said(answer.network_sentence)))
    if answer.need_sentence:  # the least inter-server network that reaches it (network_need)
        st.markdown(_md(said(answer.need_sentence)))
    chart = charts.pareto_chart(answer)
    if chart is not None:
        _chart(chart, charts.pareto_text(answer))
    searched = answer.searched_words(f"plans searched ({plan.words.devices}, micro-batch, "
                                     "accumulation, strategy, priced network upgrades)")
    st.caption(f"{searched[0].upper()}{searched[1:]}. "
               + " ".join(_md(n[0].upper() + n[1:]) + "." for n in map(said, answer.notes)))
    if not answer.front:  # no plan runs: the sentence and the notes above say why, no table
        return
    table = pd.DataFrame([{
        "hours": to_hours(p.time_s), "cost USD": p.cost_usd, "meets goal": p.meets,
        plan.words.header("devices"): p.devices, plan.words.header("servers"): p.servers,
        **layout,  # a searched layout's, as the sentence names it
        "micro-batch": p.micro_batch,
        "accumulation": p.accumulation, "strategy": STRATEGY_LABELS[p.strategy],  # its choice
        "network": p.network,
    } for p, layout in zip(answer.front, searched_layout_cells(answer.front), strict=True)])
    if legend := short_legend(table.columns, plan.words):  # a searched layout's short names
        st.caption(f"Columns: {legend}.")
    show_table(table, {"hours": "%.1f"})


@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_layouts(profile_json: str, scenario_json: str, focus_json: str):
    return layout_ranking(Profile.model_validate_json(profile_json),
                          Scenario.model_validate_json(scenario_json),
                          Prediction.model_validate_json(focus_json))


@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_layout_note(profile_json: str, scenario_json: str, focus_json: str) -> str | None:
    """Plan's memory note of the Layouts tab's best (``layout_memory_note``)."""
    best = _cached_layouts(profile_json, scenario_json, focus_json)[0]
    return layout_memory_note(Profile.model_validate_json(profile_json),
                              Scenario.model_validate_json(scenario_json),
                              Prediction.model_validate_json(focus_json), best)


def _tab_layouts(plan: Plan) -> None:
    """The planner's ranked layouts at the focus device count and global batch."""
    f = plan.focus
    if splittable_shape(plan.profile) is None:
        st.info("This profile does not record the transformer it timed, so there is no layout "
                "to search: recalibrate it (scalesim calibrate --model gpt)."
                if plan.profile.compute.measured else
                "This workload is a parameter count only, so there is no layout to search: pick "
                "a transformer workload (e.g. llama3-8b or gpt-7.5b) in the sidebar.")
        return
    try:
        f = layout_reference(plan)
        rows = _cached_layouts(plan.profile.model_dump_json(), plan.scenario.model_dump_json(),
                               f.model_dump_json())
    except ScalesimError as exc:
        exc = in_control_words(exc, plan.state, plan.words)  # the knobs named as the sidebar's
        st.info(f"No layout to rank: {_md(str(exc))}."
                + _md(controls_to_change(exc, plan.state, plan.words)))
        return
    best = rows[0]
    st.markdown(f"**Best of {SEARCHED_LAYOUTS} on {plan.words.count(f.devices)} at global batch "
                f"{f.global_batch:,}:** {_md(page_row_title(best, plan.words))}: "
                + (f"{rate(best.samples_per_s, plan.unit)} "
                   f"({against_now_text(best.samples_per_s, f, plan.words)})." if f.fits else
                   f"{against_now_text(best.samples_per_s, f, plan.words, plan.unit)}."))
    note = _cached_layout_note(plan.profile.model_dump_json(), plan.scenario.model_dump_json(),
                               f.model_dump_json())
    if note:  # as plan says it, where the best nearly fills a device and no margin is set
        st.warning(_md(f"Memory: {note}."))
    _chart(charts.layouts_chart(rows, f.devices, words=plan.words), f"the best layout takes "
           f"{best.step_time_s * 1e3:,.0f} ms per step; the slowest shown "
           f"{rows[-1].step_time_s * 1e3:,.0f} ms")
    table = pd.DataFrame([{
        "rank": r.rank, "dp": r.dp, LAID["tp"]: r.tp, LAID["pp"]: r.pp, "ZeRO": r.zero,
        "ZeRO runs as": r.strategy_words,  # plan.row_strategy_words, as plan's note and JSON
        "shard group": r.shard_group if r.zero else None,  # HSDP where below dp (§16)
        "micro-batch": r.micro_batch, "accumulation": r.accumulation,
        LAID["schedule"]: SCHEDULE_SHORT[r.schedule],
        LAID["virtual_stages"]: r.virtual_stages, LAID["recompute"]: r.recompute,
        LAID["sequence_parallel"]: r.sequence_parallel, "step ms": r.step_time_s * 1e3,
        f"{plan.unit}/s": r.samples_per_s,
        "MFU %": None if r.mfu is None else r.mfu * 100,  # None: no datasheet peak (a CPU)
        "memory GiB": r.memory_bytes / GIB_BYTES, "why it ranks here": r.why,
    } for r in rows])
    st.caption(f"Columns: {short_legend(table.columns, plan.words)}.")  # the short names
    st.dataframe(table, hide_index=True, key="layouts_table", column_config={
        c: st.column_config.NumberColumn(format=RATE_FORMAT if c.endswith("/s") else "%.1f")
        for c in ("step ms", f"{plan.unit}/s", "MFU %", "memory GiB")})
    for words in dict.fromkeys(r.stage_notes for r in rows if r.stage_notes):
        # once per pp x virtual stages: uneven, or even in the model but not in torchtitan
        st.caption(f"Pipeline stages: {_md(words)}.")
    style = {"early-stop": "full recompute stops early (the MLP down projection is not rerun)",
             "op-sac": "selective recompute is torchtitan's per-op policy (every second matmul "
                       "rerun, the attention output saved)"}.get(
        plan.state.rs, "full recompute reruns the whole forward")
    st.caption("Set a layout in the sidebar (Layout: split the model) to see it on every chart; "
               "the sustained matmul efficiency is pinned to this profile's compute; "
               f"{style}, as your framework's does (set in the Layout section).")


TAB_RENDERERS = {"curve": _tab_curve, "breakdown": _tab_breakdown, "remedies": _tab_remedies,
                 "cost": _tab_cost, "quality": _tab_quality, "ab": _tab_ab, "goal": _tab_goal,
                 "layouts": _tab_layouts}


def _sidebar(state: AppState, profile: Profile) -> tuple[AppState, list[int]]:
    """Draw the controls; return the state they hold and the device counts it plots.

    Values come from the widgets' return values (only a rendered widget maps its browser value
    back to an option), so the controls are drawn before anything that depends on them.
    """
    c = _Controls(state)
    _profile_section(c)
    state = ss["app_state"]  # a profile callback may have changed it
    profile = ss["profile"]
    c.state = state
    _device_section(c, state)
    _batch_section(c)
    _comm_section(c, state)
    _layout_section(c)
    _data_section(c)
    _goal_section(c)
    _advanced_section(c)
    draft = state.model_copy(update=c.values)
    g, unit = count_unit(draft, profile)
    counts, _ = device_counts(draft, g, allocation=unit)
    _focus_section(c, counts)
    tab = LABEL_TO_TAB.get(ss.get(_key("tab"), ""), state.tab)
    state = AppState.model_validate({**state.model_dump(), **c.values, "tab": tab})
    return state, counts


def _base_url() -> str:
    """The address a receiver will reach ('' under AppTest), ending in a path: ``scalesim app
    --public-url`` when given (with this page's path), else the page's address as this browser
    sees it."""
    url = st.context.url or ""
    public = os.environ.get(PUBLIC_URL_ENV, "")
    if public:
        path = urlsplit(url).path.lstrip("/") if url else ""
        return public.rstrip("/") + "/" + path
    return url + "/" if url and not urlsplit(url).path else url


def local_only(link: str) -> bool:
    """True when ``link`` points at this machine (the receiver could not open it)."""
    host = urlsplit(link).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0")


def link_problems(messages: list[str]) -> str | None:
    """The share link's problems as one box's text (None when there are none): what each is,
    then what to do about it."""
    if not messages:
        return None
    if len(messages) == 1:
        head = f"Share link: {messages[0]}."
    else:
        head = (f"Share link: {len(messages)} problems: "
                + "; ".join(f"({i}) {m}" for i, m in enumerate(messages, 1)) + ".")
    return head + " To fix it: set the controls in the sidebar (the link follows them), or ask " \
        "the sender for a new link."


# what the fallback without the Layout expander's controls sets back: the layout and the
# sequence length (its field is no layout's, but a sequence the model cannot predict at is
# dropped the same way, keeping the rest of the what-if)
UNSPLIT_FIELDS = (*LAYOUT_FIELDS, "seq")


def _unsplit_words(state: AppState, words: Nouns) -> str:
    """What the fallback without the Layout controls drops from ``state``, in words: 'this
    what-if without its model split (tp 1, pp 1)' where it had one, and the other Layout
    controls it sets back by name ('... with Shard group (HSDP) at its default'), so the box
    never says a split was dropped from a what-if that had none."""
    changed = [f for f in UNSPLIT_FIELDS if getattr(state, f) != AppState.model_fields[f].default]
    split = any(f in ("tp", "pp") for f in changed)
    others = [in_words(FIELD_LABELS.get(f, f), words) for f in changed if f not in ("tp", "pp")]
    text = "this what-if" + (" without its model split (tp 1, pp 1)" if split else "")
    if others:
        text += (" and" if split else "") + (f" with {', '.join(others)} at "
                                              + ("its default" if len(others) == 1
                                                 else "their defaults"))
    return text


def _named_resets(profile: Profile, state: AppState,
                  error: ScalesimError) -> list[tuple[AppState, str]]:
    """The fallbacks that set back only the controls ``error`` names (``named_controls``, its
    knobs: each alone, in the order named, then all of them) to this profile's defaults, each with its
    words ('this what-if with NICs per server at its default'): the link's other values kept."""
    defaults = profile_defaults(profile)
    named = named_controls(error, state, defaults)
    words = hardware_nouns(profile.hardware)
    out = []
    for keys in [*([k] for k in named), *([named] if len(named) > 1 else [])]:
        reset = state.model_copy(update={
            k: defaults.get(k, AppState.model_fields[k].default) for k in keys})
        labels = [in_words(FIELD_LABELS.get(k, k), words) for k in keys]
        said = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
        out.append((reset, f"this what-if with {said} at "
                           + ("its default" if len(keys) == 1 else "their defaults")))
    return out


def _plan_or_fallback(profile: Profile, state: AppState) -> Plan | None:
    """The plan of ``state``; where it cannot be predicted, one error box saying why and the
    plan of the last what-if that could be (or of this profile's defaults), so the page keeps
    working. None only where neither can be predicted (the error box says why)."""
    try:
        plan = _plan(profile, state)
    except ScalesimError as exc:
        last = ss.get("last_good")
        unsplit = state.model_copy(update={f: AppState.model_fields[f].default
                                           for f in UNSPLIT_FIELDS})
        weak = state.model_copy(update={"mode": "weak"})  # strong scaling's batch not split
        fallbacks = [
            *([(last[1], "the last what-if that could be predicted")]
              if last is not None and last[0] == profile else []),
            *_named_resets(profile, state, exc),
            *([(weak, "this what-if at a per-"
                f"{hardware_nouns(profile.hardware).device} batch of "
                f"{state.mb or profile.workload.micro_batch} (weak scaling)")]
              if weak != state else []),
            *([(unsplit, _unsplit_words(state, hardware_nouns(profile.hardware)))]
              if unsplit != state else []),
            (with_profile_defaults(AppState(src=state.src, hw=state.hw, wl=state.wl), profile),
             "this profile's defaults"),
        ]
        words = hardware_nouns(profile.hardware)
        exc = in_control_words(exc, state, words)  # the knobs its line names, as the sidebar's
        for fallback, shown in fallbacks:
            try:
                plan = _plan(profile, fallback)
            except ScalesimError:
                continue
            st.error(f"Cannot predict this scenario: {_md(str(exc))}."
                     f"{_md(controls_to_change(exc, state, words))} Below: {shown} until "
                     "the controls are changed.")
            return plan
        st.error(f"Cannot predict this scenario: {_md(str(exc))}."
                 + _md(controls_to_change(exc, state, words)))
        return None
    ss["last_good"] = (profile, state)
    return plan


def render() -> None:
    """Draw the planner page (the app's default page)."""
    _init_session()
    st.title("scalesim: what-if planner")
    if text := link_problems(ss.get("link_messages") or []):
        st.warning(_md(text))
    try:
        state, _ = _sidebar(ss["app_state"], ss["profile"])
    except ValueError as exc:  # a widget value the state refuses: keep the last good state
        st.error(f"A control has a value the planner cannot use ({_md(str(exc))}); using the last "
                 "good one")
        state = ss["app_state"]
    profile: Profile = ss["profile"]
    ss["app_state"] = state

    plan = _plan_or_fallback(profile, state)
    # the headline the link's receiver checks, only of this what-if (not a fallback's)
    params = with_figure(encode_query(state, profile),
                         plan_figure(plan) if plan is not None and plan.state == state else None)
    try:
        if st.query_params.to_dict() != params:
            st.query_params.from_dict(params)
    except Exception:  # noqa: BLE001 - the URL is a convenience; never fail the page for it
        pass
    if plan is None:
        return
    today = today_utc().isoformat()  # the clock the receiver checks it by (link_date)
    link = f"{_base_url()}?{query_string(share_query(params, today))}"
    st.caption(f"Profile: {_md(profile.name)}. Predictions from an analytical model, "
               "not measurements.")
    _shared_banner(plan)
    st.markdown(escape_markdown_keep_bold(story(plan)))
    _decision_card(plan)
    _headline(plan)
    caveats = profile_caveats(profile)
    if caveats:
        with st.expander(f"Caveats of this profile ({len(caveats)})"):
            st.markdown("\n".join(f"- {_md(c)}" for c in caveats))
    for refused in plan.refusals:
        st.error(_md(refused))  # may quote a typed device list
    for note in plan.notes:  # sentences, as the page's other notes (was no full stop)
        st.info(_md(as_sentence(note)))
    _share(plan, link)
    tabs = st.tabs(list(TABS.values()), key=_key("tab"), on_change="rerun")
    for (tab_id, _), container in zip(TABS.items(), tabs, strict=True):
        if container.open:
            with container:
                TAB_RENDERERS[tab_id](plan)
