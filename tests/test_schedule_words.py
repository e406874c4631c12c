"""Session 40: a pipeline's schedule is named to a reader in one table's words
(``layout.SCHEDULE_SHORT``, through ``layout.schedule_words``): the split remedy's title was
"Split the model: dp 4 x tp 8 x pp 2 (zb), ...", predict's layout line "(1f1b)" and the app's
Layouts table "zb", beside "pipeline schedule 1F1B -> zero bubble" in the layout-change words
(docs/reliability.md)."""

from __future__ import annotations

from types import SimpleNamespace

from app_harness import open_app

from scalesim.cli.main import main
from scalesim.layout_predict import row_title


def _row(**changes):
    row = dict(dp=4, cp=1, tp=8, pp=2, schedule="zb", virtual_stages=1, zero=1, hybrid=False,
               shard_group=None, micro_batch=1, accumulation=8, recompute="none",
               recompute_style="whole-forward", sequence_parallel=True, tp_overlap=False)
    return SimpleNamespace(**{**row, **changes})


def test_a_layouts_title_names_its_schedule_as_a_reader_does():
    assert row_title(_row()) == ("dp 4 x tp 8 x pp 2 (zero bubble), zero1, micro-batch 1 per "
                                 "replica x 8 accumulation, recompute none, sequence parallel")
    assert row_title(_row(schedule="interleaved", virtual_stages=4)).startswith(
        "dp 4 x tp 8 x pp 2 (interleaved 1F1B, 4 virtual stages), zero1, ")
    assert row_title(_row(schedule="1f1b")).startswith("dp 4 x tp 8 x pp 2 (1F1B), ")
    assert row_title(_row(schedule="gpipe")).startswith("dp 4 x tp 8 x pp 2 (GPipe), ")
    # no pipeline, no schedule named
    assert row_title(_row(pp=1, schedule="none")).startswith("dp 4 x tp 8 x pp 1, zero1, ")
    # context parallelism named after pp (it was left out: 'dp 2 x tp 8 x pp 2' of 64 devices)
    assert row_title(_row(dp=2, cp=2)).startswith("dp 2 x tp 8 x pp 2 x cp 2 (zero bubble), ")


def test_predicts_layout_line_names_the_schedule_alike(capsys):
    assert main(["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices",
                 "16", "--pp", "2", "--schedule", "zb"]) == 0
    assert "\nlayout: tp 1 x pp 2 (zero bubble), recompute none" in capsys.readouterr().out
    assert main(["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices",
                 "16", "--pp", "2", "--virtual-stages", "2", "--accumulation", "2"]) == 0
    assert "\nlayout: tp 1 x pp 2 (interleaved 1F1B, 2 virtual stages), " in (
        capsys.readouterr().out)


def test_the_apps_layouts_table_names_schedules_in_words():
    """llama3-70b on 64 H100s: the best layouts run zero bubble (was 'zb' in the column)."""
    at = open_app({"v": "3", "hw": "dgx-h100", "wl": "llama3-70b", "dmax": "64", "tp": "8",
                   "pp": "2", "tab": "layouts"})
    table = at.dataframe[-1].value
    words = {"none", "GPipe", "1F1B", "interleaved 1F1B", "zero bubble"}
    assert "zero bubble" in set(table["schedule"]) and set(table["schedule"]) <= words
    assert all((s == "none") == (pp == 1) for s, pp in zip(table["schedule"], table["pp"],
                                                               strict=True))


def test_a_layout_of_one_replica_names_no_data_parallel_strategy():
    """Session 40: 'dp 1 x tp 8 x pp 1, ddp, ...' (plan's nothing-fits note and error, decide's
    add-devices option): one replica exchanges and shards nothing, so no ZeRO stage is named;
    with context parallelism (dp 1 x cp 2) there are two ranks to shard over."""
    assert row_title(_row(dp=1, zero=0, schedule="none", pp=1)) == (
        "dp 1 x tp 8 x pp 1, no data parallelism, micro-batch 1 per replica x 8 accumulation, "
        "recompute none, sequence parallel")
    assert ", no data parallelism, " in row_title(_row(dp=1, zero=3))
    assert ", zero1, " in row_title(_row(dp=1, cp=2))


def test_goals_searched_layout_writes_its_schedule_as_every_title_does():
    """Session 43's goal search wrote its own schedule words ('1f1b', 'interleaved x 2 virtual
    stages') beside ``layout.schedule_words``, which every other title uses."""
    from types import SimpleNamespace

    from scalesim.goal import searched_layout_words

    plan = SimpleNamespace(pp=4, schedule="interleaved", virtual_stages=2, recompute="full",
                           sequence_parallel=True)
    assert searched_layout_words(plan) == ("interleaved 1F1B, 2 virtual stages, recompute full, "
                                           "sequence parallel")
    plan = SimpleNamespace(pp=2, schedule="1f1b", virtual_stages=1, recompute="none",
                           sequence_parallel=False)
    assert searched_layout_words(plan) == "1F1B, recompute none"
