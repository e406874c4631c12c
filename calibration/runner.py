"""The calibration run: phases in order, per-phase state for --resume, progress, profile, summary.

Entry points: ``main(argv)`` (``python -m scalesim.calibration``, also under torchrun) and
``calibrate(args)`` (``scalesim calibrate`` in one process). Every rank runs every phase; rank 0
writes the state, the profile and the summary.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from datetime import UTC, datetime

from scalesim.calibration import options

from scalesim.device_nouns import CPU_DEVICE_PREFIX, nouns_for
from scalesim.errors import ScalesimError, one_line
from scalesim.figures import GIB_BYTES
from scalesim.model.overlap import CPU_COMM_CONTENTION, GPU_COMM_CONTENTION

PROG = "scalesim calibration"
MIN_JITTER_STEPS = 4  # quartiles of fewer step times say nothing of their spread


def main(argv: list[str] | None = None) -> int:
    """``python -m scalesim.calibration [flags]``: exit 0 on success, 2 on a clear error."""
    args = options.build_parser().parse_args(argv)
    try:
        calibrate(args)
    except ScalesimError as exc:  # every rank says it (an agreed error in the same words)
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr, flush=True)
        return 2
    return 0


def calibrate(args) -> str | None:
    """Run the selected phases; returns the profile path (None when no compute result exists)."""
    options.require_extra()  # one line, not a traceback, where torch or tqdm is missing
    from scalesim.calibration import dist as cdist
    from scalesim.calibration.state import state_folder

    try:
        check_flags(args)
    except ScalesimError as exc:  # the same flags on every rank: the same error
        raise cdist.AgreedError(str(exc)) from None
    ctx = cdist.setup(args)
    lock = None
    try:
        options.resolve_defaults(args, ctx.on_gpu)
        try:
            check_resolved(args, ctx)
        except ScalesimError as exc:
            raise cdist.AgreedError(str(exc)) from None
        folder = state_folder(args)
        lock = _lock_outputs(ctx, args, folder)
        monitor = cdist.RankMonitor(ctx, folder, args.timeout, args.phase_timeout).start()
        try:
            path = _run_phases(ctx, args, monitor, folder)
        except ScalesimError as exc:
            monitor.stop("failed")
            # an error every rank raised alike names its ranks itself (AgreedError)
            where = f"rank {ctx.rank}, " if ctx.world > 1 and not isinstance(exc, cdist.AgreedError) else ""
            raise type(exc)(f"{where}phase '{monitor.phase}': {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a collective failing because a peer failed
            time.sleep(2 * cdist.HEARTBEAT_S)
            problem = monitor.problem()
            monitor.stop("failed")
            raise ScalesimError(
                f"phase '{monitor.phase}' stopped on rank {ctx.rank}: "
                f"{cdist.raised(exc)}" + (f"; {problem}" if problem else "")
            ) from None
        monitor.stop("done")
        return path
    finally:
        if lock is not None:
            lock.release()
        cdist.shutdown()


def _lock_outputs(ctx, args, folder):
    """Rank 0 checks that ``--out`` can be written and locks the state folder (another
    calibration holding it is named); every rank stops with the same line when either fails."""
    from scalesim.calibration.dist import agree_on_error
    from scalesim.calibration.state import FolderLock

    from scalesim.outfiles import check_writable
    from scalesim.profiles import refuse_newer_profile_out

    lock, error = None, None
    if ctx.is_main:
        try:
            check_writable(args.out)
            refuse_newer_profile_out(args.out)
            if not args.state_dir and _not_a_regular_file(args.out):
                raise ScalesimError(
                    f"--out {args.out} is not a regular file, so the per-phase "
                    "state cannot go beside it; give --state-dir FOLDER"
                )
            lock = FolderLock(folder).acquire()
        except ScalesimError as exc:
            error = str(exc)
    agree_on_error(ctx, error)
    return lock


def _not_a_regular_file(path) -> bool:
    """True for an existing device, pipe or socket (``/dev/null``, ``/dev/stdout``)."""
    import stat

    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_flags(args) -> None:
    """Flag errors that need no torch.distributed."""
    if args.batches is not None and len(set(args.batches)) < 2:
        raise ScalesimError("--batches needs at least two sizes (four or more recommended)")
    if args.micro_batch is not None and args.micro_batch < 1:
        raise ScalesimError("--micro-batch must be 1 or more")
    if ":" not in args.model and args.model not in options.BUILTIN_MODELS:
        raise ScalesimError(
            f"--model '{args.model}': use {', '.join(options.BUILTIN_MODELS)} or package.module:factory"
        )
    if args.dataset != "builtin" and ":" not in args.dataset:
        raise ScalesimError(f"--dataset '{args.dataset}': use builtin or package.module:factory")
    if args.jitter_steps is not None and args.jitter_steps < MIN_JITTER_STEPS:
        # jitter_phase.summarize: the spread from the step times' quartiles (an IQR of one step
        # is 0: a measured cv of 0, no stragglers, written into the profile)
        raise ScalesimError(
            f"--jitter-steps {args.jitter_steps}: the step-time spread is "
            f"read from the quartiles of the steps, which needs "
            f"{MIN_JITTER_STEPS} or more (default 30, --quick 12)"
        )
    if args.slow_threshold < 1.0:
        raise ScalesimError("--slow-threshold is a ratio of 1 or more, e.g. 1.05")
    from scalesim.calibration.block_fit import block_from_args

    block_from_args(args)  # a block that cannot be split is one line before anything runs


def check_resolved(args, ctx) -> None:
    """Flag errors once the device's defaults are known, before the first phase runs."""
    from scalesim.calibration.collective_phase import message_sizes

    if args.precision == "fp16" and not ctx.on_gpu:
        raise ScalesimError("--precision fp16 needs a GPU; use bf16 or fp32 on CPU")
    # the sizes of the collectives phase: --min-size-kib above the largest size was refused
    # only when that phase started, after the compute phase had run
    message_sizes(args.min_size_kib, args.max_size_mib, args.size_factor)


def _progress(ctx, args, phase: str, total: int):
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=f"{phase:<11}",
        unit="step",
        file=sys.stderr,
        leave=False,
        disable=not ctx.is_main or args.no_progress,
        dynamic_ncols=True,
    )


def _phase_total(ctx, args, phase: str) -> int:
    from scalesim.calibration.collective_phase import message_sizes
    from scalesim.calibration.loader_phase import worker_counts

    if phase == "compute":
        return len(set(args.batches)) + args.repeats
    if phase == "collectives":
        levels = 1 + (ctx.nodes > 1)
        return (
            levels
            * len(args.ops)
            * len(message_sizes(args.min_size_kib, args.max_size_mib, args.size_factor))
        )
    if phase == "loader":
        return len(worker_counts(args.max_workers if args.max_workers is not None else (os.cpu_count() or 1)))
    if phase == "jitter":
        return args.jitter_steps
    return args.noise_steps


def _load_bundle(ctx, args):
    import torch
    from scalesim.calibration import models
    from scalesim.calibration.dist import agree_on_error

    bundle, error = None, None
    try:
        bundle = models.load_model(args)
    except ScalesimError as exc:
        error = str(exc)
    agree_on_error(ctx, error)
    # Same weights everywhere (seeded above), but every rank draws its own batches.
    torch.manual_seed(args.seed + 1 + ctx.rank)
    return bundle


def _stored_records(ctx, args, folder, sig):
    """Phases kept from the state folder (rank 0 reads, everyone gets them) and notes."""
    import torch.distributed as dist
    from scalesim.calibration import state
    from scalesim.calibration.results import PhaseRecord

    payload = [None]
    if ctx.is_main:
        # Phases recorded with exactly these settings (state.SIGNATURE_FLAGS) are kept; without
        # --resume the selected phases run again (so --phases collectives refreshes the links).
        records, notes = state.load_matching(folder, options.PHASES, sig)
        if not args.resume:
            for phase in args.phases:
                records.pop(phase, None)
                state.clear(folder, phase)
        payload = [({k: r.model_dump(mode="json") for k, r in records.items()}, notes)]
    dist.broadcast_object_list(payload, src=0, group=ctx.control)
    raw, notes = payload[0]
    return {k: PhaseRecord.model_validate(v) for k, v in raw.items()}, notes


def _run_phases(ctx, args, monitor, folder) -> str | None:
    from scalesim.calibration import (
        collective_phase,
        compute_phase,
        jitter_phase,
        loader_phase,
        noise_phase,
        state,
    )
    from scalesim.calibration.assemble import default_micro_batch
    from scalesim.calibration.dist import barrier, gather_object
    from scalesim.calibration.results import PhaseRecord

    started = time.perf_counter()
    threads = gather_object(ctx, ctx.threads)  # as each rank resolved them (state.signature)
    sig = state.signature(
        args, ctx.world, ctx.nodes, ctx.local_world, ctx.backend, ctx.device.type, threads
    )
    records, state_notes = _stored_records(ctx, args, folder, sig)
    reused = set(records)
    for note in state_notes:
        if ctx.is_main:
            print(f"{PROG}: note: {note}", file=sys.stderr)
    hostnames = _gather_hostnames(ctx)
    bundle = None
    for phase in options.PHASES:
        if phase not in args.phases or phase in records:
            continue
        monitor.enter(phase)
        if phase in ("compute", "jitter", "noise") and bundle is None:
            bundle = _load_bundle(ctx, args)
        compute = records["compute"].parsed() if "compute" in records else None
        micro_batch = default_micro_batch(args, compute)
        t0 = time.perf_counter()
        progress = _progress(ctx, args, phase, _phase_total(ctx, args, phase))
        notes: list[str] = []
        try:
            if phase == "compute":
                result = compute_phase.run(ctx, bundle, args, progress)
                if len(result.curve.points) < 4:
                    notes.append(
                        f"compute curve from only {len(result.curve.points)} micro-batch "
                        "sizes; four or more give a more trustworthy fit"
                    )
                curve = result.curve
                if curve.colocated_devices > 1:
                    words = device_words(ctx)
                    notes.append(
                        f"compute timed with {words.count(curve.colocated_devices)} of one "
                        f"{words.server} busy, {curve.colocation_slowdown:.1%} slower than one "
                        f"alone; predictions scale compute by the {words.devices} busy per "
                        f"{words.server}"
                    )
            elif phase == "collectives":
                result = collective_phase.run(ctx, args, progress)
            elif phase == "loader":
                result = loader_phase.run(ctx, args, progress)
            elif phase == "jitter":
                result = jitter_phase.run(ctx, bundle, micro_batch, args, progress)
            else:
                result = noise_phase.run(ctx, bundle, micro_batch, args, progress)
        finally:
            progress.close()
        barrier(ctx, phase, args.timeout)
        record = PhaseRecord(
            phase=phase,
            signature=sig,
            wall_s=time.perf_counter() - t0,
            notes=notes,
            result=result.model_dump(mode="json"),
        )
        if ctx.is_main:
            state.save(folder, record)
        records[phase] = record
    monitor.enter("write")
    path = None
    if ctx.is_main:
        path = _finish(ctx, args, records, reused, hostnames, time.perf_counter() - started)
    # Nobody tears its process group down while another rank still works (gloo at exit).
    barrier(ctx, "write", args.timeout)
    return path


def _gather_hostnames(ctx) -> list[str]:
    from scalesim.calibration.dist import gather_object

    names = gather_object(ctx, socket.gethostname())
    return list(dict.fromkeys(names))


def _finish(ctx, args, records, reused, hostnames, wall_s) -> str | None:
    from scalesim.calibration import collective_phase, state, summary
    from scalesim.calibration.assemble import build_profile, link_levels

    from scalesim.jsonio import write_model

    print(summary.render(records, reused, device_words(ctx)))
    if "compute" not in records:
        print(
            f"{PROG}: note: no profile written: it needs the compute phase; the finished "
            f"phases are kept for --resume (run with --phases compute --resume --out {args.out})"
        )
        return None
    machine = describe_machine(ctx, hostnames)
    timings = ", ".join(f"{p} {r.wall_s:.1f} s" for p, r in records.items() if p not in reused)
    longest = max((r for p, r in records.items() if p not in reused), key=lambda r: r.wall_s, default=None)
    machine.notes.append(
        f"calibrated with {ctx.world} process(es) on {ctx.nodes} node(s), backend {ctx.backend}, "
        f"{state.threads_text(records['compute'].signature.get('threads'))}; "
        f"run time {wall_s:.1f} s ({timings or 'all phases kept'})"
        + (f"; longest phase: {longest.phase}" if longest else "")
    )
    if ctx.threads_note:
        machine.notes.append(ctx.threads_note)
        if ctx.threads_note != os.environ.get(options.THREADS_NOTE_ENV):  # else said at the start
            print(f"{PROG}: note: {ctx.threads_note}")
    if reused:
        machine.notes.append(f"kept from an earlier run with the same settings: {', '.join(sorted(reused))}")
    collectives = records["collectives"].parsed() if "collectives" in records else None
    links = link_levels(
        collectives,
        lambda level: collective_phase.unmeasured_level(level, args, "the collectives phase did not run"),
    )
    profile = build_profile(args, machine, records, links)
    if profile.model_parallel is not None:
        print("\n".join(summary.model_parallel_lines(profile.model_parallel)))
    for line in summary.block_not_usable_lines(profile, PROG):
        print(line)
    for line in _dropped_parts(args.out, profile):
        print(line)
    write_model(args.out, profile)
    print(
        f"profile written to {args.out} in {wall_s:.1f} s; try: scalesim predict --profile "
        f"{args.out} --devices 1,2,4,8"
        + (
            f"; scalesim plan --profile {args.out} --workload gpt-1.7b --devices 8 --global-batch 64"
            if profile.model_parallel is not None
            else ""
        )
    )
    return str(args.out)


def _dropped_parts(out, profile) -> list[str]:
    """Notes on what the ``--out`` this run replaces measured, or took from --from-nccl-tests or
    --from-topo, and this profile does not measure (``parts_a_measurement_drops``): written over
    in silence, a resumed run threw away links the user had added from their logs."""
    from scalesim.profiles import load_profile
    from scalesim.sources.calibrate_from import parts_a_measurement_drops

    if not os.path.isfile(out):
        return []
    try:
        old = load_profile(out)
    except ScalesimError:  # not a profile (or not one this version reads): nothing of it kept
        return []
    lost = parts_a_measurement_drops(old, profile)
    return [f"{PROG}: note: {out} had {part}; this measurement writes a new profile without "
            f"it: add it back with the same --from-nccl-tests / --from-topo files and --out "
            f"{out}, or measure it in this run" for part in lost]


def device_words(ctx):
    """The nouns of this run's devices (``device_nouns``): a CPU run's are processes on a host,
    as ``describe_machine`` names its device ``CPU: ...``."""
    return nouns_for("" if ctx.on_gpu else CPU_DEVICE_PREFIX)


def describe_machine(ctx, hostnames):
    """Device name and memory, cores, and the fingerprint of this run."""
    import torch
    from scalesim.calibration.assemble import Machine

    from scalesim.schemas import Fingerprint

    nccl = cuda = None
    if ctx.on_gpu:
        name = torch.cuda.get_device_name(ctx.device)
        memory = float(torch.cuda.get_device_properties(ctx.device).total_memory)
        memory_note = "device memory from torch.cuda"
        cuda = torch.version.cuda
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:  # noqa: BLE001 - NCCL may be absent from this build
            nccl = None
    else:
        name = f"{CPU_DEVICE_PREFIX}{_cpu_model()}"
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        memory = float(ram) / ctx.local_world
        memory_note = (
            f"CPU run: device memory is total RAM ({ram / GIB_BYTES:.1f} GiB) shared by "
            f"{ctx.local_world} process(es) per node"
        )
    fingerprint = Fingerprint(
        device_name=name,
        device_count=ctx.world,
        nodes=ctx.nodes,
        backend=ctx.backend,
        torch_version=torch.__version__,
        nccl_version=nccl,
        cuda_version=cuda,
        hostnames=hostnames,
        date_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    # On CPUs the collectives (gloo: copies and sums) run on the same cores as forward and
    # backward, so overlapping them hides nothing: every collective second is a step second
    # (CPU_COMM_CONTENTION). On GPUs NCCL runs beside the compute kernels, which it slows by
    # 18.9% on average while it runs (published, not measured here: GPU_COMM_CONTENTION).
    contention = GPU_COMM_CONTENTION if ctx.on_gpu else CPU_COMM_CONTENTION
    machine = Machine(
        device_name=name,
        device_memory_bytes=memory,
        devices_per_node=ctx.local_world,
        cpu_cores_per_node=os.cpu_count() or 1,
        fingerprint=fingerprint,
        comm_compute_contention=contention,
        memory_note=memory_note,
        on_gpu=ctx.on_gpu,
    )
    if ctx.on_gpu:  # the server's NVLink/PCIe/NIC layout, when nvidia-smi is there to say it
        from scalesim.sources.nvidia_smi import topology_here

        machine.topology, what = topology_here()
        machine.notes.append(what)
    return machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
