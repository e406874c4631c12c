"""What a layout option changes against today's run, in the words every report writes.

``layout_settings`` lists the settings a prediction ran with (tensor, pipeline and
context-parallel degrees, schedule, ZeRO stage, micro-batch per replica, accumulation,
recompute, sequence parallel, TP overlap, HSDP shard group); ``layout_changes`` writes the ones
two runs differ in as 'pipeline schedule 1F1B -> zero bubble', 'ddp -> zero1', 'sequence
parallel off -> on', in that order (a schedule as a reader names it, ``layout.SCHEDULE_WORDS``:
'1F1B -> none (no pipeline)' where the pipeline goes).
``layout_title`` is the split-the-model remedy's one title (``scalesim.remedies``), which
decide, diagnose, plan and the app all print: "Change the layout: ..." where today's model is
split already. Such a title is a ``LayoutTitle``: the CLI's line, with the layout it says, which
the app says in its control labels (``app.layout_titles``) without reading the text.
"""

from __future__ import annotations

from scalesim.layout import SCHEDULE_WORDS
from scalesim.layout_predict import layout_of, recompute_words, row_title
from scalesim.predict import Prediction
from scalesim.schemas import Profile, Scenario

# The ZeRO stage is written without a name ('ddp -> zero1'): its values name themselves.
ZERO = ""


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def layout_settings(profile: Profile, scenario: Scenario, p: Prediction) -> dict[str, str]:
    """{setting name: value as written} of ``scenario``'s run ``p`` (its micro-batch and
    accumulation as predicted: a split model's micro-batch is per replica), in display order."""
    split = layout_of(scenario)
    recompute = recompute_words(split.recompute_of(profile.workload), split.recompute_style)
    return {
        "tp": str(p.tp), "pp": str(p.pp), "cp": str(p.cp),
        "pipeline schedule": SCHEDULE_WORDS[split.schedule_of()],
        "virtual stages": str(split.virtual_stages), ZERO: scenario.strategy,
        "shard group": "none" if split.shard_group is None else str(split.shard_group),
        "micro-batch": str(p.micro_batch), "accumulation": str(p.accumulation),
        "recompute": recompute.removeprefix("recompute "),
        "sequence parallel": _on(split.sequence_parallel),
        "TP overlap": _on(split.tp_overlap and p.tp > 1),
    }


SPLIT_HEAD = "Split the model"  # a title naming the planner's layout in full (``split_title``)
CHANGE_HEAD = "Change the layout"  # one naming the settings that change (``layout_title``)


class LayoutTitle(str):
    """A layout option's title as the CLI writes it, '<head>: <layout>', a plain str to every
    reader (printed, joined, compared, --json), with the layout it says: ``row`` (a
    ``plan.PlanRow``, 'Split the model: <layout_predict.row_title>'), or ``changes``
    (``setting_changes``' triples, 'Change the layout: tp 2 -> 4, ...'). A page says it in its
    own labels from these, never from the text (``app.layout_titles.page_title``); what the
    str's methods return is a plain str."""

    head = ""
    row = None
    changes: tuple[tuple[str, str, str], ...] = ()

    def __new__(cls, text: str, head: str = "", row=None, changes=()):
        self = super().__new__(cls, text)
        self.head, self.row, self.changes = head, row, tuple(changes)
        return self


def split_title(row) -> LayoutTitle:
    """'Split the model: dp 2 x tp 4 x pp 1, zero1, ...' of the planner's ``row``
    (``layout_predict.row_title``), carrying the row."""
    return LayoutTitle(f"{SPLIT_HEAD}: {row_title(row)}", SPLIT_HEAD, row=row)


def change_title(head: str, before: dict[str, str], after: dict[str, str]) -> LayoutTitle:
    """'<head>: tp 2 -> 4, ddp -> zero1' of the settings (``layout_settings``) that differ
    between ``before`` and ``after`` (``layout_changes``), carrying them."""
    return LayoutTitle(f"{head}: {', '.join(layout_changes(before, after))}", head,
                       changes=setting_changes(before, after))


def setting_changes(before: dict[str, str],
                    after: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, old, new) of each setting (``layout_settings``) that differs, in order."""
    return [(name, before[name], after[name]) for name in before if before[name] != after[name]]


# each setting's knob (``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``): a page names it by its control
SETTING_KNOBS = {"tp": "tp", "pp": "pp", "cp": "cp", "pipeline schedule": "schedule",
                 "virtual stages": "virtual_stages", ZERO: "strategy",
                 "shard group": "shard_group", "micro-batch": "micro_batch",
                 "accumulation": "accumulation", "recompute": "recompute",
                 "sequence parallel": "sequence_parallel", "TP overlap": "tp_overlap"}


def layout_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'name old -> new' for each setting (``layout_settings``) that differs, in order."""
    return [f"{name} {old} -> {new}".strip() for name, old, new in setting_changes(before, after)]


def layout_title(profile: Profile, scenario: Scenario, now: Prediction, run: Scenario,
                 p: Prediction, split: str) -> str:
    """The title of the planner's layout ``run`` (predicted ``p``) at today's count: ``split``
    ("Split the model: dp ...", ``split_title``) where today's run ``now`` is not split (tp =
    pp = cp = 1) or nothing differs, else "Change the layout: " and the settings that differ
    (``layout_changes``), a ``LayoutTitle`` carrying them."""
    before, after = layout_settings(profile, scenario, now), layout_settings(profile, run, p)
    if now.tp * now.pp * now.cp == 1 or before == after:
        return split
    return change_title(CHANGE_HEAD, before, after)
