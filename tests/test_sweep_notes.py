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
    assert any("--zero-framework deepspeed ignored" in n for n in predicted)
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
    assert any("--zero-framework deepspeed ignored" in n for n in _notes(err))


def test_sweep_notes_with_out_file_stay_off_the_data(tmp_path, capsys):
    path = tmp_path / "grid.csv"
    _, err = _run(capsys, "sweep", *SCENARIO, "--out", str(path))
    assert any("--zero-framework deepspeed ignored" in n for n in _notes(err))
    assert "note" not in path.read_text()


def test_a_note_that_a_swept_axis_contradicts_is_dropped(capsys):
    # deepspeed matters on the zero3 rows: not ignored across the sweep
    _, err = _run(capsys, "sweep", "--devices", "8", "--zero-framework", "deepspeed",
                  "--strategy-values", "ddp,zero3")
    assert not any("--zero-framework" in n for n in _notes(err))
    _, err = _run(capsys, "sweep", "--devices", "8", "--zero-framework", "deepspeed",
                  "--strategy-values", "ddp")
    assert any("--zero-framework deepspeed ignored" in n for n in _notes(err))


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
