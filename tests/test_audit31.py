"""Session 31's CLI audit: each wrong input names what it is and what to do (one stderr line,
exit 2), where it said something true but unhelpful or joined data that cannot belong."""

from __future__ import annotations

import gzip
import json

import pytest

from scalesim.cli.main import main

SMI_HEADER = ("timestamp, index, clocks.current.sm [MHz], clocks.max.sm [MHz], temperature.gpu, "
              "power.draw [W], utilization.gpu [%], clocks_throttle_reasons.active\n")


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _cpu_trace(rank: int) -> dict:
    events = []
    for n in (1, 2):
        t = (n - 1) * 1000.0
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                    "tid": 1, "ts": t, "dur": 1000.0, "args": {}},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                    "ts": t + 10, "dur": 600.0, "args": {}},
                   {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1,
                    "tid": 1, "ts": t + 700, "dur": 200.0, "args": {}}]
    return {"traceEvents": events, "distributedInfo": {"backend": "gloo", "rank": rank,
                                                       "world_size": 2}}


def test_files_given_in_the_wrong_place_say_where_they_go(tmp_path, capsys):
    trace = tmp_path / "rank0.json.gz"
    with gzip.open(trace, "wt") as fh:
        fh.write(json.dumps(_cpu_trace(0)))
    assert main(["diagnose", str(trace)]) == 2
    assert f"read a trace with scalesim diagnose --trace {trace}" in _one_line(capsys)
    runs = tmp_path / "runs.csv"
    runs.write_text("devices,nodes,step_time_s\n1,1,1.0\n2,1,1.1\n")
    assert main(["diagnose", "--trace", str(runs)]) == 2
    assert "a runs file (CSV, or a JSON list of runs) is read without --trace" in _one_line(capsys)
    smi = tmp_path / "smi.csv"
    smi.write_text(SMI_HEADER + "2026/01/01 00:00:00.000, 0, 1410 MHz, 1410 MHz, 60, 300 W, "
                   "99 %, 0x0\n")
    assert main(["diagnose", str(smi)]) == 2
    assert "an nvidia-smi log, not a runs file; give it with --smi" in _one_line(capsys)


def test_a_gpu_log_beside_a_cpu_job_is_refused(tmp_path, capsys):
    """It was joined: 'nvidia-smi: device 2 runs at 1,110 MHz' in a gloo job's evidence."""
    paths = []
    for rank in (0, 1):
        path = tmp_path / f"r{rank}.json"
        path.write_text(json.dumps(_cpu_trace(rank)))
        paths.append(str(path))
    smi = tmp_path / "smi.csv"
    smi.write_text(SMI_HEADER + "".join(
        f"2026/01/01 00:00:00.000, {i}, 1410 MHz, 1410 MHz, 60, 300 W, 99 %, 0x0\n"
        for i in range(4)))
    assert main(["diagnose", "--trace", *paths]) == 0
    capsys.readouterr()
    assert main(["diagnose", "--trace", *paths, "--smi", str(smi)]) == 2
    assert "the traces ran on CPU processes" in _one_line(capsys)


@pytest.mark.parametrize("argv, says", [
    (["predict", "--devices", "1-"], "range '1-' needs both ends, as in 1-8"),
    (["plan", "--precision", "fp8", "--hardware", "dgx-a100", "--workload", "llama3-8b",
      "--devices", "8", "--global-batch", "64"], "leave it at bf16"),
    (["predict", "--workload", "nope"], "llama3-8b"),  # the transformer presets are listed too
])
def test_refusals_say_how_to_fix(capsys, argv, says):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's refusal of a flag's value
        code = exc.code
    assert code == 2
    assert says in _one_line(capsys)


@pytest.mark.parametrize("change, says", [
    ({"name": " "}, "field 'name': is empty"),
    ({"instance_sizes": [3]}, "instance_sizes: 3 GPUs does not divide a server's 8"),
])
def test_hardware_files_that_print_nonsense_are_refused(tmp_path, capsys, change, says):
    """An empty name printed 'hardware:  (...)'; an instance of 3 GPUs billed a server of 8 as
    9 'as many as hold a server's 8 GPUs'."""
    from scalesim.presets import get_hardware

    data = get_hardware("dgx-h100").model_dump(mode="json") | change
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(data))
    assert main(["predict", "--hardware", str(path), "--devices", "8"]) == 2
    assert says in _one_line(capsys)


def test_a_users_hardware_file_is_not_called_a_preset(tmp_path, capsys):
    from scalesim.presets import get_hardware

    data = get_hardware("dgx-h100").model_dump(mode="json") | {"price_per_device_hour": 2.5}
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(data))
    assert main(["decide", "--hardware", str(path), "--devices", "8", "--train-samples", "1e6"]) == 0
    out = capsys.readouterr().out
    assert "hardware preset dgx-h100" not in out and "hardware dgx-h100" in out


@pytest.mark.parametrize("row, says", [
    ("0, 99999 MHz, 1410 MHz, 60, 300 W, 99 %, 0x0", "SM clock 99999 MHz above its maximum"),
    ("0, 1410 MHz, 1410 MHz, 9999, 300 W, 99 %, 0x0", "temperature 9999 C"),
    ("0, 1410 MHz, 0 MHz, 60, 300 W, 99 %, 0x0", "clocks.max.sm 0 MHz"),
    ("0, 1410 MHz, 1410 MHz, 60, 300 W, 99 %, 0xZZZ", "'0xZZZ' is not a hex mask"),
    # session 38: read as 300 W and 1,410 MHz (the unit skipped), printed as 'util % 250'
    ("0, 1410 MHz, 1410 MHz, 60, 300 kW, 99 %, 0x0", "'300 kW' is in kW, where nvidia-smi writes W"),
    ("0, 1410 GHz, 1410 MHz, 60, 300 W, 99 %, 0x0",
     "'1410 GHz' is in GHz, where nvidia-smi writes MHz"),
    ("0, 1410 MHz, 1410 MHz, 60, 300 W, 250 %, 0x0", "utilization.gpu 250 %"),
])
def test_smi_readings_no_gpu_gives_are_refused(tmp_path, capsys, row, says):
    path = tmp_path / "smi.csv"
    path.write_text(SMI_HEADER + f"2026/01/01 00:00:00.000, {row}\n")
    assert main(["diagnose", "--smi", str(path)]) == 2
    assert says in _one_line(capsys)


def test_a_device_without_a_clock_reading_is_said(tmp_path):
    from scalesim.sources.nvidia_smi import parse_smi_csv

    path = tmp_path / "smi.csv"
    path.write_text(SMI_HEADER + "".join(
        f"2026/01/01 00:00:00.000, {i}, {clock}, 1410 MHz, 60, 300 W, 99 %, 0x0\n"
        for i, clock in ((0, "1410 MHz"), (1, "nan MHz"), (2, "1410 MHz"))))
    report = parse_smi_csv(path)
    assert [d.index for d in report.devices] == [0, 2]
    assert any(n.startswith("device 1 in the log with no SM clock reading") for n in report.notes)


def test_a_noise_scale_below_one_sample_is_used_without_blaming_the_link():
    """The shipped H200 calibration measured B_simple 0.23: the app put it in the critical
    batch control (>= 1), warned 'Share link: ... ask the sender for a new link', left the
    control empty and the time-to-quality tab asked for a critical batch, while its headline
    used the 0.23 as predict does. Now the control stays empty with a message that says so
    (no link is blamed), and the tab's curve uses the profile's noise scale."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import AppState, profile_defaults

    from scalesim import presets
    from scalesim.profiles import profile_from_presets
    from scalesim.schemas import NoiseScale

    profile = profile_from_presets(presets.get_hardware("dgx-h100"),
                                   presets.get_workload("gpt-7b")).model_copy(update={
        "noise_scale": NoiseScale(b_simple=0.23, small_batch=32, big_batch=64)})
    messages, notes = [], []
    assert profile_defaults(profile, messages, notes)["cbs"] is None
    assert messages == []  # nothing is wrong: a link carrying this profile warns of nothing
    assert notes == ["the profile's measured noise scale B_simple (0.23 samples) is below the "
                        "critical batch control's least (1 sample): the control ('cbs') stays "
                        "empty and the model uses the measured value"]
    plan = make_plan(profile, AppState(dmax=16))
    assert plan.quality  # the curve is drawn


def test_plan_in_fp8_says_its_mfu_is_against_the_fp8_peak(capsys):
    assert main(["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
                 "--global-batch", "64", "--precision", "fp8"]) == 0
    out = capsys.readouterr().out
    assert "(docs/model.md §13, fp8); MFU against the fp8 peak" in out
