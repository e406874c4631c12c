"""Benchmark: pipeline stage splits of models with thousands of layers, via predict and plan.

Run: python benchmarks/stage_split.py  (pins itself to one core; prints a markdown table).
``pipeline_stages.stage_split`` searches the first/last-stage split Megatron-LM's flags give
(``_megatron_stages``); it tried every first stage for every middle one, quadratic in the layers
per stage (1.3 s for 10,000 layers over pp 3). Times the split alone (cache cleared) and
``scalesim predict`` / ``scalesim plan`` in-process (``cli.main.main``, output discarded) on a
narrow transformer (hidden 512) of L layers, best of N after one warm-up run of another L.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import tempfile
import time

from scalesim.cli.main import OneLineParser
from scalesim.cli.main import main as cli
from scalesim.pipeline_stages import _split_stages, stage_split
from scalesim.schemas import TransformerShape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder: one_core

from one_core import pin_to_one_core  # noqa: E402

CASES = [(4096, 3), (10_000, 2), (10_000, 3)]  # (layers, pp)


def workload_file(layers: int, folder: str) -> str:
    """A narrow transformer of ``layers`` layers (hidden 512, 8 heads, MLP 2048, 512 tokens)."""
    shape = {"layers": layers, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "seq_len": 512, "vocab": 32000}
    path = os.path.join(folder, f"deep{layers}.json")
    with open(path, "w") as f:
        params = TransformerShape(**shape).param_count()
        json.dump({"name": f"deep{layers}", "params": params, "transformer": shape}, f)
    return path


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_cli(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli(argv)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")


def on_h100(workload: str, devices: int) -> list[str]:
    """The flags of a run of ``workload`` on ``devices`` H100s (DGX servers)."""
    return ["--workload", workload, "--hardware", "dgx-h100", "--devices", str(devices)]


def layer_cases(text: str) -> list[tuple[int, int]]:
    """'4096x3,10000x2' -> [(4096, 3), (10000, 2)]: (layers, pp) each (argparse's ``type``)."""
    try:
        cases = [tuple(int(x) for x in case.split("x")) for case in text.split(",")]
    except ValueError:
        cases = []
    if not cases or any(len(case) != 2 for case in cases):
        raise argparse.ArgumentTypeError(f"{text!r} is not LAYERSxPP,... like 4096x3,10000x2")
    return cases


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--cases", type=layer_cases, default=CASES,
        help="LAYERSxPP,... (default " + ",".join(f"{n}x{p}" for n, p in CASES) + ")"
    )
    args = parser.parse_args()
    cases = args.cases
    pin_to_one_core()
    print(f"python {platform.python_version()}, {platform.machine()}, one core\n")
    print("| layers | pp | stage_split s | predict s | plan s | split |")
    print("|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        warm = workload_file(48, folder)
        run_cli(["predict", *on_h100(warm, 24), "--tp", "8", "--pp", "3", "--global-batch", "48"])
        for layers, pp in cases:
            path = workload_file(layers, folder)
            devices = 8 * pp

            def split(layers=layers, pp=pp):
                _split_stages.cache_clear()
                return stage_split(layers, pp)

            t_split = best_of(args.repeats, split)
            predict = [
                "predict",
                *on_h100(path, devices),
                "--tp",
                "8",
                "--pp",
                str(pp),
                "--global-batch",
                "64",
            ]
            t_predict = best_of(args.repeats, lambda a=predict: (_split_stages.cache_clear(), run_cli(a)))
            plan = ["plan", *on_h100(path, devices), "--global-batch", "64"]
            t_plan = best_of(args.repeats, lambda a=plan: (_split_stages.cache_clear(), run_cli(a)))
            stages = split().stages
            print(
                f"| {layers:,} | {pp} | {t_split:.3f} | {t_predict:.2f} | {t_plan:.2f} | "
                f"{stages[0]:,} ... {stages[-1]:,} |"
            )


if __name__ == "__main__":
    main()
