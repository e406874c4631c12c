"""Session 48: a link value of the wrong kind was refused in pydantic's words.

The session 48 odd-link audit (every link key x '', 'abc', -1, 0, 1e30, nan, inf, -inf, 1.5, a
20-digit number and its bounds, on two base links: 1,541 links) found 774 boxes quoting
"Input should be ...": 'dmax=abc' is not valid (Input should be a valid integer, unable to
parse string as an integer), 'bkt=nan' (Input should be a finite number), 'ovl=abc' (Input
should be a valid boolean, unable to interpret input), 'dmax=0' (Input should be greater than
or equal to 1, no upper bound). A link value is now refused in the bounds table's words, as the
CLI refuses the same text ('not a whole number', ``bounds.parse_number``): ``jsonio.error_text``
with the model, the one place pydantic's errors become a sentence."""

from __future__ import annotations

import pytest
from app_harness import open_app
from cli_harness import run_cli
from scalesim.app.state import FIELDS, LINK_VERSION, decode_query

ODD = ["", "abc", "-1", "0", "1e30", "nan", "inf", "-inf", "1.5", "99999999999999999999"]


@pytest.mark.parametrize("typed, says", [
    ("dmax=abc", "not a whole number"), ("dmax=1.5", "not a whole number"),
    ("bkt=abc", "not a number"), ("bkt=nan", "not a finite number"),
    ("ovl=abc", "not on or off: 1 or 0"),
    ("grid=x", "not one of 'pow2', 'server' or 'list'"),
    ("dmax=0", "allowed: 1 <= x <= 16,384"), ("slow=99999", "allowed: 0 <= x < 16,384"),
    ("ebw=1e6", "allowed: 0.001 <= x <= 100,000 GB/s (a link's bus bandwidth: 1 MB/s to 100 TB/s)"),
])
def test_a_link_value_is_refused_in_plain_words(typed, says):
    key, value = typed.split("=")
    (message, *_) = decode_query({"v": str(LINK_VERSION), key: value})[2]
    assert message == f"'{typed}' is not valid ({says}); using the default"


def test_no_odd_value_of_any_key_is_said_in_pydantics_words():
    said = [m for key in FIELDS for value in ODD
            for m in decode_query({"v": str(LINK_VERSION), key: value})[2]]
    assert len(said) > 300
    assert not [m for m in said if "Input should" in m or "unable to" in m]


def test_the_link_and_the_cli_say_a_count_the_same_way(capsys):
    (message, *_) = decode_query({"v": str(LINK_VERSION), "tp": "abc"})[2]
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--tp", "abc"])
    assert code == 2 and "'abc' is not a whole number" in err
    assert "(not a whole number)" in message


def test_the_page_says_it_in_its_link_box():
    at = open_app({"v": str(LINK_VERSION), "dmax": "abc", "ovl": "maybe"})
    (box,) = [w.value for w in at.warning if w.value.startswith("Share link")]
    assert "'dmax=abc' is not valid (not a whole number)" in box
    assert "'ovl=maybe' is not valid (not on or off: 1 or 0)" in box
    assert "Input should" not in box
