"""Time and memory to read a 100 MB Kineto trace with scalesim.traces (streamed) vs json.load.

    python benchmarks/trace_load.py [--mb 100] [--keep PATH]

Writes a synthetic PyTorch-profiler-shaped trace (ProfilerStep#N, DataLoader waits, CPU ops,
GPU kernels, NCCL all-reduce kernels overlapping compute) of about ``--mb`` megabytes, then in a
fresh process each: summarises it with ``scalesim.traces.summarise`` and, for comparison, parses
it whole with ``json.load``; and reads it as ``calibrate --from-trace`` does
(``scalesim.sources.trace_compute.read_rank``: the same pass plus launch/kernel correlation).
Reports wall time and peak resident memory (ru_maxrss) of each process above a baseline process
that only imports the same modules.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time

STEP_US = 100_000.0


def _event(name, cat, ts, dur, tid, args=None):
    return json.dumps({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": tid,
                       "ts": round(ts, 3), "dur": round(dur, 3),
                       "args": args or {"External id": random.randint(1, 10**6)}})


def write_trace(path: str, target_bytes: int, gz: bool = False) -> int:
    """A synthetic trace of about ``target_bytes``; returns the number of events."""
    rng = random.Random(0)
    opener = gzip.open if gz else open
    n = 0
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, '
                 '"world_size": 8}, "deviceProperties": [{"id": 0, "name": "synthetic"}], '
                 '"traceEvents": [\n')
        first, step, written = True, 0, 0
        while written < target_bytes:
            step += 1
            t0 = step * STEP_US
            lines = [_event(f"ProfilerStep#{step}", "user_annotation", t0, STEP_US, 1),
                     _event(f"ProfilerStep#{step}", "gpu_user_annotation", t0 + 50, STEP_US, 7),
                     _event("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                            "user_annotation", t0, 2000.0, 1)]
            t = t0 + 2000.0
            for _ in range(400):  # CPU ops launching kernels, and the kernels
                d = rng.uniform(20.0, 150.0)
                lines.append(_event("aten::addmm", "cpu_op", t, d, 1))
                lines.append(_event("cudaLaunchKernel", "cuda_runtime", t + 5, 4.0, 1))
                lines.append(_event("ampere_sgemm_128x64_tn", "kernel", t + 30, d, 7,
                                    {"stream": 7, "correlation": n}))
                t += d + 10.0
            for b in range(8):  # bucketed all-reduce overlapping backward
                lines.append(_event("record_param_comms", "cpu_op", t0 + 40_000 + b * 6000, 15.0, 1,
                                    {"Collective name": "allreduce", "In msg nelems": 6553600}))
                lines.append(_event("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)",
                                    "kernel", t0 + 40_000 + b * 6000, 5000.0, 20,
                                    {"stream": 20}))
            for line in lines:
                fh.write(("" if first else ",\n") + line)
                first = False
                written += len(line) + 2
                n += 1
        fh.write('\n], "traceName": "synthetic"}\n')
    return n


CHILD = r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
import numpy
import scalesim.traces as traces
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
if mode == "stream":
    s = traces.summarise(path)
    out = {"steps": len(s.steps), "step_s": s.median("step_s")}
elif mode == "from-trace":
    import scalesim.sources.trace_compute as trace_compute
    r = trace_compute.read_rank(path)
    out = {"steps": len(r.fwd_bwd_s), "comm_ops": sorted(r.comm)}
elif mode == "json":
    with open(path) as fh:
        data = json.load(fh)
    out = {"events": len(data["traceEvents"])}
else:
    out = {}
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"wall_s": wall, "peak_mib": peak / 1024, "base_mib": base / 1024, **out}))
"""


def measure(mode: str, path: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, path], capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    from scalesim.cli.main import OneLineParser  # here: the benchmark times scalesim's imports

    ap = OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--keep", help="write the trace here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or os.path.join(tmp, "trace.json")
        t = time.perf_counter()
        events = write_trace(path, int(args.mb * 1e6))
        size = os.path.getsize(path) / 1e6
        print(f"wrote {size:.1f} MB, {events} events in {time.perf_counter() - t:.1f} s")
        gz_path = path + ".gz"
        write_trace(gz_path, int(args.mb * 1e6), gz=True)
        for label, mode, p in [("scalesim.traces.summarise (plain)", "stream", path),
                               ("scalesim.traces.summarise (gzip)", "stream", gz_path),
                               ("trace_compute.read_rank (--from-trace)", "from-trace", path),
                               ("json.load (whole file)", "json", path)]:
            r = measure(mode, p)
            print(f"{label:36s} {r['wall_s']:6.2f} s  peak RSS {r['peak_mib']:7.0f} MiB "
                  f"(+{r['peak_mib'] - r['base_mib']:.0f} MiB over imports)")
        if not args.keep:
            os.remove(gz_path)


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
