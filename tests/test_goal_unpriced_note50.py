"""Session 50: goal's note on a faster network with no public price said "left out of the plans
above and its money below is the devices' alone", but the CLI prints its notes under both
tables and the app shows no networks table, its front's table under the note. The note now
says what leaves the network out and whose money its plans carry, with no place on the page."""

from __future__ import annotations

from app_harness import open_app, preset_query
from cli_harness import whole_lines

from scalesim.cli.main import main

HDR = "8 x 200 Gb/s HDR InfiniBand (as in a DGX A100)"
NOTE = (f"{HDR}: no public price, so the answer and the time-against-money front leave it out, "
        "and the money said for its plans is the devices' alone")
GOAL = ["goal", "--train-samples", "2e9", "--critical-batch", "4096", "--deadline", "3d",
        "--budget", "50000"]


def test_the_cli_notes_an_unpriced_network_in_words_that_need_no_place(capsys):
    assert main(GOAL) == 0
    out = whole_lines(capsys.readouterr().out)
    assert f"note: {NOTE}" in out.splitlines()
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert not any(word in n for n in notes for word in ("above", "below"))
    # what the note says, the answer and the tables show: no InfiniBand plan on the front,
    # the network's row priced with no network in its money
    front = out.split("time against money")[1].split("faster networks")[0]
    assert "InfiniBand" not in front
    assert f"{HDR} (8 x 200 Gb/s" in out and "no public price: USD is the devices' alone" in out


def test_the_app_goal_tab_says_the_same_note_as_a_sentence():
    at = open_app(preset_query(tab="goal", dl=72.0, bud=50000.0, train=2e9))
    (notes,) = [c.value for c in at.caption if "time-against-money" in c.value]
    assert NOTE[0].upper() + NOTE[1:] + "." in notes
