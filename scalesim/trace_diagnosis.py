"""Diagnose one job from its ranks' profiler traces (``scalesim.traces.summarise``): the cause of
the lost time, the pipeline's bubble, the exposed model-parallel communication and the remedies.
docs/diagnose.md.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from scalesim.accuracy import median_error
from scalesim.bounds import clip
from scalesim.device_nouns import (
    nouns_for,
)
from scalesim.diagnosis import (
    GOOD_EFFICIENCY,
    NOMINAL_BATCH_TITLES,
    OTHER_CAUSE_SHARE,
    PREFERRED_REMEDIES,
    Finding,
    Remedy,
    Report,
    finding,
    first_remedy,
    least_decisive_gain,
    model_remedies,
    shown_gain,
    traced_batch_title,
)
from scalesim.errors import KNOB, ScalesimError, as_literal, joined, require_model, require_text
from scalesim.figures import milliseconds, series, whole_percent
from scalesim.layout import knob_refusal
from scalesim.layout_change import ARROW_FIELD, LayoutTitle, arrowed_said, retitled
from scalesim.model.overlap import OVERLAPPED_SHARE
from scalesim.model.stragglers import (
    SLOW_DEVICE_FACTOR,
    persistence_words,
    slowest_in_most_steps,
)
from scalesim.process_groups import (
    ROLE_WORDS,
    exchange_replicas,
    layout_words,
    splits_the_model,
)
from scalesim.remedies import (
    ACCUMULATION_FACTORS,
    BIGGER_BATCH_FACTOR,
    EXCHANGE_REMEDIES,
    accumulation_factor,
    gain_verdict,
)
from scalesim.trace_buckets import (
    DEFAULT_BUCKETS,
    HOST_SIZES,
    KERNEL_SIZES,
    NO_GPU_SIZES,
    NO_SIZES,
    ModelBuckets,
    default_buckets_note,
    last_share,
    model_buckets,
    traced_buckets,
)
from scalesim.trace_collectives import (
    by_group,
    ddp_reductions,
    ddp_reductions_note,
    exchange_ranks,
    groups_notes,
    mixed_ranks_notes,
    model_parallel_exposed,
    pipeline_stages,
    set_aside_cadence,
    set_aside_note,
    shard_groups,
    traced_device_name,
    traced_dp_comm,
    traced_exchange,
    traced_grad_sync,
    traced_layout,
    unseen_exchange_note,
    unsized_reductions_note,
    within_stages,
)
from scalesim.trace_data_wait import (
    FIXED,
    LOADER_MODELLED_SHARE,
    PACES,
    DataWaitReading,
    as_read,
    fixed_fetch_remedy,
    gain_of_compute,
    loader_within_wait,
    read_data_wait,
)

# Why a trace of one process (world size 1) gets no model remedy, and what answers its questions
ONE_PROCESS_NOTE = (
    "one process (world size 1): it exchanges nothing with another, so the model's remedies "
    "(links, overlap, sharding, batch, accumulation), which price a data-parallel exchange, are "
    "not predicted, and how the job scales cannot be read off one process's step; for that, "
    "make a profile of its trace (scalesim calibrate --from-trace B=TRACE --out p.json, B its "
    "samples a step) and ask scalesim predict --profile p.json --devices 1,2,4,8 (scalesim "
    "plan --profile p.json --workload MODEL --global-batch N for a transformer's layouts), or "
    "diagnose runs at several device counts (scalesim diagnose runs.csv)")


def diagnose_traces(summaries, source: str, exchange=None, shard_group: int | None = None,
                    grad_sync: str | None = None) -> Report:
    """Name the cause from per-rank trace summaries (scalesim.traces.summarise). ``exchange``
    (``fit_runs.RunsExchange``): how the job exchanged; None: read off its collectives
    (``traced_exchange``). ``shard_group``: a hybrid shard group for the strategy read off the
    collectives (with ``exchange`` None; ``--shard-group`` without ``--strategy``);
    ``grad_sync``: how often it reduced its gradients (``--grad-sync``; None: as the traces'
    micro-steps show, ``traced_grad_sync``, ``exchange``'s own grad_sync then unread)."""
    from scalesim.trace_ranks import (
        cross_rank,
        missing_ranks_note,
        traced_micro_batch,
        traced_micro_steps,
    )
    from scalesim.traces import TraceSummary

    if not isinstance(summaries, list | tuple) or not summaries:
        raise ScalesimError("summaries: expected a non-empty list of TraceSummary "
                            "(scalesim.trace_ranks.load_traces)")
    for s in summaries:
        require_model(s, TraceSummary, "summaries")
    source = require_text(source, "source")
    degrees = traced_layout(summaries)
    strategy_given = exchange is not None
    exchange, exchange_note = _traced_or_given(summaries, degrees, exchange, shard_group,
                                               grad_sync)

    staged = pipeline_stages(summaries, degrees)
    cr, stage_note = within_stages(summaries, cross_rank(summaries), staged)
    step = cr["step_s"]
    pipeline, pipeline_notes = traced_pipeline(summaries, staged)
    model_parallel = model_parallel_exposed(summaries)
    # the pipeline's sends and receives are its own finding's where it is read
    outside = {role: v for role, v in model_parallel.items()
               if pipeline is None or role != "pp"}
    # collectives over groups that split the model: not the data-parallel exchange's
    mp_exposed = min(sum(v["exposed_s"] for v in outside.values()),
                     cr["intrinsic_exposed_comm_s"])
    # the pacing stage's waits on its sends and receives are the pipeline's, not the exchange's
    pp_waits = 0.0 if pipeline is None else pipeline.bubble_s
    parts = {
        "data": input_wait_s(cr),
        "straggler": cr["straggler_wait_s"],
        "comm": max(cr["intrinsic_exposed_comm_s"] - mp_exposed - pp_waits, 0.0),
        "model_parallel": mp_exposed,
        "pipeline": 0.0 if pipeline is None else pipeline.lost_s,
        "idle": cr["idle_s"],
    }
    share = {k: v / step for k, v in parts.items()}
    findings = []
    multi_host = len({s.host for s in summaries if s.host}) > 1
    held = [f"the other groups' collectives {milliseconds(mp_exposed)}"] if mp_exposed > 0 else []
    if pp_waits > 0:
        held.append(f"the pipeline's waits {milliseconds(pp_waits)} (its finding's)")
    split = (f"; of it the data-parallel exchange {milliseconds(parts['comm'])}, " + ", ".join(held)
             if held else "")
    # one aggregate for the total and its exposed part: each step's slowest rank, median over
    # steps (``cross_rank``); the overlap share is of every rank's communication, said so
    comm_lines = [
        f"communication {milliseconds(cr['intrinsic_comm_s'])} per step on the slowest rank (each "
        f"step's, median over steps), exposed {milliseconds(cr['intrinsic_exposed_comm_s'])} of "
        f"it ({whole_percent(cr['intrinsic_exposed_comm_s'] / step)} of the step{split}); "
        f"{whole_percent(cr['overlap_share'])} of all ranks' communication overlaps compute",
    ]
    # a CPU job (TraceSummary.device) has no device timeline and no kernel launches
    words = nouns_for(traced_device_name(summaries))
    if not multi_host:
        comm_lines.append(f"one run traced: whether the share grows with {words.devices} needs "
                          f"runs at several {words.device} counts (scalesim diagnose runs.csv)")
    if multi_host:
        comm_lines.append(f"ranks on {len({s.host for s in summaries})} hosts: collectives cross "
                          f"{words.servers}")
    findings.append(finding("inter_server" if multi_host else "comm_growth", share["comm"],
                            comm_lines, words))
    if mp_exposed > 0:
        findings.append(finding("model_parallel_comm", share["model_parallel"],
                                _model_parallel_lines(degrees, outside, step, mp_exposed),
                                words))
    if pipeline is not None:
        findings.append(finding("pipeline", share["pipeline"], _pipeline_lines(pipeline, step),
                                words))
    slow = cr["slowest_rank"]
    findings.append(finding("input_pipeline", share["data"], _input_lines(cr, parts, share)))
    persistence = persistence_words(cr["slowest_counts"].get(slow, 0), cr["steps_compared"],
                                    len(summaries))
    persistent = slowest_in_most_steps(cr["slowest_counts"].get(slow, 0), cr["steps_compared"],
                                       len(summaries))
    # the factor is of each step's slowest rank, which is this rank only where it persists
    own = (f"its own time (step minus exposed communication) {cr['slowest_factor']:.2f}x the "
           "others' (median over steps)" if persistent else
           f"the slowest rank of each step has {cr['slowest_factor']:.2f}x the others' own time "
           "(step minus exposed communication; median over steps)")
    strag_lines = [
        f"ranks wait {milliseconds(parts['straggler'])} per step for the slowest "
        f"({whole_percent(share['straggler'])} of the step)",
        f"rank {slow} is the {persistence}, {own}",
    ]
    if cr.get("loader_wait_s", 0.0) >= OTHER_CAUSE_SHARE * step:
        strag_lines.insert(1, f"beyond the {milliseconds(cr['loader_wait_s'])} its own extra "
                              "data wait keeps them waiting (the input pipeline's)")
    if cr["steps_compared"]:
        strag_lines.append("slowest rank per step: " + ", ".join(
            f"rank {r} in {n} of {cr['steps_compared']}" for r, n in cr["slowest_counts"].items()
            if n))
    is_slow_device = persistent and cr["slowest_factor"] >= SLOW_DEVICE_FACTOR
    findings.append(finding("slow_device" if is_slow_device else "stragglers", share["straggler"],
                            strag_lines, words))
    idle_lines = [
        f"{words.device} idle {milliseconds(parts['idle'])} per step "
        f"({whole_percent(share['idle'])}): neither computing, communicating nor loading data "
        + ("(host overhead between operators: Python, the framework)" if words.cpu else
           "(launch or host overhead)"),
    ]
    if aside_idle := min(cr["set_aside_exposed_s"], parts["idle"]):
        idle_lines.append(f"of it {milliseconds(aside_idle)} waiting in collectives set aside as no "
                          "gradient traffic (a metric's or the loss's, see the notes): not the "
                          "exchange's; reduce them less often, or without waiting on them")
    findings.append(finding("idle", share["idle"], idle_lines))
    findings.sort(key=lambda f: -f.share)
    if findings[0].share < 1.0 - GOOD_EFFICIENCY:
        findings.insert(0, finding("none", 0.0, [
            f"compute {whole_percent(cr['compute_s'] / step)} of a {milliseconds(step)} step; no other part "
            f"above {whole_percent(1.0 - GOOD_EFFICIENCY)}"]))
    cause, others = findings[0], [f for f in findings[1:] if f.share >= OTHER_CAUSE_SHARE]
    # the pipeline's loss is a fixed time of the step for the exchange's model, as the other
    # groups' exposed collectives are
    pipeline_fixed = 0.0 if pipeline is None else max(pipeline.span_s - cr["compute_s"], 0.0)
    dp_comm = traced_dp_comm(summaries, staged)
    # a pipeline's micro-batches are its schedule's (``traced_pipeline``), its batch remedies
    # priced on it; else the micro-steps the traces show (None: not read, said in a note)
    micro_steps, micro_note = (None, "") if pipeline is not None else traced_micro_steps(summaries)
    # the micro-batch from the input shapes (record_shapes): the batch remedy's title says it;
    # a pipeline's batch remedies are its schedule's, priced without it
    batch, batch_note = (None, "") if pipeline is not None else traced_micro_batch(summaries)
    unseen = unseen_exchange_note(summaries, degrees)
    # a DDP job reducing in several micro-steps a step (no no_sync); a pipeline's are its own
    k_read, reductions = (1, 1) if pipeline is not None else ddp_reductions(summaries, degrees,
                                                                            exchange, grad_sync)
    # how often the collectives set aside (a metric's) run: once a step or each micro-step
    aside_once, aside_words = (0.0, "") if pipeline is not None else set_aside_cadence(summaries)
    data_wait = traced_data_wait(summaries, cr)
    buckets, buckets_note = exchange_buckets(summaries, degrees, exchange, reductions)
    first, remedies = _trace_remedies(cr, summaries, cause.key, exchange, degrees,
                                      dp_comm, mp_exposed + pipeline_fixed,
                                      micro_steps=micro_steps, exchange_seen=not unseen,
                                      ddp_reductions=reductions, set_aside_once=aside_once,
                                      data_wait=data_wait, buckets=buckets)
    if pipeline is not None and any(r.factor is not None for r in remedies):
        def model(per_sample_extra_s: float, per_step_s: float, fixed_s: float):
            return _trace_remedies(cr, summaries, cause.key, exchange, degrees,
                                   dp_comm, fixed_s, per_sample_extra_s, per_step_s,
                                   exchange_seen=not unseen, data_wait=data_wait,
                                   buckets=buckets)

        for priced in pipeline_batch_remedies(pipeline, model, mp_exposed, pipeline_fixed):
            remedies = _with_measured(remedies, priced)
        first = first_remedy(remedies, cause.key, median_error(False))
    elif pipeline is not None and exchange_replicas(degrees) < 2:  # no exchange to model
        def price(reading):
            return pipeline_only_batch_remedies(pipeline, step, mp_exposed, input_wait_s(cr),
                                                words.device, reading)

        for priced in as_read(price, data_wait, input_wait_s(cr)):
            remedies = _with_measured(remedies, priced)
        first = first_remedy(remedies, cause.key, median_error(False))
    for measured in ([] if pipeline is None else pipeline_remedies(pipeline, step)):
        remedies = _with_measured(remedies, measured)
        decisive = measured.helps and shown_gain(measured) >= median_error(False)
        if decisive and (first is None or shown_gain(measured) > shown_gain(first)
                         or (cause.key == "pipeline"
                             and first.key not in PREFERRED_REMEDIES["pipeline"])):
            first = measured
    overlap_tp = tp_overlap_remedy(model_parallel, step)
    if overlap_tp is not None:
        remedies = _with_measured(remedies, overlap_tp)
        decisive = shown_gain(overlap_tp) >= median_error(False)
        if first is None or shown_gain(overlap_tp) > shown_gain(first) or (
                decisive and cause.key == "model_parallel_comm"):
            first = overlap_tp
    kernel, kernel_remedy = attention_kernel_finding(summaries, step)
    if kernel is not None:  # lost at one device too: beside the scaling cause, never it
        if kernel.share >= OTHER_CAUSE_SHARE:
            others = sorted([*others, kernel], key=lambda f: -f.share)
        remedies = _with_measured(remedies, kernel_remedy)
        if first is None or shown_gain(kernel_remedy) > shown_gain(first):
            first = kernel_remedy
    if batch is not None:  # the size the traces show, in place (the first remedy's object too)
        for r in remedies:
            if r.key == "bigger_batch" and r.factor is not None:
                r.title = traced_batch_title(words.device, batch, batch * r.factor)
    # each rank's median step with its own parts, which add up to it (``median_step``)
    table = [{
        "rank": s.rank, "steps": len(s.steps), "median_step": st.step, "step_s": st.step_s,
        "compute_s": st.compute_s, "comm_s": st.comm_s, "overlap_s": st.overlap_s,
        "exposed_comm_s": st.exposed_comm_s, "data_wait_s": st.data_wait_s, "idle_s": st.idle_s,
        "attention_s": st.attention_s, "attention_family": s.attention_family,
        "device": s.device, "device_name": s.device_name, "host": s.host,
    } for s in summaries for st in [s.median_step()]]
    details = {
        "per_step": {str(s.rank): [asdict(st) for st in s.steps] for s in summaries},
        "cross_rank": {k: v for k, v in cr.items() if k != "own_s"},
        "collectives": {str(s.rank): s.collectives for s in summaries},
        "exchange": exchange.described(),
        # the model's DDP buckets: the traced all-reduces' (sizes in post order: the host
        # posts' elements, else the NCCL kernels' bytes, as "sizes_from" says) or DDP's
        # defaults (elements [], sizes_from ""), in MiB of the model's gradient (``trace_buckets``)
        "exchange_buckets": {"elements": list(buckets.elements),
                             "sizes_from": buckets.sizes_from,
                             "gradient_bytes": buckets.grad_bytes,
                             "bucket_mib": buckets.bucket_mib,
                             "first_bucket_mib": buckets.first_bucket_mib,
                             "last_share": last_share(buckets)},
        # the degrees the traces' process groups name, and each group role's collectives
        "layout": {k: degrees[k] for k in ("dp", "tp", "cp", "pp")},
        # samples a micro-step from the traces' input shapes (``traced_micro_batch``), or None
        "micro_batch": batch,
        "pipeline": None if pipeline is None else {
            **asdict(pipeline), "bubble_s": pipeline.bubble_s, "uneven_s": pipeline.uneven_s,
            "lost_s": pipeline.lost_s},
        # how the data wait is read where the model carries a worker loader's (``traced_data_wait``)
        "data_wait_reading": None if data_wait is None else asdict(data_wait),
        "groups": {str(s.rank): {role: {k: v for k, v in g.items()
                                        if k not in ("collectives", "by_desc")}
                                 for role, g in s.groups.items()} for s in summaries},
    }
    notes = [n for s in summaries for n in s.notes]
    if missing := missing_ranks_note(summaries):
        notes.insert(0, missing)
    if unseen:
        notes.append(unseen)
    notes += mixed_ranks_notes(summaries)
    if exchange_note:
        notes.append(exchange_note)
    if micro_note:
        notes.append(micro_note)
    if data_wait is not None and exchange_ranks(summaries, degrees) >= 2:
        notes.append(data_wait.words)
    if batch_note:
        notes.append(batch_note)
    # what the traces show, where the user's --grad-sync did not override it (its own note)
    if reductions == ddp_reductions(summaries, degrees, exchange)[1] and (
            reduced := ddp_reductions_note(k_read, reductions)):
        notes.append(reduced)
    if aside := set_aside_note(summaries, aside_words):
        notes.append(aside)
    if grad_sync is None and (unsized := unsized_reductions_note(summaries, exchange,
                                                                      strategy_given)):
        notes.append(unsized)
    if buckets_note:
        notes.append(buckets_note)
    notes += groups_notes(summaries, degrees, model_parallel, pipeline is not None)
    if stage_note:
        notes.append(stage_note)
    notes += pipeline_notes
    if pipeline is not None:
        notes += pipeline.notes
    replicas = exchange_replicas(degrees)
    if splits_the_model(degrees) and replicas > 1:
        held = ("the other groups' collectives are held as they were traced"
                if model_parallel else "the traces do not say which collectives split the "
                "model, so all are read as that exchange's")
        over = (f"dp {replicas}" if degrees["cp"] == 1 else
                f"dp x cp = {replicas} (context-parallel ranks hold the same weights)")
        if pipeline is not None:
            held += ("; the pipeline's loss (bubble and uneven stages) is held as a fixed time "
                     "of each step, but for the batch remedies, priced on the pipeline: a "
                     "bigger per-device batch grows its span with the micro-batch, more "
                     "micro-batches pay its fill and drain once a step")
        notes.append(f"the remedies' model is the data-parallel exchange over {over} of the "
                     f"traced layout ({layout_words(degrees)}); {held}")
    if exchange_ranks(summaries) < 2:
        notes.append(ONE_PROCESS_NOTE)
    notes.append("remedy gains are model predictions built from the median traced step"
                 + ("; the pipeline's are replays of its traced schedule, which also splits "
                    "its loss for the batch remedies" if pipeline is not None else ""))
    return Report("traces", source, cause, others, first, remedies, table, details, notes,
                  decisive_gain=median_error(False))  # the trace model is data parallel


def traced_pipeline(summaries, staged: tuple):
    """(``pipeline_trace.PipelineReading``, notes) of a traced pipeline (``staged``: its
    ``pipeline_stages``) with a traced rank in every stage; (None, [why not]) where a stage is
    missing, (None, []) without a pipeline. Each stage's compute and exposed sends and
    receives are its ranks' median steps' (``traces.StepBreakdown.p2p_exposed_s``)."""
    from scalesim.pipeline_trace import annotated_schedule, counted_micro_batches, read_pipeline

    p, stages, over_world = staged  # ``pipeline_stages``
    if p < 2:
        return None, []
    traced = sorted({k for k in stages if k is not None})
    if traced != list(range(p)):
        missing = [k for k in range(p) if k not in traced]
        return None, [f"the pipeline's bubble and its stages' balance are not read: no traced "
                      f"rank of stage {series([str(k) for k in missing])} of {p}; trace a rank "
                      "of every stage (the first rank of each pipeline group is enough)"]
    compute, wait, ranks, receives = {}, {}, {}, {}
    for s, k in zip(summaries, stages, strict=True):
        if k is not None:
            compute.setdefault(k, []).append(s.median("compute_s"))
            # the pp group's where kernels name theirs (an expert group's all-to-all runs on
            # SendRecv kernels too), else every send and receive
            wait.setdefault(k, []).append(s.groups["pp"]["exposed_s"] if "pp" in s.groups
                                          else s.median("p2p_exposed_s"))
            ranks.setdefault(k, []).append(s.rank)
            counts = [st.receives for st in s.steps]
            receives.setdefault(k, []).append(
                None if None in counts else int(round(float(np.median(counts)))))
    traced = [s for s, k in zip(summaries, stages, strict=True) if k is not None]
    schedule = annotated_schedule([s.schedule_stages for s in traced],
                                  [s.schedule_micro_batches for s in traced])
    notes = [over_world] if over_world else []
    if any(s.schedule_split_backward for s in traced):
        notes.append("the schedule splits its backward (a zero-bubble schedule's I and W "
                     "actions): it is replayed as 1F1B, whose bubble is larger, so the bubble "
                     "remedy's gain is overstated and the schedule already shrinks its bubble")
    if schedule is not None:
        return read_pipeline(compute, wait, ranks, *schedule, "annotations"), notes
    interleaved = any(len(s.schedule_stages) > 1 for s in traced)
    m = None if interleaved else counted_micro_batches(receives[0], receives[p - 1])
    reading = read_pipeline(compute, wait, ranks, m, 1, "receives")
    ends = [*receives[0], *receives[p - 1]]
    if any(s.schedule_micro_batches for s in traced):
        reading.count_note = ("the ranks' schedule annotations disagree (stages a rank or "
                              "micro-batches), and with several stages a rank the receives do "
                              "not count micro-batches, so they are fitted" if interleaved else
                              "the ranks' schedule annotations disagree")
    if m is None and not interleaved and None not in ends and min(ends) > 0:  # they disagree
        reading.count_note = (f"the first and last stages' receives disagree ({receives[0][0]} "
                              f"and {receives[p - 1][0]} a step: several tensors cross a stage "
                              "boundary?), so the micro-batches are fitted")
    return reading, notes


def _pipeline_lines(pipeline, step_s: float) -> list[str]:
    """The evidence of the ``pipeline`` finding: each stage's compute, what the pacing stage
    waits and how much of it the replayed schedule accounts for, the schedule read."""
    k = pipeline.pacing_stage
    stages = ", ".join(f"{st['stage']}: {milliseconds(st['compute_s'])}" for st in pipeline.stages)
    waits = ", ".join(f"{st['stage']}: {milliseconds(st['wait_s'])}" for st in pipeline.stages)
    if pipeline.counted:
        source = ("read off the schedule's annotations" if pipeline.counted_from == "annotations"
                  else "counted from the first and last stages' receives")
        outside = pipeline.unreplayed_s
        j = pipeline.spanning_stage
        k_span = pipeline.stages[k]["compute_s"] + pipeline.bubble_s
        longer = "" if pipeline.span_s - k_span < OTHER_CAUSE_SHARE * step_s else (
            f"; stage {j} computes and waits {milliseconds(pipeline.span_s)} a step, longer than stage "
            f"{k}: it waits on time the others spend outside their ops (idle: host work, a "
            "sleep, a synchronisation)")
        wait = (f"stage {k}'s {milliseconds(pipeline.bubble_s)}{longer}: the replayed bubble (fill and "
                f"drain) {milliseconds(pipeline.replay_s - pipeline.stages[k]['compute_s'])}, the sends' "
                f"own time and waits outside the schedule {milliseconds(outside)}")
        if pipeline.count_note:
            source += f"; {pipeline.count_note}"
        schedule = (f"{_replayed_at(pipeline)} per step ({source}), replayed as 1F1B "
                    "(docs/model.md §15)")
    else:
        from scalesim.pipeline_trace import MOST_MICRO_BATCHES

        wait = (f"stage {k}'s {milliseconds(pipeline.bubble_s)} is the bubble (fill and drain; any "
                "transfer it waited on)")
        unread = pipeline.count_note or ("the traces carry no schedule annotations and count "
                                         "no receive")
        if pipeline.micro_batches == 1 and pipeline.span_s > pipeline.replay_s * 1.0005:
            fit = ("the waits exceed a one-micro-batch 1F1B's (replayed, docs/model.md §15): "
                   "transfers or waits outside the schedule")
        elif pipeline.micro_batches == MOST_MICRO_BATCHES:
            fit = (f"the waits are within a 1F1B of {MOST_MICRO_BATCHES} micro-batches' "
                   "(replayed, docs/model.md §15): next to no bubble")
        else:
            fit = (f"the waits match a 1F1B schedule of {_replayed_at(pipeline)} per step "
                   "(replayed, docs/model.md §15): a job that runs more also waited on its "
                   "transfers")
        schedule = f"{fit} ({unread})"
    return [
        f"compute per step by stage ({stages}; medians over each stage's ranks); stage {k} "
        f"paces the pipeline, {milliseconds(pipeline.uneven_s)} above the stages' mean",
        f"exposed sends and receives by stage ({waits}): {wait}; the others' also their wait "
        f"for stage {k}; together {milliseconds(pipeline.lost_s)} per step "
        f"({whole_percent(pipeline.lost_s / step_s)}) against even stages without a bubble",
        schedule,
    ]


def _replayed_at(pipeline) -> str:
    """'4 micro-batches', or '8 chunks (4 micro-batches x 2 virtual stages a rank)'."""
    m = pipeline.micro_batches
    micro = f"{m} micro-batch{'es' if m != 1 else ''}"
    if pipeline.virtual_stages == 1:
        return micro
    return f"{pipeline.chunks} chunks ({micro} x {pipeline.virtual_stages} virtual stages a rank)"


def pipeline_remedies(pipeline, step_s: float) -> list[Remedy]:
    """Evening the stages and halving the bubble, priced by replaying the traced schedule
    (``pipeline_trace``): each saves its replayed span's difference off the measured step,
    gain ``step / (step - saving) - 1``. Halving the bubble with m counted also pays the time
    the replay leaves once more (twice the messages: ``PipelineReading.halved_s``); where that
    outweighs the bubble it halves, the remedy loses, and its note says so and why, as the
    model's remedies that lose say it (``remedies.verdict_words``)."""
    from scalesim.remedies import PIPELINE_BUBBLE_TITLE, PIPELINE_EVEN_TITLE, verdict_words

    k, m, v = pipeline.pacing_stage, pipeline.micro_batches, pipeline.virtual_stages
    extra_s = pipeline.unreplayed_s  # the time the replay leaves, paid once more at 2m
    extra_s = extra_s if extra_s > 1e-9 * pipeline.span_s else 0.0  # 0 but rounding
    out = []
    for key, title, new_s, most_s, how in (
        ("pipeline_even", PIPELINE_EVEN_TITLE, pipeline.even_s, pipeline.lost_s,
         f"every stage at the stages' mean compute, stage {k} {milliseconds(pipeline.uneven_s)} less; "
         "layers move whole, so this is a ceiling. Megatron-LM "
         "--account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split or "
         "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers; torchtitan "
         "parallelism.module_fqns_per_model_part"),
        ("pipeline_bubble", PIPELINE_BUBBLE_TITLE, pipeline.halved_s, pipeline.bubble_s,
         arrowed_said("", f"{m}{ARROW_FIELD}{2 * m} micro-batches of half the size, the bubble "
                      f"{v}{ARROW_FIELD}{2 * v}", " virtual stages per rank (an interleaved "
                      "schedule) also halves"
                      + (f", twice the messages adding {milliseconds(extra_s)} once more"
                         if extra_s > 0 else "")
                      + "; a ceiling: a micro-batch's fixed costs stay and smaller ones run the "
                      "matmuls less efficiently. Megatron-LM "
                      "--num-layers-per-virtual-pipeline-stage; torchtitan "
                      "pipeline_parallel_schedule Interleaved1F1B")),
    ):
        saving = pipeline.replay_s - new_s
        saving = saving if abs(saving) > 1e-9 * pipeline.replay_s else 0.0  # 0 but rounding
        # never more than the traces lost to it: even stages without a bubble, the pacing
        # stage's waits (a replay longer than the traced span would promise more)
        capped = saving > min(most_s, 0.99 * step_s)
        saving = min(saving, most_s, 0.99 * step_s)
        gain = float(step_s / (step_s - saving) - 1.0)
        verdict = gain_verdict(gain)
        change = (f"{milliseconds(saving)} off the step" if saving >= 0
                  else f"{milliseconds(-saving)} onto the step")
        messages = key == "pipeline_bubble" and extra_s > 0
        # the replayed spans without the time the replay leaves, then the traced span it moves
        replayed_s = new_s - extra_s if messages else new_s
        span = f"span {milliseconds(pipeline.replay_s)}{ARROW_FIELD}{milliseconds(replayed_s)}"
        if messages:
            span += (f", the traced span {milliseconds(pipeline.span_s)}{ARROW_FIELD}"
                     f"{milliseconds(pipeline.span_s - saving)} with the extra messages' time")
        cap = (f", capped at what the traces lost to it ({milliseconds(saving)})" if capped else "")
        # each change of figures a template: a page writes its own arrow
        note = arrowed_said(f"replayed 1F1B at {_replayed_at(pipeline)}: ", span,
                            retitled(how, f", {change}{cap}; "))
        if did := verdict_words(verdict):
            why = ""
            if messages and verdict == "loses":
                why = (f": twice the messages pay the {milliseconds(extra_s)} a step the replay "
                       "leaves (the sends' own time and waits outside the schedule) once more, "
                       f"more than the {milliseconds(pipeline.replay_s - replayed_s)} the "
                       "halved bubble saves")
            note = retitled(note, f"{did}{why}; ")
        out.append(Remedy(key, title, gain, True, note, verdict=verdict))
    return out


def pipeline_batch_remedies(pipeline, model, mp_exposed_s: float,
                            loss_s: float) -> list[Remedy]:
    """The exchange's model's batch remedies of a data-parallel x pipeline job, with the
    pipeline's loss split as each change meets it (``pipeline_trace.accumulation_split_s``)
    instead of held as a fixed time of the micro-step. ``model(per_sample_extra_s,
    per_step_s, fixed_s)`` ranks the remedies (``_trace_remedies``) with ``fixed_s`` of
    exposed time besides the compute in each micro-step, ``per_sample_extra_s`` of it moved to
    the per-sample time and ``per_step_s`` paid once a step; ``mp_exposed_s``: the other groups'
    exposed collectives (tensor parallelism's grow with the micro-batch and run in each);
    ``loss_s``: the pipeline's span beyond the traced compute, which the model held fixed.

    - Twice the per-device batch: every stage's micro-batch doubles, so the pipeline's whole
      span (its loss T - C with it) and the other groups' collectives grow with the batch: both
      per sample.
    - 4x the micro-batches (more accumulation): one more pass of m micro-batches adds the
      replay's steady-state time and the sends the replay leaves, and the fill and drain are
      paid once a step.

    Everything else (the data wait, the exchange and its overlap, the straggler wait) stays the
    model's, as for any other job."""
    from scalesim.pipeline_trace import accumulation_split_s

    fixed = mp_exposed_s + loss_s
    _, bigger = model(fixed, 0.0, fixed)
    # the accumulation remedy's own factor (``remedies.accumulation_factor``), as the model says it
    factor = next((r.factor for r in bigger if r.key == "accumulation" and r.factor), None)
    if factor is None:  # no accumulation remedy to price: the bigger batch alone
        factor = ACCUMULATION_FACTORS[0]
    per_pass, once = accumulation_split_s(pipeline, factor)
    once = min(once, fixed)  # what the micro-step holds beside the compute
    _, more = model(0.0, once, fixed - once)
    m, v = pipeline.micro_batches, pipeline.virtual_stages
    out = []
    for key, ranked, how in (
        ("bigger_batch", bigger, f"the pipeline's span {milliseconds(pipeline.span_s)} (its stages' "
         "compute, bubble and sends) and the other groups' collectives grow with the "
         "micro-batch"),
        ("accumulation", more, f"each more pass of {m * v} micro-batch chunks adds "
         f"{milliseconds(per_pass)} (the replayed 1F1B's steady state and the sends' own time), the fill "
         f"and drain {milliseconds(once)} paid once a step"),
    ):
        r = next((r for r in ranked if r.key == key), None)
        if r is None or not r.applicable:
            continue
        title = (r.title if key == "bigger_batch" else
                 _pipeline_accumulation_title(pipeline, r.factor or factor))
        note = f"{how}; " + r.note if r.note else how
        out.append(replace(r, title=title, note=note))
    return out


def _pipeline_accumulation_title(pipeline, factor: int) -> LayoutTitle:
    """'Accumulate gradients over 4x the pipeline's micro-batches (m -> 4m a step)', 4 the
    accumulation remedy's ``factor``, its arrow a page's own (``arrowed_said``)."""
    k, m = factor, pipeline.micro_batches
    fitted = "" if pipeline.counted else ", fitted"
    return arrowed_said(f"Accumulate gradients over {k}x the pipeline's micro-batches (",
                        f"{m}{ARROW_FIELD}{k * m}", f" a step{fitted})")


def pipeline_only_batch_remedies(pipeline, step_s: float, mp_exposed_s: float,
                                 data_wait_s: float, device: str,
                                 wait_reading: str | None = None) -> list[Remedy]:
    """The batch remedies of a pipeline with no data-parallel exchange (dp 1: nothing for the
    exchange's model to price), from the traced step ``step_s`` split the way
    ``pipeline_batch_remedies`` splits it: per sample the pipeline's span T (its stages'
    compute, bubble and sends), the other groups' exposed collectives ``mp_exposed_s`` and the
    data wait ``data_wait_s`` (a loader supplies samples at its rate); once a step the rest
    (optimizer, host work between steps).

    - Twice the per-device batch: step' = rest + 2 (T + x + d), gain 2 step / step' - 1.
    - 4x the micro-batches: each more pass of m adds the replay's steady state and the sends'
      own time p (``pipeline_trace.accumulation_split_s``) with its x and d; step' = step +
      3 (p + x + d), gain 4 step / step' - 1. Both train at a larger global batch.

    ``wait_reading``: how the data wait d is read (``traced_data_wait``): None, the loading
    serial with the step (an in-process loader's, or a wait too small to model), as above;
    ``FIXED``, a fixed cost of each fetch, paid once a step for twice the batch (step' = rest +
    d + 2 (T + x)) and once each pass for 4x the micro-batches (as above); ``PACES``, a loader
    supplying one step's samples a step at today's rate: step' is at least that many steps
    (``max(n step, step'_FIXED)``), so neither gains."""
    from scalesim.pipeline_trace import accumulation_split_s
    from scalesim.remedies import gain_verdict

    per_sample = pipeline.span_s + mp_exposed_s + data_wait_s
    rest = step_s - per_sample
    # read as a fixed cost of each fetch (or a pacing loader's, which FIXED's step then floors),
    # twice the batch fetches once a step: d leaves the per-sample time for the once-a-step rest
    once_d = 0.0 if wait_reading is None else data_wait_s
    rest = rest if rest > 1e-9 * step_s else 0.0  # 0 but rounding
    # no exchange, so no model remedy to say its factor: the remedies' own, no global batch set
    big, acc = BIGGER_BATCH_FACTOR, accumulation_factor(None, 1, 1)
    per_pass, once = accumulation_split_s(pipeline, acc)
    per_pass += mp_exposed_s + data_wait_s
    others = [f"the other groups' collectives {milliseconds(mp_exposed_s)}"] if mp_exposed_s > 0 else []
    if data_wait_s > 0:
        others.append(f"the data wait {milliseconds(data_wait_s)}")
    with_them = f", with {' and '.join(others)}," if others else ""
    grows = others[:-1] if once_d else others  # twice the batch: a fixed fetch once a step
    grow_with = f", with {' and '.join(grows)}," if grows else ""
    once_a_step = ([f"the data wait {milliseconds(once_d)}"] if once_d else []) + (
        [f"the rest of the step {milliseconds(rest)}"] if rest else [])
    m, v = pipeline.micro_batches, pipeline.virtual_stages
    out = []
    for key, title, new_step, samples, how in (
        ("bigger_batch", NOMINAL_BATCH_TITLES["bigger_batch"].format(device=device),
         rest + once_d + big * (per_sample - once_d), big,
         f"the pipeline's span {milliseconds(pipeline.span_s)} (its stages' compute, bubble and "
         f"sends){grow_with} grows with the micro-batch"
         + (f", {' and '.join(once_a_step)} paid once" if once_a_step else
            ": the traced step is all of it, so nothing is amortised")),
        ("accumulation", _pipeline_accumulation_title(pipeline, acc),
         step_s + (acc - 1) * per_pass, acc,
         f"each more pass of {m * v} micro-batch chunks adds {milliseconds(per_pass)} (the replayed "
         f"1F1B's steady state and the sends' own time{with_them.rstrip(',')}), the fill "
         f"and drain {milliseconds(once)}"
         + (f" and the rest of the step {milliseconds(rest)}" if rest else "") + " paid once a step"),
    ):
        if wait_reading == PACES:  # the loader's supply: samples steps' time at least
            new_step = max(new_step, samples * step_s)
            how += (f"; the loader, pacing the job, supplies {samples}x the samples in "
                    f"{samples}x the time")
        elif wait_reading == FIXED:
            how += f"; the {milliseconds(data_wait_s)} data wait a fixed cost of each fetch"
        gain = float(samples * step_s / new_step - 1.0)
        note = f"{how}; global batch {samples}x: check time-to-quality"
        out.append(Remedy(key, title, gain, True, note, verdict=gain_verdict(gain),
                          factor=samples))
    return out


def _with_measured(remedies: list[Remedy], measured: Remedy) -> list[Remedy]:
    """``remedies`` with ``measured`` (a remedy priced from the traces themselves) in place of
    the model's of the same key, ranked by its gain among the applicable ones."""
    out = [r for r in remedies if r.key != measured.key]
    at = next((i for i, r in enumerate(out)
               if not r.applicable or shown_gain(r) < shown_gain(measured)), len(out))
    out.insert(at, measured)
    return out


def _model_parallel_lines(degrees: dict, model_parallel: dict, step_s: float,
                          exposed_s: float) -> list[str]:
    """The evidence of the ``model_parallel_comm`` finding (two lines, as a report shows an
    "Also" finding's): the layout the process groups name; each role's collectives per step
    with the part nothing else covered, and the share they make together."""
    named = f" ({', '.join(degrees['named'])})" if degrees["named"] else ""
    parts = []
    for role, v in model_parallel.items():
        what = "sends and receives" if role == "pp" else "collectives"
        parts.append(f"{ROLE_WORDS[role]} {what} {milliseconds(v['comm_s'])} per step, "
                     f"{milliseconds(v['exposed_s'])} of it exposed")
    total = sum(v["exposed_s"] for v in model_parallel.values())
    capped = (", at most the slowest rank's exposed communication" if total > exposed_s * 1.0005
              else "")
    line = (f"{'; '.join(parts)} (medians over ranks; together {milliseconds(exposed_s)}, "
            f"{whole_percent(exposed_s / step_s)} of the step{capped}; exposed: covered by no compute, "
            "data wait or other collective)")
    if "pp" in model_parallel:
        line += ("; a stage's exposed receives include its waits for the stage before, the "
                 "pipeline bubble among them (more micro-batches or an interleaved schedule "
                 "shrink it: scalesim plan prices both)")
    return [f"the traces' process groups: {layout_words(degrees)}{named}", line]


def tp_overlap_remedy(model_parallel: dict, step_s: float) -> Remedy | None:
    """Overlapping the tensor-parallel collectives with the matmuls (Transformer Engine's TP
    comm overlap, torchtitan's async TP), priced from the traces: the exposed tensor-parallel
    time t is hidden, the matmuls it runs beside slowed by the contention of docs/model.md §3,
    saving ``t x (1 - GPU_COMM_CONTENTION)``; gain ``step / (step - saving) - 1``. None where
    the traces show no exposed tensor-parallel collective."""
    from scalesim.model.overlap import GPU_COMM_CONTENTION
    from scalesim.remedies import TP_OVERLAP_TITLE

    exposed = model_parallel.get("tp", {}).get("exposed_s", 0.0)
    if exposed <= 0 or step_s <= 0:
        return None
    saving = exposed * (1.0 - GPU_COMM_CONTENTION)
    gain = step_s / (step_s - saving) - 1.0
    note = (f"the traced exposed tensor-parallel time {milliseconds(exposed)} hidden behind the matmuls, "
            f"which run {GPU_COMM_CONTENTION:.0%} of it slower beside the collectives "
            "(docs/model.md §3)")
    return Remedy("tp_overlap", TP_OVERLAP_TITLE, float(gain), True, note,
                  verdict=gain_verdict(float(gain)))


def attention_kernel_finding(summaries, step_s: float) -> tuple[Finding | None, Remedy | None]:
    """(finding, remedy) where the traced ranks ran a FlashAttention-2-class attention kernel on
    a device where it is slower than the vendor kernel (Hopper:
    ``presets.flash2_slower_than_vendor``), else (None, None). The attention time t is the median over
    those ranks of their median step's attention kernels; the vendor kernel would take
    ``t x FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER`` (pytorch/pytorch#142132's one benchmark), so
    the step loses ``t x (1 - ratio)``: the finding's share of the step, and the remedy's gain
    ``step / (step - saving) - 1``, the attention kernels assumed on the step's critical path
    (the compute stream). Lost at one device too, like a data stall: not a scaling cause."""
    from scalesim.attention_kernel import FLASH2_KERNEL
    from scalesim.presets import FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER as ratio
    from scalesim.presets import flash2_slower_than_vendor
    from scalesim.remedies import ATTENTION_KERNEL_TITLE

    slow = [s for s in summaries if s.attention_family == FLASH2_KERNEL and s.device_name
            and flash2_slower_than_vendor(s.device_name)]
    if not slow or step_s <= 0:
        return None, None
    t_attn = float(np.median([s.median("attention_s") for s in slow]))
    saving = t_attn * (1.0 - ratio)
    if saving <= 0:
        return None, None
    names = sorted({s.device_name for s in slow})
    evidence = [
        f"FlashAttention-2-class kernels (flash-attn 2 or PyTorch SDPA's flash backend) on "
        f"{', '.join(names)}: {milliseconds(t_attn)} per step, {whole_percent(t_attn / step_s)} of the step "
        f"(median over {len(slow)} rank{'s' if len(slow) > 1 else ''})",
        f"the vendor kernel (cuDNN, FlashAttention-3) ran {1.0 / ratio:.2f}x faster on an H100 "
        f"in one published benchmark (pytorch/pytorch#142132): it would save {milliseconds(saving)} per "
        f"step ({whole_percent(saving / step_s)}), lost at one device as at many",
    ]
    gain = step_s / (step_s - saving) - 1.0
    note = (f"measured attention time {milliseconds(t_attn)} x (1 - {ratio:.3f}), pytorch/pytorch#142132's "
            "one-benchmark ratio; the kernels assumed on the step's critical path")
    return (finding("attention_kernel", saving / step_s, evidence),
            Remedy("attention_kernel", ATTENTION_KERNEL_TITLE, float(gain), True, note,
                   verdict=gain_verdict(float(gain))))


def _traced_or_given(summaries, degrees: dict, exchange, shard_group: int | None,
                     grad_sync: str | None = None):
    """(exchange, note) of a traced job: ``exchange`` as given (its shard group, where it gives
    none, the one the traces' groups show: ``shard_groups``; its gradient sync, for ZeRO-2/3
    under FSDP, the one the traces' micro-steps show: ``traced_grad_sync``) or read off the
    collectives with ``shard_group`` on it; ``grad_sync`` (``--grad-sync``: the user's word on
    what the traces show, ``_given_grad_sync``) on either; a shard group at or above the
    exchange's ranks is full sharding. ScalesimError where the shard group cannot run."""
    from scalesim.fit_runs import RunsExchange

    ranks = exchange_ranks(summaries, degrees)
    notes = []
    read = exchange is None
    if read:  # traced_exchange reads the shard group the groups show
        exchange, note = traced_exchange(summaries, degrees)
        notes.append(note)
        if shard_group is not None:
            try:
                exchange = replace(exchange, shard_group=shard_group)
            except ScalesimError as exc:
                raise ScalesimError(f"the traces' collectives read as {exchange.strategy}: "
                                    f"{exc}") from None
        if grad_sync is not None:
            exchange, note = _given_grad_sync(summaries, exchange, grad_sync, exchange.grad_sync,
                                              degrees)
            notes.append(note)
    else:
        exchange = require_model(exchange, RunsExchange, "exchange")
        found = shard_groups(summaries, ranks) if by_group(summaries) else None
        traced = found.hybrid if found is not None else 0
        given = exchange.shard_group
        if not given and traced and exchange.sharded and exchange.zero_framework == "fsdp":
            exchange = replace(exchange, shard_group=traced)
        shown, synced = exchange.grad_sync, ""  # the traces' gradient sync, where it applies
        if exchange.strategy in ("zero2", "zero3"):
            shown, synced = traced_grad_sync(summaries)
        if exchange.zero_framework == "deepspeed" and shown == "once-per-step":
            # DeepSpeed stage 2/3 reduce in every backward: what the traces show is not it (a
            # template: the page names its framework control)
            notes.append(knob_refusal(
                f"the traces show {as_literal(synced)}, but DeepSpeed stage "
                f"{exchange.strategy[-1]} reduces its gradients in every micro-step (its no_sync "
                "raises for stage 2/3): the exchange is priced as DeepSpeed's, every micro-step, "
                "on the collective time of the one that reduces, so its link reads faster than "
                "the traces show; if the job accumulated unsharded gradients (FSDP no_sync, a "
                f"framework of its own), give {KNOB.zero_framework} fsdp"))
            shown, synced = "every-micro-step", ""
        told = ""
        if grad_sync is None:
            exchange = replace(exchange, grad_sync=shown)
        else:
            exchange, told = _given_grad_sync(summaries, exchange, grad_sync, shown, degrees)
        if exchange.sharded:
            notes.append(knob_refusal(f"the job exchanged as {as_literal(exchange.label())} "
                                      f"({KNOB.strategy}): the remedies start from it"))
        notes.append(told)
        if synced and grad_sync is None:
            notes.append(knob_refusal(f"its gradient sync is the traces' ({as_literal(synced)}); "
                                      f"give {KNOB.grad_sync} to say otherwise"))
        if traced and not given and exchange.shard_group == traced:
            notes.append(knob_refusal(
                f"its shard group {traced} is the traces' ({as_literal(found.desc)}, "
                f"all-reducing across {found.replicas} replicas); give {KNOB.shard_group} to say "
                "otherwise"))
        elif traced and given and given != traced:
            notes.append(knob_refusal(
                f"{KNOB.shard_group} {given} is used; the traces' groups show a shard group of "
                f"{traced} ({as_literal(found.desc)})"))
    if exchange.shard_group >= ranks:
        notes.append(f"shard group {exchange.shard_group} at or above the exchange's {ranks} "
                     "data-parallel ranks: it shards over all of them (full sharding)")
        exchange = replace(exchange, shard_group=0)
    if why := exchange.run_problem(ranks):
        raise ScalesimError(f"the traced job's data-parallel exchange: {why}")
    return exchange, joined("; ", notes)


def _given_grad_sync(summaries, exchange, grad_sync: str, traced: str, degrees: dict):
    """(exchange, note) with ``--grad-sync`` ``grad_sync`` on ``exchange`` (given or read off
    the collectives), the note saying where it overrides what the traces show (``traced``:
    their gradient sync, ``traced_grad_sync``; a DDP job's all-reduces in several micro-steps,
    ``ddp_reductions`` over ``degrees``: priced once a step, as under no_sync), or where it
    changes nothing (``sharding.grad_sync_unused`` at the micro-steps the traces show: DDP and
    ZeRO-1 reduce once a step anyway, one micro-step a step reduces once either way). Where it
    changes nothing, the exchange reduces in every micro-step (each micro-step is the step's
    last), so it is not named as under no_sync. The note a template (``knob_refusal``): the
    Diagnose page says the gradient sync by its control."""
    from scalesim.model.sharding import grad_sync_unused
    from scalesim.trace_ranks import traced_micro_steps

    k = traced_micro_steps(summaries)[0] or 1
    read_k, reductions = ddp_reductions(summaries, degrees, exchange)
    given = f"{KNOB.grad_sync} {grad_sync}"  # by its control: the CLI's flag, the page's label
    if grad_sync == "once-per-step" and reductions >= 2:
        return exchange, knob_refusal(
            f"{given} is used, overriding what the traces show (all-reduces in {reductions} of "
            f"the {read_k} micro-steps a step, read as DDP reducing its gradients in each): the "
            "exchange is priced as DDP's once a step (under no_sync), one exchange carrying all "
            "the traced all-reduces' time, and no no_sync remedy is offered")
    told_k, told = ddp_reductions(summaries, degrees, exchange, grad_sync)
    if grad_sync == "every-micro-step" and told >= 2:
        if told == reductions:
            return exchange, knob_refusal(
                f"{given} changes nothing here: the traces show DDP reducing its gradients in "
                f"each of the {told_k} micro-steps a step already")
        return exchange, knob_refusal(
            f"{given} is used, overriding what the traces show (gradient all-reduces in "
            f"{reductions} of the {read_k} micro-steps a step, read as DDP reducing "
            + ("them once a step under no_sync" if reductions == 1 else f"in {reductions} of them")
            + f"): the exchange is priced as DDP's reducing in each of the {told_k} micro-steps, "
            f"the traced all-reduces' time carried by {told_k} all-reduces a step (its link read "
            f"{told_k}x slower than the traces' one exchange), and the no_sync remedy is offered")
    if why := grad_sync_unused(exchange.strategy, k, grad_sync):
        return (replace(exchange, grad_sync="every-micro-step"),
                knob_refusal(f"{given} changes nothing here: {as_literal(why)}"))
    if exchange.strategy not in ("zero2", "zero3"):  # every-micro-step on DDP or ZeRO-1
        return exchange, knob_refusal(
            f"{given} changes nothing here: strategy {exchange.strategy} reduces gradients once "
            "per step anyway (it applies to ZeRO-2/3)")
    exchange = replace(exchange, grad_sync=grad_sync)
    return exchange, ("" if traced == grad_sync else knob_refusal(
        f"{given} is used, overriding what the traces show "
        f"({as_literal(traced_grad_sync(summaries)[1] or traced)})"))


# why a remedy that acts on the exchange is not predicted where no collective of it was traced
UNSEEN_EXCHANGE_REASON = ("not predicted: no collective of the data-parallel exchange was "
                          "traced (see the notes)")
# the source of every part of the model profile built from traces (``_trace_remedies``)
TRACE_SOURCE = "from traces"


def exchange_buckets(summaries, degrees: dict, exchange,
                     reductions: int = 1) -> tuple[ModelBuckets, str]:
    """(the model's buckets, a note): a DDP job's traced ones (``trace_buckets``, of one of its
    ``reductions`` a step: the host posts' sizes, else on a GPU trace the NCCL kernels') where
    no group splits the model (whose all-reduces would mix in);
    else DDP's defaults, with a note where the job is DDP. Sharded strategies reduce in their
    own units: the defaults, which they do not use, and no note."""
    if exchange.strategy != "ddp":
        return DEFAULT_BUCKETS, ""
    if splits_the_model(degrees):
        return DEFAULT_BUCKETS, default_buckets_note(
            f"the traces' all-reduces mix the data-parallel exchange's with the other groups' "
            f"({layout_words(degrees)})")
    for sizes_from in (HOST_SIZES, KERNEL_SIZES):  # the host's, else the NCCL kernels'
        if sizes := traced_buckets(summaries, reductions, sizes_from):
            return model_buckets(sizes, sizes_from), ""
    from scalesim.trace_comm_calls import collective_kind

    if not any(collective_kind(name) == "all-reduce" for s in summaries for name in s.collectives):
        return DEFAULT_BUCKETS, ""  # no all-reduce traced (one process): no size to miss
    gpu = any(s.device == "gpu" for s in summaries)
    return DEFAULT_BUCKETS, default_buckets_note(NO_GPU_SIZES if gpu else NO_SIZES)


def input_wait_s(cr: dict) -> float:
    """Seconds a step waits on the input (``trace_ranks.cross_rank``'s ``cr``): the data wait
    on the step's path, what taking every rank's data wait off saves it (``input_wait_s``; a
    ``cr`` without it: every rank's median data wait). The one reading of the wait: the input
    finding's share, the loader's model (an in-process loader's serial time, a worker loader's
    reading) and the loader remedy's cap take it; the model's micro-step takes the waiting
    ranks' (``micro_step_wait_s``)."""
    return cr.get("input_wait_s", cr["data_wait_s"])


def micro_step_wait_s(cr: dict) -> float:
    """Seconds of data wait in the model's step (``_modelled_remedies``), whose micro-step is
    the waiting ranks' (``waiting_compute_s``): their data wait plus the part of their wait the
    slowest rank's own extra data wait covers (``loader_wait_s``), so that with the straggler
    wait it rebuilds the traced step. Where the slowest rank waits less on data than they do,
    this is more than ``input_wait_s`` (their extra wait hidden in their wait for it)."""
    return cr.get("waiting_data_wait_s", cr["data_wait_s"]) + cr.get("loader_wait_s", 0.0)


def traced_data_wait(summaries, cr: dict) -> DataWaitReading | None:
    """How the data wait the step holds is read (``trace_data_wait.read_data_wait``) from the
    steps of the rank the others wait for (``cr``'s slowest, its wait the one on the step's
    path), where the remedies' model carries it as a worker-process loader's
    (``LOADER_MODELLED_SHARE`` of the step or more; an in-process loader's is serial: None)."""
    wait, step = input_wait_s(cr), cr["step_s"]
    if wait < LOADER_MODELLED_SHARE * step or any(s.loader_in_process for s in summaries):
        return None
    slowest = next(s for s in summaries if s.rank == cr["slowest_rank"])
    return read_data_wait(slowest.steps, wait, step)


def _input_lines(cr: dict, parts: dict, share: dict) -> list[str]:
    """The input pipeline finding's evidence: the data wait a step holds, and where the slowest
    rank's own loader keeps the others waiting, how much of their wait it is."""
    head = (f"waiting on the DataLoader {milliseconds(parts['data'])} per step "
            f"({whole_percent(share['data'])})")
    if abs(parts["data"] - cr["data_wait_s"]) <= 1e-9 * cr["step_s"]:
        return [f"{head}, median over ranks"]
    if cr.get("loader_wait_s", 0.0) <= 0:  # the slowest rank waits less: theirs is hidden
        return [f"{head} on the step's path, what taking every rank's data wait off saves it "
                f"(every rank's median {milliseconds(cr['data_wait_s'])}, the rest hidden in "
                "the waits for the slowest rank)"]
    return [f"{head} on the rank the others wait for: {milliseconds(cr['loader_wait_s'])} of "
            f"it its own data wait beyond theirs ({milliseconds(cr['waiting_data_wait_s'])}), "
            f"which they wait for in their collectives (median over steps)",
            f"rank {cr['slowest_rank']}'s loader keeps up less than the others' (theirs "
            "prefetch while they wait): its batches, not its compute, pace the step"]


def _trace_remedies(cr, summaries, *args, data_wait: DataWaitReading | None = None, **kwargs):
    """``_modelled_remedies`` with a worker-process loader's data wait read as ``data_wait``
    says (``trace_data_wait.read_data_wait``; None: a loader that paces the job), through
    ``trace_data_wait.as_read`` as every path that prices a data wait. Where the
    steps cannot tell (``UNDECIDED``) both are priced: each remedy's gain and the first remedy
    are the pacing reading's, and where the fixed-cost reading's gain differs, it is beside it
    (``Remedy.other_gain``, the caveat giving both)."""
    priced = {}

    def price(reading):
        priced[reading] = _modelled_remedies(cr, summaries, *args, wait_reading=reading or PACES,
                                             **kwargs)
        return priced[reading][1]

    shown = as_read(price, data_wait, input_wait_s(cr))
    first, remedies = next(iter(priced.values()))  # the pacing reading's where both
    return next((b for r, b in zip(remedies, shown, strict=True) if r is first), None), shown


def _modelled_remedies(cr, summaries, cause: str, exchange=None, degrees=None, dp_comm=None,
                       model_parallel_s: float = 0.0, per_sample_extra_s: float = 0.0,
                       per_step_s: float = 0.0, micro_steps: int | None = None,
                       exchange_seen: bool = True, ddp_reductions: int = 1,
                       set_aside_once: float = 0.0, wait_reading: str = PACES,
                       buckets: ModelBuckets = DEFAULT_BUCKETS):
    """Rank the seed remedies with a model profile built from the traced breakdown, the job
    exchanging as ``exchange`` (None: DDP; its link's bus bandwidth from the bytes that
    strategy sends, ``zero_exchange.sent_units``). Where the traces' groups split the model
    (``degrees``), the model's devices are the exchange's replicas (dp x cp,
    ``process_groups.exchange_replicas``), and the exposed
    collectives of the other groups (``model_parallel_s``) a fixed time of each micro-step, of
    which ``per_sample_extra_s`` grows with the micro-batch instead, and ``per_step_s`` more
    paid once a step whole (a pipeline's fill and drain, ``pipeline_batch_remedies``: idle of
    the schedule, so ``ComputeCurve.per_step_s``, never divided by ZeRO's shards). The exchange
    takes ``dp_comm`` (``traced_dp_comm``: its own time a step and the part hidden, whose share is
    its overlap); None: the traced communication (``cr``'s, waits for peers included).
    ``micro_steps``: the micro-steps a step the traces show (``trace_ranks.traced_micro_steps``): the
    model accumulates over as many, each a k-th of the step's compute, idle, in-process loading
    and other groups' collectives (the optimizer step and the exchange once a step, as the job
    ran them); None: a step is one micro-step. ``exchange_seen`` False: no collective of the
    exchange was traced (``unseen_exchange_note``), so the remedies that act on it
    (``remedies.EXCHANGE_REMEDIES``) are held back, not predicted. ``ddp_reductions``: the
    all-reduces a step of a DDP job that reduces in several micro-steps
    (``trace_collectives.ddp_reductions``; 1: once a step). ``set_aside_once``: the share of
    the exposed time of the collectives set aside as no gradient traffic (a part of idle) that
    runs once a step (``trace_collectives.set_aside_cadence``): paid once a step
    (``ComputeCurve.per_step_s``, never sharded), the rest in each micro-step. ``wait_reading``:
    a worker-process loader's data wait (where the model carries it, ``LOADER_MODELLED_SHARE``)
    as a supply beside the step at today's rate (``PACES``: nothing else gains until it does) or
    as a fetch before each micro-step's forward (``FIXED``: a fixed cost of each fetch,
    ``ComputeCurve.fetch_s``, outside the passes the exchange hides behind, which the loader
    remedy takes off, ``trace_data_wait.fixed_fetch_remedy``). ``buckets``: the model's
    gradient and DDP buckets (``exchange_buckets``: the traced ones, else DDP's defaults)."""
    from scalesim.fit_runs import DDP_EXCHANGE
    from scalesim.model import collectives as coll
    from scalesim.model.memory import reduce_bytes_per_param_of
    from scalesim.model.shard_groups import shard_sizes
    from scalesim.model.stragglers import expected_max_normal
    from scalesim.model.zero_exchange import reduce_wire_ratio, sent_per_byte
    from scalesim.schemas import (
        ComputeCurve,
        Hardware,
        Jitter,
        LinkLevel,
        LoaderCurve,
        LoaderPoint,
        Profile,
        Scenario,
        ScenarioLayout,
        Workload,
    )

    world = exchange_ranks(summaries, degrees)
    if world < 2:
        return None, []
    step = cr["step_s"]
    k = micro_steps or 1
    # of one micro-step: the waiting ranks' (``cross_rank``; a ``cr`` without them: every
    # rank's), the slowest's excess being the wait the slow device or the spread adds below
    compute = max(cr.get("waiting_compute_s", cr["compute_s"]), 1e-6 * step) / k
    grad_bytes = buckets.grad_bytes
    # all the exchange's collective time of one step, hidden or not
    transfer = max(cr["comm_s"] if dp_comm is None else dp_comm[0], 1e-9)
    # a fitted value: held within the busbw bounds; traces with no collective (ranks of no
    # all-reduce, or runs of one process each) gave 1e8 GB/s, which the link refused
    exchange = DDP_EXCHANGE if exchange is None else exchange
    codes = exchange.step_fields()
    # seconds per (bytes / busbw) the exchange takes: the bytes each rank sends a step over its
    # k micro-steps (ZeRO-2/3 reduce, ZeRO-3 gathers, in each; DDP: 2 (n - 1) / n), over the
    # shard group of s ranks (all n of them but under hybrid sharding) and the r = n / s replicas
    shard, replicas = (int(n) for n in shard_sizes(exchange.shard_group, codes["strategy"],
                                                    world))
    # bytes in units of the traced exchange's: its gradients reduced as they were gathered (the
    # traces say nothing of dtypes, so no fp32 main grads are added: docs/model.md §4)
    workload = Workload(name="traced", params=grad_bytes, wire_bytes_per_param=1.0,
                        reduce_bytes_per_param=1.0, micro_batch=1)
    # the reductions' bytes as the model sends them (memory.reduce_bytes_per_param_of)
    reduce_ratio = reduce_wire_ratio(workload.wire_bytes_per_param, reduce_bytes_per_param_of(
        codes["strategy"], codes["framework"], workload.wire_bytes_per_param,
        workload.grad_bytes_per_param, workload.stated_reduce_bytes()))
    per_byte = float(sent_per_byte(codes["strategy"], codes["framework"], k, codes["grad_sync"],
                                   shard, replicas, reduce_ratio))
    busbw = clip("busbw_GBps", per_byte * grad_bytes / transfer / coll.GB)
    link = LinkLevel(kind="traced", busbw_GBps=busbw, latency_s=0.0, source=TRACE_SOURCE)
    hw = Hardware(name="traced job", device_name=traced_device_name(summaries),
                  devices_per_node=world,
                  device_memory_bytes=1e15, cpu_cores_per_node=world, intra_node=link,
                  inter_node=link, comm_compute_contention=0.0)  # traced compute includes it
    loader, loading, fetch = None, 0.0, 0.0
    if input_wait_s(cr) >= LOADER_MODELLED_SHARE * step:
        if any(s.loader_in_process for s in summaries):  # num_workers=0: serial, per sample
            loading = micro_step_wait_s(cr) / k
        elif wait_reading == FIXED:  # a fixed cost of each fetch: a fixed time a micro-step
            fetch = micro_step_wait_s(cr) / k
        else:  # worker processes: a supply beside the step, at today's rate (k samples a step)
            loader = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=k / step)],
                                 measured=True, source=TRACE_SOURCE)
    overlap_share = (cr["overlap_share"] if dp_comm is None or dp_comm[0] <= 0
                     else dp_comm[1] / dp_comm[0])
    overlap = overlap_share >= OVERLAPPED_SHARE
    # the set-aside collectives' exposed time (a part of idle) run once a step: paid once a step
    aside_once = (set_aside_once * min(max(cr["set_aside_exposed_s"], 0.0),
                                       max(cr["idle_s"], 0.0))
                  if set_aside_once > 0 and k >= 2 else 0.0)
    idle = (max(cr["idle_s"], 0.0) - aside_once + model_parallel_s) / k
    per_sample_extra_s /= k
    # the model's passes, an in-process loader's time in them (a fixed fetch, the same on every
    # rank, aside: the straggler's spread is over the passes, model/step.py)
    micro = compute + idle + loading
    slow_factor, cv = 1.0, 0.0
    if cause == "stragglers":  # spread over all ranks: sigma * e_N = measured wait, the k
        # micro-steps' jitter adding in variance (sigma = cv * micro * sqrt(k): model/step.py)
        # a fitted value: held within the cv bounds (scalesim.bounds) like every profile number
        cv = clip("cv", cr["straggler_wait_s"]
                  / (float(expected_max_normal(world)) * micro * np.sqrt(k)))
    else:  # one rank late by the measured wait, over its k micro-steps
        slow_factor = 1.0 + cr["straggler_wait_s"] / (k * micro)
    profile = Profile(
        name="traced job", hardware=hw,
        workload=workload,
        compute=ComputeCurve(overhead_s=idle - per_sample_extra_s,
                             per_sample_s=compute + per_sample_extra_s + loading,
                             # before each forward, never hidden behind a pass (§1)
                             fetch_s=fetch,
                             # paid once a step whole (a pipeline's fill and drain, the
                             # metric's once-a-step wait): no optimizer update ZeRO shards
                             optimizer_step_s=0.0, per_step_s=per_step_s + aside_once,
                             measured=True,
                             source=TRACE_SOURCE),
        input_pipeline=loader, jitter=Jitter(step_time_cv=cv),
    )
    scenario = Scenario(devices=[world], devices_per_node=world, micro_batch=1, accumulation=k,
                        overlap=overlap, bucket_mib=buckets.bucket_mib,
                        first_bucket_mib=buckets.first_bucket_mib,
                        **exchange.names(),
                        slow_device=0 if slow_factor > 1.0 + 1e-3 else None,
                        slow_factor=max(slow_factor, 1.0),
                        layout=ScenarioLayout(shard_group=shard) if shard < world else None)
    first, remedies = model_remedies(profile, scenario, world, cause, nominal_links=True,
                                     nominal_batch=True, traced_micro_steps=micro_steps,
                                     ddp_reductions=ddp_reductions)
    if loading or fetch:
        remedies = [r if r.key != "loader" else _loader_workers(profile, scenario, loading, k)
                    if loading else fixed_fetch_remedy(profile, scenario, fetch, k)
                    for r in remedies]
        first = first_remedy(remedies, cause, least_decisive_gain(profile, scenario))
    if not exchange_seen:
        remedies = [Remedy(r.key, r.title, 0.0, False, UNSEEN_EXCHANGE_REASON, factor=r.factor)
                    if r.key in EXCHANGE_REMEDIES else r for r in remedies]
        first = first_remedy(remedies, cause, least_decisive_gain(profile, scenario))
    capped = [loader_within_wait(r, input_wait_s(cr), step) for r in remedies]
    if capped == remedies:
        return first, remedies
    return first_remedy(capped, cause, least_decisive_gain(profile, scenario)), capped


# the loader remedy where the traces' DataLoader runs in the training process
LOADER_WORKERS_TITLE = "Load the input in DataLoader worker processes (num_workers > 0)"


def _loader_workers(profile, scenario, loading_s: float, micro_steps: int = 1) -> Remedy:
    """The loader remedy of traces whose DataLoader ran in the training process
    (``traces.IN_PROCESS_LOADER``, num_workers=0): its ``loading_s`` a micro-step (of
    ``micro_steps`` a step) is serial with the
    compute, so the traced job's model carries it as compute per sample (the other remedies
    scale it with the batch, and overlap still hides the exchange: a supply beside the step at
    today's rate had made them gain nothing); worker processes take it off the step."""
    from scalesim.traces import IN_PROCESS_LOADER

    gain = gain_of_compute(profile, scenario,
                            per_sample_s=profile.compute.per_sample_s - loading_s)
    note = (f"the traces' DataLoader loads in the training process ({IN_PROCESS_LOADER}: "
            f"num_workers=0), {milliseconds(loading_s * micro_steps)} a step serial with the "
            "compute; worker "
            "processes (DataLoader(num_workers=N), as many as keep up) load the next batches "
            "beside it")
    return Remedy("loader", LOADER_WORKERS_TITLE, gain, True, note, verdict=gain_verdict(gain))
