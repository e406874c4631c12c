"""Writing output files: atomically for regular files, directly for devices and pipes, and every
OS error as one line.

- A symlink is followed to its real target, which is written (the link stays a link).
- A regular file (or a new one) is written to a temporary file in the target's folder, flushed to
  disk and renamed over the target (``os.replace``, atomic on POSIX), then the folder is flushed
  too (the rename is an entry of the folder: without it a power cut may undo a write reported
  done): a crash leaves the old file or the new one, never a part. The new file gets the old
  one's permission bits (and, where allowed, its owner), or for a new file ``0o666`` less the
  process umask, as ``open`` would.
- Anything else that exists (``/dev/null``, a named pipe), and any existing path under ``/dev/``
  or ``/proc/PID/fd/`` (``/dev/stdout``: the shell's redirection, maybe ``>>``), is opened and
  written in place: renaming a regular file over a device would replace the device.
- A folder, an unwritable place (``/proc/version``, no permission, no space, a name too long)
  raises :class:`ScalesimError` with one line naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from scalesim.errors import ScalesimError

TEMP_NAME_CHARS = 40  # of the target's name kept in the temporary file's name
# Paths that name an open stream of this process (the shell's redirection): written through.
_SYSTEM_STREAM = re.compile(r"^/dev/|^/proc/(self|thread-self|\d+)/fd/")


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (thread-safe)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _problem(target: Path, exc: OSError) -> ScalesimError:
    reason = exc.strerror or type(exc).__name__
    return ScalesimError(f"{target}: cannot write it ({reason})")


def _existing(target: Path) -> os.stat_result | None:
    """The stat of what ``target`` names (symlinks followed), None when nothing is there."""
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _problem(target, exc) from None


def _temporary(real: Path, target: Path, folder: Path | None = None) -> tuple[int, str]:
    """A new temporary file beside ``real`` (or in ``folder``): (descriptor, name)."""
    folder = folder or real.parent
    try:
        return tempfile.mkstemp(prefix=f".{real.name[:TEMP_NAME_CHARS]}.", suffix=".tmp",
                                dir=folder)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ScalesimError(f"{target}: cannot write it (no new file can be made in {folder}: "
                            f"{reason}); choose a path in a folder you can write to") from None


def _in_place(target: Path, st: os.stat_result | None) -> bool:
    """Write without a temporary file: a device, pipe or socket, or a path under ``/dev/`` or
    ``/proc/PID/fd/`` (``/dev/stdout``, ``/dev/fd/1``: the shell's redirection, which may be a
    pipe or a file opened for appending, must be written through, not replaced)."""
    if st is None:
        return False
    return bool(_SYSTEM_STREAM.match(str(target))) or not stat.S_ISREG(st.st_mode)


def _sync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries to disk (the rename just made in it); a file system that
    cannot flush a folder (some network ones refuse it) leaves it to the kernel, as before."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """Free bytes of the disk a new ``path`` would be stored on; None when it is written in place
    (a device or pipe stores nothing) or the disk cannot be asked."""
    target = Path(path)
    try:
        if _in_place(target, _existing(target)):
            return None
        folder = Path(os.path.realpath(target)).parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        fs = os.statvfs(folder)
    except (OSError, ScalesimError):
        return None
    return fs.f_bavail * fs.f_frsize


def _target(path: str | os.PathLike[str]) -> tuple[Path, os.stat_result | None]:
    """``path`` as a Path and its stat (None when absent); an empty name or a folder raises."""
    target = Path(path)
    if str(path) == "":
        raise ScalesimError("the output file name is empty")
    if str(path) == "-":  # the shell's word for standard output: a file named '-' was written
        raise ScalesimError("'-' (standard output in the shell's words) is no output file: "
                            "give a file name (./- for a file called '-'); sweep prints to "
                            "standard output without --out")
    st = _existing(target)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ScalesimError(f"{target}: is a folder; give a file name")
    return target, st


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While a file is written, SIGTERM (``timeout``'s, a scheduler's) raises SystemExit(143)
    in the main thread, so that ``open_output`` removes its temporary file as Ctrl-C's
    KeyboardInterrupt does; by default the process died and left it (88 MB of a large sweep).
    Elsewhere (another thread, where no handler can be set) nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum, frame):  # noqa: ARG001 - the signal module's signature
        raise SystemExit(128 + signal.SIGTERM)

    before = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A UTF-8 text handle that writes ``path`` as the module docstring says; the file appears
    (atomically, for a regular file) only when the ``with`` block ends without an exception."""
    target, st = _target(path)
    if _in_place(target, st):
        try:
            # Appending: a stream opened by the shell with >> keeps what it has (a device or pipe
            # has no end to keep).
            handle = open(target, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise _problem(target, exc) from None
        try:
            with handle:
                yield handle
        except OSError as exc:
            raise _problem(target, exc) from None
        return
    real = Path(os.path.realpath(target))
    tmp_name = None
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = _temporary(real, target)
        if st is not None:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            with contextlib.suppress(OSError):  # only root may give a file away
                os.fchown(fd, st.st_uid, st.st_gid)
        else:
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle, _sigterm_unwinds():
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, real)
        tmp_name = None
        _sync_folder(real.parent)
    except OSError as exc:
        raise _problem(target, exc) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` (see :func:`open_output`); returns the path as given."""
    with open_output(path) as handle:
        handle.write(text)
    return Path(path)


def write_between_markers(path: str | os.PathLike[str], begin: str, end: str, body: str) -> Path:
    """Replace the text between the lines ``begin`` and ``end`` of the UTF-8 file ``path`` by
    ``body`` (a line break either side), written as :func:`write_text` does; the benchmarks'
    generated tables in docs/ use it. Missing markers raise a one-line ScalesimError."""
    from scalesim.jsonio import read_text

    text = read_text(path)
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ScalesimError(f"{path}: markers {begin} ... {end} not found; add them where the "
                            "generated text goes")
    return write_text(path, text[: start + len(begin)] + "\n" + body + "\n" + text[stop:])


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise the error :func:`open_output` would, before any work is done: the target is a
    folder, or no file can be made in its folder (a probe file is created and removed)."""
    target, st = _target(path)
    if _in_place(target, st):
        try:  # opening for writing (no truncation) is the only faithful test (/proc is special)
            os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
        except BlockingIOError:
            pass  # a pipe without a reader yet: it will block until one comes, as the shell does
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: a FIFO without a reader (O_NONBLOCK)
                raise _problem(target, exc) from None
        return
    real = Path(os.path.realpath(target))
    folder = real.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        fd, probe = _temporary(real, target, folder)
        os.close(fd)
        os.unlink(probe)
        if len(real.name.encode()) > os.pathconf(folder, "PC_NAME_MAX"):
            raise OSError(36, "File name too long")
    except OSError as exc:
        raise _problem(target, exc) from None
