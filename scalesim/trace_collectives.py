"""What a job's profiler traces say about its collectives: their kinds and sizes per process
group, the data-parallel exchange (strategy, shard group), the layout the groups show and the
pipeline stages. Read by ``scalesim.trace_diagnosis``; docs/diagnose.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.device_nouns import (
    CPU_DEVICE_PREFIX,
)
from scalesim.errors import KNOB, as_literal
from scalesim.figures import milliseconds, whole, whole_percent
from scalesim.layout import knob_refusal
from scalesim.process_groups import (
    ROLES,
    UNNAMED_ROLE,
    exchange_replicas,
    group_role,
    layout_words,
    splits_the_model,
    traced_degrees,
)
from scalesim.trace_comm_calls import (
    COLLECTIVE_KINDS,
    METRIC_ELEMENTS_SHARE,
    add_record,
    collective_kind,
    gradient_record,
    new_record,
)
from scalesim.trace_ranks import traced_micro_steps, traced_micro_steps_with


def mixed_ranks_notes(summaries) -> list[str]:
    """Notes where the ranks' traces disagree on what should be the same in one job: the GPU
    they ran on, or how many steps they recorded (the comparison uses the steps they share)."""
    out = []
    gpus = {}
    for s in summaries:
        if s.device_name:
            gpus.setdefault(s.device_name, []).append(s.rank)
    if len(gpus) > 1:
        out.append("the ranks name different GPUs (" + "; ".join(
            f"{name}: rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r[:4]))}"
            + (" ..." if len(r) > 4 else "") for name, r in gpus.items())
            + "): one job's traces run on one kind; check that the files are of one job")
    counts = {s.rank: len(s.steps) for s in summaries}
    if len(set(counts.values())) > 1:
        few, most = min(counts, key=counts.get), max(counts, key=counts.get)
        out.append(f"the ranks recorded different numbers of steps (rank {few} {counts[few]}, "
                   f"rank {most} {counts[most]}): ranks are compared on the steps they share")
    return out


def traced_device_name(summaries) -> str:
    """The device name of a traced job's model profile: 'traced', or where no rank ran on a GPU
    (``TraceSummary.device``) a CPU job's 'CPU: traced', whose devices are its processes
    (``device_nouns``)."""
    gpu = any(s.device == "gpu" for s in summaries)
    return "traced" if gpu else f"{CPU_DEVICE_PREFIX}traced"


# ZeRO-3 (FSDP FULL_SHARD) gathers each block before its forward and again before its
# backward, and reduce-scatters it once: twice the all-gathers of reductions (a root unit left
# unsharded after forward, FSDP2's default for it, gathers once: 7 gathers for 4 units);
# ZeRO-2 (SHARD_GRAD_OP) and Megatron-Core's ZeRO-1 gather once per reduction. The threshold
# between the two ratios:
ZERO3_GATHERS_PER_SCATTER = 1.5
# Where the traces give every gather's and reduction's size (``trace_comm_calls.input_elements``: NCCL
# kernels' and record_param_comms' In msg nelems; gloo's Input Dims with record_shapes=True), a
# job shards where the elements its all-gathers gather (each rank's input times the group's
# ranks) are at least this share of the elements it reduces: ZeRO-2 gathers the parameters once
# per reduction of the gradients (1), ZeRO-3 twice (2; the thresholds between them are
# ``ZERO3_GATHERS_PER_SCATTER``'s), and a gather of a metric is a few elements (a 2-rank gloo
# DDP job gathering a 1-element loss each step: 10 elements against 2,629,125 reduced, 4e-6;
# 100,000 copies of it: 0.38)
SHARDED_GATHERED_ELEMENTS = 0.5
# Without sizes, a job shards where its all-gathers take at least this share of the collective
# time and come at least half as often as its reductions. FSDP2 on gloo, which has no
# reduce-scatter, reduces with all-reduce: its gathers took 43 % of the collective time in a
# 2-rank CPU trace (session 25), 32-38 % in two more (session 28), and under 25 % (the share
# first chosen) once in a loaded CI run, where the all-reduces also time the other rank's
# lateness. A DDP job that all-gathers a metric at most once every two reductions passes both
# too: its gathers are latency, not small against a small model's all-reduces (a 2-rank gloo DDP
# job gathering a 1-element loss once a step beside 2 bucket all-reduces: 0.5 a reduction, 30 %
# of the collective time, session 39), so it reads as ZeRO-2 unless the traces record sizes;
# the note says so
SHARDED_GATHER_SHARE = 0.15
SHARDED_GATHERS_PER_REDUCTION = 0.5


def _one_record_each(summary) -> dict[str, dict]:
    """The collectives of one rank's trace, each once: a GPU trace's NCCL kernels (not the CPU
    ops torch writes beside each, ``record_param_comms`` and ``nccl:*``), a CPU trace's
    ``gloo:*`` work where it has any, else its ``record_param_comms`` (else what there is)."""
    names = summary.collectives
    if summary.device == "gpu":
        kernels = {n: c for n, c in names.items() if "nccl" in n.lower()
                   and not n.startswith(("nccl:", "record_param_comms"))}
        if kernels:
            return kernels
    for prefix in ("gloo:", "record_param_comms"):
        if picked := {n: c for n, c in names.items() if n.startswith(prefix)}:
            return picked
    return names


def _role_records(summary, roles) -> dict[str, dict]:
    """The NCCL kernels of a rank's trace over groups of ``roles`` (``TraceSummary.groups``)."""
    out: dict[str, dict] = {}
    for role in roles:
        for name, c in summary.groups.get(role, {}).get("collectives", {}).items():
            add_record(out.setdefault(name, new_record()), c)
    return out


def collective_kinds(summaries, roles=None) -> dict[str, dict[str, float]]:
    """Count, seconds and sized elements (``trace_comm_calls.new_record``) of each kind of collective
    (``COLLECTIVE_KINDS``) over every traced rank and step, each collective once
    (``_one_record_each``); names of no kind (broadcast, send/recv) are left out. ``roles``:
    only the groups of those roles (``TraceSummary.groups``; None: every collective)."""
    out = {kind: new_record() for kind in COLLECTIVE_KINDS.values()}
    for s in summaries:
        records = _one_record_each(s) if roles is None else _role_records(s, roles)
        for kind, c in kinds_of(records).items():
            add_record(out[kind], c)
    return out


def kinds_of(records: dict[str, dict]) -> dict[str, dict[str, float]]:
    """kind (``COLLECTIVE_KINDS``) -> tally (``trace_comm_calls.new_record``: count, total_s, elements,
    sized) of kernel records (name -> tally), without the calls set aside as no gradient
    traffic (``trace_comm_calls.gradient_record``: a metric's all-reduce); names of no kind are left
    out."""
    out: dict[str, dict[str, float]] = {}
    for name, c in records.items():
        kind = collective_kind(name)
        if kind is not None:
            add_record(out.setdefault(kind, new_record()), gradient_record(c))
    return out


@dataclass(frozen=True)
class ShardGroups:
    """What a traced job's data-parallel groups say of its sharding (``shard_groups``): the
    group that carries its reduce-scatters and all-gathers (``desc``, ``size``) and, under
    hybrid sharding, the size of the one that all-reduces each shard across the replicas
    (``replicas``; 0: none)."""

    desc: str
    size: int
    replicas: int

    @property
    def hybrid(self) -> int:
        """The shard group where the job sharded hybrid (0: not)."""
        return self.size if self.replicas > 1 else 0


def shard_groups(summaries, ranks: int) -> ShardGroups | None:
    """The sharding ``summaries``' data-parallel groups show, over the exchange's ``ranks``
    (``exchange_ranks``): on the first rank whose named groups carry reduce-scatters or
    all-gathers, the group with the most of that time, and hybrid (FSDP2 / torchtitan HSDP on a
    mesh ``(dp_replicate, dp_shard)``) where it holds fewer than ``ranks`` and another group of
    ``ranks / size`` all-reduces; None where no group shards. A loss all-reduce over every rank
    (``default_pg``) is no replica group: its size is the whole exchange's."""
    for s in summaries:
        by_desc = s.groups.get("dp", {}).get("by_desc", {})
        sharding = {d: g for d, g in by_desc.items() if {"reduce-scatter", "all-gather"}
                    & set(kinds_of(g["collectives"]))}
        if not sharding:
            continue
        desc = max(sharding, key=lambda d: _sharding_s(sharding[d]))
        size = sharding[desc]["size"] or 0
        replicas = next((g["size"] for d, g in by_desc.items() if d != desc
                         and "all-reduce" in kinds_of(g["collectives"])
                         and 1 < size < ranks and (g["size"] or 0) * size == ranks), 0)
        return ShardGroups(desc, size, replicas)
    return None


def _sharding_s(group: dict) -> float:
    """Seconds of a traced group's reduce-scatters and all-gathers (``by_desc`` entry)."""
    kinds = kinds_of(group["collectives"])
    return sum(kinds.get(k, {}).get("total_s", 0.0) for k in ("reduce-scatter", "all-gather"))


def _shard_group_collectives(summaries, desc: str) -> dict[str, dict[str, float]]:
    """``collective_kinds`` of the data-parallel group ``desc`` alone, every rank."""
    out = {kind: new_record() for kind in COLLECTIVE_KINDS.values()}
    for s in summaries:
        group = s.groups.get("dp", {}).get("by_desc", {}).get(desc)
        for kind, c in kinds_of(group["collectives"] if group else {}).items():
            add_record(out[kind], c)
    return out


def traced_exchange(summaries, degrees: dict | None = None):
    """How the traced job exchanged (``fit_runs.RunsExchange``) and the words of why. Its
    reductions are its reduce-scatters, or its all-reduces where it has none (FSDP on gloo).
    Where every gather and reduction records its size, it sharded where its all-gathers gather
    (each rank's input times the shard group's ranks) at least ``SHARDED_GATHERED_ELEMENTS`` of
    the elements it reduces, ZeRO-3 at ``ZERO3_GATHERS_PER_SCATTER`` times or more; else where
    its all-gathers take at least ``SHARDED_GATHER_SHARE`` of the all-reduce / all-gather /
    reduce-scatter time and number at least ``SHARDED_GATHERS_PER_REDUCTION`` per reduction,
    ZeRO-3 (FSDP FULL_SHARD) at ``ZERO3_GATHERS_PER_SCATTER`` or more per reduction; else
    ZeRO-2 (SHARD_GRAD_OP; Megatron-Core's ZeRO-1 looks alike and sends the same bytes); else
    DDP, with no words (but where the counts pass and the sizes do not: a metric's gathers).
    Both ratios are per micro-step (``micro_step_syncs``: x s / k), the sharding thresholds
    (``SHARDED_GATHERED_ELEMENTS``, ``SHARDED_GATHER_SHARE``, ``SHARDED_GATHERS_PER_REDUCTION``)
    per reducing micro-step's pass (x s: DeepSpeed ZeRO-2 gathers once a step beside k
    all-reduce passes), and where one micro-step of k >= 2 reduces the exchange reduces once a
    step (FSDP's no_sync); the framework is ``traced_framework``'s.
    ``degrees``: ``traced_layout(summaries)`` where the caller has it (None: read here)."""
    from scalesim.fit_runs import DDP_EXCHANGE, RunsExchange

    degrees = traced_layout(summaries) if degrees is None else degrees
    grouped = by_group(summaries)
    if splits_the_model(degrees) and exchange_replicas(degrees) < 2:
        return DDP_EXCHANGE, ""  # no data-parallel exchange to read
    if splits_the_model(degrees) and not grouped:
        return DDP_EXCHANGE, knob_refusal(  # a template: the Diagnose page names its control
            f"the traces' process groups split the model ({layout_words(degrees)}: "
            f"{as_literal(', '.join(degrees['named']))}), but not every trace's collectives say "
            "which group each served (gloo records none; NCCL kernels name theirs in recent "
            f"torch): the data-parallel exchange is read as DDP; if it sharded, give "
            f"{KNOB.strategy}")
    ranks = exchange_ranks(summaries, degrees)
    found = shard_groups(summaries, ranks) if grouped else None
    hybrid = found.hybrid if found is not None else 0
    # a hybrid job's strategy from its shard group's collectives (the replicas' all-reduces, and
    # whatever else they run, are not ZeRO's per-block ones)
    kinds = (_shard_group_collectives(summaries, found.desc) if hybrid
             else collective_kinds(summaries, DP_ROLES if grouped else None))
    gather = kinds["all-gather"]
    reduction = reduction_kind(kinds)
    reductions = kinds[reduction]["count"]
    total = sum(k["total_s"] for k in kinds.values())
    seen = ", ".join(f"{whole(k['count'])} {kind}s ({milliseconds(k['total_s'])})"
                     for kind, k in kinds.items() if k["count"])
    # the gathers against one reducing micro-step's reductions (a pass; k micro-steps a step,
    # s of them reducing: ``micro_step_syncs``): DeepSpeed ZeRO-2 gathers the parameters once a
    # step and all-reduces in each of its k micro-steps, 1 a pass but 1/k a step (at k = 4 read
    # as DDP, "no gather of the parameters")
    k, syncing = micro_step_syncs(summaries, reduction)
    pass_s = gather["total_s"] + (total - gather["total_s"]) / syncing
    counted = (reductions > 0 and gather["total_s"] >= SHARDED_GATHER_SHARE * pass_s
               and gather["count"] * syncing >= SHARDED_GATHERS_PER_REDUCTION * reductions)
    sized = reductions > 0 and all(k["sized"] == k["count"] for k in (gather, kinds[reduction]))
    reduced = {"all-reduce": "all-reduced", "reduce-scatter": "reduce-scattered"}[reduction]
    if sized:  # each rank's input times the ranks it gathers over, against what is reduced
        elements = gather["elements"] * (hybrid or ranks), kinds[reduction]["elements"]
        gathered = elements[0] * syncing / max(elements[1], 1.0)
        if gathered < SHARDED_GATHERED_ELEMENTS:
            of = "them" if syncing == 1 else f"a micro-step's, {syncing} of {k} reducing"
            return DDP_EXCHANGE, ("" if not counted else knob_refusal(  # the page: its control
                f"the traces' collectives, all ranks and steps: {seen}; their sizes say "
                f"{elements[0]:,.0f} elements all-gathered for {elements[1]:,.0f} {reduced} "
                f"({gathered:.2g} of {of}, under {SHARDED_GATHERED_ELEMENTS:g}): no gather of the "
                "parameters (a metric or another tensor), read as DDP; to say otherwise, give "
                f"{KNOB.strategy}"))
    if not sized and not counted:
        return DDP_EXCHANGE, ""
    # per micro-step: a pass's gathers over the k micro-steps
    ratio = (gathered if sized else gather["count"] * syncing / reductions) / k
    strategy = "zero3" if ratio >= ZERO3_GATHERS_PER_SCATTER else "zero2"
    exchange = RunsExchange(strategy, zero_framework=traced_framework(
        summaries, strategy, reduction, k, syncing, hybrid), grad_sync=grad_sync_of(k, syncing),
        shard_group=hybrid)
    alike = ("the shard group's, with the all-reduces across its replicas" if hybrid else
             f"its all-reduces in each of the {k} micro-steps, its all-gathers in fewer"
             if exchange.zero_framework == "deepspeed" else
             "DeepSpeed stage 3 alike" if exchange.strategy == "zero3"
             else "Megatron-Core's ZeRO-1 alike")
    unnamed = grouped and any(UNNAMED_ROLE in s.groups for s in summaries)
    whose = (f"the shard group {as_literal(found.desc)}'s collectives" if hybrid else
             "the traces' collectives" if not grouped else
             "the collectives of the data-parallel groups and of groups no name places"
             if unnamed else "the data-parallel groups' collectives")
    # a template (``knob_refusal``): the Diagnose page names its controls
    caveat = (f"To say otherwise, give {KNOB.strategy} ({KNOB.shard_group} for hybrid sharding)"
              if grouped and not unnamed else
              "Tensor parallelism with sequence parallelism also gathers and reduce-scatters "
              "(activations), and these traces do not say which parallelism each collective "
              f"served: for such a job, or to say otherwise, give {KNOB.strategy} "
              f"({KNOB.shard_group} for hybrid sharding)")
    if found is not None and not hybrid and 1 < found.size < ranks:
        caveat += (f". Its sharding collectives ran in groups of {found.size} of the "
                   f"{ranks} data-parallel ranks ({as_literal(found.desc)}) with no all-reduce "
                   "across them traced: read as full sharding; if it sharded hybrid, give "
                   f"{KNOB.shard_group} {found.size}")
    if not sized:
        caveat += (". The traces record no message sizes (record_shapes=True records gloo's; "
                   "NCCL kernels carry theirs in recent torch): a DDP job that all-gathers a "
                   "metric once every two reductions or more often reads alike; give "
                   f"{KNOB.strategy} ddp for one")
    per = (f"all-gathered elements per {reduced} element {ratio:.2g} (the messages' sizes)"
           if sized else f"all-gathers per {reduction} {ratio:.2g}")
    if syncing < k:
        per += (f" a micro-step ({ratio * k / syncing:.2g} a step, over {k} micro-steps of "
                f"which {syncing} post{'s' if syncing == 1 else ''} {reduction}s)")
    return exchange, knob_refusal(f"{whose}, all ranks and steps: {seen}: {per}, read as "
                                  f"{as_literal(exchange.label(alike))}; the remedies start "
                                  f"from it. {caveat}")


def traced_framework(summaries, strategy: str, reduction: str, k: int, syncing: int,
                     hybrid: int) -> str:
    """The ZeRO framework (``Scenario.zero_framework``) of a job read as ``strategy`` off its
    collectives: 'deepspeed' for ZeRO-2 that all-reduces in each of its k >= 2 micro-steps
    (``micro_step_syncs``) and all-gathers in fewer of them (``trace_ranks.traced_micro_steps_with``):
    DeepSpeed stage 2 reduces its buckets with all-reduce in every backward (its
    use_multi_rank_bucket_allreduce default; ``no_sync`` raises for stage 2/3) and gathers the
    updated parameters once, after the optimizer step, where FSDP's ZeRO-2 gathers before each
    forward and reduce-scatters (on gloo: all-reduces) behind each backward; else 'fsdp'. At
    k = 1 the two look alike (one all-reduce, one all-gather a unit) and read as FSDP."""
    if strategy != "zero2" or reduction != "all-reduce" or hybrid or not syncing == k >= 2:
        return "fsdp"
    gathering = traced_micro_steps_with(summaries, "all-gather")
    return "deepspeed" if gathering is not None and gathering < k else "fsdp"


def reduction_kind(kinds: dict[str, dict[str, float]]) -> str:
    """The collective that reduces a job's gradients, of its collectives' ``kinds``
    (``collective_kinds``): its reduce-scatters, or its all-reduces where it has none (FSDP on
    gloo)."""
    return "reduce-scatter" if kinds["reduce-scatter"]["count"] else "all-reduce"


def traced_grad_sync(summaries, reduction: str | None = None) -> tuple[str, str]:
    """(grad_sync, words): how often the traced job reduced its gradients (``Scenario.
    grad_sync``): once-per-step where one micro-step of k >= 2 posts a ``reduction`` (FSDP's
    no_sync), else every-micro-step (``micro_step_syncs``); the words say what the traces show
    ('' where they show one micro-step a step: either reading reduces once). ``reduction``: the
    collective that reduces them (None: ``reduction_kind`` of the data-parallel groups'
    collectives, every collective where the traces name no groups)."""
    if reduction is None:
        roles = DP_ROLES if by_group(summaries) else None
        reduction = reduction_kind(collective_kinds(summaries, roles))
    k, syncing = micro_step_syncs(summaries, reduction)
    grad_sync = grad_sync_of(k, syncing)
    return grad_sync, ("" if k == 1 else
                       f"{grad_sync}: {syncing} of the {k} micro-steps a step "
                       f"post{'s' if syncing == 1 else ''} {reduction}s")


def ddp_reductions(summaries, degrees: dict, exchange,
                   grad_sync: str | None = None) -> tuple[int, int]:
    """(k, s): the micro-steps a step the traces show and how many post all-reduces
    (``micro_step_syncs``; a metric's set aside, ``trace_comm_calls.metric_sized``), where the job
    exchanges as DDP (``exchange``: its ``fit_runs.RunsExchange``), no group splits the model
    (``degrees``: a tensor-parallel group's all-reduces run in every micro-step) and s >= 2:
    DDP without ``no_sync`` reduces its gradients in each micro-step, 2s units a step where
    the model's DDP sends 2; else (k, 1). The user's word (``grad_sync``, ``--grad-sync``)
    wins whatever the traces show: 'once-per-step' (k, 1) (the all-reduces the traces cannot
    tell from a metric's), 'every-micro-step' (k, k) where k >= 2 (a reduction the traces set
    aside or did not record)."""
    if exchange.strategy != "ddp" or splits_the_model(degrees):
        return 1, 1
    k, syncing = micro_step_syncs(summaries, "all-reduce")
    if grad_sync == "once-per-step":
        return k, 1
    if grad_sync == "every-micro-step" and k >= 2:
        return k, k
    return (k, syncing) if syncing >= 2 else (k, 1)


def set_aside_cadence(summaries) -> tuple[float, str]:
    """(share, words): the share of the set-aside collectives' time (``StepBreakdown.
    set_aside_s``) that runs once a step, not in each micro-step, and the words of how it was
    read. Per step of k >= 2 micro-steps whose host posted n of them
    (``StepBreakdown.set_aside_posts``), each micro-step at least m
    (``set_aside_each_micro_step``): k m run in each micro-step, the other n - k m once a step
    (a metric all-reduced after the optimizer step: m = 0), the calls taken to last alike;
    the share ``(n - k m) / n`` is the median over every rank's such steps. (0, '') where the
    traces show one micro-step a step or none set aside (either reading is the same); (0,
    why) where their host posts are not traced: paid in each micro-step, as before."""
    if not any(s.set_aside for s in summaries) and not any(
            st.set_aside_s > 0 for s in summaries for st in s.steps):
        return 0.0, ""
    k, _ = traced_micro_steps(summaries)
    if k is None or k < 2:
        return 0.0, ""
    read = [(st.set_aside_posts, st.micro_steps, st.set_aside_each_micro_step)
            for s in summaries for st in s.steps
            if st.set_aside_posts and st.micro_steps and st.micro_steps >= 2
            and st.set_aside_each_micro_step is not None]
    if not read:
        return 0.0, ("how often they run is not read (the traces record no host post of "
                     f"them in the steps' micro-steps), so the remedies' model pays them in each "
                     f"of the {k} micro-steps a step")
    share = float(np.median([(n - km * m) / n for n, km, m in read]))
    n = float(np.median([r[0] for r in read]))
    m = int(np.median([r[2] for r in read]))
    if share <= 0.0:
        return 0.0, (f"{n:.3g} of them a step, {m} or more in each of its {k} micro-steps: read "
                     "as run in each micro-step, as the remedies' model pays them")
    if share >= 1.0:
        return 1.0, (f"{n:.3g} of them a step, none in some of its {k} micro-steps: read as "
                     "run once a step, as the remedies' model pays them, however many "
                     "micro-steps a step runs")
    return share, (f"{n:.3g} of them a step, {m} in each of its {k} micro-steps: "
                   f"{whole_percent(1.0 - share)} of their time read as run in each micro-step, "
                   f"the other {whole_percent(share)} once a step, as the remedies' model pays them")


def set_aside_note(summaries, cadence: str = "") -> str:
    """A note where the traces' collectives include some set aside as no gradient traffic
    (``TraceSummary.set_aside``: ``trace_comm_calls.no_gradient``, under ``METRIC_ELEMENTS_SHARE`` of
    their rank's largest reduction, an all-gather by the elements it gathers), saying how
    many, by what rule, from which readings, and their time left out of the exchange's
    (``StepBreakdown.set_aside_s``; the part under nothing else idle, ``set_aside_exposed_s``:
    medians over steps, then ranks), and how often the remedies' model pays it (``cadence``:
    ``set_aside_cadence``'s words; '': each micro-step); '' where none was set aside."""
    aside = {}
    for s in summaries:
        for kind, n in s.set_aside.items():
            aside[kind] = aside.get(kind, 0) + n
    if not aside:
        return ""
    steps, ranks = sum(len(s.steps) for s in summaries), len(summaries)
    largest = max(s.largest_reduction for s in summaries if s.set_aside)
    on = f"on each of the {ranks} traced ranks" if ranks > 1 else "on the one traced rank"
    counted = " and ".join(f"{whole(n)} {kind}{'s' if n != 1 else ''} ({n / steps:.3g} a step "
                           f"{on})" for kind, n in aside.items())
    took = float(np.median([s.median("set_aside_s") for s in summaries]))
    alone = float(np.median([s.median("set_aside_exposed_s") for s in summaries]))
    gathers = "all-gather" in aside
    return (f"{counted} set aside as no gradient traffic: each under "
            f"{whole_percent(METRIC_ELEMENTS_SHARE)} of the elements of its rank's largest reduction "
            f"({largest:,.0f} elements)"
            + (", an all-gather by the elements it gathers (its input x the ranks)" if gathers
               else "")
            + ", a metric or the loss reduced for logging (dist.all_reduce(loss)"
            + (", dist.all_gather of a metric" if gathers else "")
            + "); the exchange's readings (its strategy, gradient sync and "
            f"DDP's reductions a step) leave them out, and so does its time: their "
            f"{milliseconds(took)} a step (median) is not counted as exchange, the "
            f"{milliseconds(alone)} of it under no compute, data wait or other communication "
            "counted as idle time of the step "
            + (f"({cadence})" if cadence else "(the model's overhead, paid each micro-step)"))


def unsized_reductions_note(summaries, exchange, strategy_given: bool = False) -> str:
    """A note where the reading of how often the job reduced its gradients rests on
    all-reduces of no recorded size (``TraceSummary.unsized_reductions``): k >= 2 micro-steps a
    step, s >= 2 of them posting all-reduces (``micro_step_syncs``), the job read as DDP or
    reducing with all-reduce (``reduction_kind``); a metric's all-reduce in each micro-step
    cannot be told from a gradient's there; '' otherwise. Its advice: the gradient sync, which
    applies to a strategy read off the traces or a given ZeRO-2/3; a given DDP or ZeRO-1
    (``strategy_given``) takes none (``diagnose_request`` refuses it: they reduce once a step
    anyway), so the note says to drop the strategy or trace the sizes. A template
    (``knob_refusal``): the Diagnose page names its controls."""
    if not any(s.unsized_reductions for s in summaries):
        return ""
    roles = DP_ROLES if by_group(summaries) else None
    if exchange.strategy != "ddp" and reduction_kind(collective_kinds(summaries, roles)) \
            != "all-reduce":
        return ""
    k, syncing = micro_step_syncs(summaries, "all-reduce")
    if syncing < 2:
        return ""
    advice = f"give {KNOB.grad_sync} once-per-step"
    if strategy_given and exchange.strategy not in ("zero2", "zero3"):
        advice = (f"drop {KNOB.strategy} {exchange.strategy} and {advice}, or trace with "
                  "record_shapes=True")
    return knob_refusal(
        f"the traces record no message size for their all-reduces, so those posted in {syncing} "
        f"of the {k} micro-steps a step are all read as reducing gradients: a metric or the loss "
        "all-reduced for logging in each micro-step (dist.all_reduce(loss)) cannot be told from "
        "a gradient bucket (sizes set them apart: record_shapes=True records gloo's, NCCL "
        "kernels and record_param_comms carry theirs in recent torch; durations do not, a "
        "1-element all-reduce takes a latency as long as a small model's bucket). If the job "
        f"reduced its gradients once a step (no_sync), {advice}")


def ddp_reductions_note(k: int, reductions: int) -> str:
    """What ``ddp_reductions``' (k, s) say where s >= 2, else ''."""
    if reductions < 2:
        return ""
    return (f"the traces show all-reduces in {reductions} of the {k} micro-steps a step: DDP "
            f"without no_sync reduces its gradients in each, {2 * reductions} units a step "
            "where the model's DDP sends 2 (one exchange an optimizer step, docs/model.md §4), "
            f"so the exchange is priced as one carrying the {reductions} all-reduces' time, its "
            f"link read {reductions}x slower than it ran, and the other remedies are priced on "
            "it. Fix: run every micro-step but the last under model.no_sync() (the remedy "
            "'Reduce gradients once a step'); more accumulation without it amortises no exchange "
            "(held back)")


def grad_sync_of(k: int, syncing: int) -> str:
    """The gradient sync (``Scenario.grad_sync``) of ``k`` micro-steps a step of which
    ``syncing`` post the reduction (``micro_step_syncs``): once-per-step where one of k >= 2
    does (FSDP's no_sync), else every-micro-step."""
    return "once-per-step" if syncing == 1 < k else "every-micro-step"


def micro_step_syncs(summaries, reduction: str) -> tuple[int, int]:
    """(k, s): the micro-steps a step the traces show (``trace_ranks.traced_micro_steps``) and how
    many of them post a ``reduction`` (``trace_ranks.traced_micro_steps_with``); (1, 1) where either
    is not read or s is not between 1 and k. Sharding's gathers are counted per reduction of a
    unit, and a unit reduces once in each of s micro-steps, so gathers per reduction x s / k is
    the gathers per unit a micro-step: ZeRO-3 2 (forward and backward), ZeRO-2 at most 1,
    reducing in every micro-step (s = k) or under no_sync (s = 1, k gathers a step per
    reduction: 4 at k = 4, which read alone as ZeRO-3)."""
    k, _ = traced_micro_steps(summaries)
    syncing = traced_micro_steps_with(summaries, reduction)
    if k is None or syncing is None or not 1 <= syncing <= k:
        return 1, 1
    return k, syncing


# Collectives read as the data-parallel exchange: the dp groups', and those of groups no name
# places (as every collective was read before the traces' groups were)
DP_ROLES = ("dp", UNNAMED_ROLE)


def by_group(summaries) -> bool:
    """True where every traced rank's collectives name their process group."""
    return all(s.groups for s in summaries)


def every_rank_sends(summaries) -> bool:
    """Whether every traced rank sends or receives point to point (``trace_comm_calls.point_to_point``)."""
    from scalesim.trace_comm_calls import point_to_point

    return all(any(point_to_point(name) for name in s.collectives) for s in summaries)


def traced_layout(summaries) -> dict:
    """The traced job's degrees (``process_groups.traced_degrees``). Where no group splits the
    model but every traced rank sends and receives point to point (``trace_comm_calls.point_to_point``)
    and either ran a pipeline schedule's annotated actions (``TraceSummary.
    schedule_micro_batches``: torch.distributed.pipelining) or runs no other collective, a
    pipeline over all the ranks (pp = the world, dp 1, ``pipeline_over_ranks``): a pipeline
    over the whole job runs on the default group (torch's PipelineStage without a group; a
    DeviceMesh dimension over every rank reuses it), so no group names it. Sends and receives
    beside other collectives do not make one: all-to-all runs on NCCL's SendRecv kernels, a
    monitored barrier on gloo's send and recv."""
    from scalesim.trace_comm_calls import point_to_point

    world = max(len(summaries), max((s.world_size or 1) for s in summaries))
    degrees = traced_degrees([s.process_groups for s in summaries], [s.groups for s in summaries],
                             world)
    only_sends = all(point_to_point(name) for s in summaries for name in s.collectives)
    annotated = all(s.schedule_micro_batches > 0 for s in summaries)
    if world >= 2 and every_rank_sends(summaries) and (annotated or only_sends) \
            and not splits_the_model(degrees):
        degrees = {**degrees, "pp": world, "dp": 1, "pipeline_over_ranks": True}
    return degrees


def model_parallel_exposed(summaries) -> dict[str, dict[str, float]]:
    """role -> {"comm_s", "exposed_s"}: medians over the ranks that have the role of their
    median step's collectives over groups that are not data parallel (``DP_ROLES``), and the
    part nothing else covered (no compute, data wait or other group's collective: what hiding
    them saves); {} where the collectives name no group."""
    if not by_group(summaries):
        return {}
    out = {}
    for role in ROLES:
        if role == "dp":
            continue
        have = [s.groups[role] for s in summaries if role in s.groups]
        if have:
            out[role] = {k: float(np.median([g[k] for g in have])) for k in ("comm_s", "exposed_s")}
    return out


def _exchange_source(summaries) -> str:
    """Which of a traced step's collectives are the data-parallel exchange's: 'groups' (its
    dp groups', ``DP_ROLES``, where the collectives name groups); 'collectives' (those that
    are not point to point, where some rank sends point to point but no group is named: a
    pipeline's sends and their waits are not the exchange's); 'all' (all its communication)."""
    from scalesim.trace_comm_calls import point_to_point

    if by_group(summaries):
        return "groups"
    if any(point_to_point(name) for s in summaries for name in s.collectives):
        return "collectives"
    return "all"


def _exchange_step_s(source: str, step) -> tuple[float, float]:
    """One rank's data-parallel exchange time in one traced step and the part of it compute or
    a data wait hid, s, waits for peers included, read as ``source`` (``_exchange_source``)
    says."""
    if source == "groups":
        return (sum(step.group_comm_s.get(r, 0.0) for r in DP_ROLES),
                sum(step.group_hidden_s.get(r, 0.0) for r in DP_ROLES))
    if source == "collectives":
        return step.collective_s, step.collective_hidden_s
    return step.comm_s, step.overlap_s


def _last_arrivals(summaries, staged) -> list[tuple[float, float]] | None:
    """Per step every rank traced, the (time, hidden) of the exchange's own rank-step: the
    rank that spent least in its collectives (the last to arrive, who waits for no one) of
    the pipeline stage where that least is the most (``exchange_transfer_s``); None where no
    step is traced on every rank."""
    p, stages, _ = staged
    if p < 2 or None in stages or len(stages) != len(summaries):
        stages = [0] * len(summaries)
    source = _exchange_source(summaries)
    by_step = [{st.step: _exchange_step_s(source, st) for st in s.steps} for s in summaries]
    common = set.intersection(*(set(d) for d in by_step))
    if not common:
        return None
    return [max((min((d[n] for d, k in zip(by_step, stages, strict=True) if k == stage),
                     key=lambda th: th[0]) for stage in set(stages)), key=lambda th: th[0])
            for n in sorted(common)]


def exchange_transfer_s(summaries, staged) -> float:
    """The exchange's own time a step, s: in each step, the least any rank of a pipeline stage
    spent in its collectives (the last rank to arrive waits for no one, so its time is the
    transfer; the others' extra is waiting for it, the straggler finding's), the most of that
    over stages (each stage's replicas exchange their shard at once), median over steps
    (``_last_arrivals``).
    ``staged``: ``pipeline_stages``; one stage where the job has no pipeline or a rank's stage
    is unknown. Taking every rank's own time instead counted the waits twice, once as the
    exchange and once as the straggler (a real dp x pp job: 5.3 ms priced, 1.6 ms its own).
    Where no step is traced on every rank, no straggler counts the waits
    (``trace_ranks.cross_rank`` compares no step), so the exchange keeps them: the median of the
    ranks' own times."""
    picked = _last_arrivals(summaries, staged)
    if picked is None:  # no step every rank traced: the ranks' own times, waits included
        # (``trace_ranks.cross_rank`` then compares no step and counts no wait as a straggler's,
        # so the least rank's time had dropped the waits from the model's step: 8 ms traced
        # steps rebuilt as 6 ms, overlap +15 % where hiding 1 ms gains 1/7 at most)
        source = _exchange_source(summaries)
        return float(np.median([float(np.median([_exchange_step_s(source, st)[0]
                                                 for st in s.steps])) for s in summaries]))
    return float(np.median([t for t, _ in picked]))


def traced_dp_comm(summaries, staged) -> tuple[float, float]:
    """(comm_s, hidden_s) of the data-parallel exchange: its own time a step
    (``exchange_transfer_s``: no waits for peers) and the part of it compute or a data wait
    hid, at the share the same rank-steps had hidden (``_last_arrivals``, session 46: every
    rank's share counted the early ranks' waits, exposed by nature, as exchange left unhidden;
    a real 2-rank DDP job, whose last rank hid 71 % of its all-reduces, read 33 % and was
    modelled with no overlap). The exchange's collectives are ``_exchange_source``'s: its dp
    groups' where groups are named; those that are not point to point where a pipeline sends
    but no group is named (read with its sends, hidden all-reduces had read as exposed:
    'overlap the exchange +37 %' on a dp x pp job); else all the traced communication. Where
    no step is traced on every rank, every rank's share, waits included (their medians where
    the collectives are told apart)."""
    transfer = exchange_transfer_s(summaries, staged)
    picked = _last_arrivals(summaries, staged)
    source = _exchange_source(summaries)
    if picked is not None:
        comm, hidden = sum(t for t, _ in picked), sum(h for _, h in picked)
    elif source == "groups":
        comm = float(np.median([sum(s.groups.get(r, {}).get("comm_s", 0.0) for r in DP_ROLES)
                                for s in summaries]))
        hidden = float(np.median([sum(s.groups.get(r, {}).get("hidden_s", 0.0)
                                      for r in DP_ROLES) for s in summaries]))
    elif source == "collectives":
        comm = float(np.median([s.median("collective_s") for s in summaries]))
        hidden = float(np.median([s.median("collective_hidden_s") for s in summaries]))
    else:
        comm = sum(st.comm_s for s in summaries for st in s.steps)
        hidden = sum(st.overlap_s for s in summaries for st in s.steps)
    share = hidden / comm if comm > 0 else 0.0
    return transfer, transfer * share


def groups_notes(summaries, degrees: dict, model_parallel: dict,
                  pipeline_read: bool = False) -> list[str]:
    """Notes on how the traces' groups were read: sizes left out, groups no name places,
    a split whose collectives were not seen, sends no group places, no data parallelism to
    model (``pipeline_read``: a pipeline was read, whose batch remedies are priced on it)."""
    notes = []
    if degrees["conflict"]:
        notes.append(f"the traces' process groups: {degrees['conflict']}")
    unnamed = sorted({d for s in summaries for d in s.groups.get(UNNAMED_ROLE, {}).get("descs", [])})
    if unnamed:
        notes.append(f"collectives over groups no name places ({', '.join(unnamed[:4])}: created "
                     "without group_desc, fewer ranks than the job) are read as the "
                     "data-parallel exchange's")
    if splits_the_model(degrees) and by_group(summaries) and not model_parallel \
            and exchange_replicas(degrees) > 1:
        notes.append(f"the traces' process groups split the model ({layout_words(degrees)}) but "
                     "no collective names a tensor-, context- or pipeline-parallel group: all "
                     "are read as the data-parallel exchange's")
    if degrees.get("pp", 1) < 2 and len(summaries) > 1 and every_rank_sends(summaries) \
            and not by_group(summaries):
        notes.append("every rank sends and receives point to point beside other collectives, "
                     "and no process group names a pipeline: the sends are read as the "
                     "data-parallel exchange's. A pipeline is read where a group names it "
                     "(Megatron-LM's PIPELINE_MODEL_PARALLEL_GROUP, a DeviceMesh's mesh_pp over "
                     "part of the job) or torch.distributed.pipelining's schedules annotate "
                     "their actions (Interleaved1F1B, GPipe, ...)")
    if splits_the_model(degrees) and exchange_replicas(degrees) < 2:
        notes.append(f"{layout_words(degrees)}: no data-parallel exchange, so the model's "
                     + ("remedies (links, overlap, sharding) have nothing to price; the batch "
                        "remedies are priced on the traced pipeline (its span per sample, the "
                        "rest of the step once), the others are what the traces measure"
                        if pipeline_read else
                        "remedies (links, overlap, sharding, batch) have nothing to price; only "
                        "what the traces measure is listed"))
    return notes


def _pipeline_stage(summary) -> int | None:
    """The rank's stage: its place in its pipeline group's ranks (pg_config), None unknown."""
    for g in summary.process_groups:
        if (g["size"] or 0) > 1 and group_role(g["desc"], g["size"], None) == "pp" \
                and summary.rank in g["ranks"]:
            return g["ranks"].index(summary.rank)
    return None


def pipeline_stages(summaries, degrees: dict) -> tuple[int, list[int | None], str]:
    """(stages p, each summary's stage or None where unknown, note) of a traced job
    (``traced_layout``): a named pp group's (``_pipeline_stage``), or the ranks' order for a
    pipeline over them all that no group names, with a note; (1, [], '') without a pipeline."""
    p = degrees.get("pp", 1)
    if p < 2:
        return 1, [], ""
    if degrees.get("pipeline_over_ranks"):  # a rank's stage: the first it runs, else its rank
        return p, [min(s.schedule_stages, default=s.rank) for s in summaries], (
            f"no process group names a pipeline, but every rank sends and receives point to "
            f"point and ran a pipeline schedule's actions or no other collective: read as one "
            f"pipeline over the {p} ranks, stage by rank (a pipeline over the whole job runs "
            "on the default group, which no name says is a pipeline's)")
    return p, [_pipeline_stage(s) for s in summaries], ""


def within_stages(summaries, cr: dict, staged: tuple) -> tuple[dict, str]:
    """``cr`` (``trace_ranks.cross_rank``) with its straggler fields from ranks of one pipeline
    stage compared with each other (the stage whose slowest rank keeps the others waiting the
    longest), and a note; unchanged where the job has no pipeline or a rank's stage is unknown
    (``staged``: the traces' ``pipeline_stages``).
    Stages do different work (embedding, loss; a receive waits on the stage before), so across
    them the slowest is the pipeline's shape, not a straggler."""
    from scalesim.trace_ranks import cross_rank

    p, stages, _ = staged  # ``pipeline_stages``
    if p < 2:
        return cr, ""
    # the slowest across stages is the pipeline's shape: the model's micro-step stays every
    # rank's median (``cross_rank``'s waiting ranks would be the other stages)
    cr = dict(cr, waiting_compute_s=cr["compute_s"], waiting_data_wait_s=cr["data_wait_s"],
              input_wait_s=cr["data_wait_s"], loader_wait_s=0.0)
    if None in stages:
        return cr, ""
    keys = ("straggler_wait_s", "loader_wait_s", "slowest_rank", "slowest_consistency",
            "slowest_factor", "slowest_counts", "steps_compared")
    per_stage = [cross_rank([s for s, k in zip(summaries, stages, strict=True) if k == stage])
                 for stage in sorted(set(stages)) if stages.count(stage) > 1]
    out = dict(cr)
    if not per_stage:
        out.update(straggler_wait_s=0.0, loader_wait_s=0.0, slowest_factor=1.0,
                   slowest_counts={}, steps_compared=0, slowest_consistency=1.0)
        return out, ("one traced rank a pipeline stage: stages do different work, so no rank "
                     "is compared with another (trace the data-parallel peers of a stage)")
    worst = max(per_stage, key=lambda c: c["straggler_wait_s"] + c["loader_wait_s"])
    out.update({k: worst[k] for k in keys})
    # the pacing stage's slowest rank waiting on its own loader: every rank's data wait plus it
    out["input_wait_s"] = out["data_wait_s"] + out["loader_wait_s"]
    return out, ("ranks compared within their pipeline stage (stages do different work): the "
                 "stage whose slowest rank keeps its peers waiting the longest")


def unseen_exchange_note(summaries, degrees: dict) -> str:
    """A note where the job's data-parallel exchange runs over two ranks or more
    (``exchange_ranks``) and no traced rank shows one of its collectives (an all-reduce,
    all-gather or reduce-scatter, ``collective_kinds``; the data-parallel groups' where the
    collectives name theirs, ``DP_ROLES``): the communication was not recorded, or the job
    never synchronised. '' where one was seen or there is no exchange."""
    ranks = exchange_ranks(summaries, degrees)
    grouped = by_group(summaries)
    kinds = collective_kinds(summaries, DP_ROLES if grouped else None)
    if ranks < 2 or any(k["count"] for k in kinds.values()):
        return ""
    n = len(summaries)
    on = "the one traced rank" if n == 1 else f"any of the {n} traced ranks"
    what = (f"no collective of the data-parallel exchange on {on} (no all-reduce, all-gather or "
            "reduce-scatter" + (" over a data-parallel group" if grouped else "")
            + "; other communication was traced)" if any(s.collectives for s in summaries) else
            f"no collective on {on} (no NCCL kernel, gloo op or record_param_comms)")
    return (f"{what}, though the exchange runs over {ranks} ranks: either the profiler did not "
            "record the communication (on GPUs NCCL runs on its own CUDA stream, which only "
            "ProfilerActivity.CUDA records: profile with activities=[ProfilerActivity.CPU, "
            "ProfilerActivity.CUDA]), or the job never synchronised its ranks (no DDP or FSDP "
            "wrapper: each rank trains its own copy). The remedies that act on the exchange "
            "are held back (not predicted: a gain on an exchange nobody saw); the others are "
            "priced with no exchange, so any unrecorded one would add to a batch remedy's gain")


def exchange_ranks(summaries, degrees=None) -> int:
    """The ranks a traced job's data-parallel exchange runs over: the job's, or where its
    groups split the model (``degrees``) its replicas (dp x cp, ``exchange_replicas``)."""
    if degrees is not None and splits_the_model(degrees):
        return exchange_replicas(degrees)
    return max(len(summaries), max((s.world_size or 1) for s in summaries))
