"""The attention kernel's own rate (docs/model.md §13, attention kernel): FlashAttention-2-class
kernels sustain about 0.35 of an H100's 16-bit peak (Shah et al. 2024; pytorch/pytorch#142132),
the vendor kernels (cuDNN through Transformer Engine, FlashAttention-3) the matmuls' efficiency
there; on an A100 both run FlashAttention-2 at its paper's forward and backward maxima (0.656);
elsewhere the matmuls' efficiency."""

import math

import pytest
from test_recompute_early_stop import SMALL

from scalesim.attention_kernel import FLASH2_KERNEL, VENDOR_KERNEL
from scalesim.errors import ScalesimError
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.transformer import RECOMPUTE_NONE
from scalesim.presets import (
    ATTENTION_ON_A100_EFFICIENCY,
    FLASH2_ON_HOPPER_EFFICIENCY,
    attention_efficiency_of,
    flash2_slower_than_vendor,
)
from scalesim.shipped import validation_path
from scalesim.validate_parallel import case_inputs, load_parallel_cases


def test_kernel_table():
    assert attention_efficiency_of("H100 80GB", FLASH2_KERNEL) == FLASH2_ON_HOPPER_EFFICIENCY
    assert attention_efficiency_of("NVIDIA H200", FLASH2_KERNEL) == 0.35
    assert attention_efficiency_of("GH200 96GB", FLASH2_KERNEL) == 0.35
    assert attention_efficiency_of("H100 80GB", VENDOR_KERNEL) is None
    # A100: 73 % of the peak forward, 63 % backward (Dao 2023), the backward 2.5x the FLOPs:
    # 3.5 / (1/0.73 + 2.5/0.63) = 3.5 / (1.369863 + 3.968254) = 0.655662, for either kernel
    for kernel in (FLASH2_KERNEL, VENDOR_KERNEL):
        assert attention_efficiency_of("A100 80GB", kernel) == pytest.approx(0.655662, abs=1e-6)
    assert attention_efficiency_of("GB200", FLASH2_KERNEL) is None
    assert attention_efficiency_of("V100", VENDOR_KERNEL) is None
    # switching kernels is a remedy where the vendor kernel is faster by a published figure
    assert flash2_slower_than_vendor("H100 80GB") and flash2_slower_than_vendor("GH200")
    assert not flash2_slower_than_vendor("A100-SXM4 40GB")
    assert not flash2_slower_than_vendor("GB200")
    with pytest.raises(ScalesimError, match="unknown attention kernel 'flash9'; known: flash2"):
        attention_efficiency_of("H100", "flash9")


def test_attention_core_at_its_own_efficiency_by_hand():
    # per layer and micro-batch of 2 x 1024 tokens, s 1024, h 1024, tp 1: scores and scores x V
    # are 4 * 2048 * 1024 * 1024 = 8,589,934,592 FLOP, 8.589934592e-5 s at 1e14 FLOP/s. With
    # fused attention and no recompute the layer runs the core once forward and 2.5 times in
    # backward (5 matmuls against 2); at half the efficiency each takes twice as long:
    # + 3.5 x 8.589934592e-5 s per layer and micro-batch, x 4 layers x 4 micro-batches.
    base = {**SMALL, "recompute": RECOMPUTE_NONE}
    same = evaluate_layouts(LayoutInputs(**base))
    half = evaluate_layouts(LayoutInputs(**base, attention_efficiency=0.5))
    assert float(half.compute_s) - float(same.compute_s) == pytest.approx(
        3.5 * 8.589934592e-5 * 16, rel=1e-9)
    # NaN (and None) means "the matmuls' efficiency": the same step as leaving it out
    nan = evaluate_layouts(LayoutInputs(**base, attention_efficiency=math.nan))
    assert float(nan.compute_s) == pytest.approx(float(same.compute_s), rel=1e-12)
    # vectorised: one call, both values
    both = evaluate_layouts(LayoutInputs(**base, attention_efficiency=[math.nan, 0.5]))
    assert [float(v) for v in both.compute_s] == pytest.approx(
        [float(same.compute_s), float(half.compute_s)], rel=1e-12)


def test_validation_default_by_stack():
    """llm-foundry and torchtitan on H100 get the FlashAttention-2 rate (flagged); NeMo /
    Megatron-Bridge on H100 (Transformer Engine) keep the matmuls'; llm-foundry's 2023 A100 runs
    get the A100's FlashAttention-2 figure (flagged), Narayanan's 2021 ones (no fused attention)
    none."""
    cases = load_parallel_cases(validation_path("parallel_cases.json"))
    seen = set()
    for case in cases:
        flags: list[str] = []
        x, _ = case_inputs(case, flags)
        hopper = "H100" in case.hardware.gpu
        te = "NeMo" in case.source or "Megatron" in case.source
        fused = not case.source.startswith("Narayanan")  # 2021: before flash attention
        a100 = "A100" in case.hardware.gpu
        expected = (0.35 if hopper and not te else ATTENTION_ON_A100_EFFICIENCY if a100 and fused
                    else None)
        assert x.attention_efficiency == expected, case.id
        assert any("attention kernel not stated" in f for f in flags) == (expected is not None)
        seen.add((hopper, te))
    assert {(True, False), (True, True), (False, True), (False, False)} <= seen


def _best_tokens_per_s(capsys, *flags):
    import json

    from cli_harness import run_cli

    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--devices", "8",
                                      "--global-batch", "32", "--top", "1", "--json", *flags])
    assert code == 0, err
    return json.loads(out)["layouts"][0]["tokens_per_s"]


def test_plan_attention_kernel_slows_long_sequences_on_hopper_only(capsys):
    """flash2 on an H100 at 8,192 tokens: the attention core at 0.35 of the peak instead of the
    matmuls' 0.73 (the planner's default efficiency) costs throughput; on an A100 it changes
    nothing (both kernels run FlashAttention-2 there)."""
    h100 = ["--hardware", "dgx-h100", "--seq-len", "8192"]
    vendor = _best_tokens_per_s(capsys, *h100)
    flash2 = _best_tokens_per_s(capsys, *h100, "--attention-kernel", "flash2")
    assert flash2 < 0.95 * vendor
    a100 = ["--hardware", "dgx-a100", "--seq-len", "8192"]
    assert _best_tokens_per_s(capsys, *a100, "--attention-kernel", "flash2") == \
        _best_tokens_per_s(capsys, *a100)


def test_plan_attention_kernel_is_said_and_refused_on_measured_timings(capsys):
    from cli_harness import run_cli
    from h200_gpt import H200

    code, out, _ = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--devices", "8", "--global-batch", "32", "--top", "1",
                                    "--attention-kernel", "flash2"])
    assert code == 0 and "attention: flash2 kernel, its attention core at 0.35 of the 16-bit " \
        "peak on H100-SXM5 80GB" in out
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), "--devices", "8",
                                      "--global-batch", "32", "--attention-kernel", "flash2"])
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "--attention-kernel flash2" in err and "its own attention kernel" in err
    code, _, err = run_cli(capsys, ["plan", "--devices", "8", "--global-batch", "32",
                                    "--attention-kernel", "flash3"])
    assert code == 2 and "invalid choice: 'flash3'" in err


def test_plan_api_refuses_an_unknown_kernel():
    from scalesim.plan import plan
    from scalesim.presets import get_hardware, get_transformer

    with pytest.raises(ScalesimError, match="unknown attention kernel 'fa4'"):
        plan(get_transformer("llama3-8b"), get_hardware("dgx-h100"), [8], 32,
             attention_kernel="fa4")


def test_a_slower_kernel_never_outruns_the_matmuls_it_sits_among():
    """FlashAttention-2's 0.35 of the peak is a ceiling, not a floor: where the matmuls
    themselves sustain less (efficiency 0.2), the vendor kernel runs at their 0.2 and the
    flash2 row had run its attention core faster than the vendor's. It is held to 0.2: the same
    step; above it (0.5) the 0.35 still slows the core."""
    low = {**SMALL, "recompute": RECOMPUTE_NONE, "efficiency": 0.2}
    vendor = evaluate_layouts(LayoutInputs(**low))
    flash2 = evaluate_layouts(LayoutInputs(**low, attention_efficiency=0.35))
    assert float(flash2.compute_s) == pytest.approx(float(vendor.compute_s), rel=1e-12)
    high = {**low, "efficiency": 0.5}
    assert float(evaluate_layouts(LayoutInputs(**high, attention_efficiency=0.35)).compute_s) \
        > float(evaluate_layouts(LayoutInputs(**high)).compute_s)


def _a100_llama_pin_inputs():
    """(profile, the pin's base inputs) of Llama 3 8B at 8,192 tokens on a DGX A100's datasheet
    profile: its attention core a large share of the step."""
    from scalesim.layout_predict import (
        _peak_and_bandwidth,
        base_inputs,
        layout_hardware,
    )
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    profile = resolve_profile(None, "dgx-a100", "llama3-8b")
    peak, _, bandwidth = _peak_and_bandwidth(profile)
    return profile, base_inputs(profile.workload, layout_hardware(profile), Scenario(), peak,
                                bandwidth)


def test_a100_compute_curve_is_pinned_with_its_attention_core_at_its_own_rate():
    """A datasheet profile on an A100 (Llama 3 8B at 8,192 tokens, its attention core a large
    part of the step): one device's predicted compute is the profile's compute curve (plus the
    optimizer step) at every micro-batch, now that the core runs at 0.656 of the peak and the
    matmuls at the solved η (``layout_predict.pinned_compute``: four evaluations, the core a
    term of its own). The η solved lies above 0.656 here, so the core's time is fixed and η
    alone absorbs the rest: t = A/η + C/0.656 + F."""
    import numpy as np

    from scalesim.layout_predict import _pin_terms, pinned_compute
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    profile, base = _a100_llama_pin_inputs()
    b = np.array([1.0, 2.0])
    a, core, kernel_s, fixed, target, rate = _pin_terms(profile, base, b, 1)
    eta, _ = pinned_compute(profile, base, b, 1)
    assert np.all(core > 0.1 * (a + core))  # the core is a real share at 8K tokens
    assert np.all(eta > ATTENTION_ON_A100_EFFICIENCY)
    np.testing.assert_allclose(a / eta + core / ATTENTION_ON_A100_EFFICIENCY + fixed, target,
                               rtol=1e-9)
    for i, batch in enumerate((1, 2)):
        row = predict(profile, Scenario(devices=[1], global_batch=batch))[0]
        assert row.compute_s == pytest.approx(float(target[i]), rel=1e-9)


def test_validation_flag_names_the_stack_it_assumed_on_an_a100():
    """A Transformer Engine source (NeMo, Megatron) on an A100 from 2022 on gets the A100's
    FlashAttention-2 rate for the vendor kernel too: its flag says fused-vendor of a Transformer
    Engine stack (it had said 'fused-vendor assumed (not a Transformer Engine stack)', the
    words of the flash2 default), at 0.656 (it had printed 0.6556619144602851); llm-foundry's
    A100 rows keep flash2, not a Transformer Engine stack."""
    cases = load_parallel_cases(validation_path("parallel_cases.json"))
    narayanan = next(c for c in cases if c.id == "narayanan2021_t1_1p7b")  # A100 80GB, Megatron
    nemo = narayanan.model_copy(update={"source": "NVIDIA/NeMo 2023, Megatron-Core"})
    flags: list[str] = []
    x, _ = case_inputs(nemo, flags)
    assert x.attention_efficiency == ATTENTION_ON_A100_EFFICIENCY
    (flag,) = [f for f in flags if "attention kernel not stated" in f]
    assert flag == ("attention kernel not stated: fused-vendor assumed (a Transformer Engine "
                    "stack): the attention core at 0.656 of the 16-bit peak")
    foundry = next(c for c in cases if c.id == "llmfoundry_a100_80gb_7b_s2048_8gpu")
    flags = []
    case_inputs(foundry, flags)
    (flag,) = [f for f in flags if "attention kernel not stated" in f]
    assert flag == ("attention kernel not stated: flash2 assumed (not a Transformer Engine "
                    "stack): the attention core at 0.656 of the 16-bit peak")


def test_a100_curve_the_pin_cannot_reach_is_held_to_the_attention_cores_rate():
    """On an A100 the pin runs the attention core at 0.656 of the peak at most, so the fastest
    one device can compute Llama 3 8B at 8,192 tokens is its weight matmuls at the peak plus
    its core at 0.656 (1.78 s a sequence), not both at the peak (1.58 s). A curve of 1.66 s
    between the two is not reproduced (predict's compute is 2.06 s, not 1.78 s with the
    optimizer step), so ``curve_beyond_peak`` reports the 1.78 s and diagnose's check
    (``runs_diagnosis._check_runs_model``) notes it, where it had passed them in silence against the
    1.58 s; a curve slower than 1.78 s is reproduced."""
    import numpy as np

    from scalesim.layout_predict import _pin_terms, curve_beyond_peak
    from scalesim.predict import predict
    from scalesim.runs import parse_runs_text
    from scalesim.runs_diagnosis import diagnose_runs
    from scalesim.runs_model import runs_model
    from scalesim.schemas import Scenario

    profile, base = _a100_llama_pin_inputs()
    a, core = (float(v[0]) for v in _pin_terms(profile, base, np.array([1.0]), 1)[:2])

    def at(per_sample_s):
        curve = profile.compute.model_copy(update={"overhead_s": 0.0,
                                                   "per_sample_s": per_sample_s})
        return profile.model_copy(update={"compute": curve})

    at_peak_s, fastest_s, measured_s = curve_beyond_peak(at(1.66), Scenario(), 1.0)
    assert at_peak_s == pytest.approx(a + core, rel=1e-12)
    assert fastest_s == pytest.approx(a + core / ATTENTION_ON_A100_EFFICIENCY, rel=1e-12)
    assert at_peak_s < measured_s == 1.66 < fastest_s
    from scalesim.model.memory import DDP, optimizer_traffic_ratio
    from scalesim.model.sharding import FSDP

    w = profile.workload  # one device runs DDP, whose step sweeps 28 of the estimate's 30 B
    optimizer_s = profile.compute.optimizer_step_s * float(optimizer_traffic_ratio(
        DDP, FSDP, w.param_bytes_per_param, w.grad_bytes_per_param,
        w.optimizer_bytes_per_param, w.stated_reduce_bytes(), ranks=1))
    for per_sample_s, reached in ((1.66, False), (fastest_s * 1.01, True)):
        row = predict(at(per_sample_s), Scenario(devices=[1], global_batch=1))[0]
        assert (row.compute_s == pytest.approx(per_sample_s + optimizer_s, rel=1e-9)) == reached
    runs = ("devices,nodes,step_time_s,per_device_batch\n8,1,1.72,1\n16,2,1.73,1\n"
            "32,4,1.745,1\n64,8,1.76,1\n")
    report = diagnose_runs(parse_runs_text(runs, "r.csv"),
                           transformer=runs_model("llama3-8b", "A100 80GB"))
    (note,) = [n for n in report.notes if "the runs do not pin it" in n]
    assert ("is faster than llama3-8b can run at the 312 TFLOP/s peak of A100 80GB (its matmuls "
            f"alone {at_peak_s * 1e3:.0f} ms, {fastest_s * 1e3:.0f} ms with its attention core "
            "at 0.66 of it (FlashAttention-2's rate there))") in note


def test_an_unfused_core_runs_at_the_matmuls_rate_unless_flash2_is_named():
    """Without fused attention (gpt-1.7b: ``flash_attention`` false) the vendor stack runs the
    core as batched matmuls, at the matmuls' rate even on an A100; naming flash2 asserts fused
    attention and gets its figure; with fused attention (llama3-8b) either kernel has the
    A100's."""
    from scalesim.presets import attention_share

    assert attention_share("A100 80GB", VENDOR_KERNEL, False) is None
    assert attention_share("A100 80GB", FLASH2_KERNEL, False) == ATTENTION_ON_A100_EFFICIENCY
    assert attention_share("A100 80GB", VENDOR_KERNEL, True) == ATTENTION_ON_A100_EFFICIENCY
    assert attention_share("H100 80GB", FLASH2_KERNEL, False) == 0.35
    with pytest.raises(ScalesimError, match="unknown attention kernel 'fa9'"):
        attention_share("A100", "fa9", False)
    # the sweep's per-row shares follow the same rule (NaN: the matmuls' efficiency)
    import numpy as np

    from scalesim.sweep import attention_efficiencies

    rows = attention_efficiencies("A100 80GB", np.array([VENDOR_KERNEL, FLASH2_KERNEL]), False)
    assert math.isnan(rows[0]) and rows[1] == ATTENTION_ON_A100_EFFICIENCY
