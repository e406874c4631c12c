"""Processes and process groups of a calibration run, and keeping a failed run from hanging.

- One process (no torchrun): a one-rank group on an in-memory store, so every phase runs the
  same code.
- Under torchrun: the env:// rendezvous (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
  GROUP_RANK = node index). Backend ``nccl`` on GPUs, ``gloo`` on CPUs, or as overridden.
- Groups: one per node (intra-node link), one with the first rank of every node, and a gloo
  ``control`` group over all ranks for barriers and small messages (on CPU it is the world
  group); the inter-node link is timed on the world group, every rank of every server. Every
  rank creates every group, in the same order, as new_group requires.
- NCCL runs with ``NCCL_ALGO=Ring`` unless the user set it: a link level is described by its
  ring bus bandwidth (docs/model.md §2, §18), and on two nodes NCCL's tree reports a busbw above
  the NICs' line rate (nccl-tests#160, #169). Gloo's all-reduce is a ring.

Failure handling (a rank that dies or hangs must stop the whole run within a bounded time):
- every collective and barrier has ``--timeout`` (init_process_group timeout); phases end with a
  monitored barrier that names the ranks that did not arrive;
- a monitor thread per rank writes a heartbeat file (rank, pid, host, phase) every second, and
  stops its process with a message naming the phase and the rank when a peer on the same node
  has died or gone silent for ``--timeout``, or when the phase runs over ``--phase-timeout``;
- a SIGTERM (torchrun stopping the survivors after a failure) prints the phase before exiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from scalesim.calibration.options import (
    THREADS_NOTE_ENV,
    busy_threads_note,
    default_threads,
    machine_load,
    omp_threads,
    ranks_on_cpu,
)
from scalesim.calibration.state import pid_alive

from scalesim.errors import ScalesimError
from scalesim.jsonio import atomic_write_text

HEARTBEAT_S = 1.0


@dataclass
class DistContext:
    """This process's place in the run."""

    rank: int
    world: int
    local_rank: int
    local_world: int
    node: int
    nodes: int
    backend: str
    device: torch.device
    launched: bool  # under torchrun (env:// rendezvous)
    run_id: str = ""
    node_of: list[int] = field(default_factory=list)  # node index of every rank
    control: object = None  # gloo group over all ranks
    intra: object = None  # this node's group (None when one rank per node)
    inter: object = None  # first rank of every node (None when one node or not a member)
    intra_ranks: list[int] = field(default_factory=list)
    inter_ranks: list[int] = field(default_factory=list)
    coll_algorithm: str = ""  # the collective algorithm the timings belong to
    threads_note: str | None = None  # the load took cores from the default threads (said at the end)
    threads: int = 1  # torch threads this rank computes on (torch.get_num_threads)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def on_gpu(self) -> bool:
        return self.device.type == "cuda"


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        raise ScalesimError(f"environment variable {name}={os.environ[name]!r} is not a number") from None


class AgreedError(ScalesimError):
    """An error every rank raises alike (decided together, or the same flags or environment),
    in the same words on each, without a rank prefix: ``scalesim calibrate --nproc-per-node``
    shows such a line once (``cli.torchrun_output`` drops repeats). Every rank prints it: a
    rank that waited for another to say it could be stopped by torchrun first (seen on the
    H200: rank 1 failed, torchrun stopped rank 0 before it spoke, and nothing was said)."""


def shared_gpu_problem(gpu_count: int, local_world: int, environ=None) -> str | None:
    """Why ``local_world`` processes of a node cannot each have a GPU, or None. Without
    ``CUDA_VISIBLE_DEVICES`` every process sees the node's GPUs, so fewer of them than processes
    means two ranks on one GPU, which NCCL refuses ("Duplicate GPU detected", seen on a
    one-GPU H200: docs/calibration.md "GPU path"). With it set, each process may see only its
    own GPU (Slurm --gpus-per-task), so one visible GPU is fine."""
    environ = os.environ if environ is None else environ
    if local_world <= gpu_count or environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return None
    return (
        f"{local_world} processes per node but {gpu_count} GPU(s) visible: NCCL needs one "
        f"GPU per process; start at most {gpu_count} (--nproc-per-node {gpu_count}), or give "
        "each process its own GPU with CUDA_VISIBLE_DEVICES"
    )


def choose_device(requested: str, local_rank: int, local_world: int = 1) -> torch.device:
    if not ranks_on_cpu(requested, torch.cuda.is_available):
        if not torch.cuda.is_available():
            raise ScalesimError("--device cuda: no CUDA device is visible; use --device cpu")
        count = torch.cuda.device_count()
        if (problem := shared_gpu_problem(count, local_world)) is not None:
            raise AgreedError(problem)
        index = local_rank if local_rank < count else 0
        if local_rank >= count and count > 1:
            raise ScalesimError(
                f"local rank {local_rank} has no GPU ({count} visible); start "
                f"at most {count} processes per node"
            )
        # count == 1 with several local ranks: each process sees only its own GPU (Slurm
        # --gpus-per-task, CUDA_VISIBLE_DEVICES per task).
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return torch.device("cpu")


def choose_backend(requested: str, device: torch.device) -> str:
    if requested == "auto":
        return "nccl" if device.type == "cuda" else "gloo"
    if requested == "nccl" and device.type != "cuda":
        raise ScalesimError("--backend nccl needs GPUs; use --backend gloo (or auto) on CPU")
    return requested


def setup(args) -> DistContext:
    """Initialise torch.distributed (or a one-rank group) and every group the phases use."""
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    rank = _env_int("RANK", 0)
    world = _env_int("WORLD_SIZE", 1)
    local_rank = _env_int("LOCAL_RANK", 0)
    local_world = _env_int("LOCAL_WORLD_SIZE", 1)
    device = choose_device(args.device, local_rank, local_world)
    backend = choose_backend(args.backend, device)
    note = None
    if device.type == "cpu":
        load = machine_load()
        threads = args.threads or default_threads(local_world, load=load)
        torch.set_num_threads(threads)
        note = (
            None if args.threads or omp_threads(os.environ) else busy_threads_note(local_world, threads, load)
        )
        if launched and not args.threads and os.environ.get(THREADS_NOTE_ENV):
            note = os.environ[THREADS_NOTE_ENV]  # scalesim calibrate chose them, and said so
    timeout = timedelta(seconds=args.timeout)
    if backend == "nccl":
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        os.environ.setdefault("NCCL_ALGO", "Ring")
    try:
        if launched:
            kwargs = {"device_id": device} if backend == "nccl" else {}
            dist.init_process_group(backend, timeout=timeout, **kwargs)
        else:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - rendezvous failures come in many types
        if "Duplicate GPU detected" in str(exc):  # NCCL's words for two ranks on one GPU
            raise AgreedError(
                "two processes share one GPU, which NCCL refuses: start one process per GPU "
                "(--nproc-per-node at most the GPUs per node), or give each its own with "
                "CUDA_VISIBLE_DEVICES"
            ) from None
        raise ScalesimError(f"could not start torch.distributed ({backend}): {exc}") from None
    control = dist.group.WORLD if backend == "gloo" else dist.new_group(backend="gloo", timeout=timeout)
    node = _env_int("GROUP_RANK", rank // max(local_world, 1))
    node_of: list = [None] * world
    dist.all_gather_object(node_of, node, group=control)
    run_id = [uuid.uuid4().hex if rank == 0 else None]
    dist.broadcast_object_list(run_id, src=0, group=control)
    node_ids = sorted(set(node_of))
    ctx = DistContext(
        rank=rank,
        world=world,
        local_rank=local_rank,
        local_world=local_world,
        node=node,
        nodes=len(node_ids),
        backend=backend,
        device=device,
        launched=launched,
        run_id=run_id[0],
        node_of=node_of,
        control=control,
        coll_algorithm=collective_algorithm(backend),
        threads_note=note,
        threads=torch.get_num_threads(),
    )
    # Every rank creates every group in the same order.
    for n in node_ids:
        members = [r for r in range(world) if node_of[r] == n]
        group = dist.new_group(members, timeout=timeout) if len(members) > 1 else None
        if n == node:
            ctx.intra, ctx.intra_ranks = group, members
    firsts = [min(r for r in range(world) if node_of[r] == n) for n in node_ids]
    inter = dist.new_group(firsts, timeout=timeout) if len(firsts) > 1 else None
    ctx.inter_ranks = firsts
    if rank in firsts:
        ctx.inter = inter
    return ctx


def collective_algorithm(backend: str) -> str:
    """The algorithm the collective timings of ``backend`` belong to, as the profile records it."""
    if backend == "nccl":
        return f"NCCL_ALGO={os.environ.get('NCCL_ALGO', 'default')}"
    if backend == "gloo":
        return "ring"
    return ""


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def barrier(ctx: DistContext, phase: str, timeout_s: float) -> None:
    """All ranks meet; a rank missing after ``timeout_s`` is named in the error."""
    if ctx.world == 1:
        return
    try:
        dist.monitored_barrier(group=ctx.control, timeout=timedelta(seconds=timeout_s), wait_all_ranks=True)
    except RuntimeError as exc:
        raise ScalesimError(
            f"not every rank finished '{phase}' within --timeout "
            f"{timeout_s:g} s ({first_line(exc) or type(exc).__name__})"
        ) from None


def gather_object(ctx: DistContext, obj) -> list:
    """``obj`` from every rank, on every rank (control group)."""
    out: list = [None] * ctx.world
    dist.all_gather_object(out, obj, group=ctx.control)
    return out


def agree_on_error(ctx: DistContext, message: str | None, payload=None) -> list:
    """Every rank's ``payload``, on every rank; if any rank passes a ``message`` (its failure),
    every rank raises ``AgreedError`` with the first one, naming the ranks that failed."""
    everyone = gather_object(ctx, (message, payload))
    failed = [r for r, (m, _) in enumerate(everyone) if m]
    if failed:
        ranks = ", ".join(map(str, failed))
        raise AgreedError(everyone[failed[0]][0] + (f" (rank {ranks})" if ctx.world > 1 else ""))
    return [p for _, p in everyone]


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message ('' when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def raised(exc: BaseException) -> str:
    """An unexpected exception in one line: 'TypeError: its first line'."""
    return f"{type(exc).__name__}: {first_line(exc)}"


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


class RankMonitor:
    """Heartbeat, peer watch and phase time limit, on a daemon thread of every rank."""

    def __init__(self, ctx: DistContext, folder: Path, silent_s: float, phase_limit_s: float):
        self.ctx, self.folder = ctx, folder / "ranks"
        self.silent_s, self.phase_limit_s = silent_s, phase_limit_s
        self.phase, self.phase_start = "setup", time.monotonic()
        self.host = socket.gethostname()
        self.pidns = _pid_namespace()
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._old_sigterm = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="scalesim-monitor", daemon=True)

    def start(self) -> RankMonitor:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write("running")
        self._thread.start()
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def enter(self, phase: str) -> None:
        self.phase, self.phase_start = phase, time.monotonic()
        self._write("running")

    def stop(self, status: str = "done") -> None:
        with self._lock:
            self._stop.set()
            self._write_unlocked(status)
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None

    def status_file(self, rank: int) -> Path:
        return self.folder / f"rank-{rank}.json"

    def _write(self, status: str) -> None:
        with self._lock:
            if status == "running" and self._stop.is_set():
                return
            self._write_unlocked(status)

    def _write_unlocked(self, status: str) -> None:
        record = {
            "run_id": self.ctx.run_id,
            "rank": self.ctx.rank,
            "pid": os.getpid(),
            "pidns": self.pidns,
            "host": self.host,
            "phase": self.phase,
            "status": status,
            "time_unix": time.time(),
        }
        with contextlib.suppress(OSError, ScalesimError):  # a heartbeat lost is no failure
            atomic_write_text(self.status_file(self.ctx.rank), json.dumps(record))

    def peers(self) -> dict[int, dict]:
        """Status records of this run's other ranks that are visible from here."""
        out = {}
        for r in range(self.ctx.world):
            if r == self.ctx.rank:
                continue
            try:
                rec = json.loads(self.status_file(r).read_text())
            except (OSError, ValueError):
                continue
            if rec.get("run_id") == self.ctx.run_id:
                out[r] = rec
        return out

    def problem(self) -> str | None:
        """A line naming a peer that died or went silent, or None."""
        now = time.time()
        for r, rec in sorted(self.peers().items()):
            if rec.get("status") != "running":
                continue
            same_ns = rec.get("host") == self.host and rec.get("pidns") == self.pidns
            if same_ns and not pid_alive(int(rec["pid"])):
                return f"rank {r} (pid {rec['pid']}, host {rec['host']}) died during phase '{rec['phase']}'"
            if now - float(rec.get("time_unix", now)) > self.silent_s:
                return (
                    f"rank {r} (host {rec['host']}) has been silent for "
                    f"{now - rec['time_unix']:.0f} s in phase '{rec['phase']}' (hung?)"
                )
        return None

    def _loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self._write("running")
            problem = self.problem()
            if problem:
                self._abort(
                    f"{problem}; stopping the run (rank {self.ctx.rank} was in phase '{self.phase}')", 1
                )
            elapsed = time.monotonic() - self.phase_start
            if elapsed > self.phase_limit_s:
                self._abort(
                    f"phase '{self.phase}' on rank {self.ctx.rank} ran over "
                    f"--phase-timeout {self.phase_limit_s:g} s; stopping the run",
                    3,
                )

    def _abort(self, message: str, code: int) -> None:
        self._stop.set()
        self._write_unlocked("failed")
        print(f"scalesim calibration: error: {message}", file=sys.stderr, flush=True)
        os._exit(code)

    def _on_sigterm(self, signum, frame) -> None:
        if os.getpid() != self.pid:  # a forked DataLoader worker: die the default way
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self._abort(self.sigterm_text(), 143)

    def sigterm_text(self) -> str:
        """Why this rank got SIGTERM, as far as it can tell: a failed peer, or (one process)
        something outside the run: a timeout, the scheduler, kill."""
        problem = self.problem()
        if problem:
            why = f"; {problem}"
        elif self.ctx.world > 1:
            why = " (another rank failed; torchrun names it)"
        else:  # no other rank: the signal came from outside
            why = (
                " (sent from outside the run: a timeout, the job scheduler or kill; "
                "--resume keeps the phases already finished)"
            )
        return f"rank {self.ctx.rank} stopped by SIGTERM in phase '{self.phase}'{why}"


def exit_process(code: int) -> None:
    """Leave the process with ``code``; under torchrun skip interpreter teardown.

    torch's gloo and DDP objects can abort the process while being destroyed at interpreter exit
    ("terminate called without an active exception", SIGABRT) after all work is done and the
    process group is destroyed, which torchrun then reports as a failed rank. The results are
    written and flushed by then, so the rank leaves with ``os._exit``.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    if "TORCHELASTIC_RUN_ID" in os.environ or "RANK" in os.environ:
        os._exit(code)
    sys.exit(code)
