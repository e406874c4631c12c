"""Session 50: a ``--scenario`` file's refusal or note names a setting the file does not hold by
its flag, not by a file key that is not there (``cli.given_words.in_given_words``). Before, any
scenario field no flag set was said by its key: 'use accumulation 2' for a file with no
``accumulation``, which reads as 'edit that key' though the file has none to edit. A key the
file holds is said by its key, as before."""

from __future__ import annotations

import argparse
import json

from cli_harness import refused_line, run_cli, scenario_file

from scalesim.cli.given_words import in_given_words
from scalesim.errors import ScalesimError
from scalesim.layout import knob_refusal

W = ["--workload", "llama3-8b"]
# interleaved 1F1B at pp 2 on 16 devices, one micro-batch a step (the default accumulation):
# not a multiple of pp 2 (Megatron's rule, ``layout.layout_problems``)
INTERLEAVED = {"devices": [16], "layout": {"pp": 2, "schedule": "interleaved",
                                           "virtual_stages": 2}}
MEGATRON = ("layout at 16 devices: schedule interleaved: 1 micro-batch per step is not a "
            "multiple of pp 2 (Megatron's rule); use {accumulation} 2 (a multiple of 2), or "
            "another schedule")


def test_in_given_words_names_a_field_the_file_lacks_by_its_flag():
    """The mechanism alone: pp from the file (its key), accumulation from nowhere (its flag)."""
    error = ScalesimError(knob_refusal("{pp} 2 needs {accumulation} 2", ("pp",)))
    args = argparse.Namespace(scenario="s.json", _scenario_settings={"pp": 2})
    assert in_given_words(error, args) == "s.json: pp 2 needs --accumulation 2"
    args = argparse.Namespace(scenario="s.json", _scenario_settings={"pp": 2, "accumulation": 1})
    assert in_given_words(error, args) == "s.json: pp 2 needs accumulation 2"


def test_predict_names_the_accumulation_the_file_lacks_by_its_flag(tmp_path, capsys):
    path = scenario_file(tmp_path, "il.json", INTERLEAVED)
    assert refused_line(capsys, ["predict", *W, "--scenario", path]) == (
        f"scalesim predict: error: {path}: " + MEGATRON.format(accumulation="--accumulation"))
    # the file holds accumulation 1: its key, as before
    path = scenario_file(tmp_path, "acc.json", {**INTERLEAVED, "accumulation": 1})
    assert refused_line(capsys, ["predict", *W, "--scenario", path]) == (
        f"scalesim predict: error: {path}: " + MEGATRON.format(accumulation="accumulation"))


def test_sweep_names_the_accumulation_the_file_lacks_by_its_flag(tmp_path, capsys):
    """The dropped pp 2 row's rule: the file's schedule by its key, the swept pp by its grid
    flag, the accumulation no one gave by its flag (was 'use accumulation 2')."""
    path = scenario_file(tmp_path, "il.json", {"devices": [16], "layout": {
        "schedule": "interleaved", "virtual_stages": 2}})
    code, _, err = run_cli(capsys, ["sweep", *W, "--format", "json", "--scenario", path,
                                    "--pp-values", "1,2"])
    assert code == 0, err
    first = err.splitlines()[0]
    assert first.startswith(f"note: {path}: 1 combination dropped: "), first
    assert "(Megatron's rule); use --accumulation 2 (a multiple of 2), or another schedule)" \
        in first, first


def test_decide_names_the_strategy_the_file_lacks_by_its_flag(tmp_path, capsys):
    """A framework under the default ddp: 'give --strategy zero1, ...' where the file has no
    strategy (was 'give strategy zero1, ...'); 'give strategy ...' where it holds ddp."""
    for scenario, give in (({"devices": [16], "zero_framework": "deepspeed"}, "--strategy"),
                           ({"devices": [16], "strategy": "ddp", "zero_framework": "deepspeed"},
                            "strategy")):
        path = scenario_file(tmp_path, "zf.json", scenario)
        code, out, err = run_cli(capsys, ["decide", "--workload", "bert-large", "--json",
                                          "--scenario", path])
        assert code == 0, err
        assert json.loads(out)["notes"][0] == (
            f"{path}: zero_framework deepspeed with strategy ddp is DeepSpeed's engine without ZeRO "
            "(stage 0: its own all-reduce and optimizer step, nothing sharded); give "
            f"{give} zero1, zero2 or zero3 to shard")


def test_goal_names_the_micro_batch_the_file_lacks_by_its_flag(tmp_path, capsys):
    """goal refuses a file's global batch and asks for a micro-batch, which the file does not
    hold: '--batch N' (was 'micro_batch N')."""
    path = scenario_file(tmp_path, "gb.json", {"global_batch": 512})
    line = refused_line(capsys, ["goal", *W, "--deadline", "30d", "--budget", "100000",
                                 "--train-samples", "1e7", "--scenario", path])
    assert line.endswith("; drop it, and give --batch N for the micro-batch it starts from"), line
