"""A CPU profile calibrated with 2 processes on a 2-core host, predicted at 4 processes per host
(--gpus-per-node 4), extrapolated the measured co-location slowdown linearly (slope 0.1: 1.30x
one alone) in silence, while 4 one-thread processes on 2 cores compute at least 4 / 2 = 2x slower
than alone. predict, decide and the app now say so (session 39, docs/model.md §1)."""

from __future__ import annotations

import pytest
from cli_harness import run_cli, whole_lines
from test_cpu_words import cpu_profile

from scalesim.predict import cores_shared_note, predict
from scalesim.schemas import Scenario


def _profile(cores: int = 2):
    """Calibrated with 2 processes on one host of ``cores`` cores, 10 % slower together."""
    p = cpu_profile(2)
    return p.model_copy(update={
        "hardware": p.hardware.model_copy(update={"cpu_cores_per_node": cores}),
        "compute": p.compute.model_copy(update={"colocated_devices": 2,
                                                "colocation_slowdown": 0.1})})


def test_four_processes_on_two_cores_are_said_to_time_share_them(capsys, tmp_path):
    profile = _profile()
    scenario = Scenario(devices=[1, 4], devices_per_node=4)
    one, four = predict(profile, scenario)
    # the rows' linear factor: 1 + 0.1 / (2 - 1) x (4 - 1) = 1.30, not the >= 2 of time-sharing;
    # the 4 processes' DDP also pays its bucket copies (docs/model.md §4: 336e6 x 4 x 2 B at
    # 1,555 GB/s = 1.729 ms, none on one process), at the datasheet's rate, not co-located (one
    # process alone is the pair's time / 1.1, 56.04 ms): 1.30 + 1.729 / 56.04 = 1.331
    copies_s = 336e6 * 4 * 2 / 1555e9
    assert four.compute_s / one.compute_s == pytest.approx(
        1.30 + copies_s / one.compute_s, rel=1e-9)
    note = cores_shared_note(profile, scenario)
    assert note == (
        "4 processes per host: their compute extrapolates the co-location slowdown of the 2 "
        "processes timed together linearly (1.30x one alone, docs/model.md §1), but on the "
        "host's 2 cores they time-share them: each computes at least 4/2 = 2.00x slower than "
        "alone (every process keeps at least one core busy), which the rows do not model: "
        "calibrate with 4 processes per host or use at most 2")
    path = tmp_path / "cpu.json"
    path.write_text(profile.model_dump_json())
    for argv in (["predict", "--devices", "1,4"], ["decide", "--devices", "4"]):
        code, out, err = run_cli(capsys, [*argv, "--profile", str(path), "--gpus-per-node", "4"])
        assert code == 0, err
        assert f"note: {note}" in whole_lines(out).splitlines(), out


def test_more_processes_than_timed_but_within_the_cores_say_the_extrapolation_only():
    note = cores_shared_note(_profile(cores=8), Scenario(devices=[3], devices_per_node=3))
    assert note == ("3 processes per host: their compute extrapolates the co-location slowdown "
                    "of the 2 processes timed together linearly (1.20x one alone, docs/model.md "
                    "§1)")


def test_the_processes_calibrated_together_and_gpus_get_no_note():
    assert cores_shared_note(_profile(), Scenario(devices=[2])) is None  # as calibrated
    from scalesim.profiles import default_profile

    assert cores_shared_note(default_profile(), Scenario(devices=[16], devices_per_node=16)) is None
