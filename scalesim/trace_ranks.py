"""A job's traces, one per rank: read them as one run, and compare the ranks step by step.

``load_traces`` summarises each rank's file (``traces.summarise``) and refuses a rank given
twice or traces of several runs (``check_one_world``); ``missing_ranks_note`` says which ranks
were not traced; ``cross_rank`` names the slowest rank and how long the others wait for it;
``traced_micro_steps`` / ``traced_micro_steps_with`` read the job's micro-steps a step from
every rank's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from scalesim.errors import ScalesimError, check_distinct_files
from scalesim.trace_batch import NO_SHAPES
from scalesim.traces import DATA_FETCHES, TraceSummary, most_steps_count, summarise


def load_traces(paths: list[str]) -> list[TraceSummary]:
    """Summaries of one trace per rank, sorted by rank; duplicate ranks are an error."""
    if not paths:
        raise ScalesimError("give one or more trace files (--trace rank0.json rank1.json ...)")
    check_distinct_files(paths, "give each rank's trace once")
    summaries = [summarise(p, i) for i, p in enumerate(paths)]
    ranks = Counter(s.rank for s in summaries)
    dup = [r for r, n in ranks.items() if n > 1]
    if dup:
        raise ScalesimError(f"two traces are rank {dup[0]}; give one trace per rank")
    check_one_world(summaries)
    check_one_run_in_time(summaries)
    return sorted(summaries, key=lambda s: s.rank)


def check_one_run_in_time(summaries: list[TraceSummary]) -> None:
    """ScalesimError where two ranks traced on one host (one clock: ``host_name``) have steps
    that never overlap in time (``base_time_s`` + each step's start and end): one synchronous
    job's ranks run each step together, so they are traces of different runs, whose ranks a
    step-by-step comparison would read as a straggler. Ranks on different hosts are not
    compared (their clocks may differ by more than a step)."""
    spans: dict[str, tuple[float, float, str]] = {}
    for s in summaries:
        if not s.host or not s.steps:
            continue
        start = s.base_time_s + min(st.start_s for st in s.steps)
        end = s.base_time_s + max(st.end_s for st in s.steps)
        if s.host not in spans:
            spans[s.host] = (start, end, s.path)
            continue
        start0, end0, path0 = spans[s.host]
        gap = max(start - end0, start0 - end)
        if gap > 0:
            raise ScalesimError(
                f"{Path(path0).name} and {Path(s.path).name} ran on one host "
                f"({s.host[:60]}), but their traced steps never overlap in time ({gap:.3g} s "
                "apart): traces of different runs; give the traces of one run (one per rank)")


def check_one_world(summaries: list[TraceSummary], where: str = "") -> None:
    """ScalesimError where two traces name different ``distributedInfo.world_size``: one job has
    one world size, so they are traces of several runs (``where``: a prefix for the message)."""
    worlds = {s.world_size: s.path for s in summaries if s.world_size is not None}
    if len(worlds) > 1:
        (w1, f1), (w2, f2) = list(worlds.items())[:2]
        raise ScalesimError(
            f"{where}{Path(f1).name} says distributedInfo.world_size {w1}, "
            f"{Path(f2).name} says {w2}: traces of different runs; give the "
            "traces of one run (one per rank)"
        )


def missing_ranks_note(summaries: list[TraceSummary]) -> str | None:
    """A note where the traces are fewer than their world size says (ranks not traced are not
    compared: the slowest may be one of them); None when every rank is traced."""
    world = max((s.world_size or 0) for s in summaries)
    if world <= len(summaries):
        return None
    traced = sorted(s.rank for s in summaries)
    return (
        f"{len(summaries)} of the {world} ranks traced ({', '.join(map(str, traced[:8]))}"
        f"{', ...' if len(traced) > 8 else ''}): the others are not compared, and the "
        "slowest rank may be among them; trace every rank to name it"
    )


def cross_rank(summaries: list[TraceSummary]) -> dict:
    """Compare ranks step by step: who is slowest, how long the others wait for it.

    A rank's own time in a step is the step minus its exposed communication, the collectives
    set aside as no gradient traffic included (``StepBreakdown.set_aside_exposed_s``: what it
    spends computing, loading data or idle before it can sync). The slowest rank has the most;
    the wait of the others is their exposed communication beyond the slowest rank's (which is
    the communication itself: the exchange's ``intrinsic``, the set-aside collectives'
    ``set_aside_exposed_s``, a part of idle). ``intrinsic_comm_s``: the same rank-steps' whole
    communication (median over steps), of which ``intrinsic_exposed_comm_s`` is the exposed
    part: a step's exposed time is at most its communication, so the one median is at most the
    other (``comm_s``, the median rank's median, is another aggregate that may be less).
    ``waiting_compute_s`` / ``waiting_data_wait_s``: the compute and data wait of the ranks
    that wait (each step's ranks but its slowest, median over them, then over steps), the
    micro-step the remedies' model adds the wait to: the median over every rank includes the
    slowest's excess (of two ranks, half of it), which the wait then counts again.
    ``loader_wait_s``: the part of the others' wait that the slowest rank's own extra data wait
    covers (its data wait beyond the waiting ranks' median, at most the wait; median over
    steps): a loader too slow on the rank the others wait for (one worker, prefetching on the
    waiting ranks while they sit in the collective) keeps them waiting, the input pipeline's
    loss, not a straggler's; ``straggler_wait_s`` is the rest of the wait (its compute, idle;
    median over steps less that part, so the two add up to the wait). ``input_wait_s``: the data
    wait the step holds, what taking every rank's data wait off saves the step: each step's
    slowest rank's own time less the most any rank's own time but its data wait comes to (the
    waiting ranks' wait plus that part where the slowest rank waits as long as they do or
    longer; its own where it waits less, theirs then hidden in their wait for it), median over
    steps. ``idle_s``: the idle every rank has in the same step (each step's least, median over
    steps), the host overhead no rank escapes; the rest of a slow rank's idle keeps the others
    waiting, the stragglers'.
    """
    common = set.intersection(*(set(s.step for s in x.steps) for x in summaries))
    by_rank = [{s.step: s for s in x.steps} for x in summaries]
    med = {
        name: float(np.median([x.median(name) for x in summaries]))
        for name in ("step_s", "compute_s", "comm_s", "overlap_s", "data_wait_s", "idle_s")
    }
    total_comm = sum(s.comm_s for x in summaries for s in x.steps)
    total_overlap = sum(s.overlap_s for x in summaries for s in x.steps)
    own = np.array([[x.median("step_s") - x.median("exposed_comm_s")
                     - x.median("set_aside_exposed_s")] for x in summaries])[:, 0]
    result = dict(med)
    # Idle common to every rank (the slowest rank's own idle is the straggler, not overhead);
    # with steps to compare, each step's least idle rank's, below
    result["idle_s"] = float(np.min([x.median("idle_s") for x in summaries]))
    result["overlap_share"] = total_overlap / total_comm if total_comm > 0 else 0.0
    result["own_s"] = own.tolist()
    if len(summaries) < 2 or not common:
        result.update(
            waiting_compute_s=result["compute_s"],
            waiting_data_wait_s=result["data_wait_s"],
            input_wait_s=result["data_wait_s"],
            loader_wait_s=0.0,
            straggler_wait_s=0.0,
            slowest_rank=summaries[int(np.argmax(own))].rank,
            slowest_consistency=1.0,
            slowest_factor=1.0,
            slowest_counts={},
            steps_compared=0,
            intrinsic_exposed_comm_s=float(np.median([x.median("exposed_comm_s") for x in summaries])),
            intrinsic_comm_s=float(np.median([x.median("comm_s") for x in summaries])),
            set_aside_exposed_s=float(np.median([x.median("set_aside_exposed_s")
                                                 for x in summaries])),
        )
        return result
    slowest, waits, intrinsic, intrinsic_comm, aside, factors = [], [], [], [], [], []
    waiting_compute, waiting_data, loader_waits, path_waits, common_idle = [], [], [], [], []
    for n in sorted(common):
        st = [r[n] for r in by_rank]
        # waiting on peers: in the exchange's collectives or in those set aside (a loss
        # all-reduced before backward waits for the slowest rank's forward)
        exposed = np.array([s.exposed_comm_s + s.set_aside_exposed_s for s in st])
        own_n = np.array([s.step_s for s in st]) - exposed
        i = int(np.argmax(own_n))
        slowest.append(i)
        intrinsic.append(st[i].exposed_comm_s)
        intrinsic_comm.append(st[i].comm_s)
        aside.append(st[i].set_aside_exposed_s)
        others = np.delete(np.arange(len(st)), i)
        wait = float(np.median(exposed[others] - exposed[i]))
        factors.append(float(own_n[i] / max(np.median(own_n[others]), 1e-12)))
        waiting_compute.append(float(np.median([st[j].compute_s for j in others])))
        waiting_data.append(float(np.median([st[j].data_wait_s for j in others])))
        # the part of the wait the slowest rank spent waiting on its own loader beyond the others
        loader_waits.append(min(max(st[i].data_wait_s - waiting_data[-1], 0.0), max(wait, 0.0)))
        # what the step would lose with no rank waiting on data: the data wait on its path
        data = np.array([s.data_wait_s for s in st])
        path_waits.append(max(float(own_n[i] - np.max(own_n - data)), 0.0))
        waits.append(wait)
        common_idle.append(min(s.idle_s for s in st))
    mode, count = Counter(slowest).most_common(1)[0]
    loader_wait = float(np.median(loader_waits))
    result.update(
        straggler_wait_s=max(float(np.median(waits)) - loader_wait, 0.0),
        slowest_rank=summaries[mode].rank,
        slowest_consistency=count / len(slowest),
        slowest_counts={summaries[i].rank: slowest.count(i) for i in range(len(summaries))},
        steps_compared=len(slowest),
        slowest_factor=float(np.median(factors)),
        intrinsic_exposed_comm_s=float(np.median(intrinsic)),
        intrinsic_comm_s=float(np.median(intrinsic_comm)),
        set_aside_exposed_s=float(np.median(aside)),
        waiting_compute_s=float(np.median(waiting_compute)),
        waiting_data_wait_s=float(np.median(waiting_data)),
        loader_wait_s=loader_wait,
        input_wait_s=float(np.median(path_waits)),
        # idle every rank has in the same step, median over steps: a step's slowest rank's own
        # idle is the straggler's (a rank slowed in turn has it in half the steps, so its own
        # median would count it), and a step where a waiting rank's wait reads as idle rather
        # than in the collective moves only that step's minimum
        idle_s=float(np.median(common_idle)),
    )
    return result


def traced_micro_steps(summaries: list[TraceSummary]) -> tuple[int | None, str]:
    """(micro-steps a step, the words of how it was read) of a job's traces: the count most
    ranks show (``TraceSummary.micro_steps``; of two equally common, the larger), None where no
    rank's can be read (the words then say so: callers take the step as one micro-step)."""
    known = [s for s in summaries if s.micro_steps is not None]
    count = most_steps_count([s.micro_steps for s in known])
    if count is None:
        return None, ("the traces show no forward of a DDP or FSDP module nor any DataLoader "
                      "fetch in their steps, so how many micro-steps a step runs (gradient "
                      "accumulation) is not read: a step is taken as one micro-step")
    names = sorted({s.micro_steps_from for s in known if s.micro_steps == count})
    what = ("DataLoader fetches" if names == [DATA_FETCHES] else
            " / ".join(n for n in names if n != DATA_FETCHES) + " calls")
    words = (f"the traces show {count} micro-step{'s' if count != 1 else ''} a step ({what} in "
             "each profiler step)")
    others = sorted({s.rank for s in summaries if s.micro_steps != count})
    if others:
        words += (f"; rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others[:8]))} "
                  "show another count or none")
    return count, words


def traced_micro_batch(summaries: list[TraceSummary]) -> tuple[int | None, str]:
    """(samples a micro-step, the note that says where they were read) of a job's traces: the
    micro-batch every rank that reads one reads (``TraceSummary.micro_batch``, from the input
    shapes of record_shapes=True); None where none reads one or two ranks read two, the note
    then why ('' where no rank records shapes at all: the remedies' words say the size is not
    recorded)."""
    read = {s.rank: s.micro_batch for s in summaries if s.micro_batch is not None}
    if len(set(read.values())) == 1:
        (batch,) = set(read.values())
        where = sorted(s.micro_batch_from for s in summaries if s.micro_batch == batch)[0]
        ranks = "every rank" if len(read) == len(summaries) else (
            f"rank{'s' if len(read) > 1 else ''} {', '.join(map(str, sorted(read)))}")
        return batch, (f"the traces' input shapes (record_shapes) give a micro-batch of "
                       f"{batch} samples: {where}, on {ranks}")
    if read:
        return None, ("the traces' input shapes give the ranks other micro-batches ("
                      + ", ".join(f"rank {r}: {b}" for r, b in sorted(read.items()))
                      + "): the batch remedy names no size")
    why = sorted({s.micro_batch_from for s in summaries if s.micro_batch_from})
    if not why or why == [NO_SHAPES]:
        return None, ""
    return None, (f"the traces record input shapes, but the micro-batch is not read from them: "
                  f"{'; '.join(w for w in why if w != NO_SHAPES)} (docs/diagnose.md)")


def traced_micro_steps_with(summaries: list[TraceSummary], kind: str) -> int | None:
    """How many micro-steps of a step post a collective of ``kind`` (``StepBreakdown.
    micro_steps_with``): the count most of the steps that post one show, every rank (of two
    equally common, the larger); None where no step says."""
    return most_steps_count([st.micro_steps_with[kind] for s in summaries for st in s.steps
                             if st.micro_steps_with.get(kind)])
