"""A measurement written over a profile that --from-nccl-tests / --from-topo had updated says
what it drops: a resumed ``calibrate --phases loader --resume --out my-node.json`` replaced the
inter-server link the user had added from nccl-tests logs (3.12 GB/s, measured) by the preset's
6.8 GB/s, not measured, and the topology by none, without a word (audit of the calibration
path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalesim.profiles import default_profile, load_profile
from scalesim.sources.calibrate_from import calibrate_from_sources, parts_a_measurement_drops

TESTS = Path(__file__).resolve().parent
EFA = TESTS / "fixtures" / "nccl_tests" / "t4_efa_2node_all_reduce.txt"
TOPO = TESTS / "fixtures" / "nvidia_smi" / "rtx5090_x2_pcie_topo.txt"


def test_the_links_and_topology_a_measured_profile_lacks_are_named(tmp_path):
    old, _ = calibrate_from_sources(tmp_path / "p.json", [f"inter={EFA}"], topo_file=str(TOPO),
                                    write=False)
    new = default_profile()  # its links are the presets', not measured; no topology
    lost = parts_a_measurement_drops(old, new)
    assert len(lost) == 2
    assert lost[0].startswith("its inter_node link measured (3.12 GB/s busbw")
    assert "topology" in lost[1] and TOPO.name in lost[1]
    # a level the new profile measured itself replaces the logs' as any newer measurement does
    measured = new.model_copy(update={"links": [
        c.model_copy(update={"measured": True}) for c in new.links]})
    assert all(" link measured" not in part for part in parts_a_measurement_drops(old, measured))
    assert parts_a_measurement_drops(new, new) == []


@pytest.mark.slow
def test_a_resumed_calibration_over_them_says_so(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "node.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "scalesim.cli.main", "calibrate", "--quick", "--no-progress",
           "--threads", "1", "--model", "calib_factories:regression_model", "--batches",
           "256,1024,4096,16384", "--phases", "compute", "--out", str(out)]
    first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=240, check=False)
    assert first.returncode == 0, first.stderr
    calibrate_from_sources(out, [f"inter={EFA}"], topo_file=str(TOPO))
    again = subprocess.run([*cmd, "--resume"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=240, check=False)
    assert again.returncode == 0, again.stderr
    notes = [line for line in again.stdout.splitlines() if f"{out} had its" in line]
    assert len(notes) == 2, again.stdout
    assert "inter_node link measured (3.12 GB/s" in notes[0] and "--from-nccl-tests" in notes[0]
    assert "topology" in notes[1]
    assert not load_profile(out).links[-1].measured  # the measurement still writes a new profile
