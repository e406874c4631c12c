"""The Diagnose page's words where a line splices a control (session 53): a runs file uploaded
as a trace was told to be read 'without --trace', a flag the page does not have; the page names
its runs source instead, the CLI keeps its line. A line names a control by its label in double
quotes, as the page shows it ('drop "The runs' transformer"', was 'drop The runs' transformer',
a capital mid-sentence)."""

from __future__ import annotations

import json

from app_harness import open_diagnose_page, run_clean, upload_file
from cli_harness import run_cli
from scalesim.app.diagnose_page import in_page_words

from scalesim.errors import KNOB
from scalesim.layout import knob_refusal

RUNS = json.dumps([{"devices": 8, "nodes": 1, "samples_per_s": 100.0}])
NOT_A_TRACE = ("runs.json: not a Chrome trace (expected '{', found '[' at character 0); a trace "
               "is the JSON object torch.profiler writes, and a runs file (CSV, or a JSON list of "
               "runs) is ")


def test_a_runs_file_given_as_a_trace_names_the_pages_runs_source(tmp_path, capsys, monkeypatch):
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces")
    (box,) = upload_file(run_clean(at), "dg_traces", "runs.json", RUNS, "application/json").error
    # the box is Markdown: the quoted '[' escaped
    assert box.value == (NOT_A_TRACE.replace("'['", "'\\['")
                         + 'given with "Measured runs" (scalesim diagnose FILE)')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs.json").write_text(RUNS)
    code, _, err = run_cli(capsys, ["diagnose", "--trace", "runs.json"])
    assert code == 2
    assert err.strip().endswith("error: " + NOT_A_TRACE
                                + "read without --trace: scalesim diagnose FILE")


def test_a_line_quotes_each_control_it_splices_and_the_cli_keeps_its_flags():
    line = knob_refusal(f"{KNOB.workload} predicts their transformer on a GPU ({KNOB.gpu}): "
                        f"drop {KNOB.workload}; if it sharded, give {KNOB.strategy} or {KNOB.tp}")
    assert str(line) == ("--workload predicts their transformer on a GPU (--gpu): drop "
                         "--workload; if it sharded, give --strategy or --tp")
    # the traces' page names the strategy its own way; tp has no control there: its flag, bare
    assert in_page_words(line, traced=True) == (
        '"The runs\' transformer" predicts their transformer on a GPU ("The runs\' GPU"): drop '
        '"The runs\' transformer"; if it sharded, give "How the job sharded" or --tp')
    assert in_page_words(line).endswith('give "How the runs sharded" or --tp')
