"""An emulated two-server cluster on one Linux machine, and the experiment that runs on it.

Two network namespaces play two servers. A veth pair joins them; each end's egress is shaped by
a token-bucket filter (``tc qdisc ... tbf``) to ``rate_mbit`` Mbit/s, so the inter-server link is
slow in both directions, while processes inside one namespace talk over its own loopback (the
fast intra-server link). Addresses exist only inside the namespaces created here (default
10.231.0.1/24 and 10.231.0.2/24) and on their loopbacks.

The namespaces are always removed: ``EmulatedCluster`` is a context manager, ``close`` runs in
``finally`` and at interpreter exit (atexit), and every run's names carry its pid
(``scalesim-<pid>-<n>-a``) so ``cleanup_stale`` can remove what a killed run left behind without
touching a live run's namespaces.

Script mode (``python benchmarks/netns_cluster.py``; root and iproute2 needed) runs the whole
experiment of issue 4: calibrate both links with ``scalesim.calibration`` under ``torchrun
--nnodes=2``, predict with ``scalesim.predict``, measure real DDP steps with
``scalesim.calibration.ddp_bench`` for 1 process, 2 processes in one server and 1 + 1 processes
across the two servers, and write the predicted-vs-measured table as JSON and markdown.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "scalesim"
DEFAULT_SUBNET = "10.231.0"  # /24 used only inside the namespaces created here
DEFAULT_RATE_MBIT = 300.0
RDZV_PORT = 29400  # each namespace has its own port space, so a fixed port cannot collide
_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-[ab]$")
_VETH_RE = re.compile(r"^ss(\d+)n(\d+)[ab]$")
_counter = itertools.count()


class ClusterError(RuntimeError):
    """A namespace, link or launch step failed; the message is one line saying which and why."""


def _run(argv: list[str], timeout_s: float = 30.0, check: bool = True) -> str:
    """Run a short command; stdout on success, ClusterError with its stderr otherwise."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise ClusterError(f"'{argv[0]}' is not installed (Debian: apt-get install iproute2)") \
            from None
    except subprocess.TimeoutExpired:
        raise ClusterError(f"'{' '.join(argv)}' did not finish in {timeout_s:g} s") from None
    if check and done.returncode != 0:
        err = (done.stderr or done.stdout).strip().splitlines()
        raise ClusterError(f"'{' '.join(argv)}' failed: {err[-1] if err else done.returncode}")
    return done.stdout


def namespaces_unavailable_reason() -> str | None:
    """None if network namespaces, veth and tc can be used here, else why not (one line)."""
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (Debian: apt-get install iproute2)"
    if os.geteuid() != 0:
        return "creating network namespaces needs root (CI runs as root)"
    probe = f"{PREFIX}-{os.getpid()}-probe{next(_counter)}"
    try:
        _run(["ip", "netns", "add", probe])
    except ClusterError as exc:
        return f"cannot create a network namespace here: {exc}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_namespaces(prefix: str = PREFIX) -> list[str]:
    """Names of the network namespaces this harness creates (``prefix-*``) that exist now."""
    out = _run(["ip", "netns", "list"], check=False)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n.startswith(prefix + "-")]


def _kill_namespace_processes(ns: str) -> None:
    """SIGKILL the processes still inside ``ns`` (only ever a namespace this harness made)."""
    for token in _run(["ip", "netns", "pids", ns], check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(token), signal.SIGKILL)


def _delete_namespace(ns: str) -> None:
    _kill_namespace_processes(ns)
    _run(["ip", "netns", "del", ns], check=False)


def cleanup_stale() -> list[str]:
    """Remove namespaces and root-namespace veths left by harness runs whose process is dead.

    Returns what was removed. Namespaces of a live run (its pid still exists) are left alone.
    """
    removed = []
    for ns in list_namespaces():
        m = _NAME_RE.match(ns)
        if m and not _pid_alive(int(m.group(1))):
            _delete_namespace(ns)
            removed.append(ns)
    for line in _run(["ip", "-o", "link", "show"], check=False).splitlines():
        parts = line.split(":")
        name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
        m = _VETH_RE.match(name)
        if m and not _pid_alive(int(m.group(1))):
            _run(["ip", "link", "del", name], check=False)
            removed.append(name)
    return removed


@dataclass(frozen=True)
class Server:
    """One emulated server: a namespace, its end of the veth and its address there."""

    netns: str
    ifname: str
    addr: str


@dataclass
class EmulatedCluster:
    """Two namespaces joined by a veth shaped to ``rate_mbit`` Mbit/s each way.

    ``burst_bytes`` is the token bucket's depth and ``tbf_latency_ms`` how long a packet may
    queue before tbf drops it.
    """

    rate_mbit: float = DEFAULT_RATE_MBIT
    subnet: str = DEFAULT_SUBNET
    burst_bytes: int = 64 * 1024
    tbf_latency_ms: float = 50.0
    servers: tuple[Server, ...] = field(default=(), init=False)
    _open: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.rate_mbit > 0:
            raise ClusterError(f"link rate must be positive Mbit/s, got {self.rate_mbit}")
        if not re.fullmatch(r"\d{1,3}\.\d{1,3}\.\d{1,3}", self.subnet):
            raise ClusterError(f"subnet must be three octets like 10.231.0, got '{self.subnet}'")
        pid, n = os.getpid(), next(_counter)
        self.servers = tuple(
            Server(f"{PREFIX}-{pid}-{n}-{side}", f"ss{pid}n{n}{side}", f"{self.subnet}.{i + 1}")
            for i, side in enumerate("ab")
        )

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> EmulatedCluster:
        """Create both namespaces, the shaped veth pair, addresses and loopbacks."""
        if self._open:
            return self
        atexit.register(self.close)
        self._open = True
        try:
            a, b = self.servers
            for s in self.servers:
                _run(["ip", "netns", "add", s.netns])
            # Both veth ends are created directly inside their namespaces: nothing of this run
            # ever sits in the root namespace.
            _run(["ip", "link", "add", a.ifname, "netns", a.netns, "type", "veth",
                  "peer", "name", b.ifname, "netns", b.netns])
            for s in self.servers:
                _run(["ip", "-n", s.netns, "addr", "add", f"{s.addr}/24", "dev", s.ifname])
                _run(["ip", "-n", s.netns, "link", "set", "lo", "up"])
                _run(["ip", "-n", s.netns, "link", "set", s.ifname, "up"])
                _run(["tc", "-n", s.netns, "qdisc", "add", "dev", s.ifname, "root", "tbf",
                      "rate", f"{self.rate_mbit:g}mbit", "burst", str(self.burst_bytes),
                      "latency", f"{self.tbf_latency_ms:g}ms"])
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Kill what runs inside, delete both namespaces (the veth goes with them). Idempotent."""
        if not self._open:
            return
        self._open = False
        for s in self.servers:
            _delete_namespace(s.netns)
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def __enter__(self) -> EmulatedCluster:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def names(self) -> list[str]:
        return [s.netns for s in self.servers]

    # -- running things inside ----------------------------------------------------------------
    def exec_argv(self, server: int, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.servers[server].netns, *argv]

    def qdisc(self, server: int) -> str:
        """``tc qdisc show`` of one server's veth end."""
        s = self.servers[server]
        return _run(["tc", "-n", s.netns, "qdisc", "show", "dev", s.ifname]).strip()

    def env(self, server: int, threads: int = 1) -> dict[str, str]:
        """Environment for processes in ``server``: gloo on the veth address, ``threads`` each."""
        env = dict(os.environ)
        env.update(GLOO_SOCKET_IFNAME=self.servers[server].ifname, OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
        return env

    def torchrun_argv(self, server: int, nodes: int, nproc_per_node: int, target: list[str],
                      run_id: str) -> list[str]:
        """``torchrun`` for one node of a ``nodes``-server job (c10d rendezvous on server 0)."""
        me = self.servers[server]
        if nodes == 1:
            rdzv = [f"--rdzv-endpoint=127.0.0.1:{RDZV_PORT}", f"--local-addr={me.addr}"]
        else:
            rdzv = [f"--rdzv-endpoint={self.servers[0].addr}:{RDZV_PORT}",
                    f"--rdzv-conf=is_host={1 if server == 0 else 0}", f"--local-addr={me.addr}"]
        return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}",
                f"--nproc-per-node={nproc_per_node}", "--rdzv-backend=c10d",
                f"--rdzv-id={run_id}", *rdzv, *target]

    def launch(self, nodes: int, nproc_per_node: int, target: list[str], timeout_s: float = 300.0,
               threads: int = 1, cwd: str | None = None) -> list[str]:
        """Run ``torchrun ... target`` on the first ``nodes`` servers at once; their outputs.

        ``target`` is what follows torchrun's own flags (``-m module args`` or ``script args``).
        Raises ClusterError (with the tail of the failing node's output) on failure or timeout.
        """
        if nodes not in (1, 2):
            raise ClusterError(f"this cluster has 2 servers; asked for {nodes}")
        run_id = f"{PREFIX}{os.getpid()}x{next(_counter)}"
        procs = []
        try:
            for i in range(nodes):
                argv = self.exec_argv(i, self.torchrun_argv(i, nodes, nproc_per_node, target,
                                                             run_id))
                procs.append(subprocess.Popen(
                    argv, env=self.env(i, threads), cwd=cwd, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, start_new_session=True))
            deadline = time.monotonic() + timeout_s
            outputs = []
            for i, proc in enumerate(procs):
                try:
                    out, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 1.0))
                except subprocess.TimeoutExpired:
                    raise ClusterError(f"torchrun on server {i} did not finish in "
                                       f"{timeout_s:g} s") from None
                outputs.append(out)
                if proc.returncode != 0:
                    tail = " | ".join(out.strip().splitlines()[-6:])
                    raise ClusterError(f"torchrun on server {i} exited {proc.returncode}: {tail}")
            return outputs
        finally:
            for proc in procs:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    # -- link checks --------------------------------------------------------------------------
    def transfer_Mbps(self, src: int, dst: int, size_bytes: int = 16 * 2**20,
                      timeout_s: float = 60.0) -> float:
        """Measured TCP goodput, Mbit/s, sending ``size_bytes`` from server ``src`` to ``dst``.

        ``src == dst`` measures the server's loopback (the intra-server link).
        """
        addr = "127.0.0.1" if src == dst else self.servers[dst].addr
        recv = subprocess.Popen(
            self.exec_argv(dst, [sys.executable, __file__, "_recv", addr, str(size_bytes)]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            port = recv.stdout.readline().strip()
            if not port.isdigit():
                raise ClusterError(f"receiver did not start: {recv.stderr.read().strip()[-200:]}")
            _run(self.exec_argv(src, [sys.executable, __file__, "_send", addr, port,
                                      str(size_bytes)]), timeout_s=timeout_s)
            out, err = recv.communicate(timeout=timeout_s)
            if recv.returncode != 0:
                raise ClusterError(f"receiver failed: {err.strip()[-200:]}")
            return float(json.loads(out)["Mbps"])
        finally:
            if recv.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(recv.pid, signal.SIGKILL)
                recv.wait()


def _receive(addr: str, size_bytes: int) -> None:
    """Accept one connection, read ``size_bytes``, print goodput first-byte-to-last as JSON."""
    srv = socket.socket()
    srv.bind((addr, 0))
    srv.listen(1)
    print(srv.getsockname()[1], flush=True)
    conn, _ = srv.accept()
    got, start = 0, None
    while got < size_bytes:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        if start is None:
            start = time.perf_counter()
        got += len(chunk)
    elapsed_s = time.perf_counter() - start
    conn.sendall(b"k")
    print(json.dumps({"bytes": got, "seconds": elapsed_s, "Mbps": got * 8 / elapsed_s / 1e6}))


def _send(addr: str, port: int, size_bytes: int) -> None:
    conn = socket.create_connection((addr, port))
    block = b"\0" * (1 << 20)
    left = size_bytes
    while left > 0:
        n = min(left, len(block))
        conn.sendall(block[:n])
        left -= n
    conn.recv(1)


def _allreduce_worker(out_dir: str, numel: int) -> None:
    """torchrun worker: one gloo all-reduce of ones; writes rank, world, node and the sum."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.ones(numel)
    start = time.perf_counter()
    dist.all_reduce(t)
    elapsed_s = time.perf_counter() - start
    record = {"rank": rank, "world": world, "node": int(os.environ["GROUP_RANK"]),
              "sum": float(t[0]), "uniform": bool(torch.all(t == t[0])), "seconds": elapsed_s}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))
    dist.destroy_process_group()


def allreduce_across(cluster: EmulatedCluster, nproc_per_node: int, out_dir: str,
                     numel: int = 2**18) -> list[dict]:
    """Run ``_allreduce_worker`` as one torchrun job on both servers; each rank's record."""
    cluster.launch(2, nproc_per_node, [__file__, "_allreduce", out_dir, str(numel)],
                   timeout_s=180.0)
    return [json.loads(p.read_text()) for p in sorted(Path(out_dir).glob("rank*.json"))]


def _internal_main(argv: list[str]) -> bool:
    """Helper entry points run inside the namespaces; True if ``argv`` was one of them."""
    if not argv or not argv[0].startswith("_"):
        return False
    cmd, rest = argv[0], argv[1:]
    if cmd == "_recv":
        _receive(rest[0], int(rest[1]))
    elif cmd == "_send":
        _send(rest[0], int(rest[1]), int(rest[2]))
    elif cmd == "_allreduce":
        _allreduce_worker(rest[0], int(rest[1]))
    else:
        raise SystemExit(f"unknown internal command {cmd}")
    return True


if __name__ == "__main__":
    if not _internal_main(sys.argv[1:]):
        raise SystemExit("experiment mode: not written yet")
