"""Run FSDP1 on 2 gloo CPU ranks and print, as one JSON line per STRATEGY PRECISION pair, what
rank 0 holds of a 2-layer model: the unsharded parameters kept from forward to backward, the
parameter shard, the gradient shard after a synced backward, the whole gradient accumulated under
``no_sync`` and the unsharded parameters left after that backward (dtype, elements, bytes).
STRATEGY: SHARD_GRAD_OP (ZeRO-2, the default) or FULL_SHARD (ZeRO-3); PRECISION: bf16
(``MixedPrecision(param_dtype=bfloat16)``, the default) or fp32 (no mixed precision). The pairs
run one after another in the same two ranks, each on a fresh model of the same seed (one python,
torch import and spawn for all). Read by ``tests/test_fsdp_zero2_memory.py`` and
``tests/test_fsdp_shard_memory.py`` (``probe_runner.fsdp_held``).
Usage: python tests/fsdp_zero2_probe.py PORT [STRATEGY PRECISION]... (none: SHARD_GRAD_OP bf16)"""

from __future__ import annotations

import json
import sys

import torch
import torch.multiprocessing as mp
from gloo_probe_common import WIDTH, end_rank, join_gloo, two_layers
from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy


def _tensor(t):
    return None if t is None else {"dtype": str(t.dtype).removeprefix("torch."),
                                   "elements": t.numel(), "bytes": t.untyped_storage().nbytes()}


def _hold(rank, world, strategy, precision):
    """Run ``strategy`` under ``precision``; rank 0 prints what it held as one JSON line."""
    model, params = two_layers()
    mixed = MixedPrecision(param_dtype=torch.bfloat16) if precision == "bf16" else None
    fsdp = FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy[strategy],
                                    device_id=torch.device("cpu"), mixed_precision=mixed)
    flat = fsdp._handle.flat_param
    x = torch.randn(4, WIDTH)
    out = {"params": params, "ranks": world, "strategy": strategy, "precision": precision}
    with fsdp.no_sync():  # one micro-step without reduction: the whole gradient accumulates
        fsdp(x).float().sum().backward()
    out["no_sync_grad"] = _tensor(flat.grad)
    # what is left unsharded once that backward is done (0 bytes: freed), and the shard beside
    out["unsharded_params_after_no_sync"] = _tensor(flat._full_param_padded)
    out["param_shard_after_no_sync"] = _tensor(flat._local_shard)
    loss = fsdp(x).float().sum()  # the last micro-step reduces
    out["unsharded_params_before_backward"] = _tensor(flat._full_param_padded)
    out["param_shard"] = _tensor(flat._local_shard)
    loss.backward()
    out["grad_shard"] = _tensor(flat.grad)
    if rank == 0:
        print(json.dumps(out), flush=True)


def _rank(rank, world, port, pairs):
    join_gloo(rank, world, port)
    for strategy, precision in pairs:
        _hold(rank, world, strategy, precision)
    end_rank()  # past every collective on both ranks, then out without teardown


def _pairs(arguments: list[str]) -> list[tuple[str, str]]:
    """(STRATEGY, PRECISION) pairs of the arguments after PORT; none: the default pair."""
    if len(arguments) % 2:
        sys.exit(f"fsdp_zero2_probe.py: STRATEGY PRECISION pairs expected, got {arguments}")
    return list(zip(arguments[::2], arguments[1::2], strict=True)) or [("SHARD_GRAD_OP", "bf16")]


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1]), _pairs(sys.argv[2:])), nprocs=2)
