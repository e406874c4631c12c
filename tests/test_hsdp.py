"""Hybrid sharding (HSDP: ZeRO states sharded inside a shard group of s ranks, replicated across
the (dp x cp) / s groups; docs/model.md §16): the exchange and memory by hand, full sharding
unchanged, the slow-network property, and the edges (predict, plan)."""

import itertools
import json

import numpy as np
import pytest
from cli_harness import run_cli
from test_collective_waits import GPT, HW

from scalesim.model import collectives as coll
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts

RING = coll.ALGORITHMS["ring"]
P_BYTES = GPT["params"] * 2.0  # the whole model's 16-bit gradient (tp = pp = 1)
L = GPT["layers"]


def _inputs(**changes):
    base = dict(dp=16, tp=1, pp=1, cp=1, zero=2, micro_batch=1, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False, device_cv=0.0,
                overlap=False, algorithm=RING)
    base.update(changes)
    return LayoutInputs(**GPT, **{**HW, **base})


def _ring_s(size, ranks, per_node, alpha_intra, alpha_inter, busbw_Bps, phases=1.0):
    """A ring collective by hand: phases x [(p - N) a_intra + (N - 1) a_inter + (p-1)/p S/B]."""
    nodes = ranks // per_node
    return phases * ((ranks - nodes) * alpha_intra + (nodes - 1) * alpha_inter
                     + (ranks - 1) / ranks * size / busbw_Bps)


def exchange_by_hand_s() -> tuple[float, float]:
    """The exposed exchange by hand, in seconds, of dp 16 on two 8-GPU servers, FSDP
    SHARD_GRAD_OP, one micro-batch, overlap off (per block an all-gather and a reduce-scatter
    of P w / L): (full sharding, rings over 16 ranks across the servers at min(intra, inter);
    HSDP at s = 8, rings over one server's 8 ranks on NVLink, then each block's 1/8 shard
    all-reduced over the r = 2 replicas, one rank a server at 1/8 of its NICs)."""
    a_in, a_out = HW["intra_latency_s"], HW["inter_latency_s"]
    intra, inter = HW["intra_busbw_GBps"] * 1e9, HW["inter_busbw_GBps"] * 1e9
    unit = P_BYTES / L
    ring16 = _ring_s(unit, 16, 8, a_in, a_out, min(intra, inter))
    ring8 = _ring_s(unit, 8, 8, a_in, a_out, intra)
    all_reduce2 = _ring_s(unit / 8, 2, 1, a_in, a_out, inter / 8, phases=2.0)
    return L * 2 * ring16, L * (2 * ring8 + all_reduce2)


def test_hsdp_exchange_by_hand():
    """dp 16 on two 8-GPU servers, FSDP SHARD_GRAD_OP, one micro-batch, overlap off: per block
    an all-gather and a reduce-scatter of P w / L. Full sharding (s = 16): rings over 16 ranks
    across the servers at min(intra, inter) busbw. HSDP (s = 8): the rings stay on NVLink
    (8 ranks of one server), then each block's 1/8 shard is all-reduced over the r = 2 replicas
    (one rank per server, each rank 1/8 of the server's NICs)."""
    full_s, hsdp_s = exchange_by_hand_s()
    full = evaluate_layouts(_inputs())
    assert float(full.dp_exposed_s) == pytest.approx(full_s, rel=1e-9)
    hsdp = evaluate_layouts(_inputs(shard_group=8))
    assert float(hsdp.dp_exposed_s) == pytest.approx(hsdp_s, rel=1e-9)
    # nothing else moves but the optimizer step (1/8 of the states, not 1/16)
    for part in ("tp_comm_s", "cp_comm_s", "bubble_s", "p2p_s", "straggler_s"):
        assert float(getattr(hsdp, part)) == float(getattr(full, part)), part
    assert float(hsdp.compute_s) > float(full.compute_s)


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_hsdp_memory_is_zero_over_the_shard_group(zero):
    """States sharded over s, not dp x cp: each device holds the shares of ZeRO over s ranks
    (Rajbhandari et al. 2019 §5), activations and buffers as before."""
    hsdp = evaluate_layouts(_inputs(zero=zero, shard_group=4))
    full = evaluate_layouts(_inputs(zero=zero))
    p = GPT["params"]
    # ZeRO-3: FSDP's fp32 parameter shard is the master copy counted in the optimizer's 12 B
    weights = {1: 2.0 * p, 2: 2.0 * p, 3: 0.0}[zero]
    # ZeRO-1: Megatron-Core's distributed optimizer, its fp32 main_grad buffer whole; ZeRO-2/3:
    # FSDP's gradient shard in its sharded parameters' fp32 (§4)
    grads = {1: 4.0 * p, 2: 4.0 * p / 4, 3: 4.0 * p / 4}[zero]
    assert float(hsdp.weights_bytes) == pytest.approx(weights, rel=1e-12)
    assert float(hsdp.grads_bytes) == pytest.approx(grads, rel=1e-12)
    assert float(hsdp.optimizer_bytes) == pytest.approx(12.0 * p / 4, rel=1e-12)
    assert float(full.optimizer_bytes) == pytest.approx(12.0 * p / 16, rel=1e-12)
    assert float(hsdp.activation_bytes) == float(full.activation_bytes)
    assert float(hsdp.buffer_bytes) == float(full.buffer_bytes)


def test_full_shard_group_is_todays_model_exactly():
    """s = dp x cp (and 0, the default) is full sharding bit for bit, over a grid of layouts,
    ZeRO stages, frameworks, overlap and accumulation; with ZeRO 0 the shard group is ignored."""
    grid = list(itertools.product((1, 2, 4, 16), (1, 2), (1, 2), (1, 2), (0, 1, 2, 3), (0, 1),
                                  (True, False), (1, 4)))
    dp, tp, pp, cp, zero, fw, ov, k = (np.array(c) for c in zip(*grid, strict=True))
    x = _inputs(dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, framework=fw, overlap=ov,
                global_batch=dp * k, schedule=np.where(pp > 1, 2, 0), algorithm=0)
    default = evaluate_layouts(x)
    for same in (dp * cp, np.where(zero == 0, 1, dp * cp)):
        r = evaluate_layouts(x.replace(shard_group=same))
        for field in ("step_time_s", "dp_exposed_s", "compute_s", "memory_bytes",
                      "straggler_s"):
            assert np.array_equal(getattr(r, field), getattr(default, field)), field


def test_hsdp_wins_on_a_slow_inter_server_network():
    """One 100 Gb/s NIC per 8-GPU server (12.5 GB/s): FSDP FULL_SHARD over 32 GPUs rings every
    gather and reduce-scatter through it; sharding inside each server (s = 8) keeps them on
    NVLink and sends only a 1/8 shard of the gradients across. The model fits either way, and
    HSDP is faster; with the servers' full NICs the gap narrows."""
    slow = dict(dp=32, zero=3, global_batch=64, micro_batch=2, inter_busbw_GBps=12.5,
                overlap=True, algorithm=0)
    full, hsdp = (evaluate_layouts(_inputs(**slow, shard_group=s)) for s in (0, 8))
    assert bool(full.fits) and bool(hsdp.fits)
    assert float(hsdp.step_time_s) < float(full.step_time_s)
    assert float(hsdp.dp_exposed_s) < float(full.dp_exposed_s)
    fast = {**slow, "inter_busbw_GBps": 400.0}
    f_full, f_hsdp = (evaluate_layouts(_inputs(**fast, shard_group=s)) for s in (0, 8))
    assert (float(f_full.step_time_s) / float(f_hsdp.step_time_s)
            < float(full.step_time_s) / float(hsdp.step_time_s))


# ------------------------------------------------------------------ the planner and predict

SLOW_NIC = 12.5  # GB/s: one 100 Gb/s NIC per server


def _slow_a100(memory_gib=80):
    from scalesim.presets import HARDWARE

    hw = HARDWARE["dgx-a100"]
    return hw.model_copy(update={"inter_node": hw.inter_node.model_copy(
        update={"busbw_GBps": SLOW_NIC}), "device_memory_bytes": memory_gib * 2**30})


def _twin(rows, row):
    """The full-sharding row of the same layout as hybrid ``row``."""
    return next(r for r in rows if not r.hybrid and r.zero == row.zero and (
        r.dp, r.tp, r.pp, r.cp, r.micro_batch, r.schedule, r.recompute, r.sequence_parallel) == (
        row.dp, row.tp, row.pp, row.cp, row.micro_batch, row.schedule, row.recompute,
        row.sequence_parallel))


def test_the_planner_ranks_hsdp_first_on_a_slow_network():
    """GPT 1.7B on two DGX A100 servers with one 100 Gb/s NIC each: the planner offers every ZeRO
    layout also sharded inside a server (shard group 8 at tp 1, replicated twice;
    ``hybrid_shard_groups``), ranks
    the one-server group first, and every hybrid row beats its full-sharding twin (same layout,
    shard group 16)."""
    from scalesim.layout import hybrid_shard_groups
    from scalesim.plan import plan
    from scalesim.presets import get_transformer

    rows = plan(get_transformer("gpt-1.7b"), _slow_a100(), [16], 64, top=None)
    assert rows[0].hybrid and rows[0].shard_group == 8 and rows[0].dp == 16
    from scalesim.app.charts import layout_label

    assert layout_label(rows[0]) == f"#1 dp16 tp1 pp1 z{rows[0].zero}/8 mb{rows[0].micro_batch}"
    hybrid = [r for r in rows if r.hybrid]
    assert hybrid and all(r.shard_group in hybrid_shard_groups(r.dp * r.cp, r.tp, 8)
                          for r in hybrid)
    assert {r.shard_group for r in hybrid if r.tp == 1} == {8}
    for row in hybrid:
        twin = _twin(rows, row)
        assert twin.shard_group == row.dp * row.cp
        assert (row.step_time_s < twin.step_time_s) == (row.rank < twin.rank)
        if row.zero >= 2 or row.tp == 1:
            assert row.step_time_s < twin.step_time_s
    # Megatron-Core's ZeRO-1 reduces its fp32 main grads (session 44): hybrid at tp 2 (4 ranks a
    # server) all-reduces 4 fp32 shards across servers through the one NIC in backward, where
    # full sharding's fp32 reduce-scatter is 7/8 of one and its bf16 gather waits for the next
    # forward; the full-sharding twin is then faster, and the planner ranks it above
    z1 = next(r for r in hybrid if r.zero == 1 and r.tp == 2)
    assert _twin(rows, z1).step_time_s < z1.step_time_s


@pytest.mark.parametrize(("group", "tp", "groups"), [
    (8, 1, ()),  # one server: full sharding only
    (16, 1, (8,)),  # two servers of 8 ranks: one server's
    (32, 1, (8, 16)),  # four: and two servers' 16
    (12, 1, ()),  # 8 + 4 ranks: 8 and 16 would straddle a server
    (4, 8, (2,)),  # tp 8: one rank a server, so two servers (one would be plain DDP)
    (64, 2, (4, 8, 16, 32)),  # 4 ranks a server over 16 servers: 1, 2, 4, 8 servers
    (48, 1, (8, 16, 24)),  # six servers: 1, 2, 3 of them
])
def test_the_planners_shard_groups_by_hand(group, tp, groups):
    """``hybrid_shard_groups``: of a dp x cp group spanning several 8-GPU servers, each whole
    number of servers below the group that divides it (a server holds 8 / tp of its ranks)."""
    from scalesim.layout import hybrid_shard_groups

    assert hybrid_shard_groups(group, tp, 8) == groups


def _planned(rows, **layout):
    """{shard group: the planner's row} of the rows of one layout (fields ``layout``)."""
    out = {}
    for r in rows:
        if all(getattr(r, k) == v for k, v in layout.items()):
            out.setdefault(r.shard_group, r)
    return out


def test_two_servers_shard_group_wins_on_a_high_latency_fabric():
    """dp 32 on four 8-GPU servers, ZeRO-3, overlap off, ring, a 100 us server hop: per layer
    full sharding runs 3 rings (two gathers, a reduce-scatter) over 32 ranks, each crossing 3
    server boundaries (9 hops of 100 us); a shard group of one server (8) keeps the rings on
    NVLink but all-reduces each 1/8 shard over 4 replicas (2 x 3 = 6 hops, at 1/8 of the NICs);
    a shard group of two servers (16) crosses 1 boundary a ring and 2 in its all-reduce of 2
    replicas (5 hops): 4 hops (400 us) a layer fewer than full sharding for (15/16 - 31/32) x 3
    x the unit at 192 GB/s less and a 1/16 shard all-reduced at 24 GB/s more (about 0.3 ms), so
    16 is the fastest. Before, the planner tried only 8 and 32."""
    a_in, a_out = HW["intra_latency_s"], 100e-6
    intra, inter = HW["intra_busbw_GBps"] * 1e9, HW["inter_busbw_GBps"] * 1e9
    unit = P_BYTES / L
    case = dict(dp=32, zero=3, global_batch=32, inter_latency_s=a_out)
    full, one, two = (evaluate_layouts(_inputs(**case, shard_group=s)) for s in (0, 8, 16))
    wire = min(intra, inter)
    assert float(full.dp_exposed_s) == pytest.approx(
        L * 3 * _ring_s(unit, 32, 8, a_in, a_out, wire), rel=1e-9)
    assert float(one.dp_exposed_s) == pytest.approx(L * (
        3 * _ring_s(unit, 8, 8, a_in, a_out, intra)
        + _ring_s(unit / 8, 4, 1, a_in, a_out, inter / 8, phases=2.0)), rel=1e-9)
    assert float(two.dp_exposed_s) == pytest.approx(L * (
        3 * _ring_s(unit, 16, 8, a_in, a_out, wire)
        + _ring_s(unit / 16, 2, 1, a_in, a_out, inter / 8, phases=2.0)), rel=1e-9)
    assert float(two.step_time_s) < float(full.step_time_s) < float(one.step_time_s)
    # the planner tries 16 and ranks it first of that layout's shard groups
    from scalesim.plan import plan
    from scalesim.presets import HARDWARE, get_transformer

    a100 = HARDWARE["dgx-a100"]
    slow_hop = a100.model_copy(update={"inter_node": a100.inter_node.model_copy(
        update={"latency_s": a_out})})
    rows = plan(get_transformer("gpt-1.7b"), slow_hop, [32], 32, top=None, overlap=False,
                algorithm="ring")
    by_group = _planned(rows, dp=32, tp=1, zero=3, recompute="none")
    assert sorted(by_group) == [8, 16, 32]
    assert min(by_group.values(), key=lambda r: r.rank).shard_group == 16
    assert by_group[16].rank < by_group[32].rank < by_group[8].rank


def test_a_shard_group_wins_with_one_data_parallel_rank_per_server():
    """tp 8 fills each 8-GPU server, so dp 4 has one rank a server, and the planner used to
    offer no hybrid row (one server's data-parallel ranks: 1). ZeRO-3, overlap off, ring: each
    layer's two gathers and reduce-scatter of the tp shard's unit U cross the NICs either way, at
    1/8 of them each; a shard group of 2 moves 3 (1 - 1/2) U + 2 (1 - 1/2) U / 2 = 2 U a rank,
    full sharding 3 (1 - 1/4) U = 2.25 U, in 3 + 2 hops against 9: the shard group of 2 wins."""
    a_in, a_out = HW["intra_latency_s"], HW["inter_latency_s"]
    share = HW["inter_busbw_GBps"] * 1e9 / 8
    unit = P_BYTES / 8 / L
    full, two = (evaluate_layouts(_inputs(dp=4, tp=8, zero=3, global_batch=4, shard_group=s))
                 for s in (0, 2))
    assert float(full.dp_exposed_s) == pytest.approx(
        L * 3 * _ring_s(unit, 4, 1, a_in, a_out, share), rel=1e-9)
    assert float(two.dp_exposed_s) == pytest.approx(L * (
        3 * _ring_s(unit, 2, 1, a_in, a_out, share)
        + _ring_s(unit / 2, 2, 1, a_in, a_out, share, phases=2.0)), rel=1e-9)
    assert float(two.step_time_s) < float(full.step_time_s)
    from scalesim.plan import plan
    from scalesim.presets import HARDWARE, get_transformer

    rows = plan(get_transformer("gpt-1.7b"), HARDWARE["dgx-a100"], [32], 32, top=None,
                overlap=False, algorithm="ring")
    by_group = _planned(rows, dp=4, tp=8, zero=3, recompute="none", sequence_parallel=False)
    assert sorted(by_group) == [2, 4] and by_group[2].rank < by_group[4].rank


def test_plan_rows_with_shard_groups_repredict_equal():
    """Every hybrid row of ``plan_at`` (and its full-sharding twin) is what ``predict`` says of
    ``scenario_of_row``: the shard group travels with the row (``ScenarioLayout.shard_group``)."""
    from scalesim.layout_predict import plan_at, scenario_of_row
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario

    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    scenario = Scenario(devices=[16], global_batch=64, inter_busbw_GBps=SLOW_NIC)
    rows = plan_at(profile, scenario, 16, 64, top=None, include_unfit=True)
    hybrid = [r for r in rows if r.hybrid][::7]  # every seventh: a spread of stages and splits
    assert len(hybrid) > 10
    for row in hybrid + [_twin(rows, r) for r in hybrid[:5]]:
        again = scenario_of_row(scenario, row)
        assert again.layout.shard_group == (row.shard_group if row.hybrid else None)
        p = predict(profile, again)[0]
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9)
        assert p.memory_bytes == pytest.approx(row.memory_bytes, rel=1e-9)


def test_plan_shows_the_shard_group(capsys):
    """plan's --json rows carry ``shard_group``; its table a 'shard' column ('-' for DDP)."""
    code, out, _ = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-a100",
                                    "--devices", "16", "--global-batch", "64", "--inter-busbw",
                                    str(SLOW_NIC), "--top", "3", "--json"])
    assert code == 0
    rows = json.loads(out)["layouts"]
    assert rows[0]["shard_group"] == 8 and rows[0]["dp"] == 16 and rows[0]["zero"] > 0
    code, out, _ = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-a100",
                                    "--devices", "16", "--global-batch", "64", "--inter-busbw",
                                    str(SLOW_NIC), "--top", "3"])
    header = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert header.split()[7] == "shard"
    first = next(line for line in out.splitlines() if line.split()[:1] == ["1"])
    assert first.split()[7] == "8"


# ------------------------------------------------------------------ predict's edges

# at 16 devices (dp 16): what each refusal says; the data-parallel path says the same
BAD_SHARD_GROUPS = [
    (["--strategy", "zero3", "--shard-group", "3"],
     "shard group 3 does not divide dp 16"),
    (["--shard-group", "8"], "shard group 8 needs a ZeRO strategy"),
    (["--strategy", "zero2", "--shard-group", "1"], "--shard-group 1 with --strategy zero2 is "
     "plain replication"),
    (["--strategy", "zero2", "--shard-group", "8", "--zero-framework", "deepspeed"],
     "hybrid sharding is modelled for FSDP and Megatron-Core"),
]


@pytest.mark.parametrize("args, words", BAD_SHARD_GROUPS)
def test_predict_refuses_a_bad_shard_group_in_one_line(capsys, args, words):
    code, _, err = run_cli(capsys, ["predict", "--workload", "gpt-1.7b", "--hardware",
                                    "dgx-a100", "--devices", "16", "--global-batch", "64", *args])
    assert code != 0 and words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_parameter_count_takes_the_shard_group_but_not_a_split(capsys):
    """The data-parallel path (a parameter-count workload) shards over the group too (hybrid
    sharding splits no model: tests/test_hsdp_data_parallel.py); a model split beside it is
    still refused, naming the split only."""
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--devices", "16",
                                      "--strategy", "zero3", "--shard-group", "8", "--json"])
    assert code == 0, err
    assert json.loads(out)[0]["shard_group"] == 8
    code, _, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--devices", "16",
                                    "--strategy", "zero3", "--shard-group", "8", "--tp", "2"])
    assert code != 0 and "layout tp 2 x pp 1: workload 'bert-large'" in err
    assert "cannot be split" in err and len(err.strip().splitlines()) == 1


def test_predict_with_a_shard_group_is_the_layout_model():
    """``predict --shard-group 8`` at 16 GPUs is ``evaluate_layouts`` with shard_group 8: the
    exposed exchange falls on the slow network, memory rises to ZeRO over 8."""
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    base = Scenario(devices=[16], global_batch=64, inter_busbw_GBps=SLOW_NIC, strategy="zero3")
    full = predict(profile, base)[0]
    hsdp = predict(profile, base.model_copy(update={"layout": ScenarioLayout(shard_group=8)}))[0]
    assert hsdp.exposed_comm_s < full.exposed_comm_s and hsdp.step_time_s < full.step_time_s
    assert hsdp.memory_bytes > full.memory_bytes
    # a row whose dp is within the shard group shards over all of it: full sharding, exactly
    few = base.model_copy(update={"devices": [4, 16], "global_batch": 16})
    rows = predict(profile, few.model_copy(update={"layout": ScenarioLayout(shard_group=8)}))
    assert rows[0] == predict(profile, few)[0] and rows[1] != predict(profile, few)[1]


# ------------------------------------------------------------------ the app and its link (v9)

LLAMA_16 = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "strat": "zero3",
            "mb": "1"}


def test_a_link_with_a_shard_group_round_trips_as_v9_and_predicts_it():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import decode_query, encode_query, link_version

    from scalesim.predict import predict

    state, profile, messages = decode_query(LLAMA_16)
    assert messages == [] and state.sg is None
    assert encode_query(state, profile)["v"] == "3"  # no shard group: still a v3 link
    # (the v3 link opens goal's layouts at given, its Goal tab then; with a shard group goal
    # keeps the Layout at auto too, which a link before v18 opens at: session 43)
    changed = state.model_copy(update={"sg": 8, "glay": "auto"})
    params = encode_query(changed, profile)
    assert (params["v"], params["sg"], link_version(changed)) == ("9", "8", 9)
    state2, profile2, messages = decode_query(params)
    assert messages == [] and state2 == changed and profile2 == profile
    scenario, _ = build_scenario(state2, profile2)
    assert scenario.layout.shard_group == 8
    rows = make_plan(profile2, state2).rows
    assert rows == predict(profile2, scenario)
    full = predict(profile, build_scenario(state, profile)[0])
    at16 = [r for r in rows if r.devices == 16][0], [r for r in full if r.devices == 16][0]
    assert at16[0].memory_bytes > at16[1].memory_bytes  # states over 8, not 16


def test_old_links_open_fully_sharded():
    from scalesim.app.state import decode_query

    for version in ("3", "4", "5", "6", "7", "8"):
        state, _, messages = decode_query({**LLAMA_16, "v": version, "sg": "8"})
        assert state.sg is None and state.strat == "zero3"
        assert messages[-1] == (f"ignored sg: a v{version} link has no shard group (ZeRO shards "
                                "over all of dp)"), messages
    for version in ("1", "2"):
        state, _, messages = decode_query({"v": version, "sg": "8"})
        assert state.sg is None
        assert messages == [f"ignored sg: a v{version} link has no model split (data parallel)"]
    state, _, messages = decode_query({**LLAMA_16, "v": "9", "sg": "0"})
    assert state.sg is None and len(messages) == 1 and "'sg=0' is not valid" in messages[0]


def test_the_app_shows_a_bad_shard_group_in_its_error_box_and_keeps_working():
    from app_harness import link_param, open_app, run_clean

    # 4, 8 and 16: dp 3 divides none (1 and 2 would run, within the group, with a note)
    at = open_app({**LLAMA_16, "v": "9", "sg": "3", "grid": "list", "dlist": "4,8,16"})
    # said in the page's words since session 49 (was 'shard group 3 does not divide dp 4, 8 or 16')
    assert any("Shard group (HSDP) 3 does not divide the 4, 8 or 16 data-parallel ranks" in e.value
               for e in at.error)
    at.sidebar.number_input(key="k_sg").set_value(8)
    run_clean(at)
    assert not any("shard group" in e.value for e in at.error)
    assert at.metric and link_param(at, "sg") == "8"
    assert link_param(at, "v") == "9"


def test_the_app_ignores_a_shard_group_under_ddp_with_a_note():
    """Under ddp the control is disabled and a linked shard group is ignored with a note (as
    the tensor-parallel toggles at tp 1); the page predicts DDP."""
    from app_harness import open_app
    from scalesim.app.plan import layout_of_state

    at = open_app({**LLAMA_16, "v": "9", "strat": "ddp", "sg": "8"})
    assert not any("shard group" in e.value for e in at.error) and at.metric
    assert at.sidebar.number_input(key="k_sg").disabled
    # a sentence, as the page's other notes (no full stop before session 49)
    assert "Shard group (HSDP) ignored: it applies with a ZeRO strategy (zero1 to zero3)." in [
        i.value for i in at.info]
    assert layout_of_state(at.session_state["app_state"]) is None


def test_goal_seeking_leaves_the_shard_group_out_with_a_note():
    """Goal seeking tries DDP and every ZeRO stage at every device count: a shard group cannot
    apply to all of them, so it is left out (said in a note) and the search is the one without
    it."""
    from scalesim.goal import seek
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout

    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    base = Scenario(train_samples=1e8, critical_batch_size=4096.0, price_per_device_hour=2.0,
                    micro_batch=4)
    with_sg = base.model_copy(update={"layout": ScenarioLayout(shard_group=8)})
    # the split as given (goal --layout given): a shard group alone is a layout choice, kept
    plain, hybrid = (seek(profile, s, 30 * 86400.0, 1e6, max_devices=32, layout="given")
                     for s in (base, with_sg))
    assert seek(profile, with_sg, 30 * 86400.0, 1e6, max_devices=32).layout == "given"
    assert hybrid.notes[0].startswith("shard group 8 left out: goal seeking tries DDP")
    assert "scalesim plan ranks hybrid sharding" in hybrid.notes[0]
    assert hybrid.front == plain.front and hybrid.best == plain.best
    # a parameter count, which plan refuses: the note points where hybrid sharding is compared
    counted = resolve_profile(None, "dgx-a100", "gpt-7b")
    note = seek(counted, with_sg, 30 * 86400.0, 1e6, max_devices=32).notes[0]
    assert "scalesim predict --shard-group compares it" in note and "plan" not in note, note


def test_predict_json_says_which_ranks_shard_the_states(capsys):
    """predict --json rows carry the shard group: HSDP's (every dp rank where dp is within it),
    else every data-parallel rank (tp 2 halves them), and null without sharding (DDP); a
    parameter-count workload's ZeRO rows shard over all their devices."""
    base = ["predict", "--workload", "gpt-1.7b", "--hardware", "dgx-a100", "--devices", "16,32",
            "--global-batch", "64", "--json"]
    cases = [(["--strategy", "zero3", "--shard-group", "8"], [8, 8]),
             (["--strategy", "zero3", "--shard-group", "16", "--devices", "8,32"], [8, 16]),
             (["--strategy", "zero3"], [16, 32]),
             (["--strategy", "zero1", "--tp", "2"], [8, 16]),
             ([], [None, None])]
    for flags, groups in cases:
        code, out, err = run_cli(capsys, [*base, *flags])
        assert code == 0, err
        assert [row["shard_group"] for row in json.loads(out)] == groups, flags
    code, out, err = run_cli(capsys, ["predict", "--devices", "8,16", "--strategy", "zero2",
                                      "--json"])
    assert code == 0 and [row["shard_group"] for row in json.loads(out)] == [8, 16]


def test_a_shard_group_sweep_axis_is_predict_at_each_group():
    """sweep's shard_group axis: each row is predict with that --shard-group (a group at least
    dp shards over all of dp, full sharding); rows the group cannot run (DDP, or a group that
    does not divide dp) are dropped and counted as layouts that break a rule; a
    parameter-count workload takes the shard group axis (tests/test_hsdp_data_parallel.py) but
    not a tp axis, refused in one line."""
    from scalesim.errors import ScalesimError
    from scalesim.predict import predict
    from scalesim.profiles import resolve_profile
    from scalesim.schemas import Scenario, ScenarioLayout
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    base = Scenario(devices=[16, 32], global_batch=64, inter_busbw_GBps=SLOW_NIC,
                    strategy="zero3")
    result = sweep(profile, base, {"shard_group": [4, 8, 32]})
    c = result.columns
    assert list(c["devices"]) == [16, 16, 16, 32, 32, 32] and result.dropped == 0
    for j, group in enumerate((4, 8, 32)):
        rows = predict(profile, base.model_copy(update={"layout": ScenarioLayout(
            shard_group=group)}))
        at = slice(j, None, 3)  # the rows of this group, one per device count
        assert list(c["step_time_s"][at]) == [r.step_time_s for r in rows]
        assert list(c["memory_bytes"][at]) == [r.memory_bytes for r in rows]
        # the group that shards the states, as predict --json says it (32 at dp 16: all 16)
        assert list(c["shard_group"][at]) == [r.shard_group for r in rows]
    full = predict(profile, base)
    assert list(c["step_time_s"][2::3]) == [r.step_time_s for r in full]  # 32: full sharding
    assert list(c["shard_group"][2::3]) == [16, 32]
    mixed = sweep(profile, base, {"strategy": ["ddp", "zero3"], "shard_group": [3, 8]})
    assert mixed.size == 2 and set(mixed.columns["shard_group"]) == {8}
    assert mixed.dropped == mixed.dropped_layout == 6
    assert "shard group 3" in mixed.layout_example
    with pytest.raises(ScalesimError,
                       match="--tp-values splits the model: workload .gpt-7b. is a parameter"):
        sweep(resolve_profile(None, "dgx-a100", "gpt-7b"), Scenario(devices=[16]),
              {"tp": [2]})


def test_plan_json_says_null_shard_group_for_ddp_rows(capsys):
    """A DDP row shards no state: its --json shard_group is null (the table's '-'), not dp x cp;
    ZeRO rows keep their number."""
    code, out, _ = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--devices", "16",
                                    "--global-batch", "64", "--top", "1000", "--json"])
    assert code == 0
    rows = json.loads(out)["layouts"]
    ddp = [r for r in rows if r["zero"] == 0]
    zero = [r for r in rows if r["zero"] > 0]
    assert ddp and zero
    assert all(r["shard_group"] is None for r in ddp)
    assert all(isinstance(r["shard_group"], int) and r["shard_group"] >= 2 for r in zero)


def test_a_shard_group_on_a_parameter_count_workload_is_kept_and_a_split_named():
    """The app keeps a shard group on a parameter-count workload (the data-parallel path shards
    over it, §16); a split beside it is left out with a note that names the split, not the
    shard group nor a 'tp 1 x pp 1' nobody asked for."""
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState, preset_profile

    state = AppState(strat="zero3", sg=4)  # the default workload: bert-large, a count
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.layout.shard_group == 4 and not [n for n in notes if "left out" in n]
    state = AppState(strat="zero3", sg=4, rec="full")
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.layout.shard_group == 4 and scenario.layout.recompute is None
    left = [n for n in notes if "left out" in n]
    # by the page's control (session 51; was the CLI's 'layout recompute full left out: ...')
    assert left and left[0].startswith("Activation recompute full left out: workload "
                                       "'bert-large'")


def test_a_sweep_of_the_framework_drops_deepspeed_with_a_shard_group(capsys):
    """predict refuses a shard group under DeepSpeed (MiCS / hpZ not modelled); a sweep whose
    zero_framework axis holds deepspeed predicted its rows with FSDP's hybrid sharding, as if
    modelled. Then refused whole in one line, the fsdp row lost with it; since session 42 the
    DeepSpeed row is dropped and counted with predict's words (as a swept group's row is), and
    the fsdp row is predict's; a sweep of DeepSpeed alone is refused in one line."""
    base = ["sweep", "--workload", "gpt-1.7b", "--devices", "16", "--strategy", "zero3",
            "--shard-group", "8"]
    code, out, err = run_cli(capsys, base + ["--zero-framework-values", "fsdp,deepspeed"])
    assert code == 0, err
    assert [line.split(",")[1] for line in out.splitlines()[1:]] == ["fsdp"]
    # the swept framework by its grid flag, as typed (was '--zero-framework' before session 50)
    assert ("note: 1 combination dropped: 1 breaks a layout rule (e.g. shard group 8 on 16 "
            "devices: --shard-group 8 with --zero-framework-values deepspeed: hybrid sharding is "
            "modelled" in err), err
    code, out, err = run_cli(capsys, base + ["--zero-framework-values", "deepspeed"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert ("--shard-group 8 with --zero-framework-values deepspeed: hybrid sharding is "
            "modelled" in err), err
    code, out, _ = run_cli(capsys, base + ["--zero-framework-values", "fsdp"])
    assert code == 0
    header, row = out.splitlines()[:2]
    swept = dict(zip(header.split(","), row.split(","), strict=True))
    code, out, _ = run_cli(capsys, ["predict", *base[1:], "--json"])
    assert code == 0
    assert float(swept["step_time_s"]) == pytest.approx(json.loads(out)[0]["step_time_s"],
                                                        rel=1e-5)


def test_a_row_is_hybrid_where_its_shard_group_is_below_dp_x_cp():
    """One predicate (``predict.hybrid_sharded``) for predict's header and the sharding remedy:
    the data-parallel group is dp x cp = devices / (tp x pp), so a shard group of 4 at dp 2 x cp
    4 is hybrid (the two places compared it with dp alone), and 8 there is full sharding."""
    from scalesim.predict import Prediction, data_parallel_ranks, hybrid_sharded

    row = Prediction.model_construct(devices=16, tp=2, pp=1, dp=2, shard_group=4)
    assert data_parallel_ranks(row) == 8 and hybrid_sharded(row)
    assert not hybrid_sharded(row.model_copy(update={"shard_group": 8}))
    assert not hybrid_sharded(row.model_copy(update={"shard_group": None}))
    counted = Prediction.model_construct(devices=16, tp=1, pp=1, dp=None, shard_group=8)
    assert data_parallel_ranks(counted) == 16 and hybrid_sharded(counted)
