"""The app's profile picker on profiles made from nccl-tests logs and traces, with the sources."""

from __future__ import annotations

from pathlib import Path

from app_harness import open_app
from scalesim.app.state import compact_profile

from scalesim.predict import STALL_NOT_MODELLED
from scalesim.presets import HARDWARE
from scalesim.sources.calibrate_from import calibrate_from_sources
from scalesim.sources.provenance import provenance

FIX = Path(__file__).parent / "fixtures"


def _from_sources(tmp_path):
    profile, _ = calibrate_from_sources(
        tmp_path / "p.json", [FIX / "nccl_tests" / "h100_8gpu_all_reduce.txt"],
        topo_file=str(FIX / "nvidia_smi" / "h100_x8_nics_topo.txt"))
    return profile


def test_provenance_names_each_source(tmp_path):
    rows = dict(provenance(_from_sources(tmp_path)))
    assert "nccl-tests logs h100_8gpu_all_reduce.txt" in rows["intra-server link"]
    # not measured by a one-server log: the H100 hardware preset's (the log's GPU), not the
    # default A100 presets'
    assert rows["inter-server link"] == HARDWARE["dgx-h100"].inter_node.source
    assert rows["compute"].startswith("estimated: ")
    assert rows["topology"].startswith("NVLink between every pair (NV18")
    # not "never limiting" (session 14): nothing measured says the loader keeps up
    assert rows["input pipeline"] == f"not measured: {STALL_NOT_MODELLED}"


def test_share_links_leave_the_topology_out(tmp_path):
    assert compact_profile(_from_sources(tmp_path)).hardware.topology is None


def test_the_picker_loads_the_profile_and_shows_where_numbers_came_from(tmp_path, monkeypatch):
    _from_sources(tmp_path)
    monkeypatch.setenv("SCALESIM_APP_PROFILES", str(tmp_path))
    at = open_app()
    at.sidebar.selectbox(key="folder_pick").set_value("p.json").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["profile"].hardware.devices_per_node == 8
    texts = [m.value for m in at.sidebar.markdown]
    assert any("intra-server link" in t and "nccl-tests logs" in t for t in texts)
    assert any("topology" in t and "NV18" in t for t in texts)


def test_provenance_of_a_measured_input_pipeline_is_its_source():
    from scalesim.profiles import default_profile
    from scalesim.schemas import LoaderCurve, LoaderPoint

    curve = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=100.0)], measured=True,
                        source="calibrate's loader phase, 1 worker")
    rows = dict(provenance(default_profile().model_copy(update={"input_pipeline": curve})))
    assert rows["input pipeline"] == "calibrate's loader phase, 1 worker"
