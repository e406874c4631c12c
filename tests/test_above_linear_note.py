"""Efficiency above 100 % is the optimizer work sharding removes from each device (docs/model.md
§7). predict's note said '1/dp' on every layout; the app's headline, which shows 105.6 % for
gpt-7b under ZeRO-3 on 8 A100 40GB, said nothing (session 39). Both now say the share in one
set of words (``predict.above_linear_note``)."""

from __future__ import annotations

from cli_harness import run_cli
from scalesim.app.plan import headline, make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile

from scalesim.predict import above_linear_note, predict
from scalesim.profiles import load_hardware, load_workload, profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout


def _rows(hardware: str, workload: str, **scenario):
    return predict(profile_from_presets(load_hardware(hardware), load_workload(workload)),
                   Scenario(**scenario))


def test_predict_names_the_share_of_the_optimizer_state_each_device_updates(capsys):
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--workload",
                                      "gpt-7b", "--strategy", "zero1", "--devices", "1,8,16"])
    assert code == 0, err
    rows = _rows("dgx-a100", "gpt-7b", devices=[1, 8, 16], strategy="zero1")
    top = max(rows, key=lambda r: r.efficiency)
    assert top.devices == 8 and top.efficiency > 1.0
    note = (f"efficiency above 100% (up to {top.efficiency:.1%} at 8 devices): each device "
            "updates 1/8 of the optimizer state (ZeRO shards it over 8 ranks), a step one device "
            "takes for the whole model (docs/model.md §7)")
    assert above_linear_note(rows) == note and f"note: {note}" in out.splitlines()


def test_hybrid_sharding_and_a_split_say_their_own_share():
    # 16 devices, states sharded over groups of 8 (HSDP): each updates 1/8, not 1/16
    hsdp = _rows("dgx-h100", "llama3-8b", devices=[16, 32], strategy="zero3",
                 layout=ScenarioLayout(shard_group=8))
    assert "each device updates 1/8 of the optimizer state (ZeRO shards it over 8 ranks)" in (
        above_linear_note(hsdp))
    # tp 2 on 8 GPUs: dp = 8 / 2 = 4 ranks shard each tp slice's state. ZeRO-2 (FSDP's 28 B
    # step): 103.0 %. Megatron-Core's ZeRO-1 here was above linear until session 47 counted its
    # default gradient-norm clip (34 -> 46 B a parameter it updates, docs/model.md §4): 98.0 %
    split = _rows("dgx-h100", "gpt-7.5b", devices=[2, 8], strategy="zero2",
                  layout=ScenarioLayout(tp=2))
    assert split[1].efficiency > 1.0 and split[1].dp == 4
    megatron = _rows("dgx-h100", "gpt-7.5b", devices=[2, 8], strategy="zero1",
                     layout=ScenarioLayout(tp=2))
    assert megatron[1].efficiency < 1.0 and above_linear_note(megatron) is None
    assert "each device updates 1/4 of its tp 2 x pp 1 slice's optimizer state (ZeRO shards " \
           "it over 4 ranks)" in above_linear_note(split)


def test_no_note_at_or_below_linear():
    rows = _rows("dgx-a100", "gpt-7b", devices=[1, 8], strategy="ddp")
    assert max(r.efficiency for r in rows) <= 1.0 and above_linear_note(rows) is None


def test_the_app_headline_and_report_say_why_with_the_same_words():
    state = default_state().model_copy(
        update={"wl": "gpt-7b", "strat": "zero3", "dmax": 8, "mb": 1, "focus": 8})
    plan = make_plan(preset_profile(state), state)
    assert plan.focus.fits and plan.focus.efficiency > 1.0
    note = above_linear_note([r for r in plan.rows if r.fits])
    assert note.startswith(f"efficiency above 100% (up to {plan.focus.efficiency:.1%} at 8 "
                           "devices): each device updates 1/8 of the optimizer state")
    assert headline(plan)["above_linear"] == note
    assert "Efficiency above 100%" in report_html(plan, "http://x")
    plain = make_plan(preset_profile(default_state()), default_state())
    assert "above_linear" not in headline(plain)
