"""Run FSDP1 SHARD_GRAD_OP (ZeRO-2) with MixedPrecision(param_dtype=bf16) on 2 gloo CPU ranks and
print, as one JSON line, what rank 0 holds of a 2-layer model: the unsharded bf16 parameters
kept from forward to backward, the fp32 parameter shard, the gradient shard after a synced
backward, the whole gradient accumulated under ``no_sync`` (dtype, elements, bytes). Read by
``tests/test_fsdp_zero2_memory.py``. Usage: python tests/fsdp_zero2_probe.py PORT"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy

WIDTH = 64  # two bias-free WIDTH x WIDTH layers: 8,192 parameters


def _tensor(t):
    return None if t is None else {"dtype": str(t.dtype).removeprefix("torch."),
                                   "elements": t.numel(), "bytes": t.untyped_storage().nbytes()}


def _rank(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH, bias=False),
                                torch.nn.Linear(WIDTH, WIDTH, bias=False))
    params = sum(p.numel() for p in model.parameters())
    fsdp = FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
                                    device_id=torch.device("cpu"),
                                    mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))
    flat = fsdp._handle.flat_param
    x = torch.randn(4, WIDTH)
    out = {"params": params, "ranks": world}
    with fsdp.no_sync():  # one micro-step without reduction: the whole gradient accumulates
        fsdp(x).float().sum().backward()
    out["no_sync_grad"] = _tensor(flat.grad)
    loss = fsdp(x).float().sum()  # the last micro-step reduces
    out["unsharded_params_before_backward"] = _tensor(flat._full_param_padded)
    out["param_shard"] = _tensor(flat._local_shard)
    loss.backward()
    out["grad_shard"] = _tensor(flat.grad)
    if rank == 0:
        print(json.dumps(out), flush=True)
    # both ranks done with every collective before either tears gloo down (a rank that left
    # first aborted the other: "terminate called without an active exception")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1])), nprocs=2)
