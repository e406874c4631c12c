"""The layout model charges each pipeline stage the layers of the split that runs (session 21,
branch stages21): where (pp - 1) ceil(L / pp) >= L the first stage runs fewer layers than the
fullest, and its memory, tensor-parallel traffic and data-parallel exchange were one layer high
(docs/model.md §15, §16)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_harness import run_cli
from test_collective_waits import GPT
from test_collective_waits import HW as A100_SERVERS

from scalesim.layout import INTERLEAVED, ONE_F_ONE_B, layers_per_stage
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.overlap import GPU_COMM_CONTENTION
from scalesim.model.subset_links import subset_busbw_GBps
from scalesim.model.tensor_parallel import tp_comm_end_stages_s, tp_comm_per_layer_s
from scalesim.pipeline_stages import stage_ends, stage_layers, stage_split, uneven_stage_words

PREDICT_405B = [
    "predict",
    "--workload",
    "llama3-405b",
    "--hardware",
    "dgx-h100",
    "--devices",
    "4096",
    "--tp",
    "8",
    "--pp",
    "64",
    "--global-batch",
    "2048",
    "--accumulation",
    "32",
    "--json",
]
# one replica split by tp 2, micro-batch 1: no ZeRO, context parallelism, recompute or sequence
# parallelism (the tests below add pp, the batch and the schedule)
ONE_REPLICA_TP2 = dict(dp=1, tp=2, cp=1, zero=0, micro_batch=1, recompute=0,
                       sequence_parallel=False)


def _grid():
    """Every runnable (L, pp, v) with L <= 130, pp <= 64, v <= 8: L >= pp v (layout rule), v 1
    without a pipeline."""
    return [
        (L, pp, v)
        for L in range(1, 131)
        for pp in range(1, 65)
        for v in range(1, 9)
        if pp * v <= L and (pp > 1 or v == 1)
    ]


GRID = _grid()


def test_the_model_s_stages_are_the_split_it_reports_for_every_layout():
    """``stage_ends`` (what ``evaluate_layouts`` charges: the first rank, the rank between that
    holds the most, the last) read on the whole grid in one vectorised call equal the ends of
    ``stage_split`` (the ``layers_per_stage`` field and the words); the split's layers sum to L,
    its fullest is ``layout.layers_per_stage`` (the time's stage), and no rank between holds more
    than rank 1, so charging rank 1 for the ranks between is never below what runs."""
    L, pp, v = (np.array(c) for c in zip(*GRID, strict=True))
    first, middle, last = stage_ends(L, pp, v)
    fullest = layers_per_stage(L, pp, v)
    every_rank = [(*g, k) for g in GRID for k in range(g[1])]  # one call for every rank
    on_rank = stage_layers(*(np.array(c) for c in zip(*every_rank, strict=True)))
    at = 0
    for i, (layers, p, chunks) in enumerate(GRID):
        stages = stage_split(layers, p, chunks).stages
        assert len(stages) == p and sum(stages) == layers, (layers, p, chunks)
        assert (first[i], middle[i], last[i]) == (stages[0], stages[1] if p > 2 else 0, stages[-1]), (
            layers,
            p,
            chunks,
            stages,
        )
        assert max(stages) == fullest[i] == max(first[i], middle[i], last[i])
        assert all(n <= middle[i] for n in stages[1:-1])
        assert on_rank[at : at + p].tolist() == list(stages)
        at += p
    assert stage_ends(126, 64) == (1, 2, 1) and stage_ends(32, 12) == (1, 3, 1)
    assert stage_ends(80, 1) == (80, 0, 80)


def _grid_inputs(pp_min=2):
    """The grid's pipelines (pp >= 2) on GPT 1.7B's layer at tp 2, s 16 and a vocabulary of 1,000:
    the embedding (2.3 M parameters) is smaller than a layer (63.7 M) and the activations a few
    MB, so the fullest device is the stage with the most parameters."""
    rows = [g for g in GRID if g[1] >= pp_min]
    L, pp, v = (np.array(c) for c in zip(*rows, strict=True))
    m = 64
    x = LayoutInputs(
        **{**GPT, "layers": L, "seq_len": 16, "vocab": 1000},
        **{**A100_SERVERS, "device_cv": 0.0},
        **ONE_REPLICA_TP2,
        pp=pp,
        global_batch=m,
        schedule=np.where(v > 1, INTERLEAVED, ONE_F_ONE_B),
        virtual_stages=v,
    )
    return rows, x, m


def test_memory_and_tensor_parallel_traffic_charge_each_stage_its_layers():
    """Across the grid's pipelines the weights are those of the stage with the most parameters,
    2 bytes x max(first W + V h, middle W, last W + V h) / t (W = 12 h^2 + 4 h... of GPT's layer,
    V h the embedding on the first and the output layer on the last), and the tensor-parallel
    time m x max(first t_l + t_emb, middle t_l, last t_l + t_out) (§14's per-layer and end-stage
    collectives), with first, middle and last from ``stage_split``: before session 21 the first
    stage was charged the fullest stage's layers (126 over pp 64: 2 + the embedding, where 1 +
    the embedding runs)."""
    rows, x, m = _grid_inputs()
    r = evaluate_layouts(x)
    h, f, V = 2304, 9216, 1000
    layer = 4 * h * h + 2 * h * f + 4 * h  # Q, K, V, O, two MLP matrices, two norms
    tp_GBps = subset_busbw_GBps(230, 2, x.intra_subset_shares)
    t_layer = tp_comm_per_layer_s(1, 16, h, 2, 1, 0, False, 2e-6, tp_GBps)
    t_emb, t_out = tp_comm_end_stages_s(1, 16, h, 2, 1, False, 2e-6, tp_GBps)
    for i, (layers, p, v) in enumerate(rows):
        s = stage_split(layers, p, v).stages
        mid = s[1] if p > 2 else 0
        params = max(s[0] * layer + V * h, mid * layer, s[-1] * layer + V * h)
        assert r.weights_bytes[i] == pytest.approx(2 * params / 2, rel=1e-12), (layers, p, v)
        assert r.tp_comm_s[i] == pytest.approx(
            m * max(s[0] * t_layer + t_emb, mid * t_layer, s[-1] * t_layer + t_out), rel=1e-12
        ), (layers, p, v)


def test_a_middle_stage_fuller_than_the_first_holds_the_memory():
    """32 layers over pp 12 run 1, 10 x 3, 1: rank 1 holds 3 layers and min(11, m) micro-batches
    in flight, the first 1 layer + the embedding and min(12, m); with GPT's layer (63.7 M
    parameters) against its 118 M embedding (51,200 x 2304) rank 1 holds more, and the model
    charges it: weights 2 x 3 x 63,710,208 / 2 bytes at tp 2 (the first stage's 2 x (3 x
    63,710,208 + 117,964,800) / 2 before); a split layout's DDP is Megatron-Core's, whose fp32
    main_grad buffer holds 4 x 3 x 63,710,208 / 2 (2 x before session 48)."""
    x = LayoutInputs(
        **{**GPT, "layers": 32},
        **{**A100_SERVERS, "device_cv": 0.0},
        **ONE_REPLICA_TP2,
        pp=12,
        global_batch=24,
        schedule=ONE_F_ONE_B,
        virtual_stages=1,
    )
    r = evaluate_layouts(x)
    assert float(r.weights_bytes) == 3 * 63_710_208
    assert float(r.grads_bytes) == 2 * 3 * 63_710_208
    assert float(r.optimizer_bytes) == 6 * 3 * 63_710_208


def test_llama3_405b_over_pp_64_by_hand(capsys):
    """126 layers over pp 64 run 1, 62 x 2, 1 (Megatron-LM: first and last 1). Llama 3 405B's
    layer, h 16384, 128 heads, 8 kv heads, f 53248, SwiGLU: W = 2 h^2 (Q, O) + 2 h 1024 (K, V)
    + 3 h f + 4 h = 536,870,912 + 33,554,432 + 2,617,245,696 + 65,536 = 3,187,736,576; the
    embedding V h = 128,256 x 16,384 = 2,101,346,304. tp 8, dp 8, ZeRO 0: Megatron-Core's DDP
    (pp > 1), 2 + 4 (its fp32 main_grad buffer) + 12 = 18 bytes a parameter since session 48
    (16 before), b = 2048 / (8 x 32) = 8, m = 32.

    Memory. Was: the first stage charged 2 layers + the embedding, (2 W + V h) / 8 =
    1,059,602,432 parameters a device, x 16 B = 16,953,638,912; activations 2 layers x
    min(64, 32) micro-batches = 891,205,713,920 (§11); 2 GiB buffers: 910,306,836,480 B. Now:
    rank 1 (2 layers, min(63, 32) = 32 in flight, no embedding) is the fullest, 2 W / 8 =
    796,934,144 x 16 = 12,750,946,304, the same activations: 906,104,143,872 B (4.2 GB less, the
    embedding's 16 bytes x V h / 8); the first stage (1 layer + embedding, 32 in flight) holds
    less. Session 48: 18 B, 796,934,144 x 18 = 14,344,814,592: 907,698,012,160 B.

    Exchange (DDP over dp 8, one GPU a server: a ring all-reduce, 2 x 7 x 6 us + S x 1.75 /
    48 GB/s, the tree's 36 us + S x 2 / 48 GB/s where it is less (the 1 MiB first bucket);
    25 MiB buckets = 1,039.74 us each; the last bucket's all-reduce is exposed after the last
    backward, the contention share 0.189 / 1.189 = 0.15896 of the rest). DDP all-reduces fp32
    gradients since session 45, 4 bytes of the stage's parameters / 8: was (the first stage
    charged the embedding) 4 x 1,059,602,432 = 4,238,409,728 B: 1 MiB, 161 x 25 MiB, a last of
    16,842,752 B (698.06 us): total 168,174.8 us, exposed 698.06 + 0.15896 x 167,476.8 =
    27,319.7 us. Now 4 x 796,934,144 = 3,187,736,576 B: 1 MiB, 121 x 25 MiB, a last of
    14,745,600 B (621.60 us): total 79.69 + 121 x 1,039.73 + 621.60 = 126,509.0 us, exposed
    621.60 + 0.15896 x 125,887.4 = 20,632.3 us (the 2-byte all-reduce before session 45:
    10,740.6 us, 1,593,868,288 B)."""
    code, out, _ = run_cli(capsys, PREDICT_405B)
    assert code == 0, out
    row = json.loads(out)[0]
    assert row["layers_per_stage"] == [1] + [2] * 62 + [1]
    W, E = 3_187_736_576, 2_101_346_304
    assert W == 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 4 * 16384
    assert E == 128_256 * 16384
    activations = 891_205_713_920
    assert 16 * 2 * W / 8 + activations + 2 * 2**30 == 906_104_143_872  # 16 B, session 47
    assert 18 * 2 * W / 8 + activations + 2 * 2**30 == 907_698_012_160
    assert row["memory_bytes"] == pytest.approx(907_698_012_160, rel=1e-12)
    assert 16 * (2 * W + E) / 8 + activations + 2 * 2**30 == 910_306_836_480  # was

    def ring_s(size_bytes):
        # ring: 2 (n - 1) hops; tree: 2 log2 n hops; 6 us each, 48 GB/s a GPU across servers
        return min(2 * 7 * 6e-6 + size_bytes * 1.75 / 48e9, 2 * 3 * 6e-6 + size_bytes * 2 / 48e9)

    def exposed_s(grad_bytes):
        mib, bucket = 2**20, 25 * 2**20
        full, last = divmod(grad_bytes - mib, bucket)
        total = ring_s(mib) + full * ring_s(bucket) + ring_s(last)
        return ring_s(last) + GPU_COMM_CONTENTION * (total - ring_s(last))

    dp_exposed = row["exposed_comm_s"] - row["tp_comm_s"] - row["pipeline_comm_s"]
    assert dp_exposed == pytest.approx(exposed_s(4 * 2 * W / 8), rel=1e-9)
    assert dp_exposed == pytest.approx(0.0206323, rel=1e-5)
    assert exposed_s(4 * (2 * W + E) / 8) == pytest.approx(0.0273197, rel=1e-5)  # was


def _per_micro_batch(layers, pp, v=1, **changes):
    """(seconds of the slowest stage's micro-batch: compute at m = 8 less m = 4, over 4 (the
    optimizer step cancels), the results at m = 4) of GPT 1.7B's layer at tp 2, b 1."""
    out = []
    for m in (4, 8):
        layout = dict(
            **ONE_REPLICA_TP2,
            pp=pp,
            global_batch=m,
            schedule=INTERLEAVED if v > 1 else ONE_F_ONE_B,
            virtual_stages=v,
            device_cv=0.0,
            **changes,
        )
        out.append(evaluate_layouts(LayoutInputs(**{**GPT, "layers": layers}, **{**A100_SERVERS, **layout})))
    return (float(out[1].compute_s) - float(out[0].compute_s)) / 4, out[0]


def test_the_last_stage_computes_the_layers_it_runs():
    """29 layers over pp 4 x v 2 run 8, 7, 7, 7 (chunks 4, 4, 4, 4, 4, 3, 3, 3), 28 run 7 on
    every rank: both micro-batches take 7 t + the output layer (GPT's 2 h V = 236 M FLOPs a
    token against a layer's 24 h^2 + 4 s h = 146 M, so 7 t + logits > 8 t). Before, 29 layers'
    last stage was charged L - 3 x 8 = 5 layers and the micro-batch 8 t, as 30 layers' (8, 8, 8,
    6)."""
    assert stage_split(29, 4, 2).stages == (8, 7, 7, 7)
    assert _per_micro_batch(29, 4, 2)[0] == pytest.approx(_per_micro_batch(28, 4, 2)[0], rel=1e-12)
    assert _per_micro_batch(29, 4, 2)[0] > _per_micro_batch(30, 4, 2)[0]


def test_a_slow_device_computes_its_own_stage_s_layers():
    """19 layers over pp 8 run 3, 3, 3, 5 x 2. A device 1.4x slower on rank 8 (stage 4 at
    tp 2: 2 layers, 2.8 t) stays below the pace (the last stage's 2 t + logits > 3 t), so it
    costs only what it adds to fill and drain, the first micro-batch's one pass, d = (f - 1)
    2 t = 0.8 t (§16; before session 50 the average stage's share, 7 x 0.4 x 2 t / 8 = 0.7 t),
    with t a layer's micro-batch (24 layers over pp 8 less 16: 3 t + logits less 2 t + logits).
    Before, every stage but the last was charged 3 layers: 4.2 t, above the pace."""
    t = _per_micro_batch(24, 8)[0] - _per_micro_batch(16, 8)[0]
    slow = _per_micro_batch(19, 8, slow_rank=8, slow_factor=1.4)[1]
    assert float(slow.straggler_s) == pytest.approx(0.4 * 2 * t, rel=1e-9)
    first = _per_micro_batch(19, 8, slow_rank=0, slow_factor=1.4)[1]  # 3 layers: 4.2 t
    assert float(first.straggler_s) > 5 * float(slow.straggler_s)


def test_plan_and_predict_charge_the_same_split(capsys):
    """plan's Llama 3 405B row at dp 8 x tp 8 x pp 64 (1, 62 x 2, 1 layers) and predict of that
    layout read the one split: the same step and memory (77.9 GB: rank 1's 2 layers, where the
    first stage's 2 layers + embedding were charged before)."""
    code, out, _ = run_cli(
        capsys,
        [
            "plan",
            "--workload",
            "llama3-405b",
            "--hardware",
            "dgx-h100",
            "--devices",
            "4096",
            "--global-batch",
            "2048",
            "--json",
        ],
    )
    assert code == 0, out
    # fully sharded (the planner also offers hybrid shard groups of whole servers, session 40)
    row = next(r for r in json.loads(out)["layouts"] if r["pp"] == 64 and r["zero"] == 1
               and r["shard_group"] == r["dp"] * r["cp"])
    assert (row["dp"], row["tp"], row["micro_batch"], row["schedule"]) == (8, 8, 1, "zb")
    assert row["layers_per_stage"] == [1] + [2] * 62 + [1]
    code, out, _ = run_cli(
        capsys,
        [
            *PREDICT_405B[:11],
            "--global-batch",
            "2048",
            "--accumulation",
            "256",
            "--strategy",
            "zero1",
            "--schedule",
            "zb",
            "--sequence-parallel",
            "--json",
        ],
    )
    assert code == 0, out
    predicted = json.loads(out)[0]
    assert predicted["step_time_s"] == pytest.approx(row["step_time_s"], rel=1e-12)
    assert predicted["memory_bytes"] == pytest.approx(row["memory_bytes"], rel=1e-12)
    # session 44: + 2 B x 796,934,144 parameters a device for ZeRO-1's fp32 main grads
    # (Megatron-Core's distributed optimizer, docs/model.md §4): 77,875,732,480 before
    assert row["memory_bytes"] == pytest.approx(79_469_600_768, rel=1e-9)


def test_a_split_the_first_last_flags_cannot_give_says_why_at_one_virtual_stage():
    """32 layers over pp 13 run 6 x 3, 7 x 2: Megatron-LM's first/last flags give every stage
    between the same layers, so it needs its layout flag; the words said "6 model chunks" and "a
    multiple of 1" at v = 1 before session 21."""
    words = uneven_stage_words(32, 13)
    assert words.startswith(
        "32 layers over pp 13: 6 stages of 3 layers and 7 of 2 (Megatron-LM: "
        "--pipeline-model-parallel-layout, as its first/last-stage flags give every stage "
        "between the first and the last the same layers; torchtitan splits"
    )
    assert "a multiple of 2;" in uneven_stage_words(29, 4, 2)  # v 2: 29 is odd
