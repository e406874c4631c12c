"""scalesim sweep: evaluate a grid of scenarios in vectorised chunks; CSV or JSON streamed out."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import typing
from types import SimpleNamespace

from scalesim.bounds import (
    KNOB_BY_FIELD,
    LAYOUT_KNOB_BY_FIELD,
    bound,
    flag_list_type,
    flag_of,
    split_list,
    values_flag,
)
from scalesim.cli.given_words import in_given_words
from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    check_scenario_loader_workers,
    profile_from_args,
    scenario_from_args,
)
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import (
    KNOB,
    Refusal,
    ScalesimError,
    as_literal,
    flag_error,
    in_words_of,
    joined,
    within,
)
from scalesim.figures import count
from scalesim.layout import knob_refusal, knobs_said
from scalesim.precision import FP8, FP8_WORDS
from scalesim.schemas import Scenario, ScenarioLayout

if typing.TYPE_CHECKING:
    from scalesim.sweep import Drops

NAME = "sweep"
HELP = "evaluate every combination of knob values (a grid) and write CSV or JSON"
EXAMPLE = """examples:
  scalesim sweep --devices 1-1024 --batch-values 16,32,64 --strategy-values ddp,zero3 --out grid.csv
  scalesim sweep --devices 8,16,32 --inter-busbw-values 12,25,50,100,192 --format json
  scalesim sweep --workload llama3-8b --hardware dgx-h100 --devices 16,32 --tp-values 1,2,4 --pp-values 1,2
  scalesim sweep --workload llama3-8b --hardware dgx-h100 --devices 16 --tp 2 --algorithm-values ring,tree
  scalesim sweep --workload llama3-8b --devices 16,32 --strategy zero3 --shard-group-values 8,16,32
  scalesim sweep --workload llama3-8b --devices 8 --pp 4 --accumulation 8 --virtual-stages-values 1,2,4
  scalesim sweep --workload llama3-8b --devices 8 --tp 2 --recompute-values none,selective,full
  scalesim sweep --workload llama3-8b --devices 16 --global-batch 32 --seq-len-values 4096-32768 --cp 2

Notes predict would print of the scenario go to stderr; stdout holds only the rows.

A transformer workload (--workload with a shape) sweeps every axis through its layout: dp =
devices / (tp x pp x cp); combinations that break a layout rule are dropped and counted."""


def _words(text: str) -> list[str]:
    with flag_error():
        return split_list(text, "value")


def _on_off(text: str) -> list[bool]:
    table = {"on": True, "off": False, "true": True, "false": False}
    try:  # 'on,true' is one value twice: kept once, as split_list keeps a repeat
        return list(dict.fromkeys(table[w.lower()] for w in _words(text)))
    except KeyError:
        raise argparse.ArgumentTypeError(f"'{text}' should be a list of on/off") from None


def _values(axis: str):
    """A numeric axis's list parser, with the knob's bounds (scalesim.bounds)."""
    return flag_list_type((KNOB_BY_FIELD.get(axis) or LAYOUT_KNOB_BY_FIELD[axis]).quantity)


# flag -> (sweep axis, parser)
VALUE_FLAGS = {
    # the transformer workload at each sequence length (a profile per value, as predict
    # --seq-len resolves it: ``sweep.plan_sweep``'s at_sequence)
    "seq_len_values": ("seq_len", _values("seq_len")),
    "batch_values": ("micro_batch", _values("micro_batch")),
    "global_batch_values": ("global_batch", _values("global_batch")),
    "accumulation_values": ("accumulation", _values("accumulation")),
    "strategy_values": ("strategy", _words),
    "zero_framework_values": ("zero_framework", _words),
    "grad_sync_values": ("grad_sync", _words),
    "attention_kernel_values": ("attention_kernel", _words),  # a transformer workload only
    "precision_values": ("precision", _words),  # a transformer workload only
    "algorithm_values": ("algorithm", _words),
    "overlap_values": ("overlap", _on_off),
    "bucket_mib_values": ("bucket_mib", _values("bucket_mib")),
    "intra_busbw_values": ("intra_busbw_GBps", _values("intra_busbw_GBps")),
    "inter_busbw_values": ("inter_busbw_GBps", _values("inter_busbw_GBps")),
    "straggler_cv_values": ("straggler_cv", _values("straggler_cv")),
    "tp_values": ("tp", _values("tp")),  # a workload with a transformer shape only
    "tp_overlap_values": ("tp_overlap", _on_off),
    "p2p_overlap_values": ("p2p_overlap", _on_off),  # interleaved pipeline sends (§15)
    "pp_values": ("pp", _values("pp")),
    "virtual_stages_values": ("virtual_stages", _values("virtual_stages")),  # interleaved 1F1B
    "schedule_values": ("schedule", _words),
    "recompute_values": ("recompute", _words),
    "sequence_parallel_values": ("sequence_parallel", _on_off),
    "cp_values": ("cp", _values("cp")),  # context parallelism (ring attention, §14)
    "shard_group_values": ("shard_group", _values("shard_group")),  # HSDP (docs/model.md §16)
}


def _axis_help(axis: str, parser) -> str:
    """What one axis flag takes: its choices, on/off, or the unit of its single-value flag."""
    if parser is _on_off:
        return f"values of {axis}: on, off"
    if parser is _words:
        field = Scenario.model_fields.get(axis) or ScenarioLayout.model_fields[axis]
        choices = [c for part in typing.get_args(field.annotation)
                   for c in typing.get_args(part) or (part,) if isinstance(c, str)]
        return f"values of {axis}: " + ", ".join(choices)  # a Literal, or one or None
    knob = KNOB_BY_FIELD.get(axis) or LAYOUT_KNOB_BY_FIELD[axis]
    unit = bound(knob.quantity).unit
    return f"values of {axis}, as {knob.flag} takes one" + (f" ({unit})" if unit else "")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    g = p.add_argument_group(
        "grid axes (comma-separated values, or A-B doubling from A to B for whole "
        "numbers; each multiplies the grid)"
    )
    for dest, (axis, parser) in VALUE_FLAGS.items():
        g.add_argument(values_flag(axis), dest=dest, type=parser, metavar="V,V,...",
                       help=_axis_help(axis, parser))
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="FILE", help="write to FILE (.csv or .json); default stdout")
    o.add_argument(
        "--format",
        choices=["csv", "json"],
        help="output format (default from --out, else csv; a .csv or .json --out must agree with it)",
    )


FORMAT_ROWS = 8192  # rows formatted into one piece of text
SAMPLE_ROWS = 2000  # rows evaluated and formatted up front to estimate the output's size


def _row_format(columns: dict) -> str:
    """A printf format for one CSV row: integers as is, floats exactly (``%r``: the shortest
    text that reads back as the same float, as the JSON writes them; six significant digits
    made two rows of --inter-busbw-values 12.5,12.500004 read alike, and memory_bytes
    10477185024 1.04772e+10)."""
    kinds = []
    for values in columns.values():
        kind = values.dtype.kind
        kinds.append("%d" if kind in "iu" else "%r" if kind == "f" else "%s")
    return ",".join(kinds) + "\n"


def _shown(columns: dict, fmt: str, stall_modelled: bool) -> dict:
    """``columns`` as written: where the data stall is not modelled
    (``predict.input_pipeline_modelled``) its column, the model's 0, is written as JSON null or
    an empty CSV cell, not as a stall of 0; so is a None cell (a one-value shard group's column
    on a ddp row, which predict --json writes null)."""
    import numpy as np

    if fmt == "csv":
        columns = {name: np.array(["" if v is None else v for v in values], dtype=object)
                   if values.dtype == object else values for name, values in columns.items()}
    if stall_modelled or "data_stall_s" not in columns:
        return columns
    n = len(columns["data_stall_s"])
    return {**columns, "data_stall_s": np.full(n, None if fmt == "json" else "", dtype=object)}


def _pieces(columns: dict, fmt: str, stall_modelled: bool):
    """The rows of ``columns`` as text, FORMAT_ROWS rows per piece (a JSON piece has no
    brackets: the pieces of a sweep are joined by ', ' inside one list); the data stall as
    ``_shown`` writes it."""
    from scalesim.jsonio import to_json_text

    columns = _shown(columns, fmt, stall_modelled)
    names = list(columns)
    n = len(next(iter(columns.values())))
    row_format = _row_format(columns)
    for start in range(0, n, FORMAT_ROWS):
        lists = [columns[k][start : start + FORMAT_ROWS].tolist() for k in names]
        if fmt == "json":
            yield to_json_text(
                [dict(zip(names, row, strict=True)) for row in zip(*lists, strict=True)],
                indent=None,
                what="the sweep",
            )[1:-1]
        else:
            yield "".join([row_format % row for row in zip(*lists, strict=True)])


def _to_text(columns: dict, fmt: str, stall_modelled: bool) -> str:
    """All of ``columns`` as one CSV or JSON text."""
    body = list(_pieces(columns, fmt, stall_modelled))
    if fmt == "json":
        return "[" + ", ".join(body) + "]\n"
    return ",".join(columns) + "\n" + "".join(body)


def _estimated_bytes(plan, fmt: str) -> int:
    """Size of the whole output, from SAMPLE_ROWS combinations spread over the grid."""
    import numpy as np

    from scalesim.predict import input_pipeline_modelled
    from scalesim.sweep import evaluate_at

    flat = np.unique(
        np.linspace(0, plan.combinations - 1, min(plan.combinations, SAMPLE_ROWS)).astype(np.int64)
    )
    sample = evaluate_at(plan, flat)
    if sample.size == 0:
        return plan.rows * 200
    text = _to_text(sample.columns, fmt, input_pipeline_modelled(plan.profile))
    return int(len(text.encode()) / sample.size * plan.rows)


def _check_disk(path: str, size: int, rows: int) -> None:
    """Refuse before writing when the output would not fit on the disk that holds ``path``."""
    from scalesim.outfiles import free_bytes
    from scalesim.sweep import describe_bytes

    free = free_bytes(path)
    if free is not None and size > free:
        raise ScalesimError(
            f"the sweep has {rows:,} rows, about {describe_bytes(size)} of output, "
            f"more than the {describe_bytes(free)} free for {path}; sweep fewer "
            "values"
        )


class BubbleRows:
    """The rows a sweep writes whose pipeline bubble is a large share of the step
    (``pipeline_bubble.large_bubble``): the first row numbers (1 = the first row written), how
    many, and the first such row's columns, for ``pipeline_bubble.sweep_bubble_note``."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.count = 0
        self.first = None

    def add(self, columns: dict, start: int) -> None:
        """Record the large bubbles of one chunk, ``start`` rows written before it."""
        from types import SimpleNamespace

        import numpy as np

        from scalesim.pipeline_bubble import SWEEP_ROWS_NAMED, large_bubble

        if "pp" not in columns:  # no layout: not a transformer workload (a pipelined
            return  # replica's bubble_s, of a profile fitted from runs, has no pp to name)
        hit = np.flatnonzero(large_bubble(columns["pp"], columns["bubble_s"], columns["step_time_s"]))
        if hit.size and self.first is None:
            self.first = SimpleNamespace(**{k: v[hit[0]].item() for k, v in columns.items()})
        self.rows += [start + 1 + int(i) for i in hit[: SWEEP_ROWS_NAMED - len(self.rows)]]
        self.count += int(hit.size)

    def note(self, plan, written: int) -> str | None:
        """``sweep_bubble_note`` of the rows recorded, in the profile's words."""
        from scalesim.layout_predict import layout_of
        from scalesim.pipeline_bubble import sweep_bubble_note

        strong = plan.base.global_batch is not None or "global_batch" in plan.axes
        words = hardware_nouns(plan.profile.hardware)
        if self.first is None:
            return None
        # the schedule of the first row's pp (a swept pp's default: 1f1b, not pp 1's none)
        schedule = layout_of(plan.base).model_copy(update={"pp": int(self.first.pp)}).schedule_of()
        return sweep_bubble_note(self.rows, self.count, written, self.first, strong, schedule, words.devices)


class UnfitRows:
    """How many rows a sweep writes do not fit in device memory (``fits`` false), for the
    warning predict prints of such rows: their throughput columns are not a plan."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, columns: dict) -> None:
        import numpy as np

        if "fits" in columns:
            self.count += int(np.size(columns["fits"]) - np.count_nonzero(columns["fits"]))

    def warning(self, written: int, words) -> str | None:
        if not self.count:
            return None
        return (f"{self.count:,} of {written:,} rows do not fit in {words.memory} (fits false): "
                "not runnable, their throughput columns are not a plan")


class BaselineRows:
    """What predict's notes of the one-device baseline say of the rows a sweep writes
    (``predict.above_linear_note``: the row of highest efficiency above 100 %;
    ``predict.one_device_note``: the first row whose one-device run does not fit, and the first
    whose one device cannot hold the model), recorded chunk by chunk as the rows stream out."""

    def __init__(self) -> None:
        self.top = None  # the row of highest efficiency, the first of equals
        self.short: list = []  # the first row short of memory at one device; the first
        # that cannot hold the model, where it is another

    def add(self, columns: dict, baseline: dict) -> None:
        """Record one chunk's rows (``SweepResult.columns`` and ``.baseline``)."""
        import numpy as np

        if not baseline or not len(columns["efficiency"]):
            return
        i = int(np.argmax(columns["efficiency"]))
        if self.top is None or columns["efficiency"][i] > self.top.efficiency:
            self.top = self._row(columns, baseline, i)
        short = np.flatnonzero(~baseline["one_device_fits"])
        if short.size and not self.short:
            self.short.append(self._row(columns, baseline, int(short[0])))
        lost = short[~baseline["one_device_holds_model"][short]]
        if lost.size and all(r.one_device_holds_model for r in self.short):
            self.short.append(self._row(columns, baseline, int(lost[0])))

    @staticmethod
    def _row(columns: dict, baseline: dict, i: int) -> SimpleNamespace:
        """Row ``i`` with the ``Prediction`` fields the notes read (tp x pp 1 without a
        layout; a shard group of 0 is predict's None: ddp)."""
        fields = {k: v[i].item() for k, v in {**columns, **baseline}.items()
                  if k in ("devices", "tp", "pp", "accumulation", "global_batch", "efficiency",
                           *baseline)}
        group = fields.pop("shard_group")
        return SimpleNamespace(**{"tp": 1, "pp": 1, **fields, "shard_group": group or None})

    def notes(self, plan) -> list[str]:
        """predict's notes of the rows recorded, in the profile's words: efficiency above
        100 %, then the one-device baseline that does not fit."""
        from scalesim.predict import above_linear_note, one_device_note

        words = hardware_nouns(plan.profile.hardware)
        notes = (above_linear_note([self.top] if self.top else [], words),
                 one_device_note(self.short, words))
        return [n for n in notes if n]


class PipelinesWritten:
    """The pipelines of the rows a sweep writes, each (pp, virtual stages; 1 at pp 1), for
    ``stage_notes``: a note of a pipeline whose rows were all dropped (by another layout rule)
    names rows that are not in the output."""

    def __init__(self, plan) -> None:
        from scalesim.layout_predict import layout_of

        self.virtual_stages = layout_of(plan.base).virtual_stages  # where no column says it
        self.pairs: set[tuple[int, int]] = set()

    def add(self, columns: dict) -> None:
        """Record the pipelines of one chunk's rows (none without a pp column: no layout)."""
        if "pp" not in columns:
            return
        vs = columns.get("virtual_stages", [self.virtual_stages] * len(columns["pp"]))
        self.pairs.update((int(pp), int(v) if pp > 1 else 1)
                          for pp, v in zip(columns["pp"], vs, strict=True))


def _write(handle, plan, fmt: str, bubbles: BubbleRows | None = None,
           baseline: BaselineRows | None = None,
           pipelines: PipelinesWritten | None = None,
           unfit: UnfitRows | None = None) -> tuple[int, Drops, dict, dict]:
    """Stream every row of ``plan`` to ``handle``; returns the rows written, the combinations
    dropped (``sweep.Drops``, each example's swept knobs by their grid flags), the rows that
    run without a one-value layout flag (``SweepResult.ignored``, ``ignored_notes``) and the
    rows dropped that would run it (``SweepResult.unapplied``). A sweep that keeps no row
    writes nothing and raises, its drops counted by reason: the data-parallel sweep refuses
    that case before it runs (``sweep.plan_sweep``); a transformer's layout rules are known as
    it runs. ``bubbles``: records the rows whose pipeline bubble is large; ``baseline``: what
    predict's notes of the one-device baseline read of the rows; ``pipelines``: the rows'
    pipelines; ``unfit``: counts the rows that do not fit."""
    from scalesim.predict import input_pipeline_modelled
    from scalesim.sweep import Drops, grid_flags, iter_sweep, merge_ignored

    modelled = input_pipeline_modelled(plan.profile)
    written, first = 0, True
    drops, ignored, unapplied = Drops(), {}, {}
    for chunk in iter_sweep(plan):
        drops += chunk.drops
        ignored = merge_ignored([ignored, chunk.ignored])
        unapplied = merge_ignored([unapplied, chunk.unapplied])
        if not chunk.size:
            continue
        if bubbles is not None:
            bubbles.add(chunk.columns, written)
        if baseline is not None:
            baseline.add(chunk.columns, chunk.baseline)
        if pipelines is not None:
            pipelines.add(chunk.columns)
        if unfit is not None:
            unfit.add(chunk.columns)
        written += chunk.size
        if first:
            handle.write("[" if fmt == "json" else ",".join(chunk.columns) + "\n")
        for piece in _pieces(chunk.columns, fmt, modelled):
            handle.write(piece if first or fmt == "csv" else ", " + piece)
            first = False
    # each example's rule names a swept knob by its grid flag, as typed ('not a multiple of
    # --pp-values 2'), the others kept as slots (a --scenario file's by its key: ``run``)
    drops = Drops(drops.counts, tuple(knobs_said(e, grid_flags(plan.axes)) for e in drops.examples))
    if not written:  # every drop, as no left-out note is printed
        dropped, layout, example = drops.noted(left_out=True)
        reasons = _dropped_reasons(dropped, layout, example, hardware_nouns(plan.profile.hardware))
        raise ScalesimError(within(reasons, f"no combination of the sweep is left: all "
                                            f"{dropped} dropped ({reasons}); nothing written"))
    if fmt == "json":
        handle.write("]\n")
    return written, drops, ignored, unapplied


def ignored_notes(plan, ignored: dict, written: int, unapplied: dict | None = None) -> list[str]:
    """One line per one-value layout flag some rows run without (``SweepResult.ignored``; a
    shard group: the ddp rows): the
    flag, how many of the ``written`` rows, the first, predict's rule and the column that says
    what each row runs; such a row is predict's of its scenario without the setting (named as
    the setting is: its flag, or a --scenario file's key). Where every row written runs without
    it, the rows it applies to were dropped (``unapplied``, ``SweepResult.unapplied``): how
    many, the first and its rule (``_dropped_applied``), the rule once: a later note whose
    drop is the same says how many and 'as above'."""
    from scalesim.layout import shard_group_needs_zero, unused_settings
    from scalesim.layout_predict import layout_of
    from scalesim.sweep import grid_flags, one_value_words

    split = layout_of(plan.base)
    rules = unused_settings(1, 1, split.schedule, split.virtual_stages, split.sequence_parallel,
                            split.tp_overlap, split.p2p_overlap)
    if split.shard_group is not None:  # its ddp rows run without it
        rules["shard_group"] = (None, shard_group_needs_zero(split.shard_group))
    out, drops_said = [], []
    for name, (rows, example) in ignored.items():
        which = "every row" if rows == written else f"{rows} of the {written} rows"
        # a template, the rule's kept (``errors.joined``): a file's setting said by its key
        # (``run``, ``given_words``), in the closing phrase too (a file gave no flag)
        setting = knob_refusal(one_value_words(name, getattr(split, name), getattr(KNOB, name))
                               + as_literal(f" ignored on {which} (e.g. {example}): "), (name,))
        runs = knob_refusal("; they run without it, as predict runs their scenario without "
                            + getattr(KNOB, name)
                            + as_literal(f", and column {name} says what each row runs"), (name,))
        # the rule's swept knobs by their grid flags, as the user typed them ('{schedule} gpipe
        # needs --pp-values 2 or more'; ``bounds.values_flag``), the others kept as slots
        rule = knobs_said(rules[name][1], grid_flags(plan.axes))
        lost = (unapplied or {}).get(name) if rows == written else None
        drop = _dropped_applied(plan, *lost, again=lost in drops_said) if lost else ""
        drops_said.append(lost)
        out.append(joined("", (setting, rule, runs, drop)))
    return out


def _dropped_applied(plan, dropped: int, example: str, again: bool = False) -> Refusal:
    """'; the 1 combination it applies to was dropped (<example>)': why a one-value layout
    flag is ignored on every row written although the grid holds rows it applies to
    (``SweepResult.unapplied``); the example's rule in the sweep's words (a swept knob by its
    grid flag, ``sweep.grid_flags``; the others as slots: a --scenario file's by its key).
    ``again``: a note above said this drop in full: '(as above)' in place of the rule."""
    from scalesim.sweep import grid_flags

    one = dropped == 1
    head = (f"; {'the' if one else 'all'} {count(dropped, 'combination')} it applies to "
            f"{'was' if one else 'were'} dropped")
    if again:
        return Refusal(f"{head} (as above)")
    said = knobs_said(example, grid_flags(plan.axes))
    return within(said, f"{head} ({'' if one else 'e.g. '}{said})")


def _dropped_reasons(
    dropped: int, dropped_layout: int, example: str = "", words: Nouns = GPU_NOUNS
) -> Refusal:
    """Each reason combinations were left out, with its count, joined by '; '; ``example``: the
    first layout dropped and the rule it breaks (``SweepResult.layout_example``), its template
    kept (``errors.within``, ``errors.joined``: a --scenario file's setting said by its key,
    ``cli.given_words``); ``words``: the profile's nouns ('tp stays in a host' on a CPU
    profile)."""
    from scalesim.predict import micro_batch_max

    batch = dropped - dropped_layout
    rules = (
        f"e.g. {example}"
        if example
        else f"tp x pp must divide the {words.devices}, tp stays in a {words.server}, the layers "
        "and heads must split"
    )
    breaks = "breaks" if dropped_layout == 1 else "break"
    reasons = [within(example, f"{dropped_layout:,} {breaks} a layout rule ({rules})")
               ] if dropped_layout else []
    reasons += (
        [
            f"{batch:,} {'does' if batch == 1 else 'do'} not split the global batch evenly "
            "over devices x accumulation (into micro-batches of at most "
            f"{micro_batch_max():,} samples)"
        ]
        if batch
        else []
    )
    return joined("; ", reasons)


def dropped_note(dropped: int, dropped_layout: int, example: str = "", words: Nouns = GPU_NOUNS) -> str:
    """Why combinations were left out, each reason with its count ('' when none was), in
    ``words``, the profile's nouns; the example's template kept (``_dropped_reasons``)."""
    if not dropped:
        return ""
    reasons = _dropped_reasons(dropped, dropped_layout, example, words)
    return within(reasons, f"{count(dropped, 'combination')} dropped: {reasons}")


def output_format(out: str | None, fmt: str | None) -> str:
    """The format to write: --format, else the --out file's suffix (.json, in any case: JSON),
    else CSV. A .csv or .json suffix that contradicts --format is refused: the file would hold
    one format under the other's name, and a reader that goes by the suffix fails far from the
    cause. Another suffix (grid.txt, /dev/stdout) says nothing and takes --format."""
    suffix = os.path.splitext(out or "")[1].lower().lstrip(".")
    said = suffix if suffix in ("csv", "json") else None
    if fmt is not None and said is not None and said != fmt:
        raise ScalesimError(
            f"--out {out} is a .{said} file and --format {fmt} asks for "
            f"{fmt.upper()}; give an --out ending in .{fmt}, or drop --format"
        )
    return fmt or said or "csv"


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def one_value_flag(axis: str) -> str:
    """The flag that fixes ``axis`` at one value: --batch for micro_batch, --no-overlap for
    overlap, --strategy for strategy (the knob table's flags)."""
    knob = KNOB_BY_FIELD.get(axis) or LAYOUT_KNOB_BY_FIELD.get(axis)
    return knob.flag if knob is not None else "--" + axis.replace("_", "-")


def check_one_value_flags(args: argparse.Namespace) -> None:
    """Refuse an axis given both as a grid (--batch-values) and as one value (--batch): the
    grid would win and the one value be dropped without a word. A --scenario file's value is
    not a flag: the grid sweeps over it, as it overrides any scenario value."""
    for dest, (axis, _) in VALUE_FLAGS.items():
        flag = one_value_flag(axis)
        if getattr(args, dest) is None or getattr(args, _dest(flag)) in (None, False):
            continue
        grid = values_flag(axis)
        raise ScalesimError(f"{flag} and {grid} both set one knob: give {grid} to sweep it or "
                            f"{flag} to fix it, not both", knobs=(axis,))


# fields of the scenario (recompute: of its layout) whose values change what predict's notes
# say of it (``sweep_notes``)
_NOTE_AXES = ("strategy", "zero_framework", "grad_sync", "accumulation", "attention_kernel",
              "precision", "recompute", "overlap",
              # the per-server links' words quote the busbw each row runs at
              "intra_busbw_GBps", "inter_busbw_GBps")
# scenario settings whose numbers only predict's time-to-train and cost columns read: a sweep
# row has neither (``sweep.OUTPUT_COLUMNS``); each named by its flag (``bounds.flag_of``), or
# by a --scenario file's key where the file gave it (``given_words``)
_UNPRICED = ("price_per_device_hour", "train_samples", "critical_batch_size",
             "min_samples_to_quality", "instance_sizes")


SHARD_GROUP_WORDS = (
    "shard_group is the group that shards the states, as predict --json says it: a group at or "
    "above dp is all of dp (asked 32 at dp 16: 16); shard_group_asked, the last column, is the "
    "value asked, which tells such rows apart"
)


def stage_notes(plan, written: PipelinesWritten | None = None) -> list[str]:
    """``pipeline_stages.uneven_notes`` of the pipelines the sweep runs: once per pp swept (or
    the base scenario's pp) x its virtual stages whose stages a framework runs uneven; none
    without a transformer shape, and none for a pp past the layers (those rows are dropped).
    ``written``: the pipelines of the rows written; one no row written runs (its rows dropped
    by another rule) is not noted. None: every pipeline of the grid."""
    from scalesim.layout_predict import layout_of, split_profile, splittable_shape
    from scalesim.pipeline_stages import uneven_notes

    shape = splittable_shape(split_profile(plan.profile, plan.base))
    if shape is None:
        return []
    split = layout_of(plan.base)
    vs = [int(v) for v in plan.axes.get("virtual_stages", [split.virtual_stages])]
    pps = [int(pp) for pp in plan.axes["pp"]] if "pp" in plan.axes else [split.pp]
    pipes = dict.fromkeys((pp, v if pp > 1 else 1) for pp in pps for v in vs)
    return uneven_notes(shape.layers, [(pp, v) for pp, v in pipes if pp * v <= shape.layers
                                       and (written is None or (pp, v) in written.pairs)])


def _note_scenario(base: Scenario, values: dict) -> Scenario:
    """``base`` at one combination of the ``_NOTE_AXES`` values (recompute: its layout's)."""
    from scalesim.layout_predict import layout_of

    split = {k: v for k, v in values.items() if k in ScenarioLayout.model_fields}
    rest = {k: v for k, v in values.items() if k not in split}
    return base.model_copy(update={**rest, **(
        {"layout": layout_of(base).model_copy(update=split)} if split else {})})


def _ignored_flag_notes(profile, scenario) -> list[str]:
    """predict's notes of the scenario's flags that change no number of it: a recompute style
    it does not run (``recompute_style_note``) and ``cmd_predict.unused_setting_notes``, in
    words that do not name the row's recompute or strategy where several values give one
    reason ('recompute is not full'): the note names the rows, once."""
    from scalesim.cli.cmd_predict import unused_setting_notes
    from scalesim.layout_predict import recompute_style_note

    style = recompute_style_note(profile, scenario, recompute_named=False)
    return ([style] if style else []) + unused_setting_notes(scenario, values_named=False)


def _value_text(value) -> str:
    """'off', 'none': one note-axis value as the CLI says it."""
    return {True: "on", False: "off"}[value] if isinstance(value, bool) else str(value)


def _value_words(name: str, value) -> str:
    """'overlap off', 'recompute none': one note-axis value, named."""
    return f"{name} {_value_text(value)}"


def _rows_words(swept: dict[str, list], given: list[tuple]) -> str:
    """'recompute none, selective', 'strategy ddp with overlap off': the rows whose swept
    note-axis values are one of the combinations ``given`` (each a tuple in ``swept``'s
    order), naming only the axes that tell them apart; each combination in turn, every axis
    named, where they are not all of the product of those values."""
    names = list(swept)
    seen = [[v for v in values if any(g[i] == v for g in given)]
            for i, values in enumerate(swept.values())]
    named = [i for i, values in enumerate(swept.values()) if len(seen[i]) < len(values)]
    if len(given) == len(list(itertools.product(*seen))):  # the product: axis by axis
        return " with ".join(f"{names[i]} " + ", ".join(_value_text(v) for v in seen[i])
                             for i in named)
    return "; ".join(" with ".join(_value_words(name, v) for name, v in zip(names, g, strict=True))
                     for g in given)


def _rows_note(swept: dict[str, list], given: list[tuple], note) -> Refusal:
    """'rows at recompute none: <note>': ``note`` said of the rows ``given`` (``_rows_words``),
    its template kept (``errors.within``), so that a --scenario file's setting it names is said
    by the file's key (``cli.given_words``), not by a flag the user never gave."""
    return within(note, f"rows at {_rows_words(swept, given)}: {note}")


def sweep_notes(plan, written: PipelinesWritten | None = None) -> list[str]:
    """The notes predict prints of the sweep's base scenario (``cmd_predict.scenario_notes``,
    the attention kernel's, precision's and recompute style's words among them; the slow
    device, the unmeasured links the rows use, the profile's notes), for stderr. A note that
    depends on a swept axis (``_NOTE_AXES``) is kept only where every value of the axes gives
    it, but for a flag that changes no number of some rows' scenario (``_ignored_flag_notes``:
    --recompute-style early-stop beside --recompute-values none,full, --tp-overlap beside
    --overlap-values on,off), said once with the rows it is true of ('rows at recompute none:
    ...'); a link swept by --intra/--inter-busbw-values is not unmeasured. Flags that only price
    or time the run are said to be ignored: a sweep row has no such column. Uneven pipeline
    stages: ``stage_notes`` (of the pipelines ``written``, where given)."""
    from scalesim.cli.cmd_predict import scenario_notes, unmeasured_link_notes
    from scalesim.predict import (
        STALL_NOT_MODELLED,
        input_pipeline_modelled,
        job_unit,
        layout,
        slow_device_note,
    )
    from scalesim.sweep import grid_flags, left_out_notes

    profile, base = plan.profile, plan.base
    swept = {
        k: [v.item() if hasattr(v, "item") else v for v in plan.axes[k]] for k in _NOTE_AXES if k in plan.axes
    }
    kept: list[str] | None = None
    unused: dict[str, list[tuple]] = {}  # an ignored-flag note -> the combinations that give it
    for values in itertools.product(*swept.values()):
        scenario = _note_scenario(base, dict(zip(swept, values, strict=True)))
        notes = scenario_notes(profile, scenario)  # the kernel's, precision's, recompute style's
        kept = notes if kept is None else [n for n in kept if n in notes]
        for note in _ignored_flag_notes(profile, scenario):
            unused.setdefault(note, []).append(values)
    out = list(kept or [])
    everywhere = len(list(itertools.product(*swept.values())))
    out += [note if len(given) == everywhere else _rows_note(swept, given, note)
            for note, given in unused.items()  # a flag some rows ignore, as predict says of
            if note not in out]  # their scenario; every row: as predict says it
    # a swept knob by its grid flag, as typed ('give --strategy-values zero1, ...'), the
    # others kept as slots (a --scenario file's by its key: ``run``)
    out = [knobs_said(note, grid_flags(plan.axes)) for note in out]
    devices = [int(d) for d in plan.axes["devices"]]
    nouns = hardware_nouns(profile.hardware)
    if note := slow_device_note(base.slow_device, devices, nouns=nouns):
        out.append(note)
    g, unit = job_unit(profile.hardware, base)
    nodes, per_node = layout(devices, g, nouns, unit)
    out += unmeasured_link_notes(
        profile,
        inter=bool((nodes > 1).any())
        and base.inter_busbw_GBps is None
        and "inter_busbw_GBps" not in plan.axes,
        intra=bool((per_node > 1).any())
        and base.intra_busbw_GBps is None
        and "intra_busbw_GBps" not in plan.axes,
    )
    if not input_pipeline_modelled(profile):
        out.append(STALL_NOT_MODELLED)  # predict's note; data_stall_s empty / null
    if "shard_group" in plan.axes:
        out.append(SHARD_GROUP_WORDS)
    out += left_out_notes(plan)  # predict's notes of the counts it leaves out
    if FP8 in plan.axes.get("precision", ()) and len(plan.axes["precision"]) > 1:
        # not every row's words, so the notes above drop them
        out.append("rows at precision fp8: " + FP8_WORDS.removeprefix("precision: "))
    out += stage_notes(plan, written)
    if given := [field for field in _UNPRICED if getattr(base, field) is not None]:
        out.append(knob_refusal(  # a template: a file's setting said by its key (``run``)
            f"{', '.join(getattr(KNOB, field) for field in given)} ignored: a sweep row has no "
            "time to train or cost column (predict, decide and goal price a run)", given))
    def said(field: str) -> str:  # a knob the sweep sweeps by its axis flag, as the user typed it
        return values_flag(field) if field in plan.axes else flag_of(field)

    # each value's notes, once, a swept knob named as typed ('--seq-len-values 4098: ...')
    own = [str(in_words_of(n, said, cli=True)) for one in (plan.sequences or {0: profile}).values()
           for n in one.notes]
    return out + list(dict.fromkeys(own))


def run(args: argparse.Namespace) -> int:
    from scalesim.outfiles import check_writable, open_output
    from scalesim.sweep import check_size, plan_sweep

    fmt = output_format(args.out, args.format)
    profile = profile_from_args(args)
    axes = {
        axis: getattr(args, flag)
        for flag, (axis, _) in VALUE_FLAGS.items()
        if getattr(args, flag) is not None
    }
    # the grid overrides the file's value and the flag's: a rule the base breaks through an
    # axis is each row's (``plan_sweep`` drops the rows that break it, or refuses the sweep)
    scenario = scenario_from_args(args, swept=axes)
    check_scenario_loader_workers(scenario, profile)  # a --scenario file's, as the flag's
    check_one_value_flags(args)
    if "micro_batch" in axes and "global_batch" in axes:
        raise ScalesimError("give --batch-values or --global-batch-values, not both",
                            knobs=("micro_batch", "global_batch"))
    # the batch dropped named as it was given (a --scenario file's key: ``given_words``)
    if "micro_batch" in axes and scenario.global_batch is not None:
        raise ScalesimError(knob_refusal(
            f"--batch-values sweeps weak scaling; drop {KNOB.global_batch}", ("global_batch",)))
    if "global_batch" in axes and scenario.micro_batch is not None:
        raise ScalesimError(knob_refusal(
            f"--global-batch-values sweeps strong scaling; drop {KNOB.micro_batch}",
            ("micro_batch",)))
    plan = plan_sweep(profile, scenario, axes, at_sequence=lambda seq: profile_from_args(
        argparse.Namespace(**{**vars(args), "seq_len": seq})),  # as predict --seq-len reads it
        refuse_counts=True)  # a list none runs: predict's line, every count named
    check_size(plan)
    bubbles, baseline, pipelines = BubbleRows(), BaselineRows(), PipelinesWritten(plan)
    unfit = UnfitRows()
    collectors = (bubbles, baseline, pipelines, unfit)  # what the notes read of the rows written
    if args.out is not None:  # '' too: refused by name, not taken for stdout
        check_writable(args.out)
        _check_disk(args.out, _estimated_bytes(plan, fmt), plan.rows)
        with open_output(args.out) as handle:
            written, drops, ignored, unapplied = _write(handle, plan, fmt, *collectors)
    else:
        written, drops, ignored, unapplied = _write(sys.stdout, plan, fmt, *collectors)
    # the rows no left-out note names (``sweep_notes``); a --scenario file's setting in the
    # example's rule by its key, the file first, as main's error line says it (``given_words``)
    note = in_given_words(dropped_note(*drops.noted(),
                                       words=hardware_nouns(profile.hardware)), args)
    if args.out is not None:
        print(f"wrote {written} scenarios to {args.out}" + (f" ({note})" if note else ""), file=sys.stderr)
    elif note:
        print(f"note: {note}", file=sys.stderr)
    # stderr: stdout holds only the rows; a --scenario file's setting a note names by its key,
    # the file first, as the dropped-row note (``given_words``)
    for line in sweep_notes(plan, pipelines) + ignored_notes(plan, ignored, written, unapplied):
        print(f"note: {in_given_words(line, args)}", file=sys.stderr)
    if warning := unfit.warning(written, hardware_nouns(profile.hardware)):  # as predict's
        print(f"warning: {warning}", file=sys.stderr)  # before its notes, as predict's table
    if note := bubbles.note(plan, written):  # predict's note, once, naming the rows
        print(f"note: {note}", file=sys.stderr)
    for note in baseline.notes(plan):  # predict's: efficiency above 100 %, the baseline
        print(f"note: {note}", file=sys.stderr)
    return 0
