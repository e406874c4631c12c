"""The parallel layout of a training job, and where its ranks sit.

One schema (``ParallelLayout``: dp x tp x pp x cp, ZeRO stage, micro-batch, global batch,
pipeline schedule, virtual stages, recompute and its style, sequence parallelism, tensor-parallel
overlap, pipeline-send overlap; the recompute style's and the overlaps' fields are shared with
``schemas.ScenarioLayout``) and one placement rule used by every part of scalesim that splits a
model (validate, plan, and later predict/sweep/app).

Placement follows Megatron-LM (``RankGenerator`` order "tp-cp-ep-dp-pp") and torchtitan (device
mesh ["pp", "dp", "cp", "tp"]): tensor-parallel ranks are innermost (consecutive ranks, inside one
server), then context-parallel, then data-parallel, and pipeline stages outermost. A group of
``size`` ranks whose members are ``stride`` ranks apart has ``per_node = clip(g // stride, 1,
size)`` members in each server of ``g`` devices and spans ``ceil(size / per_node)`` servers, so
its traffic crosses the inter-server link exactly when it spans more than one server.
docs/model.md §12.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.errors import (
    KNOB,
    Refusal,
    ScalesimError,
    as_literal,
    controls_named_of,
    knobs_of,
    template_fields,
    template_of,
)

Schedule = Literal["none", "gpipe", "1f1b", "interleaved", "zb"]
Recompute = Literal["none", "selective", "full"]
RecomputeStyle = Literal["whole-forward", "early-stop", "op-sac"]
RECOMPUTE_STYLES: tuple[str, ...] = get_args(RecomputeStyle)
DEFAULT_RECOMPUTE_STYLE = "whole-forward"
RECOMPUTE_STYLE_HELP = (
    "how the framework reruns the forward: 'whole-forward' (default; Megatron-LM's own "
    "checkpoint, torch.utils.checkpoint with use_reentrant=True, any torch < 2.1), "
    "'early-stop' (ignored unless recompute is full: PyTorch >= 2.1 non-reentrant checkpoint, "
    "use_reentrant=False, FSDP checkpoint_wrapper NO_REENTRANT, torchtitan, llm-foundry; the "
    "MLP down projection and the residual add after it are not rerun, docs/model.md §13) or "
    "'op-sac' (ignored unless recompute is selective: torchtitan's per-op selective "
    "checkpoint, selective_ac_option 'op', which saves the matmul, attention and "
    "reduce-scatter outputs but every second matmul and reruns the rest, docs/model.md §11)")
# Each style in a few words, where a choice is shown (the app's control, plan's first lines)
RECOMPUTE_STYLE_LABELS = {
    "whole-forward": "whole forward rerun (Megatron-LM, reentrant checkpoint, torch < 2.1)",
    "early-stop": "early stop (PyTorch >= 2.1 non-reentrant checkpoint: FSDP checkpoint_wrapper, "
                  "torchtitan; the MLP down projection is not rerun)",
    "op-sac": "per-op selective checkpoint (torchtitan selective_ac_option 'op': every second "
              "matmul, norms and activations rerun; attention output saved)",
}
SCHEDULES = {"none": 0, "gpipe": 1, "1f1b": 2, "interleaved": 3, "zb": 4}
# Each schedule as a reader names it, in a title's few words (a layout's title 'dp 4 x tp 8 x pp
# 2 (zero bubble)', the predicted layout's line, the app's Layouts table, diagnose's pipeline
# note): ``schedule_words``
SCHEDULE_SHORT = {"none": "none", "gpipe": "GPipe", "1f1b": "1F1B",
                  "interleaved": "interleaved 1F1B", "zb": "zero bubble"}
# ... and where a choice or a change names it (the app's control, the layout-change words), no
# pipeline said
SCHEDULE_WORDS = {**SCHEDULE_SHORT, "none": "none (no pipeline)"}
NO_PIPELINE, GPIPE, ONE_F_ONE_B, INTERLEAVED, ZERO_BUBBLE = range(5)
LAYOUT_VERSION = "scalesim-layout/1"
# Sequence parallelism splits the tensor-parallel group's activations: the refusal of predict
# and sweep where no row has tp > 1
SEQUENCE_PARALLEL_NEEDS_TP = (f"{KNOB.sequence_parallel} needs {KNOB.tp} 2 or more (it splits "
                              "the tensor-parallel group's activations)")  # a template
# The framework overlaps the tensor-parallel collectives with the matmuls (docs/model.md §14):
# one description for the layout's field, the scenario's and the --tp-overlap flag of predict,
# sweep, decide, goal and plan; and the refusal of predict and sweep where no row has tp > 1
TP_OVERLAP_HELP = (
    "the framework overlaps the tensor-parallel collectives with the matmuls: Transformer "
    "Engine userbuffers (Megatron-LM --tp-comm-overlap, NeMo / Megatron-Bridge tp_comm_overlap), "
    "torchtitan's async TP (enable_async_tensor_parallel); they hide behind the layer's weight "
    "matmuls but for what those cannot cover and the contention share (docs/model.md §14). "
    "Applies where tp > 1 (default off: every tensor-parallel collective exposed)")
TP_OVERLAP_NEEDS_TP = (f"{KNOB.tp_overlap} needs {KNOB.tp} 2 or more (it overlaps the "
                       "tensor-parallel group's collectives with the matmuls)")  # a template
# overlap off (Scenario.overlap) exposes every collective, the tensor-parallel ones too: the
# model drops tp_overlap there (docs/model.md §16): why the commands say it is ignored
TP_OVERLAP_UNDER_NO_OVERLAP = ("overlap is off, so every collective, the tensor-parallel ones "
                               "too, waits for its compute (docs/model.md §16)")
# The interleaved schedule's steady-state pipeline sends overlap the next chunk's compute
# (Megatron-Core's overlap_p2p_comm, docs/model.md §15): one description for the layout's field,
# the scenario's and the --p2p-overlap flag of predict, sweep, decide, goal and plan; the flag's
# words (on, off) and the refusal where no row runs the interleaved schedule
P2P_OVERLAP_HELP = (
    "the interleaved schedule's steady-state pipeline sends overlap the next model chunk's "
    "compute: Megatron-Core's overlap_p2p_comm (Megatron-LM's default unless "
    "--no-overlap-p2p-communication; NeMo and Megatron-Bridge set it for pp > 1 with virtual "
    "stages), each send charged only for what outlasts one chunk's forward and the contention "
    "share (docs/model.md §15). 'off': every send blocks (older Megatron-LM, "
    "--no-overlap-p2p-communication, a framework without it). Applies where the schedule is "
    "interleaved (pp > 1, virtual_stages > 1; the other schedules' sends block either way); "
    "default on")
P2P_OVERLAP_WORDS = {True: "on", False: "off"}
P2P_OVERLAP_NEEDS_INTERLEAVED = (  # a template (``knob_refusal``)
    f"{KNOB.p2p_overlap} off needs the interleaved schedule ({KNOB.pp} 2 or more with "
    f"{KNOB.virtual_stages} 2 or more): the other schedules' pipeline sends block either way "
    "(docs/model.md §15)")


# Context parallelism (docs/model.md §12, §14): one description for the scenario's field and the
# --cp flag of predict, sweep, decide and goal (plan's --cp is a list of degrees to try)
CP_HELP = (
    "context-parallel degree: the ranks that split each sequence (Megatron-Core / Transformer "
    "Engine ring attention, torchtitan's cp), placed between tp and dp (tp innermost); "
    "devices = dp x tp x pp x cp, and 2 x cp must divide the sequence length (load-balanced "
    "chunks). A transformer workload only (default 1)")


# Hybrid sharding (docs/model.md §16): the ZeRO states sharded over a shard group of s ranks (the
# s innermost of dp x cp), replicated across the dp x cp / s groups (FSDP HYBRID_SHARD,
# torchtitan data_parallel_shard_degree x data_parallel_replicate_degree). One description for
# the layout's field, the scenario's and the --shard-group flag.
SHARD_GROUP_HELP = (
    "hybrid sharding (HSDP): the ranks that shard the ZeRO states (the innermost of the dp x cp "
    "group; PyTorch FSDP HYBRID_SHARD / _HYBRID_SHARD_ZERO2, FSDP2 and torchtitan "
    "data_parallel_shard_degree x cp, Megatron-Core --num-distributed-optimizer-instances), "
    "replicated across dp x cp / shard_group groups: a reduce-scatter inside the group, then an "
    "all-reduce of the shard across the replicas (docs/model.md §16). A divisor of dp x cp, 2 "
    "or more, with a ZeRO strategy (zero1..zero3) of the fsdp framework; at dp x cp or above "
    "(default): all of dp x cp, full sharding. A parameter-count workload (data parallel: "
    "dp = the devices) takes it too")


# A layout's ZeRO stage (0-3) as a scenario's strategy names it (``Scenario.strategy``)
ZERO_STRATEGIES = ("ddp", "zero1", "zero2", "zero3")


def knob_refusal(template: str, knobs=(), cli: str | None = None) -> Refusal:
    """The refusal of ``template``, a line naming knobs by their controls (``errors.KNOB``'s
    '{field}'), as the CLI says it: each knob by its flag from the knob table
    (``bounds.flag_of``: '--tp-overlap needs --tp 2 or more'), the template kept so that the
    app says it in its control labels (``errors.in_words_of``). ``knobs``: as ``Refusal``'s.
    ``cli``: the CLI's line as a template where it says more than the app's (a schema field's
    check that the value broke, which a user of files can look up and a page's user cannot
    set); None: ``template``."""
    from scalesim.bounds import flag_of

    said = template if cli is None else cli
    return Refusal(said.format_map({f: flag_of(f) for f in template_fields(said)}),
                   knobs, template=template, cli_template=cli or "")


def knobs_said(value, said: dict[str, str]) -> Refusal:
    """``value`` (a ``Refusal``, a ``ScalesimError``) with each knob of ``said`` its template
    names written in ``said``'s words (its caller's: the sweep's '--pp-values' for a swept pp,
    ``bounds.values_flag``), those knobs added to its controls named; the other knobs kept as
    slots, said by their flags (``knob_refusal``) or as a --scenario file gave them
    (``cli.given_words``). ``value`` itself where it has no template."""
    template = template_of(value)
    if not template:
        return value

    def part(own: str) -> str:  # ``own`` with the knobs of ``said`` as literal words
        return "".join(as_literal(text) + ("" if field is None else as_literal(said[field])
                                           if field in said else "{" + field + "}")
                       for text, field, _, _ in string.Formatter().parse(own))

    cli = getattr(value, "cli_template", "")
    refusal = knob_refusal(part(template), knobs_of(value), cli=part(cli) if cli else None)
    named = [f for f in template_fields(cli or template) if f in said]
    return Refusal(str(refusal), refusal.knobs, (*controls_named_of(value), *named),
                   refusal.template, refusal.cli_template)


def knob_value_refusal(field: str, value: str, why: str, said: str | None = None) -> Refusal:
    """'<the knob> <value>: <why>' refusing ``value`` of knob ``field`` ('--precision fp8: no
    fp8 peak ...'): the knob named by its control (``knob_refusal``: the CLI's flag from the
    knob table, a template the app says in its label) where ``said`` is None, else as ``said``
    (the words the caller's user typed: the sweep's '--precision-values')."""
    rest = f" {value}: {why}"
    if said is not None:
        return Refusal(said + rest, (field,))
    return knob_refusal(getattr(KNOB, field) + as_literal(rest), (field,))


def deepspeed_refuses_pipeline(framework, zero, pp):
    """Whether DeepSpeed refuses ZeRO stage ``zero`` (0-3) with ``pp`` pipeline stages: it
    runs ZeRO-2/3 without pipeline parallelism only (``deepspeed/runtime/pipe/engine.py``,
    docs/model.md §16). Scalars (a scenario) or numpy arrays (a sweep's rows) alike."""
    return ((np.asarray(framework) == "deepspeed") & (np.asarray(zero) >= 2)
            & (np.asarray(pp) > 1))


def deepspeed_pipeline_error(strategy: str, pp: int) -> Refusal:
    """Why DeepSpeed cannot run ZeRO-2/3 (``strategy``) with ``pp`` pipeline stages
    (``deepspeed_refuses_pipeline``): the scenario refuses it and the sweep drops such rows in
    these words (the planner leaves them out)."""
    return knob_refusal(f"{KNOB.strategy} {strategy} with {KNOB.pp} {pp}: DeepSpeed refuses "
                        "ZeRO-2/3 with pipeline parallelism; use "
                        f"{KNOB.strategy} zero1, {KNOB.pp} 1 or {KNOB.zero_framework} fsdp",
                        ("strategy", "pp", "zero_framework"))


def split_words(dp: int | None, tp: int, pp: int, cp: int | None = None) -> str:
    """A layout's degrees as every report writes them, dp first: 'dp 2 x tp 4 x pp 2'; dp None:
    the model split alone, as the user asks it ('tp 4 x pp 2'); cp given: ' x cp 2' after."""
    return " x ".join(([f"dp {dp}"] if dp is not None else []) + [f"tp {tp}", f"pp {pp}"]
                      + ([f"cp {cp}"] if cp is not None else []))


def dp_ranks(dp, cp: bool = False) -> str:
    """The data-parallel degree where a refusal's template names it for a page (a template of
    ``knob_refusal``, whose CLI line keeps the notation 'dp 16'): '16 data-parallel ranks'
    ('24 or 40 ...': ``dp`` a text; ``cp``: dp x cp, '16 data-parallel x context-parallel
    ranks'); no control sets it (it is the devices over tp x pp x cp), so the line says what
    it is."""
    kind = "data-parallel x context-parallel" if cp else "data-parallel"
    return f"{dp} {kind} {'rank' if str(dp) == '1' else 'ranks'}"


def split_template(dp: int, tp: int, pp: int, cp: int = 1) -> str:
    """``split_words`` as a template (``knob_refusal``), for a refusal whose CLI line keeps the
    notation ('dp 2 x tp 8 x pp 1 x cp 1'): tp, pp and cp by their controls, a degree of 1 left
    out as the page's layout titles leave it (it splits nothing), dp as ``dp_ranks``, always
    said: '2 data-parallel ranks x {tp} 8'. A product ('{tp} 8 x {pp} 1 = 8') keeps its 1s:
    ``model_split_template``."""
    split = [f"{getattr(KNOB, knob)} {degree}"
             for knob, degree in (("tp", tp), ("pp", pp), ("cp", cp)) if degree > 1]
    return " x ".join([dp_ranks(dp), *split])


def model_split_template(tp: int, pp: int, cp: int | None = None) -> str:
    """A model replica's split as a template naming its controls with their values ('{tp} 1 x
    {pp} 3', '... x {cp} 3' where ``cp`` is given), each degree said, 1 too, where the line
    states their product ('{tp} 2 x {pp} 1 = 2') or its CLI line says 'tp x pp'
    (``layout_predict.split_devices``, ``counts_left_out.split_left_out``)."""
    return " x ".join([f"{KNOB.tp} {tp}", f"{KNOB.pp} {pp}"]
                      + ([f"{KNOB.cp} {cp}"] if cp is not None else []))


def schedule_words(schedule: str, virtual_stages: int = 1) -> str:
    """A pipeline's schedule (a ``SCHEDULES`` name) as a title writes it (``SCHEDULE_SHORT``),
    with its model chunks where the schedule interleaves them: 'zero bubble', '1F1B',
    'interleaved 1F1B, 4 virtual stages'."""
    return SCHEDULE_SHORT[schedule] + (f", {virtual_stages} virtual stages"
                                       if virtual_stages > 1 else "")


def replica_devices(tp, pp, cp=1):
    """Devices one model replica spans, tp x pp x cp (numpy, broadcasts): a device count runs
    the split only as a multiple of it, dp = devices / it (``ScenarioLayout.cp``; the ranks that
    hold one replica's shard each are dp x cp, ``predict.data_parallel_ranks``); virtual stages
    split no devices. Every part that counts a replica's devices uses this."""
    return tp * pp * cp


def model_split_words(dp: int | None, tp: int, pp: int, cp: int = 1) -> str:
    """``split_words`` of a layout that splits the model (tp x pp x cp > 1; ' x cp 2' where cp >
    1), '' for data parallelism alone (tp = pp = cp = 1), where a device count says it all:
    every sentence that names a layout only when there is a split to name uses this."""
    return (split_words(dp, tp, pp, cp if cp > 1 else None) if replica_devices(tp, pp, cp) > 1
            else "")


# The header of a column whose cells ``split_short`` writes (form "cell").
SPLIT_HEADER = "dp x tp x pp"


SPLIT_FORMS = ("cell", "compact", "tag")


def split_short(dp: int, tp: int, pp: int, form: str = "cell", cp: int | None = None) -> str:
    """A layout's degrees in few characters, dp first as ``split_words``: form "cell" '8 x 2 x 1'
    (a table cell under ``SPLIT_HEADER``: the app's and the HTML report's column), "compact"
    '8x2x1' (under ``SPLIT_HEADER`` in a text table whose columns split on spaces: predict's),
    "tag" 'dp8 tp2 pp1' (a chart label, where no header names them); ``cp`` given: the
    context-parallel degree after them ('8x2x1x4', under ``SPLIT_HEADER`` + ' x cp')."""
    if form not in SPLIT_FORMS:
        raise ValueError(f"form must be one of {', '.join(SPLIT_FORMS)}, not {form!r}")
    if form == "tag":
        return f"dp{dp} tp{tp} pp{pp}" + (f" cp{cp}" if cp is not None else "")
    return ("x" if form == "compact" else " x ").join(
        str(d) for d in (dp, tp, pp, *(() if cp is None else (cp,))))


def shard_group_needs_zero(shard_group: int) -> str:
    """The rule a shard group breaks under ddp, which shards no state: predict's refusal
    (``shard_group_refusal``) and a sweep's note of its ddp rows, which run without it."""
    return (f"shard group {shard_group} needs a ZeRO strategy (zero1, zero2, zero3): ddp "
            "replicates every state")


def shard_group_refusal(shard_group: int | None, strategy: str, framework: str = "fsdp") -> str:
    """Why a shard group cannot run with ``strategy`` ("ddp", "zero1".."zero3") under
    ``framework`` ("fsdp", "deepspeed"), in one line naming the values; '' when it can (None:
    full sharding, always)."""
    if shard_group is None:
        return ""
    if strategy == "ddp":
        return knob_refusal(f"{shard_group_needs_zero(shard_group)}; give {KNOB.strategy} "
                            f"zero1..zero3 or drop {KNOB.shard_group}", ("shard_group", "strategy"))
    if shard_group == 1:
        return knob_refusal(f"{KNOB.shard_group} 1 with {KNOB.strategy} {strategy} is plain "
                            f"replication (no state sharded): use {KNOB.strategy} ddp, or "
                            f"{KNOB.shard_group} 2 or more", ("shard_group",))
    if framework == "deepspeed":
        return knob_refusal(f"{KNOB.shard_group} {shard_group} with {KNOB.zero_framework} "
                            "deepspeed: hybrid sharding is modelled for FSDP and Megatron-Core "
                            "(DeepSpeed's MiCS / ZeRO++ hpZ are not); use "
                            f"{KNOB.zero_framework} fsdp or drop {KNOB.shard_group}",
                            ("shard_group", "zero_framework"))
    return ""


def hybrid_shard_groups(group: int, tp: int, devices_per_node: int) -> tuple[int, ...]:
    """The planner's hybrid shard groups of a dp x cp group of ``group`` ranks at stride ``tp``
    on servers of ``devices_per_node`` (``group_span``: ``per_node`` of its ranks in each of
    ``nodes`` servers), smallest first: where the group spans several servers and ``per_node``
    divides it, every s = k x ``per_node`` of whole servers below the group (1 <= k < nodes, k
    dividing ``nodes``, s >= 2), so no shard group straddles a server; () otherwise. Smaller
    groups inside one server are not offered: under §16's pricing they hold more state a device
    for at least as long on the NICs (docs/model.md §17). Full sharding (s = the group) is the
    planner's other row."""
    per_node, nodes = (int(v) for v in group_span(group, tp, devices_per_node))
    if nodes < 2 or group % per_node:
        return ()
    return tuple(k * per_node for k in range(1, nodes) if nodes % k == 0 and k * per_node >= 2)


def shard_group_problem(shard_group: int | None, dp: int, cp: int = 1) -> str:
    """'shard group 3 does not divide dp x cp 8 ...' where ``shard_group`` is less than the
    data-parallel group and does not divide it; '' where it does (None: full sharding). One
    at least as large as dp x cp shards over all of it (one group, full sharding), so a
    device sweep may start inside the shard group."""
    if shard_group is None or shard_group >= dp * cp or (dp * cp) % shard_group == 0:
        return ""
    group = f"dp {dp}" if cp == 1 else f"dp x cp {dp * cp}"  # no cp on the data-parallel path
    fix = as_literal(f"; give a divisor of it (e.g. {dp * cp}: full sharding)")
    # a template (``knob_refusal``): the page names its Shard group control and says dp (no
    # control) in words; the CLI keeps its line (its ``cli``)
    return knob_refusal(f"{KNOB.shard_group} {shard_group} does not divide the "
                        f"{dp_ranks(dp * cp, cp > 1)}{fix}", ("shard_group",),
                        cli=as_literal(f"shard group {shard_group} does not divide {group}") + fix)


def recompute_style_field():
    """The pydantic field of a layout's recompute style (``ParallelLayout``, ``ScenarioLayout``):
    one default and one description."""
    return Field(default=DEFAULT_RECOMPUTE_STYLE, description=RECOMPUTE_STYLE_HELP)


def tp_overlap_field():
    """The pydantic field of a layout's tensor-parallel overlap (``ParallelLayout``,
    ``ScenarioLayout``): one default and one description."""
    return Field(default=False, description=TP_OVERLAP_HELP)


def p2p_overlap_field():
    """The pydantic field of a layout's pipeline-send overlap (``ParallelLayout``,
    ``ScenarioLayout``): one default (on, Megatron-LM's) and one description."""
    return Field(default=True, description=P2P_OVERLAP_HELP)


def interleaves(schedule: str, pp: int, virtual_stages: int) -> bool:
    """Whether a layout runs the interleaved schedule with more than one model chunk a stage,
    the one schedule whose sends ``p2p_overlap`` hides (``LayoutInputs.p2p_overlap``, §15)."""
    return schedule == "interleaved" and pp > 1 and virtual_stages > 1


def schedule_needs_pp(schedule: str) -> Refusal:
    """The rule a pipeline schedule breaks at pp 1 (``layout_problems``, ``unused_settings``)."""
    return knob_refusal(f"{KNOB.schedule} {schedule} needs {KNOB.pp} 2 or more (a pipeline); at "
                        f"{KNOB.pp} 1 leave {KNOB.schedule} at its default", ("schedule",))


def virtual_stages_need_interleaved(virtual_stages: int, pp: int = 1,
                                    schedule: str | None = None) -> Refusal:
    """The rule virtual stages above 1 break without the interleaved schedule: at pp 1 (no
    pipeline) both ways in, pipeline stages and that schedule; above, the schedule, as
    ``schedule`` is another (None: the default, interleaved with virtual stages)."""
    if pp == 1:
        return knob_refusal(f"{KNOB.virtual_stages} {virtual_stages} needs {KNOB.pp} 2 or more "
                            f"and {KNOB.schedule} interleaved (model chunks of a pipeline's "
                            f"stages); give both, or {KNOB.virtual_stages} 1",
                            ("virtual_stages", "pp", "schedule"))
    other = f" ({SCHEDULE_SHORT[schedule]} runs one)" if schedule in SCHEDULE_SHORT else ""
    return knob_refusal(f"{KNOB.virtual_stages} {virtual_stages} needs {KNOB.schedule} "
                        f"interleaved, several model chunks a stage{other}; give "
                        f"{KNOB.schedule} interleaved, or {KNOB.virtual_stages} 1",
                        ("virtual_stages", "schedule"))


def unused_settings(tp, pp, schedule: str | None, virtual_stages: int, sequence_parallel,
                    tp_overlap, p2p_overlap) -> dict[str, tuple[np.ndarray, str]]:
    """Each ``ScenarioLayout`` setting that means nothing for its layout: field -> (True where
    it is set so, arrays broadcast one row each; predict's rule refusing it). A schedule other
    than none, or virtual stages above 1, at pp 1 (no pipeline); sequence parallelism or the
    tensor-parallel overlap on at tp 1 (no tensor-parallel group); the sends' overlap off where
    the layout does not interleave (the other schedules' sends block either way). ``schedule``:
    the given one (None: the default for pp). The one judge of predict (refuses such a
    scenario), sweep (drops a row whose swept value it is, runs a one-value flag's row without
    it) and plan (a row's scenario)."""
    tp, pp = np.asarray(tp), np.asarray(pp)
    no_pipeline = pp == 1
    interleaved = ~no_pipeline & (virtual_stages > 1) & (schedule in (None, "interleaved"))
    return {
        "schedule": (no_pipeline & (schedule not in (None, "none")),
                     schedule_needs_pp(str(schedule))),
        "virtual_stages": (no_pipeline & (virtual_stages > 1),
                           virtual_stages_need_interleaved(virtual_stages)),
        "sequence_parallel": ((tp == 1) & sequence_parallel,
                              knob_refusal(SEQUENCE_PARALLEL_NEEDS_TP, ("sequence_parallel",))),
        "tp_overlap": ((tp == 1) & tp_overlap,
                       knob_refusal(TP_OVERLAP_NEEDS_TP, ("tp_overlap",))),
        "p2p_overlap": (~np.asarray(p2p_overlap, dtype=bool) & ~interleaved,
                        knob_refusal(P2P_OVERLAP_NEEDS_INTERLEAVED, ("p2p_overlap",))),
    }


def early_stop_of(style: str) -> bool:
    """True when a recompute style stops early (``LayoutInputs.recompute_early_stop``; the model
    applies it to full recompute only)."""
    if style not in RECOMPUTE_STYLES:
        raise ScalesimError(f"recompute_style {style!r}: choose {' or '.join(RECOMPUTE_STYLES)}",
                            knobs=("recompute_style",))
    return style == "early-stop"


def op_sac_of(style: str) -> bool:
    """True when a recompute style is torchtitan's per-op selective checkpoint
    (``LayoutInputs.recompute_op_sac``; the model applies it to selective recompute only)."""
    early_stop_of(style)  # a clear error for an unknown style
    return style == "op-sac"


ZERO_STAGE_HELP = ("ZeRO stage, an index of what dp shards: 0 none, 1 optimizer state, "
                   "2 + gradients, 3 + parameters (FSDP full shard)")


class ParallelLayout(BaseModel):
    """How one training job is split over ``dp * tp * pp * cp`` devices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["scalesim-layout/1"] = LAYOUT_VERSION
    dp: int = Field(default=1, ge=1, description="data-parallel degree: a count of model replicas")
    tp: int = Field(default=1, ge=1, description="tensor-parallel degree (Megatron): devices "
                    "of one group")
    pp: int = Field(default=1, ge=1, description="pipeline-parallel stages")
    cp: int = Field(default=1, ge=1, description="context-parallel degree (sequence split): "
                    "devices of one group")
    zero: int = Field(default=0, ge=0, le=3, description=ZERO_STAGE_HELP)
    micro_batch: int = Field(default=1, ge=1, description="sequences per micro-batch per replica")
    global_batch: int = Field(ge=1, description="sequences per optimizer step, whole job")
    schedule: Schedule = Field(default="none", description="pipeline schedule; 'none' when pp=1")
    virtual_stages: int = Field(default=1, ge=1, description="model chunks per pipeline rank "
                                "(interleaved 1F1B)")
    recompute: Recompute = "none"
    recompute_style: RecomputeStyle = recompute_style_field()
    sequence_parallel: bool = Field(default=False, description="Megatron sequence parallelism "
                                    "inside the tensor-parallel group")
    tp_overlap: bool = tp_overlap_field()
    p2p_overlap: bool = p2p_overlap_field()
    shard_group: int | None = Field(default=None, ge=1, description=SHARD_GROUP_HELP)

    @property
    def devices(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def accumulation(self) -> int:
        """Micro-batches per optimizer step per replica (gradient accumulation)."""
        return self.global_batch // (self.dp * self.micro_batch)


@dataclass(frozen=True)
class GroupSpan:
    """Where one parallel group's members sit: members per server and servers spanned."""

    name: str
    size: int
    stride: int
    per_node: int
    nodes: int

    @property
    def link(self) -> str:
        """The slowest link level its traffic crosses."""
        if self.size == 1:
            return "none"
        return "inter_node" if self.nodes > 1 else "intra_node"


def group_span(size, stride, devices_per_node, devices=None):
    """(members per server, servers spanned) of groups of ``size`` ranks ``stride`` apart;
    numpy, broadcasts (the rule of the module docstring). ``devices``: the job's ranks, which
    fill servers (NVLink domains) of ``devices_per_node`` in rank order; a group's ranks lie in
    a block of ``size x stride`` consecutive ranks, and where that block is smaller than a
    server but does not divide it, some block straddles a server boundary once the job spans
    several servers (tp 4 x dp 4 = 16 ranks on 72-GPU NVL72 domains: ranks 64-79): its worst
    group then spans 2 servers, half its members in each, and is charged the inter-server
    link (``straddles``). None: the rule alone (a group of the whole job, or a job inside one
    server)."""
    size = np.asarray(size)
    g = np.asarray(devices_per_node)
    per_node = np.clip(g // np.maximum(np.asarray(stride), 1), 1, size)
    nodes = -(-size // per_node)
    if devices is None:
        return per_node, nodes
    cross = straddles(size, stride, g, devices) & (nodes == 1)
    return np.where(cross, -(-size // 2), per_node), np.where(cross, 2, nodes)


def fewest_members(size, stride, devices_per_node, devices):
    """Members of groups of ``size`` ranks ``stride`` apart in the domain that holds fewest of
    them (numpy, broadcasts): ``group_span``'s per-server members, but where a group spans
    several servers and the job's ``devices`` leave the last one partly filled (72 + 56 of 128
    GB200 GPUs on 72-GPU racks: whole allocation units, not whole servers), its members there,
    ``ceil(per_node x last / devices_per_node)`` of the ``last`` devices: they reach only their
    own NICs, the group's slowest link (docs/model.md §12). A straddling group (``straddles``)
    keeps its half a side; whole servers (every count where the unit is the server) change
    nothing."""
    g = np.asarray(devices_per_node)
    p = np.asarray(devices)
    per_node, nodes = group_span(size, stride, g, p)
    last = p - (-(-p // g) - 1) * g
    partial = (nodes > 1) & (last < g) & ~straddles(size, stride, g, p)
    return np.where(partial, np.minimum(per_node, -(-(per_node * last) // g)), per_node)


def straddles(size, stride, devices_per_node, devices):
    """True where some group of ``size`` ranks ``stride`` apart crosses a server boundary
    though its block of ``size x stride`` ranks fits in a server: the block does not divide the
    server's ``devices_per_node`` and the job's ``devices`` fill more than one server (numpy,
    broadcasts). Blocks start at multiples of their size, so the first boundary, at
    ``devices_per_node``, falls inside one and splits some group of it (docs/model.md §12)."""
    size = np.asarray(size)
    block = size * np.maximum(np.asarray(stride), 1)
    g = np.asarray(devices_per_node)
    return (size > 1) & (block < g) & (g % block != 0) & (np.asarray(devices) > g)


def strides(tp, cp, dp):
    """Rank strides of the tensor, context, data and pipeline groups (tp innermost, pp outermost)."""
    return 1, tp, tp * cp, tp * cp * dp


def replica_servers(tp: int, cp: int, pp: int, dp: int, replicas: int,
                    devices_per_node: int) -> int:
    """Servers of ``devices_per_node`` devices that the first ``replicas`` data-parallel ranks'
    devices sit in (all their stages) for a job split tp x cp x pp over dp replicas: rank
    ``stage x tp x cp x dp + d x tp x cp + c x tp + t`` (``strides``)."""
    t_, c_, d_, s_ = strides(tp, cp, dp)
    ranks = (np.arange(pp)[:, None, None, None] * s_ + np.arange(replicas)[None, :, None, None] * d_
             + np.arange(cp)[None, None, :, None] * c_ + np.arange(tp)[None, None, None, :] * t_)
    return int(np.unique(ranks // devices_per_node).size)


def placement(layout: ParallelLayout, devices_per_node: int) -> dict[str, GroupSpan]:
    """Each group's span for this layout on servers of ``devices_per_node`` devices."""
    out = {}
    for name, size, stride in zip(("tp", "cp", "dp", "pp"),
                                  (layout.tp, layout.cp, layout.dp, layout.pp),
                                  strides(layout.tp, layout.cp, layout.dp), strict=True):
        per_node, nodes = group_span(size, stride, devices_per_node, layout.devices)
        out[name] = GroupSpan(name, size, stride, int(per_node), int(nodes))
    return out


def unrunnable_split(global_batch: int | None = None, dp: int = 1, micro_batch: int | None = None,
                     tp: int = 1, heads: int | None = None) -> list[str]:
    """The rules of ``layout_problems`` that no framework runs against (the others, such as a
    rack not filled whole, describe a placement a published run may have used): a step of a
    whole number of micro-batches per replica (Megatron-Core's
    ``num_microbatches_calculator`` asserts global batch % (micro-batch x dp) == 0) and whole
    attention heads per tensor-parallel rank (Megatron-Core's attention divides the heads by the
    tensor-parallel size, ``megatron.core.utils.divide``, which asserts it). A value of None is
    not checked."""
    problems = []
    if global_batch is not None and micro_batch is not None and global_batch % (dp * micro_batch):
        problems.append(knob_refusal(  # the page's controls; the CLI keeps its notation
            f"{KNOB.global_batch} {global_batch} is not divisible by {dp_ranks(dp)} x "
            f"{KNOB.micro_batch} {micro_batch}", ("global_batch", "micro_batch"),
            cli=f"global batch {global_batch} is not divisible by dp {dp} x micro-batch "
                f"{micro_batch}"))
    if heads is not None and heads % tp:
        problems.append(knob_refusal(f"heads {heads} are not divisible by {KNOB.tp} {tp}",
                                     ("tp",)))
    return problems


def layout_problems(layout: ParallelLayout, devices_per_node: int, layers: int | None = None,
                    heads: int | None = None, kv_heads: int | None = None,
                    seq_len: int | None = None, nouns: Nouns = GPU_NOUNS,
                    allocation: int | None = None) -> list[str]:
    """Every rule the layout breaks, each naming the values and the rule (a ``Refusal``: the
    knobs its fix changes); empty when valid. ``nouns``: the words of the profile's devices
    (``device_nouns.nouns_for``); ``allocation``: the devices of one allocation unit
    (``Hardware.allocation_devices``; None: the server's ``devices_per_node``), of which the
    job's count must be a whole number (``count_problem``)."""
    L, g = layout, devices_per_node
    problems = [p for p in (tp_server_refusal(L.tp, g, nouns, heads=heads, kv_heads=kv_heads),)
                if p]
    if problem := count_problem(L.devices, g, allocation, nouns,
                                f" ({split_words(L.dp, L.tp, L.pp, L.cp)})",
                                f" ({split_template(L.dp, L.tp, L.pp, L.cp)})"):
        problems.append(problem)
    problems += unrunnable_split(L.global_batch, L.dp, L.micro_batch)
    if L.pp == 1 and L.schedule != "none":
        problems.append(schedule_needs_pp(L.schedule))
    if L.pp > 1 and L.schedule == "none":
        problems.append(knob_refusal(f"{KNOB.pp} {L.pp} needs a pipeline {KNOB.schedule} "
                                     "(gpipe, 1f1b, interleaved, zb)", ("schedule",)))
    if L.schedule == "interleaved":
        if L.virtual_stages < 2:
            problems.append(knob_refusal(
                f"{KNOB.schedule} interleaved needs {KNOB.virtual_stages} 2 or more (model "
                f"chunks a stage); give {KNOB.virtual_stages} 2 or more, or another "
                f"{KNOB.schedule}", ("schedule", "virtual_stages")))
        elif not L.global_batch % (L.dp * L.micro_batch) and L.accumulation % L.pp:
            micro = "1 micro-batch per step is" if L.accumulation == 1 else \
                f"{L.accumulation} micro-batches per step are"
            problems.append(knob_refusal(  # the knobs of the rule: virtual stages are none
                f"{KNOB.schedule} interleaved: {micro} not a multiple of {KNOB.pp} {L.pp} "
                f"(Megatron's rule); use {KNOB.accumulation} "
                f"{-(-L.accumulation // L.pp) * L.pp} (a multiple of {L.pp}), or another "
                f"{KNOB.schedule}", ("accumulation", "pp", "schedule")))
    elif L.virtual_stages != 1:
        problems.append(virtual_stages_need_interleaved(L.virtual_stages, L.pp, L.schedule))
    if layers is not None and layers < L.pp * L.virtual_stages:
        problems.append(knob_refusal(f"{layers} layers cannot fill {KNOB.pp} {L.pp} x "
                                     f"{KNOB.virtual_stages} {L.virtual_stages} model chunks; "
                                     f"{chunks_fix(layers, L.pp, L.virtual_stages)}",
                                # the knobs its fix changes: virtual stages only where 2 or more
                                ("pp", *(("virtual_stages",) if L.virtual_stages > 1 else ()))))
    problems += unrunnable_split(tp=L.tp, heads=heads)
    if kv_heads is not None and kv_heads % L.tp and L.tp % kv_heads:
        problems.append(knob_refusal(f"{kv_heads} kv heads and {KNOB.tp} {L.tp}: one must "
                                     "divide the other", ("tp",)))
    problems += [p for p in (shard_group_refusal(L.shard_group, ZERO_STRATEGIES[L.zero]),
                             shard_group_problem(L.shard_group, L.dp, L.cp)) if p]
    if seq_len is not None and L.cp > 1 and seq_len % (2 * L.cp):
        problems.append(knob_refusal(f"sequence length {seq_len} is not divisible by 2 x "
                                     f"{KNOB.cp} {L.cp} (load-balanced context parallelism)"
                                     f"{cp_fix(seq_len, L.cp, L.dp * L.cp)}", ("cp", "seq_len")))
    if seq_len is not None and not sequence_parallel_splits(seq_len, L.tp, L.cp,
                                                           L.sequence_parallel):
        part = f"{seq_len} / {KNOB.cp} {L.cp}" if L.cp > 1 else f"{seq_len}"
        step = L.tp * L.cp
        below, above = seq_len // step * step, -(-seq_len // step) * step
        lengths = " or ".join(str(n) for n in dict.fromkeys((below, above)) if n > 0)
        problems.append(knob_refusal(
            f"sequence length {part} is not divisible by {KNOB.tp} {L.tp}: "
            f"{KNOB.sequence_parallel} splits each sequence among the tensor-parallel ranks "
            f"(Megatron's reduce-scatter along the sequence needs it whole); use "
            f"{KNOB.seq_len} {lengths}, or {KNOB.sequence_parallel} off",
            ("seq_len", "sequence_parallel")))
    return problems


def sequence_parallel_splits(seq_len, tp, cp, sequence_parallel):
    """True where sequence parallelism, if on, splits the sequence a context-parallel rank holds
    evenly among the tp ranks (numpy, broadcasts): Megatron and Transformer Engine reduce-scatter
    the activations along the sequence (``reduce_scatter_along_first_dim``: "First dimension of
    the tensor should be divisible by tensor parallel size"), so seq_len / cp % tp == 0; True
    where it is off or tp is 1."""
    tp, cp = np.asarray(tp), np.asarray(cp)
    return ~(np.asarray(sequence_parallel, dtype=bool) & (tp > 1)) | (
        np.asarray(seq_len) % (tp * cp) == 0)


def runs_on_count(devices, devices_per_node, allocation=None):
    """True where a job of ``devices`` runs on servers of ``devices_per_node`` whose scheduler
    hands out ``allocation`` devices at a time (None: the server whole): at most one unit (part
    of one), or a whole number of units (numpy, broadcasts). The one count rule of plan,
    predict and sweep (docs/model.md §12)."""
    a = devices_per_node if allocation is None else allocation
    p = np.asarray(devices)
    return (p <= a) | (p % a == 0)


def count_problem(devices: int, devices_per_node: int, allocation: int | None = None,
                  nouns: Nouns = GPU_NOUNS, split: str = "",
                  split_said: str | None = None) -> Refusal | None:
    """Why ``devices`` break ``runs_on_count``, naming the unit ('130 GPUs do not fill whole
    allocation units of 4 GPUs (...)'); None where they run. ``split``: the layout's degrees
    after the count (' (dp 4 x ...)'), and ``split_said`` the same as a template naming the
    page's controls (``split_template``; None: ``split``), which the CLI's line does not read.
    With the server as the unit (``allocation`` None or the server's devices) the words are the
    servers' ('do not fill whole servers of 8'); the allocation unit's line names the hardware
    file's field for the CLI, a template the app says without it."""
    if bool(runs_on_count(devices, devices_per_node, allocation)):
        return None
    said = as_literal(split) if split_said is None else split_said
    if allocation is None or allocation == devices_per_node:
        def servers(split_as: str) -> str:
            return (f"{devices} {nouns.devices}{split_as} do not fill whole {nouns.servers} of "
                    f"{devices_per_node}")

        return knob_refusal(servers(said), ("devices", "devices_per_node"),
                            cli=servers(as_literal(split)))
    below, above = devices // allocation * allocation, -(-devices // allocation) * allocation

    def line(field: str, split_as: str) -> str:  # the hardware file's field, where the CLI reads one
        return (f"{devices} {nouns.devices}{split_as} do not fill whole allocation units of "
                f"{allocation} {nouns.gpus} ({field}the tray or node a scheduler hands out, "
                f"{devices_per_node} to a {nouns.server}); give a multiple of {allocation}, "
                f"e.g. {below} or {above}")

    # a template (``knob_refusal``): the app, which takes no hardware file, says it without the
    # field and the split in its controls (``errors.in_words_of``)
    return knob_refusal(line("", said), ("devices",),
                        cli=line("the hardware's devices_per_allocation: ", as_literal(split)))


def divisors_text(n: int, heads: int | None = None, kv_heads: int | None = None) -> str:
    """The divisors of ``n`` as a fix names them: '1, 2, 4 or 8' (a tp that divides a server);
    where the model's ``heads`` (and ``kv_heads``) are known, only those a tp may also be
    (``unrunnable_split``'s whole heads; kv heads and tp dividing one another): a fix never
    names a tp that is then refused."""
    ds = [str(d) for d in range(1, n + 1) if n % d == 0
          and (heads is None or heads % d == 0)
          and (kv_heads is None or kv_heads % d == 0 or d % kv_heads == 0)]
    return ds[0] if len(ds) == 1 else f"{', '.join(ds[:-1])} or {ds[-1]}"


def chunks_fix(layers: int, pp: int, virtual_stages: int) -> str:
    """The fix of ``layers`` too few for pp x virtual stages model chunks, a template
    (``knob_refusal``): the largest pp that they fill at these virtual stages ('use {pp} <=
    32'), and at this pp the most virtual stages where the interleaved schedule's 2 fit ('or
    {virtual_stages} <= 5')."""
    fix = f"use {KNOB.pp} <= {layers // virtual_stages}" if layers >= virtual_stages else ""
    if virtual_stages > 1 and layers // pp >= 2:
        fix += f"{' or ' if fix else 'use '}{KNOB.virtual_stages} <= {layers // pp}"
    return fix or f"use {KNOB.pp} 1 (the {layers} layers fill no pipeline)"


def cp_fix(seq_len: int, cp: int, ranks: int) -> str:
    """'; use {cp} 2' (a template, ``knob_refusal``: the largest cp below ``cp`` that divides
    the ``ranks`` of dp x cp and whose 2 x cp divides ``seq_len``; else cp 1), then the sequence
    lengths around ``seq_len`` that 2 x cp divides: '; use {cp} 2, or {seq_len} 4096 or
    4128'."""
    fit = next((c for c in range(cp - 1, 1, -1) if ranks % c == 0 and seq_len % (2 * c) == 0), 1)
    step = 2 * cp
    below, above = seq_len // step * step, -(-seq_len // step) * step
    lengths = f"{below} or {above}" if below else f"{above}"
    return f"; use {KNOB.cp} {fit}, or {KNOB.seq_len} {lengths}"


# a refusal's knob (``ScalesimError.knobs``) for the hardware preset, which has no knob row
# (--hardware, the app's Hardware preset): where another preset's server runs the layout
HARDWARE_KNOB = "hardware"
# the last way out of a tp past the server (``server_ways``), hardware of one's own: the CLI's
# hardware file (--hardware FILE), the app's uploaded calibration profile (whose hardware the
# page predicts on); '{tp}': the tp it must hold
HARDWARE_FILE_WAY = "a hardware file with devices_per_node a multiple of {tp}"
PROFILE_WAY = "an uploaded calibration profile whose servers hold a multiple of {tp} GPUs"


def tp_above_server(tp: int, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                    server_devices: int | None = None) -> Refusal:
    """'tp 16 > 8 GPUs per server (...); use tp <= 8, or hardware whose server (one NVLink
    domain) holds 16 GPUs: the preset gb200-nvl72 at 64 GPUs per rack, or a hardware file
    with devices_per_node a multiple of 16'; 'tp 4 > 2 processes per host (...); use tp <= 2'
    for a CPU profile. Every way out: a smaller tp; more of the server's devices where the job
    uses fewer than its ``server_devices`` (the hardware's devices_per_node; None: the job's
    ``devices_per_node``); a GPU server whose NVLink domain holds tp (``server_ways``). The rule
    is of both values: its knobs are tp and the devices per server (the one place every caller,
    layout_problems, predict and counts_that_run, takes it from), and the hardware preset where
    the line names one that holds tp (``presets_past_server``). A template (``knob_refusal``):
    the app names tp by its control and the way out that it has for a hardware file (a
    calibration profile, ``PROFILE_WAY``); the CLI keeps the line above (its ``cli``)."""
    presets = presets_past_server(tp, devices_per_node, nouns, server_devices)

    def line(tp_said: str, own: str) -> str:
        return (f"{tp_said} {tp} > {devices_per_node} {nouns.gpus} per {nouns.server} (tensor "
                f"parallelism stays inside one {nouns.server}); use {tp_said} <= "
                f"{devices_per_node}" + as_literal(server_ways(tp, devices_per_node, nouns,
                                                               server_devices, presets, own)))

    return knob_refusal(line(KNOB.tp, PROFILE_WAY), ("tp", "devices_per_node",
                                                     *((HARDWARE_KNOB,) if presets else ())),
                        cli=line("tp", HARDWARE_FILE_WAY))


def shape_heads(shape) -> dict:
    """``tp_server_refusal``'s ``heads`` and ``kv_heads`` of a transformer shape (a workload's
    ``transformer``), none for a parameter-count workload (None)."""
    return {} if shape is None else {"heads": shape.heads, "kv_heads": shape.kv_of()}


def tp_server_refusal(tp: int, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                      server_devices: int | None = None, heads: int | None = None,
                      kv_heads: int | None = None) -> Refusal | None:
    """Why a tp cannot run on servers of ``devices_per_node``, at any device count: past the
    server (``tp_above_server``), or not dividing it (``tp_not_dividing_server``: a group would
    straddle two servers, or leave a part-server job's devices ungrouped); None where it
    divides the server. The one rule of tp and the server, which ``layout_problems`` reads and
    predict, sweep's counts, goal and the app refuse before any count's rule (no count escapes
    it, so no count is worth suggesting). ``server_devices``: ``tp_above_server``'s; ``heads``,
    ``kv_heads``: the model's, where known (the tps a fix names: ``divisors_text``)."""
    if tp > devices_per_node:
        return tp_above_server(tp, devices_per_node, nouns, server_devices)
    if devices_per_node % tp:
        return tp_not_dividing_server(tp, devices_per_node, nouns, heads, kv_heads)
    return None


def tp_not_dividing_server(tp: int, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                           heads: int | None = None, kv_heads: int | None = None) -> Refusal:
    """'tp 16 does not divide the 72 GPUs per server; use tp 1, 2, ... or 72, or 64 GPUs per
    server': a smaller tp that divides the server, or the devices per server that tp divides
    (the largest multiple of tp the server holds). A template (``knob_refusal``): the app names
    tp by its control; the CLI keeps 'tp' (its ``cli``)."""

    def line(tp_said: str) -> str:
        return (f"{tp_said} {tp} does not divide the {devices_per_node} {nouns.gpus} per "
                f"{nouns.server}; use {tp_said} {divisors_text(devices_per_node, heads, kv_heads)}, or "
                f"{devices_per_node // tp * tp} {nouns.gpus} per {nouns.server}")

    return knob_refusal(line(KNOB.tp), ("tp", "devices_per_node"), cli=line("tp"))


def server_ways(tp: int, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                server_devices: int | None = None,
                presets: list[tuple[str, int]] = (), own: str | None = None) -> str:
    """The ways out of a tp past the ``devices_per_node`` a job uses per server other than a
    smaller tp, as a fix's tail: ', or 8 GPUs per server (the hardware's servers hold 8)' where
    the server holds tp (``server_devices``), else for GPUs ', or hardware whose server (one
    NVLink domain) holds 16 GPUs: the preset gb200-nvl72 at 64 GPUs per rack, or a hardware
    file with devices_per_node a multiple of 16' (``presets``: ``presets_past_server``'s, which
    its caller names among the knobs too); '' for a CPU profile's host that holds no more (no
    preset is a CPU host). ``own``: the last way, hardware of one's own, with '{tp}' for tp
    (None: ``HARDWARE_FILE_WAY``, the CLI's; the app's is ``PROFILE_WAY``)."""
    held = server_devices or devices_per_node
    if held > devices_per_node and held >= tp:
        return (f", or {held // tp * tp} {nouns.gpus} per {nouns.server} (the hardware's "
                f"{nouns.servers} hold {held})")
    if nouns.cpu:
        return ""
    named = "".join(f"{preset_at_words(name, used)}, or " for name, used in presets)
    own = (HARDWARE_FILE_WAY if own is None else own).format(tp=tp)
    return (f", or hardware whose {nouns.server} (one NVLink domain) holds {tp} GPUs: "
            f"{named}{own}")


def preset_at_words(name: str, used: int) -> str:
    """'the preset gb200-nvl72 at 64 GPUs per rack': a hardware preset at ``used`` GPUs of each
    server, in that preset's own nouns (``hardware_nouns``: an NVL72's server is a rack)."""
    from scalesim.device_nouns import hardware_nouns
    from scalesim.presets import HARDWARE

    words = hardware_nouns(HARDWARE[name])
    return f"the preset {name} at {used} {words.gpus} per {words.server}"


def presets_past_server(tp: int, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                        server_devices: int | None = None) -> list[tuple[str, int]]:
    """(preset name, GPUs per server) of each hardware preset ``server_ways`` offers for a tp
    past the ``devices_per_node`` a job uses (``presets.presets_holding_tp``, from the preset
    table): [] where the hardware's own server (``server_devices``) holds tp, whose more
    devices per server are the way out, and for a CPU profile's host (no preset is one)."""
    from scalesim.presets import presets_holding_tp

    held = server_devices or devices_per_node
    if (held > devices_per_node and held >= tp) or nouns.cpu:
        return []
    return presets_holding_tp(tp, held)


def presets_holding_layout(setting, layout: ParallelLayout) -> list[tuple[str, float]]:
    """(preset name, device memory in bytes) of each hardware preset other than the
    ``setting``'s (``plan.Setting``) whose devices hold ``layout``: the layout evaluated on
    that preset's hardware (``plan.evaluate_layout``: its placement rules and server, and the
    memory model's need against its device memory less the setting's margin), its count run
    there (``runs_on_count``). The presets a plan where nothing fits names beside 'use devices
    with more memory' (``memory_ways``); [] for a CPU profile's host (no preset is one)."""
    from scalesim.device_nouns import hardware_nouns
    from scalesim.plan import evaluate_layout
    from scalesim.presets import HARDWARE

    if hardware_nouns(setting.hardware).cpu:
        return []
    devices = layout.dp * layout.tp * layout.pp * layout.cp
    held = []
    for name, hardware in HARDWARE.items():
        if name == setting.hardware.name or not bool(runs_on_count(
                devices, hardware.devices_per_node, hardware.allocation_devices)):
            continue
        try:  # a layout the preset's server cannot place, or a peak it lacks (fp8): not held
            result = evaluate_layout(setting.replace(hardware=hardware), layout)
        except ScalesimError:
            continue
        if bool(result.fits):
            held.append((name, hardware.device_memory_bytes))
    return held


def memory_ways(held: list[tuple[str, float]], nouns: Nouns = GPU_NOUNS,
                layout: str = "the layout") -> str:
    """'use GPUs with more memory' and the presets ``presets_holding_layout`` found, as a
    fix's tail: 'use devices with more memory (the layout fits the 141.0 GiB of the preset
    dgx-h200, or the 185.0 GiB of the preset gb200-nvl72)'; ``layout``: the words that name
    the layout held where the line has not named it ('the layout needing least memory at 16
    GPUs': goal's note, decide's card)."""
    from scalesim.figures import gib

    ways = ", or ".join(f"the {gib(memory)} of the preset {name}" for name, memory in held)
    return f"use {nouns.devices} with more memory" + (f" ({layout} fits {ways})" if ways else "")


def check_layout(layout: ParallelLayout, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
                 allocation: int | None = None, **shape) -> dict[str, GroupSpan]:
    """Raise ScalesimError naming the first broken rule; else return the placement."""
    problems = layout_problems(layout, devices_per_node, nouns=nouns, allocation=allocation,
                               **shape)
    if problems:
        raise ScalesimError(problems[0])
    return placement(layout, devices_per_node)


def valid_mask(dp, tp, pp, cp, micro_batch, global_batch, schedule, virtual_stages,
               devices_per_node, layers, heads, kv_heads, seq_len, allocation=None,
               sequence_parallel=False):
    """The rules of ``layout_problems`` on arrays (numpy, broadcast): True where valid.
    ``allocation``: as ``layout_problems``'; ``sequence_parallel``: on or off (an array or one).

    A property test checks it agrees with ``layout_problems`` case by case."""
    dp, tp, pp, cp = (np.asarray(x) for x in (dp, tp, pp, cp))
    b, gb, sch, v = (np.asarray(x) for x in (micro_batch, global_batch, schedule, virtual_stages))
    g = devices_per_node
    devices = dp * tp * pp * cp
    ok = (tp <= g) & (g % tp == 0) & runs_on_count(devices, g, allocation)
    ok &= gb % (dp * b) == 0
    ok &= (pp == 1) == (sch == NO_PIPELINE)
    k = gb // (dp * b)
    inter = sch == INTERLEAVED
    ok &= np.where(inter, (v >= 2) & (k % pp == 0), v == 1)
    ok &= layers >= pp * v
    ok &= heads % tp == 0
    ok &= (kv_heads % tp == 0) | (tp % kv_heads == 0)
    ok &= (cp == 1) | (seq_len % (2 * cp) == 0)
    return ok & sequence_parallel_splits(seq_len, tp, cp, sequence_parallel)  # may broadcast


def layers_per_stage(layers, pp, virtual_stages=1):
    """Layers on the fullest pipeline rank (arrays): the L layers spread over pp x v chunks,
    the first L mod pp v chunks one more, chunk i on rank i % pp, so rank 0 holds
    v floor(L / (pp v)) + ceil((L mod pp v) / pp): ceil(L / pp) at v = 1; 20 for 80 layers over
    pp 4 x v 3 (chunks 7, 7, 6), where v chunks of the fullest would be 21. The layout model's
    slowest stage (``model.layout_step``; each rank's own layers: ``pipeline_stages.stage_ends``;
    Megatron needs L divisible by pp v unless told the split)."""
    L = np.asarray(layers, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    p = np.asarray(pp, dtype=float)
    chunks = p * v
    return v * np.floor(L / chunks) + np.ceil(np.mod(L, chunks) / p)
