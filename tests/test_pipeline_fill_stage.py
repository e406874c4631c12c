"""The pipeline's fill and drain pass through every stage but the slowest (docs/model.md §15,
``pipeline_schedule.fill_stage_s``): 1F1B's span is m t_max + sum_i t_i - t_max, where three
average stages (before session 50) charged the slowest stage's excess once more per step."""

import pytest

from scalesim.cli.main import main
from scalesim.model.pipeline_schedule import fill_stage_s
from scalesim.pipeline_trace import replay_1f1b_s


def test_the_fill_stage_is_the_average_of_the_stages_but_the_slowest():
    # stages of 3 and 6 s: the fill passes the 3 s stage only; 1F1B idles 1 x 3 s, and its span
    # at m = 2 is 2 x 6 + 3 = 15 s, the replay's (docs/model.md §15, "A traced pipeline")
    assert float(fill_stage_s(2, 4.5, 6.0)) == pytest.approx(3.0)
    assert 2 * 6.0 + 1 * float(fill_stage_s(2, 4.5, 6.0)) == pytest.approx(replay_1f1b_s([3, 6], 2))
    # equal stages: the average stage (Narayanan's (p - 1)/m); no pipeline: none
    assert float(fill_stage_s(4, 2.0, 2.0)) == pytest.approx(2.0)
    assert float(fill_stage_s(1, 5.0, 5.0)) == 0.0


@pytest.mark.parametrize("m", [1, 4, 8, 32])
def test_one_f_one_b_with_a_slow_last_stage_spans_what_the_replay_spans(m):
    # 3 stages of 1 s and a last one of 1.5 s (its logits): fill (4 x 1.125 - 1.5) / 3 = 1 s
    stages = [1.0, 1.0, 1.0, 1.5]
    fill = float(fill_stage_s(4, sum(stages) / 4, max(stages)))
    assert fill == pytest.approx(1.0)
    assert m * 1.5 + 3 * fill == pytest.approx(replay_1f1b_s(stages, m), rel=1e-12)


def test_predict_charges_gpt_1_7b_at_pp_4_the_bubble_of_its_three_lighter_stages(capsys):
    """GPT 1.7B on 4 H100 of a DGX H100 at pp 4, 1F1B, 8 micro-batches of 1: a layer 2.8266 ms
    (forward 0.9422 + backward 1.8844), the output layer and loss 2.7909 ms, 6 layers a stage,
    so stages 0-2 run 16.960 ms a micro-batch and the last 19.750 ms: the bubble is 3 x 16.960
    = 50.88 ms (three average stages, 17.657 ms, gave 52.97 ms), the replay's."""
    layer, logits = 2.8266036e-3, 2.7909179e-3
    stages = [6 * layer] * 3 + [6 * layer + logits]
    main(["predict", "--hardware", "dgx-h100", "--workload", "gpt-1.7b", "--devices", "4",
          "--pp", "4", "--batch", "1", "--accumulation", "8", "--schedule", "1f1b", "--json"])
    import json

    row = json.loads(capsys.readouterr().out)[0]
    assert row["bubble_s"] == pytest.approx(3 * 6 * layer, rel=1e-6)
    assert row["bubble_s"] == pytest.approx(replay_1f1b_s(stages, 8) - 8 * max(stages), rel=1e-6)
    assert 3 * sum(stages) / 4 - row["bubble_s"] == pytest.approx(2.093e-3, rel=1e-3)
