"""scalesim predict: step time, its breakdown and scaling for a list of device counts."""

from __future__ import annotations

import argparse
import dataclasses

from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    profile_from_args,
    scenario_from_args,
)
from scalesim.device_nouns import hardware_nouns
from scalesim.errors import KNOB, ScalesimError, as_literal
from scalesim.figures import GIB_BYTES, link_GBps, sig3, throughput
from scalesim.jsonio import to_json_text
from scalesim.layout import SPLIT_HEADER, knob_refusal, split_short
from scalesim.model.sharding import STAGE0_WORDS

NAME = "predict"
HELP = "predict step time, breakdown, throughput and scaling efficiency"
EXAMPLE = """examples:
  scalesim predict --devices 1,2,4,8,16
  scalesim predict --hardware dgx-a100 --workload gpt-7b --strategy zero3 --devices 8,16,32,64
  scalesim predict --profile my-node.json --global-batch 1024 --devices 1-64 --json"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    p.add_argument("--json", action="store_true", help="print a JSON list of rows")


def _fmt_s(x: float) -> str:
    """Seconds as milliseconds, two decimals (the table pads it to its column)."""
    from scalesim.figures import fixed

    return fixed(x * 1e3, 0, 2)


def _duration(seconds: float | None) -> str:
    from scalesim.figures import duration_text

    return "-" if seconds is None else duration_text(seconds)


def hours_note(rows, goal, scenario, unit: str) -> str:
    """What the hours table's two times rest on: the training length and where it came from
    (the scenario's, else the workload's), why 'to quality' reads '-' (it needs a critical batch
    size and E_min, docs/model.md §8) and which time the cost is of (the time to train where
    both are known, as ``predict`` bills it)."""
    from scalesim.figures import number

    to_train = any(r.time_to_train_s is not None for r in rows)
    to_quality = any(r.time_to_quality_s is not None for r in rows)
    parts = []
    if to_train:
        source = "" if scenario.train_samples is not None else (
            " (the workload's; --train-samples to change)")
        parts.append(f"to train: {number(goal.train_samples)} {unit}{source}")
    else:
        parts.append("to train: give --train-samples (or --epochs with --dataset-size)")
    if not to_quality:
        parts.append("to quality: give --critical-batch and --min-samples (docs/model.md §8)")
    parts.append(f"cost is of the time to {'train' if to_train else 'quality'}")
    return "; ".join(parts)


def hsdp_words(shard_group: int, group: str) -> str:
    """'HSDP: ZeRO states sharded over 8 ranks, replicated across dp / shard group copies':
    hybrid sharding in words, ``group`` naming the data-parallel ranks ('dp'; 'devices' on the
    data-parallel path), docs/model.md §16."""
    return (f"HSDP: ZeRO states sharded over {shard_group} ranks, replicated across {group} / "
            "shard group copies")


def shard_cap_words(shard_group: int, rows, group: str, per_row: str) -> str:
    """'; capped at a row's devices: sharded over 2 ranks at 2 devices (full sharding)': what the
    rows whose data-parallel ranks number under ``shard_group`` do (each shards over all of
    them, ``Prediction.shard_group``; docs/model.md §16), ``group`` naming those ranks
    ('devices', 'dp') and ``per_row`` how a row counts them ('devices', 'dp'); '' where no row
    is capped."""
    capped = [r for r in rows if r.shard_group is not None and r.shard_group < shard_group]
    if not capped:
        return ""
    ranks = ", ".join(str(r.shard_group) for r in capped)
    at = ", ".join(str(r.devices if r.dp is None else r.dp * (r.cp or 1)) for r in capped)
    where = f"{per_row} {at}" if per_row == "dp" else f"{at} {per_row}"
    return (f"; capped at a row's {group}: sharded over {ranks} rank"
            f"{'s' if ranks != '1' else ''} at {where} (full sharding)")


# what a layout's compute rests on (the CLI's layout line and the app's report say it)
COMPUTE_PIN_NOTE = ("compute pins the matmul efficiency to the profile's curve "
                    "(docs/model.md §22)")


def layout_line(profile, scenario, rows=()) -> str:
    """'layout: tp 2 x pp 4 (1F1B), recompute full, sequence parallel on, TP overlap off, ...' of
    a transformer workload's scenario (``rows``: its predictions, whose shard groups capped at
    their dp it names; none: 'elsewhere over all of dp') (the TP overlap where tp > 1, the
    pipeline sends where the schedule is interleaved; where the pipeline's stages
    are uneven, what they hold and what runs them: ``layout_notes``)."""
    from scalesim.layout import schedule_words
    from scalesim.layout_predict import (
        layout_of,
        recompute_style_note,
        recompute_words,
        split_words,
    )

    split = layout_of(scenario)
    schedule = schedule_words(split.schedule_of(), split.virtual_stages)
    cp = split.cp if split.cp > 1 else None  # named where context parallelism splits
    return (f"layout: {split_words(None, split.tp, split.pp, cp)}"
            + (f" ({schedule})" if split.pp > 1 else "")
            + f", {recompute_words(split.recompute_of(profile.workload), split.recompute_style)}"
            + (f" ({note})" if (note := recompute_style_note(profile, scenario)) else "")
            + ", sequence parallel "
            f"{'on' if split.sequence_parallel else 'off'}"
            + (f", TP overlap {overlap_word(split.tp_overlap, scenario.overlap)}"
               if split.tp > 1 else "")
            + (f", pipeline sends {_p2p_overlap_words(split.p2p_overlap, scenario.overlap)}"
               if split.interleaved else "")
            + (f", {hsdp_layout_words(split.shard_group, rows, 'dp', 'dp', 'exceeds')}"
               if split.shard_group is not None else "")
            + f"; dp = devices / (tp x pp{' x cp' if cp else ''}); batch = "
            f"sequences per micro-batch per replica; {COMPUTE_PIN_NOTE}"
            + "".join(f"; {note}" for note in layout_notes(profile, scenario)))


def hsdp_layout_words(shard_group: int, rows, group: str, per_row: str, exceeds: str) -> str:
    """'HSDP: ZeRO states sharded over 16 ranks, replicated across dp / shard group copies,
    where dp exceeds it' and what rows whose ``group`` is smaller do (``shard_cap_words``; no
    ``rows``: 'elsewhere over all of dp'); ``exceeds`` the verb that agrees with ``group``."""
    return (f"{hsdp_words(shard_group, group)}, where {group} {exceeds} it"
            + (shard_cap_words(shard_group, rows, group, per_row) if rows
               else f" (elsewhere over all of {group})"))


def layout_notes(profile, scenario, strategy: str | None = None,
                 pipeline: str | None = None) -> list[str]:
    """What a layout line adds after its settings: the measured pipeline sends, FSDP under a
    pipeline, the pipeline's uneven stages (``pipeline_stages.layout_stage_words``); each only
    where it applies. ``strategy``, ``pipeline``: how the notes name the scenario's strategy
    and its pipeline (a page's labels; None: the CLI's 'zero3', 'pp 2 x 2 virtual stages')."""
    from scalesim.layout_predict import layout_of, pipeline_fsdp_note
    from scalesim.pipeline_stages import layout_stage_words
    from scalesim.plan import measured_p2p

    split = layout_of(scenario)
    p2p = measured_p2p(profile) if split.pp > 1 else None
    notes = [p2p.note if p2p else "", pipeline_fsdp_note(scenario, strategy),
             layout_stage_words(profile, split, pipeline)]
    return [note for note in notes if note]


def overlap_word(asked: bool, overlap: bool, overlap_off: str = "overlap off") -> str:
    """'on', 'off', or 'ignored (overlap off)' of an overlap the layout asks (TP's, the pipeline
    sends') where turning overlap off drops it (``overlap_off``: how that control is named; a
    note says why)."""
    return (f"ignored ({overlap_off})" if asked and not overlap else
            "on" if asked else "off")


def _p2p_overlap_words(p2p_overlap: bool, overlap: bool) -> str:
    """How an interleaved layout's steady-state sends run: 'overlapped (--p2p-overlap on)',
    'blocking (--p2p-overlap off)', or 'blocking (overlap off)' where --no-overlap exposes them
    (docs/model.md §15)."""
    if not overlap:
        return "blocking (overlap off)"
    return "overlapped (--p2p-overlap on)" if p2p_overlap else "blocking (--p2p-overlap off)"


def intra_words(link) -> str:
    """'120 GB/s (2 GPUs 20, 4 GPUs 80)': an intra-server level's whole-server busbw and what
    fewer of its GPUs get where that is less (``LinkLevel.subset_busbw_shares``); '370 GB/s'
    where every count keeps it."""
    fewer = [f"{gpus} GPUs {sig3(link.busbw_GBps * share)}" for gpus, share in link.subset_shares
             if share < 1]
    return link_GBps(link.busbw_GBps) + (f" ({', '.join(fewer)})" if fewer else "")


NOT_RUNNABLE = "does not fit"  # a row's time and money where it does not fit in memory


def runnable_fields(row, memory_note: str | None = None) -> dict:
    """A prediction row for ``--json``: no time or money where it does not fit in memory (it
    cannot run; the text says 'does not fit' there, as decide does), its step model as is, and
    ``memory_note``, the row's near-full note (``json_rows``; null where none)."""
    data = row.model_dump()
    if not row.fits:
        data.update(time_to_quality_s=None, time_to_train_s=None, cost_usd=None)
    return {**data, "memory_note": memory_note}


def json_rows(profile, scenario, rows) -> list[dict]:
    """predict's ``--json``: each row (``runnable_fields``) with its ``memory_note``, the text's
    near-full note said of that row alone (``memory_margin.rows_note``: 'the row on 16 devices
    leaves ...'), null where it leaves 5% or more free or a margin was asked. A list of rows, as
    before; each row carries its own note, as plan's ``by_count`` entries do."""
    from scalesim.memory_margin import rows_note

    words = hardware_nouns(profile.hardware)
    memory = profile.hardware.device_memory_bytes
    return [runnable_fields(r, rows_note([r], memory, scenario.memory_margin, words))
            for r in rows]


def hardware_line(hw) -> str:
    """'hardware: dgx-h100 (H100-SXM5 80GB, 8 per server; whole server's busbw: intra 370 GB/s,
    inter 384 GB/s over its 8 NICs (48 each))' (predict's second line, plan's first; a DGX-1:
    'intra 120 GB/s (2 GPUs 20, 4 GPUs 80)'): both figures bus bandwidth, not line rate, and
    both a whole server's (a GB200 NVL72's rack: the ring over its 72 GPUs, and its 72 NICs
    together), as the model reads them (docs/model.md §2, §18)."""
    server = hardware_nouns(hw).server  # 'host' for a CPU calibration's processes
    return (f"hardware: {hw.name} ({hw.device_name}, {hw.devices_per_node} per {server}; whole "
            f"{server}'s busbw: intra {intra_words(hw.intra_node)}, inter "
            f"{link_GBps(hw.inter_node.busbw_GBps)}{nics_words(hw.inter_node)})")


def nics_words(link) -> str:
    """' over its 8 NICs (48 each)': the NICs an inter-server level's busbw (GB/s) is summed
    over, and each one's share; ' over its NIC' for one; '' where the count is not known (a
    calibrated or fitted level)."""
    nics = link.nics_per_node
    if not nics:
        return ""
    return (" over its NIC" if nics == 1
            else f" over its {nics} NICs ({sig3(link.busbw_GBps / nics)} each)")


def given_links_words(scenario) -> str:
    """'; used instead: intra 100 GB/s, inter 48 GB/s busbw (--intra-busbw, --inter-busbw)'
    where the scenario overrides the hardware's links, so the line above them does not read as
    the figures used; '' otherwise."""
    given = [(f"{level} {link_GBps(v)}", flag) for level, v, flag in (
        ("intra", scenario.intra_busbw_GBps, "--intra-busbw"),
        ("inter", scenario.inter_busbw_GBps, "--inter-busbw")) if v is not None]
    if not given:
        return ""
    return (f"; used instead: {', '.join(w for w, _ in given)} busbw "
            f"({', '.join(f for _, f in given)})")


def _fit_hints(profile, scenario, unfit) -> str:
    """What may make rows that do not fit fit: stronger sharding, a smaller batch where it is above
    one, and for a transformer workload a wider split, full recompute or the planner (else more
    devices, 'processes' on a CPU profile, per model replica). Where calibration's ceiling, not
    memory, is why every row does not fit (``decision.ceiling_words``), only a smaller batch or
    a split helps: the ceiling was measured at the profile's own sharding and recompute."""
    from scalesim.decision import ceiling_words

    ceiling = all(ceiling_words(r, profile) for r in unfit)
    hints = [] if scenario.strategy == "zero3" or ceiling else ["--strategy zero3"]
    if any(r.micro_batch > 1 for r in unfit):
        # --global-batch fixes the micro-batch through the accumulation (--batch is refused
        # beside it): more micro-steps a step make each smaller
        batch = ("more --accumulation" if scenario.global_batch is not None else
                 f"a --batch below {profile.compute.oom_micro_batch} (calibration ran out of "
                 "memory from it on)" if ceiling else "a smaller --batch")
        hints.append(batch)
    if profile.workload.transformer is not None:
        from scalesim.layout_predict import layout_of

        hints.append("a larger --tp or --pp")
        if layout_of(scenario).recompute_of(profile.workload) != "full" and not ceiling:
            hints.append("--recompute full")
        hints.append("scalesim plan with the same --workload and --hardware or --profile (it "
                     "ranks the layouts that fit)")
    if scenario.memory_margin and not ceiling:
        hints.insert(0, f"a --memory-margin below {scenario.memory_margin:g}")
    return ", ".join(hints[:-1]) + " or " + hints[-1] if len(hints) > 1 else (
        hints[0] if hints else f"more {hardware_nouns(profile.hardware).devices} per model replica")


def render_table(profile, scenario, rows, left_out: list[str] | None = None,
                 unused: list[str] | None = None) -> str:
    """predict's text: its header lines, the table of ``rows`` and its notes; ``left_out``:
    the notes of the device counts asked that a one-value split, global batch or shard group
    cannot run (``layout_predict.runnable_counts``); ``unused``: ``unused_setting_notes`` as
    the caller says them (None: by their flags)."""
    from scalesim.cli.options import condition_words
    from scalesim.figures import amount, count_columns, fixed, number, speedup
    from scalesim.knee import knee_of_predictions, why_no_knee
    from scalesim.layout_predict import (
        attention_kernel_note,
        layout_of,
        precision_note,
        recompute_style_note,
    )
    from scalesim.memory_margin import rows_note
    from scalesim.model.zero_exchange import framework_label
    from scalesim.predict import (
        STALL_NOT_MODELLED,
        above_linear_note,
        cores_shared_note,
        hybrid_sharded,
        one_device_note,
        server_use_words,
        slow_device_note,
    )
    from scalesim.remedies import DATA_STALL_SHARE, data_stall_share
    from scalesim.training_time import partial_batch_note, resolve_goal, zero_price_note

    unit = profile.workload.sample_unit
    sync = scenario.grad_sync
    hybrid = any(hybrid_sharded(r) for r in rows)  # HSDP (§16)
    how = framework_label(scenario.strategy, scenario.zero_framework, sync, hybrid,
                          layout_of(scenario).pp > 1,  # under a pipeline: FSDP2's (§16)
                          layout_of(scenario).tp > 1)  # DDP beside tp: Megatron-Core's (§4)
    lines = [
        f"profile: {profile.name}",
        hardware_line(profile.hardware) + given_links_words(scenario),
        f"scenario: {scenario.strategy}"
        + (f" ({how})" if scenario.strategy != "ddp" else "")
        + f", accumulation {scenario.accumulation}, "
        f"overlap {'on' if scenario.overlap else 'off'}, algorithm {scenario.algorithm}, "
        + ("weak scaling" if scenario.global_batch is None
           else f"strong scaling (global batch {scenario.global_batch})")
        + "".join(f", {part}" for part in condition_words(
            True, scenario.slow_device, scenario.slow_factor, scenario.straggler_cv,
            hardware_nouns(profile.hardware).device)),
    ]
    if scenario.memory_margin:
        lines[-1] += (f", {100 * scenario.memory_margin:g}% of each "
                      f"{hardware_nouns(profile.hardware).device}'s memory kept free")
    if used := server_use_words(profile.hardware, scenario):
        lines[-1] += f"; {used}"
    if shared := cores_shared_note(profile, scenario):  # more processes than timed or cores
        lines.append(f"note: {shared}")
    split = rows and rows[0].dp is not None
    # no input pipeline: the stall column is left out and one note says why (a column of
    # '-' would repeat on every row what the note says once; a 0 would be made up)
    stall = any(r.data_stall_s is not None for r in rows)
    if split:
        lines.append(layout_line(profile, scenario, rows))
    else:
        if (shard := layout_of(scenario).shard_group) is not None:  # data parallel: every device
            devices = hardware_nouns(profile.hardware).devices  # 'processes' on CPU
            lines.append(f"sharding: {hsdp_words(shard, devices)}, where the {devices} exceed "
                         f"it{shard_cap_words(shard, rows, devices, devices)} (docs/model.md §16)")
        if note := recompute_style_note(profile, scenario):
            lines.append(f"note: {note}")
    if note := attention_kernel_note(profile, scenario):  # its words, or ignored (no shape)
        lines.append(note if split else f"note: {note}")
    if note := precision_note(profile, scenario):  # its words, or ignored (no shape)
        lines.append(note if split else f"note: {note}")
    words = hardware_nouns(profile.hardware)  # 'processes', 'host' on a CPU calibration
    # the count columns: as wide as their header ('processes' on a CPU calibration)
    (dev_h, dev_w), (node_h, node_w) = count_columns(words)
    # (header, least width, cell of a row): a column is as wide as its widest cell, so a
    # header stays over its values ('1296040.00' ms of a pipeline that idles)
    columns = [(dev_h, dev_w, lambda r: str(r.devices)), (node_h, node_w, lambda r: str(r.nodes))]
    if split:
        cp = any(r.cp > 1 for r in rows)  # a fourth degree where context parallelism splits
        columns.append((SPLIT_HEADER + (" x cp" if cp else ""), 12,
                        lambda r: split_short(r.dp, r.tp, r.pp, "compact", r.cp if cp else None)))
    columns += [("batch", 6, lambda r: str(r.micro_batch)),
                ("step ms", 9, lambda r: _fmt_s(r.step_time_s)),
                ("compute", 9, lambda r: _fmt_s(r.compute_s)),
                ("exp.comm", 9, lambda r: _fmt_s(r.exposed_comm_s))]
    if split or any(r.bubble_s for r in rows):  # a layout's, or a pipelined replica's
        columns.append(("bubble", 9, lambda r: _fmt_s(r.bubble_s)))
    if stall:
        columns.append(("stall", 9, lambda r: _fmt_s(r.data_stall_s)))
    columns += [("straggl", 9, lambda r: _fmt_s(r.straggler_s)),
                (unit.split()[0][:10] + "/s", 13, lambda r: throughput(r.samples_per_s)),
                ("speedup", 8, lambda r: speedup(r.speedup)),
                ("eff", 6, lambda r: f"{fixed(100 * r.efficiency, 0, 1)}%"),
                ("mem GiB", 8, lambda r: fixed(r.memory_bytes / GIB_BYTES, 0, 1)),
                ("fits", 4, lambda r: "yes" if r.fits else "NO")]
    cells = [[cell(r) for _, _, cell in columns] for r in rows]
    widths = [max(least, len(head), *(len(c[i]) for c in cells))
              for i, (head, least, _) in enumerate(columns)]
    lines += ["", *(" ".join(f"{text:>{w}}" for text, w in zip(row, widths, strict=True))
                    for row in ([head for head, _, _ in columns], *cells))]
    if any(r.time_to_train_s is not None or r.time_to_quality_s is not None for r in rows):
        lines.append("")
        # each column as wide as its widest cell, so a header stays over its values
        # ('7,890,060 years', a cost of '5.53e20')
        cells = [(str(r.devices), _duration(r.time_to_quality_s), _duration(r.time_to_train_s),
                  str(r.billed_devices), "-" if r.cost_usd is None else amount(r.cost_usd))
                 if r.fits else (str(r.devices), *[NOT_RUNNABLE] * 2, str(r.billed_devices),
                                 NOT_RUNNABLE)
                 for r in rows]
        header = (dev_h, "to quality", "to train", "billed", "cost USD")
        widths = [max(least, len(header[i]), *(len(c[i]) for c in cells))
                  for i, least in enumerate((dev_w, 12, 12, 7, 12))]
        lines += [" ".join(f"{text:>{w}}" for text, w in zip(row, widths, strict=True))
                  for row in (header, *cells)]
        goal = resolve_goal(profile, scenario)
        if goal.price_per_device_hour is not None:
            billing = goal.billing_said(profile.hardware.device_name,
                                        hardware_nouns(profile.hardware))
            # the price as given: exactly, thousands-separated ('$1,000,000', not '$1e+06';
            # '$4.123456', not '$4.12346')
            lines.append(f"cost: billed {words.devices} x hours x ${number(goal.price_per_device_hour)} per "
                         f"{words.device}-hour, {billing}; set with --instance-sizes")
        else:  # a preset without a list price (dgx-h200, the PCIe servers), a calibration
            lines.append(f"cost: no price known (the hardware {profile.hardware.name} lists "
                         f"none): give --price USD per {words.device}-hour")
        if note := hours_note(rows, goal, scenario, unit):
            lines.append(f"note: {note}")
        if note := zero_price_note(goal):
            lines.append(f"note: {note}")
        batches = [r.global_batch for r in rows]
        if note := partial_batch_note(goal, batches, batches):  # each row at its own batch
            lines.append(f"note: {note}")
    knee = knee_of_predictions(rows)
    lines.append("")
    if knee is None:
        lines.append(f"knee: none ({why_no_knee(rows, 'rows', words)})")
    else:
        before = next(r for r in rows if r.devices == knee.devices_before)
        lines.append(f"knee: {words.count_change(knee.devices_before, knee.devices_after)}, "
                     "efficiency "
                     f"{before.efficiency:.1%} -> {rows[knee.index].efficiency:.1%}"
                     f" (-{knee.efficiency_drop * 100:.1f} points): {knee.label_in(words)}")
    # the counts asked that the split, global batch or shard group cannot run, and why
    lines += [f"note: {note}" for note in left_out or ()]
    if note := above_linear_note(rows, words):
        lines.append(f"note: {note}")
    if unfit := [r for r in rows if not r.fits]:
        lines.append(f"warning: rows marked NO do not fit in {words.memory}: not runnable, their "
                     f"numbers are not a plan; try {_fit_hints(profile, scenario, unfit)}")
    if note := rows_note(rows, profile.hardware.device_memory_bytes, scenario.memory_margin,
                         words):  # nearly full, no margin asked
        lines.append(f"note: {note}")
    stalled = [r for r in rows if data_stall_share(r) >= DATA_STALL_SHARE]
    if stalled:
        r = stalled[0]
        lines.append(f"warning: data stall: {data_stall_share(r):.0%} of each step at "
                     f"{words.count(r.devices)} waits for input (lost at one {words.device} "
                     "too, so efficiency cannot show it); fix the input pipeline first")
    if split:  # the first row whose pipeline bubble is a large share of its step
        from scalesim.layout_predict import layout_of
        from scalesim.pipeline_bubble import bubble_note

        schedule = layout_of(scenario).schedule_of()
        strong = scenario.global_batch is not None
        if note := next((n for r in rows if (n := bubble_note(r, strong, schedule,
                                                                 words.devices))), None):
            lines.append(f"note: {note}")
    if not stall:
        lines.append(f"note: {STALL_NOT_MODELLED}")  # and no stall column
    if note := one_device_note(rows, words):  # the speedup and eff columns' baseline
        lines.append(f"note: {note}")
    if note := slow_device_note(scenario.slow_device, [r.devices for r in rows], nouns=words):
        lines.append(f"note: {note}")
    # the settings that change no number, as the caller says them (``run``: as given); None:
    # by their flags
    lines += [f"note: {note}" for note in (unused_setting_notes(scenario) if unused is None
                                           else unused)]
    lines += [f"note: {note}" for note in unmeasured_link_notes(
        profile, inter=any(r.nodes > 1 for r in rows) and scenario.inter_busbw_GBps is None,
        intra=any(r.devices > r.nodes for r in rows) and scenario.intra_busbw_GBps is None)]
    for note in profile.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def unused_setting_notes(scenario, values_named: bool = True) -> list[str]:
    """The scenario's flags that change no number of it, each in one line: --zero-framework
    with ddp, --grad-sync once-per-step where every step reduces once anyway
    (``sharding.grad_sync_unused``), --tp-overlap with --no-overlap. ``values_named`` False:
    words that do not name the scenario's strategy where two strategies give the same reason
    (a sweep's rows, ``cmd_sweep.sweep_notes``)."""
    from scalesim.layout import TP_OVERLAP_UNDER_NO_OVERLAP
    from scalesim.model.sharding import grad_sync_unused

    # each a template (``layout.knob_refusal``): a --scenario file's setting said by its key,
    # the file first, where the caller says it as given (``run``, ``given_words``)
    out = []
    if scenario.layout is not None and scenario.layout.tp_overlap and not scenario.overlap:
        out.append(knob_refusal(f"{KNOB.tp_overlap} ignored: "
                                + as_literal(TP_OVERLAP_UNDER_NO_OVERLAP), ("tp_overlap",)))
    if scenario.strategy == "ddp" and scenario.zero_framework != "fsdp":  # fsdp: the default
        # not ignored: DeepSpeed's engine at stage 0 runs its own all-reduce and optimizer step
        # (docs/model.md §4, §1), whose numbers differ from PyTorch DDP's
        out.append(knob_refusal(f"{KNOB.zero_framework} {scenario.zero_framework} with "
                                f"strategy ddp is {STAGE0_WORDS}; give {KNOB.strategy} zero1, "
                                "zero2 or zero3 to shard", ("zero_framework", "strategy")))
    if why := grad_sync_unused(scenario.strategy, scenario.accumulation, scenario.grad_sync,
                               values_named):
        out.append(knob_refusal(f"{KNOB.grad_sync} {scenario.grad_sync} ignored: "
                                + as_literal(why), ("grad_sync",)))
    return out


def scenario_notes(profile, scenario) -> list[str]:
    """What predict's header and notes say of the scenario's flags, for the commands that show
    no such header (decide, goal): the GPUs per server other than the hardware's
    (``predict.server_use_words``), the attention kernel (``layout_predict.attention_kernel_note``:
    what it does, the kernel the profile's timings ran or a swap for it, or ignored by a
    parameter-count workload), the precision (``precision_note``: ignored by it, else what fp8
    does), a recompute style the scenario does not run (``recompute_style_note``) and
    ``unused_setting_notes``."""
    from scalesim.layout_predict import (
        attention_kernel_note,
        precision_note,
        recompute_style_note,
    )
    from scalesim.predict import cores_shared_note, server_use_words

    out = [used] if (used := server_use_words(profile.hardware, scenario)) else []
    out += [shared] if (shared := cores_shared_note(profile, scenario)) else []
    out += [n for n in (attention_kernel_note(profile, scenario),  # what the answer ran
                        precision_note(profile, scenario),
                        recompute_style_note(profile, scenario)) if n]
    return out + unused_setting_notes(scenario)


def notes_before(profile, scenario, counts, of: str) -> list[str]:
    """The notes decide and goal put before their own: ``scenario_notes``, then the
    slow-device note (``predict.slow_device_note``) of ``counts``, which ``of`` names (decide's
    count, goal's --max-devices)."""
    from scalesim.predict import slow_device_note

    said = scenario_notes(profile, scenario)  # as predict says them
    if note := slow_device_note(scenario.slow_device, counts, of,
                                hardware_nouns(profile.hardware)):
        said.append(note)
    return said


def print_answer(answer, said: list[str], as_json: bool, render, what: str) -> int:
    """Print decide's card or goal's answer (a dataclass with ``notes``, ``to_dict``) with
    ``said`` (``notes_before``) before its own notes: JSON with --json (``what`` names it in an
    error), else ``render``'s text; returns 0, the command's exit status."""
    if said:
        answer = dataclasses.replace(answer, notes=[*said, *answer.notes])
    print(to_json_text(answer.to_dict(), what=what) if as_json else render(answer))
    return 0


def unmeasured_link_notes(profile, inter: bool, intra: bool) -> list[str]:
    """A note per link level the profile did not measure (``profiles.unmeasured_links``) that
    the rows use: ``inter`` (a row on several servers) and ``intra`` (several devices of one),
    each where no --inter/--intra-busbw replaced it. Those rows rest on a preset's numbers,
    which the table does not show (predict, sweep, plan)."""
    from scalesim.profiles import unmeasured_links, unmeasured_origin

    words = hardware_nouns(profile.hardware)
    used = {"inter_node": (inter, f"several {words.servers}", "--inter-busbw"),
            "intra_node": (intra, f"several {words.devices} of a {words.server}",
                           "--intra-busbw")}
    out = []
    for level, link in unmeasured_links(profile).items():
        if level in used and used[level][0]:
            origin = unmeasured_origin(link)
            out.append(f"{words.link(level)} not measured{' ' if origin else ''}{origin}; "
                       f"the rows on "
                       f"{used[level][1]} use those numbers: measure it or give "
                       f"{used[level][2]}")
    return out


def run(args: argparse.Namespace) -> int:
    import sys

    from scalesim.cli.given_words import in_given_words
    from scalesim.layout_predict import runnable_counts
    from scalesim.predict import predict
    from scalesim.training_time import TRAINING_LENGTH_KNOBS

    scenario = scenario_from_args(args)
    profile = profile_from_args(args, scenario)
    scenario, left_out = runnable_counts(profile, scenario)  # as sweep drops their rows
    # each note a template (``counts_left_out``): a --scenario file's setting said by its key,
    # the file first, as sweep's notes (``given_words``); a flag's by its flag, as before
    left_out = [in_given_words(note, args) for note in left_out]
    rows = predict(profile, scenario)
    if scenario.price_per_device_hour is not None and all(r.cost_usd is None for r in rows):
        # the flag's, or else the --scenario file's (named as the file names it)
        price = ("--price" if args.price is not None else
                 f"{args.scenario}: price_per_device_hour {scenario.price_per_device_hour:g}")
        raise ScalesimError(f"{price} needs a training length (--train-samples, or --epochs with "
                            "--dataset-size) or a quality target (--critical-batch with "
                            "--min-samples) to price",
                            knobs=("price_per_device_hour", *TRAINING_LENGTH_KNOBS))
    given = [f for f, v in (("--critical-batch", args.critical_batch),
                            ("--min-samples", args.min_samples)) if v is not None]
    if given and all(r.time_to_quality_s is None for r in rows):
        # predict uses B_noise and E_min only for the time to quality (docs/model.md §8); its
        # time to train is train_samples / throughput (§9), so one alone would change nothing
        raise ScalesimError(
            f"{' and '.join(given)} given, but --critical-batch and --min-samples go together: "
            "predict uses them only for the time to quality (its time to train takes no "
            "large-batch penalty; decide and goal charge one with --critical-batch and "
            "--train-samples); give both, or drop " + ("it" if len(given) == 1 else "them"),
            knobs=("critical_batch_size", "min_samples_to_quality"))
    if args.json:
        print(to_json_text(json_rows(profile, scenario, rows), what="the prediction"))
        for note in left_out:  # stdout holds the rows only, as sweep's notes go to stderr
            print(f"note: {note}", file=sys.stderr)
    else:
        # a --scenario file's setting that changes no number said by its key, the file first
        # (``given_words``), as the left-out notes
        unused = [in_given_words(note, args) for note in unused_setting_notes(scenario)]
        print(render_table(profile, scenario, rows, left_out, unused))
    return 0
