"""A one-value model split (tp x pp x cp) or fixed global batch beside a --devices list: predict
runs the counts they run and names the rest in one note per rule, the words sweep says of the
rows it drops (``counts_left_out``, ``layout_predict.counts_that_run``; session 43). Before,
predict refused the whole list at the first such count and sweep only counted the drops.

By hand: llama3-8b at tp 2 x pp 2 x cp 4 = 16 devices a replica on 8, 16, 24 and 32 devices: 16
and 32 are multiples of 16 (dp 1 and 2), 8 and 24 are not; gcd(8, 16, 24, 32) = 8. At tp 8 x
pp 2 = 16 with global batch 32 on 8, 16, 24, 32 and 48: the split leaves out 8 and 24, then dp
1, 2 and 3 at 16, 32 and 48: 32 / 3 is not whole, so 48 is left out; lcm(1, 2, 3) = 6, the
multiples nearest 32 are 30 and 36."""

from __future__ import annotations

import json

from cli_harness import run_cli

SPLIT = ["--workload", "llama3-8b", "--tp", "2", "--pp", "2", "--cp", "4"]
NOTE = ("tp x pp x cp = 16 does not divide the devices: the rows on 8 and 24 devices are left "
        "out; a tp x pp x cp that divides 8 runs every count, or give counts that are multiples "
        "of 16")
BOTH = ["--workload", "llama3-8b", "--tp", "8", "--pp", "2", "--global-batch", "32",
        "--devices", "8,16,24,32,48"]
BOTH_NOTES = [
    "tp x pp = 16 does not divide the devices: the rows on 8 and 24 devices are left out; a tp x "
    "pp that divides 8 runs every count, or give counts that are multiples of 16",
    "global batch 32 does not split evenly over dp x accumulation 3: the row on 48 devices is "
    "left out; --global-batch 30 or 36 runs every count, or give counts whose dp x accumulation "
    "divides it"]


def _notes(text: str) -> list[str]:
    return [line.removeprefix("note: ") for line in text.splitlines() if line.startswith("note: ")]


def test_predict_runs_the_multiples_of_the_split_and_names_the_rest(capsys):
    code, out, err = run_cli(capsys, ["predict", *SPLIT, "--devices", "8,16,24,32", "--json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["devices"], r["dp"]) for r in rows] == [(16, 1), (32, 2)]
    assert _notes(err) == [NOTE]
    # each row predict's of that count, asked alone
    code, alone, _ = run_cli(capsys, ["predict", *SPLIT, "--devices", "16,32", "--json"])
    assert [r["step_time_s"] for r in json.loads(alone)] == [r["step_time_s"] for r in rows]
    code, text, err = run_cli(capsys, ["predict", *SPLIT, "--devices", "8,16,24,32"])
    assert code == 0 and err == ""
    assert NOTE in _notes(text)


def test_sweep_says_predicts_note_of_the_counts_it_drops(capsys):
    code, out, err = run_cli(capsys, ["sweep", *SPLIT, "--devices", "8,16,24,32"])
    assert code == 0, err
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["16", "32"]
    assert NOTE in _notes(err)
    # each dropped row said once, by NOTE (before session 50 also "note: 2 combinations dropped:
    # 2 break a layout rule (e.g. tp 2 x pp 2 x cp 4 on 8 devices: tp x pp x cp does not divide
    # the devices)")
    assert "dropped" not in err


def test_each_rule_judges_the_counts_the_one_before_kept_in_predict_and_sweep(capsys):
    code, out, err = run_cli(capsys, ["predict", *BOTH, "--json"])
    assert code == 0, err
    assert [(r["devices"], r["dp"]) for r in json.loads(out)] == [(16, 1), (32, 2)]
    assert _notes(err) == BOTH_NOTES
    code, out, err = run_cli(capsys, ["sweep", *BOTH])
    assert code == 0, err
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["16", "32"]
    notes = _notes(err)
    assert [n for n in notes if n in BOTH_NOTES] == BOTH_NOTES


def test_a_swept_split_says_no_note_of_one_split(capsys):
    """--tp-values 1,2: a count's dp differs by row, so no one split's note (the dropped count
    and its example say it)."""
    code, out, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--tp-values", "1,2",
                                      "--global-batch", "6", "--devices", "2,4"])
    assert code == 0, err
    assert not [n for n in _notes(err) if "left out" in n]


def test_a_list_no_count_of_which_is_a_multiple_is_refused_naming_every_count(capsys):
    code, out, err = run_cli(capsys, ["predict", *SPLIT, "--devices", "8,24"])
    assert code == 2 and out == ""
    # 16 and 32 are the multiples of 16 around 8 and 24; gcd(8, 24) = 8
    assert err == ("scalesim predict: error: devices 8 and 24 are not divisible by tp x pp x cp = "
                   "16; give device counts that are multiples of it (16 or 32), or a tp x pp x cp "
                   "that divides 8\n")
    code, out, err = run_cli(capsys, ["predict", *SPLIT, "--devices", "8"])  # the old words
    assert err == ("scalesim predict: error: devices 8 are not divisible by tp x pp x cp = 16; "
                   "give device counts that are multiples of it (16), or a tp x pp x cp that "
                   "divides 8\n")
