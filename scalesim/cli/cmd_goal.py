"""scalesim goal: the cheapest plan that trains within a deadline and a budget, and the trade-off."""

from __future__ import annotations

import argparse
import math
import re

from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES, KNOB_BY_FIELD, bound, flag_type
from scalesim.cli.given_words import in_given_words
from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    profile_from_args,
    scenario_from_args,
)
from scalesim.device_nouns import hardware_nouns
from scalesim.errors import KNOB, Refusal, excerpt
from scalesim.figures import DAYS_PER_YEAR
from scalesim.layout import knob_refusal
from scalesim.money import usd_type

NAME = "goal"
HELP = "cheapest plan that trains N samples within a deadline and a budget (and the time/money front)"
EXAMPLE = """examples:
  scalesim goal --train-samples 2e9 --deadline 3d --budget 50000
  scalesim goal --train-samples 2e9 --critical-batch 4096 --deadline 36h --budget 20000 --json
  scalesim goal --hardware dgx-h100 --workload gpt-7b --train-samples 1e8 --deadline 7d \\
      --budget 500000 --max-devices 512"""

_UNIT_WORDS = {1.0: ("s", "sec", "secs", "second", "seconds"),
               60.0: ("m", "min", "mins", "minute", "minutes"),
               3600.0: ("h", "hr", "hrs", "hour", "hours"),
               86400.0: ("d", "day", "days"), 604800.0: ("w", "wk", "week", "weeks"),
               DAYS_PER_YEAR * 86400.0: ("y", "yr", "yrs", "year", "years")}  # Julian years
_UNITS_S = {word: seconds for seconds, words in _UNIT_WORDS.items() for word in words}


def duration_s(text: str) -> float:
    """'3d', '72h', '90m', '3600s', '3 weeks', '1y' (a Julian year, as ``figures.duration_text``
    says one) or a number of seconds -> seconds (positive, finite; a signed one is read and
    refused by the bound, which names the value and the rule; one past a float's range is
    said to overflow, as typed)."""
    match = re.fullmatch(r"\s*([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if not match or match.group(2) not in ("", *_UNITS_S):
        raise argparse.ArgumentTypeError(
            f"{excerpt(repr(text))} is not a duration like 3d, 72h, 90m, 2w or 3600 (seconds); "
            "a unit is s, m, h, d, w or y, or its word (3 weeks)")
    value = float(match.group(1)) * _UNITS_S.get(match.group(2) or "s", 1.0)
    b = bound("deadline_s")
    if math.isinf(value):  # '1e400', '1e308d': not 'inf is not a finite number'
        raise argparse.ArgumentTypeError(f"{excerpt(repr(text.strip()))} overflows a float; it is "
                                         f"outside {b.text()} ({b.why})")
    why = b.problem(value)
    if why is not None:  # the bound quotes the seconds; with a unit, say what was typed too
        raise argparse.ArgumentTypeError(f"'{text.strip()}': {why}" if match.group(2) else why)
    return value


# A bare number below this many seconds may be days or hours meant: goal says how it read it
BARE_DEADLINE_NOTE_BELOW_S = 3600.0


class DeadlineAction(argparse.Action):
    """``--deadline``: seconds (``duration_s``), and whether the text was a bare number
    (``deadline_bare``), so that ``deadline_note`` can say how a short one was read."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            seconds = duration_s(values)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        setattr(namespace, self.dest, seconds)
        bare = re.fullmatch(r"[+-]?[0-9.e+-]+", values.strip().lower()) is not None
        namespace.deadline_bare = values.strip() if bare else None


def deadline_note(seconds: float, bare: str | None) -> str | None:
    """'--deadline 30 was read as 30 seconds ...' where the deadline was a bare number
    (``bare``: its text) under ``BARE_DEADLINE_NOTE_BELOW_S`` (the documented unit is seconds;
    a user may have meant days), else None."""
    if bare is None or seconds >= BARE_DEADLINE_NOTE_BELOW_S:
        return None
    return (f"--deadline {bare} was read as {bare} seconds (a number without a unit is "
            f"seconds); for days write --deadline {bare}d, for hours {bare}h")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    for action in p._actions:  # --help says what run() does with the flags goal searches itself
        if action.dest in SEARCHED:
            action.help = str(searched_refusal(action.dest))
    g = p.add_argument_group("goal")
    g.add_argument(
        "--deadline",
        action=DeadlineAction,
        required=True,
        metavar="TIME",
        help="train within this long: 3d, 72h, 90m, 2w, 1y (a Julian year) or seconds",
    )
    g.add_argument(
        "--budget",
        type=usd_type("budget_usd"),
        required=True,
        metavar="USD",
        help="spend at most this many US dollars, e.g. 50000 or $50,000",
    )
    searched = KNOB_BY_FIELD["max_devices"]  # its flag and bounds: the knob table's row
    g.add_argument(
        searched.flag,
        type=flag_type(searched.quantity),
        default=GOAL_DEFAULT_MAX_DEVICES,
        metavar="N",
        help=f"largest device count to consider (default {GOAL_DEFAULT_MAX_DEVICES})",
    )
    layout = KNOB_BY_FIELD["goal_layout"]  # its flag and choices: the knob table's row
    g.add_argument(
        layout.flag,
        dest="goal_layout",
        choices=layout.choices,
        default=None,
        help="search: at each device count the best layout scalesim plan finds (tp x pp x cp, "
        "schedule, recompute, sequence parallelism), for a workload with a transformer shape; "
        "given: keep the scenario's (--tp, --pp, --cp, --recompute) at every count. Default: "
        "search for a transformer workload given none of --tp --pp --cp --schedule "
        "--virtual-stages --recompute --sequence-parallel --shard-group, else given",
    )
    p.add_argument("--json", action="store_true", help="print the answer as JSON")


def render(answer) -> str:
    """The answer as text, every line at most ``terminal.COLUMNS`` characters: its sentences
    and notes wrapped (``terminal.wrap``), the Pareto front and the faster networks as tables
    whose plan wraps inside its column (``terminal.hanging_table``)."""
    from scalesim.cli.terminal import hanging_table, wrap
    from scalesim.figures import amount
    from scalesim.figures import duration_text as days

    def prose(*texts: str) -> list[str]:  # each wrapped; '' a blank line
        return [out for text in texts for out in (wrap(text) if text else [""])]

    def cells(p) -> dict[str, str]:  # a plan's time, money and verdict; '-' where none fits
        if p is None:
            return {"time": "-", "USD": "-", "meets": "no"}
        return {"time": days(p.time_s), "USD": amount(p.cost_usd), "meets": "yes" if p.meets else "no"}

    lines = prose(answer.sentence, *([answer.network_sentence] if answer.network_sentence else []),
                  *([answer.need_sentence] if answer.need_sentence else []), "",
                  f"goal: {answer.goal} within {days(answer.deadline_s)} for at most "
                  f"${amount(answer.budget_usd)}; {answer.searched_words()}", "")
    if not answer.front:  # nothing runs: a table header over no rows says nothing
        lines.append("time against money: no Pareto front, no plan fits in memory")
    else:
        lines.append("time against money (Pareto front: no plan is both sooner and cheaper):")
        lines += hanging_table([{**cells(p), "plan": answer.describe(p)} for p in answer.front])
    networks = []
    for n in answer.networks:
        link = (f"{n.nics_per_node} x {n.gbit_per_nic:g} Gb/s, {n.busbw_said(answer.words)}, "
                f"{n.latency_s * 1e6:g} us")
        link += f", {n.nics_needed}" if n.nics_needed else ""
        price = (f"+${amount(n.extra_usd_per_server_hour)} a {answer.words.server}-hour"
                 if n.priced else "no public price: USD is the devices' alone")
        said = "no plan fits" if n.plan is None else answer.describe(n.plan)
        networks.append({**cells(n.plan), "network": f"{n.name} ({link}; {price}): {said}"})
    if networks:
        lines += ["", "faster networks (as scalesim decide runs them), each one's best plan:",
                  *hanging_table(networks)]
    lines += prose(*(f"note: {n}" for n in answer.notes))
    return "\n".join(lines)


# Scenario knobs whose values goal searches over itself (``scalesim.goal``): (why the value is
# not used, what to give instead), each knob by its slot (``errors.KNOB``: the flag, a
# --scenario file's key, ``given_words``). Given as a flag, each would change nothing in its
# answer: refused (``searched_refusal``). A --scenario file's devices or strategy is noted as not
# used, the answer run: a file is one scenario shared with predict, sweep and decide, and goal's
# answer names the device count and strategy it picked in their place; a file's global batch is
# refused, as the flag (and ``goal.seek``): the answer's global batch would not be the one the
# file fixes for training.
SEARCHED = {
    "devices": (f"{KNOB.devices} is not used: goal searches every device count up to "
                f"{KNOB.max_devices}", f"give {KNOB.max_devices} N instead"),
    "strategy": (f"{KNOB.strategy} is not used: goal searches DDP and ZeRO-1/2/3 and names the "
                 "one it picks", "drop it"),
    "global_batch": (f"{KNOB.global_batch} is not used: goal varies the per-device batch "
                     "(micro-batch and accumulation) itself",
                     f"drop it, and give {KNOB.micro_batch} N for the micro-batch it starts from"),
}
# a --scenario file's settings goal notes as not used and runs without (``SEARCHED``)
FILE_NOTED = ("devices", "strategy")


def searched_refusal(field: str) -> Refusal:
    """'--strategy is not used: goal searches ...; drop it': goal's refusal of a value of knob
    ``field`` it searches itself (``SEARCHED``), as a template (a --scenario file's by its key,
    ``given_words``)."""
    why, fix = SEARCHED[field]
    return knob_refusal(f"{why}; {fix}", (field,))


def check_goal_inputs(profile, scenario) -> None:
    """What ``goal.seek`` needs and cannot find, said with the flags that give it (seek's own
    messages name the scenario's fields, for the app and Python callers)."""
    from scalesim.errors import ScalesimError
    from scalesim.training_time import TRAINING_LENGTH_KNOBS, resolve_goal

    goal = resolve_goal(profile, scenario)
    if goal.kind is None:
        raise ScalesimError(
            "goal needs a training length: give --train-samples N (or --epochs "
            "with --dataset-size), or --min-samples with --critical-batch for "
            "time to quality", knobs=TRAINING_LENGTH_KNOBS)
    if goal.price_per_device_hour is None:
        raise ScalesimError(
            f"goal needs a price: hardware '{profile.hardware.name}' lists none; "
            f"give --price USD per {hardware_nouns(profile.hardware).device}-hour",
            knobs=("price_per_device_hour",))


def run(args: argparse.Namespace) -> int:
    from scalesim.cli.cmd_predict import notes_before, print_answer
    from scalesim.errors import ScalesimError
    from scalesim.goal import searched_scenarios, seek

    for dest in SEARCHED:
        if getattr(args, dest) is not None:
            raise ScalesimError(searched_refusal(dest))
    scenario = scenario_from_args(args)
    # the --scenario file's settings goal searches (no flag gave one: refused above), each by
    # its key, the file first (``given_words``): its global batch refused (main's line), its
    # devices and strategy noted as not used
    in_file = getattr(args, "_scenario_settings", None) or {}
    if "global_batch" in in_file and scenario.global_batch is not None:  # not --batch's over it
        raise ScalesimError(searched_refusal("global_batch"))
    not_used = [in_given_words(knob_refusal(SEARCHED[f][0], (f,)), args)
                for f in FILE_NOTED if f in in_file]
    profile = profile_from_args(args, scenario)
    check_goal_inputs(profile, scenario)
    answer = seek(profile, scenario, args.deadline, args.budget, args.max_devices,
                  layout=args.goal_layout)
    # what predict says of the flags, where it holds for every strategy and accumulation goal
    # searches (as sweep keeps a note of its swept values): --zero-framework and --grad-sync
    # apply to its ZeRO plans, though the base scenario's strategy is ddp
    of_each = [notes_before(profile, s, [args.max_devices], "any plan searched (--max-devices)")
               for s in searched_scenarios(scenario)]
    said = not_used + [in_given_words(n, args)  # by where each setting came from, as predict's
                       for n in of_each[0] if all(n in notes for notes in of_each[1:])]
    if note := deadline_note(args.deadline, getattr(args, "deadline_bare", None)):
        said.insert(0, note)
    return print_answer(answer, said, args.json, render, "the goal's answer")
