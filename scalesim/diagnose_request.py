"""One diagnosis request, as ``scalesim diagnose`` and the app's Diagnose page both make it.

The options a runs file's diagnosis takes (``DiagnoseOptions``: the CLI's --params, --wire-bytes,
--critical-batch, --extrapolate, --workload, --gpu, --recompute-style, --tp-overlap,
--p2p-overlap, --gpus-per-node, --strategy,
--zero-framework, --grad-sync, --shard-group), the
one-line refusals of combinations that would change nothing (``check_sources``), and the
request itself (``diagnose_request``): the runs' model, ``diagnose_runs`` or ``diagnose_traces``,
and the nvidia-smi evidence attached. Sources come parsed (``Runs``, trace summaries,
``SmiReport``) so that the CLI reads files and the app reads uploads; the bounds of the numbers
are those ``diagnose_runs`` and the CLI's flags check (``scalesim.bounds``).
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim.errors import KNOB, ScalesimError, as_literal, excerpt
from scalesim.layout import knob_refusal

DEFAULT_WIRE_BYTES = 4.0  # bytes per gradient element on the wire: fp32 DDP gradients
# what --gpus-per-node means to a runs file's diagnosis (the CLI's help and the app's control)
GPUS_PER_NODE_HELP = ("GPUs (or CPU processes) each of the runs' servers holds, where the runs "
                      "used fewer of each (1 GPU on each of 4 servers): the fit reads their NIC "
                      "share as predict does, and remedies and extrapolations predict on "
                      "servers of this many (default: the most a run put in one server; a runs "
                      "file's gpus_per_node column says it too)")
# how the job exchanged: for a runs file, and for traces (which read it off their collectives)
EXCHANGE_FLAGS = ("--strategy", "--zero-framework", "--grad-sync", "--shard-group")


@dataclass(frozen=True)
class DiagnoseOptions:
    """What a runs file's diagnosis may be told besides the runs (hashable: the app caches on it).

    ``params``: model parameters (gradient elements); ``wire_bytes``: bytes per gradient element
    on the wire (None: those ``predict`` charges ``workload`` under the runs' exchange,
    ``runs_model.gradient_bytes_of``; without a workload ``DEFAULT_WIRE_BYTES``);
    ``critical_batch``: critical batch size B_noise, samples; ``extrapolate``: device counts to
    extrapolate to (None: 2x, 4x, 8x the largest run); ``workload``: the runs'
    transformer, a preset name or a workload JSON path (or an upload's name, with its contents
    in ``workload_text``); ``gpu``: its GPU as the presets name it;
    ``recompute_style`` (None: the default), ``tp_overlap`` and ``p2p_overlap`` (False: its
    interleaved pipeline sends block, ``--p2p-overlap off``): the runs' framework, for the
    split-the-model remedy's layouts; ``strategy``, ``zero_framework``, ``grad_sync`` (None: ddp,
    fsdp, every-micro-step; traces read the strategy off their collectives and the gradient
    sync off their micro-steps, ``trace_diagnosis.diagnose_traces``): how the runs exchanged
    over their data-parallel ranks, and
    ``shard_group`` (None: all of them) the ranks that sharded the ZeRO states under hybrid
    sharding (``fit_runs.RunsExchange``); ``gpus_per_node`` (None: the most a run put in one
    server): the devices a server of the runs holds (``runs.on_servers_of``).
    """

    params: float | None = None
    wire_bytes: float | None = None
    critical_batch: float | None = None
    extrapolate: tuple[int, ...] | None = None
    workload: str | None = None
    gpu: str | None = None
    recompute_style: str | None = None
    tp_overlap: bool = False
    workload_text: str | None = None
    strategy: str | None = None
    zero_framework: str | None = None
    grad_sync: str | None = None
    shard_group: int | None = None
    p2p_overlap: bool = True
    gpus_per_node: int | None = None

    def exchange(self):
        """How the runs exchanged (``fit_runs.RunsExchange``; ScalesimError for a name or pair it
        does not know)."""
        from scalesim.fit_runs import RunsExchange

        return RunsExchange(self.strategy or "ddp", self.zero_framework or "fsdp",
                            self.grad_sync or "every-micro-step", shard_group=self.shard_group or 0)

    def given(self) -> list[str]:
        """The CLI flags of the options set away from their defaults, in the CLI's order."""
        return [flag for flag, value, default in (
            ("--params", self.params, None), ("--wire-bytes", self.wire_bytes, None),
            ("--critical-batch", self.critical_batch, None),
            ("--extrapolate", self.extrapolate, None), ("--workload", self.workload, None),
            ("--gpu", self.gpu, None), ("--recompute-style", self.recompute_style, None),
            ("--tp-overlap", self.tp_overlap, False), ("--p2p-overlap off", self.p2p_overlap, True),
            ("--strategy", self.strategy, None),
            ("--zero-framework", self.zero_framework, None),
            ("--grad-sync", self.grad_sync, None), ("--shard-group", self.shard_group, None),
            ("--gpus-per-node", self.gpus_per_node, None))
            if value != default]


def check_sources(options: DiagnoseOptions, runs: bool, traces: bool, smi: bool) -> None:
    """ScalesimError (one line, the CLI's words) where the sources given (a runs file, traces, an
    nvidia-smi log) and the options do not make one request: options of a runs file beside
    traces or a GPU log alone, runs and traces both or neither (a GPU log alone is a request),
    the framework's options or a GPU without the runs' transformer. Cheap: the CLI calls it
    before it reads a file."""
    runs_only = [flag for flag in options.given() if not (traces and flag in EXCHANGE_FLAGS)]
    if not runs and runs_only and (traces or smi):
        raise ScalesimError(f"{', '.join(runs_only)}: for a runs file (scalesim diagnose "
                            "runs.csv ...); " + ("--trace reads" if traces else "--smi alone reads")
                            + " none of it: drop it, or give the runs file")
    if runs == traces and not (smi and not runs):
        raise ScalesimError("give a runs file (scalesim diagnose runs.csv) or --trace FILES, "
                            "not both and not neither")
    if options.recompute_style is not None and options.workload is None:
        raise ScalesimError("--recompute-style is for --workload (the runs' transformer): the "
                            "split-the-model remedy's recomputing layouts use it")
    if options.tp_overlap and options.workload is None:
        raise ScalesimError("--tp-overlap is for --workload (the runs' transformer): the "
                            "split-the-model remedy's layouts with tp > 1 use it")
    if not options.p2p_overlap and options.workload is None:
        raise ScalesimError("--p2p-overlap off is for --workload (the runs' transformer): the "
                            "split-the-model remedy's interleaved layouts use it")
    if options.gpu is not None and options.workload is None:
        raise ScalesimError("--gpu is for --workload (the runs' transformer); give both")
    sharded = options.strategy not in (None, "ddp")
    if options.zero_framework is not None and not sharded:
        raise ScalesimError("--zero-framework is for a job that sharded (--strategy zero1, zero2 "
                            "or zero3): DDP exchanges alike under either; give --strategy or drop "
                            "it")
    # traces read their strategy off the collectives: --grad-sync is applied to it
    if options.grad_sync is not None and options.strategy not in ("zero2", "zero3") \
            and not (traces and options.strategy is None):
        raise ScalesimError("--grad-sync is for a job that sharded its gradients (--strategy "
                            "zero2 or zero3): DDP and ZeRO-1 reduce once per step anyway; give "
                            "--strategy or drop it")
    if options.workload_text is not None and options.workload is None:
        raise ScalesimError("workload_text: the contents of the workload file; give its name as "
                            "the workload")
    if not (traces and options.strategy is None):  # traces read theirs off the collectives
        options.exchange()  # a strategy, framework or pair it does not know


def diagnose_request(options: DiagnoseOptions, runs=None, traces=None, trace_source: str = "",
                     smi=None):
    """The diagnosis of ``runs`` (``scalesim.runs.Runs``) or ``traces`` (``TraceSummary`` per
    rank, read from ``trace_source``) with ``options``, and the device evidence of ``smi``
    (``scalesim.sources.nvidia_smi.SmiReport``) attached: a ``scalesim.diagnosis.Report``.
    ``smi`` alone: that ``SmiReport`` itself. ScalesimError as ``check_sources`` says, and for a
    runs' model that is not one (``runs_model``)."""
    check_sources(options, runs is not None, traces is not None, smi is not None)
    if runs is None and traces is None:
        return smi
    if traces is not None:
        from scalesim.trace_diagnosis import diagnose_traces

        given = options.strategy is not None  # else read off the collectives
        report = diagnose_traces(traces, trace_source, options.exchange() if given else None,
                                 None if given else options.shard_group, options.grad_sync)
    else:
        from scalesim.layout import DEFAULT_RECOMPUTE_STYLE
        from scalesim.runs_diagnosis import diagnose_runs

        model, exchange = None, options.exchange()
        wire = DEFAULT_WIRE_BYTES if options.wire_bytes is None else options.wire_bytes
        wire_note = ""
        if options.workload is not None:
            from scalesim.runs_model import runs_model

            model = runs_model(options.workload, options.gpu, options.params,
                               options.workload_text)
            wire, exchange, wire_note = _gradient_bytes(options, exchange)
        extrapolate = list(options.extrapolate) if options.extrapolate is not None else None
        report = diagnose_runs(runs, options.params, wire, options.critical_batch,
                               extrapolate, transformer=model,
                               recompute_style=options.recompute_style or DEFAULT_RECOMPUTE_STYLE,
                               tp_overlap=options.tp_overlap, exchange=exchange,
                               p2p_overlap=options.p2p_overlap,
                               gpus_per_node=options.gpus_per_node)
        if wire_note:
            report.notes.append(wire_note)
    if smi is not None:
        from scalesim.sources.nvidia_smi import attach_to_report

        _check_smi_matches(smi, runs, traces)
        attach_to_report(report, smi)
    return report


def _gradient_bytes(options: DiagnoseOptions, exchange) -> tuple[float, object, str]:
    """(bytes per gradient element the fit charges, ``exchange`` with the workload's stated
    sharded reduction, a note) of a runs file's diagnosis with ``options.workload``: those
    ``predict`` charges the workload under the runs' exchange (``runs_model.gradient_bytes_of``:
    bert-large's stated 2 under DDP; before session 45 a preset fitted at 4 and a file at its
    wire_bytes_per_param), unless ``--wire-bytes`` is given, which overrides them (said in the
    note where they differ)."""
    from dataclasses import replace

    from scalesim.runs_model import gradient_bytes_of

    charged = gradient_bytes_of(options.workload, exchange, options.workload_text)
    # DDP runs gathered no parameters: ZeRO's remedies gather them in the workload's dtype
    exchange = replace(exchange, gathered_bytes_per_param=charged.gathered)
    if options.wire_bytes is None:
        if charged.reduce is not None:
            exchange = replace(exchange, reduce_bytes_per_param=charged.reduce)
        return charged.wire, exchange, knob_refusal(
            f"{as_literal(charged.source)}; {KNOB.wire_bytes} overrides")
    if options.wire_bytes == charged.wire:
        return options.wire_bytes, exchange, ""
    return options.wire_bytes, exchange, knob_refusal(
        f"{KNOB.wire_bytes} {options.wire_bytes:g}: the fit charges {options.wire_bytes:g} bytes "
        f"per gradient, not the {charged.wire:g} predict charges "
        f"{as_literal(excerpt(options.workload))} under {exchange.strategy}")


def _check_smi_matches(smi, runs, traces) -> None:
    """An nvidia-smi log beside a job that ran on CPU processes cannot be that job's: refused
    (its GPUs were joined to a CPU job's ranks); a log of another GPU count than a one-host
    trace's ranks gets a note."""
    from scalesim.device_nouns import nouns_for
    from scalesim.trace_collectives import traced_device_name

    device = traced_device_name(traces) if traces is not None else runs.device_name
    if nouns_for(device).cpu:
        what = "traces" if traces is not None else "runs"
        raise ScalesimError(knob_refusal(  # the log by its upload on the page
            f"{KNOB.smi}: the {what} ran on CPU processes ('{as_literal(device)}'), so an "
            f"nvidia-smi log cannot be theirs; drop {KNOB.smi}, or give it with the GPU job's "
            f"{what}"))
    hosts = {t.host for t in traces} if traces is not None else set()
    if traces is not None and len(hosts) <= 1 and len(smi.devices) != len(traces):
        smi.notes.append(f"the log lists {len(smi.devices)} GPUs and the traces {len(traces)} "
                         "ranks of one host: check that it is the traced server's log")
