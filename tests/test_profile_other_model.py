"""``predict --profile P --workload W`` where W is not the model P timed
(``profiles.resolve_profile``): W's compute comes from its shape on P's device, the way
``scalesim plan --profile`` evaluates it, and only where the block calibration describes the
device W runs on. The recorded H200 block calibration serves as P (benchmarks/results/
h200-2026-11-30/gpu-check)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from h200_gpt import H200, gpt_workload_file

from scalesim.model.layout_step import evaluate_layouts
from scalesim.plan import setting_from_profile, setting_inputs
from scalesim.predict import predict
from scalesim.presets import get_hardware
from scalesim.profiles import (
    compute_curve_from_shape,
    load_profile,
    load_workload,
    resolve_profile,
)
from scalesim.schemas import Scenario, ScenarioLayout, TransformerShape


def _workload(tmp_path: Path, layers: int = 9, **shape) -> str:
    """A GPT workload file (fp32 weights and gradients, AdamW, as the H200 steps ran)."""
    return gpt_workload_file(tmp_path / f"gpt-l{layers}.json", layers=layers,
                             flash_attention=True, **shape)


def _compute_s(profile, tp: int) -> float:
    scenario = Scenario(devices=[tp], micro_batch=4, devices_per_node=8,
                        layout=ScenarioLayout(tp=tp, pp=1, recompute="none"))
    return predict(profile, scenario)[0].compute_s


def _planned_s(profile_path, shape, tp: int) -> float:
    """The planner's compute of ``shape`` at ``tp`` on the profile (``plan --profile``), with
    the bytes per parameter the workload file states."""
    setting = setting_from_profile(load_profile(profile_path), shape.transformer, 4,
                                   params=shape.params)
    setting = setting.replace(
        param_bytes_per_param=4, grad_bytes_per_param=4, optimizer_bytes_per_param=8,
        hardware=setting.hardware.model_copy(update={"devices_per_node": 8}))
    return float(evaluate_layouts(setting_inputs(setting, tp=tp, micro_batch=4,
                                                 global_batch=4)).compute_s)


def test_tensor_parallel_shards_predict_as_the_planner_evaluates_them(tmp_path):
    """The block fit's kernel byte rate reaches predict's layout model too: a tp 2-8 shard of
    W computes in the time ``plan --profile`` gives it (before: the pinned efficiency took the
    fitted byte rate as matmul time, and tp 8 came out 32 % faster than the planner's)."""
    path = _workload(tmp_path)
    profile = resolve_profile(str(H200), None, path)
    assert not profile.compute.measured and "another model" in profile.notes[-1]
    shape = load_workload(path)
    for tp in (1, 2, 4, 8):
        assert _compute_s(profile, tp) == pytest.approx(_planned_s(H200, shape, tp), rel=1e-6), tp


def test_the_block_fit_of_one_device_is_not_used_for_another(tmp_path):
    """``--hardware dgx-a100`` with an H200 profile: the H200's fitted efficiency and byte
    rate do not describe an A100, so W's compute is the A100's datasheet at the published
    default efficiency, and the note says why (before: the H200's 989 TFLOP/s peak with the
    A100's name, which predict then clipped to 100 % of the A100)."""
    path = _workload(tmp_path)
    profile = resolve_profile(str(H200), "dgx-a100", path)
    expected, _ = compute_curve_from_shape(load_workload(path), get_hardware("dgx-a100"))
    assert profile.compute.per_sample_s == pytest.approx(expected.per_sample_s, rel=1e-9)
    assert profile.compute.overhead_s == pytest.approx(expected.overhead_s, rel=1e-9, abs=1e-12)
    assert "NVIDIA H200" in profile.notes[-1] and "does not describe" in profile.notes[-1]
    assert profile.hardware.kernel_bandwidth_GBps is None
    # the same device under another name (a preset's) keeps the block calibration
    same = resolve_profile(str(H200), None, path)
    assert "block calibration" in same.notes[-1] and "does not describe" not in same.notes[-1]


def test_what_stays_as_measured(tmp_path):
    """The calibrated model itself, and a workload given by its parameter count only, keep
    the measured curve (and the hardware gets no kernel byte rate)."""
    base = load_profile(H200)
    same = resolve_profile(str(H200), None, _workload(tmp_path, layers=8))
    assert same.compute == base.compute and same.hardware.kernel_bandwidth_GBps is None
    counted = tmp_path / "count.json"
    counted.write_text(json.dumps({"schema_version": "scalesim-workload/1", "name": "count",
                                   "params": 3e9, "micro_batch": 4}))
    kept = resolve_profile(str(H200), None, str(counted))
    assert kept.compute == base.compute and "stays as measured" in kept.notes[-1]


def test_a_profile_written_before_its_device_was_listed_gets_the_datasheet_peak():
    """The first H200 run wrote its profile before the H200 rows existed (no peak in it): its
    block fit (3,250 TFLOP/s, launch-bound) is now read against the listed 989 TFLOP/s peak,
    clipped to efficiency 1 and named, as predict's peak (``profiles.device_peak_tflops``) reads the
    same table; a 4-byte (fp32) block is not held to the 16-bit peak."""
    from scalesim.plan import calibrated_hardware

    first = load_profile(H200.parents[1] / "first-run" / "gpu-profile.json")
    assert first.model_parallel.peak_tflops is None and first.hardware.peak_tflops is None
    hw, efficiency, note = calibrated_hardware(first)
    assert hw.peak_tflops == 989.0 and efficiency == 1.0 and "above the datasheet peak" in note
    block = first.model_parallel.block.model_copy(update={"element_bytes": 4.0})
    fp32 = first.model_copy(update={"model_parallel": first.model_parallel.model_copy(
        update={"block": block})})
    hw, efficiency, note = calibrated_hardware(fp32)
    assert efficiency == 1.0 and "no datasheet peak" in note


def test_a_shape_spelled_out_is_the_same_model(tmp_path):
    """A measured profile whose model has a shape keeps its curve for a workload of that shape
    written with its defaults spelled out (kv_heads = heads, ffn_hidden = 4 x hidden): the
    same model, not another."""
    base = load_profile(H200)
    shape = TransformerShape(layers=8, hidden=1024, heads=16, seq_len=1024, vocab=50304,
                             flash_attention=True)
    data = base.model_dump(mode="json")
    data["workload"]["transformer"] = shape.model_dump(mode="json")
    with_shape = tmp_path / "with-shape.json"
    with_shape.write_text(json.dumps(data))
    spelled = _workload(tmp_path, layers=8, kv_heads=16, ffn_hidden=4096)
    kept = resolve_profile(str(with_shape), None, spelled)
    assert kept.compute == base.compute and "stays as measured" in kept.notes[-1]
    other = resolve_profile(str(with_shape), None, _workload(tmp_path, layers=8, kv_heads=4))
    assert not other.compute.measured  # grouped-query attention: another model


def test_a_calibrated_cpu_predicts_another_model_from_its_block_fit(tmp_path):
    """A CPU has no datasheet peak or bandwidth: its block fit is all there is (the sustained
    rate as the peak, the fitted byte rate for kernels and the optimizer, docs/model.md §13).
    W's layouts predict on it as the planner evaluates them (before: predict stopped with 'no
    memory_bandwidth_GBps')."""
    data = load_profile(H200).model_dump(mode="json")
    data["hardware"]["device_name"] = "CPU: some Xeon"
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None)
    data["model_parallel"]["block"]["element_bytes"] = 4.0
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps(data))
    path = _workload(tmp_path)
    profile = resolve_profile(str(cpu), None, path)
    shape = load_workload(path)
    for tp in (1, 2):
        assert _compute_s(profile, tp) == pytest.approx(_planned_s(cpu, shape, tp), rel=1e-6), tp


def test_the_measured_curve_of_one_device_is_not_used_for_another(tmp_path, capsys):
    """``--profile P --hardware H`` where H is another device and P's own model stays: P's
    compute times describe P's device only, so the command is refused in one line naming both
    devices (before: the H200's step times printed under the A100's name, one note at the
    end). The same device under another name (a hardware file of other servers and links)
    keeps the measured curve."""
    from cli_harness import run_cli

    from scalesim.errors import ScalesimError

    with pytest.raises(ScalesimError, match=r"A100-SXM4 80GB.*NVIDIA H200"):
        resolve_profile(str(H200), "dgx-a100")
    counted = tmp_path / "count.json"  # a parameter count keeps the measured curve: refused too
    counted.write_text(json.dumps({"schema_version": "scalesim-workload/1", "name": "count",
                                   "params": 3e9, "micro_batch": 4}))
    with pytest.raises(ScalesimError, match="describe"):
        resolve_profile(str(H200), "dgx-a100", str(counted))
    code, out, err = run_cli(capsys, ["predict", "--profile", str(H200), "--hardware",
                                      "dgx-h100", "--devices", "1,8"])
    assert code == 2 and out == "" and err.count("\n") == 1 and "--hardware" in err, err
    base = load_profile(H200)
    same = tmp_path / "h200-cluster.json"
    same.write_text(base.hardware.model_copy(update={"name": "h200-cluster",
                                                     "devices_per_node": 4})
                    .model_dump_json())
    kept = resolve_profile(str(H200), str(same))
    assert kept.compute == base.compute and kept.hardware.devices_per_node == 4
