"""``figures.duration_text`` of absurd durations: a billion years or more is written with an
exponent, not as a count of up to 300 digits (1e308 s had read as a 300-digit number of years;
session 54's trace refusal had to avoid calling it past 1e16 us)."""

from __future__ import annotations

import pytest

from scalesim.figures import DAYS_PER_YEAR, duration_text

YEAR_S = DAYS_PER_YEAR * 86400.0


@pytest.mark.parametrize(("seconds", "text"), [
    (7_890_091 * YEAR_S, "7,890,091 years"),  # whole years below a billion, as before
    (999_000_000 * YEAR_S, "999,000,000 years"),
    (1e9 * YEAR_S, "1e9 years"),
    (3.2e12 * YEAR_S, "3.2e12 years"),
    (1e308, "3.2e300 years"),
])
def test_years_past_a_billion_take_an_exponent(seconds, text):
    assert duration_text(seconds) == text
