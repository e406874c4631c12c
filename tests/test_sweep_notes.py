"""scalesim sweep says on stderr the notes predict prints of the same scenario; stdout keeps
only the rows (CSV or a JSON list)."""

from __future__ import annotations

import csv
import io
import json

from cli_harness import run_cli


def _run(capsys, *argv):
    code, out, err = run_cli(capsys, list(argv))
    assert code == 0, err
    return out, err


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("note: ")]


SCENARIO = ("--devices", "8,16", "--zero-framework", "deepspeed", "--slow-device", "12",
            "--slow-factor", "1.2")


def test_sweep_notes_are_predicts_on_stderr_and_the_csv_stays_clean(capsys):
    out, _ = _run(capsys, "predict", *SCENARIO)
    predicted = _notes(out)
    # the unused framework, the slow device 8 devices miss, both links, the compute estimate
    assert any("--zero-framework deepspeed with strategy ddp is DeepSpeed's engine" in n for n in predicted)
    assert any("device 12 is not among the 8 devices" in n for n in predicted)
    out, err = _run(capsys, "sweep", *SCENARIO, "--batch-values", "8,16")
    assert sorted(_notes(err)) == sorted(predicted)
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][0] == "devices" and len(rows) == 1 + 2 * 2
    assert "note" not in out


def test_sweep_json_stays_a_list_of_rows_with_the_notes_on_stderr(capsys):
    out, err = _run(capsys, "sweep", *SCENARIO, "--format", "json")
    rows = json.loads(out)
    assert isinstance(rows, list) and {r["devices"] for r in rows} == {8, 16}
    assert any("--zero-framework deepspeed with strategy ddp is DeepSpeed's engine" in n
               for n in _notes(err))


def test_sweep_notes_with_out_file_stay_off_the_data(tmp_path, capsys):
    path = tmp_path / "grid.csv"
    _, err = _run(capsys, "sweep", *SCENARIO, "--out", str(path))
    assert any("--zero-framework deepspeed with strategy ddp is DeepSpeed's engine" in n
               for n in _notes(err))
    assert "note" not in path.read_text()


def test_a_note_that_a_swept_axis_contradicts_is_dropped(capsys):
    # deepspeed matters on the zero3 rows: not ignored across the sweep, only on the ddp rows
    # (said of them since session 42, as predict says it of their scenario)
    _, err = _run(capsys, "sweep", "--devices", "8", "--zero-framework", "deepspeed",
                  "--strategy-values", "ddp,zero3")
    # the swept strategy by its grid flag, as typed (was 'give --strategy zero1, ...' before
    # session 50, a flag the sweep refuses beside --strategy-values)
    assert [n for n in _notes(err) if "--zero-framework" in n] == [
        "note: rows at strategy ddp: --zero-framework deepspeed with strategy ddp is "
        "DeepSpeed's engine without ZeRO (stage 0: its own all-reduce and optimizer step, "
        "nothing sharded); give --strategy-values zero1, zero2 or zero3 to shard"]
    _, err = _run(capsys, "sweep", "--devices", "8", "--zero-framework", "deepspeed",
                  "--strategy-values", "ddp")
    assert any("--zero-framework deepspeed with strategy ddp is DeepSpeed's engine" in n
               for n in _notes(err))


def test_a_swept_link_is_not_called_unmeasured(capsys):
    _, err = _run(capsys, "sweep", "--devices", "8,16", "--inter-busbw-values", "5,50")
    notes = _notes(err)
    assert not any(n.startswith("note: inter-server link not measured") for n in notes)
    assert any(n.startswith("note: intra-server link not measured") for n in notes)


def test_sweep_says_the_flags_that_only_price_a_run_are_ignored(capsys):
    out, err = _run(capsys, "sweep", "--devices", "8", "--price", "0", "--train-samples", "1e6")
    assert "--price, --train-samples ignored" in err
    assert "cost" not in out.splitlines()[0]
    _, err = _run(capsys, "sweep", "--devices", "8")
    assert "ignored" not in err


def test_sweep_of_a_transformer_says_its_attention_kernel_and_recompute_style(capsys):
    flags = ("--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "16",
             "--global-batch", "128", "--attention-kernel", "flash2", "--recompute-style",
             "early-stop")
    out, _ = _run(capsys, "predict", *flags)
    header = [line for line in out.splitlines() if line.startswith("attention: ")]
    assert header and "recompute style early-stop ignored" in out
    _, err = _run(capsys, "sweep", *flags, "--tp-values", "1,2")
    assert f"note: {header[0]}" in err.splitlines()
    assert "note: recompute style early-stop ignored: recompute is none, not full" in err
    # swept kernels: no one kernel's words hold for every row
    _, err = _run(capsys, "sweep", *flags[:-4], "--attention-kernel-values", "flash2,fused-vendor")
    assert "attention:" not in err


def test_a_swept_shard_group_above_dp_keeps_the_group_asked(capsys):
    """`sweep --shard-group-values 8,16,32 --devices 16` wrote two identical rows labelled 16 (a
    group of 32 on 16 devices is all 16, as predict --json says): a row per combination stays,
    `shard_group` stays the effective group, and a last column `shard_group_asked` says which
    was asked (session 17); the columns before it are unchanged."""
    argv = ("sweep", "--strategy", "zero3", "--shard-group-values", "8,16,32", "--devices", "16")
    out, err = _run(capsys, *argv)
    rows = list(csv.DictReader(io.StringIO(out)))
    header = out.splitlines()[0].split(",")
    assert header[:3] == ["devices", "shard_group", "nodes"]
    assert header[-1] == "shard_group_asked"
    assert [(r["shard_group"], r["shard_group_asked"]) for r in rows] == [
        ("8", "8"), ("16", "16"), ("16", "32")]
    assert "a group at or above dp is all of dp (asked 32 at dp 16: 16)" in err
    out, _ = _run(capsys, *argv, "--format", "json")
    data = json.loads(out)
    assert [(r["shard_group"], r["shard_group_asked"]) for r in data] == [(8, 8), (16, 16),
                                                                          (16, 32)]
    out, _ = _run(capsys, "sweep", "--workload", "llama3-8b", *argv[1:], "--format", "json")
    assert [(r["shard_group"], r["shard_group_asked"]) for r in json.loads(out)] == [
        (8, 8), (16, 16), (16, 32)]
    out, _ = _run(capsys, "sweep", "--devices", "8,16")
    assert "shard_group_asked" not in out  # only where the axis is swept
