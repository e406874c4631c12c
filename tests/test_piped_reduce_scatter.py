"""Session 46: the reduce-scatter of an FSDP stage under a pipeline is exposed on the first stage
(docs/model.md §16, "Under a pipeline"; issue 11).

PyTorch's pipelining reduces a stage's gradients once, after its last backward
(``schedules.py``: ``perform_reduce_grad`` after the stage's last backward in GPipe and 1F1B,
the REDUCE_GRAD action after it in the multi-stage runtime; ``stage.py``: ``_post_backward``
runs each parameter group's ``post_backward`` and then ``_root_post_backward_final_callback``,
which makes the compute stream wait for the reduce-scatters). The first stage ends its backward
last, so nothing hides its reduce-scatter; the model hid it behind one micro-batch's backward.

By hand: Llama 3 8B on dgx-h100, dp 4 x pp 2, ZeRO-2, micro-batch 1, comm/compute contention 0
(so dp_exposed is the exposed time itself). The first stage holds 16 layers of 218,120,192
parameters and the 525,336,576-parameter embedding, 4,015,259,648, in 16 FSDP units (one a
layer, the embedding spread over them); one unit's all-gather or reduce-scatter over the 4 GPUs
of one server is the ring's 3 x 2 us + 3/4 x (2 bytes x 4,015,259,648 / 16) / 370 GB/s =
1.0234 ms = c. The forward's first gather waits (c, prefetch hides the rest) and the 16
reduce-scatters after the last backward all wait: 17 c = 17.397 ms (was 2 c = 2.047 ms, the
last unit's reduce-scatter past one micro-batch's backward)."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim.layout import ParallelLayout
from scalesim.model import collectives as coll
from scalesim.model.piped_reduce import exposed_of_rank_s, piped_reduce_exposed_s
from scalesim.model.sharding import ONCE_PER_STEP
from scalesim.model.zero_exchange import exchange, unit_reduce_scatter_s
from scalesim.plan import Setting, evaluate_layout
from scalesim.presets import HARDWARE, get_transformer

LAYER = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 4 * 4096
EMBED = 128256 * 4096
STAGE = 16 * LAYER + EMBED


def _unit_s(params, units):
    """One ring reduce-scatter (or all-gather) of ``params / units`` parameters at 2 bytes over
    4 GPUs of a dgx-h100 (2 us, 370 GB/s), seconds."""
    return 3 * 2e-6 + 0.75 * (2.0 * params / units) / 370e9


def _step(schedule="1f1b", v=1, global_batch=16, pp=2, dp=4, zero=2):
    hardware = HARDWARE["dgx-h100"].model_copy(update={"comm_compute_contention": 0.0})
    setting = Setting(get_transformer("llama3-8b"), hardware, global_batch)
    return evaluate_layout(setting, ParallelLayout(
        dp=dp, pp=pp, zero=zero, micro_batch=1, global_batch=global_batch, schedule=schedule,
        virtual_stages=v))


def test_the_hand_count_of_one_unit():
    assert STAGE == 4_015_259_648
    assert _unit_s(STAGE, 16) == pytest.approx(1.0234e-3, rel=1e-4)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("zero", [2, 3])  # FSDP ZeRO-3 runs as ZeRO-2 under a pipeline
def test_the_first_stage_waits_for_all_its_reduce_scatters(schedule, zero):
    c = _unit_s(STAGE, 16)
    exposed = float(_step(schedule, zero=zero).dp_exposed_s)
    assert exposed == pytest.approx(17 * c, rel=1e-9)  # was 2 c: 2.047 ms
    assert 17 * c == pytest.approx(17.397e-3, rel=1e-4)


def test_interleaved_the_first_rank_waits_for_its_first_chunk():
    """v = 2: the first rank's last chunk to finish is stage 0 (8 layers and the embedding, 8
    units); its other chunk (8 layers) reduced a drain earlier, behind the 8 layers' backward of
    idle it has before its last backward, which is far longer than that reduce-scatter:
    c + 8 x unit(8 layers + embedding) = 1.0234 + 9.2519 = 10.275 ms (was 2 c)."""
    c = _unit_s(STAGE, 16)
    chunk = 8 * _unit_s(8 * LAYER + EMBED, 8)
    assert chunk == pytest.approx(9.2519e-3, rel=1e-4)
    assert float(_step("interleaved", 2, 32).dp_exposed_s) == pytest.approx(c + chunk, rel=1e-9)


def test_each_rank_exposes_what_outlasts_its_drain():
    """By hand, pp 4, a drain of 1 s a rank: the first rank 3 s, the one between 5 - 1 = 4 s,
    the last 6 - 3 = 3 s: the step waits 4 s; without the rank between (pp 2) the first's and
    the last's, 6 - 1 = 5 s."""
    assert piped_reduce_exposed_s(4, (3.0, 0.0), (5.0, 0.0), (6.0, 0.0), 1.0) == 4.0
    assert piped_reduce_exposed_s(2, (3.0, 0.0), (50.0, 0.0), (6.0, 0.0), 1.0) == 5.0
    # interleaved: 5 s of earlier chunks on the first rank against 3 drains of idle stall it 2 s
    assert exposed_of_rank_s(0, 4, 2.0, 5.0, 1.0) == 4.0
    assert exposed_of_rank_s(0, 4, 2.0, 2.5, 1.0) == 2.0  # hidden in the idle
    assert exposed_of_rank_s(3, 4, 2.0, 0.0, 1.0) == 0.0  # the last rank's ends in the drain


def test_unit_reduce_scatter_is_the_ring_per_unit():
    coeffs = coll.reduce_scatter_coeffs(4, 1, 2e-6, 370.0, 6e-6, 384.0)

    def ring(size):
        return coll.affine_s(coeffs, size)

    seconds = unit_reduce_scatter_s(2.0 * STAGE, 16, ring, 2.0)
    assert float(seconds) == pytest.approx(16 * _unit_s(STAGE, 16), rel=1e-12)
    # reduced in float32 (4 bytes against 2 gathered): twice the bytes a unit, the same latency
    fp32 = unit_reduce_scatter_s(2.0 * STAGE, 16, ring, 2.0, 4.0)
    assert float(fp32) == pytest.approx(16 * (_unit_s(STAGE, 16) - 6e-6) * 2 + 16 * 6e-6)
    assert float(unit_reduce_scatter_s(0.0, 16, ring, 2.0)) == 0.0


def test_without_a_known_window_the_exchange_is_unchanged():
    """NaN (rows not under a pipeline) keeps the backward timeline; a given window replaces
    only the once-a-step reduce-scatter, and only with overlap on."""
    coeffs = coll.reduce_scatter_coeffs(4, 1, 2e-6, 370.0, 6e-6, 384.0)
    args = (np.array([2, 2, 3]), 0, 2.0 * STAGE, 4, 16.0, 4.0, 0.1, 0.2, True,
            lambda s: coll.affine_s(coeffs, s), lambda s: coll.affine_s(coeffs, s), 2.0)
    once = {"grad_sync": ONCE_PER_STEP}
    plain = exchange(*args, **once)[0]
    same = exchange(*args, **once, reduce_exposed_s=np.array([np.nan, np.nan, np.nan]))[0]
    np.testing.assert_array_equal(plain, same)
    low = exchange(*args, **once, reduce_exposed_s=np.array([0.2, np.nan, 0.2]))[0]
    high = exchange(*args, **once, reduce_exposed_s=np.array([0.5, np.nan, 0.5]))[0]
    assert high[0] - low[0] == pytest.approx(0.3)  # ZeRO-2 once a step: the given seconds
    assert high[1] == low[1] == plain[1]  # NaN: the timeline
    assert high[2] == low[2] == plain[2]  # ZeRO-3 keeps its own timelines
    off = exchange(*args[:8], False, *args[9:], **once, reduce_exposed_s=0.5)[0]
    np.testing.assert_array_equal(off, exchange(*args[:8], False, *args[9:], **once)[0])
