"""scalesim decide: the decision card (question, options with cost and gain, recommendation)."""

from __future__ import annotations

import argparse

from scalesim.cli.given_words import in_given_words
from scalesim.cli.options import (
    add_profile_arguments,
    add_scenario_arguments,
    positive_int,
    profile_from_args,
    scenario_from_args,
)
from scalesim.errors import KNOB, ScalesimError
from scalesim.layout import knob_refusal

NAME = "decide"
HELP = "what to do at a device count: options with cost, throughput, time and money, and a pick"
EXAMPLE = """examples:
  scalesim decide --devices 1,2,4,8,16
  scalesim decide --devices 1,2,4,8,16 --train-samples 2e9 --focus 16
  scalesim decide --scenario what-if.json --focus 16 --json    (the planner's card, same numbers)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_arguments(p)
    add_scenario_arguments(p)
    p.add_argument("--focus", type=positive_int, metavar="N",
                   help="device count to decide at (default: the knee of --devices, else the "
                   "largest), as the planner's 'device count for remedies'")
    p.add_argument("--json", action="store_true", help="print the card as JSON")


def render_card(card) -> str:
    """The card as text (its throughput in the card's own ``unit``), every line at most
    ``terminal.COLUMNS`` characters: an option too long for its column is cut to a short title
    and a '[1] ...' line under the table says it whole (``terminal.fit_table``); the JSON and
    the app's card keep the whole title in the row."""
    from scalesim.cli.terminal import fit_table, wrap
    from scalesim.decision import card_rows

    table, titles = fit_table(card_rows(card))
    lines = [card.question, "", *table, *titles]
    lines += ["", f"recommendation: {card.recommendation}", f"main assumption: {card.assumption}"]
    if card.goal:
        lines.append(f"time to finish = {card.goal} (large-batch penalty included when a "
                     "critical batch size is known)")
    sources: dict[str, list[str]] = {}
    for o in [card.now, *card.options]:
        sources.setdefault(o.price_source, []).append(o.title)
    for source, titles in sources.items():  # one source: not every title again
        rows_priced = "every row" if len(sources) == 1 else "; ".join(titles)
        lines.append(f"price ({rows_priced}): {source}")
    lines += [f"note: {n}" for n in card.notes]
    return "\n".join(out for line in lines for out in (wrap(line) if line else [""]))


def run(args: argparse.Namespace) -> int:
    from scalesim.cli.cmd_predict import notes_before, print_answer
    from scalesim.decision import decide
    from scalesim.knee import focus_devices
    from scalesim.layout_predict import runnable_counts
    from scalesim.predict import predict

    scenario = scenario_from_args(args)
    profile = profile_from_args(args, scenario)
    # the counts the layout, global batch or shard group cannot run left out with a note, as
    # predict and the app leave them (none runs: one line)
    scenario, left_out = runnable_counts(profile, scenario)
    rows = predict(profile, scenario)
    if args.focus is not None and args.focus not in [r.devices for r in rows]:
        # the counts by where they came from (a --scenario file's key: ``given_words``)
        run = " that run" if left_out else ""  # one it asked may be left out
        raise ScalesimError(knob_refusal(f"--focus {args.focus} is not one of {KNOB.devices}"
                                         f"{run} ({', '.join(str(r.devices) for r in rows)})"))
    focus = focus_devices(rows, args.focus)
    card = decide(profile, scenario, focus)
    # each setting a note names by where it came from (a --scenario file's key), as predict's
    said = [in_given_words(n, args) for n in [
        *left_out, *notes_before(profile, scenario, [focus], "the decision ('As is')")]]
    return print_answer(card, said, args.json, render_card, "the decision card")
