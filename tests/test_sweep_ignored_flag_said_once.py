"""A flag some of a sweep's rows ignore is said once, naming those rows, even where predict's
words of each row's scenario name the row's own value (``--recompute-style early-stop`` beside
``--recompute-values none,selective,full``: predict says 'recompute is none, not full' of one
row and 'recompute is selective, not full' of the other). Before (session 42): one note per
value, the same flag said twice ('rows at recompute none: ...', 'rows at recompute selective:
...'); ``--grad-sync once-per-step`` beside ``--strategy-values ddp,zero1,zero3`` the same.
The rows themselves are predict's of their scenario: the ignored flag changes no number."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

LLAMA = ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
         "--global-batch", "64", "--accumulation", "8", "--tp", "2", "--format", "json"]
BERT = ["sweep", "--workload", "bert-large", "--devices", "16", "--format", "json"]


def _ignored(err: str, flag: str) -> list[str]:
    return [line for line in err.splitlines() if f"{flag} ignored" in line]


@pytest.mark.parametrize(("style", "values", "note"), [
    ("early-stop", "none,selective,full",
     "note: rows at recompute none, selective: recompute style early-stop ignored: recompute "
     "is not full"),
    ("op-sac", "none,selective,full",
     "note: rows at recompute none, full: recompute style op-sac ignored: recompute is not "
     "selective"),
    # every row ignores it: said as predict says it of a scenario, no rows named
    ("early-stop", "none,selective",
     "note: recompute style early-stop ignored: recompute is not full"),
])
def test_a_recompute_style_some_rows_ignore_is_said_once(capsys, style, values, note):
    code, out, err = run_cli(capsys, [*LLAMA, "--recompute-style", style,
                                      "--recompute-values", values])
    assert code == 0, err
    assert _ignored(err, f"recompute style {style}") == [note], err
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    for row in json.loads(out):  # each row: predict of its scenario (the style as it runs)
        scenario = Scenario(devices=[8], global_batch=64, accumulation=8, layout=ScenarioLayout(
            tp=2, recompute=row["recompute"], recompute_style=style))
        want = predict(profile, scenario)[0]
        for name in ("step_time_s", "memory_bytes", "compute_s"):
            assert row[name] == pytest.approx(getattr(want, name), rel=1e-5), (row, name)


def test_grad_sync_once_per_step_that_ddp_and_zero1_ignore_is_said_once(capsys):
    code, out, err = run_cli(capsys, [*BERT, "--grad-sync", "once-per-step", "--accumulation",
                                      "2", "--strategy-values", "ddp,zero1,zero3"])
    assert code == 0, err
    assert _ignored(err, "--grad-sync once-per-step") == [
        "note: rows at strategy ddp, zero1: --grad-sync once-per-step ignored: ddp and zero1 "
        "reduce gradients once per step anyway (it applies to ZeRO-2/3)"], err
    profile = resolve_profile(None, None, "bert-large")
    rows = json.loads(out)
    assert [r["strategy"] for r in rows] == ["ddp", "zero1", "zero3"]
    for row in rows:
        want = predict(profile, Scenario(devices=[16], accumulation=2, strategy=row["strategy"],
                                         grad_sync="once-per-step"))[0]
        assert row["step_time_s"] == pytest.approx(want.step_time_s, rel=1e-5), row


def test_predict_still_names_the_scenarios_own_value(capsys):
    """predict's note of one scenario keeps naming its recompute and strategy."""
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--tp", "2",
                                      "--recompute-style", "early-stop", "--recompute",
                                      "selective"])
    assert code == 0, err
    assert "recompute style early-stop ignored: recompute is selective, not full" in out + err
    code, out, err = run_cli(capsys, ["predict", "--workload", "bert-large", "--devices", "16",
                                      "--strategy", "zero1", "--grad-sync", "once-per-step",
                                      "--accumulation", "2"])
    assert code == 0, err
    assert "--grad-sync once-per-step ignored: strategy zero1 reduces gradients" in out + err
