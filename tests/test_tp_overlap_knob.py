"""The tensor-parallel overlap as a scenario knob (``ScenarioLayout.tp_overlap``, ``--tp-overlap``
on predict, sweep, decide, goal and plan with one help text, the app's toggle and link key
``tpo``, link v7; docs/model.md §14 "Where the knob lives"): predict, sweep, decide, goal, the
"split the model" remedy and the planner of a scenario hide the same tensor-parallel traffic as
``scalesim plan --tp-overlap``; tp = 1 refuses it in one line (``layout.TP_OVERLAP_NEEDS_TP``)."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.errors import ScalesimError
from scalesim.layout import TP_OVERLAP_HELP, TP_OVERLAP_NEEDS_TP, ParallelLayout, knob_refusal
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
           "--tp", "8", "--sequence-parallel"]


def _row(capsys, *flags) -> dict:
    code, out, err = run_cli(capsys, [*PREDICT, "--json", *flags])
    assert code == 0, err
    return json.loads(out)[0]


def test_predict_hides_the_tensor_parallel_traffic_it_overlaps(capsys):
    """Llama 3 8B, tp 8 with sequence parallelism on one DGX H100 (dp 1: no data-parallel
    exchange): with the overlap the step is shorter by exactly the tensor-parallel time the
    overlap hides, the exposed TP time of the row without it minus what the row with it still
    exposes (the end stages' collectives and the contention share, docs/model.md §14); compute,
    bubble, stall, stragglers and memory are the same."""
    off, on = _row(capsys), _row(capsys, "--tp-overlap")
    assert on["step_time_s"] < off["step_time_s"]
    assert 0 < on["tp_comm_s"] < off["tp_comm_s"]
    assert off["step_time_s"] - on["step_time_s"] == pytest.approx(
        off["tp_comm_s"] - on["tp_comm_s"], rel=1e-9)
    for part in ("compute_s", "bubble_s", "data_stall_s", "straggler_s", "memory_bytes",
                 "pipeline_comm_s"):
        assert on[part] == pytest.approx(off[part], rel=1e-12), part
    assert on["exposed_comm_s"] == pytest.approx(on["tp_comm_s"], rel=1e-12)  # dp 1: TP only


def test_the_layout_line_says_it_where_there_is_tensor_parallelism(capsys):
    for flags, said in (([], "sequence parallel on, TP overlap off;"),
                        (["--tp-overlap"], "sequence parallel on, TP overlap on;")):
        code, out, err = run_cli(capsys, [*PREDICT, *flags])
        assert code == 0, err
        assert re.search(r"^layout: tp 8 x pp 1, recompute none, " + said, out, re.M), out
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--pp", "2"])
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("layout:"))
    assert "TP overlap" not in line  # tp 1: nothing to overlap, not said


@pytest.mark.parametrize("command, extra", [
    ("predict", ["--devices", "8"]), ("sweep", ["--devices", "8"]),
    ("decide", ["--devices", "8"]),
    # goal's split as given (--layout search applies the overlap where a layout has tp > 1,
    # as plan's --tp-overlap: test_goal_layout_search)
    ("goal", ["--train-samples", "1e6", "--deadline", "30d", "--budget", "1e6",
              "--max-devices", "16", "--layout", "given"])])
def test_tp_one_refuses_the_overlap_in_one_line(capsys, command, extra):
    code, _, err = run_cli(capsys, [command, "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--tp-overlap", *extra])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert ("error: --tp-overlap needs --tp 2 or more (it overlaps the tensor-parallel group's "
            "collectives with the matmuls)") in err  # the flags the user typed


def test_the_library_refuses_it_with_the_same_message_and_a_parameter_count_names_it():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    with pytest.raises(ScalesimError) as info:
        predict(profile, Scenario(devices=[8], layout={"tp_overlap": True}))
    assert str(info.value) == str(knob_refusal(TP_OVERLAP_NEEDS_TP))
    bert = resolve_profile(None, "dgx-a100", "bert-large")
    with pytest.raises(ScalesimError, match="layout tp overlap: workload 'bert-large' is a "
                       "parameter count only"):
        predict(bert, Scenario(devices=[8], layout={"tp_overlap": True}))


def test_one_definition_for_the_fields_and_the_flags(capsys):
    """The scenario's and the layout's fields share one description (which names the frameworks
    and docs/model.md §14), and predict's --tp-overlap is plan's: the same switch and help."""
    for model in (ScenarioLayout, ParallelLayout):
        spec = model.model_json_schema()["properties"]["tp_overlap"]
        assert spec["default"] is False and spec["description"] == TP_OVERLAP_HELP
    assert "§14" in TP_OVERLAP_HELP and "torchtitan" in TP_OVERLAP_HELP
    for command in ("predict", "sweep", "decide", "goal", "plan"):
        code, out, _ = run_cli(capsys, [command, "--help"])
        assert code == 0
        assert "--tp-overlap " + TP_OVERLAP_HELP in " ".join(out.split()), command


def test_scenario_files_load_unchanged_and_carry_it(tmp_path, capsys):
    old = tmp_path / "old.json"  # written before the field: the collectives exposed
    old.write_text(json.dumps({"schema_version": "scalesim-scenario/1", "devices": [8],
                               "layout": {"tp": 8, "sequence_parallel": True}}))
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"devices": [8], "layout": {"tp": 8, "sequence_parallel": True,
                                                          "tp_overlap": True}}))
    base = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--json"]

    def step(*flags):
        code, out, err = run_cli(capsys, [*base, *flags])
        assert code == 0, err
        return json.loads(out)[0]["step_time_s"]

    assert step("--scenario", str(old)) == _row(capsys)["step_time_s"]
    assert step("--scenario", str(new)) == _row(capsys, "--tp-overlap")["step_time_s"]
    assert step("--scenario", str(old), "--tp-overlap") == step("--scenario", str(new))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"devices": [8], "layout": {"tp": 8, "tp_overlap": "sometimes"}}))
    code, _, err = run_cli(capsys, [*base, "--scenario", str(bad)])
    assert code == 2 and "tp_overlap" in err and len(err.strip().splitlines()) == 1, err


def test_sweep_decide_and_goal_take_it(capsys):
    """A sweep over tp 1, 2: the tp 2 rows are faster with the overlap, the tp 1 rows the same
    (nothing to overlap), each row what predict says; the decision card's now is predict's; goal
    seeking at tp 8 finds a faster best plan with it."""
    from scalesim.decision import decide
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    off = Scenario(devices=[8], micro_batch=1)
    on = off.model_copy(update={"layout": ScenarioLayout(tp_overlap=True)})
    grid = {k: sweep(profile, s, {"tp": [1, 2]}).columns for k, s in (("off", off), ("on", on))}
    assert list(grid["on"]["tp"]) == list(grid["off"]["tp"]) == [1, 2]
    steps_on, steps_off = grid["on"]["step_time_s"], grid["off"]["step_time_s"]
    assert steps_on[0] == steps_off[0] and steps_on[1] < steps_off[1]
    tp2 = on.model_copy(update={"layout": ScenarioLayout(tp=2, tp_overlap=True)})
    assert steps_on[1] == pytest.approx(predict(profile, tp2)[0].step_time_s, rel=1e-12)
    card = decide(profile, tp2, 8)
    assert card.now.samples_per_s == pytest.approx(predict(profile, tp2)[0].samples_per_s,
                                                   rel=1e-12)
    goal = ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--batch", "1",
            "--train-samples", "1e6", "--deadline", "30d", "--budget", "1e6", "--max-devices",
            "64", "--tp", "8", "--json"]
    best = {}
    for flags in ([], ["--tp-overlap"]):
        code, out, err = run_cli(capsys, [*goal, *flags])
        assert code == 0, err
        best[bool(flags)] = json.loads(out)["best"]
    assert best[True]["samples_per_s"] > best[False]["samples_per_s"]


def test_the_overlap_is_a_sweep_axis_with_the_rows_predict_gives(capsys):
    """``--tp-overlap-values off,on`` beside ``--tp-values 1,8``: every row is predict's for
    that layout and overlap; the tp 8 rows differ by the tensor-parallel time hidden. The tp 1
    row with the overlap on has nothing to overlap: the off row under another label, which
    predict refuses (``TP_OVERLAP_NEEDS_TP``), so it is dropped as a broken layout with that
    rule (it was kept, a duplicate, before session 41's review), as sweep drops sequence
    parallelism at tp 1. Refused, in one line, for a parameter count and where no row has
    tp > 1."""
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[8], micro_batch=1,
                    layout=ScenarioLayout(sequence_parallel=True))
    res = sweep(profile, base, {"tp": [1, 8], "tp_overlap": [False, True]})
    cols = res.columns
    rows = {(int(t), bool(o)): s for t, o, s in
            zip(cols["tp"], cols["tp_overlap"], cols["step_time_s"], strict=True)}
    assert sorted(rows) == [(1, False), (8, False), (8, True)]
    assert res.dropped == res.dropped_layout == 1
    assert res.layout_example == f"tp 1 x pp 1 on 8 devices: {knob_refusal(TP_OVERLAP_NEEDS_TP)}"
    with pytest.raises(ScalesimError, match="--tp-overlap needs --tp 2 or more"):
        predict(profile, Scenario(devices=[8], micro_batch=1,
                                  layout=ScenarioLayout(tp_overlap=True)))
    for (tp, overlap), step in rows.items():
        split = ScenarioLayout(tp=tp, sequence_parallel=tp > 1, tp_overlap=overlap)
        want = predict(profile, base.model_copy(update={"layout": split}))[0].step_time_s
        assert step == pytest.approx(want, rel=1e-12), (tp, overlap)
    assert rows[8, True] < rows[8, False]
    for argv, words in ((["--devices", "8"], "--tp-overlap-values needs a transformer"),
                        (["--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices",
                          "8"], str(knob_refusal(TP_OVERLAP_NEEDS_TP)))):
        code, _, err = run_cli(capsys, ["sweep", *argv, "--tp-overlap-values", "off,on"])
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err


def test_the_split_remedy_plans_with_the_overlap():
    """The "split the model" remedy ranks the split layouts with the scenario's overlap and hands
    back a scenario that carries it where its layout has tp > 1; its predicted step is the
    planner's row's."""
    from scalesim.remedies import best_split

    profile = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    scenario = Scenario(devices=[8], global_batch=16,
                        layout=ScenarioLayout(tp=2, tp_overlap=True))
    now = predict(profile, scenario)[0]
    split, title = best_split(profile, scenario, now)
    row = plan_at(profile, scenario, 8, 16, top=1, split_only=True)[0]
    assert split == scenario_of_row(scenario, row) and "Split the model" in title
    assert split.layout.tp_overlap == (row.tp > 1)
    assert predict(profile, split)[0].step_time_s == pytest.approx(row.step_time_s, rel=1e-9)
    hidden = plan_at(profile, scenario, 8, 16, top=None, split_only=True)
    exposed = plan_at(profile, scenario.model_copy(update={"layout": ScenarioLayout(tp=2)}), 8,
                      16, top=None, split_only=True)
    assert hidden[0].step_time_s <= exposed[0].step_time_s
    by_key = {(r.dp, r.tp, r.pp, r.zero, r.micro_batch, r.schedule, r.virtual_stages,
               r.recompute, r.sequence_parallel): r for r in exposed}
    for r in hidden:
        twin = by_key[(r.dp, r.tp, r.pp, r.zero, r.micro_batch, r.schedule, r.virtual_stages,
                       r.recompute, r.sequence_parallel)]
        assert (r.step_time_s < twin.step_time_s) if r.tp > 1 else (
            r.step_time_s == twin.step_time_s)


def test_plan_tp_overlap_keeps_its_meaning_on_a_measured_curve(capsys):
    """``scalesim plan --profile --tp-overlap`` (the planner of a scenario, ``plan_at``: the flag
    now reaches it as ``ScenarioLayout.tp_overlap``) still ranks every row with the overlap:
    each row says so, and the tp 2 rows are faster than without it."""
    argv = ["plan", "--profile", str(H200), "--devices", "2", "--gpus-per-node", "2",
            "--global-batch", "8", "--top", "500", "--json"]
    rows = {}
    for flags in ([], ["--tp-overlap"]):
        code, out, err = run_cli(capsys, [*argv, *flags])
        assert code == 0, err
        rows[bool(flags)] = json.loads(out)["layouts"]
    assert all(r["tp_overlap"] for r in rows[True]) and not any(r["tp_overlap"]
                                                                for r in rows[False])

    def steps(table):
        return {(r["tp"], r["pp"], r["zero"], r["micro_batch"], r["schedule"],
                 r["virtual_stages"], r["recompute"], r["sequence_parallel"]): r["step_time_s"]
                for r in table}

    code, out, err = run_cli(capsys, [*argv[:-1], "--tp-overlap"])
    assert code == 0 and ("\nranked with: tensor-parallel collectives overlapped with the "
                          "matmuls where tp > 1 (--tp-overlap), ") in out, err
    on, off = steps(rows[True]), steps(rows[False])
    split = [k for k in on if k[0] == 2 and k in off]
    assert split and all(on[k] < off[k] for k in split)
    assert all(on[k] == off[k] for k in on if k[0] == 1 and k in off)


# ------------------------------------------------------------------ the app and its links

LLAMA_LINK = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "tp": "8",
              "sp": "1", "mb": "1"}


def test_a_link_with_the_overlap_round_trips_as_v7_and_predicts_it():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import decode_query, encode_query, link_version

    state, profile, messages = decode_query(LLAMA_LINK)
    assert messages == [] and state.tpo is False
    assert encode_query(state, profile)["v"] == "3"  # off: still a v3 link
    changed = state.model_copy(update={"tpo": True})
    params = encode_query(changed, profile)
    assert (params["v"], params["tpo"], link_version(changed)) == ("7", "1", 7)
    state2, profile2, messages = decode_query(params)
    assert messages == [] and state2 == changed and profile2 == profile
    scenario, _ = build_scenario(state2, profile2)
    assert scenario.layout.tp_overlap is True and scenario.layout.tp == 8
    rows, before = make_plan(profile2, state2).rows, make_plan(profile, state).rows
    assert rows == predict(profile2, scenario)
    assert all(a.step_time_s < b.step_time_s for a, b in zip(rows, before, strict=True))


def test_old_links_open_with_the_collectives_exposed():
    from scalesim.app.state import decode_query

    for version in ("3", "4", "5", "6"):  # cannot carry the choice: ignored and said so
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "tpo": "1"})
        assert state.tpo is False and state.tp == 8 and state.sp is True
        assert messages[-1] == (f"ignored tpo: a v{version} link has no tensor-parallel overlap "
                                "choice (the tensor-parallel collectives exposed)"), messages
    for version in ("1", "2"):  # no model split at all
        state, _, messages = decode_query({"v": version, "tpo": "1"})
        assert state.tpo is False
        assert messages == [f"ignored tpo: a v{version} link has no model split (data parallel)"]
    assert decode_query({**LLAMA_LINK, "v": "7"})[0].tpo is False
    state, _, messages = decode_query({**LLAMA_LINK, "v": "7", "tpo": "<b>"})
    assert state.tpo is False and state.tp == 8 and len(messages) == 1
    # what v6 added stays readable in a v7 link
    state, _, messages = decode_query({**LLAMA_LINK, "v": "7", "tpo": "1", "ak": "flash2"})
    assert (state.tpo, state.ak, messages) == (True, "flash2", [])


def test_the_app_toggle_sets_the_overlap_and_the_link():
    from app_harness import link_param, open_app, run_clean
    from scalesim.app.plan import make_plan
    from scalesim.app.state import preset_profile

    at = open_app(LLAMA_LINK)
    toggle = at.sidebar.toggle(key="k_tpo")
    assert toggle.value is False
    before = at.session_state["app_state"]
    toggle.set_value(True)
    run_clean(at)
    state = at.session_state["app_state"]
    assert state.tpo is True
    assert (link_param(at, "tpo"), link_param(at, "v")) == ("1", "7")
    profile = preset_profile(state)
    assert make_plan(profile, state).focus.samples_per_s > \
        make_plan(profile, before).focus.samples_per_s


def test_the_report_states_it_and_tp_one_ignores_it_with_a_note():
    """At tp 1 the app ignores the overlap with a note naming the controls (its toggle is
    disabled there: tests/test_app_layouts.py); predict refuses it (above)."""
    from scalesim.app.plan import make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query({**LLAMA_LINK, "v": "7", "tpo": "1"})
    lines = dict(scenario_lines(make_plan(profile, state)))
    assert "Sequence parallelism on, Tensor-parallel overlap on;" in lines["layout"]
    state, profile, _ = decode_query({**LLAMA_LINK, "v": "7", "tpo": "1", "tp": "1", "sp": "0"})
    plan = make_plan(profile, state)
    assert "Tensor-parallel overlap ignored: it applies with Tensor parallel above 1" in plan.notes
    assert "Tensor-parallel overlap" not in dict(scenario_lines(plan))["layout"]
    assert plan.scenario.layout is None or not plan.scenario.layout.tp_overlap
