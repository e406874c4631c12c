"""scalesim sweep: evaluate a grid of scenarios in one vectorised call; CSV or JSON out."""

from __future__ import annotations

import argparse
import sys

from scalesim.bounds import KNOB_BY_FIELD, flag_list_type
from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    profile_from_args,
    scenario_from_args,
)
from scalesim.errors import ScalesimError

NAME = "sweep"
HELP = "evaluate every combination of knob values (a grid) and write CSV or JSON"
EXAMPLE = """examples:
  scalesim sweep --devices 1-1024 --batch-values 16,32,64 --strategy-values ddp,zero3 --out grid.csv
  scalesim sweep --devices 8,16,32 --inter-busbw-values 12,25,50,100,192 --format json"""


def _words(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _on_off(text: str) -> list[bool]:
    table = {"on": True, "off": False, "true": True, "false": False}
    try:
        return [table[w.lower()] for w in _words(text)]
    except KeyError:
        raise argparse.ArgumentTypeError(f"'{text}' should be a list of on/off") from None


def _values(axis: str):
    """A numeric axis's list parser, with the knob's bounds (scalesim.bounds)."""
    return flag_list_type(KNOB_BY_FIELD[axis].quantity)


# flag -> (sweep axis, parser)
VALUE_FLAGS = {
    "batch_values": ("micro_batch", _values("micro_batch")),
    "global_batch_values": ("global_batch", _values("global_batch")),
    "accumulation_values": ("accumulation", _values("accumulation")),
    "strategy_values": ("strategy", _words),
    "zero_framework_values": ("zero_framework", _words),
    "algorithm_values": ("algorithm", _words),
    "overlap_values": ("overlap", _on_off),
    "bucket_mib_values": ("bucket_mib", _values("bucket_mib")),
    "intra_busbw_values": ("intra_busbw_GBps", _values("intra_busbw_GBps")),
    "inter_busbw_values": ("inter_busbw_GBps", _values("inter_busbw_GBps")),
    "straggler_cv_values": ("straggler_cv", _values("straggler_cv")),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    g = p.add_argument_group("grid axes (comma-separated values; each multiplies the grid)")
    for flag, (axis, parser) in VALUE_FLAGS.items():
        g.add_argument("--" + flag.replace("_", "-"), type=parser, metavar="V,V,...",
                       help=f"values of {axis}")
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="FILE", help="write to FILE (.csv or .json); default stdout")
    o.add_argument("--format", choices=["csv", "json"], help="output format (default from --out, "
                   "else csv)")


def _to_text(columns: dict, fmt: str) -> str:
    from scalesim.jsonio import to_json_text

    names = list(columns)
    n = len(next(iter(columns.values())))
    if fmt == "json":
        rows = [{k: columns[k][i].item() for k in names} for i in range(n)]
        return to_json_text(rows, indent=None, what="the sweep") + "\n"
    lines = [",".join(names)]
    for i in range(n):
        lines.append(",".join(_cell(columns[k][i]) for k in names))
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    value = value.item()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def run(args: argparse.Namespace) -> int:
    from scalesim.jsonio import atomic_write_text
    from scalesim.sweep import sweep

    profile = profile_from_args(args)
    scenario = scenario_from_args(args)
    axes = {axis: getattr(args, flag) for flag, (axis, _) in VALUE_FLAGS.items()
            if getattr(args, flag) is not None}
    if "micro_batch" in axes and "global_batch" in axes:
        raise ScalesimError("give --batch-values or --global-batch-values, not both")
    if "micro_batch" in axes and scenario.global_batch is not None:
        raise ScalesimError("--batch-values sweeps weak scaling; drop --global-batch")
    if "global_batch" in axes and scenario.micro_batch is not None:
        raise ScalesimError("--global-batch-values sweeps strong scaling; drop --batch")
    result = sweep(profile, scenario, axes)
    fmt = args.format or ("json" if (args.out or "").endswith(".json") else "csv")
    text = _to_text(result.columns, fmt)
    dropped = (f"{result.dropped} strong-scaling combinations dropped: the global batch does not "
               "split evenly over devices x accumulation" if result.dropped else "")
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {result.size} scenarios to {args.out}" + (f" ({dropped})" if dropped else ""),
              file=sys.stderr)
    else:
        sys.stdout.write(text)
        if dropped:
            print(f"note: {dropped}", file=sys.stderr)
    return 0
