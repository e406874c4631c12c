"""The units in which sharded data parallelism (ZeRO / FSDP) communicates, per framework.

DDP all-reduces gradients in 25 MiB buckets (``overlap.DDP_BUCKET_BYTES``); sharded training
does not use those buckets:

- PyTorch FSDP (``FSDP``, the default framework) gathers and reduce-scatters one wrapped block
  at a time: with the
  usual wrapping (one FSDP unit per transformer block, as torchtitan and the FSDP tutorials do)
  a unit is ``Psi*w / L`` for ``L`` blocks. FSDP has no ZeRO-1 stage: ZeRO-1 under the default
  framework is Megatron-Core's distributed optimizer (reduce-scatter of gradients and
  all-gather of parameters in ``megatron_bucket_elements`` buckets, DDP's volume).
- DeepSpeed (``DEEPSPEED``) reduces gradients in ``reduce_bucket_size`` elements, gathers the
  updated parameters of stages 1-2 in ``allgather_bucket_size`` elements, and in stage 3
  prefetches parameters in all-gathers of up to ``stage3_prefetch_bucket_size`` elements
  (``deepspeed/runtime/zero/config.py`` defaults 5e8, 5e8 and 5e7;
  ``partitioned_param_coordinator.py`` coalesces the prefetched parameters into one gather).
  Stages 1-2 reduce each bucket with an all-reduce (``use_multi_rank_bucket_allreduce``, on
  by default since DeepSpeed 0.12.4, ``stage_1_and_2.py`` ``allreduce_and_scatter``), stage 3
  with a reduce-scatter (``stage3.py`` ``reduce_scatter_coalesced``).

When the workload does not say how many blocks it has, ``default_block_count`` estimates it
from the parameter count with the shape of published transformers.
"""

from __future__ import annotations

import numpy as np

FSDP, DEEPSPEED = 0, 1
FRAMEWORKS = {"fsdp": FSDP, "deepspeed": DEEPSPEED}
# What --zero-framework deepspeed is beside strategy ddp (no sharding): DeepSpeed's engine at
# ZeRO stage 0, which reduces in its communication dtype and steps its own optimizer, neither
# PyTorch DDP's (docs/model.md §4; its numbers differ: it is not ignored)
STAGE0_WORDS = ("DeepSpeed's engine without ZeRO (stage 0: its own all-reduce and optimizer "
                "step, nothing sharded)")
# When sharded gradients are reduced under gradient accumulation (``Scenario.grad_sync``,
# docs/model.md §4): in every micro-step (DeepSpeed stage 2/3 always; FSDP by default), or once
# per step with full gradients held in between (FSDP1's ``no_sync()``, FSDP2's
# ``set_requires_gradient_sync(False)``, Hugging Face Accelerate's ``accumulate``).
EVERY_MICRO_STEP, ONCE_PER_STEP = 0, 1
GRAD_SYNCS = {"every-micro-step": EVERY_MICRO_STEP, "once-per-step": ONCE_PER_STEP}
SETTING_WORDS = "{} {}"  # a knob's setting in the CLI's notes: 'strategy zero1', 'accumulation 1'
GRAD_SYNC_LABELS = {"every-micro-step": "every micro-step (sharded gradients; default)",
                    "once-per-step": "once per step (FSDP no_sync: full gradients)"}
GRAD_SYNC_HELP = (
    "when ZeRO-2/3 reduce gradients under gradient accumulation (default every-micro-step: a "
    "reduce-scatter in every backward, gradients stay sharded, as DeepSpeed and FSDP do by "
    "default); once-per-step is FSDP's no_sync (FSDP2: set_requires_gradient_sync(False); "
    "Hugging Face Accelerate's accumulate): every rank holds the full gradients (in the workload's "
    "reduce_bytes_per_param where stated: FSDP2 accumulates in its reduce_dtype) and "
    "reduce-scatters once, in the last micro-step (ZeRO-3 still gathers parameters in every "
    "micro-step; ZeRO-2 keeps its gathered parameters between micro-steps, as FSDP1's no_sync "
    "does and FSDP2 only with set_reshard_after_backward(False)). FSDP only: refused with "
    "DeepSpeed; DDP and ZeRO-1 reduce once per step anyway")
# what the gradient sync defaults to on traces (trace_collectives.traced_grad_sync), after
# GRAD_SYNC_HELP where a traced job's is asked for (diagnose --trace, the app's Diagnose page)
TRACED_GRAD_SYNC_HELP = (
    "; on traces (diagnose --trace) the default is what they show: once-per-step where one "
    "micro-step of two or more a step posts the reduction, else every-micro-step; on a job "
    "read as DDP under accumulation either value is your word on its all-reduces, whatever "
    "the traces show (every-micro-step: without no_sync, once-per-step: under it)")



def grad_sync_unused(strategy: str, accumulation: int, grad_sync: str,
                     strategy_named: bool = True, said=SETTING_WORDS.format) -> str | None:
    """Why ``grad_sync`` 'once-per-step' changes no number of this scenario (the words after
    '--grad-sync once-per-step ignored: '), or None where it applies (ZeRO-2/3 under
    accumulation): DDP and ZeRO-1 reduce once per step anyway, and one micro-step per step
    reduces once either way. ``strategy_named`` False: the words do not name the scenario's
    strategy ('ddp and zero1 reduce ...'), so a sweep says them once of the rows at both.
    ``said(knob, value)``: a setting as the caller says it ('strategy zero1', the CLI's words,
    by default; a page's control and choice)."""
    if grad_sync != "once-per-step":
        return None
    if strategy in ("ddp", "zero1"):
        who = (f"{said('strategy', strategy)} reduces" if strategy_named
               else "ddp and zero1 reduce")
        return f"{who} gradients once per step anyway (it applies to ZeRO-2/3)"
    if accumulation == 1:
        return (f"{said('accumulation', accumulation)}: one micro-step per step reduces once "
                "either way (it applies with 2 or more)")
    return None


# DeepSpeed ZeRO defaults, in elements (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig).
DS_REDUCE_BUCKET_ELEMENTS = 5e8  # reduce_bucket_size
DS_ALLGATHER_BUCKET_ELEMENTS = 5e8  # allgather_bucket_size (stages 1-2, after the step)
DS_PREFETCH_BUCKET_ELEMENTS = 5e7  # stage3_prefetch_bucket_size
DS_SUB_GROUP_ELEMENTS = 1e9  # sub_group_size: stage 3 steps its partition in sub-groups of these
DS_MAX_REUSE_DISTANCE_ELEMENTS = 1e9  # stage3_max_reuse_distance: stage 3 keeps a gathered
# parameter whose next use comes within these many elements of the trace
DS_MAX_LIVE_ELEMENTS = 1e9  # stage3_max_live_parameters: stage 3 prefetches only below these

# Megatron-Core DDP / distributed optimizer buckets, in parameters: ``bucket_size`` defaults to
# max(40,000,000, 1,000,000 x dp) "(larger DP sizes need larger buckets to ensure collectives do
# not become latency-bound)" (megatron/core/distributed/distributed_data_parallel_config.py:48-50,
# distributed_data_parallel.py:134, NVIDIA/Megatron-LM d98e8a6, 2026-08-22). The distributed
# optimizer reduce-scatters gradients and all-gathers parameters in these buckets
# (--overlap-grad-reduce, --overlap-param-gather).
MEGATRON_MIN_BUCKET_PARAMS = 40e6
MEGATRON_BUCKET_PARAMS_PER_RANK = 1e6

# A transformer block holds 12*d^2 parameters (Kaplan et al. 2020, "Scaling Laws for Neural
# Language Models", eq. 2.1: N = 12 n_layer d^2), and published models keep the width about 128
# times the depth: GPT-3 6.7B 4096/32, 13B 5140/40, 175B 12288/96 (Brown et al. 2020, table
# 2.1); Llama-2 7B 4096/32, 13B 5120/40 (Touvron et al. 2023).
BLOCK_PARAMS_PER_WIDTH_SQUARED = 12.0
WIDTH_PER_BLOCK = 128.0


def default_block_count(params):
    """Transformer blocks of a model of ``params`` parameters, from ``params = 12 L (128 L)^2``:
    ``L = (params / (12 * 128^2))^(1/3)``, rounded, at least 1 (6.7e9 -> 32, 175e9 -> 96)."""
    psi = np.asarray(params, dtype=float)
    scale = BLOCK_PARAMS_PER_WIDTH_SQUARED * WIDTH_PER_BLOCK**2
    return np.maximum(np.round(np.cbrt(psi / scale)), 1.0)


def megatron_bucket_elements(group_size):
    """Parameters per Megatron-Core bucket for a data-parallel group of ``group_size`` ranks."""
    return np.maximum(MEGATRON_MIN_BUCKET_PARAMS,
                      MEGATRON_BUCKET_PARAMS_PER_RANK * np.asarray(group_size, dtype=float))


def block_count(blocks, params):
    """``blocks`` where given (> 0), else ``default_block_count(params)``."""
    given = np.asarray(blocks, dtype=float)
    return np.where(given > 0, given, default_block_count(params))
