"""The Diagnose page speaks in its controls' labels, the CLI in diagnose's flags (session 47's
helper). Before, the page showed diagnose's own flags in its cautions, notes, remedies table and
error boxes ('give --params ...', '--gpus-per-node 16: ...', 'give it with --smi'): 92 shown
texts of a 24-case driver named a flag outside a command the user is told to run. The lines
are templates naming the input ('{params}'; ``layout.knob_refusal``, ``bounds.DIAGNOSE_INPUTS``):
the CLI says the flag, the page its control (``diagnose_page.DIAGNOSE_CONTROLS``,
``errors.in_words_of``); the page never reads the text."""

from __future__ import annotations

import json
import re

import diagnose_cases as cases
from app_harness import open_diagnose_page, run_clean, upload_file
from cli_harness import run_cli
from streamlit.testing.v1 import AppTest
from test_sources_nvidia_smi import smi_csv
from test_traces import gpu_trace

# a flag, where it is not part of a command the user is told to run ('scalesim plan --workload')
FLAG = re.compile(r"(?<![\w`-])--[a-z][\w-]*")
COMMAND = re.compile(r"(nvidia-smi|scalesim( [a-z-]+)?) --[^;)]*")


def _shown(at: AppTest) -> list[str]:
    """Every text the page shows: boxes, markdown, captions and the tables' text cells."""
    texts = [e.value for kind in ("markdown", "info", "warning", "error", "caption", "success")
             for e in getattr(at, kind)]
    return texts + [x for d in at.dataframe for c in d.value.columns for x in d.value[c]
                    if isinstance(x, str)]


def _flags(at: AppTest) -> list[str]:
    return [t for t in _shown(at) if FLAG.search(COMMAND.sub("", t))]


def _example(**numbers) -> AppTest:
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value)
    return run_clean(at)


def test_the_example_runs_say_the_parameter_control_not_the_flag():
    at = _example(dg_gpus_per_node=16)
    assert _flags(at) == []
    caution = next(w.value for w in at.warning if w.value.startswith("**Caution:**"))
    assert '"Model parameters" (the model\'s parameter count) pins it' in caution
    assert caution.endswith('give "Model parameters" (the model\'s parameter count) to rank them')
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert [n for n in notes if n.startswith('note: no "Model parameters": link speeds are ')]
    assert [n for n in notes if n.startswith('note: "GPUs per server" 16: the runs used at most 8')]
    (table,) = [d.value for d in at.dataframe if "remedy" in d.value.columns]
    assert [n for n in table["note"] if "give \"The runs' transformer\" with their 'transformer' "
            "shape" in n and "together with \"The runs' GPU\", the GPU they ran on" in n]


def test_the_page_names_each_input_by_a_label_it_shows():
    """Each control a line may name starts a label the page shows (one place for the words)."""
    from scalesim.app.diagnose_page import DIAGNOSE_CONTROLS, SOURCES

    at = _example()
    at.selectbox(key="dg_workload").set_value("bert-large")
    at.selectbox(key="dg_strategy").set_value("zero3")
    run_clean(at)
    labels = [w.label for kind in ("number_input", "selectbox", "text_input", "toggle",
                                   "file_uploader") for w in at.get(kind)] + list(SOURCES)
    for field, name in DIAGNOSE_CONTROLS.items():
        assert [label for label in labels if label.startswith(name)], field


def test_the_cli_keeps_the_flags(capsys, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(cases.to_csv(cases.inter_server()))
    code, out, err = run_cli(capsys, ["diagnose", str(runs), "--gpus-per-node", "16"])
    assert code == 0, err
    assert "note: no --params: link speeds are reported" in out
    assert "note: --gpus-per-node 16: the runs used at most 8" in out
    assert "--params (the model's parameter count) pins it" in out
    assert "give --workload with their 'transformer' shape" in out


def test_a_log_or_trace_given_as_runs_names_the_page_source(tmp_path, capsys):
    path = tmp_path / "smi.csv"
    smi_csv(path, slow=3)
    at = upload_file(open_diagnose_page(), "dg_runs", "smi.csv", path.read_bytes())
    assert at.error[0].value.startswith("smi.csv: an nvidia-smi log, not a runs file; give it "
                                        "with \"nvidia-smi log\" (scalesim diagnose --smi smi.csv")
    at = upload_file(open_diagnose_page(), "dg_runs", "rank0.json", json.dumps(gpu_trace(0)),
                     "application/json")
    assert at.error[0].value == ("rank0.json: this is a profiler trace, not a runs file; give "
                                 "it with \"Profiler traces\" (scalesim diagnose --trace rank0.json)")
    code, _, err = run_cli(capsys, ["diagnose", str(path)])
    assert code == 2 and "an nvidia-smi log, not a runs file; give it with --smi (" in err


def test_a_traced_jobs_strategy_is_named_by_its_control():
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces")
    run_clean(at)
    at.selectbox(key="dg_tr_strategy").set_value("zero3")
    run_clean(at)
    files = [(f"rank{r}.json", json.dumps(gpu_trace(r, slow_us=200.0 * r)).encode(),
              "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files)
    run_clean(at)
    notes = [c.value for c in at.caption]
    assert [n for n in notes if '("How the job sharded"): the remedies start from it' in n]
    assert not [n for n in notes if "--strategy" in n]
