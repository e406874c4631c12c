"""Run one optimizer step of PyTorch DDP under ``torch.autocast(bfloat16)`` on 2 gloo CPU ranks
with torch's fused AdamW and print, as one JSON line, the bytes rank 0's step reads and writes
and the dtypes it reads (the default framework's DDP, docs/model.md §4 "The optimizer step by
framework"): autocast keeps the parameters, so their gradients, in fp32.

Every aten op the step runs is seen by a dispatch mode: an op reads the bytes of each tensor it
is given and writes those of each tensor whose contents it changed (compared with a copy taken
before the op) and of each tensor it returns that is not one of its inputs. Adam's step
counters (0-d tensors) are left out. Read by ``tests/test_optimizer_sweep_frameworks.py``.
Usage: python tests/ddp_optimizer_probe.py PORT."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

WIDTH = 64  # two bias-free WIDTH x WIDTH layers: 8,192 parameters


def _local(t):
    """The rank's own tensor of a DTensor (FSDP2's parameters), else ``t``."""
    return t._local_tensor if hasattr(t, "_local_tensor") else t


def _tensors(values):
    return [_local(t) for t in tree_flatten(values)[0]
            if isinstance(t, torch.Tensor) and _local(t).dim() > 0]


class StepBytes(TorchDispatchMode):
    """Bytes read and written by the aten ops run under it, and the dtypes they read."""

    def __init__(self):
        super().__init__()
        self.read = self.written = 0
        self.dtypes = set()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        given = _tensors((args, kwargs))
        before = [t.detach().clone() for t in given]
        out = func(*args, **kwargs)
        changed = [t for t, b in zip(given, before, strict=True) if not torch.equal(t, b)]
        made = [t for t in _tensors(out) if not any(t is g for g in given)]
        self.read += sum(t.numel() * t.element_size() for t in given)
        self.written += sum(t.numel() * t.element_size() for t in changed + made)
        self.dtypes.update(str(t.dtype).removeprefix("torch.") for t in given)
        self.ops.append(str(func))
        return out


def _rank(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH, bias=False),
                                torch.nn.Linear(WIDTH, WIDTH, bias=False))
    params = sum(p.numel() for p in model.parameters())
    net = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    x = torch.randn(4, WIDTH)

    def backward():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = net(x).float().sum()
        loss.backward()

    backward()
    optimizer.step()  # the first step makes Adam's m, v; the second is the one measured
    optimizer.zero_grad()
    backward()
    updated = list(optimizer.param_groups[0]["params"])
    with StepBytes() as step:
        optimizer.step()
    if rank == 0:
        print(json.dumps({"params": params, "ranks": world,
                          "updated": sum(p.numel() for p in updated),
                          "param_dtypes": sorted({str(p.dtype).removeprefix("torch.") for p in updated}),
                          "grad_dtypes": sorted({str(p.grad.dtype).removeprefix("torch.")
                                                 for p in updated}),
                          "read": step.read, "written": step.written,
                          "dtypes": sorted(step.dtypes), "ops": step.ops}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1])), nprocs=2)
