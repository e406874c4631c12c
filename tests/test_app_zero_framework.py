"""The planner's ZeRO framework control (share link v10, ``zfw``; session 25).

`predict --zero-framework deepspeed` had no counterpart in the app: every ZeRO what-if a manager
opened ran as FSDP / Megatron-Core, whatever the sender's team used.
"""

from __future__ import annotations

import json

from app_harness import link_round_trip, open_app, select_into_link
from cli_harness import run_cli
from scalesim.app.plan import build_scenario, make_plan
from scalesim.app.state import AppState, decode_query, preset_profile


def test_a_deepspeed_link_is_v10_and_decodes_to_the_same_state():
    (state, _), (state2, _) = link_round_trip({"v": "2", "strat": "zero2", "acc": "4"}, "zfw",
                                              "deepspeed", 10)
    assert state.zfw == "fsdp" and state2.zfw == "deepspeed"


def test_an_older_link_opens_as_fsdp_and_says_its_zfw_is_ignored():
    state, _, messages = decode_query({"v": "9", "strat": "zero2", "zfw": "deepspeed"})
    assert state.zfw == "fsdp" and state.strat == "zero2"
    assert messages == ["ignored zfw: a v9 link has no ZeRO framework choice (ZeRO runs as FSDP "
                        "/ Megatron-Core)"]


def test_the_planner_predicts_deepspeed_as_predict_does(capsys):
    """ZeRO-2 with 4 micro-steps on 16 GPUs (BERT-large on a2-highgpu-8g): DeepSpeed all-reduces
    in every micro-step and gathers the parameters after the step, exposed; FSDP SHARD_GRAD_OP
    gathers and reduce-scatters per block (docs/model.md §4). The app's focus row is predict's
    row with --zero-framework, to the last digit, and the two frameworks differ."""
    rows = {}
    for framework in ("fsdp", "deepspeed"):
        state = AppState(strat="zero2", acc=4, zfw=framework, dmax=16, focus=16)
        plan = make_plan(preset_profile(state), state)
        assert plan.scenario.zero_framework == framework
        code, out, err = run_cli(capsys, ["predict", "--devices", "16", "--strategy", "zero2",
                                          "--accumulation", "4", "--zero-framework", framework,
                                          "--json"])
        assert code == 0, err
        (row,) = json.loads(out)
        assert plan.focus.step_time_s == row["step_time_s"]
        rows[framework] = plan.focus.step_time_s
    assert rows["deepspeed"] != rows["fsdp"]


def test_settings_that_change_nothing_are_noted_not_refused():
    for state, note in (
        # by the page's controls and choices (session 51; were the CLI's 'ZeRO framework
        # deepspeed ignored: strategy ddp shards nothing', 'gradient sync once-per-step ...')
        (AppState(zfw="deepspeed"), "ZeRO framework DeepSpeed with Strategy DDP is DeepSpeed's "
         "engine without ZeRO (stage 0: its own all-reduce and optimizer step, nothing sharded)"),
        (AppState(strat="zero3", acc=4, zfw="deepspeed", gs="once-per-step"),
         "Gradient sync once-per-step ignored: DeepSpeed stage 2/3 reduce gradients in every "
         "micro-step (no_sync is FSDP's)"),
    ):
        scenario, notes = build_scenario(state, preset_profile(state))
        assert note in notes, notes
        assert scenario.grad_sync == "every-micro-step"


def test_the_sidebar_control_sets_the_link_and_is_off_for_ddp():
    at = open_app({"v": "2"})
    assert at.sidebar.selectbox(key="k_zfw").disabled
    at, _, _ = select_into_link({"v": "2", "strat": "zero3"}, "k_zfw", "zfw", "fsdp",
                                "deepspeed", 10)
    assert not at.sidebar.selectbox(key="k_zfw").disabled


def test_deepspeed_under_ddp_makes_no_v10_link():
    """Session-25 audit: the framework control is off under DDP, yet DeepSpeed left in it made
    the link v10 for a field that changes nothing."""
    from scalesim.app.state import encode_query

    state = AppState(zfw="deepspeed")
    params = encode_query(state, preset_profile(state))
    assert params["v"] == "2" and "zfw" not in params
    _, notes = build_scenario(AppState(zfw="deepspeed", gs="once-per-step", acc=4),
                              preset_profile(state))
    assert not any("DeepSpeed stage 2/3" in n for n in notes)
