"""``sweep --seq-len-values`` (axis ``seq_len``, session 41): the compute curve is resolved once
per workload before a sweep runs, so each value gets its own profile (``sweep.plan_sweep``'s
``at_sequence``: the CLI's ``resolve_profile`` at that value, as ``predict --seq-len``), and
every row equals ``predict --seq-len S`` of its scenario to 1e-9, on presets (the shape's
estimate per value) and on a measured profile (its curve scaled per value), beside the devices,
cp and tp axes. Before: 'unrecognized arguments: --seq-len-values'."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.errors import ScalesimError
from scalesim.presets import transformer_workload
from scalesim.profiles import profile_from_presets, resolve_profile
from scalesim.schemas import Scenario
from scalesim.sweep import sweep

LLAMA = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]


def sweep_rows(capsys, argv: list[str]) -> tuple[list[dict], str]:
    code, out, err = run_cli(capsys, ["sweep", *argv, "--format", "json"])
    assert code == 0, err
    return json.loads(out), err


def assert_rows_are_predicts(capsys, common: list[str], rows: list[dict]) -> None:
    """Each row is ``predict common --seq-len <its> --devices --tp --cp --json`` of its
    values, to 1e-9: the step, its compute, the exposed communication (tensor, context and
    data parallel together in both), the throughput, the memory and the fit."""
    for row in rows:
        flags = ["--seq-len", str(row["seq_len"]), "--devices", str(row["devices"]),
                 "--tp", str(row["tp"]), "--cp", str(row.get("cp", 1))]
        code, out, err = run_cli(capsys, ["predict", *common, *flags, "--json"])
        assert code == 0, (row, err)
        p = json.loads(out)[0]
        assert (p["dp"], p["tp"], p["cp"]) == (row["dp"], row["tp"], row.get("cp", 1))
        for name in ("step_time_s", "compute_s", "exposed_comm_s", "samples_per_s",
                     "memory_bytes"):
            assert row[name] == pytest.approx(p[name], rel=1e-9, abs=1e-15), (row, name)
        assert row["fits"] == p["fits"], row


def test_preset_rows_at_each_sequence_are_predicts_beside_devices_and_cp(capsys):
    """Llama 3 8B on DGX H100, zero1, global batch 32 in 4 micro-steps, at 4,096, 8,192 (its
    own) and 16,384 tokens x 8 and 16 GPUs x cp 1 and 2: 12 combinations; 16 GPUs at cp 1 are
    16 replicas, and 32 sequences do not split over 16 x 4 micro-steps (3 dropped, one per
    sequence), so 9 rows, each predict --seq-len's. The longer sequence is slower per step
    (more tokens, and attention grows with the sequence)."""
    common = [*LLAMA, "--global-batch", "32", "--accumulation", "4", "--strategy", "zero1"]
    rows, err = sweep_rows(capsys, [*common, "--devices", "8,16", "--seq-len-values",
                                    "4096,8192,16384", "--cp-values", "1,2"])
    assert [(r["devices"], r["seq_len"], r["cp"]) for r in rows] == [
        (8, 4096, 1), (8, 4096, 2), (8, 8192, 1), (8, 8192, 2), (8, 16384, 1), (8, 16384, 2),
        (16, 4096, 2), (16, 8192, 2), (16, 16384, 2)]
    assert "3 combinations dropped: 3 do not split the global batch" in err
    assert_rows_are_predicts(capsys, common, rows)
    step = {r["seq_len"]: r["step_time_s"] for r in rows if r["devices"] == 8 and r["cp"] == 1}
    assert step[4096] < step[8192] < step[16384]
    # each value's note once (4,096 and 16,384; 8,192 is the workload's own, no note), by the
    # flag typed (session 47: it said --seq-len)
    assert err.count("note: --seq-len-values 4096: the transformer at 4,096 tokens") == 1
    assert err.count("note: --seq-len-values 16384: the transformer at 16,384 tokens") == 1
    assert "--seq-len 8192:" not in err


def test_preset_rows_with_tp_swept_are_predicts(capsys):
    """Beside a tp axis (1, 2) on 8 GPUs: 2 sequences x 2 tp = 4 rows, each predict's."""
    common = [*LLAMA, "--global-batch", "16", "--accumulation", "2", "--strategy", "zero1"]
    rows, _ = sweep_rows(capsys, [*common, "--devices", "8", "--seq-len-values", "2048,32768",
                                  "--tp-values", "1,2"])
    assert [(r["seq_len"], r["tp"]) for r in rows] == [(2048, 1), (2048, 2), (32768, 1),
                                                        (32768, 2)]
    assert_rows_are_predicts(capsys, common, rows)


def test_a_measured_profiles_rows_at_each_sequence_are_predicts(capsys):
    """The H200 block calibration's own gpt (timed at 1,024 tokens) at 512, 1,024 and 2,048
    tokens on 1 and 2 GPUs at micro-batch 4: the measured curve scaled per value
    (``profiles.workload_compute``), each row predict --seq-len's to 1e-9, compute per
    sample growing with the sequence."""
    common = ["--profile", str(H200), "--batch", "4"]
    rows, _ = sweep_rows(capsys, [*common, "--devices", "1,2", "--seq-len-values",
                                  "512,1024,2048"])
    assert [(r["devices"], r["seq_len"]) for r in rows] == [
        (1, 512), (1, 1024), (1, 2048), (2, 512), (2, 1024), (2, 2048)]
    assert_rows_are_predicts(capsys, common, rows)
    compute = [r["compute_s"] for r in rows if r["devices"] == 1]
    assert compute[0] < compute[1] < compute[2]


def test_the_library_sweep_takes_the_axis_on_a_preset_profile():
    """``sweep.sweep`` without ``at_sequence``: each value as ``profiles.profile_at_sequence``
    of the profile's own model, on presets the shape's estimate at that sequence, equal to
    ``resolve_profile(..., seq_len)``'s rows (the numbers; the notes name the source)."""
    from scalesim.predict import predict

    profile = profile_from_presets(resolve_profile(None, "dgx-h100").hardware,
                                   transformer_workload("llama3-8b"))
    base = Scenario(devices=[8], global_batch=16, accumulation=2, strategy="zero1")
    result = sweep(profile, base, {"seq_len": [4096, 16384]})
    assert result.columns["seq_len"].tolist() == [4096, 16384]
    for i, seq in enumerate((4096, 16384)):
        p = predict(resolve_profile(None, "dgx-h100", "llama3-8b", seq), base)[0]
        assert result.columns["step_time_s"][i] == pytest.approx(p.step_time_s, rel=1e-9)
        assert result.columns["memory_bytes"][i] == pytest.approx(p.memory_bytes, rel=1e-9)


def test_a_cp_that_splits_some_sequences_drops_only_their_rows(capsys):
    """cp 1 and 2 at 4,098 tokens: 2 x 2 = 4 does not divide 4,098 (1,024.5), so the cp 2 row
    is dropped as a broken layout, by name; the cp 1 row is kept, and 4,096 keeps both."""
    rows, err = sweep_rows(capsys, [*LLAMA, "--devices", "8", "--global-batch", "16",
                                    "--seq-len-values", "4096,4098", "--cp-values", "1,2"])
    assert [(r["seq_len"], r["cp"]) for r in rows] == [(4096, 1), (4096, 2), (4098, 1)]
    # the swept knobs by their grid flags, as typed (before session 50: '2 x --cp 2 ...; use
    # --cp 1, or --seq-len 4096 or 4100', predict's flags)
    assert ("1 combination dropped: 1 breaks a layout rule (e.g. tp 1 x pp 1 x cp 2 on 8 "
            "devices: sequence length 4098 is not divisible by 2 x --cp-values 2 (load-balanced "
            "context parallelism); use --cp-values 1, or --seq-len-values 4096 or 4100)") in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--workload", "resnet50", "--devices", "8", "--seq-len-values", "512,1024"],
     "--seq-len-values needs a transformer workload (a parameter count has no sequence "
     "length): profile 'a2-highgpu-8g + resnet50 (presets)' gives none; give --workload with a "
     "'transformer' shape (e.g. llama3-8b) or drop --seq-len-values"),
    ([*LLAMA, "--devices", "8", "--cp", "2", "--seq-len-values", "4096,4098"],
     "--seq-len-values 4098: sequence length 4098 is not divisible by 2 x --cp 2 "
     "(load-balanced context parallelism); give sequence lengths that 4 divides, or --cp 1"),
    ([*LLAMA, "--devices", "8", "--cp-values", "2,4", "--seq-len-values", "4098"],
     "--seq-len-values 4098: sequence length 4098 is not divisible by 2 x any of "
     "--cp-values 2,4 (load-balanced context parallelism); give sequence lengths that 2 x one "
     "of them divides, or add 1 to --cp-values"),
    ([*LLAMA, "--devices", "8", "--seq-len", "4096", "--seq-len-values", "4096,8192"],
     "--seq-len and --seq-len-values both set one knob: give --seq-len-values to sweep it or "
     "--seq-len to fix it, not both"),
    ([*LLAMA, "--devices", "8", "--seq-len-values", "0,8"],
     "argument --seq-len-values: 0 is outside 1 <= x <= 1,073,741,824 tokens"),
])
def test_a_sequence_axis_that_cannot_be_predicted_is_refused_in_one_line(capsys, flags,
                                                                         message):
    code, out, err = run_cli(capsys, ["sweep", *flags])
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"scalesim sweep: error: {message}"), err


def test_the_library_refuses_the_axis_for_a_parameter_count():
    profile = resolve_profile(None, "dgx-h100", "resnet50")
    with pytest.raises(ScalesimError, match="--seq-len-values needs a transformer workload"):
        sweep(profile, Scenario(devices=[8]), {"seq_len": [512]})
