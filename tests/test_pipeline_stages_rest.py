"""torchtitan's own pipeline split said where it differs from the model's, predict's --json
stage fields and sweep's notes on uneven pp (session 20, branch stages2_20)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.layout import layers_per_stage
from scalesim.pipeline_stages import (
    stage_fields,
    stage_split,
    stage_words,
    torchtitan_chunks,
    torchtitan_stages,
    torchtitan_words,
)

PREDICT_70B = ["predict", "--workload", "llama3-70b", "--hardware", "dgx-h100"]


def _torchtitan_as_read(num_stages: int, num_layers: int, input_weight: int = 1,
                        output_weight: int = 1) -> list[list[str]] | None:
    """``_generate_llm_fqn_per_model_part`` as read in pytorch/torchtitan
    torchtitan/distributed/pipeline_parallel.py at 73aed7f6 (2026-08-20), module names and
    all, its ValueErrors as None: the reference ``torchtitan_chunks`` is checked against."""
    if num_stages == 1:
        return [["tok_embeddings"] + [f"layers.{i}" for i in range(num_layers)]
                + ["norm", "lm_head"]]
    effective = num_layers + input_weight + output_weight
    if num_stages > effective:
        return None
    per, extra = effective // num_stages, effective % num_stages
    if per == 0 or input_weight > per or output_weight > per:
        return None
    out, current = [], 0
    for stage in range(num_stages):
        modules, mine = [], per + (1 if stage < extra else 0)
        if stage == 0:
            modules.append("tok_embeddings")
            mine -= input_weight
        elif stage == num_stages - 1:
            mine -= output_weight
        for _ in range(mine):
            if current < num_layers:
                modules.append(f"layers.{current}")
                current += 1
        if stage == num_stages - 1:
            modules += ["norm", "lm_head"]
        out.append(modules)
    return out


def test_torchtitan_chunks_follow_its_source_rule():
    """Every layer count to 130 over 1 to 40 chunks: the layers per chunk are the source's."""
    for layers in range(1, 131):
        for stages in range(1, 41):
            read = _torchtitan_as_read(stages, layers)
            ours = torchtitan_chunks(layers, stages)
            if read is None:
                assert ours is None, (layers, stages)
                continue
            assert ours == tuple(sum(m.startswith("layers.") for m in s) for s in read)
            assert sum(ours) == layers


@pytest.mark.parametrize("layers, pp, v, ranks", [
    # 82 over 8: 10 r 2 -> 11, 11, 10 x 6; the first and last less one
    (80, 8, 1, (10, 11, 10, 10, 10, 10, 10, 9)),
    (80, 9, 1, (9,) * 8 + (8,)),  # 82 over 9: 9 r 1 -> 10, 9 x 8 -> 9 x 8, 8
    (80, 6, 1, (13, 14, 14, 14, 13, 12)),  # 82 over 6: 13 r 4 -> 14 x 4, 13, 13
    (80, 2, 1, (40, 40)),  # 82 over 2: 41, 41
    (126, 64, 1, (1,) + (2,) * 62 + (1,)),  # 128 over 64: 2 each
    # 82 over 12 chunks: 6 r 10 -> 7 x 10, 6, 6 -> 6, 7 x 9, 6, 5; rank r holds r, r+4, r+8
    (80, 4, 3, (6 + 7 + 7, 7 + 7 + 7, 7 + 7 + 6, 7 + 7 + 5)),
])
def test_torchtitan_stages_by_hand(layers, pp, v, ranks):
    assert torchtitan_stages(layers, pp, v) == ranks


def test_torchtitan_is_said_only_where_its_split_differs():
    assert torchtitan_words(80, 9) == ""  # the same as Megatron-LM's flags give
    assert torchtitan_words(80, 2) == torchtitan_words(80, 1) == ""
    assert torchtitan_words(126, 64) == ""
    assert torchtitan_words(80, 8) == (
        "torchtitan splits 80 layers + embedding + output as 10, 11, 5 stages of 10, 9: its "
        "fullest stage 11 layers, the model charges 10")
    # its fullest rank is the model's 14: no clause on it
    assert torchtitan_words(80, 6) == (
        "torchtitan splits 80 layers + embedding + output as 13, 3 stages of 14, 13, 12")
    # the model charges 7 + 7 + 6 a rank; torchtitan's fullest rank holds 21
    assert torchtitan_words(80, 4, 3) == (
        "torchtitan splits 80 layers + embedding + output as chunks 6, 9 chunks of 7, 6, 5 "
        "(stages 20, 21, 20, 19): its fullest stage 21 layers, the model charges 20")
    assert stage_words(80, 9).endswith("; torchtitan splits it so by itself)")
    assert stage_words(80, 6).endswith(
        "; torchtitan splits 80 layers + embedding + output as 13, 3 stages of 14, 13, 12)")
    assert stage_words(80, 4) == (
        "80 layers over pp 4: 20 layers a stage in the model and Megatron-LM; torchtitan "
        "splits 80 layers + embedding + output as 20, 21, 20, 19: its fullest stage 21 layers, "
        "the model charges 20")
    assert stage_words(80, 2) == ""


def test_stage_fields_are_null_without_a_shape():
    assert stage_fields(None, 4) == {"layers_per_stage": None, "uneven_stages": None,
                                     "stage_notes": None}
    assert stage_fields(80, 1) == {"layers_per_stage": [80], "uneven_stages": None,
                                   "stage_notes": None}
    assert stage_fields(80, 9) == {"layers_per_stage": [9] * 8 + [8],
                                   "uneven_stages": stage_words(80, 9),
                                   "stage_notes": stage_words(80, 9)}


def test_stage_fields_worked_out_once_are_the_words_and_a_fresh_list_each_call():
    """Session 45: the planner's rows share one working-out per (L, pp, v)
    (``pipeline_stages._stage_facts``): each call's fields are those of ``stage_split`` and
    ``stage_words`` as computed afresh, and a caller changing its list changes no later row."""
    from scalesim.pipeline_stages import uneven_stage_words

    for layers, pp, v in [(80, 9, 1), (80, 9, 2), (80, 4, 1), (126, 64, 1), (32, 13, 1),
                          (96, 8, 3), (80, 1, 1)]:
        first = stage_fields(layers, pp, v)
        first["layers_per_stage"].append(-1)
        again = stage_fields(layers, pp, v)
        assert again["layers_per_stage"] == list(stage_split(layers, pp, v).stages)
        assert again["uneven_stages"] == (uneven_stage_words(layers, pp, v) or None)
        assert again["stage_notes"] == (stage_words(layers, pp, v) or None)


def test_uneven_stages_is_null_where_the_models_stages_are_even():
    """Session 20: 80 layers over pp 4 are even in the model (20 a stage); torchtitan's split
    (20, 21, 20, 19) is a stage note, not 'uneven_stages' (was: uneven_stages held it)."""
    assert stage_fields(80, 4) == {"layers_per_stage": [20] * 4, "uneven_stages": None,
                                   "stage_notes": stage_words(80, 4)}
    assert "torchtitan splits 80 layers" in stage_words(80, 4)


def test_predict_json_rows_have_plan_s_stage_fields(capsys):
    code, out, _ = run_cli(capsys, [*PREDICT_70B, "--devices", "72,144", "--global-batch",
                                    "1152", "--tp", "4", "--pp", "9", "--json"])
    assert code == 0
    rows = json.loads(out)
    assert [r["layers_per_stage"] for r in rows] == [[9] * 8 + [8]] * 2
    assert [r["uneven_stages"] for r in rows] == [stage_words(80, 9)] * 2
    assert [r["stage_notes"] for r in rows] == [stage_words(80, 9)] * 2
    code, out, _ = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--hardware", "dgx-h100",
                                    "--devices", "72", "--global-batch", "1152", "--json"])
    plan_row = next(r for r in json.loads(out)["layouts"] if r["pp"] == 9 and r["virtual_stages"] == 1)
    assert {k: plan_row[k] for k in ("layers_per_stage", "uneven_stages", "stage_notes")} == {
        k: rows[0][k] for k in ("layers_per_stage", "uneven_stages", "stage_notes")}
    code, out, _ = run_cli(capsys, [*PREDICT_70B, "--devices", "64", "--global-batch", "1024",
                                    "--tp", "8", "--json"])
    row = json.loads(out)[0]
    assert (row["layers_per_stage"], row["uneven_stages"], row["stage_notes"]) == ([80], None, None)
    code, out, _ = run_cli(capsys, [*PREDICT_70B, "--devices", "64", "--global-batch", "1024",
                                    "--tp", "4", "--pp", "4", "--json"])
    row = json.loads(out)[0]  # even in the model, torchtitan's split differs: a note only
    assert (row["layers_per_stage"], row["uneven_stages"]) == ([20] * 4, None)
    assert row["stage_notes"] == stage_words(80, 4)
    code, out, _ = run_cli(capsys, ["predict", "--devices", "8", "--json"])  # a parameter count
    row = json.loads(out)[0]
    assert code == 0 and (row["layers_per_stage"], row["uneven_stages"],
                          row["stage_notes"]) == (None, None, None)


def test_sweep_over_pp_says_each_uneven_pp_once(capsys):
    code, out, err = run_cli(capsys, ["sweep", "--workload", "llama3-70b", "--hardware",
                                      "dgx-h100", "--devices", "72,144", "--global-batch", "1152",
                                      "--tp", "4", "--pp-values", "1,2,9,8,9"])
    assert code == 0 and "layers over pp" not in out  # stdout holds only the rows
    notes = [line for line in err.splitlines() if "layers over pp" in line]
    # no pp 8 row is written (tp 4 x pp 8 = 32 divides neither 72 nor 144): no note of its
    # stages (session 50; said before, of rows not in the output)
    assert notes == [f"note: {stage_words(80, 9)}"]
    code, _, err = run_cli(capsys, ["sweep", "--workload", "llama3-70b", "--hardware",
                                    "dgx-h100", "--devices", "64,128", "--global-batch", "1024",
                                    "--tp", "4", "--pp-values", "1,2"])
    assert code == 0 and "layers over pp" not in err


def test_the_model_charges_the_fullest_rank_that_runs():
    """80 layers over pp 4 x v 3 run 20 layers a rank (chunks 7, 7, 6): the model charged v
    chunks of the fullest, 21, until session 20 (stages2_20); now rank 0's layers,
    v floor(L / (pp v)) + ceil((L mod pp v) / pp), which at v = 1 is ceil(L / pp)."""
    assert layers_per_stage(80, 4, 3) == 3 * 6 + 2 == max(stage_split(80, 4, 3).stages) == 20
    assert layers_per_stage(78, 4, 3) == 3 * 6 + 2 == 20  # chunks 7, 7, 6 on ranks 0 and 1
    assert layers_per_stage(126, 8, 8) == 8 * 1 + 8 == 16  # Llama 3.1 405B's 64 chunks
    assert layers_per_stage(80, 9) == 9 and layers_per_stage(126, 64) == 2


def test_interleaving_that_splits_20_a_rank_computes_as_an_even_one(capsys):
    """pp 4 with v 2 (chunks of 10), v 3 (7, 7, 6) and v 4 (5): 20 layers a rank each, so the
    same compute per step; v 3 computed 21 / 20 of it before."""
    compute = {}
    for v in (2, 3, 4):
        code, out, _ = run_cli(capsys, [*PREDICT_70B, "--devices", "64", "--global-batch", "64",
                                        "--accumulation", "16", "--tp", "4", "--pp", "4",
                                        "--schedule", "interleaved", "--virtual-stages", str(v),
                                        "--json"])
        assert code == 0, out
        compute[v] = json.loads(out)[0]["compute_s"]
    assert compute[3] == pytest.approx(compute[2], rel=1e-12)
    assert compute[4] == pytest.approx(compute[2], rel=1e-12)
