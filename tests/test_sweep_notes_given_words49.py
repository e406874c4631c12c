"""Session 49 (follow-up): the sweep's notes say a setting a ``--scenario`` file gave by the
file's key, the file named first (``cli.given_words``), as its dropped-row note and main's
error line do; a flag's setting by its flag, the line as before."""

from __future__ import annotations

import json

from cli_harness import run_cli, scenario_file

SWEEP = ["sweep", "--workload", "llama3-8b", "--format", "json"]
# the row the sweep drops first: the DeepSpeed one, its shard group refused
# (``layout.shard_group_refusal``), each knob in its slot
DEEPSPEED_GROUP = ("shard group 4 on 16 devices: {shard_group} 4 with {zero_framework} "
                   "deepspeed: hybrid sharding is modelled for FSDP and Megatron-Core "
                   "(DeepSpeed's MiCS / ZeRO++ hpZ are not); use {zero_framework} fsdp or drop "
                   "{shard_group}")


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
    path = scenario_file(tmp_path, "sg.json", {"devices": [16], "strategy": "zero3",
                                       "layout": {"shard_group": 4}})
    # the swept framework by its grid flag, as typed (was '--zero-framework' before session 50)
    words = DEEPSPEED_GROUP.format(shard_group="shard_group",
                                   zero_framework="--zero-framework-values")
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
    """The flags alone: the line as before session 49, the swept framework by its grid flag
    (session 50)."""
    words = DEEPSPEED_GROUP.format(shard_group="--shard-group",
                                   zero_framework="--zero-framework-values")
    _, err = _notes(capsys, [*SWEEP, "--devices", "16", "--strategy", "zero3", "--shard-group",
                             "4", "--zero-framework-values", "fsdp,deepspeed"])
    assert err[0] == f"note: 1 combination dropped: 1 breaks a layout rule (e.g. {words})"


UNPRICED = ("{price} ignored: a sweep row has no time to train or cost column (predict, decide "
            "and goal price a run)")


def test_the_files_price_is_noted_ignored_by_its_key(tmp_path, capsys):
    """A file's price: the note names the file's price_per_device_hour, the file first (before
    session 49: '--price ignored: ...', a flag the user never gave); the flag's: as before."""
    path = scenario_file(tmp_path, "price.json", {"devices": [16], "price_per_device_hour": 2.5})
    _, err = _notes(capsys, [*SWEEP, "--scenario", path])
    assert f"note: {path}: " + UNPRICED.format(price="price_per_device_hour") in err, err
    assert not any("--price" in line for line in err), err
    _, err = _notes(capsys, [*SWEEP, "--devices", "16", "--price", "2.5"])
    assert "note: " + UNPRICED.format(price="--price") in err, err
    # the file's price said again by the flag: the flag's value is the one given, its words
    _, err = _notes(capsys, [*SWEEP, "--scenario", path, "--price", "3"])
    assert "note: " + UNPRICED.format(price="--price") in err, err


# a one-value schedule some rows run without (``cmd_sweep.ignored_notes``): the pp 1 rows of
# --pp-values 1,2 at 16 and 32 devices, 2 of the 4 (``layout.unused_settings``' rule); the
# closing phrase names the setting as the rest of the line (was "... their scenario without the
# flag" before session 49 (follow-up): a file gave no flag); the rule names the swept pp by its
# grid flag, as typed (was "needs --pp 2 or more ...; at --pp 1 leave" before session 49
# (follow-up): predict's flag, which the sweep was not given; ``layout.knobs_said``)
GPIPE = ("{schedule} gpipe ignored on 2 of the 4 rows (e.g. tp 1 x pp 1 on 16 devices): "
         "{schedule} gpipe needs --pp-values 2 or more (a pipeline); at --pp-values 1 leave "
         "{schedule} at its "
         "default; they run without it, as predict runs their scenario without {schedule}, and "
         "column schedule says what each row runs")


def test_the_files_schedule_is_noted_ignored_by_its_key(tmp_path, capsys):
    """A file's schedule gpipe with --pp-values 1,2: the pp 1 rows run without it; the note
    names the file's schedule by its key, the file first, pp by the grid's flag. Before
    session 49: '--schedule gpipe ignored on 2 of the 4 rows ...: --schedule gpipe needs --pp 2
    or more ...'. The flags alone: as before."""
    path = scenario_file(tmp_path, "gpipe.json", {"devices": [16, 32], "layout": {"schedule": "gpipe"}})
    rows, err = _notes(capsys, [*SWEEP, "--scenario", path, "--pp-values", "1,2"])
    assert len(rows) == 4
    assert f"note: {path}: " + GPIPE.format(schedule="schedule") in err, err
    _, err = _notes(capsys, [*SWEEP, "--devices", "16,32", "--schedule", "gpipe", "--pp-values",
                             "1,2"])
    assert "note: " + GPIPE.format(schedule="--schedule") in err, err


def test_the_files_shard_group_is_noted_ignored_on_ddp_rows_by_its_key(tmp_path, capsys):
    """A file's shard group with --strategy-values ddp,zero3: the ddp row runs without it
    (``layout.shard_group_needs_zero``, a rule naming no flag); the note's setting is the
    file's key (before session 49: '--shard-group 4 ignored on 1 of the 2 rows ...')."""
    path = scenario_file(tmp_path, "sg.json", {"devices": [16], "layout": {"shard_group": 4}})
    _, err = _notes(capsys, [*SWEEP, "--scenario", path, "--strategy-values", "ddp,zero3"])
    # the closing phrase names it too (was "... their scenario without the flag" before
    # session 49 (follow-up), for the file's key as for the flag)
    rest = ("{sg} 4 ignored on 1 of the 2 rows (e.g. strategy ddp on 16 devices): shard group 4 "
            "needs a ZeRO strategy (zero1, zero2, zero3): ddp replicates every state; they run "
            "without it, as predict runs their scenario without {sg}, and column shard_group "
            "says what each row runs")
    assert f"note: {path}: " + rest.format(sg="shard_group") in err, err
    _, err = _notes(capsys, [*SWEEP, "--devices", "16", "--shard-group", "4",
                             "--strategy-values", "ddp,zero3"])
    assert "note: " + rest.format(sg="--shard-group") in err, err
