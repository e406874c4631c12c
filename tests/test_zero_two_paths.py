"""One answer for ZeRO on both prediction paths (docs/model.md §4, §22).

A transformer workload predicts through the layout step, a parameter count through the
data-parallel step; at tp = pp = 1 both call ``model/zero_exchange.exchange`` for the ZeRO
exchange and ``memory.state_shards`` for the model states, so DDP and ZeRO-1/2/3 agree (before
this, the layout path gave ZeRO-1 +9.8 % on the seed scenario at 8 GPUs and the data-parallel
path -1.5 %; -34 % against -46 % at 16).
"""

import pytest
from step_fixtures import one_server

from scalesim.model.memory import ZERO1
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate
from scalesim.predict import predict
from scalesim.presets import get_transformer
from scalesim.profiles import default_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

# Agreement of the two paths: the exposed communication is the same exchange over the same
# windows but for the straggler stretch (docs/model.md §3): each path stretches the last
# device's passes by its own wait, and the layout path's device spread includes the optimizer
# step (§22). The bucket timeline's exposed tail falls at most as fast as its window grows
# (d exposed / d T_b in [-1, 0]), and the windows differ by (backward share) x the two waits'
# difference, so the exposed times differ by at most the waits' difference (measured: 1.08e-4 s
# at most, DDP at 64 devices, 0.05 % of the step, the waits 2.0e-4 s apart there; 1e-17 of the
# step before session 48). The step time within 0.5 % (measured: 0.19 % at most).
STEP_TOLERANCE = 0.005
EXPOSED_TOLERANCE = 1e-9


def _exposed_agree(a, b) -> bool:
    """Whether the two paths' exposed exchanges differ by no more than their straggler waits
    (and 1e-9 of the step)."""
    return abs(a.exposed_comm_s - b.exposed_comm_s) <= (
        abs(a.straggler_s - b.straggler_s) + EXPOSED_TOLERANCE * b.step_time_s)


def _paths():
    """The seed profile (BERT-large, DLE's measured throughput, a2-highgpu-8g) with its shape
    at s = 128 (layout path) and as a parameter count with the same 24 blocks (data-parallel
    path), at the framework's default reduction: the preset states its DLE run's fp16 all-reduce,
    these tests the bf16 defaults (DDP's autocast and Megatron's main grads fp32)."""
    seed = default_profile()
    plain = seed.model_copy(update={"workload": seed.workload.model_copy(
        update={"reduce_bytes_per_param": None})})
    shape = get_transformer("bert-large").model_copy(update={"seq_len": 128})
    shaped = plain.model_copy(update={"workload": plain.workload.model_copy(
        update={"transformer": shape})})
    counted = plain.model_copy(update={"workload": plain.workload.model_copy(
        update={"layers": shape.layers})})
    return shaped, counted


@pytest.mark.parametrize(("framework", "grad_sync"), [("fsdp", "every-micro-step"),
                                                       ("deepspeed", "every-micro-step"),
                                                       ("fsdp", "once-per-step")])
@pytest.mark.parametrize("accumulation", [1, 4])
def test_both_paths_agree_for_every_strategy(framework, grad_sync, accumulation):
    shaped, counted = _paths()
    for strategy in ("ddp", "zero1", "zero2", "zero3"):
        s = Scenario(devices=[2, 8, 16, 64], strategy=strategy, zero_framework=framework,
                     accumulation=accumulation, grad_sync=grad_sync)
        layout, data_parallel = predict(shaped, s), predict(counted, s)
        assert all(r.dp == r.devices for r in layout) and all(r.dp is None for r in data_parallel)
        for a, b in zip(layout, data_parallel, strict=True):
            assert a.compute_s == pytest.approx(b.compute_s, rel=1e-9)
            assert a.step_time_s == pytest.approx(b.step_time_s, rel=STEP_TOLERANCE), (
                strategy, a.devices)
            assert _exposed_agree(a, b), (strategy, a.devices)
        # 16 and 64 devices cross 100 Gb/s Ethernet: the exchange is a large part of the step,
        # so agreement there is agreement of the exchange, not of the compute
        assert layout[-1].exposed_comm_s > 0.3 * layout[-1].step_time_s


def test_model_states_are_sharded_by_one_rule():
    # what ZeRO-1 and ZeRO-2 save against DDP is the same number on both paths; ZeRO-3's also,
    # less its two gathered units (memory.ZERO3_GATHERED_UNITS), which the layout path takes as
    # two layers of 12 h^2 parameters and the data-parallel path as two blocks of Psi / L
    shaped, counted = _paths()

    def saved(profile, strategy):
        ddp, z = (predict(profile, Scenario(devices=[8], strategy=st))[0].memory_bytes
                  for st in ("ddp", strategy))
        return ddp - z

    for strategy in ("zero1", "zero2"):
        assert saved(shaped, strategy) == pytest.approx(saved(counted, strategy), rel=1e-9)
    layer_weights = 12 * 1024**2 * 2  # 12 h^2 parameters of a BERT-large layer, 2 bytes each
    block_weights = counted.workload.params / 24 * 2  # Psi / L of the 24 blocks, 2 bytes each
    assert saved(counted, "zero3") - saved(shaped, "zero3") == pytest.approx(
        2 * layer_weights - 2 * block_weights, rel=0.01)  # -5.7 MB (was +50 MB)


def test_no_sync_on_both_paths_by_hand():
    # FSDP no_sync (grad_sync once-per-step), k = 4, 16 GPUs over the seed's 6.8 GB/s network:
    # both paths hold the full gradients (Psi x 2 B whole instead of a 1/16 shard of fp32 4 B,
    # FSDP's ZeRO-2 and, since session 46, ZeRO-3's (§4), Psi = BERT-large's 24 blocks of 12 h^2 plus
    # embeddings, the profile's count) and move ZeRO-3 from 12 to 9 block passes, ZeRO-2 from 8
    # to 2; the steps agree within 0.5 %
    shaped, counted = _paths()
    psi = counted.workload.params
    for strategy, passes, shard_bytes in (("zero3", (12, 9), 4), ("zero2", (8, 2), 4)):
        s = Scenario(devices=[16], strategy=strategy, accumulation=4, overlap=False)
        n = s.model_copy(update={"grad_sync": "once-per-step"})
        for profile in (shaped, counted):
            every, once = predict(profile, s)[0], predict(profile, n)[0]
            assert once.memory_bytes - every.memory_bytes == pytest.approx(
                psi * (2 - shard_bytes / 16), rel=0.01 if profile is shaped else 1e-9), strategy
            # without overlap every pass of the 24 blocks is exposed: the ratio of passes
            assert once.exposed_comm_s / every.exposed_comm_s == pytest.approx(
                passes[1] / passes[0], rel=1e-9), (strategy, profile.workload.transformer)
        a, b = predict(shaped, n)[0], predict(counted, n)[0]
        assert a.step_time_s == pytest.approx(b.step_time_s, rel=STEP_TOLERANCE)


def test_the_sharding_remedy_gains_the_same_on_both_paths():
    shaped, counted = _paths()
    for framework in ("fsdp", "deepspeed"):
        for devices in (8, 16):
            gains = []
            for profile in (shaped, counted):
                _, results = rank_remedies(profile, Scenario(devices=[devices],
                                                             zero_framework=framework), devices)
                gains.append(next(r for r in results if r.key == "sharding").gain)
            assert gains[0] == pytest.approx(gains[1], abs=0.005), (framework, devices, gains)


def test_sharding_caveat_says_what_the_model_says():
    shaped, _ = _paths()
    _, results = rank_remedies(shaped, Scenario(devices=[8]), 8)
    z1 = next(r for r in results if r.key == "sharding")
    assert "Megatron-Core distributed optimizer" in z1.title
    assert "updates 1/8 of the optimizer state" in z1.reason
    # session 44: Megatron-Core's ZeRO-1 reduce-scatters its fp32 main grads (4 + 2 bytes a
    # parameter); session 45: DDP all-reduces fp32 gradients (4 + 4): 6 / 8 = 0.75x
    assert "sends 0.75x the bytes of now per step" in z1.reason
    assert "gradients reduced at" not in z1.reason
    sent = [predict(_paths()[1], Scenario(devices=[8], strategy=s))[0].comm_bytes
            for s in ("ddp", "zero1")]  # the data-parallel path counts its bytes
    assert sent[1] / sent[0] == pytest.approx(0.75, rel=1e-9)
    assert z1.verdict == "remedy" and z1.gain > 0.05  # the optimizer step split 8 ways
    _, results = rank_remedies(shaped, Scenario(devices=[8], zero_framework="deepspeed"), 8)
    ds = next(r for r in results if r.key == "sharding")
    assert "DeepSpeed stage 1" in ds.title and "1.5x the bytes" in ds.reason
    assert ds.verdict == "loses"  # its exposed all-gather costs more than the split saves


# ------------------------------------------------------------ the ZeRO-1 exchange by hand

_ONE_SERVER = one_server(1e9, strategy=ZERO1)


def test_megatron_zero1_exchange_by_hand():
    # Psi = 1e9 parameters of 2 bytes, S = 2e9 bytes, 8 GPUs of one server (alpha = 1 us,
    # B = 100 GB/s). Megatron-Core's buckets: max(4e7, 1e6 x 8) = 4e7 parameters, 25 of them.
    # The parameters gather in bf16: 8e7 bytes a bucket, one ring all-gather
    # 7 x 1 us + 7/8 x 8e7 B / 100 GB/s = 0.707 ms. The gradients reduce-scatter from the fp32
    # main_grad buffer (session 44, docs/model.md §4): 1.6e8 bytes a bucket, 1.407 ms.
    gather = 7e-6 + 7 / 8 * 8e7 / 100e9
    reduce = 7e-6 + 7 / 8 * 1.6e8 / 100e9
    # Without overlap: 25 reduce-scatters and 25 all-gathers, one after another.
    serial = evaluate(StepInputs(framework=FSDP, overlap=False, **_ONE_SERVER))
    assert float(serial.exposed_comm_s) == pytest.approx(25 * (reduce + gather), rel=1e-12)
    assert float(serial.comm_bytes) == pytest.approx(7 / 8 * (4e9 + 2e9))  # 1.5x DDP's
    # With overlap, a 1 s micro-step (backward 2/3 s, forward 1/3 s): a bucket of gradients is
    # ready every 26.7 ms of backward and reduced in 1.407 ms, so only the last one is left
    # after the backward; the next forward needs each bucket of parameters before its layers,
    # so only the first gather waits. Exposed: 1.407 + 0.707 = 2.114 ms.
    hidden = evaluate(StepInputs(framework=FSDP, overlap=True, **_ONE_SERVER))
    assert float(hidden.exposed_comm_s) == pytest.approx(reduce + gather, rel=1e-12)
    assert float(hidden.comm_total_s) == pytest.approx(25 * (reduce + gather), rel=1e-12)
    # bf16 gradient reduction stated (grad_reduce_in_fp32 False): both at 0.707 ms, DDP's bytes
    bf16 = evaluate(StepInputs(framework=FSDP, overlap=False, reduce_bytes_per_param=2.0,
                               **_ONE_SERVER))
    assert float(bf16.exposed_comm_s) == pytest.approx(50 * gather, rel=1e-12)  # 35.35 ms
    assert float(bf16.comm_bytes) == pytest.approx(2 * 7 / 8 * 2e9)


def test_deepspeed_zero1_exchange_by_hand():
    # DeepSpeed stage 1: reduce_bucket_size 5e8 elements = 1e9 bytes, 2 buckets, each an
    # all-reduce (use_multi_rank_bucket_allreduce); NCCL's ring on one server,
    # 14 x 1 us + 2 x 7/8 x 1e9 B / 100 GB/s = 17.514 ms (the tree moves 2S: 20 ms). The second
    # bucket is ready at the end of the backward: 17.514 ms exposed. Then the parameters are
    # all-gathered after the optimizer step in 2 allgather_bucket_size buckets,
    # 2 x (7 x 1 us + 7/8 x 1e9 / 100e9) = 17.514 ms, all exposed. Sent: 3 x 7/8 x S.
    all_reduce = 14e-6 + 2 * 7 / 8 * 1e9 / 100e9
    gather = 7e-6 + 7 / 8 * 1e9 / 100e9
    ds = evaluate(StepInputs(framework=DEEPSPEED, overlap=True, **_ONE_SERVER))
    assert float(ds.exposed_comm_s) == pytest.approx(all_reduce + 2 * gather, rel=1e-12)
    assert float(ds.comm_total_s) == pytest.approx(2 * all_reduce + 2 * gather, rel=1e-12)
    assert float(ds.comm_bytes) == pytest.approx(3 * 7 / 8 * 2e9)


def test_the_exchange_knobs_reach_the_layout_path():
    # zero_framework, the all-reduce algorithm and DDP's bucket size are the shared exchange's:
    # a transformer workload honours them in predict (and zero_framework as a sweep axis) as a
    # parameter count does
    from scalesim.sweep import sweep

    shaped, counted = _paths()
    for knobs in ({"strategy": "zero1", "zero_framework": "deepspeed"},
                  {"algorithm": "ring"}, {"bucket_mib": 100.0}):
        s = Scenario(devices=[16], **knobs)
        a, b = predict(shaped, s)[0], predict(counted, s)[0]
        assert _exposed_agree(a, b), knobs
        assert a.exposed_comm_s != pytest.approx(predict(shaped, Scenario(devices=[16]))[0]
                                                 .exposed_comm_s, rel=1e-3), knobs
    # every exchange knob is a sweep axis of layouts too, each row what predict says of it
    # (ZeRO-1 for the framework; DDP, whose all-reduce buckets they set, for the others)
    axes = {"zero_framework": ["fsdp", "deepspeed"], "algorithm": ["ring", "tree"],
            "bucket_mib": [25.0, 100.0], "overlap": [True, False]}
    for name, values in axes.items():
        base = Scenario(devices=[16], strategy="zero1" if name == "zero_framework" else "ddp")
        grid = sweep(shaped, base, {name: values})
        steps = grid.columns["step_time_s"]
        assert len(set(steps.tolist())) == len(values), name  # each value moves the step
        for value, step in zip(grid.columns[name], steps, strict=True):
            value = value.item() if hasattr(value, "item") else value
            want = predict(shaped, base.model_copy(update={name: value}))
            assert step == pytest.approx(want[0].step_time_s, rel=1e-12), (name, value)


def test_no_sync_stragglers_on_both_paths():
    # jitter of 5 % per micro-step, k = 4, 16 GPUs: ZeRO-2 under no_sync waits once per step on
    # both paths (jitter pooled over the 4 micro-steps: about half of the per-micro-step wait,
    # sqrt(4) / 4, the device spread adds the same to both); ZeRO-3 still gathers in every
    # micro-step and waits as before
    shaped, counted = _paths()
    for profile in (shaped, counted):
        wait = {}
        for strategy in ("zero2", "zero3"):
            for sync in ("every-micro-step", "once-per-step"):
                s = Scenario(devices=[16], strategy=strategy, accumulation=4, straggler_cv=0.05,
                             device_speed_cv=0.0, grad_sync=sync)
                wait[strategy, sync] = predict(profile, s)[0].straggler_s
        assert wait["zero2", "once-per-step"] == pytest.approx(
            0.5 * wait["zero2", "every-micro-step"], rel=0.02)
        assert wait["zero3", "once-per-step"] == pytest.approx(
            wait["zero3", "every-micro-step"], rel=1e-12)
