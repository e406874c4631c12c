"""A calibration reads the attention kernel its timings ran, and the fit and the planner price
the attention core at that kernel's rate (calibration/attention_probe.py; docs/calibration.md,
"The attention kernel"; docs/model.md §13)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scalesim.calibration.assemble import model_parallel_section
from scalesim.calibration.block_fit import Block, core_terms, fit_block, layer_terms
from test_model_parallel_calibration import _block_result

from scalesim.attention_kernel import (
    FLASH2_KERNEL,
    MEM_EFFICIENT_FAMILY,
    VENDOR_KERNEL,
    planner_kernel_of,
)
from scalesim.presets import FLASH2_ON_HOPPER_EFFICIENCY
from scalesim.schemas import BlockShape

H200_TRACE = (Path(__file__).parents[1] / "benchmarks" / "results" / "h200-2026-11-30"
              / "traces" / "trace-b8.json.gz")
H100 = "NVIDIA H100 80GB HBM3"


def test_the_h200s_sdpa_ran_cudnns_kernels_which_read_as_the_vendor_kernel():
    """The H200 the device tool lent (torch 2.11.0+cu130) traced a training step whose
    scaled_dot_product_attention ran cuDNN's sm90 kernels
    (cudnn_generated_fort_native_sdpa_sm90_flash_fprop/bprop_wgmma_*): read as the vendor
    kernel, not FlashAttention-2 (PyTorch's builds prefer cuDNN on Hopper once their cuDNN is
    recent enough), by the trace reader that `calibrate --from-trace` and diagnose share."""
    from scalesim import traces

    events = json.loads(gzip.decompress(H200_TRACE.read_bytes()))["traceEvents"]
    assert any("cudnn_generated_fort_native_sdpa_sm90" in e["name"] for e in events
               if e.get("cat") == "kernel")
    assert traces.summarise(str(H200_TRACE)).attention_family == VENDOR_KERNEL


def test_sdpas_backends_are_the_trace_families_and_the_planner_prices_them():
    from scalesim.calibration.attention_probe import sdpa_family
    from torch.nn.attention import SDPBackend

    assert [sdpa_family(b.value) for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION,
                                           SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)] == \
        [FLASH2_KERNEL, VENDOR_KERNEL, MEM_EFFICIENT_FAMILY, None]
    assert sdpa_family(-1) is None and sdpa_family(99) is None
    # the planner prices FlashAttention-2 as itself, everything else as the vendor kernel
    assert [planner_kernel_of(f) for f in (FLASH2_KERNEL, VENDOR_KERNEL, MEM_EFFICIENT_FAMILY,
                                           None)] == [FLASH2_KERNEL] + [VENDOR_KERNEL] * 3


def test_the_probe_asks_the_dispatcher_what_each_attention_call_runs():
    """One step, its SDPA calls asked (``torch._fused_sdp_choice``, their own arguments) which
    backend they dispatch to. On this CPU SDPA's flash backend runs (a CPU kernel: the
    calibration asks only on a GPU), and with the math backend forced none is found; the step
    ran once, with SDPA's own output, and SDPA is itself again afterwards."""
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.attention_probe import timed_attention_kernel
    from torch.nn.attention import SDPBackend, sdpa_kernel

    original = F.scaled_dot_product_attention
    q = torch.randn(1, 2, 16, 8)
    out = []

    def step():
        out.append(F.scaled_dot_product_attention(q, q, q, is_causal=True))

    assert timed_attention_kernel(step) == FLASH2_KERNEL
    assert len(out) == 1 and torch.equal(out[0], original(q, q, q, is_causal=True))
    with sdpa_kernel(SDPBackend.MATH):
        assert timed_attention_kernel(step) is None
    assert timed_attention_kernel(lambda: None) is None  # no SDPA call
    assert F.scaled_dot_product_attention is original


def test_under_autocast_the_dispatcher_is_asked_with_the_dtypes_sdpa_runs():
    """Autocast casts SDPA's inputs to its dtype before SDPA picks its backend (SDPA is a
    lower-precision op, aten/src/ATen/autocast_mode.cpp); ``torch._fused_sdp_choice`` asked from
    Python is no autocast op. A block whose query and key leave a rotary embedding in fp32
    beside a bf16 value: asked uncast, the dispatcher answered the math backend (no family
    recorded, the profile read with the vendor kernel) where SDPA ran bf16 on its flash
    backend; asked as autocast casts them, its answer is SDPA's own."""
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.attention_probe import timed_attention_kernel
    from torch.nn.attention import SDPBackend

    q = torch.randn(1, 2, 16, 8)
    v = q.bfloat16()
    out = []

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out.append(F.scaled_dot_product_attention(q, q, v, is_causal=True))

    cast = q.bfloat16()
    assert torch._fused_sdp_choice(cast, cast, cast, is_causal=True) == \
        SDPBackend.FLASH_ATTENTION.value  # what SDPA runs: its inputs all bf16
    assert timed_attention_kernel(step) == FLASH2_KERNEL
    assert len(out) == 1 and out[0].dtype == torch.bfloat16


def test_every_sdpa_call_is_asked_once_however_its_caller_named_it():
    """A --block-model or factory that imported SDPA by name (``from torch.nn.functional import
    scaled_dot_product_attention``, as many model files do) called the function itself, which
    replacing ``F.scaled_dot_product_attention`` does not reach: none was recorded and the
    profile read with the vendor kernel. A function mode asks those; ``nn.MultiheadAttention``
    (SDPA called from inside torch.nn.functional) and ``F.`` calls are asked once each, and
    after the step, even one that raised, SDPA is itself and no mode is left."""
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.attention_probe import sdpa_choices, timed_attention_kernel
    from torch.nn.functional import scaled_dot_product_attention
    from torch.overrides import _get_current_function_mode_stack

    original = F.scaled_dot_product_attention
    q = torch.randn(1, 2, 16, 8)
    assert timed_attention_kernel(
        lambda: scaled_dot_product_attention(q, q, q, is_causal=True)) == FLASH2_KERNEL
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(1, 8, 16)
    found: list = []
    with sdpa_choices(found):
        scaled_dot_product_attention(q, q, q, is_causal=True)
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        torch._C._nn.scaled_dot_product_attention(q, q, q, is_causal=True)
        mha(x, x, x, need_weights=False)
    assert len(found) == 4

    def failing():
        scaled_dot_product_attention(q, q, q)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        timed_attention_kernel(failing)
    assert F.scaled_dot_product_attention is original and _get_current_function_mode_stack() == []


def test_a_compiled_model_is_asked_without_breaking_its_graph():
    """A --block-model or factory that returns ``torch.compile(model, fullgraph=True)``: the
    probe's question (``_fused_sdp_choice``, which returns no tensor) was traced into its graph,
    which a full-graph compile refuses ("Unsupported: torch.* op returned non-Tensor"), and the
    block phase failed. The probe step runs compiled modules eagerly now (torch 2.6+'s
    ``set_stance('force_eager')``; SDPA's backend is the dispatcher's in both), asks each call,
    and compiles nothing more; the module runs compiled again afterwards."""
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.attention_probe import timed_attention_kernel

    if not hasattr(torch.compiler, "set_stance"):
        pytest.skip("torch < 2.6: compiled graphs are run as they are")

    class Attention(torch.nn.Module):
        def forward(self, x):
            return F.scaled_dot_product_attention(x, x, x, is_causal=True)

    compiled = torch.compile(Attention(), backend="eager", fullgraph=True)
    x = torch.randn(1, 2, 16, 8)
    compiled(x)
    assert timed_attention_kernel(lambda: compiled(x)) == FLASH2_KERNEL
    assert torch.equal(compiled(x), F.scaled_dot_product_attention(x, x, x, is_causal=True))


def test_a_question_the_dispatcher_cannot_answer_leaves_the_kernel_unknown(monkeypatch):
    """A torch whose private ``_fused_sdp_choice`` takes other arguments: no kernel recorded
    (the profile is read with the vendor kernel, as before), the step run as it would."""
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.attention_probe import timed_attention_kernel

    def other_signature(*args, **kwargs):
        raise TypeError("_fused_sdp_choice() got an unexpected keyword argument 'is_causal'")

    monkeypatch.setattr(torch, "_fused_sdp_choice", other_signature)
    q = torch.randn(1, 2, 16, 8)
    out = []
    assert timed_attention_kernel(
        lambda: out.append(F.scaled_dot_product_attention(q, q, q, is_causal=True))) is None
    assert len(out) == 1


def _hopper_block_times(eta: float, core_share: float):
    """Block timings of the planner's formula on an H100: the weight matmuls at ``eta`` of the
    989 TFLOP/s peak, the attention core at min(core_share, eta), the bytes at 2.5 TB/s."""
    block = Block(256, 4, 1024, 128, 1, flash_attention=True)
    tps = [1, 2, 4]
    peak = 989e12
    a, c = layer_terms(block, tps)
    core = core_terms(block, tps)
    return block, tps, (a - core) / (eta * peak) + core / (min(core_share, eta) * peak) + c / 2.5e12


@pytest.mark.parametrize("eta", [0.75, 0.3])
def test_a_hopper_block_that_ran_flash2_is_fitted_with_its_core_at_flash2s_rate(eta):
    """A block timed on an H100 whose SDPA ran FlashAttention-2 (SDPA's dispatcher says
    flash2): the fit runs its attention core at min(0.35, F) of the peak, as the planner
    prices flash2 there, and recovers the matmuls' 0.75 (0.3: below 0.35, the core at F too)
    and the byte rate exactly. Read as the vendor kernel (no kernel recorded) the same
    timings give a blend below 0.75."""
    block, tps, times = _hopper_block_times(eta, FLASH2_ON_HOPPER_EFFICIENCY)
    result = _block_result(times).model_copy(update={"attention_kernel": FLASH2_KERNEL})
    mp = model_parallel_section(result, [], H100, "bf16", True)
    assert mp.matmul_efficiency == pytest.approx(eta, rel=1e-6)
    assert mp.memory_bandwidth_GBps == pytest.approx(2500, rel=1e-6)
    assert [p.model_s for p in mp.points] == pytest.approx(list(times), rel=1e-9)
    assert mp.block.attention_kernel == FLASH2_KERNEL
    assert "the attention core at min(0.35, efficiency) of it (flash2 kernel)" in mp.source
    unrecorded = model_parallel_section(_block_result(times), [], H100, "bf16", True)
    assert "attention core" not in unrecorded.source and unrecorded.block.attention_kernel is None
    blended = fit_block(block, tps, times).flops_per_s / 989e12
    assert (blended < 0.74) if eta == 0.75 else blended == pytest.approx(eta, rel=1e-6)


def _measured_h100_llama(family: str | None):
    """A DGX H100 profile of Llama 3 8B at 8,192 tokens whose compute curve is a measurement
    (as calibrate writes it) that ran ``family``'s attention: the datasheet curve 1.5x slower,
    so that read with FlashAttention-2's slower core its matmuls still sustain less than the
    peak."""
    from scalesim.profiles import resolve_profile

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    c = profile.compute
    compute = c.model_copy(update={"measured": True, "attention_kernel": family,
                                   "overhead_s": 1.5 * c.overhead_s,
                                   "per_sample_s": 1.5 * c.per_sample_s})
    return profile.model_copy(update={"compute": compute})


def test_a_measured_curve_that_ran_flash2_is_pinned_with_its_core_at_flash2s_rate():
    """The compute pin reads a curve that ran FlashAttention-2 on an H100 with its attention
    core at 0.35 of the peak: η = A / (t − F − C/0.35), by hand from the pin's four terms;
    higher than the η the same curve gives read with the vendor kernel (the core at η), and
    one device's predicted compute is the curve either way."""
    from scalesim.layout_predict import (
        _peak_and_bandwidth,
        _pin_terms,
        base_inputs,
        layout_hardware,
        own_attention_kernel,
        pin_attention_share,
        pinned_compute,
    )
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    b = np.array([1.0, 2.0])
    etas, computes = {}, {}
    for family in (FLASH2_KERNEL, None):
        profile = _measured_h100_llama(family)
        peak, _, bandwidth = _peak_and_bandwidth(profile)
        base = base_inputs(profile.workload, layout_hardware(profile), Scenario(), peak,
                           bandwidth)
        a, core, _, fixed, target, _ = _pin_terms(profile, base, b, 1)
        etas[family] = pinned_compute(profile, base, b, 1)[0]
        computes[family] = [predict(profile, Scenario(devices=[1], global_batch=int(n)))[0]
                            .compute_s for n in b]
        np.testing.assert_allclose(computes[family], target, rtol=1e-9)
        if family == FLASH2_KERNEL:
            assert own_attention_kernel(profile) == FLASH2_KERNEL
            assert pin_attention_share(profile) == FLASH2_ON_HOPPER_EFFICIENCY
            np.testing.assert_allclose(
                etas[family], a / (target - fixed - core / FLASH2_ON_HOPPER_EFFICIENCY),
                rtol=1e-9)
        else:
            assert own_attention_kernel(profile) == VENDOR_KERNEL
            assert pin_attention_share(profile) is None
    assert np.all(etas[FLASH2_KERNEL] > etas[None] * 1.05)


def test_predictions_say_which_kernel_the_timings_ran_and_the_remedy_is_priced():
    from scalesim.layout_predict import attention_kernel_note, check_attention_kernel
    from scalesim.remedies import attention_kernel_reason, rank_remedies
    from scalesim.schemas import Scenario

    flash = _measured_h100_llama(FLASH2_KERNEL)
    note = attention_kernel_note(flash, Scenario())
    assert note.startswith("attention: flash2 kernel (the kernel the profile's timings ran, as its "
                           "calibration found), its attention core at 0.35")
    assert "0.35 of the 16-bit peak" in note
    assert attention_kernel_note(_measured_h100_llama(VENDOR_KERNEL), Scenario()) == ""
    swapped = attention_kernel_note(flash, Scenario(attention_kernel=VENDOR_KERNEL))
    assert swapped.startswith("attention: fused-vendor kernel at the matmuls' efficiency")
    assert "swapped for the flash2 kernel the profile's timings ran" in swapped
    # timings that ran FlashAttention-2 on Hopper: the vendor kernel is a remedy to price, and
    # its how says to time the vendor kernel to confirm the gain
    assert attention_kernel_reason(flash, Scenario()) == ""
    _, ranked = rank_remedies(flash, Scenario(devices=[8], strategy="zero3"), 8)
    remedy = next(r for r in ranked if r.key == "attention_kernel")
    assert remedy.applicable and remedy.gain > 0.05
    assert remedy.scenario.attention_kernel == VENDOR_KERNEL
    assert "calibrate again with cuDNN attention" in remedy.reason
    assert attention_kernel_reason(_measured_h100_llama(VENDOR_KERNEL), Scenario()) == (
        "the profile's timings ran the fused-vendor kernel, as its calibration found")
    unrecorded = attention_kernel_reason(_measured_h100_llama(None), Scenario())
    assert "its calibration did not record which: the model cannot swap it" in unrecorded
    assert "calibrate again" not in unrecorded
    check_attention_kernel(flash, VENDOR_KERNEL)  # both ways: the kernel was recorded
    check_attention_kernel(_measured_h100_llama(VENDOR_KERNEL), FLASH2_KERNEL)
    with pytest.raises(Exception, match="did not record which; leave the kernel out"):
        check_attention_kernel(_measured_h100_llama(None), FLASH2_KERNEL)
    with pytest.raises(Exception, match="mem-efficient, as its calibration found"):
        check_attention_kernel(_measured_h100_llama(MEM_EFFICIENT_FAMILY), FLASH2_KERNEL)


@pytest.mark.parametrize("family", [None, MEM_EFFICIENT_FAMILY])
def test_a_refused_kernel_does_not_say_the_timings_ran_the_kernel_they_are_read_as(family):
    """A kernel is refused only where the timings' own kernel was not recorded, or was the
    memory-efficient one: the vendor kernel is then how they are read, not what they ran.
    Was: '... its calibration did not record which; leave the kernel out (the fused-vendor
    kernel it ran)', and '(mem-efficient, as its calibration found) ...; leave the kernel out
    (the fused-vendor kernel it ran)'."""
    from scalesim.errors import ScalesimError
    from scalesim.layout_predict import check_attention_kernel

    with pytest.raises(ScalesimError) as refused:
        check_attention_kernel(_measured_h100_llama(family), FLASH2_KERNEL)
    assert "kernel it ran" not in str(refused.value)
    assert "leave the kernel out (the timings read as the fused-vendor kernel's)" in str(
        refused.value)


@pytest.mark.parametrize("own, other", [(FLASH2_KERNEL, VENDOR_KERNEL),
                                        (VENDOR_KERNEL, FLASH2_KERNEL)])
def test_a_kernel_swapped_on_measured_timings_changes_the_attention_core_alone(own, other):
    """Measured timings that ran ``own`` (recorded) asked to run ``other``: the pin keeps its
    matmul efficiency η (it reads the timings with ``own``'s core), and one device's compute
    moves by the core alone, C / s_other − C / s_own (s: flash2 0.35 on an H100, the vendor
    kernel at η), by hand from the pin's terms."""
    from scalesim.layout_predict import (
        _peak_and_bandwidth,
        _pin_terms,
        base_inputs,
        layout_hardware,
        pinned_compute,
    )
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    profile = _measured_h100_llama(own)
    peak, _, bandwidth = _peak_and_bandwidth(profile)
    base = base_inputs(profile.workload, layout_hardware(profile), Scenario(), peak, bandwidth)
    _, core, _, _, target, _ = _pin_terms(profile, base, 1.0, 1)
    eta = float(pinned_compute(profile, base, 1.0, 1)[0])
    share = {FLASH2_KERNEL: FLASH2_ON_HOPPER_EFFICIENCY, VENDOR_KERNEL: eta}
    now, then = (predict(profile, Scenario(devices=[1], global_batch=1, attention_kernel=k))[0]
                 for k in (None, other))
    assert now.compute_s == pytest.approx(float(target), rel=1e-9)
    assert then.compute_s - now.compute_s == pytest.approx(
        float(core) * (1 / share[other] - 1 / share[own]), rel=1e-6)
    assert (then.compute_s < now.compute_s) == (other == VENDOR_KERNEL)


def test_decide_goal_and_sweep_say_the_kernel_the_answer_ran_once(tmp_path, capsys):
    """decide and goal put predict's words of the scenario's attention kernel before their own
    notes (the kernel the timings ran, or a swap for it: the 'As is' row runs it), and sweep
    says them once."""
    from scalesim.cli.main import main

    path = tmp_path / "flash.json"
    path.write_text(_measured_h100_llama(FLASH2_KERNEL).model_dump_json())
    own = "note: attention: flash2 kernel (the kernel the profile's timings ran"
    swap = "swapped for the flash2 kernel the profile's timings ran"
    common = ["--profile", str(path)]
    decide = ["decide", *common, "--devices", "8", "--strategy", "zero3"]
    goal = ["goal", *common, "--max-devices", "16", "--train-samples", "1e6", "--deadline", "30d",
            "--budget", "100000"]
    for args in (decide, goal):
        assert main(args) == 0
        assert own in capsys.readouterr().out, args[0]
        assert main([*args, "--attention-kernel", VENDOR_KERNEL]) == 0
        out = capsys.readouterr().out
        assert "note: attention: fused-vendor kernel" in out and swap in out, args[0]
    assert main(["sweep", *common, "--devices", "8", "--attention-kernel", VENDOR_KERNEL]) == 0
    assert capsys.readouterr().err.count(swap) == 1


def test_the_app_notes_the_kernel_the_timings_ran():
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState

    _, notes = build_scenario(AppState(), _measured_h100_llama(FLASH2_KERNEL))
    assert any(n.startswith("attention: flash2 kernel (the kernel the profile's timings ran")
               for n in notes)
    _, notes = build_scenario(AppState(), _measured_h100_llama(None))
    assert not any(n.startswith("attention:") for n in notes)
    # the vendor kernel asked of flash2 timings: the swap is said, as predict says it
    _, notes = build_scenario(AppState(ak=VENDOR_KERNEL), _measured_h100_llama(FLASH2_KERNEL))
    assert any(n.startswith("attention: fused-vendor kernel") and
               "swapped for the flash2 kernel the profile's timings ran" in n for n in notes)


def test_a_profile_names_a_kernel_family_it_knows_or_none():
    shape = dict(hidden=256, heads=4, ffn_hidden=1024, seq_len=128, micro_batch=1,
                 element_bytes=2.0)
    assert BlockShape(**shape).attention_kernel is None  # profiles written before the field
    assert BlockShape(**shape, attention_kernel="mem-efficient").attention_kernel == "mem-efficient"
    with pytest.raises(ValueError, match="attention_kernel"):
        BlockShape(**shape, attention_kernel="xformers")


def test_the_h200s_own_trace_calibrates_a_dgx_h200_profile(tmp_path, capsys):
    """The real H200 trace (torch 2.11, cuDNN attention): `calibrate --from-trace` builds the
    new profile on the dgx-h200 preset (the DGX H200 datasheet; before, no preset listed the
    H200 and the profile stayed the default A100's) and records the vendor kernel."""
    from scalesim.cli.main import main
    from scalesim.presets import get_hardware
    from scalesim.profiles import load_profile

    out = tmp_path / "h200.json"
    assert main(["calibrate", "--from-trace", f"8={H200_TRACE}", "--out", str(out)]) == 0
    assert "the hardware preset dgx-h200" in capsys.readouterr().out
    profile = load_profile(out)
    assert profile.hardware.device_name == "H200-SXM 141GB"
    assert profile.compute.attention_kernel == VENDOR_KERNEL
    h200 = get_hardware("dgx-h200")
    assert (h200.peak_tflops, h200.memory_bandwidth_GBps) == (989.0, 4800.0)
    assert h200.price_per_device_hour is None and "--price" in h200.source


def _llama_at(profile, seq_len: int):
    wl = profile.workload
    return wl.model_copy(update={"transformer": wl.transformer.model_copy(
        update={"seq_len": seq_len})})


def test_a_curve_scaled_to_another_sequence_grows_its_core_at_the_timed_kernels_rate():
    """A measured H100 curve that ran FlashAttention-2, asked at twice its sequence
    (``profiles.workload_compute``: the per-sample time x the layout model's ratio of the two
    shapes): the ratio prices the attention core, which grows with the sequence, at flash2's
    0.35 of the peak, as every prediction from the scaled curve does; read with the vendor
    kernel (no kernel recorded) the ratio is smaller."""
    from scalesim.profiles import compute_curve_from_shape, profile_with_workload

    ratios = {}
    for family in (FLASH2_KERNEL, None):
        base = _measured_h100_llama(family)
        scaled, match = profile_with_workload(base, _llama_at(base, 16384), "llama-16k")
        assert match == "sequence" and scaled.compute.attention_kernel == family
        ratios[family] = scaled.compute.per_sample_s / base.compute.per_sample_s
    base = _measured_h100_llama(FLASH2_KERNEL)
    by_hand = [compute_curve_from_shape(_llama_at(base, s), base.hardware,
                                        attention_kernel=FLASH2_KERNEL)[0].per_sample_s
               for s in (8192, 16384)]
    assert ratios[FLASH2_KERNEL] == pytest.approx(by_hand[1] / by_hand[0], rel=1e-9)
    assert ratios[FLASH2_KERNEL] > ratios[None] * 1.02


def _h100_with_block(block_kernel, compute_kernel):
    """``_measured_h100_llama(compute_kernel)`` with a block calibration of its H100 whose
    block ran ``block_kernel`` (its matmuls at 0.6 of the peak, flash2's core at 0.35)."""
    from scalesim.profiles import parse_profile

    _, _, times = _hopper_block_times(0.6, FLASH2_ON_HOPPER_EFFICIENCY)
    result = _block_result(times).model_copy(update={"attention_kernel": block_kernel})
    data = _measured_h100_llama(compute_kernel).model_dump(mode="json")
    data["model_parallel"] = model_parallel_section(result, [], H100, "bf16",
                                                    True).model_dump(mode="json")
    return parse_profile(data)


def _plan_rows(capsys, path, *args):
    from scalesim.cli.main import main

    assert main(["plan", "--profile", str(path), "--devices", "8", "--global-batch", "64",
                 "--all", "--top", "100000", "--json", *args]) == 0  # every layout, not the top 10
    return json.loads(capsys.readouterr().out)["layouts"]


@pytest.mark.parametrize("block_kernel, compute_kernel", [(FLASH2_KERNEL, FLASH2_KERNEL),
                                                          (None, FLASH2_KERNEL),
                                                          ("no block", FLASH2_KERNEL)])
def test_predict_and_plan_price_another_model_on_the_profile_alike(
        tmp_path, capsys, block_kernel, compute_kernel):
    """``predict --profile P --workload W`` and ``plan --profile P --workload W`` for another
    model than the one P timed (its compute from its shape): the same layout takes the same
    step, its attention core priced at the kernel P's block ran (the block fit's efficiency
    was read with it; the vendor kernel where the block recorded none), or, with no block
    calibration (the model's compute is then an estimate at the published default), at the
    kernel P's timings ran: the same stack runs the other model."""
    from scalesim.layout_predict import kernel_for
    from scalesim.predict import predict
    from scalesim.profiles import load_workload, profile_with_workload
    from scalesim.schemas import Scenario

    if block_kernel == "no block":
        base, block_kernel = _measured_h100_llama(compute_kernel), None
    else:
        base = _h100_with_block(block_kernel, compute_kernel)
    path = tmp_path / "p.json"
    path.write_text(base.model_dump_json())
    other, match = profile_with_workload(base, load_workload("gpt-7.5b"), "gpt-7.5b")
    assert match == "other"
    # the block's kernel; without a block, the one the timings ran (the same stack)
    assert kernel_for(other, None) == (FLASH2_KERNEL if base.model_parallel is None
                                       else planner_kernel_of(block_kernel))
    steps = []
    # none asked, and the vendor kernel asked: a swap where the block recorded flash2
    for asked in (None, VENDOR_KERNEL):
        flags = () if asked is None else ("--attention-kernel", asked)
        # ZeRO-2: ZeRO-1 without recompute no longer fits 8 H100s nor ranks in plan's top 10
        # (session 44: it holds its fp32 main_grad buffer)
        row = next(r for r in _plan_rows(capsys, path, "--workload", "gpt-7.5b", *flags)
                   if (r["tp"], r["pp"], r["cp"], r["zero"], r["micro_batch"], r["recompute"])
                   == (1, 1, 1, 2, 1, "none"))
        got = predict(other, Scenario(devices=[8], global_batch=64, accumulation=8,
                                      strategy="zero2", attention_kernel=asked))[0]
        assert got.step_time_s == pytest.approx(row["step_time_s"], rel=1e-9)
        steps.append(got.step_time_s)
    if block_kernel == FLASH2_KERNEL or base.model_parallel is None:  # the vendor kernel
        assert steps[1] < steps[0]  # asked instead of flash2: a faster core
    if block_kernel is None and base.model_parallel is not None:
        # a block fit whose kernel no probe recorded cannot be swapped: both refuse flash2
        from scalesim.cli.main import main

        with pytest.raises(Exception, match="did not record which"):
            predict(other, Scenario(devices=[8], global_batch=64, attention_kernel=FLASH2_KERNEL))
        assert main(["plan", "--profile", str(path), "--devices", "8", "--global-batch", "64",
                     "--workload", "gpt-7.5b", "--attention-kernel", FLASH2_KERNEL]) != 0
        assert "did not record which" in capsys.readouterr().err  # predict's words


@pytest.mark.parametrize("block_kernel, compute_kernel", [("no block", None),
                                                          ("no block", FLASH2_KERNEL),
                                                          (None, FLASH2_KERNEL),
                                                          (FLASH2_KERNEL, MEM_EFFICIENT_FAMILY)])
def test_plan_checks_and_says_another_models_kernel_as_predict_does(
        tmp_path, capsys, block_kernel, compute_kernel):
    """``plan --profile P --workload W`` for another model than P timed checks, prices and
    says the kernel on the profile ``predict --profile P --workload W`` prices that model from
    (``profile_with_workload``: its compute estimated from its shape, the block kept), not on
    P's measured curve. Was: P without a block, whose curve recorded no kernel, refused
    flash2 that predict priced (a datasheet estimate), and a curve that ran flash2 made plan
    say 'swapped for the flash2 kernel the profile's timings ran' of that estimate."""
    from scalesim.cli.main import main
    from scalesim.errors import ScalesimError
    from scalesim.layout_predict import attention_kernel_note
    from scalesim.predict import predict
    from scalesim.profiles import load_workload, profile_with_workload
    from scalesim.schemas import Scenario

    base = (_measured_h100_llama(compute_kernel) if block_kernel == "no block"
            else _h100_with_block(block_kernel, compute_kernel))
    path = tmp_path / "p.json"
    path.write_text(base.model_dump_json())
    other, match = profile_with_workload(base, load_workload("gpt-7.5b"), "gpt-7.5b")
    assert match == "other"
    for asked in (None, VENDOR_KERNEL, FLASH2_KERNEL):
        scenario = Scenario(devices=[8], global_batch=64, attention_kernel=asked)
        try:
            predict(other, scenario)
            refused = False
        except ScalesimError:
            refused = True
        flags = () if asked is None else ("--attention-kernel", asked)
        code = main(["plan", "--profile", str(path), "--devices", "8", "--global-batch", "64",
                     "--workload", "gpt-7.5b", "--top", "1", *flags])
        out = capsys.readouterr().out
        assert (code != 0) == refused, (asked, out)
        if not refused:
            note = attention_kernel_note(other, scenario)
            assert [line for line in out.splitlines() if line.startswith("attention:")] == (
                [note] if note else []), asked


def test_a_kernel_asked_of_a_parameter_count_with_a_recorded_kernel_is_said_ignored():
    """A parameter-count workload (bert-large) measured on an H100 whose block calibration
    recorded flash2: the vendor kernel may be asked (``kernel_swappable``), but the
    data-parallel step has no attention core, so the note says it is ignored, as flash2 asked
    of a datasheet profile is. Was: no note at all (the note was left out for every profile
    with timings of its own, where another kernel asked used to be refused)."""
    from scalesim.layout_predict import attention_kernel_note, kernel_swappable
    from scalesim.profiles import parse_profile, resolve_profile
    from scalesim.schemas import Scenario

    _, _, times = _hopper_block_times(0.6, FLASH2_ON_HOPPER_EFFICIENCY)
    result = _block_result(times).model_copy(update={"attention_kernel": FLASH2_KERNEL})
    data = resolve_profile(None, "dgx-h100", "bert-large").model_dump(mode="json")
    data["compute"]["measured"] = True
    data["model_parallel"] = model_parallel_section(result, [], H100, "bf16",
                                                    True).model_dump(mode="json")
    profile = parse_profile(data)
    assert profile.workload.transformer is None and kernel_swappable(profile)
    assert attention_kernel_note(profile, Scenario(attention_kernel=VENDOR_KERNEL)).startswith(
        "attention kernel fused-vendor ignored: workload 'bert-large' is a parameter count")
    # none asked, or the kernel the timings ran: nothing would change, nothing to say
    for asked in (None, FLASH2_KERNEL):
        assert attention_kernel_note(profile, Scenario(attention_kernel=asked)) == ""


@pytest.mark.parametrize("block_kernel, compute_kernel, own", [
    (None, FLASH2_KERNEL, FLASH2_KERNEL),  # the block's pass found none: the curve's stands
    (FLASH2_KERNEL, VENDOR_KERNEL, VENDOR_KERNEL),  # each its own: the curve's prices the curve
    (FLASH2_KERNEL, None, FLASH2_KERNEL),  # the curve's pass found none: the block's
    (None, None, VENDOR_KERNEL),
])
def test_the_compute_pin_reads_the_curve_at_the_kernel_its_own_steps_ran(block_kernel,
                                                                         compute_kernel, own):
    """A profile with a block calibration whose probe found another kernel than the
    compute curve's, or none: the compute pin reads the curve at the kernel the curve's own
    timed steps ran (``compute.attention_kernel``), the block's only where the curve records
    none; the notes name that kernel."""
    from scalesim.layout_predict import (
        attention_kernel_note,
        kernel_for,
        own_attention_kernel,
        pin_attention_share,
    )
    from scalesim.schemas import Scenario

    profile = _h100_with_block(block_kernel, compute_kernel)
    assert own_attention_kernel(profile) == own
    assert kernel_for(profile, None) == own  # none asked; either kernel asked is priced
    assert [kernel_for(profile, k) for k in (VENDOR_KERNEL, FLASH2_KERNEL)] == (
        [VENDOR_KERNEL, FLASH2_KERNEL] if own == FLASH2_KERNEL or compute_kernel is not None
        or block_kernel is not None else [own, own])
    assert pin_attention_share(profile) == (FLASH2_ON_HOPPER_EFFICIENCY if own == FLASH2_KERNEL
                                            else None)
    assert attention_kernel_note(profile, Scenario()).startswith(
        "attention: flash2 kernel") == (own == FLASH2_KERNEL)


def test_the_apps_report_names_the_kernel_the_predictions_ran():
    """The report's scenario table says which attention kernel the predictions priced: on a
    profile whose timings ran FlashAttention-2, that kernel, not the vendor kernel the
    control was left at."""
    from scalesim.app.plan import make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import AppState

    flash = dict(scenario_lines(make_plan(_measured_h100_llama(FLASH2_KERNEL), AppState())))
    assert flash["attention kernel"].startswith("FlashAttention-2 class")
    assert flash["attention kernel"].endswith("the kernel the profile's timings ran")
    vendor = dict(scenario_lines(make_plan(_measured_h100_llama(None), AppState())))
    assert vendor["attention kernel"].startswith("fused vendor kernel")
    swapped = dict(scenario_lines(make_plan(_measured_h100_llama(FLASH2_KERNEL),
                                            AppState(ak=VENDOR_KERNEL))))
    assert swapped["attention kernel"] == (
        "fused vendor kernel (cuDNN / Transformer Engine, FlashAttention-3); swapped for the "
        "flash2 kernel the profile's timings ran")


def test_the_block_phase_records_the_kernel_its_probe_found(monkeypatch):
    """The block phase's wiring, on this CPU dressed as a GPU: the probe runs one step of
    the first degree, and the family it finds reaches the block's record and its source (a
    probe that found nothing leaves both as before)."""
    torch = pytest.importorskip("torch")
    from argparse import Namespace

    from scalesim.calibration import attention_probe, block_phase
    from scalesim.calibration.dist import DistContext

    class GpuLike(DistContext):
        on_gpu = property(lambda self: True)

    ctx = GpuLike(rank=0, world=1, local_rank=0, local_world=1, node=0, nodes=1,
                  backend="gloo", device=torch.device("cpu"), launched=False)
    args = Namespace(seed=0, warmup=1, block_repeats=2, precision="fp32")
    block = Block(64, 2, 256, 16, 1, flash_attention=True)

    def agree(ctx, status, payload):  # one rank, no process group
        assert status == "ok", status
        return [(status, payload)]

    monkeypatch.setattr(block_phase, "_agree", agree)
    for found in (FLASH2_KERNEL, None):
        probed = []

        def probe(step, found=found, probed=probed):
            probed.append(step())
            return found

        monkeypatch.setattr(attention_probe, "timed_attention_kernel", probe)
        result = block_phase.run(ctx, block, [1, 2], "builtin", args)
        assert len(probed) == 1 and [p.tp for p in result.points] == [1, 2]
        assert result.attention_kernel == found
        assert ("attention kernel: flash2 (SDPA's dispatch)" in result.source) == (found
                                                                                 is not None)


def test_the_compute_phase_records_the_kernel_its_probe_found(monkeypatch, tmp_path):
    """The compute phase's wiring, on this CPU dressed as a GPU (one rank, a gloo group of
    one): the probe runs the step that leaves the optimizer's gradients, once, and the
    family it finds reaches the curve and its source."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    from scalesim.calibration import attention_probe, compute_phase, models
    from scalesim.calibration.dist import DistContext
    from scalesim.calibration.options import build_parser, resolve_defaults

    class GpuLike(DistContext):
        on_gpu = property(lambda self: True)

    class Quiet:
        def update(self, n):
            pass

    args = resolve_defaults(build_parser().parse_args([
        "--quick", "--model", "gpt", "--width", "32", "--depth", "1", "--seq-len", "16",
        "--vocab", "64", "--batches", "1,2", "--repeats", "2"]), on_gpu=False)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        ctx = GpuLike(rank=0, world=1, local_rank=0, local_world=1, node=0, nodes=1,
                      backend="gloo", device=torch.device("cpu"), launched=False)
        monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a: None)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: 0)
        # the wiring, not the timings: a tiny model's times need not grow with its batch
        monkeypatch.setattr(compute_phase, "fit_compute_curve", lambda b, t: (1e-3, 1e-3, 0.0))
        probed = []

        def probe(step):
            probed.append(step())
            return FLASH2_KERNEL

        monkeypatch.setattr(attention_probe, "timed_attention_kernel", probe)
        result = compute_phase.run(ctx, models.load_model(args), args, Quiet())
    finally:
        dist.destroy_process_group()
    assert len(probed) == 1
    assert result.curve.attention_kernel == FLASH2_KERNEL
    assert "attention kernel: flash2 (SDPA's dispatch)" in result.curve.source


def test_a_profile_calibrated_from_traces_records_the_kernel_they_ran(tmp_path):
    """``calibrate --from-trace`` times the compute curve off the job's own steps, and the
    traces name the attention kernels those steps ran (``traces``' family, the one diagnose
    reads): the profile records the family, as ``calibrate``'s probe does, so that
    the compute pin and predictions price the core at FlashAttention-2's rate on an H100,
    not at the vendor kernel's, while diagnose of the same traces says flash2 ran."""
    from test_attention_traces import CUDNN_FWD, FA3_FWD, trace, write

    from scalesim.layout_predict import own_attention_kernel, pin_attention_share
    from scalesim.sources.calibrate_from import calibrate_from_sources

    base = tmp_path / "base.json"
    base.write_text(_measured_h100_llama(None).model_dump_json())
    for kernels, family in (({}, FLASH2_KERNEL), ({"fwd": CUDNN_FWD, "bwd": FA3_FWD},
                                                  VENDOR_KERNEL)):
        ranks = [write(tmp_path, trace(rank=r, **kernels), f"{family}{r}.json") for r in (0, 1)]
        profile, _ = calibrate_from_sources(tmp_path / "p.json", base=str(base),
                                            traces=[f"4={p}" for p in ranks], write=False)
        assert profile.compute.measured and profile.compute.attention_kernel == family
        assert f"attention kernel: {family} (the traces' kernels)" in profile.compute.source
        assert own_attention_kernel(profile) == family
        assert pin_attention_share(profile) == (FLASH2_ON_HOPPER_EFFICIENCY
                                                if family == FLASH2_KERNEL else None)
    plain = trace()
    plain["traceEvents"] = [e for e in plain["traceEvents"]
                            if "flash" not in e["name"]]  # no attention kernel: none recorded
    profile, _ = calibrate_from_sources(tmp_path / "p.json", base=str(base),
                                        traces=[f"4={write(tmp_path, plain, 'plain.json')}"],
                                        write=False)
    assert profile.compute.attention_kernel is None


@pytest.mark.parametrize("block_kernel", [FLASH2_KERNEL, None])
def test_the_planners_setting_of_a_profile_runs_the_kernel_predict_runs(block_kernel):
    """``plan.setting_from_profile`` (a layout evaluation at the block calibration's efficiency)
    and ``predict`` of another model on the same profile (its compute from its shape, pinned)
    give the same compute: one reading of the calibration, its attention core at the block's
    kernel (tests/test_gpu_measurements.py's check, on a block that ran flash2)."""
    from scalesim.layout import ParallelLayout
    from scalesim.plan import evaluate_layout, setting_from_profile
    from scalesim.predict import predict
    from scalesim.profiles import load_workload, profile_with_workload
    from scalesim.schemas import Scenario, ScenarioLayout

    base = _h100_with_block(block_kernel, block_kernel)
    base = base.model_copy(update={"hardware": base.hardware.model_copy(
        update={"devices_per_node": 2})})
    other, _ = profile_with_workload(base, load_workload("gpt-1.7b"), "gpt-1.7b")
    predicted = predict(other, Scenario(devices=[2], micro_batch=4, layout=ScenarioLayout(
        tp=2, pp=1, recompute="none")))[0].compute_s
    setting = setting_from_profile(base, other.workload.transformer, 4,
                                   params=other.workload.params)
    assert setting.attention_kernel == planner_kernel_of(block_kernel)
    planned = float(evaluate_layout(setting, ParallelLayout(dp=1, tp=2, micro_batch=4,
                                                            global_batch=4)).compute_s)
    assert predicted == pytest.approx(planned, rel=1e-9)


def test_the_calibration_summary_says_which_kernel_sdpa_ran():
    from scalesim.calibration.summary import model_parallel_lines

    _, _, times = _hopper_block_times(0.75, FLASH2_ON_HOPPER_EFFICIENCY)
    result = _block_result(times).model_copy(update={"attention_kernel": FLASH2_KERNEL})
    lines = model_parallel_lines(model_parallel_section(result, [], H100, "bf16", True))
    assert lines[1].startswith("  attention: SDPA ran the flash2 kernel; predictions from this "
                               "profile price the attention core at its rate")
    plain = model_parallel_lines(model_parallel_section(_block_result(times), [], H100, "bf16",
                                                        True))
    assert not any("attention:" in line for line in plain)


def test_the_summary_prices_the_memory_efficient_kernel_as_predictions_do():
    """SDPA's memory-efficient backend has no published rate: predictions price its core as
    the vendor kernel's (``planner_kernel_of``). The summary said "at its rate" for it too."""
    from scalesim.calibration.summary import attention_line

    assert attention_line(FLASH2_KERNEL).startswith(
        "attention: SDPA ran the flash2 kernel; predictions from this profile price the "
        "attention core at its rate, and at the fused-vendor kernel's where --attention-kernel "
        "fused-vendor asks")
    assert "at the flash2 kernel's where --attention-kernel flash2 asks" in attention_line(
        VENDOR_KERNEL)
    line = attention_line(MEM_EFFICIENT_FAMILY)
    assert "at its rate" not in line and "as the fused-vendor kernel's (it has no published " \
        "rate of its own)" in line and "--attention-kernel" not in line


def test_a_probe_that_cannot_start_still_runs_the_step(monkeypatch):
    """A torch whose function modes or compile stance the probe does not know: the step (the
    compute phase's gradients for the optimizer timing) still runs, once, and no kernel is
    recorded."""
    from scalesim.calibration import attention_probe

    def broken():
        raise AttributeError("module 'torch.compiler' has no attribute 'set_stance'")

    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    monkeypatch.setattr(attention_probe, "_eager", broken)
    ran = []
    assert attention_probe.timed_attention_kernel(lambda: ran.append(1)) is None
    assert ran == [1] and F.scaled_dot_product_attention is original
