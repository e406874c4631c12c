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
--nnodes=2``; then, each round, calibrate one server's compute, predict with
``scalesim.predict`` and measure real DDP steps with ``scalesim.calibration.ddp_bench`` for 1
process, 2 processes in one server and 1 + 1 processes across the two servers; write the
predicted-vs-measured table (medians over rounds) as JSON and markdown.
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
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "scalesim"
DEFAULT_SUBNET = "10.231.0"  # /24 used only inside the namespaces created here
DEFAULT_RATE_MBIT = 300.0
RDZV_PORT = 29400  # each namespace has its own port space, so a fixed port cannot collide
_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(?:\d+-[ab]|probe\d+)$")
_VETH_RE = re.compile(r"^ss(\d+)n(\d+)[ab]$")
_LOG_LINE = re.compile(r"^\[?[WIE]\d{4} ")  # glog-style lines of torch / c10d
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
        _run(["ip", "netns", "exec", probe, "ip", "link", "set", "lo", "up"])
    except ClusterError as exc:
        return f"cannot create or enter a network namespace here: {exc}"
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return None


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
    from scalesim.calibration.state import pid_alive

    removed = []
    for ns in list_namespaces():
        m = _NAME_RE.match(ns)
        if m and not pid_alive(int(m.group(1))):
            _delete_namespace(ns)
            removed.append(ns)
    for line in _run(["ip", "-o", "link", "show"], check=False).splitlines():
        parts = line.split(":")
        name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
        m = _VETH_RE.match(name)
        if m and not pid_alive(int(m.group(1))):
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
    queue before tbf drops it. ``mtu_bytes``: the veth's MTU; jumbo frames (9000, as in many
    datacenter networks) cut the per-packet CPU cost of the emulated link, which on a
    two-core machine otherwise competes with training compute (about 30 ms of CPU per 4 MB
    all-reduce at 1500 against 4 ms at 9000, measured).
    """

    rate_mbit: float = DEFAULT_RATE_MBIT
    subnet: str = DEFAULT_SUBNET
    mtu_bytes: int = 9000
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
                _run(["ip", "-n", s.netns, "link", "set", s.ifname, "mtu", str(self.mtu_bytes),
                      "up"])
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
        As soon as one node fails, or at ``timeout_s``, everything left running in the used
        namespaces is killed (torchrun starts its workers in sessions of their own) and
        ClusterError says which node failed and its error lines.
        """
        if nodes not in (1, 2):
            raise ClusterError(f"this cluster has 2 servers; asked for {nodes}")
        run_id = f"{PREFIX}{os.getpid()}x{next(_counter)}"
        procs, logs = [], []
        with contextlib.ExitStack() as stack:
            stack.callback(self._reap, procs, nodes)
            for i in range(nodes):
                argv = self.exec_argv(i, self.torchrun_argv(i, nodes, nproc_per_node, target,
                                                             run_id))
                logs.append(stack.enter_context(tempfile.TemporaryFile(mode="w+")))
                procs.append(subprocess.Popen(argv, env=self.env(i, threads), cwd=cwd,
                                              stdout=logs[-1], stderr=subprocess.STDOUT,
                                              text=True, start_new_session=True))
            deadline = time.monotonic() + timeout_s
            while True:
                codes = [proc.poll() for proc in procs]
                failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
                if failed:
                    i = failed[0]
                    raise ClusterError(f"torchrun on server {i} exited {codes[i]}: "
                                       f"{_failure_summary(_read(logs[i]))}")
                if all(code == 0 for code in codes):
                    return [_read(log) for log in logs]
                if time.monotonic() > deadline:
                    late = [i for i, code in enumerate(codes) if code is None]
                    raise ClusterError(f"torchrun on server(s) {late} did not finish in "
                                       f"{timeout_s:g} s")
                time.sleep(0.1)

    def _reap(self, procs: list[subprocess.Popen], nodes: int) -> None:
        """After a launch: if any node failed or runs on, kill all in the used namespaces."""
        if any(proc.poll() is None or proc.returncode for proc in procs):
            for i in range(nodes):
                _kill_namespace_processes(self.servers[i].netns)
        for proc in procs:
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


def _read(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


def _failure_summary(output: str) -> str:
    """Why a torchrun failed: its workers' error lines (or last lines), without torchrun's
    own log lines and traceback, which follow its "failed (exitcode ...)" line."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    cut = next((i for i, ln in enumerate(lines) if "failed (exitcode" in ln), len(lines))
    worker = [ln.strip() for ln in lines[:cut]
              if not _LOG_LINE.match(ln) and not ln.startswith(" ")]
    errors = [ln for ln in worker if "error" in ln.lower()]
    picked = errors[:4] or worker[-4:] or [ln.strip() for ln in lines[-6:]]
    return " | ".join(dict.fromkeys(picked))


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


# =============================================================================================
# The experiment: calibrate -> predict -> measure on the emulated cluster
# =============================================================================================


@dataclass(frozen=True)
class Layout:
    """Where the data-parallel processes of one measured point run."""

    label: str
    servers: int
    per_server: int

    @property
    def devices(self) -> int:
        return self.servers * self.per_server


def layouts_for(cores: int) -> list[Layout]:
    """1, 2 in one server, 1 + 1 across; 2 + 2 across only with 4+ cores (one core each)."""
    out = [Layout("1 process", 1, 1), Layout("2 processes in one server", 1, 2),
           Layout("1 + 1 processes across two servers", 2, 1)]
    if cores >= 4:
        out.append(Layout("2 + 2 processes across two servers", 2, 2))
    return out


@dataclass
class ExperimentConfig:
    """What the experiment runs. Sizes: built-in MLP of ``width`` x ``depth`` (512 x 4: 1.06 M
    parameters, 4.2 MB of fp32 gradients), ``batch`` samples per process per step."""

    rate_mbit: float = DEFAULT_RATE_MBIT
    model: str = "mlp"
    width: int = 512
    depth: int = 4
    batch: int = 1024
    compute_batches: tuple[int, ...] = (128, 256, 512, 1024)
    compute_repeats: int = 10
    steps: int = 30
    warmup: int = 5
    rounds: int = 5
    # Largest message of the link calibration, MiB (--max-size-mib; --quick's 8 by default).
    # Over the shaped veth an all-ranks ring all-reduce of S bytes moves 1.5 S per rank: 8 MiB
    # takes about 1 s at 100 Mbit/s, and each size is called 8 times per op.
    link_max_size_mib: float = 8.0
    timeout_s: float = 300.0
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)

    def model_flags(self) -> list[str]:
        return ["--model", self.model, "--width", str(self.width), "--depth", str(self.depth),
                "--threads", "1"]


def calibrate_links(cluster: EmulatedCluster, cfg: ExperimentConfig, work: Path):
    """Both links, measured: ``torchrun --nnodes=2 --nproc-per-node=2`` over both namespaces,
    phase ``collectives`` (intra-server groups on loopback, inter-server group over the shaped
    veth) and a tiny ``compute`` phase that the profile format requires (its numbers are not
    used: ``calibrate_compute`` times compute)."""
    from scalesim.profiles import load_profile

    path = work / "profile-links.json"
    cluster.launch(2, 2, ["-m", "scalesim.calibration", "--quick", "--phases",
                          "compute,collectives", "--batches", "16,256",
                          "--max-size-mib", f"{cfg.link_max_size_mib:g}", "--out", str(path),
                          "--state-dir", str(work / "state-links"), *_calibration_flags(cfg)],
                   timeout_s=cfg.timeout_s)
    return load_profile(path)


def calibrate_compute(cluster: EmulatedCluster, cfg: ExperimentConfig, work: Path, tag: str = ""):
    """One server's compute: two processes in server a, phases ``compute``
    (``cfg.compute_batches``, plus the co-location timing: rank 0 with both busy and alone) and
    ``jitter`` at ``cfg.batch``, one thread each, as every measured process has.

    Not four ranks over both servers: both emulated servers share this machine's cores, and four
    processes timing compute at once on two cores is no layout the experiment runs."""
    from scalesim.profiles import load_profile

    path = work / f"profile-compute{tag}.json"
    batches = ",".join(str(b) for b in cfg.compute_batches)
    cluster.launch(1, 2, ["-m", "scalesim.calibration", "--phases", "compute,jitter",
                          "--batches", batches, "--micro-batch", str(cfg.batch),
                          "--repeats", str(cfg.compute_repeats), "--warmup", "3",
                          "--jitter-steps", "20", "--out", str(path),
                          "--state-dir", str(work / f"state-compute{tag}"),
                          *_calibration_flags(cfg)],
                   timeout_s=cfg.timeout_s)
    return load_profile(path)


def _calibration_flags(cfg: ExperimentConfig) -> list[str]:
    return [*cfg.model_flags(), "--no-progress", "--optimizer", "adam"]


def combine_profiles(compute_profile, links_profile):
    """``compute_profile`` with the links (and server layout) of ``links_profile``."""
    hw = compute_profile.hardware.model_copy(update={
        "devices_per_node": links_profile.hardware.devices_per_node,
        "intra_node": links_profile.hardware.intra_node,
        "inter_node": links_profile.hardware.inter_node,
    })
    notes = [*compute_profile.notes,
             "links and server layout from a second calibration run: "
             + "; ".join(links_profile.notes[:1])]
    fingerprint = compute_profile.fingerprint.model_copy(update={
        "device_count": links_profile.fingerprint.device_count,
        "nodes": links_profile.fingerprint.nodes})
    return compute_profile.model_copy(update={
        "name": f"emulated cluster: {compute_profile.workload.name}", "hardware": hw,
        "links": links_profile.links, "fingerprint": fingerprint, "notes": notes})


def links_measured(profile) -> dict[str, bool]:
    """Which link levels the profile measured (both must be True for the experiment)."""
    return {link.level: link.measured for link in profile.links}


def predict_layouts(profile, layouts: list[Layout], batch: int) -> list:
    """One scalesim Prediction per layout, weak scaling at ``batch`` per process."""
    from scalesim.predict import predict
    from scalesim.schemas import Scenario

    rows = []
    for layout in layouts:
        scenario = Scenario(devices=[layout.devices], devices_per_node=layout.per_server,
                            micro_batch=batch)
        rows.append(predict(profile, scenario)[0])
    return rows


def measure_round(cluster: EmulatedCluster, layouts: list[Layout], cfg: ExperimentConfig,
                  work: Path, tag: str = "") -> list[dict]:
    """Real DDP steps (``scalesim.calibration.ddp_bench``) for every layout in turn: per layout
    ``step_time_s`` (median over the timed steps of the slowest rank's step), world size and
    threads."""
    result = []
    for i, layout in enumerate(layouts):
        out = work / f"ddp-{i}{tag}.json"
        cluster.launch(layout.servers, layout.per_server, [
            "-m", "scalesim.calibration.ddp_bench", *cfg.model_flags(), "--batch",
            str(cfg.batch), "--steps", str(cfg.steps), "--warmup", str(cfg.warmup),
            "--device", "cpu", "--backend", "gloo", "--out", str(out)],
            timeout_s=cfg.timeout_s)
        run = json.loads(out.read_text())
        result.append({key: run[key] for key in ("step_time_s", "world_size", "threads")})
    return result


def knee_of(layouts: list[Layout], efficiency: list[float], min_drop: float = 0.10):
    """``scalesim.knee.find_knee`` over the layouts (in order), or None; the seed's knee is a
    drop of at least ``min_drop`` where the curve crosses from one server to two."""
    from scalesim.knee import find_knee

    return find_knee([lay.devices for lay in layouts], [lay.servers for lay in layouts],
                     efficiency, min_drop=min_drop)


def compare(layouts: list[Layout], rounds: list[tuple[list, list[dict]]]) -> dict:
    """Rows of predicted vs measured step time and efficiency, and both curves' knees.

    ``rounds`` holds, per round, the predictions from that round's calibration and the DDP steps
    measured right after it. Every figure is taken within a round and then the median over
    rounds, so a drift of the machine's speed between rounds (other tenants of a shared VM) hits
    a prediction and its measurement alike. Measured efficiency (weak scaling: same batch per
    process) is ``t_1 / t_p`` of the round.
    """
    med = statistics.median
    rows = []
    for i, layout in enumerate(layouts):
        pred = [r_pred[i] for r_pred, _ in rounds]
        meas = [r_meas[i]["step_time_s"] for _, r_meas in rounds]
        meas_eff = [r_meas[0]["step_time_s"] / r_meas[i]["step_time_s"] for _, r_meas in rounds]
        rows.append({
            "layout": layout.label, "servers": layout.servers, "per_server": layout.per_server,
            "devices": layout.devices,
            "predicted_step_s": med(p.step_time_s for p in pred), "measured_step_s": med(meas),
            "step_error": med(p.step_time_s / m - 1.0 for p, m in zip(pred, meas, strict=True)),
            "predicted_efficiency": med(p.efficiency for p in pred),
            "measured_efficiency": med(meas_eff),
            "efficiency_error_points": med(100.0 * (p.efficiency - e)
                                           for p, e in zip(pred, meas_eff, strict=True)),
            "predicted_compute_s": med(p.compute_s for p in pred),
            "predicted_exposed_comm_s": med(p.exposed_comm_s for p in pred),
            "predicted_straggler_s": med(p.straggler_s for p in pred),
            "predicted_round_step_times_s": [p.step_time_s for p in pred],
            "measured_round_step_times_s": meas,
        })
    knees = {}
    for key in ("predicted", "measured"):
        knee = knee_of(layouts, [r[f"{key}_efficiency"] for r in rows])
        knees[key] = None if knee is None else {
            "before": layouts[knee.index - 1].label, "after": layouts[knee.index].label,
            "efficiency_drop": knee.efficiency_drop, "crosses_boundary": knee.crosses_boundary}
    return {
        "rows": rows, "knee": knees,
        "max_abs_step_error": max(abs(r["step_error"]) for r in rows),
        "max_abs_efficiency_error_points": max(abs(r["efficiency_error_points"]) for r in rows),
    }


def render_markdown(report: dict) -> str:
    """The predicted-vs-measured table and the knees, as markdown."""
    c = report["config"]
    lines = [
        f"Measured {report['date_utc']} on {report['machine']}; load average before: "
        f"{report['load_before']}, after: {report['load_after']}.",
        f"Model {c['model']} width {c['width']} depth {c['depth']} "
        f"({report['params']:,} parameters, {report['gradient_bytes'] / 1e6:.1f} MB gradients), "
        f"batch {c['batch']} per process, 1 thread per process; veth shaped to "
        f"{c['rate_mbit']:g} Mbit/s (measured {report['veth_Mbps']:.0f} Mbit/s; loopback "
        f"{report['loopback_Mbps']:.0f} Mbit/s). Calibrated links: intra-server "
        f"{report['intra_busbw_GBps']:.3f} GB/s busbw, inter-server "
        f"{report['inter_busbw_GBps']:.4f} GB/s busbw.",
        "",
        "| layout | predicted step ms | measured step ms | error | predicted eff. | "
        "measured eff. | eff. error (points) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["comparison"]["rows"]:
        lines.append(
            f"| {r['layout']} | {r['predicted_step_s'] * 1e3:.1f} | "
            f"{r['measured_step_s'] * 1e3:.1f} | {r['step_error']:+.1%} | "
            f"{r['predicted_efficiency']:.1%} | {r['measured_efficiency']:.1%} | "
            f"{r['efficiency_error_points']:+.1f} |")
    lines.append("")
    for key, knee in report["comparison"]["knee"].items():
        if knee is None:
            lines.append(f"- {key} knee: none (no efficiency drop of 10 points or more)")
        else:
            where = "at the server boundary" if knee["crosses_boundary"] else "inside a server"
            lines.append(f"- {key} knee: {knee['before']} -> {knee['after']}, efficiency "
                         f"-{knee['efficiency_drop']:.1%}, {where}")
    comp = report["comparison"]
    spreads = ", ".join(
        f"{(max(t) - min(t)) / statistics.median(t):.0%}"
        for t in (r["measured_round_step_times_s"] for r in comp["rows"]))
    cal = ", ".join("n/a" if x is None else f"{x:.0%}" for x in report["calibration_spread"])
    colo = ", ".join(f"{x:+.1%}" for x in report["colocation_slowdown"])
    lines.append(
        f"- noise: compute calibration IQR / median at batch {c['batch']}, per round: {cal}; "
        f"measured rounds' range / median per layout: {spreads}; co-location slowdown used, per "
        f"round: {colo} (raw: {'; '.join(report['colocation_note'])})")
    lines.append(f"- largest step-time error {comp['max_abs_step_error']:.1%} (target 10%), "
                 f"largest efficiency error {comp['max_abs_efficiency_error_points']:.1f} points "
                 "(target 5)")
    return "\n".join(lines) + "\n"


def calibration_spread(profile, batch: int) -> float | None:
    """Interquartile range / median of the compute point at ``batch`` (how noisy the machine
    was while calibrating), or None when that size was not timed."""
    point = next((p for p in profile.compute.points if p.micro_batch == batch), None)
    return None if point is None else point.spread_s / point.time_s


def _load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run_experiment(cfg: ExperimentConfig, work: Path, cluster: EmulatedCluster | None = None,
                   log=print) -> tuple[dict, object]:
    """Calibrate, predict and measure on ``cluster`` (a new one if None): (report, profile)."""
    from datetime import UTC, datetime

    work.mkdir(parents=True, exist_ok=True)
    load_before = _load_average()
    own = cluster is None
    cluster = cluster or EmulatedCluster(rate_mbit=cfg.rate_mbit)
    try:
        cluster.open()
        veth = cluster.transfer_Mbps(0, 1)
        loopback = cluster.transfer_Mbps(0, 0, size_bytes=64 * 2**20)
        log(f"links: veth {veth:.0f} Mbit/s (tc {cluster.rate_mbit:g}), loopback "
            f"{loopback:.0f} Mbit/s")
        t0 = time.perf_counter()
        links = calibrate_links(cluster, cfg, work)
        calibrate_s = time.perf_counter() - t0
        log(f"links calibrated in {calibrate_s:.0f} s: {links_measured(links)}")
        layouts = layouts_for(cfg.cores)
        rounds, profiles, measure_s = [], [], 0.0
        for r in range(cfg.rounds):
            t0 = time.perf_counter()
            profile = combine_profiles(calibrate_compute(cluster, cfg, work, f"-{r}"), links)
            calibrate_s += time.perf_counter() - t0
            predicted = predict_layouts(profile, layouts, cfg.batch)
            t0 = time.perf_counter()
            rounds.append((predicted, measure_round(cluster, layouts, cfg, work, f"-{r}")))
            measure_s += time.perf_counter() - t0
            profiles.append(profile)
            log(f"round {r + 1}/{cfg.rounds}: measured " + ", ".join(
                f"{m['step_time_s'] * 1e3:.1f}" for m in rounds[-1][1]) + " ms")
    finally:
        if own:
            cluster.close()
    wl, hw = profile.workload, profile.hardware
    report = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cfg.cores} cores, {hw.device_name}",
        "load_before": load_before, "load_after": _load_average(),
        "config": {k: v for k, v in vars(cfg).items()},
        "params": int(wl.params), "gradient_bytes": wl.params * wl.wire_bytes_per_param,
        "veth_Mbps": veth, "loopback_Mbps": loopback,
        "links_measured": links_measured(profile),
        "intra_busbw_GBps": hw.intra_node.busbw_GBps, "inter_busbw_GBps": hw.inter_node.busbw_GBps,
        "calibrate_s": calibrate_s, "measure_s": measure_s,
        "calibration_spread": [calibration_spread(p, cfg.batch) for p in profiles],
        "colocation_slowdown": [p.compute.colocation_slowdown for p in profiles],
        "colocation_note": [p.compute.source.rpartition("co-location: ")[2] for p in profiles],
        "comparison": compare(layouts, rounds),
    }
    return report, profiles[-1]


def write_report(report: dict, profile, out_dir: Path) -> tuple[Path, Path]:
    """``emulated-cluster.json``, ``.md`` and ``-profile.json`` in ``out_dir``, atomically."""
    from scalesim.jsonio import atomic_write_text, write_model

    write_model(out_dir / "emulated-cluster-profile.json", profile)
    json_path = atomic_write_text(out_dir / "emulated-cluster.json",
                                  json.dumps(report, indent=2, default=list) + "\n")
    md_path = atomic_write_text(out_dir / "emulated-cluster.md", render_markdown(report))
    return json_path, md_path


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from scalesim.cli.main import OneLineParser

    p = OneLineParser(
        prog="python benchmarks/netns_cluster.py",
        description="Calibrate, predict and measure DDP steps on an emulated two-server cluster "
        "(two network namespaces, tc-shaped veth). Needs root and iproute2.")
    d = ExperimentConfig()
    p.add_argument("--rate-mbit", type=float, default=d.rate_mbit, help="inter-server Mbit/s")
    p.add_argument("--width", type=int, default=d.width, help="built-in MLP width")
    p.add_argument("--depth", type=int, default=d.depth, help="built-in MLP hidden layers")
    p.add_argument("--batch", type=int, default=d.batch, help="samples per process per step")
    p.add_argument("--steps", type=int, default=d.steps, help="timed DDP steps per run")
    p.add_argument("--rounds", type=int, default=d.rounds, help="measurement rounds")
    p.add_argument("--out-dir", default="out/emulated-cluster", help="where the JSON and "
                   "markdown go (default out/emulated-cluster)")
    p.add_argument("--cleanup-only", action="store_true",
                   help="remove namespaces left by killed runs and exit")
    args = p.parse_args(argv)
    reason = namespaces_unavailable_reason()
    if reason is not None:
        print(f"netns_cluster: error: {reason}", file=sys.stderr)
        return 2
    removed = cleanup_stale()
    if removed:
        print(f"removed stale: {', '.join(removed)}")
    if args.cleanup_only:
        return 0
    for name in ("rate_mbit", "width", "depth", "batch", "steps", "rounds"):
        if getattr(args, name) <= 0:
            print(f"netns_cluster: error: --{name.replace('_', '-')} must be positive",
                  file=sys.stderr)
            return 2
    cfg = ExperimentConfig(rate_mbit=args.rate_mbit, width=args.width, depth=args.depth,
                           batch=args.batch, steps=args.steps, rounds=args.rounds)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run finally/atexit on SIGTERM
    try:
        with tempfile.TemporaryDirectory(prefix="scalesim-netns-") as work:
            report, profile = run_experiment(cfg, Path(work))
    except (ClusterError, ValueError) as exc:  # ValueError: ScalesimError on a bad profile
        print(f"netns_cluster: error: {exc}", file=sys.stderr)
        return 1
    json_path, md_path = write_report(report, profile, Path(args.out_dir))
    print(render_markdown(report))
    print(f"written: {json_path}, {md_path}")
    return 0


if __name__ == "__main__":
    if not _internal_main(sys.argv[1:]):
        sys.exit(main())
