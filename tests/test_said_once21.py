"""Session 21 (refactor21): each thing said once, outputs unchanged. The decision card holds
its throughput unit (callers stop passing it); diagnose's fit builds its problem and the
measured layout once; the runs' report asks the gain a decision needs once; one helper sizes
the count column of predict's table and diagnose's runs tables."""

from __future__ import annotations

import argparse
import dataclasses

import diagnose_cases as cases
import numpy as np
import pytest
from cli_harness import run_cli

from scalesim import runs_diagnosis
from scalesim.bounds import flag_list_type, flag_type
from scalesim.cli.cmd_predict import notes_before
from scalesim.decision import card_rows, decide
from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.diagnosis import least_decisive_gain, model_remedies, shown_gain
from scalesim.errors import ScalesimError, file_path, flag_error
from scalesim.figures import count_columns, throughput
from scalesim.fit_runs import fit_problem, fit_runs, measured_layout
from scalesim.money import usd_type
from scalesim.profiles import default_profile, resolve_profile
from scalesim.runs import runs_from_records
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Scenario

SEQUENCES = "sequences of 8192 tokens"  # llama3-70b's sample_unit


def _llama_card():
    """llama3-70b at tp 8, pp 2 on 64 H100s does not fit: its options show their own
    throughput, in the workload's unit (``card_rows``)."""
    profile = resolve_profile(None, "dgx-h100", "llama3-70b")
    scenario = Scenario.model_validate({"devices": [64], "train_samples": 1e6, "layout": {"tp": 8, "pp": 2}})
    return profile, decide(profile, scenario, 64)


def test_the_card_carries_its_workloads_unit_and_its_rows_say_it():
    profile, card = _llama_card()
    assert card.unit == profile.workload.sample_unit == SEQUENCES
    assert "unit" not in card.to_dict()  # the JSON's keys are unchanged
    shown = [o for o in card.options if o.throughput_gain is None]
    assert shown, "today's layout fits: no option shows its own throughput"
    rows = card_rows(card)[1:]
    for o, row in zip(card.options, rows, strict=True):
        if o.throughput_gain is None:
            assert row["throughput"] == f"{throughput(o.samples_per_s)} {SEQUENCES}/s"
    # the rows read the card's unit, not a default: another unit is said in its place
    other = card_rows(dataclasses.replace(card, unit="images"))[1:]
    for o, row in zip(card.options, other, strict=True):
        if o.throughput_gain is None:
            assert row["throughput"] == f"{throughput(o.samples_per_s)} images/s"


def test_the_fit_reads_its_layout_and_setup_off_one_problem():
    """``fit_problem`` returns one object: the problem with the measured layout it was built
    on, its gradient bytes, whether rank times are measured and the setup's notes; the fit's
    step times are the problem's residuals on that one layout (log of model over measured)."""
    runs = runs_from_records(cases.stragglers(), "stragglers")
    problem = fit_problem(runs, 336e6, 2.0)
    assert problem.gradient_bytes == 336e6 * 2.0
    assert problem.rank_times_measured  # the stragglers case carries rank_step_times_s
    want = measured_layout(runs)
    for name in ("devices", "nodes", "micro_batch", "accumulation", "straggler_delay_s"):
        np.testing.assert_array_equal(getattr(problem.layout, name), getattr(want, name))
    assert np.any(problem.layout.straggler_delay_s > 0)  # the rank times' spread is in it
    fit = fit_runs(runs, 336e6, 2.0)
    assert fit.rank_times_measured and fit.gradient_bytes == problem.gradient_bytes
    n = len(runs.step_time_s)
    np.testing.assert_allclose(
        problem.residuals(fit.x)[:n], np.log(1.0 + fit.residuals_rel), rtol=1e-12, atol=1e-15
    )
    assert fit.notes[: len(problem.notes)] == problem.notes  # the fit's notes come after
    again = fit_problem(runs, 336e6, 2.0)
    assert again.notes == problem.notes  # fitting did not add to the problem's own notes


def test_one_runs_report_asks_the_decisive_gain_once(monkeypatch):
    """The runs' report's threshold and its first remedy's are one figure, asked once: the
    report passes it to ``model_remedies`` (which asks it itself only when not given)."""
    calls = []

    def counted(profile, scenario):
        calls.append(1)
        return least_decisive_gain(profile, scenario)

    monkeypatch.setattr(runs_diagnosis, "least_decisive_gain", counted)
    report = diagnose_runs(runs_from_records(cases.scales_well(), "scales well"))
    assert len(calls) == 1
    # docs/diagnose.md; 0.03 before session 56's DDP bucket copies moved the validation's median
    assert report.decisive_gain == 0.028 and report.first_remedy is None


def test_a_given_decisive_gain_is_the_one_model_remedies_holds_a_first_remedy_to():
    """``model_remedies``' first remedy gains at least the given figure: none under a gain no
    remedy reaches, the best helping one under zero; without it, the model's median error."""
    profile, scenario = default_profile(), Scenario(devices=[16])
    first, remedies = model_remedies(profile, scenario, 16, "inter_server", decisive_gain=0.0)
    assert first is not None and shown_gain(first) >= 0.0
    best = max(shown_gain(r) for r in remedies if r.helps)
    none, _ = model_remedies(profile, scenario, 16, "inter_server", decisive_gain=best + 0.01)
    assert none is None
    default, _ = model_remedies(profile, scenario, 16, "inter_server")
    assert (
        default
        == model_remedies(
            profile, scenario, 16, "inter_server", decisive_gain=least_decisive_gain(profile, scenario)
        )[0]
    )


def test_one_helper_sizes_the_count_columns_of_predict_and_diagnose(capsys, tmp_path):
    """``figures.count_columns``: at least 7 and 5 wide, as wide as a CPU calibration's longer
    header; predict's table and diagnose's runs table start with those two columns."""
    assert count_columns(GPU_NOUNS) == (("devices", 7), ("nodes", 5))
    assert count_columns(CPU_NOUNS) == (("processes", 9), ("hosts", 5))
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,8,16"])
    assert code == 0
    head = next(line for line in out.splitlines() if line.lstrip().startswith("devices"))
    assert head.startswith("devices nodes ")
    assert any(line.startswith("     16     2 ") for line in out.splitlines())  # 7 and 5 wide
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv(cases.inter_server()))
    code, out, _ = run_cli(capsys, ["diagnose", str(path)])
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("devices nodes   samples/s") for line in lines)
    assert any(line.startswith("     32     4 ") for line in lines)


def test_one_place_turns_a_values_error_into_the_flags_error():
    """``errors.flag_error``: a ScalesimError about the value it names becomes argparse's error
    without the name (argparse names the flag); the flag readers all go through it."""
    with pytest.raises(argparse.ArgumentTypeError) as caught, flag_error():
        raise ScalesimError("value: 'x' is not a number")
    assert str(caught.value) == "'x' is not a number"
    with pytest.raises(argparse.ArgumentTypeError) as caught, flag_error("path"):
        raise ScalesimError("path: expected a file path, got an empty string")
    assert str(caught.value) == "expected a file path, got an empty string"
    with pytest.raises(KeyError), flag_error():  # not a bad value: not argparse's to say
        raise KeyError("x")
    for parse, text, said in [
        (flag_type("devices"), "8x", "'8x' is not a whole number; give the number alone, in devices"),
        (
            flag_list_type("devices"),
            "1,,2",
            "'1,,2' has an empty item (a value left out between commas or at an end); list values like 1,2,4",
        ),
        (
            usd_type("budget_usd"),
            "$$5",
            "'$$5' is not an amount of US dollars; write one like 40, 40.5, $50,000 or 1e5",
        ),
        (file_path, "", "expected a file path, got an empty string"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            parse(text)
        assert str(caught.value) == said


def test_decide_and_goal_put_the_same_scenario_notes_before_their_own(capsys):
    """``cmd_predict.notes_before``: predict's scenario notes, then the slow-device note of the
    counts the command looks at; decide says them before its card's notes, goal after its
    deadline note."""
    profile = default_profile()
    scenario = Scenario(devices=[8], slow_device=12, slow_factor=2.0)
    slow = "device 12 is not among the 8 devices of the decision ('As is'): no slow device there"
    assert notes_before(profile, scenario, [8], "the decision ('As is')") == [slow]
    assert notes_before(profile, scenario, [16], "the decision ('As is')") == []
    argv = ["--train-samples", "1e8", "--slow-device", "12", "--slow-factor", "2"]
    code, out, _ = run_cli(capsys, ["decide", "--devices", "8", *argv])
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert code == 0 and notes[0] == f"note: {slow}"
    code, out, _ = run_cli(
        capsys, ["goal", *argv, "--deadline", "30", "--budget", "5e4", "--max-devices", "8"]
    )
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert code == 0 and notes[0].startswith("note: --deadline 30 was read as 30 seconds")
    searched = slow.replace("the decision ('As is')", "any plan searched (--max-devices)")
    assert notes[1] == f"note: {searched}"
