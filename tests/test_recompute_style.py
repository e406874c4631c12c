"""The recompute style as a user setting (issue 11, checkpoint early stop): how the user's
framework reruns the forward under full recompute, 'whole-forward' (Megatron-LM, reentrant
checkpoint, torch < 2.1; the default) or 'early-stop' (PyTorch >= 2.1 non-reentrant checkpoint).
It is a field of the layout schemas, a knob of scalesim.bounds (--recompute-style, link key rs),
a flag of predict / sweep / plan / decide / goal / diagnose (with --workload), an app control
and the planner's setting."""

from __future__ import annotations

import json

import pytest
from app_harness import link_round_trip, select_into_link
from cli_harness import run_cli_as_process
from scalesim.app.plan import build_scenario, make_plan
from scalesim.app.state import AppState, decode_query, encode_query, preset_profile

from scalesim.bounds import LAYOUT_KNOB_BY_FIELD, markdown_table
from scalesim.errors import ScalesimError
from scalesim.figures import throughput
from scalesim.layout import RECOMPUTE_STYLES, ParallelLayout
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.plan import Setting, evaluate_layout, plan
from scalesim.predict import predict
from scalesim.presets import HARDWARE, transformer_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

# GPT 1.7B (Narayanan et al. 2021 Table 1: 24 layers, h 2304, f = 4h = 9216, s 2048) on one
# A100 (312 TFLOP/s, 2039 GB/s), 1 sequence per micro-batch, 2 micro-batches per step. What
# early stop does not rerun, per layer and micro-batch of M = 2048 tokens (docs/model.md §13):
#   down projection (2048 x 9216) @ (9216 x 2304): 2 x 2048 x 2304 x 9216 = 86,973,087,744 FLOP
#     at 312e12 x efficiency, plus 2 B x (2048*9216 + 9216*2304 + 2048*2304) = 89,653,248 B
#     at 2039e9 B/s
#   residual (bias-dropout-)add after it: 7 B x 2304 x 2048 = 33,030,144 B at 2039e9 B/s
LAYERS, MICRO_BATCHES = 24, 2


def _saved_s(efficiency: float) -> float:
    per_layer = (86_973_087_744 / (312e12 * efficiency) + 89_653_248 / 2039e9
                 + 33_030_144 / 2039e9)
    return per_layer * LAYERS * MICRO_BATCHES


def _gpt():
    return profile_from_presets(HARDWARE["dgx-a100"], transformer_workload("gpt-1.7b"))


def _scenario(style: str, recompute: str = "full", devices=(1,)) -> Scenario:
    return Scenario(devices=list(devices), micro_batch=1, accumulation=MICRO_BATCHES,
                    layout=ScenarioLayout(recompute=recompute, recompute_style=style))


def test_predict_early_stop_saves_the_down_projection_by_hand():
    profile = _gpt()
    # no reference run: the curve is the shape's own micro-step at efficiency 0.73, which the
    # pin recovers on one device (docs/model.md §22)
    whole = predict(profile, _scenario("whole-forward"))[0]
    stop = predict(profile, _scenario("early-stop"))[0]
    assert _saved_s(0.73) == pytest.approx(0.0212175, rel=1e-5)  # 21.22 ms per step
    assert whole.compute_s - stop.compute_s == pytest.approx(_saved_s(0.73), rel=1e-6)
    assert stop.samples_per_s > whole.samples_per_s
    assert stop.memory_bytes == whole.memory_bytes  # the same tensors are kept
    # the default is today's meaning: a scenario that does not say is whole-forward
    default = predict(profile, Scenario(devices=[1], micro_batch=1, accumulation=MICRO_BATCHES,
                                        layout=ScenarioLayout(recompute="full")))[0]
    assert default == whole


@pytest.mark.parametrize("recompute", ["none", "selective"])
def test_the_style_is_ignored_unless_recompute_is_full(recompute):
    profile = _gpt()
    assert (predict(profile, _scenario("early-stop", recompute))
            == predict(profile, _scenario("whole-forward", recompute)))


def test_plan_uses_the_framework_style_and_names_it_in_every_row():
    shape = transformer_workload("gpt-1.7b").transformer
    hw = HARDWARE["dgx-a100"]

    def rows(style):
        out = plan(shape, hw, [1], MICRO_BATCHES, efficiency=0.5, top=None, include_unfit=True,
                   recompute_style=style)
        return {(r.micro_batch, r.recompute): r for r in out}

    whole, stop = rows("whole-forward"), rows("early-stop")
    assert {r.recompute_style for r in whole.values()} == {"whole-forward"}
    assert {r.recompute_style for r in stop.values()} == {"early-stop"}
    assert set(whole) == set(stop)  # the style is not a searched knob: the same layouts
    saved = (whole[1, "full"].breakdown_s["compute_s"] - stop[1, "full"].breakdown_s["compute_s"])
    assert saved == pytest.approx(_saved_s(0.5), rel=1e-9)
    for key in ((1, "none"), (1, "selective"), (2, "none")):
        assert whole[key].step_time_s == stop[key].step_time_s
    assert stop[1, "full"].layout(MICRO_BATCHES).recompute_style == "early-stop"
    with pytest.raises(ScalesimError, match="recompute_style"):
        plan(shape, hw, [1], MICRO_BATCHES, recompute_style="sometimes")


def test_the_scalar_path_refuses_a_layout_of_another_style():
    shape = transformer_workload("gpt-1.7b").transformer
    setting = Setting(shape, HARDWARE["dgx-a100"], 2, recompute_style="early-stop")
    layout = ParallelLayout(global_batch=2, micro_batch=1, recompute="full")
    with pytest.raises(ScalesimError, match="recompute_style whole-forward != the plan's "
                       "early-stop"):
        evaluate_layout(setting, layout)
    stop = evaluate_layout(setting, layout.model_copy(update={"recompute_style": "early-stop"}))
    whole = evaluate_layout(Setting(shape, HARDWARE["dgx-a100"], 2), layout)
    assert float(whole.compute_s - stop.compute_s) == pytest.approx(_saved_s(0.73), rel=1e-9)


def test_the_planner_of_a_scenario_and_its_split_remedy_keep_the_style():
    profile = _gpt()
    scenario = _scenario("early-stop", devices=(8,))
    rows = plan_at(profile, scenario, 8, 16, top=3)
    assert all(r.recompute_style == "early-stop" for r in rows)
    assert scenario_of_row(scenario, rows[0]).layout.recompute_style == "early-stop"


def test_sweep_rows_take_the_base_scenario_style():
    profile = _gpt()
    axes = {"accumulation": [MICRO_BATCHES]}
    whole = sweep(profile, _scenario("whole-forward"), axes).columns["compute_s"][0]
    stop = sweep(profile, _scenario("early-stop"), axes).columns["compute_s"][0]
    assert whole - stop == pytest.approx(_saved_s(0.73), rel=1e-6)


def test_one_schema_one_knob():
    """Both layout schemas carry the same field (type, default, description), and the knob
    table ties it to its flag and link key (docs/bounds.md is that table)."""
    specs = [model.model_json_schema()["properties"]["recompute_style"]
             for model in (ParallelLayout, ScenarioLayout)]
    assert specs[0] == specs[1]
    assert specs[0]["enum"] == list(RECOMPUTE_STYLES) == ["whole-forward", "early-stop",
                                                            "op-sac"]
    assert specs[0]["default"] == "whole-forward"
    knob = LAYOUT_KNOB_BY_FIELD["recompute_style"]
    assert (knob.flag, knob.url_key, knob.choices) == ("--recompute-style", "rs",
                                                       RECOMPUTE_STYLES)
    assert "| `recompute_style` | --recompute-style | rs |" in markdown_table()
    with pytest.raises(ScalesimError, match="choice"):
        knob.bound  # noqa: B018 - a choice has no numeric bounds
    assert "rs" in AppState.model_fields and AppState().rs == "whole-forward"


# ------------------------------------------------------------------ CLI

def _cli(capsys, *args: str):
    """``scalesim *args`` in this process: its returncode, stdout and stderr."""
    return run_cli_as_process(capsys, list(args))


@pytest.mark.parametrize("command", ["predict", "sweep", "plan", "decide", "goal"])
def test_cli_help_shows_the_flag(capsys, command):
    out = _cli(capsys, command, "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert "--recompute-style {whole-forward,early-stop,op-sac}" in text
    assert "use_reentrant=False" in text and "ignored unless recompute is full" in text


def test_cli_predict_and_plan_change_by_the_hand_computed_amount(capsys):
    args = ["--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--devices", "1", "--batch", "1",
            "--accumulation", str(MICRO_BATCHES), "--recompute", "full", "--json"]
    whole = json.loads(_cli(capsys, "predict", *args).stdout)[0]
    stop = json.loads(_cli(capsys, "predict", *args, "--recompute-style", "early-stop").stdout)[0]
    assert whole["compute_s"] - stop["compute_s"] == pytest.approx(_saved_s(0.73), rel=1e-6)
    text = _cli(capsys, "predict", *args[:-1], "--recompute-style", "early-stop").stdout
    assert "recompute full (early stop)" in text
    ignored = _cli(capsys, "predict", *args[:-3], "--recompute", "none", "--recompute-style",
                   "early-stop")
    assert "recompute style early-stop ignored: recompute is none, not full" in ignored.stdout
    bad = _cli(capsys, "predict", *args, "--recompute-style", "maybe")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "recompute-style" in bad.stderr

    plan_args = ["--model", "gpt-1.7b", "--hardware", "dgx-a100", "--devices", "8",
                 "--global-batch", "64", "--top", "3"]
    rows = json.loads(_cli(capsys, "plan", *plan_args, "--json", "--recompute-style",
                           "early-stop").stdout)["layouts"]
    assert all(r["recompute_style"] == "early-stop" for r in rows)
    out = _cli(capsys, "plan", *plan_args, "--recompute-style", "early-stop").stdout
    assert out.splitlines()[2].startswith(  # after the workload and hardware lines
        "full recompute: early stop (PyTorch >= 2.1 non-reentrant checkpoint")


# ------------------------------------------------------------------ share links and the app

GPT_LINK = {"v": "3", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64", "tp": "2", "pp": "2",
            "sp": "1", "mb": "1", "acc": "8", "rec": "full"}


def test_a_link_with_the_style_round_trips_as_v4_and_predicts_it():
    (state, profile), (state2, profile2) = link_round_trip(GPT_LINK, "rs", "early-stop", 4)
    assert state.rs == "whole-forward"
    assert encode_query(state, profile)["v"] == "3"  # no style: still a v3 link
    scenario, _ = build_scenario(state2, profile2)
    assert scenario.layout.recompute_style == "early-stop"
    rows = make_plan(profile2, state2).rows
    assert rows == predict(profile2, scenario)
    before = make_plan(profile, state).rows
    assert all(a.compute_s < b.compute_s for a, b in zip(rows, before, strict=True))


def test_old_links_keep_their_meaning():
    state, _, _ = decode_query(GPT_LINK)  # a v3 link omits the style: whole forward
    scenario, _ = build_scenario(state, preset_profile(state))
    assert scenario.layout.recompute_style == "whole-forward"
    # a v3 link cannot carry the style: ignored and said so; a v2 link has no layout at all
    state3, _, messages = decode_query({**GPT_LINK, "rs": "early-stop"})
    assert state3.rs == "whole-forward" and state3.tp == 2
    assert messages == ["ignored rs: a v3 link has no recompute style (full recompute reruns "
                        "the whole forward)"]
    state2, _, messages = decode_query({"v": "2", "strat": "zero3", "rs": "early-stop"})
    assert state2.rs == "whole-forward" and "ignored rs" in messages[0]
    # a v4 link that omits it is whole forward too; a bad value falls back alone
    assert decode_query({**GPT_LINK, "v": "4"})[0].rs == "whole-forward"
    state4, _, messages = decode_query({**GPT_LINK, "v": "4", "rs": "<b>"})
    assert state4.rs == "whole-forward" and state4.tp == 2 and len(messages) == 1


def test_the_style_on_a_parameter_count_or_without_full_recompute_is_noted_not_refused():
    state = AppState(rs="early-stop")  # bert-large, a parameter count
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.layout is None
    # the page's note names the controls (was 'recompute style early-stop ignored: ...')
    assert any("Recompute style early-stop ignored" in n and "parameter count" in n
               for n in notes)
    state, profile, _ = decode_query({**GPT_LINK, "v": "4", "rec": "none", "rs": "early-stop"})
    _, notes = build_scenario(state, profile)
    # was 'recompute style early-stop ignored: recompute is none, not full'
    assert ("Recompute style early-stop ignored: Activation recompute is none, not full"
            in notes)


def test_the_app_control_sets_the_style_and_the_link():
    at, before, state = select_into_link(GPT_LINK, "k_rs", "rs", "whole-forward", "early-stop", 4)
    profile = preset_profile(state)
    after = make_plan(profile, state)  # one plan for the focus and the unit (2-3 s each)
    faster = after.focus
    assert faster.samples_per_s > make_plan(profile, before).focus.samples_per_s
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Throughput ({after.unit}/s)"] == throughput(faster.samples_per_s)
