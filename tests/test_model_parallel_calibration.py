"""Calibration for model-parallel runs: the block fit, the send/recv fit, the profile section,
the planner reading a calibrated profile, the Megatron-split block, and a real 2-rank
tensor-parallel run on CPU against the layout model's prediction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scalesim.calibration import options
from scalesim.calibration.assemble import model_parallel_section
from scalesim.calibration.block_fit import (
    Block,
    block_from_args,
    core_terms,
    fit_block,
    layer_terms,
)
from scalesim.calibration.link_fit import fit_send_recv
from scalesim.calibration.results import BlockResult, BlockTiming

from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout
from scalesim.model import transformer as tf
from scalesim.plan import (
    DEFAULT_MATMUL_EFFICIENCY,
    calibrated_hardware,
    evaluate_layout,
    plan,
    setting_from_profile,
)
from scalesim.profiles import default_profile, parse_profile
from scalesim.schemas import MessagePoint, TransformerShape

BLOCK = Block(hidden=256, heads=4, ffn_hidden=1024, seq_len=128, micro_batch=1)


def test_layer_terms_are_the_layer_flops_and_scale_with_the_shard():
    a, c = layer_terms(BLOCK, [1, 2, 4])
    tokens = BLOCK.micro_batch * BLOCK.seq_len
    weights = float(tf.layer_matmul_weights(256, 4, 4, 1024, False))
    # forward 2W + 4sh per token (docs/model.md §11), backward twice the forward
    assert a[0] == pytest.approx(3 * tokens * (2 * weights + 4 * 128 * 256), rel=1e-9)
    assert a[1] == pytest.approx(a[0] / 2, rel=1e-9) and a[2] == pytest.approx(a[0] / 4)
    # bytes shrink more slowly than FLOPs: the norms and activations are not split
    assert c[0] > c[1] > c[2] and c[1] / c[0] > 0.5


def test_fit_block_recovers_the_rates_and_reports_the_error():
    a, c = layer_terms(BLOCK, [1, 2, 4])
    flops, bandwidth = 4e11, 9e11
    fit = fit_block(BLOCK, [1, 2, 4], a / flops + c / bandwidth)
    assert fit.flops_per_s == pytest.approx(flops, rel=1e-6)
    assert fit.memory_bytes_per_s == pytest.approx(bandwidth, rel=1e-6)
    assert fit.rel_rmse < 1e-9
    noisy = (a / flops + c / bandwidth) * np.array([1.1, 0.9, 1.0])
    assert 0.01 < fit_block(BLOCK, [1, 2, 4], noisy).rel_rmse < 0.2
    with pytest.raises(ScalesimError):
        fit_block(BLOCK, [1, 2], [0.01, -1.0])
    # CI's busy 2-core machine timed the tiny block 10.2, 6.09, 4.16 ms at tp 1, 2, 4: the
    # times fall 2.5x where the work falls 4x, so only bytes fit; the error gives both ratios
    with pytest.raises(ScalesimError, match=r"work shrinks 4x but the time 2\.5x.*--threads"):
        fit_block(BLOCK, [1, 2, 4], [10.2e-3, 6.09e-3, 4.16e-3])


def test_efficiency_falls_with_smaller_shards_under_the_fit():
    """A device with finite memory bandwidth reaches a lower share of its matmul rate on
    smaller shards: the roofline's fall that the calibration measures."""
    a, c = layer_terms(BLOCK, [1, 2, 4])
    t = a / 4e11 + c / 2e11
    achieved = (a / t) / 4e11
    assert achieved[0] > achieved[1] > achieved[2]


def test_block_flags_and_their_errors():
    args = options.build_parser().parse_args(["--block-hidden", "512", "--block-tp", "1,2,3,8"])
    block = block_from_args(args)
    assert (block.heads, block.ffn_hidden, block.seq_len) == (8, 2048, 512)
    assert block.tp_degrees(args.block_tp) == [1, 2, 8]
    assert block_from_args(options.build_parser().parse_args([])) is None
    with pytest.raises(ScalesimError, match="not divisible by --block-heads 3"):
        block_from_args(options.build_parser().parse_args(["--block-hidden", "256",
                                                           "--block-heads", "3"]))
    with pytest.raises(ScalesimError, match="--block-model needs --block-hidden"):
        block_from_args(options.build_parser().parse_args(["--block-model", "m:f"]))
    with pytest.raises(ScalesimError, match="none divides"):
        block_from_args(options.build_parser().parse_args(["--block-hidden", "64",
                                                           "--block-tp", "3"]))


def _sends(sizes, times):
    return [MessagePoint(op="send_recv", purpose="pp", ranks=2, size_bytes=float(s),
                         time_s=float(t), model_s=float(t)) for s, t in zip(sizes, times, strict=True)]


def test_send_recv_fit():
    """The collectives' fit (fit_level) with one step of the whole message recovers alpha and
    the bandwidth of exact timings; one size, or times that do not grow, give no fit."""
    sizes = np.array([1e4, 1e5, 1e6, 4e6])
    latency, bandwidth, rmse = fit_send_recv(_sends(sizes, 5e-5 + sizes / 2e9))
    assert latency == pytest.approx(5e-5, rel=1e-6) and bandwidth == pytest.approx(2.0, rel=1e-6)
    assert rmse < 1e-9
    assert fit_send_recv(_sends([1e4], [1e-4])) is None
    assert fit_send_recv(_sends([1e4, 1e5], [2e-4, 1e-4])) is None
    # the same rows through fit_level give the same numbers (one fit for links and sends)
    from scalesim.calibration.link_fit import fit_level

    level = fit_level(_sends(sizes, 5e-5 + sizes / 2e9))["send_recv"]
    assert (level["latency_s"], level["busbw_GBps"]) == (latency, bandwidth)


def _block_result(times_s, tps=(1, 2, 4)) -> BlockResult:
    return BlockResult(module="builtin", hidden=256, heads=4, ffn_hidden=1024, seq_len=128,
                       micro_batch=1, element_bytes=2.0, flash_attention=True,
                       points=[BlockTiming(tp=t, forward_s=x / 3, backward_s=2 * x / 3,
                                           time_s=x, spread_s=0.0, repeats=5)
                               for t, x in zip(tps, times_s, strict=True)])


def _section(device="NVIDIA H100 80GB HBM3", flops=4e14, bandwidth=2.5e12, on_gpu=True):
    block = Block(256, 4, 1024, 128, 1, flash_attention=True)
    a, c = layer_terms(block, [1, 2, 4])
    messages = [MessagePoint(op="send_recv", purpose="pp", ranks=2, size_bytes=s,
                             time_s=1e-5 + s / 1e11, model_s=1e-5 + s / 1e11)
                for s in (16384.0, 32768.0, 65536.0)]
    return model_parallel_section(_block_result(a / flops + c / bandwidth), messages, device,
                                  "bf16", on_gpu)


def test_profile_section_efficiency_against_the_datasheet_peak():
    mp = _section()
    assert mp.sustained_tflops == pytest.approx(400, rel=1e-6)
    assert mp.memory_bandwidth_GBps == pytest.approx(2500, rel=1e-6)
    assert mp.peak_tflops == pytest.approx(989, rel=0.01)
    assert mp.matmul_efficiency == pytest.approx(400 / mp.peak_tflops)
    assert [p.tp for p in mp.points] == [1, 2, 4] and mp.rel_rmse < 1e-6
    assert mp.p2p_bandwidth_GBps == pytest.approx(100, rel=1e-6)
    assert mp.p2p_latency_s == pytest.approx(1e-5, rel=1e-6)
    assert "layout predictions charge pipeline sends inside a server with it" in mp.source
    cpu = _section(device="CPU: some cpu", flops=5e10, bandwidth=5e9, on_gpu=False)
    assert cpu.peak_tflops is None and cpu.matmul_efficiency is None
    assert "no datasheet peak" in cpu.source and "poorly" not in cpu.source
    a, c = layer_terms(Block(256, 4, 1024, 128, 1, flash_attention=True), [1, 2, 4])
    bad = model_parallel_section(_block_result((a / 4e14 + c / 2.5e12) * [3.0, 1.0, 0.3]), [],
                                 "NVIDIA H100 80GB HBM3", "bf16", True)
    assert bad.rel_rmse > 0.25 and "explains these timings poorly" in bad.source


def test_an_a100_block_fit_runs_the_attention_core_as_the_planner_does():
    """On an A100 the planner runs the attention core at min(0.656, efficiency) of the peak
    (FlashAttention-2's rate, docs/model.md §13). The block fit ran it at the matmuls' rate, so
    a block timed where the matmuls sustain 0.75 was fitted at a blend (0.741 here), and the
    planner, running the core at 0.656 and the rest at the blend, no longer reproduced the
    block (session 34's audit: +1.7 % at the calibrated sequence, +5.6 % at 8,192 tokens). The
    fit now separates the core and recovers 0.75 and the byte rate exactly."""
    from scalesim.presets import ATTENTION_ON_A100_EFFICIENCY

    block = Block(256, 4, 1024, 128, 1, flash_attention=True)
    tps = [1, 2, 4]
    peak = 312e12  # the A100's dense bf16 peak
    core_rate = peak * ATTENTION_ON_A100_EFFICIENCY
    a, c = layer_terms(block, tps)
    core = core_terms(block, tps)
    assert np.all((core > 0) & (core < a))
    for eta in (0.75, 0.6):  # above the core's share, then below it (the core at eta)
        flops, bandwidth = eta * peak, 1.5e12
        times = (a - core) / flops + core / min(core_rate, flops) + c / bandwidth
        mp = model_parallel_section(_block_result(times), [], "NVIDIA A100-SXM4-80GB", "bf16",
                                    True)
        assert mp.matmul_efficiency == pytest.approx(eta, rel=1e-6)
        assert mp.memory_bandwidth_GBps == pytest.approx(1500, rel=1e-6)
        assert [p.model_s for p in mp.points] == pytest.approx(list(times), rel=1e-9)
        assert "the attention core at min(0.656, efficiency) of it" in mp.source
        blended = fit_block(block, tps, times).flops_per_s / peak  # the core at F
        assert blended < 0.749 if eta == 0.75 else blended == pytest.approx(eta, rel=1e-6)
    # an H100's vendor kernel runs at the matmuls' rate: no core rate of its own
    assert "attention core" not in _section().source


def test_an_a100_block_fit_refuses_a_core_fit_the_spread_leaves_open():
    """The fit returned with the core at its own rate is the one whose 1/F must clear two
    standard errors: a spread the blended fit (the core at F) just clears, 10 % of each time
    over 5 rounds, leaves the matmuls' 1/F of the core fit within two of zero, so the fit is
    refused rather than returned (it was returned, checked against the blended fit only)."""
    from scalesim.presets import ATTENTION_ON_A100_EFFICIENCY

    block = Block(256, 4, 1024, 128, 1, flash_attention=True)
    tps = [1, 2, 4]
    peak = 312e12
    core_rate = peak * ATTENTION_ON_A100_EFFICIENCY
    a, c = layer_terms(block, tps)
    core = core_terms(block, tps)
    times = (a - core) / (0.75 * peak) + core / core_rate + c / 1.5e12
    spread, repeats = 0.10 * times, [5, 5, 5]
    assert fit_block(block, tps, times, spread, repeats).flops_per_s > core_rate  # blended: clears
    with pytest.raises(ScalesimError, match="spread too much to fit"):
        fit_block(block, tps, times, spread, repeats, core_flops_per_s=core_rate)
    # a tighter spread clears for both, and the core fit recovers the rate
    fit = fit_block(block, tps, times, 0.05 * times, repeats, core_flops_per_s=core_rate)
    assert fit.flops_per_s == pytest.approx(0.75 * peak, rel=1e-6)


def _profile_with(section, device_name=None):
    data = default_profile().model_dump(mode="json")
    data["hardware"]["peak_tflops"] = None
    if device_name is not None:  # a calibrated CPU: no datasheet bandwidth either
        data["hardware"].update(device_name=device_name, memory_bandwidth_GBps=None)
    if section is not None:
        data["model_parallel"] = section.model_dump(mode="json")
    return parse_profile(data)


def test_old_profiles_load_and_plan_with_the_published_default():
    profile = default_profile()
    assert profile.model_parallel is None
    hardware, efficiency, note = calibrated_hardware(profile)
    assert efficiency == DEFAULT_MATMUL_EFFICIENCY and "published default" in note
    assert hardware.peak_tflops and hardware.memory_bandwidth_GBps


def test_plan_reads_the_calibrated_efficiency_and_bandwidth():
    shape = TransformerShape(layers=8, hidden=1024, heads=16, seq_len=1024, vocab=32000)
    fast, slow = (_profile_with(_section(flops=f)) for f in (6e14, 2e14))
    hw_fast, eff_fast, note = calibrated_hardware(fast)
    hw_slow, eff_slow, _ = calibrated_hardware(slow)
    assert eff_fast == pytest.approx(600 / hw_fast.peak_tflops)
    # the fitted byte rate is the layer kernels'; the optimizer sweep keeps the device's
    # memory bandwidth (the default profile's A100 40GB: 1,555 GB/s by its datasheet)
    assert hw_fast.kernel_bandwidth_GBps == pytest.approx(2500, rel=1e-6)
    assert hw_fast.memory_bandwidth_GBps == pytest.approx(1555, rel=1e-6)
    assert "calibrated: matmul efficiency" in note
    best_fast = plan(shape, hw_fast, [8], 64, efficiency=eff_fast, top=1)[0]
    best_slow = plan(shape, hw_slow, [8], 64, efficiency=eff_slow, top=1)[0]
    assert best_fast.breakdown_s["compute_s"] < best_slow.breakdown_s["compute_s"]
    # the scalar layout evaluation takes the profile too
    layout = ParallelLayout(dp=2, tp=4, micro_batch=4, global_batch=64)
    step = {f: float(evaluate_layout(setting_from_profile(p, shape, 64), layout).compute_s)
            for f, p in (("fast", fast), ("slow", slow))}
    assert step["fast"] < step["slow"]
    # without a datasheet peak (a CPU) the sustained rate stands in for it
    cpu = _profile_with(_section(device="CPU: x", flops=5e10, bandwidth=5e9, on_gpu=False),
                        "CPU: x")
    hw_cpu, eff_cpu, note = calibrated_hardware(cpu)
    assert eff_cpu == 1.0 and hw_cpu.peak_tflops == pytest.approx(0.05, rel=1e-6)
    assert "no datasheet peak" in note
    # nor a datasheet bandwidth: the fitted byte rate serves the optimizer sweep too
    assert hw_cpu.memory_bandwidth_GBps == hw_cpu.kernel_bandwidth_GBps == pytest.approx(5)


def test_a_fit_above_the_datasheet_peak_is_clipped_and_named():
    """A block timed too small on a fast GPU fits a sustained rate above the peak (H200,
    block at batch 2: 1,149 TFLOP/s of 989, docs/calibration.md): efficiency 1, never more,
    and the note says to time a larger block."""
    hw, eff, note = calibrated_hardware(_profile_with(_section(flops=1.149e15)))
    assert eff == 1.0 and "above the datasheet peak" in note and "--block-batch" in note
    hw, eff, note = calibrated_hardware(_profile_with(_section(flops=8.0e14)))
    assert eff < 1.0 and "above the datasheet peak" not in note


def test_kernel_bandwidth_moves_the_layers_not_the_optimizer():
    """The layout model's kernel byte rate slows the layers' memory-bound work only: the
    optimizer sweep (params x (2*4 + 4 + 2*8) bytes / memory bandwidth) is unchanged."""
    from scalesim.model.compute import optimizer_roofline_s
    from scalesim.model.layout_step import evaluate_layouts
    from scalesim.plan import Setting, setting_inputs

    shape = TransformerShape(layers=2, hidden=1024, heads=16, seq_len=1024, vocab=32000)
    hw = default_profile().hardware.model_copy(update={"peak_tflops": 312.0,
                                                       "memory_bandwidth_GBps": 1555.0})
    base = Setting(shape, hw, 1, 0.7, param_bytes_per_param=4, grad_bytes_per_param=4,
                   optimizer_bytes_per_param=8)
    slow = base.replace(hardware=hw.model_copy(update={"kernel_bandwidth_GBps": 500.0}))
    a, b = (evaluate_layouts(setting_inputs(s)) for s in (base, slow))
    assert float(b.compute_s) > float(a.compute_s)
    optimizer_s = float(optimizer_roofline_s(shape.param_count(), 4, 4, 8, 1555.0))
    assert optimizer_s == pytest.approx(shape.param_count() * 28 / 1555e9)
    # the same optimizer share in both: the kernels at 500 GB/s rather than 1555 explain the gap
    c = evaluate_layouts(setting_inputs(base.replace(hardware=hw.model_copy(
        update={"memory_bandwidth_GBps": 500.0}))))
    assert float(c.compute_s) - float(b.compute_s) == pytest.approx(
        optimizer_s * (1555.0 / 500.0 - 1.0), rel=1e-6)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "scalesim.cli.main", "plan", *args],
                          capture_output=True, text=True, cwd=cwd, check=False)


def test_plan_cli_profile(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(_profile_with(_section(flops=5e14)).model_dump_json())
    ok = _cli("--model", "gpt-1.7b", "--profile", str(path), "--devices", "8",
              "--global-batch", "64", "--top", "2")
    assert ok.returncode == 0, ok.stderr
    # line 0: "workload: gpt-1.7b: ...", the planned model
    assert ok.stdout.splitlines()[1].startswith("calibrated: matmul efficiency 0.506")
    both = _cli("--model", "gpt-1.7b", "--profile", str(path), "--hardware", "dgx-a100",
                "--devices", "8", "--global-batch", "64")
    assert both.returncode == 2 and "not both" in both.stderr
    assert len(both.stderr.strip().splitlines()) == 1


def test_sharded_blocks_add_up_to_the_whole_block():
    """Megatron's split: the two tp=2 shards' partial outputs (before the all-reduce) add up to
    the unsplit block's, with the weights split by columns and rows."""
    torch = pytest.importorskip("torch")
    from scalesim.calibration.models import ShardedBlock

    torch.manual_seed(0)
    h, a, f = 64, 4, 256
    whole = ShardedBlock(h, a, f, 1)
    halves = [ShardedBlock(h, a, f, 2) for _ in range(2)]
    with torch.no_grad():
        for r, half in enumerate(halves):
            for name in ("norm1", "norm2"):
                getattr(half, name).load_state_dict(getattr(whole, name).state_dict())
            cols = slice(r * h // 2, (r + 1) * h // 2)
            qkv_w = whole.qkv.weight.view(3, h, h)[:, cols].reshape(3 * h // 2, h)
            half.qkv.weight.copy_(qkv_w)
            half.qkv.bias.copy_(whole.qkv.bias.view(3, h)[:, cols].reshape(-1))
            half.proj.weight.copy_(whole.proj.weight[:, cols])
            mlp = slice(r * f // 2, (r + 1) * f // 2)
            half.fc1.weight.copy_(whole.fc1.weight[mlp])
            half.fc1.bias.copy_(whole.fc1.bias[mlp])
            half.fc2.weight.copy_(whole.fc2.weight[:, mlp])
    x = torch.randn(2, 16, h)

    def attention_out(block, x):
        b, s, _ = x.shape
        q, k, v = block.qkv(block.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, s, block.heads, block.head_dim).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return block.proj(y.transpose(1, 2).reshape(b, s, -1))

    with torch.no_grad():
        assert torch.allclose(attention_out(whole, x),
                              sum(attention_out(half, x) for half in halves), atol=1e-5)
        mlp_whole = whole.fc2(torch.nn.functional.gelu(whole.fc1(x)))
        mlp_split = sum(half.fc2(torch.nn.functional.gelu(half.fc1(x))) for half in halves)
        assert torch.allclose(mlp_whole, mlp_split, atol=1e-5)
    assert sum(p.numel() for p in halves[0].parameters()) < sum(
        p.numel() for p in whole.parameters())


def test_a_users_block_factory_gets_the_shard_shape(monkeypatch):
    torch = pytest.importorskip("torch")
    from scalesim.calibration.models import block_module

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    shard = block_module("calib_factories:mlp_block", 64, 4, 256, 32, 4)
    assert shard[1].out_features == 64 and shard(torch.randn(1, 32, 64)).shape == (1, 32, 64)
    with pytest.raises(ScalesimError, match="must return a torch.nn.Module, not str"):
        block_module("calib_factories:not_a_block", 64, 4, 256, 32, 2)
    with pytest.raises(ScalesimError, match="has no attribute"):
        block_module("calib_factories:nothing", 64, 4, 256, 32, 2)


# ------------------------------------------------------------------ real 2-rank run (gloo)

# What the ratio measured / predicted reads on the project's 2-core machine, nothing changed in
# the model or the check: 0.77-1.50 over 22 runs at load 2-6 (session 41), 1.607 in an idle
# clean-clone CI and 0.6965 at load 9-12 (session 42), 0.607-1.902 over 22 runs at load 0.3-20
# with 1.89 and 1.50 near idle (session 43). Why (docs/calibration.md, "Why the ratio drifts"):
# over loopback a gloo call costs what it takes to get its threads back onto a core, 0.2-2 ms in
# the calibration's back-to-back loop but 0.4-10 ms right after compute in the run, and which
# of the two a round sees is the moment's, not the model's. Timing the calibration's calls
# after compute narrowed 26 runs to 0.75-1.07 and then read 0.46 and 0.49: not kept. So the
# band holds that measured spread (0.46-1.90) with room, as the pipeline check drops its ratio
# for the same reason (tests/test_pipeline_sends.py): it catches a prediction off by more than
# 2.5x (compute fitted at the wrong shard, the collectives left out), not a factor 2 in the
# collectives, whose cost on gloo is the wake-up, not the bytes.
RATIO_BOUNDS = (0.4, 2.5)


@pytest.mark.slow
def test_tensor_parallel_run_matches_the_calibrated_prediction(tmp_path):
    from torchrun_check import run_check

    check = run_check(tmp_path, "tp_check", "--rounds", "24", "--steps", "3")
    # the check means something: communication is a real share of the predicted step
    assert check["comm_share"] > 0.05, check
    assert check["block_fit_rel_rmse"] < 0.5, check
    # the ranks' jitter is measured and the prediction charges its waits at the all-reduces
    assert check["jitter_cv"] > 0 and check["predicted_wait_s"] > 0, check
    assert check["predicted_s"] == pytest.approx(
        check["predicted_compute_s"] + check["predicted_comm_s"] + check["predicted_wait_s"])
    low, high = RATIO_BOUNDS
    assert low <= check["ratio"] <= high, check


def test_tp_check_reads_flat_all_reduce_times_as_latency():
    """On an idle machine gloo's loopback all-reduce can cost the same ~2 ms at every size
    (a wake-up floor): the alpha-beta fit has no bandwidth to find, so the check charges the
    measured time per call as latency (2 ring steps on 2 ranks) instead of failing."""
    import numpy as np
    from scalesim.calibration import tp_check

    args = tp_check.build_parser().parse_args(["--rounds", "3", "--steps", "3"])
    flat_s = 0.002
    rounds = [{"block_tp1": 0.0096, "block_tp2": 0.0043, "block_tp4": 0.0024,
               **{f"ar_{s}": flat_s for s in tp_check.SIZES},
               "run": 0.045, "solo_steps": [0.020, 0.021, 0.019], "ar_after_compute": flat_s}
              for _ in range(3)]
    from scalesim.model.tensor_parallel import collectives_per_layer
    from scalesim.model.transformer import RECOMPUTE_NONE

    check = tp_check.summarise(args, [rounds, rounds], np)
    calls = args.layers * float(collectives_per_layer(RECOMPUTE_NONE))  # 2 forward + 2 backward
    assert check["predicted_comm_s"] / calls == pytest.approx(flat_s, rel=1e-3), check


def test_block_batch_default_fills_a_gpu_block_with_enough_tokens():
    """On a GPU the block holds GPU_BLOCK_TOKENS tokens unless --block-batch says otherwise (a
    smaller one was launch-bound on an H200, docs/calibration.md); on a CPU one sequence."""
    from scalesim.calibration.options import GPU_BLOCK_TOKENS, build_parser, resolve_defaults

    def resolved(argv, on_gpu):
        return resolve_defaults(build_parser().parse_args(argv), on_gpu).block_batch

    assert GPU_BLOCK_TOKENS == 65536
    assert resolved(["--block-hidden", "4096"], on_gpu=True) == 128  # 65,536 / 512
    assert resolved(["--block-hidden", "4096", "--block-seq", "3000"], on_gpu=True) == 22
    assert resolved(["--block-hidden", "4096"], on_gpu=False) == 1
    assert resolved(["--block-hidden", "4096", "--block-batch", "2"], on_gpu=True) == 2


def test_a_block_out_of_memory_names_the_flags_that_shrink_it():
    """The GPU default block (GPU_BLOCK_TOKENS) can be too large for a small GPU's memory; the
    error says which flags shrink it and how many tokens it held."""
    import torch
    from scalesim.calibration.block_fit import Block
    from scalesim.calibration.block_phase import _failure

    block = Block(hidden=8192, heads=64, ffn_hidden=32768, seq_len=2048, micro_batch=32)
    text = _failure(torch.OutOfMemoryError("CUDA out of memory"), 1, block)
    assert "ran out of memory" in text and "--block-batch" in text and "65,536 tokens" in text
