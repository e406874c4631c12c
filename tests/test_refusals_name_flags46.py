"""Session 46: a layout or knob refusal names what the user typed: the CLI's flags on the CLI,
the sidebar's control labels in the app, both from the one knob table (``bounds.KNOBS``,
``bounds.LAYOUT_KNOBS``; ``layout.knob_refusal``, ``errors.in_words_of``).

Before, the lines named the scenario's fields ('tp_overlap needs tp > 1', 'virtual_stages 2
needs the interleaved schedule', 'use zero1, pp 1 or zero_framework fsdp') on the CLI and in the
app alike, and 'use schedule none with pp 1' named a value no flag takes."""

from __future__ import annotations

import dataclasses

import pytest
from app_harness import cannot_predict_box, open_app, preset_query
from cli_harness import run_cli

from scalesim import bounds
from scalesim.errors import ScalesimError, in_words_of
from scalesim.layout import TP_OVERLAP_NEEDS_TP, knob_refusal

BASE = ["--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "16"]

# flags given -> the refusal's line (after 'error: ' and any 'layout at 16 devices: ')
CASES = {
    "tp overlap at tp 1": (["--tp", "1", "--tp-overlap"],
                           "--tp-overlap needs --tp 2 or more (it overlaps the tensor-parallel "
                           "group's collectives with the matmuls)"),
    "sequence parallelism at tp 1": (["--tp", "1", "--sequence-parallel"],
                                     "--sequence-parallel needs --tp 2 or more (it splits the "
                                     "tensor-parallel group's activations)"),
    # the two-step case: no pipeline and no interleaved schedule, both said
    "virtual stages at pp 1": (["--pp", "1", "--virtual-stages", "2"],
                               "--virtual-stages 2 needs --pp 2 or more and --schedule "
                               "interleaved (model chunks of a pipeline's stages); give both, or "
                               "--virtual-stages 1"),
    "virtual stages with 1f1b": (["--tp", "2", "--pp", "2", "--schedule", "1f1b",
                                  "--virtual-stages", "2"],
                                 "--virtual-stages 2 needs --schedule interleaved, several model "
                                 "chunks a stage (1F1B runs one); give --schedule interleaved, or "
                                 "--virtual-stages 1"),
    "a schedule at pp 1": (["--pp", "1", "--schedule", "1f1b"],
                           "--schedule 1f1b needs --pp 2 or more (a pipeline); at --pp 1 leave "
                           "--schedule at its default"),
    "interleaved with one chunk": (["--pp", "2", "--schedule", "interleaved"],
                                   "--schedule interleaved needs --virtual-stages 2 or more (model "
                                   "chunks a stage); give --virtual-stages 2 or more, or another "
                                   "--schedule"),
    "send overlap off without interleaving": (["--pp", "2", "--p2p-overlap", "off"],
                                              "--p2p-overlap off needs the interleaved schedule "
                                              "(--pp 2 or more with --virtual-stages 2 or more)"),
    "DeepSpeed ZeRO-3 under a pipeline": (["--strategy", "zero3", "--pp", "2",
                                           "--zero-framework", "deepspeed"],
                                          "scenario: --strategy zero3 with --pp 2: DeepSpeed "
                                          "refuses ZeRO-2/3 with pipeline parallelism; use "
                                          "--strategy zero1, --pp 1 or --zero-framework fsdp"),
    "DeepSpeed once-per-step": (["--strategy", "zero2", "--zero-framework", "deepspeed",
                                 "--grad-sync", "once-per-step"],
                                "scenario: --grad-sync once-per-step is FSDP's no_sync; DeepSpeed "
                                "stage 2/3 reduce gradients in every micro-step: use "
                                "--zero-framework fsdp or --grad-sync every-micro-step"),
    "a shard group under DeepSpeed": (["--strategy", "zero3", "--zero-framework", "deepspeed",
                                       "--shard-group", "2"],
                                      "--shard-group 2 with --zero-framework deepspeed: hybrid "
                                      "sharding is modelled for FSDP and Megatron-Core"),
    "a shard group of 1": (["--strategy", "zero3", "--shard-group", "1"],
                           "--shard-group 1 with --strategy zero3 is plain replication (no state "
                           "sharded): use --strategy ddp, or --shard-group 2 or more"),
    "cp splitting no sequence": (["--devices", "24", "--cp", "3", "--seq-len", "100"],
                                 "sequence length 100 is not divisible by 2 x --cp 3 (load-"
                                 "balanced context parallelism); use --cp 2, or --seq-len 96 or "
                                 "102"),
    "layers past the chunks": (["--devices", "64", "--pp", "64"],
                               "32 layers cannot fill --pp 64 x --virtual-stages 1 model chunks; "
                               "use --pp <= 32"),
}
FIELDS = ("tp_overlap", "sequence_parallel", "virtual_stages", "p2p_overlap", "zero_framework",
          "grad_sync", "shard_group", "seq_len", "use zero1")


@pytest.mark.parametrize("command", ["predict", "decide"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_refusal_names_the_flags_typed(capsys, command, case):
    flags, line = CASES[case]
    code, out, err = run_cli(capsys, [command, *BASE, *flags])
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert line in err, err
    assert not any(f in err for f in FIELDS), err  # no field name, no bare value


@pytest.mark.parametrize("case", ["tp overlap at tp 1", "virtual stages at pp 1",
                                  "a schedule at pp 1", "DeepSpeed ZeRO-3 under a pipeline"])
def test_sweep_and_goal_say_the_same_flags(capsys, case):
    """sweep (and goal, which judges its flags as sweep's one-value flags) put predict's line
    first; goal's own wording after it is its own."""
    flags, line = CASES[case]
    code, _, err = run_cli(capsys, ["sweep", *BASE, *flags])
    assert code == 2 and line in err, err
    if "--strategy" not in flags:  # goal searches the strategy itself
        code, _, err = run_cli(capsys, ["goal", *BASE[:4], "--deadline", "1000", "--budget",
                                        "1e6", "--train-samples", "1e7", *flags])
        assert code == 2 and line in err, err


def test_the_flags_come_from_the_knob_table(monkeypatch):
    """A flag renamed in the table is the flag the line says: no second list of names."""
    knob = bounds.LAYOUT_KNOB_BY_FIELD["tp_overlap"]
    monkeypatch.setitem(bounds.LAYOUT_KNOB_BY_FIELD, "tp_overlap",
                        dataclasses.replace(knob, flag="--overlap-tp"))
    assert str(knob_refusal(TP_OVERLAP_NEEDS_TP)).startswith("--overlap-tp needs --tp 2 or more")


def test_a_wrapped_refusal_keeps_its_controls_for_another_caller():
    """predict's 'layout at 16 devices: ' prefix keeps the template, so the app can say it in
    its labels; the knobs it names are then its controls named (no 'Controls to change' list
    repeats them)."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    with pytest.raises(ScalesimError) as info:
        predict(profile, Scenario(devices=[16], layout=ScenarioLayout(pp=2, schedule="1f1b",
                                                                       virtual_stages=2)))
    said = in_words_of(info.value, {"virtual_stages": "VS", "schedule": "SCHED"}.__getitem__)
    assert str(said) == ("layout at 16 devices: VS 2 needs SCHED interleaved, several model "
                         "chunks a stage (1F1B runs one); give SCHED interleaved, or VS 1")
    assert said.controls_named == ("virtual_stages", "schedule")
    assert said.knobs == info.value.knobs == ("virtual_stages", "schedule")




def test_the_app_names_the_controls_of_the_interleaved_schedule():
    """Pipeline stages 2, Pipeline schedule interleaved, Virtual stages 1: the box said
    'the interleaved schedule needs virtual\\_stages >= 2'."""
    box = cannot_predict_box(open_app(preset_query(hw="dgx-h100", wl="llama3-8b", pp=2,
                                          sched="interleaved", vs=1)))
    assert ("layout at 2 devices: Pipeline schedule interleaved needs Virtual stages 2 or more "
            "(model chunks a stage); give Virtual stages 2 or more, or another Pipeline "
            "schedule. Below:") in box, box
    assert "--" not in box and "virtual\\_stages" not in box, box
    assert "to change" not in box, box  # the line names both controls itself


def test_the_app_names_the_controls_of_a_shard_group_under_deepspeed():
    """The box said 'shard group 2 with zero\\_framework deepspeed ...; use zero\\_framework
    fsdp or drop the shard group'."""
    box = cannot_predict_box(open_app(preset_query(hw="dgx-h100", wl="llama3-8b", strat="zero3",
                                          zfw="deepspeed", sg=2)))
    assert ("Shard group (HSDP) 2 with ZeRO framework deepspeed: hybrid sharding is modelled "
            "for FSDP and Megatron-Core") in box, box
    assert "use ZeRO framework fsdp or drop Shard group (HSDP)" in box, box
    assert "--" not in box and "zero\\_framework" not in box, box
