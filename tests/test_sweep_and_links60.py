"""Session 60: what a sweep wrote or said that predict did not, and share links that could not
open the what-if they were made of (docs/reliability.md, "Session 60")."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

from cli_harness import run_cli
from scalesim.app.state import (
    MAX_PROFILE_BLOB_CHARS,
    MAX_QUERY_CHARS,
    encode_query,
    link_limit_words,
    read_link,
)

from scalesim.cli.cmd_sweep import _on_off

MEASURED = (Path(__file__).parent.parent / "benchmarks" / "results" / "h200-2026-11-30"
            / "first-run" / "gpu-profile.json")


def _json(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return json.loads(out), err


def test_a_split_axis_of_one_predicts_as_predict_does_on_a_measured_profile(capsys):
    """A parameter-count profile with a timed block: '--tp-values 1' moved every row to the
    block's shape (step 0.1356 s, memory 20.9 GB at 2 devices) where predict --tp 1 keeps the
    measured whole-model curve (0.1391 s, 36.0 GB)."""
    rows, _ = _json(capsys, ["sweep", "--profile", str(MEASURED), "--devices", "2,8",
                             "--tp-values", "1", "--format", "json"])
    again, _ = _json(capsys, ["predict", "--profile", str(MEASURED), "--devices", "2,8",
                              "--tp", "1", "--json"])
    for row, one in zip(rows, again, strict=True):
        for key in ("step_time_s", "samples_per_s", "efficiency", "memory_bytes"):
            assert row[key] == one[key], key


def test_the_link_note_quotes_each_rows_busbw_or_none(capsys):
    """The per-server link words came from the base scenario ('intra 370, inter 192 GB/s')
    where the rows ran at the busbw swept."""
    argv = ["sweep", "--hardware", "dgx-h100", "--devices", "16", "--gpus-per-node", "4"]
    code, _, err = run_cli(capsys, [*argv, "--inter-busbw-values", "100,200",
                                    "--intra-busbw-values", "50"])
    assert code == 0 and "intra 370, inter 192" not in err and "4 of 8 GPUs per server" not in err
    code, _, err = run_cli(capsys, [*argv, "--inter-busbw-values", "100"])
    code, out, _ = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--devices", "16",
                                    "--gpus-per-node", "4", "--inter-busbw", "100"])
    words = "4 of 8 GPUs per server: intra 370, inter 50 GB/s busbw"
    assert words in err and words in out


def test_csv_cells_are_the_floats_the_json_has(capsys):
    """Six significant digits wrote 12.5 and 12.500004 alike and memory 1.04772e+10."""
    argv = ["sweep", "--devices", "16", "--inter-busbw-values", "12.5,12.500004",
            "--bucket-mib-values", "1234.5678"]
    code, out, _ = run_cli(capsys, [*argv, "--format", "csv"])
    assert code == 0
    table = list(csv.DictReader(io.StringIO(out)))
    rows, _ = _json(capsys, [*argv, "--format", "json"])
    assert [r["inter_busbw_GBps"] for r in table] == ["12.5", "12.500004"]
    for cells, row in zip(table, rows, strict=True):
        for key in ("bucket_mib", "step_time_s", "samples_per_s", "memory_bytes"):
            assert float(cells[key]) == row[key], key


def test_rows_that_do_not_fit_are_warned_of_as_predict_warns(capsys):
    code, _, err = run_cli(capsys, ["sweep", "--devices", "1,2", "--batch-values", "32,512"])
    assert code == 0
    assert ("warning: 2 of 4 rows do not fit in device memory (fits false): not runnable"
            in err)
    code, _, err = run_cli(capsys, ["sweep", "--devices", "1,2"])
    assert "do not fit" not in err


def test_on_off_words_given_twice_are_one_value(capsys):
    assert _on_off("ON,on,off,False") == [True, False] and _on_off("on,true") == [True]
    rows, _ = _json(capsys, ["sweep", "--devices", "8", "--overlap-values", "on,true,off",
                             "--format", "json"])
    assert [r["overlap"] for r in rows] == [True, False]


def test_the_fit_hint_under_a_global_batch_names_accumulation(capsys):
    """'a smaller --batch' is refused beside --global-batch."""
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1-128", "--global-batch", "512"])
    assert code == 0
    (warning,) = [line for line in out.splitlines() if line.startswith("warning: rows marked NO")]
    assert "more --accumulation" in warning and "--batch" not in warning


def test_deepspeed_beside_ddp_is_said_as_stage_0_not_ignored(capsys):
    """It changes the numbers (DeepSpeed's engine: its own all-reduce and optimizer step), so
    'ignored' was false."""
    argv = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8"]
    fsdp, _ = _json(capsys, [*argv, "--json"])
    deepspeed, _ = _json(capsys, [*argv, "--zero-framework", "deepspeed", "--json"])
    assert deepspeed[0]["memory_bytes"] < fsdp[0]["memory_bytes"]
    assert deepspeed[0]["step_time_s"] != fsdp[0]["step_time_s"]
    code, out, _ = run_cli(capsys, [*argv, "--zero-framework", "deepspeed"])
    assert ("note: --zero-framework deepspeed with strategy ddp is DeepSpeed's engine without "
            "ZeRO (stage 0: its own all-reduce and optimizer step, nothing sharded)") in out
    assert "ignored" not in " ".join(line for line in out.splitlines() if "deepspeed" in line)


def test_sigterm_leaves_no_temporary_file(tmp_path):
    """timeout and schedulers send SIGTERM: it left '.out.csv.<random>.tmp' (88 MB)."""
    out = tmp_path / "out.csv"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    grid = ["--devices", "1-4096", "--batch-values", "1,2,4,8,16,32,64", "--bucket-mib-values",
            "1,2,4,8,16,25,32,64,128", "--inter-busbw-values", "1,2,3,4,5,6,7,8,9,10,11,12",
            "--intra-busbw-values", "10,20,30,40,50,60,70,80,90,100", "--overlap-values",
            "on,off", "--straggler-cv-values", "0,0.01,0.02,0.03"]
    proc = subprocess.Popen([sys.executable, "-m", "scalesim.cli.main", "sweep", *grid, "--out",
                             str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.csv.*")) and time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    assert list(tmp_path.glob(".out.csv.*")), "the sweep never started writing"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert list(tmp_path.iterdir()) == []


def test_an_html_escaped_link_is_read_as_its_sender_wrote_it():
    """'&' written as '&amp;' by an HTML page or email: every field read as 'amp;ck', unknown,
    and the defaults shown with only 'ignored unknown link fields'."""
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"strat": "zero3", "mb": 64})
    params = encode_query(state, preset_profile(state))
    plain = read_link(params)
    text = "&".join(f"{k}={v}" for k, v in params.items()).replace("&", "&amp;")
    escaped = read_link(dict(parse_qsl(text)))
    assert escaped[0] == plain[0] and escaped[0].strat == "zero3"
    (message,) = escaped[2]
    assert "written as '&amp;'" in message


def test_a_link_past_the_limits_warns_its_sender():
    """An uploaded profile whose blob the reader refuses made a link that opened the preset
    profile, and nothing told the sender."""
    assert link_limit_words({"v": "2", "prof": "x" * 100}) is None
    blob = link_limit_words({"v": "2", "prof": "x" * (MAX_PROFILE_BLOB_CHARS + 1)})
    assert blob.startswith("This link will not open this what-if: its profile is 12,001")
    long = link_limit_words({f"k{i}": "y" * 100 for i in range(MAX_QUERY_CHARS // 100)})
    assert "would open with the defaults" in long
