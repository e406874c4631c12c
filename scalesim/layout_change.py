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

from dataclasses import dataclass

from scalesim.errors import joined as errors_joined
from scalesim.errors import template_of
from scalesim.figures import CHANGE_ARROW
from scalesim.layout import SCHEDULE_WORDS, model_split_words
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


@dataclass(frozen=True)
class Split:
    """A split a title names by its degrees ('dp 4 x tp 8 x pp 2'; ``dp`` None: the model's
    split alone, 'tp 2 x pp 1'), with its ZeRO ``strategy`` after it where given ('tp 2 x pp 1,
    zero3'; 'zero3' alone where the model is not split)."""

    dp: int | None
    tp: int
    pp: int
    cp: int = 1
    strategy: str | None = None

    def words(self) -> str:
        """The CLI's words (``layout.model_split_words``, then the strategy)."""
        split = model_split_words(self.dp, self.tp, self.pp, self.cp)
        return ", ".join(w for w in (split, self.strategy) if w)


class Changes(tuple):
    """Settings a title names, (name, old, new) triples (``setting_changes``; old = new: a
    setting kept, 'zero3'): 'tp 2 -> 4, ddp -> zero1'."""


class Arrowed(str):
    """A change of figures, '1 -> 2', as a template with ``ARROW_FIELD`` for its arrows
    (``arrowed_said``)."""


class LayoutTitle(str):
    """A title as the CLI writes it, '<before><layout><after>', a plain str to every reader
    (printed, joined, compared, --json; its str methods return plain strs), with what its
    layout is, ``said``: a ``plan.PlanRow`` (``layout_predict.row_title``), a ``Split``, a
    ``goal.GoalPlan``, ``Changes`` or ``Arrowed``. A page says ``said`` in its own labels
    between ``before`` and ``after``, never reading the text (``app.layout_titles.page_title``);
    ``after`` may be a ``LayoutTitle`` too: a second layout (``joined``). Built by ``titled``."""

    def __new__(cls, text: str, **parts):  # text first: a pickled title (st.cache_data) loads
        self = super().__new__(cls, text)
        self.__dict__.update(parts)
        return self


def titled(before: str, layout: str, after: str = "", *, said) -> LayoutTitle:
    """'<before><layout><after>', ``layout`` the CLI's words of ``said`` (``LayoutTitle``),
    carrying it (``after`` kept as given: a ``LayoutTitle`` stays one)."""
    return LayoutTitle(f"{before}{layout}{after}", before=before, layout=layout, after=after,
                       said=said)


ARROW_FIELD = "{arrow}"  # where an ``arrowed_said`` template's arrow goes


def arrowed_said(before: str, template: str, after: str = "") -> LayoutTitle:
    """'<before>1 -> 2<after>': a change of figures, ``template`` its words with
    ``ARROW_FIELD`` where each arrow goes (any other brace doubled, ``errors.as_literal``), the
    CLI's ``figures.CHANGE_ARROW`` in the text; a page writes its own arrow from the template
    (``app.layout_titles.PAGE_ARROW``), never reading the text."""
    return titled(before, template.format(arrow=CHANGE_ARROW), after, said=Arrowed(template))


def retitled(title: str, before: str = "", after: str = "") -> str:
    """``title`` with ``before`` and ``after`` around it, a ``LayoutTitle`` still where it is
    one (its layout kept), so a page says it in its labels too: 'Settings: ' before a remedy's
    title, 'the planner's layout (' ... ')' around its changes; ``after`` may say a layout too
    (``joined``)."""
    return joined(joined(before, title), after)


def joined(first: str, second: str) -> str:
    """``first`` then ``second``, a ``LayoutTitle`` where either is one, each layout kept: where
    both are, ``second`` follows in ``first``'s ``after``, so a sentence that says two plans
    ('... Today's network is enough: ...') says both in a page's labels; words around a layout
    that name knobs by a template (``layout.knob_refusal``) keep it (``_words_joined``)."""
    if isinstance(first, LayoutTitle):
        return _rewritten(first, first.before, joined(first.after, second))
    if isinstance(second, LayoutTitle):
        return _rewritten(second, _words_joined(first, second.before), second.after)
    return _words_joined(first, second)


def _words_joined(first: str, second: str) -> str:
    """``first + second``, a ``Refusal`` with both templates where either has one
    (``errors.joined``: a page says the knobs it names by its controls, ``errors.in_words_of``),
    else a plain str."""
    if template_of(first) or template_of(second):
        return errors_joined("", (first, second))
    return first + second


def lower_first(title: str) -> str:
    """``title`` with its first letter in lower case, to follow other words ('Shard ...' ->
    'shard ...'), a ``LayoutTitle`` still where its ``before`` starts it; as it is where its
    first word is a name with a capital past its first letter ('ZeRO-3', 'FSDP', 'DeepSpeed'),
    and nothing after the first letter is lowered ('Use a Hopper ... (cuDNN ...)')."""
    if any(c.isupper() for c in title.split(" ", 1)[0][1:]):
        return title
    if isinstance(title, LayoutTitle) and title.before:
        return _rewritten(title, title.before[:1].lower() + title.before[1:], title.after)
    return title[:1].lower() + title[1:]


def _rewritten(title: LayoutTitle, before: str, after: str) -> LayoutTitle:
    """``title``'s layout between another ``before`` and ``after``."""
    return titled(before, title.layout, after, said=title.said)


def split_title(row) -> LayoutTitle:
    """'Split the model: dp 2 x tp 4 x pp 1, zero1, ...' of the planner's ``row``
    (``layout_predict.row_title``), carrying the row."""
    return titled(f"{SPLIT_HEAD}: ", row_title(row), said=row)


def row_layout(row) -> LayoutTitle:
    """The planner's ``row`` as ``layout_predict.row_title`` says it, carrying the row."""
    return titled("", row_title(row), said=row)


def split_said(split: Split, before: str = "", after: str = "") -> LayoutTitle:
    """'<before>dp 4 x tp 8 x pp 2<after>' (``Split.words``), carrying ``split``."""
    return titled(before, split.words(), after, said=split)


def change_title(head: str, before: dict[str, str], after: dict[str, str]) -> LayoutTitle:
    """'<head>: tp 2 -> 4, ddp -> zero1' of the settings (``layout_settings``) that differ
    between ``before`` and ``after`` (``layout_changes``), carrying them."""
    return changes_said(setting_changes(before, after), f"{head}: ")


def one_replica_said(before: str, after: str = "") -> LayoutTitle:
    """'<before>one data-parallel replica (dp 1)<after>': the CLI's gloss ' (dp 1)' the layout,
    which a page's words leave out (``gloss_said``)."""
    return gloss_said(f"{before}one data-parallel replica", " (dp 1)", after)


def gloss_said(before: str, gloss: str, after: str = "") -> LayoutTitle:
    """'<before><gloss><after>': the CLI's gloss of a degree of 1 (' (dp 1)', ' (tp 1)') the
    layout, a ``Split`` that splits nothing, which a page's words leave out (the sentence says
    it already: 'the layout has no tensor parallelism')."""
    return titled(before, gloss, after, said=Split(1, 1, 1))


def changes_said(changes, before: str = "", after: str = "") -> LayoutTitle:
    """'<before>tp 2 -> 4, ddp -> zero1<after>' of ``changes`` (``setting_changes``' triples),
    carrying them."""
    return titled(before, ", ".join(changes_words(changes)), after, said=Changes(changes))


def setting_changes(before: dict[str, str],
                    after: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, old, new) of each setting (``layout_settings``) that differs, in order."""
    return [(name, before[name], after[name]) for name in before if before[name] != after[name]]


# a split plan's micro-batch, kept as a setting where a title says it per replica of tp x pp x
# cp devices ('micro-batch 4 per replica': ``goal.batch_said``), which a page says so too
REPLICA_MICRO_BATCH = "micro-batch per replica"
# each setting's knob (``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``): a page names it by its control
SETTING_KNOBS = {"tp": "tp", "pp": "pp", "cp": "cp", "pipeline schedule": "schedule",
                 "virtual stages": "virtual_stages", ZERO: "strategy",
                 "shard group": "shard_group", "micro-batch": "micro_batch",
                 REPLICA_MICRO_BATCH: "micro_batch",
                 "accumulation": "accumulation", "recompute": "recompute",
                 "sequence parallel": "sequence_parallel", "TP overlap": "tp_overlap"}


def changes_words(changes) -> list[str]:
    """'name old -> new' of each (name, old, new) triple (``setting_changes``)."""
    return [f"{name} {old} -> {new}".strip() for name, old, new in changes]


def layout_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'name old -> new' for each setting (``layout_settings``) that differs, in order."""
    return changes_words(setting_changes(before, after))


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
