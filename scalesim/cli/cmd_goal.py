"""scalesim goal: the cheapest plan that trains within a deadline and a budget, and the trade-off."""

from __future__ import annotations

import argparse
import math
import re

from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES, flag_type
from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    profile_from_args,
    scenario_from_args,
)
from scalesim.jsonio import to_json_text

NAME = "goal"
HELP = "cheapest plan that trains N samples within a deadline and a budget (and the time/money front)"
EXAMPLE = """examples:
  scalesim goal --train-samples 2e9 --deadline 3d --budget 50000
  scalesim goal --train-samples 2e9 --critical-batch 4096 --deadline 36h --budget 20000 --json
  scalesim goal --hardware dgx-h100 --workload gpt-7b --train-samples 1e8 --deadline 7d \\
      --budget 500000 --max-devices 512"""

_UNITS_S = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def duration_s(text: str) -> float:
    """'3d', '72h', '90m', '3600s' or a number of seconds -> seconds (positive, finite)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if not match or match.group(2) not in ("", *_UNITS_S):
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration like 3d, 72h, 90m or 3600")
    value = float(match.group(1)) * _UNITS_S.get(match.group(2) or "s", 1.0)
    if not math.isfinite(value) or value <= 0 or value > 100 * 365 * 86400:
        raise argparse.ArgumentTypeError(f"'{text}' must be more than 0 and at most 100 years")
    return value


def usd(text: str) -> float:
    try:
        value = float(text.replace(",", "").lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an amount of US dollars") from None
    if not math.isfinite(value) or value <= 0 or value > 1e12:
        raise argparse.ArgumentTypeError(f"'{text}' must be more than 0 and at most 1e12 USD")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    g = p.add_argument_group("goal")
    g.add_argument("--deadline", type=duration_s, required=True, metavar="TIME",
                   help="train within this long: 3d, 72h, 90m or seconds")
    g.add_argument("--budget", type=usd, required=True, metavar="USD",
                   help="spend at most this many US dollars")
    g.add_argument("--max-devices", type=flag_type("devices"), default=GOAL_DEFAULT_MAX_DEVICES,
                   metavar="N", help="largest device count to consider "
                   f"(default {GOAL_DEFAULT_MAX_DEVICES})")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")


def render(answer) -> str:
    from scalesim.goal import describe

    def days(s: float) -> str:
        h = s / 3600.0
        return f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} d"

    lines = [answer.sentence, "",
             f"goal: {answer.goal} within {days(answer.deadline_s)} for at most "
             f"${answer.budget_usd:,.0f}; {answer.evaluated:,} plans evaluated, "
             f"{answer.runnable:,} fit in memory", "",
             "time against money (Pareto front: no plan is both sooner and cheaper):",
             f"{'time':>9} {'USD':>12}  meets  plan"]
    for p in answer.front:
        lines.append(f"{days(p.time_s):>9} {p.cost_usd:>12,.0f}  {'yes' if p.meets else ' no':>5}  "
                     f"{describe(p)}")
    lines += [f"note: {n}" for n in answer.notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from scalesim.goal import seek

    profile = profile_from_args(args)
    scenario = scenario_from_args(args)
    answer = seek(profile, scenario, args.deadline, args.budget, args.max_devices)
    if args.json:
        print(to_json_text(answer.to_dict(), what="the goal's answer"))
    else:
        print(render(answer))
    return 0
