"""sweep says each dropped row once (session 50). The rows at a device count a one-value split,
global batch or shard group cannot run are said by predict's left-out note
(``layout_predict.counts_that_run``); the "combinations dropped" note counts and exemplifies
only the others, and is absent where none is left. Before, both notes said the same rows:
'note: 1 combination dropped: 1 breaks a layout rule (e.g. tp 2 x pp 1 on 1 device: tp x pp
does not divide the devices)' beside 'note: tp x pp = 2 does not divide the devices: the row on
1 device is left out; ...'.

By hand (--devices 1-4: 1, 2, 4; 1-64: the powers of two to 64): tp 2 does not divide 1;
global batch 100 splits over 1, 2 and 4 devices, not 8 ... 64; shard group 3 is all of dp 1 and
2 and divides none of 4 ... 64. With --global-batch 3 --accumulation-values 1,2 at tp 2: the two
rows on 1 device break the split (said by its note, counted once though 3 does not split
there either); dp 1 x 2, dp 2 x 1 and dp 2 x 2 do not divide 3: 3 rows dropped for the batch."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim import sweep as sweep_module

GPT = ["--hardware", "dgx-a100", "--workload", "gpt-1.7b"]
SPLIT_NOTE = ("note: tp x pp = 2 does not divide the devices: the row on 1 device is left out; "
              "give counts that are multiples of 2")
BATCH = ("do not split the global batch evenly over devices x accumulation (into micro-batches "
         "of at most 16,777,216 samples)")


def _sweep(capsys, args: list[str]) -> tuple[list[str], list[str]]:
    """(the devices of the rows written, the notes) of ``sweep`` with ``args``."""
    code, out, err = run_cli(capsys, ["sweep", *args])
    assert code == 0, err
    return [line.split(",")[0] for line in out.splitlines()[1:]], err.splitlines()


@pytest.mark.parametrize("args, devices, left_out", [
    ([*GPT, "--tp", "2", "--devices", "1-4"], ["2", "4"], SPLIT_NOTE),
    (["--global-batch", "100", "--devices", "1-64"], ["1", "2", "4"],
     "note: global batch 100 does not split evenly over devices x accumulation 8, 16, 32 or 64: "
     "the rows on 8, 16, 32 and 64 devices are left out; --global-batch 64 or 128 runs every "
     "count, or give counts whose devices x accumulation divides it"),
    (["--strategy", "zero3", "--shard-group", "3", "--devices", "1-64"], ["1", "2"],
     "note: shard group 3 does not divide dp 4, 8, 16, 32 or 64: the rows on 4, 8, 16, 32 and "
     "64 devices are left out; give counts whose dp it divides"),
])
def test_rows_a_left_out_note_names_are_not_counted_again(capsys, args, devices, left_out):
    rows, notes = _sweep(capsys, args)
    assert rows == devices
    assert left_out in notes
    assert not [n for n in notes if "dropped" in n], notes  # before: 1, 4 and 5 'dropped'


def test_a_swept_split_keeps_the_dropped_note(capsys):
    """--tp-values 1,2: no one-value split, no left-out note; tp 2 on 1 device is dropped."""
    rows, notes = _sweep(capsys, [*GPT, "--tp-values", "1,2", "--devices", "1-4"])
    assert rows == ["1", "2", "2", "4", "4"]
    assert "note: 1 combination dropped: 1 breaks a layout rule (e.g. tp 2 x pp 1 on 1 device: " \
           "tp x pp does not divide the devices)" in notes
    assert not [n for n in notes if "left out" in n]


def test_the_other_drops_are_counted_once_by_their_own_reason(capsys):
    rows, notes = _sweep(capsys, [*GPT, "--tp", "2", "--devices", "1-4", "--global-batch", "3",
                                  "--accumulation-values", "1,2"])
    assert rows == ["2"]  # dp 1 x accumulation 1
    assert SPLIT_NOTE in notes
    # before: '5 combinations dropped: 2 break a layout rule (e.g. tp 2 x pp 1 on 1 device: ...);
    # 3 do not split the global batch ...'
    assert [n for n in notes if "dropped" in n] == [f"note: 3 combinations dropped: 3 {BATCH}"]


@pytest.mark.parametrize("chunk_rows", [sweep_module.CHUNK_ROWS, 3])
def test_the_example_is_a_row_no_left_out_note_names(capsys, monkeypatch, chunk_rows):
    """DeepSpeed refuses a shard group at every count (2, 4, 8: 3 rows); the rows on 1 device
    (fsdp, deepspeed) come first in the grid but are the split note's. Three rows a chunk: the
    first chunk's broken layouts are all the split note's; the example is the second's."""
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", chunk_rows)
    rows, notes = _sweep(capsys, [*GPT, "--tp", "2", "--devices", "1-8", "--strategy", "zero3",
                                  "--zero-framework-values", "fsdp,deepspeed",
                                  "--shard-group", "2"])
    assert rows == ["2", "4", "8"]
    assert SPLIT_NOTE in notes
    # before: 'note: 5 combinations dropped: 5 break a layout rule (e.g. tp 2 x pp 1 on 1
    # device: tp x pp does not divide the devices)'
    assert [n for n in notes if "dropped" in n] == [
        "note: 3 combinations dropped: 3 break a layout rule (e.g. shard group 2 on 2 devices: "
        "--shard-group 2 with --zero-framework-values deepspeed: hybrid sharding is modelled for "
        "FSDP and Megatron-Core (DeepSpeed's MiCS / ZeRO++ hpZ are not); use "
        "--zero-framework-values fsdp or drop --shard-group)"]


def test_the_library_counts_every_drop_and_which_a_note_names():
    """``sweep.sweep``: dropped stays every row dropped; dropped_left_out the split note's."""
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    profile = resolve_profile(hardware="dgx-a100", workload="gpt-1.7b")
    base = Scenario(devices=[1], strategy="zero3", layout={"tp": 2, "shard_group": 2})
    result = sweep_module.sweep(profile, base, {"devices": [1, 2, 4, 8],
                                                "zero_framework": ["fsdp", "deepspeed"]})
    assert (result.dropped, result.dropped_layout) == (5, 5)
    assert (result.dropped_left_out, result.dropped_left_out_layout) == (2, 2)
    assert result.layout_example.startswith("tp 2 x pp 1 on 1 device: ")
    assert result.other_example.startswith("shard group 2 on 2 devices: ")
