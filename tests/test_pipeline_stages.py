"""Uneven pipeline stages said once per layout (plan, predict, decide, the app), and the app's
replica size from the layout module (session 20)."""

from __future__ import annotations

import json
import math

import pytest
from app_harness import open_app
from cli_harness import run_cli, whole_lines
from scalesim.app.plan import _split_of, build_scenario, make_plan, more_devices_count
from scalesim.app.state import decode_query, default_state, preset_profile

from scalesim.layout import layers_per_stage, replica_devices
from scalesim.pipeline_stages import stage_split, uneven_notes, uneven_stage_words

PP9 = ("80 layers over pp 9: 8 stages of 9 layers and one of 8 (Megatron-LM: "
       "--decoder-last-pipeline-num-layers 8; torchtitan splits it so by itself)")
# 80 layers over pp 8: even to the model and Megatron-LM; torchtitan spreads 82 over 8 stages,
# 11, 11, 10 x 6, and takes the embedding off the first and the output off the last
PP8 = ("80 layers over pp 8: 10 layers a stage in the model and Megatron-LM; torchtitan splits "
       "80 layers + embedding + output as 10, 11, 5 stages of 10, 9: its fullest stage 11 "
       "layers, the model charges 10")
# since session 60 the planner's first at 72 GPUs runs 8 virtual stages: at 4, rank 0's chunks
# of 3, 2, 2, 2 layers hold more activations in Megatron's order than 9 x the chunks in flight
# (``interleaved_peak_layers``), and 8 (2, 1, ...) runs faster in what fits
PP9V8 = ("80 layers over pp 9 x 8 virtual stages: 8 model chunks of 2 layers and 64 of 1 "
         "(Megatron-LM: --pipeline-model-parallel-layout, as its first/last-stage flags need "
         "every stage's layers a multiple of 8; torchtitan splits 80 layers + embedding + output "
         "as chunks 1, 9 chunks of 2, 61 chunks of 1, 0 (stages 8 stages of 9, 8))")
PLAN_72 = ["plan", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "72",
           "--global-batch", "1152"]


@pytest.mark.parametrize("layers, pp, v, stages, flags", [
    (80, 9, 1, (9,) * 8 + (8,), "--decoder-last-pipeline-num-layers 8"),  # 8 x 9 + 8
    (80, 8, 1, (10,) * 8, ""),  # even
    (80, 4, 5, (20,) * 4, ""),  # 20 chunks of 4: even
    (126, 16, 1, (8,) * 15 + (6,), "--decoder-last-pipeline-num-layers 6"),  # 15 x 8 + 6
    (80, 6, 1, (14,) * 5 + (10,), "--decoder-last-pipeline-num-layers 10"),  # 5 x 14 + 10
    # 78 over 12 chunks: 6 of 7 and 6 of 6, rank r holds chunks r, r + 4, r + 8: 20, 20, 19,
    # 19; no first/last flags give a fullest rank of 20 in multiples of 3 (3 x 18 < 78)
    (78, 4, 3, (20, 20, 19, 19), None),
    # 63 x 2 = 126: the last would hold none, so the first and last hold one each
    (126, 64, 1, (1,) + (2,) * 62 + (1,),
     "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 1"),
    (81, 2, 1, (41, 40), "--decoder-last-pipeline-num-layers 40"),
    (80, 1, 1, (80,), ""),
])
def test_hand_computed_stage_counts(layers, pp, v, stages, flags):
    split = stage_split(layers, pp, v)
    assert (split.stages, split.megatron_flags) == (stages, flags)
    assert max(split.stages) == layers_per_stage(layers, pp, v)  # the stage the model charges


def test_interleaved_stages_megatron_cannot_flag_are_said_as_chunks():
    """80 layers over pp 4 x v 3: 12 chunks, 8 of 7 and 4 of 6; no stage split into first/last
    flags has every stage a multiple of 3 (80 is not), so Megatron-LM needs its layout flag."""
    split = stage_split(80, 4, 3)
    assert split.megatron_flags is None
    assert split.chunks == (7,) * 8 + (6,) * 4 and split.stages == (20, 20, 20, 20)
    assert uneven_stage_words(80, 4, 3) == (
        "80 layers over pp 4 x 3 virtual stages: 8 model chunks of 7 layers and 4 of 6 "
        "(Megatron-LM: --pipeline-model-parallel-layout, as its first/last-stage flags need "
        "every stage's layers a multiple of 3; torchtitan splits 80 layers + embedding + output "
        "as chunks 6, 9 chunks of 7, 6, 5 (stages 20, 21, 20, 19): its fullest stage 21 "
        "layers, the model charges 20)")


def _megatron_stages(layers, pp, v, flags: str) -> tuple[int, ...]:
    """Layers per pipeline rank as Megatron-Core's ``get_num_layers_to_build`` gives them for
    ``flags`` (its asserts as ours)."""
    words = flags.split()
    given = dict(zip(words[::2], map(int, words[1::2]), strict=True))
    first = given.get("--decoder-first-pipeline-num-layers")
    last = given.get("--decoder-last-pipeline-num-layers")
    rest, left = layers - (first or 0) - (last or 0), pp - (first is not None) - (last is not None)
    if left:
        assert rest % left == 0
    middle = rest // left if left else 0
    out = tuple(first if r == 0 and first is not None else
                last if r == pp - 1 and last is not None else middle for r in range(pp))
    assert all(n > 0 and n % v == 0 for n in out)  # every rank's layers in v whole chunks
    return out


def test_every_split_holds_the_layers_with_the_model_s_fullest_chunk():
    """For every layer count to 130, pp to 16 and v to 4 that fill the chunks: the layers add
    up, the fullest chunk is the model's ceil(L / (pp v)), and where Megatron-LM's flags are
    given they build exactly these stages, the fullest the model's stage."""
    for layers in range(1, 131):
        for pp in range(1, 17):
            for v in range(1, 5):
                if pp * v > layers or (pp == 1 and v > 1):
                    continue
                split = stage_split(layers, pp, v)
                assert sum(split.stages) == sum(split.chunks) == layers
                assert max(split.chunks) == math.ceil(layers / (pp * v))
                if split.megatron_flags is not None:
                    assert _megatron_stages(layers, pp, v, split.megatron_flags) == split.stages
                    assert max(split.stages) == layers_per_stage(layers, pp, v)
                assert (uneven_stage_words(layers, pp, v) == "") == (layers % (pp * v) == 0)


def test_the_words_and_once_per_layout():
    assert uneven_stage_words(80, 9) == PP9
    assert uneven_stage_words(80, 8) == uneven_stage_words(80, 4, 5) == ""
    assert uneven_stage_words(126, 16).startswith(
        "126 layers over pp 16: 15 stages of 8 layers and one of 6 (Megatron-LM: "
        "--decoder-last-pipeline-num-layers 6;")
    assert uneven_notes(80, [(9, 1), (8, 1), (9, 1), (6, 1), (2, 1)]) == [
        PP9, PP8, uneven_stage_words(80, 6)]  # pp 2: 41 + 41 less the ends, 40 and 40


def test_plan_says_the_uneven_stages_once_under_the_table(capsys):
    code, out, _ = run_cli(capsys, PLAN_72)
    assert code == 0
    table = out.splitlines()
    assert table[4].split()[:5] == ["1", "72", "2", "4", "9"]  # pp 9 ranks first
    # interleaved x 8 (rank 1), its sends hidden behind the next chunk; zero-bubble at 2-3
    assert out.count(f"note: {PP9V8}") == 1
    assert out.count(f"note: {PP9}") == 1


def test_plan_json_has_the_layers_per_stage_and_the_words(capsys):
    code, out, _ = run_cli(capsys, [*PLAN_72, "--json"])
    assert code == 0
    rows = json.loads(out)["layouts"]
    assert (rows[0]["pp"], rows[0]["virtual_stages"]) == (9, 8)
    assert rows[0]["layers_per_stage"] == [9] * 8 + [8]
    assert rows[0]["uneven_stages"] == rows[0]["stage_notes"] == PP9V8
    zb = next(r for r in rows if r["pp"] == 9 and r["schedule"] == "zb")
    assert zb["uneven_stages"] == zb["stage_notes"] == PP9
    code, out, _ = run_cli(capsys, [*PLAN_72[:-3], "64", "--global-batch", "1024", "--json",
                                    "--top", "20"])
    even = [r for r in json.loads(out)["layouts"] if 80 % (r["pp"] * r["virtual_stages"]) == 0]
    assert all(r["layers_per_stage"] == [80 // r["pp"]] * r["pp"] for r in even)
    # even to the model: nothing to say at pp 1 and 2 (torchtitan: 41 - 1 and 41 - 1), else
    # torchtitan's split (PP8 at pp 8)
    # uneven_stages is null on every such row: the model's stages are even (session 20: it
    # held torchtitan's split); stage_notes says torchtitan's split
    assert even and all(r["uneven_stages"] is None for r in even)
    quiet = [r for r in even if r["pp"] <= 2 and r["virtual_stages"] == 1]
    assert quiet and all(r["stage_notes"] is None for r in quiet)
    said = {(r["pp"], r["virtual_stages"]): r["stage_notes"] for r in even if r not in quiet}
    assert said and all(words and "torchtitan splits 80 layers" in words
                        for words in said.values())
    assert said.get((8, 1), PP8) == PP8


def test_predict_with_pp_says_it_on_the_layout_line(capsys):
    code, out, _ = run_cli(capsys, ["predict", "--workload", "llama3-70b", "--hardware",
                                    "dgx-h100", "--devices", "72", "--global-batch", "1152",
                                    "--tp", "4", "--pp", "9"])
    assert code == 0
    layout = next(line for line in out.splitlines() if line.startswith("layout: "))
    assert layout.endswith(f"; {PP9}")
    code, out, _ = run_cli(capsys, ["predict", "--workload", "llama3-70b", "--hardware",
                                    "dgx-h100", "--devices", "64", "--global-batch", "1024",
                                    "--tp", "4", "--pp", "8"])
    assert code == 0  # 80 over 8: even in the model and Megatron-LM, not in torchtitan
    layout = next(line for line in out.splitlines() if line.startswith("layout: "))
    assert layout.endswith(f"; {PP8}")


def test_decide_says_the_planner_s_uneven_layout_once(capsys):
    code, out, _ = run_cli(capsys, ["decide", "--workload", "llama3-70b", "--hardware",
                                    "dgx-h100", "--devices", "72", "--global-batch", "1152",
                                    "--tp", "8", "--strategy", "zero3"])
    assert code == 0
    out = whole_lines(out)
    assert "Change the layout: tp 8 -> 4, pp 1 -> 9" in out
    assert out.count(f"note: {PP9V8}") == 1
    assert "80 layers over pp 5" not in out  # the add-server option's pp 5: even


APP_72 = {"v": "9", "hw": "dgx-h100", "wl": "llama3-70b", "grid": "list", "dlist": "8,72",
          "mode": "strong", "gb": "1152", "focus": "72"}


def test_the_app_sidebar_layout_notes_its_uneven_stages():
    """The page's note names its pipeline by the control (was the CLI's '80 layers over pp
    9: ...', ``PP9``)."""
    state, profile, messages = decode_query({**APP_72, "tp": "4", "pp": "9"})
    assert messages == []
    _, notes = build_scenario(state, profile)
    assert notes.count(PP9.replace("over pp 9", "over Pipeline stages 9")) == 1
    state = state.model_copy(update={"tp": 1, "pp": 8})  # 80 over 8: torchtitan's differs
    assert build_scenario(state, profile)[1].count(
        PP8.replace("over pp 8", "over Pipeline stages 8")) == 1
    state = state.model_copy(update={"tp": 4, "pp": 2})  # 80 over 2: 40 and 40 everywhere
    assert not any("layers over" in n for n in build_scenario(state, profile)[1])


def test_the_layouts_tab_says_the_uneven_stages_under_its_table():
    at = open_app({**APP_72, "tab": "layouts"})
    table = at.dataframe[-1].value
    assert table["pp"].iloc[0] == 9
    said = [c.value for c in at.caption if "Pipeline stages" in c.value]
    assert said.count(f"Pipeline stages: {PP9}.") == 1, said


@pytest.mark.parametrize("update", [
    {"tp": 2, "pp": 4, "sched": "interleaved", "vs": 2},
    {"tp": 4, "pp": 2},
    {"tp": 1, "pp": 8, "sched": "interleaved", "vs": 3},  # 32 layers over 24 chunks
])
def test_the_app_s_replica_is_the_prediction_s(update):
    """The app's tp x pp (``_split_of``: device counts kept, the more-devices count) is what each
    predicted row splits a replica over, devices / dp; virtual stages split no devices."""
    state = default_state().model_copy(update={"wl": "llama3-8b", "dmax": 64, "acc": 8,
                                               **update})
    plan = make_plan(preset_profile(state), state)
    model = _split_of(plan.scenario)
    assert model == replica_devices(update["tp"], update["pp"])
    assert all(r.devices // r.dp == model and r.devices % model == 0 for r in plan.rows)
    more = more_devices_count(plan.focus.devices, 8, model, plan.scenario.global_batch,
                              plan.scenario.accumulation)
    assert more > plan.focus.devices and more % model == 0
