"""The remedy "run the layers' weight matmuls in fp8" (``remedies`` key ``fp8``; docs/model.md
§10 and §13 "fp8"): the scenario at ``precision`` fp8, its gain predicted by the model like every
other remedy's, shared by ``rank_remedies``, ``decide`` and the app's scenario B; not applicable,
with the reason in one clause, on CPU processes (``tests/test_cpu_words.py``), with timings
measured at their own precision, a parameter-count workload, a scenario in fp8 already, or a
GPU with no fp8 peak."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.decision import decide
from scalesim.profiles import default_profile, load_profile, resolve_profile
from scalesim.remedies import FP8_TITLE, rank_remedies
from scalesim.schemas import Scenario

ZERO3 = Scenario(devices=[8], micro_batch=1, strategy="zero3")


def _fp8_remedy(profile, scenario, devices):
    now, ranked = rank_remedies(profile, scenario, devices)
    return now, next(r for r in ranked if r.key == "fp8")


def test_the_gain_is_predicts_fp8_step_and_only_compute_moves():
    """Llama 3 8B under ZeRO-3 on 8 H100s: the remedy's run is ``predict`` at precision fp8
    (the same scenario but that field), the exchange is unchanged (gradients stay 16-bit),
    compute and the straggler wait (a share of the micro-step) shrink; the gain is the step
    ratio, +35.7 % (docs/model.md §10)."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    now, r = _fp8_remedy(profile, ZERO3, 8)
    assert r.scenario == ZERO3.model_copy(update={"precision": "fp8"})
    assert r.title == FP8_TITLE and r.applicable and r.verdict == "remedy"
    after = r.prediction
    assert after.exposed_comm_s == pytest.approx(now.exposed_comm_s, rel=1e-12)
    assert now.step_time_s - after.step_time_s == pytest.approx(
        now.compute_s - after.compute_s + now.straggler_s - after.straggler_s, rel=1e-9)
    assert r.gain == pytest.approx(now.step_time_s / after.step_time_s - 1, rel=1e-12)
    assert r.gain == pytest.approx(0.357, abs=0.001)
    assert "loss curve" in r.reason and "--fp8-format" in r.reason  # the caveat: how, and check


def test_it_matches_predict_with_precision_fp8_on_the_command_line(capsys):
    """The remedy and ``predict --precision fp8`` are one model: the same step time."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    _, r = _fp8_remedy(profile, ZERO3, 8)
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--batch", "1",
                                      "--strategy", "zero3", "--precision", "fp8", "--json"])
    assert code == 0, err
    assert json.loads(out)[0]["step_time_s"] == pytest.approx(r.prediction.step_time_s,
                                                              rel=1e-12)


def test_decide_offers_it_with_nothing_to_buy(capsys):
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    card = decide(profile, ZERO3.model_copy(update={"train_samples": 1e6}), 8)
    option = next(o for o in card.options if o.key == "fp8")
    _, r = _fp8_remedy(profile, ZERO3, 8)
    assert option.throughput_gain == pytest.approx(r.gain, rel=1e-12)
    assert option.extra_usd_per_hour == 0.0 and option.title == FP8_TITLE
    code, out, err = run_cli(capsys, ["decide", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--batch", "1", "--strategy",
                                      "zero3", "--json"])
    assert code == 0, err
    assert "fp8" in [o["key"] for o in json.loads(out)["options"]]
    # in fp8 already: nothing to offer
    card = decide(profile, ZERO3.model_copy(update={"precision": "fp8"}), 8)
    assert all(o.key != "fp8" for o in card.options)


@pytest.mark.parametrize("hardware, workload, precision, reason", [
    ("dgx-h100", "llama3-8b", "fp8", "the scenario runs its weight matmuls in fp8 already"),
    ("dgx-a100", "llama3-8b", "bf16", "no fp8 peak is known for 'A100-SXM4 80GB' (no fp8 tensor "
     "cores, or a device the datasheet tables do not list)"),
    ("dgx-h100", "bert-large", "bf16", "workload 'bert-large' is a parameter count, not a "
     "transformer shape: no weight matmuls to run in fp8"),
])
def test_not_applicable_with_the_reason(hardware, workload, precision, reason):
    profile = resolve_profile(None, hardware, workload)
    _, r = _fp8_remedy(profile, ZERO3.model_copy(update={"precision": precision}), 8)
    assert (r.applicable, r.verdict, r.gain, r.prediction) == (False, "not applicable", 0.0,
                                                               None)
    assert r.reason == reason


def test_not_applicable_where_the_timings_ran_at_their_own_precision():
    """A measured profile (the H200 block calibration): its timings ran at their own precision,
    the rule of ``layout_predict.check_precision``; the default profile's parameter count says
    why in its own words."""
    measured = load_profile(H200)
    _, r = _fp8_remedy(measured, Scenario(devices=[1]), 1)
    assert not r.applicable
    assert r.reason == (f"profile '{measured.name}' holds timings measured at their own "
                        "precision, which the model cannot rerun in another")
    _, r = _fp8_remedy(default_profile(), Scenario(devices=[8]), 8)
    assert not r.applicable and "parameter count" in r.reason


def test_a_published_reference_is_a_run_at_its_own_precision(tmp_path, capsys):
    """A transformer workload that carries a published run's throughput (``reference``): that
    run ran at its own precision and attention kernel (fp8 as often as not on H100s), so fp8 on
    top would count its gain twice: the remedy is not applicable, predict and the sweep axis
    refuse it in one line, with the fix (drop the reference); the attention kernel alike. (Was
    recommended: "Run the layers' weight matmuls in fp8 ...: finishes -24 %".)"""
    from scalesim import presets

    workload = presets.transformer_workload("llama3-8b").model_dump(mode="json")
    workload.update(name="published-8b", reference=[{
        "device_name": "H100-SXM5 80GB", "samples_per_s": 1.6, "micro_batch": 1, "devices": 8,
        "strategy": "zero3", "includes_communication": True, "source": "an fp8 run"}])
    path = tmp_path / "published.json"
    path.write_text(json.dumps(workload))
    profile = resolve_profile(None, "dgx-h100", str(path))
    _, r = _fp8_remedy(profile, ZERO3, 8)
    assert not r.applicable
    assert r.reason == (f"profile '{profile.name}' holds a published run's throughput (the "
                        "reference of workload 'published-8b'), at that run's own precision, "
                        "which the model cannot rerun in another")
    argv = ["--workload", str(path), "--hardware", "dgx-h100", "--devices", "8", "--batch", "1"]
    for extra, words in ((["predict", "--precision", "fp8"], "--precision fp8: "),
                         (["sweep", "--precision-values", "bf16,fp8"],
                          "--precision-values fp8: "),
                         (["predict", "--attention-kernel", "flash2"],
                          "--attention-kernel flash2: ")):
        code, _, err = run_cli(capsys, [extra[0], *argv, *extra[1:]])
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert words + f"profile '{profile.name}' holds a published run's throughput" in err
        assert err.strip().endswith("or drop the reference from the workload (its transformer "
                                    "shape then gives the compute)")



@pytest.mark.parametrize("flags", [("--precision", "fp8"), ("--attention-kernel", "flash2")])
@pytest.mark.parametrize("other", ["published", "llama3-8b", "llama3-70b"])
def test_plan_refuses_a_published_runs_own_model_and_prices_another_as_predict_does(
        tmp_path, capsys, flags, other):
    """A saved profile holding a published run's throughput (a workload's ``reference``):
    fp8 or another kernel is refused for that model by ``predict`` and ``plan`` alike (also
    named as the ``llama3-8b`` preset, its architecture, which carries no reference: the words
    then do not say it does), and for another model (``--workload llama3-70b``: its compute
    estimated from its shape) priced by both. Was: ``plan --profile`` checked the saved profile
    itself, and refused llama3-70b where predict priced it; predict said "the reference of
    workload 'llama3-8b'"."""
    from scalesim import presets

    workload = presets.transformer_workload("llama3-8b").model_dump(mode="json")
    workload.update(name="published-8b", reference=[{
        "device_name": "H100-SXM5 80GB", "samples_per_s": 1.6, "micro_batch": 1, "devices": 8,
        "strategy": "zero3", "includes_communication": True, "source": "an fp8 run"}])
    (tmp_path / "published.json").write_text(json.dumps(workload))
    profile = resolve_profile(None, "dgx-h100", str(tmp_path / "published.json"))
    path = tmp_path / "profile.json"
    path.write_text(profile.model_dump_json())
    planned = str(tmp_path / "published.json") if other == "published" else other
    common = ["--profile", str(path), "--workload", planned, "--devices", "16", *flags]
    predicted = run_cli(capsys, ["predict", *common, "--batch", "1"])
    planned_out = run_cli(capsys, ["plan", *common, "--global-batch", "64", "--top", "1"])
    for code, out, err in (predicted, planned_out):
        if other != "llama3-70b":
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "holds a published run's throughput (the reference of " in err
            assert "workload 'llama3-8b'" not in err
        else:
            assert code == 0, err
            assert ("precision: fp8" if flags[1] == "fp8" else "attention: flash2 kernel") in out

# ------------------------------------------------------------------------------------ the app

LINK = {"v": "2", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "strat": "zero3", "mb": "1",
        "b": "fp8"}


def test_the_app_choice_list_takes_the_key_and_labels_it():
    from typing import get_args

    from scalesim.app.planner_page import B_LABELS
    from scalesim.app.state import AppState, RemedyChoice

    assert "fp8" in get_args(RemedyChoice) and set(B_LABELS) == set(get_args(RemedyChoice))
    assert AppState(b="fp8").b == "fp8"


def test_a_link_with_the_remedy_as_scenario_b_opens_and_predicts_it():
    from app_harness import open_app
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query, encode_query

    state, profile, messages = decode_query({**LINK, "v": "12"})
    assert messages == [] and state.b == "fp8"
    plan = make_plan(profile, state)
    assert plan.b_label == FP8_TITLE and plan.b_scenario.precision == "fp8"
    assert plan.b_focus.samples_per_s > 1.2 * plan.focus.samples_per_s
    params = encode_query(state, profile)
    assert (params["v"], params["b"]) == ("12", "fp8")  # the version that has the choice
    assert decode_query(params)[0] == state
    at = open_app({**LINK, "v": "12", "tab": "ab"})
    assert not any("does not apply here" in i.value for i in at.info)
    at = open_app({**LINK, "v": "12", "pr": "fp8", "tab": "ab"})
    assert any("does not apply here: the scenario runs its weight matmuls in fp8 already" in
               i.value for i in at.info), [i.value for i in at.info]
