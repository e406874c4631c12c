"""Session 49 (follow-up): the planner's notes beside the 'left out' ones name the page's
controls, not the CLI's notation: scenario B's refusal ('dp 3'), said through its template
(``errors.in_words_of``) as the scenario-A notes are."""

from __future__ import annotations

import pytest
from app_harness import open_app, preset_query

# every-server grid up to 64 with ZeRO-3 and shard group 16 (``test_shard_group_counts``): the
# focus runs at 48 devices; scenario B, the planner's split (tp 4 x pp 4 = 16 devices a
# replica, ZeRO-2, shard group 2), has dp = 48 / 16 = 3 there, which 2 does not divide
# (``layout.shard_group_problem``: its fix, dp 3 itself, full sharding)
QUERY = {"v": "9", "wl": "llama3-8b", "strat": "zero3", "sg": "16", "dmax": "64",
         "grid": "server"}
B_WORDS = ("at 48 devices, Shard group (HSDP) 2 does not divide the 3 data-parallel ranks; give "
           "a divisor of it (e.g. 3: full sharding)")


def test_scenario_bs_note_names_the_pages_controls():
    """Before session 49 (follow-up): 'scenario B: shard group 2 does not divide dp 3; give a
    divisor of it (e.g. 3: full sharding) (at 48 devices)', notation no control shows."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query(QUERY)
    b_notes = [n for n in make_plan(profile, state).notes if n.startswith("scenario B: ")]
    assert b_notes == [f"scenario B: {B_WORDS}"], b_notes
    infos = [i.value.replace("\\", "") for i in open_app(QUERY).info]
    (shown,) = [i for i in infos if "cenario B: " in i]
    assert B_WORDS in shown, shown
    for notation in ("dp ", "shard group"):
        assert notation not in shown, shown


def test_the_pages_notes_end_as_its_other_notes_do():
    """Each of the plan's notes is shown as a sentence, as the decision card's and goal's
    notes are (a capital, a full stop): the 'left out' note of Shard group (HSDP) 16 at 24 and
    40 devices (``test_app_layout_words49``), 'left out 12: ...' of a list, and scenario B's.
    Before session 49 (follow-up): 'left out 12: above 8 devices ... (a multiple of 8)' and
    '... or give counts whose data-parallel ranks it divides', no full stop; the report's
    notes (``report_html``) alike."""
    from scalesim.app.plan import as_sentence, make_plan
    from scalesim.app.report import report_html
    from scalesim.app.state import decode_query

    fields = {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "sg": 16, "grid": "list",
              "dlist": "12,16,24,40"}
    at = open_app(preset_query(**fields))
    infos = [i.value.replace("\\", "") for i in at.info]
    assert ("Left out 12: above 8 devices a count must fill whole servers (a multiple of 8)."
            in infos), infos
    assert any(i.startswith("Shard group (HSDP) 16 does not divide the 24 or 40 data-parallel "
                            "ranks: ") and i.endswith(" it divides.") for i in infos), infos
    assert all(i[0].isupper() and i.endswith(".") for i in infos), infos
    state, profile, _ = decode_query(QUERY)
    plan = make_plan(profile, state)
    html = report_html(plan, "https://example.invalid/?v=9")
    assert f"<li>Scenario B: {B_WORDS}.</li>" in html
    assert as_sentence("a note ending in e.g.") == "A note ending in e.g."  # no second stop


@pytest.mark.parametrize("fields, said, cli", [
    # Shard group (HSDP) 16 on 16 devices: one more server is 24, dp 24, which 16 does not
    # divide (``layout.shard_group_problem``); the next, 32, runs it: 2 servers more
    ({"strat": "zero3", "sg": 16, "grid": "list", "dlist": "16"},
     "(at 24 devices, Shard group (HSDP) 16 does not divide the 24 data-parallel ranks; give a "
     "divisor of it (e.g. 24: full sharding)): it takes 2 servers more",  # its count once
     "(at 24 devices, shard group 16 does not divide dp 24; give a divisor of it (e.g. 24: "
     "full sharding)): it takes 2 servers more"),
    # tp 8 x pp 3 = 24 on 24 devices: one more server is 32, no multiple of 24; 48 is, 3 more
    ({"tp": 8, "pp": 3, "grid": "list", "dlist": "24"},
     "(32 devices are not a multiple of today's Tensor parallel 8 x Pipeline stages 3 = 24): it "
     "takes 3 servers more",
     "(32 devices are not a multiple of today's tp x pp = 24): it takes 3 servers more"),
], ids=["shard group", "split"])
def test_the_cards_one_more_server_note_names_the_pages_controls(fields, said, cli):
    """The decision card's 'one more server does not take today's layout' note (the caption
    under the card) names the page's controls. Before session 49 (follow-up) its reason was put
    in an f-string and lost its template: '(at 24 devices, shard group 16 does not divide dp
    24; ...)', '(... not a multiple of today's tp x pp = 24)'. decide's CLI keeps its line."""
    from scalesim.app.plan import card_notes, make_plan
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query(preset_query(hw="dgx-h100", wl="llama3-8b", **fields))
    plan = make_plan(profile, state)
    assert "one more server does not take today's layout " + said in card_notes(plan)
    assert "one more server does not take today's layout " + cli in plan.decision.notes
