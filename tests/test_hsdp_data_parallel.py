"""Hybrid sharding (HSDP) on the data-parallel path: a workload that is a parameter count (a
ResNet, BERT) sharded over a shard group of s devices and replicated across the devices / s
groups (FSDP HYBRID_SHARD; docs/model.md §16). The exchange and memory by hand, the layout
path's value for a transformer of the same parameters, full sharding bit for bit, the slow
network, and the edges (predict, sweep, the app's link)."""

import itertools
import json

import numpy as np
import pytest
from cli_harness import run_cli
from test_collective_waits import GPT, HW
from test_hsdp import BAD_SHARD_GROUPS, exchange_by_hand_s
from test_hsdp import _inputs as layout_inputs

from scalesim.figures import throughput
from scalesim.model import collectives as coll
from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.zero_exchange import sent_per_byte

RING = coll.ALGORITHMS["ring"]
PARAMS = GPT["params"]
L = GPT["layers"]
LINKS = {k: HW[k] for k in ("intra_latency_s", "intra_busbw_GBps", "inter_latency_s",
                            "inter_busbw_GBps")}


def _step(**changes):
    base = dict(devices=16, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.01,
                per_sample_s=0.02, optimizer_step_s=0.008, backward_fraction=2 / 3,
                params=PARAMS, wire_bytes_per_param=2.0, strategy=2, algorithm=RING,
                overlap=False, blocks=L, **LINKS)
    base.update(changes)
    return StepInputs(**base)


def test_dp_hsdp_exchange_by_hand():
    """16 devices on two 8-GPU servers, FSDP SHARD_GRAD_OP, one micro-step, overlap off: per
    block an all-gather and a reduce-scatter of P w / L. Full sharding rings over 16 devices
    across the servers at min(intra, inter); HSDP (s = 8) rings over the 8 devices of a server
    on NVLink, then all-reduces each block's 1/8 shard over the r = 2 replicas (one device per
    server, 1/8 of its NICs each)."""
    full_s, expected = exchange_by_hand_s()
    full = evaluate(_step())
    assert float(full.exposed_comm_s) == pytest.approx(full_s, rel=1e-9)
    hsdp = evaluate(_step(shard_group=8))
    assert float(hsdp.exposed_comm_s) == pytest.approx(expected, rel=1e-9)
    assert float(hsdp.comm_total_s) == pytest.approx(expected, rel=1e-9)  # nothing hidden
    # bytes sent: 2 rings of (s-1)/s P w, and the all-reduce of the P w / s shard over r = 2
    assert float(hsdp.comm_bytes) == pytest.approx(
        2 * 7 / 8 * PARAMS * 2.0 + 2 * (1 / 2) * PARAMS * 2.0 / 8, rel=1e-12)
    # the optimizer step updates 1/8 of the states, not 1/16; the straggler wait is unchanged.
    # FSDP's ZeRO-2 steps its fp32 shard with its fp32 gradient shard and no bf16 copy:
    # (2·12 + 4) / (2·2 + 2 + 2·12) = 28/30 of the given sweep (docs/model.md §4, session 46)
    assert float(hsdp.compute_s) - float(full.compute_s) == pytest.approx(
        (0.008 / 8 - 0.008 / 16) * 28 / 30, rel=1e-9)
    assert float(hsdp.straggler_s) == float(full.straggler_s)


@pytest.mark.parametrize("strategy, framework, k, grad_sync, shard, replicas, expected", [
    (0, 0, 4, 0, 8, 1, 2 * 7 / 8),  # DDP over 8: one all-reduce, 2 (n - 1) / n
    (1, 0, 4, 0, 8, 4, 2 * 7 / 8 + 1 * (2 * 3 / 4) / 8),  # Megatron ZeRO-1: one reduce-scatter
    (1, 1, 4, 0, 16, 1, 3 * 15 / 16),  # DeepSpeed ZeRO-1: 3 units, no hybrid
    (2, 1, 3, 0, 4, 1, (2 * 3 + 1) * 3 / 4),  # DeepSpeed ZeRO-2: 2k + 1
    (3, 0, 2, 0, 8, 4, 3 * 2 * 7 / 8 + 2 * (2 * 3 / 4) / 8),  # FULL_SHARD: 3k, k reduce-scatters
    (3, 0, 2, 1, 8, 2, (2 * 2 + 1) * 7 / 8 + 1 * (2 * 1 / 2) / 8),  # under no_sync: 2k + 1, one
])
def test_bytes_sent_per_byte_by_hand(strategy, framework, k, grad_sync, shard, replicas,
                                     expected):
    """One function of the bytes each device sends per byte of the gradients, for the step
    model and the traces' fitted link (``zero_exchange.sent_per_byte``): §4's units x (s - 1) / s
    and, under hybrid sharding, each reduce-scatter's all-reduce of its 1/s shard, 2 (r - 1) / r
    of it; the step model's ``comm_bytes`` is it times P w."""
    got = float(sent_per_byte(strategy, framework, k, grad_sync, shard, replicas))
    assert got == pytest.approx(expected, rel=1e-15)


def test_the_step_models_bytes_sent_are_the_one_functions():
    """HSDP FULL_SHARD, k = 2, s = 8 of 16: 3k (s - 1)/s + k (2 (r - 1)/r) / s = 5.25 + 0.25."""
    step = evaluate(_step(strategy=3, accumulation=2, shard_group=8))
    assert float(step.comm_bytes) == pytest.approx(5.5 * PARAMS * 2.0, rel=1e-15)


@pytest.mark.parametrize("shard_group", [0, 8])
def test_dp_path_equals_the_layout_path_for_the_same_parameters(shard_group):
    """A transformer of the same parameters at dp 16, tp = pp = 1 (one FSDP unit per layer, as
    ``blocks`` here): the layout path's exposed exchange is the data-parallel path's, full
    sharding and HSDP alike (the same ``zero_exchange`` on the same ``shard_groups`` links)."""
    dp = evaluate(_step(shard_group=shard_group))
    layout = evaluate_layouts(layout_inputs(shard_group=shard_group))
    assert float(dp.exposed_comm_s) == pytest.approx(float(layout.dp_exposed_s), rel=1e-12)


def test_a_shard_group_of_all_devices_is_todays_model_bit_for_bit():
    """s = devices, s above them, and 0 (the default) are full sharding: every output equal
    bit for bit over a grid of device counts, servers, strategies, frameworks, gradient syncs,
    algorithms, overlap and accumulation (DDP ignores the shard group)."""
    grid = list(itertools.product((1, 2, 4, 8, 16, 32), (4, 8), (0, 1, 2, 3), (0, 1), (0, 1),
                                  (0, 1, 2, 3), (True, False), (1, 4)))
    p, g, strategy, fw, sync, algo, ov, k = (np.array(c) for c in zip(*grid, strict=True))
    x = _step(devices=p, devices_per_node=np.minimum(g, p), strategy=strategy, framework=fw,
              grad_sync=sync, algorithm=algo, overlap=ov, accumulation=k, device_cv=0.02,
              jitter_cv=0.03, comm_contention=0.2, nvls_busbw_ratio=1.3,
              intra_subset_shares=((2, 0.5), (4, 0.75)))
    default = evaluate(x)
    for same in (p, 2 * p, np.where(strategy == 0, 1, p)):
        r = evaluate(x.replace(shard_group=same))
        for field in default.__dataclass_fields__:
            assert np.array_equal(getattr(r, field), getattr(default, field)), field


@pytest.mark.parametrize("strategy", [1, 2, 3])
def test_dp_hsdp_memory_is_zero_over_the_shard_group(strategy):
    """States sharded over s = 4 of 16 devices (Rajbhandari et al. 2019 §5 with N = s):
    parameters / s under ZeRO-3, gradients / s from ZeRO-2, optimizer state / s from ZeRO-1,
    plus ZeRO-3's two gathered units of P w / L and the activations."""
    x = _step(strategy=strategy, shard_group=4, activation_bytes_per_sample=1e8, micro_batch=2)
    weights = {1: 2.0, 2: 2.0, 3: 2.0 / 4}[strategy] * PARAMS
    # ZeRO-1: Megatron-Core's distributed optimizer, its fp32 main_grad buffer whole; ZeRO-2:
    # FSDP's gradient shard in fp32 (§4)
    grads = {1: 4.0, 2: 4.0 / 4, 3: 2.0 / 4}[strategy] * PARAMS
    gathered = 2 * PARAMS * 2.0 / L if strategy == 3 else 0.0
    expected = weights + grads + 12.0 * PARAMS / 4 + gathered + 2e8
    assert float(evaluate(x).memory_bytes) == pytest.approx(expected, rel=1e-12)
    assert float(evaluate(x.replace(shard_group=0)).memory_bytes) < expected


def test_dp_hsdp_wins_on_a_slow_inter_server_network():
    """One 100 Gb/s NIC per 8-GPU server (12.5 GB/s), 32 devices, ZeRO-3 with overlap: sharding
    inside each server (s = 8) keeps the gathers and reduce-scatters on NVLink and sends only a
    1/8 shard across, and beats full sharding; on fast NICs the gap narrows."""
    slow = dict(devices=32, strategy=3, overlap=True, algorithm=0, inter_busbw_GBps=12.5,
                micro_batch=8)
    full, hsdp = (evaluate(_step(**slow, shard_group=s)) for s in (0, 8))
    assert float(hsdp.step_time_s) < float(full.step_time_s)
    assert float(hsdp.exposed_comm_s) < float(full.exposed_comm_s)
    fast = {**slow, "inter_busbw_GBps": 400.0}
    f_full, f_hsdp = (evaluate(_step(**fast, shard_group=s)) for s in (0, 8))
    assert (float(f_full.step_time_s) / float(f_hsdp.step_time_s)
            < float(full.step_time_s) / float(hsdp.step_time_s))


# ------------------------------------------------------------------ the edges

SLOW_NIC = 12.5  # GB/s


def test_predict_shards_a_parameter_count_over_the_group(capsys):
    """``predict --shard-group 8`` of bert-large (a parameter count) predicts: --json says the
    group per row (all devices where they are within it), the text names HSDP, and a row whose
    devices are within the group is full sharding exactly."""
    base = ["predict", "--hardware", "dgx-a100", "--devices", "4,8,16,32", "--strategy",
            "zero3", "--inter-busbw", str(SLOW_NIC), "--json"]
    code, out, err = run_cli(capsys, [*base, "--shard-group", "8"])
    assert code == 0, err
    hsdp = json.loads(out)
    code, out, _ = run_cli(capsys, base)
    full = json.loads(out)
    assert [r["shard_group"] for r in hsdp] == [4, 8, 8, 8]
    assert [r["shard_group"] for r in full] == [4, 8, 16, 32]
    assert hsdp[:2] == full[:2]
    for h, f in zip(hsdp[2:], full[2:], strict=True):
        assert h["step_time_s"] < f["step_time_s"] and h["memory_bytes"] > f["memory_bytes"]
    code, out, _ = run_cli(capsys, base[:-1] + ["--shard-group", "8"])
    assert code == 0
    assert ("HSDP: ZeRO states sharded over 8 ranks, replicated across devices / shard group "
            "copies") in out


@pytest.mark.parametrize("args, words", BAD_SHARD_GROUPS)
def test_a_parameter_count_refuses_a_bad_shard_group_in_one_line(capsys, args, words):
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--devices", "16",
                                      "--json", *args])
    assert code != 0 and out == "" and words in err and "error: at 16 devices, " in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_shard_group_sweep_of_a_parameter_count_is_predict_at_each_group():
    """sweep's shard_group axis on a parameter count: each row is predict with that
    --shard-group; rows the group cannot run (DDP, a group that does not divide the devices)
    are dropped and counted as layouts that break a rule, the first named."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-a100", "bert-large")
    base = Scenario(devices=[8, 16, 32], global_batch=256, inter_busbw_GBps=SLOW_NIC,
                    strategy="zero3")
    result = sweep(profile, base, {"shard_group": [4, 8, 32]})
    c = result.columns
    assert result.dropped == 0 and list(c["devices"]) == [8] * 3 + [16] * 3 + [32] * 3
    for j, group in enumerate((4, 8, 32)):
        rows = predict(profile, base.model_copy(update={"layout": ScenarioLayout(
            shard_group=group)}))
        at = slice(j, None, 3)  # the rows of this group, one per device count
        for name in ("step_time_s", "exposed_comm_s", "comm_total_s", "memory_bytes",
                     "samples_per_s", "efficiency", "shard_group"):
            assert list(c[name][at]) == [getattr(r, name) for r in rows], name
    assert list(c["shard_group"][2::3]) == [8, 16, 32]  # 32 shards over all the devices
    mixed = sweep(profile, base, {"strategy": ["ddp", "zero3"], "shard_group": [3, 8]})
    assert mixed.size == 3 and set(mixed.columns["shard_group"]) == {8}
    assert mixed.dropped == mixed.dropped_layout == 9
    assert mixed.layout_example.startswith("shard group 3 on 8 devices: shard group 3 needs")
    # the scenario's own group on a strategy axis that holds ddp: the ddp rows run without it,
    # as predict runs their scenario without it (refused whole before session 42; the rows
    # against predict: tests/test_sweep_one_value_shard_group.py)
    one = sweep(profile, base.model_copy(update={"layout": ScenarioLayout(shard_group=8)}),
                {"strategy": ["ddp", "zero3"]})
    assert one.columns["strategy"].tolist() == ["ddp", "zero3"] * 3
    assert one.columns["shard_group"].tolist() == [None, 8] * 3
    assert one.ignored == {"shard_group": (3, "strategy ddp on 8 devices")}


def test_the_cli_sweep_of_a_parameter_count_counts_dropped_groups(capsys):
    code, out, err = run_cli(capsys, ["sweep", "--hardware", "dgx-a100", "--devices", "16",
                                      "--strategy", "zero3", "--shard-group-values", "3,8"])
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert dict(zip(header.split(","), row.split(","), strict=True))["shard_group"] == "8"
    assert "1 breaks a layout rule (e.g. shard group 3 on 16 devices" in err
    # the rule in the user's words, no module name after it (session 14)
    assert "does not divide dp 16" in err and "scalesim.layout" not in err, err


BERT_16 = {"v": "9", "hw": "dgx-a100", "wl": "bert-large", "dmax": "16", "strat": "zero3",
           "mb": "32", "sg": "8"}


def test_an_hsdp_link_of_a_parameter_count_opens_with_predicts_numbers():
    """A v9 link with sg on bert-large round-trips, builds the scenario with the shard group
    (no 'left out' note) and the page shows predict's numbers, not full sharding's."""
    from app_harness import link_param, open_app
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import decode_query, encode_query

    from scalesim.predict import predict

    state, profile, messages = decode_query(BERT_16)
    assert messages == [] and state.sg == 8
    link = encode_query(state, profile)
    assert (link["v"], link["sg"]) == ("9", "8")
    assert decode_query(link)[:2] == (state, profile)
    scenario, notes = build_scenario(state, profile)
    assert scenario.layout.shard_group == 8 and not [n for n in notes if "left out" in n]
    rows = predict(profile, scenario)
    full = predict(profile, build_scenario(state.model_copy(update={"sg": None}), profile)[0])
    assert rows[-1].devices == 16 and rows[-1].shard_group == 8
    assert rows[-1].samples_per_s != full[-1].samples_per_s
    at = open_app(BERT_16)
    assert not at.error and link_param(at, "sg") == "8"
    shown = {m.label: m.value for m in at.metric}
    pace = next(v for k, v in shown.items() if k.startswith("Throughput"))
    assert pace == throughput(rows[-1].samples_per_s)  # as the app writes it
    assert pace != throughput(full[-1].samples_per_s)


@pytest.mark.parametrize("workload, tp", [("bert-large", 1), ("gpt-1.7b", 2)])
def test_the_sharding_remedy_of_zero3_under_hsdp_shards_over_all_of_dp(workload, tp):
    """Session 14: at ZeRO-3 with a shard group below dp (HSDP: the states held dp / s times)
    the sharding remedy said "already fully sharded", untrue, and never offered full sharding,
    the change that saves memory. It now offers the states over all of dp (the shard group
    dropped, the rest of the layout kept), predicted as predict predicts that scenario; at
    ZeRO-3 over all of dp it holds the parameters whole (session 25)."""
    from scalesim.predict import predict
    from scalesim.presets import transformer_workload
    from scalesim.profiles import default_profile, profile_with_workload
    from scalesim.remedies import rank_remedies
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = default_profile()
    if workload != "bert-large":
        profile, _ = profile_with_workload(profile, transformer_workload(workload), workload)
    layout = ScenarioLayout(shard_group=4, **({"tp": tp} if tp > 1 else {}))
    hsdp = Scenario(strategy="zero3", devices=[32], micro_batch=1, layout=layout)
    now, ranked = rank_remedies(profile, hsdp, 32)
    dp = 32 // tp
    assert now.shard_group == 4
    remedy = next(r for r in ranked if r.key == "sharding")
    assert remedy.applicable and "already" not in remedy.reason
    assert f"over all {dp} data-parallel ranks (HSDP shard group 4 -> {dp}" in remedy.title
    assert remedy.prediction.shard_group == dp
    assert remedy.scenario.layout == (None if tp == 1 else ScenarioLayout(tp=tp))
    full = predict(profile, hsdp.model_copy(update={"layout": remedy.scenario.layout}))[0]
    assert remedy.prediction.memory_bytes == full.memory_bytes < now.memory_bytes
    _, ranked = rank_remedies(profile, remedy.scenario, 32)
    # over all of dp the one sharding change left holds the parameters whole (ZeRO-2)
    again = next(r for r in ranked if r.key == "sharding")
    assert again.applicable and again.scenario.strategy == "zero2"
    assert again.title.startswith("Hold parameters whole (zero3 -> zero2, FSDP SHARD_GRAD_OP)")


def test_a_calibrated_profiles_shard_group_stays_on_the_data_parallel_path():
    """Session 14: a calibrated profile whose curve timed a transformer (a parameter-count
    workload) was split as that transformer when a shard group was asked (``split_profile``
    read the shard group as a split), so ``predict --shard-group 4`` ran the layout model
    (17.3 GiB per device) while full sharding and ``sweep --shard-group-values 4`` ran the
    data-parallel one (31 GiB): hybrid sharding read as holding less memory than full sharding.
    A shard group alone now stays on the data-parallel path, as the swept one does."""
    from h200_gpt import H200

    from scalesim.predict import predict
    from scalesim.profiles import load_profile
    from scalesim.schemas import Scenario, ScenarioLayout
    from scalesim.sweep import sweep

    profile = load_profile(str(H200))
    full = Scenario(strategy="zero3", devices=[8, 16])
    hsdp = predict(profile, full.model_copy(update={"layout": ScenarioLayout(shard_group=4)}))
    flat = predict(profile, full)
    assert [r.dp for r in hsdp] == [None, None] and [r.shard_group for r in hsdp] == [4, 4]
    for h, f in zip(hsdp, flat, strict=True):
        assert h.memory_bytes > f.memory_bytes  # replicated states cost memory
    swept = sweep(profile, full, {"devices": [8, 16], "shard_group": [4]}).columns
    assert list(swept["step_time_s"]) == pytest.approx([r.step_time_s for r in hsdp], rel=1e-12)
    assert list(swept["memory_bytes"]) == pytest.approx([r.memory_bytes for r in hsdp])


def test_the_framework_is_named_hybrid_under_a_shard_group(capsys):
    """Session 14: predict's header said ``zero3 (FSDP FULL_SHARD)`` over a line saying the
    states are sharded over 4 ranks (HSDP), and the sharding remedy under HSDP named FULL_SHARD
    too. Under a shard group below dp the label is FSDP's hybrid strategy; where the group is
    all of dp (full sharding), the plain one."""
    from scalesim.model.zero_exchange import framework_label
    from scalesim.profiles import default_profile
    from scalesim.remedies import rank_remedies
    from scalesim.schemas import Scenario, ScenarioLayout

    assert framework_label("zero3", "fsdp", hybrid=True) == "FSDP HYBRID_SHARD"
    assert framework_label("zero2", "fsdp", hybrid=True) == "FSDP _HYBRID_SHARD_ZERO2"
    code, out, err = run_cli(capsys, ["predict", "--strategy", "zero3", "--shard-group", "4",
                                      "--devices", "8,16"])
    assert code == 0 and "scenario: zero3 (FSDP HYBRID_SHARD)" in out, err
    code, out, err = run_cli(capsys, ["predict", "--strategy", "zero2", "--shard-group", "16",
                                      "--devices", "8,16"])
    assert code == 0 and "scenario: zero2 (FSDP SHARD_GRAD_OP)" in out, err
    scenario = Scenario(strategy="zero2", devices=[16], layout=ScenarioLayout(shard_group=4))
    _, ranked = rank_remedies(default_profile(), scenario, 16)
    title = next(r for r in ranked if r.key == "sharding").title
    assert title == "Shard parameters too (zero2 -> zero3, FSDP HYBRID_SHARD)"
