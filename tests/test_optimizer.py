"""The optimizer step: a memory-bound estimate for presets, paid once per step, sharded by ZeRO."""

import pytest

from scalesim import presets
from scalesim.model.compute import optimizer_roofline_s
from scalesim.model.memory import DDP, ZERO1, ZERO3
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict
from scalesim.profiles import compute_from_reference, profile_from_presets, reference_run_step_s
from scalesim.schemas import (
    Hardware,
    LinkLevel,
    Profile,
    ReferenceThroughput,
    Scenario,
    Workload,
)


def test_roofline_counts_one_read_and_write_of_weights_and_state_and_one_gradient_read():
    # BERT-large, fp16 weights and gradients, fp32 master + m + v, on an A100 40GB.
    assert optimizer_roofline_s(336e6, 2, 2, 12, 1555.0) == pytest.approx(336e6 * 30 / 1555e9)


def test_datasheet_bandwidths_by_device_name():
    assert presets.memory_bandwidth_of("Tesla V100-SXM3 32GB (DGX-2)")[0] == 900.0
    assert presets.memory_bandwidth_of("A100-SXM4 80GB")[0] == 2039.0
    assert presets.memory_bandwidth_of("A100 80GB PCIe")[0] == 1935.0
    assert presets.memory_bandwidth_of("a100-sxm4 40gb")[0] == 1555.0
    assert presets.memory_bandwidth_of("AMD Instinct MI300X")[0] == 5300.0
    assert presets.memory_bandwidth_of("Gaudi3") is None  # not listed
    for hw in presets.HARDWARE.values():
        assert hw.memory_bandwidth_GBps == presets.memory_bandwidth_of(hw.device_name)[0]


def test_preset_profile_reproduces_its_reference_run():
    """BERT-large's reference: 4553 seq/s on 8 A100 80GB of a DGX A100 at micro-batch 256 x 32
    micro-steps (a cluster average). Its optimizer share and its communication are taken out,
    so the reference run comes back exactly, one device alone is faster per device (no
    communication, no wait for the slowest), and smaller steps pay the optimizer more often."""
    profile = profile_from_presets(presets.HARDWARE["dgx-a100"], presets.WORKLOADS["bert-large"])
    wl = profile.workload
    expected_s = optimizer_roofline_s(wl.params, wl.param_bytes_per_param,
                                      wl.grad_bytes_per_param, wl.optimizer_bytes_per_param,
                                      2039.0)
    assert profile.compute.optimizer_step_s == pytest.approx(expected_s)
    (ref,) = predict(profile, Scenario(devices=[8], micro_batch=256, accumulation=32))
    assert ref.samples_per_s == pytest.approx(4553, rel=1e-9)
    (alone,) = predict(profile, Scenario(devices=[1], micro_batch=256, accumulation=32))
    assert alone.samples_per_s > 4553 / 8 * 1.005
    (small,) = predict(profile, Scenario(devices=[1], micro_batch=32, accumulation=1))
    assert small.samples_per_s < alone.samples_per_s * 0.93


def _toy(devices=2, strategy="ddp", includes_communication=True):
    """1e9 fp16 parameters (2 GB of gradients; DDP all-reduces them in fp32, 4 GB), a 100
    GB/s link with no latency, 1000 GB/s memory (optimizer 1e9 * 30 B / 1e12 B/s = 0.03 s), no
    straggler spread, all communication exposed (contention 1); reference 10 samples/s per
    device at micro-batch 4."""
    link = LinkLevel(kind="test", busbw_GBps=100.0, latency_s=0.0)
    hw = Hardware(name="toy", device_name="Toy GPU", devices_per_node=8,
                  device_memory_bytes=1e12, memory_bandwidth_GBps=1000.0, device_speed_cv=0.0,
                  comm_compute_contention=1.0, intra_node=link, inter_node=link)
    ref = ReferenceThroughput(device_name="Toy GPU", samples_per_s=10.0, micro_batch=4,
                              devices=devices, strategy=strategy,
                              includes_communication=includes_communication, source="test")
    wl = Workload(name="toy", params=1e9, reference=[ref])
    return hw, wl


def test_a_cluster_average_has_its_run_communication_taken_out():
    # Step 4/10 = 0.4 s = 4 x per_sample + optimizer 0.03 s x 28/30 (PyTorch DDP under autocast
    # steps fp32 weights and gradients, 2·12 + 4 of the sweep's 30 B since session 46, §4) +
    # DDP's copies of its fp32 gradients into its buckets and back, 4 x 4 B x 1e9 / 1e12 B/s =
    # 0.016 s (2 ranks, session 56, §4 "Their copies, in time") +
    # all-reduce of 4 GB on 2 ranks at 100 GB/s busbw (DDP all-reduces fp32 gradients since
    # session 45: 4 B x 1e9 parameters; ring: 2(n-1)/n * S / B = 0.04 s).
    # per_sample = (0.4 - 0.028 - 0.016 - 0.04) / 4 = 0.079 (0.083 before session 56's copies,
    # 0.0825 before session 46's DDP sweep).
    hw, wl = _toy()
    curve, note = compute_from_reference(wl, hw)
    assert curve.optimizer_step_s == pytest.approx(0.03)
    assert curve.per_sample_s == pytest.approx(0.079, rel=1e-9)
    assert "communication and straggler wait taken out" in note
    # Declared without communication, only the optimizer and the copies come out:
    # (0.4 - 0.028 - 0.016) / 4.
    hw, wl = _toy(includes_communication=False)
    assert compute_from_reference(wl, hw)[0].per_sample_s == pytest.approx(0.089)


def test_a_sharded_reference_paid_only_its_shard_of_the_optimizer():
    """The Llama-2 preset's fault: a ZeRO-3 run on 8 devices paid 1/8 of the optimizer step,
    so only that comes out: (0.4 - 0.03/8 × 28/30) / 4 = 0.099125, not (0.4 - 0.03) / 4 (FSDP's
    ZeRO-3 sweeps 28 of the sweep's 30 bytes, docs/model.md §4; 0.0990625 before session 46)."""
    hw, wl = _toy(devices=8, strategy="zero3", includes_communication=False)
    assert compute_from_reference(wl, hw)[0].per_sample_s == pytest.approx(0.099125, rel=1e-12)


@pytest.mark.parametrize("strategy,swept", [("ddp", 44 / 30), ("zero1", 46 / 30),
                                            ("zero2", 28 / 30), ("zero3", 28 / 30)])
def test_a_reference_without_communication_computes_its_published_step(strategy, swept):
    """Declared without communication, the run's step 4/10 = 0.4 s is its compute: predicted
    back on its own 8 devices, 4 x per_sample + the optimizer step as the step model pays it
    (0.03 s, / 8 for ZeRO, x the default framework's sweep: PyTorch DDP's fp32 weights 28/30
    and, on 8 ranks, its bucket copies 16/30 (session 56),
    Megatron-Core's distributed optimizer with its default gradient-norm clip 46/30 (34/30
    before session 47), FSDP's fp32 shard 28/30, §4) is 0.4 s.
    Before session 46 the closed form took out 0.03/8 whatever the framework swept: ZeRO-1
    computed 0.40025 s, ZeRO-2/3 0.39975 s."""
    hw, wl = _toy(devices=8, strategy=strategy, includes_communication=False)
    curve, _ = compute_from_reference(wl, hw)
    shards = 1 if strategy == "ddp" else 8
    assert curve.per_sample_s == pytest.approx((0.4 - 0.03 / shards * swept) / 4, rel=1e-12)
    profile = Profile(name="toy", hardware=hw, workload=wl, compute=curve)
    (run,) = predict(profile, Scenario(devices=[8], micro_batch=4, strategy=strategy))
    assert run.compute_s == pytest.approx(0.4, rel=1e-12)


def test_a_zeroed_optimizer_estimate_still_takes_out_the_runs_bucket_copies():
    """100 samples/s at micro-batch 4 is a 0.04 s step: the 0.03 s optimizer estimate is over
    OPTIMIZER_MAX_SHARE of it and is zeroed, but the run's 8 DDP ranks still copied their fp32
    gradients into the buckets and back, 16 B x 1e9 / 1e12 B/s = 0.016 s at the device's
    bandwidth, as the step model charges them: per_sample = (0.04 - 0.016) / 4 = 0.006 s, and
    the run predicted back on its 8 devices computes its 0.04 s. Before session 57 the closed
    form took the copies out at the optimizer sweep's rate, so with the estimate zeroed not at
    all (0.01 s a sample, a 0.056 s step predicted back)."""
    hw, wl = _toy(devices=8, includes_communication=False)
    ref = wl.reference[0].model_copy(update={"samples_per_s": 100.0})
    wl = wl.model_copy(update={"reference": [ref]})
    curve, _ = compute_from_reference(wl, hw)
    assert curve.optimizer_step_s == 0.0
    assert curve.per_sample_s == pytest.approx(0.006, rel=1e-12)
    profile = Profile(name="toy", hardware=hw, workload=wl, compute=curve)
    (run,) = predict(profile, Scenario(devices=[8], micro_batch=4))
    assert run.compute_s == pytest.approx(0.04, rel=1e-12)


def test_gpt_7b_reference_is_the_declared_fsdp_run():
    """MPT-7B on 8 A100 80GB (llm-foundry): 3684 tokens/s per GPU, 16 x 2 sequences of 4096
    per device per step, FSDP full shard, activation checkpointing like the preset. Without
    communication the per-sample time would be (32 / (3684/4096) - 0.09917/8) / 32 = 1.111447
    s; taking the run's communication out leaves a little less."""
    profile = profile_from_presets(presets.HARDWARE["dgx-a100"], presets.WORKLOADS["gpt-7b"])
    ref = profile.workload.reference[0]
    assert (ref.devices, ref.samples_per_step, ref.strategy) == (8, 256, "zero3")
    optimizer_s = 6.74e9 * 30 / 2039e9
    assert profile.compute.optimizer_step_s == pytest.approx(optimizer_s)
    compute_only = (32 / (3684 / 4096) - optimizer_s / 8) / 32
    assert compute_only == pytest.approx(1.111447, rel=1e-6)
    assert 0.97 * compute_only < profile.compute.per_sample_s < compute_only
    # The reference run itself reproduces the published step, and the preset reproduces it.
    step = reference_run_step_s(ref, profile.workload, presets.HARDWARE["dgx-a100"],
                                profile.compute.per_sample_s, optimizer_s)
    assert step == pytest.approx(32 / (3684 / 4096), rel=1e-9)
    (run,) = predict(profile, Scenario(devices=[8], micro_batch=16, accumulation=2,
                                       strategy="zero3"))
    assert run.samples_per_s == pytest.approx(8 * 3684 / 4096, rel=1e-9) and run.fits


def test_recomputation_converts_by_one_extra_forward():
    """A run with full activation checkpointing did 4/3 of the forward+backward work: for a
    workload without it 3/4 of the time is kept, and the other way round 4/3 (of (0.4 - 0.03 x
    44/30) / 4 = 0.089, PyTorch DDP's 28 B sweep and its 16 B of bucket copies on the reference's
    2 ranks, §4)."""
    hw, wl = _toy(includes_communication=False)
    ref = wl.reference[0].model_copy(update={"activation_recompute": True})
    plain = compute_from_reference(wl.model_copy(update={"reference": [ref]}), hw)[0]
    assert plain.per_sample_s == pytest.approx(0.089 * 0.75)
    recomputing = wl.model_copy(update={"activation_recompute": True})
    assert compute_from_reference(recomputing, hw)[0].per_sample_s == pytest.approx(0.089 * 4 / 3)


def test_zero3_on_8_gpus_beats_one_device_only_by_the_optimizer_it_shards():
    """The 102.8% of issue 10: above 100% efficiency is possible only by the optimizer work
    ZeRO-3 removes: speed-up <= step_1 / (step_1 - optimizer * (1 - 1/8)) / 8 per device."""
    profile = profile_from_presets(presets.HARDWARE["dgx-a100"], presets.WORKLOADS["gpt-7b"])
    one, eight = predict(profile, Scenario(devices=[1, 8], strategy="zero3"))
    removed = profile.compute.optimizer_step_s * (1 - 1 / 8)
    assert eight.efficiency < one.step_time_s / (one.step_time_s - removed)
    (ddp,) = predict(profile, Scenario(devices=[8], strategy="ddp"))
    assert ddp.efficiency < 1.0


def test_a_one_device_reference_cannot_include_communication():
    with pytest.raises(ValueError, match="communicates nothing"):
        ReferenceThroughput(device_name="x", samples_per_s=1, micro_batch=1,
                            includes_communication=True, source="")


@pytest.mark.parametrize("strategy", [ZERO1, ZERO3])
def test_zero_shards_the_optimizer_step(strategy):
    inp = StepInputs(
        devices=8, devices_per_node=8, micro_batch=32, accumulation=2, overhead_s=0.001,
        per_sample_s=0.002, optimizer_step_s=0.08, backward_fraction=2 / 3, params=1e9,
        wire_bytes_per_param=2, intra_latency_s=2e-6, intra_busbw_GBps=230,
        inter_latency_s=6e-6, inter_busbw_GBps=24)
    ddp = evaluate(inp.replace(strategy=DDP))
    sharded = evaluate(inp.replace(strategy=strategy))
    # PyTorch DDP under autocast steps fp32 weights and gradients, (2·12 + 4) / (2·2 + 2 + 2·12)
    # = 28/30 of the sweep; Megatron-Core's ZeRO-1 also copies its fp32 main shard into the
    # bf16 weights and clips its fp32 main grads by default (norm 4, scale 4 + 4: session 47),
    # (2·12 + 4 + 4 + 2 + 12) / 30 = 46/30; FSDP's ZeRO-3 steps its fp32 shard with its fp32
    # gradient and no bf16 copy, 28/30 (session 46, docs/model.md §4); DDP on 8 ranks also
    # copies its fp32 gradients into its buckets and back, 4 x 4 = 16 B, 16/30 (session 56)
    reads = 46 / 30 if strategy == ZERO1 else 28 / 30
    assert float(ddp.compute_s - sharded.compute_s) == pytest.approx(
        0.08 * (44 / 30 - reads / 8))
