"""How long a calibration takes on this machine, per phase (docs/performance.md).

    python benchmarks/calibration_time.py [--nproc 2] [--flags "--quick"] ...

Runs ``torchrun --standalone --nproc-per-node=N -m scalesim.calibration`` once per flag set (the
default run and ``--quick`` unless ``--flags`` is given), and prints the wall time of the whole
command (process start-up included) and of each phase, read from the state folder.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("compute", "collectives", "loader", "jitter", "noise")


def one_run(nproc: int, flags: list[str], folder: Path) -> dict:
    out = folder / "profile.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={nproc}", "-m", "scalesim.calibration", "--no-progress",
           "--out", str(out), *flags]
    started = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"calibration failed:\n{result.stderr[-2000:]}")
    phases = {}
    for phase in PHASES:
        path = Path(f"{out}.state") / f"phase-{phase}.json"
        if path.exists():
            phases[phase] = json.loads(path.read_text())["wall_s"]
    return {"flags": " ".join(flags) or "(defaults)", "wall_s": wall, "phases": phases}


def main() -> int:
    from scalesim.cli.main import OneLineParser  # here: the module imports no scalesim

    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--flags", action="append",
                        help="a flag set, quoted (repeatable); default: '' and '--quick'")
    args = parser.parse_args()
    flag_sets = [shlex.split(f) for f in (args.flags or ["", "--quick"])]
    print(f"machine: {os.cpu_count()} cores; {args.nproc} processes (torchrun, gloo on CPU)")
    print(f"{'flags':<28} {'total s':>8} " + " ".join(f"{p:>11}" for p in PHASES))
    for flags in flag_sets:
        with tempfile.TemporaryDirectory() as tmp:
            row = one_run(args.nproc, flags, Path(tmp))
        cells = " ".join(f"{row['phases'].get(p, float('nan')):>11.1f}" for p in PHASES)
        print(f"{row['flags']:<28} {row['wall_s']:>8.1f} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
