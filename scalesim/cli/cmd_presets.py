"""scalesim presets: the built-in hardware and workload presets with their sources."""

from __future__ import annotations

import argparse

from scalesim.jsonio import to_json_text

NAME = "presets"
HELP = "list built-in hardware and workload presets and where their numbers come from"
EXAMPLE = "example:\n  scalesim presets --json | python -m json.tool"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the presets as JSON")


def run(args: argparse.Namespace) -> int:
    from scalesim import presets

    if args.json:
        print(to_json_text({
            "hardware": {k: v.model_dump() for k, v in presets.HARDWARE.items()},
            "workloads": {k: v.model_dump() for k, v in presets.WORKLOADS.items()},
            "default": {"hardware": presets.DEFAULT_HARDWARE, "workload": presets.DEFAULT_WORKLOAD},
        }, indent=2))
        return 0
    print("hardware presets (--hardware NAME):")
    for name, hw in presets.HARDWARE.items():
        mark = " (default)" if name == presets.DEFAULT_HARDWARE else ""
        print(f"  {name}{mark}: {hw.devices_per_node}x {hw.device_name}, "
              f"{hw.device_memory_bytes / 2**30:.0f} GiB; intra {hw.intra_node.kind} "
              f"{hw.intra_node.busbw_GBps:g} GB/s; inter {hw.inter_node.kind} "
              f"{hw.inter_node.busbw_GBps:g} GB/s busbw")
        print(f"      source: {hw.source}")
        print(f"      intra: {hw.intra_node.source}")
        print(f"      inter: {hw.inter_node.source}")
    print("\nworkload presets (--workload NAME):")
    for name, wl in presets.WORKLOADS.items():
        mark = " (default)" if name == presets.DEFAULT_WORKLOAD else ""
        print(f"  {name}{mark}: {wl.params / 1e6:,.0f}M params, {wl.wire_bytes_per_param:g} B "
              f"per gradient on the wire, micro-batch {wl.micro_batch} {wl.sample_unit}")
        print(f"      source: {wl.source}")
        for ref in wl.reference:
            print(f"      compute: {ref.samples_per_s:.4g}/s per {ref.device_name} at batch "
                  f"{ref.micro_batch}: {ref.source}")
    return 0
