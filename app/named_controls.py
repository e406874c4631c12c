"""Which of the planner's controls an error names, so that the page's fallback sets back only
those and keeps the rest of a what-if (a link's 64 devices, its price, its other layout).

An error names its controls in a field of its own, ``ScalesimError.knobs``: the knob table's
fields (``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``) whose values it refuses, in the order its fix
asks to change them, set where the check raises; a control is the knob's link key
(``Knob.url_key``, an ``AppState`` field), and the NICs and Gbit/s of a preset inter-server
link, which have no knob row, go by their quantity's name. The message's text is not read: an
error that names no knob (a profile's problem) names no control."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scalesim.bounds import KNOBS, LAYOUT_KNOBS, flag_of
from scalesim.device_nouns import Nouns
from scalesim.errors import ScalesimError, controls_named_of, in_words_of, knobs_of
from scalesim.layout import HARDWARE_KNOB

from .control_labels import in_words, label
from .state import FIELD_LABELS, AppState

# each refusable name's control: a knob's link key, or for a quantity with no knob row its own
CONTROL_OF_KNOB = {
    **{k.field: k.url_key for k in KNOBS + LAYOUT_KNOBS if k.url_key in AppState.model_fields},
    "nics_per_node": "nics", "gbit_per_nic": "gbit", HARDWARE_KNOB: "hw",
}
# the controls that choose the profile: a way out a box names, never set back by a fallback
# (it predicts on the page's profile, which another preset is not)
PROFILE_CONTROLS = ("hw",)
# how a box names the hardware control where an uploaded profile hides the preset pickers
LEAVE_PROFILE_FIRST = "Hardware preset (after Leave this profile)"


def named_controls(error: BaseException, state: AppState, defaults: dict[str, Any]) -> list[str]:
    """The controls of ``state`` that ``error``'s knobs name and that are not at their default
    (``defaults``: a control's default where it is not ``AppState``'s own, the profile's), in
    the order the error names them; [] for an error without knobs."""
    named = [CONTROL_OF_KNOB[k] for k in knobs_of(error)
             if k in CONTROL_OF_KNOB and CONTROL_OF_KNOB[k] not in PROFILE_CONTROLS]
    return [key for key in dict.fromkeys(named)
            if getattr(state, key) != defaults.get(key, AppState.model_fields[key].default)]


def controls_to_change(error: BaseException, state: AppState, words: Nouns) -> str:
    """' Controls to change: Samples in the training run, E_min, Critical batch size.' for a
    refusal's box (the Layouts and Goal tabs': a refusal of what a tab asks, where the page above
    it was predicted; the page's own 'Cannot predict this scenario'): the labels of the controls
    ``error``'s knobs name, at their default or not, in the order named (the device counts by
    the control the sidebar shows for them: its list, else the largest count); '' for an error
    that names none. The knobs say which controls; those the line names itself in the app's
    words (``ScalesimError.controls_named``: goal's refusals through ``GoalControls``, a count
    refusal through the app's namer) are not said twice. The hardware preset (a tp another
    preset's server holds) is named as its picker, or where an uploaded profile hides the
    pickers as the button that brings them back first. The message's text is not read."""
    shown = {"dlist": "dlist" if state.grid == "list" else "dmax"}
    said = set(controls_named_of(error))
    keys = dict.fromkeys(shown.get(k, k) for k in (CONTROL_OF_KNOB.get(n) for n in knobs_of(error)
                                                   if n not in said) if k is not None)
    hidden = {"hw": LEAVE_PROFILE_FIRST} if state.src == "custom" else {}
    labels = [hidden.get(k) or in_words(FIELD_LABELS.get(k, k), words) for k in keys]
    if not labels:
        return ""
    return f" {'Control' if len(labels) == 1 else 'Controls'} to change: {', '.join(labels)}."


def control_namer(state: AppState, words: Nouns) -> Callable[[str], str]:
    """A knob's name in a line, as the sidebar labels its control in the profile's nouns (the
    label of its link key, ``CONTROL_OF_KNOB``; 'Shard group (HSDP)'): the device counts by the
    control that sets them, the list's or the largest count's; a knob with no control by its
    CLI flag (``bounds.flag_of``)."""
    def named(field: str) -> str:
        if field == "devices":
            return label("dlist" if state.grid == "list" else "dmax", words)
        key = CONTROL_OF_KNOB.get(field)
        return in_words(FIELD_LABELS[key], words) if key in FIELD_LABELS else flag_of(field)
    return named


def in_control_words(error: BaseException, state: AppState, words: Nouns) -> ScalesimError:
    """``error`` with the knobs its line names as the CLI's flags ('--tp-overlap needs --tp 2
    or more') said as the sidebar's controls ('Tensor-parallel overlap needs Tensor parallel 2
    or more'): its template (``errors.in_words_of``, ``control_namer``), those knobs its
    controls named (``controls_to_change`` does not say them again); its own line where it
    names no control."""
    return ScalesimError(in_words_of(error, control_namer(state, words)))
