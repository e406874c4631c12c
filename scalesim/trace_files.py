"""Read a PyTorch profiler (Kineto) Chrome-trace file, plain or gzipped, as a stream of events.

The file is read as a stream: the top-level object is walked key by key and the
``traceEvents`` array decoded one event at a time (``json.JSONDecoder.raw_decode`` on a buffer of
1 MiB chunks, ``CHUNK_CHARS``), so memory stays bounded by what the caller keeps. A gzipped file
is told by its magic bytes (a pipe is read once); an empty, cut, joined or corrupt file is one
``ScalesimError`` line; a pre-1.10 event category reads as today's (``OLD_CATEGORIES``). What the
events mean is ``scalesim.traces``' job.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import IO

from scalesim.errors import KNOB, Refusal, ScalesimError, as_literal, require_path
from scalesim.jsonio import (
    GZIP_ERRORS,
    bad_gzip,
    ends_mid_json,
    may_go_on,
    open_text,
    unreadable,
)
from scalesim.layout import knob_refusal

CHUNK_CHARS = 1 << 20
MAX_VALUE_CHARS = 64 << 20  # one JSON value (event or metadata) larger than this is malformed
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
PLAIN_NUMBERS = (int, float)  # exact types (``type(x) in``): bool, an int subclass, is not one


class _Truncated(Exception):
    pass


def not_a_trace_file(line: str) -> Refusal:
    """``line`` (a file's first character is not a trace's) with where a runs file goes: the
    CLI reads it without --trace ('scalesim diagnose FILE'), the Diagnose page under its runs
    source (a template, ``layout.knob_refusal``: the page names the source by its label)."""
    what = (f"{as_literal(line)}; a trace is the JSON object torch.profiler writes, and a runs "
            "file (CSV, or a JSON list of runs) is ")
    return knob_refusal(f"{what}given with {KNOB.runs} (scalesim diagnose FILE)",
                        cli=f"{what}read without {KNOB.trace}: scalesim diagnose FILE")


class _Stream:
    """A JSON text read in chunks; ``value()`` decodes the next complete value."""

    def __init__(self, handle: IO[str], source: str):
        self.handle, self.source = handle, source
        self.buf, self.pos, self.eof = "", 0, False
        self.blank = True  # nothing but white space read so far: an empty file

    def _fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.blank = self.blank and not chunk.strip()
        self.pos = 0
        return True

    def peek(self) -> str:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                raise _Truncated

    def take(self, expected: str, opening: bool = False) -> None:
        """Consume one of ``expected``; ``opening``: the file's first character (an error says
        what else the file may be)."""
        ch = self.peek()
        if ch not in expected:
            line = (f"{self.source}: not a Chrome trace (expected {expected!r}, found {ch!r} "
                    f"at character {self.pos})")
            raise ScalesimError(not_a_trace_file(line) if opening else line)
        self.pos += 1

    def value(self, what: str):
        """The next JSON value; ``what`` names it in errors ("event 12", "key 'x'")."""
        self.peek()
        while True:
            try:
                val, end = _DECODER.raw_decode(self.buf, self.pos)
            except RecursionError:  # json's decoder recurses once per nesting level
                raise ScalesimError(
                    f"{self.source}: {what} is nested too deeply (past Python's "
                    "recursion limit) to be a profiler trace"
                ) from None
            except ValueError as exc:
                if not isinstance(exc, json.JSONDecodeError):  # a number past the digit limit
                    raise ScalesimError(
                        f"{self.source}: {what} holds a number too long to read (over Python's "
                        "digit limit); torch's profiler writes none: re-export the trace"
                    ) from None
                # A value cut by the end of the buffer fails as the text running out
                # (``jsonio.ends_mid_json``): read on; anything else is malformed.
                if not ends_mid_json(self.buf, exc):
                    raise ScalesimError(f"{self.source}: {what}: malformed JSON ({exc.msg})") from None
                if len(self.buf) - self.pos > MAX_VALUE_CHARS:
                    raise ScalesimError(
                        f"{self.source}: {what} is over {MAX_VALUE_CHARS} characters; not a profiler trace"
                    ) from None
                if not self._fill():
                    raise _Truncated from None
                continue
            if not self.eof and may_go_on(self.buf, end) and self._fill():
                continue  # a number may continue in the next chunk
            self.pos = end
            return val


# Kineto's event categories in PyTorch 1.8/1.9 traces, renamed in June 2021 (pytorch/kineto#206,
# "Refactor trace activities"; PyTorch 1.10 on) to the names read here; the pytorch/kineto
# tb_plugin samples (torch 1.9, resnet50) carry the old ones
OLD_CATEGORIES = {
    "Operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}


def _current_category(event: dict) -> dict:
    """``event`` with a pre-1.10 category under its current name (``OLD_CATEGORIES``)."""
    cat = event.get("cat")
    if isinstance(cat, str) and cat in OLD_CATEGORIES:
        event["cat"] = OLD_CATEGORIES[cat]
    return event


def _nothing_after(stream: _Stream) -> None:
    """ScalesimError where anything but white space follows the trace's top-level object: two
    exports joined (``cat``), or a file written over a longer one, whose second trace would be
    left out unread."""
    try:
        ch = stream.peek()
    except _Truncated:
        return
    raise ScalesimError(
        f"{stream.source}: {ch!r} after the trace's closing '}}': two traces joined in one "
        "file, or one written over a longer one; give one profiler export per file"
    )


def iter_trace(path: str | os.PathLike[str], metadata: dict):
    """Yield ``(number, event)`` for each trace event (a dict) of a Kineto JSON file, numbered from
    1 in file order (non-objects count too), its category as PyTorch >= 1.10 names it
    (``OLD_CATEGORIES``); top-level keys go into ``metadata``."""
    file = Path(require_path(path, "trace"))  # '' would be Path('.'), the folder
    try:
        handle = open_text(file, errors="replace")
    except FileNotFoundError:
        raise ScalesimError(f"{file}: no such file") from None
    except OSError as exc:
        raise unreadable(file, exc) from None
    stream = _Stream(handle, str(file))
    seen_events = False
    try:
        with handle:
            stream.take("{", opening=True)
            if stream.peek() == "}":
                stream.pos += 1
            else:
                while True:
                    key = stream.value("a top-level key")
                    if not isinstance(key, str):
                        raise ScalesimError(f"{file}: not a JSON object with string keys")
                    stream.take(":")
                    if key == "traceEvents":
                        seen_events = True
                        stream.take("[")
                        if stream.peek() == "]":
                            stream.pos += 1
                        else:
                            number = 0
                            while True:
                                number += 1
                                event = stream.value(f"event {number}")
                                if isinstance(event, dict):
                                    yield number, _current_category(event)
                                stream.take(",]")
                                if stream.buf[stream.pos - 1] == "]":
                                    break
                    else:
                        metadata[key] = stream.value(f"key {key[:60]!r}")
                    stream.take(",}")
                    if stream.buf[stream.pos - 1] == "}":
                        break
            _nothing_after(stream)
    except _Truncated:
        if stream.blank:
            raise ScalesimError(f"{file}: empty (no trace in it); export one with "
                                "prof.export_chrome_trace") from None
        raise ScalesimError(
            f"{file}: the trace ends early (truncated file?); re-export it with prof.export_chrome_trace"
        ) from None
    except GZIP_ERRORS as exc:
        raise bad_gzip(file, exc) from None
    except OSError as exc:
        raise unreadable(file, exc) from None
    if not seen_events:
        raise ScalesimError(f"{file}: no traceEvents: not a PyTorch profiler (Kineto) trace")
