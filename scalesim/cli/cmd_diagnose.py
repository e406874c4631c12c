"""scalesim diagnose: why a data-parallel job stops scaling, from measured runs or profiler traces."""

from __future__ import annotations

import argparse

from scalesim.errors import file_path

NAME = "diagnose"
HELP = "name why scaling is lost, from measured runs (CSV/JSON) or PyTorch profiler traces"
# flags of predict and plan that diagnose has no use for, with why (cli.main says it): the runs'
# own timings and columns decide them, and the split-the-model remedy (--workload) searches the
# layout's (``remedies.best_split``, the planner's grid)
_TIMED = "the runs' compute is fitted to their own timings, which ran"
_SEARCHED = "; the split-the-model remedy (--workload) searches"
ABSENT_FLAGS = {flag: f"diagnose has no {flag}: {why}" for flag, why in (
    ("--precision", f"{_TIMED} at their own precision; scalesim plan --precision fp8 prices fp8 "
     "from the datasheet"),
    ("--attention-kernel", f"{_TIMED} their own attention kernel; scalesim plan "
     "--attention-kernel prices another from the datasheet"),
    ("--loader-workers", "the runs' data_wait_s column (seconds a step waits on input) measures "
     "their input pipeline; the loader remedy says what removing the stall gains"),
    ("--tp", f"a runs file gives it as its tp column{_SEARCHED} every tensor-parallel degree"),
    ("--pp", f"a runs file gives it as its pp column{_SEARCHED} every pipeline depth"),
    ("--schedule", f"{_TIMED} their own schedule{_SEARCHED} every pipeline schedule"),
    ("--virtual-stages", f"{_TIMED} their own schedule{_SEARCHED} every interleaved "
     "schedule's virtual stages"),
    ("--recompute", f"{_TIMED} their own recompute{_SEARCHED} none, selective and full "
     "(--recompute-style says how your framework reruns it)"),
    ("--sequence-parallel", f"{_TIMED} theirs, on or off{_SEARCHED} with and without "
     "sequence parallelism"),
)}
EXAMPLE = """examples:
  scalesim diagnose runs.csv
  scalesim diagnose runs.json --params 340e6 --critical-batch 2048 --json
  scalesim diagnose --trace rank0.json rank1.json.gz
  scalesim diagnose --smi smi.csv            # one device slower than the others? (clocks, heat)
  scalesim diagnose runs.csv --smi smi.csv   # both: the device evidence joins the diagnosis
  scalesim diagnose runs.csv --workload gpt-7.5b --gpu "A100 40GB"   # remedies incl. splitting it
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --recompute-style early-stop
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --tp-overlap  # Megatron TP comm overlap
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --p2p-overlap off  # blocking sends
  scalesim diagnose runs.csv --workload llama3-8b --gpu "H100 SXM" --strategy zero3  # FSDP FULL_SHARD runs
  scalesim diagnose runs.csv --strategy zero3 --shard-group 8   # FSDP HYBRID_SHARD, 8 ranks a shard
  scalesim diagnose runs.csv --gpus-per-node 8   # runs on 1 GPU of each 8-GPU server

runs file: one row per run with devices, nodes and samples_per_s or step_time_s; optional
per_device_batch, global_batch, accumulation, data_wait_s, comm_s (exposed), steps_to_target,
rank_step_times_s (';'-separated), gpus_per_node (the devices one server holds, as
--gpus-per-node; the same in every row) and, for a job that splits its model, tp, pp, cp (the
same in every row). See docs/diagnose.md."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from scalesim.bounds import flag_type
    from scalesim.cli.options import (
        add_gpus_per_node_argument,
        add_grad_sync_argument,
        add_p2p_overlap_argument,
        add_recompute_style_argument,
        add_shard_group_argument,
        add_strategy_argument,
        add_tp_overlap_argument,
        add_zero_framework_argument,
        parse_int_list,
    )
    from scalesim.diagnose_request import GPUS_PER_NODE_HELP

    p.add_argument("runs", nargs="?", metavar="RUNS.csv|RUNS.json", type=file_path,
                   help="measured runs")
    p.add_argument("--trace", nargs="+", metavar="RANK.json", type=file_path,
                   help="Kineto trace per rank (plain or .gz), instead of a runs file")
    p.add_argument("--smi", metavar="SMI.csv", type=file_path,
                   help="nvidia-smi --query-gpu=timestamp,index,"
                   "clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,"
                   "clocks_throttle_reasons.active --format=csv -l 1 output, recorded during the "
                   "run: names a device that runs slower, with its clocks, heat and throttling")
    p.add_argument("--params", type=flag_type("params"), help="model parameters (gradient elements): link "
                   "bandwidths in GB/s, and the buckets the remedies' gains are priced with "
                   "(default: a nominal gradient size, said in a note)")
    p.add_argument("--wire-bytes", type=flag_type("wire_bytes_per_param"),
                   help="bytes per gradient element on the wire, a DDP run's all-reduce's "
                   "(default 4: fp32 DDP gradients; with --workload, those predict charges the "
                   "workload under the runs' strategy, said in a note: bert-large's stated 2); "
                   "given, it overrides the workload's")
    p.add_argument("--critical-batch", type=flag_type("critical_batch"),
                   help="critical batch size B_noise, samples (large-batch evidence)")
    p.add_argument("--extrapolate", type=parse_int_list, metavar="N,N,...",
                   help="device counts to extrapolate to (default 2x, 4x, 8x the largest run)")
    p.add_argument("--workload", "--model", dest="workload", metavar="PRESET|FILE",
                   help="the transformer the runs trained: a preset (scalesim presets) or a "
                   "workload JSON with a 'transformer' shape; remedies are then predicted by the "
                   "layout model and include splitting the model (needs --gpu; --model is its older "
                   "name)")
    add_gpus_per_node_argument(p, help=GPUS_PER_NODE_HELP)
    p.add_argument("--gpu", metavar="NAME", help="the runs' GPU as the presets name it (e.g. "
                   "'H100 SXM', 'A100 80GB'): its datasheet peak, memory bandwidth and memory, "
                   "for --workload")
    framework = p.add_argument_group(
        "with --workload: the runs' framework, for the split-the-model remedy's layouts")
    add_recompute_style_argument(framework)
    add_tp_overlap_argument(framework)
    add_p2p_overlap_argument(framework)
    exchange = p.add_argument_group(
        "how the runs exchanged over their data-parallel ranks (default: PyTorch DDP)")
    add_strategy_argument(exchange)
    add_zero_framework_argument(exchange)
    add_grad_sync_argument(exchange, traced=True)
    add_shard_group_argument(exchange)
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from scalesim.cli.options import p2p_overlap_of
    from scalesim.diagnose_request import DiagnoseOptions, check_sources, diagnose_request
    from scalesim.jsonio import to_json_text

    options = DiagnoseOptions(
        params=args.params, wire_bytes=args.wire_bytes, critical_batch=args.critical_batch,
        extrapolate=tuple(args.extrapolate) if args.extrapolate is not None else None,
        workload=args.workload, gpu=args.gpu, recompute_style=args.recompute_style,
        tp_overlap=args.tp_overlap, strategy=args.strategy, zero_framework=args.zero_framework,
        grad_sync=args.grad_sync, shard_group=args.shard_group,
        gpus_per_node=args.gpus_per_node,
        p2p_overlap=p2p_overlap_of(args.p2p_overlap) is not False)
    # the combinations first, before a file is read (the request checks them again)
    check_sources(options, args.runs is not None, args.trace is not None, args.smi is not None)
    smi = traces = runs = None
    if args.smi is not None:
        from scalesim.sources.nvidia_smi import parse_smi_csv

        smi = parse_smi_csv(args.smi)
    if args.trace is not None:
        from scalesim.trace_ranks import load_traces

        traces = load_traces(args.trace)
    if args.runs is not None:
        from scalesim.runs import load_runs

        runs = load_runs(args.runs, args.gpu)  # its refusals in the GPU's words (a rack)
    result = diagnose_request(options, runs, traces, ", ".join(args.trace or []), smi)
    if runs is None and traces is None:  # the GPU log alone
        from scalesim.sources.nvidia_smi import render_smi

        print(to_json_text(result.to_dict(), what="the GPU log") if args.json
              else render_smi(result))
        return 0
    print(result.to_json() if args.json else result.to_text())
    return 0
