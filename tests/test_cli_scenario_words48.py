"""Session 48: a ``--scenario`` file's setting that a layout rule refuses is named as the file
names it, not by a flag that was never given.

Before, ``sequence_parallel: true`` at tp 1 in the file read '--sequence-parallel needs --tp 2
or more ...' (the rule's template said in flags, ``layout.knob_refusal``); tp_overlap,
virtual_stages, schedule, p2p_overlap, the shard group, grad_sync and DeepSpeed's pipeline
alike. One mechanism (``cli.given_words.in_given_words``, main's error line): each knob the
refusal's template names is said as it was given, the file's path first; a flag keeps the
flag's words, byte for byte."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli

from scalesim.bounds import flag_of
from scalesim.cli.given_words import file_settings

W = ["--workload", "llama3-8b"]


def _line(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    return err.removesuffix("\n")


# (the file, the command and its other flags, the file's line after "<path>: ", the same
# settings as flags, the flags' line as it always read)
CASES = [
    ({"devices": [8], "layout": {"tp": 1, "sequence_parallel": True}}, ["predict"],
     "sequence_parallel true needs tp 2 or more (it splits the tensor-parallel group's "
     "activations)",
     ["--devices", "8", "--tp", "1", "--sequence-parallel"],
     "--sequence-parallel needs --tp 2 or more (it splits the tensor-parallel group's "
     "activations)"),
    ({"devices": [8], "layout": {"tp_overlap": True}}, ["decide"],
     "tp_overlap true needs --tp 2 or more (it overlaps",
     ["--devices", "8", "--tp-overlap"], "--tp-overlap needs --tp 2 or more (it overlaps"),
    ({"devices": [8], "layout": {"virtual_stages": 2}}, ["predict"],
     "layout at 8 devices: virtual_stages 2 needs --pp 2 or more and --schedule interleaved "
     "(model chunks of a pipeline's stages); give both, or virtual_stages 1",
     ["--devices", "8", "--virtual-stages", "2"],
     "layout at 8 devices: --virtual-stages 2 needs --pp 2 or more and --schedule interleaved"),
    ({"devices": [8], "layout": {"schedule": "gpipe"}}, ["predict"],
     "layout at 8 devices: schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 leave "
     "schedule at its default", ["--devices", "8", "--schedule", "gpipe"],
     "layout at 8 devices: --schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 leave "
     "--schedule at its default"),
    ({"devices": [8], "layout": {"p2p_overlap": False}}, ["predict"],
     "p2p_overlap off needs the interleaved schedule (--pp 2 or more with --virtual-stages 2 "
     "or more)", ["--devices", "8", "--p2p-overlap", "off"],
     "--p2p-overlap off needs the interleaved schedule (--pp 2 or more with --virtual-stages 2"),
    ({"devices": [16], "strategy": "zero1", "layout": {"shard_group": 1}}, ["predict"],
     "at 16 devices, shard_group 1 with strategy zero1 is plain replication (no state "
     "sharded): use strategy ddp, or shard_group 2 or more",
     ["--devices", "16", "--strategy", "zero1", "--shard-group", "1"],
     "at 16 devices, --shard-group 1 with --strategy zero1 is plain replication (no state "
     "sharded): use --strategy ddp, or --shard-group 2 or more"),
    ({"devices": [8], "strategy": "zero2", "zero_framework": "deepspeed",
      "grad_sync": "once-per-step"}, ["predict"],
     "grad_sync once-per-step is FSDP's no_sync; DeepSpeed stage 2/3 reduce gradients in every "
     "micro-step: use zero_framework fsdp or grad_sync every-micro-step",
     ["--devices", "8", "--strategy", "zero2", "--zero-framework", "deepspeed", "--grad-sync",
      "once-per-step"],
     "scenario: --grad-sync once-per-step is FSDP's no_sync; DeepSpeed stage 2/3 reduce "
     "gradients in every micro-step: use --zero-framework fsdp or --grad-sync every-micro-step"),
    ({"devices": [16], "strategy": "zero2", "zero_framework": "deepspeed",
      "layout": {"pp": 2}}, ["predict"],
     "strategy zero2 with pp 2: DeepSpeed refuses ZeRO-2/3 with pipeline parallelism; use "
     "strategy zero1, pp 1 or zero_framework fsdp",
     ["--devices", "16", "--strategy", "zero2", "--zero-framework", "deepspeed", "--pp", "2"],
     "scenario: --strategy zero2 with --pp 2: DeepSpeed refuses ZeRO-2/3 with pipeline "
     "parallelism; use --strategy zero1, --pp 1 or --zero-framework fsdp"),
    ({"devices": [8], "layout": {"tp": 1, "sequence_parallel": True}}, ["sweep"],
     "sequence_parallel true needs tp 2 or more (it splits the tensor-parallel group's "
     "activations): sequence_parallel true means nothing on every row of the sweep; give tp "
     "(in a sweep: or a --tp-values that reaches 2 within a server), or drop it",
     ["--devices", "8", "--tp", "1", "--sequence-parallel"],
     "--sequence-parallel needs --tp 2 or more (it splits the tensor-parallel group's "
     "activations): --sequence-parallel means nothing on every row of the sweep; give --tp (in "
     "a sweep: or a --tp-values that reaches 2 within a server), or drop it"),
]
IDS = ["sequence_parallel", "tp_overlap (decide)", "virtual_stages", "schedule", "p2p_overlap",
       "shard_group", "grad_sync", "deepspeed pipeline", "sweep sequence_parallel"]


@pytest.mark.parametrize("scenario, command, file_words, flags, flag_words", CASES, ids=IDS)
def test_a_scenario_files_setting_is_named_as_the_file_names_it(
        tmp_path, capsys, scenario, command, file_words, flags, flag_words):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    line = _line(capsys, [*command, *W, "--scenario", str(path)])
    assert line.startswith(f"scalesim {command[0]}: error: {path}: {file_words}"), line
    # no flag of a knob the file holds: the file gave it (a knob it does not hold was given
    # nowhere, so its flag, as a fix names it: since session 50)
    held = {flag_of(field) for field in file_settings(scenario)}
    assert not set(re.findall(r"--[a-z][a-z-]*", line)) & held, line
    # the same settings as flags: the flags' line, as it always read
    line = _line(capsys, [*command, *W, *flags])
    assert line.startswith(f"scalesim {command[0]}: error: {flag_words}"), line


def test_a_setting_given_by_flag_beside_the_file_keeps_the_flag(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"devices": [8], "layout": {"sequence_parallel": True}}))
    # the file's setting by its key, the flag's by the flag
    assert _line(capsys, ["predict", *W, "--scenario", str(path), "--tp", "1"]) == (
        f"scalesim predict: error: {path}: sequence_parallel true needs --tp 2 or more (it "
        "splits the tensor-parallel group's activations)")
    # the flag given again over the file's: every knob the line names is the flags'
    assert _line(capsys, ["predict", *W, "--scenario", str(path), "--tp", "1",
                          "--sequence-parallel"]) == (
        "scalesim predict: error: --sequence-parallel needs --tp 2 or more (it splits the "
        "tensor-parallel group's activations)")
    # a merged file-and-flags scenario's refusal: the file named in place of 'scenario'
    path.write_text(json.dumps({"devices": [8], "strategy": "zero2",
                                "zero_framework": "deepspeed"}))
    assert _line(capsys, ["predict", *W, "--scenario", str(path), "--grad-sync",
                          "once-per-step"]) == (
        f"scalesim predict: error: {path}: --grad-sync once-per-step is FSDP's no_sync; "
        "DeepSpeed stage 2/3 reduce gradients in every micro-step: use zero_framework fsdp or "
        "--grad-sync every-micro-step")


def test_a_refusal_naming_no_setting_of_the_file_is_unchanged(tmp_path, capsys):
    """A file that gives only the device counts: the tp flag's refusal reads as without it."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"devices": [8]}))
    assert _line(capsys, ["predict", *W, "--scenario", str(path), "--sequence-parallel"]) == (
        "scalesim predict: error: --sequence-parallel needs --tp 2 or more (it splits the "
        "tensor-parallel group's activations)")
