"""decide with a critical batch size and no training length: its time column compares the time
to reach the same quality against today's, (1 + B_noise/B) x step time (docs/model.md §8,
§20). Before, the As-is row read 'n/a' there while every option read '-42.3% to quality', the
card's JSON goal was '' (its As-is quality_change 0.0 against the text's n/a), and its note said
to enter a training length 'to compare time and total money, not only throughput' beside a
column that compared times; now the As-is row reads 'as is', the goal (text, JSON, app) says
what the column is, and a note says what it counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_harness import open_app
from cli_harness import run_cli, whole_lines

from scalesim.decision import RELATIVE_QUALITY

H200 = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200-2026-11-30"
        / "gpu-check" / "gpu-profile.json")


def _card(capsys, argv):
    code, out, err = run_cli(capsys, ["decide", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def test_the_as_is_row_reads_as_is_and_the_goal_says_what_the_column_is(capsys):
    argv = ["--devices", "8", "--critical-batch", "1000"]
    card = _card(capsys, argv)
    assert card["goal"] == RELATIVE_QUALITY == "time to quality relative to today's"
    assert card["now"]["quality_change"] == 0.0 and card["now"]["time_s"] is None
    # ZeRO-1 (settings) and, since bert-large declares its 24 layers (session 41), the planner's
    # ZeRO-2 (layout), both at today's global batch
    assert sorted(o["key"] for o in card["options"]) == ["settings", "split_model"]
    for option in card["options"]:  # at today's batch: the throughput gain inverted, by hand
        assert option["quality_change"] == pytest.approx(
            1 / (1 + option["throughput_gain"]) - 1, rel=1e-9)
    code, out, _ = run_cli(capsys, ["decide", *argv])
    out = whole_lines(out)
    lines = out.splitlines()
    as_is = next(line for line in lines if line.startswith("As is: 8 devices"))
    assert as_is.split()[-5:] == ["as", "is", "as", "is", "n/a"]  # throughput, time, money
    # ZeRO-1's time to quality, 1 / (1 + 9.4 %) - 1: -8.6 % before session 44's fp32 reduce of
    # ZeRO-1's main grads, -7.7 % in session 44, -8.6 % again since session 45's bert-large
    # states its fp16 all-reduce (reduce_bytes_per_param 2: ZeRO-1's main_grad reduces 2 B);
    # -8.2 % (1 / (1 + 8.9 %) - 1) since session 46: Megatron-Core's step casts those fp16 main
    # grads to fp32 and copies its fp32 shard back, 40 B a parameter swept, not the model's 30;
    # -7.7 % (1 / (1 + 8.3 %) - 1) since session 47 counted its default gradient-norm clip of
    # the fp32 main grads (norm 4 + scale 4 + 4: 52 B); -10.1 % (1 / (1 + 11.3 %) - 1) since
    # session 56: today's DDP pays its bucket copies, 336e6 x 8 B / 1,555 GB/s = 1.73 ms (63.74 ->
    # 65.47 ms), ZeRO-1's Megatron-Core buffers none (58.84 ms): 65.47 / 58.84 = 1.113
    assert "-10.1% to quality" in next(line for line in lines if line.startswith("Settings"))
    assert f"time to finish = {RELATIVE_QUALITY} " in out
    note = next(line for line in lines if line.startswith("note: no training length"))
    assert "B_noise = 1000 samples" in note and "the throughput gain inverted" in note
    assert "not only throughput" not in out
    # with a training length the column is hours again, and the As-is row has its own
    card = _card(capsys, [*argv, "--train-samples", "1e9"])
    assert card["goal"] == "time to train" and card["now"]["time_s"] > 0


def test_another_global_batch_counts_its_penalty(capsys):
    """The H200 calibration (B_noise = 0.2337 samples, its measured noise scale) on 8 GPUs at
    32 a GPU (B = 256): running on 2 (B' = 64) is 54.9 % less throughput but 44.4 % less time to
    the same quality, (B' + B_noise) / throughput' against (B + B_noise) / throughput. Session
    56: today's DDP on 8 pays its bucket copies of 153.3e6 fp32 gradients at the H200's
    4,800 GB/s, 153.3e6 x 16 B / 4.8e12 = 0.511 ms a step (216.38 -> 216.89 ms; not at the
    measured optimizer step's rate, which would have been 2.23 ms); the 2-device plan is ZeRO-2,
    no copies (531.79 sequences/s either way): 54.9 % and 44.4 %, 55.1 % and 44.2 % before."""
    card = _card(capsys, ["--profile", str(H200), "--devices", "8"])
    b_noise = json.loads(H200.read_text())["noise_scale"]["b_simple"]
    assert card["goal"] == RELATIVE_QUALITY
    (fewer,) = [o for o in card["options"] if o["key"] == "fewer_servers"]
    assert fewer["devices"] == 2 and "global batch 0.25x" in fewer["title"]
    now = card["now"]["samples_per_s"]
    by_hand = ((64 + b_noise) / fewer["samples_per_s"]) / ((256 + b_noise) / now) - 1
    assert fewer["quality_change"] == pytest.approx(by_hand, rel=1e-9)
    # -0.4442 before session 48: the exchange at 8 now hides behind the last device's backward
    # -0.4423 before session 56 (today's step 0.511 ms shorter without DDP's bucket copies)
    assert fewer["quality_change"] == pytest.approx(-0.4436, abs=5e-4)
    # -0.5490 before s48, -0.5505 before s56: 531.79 / 1180.31 - 1 (1183.10 without the copies)
    assert fewer["throughput_gain"] == pytest.approx(-0.5494, abs=5e-4)


def test_the_apps_card_reads_the_same():
    at = open_app({"v": "1", "dmax": "16", "cbs": "1000"})
    shown = at.table[0].value.reset_index().to_dict("records")
    assert shown[0]["option"].startswith("As is") and shown[0]["time to finish"] == "as is"
    assert all(row["time to finish"].endswith("to quality") for row in shown[1:])
    caption = " ".join(c.value for c in at.caption)
    assert f"Time to finish = {RELATIVE_QUALITY}." in caption
    assert "No training length: 'to quality' is the time to reach the same quality" in caption
    session = at.session_state["app_state"]
    assert session.cbs == 1000


def test_card_rows_without_a_critical_batch_keep_n_a(capsys):
    card = _card(capsys, ["--devices", "8"])
    assert card["goal"] == "" and card["now"]["quality_change"] is None
    code, out, _ = run_cli(capsys, ["decide", "--devices", "8"])
    out = whole_lines(out)
    assert "not only throughput" in out  # the old note where nothing is compared
    (as_is,) = [r for r in card_rows_of(out) if r.startswith("As is")]
    assert as_is.split()[-3:] == ["is", "n/a", "n/a"]  # time to finish n/a: nothing compared


def card_rows_of(text: str) -> list[str]:
    """The card's table rows in decide's text (between the header and the blank line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("option"))
    return lines[start + 1:lines.index("", start)]
