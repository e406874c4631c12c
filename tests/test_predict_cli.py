"""The predict/sweep/presets/schema commands and their bad-input behaviour."""

import json
import math
import subprocess
import sys

import cli_harness
import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_profile
from scalesim.schemas import Scenario

KEYS = {
    "devices",
    "nodes",
    "step_time_s",
    "compute_s",
    "exposed_comm_s",
    "data_stall_s",
    "straggler_s",
    "samples_per_s",
    "speedup",
    "efficiency",
    "memory_bytes",
    "fits",
}


def run_cli(capsys, *argv):
    """Exit code, stdout, stderr (argparse's own refusals exit 2 too)."""
    return cli_harness.run_cli(capsys, list(argv))


def test_seed_scenario_on_the_default(capsys):
    code, out, _ = run_cli(capsys, "predict", "--devices", "1,2,4,8,16", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["devices"] for r in rows] == [1, 2, 4, 8, 16]
    assert set(rows[0]) >= KEYS
    assert [r["nodes"] for r in rows] == [1, 1, 1, 1, 2]
    eff = [r["efficiency"] for r in rows]
    # holds inside one server: DDP's bucket copies (336e6 x 8 B / 1,555 GB/s = 1.73 ms on a
    # 61.6 ms step, session 56) cost 2.7 points from 2 devices on; the exchange a little more
    # (94.2 % at 8; published BERT-large fine-tuning on one DGX server scales lower still,
    # docs/validation.md: the model over-predicts its 8-GPU points by 10-12 %)
    assert all(e > 0.93 for e in eff[:4]), eff
    assert eff[1] < 0.97, eff  # 2 devices pay the copies one device does not
    assert eff[4] < eff[3] - 0.1, eff  # bends across the slower inter-server link
    for r in rows:  # the presets measure no input pipeline: the stall is not modelled (null)
        assert r["data_stall_s"] is None
        parts = r["compute_s"] + r["exposed_comm_s"] + r["straggler_s"]
        assert parts == pytest.approx(r["step_time_s"])


def test_table_names_the_knee(capsys):
    code, out, _ = run_cli(capsys, "predict")
    assert code == 0
    assert "knee: 8 -> 16 devices" in out and "inter-server link" in out
    # the drop in points, between the two efficiencies printed in the eff column
    knee = next(line for line in out.splitlines() if line.startswith("knee: "))
    before, after = (
        next(line.split()[-3] for line in out.splitlines() if line.split()[:1] == [n]) for n in ("8", "16")
    )
    assert f"efficiency {before} -> {after} (-" in knee and " points)" in knee, knee


def test_presets_and_files_give_the_same_numbers(tmp_path, capsys):
    from scalesim import presets

    hw = tmp_path / "hw.json"
    hw.write_text(presets.HARDWARE["dgx-a100"].model_dump_json())
    code, by_file, _ = run_cli(capsys, "predict", "--hardware", str(hw), "--workload", "resnet50", "--json")
    code2, by_name, _ = run_cli(
        capsys, "predict", "--hardware", "dgx-a100", "--workload", "resnet50", "--json"
    )
    assert code == code2 == 0 and json.loads(by_file) == json.loads(by_name)


def test_profile_file_round_trip(tmp_path, capsys):
    from scalesim.jsonio import write_model

    path = write_model(tmp_path / "p.json", default_profile())
    assert load_profile(path) == default_profile()
    code, out, _ = run_cli(capsys, "predict", "--profile", str(path), "--json")
    # each row as the model gives it, with its near-full note (none here: null)
    assert code == 0 and json.loads(out) == [{**r.model_dump(), "memory_note": None}
                                             for r in predict(default_profile())]


def test_strong_scaling_keeps_global_batch(capsys):
    code, out, _ = run_cli(capsys, "predict", "--global-batch", "256", "--devices", "1,2,4,8", "--json")
    rows = json.loads(out)
    assert code == 0 and {r["global_batch"] for r in rows} == {256}
    assert [r["micro_batch"] for r in rows] == [256, 128, 64, 32]


def test_time_and_money(capsys):
    bert_on_dgx = ("predict", "--hardware", "dgx-a100", "--workload", "bert-large",
                   "--train-samples", "1e8", "--price", "4")
    code, out, _ = run_cli(capsys, *bert_on_dgx, "--json")
    rows = json.loads(out)
    assert code == 0
    # AWS p4de is rented whole: 1, 2, 4 and 8 GPUs bill one 8-GPU instance, 16 bill two
    assert [r["billed_devices"] for r in rows] == [8, 8, 8, 8, 16]
    for r in rows:
        # whole optimizer steps (steps21): ceil(1e8 / global batch) steps, not 1e8 / throughput
        steps = math.ceil(1e8 / r["global_batch"])
        assert r["time_to_train_s"] == pytest.approx(steps * r["step_time_s"])
        assert r["cost_usd"] == pytest.approx(r["time_to_train_s"] / 3600 * r["billed_devices"] * 4)
    code, out, _ = run_cli(capsys, *bert_on_dgx, "--instance-sizes", "1", "--json")
    per_gpu = json.loads(out)
    assert [r["billed_devices"] for r in per_gpu] == [1, 2, 4, 8, 16]
    assert per_gpu[0]["cost_usd"] == pytest.approx(rows[0]["cost_usd"] / 8)


@pytest.mark.parametrize("flags, says", [
    # gpt-7b's own training length: 2e12 tokens of 4096 = 488,281,250 sequences (presets.py)
    (["--hardware", "dgx-a100", "--workload", "gpt-7b"],
     "note: to train: 488,281,250 sequences of 4096 tokens (the workload's; --train-samples to "
     "change); to quality: give --critical-batch and --min-samples (docs/model.md §8); cost is "
     "of the time to train"),
    (["--epochs", "3", "--dataset-size", "1e6", "--price", "2"],  # 3 x 1e6 samples
     "note: to train: 3,000,000 sequences; to quality: give --critical-batch and --min-samples "
     "(docs/model.md §8); cost is of the time to train"),
    (["--critical-batch", "4096", "--min-samples", "1e8", "--price", "2"],
     "note: to train: give --train-samples (or --epochs with --dataset-size); cost is of the "
     "time to quality"),
    (["--train-samples", "1e9", "--critical-batch", "4096", "--min-samples", "1e8"],
     "note: to train: 1,000,000,000 sequences; cost is of the time to train"),
])
def test_the_hours_table_says_what_its_times_rest_on(capsys, flags, says):
    """Session 39 newcomer pass: `predict --workload gpt-7b` printed 'to quality -' and 'to
    train 2.2 years' with no word of why the first is empty nor what training length the
    second is (the workload's 2e12 tokens), nor, with both known, which one the cost bills."""
    code, out, _ = run_cli(capsys, "predict", "--devices", "8,16", *flags)
    assert code == 0 and out.count(says + "\n") == 1, out
    costs = out.splitlines().index(says) - 1
    assert out.splitlines()[costs].startswith("cost: "), out


def test_time_to_quality_shows_large_batch_effect():
    rows = predict(
        default_profile(), Scenario(devices=[1, 8], critical_batch_size=64, min_samples_to_quality=1e6)
    )
    # throughput scales ~8x, but steps to quality fall far less than 8x above B_noise
    assert rows[1].samples_per_s / rows[0].samples_per_s > 7.5
    assert rows[0].steps_to_quality / rows[1].steps_to_quality < 2.5


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["predict", "--batch", "-4"], "-4 is outside 1 <= x"),
        (["predict", "--devices", "1,2,12"], "do not fill whole servers"),
        (["predict", "--hardware", "nope"], "unknown hardware preset"),
        (["predict", "--workload", "nope"], "unknown workload preset"),
        (["predict", "--devices", "a,b"], "'a' is not a whole number"),
        # no count splits 100 (1 does, and runs with a note: tests/test_uneven_global_batch.py)
        (["predict", "--global-batch", "100", "--devices", "3,6"], "does not split evenly"),
        (["predict", "--batch", "4", "--global-batch", "8"], "not allowed with"),
        (
            ["predict", "--epochs", "3"],
            "--epochs and --dataset-size go together (e.g. --epochs 3 "
            "--dataset-size 1281167: the run is their product in samples), or give --train-samples "
            "alone",
        ),  # how to fix it, not only what is wrong (session 16 user's pass)
        (["predict", "--dataset-size", "1e6"], "--epochs and --dataset-size go together (e.g."),
        (["schema", "nothing"], "invalid choice"),
        (["predict", "--devices", "0-8"], "0 is outside 1 <= x"),
        (["predict", "--devices", "8-1"], "must start at 1 or more"),
        (["predict", "--devices", "1-1000"], "stops at 512, short of 1000"),
        (["sweep", "--batch-values", "3-100"], "stops at 96, short of 100"),
        (["predict", "--devices", "4,0"], "0 is outside 1 <= x"),
        (["predict", "--slow-factor", "2"], "go together"),
        (["predict", "--slow-device", "3"], "go together"),
        (["predict", "--price", "3"], "--price needs a training length"),
        (["predict", "--critical-batch", "4096"], "--critical-batch and --min-samples go together"),
        (["predict", "--min-samples", "1e6"], "--critical-batch and --min-samples go together"),
        (
            ["predict", "--critical-batch", "4096", "--train-samples", "1e9"],
            "--critical-batch and --min-samples go together",
        ),
        (["sweep", "--bucket-mib-values", "0,-5"], "0 is outside 0.1 <= x"),
        (["sweep", "--straggler-cv-values", "-1"], "-1 is outside 0 <= x"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    with pytest.raises(SystemExit) as info:
        code = main(argv)
        raise SystemExit(code)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": "scalesim-profile/0"}', "reads 'scalesim-profile/1' only"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema_version": "scalesim-profile/1", "name": "x"}', "field 'hardware'"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_profile_files(tmp_path, capsys, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, _, err = run_cli(capsys, "predict", "--profile", str(path))
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_missing_profile_file(capsys):
    code, _, err = run_cli(capsys, "predict", "--profile", "/nonexistent/p.json")
    assert code == 2 and "no such file" in err


def test_api_raises_value_error_family():
    with pytest.raises(ValueError):
        predict(default_profile(), Scenario(devices=[12]))
    assert issubclass(ScalesimError, ValueError)


def test_schema_export_and_presets(capsys):
    for name in ("profile", "hardware", "workload", "scenario"):
        code, out, _ = run_cli(capsys, "schema", name)
        assert code == 0 and json.loads(out)["type"] == "object"
    code, out, _ = run_cli(capsys, "presets", "--json")
    data = json.loads(out)
    assert code == 0 and len(data["hardware"]) >= 4 and len(data["workloads"]) >= 3
    assert all(hw["source"] and hw["inter_node"]["source"] for hw in data["hardware"].values())


def test_presets_text_names_bert_large_as_one_model(capsys):
    """`scalesim presets` lists bert-large twice (workload and transformer presets): each entry
    says it is the other one's model, the workload entry with the transformer's shape
    (sequence 128, as plan and diagnose --workload bert-large use it)."""
    from scalesim.presets import BERT_LARGE

    code, out, _ = run_cli(capsys, "presets")
    assert code == 0
    workloads, transformers = out.split("\ntransformer presets")
    entry = workloads[workloads.index("  bert-large (default):") :]
    assert (
        f"      shape: {BERT_LARGE.words()}, the transformer preset bert-large below: plan "
        "and diagnose --workload bert-large use it"
    ) in entry
    assert "sequence 128" in BERT_LARGE.words()
    entry = transformers[transformers.index("  bert-large:") :]
    assert "sequence 128" in entry.splitlines()[0]
    assert entry.splitlines()[1].startswith("      the workload preset bert-large above, the same model")


def test_sweep_csv_and_json(tmp_path, capsys):
    out_csv = tmp_path / "s.csv"
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--devices",
        "1,8,16",
        "--batch-values",
        "16,32",
        "--strategy-values",
        "ddp,zero3",
        "--out",
        str(out_csv),
    )
    assert code == 0, err
    lines = out_csv.read_text().splitlines()
    assert len(lines) == 1 + 3 * 2 * 2 and lines[0].startswith("devices,")
    code, out, _ = run_cli(
        capsys, "sweep", "--devices", "8,16", "--inter-busbw-values", "5,50", "--format", "json"
    )
    rows = json.loads(out)
    assert code == 0 and len(rows) == 4
    slow, fast = (r for r in rows if r["devices"] == 16)
    assert fast["step_time_s"] <= slow["step_time_s"]


def test_sweep_matches_predict():
    from scalesim.sweep import sweep

    prof = default_profile()
    res = sweep(prof, Scenario(devices=[1, 2, 8, 16]), {"micro_batch": [8, 64]})
    for i in range(res.size):
        row = predict(
            prof,
            Scenario(
                devices=[int(res.columns["devices"][i])], micro_batch=int(res.columns["micro_batch"][i])
            ),
        )[0]
        assert res.columns["step_time_s"][i] == pytest.approx(row.step_time_s)
        assert res.columns["efficiency"][i] == pytest.approx(row.efficiency)


def test_help_starts_without_torch():
    code = (
        "import sys, scalesim.cli.main as m\n"
        "try:\n    m.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules and 'streamlit' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "predict" in proc.stdout and "sweep" in proc.stdout


def test_calibrated_out_of_memory_ceiling_marks_rows_that_do_not_fit():
    prof = default_profile()
    compute = prof.compute.model_copy(update={"oom_micro_batch": 48})
    prof = prof.model_copy(update={"compute": compute})
    small, big = (predict(prof, Scenario(devices=[2], micro_batch=b))[0] for b in (32, 64))
    assert small.fits and not big.fits


def test_sweep_applies_the_out_of_memory_ceiling_like_predict():
    from scalesim.sweep import sweep

    prof = default_profile()
    prof = prof.model_copy(update={"compute": prof.compute.model_copy(update={"oom_micro_batch": 48})})
    res = sweep(prof, Scenario(devices=[2]), {"micro_batch": [32, 64]})
    assert res.columns["fits"].tolist() == [True, False]
    assert [predict(prof, Scenario(devices=[2], micro_batch=b))[0].fits for b in (32, 64)] == [True, False]


def _gpt_with_ceiling(oom_micro_batch):
    """gpt-1.7b at sequence 512 on DGX H100 (the memory model: 40.2 GiB a device unsplit at
    micro-batch 8, 22.2 GiB at tp 2: both fit in 80 GiB), its calibration having run out of
    memory at ``oom_micro_batch``."""
    from scalesim.profiles import resolve_profile

    prof = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    shape = prof.workload.transformer.model_copy(update={"seq_len": 512})
    return prof.model_copy(update={
        "workload": prof.workload.model_copy(update={"transformer": shape}),
        "compute": prof.compute.model_copy(update={"oom_micro_batch": oom_micro_batch})})


def test_a_transformer_applies_the_out_of_memory_ceiling_where_it_holds_a_replica():
    """A transformer predicts through the layout model, which ignored ``oom_micro_batch``:
    gpt-1.7b (sequence 512) on 2 H100s at micro-batch 8 with calibration out of memory at 8
    was said to fit (40.2 GiB of 80 by the memory model), rows and one-device baseline. Now a
    row whose device holds a whole replica, as calibration's did (tp = pp = 1), fits below the
    ceiling only, the baseline alike, as on the data-parallel path; a split (tp 2: half the
    weights and activations a device) is the memory model's to judge, since the ceiling was
    measured on a whole replica. sweep's rows and the planner's (``plan_at``) take the same rule."""
    from scalesim.layout_predict import plan_at
    from scalesim.schemas import ScenarioLayout
    from scalesim.sweep import sweep

    free, capped = _gpt_with_ceiling(None), _gpt_with_ceiling(8)
    for b, fits in ((7, True), (8, False), (16, False)):
        before = predict(free, Scenario(devices=[2], micro_batch=b))[0]
        row = predict(capped, Scenario(devices=[2], micro_batch=b))[0]
        assert before.fits and before.one_device_fits and before.memory_bytes < 80 * 2**30
        assert (row.fits, row.one_device_fits, row.memory_bytes) == (
            fits, fits, before.memory_bytes)
        split = predict(capped, Scenario(devices=[2], micro_batch=b,
                                         layout=ScenarioLayout(tp=2)))[0]
        assert split.fits and split.one_device_fits == fits  # its baseline: one whole device
    # strong scaling: 32 over 4 devices is 8 a device (at the ceiling), over 8 it is 4
    rows = predict(capped, Scenario(devices=[4, 8], global_batch=32))
    assert [(r.micro_batch, r.fits, r.one_device_fits, r.one_device_holds_model)
            for r in rows] == [(8, False, False, True), (4, True, False, True)]
    res = sweep(capped, Scenario(devices=[2]), {"micro_batch": [7, 8]})
    assert res.columns["fits"].tolist() == [True, False]
    planned = plan_at(capped, Scenario(devices=[2], global_batch=32), 2, 32, top=None,
                      include_unfit=True)
    whole = [r for r in planned if r.tp * r.pp * r.cp == 1]
    assert whole and all(r.fits == (r.micro_batch < 8 and r.memory_bytes <= 80 * 2**30)
                         for r in whole)
    assert any(r.tp == 2 and r.micro_batch >= 8 and r.fits for r in planned)


def _plan_rows(capsys, profile, tmp_path, *flags):
    """``scalesim plan --profile`` of ``profile`` on 2 devices at global batch 32, every layout
    (--all), as JSON rows."""
    path = tmp_path / "p.json"
    path.write_text(profile.model_dump_json())
    code, out, err = run_cli(capsys, "plan", "--profile", str(path), "--devices", "2",
                             "--global-batch", "32", "--all", "--top", "1000", "--json", *flags)
    assert code == 0, err
    return json.loads(out)["layouts"]


@pytest.mark.parametrize("measured, flags", [
    (False, ()),  # a curve not measured: plan() always
    (False, ("--efficiency", "0.5")),
    (False, ("--precision", "fp8")),
    (True, ("--efficiency", "0.5")),  # a measured curve, left for the user's efficiency
])
def test_plan_off_the_measured_curve_applies_the_out_of_memory_ceiling(capsys, tmp_path,
                                                                      measured, flags):
    """Session 40: `scalesim plan --profile P` honoured P's calibrated ``oom_micro_batch`` only
    on the measured-curve path (``plan_at``); with --efficiency, --precision fp8 or a curve not
    measured it ranks through ``plan.plan``, which had no such input: gpt-1.7b (sequence 512)
    on 2 H100s at global batch 32 with calibration out of memory at micro-batch 8 ranked
    dp 2 x micro-batch 16 ZeRO-1 first, 'fits' at 44.5 GiB of 80. Now every whole-replica row
    (tp = pp = cp = 1) fits below the ceiling only, as predict and plan_at say; a split row
    stays the memory model's (tp 2 at micro-batch 32 fits)."""
    profile = _gpt_with_ceiling(8)
    if measured:
        profile = profile.model_copy(update={"compute": profile.compute.model_copy(update={
            "measured": True, "model_shape": profile.workload.transformer})})
    rows = _plan_rows(capsys, profile, tmp_path, *flags)
    whole = [r for r in rows if r["tp"] * r["pp"] * r["cp"] == 1]
    assert {r["micro_batch"] for r in whole} == {1, 2, 4, 8, 16}
    assert all(r["fits"] == (r["micro_batch"] < 8 and r["memory_bytes"] <= 80 * 2**30)
               for r in whole)
    over = [r for r in whole if r["micro_batch"] >= 8]
    assert over and all(r["memory_bytes"] < 80 * 2**30 for r in over)  # the model's: it fits
    assert any(r["tp"] == 2 and r["micro_batch"] >= 8 and r["fits"] for r in rows)
    # the ceiling was measured at sequence 512: another sequence is the memory model's
    longer = _plan_rows(capsys, profile, tmp_path, "--seq-len", "1024", *flags)
    assert any(r["fits"] and r["micro_batch"] == 8 and r["tp"] * r["pp"] * r["cp"] == 1
               for r in longer)


def test_measured_noise_scale_gives_time_to_quality():
    from scalesim.schemas import NoiseScale

    prof = default_profile().model_copy(
        update={"noise_scale": NoiseScale(b_simple=300.0, small_batch=16, big_batch=64)}
    )
    row = predict(prof, Scenario(devices=[8], min_samples_to_quality=1e6))[0]
    # whole optimizer steps (steps21): S_min (1 + B_noise/B) rounded up, 7,239.58 -> 7,240
    assert row.steps_to_quality == math.ceil(1e6 / 300.0 * (1 + 300.0 / row.global_batch))


def test_rows_that_do_not_fit_get_hints_that_apply(capsys):
    """The hint under rows that do not fit names what may make them fit here: no smaller batch
    at batch 1, a wider split, full recompute and the planner for a transformer workload."""
    assert (
        main(["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8", "--tp", "2"])
        == 0
    )
    warning = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: rows marked NO")
    )
    assert "--strategy zero3" in warning and "a larger --tp or --pp" in warning
    assert "--recompute full" in warning
    assert "scalesim plan with the same --workload and --hardware" in warning
    assert "smaller --batch" not in warning  # the batch is 1 already
    assert (
        main(
            [
                "predict",
                "--workload",
                "llama3-8b",
                "--hardware",
                "dgx-h100",
                "--devices",
                "8",
                "--tp",
                "2",
                "--recompute",
                "full",
                "--strategy",
                "zero3",
                "--batch",
                "64",
            ]
        )
        == 0
    )
    warning = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: rows marked NO")
    )
    assert "smaller --batch" in warning and "--recompute full" not in warning
    assert "--strategy zero3" not in warning


def test_a_slow_device_beyond_a_rows_devices_is_said(capsys):
    """Device 12 is not among 8 devices: that row has no slow device, and the output says so."""
    assert main(["predict", "--devices", "8,16", "--slow-device", "12", "--slow-factor", "1.5"]) == 0
    out = capsys.readouterr().out
    assert "note: device 12 is not among the 8 devices of that row: no slow device there" in out
    assert main(["predict", "--devices", "8,16", "--slow-device", "3", "--slow-factor", "1.5"]) == 0
    assert "is not among" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["predict", "sweep"])
def test_settings_that_do_not_go_together_are_said_plainly(capsys, command):
    """A rule across fields (``--grad-sync once-per-step`` with DeepSpeed) is one plain line,
    without pydantic's 'field (top level)' and 'Value error,' wrapping."""
    code, out, err = run_cli(
        capsys,
        command,
        "--devices",
        "8",
        "--strategy",
        "zero2",
        "--zero-framework",
        "deepspeed",
        "--grad-sync",
        "once-per-step",
        "--accumulation",
        "4",
    )
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(
        f"scalesim {command}: error: scenario: --grad-sync once-per-step is FSDP's no_sync"
    ), err
    assert "Value error" not in err and "top level" not in err


def test_a_positive_number_never_prints_as_zero(tmp_path, capsys):
    """A tiny model (1,000 parameters, a billion samples/s) and a huge one: every figure of
    predict's tables that is positive in --json is printed as a positive number, with its unit
    (before: step 0.00 ms, speedup 0.00, efficiency 0.0 %, 0.0 GiB, 0.0 h, cost 0)."""
    from scalesim.presets import get_workload

    paths = []
    for name, params, rate in (("tiny", 1000, 1e9), ("huge", 1e12, 1e-5)):
        data = get_workload("resnet50").model_dump(mode="json")
        data.update(name=name, params=params, activation_bytes_per_sample=100, micro_batch=1)
        data["reference"][0].update(samples_per_s=rate, micro_batch=1)
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    for path, train in zip(paths, ("1e3", "1e6"), strict=True):
        argv = [
            "predict",
            "--workload",
            str(path),
            "--devices",
            "1,8,16",
            "--train-samples",
            train,
            "--price",
            "1",
        ]
        code, out, _ = run_cli(capsys, *argv)
        assert code == 0
        code, text, _ = run_cli(capsys, *argv, "--json")
        rows = json.loads(text)
        lines = out.splitlines()
        head = next(i for i, line in enumerate(lines) if line.startswith("devices nodes"))
        money = next(i for i, line in enumerate(lines) if line.startswith("devices   to"))
        for row, line, cost_line in zip(
            rows, lines[head + 1 : head + 4], lines[money + 1 : money + 4], strict=True
        ):
            cells = line.split()
            # no stall column: the presets' input pipeline is not modelled (the note says so)
            shown = {
                "step_time_s": cells[3],
                "compute_s": cells[4],
                "exposed_comm_s": cells[5],
                "straggler_s": cells[6],
                "samples_per_s": cells[7],
                "speedup": cells[8],
                "efficiency": cells[9].rstrip("%"),
                "memory_bytes": cells[10],
            }
            for key, cell in shown.items():
                assert (float(cell.replace(",", "")) > 0) == (row[key] > 0), (path.name, key, cell, row[key])
            if not row["fits"]:  # session 24: no time or money for a run that cannot happen
                assert cost_line.split()[-2:] == ["not", "fit"] and row["cost_usd"] is None
                continue
            to_train, cost = cost_line.split()[-4:-2], cost_line.split()[-1]
            assert float(to_train[0].replace(",", "")) > 0 and float(cost.replace(",", "")) > 0, cost_line


@pytest.mark.parametrize(
    "argv, named",
    [
        (["predict", "--hardware", ""], "hardware"),
        (["predict", "--workload", ""], "workload"),
        (["predict", "--scenario", ""], "scenario"),
        (["predict", "--profile", ""], "profile"),
        (["decide", "--devices", "1,2", "--hardware", ""], "hardware"),
        (["plan", "--hardware", "", "--devices", "8", "--global-batch", "8"], "hardware"),
        (["diagnose", "--trace", ""], "trace"),
        (["calibrate", "--from-topo", "", "--out", "never-written.json"], "--from-topo"),
    ],
)
def test_an_empty_value_is_refused_not_taken_for_the_default(capsys, argv, named):
    """``--hardware "$HW"`` with HW unset: one line naming what is empty (before: predict,
    decide and plan ran on the default presets, exit 0; --trace '' read the folder '.')."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert named in err and ("empty" in err or "''" in err), err


def test_device_counts_in_any_order_give_the_rows_and_knee_in_order(capsys):
    """``--devices 16,8,1,1`` (or a scenario file's list) is the sorted set 1, 8, 16: one row
    each, and the knee between 8 and 16 (before: rows as typed, one repeated, and 'knee: none'
    read from the reversed order)."""
    assert Scenario(devices=[4, 1, 4, 2]).devices == [1, 2, 4]
    code, out, _ = run_cli(capsys, "predict", "--devices", "16,8,1,1")
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines() if line[:7].strip().isdigit() and "yes" in line]
    assert rows == ["1", "8", "16"], out
    assert "knee: 8 -> 16 devices" in out
    code, text, _ = run_cli(capsys, "predict", "--devices", "16,8,1,1", "--json")
    assert [r["devices"] for r in json.loads(text)] == [1, 8, 16]


def test_a_split_asked_of_a_parameter_count_names_what_was_asked(capsys):
    """``--recompute full`` on a parameter-count workload names the recompute (before: 'layout
    tp 1 x pp 1: ... cannot be split', a split nobody asked for)."""
    code, _, err = run_cli(capsys, "predict", "--recompute", "full", "--devices", "8")
    assert code == 2 and "layout recompute full: workload 'bert-large'" in err, err
    code, _, err = run_cli(capsys, "predict", "--tp", "2", "--devices", "8")
    assert code == 2 and "layout tp 2 x pp 1: workload" in err, err


def test_predict_prints_durations_in_the_cards_words(capsys):
    """A 30-minute run reads '30 min' in predict's table, as on the decision card (not '0.5 h')."""
    from scalesim.decision import duration_text

    sps = predict(default_profile(), Scenario(devices=[8]))[0].samples_per_s
    code, out, _ = run_cli(capsys, "predict", "--devices", "8", "--train-samples", f"{1800 * sps:.6g}")
    assert code == 0
    row = next(line for line in out.splitlines() if line.split()[:1] == ["8"] and "min" in line)
    assert duration_text(1800) == "30 min" and "30 min" in row and "0.5 h" not in out


def test_min_samples_alone_is_used_where_the_profile_measured_the_critical_batch(capsys):
    """--min-samples alone is refused on the presets (no B_noise: nothing would use it) but is a
    time to quality on a profile whose calibration measured B_simple: the rule is "no row has a
    time to quality", not "both flags"."""
    from h200_gpt import H200

    code, out, err = run_cli(
        capsys, "predict", "--profile", str(H200), "--devices", "1", "--min-samples", "1e6", "--json"
    )
    assert code == 0, err
    b_simple = load_profile(H200).noise_scale.b_simple
    row = json.loads(out)[0]
    b = row["global_batch"]
    assert row["steps_to_quality"] == pytest.approx(1e6 / b_simple * (1 + b_simple / b))


def test_a_doubling_range_is_said_in_help_and_reaches_its_end(capsys):
    """'A-B' doubles from A (1-1024: 11 counts, not 1,024): --help says so, and an end the
    doubling does not reach (1-1000 stopped at 512, silently) is refused; one that it reaches
    gives every doubling."""
    from scalesim.cli.options import parse_int_list

    assert parse_int_list("1-1024") == [2**i for i in range(11)]
    assert parse_int_list("3-96") == [3, 6, 12, 24, 48, 96]
    for command in ("predict", "sweep", "decide"):  # goal refuses --devices (test_newcomer_help)
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "doubling" in " ".join(out.split()), command


@pytest.mark.parametrize("command", ["predict", "sweep", "decide", "goal"])
def test_loader_workers_without_a_measured_input_pipeline_is_refused(capsys, command):
    """--loader-workers chooses a point of the profile's measured input-pipeline curve; the
    presets have none, so any count (0 too) gave the same numbers, no stall, no note. Refused in
    one line now; a calibrated profile with the curve takes it (and 1 worker stalls more than
    the best count there)."""
    from h200_gpt import H200

    extra = {"goal": ["--train-samples", "1e9", "--deadline", "3d", "--budget", "1e5"]}
    code, _, err = run_cli(
        capsys, command, "--loader-workers", "0", *extra.get(command, ["--devices", "1,2"])
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--loader-workers 0" in err and "input pipeline" in err
    assert load_profile(H200).input_pipeline is not None
    rows = {}
    for workers in ("1", "8"):
        code, out, err = run_cli(
            capsys, "predict", "--profile", str(H200), "--devices", "1", "--loader-workers", workers, "--json"
        )
        assert code == 0, err
        rows[workers] = json.loads(out)[0]
    assert rows["1"]["data_stall_s"] >= rows["8"]["data_stall_s"]


def test_rows_over_a_link_the_profile_did_not_measure_say_so(capsys):
    """The H200 profile ran on one GPU of one server: its links are presets' numbers. predict
    put 2 devices on 2 servers at 64 % efficiency ("knee: crosses server boundary") with no word
    that the inter-server link was never measured (the app showed it as a caveat). A note now,
    only where a row uses that link and no --inter-busbw replaced it."""
    from h200_gpt import H200

    def notes(*argv):
        code, out, err = run_cli(capsys, "predict", "--profile", str(H200), *argv)
        assert code == 0, err
        return [line for line in out.splitlines() if "link not measured" in line]

    across = notes("--devices", "1,2")
    assert len(across) == 1 and across[0].startswith("note: inter-server link not measured")
    assert "ethernet" in across[0] and "--inter-busbw" in across[0]
    assert notes("--devices", "1") == []
    assert notes("--devices", "1,2", "--inter-busbw", "50") == []
    code, out, err = run_cli(
        capsys, "plan", "--profile", str(H200), "--devices", "8", "--global-batch", "64", "--top", "1"
    )
    assert code == 0, err
    # plan takes --inter-busbw too now: the same note, word for word
    assert [line for line in out.splitlines() if "link not measured" in line] == across


def test_a_link_not_measured_is_noted_from_its_record_not_its_note(capsys, tmp_path):
    """The note under rows over an unmeasured link is built from the record's fields (why, and
    where the numbers came from), not by cutting the free-text note: a note in any words
    changes nothing, and a profile written before the fields shows its note as written."""
    from h200_gpt import H200

    from scalesim.profiles import load_profile
    from scalesim.schemas import LinkCalibration

    def note_with(link: LinkCalibration) -> str:
        base = load_profile(str(H200))
        links = [x for x in base.links if x.level != "inter_node"] + [link]
        path = tmp_path / "p.json"
        path.write_text(base.model_copy(update={"links": links}).model_dump_json())
        code, out, err = run_cli(capsys, "predict", "--profile", str(path), "--devices", "1,2")
        assert code == 0, err
        return next(line for line in out.splitlines() if "link not measured" in line)

    record = LinkCalibration(
        level="inter_node",
        measured=False,
        not_measured_because="one node",
        numbers_from="preset roce:2x200",
        note="anything at all",
    )
    assert note_with(record) == (
        "note: inter-server link not measured (one node); numbers from preset roce:2x200; the "
        "rows on several servers use those numbers: measure it or give --inter-busbw"
    )
    old = LinkCalibration(level="inter_node", measured=False, note="measured elsewhere")
    assert note_with(old).startswith(
        "note: inter-server link not measured (profile note: measured elsewhere); the rows"
    )


def test_a_zero_framework_with_ddp_is_noted_as_ignored(capsys):
    """--zero-framework says how ZeRO runs; with --strategy ddp (the default) nothing is
    sharded and the numbers are DDP's whatever it says. predict printed them with no word;
    now a note, as for --recompute-style without full recompute."""
    code, out, err = run_cli(capsys, "predict", "--devices", "8,16", "--zero-framework", "deepspeed")
    assert code == 0, err
    # DeepSpeed's stage 0, not ignored: its numbers differ from DDP's (session 60)
    assert "note: --zero-framework deepspeed with strategy ddp is DeepSpeed's engine" in out
    code, out, err = run_cli(
        capsys, "predict", "--devices", "8,16", "--strategy", "zero2", "--zero-framework", "deepspeed"
    )
    assert code == 0 and "ignored" not in out, err


@pytest.mark.parametrize(
    "flags, why",
    [
        (["--strategy", "ddp", "--accumulation", "4"], "strategy ddp reduces gradients once per step"),
        (["--strategy", "zero1", "--accumulation", "4"], "strategy zero1 reduces gradients once"),
        (["--strategy", "zero2"], "accumulation 1: one micro-step per step reduces once"),
        (["--strategy", "zero3"], "accumulation 1: one micro-step per step reduces once"),
    ],
)
def test_a_grad_sync_that_changes_nothing_is_noted_as_ignored(capsys, flags, why):
    """`predict --grad-sync once-per-step` with DDP, ZeRO-1 or no accumulation printed the same
    numbers as without it and no word (the scenario line even said 'under no_sync'), where
    --zero-framework with ddp is noted. A note says why now; the numbers are unchanged."""
    base = ["predict", "--devices", "8,16", *flags]
    code, out, err = run_cli(capsys, *base, "--grad-sync", "once-per-step", "--json")
    code0, out0, _ = run_cli(capsys, *base, "--json")
    assert code == code0 == 0 and out == out0, err  # it changes no number: the note is right
    code, out, err = run_cli(capsys, *base, "--grad-sync", "once-per-step")
    assert code == 0, err
    assert f"note: --grad-sync once-per-step ignored: {why}" in out, out


def test_a_grad_sync_that_applies_is_not_noted(capsys):
    code, out, err = run_cli(
        capsys,
        "predict",
        "--devices",
        "8,16",
        "--strategy",
        "zero2",
        "--accumulation",
        "4",
        "--grad-sync",
        "once-per-step",
    )
    assert code == 0 and "--grad-sync once-per-step ignored" not in out, err


def test_more_gpus_per_server_than_the_hardware_has_is_said(capsys):
    """`predict --hardware dgx-a100 --gpus-per-node 16 --devices 8,16` put 16 GPUs on one
    server (nodes 1) under a header that said '8 per server', without a word; plan said '16 GPUs
    per server' alone. Both say now that the rows take the 8-GPU server's link for all 16."""
    code, out, err = run_cli(
        capsys, "predict", "--hardware", "dgx-a100", "--devices", "8,16", "--gpus-per-node", "16"
    )
    assert code == 0, err
    words = (
        "16 GPUs per server (--gpus-per-node), more than the 8 of dgx-a100: its "
        "intra-server link (230 GB/s busbw) taken for all 16"
    )
    assert words in out, out
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["16"])
    assert row[1] == "1"  # what the words explain: 16 devices on one server
    code, out, err = run_cli(
        capsys,
        "plan",
        "--hardware",
        "dgx-a100",
        "--devices",
        "16",
        "--gpus-per-node",
        "16",
        "--global-batch",
        "512",
        "--top",
        "1",
    )
    assert code == 0 and f"ranked with: {words}" in out, err
    code, out, err = run_cli(
        capsys, "predict", "--hardware", "dgx-a100", "--devices", "8", "--gpus-per-node", "8"
    )
    assert code == 0 and "--gpus-per-node" not in out, err  # the server's own count: nothing


# decide and goal, each with the flags it needs beside the scenario's
DECIDE_AND_GOAL = pytest.mark.parametrize(
    "command, extra",
    [
        ("decide", ["--devices", "8,16"]),
        (
            "goal",
            [
                "--train-samples",
                "1e8",
                "--price",
                "2",
                "--deadline",
                "30d",
                "--budget",
                "1e6",
                "--max-devices",
                "32",
            ],
        ),
    ],
)


@DECIDE_AND_GOAL
@pytest.mark.parametrize(
    "per_server, says",
    [
        ("16", "16 GPUs per server (--gpus-per-node), more than the 8 of dgx-a100"),
        ("4", "4 of 8 GPUs per server"),
    ],
)
def test_decide_and_goal_say_the_gpus_per_server_as_predict_does(capsys, command, extra, per_server, says):
    """predict and plan say what --gpus-per-node other than the server's means (the links and
    NICs the job reaches, or one server's link taken for more GPUs than it holds); decide and
    goal, which honour the flag alike, said nothing: a card for 16 GPUs 'per server' of an
    8-GPU dgx-a100, without a word. They say it in predict's words now, text and JSON."""
    args = ["--hardware", "dgx-a100", "--gpus-per-node", per_server, *extra]
    code, out, err = run_cli(capsys, command, *args)
    assert code == 0, err
    assert any(line.startswith("note: ") and says in line for line in out.splitlines()), out
    code, out, err = run_cli(capsys, command, *args, "--json")
    assert code == 0 and any(says in n for n in json.loads(out)["notes"]), err
    code, out, err = run_cli(capsys, command, "--hardware", "dgx-a100", "--gpus-per-node", "8", *extra)
    assert code == 0 and "--gpus-per-node" not in out, err  # the server's own count: nothing


@DECIDE_AND_GOAL
@pytest.mark.parametrize(
    "flags, says",
    [
        (
            ["--attention-kernel", "flash2"],
            "attention kernel flash2 ignored: workload 'bert-large' is a parameter count",
        ),
        (["--zero-framework", "deepspeed"], "--zero-framework deepspeed with strategy ddp is"),
        (["--grad-sync", "once-per-step"], "--grad-sync once-per-step ignored: strategy ddp"),
        (
            ["--recompute-style", "early-stop"],
            "recompute style early-stop ignored: workload 'bert-large' is a parameter count",
        ),
    ],
)
def test_decide_and_goal_say_a_flag_that_changes_nothing_as_predict_does(capsys, command, extra, flags, says):
    """predict notes a flag its scenario ignores (an attention kernel or a recompute style of
    a parameter-count workload, --zero-framework with ddp, --grad-sync where every step
    reduces once); decide and goal took the same flags without a word (the recompute style
    until session 38). One list of those notes now (cmd_predict.scenario_notes). Goal says
    one only where it holds for every strategy and accumulation it searches
    (``goal.searched_scenarios``): its ZeRO plans run the framework and the gradient sync, so
    it does not call them ignored (tests/test_goal_searched_notes.py)."""
    code, out, err = run_cli(capsys, "predict", "--devices", "8", *flags)
    assert code == 0 and f"note: {says}" in out, err
    code, out, err = run_cli(capsys, command, *extra, *flags)
    searched = command == "goal" and "strategy ddp" in says
    assert code == 0 and (f"note: {says}" in out) != searched, (out, err)


def test_decide_and_goal_say_when_the_slow_device_is_not_in_their_runs(capsys):
    """Session 10: `decide --devices 8 --slow-device 8 --slow-factor 2` (ranks 0-7) and
    `goal ... --slow-device 100000` (no plan past --max-devices 1024) took the flags without a
    word, where predict notes `device 8 is not among the 8 devices of that row`. Both say it
    now, in the text and the JSON; a slow device inside the runs gets no such note."""
    code, out, _ = run_cli(
        capsys, "decide", "--devices", "8", "--slow-device", "8", "--slow-factor", "2", "--json"
    )
    assert code == 0
    assert (
        "device 8 is not among the 8 devices of the decision ('As is'): no slow device there"
        in json.loads(out)["notes"]
    )
    code, out, _ = run_cli(capsys, "decide", "--devices", "8", "--slow-device", "7", "--slow-factor", "2")
    assert code == 0 and "not among" not in out
    goal = ["goal", "--train-samples", "1e9", "--deadline", "30d", "--budget", "1e7", "--slow-factor", "2"]
    code, out, _ = run_cli(capsys, *goal, "--slow-device", "100000")
    assert (
        code == 0
        and (
            "note: device 100000 is not among the 1,024 devices of any plan "
            "searched (--max-devices): no slow device there"
        )
        in out
    )
    code, out, _ = run_cli(capsys, *goal, "--slow-device", "3")
    assert code == 0 and "not among" not in out


def test_a_split_models_rows_leave_the_bytes_they_do_not_total_null(capsys):
    """The layout step times its collectives but does not total their bytes: --json says null
    for a transformer's rows, and the data-parallel rows keep their ring volume."""
    code, out, _ = run_cli(
        capsys,
        "predict",
        "--workload",
        "llama3-8b",
        "--devices",
        "64",
        "--strategy",
        "zero3",
        "--global-batch",
        "256",
        "--json",
    )
    assert code == 0 and json.loads(out)[0]["comm_bytes"] is None
    code, out, _ = run_cli(capsys, "predict", "--devices", "16", "--json")
    row = json.loads(out)[0]
    # bert-large's 336M fp16 gradients, ring all-reduce over 16: 2 (p-1)/p of them per device
    assert code == 0 and row["comm_bytes"] == pytest.approx(2 * 15 / 16 * 336e6 * 2, rel=1e-9)


def test_a_split_models_rows_leave_the_total_comm_time_they_do_not_report_null(capsys, tmp_path):
    """The layout step reports exposed communication alone: a transformer's rows said
    comm_total_s = exposed_comm_s (hidden time 0, made up); --json now says null, a sweep of a
    transformer writes no such column, and the data-parallel rows keep their total."""
    code, out, _ = run_cli(
        capsys, "predict", "--workload", "gpt-1.7b", "--devices", "16", "--tp", "2", "--json"
    )
    row = json.loads(out)[0]
    assert code == 0 and row["comm_total_s"] is None and row["exposed_comm_s"] > 0
    code, out, _ = run_cli(capsys, "predict", "--devices", "16", "--json")
    row = json.loads(out)[0]
    assert code == 0 and row["comm_total_s"] > row["exposed_comm_s"] > 0  # overlap hides some
    csv_path = tmp_path / "s.csv"
    code, _, _ = run_cli(
        capsys,
        "sweep",
        "--workload",
        "gpt-1.7b",
        "--devices",
        "8,16",
        "--tp-values",
        "1,2",
        "--out",
        str(csv_path),
    )
    header = csv_path.read_text().splitlines()[0].split(",")
    assert code == 0 and "exposed_comm_s" in header and "comm_total_s" not in header


def test_a_transformers_throughput_column_is_sequences_per_second(capsys):
    """Session 16 user's pass: a transformer preset's unit is 'sequences of 2048 tokens', and the
    table cut it at 10 characters into the header 'sequences /s'."""
    assert main(["predict", "--workload", "gpt-1.7b", "--devices", "8", "--tp", "2"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("devices nodes"))
    assert " sequences/s " in header and "sequences /s" not in header


def test_a_shard_group_above_dp_is_not_said_to_shard_over_ranks_that_do_not_exist(capsys):
    """Session 16 user's pass: `predict --workload llama3-8b --devices 16,32 --strategy zero3
    --shard-group 32` said 'ZeRO states sharded over 32 ranks' of the 16-device row too, whose
    --json says shard_group 16 (a group above dp is all of dp); the data-parallel path already
    said 'where the devices exceed it'."""
    argv = [
        "predict",
        "--workload",
        "llama3-8b",
        "--devices",
        "16,32",
        "--strategy",
        "zero3",
        "--shard-group",
        "32",
    ]
    assert main(argv) == 0
    layout = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("layout:"))
    assert (
        "sharded over 32 ranks, replicated across dp / shard group copies, where dp exceeds "
        "it; capped at a row's dp: sharded over 16 ranks at dp 16 (full sharding)"
    ) in layout
    assert main([*argv, "--json"]) == 0
    assert [r["shard_group"] for r in json.loads(capsys.readouterr().out)] == [16, 32]


def test_the_data_parallel_sharding_line_says_the_group_each_row_shards_over(capsys):
    """Session 45 audit: ZeRO-3 with shard group 3 on 2 devices printed 'sharded over 3 ranks'
    in the header while the row (--json shard_group) shards over 2: the header names the cap
    with each capped row's group, read off the rows."""
    argv = ["predict", "--strategy", "zero3", "--shard-group", "3", "--devices", "1,2,6"]
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("sharding:"))
    assert main([*argv, "--json"]) == 0
    groups = [r["shard_group"] for r in json.loads(capsys.readouterr().out)]
    assert groups == [1, 2, 3]
    assert ("capped at a row's devices: sharded over 1, 2 ranks at 1, 2 devices (full "
            "sharding)") in line
    assert main(["predict", "--strategy", "zero3", "--shard-group", "3", "--devices", "6"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("sharding:"))
    assert "sharded over 3 ranks" in line and "capped" not in line


@pytest.mark.parametrize("command", ["predict", "decide", "goal", "sweep"])
def test_train_samples_help_says_a_transformers_sample_is_a_sequence(capsys, command):
    """Session 16 user's pass: --train-samples said 'samples in the training run'; an LLM run is
    stated in tokens (Llama 3: 15T), and a transformer workload's sample is one sequence, so 15e12
    would be read as 15e12 sequences, 8,192x the run, without a word."""
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "a transformer's sample is a sequence: tokens / sequence length" in text


@pytest.mark.parametrize("seconds, text", [
    (4.2 * 86400, "4.2 days"), (729 * 86400, "729.0 days"),
    (2 * 365.25 * 86400, "2.0 years"), (3.1 * 365.25 * 86400, "3.1 years"),
    (1e15, "31,688,088 years"),  # 1e15 s / 86400 / 365.25 = 31,688,087.8
])
def test_a_long_run_is_said_in_years_not_billions_of_days(seconds, text):
    """`predict --train-samples 1e18 --price 1e6` said "2881844553.4 days": from two years on a
    duration is said in (Julian) years."""
    from scalesim.figures import duration_text

    assert duration_text(seconds) == text


def test_one_device_baseline_applies_the_out_of_memory_ceiling_like_the_rows():
    """The rows' fit check took the calibrated out-of-memory micro-batch, the one-device
    baseline's did not (session 39): with ``oom_micro_batch`` 48, global batch 128 on 4 and 8
    devices runs 128 / 4 = 32 and 128 / 8 = 16 samples per device (both under 48: fit), against
    one device running all 128 at once (128 >= 48: it ran out of memory), reported as fitting
    with no note. The baseline now fails the same check; one sample (1 < 48) holds the model."""
    from scalesim.predict import one_device_note

    prof = default_profile()
    assert prof.compute.oom_micro_batch is None
    rows = predict(prof, Scenario(devices=[4, 8], global_batch=128))
    assert [r.one_device_fits for r in rows] == [True, True]  # the memory model alone: fits
    prof = prof.model_copy(update={"compute": prof.compute.model_copy(
        update={"oom_micro_batch": 48})})
    rows = predict(prof, Scenario(devices=[4, 8], global_batch=128))
    assert [(r.micro_batch, r.fits) for r in rows] == [(32, True), (16, True)]
    assert [(r.one_device_micro_batch, r.one_device_fits, r.one_device_holds_model)
            for r in rows] == [(128, False, True), (128, False, True)]
    assert one_device_note(rows).startswith(
        "one device holds the model but not 128 samples per micro-step, the global batch of 128 "
        "in one step: ")
    # weak scaling: the baseline runs the rows' micro-batch, 47 under the ceiling, 48 at it
    for b, fits in ((47, True), (48, False)):
        row = predict(prof, Scenario(devices=[2], micro_batch=b))[0]
        assert (row.fits, row.one_device_fits) == (fits, fits)


def test_decide_says_the_calibrated_ceiling_not_a_need_that_fits():
    """Session 40: with calibration out of memory at micro-batch 8, decide's question on 2 H100s
    at micro-batch 8 read 'do not fit this layout in memory (40.2 GiB per device needed)', 40.2
    of 80 GiB: a contradiction. It now says the ceiling (``decision.ceiling_words``), as the
    app's words do (``app.plan.misfit_words``); a need over the memory keeps its GiB."""
    from scalesim.app.plan import misfit_words

    from scalesim.decision import decide, need_words

    capped = _gpt_with_ceiling(8)
    card = decide(capped, Scenario(devices=[2], micro_batch=8), 2)
    assert card.question == ("2 H100-SXM5 80GB devices do not fit this layout in memory (micro-batch "
                             "8 ran out of memory in calibration, from 8 on): what should we do?")
    row = predict(capped, Scenario(devices=[2], micro_batch=8))[0]
    assert misfit_words(row, capped) == ("does not fit (micro-batch 8 ran out of memory in "
                                         "calibration, from 8 on)")
    huge = predict(capped, Scenario(devices=[2], micro_batch=128))[0]  # over 80 GiB by itself
    assert huge.memory_bytes > 80 * 2**30
    assert need_words(huge, capped) == f"{huge.memory_bytes / 2**30:,.1f} GiB per device needed"


def test_predicts_hint_under_a_calibrated_ceiling_names_what_can_help(capsys, tmp_path):
    """Session 40: rows over calibration's ceiling (memory fits by the model) were told to try
    --strategy zero3 and --recompute full, which leave the measured ceiling where it is; now the
    hint names a batch below the ceiling and a split. A row over the memory keeps every hint."""
    path = tmp_path / "capped.json"
    path.write_text(_gpt_with_ceiling(8).model_dump_json())
    for batch, kept in (("8", False), ("128", True)):
        code, out, _ = run_cli(capsys, "predict", "--profile", str(path), "--devices", "2",
                               "--batch", batch)
        warning = next(line for line in out.splitlines() if line.startswith("warning: rows"))
        assert code == 0 and ("--strategy zero3" in warning) == kept, warning
        assert ("--recompute full" in warning) == kept and "a larger --tp or --pp" in warning
        assert ("a --batch below 8 (calibration ran out of memory from it on)" in warning) != kept
