"""Session 20: the count headers of tables and charts follow ``device_nouns.nouns_for`` on a CPU
calibration's profile (processes on hosts): ``scalesim predict``'s tables said 'devices nodes',
the app's tables 'devices'/'servers'/'billed devices', the report's 'devices'/'servers', the
hours and money charts' legend 'devices'/'more devices'. A GPU profile's stay as they were."""

from __future__ import annotations

import pytest
from app_harness import open_app, run_clean, upload_profile
from cli_harness import run_cli
from scalesim.app import charts
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, encode_query, preset_profile, with_profile_defaults
from test_cpu_words import cpu_profile

from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS, HEADER_NOUNS

CPU_GOAL = {"train": 1e7, "price": 1.0, "dmax": 8}


def test_a_header_is_the_gpu_one_or_the_cpu_noun():
    assert [GPU_NOUNS.header(h) for h in HEADER_NOUNS] == list(HEADER_NOUNS)
    assert [CPU_NOUNS.header(h) for h in HEADER_NOUNS] == ["processes", "processes", "hosts",
                                                           "hosts"]


def _predict(capsys, tmp_path, profile_args: list[str]) -> list[str]:
    code, out, err = run_cli(capsys, ["predict", *profile_args, "--devices", "2,4",
                                      "--train-samples", "1e7", "--price", "1"])
    assert code == 0, err
    return out.splitlines()


def test_predict_s_tables_count_processes_on_hosts(capsys, tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(cpu_profile().model_dump_json())
    lines = _predict(capsys, tmp_path, ["--profile", str(path)])
    head = next(i for i, line in enumerate(lines) if line.startswith("processes hosts "))
    for row, (devices, hosts) in zip(lines[head + 1:head + 3], [(2, 1), (4, 2)], strict=True):
        assert row.split()[:2] == [str(devices), str(hosts)]
        assert len(row) == len(lines[head])  # the wider column keeps the table aligned
    times = next(line for line in lines if line.split()[:2] == ["processes", "to"])
    assert times.startswith("processes   to quality")
    assert any(line.startswith("cost: billed processes x hours") for line in lines)
    assert not any(line.lstrip().startswith(("devices", "nodes")) for line in lines)


def test_predict_s_gpu_tables_keep_their_headers(capsys, tmp_path):
    lines = _predict(capsys, tmp_path, ["--hardware", "dgx-a100", "--workload", "resnet50"])
    assert any(line.startswith("devices nodes  batch   step ms") for line in lines)
    assert any(line.startswith("devices   to quality") for line in lines)
    assert any(line.startswith("cost: billed devices x hours") for line in lines)


@pytest.fixture(scope="module")
def cpu_state():
    profile = cpu_profile()
    state = with_profile_defaults(default_state(), profile).model_copy(update=CPU_GOAL)
    return profile, state


def test_the_app_s_tables_count_processes_and_hosts():
    """The CPU profile uploaded, a goal, a price, a deadline and a budget entered: the curve's
    numbers, the cost tab's and the goal tab's tables."""
    at = upload_profile(open_app(), cpu_profile())
    for key, value in (("k_train", 1e7), ("k_price", 1.0), ("k_dl", 10.0), ("k_bud", 100.0)):
        at.sidebar.number_input(key=key).set_value(value)
    run_clean(at)
    tables = {}
    for tab in ("Scaling curve", "Hours & cost", "Goal: deadline & budget"):
        at.session_state["k_tab"] = tab
        tables[tab] = run_clean(at).dataframe[0].value
    assert list(tables["Scaling curve"].columns[:2]) == ["processes", "hosts"]
    assert list(tables["Hours & cost"].columns[1:3]) == ["processes", "billed processes"]
    assert {"processes", "hosts"} <= set(tables["Goal: deadline & budget"].columns)
    assert not {"devices", "servers", "billed devices"} & {
        c for t in tables.values() for c in t.columns}


def test_the_app_s_gpu_tables_keep_their_headers():
    state = default_state().model_copy(update={"train": 1e8, "price": 2.0, "dl": 10.0,
                                               "bud": 1e5})
    at = open_app(encode_query(state.model_copy(update={"tab": "goal"}), preset_profile(state)))
    assert {"devices", "servers"} <= set(at.dataframe[0].value.columns)
    at.session_state["k_tab"] = "Hours & cost"
    run_clean(at)
    assert list(at.dataframe[0].value.columns[1:3]) == ["devices", "billed devices"]


def test_the_report_and_the_hours_chart_count_processes(cpu_state):
    profile, state = cpu_state
    plan = make_plan(profile, state)
    html = report_html(plan, "http://example/?v=3")
    assert '>processes</th><th class="">hosts</th>' in html
    assert '>option</th><th class="">processes</th>' in html
    assert "devices</th>" not in html and "servers</th>" not in html
    legend = charts.hours_chart(plan).to_dict()["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert legend == ["processes", "remedy", "more processes"]
    assert charts.throughput_chart(plan).to_dict()["layer"][0]["encoding"]["x"]["title"] \
        .startswith("processes")
