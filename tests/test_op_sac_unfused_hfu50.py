"""Recompute FLOPs (HFU) count the attention core exactly where the step time reruns it
(``transformer.recomputes_attention_core``; docs/model.md §11). Before session 50 torchtitan's
per-op policy over unfused attention reran the core in the time but not in the FLOPs."""

import pytest

from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts

# a small GPT: L 2, h 64, a 4, f 256 (fused QKV 64x192, proj 64x64, fc1 64x256, fc2 256x64:
# W = 12,288 + 4,096 + 16,384 + 16,384 = 49,152 weights a layer), s 32, V 128
GPT = dict(layers=2, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, gated=False, seq_len=32,
           vocab=128, tied_embeddings=True, flash_attention=True, params=100e3, dp=1, tp=1,
           pp=1, cp=1, zero=0, micro_batch=2, global_batch=8, schedule=0, virtual_stages=1,
           recompute=tf.RECOMPUTE_SELECTIVE, recompute_op_sac=True, sequence_parallel=False,
           devices_per_node=8, peak_flops_per_s=100e12, efficiency=1.0,
           memory_bandwidth_GBps=1000.0, intra_latency_s=2e-6, intra_busbw_GBps=200.0,
           inter_latency_s=6e-6, inter_busbw_GBps=100.0)
# model FLOPs per token: 3 x (L (2W + 4sh) + 2hV) = 3 x (2 x (98,304 + 8,192) + 16,384)
MODEL = 688_128
CORE = 2 * 4 * 32 * 64  # L 4sh = 16,384 a token


def hardware_flops_per_token(result) -> float:
    """Model + recompute FLOPs per token the result's HFU counts (one device)."""
    return float(result.hfu * GPT["peak_flops_per_s"] / result.tokens_per_s)


def test_op_sac_hfu_by_hand_with_and_without_fused_attention():
    fused = evaluate_layouts(LayoutInputs(**GPT))
    unfused = evaluate_layouts(LayoutInputs(**{**GPT, "flash_attention": False}))
    # rerun proj and fc2: L 2 (h^2 + f h) = 2 x 2 x 20,480 = 81,920 a token
    assert hardware_flops_per_token(fused) == pytest.approx(MODEL + 81_920, rel=1e-12)
    assert float(fused.hfu / fused.mfu) == pytest.approx(47 / 42, rel=1e-12)
    # unfused attention: its core is rerun too, + L 4sh (was 81,920 here, HFU 47/42 MFU)
    assert hardware_flops_per_token(unfused) == pytest.approx(MODEL + 81_920 + CORE, rel=1e-12)
    assert float(unfused.hfu / unfused.mfu) == pytest.approx(8 / 7, rel=1e-12)


SETTINGS = {  # name: (recompute, early stop, op_sac, weight FLOPs rerun a token by hand)
    "none": (tf.RECOMPUTE_NONE, False, False, 0),
    "selective": (tf.RECOMPUTE_SELECTIVE, False, False, 0),
    "op-sac": (tf.RECOMPUTE_SELECTIVE, False, True, 2 * 2 * 20_480),
    "full": (tf.RECOMPUTE_FULL, False, False, 2 * 2 * 49_152),
    "full, early stop": (tf.RECOMPUTE_FULL, True, False, 2 * 2 * (49_152 - 16_384)),
}


def rerun_core_flops_of_time(inputs: dict) -> float:
    """Attention-core FLOPs a token that the recompute time reruns: the extra compute over no
    recompute, at the core's 0.25 and 0.5 of peak (t(0.25) - t(0.5) = 2F / peak a token)."""
    def rerun_s(share):
        with_share = {**inputs, "attention_efficiency": share}
        none = {**with_share, "recompute": tf.RECOMPUTE_NONE}
        return float(evaluate_layouts(LayoutInputs(**with_share)).compute_s
                     - evaluate_layouts(LayoutInputs(**none)).compute_s)
    tokens = GPT["global_batch"] * GPT["seq_len"]
    return (rerun_s(0.25) - rerun_s(0.5)) * GPT["peak_flops_per_s"] / 2.0 / tokens


@pytest.mark.parametrize("flash", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_recompute_style_counts_the_core_the_time_reruns(name, flash):
    recompute, early_stop, op_sac, weights = SETTINGS[name]
    inputs = {**GPT, "recompute": recompute, "recompute_early_stop": early_stop,
              "recompute_op_sac": op_sac, "flash_attention": flash}
    rerun = name != "none" and not (name == "op-sac" and flash)
    assert bool(tf.recomputes_attention_core(recompute, op_sac, flash)) == rerun
    core = CORE if rerun else 0
    assert rerun_core_flops_of_time(inputs) == pytest.approx(core, rel=1e-9, abs=1e-6)
    result = evaluate_layouts(LayoutInputs(**inputs))
    assert hardware_flops_per_token(result) == pytest.approx(MODEL + weights + core, rel=1e-12)
