"""The trace model's gradient buckets are the traced job's (session 48, ``trace_buckets``).

Before, ``diagnose --trace`` laid every DDP exchange out in DDP's default buckets (25 MiB after
a 1 MiB first) of a nominal 100 MB gradient, so the least of it left exposed was that layout's
last bucket, 20 % of the exchange, whatever buckets the job ran. Now the all-reduces' sizes a
step posts (``StepBreakdown.reduction_elements``) are the model's buckets; without sizes the
defaults stay and a note says so.

The hand-made job: two identical gloo ranks, each step a 3 ms forward and a 6 ms backward
(the model's 2/3 of the compute), then four bucket all-reduces (``record_param_comms``) of
1,000, 4,000, 4,000, 1,000 elements, each ready when backward has produced its share (at
3.6, 6.0, 8.4 and 9.0 ms) and run one after another at 0.3 ms per 1,000 elements (3 ms in
all): 3.6-3.9, 6.0-7.2, 8.4-9.6, 9.6-9.9 ms. What the trace shows exposed: 9.0-9.9, 0.9 ms."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from trace_events import BACKWARD, comm, diagnosed_model, op, summaries

from scalesim import trace_diagnosis
from scalesim.figures import MIB_BYTES
from scalesim.model.overlap import bucket_layout, timeline_end_scalar
from scalesim.predict import predict
from scalesim.trace_buckets import (
    DEFAULT_BUCKETS,
    NOMINAL_GRADIENT_BYTES,
    last_share,
    model_buckets,
    traced_buckets,
)

ELEMENTS = (1000, 4000, 4000, 1000)
READY_MS = (3.6, 6.0, 8.4, 9.0)  # as backward (3 to 9 ms) has produced each bucket's share
STARTS_MS = (3.6, 6.0, 8.4, 9.6)  # when each runs: ready and the one before done
MS_PER_ELEMENT = 0.3 / 1000
STEP_MS, STEPS = 9.9, 4


def job(sized: bool = True) -> list[dict]:
    """``STEPS`` profiler steps of the hand-made job (its sizes recorded where ``sized``)."""
    events = []
    for n in range(STEPS):
        t = n * STEP_MS * 1e3
        events += [op(f"ProfilerStep#{n + 1}", t, STEP_MS * 1e3, cat="user_annotation"),
                   op("aten::mm", t, 3e3), op(BACKWARD, t + 3e3, 6e3)]
        events += [comm("allreduce", t + at * 1e3, n_el, sized,
                        dur_us=n_el * MS_PER_ELEMENT * 1e3)
                   for at, n_el in zip(STARTS_MS, ELEMENTS, strict=True)]
    return events


def modelled(tmp_path, events):
    """The diagnosis and the model's prediction of the diagnosed job (its exposed exchange)."""
    report, profile, scenario = diagnosed_model(summaries(tmp_path, events))
    return report, predict(profile, scenario)[0]


def by_hand(shares, backward_ms: float, comm_ms: float) -> float:
    """The bucket timeline (docs/model.md §3) over buckets of ``shares`` of the gradient in
    order, ready uniformly over ``backward_ms``, taking ``comm_ms`` all together: ms after the
    backward's end."""
    end, done = 0.0, 0.0
    for share in shares:
        done += share
        end = max(backward_ms * done, end) + share * comm_ms
    return max(end, backward_ms) - backward_ms


def assert_timeline_of(now, shares) -> None:
    """The traced job's prediction ``now`` exposes the bucket timeline of ``shares`` (3 ms of
    exchange over a 6 ms backward, 0.9 ms after it by hand for 10/40/40/10 %) over the last
    device's backward: the model's spread of device speeds makes that backward longer by its
    wait over the 9 ms of passes (docs/model.md §3, session 48), by under 2 %."""
    assert by_hand(shares, 6.0, 3.0) == pytest.approx(0.9)
    assert float(now.comm_total_s) * 1e3 == pytest.approx(3.0, rel=1e-6)
    stretch = 1.0 + float(now.straggler_s) * 1e3 / 9.0
    assert 1.0 < stretch < 1.02
    assert float(now.exposed_comm_s) * 1e3 == pytest.approx(by_hand(shares, 6.0 * stretch, 3.0),
                                                            rel=1e-6)


def test_the_traced_buckets_leave_exposed_what_the_trace_shows(tmp_path):
    """By hand: the timeline of the traced buckets (10, 40, 40, 10 % of 3 ms) over a 6 ms
    backward ends 0.9 ms after it, as the trace shows; the model now says the same timeline
    over the last device's backward (0.896 ms: its spread of device speeds makes that backward
    0.5 % longer) and 9 ms of passes before it. Before, DDP's default buckets over the nominal
    100 MB: 0.609 ms (its last bucket, 20.3 % of the exchange), a 9.609 ms step."""
    report, now = modelled(tmp_path, job())
    assert_timeline_of(now, [n / sum(ELEMENTS) for n in ELEMENTS])
    # the step: compute, the exposed exchange, and the model's spread of device speeds
    assert float(now.step_time_s - now.straggler_s) * 1e3 == pytest.approx(
        9.0 + float(now.exposed_comm_s) * 1e3, rel=1e-6)
    buckets = report.details["exchange_buckets"]
    assert buckets["elements"] == list(ELEMENTS)
    assert buckets["last_share"] == pytest.approx(0.1)
    # the default layout's exposure, what the model said before
    default = timeline_end_scalar(6e-3, NOMINAL_GRADIENT_BYTES, 25 * MIB_BYTES, MIB_BYTES,
                                  lambda b: b / NOMINAL_GRADIENT_BYTES * 3e-3) - 6e-3
    assert default * 1e3 == pytest.approx(0.6092, abs=1e-4)
    assert not any("DDP's default buckets" in n for n in report.notes)


def test_without_sizes_the_default_buckets_stay_and_a_note_says_so(tmp_path):
    """The same job with no message size recorded: DDP's defaults (0.609 ms exposed, by hand
    above) and a note naming them and how to record sizes."""
    report, now = modelled(tmp_path, job(sized=False))
    assert float(now.exposed_comm_s) * 1e3 == pytest.approx(0.6092, abs=1e-4)
    assert report.details["exchange_buckets"]["elements"] == []
    note = next(n for n in report.notes if "DDP's default buckets" in n)
    assert note.startswith("the traces record no size for the gradient all-reduces")
    assert "the last bucket's all-reduce, is 20% of the exchange" in note
    assert note.endswith("record with record_shapes=True for its own buckets")


def _layout_shares(buckets) -> list[float]:
    """The model's buckets (``bucket_layout``) as shares of its gradient, in order."""
    b = bucket_layout(buckets.grad_bytes, buckets.bucket_mib * MIB_BYTES,
                      buckets.first_bucket_mib * MIB_BYTES)
    sizes = [float(b.first)] + [float(b.mid)] * int(b.n_mid) + ([float(b.last)] if b.last > 0
                                                                  else [])
    return [s / buckets.grad_bytes for s in sizes if s > 0]


@pytest.mark.parametrize("elements", [
    (1000, 4000, 4000, 1000),  # the hand-made job's: first, equal middle ones, last
    (1049600,) * 4,  # the slow_device fixture's: four equal buckets
    (263169, 262656),  # tests/trace_job.py's MLP at dim 512: two buckets
    (5000,),  # one bucket
    (1, 26, 26, 26, 21),  # DDP's defaults in MiB (shares as the nominal layout's)
])
def test_the_model_lays_out_the_traced_buckets(elements):
    """Where the traced middle buckets are equal and the last no larger, the model's layout is
    the traced one, share for share."""
    got = _layout_shares(model_buckets(elements))
    assert got == pytest.approx([n / sum(elements) for n in elements], rel=1e-6)


def test_a_last_bucket_larger_than_the_middle_ones_stays_as_traced():
    """A large embedding reduced last (1, then four of 10, then 60 elements): the model's
    middle buckets take the last's size (a millionth more) and its first what is left, so the
    last, the least exposed part, is the traced 60 %. Unequal middle ones (10, 30): their
    mean, 20."""
    big = _layout_shares(model_buckets((1, 10, 10, 10, 10, 60)))
    assert big[-1] == pytest.approx(60 / 101, rel=1e-6)
    assert sum(big) == pytest.approx(1.0)
    assert big[0] == pytest.approx(41 / 101, rel=1e-5)  # 1 + 40, no room for a middle one
    assert model_buckets((0, 1, 1, 5)).first_bucket_mib >= 0.0  # an empty first: none
    mixed = _layout_shares(model_buckets((5, 10, 30, 5)))
    assert mixed == pytest.approx([0.1, 0.4, 0.4, 0.1][:1] + [20 / 50] * 2 + [0.1], rel=1e-6)


def test_many_small_buckets_grow_the_model_gradient_not_the_shares():
    """2,000 equal buckets a step: a middle one at the nominal 100 MB would be 47.7 KiB, under
    the bucket knob's least (0.1 MiB), so the gradient grows to 2,000 x 0.1 MiB; the shares
    are the traced ones, the last 1/2,000."""
    buckets = model_buckets((7.0,) * 2000)
    assert buckets.bucket_mib == pytest.approx(0.1)
    assert buckets.grad_bytes == pytest.approx(2000 * 0.1 * MIB_BYTES)
    assert last_share(buckets) == pytest.approx(1 / 2000, rel=1e-6)
    assert model_buckets(()) is DEFAULT_BUCKETS


def test_one_reductions_buckets_are_read_from_the_steps():
    """The sequence most steps post; of a step reducing twice (DDP without no_sync over 2
    micro-steps) the last half; a sequence that does not split so (the user's --grad-sync
    every-micro-step where the traces show one reduction) whole; none recorded: ()."""
    def ranks(*steps):
        return [SimpleNamespace(steps=[SimpleNamespace(reduction_elements=s) for s in steps])]

    assert traced_buckets(ranks((1, 2), (1, 2), (3,))) == (1, 2)
    assert traced_buckets(ranks((1, 2, 1, 2)), reductions=2) == (1, 2)
    assert traced_buckets(ranks((1, 2, 3)), reductions=2) == (1, 2, 3)
    assert traced_buckets(ranks((), ())) == ()


def test_the_fixtures_buckets_are_read_from_its_sizes():
    """The slow_device fixture (gloo, record_shapes, bucket_cap_mb 1): four all-reduces of
    1,049,600 elements a step (a 1024 x 1024 Linear's weight and bias each), so the model's
    last bucket is a quarter of the exchange (the trace: 26.6 of its 111.0 ms run after the
    slow rank's backward, 24 %), not the default layout's 20.3 %."""
    from pathlib import Path

    from scalesim import trace_ranks

    traces = Path(__file__).parent / "fixtures" / "traces"
    report = trace_diagnosis.diagnose_traces(trace_ranks.load_traces(
        [str(traces / f"slow_device_rank{r}.json.gz") for r in (0, 1)]), "t")
    buckets = report.details["exchange_buckets"]
    assert buckets["elements"] == [1049600.0] * 4
    assert buckets["last_share"] == pytest.approx(0.25)
    assert last_share(DEFAULT_BUCKETS) == pytest.approx(
        (NOMINAL_GRADIENT_BYTES - 76 * MIB_BYTES) / NOMINAL_GRADIENT_BYTES)
    assert np.isclose(last_share(DEFAULT_BUCKETS), 0.2031, atol=1e-4)
