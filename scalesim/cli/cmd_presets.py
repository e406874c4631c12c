"""scalesim presets: the built-in hardware and workload presets with their sources."""

from __future__ import annotations

import argparse

from scalesim.figures import GIB_BYTES, link_GBps, sig3
from scalesim.jsonio import to_json_text

NAME = "presets"
HELP = "list built-in hardware and workload presets and where their numbers come from"
EXAMPLE = "example:\n  scalesim presets --json | python -m json.tool"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the presets as JSON")


def run(args: argparse.Namespace) -> int:
    from scalesim import presets
    from scalesim.cli.cmd_predict import intra_words
    from scalesim.figures import count, rate, whole

    if args.json:
        print(to_json_text({
            "hardware": {k: v.model_dump() for k, v in presets.HARDWARE.items()},
            "workloads": {k: v.model_dump() for k, v in presets.WORKLOADS.items()},
            "transformers": {k: {"shape": shape.model_dump(), "params": shape.param_count(),
                                 "published_params": published, "source": source}
                             for k, (shape, published, source) in presets.TRANSFORMERS.items()},
            "default": {"hardware": presets.DEFAULT_HARDWARE, "workload": presets.DEFAULT_WORKLOAD},
        }, indent=2))
        return 0
    print("hardware presets (--hardware NAME):")
    for name, hw in presets.HARDWARE.items():
        mark = " (default)" if name == presets.DEFAULT_HARDWARE else ""
        trays = (f" (one NVLink domain, in allocation units of {hw.allocation_devices})"
                 if hw.allocation_devices != hw.devices_per_node else "")
        print(f"  {name}{mark}: {hw.devices_per_node}x {hw.device_name}{trays}, "
              f"{hw.device_memory_bytes / GIB_BYTES:.0f} GiB; intra {hw.intra_node.kind} "
              f"{intra_words(hw.intra_node)}"
              + (f" (all-reduce {link_GBps(hw.intra_node.allreduce_busbw_GBps)} "
                 f"{hw.intra_node.allreduce_algorithm})"
                 if hw.intra_node.allreduce_busbw_GBps else "")
              + f"; inter {hw.inter_node.kind} {link_GBps(hw.inter_node.busbw_GBps)} busbw; "
              f"figures for {hw.inter_node.algorithm or 'an unstated algorithm'}")
        print(f"      source: {hw.source}")
        print(f"      intra: {hw.intra_node.source}")
        print(f"      inter: {hw.inter_node.source}")
    print("\nworkload presets (--workload NAME):")
    for name, wl in presets.WORKLOADS.items():
        mark = " (default)" if name == presets.DEFAULT_WORKLOAD else ""
        print(f"  {name}{mark}: {wl.params / 1e6:,.0f}M params, {wl.wire_bytes_per_param:g} B "
              f"per gradient on the wire, micro-batch {wl.micro_batch} {wl.sample_unit}")
        print(f"      source: {wl.source}")
        if name in presets.TRANSFORMERS:  # one model under one name (presets.BERT_LARGE)
            print(f"      shape: {presets.TRANSFORMERS[name][0].words()}, the transformer "
                  f"preset {name} below: plan and diagnose --workload {name} use it")
        for ref in wl.reference:
            run = (f"{count(ref.devices, 'device')}, {ref.strategy}, "
                   + ("communication included" if ref.includes_communication
                      else "compute only"))
            print(f"      compute: {rate(ref.samples_per_s, wl.sample_unit)} per {ref.device_name} at batch "
                  f"{ref.micro_batch} x {ref.accumulation} ({whole(ref.samples_per_step)} samples per "
                  f"step; {run}): {ref.source}")
    print("\ntransformer presets (scalesim plan --workload NAME; also --workload NAME of predict, "
          "sweep, decide and goal, split with --tp --pp):")
    for name, (shape, published, source) in presets.TRANSFORMERS.items():
        print(f"  {name}: {sig3(shape.param_count() / 1e9)}B params (published "
              f"{published / 1e9:g}B)"
              f", {shape.words()}")
        if name in presets.WORKLOADS:
            print(f"      the workload preset {name} above, the same model: predict, sweep and "
                  "the app take that one (a parameter count with this shape's activations)")
        print(f"      source: {source}")
    return 0
