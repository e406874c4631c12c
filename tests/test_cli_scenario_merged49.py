"""Session 49: a ``--scenario`` file's fields are checked alone (types and bounds, by the file's
keys), its rules across fields once, on the file and the flags merged.

Before, the file was validated whole before its flags were put on top: DeepSpeed ZeRO-2 at
``pp: 2`` in the file was refused though ``--pp 1`` made the scenario a valid one. Now a flag
that sets the combination right runs it, as the same settings in one file do; a file's
combination that no flag sets right is refused in the file's words, and one a flag makes with
the file's settings names both where they came from (``cli.given_words``). One place does it
for every command that takes --scenario (``cli.options.scenario_from_args``): predict, sweep,
decide and goal."""

from __future__ import annotations

import json

import pytest
from cli_harness import refused_line, run_cli, scenario_file

W = ["--workload", "llama3-8b"]
# every command that takes --scenario, with what it needs to run (and its JSON output)
COMMANDS = {
    "predict": ["predict", *W, "--json"],
    "sweep": ["sweep", *W, "--format", "json"],
    "decide": ["decide", *W, "--json"],
    "goal": ["goal", *W, "--deadline", "30d", "--budget", "100000", "--train-samples", "1e7",
             "--json"],
}
DEEPSPEED_ZERO2 = {"devices": [16], "strategy": "zero2", "zero_framework": "deepspeed"}
DEEPSPEED_PIPELINE = ("DeepSpeed refuses ZeRO-2/3 with pipeline parallelism; use")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_flag_sets_right_the_files_combination(tmp_path, capsys, command):
    """DeepSpeed ZeRO-2 at pp 2 in the file (refused alone: DeepSpeed's pipeline engine runs
    ZeRO-1 at most, ``layout.deepspeed_refuses_pipeline``) with --pp 1: the merged scenario is
    the one file that says pp 1, and its answer is that file's, byte for byte."""
    at_pp2 = scenario_file(tmp_path, "pp2.json", {**DEEPSPEED_ZERO2, "layout": {"pp": 2}})
    at_pp1 = scenario_file(tmp_path, "pp1.json", {**DEEPSPEED_ZERO2, "layout": {"pp": 1}})
    code, rescued, err = run_cli(capsys, [*COMMANDS[command], "--scenario", at_pp2, "--pp", "1"])
    assert code == 0, err
    code, alone, err = run_cli(capsys, [*COMMANDS[command], "--scenario", at_pp1])
    assert code == 0, err
    # goal names each file in its note of the file's devices and strategy, which it searches
    # itself (``cmd_goal.FILE_NOTED``): the same answer but the file's name
    assert rescued.replace(at_pp2, at_pp1) == alone and json.loads(rescued)


def test_a_flag_sets_right_the_files_two_batches(tmp_path, capsys):
    """A file with a micro-batch and a global batch (refused alone: one or the other) with
    --batch 2: the flag's per-device batch replaces both (``scenario_from_args`` clears the
    global batch), as a file that says micro_batch 2 alone."""
    both = scenario_file(tmp_path, "both.json", {"devices": [8], "micro_batch": 4, "global_batch": 64})
    one = scenario_file(tmp_path, "one.json", {"devices": [8], "micro_batch": 2})
    code, rescued, err = run_cli(capsys, [*COMMANDS["predict"], "--scenario", both,
                                          "--batch", "2"])
    assert code == 0, err
    code, alone, err = run_cli(capsys, [*COMMANDS["predict"], "--scenario", one])
    assert code == 0, err
    assert rescued == alone


@pytest.mark.parametrize("command", COMMANDS)
def test_the_files_combination_without_a_flag_is_refused_in_the_files_words(
        tmp_path, capsys, command):
    path = scenario_file(tmp_path, "s.json", {**DEEPSPEED_ZERO2, "layout": {"pp": 2}})
    assert refused_line(capsys, [*COMMANDS[command], "--scenario", path]) == (
        f"scalesim {command}: error: {path}: strategy zero2 with pp 2: {DEEPSPEED_PIPELINE} "
        "strategy zero1, pp 1 or zero_framework fsdp")
    # a flag that gives the file's own value again keeps it refused, by the flag
    assert refused_line(capsys, [*COMMANDS[command], "--scenario", path, "--pp", "2"]) == (
        f"scalesim {command}: error: {path}: strategy zero2 with --pp 2: {DEEPSPEED_PIPELINE} "
        "strategy zero1, --pp 1 or zero_framework fsdp")


def test_the_files_two_batches_without_a_flag_are_refused_in_the_files_words(tmp_path, capsys):
    path = scenario_file(tmp_path, "s.json", {"devices": [8], "micro_batch": 4, "global_batch": 64})
    assert refused_line(capsys, [*COMMANDS["predict"], "--scenario", path]) == (
        f"scalesim predict: error: {path}: give a per-device micro-batch (micro_batch, weak "
        "scaling) or a global batch (global_batch, strong scaling), not both")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_flag_that_makes_a_bad_combination_with_the_file_names_both(tmp_path, capsys, command):
    """The file's settings are valid alone; the flag makes the refused pair with them."""
    # the file's DeepSpeed ZeRO-2 with the flag's pp 2
    path = scenario_file(tmp_path, "ds.json", DEEPSPEED_ZERO2)
    assert refused_line(capsys, [*COMMANDS[command], "--scenario", path, "--pp", "2"]) == (
        f"scalesim {command}: error: {path}: strategy zero2 with --pp 2: {DEEPSPEED_PIPELINE} "
        "strategy zero1, --pp 1 or zero_framework fsdp")
    # the file's ZeRO-2 at pp 2 (FSDP runs it) with the flag's DeepSpeed
    path = scenario_file(tmp_path, "fsdp.json", {"devices": [16], "strategy": "zero2",
                                         "layout": {"pp": 2}})
    assert refused_line(capsys, [*COMMANDS[command], "--scenario", path,
                          "--zero-framework", "deepspeed"]) == (
        f"scalesim {command}: error: {path}: strategy zero2 with pp 2: {DEEPSPEED_PIPELINE} "
        "strategy zero1, pp 1 or --zero-framework fsdp")


def test_a_files_bad_value_is_still_the_files_though_a_flag_replaces_it(tmp_path, capsys):
    """Types and bounds are the file's own, checked before the flags: its pp 0 is refused by
    its key, --pp 1 or not (the file is wrong as written)."""
    path = scenario_file(tmp_path, "s.json", {"devices": [16], "layout": {"pp": 0}})
    assert refused_line(capsys, [*COMMANDS["predict"], "--scenario", path, "--pp", "1"]).startswith(
        f"scalesim predict: error: {path}: field 'layout.pp': 0 given; allowed: 1 <= x")


def test_a_sweeps_grid_sets_right_the_files_combination(tmp_path, capsys):
    """The sweep's grid overrides the file's value (``cmd_sweep.check_one_value_flags``): the
    file's DeepSpeed ZeRO-2 at pp 2 with --pp-values 1 sweeps pp 1, as a file at pp 1 does;
    the rows the rule refuses are the sweep's own (dropped with a note, or the sweep refused
    where none is left), not the file's line."""
    sweep = ["sweep", *W, "--format", "json"]
    at_pp2 = scenario_file(tmp_path, "pp2.json", {**DEEPSPEED_ZERO2, "layout": {"pp": 2}})
    at_pp1 = scenario_file(tmp_path, "pp1.json", {**DEEPSPEED_ZERO2, "layout": {"pp": 1}})
    code, rescued, err = run_cli(capsys, [*sweep, "--scenario", at_pp2, "--pp-values", "1"])
    assert code == 0, err
    code, alone, err = run_cli(capsys, [*sweep, "--scenario", at_pp1, "--pp-values", "1"])
    assert code == 0, err
    assert rescued == alone and [row["pp"] for row in json.loads(rescued)] == [1]
    # the grid's pp 2 alone: every row breaks the rule, the sweep's line says so (the file
    # named first: its strategy in the rule by its key, tests/test_cli_scenario_words49.py)
    line = refused_line(capsys, [*sweep, "--scenario", at_pp2, "--pp-values", "2"])
    assert line.startswith(
        f"scalesim sweep: error: {at_pp2}: no combination of the sweep is left"), line
    # the flags alone, --pp beside --pp-values: the two flags' line, not DeepSpeed's rule
    assert refused_line(capsys, [*sweep, "--devices", "16", "--strategy", "zero2", "--zero-framework",
                          "deepspeed", "--pp", "2", "--pp-values", "1"]) == (
        "scalesim sweep: error: --pp and --pp-values both set one knob: give --pp-values to "
        "sweep it or --pp to fix it, not both")


@pytest.mark.parametrize("given, values, dropped", [
    ({"global_batch": 64}, ["--batch-values", "2"], "--batch-values sweeps weak scaling; drop "),
    ({"micro_batch": 2, "global_batch": 64}, ["--batch-values", "2"],
     "--batch-values sweeps weak scaling; drop "),
    ({"micro_batch": 2}, ["--global-batch-values", "64"],
     "--global-batch-values sweeps strong scaling; drop "),
], ids=["global_batch", "both batches", "micro_batch"])
def test_the_batch_a_sweeps_grid_drops_is_named_as_given(tmp_path, capsys, given, values,
                                                         dropped):
    """The other batch than the grid's: the file's key where the file gave it, the flag where
    the flag did (as it always read)."""
    path = scenario_file(tmp_path, "s.json", {"devices": [8], **given})
    other = "global_batch" if "global_batch" in given else "micro_batch"
    assert refused_line(capsys, ["sweep", *W, "--scenario", path, *values]) == (
        f"scalesim sweep: error: {path}: {dropped}{other}")
    flag = {"global_batch": ["--global-batch", "64"], "micro_batch": ["--batch", "2"]}[other]
    assert refused_line(capsys, ["sweep", *W, "--devices", "8", *flag, *values]) == (
        f"scalesim sweep: error: {dropped}{flag[0]}")
