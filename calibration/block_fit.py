"""The block shape a calibration times, and the fit of the layout model's compute to its timings
(no torch: shared by the calibration, the profile assembly and the tests).

The layout model times one layer's forward+backward on one device as the additive roofline of its
matmuls, attention core and memory-bound kernels (``model.layout_step``, docs/model.md §13),
which is linear in the two numbers a device brings:

    t_layer(tp) = A(tp) / F + C(tp) / B

with F the sustained matmul rate (peak x efficiency) and B the memory bandwidth. ``layer_terms``
gets A and C from the model itself (``evaluate_layouts`` of a one- and a two-layer transformer,
whose difference is exactly one layer: the logits and the optimizer cancel), so the calibration
fits the very formula the planner evaluates. ``fit_block`` finds F and B from the block timed at
several tensor-parallel shard shapes by non-negative least squares on the relative error, and
reports the fit's relative RMS error: how well the roofline form explains how efficiency falls
with smaller shards on this device.

Where the device's attention core has a published rate of its own, R (the A100's 0.656 of the
16-bit peak, ``presets.attention_share``), the planner runs the core at min(R, F), so the fit
does too: ``t_layer = A_mm / F + A_core / min(R, F) + C / B`` (``core_terms`` splits A).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from scalesim.errors import ScalesimError
from scalesim.model.fit_error import relative_rmse

# Where one of the two rates is set to this, its term vanishes from the layer time (not inf:
# inf * 0 would be NaN inside the model's utilisation terms).
_HUGE = 1e30
PRECISION_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}  # activation bytes per precision


@dataclass(frozen=True)
class Block:
    """A transformer block: hidden h, heads a, MLP f, sequence s, micro-batch b."""

    hidden: int
    heads: int
    ffn_hidden: int
    seq_len: int
    micro_batch: int
    flash_attention: bool = False

    def tp_degrees(self, wanted) -> list[int]:
        """The degrees of ``wanted`` that split this block evenly (heads, hidden and MLP)."""
        return [
            t
            for t in sorted(set(wanted))
            if self.heads % t == 0 and self.ffn_hidden % t == 0 and self.hidden % t == 0
        ]

    def activation_bytes(self, element_bytes: float) -> float:
        """Bytes of one b x s x h activation: a tensor-parallel all-reduce's message."""
        return float(self.micro_batch * self.seq_len * self.hidden * element_bytes)


def block_from_args(args) -> Block | None:
    """The block of ``--block-*`` flags (None without ``--block-hidden``); one-line errors."""
    h = args.block_hidden
    if h is None:
        if args.block_model:
            raise ScalesimError(
                "--block-model needs --block-hidden (and --block-heads, "
                "--block-ffn, --block-seq) to describe the block it builds"
            )
        return None
    heads = args.block_heads or max(1, h // 64)
    if h % heads:
        raise ScalesimError(f"--block-hidden {h} is not divisible by --block-heads {heads}")
    block = Block(
        hidden=h,
        heads=heads,
        ffn_hidden=args.block_ffn or 4 * h,
        seq_len=args.block_seq,
        micro_batch=args.block_batch or 1,
    )
    degrees = block.tp_degrees(args.block_tp)
    if not degrees:
        raise ScalesimError(
            f"--block-tp {','.join(map(str, args.block_tp))}: none divides "
            f"heads {heads}, hidden {h} and MLP {block.ffn_hidden}"
        )
    return block


def _layer_compute_s(block: Block, tp, flops_per_s: float, memory_GBps: float,
                     core_flops_per_s: float | None = None) -> np.ndarray:
    """The layout model's forward+backward seconds of one layer at tensor-parallel degree(s)
    ``tp`` with sustained rate ``flops_per_s`` and memory bandwidth ``memory_GBps``; the
    attention core at ``core_flops_per_s`` where given (else at ``flops_per_s``)."""
    from scalesim.layout import SCHEDULES
    from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
    from scalesim.model.transformer import RECOMPUTE_NONE

    shape = np.shape(tp)
    tp = np.atleast_1d(np.asarray(tp, dtype=int))
    layers = np.array([[1], [2]])
    x = LayoutInputs(
        layers=layers,
        hidden=block.hidden,
        heads=block.heads,
        kv_heads=block.heads,
        ffn_hidden=block.ffn_hidden,
        gated=False,
        seq_len=block.seq_len,
        vocab=1,
        tied_embeddings=True,
        flash_attention=block.flash_attention,
        params=1.0,
        dp=1,
        tp=tp,
        pp=1,
        cp=1,
        zero=0,
        micro_batch=block.micro_batch,
        global_batch=block.micro_batch,
        schedule=SCHEDULES["none"],
        virtual_stages=1,
        recompute=RECOMPUTE_NONE,
        sequence_parallel=False,
        devices_per_node=int(tp.max()),
        peak_flops_per_s=flops_per_s,
        efficiency=1.0,
        memory_bandwidth_GBps=memory_GBps,
        intra_latency_s=0.0,
        intra_busbw_GBps=1.0,
        inter_latency_s=0.0,
        inter_busbw_GBps=1.0,
    )
    if core_flops_per_s is not None:
        x = x.replace(peak16_flops_per_s=core_flops_per_s, attention_efficiency=1.0)
    compute = evaluate_layouts(x).compute_s
    return (compute[1] - compute[0]).reshape(shape)


def layer_terms(block: Block, tp) -> tuple[np.ndarray, np.ndarray]:
    """(A, C) of ``t_layer = A / F + C / B`` per degree of ``tp`` (F in FLOP/s, B in bytes/s):
    A the layer's FLOPs as the model counts them, C its bytes."""
    a = _layer_compute_s(block, tp, 1.0, _HUGE)
    c = _layer_compute_s(block, tp, _HUGE, 1e-9)  # memory_bandwidth_GBps 1e-9: 1 byte/s
    return a, c


def _matmul_terms(block: Block, tp) -> np.ndarray:
    """``layer_terms``' A without the attention core (the layer with the core at no cost)."""
    return _layer_compute_s(block, tp, 1.0, _HUGE, core_flops_per_s=_HUGE)


def core_terms(block: Block, tp) -> np.ndarray:
    """The attention core's part of ``layer_terms``' A per degree of ``tp`` (its FLOPs as the
    model counts them: the layer at 1 FLOP/s less the layer with the core at no cost)."""
    a, _ = layer_terms(block, tp)
    return a - _matmul_terms(block, tp)


def layer_time_s(block: Block, tp, flops_per_s: float, memory_bytes_per_s: float,
                 core_flops_per_s: float | None = None) -> np.ndarray:
    """The layout model's layer time with the fitted (or any) F and B; with the core's own
    rate R, the core at min(R, F) as the planner runs it."""
    a, c = layer_terms(block, tp)
    if core_flops_per_s is None:
        return a / flops_per_s + c / memory_bytes_per_s
    matmuls = _matmul_terms(block, tp)
    return (matmuls / flops_per_s + (a - matmuls) / min(core_flops_per_s, flops_per_s)
            + c / memory_bytes_per_s)


@dataclass(frozen=True)
class BlockFit:
    flops_per_s: float  # sustained matmul rate F
    memory_bytes_per_s: float  # B of the roofline's byte term
    rel_rmse: float
    model_s: np.ndarray  # fitted layer time per point


def median_rel_error(time_s, spread_s, repeats) -> np.ndarray:
    """Relative standard error of each point's median over ``repeats`` rounds whose interquartile
    range is ``spread_s``: 1.253 sigma / sqrt(n), sigma = IQR / 1.349 (a normal spread)."""
    t = np.asarray(time_s, dtype=float)
    sigma = np.asarray(spread_s, dtype=float) / 1.349
    return 1.253 * sigma / np.sqrt(np.maximum(np.asarray(repeats, dtype=float), 1.0)) / t


def inv_rate_error(a, c, t, error) -> float:
    """The standard error of the least-squares 1/F of ``t = A/F + C/B`` (relative residuals)
    when each time has relative standard error ``error`` (independent points):
    (J'J)^-1 J' diag(error^2) J (J'J)^-1 with J = [A/t, C/t]; one point: (t/A) error."""
    error = np.asarray(error, dtype=float)
    if t.size < 2:
        return float(t[0] / a[0] * error[0])
    pinv = np.linalg.pinv(np.column_stack([a / t, c / t]))
    return float(np.sqrt(max((pinv @ np.diag(error**2) @ pinv.T)[0, 0], 0.0)))


def _spread_words(inv_f: float, se: float) -> str:
    """Why the spread leaves F open: two standard errors of 1/F reach zero (F unbounded)."""
    floor = 1.0 / (inv_f + 2.0 * se) / 1e12
    return (
        "the block timings spread too much to fit: within two standard errors of their "
        f"medians the matmul rate could be anything above {floor:.3g} TFLOP/s"
    )


NOISY_REMEDY = (
    "time it again with more --block-repeats (the errors fall as 1/sqrt(rounds)) or on an idle "
    "machine, with --threads 1 where a process ran more than one thread (threads that share a "
    "core with other work stall each other)"
)


def _byte_floor(inv_b, t, c):
    """1/B as fitted, or where no byte term is needed (1/B <= 0) a bandwidth whose term is
    0.1% of the largest time."""
    return inv_b if inv_b > 0 else 1e-3 * float(np.min(t / c))


def _fit_at_core_rate(a, core, c, t, core_flops_per_s: float):
    """(1/F, 1/B, relative RMSE, model times) of ``t = (A - core)/F + core/R + C/B``: the
    core at its own rate R, for F >= R. Where the free fit puts F below R (or leaves the
    matmuls no time), the best F >= R is the kink F = R, with only B free."""
    shifted = 1.0 - core / (core_flops_per_s * t)  # what the matmuls and bytes leave, relative
    (inv_f, inv_b), _ = nnls(np.column_stack([(a - core) / t, c / t]), shifted)
    if inv_f <= 0 or inv_f > 1.0 / core_flops_per_s:
        inv_f = 1.0 / core_flops_per_s
        (inv_b,), _ = nnls((c / t)[:, None], 1.0 - a * inv_f / t)
    inv_b = _byte_floor(inv_b, t, c)
    model = (a - core) * inv_f + core / core_flops_per_s + c * inv_b
    return inv_f, inv_b, relative_rmse(model, t), model


def fit_block(block: Block, tp, times_s, spread_s=None, repeats=None,
              core_flops_per_s: float | None = None) -> BlockFit:
    """F and B minimising the relative squared error of the layout model's layer time against
    ``times_s`` measured at degrees ``tp``; both kept positive (non-negative least squares on
    1/F and 1/B). With one point, or points the byte term cannot tell apart, B is left where
    the points put no weight on it (a bandwidth so high its term is 0.1% of the time).

    With the points' interquartile ``spread_s`` over ``repeats`` rounds, a fit whose 1/F is
    within two standard errors of zero (``inv_rate_error``: the spread allows any F above some
    floor) is refused rather than returned; without them the points count as exact.

    ``core_flops_per_s``: the attention core's own sustained rate R on this device (FLOP/s;
    None: the core runs at F). The planner runs the core at min(R, F), so a fit whose F comes
    out above R is redone with the core at R (the matmuls then account for the rest of the
    time), and the better of the fits consistent with min(R, F) is kept."""
    tp = np.asarray(tp, dtype=int)
    t = np.asarray(times_s, dtype=float)
    if tp.size == 0 or tp.size != t.size or np.any(t <= 0):
        raise ScalesimError("fit_block needs one positive time per tensor-parallel degree")
    a, c = layer_terms(block, tp)
    error = (
        np.zeros_like(t)
        if spread_s is None
        else median_rel_error(t, spread_s, repeats if repeats is not None else 1)
    )
    (inv_f, inv_b), _ = nnls(np.column_stack([a / t, c / t]), np.ones_like(t))
    if inv_f <= 0:
        i, j = int(np.argmin(tp)), int(np.argmax(tp))
        raise ScalesimError(
            f"the block timings do not follow the matmul work: from tp {tp[i]} to tp {tp[j]} "
            f"the work shrinks {a[i] / a[j]:.2g}x but the time {t[i] / t[j]:.2g}x, so no "
            "positive matmul rate fits (fixed costs, or other work on the machine): time "
            "larger blocks (--block-hidden, --block-seq, --block-batch) on an idle machine, "
            "or fewer threads (--threads)"
        )
    se = inv_rate_error(a, c, t, error)
    if inv_f <= 2.0 * se:
        raise ScalesimError(f"{_spread_words(inv_f, se)}: {NOISY_REMEDY}")
    inv_b = _byte_floor(inv_b, t, c)
    model = a * inv_f + c * inv_b
    rel = relative_rmse(model, t)
    if core_flops_per_s is not None:
        # the fit above runs the core at F: the planner's min(R, F) only where F <= R
        core = a - _matmul_terms(block, tp)
        at_core = _fit_at_core_rate(a, core, c, t, core_flops_per_s)
        if inv_f < 1.0 / core_flops_per_s or at_core[2] < rel:
            inv_f, inv_b, rel, model = at_core
            # the fit returned is this one: its 1/F (the matmuls' share, A - core) must clear
            # its own two standard errors, as the free fit's had to (the relative error of each
            # time is that of t - core / R over t: the same ``error``)
            se = inv_rate_error(a - core, c, t, error)
            if inv_f <= 2.0 * se:
                raise ScalesimError(f"{_spread_words(inv_f, se)}: {NOISY_REMEDY}")
    return BlockFit(1.0 / inv_f, 1.0 / inv_b, rel, model)
