"""The name `calibrate --from-...` gives a new profile says which parts came from the user's
files (session 16 user's pass)."""

from __future__ import annotations

from pathlib import Path

from scalesim.sources.calibrate_from import calibrate_from_sources

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_new_profile_names_what_came_from_the_files_not_the_preset_workload(tmp_path):
    """`calibrate --from-nccl-tests h100.txt` named its profile 'NVIDIA H100 80GB HBM3 x8
    (nccl-tests) + bert-large (from your data)', and predict's first line repeated it: the
    bert-large workload is the presets', only the links came from the log."""
    log = FIXTURES / "nccl_tests" / "h100_2node_16gpu_all_reduce.txt"
    profile, _ = calibrate_from_sources(tmp_path / "p.json", nccl_tests_files=[str(log)],
                                        write=False)
    assert profile.name.endswith("+ bert-large (links from your nccl-tests logs)")
    topo = FIXTURES / "nvidia_smi" / "h100_x8_nics_topo.txt"
    profile, _ = calibrate_from_sources(tmp_path / "q.json", nccl_tests_files=[str(log)],
                                        topo_file=str(topo), write=False)
    assert profile.name.endswith("(links from your nccl-tests logs; topology from your "
                                 "nvidia-smi topo -m)")
    assert "from your data" not in profile.name
