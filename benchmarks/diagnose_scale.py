"""Time and memory of ``scalesim diagnose`` on runs files of 2k, 20k and 200k rows.

    python benchmarks/diagnose_scale.py [--rows 2000,20000,200000] [--keep DIR]

Two shapes of file, each written with a fixed seed:

- ``repeated``: the rows are repeated measurements at 8 device counts (1..128, 8 per server,
  efficiency dropping 10 % past one server, +-5 % noise per row); diagnose aggregates them into
  one median run per device count;
- ``distinct``: every row is its own device count (4, 8, 12, ... on servers of 4; until session 22
  8, 16, 24, ... on servers of 8, whose 200k rows passed the 2**20-device bound that diagnose
  holds runs files to, so the 200k file was refused); diagnose
  keeps every run up to ``scalesim.runs.MAX_FIT_RUNS`` and fits an evenly spaced subset beyond.

Each file is diagnosed (``--json``) in a fresh process, which reports its own wall time, CPU time
and peak resident memory (ru_maxrss); the table is markdown for docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: script_cli
from script_cli import int_list  # noqa: E402

CHILD = """
import json, resource, sys, time
from scalesim.cli.main import main
import io, contextlib
start, cpu = time.perf_counter(), time.process_time()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["diagnose", sys.argv[1], "--json"])
report = json.loads(out.getvalue())
print(json.dumps({"code": code, "wall_s": time.perf_counter() - start,
                  "cpu_s": time.process_time() - cpu,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "runs": len(report["table"]), "cause": report["cause"]["key"]}))
"""

DEVICES = [1, 2, 4, 8, 16, 32, 64, 128]


def write_repeated(path: str, rows: int, rng: np.random.Generator) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("devices,nodes,samples_per_s\n")
        for i in range(rows):
            d = DEVICES[i * len(DEVICES) // rows]
            eff = 1.0 if d <= 8 else 0.9
            fh.write(f"{d},{max(d // 8, 1)},{100.0 * d * eff * rng.uniform(0.95, 1.05):.1f}\n")


def write_distinct(path: str, rows: int, rng: np.random.Generator) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("devices,nodes,samples_per_s\n")
        for i in range(1, rows + 1):
            eff = 1.0 if i == 1 else 0.9
            fh.write(f"{4 * i},{i},{400.0 * i * eff * rng.uniform(0.95, 1.05):.1f}\n")


def measure(path: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"diagnose failed on {path}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    from scalesim.cli.main import OneLineParser  # here: the benchmark times scalesim's imports

    parser = OneLineParser(description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int_list, default=[2000, 20000, 200000])
    parser.add_argument("--keep", help="folder to keep the generated files in")
    args = parser.parse_args()
    sizes = args.rows
    folder = args.keep or tempfile.mkdtemp(prefix="diagnose-scale-")
    os.makedirs(folder, exist_ok=True)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}, numpy {np.__version__}")
    print()
    print("| shape | rows | file MB | runs fitted | wall s | CPU s | peak MiB | cause |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, writer in (("repeated", write_repeated), ("distinct", write_distinct)):
        for rows in sizes:
            path = os.path.join(folder, f"{shape}-{rows}.csv")
            writer(path, rows, np.random.default_rng(rows))
            r = measure(path)
            print(f"| {shape} | {rows:,} | {os.path.getsize(path) / 1e6:.2f} | {r['runs']} | "
                  f"{r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_mib']:.0f} | {r['cause']} |",
                  flush=True)


if __name__ == "__main__":
    main()
