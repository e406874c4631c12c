"""Datasets for the loader phase: built-in encoded images on disk, or the user's own.

The built-in one writes ``count`` JPEG images (smooth colour fields plus noise, so they do not
compress to nothing) into a temporary folder; each sample is read from disk, decoded with PIL,
randomly cropped and flipped, and turned into a normalised float tensor with numpy and torch
(torchvision is not needed). A user dataset comes from ``package.module:factory`` returning a
map-style ``torch.utils.data.Dataset``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from scalesim.calibration.factories import call_factory, load_callable
from torch.utils.data import Dataset

from scalesim.errors import ScalesimError

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def write_images(folder: Path, count: int, size: int, seed: int = 0) -> list[Path]:
    """Write ``count`` ``size`` x ``size`` JPEG files to ``folder``; returns their paths."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    paths = []
    for i in range(count):
        a, b, c = rng.uniform(0, 255, size=3)
        field = np.stack([a * xx, b * yy, c * (1 - xx * yy)], axis=-1)
        pixels = np.clip(field + rng.normal(0, 20, field.shape), 0, 255).astype(np.uint8)
        path = folder / f"img_{i:05d}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(path)
    return paths


class ImageFiles(Dataset):
    """Encoded images on disk, decoded and augmented per sample (random crop, flip, normalise)."""

    def __init__(self, paths: list[Path], crop: int):
        self.paths, self.crop = paths, crop

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int):
        from PIL import Image

        with Image.open(self.paths[index]) as img:
            pixels = np.asarray(img.convert("RGB"), dtype=np.float32) / 255.0
        h, w, _ = pixels.shape
        top = np.random.randint(0, h - self.crop + 1)
        left = np.random.randint(0, w - self.crop + 1)
        pixels = pixels[top:top + self.crop, left:left + self.crop]
        if np.random.rand() < 0.5:
            pixels = pixels[:, ::-1]
        pixels = (pixels - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1))), index % 10


class BuiltinImages:
    """Context manager: a temporary folder of JPEGs and the dataset that reads them."""

    def __init__(self, count: int, size: int = 96, crop: int = 64):
        self.count, self.size, self.crop = count, size, crop
        self.folder: Path | None = None

    def __enter__(self) -> ImageFiles:
        self.folder = Path(tempfile.mkdtemp(prefix="scalesim-images-"))
        paths = write_images(self.folder, self.count, self.size)
        return ImageFiles(paths, self.crop)

    def __exit__(self, *exc) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def description(self) -> str:
        return (f"built-in: {self.count} JPEG images {self.size}x{self.size} in a temporary "
                f"folder, PIL decode, random {self.crop}x{self.crop} crop and flip, normalise")


class UserDataset:
    """Context manager around a user's dataset factory (nothing to clean up)."""

    def __init__(self, spec: str):
        self.spec = spec
        self.description = f"user dataset {spec}"

    def __enter__(self):
        factory = load_callable(self.spec, "dataset factory")
        dataset = call_factory(self.spec, "dataset factory", factory)
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise ScalesimError(f"dataset factory '{self.spec}' must return a map-style "
                                f"torch Dataset (with __len__ and __getitem__), not "
                                f"{type(dataset).__name__}")
        if len(dataset) < 1:
            raise ScalesimError(f"dataset factory '{self.spec}' returned an empty dataset")
        return dataset

    def __exit__(self, *exc) -> None:
        return None


def dataset_source(args):
    """The context manager for ``--dataset``."""
    if args.dataset == "builtin":
        return BuiltinImages(args.loader_images)
    return UserDataset(args.dataset)
