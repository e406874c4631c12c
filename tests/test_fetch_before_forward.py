"""A data fetch before each forward (``StepInputs.fetch_s``, ``LayoutInputs.fetch_s``,
``ComputeCurve.fetch_s``; docs/model.md §1, "A fetch before each forward"): serial with the step,
it adds k fetches and hides none of the exchange. Before (session 47) diagnose put it into each
micro-step's fixed time (``overhead_s``), two thirds of which the model counts as backward, so the
fetch hid part of an overlapped exchange, which a loader's next() before forward cannot do."""

from __future__ import annotations

import pytest
from step_fixtures import dp8_layout, one_server

from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.param_server import evaluate_ps
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

# 8 GPUs of one server (1 us, 100 GB/s), a 1 s micro-step (backward 2/3 s), DDP over 2e10
# parameters reduced in 2 bytes (S = 4e10 B) in two buckets of half of them, the first ready at
# half the backward: one bucket's ring all-reduce 2 x 7 x 1 us + 2 x 7/8 x 2e10 B / 100 GB/s
HALF_S = 14e-6 + 1.75 * 2e10 / 100e9
_DDP = one_server(2e10, first_bucket_bytes=2e10, bucket_bytes=2e10, reduce_bytes_per_param=2.0)
FETCH_S = 0.3


def test_a_fetch_adds_its_time_and_hides_none_of_the_exchange_by_hand():
    """The first bucket's all-reduce starts at B/2 and takes HALF_S; the second follows it
    (HALF_S > B/2): end B/2 + 2 HALF_S, exposed 2 HALF_S - B/2 = 0.36669 s with B = 2/3 s, with
    or without a 0.3 s fetch; the step grows by the fetch alone. The same 0.3 s in the fixed
    time (``overhead_s``, what diagnose did before) stretches B to 0.8667 s, the second bucket
    waits for it and only HALF_S = 0.35 s is exposed: the fetch hid 17 ms of the exchange."""
    backward = 2 / 3
    exposed = 2 * HALF_S - backward / 2
    bare = evaluate(StepInputs(**_DDP))
    fetched = evaluate(StepInputs(**_DDP, fetch_s=FETCH_S))
    assert float(bare.exposed_comm_s) == pytest.approx(exposed, rel=1e-12)
    assert float(fetched.exposed_comm_s) == pytest.approx(exposed, rel=1e-12)
    assert float(fetched.step_time_s) == pytest.approx(1.0 + FETCH_S + exposed, rel=1e-12)
    assert float(fetched.compute_s) == pytest.approx(1.0 + FETCH_S, rel=1e-12)
    as_overhead = evaluate(StepInputs(**{**_DDP, "overhead_s": FETCH_S}))
    assert float(as_overhead.exposed_comm_s) == pytest.approx(HALF_S, rel=1e-12)
    assert exposed - HALF_S == pytest.approx(0.01669, abs=1e-5)


@pytest.mark.parametrize("strategy", [0, 1, 2, 3])
def test_k_fetches_leave_every_other_part_as_it_was(strategy):
    """Each strategy across two servers, 4 micro-steps, a jittering and a slow device: the
    fetch is k x fetch_s of compute and of the step, the exchange (hidden or not), the straggler
    wait (the passes spread, not the fetch, the same on every device) and the memory unchanged."""
    inputs = StepInputs(**{**_DDP, "devices": 16, "accumulation": 4, "jitter_cv": 0.1,
                           "device_cv": 0.05, "slow_factor": 1.2, "strategy": strategy,
                           "comm_contention": 0.2})
    bare, fetched = evaluate(inputs), evaluate(inputs.replace(fetch_s=FETCH_S))
    assert float(fetched.step_time_s - bare.step_time_s) == pytest.approx(4 * FETCH_S, rel=1e-9)
    assert float(fetched.compute_s - bare.compute_s) == pytest.approx(4 * FETCH_S, rel=1e-9)
    for part in ("exposed_comm_s", "comm_total_s", "straggler_s", "memory_bytes"):
        assert float(getattr(fetched, part)) == pytest.approx(float(getattr(bare, part)),
                                                              rel=1e-12), part


def test_the_parameter_server_and_the_layout_step_pay_it_alike():
    """The parameter server's push and pull hide behind the passes only; a layout of GPT 1.65B
    at dp 8 (DDP, m = 4 micro-batches, a device speed spread) pays m fetches in compute and
    keeps its exchange and straggler wait."""
    inputs = StepInputs(**{**_DDP, "devices": 16, "accumulation": 2})
    bare = evaluate_ps(inputs, host_latency_s=1e-5, host_busbw_GBps=20.0)
    fetched = evaluate_ps(inputs.replace(fetch_s=FETCH_S), host_latency_s=1e-5,
                          host_busbw_GBps=20.0)
    assert float(fetched.step_time_s - bare.step_time_s) == pytest.approx(2 * FETCH_S, rel=1e-9)
    assert float(fetched.exposed_comm_s) == pytest.approx(float(bare.exposed_comm_s), rel=1e-12)
    x = dp8_layout(0, global_batch=32, device_cv=0.05)
    one, two = evaluate_layouts(x), evaluate_layouts(x.replace(fetch_s=0.01))
    assert float(two.compute_s - one.compute_s) == pytest.approx(4 * 0.01, rel=1e-9)
    assert float(two.step_time_s - one.step_time_s) == pytest.approx(4 * 0.01, rel=1e-9)
    assert float(two.dp_exposed_s) == pytest.approx(float(one.dp_exposed_s), rel=1e-12)
    assert float(two.straggler_s) == pytest.approx(float(one.straggler_s), rel=1e-12)


def test_predict_carries_the_profile_fetch_and_none_is_todays_prediction():
    """``ComputeCurve.fetch_s`` reaches predict's step (the one-device baseline fetches too);
    0, its default, predicts what the profile predicted before."""
    profile = default_profile()
    scenario = Scenario(devices=[1, 8, 16, 32], accumulation=2)
    fetch = 0.004
    with_fetch = profile.model_copy(update={"compute": profile.compute.model_copy(
        update={"fetch_s": fetch})})
    zero = profile.model_copy(update={"compute": profile.compute.model_copy(
        update={"fetch_s": 0.0})})
    before, after = predict(profile, scenario), predict(with_fetch, scenario)
    assert [p.step_time_s for p in predict(zero, scenario)] == [p.step_time_s for p in before]
    for b, a in zip(before, after, strict=True):
        assert a.step_time_s - b.step_time_s == pytest.approx(2 * fetch, rel=1e-9)
        assert a.exposed_comm_s == pytest.approx(b.exposed_comm_s, rel=1e-12)
