"""Session 50: `scalesim plan --profile` of a CPU calibration printed an MFU in every row (against
a nominal peak, or the sustained rate standing in for one) and a note to ignore it; --json
carried the number too. A device with no datasheet peak has no MFU: the table says '-', --json
null (its keys kept), the app's Layouts table leaves the cell empty (``plan.Setting.peak_known``,
predict's rule: ``layout_predict._peak_and_bandwidth``)."""

from __future__ import annotations

import json
from pathlib import Path

from app_harness import open_app, run_clean, upload_profile
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.profiles import load_profile

ARGS = ["--devices", "2", "--global-batch", "16", "--top", "3"]


def _cpu_profile(tmp_path) -> Path:
    """The H200 calibration as a CPU calibration names its device, with no peak anywhere (as
    test_cpu_words' plan test makes it): no datasheet row, no stated peak."""
    data = json.loads(Path(H200).read_text())
    data["hardware"].update(device_name="CPU: some Xeon", devices_per_node=2)
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    return path


def _mfu_cells(out: str) -> list[str]:
    """The MFU column of each table row (the header's 'MFU' position, 6 wide right-aligned)."""
    lines = out.splitlines()
    (header,) = [line for line in lines if line.lstrip().startswith("#")]
    end = header.index("MFU") + len("MFU")
    rows = [line for line in lines[lines.index(header) + 1:] if line[:3].strip().isdigit()]
    return [row[end - 6:end].strip() for row in rows]


def test_plan_on_a_cpu_profile_shows_no_mfu(tmp_path, capsys):
    path = _cpu_profile(tmp_path)
    for workload in ([], ["--workload", "llama3-8b"]):  # its own model (pinned curve), another
        code, out, err = run_cli(capsys, ["plan", "--profile", str(path), *workload, *ARGS])
        assert code == 0, err
        assert _mfu_cells(out) == ["-", "-", "-"]
        code, out, err = run_cli(capsys, ["plan", "--profile", str(path), *workload, *ARGS, "--json"])
        data = json.loads(out)
        rows = [*data["layouts"], *(c["best"] for c in data["by_count"])]
        assert [(r["mfu"], r["hfu"]) for r in rows] == [(None, None)] * len(rows)
    code, out, _ = run_cli(capsys, ["plan", "--profile", str(path), *ARGS])
    assert "no datasheet peak for this device: no MFU (-)" in out and "ignore it" not in out


def test_plan_on_a_gpu_profile_keeps_its_mfu(capsys):
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), *ARGS])
    assert code == 0, err
    cells = _mfu_cells(out)
    assert len(cells) == 3 and all(c.endswith("%") and float(c[:-1]) > 0 for c in cells)


def test_the_apps_layouts_table_leaves_a_cpus_mfu_empty(tmp_path):
    at = upload_profile(open_app(), load_profile(_cpu_profile(tmp_path)))
    at.session_state["k_tab"] = "Layouts"
    run_clean(at)
    (table,) = [d.value for d in at.dataframe if "MFU %" in d.value.columns]
    assert len(table) >= 1 and table["MFU %"].isna().all()
