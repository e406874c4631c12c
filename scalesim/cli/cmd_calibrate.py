"""scalesim calibrate: measure this machine (compute, links, loader, jitter, noise) into a profile."""

from __future__ import annotations

import argparse

NAME = "calibrate"
HELP = "measure this machine with short real runs and write a calibration profile"
EXAMPLE = """examples:
  scalesim calibrate --out my-node.json                    # one process
  scalesim calibrate --nproc-per-node 8 --out my-node.json # all local GPUs, via torchrun
  scalesim calibrate --quick --phases compute,loader       # a fast first look
  scalesim calibrate --resume --out my-node.json           # keep finished phases
  torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
      -m scalesim.calibration --out two-nodes.json         # several servers
then: scalesim predict --profile my-node.json --devices 1,2,4,8,16"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from scalesim.bounds import flag_type
    from scalesim.calibration.options import add_arguments as add_calibration_arguments

    p.add_argument("--nproc-per-node", type=flag_type("devices_per_node"), default=1, metavar="N",
                   help="start N processes on this machine with torchrun (default 1: this one)")
    add_calibration_arguments(p)


def run(args: argparse.Namespace) -> int:
    from scalesim.errors import ScalesimError

    if args.nproc_per_node < 1:
        raise ScalesimError("--nproc-per-node must be 1 or more")
    if args.nproc_per_node == 1:
        from scalesim.calibration.runner import calibrate

        calibrate(args)
        return 0
    import subprocess
    import sys

    from scalesim.calibration.options import to_argv

    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={args.nproc_per_node}", "-m", "scalesim.calibration",
               *to_argv(args, skip=("nproc_per_node", "command"))]
    return subprocess.run(command, check=False, env=child_environment(args)).returncode


def child_environment(args: argparse.Namespace, environ=None) -> dict[str, str]:
    """The environment of the processes torchrun starts: torchrun sets OMP_NUM_THREADS=1 when
    it is unset, so it is set here to this machine's share (cores / processes) unless the user
    set it or gave --threads (scalesim.calibration.options.default_threads)."""
    import os

    from scalesim.calibration.options import default_threads

    env = dict(os.environ if environ is None else environ)
    if args.threads is None and not env.get("OMP_NUM_THREADS", "").strip():
        env["OMP_NUM_THREADS"] = str(default_threads(args.nproc_per_node, env))
    return env
