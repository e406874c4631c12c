"""A sweep row whose swept layout value means nothing for its layout (virtual stages above 1 or
a schedule other than none at pp 1, sequence parallelism at tp 1) is dropped as a broken
layout, with predict's rule in the dropped note: predict refuses that scenario, and plan never
ranks it. Before, each was written as a row: the row without the value under another label
(and, for a schedule at pp 1, with GPipe's memory of a pipeline that does not exist). The two
switch axes alike (session 41's review): the tensor-parallel overlap on at tp 1, the pipeline
sends' overlap off on a row that does not interleave."""

from __future__ import annotations

import pytest
from cli_harness import run_cli
from sweep_llama_case import BASE, CLI

from scalesim.errors import ScalesimError
from scalesim.layout import (
    P2P_OVERLAP_NEEDS_INTERLEAVED,
    SEQUENCE_PARALLEL_NEEDS_TP,
    TP_OVERLAP_NEEDS_TP,
    knob_refusal,
)
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import ScenarioLayout
from scalesim.sweep import sweep


@pytest.fixture(scope="module")
def profile():
    return resolve_profile(None, "dgx-h100", "llama3-8b")


@pytest.mark.parametrize(("axes", "kept", "dropped", "rule"), [
    ({"pp": [1, 2], "virtual_stages": [1, 2]}, [(1, 1), (2, 1), (2, 2)], 1,
     "tp 1 x pp 1 on 8 devices: --virtual-stages 2 needs --pp 2 or more and --schedule "
     "interleaved (model chunks of a pipeline's stages); give both, or --virtual-stages 1"),
    # pp 2 with none broke a rule before; pp 1 with 1f1b or gpipe is new
    ({"pp": [1, 2], "schedule": ["none", "1f1b", "gpipe"]},
     [(1, "none"), (2, "1f1b"), (2, "gpipe")], 3,
     "tp 1 x pp 1 on 8 devices: --schedule 1f1b needs --pp 2 or more (a pipeline); at --pp 1 "
     "leave --schedule at its default"),
    ({"tp": [1, 2], "sequence_parallel": [True, False]}, [(1, False), (2, True), (2, False)], 1,
     f"tp 1 x pp 1 on 8 devices: {knob_refusal(SEQUENCE_PARALLEL_NEEDS_TP)}"),
    # the switches: tp 1 with the overlap on, blocking sends at one chunk a stage (1F1B)
    ({"tp": [1, 2], "tp_overlap": [True, False]}, [(1, False), (2, True), (2, False)], 1,
     f"tp 1 x pp 1 on 8 devices: {knob_refusal(TP_OVERLAP_NEEDS_TP)}"),
    ({"virtual_stages": [1, 2], "p2p_overlap": [True, False]}, [(1, True), (2, True), (2, False)],
     1, f"tp 1 x pp 2 on 8 devices: {knob_refusal(P2P_OVERLAP_NEEDS_INTERLEAVED)}"),
])
def test_a_swept_value_the_layout_does_not_run_is_dropped_as_predict_refuses_it(
        profile, axes, kept, dropped, rule):
    """Of the 4 (or 6) combinations, those with the value where it means nothing are dropped
    and counted as broken layouts, the first named with predict's words; every row kept is
    predict's of its scenario, and predict refuses each dropped one. The sends' overlap is
    swept on pp 2 (a pipeline whose rows interleave at 2 virtual stages)."""
    (a, values_a), (b, values_b) = axes.items()
    base = BASE.model_copy(update={"layout": ScenarioLayout(pp=2)}) if "p2p_overlap" in axes \
        else BASE
    split = base.layout or ScenarioLayout()
    res = sweep(profile, base, axes)
    c = res.columns
    got = [(x.item(), y.item()) for x, y in zip(c[a], c[b], strict=True)]
    assert got == kept
    assert (res.dropped, res.dropped_layout) == (dropped, dropped)
    assert res.layout_example == rule
    for (x, y), step, memory in zip(got, c["step_time_s"], c["memory_bytes"], strict=True):
        want = predict(profile, base.model_copy(update={"layout": split.model_copy(
            update={a: x, b: y})}))[0]
        assert step == pytest.approx(want.step_time_s, rel=1e-12)
        assert memory == pytest.approx(want.memory_bytes, rel=1e-12)
    for x in values_a:
        for y in values_b:
            if (x, y) in kept:
                continue
            with pytest.raises(ScalesimError):
                predict(profile, base.model_copy(update={"layout": split.model_copy(
                    update={a: x, b: y})}))


def test_the_cli_says_the_drop_in_its_note(capsys):
    code, out, err = run_cli(capsys, [*CLI, "--pp-values", "1,2", "--virtual-stages-values",
                                      "1,2"])
    assert code == 0, err
    assert out.count("\n") == 1 + 3  # the header and the three rows that mean something
    # the swept knobs by their grid flags, as typed (before session 50: '--virtual-stages 2
    # needs --pp 2 or more ...; give both, or --virtual-stages 1', predict's flags)
    assert ("note: 1 combination dropped: 1 breaks a layout rule (e.g. tp 1 x pp 1 on 8 "
            "devices: --virtual-stages-values 2 needs --pp-values 2 or more and --schedule "
            "interleaved (model chunks of a pipeline's stages); give both, or "
            "--virtual-stages-values 1)") in err.splitlines()


def test_a_one_value_schedule_runs_no_pipeline_at_pp_1(profile):
    """``--schedule gpipe --pp-values 1,2``: the schedule is the pipelined rows' setting (not a
    row of its own); the pp 1 row runs no pipeline, its memory predict's of pp 1 (191.5 GiB,
    one micro-batch's activations at a time). Before: GPipe's at pp 1, 441.0 GiB (the
    activations of all 8 micro-batches kept), for a layout with no pipeline."""
    base = BASE.model_copy(update={"layout": ScenarioLayout(schedule="gpipe")})
    c = sweep(profile, base, {"pp": [1, 2]}).columns
    assert c["pp"].tolist() == [1, 2]
    one = predict(profile, BASE)[0]
    assert c["memory_bytes"][0] == pytest.approx(one.memory_bytes, rel=1e-12)
    assert c["step_time_s"][0] == pytest.approx(one.step_time_s, rel=1e-12)
    # 161.57 before session 48 counted PyTorch DDP's fp32 all-reduce buckets beside its
    # gradients: + 8.03e9 parameters x 4 B = 29.92 GiB
    assert one.memory_bytes / 2**30 == pytest.approx(191.49, abs=0.01)
    gpipe = predict(profile, base.model_copy(update={"layout": ScenarioLayout(
        pp=2, schedule="gpipe")}))[0]
    assert c["memory_bytes"][1] == pytest.approx(gpipe.memory_bytes, rel=1e-12)
