"""Physical properties over the planner's whole candidate grid (every dp x tp x pp x cp split,
ZeRO stage, micro-batch, schedule, recompute, sequence parallelism and FSDP hybrid shard group)
at fp8 with context parallelism, and over random parameter-server steps: more bandwidth, less
latency or a faster device never slows a layout; a slower or more jittery device never speeds
one up; the parts sum to the step; memory never grows with a higher ZeRO stage, sequence
parallelism or more recompute. docs/model.md §2, §6, §13-§16; validation's parameter-server
exchange."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim import presets
from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.param_server import evaluate_ps
from scalesim.model.step import StepInputs
from scalesim.plan import Setting, candidate_grid, setting_inputs
from scalesim.profiles import load_hardware


@pytest.fixture(scope="module")
def grid():
    shape = presets.TRANSFORMERS["llama3-8b"][0]
    setting = Setting(shape, load_hardware("dgx-h100"), 256, fp8=True)
    layouts = candidate_grid([16, 64], setting, cp_values=(1, 2))
    x = setting_inputs(setting, **layouts).replace(jitter_cv=0.03)
    assert np.any(np.asarray(layouts["cp"]) == 2)
    assert np.any(layouts["shard_group"] < layouts["dp"] * layouts["cp"])  # hybrid rows
    return layouts, x, evaluate_layouts(x)


def _f(x, name):
    return np.asarray(getattr(x, name), dtype=float)


FASTER = {
    "intra bandwidth": lambda x: {"intra_busbw_GBps": _f(x, "intra_busbw_GBps") * 1.5},
    "inter bandwidth": lambda x: {"inter_busbw_GBps": _f(x, "inter_busbw_GBps") * 1.5},
    "intra latency": lambda x: {"intra_latency_s": _f(x, "intra_latency_s") / 2},
    "inter latency": lambda x: {"inter_latency_s": _f(x, "inter_latency_s") / 2},
    "nvls bandwidth": lambda x: {"nvls_busbw_ratio": _f(x, "nvls_busbw_ratio") * 1.2},
    "p2p bandwidth": lambda x: {"p2p_busbw_ratio": _f(x, "p2p_busbw_ratio") * 2},
    "efficiency": lambda x: {"efficiency": _f(x, "efficiency") * 1.05},
    "fp8 and 16-bit peaks": lambda x: {"peak_flops_per_s": _f(x, "peak_flops_per_s") * 1.3,
                                       "peak16_flops_per_s": _f(x, "peak16_flops_per_s") * 1.3},
    "memory bandwidth": lambda x: {"memory_bandwidth_GBps": _f(x, "memory_bandwidth_GBps") * 1.3},
    "no contention": lambda x: {"comm_contention": 0.0},
    "no jitter": lambda x: {"jitter_cv": 0.0},
    "no device spread": lambda x: {"device_cv": 0.0},
    "tp overlap": lambda x: {"tp_overlap": True},
}


@pytest.mark.parametrize("change", sorted(FASTER))
def test_a_faster_system_never_slows_any_planned_layout(grid, change):
    _, x, base = grid
    faster = evaluate_layouts(x.replace(**FASTER[change](x)))
    assert np.all(faster.step_time_s <= base.step_time_s * (1 + 1e-9)), change


@pytest.mark.parametrize("change", [{"slow_factor": 1.5, "slow_rank": 3}, {"jitter_cv": 0.1},
                                    {"overlap": False}, {"loader_samples_per_s": 50.0}])
def test_a_slower_system_never_speeds_any_planned_layout_up(grid, change):
    _, x, base = grid
    slower = evaluate_layouts(x.replace(**change))
    assert np.all(slower.step_time_s >= base.step_time_s * (1 - 1e-9)), change


def test_parts_sum_to_the_step_and_nothing_is_negative(grid):
    _, _, r = grid
    parts = (r.compute_s + r.tp_comm_s + r.cp_comm_s + r.bubble_s + r.p2p_s + r.dp_exposed_s
             + r.straggler_s + r.stall_s)
    np.testing.assert_allclose(parts, r.step_time_s, rtol=1e-12)
    for part in (parts, r.compute_s, r.tp_comm_s, r.cp_comm_s, r.bubble_s, r.p2p_s,
                 r.dp_exposed_s, r.straggler_s, r.memory_bytes):
        assert np.all(np.isfinite(part)) and np.all(part >= 0)
    assert np.all(r.mfu <= 1.0) and np.all(r.fits == (r.memory_bytes <= r.memory_bytes + r.headroom_bytes))


def _pairs(layouts, memory, knob, low, high):
    """(memory at knob=low, memory at knob=high) of the layouts equal in every other field."""
    keys = [k for k in layouts if k != knob]
    rows = {}
    for i in range(len(memory)):
        if layouts[knob][i] in (low, high):
            key = tuple(layouts[k][i].item() for k in keys)
            rows.setdefault(key, {})[layouts[knob][i].item()] = memory[i]
    pairs = [(v[low], v[high]) for v in rows.values() if low in v and high in v]
    assert pairs
    return np.array(pairs)


@pytest.mark.parametrize("knob, low, high", [("zero", 0, 1), ("zero", 1, 2), ("zero", 2, 3),
                                             ("sequence_parallel", False, True),
                                             ("recompute", 0, 1), ("recompute", 1, 2),
                                             ("recompute", 0, 2)])
def test_sharding_sequence_parallelism_and_recompute_never_add_memory(grid, knob, low, high):
    # Full recompute too since session 38: its rerun layer's working set was charged on top of
    # that layer's kept input, which the working set holds (docs/model.md §4, §16), so a stage
    # of one layer with one micro-batch in flight (pp = L) held 2sbh more than without recompute
    layouts, _, r = grid
    pairs = _pairs(layouts, r.memory_bytes, knob, low, high)
    assert np.all(pairs[:, 1] <= pairs[:, 0] * (1 + 1e-12))


def test_parameter_server_steps_never_slow_with_faster_links():
    rng = np.random.default_rng(5)
    n = 20000
    g = rng.choice([1, 2, 4, 8], n)
    p = g * rng.choice([1, 2, 3, 8, 64], n)
    inp = StepInputs(
        devices=p, devices_per_node=g, micro_batch=rng.integers(1, 64, n), accumulation=1,
        overhead_s=1e-3, per_sample_s=10 ** rng.uniform(-4, -1, n), optimizer_step_s=0.0,
        backward_fraction=2 / 3, params=10 ** rng.uniform(5, 10, n), wire_bytes_per_param=4,
        intra_latency_s=10 ** rng.uniform(-7, -4, n), intra_busbw_GBps=10 ** rng.uniform(0, 3, n),
        inter_latency_s=10 ** rng.uniform(-6, -3, n),
        inter_busbw_GBps=10 ** rng.uniform(-0.5, 2.5, n), overlap=rng.random(n) < 0.8,
        jitter_cv=0.05, device_cv=0.0132, comm_contention=rng.choice([0.0, 0.159, 1.0], n))
    host_lat, host_bw = 10 ** rng.uniform(-6, -4, n), 10 ** rng.uniform(0.5, 1.5, n)
    aggregate, on_host = rng.random(n) < 0.7, rng.random(n) < 0.3

    def step(x=inp, lat=host_lat, bw=host_bw, imbalance=1.5):
        return evaluate_ps(x, lat, bw, imbalance, aggregate, on_host).step_time_s

    base = step()
    assert np.all(np.isfinite(base)) and np.all(base > 0)
    for faster in (step(inp.replace(intra_busbw_GBps=inp.intra_busbw_GBps * 2)),
                   step(inp.replace(inter_busbw_GBps=inp.inter_busbw_GBps * 2)),
                   step(inp.replace(intra_latency_s=inp.intra_latency_s / 2)),
                   step(inp.replace(inter_latency_s=inp.inter_latency_s / 2)),
                   step(bw=host_bw * 2), step(lat=host_lat / 2), step(imbalance=1.0)):
        assert np.all(faster <= base * (1 + 1e-9))


def test_full_recompute_holds_the_kept_inputs_and_one_rerun_layer_hand_computed():
    """Llama 3 8B (s 8,192, h 4,096, a 32, kv 8, gated f 14,336, flash attention), one
    sequence, no split: a layer's activations are 36·s·h bytes (norm and matmul inputs and
    dropout masks 10, Q 2, K and V 2·2·8/32 = 1, the output projection's input 2, the gated MLP
    6·14,336/4,096 = 21), of which full recompute keeps its 2·s·h input. Without recompute: 32
    layers × 36·s·h; with it: 31 kept inputs + one layer rerun whole (36·s·h, its own input
    among them), so the difference is 34·s·h·31 = 35,366,371,328 bytes (one 2·s·h more before
    session 38, the rerun layer's input counted twice)."""
    from scalesim import presets
    from scalesim.model.layout_step import evaluate_layouts
    from scalesim.plan import Setting, setting_inputs
    from scalesim.profiles import load_hardware

    setting = Setting(presets.TRANSFORMERS["llama3-8b"][0], load_hardware("dgx-h100"), 8)
    held = {rec: float(evaluate_layouts(setting_inputs(
        setting, dp=8, tp=1, pp=1, cp=1, zero=3, micro_batch=1, schedule=0, virtual_stages=1,
        recompute=rec, sequence_parallel=False, shard_group=8)).activation_bytes)
        for rec in (0, 2)}
    assert held[0] - held[2] == pytest.approx(34 * 8192 * 4096 * 31, rel=1e-12)
