"""A layout option's title in the planner's control labels, where the CLI writes its notation.

The CLI titles the planner's layout 'Split the model: dp 12 x tp 2 x pp 1, zero1, micro-batch 1
per replica x 8 accumulation, recompute none' (``layout_predict.row_title``) and a change of
today's split 'Change the layout: tp 2 -> 4, ddp -> zero1'. Such a title is a
``layout_change.LayoutTitle``, which carries the layout it says; the page says it from that, in
the sidebar's labels: 'Split the model: 12 data-parallel ranks x Tensor parallel 2, ZeRO-1,
Micro-batch 1 per model replica x Gradient accumulation 8, Activation recompute none' (a
degree of 1 left out: ``page_degrees``). The text is never read: any other title is said as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from scalesim.cli.cmd_predict import COMPUTE_PIN_NOTE, layout_notes, overlap_word
from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.errors import in_words_of
from scalesim.goal import GoalPlan, plan_dp
from scalesim.layout import (
    ZERO_STRATEGIES,
    dp_ranks,
    replica_devices,
    schedule_words,
)
from scalesim.layout_change import (
    REPLICA_MICRO_BATCH,
    SETTING_KNOBS,
    ZERO,
    Arrowed,
    Changes,
    LayoutTitle,
    Split,
)
from scalesim.layout_predict import asked_knobs, layout_of, recompute_style_note, recompute_words
from scalesim.plan import PlanRow
from scalesim.remedies import RemedyResult
from scalesim.schemas import Scenario

from .control_labels import OVERLAP_LABEL, STRATEGY_LABELS, ZERO_FRAMEWORK_LABELS, in_words
from .named_controls import CONTROL_OF_KNOB
from .state import FIELD_LABELS

# the arrow of a change on the page, as the Layout's changes write it ('Tensor parallel 2 → 4'),
# where the CLI writes ``figures.CHANGE_ARROW``, ' -> ', which terminals and logs keep
PAGE_ARROW = " → "
# a split's micro-batch is per model replica (the sidebar's 'Micro-batch (sequences per model
# replica)'), not the data-parallel control's per-device one
MICRO_BATCH, PER_REPLICA = "Micro-batch", "per model replica"
# where one model replica holds every device: nothing to exchange or shard (the CLI's words)
NO_DATA_PARALLELISM = "no data parallelism"
# the data-parallel degree in a header: no control sets it (the devices over the split,
# ``layout.dp_ranks``)
DP_RANKS = "data-parallel ranks"


def control_label(knob: str, words: Nouns) -> str:
    """The sidebar label of ``knob``'s control (a ``bounds`` knob field), in ``words``; the
    micro-batch's by the split model's control, 'Micro-batch' (the unsplit one's, 'Per-GPU
    micro-batch', is the same number: a replica is a device)."""
    return MICRO_BATCH if knob == "micro_batch" else in_words(
        FIELD_LABELS[CONTROL_OF_KNOB[knob]], words)


# the knobs whose controls show a choice's label, which a note says for the value
CHOICE_LABELS = {"strategy": STRATEGY_LABELS, "zero_framework": ZERO_FRAMEWORK_LABELS}
SPLIT_KNOBS = ("tp", "pp", "cp")  # the degrees a layout splits the model by


def page_setting(knob: str, value, words: Nouns) -> str:
    """``knob`` set to ``value`` as the page says it (the CLI's notes: 'strategy zero1',
    'accumulation 1'): its control's label and the value, 'Gradient accumulation 1', a choice
    by the control's label of it ('Strategy ZeRO-1', 'ZeRO framework DeepSpeed'), a toggle on or
    off ('Sequence parallelism on')."""
    if isinstance(value, bool):
        shown = "on" if value else "off"
    else:
        shown = CHOICE_LABELS.get(knob, {}).get(value, str(value))
    return f"{control_label(knob, words)} {shown}"


def page_asked_layout(split, words: Nouns) -> str:
    """What a layout (a ``schemas.ScenarioLayout``) asks beyond data parallelism, by the
    page's Layout controls (the CLI's ``layout_predict.asked_split``, 'tp 2 x pp 1, recompute
    full'): its split as every layout title says it (``page_degrees``, a degree of 1 left out),
    then each other control away from its default (``layout_predict.asked_knobs``, the shard
    group left out): 'Tensor parallel 2, Activation recompute full'."""
    degrees = page_degrees(None, split.tp, split.pp, split.cp, words)
    rest = [page_setting(knob, getattr(split, knob), words)
            for knob in asked_knobs(Scenario(layout=split)) if knob not in SPLIT_KNOBS]
    return ", ".join(([degrees] if degrees else []) + rest)


def _split_header() -> str:
    """``layout.SPLIT_HEADER`` ('dp x tp x pp') in the sidebar's labels (tp's and pp's hold no
    nouns of the profile)."""
    return " x ".join([DP_RANKS, *(control_label(knob, GPU_NOUNS) for knob in ("tp", "pp"))])


# the header of a column of ``layout.split_short`` cells ('8 x 2 x 1'): the page's and the HTML
# report's, where the CLI's is 'dp x tp x pp'
PAGE_SPLIT_HEADER = _split_header()
# what the planner searches (``plan.plan``), where the CLI's 'plan --help' says 'every dp x tp x
# pp / ZeRO / micro-batch / schedule / recompute layout'
SEARCHED_LAYOUTS = (f"every layout ({PAGE_SPLIT_HEADER}, {FIELD_LABELS['strat']}, {MICRO_BATCH}, "
                    f"{FIELD_LABELS['sched']}, {FIELD_LABELS['rec']} and {FIELD_LABELS['sp']})")


def short_labels(words: Nouns) -> dict[str, str]:
    """The sidebar's label of each short name a dense table's column ('dp', 'tp', 'ZeRO': the
    Layouts tab's, a searched goal plan's, ``table_columns.LAYOUT_COLUMNS``) or a chart's bar
    tag ('z', 'mb': ``charts.layout_label``) stands for."""
    zero = f"the {FIELD_LABELS['strat']}'s ZeRO stage (0: DDP)"
    return {"dp": DP_RANKS, **{k: control_label(k, words) for k in ("tp", "pp", "cp")},
            "ZeRO": zero, "z": zero, "mb": MICRO_BATCH,
            "rc": control_label("recompute", words), "sp": control_label("sequence_parallel", words)}


def short_legend(names, words: Nouns) -> str:
    """'dp = data-parallel ranks, tp = Tensor parallel, ...' of those of ``names`` (columns or
    tags) that ``short_labels`` explains, in their order; '' where none is short."""
    labels = short_labels(words)
    return ", ".join(f"{n} = {labels[n]}" for n in names if n in labels)


def page_title(title: str, words: Nouns, named: Callable[[str], str] | None = None) -> str:
    """``title`` as the page says it: a ``LayoutTitle``'s layout in the sidebar's labels
    (``page_row_title``, ``page_changes``, ``page_split``, ``page_plan_layout``) between its own
    words (its ``after`` said so too: a second layout, ``layout_change.joined``), any other
    title as it is; where ``named`` is given (a page's name of a knob: the Diagnose page's
    controls), words that name knobs by a template (``errors.in_words_of``) say them so, around
    a layout too ('... The runs' transformer gives the runs' parameter count ...')."""
    if not isinstance(title, LayoutTitle):
        return title if named is None else str(in_words_of(title, named))
    return (f"{page_title(title.before, words, named)}{page_layout(title, words)}"
            f"{page_title(title.after, words, named)}")


def page_layout(title: LayoutTitle, words: Nouns) -> str:
    """The layout ``title`` carries (its ``said``), in the sidebar's labels."""
    match title.said:
        case PlanRow() as row:
            return page_row_title(row, words)
        case Split() as split:
            return page_split(split, words)
        case GoalPlan() as plan:
            return page_plan_layout(plan, words)
        case Arrowed() as template:  # a change of figures: the page's arrow
            return template.format(arrow=PAGE_ARROW)
        case Changes() as changes:
            return page_changes(changes, words)
    raise TypeError(f"a layout title says {title.said!r}: no page words for it")


def page_plan_layout(plan, words: Nouns) -> str:
    """A split goal plan's layout (a ``goal.GoalPlan``, ``goal.plan_layout_words``) in the
    sidebar's labels: '8 data-parallel ranks x Tensor parallel 2', a searched one's rest after
    it as ``page_row_title`` says it, '(1F1B, Activation recompute full, Sequence
    parallelism)'."""
    split = page_degrees(plan_dp(plan), plan.tp, plan.pp, plan.cp, words)
    if plan.recompute is None:  # the layout kept as given: its split alone
        return split
    rest = [schedule_words(plan.schedule, plan.virtual_stages)] if plan.pp > 1 else []
    rest.append(f"{control_label('recompute', words)} {plan.recompute}")
    rest += [control_label("sequence_parallel", words)] if plan.sequence_parallel else []
    return f"{split} ({', '.join(rest)})"


def page_split(split: Split, words: Nouns) -> str:
    """A ``layout_change.Split`` in the sidebar's labels: '4 data-parallel ranks x Tensor
    parallel 8 x Pipeline stages 2'; 'Tensor parallel 2, ZeRO-3 / FSDP'
    (its strategy by the Strategy control's choice)."""
    degrees = page_degrees(split.dp, split.tp, split.pp, split.cp, words) if replica_devices(
        split.tp, split.pp, split.cp) > 1 else ""
    strategy = STRATEGY_LABELS[split.strategy] if split.strategy else ""
    return ", ".join(w for w in (degrees, strategy) if w)


def page_degrees(dp: int | None, tp: int, pp: int, cp: int, words: Nouns) -> str:
    """'32 data-parallel ranks x Tensor parallel 2' (``layout.split_words`` in the sidebar's
    labels, dp as ``layout.dp_ranks``: no control sets it; ``dp`` None: the model's split
    alone): a degree of 1 splits nothing and is left out, where the CLI writes 'pp 1' (the
    data-parallel ranks always said)."""
    split = [f"{control_label(knob, words)} {degree}"
             for knob, degree in (("tp", tp), ("pp", pp), ("cp", cp)) if degree > 1]
    return " x ".join(([dp_ranks(dp)] if dp is not None else []) + split)


def with_page_titles(remedies: list[RemedyResult], words: Nouns) -> list[RemedyResult]:
    """``remedies`` with each title and reason as the page says it (``page_title``: a reason
    too may say a layout, 'one data-parallel replica (dp 1) exchanges no gradients'): the
    plan's one rewording, so that its tables, options, headline and report say the same."""
    return [replace(r, title=page_title(r.title, words), reason=page_title(r.reason, words))
            for r in remedies]


def page_row_title(row, words: Nouns) -> str:
    """The planner's ``row`` (a ``plan.PlanRow``) as ``layout_predict.row_title`` says it, in
    the sidebar's labels: '12 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2
    (1F1B), ZeRO-1, Micro-batch 1 per model replica x Gradient accumulation 8, Activation
    recompute none' (', Sequence parallelism', ', Tensor-parallel overlap' where it runs them;
    'ZeRO-3 / FSDP with Shard group (HSDP) 8' where it shards over fewer ranks)."""
    split = page_degrees(row.dp, row.tp, row.pp, row.cp, words)
    schedule = (f" ({schedule_words(row.schedule, row.virtual_stages)})" if row.pp > 1
                else "")
    zero = (STRATEGY_LABELS[ZERO_STRATEGIES[row.zero]] if row.dp * row.cp > 1
            else NO_DATA_PARALLELISM)
    zero += (f" with {control_label('shard_group', words)} {row.shard_group}" if row.hybrid
             else "")
    recompute = recompute_words(row.recompute, row.recompute_style).removeprefix("recompute ")
    return (f"{split}{schedule}, {zero}, {MICRO_BATCH} {row.micro_batch} {PER_REPLICA} x "
            f"{control_label('accumulation', words)} {row.accumulation}, "
            f"{control_label('recompute', words)} {recompute}"
            + (f", {control_label('sequence_parallel', words)}" if row.sequence_parallel else "")
            + (f", {control_label('tp_overlap', words)}" if row.tp_overlap and row.tp > 1
               else ""))


def page_changes(changes, words: Nouns) -> str:
    """'Tensor parallel 2 → 4, Strategy DDP → ZeRO-1': each (setting, old, new) of
    ``layout_change.setting_changes`` by its control's label, a ZeRO stage by the Strategy
    control's choices (a split plan's micro-batch 'Micro-batch 4 per model replica',
    ``layout_change.REPLICA_MICRO_BATCH``), as the page says a control's change
    (``state.reset_words``); a setting
    a title keeps (old = new: the hybrid-sharding remedy's ZeRO-3) by its value alone,
    'Strategy ZeRO-3 / FSDP'."""
    def value(name: str, text: str) -> str:
        return STRATEGY_LABELS.get(text, text) if name == ZERO else text

    def change(name: str, old: str, new: str) -> str:
        # a kept degree of 1 is said ('Tensor parallel 2, Pipeline stages 1'), where a layout
        # title leaves it out (``page_degrees``): kept settings are goal's layout 'given'
        # (``goal.kept_said``), the values of the sidebar's Layout controls the user chose to
        # keep at every count, and its no-fit note asks to change those very controls
        kept = "" if old == new else f"{value(name, old)}{PAGE_ARROW}"
        per = f" {PER_REPLICA}" if name == REPLICA_MICRO_BATCH else ""
        return f"{control_label(SETTING_KNOBS[name], words)} {kept}{value(name, new)}{per}"

    return ", ".join(change(*triple) for triple in changes)


def page_hsdp_words(shard_group: int, words: Nouns) -> str:
    """A shard group in the sidebar's words (the CLI's ``cmd_predict.hsdp_layout_words``,
    'HSDP: ... across dp / shard group copies'): 'Shard group (HSDP) 8: ZeRO states sharded
    over 8 ranks, replicated across the rest of the data-parallel ranks where they exceed 8
    (elsewhere sharded over all of them)', as the control's help says it."""
    return (f"{control_label('shard_group', words)} {shard_group}: ZeRO states sharded over "
            f"{shard_group} ranks, replicated across the rest of the {DP_RANKS} where they "
            f"exceed {shard_group} (elsewhere sharded over all of them)")


def page_pipeline(split, words: Nouns) -> str:
    """A layout's pipeline (a ``schemas.Layout``) as the stage notes name it, in the sidebar's
    labels (``page_pipeline_words``)."""
    return page_pipeline_words(split.pp, split.virtual_stages, words)


def page_pipeline_words(pp: int, virtual_stages: int, words: Nouns) -> str:
    """A pipeline of ``pp`` stages x ``virtual_stages`` as the stage notes name it, in the
    sidebar's labels: 'Pipeline stages 2 x Virtual stages 2' (the CLI's 'pp 2 x 2 virtual
    stages', ``pipeline_stages.pipeline_words``)."""
    return f"{control_label('pp', words)} {pp}" + (
        f" x {control_label('virtual_stages', words)} {virtual_stages}"
        if virtual_stages > 1 else "")


def _over_split(split, words: Nouns) -> str:
    """' / (Tensor parallel x Pipeline stages)', ' / Tensor parallel': the devices' divisor of
    the data-parallel ranks, by the controls that split ``split`` (a ``schemas.Layout``); ''
    where none does."""
    knobs = [control_label(k, words) for k in SPLIT_KNOBS if getattr(split, k) > 1]
    if len(knobs) > 1:
        return f" / ({' x '.join(knobs)})"
    return f" / {knobs[0]}" if knobs else ""


def page_layout_line(profile, scenario, words: Nouns) -> str:
    """The scenario's layout as the HTML report says it, in the sidebar's labels (the CLI's
    ``cmd_predict.layout_line`` in its notation): 'Tensor parallel 2 x Pipeline stages 2 (1F1B),
    Activation recompute none, Sequence parallelism on, Tensor-parallel overlap off;
    data-parallel ranks = devices / (Tensor parallel x Pipeline stages); ...' (a degree of 1
    left out, as every layout title: 'Tensor parallel 2, ...; data-parallel ranks = devices /
    Tensor parallel'), with the line's notes in those labels too (``recompute_style_note``,
    ``page_hsdp_words``, ``layout_notes``: 'Strategy ZeRO-3 / FSDP under a pipeline: ...', '36
    layers over Pipeline stages 5: ...')."""
    split = layout_of(scenario)
    degrees = page_degrees(None, split.tp, split.pp, split.cp, words)
    schedule = (f" ({schedule_words(split.schedule_of(), split.virtual_stages)})"
                if split.pp > 1 else "")
    recompute = recompute_words(split.recompute_of(profile.workload), split.recompute_style)
    style_note = recompute_style_note(profile, scenario, named=lambda k: control_label(k, words))
    overlap_off = f"{OVERLAP_LABEL} off"
    settings = [
        *([f"{degrees}{schedule}"] if degrees else []),
        f"{control_label('recompute', words)} {recompute.removeprefix('recompute ')}"
        + (f" ({style_note})" if style_note else ""),
        f"{control_label('sequence_parallel', words)} {'on' if split.sequence_parallel else 'off'}",
        *([f"{control_label('tp_overlap', words)} "
           f"{overlap_word(split.tp_overlap, scenario.overlap, overlap_off)}"]
          if split.tp > 1 else []),
        *([f"{control_label('p2p_overlap', words)} "
           f"{overlap_word(split.p2p_overlap, scenario.overlap, overlap_off)}"]
          if split.interleaved else []),
        *([page_hsdp_words(split.shard_group, words)] if split.shard_group is not None else []),
    ]
    ranks = f"{DP_RANKS} = {words.devices}{_over_split(split, words)}"
    strategy = f"{FIELD_LABELS['strat']} {STRATEGY_LABELS[scenario.strategy]}"
    return "; ".join([", ".join(settings), ranks, COMPUTE_PIN_NOTE,
                      *layout_notes(profile, scenario, strategy, page_pipeline(split, words))])
