"""Context-parallel (ring attention) communication per layer and micro-batch.

Context parallelism splits each sequence over c devices (Megatron-Core / Transformer Engine
"p2p" ring attention; Liu et al. 2023, "Ring Attention with Blockwise Transformers", arXiv
2310.01889): every device keeps its s/c queries and passes the keys and values of its chunk
around the ring, c - 1 hops in forward; backward passes them again and the key/value gradients
back, 2 (c - 1) hops; where recomputation reruns the attention core (full recompute, selective
recompute of the core) its forward ring runs again in backward, c - 1 more hops. One hop moves
K and V of one chunk, ``2 b (s/c) (kv h / a) / t`` elements per tensor-parallel rank. Each hop
overlaps one step of the attention, the chunk in hand (Transformer Engine's
``AttnFuncWithCPAndKVP2P``: c steps, each launching the next step's send before its own
attention and waiting for it at the end), so a hop is exposed by what outlasts its step, plus
the contention share of the hidden part (``cp_exposed_per_layer_s``).
docs/model.md §14.
"""

from __future__ import annotations

import numpy as np


def kv_chunk_bytes(micro_batch, seq_len, hidden, heads, kv_heads, tp, cp, activation_bytes=2.0):
    """Bytes of one ring hop: K and V of one sequence chunk on one tensor-parallel rank,
    ``2 b (s/c) (kv h / a) / t`` elements of ``activation_bytes`` bytes (2: 16-bit)."""
    f = np.asarray
    return (2.0 * f(micro_batch, dtype=float) * f(seq_len, dtype=float) / f(cp, dtype=float)
            * f(kv_heads, dtype=float) * f(hidden, dtype=float) / f(heads, dtype=float)
            / f(tp, dtype=float) * activation_bytes)


def cp_hop_s(chunk_bytes, latency_s, bandwidth_GBps):
    """Seconds of one ring hop: ``latency_s + chunk_bytes / (bandwidth_GBps * 1e9)``
    (``latency_s`` s per hop, ``bandwidth_GBps`` GB/s of one direction of the hop's link)."""
    return latency_s + np.asarray(chunk_bytes, dtype=float) / (
        np.asarray(bandwidth_GBps, dtype=float) * 1e9)


def _behind_steps_s(steps, send_s, step_s, contention):
    """Seconds ``steps`` sends of ``send_s`` each cost, each behind one attention step of
    ``step_s``: what outlasts the step, and the ``contention`` share of what it hides."""
    hidden = np.minimum(send_s, step_s)
    return steps * (send_s - hidden + contention * hidden)


def cp_exposed_per_layer_s(hop_s, cp, attention_forward_s, attention_backward_s, contention,
                           recomputed=False):
    """(forward, backward) seconds of one layer's ring-attention sends per micro-batch that its
    attention core does not hide, ``contention`` share of the hidden part included.

    Transformer Engine's ``AttnFuncWithCPAndKVP2P`` splits the attention into c equal steps
    (forward ``attention_forward_s / c``, backward ``attention_backward_s / c``); step i sends
    while it computes and the next step waits for the send. Forward: steps 0 to c - 2 each send
    the next K and V, one hop (the last step has nothing to send). Backward: step 0 sends K and
    V, steps 1 to c - 2 K and V with the dK and dV so far (one buffer of two hops), step c - 1
    dK and dV alone, so 2 (c - 1) hops over c steps. Each send is exposed by ``max(0, send -
    step)``. ``recomputed`` (bool): the backward reruns the attention's forward (activation
    recompute, ``transformer.recomputes_attention_core``), its c - 1 hops again, each behind
    its forward step, so backward adds the forward's exposed seconds once more. ``hop_s`` one
    hop's seconds (``cp_hop_s``); 0 without cp."""
    c = np.asarray(cp, dtype=float)
    hop = np.asarray(hop_s, dtype=float)
    steps = np.maximum(c, 1.0)
    forward = _behind_steps_s(np.maximum(c - 1.0, 0.0), hop,
                              np.asarray(attention_forward_s, dtype=float) / steps, contention)
    backward_step = np.asarray(attention_backward_s, dtype=float) / steps
    backward = (_behind_steps_s(np.where(c > 1.0, 2.0, 0.0), hop, backward_step, contention)
                + _behind_steps_s(np.maximum(c - 2.0, 0.0), 2.0 * hop, backward_step,
                                  contention)
                + np.where(np.asarray(recomputed, dtype=bool), forward, 0.0))
    return forward, backward
