"""scalesim plan: search every parallel layout of a transformer and rank those that fit."""

from __future__ import annotations

import argparse

from scalesim import presets
from scalesim.attention_kernel import VENDOR_KERNEL
from scalesim.bounds import flag_list_type, flag_type
from scalesim.cli.options import (
    add_algorithm_argument,
    add_attention_kernel_argument,
    add_bucket_argument,
    add_condition_arguments,
    add_gpus_per_node_argument,
    add_grad_sync_argument,
    add_instance_sizes_argument,
    add_link_arguments,
    add_loader_workers_argument,
    add_memory_margin_argument,
    add_p2p_overlap_argument,
    add_precision_argument,
    add_recompute_style_argument,
    add_seq_len_argument,
    add_tp_overlap_argument,
    add_zero_framework_argument,
    p2p_overlap_of,
    positive_int,
)
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import ScalesimError, file_path
from scalesim.figures import GIB_BYTES, throughput
from scalesim.precision import DEFAULT_PRECISION, FP8, FP8_WORDS

NAME = "plan"
DEFAULT_WORKLOAD = "llama3-8b"  # without --workload, and no model of a profile's to plan
HELP = "search every dp x tp x pp / ZeRO / micro-batch / schedule / recompute layout and rank them"
# flags of predict, decide and goal that plan has no use for, with why (cli.main says it)
ABSENT_FLAGS = {
    flag: f"plan has no {flag}: it ranks layouts by throughput or by billed device-hours per "
    "sample (--rank cost), which a price or a budget does not reorder; predict, decide and goal "
    "price a run in US dollars"
    for flag in ("--price", "--budget")
}
# predict's layout flags: plan searches each of these itself (``plan.plan``'s grid)
ABSENT_FLAGS.update({
    flag: f"plan has no {flag}: it searches {what} and ranks the layouts; predict takes one "
    f"value ({flag})"
    for flag, what in (
        ("--strategy", "every ZeRO stage (ddp, zero1-3)"),
        ("--batch", "every micro-batch that divides --global-batch"),
        ("--accumulation", "every accumulation that makes --global-batch"),
        ("--tp", "every tensor-parallel degree"),
        ("--pp", "every pipeline depth"),
        ("--schedule", "every pipeline schedule"),
        ("--virtual-stages", "every interleaved schedule's virtual stages"),
        ("--recompute", "none, selective and full recompute (--recompute-style says how "
         "your framework reruns it)"),
        ("--sequence-parallel", "with and without sequence parallelism"),
        ("--shard-group", "full sharding and every hybrid shard group"),
    )
})
EXAMPLE = """examples:
  scalesim plan --workload llama3-70b --hardware dgx-h100 --devices 64,128,256 --global-batch 1024
  scalesim plan --workload gpt-145.6b --hardware dgx-a100 --devices 1-4096 --global-batch 2304 --json
  scalesim plan --workload my-model.json --devices 512 --global-batch 2048 --rank cost --top 20
  scalesim plan --workload gpt-1.7b --profile my-node.json --devices 8,16 --global-batch 512
  scalesim plan --profile my-gpt.json --devices 8 --global-batch 64
  scalesim plan --profile my-one-gpu.json --gpus-per-node 2 --devices 2 --global-batch 32
  scalesim plan --workload llama3-70b --devices 64 --global-batch 512 --recompute-style early-stop
  scalesim plan --workload gpt-1.7b --hardware dgx-a100 --devices 4 --global-batch 4 --no-overlap
  scalesim plan --devices 16 --global-batch 128 --zero-framework deepspeed --slow-device 3 --slow-factor 1.3

--workload is a transformer preset (scalesim presets) or a workload JSON with a 'transformer'
shape (scalesim schema workload); with --profile and no --workload, the transformer the
profile's compute curve timed (calibrate records it), on its measured curve. Without
--profile, a workload that predict prices from a published run (bert-large: NVIDIA DLE's) is
planned on that run, each layout pinned as predict pins it; else the sustained matmul
efficiency defaults to the median that the published model-parallel runs pin
(docs/validation.md); give --efficiency from a calibration.
Layouts are placed as Megatron/torchtitan do (tp innermost in a server, pp outermost).
--recompute-style says how your framework's full (or selective) recompute reruns the forward,
--zero-framework how it runs ZeRO and --attention-kernel which fused attention it runs
(properties of the framework, applied to every layout, not searched). --no-overlap,
--straggler-cv and --slow-device/--slow-factor rank every layout under those conditions, as
predict predicts them (a slow rank slows its tensor group and pipeline stage).
--loader-workers sets the DataLoader workers of a --profile's measured input pipeline, as
predict's (default: its best count); that supply feeds every layout, for the profile's own
model and for any other (--workload, --efficiency, --precision fp8), as predict reads it."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", "--model", dest="workload", metavar="PRESET|FILE",
                   help="transformer preset or workload JSON with a transformer shape (default: "
                   f"with --profile the transformer it timed where it records one, else "
                   f"{DEFAULT_WORKLOAD}; --model is its older name)")
    p.add_argument("--hardware", metavar="PRESET|FILE",
                   help="hardware preset or JSON file (default "
                   f"{presets.DEFAULT_HARDWARE}, every command's default)")
    p.add_argument("--profile", metavar="FILE", type=file_path,
                   help="calibration profile: its hardware and links, and the matmul efficiency "
                   "and memory bandwidth its block calibration fitted (instead of --hardware)")
    p.add_argument("--devices", type=flag_list_type("devices"), default=[8, 16, 32, 64],
                   help="device counts: 64,128 or a doubling range 8-1024 (default 8,16,32,64)")
    add_gpus_per_node_argument(p, help="devices (GPUs, or CPU processes) per server/host "
                               "(default: the hardware's or the "
                               "profile's), on its links: e.g. 2 to plan tp 2 on a calibration "
                               "of one GPU per server; fewer than a server's GPUs reach their "
                               "share of its NICs, the server billed whole, as in predict")
    p.add_argument("--global-batch", type=flag_type("global_batch"), required=True,
                   help="sequences per optimizer step, whole job")
    add_seq_len_argument(p, help="tokens per sequence: plan the transformer at that sequence "
                         "length instead of its own (--profile's measured curve scaled to it)")
    p.add_argument("--efficiency", type=flag_type("matmul_efficiency"),
                   help="sustained share of the datasheet peak for large matmuls (default: a "
                   "published run of the workload's, as predict prices it, else the median "
                   "pinned by the published model-parallel runs)")
    add_precision_argument(p)
    p.add_argument("--cp", type=flag_list_type("devices_per_node"), default=[1],
                   help="context-parallel degrees to try, e.g. 1,2,4 (default 1)")
    add_tp_overlap_argument(p)
    add_p2p_overlap_argument(p)
    add_attention_kernel_argument(p)
    add_recompute_style_argument(p)
    add_zero_framework_argument(p)
    add_grad_sync_argument(p)
    conditions = p.add_argument_group("the run's conditions (as predict's)")
    add_condition_arguments(conditions)
    add_algorithm_argument(conditions)
    add_bucket_argument(conditions)
    add_link_arguments(conditions)
    add_loader_workers_argument(conditions)
    add_memory_margin_argument(conditions)
    p.add_argument("--rank", choices=["throughput", "cost"], default="throughput",
                   help="throughput (samples/s) or cost (billed device-hours per sample: whole "
                   "instances, --instance-sizes)")
    add_instance_sizes_argument(p, "--rank cost bills a server's devices as the smallest shape "
                                "holding them")
    p.add_argument("--top", type=positive_int, default=10, help="layouts to list (default 10)")
    p.add_argument("--all", action="store_true", help="also list layouts that do not fit")
    p.add_argument("--json", action="store_true",
                   help="print the plan as JSON: an object of the ranked layouts (layouts) and "
                   "the best on each device count asked (by_count)")


def recompute_style_line(style: str) -> str:
    """The plan's recompute assumption in words (``layout.RECOMPUTE_STYLE_LABELS``), with the
    flag that changes it."""
    from scalesim.layout import RECOMPUTE_STYLE_LABELS
    from scalesim.layout_predict import STYLE_RECOMPUTE

    others = " or ".join(name for name in RECOMPUTE_STYLE_LABELS if name != style)
    return (f"{STYLE_RECOMPUTE.get(style, 'full')} recompute: {RECOMPUTE_STYLE_LABELS[style]}; "
            f"for another style give --recompute-style {others}")


def measured_jitter_words(cv: float) -> str:
    """The profile's measured step-time jitter as the 'ranked with' line says it: 3 significant
    digits (a measurement's, not '0.161006') and what the abbreviation is and how to change it."""
    return (f"jitter cv {cv:.3g} per micro-step (the profile's measured step-time coefficient "
            "of variation; --straggler-cv to change)")


def conditions_line(args: argparse.Namespace, jitter_cv: float, used: str | None = None,
                    nouns: Nouns = GPU_NOUNS) -> str:
    """'ranked with: overlap off (...), device 3 computes 1.5x slower, jitter cv 0.05 per
    micro-step' for the conditions given (``options.condition_words``; ``jitter_cv`` the one
    used: --straggler-cv or the profile's measured jitter; ``nouns`` the hardware's, 'process 3'
    on CPU); '' for none."""
    from scalesim.bounds import KNOB_BY_FIELD
    from scalesim.cli.options import condition_words, links_from_args
    from scalesim.figures import count_list

    d = nouns.device
    given = args.straggler_cv is not None  # a value typed is echoed as typed; a measured one
    parts = condition_words(not args.no_overlap, args.slow_device, args.slow_factor,
                            jitter_cv if given else None, d)
    if jitter_cv and not given:
        parts.append(measured_jitter_words(jitter_cv))
    if args.slow_device is not None and (
            without := [n for n in args.devices if n <= args.slow_device]):
        parts.append(f"no slow {d} at {count_list(without)} {nouns.devices} ({d} "
                     f"{args.slow_device} is not among them)")
    if args.gpus_per_node is not None:  # used: other than a server's (predict.server_use_words)
        parts.insert(0, used or f"{args.gpus_per_node} {nouns.gpus} per {nouns.server} (--gpus-per-node)")
    if args.zero_framework == "deepspeed":
        parts.insert(0, "ZeRO by DeepSpeed (stage 1-3 with its bucket defaults)")
    if args.grad_sync == "once-per-step":
        parts.insert(0, "ZeRO-2/3 gradients reduced once per step (FSDP no_sync: full "
                     "gradients held)")
    if args.tp_overlap:
        from scalesim.layout import TP_OVERLAP_UNDER_NO_OVERLAP

        parts.insert(0, "tensor-parallel collectives overlapped with the matmuls where tp > 1 "
                     "(--tp-overlap)" if not args.no_overlap else
                     f"--tp-overlap ignored: {TP_OVERLAP_UNDER_NO_OVERLAP}")
    if args.p2p_overlap == "off":
        parts.insert(0, "the interleaved layouts' pipeline sends blocking (--p2p-overlap off)")
    if args.algorithm is not None:
        parts.append(f"all-reduce {args.algorithm} (--algorithm)")
    if args.bucket_mib is not None:
        parts.append(f"DDP buckets of {args.bucket_mib:g} MiB (--bucket-mib)")
    if args.memory_margin:
        parts.append(f"{100 * args.memory_margin:g}% of each {d}'s memory kept free "
                     f"(--memory-margin {args.memory_margin:g})")
    parts += [f"{KNOB_BY_FIELD[field].flag} {value:g}"
              for field, value in links_from_args(args).items()]
    return "ranked with: " + ", ".join(parts) if parts else ""


def _header(words: Nouns, last: str, width: int = 3) -> str:
    """The column names of the plan's table (and of its best on each count), ``last`` the
    last column's, ``width`` the rank column's."""
    return (f"{'#':>{width}} {words.column:>5} {'dp':>4} {'tp':>3} {'pp':>3} {'cp':>3} {'zero':>4} "
            f"{'shard':>5} {'mb':>3} {'acc':>4} {'schedule':<14} {'recomp':<9} {'sp':<3} "
            f"{'step s':>8} {'tokens/s':>11} {'MFU':>6} {'GiB':>6} {'fits':<4}  {last}")


# the plan's note where the device has no datasheet peak (``plan.Setting.peak_known``)
NO_MFU = "no datasheet peak for this device: no MFU (-)"


def _mfu_cell(mfu: float | None) -> str:
    """The MFU column's cell: '22.0%', or '-' where the device has no datasheet peak (None)."""
    return "-" if mfu is None else f"{100 * mfu:.1f}%"


def _line(r, last: str, width: int = 3) -> str:
    """A row of the plan's table under ``_header``: the layout ``r`` (a ``PlanRow``), ``last``
    in the last column."""
    sched = r.schedule if r.schedule != "interleaved" else f"interleaved/{r.virtual_stages}"
    shard = str(r.shard_group) if r.zero else "-"  # ranks sharding the states (§16)
    return (f"{r.rank:>{width}} {r.devices:>5} {r.dp:>4} {r.tp:>3} {r.pp:>3} {r.cp:>3} {r.zero:>4} "
            f"{shard:>5} {r.micro_batch:>3} {r.accumulation:>4} {sched:<14} {r.recompute:<9} "
            f"{'on' if r.sequence_parallel else 'off':<3} {r.step_time_s:>8.3f} "
            f"{throughput(r.tokens_per_s):>11} {_mfu_cell(r.mfu):>6} {r.memory_bytes / GIB_BYTES:>6.1f} "
            f"{'yes' if r.fits else 'no':<4}  {last}")


def count_lines(by_count, words: Nouns = GPU_NOUNS) -> list[str]:
    """The best layout on each device count asked, where several were (``plan.CountBest``s:
    ranked together, the largest count fills the top rows), under the table's columns with its
    rank among every count's layouts, its tokens/s per device and how that scales against the
    fewest devices' best (``plan.count_scaling``); then a note for each count that has none,
    saying why. Nothing for one count: the table's first row is its best."""
    from scalesim.plan import above_linear_count_note, count_scaling

    if len(by_count) < 2:
        return []
    scaling = count_scaling(by_count)
    bests = [c.best for c in by_count if c.best is not None]
    width = max([3] + [len(str(b.rank)) for b in bests])  # ranks past the table's run long
    lines = [f"best on each count asked (# its rank among every count's layouts; per "
             f"{words.device} against the best on {bests[0].devices} {words.devices}):",
             _header(words, f"per {words.device}", width)] if bests else []
    lines += [_line(c.best, f"{throughput(c.best.tokens_per_s / c.devices)} tokens/s, {scale:.1%}", width)
              for c, scale in zip(by_count, scaling, strict=True) if c.best is not None]
    above = above_linear_count_note(by_count, words)  # why a count's figure passes 100%
    return (lines + ([f"note: {above}"] if above else [])
            + [f"note: {c.note}" for c in by_count if c.best is None])


def count_json(by_count, memory_notes: list[str | None] | None = None) -> list[dict]:
    """``--json``'s ``by_count``: each count asked, its best row (null where none: ``note``
    says why), its tokens/s per device, scaling against the fewest devices' best and
    ``memory_note``, the count's near-full note (``_count_memory_notes``; null where none)."""
    from scalesim.plan import count_scaling

    notes = memory_notes or [None] * len(by_count)
    return [{"devices": c.devices,
             "best": None if c.best is None else c.best.model_dump(mode="json"),
             "tokens_per_s_per_device": (None if c.best is None
                                         else c.best.tokens_per_s / c.devices),
             "scaling_efficiency": scale, "note": c.note, "memory_note": memory}
            for c, scale, memory in zip(by_count, count_scaling(by_count), notes, strict=True)]


def render_text(rows, global_batch: int, words: Nouns = GPU_NOUNS) -> str:
    """The plan's table; ``words``: the devices' nouns (a CPU calibration's count is 'procs').
    ``rows``: ``plan.RankedRows`` (its best on each count follows the table), or a list."""
    lines = [recompute_style_line(rows[0].recompute_style), _header(words, "why")]
    lines += [_line(r, r.why) for r in rows]
    best = rows[0]
    parts = ", ".join(f"{k.removesuffix('_s')} {v:.3g}" for k, v in best.breakdown_s.items() if v)
    # --all where nothing fits: the first row is the one needing least memory, not a best
    first = "best step" if best.fits else "no layout fits; the one needing least memory: step"
    lines.append(f"{first} {best.step_time_s:.3f} s = {parts} (s); global batch {global_batch}")
    lines += count_lines(getattr(rows, "by_count", []), words)
    # uneven pipeline stages, once per layout (pp x virtual stages) shown, the counts' bests too
    shown = [*rows, *(c.best for c in getattr(rows, "by_count", []) if c.best is not None)]
    lines += [f"note: {words}" for words in dict.fromkeys(r.stage_notes for r in shown) if words]
    if not best.stall_modelled:
        from scalesim.predict import STALL_NOT_MODELLED

        lines.append(f"note: {STALL_NOT_MODELLED}")  # as predict's
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from scalesim.billing import job_sizes
    from scalesim.cli.options import check_loader_workers, check_slow_device, links_from_args
    from scalesim.layout_predict import (
        check_attention_kernel,
        check_precision,
        kernel_for,
        priced_kernel_words,
        scenario_hardware,
    )
    from scalesim.plan import DEFAULT_MATMUL_EFFICIENCY, strategy_legend
    from scalesim.predict import server_use_words
    from scalesim.profiles import load_profile, workload_at_sequence
    from scalesim.runs_model import model_shape
    from scalesim.schemas import Scenario

    check_slow_device(args)
    profile = None if args.profile is None else load_profile(args.profile)
    check_loader_workers(args.loader_workers, profile)  # a measured input pipeline, as predict
    own = _profile_model(args, profile)
    defaulted = own is None and args.workload is None
    if defaulted:
        args.workload = DEFAULT_WORKLOAD
    shape, params = ((own.transformer, own.params) if own is not None
                     else model_shape(args.workload))
    planned = _planned_workload(args, shape, params, own)  # read once, used below thrice
    if args.seq_len:  # as predict --seq-len reads it (profiles.workload_at_sequence)
        planned, _ = workload_at_sequence(planned, args.seq_len, args.workload or planned.name)
        shape, params = planned.transformer, planned.params
    hardware, efficiency, note, p2p, measured_jitter = _hardware_and_efficiency(
        args, profile, DEFAULT_MATMUL_EFFICIENCY)
    published, why = (None, "") if profile is not None else _published_profile(args, shape)
    if published is not None:  # predict's compute of the workload: a published run
        note = (f"{_hardware_words(args, hardware)}; every layout's matmul efficiency pinned, "
                f"at its micro-batch, to the published run predict prices {args.workload} "
                f"from, as predict pins it (docs/model.md §22): {published.notes[0]}")
    elif why:
        note += f"; not the published {args.workload} run predict prices it from: {why}"
    priced = None if profile is None else _priced_profile(args, profile, planned)
    if priced is None:
        kernel = args.attention_kernel or VENDOR_KERNEL
    else:  # the precision and kernel asked, checked and run as predict prices the model
        check_precision(priced, args.precision or DEFAULT_PRECISION, instead="--hardware")
        check_attention_kernel(priced, args.attention_kernel, instead="--hardware")
        kernel = kernel_for(priced, args.attention_kernel)
    job_sizes(args.instance_sizes, hardware.instance_sizes, hardware.devices_per_node,
              args.gpus_per_node)  # no shape larger than a server, as predict refuses it
    # --gpus-per-node 4 of an 8-GPU server: 4 GPUs reach half its NICs, the server billed whole
    used_scenario = Scenario(devices=args.devices, devices_per_node=args.gpus_per_node,
                             instance_sizes=args.instance_sizes, **links_from_args(args))
    used = server_use_words(hardware, used_scenario)
    hardware = scenario_hardware(hardware, used_scenario)
    # as predict does (predict.jitter_cv_of): --straggler-cv, else the profile's measured jitter
    jitter_cv = args.straggler_cv if args.straggler_cv is not None else measured_jitter
    supply = _input_supply(args, profile, used_scenario, hardware)
    ranking = (profile, planned, own, published, note, shape, hardware, efficiency, p2p, kernel,
               jitter_cv, supply, params)
    rows, note = _ranked(args, *ranking)
    reranked = _reranker(args, ranking)
    memory_note = _memory_note(args, rows, hardware_nouns(hardware), reranked)
    count_notes = _count_memory_notes(args, rows, hardware_nouns(hardware), reranked)
    if args.json:
        from scalesim.jsonio import to_json_text

        print(to_json_text({"layouts": [r.model_dump(mode="json") for r in rows],
                            "by_count": count_json(rows.by_count, count_notes),
                            "memory_note": memory_note}, what="the plan"))
    else:
        if own is None:  # a profile's own model is named in its note
            print(f"workload: {args.workload}: {shape.words()}"
                  + (" (the default; --workload to change)" if defaulted else ""))
        if note:
            print(note + (f"; --efficiency {args.efficiency:g} used instead"
                          if args.efficiency else ""))
        if conditions := conditions_line(args, jitter_cv, used, hardware_nouns(hardware)):
            print(conditions)
        if words := priced_kernel_words(priced, kernel, hardware.device_name):
            print(words)
        if args.precision == FP8:  # MFU and HFU are against that peak (plan.PlanRow)
            print(FP8_WORDS + "; MFU against the fp8 peak")
        if profile is not None:
            from scalesim.cli.cmd_predict import unmeasured_link_notes

            g = args.gpus_per_node or hardware.devices_per_node
            for line in unmeasured_link_notes(
                    profile, inter=any(r.devices > g for r in rows)
                    and args.inter_busbw is None,
                    intra=g > 1 and any(r.devices > 1 for r in rows)
                    and args.intra_busbw is None):
                print(f"note: {line}")
        print(render_text(rows, args.global_batch, hardware_nouns(hardware)))
        if legend := strategy_legend(rows):  # what each ZeRO number runs as (plan.PlanRow)
            print(f"note: {legend}")
        if memory_note:
            print(f"note: {memory_note}")
        for c, note in zip(rows.by_count, count_notes, strict=True):  # the top's said above
            if note and len(rows.by_count) > 1 and not (memory_note and c.best.rank == 1):
                print(f"note: {note}")
    return 0


def _reranker(args, ranking: tuple):
    """``rerank(share, devices)``: the best row of the same ranking (``_ranked`` of
    ``ranking``, its arguments after ``args``) on ``devices`` with ``share`` of each device
    kept free, or ScalesimError where none fits; each (share, devices) ranked once."""
    import copy

    done: dict = {}

    def rerank(share: float, devices: list[int]):
        key = (share, tuple(devices))
        if key not in done:
            kept = copy.copy(args)
            kept.memory_margin, kept.top, kept.all, kept.devices = share, 1, False, devices
            try:
                done[key] = _ranked(kept, *ranking)[0][0]
            except ScalesimError as exc:
                done[key] = exc
        if isinstance(done[key], ScalesimError):
            raise done[key]
        return done[key]

    return rerank


def _memory_note(args, rows, words: Nouns, rerank) -> str | None:
    """``memory_margin.margin_note`` of the plan's best where no --memory-margin was given:
    the same ranking re-run (``rerank``, ``_reranker``'s) with ``TIGHT_MEMORY_SHARE`` kept
    free states the layout it picks then, or why none fits; None where the best leaves enough
    free. ``words``: the devices' nouns."""
    from scalesim.memory_margin import margin_note

    return margin_note(rows[0], args.memory_margin or 0.0,
                       lambda share: rerank(share, args.devices), words)


def _count_memory_notes(args, rows, words: Nouns, rerank) -> list[str | None]:
    """``margin_note`` of the best layout on each device count asked (``rows.by_count``,
    ``at_count``), ranked again at that count alone with ``TIGHT_MEMORY_SHARE`` kept free; None
    for a count whose best leaves enough free, or that has none. The plan's note
    (``_memory_note``) is of its top row only, whose count's best the others are not."""
    from scalesim.memory_margin import margin_note

    return [None if c.best is None else margin_note(
        c.best, args.memory_margin or 0.0,
        lambda share, devices=c.devices: rerank(share, [devices]), words, at_count=True)
        for c in rows.by_count]


def _ranked(args, profile, planned, own, published, note, shape, hardware, efficiency, p2p,
            kernel, jitter_cv, supply, params):
    """(rows, note): the plan's ranking of the flags in ``args`` (``plan.plan``, or
    ``_pinned_rows`` on a measured or published curve, whose note replaces ``note``); the
    memory note re-runs it with a margin (``_memory_note``)."""
    from scalesim.layout import DEFAULT_RECOMPUTE_STYLE
    from scalesim.plan import plan
    from scalesim.profiles import device_peak_tflops, measured_ceiling

    measured = (_on_the_measured_curve(args, profile, planned, own) if published is None
                else (_pinned_rows(args, published), note))
    if measured is not None:
        rows, note = measured
    else:
        # the workload's bytes per parameter (a workload file's, the profile's own model's),
        # as predict's layouts take them (layout_predict.scenario_setting)
        rows = plan(shape, hardware, args.devices, args.global_batch,
                    efficiency=args.efficiency or efficiency,
                    fp8=args.precision == FP8, rank_by=args.rank, top=args.top,
                    include_unfit=args.all, params=params, cp_values=tuple(args.cp),
                    tp_overlap=args.tp_overlap, p2p=p2p,
                    p2p_overlap=p2p_overlap_of(args.p2p_overlap) is not False,
                    recompute_style=args.recompute_style or DEFAULT_RECOMPUTE_STYLE,
                    overlap=not args.no_overlap, jitter_cv=jitter_cv,
                    slow_device=args.slow_device, slow_factor=args.slow_factor or 1.0,
                    zero_framework=args.zero_framework or "fsdp",
                    grad_sync=args.grad_sync or "every-micro-step",
                    attention_kernel=kernel, algorithm=args.algorithm or "auto",
                    loader_samples_per_s=supply,
                    param_bytes_per_param=planned.param_bytes_per_param,
                    grad_bytes_per_param=planned.grad_bytes_per_param,
                    optimizer_bytes_per_param=planned.optimizer_bytes_per_param,
                    wire_bytes_per_param=planned.wire_bytes_per_param,
                    oom_micro_batch=0 if profile is None else measured_ceiling(profile, planned),
                    memory_margin=args.memory_margin or 0.0,
                    peak_known=profile is None or device_peak_tflops(
                        profile.hardware.device_name, profile.hardware) is not None,
                    **({} if args.bucket_mib is None else {"bucket_mib": args.bucket_mib}))
    return rows, note


def _input_supply(args, profile, scenario, hardware) -> float:
    """Samples/s of one replica's loader from ``--profile``'s measured input pipeline at
    ``--loader-workers`` (``layout_predict.replica_loader_supply``, as ``plan_at`` feeds the
    measured curve's layouts and predict any model: the loader feeds samples, whatever the
    model); infinite without one (``predict.input_pipeline_modelled``: the stall not
    modelled)."""
    from scalesim.predict import input_pipeline_modelled

    if not input_pipeline_modelled(profile):
        return float("inf")
    from scalesim.layout_predict import replica_loader_supply

    return replica_loader_supply(profile, scenario.model_copy(
        update={"loader_workers": args.loader_workers}), args.devices, hardware.devices_per_node)


def _profile_model(args, profile):
    """The workload of ``--profile``'s own model where no ``--workload`` is given and the profile
    knows its transformer (its workload's shape, or the one its measured curve timed:
    ``layout_predict.with_measured_shape``); else None (``DEFAULT_WORKLOAD`` is planned)."""
    if args.workload is not None or profile is None:
        return None
    from scalesim.layout_predict import with_measured_shape

    workload = with_measured_shape(profile).workload
    return workload if workload.transformer is not None else None


def _priced_profile(args, profile, workload):
    """The profile ``predict --profile P --workload W`` prices the planned model from, whose
    precision and attention kernel plan checks (``check_precision``,
    ``check_attention_kernel``), runs (``kernel_for``) and says (``priced_kernel_words``) as
    predict does: for another model than the one P's compute timed or estimated
    (``profiles.model_match`` 'other'), ``profile_with_workload``'s (its compute estimated from
    its shape, the block calibration kept: ``kernel_for`` of it is ``kernel_for_another_model``
    of P), so that an fp8 or a kernel P's own timings could not rerun (a measured curve, or a
    published run's throughput) is priced where the estimate can; else P (its own model, at any
    sequence). ``workload``: the planned one (``_planned_workload``)."""
    from scalesim.profiles import model_match, profile_with_workload

    if model_match(profile, workload) == "other":
        return profile_with_workload(profile, workload, args.workload)[0]
    return profile


def _planned_workload(args, shape, params, own):
    """The workload ``scalesim plan`` ranks layouts of: the profile's own model (``own``) or
    ``--workload``, with the planned shape (``--seq-len``) and its parameters."""
    from scalesim.profiles import load_workload

    return (own if own is not None else load_workload(args.workload)).model_copy(update={
        "transformer": shape, "params": params or shape.param_count()})


def _on_the_measured_curve(args, base, workload, own=None):
    """(rows, note) when ``--profile``'s measured compute curve times the planned model: the
    decision ``predict --profile P --workload W`` takes (``profiles.profile_with_workload``:
    the same model, or the same transformer at another ``--seq-len``, its curve scaled). Every
    layout is then ranked as predict predicts it (``layout_predict.plan_at``: each micro-batch's
    matmul efficiency pinned to that curve, the profile's links, jitter and input supply). None
    (the block fit's or the default efficiency, ``calibrated_hardware``) for another model,
    without ``--profile``, a curve that was not measured, ``--efficiency`` (the user's number
    wins) and ``--precision fp8`` (the curve was timed at its own precision). ``base``: the
    loaded ``--profile`` (None without one); ``workload`` the planned one
    (``_planned_workload``). ``own``: the profile's own model (``_profile_model``), planned
    where no ``--workload`` is given."""
    if base is None or args.efficiency is not None or args.precision == FP8:
        return None
    from scalesim.layout_predict import optimizer_measured
    from scalesim.profiles import device_peak_tflops, profile_with_workload

    if not base.compute.measured:
        return None
    # its own model (no --workload): a note that does not say a workload replaced it
    profile, match = profile_with_workload(base, workload, None if own is not None
                                           else args.workload)
    if match == "other":
        return None
    rows = _pinned_rows(args, profile)
    what = profile.notes[-1]
    if own is not None:  # no --workload: say which model is planned
        shape = workload.transformer
        what = (f"no --workload: its own model, the transformer it timed ({shape.layers} layers, "
                f"hidden {shape.hidden}, {shape.heads} heads, vocabulary {shape.vocab}); "
                + what)
    note = (f"profile {base.name}: {what}; every layout's matmul efficiency "
            "pinned to that curve at its micro-batch, as predict pins it (docs/model.md §22)"
            + (f"; its optimizer step as measured, x the parameters each "
               f"{hardware_nouns(profile.hardware).device} updates"
               if optimizer_measured(profile.compute) else "") + "; links from the profile")
    if device_peak_tflops(profile.hardware.device_name, profile.hardware) is None:
        note += f"; {NO_MFU}"
    return rows, note


def _published_profile(args, shape):
    """(profile, '') without ``--profile`` where a published run times the planned transformer
    ``shape`` (the workload's ``reference``: the built-in default's BERT-large and NVIDIA DLE's
    run, or a workload file with one): the profile ``predict --hardware H --workload W``
    predicts from (``profiles.resolve_profile``: its sizes and that run's compute curve, scaled
    to H's device as predict scales it), its workload given ``shape``, on which every layout is
    ranked as ``_on_the_measured_curve`` ranks a measured curve (``_pinned_rows``). (None, why)
    where the run cannot price the plan asked (another ``--seq-len``, ``--precision fp8``, an
    ``--attention-kernel`` its timings cannot be swapped for: ``layout_predict.kernel_refused``);
    (None, '') with ``--efficiency`` (the user's number wins, and says so) or no reference
    (llama3-8b, plan's default: its compute is the shape's at the default efficiency). Either
    None: the default efficiency."""
    from scalesim.profiles import load_workload

    if args.efficiency is not None or not load_workload(args.workload).reference:
        return None, ""
    from scalesim.layout_predict import kernel_refused
    from scalesim.precision import PUBLISHED_RUN
    from scalesim.profiles import resolve_profile
    from scalesim.runs_model import model_shape

    timed = model_shape(args.workload)[0]
    if timed != shape:
        return None, f"it ran sequence {timed.seq_len}, not {shape.seq_len}"
    if args.precision == FP8:
        return None, "it ran at its own precision"
    published = resolve_profile(None, args.hardware, args.workload)
    if published.compute.precision != PUBLISHED_RUN:
        return None, ""
    published = published.model_copy(update={"workload": published.workload.model_copy(
        update={"transformer": shape})})
    if kernel_refused(published, args.attention_kernel):
        return None, "it ran its own attention kernel"
    return published, ""


def _pinned_rows(args, profile):
    """The plan's rows on ``profile``'s compute curve (``layout_predict.plan_at``: every
    layout's step as predict predicts it), the flags given as predict's scenario."""
    from scalesim.cli.options import links_from_args
    from scalesim.layout import DEFAULT_RECOMPUTE_STYLE
    from scalesim.layout_predict import plan_at
    from scalesim.schemas import Scenario, ScenarioLayout

    scenario = Scenario(
        devices=args.devices, devices_per_node=args.gpus_per_node, overlap=not args.no_overlap,
        straggler_cv=args.straggler_cv, loader_workers=args.loader_workers,
        slow_device=args.slow_device, slow_factor=args.slow_factor or 1.0,
        zero_framework=args.zero_framework or "fsdp",
        grad_sync=args.grad_sync or "every-micro-step", instance_sizes=args.instance_sizes,
        attention_kernel=args.attention_kernel,
        algorithm=args.algorithm or "auto", **links_from_args(args),
        **({} if args.bucket_mib is None else {"bucket_mib": args.bucket_mib}),
        memory_margin=args.memory_margin or 0.0,
        layout=ScenarioLayout(recompute_style=args.recompute_style or DEFAULT_RECOMPUTE_STYLE,
                              tp_overlap=args.tp_overlap,
                              p2p_overlap=p2p_overlap_of(args.p2p_overlap) is not False))
    return plan_at(profile, scenario, args.devices, args.global_batch,
                   rank_by=args.rank, top=args.top,
                   include_unfit=args.all, cp_values=tuple(args.cp))


def _hardware_and_efficiency(args, profile, default_efficiency: float):
    """(hardware, efficiency, note, measured send/recv or None, measured jitter cv) from
    ``profile`` (--profile, loaded), or from --hardware and the default (no jitter)."""
    from scalesim.errors import ScalesimError

    if profile is None:
        from scalesim.profiles import load_hardware

        hardware = load_hardware(presets.DEFAULT_HARDWARE if args.hardware is None
                                 else args.hardware)
        note = (_hardware_words(args, hardware)
                + f"; matmul efficiency {default_efficiency:g} (the published runs' median)")
        return hardware, default_efficiency, note, None, 0.0
    if args.hardware is not None:
        raise ScalesimError("give --profile or --hardware, not both: the profile brings its "
                            "hardware and links")
    from scalesim.plan import calibrated_hardware, measured_p2p

    jitter = profile.jitter.step_time_cv if profile.jitter is not None else 0.0
    return (*calibrated_hardware(profile), measured_p2p(profile), jitter)


def _hardware_words(args, hardware) -> str:
    """The plan's hardware line without ``--profile`` (``cmd_predict.hardware_line``), saying
    where it is the default."""
    from scalesim.cli.cmd_predict import hardware_line

    return hardware_line(hardware) + (" (the default; --hardware or --profile to change)"
                                      if args.hardware is None else "")
