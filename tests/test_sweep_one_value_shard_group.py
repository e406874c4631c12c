"""A one-value ``--shard-group`` beside a strategy or framework axis: each row runs the shard
group where it means something and predict runs it, as the other one-value flags do
(``sweep._one_value_shard_group``). The ddp rows, which replicate every state, run without it
(predict refuses the group there and runs their scenario without it), say so in a
``shard_group`` column (null / empty on them, the group that shards the states elsewhere, as
predict --json says it) and in one note; a row whose framework cannot run it (DeepSpeed) or whose
dp it does not divide is dropped and counted as a broken layout, as a swept group's is; a group
no row can run is refused in one line. Before (session 42): ``sweep --workload bert-large
--devices 16 --shard-group 4 --strategy-values ddp,zero3`` was refused whole at the ddp row
('shard group 4 needs a ZeRO strategy'), the zero3 row lost with it; ``--zero-framework-values
fsdp,deepspeed`` beside the group the same at the DeepSpeed row, and ``--devices 4,12,16`` at
the one count the group does not divide."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli

from scalesim.errors import ScalesimError
from scalesim.layout import shard_group_needs_zero
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

OUTPUTS = ("step_time_s", "exposed_comm_s", "memory_bytes", "samples_per_s")


def _predicted(profile, scenario: Scenario):
    return predict(profile, scenario)[0]


@pytest.mark.parametrize(("hardware", "workload", "base"), [
    # a parameter count (every device a data-parallel rank) and a transformer's layout path
    (None, "bert-large", Scenario(devices=[16])),
    ("dgx-h100", "llama3-8b", Scenario(devices=[16], global_batch=64)),
])
def test_the_ddp_rows_run_without_the_group_and_every_row_is_predicts(hardware, workload, base):
    profile = resolve_profile(None, hardware, workload)
    asked = base.model_copy(update={"layout": ScenarioLayout(shard_group=4)})
    res = sweep(profile, asked, {"strategy": ["ddp", "zero1", "zero3"]})
    c = res.columns
    assert res.size == 3 and res.dropped == 0
    assert c["strategy"].tolist() == ["ddp", "zero1", "zero3"]
    assert c["shard_group"].tolist() == [None, 4, 4]
    assert res.ignored == {"shard_group": (1, "strategy ddp on 16 devices")}
    for i, strategy in enumerate(c["strategy"].tolist()):
        if strategy == "ddp":  # predict refuses the group here, and runs the scenario without it
            with pytest.raises(ScalesimError, match=re.escape(shard_group_needs_zero(4))):
                _predicted(profile, asked.model_copy(update={"strategy": "ddp"}))
            want = _predicted(profile, base.model_copy(update={"strategy": "ddp"}))
        else:
            want = _predicted(profile, asked.model_copy(update={"strategy": strategy}))
        assert want.shard_group == c["shard_group"][i], i
        for name in OUTPUTS:
            assert c[name][i] == pytest.approx(getattr(want, name), rel=1e-12), (i, name)
    assert c["step_time_s"][1] != c["step_time_s"][2]  # the sweep's rows differ


def test_the_cli_writes_the_ddp_row_empty_or_null_and_says_it_once(capsys):
    argv = ["sweep", "--workload", "bert-large", "--devices", "16", "--shard-group", "4",
            "--strategy-values", "ddp,zero3"]
    code, out, err = run_cli(capsys, [*argv, "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["strategy"], r["shard_group"]) for r in rows] == [("ddp", None), ("zero3", 4)]
    notes = [line for line in err.splitlines() if "--shard-group 4 ignored" in line]
    assert notes == [f"note: --shard-group 4 ignored on 1 of the 2 rows (e.g. strategy ddp on "
                     f"16 devices): {shard_group_needs_zero(4)}; they run without it, as "
                     # was 'without the flag' before session 49 (follow-up): the phrase names
                     # the setting as the line does (a --scenario file's by its key)
                     "predict runs their scenario without --shard-group, and column shard_group "
                     "says "
                     "what each row runs"], err
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    header, *lines = out.splitlines()
    at = header.split(",").index("shard_group")
    assert [line.split(",")[at] for line in lines] == ["", "4"]


def test_the_zero_rows_alone_keep_the_csv_as_it_was(capsys):
    """Every row shards: no column, no note (the group is the flag's, as before)."""
    code, out, err = run_cli(capsys, ["sweep", "--workload", "bert-large", "--devices", "16",
                                      "--shard-group", "4", "--strategy-values", "zero1,zero3"])
    assert code == 0, err
    assert "shard_group" not in out.splitlines()[0] and "ignored" not in err, (out, err)


@pytest.mark.parametrize(("hardware", "workload", "base"), [
    (None, "bert-large", Scenario(devices=[16], strategy="zero3")),
    ("dgx-h100", "llama3-8b", Scenario(devices=[16], global_batch=64, strategy="zero3")),
])
def test_a_deepspeed_row_is_dropped_and_the_fsdp_row_is_predicts(hardware, workload, base):
    """Was: the whole sweep refused at the DeepSpeed row."""
    profile = resolve_profile(None, hardware, workload)
    asked = base.model_copy(update={"layout": ScenarioLayout(shard_group=4)})
    res = sweep(profile, asked, {"zero_framework": ["fsdp", "deepspeed"]})
    assert res.size == 1 and res.dropped == res.dropped_layout == 1
    assert res.layout_example.startswith("shard group 4 on 16 devices: --shard-group 4 with "
                                         "--zero-framework deepspeed: hybrid sharding is modelled")
    want = _predicted(profile, asked)
    for name in OUTPUTS:
        assert res.columns[name][0] == pytest.approx(getattr(want, name), rel=1e-12), name
    with pytest.raises(ScalesimError, match="--zero-framework deepspeed"):
        _predicted(profile, asked.model_copy(update={"zero_framework": "deepspeed"}))


def test_a_device_count_the_group_does_not_divide_is_dropped():
    """``--devices 4,12,16 --gpus-per-node 4 --shard-group 8``: 12 devices (dp 12) cannot run
    it; 4 (one group at or above dp: full sharding) and 16 can, each predict's."""
    profile = resolve_profile(None, None, "bert-large")
    base = Scenario(devices=[4, 12, 16], devices_per_node=4, strategy="zero3",
                    layout=ScenarioLayout(shard_group=8))
    res = sweep(profile, base, {})
    assert res.columns["devices"].tolist() == [4, 16] and res.dropped_layout == 1
    assert "shard group 8 does not divide dp 12" in res.layout_example
    for i, devices in enumerate((4, 16)):
        want = _predicted(profile, base.model_copy(update={"devices": [devices]}))
        assert res.columns["step_time_s"][i] == pytest.approx(want.step_time_s, rel=1e-12)


@pytest.mark.parametrize(("argv", "words"), [
    (["--strategy", "ddp"], "shard group 4 needs a ZeRO strategy"),
    (["--strategy-values", "ddp,zero1", "--zero-framework", "deepspeed"],
     "--shard-group 4 with --zero-framework deepspeed"),
    # the swept strategy by its grid flag, as typed (was '--strategy zero3 ... use --strategy
    # ddp' before session 50)
    (["--strategy-values", "ddp,zero3", "--shard-group", "1"],
     "--shard-group 1 with --strategy-values zero3 is plain replication (no state sharded): use "
     "--strategy-values ddp, or --shard-group 2 or more"),
])
def test_a_group_no_row_can_run_is_refused_in_one_line(capsys, argv, words):
    base = ["sweep", "--workload", "bert-large", "--devices", "16"]
    group = [] if "--shard-group" in argv else ["--shard-group", "4"]
    code, out, err = run_cli(capsys, [*base, *group, *argv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err
