"""User model and dataset factories for the calibration tests (loaded as ``calib_factories:NAME``).

They are real, small torch objects: a two-layer regression model with its own loss, a dataset of
``.npy`` files written to a temporary folder, and factories that fail on purpose.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

FEATURES = 64


def regression_model():
    """(model, make_batch, loss_fn): float targets, an explicit L1 loss."""
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.Tanh(), nn.Linear(128, 1))

    def make_batch(batch_size: int):
        x = torch.randn(batch_size, FEATURES)
        return x, x[:, :1] * 0.5 + 0.1 * torch.randn(batch_size, 1)

    def loss_fn(outputs, targets):
        return (outputs - targets).abs().mean()

    return model, make_batch, loss_fn


OOM_ABOVE = 4096  # samples: oom_model's make_batch runs out of memory above this


def oom_model():
    """Like regression_model, but a batch above OOM_ABOVE samples fails as the allocator does
    on a device that is full (torch.OutOfMemoryError): a device's memory ceiling, made
    deterministic (a real allocation failure depends on this machine's free memory)."""
    model, make_batch, loss_fn = regression_model()

    def bounded_batch(batch_size: int):
        if batch_size > OOM_ABOVE:
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {batch_size * FEATURES * 4} bytes")
        return make_batch(batch_size)

    return model, bounded_batch, loss_fn


def slow_rank_one_model():
    """Like regression_model, but rank 1's forward pass also sleeps 40 ms (a slow device)."""
    model, make_batch, loss_fn = regression_model()
    rank = int(os.environ.get("RANK", "0"))

    class Slow(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            if rank == 1:
                time.sleep(0.04)
            return self.inner(x)

    return Slow(model), make_batch, loss_fn


def broken_model():
    raise RuntimeError("weights file missing (on purpose)")


def not_a_model():
    return "not a model", None


class NpyFiles(Dataset):
    """Float arrays saved as .npy files; each item is loaded from disk and standardised."""

    def __init__(self, folder: Path, count: int):
        rng = np.random.default_rng(0)
        self.paths = []
        for i in range(count):
            path = folder / f"x{i:04d}.npy"
            np.save(path, rng.normal(size=(FEATURES,)).astype(np.float32))
            self.paths.append(path)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        x = np.load(self.paths[index])
        return torch.from_numpy((x - x.mean()) / (x.std() + 1e-6)), 0


def npy_dataset():
    return NpyFiles(Path(tempfile.mkdtemp(prefix="calib-npy-")), 96)


def broken_dataset():
    raise OSError("dataset folder not mounted (on purpose)")


def mlp_block(hidden, heads, ffn_hidden, seq_len, tp):
    """A user's block for --block-model: one tensor-parallel rank's MLP shard."""
    from torch import nn

    return nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, ffn_hidden // tp), nn.GELU(),
                         nn.Linear(ffn_hidden // tp, hidden))


def not_a_block(**shape):
    return "a string"
