"""A benchmark's bad input in one line, as ``scalesim`` says it (``scalesim.cli.main``):
``run_script(main)`` runs a script's ``main`` and prints a ``ScalesimError`` (a missing or
garbled input file, an unknown preset) or an OS error on a named file as 'PROG: error: ...' on
stderr, exit 2, never a traceback; ``int_list`` reads a comma list of whole numbers for
argparse, whose own errors are one line and exit 2 as well."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from scalesim.errors import ScalesimError, one_line


def refuse(message: str) -> NoReturn:
    """'PROG: error: MESSAGE' on stderr (one line), exit 2."""
    print(f"{os.path.basename(sys.argv[0])}: error: {one_line(message)}", file=sys.stderr)
    sys.exit(2)


def run_script(main: Callable[[], int | None]) -> NoReturn:
    """Exit with ``main()``'s code (None: 0); its bad input refused in one line (``refuse``)."""
    try:
        code = main()
    except ScalesimError as exc:
        refuse(str(exc))
    except OSError as exc:
        if exc.filename is None:  # not a file's: a fault of the script, shown whole
            raise
        refuse(f"{exc.filename}: {exc.strerror or type(exc).__name__}")
    sys.exit(code or 0)


def int_list(text: str) -> list[int]:
    """'2000,20000' -> [2000, 20000] (argparse's ``type``)."""
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma list of whole numbers like 1,2,4") from None
