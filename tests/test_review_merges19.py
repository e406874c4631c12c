"""Session 19 (rev19): the review of the session's five merges, used as a user would
(docs/reliability.md, "Session 19: review of the five merges"). Each test pins one line that
read wrong: a rounded global-batch ratio, an assumption that said "same global batch" beside a
title that says otherwise, a penalty said of an option with no time, a fit remedy's micro-batch
at a fixed global batch, an empty trace called truncated, a bare short deadline, a goal where
nothing fits without what to change, and an abbreviation's cause hidden by a close flag."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli, whole_lines

from scalesim.figures import multiple

LLAMA_64 = ["--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64", "--tp", "8",
            "--pp", "2"]


@pytest.mark.parametrize(("ratio", "text"), [
    (2.0, "2x"), (1.125, "1.125x"), (0.5, "0.5x"), (1.5, "1.5x"), (16384.0, "16,384x"),
    (80 / 48, "~1.67x"), (1040 / 1024, "~1.02x"),
])
def test_a_multiple_is_exact_or_says_about(ratio, text):
    assert multiple(ratio) == text


def test_the_add_server_option_says_its_global_batch_exactly_and_assumes_it(capsys):
    """llama3-70b on 64 H100s, dp 4 x tp 8 x pp 2, micro-batch 32: one more server in the
    planner's layout trains at 36 sequences per step against 32. Was 'global batch 1.12x' in
    its title and 'same global batch' in its assumption. Since session 20 the option is the
    planner's layout at 80 (40 per step, 1.25x) and the one at 72 is named in a note, 0.9x it."""
    code, out, err = run_cli(capsys, ["decide", *LLAMA_64, "--batch", "32",
                                      "--train-samples", "1e6", "--json"])
    assert code == 0, err
    card = json.loads(out)
    (added,) = [o for o in card["options"] if o["key"] == "add_server"]
    # session 20: the planner's layout at 80 devices (2 servers more) finishes sooner than at 72
    assert added["title"].endswith(", global batch 1.25x"), added["title"]
    assert added["assumption"].endswith("at the model's predicted efficiency, global batch "
                                        "1.25x today's"), added["assumption"]
    assert "same global batch" not in added["assumption"]
    (at72,) = [n for n in card["notes"] if ", at 72 devices, " in n]
    # session 21: against today's 32, as the titles say it (was "global batch 0.9x", 72 / 80)
    assert ", at 72 devices, global batch 1.125x today's)" in at72, at72  # 36 / 32 exactly


def test_an_option_that_does_not_fit_is_not_said_to_count_its_penalty(capsys):
    """gpt-76.1b on one A100 with a critical batch size: 'Fill the server' does not fit and has
    no time, so its left-out title does not say its penalty is in the time; the option that
    runs (64 devices since session 59, the penalty counted in the time it is chosen by) still
    does."""
    code, out, err = run_cli(capsys, ["decide", "--workload", "gpt-76.1b", "--devices", "1",
                                      "--train-samples", "1e6", "--critical-batch", "64"])
    assert code == 0, err
    (note,) = [line for line in out.splitlines() if line.startswith("note: not shown (")]
    assert note.endswith("Fill the server (1 -> 8 devices), global batch 8x"), note
    assert "Add devices (1 -> 64 devices, tp 4 x pp 8, zero2), global batch 64x (its large-batch " \
           "penalty is in the time)" in whole_lines(out)


def test_the_fit_remedy_at_a_fixed_global_batch_writes_its_micro_batch(capsys):
    """gpt-1.7b, ZeRO-3 on 16 A100 40GB at global batch 64 (micro-batch 4) does not fit: twice
    the accumulation halves the micro-batch. Was '(4 x 1 -> 4 x 2; same global batch)'."""
    code, out, err = run_cli(capsys, ["decide", "--workload", "gpt-1.7b", "--devices", "16",
                                      "--strategy", "zero3", "--global-batch", "64",
                                      "--train-samples", "1e7"])
    assert code == 0, err
    (row,) = [line for line in whole_lines(out).splitlines() if line.startswith("Settings: ")]
    assert row.startswith("Settings: smaller micro-batches, more accumulation (4 x 1 -> 2 x 2; "
                          "same global batch)"), row


@pytest.mark.parametrize("content", [b"", b"  \n\t", None])
def test_an_empty_trace_is_said_to_be_empty(capsys, tmp_path, content):
    """An empty (or white-space) trace, plain or gzipped, was 'the trace ends early (truncated
    file?)'; a trace cut after its first bracket still is."""
    import gzip

    path = tmp_path / ("empty.json.gz" if content is None else "empty.json")
    path.write_bytes(gzip.compress(b"") if content is None else content)
    code, _, err = run_cli(capsys, ["diagnose", "--trace", str(path)])
    assert code == 2
    assert err.strip() == (f"scalesim diagnose: error: {path}: empty (no trace in it); export "
                           "one with prof.export_chrome_trace"), err
    cut = tmp_path / "cut.json"
    cut.write_text('{"traceEvents": [')
    code, _, err = run_cli(capsys, ["diagnose", "--trace", str(cut)])
    assert code == 2 and "the trace ends early (truncated file?)" in err, err


GOAL = ["goal", "--train-samples", "2e6", "--budget", "50000", "--max-devices", "16"]


@pytest.mark.parametrize(("deadline", "note"), [
    ("30", "--deadline 30 was read as 30 seconds (a number without a unit is seconds); for "
           "days write --deadline 30d, for hours 30h"),
    ("1e3", "--deadline 1e3 was read as 1e3 seconds (a number without a unit is seconds); for "
            "days write --deadline 1e3d, for hours 1e3h"),
    ("30d", None), ("3600", None), ("90m", None),
])
def test_a_bare_short_deadline_says_how_it_was_read(capsys, deadline, note):
    """`goal --deadline 30` is 30 seconds (documented); a user who meant days saw only
    'within 30 s'. A bare number under an hour now gets a note, in the text and --json."""
    code, out, err = run_cli(capsys, [*GOAL, "--deadline", deadline])
    assert code == 0, err
    said = [line for line in whole_lines(out).splitlines() if "was read as" in line]
    assert said == ([] if note is None else [f"note: {note}"])
    code, out, err = run_cli(capsys, [*GOAL, "--deadline", deadline, "--json"])
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert (note in notes) if note else not any("was read as" in n for n in notes)


def test_a_refused_deadline_is_still_one_line(capsys):
    code, _, err = run_cli(capsys, [*GOAL, "--deadline", "3x"])
    assert code == 2
    assert err.strip() == ("scalesim goal: error: argument --deadline: '3x' is not a duration "
                           "like 3d, 72h, 90m, 2w or 3600 (seconds); a unit is s, m, h, d, w or "
                           "y, or its word (3 weeks) (see scalesim goal --help)")


def test_a_goal_where_nothing_fits_says_what_to_change(capsys):
    """llama3-70b on up to 16 H100s unsplit: 'No plan runs' said nothing of the split that goal
    keeps as given; a note now names --tp/--pp, plan and --max-devices (and, session 42,
    --recompute full, which goal keeps as given too). Session 43: that is ``--layout given``;
    the default searches the planner's layouts and finds one that fits (tp 2, full recompute)."""
    code, out, err = run_cli(capsys, ["goal", "--workload", "llama3-70b", "--hardware", "dgx-h100",
                                      "--train-samples", "1e6", "--deadline", "30d", "--budget",
                                      "1e6", "--max-devices", "16", "--layout", "given"])
    assert code == 0, err
    assert out.startswith("No plan runs: nothing fits in device memory at the layout kept as "
                          "given (tp 1 x pp 1, recompute none).")
    assert ("note: goal keeps the split and recompute as given (tp 1 x pp 1, recompute none) and "
            "nothing fits at them: recompute the activations (--recompute full), split the model "
            "further (--tp, --pp; scalesim plan ranks the layouts that fit), or search more "
            "devices (--max-devices, now 16)") in whole_lines(out).splitlines()
    code, out, err = run_cli(capsys, ["goal", "--workload", "llama3-70b", "--hardware", "dgx-h100",
                                      "--train-samples", "1e6", "--deadline", "30d", "--budget",
                                      "1e6", "--max-devices", "16", "--json"])
    assert code == 0, err
    best = json.loads(out)["best"]
    assert best["meets"] and best["tp"] * best["pp"] > 1 and best["recompute"] == "full"


def test_a_split_given_to_plan_names_the_abbreviation_not_a_close_flag(capsys):
    """`plan --tp 8 --pp 2`: argparse read --tp as --tp-overlap; was 'unrecognized arguments:
    8 --pp 2; did you mean --cp?', which sent the user to another flag. Since session 41 flags
    are written in full (no abbreviation is completed) and plan says why it has no --tp."""
    code, _, err = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--devices", "64",
                                    "--global-batch", "64", "--tp", "8", "--pp", "2"])
    assert code == 2
    assert err.strip() == (
        "scalesim plan: error: unrecognized arguments: --tp 8 --pp 2; plan has no --tp: it "
        "searches every tensor-parallel degree and ranks the layouts; predict takes one value "
        "(--tp) (see scalesim plan --help)")
    code, _, err = run_cli(capsys, ["predict", "--devices", "8", "--inter-busbww", "10"])
    assert code == 2 and "did you mean --inter-busbw?" in err, err


def test_the_apps_headline_gives_no_time_or_money_to_a_layout_that_does_not_fit():
    """The app at llama3-70b, 64 H100s, tp 8 x pp 2, 1e6 samples: the focus does not fit, and
    the card's As-is row says 'does not fit' for its time and money; the headline said 'Time to
    train / cost 3.2 days, $17,845' beside 'Throughput: not runnable', and so did the report."""
    from app_harness import open_app
    from scalesim.app.plan import headline, make_plan
    from scalesim.app.report import report_html
    from scalesim.app.state import default_state, encode_query, preset_profile

    from scalesim.decision import DOES_NOT_FIT, card_rows

    state = default_state().model_copy(update={
        "wl": "llama3-70b", "hw": "dgx-h100", "dmax": 64, "focus": 64, "tp": 8, "pp": 2,
        "train": 1e6})
    plan = make_plan(preset_profile(state), state)
    assert not plan.focus.fits
    h = headline(plan)
    assert h["time_to_train"] == DOES_NOT_FIT and "cost" not in h
    assert card_rows(plan.decision)[0]["time to finish"] == DOES_NOT_FIT
    report = report_html(plan, "")
    assert '<td class="l">Time to train</td><td class="l">does not fit</td>' in report
    assert '<td class="l">Cost</td>' not in report
    at = open_app(encode_query(plan.state, plan.profile))
    (metric,) = [m for m in at.metric if m.label.startswith("Time to train")]
    assert metric.value == DOES_NOT_FIT and not metric.proto.delta


def test_the_hours_charts_words_name_only_options_that_run():
    """The Hours & cost tab at llama3-70b, 64 H100s, tp 8 x pp 2, 1e6 samples: 'Fastest:
    1,024 devices (not runnable), 19.1 h for $71,774' named a bar that cannot run; now the
    fastest and cheapest that run, in the card's duration words."""
    from scalesim.app.charts import chart_text
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={
        "wl": "llama3-70b", "hw": "dgx-h100", "dmax": 1024, "focus": 64, "tp": 8, "pp": 2,
        "train": 1e6, "cbs": 512.0})
    plan = make_plan(preset_profile(state), state)
    assert any(not o.fits for o in plan.options)  # the device counts at tp 8 x pp 2
    text = chart_text(plan, "hours")
    assert text.startswith("Fastest that runs: ") and "not runnable" not in text, text
    runs = [o for o in plan.options if o.fits and o.cost_usd is not None and o.time_s]
    fast = min(runs, key=lambda o: o.time_s)
    assert f"Fastest that runs: {fast.label}, " in text and "Cheapest that runs: " in text


@pytest.mark.parametrize(("critical", "tail"), [
    (None, ""), ("4096", " (its large-batch penalty is in the time)")])
def test_a_remedy_that_names_its_global_batch_is_not_told_it_twice(capsys, critical, tail):
    """A fixed global batch of 256 on 16 A100s: the settings remedy 'double the global batch'
    read '..., global batch 2x' after it (splitname19's words after the remedy's own)."""
    argv = ["decide", "--devices", "16", "--global-batch", "256", "--train-samples", "1e8"]
    code, out, err = run_cli(capsys, argv + (["--critical-batch", critical] if critical else []))
    assert code == 0, err
    (row,) = [line for line in whole_lines(out).splitlines() if line.startswith("Settings: ")]
    title = "Settings: double the global batch (per-device batch 16 -> 32)" + tail
    assert row.startswith(title + "  "), row


@pytest.mark.parametrize(("argv", "said"), [
    (["--devices", "1e308T"], "argument --devices: '1e308T' is not a whole number"),
    (["--accumulation", "1e308T"], "argument --accumulation: '1e308T' is not a whole number"),
    (["--batch", "9e307k"], "argument --batch: '9e307k' is not a whole number"),
    (["--devices", "1e20k"],
     "argument --devices: '1e20k' is not a whole number; write 1e20k as 1e23, in devices"),
    (["--devices", "7k"], "argument --devices: '7k' is not a whole number; write 7k as 7000, in devices"),
])
def test_a_multiplied_number_past_any_float_is_one_line(capsys, argv, said):
    """polish19's hint for '7B'-style numbers multiplied '1e308T' to infinity and took int() of
    it: an OverflowError traceback from `predict --devices 1e308T`."""
    code, _, err = run_cli(capsys, ["predict", *argv])
    assert code == 2 and "Traceback" not in err
    assert err.strip() == f"scalesim predict: error: {said} (see scalesim predict --help)", err


@pytest.mark.parametrize(("argv", "hint"), [
    (["--inter-busbw", "5G"], "'5G' is not a number; give the number alone, in GB/s: 5"),
    (["--inter-busbw", "5T"], "'5T' is not a number; give the number alone, in GB/s"),
    (["--bucket-mib", "25M"], "'25M' is not a number; give the number alone, in MiB: 25"),
    (["--train-samples", "2M"], "'2M' is not a number; write 2M as 2e6, in samples"),
])
def test_a_multiplier_on_a_prefixed_unit_is_not_multiplied(capsys, argv, hint):
    """`--inter-busbw 5G` was told 'write 5G as 5e9, in GB/s' (5e9 GB/s, refused next): in a
    unit with its own prefix the letter is the unit's; a count keeps its multiplier."""
    code, _, err = run_cli(capsys, ["predict", *argv])
    assert code == 2
    assert err.strip() == (f"scalesim predict: error: argument {argv[0]}: {hint} (see "
                           "scalesim predict --help)"), err


def test_a_left_out_option_far_slower_says_how_many_times(capsys):
    """gpt-1.7b, ZeRO-1 on 8 A100s: the planner's layout at one more server finishes 5.4 times
    sooner than today's layout there (3.5 before session 35 hid the interleaved sends, 3.7
    before session 44 reduced Megatron-Core's fp32 main grads over a2-highgpu's 100 Gb/s);
    the note said '237.6% slower'."""
    code, out, err = run_cli(capsys, ["decide", "--workload", "gpt-1.7b", "--devices", "8",
                                      "--strategy", "zero1", "--train-samples", "1e7"])
    assert code == 0, err
    (note,) = [line for line in out.splitlines() if line.startswith("note: not shown: ")]
    # session 21: and its money, the same count's hours at the same hourly price; $11,728 in
    # session 46 ($11,727 before): the planner's layout is FSDP ZeRO-2, whose optimizer sweeps
    # its fp32 shard, 28 of 30 bytes a parameter (docs/model.md §4); $11,718 since each
    # framework sweeps its own bytes (§4 "The optimizer step by framework": today's
    # Megatron-Core ZeRO-1 34 B, the shape's one-device DDP step, which its estimated compute
    # curve leaves out, 28 B); $11,726 since session 47 counted Megatron-Core's default
    # gradient-norm clip (today's ZeRO-1 46 B); $11,689 since session 48 hides a straggler's
    # exchange behind the last device's backward (docs/model.md §3); $11,699 since session 50's
    # bubble passes the stages but the slowest in fill and drain (§15: the planner's pipeline
    # a little faster)
    assert note == ("note: not shown: today's layout, 5.4x slower and $11,699 more expensive than "
                    "the planner's layout"), note
    assert "%" not in note
