"""What a layout option changes against today's run, in the words every report writes.

``layout_settings`` lists the settings a prediction ran with (tensor, pipeline and
context-parallel degrees, schedule, ZeRO stage, micro-batch per replica, accumulation,
recompute, sequence parallel, TP overlap, HSDP shard group); ``layout_changes`` writes the ones
two runs differ in as 'pipeline schedule 1F1B -> zero bubble', 'ddp -> zero1', 'sequence
parallel off -> on', in that order (a schedule as a reader names it, ``layout.SCHEDULE_WORDS``:
'1F1B -> none (no pipeline)' where the pipeline goes).
``layout_title`` is the split-the-model remedy's one title (``scalesim.remedies``), which
decide, diagnose, plan and the app all print: "Change the layout: ..." where today's model is
split already.
"""

from __future__ import annotations

from scalesim.layout import SCHEDULE_WORDS
from scalesim.layout_predict import layout_of, recompute_words
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


def layout_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'name old -> new' for each setting (``layout_settings``) that differs, in order."""
    return [f"{name} {before[name]} -> {after[name]}".strip() for name in before
            if before[name] != after[name]]


def layout_title(profile: Profile, scenario: Scenario, now: Prediction, run: Scenario,
                 p: Prediction, split_title: str) -> str:
    """The title of the planner's layout ``run`` (predicted ``p``) at today's count:
    ``split_title`` ("Split the model: dp ...") where today's run ``now`` is not split (tp = pp
    = cp = 1) or nothing differs, else "Change the layout: " and the settings that differ
    (``layout_changes``)."""
    changed = layout_changes(layout_settings(profile, scenario, now),
                             layout_settings(profile, run, p))
    return (split_title if now.tp * now.pp * now.cp == 1 or not changed
            else f"Change the layout: {', '.join(changed)}")
