"""Runs of CPU processes read past linear are told about threads (session 44). A first-day user
timed one process under plain torchrun (every core) against two of one thread each: the
2-process run read 449 % efficient and was refused with "check its step_time_s ... and its batch
columns", nothing about the cause; 192 % was a note saying cache effects."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.runs_diagnosis import CPU_THREADS_WORDS

FAR = "devices,nodes,step_time_s,per_device_batch{}\n1,1,0.207,32{}\n2,1,0.04615,32{}\n"
PAST = "devices,nodes,step_time_s,per_device_batch{}\n1,1,0.137,32{}\n2,1,0.07139,32{}\n"


def _runs(tmp_path, text, cpu):
    path = tmp_path / "runs.csv"
    path.write_text(text.format(*((",device", ",cpu", ",cpu") if cpu else ("", "", ""))))
    return path


def test_a_cpu_run_far_past_linear_is_refused_in_one_line_naming_the_threads(tmp_path, capsys):
    code, out, err = run_cli(capsys, ["diagnose", str(_runs(tmp_path, FAR, cpu=True))])
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "449% efficient" in line and "no job scales that far past linear" in line
    assert line.endswith(CPU_THREADS_WORDS)
    assert "OMP_NUM_THREADS=1" in line and "torchrun" in line


def test_a_gpu_run_far_past_linear_says_nothing_of_threads(tmp_path, capsys):
    code, _, err = run_cli(capsys, ["diagnose", str(_runs(tmp_path, FAR, cpu=False))])
    assert code == 2 and "449% efficient" in err
    assert "OMP_NUM_THREADS" not in err and "threads" not in err


def test_a_cpu_run_past_linear_notes_the_threads(tmp_path, capsys):
    code, out, err = run_cli(capsys, ["diagnose", str(_runs(tmp_path, PAST, cpu=True)), "--json",
                                      "--params", "1.585e6"])
    assert code == 0, err
    (note,) = [n for n in json.loads(out)["notes"] if "past linear" in n]
    assert "192% efficient" in note and note.endswith(CPU_THREADS_WORDS)
