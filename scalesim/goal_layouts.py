"""Goal seeking's layouts: the one the scenario gives (``given``), or at each device count the
planner's best (``search``, ``scalesim plan``'s search: ``layout_predict.plan_at``).

``seek`` evaluates its grid as groups (``LayoutGroup``): one per layout, each with the device
counts that run it and the batch axes goal varies around it. ``given`` is one group, the
scenario's own layout, on every count. ``search`` asks the planner at each count N for its best
layout by throughput (at a fixed global batch the soonest, and at a fixed count the cheapest, on
today's network) at the reference global batch scaled to N (``reference_batch_at``); the layouts
(tp x pp x cp, schedule and virtual stages, recompute, sequence parallelism) become the groups,
and around the planner's micro-batch and accumulation goal varies them as it varies the base's
(``goal.BATCH_FACTORS``, ``goal.ACCUMULATION_FACTORS``) with every strategy, so the planner's own
row is among those goal prices (docs/model.md §21).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.bounds import KNOB_BY_FIELD
from scalesim.errors import ScalesimError
from scalesim.schemas import Profile, Scenario, ScenarioLayout

LAYOUT_MODES = KNOB_BY_FIELD["goal_layout"].choices  # goal --layout: search, given
# The layout fields the planner searches: a scenario that sets any of them (``--tp 1`` too)
# keeps its layout as given unless ``search`` is asked (``default_layout``)
PLANNED_FIELDS = frozenset({"tp", "pp", "cp", "schedule", "virtual_stages", "recompute",
                            "sequence_parallel", "shard_group"})


@dataclass(frozen=True)
class LayoutGroup:
    """Device counts that run one layout, and goal's sweep axes for them."""

    layout: ScenarioLayout | None  # None: the scenario's own (``given``)
    axes: dict  # devices, micro_batch, accumulation, strategy (``sweep.AXES``)

    @property
    def searched(self) -> bool:
        return self.layout is not None


def default_layout(profile: Profile, base: Scenario) -> str:
    """``search`` for a workload with a transformer shape whose scenario sets none of the
    layout fields the planner searches (``PLANNED_FIELDS``; the framework's settings, recompute
    style and overlaps, are no layout choice); ``given`` else: a split the user chose is kept,
    and a parameter-count workload has no layout to search."""
    if profile.workload.transformer is None:
        return "given"
    chosen = base.layout.model_fields_set if base.layout is not None else set()
    return "given" if chosen & PLANNED_FIELDS else "search"


def check_layout_mode(profile: Profile, mode: str,
                      transformers: str = "give a transformer workload (scalesim presets)",
                      search: str = "--layout search", controls_named=()) -> None:
    """A mode of ``LAYOUT_MODES`` that the workload can run; else one line saying what to do,
    naming where a transformer workload is found (``transformers``) and the choice of search
    (``search``) as the caller asks them (``goal.GoalControls``: the CLI's, the app's;
    ``controls_named``: ('goal_layout',) where ``search`` is in the caller's own words,
    ``ScalesimError.controls_named``)."""
    if mode not in LAYOUT_MODES:
        raise ScalesimError(f"layout {mode!r}: choose {' or '.join(LAYOUT_MODES)}",
                            knobs=("goal_layout",))
    if mode == "search" and profile.workload.transformer is None:
        raise ScalesimError(
            f"layout search: workload '{profile.workload.name}' has no transformer shape, so "
            f"there are no layouts to search (it runs data parallel); {transformers} or drop "
            f"{search}", knobs=("goal_layout",), controls_named=controls_named)


def reference_batch_at(reference: int, devices_per_node: int, devices: int) -> int:
    """The reference global batch (samples per step on one full server) scaled to ``devices``:
    the same samples per device (weak scaling, as goal's own grid), at least 1."""
    return max(1, round(reference * devices / devices_per_node))


@dataclass(frozen=True)
class Searched:
    """What the planner found for ``searched_groups``: the layout groups, the best row of each
    device count searched (a ``plan.PlanRow``; None where no layout is valid or fits), and how
    many layouts it evaluated over those counts, fitting or not (``plan.RankedRows.evaluated``);
    ``largest``: the largest count with a valid layout and the planner's ranking there (None:
    no count had one), whose layout needing least memory ``least_memory_holders`` asks about."""

    groups: list[LayoutGroup]
    best: dict[int, object]
    layouts_tried: int
    largest: tuple[int, object] | None = None


def least_memory_holders(searched: Searched) -> tuple[int, list[tuple[str, float]]] | None:
    """(the largest count searched with a valid layout, the other hardware presets whose
    devices hold the planner's layout needing least memory there, evaluated on each:
    ``plan.RankedRows.presets_holding_least``, the rule plan's nothing-fits error names them
    by) where no layout fits at that count; None where one fits there or none was valid. The
    largest count: its least-memory layout is the most sharded goal reaches, so a preset that
    holds it is one on which goal's search (up to the same count) finds a plan that fits."""
    if searched.largest is None:
        return None
    devices, ranked = searched.largest
    if ranked[0].fits:
        return None
    return devices, ranked.presets_holding_least()


def _planner_best(profile: Profile, base: Scenario, devices: int, batch: int):
    """(the planner's best row at ``devices`` and global batch ``batch``, ranked by throughput,
    or None where no layout is valid there; the layouts it evaluated, fitting or not: the unfit
    are ranked too, after every fitting one, so a count where none fits is counted; the
    ranking, ``plan.RankedRows``, or None)."""
    from scalesim.layout_predict import plan_at

    try:
        ranked = plan_at(profile, base, [devices], batch, top=1, include_unfit=True)
    except ScalesimError:  # no valid layout at that batch
        return None, 0, None
    return ranked.by_count[0].best, ranked.evaluated, ranked


def _goal_layout(base: Scenario, row) -> ScenarioLayout:
    """The layout of a planner's ``row`` as goal prices it: hybrid sharding left out, as goal's
    own ZeRO plans are fully sharded (§16)."""
    from scalesim.layout_predict import scenario_of_row

    return scenario_of_row(base, row).layout.model_copy(update={"shard_group": None})


def searched_groups(profile: Profile, base: Scenario, counts: list[int], reference: int,
                    devices_per_node: int, around) -> Searched:
    """The planner's best layout at each of ``counts`` (``plan_at``, ranked by throughput, at
    ``reference_batch_at``) grouped by layout, each group's axes ``around(row)`` of its
    counts' rows merged; the best row of each count; the layouts the planner tried."""
    best: dict[int, object] = {}
    tried, largest = 0, None
    for n in counts:
        best[n], evaluated, ranked = _planner_best(
            profile, base, n, reference_batch_at(reference, devices_per_node, n))
        tried += evaluated
        if ranked and (largest is None or n > largest[0]):  # a valid layout ranked at n
            largest = (n, ranked)
    groups: dict[str, tuple[ScenarioLayout, dict]] = {}
    for n, row in best.items():
        if row is None:
            continue
        layout = _goal_layout(base, row)
        key = layout.model_dump_json()
        _, axes = groups.setdefault(key, (layout, {"devices": [], "micro_batch": set(),
                                                   "accumulation": set(), "strategy": []}))
        micro, accumulation, strategies = around(row)
        axes["devices"].append(n)
        axes["micro_batch"] |= set(micro)
        axes["accumulation"] |= set(accumulation)
        axes["strategy"] = list(strategies)
    return Searched([LayoutGroup(layout, {**axes, "micro_batch": sorted(axes["micro_batch"]),
                                          "accumulation": sorted(axes["accumulation"])})
                     for layout, axes in groups.values()], best, tried, largest)


# The refinement (docs/model.md section 21): a count is re-searched where its plans come within
# NEAR of the answer's goal (a score of 1 + NEAR, ``near_counts``), at most MOST_REFINED of them,
# the nearest first. Asking the planner at every batch goal tries changed answers by at most
# 3.4 % of dollars (session 44, benchmarks/goal_batch_layouts.py): a count further than 5 %
# from the answer is not expected to overtake it; four counts of six searches each keep the
# refinement's planner time about a fifth of the 131 searches of the default range.
NEAR = 0.05
MOST_REFINED = 4


def near_counts(devices: np.ndarray, time_s: np.ndarray, cost_usd: np.ndarray, rows: np.ndarray,
                answer: int, deadline_s: float, budget_usd: float) -> list[int]:
    """The device counts worth re-searching near goal's answer (row ``answer``): those of
    ``rows`` whose best score ``max(time/T', cost/M')`` is at most 1 + ``NEAR``, where (T', M')
    is the goal the answer just reaches (the deadline and the answer's cost where it meets the
    goal; both limits times its worst overshoot where it is the closest), so the answer scores
    1 and a plan that beats it scores below 1 (or 1, cheaper); the answer's count first, then by
    score, at most ``MOST_REFINED``."""
    t, m = float(time_s[answer]), float(cost_usd[answer])
    if t <= deadline_s and m <= budget_usd:
        goal_t, goal_m = deadline_s, m
    else:
        worst = max(t / deadline_s, m / budget_usd)
        goal_t, goal_m = worst * deadline_s, worst * budget_usd
    score = np.maximum(time_s / goal_t, cost_usd / goal_m)
    near = np.flatnonzero(rows & (score <= 1 + NEAR))
    best: dict[int, float] = {}
    for i in near:
        n = int(devices[i])
        best[n] = min(best.get(n, np.inf), float(score[i]))
    first = int(devices[answer])
    return sorted(best, key=lambda n: (n != first, best[n], n))[:MOST_REFINED]


def goal_batches(batch: int, factors) -> list[int]:
    """The global batches goal's grid spans at a count whose reference batch is ``batch``
    (B_N, ``reference_batch_at``): B_N times each of ``factors`` (goal's micro-batch factors
    times its accumulation factors: ½ to 32), whole, but B_N itself (searched already)."""
    return sorted({max(1, round(batch * f)) for f in factors} - {batch})


def refined_groups(profile: Profile, base: Scenario, searched: Searched, counts: list[int],
                   factors, strategies) -> Searched:
    """At each of ``counts``, the planner's best layout (``plan_at``, by throughput) at each
    other global batch goal's grid spans there (``goal_batches`` of its best row's batch and
    ``factors``), as layout groups of that row itself (its micro-batch and accumulation, each of
    ``strategies``), fully sharded; a row ``searched``'s groups price already is left out. Its
    ``best``: each count's best fitting row by batch; ``layouts_tried``: what the planner
    evaluated, fitting or not."""
    tried, found = 0, {}
    groups: dict[tuple, LayoutGroup] = {}
    for n in counts:
        row = searched.best.get(n)
        if row is None:
            continue
        found[n] = {}
        for batch in goal_batches(row.micro_batch * row.accumulation * row.dp, factors):
            best, evaluated, _ = _planner_best(profile, base, n, batch)
            tried += evaluated
            if best is None or not best.fits:
                continue
            found[n][batch] = best
            layout = _goal_layout(base, best)
            if any(g.layout == layout and n in g.axes["devices"]
                   and best.micro_batch in g.axes["micro_batch"]
                   and best.accumulation in g.axes["accumulation"] for g in searched.groups):
                continue  # goal prices it already
            key = (layout.model_dump_json(), best.micro_batch, best.accumulation)
            group = groups.setdefault(key, LayoutGroup(layout, {
                "devices": [], "micro_batch": [best.micro_batch],
                "accumulation": [best.accumulation], "strategy": list(strategies)}))
            group.axes["devices"].append(n)
    return Searched(list(groups.values()), found, tried)
