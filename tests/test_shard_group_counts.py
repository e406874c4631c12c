"""A one-value --shard-group beside a --devices list: predict and sweep run the counts whose
dp (x cp) it divides or is at least, and say in one note, the same words in both, which counts
were left out and why (``layout.shard_group_left_out``; session 43). Before, sweep dropped them
and predict refused the whole list at the first such count.

By hand: shard group 16 on 8, 16, 24, 32, 40 devices at tp = pp = 1 (dp = devices): 8 is within
the group (full sharding), 16 and 32 are multiples, 24 and 40 are neither; gcd(16, 24, 40) = 8
divides 16, 24, 32 and 40 and equals 8, so --shard-group 8 runs every count."""

from __future__ import annotations

import json

from cli_harness import run_cli

LIST = ["--devices", "8,16,24,32,40", "--strategy", "zero3", "--shard-group", "16"]
NOTE = ("shard group 16 does not divide dp 24 or 40: the rows on 24 and 40 devices are left "
        "out; --shard-group 8 runs every count, or give counts whose dp it divides")


def _notes(text: str) -> list[str]:
    return [line.removeprefix("note: ") for line in text.splitlines() if line.startswith("note: ")]


def test_predict_runs_the_counts_the_group_divides_and_names_the_rest(capsys):
    for workload in (["--workload", "llama3-8b"], []):  # the layout path, the data-parallel one
        code, out, err = run_cli(capsys, ["predict", *workload, *LIST, "--json"])
        assert code == 0, err
        rows = json.loads(out)
        assert [r["devices"] for r in rows] == [8, 16, 32]
        assert [r["shard_group"] for r in rows] == [8, 16, 16]  # 8: all of dp 8
        assert _notes(err) == [NOTE]
        # each row is predict's of the counts it runs, asked alone
        code, alone, _ = run_cli(capsys, ["predict", *workload, "--devices", "8,16,32",
                                          *LIST[2:], "--json"])
        assert [r["step_time_s"] for r in json.loads(alone)] == [r["step_time_s"] for r in rows]
        code, text, err = run_cli(capsys, ["predict", *workload, *LIST])
        assert code == 0 and err == ""
        assert NOTE in _notes(text)
        table = [line.split()[0] for line in text.splitlines() if line[:7].strip().isdigit()]
        assert table == ["8", "16", "32"]


def test_sweep_says_the_same_note_of_the_counts_it_drops(capsys):
    for workload in (["--workload", "llama3-8b"], []):
        code, out, err = run_cli(capsys, ["sweep", *workload, *LIST])
        assert code == 0, err
        assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["8", "16", "32"]
        assert NOTE in _notes(err)
        # each dropped row said once, by NOTE (before session 50 also "note: 2 combinations
        # dropped: 2 break a layout rule (e.g. shard group 16 on 24 devices: shard group 16
        # does not divide dp 24; give a divisor of it (e.g. 24: full sharding))")
        assert "dropped" not in err


def test_sweep_names_the_zero_rows_where_ddp_rows_run_at_that_count(capsys):
    code, out, err = run_cli(capsys, ["sweep", "--devices", "8,16,24", "--strategy-values",
                                      "ddp,zero3", "--shard-group", "16"])
    assert code == 0, err
    rows = [line.split(",")[:1] + [line.split(",")[out.splitlines()[0].split(",").index(
        "strategy")]] for line in out.splitlines()[1:]]
    assert ["24", "ddp"] in rows and ["24", "zero3"] not in rows
    assert ("shard group 16 does not divide dp 24: the ZeRO row on 24 devices is left out; "
            "--shard-group 8 runs every count, or give counts whose dp it divides") in _notes(err)


def test_dp_times_cp_is_named_and_no_common_group_is_offered_where_none_runs_all(capsys):
    """cp 2 on 16 and 48 devices: dp x cp 16 and 48; group 32 is above 16 (full sharding) and
    does not divide 48, and gcd(32, 48) = 16 runs both. Group 5 on 4 and 24 devices: 4 is
    within it, 24 left out, and gcd(5, 24) = 1 is no shard group: none is offered."""
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--devices", "16,48",
                                      "--cp", "2", "--strategy", "zero1", "--shard-group", "32",
                                      "--json"])
    assert code == 0, err
    assert [r["devices"] for r in json.loads(out)] == [16]
    assert _notes(err) == ["shard group 32 does not divide dp x cp 48: the row on 48 devices is "
                           "left out; --shard-group 16 runs every count, or give counts whose "
                           "dp x cp it divides"]
    code, out, err = run_cli(capsys, ["predict", "--devices", "4,24", "--gpus-per-node", "4",
                                      "--strategy", "zero2", "--shard-group", "5", "--json"])
    assert code == 0, err
    assert _notes(err) == ["shard group 5 does not divide dp 24: the row on 24 devices is left "
                           "out; give counts whose dp it divides"]


def test_a_list_the_group_runs_nowhere_is_refused_in_one_line(capsys):
    """predict names every count it cannot run (it named 24 alone before): gcd(24, 40) = 8
    divides both dp; sweep says predict's line (its first dropped row as an example before)."""
    for command in ("predict", "sweep"):
        code, out, err = run_cli(capsys, [command, "--devices", "24,40", "--strategy", "zero3",
                                          "--shard-group", "16"])
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert err == (f"scalesim {command}: error: shard group 16 does not divide dp 24 or 40; "
                       "give a divisor of each (e.g. 8), or drop it: full sharding (at 24 and 40 "
                       "devices)\n")
    # one count: the old words; dp 9 and 10 share no divisor of 2 or more (gcd 1): none offered
    code, out, err = run_cli(capsys, ["predict", "--devices", "24", "--strategy", "zero3",
                                      "--shard-group", "16"])
    # session 50: one sentence; was '... (e.g. 24: full sharding) (at 24 devices)'
    assert err.endswith("error: at 24 devices, shard group 16 does not divide dp 24; give a "
                        "divisor of it (e.g. 24: full sharding)\n")
    code, out, err = run_cli(capsys, ["predict", "--devices", "9,10", "--gpus-per-node", "10",
                                      "--strategy", "zero3", "--shard-group", "4"])
    assert err.endswith("shard group 4 does not divide dp 9 or 10; drop it: full sharding (at 9 "
                        "and 10 devices)\n"), err


APP_QUERY = {"v": "9", "wl": "llama3-8b", "strat": "zero3", "sg": "16", "dmax": "64",
             "grid": "server"}
# the page's controls and dp in words (was "shard group 16 does not divide dp 24, 40 or 56: ...;
# Shard group (HSDP) 8 runs every count, or give counts whose dp it divides" before session 49:
# notation no control shows; ``counts_left_out.shard_group_left_out``'s template)
APP_NOTE = ("Shard group (HSDP) 16 does not divide the 24, 40 or 56 data-parallel ranks: the rows "
            "on 24, 40 and 56 devices are left out; Shard group (HSDP) 8 runs every count, or "
            "give counts whose data-parallel ranks it divides")


def test_the_app_runs_the_counts_the_group_divides_and_shows_the_note():
    """The app's every-server grid up to 64 (1, 2, 4, then 8 to 64 by 8) with shard group 16:
    dp 24, 40 and 56 are left out (gcd(16, 24, 40, 56) = 8 divides every count, 1 to 4 within
    it), in predict's note with the control's label for the flag; each row the app's of the
    counts kept, typed as a list. Was an error box and the what-if without the group."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query(APP_QUERY)
    plan = make_plan(profile, state)
    assert [r.devices for r in plan.rows] == [1, 2, 4, 8, 16, 32, 48, 64]
    assert APP_NOTE in plan.notes
    state, profile, _ = decode_query({**APP_QUERY, "grid": "list",
                                      "dlist": "1,2,4,8,16,32,48,64"})
    listed = make_plan(profile, state)
    assert [r.step_time_s for r in listed.rows] == [r.step_time_s for r in plan.rows]
    assert not any("shard group 16" in n for n in listed.notes)


def test_the_app_page_shows_the_note_and_no_error_box():
    from app_harness import open_app

    at = open_app(APP_QUERY)
    assert not [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert any(APP_NOTE in i.value for i in at.info)
