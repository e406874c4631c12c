"""Pipeline-parallel schedules: bubble, micro-batches in flight, point-to-point sends.

(Not the input pipeline: that is ``model/pipeline.py``.) With p stages, m micro-batches per step
and one micro-batch taking t_f + t_b on a stage:

- GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2.1): the
  pipeline fills and drains once per step, (p - 1) micro-batch times of idle per stage; bubble
  fraction (p - 1)/m of the ideal time.
- Interleaved 1F1B with v model chunks per rank (Narayanan et al. 2021 §2.2.2): each fill step
  is a chunk of 1/v of the stage, bubble (p - 1)/v micro-batch times, fraction (p - 1)/(v m).
- Zero bubble ZB-H1 (Qi et al. 2023, arXiv 2401.10241, §2.1 and Table 2): backward split into
  input-gradient B and weight-gradient W, which fills the bubble: (p - 1)(t_F + t_B - t_W),
  a third of 1F1B's (p - 1)(t_F + t_B + t_W) only when t_F = t_B = t_W.

A micro-batch time of the bubble is one of the stages but the slowest (``fill_stage_s``): with
uneven stages 1F1B spans m t_max + sum_i t_i - t_max.

Activations held at once, in micro-batches of one stage's layers, on the first stage: GPipe m;
1F1B and ZB-H1 min(p, m); interleaved p (1 + (p - 1)/(p v)) (Korthikanti et al. 2022 §4.2.3);
no pipeline 1; on the last stage 1, GPipe's m, interleaved ((v - 1) p + 1) / v
(``microbatches_in_flight``). Point-to-point sends: ``p2p_s``. docs/model.md §15.
"""

from __future__ import annotations

import numpy as np

from scalesim.layout import GPIPE, INTERLEAVED, NO_PIPELINE, ONE_F_ONE_B, ZERO_BUBBLE
from scalesim.model.select import select_first

ZB_WEIGHT_GRAD_SHARE = 1.0 / 3.0  # T_W / (T_F + T_B + T_W) with equal F, B, W (Qi et al. 2023)


def bubble_microbatches(schedule, pp, virtual_stages, weight_grad_share=ZB_WEIGHT_GRAD_SHARE):
    """Idle time per step per stage, in micro-batch times (t_f + t_b of one stage).

    ZB-H1 (Qi et al. 2023, Table 2) idles (p - 1)(T_F + T_B - T_W) against 1F1B's
    (p - 1)(T_F + T_B + T_W), T_B the input-gradient and T_W the weight-gradient pass: with
    ``weight_grad_share`` w = T_W / (T_F + T_B + T_W), (1 - 2w)(p - 1); a third at w = 1/3."""
    sch = np.asarray(schedule)
    fill = np.asarray(pp, dtype=float) - 1.0
    v = np.asarray(virtual_stages, dtype=float)
    zb = (1.0 - 2.0 * np.asarray(weight_grad_share, dtype=float)) * fill
    return select_first([sch == NO_PIPELINE, sch == INTERLEAVED, sch == ZERO_BUBBLE],
                     [0.0, fill / v, zb], fill)


def fill_stage_s(pp, average_stage_s, slowest_stage_s):
    """Seconds of the micro-batch time that one bubble micro-batch (``bubble_microbatches``)
    is charged: the average of the p - 1 stages other than the slowest, ``(p t_avg - t_max) /
    (p - 1)`` (``average_stage_s`` t_avg and ``slowest_stage_s`` t_max per micro-batch), so
    1F1B and GPipe idle ``sum_i t_i - t_max``: their span is ``m t_max + sum_i t_i - t_max``,
    the first micro-batch's way through the stages before the slowest, the m micro-batches on
    it, the last one's way back (a flow shop paced by its slowest stage; exact where the last
    stage is the slowest, ``pipeline_trace.replay_1f1b_s``). Equal stages: t_avg; no pipeline:
    0."""
    p = np.asarray(pp, dtype=float)
    rest = p * np.asarray(average_stage_s, dtype=float) - np.asarray(slowest_stage_s, dtype=float)
    return np.where(p > 1, np.maximum(rest, 0.0) / np.maximum(p - 1.0, 1.0), 0.0)


def microbatches_in_flight(schedule, pp, microbatches, virtual_stages=1, stage=0):
    """Micro-batches of activations (of one stage's layers) pipeline rank ``stage`` holds at
    once (0: the first stage, the fullest). Megatron's schedules (``get_pp_rank_microbatches``):
    1F1B (and ZB-H1, whose peak is 1F1B's, Qi et al. 2023 §2.1) rank r runs p - r - 1 warm-up
    forwards and one more before its first backward, min(p - r, m); interleaved rank r runs
    2 (p - r - 1) + (v - 1) p warm-up chunk forwards and one more, in stages of v chunks
    ``(2 (p - r - 1) + (v - 1) p + 1) / v`` (rank 0: p (1 + (p - 1)/(p v)), Korthikanti et al.
    2022 §4.2.3); GPipe m; no pipeline 1."""
    sch = np.asarray(schedule)
    p = np.asarray(pp, dtype=float)
    m = np.asarray(microbatches, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    r = np.asarray(stage, dtype=float)
    warm = np.minimum(p - r, m)
    chunks = np.minimum(2.0 * (p - r - 1.0) + (v - 1.0) * p + 1.0, m * v)
    return select_first(
        [sch == NO_PIPELINE, sch == GPIPE, sch == INTERLEAVED, (sch == ONE_F_ONE_B)
         | (sch == ZERO_BUBBLE)],
        [1.0, m, chunks / v, warm], warm)


def send_s(size_bytes, latency_s, bandwidth_GBps):
    """Seconds of one point-to-point transfer: ``latency + S / bandwidth`` (nccl-tests
    ``sendrecv_perf`` reports ``algbw = busbw = S/t`` for it). Full duplex: a pair that sends
    both ways at once (1F1B's activation out, gradient in) takes the same time."""
    return (np.asarray(latency_s, dtype=float)
            + np.asarray(size_bytes, dtype=float) / (np.asarray(bandwidth_GBps, dtype=float) * 1e9))


def boundaries_per_microbatch(schedule, pp, virtual_stages):
    """Stage boundaries the busiest pipeline rank transfers over per micro-batch and chunk, each
    once: 1F1B and ZB-H1 pair the activation sent to the next stage with the gradient received
    from it (Megatron's ``send_forward_recv_backward``, full duplex), so a middle stage pays its
    two boundaries and, with two stages, each stage its one; interleaved ranks always have two
    neighbours (the chunk ring wraps around); GPipe sends the activations and the gradients in
    separate phases: two."""
    sch = np.asarray(schedule)
    p = np.asarray(pp, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    paired = (sch == ONE_F_ONE_B) | (sch == ZERO_BUBBLE)
    return np.where(paired & (p == 2) & (v == 1), 1.0, 2.0)


def p2p_s(schedule, pp, microbatches, virtual_stages, size_bytes, stages_per_node,
          intra_latency_s, intra_bandwidth_GBps, inter_latency_s, inter_bandwidth_GBps,
          hide_s=0.0, contention=0.0):
    """Point-to-point sends on the critical path per step (0 without a pipeline), seconds.

    ``stages_per_node`` consecutive stages share a server (``layout.group_span`` of the pipeline
    group), so the chain of p stages spans ``N = ceil(p / stages_per_node)`` servers and N - 1 of
    its p - 1 boundaries cross the inter-server link (``t_inter``), the rest NVLink
    (``t_intra``), each transfer ``send_s``. Fill and drain: the first micro-batch's
    activations pass every boundary forward, the last one's gradients every boundary back,
    ``2 ((p - N) t_intra + (N - 1) t_inter)``. Steady state: per micro-batch and chunk the
    busiest rank pays each of its boundaries once (``boundaries_per_microbatch``): one crossing
    servers where any does, the other crossing too when every stage has a server of its own.

    ``hide_s``: compute each steady-state send runs beside (Megatron's ``overlap_p2p_comm`` for
    the interleaved schedule: the send is posted, the next chunk computes, the wait comes after),
    so a send of ``t`` seconds costs ``max(t - hide_s, 0) + contention * min(t, hide_s)``, the
    hidden part at the ``contention`` share that hidden collectives keep (docs/model.md §3); the
    fill and drain stay exposed (each waits on the previous stage). 0: blocking sends."""
    p = np.asarray(pp, dtype=float)
    k = np.asarray(stages_per_node, dtype=float)
    nodes = np.ceil(p / k)
    t_intra = send_s(size_bytes, intra_latency_s, intra_bandwidth_GBps)
    t_inter = send_s(size_bytes, inter_latency_s, inter_bandwidth_GBps)
    fill = 2.0 * ((p - nodes) * t_intra + (nodes - 1.0) * t_inter)
    first = np.where(nodes > 1, t_inter, t_intra)
    second = np.where((nodes > 1) & (k == 1), t_inter, t_intra)
    boundaries = boundaries_per_microbatch(schedule, pp, virtual_stages)
    hide = np.asarray(hide_s, dtype=float)
    c = np.asarray(contention, dtype=float)

    def exposed(t):
        return np.maximum(t - hide, 0.0) + c * np.minimum(t, hide)

    steady = (np.asarray(microbatches, dtype=float) * np.asarray(virtual_stages, dtype=float)
              * (exposed(first) + np.where(boundaries >= 2, exposed(second), 0.0)))
    return np.where(p > 1, fill + steady, 0.0)


def slow_stage_delay_s(schedule, pp, virtual_stages, microbatches, stage_s, slowest_stage_s,
                       slow_factor, weight_grad_share=ZB_WEIGHT_GRAD_SHARE, stage_comm_s=0.0):
    """Seconds one model replica's step runs late when one of its stages computes
    ``slow_factor`` times slower (a slow device: its tensor group waits for it at every
    collective, so the whole stage runs at its pace).

    ``stage_s``: that stage's compute per micro-batch at normal speed; ``stage_comm_s``: its
    exposed communication per micro-batch (tensor-parallel, ring attention: not slowed);
    ``slowest_stage_s``: the pipeline's slowest stage per micro-batch, compute and exposed
    communication (which sets the steady state). The step's two pipeline terms change: the m
    micro-batches at the slowest stage's pace grow by ``steady = max(f t_s + c_s - t_max, 0)``
    each, and the bubble's stage (``fill_stage_s``, the average of the stages but the slowest,
    ``(sum_i t_i - t_max) / (p - 1)``) by ``((f - 1) t_s - steady) / (p - 1)``:

        delay = m * steady + idle * ((f - 1) * t_s - steady) / (p - 1)

    (none at f = 1: no slow device). 1F1B and GPipe (idle p - 1): ``(m - 1) steady + (f - 1)
    t_s``, the change of the span ``m t_max + sum_i t_i - t_max``
    (``pipeline_trace.replay_1f1b_s``'s, exact where the last stage is the slowest, slowed or
    not). Without a pipeline (p = 1, no idle) that is ``m * (f - 1) * t_s``, docs/model.md
    §6's ``(slow_factor - 1) * k * t_micro``. docs/model.md §16."""
    f = np.maximum(np.asarray(slow_factor, dtype=float), 1.0)
    t_s = np.asarray(stage_s, dtype=float)
    steady = np.where(f > 1.0, np.maximum(f * t_s + np.asarray(stage_comm_s, dtype=float)
                                          - np.asarray(slowest_stage_s, dtype=float), 0.0), 0.0)
    fill_excess = np.maximum((f - 1.0) * t_s - steady, 0.0)  # the bubble's stages' growth
    fill = (bubble_microbatches(schedule, pp, virtual_stages, weight_grad_share) * fill_excess
            / np.maximum(np.asarray(pp, dtype=float) - 1.0, 1.0))
    return np.asarray(microbatches, dtype=float) * steady + fill
