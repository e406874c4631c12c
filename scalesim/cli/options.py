"""Flags shared by the commands that predict: where the profile comes from, and the scenario."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from scalesim.errors import ScalesimError
from scalesim.jsonio import parse_model, read_json, validation_message
from scalesim.schemas import Profile, Scenario


def parse_int_list(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; 'A-B' doubles from A up to B ('1-8' -> 1, 2, 4, 8).

    Every value must be 1 or more.
    """
    try:
        if "-" in text and "," not in text:
            lo, hi = (int(x) for x in text.split("-"))
            if lo < 1 or hi < lo:
                raise argparse.ArgumentTypeError(
                    f"range '{text}' must start at 1 or more and end at or above its start")
            out, v = [], lo
            while v <= hi:
                out.append(v)
                v *= 2
        else:
            out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a list of whole numbers like 1,2,4,8 or a range like 1-64"
        ) from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': every value must be a whole number of 1 or more")
    return out


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be 1 or more")
    return value


def add_profile_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to predict for")
    g.add_argument("--hardware", metavar="PRESET|FILE",
                   help="hardware preset name or JSON file (scalesim presets lists them)")
    g.add_argument("--workload", metavar="PRESET|FILE", help="workload preset name or JSON file")
    g.add_argument("--profile", metavar="FILE", help="calibration profile JSON (scalesim calibrate)")


def add_scenario_arguments(p: argparse.ArgumentParser, devices_default: str = "1,2,4,8,16") -> None:
    g = p.add_argument_group("scenario")
    g.add_argument("--scenario", metavar="FILE", help="scenario JSON (flags given override it)")
    g.add_argument("--devices", type=parse_int_list, default=None,
                   help=f"device counts, e.g. 1,2,4,8,16 or 1-1024 (default {devices_default})")
    g.add_argument("--gpus-per-node", type=positive_int, help="devices per server")
    batch = g.add_mutually_exclusive_group()
    batch.add_argument("--batch", type=positive_int,
                       help="per-device micro-batch (weak scaling)")
    batch.add_argument("--global-batch", type=positive_int,
                       help="fixed global batch (strong scaling)")
    g.add_argument("--accumulation", type=positive_int, help="micro-steps per optimizer step")
    g.add_argument("--strategy", choices=["ddp", "zero1", "zero2", "zero3"])
    g.add_argument("--zero-framework", choices=["fsdp", "deepspeed"],
                   help="how ZeRO-2/3 run (default fsdp): fsdp gathers and reduce-scatters one "
                   "wrapped block at a time and keeps full gradients under no_sync; deepspeed "
                   "uses its bucket defaults and reduces every micro-step (ZeRO-1 is DeepSpeed's)")
    g.add_argument("--algorithm", choices=["auto", "ring", "tree", "hierarchical"],
                   help="all-reduce algorithm (default auto: NCCL's ring or tree, the faster "
                   "per message; hierarchical is Horovod's, used only when named)")
    g.add_argument("--no-overlap", action="store_true", help="exchange gradients after backward")
    g.add_argument("--bucket-mib", type=float, help="DDP gradient bucket size, MiB (default 25)")
    g.add_argument("--loader-workers", type=int, help="DataLoader workers per device")
    g.add_argument("--straggler-cv", type=float, help="step-time std / mean of one device")
    g.add_argument("--device-cv", type=float,
                   help="speed std / mean across identical devices (default 0.0132, SC'22 study)")
    g.add_argument("--slow-device", type=int, metavar="RANK", help="a persistently slow device")
    g.add_argument("--slow-factor", type=float, help="its compute-time multiplier, e.g. 1.3")
    g.add_argument("--intra-busbw", type=float, metavar="GB/s", help="intra-server bus bandwidth")
    g.add_argument("--inter-busbw", type=float, metavar="GB/s", help="inter-server bus bandwidth")
    g.add_argument("--intra-latency", type=float, metavar="S", help="intra-server step latency")
    g.add_argument("--inter-latency", type=float, metavar="S", help="inter-server step latency")
    g.add_argument("--critical-batch", type=float, help="critical batch size B_noise, samples")
    g.add_argument("--min-samples", type=float, help="E_min: samples to target at a tiny batch")
    g.add_argument("--train-samples", type=float, help="samples in the training run")
    g.add_argument("--epochs", type=float, help="epochs (with --dataset-size)")
    g.add_argument("--dataset-size", type=float, help="samples per epoch (with --epochs)")
    g.add_argument("--price", type=float, metavar="USD", help="price per device-hour")


_FLAG_TO_FIELD = {
    "devices": "devices", "gpus_per_node": "devices_per_node", "batch": "micro_batch",
    "global_batch": "global_batch", "accumulation": "accumulation", "strategy": "strategy",
    "zero_framework": "zero_framework", "algorithm": "algorithm", "bucket_mib": "bucket_mib",
    "loader_workers": "loader_workers",
    "straggler_cv": "straggler_cv", "device_cv": "device_speed_cv", "slow_device": "slow_device",
    "slow_factor": "slow_factor",
    "intra_busbw": "intra_busbw_GBps", "inter_busbw": "inter_busbw_GBps",
    "intra_latency": "intra_latency_s", "inter_latency": "inter_latency_s",
    "critical_batch": "critical_batch_size", "min_samples": "min_samples_to_quality",
    "train_samples": "train_samples", "price": "price_per_device_hour",
}


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """Scenario from --scenario FILE (if any) with the flags on top; errors are one line."""
    base: dict = {}
    if getattr(args, "scenario", None):
        base = parse_model(read_json(args.scenario), Scenario, args.scenario).model_dump()
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
    if (args.slow_factor is not None) != (args.slow_device is not None):
        raise ScalesimError("--slow-device RANK and --slow-factor F go together (e.g. "
                            "--slow-device 3 --slow-factor 1.3)")
    if (args.epochs is None) != (args.dataset_size is None):
        raise ScalesimError("--epochs and --dataset-size go together")
    if args.epochs is not None:
        if args.train_samples is not None:
            raise ScalesimError("give --train-samples or --epochs with --dataset-size, not both")
        base["train_samples"] = args.epochs * args.dataset_size
    try:
        return Scenario.model_validate(base)
    except ValidationError as exc:
        raise ScalesimError(validation_message(exc, "scenario")) from None


def profile_from_args(args: argparse.Namespace) -> Profile:
    from scalesim.profiles import resolve_profile

    return resolve_profile(args.profile, args.hardware, args.workload)
