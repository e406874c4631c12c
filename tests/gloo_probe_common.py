"""What the gloo probes (``tests/*_probe.py``, run as scripts by their tests) share: a rank's
start on 2 CPU processes with the same 2-layer model, and a dispatch mode that counts the bytes
an optimizer step reads and writes. Imported by the probes as ``gloo_probe_common`` (their own
folder is first on ``sys.path`` when run as a script, and spawned ranks inherit it)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

WIDTH = 64  # two bias-free WIDTH x WIDTH layers: 8,192 parameters


def start_two_layers(rank: int, world: int, port: int):
    """Join the gloo group on loopback ``port`` and build the probes' model: (model, params)."""
    join_gloo(rank, world, port)
    return two_layers()


def join_gloo(rank: int, world: int, port: int) -> None:
    """Join the 2-rank gloo group on loopback ``port``."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)


def two_layers():
    """The probes' model, seeded afresh (the same weights and inputs each call): (model, params).
    A probe that runs several kinds in one launch builds one for each."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH, bias=False),
                                torch.nn.Linear(WIDTH, WIDTH, bias=False))
    return model, sum(p.numel() for p in model.parameters())


def autocast_backward(net, x) -> None:
    """One bf16-autocast forward of ``net`` on ``x`` and its backward: the probes' pass."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = net(x).float().sum()
    loss.backward()


def local_tensor(t):
    """The rank's own tensor of a DTensor (FSDP2's parameters), else ``t``."""
    return t._local_tensor if hasattr(t, "_local_tensor") else t


def _tensors(values):
    return [local_tensor(t) for t in tree_flatten(values)[0]
            if isinstance(t, torch.Tensor) and local_tensor(t).dim() > 0]


class StepBytes(TorchDispatchMode):
    """Bytes read and written by the aten ops run under it, and the dtypes they read: an op reads
    each tensor it is given and writes each one whose contents it changed (against a copy taken
    before it) and each it returns that is not an input; 0-d tensors (Adam's step counters) are
    left out."""

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


def end_rank() -> None:
    """Leave a probe's rank once its work is printed: both ranks past every collective
    (``barrier``), the group destroyed, the output flushed, then ``os._exit(0)``. torch's gloo
    objects can abort a process while the interpreter tears them down after all work is done
    ('terminate called without an active exception', SIGABRT: a failed probe in CI even after
    the barrier), as ``calibration.dist.exit_process`` says of torchrun's ranks."""
    import sys

    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
