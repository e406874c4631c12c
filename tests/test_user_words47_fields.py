"""Session 47 (helper words2): the refusals the shared checks build name the knob as the user
set it (the CLI's flag from the knob table, the app's control label), not the scenario's field
or the sweep's axis ('sweep axis seq_len value 4098: seq_len 4098 ...', 'precision fp8: ...',
'attention_kernel flash2: ...', '--batch and --batch-values both set micro_batch')."""

from __future__ import annotations

import re

import pytest
from cli_harness import run_cli
from h200_gpt import H200

LLAMA = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]
A100 = ["--workload", "llama3-8b", "--hardware", "dgx-a100"]
MEASURED = ["--profile", str(H200)]
GOAL = ["--train-samples", "1e9", "--deadline", "3d", "--budget", "50000"]
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")


def _refusal(capsys, argv: list[str]) -> str:
    """The one line ``argv`` is refused with (exit 2, nothing on stdout)."""
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    return err.strip().split(": error: ", 1)[1]


@pytest.mark.parametrize(("argv", "start"), [
    (["predict", *MEASURED, "--devices", "8", "--precision", "fp8"], "--precision fp8: profile"),
    (["decide", *MEASURED, "--devices", "8", "--precision", "fp8"], "--precision fp8: profile"),
    (["goal", *MEASURED, *GOAL, "--precision", "fp8"], "--precision fp8: profile"),
    (["predict", *A100, "--devices", "8", "--precision", "fp8"],
     "--precision fp8: no fp8 peak is known for 'A100-SXM4 80GB'"),
    (["plan", *A100, "--devices", "8", "--global-batch", "64", "--precision", "fp8"],
     "--precision fp8: no fp8 peak is known for 'A100-SXM4 80GB'"),
    (["predict", *MEASURED, "--devices", "8", "--attention-kernel", "flash2"],
     "--attention-kernel flash2: profile"),
    (["goal", *MEASURED, *GOAL, "--attention-kernel", "flash2"],
     "--attention-kernel flash2: profile"),
    (["sweep", *MEASURED, "--devices", "8", "--attention-kernel", "flash2"],
     "--attention-kernel flash2: profile"),
    (["sweep", *MEASURED, "--devices", "8", "--precision-values", "bf16,fp8"],
     "--precision-values fp8: profile"),
    (["sweep", *A100, "--devices", "8", "--precision-values", "bf16,fp8"],
     "--precision-values fp8: no fp8 peak is known"),
    (["sweep", *MEASURED, "--devices", "8", "--attention-kernel-values", "flash2"],
     "--attention-kernel-values flash2: profile"),
])
def test_a_precision_or_kernel_the_timings_cannot_price_is_refused_by_its_flag(capsys, argv,
                                                                               start):
    """Before: 'precision fp8: ...' (predict, decide, goal, plan on an A100), 'attention_kernel
    flash2: ...', 'sweep axis precision value fp8: ...', 'sweep axis attention_kernel value
    flash2: ...'. Now the flag typed, one line, exit 2; no field name left in it."""
    line = _refusal(capsys, argv)
    assert line.startswith(start), line
    assert "sweep axis" not in line and not SNAKE.search(line.replace(str(H200), "")), line


def test_a_sweeps_sequence_length_that_cp_cannot_split_names_the_flags(capsys):
    """Before: 'sweep axis seq_len value 4098: seq_len 4098 is not divisible by 2 x cp 2 ...;
    give sequence lengths that 2 x cp divides'. Now the flags typed and what to give."""
    base = ["sweep", *LLAMA, "--devices", "16", "--global-batch", "32"]
    assert _refusal(capsys, [*base, "--cp", "2", "--seq-len-values", "4096,4098"]) == (
        "--seq-len-values 4098: sequence length 4098 is not divisible by 2 x --cp 2 "
        "(load-balanced context parallelism); give sequence lengths that 4 divides, or --cp 1")
    assert _refusal(capsys, [*base, "--cp-values", "2,4", "--seq-len-values", "4098"]) == (
        "--seq-len-values 4098: sequence length 4098 is not divisible by 2 x any of --cp-values "
        "2,4 (load-balanced context parallelism); give sequence lengths that 2 x one of them "
        "divides, or add 1 to --cp-values")


def test_an_axis_beside_its_one_value_flag_is_refused_without_the_field(capsys):
    """Before: '--batch and --batch-values both set micro_batch: ...'; now 'one knob'."""
    for one, grid, axis in ((["--batch", "2"], ["--batch-values", "1,2"], "micro_batch"),
                            (["--seq-len", "4096"], ["--seq-len-values", "4096"], "seq_len"),
                            (["--no-overlap"], ["--overlap-values", "on"], "overlap")):
        line = _refusal(capsys, ["sweep", *LLAMA, "--devices", "8", *one, *grid])
        assert line == (f"{one[0]} and {grid[0]} both set one knob: give {grid[0]} to sweep it "
                        f"or {one[0]} to fix it, not both"), line
        assert axis not in line.replace(one[0], "").replace(grid[0], "")


def test_plans_cp_that_splits_no_sequence_names_the_flags(capsys):
    """Before: 'cp 2: context parallelism cuts ...'; now the flag, from the knob table."""
    line = _refusal(capsys, ["plan", *LLAMA, "--devices", "8", "--global-batch", "64",
                             "--seq-len", "4098", "--cp", "2"])
    assert line.startswith("--cp 2: context parallelism cuts each sequence into 2 x cp chunks")
    assert line.endswith("give --cp degrees with 2 x cp dividing the sequence length (or 1), "
                         "or another --seq-len"), line


def test_every_sweep_axis_flag_is_the_knob_tables():
    """The sweep's axis flags and the words its refusals use come from one function
    (``bounds.values_flag``): every axis flag the CLI takes is it, --overlap-values included
    (the knob's flag is --no-overlap: the old '{flag}-values' said '--no-overlap-values')."""
    from scalesim.bounds import values_flag
    from scalesim.cli.cmd_sweep import VALUE_FLAGS
    from scalesim.cli.main import build_parser

    sweep = build_parser()._subparsers._group_actions[0].choices["sweep"]  # noqa: SLF001
    flags = {s for a in sweep._actions for s in a.option_strings}  # noqa: SLF001
    for dest, (axis, _) in VALUE_FLAGS.items():
        assert values_flag(axis) == "--" + dest.replace("_", "-") and values_flag(axis) in flags
    assert values_flag("overlap") == "--overlap-values" and values_flag("devices") == "--devices"


def test_the_app_says_the_same_refusals_in_its_control_labels():
    """The app names a refused knob by its control (``named_controls.in_control_words``, the
    page's refusal boxes): the same check's line says 'Matmul precision fp8' and 'Attention
    kernel flash2', not the field or the CLI's flag."""
    from scalesim.app.named_controls import in_control_words
    from scalesim.app.state import AppState

    from scalesim.device_nouns import GPU_NOUNS
    from scalesim.errors import ScalesimError
    from scalesim.layout_predict import check_attention_kernel, check_precision
    from scalesim.plan import fp8_peak_ratio
    from scalesim.profiles import load_profile

    measured = load_profile(H200)
    for check, start in ((lambda: check_precision(measured, "fp8"), "Matmul precision fp8: "),
                         (lambda: fp8_peak_ratio("A100-SXM4 80GB"), "Matmul precision fp8: "),
                         (lambda: check_attention_kernel(measured, "flash2"),
                          "Attention kernel flash2: ")):
        with pytest.raises(ScalesimError) as caught:
            check()
        said = str(in_control_words(caught.value, AppState(), GPU_NOUNS))
        assert said.startswith(start) and "--" not in said.split(":")[0], said
