"""Session 42: a collective set aside as no gradient traffic (``trace_comm_calls.no_gradient``: a
metric's or the loss's all-reduce) leaves the exchange's time too, not only its counts. A 2-rank
DDP job of one micro-step a step: a 200 us forward, a 100 us backward, the gradients' 100 us
all-reduce (1,000 elements), then a metric's 5 ms all-reduce (1 element) under nothing else.
Before, the collectives' intervals were merged per step whatever their size: the exchange
exposed 5.1 ms a step (94 % of it, 'comm_growth' the cause), its link priced 51x slower than
it ran, and 'Accumulate gradients' offered +243 %."""

from __future__ import annotations

import pytest
from trace_events import BACKWARD, comm, op, stepped, summaries

from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
from scalesim.trace_collectives import pipeline_stages, traced_dp_comm, traced_layout

FORWARD_US, BACKWARD_US, GRADIENTS_US, METRIC_US = 200.0, 100.0, 100.0, 5000.0
STEP_US = FORWARD_US + BACKWARD_US + GRADIENTS_US + METRIC_US
US = 1e-6


def job(metric: str = "sized", slow_forward_us: float = 0.0):
    """Events of 3 steps (a function of the rank): the metric's all-reduce a ``record_param_comms``
    of 1 element ('sized'), the same inside an unsized ``c10d::allreduce_`` ('nested'), or no
    event at all, the 5 ms idle ('none'); ``slow_forward_us``: rank 1's forward that much
    longer, the metric all-reduced before the backward (rank 0 waits in it)."""

    def events(rank):
        slow = slow_forward_us if rank == 1 else 0.0

        def micro_step(m, a):
            forward = FORWARD_US + slow
            out = [op("DistributedDataParallel.forward", a, forward, cat="user_annotation"),
                   op("aten::mm", a, forward)]
            if slow_forward_us:  # the loss all-reduced before the backward: waits for rank 1
                at = a + FORWARD_US + slow_forward_us
                out += [comm("allreduce", a + forward, 1, dur_us=at - a - forward + METRIC_US),
                        op(BACKWARD, at + METRIC_US, BACKWARD_US),
                        comm("allreduce", at + METRIC_US + BACKWARD_US, 1000,
                             dur_us=GRADIENTS_US)]
                return out
            out += [op(BACKWARD, a + forward, BACKWARD_US),
                    comm("allreduce", a + forward + BACKWARD_US, 1000, dur_us=GRADIENTS_US)]
            at = a + forward + BACKWARD_US + GRADIENTS_US
            if metric == "nested":  # the sized op 1 us inside its host op's ends
                out += [op("c10d::allreduce_", at, METRIC_US),
                        comm("allreduce", at + 1.0, 1, dur_us=METRIC_US - 2.0)]
            elif metric == "sized":
                out.append(comm("allreduce", at, 1, dur_us=METRIC_US))
            return out

        return stepped(1, STEP_US + slow_forward_us, micro_step)

    return events


def diagnosed(tmp_path, events):
    return diagnose_request(DiagnoseOptions(), traces=summaries(tmp_path, events),
                            trace_source="r*.json")


@pytest.mark.parametrize("metric", ["sized", "nested"])
def test_the_set_aside_all_reduce_is_no_exchange_time(tmp_path, metric):
    """Each step: the exchange 0.1 ms (comm and exposed), the metric's 5 ms set aside, all of
    it under nothing else and so idle; the exchange's own time 0.1 ms. A ``c10d::allreduce_``
    of no size around the metric's sized op (its host op, on its thread) goes with it."""
    s = summaries(tmp_path, job(metric))
    for st in (st for x in s for st in x.steps):
        assert st.comm_s == pytest.approx(GRADIENTS_US * US)
        assert st.exposed_comm_s == pytest.approx(GRADIENTS_US * US)
        assert st.set_aside_s == pytest.approx(METRIC_US * US)
        assert st.set_aside_exposed_s == pytest.approx(METRIC_US * US)
        assert st.idle_s == pytest.approx(METRIC_US * US)
        assert st.compute_s + st.exposed_comm_s + st.data_wait_s + st.idle_s \
            == pytest.approx(st.step_s)
    transfer, _ = traced_dp_comm(s, pipeline_stages(s, traced_layout(s)))
    assert transfer == pytest.approx(GRADIENTS_US * US)


def test_the_report_says_where_the_time_went_and_prices_the_job_without_it(tmp_path):
    """The note says the time left out; the idle finding says what part of it the set-aside
    collectives took; every remedy's gain is that of the same job with the 5 ms idle and no
    metric all-reduce (before: 'comm_growth' 94 %, accumulation +243 %, overlap +3.8 %)."""
    (tmp_path / "metric").mkdir()
    (tmp_path / "idle").mkdir()
    report = diagnosed(tmp_path / "metric", job("sized"))
    alike = diagnosed(tmp_path / "idle", job("none"))
    assert report.details["cross_rank"]["intrinsic_exposed_comm_s"] == pytest.approx(
        GRADIENTS_US * US)
    assert report.details["cross_rank"]["set_aside_exposed_s"] == pytest.approx(METRIC_US * US)
    assert report.cause.key == "idle"
    assert ("of it 5 ms waiting in collectives set aside as no gradient traffic (a metric's or "
            "the loss's, see the notes): not the exchange's") in " ".join(report.cause.evidence)
    assert ("6 all-reduces (1 a step on each of the 2 traced ranks) set aside as no gradient "
            "traffic") in " ".join(report.notes)
    assert ("and so does its time: their 5 ms a step (median) is not counted as exchange, the "
            "5 ms of it under no compute, data wait or other communication counted as idle "
            "time of the step") in " ".join(report.notes)
    gains = {r.key: r.gain for r in report.remedies}
    assert gains == pytest.approx({r.key: r.gain for r in alike.remedies}, rel=1e-9)
    assert gains["accumulation"] < 0.05


def test_a_wait_in_a_set_aside_all_reduce_is_still_the_stragglers(tmp_path):
    """The loss all-reduced before the backward, rank 1's forward 2 ms longer: rank 0 waits
    2 ms in the loss's all-reduce. That wait is the straggler's (rank 1 the slowest), as when
    the all-reduce counted as communication; only the slowest rank's own 5 ms is idle."""
    report = diagnosed(tmp_path, job("sized", slow_forward_us=2000.0))
    cr = report.details["cross_rank"]
    assert cr["slowest_rank"] == 1
    assert cr["straggler_wait_s"] == pytest.approx(2000.0 * US)
    assert cr["set_aside_exposed_s"] == pytest.approx(METRIC_US * US)
    assert cr["intrinsic_exposed_comm_s"] == pytest.approx(GRADIENTS_US * US)
