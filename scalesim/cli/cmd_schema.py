"""scalesim schema NAME: the JSON Schema of a file format."""

from __future__ import annotations

import argparse

from scalesim.jsonio import to_json_text

NAME = "schema"
HELP = "print the JSON Schema of a file format (profile, hardware, workload, scenario)"
EXAMPLE = "example:\n  scalesim schema profile > profile.schema.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", choices=["profile", "hardware", "workload", "scenario"])


def run(args: argparse.Namespace) -> int:
    from scalesim.schemas import SCHEMAS

    print(to_json_text(SCHEMAS[args.name].model_json_schema(), what="the schema"))
    return 0
