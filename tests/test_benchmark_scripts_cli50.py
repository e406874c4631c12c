"""Session 50: every script in benchmarks/ answers --help and refuses a missing or garbled input
file in one line, exit 2, as ``scalesim`` does (``scalesim.cli.main.OneLineParser``,
``benchmarks/script_cli.run_script``). Before, ``collected_parallel_sensitivity.py --help`` read
'--help' as its cases file and ended in a traceback (ScalesimError: --help: no such file), and
``gpu_compare.py`` opened a missing steps file with ``open`` (FileNotFoundError, a traceback).
--help and bad input exit before any benchmark work, so each run here takes a second or two."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
HELPERS = ("one_core.py", "script_cli.py")  # modules the scripts import, run by nobody
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS)
SHIPPED_STEPS = "benchmarks/results/h200-2026-11-30/gpu-check/steps.json"
SHIPPED_PROFILE = "benchmarks/results/h200-2026-11-30/gpu-check/gpu-profile.json"


def _run(*args: str) -> subprocess.CompletedProcess:
    """``args`` run from the repository root on this checkout's scalesim."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run(list(args), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_every_python_file_in_benchmarks_is_a_script_or_a_named_helper():
    for name in SCRIPTS:
        assert 'if __name__ == "__main__":' in (BENCHMARKS / name).read_text(), name
    assert len(SCRIPTS) >= 24


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_answers_help(name):
    done = _run(sys.executable, f"benchmarks/{name}", "--help")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("usage: ") and "Traceback" not in done.stdout


def test_the_gpu_check_script_answers_help_and_refuses_an_argument():
    done = _run("bash", "benchmarks/gpu_check.sh", "--help")
    assert done.returncode == 0 and done.stdout.startswith("The GPU path on one CUDA device")
    done = _run("bash", "benchmarks/gpu_check.sh", "extra")
    assert done.returncode == 2 and done.stderr == (
        "gpu_check.sh: error: it takes no arguments, got 'extra'; set OUT to a folder "
        "(see --help)\n")


MISSING = "no_such_input.json"
INPUT_FILES = {  # each script that reads an input file: its arguments around the file
    "collected_parallel_sensitivity.py": ([], []),
    "gpu_compare.py": ([SHIPPED_PROFILE], []),
    "parallel_validation_accuracy.py": ([], ["--no-write"]),
    "validation_accuracy.py": ([], ["--no-write"]),
    "plan_vs_published.py": (["--cases"], []),
}


@pytest.mark.parametrize("name", sorted(INPUT_FILES))
def test_a_missing_input_file_is_one_line(name):
    before, after = INPUT_FILES[name]
    done = _run(sys.executable, f"benchmarks/{name}", *before, MISSING, *after)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"{name}: error: {MISSING}: no such file\n"


def test_gpu_compares_garbled_or_foreign_steps_and_missing_profile_are_one_line(tmp_path):
    garbled, foreign = tmp_path / "garbled.json", tmp_path / "foreign.json"
    garbled.write_text("{garbled")
    foreign.write_text('{"steps": [{"name": "x"}]}')
    done = _run(sys.executable, "benchmarks/gpu_compare.py", SHIPPED_PROFILE, str(garbled))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"gpu_compare.py: error: {garbled}: not valid JSON (line 1")
    done = _run(sys.executable, "benchmarks/gpu_compare.py", SHIPPED_PROFILE, str(foreign))
    assert done.returncode == 2 and done.stderr == (
        f"gpu_compare.py: error: {foreign}: not the steps benchmarks/gpu_step.py writes (no "
        "'device', 'torch', 'date_utc', 'flash_attention', 'heads', 'hidden', 'layers', "
        "'micro_batch', 'params', 'seq_len', 'step_s_median', 'vocab'); give its --out file\n")
    done = _run(sys.executable, "benchmarks/gpu_compare.py", MISSING, SHIPPED_STEPS)
    assert (done.returncode, done.stdout) == (2, "")  # refused before its first row
    assert done.stderr == f"gpu_compare.py: error: {MISSING}: no such file\n"


@pytest.mark.parametrize(("name", "flag", "value", "said"), [
    ("goal_batch_layouts.py", None, "8x", "argument case: invalid choice: '8x'"),
    ("stage_split.py", "--cases", "4096x", "argument --cases: '4096x' is not LAYERSxPP"),
    ("fit_restart.py", "--seeds", "1,a", "argument --seeds: '1,a' is not a comma list of whole"),
    ("fit_restart.py", "--noise", "nan", "argument --noise: 'nan' is not a spread from 0 to 1"),
    ("diagnose_scale.py", "--rows", "2e3", "argument --rows: '2e3' is not a comma list of whole"),
    ("plan_search.py", "--hardware", "dgx-z", "argument --hardware: invalid choice: 'dgx-z'"),
])
def test_a_garbled_value_is_one_line(name, flag, value, said):
    done = _run(sys.executable, f"benchmarks/{name}", *([flag] if flag else []), value)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr
