"""scalesim diagnose: why a data-parallel job stops scaling, from measured runs or profiler traces."""

from __future__ import annotations

import argparse

from scalesim.errors import file_path

NAME = "diagnose"
HELP = "name why scaling is lost, from measured runs (CSV/JSON) or PyTorch profiler traces"
EXAMPLE = """examples:
  scalesim diagnose runs.csv
  scalesim diagnose runs.json --params 340e6 --critical-batch 2048 --json
  scalesim diagnose --trace rank0.json rank1.json.gz
  scalesim diagnose --smi smi.csv            # one device slower than the others? (clocks, heat)
  scalesim diagnose runs.csv --smi smi.csv   # both: the device evidence joins the diagnosis
  scalesim diagnose runs.csv --workload gpt-7.5b --gpu "A100 40GB"   # remedies incl. splitting it
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --recompute-style early-stop
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --tp-overlap  # Megatron TP comm overlap

runs file: one row per run with devices, nodes and samples_per_s or step_time_s; optional
per_device_batch, global_batch, accumulation, data_wait_s, comm_s (exposed), steps_to_target and
rank_step_times_s (';'-separated). See docs/diagnose.md."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from scalesim.bounds import flag_type
    from scalesim.cli.options import (
        add_recompute_style_argument,
        add_tp_overlap_argument,
        parse_int_list,
    )

    p.add_argument("runs", nargs="?", metavar="RUNS.csv|RUNS.json", type=file_path,
                   help="measured runs")
    p.add_argument("--trace", nargs="+", metavar="RANK.json", type=file_path,
                   help="Kineto trace per rank (plain or .gz), instead of a runs file")
    p.add_argument("--smi", metavar="SMI.csv", type=file_path,
                   help="nvidia-smi --query-gpu=timestamp,index,"
                   "clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,"
                   "clocks_throttle_reasons.active --format=csv -l 1 output, recorded during the "
                   "run: names a device that runs slower, with its clocks, heat and throttling")
    p.add_argument("--params", type=flag_type("params"), help="model parameters (gradient elements), "
                   "to report link bandwidths in GB/s")
    p.add_argument("--wire-bytes", type=flag_type("wire_bytes_per_param"), default=4.0,
                   help="bytes per gradient element on the wire (default 4: fp32 DDP gradients)")
    p.add_argument("--critical-batch", type=flag_type("critical_batch"),
                   help="critical batch size B_noise, samples (large-batch evidence)")
    p.add_argument("--extrapolate", type=parse_int_list, metavar="N,N,...",
                   help="device counts to extrapolate to (default 2x, 4x, 8x the largest run)")
    p.add_argument("--workload", "--model", dest="workload", metavar="PRESET|FILE",
                   help="the transformer the runs trained: a preset (scalesim presets) or a "
                   "workload JSON with a 'transformer' shape; remedies are then predicted by the "
                   "layout model and include splitting the model (needs --gpu; --model is its older "
                   "name)")
    p.add_argument("--gpu", metavar="NAME", help="the runs' GPU as the presets name it (e.g. "
                   "'H100 SXM', 'A100 80GB'): its datasheet peak, memory bandwidth and memory, "
                   "for --workload")
    framework = p.add_argument_group(
        "with --workload: the runs' framework, for the split-the-model remedy's layouts")
    add_recompute_style_argument(framework)
    add_tp_overlap_argument(framework)
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from scalesim.errors import ScalesimError
    from scalesim.jsonio import to_json_text

    # flags that fit or extend a runs file: beside --trace, or --smi alone, they change nothing
    runs_only = [flag for flag, value, default in (
        ("--params", args.params, None), ("--wire-bytes", args.wire_bytes, 4.0),
        ("--critical-batch", args.critical_batch, None), ("--extrapolate", args.extrapolate, None),
        ("--workload", args.workload, None), ("--gpu", args.gpu, None),
        ("--recompute-style", args.recompute_style, None),
        ("--tp-overlap", args.tp_overlap, False)) if value != default]
    if args.runs is None and runs_only and (args.trace is not None or args.smi is not None):
        raise ScalesimError(f"{', '.join(runs_only)}: for a runs file (scalesim diagnose "
                            "runs.csv ...); " + ("--trace reads" if args.trace is not None
                                                 else "--smi alone reads")
                            + " none of it: drop it, or give the runs file")
    smi = None
    if args.smi is not None:
        from scalesim.sources.nvidia_smi import parse_smi_csv, render_smi

        smi = parse_smi_csv(args.smi)
        if args.runs is None and args.trace is None:
            print(to_json_text(smi.to_dict(), what="the GPU log") if args.json
                  else render_smi(smi))
            return 0
    if (args.runs is None) == (args.trace is None):
        raise ScalesimError("give a runs file (scalesim diagnose runs.csv) or --trace FILES, "
                            "not both and not neither")
    if args.trace is not None:
        from scalesim.diagnosis import diagnose_traces
        from scalesim.traces import load_traces

        summaries = load_traces(args.trace)
        report = diagnose_traces(summaries, ", ".join(args.trace))
    else:
        from scalesim.diagnosis import diagnose_runs
        from scalesim.layout import DEFAULT_RECOMPUTE_STYLE
        from scalesim.runs import load_runs

        model = None
        if args.recompute_style is not None and args.workload is None:
            raise ScalesimError("--recompute-style is for --workload (the runs' transformer): the "
                                "split-the-model remedy's recomputing layouts use it")
        if args.tp_overlap and args.workload is None:
            raise ScalesimError("--tp-overlap is for --workload (the runs' transformer): the "
                                "split-the-model remedy's layouts with tp > 1 use it")
        if args.workload is not None:
            from scalesim.runs_model import runs_model

            model = runs_model(args.workload, args.gpu, args.params)
        elif args.gpu is not None:
            raise ScalesimError("--gpu is for --workload (the runs' transformer); give both")
        report = diagnose_runs(load_runs(args.runs), args.params, args.wire_bytes,
                               args.critical_batch, args.extrapolate, transformer=model,
                               recompute_style=args.recompute_style or DEFAULT_RECOMPUTE_STYLE,
                               tp_overlap=args.tp_overlap)
    if smi is not None:
        from scalesim.sources.nvidia_smi import attach_to_report

        attach_to_report(report, smi)
    print(report.to_json() if args.json else report.to_text())
    return 0
