"""scalesim schema NAME: the JSON Schema of a file format."""

from __future__ import annotations

import argparse

from scalesim.jsonio import to_json_text

NAME = "schema"
HELP = "print the JSON Schema of a file format (profile, hardware, workload, scenario, layout)"
EXAMPLE = "example:\n  scalesim schema profile > profile.schema.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", choices=["profile", "hardware", "workload", "scenario", "layout"])


def run(args: argparse.Namespace) -> int:
    from scalesim.layout import ParallelLayout
    from scalesim.schemas import SCHEMAS

    model = ParallelLayout if args.name == "layout" else SCHEMAS[args.name]
    print(to_json_text(model.model_json_schema(), what="the schema"))
    return 0
