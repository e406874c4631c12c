"""Flags shared by the commands that predict: where the profile comes from, and the scenario."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from scalesim.attention_kernel import ATTENTION_KERNEL_HELP
from scalesim.bounds import (
    KNOB_BY_FIELD,
    KNOBS,
    LAYOUT_KNOB_BY_FIELD,
    LAYOUT_KNOBS,
    check_number,
    flag_list_type,
    flag_type,
    validation_knobs,
)
from scalesim.cli.given_words import MERGED, file_settings
from scalesim.errors import ScalesimError, require_path
from scalesim.jsonio import parse_model, read_json, validation_message
from scalesim.layout import (
    CP_HELP,
    P2P_OVERLAP_HELP,
    P2P_OVERLAP_WORDS,
    RECOMPUTE_STYLE_HELP,
    SHARD_GROUP_HELP,
    TP_OVERLAP_HELP,
)
from scalesim.model.sharding import GRAD_SYNC_HELP, TRACED_GRAD_SYNC_HELP
from scalesim.money import is_usd, usd_type
from scalesim.precision import PRECISION_HELP
from scalesim.schemas import FIELDS_ALONE, Profile, Scenario


def parse_int_list(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; 'A-B' doubles from A up to B ('1-8' -> 1, 2, 4, 8).

    Every value is a device count (scalesim.bounds: 1 to 2**20).
    """
    return flag_list_type("devices")(text)


def positive_int(text: str) -> int:
    """A count of 1 or more below 2**53 (quantity ``count``); a flag with a physical quantity
    uses ``scalesim.bounds.flag_type(quantity)`` instead."""
    return flag_type("count")(text)


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to predict for")
    g.add_argument(
        "--hardware",
        metavar="PRESET|FILE",
        help="hardware preset name or JSON file (scalesim presets lists them)",
    )
    g.add_argument("--workload", metavar="PRESET|FILE", help="workload preset name or JSON file")
    g.add_argument("--profile", metavar="FILE", help="calibration profile JSON (scalesim calibrate)")
    add_seq_len_argument(g)


SEQ_LEN_HELP = ("tokens per sequence: the transformer workload (or the profile's own model) at "
                "that sequence length instead of its own, as scalesim plan --seq-len plans it "
                "(a measured compute curve scaled to it; a published throughput, measured at "
                "the workload's own length, not used)")


def add_seq_len_argument(group, help: str = SEQ_LEN_HELP) -> None:
    """--seq-len (``profiles.workload_at_sequence``; plan's own flag too): its bounds from the
    bounds table (quantity ``seq_len``)."""
    knob = KNOB_BY_FIELD["seq_len"]
    group.add_argument(knob.flag, type=flag_type(knob.quantity), metavar="TOKENS", help=help)


def _knob(group, field: str, **kwargs) -> None:
    """A scenario knob's flag, its type (and bounds) from scalesim.bounds.KNOBS."""
    knob = KNOB_BY_FIELD[field]
    kind = (flag_list_type if field in ("devices", "instance_sizes")
            else usd_type if is_usd(knob.quantity) else flag_type)  # --price: '$40' too
    group.add_argument(knob.flag, type=kind(knob.quantity), dest=_dest(knob.flag), **kwargs)


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def add_loader_workers_argument(group) -> None:
    """--loader-workers: read off a profile's measured input pipeline (``check_loader_workers``);
    predict, sweep, decide, goal and plan."""
    _knob(
        group,
        "loader_workers",
        help="DataLoader workers per device (a profile with a "
        "measured input pipeline; default: its best count)",
    )


MEMORY_MARGIN_HELP = (
    "share of each device's memory kept free, 0 to 0.5, e.g. 0.05: a layout fits where it "
    "needs at most (1 - margin) x the device's memory, room for the caching allocator's "
    "fragmentation, which the memory model does not count (docs/model.md §16; default 0: all "
    "of it)")


def add_memory_margin_argument(group) -> None:
    """--memory-margin (``Scenario.memory_margin``, its flag and bounds from the knob table;
    predict, sweep, decide, goal and plan)."""
    _knob(group, "memory_margin", metavar="SHARE", help=MEMORY_MARGIN_HELP.replace("%", "%%"))


def check_loader_workers(
    workers: int | None, profile: Profile | None, given: str = "--loader-workers"
) -> None:
    """ScalesimError, in one line, where ``--loader-workers`` is given (``given``: where it was,
    as a scenario file's ``loader_workers``) and ``profile`` (None: the presets, plan without
    --profile) has no measured input pipeline: no worker count would change a number."""
    if workers is not None and (profile is None or profile.input_pipeline is None):
        # predict.loader_supply reads the workers off the measured curve; without one the
        # supply is unlimited whatever the count
        what = "without --profile there is" if profile is None else f"profile '{profile.name}' has"
        drop = "the flag" if given.startswith("--") else "it"
        raise ScalesimError(
            f"{given} {workers}: {what} no measured input pipeline (the presets have "
            "none), so no worker count changes a number; measure one (scalesim calibrate with "
            f"its loader phase) or drop {drop}", knobs=("loader_workers",))


def check_scenario_loader_workers(scenario: Scenario, profile: Profile) -> None:
    """A scenario's ``loader_workers`` (a --scenario file's, or the flag's) refused as the flag
    is (``check_loader_workers``) where ``profile`` has no measured input pipeline: a file's
    was ignored without a word."""
    check_loader_workers(scenario.loader_workers, profile, "the scenario's loader_workers")


def add_scenario_arguments(p: argparse.ArgumentParser, devices_default: str = "1,2,4,8,16") -> None:
    g = p.add_argument_group("scenario")
    g.add_argument("--scenario", metavar="FILE", help="scenario JSON (flags given override it)")
    _knob(
        g,
        "devices",
        default=None,
        help=f"device counts, e.g. 1,2,4,8,16, or A-B doubling from A to B: 1-1024 is "
        f"1,2,4,...,1024 (default {devices_default})",
    )
    add_gpus_per_node_argument(g)
    batch = g.add_mutually_exclusive_group()
    _knob(batch, "micro_batch", help="per-device micro-batch (weak scaling; default: the workload's)")
    _knob(batch, "global_batch", help="fixed global batch (strong scaling)")
    _knob(g, "accumulation", help="micro-steps per optimizer step (default 1)")
    add_strategy_argument(g)
    add_zero_framework_argument(g)
    add_grad_sync_argument(g)
    add_attention_kernel_argument(g)
    add_precision_argument(g)
    add_algorithm_argument(g)
    add_condition_arguments(g)
    add_bucket_argument(g)
    add_loader_workers_argument(g)
    add_memory_margin_argument(g)
    add_link_arguments(g)
    _knob(g, "critical_batch_size", help="critical batch size B_noise, samples")
    _knob(g, "min_samples_to_quality", help="E_min: samples to target at a tiny batch")
    _knob(
        g,
        "train_samples",
        help="samples in the training run; a transformer's sample is a "
        "sequence: tokens / sequence length (2e12 tokens of 4096 = 4.9e8)",
    )
    g.add_argument("--epochs", type=flag_type("epochs"), help="epochs (with --dataset-size)")
    g.add_argument(
        "--dataset-size", type=flag_type("samples_total"), help="samples per epoch (with --epochs)"
    )
    _knob(
        g,
        "price_per_device_hour",
        metavar="USD",
        help="price per device-hour in US dollars, e.g. 4.1 or $4.10 (default: the hardware's "
        "list price)",
    )
    add_instance_sizes_argument(g, "cost bills a server's devices as the smallest shape that holds them")
    add_layout_arguments(p)


def add_algorithm_argument(group) -> None:
    """--algorithm (``Scenario.algorithm``; plan's own flag too): the knob table's flag and
    choices."""
    knob = KNOB_BY_FIELD["algorithm"]
    group.add_argument(
        knob.flag,
        choices=knob.choices,
        help="all-reduce algorithm (default auto: NCCL's ring or tree, the faster "
        "per message; hierarchical is Horovod's, used only when named)",
    )


def add_bucket_argument(group) -> None:
    """--bucket-mib (``Scenario.bucket_mib``; plan's own flag too)."""
    _knob(group, "bucket_mib", help="DDP gradient bucket size, MiB (default 25)")


# the scenario's link and device-spread knobs (``add_link_arguments``, ``links_from_args``)
LINK_FIELDS = (
    "device_speed_cv",
    "intra_busbw_GBps",
    "inter_busbw_GBps",
    "intra_latency_s",
    "inter_latency_s",
)


def add_link_arguments(group) -> None:
    """--device-cv --intra-busbw --inter-busbw --intra-latency --inter-latency (``LINK_FIELDS``,
    the hardware's numbers replaced for the run: ``layout_predict.scenario_hardware``; plan's
    own flags too)."""
    _knob(
        group,
        "device_speed_cv",
        help="speed std / mean across identical devices (default 0.0132, SC'22 study)",
    )
    _knob(
        group, "intra_busbw_GBps", metavar="GB/s", help="intra-server bus bandwidth (default: the profile's)"
    )
    _knob(
        group, "inter_busbw_GBps", metavar="GB/s", help="inter-server bus bandwidth (default: the profile's)"
    )
    _knob(
        group,
        "intra_latency_s",
        metavar="S",
        help="intra-server latency per collective step, seconds (default: the profile's)",
    )
    _knob(
        group,
        "inter_latency_s",
        metavar="S",
        help="inter-server latency per collective step, seconds (default: the profile's)",
    )


def links_from_args(args: argparse.Namespace) -> dict:
    """The ``LINK_FIELDS`` the flags give, as Scenario fields (plan builds its scenario so)."""
    given = {f: getattr(args, _dest(KNOB_BY_FIELD[f].flag), None) for f in LINK_FIELDS}
    return {f: v for f, v in given.items() if v is not None}


def add_instance_sizes_argument(group, what: str) -> None:
    """--instance-sizes (``Scenario.instance_sizes``, its flag and bounds from the knob table;
    plan's own flag too); ``what``: what the command does with them."""
    _knob(
        group,
        "instance_sizes",
        metavar="N,N",
        help="GPUs of each instance shape the cloud "
        f"rents, e.g. 1,2,4,8 (1: per GPU); {what} (default: the hardware's; whole servers)",
    )


GPUS_PER_NODE_HELP = "devices (GPUs, or CPU processes) per server/host (default: the hardware's)"


def add_gpus_per_node_argument(group, help: str = GPUS_PER_NODE_HELP) -> None:
    """--gpus-per-node (``Scenario.devices_per_node``, its bounds from the knob table; plan's
    own flag too)."""
    _knob(group, "devices_per_node", help=help)


def add_strategy_argument(group) -> None:
    """--strategy (``Scenario.strategy``; diagnose's own flag too: how the runs exchanged)."""
    knob = KNOB_BY_FIELD["strategy"]
    group.add_argument(knob.flag, choices=knob.choices,
                       help="data parallelism: ddp, or ZeRO stage 1, 2 or 3 (default ddp)")


def add_zero_framework_argument(group) -> None:
    """--zero-framework (``Scenario.zero_framework``; plan's own flag too)."""
    knob = KNOB_BY_FIELD["zero_framework"]
    group.add_argument(
        knob.flag,
        choices=knob.choices,
        dest=_dest(knob.flag),
        help="how ZeRO runs (default fsdp): fsdp gathers and reduce-scatters one "
        "wrapped block at a time for ZeRO-2/3 and runs ZeRO-1 as Megatron-Core's "
        "distributed optimizer (reduce-scatter of its fp32 main grads + all-gather: "
        "0.75x the bytes of DDP's fp32 all-reduce in bf16 training); "
        "deepspeed uses its bucket defaults (ZeRO-1/2: all-reduce, then a "
        "parameter all-gather after the step; overlap on is its overlap_comm: "
        "true, which DeepSpeed leaves off for stages 1-2: give --no-overlap for "
        "a config without it); sharded gradients are reduced as --grad-sync says",
    )


def add_grad_sync_argument(group, traced: bool = False) -> None:
    """--grad-sync (``Scenario.grad_sync``; plan's own flag too); ``traced``: diagnose's, whose
    traces read it off their micro-steps where it is not given."""
    knob = KNOB_BY_FIELD["grad_sync"]
    group.add_argument(knob.flag, choices=knob.choices, dest=_dest(knob.flag),
                       help=GRAD_SYNC_HELP + (TRACED_GRAD_SYNC_HELP if traced else ""))


def add_attention_kernel_argument(group) -> None:
    """--attention-kernel (``Scenario.attention_kernel``; plan's own flag too): the knob table's
    flag and choices, no default (a --scenario file's kernel stands unless the flag is given)."""
    knob = KNOB_BY_FIELD["attention_kernel"]
    group.add_argument(
        knob.flag, choices=knob.choices, dest=_dest(knob.flag), help=ATTENTION_KERNEL_HELP.replace("%", "%%")
    )


def add_precision_argument(group) -> None:
    """--precision (``Scenario.precision``; plan's own flag too): the knob table's flag and
    choices, no default (a --scenario file's precision stands unless the flag is given)."""
    knob = KNOB_BY_FIELD["precision"]
    group.add_argument(knob.flag, choices=knob.choices, dest=_dest(knob.flag),
                       help=PRECISION_HELP.replace("%", "%%"))


def add_condition_arguments(group) -> None:
    """--no-overlap --straggler-cv --slow-device --slow-factor: the run's conditions, for the
    scenario (predict, sweep, ...) and for the planner (``plan``)."""
    group.add_argument(
        "--no-overlap",
        action="store_true",
        help="exchange gradients after backward, not during it (a split model: "
        "every data-parallel / ZeRO collective and tensor-parallel overlap "
        "exposed)",
    )
    _knob(
        group,
        "straggler_cv",
        help="step-time std / mean of one device (default: the profile's measured jitter, else 0)",
    )
    _knob(
        group,
        "slow_device",
        metavar="RANK",
        help="global rank of a persistently slow device "
        "(a split model: its tensor group and pipeline stage run at its pace)",
    )
    _knob(group, "slow_factor", help="its compute-time multiplier, e.g. 1.3")


def condition_words(
    overlap: bool, slow_device: int | None, slow_factor: float | None, straggler_cv: float | None,
    device: str = "device",
) -> list[str]:
    """The run's conditions that differ from the defaults, in words ('overlap off (every exchange
    after its compute)', 'device 3 computes 1.3x slower', 'jitter cv 0.05 per micro-step'):
    plan's 'ranked with' line and predict's scenario line. ``device``: the profile's noun
    (``Nouns.device``, 'process' on CPU)."""
    parts = [] if overlap else ["overlap off (every exchange after its compute)"]
    if slow_device is not None:
        parts.append(f"{device} {slow_device} computes {slow_factor or 1.0:g}x slower")
    if straggler_cv:
        parts.append(f"jitter cv {straggler_cv:g} per micro-step")
    return parts


def check_slow_device(args: argparse.Namespace) -> None:
    """--slow-device and --slow-factor come together."""
    if (args.slow_factor is not None) != (args.slow_device is not None):
        raise ScalesimError(
            "--slow-device RANK and --slow-factor F go together (e.g. --slow-device 3 --slow-factor 1.3)",
            knobs=("slow_device", "slow_factor"))


def add_layout_arguments(p: argparse.ArgumentParser) -> None:
    """--tp --pp --cp --schedule --virtual-stages --recompute --recompute-style --sequence-parallel
    --tp-overlap --p2p-overlap (Scenario.layout)."""
    g = p.add_argument_group(
        "model split (a workload with a transformer shape, e.g. --workload llama3-8b; devices "
        "= dp x tp x pp x cp, --strategy sets ZeRO over dp, --batch is per replica)"
    )
    for knob in LAYOUT_KNOBS:
        if knob.quantity is None:
            continue  # the choices and switches below, each beside the flag it qualifies
        g.add_argument(
            knob.flag,
            type=flag_type(knob.quantity),
            dest=_dest(knob.flag),
            help={
                "tp": "tensor-parallel degree, inside one server (default 1)",
                "pp": "pipeline stages (default 1)",
                "cp": CP_HELP.replace("%", "%%"),
                "virtual_stages": "model chunks per pipeline rank (interleaved 1F1B)",
                "shard_group": SHARD_GROUP_HELP.replace("%", "%%"),
            }[knob.field],
        )
    g.add_argument(
        LAYOUT_KNOB_BY_FIELD["schedule"].flag,
        choices=LAYOUT_KNOB_BY_FIELD["schedule"].choices,
        help="pipeline schedule (default 1f1b; interleaved with --virtual-stages)",
    )
    g.add_argument(
        LAYOUT_KNOB_BY_FIELD["recompute"].flag,
        choices=LAYOUT_KNOB_BY_FIELD["recompute"].choices,
        help="activation recompute (default: the workload's)",
    )
    add_recompute_style_argument(g)
    g.add_argument(
        LAYOUT_KNOB_BY_FIELD["sequence_parallel"].flag,
        action="store_true",
        help="Megatron sequence parallelism in the tensor-parallel group",
    )
    add_tp_overlap_argument(g)
    add_p2p_overlap_argument(g)


def add_shard_group_argument(group) -> None:
    """--shard-group of the job a diagnosis reads (``fit_runs.RunsExchange.shard_group``): the
    layout knob's flag and bounds (``LAYOUT_KNOB_BY_FIELD``)."""
    knob = LAYOUT_KNOB_BY_FIELD["shard_group"]
    group.add_argument(knob.flag, type=flag_type(knob.quantity), dest=_dest(knob.flag),
                       help=SHARD_GROUP_HELP.replace("%", "%%") + ". Here: with --strategy "
                       "zero1-3 (FSDP); traces whose process groups name it need none")


def add_tp_overlap_argument(group) -> None:
    """--tp-overlap (``ScenarioLayout.tp_overlap``; plan's own flag too): a switch, beside
    --sequence-parallel, with the field's description (``layout.TP_OVERLAP_HELP``)."""
    group.add_argument("--tp-overlap", action="store_true", help=TP_OVERLAP_HELP.replace("%", "%%"))


def add_p2p_overlap_argument(group) -> None:
    """--p2p-overlap on|off (``ScenarioLayout.p2p_overlap``; plan's own flag too), its words
    and link key from the knob table (``LAYOUT_KNOB_BY_FIELD``), the field's description."""
    knob = LAYOUT_KNOB_BY_FIELD["p2p_overlap"]
    group.add_argument(knob.flag, choices=knob.choices, dest=_dest(knob.flag),
                       help=P2P_OVERLAP_HELP.replace("%", "%%"))


def p2p_overlap_of(word: str | None) -> bool | None:
    """``ScenarioLayout.p2p_overlap`` of --p2p-overlap's word ('on', 'off'); None: not given."""
    return None if word is None else next(k for k, v in P2P_OVERLAP_WORDS.items() if v == word)


def add_recompute_style_argument(group) -> None:
    """--recompute-style (``ScenarioLayout.recompute_style``; plan's own flag too)."""
    knob = LAYOUT_KNOB_BY_FIELD["recompute_style"]
    group.add_argument(
        knob.flag, choices=knob.choices, dest=_dest(knob.flag), help=RECOMPUTE_STYLE_HELP.replace("%", "%%")
    )


def layout_from_args(args: argparse.Namespace, base: dict | None) -> dict | None:
    """The scenario's layout dict: --scenario's (if any) with the layout flags on top."""
    given = {k.field: getattr(args, _dest(k.flag), None) for k in LAYOUT_KNOBS}
    given.update(
        schedule=getattr(args, "schedule", None),
        recompute=getattr(args, "recompute", None),
        sequence_parallel=True if getattr(args, "sequence_parallel", False) else None,
        tp_overlap=True if getattr(args, "tp_overlap", False) else None,
        p2p_overlap=p2p_overlap_of(getattr(args, "p2p_overlap", None)),
    )
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return base
    return {**(base or {}), **given}


# argparse dest -> scenario field, for every knob whose flag gives its value (a switch, as
# --no-overlap, is read by its own line of ``scenario_from_args``; --seq-len changes the
# workload, ``profile_from_args``)
_FLAG_TO_FIELD = {_dest(k.flag): k.field for k in KNOBS
                  if k.flag and not k.switch and k.field in Scenario.model_fields}


def scenario_from_args(args: argparse.Namespace, swept=frozenset()) -> Scenario:
    """Scenario from --scenario FILE (if any) with the flags on top; errors are one line.
    ``swept``: the fields each row of the caller sets itself (the sweep's axes, whose grid
    overrides the file's value and the flag's): a rule across fields that one of them breaks is
    left to the rows (the sweep drops or refuses each row that breaks it)."""
    base: dict = {}
    file_factor = False  # the scenario file names a slow_factor (above its default 1)
    if getattr(args, "scenario", None) is not None:
        path = require_path(args.scenario, "--scenario")  # '' too: refused, not ignored
        data = read_json(path)
        # what the file sets, by its keys: a refusal names those as the file does
        # (``given_words.in_given_words``, main's error line)
        args._scenario_settings = file_settings(data)
        # the file's fields alone (a type or bound it breaks is the file's, by its key); its
        # rules across fields are the merged scenario's below, once the flags are on top: a
        # flag can set right a combination the file alone breaks ('--pp 1' over DeepSpeed's
        # zero2 at pp 2), and a refusal names each setting where it came from (main's line,
        # ``given_words.in_given_words``)
        base = parse_model(data, Scenario, path, context={FIELDS_ALONE: True}).model_dump()
        file_factor = base["slow_factor"] != 1.0
    for flag, field in _FLAG_TO_FIELD.items():
        value = getattr(args, flag, None)
        if value is not None:
            base[field] = value
    if args.batch is not None:
        base["global_batch"] = None
    if args.global_batch is not None:
        base["micro_batch"] = None
    if getattr(args, "no_overlap", False):
        base["overlap"] = False
    base["layout"] = layout_from_args(args, base.get("layout"))
    if getattr(args, "scenario", None) is None:
        check_slow_device(args)
    elif (base.get("slow_device") is not None) != (file_factor or args.slow_factor is not None):
        # the file and the flags together: a rank without a factor ran at 1x ('device 3
        # computes 1x slower'), a factor without a rank was dropped in silence
        if base.get("slow_device") is not None:
            missing = (f"slow_device {base['slow_device']} is given without a slow_factor "
                       "above 1 (it would run at 1x)")
        else:
            missing = f"slow_factor {base['slow_factor']:g} is given without a slow_device"
        raise ScalesimError(
            f"{args.scenario}: {missing}; slow_device and slow_factor go together (in the file "
            "or as --slow-device RANK --slow-factor F, e.g. --slow-device 3 --slow-factor 1.3)",
            knobs=("slow_device", "slow_factor"))
    if (args.epochs is None) != (args.dataset_size is None):
        raise ScalesimError(
            "--epochs and --dataset-size go together (e.g. --epochs 3 "
            "--dataset-size 1281167: the run is their product in samples), or "
            "give --train-samples alone", knobs=("train_samples",))
    if args.epochs is not None:
        if args.train_samples is not None:
            raise ScalesimError("give --train-samples or --epochs with --dataset-size, not both",
                                knobs=("train_samples",))
        base["train_samples"] = check_number(  # named by the flags, not the scenario field
            "samples_total", args.epochs * args.dataset_size,
            "--epochs x --dataset-size (the run's samples)", knobs=("train_samples",))
    try:
        try:
            return Scenario.model_validate(base)
        except ValidationError as exc:
            if not set(validation_knobs(exc.errors())) & set(swept):
                raise
            return Scenario.model_validate(base, context={FIELDS_ALONE: True})
    except ValidationError as exc:
        raise ScalesimError(validation_message(exc, MERGED, Scenario),
                            knobs=validation_knobs(exc.errors())) from None


def profile_from_args(args: argparse.Namespace, scenario: Scenario | None = None, axes=()) -> Profile:
    """The profile of --profile, --hardware, --workload and --seq-len
    (``profiles.resolve_profile``); with
    ``scenario`` (and sweep ``axes``) that split the model of a measured parameter-count
    workload, the profile's own timed transformer (``layout_predict.split_profile``)."""
    from scalesim.profiles import resolve_profile

    profile = resolve_profile(args.profile, args.hardware, args.workload,
                              getattr(args, "seq_len", None))
    check_loader_workers(getattr(args, "loader_workers", None), profile)
    if scenario is None:
        return profile
    check_scenario_loader_workers(scenario, profile)
    from scalesim.layout_predict import split_profile

    return split_profile(profile, scenario, axes)
