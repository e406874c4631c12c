"""Session 50: sweep's uneven-stage notes (``cmd_sweep.stage_notes``) are said only of the
pipelines of rows written (``cmd_sweep.PipelinesWritten``). Before, every pp of the grid was
noted, rows or not: '--pp-values 1,2 --schedule interleaved --virtual-stages 2' at accumulation
1 drops the pp 2 row (interleaving needs the micro-batches a multiple of pp, Megatron's rule)
yet said '32 layers over pp 2 x 2 virtual stages: ...', a note of rows not in the output."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.pipeline_stages import stage_words

SWEEP = ["sweep", "--workload", "llama3-8b", "--format", "json", "--devices", "16",
         "--pp-values", "1,2", "--schedule", "interleaved", "--virtual-stages", "2"]
# 32 layers as 4 chunks of 8: even in the model, uneven in torchtitan's split (embedding and
# output): a note wherever a pp 2 x 2 row is written
PP2V2 = f"note: {stage_words(32, 2, 2)}"


def _stage_notes(capsys, argv) -> tuple[list, list[str]]:
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return json.loads(out), [line for line in err.splitlines() if "layers over pp" in line]


def test_no_stage_note_of_a_pp_whose_rows_were_all_dropped(capsys):
    assert stage_words(32, 2, 2)  # the note exists: its absence below is the filter's
    rows, notes = _stage_notes(capsys, SWEEP)
    assert [row["pp"] for row in rows] == [1]
    assert notes == []


def test_the_stage_note_of_a_pp_with_rows_written_stays(capsys):
    """At --accumulation 2 the pp 2 row is kept (2 micro-batches, a multiple of 2): noted."""
    rows, notes = _stage_notes(capsys, [*SWEEP, "--accumulation", "2"])
    assert [(row["pp"], row["virtual_stages"]) for row in rows] == [(1, 1), (2, 2)]
    assert notes == [PP2V2]
