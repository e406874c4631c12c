"""A slow device's stage delays the replica by what it adds to 1F1B's span, m t_max + sum_i t_i
- t_max (docs/model.md §15, §16): (m - 1) steady + (f - 1) t_s, steady = max(f t_s + c_s -
t_max, 0); pinned to the repo's own replay (``pipeline_trace.replay_1f1b_s``, exact where the
last stage is the slowest) and by hand. Session 50: the fill was charged (f - 1) t_s / p per idle
micro-batch time, the average stage's view."""

import pytest

from scalesim.layout import ONE_F_ONE_B
from scalesim.model.pipeline_schedule import slow_stage_delay_s
from scalesim.pipeline_trace import replay_1f1b_s

STAGES = [0.1, 0.1, 0.1, 0.12]  # s a micro-batch; the last (with the logits) the slowest
M = 8


def _replayed_delay(stage, factor):
    slowed = list(STAGES)
    slowed[stage] *= factor
    return replay_1f1b_s(slowed, M) - replay_1f1b_s(STAGES, M)


def test_a_slowed_last_stage_adds_its_excess_m_times_as_the_replay():
    """1.3x the last stage: 0.156 s paces the m = 8 micro-batches, 8 x 0.036 = 0.288 s, and the
    fill and drain pass the other stages, unchanged (before: + 3 x 0.036 / 4 = 0.027 s)."""
    delay = float(slow_stage_delay_s(ONE_F_ONE_B, 4, 1, M, 0.12, 0.12, 1.3))
    assert delay == pytest.approx(8 * 0.036, rel=1e-12)
    assert delay == pytest.approx(_replayed_delay(3, 1.3), rel=1e-9)


def test_a_slowed_stage_below_the_pace_adds_its_whole_excess_once_as_the_replay():
    """1.1x the first stage (0.11 s, under the last's 0.12 s): the first micro-batch passes it
    once, 0.01 s (before: 3 x 0.01 / 4 = 0.0075 s)."""
    delay = float(slow_stage_delay_s(ONE_F_ONE_B, 4, 1, M, 0.1, 0.12, 1.1))
    assert delay == pytest.approx(0.01, rel=1e-12)
    assert delay == pytest.approx(_replayed_delay(0, 1.1), rel=1e-9)
