"""Session 49 (follow-up): the planner's notes beside the 'left out' ones name the page's
controls, not the CLI's notation: scenario B's refusal ('dp 3'), said through its template
(``errors.in_words_of``) as the scenario-A notes are."""

from __future__ import annotations

from app_harness import open_app

# every-server grid up to 64 with ZeRO-3 and shard group 16 (``test_shard_group_counts``): the
# focus runs at 48 devices; scenario B, the planner's split (tp 4 x pp 4 = 16 devices a
# replica, ZeRO-2, shard group 2), has dp = 48 / 16 = 3 there, which 2 does not divide
# (``layout.shard_group_problem``: its fix, dp 3 itself, full sharding)
QUERY = {"v": "9", "wl": "llama3-8b", "strat": "zero3", "sg": "16", "dmax": "64",
         "grid": "server"}
B_WORDS = ("Shard group (HSDP) 2 does not divide the 3 data-parallel ranks; give a divisor of it "
           "(e.g. 3: full sharding) (at 48 devices)")


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
