"""A traced pipeline's bubble and uneven stages, and what evening the stages or halving the
bubble would save (docs/model.md §15, "A traced pipeline"; docs/diagnose.md).

Reading (``trace_diagnosis.traced_pipeline``). Each traced rank's stage is its place in its
pipeline group (the traces' pg_config), else the first stage its schedule's annotations name.
Per stage s, ``C_s`` is the median over its traced ranks of their median step's compute and
``W_s`` of their exposed point-to-point time (the pipeline group's exposed kernels where
kernels name their groups, else ``traces.StepBreakdown.p2p_exposed_s``: sends and receives
under no compute, data wait or other communication; a receive spans the wait for the stage
before it). The pacing stage k has the most compute, and the pipeline's span is
``T = C_k + W_k``: what that stage's step would take with nothing else exposed; where another
stage computes and waits longer, ``T = max_s (C_s + W_s)``: it waits on time the others spend
outside their ops (idle: host work, a sleep, a synchronisation), which the replay leaves.

Replay. A 1F1B schedule (Narayanan et al. 2021, §2.2.1; Megatron-LM's and torch.distributed.
pipelining's Schedule1F1B: stage s runs min(p - 1 - s, m) forwards, then one forward and one
backward in turn, then the remaining backwards) of p stages and m micro-batches, stage s taking
``t_s = C_s / m`` per micro-batch, a third of it forward and two thirds backward (a backward
computes two matmuls per forward one: Narayanan 2021 §3.5), sends taking no time. Its span is
the finish of the last backward (``replay_1f1b_s``). With equal stages it is ``(m + p - 1) t``,
the textbook bubble ``(p - 1)/m``; with uneven stages the pacing stage sets the steady state.
The micro-batches m and the virtual stages v per rank are read from the schedule's own
annotations where torch.distributed.pipelining wrote them (``PP:<stage>F<micro-batch>``: the
stages a rank runs and the micro-batches; GPipe's ``Forward <i>``); else m is counted from the
receives where the traces name each (gloo:recv, nccl:recv: the first stage receives one
gradient and the last one activation per micro-batch; v is then taken as 1, since an
interleaved rank receives ``(2v - 1) m``). An interleaved schedule is replayed as 1F1B of v m
chunks, each a chunk's time ``C_s / (v m)``: the same bubble ``(p - 1)/(v m)`` (§2.2.2). The span
the replay leaves, ``T`` minus the replayed span, is the sends' own time and waits outside the
schedule. Where the traces say neither (a GPU trace's SendRecv kernels fuse a send and a
receive), m is fitted: the m whose replayed span is nearest the measured T
(``fit_micro_batches``; the span falls from ``sum C_s`` at m = 1 towards ``C_k``), the sends'
time then read as bubble.

Remedies, each a replay difference taken off the measured step (so the replay's own error on the
traced schedule cancels):

- even stages: every stage ``mean C`` at the same m, span ``(m + p - 1) mean C / m``;
- half the bubble: 2m micro-batches of half the size (stage times ``C_s / 2m``), the bubble an
  interleaved schedule of 2 virtual stages per rank also halves (§2.2.2); with m counted, the
  time the replay leaves is taken to double with the messages (each send's latency stays).

In a data-parallel x pipeline job the exchange's model prices its batch remedies with the
pipeline's loss split as each meets it (``trace_diagnosis.pipeline_batch_remedies``): twice the
per-device batch doubles every stage's micro-batch, so the whole span T (compute, bubble and
sends) grows with the batch; 4x the micro-batches of today's size (more accumulation) adds
passes of the replay's steady state and the sends, the fill and drain paid once a step
(``accumulation_split_s``); the data wait, the exchange and the straggler wait stay the model's.

What the replay leaves out, said where it is used: with m fitted, the sends' own time (a wait
that is transfer counts as bubble, so the fitted m is a floor of the job's); zero-bubble
schedules (read as the 1F1B of the same span); the optimizer step inside ``C_s``; and a
micro-batch's fixed costs (launches, the framework's per-micro-batch work) and the lower matmul
efficiency of smaller micro-batches, so the halved bubble's gain is a ceiling.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

BACKWARD_SHARE = 2.0 / 3.0  # of a micro-batch's compute: backward ~ 2x forward (Narayanan 2021)
MOST_MICRO_BATCHES = 512  # the fit's ceiling: beyond it the bubble is under 0.2 % of p = 2's span


def replay_1f1b_s(stage_micro_s, micro_batches: int) -> float:
    """Span (s) of one 1F1B step of ``micro_batches`` micro-batches over the stages, stage s
    taking ``stage_micro_s[s]`` (s) per micro-batch (``BACKWARD_SHARE`` of it backward), sends
    taking no time: the finish of the last backward. Event-driven, O(stages x micro_batches)."""
    t = np.asarray(stage_micro_s, dtype=float)
    p, m = len(t), int(micro_batches)
    order = []
    for s in range(p):
        warm = min(p - 1 - s, m)
        ops = [(0, i) for i in range(warm)]  # 0: forward, 1: backward
        for i in range(m - warm):
            ops += [(0, warm + i), (1, i)]
        ops += [(1, i) for i in range(m - warm, m)]
        order.append(ops)
    forward_s, backward_s = t * (1.0 - BACKWARD_SHARE), t * BACKWARD_SHARE
    f_end = np.full((p, m), np.nan)
    b_end = np.full((p, m), np.nan)
    pos, free = [0] * p, [0.0] * p
    todo = deque(range(p))
    while todo:
        s = todo.popleft()
        while pos[s] < len(order[s]):
            kind, i = order[s][pos[s]]
            if kind == 0:
                ready = 0.0 if s == 0 else f_end[s - 1, i]
            else:
                ready = f_end[s, i] if s == p - 1 else b_end[s + 1, i]
            if np.isnan(ready):
                break
            start = max(free[s], ready)
            free[s] = start + (forward_s[s] if kind == 0 else backward_s[s])
            (f_end if kind == 0 else b_end)[s, i] = free[s]
            pos[s] += 1
            todo.append(s + 1 if kind == 0 and s < p - 1 else max(s - 1, 0))
    return float(np.max(free))


def fit_micro_batches(stage_compute_s, span_s: float, most: int = MOST_MICRO_BATCHES) -> int:
    """The micro-batches m (1 to ``most``) whose replayed 1F1B span, stage s taking
    ``stage_compute_s[s] / m`` per micro-batch, is nearest ``span_s`` (s). The span falls as m
    grows, so a bisection finds the crossing; the nearer of its two sides is taken."""
    c = np.asarray(stage_compute_s, dtype=float)

    def span(m: int) -> float:
        return replay_1f1b_s(c / m, m)

    if span_s >= span(1):
        return 1
    if span_s <= span(most):
        return most
    lo, hi = 1, most  # span(lo) > span_s >= span(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if span(mid) > span_s:
            lo = mid
        else:
            hi = mid
    return lo if abs(span(lo) - span_s) < abs(span(hi) - span_s) else hi


def unreplayed_s(span_s: float, replay_s: float, counted: bool) -> float:
    """What a measured span (s) exceeds its replay by (s): the sends' own time and waits
    outside the schedule; 0 where the micro-batches were fitted to the span (not counted)."""
    return max(span_s - replay_s, 0.0) if counted else 0.0


def accumulation_split_s(reading: PipelineReading, factor: int) -> tuple[float, float]:
    """(s per pass of the step's m micro-batches, s once a step) of the traced span T, as
    ``factor`` x the micro-batches meet it: one more pass adds the replay's steady state,
    ``(replay(factor n) - replay(n)) / (factor - 1)`` over n = v m chunks, and the time the
    replay leaves (``T - replay(n)``: the sends' own time and waits outside the schedule, or,
    with m fitted at its floor, what one micro-batch's schedule cannot explain), which grows
    with the messages; the rest of T, the fill and drain, is paid once a step."""
    c = np.array([st["compute_s"] for st in reading.stages])
    n = reading.chunks
    steady = (replay_1f1b_s(c / n, factor * n) - reading.replay_s) / (factor - 1)
    per_pass = steady + max(reading.span_s - reading.replay_s, 0.0)
    return per_pass, max(reading.span_s - per_pass, 0.0)


@dataclass
class PipelineReading:
    """A traced pipeline (seconds per step; ``module docstring``)."""

    stages: list[dict]  # per stage: {"stage", "ranks", "compute_s", "wait_s"}
    pacing_stage: int  # the stage with the most compute
    # T = C_k + W_k, or where a stage computes and waits longer, max_s (C_s + W_s): its waits
    # are on time the others spend outside their ops (idle: host work, a sleep, a sync)
    span_s: float
    mean_compute_s: float  # mean C over the stages
    micro_batches: int  # from the schedule's annotations or the receives, else fitted
    counted: bool  # micro_batches read off the traces (else fitted to the span)
    replay_s: float  # the replayed span at m
    even_s: float  # replayed span with even stages
    halved_s: float  # replayed span at 2m micro-batches of half the size (plus, counted, the
    # time the replay leaves once more: twice the messages)
    notes: list[str] = field(default_factory=list)
    virtual_stages: int = 1  # per rank (the schedule's annotations)
    counted_from: str = ""  # "annotations" or "receives" where counted
    count_note: str = ""  # why receives that were counted were not used ('' none)

    @property
    def chunks(self) -> int:
        """Micro-batch chunks each rank runs per step, v m: what the replay runs."""
        return self.micro_batches * self.virtual_stages

    @property
    def unreplayed_s(self) -> float:
        """What the measured span exceeds the replay by: the sends' own time and waits outside
        the schedule (0 where m is fitted to the span)."""
        return unreplayed_s(self.span_s, self.replay_s, self.counted)

    @property
    def spanning_stage(self) -> int:
        """The stage whose compute and waits make the span: the pacing stage, or one that waits
        on the others' time outside their ops."""
        spans = [st["compute_s"] + st["wait_s"] for st in self.stages]
        k = self.pacing_stage
        return k if spans[k] >= max(spans) else int(np.argmax(spans))

    @property
    def bubble_s(self) -> float:
        """The pacing stage's wait: the bubble (fill and drain) and any transfer it waited on."""
        return self.stages[self.pacing_stage]["wait_s"]

    @property
    def uneven_s(self) -> float:
        """The pacing stage's compute beyond the stages' mean: what the others wait for it."""
        return self.stages[self.pacing_stage]["compute_s"] - self.mean_compute_s

    @property
    def lost_s(self) -> float:
        """The pipeline's loss against even stages without a bubble: ``T - mean C``."""
        return self.span_s - self.mean_compute_s


def counted_micro_batches(first_stage: list[int | None], last_stage: list[int | None]) -> int | None:
    """Micro-batches per step from the receives the first stage's ranks (one gradient each) and
    the last stage's (one activation each) posted per step; None where a count is missing,
    zero, or the two stages disagree."""
    counts = [*first_stage, *last_stage]
    if not counts or any(c is None or c < 1 for c in counts) or len(set(counts)) > 1:
        return None
    return int(counts[0])


def annotated_schedule(stages_per_rank: list[list[int]],
                       micro_batches_per_rank: list[int]) -> tuple[int, int] | None:
    """(micro-batches m, virtual stages v per rank) from each traced rank's schedule
    annotations (the stages it ran forwards of, and how many micro-batches); None where a
    rank has none or the ranks disagree. GPipe's annotations name no stage: v = 1."""
    if not micro_batches_per_rank or min(micro_batches_per_rank) < 1:
        return None
    vs = {max(len(stages), 1) for stages in stages_per_rank}
    if len(vs) > 1 or len(set(micro_batches_per_rank)) > 1:
        return None
    return int(micro_batches_per_rank[0]), vs.pop()


def read_pipeline(stage_compute_s: dict[int, list[float]], stage_wait_s: dict[int, list[float]],
                  stage_ranks: dict[int, list[int]], micro_batches: int | None = None,
                  virtual_stages: int = 1, counted_from: str = "") -> PipelineReading:
    """The reading of a pipeline from each stage's traced ranks: their compute and exposed
    point-to-point times per step (medians over steps; s) and rank numbers, every stage 0 to
    p - 1 present; ``micro_batches`` and ``virtual_stages`` read off the traces
    (``annotated_schedule``, ``counted_micro_batches``; ``counted_from`` says which), None:
    m fitted, v 1."""
    stages = [{"stage": s, "ranks": sorted(stage_ranks[s]),
               "compute_s": float(np.median(stage_compute_s[s])),
               "wait_s": float(np.median(stage_wait_s[s]))} for s in sorted(stage_compute_s)]
    c = np.array([st["compute_s"] for st in stages])
    k = int(np.argmax(c))
    spans = c + np.array([st["wait_s"] for st in stages])
    span = float(np.max(spans))  # ``PipelineReading.span_s``: at least the pacing stage's
    counted = micro_batches is not None
    v = int(virtual_stages) if counted else 1
    m = int(micro_batches) if counted else fit_micro_batches(c, span)
    n = m * v  # chunks the replay runs
    mean = float(np.mean(c))
    replay = replay_1f1b_s(c / n, n)
    unreplayed = unreplayed_s(span, replay, counted)
    notes = []
    if counted and replay > span * 1.05:
        notes.append(f"the traced pipeline's span ({span * 1e3:.3g} ms) is shorter than its "
                     f"replayed 1F1B ({replay * 1e3:.3g} ms): the schedule overlaps more than "
                     "1F1B (zero bubble?) or part of a stage's compute is outside it; each "
                     "pipeline remedy's saving is capped at what the traces lost to it")
    return PipelineReading(stages, k, span, mean, m, counted, replay,
                           replay_1f1b_s(np.full(len(c), mean / n), n),
                           replay_1f1b_s(c / (2 * n), 2 * n) + unreplayed, notes, v,
                           counted_from if counted else "")
