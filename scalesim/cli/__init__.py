"""The ``scalesim`` command line. Each ``cmd_*.py`` module here is one subcommand.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``,
and imports nothing heavy at module level (``scalesim --help`` must start fast).
"""
