"""Run a gloo probe script of tests/ (``*_probe.py``: 2 CPU ranks on a free loopback port) and
read the JSON lines it prints. Imports no torch, so the test files that use it collect fast."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
from pathlib import Path

# the FSDP1 (strategy, precision) pairs whose holdings tests read (test_fsdp_zero2_memory.py,
# test_fsdp_shard_memory.py): one launch of fsdp_zero2_probe.py runs them all
FSDP_HELD_PAIRS = (("SHARD_GRAD_OP", "bf16"), ("FULL_SHARD", "bf16"), ("SHARD_GRAD_OP", "fp32"))


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.cache
def probe_lines(script: str, *args: str) -> tuple[dict, ...]:
    """``python tests/<script> PORT *args``, launched once a session for the same arguments: the
    dicts of its stdout's JSON lines, in order. A failed run fails the test with the end of its
    stderr (and is not kept: the next test that asks launches it again)."""
    probe = Path(__file__).with_name(script)
    done = subprocess.run([sys.executable, str(probe), str(free_port()), *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return tuple(json.loads(line) for line in done.stdout.splitlines() if line.startswith("{"))


def run_probe(script: str, *args: str) -> dict:
    """The dict of the last JSON line of ``python tests/<script> PORT *args`` (``probe_lines``)."""
    return probe_lines(script, *args)[-1]


def fsdp_held(strategy: str, precision: str) -> dict:
    """What rank 0 of ``fsdp_zero2_probe.py`` holds under ``strategy`` and ``precision``, one of
    ``FSDP_HELD_PAIRS``: the probe runs every pair in one launch, once a session."""
    pairs = [word for pair in FSDP_HELD_PAIRS for word in pair]
    held = {(h["strategy"], h["precision"]): h for h in probe_lines("fsdp_zero2_probe.py", *pairs)}
    return held[(strategy, precision)]
