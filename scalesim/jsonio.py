"""Reading and writing JSON files with clear errors and atomic writes."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

from scalesim.errors import (
    NOT_FINITE,
    NOT_NUMBER,
    NOT_WHOLE,
    ScalesimError,
    excerpt,
    require_path,
    template_of,
    within,
)
from scalesim.figures import number

ModelT = TypeVar("ModelT", bound=BaseModel)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` so that a crash leaves either the old file or the new one.

    See :mod:`scalesim.outfiles`: a temporary file in the same folder renamed over a regular
    target (keeping its mode), symlinks followed, devices and pipes written in place, every OS
    error a one-line ScalesimError.
    """
    from scalesim.outfiles import write_text

    return write_text(path, text)


def write_model(path: str | os.PathLike[str], model: BaseModel) -> Path:
    """Write a pydantic model as indented JSON, atomically, once the text reads back as the
    same model: a value an update put out of its bounds (``model_copy`` does not validate) is a
    one-line ScalesimError and nothing is written, never a file scalesim then refuses to read."""
    text = model.model_dump_json(indent=2) + "\n"
    try:
        type(model).model_validate_json(text)
    except ValidationError as exc:
        raise ScalesimError(
            f"{path}: not written: {validation_message(exc, type(model).__name__, type(model))}"
            "; the inputs gave a value outside its bounds"
        ) from None
    return atomic_write_text(path, text)


def _plain(value: Any) -> Any:
    """json's ``default``: numpy scalars and arrays as Python numbers and lists."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, BaseModel):
        return value.model_dump()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _non_finite_at(data: Any, where: str = "") -> str | None:
    """Where in ``data`` the first NaN or infinity is ('[3].step_time_s'), or None."""
    data = (
        _plain(data) if not isinstance(data, dict | list | tuple | str | int | float | type(None)) else data
    )
    if isinstance(data, float):
        return None if math.isfinite(data) else (where or "(top level)")
    if isinstance(data, dict):
        items = ((f"{where}.{k}" if where else str(k), v) for k, v in data.items())
    elif isinstance(data, list | tuple):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(data))
    else:
        return None
    for path, value in items:
        found = _non_finite_at(value, path)
        if found is not None:
            return found
    return None


def to_json_text(data: Any, indent: int | None = 2, what: str = "the result") -> str:
    """The one JSON writer of every ``--json`` output: strict JSON, never NaN or Infinity.

    Numpy numbers become Python numbers; a non-finite number raises a one-line ScalesimError
    naming where it is (inputs within scalesim.bounds never produce one).
    """
    try:
        return json.dumps(data, indent=indent, allow_nan=False, default=_plain)
    except ValueError:
        where = _non_finite_at(data)
        raise ScalesimError(
            f"{what} holds a non-finite number at '{where}'; nothing was "
            "written (the inputs are outside the model's range)"
        ) from None


MAX_TEXT_CHARS = 128 << 20  # a profile, scenario or runs file (1e6 runs) is far smaller


def not_utf8(name: str | os.PathLike[str]) -> ScalesimError:
    """The one error of a file that is not UTF-8 text (UTF-16 from Windows tools, binary)."""
    return ScalesimError(f"file {name} is not UTF-8 text: save it as UTF-8")


def _checked_text(text: str, name: str | os.PathLike[str]) -> str:
    """JSON ``text`` unless it holds a NUL: UTF-16 or UTF-32 without a byte-order mark decodes
    as UTF-8 with a NUL beside every ASCII character, and valid JSON never holds one (a
    control character must be escaped even in a string)."""
    if "\x00" in text:
        raise not_utf8(name)
    return text


def decode_text(raw: bytes, name: str) -> str:
    """Uploaded JSON bytes as text: UTF-8, a leading byte-order mark dropped; else
    ``not_utf8`` (a NUL too: ``_checked_text``)."""
    try:
        return _checked_text(raw.decode("utf-8-sig"), name)
    except UnicodeDecodeError:
        raise not_utf8(name) from None


GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of a gzip stream (RFC 1952)
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)  # a cut or corrupt gzip stream


class _OwnedGzip(gzip.GzipFile):
    """A GzipFile that closes the file it reads (GzipFile leaves a given ``fileobj`` open)."""

    def __init__(self, raw) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def open_text(file: Path, errors: str = "strict") -> IO[str]:
    """``file`` as UTF-8 text (a leading byte-order mark dropped, line ends as Python reads them),
    gunzipped where it starts with gzip's magic (``GZIP_MAGIC``: a log or trace kept as
    ``.gz``); opened once, so a pipe (``<(zcat f.gz)``) reads as a file does. The caller closes
    it; a cut or corrupt gzip stream raises one of ``GZIP_ERRORS`` on reading (``bad_gzip``)."""
    raw = open(file, "rb")  # noqa: SIM115 (the caller closes what it returns)
    try:
        stream = _OwnedGzip(raw) if raw.peek(2)[:2] == GZIP_MAGIC else raw
        return io.TextIOWrapper(stream, encoding="utf-8-sig", errors=errors)
    except BaseException:
        raw.close()
        raise


def bad_gzip(file: str | os.PathLike[str], exc: Exception) -> ScalesimError:
    """The one line of a file whose gzip stream is cut or corrupt (``GZIP_ERRORS``)."""
    return ScalesimError(f"{file}: cannot read it: corrupt or cut gzip data ({exc})")


def read_text(path: str | os.PathLike[str], name: str = "path") -> str:
    """A UTF-8 text file's contents (a leading byte-order mark, as Excel writes, is dropped;
    gunzipped where it is gzip data: ``open_text``); a missing or unreadable file, a cut or
    corrupt gzip stream, one that is not UTF-8 (``not_utf8``), or one over MAX_TEXT_CHARS
    (``/dev/zero`` never ends), raises a one-line ScalesimError; ``name`` is the argument named
    when ``path`` is not a path."""
    file = Path(require_path(path, name))
    try:
        with open_text(file) as handle:
            text = handle.read(MAX_TEXT_CHARS + 1)
        if len(text) > MAX_TEXT_CHARS:
            raise ScalesimError(f"{file}: over {MAX_TEXT_CHARS:,} characters; not a scalesim input file")
        return text
    except FileNotFoundError:
        raise ScalesimError(f"{file}: no such file") from None
    except UnicodeDecodeError:
        raise not_utf8(file) from None
    except GZIP_ERRORS as exc:
        raise bad_gzip(file, exc) from None
    except OSError as exc:
        raise unreadable(file, exc) from None


def unreadable(file: str | os.PathLike[str], exc: OSError) -> ScalesimError:
    """The one line of an input file that cannot be opened; a folder given for a file says so
    and what to give (the OS's "Is a directory" named no remedy)."""
    if isinstance(exc, IsADirectoryError):
        return ScalesimError(f"{file}: is a folder; give the path of a file in it")
    return ScalesimError(f"{file}: cannot read it ({exc})")


def key_twice_text(name: str, key: str) -> str:
    """The one line refusing a JSON object of ``name`` in which ``key`` appears twice."""
    return f"{name}: key '{key}' appears twice in one object (JSON would keep the last silently); keep one"


class KeysTwice(dict):
    """A JSON object read with ``keys_twice=True`` in which ``twice`` appear more than once
    (their last values kept, as JSON would): for a reader that refuses a part of a file, not
    all of it (``validate.read_case_list``)."""

    twice: tuple[str, ...] = ()


def _unique_keys(name: str, keep: bool = False):
    """json's ``object_pairs_hook``: a dict, or ScalesimError when a key repeats (json keeps the
    last silently, so ``{"accumulation": 2, "accumulation": 4}`` would run with 4 unasked);
    ``keep``: a ``KeysTwice`` instead, for the reader to refuse."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        twice: list[str] = []
        for key, value in pairs:
            if key in obj:
                if not keep:
                    raise ScalesimError(key_twice_text(name, key))
                twice.append(key)
            obj[key] = value
        if twice:
            obj = KeysTwice(obj)
            obj.twice = tuple(twice)
        return obj

    return hook


def parse_json_text(text: str, name: str, keys_twice: bool = False) -> Any:
    """Parse JSON text read from ``name`` (a file or upload); a malformed text (with the
    position), a repeated key (``keys_twice``: left to the caller in a ``KeysTwice``) or a too
    deep nesting raises a one-line ScalesimError."""
    if not text.strip():
        raise ScalesimError(f"{name}: empty (no JSON in it); give the JSON file scalesim wrote, "
                            "or write one (scalesim schema lists the fields)")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys(name, keys_twice))
    except json.JSONDecodeError as exc:
        fix = ("; the text ends before the JSON does: the file is cut short (truncated?)"
               if ends_mid_json(text, exc)
               else "; mend it there, or give the JSON file scalesim wrote")
        raise ScalesimError(
            f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}){fix}"
        ) from None
    except RecursionError:  # json's decoder recurses once per nesting level
        raise ScalesimError(f"{name}: JSON nested too deeply to be a scalesim file") from None
    except ValueError as exc:  # int() of a number past Python's digit limit
        raise ScalesimError(f"{name}: {LONG_NUMBER_TEXT} ({_digits_said(exc)})") from None


# What the decoder may stop at where the text runs out inside a value: the start of a literal
# (Python's decoder reads NaN and the infinities too), of a number past the digits it read
# ("." of "12.", "e" of "1e", a lone "-"), or of a \uXXXX escape (a surrogate pair's second half)
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_START = re.compile(r"-?\d*(\.\d*)?([eE][-+]?\d*)?")
_ESCAPE_START = re.compile(r"u[0-9a-fA-F]{0,4}(\\(u[0-9a-fA-F]{0,4})?)?")
_NUMBER_GOES_ON = re.compile(r"(\.|[eE][-+]?)?")  # what a decoded number may stop before


def ends_mid_json(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether ``exc`` is the decoder running out of text (a file cut short: a copy or download
    that stopped, a disk that filled; the end of a chunk read so far, ``trace_files._Stream``) rather
    than a wrong character: the error is at the end of the text, in a string never closed, or in
    a literal, number or ``\\u`` escape whose start runs to the end of the text (every prefix of
    a valid JSON text that does not decode is one of these)."""
    if exc.msg.startswith("Unterminated string"):
        return True
    rest = text[exc.pos:].strip()
    return (not rest or any(word.startswith(rest) for word in _LITERALS)
            or _NUMBER_START.fullmatch(rest) is not None
            or (exc.msg.startswith("Invalid \\uXXXX escape")
                and _ESCAPE_START.fullmatch(rest) is not None))


def may_go_on(text: str, end: int) -> bool:
    """Whether the value decoded from ``text`` up to ``end`` may be a number that more text
    would make longer: nothing follows it, or only the "." or "e", "e-" the decoder stops
    before where no digit follows yet (it reads 12 of "12." and of "12e-" at the end of a
    chunk read so far, ``trace_files._Stream``)."""
    return _NUMBER_GOES_ON.fullmatch(text, end) is not None


# a JSON integer longer than Python converts (``sys.get_int_max_str_digits``, 4,300 by default)
LONG_NUMBER_TEXT = ("a number too long to read; no field takes one that size: write it with an "
                    "exponent (1e9)")


def _digits_said(exc: ValueError) -> str:
    """'value has 5001 digits' of Python's digit-limit error, else its first clause."""
    text = str(exc)
    return text.split(": ", 1)[-1].split(";")[0] if ": " in text else text


def read_json(path: str | os.PathLike[str], name: str = "path", keys_twice: bool = False) -> Any:
    """Parse a JSON file (``parse_json_text``); a missing, non-UTF-8 or malformed file, or one
    with a repeated key (unless ``keys_twice``), raises a one-line ScalesimError naming the
    file; ``name`` is the argument named when ``path`` is not a path."""
    file = Path(require_path(path, name))
    return parse_json_text(_checked_text(read_text(file), file), str(file), keys_twice)


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words ("null", "list (JSON array)", "number")."""
    kinds = {
        dict: "object",
        list: "list (JSON array)",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
    }
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def error_text(error: Mapping[str, Any], model: type[BaseModel] | None = None) -> str:
    """One pydantic error's sentence; a validator's own, without pydantic's "Value error, ";
    an object that is something else in JSON's words, not pydantic's ("a valid dictionary or
    instance of CaseHardware" names the code's class); with ``model`` (a reader that quotes the
    value beside it: the app's link), a number out of its bounds by the field's bounds, unit
    and reason (not pydantic's "less than or equal to 100000"; a field without the bounds
    table's reason by its own bounds), a value of another kind in the bounds table's words
    ("not a whole number", as ``bounds.parse_number`` says it; not pydantic's "Input should be
    a valid integer, unable to parse string as an integer") and a choice by its choices."""
    kind = error.get("type")
    if kind in _RANGE_ERRORS and model is not None:
        loc = tuple(error.get("loc", ()))
        allowed = _allowed(model, loc) or _field_range(model, loc)
        if allowed:
            return allowed
    if model is not None and kind in _KIND_WORDS:
        return _KIND_WORDS[kind]
    if model is not None and kind == "literal_error" and (error.get("ctx") or {}).get("expected"):
        return f"not one of {error['ctx']['expected']}"
    if error.get("type") in ("model_type", "dict_type"):
        kind = json_kind(error.get("input"))
        article = "" if kind == "null" else "an " if kind[0] in "aeiou" else "a "
        return f"expected a JSON object {{...}}, got {article}{kind}"
    text = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    cause = (error.get("ctx") or {}).get("error")  # a validator's own exception
    # its refusal keeps what its callers read (its knobs, its template's controls)
    return within(cause, text) if template_of(cause) else text


# a number past its field's bounds; 'int_parsing_size': a whole-number field given a number past
# 64 bits (1e20 in JSON), which pydantic calls 'Unable to parse input string as an integer'
_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal",
                 "int_parsing_size"}
# a value of another kind than its field's, in the bounds table's words (``bounds.parse_number``)
_KIND_WORDS = {"int_parsing": NOT_WHOLE, "int_from_float": NOT_WHOLE,
               "float_parsing": NOT_NUMBER, "finite_number": NOT_FINITE,
               "bool_parsing": "not on or off: 1 or 0"}


def _field_range(model: type[BaseModel], loc: tuple) -> str | None:
    """'allowed: 1 <= x <= 16,384' from the bounds of ``model``'s top-level field ``loc`` (a
    field the bounds table does not describe: the app's largest device count), or None."""
    import annotated_types as at

    field = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
    if field is None:
        return None
    low = high = ""
    for m in field.metadata:
        if isinstance(m, at.Ge):
            low = f"{number(m.ge)} <= "
        elif isinstance(m, at.Gt):
            low = f"{number(m.gt)} < "
        elif isinstance(m, at.Le):
            high = f" <= {number(m.le)}"
        elif isinstance(m, at.Lt):
            high = f" < {number(m.lt)}"
    return f"allowed: {low}x{high}" if low or high else None


def _allowed(model: type[BaseModel] | None, loc: tuple) -> str | None:
    """The "allowed: ... (why)" of the field at ``loc`` in ``model`` (``bounds.bounded`` writes
    it into each bounded field's description, with the unit), or None."""
    import typing

    cls, field = model, None
    for part in loc:
        if isinstance(part, int):
            continue
        if cls is None or part not in cls.model_fields:
            return None
        field = cls.model_fields[part]
        kinds = [field.annotation, *typing.get_args(field.annotation)]
        kinds += [a for k in kinds for a in typing.get_args(k)]
        cls = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
    text = (field.description or "") if field is not None else ""
    if "allowed: " in text:
        return text[text.index("allowed: ") :]
    item = field is not None and bool(loc) and isinstance(loc[-1], int)  # a list's item refused
    return _item_allowed(field.annotation) if item else None


def _item_allowed(annotation: Any) -> str | None:
    """The "allowed: ... (why)" of a list field's items (the Bound ``bounds.items_bounded``
    puts beside each item's type), or None."""
    from typing import get_args

    from scalesim.bounds import Bound, allowed_text

    for arg in get_args(annotation):
        found = allowed_text(arg, each=True) if isinstance(arg, Bound) else _item_allowed(arg)
        if found is not None:
            return found
    return None


def validation_message(exc: ValidationError, what: str, model: type[BaseModel] | None = None) -> str:
    """Turn a pydantic ValidationError into one line naming the first bad field; a number out of
    its bounds or not finite (NaN, an infinity, 1e400) with the value given and, with ``model``,
    the field's unit and bounds."""
    errors = exc.errors()
    version = next((e for e in errors if tuple(e.get("loc", ())) == ("schema_version",)), None)
    if version is not None and model is not None and "schema_version" in model.model_fields:
        # another version explains the other fields' problems: say it alone
        given = None if version.get("type") == "missing" else version.get("input")
        return f"{what}: {version_text(given, model)}"
    for error in errors:  # a block of another version inside (a profile's hardware): the same
        loc = tuple(error.get("loc", ()))
        block = _block_model(model, loc[:-1]) if loc[-1:] == ("schema_version",) else None
        if block is not None and "schema_version" in block.model_fields:
            given = None if error.get("type") == "missing" else error.get("input")
            where = ".".join(str(part) for part in loc[:-1])
            return f"{what}: its {where} block: {version_text(given, block, model)}"
    first = errors[0]
    msg = error_text(first)
    loc = tuple(first.get("loc", ()))
    where = ".".join(str(part) for part in loc)
    extra = f" (+{exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    if not where:  # a rule across fields: its sentence names them (its template kept: ``within``)
        return within(msg, f"{what}: {msg}{extra}") if template_of(msg) else f"{what}: {msg}{extra}"
    kind = first.get("type")
    if kind in _RANGE_ERRORS or kind == "finite_number":  # NaN, an infinity: past any bound
        msg = f"{_given(first.get('input'))} given; " + (
            _allowed(model, loc) or (NOT_FINITE if kind == "finite_number" else msg))
    elif kind in _KIND_WORDS:  # '2.5' for a device count: what it is not, and what is allowed
        allowed = _allowed(model, loc)
        msg = (f"{_given(first.get('input'))} given; {_KIND_WORDS[kind]}"
               + (f"; {allowed}" if allowed else ""))
    elif kind in ("extra_forbidden", "missing"):
        # a hand-edited file or one of another version: say what to do, and where the fields are
        listed = _schema_name(model)
        see = f"; scalesim schema {listed} lists the fields" if listed else ""
        msg = (
            "not a field this scalesim reads (a typo, or another version's field): remove it"
            if first["type"] == "extra_forbidden"
            else "missing: this field is required"
        )
        msg += see
    return f"{what}: field '{where}': {msg}{extra}"


def _given(value: Any) -> str:
    """A refused number as given: '1e20', 'nan', 'inf' (a float read from JSON), a CSV cell's
    text as typed ('1e400'), at most 40 characters (``excerpt``)."""
    return number(value) if isinstance(value, int | float) else excerpt(str(value))


def _block_model(model: type[BaseModel] | None, loc: tuple) -> type[BaseModel] | None:
    """The pydantic model of the block at ``loc`` inside ``model`` (('hardware',) of a profile:
    Hardware), or None where ``loc`` is empty or names no model."""
    import typing

    cls = None
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
        kinds = [annotation, *typing.get_args(annotation)]
        kinds += [a for k in kinds for a in typing.get_args(k)]
        cls = model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)),
                           None)
    return cls


def _version_number(version: Any) -> int | None:
    """The N of 'scalesim-hardware/N', or None."""
    tail = version.rpartition("/")[2] if isinstance(version, str) else ""
    return int(tail) if tail.isdigit() else None


def newer_version(given: Any, expected: str) -> bool:
    """True where ``given``'s N ('scalesim-profile/N') is above ``expected``'s: a newer scalesim
    wrote it (a version without a number counts as 0)."""
    return (_version_number(given) or 0) > (_version_number(expected) or 0)


def version_text(given: Any, model: type[BaseModel], outer: type[BaseModel] | None = None) -> str:
    """What to do with a file (or, with ``outer``, a block of an ``outer`` file) of another
    ``schema_version`` than ``model``'s: the version this scalesim reads, that nothing converts
    another, and the fix: a newer scalesim for a newer version, else re-run what wrote the file
    (``outer``'s writer for a block)."""
    from scalesim import __version__

    expected = model.model_fields["schema_version"].default
    name = _schema_name(model)
    other = _schema_kind_of_version(given)
    if other is not None and other != name and outer is None:
        # a file of another kind (a calibration profile given as --hardware), not another version
        return (
            f"a scalesim {other} file (schema_version {given!r}), not a {name} file: "
            f"commands take it as --{other} FILE"
        )
    writer = _schema_name(outer) if outer is not None else name
    redo = (
        "re-run the scalesim calibrate command that wrote it (with the same --from-... "
        "files if it read logs, traces or a topology)"
        if writer == "profile"
        else "write it again for this version"
        + (f" (scalesim schema {writer} lists the fields)" if writer else "")
    )
    fix = f": {redo}"
    if newer_version(given, expected):
        fix = f"; a newer scalesim wrote it: upgrade scalesim, or {redo}"
    said = "no schema_version" if given is None else f"schema_version is {given!r}"
    return f"{said}; this scalesim ({__version__}) reads {expected!r} only and converts no other version{fix}"


def _schema_kind_of_version(version: Any) -> str | None:
    """The ``scalesim schema`` name (profile, hardware, ...) whose current ``schema_version`` is
    ``version``, or None (another version, or not a scalesim format)."""
    from scalesim.schemas import SCHEMAS

    return next(
        (name for name, m in SCHEMAS.items() if m.model_fields["schema_version"].default == version),
        None,
    )


def _schema_name(model: type[BaseModel] | None) -> str | None:
    """The ``scalesim schema`` name of ``model`` (profile, hardware, ...), or None."""
    from scalesim.schemas import SCHEMAS

    return next((name for name, m in SCHEMAS.items() if m is model), None)


def parse_model(data: Any, model: type[ModelT], what: str,
                context: dict[str, Any] | None = None) -> ModelT:
    """Validate already-parsed JSON against ``model``; errors become one-line ScalesimError.
    ``context``: pydantic's validation context (``schemas.FIELDS_ALONE``: the fields alone)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ScalesimError(validation_message(exc, what, model)) from None


def load_model(path: str | os.PathLike[str], model: type[ModelT]) -> ModelT:
    """Read and validate a JSON file as ``model``."""
    return parse_model(read_json(path), model, str(path))
