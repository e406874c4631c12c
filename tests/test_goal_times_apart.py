"""Goal's closest plan and the deadline it misses are written apart where they round alike
(session 43): with a deadline of 0.6 days (14.4 h) the closest plan of 14.41 h read '14.4 h for
$50,506 (misses the deadline of 14.4 h)'. Both are now written at as many more decimals as tell
them apart (``figures.durations_apart``, ``figures.percents_apart``'s rule for durations)."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli

from scalesim.figures import duration_text, durations_apart

GOAL = ["goal", "--price", "3", "--budget", "1e9", "--layout", "given", "--json"]


@pytest.mark.parametrize("value_s, bound_s, shown", [
    (14.41 * 3600, 0.6 * 86400, ("14.41 h", "14.40 h")),
    (14.4004 * 3600, 14.4 * 3600, ("14.4004 h", "14.4000 h")),
    (3.02 * 86400, 3.0 * 86400, ("3.02 days", "3.00 days")),
    (15 * 3600, 14 * 3600, ("15.0 h", "14.0 h")),  # apart at one decimal: as duration_text
    (50 * 3600, 47 * 3600, ("2.1 days", "47.0 h")),  # other units: as duration_text
    (7200.0, 7200.0, ("2.0 h", "2.0 h")),  # the same duration
])
def test_two_durations_are_told_apart(value_s, bound_s, shown):
    assert durations_apart(value_s, bound_s) == shown


def _soonest_s(capsys, samples: float) -> float:
    code, out, err = run_cli(capsys, [*GOAL, "--train-samples", f"{samples:g}", "--deadline", "1h"])
    assert code == 0, err
    return min(p["time_s"] for p in json.loads(out)["front"])


def test_the_closest_plan_and_the_deadline_it_misses_read_apart(capsys):
    # the training length at which the soonest plan takes 14.41 h; a deadline of 0.6 days
    # (14.4 h) and a budget no plan reaches: the closest plan is that soonest one, 0.07 % late
    samples = 1e9 * 14.41 * 3600 / _soonest_s(capsys, 1e9)
    code, out, err = run_cli(capsys, [*GOAL, "--train-samples", f"{samples:.6g}",
                                      "--deadline", "0.6d"])
    assert code == 0, err
    answer = json.loads(out)
    closest, deadline = answer["closest"]["time_s"], answer["deadline_s"]
    assert answer["best"] is None and deadline < closest < deadline * 1.001
    assert duration_text(closest) == duration_text(deadline) == "14.4 h"  # the fault's cause
    said = re.search(r": ([\d.]+ h) for \$[\d,]+ \(misses the deadline of ([\d.]+ h)\)\.$",
                     answer["sentence"])
    assert said, answer["sentence"]
    assert said[1] != said[2] and float(said[1].split()[0]) > float(said[2].split()[0])
    assert said[2] == "14.40 h"
