"""One reader of US-dollar amounts (scalesim.money) for every money flag, and the odd amounts
and counts a user types (session 20, branch money20)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.bounds import QUANTITIES, bound
from scalesim.cli.main import _command_parsers, build_parser
from scalesim.errors import ScalesimError
from scalesim.money import is_usd, parse_usd

PREDICT = ["predict", "--devices", "8", "--train-samples", "1e7"]
GOAL = ["goal", "--train-samples", "2e9", "--deadline", "3d", "--max-devices", "16"]
PRICE = "price_per_device_hour"
USD_QUANTITIES = {q for q in QUANTITIES if is_usd(q)}  # the bounds table's amounts of USD


def _one_line_refusal(capsys, argv) -> str:
    code, out, err = run_cli(capsys, argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, (argv, err)
    return lines[0]


def test_every_money_flag_is_read_by_the_one_reader():
    """`goal --budget '$50,000'` was read (cmd_goal's own ``usd``) and `predict --price '$40'`
    refused: two readers. Every flag of an amount of US dollars (a quantity in USD of the
    bounds table) is typed by ``money.usd_type`` now, in every command that has one."""
    assert {"price_per_device_hour", "budget_usd"} == USD_QUANTITIES
    found = {}
    for command, parser in _command_parsers(build_parser()).items():
        for action in parser._actions:
            name = getattr(action.type, "__name__", "")
            qualname = getattr(action.type, "__qualname__", "")
            if action.dest in ("price", "budget") or (name in USD_QUANTITIES):
                found[(command, action.option_strings[0])] = qualname.split(".")[0]
    assert found == {("predict", "--price"): "usd_type", ("sweep", "--price"): "usd_type",
                     ("decide", "--price"): "usd_type", ("goal", "--price"): "usd_type",
                     ("goal", "--budget"): "usd_type"}


@pytest.mark.parametrize(("typed", "value"), [
    ("40", 40.0), ("40.5", 40.5), ("1e5", 1e5), ("$40", 40.0), ("$ 40", 40.0),
    ("$50,000", 50_000.0), ("$1,234.56", 1234.56), ("1,000", 1000.0), ("US$40", 40.0),
    ("USD 40", 40.0), ("40 USD", 40.0), ("40usd", 40.0), ("  $4.10 ", 4.1), ("+5", 5.0),
    (".5", 0.5), ("0", 0.0), ("-0", 0.0),
])
def test_an_amount_is_read_as_a_price_page_writes_it(typed, value):
    assert parse_usd(typed, PRICE, "x") == value
    assert str(parse_usd("-$0", PRICE, "x")) == "0.0"  # no '$-0' in a cost line


def test_an_amount_with_an_underscore_is_refused_as_every_number_is():
    """'1_000' was read as Python reads it (1000.0) until session 50 refused an underscore in
    every number of a flag or a link (``bounds.read_number``): no price page writes one."""
    with pytest.raises(ScalesimError, match="'1_000' is not a number; write it in digits: 1000"):
        parse_usd("1_000", PRICE, "x")


def test_a_decorated_price_or_budget_gives_the_plain_numbers_answer(capsys):
    """The commands give the same output for '$4.10' as for 4.1, and for '$50,000' as for
    50000."""
    runs = {}
    for price in ("4.1", "$4.10", "USD 4.1"):
        code, out, _ = run_cli(capsys, [*PREDICT, "--price", price, "--json"])
        assert code == 0
        runs[price] = json.loads(out)
    assert runs["4.1"][0]["cost_usd"] > 0 and runs["4.1"] == runs["$4.10"] == runs["USD 4.1"]
    answers = {}
    for budget in ("50000", "$50,000", "50,000 USD"):
        code, out, _ = run_cli(capsys, [*GOAL, "--budget", budget, "--json"])
        assert code == 0
        answers[budget] = json.loads(out)
    assert answers["50000"]["budget_usd"] == 50_000.0
    assert answers["50000"] == answers["$50,000"] == answers["50,000 USD"]


# (argv, the one line's words): each amount refused with what is wrong and how to write it
REFUSALS = [
    # another currency: was "'€40' is not a number" (no fix) / "is not an amount of US dollars"
    ([*PREDICT, "--price", "€40"], "argument --price: '€40' is not in US dollars: amounts are USD "
                                   "only; convert it to US dollars and give the number, like 40"),
    ([*PREDICT, "--price", "EUR 40"], "'EUR 40' is not in US dollars"),
    ([*GOAL, "--budget", "£50,000"], "'£50,000' is not in US dollars"),
    (["decide", "--price", "C$40"], "'C$40' is not in US dollars"),
    # a rate: --price is per device-hour already
    ([*PREDICT, "--price", "40/h"], "'40/h' is a rate, and this is already US dollars per "
                                    "device-hour: give the number alone: 40 (a server's or "
                                    "instance's price per hour divided by its devices)"),
    (["sweep", "--price", "$98.32/hr"], "give the number alone: 98.32"),
    ([*PREDICT, "--price", "$900 a month"], "'$900 a month' is a rate, and this is US dollars "
                                            "per device-hour: convert it to the price of one "
                                            "device for one hour"),
    ([*GOAL, "--budget", "$40/h"], "'$40/h' is a rate; this is a total amount of US dollars: "
                                   "give the whole run's, like 50000"),
    # commas that do not group thousands: goal read '1,00' as 100 and '5,0.0,0' as 50
    ([*GOAL, "--budget", "1,00"], "'1,00': commas group thousands in threes here, as in $50,000; "
                                  "for a decimal comma write a point (1.00), else write it "
                                  "without commas"),
    ([*GOAL, "--budget", "5,0.0,0"], "commas group thousands in threes"),
    ([*PREDICT, "--price", "40,5"], "for a decimal comma write a point (40.5)"),
    # a multiplier: written as an exponent, as every number flag asks
    ([*GOAL, "--budget", "50k"], "'50k' is not an amount of US dollars; write 50k as 50e3, in USD"),
    ([*GOAL, "--budget", "$1M"], "'$1M' is not an amount of US dollars; write $1M as 1e6, in USD"),
    # not a number at all; goal read '$$5' as 5
    ([*PREDICT, "--price", ""], "'' is not an amount of US dollars; write one like 40, 40.5, "
                                "$50,000 or 1e5"),
    ([*GOAL, "--budget", "$$5"], "'$$5' is not an amount of US dollars"),
    ([*PREDICT, "--price", "40$"], "'40$' is not an amount of US dollars"),
    # the bounds: as typed, sign before or after the dollar sign (argparse took '-$5' for a
    # flag: 'expected one argument')
    ([*PREDICT, "--price", "-1"], "-1 is outside x = 0 or 0.0001 <= x <= 1,000,000 USD (per device-hour"),
    ([*PREDICT, "--price", "-$5"], "-$5 is outside x = 0 or 0.0001 <= x <= 1,000,000 USD (per device-hour"),
    ([*GOAL, "--budget", "$-5"], "$-5 is outside 0.01 <= x <= 1,000,000,000,000 USD"),
    ([*GOAL, "--budget", "0"], "0 is outside 0.01 <= x <= 1,000,000,000,000 USD"),
    ([*PREDICT, "--price", "$2,000,000"], "$2,000,000 is outside x = 0 or 0.0001 <= x <= 1,000,000 USD"),
    ([*PREDICT, "--price", "1e400"], "'1e400' overflows a float; it is outside x = 0 or "
                                     "0.0001 <= x <= 1,000,000 USD"),
    ([*PREDICT, "--price", "nan"], "argument --price: nan is not a finite number"),
    ([*GOAL, "--budget", "$inf"], "argument --budget: inf is not a finite number"),
]


@pytest.mark.parametrize(("argv", "says"), REFUSALS)
def test_a_wrong_amount_is_one_line_saying_what_and_how_to_fix_it(capsys, argv, says):
    assert says in _one_line_refusal(capsys, argv)


def test_the_reader_refuses_what_it_cannot_read_exactly():
    """No amount is read as another: '1,00' is neither 100 nor 1; a second sign, a second
    dollar sign or a hexadecimal number is refused (ScalesimError naming the flag)."""
    for typed in ("1,00", "1,000,00", "$$5", "-$-5", "0x10", "1__0", "$", "-", "dollars"):
        with pytest.raises(ScalesimError, match=r"^--budget: "):
            parse_usd(typed, "budget_usd", "--budget")
    assert bound(PRICE).problem(parse_usd("1e6", PRICE, "x")) is None


def test_plan_says_it_has_no_price_instead_of_a_near_flags_name(capsys):
    """`plan ... --price 4` said 'did you mean --profile?'; plan ranks by throughput or billed
    device-hours, which no price reorders, and says so."""
    line = _one_line_refusal(capsys, ["plan", "--workload", "llama3-8b", "--devices", "64",
                                      "--global-batch", "512", "--price", "$4"])
    assert "unrecognized arguments: --price $4; plan has no --price: it ranks layouts by " in line
    assert "predict, decide and goal price a run in US dollars" in line
    assert "did you mean" not in line


@pytest.mark.parametrize(("price", "shown"), [("1e6", "$1,000,000"), ("4.123456789", "$4.123456789"),
                                              ("$0.1", "$0.1")])
def test_predicts_cost_line_writes_the_price_as_given(capsys, price, shown):
    """`--price 1e6` was echoed as '$1e+06' and `--price 4.123456789` as '$4.12346' (``:g``)."""
    code, out, _ = run_cli(capsys, [*PREDICT, "--price", price])
    (line,) = [x for x in out.splitlines() if x.startswith("cost: ")]
    assert code == 0 and line.startswith(f"cost: billed devices x hours x {shown} per device-hour")


def test_the_app_reports_a_sub_cent_price_not_zero():
    """The app's report wrote a price of $0.001 per device-hour as '$0.00' (``:,.2f``)."""
    from scalesim.app.plan import make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"price": 0.001, "train": 1e9})
    lines = dict(scenario_lines(make_plan(preset_profile(state), state)))
    assert lines["price per device-hour"] == "$0.001 (given)"


def test_epochs_times_a_dataset_past_the_bound_names_the_flags(capsys):
    """`--epochs 3 --dataset-size 1e18` said "scenario: field 'train_samples': 3e18 given", a
    field the user never typed."""
    line = _one_line_refusal(capsys, ["predict", "--devices", "8", "--epochs", "3",
                                      "--dataset-size", "1e18"])
    assert line == ("scalesim predict: error: --epochs x --dataset-size (the run's samples): 3e18 "
                    "is outside 1 <= x <= 1e18 samples (samples of a training run (1e18: 10^4x "
                    "the largest LLM runs in tokens))")
