"""Session 49 (follow-up): predict's 'left out' notes say a setting a ``--scenario`` file gave
by the file's key, the file named first (``cli.given_words``), as sweep's notes do; a flag's
setting by its flag, the line as before."""

from __future__ import annotations

from cli_harness import run_cli, scenario_file

PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100"]
# shard group 16 (ZeRO-3) at 16 and 24 devices: dp 24 is not a multiple of 16, dp 16 is; the
# fix is gcd(16, 24) = 8, which divides dp 16 as well (``counts_left_out.shard_group_left_out``)
GROUP = ("shard group 16 does not divide dp 24: the row on 24 devices is left out; "
         "{shard_group} 8 runs every count, or give counts whose dp it divides")
# global batch 64 at 8, 16 and 24 devices (accumulation 1): dp 24 does not divide 64; the
# batches nearest 64 that every dp (8, 16, 24) divides are 48 and 96 (lcm 48)
BATCH = ("global batch 64 does not split evenly over dp x accumulation 24: the row on 24 "
         "devices is left out; {global_batch} 48 or 96 runs every count, or give counts whose "
         "dp x accumulation divides it")


def _notes(capsys, argv, where="out"):
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return [line for line in (out if where == "out" else err).splitlines()
            if line.startswith("note:") and "left out" in line]


def test_the_files_shard_group_is_named_by_its_key(tmp_path, capsys):
    """Before session 49: 'note: shard group 16 does not divide dp 24: ...; --shard-group 8
    runs every count ...', a flag the user never gave; now the file's key, the file first, in
    the table's notes and beside --json (stderr)."""
    path = scenario_file(tmp_path, "sg.json", {"devices": [16, 24], "strategy": "zero3",
                                       "layout": {"shard_group": 16}})
    said = f"note: {path}: " + GROUP.format(shard_group="shard_group")
    assert _notes(capsys, [*PREDICT, "--scenario", path]) == [said]
    assert _notes(capsys, [*PREDICT, "--scenario", path, "--json"], "err") == [said]


def test_the_flags_shard_group_is_named_by_its_flag(tmp_path, capsys):
    """The flags alone, or the file's group given again by the flag: the line as before."""
    said = "note: " + GROUP.format(shard_group="--shard-group")
    assert _notes(capsys, [*PREDICT, "--devices", "16,24", "--strategy", "zero3",
                           "--shard-group", "16"]) == [said]
    path = scenario_file(tmp_path, "sg.json", {"devices": [16, 24], "strategy": "zero3",
                                       "layout": {"shard_group": 16}})
    assert _notes(capsys, [*PREDICT, "--scenario", path, "--shard-group", "16"]) == [said]


def test_the_files_global_batch_is_named_by_its_key(tmp_path, capsys):
    """Before session 49: '...; --global-batch 48 or 96 runs every count ...'."""
    path = scenario_file(tmp_path, "gb.json", {"devices": [8, 16, 24], "global_batch": 64})
    assert _notes(capsys, [*PREDICT, "--scenario", path]) == [
        f"note: {path}: " + BATCH.format(global_batch="global_batch")]
    assert _notes(capsys, [*PREDICT, "--devices", "8,16,24", "--global-batch", "64"]) == [
        "note: " + BATCH.format(global_batch="--global-batch")]
