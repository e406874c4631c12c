"""One training step of a transformer split by a parallel layout (dp x tp x pp x cp, ZeRO).

    step = compute + tp_comm + cp_comm + bubble + p2p + dp_exposed + straggler + stall

- compute: m micro-batches of forward + backward (+ recompute) of the slowest pipeline stage's
  layers (the last stage also computes the logits), matrix multiplies at their per-device
  shapes (``matmul.gemm_s``), elementwise work memory-bound, plus the optimizer step; the
  slowest stage is the one whose compute + tp_comm + cp_comm is the longest (``_slowest_stage``);
- tp_comm: the tensor-parallel collectives of that stage (``tensor_parallel``), exposed;
- cp_comm: ring-attention sends of context parallelism not hidden behind attention
  (``context_parallel``), on the links ``point_to_point_links`` finds, as the pipeline's;
- bubble: the schedule's fill and drain (``pipeline_schedule``) of an average stage but the
  slowest (1F1B's span is m t_max + sum_i t_i - t_max);
- p2p: pipeline sends between stages on the critical path;
- dp_exposed: the data-parallel / ZeRO exchange of the local shard (``zero_exchange``, the
  data-parallel step's function) not hidden behind the last micro-batch's backward (ZeRO-2/3:
  the collectives of every micro-batch behind its compute; FSDP under a pipeline: its
  reduce-scatter after the first stage's last backward, ``piped_reduce``), plus the share ``comm_contention``
  of the hidden part; all of it with ``overlap`` off;
- straggler: the expected wait for the slowest of all devices, and with jitter for the slowest
  rank of the tensor group at each of its collectives (``stragglers``); a slow device's stage
  computes ``slow_factor`` times slower and its replica is late by
  ``pipeline_schedule.slow_stage_delay_s``; the last replica's passes, longer by that wait
  (``stragglers.straggler_stretch``; under a pipeline a slow device's f where its stage alone
  holds the most parameters, and what jitter and the device spread add to the wait for the
  last of the fullest stage's dp x cp ranks), are the windows dp_exposed hides behind;
- stall: loading not hidden behind the rest of the step.

Every input broadcasts (numpy), so one call evaluates one layout or every layout of a search.
docs/model.md §16.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from scalesim.figures import GIB_BYTES
from scalesim.layout import GPIPE, INTERLEAVED, layers_per_stage, strides
from scalesim.model import collectives as coll
from scalesim.model import transformer as tf
from scalesim.model.compute import optimizer_step_of_s
from scalesim.model.context_parallel import cp_exposed_per_layer_s, cp_hop_s, kv_chunk_bytes
from scalesim.model.matmul import fp8_cast_s, gemm_s, memory_bound_s
from scalesim.model.memory import (
    ZERO3_GATHERED_UNITS,
    deepspeed_buffer_bytes,
    deepspeed_gathered_bytes,
    grad_state_bytes_per_param,
    held_grad_bytes_per_param,
    optimizer_with_copies_s,
    param_state_bytes_per_param,
    reduce_bytes_per_param_of,
    state_shards,
    under_measured_ceiling,
    unreduced_fsdp_grad_bytes_per_param,
    usable_memory_bytes,
)
from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
from scalesim.model.piped_reduce import piped_reduce_exposed_s
from scalesim.model.pipeline_schedule import (
    bubble_microbatches,
    fill_stage_s,
    microbatches_in_flight,
    p2p_s,
    slow_stage_delay_s,
)
from scalesim.model.select import select_first
from scalesim.model.shard_groups import (
    group_coeffs,
    group_link,
    replica_all_reduce,
    shard_sizes,
)
from scalesim.model.sharding import DEEPSPEED, EVERY_MICRO_STEP, FSDP, ONCE_PER_STEP
from scalesim.model.stragglers import (
    collective_waits_s,
    straggler_stretch,
    straggler_wait_s,
)
from scalesim.model.subset_links import subset_busbw_GBps
from scalesim.model.tensor_parallel import (
    collectives_per_layer,
    tp_comm_end_stages_s,
    tp_comm_per_layer_s,
)
from scalesim.model.zero_exchange import (
    exchange,
    holds_full_gradients,
    syncs_every_micro_step,
    unit_reduce_scatter_s,
)
from scalesim.pipeline_stages import interleaved_held_layers, stage_ends
from scalesim.pipeline_stages import stage_layers as stage_layers_on

ACTIVATION_BYTES = 2.0  # 16-bit activations
LOGIT_BYTES = 4.0  # fp32 logits for the loss, per vocabulary entry per token
# CUDA context (~0.3 GB with lazy loading, pytorch#107667) and NCCL communicators (~0.69 GB each
# over >2 GPUs, nccl#964): 1.0-2.4 GB for one to three groups; a setting in that range
# (docs/model.md section 16).
FRAMEWORK_BYTES = 2.0 * GIB_BYTES
FLASH_BACKWARD_FACTOR = 2.5  # flash attention backward FLOPs over its forward (5 vs 2 matmuls)


@dataclass(frozen=True)
class LayoutInputs:
    """Inputs of ``evaluate_layouts``; every field a scalar or an array (broadcast together)."""

    # transformer (docs/model.md §11)
    layers: object  # L, transformer layers
    hidden: object  # h, elements per token
    heads: object  # a, attention heads
    kv_heads: object  # kv, key/value heads
    ffn_hidden: object  # f, MLP inner size, elements per token
    gated: object  # SwiGLU (three MLP matrices) or not
    seq_len: object  # s, tokens per sequence
    vocab: object  # V, token types
    tied_embeddings: object
    flash_attention: object
    params: object  # whole model, parameters
    # layout
    dp: object  # data-parallel degree (replicas)
    tp: object  # tensor-parallel degree
    pp: object  # pipeline stages
    cp: object  # context-parallel degree
    zero: object  # 0..3
    micro_batch: object  # sequences per micro-batch per replica
    global_batch: object  # sequences per step
    schedule: object  # layout.SCHEDULES code
    virtual_stages: object  # v, model chunks per pipeline rank
    recompute: object  # transformer.RECOMPUTE code
    sequence_parallel: object
    # hardware
    devices_per_node: object  # GPUs per server
    peak_flops_per_s: object  # dense matmul peak of one device at the run's precision, FLOP/s
    efficiency: object  # eta: sustained share of that peak for large matmuls (fraction)
    memory_bandwidth_GBps: object  # device memory, GB/s: the optimizer's streaming sweep
    intra_latency_s: object  # per ring step inside a server, s
    intra_busbw_GBps: object  # whole server's ring busbw (nccl-tests), GB/s
    inter_latency_s: object  # per ring step across servers, s
    inter_busbw_GBps: object  # one node over all its NICs, GB/s
    intra_subset_shares: object = ()  # how intra_busbw_GBps (the whole server's ring busbw)
    # falls for a group of fewer GPUs of a server: (GPUs, share) pairs, shape (k, 2), the link
    # level's (LinkLevel.subset_shares; model/subset_links.py, docs/model.md §18)
    device_memory_bytes: object = np.inf
    memory_margin: object = 0.0  # share of device memory kept free (``usable_memory_bytes``)
    # bytes per parameter
    param_bytes_per_param: object = 2.0
    grad_bytes_per_param: object = 2.0
    optimizer_bytes_per_param: object = 12.0
    wire_bytes_per_param: object = 2.0
    reduce_bytes_per_param: object = np.nan  # bytes per parameter of the gradients' ZeRO/DP
    # reduction where it differs from the gathered parameters' wire bytes (FSDP mixed precision
    # with reduce_dtype float32: 4); NaN: the framework's (``memory.reduce_bytes_per_param_of``:
    # Megatron-Core's ZeRO-1 its fp32 main grads, the rest wire_bytes_per_param; §4, §16)
    optimizer_step_s: object = np.nan  # the measured optimizer step of all ``params`` on one
    # device (with its server's busy devices), s: each device takes it x the parameters it
    # updates / params (``compute.optimizer_step_of_s``); NaN: the memory-bound estimate
    per_step_s: object = 0.0  # fixed time once per step, neither sharded nor split over tp/pp
    # (``ComputeCurve.per_step_s``: a metric all-reduced once a step), s
    fetch_s: object = 0.0  # fixed time of each micro-batch's data fetch before its forward,
    # serial with the step, outside the passes the exchange hides behind and the devices'
    # speed spread (``ComputeCurve.fetch_s``, StepInputs.fetch_s; docs/model.md §1, §16), s
    # overheads
    comm_contention: object = 0.0  # share (0..1) of hidden collective time still charged, §3
    device_cv: object = 0.0  # std/mean of device speeds (persistent, device to device)
    jitter_cv: object = 0.0  # std/mean of one device's micro-batch compute, independent between
    # micro-batches and within one (docs/model.md §6, §14): the per-collective waits
    nvls_busbw_ratio: object = np.nan  # NVLS all-reduce busbw over the intra ring busbw (NaN:
    # the server has no NVLink SHARP), as StepInputs.nvls_busbw_ratio (docs/model.md §2)
    p2p_busbw_ratio: object = 1.0  # send/recv bandwidth of two devices of a server over the
    # intra ring busbw: 1 from the link model (NCCL gives a peer 2 channels per NVLink), a
    # measured one from the profile's send/recv fit (docs/model.md §15)
    p2p_latency_s: object = np.nan  # send/recv latency inside a server, s (NaN: intra_latency_s)
    loader_samples_per_s: object = np.inf  # input supply per model replica, samples/s
    framework_bytes: object = FRAMEWORK_BYTES  # CUDA context, NCCL, allocator slack, bytes
    tp_overlap: object = False  # tensor-parallel collectives overlapped with the matmuls
    p2p_overlap: object = True  # the interleaved schedule's steady-state sends overlap the next
    # chunk's compute (Megatron's overlap_p2p_comm, its training default; docs/model.md §15);
    # False: blocking, every send exposed
    overlap: object = True  # the framework overlaps communication with compute: the dp / ZeRO
    # exchange with backward (and forward), tp_overlap's collectives and p2p_overlap's sends;
    # False exposes them all
    # (Scenario.overlap, docs/model.md §16); the context-parallel ring always overlaps
    slow_factor: object = 1.0  # compute-time multiplier of one persistently slow device (1: none)
    slow_rank: object = 0  # its global rank (tp innermost, pp outermost, ``layout.strides``); a
    # rank beyond the devices means no slow device, as in the data-parallel path
    fsdp_backward_prefetch_post: object = False  # ZeRO-3 backward gathers issued after the
    # previous unit's gradient computation (FSDP BackwardPrefetch.BACKWARD_POST), so exposed
    recompute_early_stop: object = False  # full recompute by PyTorch's non-reentrant
    # checkpoint with early stop (torch >= 2.1): the layer's last weight matmul is not recomputed
    recompute_op_sac: object = False  # selective recompute by torchtitan's per-op selective
    # checkpoint (selective_ac_option 'op'): every second weight matmul and the elementwise
    # kernels rerun, matmul / attention / reduce-scatter outputs kept (docs/model.md §11)
    framework: object = FSDP  # ZeRO over dp: 0 PyTorch-native (FSDP for ZeRO-2/3, Megatron-Core's
    # distributed optimizer for ZeRO-1), 1 DeepSpeed (model/zero_exchange.py, as StepInputs)
    grad_sync: object = EVERY_MICRO_STEP  # sharded gradients reduced every micro-step (0) or
    # once per step with full gradients held (1: FSDP's no_sync), as StepInputs.grad_sync
    shard_group: object = 0  # s, ranks that shard the ZeRO states (hybrid sharding, HSDP: FSDP
    # HYBRID_SHARD, torchtitan's dp_shard x cp): the s innermost ranks of the dp x cp group,
    # replicated across the (dp cp) / s groups of them; 0 (or dp x cp): all of it, full
    # sharding. Must divide dp x cp (the edges refuse one that does not); no effect with ZeRO 0
    # (docs/model.md §16, hybrid sharding)
    algorithm: object = coll.AUTO  # all-reduce of the dp exchange: 0 auto (NCCL's ring, tree or
    # NVLS), 1 ring, 2 tree, 3 hierarchical (as StepInputs.algorithm)
    bucket_bytes: object = DDP_BUCKET_BYTES  # DDP gradient bucket (ZeRO-0), bytes
    first_bucket_bytes: object = DDP_FIRST_BUCKET_BYTES  # DDP's first bucket, bytes
    kernel_bandwidth_GBps: object = None  # byte rate of the layers' and logits' kernels, GB/s
    # (the roofline's byte term; a block calibration fits it, docs/model.md §13); None:
    # memory_bandwidth_GBps
    peak16_flops_per_s: object = None  # the device's 16-bit dense peak, FLOP/s: the attention
    # core's and the output layer's, which fp8 recipes keep in 16 bits (Transformer Engine and
    # torchao cast the transformer layers' Linear weights only; torchtitan filters "output");
    # None: peak_flops_per_s
    fp8: object = False  # the layers' weight matmuls in fp8 (at peak_flops_per_s), each paying
    # the casts of its operands (matmul.fp8_cast_s, docs/model.md §13)
    oom_micro_batch: object = 0  # the smallest micro-batch a calibration ran out of memory at
    # on this device, holding a whole replica (``ComputeCurve.oom_micro_batch``): rows that
    # hold one (tp = pp = cp = 1) at or above it do not fit (``memory.under_measured_ceiling``);
    # 0: none seen
    attention_efficiency: object = None  # share of peak16_flops_per_s the attention
    # core sustains (FlashAttention-2 on Hopper: presets.attention_efficiency_of); None or NaN:
    # ``efficiency``, the matmuls' (docs/model.md §13, attention kernel)

    def replace(self, **changes) -> LayoutInputs:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def row_ndim(self) -> int:
        """Dimensions of the rows the fields broadcast to; ``intra_subset_shares`` is one table
        for every row (a server's link), not a row field."""
        return max(np.ndim(getattr(self, f.name)) for f in dataclasses.fields(self)
                   if f.name != "intra_subset_shares")


@dataclass(frozen=True)
class LayoutResult:
    """Arrays of the broadcast shape; the eight time parts sum to ``step_time_s``."""

    step_time_s: np.ndarray
    compute_s: np.ndarray
    tp_comm_s: np.ndarray
    cp_comm_s: np.ndarray
    bubble_s: np.ndarray
    p2p_s: np.ndarray
    dp_exposed_s: np.ndarray
    straggler_s: np.ndarray
    stall_s: np.ndarray
    samples_per_s: np.ndarray
    tokens_per_s: np.ndarray
    mfu: np.ndarray  # model FLOPs / (devices x peak)
    hfu: np.ndarray  # model + recompute FLOPs / (devices x peak)
    weights_bytes: np.ndarray
    grads_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    activation_bytes: np.ndarray
    buffer_bytes: np.ndarray
    memory_bytes: np.ndarray
    fits: np.ndarray
    headroom_bytes: np.ndarray


def _f(x):
    return np.asarray(x, dtype=float)


def attention_efficiency(x: LayoutInputs) -> np.ndarray:
    """The attention core's sustained share of its peak: ``x.attention_efficiency`` where set
    (not NaN), else the matmuls' ``x.efficiency``; never above the matmuls' (a kernel slower
    than the vendor one, FlashAttention-2's 0.35 on Hopper, cannot outrun it where the
    matmuls themselves sustain less: the vendor kernel runs at their efficiency)."""
    if x.attention_efficiency is None:
        return _f(x.efficiency)
    own = _f(x.attention_efficiency)
    return np.where(np.isnan(own), _f(x.efficiency), np.minimum(own, _f(x.efficiency)))


def _layer_times(x: LayoutInputs, tokens, flops_per_s, mem_bytes_per_s, core_flops_per_s):
    """(forward, backward, recompute, matmul, attention, weight_grad) seconds of one layer for
    one micro-batch on one device; ``matmul`` is the weight matmuls' share of the three (what can
    hide tp traffic), ``attention`` the attention core's (forward, backward) pair (what hides
    ring-attention sends),
    ``weight_grad`` the weight-gradient matmuls of backward (ZB-H1's W pass, one of each weight
    matmul's two backward passes)."""
    h, a, kv, f, t = _f(x.hidden), _f(x.heads), _f(x.kv_heads), _f(x.ffn_hidden), _f(x.tp)
    seq = _f(x.seq_len)
    up = np.where(np.asarray(x.gated, dtype=bool), 2.0, 1.0) * f
    fp8 = np.asarray(x.fp8, dtype=bool)
    operand_bytes = np.where(fp8, 1.0, 2.0)  # fp8 matmuls read 1-byte operands, write 16 bits

    def weight_gemm_s(n, k):
        return gemm_s(tokens, n, k, flops_per_s, mem_bytes_per_s,
                      operand_bytes_per_element=operand_bytes)

    down = weight_gemm_s(h, f / t)  # the layer's last weight matmul
    gemms = (weight_gemm_s((h + 2.0 * kv * h / a) / t, h) + weight_gemm_s(h, h / t)
             + weight_gemm_s(up / t, h) + down)
    # fp8: each weight matmul first casts its operands (memory-bound, §13 "fp8"); under
    # sequence parallelism on the device's 1/t of the tokens where they are sharded: the
    # column-parallel matmuls' inputs and the row-parallel ones' output gradients are cast
    # before their all-gather (torchao's Float8ColwiseParallel / Float8RowwiseParallel,
    # Transformer Engine's fp8 gather)
    shard = np.where(np.asarray(x.sequence_parallel, dtype=bool), t, 1.0)
    casts = [fp8_cast_s(tokens, n, k, mem_bytes_per_s, input_share, grad_share)
             for n, k, input_share, grad_share in (
                 ((h + 2.0 * kv * h / a) / t, h, 1.0 / shard, 1.0), (h, h / t, 1.0, 1.0 / shard),
                 (up / t, h, 1.0 / shard, 1.0), (h, f / t, 1.0, 1.0 / shard))]
    cast_fwd = np.where(fp8, sum(c[0] for c in casts), 0.0)
    cast_bwd = np.where(fp8, sum(c[1] for c in casts), 0.0)
    down_cast = np.where(fp8, casts[3][0], 0.0)
    core = 4.0 * tokens * seq * h / t / core_flops_per_s  # scores and scores x V, per device
    other, scores = tf.elementwise_forward_bytes_per_token(
        h, a, f, x.gated, seq, t, x.sequence_parallel, x.flash_attention)
    elementwise = memory_bound_s((other + scores) * tokens, mem_bytes_per_s)
    score_s = memory_bound_s(scores * tokens, mem_bytes_per_s)
    forward = gemms + cast_fwd + core + elementwise
    # fused (flash) attention recomputes the scores in backward: 5 matmuls against 2 forward
    # (Dao et al. 2022, arXiv 2205.14135, §3.1; Dao 2023, FlashAttention-2 §3.1.2)
    core_backward = np.where(np.asarray(x.flash_attention, dtype=bool),
                             FLASH_BACKWARD_FACTOR, 2.0) * core
    backward = (2.0 * gemms + cast_bwd + core_backward
                + tf.BACKWARD_ELEMENTWISE_FACTOR * elementwise)
    r = np.asarray(x.recompute)
    # PyTorch's non-reentrant checkpoint with early stop (torch >= 2.1) ends the recomputation
    # once the last tensor saved for backward is back: the down projection's input and weight
    # are saved before it runs, so it and the residual add after it are not rerun (§13)
    early_stop = np.asarray(x.recompute_early_stop, dtype=bool)
    last_add = memory_bound_s(tf.BIAS_DROPOUT_ADD_BYTES_PER_H * h * tokens
                              / np.where(np.asarray(x.sequence_parallel, dtype=bool), t, 1.0),
                              mem_bytes_per_s)
    full = forward - np.where(early_stop, down + down_cast + last_add, 0.0)
    # torchtitan's per-op selective checkpoint (§11): every second weight matmul (gated: wk, wo,
    # w3; not gated: the attention projection and the down projection) and the forward's
    # elementwise kernels up to the last saved input (its non-reentrant checkpoint stops early:
    # not the residual add after the last matmul); fused attention's output is saved, so no
    # attention core (without fused attention its batched matmuls are rerun too): the one rule,
    # tf.recomputes_attention_core, that the recompute FLOPs (HFU) and the ring's rerun read
    gated = np.asarray(x.gated, dtype=bool)
    per_op_gemms = np.where(
        gated, weight_gemm_s(kv * h / a / t, h) + weight_gemm_s(h, h / t) + weight_gemm_s(f / t, h),
        weight_gemm_s(h, h / t) + down)
    per_op_casts = np.where(fp8, np.where(
        gated, fp8_cast_s(tokens, kv * h / a / t, h, mem_bytes_per_s, 1.0 / shard)[0]
        + casts[1][0] + fp8_cast_s(tokens, f / t, h, mem_bytes_per_s, 1.0 / shard)[0],
        casts[1][0] + casts[3][0]), 0.0)
    op_sac = np.asarray(x.recompute_op_sac, dtype=bool)
    per_op = (per_op_gemms + per_op_casts + elementwise - last_add
              + np.where(tf.recomputes_attention_core(r, op_sac, x.flash_attention), core, 0.0))
    selective = np.where(op_sac, per_op, core + score_s)
    recompute = select_first([r == tf.RECOMPUTE_FULL, r == tf.RECOMPUTE_SELECTIVE],
                          [full, selective], 0.0)
    matmul = 3.0 * gemms + select_first(
        [r == tf.RECOMPUTE_FULL, (r == tf.RECOMPUTE_SELECTIVE) & op_sac],
        [gemms - np.where(early_stop, down, 0.0), per_op_gemms], 0.0)
    return forward, backward, recompute, matmul, (core, core_backward), gemms


def _logits_s(x: LayoutInputs, tokens, flops_per_s, mem_bytes_per_s):
    """(forward + backward, weight-gradient) seconds of the output layer and loss for one
    micro-batch."""
    v_local = _f(x.vocab) / _f(x.tp)
    gemm = gemm_s(tokens, v_local, _f(x.hidden), flops_per_s, mem_bytes_per_s)
    return 3.0 * gemm + memory_bound_s(3.0 * LOGIT_BYTES * tokens * v_local, mem_bytes_per_s), gemm


@dataclass(frozen=True)
class PointToPointLinks:
    """Which links a group's point-to-point sends cross (pipeline stages, the context-parallel
    ring) and what one transfer costs on each: ``latency + bytes / bandwidth``."""

    per_node: np.ndarray  # members of the group in one server
    nodes: np.ndarray  # servers the group spans
    intra_latency_s: np.ndarray
    intra_GBps: np.ndarray  # one device's send/recv bandwidth to a peer in its server
    inter_latency_s: np.ndarray
    inter_GBps: np.ndarray  # one device's share of its server's network bandwidth

    def slowest(self):
        """(latency_s, GBps) of the slowest link the group's sends cross: across servers
        where the group spans more than one, else inside a server."""
        cross = self.nodes > 1
        return (np.where(cross, self.inter_latency_s, self.intra_latency_s),
                np.where(cross, self.inter_GBps, self.intra_GBps))


def point_to_point_links(x: LayoutInputs, size, stride) -> PointToPointLinks:
    """The links of the point-to-point sends of groups of ``size`` ranks ``stride`` apart
    (``layout.group_span``: members per server, servers spanned; docs/model.md §12, §15).
    Inside a server a send uses one device's NVLinks: the intra level's ring busbw (NCCL gives a
    peer the ring's channels) over two GPUs (``subset_links``: one NVLink of a DGX-1's
    cube-mesh; a switch keeps the whole) at its latency, or the profile's measured send/recv
    (``p2p_busbw_ratio`` of that busbw, ``p2p_latency_s``); across servers one device's share of
    its server's NICs, ``inter_busbw / devices_per_node``, at the inter level's latency."""
    per_node, nodes, _share = group_link(x, size, stride)
    link_model = np.isnan(_f(x.p2p_latency_s))
    intra_latency = np.where(link_model, _f(x.intra_latency_s), _f(x.p2p_latency_s))
    # from the link model a send between two GPUs has the links of a pair (one NVLink of a
    # DGX-1, subset_links); a measured send/recv already has them
    pair_GBps = subset_busbw_GBps(x.intra_busbw_GBps, 2, x.intra_subset_shares)
    return PointToPointLinks(
        per_node=per_node, nodes=nodes, intra_latency_s=intra_latency,
        intra_GBps=_f(x.p2p_busbw_ratio) * np.where(link_model, pair_GBps,
                                                    _f(x.intra_busbw_GBps)),
        inter_latency_s=_f(x.inter_latency_s),
        inter_GBps=_f(x.inter_busbw_GBps) / _f(x.devices_per_node))


def _slowest_stage(pp, layers, stage_layers, layer_s, logits_s, tp_layer_s, tp_first_s,
                   tp_last_s, cp_layer_s):
    """(layers, compute s, tensor-parallel s, ring-attention s) per micro-batch of the stage
    that paces the pipeline: of the first rank, the fullest rank between and the last (their
    layers ``stage_layers``, ``pipeline_stages.stage_ends``), the one whose sum of the three is
    the largest (ties: the last, then the first), so the step charges max over stages of
    (compute + tp + cp), not each term's own maximum (docs/model.md §15). The first stage runs
    the embedding's collectives ``tp_first_s``, the last the output layer and loss
    (``logits_s``) and their collectives ``tp_last_s``; without a pipeline one stage runs all."""
    first, middle, last = stage_layers
    compute = (first * layer_s, middle * layer_s, last * layer_s + logits_s)
    tp = (first * tp_layer_s + tp_first_s, middle * tp_layer_s, last * tp_layer_s + tp_last_s)
    ring = tuple(n * cp_layer_s for n in stage_layers)
    total_first, total_middle, total_last = (c + t + r for c, t, r in zip(compute, tp, ring,
                                                                         strict=True))
    pick_last = (total_last >= total_first) & (total_last >= total_middle)
    pick_first = ~pick_last & (total_first >= total_middle)
    alone = (layers, layers * layer_s + logits_s, layers * tp_layer_s + tp_first_s + tp_last_s,
             layers * cp_layer_s)
    piped = np.asarray(pp) > 1
    return tuple(np.where(piped, np.where(pick_last, z, np.where(pick_first, a, mid)), one)
                 for (a, mid, z), one in zip((stage_layers, compute, tp, ring), alone,
                                             strict=True))


def _piped_reduce_s(x: LayoutInputs, pp, v, tp, group, layer_params, embed, stage_layers,
                    drain_s, ring, reduce_bytes, replica):
    """Seconds the step waits for FSDP's once-a-step reduce-scatters under a pipeline
    (``piped_reduce``, docs/model.md §16): each rank's chunk whose backward ends last on it
    (the first rank's holds the embedding; the last rank's output layer is on its first chunk
    to finish, so with it under interleaving), reduced one unit a layer over the dp x cp group
    (``ring``, then ``replica`` under hybrid sharding) at ``reduce_bytes`` per parameter;
    ``drain_s``: seconds one rank's drain idles a rank."""
    first_layers, middle_layers, last_layers = stage_layers
    alone = v <= 1.0

    def reduce_s(layers, params):
        local = np.where(group > 1, params / _f(tp) * _f(x.wire_bytes_per_param), 0.0)
        return unit_reduce_scatter_s(local, layers, ring, x.wire_bytes_per_param,
                                     reduce_bytes, replica)

    def chunks(layers, last_embed, early_embed):
        """(last chunk's, earlier chunks') reduce-scatter seconds of a rank of ``layers``."""
        late, early = layers / v, layers - layers / v
        return (reduce_s(late, late * layer_params + last_embed),
                np.where(alone, 0.0, reduce_s(early, early * layer_params + early_embed)))

    return piped_reduce_exposed_s(pp, chunks(first_layers, embed, 0.0),
                                  chunks(middle_layers, 0.0, 0.0),
                                  chunks(last_layers, np.where(alone, embed, 0.0),
                                         np.where(alone, 0.0, embed)), drain_s)


def _straggler_s(x: LayoutInputs, devices, tp, m, per_micro, compute, micro_s, layers_on_stage,
                 slow_delay_s):
    """Expected waits for slower devices (docs/model.md §6, §14, §16), seconds per step.

    Persistent device speed spread: the slowest of all devices, std ``device_cv * compute``.
    Jitter (independent, std ``jitter_cv * micro_s`` per micro-batch of ``micro_s``): every
    tensor-parallel collective of the slowest stage waits for the slowest rank of its tp group
    (``collective_waits_s``); the tp groups (devices / tp of them) then wait for each other once
    per step (ZeRO-2/3, ``per_micro``: once per micro-batch, their collectives are barriers),
    jitter pooled over the
    micro-batches between those barriers as §6 pools micro-steps. Without tp both spreads meet
    at the same barriers and add in variance, as in §6. A slow device makes its replica
    ``slow_delay_s`` late per step (``pipeline_schedule.slow_stage_delay_s``), a persistent
    shift of one draw in the wait for the slowest device, as §6's slow device (per barrier
    with ZeRO-3)."""
    cv_d = _f(x.device_cv)
    groups = np.asarray(devices // np.maximum(tp, 1), dtype=np.int64)
    # each row keeps one of the two forms; the other is given no slow device, so its rows cost
    # one quadrature per device count, not one per row (each row's value is its own inputs')
    split_rows = tp > 1
    both = _barrier_waits_s(x, devices, tp, m, per_micro, micro_s, layers_on_stage,
                            cv_d * compute, np.where(split_rows, 0.0, slow_delay_s))[0]
    between, tp_waits = _barrier_waits_s(x, groups, tp, m, per_micro, micro_s, layers_on_stage,
                                         0.0, 0.0)
    split = (straggler_wait_s(devices, cv_d * compute, np.where(split_rows, slow_delay_s, 0.0))
             + between + tp_waits)
    return np.where(split_rows, split, both)


def _barrier_waits_s(x: LayoutInputs, groups, tp, m, per_micro, micro_s, layers_on_stage,
                     device_sigma_s, shift_s):
    """(the ``groups`` members' wait for the slowest of them at their barriers, the tensor
    groups' waits at their own collectives), expected seconds a step (docs/model.md §6, §14,
    §16). A member's step varies by jitter (``x.jitter_cv``, std ``jitter_cv * micro_s`` per
    micro-batch of ``micro_s``, pooled over the m micro-batches between barriers: once a step,
    ``per_micro`` at every micro-batch, ZeRO-2/3's barriers) and by ``device_sigma_s`` of
    persistent device spread a step (s), the two added in variance; one member is ``shift_s``
    (s) a step later still (a slow device); both split evenly over the barriers. Every
    tensor-parallel collective of a stage of ``layers_on_stage`` layers waits for the slowest
    rank of its tp group (``collective_waits_s``; 0 at tp = 1)."""
    cv_j = _f(x.jitter_cv)
    barriers = np.where(per_micro, m, 1.0)
    jitter_between = cv_j * micro_s * np.sqrt(m / barriers)
    return (barriers * straggler_wait_s(groups, np.hypot(device_sigma_s / barriers,
                                                         jitter_between), shift_s / barriers),
            m * collective_waits_s(tp, layers_on_stage * collectives_per_layer(
                x.recompute, x.recompute_early_stop, x.sequence_parallel, x.recompute_op_sac),
                                   micro_s, cv_j))


def _alone_on_fullest_stage(stage, pp, v, layers, first_params, middle_params, last_params):
    """Whether pipeline stage ``stage`` alone holds the most parameters (its data-parallel
    exchange the one the step times, no other as long): the first or the last above every other
    stage, or rank 1 (the fullest between, §15) above the ends and rank 2 (the next between,
    where pp >= 4). False without a pipeline."""
    p = np.asarray(pp)
    second_between = np.where(p >= 4, stage_layers_on(layers, pp, v, 2), -1.0)
    first_between = stage_layers_on(layers, pp, v, 1)
    return (p > 1) & np.where(
        stage == 0, first_params > np.maximum(middle_params, last_params),
        np.where(stage == p - 1, last_params > np.maximum(first_params, middle_params),
                 (stage == 1) & (middle_params > np.maximum(first_params, last_params))
                 & (first_between > second_between)))


def stacked(inputs: list[LayoutInputs]) -> LayoutInputs | None:
    """``inputs`` on a leading axis of their own, each field broadcast to their rows' common
    shape behind it, for one ``evaluate_layouts`` call (which has no branch on the rows'
    values: each row's figures are its own); None where they cannot share one call: a field
    None in some and not in others, of another dtype in one, or another
    ``intra_subset_shares`` table."""
    fields = [f.name for f in dataclasses.fields(LayoutInputs)]
    rows = np.broadcast_shapes(*(np.shape(getattr(x, f)) for x in inputs for f in fields
                                 if f != "intra_subset_shares"))
    changes = {}
    for f in fields:
        values = [getattr(x, f) for x in inputs]
        if f == "intra_subset_shares" or all(v is None for v in values):
            if any(v != values[0] for v in values):
                return None
            continue
        if any(v is None for v in values):
            return None
        arrays = [np.asarray(v) for v in values]
        if any(a.dtype != arrays[0].dtype for a in arrays):
            return None
        changes[f] = np.stack([np.broadcast_to(a, rows) for a in arrays])
    return inputs[0].replace(**changes)


def evaluate_together(inputs: list[LayoutInputs]) -> list[LayoutResult]:
    """``evaluate_layouts`` of each of ``inputs`` (its rows broadcast to all of theirs), in one
    call where they stack (``stacked``), else one call each (``evaluate_together_alone``; in a
    thread of ``lockstep.map_in_lockstep``, stacked with the other threads': the same numbers)."""
    from scalesim.model.step import _LOCKSTEP

    evaluations = getattr(_LOCKSTEP, "evaluations", None)
    return evaluate_together_alone(inputs) if evaluations is None else evaluations(inputs)


def evaluate_together_alone(inputs: list[LayoutInputs]) -> list[LayoutResult]:
    """``evaluate_layouts`` of each of ``inputs`` (its rows broadcast to all of theirs), in one
    call where they stack (``stacked``), else one call each."""
    together = stacked(inputs)
    if together is None:
        return [evaluate_layouts(x) for x in inputs]
    result = evaluate_layouts(together)
    return [LayoutResult(**{f.name: getattr(result, f.name)[i].copy()
                            for f in dataclasses.fields(LayoutResult)})
            for i in range(len(inputs))]


def distinct_rows(x: LayoutInputs, *extra):
    """``x``'s rows with each distinct one once (rows alike in every field of ``x`` and value
    of the arrays ``extra``, broadcast with them; numbers compared as float64), for fewer
    evaluations where many rows share their inputs (a sweep's one-device runs, alike over the
    parallel axes): (``x`` at the distinct rows, ``extra`` at them, each row's distinct row,
    the rows' shape); None where there are no rows or a field is not a number."""
    names = [f.name for f in dataclasses.fields(LayoutInputs) if f.name != "intra_subset_shares"
             and getattr(x, f.name) is not None]
    arrays = {n: np.asarray(getattr(x, n)) for n in names}
    extra = [np.asarray(e) for e in extra]
    shape = np.broadcast_shapes(*(a.shape for a in [*arrays.values(), *extra]))
    if not shape or any(a.dtype.kind not in "biuf" for a in [*arrays.values(), *extra]):
        return None
    columns = {n: np.broadcast_to(a, shape).ravel() for n, a in arrays.items() if a.ndim}
    rest = [np.broadcast_to(e, shape).ravel() for e in extra]
    keys = np.stack([c.astype(np.float64) for c in [*columns.values(), *rest]], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return (x.replace(**{n: c[first] for n, c in columns.items()}), [e[first] for e in rest],
            np.ravel(inverse), shape)


def evaluate_layouts(x: LayoutInputs) -> LayoutResult:
    """Step time, its breakdown, throughput, utilisation and memory of every layout in ``x``."""
    dp, tp, pp, cp = (np.asarray(v, dtype=int) for v in (x.dp, x.tp, x.pp, x.cp))
    model = x  # the shape as trained: model FLOPs count each key/value head once
    # key/value heads as the tensor-parallel ranks hold them: with fewer than t each rank keeps
    # one (Megatron-Core, num_query_groups < tp), so K and V are replicated t/kv times
    x = x.replace(kv_heads=np.maximum(_f(x.kv_heads), _f(tp)))
    b, gb = _f(x.micro_batch), _f(x.global_batch)
    v = _f(x.virtual_stages)
    L = _f(x.layers)
    m = gb / (_f(dp) * b)  # micro-batches per step per replica
    devices = _f(dp * tp * pp * cp)
    flops_per_s = _f(x.peak_flops_per_s) * _f(x.efficiency)
    mem_bytes_per_s = _f(x.memory_bandwidth_GBps if x.kernel_bandwidth_GBps is None
                   else x.kernel_bandwidth_GBps) * 1e9  # the kernels' byte rate
    tokens = b * _f(x.seq_len) / _f(cp)  # tokens of one micro-batch on one device

    # --- compute of one micro-batch on the fullest stage and on an average one
    peak16 = _f(x.peak_flops_per_s if x.peak16_flops_per_s is None else x.peak16_flops_per_s)
    fwd, bwd, rec, matmul, attention, weight_grad = _layer_times(
        x, tokens, flops_per_s, mem_bytes_per_s, peak16 * attention_efficiency(x))
    layer_s = fwd + bwd + rec
    stage_layers = layers_per_stage(L, pp, v)
    logits, logits_weight_grad = _logits_s(x, tokens, peak16 * _f(x.efficiency), mem_bytes_per_s)
    # a tensor-parallel group is tp neighbouring GPUs of one server: its ring gets the links
    # of that many GPUs (fewer on a point-to-point mesh, subset_links)
    tp_GBps = subset_busbw_GBps(x.intra_busbw_GBps, tp, x.intra_subset_shares)
    tp_nvls_GBps = _f(x.nvls_busbw_ratio) * tp_GBps  # NaN: no NVLink SHARP
    tp_layer = tp_comm_per_layer_s(b, x.seq_len, x.hidden, tp, cp, x.recompute,
                                   x.sequence_parallel, x.intra_latency_s, tp_GBps,
                                   ACTIVATION_BYTES, tp_nvls_GBps, x.recompute_early_stop,
                                   x.recompute_op_sac)
    tp_layer = np.where(tp > 1, tp_layer, 0.0)
    tp_first, tp_last = (np.where(tp > 1, t, 0.0) for t in tp_comm_end_stages_s(
        b, x.seq_len, x.hidden, tp, cp, x.sequence_parallel, x.intra_latency_s,
        tp_GBps, ACTIVATION_BYTES, tp_nvls_GBps))
    # overlapped (Transformer Engine userbuffers): hidden behind the layer's matmuls but for
    # what they cannot cover and the contention share of the hidden part
    hidden_tp = np.minimum(tp_layer, matmul)
    overlap = np.asarray(x.overlap, dtype=bool)
    tp_layer = np.where(np.asarray(x.tp_overlap, dtype=bool) & overlap,
                        tp_layer - hidden_tp + _f(x.comm_contention) * hidden_tp, tp_layer)
    # context parallelism: ring-attention sends, each behind one step of the attention core
    # (stride tp); every member sends at once, so a hop runs at the slowest link the ring crosses;
    # a recompute that reruns the core reruns its forward ring in backward
    cp_lat, cp_bw = point_to_point_links(x, cp, tp).slowest()
    cp_hop = cp_hop_s(kv_chunk_bytes(b, x.seq_len, x.hidden, x.heads, x.kv_heads, tp, cp,
                                     ACTIVATION_BYTES), cp_lat, cp_bw)
    cp_fwd, cp_bwd = cp_exposed_per_layer_s(
        cp_hop, cp, *attention, _f(x.comm_contention),
        tf.recomputes_attention_core(x.recompute, x.recompute_op_sac, x.flash_attention))
    cp_layer = cp_fwd + cp_bwd
    # the split that runs (pipeline_stages.stage_split): the first rank, the fullest between
    # (0 at pp <= 2), the last; the fullest, stage_layers, is the first or a middle one
    first_stage_layers, middle_stage_layers, last_stage_layers = stage_ends(L, pp, v)
    # a synchronous pipeline waits for its slowest stage: the one whose micro-batch, compute
    # with its exposed tensor-parallel and ring-attention time, is the longest (the first with
    # the embedding's collectives, the fullest between, the last with the output layer, its
    # loss and their collectives; the only stage without a pipeline holds all)
    slowest_layers, slowest_compute, slowest_tp, slowest_cp = _slowest_stage(
        pp, L, (first_stage_layers, middle_stage_layers, last_stage_layers), layer_s, logits,
        tp_layer, tp_first, tp_last, cp_layer)
    average_mb = (L * (layer_s + tp_layer + cp_layer) + logits + tp_first + tp_last) / _f(pp)

    # --- model states of the fullest stage (embedding on the first, output layer on the last)
    layer_params = (tf.layer_matmul_weights(x.hidden, x.heads, x.kv_heads, x.ffn_hidden, x.gated)
                    + 4.0 * _f(x.hidden))
    embed = _f(x.vocab) * _f(x.hidden)  # the first stage's embedding, the last's output layer
    replicated_kv = layer_params - (tf.layer_matmul_weights(
        model.hidden, model.heads, model.kv_heads, model.ffn_hidden, model.gated)
        + 4.0 * _f(x.hidden))  # per layer, 0 unless kv < t
    # the stage with the most parameters (its exchange and optimizer step the slowest): the
    # first or the last with the embedding / output layer, or a fuller middle one
    whole_params = _f(x.params) + L * replicated_kv  # the only stage without a pipeline
    first_params = np.where(pp > 1, first_stage_layers * layer_params + embed, whole_params)
    middle_params = middle_stage_layers * layer_params  # 0 at pp <= 2
    last_params = np.where(pp > 1, last_stage_layers * layer_params + embed, whole_params)
    stage_params = np.maximum.reduce([first_params, middle_params, last_params])
    exchange_layers = np.where(first_params >= np.maximum(middle_params, last_params),
                               first_stage_layers,
                               np.where(middle_params >= last_params, middle_stage_layers,
                                        last_stage_layers))
    local_params = stage_params / _f(tp)
    group = dp * cp
    # ZeRO / distributed optimizer shard over the shard group: all of dp x cp, or its s
    # innermost ranks under hybrid sharding, replicated across the r = dp cp / s groups
    shard, replicas = shard_sizes(x.shard_group, x.zero, group)
    shards = _f(shard)
    # FSDP under a pipeline (PyTorch pipelining, torchtitan's PP) keeps a ZeRO-2/3 stage's
    # parameters and gradients whole through the step and exchanges once: FSDP's no_sync ZeRO-2
    piped_fsdp = (pp > 1) & (np.asarray(x.zero) >= 2) & (np.asarray(x.framework) == FSDP)
    zero = np.where(piped_fsdp, 2, np.asarray(x.zero))
    grad_sync = np.where(piped_fsdp, ONCE_PER_STEP, np.asarray(x.grad_sync))
    # one rule for the gradients' bytes (memory.held_grad_bytes_per_param): held, reduced on
    # the wire (Megatron-Core's fp32 main grads, §4; the optimizer step: optimizer_traffic_ratio)
    split = (tp > 1) | (pp > 1)  # a split layout's DDP is Megatron-Core's (§4)
    held_grad = held_grad_bytes_per_param(zero, x.framework, x.grad_bytes_per_param,
                                          x.reduce_bytes_per_param, split, ranks=group)
    reduce_bytes = reduce_bytes_per_param_of(zero, x.framework, x.wire_bytes_per_param,
                                             x.grad_bytes_per_param, x.reduce_bytes_per_param)
    # plus PyTorch DDP's bucket copies over the dp x cp group at the device's bandwidth (§4)
    optimizer_s = optimizer_with_copies_s(
        optimizer_step_of_s(local_params / np.where(zero >= 1, shards, 1.0), x.params,
                            x.optimizer_step_s, x.param_bytes_per_param, x.grad_bytes_per_param,
                            x.optimizer_bytes_per_param, x.memory_bandwidth_GBps),
        zero, x.framework, x.param_bytes_per_param, x.grad_bytes_per_param,
        x.optimizer_bytes_per_param, x.reduce_bytes_per_param, split, ranks=group,
        params=local_params, memory_bandwidth_GBps=x.memory_bandwidth_GBps)

    worked = m * slowest_compute + optimizer_s + _f(x.per_step_s)  # what a device computes
    compute = worked + m * _f(x.fetch_s)  # and a fetch before each micro-batch's forward (§1)
    tp_comm = m * slowest_tp
    cp_comm = m * slowest_cp
    # ZB-H1 fills the bubble with the deferred weight-gradient passes (W) of an average stage
    w_share = (L * weight_grad + logits_weight_grad) / _f(pp) / average_mb
    fill_mb = fill_stage_s(pp, average_mb, slowest_compute + slowest_tp + slowest_cp)
    bubble = bubble_microbatches(x.schedule, pp, v, w_share) * fill_mb

    # --- pipeline point-to-point (stride tp*cp*dp between stages), boundary by boundary
    stages = point_to_point_links(x, pp, strides(tp, cp, dp)[3])
    p2p_bytes = tokens * _f(x.hidden) * ACTIVATION_BYTES / _f(tp)  # scatter/gather optimisation
    # interleaved with p2p_overlap: each steady-state send runs beside one chunk's forward on
    # the busiest stage, so only what outlasts it and the contention share are charged (§15)
    overlapped = (np.asarray(x.p2p_overlap, dtype=bool) & overlap & (v > 1)
                  & (np.asarray(x.schedule) == INTERLEAVED))
    chunk_fwd = stage_layers / v * fwd
    p2p = p2p_s(x.schedule, pp, m, v, p2p_bytes, stages.per_node, stages.intra_latency_s,
                stages.intra_GBps, stages.inter_latency_s, stages.inter_GBps,
                np.where(overlapped, chunk_fwd, 0.0),
                np.where(overlapped, _f(x.comm_contention), 0.0))

    # --- data-parallel / ZeRO exchange of the local shard over dp x cp (stride tp): the same
    # function as the data-parallel step's (zero_exchange), on this group's link; under hybrid
    # sharding over the shard group (its s innermost ranks), then across its replicas
    lat_args, ar_coeffs = group_coeffs(x, shard, tp)
    grad_bytes = np.where(group > 1, local_params * _f(x.wire_bytes_per_param), 0.0)
    rs_coeffs = coll.reduce_scatter_coeffs(*lat_args)  # all-gather: the same ring
    units = np.where(pp > 1, exchange_layers, L)  # FSDP units: one per layer
    # a stage holding the output layer (pp = 1) hides the exchange behind its work too:
    # a third of it forward, two thirds backward (§1)
    output = np.where(pp > 1, 0.0, logits)
    # the exchange runs on its own stream for as long as the passes last, the layers' exposed
    # tensor-parallel and ring-attention waits included (forward: 2 of the layer's n tp
    # collectives and the forward's exposed ring hops; backward and recompute the rest)
    tp_fwd_share = 2.0 / collectives_per_layer(x.recompute, x.recompute_early_stop,
                                               x.sequence_parallel, x.recompute_op_sac)
    fwd_wait = tp_layer * tp_fwd_share + cp_fwd
    bwd_wait = tp_layer * (1.0 - tp_fwd_share) + cp_bwd
    # --- stragglers: a slow device's stage (pp outermost, so stage = rank // (t c d)) computes
    # f times slower
    slow = np.where((np.asarray(x.slow_rank) >= 0) & (np.asarray(x.slow_rank) < devices),
                    _f(x.slow_factor), 1.0)
    stage_of_slow = np.asarray(x.slow_rank, dtype=np.int64) // strides(tp, cp, dp)[3]
    slow_is_last = stage_of_slow == pp - 1
    slow_layers = stage_layers_on(L, pp, v, stage_of_slow)
    slow_stage_s = np.where(pp > 1, slow_layers * layer_s + np.where(slow_is_last, logits, 0.0),
                            slowest_compute)
    # its exposed communication, not slowed: its layers', and the end stages' collectives
    slow_stage_comm = np.where(pp > 1, slow_layers * (tp_layer + cp_layer) + np.where(
        slow_is_last, tp_last, np.where(stage_of_slow <= 0, tp_first, 0.0)),
        slowest_tp + slowest_cp)
    slow_delay = slow_stage_delay_s(x.schedule, pp, v, m, slow_stage_s,
                                    slowest_compute + slowest_tp + slowest_cp, slow, w_share,
                                    slow_stage_comm)
    per_micro = syncs_every_micro_step(zero, x.framework, grad_sync)
    straggler = _straggler_s(x, devices, tp, m, per_micro, worked, slowest_compute,
                             slowest_layers, slow_delay)
    # each collective waits for the last replica's tensors: its passes, longer by the wait for
    # it (a slow device's f times), are the windows the exchange hides behind (§3, §6, §16);
    # with a pipeline the exchange timed is the fullest stage's, behind the slow device's
    # f times longer passes where that device's stage alone holds the most parameters
    alone = _alone_on_fullest_stage(stage_of_slow, pp, v, L, first_params, middle_params,
                                    last_params)
    # (this path's wait, whose device spread spans the optimizer step too, §22: one
    # quadrature a row, not a second one over the passes alone). Under a pipeline the fullest
    # stage's dp x cp group waits for its last rank: jitter and the device spread make it later
    # than the slow device alone (where alone there) by what they add to that group's wait, over
    # the stage's passes; so its windows are f times a typical one's (1 without a slow device
    # there) and longer still by that excess (§3, §16)
    stage_s = exchange_layers * layer_s  # the fullest stage's passes of one micro-batch
    alone_f = np.where(alone, np.maximum(slow, 1.0), 1.0)
    # the slow device's lateness there, a step; its shifted waits are integrated only on the
    # rows that use them (jitter or device spread under a pipeline), as _straggler_s's forms
    varied = (pp > 1) & ((_f(x.jitter_cv) > 0) | (_f(x.device_cv) > 0))
    stage_shift = np.where(varied, (alone_f - 1.0) * m * stage_s, 0.0)
    spread = _f(x.device_cv) * worked  # a device's persistent spread over its step, s
    barriers = np.where(per_micro, m, 1.0)
    # at tp 1 the spread meets jitter at the group's barriers, added in variance; at tp > 1 it
    # waits apart, for the slowest of the stage's g t devices (each tp collective waits for its
    # group's slowest, §14), as _straggler_s's split form
    with_spread, stage_tp_waits = _barrier_waits_s(x, group, tp, m, per_micro, stage_s,
                                                   exchange_layers, np.where(tp > 1, 0.0, spread),
                                                   stage_shift)
    split_shift = np.where(tp > 1, stage_shift, 0.0)
    split_spread = np.where(tp > 1, straggler_wait_s(group * tp, np.where(tp > 1, spread, 0.0),
                                                     split_shift) - split_shift, 0.0)
    without = barriers * straggler_wait_s(group, 0.0, stage_shift / barriers)
    # the stage's last rank is one of all the devices: the window grows by no more than jitter
    # and the spread add to the wait for the slowest of them (the step's straggler term, which
    # pays for it)
    quiet = _straggler_s(x.replace(jitter_cv=0.0, device_cv=0.0), devices, tp, m, per_micro,
                         worked, slowest_compute, slowest_layers,
                         np.where(varied, slow_delay, 0.0))
    stage_excess = np.where(varied & (group > 1), np.maximum(np.minimum(
        with_spread - without + stage_tp_waits + split_spread, straggler - quiet), 0.0), 0.0)
    window = np.where(pp > 1, straggler_stretch(stage_excess, m * stage_s) - 1.0 + alone_f,
                      straggler_stretch(straggler, m * slowest_compute))
    fwd_mb = units * (fwd * window + fwd_wait) + window * output / 3.0
    # recompute runs in backward
    bwd_mb = units * ((bwd + rec) * window + bwd_wait) + window * 2.0 * output / 3.0
    # once per step (DDP, ZeRO-1) the exchange hides behind the last micro-batch's chunk on the
    # stage with the most parameters; per micro-batch (ZeRO-2/3) behind that stage's compute
    # FSDP under a pipeline reduces each stage once after its last backward, the first stage
    # last: the step waits for what outlasts the drain (piped_reduce). A rank's drain idles
    # one backward of a chunk of the first rank a rank, the schedule's share of it (1F1B,
    # GPipe: all; interleaved: 1/v; ZB-H1: what its weight passes leave, §15)
    piped_reduce = None
    if np.any(piped_fsdp):
        drain_s = first_stage_layers * (bwd + rec + bwd_wait) * np.maximum(
            bubble_microbatches(x.schedule, pp, v, w_share), 0.0) / np.maximum(_f(pp) - 1.0, 1.0)
        piped_reduce = np.where(piped_fsdp, _piped_reduce_s(
            x, pp, v, tp, group, layer_params, embed,
            (first_stage_layers, middle_stage_layers, last_stage_layers), drain_s,
            lambda size: coll.affine_s(rs_coeffs, size), reduce_bytes,
            replica_all_reduce(x, shard, replicas, tp)), np.nan)
    exposed, total, _units = exchange(
        zero, x.framework, grad_bytes, shard, units, m,
        np.where(per_micro, fwd_mb, fwd_mb / v), np.where(per_micro, bwd_mb, bwd_mb / v), overlap,
        lambda size: coll.allreduce_from_coeffs(ar_coeffs, size, x.algorithm),
        lambda size: coll.affine_s(rs_coeffs, size), x.wire_bytes_per_param, x.bucket_bytes,
        x.first_bucket_bytes, x.fsdp_backward_prefetch_post, grad_sync, reduce_bytes,
        replica_all_reduce(x, shard, replicas, tp), piped_reduce)
    exposed = np.where(group > 1, exposed, 0.0)
    total = np.where(group > 1, total, 0.0)
    dp_exposed = exposed + _f(x.comm_contention) * (total - exposed)

    # --- input stall
    busy = compute + tp_comm + cp_comm + bubble + p2p + dp_exposed
    load_s = gb / (_f(dp) * _f(x.loader_samples_per_s))
    stall = np.maximum(load_s - (busy + straggler), 0.0)
    step = busy + straggler + stall

    # --- throughput and utilisation
    samples = gb / step
    tokens_per_s = samples * _f(x.seq_len)
    shape = (x.layers, x.hidden, x.heads, model.kv_heads, x.ffn_hidden, x.gated)
    model_flops = tf.model_flops_per_token(*shape, x.seq_len, x.vocab)
    hw_flops = model_flops + tf.recompute_flops_per_token(x.recompute, *shape, x.seq_len,
                                                        x.recompute_early_stop, x.recompute_op_sac,
                                                        x.flash_attention)
    peak_total = devices * _f(x.peak_flops_per_s)
    mfu = model_flops * tokens_per_s / peak_total
    hfu = hw_flops * tokens_per_s / peak_total

    # --- memory of the fullest device: the first stage (embedding, the most micro-batches in
    # flight), rank 1 (where it holds more layers than the first) or the last (output layer,
    # fp32 logits), each with its layers of the split that runs; Megatron-LM's
    # theoretical_memory_usage
    # PyTorch pipelining runs every backward of an FSDP stage without gradient sync and
    # reduces after the last, so its gradients are whole even at m = 1; whole gradients (a
    # pipeline's, no_sync's) are accumulated in the reduce dtype where stated (FSDP2, §4, §16)
    full_gradients = holds_full_gradients(zero, x.framework, grad_sync, m) | piped_fsdp
    shard_optim = state_shards(zero, shards, full_gradients)[2]  # as the dp step's
    param_bytes = param_state_bytes_per_param(zero, x.framework, shards, x.param_bytes_per_param)
    memory_grad = np.where(full_gradients, unreduced_fsdp_grad_bytes_per_param(
        x.grad_bytes_per_param, x.reduce_bytes_per_param), held_grad)
    grad_bytes = grad_state_bytes_per_param(zero, x.framework, shards, memory_grad,
                                            full_gradients)
    per_layer = tf.activation_bytes_per_layer(
        b, x.seq_len, x.hidden, x.heads, x.kv_heads, x.ffn_hidden, x.gated, tp,
        x.sequence_parallel, x.recompute, x.flash_attention, cp)
    # torchtitan's per-op selective checkpoint keeps its own set (§11) and, as full recompute,
    # holds one layer's rerun tensors while that layer's backward runs
    per_op = (np.asarray(x.recompute) == tf.RECOMPUTE_SELECTIVE) & np.asarray(
        x.recompute_op_sac, dtype=bool)
    per_layer = np.where(per_op, tf.op_sac_activation_bytes_per_layer(
        b, x.seq_len, x.hidden, x.heads, x.kv_heads, x.ffn_hidden, x.gated, tp,
        x.sequence_parallel, cp), per_layer)
    working = tf.activation_bytes_per_layer(
        b, x.seq_len, x.hidden, x.heads, x.kv_heads, x.ffn_hidden, x.gated, tp,
        x.sequence_parallel, tf.RECOMPUTE_NONE, x.flash_attention, cp)
    # one layer's rerun tensors while its backward runs: what its working set holds beyond the
    # tensors that layer keeps stored, which the rerun reads and does not make again. Full
    # recompute reruns the whole layer from its stored input (the first norm's input, counted
    # in both: once before session 38, a one-layer stage held more under full recompute than
    # without it); per-op selective reruns the ops it did not save; Megatron's selective reruns
    # the attention core, whose scores (5 a s^2 b / t bytes unfused, none with flash
    # attention) exist again for that layer alone (left out before session 32)
    recomputes = np.asarray(x.recompute) != tf.RECOMPUTE_NONE
    recomputing = np.where(recomputes, np.maximum(working - per_layer, 0.0), 0.0)
    logits_bytes = LOGIT_BYTES * tokens * _f(x.vocab) / _f(tp)

    # ZeRO-3 holds whole the parameters of the unit it computes and of the one it prefetches
    # (FSDP: one unit a layer; §4's min(2, L) units), so a stage of one layer gathers one;
    # DeepSpeed those its reuse distance keeps and its prefetch (§4, of the stage's local
    # parameters); none unsharded (dp x cp = 1: NO_SHARD)
    gathers = (zero >= 3) & (shards > 1)
    layer_bytes = layer_params / _f(tp) * _f(x.param_bytes_per_param)

    interleaved = (np.asarray(x.schedule) == INTERLEAVED) & (pp > 1) & (v > 1)

    def stage_memory(params_on_stage, layers_on_stage, in_flight, logits_in_flight, rank):
        """(weights, gradients, optimizer state, activations, buffers: gathered ZeRO-3 layers
        and DeepSpeed's buckets and step-time gradient copies) bytes of one stage's device.
        Interleaved: the layer-micro-batches the rank holds at its peak in Megatron's chunk
        order (``interleaved_held_layers``; with uneven chunks the heavier ones are in flight
        first, more than its layers x the chunks in flight)."""
        local = params_on_stage / _f(tp)
        held = layers_on_stage * in_flight
        if np.any(interleaved):
            held = np.where(interleaved, np.maximum(
                interleaved_held_layers(L, pp, v, m, rank), held), held)
        activations = (per_layer * held + recomputing + logits_bytes * logits_in_flight)
        gathered = np.where(gathers, np.where(
            np.asarray(x.framework) == DEEPSPEED,
            deepspeed_gathered_bytes(local, x.param_bytes_per_param),
            np.minimum(ZERO3_GATHERED_UNITS, layers_on_stage) * layer_bytes), 0.0)
        deepspeed = deepspeed_buffer_bytes(zero, x.framework, shards, local,
                                           x.param_bytes_per_param, memory_grad,
                                           activations + gathered, overlap)
        return (local * param_bytes,
                local * grad_bytes,
                local * _f(x.optimizer_bytes_per_param) * shard_optim,
                activations, gathered + deepspeed)

    first = stage_memory(first_params, first_stage_layers,
                         microbatches_in_flight(x.schedule, pp, m, v),
                         np.where(pp > 1, 0.0, 1.0), 0.0)
    last = stage_memory(last_params, last_stage_layers,
                        microbatches_in_flight(x.schedule, pp, m, v, _f(pp) - 1.0),
                        np.where(np.asarray(x.schedule) == GPIPE, m, 1.0), _f(pp) - 1.0)
    # rank 1 holds the most of the middle ranks: their layers are equal or fall, and so do
    # the micro-batches in flight
    middle = stage_memory(middle_params, middle_stage_layers,
                          microbatches_in_flight(x.schedule, pp, m, v, 1.0), 0.0, 1.0)
    first_sum, last_sum = sum(first), sum(last)
    middle_sum = np.where(pp > 2, sum(middle), -np.inf)
    pick_first = (first_sum >= last_sum) & (first_sum >= middle_sum)
    pick_last = ~pick_first & (last_sum >= middle_sum)
    weights, grads, optimizer, activations, gathered = (
        np.where(pick_first, a, np.where(pick_last, z, mid))
        for a, mid, z in zip(first, middle, last, strict=True))
    buffers = _f(x.framework_bytes) + gathered
    memory = weights + grads + optimizer + activations + buffers
    full = np.broadcast_to
    out_shape = np.broadcast(step, memory).shape
    return LayoutResult(
        step_time_s=full(step, out_shape), compute_s=full(compute, out_shape),
        tp_comm_s=full(tp_comm, out_shape), cp_comm_s=full(cp_comm, out_shape),
        bubble_s=full(bubble, out_shape),
        p2p_s=full(p2p, out_shape), dp_exposed_s=full(dp_exposed, out_shape),
        straggler_s=full(straggler, out_shape), stall_s=full(stall, out_shape),
        samples_per_s=full(samples, out_shape), tokens_per_s=full(tokens_per_s, out_shape),
        mfu=full(mfu, out_shape), hfu=full(hfu, out_shape),
        weights_bytes=full(weights, out_shape), grads_bytes=full(grads, out_shape),
        optimizer_bytes=full(optimizer, out_shape), activation_bytes=full(activations, out_shape),
        buffer_bytes=full(buffers, out_shape), memory_bytes=full(memory, out_shape),
        fits=full(under_measured_ceiling(memory <= usable_memory_bytes(x.device_memory_bytes,
                                                                        x.memory_margin),
                                         x.micro_batch,
                                         x.oom_micro_batch, tp * pp * cp == 1), out_shape),
        headroom_bytes=full(_f(x.device_memory_bytes) - memory, out_shape),
    )
