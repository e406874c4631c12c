"""A change that changes nothing has its own verdict, "no change", in every report: the app's
remedies table, chart and its words, the HTML plan report, diagnose's lists and --json (session 18:
the planner said "loses" where diagnose said "does not help here").

The example (branch diag18): a faster link where the step waits for its input. The loader supplies
a third of what the devices consume, so the step is the loading time whatever the exchange takes
(docs/model.md §5: stall = max(0, load - busy)): the faster link's gain is 0 by construction. (The
earlier example, overlap at one device, is now "not applicable": no gradient is exchanged.)"""

from __future__ import annotations

import json
import re
from html import escape

import diagnose_cases as cases
import pytest
from app_harness import open_app, upload_profile
from cli_harness import kept_diagnoses
from scalesim.app.charts import PALETTE, VERDICT_COLOURS, chart_text, remedies_chart
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state
from test_app_honest import stalled_profile

from scalesim.cli.main import main
from scalesim.diagnosis_text import render_text
from scalesim.remedies import NO_CHANGE, VERDICTS, gain_verdict, rank_remedies
from scalesim.schemas import Scenario

# one server of 8 devices whose step waits for its input: a faster link gains exactly 0
LOADER_BOUND = {"focus": 8}


def test_the_verdict_of_a_gain_under_no_change_either_way():
    assert VERDICTS.index("remedy") < VERDICTS.index("no change") < VERDICTS.index("loses")
    assert gain_verdict(NO_CHANGE) == "remedy"
    assert gain_verdict(NO_CHANGE / 2) == gain_verdict(-NO_CHANGE / 2) == "no change"
    assert gain_verdict(-NO_CHANGE) == "loses"


def test_rank_remedies_says_no_change_and_ranks_it_between_remedies_and_losers():
    now, ranked = rank_remedies(stalled_profile(), Scenario(devices=[8]), 8)
    assert now.data_stall_s > 0
    link = next(r for r in ranked if r.key == "interconnect")
    assert link.applicable and abs(link.objective_gain) < 1e-12
    assert link.prediction.exposed_comm_s < now.exposed_comm_s  # the link is faster...
    assert link.prediction.step_time_s == pytest.approx(now.step_time_s, rel=1e-12)  # ...no gain
    assert link.verdict == "no change" and not link.helps
    assert link.reason == "does not change the throughput here"
    assert [r.verdict for r in ranked] == sorted((r.verdict for r in ranked), key=VERDICTS.index)


def _plan():
    state = default_state().model_copy(update=LOADER_BOUND)
    return make_plan(stalled_profile(), state)


def _link(remedies):
    return next(r for r in remedies if r.key == "interconnect")


def test_the_planner_chart_its_words_and_the_html_report_say_no_change():
    plan = _plan()
    link = _link(plan.remedies)
    assert link.verdict == "no change" and link.title.startswith("Faster intra-server links")
    spec = json.dumps(remedies_chart(plan).to_dict())
    assert '"effect": "no change"' in spec and PALETTE["no change"] in spec
    assert list(VERDICT_COLOURS) == [v for v in VERDICTS if v != "not applicable"]
    words = chart_text(plan, "remedies").partition("no change: ")[2].split(". ")[0].rstrip(".")
    assert f"{link.title} (+0.0%)" in words.split("; ")
    html = report_html(plan, "http://example/?v=2")
    assert f'{escape(link.title)}</td><td class="">no change</td>' in html
    assert '<td class="">loses</td>' not in html


def test_the_planner_remedies_table_says_no_change():
    at = upload_profile(open_app({"v": "2", "focus": "8", "tab": "remedies"}), stalled_profile())
    table = at.dataframe[-1].value
    verdicts = dict(zip(table["remedy"], table["verdict"], strict=True))
    assert verdicts[_link(_plan().remedies).title] == "no change"


def test_diagnose_lists_a_change_that_changes_nothing_as_no_change(tmp_path, capsys, monkeypatch):
    """Runs paced by their loader: doubling the per-device batch gains +0.0 %; diagnose listed it
    under 'Does not help here' where the planner said 'loses'. Both now say 'no change'. The runs
    are diagnosed once, by the CLI: the report it prints as --json is kept, and its text read
    too. (Session 47: the slow-device runs, this test's until then, gain +0.5 % from the batch
    once the fit reads their 2-rank run's whole delay, runs_slow_rank.)"""
    made = kept_diagnoses(monkeypatch)
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv(cases.input_pipeline()))
    assert main(["diagnose", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (report,) = made  # the report the CLI printed
    batch = next(r for r in report.remedies if r.key == "bigger_batch")
    assert batch.verdict == "no change" and not batch.helps
    rendered = render_text(report)
    _, _, rest = rendered.partition("No change (model, applied alone):")
    assert re.search(r"\+0\.0% \[[^]]+\]\s+Double the per-device batch",  # gain [band]
                     rest.split("\n\n")[0].split("Loses")[0])
    by_key = {r["key"]: r for r in data["remedies"]}
    assert by_key["bigger_batch"]["verdict"] == "no change" and not by_key["bigger_batch"]["helps"]
    assert by_key["sharding"]["verdict"] == "no change"
    assert by_key["loader"]["verdict"] == "remedy" and by_key["loader"]["helps"]
