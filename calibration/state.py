"""Per-phase state in a folder next to the profile, written atomically, read back by --resume.

Each finished phase is ``phase-NAME.json`` (a PhaseRecord) carrying the *signature* of the run
that made it (processes, nodes, backend, device, model and its sizes, precision): a phase is
reused only by a run with the same signature.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from scalesim.calibration.results import PhaseRecord

from scalesim.errors import ScalesimError
from scalesim.jsonio import read_json, write_model

# Every flag that changes what a phase measures or how the profile is assembled: a resumed run
# keeps a finished phase only when all of them are the same.
SIGNATURE_FLAGS = ("model", "width", "depth", "seq_len", "vocab", "image_size", "precision",
                   "optimizer", "seed", "threads", "dataset", "batches", "micro_batch", "warmup",
                   "repeats", "ops", "min_size_kib", "max_size_mib", "size_factor", "coll_time_s",
                   "intra_link", "intra_busbw", "intra_latency", "inter_link", "inter_busbw",
                   "inter_latency", "loader_images", "loader_batch", "loader_batches",
                   "max_workers", "jitter_steps", "slow_threshold", "noise_steps", "noise_accum")


def state_folder(args) -> Path:
    return Path(args.state_dir) if args.state_dir else Path(f"{args.out}.state")


def signature(args, world: int, nodes: int, local_world: int, backend: str,
              device_type: str) -> dict[str, Any]:
    sig = {"world": world, "nodes": nodes, "local_world": local_world, "backend": backend,
           "device": device_type}
    sig.update({flag: getattr(args, flag) for flag in SIGNATURE_FLAGS})
    return sig


def phase_path(folder: Path, phase: str) -> Path:
    return folder / f"phase-{phase}.json"


def save(folder: Path, record: PhaseRecord) -> None:
    write_model(phase_path(folder, record.phase), record)


def load_matching(folder: Path, phases, sig: dict[str, Any]) -> tuple[dict[str, PhaseRecord],
                                                                       list[str]]:
    """Stored records whose signature matches ``sig``; also notes on the ones left out."""
    records, notes = {}, []
    for phase in phases:
        path = phase_path(folder, phase)
        if not path.exists():
            continue
        try:
            record = PhaseRecord.model_validate(read_json(path))
            record.parsed()
        except (ScalesimError, ValidationError):
            notes.append(f"{path}: unreadable phase state, running '{phase}' again")
            continue
        if record.signature != sig:
            changed = sorted(k for k in set(sig) | set(record.signature)
                             if sig.get(k) != record.signature.get(k))
            notes.append(f"phase '{phase}' in {folder} was measured with other settings "
                         f"({', '.join(changed)}); not reused")
            continue
        records[phase] = record
    return records, notes


def clear(folder: Path, phase: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        phase_path(folder, phase).unlink()
