"""The planner of a scenario sees the whole scenario (issue 11): ``plan_at`` and the "split the
model" remedy rank every layout with the inputs ``predict`` gives it (one ``Setting``, built by
``layout_predict.scenario_setting``, turned into ``LayoutInputs`` by ``plan.setting_inputs``):
the slow device, overlap, jitter, recompute style, links and bytes per parameter of the
scenario, and each micro-batch's pinned matmul efficiency. docs/model.md §17, §22."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout
from scalesim.layout_predict import plan_at, scenario_hardware, scenario_of_row
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts, point_to_point_links
from scalesim.plan import Setting, evaluate_layout, plan, setting_inputs
from scalesim.predict import predict
from scalesim.presets import HARDWARE, transformer_workload
from scalesim.profiles import resolve_profile
from scalesim.remedies import best_split
from scalesim.schemas import LoaderCurve, LoaderPoint, Scenario

DEVICES = GLOBAL_BATCH = 4  # GPT 1.7B on 4 A100s of a DGX A100: 363 valid layouts


@pytest.fixture(scope="module")
def gpt():
    return resolve_profile(None, "dgx-a100", "gpt-1.7b")


def _key(row):
    return (row.dp, row.tp, row.pp, row.zero, row.micro_batch, row.schedule, row.virtual_stages,
            row.recompute, row.sequence_parallel)


def _predicted(profile, scenario, rows):
    """``predict`` of every row's layout as a scenario (``scenario_of_row``)."""
    return [predict(profile, scenario_of_row(scenario, r))[0] for r in rows]


QUIET = Scenario(devices=[DEVICES], global_batch=GLOBAL_BATCH)


@pytest.mark.parametrize("knob", [{"overlap": False},
                                  {"slow_device": 0, "slow_factor": 3.0}])
def test_the_planner_ranks_as_predict_predicts_with_overlap_off_or_a_slow_device(gpt, knob):
    """Overlap off exposes the data-parallel exchange (dp 4 -> dp 2 x tp 2 with sequence
    parallelism); a slow first rank slows its whole replica at tp = pp = 1 but only the first
    stage of a pipeline, the one without the output layer (dp 4 -> dp 2 x pp 2; 3x slow: at 2x
    the two are 0.01 ms apart in 339 ms, a tie any change of the model may turn). A slow last
    rank did too until session 20 (stages2_20), when pp 2 x 8 virtual stages was charged 16
    of the 24 layers on its first rank and 8 on its last, not the 12 and 12 that run (chunks
    of 2 and 1). The planner's best changes with the knob, every
    row it ranks is what predict says of that layout, and its best is predict's best over the
    same candidates."""
    quiet_best = plan_at(gpt, QUIET, DEVICES, GLOBAL_BATCH, top=1)[0]
    scenario = QUIET.model_copy(update=knob)
    rows = plan_at(gpt, scenario, DEVICES, GLOBAL_BATCH, top=None, include_unfit=True)
    assert len(rows) == 330  # no ZeRO-3 pipeline rows (FSDP holds them whole, as ZeRO-2)
    assert _key(rows[0]) != _key(quiet_best)
    predicted = _predicted(gpt, scenario, rows)
    for row, p in zip(rows, predicted, strict=True):
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9), _key(row)
        assert p.fits == row.fits and p.memory_bytes == pytest.approx(row.memory_bytes, rel=1e-9)
    fitting = [i for i, p in enumerate(predicted) if p.fits]
    best = max(fitting, key=lambda i: predicted[i].samples_per_s)
    assert predicted[best].samples_per_s == pytest.approx(rows[0].samples_per_s, rel=1e-12)
    assert _key(rows[best]) == _key(rows[0])


def test_the_split_remedy_takes_the_scenario(gpt):
    """The "split the model" remedy's layout is the best split of the same ranking: with a slow
    first rank a pipeline whose slow stage is not the pace wins (without it, tensor
    parallelism); its predicted step is the planner's."""
    now = predict(gpt, QUIET)[0]
    slow = QUIET.model_copy(update={"slow_device": 0, "slow_factor": 2.0})
    quiet_split, _ = best_split(gpt, QUIET, now)
    slow_split, title = best_split(gpt, slow, predict(gpt, slow)[0])
    rows = plan_at(gpt, slow, DEVICES, GLOBAL_BATCH, top=None)
    first_split = next(r for r in rows if r.tp * r.pp > 1)
    assert (slow_split.layout.tp, slow_split.layout.pp) == (first_split.tp, first_split.pp)
    assert (slow_split.layout.tp, slow_split.layout.pp) != (quiet_split.layout.tp,
                                                            quiet_split.layout.pp)
    assert predict(gpt, slow_split)[0].step_time_s == pytest.approx(first_split.step_time_s,
                                                                   rel=1e-9)
    assert slow_split.slow_device == 0 and "Split the model" in title


def test_every_other_knob_of_the_scenario_reaches_the_ranking():
    """H100 servers with NVLink SHARP and an intra busbw override (NVLS scales with it), fp32
    gradients on the wire, jitter, the early-stop recompute style, a smaller server size, a
    loader that cannot keep up: the planner's rows are predict's. Before, the planner kept the
    NVLS busbw unscaled, 2 bytes per gradient, no input stall, and one matmul efficiency pinned
    at today's micro-batch for every row."""
    profile = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    loader = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=12.0)], measured=True,
                         source="test: one slow loader")
    profile = profile.model_copy(update={"workload": profile.workload.model_copy(update={
        "wire_bytes_per_param": 4.0, "activation_recompute": True}), "input_pipeline": loader})
    assert profile.hardware.intra_node.allreduce_busbw_GBps is not None  # NVLS
    scenario = Scenario(devices=[8], global_batch=16, micro_batch=None, devices_per_node=4,
                        intra_busbw_GBps=200.0, straggler_cv=0.03,
                        layout={"recompute_style": "early-stop"})
    rows = plan_at(profile, scenario, 8, 16, top=25)
    assert {r.micro_batch for r in rows} != {rows[0].micro_batch}  # pins at several
    assert any(r.breakdown_s["stall_s"] > 0 for r in rows)  # the loader limits some layouts
    for row, p in zip(rows, _predicted(profile, scenario, rows), strict=True):
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9), _key(row)
        assert row.recompute_style == "early-stop"


def test_plan_takes_overlap_and_a_slow_device_as_plan_at_does(gpt):
    """``plan()`` on the preset's shape and hardware at the preset's efficiency (its compute curve
    is the layout model's own at 0.73, so the pin recovers it) ranks as ``plan_at``."""
    steps = {}
    for knob in ({}, {"overlap": False}, {"slow_device": 3, "slow_factor": 1.5},
                 {"zero_framework": "deepspeed"}, {"grad_sync": "once-per-step"}):
        at = plan_at(gpt, QUIET.model_copy(update=knob), DEVICES, GLOBAL_BATCH, top=None)
        direct = plan(gpt.workload.transformer, gpt.hardware, [DEVICES], GLOBAL_BATCH, top=None,
                      params=gpt.workload.params, **knob)
        assert [_key(r) for r in at] == [_key(r) for r in direct]
        np.testing.assert_allclose([r.step_time_s for r in at],
                                   [r.step_time_s for r in direct], rtol=1e-12)
        steps[tuple(knob)] = {_key(r): r.step_time_s for r in direct if r.zero == 1}
    # DeepSpeed's ZeRO-1 gathers the parameters after the step, exposed: every ZeRO-1 row slower
    deepspeed, default = steps[("zero_framework",)], steps[()]
    assert deepspeed and all(deepspeed[k] > default[k] for k in deepspeed)
    for bad, message in (({"slow_factor": 0.5}, "slow_factor"),
                         ({"slow_device": -1}, "slow_device"),
                         ({"zero_framework": "megatron"}, "zero_framework 'megatron'"),
                         ({"grad_sync": "never"}, "grad_sync 'never'"),
                         ({"algorithm": "butterfly"}, "algorithm 'butterfly'"),
                         ({"bucket_mib": 0.0}, "bucket_mib"),
                         ({"zero_framework": "deepspeed", "grad_sync": "once-per-step"},
                          "FSDP's no_sync")):
        with pytest.raises(ScalesimError, match=message):
            plan(gpt.workload.transformer, gpt.hardware, [DEVICES], GLOBAL_BATCH, **bad)


def test_a_flash2_plan_re_predicts_with_the_same_kernel():
    """On H100s (where flash2 has a rate of its own, docs/model.md §13) the planner of a scenario
    with ``attention_kernel`` flash2 ranks every layout as predict predicts it with that kernel,
    as ``plan(..., attention_kernel='flash2')`` ranks them (the preset curve is the layout
    model's own at 0.73: the pin reads it as the vendor kernel's and recovers 0.73); predicted
    with the vendor kernel instead, the same layouts run faster (a plan made with flash2 and
    re-predicted without it would not agree)."""
    h100 = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    scenario = Scenario(devices=[8], global_batch=16, attention_kernel="flash2")
    rows = plan_at(h100, scenario, 8, 16, top=20)
    for row, p in zip(rows, _predicted(h100, scenario, rows), strict=True):
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9), _key(row)
    direct = plan(h100.workload.transformer, h100.hardware, [8], 16, top=20,
                  params=h100.workload.params, attention_kernel="flash2")
    assert [_key(r) for r in direct] == [_key(r) for r in rows]
    np.testing.assert_allclose([r.step_time_s for r in direct], [r.step_time_s for r in rows],
                               rtol=1e-12)
    vendor = scenario.model_copy(update={"attention_kernel": "fused-vendor"})
    assert all(p.step_time_s < r.step_time_s
               for r, p in zip(rows, _predicted(h100, vendor, rows), strict=True))


# ------------------------------------------------------------------ tp overlap of a layout

SHAPE = transformer_workload("gpt-1.7b").transformer


def test_a_layout_of_another_tp_overlap_is_refused_and_a_planned_row_round_trips():
    setting = Setting(SHAPE, HARDWARE["dgx-a100"], 8, tp_overlap=True)
    layout = ParallelLayout(dp=2, tp=4, micro_batch=1, global_batch=8)
    with pytest.raises(ScalesimError, match="layout tp_overlap False != the plan's True"):
        evaluate_layout(setting, layout)
    hidden = evaluate_layout(setting, layout.model_copy(update={"tp_overlap": True}))
    exposed = evaluate_layout(Setting(SHAPE, HARDWARE["dgx-a100"], 8), layout)
    assert 0 < float(hidden.tp_comm_s) < float(exposed.tp_comm_s)
    row = plan(SHAPE, HARDWARE["dgx-a100"], [8], 8, tp_overlap=True, top=1)[0]
    assert row.tp_overlap and row.layout(8).tp_overlap
    assert float(evaluate_layout(setting, row.layout(8)).step_time_s) == pytest.approx(
        row.step_time_s, rel=1e-12)


def test_a_plan_with_tp_overlap_re_predicts_with_it():
    """A scenario whose framework overlaps the tensor-parallel collectives
    (``ScenarioLayout.tp_overlap``) is planned with the overlap (``plan_at``, through
    ``scenario_setting``) and every tp > 1 row it ranks re-predicts (``scenario_of_row``) to
    the plan's step, the overlap carried; tp = 1 rows carry none (predict refuses it there, and
    there is nothing to overlap). Re-predicted without the overlap, the tp > 1 rows are slower by
    the tensor-parallel time the overlap hid (in the steady state and the bubble; the exchange
    hides a little less behind the shorter passes); the direct ``plan(tp_overlap=True)`` ranks
    the same rows at the same steps (one definition: ``scalesim plan --tp-overlap``)."""
    h100 = resolve_profile(None, "dgx-h100", "gpt-1.7b")
    scenario = Scenario(devices=[8], global_batch=16, layout={"tp_overlap": True})
    rows = plan_at(h100, scenario, 8, 16, top=40)
    split = [r for r in rows if r.tp > 1]
    assert split and all(r.tp_overlap for r in rows)
    for row, p in zip(rows, _predicted(h100, scenario, rows), strict=True):
        assert scenario_of_row(scenario, row).layout.tp_overlap == (row.tp > 1)
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9), _key(row)
        assert p.tp_comm_s == pytest.approx(row.breakdown_s["tp_comm_s"], rel=1e-9, abs=1e-15)
    for row in split:
        on = predict(h100, scenario_of_row(scenario, row))[0]
        off = predict(h100, scenario_of_row(scenario, row).model_copy(update={
            "layout": scenario_of_row(scenario, row).layout.model_copy(
                update={"tp_overlap": False})}))[0]
        assert 0 < on.tp_comm_s < off.tp_comm_s, _key(row)
        # under a pipeline the bubble (average stages, their tp time included) shrinks too, and
        # the exchange hides behind passes whose tp waits are shorter (a little less of it)
        assert off.compute_s == on.compute_s and off.straggler_s == on.straggler_s, _key(row)
        assert off.step_time_s - on.step_time_s == pytest.approx(
            off.exposed_comm_s - on.exposed_comm_s + off.bubble_s - on.bubble_s,
            rel=1e-9), _key(row)
        assert off.exposed_comm_s - on.exposed_comm_s == pytest.approx(
            off.tp_comm_s - on.tp_comm_s, rel=0.01), _key(row)
        if row.pp == 1:
            assert off.bubble_s == on.bubble_s == 0
    direct = plan(h100.workload.transformer, h100.hardware, [8], 16, top=40,
                  params=h100.workload.params, tp_overlap=True)
    assert [_key(r) for r in direct] == [_key(r) for r in rows]
    np.testing.assert_allclose([r.step_time_s for r in direct], [r.step_time_s for r in rows],
                               rtol=1e-12)


# ------------------------------------------------------------------ point-to-point links

def _inputs(cp: int = 8, global_batch: int = 8, **changes) -> LayoutInputs:
    setting = Setting(SHAPE.model_copy(update={"seq_len": 8192}), HARDWARE["dgx-a100"],
                      global_batch)
    return setting_inputs(setting, cp=cp).replace(**changes)


def test_pipeline_and_context_parallel_sends_cross_the_same_links():
    """One rule for both: a group spanning servers sends at one GPU's NIC share, inside a server
    at the intra level or the measured send/recv (docs/model.md §14, §15)."""
    x = _inputs()
    hw = HARDWARE["dgx-a100"]
    inside = point_to_point_links(x, 8, 1)  # 8 ranks 1 apart: one server
    across = point_to_point_links(x, 4, 8)  # 4 ranks 8 apart: 4 servers
    assert (int(inside.nodes), int(across.nodes), int(across.per_node)) == (1, 4, 1)
    assert inside.slowest() == (hw.intra_node.latency_s, hw.intra_node.busbw_GBps)
    assert across.slowest() == (hw.inter_node.latency_s, hw.inter_node.busbw_GBps / 8)


def test_context_parallel_ring_inside_a_server_uses_the_measured_send_recv():
    """The ring's hops are sends between neighbours: the profile's measured send/recv replaces
    the intra link for them as for pipeline sends (before, the ring kept the intra ring busbw
    and latency whatever was measured). By hand: GPT 1.7B at s = 8192 on cp 8 (one server),
    one micro-batch of 1: a hop moves K and V of 1024 tokens, 2 x 1024 x 2304 x 2 B =
    9,437,184 B; 3 x 7 hops per layer, 24 layers; with contention 1 the hidden part costs as
    much as the exposed, so the term is the whole ring."""
    hw = HARDWARE["dgx-a100"]
    chunk = 2.0 * (8192 / 8) * 2304 * 2.0
    x = _inputs(global_batch=1, comm_contention=1.0)
    link_model = evaluate_layouts(x)
    measured = evaluate_layouts(x.replace(p2p_busbw_ratio=0.5, p2p_latency_s=20e-6))
    ring_model = 21 * (hw.intra_node.latency_s + chunk / (hw.intra_node.busbw_GBps * 1e9))
    ring_measured = 21 * (20e-6 + chunk / (0.5 * hw.intra_node.busbw_GBps * 1e9))
    assert float(link_model.cp_comm_s) == pytest.approx(24 * ring_model, rel=1e-9)
    assert float(measured.cp_comm_s) == pytest.approx(24 * ring_measured, rel=1e-9)
    # across servers (cp 16 over two servers) the inter link, measured send/recv or not
    wide = _inputs(global_batch=1, comm_contention=1.0, cp=16)
    assert float(evaluate_layouts(wide).cp_comm_s) == float(evaluate_layouts(wide.replace(
        p2p_busbw_ratio=0.5, p2p_latency_s=20e-6)).cp_comm_s) > 0


# ------------------------------------------------------------------ scalesim plan

def test_cli_plans_with_the_run_conditions(capsys, gpt):
    from cli_harness import run_cli

    argv = ["plan", "--model", "gpt-1.7b", "--hardware", "dgx-a100", "--devices", "4",
            "--global-batch", "4", "--top", "3"]
    for flags, knob in ((["--no-overlap"], {"overlap": False}),
                        (["--slow-device", "3", "--slow-factor", "1.5"],
                         {"slow_device": 3, "slow_factor": 1.5}),
                        (["--straggler-cv", "0.05"], {"jitter_cv": 0.05}),
                        (["--zero-framework", "deepspeed"], {"zero_framework": "deepspeed"}),
                        (["--grad-sync", "once-per-step"], {"grad_sync": "once-per-step"})):
        code, out, err = run_cli(capsys, argv + flags + ["--json"])
        assert code == 0, err
        expected = plan(SHAPE, HARDWARE["dgx-a100"], [DEVICES], GLOBAL_BATCH, top=3, **knob)
        got = json.loads(out)["layouts"]
        assert [r["step_time_s"] for r in got] == pytest.approx(
            [r.step_time_s for r in expected], rel=1e-12)
        code, out, err = run_cli(capsys, argv + flags)
        lines = out.splitlines()[1:]  # after "workload: gpt-1.7b: ..."
        assert code == 0 and lines[0].startswith("hardware: dgx-a100 (A100"), out
        assert lines[1].startswith("ranked with: "), out
    code, out, err = run_cli(capsys, argv + ["--slow-device", "5", "--slow-factor", "1.5"])
    assert code == 0 and "no slow device at 4 devices (device 5 is not among them)" in out
    code, out, err = run_cli(capsys, argv + ["--slow-device", "3"])
    assert code == 2 and "--slow-factor F go together" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flags, knob", [
    (["--inter-busbw", "20"], {"inter_busbw_GBps": 20.0}),
    (["--intra-busbw", "60", "--intra-latency", "2e-5"],
     {"intra_busbw_GBps": 60.0, "intra_latency_s": 2e-5}),
    (["--inter-latency", "1e-4", "--device-cv", "0.05"],
     {"inter_latency_s": 1e-4, "device_speed_cv": 0.05}),
    (["--algorithm", "tree"], {"algorithm": "tree"}),  # the exposed DDP all-reduces
    (["--bucket-mib", "400"], {"bucket_mib": 400.0}),  # DDP's last bucket exposed
])
def test_cli_plans_with_predicts_link_and_algorithm_flags(capsys, gpt, flags, knob):
    """plan takes predict's --intra/--inter-busbw, --intra/--inter-latency, --device-cv,
    --algorithm and --bucket-mib (one helper each in options.py): on 2 servers of 8 its rows are
    ``plan_at``'s of the scenario with those fields, which are predict's, and differ from the
    rows without them; the 'ranked with' line names them. Before, plan had none of them."""
    from cli_harness import run_cli

    argv = ["plan", "--model", "gpt-1.7b", "--hardware", "dgx-a100", "--devices", "16",
            "--global-batch", "16", "--top", "1000", "--json"]
    code, out, err = run_cli(capsys, argv + flags)
    assert code == 0, err
    got = json.loads(out)["layouts"]
    scenario = Scenario(devices=[16], global_batch=16, **knob)
    # the shape's own parameter count, as plan --model counts it
    expected = plan(SHAPE, scenario_hardware(HARDWARE["dgx-a100"], scenario), [16], 16,
                    top=1000, algorithm=scenario.algorithm, bucket_mib=scenario.bucket_mib)
    assert [r["step_time_s"] for r in got] == pytest.approx(
        [r.step_time_s for r in expected], rel=1e-12)
    ranked = plan_at(gpt, scenario, 16, 16, top=5)  # the scenario's planner: predict's rows
    for row, p in zip(ranked, _predicted(gpt, scenario, ranked), strict=True):
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9), _key(row)
    _, plain, _ = run_cli(capsys, argv)
    assert [r["step_time_s"] for r in json.loads(plain)["layouts"]] != [r["step_time_s"] for r in got]
    code, out, _ = run_cli(capsys, argv[:-1] + flags)
    ranked = next(line for line in out.splitlines() if line.startswith("ranked with: "))
    assert all(f in ranked for f in flags if f.startswith("--"))
    assert ("all-reduce tree (--algorithm)" in ranked) == ("--algorithm" in flags)


def test_plan_says_a_link_flag_replaces_an_unmeasured_link(tmp_path, capsys):
    """With --profile, plan's note on a link the profile did not measure names the flag that
    replaces it, as predict's does, and is gone when the flag is given."""
    from cli_harness import run_cli

    from scalesim.profiles import default_profile

    path = tmp_path / "p.json"
    path.write_text(default_profile().model_dump_json())
    argv = ["plan", "--workload", "gpt-1.7b", "--profile", str(path), "--devices", "16",
            "--global-batch", "64", "--top", "1"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    assert "note: inter-server link not measured" in out and "or give --inter-busbw" in out
    code, out, err = run_cli(capsys, argv + ["--inter-busbw", "50"])
    assert code == 0 and "inter-server link not measured" not in out, err
    assert "intra-server link not measured" in out


def test_plan_with_a_profile_ranks_with_its_measured_jitter_as_predict_does(tmp_path, capsys):
    """``scalesim plan --profile`` takes the profile's measured jitter when --straggler-cv is not
    given (``predict.jitter_cv_of``), says so, and --straggler-cv overrides it."""
    from cli_harness import run_cli

    from scalesim.profiles import default_profile
    from scalesim.schemas import Jitter

    path = tmp_path / "p.json"
    jittery = default_profile().model_copy(update={"jitter": Jitter(step_time_cv=0.08)})
    path.write_text(jittery.model_dump_json())
    argv = ["plan", "--workload", "gpt-1.7b", "--profile", str(path), "--devices", "8",
            "--global-batch", "64", "--top", "1"]

    def best(flags):
        code, out, err = run_cli(capsys, argv + flags + ["--json"])
        assert code == 0, err
        return json.loads(out)["layouts"][0]

    measured, zero, given = best([]), best(["--straggler-cv", "0"]), best(["--straggler-cv",
                                                                            "0.08"])
    assert measured["step_time_s"] == pytest.approx(given["step_time_s"], rel=1e-12)
    assert measured["breakdown_s"]["straggler_s"] > zero["breakdown_s"]["straggler_s"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0 and ("ranked with: jitter cv 0.08 per micro-step (the profile's measured "
                          "step-time coefficient of variation; --straggler-cv to change)") in out
    code, out, err = run_cli(capsys, argv + ["--straggler-cv", "0.08"])  # typed: as typed
    assert code == 0 and "ranked with: jitter cv 0.08 per micro-step\n" in out, out


def test_a_measured_jitter_is_said_with_a_measurement_s_digits(tmp_path, capsys):
    """Session 53: a calibrated profile's jitter (0.161006) read 'jitter cv 0.161006 per
    micro-step', six digits and an unexplained 'cv'; now 3 digits and what it is."""
    from cli_harness import run_cli

    from scalesim.profiles import default_profile
    from scalesim.schemas import Jitter

    path = tmp_path / "p.json"
    path.write_text(default_profile().model_copy(
        update={"jitter": Jitter(step_time_cv=0.161006)}).model_dump_json())
    code, out, err = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--profile", str(path),
                                      "--devices", "8", "--global-batch", "64", "--top", "1"])
    assert code == 0, err
    (ranked,) = [line for line in out.splitlines() if line.startswith("ranked with: ")]
    assert ranked == ("ranked with: jitter cv 0.161 per micro-step (the profile's measured "
                      "step-time coefficient of variation; --straggler-cv to change)"), ranked


def test_deepspeed_refuses_zero2_with_a_pipeline_and_fsdp_says_what_it_runs(capsys):
    from cli_harness import run_cli

    code, _out, err = run_cli(capsys, ["predict", "--workload", "gpt-1.7b", "--hardware",
                                       "dgx-a100", "--devices", "16", "--pp", "2", "--strategy",
                                       "zero2", "--zero-framework", "deepspeed"])
    assert code == 2 and "DeepSpeed refuses ZeRO-2/3 with pipeline parallelism" in err
    assert len(err.strip().splitlines()) == 1
    code, out, _err = run_cli(capsys, ["predict", "--workload", "gpt-1.7b", "--hardware",
                                       "dgx-a100", "--devices", "16", "--pp", "2", "--strategy",
                                       "zero3"])
    assert code == 0 and "zero3 under a pipeline: FSDP keeps each stage's parameters" in out


def test_plan_takes_loader_workers_off_a_profiles_measured_input_pipeline(tmp_path, capsys):
    """``plan --loader-workers`` (predict's flag) sets the DataLoader workers of ``--profile``'s
    measured input pipeline where the layouts are ranked on its measured compute curve
    (``layout_predict.plan_at``, as predict reads them: ``predict.loader_supply``); elsewhere
    it feeds the layouts of another model, or of ``--efficiency``, alike; without a profile
    it is refused in one line."""
    from cli_harness import run_cli
    from h200_gpt import H200

    from scalesim.model.pipeline import loader_supply_per_device
    from scalesim.profiles import load_profile
    from scalesim.schemas import LoaderCurve, LoaderPoint

    path = tmp_path / "p.json"
    curve = LoaderCurve(points=[LoaderPoint(workers=1, samples_per_s=2.0),
                                LoaderPoint(workers=8, samples_per_s=5000.0)])
    path.write_text(load_profile(str(H200)).model_copy(update={"input_pipeline": curve})
                    .model_dump_json())
    argv = ["plan", "--profile", str(path), "--devices", "8", "--global-batch", "64", "--top",
            "1", "--json"]

    def best(flags):
        code, out, err = run_cli(capsys, argv + flags)
        assert code == 0, err
        return json.loads(out)["layouts"][0]

    default, one, eight = best([]), best(["--loader-workers", "1"]), best(["--loader-workers",
                                                                            "8"])
    assert default == eight  # the default: the best measured count
    assert one["breakdown_s"].get("stall_s", 0) > 0  # 2 samples/s for 8 loaders: a stall
    assert default["breakdown_s"].get("stall_s", 0) == 0
    assert one["step_time_s"] > default["step_time_s"]
    # off the measured curve (--efficiency, another model) the same supply feeds the layouts,
    # as predict reads it for any model (it was ignored, or --loader-workers refused, before)
    for flags in (["--efficiency", "0.5"], ["--workload", "gpt-1.7b", "--efficiency", "0.5"]):
        slow, fast = best(flags + ["--loader-workers", "1"]), best(flags)
        assert slow["breakdown_s"].get("stall_s", 0) > 0 == fast["breakdown_s"].get("stall_s", 0)
        # each of dp replicas needs 64 / dp samples a step from its loader (1 worker, 8
        # loaders sharing the server's cores): at least 64 / (dp x supply) s, whatever the layout
        supply = loader_supply_per_device(1, 8, load_profile(str(path)).hardware
                                          .cpu_cores_per_node, [1, 8], [2.0, 5000.0])
        assert slow["step_time_s"] >= 64 / (slow["dp"] * float(supply)) * (1 - 1e-9)
    code, out, err = run_cli(capsys, ["plan", "--devices", "8", "--global-batch", "64",
                                      "--loader-workers", "2"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--loader-workers 2: without --profile there is no measured input pipeline" in err
