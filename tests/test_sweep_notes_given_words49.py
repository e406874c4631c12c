"""Session 49 (follow-up): the sweep's notes say a setting a ``--scenario`` file gave by the
file's key, the file named first (``cli.given_words``), as its dropped-row note and main's
error line do; a flag's setting by its flag, the line as before."""

from __future__ import annotations

import json

from cli_harness import run_cli

SWEEP = ["sweep", "--workload", "llama3-8b", "--format", "json"]
# the row the sweep drops first: the DeepSpeed one, its shard group refused
# (``layout.shard_group_refusal``), each knob in its slot
DEEPSPEED_GROUP = ("shard group 4 on 16 devices: {shard_group} 4 with {zero_framework} "
                   "deepspeed: hybrid sharding is modelled for FSDP and Megatron-Core "
                   "(DeepSpeed's MiCS / ZeRO++ hpZ are not); use {zero_framework} fsdp or drop "
                   "{shard_group}")


def _file(tmp_path, name, scenario):
    path = tmp_path / name
    path.write_text(json.dumps(scenario))
    return str(path)


def _notes(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return json.loads(out), err.splitlines()


def test_a_row_dropped_for_the_files_shard_group_names_it_by_its_key(tmp_path, capsys):
    """The file's shard group 4 (ZeRO-3) with --zero-framework-values fsdp,deepspeed: the
    DeepSpeed row is dropped (``sweep._shard_group_problems_of_rows``); its rule names the
    file's shard_group by its key, the grid's framework by its flag. Before session 49 the
    rule was put in an f-string and lost its template: '--shard-group 4 with ... or drop
    --shard-group', no file named. Both paths: the data-parallel rows, and the layouts' (a
    swept tp, whose tp 2 rows drop too)."""
    path = _file(tmp_path, "sg.json", {"devices": [16], "strategy": "zero3",
                                       "layout": {"shard_group": 4}})
    words = DEEPSPEED_GROUP.format(shard_group="shard_group", zero_framework="--zero-framework")
    rows, err = _notes(capsys, [*SWEEP, "--scenario", path, "--zero-framework-values",
                                "fsdp,deepspeed"])
    assert [row["zero_framework"] for row in rows] == ["fsdp"]
    assert err[0] == (f"note: {path}: 1 combination dropped: 1 breaks a layout rule (e.g. "
                      f"{words})")
    rows, err = _notes(capsys, [*SWEEP, "--scenario", path, "--zero-framework-values",
                                "fsdp,deepspeed", "--tp-values", "1,2"])
    assert len(rows) == 2
    assert err[0] == (f"note: {path}: 2 combinations dropped: 2 break a layout rule (e.g. "
                      f"{words})")


def test_a_row_dropped_for_the_flags_shard_group_names_it_by_its_flag(capsys):
    """The flags alone: the line as before session 49."""
    words = DEEPSPEED_GROUP.format(shard_group="--shard-group", zero_framework="--zero-framework")
    _, err = _notes(capsys, [*SWEEP, "--devices", "16", "--strategy", "zero3", "--shard-group",
                             "4", "--zero-framework-values", "fsdp,deepspeed"])
    assert err[0] == f"note: 1 combination dropped: 1 breaks a layout rule (e.g. {words})"
