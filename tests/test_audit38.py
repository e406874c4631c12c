"""Session 38's audit of odd flag and file combinations: each finding, fixed, pinned."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("scenario, flags, says", [
    # a rank without a factor: 'device 3 computes 1x slower', the rows at full speed
    ({"slow_device": 3}, [], "slow_device 3 is given without a slow_factor above 1"),
    # a factor without a rank: dropped in silence, where the flags alone are refused
    ({"slow_factor": 2.0}, [], "slow_factor 2 is given without a slow_device"),
    ({"slow_device": 3, "slow_factor": 1.0}, [], "slow_device 3 is given without"),
])
def test_a_scenario_files_slow_device_needs_its_factor(tmp_path, capsys, scenario, flags, says):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    code, _, err = run_cli(capsys, ["predict", "--scenario", str(path), "--devices", "8", *flags])
    assert code == 2
    assert says in _one_line(err) and "go together" in err


@pytest.mark.parametrize("scenario, flags", [
    ({"slow_factor": 2.0}, ["--slow-device", "3"]),  # the file's factor, the flag's rank
    ({"slow_device": 3}, ["--slow-factor", "2"]),
    ({"slow_device": 3, "slow_factor": 2.0}, []),
])
def test_a_slow_device_from_the_file_and_the_flags_together(tmp_path, capsys, scenario, flags):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    code, out, err = run_cli(capsys, ["predict", "--scenario", str(path), "--devices", "8",
                                      *flags])
    assert code == 0, err
    assert "device 3 computes 2x slower" in out


def test_a_dumped_default_scenario_still_reads(tmp_path, capsys):
    from scalesim.schemas import Scenario

    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(Scenario(devices=[1, 2]).model_dump(mode="json")))
    code, _, err = run_cli(capsys, ["predict", "--scenario", str(path)])
    assert code == 0, err


@pytest.mark.parametrize("seq, cp", [("3", "2"), ("6", "2,4")])
def test_plan_says_a_cp_degree_does_not_split_the_sequence(capsys, seq, cp):
    """--seq-len 3 --cp 2 had every layout dropped (ring attention cuts a sequence into 2 x cp
    chunks) and was told 'no dp x micro-batch divides the global batch ... lower the global
    batch', which no global batch fixes."""
    code, _, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--devices", "8", "--global-batch", "64", "--seq-len", seq,
                                    "--cp", cp])
    assert code == 2
    line = _one_line(err)
    assert "global batch" not in line
    assert f"the sequence of {seq} tokens does not split so" in line and "2 x cp" in line


def test_plan_keeps_a_cp_degree_that_splits_the_sequence(capsys):
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--devices", "8", "--global-batch", "64", "--seq-len", "4",
                                      "--cp", "2"])
    assert code == 0, err
    header, first = (line.split() for line in out.splitlines()[3:5])
    assert first[header.index("cp")] == "2"


def test_a_workloads_layers_must_agree_with_its_shape(tmp_path, capsys):
    """'layers': 7 beside a 32-layer transformer shape was dropped in silence (the shape's
    layers are the ones priced); the same count, or none, reads as before."""
    from scalesim import presets

    data = presets.transformer_workload("llama3-8b").model_dump(mode="json")
    path = tmp_path / "wl.json"
    path.write_text(json.dumps(data | {"layers": 7}))
    code, _, err = run_cli(capsys, ["predict", "--workload", str(path), "--hardware", "dgx-h100",
                                    "--devices", "8"])
    assert code == 2
    assert "layers 7 disagrees with the transformer shape's 32 layers" in _one_line(err)
    for layers in (32, None):
        path.write_text(json.dumps(data | {"layers": layers}))
        code, _, err = run_cli(capsys, ["predict", "--workload", str(path), "--hardware",
                                        "dgx-h100", "--devices", "8"])
        assert code == 0, err


def test_a_prefix_that_is_no_level_or_batch_is_named(capsys):
    """'both=LOG' was 'no such file' (the prefix read as part of the name); 'x=TRACE' was told
    to write '32=x=TRACE', and '1.5=TRACE --micro-batch 4' 'no such file'."""
    from pathlib import Path

    fixtures = Path(__file__).parent / "fixtures"
    log = fixtures / "nccl_tests" / "h100_8gpu_all_reduce.txt"
    trace = fixtures / "traces" / "cpu_ddp_rank0.json.gz"
    for prefix in ("both", "Intra"):
        code, _, err = run_cli(capsys, ["calibrate", "--from-nccl-tests", f"{prefix}={log}"])
        assert code == 2
        assert f"'{prefix}=' is not a link level; give intra=FILE or inter=FILE" in _one_line(err)
    for argv in (["x=" + str(trace)], ["1.5=" + str(trace), "--micro-batch", "4"]):
        code, _, err = run_cli(capsys, ["calibrate", "--from-trace", *argv])
        assert code == 2
        line = _one_line(err)
        assert "is not a micro-batch; give a whole number of samples, as 32=" in line
        assert "32=x=" not in line


@pytest.mark.parametrize("rows, says", [
    # GPU1's row says NV2 for the pair GPU0's row calls NV4: the upper half alone was read
    (["GPU0\t X \tNV4\tSYS", "GPU1\tNV2\t X \tNV4", "GPU2\tSYS\tNV4\t X "],
     "GPU0-GPU1 is 'NV4' on GPU0's row (line 2) but 'NV2' on GPU1's (line 3)"),
    # a second GPU1 row (two outputs joined): the last was read over the first
    (["GPU0\t X \tNV4\tNV4", "GPU1\tNV4\t X \tNV4", "GPU2\tNV4\tNV4\t X ", "GPU1\tSYS\t X \tSYS"],
     "line 5: a second row for GPU1 (the first on line 3)"),
])
def test_a_topo_matrix_that_no_nvidia_smi_prints_is_refused(tmp_path, capsys, rows, says):
    path = tmp_path / "topo.txt"
    path.write_text("\tGPU0\tGPU1\tGPU2\n" + "\n".join(rows) + "\n")
    for argv in (["topo", str(path)], ["calibrate", "--from-topo", str(path), "--out",
                                       str(tmp_path / "p.json")]):
        code, _, err = run_cli(capsys, argv)
        assert code == 2
        line = _one_line(err)
        assert says in line and "nvidia-smi topo -m > topo.txt" in line
    assert not (tmp_path / "p.json").exists()


def test_smi_readings_without_units_still_read(tmp_path):
    """--format=csv,nounits writes the numbers alone (the refusals of a reading in another
    unit are in tests/test_audit31.py::test_smi_readings_no_gpu_gives_are_refused)."""
    from test_audit31 import SMI_HEADER

    from scalesim.sources.nvidia_smi import parse_smi_csv

    path = tmp_path / "smi.csv"
    path.write_text(SMI_HEADER + "".join(
        f"2026/01/01 00:00:00.000, {i}, 1410, 1410, 60, 300, 99, 0x0\n" for i in range(2)))
    report = parse_smi_csv(path)
    assert [d.sm_clock_MHz for d in report.devices] == [1410.0, 1410.0]
    assert [d.power_W for d in report.devices] == [300.0, 300.0]


@pytest.mark.parametrize("argv", [
    ["sweep", "--devices", "1,2"],
    ["calibrate", "--from-topo", "tests/fixtures/nvidia_smi/h100_x8_nics_topo.txt"],
])
def test_an_output_named_dash_is_refused(tmp_path, capsys, monkeypatch, argv):
    """'--out -' wrote a file called '-' in the current folder ('wrote 2 scenarios to -'), where
    '-' is the shell's word for standard output; ./- still names such a file."""
    from pathlib import Path

    argv = [str(Path(__file__).parent.parent / a) if a.startswith("tests/") else a for a in argv]
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, [*argv, "--out", "-"])
    assert code == 2 and out == ""
    assert "'-' (standard output in the shell's words) is no output file" in _one_line(err)
    assert not (tmp_path / "-").exists()
    code, _, err = run_cli(capsys, [*argv, "--out", "./-"])
    assert code == 0, err
    assert (tmp_path / "-").is_file()


@pytest.mark.parametrize("argv, says", [
    (["calibrate", "--quick"], "scalesim calibrate: interrupted; run it again with --resume to "
                               "keep the phases already finished"),
    (["calibrate", "--from-nccl-tests", "x.txt"], "scalesim calibrate: interrupted"),
    (["predict"], "scalesim predict: interrupted"),
])
def test_ctrl_c_of_a_measuring_calibration_says_resume_keeps_its_phases(monkeypatch, capsys,
                                                                         argv, says):
    """Ctrl-C of `calibrate` said only 'interrupted', where SIGTERM says that --resume keeps
    the phases already finished (both keep them); a calibration from files and other commands
    have nothing to resume (the calibration audit)."""
    from scalesim.cli import main as cli_main

    def interrupted(args):
        raise KeyboardInterrupt

    parser = cli_main.build_parser()
    monkeypatch.setattr(cli_main, "build_parser", lambda: _interrupting(parser, interrupted))
    assert cli_main.main(argv) == 130
    assert capsys.readouterr().err.strip() == says


def _interrupting(parser, run):
    """``parser`` whose every command's run is ``run``."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_run=run)
    return parser


def test_every_name_the_workload_error_lists_is_a_workload():
    """``presets.get_workload`` listed the transformer presets among its choices and refused
    them ('gpt-1.7b'); it now gives each the workload ``--workload NAME`` does (the diagnose
    audit)."""
    from scalesim import presets
    from scalesim.errors import ScalesimError
    from scalesim.profiles import load_workload

    with pytest.raises(ScalesimError) as refused:
        presets.get_workload("no-such-model")
    listed = str(refused.value).split("choose one of ")[1].split(" or give")[0].split(", ")
    assert "gpt-1.7b" in listed and "bert-large" in listed
    for name in listed:
        assert presets.get_workload(name) == load_workload(name)
