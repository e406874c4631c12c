"""A change that changes nothing has its own verdict, "no change", in every report: the app's
remedies table, chart and its words, the HTML plan report, diagnose's lists and --json (session 18:
the planner said "loses" where diagnose said "does not help here")."""

from __future__ import annotations

import json

import diagnose_cases as cases
from app_harness import open_app
from scalesim.app.charts import PALETTE, VERDICT_COLOURS, chart_text, remedies_chart
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile

from scalesim.cli.main import main
from scalesim.diagnosis import diagnose_runs, render_text, standing
from scalesim.profiles import default_profile
from scalesim.remedies import NO_CHANGE, VERDICTS, gain_verdict, rank_remedies
from scalesim.runs import parse_runs_text
from scalesim.schemas import Scenario

# one device with overlap off: overlapping an exchange that one device never makes gains 0
ONE_DEVICE_NO_OVERLAP = {"ovl": False, "focus": 1}


def test_the_verdict_of_a_gain_under_no_change_either_way():
    assert VERDICTS.index("remedy") < VERDICTS.index("no change") < VERDICTS.index("loses")
    assert gain_verdict(NO_CHANGE) == "remedy"
    assert gain_verdict(NO_CHANGE / 2) == gain_verdict(-NO_CHANGE / 2) == "no change"
    assert gain_verdict(-NO_CHANGE) == "loses"


def test_rank_remedies_says_no_change_and_ranks_it_between_remedies_and_losers():
    _, ranked = rank_remedies(default_profile(), Scenario(devices=[1], overlap=False), 1)
    overlap = next(r for r in ranked if r.key == "overlap")
    assert overlap.applicable and overlap.objective_gain == 0.0
    assert overlap.verdict == "no change" and not overlap.helps
    assert overlap.reason == "does not change the throughput here"
    assert [r.verdict for r in ranked] == sorted((r.verdict for r in ranked), key=VERDICTS.index)


def _plan():
    state = default_state().model_copy(update=ONE_DEVICE_NO_OVERLAP)
    return make_plan(preset_profile(state), state)


def test_the_planner_chart_its_words_and_the_html_report_say_no_change():
    plan = _plan()
    overlap = next(r for r in plan.remedies if r.key == "overlap")
    assert overlap.verdict == "no change"
    spec = json.dumps(remedies_chart(plan).to_dict())
    assert '"effect": "no change"' in spec and PALETTE["no change"] in spec
    assert list(VERDICT_COLOURS) == [v for v in VERDICTS if v != "not applicable"]
    assert "no change: Overlap gradient exchange with backward (0%)" in chart_text(plan,
                                                                                  "remedies")
    html = report_html(plan, "http://example/?v=2")
    assert ('Overlap gradient exchange with backward</td><td class="">no change</td>' in html)
    assert '<td class="">loses</td>' not in html


def test_the_planner_remedies_table_says_no_change():
    at = open_app({"v": "2", "ovl": "0", "focus": "1", "tab": "remedies"})
    table = at.dataframe[-1].value
    verdicts = dict(zip(table["remedy"], table["verdict"], strict=True))
    assert verdicts["Overlap gradient exchange with backward"] == "no change"


def test_diagnose_lists_a_change_that_changes_nothing_as_no_change(tmp_path, capsys):
    """The slow-device runs: doubling the per-device batch gains +0.0 %; diagnose listed it under
    'Does not help here' where the planner said 'loses'. Both now say 'no change'."""
    text = cases.to_csv(cases.slow_device())
    report = diagnose_runs(parse_runs_text(text, "runs.csv"))
    batch = next(r for r in report.remedies if r.key == "bigger_batch")
    assert batch.verdict == "no change" and standing(batch) == "no change" and not batch.helps
    rendered = render_text(report)
    _, _, rest = rendered.partition("No change (model, applied alone):")
    assert "+0.0%  Double the per-device batch" in rest.split("\n\n")[0].split("Does not help")[0]
    path = tmp_path / "runs.csv"
    path.write_text(text)
    assert main(["diagnose", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_key = {r["key"]: r for r in data["remedies"]}
    assert by_key["bigger_batch"]["verdict"] == "no change"
    assert by_key["sharding"]["verdict"] == "loses"
    assert by_key["slow_device"]["verdict"] == "remedy" and by_key["slow_device"]["helps"]
