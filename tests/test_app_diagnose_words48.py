"""The Diagnose page and its HTML report say the page's controls, not diagnose's flags, and the
planner's "Cannot predict" box its control, not a schema field (session 48). Session 47 left
the traced job's own notes ('--trace takes no --workload', '--trace takes no other precision',
'(diagnose --trace prices the vendor kernel ...)': 12 texts of its driver), and the page's HTML
report printed every line as the CLI says it ('give --params ...'). The lines are templates
(``layout.knob_refusal``: '{trace}', '{workload}'), the page and its report say them through
``diagnose_page.in_page_words``; the CLI keeps its flags."""

from __future__ import annotations

import html
import json
import re

import pytest
from app_harness import open_diagnose_page, run_clean
from cli_harness import run_cli
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest
from test_traces import gpu_trace

from scalesim.errors import ScalesimError

# a flag, where it is not part of a command the user is told to run ('scalesim plan --workload')
FLAG = re.compile(r"(?<![\w`-])--[a-z][\w-]*")
COMMAND = re.compile(r"(nvidia-smi|scalesim( [a-z-]+)?) --[^;)]*")


def _bare_flags(texts) -> list[str]:
    return [t for t in texts if FLAG.search(COMMAND.sub("", t))]


def _traced(tmp_path=None) -> AppTest:
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces")
    run_clean(at)
    files = [(f"rank{r}.json", json.dumps(gpu_trace(r, slow_us=200.0 * r)).encode(),
              "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files)
    return run_clean(at)


def _remedy_notes(at: AppTest) -> dict[str, str]:
    (table,) = [d.value for d in at.dataframe if "remedy" in d.value.columns]
    return dict(zip(table["remedy"], table["note"], strict=True))


def test_the_traced_jobs_notes_name_the_pages_controls():
    notes = _remedy_notes(_traced())
    assert _bare_flags(notes.values()) == [], notes
    split = notes["Split the model (tensor / pipeline parallelism)"]
    assert ("(\"The runs' transformer\" is not read with \"Profiler traces\"): scalesim plan "
            "--workload") in split
    kernel = next(n for n in notes.values() if n.startswith("the traced steps ran their own "
                                                            "attention kernel"))
    assert kernel.startswith("the traced steps ran their own attention kernel (a model read from "
                             "\"Profiler traces\" prices the vendor kernel from "
                             "FlashAttention-2-class kernels")
    assert "and no other attention kernel is read with \"Profiler traces\": scalesim plan" in kernel
    precision = next(n for n in notes.values() if n.startswith("the traced steps ran at their "
                                                               "own precision"))
    assert precision.startswith("the traced steps ran at their own precision, and no other "
                                "precision is read with \"Profiler traces\": scalesim plan --workload")


def test_the_cli_keeps_the_traced_jobs_flags(tmp_path, capsys):
    paths = []
    for r in (0, 1):
        paths.append(tmp_path / f"rank{r}.json")
        paths[-1].write_text(json.dumps(gpu_trace(r, slow_us=200.0 * r)))
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *map(str, paths), "--json"])
    assert code == 0, err
    notes = [r["note"] for r in json.loads(out)["remedies"]]
    assert [n for n in notes if "(--workload is not read with --trace): scalesim plan" in n]
    assert [n for n in notes if "(a model read from --trace prices the vendor kernel" in n
            and "and no other attention kernel is read with --trace" in n]
    assert [n for n in notes if "and no other precision is read with --trace" in n]


@pytest.fixture
def deferred(monkeypatch) -> dict:
    """The data callables of the page's deferred download buttons, by file name: what a click
    on one downloads (``st.download_button(data=<callable>)``)."""
    kept: dict = {}
    add = MediaFileManager.add_deferred

    def keep(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        kept[file_name] = data_callable
        return add(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    return kept


def _html_texts(page: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in
            re.findall(r"<(?:li|td|p)[^>]*>(.*?)</(?:li|td|p)>", page, flags=re.S)]


def test_the_html_report_of_traces_says_the_pages_controls(deferred):
    at = _traced()
    assert not at.exception
    page = deferred["scalesim-diagnosis.html"]()
    texts = _html_texts(page)
    assert _bare_flags(texts) == [], _bare_flags(texts)
    assert [t for t in texts if "(\"The runs' transformer\" is not read with \"Profiler traces\")" in t]
    assert [t for t in texts if "and no other precision is read with \"Profiler traces\"" in t]


def test_the_html_report_of_runs_says_the_pages_controls(deferred):
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.number_input(key="dg_gpus_per_node").set_value(16)
    run_clean(at)
    page = deferred["scalesim-diagnosis.html"]()
    texts = _html_texts(page)
    assert _bare_flags(texts) == [], _bare_flags(texts)
    assert [t for t in texts if t.startswith('no "Model parameters": link speeds are ')]
    assert [t for t in texts if t.startswith('"GPUs per server" 16: the runs used at most 8')]
    assert [t for t in texts if "give \"The runs' transformer\" with their" in t]


# a schema field's name ('per_sample_s', 'devices_per_node') in a box's words
FIELD = re.compile(r"\b[a-z]+_[a-z_]+\b")
LLAMA_H100 = {"v": "3", "wl": "llama3-8b", "hw": "dgx-h100"}


def test_an_absurd_sequence_length_names_its_control_and_the_lengths_that_work():
    """Before: 'Sequence length 1,073,741,824: the model cannot be predicted at that sequence
    length (compute of workload 'llama3-8b' on hardware 'dgx-h100': field 'per_sample_s':
    2,930,421,041.111022 given; allowed: ...); give a sequence length nearer its own, 8,192
    tokens'. Now the control and the lengths that predict (bisected: the stated one predicts,
    1 % more does not); the CLI keeps the field it broke (tests/test_sequence_out_of_range.py)."""
    from app_harness import cannot_predict_box, open_app

    from scalesim.profiles import resolve_profile

    at = open_app(LLAMA_H100)
    at.sidebar.number_input(key="k_seq").set_value(2**30)
    box = cannot_predict_box(run_clean(at)).replace("\\_", "_")
    assert FIELD.search(box) is None and "field '" not in box and "--" not in box, box
    assert box.startswith("Cannot predict this scenario: Sequence length 1,073,741,824: the "
                          "model cannot be predicted at that sequence length; give at most "
                          "19,800,000 tokens (the model's own: 8,192).")
    resolve_profile(None, "dgx-h100", "llama3-8b", 19_800_000)
    with pytest.raises(ScalesimError, match="field 'per_sample_s'"):
        resolve_profile(None, "dgx-h100", "llama3-8b", 19_800_000 * 101 // 100)


def test_the_sweep_keeps_the_field_the_sequence_broke(capsys):
    """The CLI's sweep names the value by its axis flag and keeps the CLI's words (the field
    the sequence broke, the model's own length), not the app's."""
    code, _, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--devices", "16",
                                    "--seq-len-values", f"4096,{2**30}"])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"scalesim sweep: error: --seq-len-values {2**30:,}: the model "
                          "cannot be predicted at that sequence length (compute of workload "
                          "'llama3-8b'")
    assert "field 'per_sample_s'" in err and "at most" not in err
    assert err.rstrip().endswith("give a sequence length nearer its own, 8,192 tokens")
