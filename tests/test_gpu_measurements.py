"""The layout model against real one-device training steps measured on an NVIDIA H200
(benchmarks/results/h200-2026-11-30: gpu-check/ made by benchmarks/gpu_check.sh, block-sweep/
by its rerun-blocks.sh; README.md there, docs/calibration.md "GPU path"). Recorded measurements,
so these hold on any machine: they pin what a user's ``scalesim predict --profile P --workload
W`` gives from a GPU calibration."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from scalesim.plan import calibrated_hardware
from scalesim.predict import predict
from scalesim.presets import memory_bandwidth_of, peak_tflops_of
from scalesim.profiles import load_profile, resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
RESULTS = BENCHMARKS / "results" / "h200-2026-11-30"
STEPS = json.loads((RESULTS / "gpu-check" / "steps.json").read_text())["steps"]
SWEEP = RESULTS / "block-sweep"


@functools.cache
def _benchmark(name: str):
    """A module of ``benchmarks/`` (not a package), loaded once from its file."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _predicted_s(profile: Path, row: dict, tmp_path: Path) -> float:
    """The step the figures in docs/calibration.md came from: ``benchmarks/gpu_compare.py``,
    which predicts it as ``scalesim predict --profile P --workload SHAPE`` does."""
    return _benchmark("gpu_compare").predicted_step_s(str(profile), row, str(tmp_path))


def test_h200_steps_predicted_from_the_default_gpu_block(tmp_path):
    """The default GPU calibration (a block of 65,536 tokens) predicts four real GPT steps of
    the same run (0.36-3.7 B parameters, hidden 1024-8192) within 5.2 % on average (measured
    +5.4, +4.1, -3.5, -7.7 %)."""
    errors = np.array([_predicted_s(RESULTS / "gpu-check" / "gpu-profile.json", row, tmp_path)
                       / row["step_s_median"] - 1.0 for row in STEPS])
    assert np.mean(np.abs(errors)) < 0.07 and np.max(np.abs(errors)) < 0.10, errors


def test_a_launch_bound_block_is_worse_and_says_so(tmp_path):
    """The 4,096-token block of the first run was launch-bound: its fit is above the H200's
    datasheet peak, the planner's note says to time a larger block, and its predictions are
    further off than the 65,536-token block's."""
    small = SWEEP / "profile-block-b2.json"
    _, efficiency, note = calibrated_hardware(load_profile(str(small)))
    assert efficiency == 1.0 and "above the datasheet peak" in note
    from scalesim.calibration.summary import model_parallel_lines

    assert "launch-bound" in model_parallel_lines(load_profile(str(small)).model_parallel)[1]
    large = load_profile(str(SWEEP / "profile-block-b32.json")).model_parallel
    assert not any("launch-bound" in line for line in model_parallel_lines(large))
    small_err = np.mean([abs(_predicted_s(small, r, tmp_path) / r["step_s_median"] - 1.0)
                         for r in STEPS])
    large_err = np.mean([abs(_predicted_s(SWEEP / "profile-block-b32.json", r, tmp_path)
                             / r["step_s_median"] - 1.0) for r in STEPS])
    assert small_err > large_err + 0.05


def test_h200_datasheet_rows():
    """nvidia-smi names the SXM board 'NVIDIA H200' (device.txt there); NVL is its own row."""
    assert "NVIDIA H200" in (RESULTS / "gpu-check" / "device.txt").read_text()
    assert peak_tflops_of("NVIDIA H200")[0] == 989.0
    assert peak_tflops_of("NVIDIA H200 NVL")[0] == pytest.approx(835.5)
    assert peak_tflops_of("NVIDIA H200", fp8=True)[0] == 1979.0
    assert memory_bandwidth_of("NVIDIA H200")[0] == 4800.0
    assert memory_bandwidth_of("NVIDIA GH200 480GB")[0] == 4000.0


TRACES = RESULTS / "traces"


def test_a_real_h200_trace_reads_the_steps_its_cuda_events_timed():
    """torch.profiler traces of a one-GPU loop (benchmarks/gpu_trace.py, torch 2.11 on the
    H200): each step's device window is the span of the work its CPU step launched, so the
    trace's median step is the CUDA events' (22.28 / 36.03 ms) within 2 %, and the fused AdamW
    step is found (about 1.1 ms). The gpu_user_annotation alone ends before the optimizer's
    kernels there: it is shorter by about that much."""
    from scalesim.sources.trace_compute import read_rank
    from scalesim.trace_files import iter_trace

    timed = {r["micro_batch"]: r for r in json.loads(
        (TRACES / "trace-steps.json").read_text())["runs"]}
    for batch, row in timed.items():
        path = TRACES / row["trace"]
        rank = read_rank(path)
        assert rank.summary.device == "gpu" and rank.matched_gpu
        step = float(np.median([s.step_s for s in rank.summary.steps]))
        assert step == pytest.approx(row["profiled_step_s_median"], rel=0.02), (batch, step)
        assert 0.5e-3 < float(np.median(rank.optimizer_s)) < 0.1 * step
        annotated = [ev["dur"] * 1e-6 for _, ev in iter_trace(path, {})
                     if ev.get("cat") == "gpu_user_annotation"
                     and str(ev.get("name", "")).startswith("ProfilerStep#")]
        assert float(np.median(annotated)) < step - 0.5e-3


def _other_width_predictions():
    """(hidden, its block profile, per-shard times predicted from the default run's hidden-4096
    fit) for the block-shapes/ runs at hidden 2048 and 8192."""
    from scalesim.calibration.block_fit import Block, layer_time_s

    ref = load_profile(str(RESULTS / "gpu-check" / "gpu-profile.json")).model_parallel
    for hidden in (2048, 8192):
        mp = load_profile(str(RESULTS / "block-shapes" / f"block-h{hidden}.json")).model_parallel
        b = mp.block
        block = Block(b.hidden, b.heads, b.ffn_hidden, b.seq_len, b.micro_batch,
                      b.flash_attention)
        yield hidden, mp, layer_time_s(block, [p.tp for p in mp.points],
                                       ref.sustained_tflops * 1e12, ref.memory_bandwidth_GBps * 1e9)


def test_the_h4096_block_predicts_the_shards_of_other_widths():
    """Tensor-parallel shards of other blocks on the same H200 (hidden 2048 and 8192, tp 1-8,
    block-shapes/), predicted with the default run's fit at hidden 4096: the layout model's
    per-shard time within 14 % each, 5.5 % on average (measured +14.0, +7.9, +4.8, +1.9 and
    -6.1, -5.7, -2.7, +1.2 %)."""
    errors = []
    for _, mp, predicted in _other_width_predictions():
        measured = np.array([p.time_s for p in mp.points])
        errors += list(predicted / measured - 1.0)
    assert np.max(np.abs(errors)) < 0.15 and np.mean(np.abs(errors)) < 0.07, errors


def test_predict_and_plan_split_the_same_calibrated_compute():
    """On the H200 profile with another model (gpt-1.7b) at tp 2, ``predict`` (compute curve
    from the shape, then pinned) and the planner's layout evaluation (the block calibration's
    efficiency and kernel byte rate) give the same compute: one reading of the calibration."""
    from scalesim.layout import ParallelLayout
    from scalesim.plan import evaluate_layout, setting_from_profile

    path = RESULTS / "gpu-check" / "gpu-profile.json"
    profile = resolve_profile(str(path), None, "gpt-1.7b")
    scenario = Scenario(devices=[2], devices_per_node=2, micro_batch=4,
                        layout=ScenarioLayout(tp=2, pp=1, recompute="none"))
    predicted = predict(profile, scenario)[0].compute_s
    base = load_profile(str(path))
    two = base.model_copy(update={"hardware": base.hardware.model_copy(
        update={"devices_per_node": 2})})
    setting = setting_from_profile(two, profile.workload.transformer, 4,
                                   params=profile.workload.params)
    planned = float(evaluate_layout(setting, ParallelLayout(dp=1, tp=2, micro_batch=4,
                                                            global_batch=4)).compute_s)
    assert predicted == pytest.approx(planned, rel=1e-9)


def _pct(x: float) -> str:
    """A relative error as docs/calibration.md writes it: '+5.4 %', '−23.4 %'."""
    return f"{100 * x:+.1f} %".replace("-", "\u2212")


def test_the_docs_tables_are_these_predictions(tmp_path):
    """docs/calibration.md "GPU path" quotes the four steps' predictions (this calibration and
    the datasheet at the default efficiency), the shard table of the other widths and their
    mean errors, and README.md the 5.2 % mean: each is what the code predicts today from the
    recorded files (the numbers a user comparing them with their own run reads)."""

    root = BENCHMARKS.parent
    doc = (root / "docs" / "calibration.md").read_text()
    compare = _benchmark("gpu_compare")
    mine, sheet = [], []
    for row in STEPS:
        h, layers, s, mb = (int(x) for x in re.findall(r"\d+", row["name"]))
        line = next(x for x in doc.splitlines() if x.startswith(f"| h{h} L{layers} s{s} mb{mb} "))
        measured = row["step_s_median"]
        ours = compare.predicted_step_s(str(RESULTS / "gpu-check" / "gpu-profile.json"), row,
                                        str(tmp_path))
        datasheet = compare.predicted_step_s(str(RESULTS / "gpu-check" / "gpu-profile.json"), row,
                                             str(tmp_path), datasheet=True)
        mine.append(abs(ours / measured - 1))
        sheet.append(abs(datasheet / measured - 1))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1:] == [f"{measured * 1e3:.1f} ms",
                             f"{ours * 1e3:.1f} ms ({_pct(ours / measured - 1)})",
                             f"{datasheet * 1e3:.1f} ms ({_pct(datasheet / measured - 1)})"], line
    mean_row = next(x for x in doc.splitlines() if x.startswith("| mean \\|error\\| |"))
    assert mean_row == (f"| mean \\|error\\| | | **{100 * np.mean(mine):.1f} %** | "
                        f"{100 * np.mean(sheet):.1f} % |")
    assert f"within {100 * np.mean(mine):.1f} % on average" in (root / "README.md").read_text()

    errors = []
    for hidden, mp, predicted in _other_width_predictions():
        line = next(x for x in doc.splitlines() if x.startswith(f"| hidden {hidden}: measured"))
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        for i, (p, t) in enumerate(zip(mp.points, predicted, strict=True)):
            unit = " ms" if i == 0 else ""
            assert cells[i] == (f"{p.time_s * 1e3:.1f} \u2192 {t * 1e3:.1f}{unit} "
                                f"({_pct(t / p.time_s - 1)})"), (hidden, cells[i])
            errors.append(abs(t / p.time_s - 1))
    assert f"Mean |error| {100 * np.mean(errors):.1f} % (`tests/test_gpu_measurements.py`)" in doc


def test_the_block_size_table_is_these_fits_and_predictions(tmp_path):
    """docs/calibration.md's table of the first run's block sizes: each row's fit (F, B, rel.
    RMSE, as the recorded profile holds it) and the mean |error| its profile predicts the four
    steps with today."""
    doc = (BENCHMARKS.parent / "docs" / "calibration.md").read_text()
    for name in ("b2", "b8", "b32"):
        path = SWEEP / f"profile-block-{name}.json"
        mp = load_profile(str(path)).model_parallel
        tokens = mp.block.micro_batch * mp.block.seq_len
        line = next(x.strip() for x in doc.splitlines() if x.strip().startswith(f"| {tokens:,} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1].split()[0] == f"{mp.sustained_tflops:,.0f}", line
        assert cells[2] == f"{mp.memory_bandwidth_GBps:,.0f}", line
        assert cells[3] == f"{100 * mp.rel_rmse:.1f} %", line
        mean = np.mean([abs(_predicted_s(path, r, tmp_path) / r["step_s_median"] - 1.0)
                        for r in STEPS])
        assert cells[4] == f"{100 * mean:.1f} %", line
