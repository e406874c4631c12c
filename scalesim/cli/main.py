"""Entry point: discovers ``cmd_*`` modules, parses arguments, turns bad input into one line."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys

from pydantic import ValidationError

import scalesim.cli as cli_package
from scalesim import __version__
from scalesim.cli.given_words import in_given_words
from scalesim.errors import ScalesimError, one_line
from scalesim.jsonio import validation_message

ORDER = ["predict", "sweep", "plan", "presets", "schema", "calibrate", "topo", "validate", "diagnose", "app"]


class OneLineParser(argparse.ArgumentParser):
    """argparse that says 'how to fix it' and exits 2 with one line (its default is 2 as well).

    A value that starts with '-' and a digit (``--deadline -3d``, ``--inter-busbw -1e3``) is a
    value: no flag of scalesim looks like that. Python 3.11's argparse takes only plain negative
    numbers (``-3``, ``-.5``) for values and read ``-3d`` as an unknown option ("expected one
    argument"), so the value never reached its own check (python/cpython#105712: ``-3e12``
    alike; CPython 3.14 widened its pattern, still not to ``-3d``). A negative amount of money
    (``--price -$5``) is a value too, refused by its bounds (``money.parse_usd``).

    A flag is written in full (``allow_abbrev=False``): argparse's prefix match read ``plan --tp``
    as ``--tp-overlap`` (a switch, on in silence) and ``plan --recompute full`` as
    ``--recompute-style``; an abbreviation is an unknown flag, answered with the flag it may mean
    (``_did_you_mean``).
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # see the class's docstring
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"-\$?\.?\d")

    def error(self, message: str):  # noqa: D401 - argparse API
        if re.search(r"not allowed with argument \S+$", message):  # a mutually exclusive pair
            message += ": give one of the two"
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def _command_modules():
    names = [m.name for m in pkgutil.iter_modules(cli_package.__path__) if m.name.startswith("cmd_")]
    modules = [importlib.import_module(f"scalesim.cli.{name}") for name in names]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(modules, key=lambda m: (rank.get(m.NAME, len(ORDER)), m.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="scalesim",
        description="Analytical scaling simulator and what-if planner for distributed training: data "
        "parallelism, ZeRO/FSDP sharding, tensor, sequence, context and pipeline parallelism.",
        epilog="example: scalesim predict --devices 1,2,4,8,16",
    )
    parser.add_argument("--version", action="version", version=f"scalesim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for module in _command_modules():
        p = sub.add_parser(
            module.NAME,
            help=module.HELP,
            description=module.HELP,
            epilog=getattr(module, "EXAMPLE", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _absent_flags=getattr(module, "ABSENT_FLAGS", {}))
    return parser


def _resume_hint(args) -> str:
    """'; --resume keeps ...' after a measuring calibration's Ctrl-C (its finished phases are
    kept in its state folder, as after SIGTERM); '' for every other command and for a
    calibration from files, which measures nothing to keep."""
    sources = ("from_nccl_tests", "from_trace", "from_topo")
    if args.command != "calibrate" or any(getattr(args, name, None) for name in sources):
        return ""
    return "; run it again with --resume to keep the phases already finished"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser: 'scalesim presets: error: ...', its --help
        command = _command_parser(parser, getattr(args, "command", None))
        hint = _absent_flag(args, unknown) or _did_you_mean(command, unknown)
        command.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    if not getattr(args, "_run", None):
        parser.print_help()
        names = ", ".join(_subcommands(parser))
        print(
            f"scalesim: error: no command given: choose one of {names} (see scalesim --help)", file=sys.stderr
        )
        return 2
    try:
        code = int(args._run(args) or 0)
        if sys.stdout is not None:
            sys.stdout.flush()  # here, so that a failing write is reported below, not at exit
        return code
    except ScalesimError as exc:  # a --scenario file's settings named as the file names them
        print(f"scalesim {args.command}: error: {one_line(in_given_words(exc, args))}",
              file=sys.stderr)
        return 2
    except ValidationError as exc:  # a value derived from valid inputs left its bounds
        print(
            f"scalesim {args.command}: error: {one_line(validation_message(exc, exc.title))}", file=sys.stderr
        )
        return 2
    except KeyboardInterrupt:
        print(f"scalesim {args.command}: interrupted{_resume_hint(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped early (| head): nothing more to say
        _discard_stdout()
        return 0
    except OSError as exc:  # printing failed: a full disk (> /dev/full), a vanished terminal
        _discard_stdout()
        reason = exc.strerror or type(exc).__name__
        what = f"cannot write the output ({reason})" if exc.filename is None else f"{exc.filename}: {reason}"
        print(f"scalesim {args.command}: error: {one_line(what)}", file=sys.stderr)
        return 2


def _command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """{command name: its parser}, in the order of the help."""
    for action in parser._subparsers._group_actions:  # noqa: SLF001 - argparse keeps them there
        return action.choices
    return {}


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (the top one where none was given)."""
    return _command_parsers(parser).get(command, parser)


def _did_you_mean(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """'; did you mean --inter-busbw?' for a mistyped flag of ``parser``; for an abbreviation,
    the flags it begins ('; did you mean --devices? flags are written in full'), else ''."""
    import difflib

    flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]  # noqa: SLF001
    for word in unknown:
        if word.startswith("--"):
            typed = word.partition("=")[0]
            if starts := [f for f in flags if f.startswith(typed)]:
                return f"; did you mean {' or '.join(starts)}? flags are written in full"
            close = difflib.get_close_matches(typed, flags, n=1, cutoff=0.75)
            if close:
                return f"; did you mean {close[0]}?"
    return ""


def _absent_flag(args: argparse.Namespace, unknown: list[str]) -> str:
    """'; plan has no --price: ...' for a flag of other commands that the command leaves out
    on purpose (its module's ``ABSENT_FLAGS``: flag -> why), else '' (a near flag's name would
    mislead: plan --price is not --profile)."""
    absent = getattr(args, "_absent_flags", {})
    for word in unknown:
        if why := absent.get(word.partition("=")[0]):
            return f"; {why}"
    return ""


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    """The command names, in the order of the help."""
    return list(_command_parsers(parser))


def _discard_stdout() -> None:
    """Point standard output at /dev/null, so that Python's flush at exit does not print an
    'Exception ignored' traceback for the output that could not be written."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):  # no stdout, or not a real file
        pass


if __name__ == "__main__":
    sys.exit(main())
