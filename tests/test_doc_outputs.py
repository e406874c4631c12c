"""The outputs and figures the docs quote are what the code prints today: each test reads the
doc's block or sentence and compares it with the command or function that makes it, so a model
change that moves a number fails here instead of leaving a false statement for a user to paste
and compare (README.md's first table and accuracy figures, docs/app.md's walk-through and link
messages, docs/bounds.md's example errors)."""

from __future__ import annotations

import json
import re
import shlex
import statistics
from pathlib import Path

import pytest
from cli_harness import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _flat(text: str) -> str:
    """``text`` with every run of white space (line breaks of the markdown) one space."""
    return " ".join(text.split())


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block of ``text``."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def _figure(pattern: str, text: str, group: int = 1) -> str:
    match = re.search(pattern, _flat(text))
    assert match, f"the doc no longer says {pattern!r}: update this test with it"
    return match.group(group)


# --- README.md: the first command and its table -------------------------------------------

def test_readme_first_table_is_what_its_command_prints(capsys):
    """The README's step 1 runs ``scalesim predict --devices 1,2,4,8,16`` and shows its table
    and knee line: they are the lines the command prints now, in that order."""
    blocks = _blocks(README)
    first_bash = next(body for lang, body in blocks if lang == "bash")
    command = re.search(r"scalesim (predict [^&\n]*)", first_bash).group(1).strip()
    block = next(body for lang, body in blocks if body.startswith("devices nodes"))
    code, out, err = run_cli(capsys, shlex.split(command))
    assert code == 0, err
    shown = block.rstrip("\n").splitlines()
    printed = out.splitlines()
    start = printed.index(shown[0])
    assert printed[start:start + len(shown)] == shown


def test_readme_prose_about_the_first_table_matches_it(capsys):
    """'one model on 1, 2, 4 and 8 GPUs in one server, then 16 across two servers', and the
    knee at 16 devices the app's story opens on."""
    from scalesim.predict import predict
    from scalesim.profiles import default_profile
    from scalesim.schemas import Scenario

    rows = predict(default_profile(), Scenario(devices=[1, 2, 4, 8, 16]))
    assert [(r.devices, r.nodes) for r in rows] == [(1, 1), (2, 1), (4, 1), (8, 1), (16, 2)]
    assert "then 16 across two servers" in _flat(README)
    assert "the knee at 16 devices" in _flat(README)


def test_readme_transformer_presets_are_the_ones_predict_splits(capsys):
    """Session 51: README listed "BERT-large shapes" among the presets that predict through the
    layout model, but ``--workload bert-large`` of predict (sweep, decide, goal, the app) is the
    data-parallel workload preset, a parameter count, whose split is refused. A name both
    tables hold is now said as not split there; a transformer preset of its own splits."""
    from scalesim.presets import TRANSFORMERS, WORKLOADS

    said = _figure(r"A workload with a transformer shape \((.*?); or a workload JSON", README)
    for name in sorted(set(TRANSFORMERS) & set(WORKLOADS)):
        assert f"not `{name}`" in said, name
        code, _, err = run_cli(capsys, ["predict", "--workload", name, "--devices", "8",
                                        "--tp", "2"])
        assert code == 2 and "is a parameter count only and cannot be split" in err
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                    "dgx-h100", "--devices", "8", "--tp", "2"])
    assert code == 0, err


# --- README.md: "How accurate is it?" ------------------------------------------------------

def _abs(errors) -> tuple[float, float, float]:
    a = [abs(e) for e in errors]
    return statistics.median(a), statistics.fmean(a), max(a)


@pytest.fixture(scope="module")
def shipped():
    from scalesim.shipped import validation_path
    from scalesim.validate import validate_file

    return validate_file(validation_path("cases.json"))


@pytest.fixture(scope="module")
def collected_dp():
    from scalesim.shipped import validation_path
    from scalesim.validate import load_cases, validate_cases

    cases = load_cases(validation_path("collected_dp_cases.json"))
    return cases, validate_cases(cases)


def _points(report, comm: str):
    return [(c, p) for c in report.cases if c.comm == comm for p in c.points if not p.anchor]


def test_readme_shipped_accuracy_is_the_validation(shipped):
    points = _points(shipped, "allreduce")
    median, mean, _ = _abs(p.error_pct for _, p in points)
    text = README
    assert int(_figure(r"\(the (\d+) shipped cases by default", text)) == len(shipped.cases)
    assert int(_figure(r"\*\*Published measurements\*\* \((\d+) cases", text)) == len(shipped.cases)
    from scalesim.cli import cmd_validate  # its --help example says the count too

    assert f"the {len(shipped.cases)} published data-parallel cases" in cmd_validate.EXAMPLE
    assert int(_figure(r"over the (\d+) predicted all-reduce points", text)) == len(points)
    assert _figure(r"median absolute throughput error is ([\d.]+)%", text) == f"{median:.1f}"
    assert _figure(r"median absolute throughput error is [\d.]+% and the mean ([\d.]+)%",
                   text) == f"{mean:.1f}"
    # the Horovod runs that all-reduce on the CPU through MPI (their ids say so)
    cpu = [p for c, p in points if c.id.endswith("_cpu_allreduce")]
    rest = [p.error_pct for c, p in points if not c.id.endswith("_cpu_allreduce")]
    assert int(_figure(r"without those (\d+) points", text)) == len(cpu)
    assert _figure(r"without those \d+ points ([\d.]+)%", text) == f"{_abs(rest)[1]:.1f}"
    single = statistics.median(p.error_pct for _, p in points if p.nodes == 1)
    assert _figure(r"single-server points are over-predicted, median \+(\d+)%",
                   text) == f"{single:.0f}"
    ps_points = _points(shipped, "parameter-server")
    ps, ps_mean, ps_max = _abs(p.error_pct for _, p in ps_points)
    assert _figure(r"parameter-server cases ([\d.]+)% median", text) == f"{ps:.1f}"
    # session 42: the median alone hid a mean of 93.8 % and a largest miss of 1813.5 %
    assert _figure(r"parameter-server cases [\d.]+% median \(target 15%\), but the mean ([\d.]+)%",
                   text) == f"{ps_mean:.1f}"
    assert _figure(r"and the largest ([\d.]+)%: the model expects", text) == f"{ps_max:.1f}"
    misses = [(c, p) for c, p in ps_points if p.predicted > 10 * p.published]
    assert int(_figure(r"the model expects (\d+) of their", text)) == len(misses)
    assert int(_figure(r"the model expects \d+ of their (\d+) points", text)) == len(ps_points)
    ratios = sorted(p.predicted / p.published for _, p in misses)
    assert _figure(r"(\d+) to \d+ times faster than published", text) == f"{ratios[0]:.0f}"
    assert _figure(r"\d+ to (\d+) times faster than published", text) == f"{ratios[-1]:.0f}"
    assert all("vgg16" in c.id and "_dist_tf" in c.id and p.devices == 16 for c, p in misses)


def test_readme_collected_data_parallel_accuracy_is_the_validation(collected_dp):
    cases, report = collected_dp
    precision = {c.id: c.workload.precision for c in cases}
    points = _points(report, "allreduce")
    median, mean, largest = _abs(p.error_pct for _, p in points)
    single = [(c, p) for c, p in points if p.nodes == 1]
    text = README
    assert int(_figure(r"collected_dp_cases\.json`: (\d+) cases", text)) == len(report.cases)
    assert int(_figure(r"over (\d+) predicted points the median absolute error is", text)) == len(
        points)
    assert _figure(r"over \d+ predicted points the median absolute error is ([\d.]+)%",
                   text) == f"{median:.1f}"
    assert _figure(r"error is [\d.]+%, the mean ([\d.]+)%, the largest", text) == f"{mean:.1f}"
    assert _figure(r"the mean [\d.]+%, the largest (\d+)%; \d+ of them", text) == f"{largest:.0f}"
    assert int(_figure(r"the largest \d+%; (\d+) of them are single-server", text)) == len(single)
    signed = statistics.median(p.error_pct for _, p in single)
    assert _figure(r"shipped file \(signed median \+([\d.]+)%\)", text) == f"{signed:.1f}"
    mixed = statistics.median(p.error_pct for c, p in single
                              if precision[c.id] == "fp16-mixed")
    assert _figure(r"mostly in mixed precision \(\+([\d.]+)%", text) == f"{mixed:.1f}"


def test_readme_collected_parameter_server_accuracy_is_the_validation():
    """Session 50: README's held-out parameter-server figures (13 cases, 39 points, median 5.8%,
    mean 7.0%, largest 18%, 33 single-server points of the TensorFlow 2017 page) were checked
    by no test: a model change could move them and leave the README behind."""
    from scalesim.shipped import validation_path
    from scalesim.validate import load_cases, validate_cases

    cases = load_cases(validation_path("collected_ps_cases.json"))
    report = validate_cases(cases)
    source = {c.id: c.source for c in cases}
    points = _points(report, "parameter-server")
    median, mean, largest = _abs(p.error_pct for _, p in points)
    paragraph = _figure(r"(collected_ps_cases\.json`: .*?single-server points of one page)", README)
    assert int(_figure(r"`: (\d+) cases", paragraph)) == len(report.cases)
    assert int(_figure(r"over (\d+) predicted points", paragraph)) == len(points)
    assert _figure(r"the median absolute error is ([\d.]+)%", paragraph) == f"{median:.1f}"
    assert _figure(r"the mean ([\d.]+)%", paragraph) == f"{mean:.1f}"
    assert _figure(r"the largest (\d+)%", paragraph) == f"{largest:.0f}"
    one_page = [p for c, p in points if p.nodes == 1
                and source[c.id].startswith("TensorFlow Performance 'Benchmarks' page")]
    assert int(_figure(r"(\d+) of the points are single-server", paragraph)) == len(one_page)

@pytest.mark.parametrize(("name", "before", "worst_words"), [
    ("parallel_cases.json", r"over the \d+ predicted runs the median absolute error is",
     ("70b", "a100_40gb")),
    ("collected_parallel_cases.json", r"so their figures on them now,", ("llama3_8b", "tp8", "fp8")),
])
def test_readme_model_parallel_accuracy_is_the_validation(name, before, worst_words):
    from scalesim.shipped import validation_path
    from scalesim.validate_parallel import validate_parallel_file

    report = validate_parallel_file(validation_path(name))
    predicted = [c for c in report.cases if not c.anchor]
    median, mean, largest = _abs(c.error_pct for c in predicted)
    worst = max(predicted, key=lambda c: abs(c.error_pct))
    assert all(word in worst.id for word in worst_words), worst.id
    figures = _figure(before + r" (?:median )?([\d.]+)%, (?:the )?mean ([\d.]+)%, (?:the largest|max) "
                      r"(\d+)%", README, 0)
    assert re.findall(r"[\d.]+%", figures)[-3:] == [f"{median:.1f}%", f"{mean:.1f}%",
                                                    f"{largest:.0f}%"]
    if name == "parallel_cases.json":
        assert int(_figure(r"`parallel_cases\.json`, (\d+) runs", README)) == len(report.cases)
        assert int(_figure(r"`--parallel`: the (\d+) shipped", README)) == len(report.cases)
        assert int(_figure(r"over the (\d+) predicted runs", README)) == len(predicted)
        assert _figure(r"the model expects (\d+)% faster", README) == f"{worst.error_pct:.0f}"
    else:
        assert int(_figure(r"collected_parallel_cases\.json`: (\d+) runs", README)) == len(
            report.cases)


# --- docs/app.md: the walk-through and the link messages ----------------------------------

APP = (ROOT / "docs" / "app.md").read_text()


def test_app_walk_through_quotes_the_default_plan():
    """'What this shows' and the decision card's question of the page as it opens."""
    from scalesim.app.plan import make_plan, story
    from scalesim.app.state import default_state, preset_profile

    state = default_state()
    plan = make_plan(preset_profile(state), state)
    shows = _figure(r"\(`plan\.story`\): here \"(.*?)\", and the card", APP)
    assert f"**What this shows:** {shows}." in story(plan)
    question = _figure(r"\(`scalesim\.decision\.decide`, docs/model\.md §20\): \"(.*?)\", the two",
                       APP)
    assert plan.decision.question == question
    network = _figure(r"named, priced hardware such as \"(.*?)\"", APP)
    assert any(network in o.title for o in plan.decision.options if o.key == "network")


def test_app_link_messages_are_the_states():
    from scalesim.app.state import LINK_VERSION, READ_VERSIONS, default_state, refusal

    newest = int(_figure(r"this scalesim reads v1 to v(\d+)\)", APP))
    shown = _figure(r"another link version \(`v=(\d+)`;", APP)
    assert newest == LINK_VERSION and READ_VERSIONS[-1] == str(LINK_VERSION)
    assert f"and so on to v{LINK_VERSION} (" in _flat((ROOT / "docs" / "model.md").read_text())
    assert shown not in READ_VERSIONS
    sentence = _figure(r"one plain sentence under its control \(\"(.*?)\"\)", APP)
    value = int(_figure(r"Per-device micro-batch: ([\d,]+) is above", sentence).replace(",", ""))
    assert refusal(default_state(), "mb", value) == sentence



def test_app_share_link_example_is_what_the_page_writes():
    """The share link the doc shows (the default page at a critical batch of 4,000 and $2.5 a
    device-hour) is ``share_query``'s, checksum and fingerprint included (it had lost its ``ck``
    and kept a fingerprint of older presets)."""
    from urllib.parse import urlencode

    from scalesim.app.state import default_state, encode_query, preset_profile, share_query

    shown = _figure(r"\(`state\.share_query`: `\?(.*?)`", APP)
    state = default_state().model_copy(update={"cbs": 4000.0, "price": 2.5})
    date = _figure(r"&at=(\d{4}-\d\d-\d\d)&", shown, 1)
    assert urlencode(share_query(encode_query(state, preset_profile(state)), date)) == shown


def test_app_sent_figure_example_is_the_pages_note():
    """The info box the doc quotes is the one the default page's link, sent with the headline
    the doc names (``hs=16_3814``, before session 48's straggler stretch), gets from this
    scalesim; and the page's own ``hs`` the doc shows is the default page's now (it quoted
    3,869 / +1.5 %, a figure no scalesim predicted, and ``hs=16_3814`` as the page's)."""
    from scalesim.app.plan import make_plan
    from scalesim.app.sent_figure import HEADLINE_KEY, SentFigure, changed_note, figure_text, parse_figure
    from scalesim.app.state import MAX_DEVICES, default_state, preset_profile

    state = default_state()
    plan = make_plan(preset_profile(state), state)
    page = figure_text(plan.focus.devices, plan.focus.samples_per_s, plan.focus.fits)
    assert f"`{HEADLINE_KEY}={page}` on the default page" in _flat(APP)
    sent = _figure(r"straggler stretch, `hs=(\d+_\d+)`, opened now\)", APP)
    figure = parse_figure(sent, MAX_DEVICES)
    assert isinstance(figure, SentFigure) and figure.devices == plan.focus.devices
    note = changed_note(figure, (plan.focus.samples_per_s, plan.focus.fits), plan.unit,
                        plan.words)
    quoted = _figure(r"opened now\): \"(Sent as .*?): the model changed", APP)
    assert note.startswith(quoted + ": the model changed")


def test_app_goal_no_fit_note_is_the_goal_tabs():
    """The Goal tab's note where nothing fits, as the doc quotes it: ``goal.no_fit_note`` with
    the app's controls for Llama 3 8B on the default A100 40 GB servers (it names recompute
    since session 42; the doc still quoted the split alone)."""
    from scalesim.app.layout_titles import page_title
    from scalesim.app.planner_page import goal_controls

    from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES
    from scalesim.device_nouns import nouns_for
    from scalesim.goal import no_fit_note
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    quoted = _figure(r"where nothing fits, \"(goal keeps .*?)\" \(`goal\.no_fit_note`", APP)
    profile = resolve_profile(None, "a2-highgpu-8g", "llama3-8b")
    note = no_fit_note(profile, Scenario(train_samples=1e9, price_per_device_hour=3.0),
                       GOAL_DEFAULT_MAX_DEVICES, goal_controls(nouns_for(profile.hardware.device_name)))
    # the kept layout as the tab says it, in the sidebar's labels (``_tab_goal``, session 50)
    assert page_title(note, nouns_for(profile.hardware.device_name)) == quoted


def test_diagnose_split_threshold_is_the_remedies():
    """docs/diagnose.md's share of the step from which 'split the model' is offered is the one
    ``remedies`` uses, ε/(1+ε) at the transformer model's median error (it said 2.7 %)."""
    from scalesim.remedies import DP_EXCHANGE_SHARE

    text = (ROOT / "docs" / "diagnose.md").read_text()
    shown = float(_figure(r"offered where the exchange is ([\d.]+) % of the step or more", text))
    assert shown == round(100 * DP_EXCHANGE_SHARE, 2)

# --- docs/bounds.md: the example errors ---------------------------------------------------

def test_bounds_examples_are_what_the_cli_says(capsys):
    block = next(body for _, body in _blocks((ROOT / "docs" / "bounds.md").read_text())
                 if body.startswith("$ scalesim ")).splitlines()
    pairs = [(block[i], block[i + 1]) for i in range(0, len(block), 2)]
    assert len(pairs) >= 2
    for command, said in pairs:
        code, out, err = run_cli(capsys, shlex.split(command.removeprefix("$ scalesim ")))
        assert code == 2 and out == "" and err.strip() == said, (command, err)


def test_bounds_threads_default_is_calibrates_rule(monkeypatch):
    """Session 50: docs/bounds.md said --threads defaults to 'the cores divided by the processes
    per node', the rule before the load average took its cores (default_threads): on a 2-core
    host at load 1.2 one process times 1 thread, not 2. The page now says the help's words."""
    from scalesim.calibration import options
    from scalesim.calibration.options import build_parser, default_threads

    rule = _figure(r"Calibration's `--threads` defaults to `OMP_NUM_THREADS` when it is set "
                   r"\(by the user or torchrun\), else to (cores / processes per node, less the "
                   r"cores the load average keeps busy)", (ROOT / "docs" / "bounds.md").read_text())
    threads = next(a for a in build_parser()._actions if "--threads" in a.option_strings)
    assert rule in _flat(threads.help)
    monkeypatch.setattr(options, "_cores", lambda: 2)
    assert default_threads(1, {}, load=1.2) == 1  # 2 cores, one kept busy: 1 thread
    assert default_threads(1, {}, load=0.4) == 2  # idle: 2 cores / 1 process

def test_readme_python_examples_run_as_written(capsys):
    """The README's Python API blocks, one after another in one namespace (the third uses the
    first's imports), run and print their lists: a renamed function or field breaks this."""
    namespace: dict = {}
    blocks = [body for lang, body in _blocks(README) if lang == "python"]
    assert len(blocks) >= 3
    for body in blocks:
        exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102 - the doc's own code
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(blocks) and all(line.startswith("[(") for line in printed)


# --- docs/model.md: worked examples a reader reruns -----------------------------------------

MODEL = (ROOT / "docs" / "model.md").read_text()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f}"


def test_model_no_sync_example_is_predict():
    """§4: on the seed scenario (16 A100s, k = 8) no_sync takes ZeRO-2's and ZeRO-3's steps
    from ... to ... ms, at +... and +... GiB per device (ZeRO-2 trades its fp32 gradient shard
    for whole bf16 gradients, and so, since session 46, does ZeRO-3)."""
    from scalesim.predict import predict
    from scalesim.profiles import default_profile
    from scalesim.schemas import Scenario

    said = re.search(r"`no_sync` takes ZeRO-2's step from ([\d,]+) to ([\d,]+) ms and ZeRO-3's "
                     r"from ([\d,]+) to ([\d,]+) ms, at \+([\d.]+) and \+([\d.]+) GiB per", _flat(MODEL))
    assert said, "docs/model.md §4 no longer quotes the no_sync example: update this test"
    shown, extra = [], []
    for strategy in ("zero2", "zero3"):
        rows = [predict(default_profile(), Scenario(devices=[16], strategy=strategy,
                                                    accumulation=8, grad_sync=sync))[0]
                for sync in ("every-micro-step", "once-per-step")]
        shown += [_ms(r.step_time_s) for r in rows]
        extra.append(f"{(rows[1].memory_bytes - rows[0].memory_bytes) / 2**30:.2f}")
    assert list(said.groups()[:4]) == shown and extra == list(said.groups()[4:])


def test_model_remedy_examples_are_the_remedies():
    """§10: the Hopper attention kernel and the tensor-parallel overlap remedies on Llama 3 8B
    on 8 H100s, one sequence each: step before -> after and the gain; §14 the tensor-parallel
    time the overlap hides; §13 flash2's compute and step."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.remedies import rank_remedies
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    flat = _flat(MODEL)

    def remedy(scenario, key):
        now, ranked = rank_remedies(profile, scenario, 8)
        r = next(x for x in ranked if x.key == key)
        return now, r

    now, r = remedy(Scenario(devices=[8], micro_batch=1, strategy="zero3",
                             attention_kernel="flash2"), "attention_kernel")
    assert (f"one sequence each: {_ms(now.step_time_s)} → {_ms(r.prediction.step_time_s)} ms, "
            f"{100 * r.gain:+.1f} %") in flat
    tp8 = Scenario(devices=[8], micro_batch=1, layout=ScenarioLayout(tp=8, sequence_parallel=True))
    now, r = remedy(tp8, "tp_overlap")
    assert (f"one sequence each: {now.step_time_s * 1e3:.1f} → "
            f"{r.prediction.step_time_s * 1e3:.1f} ms, {100 * r.gain:+.0f} %") in flat
    on = predict(profile, tp8.model_copy(update={"layout": tp8.layout.model_copy(
        update={"tp_overlap": True})}))[0]
    assert (f"step {now.step_time_s * 1e3:.1f} → {on.step_time_s * 1e3:.1f} ms, the exposed "
            f"tensor-parallel time {now.tp_comm_s * 1e3:.1f} → {on.tp_comm_s * 1e3:.1f} ms") in flat
    rows = [predict(profile, Scenario(devices=[8], micro_batch=1, attention_kernel=k))[0]
            for k in ("fused-vendor", "flash2")]
    assert (f"({_ms(rows[0].compute_s)} → {_ms(rows[1].compute_s)} ms; the step "
            f"{_ms(rows[0].step_time_s)} → {_ms(rows[1].step_time_s)} ms") in flat
    assert (f"{rows[0].samples_per_s:.1f} → {rows[1].samples_per_s:.1f} sequences/s") in flat


def test_model_loader_and_sharding_examples_are_predict():
    """§5: 8 devices sharing 48 cores' loaders against one device alone; §22: the ZeRO-1
    sharding remedy at 8 A100s of the seed scenario on the layout and data-parallel paths."""
    from test_zero_two_paths import _paths

    from scalesim.predict import predict
    from scalesim.profiles import default_profile
    from scalesim.remedies import rank_remedies
    from scalesim.schemas import LoaderCurve, LoaderPoint, Scenario

    flat = _flat(MODEL)
    curve = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=70.0),
                                LoaderPoint(workers=32, samples_per_s=2240.0)])
    profile = default_profile().model_copy(update={"input_pipeline": curve})
    one, eight = predict(profile, Scenario(devices=[1, 8], loader_workers=32, straggler_cv=0.0,
                                           device_speed_cv=0.0))
    assert (f"a {eight.step_time_s * 1e3:.1f} ms step, against one device's "
            f"{one.step_time_s * 1e3:.2f} ms compute-bound step: {100 * eight.efficiency:.1f} %"
            ) in flat
    gains = []
    for framework in ("fsdp", "deepspeed"):
        for p in _paths():
            _, ranked = rank_remedies(p, Scenario(devices=[8], zero_framework=framework), 8)
            gains.append(f"{100 * next(r for r in ranked if r.key == 'sharding').gain:+.1f} %")
    said = re.search(r"seed scenario: (\S+ %) / (\S+ %) with Megatron-Core's, (\S+ %) / (\S+ %) "
                     r"with DeepSpeed's", flat)
    assert said and [g.replace("\u2212", "-") for g in said.groups()] == gains


def test_model_collective_hand_checks_are_the_collectives():
    """§2, §14, §16: the NVLS / ring / tree hand-checks on H100 servers (370 GB/s ring busbw,
    480 GB/s NVLS, 2 us per hop; 192 GB/s of NICs, 6 us), as the doc prints them (the §16 ring
    figure had been truncated, 15.65 for 15.655 ms)."""
    from scalesim.model import collectives as coll

    flat = _flat(MODEL)
    h100 = (2e-6, 370.0, 6e-6, 192.0)

    def ms(size, nodes, algorithm=coll.AUTO):
        return 1e3 * float(coll.allreduce_s(size, 8, nodes, *h100, algorithm=algorithm,
                                            nvls_busbw_GBps=480.0))

    assert (f"= {ms(1e9, 1):.3f} ms` (ring: {ms(1e9, 1, coll.RING):.3f} ms)") in flat
    assert (f"= {ms(1e9, 2):.3f} ms` (tree: {ms(1e9, 2, coll.TREE):.3f} ms)") in flat
    tp_bytes = 1 * 4096 * 4096 * 2  # b·s·h·2 of one 4,096-token Llama 3 8B sequence
    assert (f"= {1e3 * ms(tp_bytes, 1):.0f} µs against the ring's "
            f"{1e3 * ms(tp_bytes, 1, coll.RING):.0f} µs") in flat
    gradient = 1.652e9 * 2  # GPT 1.7B's 16-bit gradient in one bucket
    assert (f"= {ms(gradient, 1):.2f} ms against the ring's "
            f"{ms(gradient, 1, coll.RING):.2f} ms") in flat


def test_model_fp8_remedy_example_is_the_remedy():
    """§10: the fp8 remedy on Llama 3 8B with ZeRO-3 on 8 H100s, one sequence each."""
    from scalesim.profiles import resolve_profile
    from scalesim.remedies import rank_remedies
    from scalesim.schemas import Scenario

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    now, ranked = rank_remedies(profile, Scenario(devices=[8], micro_batch=1, strategy="zero3"), 8)
    r = next(x for x in ranked if x.key == "fp8")
    assert (f"one sequence each: {_ms(now.step_time_s)} → {_ms(r.prediction.step_time_s)} ms, "
            f"{100 * r.gain:+.1f} %") in _flat(MODEL)


def test_model_fp8_step_example_is_predict():
    """§13: fp8's weight matmuls on Llama 3 8B with DDP on 8 H100s, one sequence each: the
    step in 16 bits and in fp8, and their ratio (it said 886 → 670 ms, session 45's figures
    before session 46's optimizer sweep)."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    bf16, fp8 = (predict(profile, Scenario(devices=[8], micro_batch=1, precision=p))[0]
                 for p in ("bf16", "fp8"))
    assert (f"with DDP on 8 H100s, one sequence each, {_ms(bf16.step_time_s)} → "
            f"{_ms(fp8.step_time_s)} ms a step ({bf16.step_time_s / fp8.step_time_s:.2f}×;"
            ) in _flat(MODEL)


def test_fixed_fetch_examples_are_the_runs_diagnosis(capsys, monkeypatch, tmp_path):
    """docs/diagnose.md and model.md §1: ``diagnose_cases.inter_server`` (1-32 devices) with a
    3 ms fetch in every run: the refit's own step at 32 devices, taking the fetch off it, and
    that gain held to removing the measured wait (+1.29 % / 228.4 ms before session 48's
    straggler stretch)."""
    import diagnose_cases as cases

    from scalesim import runs_diagnosis
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    profile = cases._profile("a2-highgpu-8g", "bert-large")
    rows = [dict(r, step_time_s=r["step_time_s"] + 0.003, data_wait_s=0.003)
            for r in cases._rows(profile, Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32))]
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv(rows))
    refits = []
    priced = runs_diagnosis.fixed_fetch_remedy

    def kept(prof, scn, *args, **kwargs):  # the refit's profile: the first priced is the fit's own
        refits.append(predict(prof, scn)[-1])
        return priced(prof, scn, *args, **kwargs)

    monkeypatch.setattr(runs_diagnosis, "fixed_fetch_remedy", kept)
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--json"])
    assert code == 0, err
    loader = next(r for r in json.loads(out)["remedies"] if r["key"] == "loader")
    refit = refits[0]
    assert refit.devices == 32
    held = f"+{100 * loader['other_gain']:.2f} %"
    assert held == f"+{100 * 0.003 / (rows[-1]['step_time_s'] - 0.003):.2f} %"
    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    assert (f"off the refit's {refit.step_time_s * 1e3:.1f} ms step of 32 devices below (72 % "
            f"exposed exchange) saves the 3 ms alone, +{100 * 0.003 / (refit.step_time_s - 0.003):.2f} "
            f"%, held to removing the measured wait, {held}") in text
    assert f"saves the 3 ms alone, {held.replace(' ', ' ')} of the measured step" in _flat(MODEL)


def test_model_decide_layout_change_examples_are_the_card():
    """§20: Llama 3 8B under ZeRO-3 with full recompute on 16 H100 at micro-batch 2: the
    planner's layout at today's count and with a server more, as the card prices them; and the
    seed scenario's note naming the layout change past the card's three rows at 32 A100s."""
    from scalesim.decision import decide
    from scalesim.profiles import default_profile, resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    flat = _flat(MODEL)
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    card = decide(profile, Scenario(devices=[16], micro_batch=2, strategy="zero3",
                                    layout=ScenarioLayout(recompute="full")), 16)
    gain = {o.key: f"{100 * o.throughput_gain:+.1f} %" for o in card.options}
    assert (f"at micro-batch 2 gains {gain['split_model']} from that change alone, "
            f"{gain['add_server']} with a server more in the same layout") in flat
    seed = decide(default_profile(), Scenario(devices=[32]), 32)
    (note,) = [n for n in seed.notes if n.startswith("also faster than today, not shown")]
    said = re.search(r"\"(also faster than today, not shown \(the card shows the best 3\): "
                     r"Change the layout: ddp -> zero1 \(\+[\d.]+% throughput\))\"", flat)
    assert said and said.group(1) == note


def test_diagnose_partial_servers_example_is_the_network_remedy():
    """docs/diagnose.md: BERT-large on 1 GPU of each of 1-8 servers of 25 Gb/s Ethernet (the
    runs of tests/test_diagnose_partial_servers.py): HDR's gain with the whole server's NICs
    given to each GPU and with --gpus-per-node 8 (+1,102 / +492.5 % before session 48)."""
    from test_diagnose_partial_servers import _network, _report

    whole, share = (_network(r).gain for r in (_report(), _report(gpus_per_node=8)))
    assert (f"HDR gave {100 * whole:+,.0f} % (192 GB/s to each GPU), {100 * share:+.1f} % with "
            f"`--gpus-per-node 8` (24 GB/s)") in _flat((ROOT / "docs" / "diagnose.md").read_text())


def test_diagnose_gain_band_examples_are_the_diagnosis():
    """docs/diagnose.md "Each remedy's 95 % band": the seed's communication-growth runs (with
    --params) and the large-batch runs (tests/test_diagnose_gain_bands.py): the faster link's
    gain and band, halving the batch's gain and band (it said +58.1 % [+55.9, +59.8] and
    +18 % to +80 %, figures of an earlier model)."""
    import diagnose_cases as cases

    from scalesim.runs import parse_runs_text
    from scalesim.runs_diagnosis import diagnose_runs

    report = diagnose_runs(parse_runs_text(cases.to_csv(cases.comm_growth()), "runs.csv"), 25.6e6)
    link = next(r for r in report.remedies if r.key == "interconnect")
    smaller = cases.diagnosis("large_batch").first_remedy
    assert smaller.key == "smaller_batch"
    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    assert (f"the faster intra-server link gains {100 * link.gain:+.1f} % "
            f"[{100 * link.gain_low:+.1f}, {100 * link.gain_high:+.1f}]") in text
    assert (f"halving the batch gains {100 * smaller.objective_gain:+.0f} % (95%: "
            f"{100 * smaller.gain_low:+.0f} % to {100 * smaller.gain_high:+.0f} %)") in text


def test_diagnose_blocking_sends_example_is_the_split_remedy(capsys, tmp_path):
    """docs/diagnose.md: GPT 1.7B runs on 8-32 A100 PCIe 80GB (tests/test_knob_surfaces.py's
    runs); the split remedy with the interleaved sends blocking (zero bubble) and overlapped."""
    import diagnose_cases as cases

    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    profile = resolve_profile(None, "pcie-8gpu-100gbe", "gpt-1.7b")
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv(cases._rows(profile, Scenario(devices=[8, 16, 32],
                                                                micro_batch=1))))
    gains = []
    for extra in (["--p2p-overlap", "off"], []):
        code, out, err = run_cli(capsys, ["diagnose", str(path), "--workload", "gpt-1.7b",
                                          "--gpu", "A100 PCIe 80GB", *extra, "--json"])
        assert code == 0, err
        split = next(r for r in json.loads(out)["remedies"] if r["key"] == "split_model")
        gains.append(f"{100 * split['gain']:+.1f} %")
    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    assert (f"ZeRO-1, {gains[0]}, instead of the interleaved ZeRO-2 one ({gains[1]} with the "
            f"sends overlapped") in text


def test_model_two_paths_exchange_bound_example_is_predict():
    """§22: GPT 7.5B on a2-highgpu-8g (100 Gb/s Ethernet), 1-64 devices: the step on the layout
    path against the parameter-count path, and the share of the step exposed at 16 and 64."""
    from test_layout_integration import _without_shape

    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    big = resolve_profile(None, "a2-highgpu-8g", "gpt-7.5b")
    said = []
    for micro, acc in ((1, 1), (4, 8)):
        s = Scenario(devices=[1, 2, 4, 8, 16, 32, 64], micro_batch=micro, accumulation=acc)
        a, b = predict(big, s), predict(_without_shape(big), s)
        gap = max(abs(x.step_time_s / y.step_time_s - 1) for x, y in zip(a, b, strict=True))
        said.append(f"{100 * gap:.2f}")
        if micro == 1:
            share = {x.devices: f"{100 * x.exposed_comm_s / x.step_time_s:.0f}" for x in a}
    assert (f"1–64 devices, within {said[0]} % at micro-batch 1 (exchange-bound: {share[16]} % of "
            f"the step exposed at 16 devices, {share[64]} % at 64") in _flat(MODEL)
    assert f"and {said[1]} % at micro-batch 4 × 8" in _flat(MODEL)


def test_diagnose_slow_device_link_valley_examples_are_the_diagnosis():
    """docs/diagnose.md "the jitter cv" and "A link the runs cannot tell": bert-large at 8
    sequences on 1-8 A100s, rank 0 1.4x slower (tests/test_runs_link_valley.py's runs): fixing
    the device's gain and band with --workload, --params and neither, and the valley caution
    quoted (session 47's bands [+7.4, +22.1 %] / [+7.5, +27.4 %] before its link scan were
    said as current)."""
    import diagnose_cases as cases

    from scalesim import presets
    from scalesim.profiles import profile_from_presets
    from scalesim.runs import parse_runs_text
    from scalesim.runs_diagnosis import diagnose_runs
    from scalesim.runs_model import runs_model

    bert = profile_from_presets(presets.get_hardware("dgx-a100"),
                                presets.transformer_workload("bert-large"))
    runs = parse_runs_text(cases.to_csv(cases.slow_device(bert, 8)), "runs.csv")
    shaped = runs_model("bert-large", "A100 80GB")
    first = {name: diagnose_runs(runs, params, 4.0, transformer=transformer).first_remedy
             for name, params, transformer in (("workload", None, shaped),
                                               ("params", shaped.params, None),
                                               ("none", None, None))}
    assert {r.key for r in first.values()} == {"slow_device"}

    def band(r):
        return f"[{100 * r.gain_low:+.1f}, {100 * r.gain_high:+.1f} %]"

    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    assert (f"{100 * first['params'].gain:+.1f} % with `--params`, "
            f"{100 * first['none'].gain:+.1f} % without") in text
    assert (f"since its link scan below, the same fit and gains with bands "
            f"{band(first['params'])} and {band(first['none'])}") in text
    assert (f"now carries it to {100 * first['workload'].gain_high:+.1f} % "
            f"({band(first['workload'])}, and {band(first['none'])} without `--params`)") in text
    said = _figure(r"\"(these runs do not tell the link: a gradient transfer inside a server "
                   r"from .*? shows it)\"", text)
    assert said == first["workload"].caveat


def test_diagnose_trace_fixture_examples_are_the_diagnosis():
    """docs/diagnose.md on the recorded traces (tests/fixtures/traces/): rank 0's median step of
    ``cpu_ddp`` and its parts; "Which events are the exchange's time": each fixture's modelled
    exchange, exposure, step and remedy (the overlap remedy's +30.6 % and the slow process's
    +107.0 % were read on the model before session 48's straggler stretch)."""
    from trace_events import diagnosed_model

    from scalesim import trace_ranks
    from scalesim.predict import predict

    traces = ROOT / "tests" / "fixtures" / "traces"
    model, ranks = {}, {}
    for name in ("cpu_ddp", "slow_device", "slow_loader"):
        paths = [str(traces / f"{name}_rank{r}.json.gz") for r in (0, 1)]
        ranks[name] = trace_ranks.load_traces(paths)
        report, profile, scenario = diagnosed_model(ranks[name])
        model[name] = (report, predict(profile, scenario)[0],
                       {r.key: f"{100 * r.gain:+.1f} %" for r in report.remedies})
    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    row = ranks["cpu_ddp"][0].median_step()  # the table's rank 0 row
    assert (f"(now step {row.step_s * 1e3:.2f} = {row.compute_s * 1e3:.2f} compute + "
            f"{row.exposed_comm_s * 1e3:.2f} exposed + {row.idle_s * 1e3:.2f} idle)") in text
    _, slow, gain = model["slow_device"]
    assert (f"exchange 135.5 → {slow.comm_total_s * 1e3:.1f} ms") in text
    assert (f"its model's exposure 33.9 → {slow.exposed_comm_s * 1e3:.2f} ms for the traced "
            f"26.6 ms") in text
    assert f"its step 348.6 → {slow.step_time_s * 1e3:.1f} ms" in text
    assert f"\"Fix the slow process\" +83.5 → {gain['slow_device']} (at most" in text
    assert f"(now those alone, \"Which events are the exchange's time\" above: " \
           f"{slow.exposed_comm_s * 1e3:.2f} ms)" in text
    _, ddp, gain = model["cpu_ddp"]
    assert (f"`cpu_ddp` 13.66 → {ddp.comm_total_s * 1e3:.2f} ms (its posting ops take 0.1 ms a "
            f"step), the overlap remedy +30.7 → {gain['overlap']}") in text
    _, loader, gain = model["slow_loader"]
    assert (f"`slow_loader` 24.5 → {loader.comm_total_s * 1e3:.1f} ms, its model's exposure "
            f"7.4 → {loader.exposed_comm_s * 1e3:.1f} ms, the loader remedy +187.9 → "
            f"{gain['loader']}") in text


def test_h200_results_readme_and_memory_are_the_predictions(tmp_path):
    """benchmarks/results/h200-2026-11-30/README.md's mean |error| of each recorded profile over
    the four measured steps (``gpu_compare``, as that README's command prints it; the datasheet's
    12.8 % was at the default efficiency 0.69, before 081428b6 made it 0.73), and
    docs/calibration.md's predicted peak memory of those steps beside the measured."""
    import importlib.util

    import numpy as np

    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    results = ROOT / "benchmarks" / "results" / "h200-2026-11-30"
    spec = importlib.util.spec_from_file_location("gpu_compare",
                                                  ROOT / "benchmarks" / "gpu_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    steps = json.loads((results / "gpu-check" / "steps.json").read_text())["steps"]
    check = str(results / "gpu-check" / "gpu-profile.json")

    def mean(path: str, datasheet: bool = False) -> str:
        errors = [abs(compare.predicted_step_s(path, r, str(tmp_path), datasheet)
                      / r["step_s_median"] - 1) for r in steps]
        return f"{100 * np.mean(errors):.1f} %"

    sweep = [mean(str(results / "block-sweep" / f"profile-block-{b}.json"))
             for b in ("b2", "b8", "b32")]
    said = _flat((results / "README.md").read_text())
    assert (f"datasheet at the default efficiency {mean(check, datasheet=True)} (12.8 % when "
            f"recorded, at η 0.69 before 081428b6); `gpu-check` {mean(check)}; `first-run` "
            f"{mean(str(results / 'first-run' / 'gpu-profile.json'))} ") in said
    assert (f"block sweep {sweep[0]} (4,096 tokens), {sweep[1]} (16,384), {sweep[2]} "
            f"(65,536)") in said

    measured, predicted = [], []
    for row in steps:  # the workload as gpu_compare writes it, the step's peak as predict's
        workload = tmp_path / f"{row['name']}.json"
        compare.predicted_step_s(check, row, str(tmp_path))
        profile = resolve_profile(check, None, str(workload))
        result = predict(profile, Scenario(devices=[1], micro_batch=row["micro_batch"],
                                           layout=ScenarioLayout(tp=1, pp=1,
                                                                 recompute="none")))[0]
        measured.append(row["peak_memory_bytes"] / 2**30)
        predicted.append(result.memory_bytes / 2**30)
    errors = ", ".join(f"{100 * (p / m - 1):+.0f}".replace("-", "\u2212")
                       for m, p in zip(measured, predicted, strict=True))
    gib = [", ".join(f"{x:.1f}" for x in v[:3]) + f" and {v[3]:.1f}" for v in (measured, predicted)]
    assert (f"peak allocated memory was {gib[0]} GiB against a predicted {gib[1]} GiB "
            f"({errors} %)") in _flat((ROOT / "docs" / "calibration.md").read_text())


def test_diagnose_held_link_walk_and_ratio_examples_are_the_diagnosis(capsys, tmp_path):
    """docs/diagnose.md, three examples the part-3 audit found current, now read from the code:
    the pinned link ratio of 8 PCIe GPUs over 100 Gb/s Ethernet (tests/test_diagnose_link_ratio.py),
    the loader-paced runs' held inter-server transfer (tests/test_diagnose_held_parameter.py)
    and the walk's part the runs cannot separate (tests/test_diagnose_unseparated.py)."""
    import diagnose_cases as cases
    from test_diagnose_held_parameter import _runs
    from test_diagnose_unseparated import FLAGS, WALK_RUNS

    from scalesim.diagnosis_text import render_text
    from scalesim.runs import runs_from_records
    from scalesim.runs_diagnosis import diagnose_runs
    from scalesim.schemas import Scenario

    text = _flat((ROOT / "docs" / "diagnose.md").read_text())
    pcie = cases._profile("pcie-8gpu-100gbe", "bert-large")
    rows = cases._rows(pcie, Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=8))
    ratio = re.search(r"([\d.]+x slower than intra-server \(95%: [\d.]+-[\d.]+x)",
                      render_text(diagnose_runs(runs_from_records(rows, "runs")))).group(1)
    links = pcie.hardware.intra_node.busbw_GBps / pcie.hardware.inter_node.busbw_GBps
    assert (f"(\"{ratio} ...)\": 8 PCIe GPUs and 100 Gb/s Ethernet, where the preset's links "
            f"give {links:.1f}x)") in text

    report = diagnose_runs(_runs(0.03), 336e6)
    held = re.search(r"\(held at its start value, ([\d.]+ ms)\): anything up to ([\d.]+ ms) fits "
                     r"the runs, .*?, (\d+)% / (\d+)% with it near 0, (\d+)% / (\d+)% at",
                     report.cause.evidence[0]).groups()
    loader = next(r for r in report.remedies if r.key == "loader")
    assert f"held at {held[0]}, it made the cause" in text
    assert (f"Anything up to {held[1]} fits them; near 0 communication loses {held[2]} % and the "
            f"input pipeline {held[3]} %, at {held[1]} {held[4]} % and {held[5]} %") in text
    assert (f"the loader {100 * loader.objective_gain:+.0f} % (95%: {100 * loader.gain_low:+.0f} % "
            f"to {100 * loader.gain_high:+.0f} %;") in text

    path = tmp_path / "runs.csv"
    path.write_text(WALK_RUNS)
    code, out, err = run_cli(capsys, ["diagnose", str(path), *FLAGS, "--json"])
    assert code == 0, err
    (said,) = [u["said"] for u in json.loads(out)["details"]["unseparated"]]
    head, tail = re.search(r"On the walk's runs: \"(.*?) \.\.\.\); \.\.\. (or timing .*?apart)\"",
                           text).groups()
    assert said.startswith(head) and said.endswith(tail), said
