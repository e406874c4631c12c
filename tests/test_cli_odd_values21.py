"""The CLI's odd values (session 21, branch cli21): a budget or price too small to mean money,
'40 dollars', and each a one-line refusal with the fix or the same answer as the plain number."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.bounds import bound
from scalesim.money import parse_usd
from scalesim.schemas import Hardware, Scenario

PREDICT = ["predict", "--devices", "8", "--train-samples", "1e7"]
GOAL = ["goal", "--train-samples", "2e9", "--deadline", "3d", "--max-devices", "16"]
PRICE_RULE = (
    "x = 0 or 0.0001 <= x <= 1,000,000 USD (per device-hour; 0 for devices already paid "
    "for, else at least a hundredth of a cent: a CPU core's hour rents for about a "
    "cent)"
)


def _one_line_refusal(capsys, argv) -> str:
    code, out, err = run_cli(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, (argv, err)
    return lines[0]


def test_a_budget_below_a_cent_is_refused_by_the_table(capsys):
    """`goal --budget 1e-300` was accepted ("at most $1e-300"); a cent is the least amount of
    money, so the table's bound is 0.01 (closed: a cent is a budget)."""
    line = _one_line_refusal(capsys, [*GOAL, "--budget", "1e-300"])
    assert line == (
        "scalesim goal: error: argument --budget: 1e-300 is outside 0.01 <= x <= "
        "1,000,000,000,000 USD (a training run's budget: from a cent, the least "
        "amount money is counted in, up to a trillion dollars) (see scalesim goal "
        "--help)"
    )
    assert "0.009 is outside 0.01" in _one_line_refusal(capsys, [*GOAL, "--budget", "0.009"])
    code, out, _ = run_cli(capsys, [*GOAL, "--budget", "0.01", "--json"])
    assert code == 0 and json.loads(out)["budget_usd"] == 0.01


@pytest.mark.parametrize("command", [PREDICT, ["decide", "--devices", "8", "--train-samples", "1e9"], GOAL])
def test_a_price_between_zero_and_a_hundredth_of_a_cent_is_refused(capsys, command):
    """`predict --price 1e-300` printed a cost of 5.5e-300 and decide "saves $4.9e-299": a slip,
    not a price. 0 stays (devices already paid for: every command's zero-price note)."""
    argv = [*command, "--price", "1e-300"] + (["--budget", "50000"] if command is GOAL else [])
    line = _one_line_refusal(capsys, argv)
    assert line.endswith(
        f"argument --price: 1e-300 is outside {PRICE_RULE} (see scalesim {command[0]} --help)"
    ), line
    assert "0.00009 is outside" in _one_line_refusal(capsys, [*PREDICT, "--price", "0.00009"])
    for price in ("0", "0.0001"):
        code, out, _ = run_cli(capsys, [*PREDICT, "--price", price, "--json"])
        assert code == 0 and json.loads(out)[0]["cost_usd"] == pytest.approx(
            float(price) * 8 * json.loads(out)[0]["time_to_train_s"] / 3600.0
        )


def test_files_and_the_apps_controls_refuse_the_same_price():
    """The bound's least nonzero price holds in scenario and hardware files and the app's state
    (pydantic's ge/le cannot say it: ``bounds.nonzero_floor``)."""
    from pydantic import ValidationError
    from scalesim.app.state import AppState

    with pytest.raises(ValidationError, match="1e-300 is outside x = 0 or 0.0001 <= x"):
        Scenario(devices=[8], price_per_device_hour=1e-300)
    with pytest.raises(ValidationError, match="1e-9 is outside x = 0 or 0.0001 <= x"):
        AppState(price=1e-9)
    assert Scenario(devices=[8], price_per_device_hour=0).price_per_device_hour == 0
    assert AppState(price=0.0001).price == 0.0001
    assert "price_per_device_hour" in Hardware.model_fields
    hardware = Hardware.model_json_schema()["properties"]["price_per_device_hour"]
    assert "x = 0 or 0.0001 <= x" in hardware["description"]
    assert bound("price_per_device_hour").problem(-0.0) is None  # -0 is 0


@pytest.mark.parametrize(
    "typed", ["40 dollars", "40 dollar", "40 Dollars", "$40 dollars", "40 US dollars", "40dollars"]
)
def test_dollars_after_the_number_read_as_usd(capsys, typed):
    """`--price '40 dollars'` was refused ("give the number alone, in USD") without the number:
    the currency word reads like 'USD'; the command answers as for 40."""
    assert parse_usd(typed, "price_per_device_hour", "--price") == 40.0
    runs = {}
    for price in ("40", typed):
        code, out, _ = run_cli(capsys, [*PREDICT, "--price", price, "--json"])
        assert code == 0
        runs[price] = json.loads(out)
    assert runs["40"] == runs[typed]


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (
            "40 dollars an hour",
            "'40 dollars an hour' is a rate, and this is already US dollars per "
            "device-hour: give the number alone: 40 (",
        ),
        ("dollars", "'dollars' is not an amount of US dollars; write one like 40, 40.5, $50,000 or 1e5"),
    ],
)
def test_a_dollar_word_without_an_amount_or_with_a_rate_says_the_fix(capsys, typed, says):
    assert says in _one_line_refusal(capsys, [*PREDICT, "--price", typed])


def _cost_table(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "to train" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("cost:"))
    return lines[start:end]  # the header and its rows, not 'cost:' nor the notes under it


def test_predicts_cost_table_keeps_its_header_over_absurd_durations_and_costs(capsys):
    """`predict --devices 8 --train-samples 1e18 --price 1e6` printed '7,890,060 years' and a
    cost of '553,314,154,250,940,160' in 12-character columns: every value past its header.
    Each column is now as wide as its widest cell, and a cost from a quadrillion on has three
    significant digits ($8e6 an hour for 7,890,060 years of 8 devices: 5.53e17).
    Session 56: DDP's bucket copies (docs/model.md §4 "Their copies, in time") add
    336e6 x 8 B / 1,555 GB/s = 1.73 ms to each step on 8 and 1,024 devices (63.74 -> 65.47 ms on 8:
    7,890,060 x 65.47 / 63.74 = 8,103,394 years, $5.68e17; 234,191 -> 235,860 years on 1,024,
    242.17 -> 243.90 ms)."""
    code, out, _ = run_cli(
        capsys, ["predict", "--devices", "8,1024", "--train-samples", "1e18", "--price", "1e6"]
    )
    assert code == 0
    table = _cost_table(out)
    assert table == [
        "devices   to quality        to train  billed     cost USD",
        "      8            - 8,103,394 years       8      5.68e17",
        "   1024            -   235,860 years    1024      2.12e18",  # 234,191, 2.1e18 before s56
    ], table  # session 48 hid the 1,024 devices' exchange behind the last device's backward
    hours = 8_103_394 * 365.25 * 24  # the row's years, back in hours
    assert float(table[1].split()[-1]) == pytest.approx(8 * hours * 1e6, rel=1e-3)


def test_predicts_cost_table_for_one_sample_writes_exponents_as_typed(capsys):
    """`--train-samples 1`: one whole optimizer step on one device (steps21: a run takes whole
    steps, so no longer a 1/32 of a step on 8 devices, 0.00025 s for '2e-6'), 0.062 s for six
    hundred-thousandths of a dollar: '6.3e-5', not Python's '6.3e-05' (the width already held)."""
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,2", "--train-samples", "1"])
    assert code == 0
    table = _cost_table(out)
    widths = {len(line) for line in table}
    assert len(widths) == 1, table  # header over values
    assert table[1].split() == ["1", "-", "0.062", "s", "1", "6.3e-5"], table


def test_amounts_and_short_durations_write_exponents_as_a_person_types_them():
    from scalesim.figures import amount, duration_text

    assert [amount(v) for v in (2e-6, 0.0031, 99.99, 999e12, 1e15, 5.5331e17)] == [
        "2e-6",
        "0.0031",
        "99.99",
        "999,000,000,000,000",
        "1e15",
        "5.53e17",
    ]
    assert [duration_text(s) for s in (2.5e-5, 0.00025, 0.42, 5.0)] == [
        "2.5e-5 s",
        "0.00025 s",
        "0.42 s",
        "5 s",
    ]


SPLIT = [
    "predict",
    "--workload",
    "llama3-405b",
    "--hardware",
    "dgx-h100",
    "--devices",
    "1024",
    "--tp",
    "8",
    "--pp",
    "16",
    "--train-samples",
    "1e7",
    "--json",
]


def _bubble_note(capsys, argv) -> tuple[float, str | None]:
    """The first row's bubble share of its step (from --json) and predict's bubble note."""
    code, out, _ = run_cli(capsys, argv)
    assert code == 0
    row = json.loads(out)[0]
    code, text, _ = run_cli(capsys, [a for a in argv if a != "--json"])
    assert code == 0
    notes = [line for line in text.splitlines() if line.startswith("note: pipeline bubble")]
    assert len(notes) <= 1, notes
    return row["bubble_s"] / row["step_time_s"], (notes[0] if notes else None)


def _flags(note: str) -> list[str]:
    return note.split("; give ", 1)[1].split(" (", 1)[0].split()


def test_a_pipeline_of_one_micro_batch_says_its_bubble_and_the_flags_that_shrink_it(capsys):
    """tp 8 x pp 16 at global batch 2048 over dp 8: one micro-batch of 256 per step through
    16 stages. 1F1B idles (p - 1) = 15 micro-batch times against 1 of work, 15/16 = 94 % (the
    model: 93 %, its average stage lighter than the slowest); nothing said so. Pasting the
    note's flags (64 = 4 x 16 micro-batches of 2048 / 8 / 64 = 4) leaves a bubble under 20 %,
    and no note."""
    share, note = _bubble_note(capsys, [*SPLIT, "--global-batch", "2048"])
    assert 0.9 < share < 15 / 16
    assert note == (
        "note: pipeline bubble: 93% of each step at 1,024 devices is fill and drain: 1 "
        "micro-batch of 256 through 16 stages (idle (pp - 1)/m = 15/1 of the compute, "
        "Narayanan 2021); give --accumulation 64 (64 micro-batches of 4, the same global "
        "batch; m >= 4 x pp keeps the bubble under a quarter), or scalesim plan with the same "
        "--workload and --hardware (or --profile), --devices 1024 --global-batch 2048 (it ranks "
        "splits and micro-batches)"
    )
    pasted, again = _bubble_note(capsys, [*SPLIT, "--global-batch", "2048", *_flags(note)])
    assert pasted < 0.2 and again is None
    assert pasted < 15 / (64 + 15) + 0.01  # (p - 1)/(m + p - 1), as the note's rule says


def test_the_bubble_note_under_a_per_replica_batch_keeps_the_global_batch(capsys):
    """--batch 8: 8 samples per replica per step; 4 x pp = 64 micro-batches cannot split them,
    so the note gives the most there are, 8 of one sample (the same global batch 8 x 8 = 64),
    which halves the share of the step (93 % -> 63 %); pasted, the note says micro-batches of
    one sample cannot split further."""
    share, note = _bubble_note(capsys, [*SPLIT, "--batch", "8"])
    assert note is not None and _flags(note) == ["--batch", "1", "--accumulation", "8"]
    assert "--devices 1024 --global-batch 64 " in note
    pasted, again = _bubble_note(capsys, [*SPLIT, *_flags(note)])
    assert pasted < share - 0.25
    assert again is not None and "micro-batches of one sample already" in again


def test_no_bubble_note_without_a_pipeline_or_under_the_share():
    from types import SimpleNamespace

    from scalesim.pipeline_bubble import bubble_note, fewer_bubble_accumulation

    row = SimpleNamespace(
        pp=4, step_time_s=1.0, bubble_s=0.19, accumulation=16, micro_batch=1, devices=32, dp=1
    )
    assert bubble_note(row, True, "1f1b") is None  # 19 % < 20 %
    assert bubble_note(SimpleNamespace(**{**vars(row), "pp": 1, "bubble_s": 0.9}), True, "none") is None
    # interleaved: a multiple of pp (Megatron's rule); 96 samples, pp 4: 16 is the first from 16
    assert fewer_bubble_accumulation(96, 1, 4, interleaved=True) == 16
    assert fewer_bubble_accumulation(96, 1, 5, interleaved=False) == 24  # from 20: 24 divides 96
    assert fewer_bubble_accumulation(7, 1, 4, interleaved=False) == 7  # the most there are
    assert fewer_bubble_accumulation(8, 8, 4, interleaved=False) is None


@pytest.mark.parametrize(
    ("typed", "seconds"),
    [
        ("3 weeks", 3 * 604800.0),
        ("3w", 3 * 604800.0),
        ("72 hours", 259200.0),
        ("90 minutes", 5400.0),
        ("1y", 365.25 * 86400),
        ("100 years", 100 * 365.25 * 86400),
    ],
)
def test_a_deadline_reads_unit_words_and_years(capsys, typed, seconds):
    """`--deadline '3 weeks'` was "not a duration like 3d, 72h, 90m or 3600" while `3w` was
    read: the words of a unit read as its letter; a year is a Julian year (as predict writes
    one), and the deadline's bound is 100 of them (it was 100 x 365 days: '100y' refused)."""
    code, out, _ = run_cli(capsys, [*GOAL, "--budget", "50000", "--deadline", typed, "--json"])
    assert code == 0 and json.loads(out)["deadline_s"] == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (
            "3 fortnights",
            "'3 fortnights' is not a duration like 3d, 72h, 90m, 2w or 3600 (seconds); "
            "a unit is s, m, h, d, w or y, or its word (3 weeks)",
        ),
        (
            "1e400",
            "'1e400' overflows a float; it is outside 1 <= x <= 3,155,760,000 s (a training "
            "run's deadline: a second to 100 years)",
        ),
        ("101y", "'101y': 3,187,317,600 is outside 1 <= x <= 3,155,760,000 s"),
    ],
)
def test_a_deadline_refusal_says_what_to_write(capsys, typed, says):
    """'1e400' was refused as "inf is not a finite number" (not what was typed)."""
    line = _one_line_refusal(capsys, [*GOAL, "--budget", "50000", "--deadline", typed])
    assert f"argument --deadline: {says}" in line, line


def test_a_whole_number_flag_past_its_bound_in_exponent_form_says_the_bound(capsys):
    """`plan --global-batch 1e40` said "write it in digits: 10000000000000000303786028427003666890752"
    (41 digits, still refused); a whole exponent outside the bound says the bound, one inside
    still says the digits to write."""
    line = _one_line_refusal(
        capsys, ["plan", "--workload", "llama3-8b", "--devices", "64", "--global-batch", "1e40"]
    )
    assert "argument --global-batch: 1e40 is outside 1 <= x <= 1,099,511,627,776 samples" in line
    line = _one_line_refusal(capsys, ["predict", "--devices", "1e3"])
    assert "'1e3' is not a whole number; write it in digits: 1000" in line


def _ends(line: str) -> set[int]:
    import re

    return {m.end() for m in re.finditer(r"\S+", line)}


def test_predicts_main_table_keeps_its_header_over_a_step_of_twenty_minutes(capsys):
    """The step of the one-micro-batch pipeline, 1,239,919 ms, took 10 characters of a
    9-character column and pushed every value after it right of its header; each column is now
    as wide as its widest cell (tables of ordinary runs are unchanged: their cells fit). DDP
    all-reduces fp32 gradients since session 45: the first stage's (8 W + V h) / 8 parameters x
    4 B over dp 8 at 48 GB/s, charged 43.72 ms more than at 2 B (1,239,875.14 ms before).
    Session 46: DDP under autocast sweeps 28 B a parameter in its optimizer step, not 30: the
    compute 69,766.96 -> 69,764.90 ms, the step 1,239,918.86 -> 1,239,916.71 ms. Session 47:
    DDP at tp 8 x pp 16 is Megatron-Core's, 34 B a parameter, not 28: the first stage's
    (8 W + V h) / 8 = 3.43e9 parameters x 6 B / 3,350 GB/s = 6.1 ms more, the compute
    69,771.08 ms, the step 1,239,923.16 ms. Session 47, later: Megatron-Core's default
    gradient-norm clip (norm 4 + scale 4 + 4 B of its fp32 main grads, 46 B a parameter, not 34):
    twice the 6 B's 6.18 ms, 12.36 ms more compute, 69,783.44 ms; the step 1,239,936.05 ms.
    Session 50: the fill and drain pass the 15 stages but the slowest, not 15 average ones
    (docs/model.md §15): the slowest stage's excess over the average, 1,132.86 ms, is no
    longer charged a 16th time; the step 1,238,803.19 ms."""
    code, out, _ = run_cli(capsys, [*SPLIT[:-1], "--global-batch", "2048"])
    assert code == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("devices nodes"))
    header, row = lines[at], lines[at + 1]
    assert len(header) == len(row) and _ends(row) <= _ends(header), (header, row)
    assert " 1238803.19 " in row and "    step ms " in header


def test_predicts_table_of_an_ordinary_run_is_as_before(capsys):
    """The widths of a run whose cells fit: the columns of sessions before (pinned here). Memory
    9.1 -> 9.8 GiB (session 48): bert-large's fp16 DDP buckets, 336e6 x 2 B = 0.63 GiB more.
    Session 56: those buckets' copies in and out, 336e6 x 4 x 2 B / 1,555 GB/s = 1.73 ms, join
    the compute of 8 devices (61.65 -> 63.37 ms, step 63.74 -> 65.47): 8 x 32 / 65.47 ms = 3,910
    sequences/s, 7.53x of one device's 519.1 (no DDP there, so no copies), 94.2%."""
    code, out, _ = run_cli(capsys, ["predict", "--devices", "8,16"])
    assert code == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("devices nodes"))
    assert lines[at] == (
        "devices nodes  batch   step ms   compute  exp.comm   straggl   "
        "sequences/s  speedup    eff  mem GiB fits"
    )
    assert lines[at + 1] == (
        "      8     1     32     65.47     63.37      1.06      1.04     "
        "    3,910     7.53  94.2%      9.8  yes"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--devices", "0x8"], "'0x8' is not a whole number; write 0x8 (hexadecimal) in decimal digits: 8"),
        (["--devices", "2x8"], "'2x8' is not a whole number; write the product 2x8 in digits: 16"),
        (
            ["--devices", "0x0"],
            "'0x0' is not a whole number; as a number 0 is outside 1 <= x <= 1,048,576 devices",
        ),
        (
            ["--devices", "8", "--train-samples", ""],
            "argument --train-samples: '' is not a number; give a number or leave the flag out",
        ),
        (["--devices", "8", "--inter-latency", "5us"], "'5us' is not a number; write 5us in seconds: 5e-6"),
        (["--devices", "8", "--intra-latency", "2ms"], "write 2ms in seconds: 0.002"),
    ],
)
def test_a_number_typed_another_way_is_refused_with_the_number_to_write(capsys, argv, says):
    """`--devices 0x8` was "'0x8' is not a whole number", `--train-samples ''` "'' is not a
    number" and `--inter-latency 5us` "give the number alone, in s": no number to write. The
    refusal now says it (or, for a number outside the bounds, the bounds)."""
    line = _one_line_refusal(capsys, ["predict", *argv])
    assert says in line, line


@pytest.mark.parametrize("body", ["null", '"runs"', "5"])
def test_a_runs_json_file_of_one_value_says_what_a_runs_file_holds(tmp_path, capsys, body):
    """`diagnose runs.json` holding `null` was read as a CSV header: "missing column(s) devices,
    nodes, samples_per_s or step_time_s; the header has null"."""
    path = tmp_path / "runs.json"
    path.write_text(body + "\n")
    line = _one_line_refusal(capsys, ["diagnose", str(path)])
    assert line == (
        f"scalesim diagnose: error: {path}: expected a JSON list of run objects (or "
        '{"runs": [...]}) with devices, nodes and samples_per_s or step_time_s'
    )
    csv_named_json = tmp_path / "csv.json"  # a CSV named .json stays CSV
    csv_named_json.write_text("devices,nodes,samples_per_s\n1,1,100\n8,1,700\n")
    code, _, err = run_cli(capsys, ["diagnose", str(csv_named_json)])
    assert code == 0, err


@pytest.mark.parametrize(
    ("body", "said"), [("{}", 'no "format" field'), ('{"format": null}', "format is null")]
)
def test_validate_of_a_file_without_a_format_says_so_in_json_words(tmp_path, capsys, body, said):
    """`validate {}` said "format is None" (Python's word for a field the file does not have)."""
    path = tmp_path / "cases.json"
    path.write_text(body)
    line = _one_line_refusal(capsys, ["validate", str(path)])
    assert line.startswith(
        f"scalesim validate: error: {path}: {said}; validate reads "
        "'scalesim-validation-cases/1' (data-parallel runs"
    ), line
    assert line.endswith('set the file\'s "format"')
