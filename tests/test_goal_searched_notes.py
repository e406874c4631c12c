"""``scalesim goal`` says a flag is ignored only where it changes none of the plans it searches.

Goal seeking tries DDP and ZeRO-1/2/3 at 1, 2, 4 and 8 times the base accumulation
(``goal.searched_scenarios``) and refuses ``--strategy``; the notes it took from predict were
those of the base scenario, whose strategy is ddp, so ``--zero-framework deepspeed`` read
"ignored: strategy ddp shards nothing (give --strategy zero1, zero2 or zero3)" and
``--grad-sync once-per-step`` "ignored: strategy ddp reduces gradients once per step anyway",
while both changed its ZeRO plans (DeepSpeed's ZeRO-1 left the front; no_sync's ZeRO-2 joined
it) and the fix it named is refused. A note is now said where it holds for every strategy and
accumulation searched, as sweep keeps a note of its swept values."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli, whole_lines

COMMON = ["--train-samples", "1e8", "--deadline", "3d", "--budget", "1e6", "--max-devices", "64",
          "--json"]


def _goal(capsys, *flags):
    code, out, err = run_cli(capsys, ["goal", "--workload", "bert-large", *flags, *COMMON])
    assert code == 0, err
    return json.loads(out)


def _front(answer):
    return [(p["devices"], p["strategy"], p["micro_batch"], p["accumulation"], p["time_s"])
            for p in answer["front"]]


@pytest.mark.parametrize("flags", [("--zero-framework", "deepspeed"),
                                   ("--grad-sync", "once-per-step")])
def test_a_flag_that_changes_goal_s_zero_plans_is_not_said_ignored(capsys, flags):
    plain, given = _goal(capsys), _goal(capsys, *flags)
    assert _front(given) != _front(plain)  # the flag changes the plans goal searches
    assert not [n for n in given["notes"] if "ignored" in n or "--strategy" in n]


def test_a_flag_that_changes_no_plan_is_still_said_ignored(capsys):
    code, out, err = run_cli(capsys, ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--tp", "2", "--tp-overlap", "--no-overlap", *COMMON])
    assert code == 0, err
    assert any(n.startswith("--tp-overlap ignored: overlap is off")
               for n in json.loads(out)["notes"])


@pytest.mark.parametrize("command", [
    ["decide", "--devices", "1,2,4,8,16", "--focus", "16"],
    ["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "50000", "--max-devices", "64"],
])
def test_decide_and_goal_print_the_notes_said_before_their_own_one_way(capsys, command):
    """decide and goal print their answer through one ``cmd_predict.print_answer``: the notes
    ``notes_before`` says (here a slow device outside the counts) come first, the same in the
    JSON's ``notes`` and the text's 'note:' lines, and the answer's own notes follow."""
    flags = [*command, "--slow-device", "100", "--slow-factor", "1.5"]
    code, out, err = run_cli(capsys, [*flags, "--json"])
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert notes[0].startswith("device 100 is not among the ") and len(notes) >= 2
    code, text, err = run_cli(capsys, flags)
    assert code == 0, err
    text = whole_lines(text)  # decide's and goal's wrapped notes
    said = [line.removeprefix("note: ") for line in text.splitlines() if line.startswith("note: ")]
    assert said == notes
