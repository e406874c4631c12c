"""Session 43: how often the collectives set aside as no gradient traffic run (a metric's
all-reduce, ``trace_collectives.set_aside_cadence``). A 2-rank DDP job of 4 micro-steps a step
(each a 200 us forward and a 100 us backward; the gradients' 100 us all-reduce of 1,000 elements
in the last, under no_sync) that all-reduces a 1-element metric for 400 us a step: once, after
the gradients ('step'), or 100 us in each micro-step ('micro'). The two traces' steps are
alike (1.7 ms: 1.2 ms compute, 0.1 ms exchange, 0.4 ms set aside and idle); only how often the
metric runs differs. Before, both were charged as overhead of each micro-step, so accumulating
over 16 micro-steps paid the metric 4x as often and read +4.6 % for both; the once-a-step metric
is now paid once a step (``ComputeCurve.per_step_s``)."""

from __future__ import annotations

import numpy as np
import pytest
from trace_events import BACKWARD, comm, op, summaries

from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.memory import DDP, ZERO1, ZERO3
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.stragglers import expected_max_normal
from scalesim.schemas import Hardware
from scalesim.trace_collectives import set_aside_cadence

K, WORLD, STEPS = 4, 2, 3
FORWARD_US, BACKWARD_US, GRADIENTS_US, METRIC_US = 200.0, 100.0, 100.0, 400.0
US = 1e-6


def job(cadence: str) -> list[dict]:
    """``STEPS`` profiler steps of ``K`` micro-steps back to back; the metric's 1-element
    all-reduce once a step after the gradients' ('step', ``METRIC_US``) or in each micro-step
    ('micro', a ``K``-th of it each, so the step is the same)."""
    events, t = [], 0.0
    for n in range(STEPS):
        start, body = t, []
        for m in range(K):
            body += [op("DistributedDataParallel.forward", t, FORWARD_US, cat="user_annotation"),
                     op("aten::mm", t, FORWARD_US), op(BACKWARD, t + FORWARD_US, BACKWARD_US)]
            t += FORWARD_US + BACKWARD_US
            if m == K - 1:
                body.append(comm("allreduce", t, 1000, dur_us=GRADIENTS_US))
                t += GRADIENTS_US
            if cadence == "micro" or m == K - 1:
                metric = METRIC_US / K if cadence == "micro" else METRIC_US
                body.append(comm("allreduce", t, 1, dur_us=metric))
                t += metric
        events += [op(f"ProfilerStep#{n + 1}", start, t - start, cat="user_annotation"), *body]
    return events


def diagnosed(tmp_path, cadence: str):
    (tmp_path / cadence).mkdir()
    read = summaries(tmp_path / cadence, job(cadence), world=WORLD)
    return read, diagnose_request(DiagnoseOptions(), traces=read, trace_source="r*.json")


def accumulation_gain(micro_us: float, once_us: float) -> float:
    """The accumulation remedy by hand: k = 4 -> 16 micro-steps of one nominal sample, the
    step ``k t (1 + e_2 cv) + once + exchange`` (docs/model.md §1; the slowest of 2 devices of the
    default speed spread ``cv`` waits ``e_2 cv k t``, §6; no overlap, the exchange 0.1 ms);
    gain ``16 / step(16) / (4 / step(4)) - 1``."""
    spread = float(expected_max_normal(WORLD)) * Hardware.model_fields["device_speed_cv"].default

    def step(k):
        return k * micro_us * (1.0 + spread) + once_us + GRADIENTS_US

    return 4 * K * step(K) / (K * step(4 * K)) - 1.0


def test_the_traces_say_how_often_the_metric_ran(tmp_path):
    """Per step: the host posts 1 set-aside all-reduce (none in 3 of the 4 micro-steps) or 4
    (1 in each); read as once a step (share 1) or in each micro-step (share 0)."""
    once, _ = diagnosed(tmp_path, "step")
    each, _ = diagnosed(tmp_path, "micro")
    for st in (st for s in once for st in s.steps):
        assert (st.micro_steps, st.set_aside_posts, st.set_aside_each_micro_step) == (K, 1, 0)
        assert st.set_aside_exposed_s == pytest.approx(METRIC_US * US)
    for st in (st for s in each for st in s.steps):
        assert (st.micro_steps, st.set_aside_posts, st.set_aside_each_micro_step) == (K, K, 1)
        assert st.set_aside_exposed_s == pytest.approx(METRIC_US * US)
    assert set_aside_cadence(once)[0] == 1.0
    assert set_aside_cadence(each)[0] == 0.0


def test_a_metric_reduced_once_a_step_is_paid_once_a_step(tmp_path):
    """Once a step: a 0.3 ms micro-step and 0.4 ms once a step, accumulation +28.1 % by hand
    (before: +4.58 %, the 0.4 ms paid in each of 16 micro-steps) and now the first remedy; in
    each micro-step: a 0.4 ms micro-step, +4.58 % as before. The note says which was read."""
    _, once = diagnosed(tmp_path, "step")
    _, each = diagnosed(tmp_path, "micro")
    gain_once = {r.key: r.gain for r in once.remedies}["accumulation"]
    gain_each = {r.key: r.gain for r in each.remedies}["accumulation"]
    assert gain_once == pytest.approx(accumulation_gain(300.0, METRIC_US), rel=1e-6)
    assert gain_each == pytest.approx(accumulation_gain(400.0, 0.0), rel=1e-6)
    assert gain_once == pytest.approx(0.2811, abs=1e-4)
    assert gain_each == pytest.approx(0.0458, abs=1e-4)
    assert once.first_remedy.key == "accumulation"
    said_once, said_each = " ".join(once.notes), " ".join(each.notes)
    assert ("counted as idle time of the step (1 of them a step, none in some of its 4 "
            "micro-steps: read as run once a step, as the remedies' model pays them, however "
            "many micro-steps a step runs)") in said_once
    assert ("counted as idle time of the step (4 of them a step, 1 or more in each of its 4 "
            "micro-steps: read as run in each micro-step, as the remedies' model pays them)"
            ) in said_each


def test_the_once_a_step_time_is_not_sharded(tmp_path):
    """ZeRO-1 (the sharding remedy from DDP) divides the optimizer step over the ranks, never
    the metric's once-a-step time: sharding gains nothing on either trace (no optimizer traced),
    as before."""
    _, once = diagnosed(tmp_path, "step")
    _, each = diagnosed(tmp_path, "micro")
    for report in (once, each):
        assert {r.key: r.gain for r in report.remedies}["sharding"] == pytest.approx(0.0,
                                                                                   abs=1e-12)


def test_mixed_calls_split_their_time_by_count(tmp_path):
    """A loss all-reduced in each micro-step and a metric once a step: 5 a step, 1 in each of
    the 4 micro-steps, so a fifth of the set-aside time is read as once a step."""
    events, t = [], 0.0
    for n in range(STEPS):
        start, body = t, []
        for m in range(K):
            body += [op("DistributedDataParallel.forward", t, FORWARD_US, cat="user_annotation"),
                     op("aten::mm", t, FORWARD_US), op(BACKWARD, t + FORWARD_US, BACKWARD_US),
                     comm("allreduce", t + FORWARD_US + BACKWARD_US, 1, dur_us=10.0)]
            t += FORWARD_US + BACKWARD_US + 10.0
            if m == K - 1:
                body += [comm("allreduce", t, 1000, dur_us=GRADIENTS_US),
                         comm("allreduce", t + GRADIENTS_US, 1, dur_us=10.0)]
                t += GRADIENTS_US + 10.0
        events += [op(f"ProfilerStep#{n + 1}", start, t - start, cat="user_annotation"), *body]
    share, words = set_aside_cadence(summaries(tmp_path, events, world=WORLD))
    assert share == pytest.approx(1.0 / 5.0)
    assert words == ("5 of them a step, 1 in each of its 4 micro-steps: 80% of their time read as "
                     "run in each micro-step, the other 20% once a step, as the remedies' model "
                     "pays them")


ONCE_S = 0.0123  # a per-step time for the model tests, s


@pytest.mark.parametrize("strategy", [DDP, ZERO1, ZERO3])
def test_the_step_model_pays_per_step_s_once_and_whole(strategy):
    """``StepInputs.per_step_s`` adds to the step's compute once, whatever the micro-steps,
    the colocation slowdown or the sharding (the optimizer step beside it is divided by 8)."""
    inp = StepInputs(
        devices=8, devices_per_node=8, micro_batch=32, accumulation=np.array([1, 4, 16]),
        overhead_s=0.001, per_sample_s=0.002, optimizer_step_s=0.08, backward_fraction=2 / 3,
        params=1e9, wire_bytes_per_param=2, intra_latency_s=2e-6, intra_busbw_GBps=230,
        inter_latency_s=6e-6, inter_busbw_GBps=24, colocation_slope=0.05, strategy=strategy)
    paid = evaluate(inp.replace(per_step_s=ONCE_S))
    free = evaluate(inp)
    np.testing.assert_allclose(paid.compute_s - free.compute_s, ONCE_S, rtol=1e-12)
    np.testing.assert_allclose(paid.step_time_s - free.step_time_s, ONCE_S, rtol=1e-9)


def test_the_layout_model_pays_per_step_s_once_and_whole():
    """``LayoutInputs.per_step_s``: the same on layouts of dp, tp, pp and ZeRO."""
    from scalesim import builtin_gpt
    from scalesim.plan import Setting, setting_inputs
    from scalesim.presets import HARDWARE

    setting = Setting(builtin_gpt.shape_of(1024, 8, 1024, 50304, True), HARDWARE["dgx-h100"], 64,
                      params=153_331_712)
    x = setting_inputs(setting, dp=np.array([1, 4, 2, 2]), tp=np.array([1, 1, 2, 2]),
                       pp=np.array([1, 1, 1, 2]), zero=np.array([0, 1, 0, 3]),
                       micro_batch=np.array(1))
    paid = evaluate_layouts(x.replace(per_step_s=ONCE_S)).compute_s
    np.testing.assert_allclose(paid - evaluate_layouts(x).compute_s, ONCE_S, rtol=1e-9)
