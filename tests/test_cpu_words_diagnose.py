"""Session 20: a CPU calibration's words in diagnose and in the app's controls.

`scalesim diagnose` on runs measured on CPU processes (a runs file's ``device`` column names
them, ``CPU: <model>`` as calibrate names its device, or ``cpu``) said 'devices nodes', 'Inter-
server link', 'intra-server link', 'devices on servers'; a CPU trace 'grows with devices'. The
Diagnose page's axes said 'devices'; the planner's sidebar 'Devices per server', 'Intra-server
link', 'Price per device-hour' whatever the profile. They follow ``device_nouns`` now; a GPU
profile's words are as they were."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from app_harness import open_app, open_diagnose_page, run_clean, upload_profile
from cli_harness import diagnose_file, diagnosed_once, run_cli
from scalesim.app import charts
from scalesim.app.control_labels import B_LABELS, GRID_LABELS, LABELS, MODE_LABELS, label
from scalesim.app.plan import make_plan
from scalesim.app.planner_page import CPU_INTRA_HELP, INTRA_HELP
from scalesim.app.report import scenario_lines
from scalesim.app.state import default_state, refusal, with_profile_defaults
from streamlit.testing.v1 import AppTest
from test_cpu_words import TRACES, cpu_profile

from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.runs import parse_runs_text

# runs that cross from one server (host) of 8 to several: a knee at the crossing
RUNS = [(1, 1, 0.100), (2, 1, 0.102), (4, 1, 0.105), (8, 1, 0.110), (16, 2, 0.150),
        (32, 4, 0.170)]
GPU_WORDS = ("device", "server", "node", "GPU")
DIAGNOSES: dict = {}  # the reports of the tests that share them (diagnosed_once), by arguments


def runs_csv(device: str | None = None) -> str:
    """``RUNS`` as a runs file, with a ``device`` column where ``device`` is given."""
    head = "devices,nodes,step_time_s,per_device_batch" + (",device" if device else "")
    rows = [f"{d},{n},{t},32" + (f",{device}" if device else "") for d, n, t in RUNS]
    return "\n".join([head, *rows]) + "\n"


def test_diagnose_of_cpu_runs_says_processes_and_hosts(capsys, tmp_path):
    code, out, err = diagnose_file(capsys, tmp_path, runs_csv("CPU: AMD EPYC"),
                                   "--extrapolate", "64")
    assert code == 0, err
    lines = out.splitlines()
    assert "Likely cause: Inter-host link" in lines
    assert "  - efficiency 91% at 8 processes in one host, 67% at 16 on 2 hosts (largest drop " \
           "inside a host: 4%)" in lines
    head = next(i for i, line in enumerate(lines) if line.startswith("processes hosts "))
    assert lines[head + 1].split()[:2] == ["1", "1"] and len(lines[head + 1]) == len(lines[head])
    assert "knee: 8 -> 16 processes, efficiency -24.2 points, crossing a host boundary" in lines
    assert any(line.startswith("  intra-host link: gradient transfer") for line in lines)
    assert any(line.startswith("  inter-host link: gradient transfer") for line in lines)
    assert any(line.endswith("input supply per host not limiting") for line in lines)
    assert any(line.startswith("      64 processes on   8 hosts: ") for line in lines)
    assert "note: one per-process batch only: fixed overhead per micro-step not separable from " \
           "per-sample time (taken as 0)" in lines
    assert lines[-1].endswith("the host's memory is unknown, so check that bigger batches fit")
    # every sentence of ours (the remedies' notes quote the profile and its sources)
    ours = [line for line in lines if "Split the model" not in line
            and "Hopper attention" not in line and "tensor-parallel" not in line
            and "in fp8" not in line]
    assert not [line for line in ours if any(w in line for w in GPU_WORDS)]


def test_the_same_runs_without_a_device_keep_the_gpu_words_and_the_numbers(capsys, tmp_path,
                                                                          monkeypatch):
    # the text of the GPU file prints the report of its --json; the file is named runs.csv as
    # the Diagnose page names an upload, so that page's test below reads the same report
    diagnosed_once(monkeypatch, DIAGNOSES)
    monkeypatch.chdir(tmp_path)
    here = Path()
    code, gpu, err = diagnose_file(capsys, here, runs_csv(), "--json")
    assert code == 0, err
    code, cpu, err = diagnose_file(capsys, here, runs_csv("cpu"), "--json")
    assert code == 0, err
    gpu, cpu = json.loads(gpu), json.loads(cpu)
    assert gpu["table"] == cpu["table"] and gpu["details"]["fit"] == cpu["details"]["fit"]
    assert gpu["cause"]["label"] == "Inter-server link" and cpu["cause"]["label"] == "Inter-host link"
    assert gpu["details"]["fitted_profile"]["hardware"]["device_name"] == "measured"
    assert cpu["details"]["fitted_profile"]["hardware"]["device_name"] == "CPU: cpu"
    code, text, err = diagnose_file(capsys, here, runs_csv())
    assert any(line.startswith("devices nodes   samples/s") for line in text.splitlines())
    assert "knee: 8 -> 16 devices, efficiency -24.2 points, crossing a server boundary" in text


@pytest.mark.parametrize("text, words", [
    ("devices,nodes,step_time_s,device\n1,1,0.1,cpu\n2,1,0.11,H100\n",
     "runs.csv: run 1 ran on 'cpu', run 2 on 'H100'; one device per runs file"),
    (runs_csv("x" * 201), "device: a name of at most 200 characters"),
])
def test_a_runs_file_names_one_device(capsys, tmp_path, text, words):
    code, out, err = diagnose_file(capsys, tmp_path, text)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err


def test_a_gpu_name_keeps_the_fitted_device_and_a_row_without_one_takes_the_files():
    gpu = parse_runs_text(runs_csv("NVIDIA H100"), "runs.csv")
    assert gpu.device_name == "measured" and not any("ignored" in n for n in gpu.notes)
    text = runs_csv("CPU: AMD EPYC").replace("0.102,32,CPU: AMD EPYC", "0.102,32,")
    assert parse_runs_text(text, "runs.csv").device_name == "CPU: AMD EPYC"


def test_cpu_runs_with_a_gpu_transformer_are_refused_in_one_line(capsys, tmp_path):
    code, out, err = diagnose_file(capsys, tmp_path, runs_csv("cpu"), "--workload",
                                   "bert-large", "--gpu", "A100 80GB")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "the runs ran on CPU processes (device 'CPU: cpu'); --workload" in err


def test_a_cpu_trace_asks_for_runs_at_several_process_counts(capsys):
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *TRACES])
    assert code == 0, err
    assert ("one run traced: whether the share grows with processes needs runs at several "
            "process counts (scalesim diagnose runs.csv)") in out


# ------------------------------------------------------------------ the Diagnose page

def _axes(at: AppTest) -> list[tuple[str, str]]:
    """(x title, the device count's tooltip title) of each chart on the page."""
    out = []
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        layer = spec.get("layer", [spec])[-1 if "layer" in spec else 0]
        encoding = (spec.get("layer") or [spec])[0]["encoding"]
        tip = next(t for t in encoding["tooltip"] if t["field"] == "devices")
        out.append((encoding["x"]["title"], tip.get("title", tip["field"])))
        assert layer  # a chart drawn
    return out


def test_the_diagnose_page_counts_processes_for_cpu_runs():
    at = open_diagnose_page(runs_csv("CPU: AMD EPYC"))
    assert at.subheader[0].value == "Likely cause: Inter-host link"
    assert "in one host" in at.markdown[0].value
    assert _axes(at) == [("processes (log scale)", "processes"), ("processes", "processes")]
    assert list(at.dataframe[-1].value.columns[:2]) == ["processes", "hosts"]


def test_the_diagnose_page_keeps_the_gpu_words(monkeypatch):
    diagnosed_once(monkeypatch, DIAGNOSES)  # the report of the GPU runs' CLI test above
    at = open_diagnose_page(runs_csv())
    assert at.subheader[0].value == "Likely cause: Inter-server link"
    assert _axes(at) == [("devices (log scale)", "devices"), ("devices", "devices")]
    assert list(at.dataframe[-1].value.columns[:2]) == ["devices", "nodes"]


# ------------------------------------------------------------------ the planner's controls

GPU_LABELS = {  # the labels as they were (session 19), which a GPU profile keeps
    "dmax": "Largest device count", "dpn": "Devices per server",
    "intra": "Intra-server link", "inter": "Inter-server link",
    "price": "Price per device-hour (USD)", "focus": "Device count for remedies and A vs B",
    "slow": "Slow device rank (empty: none)", "lw": "Loader workers per device (empty: the "
    "profile's best)", "tp": "Tensor parallel (tp, inside one server)",
}


def test_a_label_is_the_gpu_one_or_in_the_cpu_nouns():
    assert {f: label(f, GPU_NOUNS) for f in GPU_LABELS} == GPU_LABELS
    assert label("dpn", CPU_NOUNS) == "Processes per host"
    assert label("price", CPU_NOUNS) == "Price per process-hour (USD)"
    cpu = [label(f, CPU_NOUNS) for f in LABELS] + [
        t.format(device="process", devices="processes", server="host")
        for t in (*GRID_LABELS.values(), *MODE_LABELS.values(), *B_LABELS.values())]
    assert not [t for t in cpu if "{" in t or any(w in t.lower() for w in ("device", "server"))]


def _sidebar_labels(at: AppTest) -> dict[str, str]:
    widgets = [*at.sidebar.number_input, *at.sidebar.selectbox, *at.sidebar.select_slider]
    return {w.key.removeprefix("k_"): w.label for w in widgets if w.key}


def test_the_sidebar_labels_follow_a_cpu_profile():
    at = upload_profile(open_app(), cpu_profile())
    labels = _sidebar_labels(at)
    assert labels["dpn"] == "Processes per host" and labels["intra"] == "Intra-host link"
    assert labels["inter"] == "Inter-host link" and labels["dmax"] == "Largest process count"
    assert labels["price"] == "Price per process-hour (USD)"
    assert labels["focus"] == "Process count for remedies and A vs B"
    assert [h.value for h in at.sidebar.header][1] == "Processes"
    assert not [t for t in labels.values() if any(w in t for w in ("device", "Device", "server"))]
    grid = at.sidebar.radio(key="k_grid")
    assert grid.options[1] == "every host"
    b = at.sidebar.selectbox(key="k_b")
    assert "fix the slow process" in b.options and "add a host's worth of processes" in b.options
    assert at.sidebar.selectbox(key="k_intra").help == CPU_INTRA_HELP
    for key, value in (("k_train", 1e7), ("k_price", 1.0), ("k_dl", 10.0), ("k_bud", 100.0)):
        at.sidebar.number_input(key=key).set_value(value)
    at.session_state["k_tab"] = "Goal: deadline & budget"
    run_clean(at)
    assert any(re.match(r"[\d,]+ plans searched \(processes, micro-batch", c.value)
               for c in at.caption)


def test_the_sidebar_labels_of_a_gpu_profile_are_as_they_were():
    at = open_app()
    labels = _sidebar_labels(at)
    assert {"dpn", "intra", "inter", "price", "focus", "dmax"} <= set(labels)
    assert {f: labels[f] for f in GPU_LABELS if f in labels} == {
        f: t for f, t in GPU_LABELS.items() if f in labels}
    assert at.sidebar.selectbox(key="k_intra").help == INTRA_HELP.format(server="server")


def test_the_refusal_names_the_control_in_the_profile_s_nouns():
    state = default_state()
    assert refusal(state, "dpn", 0).startswith("Devices per server: 0 is below")
    assert refusal(state, "dpn", 0, CPU_NOUNS).startswith("Processes per host: 0 is below")
    assert refusal(state, "price", 2e6, CPU_NOUNS).startswith(
        "Price per process-hour: 2,000,000 is above")


@pytest.fixture(scope="module")
def cpu_plan():
    profile = cpu_profile()
    state = with_profile_defaults(default_state(), profile).model_copy(update={
        "train": 1e7, "price": 1.0, "dmax": 8, "slow": 1, "sf": 1.2, "dpn": 4})
    return make_plan(profile, state)


def test_the_report_s_scenario_and_the_charts_say_processes_and_hosts(cpu_plan):
    lines = dict(scenario_lines(cpu_plan))
    for name in ("process counts", "processes per host", "intra-host link", "inter-host link",
                 "slow process", "price per process-hour"):
        assert name in lines
    assert not [n for n in lines if any(w in n for w in ("device", "server"))]
    tips = charts.throughput_chart(cpu_plan).to_dict()["layer"][0]["encoding"]["tooltip"]
    assert tips[0] == {"field": "devices", "title": "processes", "type": "quantitative"}
    money = charts.money_chart(cpu_plan).to_dict()
    assert "billed process-hours" in json.dumps(money) and "device-hours" not in json.dumps(money)
    assert any("the Processes per host setting" in n for n in cpu_plan.notes)


def test_predict_s_cost_line_and_goal_s_price_refusal_say_process_hours(capsys, tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(cpu_profile().model_dump_json())
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "2,4",
                                      "--train-samples", "1e7", "--price", "1"])
    assert code == 0, err
    assert "cost: billed processes x hours x $1 per process-hour, billed per whole host" in out
    code, out, err = run_cli(capsys, ["goal", "--profile", str(path), "--deadline", "24h",
                                      "--train-samples", "1e7", "--budget", "100"])
    assert code == 2 and err.strip().endswith("give --price USD per process-hour")
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--devices", "2,4",
                                      "--train-samples", "1e7", "--price", "1"])
    assert "cost: billed devices x hours x $1 per device-hour, billed per whole server" in out
