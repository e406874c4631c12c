"""Session 19 (splitname19): sweep's dropped-combination reasons in a CPU calibration's words
(``device_nouns.nouns_for``): a swept shard group's example said 'on 16 devices' and the
generic layout rules 'tp stays in a server' of processes on a host (docs/reliability.md)."""

from __future__ import annotations

from cli_harness import run_cli
from test_cpu_words import cpu_profile

from scalesim.cli.cmd_sweep import dropped_note
from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.schemas import Scenario
from scalesim.sweep import sweep


def test_a_swept_shard_groups_example_counts_processes_on_a_cpu_profile():
    mixed = sweep(cpu_profile(), Scenario(devices=[8], strategy="zero3"),
                  {"shard_group": [3, 8]})
    assert mixed.dropped_layout == 1
    assert mixed.layout_example.startswith("shard group 3 on 8 processes: shard group 3 does not")


def test_the_cli_sweep_says_processes_in_its_dropped_note(capsys, tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(cpu_profile().model_dump_json())
    code, out, err = run_cli(capsys, ["sweep", "--profile", str(path), "--devices", "16",
                                      "--strategy", "zero3", "--shard-group-values", "3,8"])
    assert code == 0 and out.count("\n") == 2, err  # the header and the group of 8
    assert "1 breaks a layout rule (e.g. shard group 3 on 16 processes" in err
    assert " devices" not in err.split("combination dropped")[1].split("\n")[0], err


def test_the_generic_layout_rules_name_hosts_and_processes():
    """Where no dropped layout is named, the rules: in the profile's nouns."""
    cpu, gpu = dropped_note(2, 2, words=CPU_NOUNS), dropped_note(2, 2, words=GPU_NOUNS)
    assert "tp x pp must divide the processes, tp stays in a host" in cpu
    assert "server" not in cpu and "device" not in cpu
    assert "tp x pp must divide the devices, tp stays in a server" in gpu
    assert gpu == dropped_note(2, 2)  # GPU words by default, as before
