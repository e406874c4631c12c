"""Sizes of a decoder/encoder transformer: parameters, FLOPs per token, activation bytes.

Pure numpy: every argument broadcasts, so one call answers one shape or many. Symbols: L layers,
h hidden, a attention heads, kv key/value heads (grouped-query attention when kv < a), f MLP
inner size (``ffn_hidden``; for a gated/SwiGLU MLP the size of each of its gate and up
projections), s sequence length, V vocabulary, t tensor-parallel degree. docs/model.md §11.

References:
- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM" (arXiv 2104.04473), §5.1 parameter count P = 12lh²(1 + 13/(12h) + (V+s)/(12lh))
  and Eq. 3, F = 96Bslh²(1 + s/(6h) + V/(16lh)) FLOPs per iteration with full recomputation.
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv 2205.05198), §4 and Table 2: activation bytes per layer.
"""

from __future__ import annotations

import numpy as np

from scalesim.model.select import select_first

RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL = 0, 1, 2
RECOMPUTE = {"none": RECOMPUTE_NONE, "selective": RECOMPUTE_SELECTIVE, "full": RECOMPUTE_FULL}


def _f(x):
    return np.asarray(x, dtype=float)


def attention_weights(hidden, heads, kv_heads):
    """Weights of one attention block's matrices: Q and output h·h each, K and V h·(kv·h/a)."""
    h, a, kv = _f(hidden), _f(heads), _f(kv_heads)
    return 2.0 * h * h + 2.0 * h * (kv * h / a)


def mlp_weights(hidden, ffn_hidden, gated):
    """Weights of one MLP: 2·h·f, or 3·h·f for a gated (SwiGLU) MLP (gate, up, down)."""
    return np.where(np.asarray(gated, dtype=bool), 3.0, 2.0) * _f(hidden) * _f(ffn_hidden)


def layer_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated):
    """Weights of one layer that take part in matrix multiplies (no biases, no norms)."""
    return attention_weights(hidden, heads, kv_heads) + mlp_weights(hidden, ffn_hidden, gated)


def layer_small_params(hidden, heads, kv_heads, ffn_hidden, gated, biases, layernorm):
    """Biases and norm weights of one layer: biases of Q, K, V, output, MLP layers; two norms
    (LayerNorm: scale and shift, 4h; RMSNorm: scale only, 2h)."""
    h, a, kv, f = _f(hidden), _f(heads), _f(kv_heads), _f(ffn_hidden)
    mlp_bias = np.where(np.asarray(gated, dtype=bool), 2.0 * f, f) + h
    bias = np.where(np.asarray(biases, dtype=bool), h + 2.0 * kv * h / a + h + mlp_bias, 0.0)
    return bias + np.where(np.asarray(layernorm, dtype=bool), 4.0, 2.0) * h


def parameter_count(layers, hidden, heads, kv_heads, ffn_hidden, gated, seq_len, vocab,
                    tied_embeddings=True, learned_positions=True, biases=True, layernorm=True):
    """Parameters of the whole model: L layers, token embedding V·h (and a separate output
    projection V·h unless tied), learned position embedding s·h, final norm.

    For a GPT of Narayanan 2021 (biases, LayerNorm, learned positions, tied, f = 4h) this is
    exactly 12lh² + 13lh + (V+s)h + 2h, his §5.1 formula plus the final LayerNorm.
    """
    h = _f(hidden)
    per_layer = (layer_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated)
                 + layer_small_params(hidden, heads, kv_heads, ffn_hidden, gated, biases,
                                      layernorm))
    embed = _f(vocab) * h * np.where(np.asarray(tied_embeddings, dtype=bool), 1.0, 2.0)
    positions = np.where(np.asarray(learned_positions, dtype=bool), _f(seq_len) * h, 0.0)
    final_norm = np.where(np.asarray(layernorm, dtype=bool), 2.0, 1.0) * h
    return _f(layers) * per_layer + embed + positions + final_norm


def layer_forward_flops_per_token(hidden, heads, kv_heads, ffn_hidden, gated, seq_len):
    """Forward FLOPs of one layer per token: 2 per matmul weight, plus attention scores and
    their product with V, 2·s·h each (4sh; Narayanan's 4Bs²h per layer, no causal halving)."""
    return (2.0 * layer_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated)
            + 4.0 * _f(seq_len) * _f(hidden))


def logits_forward_flops_per_token(hidden, vocab):
    """Forward FLOPs of the output projection (logits) per token: 2·h·V."""
    return 2.0 * _f(hidden) * _f(vocab)


def model_flops_per_token(layers, hidden, heads, kv_heads, ffn_hidden, gated, seq_len, vocab):
    """Model FLOPs per token of one training step (forward + backward = 3 x forward), without
    recomputation: what model-FLOPs utilisation (MFU) counts.

    For Narayanan's GPT: 72lh²(1 + s/(6h) + V/(12lh)) per token, his Eq. 3 without the
    recomputed forward."""
    fwd = (_f(layers) * layer_forward_flops_per_token(hidden, heads, kv_heads, ffn_hidden,
                                                       gated, seq_len)
           + logits_forward_flops_per_token(hidden, vocab))
    return 3.0 * fwd


def op_sac_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated):
    """(recomputed, saved) weights of one layer's matmuls under torchtitan's per-op selective
    checkpoint (``selective_ac_option = 'op'``): it saves every ``aten.mm`` output but the 2nd,
    4th, ... of a block's forward (``_custom_policy``, torchtitan
    ``torchtitan/parallelisms/parallelize_llama.py`` lines 214-276 at 9dec370, 2024-12-26;
    ``torchtitan/models/llama3/parallelize_llama.py`` at 820504e). The block's matmul order:
    gated (Llama: separate projections) wq, wk, wv, wo, w1, w3, w2, so wk (h·kv·h/a), wo (h·h)
    and w3 (h·f) are rerun; not gated (GPT: fused QKV) qkv, proj, fc1, fc2, so proj (h·h) and
    fc2 (f·h) are. docs/model.md §11."""
    h, a, kv, f = _f(hidden), _f(heads), _f(kv_heads), _f(ffn_hidden)
    gated = np.asarray(gated, dtype=bool)
    recomputed = np.where(gated, h * kv * h / a + h * h + h * f, h * h + f * h)
    return recomputed, layer_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated) - recomputed


def recompute_flops_per_token(recompute, layers, hidden, heads, kv_heads, ffn_hidden, gated,
                              seq_len, early_stop=False, op_sac=False, flash_attention=False):
    """Extra forward FLOPs per token that activation recomputation spends: the weight matmuls
    it reruns, 2 per weight (full: every one, with ``early_stop``, PyTorch's non-reentrant
    checkpoint of torch >= 2.1, all but the MLP's down projection, 2·f·h; selective with
    ``op_sac``, torchtitan's per-op policy: every second, ``op_sac_matmul_weights``; Korthikanti's
    selective, 2022 §5: none), plus the attention core (scores and scores·V, 4sh per layer)
    wherever the recompute reruns it (``recomputes_attention_core``: all but op_sac over fused
    attention, ``flash_attention``, whose output is saved); none = 0.
    Model FLOPs + these = hardware FLOPs (HFU)."""
    r = np.asarray(recompute)
    all_weights = 2.0 * layer_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated)
    down = np.where(np.asarray(early_stop, dtype=bool), 2.0 * _f(ffn_hidden) * _f(hidden), 0.0)
    per_op = np.where(np.asarray(op_sac, dtype=bool),
                      2.0 * op_sac_matmul_weights(hidden, heads, kv_heads, ffn_hidden, gated)[0],
                      0.0)
    weights = select_first([r == RECOMPUTE_FULL, r == RECOMPUTE_SELECTIVE],
                        [all_weights - down, per_op], 0.0)
    core = np.where(recomputes_attention_core(recompute, op_sac, flash_attention),
                    4.0 * _f(seq_len) * _f(hidden), 0.0)
    return _f(layers) * (weights + core)


def recomputes_attention_core(recompute, op_sac=False, flash_attention=False):
    """True where activation recomputation reruns the attention core in backward: full
    recompute (the whole layer; with early stop too, the core comes before the last weight
    matmul) and selective recompute (Korthikanti's, Megatron-Core's ``core_attn``), but not
    torchtitan's per-op policy (``op_sac``) over fused attention, whose output it saves."""
    r = np.asarray(recompute)
    saved = np.asarray(op_sac, dtype=bool) & np.asarray(flash_attention, dtype=bool)
    return (r == RECOMPUTE_FULL) | ((r == RECOMPUTE_SELECTIVE) & ~saved)


def narayanan_flops_per_iteration(batch, seq_len, layers, hidden, vocab):
    """Narayanan 2021 Eq. 3: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), with full recompute."""
    b, s, n, h, v = _f(batch), _f(seq_len), _f(layers), _f(hidden), _f(vocab)
    return 96.0 * b * s * n * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * n * h))


def activation_bytes_per_layer(micro_batch, seq_len, hidden, heads, kv_heads, ffn_hidden, gated,
                               tensor_parallel=1, sequence_parallel=False,
                               recompute=RECOMPUTE_NONE, flash_attention=False,
                               context_parallel=1):
    """Bytes of activations one layer keeps for backward on one device, 16-bit activations.

    Korthikanti 2022 Table 2 for a GPT layer (f = 4h, kv = a):
      none, no SP:        sbh(10 + 24/t + 5as/(ht))
      none, SP:           sbh(34/t + 5as/(ht))
      selective, no SP:   sbh(10 + 24/t)
      selective, SP:      sbh(34/t)
      full:               2sbh (only the layer's input; /t with SP)
    The 24 that tensor parallelism splits are Q, K, V (2+2+2), the attention output projection's
    input (2) and the MLP (2 bytes x 4h x 2 = 16); the 10 it does not split are the two norms'
    inputs (4), the inputs of the QKV and first MLP matmuls (4) and two dropout masks (2). Here
    they generalise to K, V of kv/a the size (4·kv/a) and an MLP of f: 4f/h (gated: 6f/h, gate
    and up outputs and their product). Flash attention keeps no s x s scores (the 5as/h term).
    Context parallelism over c ranks keeps s/c tokens of everything but the scores, which hold
    the s/c queries against all s keys: sbh terms at s/c, scores 5a(s/c)sb/t.
    """
    c = _f(context_parallel)
    b, s, h, a, t = _f(micro_batch), _f(seq_len) / c, _f(hidden), _f(heads), _f(tensor_parallel)
    kv, f = _f(kv_heads), _f(ffn_hidden)
    sp = np.asarray(sequence_parallel, dtype=bool)
    r = np.asarray(recompute)
    mlp = np.where(np.asarray(gated, dtype=bool), 6.0, 4.0) * f / h
    split = 2.0 + 4.0 * kv / a + 2.0 + mlp
    unsplit = 10.0
    scores = np.where(np.asarray(flash_attention, dtype=bool) | (r == RECOMPUTE_SELECTIVE), 0.0,
                      5.0 * a * s * c / (h * t))
    per_sbh = np.where(sp, (unsplit + split) / t, unsplit + split / t) + scores
    full = 2.0 / np.where(sp, t, 1.0)
    per_sbh = np.where(r == RECOMPUTE_FULL, full, per_sbh)
    return s * b * h * per_sbh


OP_SAC_LSE_BYTES_PER_HEAD = 4.0  # SDPA's logsumexp, one fp32 value per head and token


def op_sac_activation_bytes_per_layer(micro_batch, seq_len, hidden, heads, kv_heads, ffn_hidden,
                                      gated, tensor_parallel=1, sequence_parallel=False,
                                      context_parallel=1):
    """Bytes one layer keeps for backward on one device under torchtitan's per-op selective
    checkpoint (16-bit activations; docs/model.md §11): the block's input (2h; /t with
    sequence parallelism), the saved matmul outputs (odd positions of the block's order,
    ``op_sac_matmul_weights``: gated wq 2h/t, wv 2·kv·h/(a·t), w1 2f/t and w2's row-parallel
    output 2h, not split; not gated qkv 2(h + 2·kv·h/a)/t and fc1 2f/t), the fused attention's
    output (2h/t) and logsumexp (4a/t bytes), and with sequence parallelism the two
    reduce-scatters' outputs (2 x 2h/t). Per token of s/c tokens."""
    c = _f(context_parallel)
    b, s, h, a, t = _f(micro_batch), _f(seq_len) / c, _f(hidden), _f(heads), _f(tensor_parallel)
    kv, f = _f(kv_heads), _f(ffn_hidden)
    sp = np.asarray(sequence_parallel, dtype=bool)
    block_input = 2.0 * h / np.where(sp, t, 1.0)
    mm = np.where(np.asarray(gated, dtype=bool),
                  2.0 * (h + kv * h / a + f) / t + 2.0 * h,
                  2.0 * (h + 2.0 * kv * h / a + f) / t)
    attention = (2.0 * h + OP_SAC_LSE_BYTES_PER_HEAD * a) / t
    reduce_scatters = np.where(sp, 2.0 * 2.0 * h / t, 0.0)
    return s * b * (block_input + mm + attention + reduce_scatters)


# Bytes per token of one layer's memory-bound (elementwise) kernels in forward, 16-bit tensors,
# kernel by kernel as Megatron-LM runs a layer (fused bias-GeLU, fused scale-mask-softmax,
# fused bias-dropout-add): two norms read and write h (2 x 4h), two bias-dropout-adds read the
# output and the residual and write the sum and a 1-byte mask (2 x 7h), the MLP activation reads
# and writes f (4f; SwiGLU reads gate and up, writes their product: 6f), and without fused
# (flash) attention the a x s scores per token are written by their matmul, read and written by
# the softmax, read and written by dropout (+ 1-byte mask) and read by the product with V (13as).
# Backward moves about twice the forward's bytes (reads the saved input and the incoming
# gradient, writes the outgoing gradient).
BIAS_DROPOUT_ADD_BYTES_PER_H = 7.0
NORM_AND_RESIDUAL_BYTES_PER_H = 2.0 * 4.0 + 2.0 * BIAS_DROPOUT_ADD_BYTES_PER_H  # 22
SCORE_BYTES_PER_AS = 13.0
BACKWARD_ELEMENTWISE_FACTOR = 2.0


def elementwise_forward_bytes_per_token(hidden, heads, ffn_hidden, gated, seq_len,
                                        tensor_parallel=1, sequence_parallel=False,
                                        flash_attention=False):
    """(bytes outside attention scores, bytes of attention scores) one device's elementwise
    kernels move per token of one layer in forward. Tensor parallelism splits the MLP and
    score work; the norms and residual work only with sequence parallelism."""
    h, a, f, s, t = _f(hidden), _f(heads), _f(ffn_hidden), _f(seq_len), _f(tensor_parallel)
    sp = np.asarray(sequence_parallel, dtype=bool)
    norms = NORM_AND_RESIDUAL_BYTES_PER_H * h / np.where(sp, t, 1.0)
    mlp = np.where(np.asarray(gated, dtype=bool), 6.0, 4.0) * f / t
    scores = np.where(np.asarray(flash_attention, dtype=bool), 0.0, SCORE_BYTES_PER_AS * a * s / t)
    return norms + mlp, scores
