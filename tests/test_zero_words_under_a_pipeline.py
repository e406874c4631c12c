"""Session 45: a ZeRO stage is named in the words of what runs it, the same in plan's table note,
its JSON, the app's Layouts table and predict's scenario line. Under a pipeline FSDP's ZeRO-2/3
runs as PyTorch's pipelining runs FSDP2 (torchtitan: reshard_after_forward=False, gradients
reduced once a step; docs/model.md §16): plan's rows said only 'zero 2', and predict's scenario
line said 'zero3 (FSDP FULL_SHARD)' above a layout line saying the stage is held whole."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.model.zero_exchange import framework_label

PIPED = ("FSDP2 reshard_after_forward=False, gradients reduced once a step (PyTorch "
         "pipelining)")
PLAN = ["plan", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64",
        "--global-batch", "64", "--top", "3"]


def test_the_words_of_each_stage():
    assert framework_label("zero2", "fsdp", pipeline=True) == PIPED
    assert framework_label("zero3", "fsdp", "once-per-step", pipeline=True) == PIPED
    assert framework_label("zero2", "fsdp") == "FSDP SHARD_GRAD_OP"  # no pipeline: as before
    assert framework_label("zero1", "fsdp", pipeline=True) == "Megatron-Core distributed optimizer"
    assert framework_label("zero2", "fsdp", hybrid=True, pipeline=True).startswith("FSDP2 HSDP ")


def test_plan_json_and_table_note_name_the_same_words(capsys):
    code, out, err = run_cli(capsys, [*PLAN, "--json"])
    assert code == 0, err
    rows = json.loads(out)["layouts"]
    words = {(r["zero"], r["pp"] > 1): r["strategy_words"] for r in rows}
    # (since session 60, when uneven interleaved chunks' memory moved the ranking, the top 3
    # hold no ZeRO-1 row; the app's table below names Megatron's distributed optimizer)
    assert words == {(3, False): "FSDP FULL_SHARD", (2, True): PIPED}
    code, out, err = run_cli(capsys, PLAN)
    assert code == 0, err
    assert f"note: zero 3: FSDP FULL_SHARD; zero 2 with pp > 1: {PIPED}" in out.splitlines()


def test_predict_names_what_runs_under_the_pipeline(capsys):
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "16", "--pp", "2", "--strategy",
                                      "zero3", "--accumulation", "4"])
    assert code == 0, err
    assert f"scenario: zero3 ({PIPED}), accumulation 4" in out
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "16", "--strategy", "zero3"])
    assert "scenario: zero3 (FSDP FULL_SHARD)," in out  # no pipeline: as before


def test_the_app_layouts_table_shows_the_row_words():
    from app_harness import open_app

    at = open_app({"v": "18", "hw": "dgx-h100", "wl": "llama3-70b", "grid": "list",
                   "dlist": "64", "gb": "64", "mode": "strong", "tab": "layouts"})
    (table,) = [d.value for d in at.dataframe if "ZeRO runs as" in d.value.columns]
    shown = {(int(z), int(p) > 1): w for z, p, w in
             zip(table["ZeRO"], table[table.columns[3]], table["ZeRO runs as"], strict=True)}
    assert shown.get((2, True), PIPED) == PIPED and all(w for w in shown.values())
    assert any(p for _, p in shown), shown  # a pipelined row is shown


def test_plan_rows_words_are_worked_out_once_per_stage_framework_sync_hybrid_and_pipeline():
    """Session 46: ``plan.row_strategy_words`` reads ``_strategy_words`` (cached on the ZeRO
    stage, framework, gradient sync, hybrid group, pp > 1 and, since session 47, tp > 1: DDP
    beside tp is Megatron-Core's): every row's words are still
    ``framework_label``'s for that row, and each key is worked out once in a whole plan."""
    from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
    from scalesim.plan import _strategy_words, plan
    from scalesim.presets import HARDWARE, get_transformer

    shape, hw = get_transformer("llama3-8b"), HARDWARE["dgx-h100"]
    for fw_name in FRAMEWORKS:
        for sync_name in GRAD_SYNCS:
            if fw_name == "deepspeed" and sync_name == "once-per-step":
                continue  # refused: DeepSpeed has no no_sync (GRAD_SYNC_DEEPSPEED_ERROR)
            _strategy_words.cache_clear()
            rows = plan(shape, hw, [8, 16, 32], 64, top=None, include_unfit=True,
                        zero_framework=fw_name, grad_sync=sync_name)
            keys = set()
            for r in rows:
                hybrid = r.zero > 0 and r.shard_group < r.dp * r.cp
                assert r.strategy_words == framework_label(
                    ("ddp", "zero1", "zero2", "zero3")[r.zero], fw_name, sync_name, hybrid,
                    r.pp > 1, r.tp > 1), (fw_name, sync_name, r)
                keys.add((r.zero, hybrid, r.pp > 1, r.tp > 1))
            info = _strategy_words.cache_info()
            assert len(rows) > 10 * len(keys) and info.misses == len(keys), (len(rows), info)
