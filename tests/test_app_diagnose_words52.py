"""The Diagnose page says its controls where the lines of the diagnosis named diagnose's
flags (session 52): the refusal of an option the replicas of runs that split the model do not
get ('drop --tp-overlap'), the split runs' note ('--workload gives the runs' parameter count
and MFU'), the note of a parameter count too small ('--params 340'), of runs past the memory
estimate ('--strategy zero1-3 says so'), the refusals of CPU runs with a transformer ('drop
--workload') or beside a GPU log ('drop --smi'), of a parameter count off the transformer's
('--params with --workload'); the traces' notes of the gradient sync chosen ('--grad-sync
once-per-step is used'), of DeepSpeed on traces that reduce once a step ('give --zero-framework
fsdp'), of all-reduces of no size ('give --grad-sync once-per-step'), of a job read as sharded
off its collectives ('give --strategy (--shard-group for hybrid sharding)'), of a split job's
collectives that name no group ('if it sharded, give --strategy'), of gathers too small for
the parameters ('to say otherwise, give --strategy'). The lines are templates
(``layout.knob_refusal``); the CLI keeps its flags."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from app_harness import open_diagnose_page, run_clean, upload_file
from cli_harness import diagnose_file, diagnosed_once, run_cli
from streamlit.testing.v1 import AppTest
from test_diagnose_model_split import SLOW_TP8
from test_trace_metric_collectives import ddp_job
from test_trace_metric_gathers import ddp_gathering
from test_trace_zero_accumulation import zero_trace

# a flag, where it is not part of a command the user is told to run ('scalesim plan --workload')
FLAG = re.compile(r"(?<![\w`-])--[a-z][\w-]*")
COMMAND = re.compile(r"scalesim( [a-z-]+)? --[^;)]*")
GPU = "H100-SXM5 80GB"  # the runs' GPU on the page (a preset's device name) and the CLI's --gpu
DIAGNOSES: dict = {}  # the reports of the tests that share them (diagnosed_once), by arguments


def _bare_flags(text: str) -> list[str]:
    return FLAG.findall(COMMAND.sub("", text))


def _split_runs(toggle: str | None = None) -> AppTest:
    """The page with SLOW_TP8's runs (tp 8) as llama3-8b on H100s, toggle ``toggle`` on."""
    at = open_diagnose_page()
    at.file_uploader(key="dg_runs").set_value(("tp8.csv", SLOW_TP8.encode(), "text/csv"))
    at.selectbox(key="dg_workload").set_value("llama3-8b")
    run_clean(at)
    at.selectbox(key="dg_gpu").set_value(GPU)
    if toggle is not None:
        at.toggle(key=toggle).set_value(not at.toggle(key=toggle).value)
    return run_clean(at)


@pytest.fixture
def tp8_csv(tmp_path):
    path = tmp_path / "tp8.csv"
    path.write_text(SLOW_TP8)
    return str(path)


def test_the_option_split_runs_do_not_get_is_refused_by_its_control(tp8_csv, capsys):
    """Tensor-parallel overlap on for runs fitted as model replicas: the page's error box names
    the toggle (it said '--tp-overlap ... drop --tp-overlap'); the CLI's line keeps the flag."""
    (box,) = _split_runs("dg_tp_overlap").error
    assert '; "Tensor-parallel overlap" is for the layouts of the split-the-model remedy' in box.value
    assert box.value.endswith('drop "Tensor-parallel overlap"')
    assert _bare_flags(box.value) == []
    code, _, err = run_cli(capsys, ["diagnose", tp8_csv, "--workload", "llama3-8b", "--gpu", GPU,
                                    "--tp-overlap"])
    assert code == 2
    assert err.strip().endswith("(another split is scalesim plan --workload's question): "
                                "drop --tp-overlap")
    assert "(tp 8 x pp 1 x cp 1); --tp-overlap is for the layouts" in err


def test_pipeline_sends_off_for_split_runs_names_its_toggle():
    (box,) = _split_runs("dg_p2p_overlap").error
    assert box.value.endswith('drop "Pipeline sends overlap compute" off')
    assert _bare_flags(box.value) == []


def test_the_split_runs_note_names_the_runs_transformer_control(tp8_csv, capsys):
    """The note of runs that split the model with their transformer given: the page says the
    control that gave it (it said '--workload gives the runs' parameter count and MFU'), the
    rest of the note as the CLI's, its split's arrows the page's; the CLI keeps the flag."""
    notes = [c.value for c in _split_runs().caption if "parameter count and MFU" in c.value]
    assert len(notes) == 1, notes
    (note,) = notes
    assert "\"The runs' transformer\" gives the runs' parameter count and MFU; the remedies are" in note
    assert "1 → 8 for 8 → 64 devices" in note  # the layout title's page arrow kept
    assert _bare_flags(note) == []
    code, out, err = run_cli(capsys, ["diagnose", tp8_csv, "--workload", "llama3-8b", "--gpu", GPU])
    assert code == 0, err
    assert ('"Runs that split the model") --workload gives the runs\' parameter count and MFU; '
            "the remedies are the replicas' (which other split is faster is scalesim plan "
            "--workload's question).") in out
    assert "1 -> 8 for 8 -> 64 devices" in out


def test_the_note_of_a_parameter_count_too_small_names_its_control(tmp_path, capsys):
    """Model parameters 340 (340e6 meant) for the example runs: the fitted links move the
    gradients below 0.001 GB/s, and the page's note names the control (it said '--params 340:
    ... check --params is ...'); the CLI keeps the flag."""
    from scalesim.app.diagnose_page import example_runs_csv

    at = open_diagnose_page()
    at.toggle(key="dg_example").set_value(True)
    at.number_input(key="dg_params").set_value(340.0)
    notes = [c.value for c in run_clean(at).caption if "floor of any link" in c.value]
    assert len(notes) == 1, notes
    assert notes[0].startswith('note: "Model parameters" 340: the fitted links move the gradients')
    assert "check \"Model parameters\" is the model's parameter count (e.g. 340e6, not 340)" in notes[0]
    assert _bare_flags(notes[0]) == []
    path = tmp_path / "runs.csv"
    path.write_text(example_runs_csv())
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--params", "340"])
    assert code == 0, err
    assert "note: --params 340: the fitted links move the gradients at intra-server" in out
    assert "check --params is the model's parameter count (e.g. 340e6, not 340)" in out


def test_the_note_of_runs_past_the_memory_estimate_names_the_sharding_control(tmp_path, capsys):
    """Llama 3 8B at 4 a GPU on 8-32 A100 40GB, read as DDP: the model's estimate is past the
    GPU's memory, yet they ran; the note's guess 'sharding' names the page's control that says
    so (it said '--strategy zero1-3 says so'); the CLI keeps the flag."""
    from test_diagnose_model import llama_runs_csv

    runs = llama_runs_csv()
    at = open_diagnose_page(runs)
    at.selectbox(key="dg_workload").set_value("llama3-8b")
    run_clean(at)
    at.selectbox(key="dg_gpu").set_value("A100-SXM4 40GB")
    notes = [c.value for c in run_clean(at).caption if "yet the runs ran" in c.value]
    assert len(notes) == 1, notes
    assert '(with recompute, sharding ("How the runs sharded" zero1-3 says so) or a shorter' in notes[0]
    assert _bare_flags(notes[0]) == []
    code, out, err = diagnose_file(capsys, tmp_path, runs, "--workload", "llama3-8b", "--gpu",
                                   "A100 40GB")
    assert code == 0, err
    assert "(with recompute, sharding (--strategy zero1-3 says so) or a shorter sequence" in out


def test_cpu_runs_with_a_transformer_are_refused_by_the_pages_controls(tmp_path, capsys,
                                                                        monkeypatch):
    """Runs on CPU processes with the runs' transformer chosen: the error box names the two
    controls (it said '--workload predicts their transformer on a GPU (--gpu): drop
    --workload'); the CLI keeps the flags."""
    from test_cpu_words_diagnose import runs_csv

    diagnosed_once(monkeypatch, DIAGNOSES)  # the page's CPU runs, as in the GPU log's test below
    at = open_diagnose_page(runs_csv("cpu"))
    at.selectbox(key="dg_workload").set_value("bert-large")
    (box,) = run_clean(at).error
    assert box.value == ("the runs ran on CPU processes (device 'CPU: cpu'); \"The runs' "
                         "transformer\" predicts their transformer on a GPU (\"The runs' GPU\"): "
                         "drop \"The runs' transformer\", or the runs' device column")
    code, _, err = diagnose_file(capsys, tmp_path, runs_csv("cpu"), "--workload", "bert-large",
                                 "--gpu", "A100 80GB")
    assert code == 2
    assert err.strip().endswith("; --workload predicts their transformer on a GPU (--gpu): drop "
                                "--workload, or the runs' device column")


def test_a_gpu_log_beside_cpu_runs_or_traces_is_refused_by_its_upload(tmp_path, capsys,
                                                                       monkeypatch):
    """An nvidia-smi log uploaded beside runs or traces of CPU processes: the error box names
    the upload (it said '--smi: ... drop --smi'); the CLI keeps the flag."""
    from test_cpu_words import TRACES
    from test_cpu_words_diagnose import runs_csv
    from test_sources_nvidia_smi import smi_csv

    # the page's CPU runs, as in the transformer's test above; the CLI's file is named runs.csv
    # as the page names an upload, so it fits the same runs with the same options once too
    diagnosed_once(monkeypatch, DIAGNOSES)
    monkeypatch.chdir(tmp_path)
    log = smi_csv(tmp_path / "smi.csv").read_text()
    at = upload_file(open_diagnose_page(runs_csv("cpu")), "dg_smi", "smi.csv", log)
    (box,) = at.error
    assert box.value == ("\"nvidia-smi log\": the runs ran on CPU processes ('CPU: cpu'), so an "
                         "nvidia-smi log cannot be theirs; drop \"nvidia-smi log\", or give it with "
                         "the GPU job's runs")
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces")
    upload_file(run_clean(at), "dg_traces_smi", "smi.csv", log)
    at.file_uploader(key="dg_traces").set_value(
        [(Path(t).name, Path(t).read_bytes(), "application/gzip") for t in TRACES])
    (box,) = run_clean(at).error
    assert box.value.startswith('"nvidia-smi log": the traces ran on CPU processes')
    assert box.value.endswith("; drop \"nvidia-smi log\", or give it with the GPU job's traces")
    code, _, err = diagnose_file(capsys, Path(), runs_csv("cpu"), "--smi", "smi.csv")
    assert code == 2
    assert err.strip().endswith("error: --smi: the runs ran on CPU processes ('CPU: cpu'), so an "
                                "nvidia-smi log cannot be theirs; drop --smi, or give it with "
                                "the GPU job's runs")


def test_a_parameter_count_off_the_transformers_is_refused_by_the_pages_controls(tmp_path,
                                                                                capsys):
    """Model parameters 1e9 beside the runs' transformer bert-large (3.337e8 by its shape, 199.7 %
    off, more than the workload schema's 5 %): the error box names the two controls (it said
    '--params with --workload bert-large: ...'); the CLI keeps the flags."""
    from scalesim.app.diagnose_page import example_runs_csv

    at = open_diagnose_page(example_runs_csv())
    at.number_input(key="dg_params").set_value(1e9)
    at.selectbox(key="dg_workload").set_value("bert-large")
    (box,) = run_clean(at).error
    rule = ("params 1e+09 disagrees with the transformer shape's 3.337e+08 by 199.7% (more than "
            "5%); fix params or the shape")
    assert box.value == f"\"Model parameters\" with \"The runs' transformer\" bert-large: {rule}"
    code, _, err = diagnose_file(capsys, tmp_path, example_runs_csv(), "--params", "1e9",
                                 "--workload", "bert-large", "--gpu", "A100 40GB")
    assert code == 2
    assert err.strip().endswith(f"error: --params with --workload bert-large: {rule}")


def _zero2_without_gathers() -> list[dict]:
    """``zero_trace``'s ZeRO-2 job under no_sync with its all-gathers left out: read as DDP."""
    return [e for e in zero_trace(2, 4, no_sync=True)
            if e["args"].get("Collective name") != "_allgather_base"]


GRAD_SYNC = '"Gradient sync under accumulation"'  # as a line names the control


def _traced_notes(job: list[dict], **choices: str) -> str:
    """The page's captions (its notes among them, Markdown's escapes undone) for ``job``'s
    events as the traces of a 2-rank gloo job, with each select box of ``choices`` (its key:
    its value) set in order."""
    return _notes_of_traces([{"distributedInfo": {"backend": "gloo", "rank": r, "world_size": 2},
                              "traceEvents": job} for r in (0, 1)], **choices)


def _notes_of_traces(traces: list[dict], **choices: str) -> str:
    """``_traced_notes`` of ``traces``, each rank's trace (rank<r>.json) as uploaded."""
    files = [(f"rank{r}.json", json.dumps(t).encode(), "application/json")
             for r, t in enumerate(traces)]
    at = open_diagnose_page()
    at.radio(key="dg_source").set_value("Profiler traces")
    run_clean(at).file_uploader(key="dg_traces").set_value(files)
    for key, value in choices.items():
        run_clean(at).selectbox(key=key).set_value(value)
    return " ".join(c.value.replace("\\_", "_") for c in run_clean(at).caption)


@pytest.mark.parametrize(("events", "sync", "said"), [
    (lambda: ddp_job(sized=False), "once-per-step", "once-per-step is used, overriding what the "
     "traces show (all-reduces in 4 of the 4 micro-steps a step, read as DDP reducing"),
    (lambda: ddp_job(sized=True), "once-per-step", "once-per-step changes nothing here: "
     "strategy ddp reduces gradients once per step anyway (it applies to ZeRO-2/3)"),
    (lambda: ddp_job(sized=True), "every-micro-step", "every-micro-step is used, overriding "
     "what the traces show (gradient all-reduces in 1 of the 4 micro-steps a step"),
    (lambda: ddp_job(sized=True, no_sync=False), "every-micro-step", "every-micro-step changes "
     "nothing here: the traces show DDP reducing its gradients in each of the 4 micro-steps"),
    (_zero2_without_gathers, "every-micro-step", "every-micro-step changes nothing here: "
     "strategy ddp reduces gradients once per step anyway"),
])
def test_the_traces_gradient_sync_notes_name_its_control(tmp_path, events, sync, said):
    """A 2-rank job's traces with the gradient sync chosen: its note names the page's control
    (it said '--grad-sync once-per-step is used, ...'), as the CLI's note with the flag
    (``diagnose_request`` of the same traces) says the rest."""
    from trace_events import summaries

    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    job = events()
    notes = _traced_notes(job, dg_tr_grad_sync=sync)
    assert f"{GRAD_SYNC} {said}" in notes
    assert _bare_flags(notes) == []
    cli = diagnose_request(DiagnoseOptions(grad_sync=sync), traces=summaries(tmp_path, job),
                           trace_source="r*.json")
    assert f"--grad-sync {said}" in " ".join(cli.notes)


def test_the_note_of_all_reduces_of_no_size_names_the_gradient_sync_control(tmp_path):
    """A DDP job's traces with no message sizes, all-reduces in 4 of its 4 micro-steps: the
    note that a metric's cannot be told from a gradient's names the page's control (it said
    'give --grad-sync once-per-step'); the CLI's note keeps the flag."""
    from test_trace_metric_collectives import diagnosed

    said = "If the job reduced its gradients once a step (no_sync), give"
    notes = _traced_notes(ddp_job(sized=False))
    assert f"{said} {GRAD_SYNC} once-per-step" in notes
    assert _bare_flags(notes) == []
    cli = " ".join(diagnosed(tmp_path, ddp_job(sized=False)).notes)
    assert f"{said} --grad-sync once-per-step" in cli


def test_the_note_of_deepspeed_on_traces_that_reduce_once_names_the_framework_control(tmp_path):
    """ZeRO-2 traces reduce-scattering in 1 of their 4 micro-steps (as under no_sync), the job
    named as ZeRO-2 under DeepSpeed: the note that DeepSpeed reduces in every micro-step names
    the page's framework control (it said 'give --zero-framework fsdp'); the CLI's note keeps
    the flag."""
    from trace_events import summaries

    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    job = zero_trace(2, 4, no_sync=True)
    said = "if the job accumulated unsharded gradients (FSDP no_sync, a framework of its own), give"
    notes = _traced_notes(job, dg_tr_strategy="zero2", dg_tr_zero_framework="deepspeed")
    assert "but DeepSpeed stage 2 reduces its gradients in every micro-step" in notes
    assert f'{said} "ZeRO framework" fsdp' in notes
    assert _bare_flags(notes) == []
    cli = diagnose_request(DiagnoseOptions(strategy="zero2", zero_framework="deepspeed"),
                           traces=summaries(tmp_path, job), trace_source="r*.json")
    assert f"{said} --zero-framework fsdp" in " ".join(cli.notes)


@pytest.mark.parametrize("strategy", ["ddp", "zero1"])
def test_the_no_size_notes_advice_is_one_the_cli_takes_with_a_given_strategy(tmp_path, strategy):
    """The note of all-reduces of no size told a job given as DDP or ZeRO-1 to give the
    gradient sync, which diagnose refuses for them ('--grad-sync is for a job that sharded its
    gradients'); it now says to drop the strategy (the traces then read it) or trace the sizes,
    and that advice runs."""
    from trace_events import summaries

    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
    from scalesim.errors import ScalesimError

    traces = summaries(tmp_path, ddp_job(sized=False))
    notes = " ".join(diagnose_request(DiagnoseOptions(strategy=strategy), traces=traces,
                                      trace_source="r*.json").notes)
    assert ("If the job reduced its gradients once a step (no_sync), drop --strategy "
            f"{strategy} and give --grad-sync once-per-step, or trace with record_shapes=True"
            in notes)
    with pytest.raises(ScalesimError, match="--grad-sync is for a job that sharded"):
        diagnose_request(DiagnoseOptions(strategy=strategy, grad_sync="once-per-step"),
                         traces=traces, trace_source="r*.json")
    taken = diagnose_request(DiagnoseOptions(grad_sync="once-per-step"), traces=traces,
                             trace_source="r*.json")
    assert any("once-per-step is used, overriding what the traces show" in n for n in taken.notes)


SHARDED = '"How the job sharded"'  # as a line names the control


@pytest.mark.parametrize(("events", "said"), [
    (lambda: zero_trace(2, 4, no_sync=True), []),
    (lambda: ddp_gathering(sized=False), [
        "a DDP job that all-gathers a metric once every two reductions or more often reads "
        "alike; give {strategy} ddp for one"]),
])
def test_the_sharded_reading_of_unnamed_collectives_names_the_pages_controls(tmp_path, events,
                                                                             said):
    """Traces whose collectives name no group, read as sharded: the note's way to say
    otherwise names the page's controls (it said 'give --strategy (--shard-group for hybrid
    sharding)'; without sizes, 'give --strategy ddp for one'); the CLI's note keeps the
    flags."""
    from test_trace_metric_collectives import diagnosed

    said = ["served: for such a job, or to say otherwise, give {strategy} ({shard_group} for "
            "hybrid sharding)", *said]
    notes = _traced_notes(events())
    for line in said:
        assert line.format(strategy=SHARDED, shard_group='"Shard group"') in notes
    assert _bare_flags(notes) == []
    cli = " ".join(diagnosed(tmp_path, events()).notes)
    for line in said:
        assert line.format(strategy="--strategy", shard_group="--shard-group") in cli


def test_the_sharded_reading_of_a_shard_group_names_the_pages_controls(tmp_path):
    """An 8-rank FSDP job sharding over groups of 4 with no all-reduce across them traced: the
    note's ways to say otherwise name the page's controls (it said 'give --strategy
    (--shard-group for hybrid sharding)', 'give --shard-group 4', 'give --strategy ddp for
    one'); the CLI's note keeps the flags."""
    from test_process_groups import _hsdp_summaries, _hsdp_trace

    from scalesim.trace_collectives import traced_exchange

    said = ["To say otherwise, give {strategy} ({shard_group} for hybrid sharding). Its sharding "
            "collectives ran in groups of 4 of the 8 data-parallel ranks (mesh_dp_shard)",
            "read as full sharding; if it sharded hybrid, give {shard_group} 4",
            "reads alike; give {strategy} ddp for one"]
    notes = _notes_of_traces([_hsdp_trace(r, replicate_group=False) for r in range(8)])
    for line in said:
        assert line.format(strategy=SHARDED, shard_group='"Shard group"') in notes
    assert _bare_flags(notes) == []
    _, cli = traced_exchange(_hsdp_summaries(tmp_path, replicate_group=False))
    for line in said:
        assert line.format(strategy="--strategy", shard_group="--shard-group") in cli


def test_the_note_of_a_split_job_whose_collectives_name_no_group_names_the_strategy_control(
        tmp_path):
    """A tp 2 x dp 2 job whose kernels name no group (an older torch): the exchange is read as
    DDP, and the note's way to say it sharded names the page's control (it said 'if it sharded,
    give --strategy'); the CLI's note keeps the flag."""
    from test_process_groups import _summaries, _trace

    from scalesim.trace_collectives import traced_exchange

    said = "the data-parallel exchange is read as DDP; if it sharded, give"
    notes = _notes_of_traces([_trace(r, named_kernels=False) for r in range(4)])
    assert "the traces' process groups split the model (tp 2 x dp 2: DATA_PARALLEL_GROUP" in notes
    assert f"{said} {SHARDED}" in notes
    assert _bare_flags(notes) == []
    _, cli = traced_exchange(_summaries(tmp_path, named_kernels=False))
    assert cli.endswith(f"{said} --strategy")


def test_the_note_of_gathers_too_small_for_the_parameters_names_the_strategy_control(tmp_path):
    """A 2-rank gloo job all-gathering 50,000 elements a rank against a 263,169-element
    all-reduce each step (100,000 / 263,169 = 0.38, under 0.5; over 2 traces of 4 steps, 800,000
    gathered for 2,105,352): read as DDP, and the note's way to say otherwise names the page's
    control (it said 'to say otherwise, give --strategy'); the CLI's note keeps the flag."""
    from test_trace_gather_sizes import summaries_of, trace

    from scalesim.trace_collectives import traced_exchange

    said = "no gather of the parameters (a metric or another tensor), read as DDP; to say " \
           "otherwise, give"
    notes = _notes_of_traces([trace(r, 50_000) for r in (0, 1)])
    assert "their sizes say 800,000 elements all-gathered for 2,105,352 all-reduced" in notes
    assert f"{said} {SHARDED}" in notes
    assert _bare_flags(notes) == []
    _, cli = traced_exchange(summaries_of(tmp_path, 50_000))
    assert cli.endswith(f"{said} --strategy")
