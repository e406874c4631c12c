"""Session 52: `scalesim plan` over several counts printed a per-device figure above 100 % (the
README's llama3-70b on 32 and 64 A100 40GB: '285.4 tokens/s, 667.2%') without a word. Now a
note says why from the two bests (``plan.above_linear_count_note``): their layouts, the term
that takes most of the fewer devices' step, and the fewer devices' step against the other's
as a runner-up's why (``plan._why``)."""

from __future__ import annotations

import json

from scalesim.cli.main import main
from scalesim.device_nouns import GPU_NOUNS
from scalesim.plan import PARTS, CountBest, PlanRow, above_linear_count_note


def _row(devices: int, dp: int, tp: int, pp: int, zero: int, step_s: float, **parts) -> PlanRow:
    """A plan row of 64 samples a step: samples/s 64 / ``step_s``."""
    breakdown = {p: parts.get(p, 0.0) for p in PARTS}
    return PlanRow.model_construct(
        devices=devices, dp=dp, tp=tp, pp=pp, cp=1, zero=zero, schedule="1f1b" if pp > 1
        else "none", virtual_stages=1, shard_group=dp, step_time_s=step_s,
        samples_per_s=64 / step_s, fits=True, breakdown_s=breakdown)


# 8 devices: 64 / 10 / 8 = 0.8 samples/s each, 6 s of 10 s the data-parallel exchange
EIGHT = _row(8, 8, 1, 1, 3, 10.0, compute_s=4.0, dp_exposed_s=6.0)


def test_a_count_above_100_percent_per_device_says_the_two_layouts_and_the_term():
    # 16 devices: 64 / 2 / 16 = 2 samples/s each, 2 / 0.8 = 250%
    sixteen = _row(16, 4, 2, 2, 1, 2.0, compute_s=1.8, dp_exposed_s=0.2)
    note = above_linear_count_note([CountBest(8, EIGHT), CountBest(16, sixteen)], GPU_NOUNS)
    assert note == (
        "per device above 100% (250.0% on 16 devices against the best on 8): the two bests are "
        "different layouts: on 8, dp 8 x tp 1 x pp 1, zero3, whose data-parallel exchange takes "
        "6.0 s of its 10.0 s step (60%); on 16, dp 4 x tp 2 x pp 2 (1F1B), zero1, whose "
        "data-parallel exchange takes 0.2 s of its 2.0 s step (10%); the best on 8 against it: "
        "step +400.0%: data-parallel exchange +5.8 s")


def test_the_same_layout_above_100_percent_is_said_as_one():
    # 16 devices, 4 s: 64 / 4 / 16 = 1 sample/s each, 1 / 0.8 = 125%
    sixteen = EIGHT.model_copy(update={"devices": 16, "step_time_s": 4.0, "samples_per_s": 16.0,
                                       "breakdown_s": {**EIGHT.breakdown_s, "compute_s": 2.0,
                                                       "dp_exposed_s": 2.0}})
    note = above_linear_count_note([CountBest(8, EIGHT), CountBest(16, sixteen)], GPU_NOUNS)
    assert note.startswith("per device above 100% (125.0% on 16 devices against the best on 8): "
                           "both bests run dp 8 x tp 1 x pp 1, zero3: on 8 its data-parallel "
                           "exchange takes 6.0 s of its 10.0 s step (60%); on 16 its "
                           "data-parallel exchange takes 2.0 s of its 4.0 s step (50%)"), note


def test_no_count_above_100_percent_has_no_note():
    # 16 devices, 5 s: 64 / 5 / 16 = 0.8 samples/s each, 100%
    linear = EIGHT.model_copy(update={"devices": 16, "step_time_s": 5.0, "samples_per_s": 12.8})
    assert above_linear_count_note([CountBest(8, EIGHT), CountBest(16, linear)], GPU_NOUNS) is None
    assert above_linear_count_note([CountBest(8, None, "nothing fits"), CountBest(16, linear)],
                                   GPU_NOUNS) is None  # one best: nothing to compare


README = ["plan", "--workload", "llama3-70b", "--devices", "32,64", "--global-batch", "512",
          "--recompute-style", "early-stop"]


def test_the_readme_plan_says_why_64_gpus_run_667_percent_per_gpu(capsys):
    assert main(README) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith("285.4 tokens/s, 667.2%"))
    assert lines[at + 1] == (
        "note: per device above 100% (667.2% on 64 devices against the best on 32): the two "
        "bests are different layouts: on 32, dp 4 x tp 8 x pp 1, zero3, whose data-parallel "
        "exchange takes 2,605.2 s of its 3,064.1 s step (85%); on 64, dp 4 x tp 4 x pp 4 "
        "(interleaved 1F1B, 2 virtual stages), zero2, whose data-parallel exchange takes 6.4 s "
        "of its 229.6 s step (3%); the best on 32 against it: step +1234.3%: data-parallel "
        "exchange +2.6e+03 s")


def test_the_plans_json_keeps_its_shape(capsys):
    """The plan's JSON has no notes list: its scaling_efficiency stays as it was."""
    assert main([*README, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out) == ["by_count", "layouts", "memory_note"]
    assert [round(c["scaling_efficiency"], 4) for c in out["by_count"]] == [1.0, 6.6717]
