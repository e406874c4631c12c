"""Crash-safe writes (session 46 audit): a writer killed or failing half way through leaves the
old file byte for byte, the rename is flushed in its folder, and every file scalesim, the app and
the calibration write goes through the one atomic writer (``scalesim.outfiles``)."""

from __future__ import annotations

import ast
import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scalesim import outfiles
from scalesim.errors import ScalesimError
from scalesim.jsonio import write_model
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import load_profile, profile_from_presets

ROOT = Path(__file__).resolve().parent.parent


def _profiles():
    """Two preset profiles of different text: the old file and the one written over it."""
    old = profile_from_presets(get_hardware("dgx-h100"), get_workload("llama3-8b"))
    new = profile_from_presets(get_hardware("dgx-a100"), get_workload("gpt-1.7b"))
    return old, new


class _HalfThenFail:
    """A file handle that writes half of what it is given, flushes it, then fails as a full
    disk does (ENOSPC)."""

    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, text):
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_profile_write_failing_half_way_leaves_the_old_profile_and_no_temporary(tmp_path,
                                                                                  monkeypatch):
    old, new = _profiles()
    path = tmp_path / "my-node.json"
    write_model(path, old)
    before = path.read_bytes()
    real_fdopen = os.fdopen
    monkeypatch.setattr(outfiles.os, "fdopen", lambda *a, **k: _HalfThenFail(real_fdopen(*a, **k)))
    with pytest.raises(ScalesimError, match=r"my-node.json: cannot write it \(No space left"):
        write_model(path, new)
    assert path.read_bytes() == before and load_profile(path) == old
    assert [p.name for p in tmp_path.iterdir()] == ["my-node.json"]


KILLED_MID_WRITE = """
import os, signal, sys
from scalesim.jsonio import write_model
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import profile_from_presets

real_fdopen = os.fdopen

class Dying:
    def __init__(self, handle):
        self.handle = handle
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.handle.close()
    def write(self, text):
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        os.fsync(self.handle.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

os.fdopen = lambda *a, **k: Dying(real_fdopen(*a, **k))
write_model(sys.argv[1], profile_from_presets(get_hardware("dgx-a100"), get_workload("gpt-1.7b")))
"""


def test_a_writer_killed_half_way_leaves_the_old_profile_byte_for_byte(tmp_path):
    """A real crash: the writing process is killed (SIGKILL, no clean-up runs) after half the
    new profile's bytes are on disk; the profile it was replacing is whole."""
    old, new = _profiles()
    path = tmp_path / "my-node.json"
    write_model(path, old)
    before = path.read_bytes()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                   "")])}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_MID_WRITE), str(path)],
                          env=env, capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert path.read_bytes() == before and load_profile(path) == old
    # the half that was written went to the temporary file beside it, never to the profile
    left = [p for p in tmp_path.iterdir() if p.name != "my-node.json"]
    new_text = new.model_dump_json(indent=2) + "\n"
    assert len(left) == 1 and left[0].name.startswith(".my-node.json.")
    assert left[0].read_text() == new_text[: len(new_text) // 2]


def test_the_rename_is_flushed_in_its_folder(tmp_path, monkeypatch):
    """After ``os.replace`` the folder is fsynced: the new entry survives a power cut, not only
    the new file's bytes (before: the file alone was flushed, the rename left to the kernel)."""
    synced = []
    real_fsync = os.fsync

    def recording(fd):
        st = os.fstat(fd)
        synced.append((stat.S_ISDIR(st.st_mode), (st.st_dev, st.st_ino)))
        return real_fsync(fd)

    monkeypatch.setattr(outfiles.os, "fsync", recording)
    outfiles.write_text(tmp_path / "out.json", "{}\n")
    folder = os.stat(tmp_path)
    assert synced[0][0] is False  # the file's bytes first
    assert synced[-1] == (True, (folder.st_dev, folder.st_ino))  # then the folder's entries


def test_a_folder_that_cannot_be_flushed_still_gets_the_file(tmp_path, monkeypatch):
    """A file system that refuses to fsync a folder (EINVAL on some) keeps the write working."""
    real_fsync = os.fsync

    def no_folder_sync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_fsync(fd)

    monkeypatch.setattr(outfiles.os, "fsync", no_folder_sync)
    assert outfiles.write_text(tmp_path / "out.json", "new\n").read_text() == "new\n"


# Writes that do not go through scalesim.outfiles, each with why it need not.
NOT_THROUGH_THE_WRITER = {
    ("scalesim/outfiles.py", "open"): "the writer itself (devices and pipes, written in place)",
    ("scalesim/outfiles.py", "os.open"): "the writer's probe of a device it writes in place",
    ("scalesim/cli/main.py", "os.open"): "/dev/null under standard output at exit",
    ("calibration/state.py", "os.open"): "the state folder's lock file (flock; its holder line "
                                         "is advisory)",
    ("app/diagnose_page.py", "write_bytes"): "uploaded traces copied into a TemporaryDirectory",
}
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _writes(tree: ast.AST) -> list[tuple[str, int]]:
    """(kind, line) of each call in ``tree`` that writes a file other than through outfiles:
    ``open`` with a writing mode, ``os.open`` with a writing flag, ``json.dump``,
    ``.write_text`` / ``.write_bytes`` of a path."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        if name == "open" and owner == "":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                found.append(("open", node.lineno))
        elif name == "open" and owner == "os":
            flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if flags & WRITE_FLAGS:
                found.append(("os.open", node.lineno))
        elif name == "dump" and owner == "json":
            found.append(("json.dump", node.lineno))
        elif name in ("write_text", "write_bytes") and isinstance(f, ast.Attribute) and owner != \
                "outfiles":
            found.append((name, node.lineno))
    return found


def test_every_file_written_goes_through_the_atomic_writer():
    """The audit's inventory, kept: a new ``open(path, "w")`` in scalesim, the app or the
    calibration is a file a crash can leave half written (before: calibration/tp_check.py wrote
    its --raw rounds so)."""
    stray = []
    for folder in ("scalesim", "app", "calibration"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            if rel.startswith(("scalesim/app/", "scalesim/calibration/")):
                continue  # the symlinks of a checkout: the same files as app/ and calibration/
            for kind, line in _writes(ast.parse(file.read_text(encoding="utf-8"))):
                if (rel, kind) not in NOT_THROUGH_THE_WRITER:
                    stray.append(f"{rel}:{line} {kind}")
    assert stray == []


def test_the_inventory_finds_a_plain_write():
    """The scan can fail: each kind of plain write is found."""
    code = textwrap.dedent("""
        import json, os
        from pathlib import Path
        open("a", "w"); open("b", mode="a"); open("c")
        os.open("d", os.O_WRONLY | os.O_CREAT)
        json.dump({}, handle)
        Path("e").write_text("x")
    """)
    found = sorted(_writes(ast.parse(code)), key=lambda w: w[1])
    assert [k for k, _ in found] == ["open", "open", "os.open", "json.dump", "write_text"]
