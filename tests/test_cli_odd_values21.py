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

    from app.state import AppState

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
