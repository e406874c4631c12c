"""A calibrated profile remembers the transformer it timed (``ComputeCurve.model_shape``), and
``--profile P --workload W`` decides with it whether W is that model
(``profiles.model_match``, ``profiles.workload_compute``): the same model keeps the measured
curve, the same transformer at another sequence length scales it by the layout model's
per-sample ratio, another model is estimated from its shape. ``scalesim plan --profile`` takes
the same decision through the same function.

Hand-computed figures: forward FLOPs per token of a GPT are ``L(2W + 4sh) + 2hV`` with
``W = 12h^2`` (docs/model.md §11), so a sequence of s tokens costs ``3s`` times that.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from cli_harness import run_cli
from h200_gpt import H200, TIMED, gpt_workload_file

from scalesim import builtin_gpt
from scalesim.predict import predict
from scalesim.profiles import (
    load_profile,
    measured_shape,
    model_match,
    profile_with_workload,
    resolve_profile,
)
from scalesim.schemas import Scenario, ScenarioLayout, TransformerShape, Workload

ROOT = Path(__file__).resolve().parents[1]


def flops_per_sequence(layers: int, hidden: int, seq_len: int, vocab: int) -> float:
    """Model FLOPs of one sequence of a GPT (kv = heads, f = 4h, tied), by hand: 3 x forward."""
    return 3 * seq_len * (layers * (2 * 12 * hidden**2 + 4 * seq_len * hidden)
                          + 2 * hidden * vocab)


def gpt_workload(tmp_path: Path, seq_len: int = 1024, name: str = "", **shape) -> str:
    """A workload file of the H200 run's GPT (fp32 weights, AdamW) at ``seq_len``."""
    return gpt_workload_file(tmp_path / f"{name or 'gpt'}-s{seq_len}.json", seq_len=seq_len,
                             **shape)


def test_a_profile_written_before_the_record_loads_and_its_gpt_is_read_from_its_name():
    """The H200 profile (written before ``model_shape`` existed) loads as it is; its built-in
    gpt's shape comes back from its name, with fused attention (it ran on GPUs, backend nccl),
    because that shape counts the profile's 153,331,712 parameters exactly. A name that does
    not count them, or a CPU run, reads otherwise."""
    base = load_profile(H200)
    assert base.compute.model_shape is None and base.workload.transformer is None
    shape = measured_shape(base)
    assert shape == TransformerShape(**TIMED, flash_attention=True)
    assert shape.param_count() == base.workload.params == 153_331_712
    off = base.model_copy(update={"workload": base.workload.model_copy(update={"params": 1.5e8})})
    assert measured_shape(off) is None
    cpu = base.model_copy(update={"fingerprint": base.fingerprint.model_copy(
        update={"backend": "gloo"})})
    assert measured_shape(cpu).flash_attention is False
    assert builtin_gpt.shape_from_name("gpt(width=100, depth=2, seq=8, vocab=9)", False) \
        .heads == 1
    assert builtin_gpt.shape_from_name("mlp(width=1024, depth=4)", False) is None


def test_which_workload_is_the_timed_model():
    """Same: the shape with its defaults spelled out or another attention kernel, and a
    parameter count. Sequence: only the sequence differs. Other: anything else (a layer more,
    grouped-query attention, a sequence and a layer). A curve that was not measured is an
    estimate of the profile's own workload: kept for that model, and for a parameter count;
    another model's compute comes from its shape (it was kept: a saved preset profile's
    bert-large estimate pinned llama3-8b 27 % faster than the presets predict it)."""
    base = load_profile(H200)

    def wl(**change) -> Workload:
        s = TransformerShape(**{**TIMED, **change})
        return Workload(name="w", params=s.param_count(), transformer=s)

    assert model_match(base, wl()) == "same"
    assert model_match(base, wl(kv_heads=16, ffn_hidden=4096, flash_attention=False)) == "same"
    assert model_match(base, Workload(name="count", params=3e9)) == "same"
    assert model_match(base, wl(seq_len=2048)) == "sequence"
    assert model_match(base, wl(seq_len=512)) == "sequence"
    assert model_match(base, wl(layers=9)) == "other"
    assert model_match(base, wl(kv_heads=4)) == "other"
    assert model_match(base, wl(layers=9, seq_len=2048)) == "other"
    estimated = base.model_copy(update={"compute": base.compute.model_copy(
        update={"measured": False})})
    assert model_match(estimated, wl(seq_len=2048)) == "other"
    assert model_match(estimated, Workload(name="count", params=3e9)) == "same"
    own = estimated.model_copy(update={"workload": wl()})
    assert model_match(own, wl()) == "same" and model_match(own, wl(seq_len=2048)) == "other"


def test_a_saved_preset_profile_predicts_another_model_as_the_presets_do(tmp_path):
    """`calibrate --from-nccl-tests node.txt --out my.json` keeps the presets' estimated
    bert-large compute; `predict --profile my.json --workload llama3-8b` kept that curve for
    llama3-8b and pinned its matmul efficiency to it (1.93 s of compute against 2.64 s from the
    presets on the same A100 40GB), saying 'compute stays as measured' of nothing measured. It
    is the presets' estimate now, and the note says why."""
    from scalesim.presets import HARDWARE, WORKLOADS
    from scalesim.profiles import profile_from_presets

    saved = tmp_path / "my.json"
    saved.write_text(profile_from_presets(HARDWARE["a2-highgpu-8g"],
                                          WORKLOADS["bert-large"]).model_dump_json())
    scenario = Scenario(devices=[8], micro_batch=1)
    mine = resolve_profile(str(saved), None, "llama3-8b")
    presets_row = predict(resolve_profile(None, "a2-highgpu-8g", "llama3-8b"), scenario)[0]
    assert predict(mine, scenario)[0].compute_s == pytest.approx(presets_row.compute_s, rel=1e-9)
    assert "compute stays as measured" not in mine.notes[-1]
    assert "its compute was estimated, not measured" in mine.notes[-1]


def test_the_timed_gpt_at_twice_the_sequence_scales_its_measured_curve(tmp_path):
    """The H200 gpt at s = 2048 (before: the measured s = 1024 curve reused as it was, so a
    sample of twice the tokens cost the same). Its per-sample time is the measured one times
    the layout model's ratio at the block calibration; that ratio lies between the FLOPs ratio
    and the fused-attention time ratio (the core's backward is 2.5 x its forward, §13), both by
    hand, less the bytes that grow with tokens only. Fixed time per micro-step as measured;
    the optimizer sweep scales with the parameters (the s x h position table)."""
    base = load_profile(H200)
    profile = resolve_profile(str(H200), None, gpt_workload(tmp_path, 2048))
    ratio = profile.compute.per_sample_s / base.compute.per_sample_s
    flops = flops_per_sequence(8, 1024, 2048, 50304) / flops_per_sequence(8, 1024, 1024, 50304)
    assert flops == pytest.approx(2.19860, abs=1e-5)  # 2 x 371,458,048 / 337,903,616

    def fused(s):  # time units per token: weights 3 x 2W, core 2 x 2sh forward + 5 x 2sh back
        return 8 * (6 * 12 * 1024**2 + 14 * s * 1024) + 6 * 1024 * 50304

    assert 2 < 2 * fused(2048) / fused(1024) - 0.2 < ratio < 2 * fused(2048) / fused(1024)
    assert ratio == pytest.approx(2.1039, abs=1e-3)  # the layout model's, at the H200's fit
    c = profile.compute
    assert c.overhead_s == base.compute.overhead_s and not c.measured and c.points == []
    assert c.optimizer_step_s == pytest.approx(base.compute.optimizer_step_s * (
        153_331_712 + 1024 * 1024) / 153_331_712, rel=1e-12)
    assert c.model_shape.seq_len == 2048 and c.model_shape.flash_attention
    assert "sequence 2048 instead of 1024" in profile.notes[-1] and "x 2.104" in profile.notes[-1]
    # predict charges it: the per-sample time between two micro-batches, through the layout path
    per_sample = []
    for p in (base, profile):
        rows = [predict(p, Scenario(devices=[1], micro_batch=b))[0] for b in (4, 8)]
        per_sample.append((rows[1].compute_s - rows[0].compute_s) / 4)
    assert per_sample[1] / per_sample[0] == pytest.approx(ratio, rel=1e-9)
    assert per_sample[1] > 2 * per_sample[0]


def test_without_bytes_the_ratio_is_the_flops_formulas(tmp_path):
    """With bytes free against the matmuls (a block fit of 1 GFLOP/s and 100 TB/s) and an unfused
    attention core, the scale of a sequence change is exactly the FLOPs formula's ratio: the
    tiny CPU gpt of the calibration tests at s = 128 against s = 64 costs 32/15 = 2.1333 x per
    sample (h 128, L 2, V 512: 2 x 1,048,576 / 983,040 by hand)."""
    data = load_profile(H200).model_dump(mode="json")
    shape = builtin_gpt.shape_of(128, 2, 64, 512, False)
    data["hardware"]["device_name"] = "CPU: some Xeon"
    data["fingerprint"]["backend"] = "gloo"
    data["workload"].update(name=builtin_gpt.name_of(128, 2, 64, 512), params=shape.param_count())
    data["compute"]["model_shape"] = shape.model_dump(mode="json")
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None,
                                  sustained_tflops=1e-3, memory_bandwidth_GBps=1e5)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    base = load_profile(path)
    twice = shape.model_copy(update={"seq_len": 128})
    profile, match = profile_with_workload(
        base, Workload(name="s128", params=twice.param_count(), transformer=twice), "s128")
    assert match == "sequence"
    assert flops_per_sequence(2, 128, 128, 512) / flops_per_sequence(2, 128, 64, 512) == 32 / 15
    assert profile.compute.per_sample_s / base.compute.per_sample_s == pytest.approx(
        32 / 15, rel=1e-5)


def test_a_block_byte_rate_slower_than_the_timed_model_still_reproduces_it(tmp_path):
    """A CPU's block fit can find a byte rate at which the timed model's kernel bytes alone
    take longer than its measured micro-step (its small tensors stay in cache; measured here:
    87-98 % of the tiny gpt's micro-step at batch 2 on this machine's fits). Efficiency 1 then
    cannot reach the curve; the kernel rate rises until the bytes fit, so predict (and the
    planner, which pins alike) still reproduces the measured micro-step exactly (before: the
    efficiency clipped at 1 and the step came out above the measurement); the optimizer step is
    the measured 1 ms."""
    data = load_profile(H200).model_dump(mode="json")
    shape = builtin_gpt.shape_of(128, 2, 64, 512, False)
    data["hardware"]["device_name"] = "CPU: some Xeon"
    data["workload"].update(name=builtin_gpt.name_of(128, 2, 64, 512), params=shape.param_count())
    data["compute"].update(model_shape=shape.model_dump(mode="json"), overhead_s=1e-3,
                           per_sample_s=2e-4, optimizer_step_s=1e-3)
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None,
                                  memory_bandwidth_GBps=0.5)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    own = gpt_workload(tmp_path, 64, "tiny", layers=2, hidden=128, heads=2, vocab=512)
    profile = resolve_profile(str(path), None, own)
    assert "stays as measured" in profile.notes[-1]
    optimizer_s = 1e-3  # measured, all parameters on one device
    for b in (1, 4, 16):
        row = predict(profile, Scenario(devices=[1], micro_batch=b))[0]
        assert row.compute_s - optimizer_s == pytest.approx(1e-3 + 2e-4 * b, rel=1e-9), b


def test_plan_profile_takes_the_same_decision(tmp_path, capsys):
    """``scalesim plan --profile`` with the timed model ranks on its measured curve (each
    layout's efficiency pinned as predict pins it, so a row's compute is predict's for that
    layout), with ``--seq-len 2048`` on the scaled curve, and with another model on the block
    fit; the first line says which."""
    same = gpt_workload(tmp_path)
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), "--workload", same,
                                      "--devices", "1", "--global-batch", "8", "--json"])
    assert code == 0, err
    rows = json.loads(out)["layouts"]
    plain = next(r for r in rows if r["tp"] == 1 and r["pp"] == 1 and r["recompute"] == "none"
                 and r["zero"] == 0)
    profile = resolve_profile(str(H200), None, same)
    layout = ScenarioLayout(tp=1, pp=1, recompute="none")
    predicted = predict(profile, Scenario(devices=[1], micro_batch=plain["micro_batch"],
                                          accumulation=plain["accumulation"], layout=layout))[0]
    assert plain["breakdown_s"]["compute_s"] == pytest.approx(predicted.compute_s, rel=1e-9)
    for argv, words in (([same], "compute stays as measured"),
                        ([same, "--seq-len", "2048"], "sequence 2048 instead of 1024"),
                        ([gpt_workload(tmp_path, name="l9", layers=9)], "calibrated: matmul efficiency")):
        code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), "--workload", *argv,
                                          "--devices", "1", "--global-batch", "8", "--top", "1"])
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].startswith(f"workload: {argv[0]}: "), lines[0]  # the planned model
        assert words in lines[1], lines[1]
        if words != "calibrated: matmul efficiency":
            assert "pinned to that curve" in lines[1]


def test_plan_profile_rows_are_predicts_at_every_device_count(tmp_path, capsys):
    """A curve timed with 2 devices of a server busy (10 % slower than one alone): the planner
    on it pins each row at that row's busy devices, as predict does, so its 1- and 2-device
    rows both compute what predict gives them (one pin for the whole list would have slowed
    the 1-device rows by 10 %)."""
    data = load_profile(H200).model_dump(mode="json")
    data["compute"].update(colocated_devices=2, colocation_slowdown=0.1)
    data["hardware"]["devices_per_node"] = 2
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    same = gpt_workload(tmp_path)
    code, out, err = run_cli(capsys, ["plan", "--profile", str(path), "--workload", same,
                                      "--devices", "1,2", "--global-batch", "8", "--top", "500",
                                      "--json"])
    assert code == 0, err
    profile = resolve_profile(str(path), None, same)
    plain = [r for r in json.loads(out)["layouts"] if r["tp"] == 1 and r["pp"] == 1 and r["zero"] == 0
             and r["recompute"] == "none"]
    assert {r["devices"] for r in plain} == {1, 2}
    for r in plain:
        scenario = Scenario(devices=[r["devices"]], micro_batch=r["micro_batch"],
                            accumulation=r["accumulation"],
                            layout=ScenarioLayout(tp=1, pp=1, recompute="none"))
        assert r["breakdown_s"]["compute_s"] == pytest.approx(
            predict(profile, scenario)[0].compute_s, rel=1e-9), r


def declared_gpt(layers: int = 2):
    """A user's factory (``test_profile_shape:declared_gpt``): a small GPT whose make_batch
    declares its architecture as ``transformer`` (here: two layers, hidden 128)."""
    from scalesim.calibration.models import builtin

    bundle = builtin("gpt", 128, 2, 64, 512, 32)

    def make_batch(b):
        return bundle.make_batch(b)

    make_batch.transformer = {"layers": layers, "hidden": 128, "heads": 2, "seq_len": 64,
                              "vocab": 512, "flash_attention": True}
    return bundle.model, make_batch


def misdeclared_gpt():
    return declared_gpt(layers=4)


def test_a_factory_model_declares_its_transformer():
    """``--model package.module:factory`` records the shape its make_batch declares (its
    attention kernel as declared), checked against the model's own parameter count; a shape
    that counts other parameters is one clear line."""
    from scalesim.calibration.models import from_factory

    from scalesim.errors import ScalesimError

    bundle = from_factory("test_profile_shape:declared_gpt")
    assert bundle.transformer == builtin_gpt.shape_of(128, 2, 64, 512, True)
    assert not bundle.attention_by_device
    # two more layers of 12h^2 + 13h = 198,272 parameters each (h = 128), by hand
    with pytest.raises(ScalesimError, match="counts 867,072 parameters, the model has 470,528"):
        from_factory("test_profile_shape:misdeclared_gpt")


# --------------------------------------------------------------- a real CPU calibration



@pytest.mark.slow
def test_a_cpu_calibration_records_its_gpt_and_predicts_it_at_twice_the_sequence(tmp_path,
                                                                                 tiny_gpt):
    """One real calibration of the tiny gpt on this CPU (one process, compute phase and the
    block, about 10 s; run again, up to three times, where other work spoiled the block's
    timings so that no fit came out: 1 run in 17 here at load 5). The profile records its
    shape; predicted at its own sequence it reproduces the measured micro-step (the fitted
    curve exactly, each timed point within sqrt(n) x the fit's relative RMS error, a bound
    that holds by the error's definition); at twice the sequence a sample costs more than
    twice as much: by the FLOPs formula's ratio (32/15 = 2.133, by hand) to at most 7 %
    above it, whatever byte rate the block fit found on a busy machine (the layout model's
    ratio for this shape runs from 2.133 with free bytes to 2.271 with bytes only: unfused
    scores, 13as bytes a token, grow with the sequence)."""
    base, why, out = tiny_gpt  # conftest: one calibration for this file and test_profile_split
    assert base is not None and base.model_parallel is not None, why
    assert base.compute.model_shape == builtin_gpt.shape_of(128, 2, 64, 512, False)
    assert base.compute.model_shape.param_count() == base.workload.params
    assert base.hardware.memory_bandwidth_GBps is None  # a CPU: the block fit's rate serves

    def curve_of(seq_len: int):
        path = gpt_workload(tmp_path, seq_len, "tiny", layers=2, hidden=128, heads=2, vocab=512)
        profile = resolve_profile(str(out), None, path)
        rows = {b: predict(profile, Scenario(devices=[1], micro_batch=b))[0] for b in (4, 16)}
        return profile, rows

    own, rows = curve_of(64)
    assert own.compute == base.compute and "stays as measured" in own.notes[-1]
    c = base.compute
    optimizer_s = c.optimizer_step_s  # measured (the timed model, one device alone)
    bound = math.sqrt(len(c.points)) * c.rel_rmse + 1e-9
    for point in c.points:
        if point.micro_batch in rows:
            micro_step = rows[point.micro_batch].compute_s - optimizer_s
            assert micro_step == pytest.approx(c.overhead_s + c.per_sample_s * point.micro_batch,
                                               rel=1e-6)
            assert abs(micro_step / point.time_s - 1) <= bound, (micro_step, point.time_s)
    twice, rows2 = curve_of(128)
    assert "sequence 128 instead of 64" in twice.notes[-1]
    per_sample = [(r[16].compute_s - r[4].compute_s) / 12 for r in (rows, rows2)]
    flops = flops_per_sequence(2, 128, 128, 512) / flops_per_sequence(2, 128, 64, 512)
    assert flops == pytest.approx(32 / 15) and per_sample[1] > 2 * per_sample[0]
    assert flops - 1e-9 <= per_sample[1] / per_sample[0] <= 1.07 * flops, per_sample


def test_the_timed_gpt_at_another_sequence_keeps_its_measured_optimizer_step(tmp_path, capsys):
    """The curve scaled to sequence 2048 keeps the measured optimizer step (x the parameter
    counts) on the layout path too, as on the data-parallel path: one device's micro-step of 8
    sequences computes ``overhead + 8 x per_sample + optimizer`` of the scaled curve (was the
    memory-bound estimate, 0.90 ms for 3.93 ms measured, so a split looked 3 ms a step faster
    than the same run data-parallel), and ``plan --profile --seq-len`` says it takes it."""
    from scalesim.layout_predict import measured_optimizer_s

    profile = resolve_profile(str(H200), None, gpt_workload(tmp_path, 2048))
    c = profile.compute
    assert float(measured_optimizer_s(profile, 1)) == pytest.approx(c.optimizer_step_s, rel=1e-12)
    row = predict(profile, Scenario(devices=[1], micro_batch=8))[0]
    assert row.compute_s == pytest.approx(c.overhead_s + 8 * c.per_sample_s + c.optimizer_step_s,
                                          rel=1e-9)
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), "--seq-len", "2048",
                                      "--devices", "1", "--global-batch", "8"])
    assert code == 0 and "its optimizer step as measured" in out, err


def test_the_note_names_a_given_workload_and_not_the_profiles_own_model(tmp_path):
    """``workload_compute`` builds its note: with a workload name it says the workload replaced
    the profile's; with None (``scalesim plan --profile P`` alone plans the model P timed) it
    says how the compute is decided and nothing about a replacement, for the same model and the
    same model at another sequence alike (``cmd_plan`` rewrote the named note with
    ``str.replace`` before)."""
    from scalesim.profiles import workload_compute

    base = load_profile(H200)
    timed = measured_shape(base)
    for shape, how in ((timed, "compute stays as measured"),
                       (timed.model_copy(update={"seq_len": 2048}), "the timed model at sequence")):
        workload = Workload(name="mine", params=shape.param_count(), transformer=shape)
        named = workload_compute(base, workload, "mine").note
        own = workload_compute(base, workload, None).note
        assert "replaced by 'mine'" in named and how in named
        assert own.startswith(how) and "replaced" not in own and "'mine'" not in own
        assert named.endswith(own)


def test_an_estimated_profiles_refusals_and_notes_do_not_say_it_was_timed(tmp_path):
    """A profile holding the presets' estimate (what `calibrate --from-nccl-tests` writes) with
    `--hardware` of another device was refused with `profile 'my.json' timed its compute on
    'A100-SXM4 40GB'`, kept on the same device with `compute stays as measured`, and on a
    device with no datasheet peak, with another model, `is not the model profile ... timed`:
    none of it true of an estimate. Each says what the profile holds now; a measured profile's
    words are as before."""
    from scalesim.errors import ScalesimError
    from scalesim.presets import HARDWARE, WORKLOADS
    from scalesim.profiles import profile_from_presets

    estimate = profile_from_presets(HARDWARE["a2-highgpu-8g"], WORKLOADS["bert-large"])
    saved = tmp_path / "my.json"
    saved.write_text(estimate.model_dump_json())
    with pytest.raises(ScalesimError) as info:
        resolve_profile(str(saved), "dgx-h100", None)
    assert "holds a compute estimate (not measured) for 'A100-SXM4 40GB' and it describes " \
           "only that device" in str(info.value)
    assert "timed" not in str(info.value) and "those times" not in str(info.value)
    same = tmp_path / "same.json"  # another server of the same device
    same.write_text(HARDWARE["a2-highgpu-8g"].model_copy(update={"name": "mine"})
                    .model_dump_json())
    kept = resolve_profile(str(saved), str(same), None)
    assert kept.notes[-1].endswith("compute stays as the profile's estimate (not measured)")
    cpu = json.loads(saved.read_text())
    cpu["hardware"].update(device_name="CPU: some Xeon", peak_tflops=None,
                           memory_bandwidth_GBps=None)
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    with pytest.raises(ScalesimError) as info:
        resolve_profile(str(tmp_path / "cpu.json"), None, "llama3-8b")
    assert "is not the model profile" in str(info.value)
    assert "estimated the compute of" in str(info.value) and "timed" not in str(info.value)
    measured = "timed its compute on 'NVIDIA H200' and those times"  # as before
    with pytest.raises(ScalesimError, match=measured):
        resolve_profile(str(H200), "dgx-a100", None)
