"""Session 50, continued: a remedy's reason that says one data-parallel replica ('one
data-parallel replica (dp 1) exchanges no gradients', ``remedies.ONE_REPLICA``'s '... (dp 1):
ZeRO has no other rank ...') is a ``layout_change.LayoutTitle`` (``one_replica_said``), so the
Remedies tab's note column says it without the CLI's gloss '(dp 1)', which the sentence says
already; the CLI's reasons keep it. The text is never read."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.remedies import rank_remedies

# gpt-7.5b on one server of 8 A100s at Tensor parallel 8: one data-parallel replica (8 / 8),
# the gradient exchange's overlap off
ONE_REPLICA_FIELDS = {"wl": "gpt-7.5b", "hw": "dgx-a100", "dmax": 8, "focus": 8, "tp": 8,
                      "ovl": False}


def _plan():
    state = default_state().model_copy(update=ONE_REPLICA_FIELDS)
    return make_plan(preset_profile(state), state)


def _reasons(ranked) -> dict[str, str]:
    return {r.key: r.reason for r in ranked}


def test_the_cli_glosses_one_replica_dp_1():
    plan = _plan()
    reasons = _reasons(rank_remedies(plan.profile, plan.scenario, 8)[1])
    assert reasons["overlap"] == "one data-parallel replica (dp 1) exchanges no gradients"
    assert reasons["sharding"] == ("one data-parallel replica (dp 1): ZeRO has no other rank to "
                                   "shard the states over")


def test_the_remedies_tab_says_one_replica_without_the_gloss():
    plan = _plan()
    at = open_app({**encode_query(plan.state, plan.profile), "tab": "remedies"})
    table = next(d.value for d in at.dataframe if "remedy" in d.value.columns)
    notes = list(table["note"])
    assert "one data-parallel replica exchanges no gradients" in notes, notes
    assert ("one data-parallel replica: ZeRO has no other rank to shard the states over"
            in notes), notes
    assert not any("(dp 1)" in n for n in notes), notes
