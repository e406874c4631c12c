"""scalesim calibrate: measure this machine (compute, links, loader, jitter, noise) into a profile."""

from __future__ import annotations

import argparse

from scalesim.errors import file_path

NAME = "calibrate"
HELP = "measure this machine with short real runs and write a calibration profile"
EXAMPLE = """examples:
  scalesim calibrate --out my-node.json                    # one process
  scalesim calibrate --nproc-per-node 8 --out my-node.json # all local GPUs, via torchrun
  scalesim calibrate --quick --phases compute,loader       # a fast first look
  scalesim calibrate --resume --out my-node.json           # keep finished phases
  torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
      -m scalesim.calibration --out two-nodes.json         # several servers
from data you already have (no torch needed; updates --out in place when it exists):
  scalesim calibrate --from-nccl-tests node.txt two-nodes.txt --out my-node.json
  scalesim calibrate --from-trace 32=rank0.json.gz 32=rank1.json.gz 64=b64/rank0.json --out my-node.json
  scalesim calibrate --from-topo topo.txt --out my-node.json   # nvidia-smi topo -m
then: scalesim predict --profile my-node.json --devices 1,2,4,8,16"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from scalesim.bounds import flag_type
    from scalesim.calibration.options import add_arguments as add_calibration_arguments

    p.add_argument("--nproc-per-node", type=flag_type("devices_per_node"), default=1, metavar="N",
                   help="start N processes on this machine with torchrun (default 1: this one)")
    add_calibration_arguments(p)
    g = p.add_argument_group("from data you already have (instead of measuring)")
    g.add_argument("--from-nccl-tests", nargs="+", metavar="[intra=|inter=]FILE",
                   help="all_reduce_perf / reduce_scatter_perf / all_gather_perf output, one file "
                   "per run: fits the link levels they measured (the header's hosts tell the "
                   "level; inter= or intra= says it for a log without them)")
    g.add_argument("--from-trace", nargs="+", metavar="[B=]FILE",
                   help="torch.profiler (Kineto) traces of your job, one per rank; B= the "
                   "micro-batch of that run (or --micro-batch for all): compute, backward share, "
                   "jitter")
    g.add_argument("--from-topo", metavar="FILE", type=file_path,
                   help="nvidia-smi topo -m output: the topology")
    g.add_argument("--base", metavar="PROFILE|PRESET",
                   help="profile to start from, or a hardware preset (scalesim presets) for a "
                   "new profile of it (default: --out when it exists, else the presets: for "
                   "nccl-tests logs the preset of their GPU, chosen by their GPUs per server, "
                   "inter-server busbw or NCCL transport)")


# What --from-nccl-tests / --from-trace / --from-topo read besides their files
# (``sources.calibrate_from.run_from_sources``); every other flag sets up a measurement.
FROM_FLAGS = {"out", "name", "base", "micro_batch", "no_progress", "command",
              "from_nccl_tests", "from_trace", "from_topo"}


def measuring_flags_given(args: argparse.Namespace) -> list[str]:
    """The measurement flags ``args`` sets to other than their defaults, as typed (--quick)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    return ["--" + name.replace("_", "-") for name, value in vars(args).items()
            if name in defaults and name not in FROM_FLAGS and value != defaults[name]]


def run(args: argparse.Namespace) -> int:
    from scalesim.errors import ScalesimError

    if args.from_nccl_tests or args.from_trace or args.from_topo is not None:  # '' refused there
        from scalesim.sources.calibrate_from import run_from_sources

        if given := measuring_flags_given(args):
            raise ScalesimError(
                f"{', '.join(given)}: --from-nccl-tests, --from-trace and --from-topo read your "
                "files and measure nothing, so this changes nothing; drop it, or run "
                "scalesim calibrate without --from-... to measure")
        return run_from_sources(args)
    if args.base is not None:
        raise ScalesimError(f"--base {args.base}: the profile that --from-nccl-tests, "
                            "--from-trace or --from-topo update; a measurement writes a new "
                            "profile and reads none: drop --base, or add a --from-... source")
    if args.nproc_per_node < 1:
        raise ScalesimError("--nproc-per-node must be 1 or more")
    if args.nproc_per_node == 1:
        from scalesim.calibration.runner import calibrate

        calibrate(args)
        return 0
    import sys

    from scalesim.calibration.options import THREADS_NOTE_ENV, ranks_on_cpu, require_extra, to_argv
    from scalesim.calibration.runner import check_flags
    from scalesim.cli.torchrun_output import run_filtered

    require_extra()  # torchrun is torch's: one line here where torch is missing
    check_flags(args)  # flags no rank can run: one line here, before torchrun starts N of them

    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={args.nproc_per_node}", "-m", "scalesim.calibration",
               *to_argv(args, skip=("nproc_per_node", "command"))]
    env = child_environment(args)
    if (note := env.get(THREADS_NOTE_ENV)) and ranks_on_cpu(args.device, _cuda_available):
        # on stdout, as a one-process run's note: stderr is for the one line of an error; said
        # only where the ranks compute on CPU (not --device auto on a machine with GPUs)
        print(f"scalesim calibrate: note: {note}", flush=True)
    return run_filtered(command, env, sys.stderr.buffer)


def _cuda_available() -> bool:
    """Whether torch sees a CUDA device here, as the ranks' ``--device auto`` will."""
    import torch

    return torch.cuda.is_available()


def child_environment(args: argparse.Namespace, environ=None,
                      load: float | None = None) -> dict[str, str]:
    """The environment of the processes torchrun starts: torchrun sets OMP_NUM_THREADS=1 when
    it is unset, so it is set here to this machine's share (cores / processes, less the cores
    the load average ``load`` keeps busy, read once here when None:
    scalesim.calibration.options.default_threads) unless the user set it or gave --threads;
    ``THREADS_NOTE_ENV`` then carries the line that says so (``threads_line``), which
    ``scalesim calibrate`` prints once and rank 0 keeps in the profile's notes."""
    import os

    from scalesim.calibration.options import (
        THREADS_NOTE_ENV,
        default_threads,
        machine_load,
        threads_line,
    )

    env = dict(os.environ if environ is None else environ)
    env.pop(THREADS_NOTE_ENV, None)  # only the line said for this run
    if args.threads is None and not env.get("OMP_NUM_THREADS", "").strip():
        load = machine_load() if load is None else load
        threads = default_threads(args.nproc_per_node, env, load=load)
        env["OMP_NUM_THREADS"] = str(threads)
        env[THREADS_NOTE_ENV] = threads_line(args.nproc_per_node, threads, load)
    return env
