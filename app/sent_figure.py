"""The share link's headline figure (``hs``, session 46): the throughput the sender's headline
showed at its focus device count, so that a receiver whose scalesim predicts another is told
the model changed since the link was sent, with both figures.

A link's fingerprint (``ph``) covers the preset's numbers only, not the model's equations: a
model change opened an old link with other numbers and no word. Pure: no streamlit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from scalesim.device_nouns import Nouns
from scalesim.figures import THROUGHPUT_DIGITS, rate, signed_percent

HEADLINE_KEY = "hs"  # the share link's key: '<devices>_<samples/s>' or '<devices>_oom'
NOT_RUNNABLE = "oom"  # the headline said 'not runnable' (the focus did not fit in memory)
MAX_SAMPLES_PER_S = 1e15  # above any throughput a page shows: a larger one was edited
_FORM = re.compile(r"(\d{1,6})_(oom|[0-9][0-9.e-]{0,15})")
MODEL_CHANGED = ("the model changed since the link was sent (each equation: docs/model.md; "
                 "what each session changed: docs/reliability.md), so this page's numbers are "
                 "not the ones the sender saw")


@dataclass(frozen=True)
class SentFigure:
    """What the sender's headline showed: ``samples_per_s`` (``THROUGHPUT_DIGITS`` significant
    digits, as the page writes it) on ``devices``; None where it said not runnable."""

    devices: int
    samples_per_s: float | None


def figure_text(devices: int, samples_per_s: float, fits: bool) -> str:
    """The link's value: '16_4016' (devices, then the headline's throughput in samples/s
    rounded as the page shows it, no exponent from 1,000 up, so no '+' to escape), or '16_oom'
    where the focus does not fit."""
    if not fits:
        return f"{devices}_{NOT_RUNNABLE}"
    rounded = float(f"{samples_per_s:.{THROUGHPUT_DIGITS}g}")
    shown = f"{rounded:.0f}" if rounded >= 10 ** (THROUGHPUT_DIGITS - 1) else \
        f"{rounded:.{THROUGHPUT_DIGITS}g}"
    return f"{devices}_{shown}"


def parse_figure(text: str, max_devices: int) -> SentFigure | str:
    """The sent figure of the link's value ``text``, or why it is none (a sentence part);
    ``max_devices``: the planner's largest device count (``state.MAX_DEVICES``)."""
    match = _FORM.fullmatch(text)
    if match is None:
        return "not a device count and a throughput (samples per second)"
    devices = int(match.group(1))
    if not 1 <= devices <= max_devices:
        return f"{devices} devices is outside 1 to {max_devices:,}"
    if match.group(2) == NOT_RUNNABLE:
        return SentFigure(devices, None)
    try:
        value = float(match.group(2))
    except ValueError:
        return "its throughput is not a number"
    if not (math.isfinite(value) and 0 < value <= MAX_SAMPLES_PER_S):
        return f"its throughput is not above 0 and at most {MAX_SAMPLES_PER_S:.0e} per second"
    return SentFigure(devices, value)


def differs(sent: float, now: float) -> bool:
    """True where ``now`` is off ``sent`` by more than the rounding of ``sent`` (half a unit in
    its last significant digit): the two figures the page writes differ."""
    half_unit = 0.5 * 10 ** (math.floor(math.log10(sent)) - (THROUGHPUT_DIGITS - 1))
    return abs(now - sent) > half_unit * (1 + 1e-9)


def changed_note(sent: SentFigure, now: tuple[float, bool] | None, unit: str,
                 words: Nouns) -> str | None:
    """The receiver's note where this scalesim's headline of the shared what-if differs from
    the sent one: ``now`` (samples/s, fits) at the sent device count, None where it predicts
    no row there. None where both say the same (within the rounding)."""
    on = words.count(sent.devices)
    was = "not runnable" if sent.samples_per_s is None else rate(sent.samples_per_s, unit)
    if now is None:
        return (f"Sent as {was} on {on}; this scalesim predicts nothing on {on} for this "
                f"what-if: {MODEL_CHANGED}.")
    per_s, fits = now
    if not fits:
        if sent.samples_per_s is None:
            return None
        return f"Sent as {was} on {on}; this scalesim predicts not runnable: {MODEL_CHANGED}."
    if sent.samples_per_s is not None and not differs(sent.samples_per_s, per_s):
        return None
    change = ("" if sent.samples_per_s is None
              else f" ({signed_percent(per_s / sent.samples_per_s - 1)})")
    return (f"Sent as {was} on {on}; this scalesim predicts {rate(per_s, unit)}{change}: "
            f"{MODEL_CHANGED}.")
