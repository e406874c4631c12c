"""Session 21's left-overs (branch polish21): sweep's pipeline bubble note, `--devices 1e400`,
the fit's one layout, large layer counts split fast, and validate's one wording."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

import pytest
from cli_harness import run_cli

from scalesim.pipeline_bubble import SWEEP_ROWS_NAMED, bubble_note, sweep_bubble_note

BIG = ["--workload", "llama3-405b", "--hardware", "dgx-h100", "--devices", "1024", "--tp", "8"]


def test_sweep_says_the_bubble_note_once_naming_its_rows(capsys):
    """sweep pp 1,16 x batch 1,8 x accumulation 1,64: rows 2 and 6 (pp 16, one micro-batch)
    idle 86 % of the step (91 % before session 45: today's DDP all-reduces fp32 gradients since,
    4 B a parameter for llama3-405b, which states no reduction, so row 2's exposed exchange grows
    0.160 -> 0.433 s and its step 5.083 -> 5.356 s around the same 4.6005 s bubble:
    4.6005 / 5.356 = 0.859); rows 4 and 8 (pp 16, 64 micro-batches: (p - 1)/(m + p - 1) = 15/79,
    19 % by 1F1B's rule) do not reach 20 %. The note names the rows whose bubble_s is 20 % of
    step_time_s or more in the CSV, and carries predict's note of the first of them."""
    argv = ["sweep", *BIG, "--pp-values", "1,16", "--batch-values", "1,8", "--accumulation-values", "1,64"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    large = [i for i, r in enumerate(rows, 1) if float(r["bubble_s"]) >= 0.2 * float(r["step_time_s"])]
    assert large == [2, 6]
    notes = [line for line in err.splitlines() if "pipeline bubble" in line]
    assert len(notes) == 1
    head, _, tail = notes[0].partition("; row 2: ")
    assert head == (
        "note: 2 of the 8 rows written (rows 2, 6; row 1 is the first written) have a pipeline "
        "bubble of 20% of the step or more"
    )
    r = rows[1]
    code, text, _ = run_cli(
        capsys,
        [
            "predict",
            *BIG[:4],
            "--devices",
            r["devices"],
            "--tp",
            r["tp"],
            "--pp",
            r["pp"],
            "--batch",
            r["micro_batch"],
            "--accumulation",
            r["accumulation"],
        ],
    )
    assert code == 0
    assert f"note: {tail}" in text.splitlines()
    assert tail.startswith(
        "pipeline bubble: 86% of each step at 1,024 devices is fill and drain: "
        "1 micro-batch of 1 through 16 stages"
    )


def test_sweep_without_a_large_bubble_says_nothing_of_it(capsys):
    """pp 16 at 64 micro-batches (19 %) and no pipeline: no bubble note."""
    argv = ["sweep", *BIG, "--pp-values", "1,16", "--batch-values", "1", "--accumulation", "64"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0 and len(out.splitlines()) == 3
    assert "pipeline bubble" not in err


def test_the_sweep_bubble_note_counts_the_rows_it_does_not_name():
    """Past SWEEP_ROWS_NAMED rows the rest are counted; one row is 'row'; none: no note."""
    row = SimpleNamespace(
        pp=4, step_time_s=1.0, bubble_s=0.5, accumulation=1, micro_batch=4, devices=32, dp=8
    )
    named = list(range(1, SWEEP_ROWS_NAMED + 1))
    note = sweep_bubble_note(named, 1234, 5000, row, True, "1f1b")
    assert note.startswith(
        "1,234 of the 5,000 rows written (rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 "
        "and 1,224 more; row 1 is the first written)"
    )
    assert note.endswith("; row 1: " + bubble_note(row, True, "1f1b"))
    assert sweep_bubble_note([7], 1, 9, row, False, "1f1b").startswith("1 of the 9 rows written (row 7;")
    assert sweep_bubble_note([], 0, 9, None, True, "1f1b") is None


DEVICES_RULE = (
    "1 <= x <= 1,048,576 devices (2**20: ten times the largest 2025 training clusters (~100k GPUs))"
)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["predict", "--devices", "1e400"],
            "--devices: '1e400' overflows a float; it is outside " + DEVICES_RULE,
        ),
        (
            ["predict", "--devices", "1,2,1e400"],
            "--devices: '1e400' overflows a float; it is outside " + DEVICES_RULE,
        ),
        (
            ["predict", "--devices", "1-1e400"],
            "--devices: '1e400' overflows a float; it is outside " + DEVICES_RULE,
        ),
        (
            ["predict", "--devices", "-1e400"],
            "--devices: '-1e400' overflows a float; it is outside " + DEVICES_RULE,
        ),
        (
            ["plan", "--workload", "llama3-8b", "--devices", "64", "--global-batch", "64", "--top", "1e400"],
            "--top: '1e400' overflows a float; it is outside 1 <= x <= 9,007,199,254,740,992",
        ),
    ],
)
def test_a_whole_number_flag_past_a_float_says_it_overflows_and_the_bound(capsys, flags, said):
    """`--devices 1e400` said "'1e400' is not a whole number" (no bound); the float flags said
    "overflows a float; it is outside ..." (bounds.parse_number): now whole-number flags, their
    lists and ranges say the same. 'inf' typed is no overflow: still not a whole number."""
    code, out, err = run_cli(capsys, flags)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1
    assert f"error: argument {said}" in lines[0]
    code, _, err = run_cli(capsys, ["predict", "--devices", "inf"])
    assert code == 2 and "argument --devices: 'inf' is not a whole number (see" in err


def test_diagnose_builds_the_measured_layout_once(tmp_path, capsys, monkeypatch):
    """The fit carries the layout it was made on (`FitResult.layout`): the band's chi-square
    (`_chi2_on_runs`, every draw) and `fitted_profile` read it instead of calling
    `measured_layout(runs)` again; it is the same layout `measured_layout` builds."""
    import numpy as np
    from diagnose_cases import CASES, to_csv

    from scalesim import fit_runs

    calls = []
    real = fit_runs.measured_layout
    monkeypatch.setattr(fit_runs, "measured_layout", lambda runs: calls.append(1) or real(runs))
    path = tmp_path / "runs.csv"
    path.write_text(to_csv(CASES["stragglers"]()))
    code, out, _ = run_cli(capsys, ["diagnose", str(path), "--extrapolate", "64,128"])
    assert code == 0 and "Diagnosis of" in out
    assert len(calls) == 1
    from scalesim.runs import load_runs

    runs = load_runs(path)
    fit = fit_runs.fit_runs(runs)
    again = real(runs)
    for name in ("devices", "nodes", "micro_batch", "accumulation", "straggler_delay_s"):
        assert np.array_equal(getattr(fit.layout, name), getattr(again, name))


def _every_first(layers, pp, v, fullest):
    """Megatron-LM's first/last split as session 21 searched it: every middle, every first."""
    best = None
    sizes = range(v, fullest + 1, v)
    for middle in sizes if pp > 2 else (None,):
        for first in sizes:
            last = layers - first - (pp - 2) * (middle or 0)
            if last < v or last > fullest or last % v:
                continue
            stages = (first, *[middle] * (pp - 2), last)
            flags = (middle is not None and first != middle, last != (middle or first))
            key = (sum(flags), last, max(stages) - min(stages))
            if best is None or key < best[0]:
                best = (key, stages, flags)
    return None if best is None else best[1:]


def test_the_split_search_tries_few_firsts_and_finds_the_same_split():
    """`_megatron_stages` tries, per middle stage, only the firsts that can be best (the middle,
    the one leaving the middle to the last, half the rest, the largest): the same stages as
    trying every first on every uneven (L, pp, v) with L <= 130, pp <= 64, v <= 8, and a
    10,000-layer model over pp 3 splits 3,334, 3,334, 3,332 (the last the rest)."""
    from scalesim.layout import layers_per_stage
    from scalesim.pipeline_stages import MEGATRON_LAST, _megatron_stages, stage_split

    checked = 0
    for L in range(2, 131):
        for pp in range(2, 65):
            for v in range(1, 9):
                if pp * v > L or L % (pp * v) == 0:
                    continue
                fullest = int(layers_per_stage(L, pp, v))
                found = _megatron_stages(L, pp, v, fullest)
                want = _every_first(L, pp, v, fullest)
                assert (found and found[0]) == (want and want[0]), (L, pp, v)
                checked += 1
    assert checked > 10_000
    split = stage_split(10_000, 3)
    assert split.stages == (3334, 3334, 3332) and split.megatron_flags == f"{MEGATRON_LAST} 3332"


@pytest.mark.parametrize(
    ("data", "said"),
    [({}, 'no "format" field'), ({"format": None}, "format is null"), ({"format": "x"}, "format is 'x'")],
)
def test_the_library_says_a_missing_format_as_the_cli_does(data, said):
    """`validate.read_cases({})` said "format is None" (Python's word) where `scalesim validate`
    says 'no "format" field': one wording (`validate.format_words`) for both readers."""
    from scalesim.errors import ScalesimError
    from scalesim.validate import read_cases
    from scalesim.validate_parallel import read_parallel_cases

    for read in (read_cases, read_parallel_cases):
        with pytest.raises(ScalesimError) as err:
            read(data, "f.json")
        assert str(err.value).startswith(f"f.json: {said}, expected '")
