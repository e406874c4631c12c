"""Per-phase state in a folder next to the profile, written atomically, read back by --resume.

Each finished phase is ``phase-NAME.json`` (a PhaseRecord) carrying the *signature* of the run
that made it (processes, nodes, backend, device, model and its sizes, precision): a phase is
reused only by a run with the same signature.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from scalesim.calibration.results import PhaseRecord

from scalesim.errors import ScalesimError
from scalesim.figures import count
from scalesim.jsonio import read_json, write_model

# Every flag that changes what a phase measures or how the profile is assembled: a resumed run
# keeps a finished phase only when all of them are the same. The torch threads are in the
# signature as every rank resolved them (``signature``'s ``threads``), not as ``--threads``
# was given: without it they follow the machine's load (``options.default_threads``).
SIGNATURE_FLAGS = (
    "model",
    "width",
    "depth",
    "seq_len",
    "vocab",
    "image_size",
    "precision",
    "optimizer",
    "seed",
    "dataset",
    "batches",
    "micro_batch",
    "warmup",
    "repeats",
    "ops",
    "min_size_kib",
    "max_size_mib",
    "size_factor",
    "coll_time_s",
    "intra_link",
    "intra_busbw",
    "intra_latency",
    "inter_link",
    "inter_busbw",
    "inter_latency",
    "loader_images",
    "loader_batch",
    "loader_batches",
    "max_workers",
    "jitter_steps",
    "slow_threshold",
    "noise_steps",
    "noise_accum",
    "block_hidden",
    "block_repeats",
    "block_heads",
    "block_ffn",
    "block_seq",
    "block_batch",
    "block_tp",
    "block_model",
)


def state_folder(args) -> Path:
    return Path(args.state_dir) if args.state_dir else Path(f"{args.out}.state")


def signature(
    args,
    world: int,
    nodes: int,
    local_world: int,
    backend: str,
    device_type: str,
    threads: list[int] | None = None,
) -> dict[str, Any]:
    """The run's setup and flags; ``threads``: the torch threads each rank computes on, by rank."""
    sig = {
        "world": world,
        "nodes": nodes,
        "local_world": local_world,
        "backend": backend,
        "device": device_type,
        "threads": threads,
    }
    sig.update({flag: getattr(args, flag) for flag in SIGNATURE_FLAGS})
    return sig


def threads_text(threads) -> str:
    """'2 torch threads per process', '2,1 torch threads (by rank)', or 'an unrecorded number
    of torch threads' (a state folder written before the signature kept them)."""
    if not threads:
        return "an unrecorded number of torch threads"
    if len(set(threads)) == 1:
        return f"{count(threads[0], 'torch thread')} per process"
    return f"{','.join(map(str, threads))} torch threads (by rank)"


def phase_path(folder: Path, phase: str) -> Path:
    return folder / f"phase-{phase}.json"


def save(folder: Path, record: PhaseRecord) -> None:
    write_model(phase_path(folder, record.phase), record)


def load_matching(folder: Path, phases, sig: dict[str, Any]) -> tuple[dict[str, PhaseRecord], list[str]]:
    """Stored records whose signature matches ``sig``; also notes on the ones left out."""
    records, notes, rethreaded = {}, [], []
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
            changed = sorted(
                k for k in set(sig) | set(record.signature) if sig.get(k) != record.signature.get(k)
            )
            notes.append(
                f"phase '{phase}' in {folder} was measured with other settings "
                f"({', '.join(changed)}); not reused"
            )
            if "threads" in changed:
                rethreaded.append((phase, tuple(record.signature.get("threads") or ())))
            continue
        records[phase] = record
    for then in dict.fromkeys(threads for _, threads in rethreaded):
        names = ", ".join(phase for phase, threads in rethreaded if threads == then)
        notes.append(
            f"not reused because the threads changed: {names} measured with "
            f"{threads_text(then)}, this run has "
            f"{threads_text(sig.get('threads'))} (the load changed the default, or --threads "
            "did; give --threads N to keep one count)"
        )
    return records, notes


LOCK_NAME = "lock"


class FolderLock:
    """An exclusive ``fcntl.flock`` on ``FOLDER/lock``, held for a whole calibration so two runs
    cannot share one state folder (and one ``--out``). The kernel drops it when the process ends,
    however it ends; the file keeps the holder's pid, host and start time for the next one."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ScalesimError(
                f"{self.folder}: cannot use it as the calibration state folder "
                f"({exc.strerror or exc}); give --state-dir or another --out"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ScalesimError(
                f"{self.folder} is in use by another calibration ({holder}); wait "
                "for it to finish or give another --out or --state-dir"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise ScalesimError(f"{self.path}: cannot lock it ({exc.strerror or exc})") from None
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists in this pid namespace (one of another user's
    counts: ``kill(pid, 0)`` is refused, not answered 'no such process')."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"pid {int(record['pid'])} on {record['host']} since {record['since_utc']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not written its pid yet"


def clear(folder: Path, phase: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        phase_path(folder, phase).unlink()
