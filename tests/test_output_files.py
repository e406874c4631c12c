"""Output files (issue 14): atomic for regular files with the right mode, symlinks followed,
devices and pipes written in place (never replaced), every OS error one line; the calibration
state folder locked against a second run."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.outfiles import check_writable, open_output, write_text


@pytest.fixture
def never_replace_a_device(monkeypatch):
    """Safety net: a regression must fail here, not replace /dev/null on this machine."""
    real_replace = os.replace

    def guarded(src, dst, *args, **kwargs):
        if os.path.realpath(dst).startswith("/dev/"):
            raise AssertionError(f"os.replace over {dst}")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", guarded)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_mode_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    path = write_text(tmp_path / "new.json", "{}\n")
    assert _mode(path) == expected and path.read_text() == "{}\n"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o755])
def test_existing_file_keeps_its_mode(tmp_path, umask, mode):
    umask(0o077)
    path = tmp_path / "old.json"
    path.write_text("old")
    os.chmod(path, mode)
    write_text(path, "new")
    assert _mode(path) == mode and path.read_text() == "new"


def test_symlink_is_followed_to_its_target(tmp_path):
    real = tmp_path / "data" / "real.csv"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "made.csv")
    write_text(dangling, "x")
    assert dangling.is_symlink() and (tmp_path / "made.csv").read_text() == "x"


def test_failure_while_writing_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    with pytest.raises(RuntimeError), open_output(path) as handle:
        handle.write("half")
        raise RuntimeError("stopped")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_dev_null_stays_a_device(never_replace_a_device):
    before = os.stat("/dev/null")
    write_text("/dev/null", "discarded\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_dev_full_is_one_line(never_replace_a_device):
    with pytest.raises(ScalesimError, match=r"^/dev/full: cannot write it \(No space left"):
        write_text("/dev/full", "x" * 100_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_named_pipe_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_text()))
    reader.start()
    write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def _bad_targets(tmp_path):
    (tmp_path / "file").write_text("x")
    return [
        (tmp_path, "is a folder"),
        ("/proc/version", "cannot write it"),
        (tmp_path / ("n" * 300 + ".json"), "File name too long"),
        (tmp_path / "file" / "below.json", "cannot write it"),
    ]


def test_os_errors_are_one_line(tmp_path):
    for target, fragment in _bad_targets(tmp_path):
        with pytest.raises(ScalesimError, match=fragment):
            write_text(target, "x")
        with pytest.raises(ScalesimError, match=fragment):
            check_writable(target)


def test_long_name_that_fits_is_written(tmp_path):
    path = tmp_path / ("n" * 250 + ".json")  # 255 bytes: the longest name Linux allows
    write_text(path, "ok")
    assert path.read_text() == "ok"
    check_writable(path)


def test_permission_denied_is_one_line(tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(ScalesimError, match=r"out\.json: cannot write it \(.*Permission denied\)"):
        write_text(tmp_path / "out.json", "x")


def test_sweep_out_errors_exit_2_with_one_line(tmp_path, capsys):
    for target, fragment in _bad_targets(tmp_path):
        code = main(["sweep", "--devices", "1,2", "--out", str(target)])
        err = capsys.readouterr().err
        assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


TOPO = Path(__file__).parent / "fixtures" / "nvidia_smi" / "h100_x8_nics_topo.txt"


@pytest.mark.parametrize("command", [["sweep", "--devices", "1,2"],
                                     ["calibrate", "--from-topo", str(TOPO)]])
def test_an_empty_out_name_is_refused_as_calibrate_refuses_it(capsys, command):
    """``--out ''`` (an unset shell variable) is an error for every command (before: sweep
    printed to stdout and exited 0 as if no --out had been given)."""
    code = main([*command, "--out", ""])
    err = capsys.readouterr().err
    assert code == 2 and "the output file name is empty" in err, err


def test_calibrate_out_proc_version_is_one_line_before_measuring():
    proc = subprocess.run([sys.executable, "-m", "scalesim.cli.main", "calibrate", "--quick",
                           "--out", "/proc/version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "/proc/version: cannot write it" in lines[0], proc.stderr


# ------------------------------------------------------------------ the state folder lock


def test_state_folder_lock_names_its_holder(tmp_path):
    from scalesim.calibration.state import FolderLock

    folder = tmp_path / "p.json.state"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path\n"
         "from scalesim.calibration.state import FolderLock\n"
         f"lock = FolderLock(Path({str(folder)!r})).acquire()\n"
         "print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ScalesimError) as info:
            FolderLock(folder).acquire()
        message = str(info.value)
        assert f"pid {holder.pid} on {socket.gethostname()} since 20" in message
        assert "in use by another calibration" in message and "\n" not in message
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with FolderLock(folder) as lock:  # released when its holder ended
        record = json.loads(lock.path.read_text())
        assert record["pid"] == os.getpid()


def test_two_calibrations_on_one_out_the_second_says_who_holds_it(tmp_path):
    """The second of two calibrations writing the same --out stops with one line (exit 2)."""
    from scalesim.calibration.state import FolderLock

    out = tmp_path / "p.json"
    with FolderLock(Path(f"{out}.state")):
        proc = subprocess.run([sys.executable, "-m", "scalesim.calibration", "--quick",
                               "--phases", "loader", "--out", str(out)],
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"pid {os.getpid()} on" in lines[0], proc.stderr
    assert not out.exists()


def test_calibrate_to_a_device_needs_a_state_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "scalesim.calibration", "--quick", "--phases",
                           "loader", "--out", "/dev/null"], capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "--state-dir" in lines[0], proc.stderr
    assert not os.path.exists("/dev/null.state") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_stdout_writes_through_a_pipe_and_an_appending_redirect(tmp_path):
    argv = [sys.executable, "-m", "scalesim.cli.main", "sweep", "--devices", "1,2",
            "--out", "/dev/stdout"]
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("devices,") and len(piped.stdout.splitlines()) == 3
    log = tmp_path / "log.csv"
    log.write_text("kept\n")
    with open(log, "a") as appending:
        done = subprocess.run(argv, stdout=appending, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert log.read_text() == "kept\n" + piped.stdout


def test_write_between_markers_replaces_only_the_marked_text(tmp_path):
    from scalesim.outfiles import write_between_markers

    doc = tmp_path / "doc.md"
    doc.write_text("head\n<!-- t:begin -->\nold\n<!-- t:end -->\ntail\n")
    write_between_markers(doc, "<!-- t:begin -->", "<!-- t:end -->", "new")
    assert doc.read_text() == "head\n<!-- t:begin -->\nnew\n<!-- t:end -->\ntail\n"
    doc.write_text("no markers\n")
    with pytest.raises(ScalesimError, match="markers <!-- t:begin --> ... <!-- t:end --> not found"):
        write_between_markers(doc, "<!-- t:begin -->", "<!-- t:end -->", "new")
    assert doc.read_text() == "no markers\n"


@pytest.mark.parametrize("argv", [
    ["predict", "--devices", "1,2", "--json"],  # printed, then flushed at exit
    ["sweep", "--devices", "1-1024", "--batch-values", "1,2,4,8,16,32,64,128"],  # streamed
])
def test_standard_output_on_a_full_disk_is_one_line(argv):
    """``> /dev/full``: the printed output cannot be written (before: a traceback and exit 1,
    or Python's 'Exception ignored' lines at exit)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "scalesim.cli.main", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write the output" in proc.stderr and "No space left" in proc.stderr


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """``| head -1``: a closed pipe ends the command with exit 0 and nothing on stderr. The
    sweep writes about 310 KB, past any pipe buffer (64 KB on Linux), so it is still writing
    when the reader closes: the pipe breaks whatever the load. (Its 9 KB of 88 rows before could
    all fit in the buffer before the reader closed it on a busy machine, and then the sweep
    ended normally and printed its notes on stderr, as it should: a race, not a defect.)"""
    proc = subprocess.Popen([sys.executable, "-m", "scalesim.cli.main", "sweep", "--devices",
                             "1-1024", "--batch-values", "1,2,4,8,16,32,64,128",
                             "--strategy-values", "ddp,zero1,zero2,zero3",
                             "--inter-busbw-values", "1,2,5,10,25,50,100,200"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b"", err
