"""A strong-scaling global batch that does not split over every device count asked: the one-line
refusal names every count it fails at and offers the nearest global batches that split over all
of them, the multiples of lcm(replicas) x accumulation (``predict.uneven_split_words``). Before,
``predict --global-batch 1000 --devices 8,16`` named 16 alone and said only "pick a global
batch divisible by devices x accumulation". Where some counts split it, predict runs them and
names the rest in one note, as sweep drops their rows (session 43,
``counts_left_out.batch_left_out``)."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.predict import micro_batch_max, nearest_splitting_batches


def _refusal(capsys, argv):
    code, out, err = run_cli(capsys, ["predict", *argv])
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    return err.strip().removeprefix("scalesim predict: error: ")


def _left_out(capsys, argv) -> tuple[list[int], list[str]]:
    """(the device counts predict --json runs, its notes): the counts the batch splits over
    run, each row predict's of that count alone; the rest are named in one note (session 43:
    the list was refused)."""
    code, out, err = run_cli(capsys, ["predict", *argv, "--json"])
    assert code == 0, err
    rows = json.loads(out)
    counts = [r["devices"] for r in rows]
    at = argv.index("--devices") + 1
    alone = [*argv[:at], ",".join(map(str, counts)), *argv[at + 1:], "--json"]
    code, kept, _ = run_cli(capsys, ["predict", *alone])
    assert [r["step_time_s"] for r in json.loads(kept)] == [r["step_time_s"] for r in rows]
    return counts, [line.removeprefix("note: ") for line in err.splitlines()]


def test_every_failing_count_and_the_nearest_batches(capsys):
    # lcm(8, 16) = 16: 1000 = 62.5 x 16, so 62 x 16 = 992 and 63 x 16 = 1008; 1000 / 8 = 125
    assert _left_out(capsys, ["--global-batch", "1000", "--devices", "8,16"]) == ([8], [
        "global batch 1000 does not split evenly over devices x accumulation 16: the row on 16 "
        "devices is left out; --global-batch 992 or 1008 runs every count, or give counts whose "
        "devices x accumulation divides it"])
    # lcm(8, 16, 32, 48) = 96: 10 x 96 = 960, 11 x 96 = 1056; 8 splits 1000, the rest do not
    assert _left_out(capsys, ["--global-batch", "1000", "--devices", "8,16,32,48"]) == ([8], [
        "global batch 1000 does not split evenly over devices x accumulation 16, 32 or 48: the "
        "rows on 16, 32 and 48 devices are left out; --global-batch 960 or 1056 runs every "
        "count, or give counts whose devices x accumulation divides it"])
    # no count splits it: refused, every count named
    assert _refusal(capsys, ["--global-batch", "1000", "--devices", "16,48"]) == (
        "global batch 1000 does not split evenly over 16 and 48 devices x 1 accumulation steps; "
        "pick a global batch divisible by devices x accumulation at every count asked (16 and "
        "48): 960 or 1008")
    # 16 devices x 4 micro-steps = 64: 15 x 64 = 960, 16 x 64 = 1024
    assert _refusal(capsys, ["--global-batch", "1000", "--devices", "16", "--accumulation",
                             "4"]).endswith("divisible by devices x accumulation: 960 or 1024")
    # below the smallest multiple (8): only the one above
    assert _refusal(capsys, ["--global-batch", "6", "--devices", "4,8"]).endswith(
        "at every count asked (4 and 8): 8")


def test_a_split_model_names_each_dp(capsys):
    # tp 2: dp 4, 8, 12 at 8, 16, 24 devices; 100 = 25 x 4; lcm(4, 8, 12) = 24: 4 x 24 = 96,
    # 5 x 24 = 120
    assert _left_out(capsys, ["--workload", "llama3-8b", "--tp", "2", "--global-batch", "100",
                              "--devices", "8,16,24"]) == ([8], [
        "global batch 100 does not split evenly over dp x accumulation 8 or 12: the rows on 16 "
        "and 24 devices are left out; --global-batch 96 or 120 runs every count, or give counts "
        "whose dp x accumulation divides it"])
    # lcm(8, 12) = 24 again
    assert _refusal(capsys, ["--workload", "llama3-8b", "--tp", "2", "--global-batch", "100",
                             "--devices", "16,24"]) == (
        "global batch 100 is not divisible by dp 8 x accumulation 1 (16 devices), nor by dp 12 x "
        "accumulation 1 (24 devices); pick a global batch divisible by dp x accumulation at "
        "every count asked (16 and 24): 96 or 120")


def test_the_nearest_keep_micro_batches_in_bounds():
    cap = micro_batch_max()
    # one device and two: lcm 2; the multiple above is a micro-batch past the cap on one device
    assert nearest_splitting_batches(cap + 1, [1, 2], 1) == [cap]
    assert nearest_splitting_batches(1000, [8, 16], 1) == [992, 1008]
    assert nearest_splitting_batches(5, [8, 16], 1) == [16]
