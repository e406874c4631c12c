"""The attention kernel as a scenario knob everywhere (``Scenario.attention_kernel``,
``--attention-kernel``, the app's control and link key ``ak``, link v6; docs/model.md §13
"Attention kernel"): predict, sweep, decide, goal and the planner of a scenario run the
attention core at the kernel's rate; a profile whose timings ran its own kernel refuses another
in one line; a parameter-count workload ignores it, with a note."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.errors import ScalesimError
from scalesim.layout_predict import check_attention_kernel, timed_own_kernel
from scalesim.model.layout_step import FLASH_BACKWARD_FACTOR
from scalesim.predict import predict
from scalesim.presets import FLASH2_ON_HOPPER_EFFICIENCY, transformer_workload
from scalesim.profiles import default_profile, load_profile, resolve_profile
from scalesim.schemas import Scenario

PREDICT = ["predict", "--workload", "llama3-8b", "--tp", "1", "--devices", "8", "--json"]


def _row(capsys, hardware: str, *flags) -> dict:
    code, out, err = run_cli(capsys, [*PREDICT, "--hardware", hardware, *flags])
    assert code == 0, err
    return json.loads(out)[0]


def test_predict_runs_flash2_slower_on_hopper_only(capsys):
    """Llama 3 8B at 8,192 tokens, one sequence per GPU on 8 H100s: flash2 runs the attention
    core at 0.35 of the peak instead of the matmuls' 0.73 (the preset curve is the layout
    model's own at the planner's efficiency, which the pin recovers). By hand, the compute grows
    by L x (1 + 2.5) x 4 s^2 h / peak x (1/0.35 - 1/0.73): 32 layers, forward plus flash
    backward, 185 ms; the communication does not change: exchanged after backward
    (--no-overlap) it is the same seconds. Overlapped, what the exchange leaves after backward
    may shrink with a longer backward: DDP all-reduces fp32 gradients since session 45, 4 B x
    8.03e9 = 30,633 MiB in 1,227 buckets, the last of 7.0 MiB (NVLS 51.82 us). Under the vendor
    kernel the last 25 MiB bucket is ready 120.14 us before backward ends and takes 120.58 us,
    so the last one waits 0.44 us (exposed 52.26 us); flash2's longer backward hides it (51.82).
    On A100s both kernels run FlashAttention-2 at 0.656 of the peak: the same numbers."""
    from scalesim.plan import DEFAULT_MATMUL_EFFICIENCY

    vendor = _row(capsys, "dgx-h100")
    flash2 = _row(capsys, "dgx-h100", "--attention-kernel", "flash2")
    assert flash2["samples_per_s"] < 0.9 * vendor["samples_per_s"]
    shape = transformer_workload("llama3-8b").transformer
    core_s = 4.0 * shape.seq_len ** 2 * shape.hidden / 989e12  # one layer's forward, at peak
    extra = shape.layers * (1 + FLASH_BACKWARD_FACTOR) * core_s * (
        1 / FLASH2_ON_HOPPER_EFFICIENCY - 1 / DEFAULT_MATMUL_EFFICIENCY)
    assert flash2["compute_s"] - vendor["compute_s"] == pytest.approx(extra, rel=1e-6)
    assert flash2["exposed_comm_s"] <= vendor["exposed_comm_s"]
    assert _row(capsys, "dgx-h100", "--attention-kernel", "flash2", "--no-overlap")[
        "exposed_comm_s"] == _row(capsys, "dgx-h100", "--no-overlap")["exposed_comm_s"]
    a100 = _row(capsys, "dgx-a100")
    assert _row(capsys, "dgx-a100", "--attention-kernel", "flash2") == a100


def test_the_text_says_what_the_kernel_does_and_a_parameter_count_ignores_it(capsys):
    code, out, _ = run_cli(capsys, [*PREDICT[:-1], "--hardware", "dgx-h100",
                                    "--attention-kernel", "flash2"])
    assert code == 0 and ("\nattention: flash2 kernel, its attention core at 0.35 of the 16-bit "
                          "peak on H100-SXM5 80GB") in out
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,2", "--attention-kernel", "flash2"])
    assert code == 0 and ("note: attention kernel flash2 ignored: workload 'bert-large' is a "
                          "parameter count") in out
    profile = default_profile()
    assert predict(profile, Scenario(devices=[1, 2], attention_kernel="flash2")) == \
        predict(profile, Scenario(devices=[1, 2]))
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,2"])
    assert "attention" not in out.split("\n\n")[0]  # the default kernel says nothing


def test_a_scenario_file_carries_the_kernel_and_the_flag_overrides_it(tmp_path, capsys):
    old = tmp_path / "old.json"  # a scenario written before the field: the vendor kernel
    old.write_text(json.dumps({"schema_version": "scalesim-scenario/1", "devices": [8]}))
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"devices": [8], "attention_kernel": "flash2"}))
    base = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--json"]

    def step(*flags):
        code, out, err = run_cli(capsys, [*base, *flags])
        assert code == 0, err
        return json.loads(out)[0]["step_time_s"]

    vendor = step("--scenario", str(old))
    assert step("--scenario", str(new)) > vendor
    assert step("--scenario", str(new), "--attention-kernel", "fused-vendor") == vendor
    assert step("--scenario", str(old), "--attention-kernel", "flash2") == \
        step("--scenario", str(new))
    code, _, err = run_cli(capsys, [*base, "--attention-kernel", "flash3"])
    assert code == 2 and "invalid choice: 'flash3'" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"devices": [8], "attention_kernel": "fa3"}))
    code, _, err = run_cli(capsys, [*base, "--scenario", str(bad)])
    assert code == 2 and "attention_kernel" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["predict", "sweep", "decide", "goal", "plan"])
def test_every_command_with_a_scenario_takes_the_flag(capsys, command):
    code, out, _ = run_cli(capsys, [command, "--help"])
    assert code == 0 and "--attention-kernel {flash2,fused-vendor}" in out


def test_sweep_decide_and_goal_take_the_kernel(capsys):
    """The base scenario's kernel reaches every row of a transformer sweep, the decision card
    and goal seeking (one Setting, ``layout_predict.scenario_setting``)."""
    from scalesim.decision import decide
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    vendor = Scenario(devices=[8], micro_batch=1, strategy="zero3")
    flash2 = vendor.model_copy(update={"attention_kernel": "flash2"})
    grid = {k: sweep(profile, s, {"accumulation": [1, 2]}).columns["step_time_s"]
            for k, s in (("vendor", vendor), ("flash2", flash2))}
    assert all(f > v for f, v in zip(grid["flash2"], grid["vendor"], strict=True))
    want = [predict(profile, flash2.model_copy(update={"accumulation": k}))[0].step_time_s
            for k in (1, 2)]
    assert list(grid["flash2"]) == pytest.approx(want, rel=1e-12)
    card = decide(profile, flash2, 8)
    assert card.now.samples_per_s == pytest.approx(predict(profile, flash2)[0].samples_per_s,
                                                   rel=1e-12)
    goal = ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--batch", "1",
            "--train-samples", "1e6", "--deadline", "30d", "--budget", "1e6", "--max-devices",
            "64", "--json"]
    best = {}
    for kernel in ("fused-vendor", "flash2"):
        code, out, err = run_cli(capsys, [*goal, "--attention-kernel", kernel])
        assert code == 0, err
        best[kernel] = json.loads(out)["best"]
    assert best["flash2"]["samples_per_s"] < best["fused-vendor"]["samples_per_s"]
    assert best["flash2"]["cost_usd"] > best["fused-vendor"]["cost_usd"]


def test_the_kernel_is_a_sweep_axis_with_the_rows_predict_gives(capsys):
    """``--attention-kernel-values`` sweeps the kernel: each row is the prediction of the same
    scenario with that kernel (flash2 slower on H100s, the same on A100s, §13); a parameter
    count (no attention core) and a measured profile (its own kernel) refuse the axis in one
    line, as predict refuses the flag."""
    from scalesim.sweep import sweep

    both = ["fused-vendor", "flash2"]
    for hardware in ("dgx-h100", "dgx-a100"):
        profile = resolve_profile(None, hardware, "llama3-8b")
        base = Scenario(devices=[8], micro_batch=1, strategy="zero3")
        cols = sweep(profile, base, {"attention_kernel": both}).columns
        assert list(cols["attention_kernel"]) == both
        want = [predict(profile, base.model_copy(update={"attention_kernel": k}))[0]
                for k in both]
        assert list(cols["step_time_s"]) == pytest.approx([w.step_time_s for w in want],
                                                          rel=1e-12)
        vendor, flash2 = cols["step_time_s"]
        assert flash2 > vendor if hardware == "dgx-h100" else flash2 == vendor
    for argv, words in (
            (["--devices", "8"], "--attention-kernel-values needs a transformer workload"),
            (["--profile", str(H200), "--devices", "8"], "--attention-kernel-values flash2: "
             "profile"),
            (["--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8"],
             "unknown attention kernel 'flash3'")):
        values = "flash3" if "flash3" in words else "flash2"
        code, _, err = run_cli(capsys, ["sweep", *argv, "--attention-kernel-values", values])
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err


def test_measured_timings_refuse_another_kernel_in_one_line(capsys):
    from scalesim.layout_predict import plan_at
    from scalesim.sweep import sweep

    measured = load_profile(H200)
    assert timed_own_kernel(measured)
    assert not timed_own_kernel(resolve_profile(None, "dgx-h100", "llama3-8b"))
    flash2 = Scenario(devices=[8], attention_kernel="flash2")
    for call in (lambda: predict(measured, flash2),
                 lambda: sweep(measured, flash2, {"accumulation": [1, 2]}),
                 lambda: plan_at(measured, flash2, 8, 32)):
        with pytest.raises(ScalesimError, match="--attention-kernel flash2: profile .* holds "
                           "timings measured with its own attention kernel"):
            call()
    check_attention_kernel(measured, "fused-vendor")  # the default is what it timed
    assert predict(measured, Scenario(devices=[8]))  # and predicts as before
    for command in ("predict", "sweep", "decide"):
        code, _, err = run_cli(capsys, [command, "--profile", str(H200), "--devices", "8",
                                        "--attention-kernel", "flash2"])
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "--attention-kernel flash2: " in err and "its own attention kernel" in err


# ------------------------------------------------------------------ the app and its links

LLAMA_LINK = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16"}


def test_a_link_with_flash2_round_trips_as_v6_and_predicts_it():
    from app_harness import link_round_trip_plans

    scenario, notes, rows, before = link_round_trip_plans(LLAMA_LINK, "ak", "flash2", 6)
    assert scenario.attention_kernel == "flash2" and notes == []
    assert all(a.step_time_s > b.step_time_s for a, b in zip(rows, before, strict=True))


def test_old_links_run_the_vendor_kernel_and_v6_keeps_the_gradient_sync():
    from scalesim.app.state import decode_query

    for version in ("1", "2", "3", "4", "5"):  # cannot carry the choice: ignored and said so
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "ak": "flash2"})
        assert state.ak == "" and state.hw == "dgx-h100" and state.dmax == 16
        assert messages[-1] == (f"ignored ak: a v{version} link has no attention kernel "
                                "choice (the fused-vendor kernel)"), messages
    assert decode_query({**LLAMA_LINK, "v": "6"})[0].ak == ""  # the kernel the timings ran
    state, _, messages = decode_query({**LLAMA_LINK, "v": "6", "ak": "<b>"})
    assert state.ak == "" and state.dmax == 16 and len(messages) == 1
    # v6 to v12's fused-vendor was the default (the kernel the timings ran): it opens as that;
    # from v13 it is the vendor kernel asked (a swap on timings that ran flash2)
    for version, ak in (("6", ""), ("12", ""), ("13", "fused-vendor")):
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "ak": "fused-vendor"})
        assert (state.ak, messages) == (ak, [])
    # what v5 added stays readable in a v6 link (and a v5 link keeps it)
    for version in ("5", "6"):
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "strat": "zero3",
                                           "acc": "4", "gs": "once-per-step"})
        assert state.gs == "once-per-step" and messages == []
    state, _, messages = decode_query({**LLAMA_LINK, "v": "6", "ak": "flash2",
                                       "gs": "once-per-step", "strat": "zero2"})
    assert (state.ak, state.gs, messages) == ("flash2", "once-per-step", [])


def test_the_app_control_sets_the_kernel_and_the_link():
    from app_harness import focus_samples_per_s, select_into_link

    _, before, state = select_into_link(LLAMA_LINK, "k_ak", "ak", "", "flash2", 6)
    select_into_link(LLAMA_LINK, "k_ak", "ak", "", "fused-vendor", 13)
    now, was = focus_samples_per_s(state, before)
    assert now < was


def test_the_report_names_the_kernel_and_the_app_leaves_it_out_where_it_cannot_apply():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query({**LLAMA_LINK, "v": "6", "ak": "flash2"})
    lines = dict(scenario_lines(make_plan(profile, state)))
    assert lines["attention kernel"].startswith("FlashAttention-2 class")
    # a measured profile: left out with a note, as a layout is left out (not a refusal)
    scenario, notes = build_scenario(state, load_profile(H200))
    assert scenario.attention_kernel is None
    assert any(n.startswith("Attention kernel flash2 left out: profile ") and
               n.endswith("and its calibration did not record which") for n in notes), notes
    # a parameter-count workload: kept, said to change nothing
    bert = default_profile()
    scenario, notes = build_scenario(state.model_copy(update={"wl": "bert-large"}), bert)
    assert any("Attention kernel flash2 ignored: workload 'bert-large'" in n for n in notes)


def test_the_vendor_kernel_asked_of_a_parameter_count_adds_no_empty_note():
    """The app's kernel control at the fused vendor kernel (a choice of its own from link v13)
    on a parameter-count workload: nothing to say, as predict says nothing of
    ``--attention-kernel fused-vendor`` there. Was: an empty note ('') among the page's
    notes, since the note was appended whatever ``attention_kernel_note`` returned."""
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import default_state

    bert = default_profile()
    state = default_state().model_copy(update={"ak": "fused-vendor"})
    scenario, notes = build_scenario(state, bert)
    assert scenario.attention_kernel == "fused-vendor"
    assert "" not in notes and "" not in make_plan(bert, state).notes
