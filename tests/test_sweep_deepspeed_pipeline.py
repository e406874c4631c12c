"""DeepSpeed refuses ZeRO-2/3 with pipeline parallelism (docs/model.md §16): predict refuses such
a scenario and the planner leaves such layouts out; a sweep whose axes reach one (strategy x pp x
zero framework) drops that row as a broken layout, and so goal, which sweeps every ZeRO stage,
never offers one. Before, the sweep evaluated it (ZeRO-3 states sharded under a pipeline, which
no framework runs) and goal's front listed DeepSpeed ZeRO-3 plans at pp 2."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep


def test_the_sweep_drops_deepspeed_zero_2_3_rows_under_a_pipeline():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[16], zero_framework="deepspeed", layout=ScenarioLayout(pp=1))
    res = sweep(profile, base, {"pp": [1, 2], "strategy": ["zero1", "zero2", "zero3"]})
    c = res.columns
    kept = sorted(zip(c["pp"].tolist(), c["strategy"].tolist(), strict=True))
    assert kept == [(1, "zero1"), (1, "zero2"), (1, "zero3"), (2, "zero1")]
    assert res.dropped_layout == 2
    assert "DeepSpeed refuses ZeRO-2/3 with pipeline parallelism" in res.layout_example
    # FSDP runs them (as no_sync ZeRO-2 under the pipeline): kept
    fsdp = sweep(profile, base.model_copy(update={"zero_framework": "fsdp"}),
                 {"pp": [1, 2], "strategy": ["zero1", "zero2", "zero3"]})
    assert fsdp.size == 6 and fsdp.dropped == 0


def test_goal_offers_no_plan_deepspeed_refuses(capsys):
    code, out, err = run_cli(capsys, ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--pp", "2", "--zero-framework", "deepspeed",
                                      "--train-samples", "1e6", "--deadline", "3d",
                                      "--budget", "100000", "--json"])
    assert code == 0, err
    answer = json.loads(out)
    plans = [answer["best"] or answer["closest"], *answer["front"]]
    assert plans and all(p["strategy"] in ("ddp", "zero1") for p in plans)
