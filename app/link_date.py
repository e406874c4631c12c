"""The date a share link says it was made (``at=YYYY-MM-DD``): whether it is a day at all, not
later than today, and how the receiver's banner words it where the link's checksum does not
vouch for it (session 48: the checksum covers the date; older links wrote it outside)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

# the sender's page dates its link by its server's clock in UTC, as the receiver's reads it:
# a day ahead is a clock set a little fast (or a sender and a receiver on either side of
# midnight on two servers), not a date from the future
CLOCK_SLACK = timedelta(days=1)
# the banner's words for a date the link's checksum does not vouch for (``SharedDate.doubted``)
UNCHECKED_DATE = ("a date the link's checksum does not vouch for: an older scalesim's link, or "
                  "one edited on its way")

NOT_A_DATE = "is not a date (YYYY-MM-DD)"  # a date cut short, or no date at all
NO_BANNER = "the what-if opens without the shared banner"  # a date that is not the link's


class SharedDate(NamedTuple):
    """The date a share link says it was made and whether the link's checksum disowns it."""

    text: str  # YYYY-MM-DD, as the link gives it
    # the link has a checksum that does not vouch for the date (``state.link_integrity``): one
    # written before session 48 leaves it out, or the link's values do not match it. A link
    # with no checksum at all (typed by hand, or older: its own warning says so) is not doubted
    doubted: bool


def today_utc() -> date:
    """Today's date in UTC, the clock a share link is dated by (``planner_page``)."""
    return datetime.now(UTC).date()


def date_problem(text: str, today: date) -> str | None:
    """Why ``text`` is not the day a link was made, as the end of a sentence that starts with
    the link's date: ``NOT_A_DATE`` (the caller says the link may be cut), no day of the
    calendar, or later than ``today`` (UTC; a day of slack: ``CLOCK_SLACK``), each with its
    cause; None where it is such a day."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        return NOT_A_DATE
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return f"is no day of the calendar: it was edited on its way; {NO_BANNER}"
    if day > today + CLOCK_SLACK:
        return (f"is later than today ({today.isoformat()}, UTC): the sender's clock was wrong "
                f"or the date was edited; {NO_BANNER}")
    return None


def banner_date(shared: SharedDate) -> str:
    """The banner's words after 'Shared what-if': 'from 2026-12-02', or for a doubted date the
    date said to be the link's, with why it is not vouched for."""
    if shared.doubted:
        return f"said to be from {shared.text} ({UNCHECKED_DATE})"
    return f"from {shared.text}"
