"""Loader phase: samples/s of a real DataLoader over files on disk vs ``num_workers``, model-free.

Rank 0 alone measures (the other ranks wait), so the curve is one process's supply; the model
shares a node's cores between its devices' loaders itself (scalesim.model.pipeline). Per worker
count: a fresh DataLoader, its first batch untimed (worker start-up), then ``--loader-batches``
batches timed with a monotonic clock.
"""

from __future__ import annotations

import os
import time

from scalesim.calibration.datasets import dataset_source
from scalesim.calibration.dist import DistContext, agree_on_error
from scalesim.calibration.results import LoaderResult
from torch.utils.data import DataLoader, RandomSampler

from scalesim.errors import ScalesimError
from scalesim.schemas import LoaderCurve, LoaderPoint


def worker_counts(max_workers: int) -> list[int]:
    """0, 1, 2, 4, ... and ``max_workers`` itself."""
    counts, w = [0], 1
    while w <= max_workers:
        counts.append(w)
        w *= 2
    if max_workers > 0 and counts[-1] != max_workers:
        counts.append(max_workers)
    return counts


def samples_per_s(dataset, workers: int, batch_size: int, batches: int) -> float:
    """Throughput of one DataLoader with ``workers`` workers, first batch excluded."""
    sampler = RandomSampler(dataset, replacement=True, num_samples=batch_size * (batches + 1))
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
                        drop_last=True)
    iterator = iter(loader)
    next(iterator)
    start = time.perf_counter()
    done = 0
    for _ in iterator:
        done += 1
    elapsed = time.perf_counter() - start
    del iterator
    return batch_size * done / elapsed


def measure(args, progress) -> LoaderResult:
    max_workers = args.max_workers if args.max_workers is not None else (os.cpu_count() or 1)
    if max_workers < 0:
        raise ScalesimError("--max-workers must be 0 or more")
    counts = worker_counts(max_workers)
    source = dataset_source(args)
    points = []
    with source as dataset:
        for w in counts:
            try:
                rate = samples_per_s(dataset, w, args.loader_batch, args.loader_batches)
            except ScalesimError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's dataset may raise anything
                first = str(exc).strip().splitlines()
                raise ScalesimError(f"dataset '{args.dataset}' with num_workers={w} raised "
                                    f"{type(exc).__name__}: {first[-1] if first else ''}") from None
            points.append(LoaderPoint(workers=w, samples_per_s=rate))
            progress.update(1)
    curve = LoaderCurve(
        points=points, measured=True,
        source=(f"measured by scalesim calibrate: one process, DataLoader batch "
                f"{args.loader_batch}, {args.loader_batches} timed batches per worker count; "
                f"{source.description}"))
    return LoaderResult(curve=curve, dataset=source.description, batch_size=args.loader_batch)


def run(ctx: DistContext, args, progress) -> LoaderResult:
    result, error = None, None
    if ctx.is_main:
        try:
            result = measure(args, progress)
        except ScalesimError as exc:
            error = str(exc)
    return agree_on_error(ctx, error, result)[0]
