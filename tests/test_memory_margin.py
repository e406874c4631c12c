"""A memory margin the user can ask for, and a note where the best layout nearly fills a device
(session 42): ``--memory-margin m`` (one row of ``bounds.KNOBS``; plan, predict, sweep, decide,
goal) makes a row fit where memory <= (1 - m) x device memory, in the data-parallel model, the
layout model's vectorised and scalar paths alike (docs/model.md §16, "Memory margin"); without
it (m = 0, today's answer) a best layout leaving under 5% of a device free gets one note with
what the ranking picks when 5% is kept free.

Before: GPT 145.6B (Narayanan 2021 Table 1) on 1536 A100 80GB at global batch 2304 ranked first
a layout without recompute at 79.8 of 80 GiB, and nothing said so."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from cli_harness import run_cli

from scalesim.figures import GIB_BYTES
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.memory_margin import TIGHT_MEMORY_SHARE
from scalesim.model.memory import DDP, usable_memory_bytes
from scalesim.model.step import StepInputs, evaluate
from scalesim.plan import Setting, evaluate_layout, plan
from scalesim.predict import predict
from scalesim.presets import HARDWARE
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, TransformerShape

# Narayanan et al. 2021, Table 1, the 145.6B row: the user's walk
SHAPE = TransformerShape(layers=80, hidden=12288, heads=96, seq_len=2048, vocab=51200)
PARAMS, DEVICES, GLOBAL_BATCH = 145.6e9, 1536, 2304
A100 = HARDWARE["dgx-a100"]
M = A100.device_memory_bytes  # 80 GiB


def _step_fits(device_memory_bytes: float, margin: float) -> bool:
    """One device, DDP, 1e9 parameters at 2 + 2 + 12 bytes, no activations: 16e9 bytes."""
    inp = StepInputs(devices=1, devices_per_node=8, micro_batch=1, accumulation=1,
                     overhead_s=0.0, per_sample_s=0.01, optimizer_step_s=0.0,
                     backward_fraction=0.6, wire_bytes_per_param=2.0, intra_latency_s=0.0,
                     intra_busbw_GBps=100.0, inter_latency_s=0.0, inter_busbw_GBps=10.0,
                     strategy=DDP, params=1e9,
                     activation_bytes_per_sample=0.0, device_memory_bytes=device_memory_bytes,
                     memory_margin=margin)
    r = evaluate(inp)
    assert float(r.memory_bytes) == 16e9  # 1e9 x (2 + 2 + 12) by hand
    return bool(r.fits)


def test_data_parallel_row_fits_against_the_device_less_the_margin():
    """16e9 bytes on a 16.8e9-byte device: 5% kept free leaves 15.96e9 (refused, 0.04e9
    short), 4% leaves 16.128e9 (fits); 0 is today's memory <= device memory, exactly at the
    edge too."""
    assert not _step_fits(16.8e9, 0.05)
    assert _step_fits(16.8e9, 0.04)
    assert _step_fits(16e9, 0.0) and not _step_fits(16e9 - 1.0, 0.0)
    assert float(usable_memory_bytes(16.8e9, 0.05)) == pytest.approx(15.96e9, rel=1e-15)


def test_layout_rows_fit_at_the_margin_in_the_vectorised_and_scalar_paths():
    """The plan's best without a margin needs mem of M: a margin just under 1 - mem/M keeps it
    (the vectorised ranking and ``evaluate_layout``, the scalar path, agree), one just over
    refuses it in both."""
    best = plan(SHAPE, A100, [DEVICES], GLOBAL_BATCH, params=PARAMS, top=1)[0]
    edge = 1.0 - best.memory_bytes / M
    assert 0 < edge < TIGHT_MEMORY_SHARE  # 79.8 of 80 GiB
    layout = best.layout(GLOBAL_BATCH)
    for margin, fits in ((edge * (1 - 1e-6), True), (edge * (1 + 1e-6), False)):
        setting = Setting(SHAPE, A100, GLOBAL_BATCH, params=PARAMS, memory_margin=margin)
        assert bool(evaluate_layout(setting, layout).fits) is fits
        rows = plan(SHAPE, A100, [DEVICES], GLOBAL_BATCH, params=PARAMS, top=None,
                    include_unfit=True, memory_margin=margin)
        same = [r for r in rows if r.layout(GLOBAL_BATCH) == layout]
        assert len(same) == 1 and same[0].fits is fits
        assert same[0].step_time_s == best.step_time_s  # the margin moves no time
        if not fits:
            assert "does not fit" in same[0].why and "memory margin" in same[0].why


def test_every_listed_row_keeps_the_margin_free_and_predicts_as_planned():
    """With 5% kept free every fitting row needs at most 76 GiB, the best changes (79.8 GiB
    before), and each row re-predicts to the plan's step (1e-9) and fits in predict too."""
    profile = resolve_profile(None, "dgx-a100", "gpt-145.6b")
    scenario = Scenario(devices=[DEVICES], global_batch=GLOBAL_BATCH, memory_margin=0.05)
    rows = plan_at(profile, scenario, DEVICES, GLOBAL_BATCH, top=4)
    assert all(r.fits and r.memory_bytes <= 0.95 * M for r in rows)
    loose = plan_at(profile, scenario.model_copy(update={"memory_margin": 0.0}), DEVICES,
                    GLOBAL_BATCH, top=1)[0]
    assert loose.memory_bytes > 0.95 * M and rows[0].memory_bytes < loose.memory_bytes
    for r in rows:
        p = predict(profile, scenario_of_row(scenario, r))[0]
        assert p.step_time_s == pytest.approx(r.step_time_s, rel=1e-9)
        assert p.fits and p.memory_bytes == pytest.approx(r.memory_bytes, rel=1e-12)
    # the loose best under the margin: predict marks it as not fitting
    assert not predict(profile, scenario_of_row(scenario, loose))[0].fits


def _workload(tmp_path):
    path = tmp_path / "gpt145.json"
    path.write_text(json.dumps({"name": "gpt-145.6b-like", "params": PARAMS,
                                "transformer": SHAPE.model_dump(exclude_none=True),
                                "source": "Narayanan et al. 2021 Table 1"}))
    return str(path)


PLAN = ["plan", "--hardware", "dgx-a100", "--devices", str(DEVICES),
        "--global-batch", str(GLOBAL_BATCH)]


def test_the_plans_note_states_the_free_memory_and_the_ranking_with_the_margin(capsys,
                                                                               tmp_path):
    """The note's numbers are the rankings': free = 80 GiB - the best's memory, and the best
    with 5% kept free (``plan(..., memory_margin=0.05)``) at its tokens/s and change."""
    code, out, err = run_cli(capsys, [*PLAN, "--workload", _workload(tmp_path), "--json"])
    assert code == 0, err
    note = json.loads(out)["memory_note"]
    best = plan(SHAPE, A100, [DEVICES], GLOBAL_BATCH, params=PARAMS, top=1)[0]
    kept = plan(SHAPE, A100, [DEVICES], GLOBAL_BATCH, params=PARAMS, top=1,
                memory_margin=0.05)[0]
    free = M - best.memory_bytes
    assert f"leaves {free / GIB_BYTES:.1f} GiB ({100 * free / M:.1f}%) of 80.0 GiB free" in note
    # since session 60 (uneven interleaved chunks' peak, Megatron's order) the best is tp 2,
    # selective recompute, 9.5 MiB under the 80 GiB; tp 4 without recompute (0.2 GiB free
    # before) needs more than the device
    assert note.startswith("the best layout leaves 0.0 GiB (0.0%) of 80.0 GiB free")
    change = 100 * (kept.samples_per_s / best.samples_per_s - 1)
    # the throughput as every table writes it (figures.rate: 4 significant digits, thousands
    # separated), not the 6 digits of ',.0f' ('283,338 tokens/s' before session 43)
    shown = re.search(r" at ([0-9,]+) tokens/s \(([+-][0-9.]+)%\), ", note)
    assert shown and shown.group(1) == f"{float(f'{kept.tokens_per_s:.4g}'):,.0f}"
    assert shown.group(1).replace(",", "")[4:].strip("0") == ""  # 4 significant digits
    assert abs(float(shown.group(1).replace(",", "")) / kept.tokens_per_s - 1) < 5e-4
    assert shown.group(2) == f"{change:+.1f}"
    assert "--memory-margin 0.05 ranks with 5% kept free" in note
    assert "recompute selective" in note and kept.recompute == "selective"
    assert -2.0 < change < 0  # a dearer layout, not a guess: about 1% slower
    code, text, _ = run_cli(capsys, [*PLAN, "--workload", _workload(tmp_path), "--top", "2"])
    assert code == 0 and text.rstrip().splitlines()[-1] == f"note: {note}"


def test_no_note_with_a_margin_or_with_room(capsys, tmp_path):
    """A margin given (the user chose) or a best with 5% free: no note; the ranking with the
    margin says so in its conditions line."""
    code, out, _ = run_cli(capsys, [*PLAN, "--workload", _workload(tmp_path), "--top", "2",
                                    "--memory-margin", "0.05"])
    assert code == 0 and "allocator's fragmentation" not in out
    assert "5% of each device's memory kept free (--memory-margin 0.05)" in out
    code, out, _ = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-a100",
                                    "--devices", "8", "--global-batch", "64", "--json"])
    assert code == 0 and json.loads(out)["memory_note"] is None


@pytest.mark.parametrize("command", ["plan", "predict", "sweep", "decide", "goal"])
@pytest.mark.parametrize("value", ["0.6", "-0.1", "nan", "5%"])
def test_a_margin_out_of_bounds_is_one_line(capsys, command, value):
    extra = ["--global-batch", "64"] if command == "plan" else []
    code, out, err = run_cli(capsys, [command, *extra, "--memory-margin", value])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--memory-margin" in err


def test_predict_marks_a_nearly_full_row_and_refuses_it_with_the_margin(capsys):
    """The plan's best as predict's scenario: all but 9.5 MiB of 80 GiB (session 60; the
    no-recompute tp 4 best before, at 79.8, needs more than the device since uneven
    interleaved chunks hold their peak), a note without a margin; NO with --memory-margin 0.05
    and the hint to lower it."""
    argv = ["predict", "--workload", "gpt-145.6b", "--hardware", "dgx-a100", "--devices",
            str(DEVICES), "--global-batch", str(GLOBAL_BATCH), "--accumulation", "24",
            "--tp", "2", "--pp", "8", "--schedule", "interleaved", "--virtual-stages", "8",
            "--strategy", "zero2", "--recompute", "selective", "--sequence-parallel"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    assert ("note: the row on 1,536 devices leaves 0.0 GiB (0.0%) of 80.0 GiB free: the "
            "allocator's fragmentation may not fit; --memory-margin 0.05 keeps 5% free and "
            "marks it as not fitting") in out
    code, out, err = run_cli(capsys, [*argv, "--memory-margin", "0.05"])
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.lstrip().startswith("1536"))
    assert row.split()[-1] == "NO" and "a --memory-margin below 0.05" in out
    assert "allocator's fragmentation" not in out


def test_the_margin_defaults_to_zero_everywhere():
    """Today's answer unchanged: the scenario's, the setting's and the models' defaults are 0,
    and (1 - 0) x M is M exactly."""
    assert Scenario().memory_margin == 0.0 and StepInputs.memory_margin == 0.0
    assert Setting.memory_margin == 0.0
    assert np.all(usable_memory_bytes(np.array([M, 1e6, 1e15])) == np.array([M, 1e6, 1e15]))


def test_sweep_rows_fit_against_half_the_device_with_a_half_margin(capsys):
    """gpt-7b, ZeRO-3 on 8 A100 80GB: micro-batch 16 needs 40.1e9 bytes, 24 needs 53.0e9; half
    of 80 GiB is 42.9e9, so --memory-margin 0.5 keeps 16 and refuses 24 (both fit without)."""
    argv = ["sweep", "--workload", "gpt-7b", "--hardware", "dgx-a100", "--devices", "8",
            "--strategy", "zero3", "--batch-values", "16,24"]
    fits = {}
    for margin in ("0", "0.5"):
        code, out, err = run_cli(capsys, [*argv, "--memory-margin", margin])
        assert code == 0, err
        lines = [line.split(",") for line in out.splitlines() if "," in line]
        head, rows = lines[0], [r for r in lines[1:] if r[0] == "8"]
        at = {name: head.index(name) for name in ("micro_batch", "memory_bytes", "fits")}
        fits[margin] = {int(r[at["micro_batch"]]): r[at["fits"]] == "True" for r in rows}
        memory = {int(r[at["micro_batch"]]): float(r[at["memory_bytes"]]) for r in rows}
        assert memory[16] < 0.5 * M < memory[24]
    assert fits == {"0": {16: True, 24: True}, "0.5": {16: True, 24: False}}
