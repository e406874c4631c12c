"""Memory per device for data-parallel and sharded (ZeRO / FSDP) training.

Following Rajbhandari et al. 2019 (ZeRO, section 5): with Psi parameters, each device holds
parameters (``param_bytes_per_param``), gradients (``grad_bytes_per_param``) and optimizer
state (``optimizer_bytes_per_param``, K = 12 for mixed-precision Adam: fp32 master copy,
momentum, variance). ZeRO-1 shards the optimizer state over the N data-parallel devices, ZeRO-2
also the gradients, ZeRO-3 / FSDP full shard also the parameters. Activations scale with the
per-device micro-batch and are never sharded by data parallelism.

Gradient accumulation (k > 1) keeps sharded gradients sharded by default: DeepSpeed stage 2/3
and PyTorch FSDP (FSDP2 without ``set_requires_gradient_sync(False)``, torchtitan, Composer)
reduce-scatter in every micro-step and accumulate into the shard (``zero_exchange``). FSDP
under ``no_sync`` holds the full gradients instead (``full_gradients``,
``zero_exchange.holds_full_gradients``), in the reduce dtype where stated
(``unreduced_fsdp_grad_bytes_per_param``). ``state_shards`` is the one rule both prediction
paths use.
"""

from __future__ import annotations

import numpy as np

from scalesim.model.select import select_first
from scalesim.model.sharding import (
    DEEPSPEED,
    DS_MAX_LIVE_ELEMENTS,
    DS_MAX_REUSE_DISTANCE_ELEMENTS,
    DS_PREFETCH_BUCKET_ELEMENTS,
    DS_REDUCE_BUCKET_ELEMENTS,
    DS_SUB_GROUP_ELEMENTS,
    FSDP,
)

DDP, ZERO1, ZERO2, ZERO3 = 0, 1, 2, 3
STRATEGIES = {"ddp": DDP, "zero1": ZERO1, "zero2": ZERO2, "zero3": ZERO3}
# Megatron-Core's main_grad buffer in bf16 training, bytes per parameter: fp32 by Megatron-LM's
# default (--bf16 sets accumulate_allreduce_grads_in_fp32, arguments.py; NeMo 1.x
# optim.grad_sync_dtype 'fp32', NeMo 2.0 bf16_mixed grad_reduce_in_fp32=True); docs/model.md §4
MAIN_GRAD_BYTES = 4.0
# PyTorch FSDP keeps its sharded flat parameter in the parameters' original dtype (fp32 under
# bf16 mixed precision and in fp32 training) and casts each reduced gradient shard to that dtype
# (FSDP1 ``_runtime_utils._cast_grad_to_param_dtype``; FSDP2 ``foreach_reduce`` to the sharded
# parameter's dtype): bytes per parameter of a gradient shard; docs/model.md §4
FSDP_SHARD_BYTES = 4.0
# The optimizer side's dtype in every framework's step (fp32 master weights, the fp32 gradient
# Adam reads, the casts into and out of them), bytes per element; docs/model.md §4
FP32_BYTES = 4.0
# DeepSpeed ZeRO's gradient norm casts each 16-bit gradient to fp64 before its norm
# (``g.data.double()``, stage_1_and_2.py:2089, stage3.py:2285), bytes per element; §4
FP64_BYTES = 8.0


def _megatron_zero1(strategy, framework):
    """True where ZeRO-1 runs under the default framework: Megatron-Core's distributed
    optimizer, whose gradients live in its ``main_grad`` buffer (docs/model.md §4)."""
    return (np.asarray(strategy) == ZERO1) & (np.asarray(framework) == FSDP)


def _megatron_main_grad(strategy, framework, split=False):
    """True where the default framework's gradients live in Megatron-Core's ``main_grad``
    buffer: its distributed optimizer (ZeRO-1) and its DDP, which a layout that splits the
    model (``split``: tp or pp > 1) runs, where PyTorch DDP does not (docs/model.md §4)."""
    ddp_split = ((np.asarray(strategy) == DDP) & (np.asarray(framework) == FSDP)
                 & np.asarray(split, dtype=bool))
    return _megatron_zero1(strategy, framework) | ddp_split


def _fp32_reduce(strategy, framework):
    """True where the default framework reduces 16-bit training's gradients in fp32 unless a
    reduction is stated: Megatron-Core's distributed optimizer (ZeRO-1, its ``main_grad``) and
    DDP (PyTorch DDP under ``torch.autocast``, whose parameters and so gradients stay fp32;
    Megatron-Core's DDP with ``--bf16``, its fp32 ``main_grad``). DeepSpeed (any stage) and
    FSDP (ZeRO-2/3, ``reduce_dtype`` None: the 16-bit ``param_dtype``) reduce in the wire's
    dtype (docs/model.md §4, "The gradients' dtype on the wire")."""
    return (np.asarray(strategy) <= ZERO1) & (np.asarray(framework) == FSDP)


def main_grad_bytes_per_param(grad_bytes_per_param, reduce_bytes_per_param=np.nan):
    """Bytes per parameter of Megatron-Core's ``main_grad`` buffer: the gradients' reduce dtype
    (``param_and_grad_buffer.py``: fp32 if ``grad_reduce_in_fp32`` else the parameters'):
    ``reduce_bytes_per_param`` where stated (not NaN), else ``max(grad_bytes_per_param,
    MAIN_GRAD_BYTES)``. Numpy, broadcasts."""
    grad = np.asarray(grad_bytes_per_param, dtype=float)
    reduce = np.asarray(reduce_bytes_per_param, dtype=float)
    return np.where(np.isnan(reduce), np.maximum(grad, MAIN_GRAD_BYTES), reduce)


def _pytorch_ddp(strategy, framework, split=False):
    """True where DDP is PyTorch's ``DistributedDataParallel``: the default framework on a
    layout that does not split the model (``split`` False: tp = pp = 1; a split layout's DDP is
    Megatron-Core's, docs/model.md §4)."""
    return ((np.asarray(strategy) == DDP) & (np.asarray(framework) == FSDP)
            & ~np.asarray(split, dtype=bool))


def ddp_bucket_bytes_per_param(strategy, framework, grad_bytes_per_param,
                               reduce_bytes_per_param=np.nan, split=False, *, ranks):
    """Bytes per parameter of PyTorch DDP's all-reduce buckets (``_pytorch_ddp``, over
    ``ranks`` > 1 data-parallel ranks; 0 elsewhere and on one rank, which needs no DDP). Its
    ``Reducer`` allocates every bucket once, a flat tensor of its parameters' dtype
    (``initialize_buckets``: ``bucket.gradients = at::empty(...)``, reducer.cpp), kept for the
    whole run and apart from ``param.grad`` under the default ``gradient_as_bucket_view=False``
    (its docstring: ``True`` saves "the total gradients size"): a second copy of every
    gradient in the reduce dtype, ``main_grad_bytes_per_param`` (4 under ``torch.autocast``,
    whose parameters and so gradients are fp32; a stated reduction's bytes, the wire's,
    ``reduce_bytes_per_param_of``). A job that passes ``gradient_as_bucket_view=True`` holds
    this much less (docs/model.md §4). Numpy, broadcasts."""
    bucket = main_grad_bytes_per_param(grad_bytes_per_param, reduce_bytes_per_param)
    replicated = np.asarray(ranks, dtype=float) > 1.0
    return np.where(_pytorch_ddp(strategy, framework, split) & replicated, bucket, 0.0)


def ddp_bucket_copy_bytes_per_param(strategy, framework, grad_bytes_per_param,
                                    reduce_bytes_per_param=np.nan, split=False, *, ranks):
    """Bytes per parameter PyTorch DDP's ``Reducer`` reads and writes per step copying
    gradients into its buckets and back (``_pytorch_ddp`` over ``ranks`` > 1; 0 elsewhere and on
    one rank). Under the default ``gradient_as_bucket_view=False`` backward copies each gradient
    into its bucket (``mark_variable_ready_dense``: ``at::mul_out(bucket_view, grad, 1/p)``, read
    and write) and, after the bucket's all-reduce, back (``copy_bucket_to_grad``:
    ``grad.copy_(bucket_view)``, read and write), both in the bucket's dtype w_r
    (``ddp_bucket_bytes_per_param``): ``4 w_r``, 16 under ``torch.autocast`` or in fp32. Once per
    step: DDP reduces once (under ``no_sync`` the hooks do not run). The option's docstring
    names it: "overhead of copying between gradients and allreduce communication buckets"
    (docs/model.md §4, "Their copies, in time"). Numpy, broadcasts."""
    return 4.0 * ddp_bucket_bytes_per_param(strategy, framework, grad_bytes_per_param,
                                            reduce_bytes_per_param, split, ranks=ranks)


def ddp_bucket_copies_s(strategy, framework, grad_bytes_per_param, reduce_bytes_per_param=np.nan,
                        split=False, *, ranks, params, memory_bandwidth_GBps):
    """Seconds a step spends in PyTorch DDP's bucket copies of ``params`` gradients
    (``ddp_bucket_copy_bytes_per_param``) at the device's ``memory_bandwidth_GBps``: memory-bound
    kernels on the compute stream, whatever the optimizer's own speed (an unfused optimizer step
    measured at several times its sweep does not slow them). Numpy, broadcasts."""
    copies = ddp_bucket_copy_bytes_per_param(strategy, framework, grad_bytes_per_param,
                                             reduce_bytes_per_param, split, ranks=ranks)
    return (copies * np.asarray(params, dtype=float)
            / (np.asarray(memory_bandwidth_GBps, dtype=float) * 1e9))


def held_grad_bytes_per_param(strategy, framework, grad_bytes_per_param,
                              reduce_bytes_per_param=np.nan, split=False, *, ranks):
    """Bytes per parameter of the gradients a device holds, ``ranks`` the data-parallel ranks
    they are reduced over. ZeRO-1 under the default framework (``framework``
    ``sharding.FSDP``) is Megatron-Core's distributed optimizer, and DDP on a layout that splits
    the model (``split``: tp or pp > 1) Megatron-Core's DDP: their contiguous grad buffer
    (``main_grad``, never sharded) holds ``main_grad_bytes_per_param``, and no 16-bit
    ``param.grad`` beside it (the backward hook adds it into ``main_grad`` and sets it to None;
    ``distributed_data_parallel.py:578-579``); PyTorch DDP (tp = pp = 1) holds
    ``grad_bytes_per_param`` and its buckets' copy (``ddp_bucket_bytes_per_param``); every other
    strategy and framework holds ``grad_bytes_per_param`` (docs/model.md §4). Numpy,
    broadcasts."""
    grad = np.asarray(grad_bytes_per_param, dtype=float)
    held = np.where(_megatron_main_grad(strategy, framework, split),
                    main_grad_bytes_per_param(grad, reduce_bytes_per_param), grad)
    return held + ddp_bucket_bytes_per_param(strategy, framework, grad, reduce_bytes_per_param,
                                             split, ranks=ranks)


def _fp32_update_bytes(param_bytes_per_param, optimizer_bytes_per_param, fp32_grad_bytes):
    """Bytes Adam's update reads and writes per parameter on fp32 weights given an fp32
    gradient (``fp32_grad_bytes``): the weights and the optimizer state read and written, the
    gradient read. Under mixed precision (``param_bytes_per_param`` < 4) the fp32 weights are
    K's master copy, ``2 K + g32``; in fp32 training ``2 w_param + g32 + 2 K``. Numpy."""
    param = np.asarray(param_bytes_per_param, dtype=float)
    return (2.0 * np.asarray(optimizer_bytes_per_param, dtype=float) + fp32_grad_bytes
            + np.where(param >= FP32_BYTES, 2.0 * param, 0.0))


def megatron_clip_bytes_per_param():
    """Bytes Megatron-Core's gradient-norm clipping reads and writes per parameter it updates
    (``clip_grad`` 1.0 by default, ``optimizer_config.py:374``; ``optimizer.py:830``): the L2
    norm of the fp32 main grads (``multi_tensor_l2norm``, read 4) and, with Transformer Engine
    installed, an in-place scale by the clamped coefficient every step
    (``multi_tensor_scale_tensor``, read 4 + write 4; ``clip_grads.py:181``): 12
    (docs/model.md §4)."""
    return 3.0 * FP32_BYTES


def deepspeed_norm_bytes_per_param(grad_bytes_per_param):
    """Bytes DeepSpeed ZeRO's gradient norm reads and writes per parameter it updates, computed
    every step (``scaled_global_norm``, stage_1_and_2.py:2315; stage3.py:2394): each gradient
    cast to fp64 (read ``grad_bytes_per_param``, write 8) and its norm (read 8): 18 in bf16.
    The clip itself is folded into the unscale already counted (docs/model.md §4). Numpy."""
    return np.asarray(grad_bytes_per_param, dtype=float) + 2.0 * FP64_BYTES


def optimizer_sweep_bytes_per_param(strategy, framework, param_bytes_per_param,
                                    grad_bytes_per_param, optimizer_bytes_per_param,
                                    reduce_bytes_per_param=np.nan, split=False):
    """Bytes one optimizer step reads and writes per parameter it updates (docs/model.md §1, §4
    "The optimizer step by framework", each term read in the framework's source).

    The model's sweep (``compute.optimizer_roofline_s``) reads and writes each parameter and its
    optimizer state and reads its gradient, ``2 w + g + 2 K`` (w, g the parameters' and
    gradients' bytes, K the state's). Each framework's step, mixed precision (w < 4):

    - PyTorch DDP under ``torch.autocast`` (DDP, default framework, ``split`` False): fp32
      parameters (K's master) and fp32 gradients, ``2 K + 4`` (28 in bf16 Adam); with a stated
      16-bit reduction (a model cast to 16 bits, apex O2) the model's sweep.
    - Megatron-Core's distributed optimizer (ZeRO-1, default framework), and its DDP with the
      non-distributed ``Float16OptimizerWithFloat16Params`` (DDP, default framework, ``split``
      True: a layout with tp or pp > 1, which PyTorch DDP does not run): casts its
      ``main_grad`` (w_main, ``main_grad_bytes_per_param``) to fp32 where it is 16-bit
      (``w_main + 4``), updates the fp32 main copy (``2 K + 4``) and copies it into the 16-bit
      parameters (``4 + w``), and clips its fp32 main grads (``megatron_clip_bytes_per_param``,
      12): 46 with fp32 main grads, 52 with bf16 or fp16.
    - PyTorch FSDP's ZeRO-2/3 (FSDP1, FSDP2): the fp32 shard and its gradient cast to fp32,
      ``2 K + max(g, 4)``, no 16-bit copy (28; measured, ``tests/fsdp_optimizer_probe.py``).
    - DeepSpeed's ZeRO-1/2/3 (``stage_1_and_2.py``, ``stage3.py``): flattens the gradient
      partition (``2 g``), casts it to fp32 (``g + 4``), unscales it in place (8), updates the fp32
      partition (``2 K + 4``) and copies it into the 16-bit partition (``4 + w``), after the
      gradient norm in fp64 (``deepspeed_norm_bytes_per_param``, 18): 70.

    fp32 training (w = 4, K without a master): ``2 w + 4 + 2 K`` = 28 for PyTorch DDP and FSDP,
    40 for Megatron-Core (28 + clip 12), DeepSpeed 72 (flatten 8 + unscale 8 + 28 + copy 8 +
    norm 20; 64 at stage 3, whose fp32 partition is the parameters'). DeepSpeed's DDP (stage 0)
    keeps the model's sweep. The gradient norm is counted where the framework computes it by
    default and the model knows the framework (Megatron-Core, DeepSpeed ZeRO), not for PyTorch
    DDP (no default clipping) or FSDP (the training loop's, which the model cannot tell).
    Numpy, broadcasts."""
    strategy, framework = np.asarray(strategy), np.asarray(framework)
    split = np.asarray(split, dtype=bool)
    param = np.asarray(param_bytes_per_param, dtype=float)
    grad = np.asarray(grad_bytes_per_param, dtype=float)
    state = np.asarray(optimizer_bytes_per_param, dtype=float)
    default = framework == FSDP
    mixed = param < FP32_BYTES
    generic = 2.0 * param + grad + 2.0 * state
    fp32_update = _fp32_update_bytes(param, state, FP32_BYTES)
    # a 16-bit gradient cast to fp32 (read g, write 4); fp32 master copied to the 16-bit weights
    cast = np.where(grad < FP32_BYTES, grad + FP32_BYTES, 0.0)
    copy_back = np.where(mixed, FP32_BYTES + param, 0.0)
    # the gradients the default framework reduces: PyTorch DDP's are its parameters' dtype
    # (fp32 under autocast), Megatron-Core's its main_grad buffer's (§4)
    reduced = main_grad_bytes_per_param(grad, reduce_bytes_per_param)
    ddp = np.where(reduced >= FP32_BYTES, _fp32_update_bytes(param, state, reduced), generic)
    megatron = (np.where(reduced < FP32_BYTES, reduced + FP32_BYTES, 0.0) + fp32_update
                + copy_back + megatron_clip_bytes_per_param())
    fsdp = _fp32_update_bytes(param, state, np.maximum(grad, FSDP_SHARD_BYTES))
    deepspeed = (2.0 * grad + cast + 2.0 * FP32_BYTES + fp32_update
                 + np.where(mixed | (strategy <= ZERO2), FP32_BYTES + param, 0.0)
                 + deepspeed_norm_bytes_per_param(grad))
    return select_first(
        [_pytorch_ddp(strategy, framework, split), default & (strategy <= ZERO1),
         default & (strategy >= ZERO2), (framework == DEEPSPEED) & (strategy >= ZERO1)],
        [ddp, megatron, fsdp, deepspeed], generic)


def optimizer_traffic_ratio(strategy, framework, param_bytes_per_param, grad_bytes_per_param,
                            optimizer_bytes_per_param, reduce_bytes_per_param=np.nan, split=False,
                            *, ranks):
    """Optimizer step time under ``strategy`` and ``framework`` over the model's sweep of the
    same parameters (dimensionless): ``optimizer_sweep_bytes_per_param`` over ``2 w_param +
    w_grad + 2 K``, the bytes a measured or estimated ``optimizer_step_s`` stands for (§1, §13);
    ``split``: the layout splits the model (tp or pp > 1). Over ``ranks`` > 1 data-parallel
    ranks PyTorch DDP's bucket copies (``ddp_bucket_copy_bytes_per_param``) are added to the
    sweep, at the rate the sweep runs: where the device's memory bandwidth is not known (where
    it is, ``ddp_bucket_copies_s`` prices them and the caller passes ``ranks`` 1).
    The one rule of both prediction paths (``step.evaluate``, ``layout_step``). Numpy,
    broadcasts."""
    base = (2.0 * np.asarray(param_bytes_per_param, dtype=float)
            + np.asarray(grad_bytes_per_param, dtype=float)
            + 2.0 * np.asarray(optimizer_bytes_per_param, dtype=float))
    sweep = optimizer_sweep_bytes_per_param(strategy, framework, param_bytes_per_param,
                                            grad_bytes_per_param, optimizer_bytes_per_param,
                                            reduce_bytes_per_param, split)
    sweep = sweep + ddp_bucket_copy_bytes_per_param(strategy, framework, grad_bytes_per_param,
                                                    reduce_bytes_per_param, split, ranks=ranks)
    return np.where(base > 0, sweep / np.where(base > 0, base, 1.0), 1.0)


def optimizer_with_copies_s(optimizer_s, strategy, framework, param_bytes_per_param,
                            grad_bytes_per_param, optimizer_bytes_per_param,
                            reduce_bytes_per_param=np.nan, split=False, *, ranks, params,
                            memory_bandwidth_GBps):
    """Seconds a step spends in the optimizer step and PyTorch DDP's bucket copies, the one rule
    of both prediction paths and of a preset's reference run (``profiles``).

    ``optimizer_s`` is this device's share of an update of the model's sweep (``2 w_param +
    w_grad + 2 K`` bytes a parameter), scaled by ``optimizer_traffic_ratio`` to the framework's
    sweep. The copies of the ``params`` gradients over ``ranks`` > 1 replicas
    (``ddp_bucket_copies_s``) run at ``memory_bandwidth_GBps`` where it is known, whatever the
    optimizer's own speed; where it is NaN they run at the sweep's rate, inside the ratio
    (docs/model.md §4, "Their copies, in time"). Numpy, broadcasts."""
    bandwidth = np.asarray(memory_bandwidth_GBps, dtype=float)
    at_sweep = np.isnan(bandwidth)
    copies = ddp_bucket_copies_s(strategy, framework, grad_bytes_per_param,
                                 reduce_bytes_per_param, split, ranks=ranks, params=params,
                                 memory_bandwidth_GBps=np.where(at_sweep, np.inf, bandwidth))
    ratio = optimizer_traffic_ratio(strategy, framework, param_bytes_per_param,
                                    grad_bytes_per_param, optimizer_bytes_per_param,
                                    reduce_bytes_per_param, split,
                                    ranks=np.where(at_sweep, ranks, 1.0))
    return np.asarray(optimizer_s, dtype=float) * ratio + copies


def unreduced_fsdp_grad_bytes_per_param(grad_bytes_per_param, reduce_bytes_per_param=np.nan):
    """Bytes per parameter of the whole gradients FSDP accumulates without reducing them: under
    ``no_sync`` with k > 1 (``zero_exchange.holds_full_gradients``) and on a pipeline stage
    (§16). FSDP2 keeps an unsharded gradient it does not reduce in its reduce dtype
    (``FSDPParam.to_accumulated_grad_if_needed``: ``unsharded_grad.to(self.reduce_dtype)``
    where the two differ; ``reduce_dtype`` equal to ``param_dtype`` is None), so
    ``reduce_bytes_per_param`` where stated (not NaN: torchtitan's ``mixed_precision_reduce``
    float32, 4), else ``grad_bytes_per_param``. FSDP1 keeps ``param_dtype`` (2, where FSDP2 holds
    4): a stated reduction is taken as FSDP2's (docs/model.md §4, §16). Numpy, broadcasts."""
    grad = np.asarray(grad_bytes_per_param, dtype=float)
    reduce = np.asarray(reduce_bytes_per_param, dtype=float)
    return np.where(np.isnan(reduce), grad, reduce)


def reduce_bytes_per_param_of(strategy, framework, wire_bytes_per_param, grad_bytes_per_param,
                              reduce_bytes_per_param=np.nan):
    """Bytes per parameter of the gradients' data-parallel reduction on the wire (reduce-scatter
    or all-reduce): the stated ``reduce_bytes_per_param`` where not NaN; else, under the default
    framework, DDP and ZeRO-1 reduce fp32 gradients (``_fp32_reduce``:
    ``main_grad_bytes_per_param``, 4 for 16-bit training; for Megatron-Core's ZeRO-1 the same
    buffer the memory holds, ``held_grad_bytes_per_param``); every other strategy and framework
    reduces ``wire_bytes_per_param`` (docs/model.md §4, §16). Bytes are real bytes: a caller
    counting a nominal gradient (wire 1 a 'parameter') states its reduction. Numpy,
    broadcasts."""
    wire = np.asarray(wire_bytes_per_param, dtype=float)
    reduce = np.asarray(reduce_bytes_per_param, dtype=float)
    return np.where(_fp32_reduce(strategy, framework),
                    main_grad_bytes_per_param(grad_bytes_per_param, reduce),
                    np.where(np.isnan(reduce), wire, reduce))


def state_shards(strategy, shards, full_gradients=False):
    """(parameters, gradients, optimizer state) share each device holds under ``strategy`` with
    ``shards`` data-parallel ranks: ZeRO-1 shards the optimizer state, ZeRO-2 also the
    gradients, ZeRO-3 also the parameters (Rajbhandari et al. 2019, §5). ``full_gradients``:
    the gradients are held whole even so (FSDP's ``no_sync`` with accumulation)."""
    strategy = np.asarray(strategy)
    one = 1.0 / np.maximum(np.asarray(shards, dtype=float), 1.0)
    grads = np.where((strategy >= ZERO2) & ~np.asarray(full_gradients, dtype=bool), one, 1.0)
    return (np.where(strategy >= ZERO3, one, 1.0), grads, np.where(strategy >= ZERO1, one, 1.0))


def _master_in_optimizer(param_bytes_per_param):
    """True where the optimizer state K counts a fp32 master copy of the weights
    (``FSDP_SHARD_BYTES`` = 4 of mixed-precision Adam's 12): 16-bit weights, w_param < 4. fp32
    training (w_param = 4, K = 8: Adam's m, v) keeps none (docs/model.md §4)."""
    return np.asarray(param_bytes_per_param, dtype=float) < FSDP_SHARD_BYTES


def param_state_bytes_per_param(strategy, framework, shards, param_bytes_per_param):
    """Bytes of weights one device holds per parameter of the model, beside K's master copy:
    ``param_bytes_per_param`` times its share (``state_shards``: whole, or 1/``shards`` under
    ZeRO-3). PyTorch FSDP (``framework`` ``sharding.FSDP``, ZeRO-2/3 on more than one rank)
    keeps its sharded flat parameter in the parameters' original dtype (fp32, 4/s): in 16-bit
    training that shard is the optimizer's fp32 master, counted in K, so ZeRO-3 holds no other
    weights (0, not w/s) and ZeRO-2 its whole 16-bit weights alone (w); in fp32 training K holds
    no master and the shard is counted here, ZeRO-3 w/s, ZeRO-2 w + w/s beside its whole
    weights. DeepSpeed's stages 1-2 clone an fp32 partition of the weights whatever their dtype
    (``single_partition_of_fp32_groups``), K's master in 16-bit training, 4/s more in fp32;
    its stage 3 updates an fp32 partition in place (docs/model.md §4). Numpy, broadcasts."""
    strategy = np.asarray(strategy)
    framework = np.asarray(framework)
    weights = np.asarray(param_bytes_per_param, dtype=float)
    s = np.maximum(np.asarray(shards, dtype=float), 1.0)
    share = state_shards(strategy, shards)[0]
    no_master = ~_master_in_optimizer(weights)
    sharded = (strategy >= ZERO2) & (framework == FSDP) & (s > 1.0)
    shard = np.where(no_master, weights / s, 0.0)
    whole = np.where(strategy >= ZERO3, 0.0, weights)
    cloned = ((framework == DEEPSPEED) & (strategy >= ZERO1) & (strategy <= ZERO2) & no_master)
    return np.where(sharded, whole + shard,
                    weights * share + np.where(cloned, FSDP_SHARD_BYTES / s, 0.0))


def deepspeed_buffer_bytes(strategy, framework, shards, params, param_bytes_per_param,
                           grad_bytes_per_param, backward_bytes, overlap=False):
    """Bytes DeepSpeed's ZeRO-1/2/3 holds at its peak beyond its states (``framework``
    ``sharding.DEEPSPEED``; 0 elsewhere), ``params`` its replica's parameters over ``shards``
    ranks, ``backward_bytes`` what backward holds that the optimizer step does not
    (activations, ZeRO-3's gathered parameters). Backward fills an ipg bucket of
    ``reduce_bucket_size`` elements in the weights' dtype (stages 1-2: one, two with
    ``overlap_comm``, freed after the boundary's reduction; stage 3: one, kept); the step
    flattens the 16-bit gradient partition into a copy and casts it to an fp32 gradient
    (``w_grad + 4`` bytes an element, ``w_grad`` in fp32), over the whole partition (stages 1-2)
    or one ``sub_group_size`` sub-group (stage 3), when activations are gone:
    stage 2 ``max(ipg, step - backward)``, stage 3 ``ipg + max(step - backward, 0)``. Stage 1
    holds whole gradients (counted in its states) until the boundary's reduction copies them
    through the bucket into a gradient partition (``w_grad`` an element) while the rest are
    still whole, and steps on that partition once they are freed:
    ``max(ipg, partition + max(step - whole, ipg - whole, 0) - backward)`` (docs/model.md §4).
    Numpy, broadcasts."""
    strategy = np.asarray(strategy)
    weights = np.asarray(param_bytes_per_param, dtype=float)
    grad = np.asarray(grad_bytes_per_param, dtype=float)
    params = np.asarray(params, dtype=float)
    buckets = np.where((strategy <= ZERO2) & np.asarray(overlap, dtype=bool), 2.0, 1.0)
    ipg = buckets * DS_REDUCE_BUCKET_ELEMENTS * weights
    partition = params / np.maximum(np.asarray(shards, dtype=float), 1.0)
    elements = np.where(strategy >= ZERO3, np.minimum(partition, DS_SUB_GROUP_ELEMENTS),
                        partition)
    step = elements * (grad + np.where(grad < FSDP_SHARD_BYTES, FSDP_SHARD_BYTES, 0.0))
    backward = np.asarray(backward_bytes, dtype=float)
    over = step - backward
    # stage 1: the gradient partition beside the whole gradients (or the bucket, where it holds
    # more than they do), then the step's copies beside the partition once they are freed
    whole = params * grad
    stage1 = np.maximum(ipg, partition * grad + np.maximum(np.maximum(step - whole, ipg - whole),
                                                           0.0) - backward)
    extra = select_first([strategy >= ZERO3, strategy == ZERO2],
                      [ipg + np.maximum(over, 0.0), np.maximum(ipg, over)], stage1)
    return np.where((np.asarray(framework) == DEEPSPEED) & (strategy >= ZERO1), extra, 0.0)


def grad_state_bytes_per_param(strategy, framework, shards, held_grad_bytes_per_param,
                               full_gradients=False):
    """Bytes of gradients one device holds per parameter of the model: the gradient's bytes
    (``held_grad_bytes_per_param``) times its share (``state_shards``: whole, or 1/``shards``).
    PyTorch FSDP's ZeRO-2/3 (``framework`` ``sharding.FSDP``) holds its gradient shard in its
    sharded parameters' dtype, ``max(w, FSDP_SHARD_BYTES)`` / s (bf16 mixed precision: 4/s, not
    2/s); the whole gradients it accumulates under ``no_sync`` (``full_gradients``) keep the
    bytes the caller holds them in (``unreduced_fsdp_grad_bytes_per_param``: FSDP2's reduce
    dtype where stated; FSDP1's unsharded parameters' dtype, measured,
    ``tests/fsdp_zero2_probe.py``). Its
    fp32 parameter shard is ``param_state_bytes_per_param``'s (docs/model.md §4). Numpy,
    broadcasts."""
    grad = np.asarray(held_grad_bytes_per_param, dtype=float)
    shares = state_shards(strategy, shards, full_gradients)[1]
    fsdp_shard = ((np.asarray(strategy) >= ZERO2) & (np.asarray(framework) == FSDP)
                  & (shares < 1.0))
    return np.where(fsdp_shard, np.maximum(grad, FSDP_SHARD_BYTES), grad) * shares


def usable_memory_bytes(device_memory_bytes, memory_margin=0.0):
    """Bytes of a device a layout may fill: ``(1 - m) x M``, ``m`` the share of its memory
    ``M`` (bytes) kept free (``Scenario.memory_margin``, 0 to 0.5; 0: all of it, exactly M).
    The share covers what the model does not count: the caching allocator's fragmentation
    (docs/model.md §16). A row fits where its memory is at most this. Numpy, broadcasts."""
    return (1.0 - np.asarray(memory_margin, dtype=float)) * np.asarray(device_memory_bytes,
                                                                        dtype=float)


def under_measured_ceiling(fits, micro_batch, oom_micro_batch, whole_replica=True):
    """``fits`` (the memory model's) and, where a calibration ran this device out of memory at
    ``oom_micro_batch`` samples per micro-step (> 0; 0 or None: none seen), each row's
    ``micro_batch`` below it where the row's device holds what calibration's did, a whole
    model replica (``whole_replica``: always on the data-parallel path; tp = pp = cp = 1 on
    the layout path, where a split holds a part of the model and its activations the memory
    model prices). The one rule of both prediction paths, rows and one-device baselines alike
    (docs/model.md §10, §16). Numpy, broadcasts."""
    oom = np.asarray(0 if oom_micro_batch is None else oom_micro_batch)
    over = (oom > 0) & np.asarray(whole_replica, dtype=bool) & (np.asarray(micro_batch) >= oom)
    return np.asarray(fits, dtype=bool) & ~over


# ZeRO-3 / FSDP FULL_SHARD holds whole the parameters of the unit it computes and of the one it
# prefetches (FSDP1 ``limit_all_gathers``: at most two all-gathered units in flight; FSDP2 and
# FSDP1 prefetch one unit ahead), beside the shards: both prediction paths count them.
ZERO3_GATHERED_UNITS = 2.0


def deepspeed_gathered_bytes(params, param_bytes_per_param):
    """Bytes of whole parameters DeepSpeed's stage 3 holds when backward starts, ``params``
    the parameters it gathers (a replica's, a stage's share): after a module's forward it keeps
    every parameter used again within ``stage3_max_reuse_distance`` elements of the trace
    (``partitioned_param_coordinator.__params_to_release``), which are the last R/2 of the
    forward (reused after R/2 more in backward), and prefetches ``stage3_prefetch_bucket_size``
    more while fewer than ``stage3_max_live_parameters`` are gathered:
    ``min(Psi, R/2 + min(P, live - R/2)) x w`` (docs/model.md §4). Numpy, broadcasts."""
    params = np.asarray(params, dtype=float)
    kept = np.minimum(params, DS_MAX_REUSE_DISTANCE_ELEMENTS / 2.0)
    prefetched = np.minimum(np.minimum(params - kept, DS_PREFETCH_BUCKET_ELEMENTS),
                            np.maximum(DS_MAX_LIVE_ELEMENTS - kept, 0.0))
    return (kept + prefetched) * np.asarray(param_bytes_per_param, dtype=float)


def gathered_parameter_bytes(strategy, devices, params, param_bytes_per_param, blocks,
                             framework=FSDP):
    """Bytes of whole parameters ZeRO-3 holds beside its shards: under FSDP ``min(2, L)``
    units of ``Psi * w / L`` (``ZERO3_GATHERED_UNITS``, ``blocks`` = L), under DeepSpeed
    ``deepspeed_gathered_bytes``; 0 for other strategies and on one device (FSDP runs
    NO_SHARD there: nothing gathered)."""
    blocks = np.maximum(np.asarray(blocks, dtype=float), 1.0)
    unit = np.asarray(params, dtype=float) * np.asarray(param_bytes_per_param, dtype=float) / blocks
    held = np.where(np.asarray(framework) == DEEPSPEED,
                    deepspeed_gathered_bytes(params, param_bytes_per_param),
                    np.minimum(ZERO3_GATHERED_UNITS, blocks) * unit)
    return np.where((np.asarray(strategy) >= ZERO3) & (np.asarray(devices) > 1), held, 0.0)


def memory_per_device_bytes(
    strategy,
    devices,
    params,
    param_bytes_per_param,
    grad_bytes_per_param,
    optimizer_bytes_per_param,
    activation_bytes_per_sample,
    micro_batch,
    full_gradients=False,
    blocks=1.0,
    framework=FSDP,
    overlap=False,
):
    """Bytes one device holds: model states (sharded per strategy, ``state_shards``; gradients
    whole where ``full_gradients``; FSDP's fp32 parameter and gradient shards, DeepSpeed's fp32
    clone: ``param_state_bytes_per_param`` and ``grad_state_bytes_per_param`` under
    ``framework``), ZeRO-3's gathered parameters (``gathered_parameter_bytes``: FSDP's of
    ``blocks`` units, DeepSpeed's),
    activations and DeepSpeed's buckets and step-time gradient copies
    (``deepspeed_buffer_bytes``, ``overlap``: its ``overlap_comm``)."""
    shard_optim = state_shards(strategy, devices, full_gradients)[2]
    psi = np.asarray(params, dtype=float)
    states = psi * (
        param_state_bytes_per_param(strategy, framework, devices, param_bytes_per_param)
        + grad_state_bytes_per_param(strategy, framework, devices, grad_bytes_per_param,
                                     full_gradients)
        + optimizer_bytes_per_param * shard_optim
    )
    gathered = gathered_parameter_bytes(strategy, devices, params, param_bytes_per_param, blocks,
                                        framework)
    activations = np.asarray(activation_bytes_per_sample, dtype=float) * micro_batch
    deepspeed = deepspeed_buffer_bytes(strategy, framework, devices, params,
                                       param_bytes_per_param, grad_bytes_per_param,
                                       gathered + activations, overlap)
    return states + gathered + activations + deepspeed
