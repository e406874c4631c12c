"""The Diagnose page with an nvidia-smi log alone, as ``scalesim diagnose --smi`` reads it."""

from __future__ import annotations

from app_harness import open_diagnose_page, run_clean, upload_file
from cli_harness import run_cli
from streamlit.testing.v1 import AppTest
from test_sources_nvidia_smi import smi_csv


def _smi_page() -> AppTest:
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("An nvidia-smi log")
    return run_clean(at)


def _upload(at: AppTest, name: str, text: str) -> AppTest:
    return upload_file(at, "dg_smi_only", name, text)


def test_a_log_alone_names_the_slow_device_as_the_cli_does(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    at = _smi_page()
    assert "Upload the log" in at.info[0].value and not at.subheader
    smi_csv(tmp_path / "smi.csv", slow=3)
    at = _upload(at, "smi.csv", (tmp_path / "smi.csv").read_text())
    assert not at.exception and not at.error
    assert at.subheader[0].value == "Device health"
    assert len(at.warning) == 1 and "device 3 runs at 1,110 MHz of 1,410" in at.warning[0].value
    table = at.dataframe[0].value
    assert list(table["device"]) == list(range(8))
    assert list(table["SM MHz"]) == [1410, 1410, 1410, 1110, 1410, 1410, 1410, 1410]
    assert len(at.get("vega_lite_chart")) == 1
    code, out, _ = run_cli(capsys, ["diagnose", "--smi", "smi.csv"])
    assert code == 0 and at.code[0].value == out.rstrip("\n")


def test_a_healthy_log_says_so_and_a_bad_file_is_one_line(tmp_path):
    at = _upload(_smi_page(), "smi.csv", "a,b,c\n1,2,3\n")
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert at.error[0].value.startswith("smi.csv") and "not an nvidia-smi" in at.error[0].value
    smi_csv(tmp_path / "smi.csv")
    at = _upload(at, "smi.csv", (tmp_path / "smi.csv").read_text())  # the page keeps working
    assert not at.error and not at.warning
    assert at.success[0].value == "No device runs slower than the others"


def test_the_clock_chart_marks_the_slow_device_and_each_maximum(tmp_path):
    from scalesim.app.diagnose_page import smi_clock_chart

    from scalesim.sources.nvidia_smi import parse_smi_csv

    smi_csv(tmp_path / "smi.csv", slow=6)
    spec = smi_clock_chart(parse_smi_csv(tmp_path / "smi.csv")).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert [r["state"] == "slow" for r in rows] == [i == 6 for i in range(8)]
    assert [r["MHz"] for r in rows] == [1110 if i == 6 else 1410 for i in range(8)]
    assert {r["max MHz"] for r in rows} == {1410}
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "tick"]
