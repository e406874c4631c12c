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
import sys

import torch
import torch.multiprocessing as mp
from gloo_probe_common import WIDTH, StepBytes, autocast_backward, end_rank, start_two_layers
from torch.nn.parallel import DistributedDataParallel


def _rank(rank, world, port):
    model, params = start_two_layers(rank, world, port)
    net = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    x = torch.randn(4, WIDTH)

    def backward():
        autocast_backward(net, x)

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
    end_rank()  # past every collective on both ranks, then out without teardown


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1])), nprocs=2)
