"""Diagnose from runs says when the runs cannot tell a fitted part of the step from another
(session 42, ``runs_diagnosis._unseparated_parts``, ``fit_runs.fit_without``; docs/diagnose.md
"A part the runs cannot separate").

A user walk: 1, 2, 4, 8 GPUs in one server (4.5x at 8), then 16 on two servers: 5 runs for 6
free parameters. The fit paced the 8-GPU run by one server's input supply, a data stall of ~20 %
of its step that no column measured, and the report's input-pipeline evidence compared the first
and the largest run only (0 % -> 0 %), so no line said where the stall was, nor that a fit with
straggler wait in its place is one these runs cannot rule out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_harness import diagnose_file, diagnosed_once

from scalesim.diagnosis import OTHER_CAUSE_SHARE
from scalesim.figures import whole_percent
from scalesim.fit_runs import fit_runs, fit_without
from scalesim.runs import parse_runs_text, thin
from scalesim.runs_diagnosis import NAMED_PART_SHARE

HEADER = "devices,nodes,samples_per_s,per_device_batch\n"
WALK_RUNS = HEADER + "1,1,400,32\n2,1,720,32\n4,1,1240,32\n8,1,1800,32\n16,2,2100,32\n"
# the same shape, but 1,900 at 8 and 2,500 at 16: no fit without a stall at 8 matches them
SEPARATED_RUNS = HEADER + "1,1,400,32\n2,1,760,32\n4,1,1400,32\n8,1,1900,32\n16,2,2500,32\n"
FLAGS = ["--params", "336e6", "--wire-bytes", "2"]
DIAGNOSES: dict = {}  # the reports of the tests that share them (diagnosed_once), by arguments


def _diagnose(capsys, tmp_path, text, json_out=True):
    code, out, err = diagnose_file(capsys, tmp_path, text, *FLAGS,
                                   *(["--json"] if json_out else []))
    assert code == 0, err
    return json.loads(out) if json_out else out


def _diagnose_walk(capsys, tmp_path, monkeypatch, json_out=True):
    """``_diagnose`` of WALK_RUNS, written as runs.csv in ``tmp_path`` (the working directory
    now), fitted once in the module (``DIAGNOSES``): each test gets its own copy."""
    diagnosed_once(monkeypatch, DIAGNOSES)
    monkeypatch.chdir(tmp_path)
    return _diagnose(capsys, Path(), WALK_RUNS, json_out)


def _runs(text):
    return thin(parse_runs_text(text, "runs.csv"))


def test_the_walk_s_stall_at_8_is_said_where_it_is_and_as_undecided_in_text(capsys, tmp_path,
                                                                            monkeypatch):
    """The text lists the input pipeline (0 % of the largest run's time, 20 % of the 8-GPU
    step), its evidence reaches the 8-GPU run, and the next line says the runs cannot tell the
    stall from straggler wait and what would: a data_wait_s column, a trace of that run, or
    timing it at twice the batch against both fits' predictions. The other fit's straggler wait
    is 16 % of its step (21 % before session 48's straggler stretch: the exchange hides behind
    the last device's passes, longer by that wait, and the fit without a stall is found anew).
    The figures are the --json's of the same report, as the text rounds them (``whole_percent``),
    checked against the rules that act on them in the test below and within a point of the
    20 % and 16 % quoted here: pinned as '20%' and '16%' (before session 49) they sat 0.2 and
    0.4 points from rounding to 19 and 15 (19.68 %, 15.88 %), a rounding the sentence does not
    turn on."""
    report = _diagnose_walk(capsys, tmp_path, monkeypatch)  # its text below is of this fit
    (one,) = report["details"]["unseparated"]
    stall = [whole_percent(r["data_share"]) for r in report["table"]]
    at8, rival = whole_percent(one["share"]), whole_percent(one["rival_shares"]["straggler"])
    assert stall == ["0%", "0%", "0%", at8, "0%"] and one["devices"] == 8
    # the 20 % and 16 % this docstring quotes, to the point the text rounds to
    assert abs(one["share"] - 0.20) <= 0.01 and abs(one["rival_shares"]["straggler"] - 0.16) <= 0.01
    out = _diagnose_walk(capsys, tmp_path, monkeypatch, json_out=False)
    lines = out.splitlines()
    also = lines.index("Also: Input pipeline (0% of the largest run's time)")
    evidence = lines[also + 1], lines[also + 2]
    assert evidence[0].endswith(f"(fitted model): {', '.join(stall)}; most at 8 devices: {at8}")
    said = evidence[1]
    assert said.startswith(f"  - the data stall of {at8} of the step at 8 devices is the fitted "
                           "model's, not measured, and these runs cannot tell it from "
                           f"straggler wait: a fit without it puts straggler wait at {rival}")
    for measure in ("a data_wait_s column", "a profiler trace of the run on 8 devices",
                    "timing 8 devices at twice the batch per device (32 -> 64) against this "
                    "fit's 1,840 samples/s"):
        assert measure in said, measure
    loader = next(line for line in lines if "Cache the input" in line)
    assert "these runs cannot tell that stall from straggler wait" in loader
    # the cause itself does not turn on it: communication still grows most without the stall
    assert "Likely cause: Growing communication share" in out
    assert "cannot tell which" not in out


def test_the_walk_s_json_gives_the_other_fit_and_it_holds(capsys, tmp_path, monkeypatch):
    """``details.unseparated`` names the part, the run, the share (the table's), the other
    fit's shares there and its misfit inside the region; the other fit, made again here, has no
    stall, ~16 % straggler wait at 8 (of its own step, as the fit's shares are of its: 19 % of
    the measured step before session 48, 21 % of its own without the straggler stretch) and
    misses the runs by more than the fit does (it is worse, not equal: what the report says is
    that the runs cannot rule it out). At twice the batch it predicts 2,529 samples/s (2,399
    before the straggler stretch, which hides more of its exchange behind the longer passes)."""
    report = _diagnose_walk(capsys, tmp_path, monkeypatch)
    (one,) = report["details"]["unseparated"]
    at8 = next(r for r in report["table"] if r["devices"] == 8)
    assert (one["part"], one["devices"], one["taken_by"]) == ("data", 8, ["straggler"])
    # listed as a part the report names (OTHER_CAUSE_SHARE, 5 %): 19.7 % of the step, 3.9x
    assert one["share"] == at8["data_share"] and one["share"] >= 2 * OTHER_CAUSE_SHARE
    # the rival gives the stall's time to straggler wait: 15.9 % of its step, 3.2x the share a
    # report names (checked as "> 0.15" before session 49: a 6 % margin). A part takes
    # the time where it grows by NAMED_PART_SHARE (1 point) or more over the fit's share there:
    # straggler wait 0.2 % -> 15.9 %, +15.6 points, a taker; communication 23.8 % -> 22.7 %,
    # -1.1 points, 2.1 points short of +1: not a taker, so both sides of the rule are checked
    rival, fitted = one["rival_shares"], {k: at8[f"{k}_share"] for k in ("comm", "straggler")}
    assert rival["data"] == 0.0 and rival["straggler"] >= 2 * OTHER_CAUSE_SHARE
    assert rival["straggler"] - fitted["straggler"] >= NAMED_PART_SHARE
    assert rival["comm"] - fitted["comm"] < NAMED_PART_SHARE
    assert 0.0 < one["chi2_excess"] <= one["chi2_region"]
    assert one["rival_rmse_rel"] > report["details"]["fit"]["rmse_rel"]
    assert len(one["measures"]) == 3 and one["said"] in report["others"][0]["evidence"]
    runs = _runs(WALK_RUNS)
    fit = fit_runs(runs, 336e6, 2.0)
    rival = fit_without(fit, runs, "data", 336e6, 2.0)
    assert rival.plausible and "node_loader_samples_per_s" not in rival.fit.fitted
    assert float(np.max(rival.fit.breakdown.data_stall_s)) == 0.0
    assert rival.fit.rmse_rel == one["rival_rmse_rel"]
    b = rival.fit.breakdown  # the 8-device run is the fourth: its wait over its own step
    assert one["rival_shares"]["straggler"] == pytest.approx(b.straggler_s[3] / b.step_time_s[3])
    # its prediction at twice the batch, which the text holds against the fit's
    assert "2,529 of the fit without the data stall" in one["said"]


def test_a_stall_no_fit_without_it_matches_is_listed_and_not_qualified(capsys, tmp_path):
    """Runs whose 8-GPU stall (25 %) a fit without it misfits beyond the region: the input
    pipeline is listed with its evidence at 8, and nothing says the runs cannot separate it."""
    runs = _runs(SEPARATED_RUNS)
    fit = fit_runs(runs, 336e6, 2.0)
    assert not fit_without(fit, runs, "data", 336e6, 2.0).plausible
    report = _diagnose(capsys, tmp_path, SEPARATED_RUNS)
    assert report["details"]["unseparated"] == []
    (other,) = [f for f in report["others"] if f["key"] == "input_pipeline"]
    assert other["evidence"][0].endswith("most at 8 devices: 25%")
    assert not any("cannot tell" in e for e in other["evidence"])


def test_a_data_wait_column_settles_the_stall(capsys, tmp_path):
    """The measurement the report names: with a data_wait_s column of zeros the 8-GPU run has no
    stall (measured), the input pipeline is neither listed nor qualified, and the fit's time
    there goes to another part (which the report then qualifies in its own right)."""
    text = WALK_RUNS.replace("per_device_batch\n", "per_device_batch,data_wait_s\n")
    text = "\n".join(line + ",0" if line[0].isdigit() else line
                     for line in text.splitlines()) + "\n"
    report = _diagnose(capsys, tmp_path, text)
    assert all(r["data_share"] == 0.0 for r in report["table"])
    assert all(a["part"] != "data" for a in report["details"]["unseparated"])
    assert all(f["key"] != "input_pipeline" for f in report["others"])


def test_a_rival_fit_that_another_part_leads_makes_a_rival_cause(capsys, tmp_path):
    """Runs whose fit leads with communication, where a fit without its straggler wait (which
    the runs cannot rule out) has the input pipeline lose most of the largest run's time: the
    cause reads 'X, or input pipeline: these runs cannot tell which' and its evidence leads with
    the sentence that says why."""
    text = HEADER + "1,1,400,32\n2,1,780,32\n4,1,1500,32\n8,1,2000,32\n16,2,3900,32\n"
    report = _diagnose(capsys, tmp_path, text)
    cause = report["cause"]
    assert cause["rivals"] == ["input_pipeline"]
    assert cause["label"].endswith(", or input pipeline: these runs cannot tell which")
    undecided = report["details"]["unseparated"]
    assert [a["part"] for a in undecided] == ["straggler"]
    assert cause["evidence"][0] == undecided[0]["said"]
    assert undecided[0]["taken_by"] == ["data"]


def test_fit_without_holds_the_part_at_none():
    """The refit holds the input supply at its upper bound (not limiting) or the jitter at 0,
    fits every other parameter, and is None where the fit does not fit that part."""
    runs = _runs(WALK_RUNS)
    fit = fit_runs(runs, 336e6, 2.0)
    still = fit_without(fit, runs, "straggler", 336e6, 2.0)
    assert still.fit.values["jitter_cv"] == 0.0 and "jitter_cv" not in still.fit.fitted
    assert set(still.fit.fitted) == set(fit.fitted) - {"jitter_cv"}
    one_server = _runs(HEADER + "1,1,400,32\n2,1,720,32\n")  # one multi-device run: no jitter
    one_fit = fit_runs(one_server, 336e6, 2.0)
    assert "jitter_cv" not in one_fit.fitted
    assert fit_without(one_fit, one_server, "straggler", 336e6, 2.0) is None
