"""A fixed global batch beside a --devices list that splits, at the fewest devices, into
micro-batches past the bounds table's largest (strong scaling): predict runs the counts where
it fits and names the rest in one note, the words sweep says of the rows it drops
(``counts_left_out.micro_batch_left_out``, ``layout_predict.counts_that_run``; session 43).
Before, predict refused the whole list at the first such count; sweep only counted the drops.

By hand, with the bounds table's largest micro-batch M = 2**24 = 16,777,216 samples: global batch
2**26 = 67,108,864 on 1, 2, 4 and 8 devices at accumulation 1 is a micro-batch of 2**26, 2**25,
2**24 and 2**23: 1 and 2 are left out. Accumulation 4 splits it into 2**24 at 1 device and
evenly at 2, 4 and 8 (the fewest micro-steps past 1 that do); the largest global batch that
runs 1 device is M x 1 x 1 = 2**24, a multiple of lcm(1, 2, 4, 8) = 8; a count runs from
devices x accumulation = 2**26 / 2**24 = 4 on."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.predict import micro_batch_max

LIST = ["--global-batch", str(2**26), "--devices", "1,2,4,8"]
NOTE = ("global batch 67,108,864 over devices x accumulation 1 or 2 is a micro-batch of "
        "67,108,864 or 33,554,432 samples, past the largest of the bounds table (16,777,216): "
        "the rows on 1 and 2 devices are left out; --accumulation 4 or --global-batch 16777216 "
        "runs every count, or give counts whose devices x accumulation is at least 4")


def _notes(text: str) -> list[str]:
    return [line.removeprefix("note: ") for line in text.splitlines() if line.startswith("note: ")]


def test_the_hand_figures_rest_on_the_bounds_table():
    assert micro_batch_max() == 2**24


def test_predict_runs_the_counts_whose_micro_batch_fits_and_names_the_rest(capsys):
    code, out, err = run_cli(capsys, ["predict", *LIST, "--json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["devices"], r["micro_batch"]) for r in rows] == [(4, 2**24), (8, 2**23)]
    assert NOTE in _notes(err)
    code, alone, _ = run_cli(capsys, ["predict", "--global-batch", str(2**26), "--devices",
                                      "4,8", "--json"])
    assert [r["step_time_s"] for r in json.loads(alone)] == [r["step_time_s"] for r in rows]
    code, text, err = run_cli(capsys, ["predict", *LIST])
    assert code == 0 and err == "" and NOTE in _notes(text)


def test_sweep_drops_the_same_rows_with_predicts_note(capsys):
    code, out, err = run_cli(capsys, ["sweep", *LIST])
    assert code == 0, err
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["4", "8"]
    assert NOTE in _notes(err)


def test_each_fix_the_note_offers_runs_every_count(capsys):
    for fix in (["--accumulation", "4"], ["--global-batch", "16777216"]):
        args = [*LIST, *fix] if fix[0] == "--accumulation" else [*fix, "--devices", "1,2,4,8"]
        code, out, err = run_cli(capsys, ["predict", *args, "--json"])
        assert code == 0, err
        assert [r["devices"] for r in json.loads(out)] == [1, 2, 4, 8]
        assert not [n for n in _notes(err) if "left out" in n]


def test_a_split_model_counts_dp(capsys):
    """llama3-8b at tp 8: dp 1, 2 and 4 on 8, 16 and 32 devices; global batch 2**25 is a
    micro-batch of 2**25 at dp 1 alone; accumulation 2 halves it to M."""
    args = ["--workload", "llama3-8b", "--tp", "8", "--global-batch", str(2**25),
            "--devices", "8,16,32"]
    note = ("global batch 33,554,432 over dp x accumulation 1 is a micro-batch of 33,554,432 "
            "samples, past the largest of the bounds table (16,777,216): the row on 8 devices is "
            "left out; --accumulation 2 or --global-batch 16777216 runs every count, or give "
            "counts whose dp x accumulation is at least 2")
    for command in ("predict", "sweep"):
        code, out, err = run_cli(capsys, [command, *args] + (["--json"] if command == "predict"
                                                             else []))
        assert code == 0, err
        assert note in _notes(err)
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["16", "32"]


def test_a_swept_accumulation_says_no_note_of_one(capsys):
    code, out, err = run_cli(capsys, ["sweep", *LIST, "--accumulation-values", "1,4"])
    assert code == 0, err
    assert not [n for n in _notes(err) if "left out" in n]
    assert len(out.splitlines()) == 1 + 2 + 4  # 4 and 8 at 1 micro-step, every count at 4
