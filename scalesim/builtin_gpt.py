"""The calibration's built-in GPT (``calibration/models.py``, ``SmallGPT``) as the model sees it:
its heads, its name and its ``TransformerShape``, in one place without torch.

``scalesim calibrate --model gpt`` records the shape in the profile's compute curve
(``ComputeCurve.model_shape``); a profile written before that names the model
``gpt(width=W, depth=L, seq=S, vocab=V)`` only, and ``shape_from_name`` reads the shape back
from that name (the calibration counted the parameters exactly, so the caller checks the count).
"""

from __future__ import annotations

import re

from scalesim.schemas import TransformerShape

HEAD_DIM = 64  # SmallGPT's heads: width // 64 (one head below 64)
_NAME = re.compile(r"gpt\(width=(\d+), depth=(\d+), seq=(\d+), vocab=(\d+)\)")


def heads_of(width: int) -> int:
    """Attention heads of the built-in GPT of ``width``."""
    return max(1, width // HEAD_DIM)


def name_of(width: int, depth: int, seq_len: int, vocab: int) -> str:
    """The model name the calibration writes for the built-in GPT."""
    return f"gpt(width={width}, depth={depth}, seq={seq_len}, vocab={vocab})"


def shape_of(width: int, depth: int, seq_len: int, vocab: int,
             flash_attention: bool) -> TransformerShape:
    """The built-in GPT's architecture: ``depth`` pre-norm blocks of multi-head causal attention
    and a 4 x ``width`` GELU MLP with biases and LayerNorm, learned positions, tied output
    head (Narayanan's GPT, the shape's defaults). ``flash_attention``: the attention kernel
    keeps no s x s scores (on GPUs, torch's scaled_dot_product_attention picks a fused kernel;
    the calibration's block uses the same rule)."""
    return TransformerShape(layers=depth, hidden=width, heads=heads_of(width), seq_len=seq_len,
                            vocab=vocab, flash_attention=flash_attention)


def shape_from_name(name: str, flash_attention: bool) -> TransformerShape | None:
    """The shape of a built-in GPT named as ``name_of`` names it, else None."""
    m = _NAME.fullmatch(name.strip())
    if m is None:
        return None
    width, depth, seq_len, vocab = (int(g) for g in m.groups())
    if width % heads_of(width):
        return None
    return shape_of(width, depth, seq_len, vocab, flash_attention)
