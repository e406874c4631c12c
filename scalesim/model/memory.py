"""Memory per device for data-parallel and sharded (ZeRO / FSDP) training.

Following Rajbhandari et al. 2019 (ZeRO, section 5): with Psi parameters, each device holds
parameters (``param_bytes_per_param``), gradients (``grad_bytes_per_param``) and optimizer
state (``optimizer_bytes_per_param``, K = 12 for mixed-precision Adam: fp32 master copy,
momentum, variance). ZeRO-1 shards the optimizer state over the N data-parallel devices, ZeRO-2
also the gradients, ZeRO-3 / FSDP full shard also the parameters. Activations scale with the
per-device micro-batch and are never sharded by data parallelism.

Gradient accumulation (k > 1) with sharded gradients depends on the framework: DeepSpeed stage
2/3 reduce-scatters every micro-step and accumulates into its gradient shard, so gradients stay
sharded; PyTorch FSDP accumulates under ``no_sync`` (FSDP2: ``set_requires_gradient_sync(False)``),
which keeps every parameter's full unsharded gradient until the last micro-step, so a device
holds ``grad_bytes * Psi`` for the whole step.
"""

from __future__ import annotations

import numpy as np

from scalesim.model.sharding import FSDP

DDP, ZERO1, ZERO2, ZERO3 = 0, 1, 2, 3
STRATEGIES = {"ddp": DDP, "zero1": ZERO1, "zero2": ZERO2, "zero3": ZERO3}


def memory_per_device_bytes(
    strategy,
    devices,
    params,
    param_bytes_per_param,
    grad_bytes_per_param,
    optimizer_bytes_per_param,
    activation_bytes_per_sample,
    micro_batch,
    framework=FSDP,
    accumulation=1,
):
    """Bytes one device holds: model states (sharded per strategy) plus activations.

    ``framework``: ``sharding.FSDP`` or ``sharding.DEEPSPEED``; with FSDP and ``accumulation``
    above 1 the gradients are held unsharded (``no_sync``)."""
    strategy = np.asarray(strategy)
    n = np.maximum(np.asarray(devices, dtype=float), 1.0)
    psi = np.asarray(params, dtype=float)
    full_grads_held = (np.asarray(framework) == FSDP) & (np.asarray(accumulation) > 1)
    shard_params = np.where(strategy >= ZERO3, 1.0 / n, 1.0)
    shard_grads = np.where((strategy >= ZERO2) & ~full_grads_held, 1.0 / n, 1.0)
    shard_optim = np.where(strategy >= ZERO1, 1.0 / n, 1.0)
    states = psi * (
        param_bytes_per_param * shard_params
        + grad_bytes_per_param * shard_grads
        + optimizer_bytes_per_param * shard_optim
    )
    return states + np.asarray(activation_bytes_per_sample, dtype=float) * micro_batch
