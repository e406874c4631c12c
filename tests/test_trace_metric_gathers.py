"""Session 42: the 1 % rule of session 41 (``trace_comm_calls.no_gradient``) covers all-gathers too, by
the elements each gathers (its input x the ranks it gathers over) against the rank's largest
reduction. Before, only reductions were set aside: a metric all-gathered each step
(``dist.all_gather`` of an accuracy) stayed in the exchange's time and counts, so a DeepSpeed
stage 2 job that gathers a metric in each micro-step read as FSDP (its gathers in every
micro-step), priced 2k passes for the 2k + 1 it sends. Hand-made 2-rank CPU traces
(``record_param_comms``, ``tests/trace_events.py``)."""

from __future__ import annotations

import pytest
from test_trace_sharding_readings import GATHER, job
from trace_events import BACKWARD, comm, op, stepped, summaries

from scalesim import trace_comm_calls
from scalesim.trace_collectives import (
    pipeline_stages,
    set_aside_note,
    traced_dp_comm,
    traced_exchange,
    traced_layout,
)

US = 1e-6


def ddp_gathering(sized: bool):
    """3 steps of a DDP micro-step: a 200 us forward, a 100 us backward, the gradients' 100 us
    all-reduce (1,000 elements), then a 1-element all-gather of 100 us (a metric)."""

    def micro_step(m, a):
        return [op("DistributedDataParallel.forward", a, 200.0, cat="user_annotation"),
                op("aten::mm", a, 200.0), op(BACKWARD, a + 200.0, 100.0),
                comm("allreduce", a + 300.0, 1000, sized, dur_us=100.0),
                comm(GATHER, a + 400.0, 1, sized, dur_us=100.0)]

    return stepped(1, 500.0, micro_step)


def test_a_metric_gather_is_set_aside_from_the_reading_and_the_time(tmp_path):
    """2 elements gathered against 1,000 reduced: set aside (3 a rank); read as DDP with no
    words of a gather (before: 'their sizes say 12 elements all-gathered for 6,000 all-reduced
    ...: no gather of the parameters'), the exchange's own time 0.1 ms a step (before 0.2)."""
    s = summaries(tmp_path, ddp_gathering(sized=True))
    assert [x.set_aside for x in s] == [{"all-gather": 3}] * 2
    exchange, note = traced_exchange(s)
    assert (exchange.strategy, note) == ("ddp", "")
    transfer, _ = traced_dp_comm(s, pipeline_stages(s, traced_layout(s)))
    assert transfer == pytest.approx(100.0 * US)
    assert [st.set_aside_s for x in s for st in x.steps] == pytest.approx([100.0 * US] * 6)
    assert ("6 all-gathers (1 a step on each of the 2 traced ranks) set aside as no gradient "
            "traffic: each under 1% of the elements of its rank's largest reduction (1,000 "
            "elements), an all-gather by the elements it gathers (its input x the ranks), a "
            "metric or the loss reduced for logging (dist.all_reduce(loss), dist.all_gather of "
            "a metric)") in set_aside_note(s)


def test_without_sizes_nothing_is_set_aside(tmp_path):
    """No sizes: the counts decide as before (1 gather a reduction: ZeRO-2, the note naming
    --strategy ddp), nothing set aside, the gather's time the exchange's."""
    s = summaries(tmp_path, ddp_gathering(sized=False))
    assert [x.set_aside for x in s] == [{}] * 2
    exchange, note = traced_exchange(s)
    assert exchange.strategy == "zero2"
    assert "give --strategy ddp for one" in note
    transfer, _ = traced_dp_comm(s, pipeline_stages(s, traced_layout(s)))
    assert transfer == pytest.approx(200.0 * US)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_deepspeed_stage_2_gathering_a_metric_each_micro_step_is_still_deepspeed(tmp_path, k):
    """DeepSpeed stage 2 (all-reduces in each of k micro-steps, the parameters gathered once a
    step) with a 1-element all-gather in each micro-step: before, gathers in every micro-step
    read as FSDP SHARD_GRAD_OP (2k passes priced); now as without the metric, DeepSpeed."""
    def events():
        base = job("ds2", k, False)
        return base + [comm(GATHER, e["ts"] + 35.0, 1, dur_us=2.0) for e in base
                       if e["name"] == "aten::mm"]

    (tmp_path / "plain").mkdir()
    (tmp_path / "metric").mkdir()
    plain, _ = traced_exchange(summaries(tmp_path / "plain", job("ds2", k, False)))
    s = summaries(tmp_path / "metric", events())
    read, _ = traced_exchange(s)
    assert [x.set_aside for x in s] == [{"all-gather": 3 * k}] * 2
    assert (read.strategy, read.zero_framework, read.grad_sync) == (
        plain.strategy, plain.zero_framework, plain.grad_sync) == (
        "zero2", "deepspeed", "every-micro-step")


def test_a_shard_gathered_over_many_ranks_is_no_metric(tmp_path):
    """ZeRO-3 over 256 ranks (2 traced): each rank gathers a 100-element shard of a
    25,600-element unit, under 1 % of the unit's reduce-scatter as an input, but 25,600
    gathered: nothing set aside, read as ZeRO-3."""
    def micro_step(m, a):
        return [op("FSDP::root_pre_forward", a, 5.0, cat="user_annotation"),
                comm(GATHER, a + 10.0, 100), op("aten::mm", a + 20.0, 30.0),
                comm(GATHER, a + 60.0, 100), op(BACKWARD, a + 70.0, 30.0),
                comm("_reduce_scatter_base", a + 110.0, 25_600)]

    s = summaries(tmp_path, stepped(1, 200.0, micro_step), world=256, traced=2)
    assert [x.set_aside for x in s] == [{}] * 2
    assert traced_exchange(s)[0].strategy == "zero3"


def test_a_c10d_all_gather_is_sized_by_its_input(tmp_path):
    """``c10d::allgather_`` records its outputs (a list of lists) as ``[]`` and its input
    second (record_shapes=True on gloo): read as 1 element, a 50,000-element gather was set
    aside against a 131,841-element all-reduce; its input says 50,000 (100,000 gathered)."""
    args = {"Input Dims": [[], [[50_000]], [], [], []]}
    place = trace_comm_calls.host_input_argument("c10d::allgather_", "c10d::allgather_")
    assert trace_comm_calls.input_elements(args, place) == 50_000
    assert trace_comm_calls.host_input_argument("c10d::allreduce_", "c10d::allreduce_") == 0

    def step_events(m, a):
        return [op("aten::mm", a, 300.0),
                op("c10d::allreduce_", a + 300.0, 100.0, **{"Input Dims": [[[131_841]]]}),
                op("c10d::allgather_", a + 400.0, 100.0, **args)]

    s = summaries(tmp_path, stepped(1, 500.0, step_events))
    assert [x.set_aside for x in s] == [{}] * 2
    assert s[0].largest_reduction == 131_841
