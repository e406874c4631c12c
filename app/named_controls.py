"""Which of the planner's controls an error names, so that the page's fallback sets back only
those and keeps the rest of a what-if (a link's 64 devices, its price, its other layout).

An error names a control by one of its names followed by the control's value ('tp 16',
'shard group 3', '--seq-len 1,073,741,824', 'strategy zero3'), or by the value followed by the
quantity's unit ('1024 NICs', '10000 Gbit/s'). A control's names come from its knob table row
(``bounds.KNOB_BY_URL_KEY``: the scenario field, written with spaces too, its CLI flag and its
link key); a control with no row (NICs, Gbit/s per NIC) goes by its quantity's unit alone
(``bounds.QUANTITIES``). Only a control whose value the error quotes is named, so "use pp 1"
in a fix does not name a state at pp 2."""

from __future__ import annotations

import re
from typing import Any

from scalesim.bounds import KNOB_BY_URL_KEY, QUANTITIES
from scalesim.figures import exact, number

from .state import AppState

# the controls without a knob row that an error names by the unit of their quantity
UNIT_NAMED = {"nics": "nics_per_node", "gbit": "gbit_per_nic"}


def control_names(key: str) -> tuple[str, ...]:
    """The names an error may call control ``key`` (an ``AppState`` field, the link key) by,
    written before its value: its knob row's field ('shard_group', 'shard group'), flag
    ('--shard-group', 'shard-group') and link key ('sg')."""
    knob = KNOB_BY_URL_KEY.get(key)
    if knob is None:
        return ()
    names = [knob.field, knob.field.replace("_", " "), key]
    if knob.flag:
        names += [knob.flag, knob.flag.lstrip("-")]
    return tuple(dict.fromkeys(names))


def value_texts(value: Any) -> tuple[str, ...]:
    """The ways an error writes ``value``: '16', '1,073,741,824', '10000', '1e+06', 'zero3'."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    texts = [exact(value), number(value), f"{value:,}", f"{value:g}", f"{value:,g}"]
    if isinstance(value, float) and value == int(value):
        texts += [str(int(value)), f"{int(value):,}"]
    return tuple(dict.fromkeys(t for t in texts if t))


def _quoted(text: str, name: str, values: tuple[str, ...], before: bool) -> int | None:
    """Where ``text`` says ``name`` beside one of ``values`` (the name before the value, or
    after it with ``before`` False), as whole words; None where it does not."""
    alts = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
    word = re.escape(name)
    pattern = (rf"(?<![\w-]){word}[ =]'?(?:{alts})(?!\w|[.,]\d)" if before else
               rf"(?<![\w.,])(?:{alts}) {word}(?!\w)")
    m = re.search(pattern, text, flags=re.IGNORECASE if before else 0)
    return None if m is None else m.start()


def named_controls(error: str, state: AppState, defaults: dict[str, Any]) -> list[str]:
    """The controls of ``state`` that ``error`` names with their value and that are not at
    their default (``defaults``: a control's default where it is not ``AppState``'s own, the
    profile's), in the order the error names them."""
    found: dict[str, int] = {}
    for key in AppState.model_fields:
        value = getattr(state, key)
        if value == defaults.get(key, AppState.model_fields[key].default):
            continue
        values = value_texts(value)
        if not values:
            continue
        at = [_quoted(error, n, values, before=True) for n in control_names(key)]
        if key in UNIT_NAMED:
            at.append(_quoted(error, QUANTITIES[UNIT_NAMED[key]].unit, values, before=False))
        if places := [a for a in at if a is not None]:
            found[key] = min(places)
    return sorted(found, key=found.__getitem__)
