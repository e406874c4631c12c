"""Session 50: where several one-value layout settings are ignored on every row written because
the same combinations they apply to were dropped (``SweepResult.unapplied``), the drop's rule is
said once, on the first note; the others say how many and '(as above)'
(``cmd_sweep.ignored_notes``). Before, each of the three notes of '--pp-values 1,2 --schedule
interleaved --virtual-stages 2 --p2p-overlap off' repeated the whole rule of the dropped pp 2
row, which the dropped-row note had said already: four times in all."""

from __future__ import annotations

from cli_harness import run_cli

from scalesim.cli.cmd_sweep import ignored_notes
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import plan_sweep

SWEEP = ["sweep", "--workload", "llama3-8b", "--format", "json", "--devices", "16",
         "--pp-values", "1,2", "--schedule", "interleaved", "--virtual-stages", "2",
         "--p2p-overlap", "off"]
DROPPED = "; the 1 combination it applies to was dropped"
RULE = "1 micro-batch per step is not a multiple of --pp-values 2 (Megatron's rule)"


def test_the_drop_is_said_in_full_once_then_as_above(capsys):
    code, _, err = run_cli(capsys, SWEEP)
    assert code == 0, err
    notes = [line for line in err.splitlines() if " ignored on every row " in line]
    assert [n.split(" ignored on ")[0] for n in notes] == [
        "note: --schedule interleaved", "note: --virtual-stages 2", "note: --p2p-overlap off"]
    assert notes[0].endswith(f"{DROPPED} (tp 1 x pp 2 on 16 devices: --schedule interleaved: "
                             f"{RULE}; use --accumulation 2 (a multiple of 2), or another "
                             "--schedule)"), notes[0]
    for note in notes[1:]:
        assert note.endswith(f" says what each row runs{DROPPED} (as above)"), note
    # the rule twice in all: the dropped-row note's example and the first ignored note (was 4)
    assert err.count(RULE) == 2, err


def _plan():
    profile = resolve_profile(workload="llama3-8b")
    base = Scenario(devices=[16], layout=ScenarioLayout(schedule="interleaved", virtual_stages=2))
    return plan_sweep(profile, base, {"devices": [16], "pp": [1, 2]})


def test_a_different_drop_is_said_in_full():
    """Two settings whose dropped combinations differ (a count or a rule): each note says its
    own in full; the same drop again: '(as above)'."""
    plan = _plan()
    ignored = {"schedule": (1, "tp 1 x pp 1 on 16 devices"),
               "virtual_stages": (1, "tp 1 x pp 1 on 16 devices")}
    first, other = (1, "rule A"), (2, "rule B")
    notes = ignored_notes(plan, ignored, 1, {"schedule": first, "virtual_stages": other})
    assert notes[0].endswith(f"{DROPPED} (rule A)") and notes[1].endswith(
        "; all 2 combinations it applies to were dropped (e.g. rule B)"), notes
    notes = ignored_notes(plan, ignored, 1, {"schedule": first, "virtual_stages": first})
    assert notes[0].endswith(f"{DROPPED} (rule A)") and notes[1].endswith(
        f"{DROPPED} (as above)"), notes
