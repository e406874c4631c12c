"""The matmul precision as a scenario knob (``Scenario.precision``, ``--precision``, the app's
control and link key ``pr``, link v11; docs/model.md §13 "fp8", §22): predict, sweep, decide,
goal and the planner of a scenario run the layers' weight matmuls in fp8 as ``scalesim plan
--precision fp8`` does; a profile whose timings ran at their own precision, or a device with no
fp8 peak, refuses it in one line; a parameter-count workload ignores it, with a note."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.errors import ScalesimError
from scalesim.layout_predict import check_precision, plan_at
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_profile, resolve_profile
from scalesim.schemas import Scenario

PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
           "--batch", "1", "--json"]


def _row(capsys, *flags) -> dict:
    code, out, err = run_cli(capsys, [*PREDICT, *flags])
    assert code == 0, err
    return json.loads(out)[0]


def test_predict_runs_the_layout_plan_ranks_in_fp8(capsys):
    """Llama 3 8B, DDP on 8 H100s, one sequence each: predict's fp8 step is the step the
    planner gives the same layout in fp8 (both at the planner's efficiency: the preset curve is
    the layout model's own 16-bit micro-step, which the pin recovers), and fp8 is faster by
    less than the peaks' 2x (casts, the 16-bit attention core and output layer). fp8 leaves
    the gradient exchange alone: exchanged after backward (--no-overlap) it is the same seconds.
    Overlapped, a shorter backward hides less of its tail: DDP all-reduces fp32 gradients since
    session 45, 4 B x 8.03e9 = 30,633 MiB in 1,227 buckets, the last of 7.0 MiB (NVLS 51.82
    us), and the last 25 MiB one (120.58 us) is ready 120.14 us before bf16's backward ends
    (exposed 52.26 us) but 86.45 us before fp8's (85.94 us)."""
    bf16, fp8 = _row(capsys), _row(capsys, "--precision", "fp8")
    assert bf16["step_time_s"] / fp8["step_time_s"] == pytest.approx(1.33, abs=0.05)
    assert fp8["exposed_comm_s"] >= bf16["exposed_comm_s"]
    assert _row(capsys, "--precision", "fp8", "--no-overlap")["exposed_comm_s"] == \
        pytest.approx(_row(capsys, "--no-overlap")["exposed_comm_s"], rel=1e-9)
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--global-batch", "8",
                                      "--precision", "fp8", "--json", "--all", "--top", "10000"])
    assert code == 0, err
    (same,) = [r for r in json.loads(out)["layouts"] if (r["tp"], r["pp"], r["zero"], r["micro_batch"],
                                              r["recompute"]) == (1, 1, 0, 1, "none")]
    assert same["step_time_s"] == pytest.approx(fp8["step_time_s"], rel=1e-6)


def test_the_planner_of_a_scenario_takes_its_precision():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    rows16 = plan_at(profile, Scenario(devices=[8]), 8, 64, top=1)
    rows8 = plan_at(profile, Scenario(devices=[8], precision="fp8"), 8, 64, top=1)
    assert rows8[0].tokens_per_s > 1.2 * rows16[0].tokens_per_s


def test_the_text_says_what_fp8_does_and_a_parameter_count_ignores_it(capsys):
    code, out, _ = run_cli(capsys, [*PREDICT[:-1], "--precision", "fp8"])
    assert code == 0 and "precision: fp8 weight matmuls at the device's fp8 peak" in out
    code, out, _ = run_cli(capsys, ["predict", "--devices", "8", "--precision", "fp8"])
    assert code == 0
    assert "note: precision fp8 ignored: workload 'bert-large' is a parameter count" in out
    bert = default_profile()
    assert predict(bert, Scenario(devices=[8], precision="fp8")) == predict(
        bert, Scenario(devices=[8]))


def test_measured_timings_and_devices_without_fp8_refuse_it_in_one_line(capsys):
    from scalesim.sweep import sweep

    measured = load_profile(H200)
    fp8 = Scenario(devices=[8], precision="fp8")
    for call in (lambda: predict(measured, fp8),
                 lambda: sweep(measured, fp8, {"accumulation": [1, 2]}),
                 lambda: plan_at(measured, fp8, 8, 32)):
        with pytest.raises(ScalesimError, match="--precision fp8: profile .* holds timings "
                           "measured at their own precision"):
            call()
    check_precision(measured, "bf16")  # what it timed
    a100 = resolve_profile(None, "dgx-a100", "llama3-8b")
    with pytest.raises(ScalesimError, match="no fp8 peak is known for 'A100"):
        predict(a100, fp8)
    for command in ("predict", "sweep", "decide"):
        code, _, err = run_cli(capsys, [command, "--profile", str(H200), "--devices", "8",
                                        "--precision", "fp8"])
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "--precision fp8: " in err and "at their own precision" in err
    code, _, err = run_cli(capsys, [*PREDICT[:4], "dgx-a100", *PREDICT[5:], "--precision",
                                    "fp8"])
    assert code == 2 and "no fp8 peak is known" in err and len(err.strip().splitlines()) == 1


def test_a_device_without_an_fp8_peak_is_said_in_one_wording_everywhere():
    """plan's refusal, the layout paths' (predict), the fp8 remedy's reason and the app's note
    say the same clause, the device name quoted (it holds a space); the remedy's had left the
    quotes off ('no fp8 peak is known for A100-SXM4 80GB (...)')."""
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import decode_query

    from scalesim.plan import fp8_peak_ratio
    from scalesim.remedies import fp8_reason

    words = ("no fp8 peak is known for 'A100-SXM4 80GB' (no fp8 tensor cores, or a device the "
             "datasheet tables do not list)")
    refusal = f"--precision fp8: {words}; leave it at bf16"
    a100 = resolve_profile(None, "dgx-a100", "llama3-8b")
    for call in (lambda: fp8_peak_ratio("A100-SXM4 80GB"),
                 lambda: predict(a100, Scenario(devices=[8], precision="fp8"))):
        with pytest.raises(ScalesimError) as caught:
            call()
        assert str(caught.value) == refusal
    assert fp8_reason(a100, Scenario(devices=[8])) == words
    state, _, _ = decode_query({**LLAMA_LINK, "v": "11", "hw": "dgx-a100", "pr": "fp8"})
    _, notes = build_scenario(state, a100)
    assert f"Matmul precision fp8 left out: {words}" in notes, notes  # the page's control


# ------------------------------------------------------------------ the app and its links

LLAMA_LINK = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16"}


def test_json_rows_name_the_precision_their_mfu_is_against(capsys):
    """predict's and plan's JSON rows say which peak their mfu is against: fp8's in fp8; a
    parameter count, which has no matmuls to run in either, says null."""
    bf16, fp8 = _row(capsys), _row(capsys, "--precision", "fp8")
    assert (bf16["precision"], fp8["precision"]) == ("bf16", "fp8")
    code, out, err = run_cli(capsys, ["predict", "--devices", "8", "--json"])
    assert code == 0 and json.loads(out)[0]["precision"] is None, err
    for precision in ("bf16", "fp8"):
        code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware",
                                          "dgx-h100", "--devices", "8", "--global-batch", "8",
                                          "--precision", precision, "--json"])
        assert code == 0, err
        assert {row["precision"] for row in json.loads(out)["layouts"]} == {precision}


def test_the_precision_is_a_sweep_axis_with_the_rows_predict_gives(capsys):
    """``--precision-values bf16,fp8`` sweeps it: each row is predict's for the same scenario at
    that precision (at tp 1 and 2, its speed-up against one device at the row's precision), the
    fp8 rows said once in a note; a parameter count, a measured profile, a GPU without an fp8
    peak and both flags at once refuse it in one line."""
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[8], micro_batch=1, strategy="zero3")
    cols = sweep(profile, base, {"precision": ["bf16", "fp8"], "tp": [1, 2]}).columns
    assert list(cols["precision"]) == ["bf16", "bf16", "fp8", "fp8"]
    want = []
    for pr in ("bf16", "fp8"):
        for tp in (1, 2):
            scn = base.model_copy(update={"precision": pr}).model_dump()
            scn["layout"] = {"tp": tp}
            want.append(predict(profile, Scenario.model_validate(scn))[0])
    assert list(cols["step_time_s"]) == pytest.approx([w.step_time_s for w in want], rel=1e-12)
    assert list(cols["speedup"]) == pytest.approx([w.speedup for w in want], rel=1e-12)
    assert cols["step_time_s"][2] < cols["step_time_s"][0]
    code, _, err = run_cli(capsys, ["sweep", *PREDICT[1:-1], "--strategy", "zero3",
                                    "--precision-values", "bf16,fp8"])
    assert code == 0, err
    assert sum(line.startswith("note: rows at precision fp8: fp8 weight matmuls") for line in
               err.splitlines()) == 1
    for fp8_rows in (["--precision-values", "fp8"], ["--precision", "fp8"]):  # said once
        code, _, err = run_cli(capsys, ["sweep", *PREDICT[1:-1], *fp8_rows])
        assert code == 0 and err.count("fp8 weight matmuls at the device's fp8 peak") == 1, err
    for argv, words in (
            (["--devices", "8"], "--precision-values needs a transformer workload"),
            (["--profile", str(H200), "--devices", "8"], "--precision-values fp8: "
             "profile"),
            (["--workload", "llama3-8b", "--hardware", "dgx-a100", "--devices", "8"],
             "--precision-values fp8: no fp8 peak is known for 'A100-SXM4 80GB'"),
            ([*PREDICT[1:-1], "--precision", "fp8"], "--precision and --precision-values both "
             "set one knob"),
            (["--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8"],
             "unknown precision 'fp4'")):
        values = "bf16,fp4" if "fp4" in words else "bf16,fp8"
        code, _, err = run_cli(capsys, ["sweep", *argv, "--precision-values", values])
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err


def test_a_link_with_fp8_round_trips_as_v11_and_predicts_it():
    from app_harness import link_round_trip_plans

    scenario, notes, rows, before = link_round_trip_plans(LLAMA_LINK, "pr", "fp8", 11)
    assert scenario.precision == "fp8" and notes == []
    assert all(a.step_time_s < b.step_time_s for a, b in zip(rows, before, strict=True))


def test_old_links_run_in_bf16():
    from scalesim.app.state import decode_query

    for version in ("3", "10"):  # cannot carry the choice: ignored and said so
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "pr": "fp8"})
        assert state.pr == "bf16" and state.hw == "dgx-h100" and state.dmax == 16
        assert messages[-1] == (f"ignored pr: a v{version} link has no precision choice (bf16 "
                                "matmuls)"), messages
    state, _, messages = decode_query({**LLAMA_LINK, "v": "11", "pr": "fp4"})
    assert state.pr == "bf16" and state.dmax == 16 and len(messages) == 1


def test_the_report_names_it_and_the_app_leaves_it_out_where_it_cannot_apply():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query({**LLAMA_LINK, "v": "11", "pr": "fp8"})
    lines = dict(scenario_lines(make_plan(profile, state)))
    assert lines["matmul precision"].startswith("fp8 weight matmuls")
    scenario, notes = build_scenario(state, load_profile(H200))  # measured: left out, a note
    assert scenario.precision == "bf16"
    assert any(n.startswith("Matmul precision fp8 left out: profile ") for n in notes)
    a100 = state.model_copy(update={"hw": "dgx-a100"})
    scenario, notes = build_scenario(a100, resolve_profile(None, "dgx-a100", "llama3-8b"))
    assert scenario.precision == "bf16" and any("no fp8 peak is known for" in n for n in notes)
    scenario, notes = build_scenario(state.model_copy(update={"wl": "bert-large"}),
                                     default_profile())
    assert any("Matmul precision fp8 ignored: workload 'bert-large'" in n for n in notes)


def test_the_app_control_sets_the_precision_and_the_link():
    from app_harness import focus_samples_per_s, select_into_link

    _, before, state = select_into_link(LLAMA_LINK, "k_pr", "pr", "bf16", "fp8", 11)
    now, was = focus_samples_per_s(state, before)
    assert now > was


def test_plan_refuses_it_on_measured_timings_and_every_command_says_it(capsys):
    """Helper audit: ``plan --profile`` planned fp8 on the block fit where predict refused it;
    decide, goal and plan did not say the answer ran in fp8."""
    code, _, err = run_cli(capsys, ["plan", "--profile", str(H200), "--devices", "8",
                                    "--global-batch", "64", "--precision", "fp8"])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--precision fp8" in err and "at their own precision" in err
    llama = ["--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8"]
    for argv in (["plan", *llama, "--global-batch", "64", "--top", "1"],
                 ["decide", *llama, "--batch", "1", "--strategy", "zero3",
                  "--train-samples", "1e6"]):
        code, out, err = run_cli(capsys, [*argv, "--precision", "fp8"])
        assert code == 0, err
        assert "precision: fp8 weight matmuls at the device's fp8 peak" in out


def test_a_stated_16_bit_peak_scales_the_fp8_peak(tmp_path, capsys):
    """Helper audit: a hardware file stating half the H100's 16-bit peak kept the datasheet's
    fp8 peak (a 1.80x fp8 gain); the fp8 peak is now its own peak times the datasheet's ratio
    (2 on the H100), so fp8 gains as on the stock preset, less what memory-bound work keeps."""
    from scalesim.plan import _peak_flops
    from scalesim.presets import HARDWARE

    half = HARDWARE["dgx-h100"].model_copy(update={"peak_tflops": 494.5})
    assert _peak_flops(half, True) == pytest.approx(989e12, rel=1e-3)
    assert _peak_flops(HARDWARE["dgx-h100"], True) == pytest.approx(1979e12, rel=1e-3)
    path = tmp_path / "half.json"
    path.write_text(half.model_dump_json())
    stock = _row(capsys, "--precision", "fp8")["step_time_s"] / _row(capsys)["step_time_s"]
    own = [*PREDICT[:3], "--hardware", str(path), *PREDICT[5:]]
    rows = []
    for flags in ((), ("--precision", "fp8")):
        code, out, err = run_cli(capsys, [*own, *flags])
        assert code == 0, err
        rows.append(json.loads(out)[0]["step_time_s"])
    assert 1 / stock < rows[0] / rows[1] < 1 / stock * 1.2
