"""The traced pipeline's remedies (diagnose --trace, scalesim/pipeline_trace.py) against the
runs they predict, on real gloo pipelines of two CPU ranks.

    python benchmarks/pipeline_remedies.py [--repeats 3] [--dim 512] [--batch 256]

Traces an uneven pipeline (tests/trace_job.py --pp-layers 1,3: stage 0 one Linear layer,
stage 1 three and the loss; Schedule1F1B, 4 micro-batches), reads its remedies' gains, then runs
what each remedy changes: even stages (--pp-layers 2,2), twice the micro-batches at half the
size (8 micro-batches of the same batch), and the batch remedy priced on the pipeline (dp 1):
4x the micro-batches of the same size (16 of 4x the batch). Each job runs ``--repeats`` times,
interleaved, and the median of each run's median step is compared: measured gain =
samples(changed) x step(uneven) / (samples(uneven) x step(changed)) - 1. Prints a markdown
table for docs/diagnose.md. Needs two free cores; on a busy machine the waits are the
scheduler's too (the test, tests/test_pipeline_trace.py, asserts only what holds there).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scalesim import trace_ranks  # noqa: E402
from scalesim.cli.main import OneLineParser  # noqa: E402
from scalesim.trace_diagnosis import diagnose_traces  # noqa: E402

JOBS = {  # layers per stage, micro-batches a step, samples a step / the uneven job's
    "uneven (1, 3 layers), 4 micro-batches": ("1,3", 4, 1),
    "even (2, 2 layers), 4 micro-batches": ("2,2", 4, 1),
    "uneven, 8 micro-batches of half the size": ("1,3", 8, 1),
    "uneven, 16 micro-batches of the same size (4x the batch)": ("1,3", 16, 4),
}


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python benchmarks/pipeline_remedies.py")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--batch", type=int, default=256)
    args = p.parse_args(argv)
    from trace_job import launch  # here: it imports torch, which --help and a bad flag need not wait for
    steps = {name: [] for name in JOBS}
    stage_ms = {name: [] for name in JOBS}  # each run's stages' compute
    predicted = {"pipeline_even": [], "pipeline_bubble": [], "accumulation": []}
    read = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for i, (name, (layers, micro, samples)) in enumerate(JOBS.items()):
                files = launch(Path(tmp) / f"{r}-{i}", "--pp-layers", layers, "--micro-batches",
                               str(micro), "--batch", str(samples * args.batch), "--dim",
                               str(args.dim), "--steps", "6")
                summaries = trace_ranks.load_traces(files)
                steps[name].append(trace_ranks.cross_rank(summaries)["step_s"])  # median of medians
                report = diagnose_traces(summaries, name)
                pipeline = report.details["pipeline"]
                stage_ms[name].append([1e3 * s["compute_s"] for s in pipeline["stages"]])
                if i == 0:
                    read.append(f"{pipeline['micro_batches']} ({pipeline['counted_from']})")
                    for rem in report.remedies:
                        if rem.key in predicted:
                            predicted[rem.key].append(rem.gain)
    step = {name: statistics.median(v) for name, v in steps.items()}
    base = step[next(iter(JOBS))]
    print(f"gloo, 2 ranks, dim {args.dim}, batch {args.batch}, medians of {args.repeats} "
          f"interleaved runs; micro-batches read off the uneven job {read} (the job's: 4)\n")
    print("| job | step ms | stages' compute ms | measured gain | predicted gain (diagnose of "
          "the uneven job) |")
    print("|---|---:|---:|---:|---:|")
    rows = [None, "pipeline_even", "pipeline_bubble", "accumulation"]
    for key, (name, s) in zip(rows, step.items(), strict=True):
        measured = "" if key is None else f"{JOBS[name][2] * base / s - 1:+.1%}"
        pred = "" if key is None else f"{statistics.median(predicted[key]):+.1%}"
        compute = " / ".join(f"{statistics.median(c):.1f}" for c in zip(*stage_ms[name],
                                                                         strict=True))
        print(f"| {name} | {s * 1e3:.1f} | {compute} | {measured} | {pred} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
