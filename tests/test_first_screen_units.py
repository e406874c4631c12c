"""Session 21: the first screen a manager reads (headline, decision card, its recommendation,
notes and boxes) on the default profile and on links of a model-parallel workload: every number
has its unit, and nothing says 'nan', 'inf', 'None' or '$-0'. The one bare number found was the
knee line of a curve with one device count ('a knee lies between two device counts, and there
is 1'); it now says 'there is only one'."""

from __future__ import annotations

import re

import pytest
from app_harness import open_app

SPLIT = {"v": "9", "hw": "dgx-h100", "wl": "llama3-70b"}
LINKS = {
    "the default profile": {},
    "the default, priced": {"v": "2", "train": "1000000000", "price": "4"},
    "the default at $0 an hour": {"v": "2", "train": "1000000000", "price": "0"},
    "llama3-70b tp 8 x pp 2 (does not fit at 16)": {**SPLIT, "tp": "8", "pp": "2"},
    "the same, priced": {**SPLIT, "tp": "8", "pp": "2", "train": "1e6", "price": "3"},
    "llama3-405b, nothing fits": {
        **SPLIT,
        "wl": "llama3-405b",
        "tp": "8",
        "pp": "2",
        "train": "1e6",
        "price": "3",
    },
    "llama3-8b tp 4, sequence parallel": {
        **SPLIT,
        "wl": "llama3-8b",
        "tp": "4",
        "sp": "true",
        "price": "2.5",
        "train": "1e7",
    },
    "a run of one second": {**SPLIT, "wl": "llama3-8b", "tp": "4", "price": "3", "train": "1"},
}
# a negative zero of money ('$-0', '-$0', '-$0.00'), not a small negative delta ('-$0.00034')
NOT_A_NUMBER = re.compile(
    r"\bnan\b|\bNaN\b|\binf\b|\bInfinity\b|\bNone\b|(?:\$-|-\$)0(?:\.0+)?(?![.\d])"
)
BARE = re.compile(r"[-+]?[\d,.]+")  # a cell or value that is a number and nothing else


def _first_screen(at) -> list[str]:
    texts = [f"{m.label}: {m.value} {m.delta or ''}" for m in at.metric]
    for kind in ("subheader", "success", "error", "warning", "caption", "markdown"):
        texts += [e.value for e in getattr(at, kind)]
    return texts


@pytest.mark.parametrize("name", list(LINKS))
def test_every_number_on_the_first_screen_has_a_unit(name):
    at = open_app(LINKS[name])
    texts = _first_screen(at)
    assert not [t for t in texts if NOT_A_NUMBER.search(t)]
    card = at.table[0].value  # the decision card
    cells = [str(c) for c in card.to_numpy().ravel()]
    assert not [c for c in cells if NOT_A_NUMBER.search(c) or BARE.fullmatch(c)], cells
    for m in at.metric:  # a bare number only under a label that names its unit
        assert not BARE.fullmatch(m.value) or m.label.endswith("/s)"), (m.label, m.value)
    knee = next(t for t in texts if t.startswith("**Knee:**"))
    assert not re.search(r"there is \d", knee), knee  # was 'and there is 1'


def test_one_device_count_says_there_is_only_one():
    at = open_app({**SPLIT, "tp": "8", "pp": "2"})  # 16 = tp x pp: the only count up to 16
    knee = next(t for t in _first_screen(at) if t.startswith("**Knee:**"))
    assert knee.startswith("**Knee:** none: a knee lies between two device counts, and there is only one  \n")
