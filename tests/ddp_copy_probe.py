"""Run backward passes of PyTorch DDP on 2 gloo CPU ranks and print, as one JSON line, the bytes
its ``Reducer`` copies between gradients and buckets in one step (docs/model.md §4 "Their copies,
in time"): every ``aten::mul.out`` (backward's copy into the bucket, scaled by 1/p) and
``aten::copy_`` (the copy back after the all-reduce) is seen by a dispatch mode and counted as
its source read plus its destination written. Kinds: the model alone (no DDP), DDP as it is by
default under ``torch.autocast(bfloat16)`` (fp32 parameters, so fp32 gradients and buckets), the
same with ``gradient_as_bucket_view=True``, and a model cast to bf16 (bf16 buckets). The step
measured is the third, after ``zero_grad(set_to_none=True)`` as training loops do. Read by
``tests/test_ddp_bucket_copies.py``. Usage: python tests/ddp_copy_probe.py PORT."""

from __future__ import annotations

import json
import sys

import torch
import torch.multiprocessing as mp
from gloo_probe_common import WIDTH, autocast_backward, end_rank, join_gloo, two_layers
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import TorchDispatchMode

COPIES = {"aten.mul.out", "aten.copy_.default"}


class CopyBytes(TorchDispatchMode):
    """Bytes the ops in ``COPIES`` read from their source and write to their destination (the
    ``out`` tensor of ``mul.out``, the first argument of ``copy_``), and how many ran."""

    def __init__(self):
        super().__init__()
        self.bytes = self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func) in COPIES:
            destination = kwargs["out"] if "out" in kwargs else args[0]
            source = args[0] if "out" in kwargs else args[1]
            self.bytes += (source.numel() * source.element_size()
                           + destination.numel() * destination.element_size())
            self.ops += 1
        return func(*args, **kwargs)


def _bf16_backward(net, x):
    net(x.to(torch.bfloat16)).float().sum().backward()


def _copies(net, x, backward):
    for _ in range(2):  # the first steps rebuild DDP's buckets in the gradients' order
        backward(net, x)
        net.zero_grad(set_to_none=True)
    with CopyBytes() as copies:
        backward(net, x)
    return {"bytes": copies.bytes, "ops": copies.ops}


def _rank(rank, world, port):
    join_gloo(rank, world, port)
    x = torch.randn(4, WIDTH)
    kinds = {}
    for kind in ("alone", "ddp", "ddp_bucket_view", "ddp_bf16_model"):
        model, params = two_layers()
        if kind == "ddp_bf16_model":
            model = model.to(torch.bfloat16)
        net = model if kind == "alone" else DistributedDataParallel(
            model, gradient_as_bucket_view=kind == "ddp_bucket_view")
        kinds[kind] = _copies(net, x, _bf16_backward if kind == "ddp_bf16_model"
                              else autocast_backward)
    if rank == 0:
        print(json.dumps({"params": params, "ranks": world, **kinds}), flush=True)
    end_rank()


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1])), nprocs=2)
