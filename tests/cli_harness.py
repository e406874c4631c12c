"""Shared helper of the CLI tests: one command run in this process."""

from __future__ import annotations

from scalesim.cli.main import main


def run_cli(capsys, argv: list[str]):
    """Exit code, stdout, stderr of one command in this process (argparse exits are caught)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
