"""The planner's whole state, and its versioned URL query-string form (the share link).

Pure: no streamlit import, so the round trip is unit-testable. A link holds every control
(``AppState``, one short query key per field), the chosen presets, and the profile's fitted
parameters as a compact blob (``prof``: the profile JSON without raw points, free text or host
names, zlib-compressed, base64url). Reading a link never runs anything from it: values are
validated by pydantic field by field, the blob is size-limited before and after decompression and
parsed with ``json`` only. A broken field falls back to its default with a one-line message; a
link changed on its way (cut short, a value dropped or edited) fails its checksum (``ck``) and
is said.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, get_args
from urllib.parse import urlencode

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from scalesim import presets
from scalesim.attention_kernel import VENDOR_KERNEL, AttentionKernel
from scalesim.bounds import (
    GOAL_DEFAULT_MAX_DEVICES,
    KNOB_BY_URL_KEY,
    LAYOUT_KNOBS,
    MODEL_SPLIT,
    MODEL_SPLIT_SINCE,
    Bound,
    bound,
    bounded,
    edge_number,
    nonzero_floor,
    number_hint,
    read_number,
    url_bound,
    url_field,
)
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import NOT_NUMBER, NOT_WHOLE, ScalesimError, cut_at_word, printable
from scalesim.figures import count_list, exact, number
from scalesim.jsonio import error_text, parse_json_text
from scalesim.layout import DEFAULT_RECOMPUTE_STYLE, RecomputeStyle
from scalesim.precision import DEFAULT_PRECISION, Precision
from scalesim.profiles import parse_profile, profile_from_presets
from scalesim.schemas import GradSync, Profile, Scenario, ZeroFramework

from .control_labels import NAMES, in_words
from .link_date import NOT_A_DATE, SharedDate, date_problem, today_utc
from .sent_figure import HEADLINE_KEY, SentFigure, parse_figure

# The share link's versions. Each link key arrived in the version its knob table row says
# (``bounds.Knob.link_since``, docs/bounds.md's 'link since' column), and a link older than that
# opens as the row's ``link_before`` says, the key ignored with a message (``decode_query``); a
# v1 or v2 link ignores every layout key (data parallel). Values and scenario B choices that
# arrived later are listed here (V8_VALUES, V13_VALUES, B_SINCE). A link is written at the least
# version that can show it (``link_version``): v2 (only what differs from the defaults, presets
# by name) unless it uses what a later one added; v1 links (every control) still open.
LINK_KEY_ROWS = KNOB_BY_URL_KEY  # each link key's knob table row, in the table's order
V8_VALUES = {"rs": ("op-sac",)}  # the values v8 added to fields of earlier versions
OP_SAC_BEFORE = "per-op (op-sac) recompute style"  # what a link before v8 has instead
# asked, not the default any more (v13: v6 to v12 links' fused-vendor was that default, and
# opens as it, '')
V13_VALUES = {"ak": (VENDOR_KERNEL,)}
# the scenario B choices added after v2, at the version that added each (split_model: v3, read
# by every version; the others: a link older than theirs opens with the best remedy)
B_SINCE = {"split_model": 3, "attention_kernel": 7, "tp_overlap": 7, "fp8": 12}
VALUES_SINCE = {8: V8_VALUES, 13: V13_VALUES}
LINK_VERSION = max(*(k.link_since for k in LINK_KEY_ROWS.values()), *B_SINCE.values(),
                   *VALUES_SINCE)  # the newest: the last of these to arrive
READ_VERSIONS = tuple(str(v) for v in range(1, LINK_VERSION + 1))


def keys_added_in(version: int) -> tuple[str, ...]:
    """The link keys link version ``version`` added (their rows' ``link_since``), in the knob
    table's order."""
    return tuple(key for key, knob in LINK_KEY_ROWS.items() if knob.link_since == version)


def b_added_in(version: int) -> tuple[str, ...]:
    """The scenario B choices link version ``version`` added (``B_SINCE``)."""
    return tuple(b for b, since in B_SINCE.items() if since == version)


def values_added_in(version: int) -> dict[str, tuple[str, ...]]:
    """The values link version ``version`` added to keys of earlier versions."""
    return VALUES_SINCE.get(version, {})


# v3 and later (rs: v4, tpo: v7, sg: v9, p2p: v14, cp: v15): the layout knobs' link keys
# (``bounds.LAYOUT_KNOBS``, in their order)
LAYOUT_FIELDS = tuple(k.url_key for k in LAYOUT_KNOBS)
# a share link ends with its preset fingerprint (ph) or profile (prof), then its date (at):
# a cut one loses those first
CUT_SHORT = "the link may have been cut short when copied (its end is missing)"
# an 8-hex-digit value (checksum, fingerprint) in capitals: whole, but changed on its way
CASE_CHANGED = ("the link was changed on its way (its letters put in capitals, as some chat "
                "clients and editors do), not cut short")
SHARED_DATE_KEY = "at"  # the date a share link was made (YYYY-MM-DD), for the receiver's banner
# the link's checksum (session 41; no new version: an older scalesim lists it as an unknown field
# and shows the same what-if): right after the version, so a cut link keeps it and fails it
CHECK_KEY = "ck"
# the first link version the app has always written with a checksum (the checksum came before
# v16 without a version of its own): such a link without one was cut or edited on its way
CHECKSUM_SINCE = 16
LOOKS_CUT = "this link looks cut: ask the sender for the whole link"
NO_CHECKSUM_SINCE = (f"the link has no checksum ('{CHECK_KEY}'), which every v{CHECKSUM_SINCE} or "
                     f"later link holds right after its version: {LOOKS_CUT}")
NO_CHECKSUM = (f"the link carries no checksum ('{CHECK_KEY}'; an older scalesim made it): a value "
               "changed or dropped in it cannot be told, so compare the sidebar with the sender's")
PROFILE_IN_LINK = "the profile in the link"  # how a damaged profile blob's messages start
MAX_QUERY_CHARS = 16_000  # the whole query string (browsers keep ~32k; stay well below)
MAX_VALUE_CHARS = 400  # one control's value
MAX_PROFILE_BLOB_CHARS = 12_000  # the compressed profile, base64url
# what a link's keys start with where a page escaped its '&' as '&amp;': the browser splits
# at the '&' and keeps 'amp;' on the next key ('amp;ck')
HTML_ESCAPED_AMP = "amp;"
MAX_PROFILE_JSON_BYTES = 200_000  # the profile after decompression
MAX_DEVICES = 16_384  # the planner's largest device count (chart size), within bounds.DEVICES_MAX
IGNORED_KEYS = {"embed", "embed_options"}  # Streamlit's own query parameters

IntraMode = Literal["profile", "custom", *presets.INTRA_LINKS.keys()]  # type: ignore[valid-type]
InterMode = Literal["profile", "custom", "infiniband", "roce", "ethernet"]
RemedyChoice = Literal["best", "bigger_batch", "overlap", "accumulation", "loader", "sharding",
                       "interconnect", "slow_device", "more_devices", "split_model",
                       "attention_kernel", "tp_overlap", "fp8"]


def url_choices(url_key: str, *more: str) -> Any:
    """The ``Literal`` of a choice knob's link values: ``more`` (the app's own, as 'auto' for
    the scenario's None), then the knob table's choices (``bounds.KNOB_BY_URL_KEY``)."""
    return Literal[(*more, *KNOB_BY_URL_KEY[url_key].choices)]  # type: ignore[valid-type]


StratChoice = url_choices("strat")
AlgoChoice = url_choices("algo")
SchedChoice = url_choices("sched", "auto")  # auto: the schedule's default for pp (1f1b)
RecChoice = url_choices("rec", "auto")  # auto: the workload's recompute
# auto: goal --layout's default (search unless the sidebar sets a split: goal_layouts)
GoalLayoutChoice = url_choices("glay", "auto")


# the workload presets: the data-parallel ones, then the transformer shapes (split by a layout)
WORKLOAD_PRESETS = tuple(dict.fromkeys([*presets.WORKLOADS, *presets.TRANSFORMERS]))


class AppState(BaseModel):
    """Every control of the planner. ``None`` means "take it from the profile".

    The bounds match the widgets' so that any state a link can carry is one the page can show.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    src: Literal["preset", "custom"] = "preset"
    hw: str = presets.DEFAULT_HARDWARE
    wl: str = presets.DEFAULT_WORKLOAD
    dmax: int = Field(default=16, ge=1, le=MAX_DEVICES, description="largest device count")
    grid: Literal["pow2", "server", "list"] = "pow2"
    dlist: str = Field(default="", max_length=MAX_VALUE_CHARS, description="e.g. 1,2,4,8,16")
    dpn: int | None = url_field("dpn", None, "devices per server")
    mode: Literal["weak", "strong"] = "weak"
    mb: int | None = url_field("mb", None, "per-device micro-batch")
    gb: int | None = url_field("gb", None, "fixed global batch")
    acc: int = url_field("acc", 1)
    ovl: bool = True
    bkt: float = url_field("bkt", 25.0, "bucket size, MiB")
    strat: StratChoice = "ddp"  # type: ignore[valid-type]
    zfw: ZeroFramework = "fsdp"  # how ZeRO runs: FSDP / Megatron-Core, or DeepSpeed (v10)
    gs: GradSync = "every-micro-step"  # when ZeRO-2/3 reduce under accumulation (v5)
    # the framework's attention kernel (v6); '': the one the profile's
    # timings ran, Scenario.attention_kernel None (v13; before, fused-vendor meant it)
    ak: AttentionKernel | Literal[""] = ""
    pr: Precision = DEFAULT_PRECISION  # the layers' matmul precision (v11)
    algo: AlgoChoice = "auto"  # type: ignore[valid-type]
    lw: int | None = url_field("lw", None, "loader workers per device")
    cv: float | None = url_field("cv", None, "step-time std/mean")
    slow: int | None = Field(default=None, ge=0, lt=MAX_DEVICES,
                             description="slow device rank (below the planner's device cap)")
    sf: float = url_field("sf", 1.0, "slow device factor")
    intra: IntraMode = "profile"  # type: ignore[valid-type]
    ibw: float | None = url_field("ibw", None, "intra busbw, GB/s")
    ilat: float | None = url_field("ilat", None, "intra latency, us")
    inter: InterMode = "profile"
    nics: int = bounded("nics_per_node", 8, "NICs per server")
    gbit: float = bounded("gbit_per_nic", 400.0, "Gbit/s per NIC")
    ebw: float | None = url_field("ebw", None, "inter busbw, GB/s")
    elat: float | None = url_field("elat", None, "inter latency, us")
    cbs: float | None = url_field("cbs", None, "critical batch, samples")
    emin: float | None = url_field("emin", None, "E_min, samples")
    train: float | None = url_field("train", None, "samples in the run")
    price: float | None = url_field("price", None, "USD per device-hour")
    focus: int | None = Field(default=None, ge=1, le=MAX_DEVICES, description="None: auto")
    b: RemedyChoice = "best"
    tab: Literal["curve", "breakdown", "remedies", "cost", "quality", "ab", "goal",
                 "layouts"] = "curve"
    dl: float | None = bounded("deadline_s", None, "deadline", factor=1 / 3600, unit="hours")
    bud: float | None = bounded("budget_usd", None, "budget")
    # the model split (Scenario.layout; a workload with a transformer shape only)
    tp: int = url_field("tp", 1, "tensor-parallel degree")
    pp: int = url_field("pp", 1, "pipeline stages")
    sched: SchedChoice = "auto"  # type: ignore[valid-type]
    vs: int = url_field("vs", 1, "virtual stages per pipeline rank")
    rec: RecChoice = "auto"  # type: ignore[valid-type]
    rs: RecomputeStyle = DEFAULT_RECOMPUTE_STYLE  # how full / selective recompute reruns it
    sp: bool = False
    tpo: bool = False  # the framework overlaps the tensor-parallel collectives (v7)
    sg: int | None = url_field("sg", None, "shard group (hybrid sharding); None: all of dp")  # v9
    # the interleaved schedule's sends overlap the next chunk (ScenarioLayout.p2p_overlap, v14)
    p2p: bool = True
    # the context-parallel degree (ScenarioLayout.cp, v15): ranks that split each sequence
    cp: int = url_field("cp", 1, "context-parallel degree")
    # the transformer at this sequence length (v16; profiles.workload_at_sequence, predict
    # --seq-len); None: the workload's own
    seq: int | None = url_field("seq", None, "tokens per sequence; None: the workload's own")
    # the share of each device's memory a layout may not fill (Scenario.memory_margin, plan
    # --memory-margin; v17); 0: all of it
    mm: float = url_field("mm", 0.0, "share of each device's memory kept free")
    # the largest device count the Goal tab searches (goal --max-devices, v17): its own, not
    # dmax, which only draws the charts (and a device list ignores)
    gmax: int = url_field("gmax", GOAL_DEFAULT_MAX_DEVICES, "largest device count goal searches")
    # how the Goal tab chooses each plan's layout (goal --layout, v18): the planner's best at
    # each count (search), the sidebar's split (given), or goal's default (auto)
    glay: GoalLayoutChoice = "auto"  # type: ignore[valid-type]

    _price_floor = field_validator("price")(nonzero_floor("price_per_device_hour"))

    @field_validator("*", mode="before")
    @classmethod
    def _number_as_the_cli_reads_it(cls, value: Any, info: ValidationInfo) -> Any:
        """A link's text for a number control read as a flag's (``bounds.read_number``):
        '3_2' is no number, where pydantic would read 32."""
        integer = WHOLE_FIELDS.get(info.field_name)
        if not isinstance(value, str) or integer is None:
            return value
        try:
            return read_number(value, integer)
        except ValueError:  # how to write it, as the flag's refusal says ('1e3': in digits)
            hint = number_hint(value, typed_bound(info.field_name)) if value.strip() else ""
            raise ValueError(f"{NOT_WHOLE if integer else NOT_NUMBER}{hint}") from None

    @field_validator("hw")
    @classmethod
    def _known_hw(cls, v: str) -> str:
        if v not in presets.HARDWARE:
            raise ValueError(f"unknown hardware preset (known: {', '.join(presets.HARDWARE)})")
        return v

    @field_validator("wl")
    @classmethod
    def _known_wl(cls, v: str) -> str:
        if v not in WORKLOAD_PRESETS:
            raise ValueError(f"unknown workload preset (known: {', '.join(WORKLOAD_PRESETS)})")
        return v


FIELDS = tuple(AppState.model_fields)


# each number field of ``AppState`` -> whether it holds a whole number (True) or a float
# (False), built once for its validator (``_number_as_the_cli_reads_it``)
WHOLE_FIELDS = {name: kinds == {int} for name, field in AppState.model_fields.items()
                if (kinds := set(get_args(field.annotation) or [field.annotation])
                    - {type(None)}) in ({int}, {float})}


SCENARIO_KEYS = frozenset({"v", *FIELDS, "ph", "prof"})  # what a link opens on
# what a link's checksum covers: its what-if, since session 47 the sender's headline figure
# (``HEADLINE_KEY``; session 46 wrote it outside) and since session 48 the share link's date
# (``SHARED_DATE_KEY``; written outside before): ``link_integrity`` reads the older links still
CHECKED_KEYS = SCENARIO_KEYS | {HEADLINE_KEY, SHARED_DATE_KEY}
NULLABLE = frozenset(name for name, f in AppState.model_fields.items()
                     if f.default is None or "None" in str(f.annotation))


# a control's name in a sentence; {device}, {server}...: the profile's nouns
# (``control_labels.in_words``, as the controls' labels); a control with a label in
# ``control_labels.CONTROLS`` is named as its sidebar label starts (``NAMES``), nowhere else
FIELD_LABELS = {
    "gb": "Global batch", "acc": "Gradient accumulation",
    "cv": "Straggler spread", "gbit": "Gbit/s per NIC",
    "cbs": "Critical batch size", "train": "Samples in the training run",
    "pp": "Pipeline stages", "sched": "Pipeline schedule", "vs": "Virtual stages",
    "rec": "Activation recompute", "rs": "Recompute style",
    "sp": "Sequence parallelism",
    "ak": "Attention kernel", "pr": "Matmul precision",
    "tpo": "Tensor-parallel overlap", "p2p": "Pipeline send overlap",
    "cp": "Context parallelism", "seq": "Sequence length",
    "zfw": "ZeRO framework", "strat": "Strategy",
    **NAMES,
}


def typed_bound(name: str) -> Bound:
    """The bounds of ``AppState``'s number field ``name`` in the link's unit: a scenario knob's
    from the bounds table (``bounds.url_bound``), another's from its field, with no unit."""
    if name in KNOB_BY_URL_KEY:
        return url_bound(name)
    lo, hi = field_bounds(name)
    why = (AppState.model_fields[name].description or "").split(";")[0]
    return Bound(-math.inf if lo is None else lo, math.inf if hi is None else hi, "", why,
                 WHOLE_FIELDS.get(name, False))


def field_bounds(name: str) -> tuple[float | None, float | None]:
    """(lowest, highest) value ``AppState`` accepts for ``name``: the one source of a control's
    bounds (the widgets take theirs from here). Exclusive bounds become the next whole number
    for whole-number fields."""
    import annotated_types as at

    field = AppState.model_fields[name]
    whole = WHOLE_FIELDS.get(name, False)
    lo = hi = None
    for m in field.metadata:
        if isinstance(m, at.Ge):
            lo = m.ge
        elif isinstance(m, at.Gt):
            lo = m.gt + 1 if whole else m.gt
        elif isinstance(m, at.Le):
            hi = m.le
        elif isinstance(m, at.Lt):
            hi = m.lt - 1 if whole else m.lt
    if whole:
        lo, hi = (None if lo is None else int(lo)), (None if hi is None else int(hi))
    else:
        lo, hi = (None if lo is None else float(lo)), (None if hi is None else float(hi))
    return lo, hi


def widget_bounds(name: str) -> dict[str, Any]:
    """``min_value`` / ``max_value`` keyword arguments of a Streamlit number input for ``name``."""
    lo, hi = field_bounds(name)
    return {k: v for k, v in (("min_value", lo), ("max_value", hi)) if v is not None}


def _number(value: Any) -> str:
    """A control's value in a refusal, written like its bound (``figures.number``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number(value)
    return _shown(value)


def refusal(state: AppState, name: str, value: Any, words: Nouns = GPU_NOUNS) -> str | None:
    """None when ``state`` accepts ``value`` for control ``name``, else one plain sentence that
    says what is wrong and which value is kept (the state's); the control named in ``words``,
    the profile's nouns."""
    try:
        AppState.model_validate({**state.model_dump(), name: value})
        return None
    except ValidationError as exc:
        err = next((e for e in exc.errors() if e.get("loc") and e["loc"][0] == name),
                   exc.errors()[0])
    label = in_words(FIELD_LABELS.get(name, name), words)
    lo, hi = field_bounds(name)
    kept = getattr(state, name)
    keep = "empty" if kept is None else _number(kept)
    shown = _number(value)
    # a bound rescaled to the control's unit is written about where exactly takes 16 digits
    # (a deadline of a second: ~0.000278 hours, bounds.edge_number)
    if err["type"] in ("less_than_equal", "less_than") and hi is not None:
        what = f"{shown} is above the largest value the planner takes, {edge_number(hi)}"
    elif err["type"] in ("greater_than_equal", "greater_than") and lo is not None:
        what = f"{shown} is below the smallest value the planner takes, {edge_number(lo)}"
    else:
        what = f"{shown} is not a value the planner takes ({error_text(err)})"
    return f"{label}: {what}; keeping {keep}."


def preset_profile(state: AppState) -> Profile:
    from scalesim.profiles import load_workload

    return profile_from_presets(presets.get_hardware(state.hw), load_workload(state.wl))


def profile_defaults(profile: Profile, messages: list[str] | None = None,
                     notes: list[str] | None = None) -> dict[str, Any]:
    """Control values a newly chosen profile brings (its server size, batch, price...).

    A value outside a control's bounds falls back to the control's default, with a one-line
    message appended to ``messages``; what the profile holds that no control shows but the
    model uses all the same (a noise scale below one sample) is said in ``notes``.
    """
    wl, hw = profile.workload, profile.hardware
    cbs = wl.critical_batch_size
    if cbs is None and profile.noise_scale is not None:
        cbs = profile.noise_scale.b_simple  # B_simple estimates B_noise (McCandlish et al.)
        if cbs < bound("critical_batch").low:
            # the control cannot hold it: it stays empty and the model reads the profile's
            # measured noise scale itself (training_time.resolve_goal), as predict does
            if notes is not None:
                notes.append(f"the profile's measured noise scale B_simple ({cbs:.2g} "
                             "samples) is below the critical batch control's least (1 "
                             "sample): the control ('cbs') stays empty and the model uses "
                             "the measured value")
            cbs = None
    inter = hw.inter_node
    values = {
        "intra": "profile", "inter": "profile",  # the controls show the links the profile has
        "nics": inter.nics_per_node or AppState.model_fields["nics"].default,
        "gbit": inter.gbit_per_nic or AppState.model_fields["gbit"].default,
        "dpn": hw.devices_per_node,
        "mb": wl.micro_batch,
        "gb": wl.micro_batch * hw.devices_per_node * 8,
        "lw": None,
        "cv": profile.jitter.step_time_cv if profile.jitter is not None else 0.0,
        "cbs": cbs,
        "emin": wl.min_samples_to_quality,
        "train": wl.train_samples,
        "price": hw.price_per_device_hour,
    }
    for name, value in values.items():
        try:
            AppState.model_validate({name: value})
        except ValidationError as exc:
            default = AppState.model_fields[name].default
            if messages is not None:
                messages.append(f"the profile's value for '{name}' ({_shown(value)}) does not fit "
                                f"the planner ({error_text(exc.errors()[0])}); using "
                                f"{'an empty control' if default is None else default} instead")
            values[name] = default
    return values


def with_profile_defaults(state: AppState, profile: Profile) -> AppState:
    return state.model_copy(update=profile_defaults(profile))


def _value_words(value: Any) -> str:
    """A control's value as a sentence names it: 'empty' for None, a number exactly."""
    if value is None:
        return "empty"
    return str(value) if isinstance(value, str) else number(value)


def reset_words(state: AppState, old: Profile, new: dict[str, Any], words: Nouns) -> str:
    """'Global batch 512 → 64, Devices per server 4 → 8': each control ``state`` holds away
    from the ``old`` profile's value (``profile_defaults``: set by hand or by a link) that a
    newly chosen profile's values ``new`` (``profile_defaults`` of it) set to another, named
    by its sidebar label in the new profile's ``words``; '' where none was reset."""
    before = profile_defaults(old)
    return ", ".join(f"{in_words(FIELD_LABELS[f], words)} {_value_words(getattr(state, f))} → "
                     f"{_value_words(value)}" for f, value in new.items()
                     if getattr(state, f) not in (before[f], value))


def default_state() -> AppState:
    """What a fresh app shows: the default presets and their profile's control values."""
    state = AppState()
    return with_profile_defaults(state, preset_profile(state))


# ---------------------------------------------------------------- profile blob

MAX_CAVEATS = 12
MAX_CAVEAT_CHARS = 300


def _cut(text: str) -> str:
    return cut_at_word(text, MAX_CAVEAT_CHARS)


def profile_caveats(profile: Profile) -> list[str]:
    """What a reader must know about the profile's numbers: every link level that was not
    measured, why and where its numbers came from in ``scalesim predict``'s words
    (``profiles.unmeasured_origin``), and the profile's notes (each cut to MAX_CAVEAT_CHARS,
    duplicates dropped)."""
    from scalesim.profiles import unmeasured_links, unmeasured_origin

    words = hardware_nouns(profile.hardware)
    out: list[str] = []
    for level, link in unmeasured_links(profile).items():
        origin = unmeasured_origin(link)
        out.append(_cut(f"{words.link(level)} not measured"
                        + (f" {origin}" if origin else "")))
    out.extend(_cut(n) for n in profile.notes[:MAX_CAVEATS])
    return list(dict.fromkeys(out))


def compact_profile(profile: Profile) -> Profile:
    """The profile's fitted parameters and caveats only: no raw points, sources or host names.

    Nothing dropped here is read by ``scalesim.predict`` (the loader curve's points are the
    fitted curve, so they stay). The caveats (``profile_caveats``: notes, and of each link
    level not measured why and where its numbers came from, with its note for a profile written
    before those fields) stay, cut short, so a receiver and their report see them.
    """
    hw, wl, comp = profile.hardware, profile.workload, profile.compute
    return profile.model_copy(update={
        "fingerprint": profile.fingerprint.model_copy(update={"hostnames": []}),
        "hardware": hw.model_copy(update={
            "source": "", "topology": None,
            "intra_node": hw.intra_node.model_copy(update={"source": ""}),
            "inter_node": hw.inter_node.model_copy(update={"source": ""}),
        }),
        "workload": wl.model_copy(update={
            "source": "",
            "reference": [r.model_copy(update={"source": ""}) for r in wl.reference],
        }),
        "compute": comp.model_copy(update={"points": [], "source": ""}),
        "links": [link.model_copy(update={"points": [], "note": "" if link.measured
                                          else _cut(link.note),
                                          "numbers_from": _cut(link.numbers_from)})
                  for link in profile.links],
        "input_pipeline": (None if profile.input_pipeline is None
                           else profile.input_pipeline.model_copy(update={"source": ""})),
        "jitter": (None if profile.jitter is None
                   else profile.jitter.model_copy(update={"per_rank_median_s": []})),
        "notes": [_cut(n) for n in profile.notes[:MAX_CAVEATS]],
    })


# Fields a profile gained after share links began to carry profiles (``encode_profile``), each
# with its default: at that default a field is left out of the link (it reads back as that
# default), so a link for the same profile is written as before. (profile section, field,
# default, since)
ADDED_SINCE_PROFILE_LINKS = (
    ("compute", "per_step_s", 0.0),  # session 43: no time once a step beside the optimizer
    ("workload", "reduce_bytes_per_param", None),  # session 44: the framework's reduce bytes
    ("compute", "fetch_s", 0.0),  # session 47: a fixed data fetch before each forward
)


@dataclass(frozen=True)
class EqualTo:
    """A default of ``ADDED_SINCE_FINGERPRINTS`` that is another field of the same section."""

    field: str


# ... and after links began to carry preset fingerprints (``preset_fingerprint``): a preset
# whose numbers did not change keeps the fingerprint its older links carry
ADDED_SINCE_FINGERPRINTS = (
    ("workload", "pipeline_bubble_micro_steps", 0.0),
    ("hardware", "nic_servers_per_node", 1),
    ("compute", "attention_kernel", None),  # session 36: none recorded
    *ADDED_SINCE_PROFILE_LINKS,
    # session 45: bert-large and resnet50 state the fp16 all-reduce of their sources, the bytes
    # their DDP exchange had before (a reduction none stated was the wire's then)
    ("workload", "reduce_bytes_per_param", EqualTo("wire_bytes_per_param")),
)


def _at_default(compact: Profile, fields) -> dict[str, set[str]]:
    """``{section: {field, ...}}`` of ``fields`` (section, field, default: a value, or
    ``EqualTo`` another field of the section) whose value in ``compact`` is that default: what
    ``model_dump_json(exclude=...)`` leaves out. A field listed twice is left out at either."""
    out: dict[str, set[str]] = {}
    for section, field, default in fields:
        part = getattr(compact, section)
        if isinstance(default, EqualTo):
            default = getattr(part, default.field)
        if getattr(part, field) == default:
            out.setdefault(section, set()).add(field)
    return out


def encode_profile(profile: Profile) -> str:
    """Compact profile -> zlib -> base64url text (no padding)."""
    compact = compact_profile(profile)
    later = _at_default(compact, ADDED_SINCE_PROFILE_LINKS)
    text = compact.model_dump_json(exclude_defaults=False, exclude=later or None)
    packed = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


MAX_TEXT_CHARS = 1_000  # a name or note inside a profile
MAX_JSON_DEPTH = 32
MAX_WHOLE_NUMBER = 2**53  # larger whole numbers lose precision as floats and overflow int64 math


def _json_problem(value: Any, path: str = "", depth: int = 0) -> str | None:
    """Where parsed JSON holds something no profile may: a non-finite or overflowing number,
    an over-long text, or nesting deeper than a profile has (None when all is well)."""
    import math

    if depth > MAX_JSON_DEPTH:
        return f"{path or 'the profile'} is nested too deeply"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if abs(value) <= MAX_WHOLE_NUMBER else f"{path}: {_shown(value)} is too large"
    if isinstance(value, float):
        return None if math.isfinite(value) and abs(value) <= 1e30 else (
            f"{path}: {_shown(value)} is not a finite number of sensible size")
    if isinstance(value, str):
        return None if len(value) <= MAX_TEXT_CHARS else (
            f"{path}: a text of {len(value):,} characters (limit {MAX_TEXT_CHARS:,})")
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return f"{path}: unexpected value"
    for key, item in items:
        problem = _json_problem(item, f"{path}.{_shown(key)}" if path else _shown(key), depth + 1)
        if problem:
            return problem
    return None


def checked_profile(data: Any, what: str) -> Profile:
    """Parsed profile JSON (a link's blob or an uploaded file) -> Profile, refusing what a profile
    file may not hold: non-finite or overflowing numbers, over-long texts (ScalesimError naming
    the field), and anything that would not survive the page's cache round trip."""
    problem = _json_problem(data)
    if problem:
        raise ScalesimError(f"{what}: {problem}")
    profile = parse_profile(data, what)
    try:
        Profile.model_validate_json(profile.model_dump_json())
    except ValidationError as exc:
        raise ScalesimError(f"{what}: {error_text(exc.errors()[0])}") from None
    return profile


def decode_profile(blob: str) -> Profile:
    """The inverse of ``encode_profile``; any problem raises ScalesimError (one line)."""
    if len(blob) > MAX_PROFILE_BLOB_CHARS:
        raise ScalesimError(f"{PROFILE_IN_LINK} is too long ({len(blob)} characters, "
                            f"limit {MAX_PROFILE_BLOB_CHARS})")
    try:
        packed = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
    except (binascii.Error, ValueError):
        raise ScalesimError(f"{PROFILE_IN_LINK} is not valid base64url text") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, MAX_PROFILE_JSON_BYTES)
    except zlib.error:
        raise ScalesimError(f"{PROFILE_IN_LINK} is damaged (not zlib data)") from None
    if inflater.unconsumed_tail:
        raise ScalesimError(f"{PROFILE_IN_LINK} is damaged or larger than "
                            f"{MAX_PROFILE_JSON_BYTES} bytes")
    if not inflater.eof:  # the compressed stream stops before its end
        raise ScalesimError(f"{PROFILE_IN_LINK} ends early: {CUT_SHORT}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScalesimError(f"{PROFILE_IN_LINK} is not valid JSON") from None
    data = parse_json_text(text, PROFILE_IN_LINK)  # a repeated key refused, too
    return checked_profile(data, PROFILE_IN_LINK)


# ---------------------------------------------------------------- query string

def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return exact(value)  # '100', '20000', '0.25', '1.5e-06': exact, as a person writes it
    return str(value)


# The defaults a v2 link leaves out: frozen here, so a later change of AppState's defaults does
# not change what a v2 link shows (that would need a v3 link).
V2_DEFAULTS: dict[str, Any] = {
    "src": "preset", "hw": "a2-highgpu-8g", "wl": "bert-large", "dmax": 16, "grid": "pow2",
    "dlist": "", "dpn": None, "mode": "weak", "mb": None, "gb": None, "acc": 1, "ovl": True,
    "bkt": 25.0, "strat": "ddp", "algo": "auto", "lw": None, "cv": None, "slow": None,
    "sf": 1.0, "intra": "profile", "ibw": None, "ilat": None, "inter": "profile", "nics": 8,
    "gbit": 400.0, "ebw": None, "elat": None, "cbs": None, "emin": None, "train": None,
    "price": None, "focus": None, "b": "best", "tab": "curve", "dl": None, "bud": None,
}
# The defaults of the controls v3 to v18 added, frozen at the version that added each (ak: ''
# from v13, where a v6-v12 link's fused-vendor, then the default, opens as ''). A link leaves a
# control out at its frozen default (``encode_query``) and is read back with the same one
# (``decode_query``), not with AppState's: a later change of an AppState default then changes
# no link made before it (the new default differs from the frozen one, so links write it).
LATER_DEFAULTS: dict[str, Any] = {
    "tp": 1, "pp": 1, "sched": "auto", "vs": 1, "rec": "auto", "sp": False,  # v3
    "rs": "whole-forward", "gs": "every-micro-step", "ak": "", "tpo": False,  # v4-v7
    "sg": None, "zfw": "fsdp", "pr": "bf16", "p2p": True, "cp": 1, "seq": None,  # v9-v16
    "mm": 0.0, "gmax": 1024,  # v17
    "glay": "auto",  # v18 (an older link opens as its Goal tab was: ``opened_before``)
}
LINK_DEFAULTS: dict[str, Any] = {**V2_DEFAULTS, **LATER_DEFAULTS}  # every control's


def opened_before(name: str, state: AppState, profile: Profile) -> Any:
    """The value a link older than the version that added control ``name`` opens it at: its
    frozen default, but for goal's layout choice (glay, v18) what the Goal tab did before it,
    the sidebar's Layout kept: 'given' where auto would search layouts (a transformer workload
    whose Layout sets no split), else auto, which there keeps it too (the same answer). So an
    old link's Goal tab shows what its sender saw, and a state at auto that shows the same is
    still written at the older version (``link_version``)."""
    if name != "glay":
        return LINK_DEFAULTS[name]
    from .plan import goal_layout_mode, layout_of_state

    auto = state.model_copy(update={"glay": "auto"})
    try:
        split = layout_of_state(auto)
    except ScalesimError:  # a split no scenario takes: no Goal tab to open
        return "given"
    return "given" if goal_layout_mode(auto, profile, Scenario(layout=split)) == "search" else "auto"


def _meant(state: AppState) -> AppState:
    """``state`` as its link says it: the ZeRO framework left at its default under DDP, where
    the control is off and changes nothing (so it never makes a link v10)."""
    return state.model_copy(update={"zfw": "fsdp"}) if state.strat == "ddp" else state


def link_version(state: AppState, profile: Profile | None = None) -> int:
    """The least link version that shows ``state`` (on ``profile``; None: its presets'): the
    newest whose added keys (``keys_added_in``: set away from what an older link opens them
    at, ``opened_before``), values (``values_added_in``: op-sac
    v8, the fused vendor kernel asked v13) or scenario B choices (``b_added_in``) it uses; else
    3 when it uses what v3 added (a model split, a transformer workload preset, the Layouts tab,
    scenario B 'split the model'); else 2, so a link opens in every scalesim that can show it
    the same."""
    state = _meant(state)
    profile = profile or preset_profile(state)
    for version in range(LINK_VERSION, MODEL_SPLIT_SINCE, -1):
        if (any(getattr(state, n) != opened_before(n, state, profile)
                for n in keys_added_in(version))
                or any(getattr(state, n) in values
                       for n, values in values_added_in(version).items())
                or state.b in b_added_in(version)):
            return version
    v3 = (any(getattr(state, n) != LINK_DEFAULTS[n] for n in LAYOUT_FIELDS)
          or state.wl not in presets.WORKLOADS or state.tab == "layouts"
          or state.b in b_added_in(MODEL_SPLIT_SINCE))
    return 3 if v3 else 2


def encode_query(state: AppState, profile: Profile) -> dict[str, str]:
    """The share link's query parameters (v2): only the controls that differ from the defaults
    (the v2 table, then the profile's own values), presets by name; an uploaded profile's
    fitted parameters and caveats as a compact blob."""
    state = _meant(state)
    version = link_version(state, profile)
    params = {"v": str(version), CHECK_KEY: ""}  # the checksum's place: after v
    brought = profile_defaults(profile)
    for name in FIELDS:
        if name in LINK_KEY_ROWS and LINK_KEY_ROWS[name].link_since > version:
            continue  # the version opens it as the state has it (``opened_before``)
        value = getattr(state, name)
        default = brought.get(name, LINK_DEFAULTS[name])
        if value != default:
            params[name] = _to_text(value)
    if state.src == "custom":
        params["prof"] = encode_profile(profile)
    else:
        params["ph"] = preset_fingerprint(profile)
    params[CHECK_KEY] = link_checksum(params)
    return params


def link_checksum(params: Mapping[str, str]) -> str:
    """8 hex digits over what a link says (its version, controls, preset fingerprint or
    profile, headline figure and share date: ``CHECKED_KEYS``), sorted by key: a value cut that
    still parses ('gbit=10' of 'gbit=100'), dropped or changed gives others. Keys the decoder
    ignores are left out. Written by ``encode_query``, ``with_figure`` and ``share_query``,
    checked by ``link_integrity``."""
    import hashlib

    said = sorted((k, v) for k, v in params.items() if k in CHECKED_KEYS)
    return hashlib.sha256(urlencode(said).encode("utf-8")).hexdigest()[:8]


def query_chars(params: Mapping[str, str]) -> int:
    """Characters of a query of ``params`` as ``read_link`` counts them against
    ``MAX_QUERY_CHARS``: each key and value, and an '=' and an '&' each."""
    return sum(len(k) + len(v) + 2 for k, v in params.items())


def link_limit_words(params: Mapping[str, str]) -> str | None:
    """Why a share link of ``params`` would not open the what-if it was made of, in words for
    its sender, or None: a profile blob or a whole query past what ``read_link`` reads
    (``MAX_PROFILE_BLOB_CHARS``, ``MAX_QUERY_CHARS``; an uploaded profile with many references
    or notes compresses past them), which the receiver would open as the preset profile or
    the defaults."""
    blob = params.get("prof", "")
    total = query_chars(params)
    if len(blob) > MAX_PROFILE_BLOB_CHARS:
        what = (f"its profile is {len(blob):,} characters, over the {MAX_PROFILE_BLOB_CHARS:,} a "
                "link may carry: it would open with the preset profile")
    elif total > MAX_QUERY_CHARS:
        what = (f"it is {total:,} characters, over the {MAX_QUERY_CHARS:,} a link may hold: it "
                "would open with the defaults")
    else:
        return None
    return (f"This link will not open this what-if: {what}. Send the profile file with it "
            "(the receiver uploads it), or upload a profile with fewer notes and references")


def with_figure(params: Mapping[str, str], figure: str | None) -> dict[str, str]:
    """``params`` (``encode_query``) with the sender's headline figure (``figure``,
    ``sent_figure.figure_text``) right after the checksum as ``HEADLINE_KEY``, the checksum
    made again over it too, so that a figure edited or dropped on its way fails it; None: the
    link as ``encode_query`` wrote it (a what-if the model cannot predict has no figure)."""
    if figure is None:
        return dict(params)
    rest = {k: v for k, v in params.items() if k not in ("v", CHECK_KEY)}
    out = {"v": params["v"], CHECK_KEY: "", HEADLINE_KEY: figure, **rest}
    out[CHECK_KEY] = link_checksum(out)
    return out


class Integrity(Enum):
    """What a link's checksum (``CHECK_KEY``) says of it (``link_integrity``)."""

    NONE = "no checksum"  # typed by hand, made before the checksum, or cut
    WHOLE = "whole"  # it matches all the link says, its headline figure and date included
    # a share link of session 47 or older: its what-if (and figure) whole, its date unchecked
    DATE_OUTSIDE = "date outside"
    # a session 46 link: its what-if whole, its figure and date unchecked
    FIGURE_OUTSIDE = "figure outside"
    ALTERED = "altered"  # a value was changed or dropped after the link was made


def link_integrity(flat: Mapping[str, str]) -> Integrity:
    """What ``flat`` (a link's keys, one string each) holds against its checksum; the one place
    a checksum is checked. A checksum in capitals compares as written (8 hex digits either
    way). Until session 47 the date was written outside the checksum, and session 46 wrote the
    figure outside it too: such a link matches without them."""
    check = flat.get(CHECK_KEY)
    if check is None:
        return Integrity.NONE
    check = check.lower()
    if check == link_checksum(flat):
        return Integrity.WHOLE
    undated = {k: v for k, v in flat.items() if k != SHARED_DATE_KEY}
    if SHARED_DATE_KEY in flat and check == link_checksum(undated):
        return Integrity.DATE_OUTSIDE
    if HEADLINE_KEY in flat and check == link_checksum(
            {k: v for k, v in undated.items() if k != HEADLINE_KEY}):
        return Integrity.FIGURE_OUTSIDE
    return Integrity.ALTERED


def _fingerprint_cut(text: str) -> str:
    """A caveat's text as the fingerprint hashes it: frozen at the cut links used until session
    41 (the first MAX_CAVEAT_CHARS - 3 characters and '...'), whatever ``_cut`` shows now."""
    return text if len(text) <= MAX_CAVEAT_CHARS else text[:MAX_CAVEAT_CHARS - 3] + "..."


def preset_fingerprint(profile: Profile) -> str:
    """8 hex digits naming the preset profile's numbers: a receiver whose presets differ (another
    scalesim version) is told its numbers may differ from the sender's."""
    import hashlib

    compact = compact_profile(profile)
    # the caveats' text as fingerprints have always hashed it (``_fingerprint_cut``): how the app
    # shows a long caveat is no number, and must not tell older links their numbers changed
    compact = compact.model_copy(update={
        "links": [link.model_copy(update={
            "note": "" if link.measured else _fingerprint_cut(full.note),
            "numbers_from": _fingerprint_cut(full.numbers_from)})
            for link, full in zip(compact.links, profile.links, strict=True)],
        "notes": [_fingerprint_cut(n) for n in profile.notes[:MAX_CAVEATS]],
    })
    # fields added since links carried fingerprints, at their default: left out, so a preset
    # whose numbers did not change keeps the fingerprint its older links carry
    later = _at_default(compact, ADDED_SINCE_FINGERPRINTS)
    text = compact.model_dump_json(exclude=later or None)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def query_string(params: Mapping[str, str]) -> str:
    return urlencode(params)


def _first(value: Any) -> str:
    """A query value as one string (a repeated key keeps its last value, like st.query_params)."""
    if isinstance(value, list | tuple):
        value = value[-1] if value else ""
    return str(value)


def repeated_keys(params: Mapping[str, Any]) -> list[str]:
    """One line per key a link gives twice or more with different values (a hand edit, two links
    pasted together): which value is used (the last, ``_first``)."""
    out = []
    for key, value in params.items():
        if isinstance(value, list | tuple) and len({str(v) for v in value}) > 1:
            shown = ", ".join(f"'{_shown(v, 20)}'" for v in value[:4])
            out.append(f"the link gives '{_shown(key, 20)}' {len(value)} values ({shown}); "
                       f"using the last, '{_shown(_first(value), 20)}'")
    return out


def _shown(value: Any, chars: int = 40) -> str:
    """A value from a link (or a profile) to quote in a message, as given: its first ``chars``
    characters, control characters escaped (``errors.printable``: a line break does not split
    the box's line). The page escapes Markdown where it shows the message
    (``markdown_text.escape_markdown``), so a '/' or '*' is shown, not replaced by '?'."""
    return printable(str(value)[:chars])


def _validated_fields(raw: dict[str, Any], messages: list[str]) -> dict[str, Any]:
    """Validate control values; drop each broken one (with a message) and keep the rest."""
    values = dict(raw)
    for _ in range(len(FIELDS) + 1):
        try:
            AppState.model_validate(values)
            return values
        except ValidationError as exc:
            bad = set()
            for err in exc.errors():
                name = str(err["loc"][0]) if err.get("loc") else ""
                if name in values and name not in bad:
                    bad.add(name)
                    shown = _shown(values[name])
                    messages.append(f"'{name}={shown}' is not valid ({error_text(err, AppState)}); "
                                    "using the default")
            if not bad:  # a model-level error: nothing to blame, give up on the controls
                messages.append("the link's controls do not fit together; using the defaults")
                return {}
            for name in bad:
                values.pop(name)
    return {}


def shared_date(params: Mapping[str, Any], today: datetime.date | None = None
                ) -> SharedDate | None:
    """The date (YYYY-MM-DD) a share link says it was made and whether its checksum disowns it
    (``SharedDate.doubted``: a checksum that leaves the date out, as before session 48, or
    fails); None where the link has none, or one that is no day or is later than ``today``
    (UTC; ``link_date.date_problem``: ``read_link`` says why)."""
    value = params.get(SHARED_DATE_KEY)
    text = _first(value) if value is not None else ""
    if date_problem(text, today or today_utc()) is not None:
        return None
    flat = {str(k): _first(v) for k, v in params.items() if str(k) not in IGNORED_KEYS}
    return SharedDate(text, link_integrity(flat) not in (Integrity.WHOLE, Integrity.NONE))


def share_query(params: Mapping[str, str], date: str) -> dict[str, str]:
    """The share link's parameters: ``params`` (``encode_query``, ``with_figure``: the address
    bar's) dated ``date`` (YYYY-MM-DD) right after the version, so that the date opens the link
    and the fingerprint or profile ends it: a link cut anywhere between them keeps its date and
    loses its end (``cut_before_fingerprint``). The checksum is made again over the date
    (session 48), so a date edited on its way fails it; a link without one stays without."""
    out = {"v": params["v"], SHARED_DATE_KEY: date,
           **{k: v for k, v in params.items() if k != "v"}}
    if CHECK_KEY in out:
        out[CHECK_KEY] = link_checksum(out)
    return out


MAX_CUT_CONTROLS = 4  # controls a cut link may have lost, named; more: the first and last


def written_controls(version: int) -> tuple[str, ...]:
    """The controls a link of ``version`` may hold, in the order ``encode_query`` writes them
    (a later version's keys are never written: ``link_since``)."""
    return tuple(k for k in FIELDS
                 if k not in LINK_KEY_ROWS or LINK_KEY_ROWS[k].link_since <= version)


def controls_after(arrived: list[str], version: int) -> tuple[str, ...] | None:
    """The controls a link of ``version`` writes after ``arrived`` (the controls it holds, in
    its order): what a cut after them may have lost; None where ``arrived`` are not in the
    writer's order (typed or edited by hand: the order proves nothing)."""
    order = written_controls(version)
    if any(k not in order for k in arrived):
        return None
    at = [order.index(k) for k in arrived]
    if any(b <= a for a, b in zip(at, at[1:], strict=False)):
        return None
    return order[at[-1] + 1:] if at else order


def _control_words(key: str) -> str:
    """A control a cut may have lost, as the sidebar names it ('Price per device-hour'), or
    its link key where no label names it ('b')."""
    return in_words(FIELD_LABELS[key], GPU_NOUNS) if key in FIELD_LABELS else f"'{key}'"


def _names(keys: tuple[str, ...]) -> str:
    """Controls as the sidebar names them: 'A', 'A and B', 'A, B and C'."""
    words = [_control_words(k) for k in keys]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def _lost_words(lost: tuple[str, ...], version: int) -> str:
    """What to check for the controls ``lost`` (a link of ``version``'s, in its order, from the
    one the cut is in on) a cut may have taken: each named (``MAX_CUT_CONTROLS`` at most), or
    how many, the first and the last."""
    if len(lost) <= MAX_CUT_CONTROLS:
        return f"check {_names(lost)} in the sidebar"
    return (f"compare the sidebar with the sender's for the {len(lost)} controls a v{version} "
            f"link writes from {_control_words(lost[0])} to {_control_words(lost[-1])}")


def _after_words(later: tuple[str, ...], version: int) -> str:
    """What to check for the controls ``later`` a link of ``version`` writes after the value
    a cut is in: none, each named (``MAX_CUT_CONTROLS`` at most), or how many, first to last."""
    if not later:
        return f"no control a v{version} link writes comes after it"
    if len(later) <= MAX_CUT_CONTROLS:
        return f"a v{version} link writes {_names(later)} after it, which may be lost: check them too"
    return (f"a v{version} link writes {len(later)} controls after it, {_control_words(later[0])} "
            f"to {_control_words(later[-1])}, which may be lost: compare the sidebar with the "
            "sender's")


def _end_key(flat: Mapping[str, str]) -> str:
    """The key that ends a link the app writes: its profile (``prof``) where it names an
    uploaded one, else its preset fingerprint (``ph``)."""
    return "prof" if flat.get("src") == "custom" else "ph"


END_WORDS = {"ph": "the preset fingerprint (ph)", "prof": "the profile (prof)"}
ENDS_SHARE_LINK = f"a share link ends with: {CUT_SHORT}"
BEFORE_WHOLE = "the values before it arrived whole"  # each ends at the '&' of the next
COMPARE_ALL = "a control after it may be lost: compare the sidebar with the sender's"
# what a cut inside the end key lost besides it (``cut_before_fingerprint``, ``read_link``)
ONLY_END_LOST = "only that key was lost, and the controls before it arrived whole"


def cut_before_fingerprint(flat: Mapping[str, str], version: int) -> tuple[str, str] | None:
    """A dated share link (``share_query``) of ``version`` that carries neither its preset
    fingerprint (``ph``) nor its profile (``prof``), one of which ends it, was cut short where
    the copy stopped: inside its last value ('cbs=40' of 'cbs=4000&ph=...') or, where that
    value is empty, inside its last key ('p' of 'pp=2', 'ph=...' or 'p2p=on'). (That key, a
    sentence saying what the cut may have lost, by the writer's order (``controls_after``):
    the values before it arrived whole; a value: it and the controls after it; a key: each
    key after the whole ones that starts with it, and the controls from the first of those
    on, or only the end key where no control does.) None where the link has no value after
    its date."""
    keys = list(flat)
    if not keys:
        return None
    last, value = keys[-1], flat[keys[-1]]
    end = _end_key(flat)
    after = controls_after(keys[:-1], version)
    starts = ([k for k in (*(FIELDS if after is None else after), end) if k.startswith(last)]
              if not value else [])
    if not starts or starts == [last]:
        return last, _cut_in_value(keys, value, version, end)
    head = f"the link ends at '{_shown(last, 20)}' without {END_WORDS[end]} {ENDS_SHARE_LINK}"
    if after is None:  # not the writer's order: what follows the cut is unknown
        return last, f"{head}, perhaps inside that key: {COMPARE_ALL}; {BEFORE_WHOLE}"
    controls = [k for k in starts if k != end]
    whose = " or ".join([*map(_control_words, controls), *([END_WORDS[end]] * (end in starts))])
    since = f"'{keys[-2]}'" if len(keys) > 1 else "its checksum"
    which = "the only key" if len(starts) == 1 else "the keys"
    where = (f"inside the key of {whose} ({which} a v{version} link writes after {since} "
             f"that start{'s' * (len(starts) == 1)} with '{_shown(last, 20)}')")
    if not controls:
        return last, f"{head}, {where}: {ONLY_END_LOST}"
    lost = _lost_words(after[after.index(controls[0]):], version)
    return last, f"{head}, {where}: {lost}; {BEFORE_WHOLE}"


def ends_with_own_end(flat: Mapping[str, str], version: int) -> bool:
    """Whether a link of ``version`` ends with the key that ends a link the app writes
    (``_end_key``: its fingerprint or profile) after controls in the writer's order
    (``controls_after``): a cut inside that key took nothing else."""
    keys = list(flat)
    return (bool(keys) and keys[-1] == _end_key(flat)
            and controls_after(keys[:-1], version) is not None)


def _cut_in_value(keys: list[str], value: str, version: int, end: str) -> str:
    """``cut_before_fingerprint``'s sentence for a link cut inside its last value (``keys``
    the link's, in its order): that control to check, and the controls a link of ``version``
    writes after it, lost with it where it had any (all of them where the keys are not in the
    writer's order)."""
    last = keys[-1]
    check = f": check {_control_words(last)} in the sidebar" if last in FIELDS else ""
    later = controls_after(keys, version)
    after = COMPARE_ALL if later is None else _after_words(later, version)
    return (f"the link ends at '{_shown(last, 20)}={_shown(value)}' without {END_WORDS[end]} "
            f"{ENDS_SHARE_LINK}, perhaps inside that value{check}; {after}; {BEFORE_WHOLE}")


BLANK_KEY = "a field with no name"  # a link's '&=x', in the unknown fields' list
# every key a link the app writes holds (a cut key is the start of one: ``_cut_key``)
_LINK_KEYS = SCENARIO_KEYS | {CHECK_KEY, SHARED_DATE_KEY, HEADLINE_KEY}


def decode_query(params: Mapping[str, Any]) -> tuple[AppState, Profile, list[str]]:
    """State, profile and messages (one line each) from a link's query parameters
    (``read_link`` without the sender's figure)."""
    state, profile, messages, _ = read_link(params)
    return state, profile, messages


def read_link(params: Mapping[str, Any], today: datetime.date | None = None
              ) -> tuple[AppState, Profile, list[str], SentFigure | None]:
    """State, profile and messages (one line each) from a link's query parameters, and the
    sender's headline figure (``HEADLINE_KEY``) where the checksum covers it and holds
    (``link_integrity``: a cut or edited link opens another what-if, whose numbers differ for
    that reason, said by its own message); None where the link shows the defaults instead.

    No parameters: the defaults, silently. A link of another version or over the size limits is
    ignored as a whole; otherwise each broken field falls back to its default alone. A link
    whose checksum (``CHECK_KEY``) does not match what it says, that holds nothing but its
    version, or that repeats a key with another value opens with a message saying so, and so
    does one whose date is no day or is later than ``today`` (UTC; ``link_date.date_problem``).
    """
    messages: list[str] = []
    flat = {str(k): _first(v) for k, v in params.items() if str(k) not in IGNORED_KEYS}
    if not flat:
        return default_state(), preset_profile(AppState()), messages, None
    escaped = [k for k in flat if k.startswith(HTML_ESCAPED_AMP)]
    if escaped:
        # an HTML page or email wrote each '&' as '&amp;' ('v=2&amp;ck=...'): the fields are
        # the link's own, read as the sender wrote them, and said so
        flat = {k.removeprefix(HTML_ESCAPED_AMP): v for k, v in flat.items()}
        messages.append(f"this link's '&' were written as '&amp;' (an HTML page or email); read "
                        f"as '&' ({len(escaped)} field{'s' if len(escaped) > 1 else ''})")
    total = query_chars(flat)
    if total > MAX_QUERY_CHARS:
        messages.append(f"the link is too long ({total} characters, limit {MAX_QUERY_CHARS}); "
                        "showing the defaults")
        return default_state(), preset_profile(AppState()), messages, None
    version = flat.pop("v", None)
    if version not in READ_VERSIONS:
        # the fact only: the app's box says what to do once (planner_page.link_problems)
        what = ("has no version" if version is None
                else f"has an empty version ('v='): {CUT_SHORT}" if version == ""
                else f"is in format v{_shown(version, 10)}")
        newer = version is not None and version.isdecimal() and int(version) > LINK_VERSION
        messages.append(f"this link {what}" + (", made by a newer scalesim" if newer else "")
                        + f"; this scalesim reads v1 to v{LINK_VERSION} links, so it shows the "
                        "defaults")
        return default_state(), preset_profile(AppState()), messages, None
    messages.extend(repeated_keys({k: v for k, v in params.items()
                                   if str(k) not in IGNORED_KEYS}))
    date = flat.pop(SHARED_DATE_KEY, None)  # read by shared_date()
    why = None if date is None else date_problem(date, today or today_utc())
    if why is not None:  # not the format: perhaps cut short; not a day or later: said why
        shown = f"the link's date '{SHARED_DATE_KEY}={_shown(date, 12)}' {why}"
        messages.append(f"{shown}: {CUT_SHORT}" if why == NOT_A_DATE else shown)
    integrity = link_integrity({**flat, "v": version} if date is None
                               else {**flat, "v": version, SHARED_DATE_KEY: date})
    altered = integrity is Integrity.ALTERED
    check = flat.pop(CHECK_KEY, None)
    figure = flat.pop(HEADLINE_KEY, None)
    sent = None if figure is None else parse_figure(figure, MAX_DEVICES)
    if isinstance(sent, str):
        messages.append(f"the link's headline figure '{HEADLINE_KEY}={_shown(figure, 20)}' is "
                        f"{sent}: ignored, so whether the model changed since the link was sent "
                        "cannot be told")
    if check is not None and (why := _hex_problem("checksum", CHECK_KEY, check)):
        messages.append(why)
    partial = _cut_key(flat) if (date is None and check is None) or len(flat) == 1 else None
    if partial is not None:  # 'v=2&c' of 'v=2&ck=...': cut inside a key, not an unknown field
        flat.pop(partial)
        if flat:
            messages.append(f"the link ends inside a key ('{_shown(partial, 20)}', with no "
                            f"value): {CUT_SHORT}")
    if not flat:  # every link the app makes holds a fingerprint or profile after these
        held = [n for n, k in (("its version", "v"), ("date", SHARED_DATE_KEY),
                               ("checksum", CHECK_KEY), ("headline figure", HEADLINE_KEY))
                if k in params]
        if partial is not None:
            held.append(f"the start of a key ('{_shown(partial, 20)}')")
        what = ", ".join(held[:-1]) + " and " + held[-1] if len(held) > 1 else held[0]
        messages.append(f"the link holds nothing but {what}: {CUT_SHORT}; showing the defaults")
        return default_state(), preset_profile(AppState()), messages, None
    # before a later version's keys are dropped: the link's own last key ('pr' of 'price')
    cut = (cut_before_fingerprint(flat, int(version)) if (date is not None or check is not None)
           and "ph" not in flat and "prof" not in flat else None)
    if cut is not None and _cut_key(flat) == cut[0]:  # the start of a key: the cut says it
        flat.pop(cut[0])
    end_last = ends_with_own_end(flat, int(version))  # before a later version's keys are dropped
    messages.extend(_ignore_later_keys(flat, int(version)))
    fingerprint = flat.pop("ph", None)
    blob = flat.pop("prof", None)
    unknown = sorted(k for k in flat if k not in AppState.model_fields)
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""  # never a part as all
        messages.append("ignored unknown link fields: "  # a blank key ('&=x') said as one
                        f"{', '.join(_shown(k, 20) or BLANK_KEY for k in unknown[:5])}{more}")
    raw: dict[str, Any] = {}
    for name in FIELDS:
        if name not in flat:
            continue
        text = flat[name]
        if len(text) > MAX_VALUE_CHARS:
            messages.append(f"'{name}' is too long in the link; using the default")
            continue
        raw[name] = None if (text == "" and name in NULLABLE) else text
    raw = {k: v for k, v in _validated_fields(raw, messages).items()}
    state = AppState.model_validate({**LINK_DEFAULTS, **raw})  # what the link left out: frozen
    if cut is not None:  # after a refusal of that value, if any: why it may be refused
        messages.append(cut[1])

    profile = None
    if blob:
        try:
            profile = decode_profile(blob)
        except ScalesimError as exc:
            messages.append(f"{exc}; using the preset profile instead")
    if state.src == "preset" or profile is None:
        preset = preset_profile(state)
        if profile is not None and profile != compact_profile(preset):
            messages.append(f"the link's profile numbers differ from this version's presets "
                            f"'{state.hw}' + '{state.wl}'; showing the link's numbers")
            state = state.model_copy(update={"src": "custom"})
        else:
            if state.src == "custom":
                if not blob:  # a damaged one was said above (using the preset profile instead)
                    messages.append("the link names an uploaded profile but does not carry "
                                    "it; showing the presets")
                state = state.model_copy(update={"src": "preset"})
            profile = preset
            if fingerprint is not None and (why := _hex_problem("preset fingerprint", "ph",
                                                                fingerprint)):
                cut_in_it = end_last and why.endswith(CUT_SHORT)  # the cut took nothing else
                messages.append(why + (f", inside that key, the last a link holds: {ONLY_END_LOST}"
                                       if cut_in_it else ""))
            if (fingerprint is not None and re.fullmatch(r"[0-9a-fA-F]{8}", fingerprint)
                    and fingerprint.lower() != preset_fingerprint(preset)):
                messages.append(f"the sender's presets '{state.hw}' + '{state.wl}' had other "
                                "numbers (another scalesim version): these predictions may "
                                "differ from the sender's")
    # Controls the link did not give take the profile's values, as a fresh choice would.
    missing = {k: v for k, v in profile_defaults(profile, messages).items() if k not in raw}
    if missing:
        state = state.model_copy(update=missing)
    if int(version) < LINK_KEY_ROWS["glay"].link_since:  # as its Goal tab showed it
        state = state.model_copy(update={"glay": opened_before("glay", state, profile)})
    if state.focus is not None:  # the focus control offers the plotted counts only
        from .plan import count_unit, device_counts

        g, unit = count_unit(state, profile)
        counts, _ = device_counts(state, g, allocation=unit)
        if state.focus not in counts:
            messages.append(f"'focus={state.focus}' is not one of the device counts plotted "
                            f"({count_list(counts, 8)}); "
                            "using auto (the knee)")
            state = state.model_copy(update={"focus": None})
    messages.extend(integrity_notes(check, altered, fingerprint is not None or blob is not None,
                                    messages, int(version)))
    vouched = integrity in (Integrity.WHOLE, Integrity.DATE_OUTSIDE)  # the figure in the checksum
    return state, profile, messages, sent if isinstance(sent, SentFigure) and vouched else None


def _ignore_later_keys(flat: dict[str, str], version: int) -> list[str]:
    """Drop from ``flat`` (a link of ``version``) each key, value and scenario B choice a later
    version added, in the order they arrived; one message per version for those that were set
    away from their defaults ('ignored gs: a v4 link has no gradient sync choice (...)')."""
    said = []
    if version < MODEL_SPLIT_SINCE:  # before the model split: every layout key, data parallel
        old = [n for n in LAYOUT_FIELDS if n in flat and flat.pop(n) not in (
            "", _to_text(LINK_DEFAULTS[n]))]
        if old:
            said.append(f"ignored {', '.join(old)}: a v{version} link has no {MODEL_SPLIT}")
    if version < 13 and flat.get("ak") == VENDOR_KERNEL:  # it meant the default then
        flat.pop("ak")
    for since in range(version + 1, LINK_VERSION + 1):
        keys = keys_added_in(since)
        old = [n for n in keys if n in flat and flat.pop(n) not in (
            "", _to_text(LINK_DEFAULTS[n]))]
        if old:  # each row's words once (v3's keys share theirs)
            before = dict.fromkeys(LINK_KEY_ROWS[n].link_before for n in old)
            said.append(f"ignored {', '.join(old)}: a v{version} link has no "
                        f"{' nor '.join(before)}")
        if since == 8 and (old := [n for n, vs in V8_VALUES.items() if flat.get(n) in vs]):
            for n in old:
                flat.pop(n)
            said.append(f"ignored {', '.join(old)}: a v{version} link has no {OP_SAC_BEFORE}")
    # a scenario B choice a later version added (split_model: every version has opened it)
    if B_SINCE.get(flat.get("b", ""), 0) > max(version, MODEL_SPLIT_SINCE):
        said.append(f"ignored b={flat.pop('b')}: a v{version} link has no such scenario B "
                    "(it opens with the best remedy)")
    return said


def _hex_problem(what: str, key: str, value: str) -> str | None:
    """Why a link's ``key`` (its checksum, its preset fingerprint: 8 hex digits in small
    letters) is not what the app writes: in capitals, changed on its way (``CASE_CHANGED``), or
    not 8 hex digits, cut short (``CUT_SHORT``); None where it is."""
    if re.fullmatch(r"[0-9a-f]{8}", value):
        return None
    shown = f"the link's {what} '{key}={_shown(value, 12)}'"
    if re.fullmatch(r"[0-9a-fA-F]{8}", value):
        return f"{shown} has capital letters, which the app never writes: {CASE_CHANGED}"
    return f"{shown} is not 8 hex digits: {CUT_SHORT}"


def _cut_key(flat: Mapping[str, str]) -> str | None:
    """The link's last key where a copy stopped inside it ('c' of 'v=2&ck=...', 'a' of
    'v=2&at=...'): no value, no key a link holds but the start of one; None otherwise."""
    last = next(reversed(list(flat)), None)
    if last is None or flat[last] != "" or last in _LINK_KEYS:
        return None
    return last if any(k.startswith(last) for k in _LINK_KEYS) else None


def integrity_notes(check: str | None, altered: bool, made_by_app: bool,
                    said: list[str], version: int) -> list[str]:
    """What a link's checksum (``CHECK_KEY``) says beyond ``said``, the link's other messages:
    that its values are not the ones it was made with (unless a cut or a damaged profile was
    said already); for a link of ``version`` CHECKSUM_SINCE or later without one (every such
    link was written with it: cut or edited, typed by hand at best), that it looks cut; or, for
    a link an older scalesim made (a fingerprint or profile, no checksum), that a change in it
    cannot be told."""
    if check is None and version >= CHECKSUM_SINCE:
        return [] if any(CUT_SHORT in m for m in said) else [NO_CHECKSUM_SINCE]
    if altered and not any(CUT_SHORT in m or CASE_CHANGED in m or m.startswith(PROFILE_IN_LINK)
                           for m in said):
        return [f"the link's values do not match its checksum '{CHECK_KEY}={_shown(check, 12)}': "
                "a value was changed or dropped after the link was made; the values it holds are "
                "used and a control it lost shows its default: compare the sidebar with the "
                "sender's"]
    if check is None and made_by_app:
        return [NO_CHECKSUM]
    return []
