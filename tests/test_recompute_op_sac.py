"""Selective recompute by torchtitan's per-op selective checkpoint (selective_ac_option 'op'):
every aten.mm output saved but the 2nd, 4th, ... of a block, the fused attention's output and
the reduce-scatters' outputs saved, the rest rerun (docs/model.md §11). The 'op-sac' recompute
style."""

from collections import defaultdict
from functools import partial

import pytest

from scalesim.errors import ScalesimError
from scalesim.layout import ParallelLayout, op_sac_of
from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.tensor_parallel import collectives_per_layer
from scalesim.predict import predict
from scalesim.presets import HARDWARE, transformer_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.shipped import validation_path
from scalesim.validate_parallel import case_inputs, load_parallel_cases, recompute_op_sac_of

# Llama-style block: h 64, a 4, kv 2 (head dim 16: K and V 32 wide), f 160
H, A, KV, F = 64, 4, 2, 160


def test_recomputed_matmul_weights_by_hand():
    # gated order wq 64x64, wk 64x32, wv 64x32, wo 64x64, w1 64x160, w3 64x160, w2 160x64:
    # 2nd, 4th, 6th = wk 2,048 + wo 4,096 + w3 10,240 = 16,384 of 43,008
    rerun, saved = tf.op_sac_matmul_weights(H, A, KV, F, True)
    assert (float(rerun), float(saved)) == (16_384, 43_008 - 16_384)
    # GPT, kv = a (fused qkv 64x192, proj 64x64, fc1 64x160, fc2 160x64): proj 4,096 + fc2
    # 10,240 rerun; qkv 12,288 + fc1 10,240 saved
    rerun, saved = tf.op_sac_matmul_weights(H, A, A, F, False)
    assert (float(rerun), float(saved)) == (14_336, 12_288 + 10_240)
    # 2 layers, s 32: 2 x 2 x 16,384 per token; over fused attention no attention core
    # (Korthikanti's: 2 x 4sh); unfused, its core is rerun too: + 2 x 4 x 32 x 64
    assert tf.recompute_flops_per_token(tf.RECOMPUTE_SELECTIVE, 2, H, A, KV, F, True, 32,
                                        op_sac=True, flash_attention=True) == 65_536
    assert tf.recompute_flops_per_token(tf.RECOMPUTE_SELECTIVE, 2, H, A, KV, F, True, 32,
                                        op_sac=True) == 65_536 + 16_384
    assert tf.recompute_flops_per_token(tf.RECOMPUTE_SELECTIVE, 2, H, A, KV, F, True, 32) == (
        2 * 4 * 32 * 64)
    for r in (tf.RECOMPUTE_NONE, tf.RECOMPUTE_FULL):  # only selective changes
        assert (tf.recompute_flops_per_token(r, 2, H, A, KV, F, True, 32, op_sac=True)
                == tf.recompute_flops_per_token(r, 2, H, A, KV, F, True, 32))


def test_saved_bytes_by_hand():
    # per token, no tensor parallelism: block input 2h 128, wq 2h 128, wv 2 x 32 = 64, w1 2f 320,
    # w2 2h 128, attention output 2h 128 and logsumexp 4 B x 4 heads = 16: 912 B; b 2 x s 32
    assert tf.op_sac_activation_bytes_per_layer(2, 32, H, A, KV, F, True) == 64 * 912
    # tp 2 with sequence parallelism: input 64, wq 64, wv 32, w1 160, w2 (row-parallel, whole)
    # 128, attention 64 + 8, two reduce-scatter outputs 2 x 64: 648 B
    assert tf.op_sac_activation_bytes_per_layer(2, 32, H, A, KV, F, True, 2, True) == 64 * 648
    # GPT, kv = a, tp 1: input 128, qkv 2 x 192 = 384, fc1 320, attention 128 + 16: 976 B
    assert tf.op_sac_activation_bytes_per_layer(2, 32, H, A, A, F, False) == 64 * 976


def test_rerun_collectives():
    assert collectives_per_layer(tf.RECOMPUTE_SELECTIVE) == 4
    # the two all-gathers of sequence parallelism (one RS + AG pair's worth); without it the
    # attention output's all-reduce
    assert collectives_per_layer(tf.RECOMPUTE_SELECTIVE, False, True, op_sac=True) == 5
    assert collectives_per_layer(tf.RECOMPUTE_SELECTIVE, False, False, op_sac=True) == 5
    assert collectives_per_layer(tf.RECOMPUTE_FULL, op_sac=True) == 6
    assert collectives_per_layer(tf.RECOMPUTE_NONE, op_sac=True) == 4


SMALL = dict(layers=4, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, gated=False,
             seq_len=1024, vocab=50368, tied_embeddings=True, flash_attention=True,
             params=60e6, dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=2, global_batch=8,
             schedule=0, virtual_stages=1, recompute=tf.RECOMPUTE_SELECTIVE,
             sequence_parallel=False, devices_per_node=8, peak_flops_per_s=100e12,
             efficiency=1.0, memory_bandwidth_GBps=1000.0, intra_latency_s=2e-6,
             intra_busbw_GBps=200.0, inter_latency_s=6e-6, inter_busbw_GBps=100.0, device_cv=0.0)


def test_layout_step_charges_the_policy_by_hand():
    none = evaluate_layouts(LayoutInputs(**{**SMALL, "recompute": tf.RECOMPUTE_NONE}))
    op = evaluate_layouts(LayoutInputs(**SMALL, recompute_op_sac=True))
    # per layer and micro-batch of M = 2048 tokens, GPT block (h 1024, f 4096), 1e14 FLOP/s,
    # 1e12 B/s: proj 2*2048*1024*1024 FLOP = 4.294967296e9 -> 4.294967296e-5 s + 2 B x (2048*1024
    # + 1024*1024 + 2048*1024) = 10,485,760 B -> 1.048576e-5 s; fc2 2*2048*1024*4096 =
    # 1.7179869184e-4 s + 2 B x (2048*4096 + 4096*1024 + 2048*1024) = 29,360,128 B ->
    # 2.9360128e-5 s; elementwise (22h + 4f) x 2048 = 79,691,776 B less the last add
    # 7h x 2048 = 14,680,064 B: 6.5011712e-5 s
    rerun = (4.294967296e-5 + 1.048576e-5 + 1.7179869184e-4 + 2.9360128e-5 + 6.5011712e-5) * 16
    assert float(op.compute_s - none.compute_s) == pytest.approx(rerun, rel=1e-9)
    model = tf.model_flops_per_token(4, 1024, 8, 8, 4096, False, 1024, 50368)
    assert float(op.hfu / op.mfu) == pytest.approx((model + 4 * 2 * (1024**2 + 4096 * 1024))
                                                   / model)
    # memory: the policy's saved set in place of Korthikanti's, plus one layer rerunning what
    # neither saved (its working set less its own saved set: the rerun reads those, since
    # session 38; before, the whole working set on top)
    sel = evaluate_layouts(LayoutInputs(**SMALL))
    saved = tf.op_sac_activation_bytes_per_layer(2, 1024, 1024, 8, 8, 4096, False)
    korthikanti = tf.activation_bytes_per_layer(2, 1024, 1024, 8, 8, 4096, False,
                                                recompute=tf.RECOMPUTE_SELECTIVE,
                                                flash_attention=True)
    working = tf.activation_bytes_per_layer(2, 1024, 1024, 8, 8, 4096, False,
                                            flash_attention=True)
    assert float(op.activation_bytes - sel.activation_bytes) == pytest.approx(
        4 * (saved - korthikanti) + (working - saved) - (working - korthikanti))


def test_the_style_reaches_predict_and_is_noted_elsewhere():
    profile = profile_from_presets(HARDWARE["dgx-a100"], transformer_workload("gpt-1.7b"))

    def run(style, recompute):
        return predict(profile, Scenario(devices=[1], micro_batch=1, accumulation=2,
                                         layout=ScenarioLayout(recompute=recompute,
                                                               recompute_style=style)))[0]

    assert run("op-sac", "selective").compute_s > run("whole-forward", "selective").compute_s
    assert run("op-sac", "full") == run("whole-forward", "full")  # selective only
    assert op_sac_of("op-sac") and not op_sac_of("early-stop")
    with pytest.raises(ScalesimError, match="recompute_style"):
        op_sac_of("sometimes")
    assert ParallelLayout(global_batch=2, micro_batch=1, recompute_style="op-sac")


def test_which_sources_use_it():
    titan = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
    assert recompute_op_sac_of(f"{titan} (added in commit 820504e20, 2025-06-13)")
    assert not recompute_op_sac_of(titan)  # no date: not known
    assert not recompute_op_sac_of("mosaicml/llm-foundry README (2024-01-06)")
    cases = {c.id: c for c in load_parallel_cases(validation_path("parallel_cases.json"))}
    for case_id, expected in (("torchtitan_llama31_8b_fsdp8_eager", True),
                              ("llmfoundry_h100l_70b_s2048_128gpu", False)):
        flags: list[str] = []
        _, layout = case_inputs(cases[case_id], flags)
        assert (layout.recompute_style == "op-sac") is expected
        assert any("per-op selective" in f for f in flags) is expected


def test_pytorch_selective_checkpoint_reruns_every_second_matmul():
    """Measured on the installed PyTorch: a Llama-style block wrapped in a non-reentrant
    checkpoint with torchtitan's per-op policy (``_custom_policy`` at 9dec370; CPU's fused
    attention op stands in for the GPU's flash / efficient one in the save list) spends, in
    backward, the matmul FLOPs of an unchecked block plus what the model charges."""
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.nn import functional as fn
    from torch.utils.checkpoint import (
        CheckpointPolicy,
        checkpoint,
        create_selective_checkpoint_contexts,
    )
    from torch.utils.flop_counter import FlopCounterMode

    aten = torch.ops.aten
    save_list = {aten.mm.default, aten._scaled_dot_product_flash_attention.default,
                 aten._scaled_dot_product_efficient_attention.default,
                 aten._scaled_dot_product_flash_attention_for_cpu.default, aten.max.default}

    def policy(meta, ctx, func, *args, **kwargs):  # torchtitan's _custom_policy
        key = "recompute_mm_count" if ctx.is_recompute else "forward_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        to_save = func in save_list and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if to_save else CheckpointPolicy.PREFER_RECOMPUTE

    class Block(nn.Module):  # torchtitan's Llama TransformerBlock, without rotary embedding
        def __init__(self):
            super().__init__()
            d = H // A
            self.wq, self.wk = nn.Linear(H, H, bias=False), nn.Linear(H, KV * d, bias=False)
            self.wv, self.wo = nn.Linear(H, KV * d, bias=False), nn.Linear(H, H, bias=False)
            self.w1, self.w3 = nn.Linear(H, F, bias=False), nn.Linear(H, F, bias=False)
            self.w2 = nn.Linear(F, H, bias=False)
            self.attention_norm, self.ffn_norm = nn.RMSNorm(H), nn.RMSNorm(H)

        def forward(self, x):
            b, s, d = x.shape[0], x.shape[1], H // A
            y = self.attention_norm(x)
            q = self.wq(y).view(b, s, A, d).transpose(1, 2)
            k = self.wk(y).view(b, s, KV, d).transpose(1, 2).repeat_interleave(A // KV, dim=1)
            v = self.wv(y).view(b, s, KV, d).transpose(1, 2).repeat_interleave(A // KV, dim=1)
            o = fn.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, s, H))
            y = self.ffn_norm(x)
            return x + self.w2(fn.silu(self.w1(y)) * self.w3(y))

    def backward_flops(per_op):
        torch.manual_seed(0)
        block, x = Block(), torch.randn(2, 32, H, requires_grad=True)
        with FlopCounterMode(display=False) as fwd:
            y = block(x) if not per_op else checkpoint(
                block, x, use_reentrant=False, context_fn=lambda: (
                    create_selective_checkpoint_contexts(partial(policy, defaultdict(int)))))
        with FlopCounterMode(display=False) as bwd:
            y.sum().backward()
        counts = [{str(k): v for k, v in c.get_flop_counts()["Global"].items()}
                  for c in (fwd, bwd)]
        return counts[0].get("aten.mm", 0), counts[1]

    tokens = 2 * 32
    forward, plain = backward_flops(False)
    assert forward == 2 * tokens * 43_008
    per_op = backward_flops(True)[1]
    rerun = per_op["aten.mm"] - plain["aten.mm"]
    assert rerun == 2 * tokens * 16_384  # wk, wo, w3
    model = tf.recompute_flops_per_token(tf.RECOMPUTE_SELECTIVE, 1, H, A, KV, F, True, 32,
                                         op_sac=True, flash_attention=True)  # SDPA: fused
    assert rerun == tokens * model
    # the attention core is not rerun: no other op's FLOPs grow
    assert {k: v for k, v in per_op.items() if k != "aten.mm"} == {
        k: v for k, v in plain.items() if k != "aten.mm"}


# ------------------------------------------------------------------ links, app, CLI

LLAMA_LINK = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "16", "tp": "8",
              "sp": "1", "mb": "1", "rec": "selective"}


def test_a_link_with_op_sac_is_v8_and_predicts_it():
    from app_harness import link_round_trip
    from scalesim.app.plan import build_scenario, make_plan

    (state, profile), (state2, profile2) = link_round_trip(LLAMA_LINK, "rs", "op-sac", 8)
    scenario, notes = build_scenario(state2, profile2)
    assert scenario.layout.recompute_style == "op-sac"
    assert not any("ignored" in n for n in notes)
    rows = make_plan(profile2, state2).rows
    assert rows == predict(profile2, scenario)
    before = make_plan(profile, state).rows
    assert all(a.memory_bytes < b.memory_bytes for a, b in zip(rows, before, strict=True))


def test_older_links_keep_opening_and_drop_a_value_they_cannot_have():
    from scalesim.app.state import decode_query

    for version in ("4", "7"):
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "rs": "op-sac"})
        assert state.rs == "whole-forward" and state.tp == 8
        assert messages == [f"ignored rs: a v{version} link has no per-op (op-sac) recompute "
                            "style"]
        state, _, messages = decode_query({**LLAMA_LINK, "v": version, "rs": "early-stop"})
        assert state.rs == "early-stop" and messages == []
    # on full recompute the app notes that the style changes nothing
    from scalesim.app.plan import build_scenario

    state, profile, _ = decode_query({**LLAMA_LINK, "v": "8", "rec": "full", "rs": "op-sac"})
    _, notes = build_scenario(state, profile)
    # said by the page's controls (was 'recompute style op-sac ignored: recompute is full, ...')
    assert ("Recompute style op-sac ignored: Activation recompute is full, not selective"
            in notes)


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "scalesim.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_cli_names_the_style_and_refuses_it_in_one_line_where_it_cannot_apply():
    args = ("--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8")
    out = _cli("predict", *args, "--recompute", "selective", "--recompute-style", "op-sac")
    assert out.returncode == 0 and "recompute selective (per-op)" in out.stdout
    out = _cli("plan", *args, "--global-batch", "16", "--recompute-style", "op-sac", "--top", "1")
    assert out.returncode == 0
    assert out.stdout.splitlines()[2].startswith("selective recompute: per-op selective")
    out = _cli("predict", *args, "--recompute-style", "per-op")
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "op-sac" in out.stderr


def test_selective_recompute_holds_one_layers_rerun_scores_unfused():
    """Megatron's selective recompute reruns the attention core in backward: unfused, that
    layer's scores, softmax and dropout (Korthikanti's 5·a·s²·b bytes at t = 1) exist again
    while its backward runs. By hand for b 2, s 1024, a 8: 5 x 8 x 1024² x 2 = 83,886,080 B
    more than with flash attention, whose stored selective set is the same; before, nothing,
    and full recompute then needed more memory than selective only for that (session 32)."""
    unfused = {**SMALL, "flash_attention": False}
    for bare in (SMALL, unfused):  # the stored selective set does not depend on the kernel
        assert tf.activation_bytes_per_layer(
            2, 1024, 1024, 8, 8, 4096, False, recompute=tf.RECOMPUTE_SELECTIVE,
            flash_attention=bare["flash_attention"]) == pytest.approx(
            tf.activation_bytes_per_layer(2, 1024, 1024, 8, 8, 4096, False,
                                          recompute=tf.RECOMPUTE_SELECTIVE, flash_attention=True))
    fused = evaluate_layouts(LayoutInputs(**SMALL))
    rerun = evaluate_layouts(LayoutInputs(**unfused))
    assert float(rerun.activation_bytes - fused.activation_bytes) == pytest.approx(83_886_080)
    full = evaluate_layouts(LayoutInputs(**{**unfused, "recompute": tf.RECOMPUTE_FULL}))
    none = evaluate_layouts(LayoutInputs(**{**unfused, "recompute": tf.RECOMPUTE_NONE}))
    assert float(full.activation_bytes) <= float(rerun.activation_bytes) <= float(
        none.activation_bytes)
