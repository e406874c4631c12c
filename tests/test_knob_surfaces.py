"""The layout knobs on every surface that takes a layout (session 41): ``--p2p-overlap`` (one
row of ``bounds.LAYOUT_KNOBS``, docs/model.md §15 "Interleaved sends overlap compute") as a
sweep axis, ``--p2p-overlap-values on,off``, whose rows are predict's, and on diagnose (and its
app page) for the split-the-model remedy's layouts, which the planner then ranks with blocking
sends; refused in one line where it cannot change a number."""

from __future__ import annotations

from pathlib import Path

import diagnose_cases as cases
import pytest
from cli_harness import kept_diagnoses, run_cli

from scalesim.errors import ScalesimError
from scalesim.layout import P2P_OVERLAP_NEEDS_INTERLEAVED, knob_refusal
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.remedies import best_split
from scalesim.schemas import Profile, Scenario, ScenarioLayout
from scalesim.sweep import sweep

# Llama 3 8B on 4 GPUs of a DGX H100, one sequence a micro-batch, 8 micro-batches a step, two
# virtual stages where the rows pipeline (tests/test_p2p_overlap_knob.py's scenario)
WORKLOAD = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]


def test_the_send_overlap_is_a_sweep_axis_with_the_rows_predict_gives():
    """``--pp-values 1,4 --p2p-overlap-values on,off``: pp 4 x v 2 inside one server, m = 8.
    One send t = 2 us + 8192 x 4096 x 2 B / 370 GB/s = 183.4 us; blocking charges the m v = 16
    steady chunks' 32 sends whole, overlapped only the contention share c (0.159), so the off
    row's step is the on row's + 32 t (1 - c) = 4.935 ms, its exposed communication too, and
    every other column equal. The pp 1 rows do not pipeline: off there is the on row under
    another label, which predict refuses (``P2P_OVERLAP_NEEDS_INTERLEAVED``), so it is dropped
    as a broken layout with that rule (it was kept, a duplicate of the on row, before session
    41's review), as sweep drops virtual stages at pp 1. Each row equals predict's of its
    scenario. Before: 'axes: cannot sweep ['p2p_overlap']'."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[4], micro_batch=1, accumulation=8,
                    layout=ScenarioLayout(virtual_stages=2))
    res = sweep(profile, base, {"pp": [1, 4], "p2p_overlap": [True, False]})
    cols = res.columns
    rows = {(int(pp), bool(on)): i for i, (pp, on) in
            enumerate(zip(cols["pp"], cols["p2p_overlap"], strict=True))}
    assert sorted(rows) == [(1, True), (4, False), (4, True)]
    assert res.dropped == res.dropped_layout == 1
    assert res.layout_example == f"tp 1 x pp 1 on 4 devices: {knob_refusal(P2P_OVERLAP_NEEDS_INTERLEAVED)}"
    with pytest.raises(ScalesimError, match="--p2p-overlap off needs the interleaved schedule"):
        predict(profile, base.model_copy(update={"layout": ScenarioLayout(p2p_overlap=False)}))
    c = profile.hardware.comm_compute_contention
    t = 2e-6 + 8192 * 4096 * 2 / 370e9
    on, off = rows[4, True], rows[4, False]
    for name in ("step_time_s", "exposed_comm_s"):
        assert cols[name][off] - cols[name][on] == pytest.approx(32 * t * (1 - c), rel=1e-9)
    for name in ("compute_s", "bubble_s", "straggler_s", "memory_bytes"):
        assert cols[name][off] == cols[name][on], name
    for (pp, overlap), i in rows.items():
        split = ScenarioLayout(pp=pp, virtual_stages=2 if pp > 1 else 1, p2p_overlap=overlap)
        want = predict(profile, base.model_copy(update={"layout": split}))[0].step_time_s
        assert cols["step_time_s"][i] == pytest.approx(want, rel=1e-12), (pp, overlap)


@pytest.mark.parametrize(("argv", "words"), [
    (["--devices", "8"], "--p2p-overlap-values needs a transformer workload"),
    ([*WORKLOAD, "--devices", "4", "--pp", "4"], str(knob_refusal(P2P_OVERLAP_NEEDS_INTERLEAVED))),
    ([*WORKLOAD, "--devices", "4", "--pp", "4", "--virtual-stages", "2", "--accumulation", "8",
      "--p2p-overlap", "off"], "--p2p-overlap and --p2p-overlap-values both set one knob"),
])
def test_the_axis_is_refused_in_one_line_where_it_changes_nothing(capsys, argv, words):
    """A parameter count (no pipeline schedule), no row interleaving (pp 4, one chunk a stage:
    its sends block either way), and the axis beside its one-value flag: exit 2, one line."""
    code, out, err = run_cli(capsys, ["sweep", *argv, "--p2p-overlap-values", "on,off"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err
    if "virtual" in words:  # the fix names the axis's value, not the one-value flag
        assert "drop 'off' from --p2p-overlap-values" in err, err


@pytest.fixture(scope="module")
def gpt_runs(tmp_path_factory):
    """GPT 1.7B at 1 sequence per GPU on 8-32 A100 PCIe 80GB over 100 Gb/s Ethernet
    (tests/test_diagnose_model.py's runs): the exchange dominates, so splitting the model is a
    remedy; with the sends overlapped its best split is dp 4 x tp 2 x pp 4, interleaved."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "gpt-1.7b")
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text(cases.to_csv(cases._rows(profile, Scenario(devices=[8, 16, 32],
                                                                micro_batch=1))))
    return str(path)


def test_diagnose_plans_the_split_remedy_with_blocking_sends(capsys, monkeypatch, gpt_runs):
    """``diagnose --workload gpt-1.7b --gpu 'A100 PCIe 80GB' --p2p-overlap off``: the split
    remedy is the planner's best of the fitted scenario with blocking sends
    (``best_split`` of it, as ``scalesim plan --p2p-overlap off`` ranks), not the interleaved
    dp 4 x tp 2 x pp 4 that overlapped sends make best, which blocking sends make slower than
    the split chosen. Before: 'unrecognized arguments: --p2p-overlap off' (the split priced
    with overlapped sends whatever the framework)."""
    made = kept_diagnoses(monkeypatch)
    # no --wire-bytes: the fit charges what predict charges gpt-1.7b under DDP, fp32 gradients
    # since session 45 (4 B each), the bytes these runs all-reduced; told 2, as before, the fit
    # misread the runs and the overlapped sends' best split was zero bubble too
    code, out, err = run_cli(capsys, ["diagnose", gpt_runs, "--workload", "gpt-1.7b", "--gpu",
                                      "A100 PCIe 80GB", "--p2p-overlap", "off", "--json"])
    assert code == 0, err
    split = next(r for r in made[0].remedies if r.key == "split_model")
    assert split.applicable
    profile = Profile.model_validate(made[0].details["fitted_profile"])
    scenario = Scenario.model_validate(made[0].details["fitted_scenario"])
    blocking = scenario.model_copy(update={"layout": ScenarioLayout(p2p_overlap=False)})
    now = predict(profile, scenario)[0]
    want, title = best_split(profile, blocking, now)
    assert split.title == title and "interleaved" not in title
    assert split.split_layout["layout"] == want.layout.model_dump(mode="json")
    # the split the overlapped sends pick, run with blocking sends: slower than the one chosen
    overlapped, _ = best_split(profile, scenario, now)
    assert overlapped.layout.schedule == "interleaved"
    slow = overlapped.model_copy(update={"layout": overlapped.layout.model_copy(
        update={"p2p_overlap": False})})
    assert predict(profile, slow)[0].step_time_s > predict(profile, want)[0].step_time_s
    assert split.gain == pytest.approx(
        predict(profile, want)[0].samples_per_s / now.samples_per_s - 1, rel=1e-9)


@pytest.mark.parametrize(("argv", "words"), [
    (["RUNS"], "--p2p-overlap off is for --workload (the runs' transformer)"),
    (["--trace", "RUNS"], "--p2p-overlap off: for a runs file"),
])
def test_diagnose_refuses_blocking_sends_where_no_layout_is_split(capsys, gpt_runs, argv,
                                                                  words):
    """Without the runs' transformer no layout is split, and traces show their own sends: one
    line, exit 2, before a file is read."""
    argv = [gpt_runs if a == "RUNS" else a for a in argv]
    code, out, err = run_cli(capsys, ["diagnose", *argv, "--p2p-overlap", "off"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err


def test_runs_that_split_the_model_refuse_blocking_sends():
    """Runs that split the model are fitted as replicas: their sends are part of a replica's
    fitted compute, and no split layout is tried, so --p2p-overlap off changes nothing there:
    one line, as --tp-overlap (tests/test_diagnose_model_split.py's tp 8 runs)."""
    from scalesim.runs import parse_runs_text
    from scalesim.runs_diagnosis import diagnose_runs
    from scalesim.runs_model import runs_model

    runs = parse_runs_text("devices,nodes,step_time_s,global_batch,tp\n8,1,16.0,64,8\n"
                           "16,2,17.6,128,8\n32,4,19.2,256,8\n", "r.csv")
    with pytest.raises(ScalesimError, match="--p2p-overlap off is for the layouts of the "
                                            "split-the-model remedy"):
        diagnose_runs(runs, transformer=runs_model("llama3-8b", "H100 SXM"), p2p_overlap=False)
    with pytest.raises(ScalesimError, match="p2p_overlap: it applies to the split layouts"):
        diagnose_runs(runs, p2p_overlap=False)  # no model: nothing to split


def test_the_diagnose_page_takes_blocking_sends_as_the_cli(capsys, tmp_path, monkeypatch,
                                                           gpt_runs):
    """The Diagnose page's "Pipeline sends overlap compute" toggle (shown with the runs'
    transformer, on by default) is ``--p2p-overlap``: off, the page's report is the CLI's with
    ``--p2p-overlap off``, its split not interleaved. Before: no such toggle (the page priced
    the split with overlapped sends whatever the framework)."""
    from app_harness import open_diagnose_page, run_clean

    monkeypatch.chdir(tmp_path)  # the CLI names the runs 'runs.csv', as the page the upload
    text = Path(gpt_runs).read_text()
    (tmp_path / "runs.csv").write_text(text)
    at = open_diagnose_page()
    at.file_uploader(key="dg_runs").set_value(("runs.csv", text.encode(), "text/csv"))
    at.selectbox(key="dg_wire").set_value(2.0)
    at.selectbox(key="dg_workload").set_value("gpt-1.7b")
    run_clean(at)
    at.selectbox(key="dg_gpu").set_value("A100-PCIe 80GB")
    assert at.toggle(key="dg_p2p_overlap").value is True
    at.toggle(key="dg_p2p_overlap").set_value(False)
    run_clean(at)
    assert not at.error
    page = next(c.value for c in at.code if c.value.startswith("Diagnosis of"))
    code, out, err = run_cli(capsys, ["diagnose", "runs.csv", "--workload", "gpt-1.7b", "--gpu",
                                      "A100-PCIe 80GB", "--wire-bytes", "2", "--p2p-overlap",
                                      "off"])
    assert code == 0, err
    assert page == out.rstrip("\n")
    # the planner's best with blocking sends (the test above checks which): not interleaved;
    # dp 16 x pp 2 since session 44's fp32 main grads of ZeRO-1 (dp 8 x pp 4 before)
    split = next(line for line in page.splitlines() if "Split the model: dp " in line)
    assert "interleaved" not in split and "(zero bubble)" in split


PLAN = ["plan", "--workload", "llama3-8b", "--devices", "8", "--global-batch", "64"]


@pytest.mark.parametrize(("argv", "searched"), [
    (["--strategy", "zero3"], "every ZeRO stage (ddp, zero1-3)"),
    (["--batch", "2"], "every micro-batch that divides --global-batch"),
    (["--accumulation", "4"], "every accumulation that makes --global-batch"),
    (["--tp", "2"], "every tensor-parallel degree"),
    (["--tp"], "every tensor-parallel degree"),
    (["--pp=2"], "every pipeline depth"),
    (["--schedule", "1f1b"], "every pipeline schedule"),
    (["--virtual-stages", "2"], "every interleaved schedule's virtual stages"),
    (["--recompute", "full"], "none, selective and full recompute"),
    (["--sequence-parallel"], "with and without sequence parallelism"),
    (["--shard-group", "8"], "full sharding and every hybrid shard group"),
])
def test_plan_says_it_searches_the_layout_flags_predict_takes(capsys, argv, searched):
    """predict's layout flags given to plan: one line saying plan searches that knob. Before:
    a bare 'unrecognized arguments' (--strategy, --batch, ...), '--tp is read as --tp-overlap'
    (argparse's prefix match; a bare `--tp` ran the plan with TP overlap on, in silence), 'did
    you mean --cp?' for --pp, and '--recompute-style: invalid choice: 'full'' for --recompute."""
    code, out, err = run_cli(capsys, [*PLAN, *argv])
    flag = argv[0].partition("=")[0]
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert (f"unrecognized arguments: {' '.join(argv)}; plan has no {flag}: it searches "
            f"{searched}") in err, err
    assert "did you mean" not in err and "read as" not in err, err


@pytest.mark.parametrize(("argv", "words"), [
    (["predict", "--dev", "8"], "unrecognized arguments: --dev 8; did you mean --devices or "
                                "--device-cv? flags are written in full"),
    (["predict", "--strat", "zero2"], "did you mean --strategy? flags are written in full"),
    ([*PLAN, "--recompute-s", "early-stop"], "did you mean --recompute-style? flags are "
                                             "written in full"),
    (["predict", "--devcies", "8"], "unrecognized arguments: --devcies 8; did you mean "
                                    "--devices?"),
])
def test_an_abbreviated_flag_is_refused_with_the_flags_it_begins(capsys, argv, words):
    """Flags are written in full: argparse's prefix match completed `--strat` to --strategy
    (and `plan --tp` to the switch --tp-overlap), so a typo could map to another flag without a
    word, and `--dev 8` was 'ambiguous option'. An abbreviation is now refused in one line
    naming the flags it begins; a misspelt flag keeps its nearest name."""
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err


@pytest.mark.parametrize(("argv", "why"), [
    (["--precision", "fp8"], "the runs' compute is fitted to their own timings, which ran at "
                             "their own precision; scalesim plan --precision fp8"),
    (["--loader-workers", "4"], "the runs' data_wait_s column (seconds a step waits on input) "
                                "measures their input pipeline"),
    (["--schedule", "1f1b"], "which ran their own schedule; the split-the-model remedy "
                             "(--workload) searches every pipeline schedule"),
    (["--virtual-stages", "2"], "the split-the-model remedy (--workload) searches every "
                                "interleaved schedule's virtual stages"),
    (["--sequence-parallel"], "searches with and without sequence parallelism"),
    (["--tp", "2"], "a runs file gives it as its tp column"),
    (["--pp=2"], "a runs file gives it as its pp column"),
    (["--recompute", "full"], "which ran their own recompute"),
])
def test_diagnose_says_why_it_has_no_flag_for_what_the_runs_decide(capsys, gpt_runs, argv,
                                                                    why):
    """predict's knobs that the runs' own timings and columns decide: one line saying so.
    Before: a bare 'unrecognized arguments' (--precision, --loader-workers, --schedule,
    --virtual-stages, --sequence-parallel, --pp), '--tp is read as --tp-overlap' and
    '--recompute-style: invalid choice: 'full'' (argparse's prefix match)."""
    code, out, err = run_cli(capsys, ["diagnose", gpt_runs, *argv])
    flag = argv[0].partition("=")[0]
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"unrecognized arguments: {' '.join(argv)}; diagnose has no {flag}: " in err, err
    assert why in err, err


@pytest.mark.parametrize(("devices", "split", "axes"), [
    (4, {"pp": 4}, {"virtual_stages": [1, 2], "recompute": ["none", "selective", "full"]}),
    (8, {"tp": 2, "pp": 4}, {"schedule": ["gpipe", "1f1b", "zb"],
                             "sequence_parallel": [True, False]}),
])
def test_layout_fields_are_sweep_axes_with_the_rows_predict_gives(devices, split, axes):
    """``--virtual-stages-values``, ``--recompute-values``, ``--schedule-values`` and
    ``--sequence-parallel-values`` (Llama 3 8B inside one DGX H100, one sequence a micro-batch,
    8 micro-batches a step): every row, in grid order, equals predict's of its scenario (step,
    throughput, speed-up, memory, bubble). Before: 'unrecognized arguments' and the library's
    'axes: cannot sweep': one sweep per value."""
    import itertools

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[devices], micro_batch=1, accumulation=8,
                    layout=ScenarioLayout(**split))
    cols = sweep(profile, base, axes).columns
    combos = list(itertools.product(*axes.values()))
    assert cols["step_time_s"].size == len(combos)
    for i, values in enumerate(combos):
        layout = ScenarioLayout(**split, **dict(zip(axes, values, strict=True)))
        want = predict(profile, base.model_copy(update={"layout": layout}))[0]
        for name, value in zip(axes, values, strict=True):
            assert cols[name][i] == value
        for name in ("step_time_s", "samples_per_s", "speedup", "memory_bytes", "bubble_s"):
            assert cols[name][i] == pytest.approx(getattr(want, name), rel=1e-12), (name, values)


def test_two_virtual_stages_halve_the_bubble_and_nothing_else_of_the_compute():
    """pp 4 at 8 micro-batches: 1F1B's fill and drain are (pp - 1) = 3 micro-steps of one stage's
    compute, interleaved with v = 2 chunks a rank (pp - 1) / v = 1.5 (docs/model.md §15): the
    v = 2 row's bubble is half the v = 1 row's, at the same compute, for each recompute."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[4], micro_batch=1, accumulation=8, layout=ScenarioLayout(pp=4))
    cols = sweep(profile, base, {"virtual_stages": [1, 2],
                                 "recompute": ["none", "full"]}).columns
    for one, two in ((0, 2), (1, 3)):  # (v 1, v 2) rows of none, then full
        assert cols["virtual_stages"][one] == 1 and cols["virtual_stages"][two] == 2
        assert cols["recompute"][one] == cols["recompute"][two]
        assert cols["bubble_s"][two] == pytest.approx(cols["bubble_s"][one] / 2, rel=1e-12)
        assert cols["compute_s"][two] == cols["compute_s"][one]


@pytest.mark.parametrize(("argv", "words"), [
    (["--devices", "8", "--virtual-stages-values", "1,2"],
     "--virtual-stages-values needs a transformer workload"),
    (["--devices", "8", "--recompute-values", "none,full"],
     "--recompute-values needs a transformer workload"),
    # predict's rule, the values, what to give and what to drop (one check since session 42)
    ([*WORKLOAD, "--devices", "4", "--virtual-stages-values", "1,2"],
     "--virtual-stages 2 needs --pp 2 or more and --schedule interleaved (model chunks of a "
     "pipeline's stages); give both, or --virtual-stages 1: '2' of --virtual-stages-values means "
     "nothing on every row of the sweep; give --pp (in a sweep: or a --pp-values that reaches "
     "2), or drop '2' from --virtual-stages-values"),
    ([*WORKLOAD, "--devices", "4", "--schedule-values", "gpipe,zb"],
     "--schedule gpipe needs --pp 2 or more (a pipeline); at --pp 1 leave --schedule at its "
     "default: 'gpipe', 'zb' of "
     "--schedule-values mean nothing on every row of the sweep; give --pp"),
    ([*WORKLOAD, "--devices", "4", "--sequence-parallel-values", "on,off"],
     "--sequence-parallel needs --tp 2 or more"),
    ([*WORKLOAD, "--devices", "4", "--recompute", "full", "--recompute-values", "none,full"],
     "--recompute and --recompute-values both set one knob"),
    ([*WORKLOAD, "--devices", "4", "--recompute-values", "none,sometimes"],
     "unknown recompute 'sometimes'; choose from none, selective, full"),
])
def test_the_layout_axes_are_refused_in_one_line_where_no_row_uses_them(capsys, argv, words):
    """A parameter count (no layers to split or recompute), a pipeline axis with no row
    pipelining, sequence parallelism with no row splitting tensors, an axis beside its
    one-value flag and a name that is no recompute: exit 2, one line."""
    code, out, err = run_cli(capsys, ["sweep", *argv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err
