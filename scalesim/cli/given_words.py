"""A refusal said as the user gave its settings: a ``--scenario`` file's by the file's own keys
('s.json: sequence_parallel true needs tp 2 or more ...'), a flag's by the flag
('--sequence-parallel needs --tp 2 or more ...').

A refusal names its knobs through a template (``errors.Refusal.template``, the CLI's own
``cli_template``); its line says them as the CLI's flags (``layout.knob_refusal``). Where a
setting it names came from a ``--scenario`` file and no flag replaced it, the line that flag's
words make is wrong: no flag was given. ``in_given_words`` says such a line again, each knob by
where its value came from, the file named first, as the price's refusal names the file's
``price_per_device_hour``; the one place the CLI does it (``main``'s error line)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from scalesim.bounds import KNOBS, LAYOUT_KNOBS, flag_of, values_flag
from scalesim.errors import controls_named_of, in_words_of, template_fields, template_of
from scalesim.schemas import Scenario, ScenarioLayout

# the keys a scenario file names its settings by (the layout's inside its "layout" object)
_LAYOUT_KEYS = frozenset(ScenarioLayout.model_fields) - {"schema_version"}
SCENARIO_KEYS = (frozenset(Scenario.model_fields) | _LAYOUT_KEYS) - {"schema_version", "layout"}
_SWITCHES = frozenset(k.field for k in KNOBS + LAYOUT_KNOBS if k.switch)
# the name of the scenario of the file and the flags together in its refusals
# (``options.scenario_from_args``), which the file's path replaces where the file is named
MERGED = "scenario"


def file_settings(data: Any) -> dict[str, Any]:
    """The settings a scenario file's JSON (``data``) gives, by field, as written: its keys and
    its layout's; {} for anything but an object (the file's own refusal says so)."""
    if not isinstance(data, dict):
        return {}
    settings = {k: v for k, v in data.items() if k in SCENARIO_KEYS}
    layout = data.get("layout")
    if isinstance(layout, dict):
        settings.update({k: v for k, v in layout.items() if k in _LAYOUT_KEYS})
    return settings


def flags_given(args: argparse.Namespace) -> set[str]:
    """The knobs a flag of ``args`` set: its own flag, or a sweep's list of values for it
    (``bounds.values_flag``), which the CLI's lines name by its flag as well."""
    return {knob.field for knob in KNOBS + LAYOUT_KNOBS if knob.flag and any(
        getattr(args, flag.removeprefix("--").replace("-", "_"), None) not in (None, False)
        for flag in (knob.flag, values_flag(knob.field)))}


def in_given_words(error: BaseException, args: argparse.Namespace) -> str:
    """``error``'s line with each knob its template names said as the user gave it where some
    came from the ``--scenario`` file (``args._scenario_settings``, ``file_settings``) and no
    flag: a knob the file holds by the file's key (a switch's with the file's value:
    'sequence_parallel true'), any other by its flag (a flag's, or one given nowhere: the user
    may add either, and a key the file lacks reads as 'edit the file'), the file's path first
    (in place of the merged scenario's name, ``MERGED``); every knob the file holds by its key
    where the line is the file's own refusal (it starts with the path: the file's fields, each
    its type and bounds, are read alone, before the flags; its rules across fields are the
    merged scenario's). Its own line
    where no knob it names came from the file, where it names none, or where its caller said
    them in its own words already (``ScalesimError.controls_named``: the sweep's
    '--tp-values')."""
    settings = getattr(args, "_scenario_settings", None) or {}
    template = template_of(error, cli=True)
    fields = template_fields(template) if template else ()
    prefix, line = f"{getattr(args, 'scenario', None)}: ", str(error)
    flags = set() if line.startswith(prefix) else flags_given(args)
    if (not any(f in settings and f not in flags for f in fields)
            or set(fields) & set(controls_named_of(error))):
        return line

    def named(field: str) -> str:  # a field the file does not hold was not given: its flag
        if field in flags or field not in settings:
            return flag_of(field)
        if field in _SWITCHES and isinstance(settings.get(field), bool):
            return f"{field} {json.dumps(settings[field])}"
        return field

    text = str(in_words_of(error, named, cli=True))
    return text if text.startswith(prefix) else prefix + text.removeprefix(f"{MERGED}: ")
