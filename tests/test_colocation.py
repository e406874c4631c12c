"""Devices of one server slowing each other's compute (co-location), from model to profile."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_step_properties import scenarios

from scalesim.knee import find_knee
from scalesim.model.compute import colocation_factor, colocation_slope
from scalesim.model.param_server import evaluate_ps
from scalesim.model.step import evaluate
from scalesim.predict import predict, scenario_inputs
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.floats(0.0, 0.3))
def test_compute_grows_with_busy_devices_of_one_server(inp, slope):
    free = evaluate(inp.replace(colocation_slope=0.0))
    shared = evaluate(inp.replace(colocation_slope=slope))
    g = min(int(np.asarray(inp.devices)), int(np.asarray(inp.devices_per_node)))
    assert float(shared.compute_s) == pytest.approx(float(free.compute_s) * (1 + slope * (g - 1)),
                                                    rel=1e-9)
    assert float(shared.step_time_s) >= float(free.step_time_s) * (1 - 1e-12)


def test_slope_from_a_measured_slowdown():
    assert colocation_slope(0.08, 2) == pytest.approx(0.08)
    assert colocation_slope(0.14, 8) == pytest.approx(0.02)
    assert colocation_slope(0.5, 1) == 0.0  # one device timed: nothing known
    assert colocation_factor([1, 2, 8], 0.02).tolist() == pytest.approx([1.0, 1.02, 1.14])


def _profile(slowdown: float, colocated: int):
    base = default_profile()
    compute = base.compute.model_copy(update={
        "overhead_s": 0.002, "optimizer_step_s": 0.004, "colocated_devices": colocated,
        "colocation_slowdown": slowdown})
    return base.model_copy(update={"compute": compute})


def test_predictions_use_the_alone_curve_and_scale_per_server():
    """Timings taken with 2 busy devices and 10% slower than alone: one device alone is
    predicted 10% faster than the timings, 2 in one server as timed, 8 in one server slower,
    and devices spread one per server as alone. More than one device also copies the fp16
    gradients into DDP's buckets and back, 336e6 × 4 × 2 B at the A100 40GB's 1,555 GB/s =
    1.73 ms (session 56, docs/model.md §4), at that rate whatever the co-location."""
    timed = _profile(0.10, 2)
    c = timed.compute
    b = timed.workload.micro_batch
    timed_s = c.overhead_s + c.per_sample_s * b + c.optimizer_step_s
    copies_s = 336e6 * 4 * 2 / 1555e9
    rows = {(r.devices, r.devices_per_node): r for devices_per_node in (1, 8)
            for r in predict(timed, Scenario(devices=[1, 2, 8],
                                             devices_per_node=devices_per_node))}
    assert rows[(1, 1)].compute_s == pytest.approx(timed_s / 1.10)
    assert rows[(2, 2)].compute_s == pytest.approx(timed_s + copies_s)
    assert rows[(8, 8)].compute_s == pytest.approx(timed_s / 1.10 * (1 + 0.10 * 7) + copies_s)
    assert rows[(2, 1)].compute_s == pytest.approx(timed_s / 1.10 + copies_s)
    # Efficiency inside a server pays the slowdown; one device per server does not.
    assert rows[(2, 2)].efficiency < rows[(1, 1)].efficiency / 1.09


def test_no_colocation_measured_changes_nothing():
    one_timed = predict(_profile(0.0, 1), Scenario(devices=[1, 8, 16]))
    eight_alike = predict(_profile(0.0, 8), Scenario(devices=[1, 8, 16]))
    assert [r.samples_per_s for r in one_timed] == pytest.approx(
        [r.samples_per_s for r in eight_alike], rel=1e-12)


def test_a_slowdown_without_colocated_devices_is_refused():
    data = {**default_profile().compute.model_dump(), "colocation_slowdown": 0.5,
            "colocated_devices": 1}
    with pytest.raises(ValueError, match="set colocated_devices to 2 or more"):
        type(default_profile().compute).model_validate(data)


def test_profile_rejects_a_negative_slowdown():
    with pytest.raises(ValueError, match="colocation_slowdown"):
        default_profile().compute.model_copy(update={}).model_validate(
            {**default_profile().compute.model_dump(), "colocation_slowdown": -0.1})


def _knee(rows):
    return find_knee([r.devices for r in rows], [r.nodes for r in rows],
                     [r.efficiency for r in rows], [r.compute_s for r in rows],
                     [r.exposed_comm_s for r in rows],
                     [r.data_stall_s or 0.0 for r in rows],  # None: not modelled, as knee.py
                     [r.straggler_s for r in rows], [r.micro_batch * r.accumulation for r in rows])


def test_knee_from_sharing_a_server_is_named_so():
    """Weak scaling inside one server with a strong co-location slowdown: compute per sample grows
    because the server's devices slow each other, not because per-device work is small."""
    knee = _knee(predict(_profile(0.35, 8), Scenario(devices=[1, 2, 4, 8])))
    assert knee is not None and knee.cause == "colocation"
    assert "server" in knee.label and "small per-device work" not in knee.label
    # Strong scaling shrinks the per-device work: the fixed overheads are still named.
    strong = _profile(0.0, 1).model_copy(update={"compute": _profile(0.0, 1).compute.model_copy(
        update={"overhead_s": 0.03})})
    knee = _knee(predict(strong, Scenario(devices=[1, 2, 4, 8], global_batch=64)))
    assert knee is not None and knee.cause == "compute"
    # Compute growing from one full server to two: no more devices share a server.
    knee = find_knee([8, 16], [1, 2], [0.95, 0.80], [1.0, 1.2], [0.1, 0.1], [0.0, 0.0],
                     [0.0, 0.0], [32, 32])
    assert knee is not None and knee.cause == "compute"


def test_parameter_server_compute_shares_the_server_too():
    """The same compute but for DDP's bucket copies, which a parameter-server exchange does not
    make: 336e6 × 4 × 2 B / 1,555 GB/s = 1.73 ms on more than one device (fp16 gradients,
    session 56)."""
    inputs, _ = scenario_inputs(_profile(0.10, 2), Scenario(devices=[1, 2, 8]))
    allreduce = evaluate(inputs)
    ps = evaluate_ps(inputs, host_latency_s=1e-5, host_busbw_GBps=20.0)
    copies_s = np.array([0.0, 1.0, 1.0]) * 336e6 * 4 * 2 / 1555e9
    assert ps.compute_s.tolist() == pytest.approx((allreduce.compute_s - copies_s).tolist())
