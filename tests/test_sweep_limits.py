"""Sweeps of any size (issue 14): chunked evaluation gives the rows of one call, the CLI streams
them with bounded memory, and grids too large for the memory, the disk or the row limit are
refused before anything runs, saying how big they are."""

from __future__ import annotations

import json
import os
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from scalesim import sweep as sweep_module
from scalesim.cli import cmd_sweep
from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.predict import input_pipeline_modelled
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario
from scalesim.sweep import iter_sweep, plan_sweep, sweep

WEAK = (Scenario(devices=[1, 2, 4, 8, 16]),
        {"micro_batch": [8, 33], "strategy": ["ddp", "zero3"], "overlap": [True, False],
         "inter_busbw_GBps": [5.0, 50.0, 400.0]})
STRONG = (Scenario(devices=[1, 2, 4, 8, 16, 32]),
          {"global_batch": [64, 96, 1000], "accumulation": [1, 2, 3]})


@pytest.mark.parametrize("base, axes", [WEAK, STRONG])
def test_chunks_give_the_rows_of_one_call(base, axes):
    profile = default_profile()
    plan = plan_sweep(profile, base, axes)
    whole = sweep_module.evaluate_at(plan, np.arange(plan.combinations))
    chunks = list(iter_sweep(plan, chunk_rows=7))
    assert sum(c.size for c in chunks) == whole.size == plan.rows
    assert sum(c.dropped for c in chunks) == whole.dropped == plan.combinations - plan.rows
    for name, column in whole.columns.items():
        joined = np.concatenate([c.columns[name] for c in chunks])
        assert joined.dtype == column.dtype and np.array_equal(joined, column), name


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_cli_streams_in_chunks_the_same_text(tmp_path, monkeypatch, capsys, fmt):
    profile = default_profile()
    base, axes = STRONG
    # the presets measure no input pipeline: data_stall_s is written empty / null
    expected = cmd_sweep._to_text(sweep(profile, base, axes).columns, fmt,
                                  input_pipeline_modelled(profile))
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", 5)
    monkeypatch.setattr(cmd_sweep, "FORMAT_ROWS", 3)
    out = tmp_path / f"grid.{fmt}"
    argv = ["sweep", "--devices", "1,2,4,8,16,32", "--global-batch-values", "64,96,1000",
            "--accumulation-values", "1,2,3"]
    assert main(argv + ["--out", str(out)]) == 0
    assert out.read_text() == expected
    assert main(argv + ["--format", fmt]) == 0
    assert capsys.readouterr().out == expected
    if fmt == "json":
        assert len(json.loads(expected)) == plan_sweep(profile, base, axes).rows


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class _Null:
    def write(self, text):
        return len(text)


def test_streaming_memory_does_not_grow_with_the_rows(monkeypatch):
    profile = default_profile()
    base = Scenario(devices=[1, 2, 4, 8])
    # a chunk of 2k rows, and 32x the rows of one chunk (a quarter of the 8k / 262k rows this
    # took before: the same ratios, 1.9 MB streamed against 1.6 MB for one chunk and 16.6 MB
    # in memory)
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", 1 << 11)
    small = plan_sweep(profile, base, {"micro_batch": list(range(1, 1 + 512))})  # 2k rows
    large = plan_sweep(profile, base, {"micro_batch": list(range(1, 1 + 16384))})  # 65k rows
    cmd_sweep._write(_Null(), small, "csv")  # warm-up: first-call imports and caches
    small_peak = _peak_bytes(lambda: cmd_sweep._write(_Null(), small, "csv"))
    large_peak = _peak_bytes(lambda: cmd_sweep._write(_Null(), large, "csv"))
    in_memory = _peak_bytes(lambda: sweep(profile, base, {"micro_batch": list(range(1, 16385))}))
    # 32x the rows, the same memory (the slack a quarter of the 1 MiB it was at 4x the rows)
    assert large_peak < 1.5 * small_peak + (1 << 18)
    assert large_peak < in_memory / 5


def test_more_rows_than_the_limit_are_refused_up_front(capsys):
    values = ",".join(str(v) for v in range(1, 1001))
    code = main(["sweep", "--devices", "1,2,4,8", "--batch-values", values,
                 "--accumulation-values", values, "--inter-busbw-values", values[:1091]])  # 1..300
    err = capsys.readouterr().err
    assert code == 2 and "1,200,000,000 rows" in err and len(err.splitlines()) == 1


def test_in_memory_sweep_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.setattr(sweep_module, "available_memory_bytes", lambda: 4000)
    # 4.84 kB of columns + 0.72 kB of ``SweepResult.baseline`` (18 bytes a row, session 46)
    with pytest.raises(ScalesimError, match=r"40 rows, 5\.56 kB in memory, more than half of the 4 kB"):
        sweep(default_profile(), Scenario(devices=[1, 2, 4, 8]), {"micro_batch": list(range(1, 11))})
    assert sweep_module.available_memory_bytes() > 0


def test_output_larger_than_the_free_disk_is_refused(tmp_path, monkeypatch, capsys):
    real_statvfs = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda path: SimpleNamespace(f_bavail=10, f_frsize=4096))
    out = tmp_path / "grid.csv"
    values = ",".join(str(v) for v in range(1, 1001))
    code = main(["sweep", "--devices", "1,2,4,8", "--batch-values", values, "--out", str(out)])
    err = capsys.readouterr().err
    monkeypatch.setattr(os, "statvfs", real_statvfs)
    assert code == 2 and "4,000 rows" in err and "kB of output" in err and "41 kB free" in err
    assert not out.exists()


@pytest.mark.parametrize("axes, fragment", [
    ({"micro_batch": "32"}, "micro_batch': expected a list"),
    ({"micro_batch": [1.5]}, "micro_batch': 1.5 is not a whole number"),
    ({"overlap": ["on"]}, "overlap': expected true/false"),
    ({"bucket_mib": [float("nan")]}, "bucket_mib': nan is not a finite number"),
    ({"inter_busbw_GBps": ["fast"]}, "inter_busbw_GBps': 'fast' is not a number"),
    ({"accumulation": []}, "accumulation' has no values"),
])
def test_axes_of_the_wrong_type_are_one_line(axes, fragment):
    with pytest.raises(ScalesimError, match=fragment):
        sweep(default_profile(), Scenario(devices=[1, 2]), axes)


def test_layout_combinations_dropped_are_named_and_counted(tmp_path, capsys):
    """A transformer sweep drops the layouts that cannot run (tp 3 does not divide 8 devices,
    tp 16 is over a server of 8) and said "2 strong-scaling combinations dropped: the global
    batch does not split evenly" for a weak-scaling sweep, and "wrote 4 scenarios" for the 2
    rows it wrote. Now the count written is the rows written and each drop has its reason."""
    out = tmp_path / "grid.json"
    code = main(["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
                 "--tp-values", "1,2,3,16", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = json.loads(out.read_text())
    assert sorted(r["tp"] for r in rows) == [1, 2]
    first, *notes = err.strip().splitlines()  # then predict's notes of the scenario
    # (and since session 60 the warning of rows that do not fit: both hold more than 80 GiB)
    assert first.startswith("wrote 2 scenarios") and all(n.startswith(("note: ", "warning: "))
                                                         for n in notes)
    assert "dropped" not in "".join(notes), err
    assert "2 combinations dropped: 2 break a layout rule" in err and "global batch" not in err
    code = main(["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
                 "--tp-values", "1,2,3", "--global-batch-values", "8,12", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # tp 3 twice (layout); dp 8 at tp 1 cannot split 12, dp 4 at tp 2 can
    assert len(json.loads(captured.out)) == 3
    assert ("3 combinations dropped: 2 break a layout rule" in captured.err
            and "1 does not split the global batch" in captured.err), captured.err


@pytest.mark.parametrize("extra", [["--schedule", "gpipe"], ["--schedule", "interleaved"],
                                   ["--virtual-stages", "2"]])
def test_a_pipeline_schedule_with_no_pipeline_is_refused_as_predict_refuses_it(capsys, extra):
    """predict and decide refuse --schedule gpipe with pp 1; sweep (and goal, which sweeps)
    applied a schedule only where pp > 1 and so ignored it silently when no row had a
    pipeline. Refused in one line now; with a pp axis that reaches 2 it applies there."""
    argv = ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
            "--tp", "2", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err  # predict's rule, then what to give
    assert ("needs --pp 2 or more" in err), err  # both rules: a pipeline first
    assert "means nothing on every row of the sweep; give --pp" in err, err
    if extra[0] == "--schedule":
        assert main([*argv, "--pp-values", "1,2", "--accumulation", "4"]) == 0
        capsys.readouterr()


def test_sequence_parallel_with_no_tensor_parallelism_is_refused(capsys):
    """``sweep --sequence-parallel`` with tp 1 everywhere ran every row without it (predict
    refuses it); with a --tp-values that reaches 2 it applies there."""
    argv = ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
            "--sequence-parallel"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--sequence-parallel needs --tp 2 or more" in err and len(err.strip().splitlines()) == 1, err
    assert main([*argv, "--tp-values", "1,2"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("argv, flag, values_flag", [
    (["--batch-values", "16", "--batch", "64"], "--batch", "--batch-values"),
    (["--global-batch-values", "256", "--global-batch", "512"], "--global-batch",
     "--global-batch-values"),
    (["--accumulation-values", "2", "--accumulation", "4"], "--accumulation",
     "--accumulation-values"),
    (["--strategy-values", "ddp", "--strategy", "zero3"], "--strategy", "--strategy-values"),
    (["--zero-framework-values", "deepspeed", "--zero-framework", "fsdp"], "--zero-framework",
     "--zero-framework-values"),
    (["--grad-sync-values", "once-per-step", "--grad-sync", "every-micro-step"], "--grad-sync",
     "--grad-sync-values"),
    (["--algorithm-values", "ring", "--algorithm", "tree"], "--algorithm", "--algorithm-values"),
    (["--overlap-values", "on", "--no-overlap"], "--no-overlap", "--overlap-values"),
    (["--bucket-mib-values", "10", "--bucket-mib", "20"], "--bucket-mib", "--bucket-mib-values"),
    (["--intra-busbw-values", "10", "--intra-busbw", "20"], "--intra-busbw",
     "--intra-busbw-values"),
    (["--inter-busbw-values", "10", "--inter-busbw", "20"], "--inter-busbw",
     "--inter-busbw-values"),
    (["--straggler-cv-values", "0.1", "--straggler-cv", "0.2"], "--straggler-cv",
     "--straggler-cv-values"),
    (["--workload", "llama3-8b", "--tp-values", "2", "--tp", "4"], "--tp", "--tp-values"),
    (["--workload", "llama3-8b", "--pp-values", "2", "--pp", "1"], "--pp", "--pp-values"),
])
def test_an_axis_given_as_a_grid_and_as_one_value_is_refused(capsys, argv, flag, values_flag):
    """`sweep --batch-values 16 --batch 64` swept 16 and dropped --batch without a word (every
    axis alike: `--tp-values 2 --tp 4` wrote tp 2 rows). One line names both flags now."""
    assert cmd_sweep.VALUE_FLAGS.keys() >= {"batch_values", "tp_values"}
    code = main(["sweep", "--devices", "8", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{flag} and {values_flag} both set" in err and "not both" in err, err


def test_every_axis_has_its_one_value_flag():
    """The check covers every grid axis: each one's one-value flag is a flag of sweep."""
    from scalesim.cli.main import build_parser

    args = vars(build_parser().parse_args(["sweep"]))
    for dest, (axis, _) in cmd_sweep.VALUE_FLAGS.items():
        flag = cmd_sweep.one_value_flag(axis)
        assert flag.removeprefix("--").replace("-", "_") in args, (dest, flag)


@pytest.mark.parametrize("argv, rule", [
    (["--pp-values", "2", "--schedule", "interleaved"],
     "e.g. tp 1 x pp 2 on 8 devices: --schedule interleaved needs --virtual-stages 2 or more"),
    (["--pp-values", "2", "--schedule", "interleaved", "--virtual-stages", "2"],
     # the swept pp by its grid flag, as typed (was '--pp 2' before session 50)
     "e.g. tp 1 x pp 2 on 8 devices: --schedule interleaved: 1 micro-batch per step is not a "
     "multiple of --pp-values 2"),
    (["--tp-values", "3"], "e.g. tp 3 x pp 1 on 8 devices: tp x pp does not divide the devices"),
])
def test_a_sweep_left_empty_by_layout_rules_names_the_rule(capsys, argv, rule):
    """`sweep --workload llama3-8b --devices 8 --pp-values 2 --schedule interleaved` dropped its
    one combination as breaking 'a layout rule (tp x pp must divide the devices, tp stays in a
    server, the layers and heads must split)': none of those, the interleaved schedule's rules
    were broken. The first dropped layout and the rule it breaks are named now."""
    code = main(["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
                 *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert rule in err and "tp stays in a server" not in err, err
