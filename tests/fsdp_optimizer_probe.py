"""Run one optimizer step of PyTorch FSDP with MixedPrecision(param_dtype=bf16) on 2 gloo CPU ranks
and print, as one JSON line per KIND, the bytes rank 0's step reads and writes: FSDP1
SHARD_GRAD_OP (ZeRO-2), FSDP1 FULL_SHARD (ZeRO-3) and FSDP2 ``fully_shard`` (ZeRO-3), each with
torch's fused AdamW. The kinds run one after another in the same two ranks, each on a fresh
model of the same seed (one python, torch import and spawn for all).

Every aten op the step runs is seen by a dispatch mode: an op reads the bytes of each tensor it
is given and writes those of each tensor whose contents it changed (compared with a copy taken
before the op) and of each tensor it returns that is not one of its inputs. Adam's step
counters (0-d tensors) are left out. The dtypes of the tensors the step read are listed. Read by
``tests/test_fsdp_optimizer_bytes.py``. Usage: python tests/fsdp_optimizer_probe.py PORT KIND...,
each KIND one of SHARD_GRAD_OP, FULL_SHARD, fully_shard."""

from __future__ import annotations

import json
import sys

import torch
import torch.multiprocessing as mp
from gloo_probe_common import WIDTH, StepBytes, end_rank, join_gloo, local_tensor, two_layers


def _wrap(model, kind):
    if kind == "fully_shard":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
        for layer in model:
            fully_shard(layer, mp_policy=policy)
        return fully_shard(model, mp_policy=policy)
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy
    return FullyShardedDataParallel(model, sharding_strategy=getattr(ShardingStrategy, kind),
                                    device_id=torch.device("cpu"),
                                    mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))


def _step(rank, world, kind):
    """Measure ``kind``'s second optimizer step; rank 0 prints its JSON line."""
    model, params = two_layers()
    net = _wrap(model, kind)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    x = torch.randn(4, WIDTH)
    net(x).float().sum().backward()
    optimizer.step()  # the first step makes Adam's m, v; the second is the one measured
    optimizer.zero_grad()
    net(x).float().sum().backward()
    updated = [local_tensor(p) for p in optimizer.param_groups[0]["params"]]
    with StepBytes() as step:
        optimizer.step()
    if rank == 0:
        print(json.dumps({"kind": kind, "params": params, "ranks": world,
                          "updated": sum(p.numel() for p in updated),
                          "param_dtypes": sorted({str(p.dtype).removeprefix("torch.") for p in updated}),
                          "read": step.read, "written": step.written,
                          "dtypes": sorted(step.dtypes), "ops": step.ops}), flush=True)


def _rank(rank, world, port, kinds):
    join_gloo(rank, world, port)
    for kind in kinds:
        _step(rank, world, kind)
    end_rank()  # past every collective on both ranks, then out without teardown


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1]), sys.argv[2:]), nprocs=2)
