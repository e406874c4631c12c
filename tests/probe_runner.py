"""Run a gloo probe script of tests/ (``*_probe.py``: 2 CPU ranks on a free loopback port) and
read the JSON line it prints last. Imports no torch, so the test files that use it collect fast."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_probe(script: str, *args: str) -> dict:
    """``python tests/<script> PORT *args``: the dict of its last stdout line; a failed run
    fails the test with the end of its stderr."""
    probe = Path(__file__).with_name(script)
    done = subprocess.run([sys.executable, str(probe), str(free_port()), *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
