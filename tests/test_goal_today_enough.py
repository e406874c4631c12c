"""Session 42: README's goal (`scalesim goal --train-samples 2e9 --critical-batch 4096 --deadline
3d --budget 50000`) said the least network needed was 3.5 GB/s ("today 6.8 GB/s") and then
recommended buying EFA, which read as a contradiction: where today's network meets the goal
too, the answer says so, and why the faster one is the cheaper plan."""

from __future__ import annotations

import re

from cli_harness import run_cli, whole_lines

GOAL = ["goal", "--train-samples", "2e9", "--critical-batch", "4096", "--deadline", "3d",
        "--budget", "50000"]


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def test_today_enough_is_said_beside_a_cheaper_faster_network(capsys):
    code, out, err = run_cli(capsys, GOAL)
    assert code == 0, err
    out = whole_lines(out)  # each sentence on one line again
    first = out.splitlines()[0]
    assert "network 4 x 100 Gb/s EFA" in first.split("Today's")[0]
    m = re.search(r"Today's network is enough: (\d+) devices .*?network as is: ([\d.]+ \w+) for "
                  r"\$([\d,]+); 4 x 100 Gb/s EFA \(AWS p4d.24xlarge\) meets the goal for "
                  r"\$([\d,]+) less because its faster exchanges let fewer device-hours do the "
                  r"training \((\d+) devices for", first)
    assert m, first
    best_usd = _usd(re.search(r"EFA \(AWS p4d.24xlarge\): [\d.]+ \w+ for \$([\d,]+)\.", first)[1])
    today_usd = _usd(m[3])
    assert today_usd > best_usd and abs(today_usd - best_usd - _usd(m[4])) <= 1
    assert int(m[1]) > int(m[5])  # today's plan needs more devices to meet the deadline
    need = out.splitlines()[2]
    assert need.startswith("Least inter-server network") and "; today 6.8 GB/s: enough;" in need


def test_today_plan_in_json_meets_the_goal(capsys):
    import json

    code, out, err = run_cli(capsys, [*GOAL, "--json"])
    assert code == 0, err
    data = json.loads(out)
    today, best = data["today"], data["best"]
    assert today["network"] == "as is" and today["meets"]
    assert today["time_s"] <= 3 * 86400 and today["cost_usd"] <= 50000
    assert best["cost_usd"] < today["cost_usd"]
    assert "Today's network is enough" in data["sentence"]


def test_no_today_words_where_today_network_misses(capsys):
    """A deadline today's network cannot meet at any size: the faster network is needed, and
    nothing says today's is enough."""
    code, out, err = run_cli(capsys, [*GOAL[:-4], "--deadline", "20h", "--budget", "50000"])
    assert code == 0, err
    out = whole_lines(out)  # each sentence on one line again
    first, need = out.splitlines()[0], out.splitlines()[2]
    assert "network 4 x 100 Gb/s EFA" in first and "Today's network is enough" not in out
    assert "; today 6.8 GB/s;" in need and "today 6.8 GB/s: enough" not in need
