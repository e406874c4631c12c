"""Context-parallel (ring attention) communication per layer and micro-batch.

Context parallelism splits each sequence over c devices (Megatron-Core / Transformer Engine
"p2p" ring attention; Liu et al. 2023, "Ring Attention with Blockwise Transformers", arXiv
2310.01889): every device keeps its s/c queries and passes the keys and values of its chunk
around the ring, c - 1 hops in forward; backward passes them again and the key/value gradients
back, 2 (c - 1) hops. One hop moves K and V of one chunk, ``2 b (s/c) (kv h / a) / t`` elements
per tensor-parallel rank. The hops overlap with the attention of the chunk in hand, so only what
the attention core cannot cover is exposed, plus the contention share of the hidden part.
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


def cp_comm_per_layer_s(chunk_bytes, cp, latency_s, bandwidth_GBps):
    """Seconds of ring-attention sends of one layer and micro-batch: 3 (c - 1) hops (c - 1
    forward, 2 (c - 1) backward), each ``latency_s + chunk_bytes / (bandwidth_GBps * 1e9)``
    (``latency_s`` s per hop, ``bandwidth_GBps`` GB/s of one direction of the hop's link); 0
    without cp."""
    hops = 3.0 * np.maximum(np.asarray(cp, dtype=float) - 1.0, 0.0)
    return hops * (latency_s + np.asarray(chunk_bytes, dtype=float)
                   / (np.asarray(bandwidth_GBps, dtype=float) * 1e9))
