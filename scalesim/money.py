"""One reader of amounts of US dollars typed on the command line (--price, --budget).

A user pastes prices from a price page, so an amount may carry a dollar sign, ``USD`` and
thousands commas: ``40``, ``40.5``, ``1e5``, ``$40``, ``US$40``, ``USD 40``, ``40 USD``,
``40 dollars``, ``40 US dollars``, ``$50,000``, ``$1,234.56``, ``-$5`` (read, then refused by
its bounds). Refused, in one line that says how to write it: another currency (``€40``,
``EUR 40``, ``C$40``: amounts are USD only), a rate (``40/h``, ``$40 per hour``: ``--price``
is per device-hour already), commas that do not group thousands (``1,00``, ``40,5``: a
decimal comma), a multiplier (``50k``, ``$1M``: written as ``50e3``, ``1e6``, as every number
flag asks), NaN, infinities and overflows. The value's bounds are its quantity's in
``scalesim.bounds.QUANTITIES`` (``price_per_device_hour`` in USD per device-hour, ``budget_usd``
in USD); files and share links hold plain numbers and are not read here.
"""

from __future__ import annotations

import re
import unicodedata

from scalesim.bounds import Bound, bound, number_hint, parse_number
from scalesim.errors import ScalesimError, excerpt, flag_error

USD = "USD"  # the unit of every quantity read here (``is_usd``)

# '$', 'US$' or 'USD' before the number, 'USD', 'dollars' or 'US dollars' after it (any case)
_PREFIX = re.compile(r"(?:US\$|\$|USD(?![A-Za-z]))\s*", re.IGNORECASE)
_SUFFIX = re.compile(r"\s*(?:USD|(?:US\s*)?dollars?)", re.IGNORECASE)
# a number as Python's float reads it (an underscore only between digits), NaN and infinities
_NUMBER = re.compile(r"[+-]?(?:(?:\d(?:_?\d)*)(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)"
                     r"(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf(?:inity)?)", re.IGNORECASE)
# commas that group thousands: 50,000 and 1,234,567.89
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?")
# other currencies: a dollar of another country ('C$40'), or a common ISO code
_OTHER_DOLLAR = re.compile(r"(?:A|AU|C|CA|HK|MX|NT|NZ|R|S|SG)\$", re.IGNORECASE)
_OTHER_CODES = ("EUR", "GBP", "JPY", "CNY", "RMB", "INR", "CHF", "CAD", "AUD", "NZD", "HKD",
                "SGD", "KRW", "SEK", "NOK", "DKK", "PLN", "BRL", "MXN", "ZAR", "RUB", "TRY")
_OTHER_CODE = re.compile(rf"(?<![A-Za-z])(?:{'|'.join(_OTHER_CODES)})(?![A-Za-z])", re.IGNORECASE)
# a rate: '40/h', '$40/GPU-hour', '40 per hour', '40 an hour', '40 hourly', '40h'
_RATE = re.compile(r"/|\b(?:per|an|a|hourly)\b|(?<=[\d\s])(?:h|hr|hrs|hour|hours)\s*$",
                   re.IGNORECASE)
_HOURLY = re.compile(r"(?:^|[^A-Za-z])(?:h|hr|hrs|hour|hours|hourly)(?![A-Za-z])", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def is_usd(quantity: str) -> bool:
    """Whether ``quantity`` of the bounds table is an amount of US dollars (read by
    ``parse_usd``)."""
    return bound(quantity).unit == USD


def parse_usd(text: str, quantity: str, name: str) -> float:
    """``text`` as an amount of US dollars of ``quantity`` (its bounds); ScalesimError naming
    ``name`` and quoting ``text`` as typed, with how to write it, otherwise."""
    b = bound(quantity)
    typed = text.strip()
    sign, body = "", typed
    if body.startswith(("+", "-")):  # '-$5': a sign before the dollar sign
        sign, body = body[0], body[1:].lstrip()
    if prefix := _PREFIX.match(body):
        body = body[prefix.end():]
    if (suffix := _SUFFIX.search(body)) and suffix.end() == len(body):
        body = body[:suffix.start()]
    if _GROUPED.fullmatch(body):
        body = body.replace(",", "")
    number = sign + body  # '$-5' and '-$5' read alike ('-$-5' is no number)
    if _NUMBER.fullmatch(number):
        return float(parse_number(number, quantity, name, typed=typed))
    raise ScalesimError(f"{name}: {not_usd(typed, b)}")


def not_usd(typed: str, b: Bound) -> str:
    """Why ``typed`` is not an amount of US dollars of bounds ``b``, and how to write it."""
    shown = excerpt(repr(typed))
    found = _LEADING_NUMBER.search(typed)
    digits = found.group().replace(",", "") if found else ""
    if _OTHER_DOLLAR.search(typed) or _OTHER_CODE.search(typed) or any(
            unicodedata.category(c) == "Sc" and c != "$" for c in typed):
        return (f"{shown} is not in US dollars: amounts are USD only; convert it to US dollars "
                "and give the number, like 40 or $40")
    if _RATE.search(typed):
        if b.why.startswith("per "):  # a price: USD per device-hour already
            per = b.why.split(";")[0]  # 'per device-hour', not the reason for its bounds
            if not _HOURLY.search(typed):  # '$900 a month': not the hour's price
                return (f"{shown} is a rate, and this is US dollars {per}: convert it to "
                        "the price of one device for one hour and give the number alone")
            alone = f": {digits}" if digits else ""
            return (f"{shown} is a rate, and this is already US dollars {per}: give the number "
                    f"alone{alone} (a server's or instance's price per hour divided by its "
                    "devices)")
        return (f"{shown} is a rate; this is a total amount of US dollars: give the whole run's, "
                "like 50000")
    if "," in typed and digits:
        point = typed.replace(",", ".") if typed.count(",") == 1 else None
        decimal = f"for a decimal comma write a point ({point}), else " if point else ""
        return (f"{shown}: commas group thousands in threes here, as in $50,000; "
                f"{decimal}write it without commas")
    if typed and (hint := number_hint(typed, b)):  # '': the examples below, not 'give a number'
        return f"{shown} is not an amount of US dollars{hint}"
    return f"{shown} is not an amount of US dollars; write one like 40, 40.5, $50,000 or 1e5"


def usd_type(quantity: str):
    """argparse ``type=`` for an amount of US dollars of ``quantity`` (``parse_usd``; argparse
    names the flag in its error)."""
    def parse(text: str) -> float:
        with flag_error():
            return parse_usd(text, quantity, "value")
    parse.__name__ = quantity  # argparse says "invalid <name> value" for other errors
    return parse
