"""A split model with a slow device, jitter or overlap off (docs/model.md §16, §22): each knob
against a hand-computed value on a small layout, the layout and data-parallel paths agreeing at
tp = pp = 1, monotone properties over a grid of layouts, and the CLI."""

import itertools

import numpy as np
import pytest
from cli_harness import run_cli
from test_collective_waits import E2, GPT, HW

from scalesim.layout import GPIPE, INTERLEAVED, NO_PIPELINE, ONE_F_ONE_B, ZERO_BUBBLE, valid_mask
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.pipeline_schedule import slow_stage_delay_s
from scalesim.model.stragglers import straggler_wait_s
from scalesim.model.tensor_parallel import tp_comm_end_stages_s
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

S_BYTES = GPT["params"] * 2.0  # the whole model's 16-bit gradient
ALPHA, BUSBW = HW["intra_latency_s"], HW["intra_busbw_GBps"] * 1e9  # one A100 server (ring)


def _inputs(**changes):
    base = dict(dp=1, tp=2, pp=1, cp=1, zero=0, micro_batch=4, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    base.update(changes)
    return LayoutInputs(**{**GPT, **HW, **base})


def _per_micro_batch_s(**changes):
    """Compute of the slowest stage for one micro-batch: (compute at m = 4 less m = 1) / 3."""
    mb = changes.get("micro_batch", 4) * changes.get("dp", 1)
    four = evaluate_layouts(_inputs(**{**changes, "global_batch": 4 * mb})).compute_s
    one = evaluate_layouts(_inputs(**{**changes, "global_batch": mb})).compute_s
    return float(four - one) / 3.0


# ------------------------------------------------------------------ a slow device, by hand

def test_a_slow_device_slows_its_tensor_group_by_hand():
    """dp 2 x tp 2, 4 micro-batches, rank 1 (tensor group 0) 1.3x slower: its group waits for it
    at every collective, so its replica computes 1.3x longer, (1.3 - 1) x 4 x t_mb late; with no
    spread or jitter the step waits exactly that. Only the straggler term grows."""
    t_mb = _per_micro_batch_s(dp=2)
    x = _inputs(dp=2, global_batch=32)
    quiet, slow = evaluate_layouts(x), evaluate_layouts(x.replace(slow_factor=1.3, slow_rank=1))
    assert float(slow.straggler_s) == pytest.approx(0.3 * 4 * t_mb, rel=1e-9)
    for part in ("compute_s", "tp_comm_s", "bubble_s", "p2p_s", "dp_exposed_s"):
        assert float(getattr(slow, part)) == float(getattr(quiet, part)), part
    assert float(slow.step_time_s - quiet.step_time_s) == pytest.approx(0.3 * 4 * t_mb, rel=1e-9)
    # a rank beyond the 4 devices is no slow device (as in the data-parallel path)
    assert float(evaluate_layouts(x.replace(slow_factor=1.3, slow_rank=4)).straggler_s) == 0.0
    # with the device spread, the slow replica is one shifted draw of the slowest of 4 (§6)
    spread = x.replace(slow_factor=1.3, slow_rank=1, device_cv=0.0132)
    r = evaluate_layouts(spread)
    assert float(r.straggler_s) == pytest.approx(float(straggler_wait_s(
        4, 0.0132 * float(r.compute_s), 0.3 * 4 * t_mb)), rel=1e-9)


def _layer_and_logits_s():
    """One layer's and the output layer's compute per micro-batch at tp 2 (b = 4), from the
    unsplit model's micro-batch at 24 and 23 layers: L x layer + logits."""
    full = _per_micro_batch_s()
    layer = full - _per_micro_batch_s(layers=23)
    return layer, full - 24 * layer


def test_a_slow_device_in_a_pipeline_by_hand():
    """tp 2 x pp 2 (stages of 12 layers; the last one also computes the logits), 1F1B, m = 4:

    The span is m t_max + sum_i t_i - t_max (§15), so a slowed stage adds (m - 1) steady +
    (f - 1) t_s, steady = max(f t_s + c_s - t_max, 0):

    - slow rank 2 sits on the last, slowest stage (stage = rank // 2): the steady state runs at
      its pace, m times, and fill and drain pass the first stage only: delay = 4 x 0.3 x t_last
      (session 50: + 0.3 x t_last / 2 more, the fill's average stage, was charged);
    - slow rank 0 sits on the first stage (12 layers, no logits): 1.05x slower it stays below
      the last stage's pace, so only the fill and drain grow, by its whole 0.05 x t_first; 1.5x
      slower it sets the pace, each stage's micro-batch its compute and tensor-parallel time (the
      12 layers' the same on both; the embedding's collective t_emb on the first, the output
      layer's and the loss's t_out on the last, §14): 3 x (1.5 t_first + t_emb - t_last -
      t_out) + 0.5 x t_first (session 42: t_out - t_emb, the loss's all-reduces, was left
      out, the stages' compute compared alone)."""
    layer, logits = _layer_and_logits_s()
    t_first, t_last = 12 * layer, 12 * layer + logits
    assert 1.05 * t_first < t_last < 1.5 * t_first  # the three regimes below are distinct
    x = _inputs(pp=2, schedule=ONE_F_ONE_B)
    assert _per_micro_batch_s(pp=2, schedule=ONE_F_ONE_B) == pytest.approx(t_last, rel=1e-9)

    def delay(rank, f):
        return float(evaluate_layouts(x.replace(slow_rank=rank, slow_factor=f)).straggler_s)

    assert delay(2, 1.3) == pytest.approx(4 * 0.3 * t_last, rel=1e-9)
    assert delay(3, 1.3) == pytest.approx(delay(2, 1.3), rel=1e-12)  # same stage
    assert delay(0, 1.05) == pytest.approx(0.05 * t_first, rel=1e-9)
    t_emb, t_out = (float(t) for t in tp_comm_end_stages_s(4, 2048, 2304, 2, 1, False,
                                                           ALPHA, HW["intra_busbw_GBps"]))
    assert t_out > t_emb
    assert delay(0, 1.5) == pytest.approx(
        3 * (1.5 * t_first + t_emb - t_last - t_out) + 0.5 * t_first, rel=1e-9)
    # interleaved (v = 2) fills in half the time: (p - 1) / v micro-batch times
    inter = _inputs(pp=2, schedule=INTERLEAVED, virtual_stages=2)
    quiet = float(evaluate_layouts(inter).straggler_s)
    assert quiet == 0.0
    assert float(evaluate_layouts(inter.replace(slow_rank=0, slow_factor=1.05)).straggler_s) == \
        pytest.approx(0.5 * 0.05 * t_first, rel=1e-9)


def test_slow_stage_delay_formula():
    # no pipeline: (f - 1) m t, §6's (slow_factor - 1) k t_micro
    assert slow_stage_delay_s(NO_PIPELINE, 1, 1, 8, 0.1, 0.1, 1.2) == pytest.approx(0.16)
    # GPipe, 4 stages, the slow one below the pace: the fill's stages grow by (f - 1) t
    assert slow_stage_delay_s(GPIPE, 4, 1, 8, 0.1, 0.12, 1.1) == pytest.approx(0.01)
    # zero bubble, a third of the fill; the slowed stage sets the pace, m (f t - t_max), and
    # the fill's stages (all but the slowest) keep their time
    assert slow_stage_delay_s(ZERO_BUBBLE, 4, 1, 8, 0.1, 0.1, 1.5) == pytest.approx(8 * 0.05)
    assert slow_stage_delay_s(ONE_F_ONE_B, 4, 1, 8, 0.1, 0.1, 1.0) == 0.0
    # its exposed communication (not slowed) counts against the slowest stage's whole
    # micro-batch, compute and communication: 8 x (1.2 x 0.1 + 0.02 - 0.13) and the fill's
    # stages 3 x (0.2 x 0.1 - 0.01) / 3
    assert slow_stage_delay_s(ONE_F_ONE_B, 4, 1, 8, 0.1, 0.13, 1.2, stage_comm_s=0.02) == \
        pytest.approx(8 * 0.01 + 0.01)
    # no slow device (f = 1): no delay, even where the stage is the slowest one itself
    assert slow_stage_delay_s(ONE_F_ONE_B, 4, 1, 8, 0.1, 0.12, 1.0, stage_comm_s=0.02) == 0.0


def test_a_slow_device_under_zero3_waits_at_every_micro_batch():
    """tp 1, ZeRO-3 (a barrier per micro-batch): the slow device's delay is split over the m
    barriers and each adds to the spread's wait there, as §6 charges data parallelism."""
    t_mb = _per_micro_batch_s(dp=8, tp=1, zero=3)
    x = _inputs(dp=8, tp=1, zero=3, global_batch=128, device_cv=0.0132)
    r = evaluate_layouts(x.replace(slow_rank=5, slow_factor=1.2))
    per_barrier = straggler_wait_s(8, 0.0132 * float(r.compute_s) / 4, 0.2 * t_mb)
    assert float(r.straggler_s) == pytest.approx(4 * float(per_barrier), rel=1e-9)


# ------------------------------------------------------------------ overlap off, by hand

def test_overlap_off_exposes_the_whole_data_parallel_exchange_by_hand():
    """dp 4 x tp 2 on one server (dp stride 2): the half-model gradient, in fp32 (DDP under the
    default framework, session 45: torch.autocast, Megatron's --bf16) S = 3.304 GB, all-reduced
    on a ring of 4 in DDP's buckets (1 MiB, then 25 MiB: 1 + ceil((S - 1 MiB) / 25 MiB) = 127 of
    them): 127 x 6 alpha + 2 x 3/4 x S / busbw, all of it after backward, whatever the
    contention; stated bf16 (2 bytes) 64 buckets and half the bytes. ZeRO-1 (Megatron-Core's
    distributed optimizer, buckets of 4e7 parameters, 8e7
    bytes: ceil(S/2 / 8e7) = 21): a reduce-scatter pass of its fp32 main grads, 21 x 3 alpha +
    3/4 x S / busbw, and an all-gather pass, 21 x 3 alpha + 3/4 x S/2 / busbw. ZeRO-3, 4
    micro-batches of 24 one-layer units: every micro-batch gathers
    twice and reduce-scatters once, each pass 24 x 3 alpha + 3/4 x S/2 / busbw."""
    x = _inputs(dp=4, global_batch=64, overlap=False)
    ring = 127 * 6 * ALPHA + 1.5 * S_BYTES / BUSBW
    assert float(evaluate_layouts(x).dp_exposed_s) == pytest.approx(ring, rel=1e-9)
    bf16_ring = 64 * 6 * ALPHA + 1.5 * (S_BYTES / 2) / BUSBW
    assert float(evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).dp_exposed_s) == (
        pytest.approx(bf16_ring, rel=1e-9))
    hidden = float(evaluate_layouts(x.replace(overlap=True)).dp_exposed_s)
    assert hidden < ring
    one_pass = 24 * 3 * ALPHA + 0.75 * (S_BYTES / 2) / BUSBW
    z3 = evaluate_layouts(x.replace(zero=3))
    assert float(z3.dp_exposed_s) == pytest.approx(4 * 3 * one_pass, rel=1e-9)
    z1 = evaluate_layouts(x.replace(zero=1))
    z1_pass = 21 * 3 * ALPHA + 0.75 * (S_BYTES / 2) / BUSBW
    # session 44: the reduce-scatter carries the fp32 main grads (twice the 2-byte gradient,
    # memory.reduce_bytes_per_param_of, docs/model.md §4); the all-gather the bf16 weights
    z1_reduce = 21 * 3 * ALPHA + 0.75 * S_BYTES / BUSBW
    assert float(z1.dp_exposed_s) == pytest.approx(z1_reduce + z1_pass, rel=1e-9)
    # nothing else moves
    on = evaluate_layouts(x.replace(overlap=True))
    off = evaluate_layouts(x)
    for part in ("compute_s", "tp_comm_s", "bubble_s", "p2p_s", "straggler_s"):
        assert float(getattr(off, part)) == float(getattr(on, part)), part


def test_overlap_off_turns_tensor_parallel_overlap_off_too():
    x = _inputs(tp=8, global_batch=16, tp_overlap=True)
    exposed = float(evaluate_layouts(x.replace(tp_overlap=False)).tp_comm_s)
    assert float(evaluate_layouts(x).tp_comm_s) < exposed
    assert float(evaluate_layouts(x.replace(overlap=False)).tp_comm_s) == exposed


# ------------------------------------------------------------------ properties over a grid

def _grid():
    """Every valid layout of 1-16 devices of the GPT shape (tp, pp, dp, ZeRO, schedule,
    micro-batches), with and without jitter, device spread and tp overlap, and the slow rank
    anywhere: flat arrays for one evaluate_layouts call."""
    rows = []
    for tp, pp, dp, zero, sch, v, m, cv, dcv, tpo in itertools.product(
            (1, 2, 4), (1, 2, 4), (1, 2, 4), (0, 1, 3), (NO_PIPELINE, GPIPE, ONE_F_ONE_B,
                                                           INTERLEAVED, ZERO_BUBBLE),
            (1, 2), (1, 4, 8), (0.0, 0.05), (0.0, 0.0132), (False, True)):
        rows.append((tp, pp, dp, zero, sch, v, m, cv, dcv, tpo))
    a = np.array(rows, dtype=float).T
    tp, pp, dp, zero, sch, v, m = (a[i].astype(int) for i in range(7))
    b = np.full(tp.shape, 2)
    gb = dp * b * m
    ok = valid_mask(dp, tp, pp, 1, b, gb, sch, v, 8, GPT["layers"], GPT["heads"],
                    GPT["kv_heads"], GPT["seq_len"]) & ((zero == 0) | (dp > 1))
    rank = (np.arange(tp.size) * 7) % (dp * tp * pp)  # every stage and tensor rank in turn
    cols = dict(tp=tp, pp=pp, dp=dp, zero=zero, schedule=sch, virtual_stages=v, micro_batch=b,
                global_batch=gb, jitter_cv=a[7], device_cv=a[8], tp_overlap=a[9].astype(bool),
                slow_rank=rank)
    return {k: c[ok] for k, c in cols.items()}


def test_a_slower_device_never_speeds_a_layout_up():
    g = _grid()
    assert g["tp"].size > 500
    x = _inputs(**g)
    steps = [evaluate_layouts(x.replace(slow_factor=f)).step_time_s for f in (1.0, 1.05, 1.3, 3.0)]
    for before, after in zip(steps, steps[1:], strict=False):
        assert np.all(after >= before * (1 - 1e-12))
    # 3x slower always costs something, but on one device: it is the typical device there, as
    # in the data-parallel path (one device waits for no one, §6)
    alone = g["dp"] * g["tp"] * g["pp"] == 1
    assert np.all(steps[-1][~alone] > steps[0][~alone])
    assert np.all(steps[-1][alone] == steps[0][alone])


def test_overlap_off_is_never_faster_than_on():
    g = _grid()
    x = _inputs(**g)
    on = evaluate_layouts(x)
    off = evaluate_layouts(x.replace(overlap=False))
    assert np.all(off.step_time_s >= on.step_time_s * (1 - 1e-12))
    many = g["dp"] > 1
    assert np.all(off.step_time_s[many] > on.step_time_s[many])  # a dp group hides something
    # the interleaved schedule's steady-state sends hide behind the next chunk (p2p_overlap)
    sends = (g["schedule"] == INTERLEAVED) & (g["virtual_stages"] > 1) & (g["pp"] > 1)
    assert np.any(~many & sends)
    assert np.all(off.step_time_s[~many & sends] > on.step_time_s[~many & sends])
    nothing = ~many & ~g["tp_overlap"] & ~sends
    assert np.all(off.step_time_s[nothing] == on.step_time_s[nothing])


# ------------------------------------------------------------------ predict: both paths agree

@pytest.fixture(scope="module")
def gpt():
    return resolve_profile(None, "dgx-a100", "gpt-1.7b")


def _flat(profile):
    """The same profile as a parameter count: the data-parallel path."""
    return profile.model_copy(update={"workload": profile.workload.model_copy(
        update={"transformer": None})})


def test_slow_device_agrees_with_the_data_parallel_path_at_tp_1(gpt):
    """At tp = pp = 1 both paths make the slow device late by (f - 1) k t_micro, with the same
    micro-step (pinned, §22): exact without device spread; with it the paths' spreads differ
    only by the optimizer step inside sigma (§22)."""
    scenario = Scenario(devices=[2, 8, 16], micro_batch=4, accumulation=4, slow_device=3,
                        slow_factor=1.3, device_speed_cv=0.0)
    split, flat = predict(gpt, scenario), predict(_flat(gpt), scenario)
    assert split[0].straggler_s == 0.0 == flat[0].straggler_s  # rank 3 of 2 devices: none
    for s, f in zip(split[1:], flat[1:], strict=True):
        assert s.straggler_s == pytest.approx(f.straggler_s, rel=1e-9)
        # k micro-steps of compute (the step's compute less its optimizer step), 0.3 of it
        assert f.straggler_s == pytest.approx(0.3 * (f.compute_s - _optimizer_s(gpt, f)),
                                              rel=1e-9)
    spread = scenario.model_copy(update={"device_speed_cv": None, "straggler_cv": 0.02})
    for s, f in zip(predict(gpt, spread), predict(_flat(gpt), spread), strict=True):
        assert s.straggler_s == pytest.approx(f.straggler_s, rel=0.01)


def _optimizer_s(profile, row):
    """The data-parallel path's optimizer step (ddp: not sharded), colocation-slowed, at the
    bytes DDP's step sweeps (``memory.optimizer_traffic_ratio``: 28 of the estimate's 30 under
    autocast, docs/model.md §4)."""
    from scalesim.model.compute import colocation_factor, colocation_slope
    from scalesim.model.memory import DDP, optimizer_traffic_ratio
    from scalesim.model.sharding import FSDP

    c, w = profile.compute, profile.workload
    _, _, opt = c.alone()
    ratio = float(optimizer_traffic_ratio(DDP, FSDP, w.param_bytes_per_param,
                                          w.grad_bytes_per_param, w.optimizer_bytes_per_param,
                                          w.stated_reduce_bytes(), ranks=row.devices))
    return opt * ratio * colocation_factor(row.devices_per_node, colocation_slope(
        c.colocation_slowdown, c.colocated_devices))


def test_overlap_off_agrees_with_the_data_parallel_path_at_tp_1(gpt):
    """Overlap off exposes each path's whole exchange. With one DDP bucket both paths run the
    same all-reduce of the whole gradient: equal. With DDP's 25 MiB buckets the data-parallel
    path pays one all-reduce latency per bucket more; the steps still agree within 0.5 %."""
    one_bucket = Scenario(devices=[8, 16, 64], micro_batch=4, accumulation=4, overlap=False,
                          bucket_mib=1e5, first_bucket_mib=0)
    for s, f in zip(predict(gpt, one_bucket), predict(_flat(gpt), one_bucket), strict=True):
        assert s.exposed_comm_s == pytest.approx(f.exposed_comm_s, rel=1e-9)
        assert f.exposed_comm_s == pytest.approx(f.comm_total_s, rel=1e-9)
    buckets = one_bucket.model_copy(update={"bucket_mib": 25.0, "first_bucket_mib": 1.0})
    for s, f in zip(predict(gpt, buckets), predict(_flat(gpt), buckets), strict=True):
        assert s.step_time_s == pytest.approx(f.step_time_s, rel=0.005)


def test_predict_takes_each_knob_for_a_split_model(gpt):
    """What used to be refused by name: a slow device and overlap off with tp / pp > 1."""
    base = Scenario(devices=[8, 16], micro_batch=2, accumulation=4,
                    layout=ScenarioLayout(tp=2, pp=2))
    quiet = predict(gpt, base)
    slow = predict(gpt, base.model_copy(update={"slow_device": 7, "slow_factor": 1.5}))
    off = predict(gpt, base.model_copy(update={"overlap": False}))
    noisy = predict(gpt, base.model_copy(update={"straggler_cv": 0.05}))
    for q, s, o, n in zip(quiet, slow, off, noisy, strict=True):
        # rank 7: the last stage at 8 devices (its pace, 0.56 of the compute), the first at
        # 16 (dp 4: above the last stage's pace, 0.35 of it)
        assert s.straggler_s > q.straggler_s + 0.3 * q.compute_s
        assert s.compute_s == q.compute_s and s.exposed_comm_s == q.exposed_comm_s
        assert o.exposed_comm_s > q.exposed_comm_s and o.compute_s == q.compute_s
        assert n.straggler_s > q.straggler_s
        assert s.step_time_s > q.step_time_s and o.step_time_s > q.step_time_s


def test_sweep_takes_the_knobs_through_layouts_row_for_row(gpt):
    base = Scenario(devices=[8, 16], micro_batch=2, accumulation=4, slow_device=5,
                    slow_factor=1.4)
    res = sweep(gpt, base, {"tp": [1, 2], "pp": [1, 2], "overlap": [True, False]})
    c = res.columns
    assert res.size == 16
    for i in range(res.size):
        row = predict(gpt, base.model_copy(update={
            "devices": [int(c["devices"][i])], "overlap": bool(c["overlap"][i]),
            "layout": ScenarioLayout(tp=int(c["tp"][i]), pp=int(c["pp"][i]))}))[0]
        assert c["step_time_s"][i] == pytest.approx(row.step_time_s, rel=1e-9)
        assert c["straggler_s"][i] == pytest.approx(row.straggler_s, rel=1e-9)
        assert c["exposed_comm_s"][i] == pytest.approx(row.exposed_comm_s, rel=1e-9)


def test_remedies_of_a_split_model_with_a_slow_device_and_overlap_off(gpt):
    scenario = Scenario(devices=[16], micro_batch=2, accumulation=4, overlap=False,
                        slow_device=2, slow_factor=1.5, layout=ScenarioLayout(tp=2, pp=2))
    now, ranked = rank_remedies(gpt, scenario, 16)
    by_key = {r.key: r for r in ranked}
    fix = by_key["slow_device"]
    assert fix.applicable and fix.gain > 0.1 and fix.verdict == "remedy"
    overlap = by_key["overlap"]
    assert overlap.applicable and overlap.gain > 0 and overlap.verdict == "remedy"
    assert now.dp == 4 and now.tp == 2 and now.pp == 2


# ------------------------------------------------------------------ the CLI

@pytest.mark.parametrize("knob", [["--slow-device", "3", "--slow-factor", "1.3"],
                                  ["--no-overlap"], ["--straggler-cv", "0.05"]])
@pytest.mark.parametrize("layout", [["--tp", "2"], ["--tp", "2", "--pp", "2"]])
def test_cli_predicts_a_layout_with_each_knob(capsys, knob, layout):
    argv = ["predict", "--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--devices", "8,16",
            "--batch", "2", "--accumulation", "4", *layout]
    code, quiet, err = run_cli(capsys, argv)
    assert code == 0, err
    code, out, err = run_cli(capsys, argv + knob)
    assert code == 0, err
    assert "dp x tp x pp" in out and "Traceback" not in out + err
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("8 ", "16 "))]
    quiet_rows = [line.split() for line in quiet.splitlines()
                  if line.strip().startswith(("8 ", "16 "))]
    assert len(rows) == 2
    for r, q in zip(rows, quiet_rows, strict=True):
        assert float(r[4].replace(",", "")) > float(q[4].replace(",", ""))  # step ms grows
    scenario = next(line for line in out.splitlines() if line.startswith("scenario: "))
    said = {"--no-overlap": "overlap off", "--slow-device": "device 3 computes 1.3x slower",
            "--straggler-cv": "jitter cv 0.05 per micro-step"}[knob[0]]
    assert said in scenario, scenario  # the scenario line names the condition predicted


def test_jitter_on_a_layout_ignores_a_slow_rank_beyond_the_devices():
    """Jitter on the layout path (§16): e_2 x cv x t_mb per micro-batch at tp 2, unchanged by a
    slow rank that is not among the devices."""
    t_mb = _per_micro_batch_s()
    r = evaluate_layouts(_inputs(jitter_cv=0.05, slow_rank=9, slow_factor=2.0))  # rank 9 of 2
    assert float(r.straggler_s) == pytest.approx(4 * E2 * 0.05 * t_mb, rel=1e-6)


def test_the_app_predicts_a_layout_with_a_slow_device_and_overlap_off():
    """The app's controls (overlap toggle, slow device rank and factor) with a layout: the plan's
    rows are predict's, slower than without the knobs, and no control is refused."""
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import default_state, preset_profile, with_profile_defaults

    state = default_state().model_copy(update={"hw": "dgx-a100", "wl": "gpt-1.7b"})
    state = with_profile_defaults(state, preset_profile(state)).model_copy(
        update={"tp": 2, "pp": 2, "dmax": 16, "mb": 2, "acc": 4})
    knobs = state.model_copy(update={"ovl": False, "slow": 3, "sf": 1.3})
    profile = preset_profile(knobs)
    scenario, _ = build_scenario(knobs, profile)
    assert not scenario.overlap and scenario.slow_device == 3 and scenario.layout.pp == 2
    rows, quiet = make_plan(profile, knobs).rows, make_plan(profile, state).rows
    assert rows == predict(profile, scenario)
    assert [r.devices for r in rows] == [r.devices for r in quiet] == [4, 8, 16]
    for r, q in zip(rows, quiet, strict=True):
        assert r.step_time_s > q.step_time_s and r.straggler_s > q.straggler_s
