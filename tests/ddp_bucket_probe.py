"""Run two backward passes of PyTorch DDP under ``torch.autocast(bfloat16)`` on 2 gloo CPU ranks,
once with DDP's default ``gradient_as_bucket_view=False`` and once with ``True``, and print, as one
JSON line, what rank 0 holds after the second: the bytes of DDP's all-reduce buckets (each
bucket's flat buffer, as its comm hook is handed it), of the parameters' ``.grad`` and how many
of those gradients lie inside a bucket's storage (views) rather than beside it (copies), and
their dtypes (docs/model.md §4, ``memory.ddp_bucket_bytes_per_param``). The step between the
two passes zeroes the gradients with ``zero_grad()``'s default ``set_to_none=True``.
Read by ``tests/test_ddp_bucket_memory.py``. Usage: python tests/ddp_bucket_probe.py PORT."""

from __future__ import annotations

import json
import sys

import torch
import torch.multiprocessing as mp
from gloo_probe_common import WIDTH, autocast_backward, end_rank, start_two_layers
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel


def _held(model, view: bool) -> dict:
    """Two backward passes and an optimizer step between them with ``gradient_as_bucket_view``
    ``view``: rank 0's buckets and gradients after the second pass."""
    net = DistributedDataParallel(model, gradient_as_bucket_view=view)
    buckets: dict[int, torch.Tensor] = {}

    def hook(state, bucket):  # records the bucket's flat buffer, then all-reduces it as default
        buffer = bucket.buffer()
        buckets[buffer.untyped_storage().data_ptr()] = buffer
        return allreduce_hook(state, bucket)

    net.register_comm_hook(None, hook)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(4, WIDTH)

    def backward():
        autocast_backward(net, x)

    backward()
    optimizer.step()
    optimizer.zero_grad()  # set_to_none=True, torch's default
    buckets.clear()  # DDP rebuilds its buckets after the first pass (in the order grads came)
    backward()
    grads = [p.grad for p in net.parameters()]
    storages = set(buckets)
    return {
        "bucket_bytes": sum(b.numel() * b.element_size() for b in buckets.values()),
        "grad_bytes": sum(g.numel() * g.element_size() for g in grads),
        "grads_in_buckets": sum(g.untyped_storage().data_ptr() in storages for g in grads),
        "bucket_dtypes": sorted({str(b.dtype).removeprefix("torch.") for b in buckets.values()}),
        "grad_dtypes": sorted({str(g.dtype).removeprefix("torch.") for g in grads}),
    }


def _rank(rank, world, port):
    model, params = start_two_layers(rank, world, port)
    copies = _held(model, False)
    views = _held(model, True)
    if rank == 0:
        print(json.dumps({"params": params, "grads": len(list(model.parameters())),
                          "default": copies, "view": views}))
    end_rank()


if __name__ == "__main__":
    mp.spawn(_rank, args=(2, int(sys.argv[1])), nprocs=2)
