"""Where no input pipeline was measured the data stall is "not modelled": every output says so
(JSON null, an empty CSV cell, one note line in text, no bar or column in the app) instead of
printing the model's 0 for an infinitely fast loader, which reads as "the loader keeps up". Where
a profile has a loader curve, the stall is a number as before (0 then means it keeps up)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from app_harness import open_app, upload_profile
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.predict import STALL_NOT_MODELLED, input_pipeline_modelled, predict
from scalesim.profiles import default_profile, load_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import LoaderCurve, LoaderPoint, Scenario

NOTE = f"note: {STALL_NOT_MODELLED}"


def _run(capsys, *argv):
    code, out, err = run_cli(capsys, list(argv))
    assert code == 0, err
    return out, err


def stalled_profile():
    """The default profile with a loader of a third of what 8 devices consume (a stall)."""
    return default_profile().model_copy(update={"name": "slow loader", "input_pipeline":
                                                LoaderCurve(points=[
                                                    LoaderPoint(workers=0, samples_per_s=60.0),
                                                    LoaderPoint(workers=4, samples_per_s=180.0)],
                                                    measured=True)})


def test_one_function_decides_from_the_profiles_input_pipeline():
    assert not input_pipeline_modelled(default_profile())  # the presets: no loader curve
    assert not input_pipeline_modelled(None)  # no profile at all (plan without --profile)
    assert input_pipeline_modelled(load_profile(str(H200)))  # calibrated with its loader phase
    assert input_pipeline_modelled(stalled_profile())


def test_predict_json_is_null_without_a_loader_and_a_number_with_one(capsys):
    out, _ = _run(capsys, "predict", "--devices", "8", "--json")
    assert json.loads(out)[0]["data_stall_s"] is None
    for workers in ("1", "8"):
        out, _ = _run(capsys, "predict", "--profile", str(H200), "--devices", "1,8",
                      "--loader-workers", workers, "--json")
        rows = json.loads(out)
        assert all(isinstance(r["data_stall_s"], float) for r in rows), rows
        for r in rows:  # a modelled stall is a part of the step again
            parts = r["compute_s"] + r["exposed_comm_s"] + r["data_stall_s"] + r["straggler_s"]
            assert parts == pytest.approx(r["step_time_s"])


def test_a_stalled_loader_still_gives_its_stall_and_warning(tmp_path, capsys):
    path = tmp_path / "slow.json"
    path.write_text(stalled_profile().model_dump_json())
    out, _ = _run(capsys, "predict", "--profile", str(path), "--devices", "1,8", "--json")
    assert all(r["data_stall_s"] > 0 for r in json.loads(out))
    text, _ = _run(capsys, "predict", "--profile", str(path), "--devices", "1,8")
    head = next(line for line in text.splitlines() if line.startswith("devices"))
    assert "stall" in head.split() and NOTE not in text
    assert "warning: data stall:" in text


def test_predict_text_leaves_the_stall_column_out_with_one_note(capsys):
    out, _ = _run(capsys, "predict", "--devices", "1,8")
    head = next(line for line in out.splitlines() if line.startswith("devices"))
    assert "stall" not in head.split()  # no column of zeros
    assert out.splitlines().count(NOTE) == 1
    assert "calibrate's loader phase" in NOTE and "--loader-workers" in NOTE
    out, _ = _run(capsys, "predict", "--profile", str(H200), "--devices", "1,8")
    head = next(line for line in out.splitlines() if line.startswith("devices"))
    assert "stall" in head.split() and NOTE not in out


@pytest.mark.parametrize("profile", [[], ["--profile", str(H200)]])
def test_sweep_csv_and_json_blank_the_stall_only_without_a_loader(capsys, profile):
    modelled = bool(profile)
    out, err = _run(capsys, "sweep", "--devices", "1,8", *profile)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 2
    for r in rows:
        if modelled:
            assert float(r["data_stall_s"]) >= 0
        else:
            assert r["data_stall_s"] == ""  # an empty cell, not 0
        assert float(r["step_time_s"]) > 0  # the other columns are numbers as before
    assert (NOTE in err.splitlines()) is not modelled
    out, _ = _run(capsys, "sweep", "--devices", "1,8", "--format", "json", *profile)
    stalls = [r["data_stall_s"] for r in json.loads(out)]
    assert all(isinstance(s, float) for s in stalls) if modelled else stalls == [None, None]


def test_plan_json_stall_is_null_without_a_profiles_loader(capsys):
    argv = ["plan", "--devices", "8", "--global-batch", "64", "--top", "2"]
    out, _ = _run(capsys, *argv, "--json")
    rows = json.loads(out)["layouts"]
    assert [r["breakdown_s"]["stall_s"] for r in rows] == [None, None]
    assert all(isinstance(r["breakdown_s"]["compute_s"], float) for r in rows)
    assert "stall_modelled" not in rows[0]  # the flag decides the null, it is no new key
    text, _ = _run(capsys, *argv)
    assert NOTE in text.splitlines()  # a line of its own among the table's notes
    out, _ = _run(capsys, *argv, "--profile", str(H200), "--json")
    assert all(isinstance(r["breakdown_s"]["stall_s"], float) for r in json.loads(out)["layouts"])
    text, _ = _run(capsys, *argv, "--profile", str(H200))
    assert NOTE not in text


def test_the_loader_remedy_does_not_claim_the_loader_keeps_up():
    now, ranked = rank_remedies(default_profile(), Scenario(devices=[16]), 16)
    assert now.data_stall_s is None
    loader = next(r for r in ranked if r.key == "loader")
    assert not loader.applicable and loader.reason == STALL_NOT_MODELLED
    assert "keeps up" not in loader.reason
    fast = default_profile().model_copy(update={"input_pipeline": LoaderCurve(points=[
        LoaderPoint(workers=8, samples_per_s=1e6)])})
    now, ranked = rank_remedies(fast, Scenario(devices=[16]), 16)
    assert now.data_stall_s == 0.0  # modelled: it keeps up
    loader = next(r for r in ranked if r.key == "loader")
    assert loader.reason == "the input pipeline keeps up already"


def test_the_knee_reads_a_stall_not_modelled_as_none_to_blame():
    from scalesim.knee import knee_of_predictions

    rows = predict(default_profile(), Scenario(devices=[1, 2, 4, 8, 16]))
    knee = knee_of_predictions(rows)
    assert knee is not None and "inter-server" in knee.label


def test_the_report_drops_the_stall_column_and_says_why():
    from scalesim.app.plan import make_plan
    from scalesim.app.report import report_html
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"dmax": 16})
    html = report_html(make_plan(preset_profile(state), state), "http://example/?v=1")
    assert "data stall ms" not in html and "Data stall not modelled" in html
    html = report_html(make_plan(stalled_profile(), state.model_copy(update={"src": "custom"})),
                       "http://example/?v=1")
    assert "data stall ms" in html and "Data stall not modelled" not in html


def test_the_breakdown_chart_has_no_data_stall_bar_without_a_loader():
    from scalesim.app import charts
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"dmax": 16})
    plan = make_plan(preset_profile(state), state)
    spec = charts.breakdown_chart(plan).to_dict(validate=False)
    domain = spec["encoding"]["color"]["scale"]["domain"]
    assert "data stall" not in domain and "compute" in domain
    assert "data stall not modelled" in spec["title"]["subtitle"]
    assert "data stall not modelled" in charts.chart_text(plan, "step_breakdown")
    plan = make_plan(stalled_profile(), state.model_copy(update={"src": "custom"}))
    spec = charts.breakdown_chart(plan).to_dict(validate=False)
    assert "data stall" in spec["encoding"]["color"]["scale"]["domain"]
    assert "not modelled" not in spec["title"]["subtitle"]


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_the_predict_page_says_not_modelled_rather_than_a_zero_stall():
    at = open_app({"v": "1", "tab": "breakdown", "dmax": "16"})
    assert any("Data stall not modelled" in c for c in _captions(at)), _captions(at)
    assert any("data stall not modelled" in c for c in _captions(at))  # the chart in words
    tables = [d.value for d in at.dataframe]
    assert tables and all("data stall ms" not in t.columns for t in tables)
    at = upload_profile(at, stalled_profile(), "slow.json")
    assert not any("Data stall not modelled" in c for c in _captions(at))
    assert any("data stall ms" in d.value.columns for d in at.dataframe)


def test_diagnose_says_the_runs_show_no_stall_rather_than_not_modelled():
    """Diagnose fits a profile to runs it examined for input waits: without a loader curve in it
    the loader remedy says none was found (the fit's 'input supply not limiting'), not that no
    input pipeline was measured; runs that do wait for input still get the remedy."""
    import diagnose_cases as cases

    from scalesim.remedies import NO_STALL_FOUND

    report = cases.diagnosis("inter_server")
    loader = next(r for r in report.remedies if r.key == "loader")
    assert not loader.applicable and loader.note == NO_STALL_FOUND
    stalled = cases.diagnosis("input_pipeline")
    loader = next(r for r in stalled.remedies if r.key == "loader")
    assert loader.applicable and loader.gain > 0


def test_the_loader_remedy_removes_a_measured_stall_rather_than_unmodel_it():
    """Session 14: the loader remedy ("no data stall") predicted B on the profile without its
    input pipeline, so B's stall was None, "not modelled": the A/B chart of a profile whose
    pipeline was measured had A's stall bar beside a B subtitled "data stall not modelled (no
    input pipeline measured)". B's stall is now a modelled 0 (the input supply never limits);
    the throughput is what the infinitely fast loader gave, and a profile without a pipeline
    keeps the remedy not applicable."""
    from scalesim.app import charts
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query

    profile = stalled_profile()
    now, ranked = rank_remedies(profile, Scenario(devices=[8]), 8)
    loader = next(r for r in ranked if r.key == "loader")
    assert now.data_stall_s > 0 and loader.helps
    assert loader.prediction.data_stall_s == 0.0
    unmodelled = predict(profile.model_copy(update={"input_pipeline": None}),
                         Scenario(devices=[8]))[0]
    assert loader.prediction.step_time_s == pytest.approx(unmodelled.step_time_s, rel=1e-12)
    state, _, messages = decode_query({"v": "9", "b": "loader", "tab": "ab"})
    assert messages == []
    plan = make_plan(profile, state)
    assert plan.b_focus.data_stall_s == 0.0
    assert not charts.stall_left_out([plan.focus, plan.b_focus])
    title = charts.ab_chart(plan).to_dict()["title"]
    assert "not modelled" not in json.dumps(title)
    _, ranked = rank_remedies(default_profile(), Scenario(devices=[8]), 8)
    assert next(r for r in ranked if r.key == "loader").reason == STALL_NOT_MODELLED


@pytest.mark.parametrize("command", ["predict", "sweep", "decide"])
def test_a_scenario_files_loader_workers_without_a_pipeline_is_refused(tmp_path, capsys,
                                                                       command):
    """Session 14: ``--loader-workers 4`` on a profile without a measured input pipeline is
    refused (no worker count changes a number), but a --scenario file's ``loader_workers: 4``
    was ignored without a word (sweep, predict, decide, goal). It is refused as the flag is;
    with a profile that has a pipeline it is read."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"devices": [8], "loader_workers": 4}))
    code, _, err = run_cli(capsys, [command, "--scenario", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the scenario's loader_workers 4: profile" in err and "no measured input" in err
    slow = tmp_path / "slow.json"
    slow.write_text(stalled_profile().model_dump_json())
    code, _, err = run_cli(capsys, [command, "--scenario", str(path), "--profile", str(slow)])
    assert code == 0, err


def test_the_apps_loader_workers_without_a_pipeline_say_they_are_ignored():
    """Session 14: a link's ``lw=4`` on a profile without an input pipeline (the control is
    disabled there) was dropped without a word; a note says so, as for the shard group."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query

    state, profile, messages = decode_query({"v": "9", "lw": "4"})
    assert messages == [] and state.lw == 4
    assert any(n.startswith("Loader workers ignored: this profile has no measured input")
               for n in make_plan(profile, state).notes)
    assert not any("Loader workers" in n for n in make_plan(stalled_profile(), state).notes)
