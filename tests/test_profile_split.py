"""A calibrated profile's own model split without a workload file
(``layout_predict.split_profile``, ``with_measured_shape``): ``predict --profile P --tp/--pp``,
``sweep``, ``plan --profile P`` without ``--workload``. The data-parallel prediction keeps the
measured curve and optimizer step, byte for byte; a split takes the transformer the curve timed
(``profiles.measured_shape``) with every micro-batch's efficiency pinned to that curve, so at
tp = pp = 1 it computes the measured micro-step. A profile that records no shape says, in one
line, to recalibrate or give ``--workload``.

Hand-computed figures (the H200 profile, benchmarks/results/h200-2026-11-30/gpu-check): its gpt
has 153,331,712 parameters (fp32 weights and gradients, AdamW); the optimizer's memory-bound sweep
reads and writes each parameter and its two fp32 moments and reads its gradient,
``153,331,712 x (2 x 4 + 4 + 2 x 8) B = 4.293 GB``, 0.8944 ms at the H200's 4,800 GB/s; its
measured curve is 6.99680 ms + 2.45663 ms a sequence, its measured optimizer step 3.90069 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import run_cli
from h200_gpt import H200, gpt_workload_file

from scalesim import builtin_gpt
from scalesim.errors import ScalesimError
from scalesim.layout_predict import split_profile, splittable_shape, with_measured_shape
from scalesim.predict import predict
from scalesim.profiles import load_profile
from scalesim.schemas import Scenario, ScenarioLayout

ROOT = Path(__file__).resolve().parents[1]
H200_OPTIMIZER_S = 153_331_712 * (2 * 4 + 4 + 2 * 8) / 4800e9  # 0.8944 ms, by hand


def _copy(tmp_path: Path, name: str, **changes) -> str:
    """The H200 profile with ``changes`` (dotted keys into its JSON), written to ``name``."""
    data = load_profile(H200).model_dump(mode="json")
    for key, value in changes.items():
        part, field = key.split(".")
        data[part][field] = value
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def _unshaped(tmp_path: Path) -> str:
    """The H200 profile as one that records no shape: its workload is named 'my-model' (no
    built-in gpt name to read the shape from), its curve has no ``model_shape``."""
    return _copy(tmp_path, "old.json", **{"workload.name": "my-model"})


def _workload_file(tmp_path: Path) -> str:
    """The H200 run's gpt as a workload file (its sizes and bytes per parameter: fp32 weights,
    gradients all-reduced in fp32, AdamW)."""
    return gpt_workload_file(tmp_path / "gpt.json", micro_batch=32, fields={
        "wire_bytes_per_param": 4, "sample_unit": "sequences of 1024 tokens"})


def test_data_parallel_keeps_the_measured_curve_and_optimizer_byte_for_byte(tmp_path, capsys):
    """``predict --profile P`` without a split: the same bytes whether P's shape is known or
    not, and with ``--tp 1 --pp 1`` (no split asked); its compute is the measured curve plus the
    measured optimizer step (by hand: 6.99680 + 8 x 2.45663 + 3.90069 = 30.5505 ms at 8
    sequences)."""
    argv = ["--devices", "1,2,4,8", "--batch", "8"]
    outputs = []
    for profile, extra in ((str(H200), []), (_unshaped(tmp_path), []), (str(H200), ["--tp", "1",
                                                                                  "--pp", "1"])):
        for fmt in ([], ["--json"]):
            code, out, err = run_cli(capsys, ["predict", "--profile", profile, *argv, *extra,
                                              *fmt])
            assert code == 0, err
            outputs.append(out)
    assert outputs[0] == outputs[2] == outputs[4] and outputs[1] == outputs[3] == outputs[5]
    assert "model split" not in outputs[0] and "layout:" not in outputs[0]
    row = json.loads(outputs[1])[0]
    assert row["compute_s"] == pytest.approx(30.5505e-3, abs=1e-7)
    assert row.get("dp") is None


def test_the_split_path_at_tp_pp_1_computes_the_measured_curve_and_optimizer():
    """With the profile's shape, tp = pp = 1 computes the measured micro-step exactly (each
    micro-batch's efficiency pinned to the curve) plus the measured optimizer step (3.90069 ms
    by hand, not the memory-bound 0.8944 ms), and the note says so."""
    profile = load_profile(H200)
    shaped = with_measured_shape(profile)
    assert shaped.workload.transformer == builtin_gpt.shape_of(1024, 8, 1024, 50304, True)
    assert shaped.compute == profile.compute and shaped.hardware == profile.hardware
    assert "read back from its name: 8 layers, hidden 1024" in shaped.notes[-1]
    assert "optimizer step as measured (3.9 ms for all 153,331,712 parameters)" \
        in shaped.notes[-1]
    c = profile.compute
    for b in (1, 4, 16, 32):
        row = predict(shaped, Scenario(devices=[1], micro_batch=b))[0]
        assert row.compute_s == pytest.approx(6.99680e-3 + 2.45663e-3 * b + 3.90069e-3,
                                              abs=2e-8), b
        assert row.compute_s == pytest.approx(c.overhead_s + c.per_sample_s * b
                                              + c.optimizer_step_s, rel=1e-12), b
    assert abs(H200_OPTIMIZER_S - 0.8944e-3) < 1e-7  # the estimate it no longer takes


@pytest.mark.parametrize("colocated", [False, True])
def test_at_tp_pp_1_the_split_path_computes_what_the_data_parallel_path_does(colocated):
    """compute + optimizer of the split path at tp = pp = 1 equal the data-parallel path's to
    1e-9 for DDP and ZeRO-1/2/3 (the optimizer step / p where it is sharded), accumulation 1 and
    4, one to 16 devices of 4 a server; with a colocation slowdown (12 % with 4 busy, the profile
    edited) the measured optimizer step slows as the data-parallel path slows it."""
    profile = load_profile(H200)
    if colocated:
        profile = profile.model_copy(update={"compute": profile.compute.model_copy(
            update={"colocated_devices": 4, "colocation_slowdown": 0.12})})
    shaped = with_measured_shape(profile)
    for strategy in ("ddp", "zero1", "zero2", "zero3"):
        for k in (1, 4):
            scenario = Scenario(devices=[1, 2, 4, 8, 16], devices_per_node=4, micro_batch=8,
                                accumulation=k, strategy=strategy)
            for dp, split in zip(predict(profile, scenario), predict(shaped, scenario),
                                 strict=True):
                assert split.compute_s == pytest.approx(dp.compute_s, rel=1e-9), (strategy, k)
    # by hand at 2 devices of a server (2 busy): the curve was timed with 4 busy, so one alone
    # is it / 1.12 and two busy (1 + 0.04 x 1) times that; ZeRO-1 (Megatron-Core's distributed
    # optimizer) updates half the parameters and, the calibration being fp32, sweeps its 28 B
    # update plus its default gradient-norm clip of the fp32 grads, 4 + 4 + 4: 40/28 of the
    # measured step's bytes (session 47, docs/model.md §4)
    row = predict(shaped, Scenario(devices=[2], devices_per_node=4, micro_batch=8,
                                   strategy="zero1"))[0]
    factor = 1.04 / 1.12 if colocated else 1.0
    c = profile.compute
    assert row.compute_s == pytest.approx(
        factor * (c.overhead_s + 8 * c.per_sample_s + c.optimizer_step_s / 2 * 40 / 28),
        rel=1e-9)


def test_plan_agrees_with_predict_on_the_split_of_a_one_gpu_calibration(capsys):
    """``plan --profile P --gpus-per-node 2`` (the H200 calibration had one GPU a server) ranks
    tp 2 layouts; each split row's step is ``predict --profile P --gpus-per-node 2`` of that
    layout (to 1e-9), the measured optimizer step in both; a tp = pp = 1 row, which predict
    predicts by the data-parallel path, computes what it does (to 1e-9)."""
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), "--devices", "2",
                                      "--gpus-per-node", "2", "--global-batch", "32",
                                      "--top", "500", "--json"])
    assert code == 0, err
    rows = json.loads(out)["layouts"]
    assert {(r["dp"], r["tp"], r["pp"]) for r in rows} == {(2, 1, 1), (1, 2, 1), (1, 1, 2)}
    profile = load_profile(H200)
    checked = 0
    for r in rows:
        if r["recompute"] != "none" or (r["pp"] > 1 and r["schedule"] != "1f1b"):
            continue
        layout = ScenarioLayout(tp=r["tp"], pp=r["pp"], schedule=r["schedule"] if r["pp"] > 1
                                else None, sequence_parallel=r["sequence_parallel"])
        row = predict(profile, Scenario(
            devices=[2], devices_per_node=2, micro_batch=r["micro_batch"],
            accumulation=r["accumulation"], strategy=("ddp", "zero1", "zero2", "zero3")[r["zero"]],
            layout=layout))[0]
        assert r["breakdown_s"]["compute_s"] == pytest.approx(row.compute_s, rel=1e-9), r
        if r["tp"] * r["pp"] > 1:  # tp = pp = 1 predicts data parallel: the compute agrees
            assert r["step_time_s"] == pytest.approx(row.step_time_s, rel=1e-9), r
            checked += 1
    assert checked >= 4
    code, text, err = run_cli(capsys, ["plan", "--profile", str(H200), "--devices", "2",
                                       "--gpus-per-node", "2", "--global-batch", "32"])
    assert code == 0 and "ranked with: 2 GPUs per server (--gpus-per-node)" in text, err
    assert "its optimizer step as measured, x the parameters each device updates" in text


def test_plan_gpus_per_node_is_the_knob_tables_flag(capsys):
    """``plan --gpus-per-node`` has predict's bounds (scalesim.bounds): 0 exits 2 in one line; 4
    GPUs a server keep tp within 4 (tp 8 is planned on dgx-h100's 8 only)."""
    code, out, err = run_cli(capsys, ["plan", "--devices", "8", "--global-batch", "8",
                                      "--gpus-per-node", "0"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--gpus-per-node" in err, err
    argv = ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--devices", "8",
            "--global-batch", "8", "--top", "2000", "--all", "--json"]
    tps = []
    for extra in ([], ["--gpus-per-node", "4"]):
        code, out, err = run_cli(capsys, [*argv, *extra])
        assert code == 0, err
        tps.append({r["tp"] for r in json.loads(out)["layouts"]})
    assert 8 in tps[0] and max(tps[1]) == 4


def test_split_profile_only_where_a_split_is_asked():
    profile = load_profile(H200)
    assert split_profile(profile, Scenario()) is profile
    assert split_profile(profile, Scenario(layout=ScenarioLayout(tp=1, pp=1))) is profile
    assert split_profile(profile, Scenario(layout=ScenarioLayout(recompute_style="early-stop"))) \
        is profile
    for layout in (ScenarioLayout(pp=2), ScenarioLayout(recompute="full"),
                   ScenarioLayout(tp=2, sequence_parallel=True)):
        assert split_profile(profile, Scenario(layout=layout)).workload.transformer is not None
    assert split_profile(profile, Scenario(), axes=("pp",)).workload.transformer is not None
    # a parameter-count --workload of another size is not the timed model: no shape to split
    other = profile.model_copy(update={"workload": profile.workload.model_copy(
        update={"params": 2 * profile.workload.params})})
    assert splittable_shape(other) is None and with_measured_shape(other) is other


def test_predict_splits_the_profile_as_its_own_workload_file_would(tmp_path, capsys):
    """``predict --profile P --pp 2`` (and tp 2 on 8 devices a server, recompute full) equals
    ``predict --profile P --workload gpt.json`` with the same shape, row for row: one decision,
    the workload file no longer needed."""
    wl = _workload_file(tmp_path)
    for split in (["--pp", "2"], ["--tp", "2", "--gpus-per-node", "8", "--sequence-parallel"],
                  ["--pp", "2", "--recompute", "full"]):
        argv = ["predict", "--profile", str(H200), "--devices", "2,4,8", "--batch", "4", *split]
        code, out, err = run_cli(capsys, [*argv, "--json"])
        assert code == 0, err
        code, given, err = run_cli(capsys, [*argv, "--workload", wl, "--json"])
        assert code == 0, err
        rows, expected = json.loads(out), json.loads(given)
        assert [(r["dp"], r["tp"], r["pp"]) for r in rows] == [
            (r["dp"], r["tp"], r["pp"]) for r in expected]
        for r, e in zip(rows, expected, strict=True):
            for key in ("step_time_s", "compute_s", "bubble_s", "exposed_comm_s",
                        "memory_bytes", "samples_per_s", "efficiency"):
                assert r[key] == pytest.approx(e[key], rel=1e-12), (split, key)
    code, out, err = run_cli(capsys, ["predict", "--profile", str(H200), "--devices", "2,4",
                                      "--pp", "2"])
    assert code == 0, err
    assert "layout: tp 1 x pp 2 (1F1B)" in out and "dp x tp x pp" in out
    assert "note: model split: the transformer this profile timed (read back from its name" \
        in out


def test_a_profile_without_a_shape_says_to_recalibrate_in_one_line(tmp_path, capsys):
    old = _unshaped(tmp_path)
    for argv in (["predict", "--pp", "2", "--devices", "2"],
                 ["predict", "--recompute", "full", "--devices", "1"],
                 ["sweep", "--pp-values", "1,2", "--devices", "2"]):
        code, out, err = run_cli(capsys, [argv[0], "--profile", old, *argv[1:]])
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "does not record the transformer" in err and "recalibrate" in err, err
        assert "--workload" in err
    with pytest.raises(ScalesimError, match="layout tp 1 x pp 2: profile .* recalibrate"):
        predict(load_profile(old), Scenario(devices=[2], layout=ScenarioLayout(pp=2)))


def test_sweep_over_pp_splits_the_profiles_model(capsys):
    """A sweep with a pp axis runs every row, pp 1 too, as the profile's transformer (one model
    for the rows it compares): each row is predict's of that layout on the shaped profile."""
    code, out, err = run_cli(capsys, ["sweep", "--profile", str(H200), "--devices", "2,4",
                                      "--pp-values", "1,2", "--batch", "4", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    profile = with_measured_shape(load_profile(H200))
    assert sorted((r["devices"], r["pp"]) for r in rows) == [(2, 1), (2, 2), (4, 1), (4, 2)]
    for r in rows:
        row = predict(profile, Scenario(devices=[r["devices"]], micro_batch=4,
                                        layout=ScenarioLayout(pp=r["pp"])))[0]
        assert r["step_time_s"] == pytest.approx(row.step_time_s, rel=1e-9)


def test_plan_profile_without_workload_plans_the_timed_model(tmp_path, capsys):
    """``plan --profile P`` with no ``--workload``: P's own gpt on its measured curve, the same
    rows as ``--workload gpt.json`` of that shape; its tp = pp = 1 row computes predict's to
    1e-9. A profile with no shape known keeps today's default, llama3-8b, byte for byte."""
    argv = ["plan", "--profile", str(H200), "--devices", "1,2", "--global-batch", "8",
            "--top", "500", "--json"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    code, given, err = run_cli(capsys, [*argv, "--workload", _workload_file(tmp_path)])
    assert code == 0, err
    assert json.loads(out)["layouts"] == json.loads(given)["layouts"]
    plain = next(r for r in json.loads(out)["layouts"] if r["tp"] == 1 and r["pp"] == 1 and r["zero"] == 0
                 and r["recompute"] == "none" and r["devices"] == 1)
    row = predict(with_measured_shape(load_profile(H200)), Scenario(
        devices=[1], micro_batch=plain["micro_batch"], accumulation=plain["accumulation"]))[0]
    assert plain["breakdown_s"]["compute_s"] == pytest.approx(row.compute_s, rel=1e-9)
    code, text, err = run_cli(capsys, argv[:-3] + ["--top", "1"])
    assert code == 0, err
    first = text.splitlines()[0]
    assert "no --workload: its own model, the transformer it timed (8 layers, hidden 1024" in first
    assert "compute stays as measured" in first and "pinned to that curve" in first
    old = _unshaped(tmp_path)
    base = ["plan", "--profile", old, "--devices", "8", "--global-batch", "64", "--top", "3"]
    code, default, err = run_cli(capsys, base)
    assert code == 0, err
    code, llama, err = run_cli(capsys, [*base, "--workload", "llama3-8b"])
    # the same plan; only its first line says the model was the default
    default_first, *default_rest = default.splitlines()
    assert default_first.endswith(" (the default; --workload to change)"), default_first
    assert code == 0 and default_rest == llama.splitlines()[1:], err
    assert default_first.startswith(llama.splitlines()[0])


def test_split_the_model_is_offered_for_a_calibrated_profile(tmp_path, capsys):
    """The "split the model" remedy of a data-parallel calibrated profile (its workload a
    parameter count) splits the transformer its curve timed: on 4 H200s of a server over PCIe
    at one sequence each the exposed exchange is most of the step, so the planner's best split
    is a remedy whose gain is ``predict`` at its scenario (to 1e-9), also in the decision card
    and in ``scalesim decide``; with 8 micro-steps it is not offered (exchange below the share);
    a profile that records no shape says to recalibrate."""
    from scalesim.decision import decide
    from scalesim.remedies import DP_EXCHANGE_SHARE, rank_remedies

    profile = load_profile(H200)
    scenario = Scenario(devices=[4], devices_per_node=4, micro_batch=1)
    now, ranked = rank_remedies(profile, scenario, 4)
    assert now.dp is None and now.exposed_comm_s / now.step_time_s > DP_EXCHANGE_SHARE
    split = next(r for r in ranked if r.key == "split_model")
    assert split.applicable and split.verdict == "remedy", split.reason
    assert split.title.startswith("Split the model: dp ")
    again = predict(profile, split.scenario.model_copy(update={"devices": [4]}))[0]
    assert (again.tp, again.pp) != (1, 1) and again.global_batch == now.global_batch
    assert split.gain == pytest.approx(again.samples_per_s / now.samples_per_s - 1, rel=1e-9)
    assert split.gain > 0.5
    assert any(o.key == "split_model" for o in decide(profile, scenario, 4).options)
    code, out, err = run_cli(capsys, ["decide", "--profile", str(H200), "--devices", "4",
                                      "--gpus-per-node", "4", "--batch", "1"])
    assert code == 0 and "Split the model: dp " in out, err
    _, ranked = rank_remedies(profile, scenario.model_copy(update={
        "micro_batch": 16, "accumulation": 8, "intra_busbw_GBps": 400.0}), 4)
    split = next(r for r in ranked if r.key == "split_model")
    assert not split.applicable and f"below {DP_EXCHANGE_SHARE:.1%}" in split.reason
    _, ranked = rank_remedies(load_profile(_unshaped(tmp_path)), scenario, 4)
    split = next(r for r in ranked if r.key == "split_model")
    assert not split.applicable and "recalibrate" in split.reason


# --------------------------------------------------------------- a real CPU calibration



@pytest.mark.slow
def test_a_cpu_calibration_predicts_its_own_gpt_at_tp_2(tmp_path, capsys, tiny_gpt):
    """One real calibration of the tiny gpt on this CPU (about 10 s; again, up to three times,
    where other work spoiled the block's timings). Without any workload file: at tp = pp = 1
    the split path computes the measured micro-step (the fitted curve, to 1e-6) plus the
    measured optimizer step; ``predict --tp 2`` on two devices
    of a server gives what ``plan --profile`` (no --workload) gives the same layout, to 1e-9; a
    tp-2 shard computes less than the whole model and no less than half of it (the split is
    never better than perfect)."""
    base, why, _ = tiny_gpt  # conftest: one calibration for this file and test_profile_shape
    assert base is not None and base.model_parallel is not None, why
    assert base.workload.transformer is None  # a parameter count, data parallel by default
    assert base.compute.model_shape == builtin_gpt.shape_of(128, 2, 64, 512, False)
    c = base.compute
    optimizer_s = c.optimizer_step_s  # measured (one device alone)
    shaped = with_measured_shape(base)
    assert "recorded by calibrate: 2 layers, hidden 128" in shaped.notes[-1]
    for b in (4, 16):
        row = predict(shaped, Scenario(devices=[1], micro_batch=b))[0]
        assert row.compute_s - optimizer_s == pytest.approx(c.overhead_s + c.per_sample_s * b,
                                                            rel=1e-6)
    data = base.model_dump(mode="json")  # a server of two such devices (the run had one)
    data["hardware"]["devices_per_node"] = 2
    two = tmp_path / "cpu-two.json"
    two.write_text(json.dumps(data))
    code, text, err = run_cli(capsys, ["predict", "--profile", str(two), "--devices", "2",
                                       "--batch", "4", "--tp", "2", "--json"])
    assert code == 0, err
    tp2 = json.loads(text)[0]
    assert (tp2["dp"], tp2["tp"], tp2["pp"]) == (1, 2, 1)
    code, text, err = run_cli(capsys, ["plan", "--profile", str(two), "--devices", "2",
                                       "--global-batch", "4", "--top", "500", "--json"])
    assert code == 0, err
    planned = next(r for r in json.loads(text)["layouts"] if (r["dp"], r["tp"], r["pp"], r["zero"]) ==
                   (1, 2, 1, 0) and r["micro_batch"] == 4 and r["recompute"] == "none"
                   and not r["sequence_parallel"])
    assert planned["breakdown_s"]["compute_s"] == pytest.approx(tp2["compute_s"], rel=1e-9)
    whole = predict(shaped, Scenario(devices=[1], micro_batch=4))[0].compute_s
    assert whole / 2 <= tp2["compute_s"] < whole, (tp2["compute_s"], whole)
