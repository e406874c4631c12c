"""scalesim topo: what nvidia-smi topo -m says about a server (GPUs, links, NICs)."""

from __future__ import annotations

import argparse

from scalesim.errors import file_path

NAME = "topo"
HELP = "read nvidia-smi topo -m: GPUs, the link kind of each pair, NICs and their affinity"
EXAMPLE = """examples:
  nvidia-smi topo -m > topo.txt && scalesim topo topo.txt
  nvidia-smi topo -m | scalesim topo -
  scalesim topo --json topo.txt        # the Topology record a profile stores
  scalesim topo                        # runs nvidia-smi topo -m on this machine
then: scalesim calibrate --from-topo topo.txt --out my-node.json (adds it to a profile)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", metavar="FILE", type=file_path,
                   help="saved nvidia-smi topo -m output, or - for stdin (default: run "
                   "nvidia-smi here)")
    p.add_argument("--json", action="store_true", help="print the Topology as JSON")


def run(args: argparse.Namespace) -> int:
    import sys

    from scalesim.errors import ScalesimError
    from scalesim.sources import nvidia_smi

    if args.file is None:
        topo, what = nvidia_smi.topology_here()
        if topo is None:
            raise ScalesimError(f"{what}; give a saved file: scalesim topo topo.txt")
    elif args.file == "-":
        topo = nvidia_smi.parse_topo_text(sys.stdin.read(), "stdin")
    else:
        topo = nvidia_smi.parse_topo_file(args.file)
    if args.json:
        from scalesim.jsonio import to_json_text

        print(to_json_text(topo.model_dump(), what="the topology"))
    else:
        print("\n".join(nvidia_smi.describe_topology(topo)))
    return 0
