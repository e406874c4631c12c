"""Issue 14 (numbers, calibration flags, API): every number has bounds from one table
(scalesim.bounds), non-finite and overflowing values are refused with the field's name, no
--json output holds NaN or Infinity, and public functions refuse wrong types with ScalesimError.

The parametrised cases are the issue's own examples, each of which crashed or was accepted
before (OverflowError tracebacks, ``"step_time_s": Infinity``, scipy "residuals are not finite").
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from cli_harness import run_cli
from diagnose_cases import CASES, to_csv
from pydantic import ValidationError

from scalesim import presets
from scalesim.bounds import (
    KNOBS,
    LAYOUT_KNOBS,
    QUANTITIES,
    check_number,
    flag_list_type,
    flag_type,
    markdown_table,
)
from scalesim.errors import ScalesimError
from scalesim.schemas import SCHEMAS, Scenario
from scalesim.shipped import validation_path

BIG = str(2**63)  # 9223372036854775808: the first whole number a C long cannot hold
ROOT = Path(__file__).resolve().parents[1]


def assert_one_line_refusal(code, err, *words):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Error:" not in err.replace("error:", "")
    for word in words:
        assert word in lines[0], (word, lines[0])


def strict_json(text: str):
    """json.loads that fails on NaN, Infinity and -Infinity."""

    def refuse(name):
        raise AssertionError(f"non-finite JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text(to_csv(CASES["inter_server"]()))
    return path


# ------------------------------------------------------------------ CLI: the examples

PREDICT_REFUSED = [
    (["--devices", BIG], "--devices"),
    (["--devices", "1-" + BIG], "--devices"),
    (["--devices", "1,2,nan"], "--devices"),
    (["--batch", "99999999999999999999"], "--batch"),
    (["--global-batch", BIG], "--global-batch"),
    (["--gpus-per-node", BIG], "--gpus-per-node"),
    (["--accumulation", BIG], "--accumulation"),
    (["--accumulation", "1e30"], "--accumulation"),
    (["--accumulation", "5000"], "--accumulation"),
    (["--straggler-cv", "inf"], "--straggler-cv"),
    (["--straggler-cv", "nan"], "--straggler-cv"),
    (["--device-cv", "-inf"], "--device-cv"),
    (["--critical-batch", "inf"], "--critical-batch"),
    (["--intra-latency", "1e308"], "--intra-latency"),
    (["--inter-latency", "nan"], "--inter-latency"),
    (["--intra-busbw", "1e-308"], "--intra-busbw"),
    (["--bucket-mib", "nan"], "--bucket-mib"),
    (["--train-samples", "1e400"], "--train-samples"),
    (["--min-samples", "nan"], "--min-samples"),
    (["--price", "inf"], "--price"),
    (["--loader-workers", BIG], "--loader-workers"),
    (["--slow-device", BIG, "--slow-factor", "2"], "--slow-device"),
    (["--slow-device", "1", "--slow-factor", "nan"], "--slow-factor"),
    (["--epochs", "1e308", "--dataset-size", "1e308"], "--epochs"),
    (["--epochs", "1e6", "--dataset-size", "1e18"], "--epochs x --dataset-size"),  # product over the bound
]


@pytest.mark.parametrize("command", ["predict", "sweep"])
@pytest.mark.parametrize(("flags", "named"), PREDICT_REFUSED)
def test_scenario_flags_refuse_overflow_and_non_finite(capsys, command, flags, named):
    code, out, err = run_cli(capsys, [command, *flags])
    assert_one_line_refusal(code, err, named)
    assert out == ""


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--bucket-mib-values", "nan"], "--bucket-mib-values"),
        (["--bucket-mib-values", "1,inf"], "--bucket-mib-values"),
        (["--batch-values", "99999999999999999999"], "--batch-values"),
        (["--global-batch-values", "64," + BIG], "--global-batch-values"),
        (["--accumulation-values", "1e30"], "--accumulation-values"),
        (["--inter-busbw-values", "12,nan"], "--inter-busbw-values"),
        (["--straggler-cv-values", "-1"], "--straggler-cv-values"),
    ],
)
def test_sweep_value_lists_refuse_bad_numbers(capsys, flags, named):
    code, _, err = run_cli(capsys, ["sweep", *flags])
    assert_one_line_refusal(code, err, named)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--params", "inf"], "--params"),
        (["--params", "1e-308"], "--params"),
        (["--params", "nan"], "--params"),
        (["--wire-bytes", "nan"], "--wire-bytes"),
        (["--critical-batch", "inf"], "--critical-batch"),
        (["--extrapolate", BIG], "--extrapolate"),
        (["--extrapolate", "64,1e400"], "--extrapolate"),
    ],
)
def test_diagnose_flags_refuse_bad_numbers(capsys, runs_csv, flags, named):
    code, _, err = run_cli(capsys, ["diagnose", str(runs_csv), *flags])
    assert_one_line_refusal(code, err, named)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--timeout", "nan"], "--timeout"),
        (["--timeout", "inf"], "--timeout"),
        (["--phase-timeout", "nan"], "--phase-timeout"),
        (["--phase-timeout", "-1"], "--phase-timeout"),
        (["--slow-threshold", "nan"], "--slow-threshold"),
        (["--slow-threshold", "0.5"], "--slow-threshold"),
        (["--intra-latency", "nan"], "--intra-latency"),
        (["--inter-latency", "1e308"], "--inter-latency"),
        (["--intra-busbw", "inf"], "--intra-busbw"),
        (["--threads", BIG], "--threads"),
        (["--repeats", BIG], "--repeats"),
        (["--batches", "16,32," + BIG], "--batches"),
        (["--seed", "-1"], "--seed"),
        (["--size-factor", "1"], "--size-factor"),
        (["--max-size-mib", "inf"], "--max-size-mib"),
        (["--min-size-kib", "0"], "--min-size-kib"),
        (["--coll-time-s", "nan"], "--coll-time-s"),
        (["--max-workers", "-1"], "--max-workers"),
        (["--nproc-per-node", BIG], "--nproc-per-node"),
    ],
)
def test_calibration_flags_refuse_bad_numbers_before_measuring(capsys, flags, named):
    code, _, err = run_cli(capsys, ["calibrate", *flags])
    assert_one_line_refusal(code, err, named)


# ------------------------------------------------------------------ files


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("scenario", "field"),
    [
        ({"devices": [2**63]}, "devices"),
        ({"devices": [8, 10**30]}, "devices"),
        ({"accumulation": 1e30}, "accumulation"),
        ({"micro_batch": 2**64}, "micro_batch"),
        ({"bucket_mib": 1e308}, "bucket_mib"),
        ('{"straggler_cv": Infinity}', "straggler_cv"),
        ('{"intra_latency_s": NaN}', "intra_latency_s"),
    ],
)
def test_scenario_files_refuse_big_and_non_finite_numbers(tmp_path, capsys, scenario, field):
    path = _write(tmp_path, "scenario.json", scenario)
    code, _, err = run_cli(capsys, ["predict", "--scenario", path])
    assert_one_line_refusal(code, err, field)


def _hardware(**changes) -> dict:
    data = presets.get_hardware("dgx-a100").model_dump()
    data.update(changes)
    return data


def _workload(**changes) -> dict:
    data = presets.get_workload("bert-large").model_dump()
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("kind", "data", "field"),
    [
        ("hardware", _hardware(devices_per_node=2**63), "devices_per_node"),
        ("hardware", _hardware(cpu_cores_per_node=10**25), "cpu_cores_per_node"),
        ("hardware", _hardware(device_memory_bytes=1e308), "device_memory_bytes"),
        ("workload", _workload(micro_batch=2**63), "micro_batch"),
        ("workload", _workload(params=1e-308), "params"),
        ("workload", _workload(grad_bytes_per_param=1e308), "grad_bytes_per_param"),
    ],
)
def test_hardware_and_workload_files_refuse_out_of_bounds_numbers(tmp_path, capsys, kind, data, field):
    path = _write(tmp_path, f"{kind}.json", data)
    code, _, err = run_cli(capsys, ["predict", f"--{kind}", path])
    assert_one_line_refusal(code, err, field)


def test_profile_file_with_infinity_is_refused_naming_the_field(tmp_path, capsys):
    from scalesim.profiles import default_profile

    data = json.loads(default_profile().model_dump_json())
    data["compute"]["per_sample_s"] = "__INF__"
    text = json.dumps(data).replace('"__INF__"', "Infinity")
    path = _write(tmp_path, "profile.json", text)
    code, _, err = run_cli(capsys, ["predict", "--profile", path])
    assert_one_line_refusal(code, err, "compute.per_sample_s")
    data["compute"]["per_sample_s"] = 0.01
    data["fingerprint"]["device_count"] = 10**25
    path = _write(tmp_path, "profile.json", data)
    code, _, err = run_cli(capsys, ["predict", "--profile", path])
    assert_one_line_refusal(code, err, "fingerprint.device_count")


@pytest.mark.parametrize(
    ("row", "field"),
    [
        (f"{BIG},1,100", "devices"),
        (f"8,{BIG},100", "nodes"),
        ("8,1,inf", "samples_per_s"),
        ("8,1,nan", "samples_per_s"),
        ("8,1,1e400", "samples_per_s"),
    ],
)
def test_runs_csv_refuses_overflowing_and_non_finite_cells(tmp_path, capsys, row, field):
    path = _write(tmp_path, "runs.csv", f"devices,nodes,samples_per_s\n1,1,100\n{row}\n")
    code, _, err = run_cli(capsys, ["diagnose", path])
    assert_one_line_refusal(code, err, field)


def _case(**workload) -> dict:
    return {
        "format": "scalesim-validation-cases/1",
        "cases": [
            {
                "id": "t",
                "source": "test",
                "trust": "high",
                "comm": "allreduce",
                "throughput_unit": "images",
                "workload": {"model": "m", "precision": "fp32", "scaling": "weak", **workload},
                "hardware": {"gpu": "V100-SXM2 16GB", "gpus_per_node": 8, "intra_node": "nvlink2"},
                "points": [
                    {"devices": 1, "nodes": 1, "throughput": 100.0},
                    {"devices": 8, "nodes": 1, "throughput": 700.0},
                ],
            }
        ],
    }


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        ({"grad_bytes_per_param": 1e308, "params": 25e6}, "grad_bytes_per_param"),
        ({"params": 1e308}, "params"),
        ({"params": 2**63}, "params"),
        ({"samples_per_step_per_device": 1e300}, "samples_per_step_per_device"),
    ],
)
def test_validation_cases_refuse_out_of_bounds_numbers(tmp_path, capsys, workload, field):
    path = _write(tmp_path, "cases.json", _case(**workload))
    code, _, err = run_cli(capsys, ["validate", path])
    assert_one_line_refusal(code, err, field)


def test_validation_case_point_device_count_overflow(tmp_path, capsys):
    """The point is refused by name; since session 15 it is dropped from its case and flagged
    (the case keeps its anchor), and refused in one line where it is the anchor."""
    data = _case(params=25e6)
    data["cases"][0]["points"][1]["devices"] = 2**63
    code, out, err = run_cli(capsys, ["validate", _write(tmp_path, "cases.json", data), "--json"])
    # the anchor alone is left: nothing to score, exit 2 with one line (session 31)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no point was predicted" in err
    (case,) = json.loads(out)["cases"]
    assert [p["devices"] for p in case["points"]] == [1]
    assert any(
        f.startswith("point not read, not predicted: points.1: field 'devices'") for f in case["flags"]
    ), case["flags"]
    data["cases"][0]["points"][0]["devices"] = 2**63
    code, _, err = run_cli(capsys, ["validate", _write(tmp_path, "cases.json", data)])
    assert_one_line_refusal(code, err, "points.0.devices")


# ------------------------------------------------------------------ API


def test_scenario_model_refuses_a_device_count_of_two_to_the_63():
    with pytest.raises(ValueError, match="devices"):
        Scenario(devices=[2**63])
    with pytest.raises(ValueError, match="finite"):
        Scenario(bucket_mib=float("nan"))


@pytest.fixture(scope="module")
def profile():
    from scalesim.profiles import default_profile

    return default_profile()


def _api_calls(profile):
    """(call, argument name it must name) for every public entry point given the wrong thing."""
    from scalesim import (
        fit_runs,
        jsonio,
        predict,
        profiles,
        runs,
        runs_diagnosis,
        sweep,
        trace_diagnosis,
        validate,
    )

    return [
        (lambda: predict.predict({"name": "x"}), "profile"),
        (lambda: predict.predict(None), "profile"),
        (lambda: predict.predict(profile, {"devices": [8]}), "scenario"),
        (lambda: predict.predict(profile, "8"), "scenario"),
        (lambda: predict.scenario_inputs(profile, Scenario(), devices=[2**63]), "devices"),
        (lambda: predict.scenario_inputs(profile, Scenario(), devices=["a"]), "devices"),
        (lambda: sweep.sweep({}, Scenario(), {}), "profile"),
        (lambda: sweep.sweep(profile, None, {}), "base"),
        (lambda: sweep.sweep(profile, Scenario(), None), "axes"),
        (lambda: sweep.sweep(profile, Scenario(), [("micro_batch", [8])]), "axes"),
        (lambda: sweep.sweep(profile, Scenario(), {"micro_batch": 8}), "micro_batch"),
        (lambda: sweep.sweep(profile, Scenario(), {"micro_batch": "8,16"}), "micro_batch"),
        (lambda: sweep.sweep(profile, Scenario(), {"micro_batch": [8.5]}), "micro_batch"),
        (lambda: sweep.sweep(profile, Scenario(), {"micro_batch": [None]}), "micro_batch"),
        (lambda: sweep.sweep(profile, Scenario(), {"bucket_mib": [float("nan")]}), "bucket_mib"),
        (lambda: sweep.sweep(profile, Scenario(), {"bucket_mib": ["a"]}), "bucket_mib"),
        (lambda: sweep.sweep(profile, Scenario(), {"accumulation": [10**30]}), "accumulation"),
        (lambda: sweep.sweep(profile, Scenario(), {"strategy": [1]}), "strategy"),
        (lambda: sweep.sweep(profile, Scenario(), {"overlap": ["yes"]}), "overlap"),
        (lambda: sweep.sweep(profile, Scenario(), {"colour": [1]}), "colour"),
        (lambda: profiles.load_profile(None), "path"),
        (lambda: profiles.load_profile(3), "path"),
        (lambda: profiles.parse_profile(None), "profile"),
        (lambda: profiles.load_hardware(None), "hardware"),
        (lambda: profiles.load_workload({"name": "x"}), "workload"),
        (lambda: profiles.resolve_profile(profile=5), "profile"),
        (lambda: profiles.resolve_profile(hardware=["dgx-a100"]), "hardware"),
        (lambda: profiles.profile_from_presets({}, {}), "hardware"),
        (lambda: profiles.profile_from_presets(profile.hardware, None), "workload"),
        (lambda: profiles.compute_from_reference(None, profile.hardware), "workload"),
        (lambda: jsonio.read_json(None), "path"),
        (lambda: jsonio.load_model(None, Scenario), "path"),
        (lambda: validate.validate_file(None), "path"),
        (lambda: validate.validate_cases(None), "cases"),
        (lambda: validate.validate_cases([{"id": "x"}]), "cases"),
        (lambda: validate.predict_case({}), "case"),
        (lambda: validate.parse_cases(None), "validation file"),
        (lambda: runs.load_runs(None), "path"),
        (lambda: runs.parse_runs_text(None, "x"), "text"),
        (lambda: runs.parse_runs_text(b"devices", "x"), "text"),
        (lambda: runs.runs_from_records(None, "src"), "src"),
        (lambda: runs.runs_from_records([1, 2], "src"), "src"),
        (lambda: runs_diagnosis.diagnose_runs(None), "runs"),
        (lambda: runs_diagnosis.diagnose_runs({"devices": [1, 2]}), "runs"),
        (lambda: trace_diagnosis.diagnose_traces(None, "x"), "summaries"),
        (lambda: trace_diagnosis.diagnose_traces([], "x"), "summaries"),
        (lambda: trace_diagnosis.diagnose_traces([{"rank": 0}], "x"), "summaries"),
        (lambda: fit_runs.fit_runs(None), "runs"),
    ]


def test_public_functions_refuse_wrong_types_with_a_scalesim_error_naming_the_argument(profile):
    for call, name in _api_calls(profile):
        with pytest.raises(ScalesimError) as caught:
            call()
        message = str(caught.value)
        assert name in message, (name, message)
        assert "\n" not in message


def test_numeric_api_arguments_are_checked_against_the_bounds(runs_csv):
    from scalesim.fit_runs import fit_runs
    from scalesim.runs import load_runs
    from scalesim.runs_diagnosis import diagnose_runs

    runs = load_runs(runs_csv)
    for kwargs, name in [
        ({"params": math.inf}, "params"),
        ({"params": 1e-308}, "params"),
        ({"wire_bytes_per_param": math.nan}, "wire_bytes_per_param"),
        ({"critical_batch": math.inf}, "critical_batch"),
        ({"extrapolate_to": [2**63]}, "extrapolate_to"),
    ]:
        with pytest.raises(ScalesimError, match=name):
            diagnose_runs(runs, **kwargs)
    with pytest.raises(ScalesimError, match="params"):
        fit_runs(runs, params=math.nan)


def test_the_model_accepts_its_own_bounds_and_answers_finite_numbers():
    """The corners of the table (largest job, slowest link, largest model) stay finite."""
    from scalesim.predict import predict
    from scalesim.profiles import profile_from_presets
    from scalesim.schemas import LinkLevel, ReferenceThroughput

    slow = LinkLevel(
        kind="slow", busbw_GBps=QUANTITIES["busbw_GBps"].low, latency_s=QUANTITIES["latency_s"].high
    )
    hw = presets.get_hardware("dgx-a100").model_copy(
        update={
            "devices_per_node": 1024,
            "intra_node": slow,
            "inter_node": slow,
            "price_per_device_hour": QUANTITIES["price_per_device_hour"].high,
        }
    )
    wl = presets.get_workload("gpt-7b").model_copy(
        update={
            "params": QUANTITIES["params"].high,
            "wire_bytes_per_param": 64.0,
            "param_bytes_per_param": 64.0,
            "optimizer_bytes_per_param": 64.0,
            "activation_bytes_per_sample": QUANTITIES["activation_bytes"].high,
            # a one-device, compute-only reference: a cluster average of a 1e15-parameter model
            # would contradict its own communication (profiles.per_sample_from_reference refuses it)
            "reference": [
                ReferenceThroughput(
                    device_name="A100-SXM4 80GB",
                    samples_per_s=1e-3,
                    micro_batch=1,
                    source="corner of the bounds",
                )
            ],
        }
    )
    prof = profile_from_presets(hw, wl)
    top = Scenario(
        devices=[1, 1024, QUANTITIES["devices"].high],
        micro_batch=QUANTITIES["micro_batch"].high,
        accumulation=QUANTITIES["accumulation"].high,
        straggler_cv=10.0,
        slow_device=0,
        slow_factor=100.0,
        critical_batch_size=1.0,
        min_samples_to_quality=1e18,
        train_samples=1e18,
    )
    rows = predict(prof, top)
    text = json.dumps([r.model_dump() for r in rows], allow_nan=False)
    assert strict_json(text)
    assert all(r.step_time_s > 0 for r in rows)


# ------------------------------------------------------------------ share links


def test_share_link_profile_blob_is_checked_with_the_profile_bounds(profile):
    import base64
    import zlib

    from scalesim.app.state import AppState, decode_profile, decode_query, encode_query

    def blob(data: str) -> str:
        return base64.urlsafe_b64encode(zlib.compress(data.encode())).decode().rstrip("=")

    data = json.loads(profile.model_dump_json())
    data["compute"]["per_sample_s"] = "__X__"
    for bad, field in [("Infinity", "per_sample_s"), ("NaN", "per_sample_s"), (str(10**25), "per_sample_s")]:
        text = json.dumps(data).replace('"__X__"', bad)
        with pytest.raises(ScalesimError, match=field):
            decode_profile(blob(text))
        params = encode_query(AppState(), profile)
        params["prof"] = blob(text)
        params["src"] = "custom"
        state, shown, messages = decode_query(params)
        assert any(field in m for m in messages), messages
        assert shown.compute.per_sample_s == pytest.approx(profile.compute.per_sample_s)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cv", "inf"),
        ("cv", "nan"),
        ("mb", str(2**63)),
        ("gb", "1e400"),
        ("acc", BIG),
        ("ilat", "1e308"),
        ("price", "Infinity"),
        ("bkt", "nan"),
        ("dpn", BIG),
    ],
)
def test_share_link_controls_refuse_non_finite_and_overflowing_values(profile, key, value):
    from scalesim.app.state import AppState, decode_query, encode_query

    params = encode_query(AppState(), profile)
    params[key] = value
    state, _, messages = decode_query(params)
    assert any(f"'{key}=" in m for m in messages), messages
    assert getattr(state, key) != value


def test_app_bounds_are_the_tables_in_the_links_units():
    from scalesim.app.state import AppState

    for knob in KNOBS + LAYOUT_KNOBS:
        if knob.url_key in (None, "dlist", "slow"):  # device list text; rank under the app's cap
            continue
        annotation = AppState.model_fields[knob.url_key].annotation
        if knob.switch or knob.url_key == "p2p":  # on/off: a bool in the app (the link 1 or 0)
            assert annotation is bool, knob
            continue
        if knob.quantity is None:  # a choice of names: the app's field is a Literal of them
            # (and of '' where none may be asked: the attention kernel's, the timings' own; and
            # 'auto' where the scenario's None is the default: the schedule's, the recompute's)
            names = [n for part in get_args(annotation) for n in get_args(part) or (part,)]
            assert tuple(n for n in names if n not in ("", "auto")
                         or n in knob.choices) == knob.choices, knob
            continue
        schema = AppState.model_json_schema()["properties"][knob.url_key]
        limits = schema.get("anyOf", [schema])[0]
        b = knob.bound.scaled(knob.url_factor, knob.url_unit or knob.bound.unit)
        low = limits.get("minimum", limits.get("exclusiveMinimum"))
        high = limits.get("maximum", limits.get("exclusiveMaximum"))
        assert (low, high) == (b.low, b.high), knob


# ------------------------------------------------------------------ --json never NaN/Infinity


def _json_commands(tmp_path: Path, runs_csv: Path) -> list[list[str]]:
    cases = _write(tmp_path, "cases.json", _case(params=25e6))
    commands = [
        ["predict", "--json"],
        [
            "predict",
            "--json",
            "--hardware",
            "dgx-h100",
            "--workload",
            "gpt-7b",
            "--strategy",
            "zero3",
            "--devices",
            "8,64,1048576",
            "--train-samples",
            "1e18",
            "--price",
            "1e6",
        ],
        [
            "predict",
            "--json",
            "--global-batch",
            "1024",
            "--devices",
            "1-64",
            "--accumulation",
            "2",
            "--critical-batch",
            "1",
            "--min-samples",
            "1e18",
        ],
        [
            "predict",
            "--json",
            "--batch",
            str(2**24),
            "--accumulation",
            "4096",
            "--inter-busbw",
            "0.001",
            "--inter-latency",
            "1",
            "--straggler-cv",
            "10",
            "--devices",
            "1,16,1048576",
        ],
        [
            "sweep",
            "--format",
            "json",
            "--devices",
            "1-1024",
            "--bucket-mib-values",
            "0.1,100000",
            "--straggler-cv-values",
            "0,10",
            "--inter-busbw-values",
            "0.001,100000",
        ],
        ["presets", "--json"],
        ["validate", cases, "--json"],
        ["validate", str(validation_path("parallel_cases.json")), "--json"],
        ["plan", "--json", "--devices", "8,64", "--global-batch", "512"],
        ["topo", str(ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100_x8_nics_topo.txt"), "--json"],
        [
            "plan",
            "--json",
            "--all",
            "--model",
            "gpt-1t",
            "--hardware",
            "dgx-a100",
            "--devices",
            "8",
            "--global-batch",
            "8",
        ],
        ["diagnose", str(runs_csv), "--json"],
        [
            "diagnose",
            str(runs_csv),
            "--json",
            # the runs' own count (BERT-large's): 1e15, the bound's top, is refused for these
            # runs since session 59 (no link exchanges its gradient in their steps; below)
            "--params",
            "336e6",
            "--critical-batch",
            "1",
            "--extrapolate",
            "1048576",
        ],
    ]
    from test_traces import gpu_trace

    traces = [_write(tmp_path, f"rank{r}.json", gpu_trace(rank=r, slow_us=100.0 * r)) for r in (0, 1)]
    commands.append(["diagnose", "--trace", *traces, "--json"])
    commands += [["schema", name] for name in SCHEMAS]
    return commands


def test_a_parameter_count_at_the_bounds_top_is_refused_for_runs_it_cannot_be(capsys, runs_csv):
    """--params 1e15 on the inter-server runs (BERT-large's steps): no link exchanges 4 PB of
    gradients in them, so one line, exit 2, not a report of a link held to the bound."""
    code, out, err = run_cli(capsys, ["diagnose", str(runs_csv), "--json", "--params", "1e15"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "past any link's 100,000 GB/s: check --params" in err


def test_every_json_output_is_strict_json(tmp_path, capsys, runs_csv):
    from scalesim.cli.main import ORDER

    seen = set()
    for argv in _json_commands(tmp_path, runs_csv):
        code, out, err = run_cli(capsys, argv)
        assert code == 0, (argv, err)
        assert strict_json(out), argv
        seen.add(argv[0])
    # calibrate writes its profile with the same validated model; app serves HTML
    assert seen == set(ORDER) - {"calibrate", "app"}


def test_the_json_writer_refuses_non_finite_numbers_naming_where():
    from scalesim.jsonio import to_json_text

    assert strict_json(to_json_text({"a": [np.float64(1.5), np.int64(2)]})) == {"a": [1.5, 2]}
    with pytest.raises(ScalesimError, match=r"rows\[1\]\.step_time_s"):
        to_json_text({"rows": [{"step_time_s": 1.0}, {"step_time_s": math.inf}]})
    with pytest.raises(ScalesimError, match=r"\[0\]"):
        to_json_text([np.float64("nan")])


# ------------------------------------------------------------------ the table itself


def test_flag_parsers_name_the_bounds():
    with pytest.raises(Exception, match="1,048,576"):
        flag_type("devices")(BIG)
    with pytest.raises(Exception, match="finite"):
        flag_type("cv")("nan")
    with pytest.raises(Exception, match="5000 digits"):  # beyond Python's int() digit limit
        flag_type("devices")("9" * 5000)
    with pytest.raises(Exception, match="overflows a float"):
        flag_type("params")("1e400")
    with pytest.raises(ScalesimError, match="bits is outside"):  # no OverflowError on the way
        check_number("params", 10**5000, "params")
    assert flag_list_type("devices")("1-8") == [1, 2, 4, 8]
    assert flag_type("message_bytes", 1 / 2**20, "MiB")("256") == 256.0


def test_every_number_of_every_file_format_has_two_bounds():
    """A number with no upper bound could overflow; a number with no lower one could be
    negative. Every numeric field of every schema has both (JSON Schema minimum/maximum)."""

    def numeric(schema):
        return schema.get("type") in ("integer", "number")

    for name, model in SCHEMAS.items():
        schema = model.model_json_schema()
        for part in [schema, *schema.get("$defs", {}).values()]:
            for field, spec in part.get("properties", {}).items():
                options = spec.get("anyOf", [spec])
                items = [o.get("items", {}) for o in options if o.get("type") == "array"]
                for option in [*options, *items]:
                    if not numeric(option):
                        continue
                    has_low = "minimum" in option or "exclusiveMinimum" in option
                    has_high = "maximum" in option or "exclusiveMaximum" in option
                    assert has_low and has_high, (name, part.get("title"), field)


def test_docs_bounds_page_is_the_table():
    text = (ROOT / "docs" / "bounds.md").read_text()
    # the whole table right after its introduction: a stray header row above it breaks it
    assert "(a test keeps them equal).\n\n" + markdown_table() + "\n" in text


# ------------------------------------------------------------------ calibration threads


def test_threads_default_to_omp_num_threads_when_it_is_set(monkeypatch):
    import os

    from scalesim.calibration.options import default_threads, omp_threads

    cores = os.cpu_count() or 1
    assert default_threads(1, {}, load=0.0) == cores  # an idle machine's (busy: test_block_fit_busy)
    assert default_threads(2, {"OMP_NUM_THREADS": ""}, load=0.0) == max(1, cores // 2)
    assert default_threads(4, {"OMP_NUM_THREADS": "3"}) == 3  # the user's (or torchrun's) value
    assert omp_threads({"OMP_NUM_THREADS": "8,2"}) == 8  # nested levels: the outer one
    for bad in ("0", "abc", "nan", BIG):
        with pytest.raises(ScalesimError, match="OMP_NUM_THREADS"):
            omp_threads({"OMP_NUM_THREADS": bad})


def test_torchrun_children_get_the_machines_share_unless_the_user_chose(monkeypatch):
    import argparse
    import os

    from scalesim.calibration import options
    from scalesim.calibration.options import default_threads

    monkeypatch.setattr(options, "machine_load", lambda: 0.0)  # an idle machine

    from scalesim.cli.cmd_calibrate import child_environment

    args = argparse.Namespace(nproc_per_node=2, threads=None)
    env = child_environment(args, {"PATH": "/bin"})
    assert env["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))
    assert env["OMP_NUM_THREADS"] == str(default_threads(2, {}))
    assert child_environment(args, {"OMP_NUM_THREADS": "1"})["OMP_NUM_THREADS"] == "1"
    chosen = argparse.Namespace(nproc_per_node=2, threads=5)  # --threads goes on the command line
    assert "OMP_NUM_THREADS" not in child_environment(chosen, {})


def test_calibration_setup_uses_omp_num_threads(monkeypatch):
    """The real setup: a one-process group with OMP_NUM_THREADS=1 computes on one thread."""
    torch = pytest.importorskip("torch")
    from scalesim.calibration import dist as cdist
    from scalesim.calibration.options import build_parser

    before = torch.get_num_threads()
    for key in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    args = build_parser().parse_args(["--device", "cpu", "--timeout", "30"])
    try:
        cdist.setup(args)
        assert torch.get_num_threads() == 1
    finally:
        cdist.shutdown()
        torch.set_num_threads(before)


def test_random_inputs_anywhere_inside_the_bounds_give_finite_predictions():
    """150 seeded draws over the whole table (a third of the values at an edge, the rest
    log-uniform): the model never answers NaN or infinity for inputs the bounds allow."""
    from scalesim.predict import predict
    from scalesim.profiles import profile_from_presets
    from scalesim.schemas import Hardware, LinkLevel, Workload

    rng = np.random.default_rng(14)

    def draw(quantity):
        b = QUANTITIES[quantity]
        r = rng.random()
        if r < 0.15:
            value = b.low
        elif r < 0.3:
            value = b.high
        else:
            low = max(b.low, b.least_nonzero or 1e-9)  # a price: 0, else from its least
            value = math.exp(rng.uniform(math.log(low), math.log(b.high)))
        return int(min(max(round(value), b.low), b.high)) if b.integer else value

    def link():
        return LinkLevel(kind="x", busbw_GBps=draw("busbw_GBps"), latency_s=draw("latency_s"))

    for _ in range(150):
        g = draw("devices_per_node")
        hw = Hardware(
            name="h",
            device_name="A100-SXM4 40GB",
            devices_per_node=g,
            device_memory_bytes=draw("device_memory_bytes"),
            peak_tflops=draw("peak_tflops"),
            memory_bandwidth_GBps=draw("memory_bandwidth_GBps"),
            cpu_cores_per_node=draw("cpu_cores"),
            device_speed_cv=draw("cv"),
            intra_node=link(),
            inter_node=link(),
            comm_compute_contention=draw("fraction"),
            price_per_device_hour=draw("price_per_device_hour"),
        )
        wl = Workload.model_validate(
            dict(
                presets.get_workload("bert-large").model_dump(),
                params=draw("params"),
                wire_bytes_per_param=draw("wire_bytes_per_param"),
                param_bytes_per_param=draw("bytes_per_param"),
                grad_bytes_per_param=draw("bytes_per_param"),
                optimizer_bytes_per_param=draw("bytes_per_param"),
                activation_bytes_per_sample=draw("activation_bytes"),
                micro_batch=draw("micro_batch"),
            )
        )
        p = draw("devices")
        p = p if p <= g else max(p // g, 1) * g
        scenario = Scenario(
            devices=[1, p],
            micro_batch=draw("micro_batch"),
            accumulation=draw("accumulation"),
            bucket_mib=draw("bucket_mib"),
            straggler_cv=draw("cv"),
            slow_device=0,
            slow_factor=draw("slow_factor"),
            critical_batch_size=draw("critical_batch"),
            min_samples_to_quality=draw("samples_total"),
            train_samples=draw("samples_total"),
            strategy=str(rng.choice(["ddp", "zero1", "zero2", "zero3"])),
            algorithm=str(rng.choice(["auto", "ring", "tree", "hierarchical"])),
            overlap=bool(rng.random() < 0.5),
        )
        try:
            rows = predict(profile_from_presets(hw, wl), scenario)
        except ScalesimError:  # a one-line refusal (e.g. a derived compute time out of bounds)
            continue
        strict_json(json.dumps([r.model_dump() for r in rows], allow_nan=False))


@pytest.mark.parametrize(
    "model, field, value",
    [
        (Scenario, "micro_batch", True),
        (Scenario, "bucket_mib", False),
        (Scenario, "devices", [1, True]),
        (Scenario, "slow_device", False),
    ],
)
def test_true_or_false_is_not_a_number_in_a_file(model, field, value):
    """JSON ``true`` where a number goes is refused by name, as the bounds refuse it (before:
    pydantic read ``"micro_batch": true`` as a micro-batch of 1, silently)."""
    with pytest.raises(ValidationError, match="true/false is not a number"):
        model.model_validate({field: value})
    assert Scenario.model_validate({"overlap": False}).overlap is False  # a yes/no field


def test_true_in_a_workload_file_is_one_line(tmp_path, capsys):
    from scalesim.presets import get_workload

    data = get_workload("resnet50").model_dump(mode="json")
    data["micro_batch"] = True
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["predict", "--workload", str(path)])
    assert code == 2
    assert "field 'micro_batch': true/false is not a number" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["a\nb", "lab\x1b[2J", "x\u2028y", "tab\there", "gpu\u202eevil"])
def test_a_name_is_one_line_of_printable_text(tmp_path, capsys, name):
    """A name printed on one line (predict's 'profile:' line, plan's header) holds no line
    break or control character, which would split the line or drive the terminal (ESC):
    refused in a file by field name, and by ``calibrate --name`` before anything is measured
    (before: 'profile: a' and 'b + mlp(...)' on two lines)."""
    hardware = presets.get_hardware("dgx-a100").model_dump(mode="json")
    with pytest.raises(ValidationError, match="one line"):
        SCHEMAS["hardware"].model_validate({**hardware, "name": name})
    code, _, err = run_cli(
        capsys,
        ["calibrate", "--quick", "--phases", "compute", "--name", name, "--out", str(tmp_path / "p.json")],
    )
    assert code == 2 and "--name" in err and err.count("\n") == 1, err
    assert not (tmp_path / "p.json").exists()
    assert SCHEMAS["hardware"].model_validate({**hardware, "name": "GPU 名前 ü"})  # unicode


def test_a_negative_zero_is_read_as_zero(tmp_path, capsys):
    """`predict --price -0 --train-samples 1e9` printed a cost of `-0` and `$-0 per
    device-hour`, and `"cost_usd": -0.0` in JSON; a file's `"price_per_device_hour": -0.0`
    alike. A zero is read as +0 now (flags: `bounds.parse_number`; files: `_Strict`)."""
    import json

    from scalesim.bounds import parse_number
    from scalesim.cli.main import main
    from scalesim.schemas import Scenario

    assert str(parse_number("-0", "price_per_device_hour", "x")) == "0.0"
    assert str(Scenario.model_validate({"price_per_device_hour": -0.0}).price_per_device_hour) == "0.0"
    assert main(["predict", "--price", "-0", "--train-samples", "1e9", "--devices", "8", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert str(rows[0]["cost_usd"]) == "0.0"
    assert main(["predict", "--price", "-0", "--train-samples", "1e9", "--devices", "8"]) == 0
    out = capsys.readouterr().out
    assert "$-0" not in out and not any(line.endswith(" -0") for line in out.splitlines()), out


# ------------------------------------------- session 19: a refused value as the user gave it

# (flag, typed, the refusal's words): the value as typed beside bounds with separators; was
# Python's float text ('1000000.0', '1e+20', '-5.0', '0.0') beside '100,000'
TYPED_REFUSALS = [
    ("--inter-busbw-values", "10,1e6", "1e6 is outside 0.001 <= x <= 100,000 GB/s"),
    ("--inter-busbw-values", "1e20", "1e20 is outside 0.001 <= x <= 100,000 GB/s"),
    ("--inter-busbw-values", "-0.0", "-0.0 is outside 0.001 <= x"),
    ("--inter-busbw-values", "-5", "-5 is outside 0.001 <= x"),
    ("--inter-busbw-values", " 1e9 ", "1e9 is outside 0.001 <= x"),
    # session 50: an underscore is no digit (bounds.read_number); was read as 1000000
    ("--inter-busbw-values", "1_000_000", "'1_000_000' is not a number; write it in digits: 1000000"),
    ("--inter-busbw-values", "100000.5", "100000.5 is outside 0.001 <= x <= 100,000 GB/s"),
    ("--inter-busbw-values", "1e-9", "1e-9 is outside 0.001 <= x"),
    ("--inter-busbw-values", "1e400", "'1e400' overflows a float; it is outside 0.001 <= x"),
    ("--inter-busbw-values", "nan", "nan is not a finite number"),
    ("--inter-busbw-values", "inf", "inf is not a finite number"),
    ("--bucket-mib-values", "0,-5", "0 is outside 0.1 <= x"),
]


@pytest.mark.parametrize("flag, typed, words", TYPED_REFUSALS)
def test_a_refused_flag_value_is_quoted_as_typed(capsys, flag, typed, words):
    code, _, err = run_cli(capsys, ["sweep", flag, typed])
    assert_one_line_refusal(code, err, words)
    assert "e+" not in err and ": 0.0 is" not in err and "1000000.0" not in err, err


def test_a_bound_is_written_exactly_not_rounded_to_six_digits(capsys):
    """The micro-batch's bound is 2**24: it read '1.67772e+07' (':g'), which is not the bound,
    beside a refused 16777217 that looked below it."""
    code, _, err = run_cli(capsys, ["predict", "--batch", "16777217"])
    assert_one_line_refusal(code, err, "16777217 is outside 1 <= x <= 16,777,216 samples")
    assert "e+" not in markdown_table()


@pytest.mark.parametrize("value, words", [
    (1e20, "1e20 given; allowed: 0.001 <= x <= 100,000 GB/s"),
    (100000.5, "100,000.5 given; allowed: 0.001 <= x <= 100,000 GB/s"),
    (-5, "-5 given; allowed: 0.001 <= x"),
])
def test_a_json_field_out_of_bounds_is_written_like_its_bounds(tmp_path, capsys, value, words):
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"inter_busbw_GBps": value}))
    code, _, err = run_cli(capsys, ["predict", "--scenario", str(scenario)])
    assert_one_line_refusal(code, err, f"field 'inter_busbw_GBps': {words}")


def test_a_checked_value_without_text_is_written_like_its_bounds():
    """Values read from files (nccl-tests columns, API arguments) have no text of their own."""
    with pytest.raises(ScalesimError, match=r"^x: 1e20 is outside 0.001 <= x <= 100,000 GB/s"):
        check_number("busbw_GBps", 1e20, "x")
    with pytest.raises(ScalesimError, match=r"^x: 2,000,000 is outside 1 <= x <= 1,048,576 "):
        check_number("devices", 2_000_000, "x")


def test_a_rescaled_bound_is_written_readably_with_its_value_unchanged():
    """Session 45 audit: the app's deadline (hours) refused 0.0001 as outside
    '0.0002777777777777778 <= x <= 876,600 hours' (1 s in hours). The edge reads '1 s
    (~0.000278 hours)' and the control's refusal '~0.000278'; the bound is the same number."""
    from scalesim.app.state import default_state, refusal

    from scalesim.bounds import bound, edge_number

    table = bound("deadline_s")
    hours = table.scaled(1 / 3600, "hours")
    assert hours.low == table.low / 3600 and hours.high == table.high / 3600
    assert hours.text() == "1 s (~0.000278 hours) <= x <= 876,600 hours"
    assert "0.00027777" not in hours.problem(0.0001)
    assert hours.problem(0.0002778) is None and hours.problem(0.0002777) is not None
    # edges that read exactly stay exact: whole numbers, a few digits, the table's own
    assert edge_number(1_048_576) == "1,048,576" and edge_number(0.001) == "0.001"
    assert edge_number(1 / 3600) == "~0.000278"
    assert table.text() == "1 <= x <= 3,155,760,000 s"
    said = refusal(default_state(), "dl", 0.0001)
    assert said == ("Deadline (hours): 0.0001 is below the smallest value the planner takes, "
                    "~0.000278; keeping empty.")
