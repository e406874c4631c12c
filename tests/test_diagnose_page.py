"""The Diagnose page under Streamlit's AppTest: example runs, uploads, bad files, traces."""

from __future__ import annotations

import json
import re

import diagnose_cases as cases
import pytest
from app_harness import open_app, open_diagnose_page, run_clean, upload_file
from cli_harness import diagnosed_once, kept_diagnoses, run_cli
from streamlit.testing.v1 import AppTest
from test_sources_nvidia_smi import smi_csv
from test_traces import gpu_trace


def _charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


def test_opens_with_format_help_and_no_report():
    at = open_diagnose_page()
    assert at.title[0].value == "Diagnose"
    assert "Upload a runs file" in at.info[0].value
    assert _charts(at) == 0


def test_example_runs_show_the_cause_remedy_and_charts():
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == "Likely cause: Inter-server link"
    assert "First remedy to try" in at.success[0].value
    assert "Faster inter-server network" in at.success[0].value
    assert _charts(at) == 2


def test_uploaded_csv_is_diagnosed():
    at = open_diagnose_page()
    data = cases.to_csv(cases.slow_device()).encode()
    at.file_uploader(key="dg_runs").set_value(("runs.csv", data, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == "Likely cause: A device far slower than the others"


def test_bad_upload_is_one_line_error():
    at = open_diagnose_page()
    at.file_uploader(key="dg_runs").set_value(
        ("runs.csv", b"devices,nodes,samples_per_s\n1,1,10\n", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "two or more device counts" in at.error[0].value
    assert "\n" not in at.error[0].value


def test_traces_are_diagnosed_with_charts():
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    files = [(f"rank{r}.json", json.dumps(gpu_trace(r, slow_us=200.0 * r)).encode(),
              "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value.startswith("Likely cause:")
    assert _charts(at) == 2


def test_truncated_trace_upload_names_the_file():
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    text = json.dumps(gpu_trace(0))
    at.file_uploader(key="dg_traces").set_value(
        [("rank0.json", text[: len(text) // 2].encode(), "application/json")]).run()
    assert not at.exception
    assert at.error[0].value.startswith("rank0.json: the trace ends early")


def test_charts_render_to_svg(tmp_path):
    """The chart specs are valid Vega-Lite: vl-convert renders each with its data."""
    import vl_convert as vlc
    from scalesim.app import diagnose_page as page

    runs = cases.diagnosis("inter_server")
    paths = []
    for r in (0, 1):
        paths.append(tmp_path / f"rank{r}.json")
        paths[-1].write_text(json.dumps(gpu_trace(r, slow_us=200.0 * r)))
    from scalesim.trace_diagnosis import diagnose_traces
    from scalesim.trace_ranks import load_traces

    tr = diagnose_traces(load_traces([str(p) for p in paths]), "t")
    charts = [page.runs_throughput_chart(runs, width=500), page.runs_breakdown_chart(runs, 500),
              page.trace_breakdown_chart(tr, 500), page.trace_steps_chart(tr, 500)]
    for chart in charts:
        svg = vlc.vegalite_to_svg(chart.to_dict())
        assert svg.startswith("<svg") and "<path" in svg


def test_the_fitted_model_opens_in_the_planner_with_gains_and_their_band():
    from urllib.parse import parse_qs, urlsplit

    from scalesim.app.diagnose_page import example_runs_csv, planner_link, runs_report
    from scalesim.app.report import diagnosis_html

    from scalesim.diagnosis_text import gain_text

    report = runs_report(example_runs_csv(), "example", None, None)
    link = planner_link(report, "http://host/")
    assert link.startswith("http://host/planner?v=2&")
    query = {k: v[-1] for k, v in parse_qs(urlsplit(link).query).items()}
    assert query["src"] == "custom" and query["focus"] == "32"
    planner = open_app(query)  # the planner page at the link
    assert not planner.warning
    assert planner.session_state["profile"].name.startswith("fitted to example")
    assert planner.session_state["app_state"].focus == 32
    first = report.first_remedy
    text = gain_text(first)  # '+25% (95%: +20% to +31%)': the band over the fitted parameters
    assert text.startswith("+") and "(95%: " in text
    assert first.gain_low <= first.objective_gain <= first.gain_high
    html = diagnosis_html(report, link)
    assert "Likely cause" in html and text in html and "planner?v=2" in html


def test_the_diagnose_page_uses_the_planners_words_and_offers_the_planner():
    from scalesim.app.charts import PALETTE
    from scalesim.app.diagnose_page import RUN_PARTS, TRACE_PARTS

    assert ("data stall", PALETTE["data stall"]) in [(p[1], p[2]) for p in RUN_PARTS]
    assert "data stall" in [p[1] for p in TRACE_PARTS]
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.run()
    assert not at.exception
    assert "(95%: " in at.success[0].value
    assert any(b.label == "Open the fitted model in the planner" for b in at.get("link_button"))


# ---------------------------------------------------------------- parity with scalesim diagnose

def _report_text(at: AppTest) -> str:
    """The page's "Report as text" (the report's ``to_text``, as ``scalesim diagnose`` prints)."""
    texts = [c.value for c in at.code if c.value.startswith("Diagnosis of")]
    assert len(texts) == 1, [c.value[:40] for c in at.code]
    return texts[0]


def _cli(capsys, argv: list[str]) -> str:
    code, out, err = run_cli(capsys, ["diagnose", *argv])
    assert code == 0, err
    return out.rstrip("\n")


def _cli_and_json(capsys, monkeypatch, argv: list[str]) -> tuple[str, dict]:
    """The CLI's text for ``argv`` and, from the same diagnosis, the report it printed as
    ``--json`` prints it (``Report.to_json``): one fit, not one for each."""
    made = kept_diagnoses(monkeypatch)
    text = _cli(capsys, argv)
    (report,) = made
    return text, json.loads(report.to_json())


DIAGNOSES: dict = {}  # the reports of the runs_here tests, by arguments (diagnosed_once)


@pytest.fixture
def runs_here(tmp_path, monkeypatch):
    """The example runs as runs.csv in the working folder: the CLI names them 'runs.csv', as the
    page names the upload, so the two reports can be compared whole. The runs are fitted once
    for the same options in this module: the page and the CLI given the same options render
    copies of one report (options that differ fit again)."""
    from scalesim.app.diagnose_page import example_runs_csv

    diagnosed_once(monkeypatch, DIAGNOSES)
    monkeypatch.chdir(tmp_path)
    text = example_runs_csv()
    (tmp_path / "runs.csv").write_text(text)
    return text


def _same_remedies_each_in_its_words(titles: list[str], remedies: list[dict]) -> None:
    """The page's remedy ``titles`` are the CLI's ``remedies`` (--json) in the same order, the
    same words but the layout model's split and the sharding change, which the page says in the
    planner's labels and the CLI in its notation, with the same values (the example runs'
    largest job: 32 devices, over pp 2 with tp 1 16 data-parallel ranks)."""
    assert len(titles) == len(remedies)
    said_apart = ("split_model", "sharding")
    # a change of figures takes the page's arrow since session 51 ('(6.38 → 192 GB/s busbw)',
    # the CLI's '(6.38 -> 192 GB/s busbw)'; the two were compared as equal before)
    assert ([t for t, r in zip(titles, remedies, strict=True) if r["key"] not in said_apart]
            == [r["title"].replace(" -> ", " → ") for r in remedies
                if r["key"] not in said_apart])
    page = {r["key"]: t for t, r in zip(titles, remedies, strict=True)}
    cli = {r["key"]: r["title"] for r in remedies}
    split = next(r for r in remedies if r["key"] == "split_model")["split_layout"]
    layout, mb, k = split["layout"], split["micro_batch"], split["accumulation"]
    assert (layout["tp"], layout["cp"], layout["schedule"], split["strategy"]) == (1, 1, "zb", "ddp")
    pp = layout["pp"]
    dp = 32 // pp
    assert cli["split_model"] == (f"Split the model: dp {dp} x tp 1 x pp {pp} (zero bubble), ddp, "
                                  f"micro-batch {mb} per replica x {k} accumulation, recompute none")
    assert page["split_model"] == (
        f"Split the model: {dp} data-parallel ranks x Pipeline stages {pp} (zero bubble), DDP, "
        f"Micro-batch {mb} per model replica x Gradient accumulation {k}, Activation recompute "
        "none")
    how = "Megatron-Core distributed optimizer"
    assert cli["sharding"] == f"Shard optimizer state (ddp -> zero1, {how})"
    assert page["sharding"] == f"Shard optimizer state (Strategy DDP → ZeRO-1, {how})"


def test_the_diagnosis_html_report_says_the_layouts_as_the_page(capsys, monkeypatch, runs_here):
    """The HTML report of the Diagnose page says the split and the sharding change in the
    planner's labels, as the page's table does; its notes by the page's controls."""
    from scalesim.app.report import diagnosis_html

    made = kept_diagnoses(monkeypatch)
    _cli(capsys, ["runs.csv", "--workload", "bert-large", "--gpu", "A100-SXM4 40GB"])
    (report,) = made
    html = diagnosis_html(report, None)
    assert "Split the model: 16 data-parallel ranks x Pipeline stages 2 (zero bubble), DDP" in html
    assert "(Strategy DDP → ZeRO-1, Megatron-Core" in html
    assert "dp 16 x" not in html and "ddp -&gt; zero1" not in html and "ddp -> zero1" not in html


def test_a_transformer_and_its_gpu_give_the_clis_report_with_the_split(capsys, monkeypatch,
                                                                     runs_here):
    """The runs' transformer and GPU (scalesim diagnose --workload --gpu), the framework's
    recompute style and TP overlap: the page's report is the CLI's for the same runs and flags,
    the same cause and remedies in the same order, and splitting the model is one of them.
    The example runs (BERT-large at sequence 128 on A100s, 61.6 ms a micro-step of 32) named as
    gpt-1.7b are faster than that model can run on an A100 (its matmuls alone take, by hand,
    3 x 32 x 2048 x (24 x (24 h^2 + 4 s h) + 2 h V) / 312e12 = 2361 ms at the 312 TFLOP/s peak,
    h 2304, s 2048, V 51200): one error line, as the CLI's; named as bert-large (sequence 128,
    their own model) on their own A100 they give the report."""
    at = open_diagnose_page(runs_here)
    assert not at.get("toggle") or all(t.key != "dg_tp_overlap" for t in at.get("toggle"))
    at.selectbox(key="dg_workload").set_value("gpt-1.7b")
    run_clean(at)
    from scalesim.app.diagnose_page import GPUS

    assert at.selectbox(key="dg_gpu").value == GPUS[0] == "A100-SXM4 40GB"  # a2-highgpu-8g's
    h, s, v = 2304, 2048, 51200
    by_hand_ms = 3 * 32 * s * (24 * (24 * h**2 + 4 * s * h) + 2 * h * v) / 312e12 * 1e3
    code, _, err = run_cli(capsys, ["diagnose", "runs.csv", "--workload", "gpt-1.7b", "--gpu",
                                    GPUS[0]])
    assert code == 2 and "faster than gpt-1.7b" in err
    assert f"its matmuls alone take {by_hand_ms:.0f} ms" in err  # 2361 (figures.milliseconds)
    assert len(at.error) == 1 and at.error[0].value in err and "\n" not in at.error[0].value
    at.selectbox(key="dg_workload").set_value("bert-large")
    run_clean(at)
    assert not at.error
    argv = ["runs.csv", "--workload", "bert-large", "--gpu", GPUS[0]]
    text, cli = _cli_and_json(capsys, monkeypatch, argv)
    assert at.subheader[0].value == f"Likely cause: {cli['cause']['label']}"
    titles = list(at.dataframe[0].value["remedy"])
    _same_remedies_each_in_its_words(titles, cli["remedies"])
    assert _report_text(at) == text  # the text panel: the CLI's words
    at.selectbox(key="dg_recompute_style").set_value("early-stop")
    at.toggle(key="dg_tp_overlap").set_value(True)
    run_clean(at)
    # the split the planner finds for these runs uses neither (pp 4, no recompute): the report
    # is the CLI's with the same flags
    text = _cli(capsys, [*argv, "--recompute-style", "early-stop", "--tp-overlap"])
    assert _report_text(at) == text


def test_wire_bytes_and_extrapolation_as_the_cli(capsys, runs_here):
    """Bytes per gradient element 2 (bf16 gradients) halves the fitted link bandwidths as
    --wire-bytes 2 does; the device counts typed are the CLI's --extrapolate."""
    at = open_diagnose_page(runs_here)
    at.number_input(key="dg_params").set_value(336e6)
    run_clean(at)
    fp32 = _report_text(at)
    assert fp32 == _cli(capsys, ["runs.csv", "--params", "336e6"])
    at.selectbox(key="dg_wire").set_value(2.0)
    at.text_input(key="dg_extrapolate").set_value("64,128")
    run_clean(at)
    bf16 = _report_text(at)
    assert bf16 == _cli(capsys, ["runs.csv", "--params", "336e6", "--wire-bytes", "2",
                                 "--extrapolate", "64,128"])

    def inter_GBps(text):
        return float(re.search(r"inter-server link: ([\d.]+) GB/s", text).group(1))

    assert inter_GBps(bf16) == pytest.approx(inter_GBps(fp32) / 2, rel=0.01)
    assert re.search(r"^\s+64 devices on\s+8 servers", bf16, re.M)
    assert re.search(r"^\s+128 devices on\s+16 servers", bf16, re.M)


@pytest.mark.parametrize("typed, message", [("64,abc", "'abc' is not a whole number"),
                                            ("64,,128", "has an empty item"),
                                            ("0", "outside 1 <= x <= 1,048,576 devices")])
def test_bad_extrapolation_counts_are_one_error_line(typed, message):
    from scalesim.app.markdown_text import escape_markdown

    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.text_input(key="dg_extrapolate").set_value(typed)
    run_clean(at)
    assert len(at.error) == 1 and at.error[0].value.startswith("Extrapolate to: ")
    # the box escapes Markdown: '1 \\<= x' in its source shows '1 <= x'
    assert escape_markdown(message) in at.error[0].value and "\n" not in at.error[0].value
    at.text_input(key="dg_extrapolate").set_value("")  # and the page keeps working
    run_clean(at)
    assert not at.error and at.subheader[0].value == "Likely cause: Inter-server link"


def test_the_nvidia_smi_log_joins_the_runs_report(tmp_path, capsys, runs_here):
    """The uploaded nvidia-smi log names its slow device in the report, as --smi does; a file
    that is not one is one error line, and the page keeps working with the next upload."""
    at = open_diagnose_page(runs_here)
    at = upload_file(at, "dg_smi", "smi.csv", "a,b,c\n1,2,3\n")
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert at.error[0].value.startswith("smi.csv") and "not an nvidia-smi" in at.error[0].value
    assert not at.subheader
    smi_csv(tmp_path / "smi.csv", slow=5)
    at = upload_file(at, "dg_smi", "smi.csv", (tmp_path / "smi.csv").read_text())
    assert not at.error
    text = _report_text(at)
    assert "device 5 runs at 1,110 MHz of 1,410" in text
    assert any("device 5 runs at 1,110 MHz" in c.value for c in at.caption)  # a note on the page
    assert text == _cli(capsys, ["runs.csv", "--smi", "smi.csv"])


def test_the_nvidia_smi_log_joins_the_traces_report(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    files = []
    for r in (0, 1):
        text = json.dumps(gpu_trace(r, slow_us=200.0 * r))
        (tmp_path / f"rank{r}.json").write_text(text)
        files.append((f"rank{r}.json", text.encode(), "application/json"))
    at.file_uploader(key="dg_traces").set_value(files)
    smi_csv(tmp_path / "smi.csv", slow=1, devices=2)
    at = upload_file(at, "dg_traces_smi", "smi.csv", (tmp_path / "smi.csv").read_text())
    text = _report_text(at)
    assert "nvidia-smi" in text and "device 1 runs at 1,110 MHz" in text
    assert text == _cli(capsys, ["--trace", "rank0.json", "rank1.json", "--smi", "smi.csv"])


def test_an_uploaded_workload_json_is_the_clis_workload_file(tmp_path, capsys, runs_here):
    """The runs' transformer as a workload JSON (--workload FILE): BERT-large at 128 tokens,
    uploaded, gives the CLI's report for that file; one without a shape is one error line."""
    from scalesim.presets import get_transformer

    shape = get_transformer("bert-large").model_copy(update={"seq_len": 128})
    workload = json.dumps({"name": "bert-large at 128", "params": 336e6,
                           "transformer": shape.model_dump()})
    (tmp_path / "bert128.json").write_text(workload)
    at = open_diagnose_page(runs_here)
    at.selectbox(key="dg_workload").set_value("a workload JSON (upload)")
    run_clean(at)
    assert "Upload the workload JSON" in at.info[0].value and not at.subheader
    at = upload_file(at, "dg_workload_file", "bert128.json", workload, "application/json")
    text = _report_text(at)
    assert text == _cli(capsys, ["runs.csv", "--workload", "bert128.json", "--gpu",
                                 "A100-SXM4 40GB"])
    assert "the shape of --workload bert128.json on A100-SXM4 40GB" in text
    assert any(t.startswith("Split the model: ") and "data-parallel ranks x" in t
               for t in at.dataframe[0].value["remedy"])  # in the planner's labels
    at = upload_file(at, "dg_workload_file", "bert.json",
                     json.dumps({"name": "bert", "params": 3e8}), "application/json")
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert at.error[0].value.startswith("bert.json: the workload has no 'transformer' shape")


def test_the_runs_strategy_reaches_the_report():
    """Session 25: how the runs sharded (the CLI's --strategy, --zero-framework, --grad-sync);
    the framework control shows for ZeRO only, the gradient sync for ZeRO-2/3 under FSDP."""
    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True).run()
    assert not [s for s in at.selectbox if s.key in ("dg_zero_framework", "dg_grad_sync")]
    at.selectbox(key="dg_strategy").set_value("zero3").run()
    assert not at.exception, [e.value for e in at.exception]
    assert {s.key for s in at.selectbox} >= {"dg_zero_framework", "dg_grad_sync"}
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("exchanged as zero3 (FSDP FULL\\_SHARD)" in n for n in notes), notes  # escaped
    at.selectbox(key="dg_zero_framework").set_value("deepspeed").run()
    assert not at.exception and "dg_grad_sync" not in {s.key for s in at.selectbox}
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("exchanged as zero3 (DeepSpeed stage 3)" in n for n in notes), notes


def test_a_sharded_jobs_traces_are_read_off_their_collectives_and_can_be_overridden():
    """Session 25: the traces section reads the strategy off the collectives (FSDP FULL_SHARD
    here: two all-gathers a reduce-scatter) unless one is chosen, as `--trace ... --strategy`."""
    from test_diagnose_runs_strategy import _fsdp_trace

    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    assert at.selectbox(key="dg_tr_strategy").value is None
    files = [(f"rank{r}.json", json.dumps(_fsdp_trace(r, 2)).encode(), "application/json")
             for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files).run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("read as zero3 (FSDP FULL\\_SHARD;" in n for n in notes), notes
    at.selectbox(key="dg_tr_strategy").set_value("ddp").run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert not any("read as" in n for n in notes), notes
    # ZeRO-3 chosen: the gradient sync is offered, as --trace --grad-sync (session 40; it was
    # refused from session 27), and says it changes nothing on one micro-step a step; and a
    # hybrid shard group, as --trace --strategy zero3 --shard-group 2
    at.selectbox(key="dg_tr_strategy").set_value("zero3").run()
    assert not at.error and "dg_tr_grad_sync" in {s.key for s in at.selectbox}
    at.selectbox(key="dg_tr_grad_sync").set_value("once-per-step").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("once-per-step changes nothing here" in n for n in notes), notes
    at.selectbox(key="dg_tr_grad_sync").set_value("every-micro-step").run()
    at.number_input(key="dg_tr_shard_group").set_value(2).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("exchanged as zero3 (FSDP HYBRID\\_SHARD, shard group 2)" in n for n in notes), notes


def test_the_planner_link_keeps_how_the_runs_sharded():
    """Session-25 audit: the link dropped the fitted scenario's strategy (and overlap, gradient
    sync): ZeRO-3 runs opened in the planner as DDP at 2.5x their measured throughput. The
    planner at the link now predicts the fitted scenario's focus row exactly."""
    from urllib.parse import parse_qsl, urlsplit

    from scalesim.app.diagnose_page import planner_link, runs_report
    from scalesim.app.plan import make_plan
    from scalesim.app.state import decode_query
    from test_diagnose_runs_strategy import BERT_PARAMS

    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Profile, Scenario

    profile = resolve_profile(None, "pcie-8gpu-100gbe", "bert-large")
    runs = cases.to_csv(cases._rows(profile, Scenario(
        devices=[1, 2, 4, 8, 16, 32], micro_batch=16, accumulation=4, strategy="zero3",
        grad_sync="once-per-step")))
    report = runs_report(runs, "runs.csv", BERT_PARAMS, None, 2.0, strategy="zero3",
                         grad_sync="once-per-step")
    state, fitted, messages = decode_query(dict(parse_qsl(urlsplit(planner_link(report)).query)))
    assert messages == []
    assert (state.strat, state.zfw, state.gs, state.acc) == ("zero3", "fsdp", "once-per-step", 4)
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    own = predict(Profile.model_validate(report.details["fitted_profile"]), scenario)[0]
    assert make_plan(fitted, state).focus.samples_per_s == pytest.approx(own.samples_per_s,
                                                                         rel=1e-9)


def test_the_traces_gradient_sync_defaults_to_what_they_show(tmp_path):
    """Session 40: with a strategy chosen, the traces' gradient sync was a choice of
    every-micro-step (first, so the default) or once-per-step: a ZeRO-2 job under no_sync (1 of
    its 4 micro-steps reduces) chosen as ZeRO-2 was run every micro-step. The default is now
    "as the traces show" (once-per-step here); every-micro-step chosen overrides it, said so."""
    from test_trace_zero_accumulation import zero_trace
    from trace_events import summaries

    s = summaries(tmp_path, zero_trace(2, 4, no_sync=True))
    files = [(f"r{r}.json", (tmp_path / f"r{r}.json").read_bytes(), "application/json")
             for r in (0, 1)]
    assert [x.path for x in s] == [str(tmp_path / f"r{r}.json") for r in (0, 1)]
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    at.file_uploader(key="dg_traces").set_value(files).run()
    at.selectbox(key="dg_tr_strategy").set_value("zero2").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="dg_tr_grad_sync").value is None
    assert at.selectbox(key="dg_tr_grad_sync").options[0] == "as the traces show"
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any("exchanged as zero2 (FSDP SHARD\\_GRAD\\_OP under no\\_sync)" in n
               and "its gradient sync is the traces' (once-per-step: 1 of the 4 micro-steps"
               in n for n in notes), notes
    at.selectbox(key="dg_tr_grad_sync").set_value("every-micro-step").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    notes = [c.value for c in at.caption if c.value.startswith("note: ")]
    assert any('"Gradient sync under accumulation" every-micro-step is used, overriding what '
               "the traces show (once-per-step: 1 of the 4 micro-steps" in n for n in notes), notes


def test_a_traced_ddp_jobs_gradient_sync_is_offered_and_overrides_as_the_cli():
    """Session 42: `--trace --grad-sync` overrides what the traces show for a job read as DDP
    under accumulation (either value), but the page offered the gradient sync only for ZeRO-2/3
    under FSDP: a DDP job under no_sync (1 of 4 micro-steps reduces) could not be said to
    reduce in each. Now offered with the strategy read off the traces or named DDP, and the
    report's notes are the CLI's."""
    from test_trace_metric_collectives import ddp_job

    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces").run()
    assert at.selectbox(key="dg_tr_grad_sync").value is None  # as the traces show
    events = ddp_job(sized=True)
    files = [(f"rank{r}.json", json.dumps({
        "distributedInfo": {"backend": "gloo", "rank": r, "world_size": 2},
        "traceEvents": events}).encode(), "application/json") for r in (0, 1)]
    at.file_uploader(key="dg_traces").set_value(files).run()
    at.selectbox(key="dg_tr_grad_sync").set_value("every-micro-step").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    notes = " ".join(c.value for c in at.caption if c.value.startswith("note: "))
    assert "every-micro-step is used, overriding what the traces show" in notes, notes
    at.selectbox(key="dg_tr_strategy").set_value("ddp").run()
    assert "dg_tr_grad_sync" in {s.key for s in at.selectbox}
