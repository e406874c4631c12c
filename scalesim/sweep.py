"""Evaluate a grid of scenarios with the vectorised model, in chunks of bounded memory.

``plan_sweep`` takes a base scenario and lists of values for some knobs, checks every value and
counts the rows of their Cartesian product before anything runs; ``iter_sweep`` evaluates it
CHUNK_ROWS combinations per call of the array model (so a million scenarios cost a few passes of
numpy, and 10^8 of them the memory of one chunk); ``sweep`` gathers every row in memory. A
combination's row depends on its own knobs only, so chunks give exactly the rows one call would.
Strong-scaling combinations whose global batch does not split evenly over devices x accumulation
into micro-batches within the bounds table's (``predict.global_batch_splits``) are dropped and
counted, never rounded silently; so are a transformer's layouts that break a layout rule
(``SweepResult.dropped_layout``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from scalesim.attention_kernel import ATTENTION_KERNELS
from scalesim.bounds import (
    KNOB_BY_FIELD,
    LAYOUT_KNOB_BY_FIELD,
    check_values,
    flag_of,
    values_flag,
)
from scalesim.device_nouns import Nouns, hardware_nouns, nouns_for
from scalesim.errors import (
    KNOB,
    ScalesimError,
    as_literal,
    in_words_of,
    require_model,
    template_of,
    within,
)
from scalesim.figures import MIB_BYTES
from scalesim.layout import (
    P2P_OVERLAP_WORDS,
    SCHEDULES,
    knob_refusal,
    knobs_said,
    shard_group_refusal,
    unused_settings,
)
from scalesim.model.collectives import ALGORITHMS
from scalesim.model.memory import DDP, STRATEGIES
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.model.step import evaluate_scaling
from scalesim.model.transformer import RECOMPUTE
from scalesim.precision import PRECISIONS
from scalesim.predict import (
    global_batch_splits,
    inter_nic_share,
    job_unit,
    layout,
    micro_batch_max,
    scenario_inputs,
    within_measured_memory,
)
from scalesim.presets import attention_share
from scalesim.schemas import Profile, Scenario, grad_sync_deepspeed_error, grad_sync_refused

# Knobs that can be swept, with how a value becomes a model input.
AXES = ("devices", "micro_batch", "global_batch", "accumulation", "strategy", "zero_framework",
        "grad_sync", "attention_kernel", "algorithm", "overlap", "bucket_mib", "intra_busbw_GBps",
        "inter_busbw_GBps", "straggler_cv", "tp", "pp", "tp_overlap", "shard_group", "precision",
        "p2p_overlap", "virtual_stages", "recompute", "schedule", "sequence_parallel", "cp",
        "seq_len")
# Axes of true/false values (the CLI's on/off)
SWITCH_AXES = ("overlap", "tp_overlap", "p2p_overlap", "sequence_parallel")
# ``ScenarioLayout`` settings a row's layout may not run (``layout.unused_settings``, in its
# order): a swept value there drops the row, a one-value flag's row runs without it
# (``_unused_settings_of_rows``)
ONE_VALUE_SETTINGS = ("schedule", "virtual_stages", "sequence_parallel", "tp_overlap",
                      "p2p_overlap")
# What makes each of them mean something on a row, the split knob that must reach 2: the fix
# of the refusal of a value no row of the sweep runs (``_ignorable``, ``_to_apply``)
_APPLIES_FROM = {"schedule": "pp", "virtual_stages": "pp", "sequence_parallel": "tp",
                 "tp_overlap": "tp", "p2p_overlap": "pp"}
NAMED_AXES = {"strategy": STRATEGIES, "zero_framework": FRAMEWORKS, "grad_sync": GRAD_SYNCS,
              "algorithm": ALGORITHMS,
              "attention_kernel": {k: i for i, k in enumerate(ATTENTION_KERNELS)},
              "precision": {k: i for i, k in enumerate(PRECISIONS)},
              "recompute": RECOMPUTE,
              "schedule": SCHEDULES}
WHOLE_AXES = ("devices", "micro_batch", "global_batch", "accumulation", "tp", "pp",
              "shard_group", "virtual_stages", "cp", "seq_len")
# ``ScenarioLayout`` fields a row takes as its scenario's layout: the rows of each combination of
# their values are evaluated as predict evaluates that scenario (``_evaluate_variants_at``)
SCENARIO_LAYOUT_AXES = ("virtual_stages", "recompute", "schedule", "sequence_parallel")
ROW = "_row"  # a row's place in the grid while variants are evaluated apart
SEQUENCE_ROW = "_row_seq"  # its place while the sequence lengths are (``_evaluate_sequences_at``)
# A transformer workload sweeps through evaluate_layouts (scalesim.layout_predict); tp / pp / cp
# (SPLIT_AXES), the attention kernel and the precision need a transformer shape (a parameter
# count has no attention core and no matmuls to run in fp8). The shard group (hybrid
# sharding, HSDP) splits no model: both paths sweep it, as every other axis
# (``input_changes``).
LAYOUT_AXES = ("tp", "pp", "shard_group")
SPLIT_AXES = ("tp", "pp", "cp")
# extra output columns of a transformer workload's rows (mfu where the GPU's peak is listed)
LAYOUT_COLUMNS = ("dp", "bubble_s", "tokens_per_s", "mfu")
# A swept shard group is written as the group that shards the states (``shard_group``: one
# above dp is all of dp, as predict --json says it) and, last, as asked: two groups that are
# both all of dp are two rows of one ``shard_group`` that this column tells apart.
SHARD_GROUP_ASKED = "shard_group_asked"

OUTPUT_COLUMNS = ("step_time_s", "compute_s", "exposed_comm_s", "data_stall_s", "straggler_s",
                  "comm_total_s", "samples_per_s", "speedup", "efficiency", "memory_bytes", "fits")


# ``SweepResult.baseline``: each row's ``Prediction`` fields that predict's notes of the
# one-device baseline and of efficiency above 100 % read (``predict.one_device_note``,
# ``above_linear_note``): whether one device holds the baseline's micro-batch, whether it holds
# the model at one sample, that micro-batch (samples), and the group sharding the ZeRO states
# (ranks; 0 under ddp, predict's None)
BASELINE_FIELDS = ("one_device_fits", "one_device_holds_model", "one_device_micro_batch",
                   "shard_group")

# Rows evaluated at once: the model's arrays for one chunk take about 40 MB.
CHUNK_ROWS = 1 << 17
MAX_ROWS = 10**9  # a larger grid is refused: hours of evaluation for any use of its rows
MEMORY_SHARE = 0.5  # the in-memory API result may take up to this share of available memory


KEPT, BATCH, LAYOUT, BATCH_SAID, LAYOUT_SAID = range(5)  # each row's ``Drops`` code


@dataclass(frozen=True)
class Drops:
    """The combinations a sweep dropped: how many rows have each drop code (``of_rows``), and
    the first broken layout and the rule it breaks in words, of every row and of those no
    left-out note names ('' for none). Two added: the counts summed, each first example."""

    counts: tuple[int, ...] = (0,) * 4  # BATCH ... LAYOUT_SAID
    examples: tuple[str, str] = ("", "")

    @classmethod
    def of_rows(cls, batch_ok, layout_ok, said, examples: tuple[str, str] = ("", "")) -> Drops:
        """Each row's code: ``LAYOUT`` where its layout breaks a rule, else ``BATCH`` where its
        global batch does not split evenly, else ``KEPT``; a dropped row ``said`` (a left-out
        note names it, ``SweepPlan.left_out``) as ``LAYOUT_SAID`` or ``BATCH_SAID``."""
        why = np.where(layout_ok, np.where(batch_ok, KEPT, BATCH), LAYOUT)
        why += (BATCH_SAID - BATCH) * (said & (why != KEPT))
        return cls(tuple(np.bincount(why, minlength=5)[1:].tolist()), examples)

    def __add__(self, other: Drops) -> Drops:
        return Drops(tuple(np.add(self.counts, other.counts).tolist()),
                     _either(self.examples, other.examples))

    def noted(self, left_out: bool = False) -> tuple[int, int, str]:
        """``cmd_sweep.dropped_note``'s (combinations, broken layouts, example): of the rows
        no left-out note names, or (``left_out``) of every row dropped."""
        batch, layout, batch_said, layout_said = self.counts
        if left_out:
            batch, layout = batch + batch_said, layout + layout_said
        return batch + layout, layout, self.examples[not left_out]


@dataclass(frozen=True)
class SweepResult:
    columns: dict[str, np.ndarray]  # the swept knobs, nodes, global_batch and every output
    drops: Drops = Drops()  # the combinations dropped, by reason (counted below)
    # a one-value layout setting or shard group (``SweepPlan.ignorable``) -> (rows that run
    # without it, the first such row in words): its column says what each row runs
    ignored: dict[str, tuple[int, str]] = field(default_factory=dict)
    # such a one-value layout setting -> (the combinations it applies to that were dropped,
    # the first and the rule it breaks, in words): why every row kept may run without it
    unapplied: dict[str, tuple[int, str]] = field(default_factory=dict)
    # not written: what predict's notes read of each row (``BASELINE_FIELDS``, the rows'
    # order), for ``cmd_sweep.BaselineRows``; {} where a result has no rows evaluated
    baseline: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(next(iter(self.columns.values())).size)

    # ``drops`` read (``Drops.noted``): every row dropped, the broken layouts, the first in words;
    # of those the rows a left-out note names, and the first broken layout of the others
    dropped = property(lambda self: self.drops.noted(left_out=True)[0])
    dropped_layout = property(lambda self: self.drops.noted(left_out=True)[1])
    layout_example = property(lambda self: self.drops.noted(left_out=True)[2])
    dropped_left_out = property(lambda self: self.dropped - self.drops.noted()[0])
    dropped_left_out_layout = property(lambda self: self.dropped_layout - self.drops.noted()[1])
    other_example = property(lambda self: self.drops.noted()[2])


@dataclass(frozen=True)
class SweepPlan:
    """A validated grid: its axes (devices first), its shape and how many rows it gives."""

    profile: Profile
    base: Scenario
    axes: dict[str, np.ndarray]
    combinations: int  # product of the axis lengths
    rows: int  # combinations kept (strong-scaling ones that do not split are dropped); on a
    # transformer sweep an upper bound: its layout rules are checked as it runs (SweepResult)
    # axis seq_len: the profile of each value (the workload at that sequence, its compute as
    # predict --seq-len decides it); ``profile`` is the first value's
    sequences: dict[int, Profile] | None = None
    # the one-value layout settings (``ONE_VALUE_SETTINGS``, not swept) that some combination's
    # layout does not run (``_ignorable``), and a shard group some ddp row does not
    # (``_one_value_shard_group``): each a column of the value each row runs
    ignorable: tuple[str, ...] = ()
    # each count rule whose left-out note the sweep prints (``left_out_notes``) -> the device
    # counts it names: their rows (a ZeRO row's, for the shard group) dropped, said there
    left_out: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.axes.values())

    @property
    def memory_bytes(self) -> int:
        """Bytes of the whole result held in memory: the swept axes at their own width, the
        layout columns (nodes, micro_batch, accumulation, global_batch) and every output at
        8 bytes (``fits``: 1), and ``SweepResult.baseline`` (two flags, two 8-byte numbers)."""
        layout_columns = {"nodes", "micro_batch", "accumulation", "global_batch"} - set(self.axes)
        per_row = (sum(values.itemsize for values in self.axes.values())
                   + 8 * len(layout_columns) + 8 * (len(OUTPUT_COLUMNS) - 1) + 1
                   + 2 * 1 + 2 * 8)  # BASELINE_FIELDS
        if self.profile.workload.transformer is not None:  # + dp, tp, pp and bubble_s
            per_row += 8 * len(set(LAYOUT_COLUMNS + LAYOUT_AXES) - set(self.axes))
            if "cp" not in self.axes and self.base.layout is not None and self.base.layout.cp > 1:
                per_row += 8  # + the scenario's cp

        elif self.profile.workload.pipeline_bubble_micro_steps:  # + bubble_s
            per_row += 8
        if "shard_group" in self.axes:  # + the group as asked
            per_row += self.axes["shard_group"].itemsize
        return self.rows * (per_row + 8 * len(self.ignorable))


def _axis_array(name: str, values) -> np.ndarray:
    """One axis as a 1-D array of allowed values (scalesim.bounds): names, true/false, or
    numbers within the knob's bounds; anything else is a one-line error naming the axis."""
    # the axis as the library's caller typed it: no CLI or app value reaches these checks (the
    # CLI's list flags and the app's controls refuse a value by their own words first)
    what, knobs = f"sweep axis '{name}'", (name,)  # every axis is a knob (AXES)
    if isinstance(values, str | bytes | dict) or not hasattr(values, "__len__"):
        raise ScalesimError(f"{what}: expected a list of values, got {type(values).__name__}",
                            knobs=knobs)
    if len(values) == 0:
        raise ScalesimError(f"{what} has no values", knobs=knobs)
    if name in NAMED_AXES:
        bad = [v for v in values if not isinstance(v, str | np.str_)]
        if bad:
            raise ScalesimError(f"{what}: expected names, got {bad[0]!r}", knobs=knobs)
        array = np.asarray([str(v) for v in values])
        _codes(array, NAMED_AXES[name], name, values_flag(name))
        return array
    if name in SWITCH_AXES:
        bad = [v for v in values if not isinstance(v, bool | np.bool_)]
        if bad:
            raise ScalesimError(f"{what}: expected true/false values, got {bad[0]!r}",
                                knobs=knobs)
        return np.asarray(values, dtype=bool)
    knob = KNOB_BY_FIELD.get(name) or LAYOUT_KNOB_BY_FIELD[name]
    array = check_values(knob.quantity, values, what, knobs=knobs)
    return array.astype(np.int64) if name in WHOLE_AXES else array.astype(float)


def _without_unsplit_axes(profile: Profile, base: Scenario, axes: dict) -> dict:
    """``axes`` without a tp, pp or cp axis of the value 1 alone where the workload is a
    parameter count and the base scenario is at 1 too: such an axis splits nothing, and a
    split axis moves the whole grid to the measured block's shape (``split_profile``), so
    '--tp-values 1' gave other rows (step, memory) than predict --tp 1, which keeps the
    measured whole-model curve."""
    from scalesim.layout_predict import layout_of

    if profile.workload.transformer is not None:
        return axes
    split = layout_of(base)
    return {k: v for k, v in axes.items()
            if not (k in ("tp", "pp", "cp") and getattr(split, k) == 1
                    and all(int(x) == 1 for x in v))}


def plan_sweep(profile: Profile, base: Scenario, axes: dict[str, list],
               at_sequence: Callable[[int], Profile] | None = None,
               refuse_counts: bool = False) -> SweepPlan:
    """Check every axis value and count the rows, before anything is evaluated. Axis
    ``seq_len``: the profile of each value from ``at_sequence`` (the CLI's: ``resolve_profile``
    of its --profile, --hardware and --workload at that value, as predict --seq-len resolves
    it), by default ``profiles.profile_at_sequence`` of ``profile``'s own model.
    ``refuse_counts`` (the CLI's): a one-value split, global batch or shard group that runs
    no device count is refused in predict's line (the API's ``sweep`` keeps an empty result,
    its drops counted, which goal reads)."""
    profile = require_model(profile, Profile, "profile")
    base = require_model(base, Scenario, "base")
    if not isinstance(axes, dict):
        raise ScalesimError(f"axes: expected a dict of axis name -> list of values, got "
                            f"{type(axes).__name__}")
    unknown = sorted(str(name) for name in axes if name not in AXES)
    if unknown:
        raise ScalesimError(f"axes: cannot sweep {unknown}; sweepable: {', '.join(AXES)}")
    axes = _without_unsplit_axes(profile, base, axes)
    if "micro_batch" in axes and ("global_batch" in axes or base.global_batch is not None):
        raise ScalesimError("sweep per-device batches (weak scaling) or global batches "
                            "(strong scaling), not both", knobs=("micro_batch", "global_batch"))
    frameworks = axes.get("zero_framework", [base.zero_framework])
    syncs = axes.get("grad_sync", [base.grad_sync])
    if all(grad_sync_refused(f, g) for f in frameworks for g in syncs):  # else rows dropped
        # a template (``layout.knob_refusal``): a one-value knob by its slot, so that a
        # --scenario file's is said by its key (``cli.given_words``)
        pair = " with ".join(_asked_words(name, axes, base)
                             for name in ("zero_framework", "grad_sync"))
        # DeepSpeed's rule names a swept knob by its grid flag, as typed (``grid_flags``)
        raise ScalesimError(knobs_said(knob_refusal(
            f"every row pairs {pair}: {template_of(grad_sync_deepspeed_error())}",
            ("zero_framework", "grad_sync")), grid_flags(axes)))
    from scalesim.layout_predict import (
        check_attention_kernel,
        check_precision,
        no_shape_words,
        split_profile,
        uses_layouts,
    )

    arrays = {name: _axis_array(name, values) for name, values in {"devices": base.devices,
                                                                   **axes}.items()}
    sequences = _sequence_profiles(profile, base, arrays, at_sequence)
    for one in sequences.values() if sequences else [profile]:
        for kernel in np.unique(arrays.get("attention_kernel", [])):  # before the shape: a
            # measured curve ran its own kernel
            check_attention_kernel(one, str(kernel), values_flag("attention_kernel"))
        for precision in np.unique(arrays.get("precision", [])):  # measured timings: their own
            check_precision(one, str(precision), values_flag("precision"))
    if sequences:
        sequences = {seq: split_profile(one, base, axes) for seq, one in sequences.items()}
        profile = next(iter(sequences.values()))
    profile = split_profile(profile, base, axes)  # a measured model split as the shape it timed
    split = uses_layouts(profile, base)
    if not split and (given := [n for n in SPLIT_AXES if n in axes]):
        flags = [values_flag(n) for n in given]
        axis = (f"{flags[0]} splits" if len(flags) == 1
                else f"{', '.join(flags[:-1])} and {flags[-1]} split")
        raise ScalesimError(f"{axis} the model: {no_shape_words(profile)}", knobs=given)
    for name, why, flag in (("attention_kernel", "a parameter count has no attention core",
                             "--attention-kernel-values"),
                            ("tp_overlap", "a parameter count has no tensor parallelism",
                             "--tp-overlap-values"),
                            ("precision", "a parameter count has no weight matmuls to run in fp8",
                             "--precision-values"),
                            ("p2p_overlap", "a parameter count has no interleaved pipeline "
                             "schedule", "--p2p-overlap-values"),
                            ("virtual_stages", "a parameter count has no pipeline stages",
                             "--virtual-stages-values"),
                            ("recompute", "a parameter count has no layers to recompute",
                             "--recompute-values"),
                            ("schedule", "a parameter count has no pipeline stages",
                             "--schedule-values"),
                            ("sequence_parallel", "a parameter count has no tensor parallelism",
                             "--sequence-parallel-values")):
        if not split and name in axes:
            raise ScalesimError(f"{flag} needs a transformer workload ({why}): "
                                f"profile '{profile.name}' gives none; give --workload with a "
                                f"'transformer' shape (e.g. llama3-8b) or drop {flag}",
                                knobs=(name,))
    g_max, unit = job_unit(profile.hardware, base)
    # a clear error for counts that do not fill allocation units (servers; hosts of a CPU
    # calibration)
    layout(np.unique(arrays["devices"]), g_max, hardware_nouns(profile.hardware), unit)
    if refuse_counts:
        _counts_left_out(profile, base, arrays, refuse=True)  # none run: predict's words
    shape = [len(v) for v in arrays.values()]
    combinations = int(np.prod(shape, dtype=object))
    rows = combinations
    gb = arrays.get("global_batch")
    if gb is None and base.global_batch is not None:
        gb = np.array([base.global_batch], dtype=np.int64)
    if gb is not None and not split:  # count the combinations of (global batch, devices, accumulation) kept
        k = arrays.get("accumulation", np.array([base.accumulation], dtype=np.int64))
        g3, p3, k3 = np.meshgrid(gb, arrays["devices"], k, indexing="ij")
        kept = int(global_batch_splits(g3, p3, k3).sum())
        others = combinations // int(np.prod([len(arrays[n]) for n in ("global_batch", "devices",
                                                                      "accumulation")
                                              if n in arrays], dtype=object))
        rows = others * kept
        if rows == 0:
            raise ScalesimError("no combination of the sweep splits the global batch evenly "
                                "over devices x accumulation into micro-batches of at most "
                                f"{micro_batch_max():,} samples (the bounds table's); change "
                                "--global-batch, --devices or --accumulation",
                                knobs=("global_batch", "devices", "accumulation"))
    return SweepPlan(profile, base, arrays, combinations, rows, sequences,
                     (_ignorable(arrays, base, g_max, hardware_nouns(profile.hardware))
                      if split else ())
                     + _one_value_shard_group(arrays, base),
                     _rules_leaving_out(profile, base, arrays))


def _ignorable(arrays: dict[str, np.ndarray], base: Scenario, g_max: int,
               nouns: Nouns) -> tuple[str, ...]:
    """The one-value layout settings (``ONE_VALUE_SETTINGS`` not swept, ``base``'s) that some
    combination of the grid's tp, pp and layout settings does not run
    (``layout.unused_settings``). A value, one-value or swept, that no combination runs (a tp
    that fits a server of ``g_max`` devices, the rest dropped) is refused in one line: predict's
    rule, the flag and what to give for it to apply (``_to_apply``), as predict refuses the
    scenario; the first setting in ``ONE_VALUE_SETTINGS`` order. The one check of a layout
    setting used on no row. ``nouns``: the hardware's ('within a rack' on a GB200 NVL72)."""
    from scalesim.layout_predict import layout_of

    asked = layout_of(base)
    fits = [t for t in arrays.get("tp", [asked.tp]) if not g_max % t] or [asked.tp]
    tp, pp = np.meshgrid(fits, arrays.get("pp", [asked.pp]))
    values = {name: [v.item() if hasattr(v, "item") else v for v in arrays[name]]
              if name in arrays else [getattr(asked, name)] for name in ONE_VALUE_SETTINGS}
    some: set[str] = set()
    used: dict[str, set] = {name: set() for name in ONE_VALUE_SETTINGS}
    rules: dict[tuple, str] = {}  # (setting, value) -> predict's rule where it means nothing
    for combination in itertools.product(*values.values()):
        one = dict(zip(values, combination, strict=True))
        unused = unused_settings(tp, pp, one["schedule"], int(one["virtual_stages"]),
                                 bool(one["sequence_parallel"]), bool(one["tp_overlap"]),
                                 bool(one["p2p_overlap"]))
        for name, (rows, rule) in unused.items():
            some |= {name} if rows.any() else set()
            if rows.all():
                rules.setdefault((name, one[name]), rule)
            else:
                used[name].add(one[name])
    for name in ONE_VALUE_SETTINGS:
        nowhere = [v for v in values[name] if v not in used[name]]
        if nowhere:
            what, drop = _setting_words(name, nowhere, arrays)
            # a template (the rule's, the flag's slot): a --scenario file's setting is named
            # as the file names it (cli.given_words)
            # the other swept knobs by their grid flags, as typed (the setting itself: predict's
            # rule, then as given, ``_setting_words``)
            raise ScalesimError(knobs_said(knob_refusal(
                f"{template_of(rules[name, nowhere[0]])}: {what} "
                f"{'mean' if len(nowhere) > 1 else 'means'} nothing on every row of the sweep; "
                f"{_to_apply(name, arrays, nouns)}, or drop {drop}", (name,)),
                {f: flag for f, flag in grid_flags(arrays).items() if f != name}))
    return tuple(name for name in ONE_VALUE_SETTINGS if name in some and name not in arrays)


def grid_flags(axes) -> dict[str, str]:
    """Each swept knob of ``axes`` -> its grid flag as typed ('pp' -> '--pp-values',
    ``bounds.values_flag``): the words a sweep's line says a swept knob in
    (``layout.knobs_said``), not predict's flag, which the sweep was not given."""
    return {field: values_flag(field) for field in axes}


def _to_apply(name: str, arrays: dict[str, np.ndarray], nouns: Nouns) -> str:
    """What to give for layout setting ``name`` to apply, a template's part: its split knob
    2 or more (``_APPLIES_FROM``), by the grid's flag where swept ('give a --pp-values that
    reaches 2'), else by its slot, the grid flag as the other way ('give {pp} (in a sweep: or a
    --pp-values that reaches 2)'); a tp within the server of ``nouns`` ('within a rack')."""
    knob = _APPLIES_FROM[name]
    grid = f"a {values_flag(knob)} that reaches 2" + (f" within a {nouns.server}"
                                                        if knob == "tp" else "")
    split = grid if knob in arrays else f"{getattr(KNOB, knob)} (in a sweep: or {grid})"
    return f"give {KNOB.virtual_stages} 2 or more with {split}" if name == "p2p_overlap" \
        else f"give {split}"


def _asked_words(name: str, axes: dict, base: Scenario) -> str:
    """'--zero-framework-values deepspeed' (swept: the axis flag and its values as typed) or
    '{grad_sync} once-per-step' (one value: the scenario's knob by its slot, ``errors.KNOB``,
    and its value), as a template's part (``layout.knob_refusal``): how a refusal of the sweep
    names a knob the user gave (the CLI's flag, a --scenario file's key: ``cli.given_words``)."""
    if name in axes:
        return as_literal(f"{values_flag(name)} {','.join(str(v) for v in axes[name])}")
    return f"{getattr(KNOB, name)} {as_literal(str(getattr(base, name)))}"


def _setting_words(name: str, values: list, arrays: dict[str, np.ndarray]) -> tuple[str, str]:
    """(the flag that asks ``values`` of layout setting ``name``, what to drop), as a template's
    parts (``layout.knob_refusal``): ('{schedule} gpipe', 'it') for a one-value flag
    (``one_value_words``), ("'gpipe', 'zb' of --schedule-values", "'gpipe', 'zb' from
    --schedule-values") for a swept setting, its values as its axis flag takes them."""
    if name not in arrays:
        return one_value_words(name, values[0], getattr(KNOB, name)), "it"
    words = ", ".join(f"'{P2P_OVERLAP_WORDS[v] if isinstance(v, bool) else v}'" for v in values)
    flag = values_flag(name)
    return as_literal(f"{words} of {flag}"), as_literal(f"{words} from {flag}")


def _one_value_shard_group(arrays: dict[str, np.ndarray], base: Scenario) -> tuple[str, ...]:
    """("shard_group",) where the scenario's shard group (a one-value --shard-group, not swept)
    means nothing on some combination's strategy: a ddp row replicates every state, so it runs
    without it, as predict runs that scenario without the flag (``SweepPlan.ignorable``); ()
    otherwise. A group no combination of strategy and framework can run (every strategy ddp,
    a group of 1, every ZeRO row DeepSpeed's) is refused in one line with predict's words."""
    from scalesim.layout_predict import layout_of

    asked = layout_of(base).shard_group
    if asked is None or "shard_group" in arrays:
        return ()
    pairs = [(str(s), str(f)) for s in arrays.get("strategy", [base.strategy])
             for f in arrays.get("zero_framework", [base.zero_framework])]
    refusals = [shard_group_refusal(asked, s, f) for s, f in pairs]
    if all(refusals):  # a ZeRO row's words first: they say what to change; a swept
        # strategy or framework by its grid flag, as typed
        raise ScalesimError(knobs_said(next((why for (s, _), why in zip(pairs, refusals, strict=True)
                                             if s != "ddp"), refusals[0]), grid_flags(arrays)))
    return ("shard_group",) if any(s == "ddp" for s, _ in pairs) else ()


def left_out_notes(plan: SweepPlan) -> list[str]:
    """predict's notes of the device counts a one-value split, global batch (uneven, or a
    micro-batch past the bounds table's) or shard group leaves out
    (``layout_predict.counts_that_run``; their rows dropped and counted), for the rules whose
    settings the sweep holds at one value (a swept tp, pp or cp gives a count several dp: the
    dropped note's example names the first); [] where none is left out."""
    return _counts_left_out(plan.profile, plan.base, plan.axes)


def _counts_left_out(profile: Profile, base: Scenario, axes: dict[str, np.ndarray],
                     refuse: bool = False) -> list[str]:
    """``left_out_notes`` of the sweep's profile, base scenario and axes; ``refuse``: a list
    the rules leave no count of is refused in predict's one line, every count named
    (``layout_predict.counts_that_run``), where they leave out every row (not a shard group
    beside ddp rows, which run without it)."""
    from scalesim.layout_predict import COUNT_RULES, counts_that_run

    scenario, skip, ddp = _counts_judged_on(base, axes)
    refused = [r for r in COUNT_RULES if not (ddp and r == "shard_group")] if refuse else []
    return counts_that_run(profile, scenario, skip, "ZeRO " if ddp else "",
                           refuse=refused)[1]


def _rules_leaving_out(profile: Profile, base: Scenario,
                       axes: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    """``SweepPlan.left_out``: each count rule whose left-out note the sweep prints
    (``left_out_notes``) -> the device counts it names."""
    from scalesim.layout_predict import counts_left_out_by_rule

    scenario, skip, ddp = _counts_judged_on(base, axes)
    return counts_left_out_by_rule(profile, scenario, skip, "ZeRO " if ddp else "")


def _counts_judged_on(base: Scenario, axes: dict[str, np.ndarray]) -> tuple[Scenario, set, bool]:
    """(the scenario whose device counts the sweep's one-value settings are judged on, a ZeRO
    row's where the shard group runs there; the count rules skipped, their settings swept;
    whether ddp rows run beside, without the shard group): ``counts_that_run``'s arguments."""
    skip = set()
    if any(a in axes for a in ("tp", "pp", "cp")):
        skip |= {"split", "global_batch", "micro_batch", "shard_group"}
    if "global_batch" in axes or "accumulation" in axes:
        skip |= {"global_batch", "micro_batch"}
    strategies = [str(s) for s in axes.get("strategy", [base.strategy])]
    zero = [s for s in strategies if s != "ddp"]
    frameworks = [str(f) for f in axes.get("zero_framework", [base.zero_framework])]
    if "shard_group" in axes or not zero:
        skip.add("shard_group")
    scenario = base.model_copy(update={  # a ZeRO row's, as the shard group runs there
        "devices": [int(p) for p in axes["devices"]], "strategy": (zero or strategies)[0],
        "zero_framework": "fsdp" if "fsdp" in frameworks else frameworks[0]})
    return scenario, skip, "ddp" in strategies


def one_value_words(name: str, value, flag: str | None = None) -> str:
    """'--p2p-overlap off', '--tp-overlap', '--schedule gpipe': the flag that sets layout
    setting ``name`` to ``value`` (the knob table's, ``bounds.LAYOUT_KNOBS``); ``flag``: the
    knob's words in its place (``errors.KNOB``'s slot, for a refusal's template)."""
    from scalesim.layout import P2P_OVERLAP_WORDS

    knob = LAYOUT_KNOB_BY_FIELD[name]
    said = knob.flag if flag is None else flag
    if knob.switch:
        return said
    return f"{said} {P2P_OVERLAP_WORDS[value] if name == 'p2p_overlap' else value}"


def _sequence_profiles(profile: Profile, base: Scenario, arrays: dict[str, np.ndarray],
                       at_sequence: Callable[[int], Profile] | None) -> dict[int, Profile] | None:
    """The profile of each value of axis seq_len (``plan_sweep``'s ``at_sequence``, else
    ``profiles.profile_at_sequence``), None without the axis. Refused in one line: a
    parameter count (no sequence to change), and a value that 2 x cp splits for no cp the sweep
    runs (the scenario's, or every one swept; load-balanced context parallelism), as predict
    --seq-len refuses it; a swept cp that splits some values and not others drops those rows
    as a broken layout."""
    if "seq_len" not in arrays:
        return None
    from scalesim.layout_predict import layout_of, splittable_shape
    from scalesim.profiles import profile_at_sequence

    if splittable_shape(profile) is None:
        raise ScalesimError("--seq-len-values needs a transformer workload (a parameter count "
                            f"has no sequence length): profile '{profile.name}' gives none; give "
                            "--workload with a 'transformer' shape (e.g. llama3-8b) or drop "
                            "--seq-len-values", knobs=("seq_len",))
    cps = [int(cp) for cp in arrays.get("cp", [layout_of(base).cp])]
    for seq in (int(v) for v in arrays["seq_len"]):
        if all(cp > 1 and seq % (2 * cp) for cp in cps):
            if "cp" in arrays:  # swept: the values as typed, and what to give
                cp = f"any of {values_flag('cp')} {','.join(map(str, cps))}"
                fix = f"2 x one of them divides, or add 1 to {values_flag('cp')}"
            else:
                cp, fix = f"{flag_of('cp')} {cps[0]}", f"{2 * cps[0]} divides, or {flag_of('cp')} 1"
            raise ScalesimError(f"{values_flag('seq_len')} {seq}: sequence length {seq} is not "
                                f"divisible by 2 x {cp} (load-balanced context parallelism); "
                                f"give sequence lengths that {fix}", knobs=("seq_len", "cp"))
    resolve = at_sequence or (lambda seq: profile_at_sequence(profile, seq)[0])
    try:
        return {int(seq): resolve(int(seq)) for seq in arrays["seq_len"]}
    except ScalesimError as exc:  # a value refused: named by the flag the user typed it with
        raise ScalesimError(in_words_of(exc, _swept_flag(arrays), cli=True)) from None


def _swept_flag(arrays: dict[str, np.ndarray]) -> Callable[[str], str]:
    """A knob as a refusal of the sweep names it: a swept one by its axis flag
    (``bounds.values_flag``: '--seq-len-values'), another by its flag (``bounds.flag_of``)."""
    return lambda field: values_flag(field) if field in arrays else flag_of(field)


def _grid_at(plan: SweepPlan, flat: np.ndarray) -> dict[str, np.ndarray]:
    """Axis values of the combinations numbered ``flat`` (C order of the axes, as meshgrid)."""
    index = np.unravel_index(flat, plan.shape)
    return {name: values[i] for (name, values), i in zip(plan.axes.items(), index, strict=True)}


def input_changes(grid: dict[str, np.ndarray], inter_share: float = 1.0) -> dict[str, np.ndarray]:
    """The model inputs the grid's knob axes set, by the field name ``StepInputs`` and
    ``LayoutInputs`` share (framework and algorithm codes, overlap, DDP bucket bytes, link
    bandwidths, jitter), so both prediction paths sweep them alike. An inter-server busbw is a
    whole server's figure, scaled by ``inter_share`` (``predict.inter_nic_share``: the NICs the
    job's GPUs of a server reach) as ``predict`` scales its override."""
    changes = {}
    if "zero_framework" in grid:
        changes["framework"] = _codes(grid["zero_framework"], FRAMEWORKS, "zero_framework")
    if "grad_sync" in grid:
        changes["grad_sync"] = _codes(grid["grad_sync"], GRAD_SYNCS, "grad_sync")
    if "algorithm" in grid:
        changes["algorithm"] = _codes(grid["algorithm"], ALGORITHMS, "algorithm")
    if "overlap" in grid:
        changes["overlap"] = grid["overlap"]
    if "bucket_mib" in grid:
        changes["bucket_bytes"] = grid["bucket_mib"] * MIB_BYTES
    if "intra_busbw_GBps" in grid:
        changes["intra_busbw_GBps"] = grid["intra_busbw_GBps"]
    if "inter_busbw_GBps" in grid:
        changes["inter_busbw_GBps"] = grid["inter_busbw_GBps"] * inter_share
    if "straggler_cv" in grid:
        changes["jitter_cv"] = grid["straggler_cv"]
    return changes


def attention_efficiencies(device_name: str, kernels: np.ndarray,
                           fused_attention: bool = True) -> np.ndarray:
    """``LayoutInputs.attention_efficiency`` of each row's kernel on ``device_name`` for a
    workload with fused attention or not (``presets.attention_share``; NaN: the matmuls'
    efficiency), docs/model.md §13."""
    share = {str(k): attention_share(device_name, str(k), fused_attention)
             for k in np.unique(kernels)}
    return np.array([np.nan if share[str(k)] is None else share[str(k)] for k in kernels],
                    dtype=float)


def _batch_axes(plan: SweepPlan, grid: dict[str, np.ndarray]):
    """At each combination: the accumulation, the global batch (None: weak scaling) and weak
    scaling's per-replica micro-batch, swept or the base scenario's."""
    base, p = plan.base, grid["devices"]
    k = grid.get("accumulation", np.full(p.shape, base.accumulation, dtype=np.int64))
    global_batch = grid.get("global_batch")
    if global_batch is None and base.global_batch is not None:
        global_batch = np.full(p.shape, base.global_batch, dtype=np.int64)
    b0 = base.micro_batch or plan.profile.workload.micro_batch
    return k, global_batch, grid.get("micro_batch", np.full(p.shape, b0, dtype=np.int64))


def evaluate_at(plan: SweepPlan, flat: np.ndarray) -> SweepResult:
    """The model at the combinations numbered ``flat``; strong-scaling ones that do not split
    are dropped and counted."""
    grid = _grid_at(plan, np.asarray(flat, dtype=np.int64))
    if "seq_len" in grid:
        return _evaluate_sequences_at(plan, grid)
    return _evaluate_grid(plan, grid)


def _evaluate_grid(plan: SweepPlan, grid: dict[str, np.ndarray]) -> SweepResult:
    """``evaluate_at`` of the combinations ``grid`` holds, on ``plan.profile``."""
    profile, base = plan.profile, plan.base
    if profile.workload.transformer is not None:
        return _evaluate_variants_at(plan, grid)
    p = grid["devices"]
    k, global_batch, micro = _batch_axes(plan, grid)
    keep = np.ones(p.shape, dtype=bool)
    base_micro = micro
    strategy = (_codes(grid["strategy"], STRATEGIES, "strategy") if "strategy" in grid
                else np.full(p.shape, STRATEGIES[base.strategy]))
    said = _left_out_rows(plan, p, strategy)
    if global_batch is not None:
        keep = global_batch_splits(global_batch, p, k)
        grid = {name: col[keep] for name, col in grid.items()}
        p, k, global_batch, strategy = p[keep], k[keep], global_batch[keep], strategy[keep]
        micro = global_batch // (p * k)
        base_micro = global_batch // k
    said_kept = said[keep]  # of the rows whose batch splits
    shard, examples = _shard_groups_at(
        base, grid, p, strategy, hardware_nouns(profile.hardware), said_kept)
    refused = _grad_sync_refused_rows(base, grid, p) & (shard >= 0)
    if refused.any():  # DeepSpeed with once-per-step reduction: dropped, as broken layouts
        examples = _either(examples, _first_words(refused, said_kept, lambda _: _row_rule(
            "zero_framework deepspeed", grad_sync_deepspeed_error())))
        shard = np.where(refused, -1, shard)
    ok = shard >= 0  # of the rows whose batch splits (dropped first), those whose layout runs
    drops = Drops.of_rows(keep, True, said) + Drops.of_rows(True, ok, said_kept, examples)
    if not ok.all():  # rows the shard group cannot run: dropped, counted as broken layouts
        grid = {name: col[ok] for name, col in grid.items()}
        p, k, micro, base_micro, strategy, shard = (
            a[ok] for a in (p, k, micro, base_micro, strategy, shard))
    base_scn = base.model_copy(update={"global_batch": None, "micro_batch": 1, "devices": [1],
                                       "layout": None})  # the shard group is set per row
    inputs, _ = scenario_inputs(profile, base_scn, devices=p)
    changes: dict = {"micro_batch": micro, "accumulation": k, "strategy": strategy,
                     "shard_group": shard,
                     **input_changes(grid, inter_nic_share(profile.hardware, base))}
    inputs = inputs.replace(**changes)
    result, speedup, efficiency, one = evaluate_scaling(inputs, base_micro, with_baseline=True)
    one_fits = within_measured_memory(profile, one.fits, base_micro)

    columns = dict(grid)
    if "shard_group" in grid:  # the group that shards the states, as predict --json says it:
        columns["shard_group"] = np.minimum(grid["shard_group"], p)  # one above p is all of p
    ignored = {}
    if "shard_group" in plan.ignorable:  # a one-value group some ddp rows run without
        columns["shard_group"] = _shard_group_column(shard, p)
        ignored = _ddp_rows_ignored(shard, p, hardware_nouns(profile.hardware))
    columns["nodes"] = result.nodes.astype(np.int64)
    columns["micro_batch"] = micro
    columns["accumulation"] = k
    columns["global_batch"] = result.global_batch.astype(np.int64)
    for name in OUTPUT_COLUMNS:
        if name == "speedup":
            columns[name] = speedup
        elif name == "efficiency":
            columns[name] = efficiency
        elif name == "fits":
            columns[name] = within_measured_memory(profile, result.fits, micro)
        else:
            columns[name] = getattr(result, name)
    if profile.workload.pipeline_bubble_micro_steps:  # a pipelined replica's fill and drain
        columns["bubble_s"] = np.broadcast_to(result.bubble_s, result.step_time_s.shape)
    if "shard_group" in grid:
        columns[SHARD_GROUP_ASKED] = grid["shard_group"]
    holds = _holds_model(one_fits, base_micro, lambda: within_measured_memory(
        profile, evaluate_scaling(inputs, np.ones_like(base_micro), with_baseline=True)[3].fits, 1))
    group = np.where(strategy == DDP, 0, np.where(shard > 0, np.minimum(shard, p), p))
    return SweepResult(columns=columns, drops=drops, ignored=ignored,
                       baseline=_baseline(one_fits, holds, base_micro, group))


def _holds_model(one_fits, base_micro, fits_at_one: Callable[[], np.ndarray]) -> np.ndarray:
    """Whether one device holds each row's model (``Prediction.one_device_holds_model``):
    ``one_fits`` where every baseline fits or the rows short of memory run one sample a
    micro-step already, else ``fits_at_one()``, the baseline evaluated at one sample, as
    predict evaluates it (only then: the rows' evaluation once more)."""
    short = ~np.asarray(one_fits, dtype=bool)
    if not (short & (np.asarray(base_micro) > 1)).any():
        return np.asarray(one_fits, dtype=bool)
    return np.asarray(fits_at_one(), dtype=bool)


def _baseline(one_fits, holds, base_micro, shard_group) -> dict[str, np.ndarray]:
    """``SweepResult.baseline`` of the rows, ``BASELINE_FIELDS`` in order, as arrays."""
    values = (one_fits, holds, base_micro, shard_group)
    shape = np.shape(base_micro)
    return {name: np.broadcast_to(np.asarray(v), shape).copy()
            for name, v in zip(BASELINE_FIELDS, values, strict=True)}


def _shard_groups_at(base, grid: dict[str, np.ndarray], p, strategy, words: Nouns, said):
    """(shard group of each row, -1 where it cannot run; the first such row in words and the
    first not ``said``, ``_first_words``, ``words`` the profile's nouns: 'on 4 processes' on a
    CPU profile) of a parameter-count workload's sweep, where every device is a data-parallel
    rank: each row's (``_row_shard_groups``); a row it cannot run is dropped, as a broken
    layout on the layout path."""
    shard = _row_shard_groups(base, grid, p, strategy)
    if shard is None:
        return np.zeros(p.shape, dtype=np.int64), ("", "")
    why, examples = _shard_group_problems_of_rows(base, grid, shard, p, p, strategy, words,
                                                  said=said)
    return np.where(why == "", shard, -1), examples


def _row_shard_groups(base, grid: dict[str, np.ndarray], p, zero) -> np.ndarray | None:
    """Each row's shard group asked: the swept ``shard_group``, else the scenario's one value
    where the row's strategy (``zero``, 0-3) shards states and 0 (none) at ddp, which runs
    without it (``_one_value_shard_group``); None where neither is given."""
    from scalesim.layout_predict import layout_of

    asked = layout_of(base).shard_group
    if "shard_group" in grid or asked is None:
        return grid.get("shard_group")
    return np.where(np.broadcast_to(zero, p.shape) == DDP, 0, asked).astype(np.int64)


def _shard_group_column(shard: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """A one-value shard group's column (``SweepPlan.ignorable``): the group that shards each
    row's states, as predict --json says it (at most the ``ranks`` of dp x cp), None (JSON null,
    an empty CSV cell) on a ddp row, which runs without it."""
    return np.array([None if s == 0 else int(min(s, r)) for s, r in zip(shard, ranks,
                                                                           strict=True)],
                    dtype=object)


def _ddp_rows_ignored(shard: np.ndarray, p, words: Nouns) -> dict[str, tuple[int, str]]:
    """``SweepResult.ignored`` of a one-value shard group (``_row_shard_groups``: 0 on the ddp
    rows, which run without it): the ddp rows and the first in words; {} where none is kept."""
    ddp = np.flatnonzero(shard == 0)
    return ({"shard_group": (int(ddp.size), f"strategy ddp on {words.count(int(p[ddp[0]]))}")}
            if ddp.size else {})


def _frameworks(base, grid: dict[str, np.ndarray], p) -> np.ndarray:
    """Each row's ZeRO framework: the swept one, else the scenario's."""
    return grid.get("zero_framework", np.full(p.shape, base.zero_framework))


def _grad_sync_refused_rows(base, grid: dict[str, np.ndarray], p) -> np.ndarray:
    """Rows whose framework cannot reduce gradients as their ``grad_sync`` says (DeepSpeed and
    FSDP's once-per-step ``no_sync``: ``schemas.grad_sync_refused``): dropped as broken layouts,
    as a sweep drops every row that cannot run (the axes refuse only where every pair is)."""
    # an axis not swept is the scenario's one value: compared as a scalar, not as a column of
    # it (np.unique of a column of 100,000 equal strings sorts them all)
    frameworks = grid.get("zero_framework", base.zero_framework)
    syncs = grid.get("grad_sync", base.grad_sync)
    refused = np.zeros(p.shape, dtype=bool)
    for f in np.unique(frameworks):
        for g in np.unique(syncs):
            if grad_sync_refused(str(f), str(g)):
                refused |= (frameworks == f) & (syncs == g)
    return refused


def _shard_group_problems_of_rows(base, grid: dict[str, np.ndarray], shard, p, dp, zero,
                                  words: Nouns, rows=None, cp=1, said=False):
    """(why each row's shard group (``shard``, ``_row_shard_groups``: 0 none) cannot run, ''
    where it can; the first such row among ``rows`` (a mask; all rows by default) in
    ``words``, the profile's nouns, and the first not ``said``, '' for none:
    ``_first_words``): the row-wise judge (``layout_predict.shard_group_problems``) with each
    row's framework, for both paths."""
    from scalesim import layout_predict as lp

    why = lp.shard_group_problems(shard, dp, zero, _frameworks(base, grid, p), cp)
    # the rule's template kept (``_row_rule``): a --scenario file's setting said by its key
    return why, _first_words((why != "") & (True if rows is None else rows), said, lambda i:
                             _row_rule(f"shard group {int(shard[i])} on {words.count(int(p[i]))}",
                                       why[i]))


def _evaluate_sequences_at(plan: SweepPlan, grid: dict[str, np.ndarray]) -> SweepResult:
    """``_evaluate_grid`` where the grid sweeps ``seq_len``: the rows of each value evaluated
    on its own profile (``SweepPlan.sequences``: the workload at that sequence, its compute as
    predict --seq-len decides it), and put back in grid order."""
    return _evaluate_groups(grid, ["seq_len"], SEQUENCE_ROW, lambda values, part: _evaluate_grid(
        replace(plan, profile=plan.sequences[int(values["seq_len"])]), part))


def _evaluate_groups(grid: dict[str, np.ndarray], names: list[str], row_key: str,
                     evaluate) -> SweepResult:
    """The rows of each combination of the values of axes ``names`` evaluated apart
    (``evaluate(those values, its rows of the grid)``), their columns put back in grid order
    (``row_key``: each row's place meanwhile, a column of its own, so groups nest)."""
    variant = np.zeros(grid["devices"].shape, dtype=np.int64)
    for name in names:
        values, at = np.unique(grid[name], return_inverse=True)
        variant = variant * len(values) + np.ravel(at)
    parts = []
    for code in np.unique(variant):
        rows = np.flatnonzero(variant == code)
        first = {name: grid[name][rows[0]].item() for name in names}
        parts.append(evaluate(first, {row_key: rows,
                                      **{name: col[rows] for name, col in grid.items()}}))
    order = np.argsort(np.concatenate([part.columns[row_key] for part in parts]), kind="stable")
    columns = {name: np.concatenate([part.columns[name] for part in parts])[order]
               for name in parts[0].columns if name != row_key}
    return SweepResult(columns=columns, drops=sum((part.drops for part in parts), Drops()),
                       ignored=merge_ignored(part.ignored for part in parts),
                       unapplied=merge_ignored(part.unapplied for part in parts),
                       baseline={name: values[order] for name, values in
                                 merge_baseline(parts).items()})


def merge_baseline(results) -> dict[str, np.ndarray]:
    """``SweepResult.baseline`` of several results (parts or chunks), concatenated in their
    order; {} where none has one."""
    names = next((list(r.baseline) for r in results if r.baseline), [])
    return {name: np.concatenate([r.baseline[name] for r in results if r.baseline])
            for name in names}


def merge_ignored(counts) -> dict[str, tuple[int, str]]:
    """``SweepResult.ignored`` (or another such count: ``unapplied``) of several results
    (parts or chunks, in grid order): the rows added up, the first example kept."""
    merged: dict[str, tuple[int, str]] = {}
    for count in counts:
        for name, (rows, example) in count.items():
            before = merged.get(name, (0, example))
            merged[name] = (before[0] + rows, before[1])
    return merged


def _evaluate_variants_at(plan: SweepPlan, grid: dict[str, np.ndarray]) -> SweepResult:
    """``_evaluate_layouts_at`` where the grid sweeps ``SCENARIO_LAYOUT_AXES`` (virtual stages,
    recompute, schedule, sequence parallelism): the rows of each combination of their values
    evaluated with the scenario's layout of those values, as predict evaluates that scenario
    (its schedule, recompute style and one-device baseline alike), and put back in grid order."""
    names = [n for n in SCENARIO_LAYOUT_AXES if n in grid]
    if not names:
        return _evaluate_layouts_at(plan, grid)
    from scalesim.layout_predict import layout_of

    split = layout_of(plan.base)
    return _evaluate_groups(grid, names, ROW, lambda values, part: _evaluate_layouts_at(
        replace(plan, base=plan.base.model_copy(update={"layout": split.model_copy(
            update=values)})), part))


def _evaluate_layouts_at(plan: SweepPlan, grid: dict[str, np.ndarray]) -> SweepResult:
    """``evaluate_at`` for a transformer workload: dp = devices / (tp x pp x cp), batches per
    replica;
    combinations that break a layout rule (``scalesim.layout``) or do not split the global batch
    are dropped and counted."""
    from scalesim import layout_predict as lp
    from scalesim.layout import (
        ZERO_STRATEGIES,
        deepspeed_pipeline_error,
        deepspeed_refuses_pipeline,
        replica_devices,
    )

    profile, base = plan.profile, plan.base
    split = lp.layout_of(base)
    p = grid["devices"]
    k, global_batch, micro = _batch_axes(plan, grid)
    tp = grid.get("tp", np.full(p.shape, split.tp, dtype=np.int64))
    pp = grid.get("pp", np.full(p.shape, split.pp, dtype=np.int64))
    cp = grid.get("cp", np.full(p.shape, split.cp, dtype=np.int64))
    replica = replica_devices(tp, pp, cp)
    layout_ok = p % replica == 0
    dp = np.where(layout_ok, p // replica, 1)
    base_micro, batch_ok = micro, np.ones(p.shape, dtype=bool)
    if global_batch is not None:
        batch_ok = global_batch_splits(global_batch, dp, k)
        micro = np.maximum(global_batch // (dp * k), 1)
        base_micro = global_batch // k
    g_max, unit = job_unit(profile.hardware, base)
    name = split.schedule or ("interleaved" if split.virtual_stages > 1 else "1f1b")
    schedule = np.where(pp > 1, SCHEDULES[name], SCHEDULES["none"])
    virtual = np.where(pp > 1, split.virtual_stages, 1)
    layout_ok &= lp.check_rows(profile, dp, tp, pp, micro, dp * micro * k, schedule, virtual,
                               g_max, cp, unit, split.sequence_parallel)
    checked = layout_ok.copy()  # the layout rules alone: each dropped row's first rule
    zero = (_codes(grid["strategy"], STRATEGIES, "strategy") if "strategy" in grid
            else np.full(p.shape, lp.ZERO_OF_STRATEGY[base.strategy]))
    said = _left_out_rows(plan, p, zero)
    # (the first broken layout, the first no left-out note names), each rule in turn
    examples = tuple(_layout_example(profile, split, name, g_max, layout_ok | hidden, p, tp, pp,
                                     dp, micro, k, cp, unit) for hidden in (False, said))
    unused = _unused_settings_of_rows(grid, split, tp, pp)
    swept = {name: (layout_ok & rows, rule) for name, (rows, rule) in unused.items()
             if name in grid}
    dropped_unused = np.logical_or.reduce([rows for rows, _ in swept.values()])
    if dropped_unused.any():  # a swept value the row's layout does not run: predict refuses it
        examples = _either(examples, _first_words(dropped_unused, said, lambda i: _row_rule(
            _row_words(profile, p, tp, pp, cp, i),
            next(rule for rows, rule in swept.values() if rows[i]))))
        layout_ok &= ~dropped_unused
    # DeepSpeed refuses ZeRO-2/3 under a pipeline (predict refuses the scenario): dropped
    deepspeed_piped = layout_ok & deepspeed_refuses_pipeline(_frameworks(base, grid, p), zero, pp)
    if deepspeed_piped.any():
        examples = _either(examples, _first_words(deepspeed_piped, said, lambda i: _row_rule(
            f"{_split_words(tp[i], pp[i], cp[i])} on "
            f"{hardware_nouns(profile.hardware).count(int(p[i]))}",
            deepspeed_pipeline_error(ZERO_STRATEGIES[int(zero[i])], int(pp[i])))))
        layout_ok &= ~deepspeed_piped
    refused = layout_ok & _grad_sync_refused_rows(base, grid, p)
    if refused.any():  # DeepSpeed with once-per-step reduction (predict refuses it): dropped
        examples = _either(examples, _first_words(refused, said, lambda _: _row_rule(
            "zero_framework deepspeed", grad_sync_deepspeed_error())))
        layout_ok &= ~refused
    shard = _row_shard_groups(base, grid, p, zero)  # swept, or the one value (0 at ddp rows)
    if shard is not None:  # a row the shard group cannot run is dropped, as a broken layout
        why, first = _shard_group_problems_of_rows(base, grid, shard, p, dp, zero,
                                                   hardware_nouns(profile.hardware),
                                                   rows=layout_ok, cp=cp, said=said)
        examples = _either(examples, first)
        layout_ok &= why == ""
    keep = layout_ok & batch_ok
    ignored = {name: (int((rows & keep).sum()),
                      _row_words(profile, p, tp, pp, cp, int(np.flatnonzero(rows & keep)[0])))
               for name, (rows, _) in unused.items() if name in plan.ignorable
               and (rows & keep).any()}  # a one-value flag's rows that run without it
    runs = {name: _runs(split, name, unused[name][0][keep]) for name in plan.ignorable
            if name in unused}
    # a one-value flag's rows that would run it, dropped: why every row kept may not
    unapplied = {setting: _unapplied(profile, split, name, g_max, ~rows & ~keep, checked, p, tp,
                                     pp, dp, micro, k, cp, unit)
                 for setting, (rows, _) in unused.items()
                 if setting in plan.ignorable and (~rows & ~keep).any()}
    if shard is not None:
        shard = shard[keep]
        if "shard_group" in plan.ignorable:  # a one-value group some ddp rows run without
            ignored.update(_ddp_rows_ignored(shard, p[keep],
                                             hardware_nouns(profile.hardware)))
    grid = {name: col[keep] for name, col in grid.items()}
    p, k, tp, pp, cp, micro, base_micro, zero = (
        a[keep] for a in (p, k, tp, pp, cp, micro, base_micro, zero))
    overrides = input_changes(grid, inter_nic_share(profile.hardware, base))
    if "attention_kernel" in grid:
        asked, at = np.unique(grid["attention_kernel"], return_inverse=True)
        kernels = np.array([lp.kernel_for(profile, str(k)) for k in asked])[np.ravel(at)]
        overrides["attention_efficiency"] = attention_efficiencies(
            profile.hardware.device_name, kernels,
            profile.workload.transformer is None or profile.workload.transformer.flash_attention)
    for name in ("tp_overlap", "p2p_overlap"):  # the framework's: applies where a row has
        # tp > 1 (§14), where it interleaves (§15); a one-value flag's as each row runs it
        if name in grid or name in runs:
            overrides[name] = grid[name] if name in grid else runs[name]
    if "precision" in grid:  # fp8 rows at the fp8 peak, with their casts (§13, fp8)
        overrides.update(lp.precision_inputs(profile, grid["precision"]))
    rows = lp.evaluate_rows(profile, base, p, micro, k, base_micro, tp=tp, pp=pp, zero=zero,
                            shard_group=shard, overrides=overrides, cp=cp)
    r = rows.result
    comm = r.tp_comm_s + r.cp_comm_s + r.p2p_s + r.dp_exposed_s
    outputs = {"step_time_s": r.step_time_s, "compute_s": r.compute_s, "exposed_comm_s": comm,
               "data_stall_s": r.stall_s, "straggler_s": r.straggler_s,
               "samples_per_s": r.samples_per_s, "speedup": rows.speedup,
               "efficiency": rows.efficiency, "memory_bytes": r.memory_bytes, "fits": r.fits}
    columns = {**grid, **runs}  # a one-value flag some rows run without: as each row runs it
    if "shard_group" in grid:  # the group that shards the states, as predict --json says it
        columns["shard_group"] = np.minimum(grid["shard_group"], rows.dp * rows.cp)
    elif "shard_group" in plan.ignorable:  # the one value, none on the ddp rows
        columns["shard_group"] = _shard_group_column(shard, rows.dp * rows.cp)
    columns.update(nodes=rows.nodes, micro_batch=micro, accumulation=k,
                   global_batch=rows.global_batch, dp=rows.dp, tp=rows.tp, pp=rows.pp)
    if "cp" in grid or split.cp > 1:  # context parallelism: its degree, after pp
        columns["cp"] = rows.cp
    # no comm_total_s: the layout step reports exposed time alone (predict's null)
    columns.update({name: outputs[name] for name in OUTPUT_COLUMNS if name in outputs})
    columns["bubble_s"] = r.bubble_s
    # predict --json's throughput in tokens and MFU, of the same result (no MFU column where the
    # GPU's peak is not listed: predict's null)
    columns["tokens_per_s"] = np.broadcast_to(r.tokens_per_s, r.step_time_s.shape)
    if rows.peak_known:
        columns["mfu"] = np.broadcast_to(r.mfu, r.step_time_s.shape)
    if "shard_group" in grid:
        columns[SHARD_GROUP_ASKED] = grid["shard_group"]
    ranks = rows.dp * rows.cp  # the ZeRO states shard over dp x cp, or the group asked in it
    group = np.where(zero == 0, 0, ranks if shard is None else
                     np.where(shard > 0, np.minimum(shard, ranks), ranks))
    return SweepResult(columns=columns, drops=Drops.of_rows(batch_ok, layout_ok, said, examples),
                       ignored=ignored, unapplied=unapplied, baseline=_baseline(
                           rows.one_device_fits, rows.one_device_holds_model, base_micro, group))


def _unused_settings_of_rows(grid: dict[str, np.ndarray], split, tp,
                             pp) -> dict[str, tuple[np.ndarray, str]]:
    """``layout.unused_settings`` of each row: its layout setting (``ONE_VALUE_SETTINGS``) set
    where it means nothing, with predict's rule. The setting is swept (``SCENARIO_LAYOUT_AXES``,
    whose values ``split`` holds, ``_evaluate_variants_at``; the switches ``tp_overlap`` and
    ``p2p_overlap``, a column of the grid) or a one-value flag (``split``'s). A swept value
    there is the row without it under another label, and predict refuses its scenario: the row
    is dropped as a broken layout, so the grid holds the scenarios predict accepts. A one-value
    flag (``--tp-overlap`` beside ``--tp-values 1,8``) is the setting of the rows it means
    something for: the others run without it, as predict of their scenario without the flag,
    and are counted (``SweepResult.ignored``)."""
    return unused_settings(tp, pp, split.schedule, split.virtual_stages,
                           split.sequence_parallel,
                           grid.get("tp_overlap", split.tp_overlap),
                           grid.get("p2p_overlap", split.p2p_overlap))


def _runs(split, name: str, unused: np.ndarray) -> np.ndarray:
    """The value of the one-value layout setting ``name`` (``split``'s) each row runs: its
    default where ``unused`` (schedule none, 1 virtual stage, the switches off, the sends
    overlapped), else the flag's."""
    default = {"schedule": "none", "virtual_stages": 1, "p2p_overlap": True}.get(name, False)
    return np.where(unused, default, getattr(split, name))


def _row_words(profile: Profile, p, tp, pp, cp, i: int) -> str:
    """'tp 1 x pp 1 on 8 devices' of row ``i``, in the profile's nouns."""
    return f"{_split_words(tp[i], pp[i], cp[i])} on " + nouns_for(
        profile.hardware.device_name).count(int(p[i]))


def _split_words(tp, pp, cp) -> str:
    """'tp 2 x pp 1' of a sweep's row, ' x cp 2' after where context parallelism splits it."""
    from scalesim.layout import split_words

    return split_words(None, int(tp), int(pp), int(cp) if cp > 1 else None)


def _layout_example(profile, split, schedule: str, g: int, layout_ok, p, tp, pp, dp, micro,
                    k, cp, unit: int | None = None) -> str:
    """'tp 1 x pp 2 on 8 devices: <the first rule it breaks>' for the first combination that
    breaks a layout rule ('' for none): the reason a dropped count alone does not give (the
    rule may be the interleaved schedule's, which a generic list of rules would not name)."""
    from scalesim import layout_predict as lp

    bad = np.flatnonzero(~layout_ok)
    if not bad.size:
        return ""
    i = int(bad[0])
    nouns = hardware_nouns(profile.hardware)  # 'processes' on a CPU profile
    n = int(p[i])
    where = f"{_split_words(tp[i], pp[i], cp[i])} on {n} {nouns.noun(n)}"  # '1 device'
    devices = nouns.devices
    if p[i] % (tp[i] * pp[i] * cp[i]):
        what = "tp x pp x cp" if cp[i] > 1 else "tp x pp"
        return f"{where}: {what} does not divide the {devices}"
    why = lp.first_problem(profile, dp[i], tp[i], pp[i], 0, micro[i], dp[i] * micro[i] * k[i],
                           split, schedule if pp[i] > 1 else "none", g, cp[i], unit)
    return _row_rule(where, why) if why else ""


def _unapplied(profile, split, schedule: str, g: int, dropped, checked, p, tp, pp, dp, micro, k,
               cp, unit: int | None = None) -> tuple[int, str]:
    """(how many, the first in words) of the ``dropped`` rows, those a one-value layout
    setting applies to (``SweepResult.unapplied``): where the first broke a layout rule
    (``checked`` False), '<where>: <the rule>' (``_layout_example``, ``schedule`` the pipelined
    rows'), else the row alone (dropped for its batch, its framework)."""
    first = _layout_example(profile, split, schedule, g, checked | ~dropped, p, tp, pp, dp,
                            micro, k, cp, unit)
    return int(dropped.sum()), first or _row_words(profile, p, tp, pp, cp,
                                                   int(np.flatnonzero(dropped)[0]))


def _left_out_rows(plan: SweepPlan, p, zero) -> np.ndarray:
    """The rows a left-out note names (``SweepPlan.left_out``): every row at a count the
    split or the global batch leaves out, a ZeRO row (``zero`` not ddp) at one the shard
    group leaves out (ddp rows run there without it)."""
    said = np.zeros(np.shape(p), dtype=bool)
    for rule, counts in plan.left_out.items():
        at = np.isin(p, counts)
        said |= (at & (np.asarray(zero) != DDP)) if rule == "shard_group" else at
    return said


def _first_words(rows, said, words: Callable[[int], str]) -> tuple[str, str]:
    """(``words`` of the first of ``rows``, of the first not ``said``; '' for none): a dropped
    row's example among them all and among those no left-out note names."""
    firsts = (np.flatnonzero(rows), np.flatnonzero(rows & ~np.asarray(said)))
    return tuple(words(int(f[0])) if f.size else "" for f in firsts)


def _either(found: tuple[str, str], more: tuple[str, str]) -> tuple[str, str]:
    """Each example of ``found`` (``_first_words``), else ``more``'s: the first rule's row."""
    return tuple(a or b for a, b in zip(found, more, strict=True))


def _row_rule(where: str, why: str) -> str:
    """'<where>: <why>', the first dropped row (``SweepResult.layout_example``) and the rule it
    breaks, the rule's template kept (``errors.within``): the CLI says a --scenario file's
    setting in it by the file's key (``cli.given_words``, ``cmd_sweep.dropped_note``)."""
    return within(why, f"{where}: {why}")


def iter_sweep(plan: SweepPlan, chunk_rows: int | None = None) -> Iterator[SweepResult]:
    """The plan's rows, ``chunk_rows`` (default CHUNK_ROWS) combinations at a time, in grid
    order, so memory stays that of one chunk however large the grid. Every chunk, one that
    keeps no row too: its drops are counted (``Drops``)."""
    chunk_rows = chunk_rows or CHUNK_ROWS
    for start in range(0, plan.combinations, chunk_rows):
        yield evaluate_at(plan, np.arange(start, min(start + chunk_rows, plan.combinations)))


def available_memory_bytes() -> int:
    """Memory the system can still give (Linux MemAvailable; total physical memory elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def describe_bytes(size: float) -> str:
    """'3.1 GB', '396 kB': a size in bytes for messages (decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def check_size(plan: SweepPlan) -> None:
    """Refuse a grid of more than MAX_ROWS rows, saying how big it is."""
    if plan.rows > MAX_ROWS:
        raise ScalesimError(f"the sweep has {plan.rows:,} rows ({plan.combinations:,} "
                            f"combinations, {describe_bytes(plan.memory_bytes)} as numbers), over "
                            f"the limit of {MAX_ROWS:,} rows; sweep fewer values")


def sweep(profile: Profile, base: Scenario, axes: dict[str, list]) -> SweepResult:
    """Every combination of ``axes`` values on top of ``base``, in memory.

    Evaluated in chunks of CHUNK_ROWS; a result larger than half the available memory is refused
    up front with its size (stream it instead: :func:`plan_sweep` and :func:`iter_sweep`).
    """
    plan = plan_sweep(profile, base, axes)
    check_size(plan)
    available = available_memory_bytes()
    if plan.memory_bytes > MEMORY_SHARE * available:
        raise ScalesimError(f"the sweep has {plan.rows:,} rows, {describe_bytes(plan.memory_bytes)} "
                            f"in memory, more than half of the {describe_bytes(available)} available; "
                            "stream it to a file (scalesim sweep --out) or sweep fewer values")
    chunks = list(iter_sweep(plan))
    if len(chunks) == 1:
        return chunks[0]
    kept = [c for c in chunks if c.size] or chunks[-1:]  # the rows; every chunk's drops
    columns = {name: np.concatenate([c.columns[name] for c in kept]) for name in kept[0].columns}
    return SweepResult(columns=columns, drops=sum((c.drops for c in chunks), Drops()),
                       ignored=merge_ignored(c.ignored for c in chunks),
                       unapplied=merge_ignored(c.unapplied for c in chunks),
                       baseline=merge_baseline(kept))


def _codes(values: np.ndarray, table: dict[str, int], what: str,
           said: str | None = None) -> np.ndarray:
    """Each of ``values`` as its code in ``table``; an unknown one refused naming the axis
    ``what`` (a knob) as ``said`` ('--attention-kernel-values', ``values_flag``), else as
    ``what``."""
    values = np.asarray(values)
    codes, known = np.zeros(values.shape, dtype=np.int64), np.zeros(values.shape, dtype=bool)
    for name, code in table.items():  # a few names: compared, not sorted (np.unique)
        same = values == name
        codes[same], known = code, known | same
    bad = [str(v) for v in np.unique(values[~known])]
    if bad:
        raise ScalesimError(f"{said + ': ' if said else ''}unknown {what.replace('_', ' ')} "
                            f"{bad[0]!r}; choose from {', '.join(table)}",
                            knobs=(what,))  # ``what``: the axis, a knob
    return codes
