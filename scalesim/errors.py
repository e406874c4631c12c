"""One exception type for every bad input, so callers can catch it and the CLI can print one line."""

from __future__ import annotations

import string
from contextlib import contextmanager


class _KnobSlots:
    """``KNOB.tp_overlap`` is '{tp_overlap}': where a refusal's template (``Refusal.template``)
    names a knob by its control, written inside an f-string of the line's values."""

    def __getattr__(self, field: str) -> str:
        if field.startswith("__"):  # copy, pickle and the like ask for dunders: not a knob
            raise AttributeError(field)
        return "{" + field + "}"


KNOB = _KnobSlots()


def template_fields(template: str) -> tuple[str, ...]:
    """The knobs a refusal's template names ('{tp_overlap} needs {tp} 2 or more' -> tp_overlap,
    tp), in order, each once."""
    return tuple(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(template)
                               if name))


# what a value of another kind than its field's is, in one set of words: the bounds table's
# (``bounds.Bound.problem``) and the app's link warnings (``jsonio.error_text``)
NOT_WHOLE = "not a whole number"
NOT_NUMBER = "not a number"
NOT_FINITE = "not a finite number"


def as_literal(text: str) -> str:
    """``text`` as a template's literal part: its braces doubled (a template names knobs only;
    a profile's or file's name quoted in one may hold a brace)."""
    return text.replace("{", "{{").replace("}", "}}")


class Refusal(str):
    """One line refusing a value (a layout rule's, a check's) with the knobs it is about
    (``knobs``, as ``ScalesimError``'s) and those whose controls it names in its caller's words
    (``controls_named``, as ``ScalesimError``'s): a plain str to every reader (joined, compared,
    printed), and ``ScalesimError(refusal)`` carries both. ``template``: the line with each
    knob it names by its control written '{field}' ('' where it names none as a control and
    says the same to every reader: a line for the app alone may name none, ``cli_template``), so
    that a caller with other names for the controls (the app's labels) says it in them
    (``in_words_of``); the line itself names them as the CLI's flags (``layout.knob_refusal``).
    ``cli_template``: the line's own template where it says more than ``template`` (a schema
    field's check the value broke, for the CLI's user), so that a CLI naming the knobs its own
    way (the sweep's '--seq-len-values') keeps it; '' where it is ``template``."""

    knobs: tuple[str, ...] = ()
    controls_named: tuple[str, ...] = ()
    template: str = ""
    cli_template: str = ""

    def __new__(cls, text: str, knobs=(), controls_named=(), template: str = "",
                cli_template: str = ""):
        self = super().__new__(cls, text)
        self.knobs = tuple(knobs)
        self.controls_named = tuple(controls_named)
        self.template = template
        self.cli_template = cli_template
        return self


def template_of(value, cli: bool = False) -> str:
    """The template (``Refusal.template``) of ``value`` (a ``Refusal``, a ``ScalesimError``);
    ``cli``: the CLI's where the line has its own (``Refusal.cli_template``); '' for anything
    else."""
    template = (cli and getattr(value, "cli_template", "")) or getattr(value, "template", "")
    return template if isinstance(template, str) else ""


def within(value, message: str) -> Refusal:
    """``message``, a longer line that quotes ``value`` (a ``Refusal``, a ``ScalesimError``)
    whole ('layout at 16 devices: <it>', '<it> (at 16 devices)'), with ``value``'s knobs,
    controls named and templates (its quote's part of them, the CLI's own too): a caller that
    says where a refusal came from keeps what its callers read."""
    line, template = str(value), template_of(value)
    at = message.find(line) if template else -1

    def quoted(own: str) -> str:  # ``own``, a template of the quote, as one of the message
        return as_literal(message[:at]) + own + as_literal(message[at + len(line):]) if own else ""

    return Refusal(message, knobs_of(value), controls_named_of(value),
                   quoted(template) if at >= 0 else "",
                   quoted(getattr(value, "cli_template", "")) if at >= 0 else "")


def with_text_removed(value, pattern: str) -> Refusal:
    """``value`` (a refusal) with each match of ``pattern`` (a regular expression that matches
    no brace: a temporary folder's path) removed from its line and its templates alike, its
    knobs and controls named kept: a caller that hides where it copied a file keeps what its
    readers say (``in_words_of``)."""
    import re

    def cut(text: str) -> str:
        return re.sub(pattern, "", text)

    return Refusal(cut(str(value)), knobs_of(value), controls_named_of(value),
                   cut(template_of(value)), cut(getattr(value, "cli_template", "")))


def said_at(where: str, value) -> Refusal:
    """``value`` (a refusal) said of ``where`` ('16 devices') as one sentence: 'at 16 devices,
    shard group 3 does not divide dp 16; ...', not a parenthesis after its own ('(e.g. 16:
    full sharding) (at 16 devices)'); one that starts so already is kept as it is (a caller
    that says the count a refusal came from does not say it twice). ``within``: its template
    kept."""
    line, at = str(value), f"at {where}, "
    return within(value, line if line.startswith(at) else at + line)


def unsaid_at(where: str, value) -> Refusal:
    """``value`` (a refusal of the one count ``where``, '64 devices') without that count, for a
    caller whose sentence names it first ('64 devices, ..., cannot run: <it>'): its opening
    'at 64 devices, ' (``said_at``) and a '(64 devices)' after the ranks it has are dropped, the
    rule and the fix kept; its knobs and controls named kept, not its template."""
    line = str(value).removeprefix(f"at {where}, ").replace(f" ({where})", "")
    return Refusal(line, knobs_of(value), controls_named_of(value))


def joined(sep: str, parts) -> Refusal:
    """``parts`` (lines, ``Refusal`` s among them) joined by ``sep`` as one line, with each
    part's template kept (its literal text where it has none): a caveat made of two refusals
    ('...: {params} pins it; ... give {params} to rank them') is said in its reader's words as a
    whole (``in_words_of``); and the CLI's own template where a part has one
    (``Refusal.cli_template``; the others' templates beside it), so that a CLI that says the
    whole in its words (``in_words_of(..., cli=True)``) keeps each part's. ``knobs`` and
    ``controls_named``: the parts', in order."""
    parts = [p for p in parts if p]

    def of(cli: bool) -> str:  # the parts' templates joined, '' where none has one
        if not any(template_of(p, cli) for p in parts):
            return ""
        return sep.join(template_of(p, cli) or as_literal(str(p)) for p in parts)

    template = of(False)
    cli = of(True) if any(getattr(p, "cli_template", "") for p in parts) else ""
    return Refusal(sep.join(map(str, parts)),
                   tuple(dict.fromkeys(k for p in parts for k in knobs_of(p))),
                   tuple(dict.fromkeys(k for p in parts for k in controls_named_of(p))), template,
                   cli)


def in_words_of(value, named, cli: bool = False) -> Refusal:
    """``value``'s line (a ``Refusal``, a ``ScalesimError``) with each knob its template names
    said as ``named`` says it (``named(field)``: the app's control label), those knobs added to
    its controls named; its own line where it has no template (it names no control). ``cli``:
    ``named`` is a CLI's (flags), which says the CLI's line (``Refusal.cli_template``)."""
    template = template_of(value, cli)
    if not template:
        return Refusal(str(value), knobs_of(value), controls_named_of(value))
    fields = template_fields(template)
    text = template.format_map({f: named(f) for f in fields})
    return Refusal(text, knobs_of(value),
                   tuple(dict.fromkeys((*controls_named_of(value), *fields))), template)


def knobs_of(value) -> tuple[str, ...]:
    """The knobs ``value`` (a ``Refusal``, a ``ScalesimError``, a pydantic error's exception)
    names; () for anything else (a plain str, another exception)."""
    knobs = getattr(value, "knobs", ())
    return tuple(knobs) if isinstance(knobs, tuple) else ()


def controls_named_of(value) -> tuple[str, ...]:
    """The knobs whose controls ``value`` (a ``Refusal``, a ``ScalesimError``) names in its
    caller's words (``ScalesimError.controls_named``); () for anything else."""
    named = getattr(value, "controls_named", ())
    return tuple(named) if isinstance(named, tuple) else ()


class ScalesimError(ValueError):
    """Bad input: a wrong value, an unknown preset, a malformed or foreign file.

    The message is one line that says what is wrong and how to fix it. ``knobs``: the what-if
    controls it refuses the values of, the ones its fix asks to change, as the knob table's
    fields (``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``; a preset link's ``nics_per_node`` and
    ``gbit_per_nic`` by their quantity's name); () where it names none; given, or the message's
    own where it is a ``Refusal``. ``controls_named``: those of its knobs whose controls the
    line names itself in the words its caller passed (a ``goal.GoalControls``, a ``named``
    function: the app's control labels), set where the line is built from them; () where it
    names them as the CLI's flags or as fields, so that a caller naming the controls after the
    line (the app's ``named_controls.controls_to_change``) says only the others, without
    reading the text. Not part of the message: ``str`` and ``args`` are the line alone (a plain
    str), and a pickled error keeps its knobs and controls named.
    """

    knobs: tuple[str, ...] = ()
    controls_named: tuple[str, ...] = ()
    template: str = ""
    cli_template: str = ""  # the line's own where it says more than ``template`` (``Refusal``'s)

    def __init__(self, *args, knobs=(), controls_named=()):
        knobs = tuple(knobs) or (knobs_of(args[0]) if args else ())
        named = tuple(controls_named) or (controls_named_of(args[0]) if args else ())
        template = template_of(args[0]) if len(args) == 1 else ""
        cli = getattr(args[0], "cli_template", "") if len(args) == 1 else ""
        super().__init__(*(str(a) if isinstance(a, Refusal) else a for a in args))
        if knobs:  # only then in the instance: an error without knobs pickles as before
            self.knobs = knobs
        if named:
            self.controls_named = named
        if template:
            self.template = template
        if cli:
            self.cli_template = cli

    def reworded(self, message: str) -> ScalesimError:
        """This error's knobs, controls named and template on another line (``message``: this
        one with a prefix or what the caller adds: ``within``), for a caller that says where the
        refusal came from."""
        return ScalesimError(within(self, message))


def require_model(value, model: type, name: str):
    """``value`` if it is a ``model`` instance, else ScalesimError naming the argument ``name``.

    Public functions call this on their model arguments, so a dict, None or another type gives
    one clear line instead of an AttributeError deep inside.
    """
    if isinstance(value, model):
        return value
    got = "None" if value is None else type(value).__name__
    hint = (f"; build one with {model.__name__}.model_validate(your_dict)"
            if isinstance(value, dict) else "")
    raise ScalesimError(f"{name}: expected a {model.__name__}, got {got}{hint}")


def require_path(value, name: str):
    """``value`` if it is a file path (str or os.PathLike), else ScalesimError naming ``name``."""
    import os

    if isinstance(value, str | os.PathLike) and str(value):
        if "\x00" in str(value):  # no file has one; open() would raise ValueError
            raise ScalesimError(f"{name}: a file path cannot hold a NUL character")
        return value
    got = "an empty string" if isinstance(value, str) else (
        "None" if value is None else type(value).__name__)
    raise ScalesimError(f"{name}: expected a file path, got {got}")


@contextmanager
def flag_error(name: str = "value"):
    """Inside an argparse ``type=``: a ScalesimError about the value called ``name`` becomes
    argparse's error without its 'name: ' prefix, as argparse names the flag itself
    ('argument --price: ...')."""
    try:
        yield
    except ScalesimError as exc:
        import argparse

        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{name}: ")) from None


def file_path(text: str) -> str:
    """argparse ``type=`` of a file argument: an empty path is refused as the flag's own error
    ('argument --profile: expected a file path, got an empty string'), not later as 'path'."""
    with flag_error("path"):
        return require_path(text, "path")


def check_distinct_files(paths, fix: str) -> None:
    """Refuse a file given twice among one flag's files, by the same or another name (compared
    by real path), or a copy of one under another name (the same bytes), in one line ending with
    ``fix``. Every reader of several files uses it: a trace without ``distributedInfo`` takes
    its rank from its place in the list, so a repeat read as two ranks of a job that ran one;
    an nccl-tests log given twice counted each of its sizes twice in the link's fit and was
    listed twice in its source. Two runs never print the same bytes (their times differ in the
    last digit, their traces in every timestamp), so a copy is the same run twice. Only files
    of equal size are read and hashed (once each)."""
    import hashlib
    import os

    seen: dict[str, str] = {}
    by_size: dict[int, list[str]] = {}
    for path in map(str, paths):
        try:
            key = os.path.realpath(path)
        except (OSError, ValueError):  # the reader says what is wrong with such a path
            continue
        if key in seen:
            also = "" if seen[key] == path else f" (as {seen[key]})"
            raise ScalesimError(f"{path}: given twice{also}; {fix}")
        seen[key] = path
        try:
            if os.path.isfile(key):
                by_size.setdefault(os.path.getsize(key), []).append(path)
        except (OSError, ValueError):
            continue
    for same_size in (group for group in by_size.values() if len(group) > 1):
        digests: dict[bytes, str] = {}
        for path in same_size:
            try:
                with open(path, "rb") as f:
                    digest = hashlib.file_digest(f, "sha256").digest()
            except OSError:  # unreadable: its reader says so
                continue
            if digest in digests:
                raise ScalesimError(f"{path}: the same bytes as {digests[digest]} (one run "
                                    f"given twice under two names); {fix}")
            digests[digest] = path


def require_text(value, name: str) -> str:
    """``value`` if it is a string (a preset name, file contents), else ScalesimError."""
    if isinstance(value, str):
        return value
    got = "None" if value is None else type(value).__name__
    raise ScalesimError(f"{name}: expected a string, got {got}")


def one_line(message: str) -> str:
    """``message`` on one line, for stderr: a line break inside a quoted value (``--hardware
    $'a\\nb'``) shown as ``\\n``, as Python writes it in a string, and so every other control
    character (an ESC a file's cell or a typed name holds would drive the terminal;
    ``printable``)."""
    return printable(message)


NAME_RULE = ("a name is one line of printable text (no line break, tab, control or "
             "text-direction character)")
# Unicode's explicit text-direction controls: they reorder what a terminal shows after them.
_DIRECTION_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str) -> str:
    """``text`` with every control character (line breaks, tab, ESC ...) and text-direction
    control written as Python writes it in a string (``\\n``, ``\\x1b``, ``\\u202e``): free text
    read from a file (a profile's notes and sources) is printed as is, and a hand-edited or
    shared file must not split a line of the output or drive the terminal."""
    import unicodedata

    if text.isprintable():  # the common case: nothing to escape (a space is printable)
        return text
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in ("Cc", "Zl", "Zp")
                   or c in _DIRECTION_CONTROLS else c for c in text)


def cut_at_word(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else cut at the last word that fits,
    with an ellipsis ('…', counted in) and no trailing space or punctuation before it: a
    word, a figure or a reference ('NVIDIA/nccl#812') is not shown in part."""
    if len(text) <= limit:
        return text
    head = ""
    for word in text.split(" "):
        longer = f"{head} {word}" if head else word
        if len(longer) + 1 > limit:
            break
        head = longer
    return (head or text[:limit - 1]).rstrip(" ,;:-(>") + "…"


def excerpt(text: str, chars: int = 40) -> str:
    """``text`` to quote in a message: at most ``chars`` characters ('...' where cut), control
    characters escaped (``printable``): a cell of a 4 MiB line is not echoed whole."""
    return printable(text if len(text) <= chars else text[:chars - 3] + "...")


def name_problem(text: str) -> str | None:
    """``NAME_RULE`` when ``text`` holds a line break, tab or other control character (which
    would split a printed line or drive the terminal) or a text-direction control (which
    reorders the line as shown), else None."""
    import unicodedata

    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _DIRECTION_CONTROLS
           for c in text):
        return NAME_RULE
    return None
