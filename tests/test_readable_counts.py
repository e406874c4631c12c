"""Device counts in prose read with thousands separators, singular for one (``figures.count``,
``figures.count_change``), and a list a user types back writes floats as a person does
(``bounds.list_text``): session 18."""

from __future__ import annotations

from scalesim.bounds import list_text
from scalesim.decision import decide
from scalesim.figures import count, count_change, whole
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario


def test_a_count_has_thousands_separators_and_one_is_singular():
    assert count(1024, "device") == "1,024 devices"  # was '1024 devices'
    assert count(1, "device") == "1 device" and count(16, "device") == "16 devices"
    assert whole(65536) == "65,536"
    assert count_change(1024, 2048, "device") == "1,024 -> 2,048 devices"
    assert count_change(8, 1, "server") == "8 -> 1 server"


def test_decide_writes_a_large_device_count_with_separators():
    """decide's question and its add-a-server option said '1024 ... devices', '(1024 -> 1032
    devices)'."""
    card = decide(default_profile(), Scenario(devices=[1024]), 1024)
    device = default_profile().hardware.device_name
    assert card.question.startswith(f"1,024 {device} devices give ")
    titles = [o.title for o in card.options] + card.notes
    assert any(t.startswith("Add one server (1,024 -> 1,032 devices)") for t in titles)
    assert "1024" not in " ".join(titles) + card.question


def test_list_text_writes_floats_as_a_person_types_them():
    """`:g` wrote 1e+06 and rounded to six digits (0.123457): not what a user typed."""
    assert list_text([1e6, 0.25, 0.1234567, 2]) == "1000000,0.25,0.1234567,2"
    assert list_text([1, 2, 1024]) == "1,2,1024"  # a list flag's own commas: no separators
