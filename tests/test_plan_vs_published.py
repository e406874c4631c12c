"""benchmarks/plan_vs_published.py (session 44): the planner's search on a published case's own
inputs. Its per-layout framework rules are the validator's (hand-checked on a torchtitan grid,
and reproducing the validator's prediction of every published layout), a published layout the
search holds is found and never beaten by a worse one, and docs/validation.md's rows are what
the benchmark gives. No time is asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.transformer import RECOMPUTE
from scalesim.shipped import validation_path
from scalesim.validate_parallel import case_inputs, load_parallel_cases, validate_parallel_cases

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("plan_vs_published_bench",
                                              ROOT / "benchmarks" / "plan_vs_published.py")
BENCH = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(BENCH)


@pytest.fixture(scope="module")
def shipped():
    """{case id: (case, the group's pinned efficiency)} of both shipped files."""
    out = {}
    for name in BENCH.FILES:
        cases = load_parallel_cases(validation_path(name))
        eff = {r.id: r.efficiency for r in validate_parallel_cases(cases).cases}
        out.update({c.id: (c, eff[c.id]) for c in cases if c.id in eff})
    return out


def test_framework_fields_by_hand_on_a_torchtitan_grid(shipped):
    # torchtitan, December 2024: tp overlap from 2024 (tp > 1 only), float32 reduce-scatter
    # from ZeRO-2, early stop for full recompute, per-op SAC for selective; no BACKWARD_POST
    case, _ = shipped["torchtitan_llama31_8b_fsdp8_eager"]
    grid = {"zero": np.array([0, 3, 2]), "tp": np.array([1, 8, 2]),
            "recompute": np.array([RECOMPUTE["full"], RECOMPUTE["selective"], RECOMPUTE["none"]])}
    f = BENCH.framework_fields(case, grid)
    assert f["tp_overlap"].tolist() == [False, True, True]
    assert np.isnan(f["reduce_bytes_per_param"][0])
    assert f["reduce_bytes_per_param"][1:].tolist() == [4.0, 4.0]
    assert f["recompute_early_stop"].tolist() == [True, False, False]
    assert f["recompute_op_sac"].tolist() == [False, True, False]
    assert not np.any(f["fsdp_backward_prefetch_post"])
    # Narayanan 2021: no tp overlap (before 2024), whole-forward recompute; fp16-mixed, so its
    # DDP (ZeRO 0) reduces its fp16 main grads, 2 bytes, and the FSDP stages take the default
    old, _ = shipped["narayanan2021_t1_18p4b"]
    g = BENCH.framework_fields(old, grid)
    assert not np.any(g["tp_overlap"]) and g["reduce_bytes_per_param"][0] == 2.0
    assert np.all(np.isnan(g["reduce_bytes_per_param"][1:]))
    assert not np.any(g["recompute_early_stop"]) and not np.any(g["recompute_op_sac"])


def test_the_per_layout_rules_reproduce_the_validator_on_every_published_layout(shipped):
    assert len(shipped) == 190  # every case of both files is predicted
    for case, eff in shipped.values():
        x, layout = case_inputs(case, [])
        x = x.replace(efficiency=eff)
        again = x.replace(**BENCH.framework_fields(case, BENCH.published_grid(layout)))
        assert float(evaluate_layouts(again).step_time_s) == float(evaluate_layouts(x).step_time_s)


@pytest.mark.parametrize("case_id", ["llmfoundry_h100_7b_s2048_8gpu", "narayanan2021_t1_1p7b"])
def test_a_published_layout_the_search_holds_is_found_and_not_beaten_by_a_slower_one(
        shipped, case_id):
    case, eff = shipped[case_id]
    x, layout = case_inputs(case, [])
    x = x.replace(efficiency=eff)
    pub = evaluate_layouts(x)
    grid, r = BENCH.searched(case, x)
    same = np.ones(grid["dp"].size, dtype=bool)
    for k, v in BENCH.published_grid(layout).items():
        if k == "shard_group":
            continue
        same &= grid[k] == v
    same &= grid["shard_group"] == layout.dp * layout.cp  # full sharding, as published
    (i,) = np.flatnonzero(same)
    assert r.samples_per_s[i] == pytest.approx(float(pub.samples_per_s), rel=1e-12)
    row = BENCH.case_row(case, eff)
    assert row["ratio"] >= 1.0 and bool(r.fits[i])
    assert row["ratio"] == pytest.approx(float(r.samples_per_s[r.fits].max()) / float(pub.samples_per_s))


@pytest.mark.parametrize("case_id", ["nemo2407_h100_nemotron_22b", "narayanan2021_t1_18p4b",
                                     "torchtitan_llama31_405b_fsdp8_tp8_pp8_1f1b_compile_fp8",
                                     "llmfoundry_a100_bf16_13b_s4096_8gpu"])
def test_the_recorded_rows_are_the_benchmarks(shipped, case_id):
    section = (ROOT / "docs" / "validation.md").read_text().split(
        "## Planner against the published layouts")[1]
    case, eff = shipped[case_id]
    r = BENCH.case_row(case, eff)
    line = (f"| {r['id']} | {r['devices']} | {r['published']} | "
            f"{'yes' if r['published_fits'] else 'NO'} ({r['published_gib']:.0f} GiB) | "
            f"{r['best']} | {r['ratio']:.3f} |")
    assert line in section

