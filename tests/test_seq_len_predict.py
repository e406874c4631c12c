"""``--seq-len`` on predict, decide, goal and sweep (``options.add_seq_len_argument``, plan's
flag; ``profiles.workload_at_sequence``): a plan row at another sequence length re-predicts
through ``predict --seq-len`` as it is (before: 'unrecognized arguments: --seq-len', only a
workload file with ``transformer.seq_len`` could), the compute decided as plan decides it (the
shape's estimate on presets, a measured curve scaled), and a parameter count or a sequence the
layout cannot split is refused in one line (docs/model.md §22)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.presets import WORKLOADS, transformer_workload
from scalesim.profiles import resolve_profile, workload_at_sequence

LLAMA = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]
STRATEGY = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}


def predict_flags(row: dict, global_batch: int) -> list[str]:
    """predict's flags of one plan row (``--json``), as a user copies it."""
    flags = ["--devices", str(row["devices"]), "--global-batch", str(global_batch),
             "--accumulation", str(row["accumulation"]), "--strategy", STRATEGY[row["zero"]],
             "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--cp", str(row["cp"]),
             "--recompute", row["recompute"], "--recompute-style", row["recompute_style"]]
    if row["pp"] > 1:
        flags += ["--schedule", row["schedule"], "--virtual-stages", str(row["virtual_stages"])]
        if row["schedule"] == "interleaved" and not row["p2p_overlap"]:
            flags += ["--p2p-overlap", "off"]
    if row["sequence_parallel"]:
        flags.append("--sequence-parallel")
    if row["tp_overlap"] and row["tp"] > 1:
        flags.append("--tp-overlap")
    if row["zero"] and row["shard_group"] < row["dp"] * row["cp"]:  # hybrid sharding
        flags += ["--shard-group", str(row["shard_group"])]
    return flags


def assert_re_predicts(capsys, plan_argv: list[str], predict_argv: list[str],
                       global_batch: int, per_cp: int = 4) -> list[dict]:
    """Every one of ``per_cp`` rows of each cp (and the first pipelined one) of ``plan
    plan_argv --json`` is what ``predict predict_argv <its flags> --json`` says of it, to 1e-9:
    the step, each part, the memory and the fit. Returns the rows checked."""
    code, out, err = run_cli(capsys, ["plan", *plan_argv, "--global-batch", str(global_batch),
                                      "--all", "--top", "400", "--json"])
    assert code == 0, err
    ranked = json.loads(out)["layouts"]
    rows = [r for cp in sorted({r["cp"] for r in ranked})
            for r in [r for r in ranked if r["cp"] == cp][:per_cp]]
    rows += [next(r for r in ranked if r["pp"] > 1)]
    for row in rows:
        code, out, err = run_cli(capsys, ["predict", *predict_argv,
                                          *predict_flags(row, global_batch), "--json"])
        assert code == 0, (row, err)
        p, parts = json.loads(out)[0], row["breakdown_s"]
        assert (p["dp"], p["tp"], p["pp"], p["cp"]) == (row["dp"], row["tp"], row["pp"], row["cp"])
        assert p["step_time_s"] == pytest.approx(row["step_time_s"], rel=1e-9), row
        assert p["compute_s"] == pytest.approx(parts["compute_s"], rel=1e-9)
        assert p["tp_comm_s"] == pytest.approx(parts["tp_comm_s"], rel=1e-9, abs=1e-15)
        assert p["cp_comm_s"] == pytest.approx(parts["cp_comm_s"], rel=1e-9, abs=1e-15)
        assert p["pipeline_comm_s"] == pytest.approx(parts["p2p_s"], rel=1e-9, abs=1e-15)
        assert p["bubble_s"] == pytest.approx(parts["bubble_s"], rel=1e-9, abs=1e-15)
        assert p["straggler_s"] == pytest.approx(parts["straggler_s"], rel=1e-9, abs=1e-15)
        assert p["memory_bytes"] == pytest.approx(row["memory_bytes"], rel=1e-9)
        assert p["fits"] == row["fits"]
    return rows


@pytest.mark.parametrize("seq_len", [8192, 32768])
def test_plan_rows_at_another_sequence_re_predict_through_predict_seq_len(capsys, seq_len):
    """Llama 3 8B on DGX H100 at 8,192 tokens (its own) and 32,768, cp 1 and 2 searched on 8
    and 16 GPUs, global batch 16: the first 4 rows of each cp and the first pipelined one,
    copied into ``predict --seq-len``, give the plan's step, breakdown, memory and fit to 1e-9.
    Before: 'unrecognized arguments: --seq-len'."""
    argv = [*LLAMA, "--seq-len", str(seq_len)]
    rows = assert_re_predicts(capsys, [*argv, "--devices", "8,16", "--cp", "1,2"], argv, 16)
    assert {r["cp"] for r in rows} == {1, 2} and any(r["pp"] > 1 for r in rows)


def test_the_seq_len_note_counts_the_parameters_and_the_unit_by_hand(capsys):
    """Llama 3 8B has no learned positions: 8,030,261,248 parameters at any sequence (32 layers
    x (2 x 4096 x (4096 + 1024) + 3 x 4096 x 14336 + 2 x 4096) + 2 x 128,256 x 4096 + 4096).
    At 32,768 tokens the unit says the tokens, and the note says what changed; at its own
    8,192 there is no such note."""
    layer = 2 * 4096 * (4096 + 1024) + 3 * 4096 * 14336 + 2 * 4096
    assert 32 * layer + 2 * 128256 * 4096 + 4096 == 8_030_261_248
    profile = resolve_profile(None, "dgx-h100", "llama3-8b", 32768)
    assert profile.workload.transformer.seq_len == 32768
    assert profile.workload.params == 8_030_261_248
    assert profile.workload.sample_unit == "sequences of 32768 tokens"
    assert profile.notes[0] == ("--seq-len 32768: the transformer at 32,768 tokens per sequence "
                                "instead of the workload's 8,192 (8,030,261,248 parameters)")
    own = resolve_profile(None, "dgx-h100", "llama3-8b", 8192)
    assert not any(n.startswith("--seq-len") for n in own.notes)


def test_learned_positions_and_a_training_length_follow_the_sequence():
    """BERT-large's transformer (128 learned positions x 1024) at 512 tokens: 384 x 1024 =
    393,216 parameters more; a training length of 1e6 sequences of 128 tokens is 2.5e5 of 512
    (the tokens kept)."""
    wl = transformer_workload("bert-large").model_copy(update={"train_samples": 1e6})
    at, note = workload_at_sequence(wl, 512, "bert-large")
    assert at.params - wl.params == 384 * 1024
    assert at.train_samples == pytest.approx(2.5e5, rel=1e-12)
    assert at.sample_unit == "sequences of 512 tokens"
    assert "its training length kept in tokens: 1e+06 sequences of 128 = 2.5e+05 of 512" in note


def test_a_published_throughput_is_not_used_at_another_sequence_as_plan_ranks_it(
        tmp_path, capsys):
    """A Llama 3 8B workload file with a published run's throughput (a reference, at its own
    8,192 tokens): predict at 8,192 reads it (4x slower here than the shape's estimate: the
    made-up run is 0.1 sequences/s a GPU), and plan never does; at --seq-len 4096 the run says
    nothing of the sequence, so predict uses the shape's estimate as plan ranks it, and its
    rows re-predict to 1e-9; the note says the reference is not used."""
    wl = transformer_workload("llama3-8b")
    ref = WORKLOADS["gpt-7b"].reference[0].model_copy(update={
        "device_name": "H100-SXM5 80GB", "system": "dgx-h100", "samples_per_s": 0.1})
    path = tmp_path / "llama-ref.json"
    path.write_text(wl.model_copy(update={"reference": [ref]}).model_dump_json())
    argv = ["--workload", str(path), "--hardware", "dgx-h100"]
    at_own = resolve_profile(None, "dgx-h100", str(path))
    assert at_own.compute.per_sample_s > 4 * resolve_profile(
        None, "dgx-h100", "llama3-8b").compute.per_sample_s
    short = [*argv, "--seq-len", "4096"]
    assert_re_predicts(capsys, [*short, "--devices", "8"], short, 16, per_cp=3)
    profile = resolve_profile(None, "dgx-h100", str(path), 4096)
    assert not profile.workload.reference
    assert profile.notes[0].endswith("its published throughput (reference) was measured at "
                                     "8192 tokens and is not used: the compute comes from the "
                                     "shape, as scalesim plan ranks it")


def test_a_measured_profiles_own_model_at_another_sequence_re_predicts_plans_rows(capsys):
    """The H200 profile's own gpt (timed at 1,024 tokens, no workload given) at --seq-len
    2048: plan ranks it on the measured curve scaled to 2,048 (profiles.workload_compute) and
    predict --seq-len 2048 takes the same decision, so its rows re-predict to 1e-9 (before:
    predict could not ask the profile's own model at another sequence at all)."""
    argv = ["--profile", str(H200), "--seq-len", "2048"]
    assert_re_predicts(capsys, [*argv, "--devices", "1,2"], argv, 8, per_cp=4)
    profile = resolve_profile(str(H200), None, None, 2048)
    assert profile.workload.transformer.seq_len == 2048
    assert any("sequence 2048 instead of 1024" in n for n in profile.notes)


@pytest.mark.parametrize(("command", "flags", "message"), [
    ("predict", ["--workload", "bert-large", "--seq-len", "512"],
     "--seq-len 512: workload 'bert-large' is a parameter count only, with no transformer "
     "shape whose sequence could change (the data-parallel preset; scalesim plan --workload "
     "bert-large --seq-len 512 plans the transformer preset of that name, or give a workload "
     "file with its 'transformer' shape)"),
    ("sweep", ["--workload", "resnet50", "--seq-len", "512", "--devices", "8"],
     "--seq-len 512: workload 'resnet50' is a parameter count only, with no transformer shape "
     "whose sequence could change (give --workload with a 'transformer' shape (e.g. "
     "llama3-8b))"),
    ("predict", [*LLAMA, "--seq-len", "32766", "--devices", "8", "--cp", "2"],
     "layout at 8 devices: sequence length 32766 is not divisible by 2 x --cp 2 (load-balanced context "
     "parallelism); use --cp 1, or --seq-len 32764 or 32768"),
    ("decide", [*LLAMA, "--seq-len", "0"],
     "argument --seq-len: 0 is outside 1 <= x <= 1,073,741,824 tokens (tokens per sequence "
     "(1M-token contexts exist)) (see scalesim decide --help)"),
])
def test_a_seq_len_that_cannot_be_predicted_is_refused_in_one_line(capsys, command, flags,
                                                                    message):
    code, out, err = run_cli(capsys, [command, *flags])
    assert code != 0 and out == ""
    assert err.strip().splitlines()[-1] == f"scalesim {command}: error: {message}"


def test_sweep_decide_and_goal_take_seq_len_as_a_workload_file_at_that_length(tmp_path, capsys):
    """--seq-len 16384 on sweep, decide and goal gives what a workload file of Llama 3 8B at
    16,384 tokens gives (the rows, the card, the goal's answer: 16 GPUs as dp 8 x cp 2),
    notes aside; at its own 8,192 tokens the answers differ."""
    wl = transformer_workload("llama3-8b")
    path = tmp_path / "llama-16k.json"
    path.write_text(wl.model_copy(update={"transformer": wl.transformer.model_copy(
        update={"seq_len": 16384}), "sample_unit": "sequences of 16384 tokens"}
    ).model_dump_json())
    common = ["--hardware", "dgx-h100", "--accumulation", "4"]
    zero1 = ["--strategy", "zero1", "--devices", "16", "--global-batch", "32"]
    for command, more in (("sweep", [*zero1, "--cp-values", "2,4", "--format", "json"]),
                          ("decide", [*zero1, "--cp", "2", "--json"]),
                          ("goal", ["--cp", "2", "--max-devices", "64", "--train-samples",
                                    "1e6", "--deadline", "30d", "--budget", "1e7", "--json"])):
        outs = []
        for workload in (["--workload", "llama3-8b", "--seq-len", "16384"],
                         ["--workload", str(path)], ["--workload", "llama3-8b"]):
            code, out, err = run_cli(capsys, [command, *workload, *common, *more])
            assert code == 0, (command, err)
            outs.append(json.loads(out))
        if command != "sweep":  # the notes name the flag or the file
            for o in outs:
                o.pop("notes", None)
        assert outs[0] == outs[1] != outs[2], command
