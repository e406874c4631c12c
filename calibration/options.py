"""Command-line flags of the calibration (shared by ``scalesim calibrate`` and ``-m scalesim.calibration``).

Imports nothing heavy: ``scalesim --help`` builds this parser without torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

from scalesim.bounds import flag_list_type, flag_type, parse_number
from scalesim.errors import ScalesimError, name_problem, one_line
from scalesim.figures import MIB_BYTES, count
from scalesim.model.collectives import FITTED_OPS
from scalesim.model.stragglers import SLOW_DEVICE_FACTOR

PHASES = ("compute", "collectives", "loader", "jitter", "noise")
OPS = FITTED_OPS
BUILTIN_MODELS = ("mlp", "cnn", "gpt")

# --quick: the smallest calibration that still fits every part of the profile (tests, a first look).
QUICK = {
    "batches": [8, 16, 32, 64],
    "warmup": 2,
    "repeats": 5,
    "block_repeats": 15,
    "max_size_mib": 8.0,
    "coll_time_s": 0.05,
    "loader_images": 128,
    "loader_batches": 6,
    "jitter_steps": 12,
    "noise_steps": 3,
}


def _choices(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """Comma-separated names out of ``allowed``, returned in ``allowed``'s order."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} '{bad[0] if bad else text}'; choose from {','.join(allowed)}"
        )
    return [name for name in allowed if name in names]


def _phase_list(text: str) -> list[str]:
    return _choices(text, PHASES, "phase")


def _op_list(text: str) -> list[str]:
    return _choices(text, OPS, "collective")


def parse_inter_link(spec: str) -> tuple[str, int, float]:
    """'ethernet:1x100' -> ('ethernet', 1, 100.0): a kind ``presets.inter_link`` knows, NICs per
    server and Gbit/s per NIC within their bounds; one-line errors naming --inter-link."""
    from scalesim import presets
    from scalesim.bounds import check_number

    try:
        kind, _, shape = spec.partition(":")
        nics, _, gbit = shape.lower().partition("x")
        nics, gbit = int(nics), float(gbit)
    except ValueError:
        raise ScalesimError(
            f"--inter-link '{spec}': write KIND:NICSxGBIT, e.g. ethernet:1x100 or infiniband:8x200"
        ) from None
    check_number("nics_per_node", nics, f"--inter-link '{spec}': NICs per server")
    check_number("gbit_per_nic", gbit, f"--inter-link '{spec}': Gbit/s per NIC")
    try:
        presets.inter_link(kind, nics, gbit)
    except ScalesimError as exc:
        raise ScalesimError(f"--inter-link '{spec}': {exc}") from None
    return kind, nics, gbit


def _link_flag(check, name: str):
    """argparse ``type=`` of a link preset flag: the text as given, once ``check`` accepts it
    (at parsing, before any phase runs: the collectives phase reads it after the compute
    phase)."""

    def parse(text: str) -> str:
        try:
            check(text)
        except ScalesimError as exc:
            # '--inter-link 'x': why' -> ''x': why' (argparse names the flag)
            raise argparse.ArgumentTypeError(re.sub(r"^--[\w-]+ ", "", str(exc))) from None
        return text

    parse.__name__ = name  # tests/fuzz_inputs.py WORD_TYPES: what a user types
    return parse


def _intra_link(text: str) -> None:
    from scalesim import presets

    presets.intra_link(text)


def _name(text: str) -> str:
    """--name: checked before anything is measured (the profile would refuse it at the end)."""
    if why := name_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Every calibration flag; defaults that depend on the device are resolved at run time."""
    g = p.add_argument_group("output")
    g.add_argument(
        "--out",
        default="scalesim-profile.json",
        metavar="FILE",
        help="profile JSON to write (default scalesim-profile.json)",
    )
    g.add_argument(
        "--state-dir", metavar="DIR", help="per-phase state for --resume (default FILE.state next to --out)"
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="keep the phases an earlier run with the same setup already finished",
    )
    g.add_argument(
        "--phases",
        type=_phase_list,
        default=list(PHASES),
        help=f"phases to run, comma-separated (default all: {','.join(PHASES)})",
    )
    g.add_argument("--name", type=_name, help="profile name (default: device and host)")
    g.add_argument(
        "--quick",
        action="store_true",
        help="small sweeps and few repeats (about 20 s on 2 CPU cores); flags given explicitly still win",
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bars")

    g = p.add_argument_group("processes")
    g.add_argument(
        "--backend",
        choices=["auto", "nccl", "gloo"],
        default="auto",
        help="torch.distributed backend (auto: nccl on GPUs, gloo on CPUs)",
    )
    g.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="where to compute (auto: cuda if available)",
    )
    g.add_argument(
        "--threads",
        type=flag_type("threads"),
        help="torch threads per process on CPU (default: OMP_NUM_THREADS when set, "
        "else cores / processes per node, less the cores the load average keeps busy)",
    )
    g.add_argument(
        "--timeout",
        type=flag_type("timeout_s"),
        default=120.0,
        metavar="S",
        help="seconds a collective, barrier or silent rank may take before the run stops (default 120)",
    )
    g.add_argument(
        "--phase-timeout",
        type=flag_type("timeout_s"),
        default=900.0,
        metavar="S",
        help="hard limit on one phase, seconds (default 900)",
    )

    g = p.add_argument_group("model (compute, jitter, noise phases)")
    g.add_argument(
        "--model",
        default="mlp",
        metavar="NAME|MODULE:FACTORY",
        help="built-in mlp, cnn or gpt, or package.module:factory returning "
        "(model, make_batch[, loss_fn]) (default mlp)",
    )
    g.add_argument(
        "--width",
        type=flag_type("model_size"),
        help="built-in model width (mlp 1024, cnn 32 channels, gpt 256)",
    )
    g.add_argument("--depth", type=flag_type("model_size"), help="built-in model layers (default 4)")
    g.add_argument("--seq-len", type=flag_type("model_size"), default=128, help="gpt sequence length")
    g.add_argument("--vocab", type=flag_type("model_size"), default=1024, help="gpt vocabulary size")
    g.add_argument("--image-size", type=flag_type("model_size"), default=32, help="cnn input size, pixels")
    g.add_argument(
        "--precision",
        choices=["fp32", "bf16", "fp16"],
        default="fp32",
        help="autocast precision (fp16 on CUDA only; default fp32)",
    )
    g.add_argument(
        "--optimizer",
        choices=["adam", "sgd"],
        default="adam",
        help="optimizer whose step is timed and whose state the profile counts: adam (2 "
        "elements a parameter) or sgd with momentum (1) (default adam)",
    )
    g.add_argument(
        "--batches",
        type=flag_list_type("micro_batch"),
        help="per-device micro-batches to time, at least 4 (default CPU 16,32,64,128; "
        "GPU 16,32,64,128,256); the first out-of-memory one sets the ceiling",
    )
    g.add_argument(
        "--micro-batch",
        type=flag_type("micro_batch"),
        help="the profile's micro-batch and the jitter phase's (default: the largest that ran)",
    )
    g.add_argument("--warmup", type=flag_type("steps"), help="untimed steps per size (default 3)")
    g.add_argument("--repeats", type=flag_type("repeats"), help="timed steps per size (default 10)")
    g.add_argument(
        "--seed", type=flag_type("seed"), default=0,
        help="torch seed of the model's weights and the synthetic batches (default 0)",
    )

    g = p.add_argument_group(
        "transformer block at tensor-parallel shapes (compute and collectives phases; for scalesim plan)"
    )
    g.add_argument(
        "--block-hidden",
        type=flag_type("model_width"),
        metavar="H",
        help="time one transformer block of hidden size H at the per-device shapes "
        "of --block-tp, and the tp/pp messages of that size (off by default)",
    )
    g.add_argument(
        "--block-heads", type=flag_type("model_width"), help="attention heads (default H/64, at least 1)"
    )
    g.add_argument("--block-ffn", type=flag_type("model_width"), help="MLP inner size (default 4H)")
    g.add_argument(
        "--block-seq", type=flag_type("seq_len"), default=512, help="tokens per sequence (default 512)"
    )
    g.add_argument(
        "--block-batch",
        type=flag_type("micro_batch"),
        help="sequences per micro-batch (default 1 on CPU; on GPU enough for "
        f"{GPU_BLOCK_TOKENS:,} tokens: smaller blocks are launch-bound there)",
    )
    g.add_argument(
        "--block-tp",
        type=flag_list_type("devices_per_node"),
        default=[1, 2, 4, 8],
        help="tensor-parallel degrees whose shard shapes are timed (default 1,2,4,8; "
        "those that do not divide heads and MLP are skipped)",
    )
    g.add_argument(
        "--block-repeats",
        type=flag_type("repeats"),
        help="interleaved rounds of the block's shapes (default 30 on CPU, whose shards are "
        "quick and noisy, 10 on GPU; --quick 15): the fit reads the matmul rate from time ratios, "
        "which need more rounds than one time",
    )
    g.add_argument(
        "--block-model",
        metavar="MODULE:FACTORY",
        help="your own block: factory(hidden, heads, ffn_hidden, seq_len, tp) returns "
        "the nn.Module one tensor-parallel rank runs, (batch, seq, hidden) in and out",
    )

    g = p.add_argument_group("collectives phase")
    g.add_argument(
        "--ops",
        type=_op_list,
        default=list(OPS),
        help="collectives to time (default all_reduce,reduce_scatter,all_gather)",
    )
    g.add_argument(
        "--min-size-kib",
        type=flag_type("message_bytes", 1 / 2**10, "KiB"),
        default=1.0,
        help="smallest message, KiB (default 1)",
    )
    g.add_argument(
        "--max-size-mib",
        type=flag_type("message_bytes", 1 / MIB_BYTES, "MiB"),
        help="largest message, MiB (default 256 on GPU, 32 on CPU; where the times do not "
        "grow with size up to it, larger ones are timed, docs/calibration.md)",
    )
    g.add_argument(
        "--size-factor",
        type=flag_type("size_factor"),
        help="ratio between sizes (default 2 on GPU, 4 on CPU)",
    )
    g.add_argument(
        "--coll-time-s",
        type=flag_type("timed_s"),
        help="target timed seconds per message size (default 0.1, --quick 0.05)",
    )

    g = p.add_argument_group("links not measured here")
    g.add_argument(
        "--intra-link",
        metavar="KIND",
        type=_link_flag(_intra_link, "_intra_link"),
        help="intra-server preset when it is not measured (one process per node), e.g. pcie4, nvswitch-a100",
    )
    g.add_argument(
        "--intra-busbw", type=flag_type("busbw_GBps"), metavar="GB/s",
        help="its bus bandwidth, GB/s, instead of the preset's",
    )
    g.add_argument(
        "--intra-latency", type=flag_type("latency_s"), metavar="S",
        help="its latency per collective step, seconds, instead of the preset's",
    )
    g.add_argument(
        "--inter-link",
        default=None,
        metavar="KIND:NICSxGBIT",
        type=_link_flag(parse_inter_link, "_inter_link"),
        help="inter-server preset when one node runs, e.g. ethernet:1x100, "
        "infiniband:8x200 (default ethernet:1x100)",
    )
    g.add_argument(
        "--inter-busbw", type=flag_type("busbw_GBps"), metavar="GB/s",
        help="its bus bandwidth, GB/s, instead of the preset's",
    )
    g.add_argument(
        "--inter-latency", type=flag_type("latency_s"), metavar="S",
        help="its latency per collective step, seconds, instead of the preset's",
    )

    g = p.add_argument_group("loader phase")
    g.add_argument(
        "--dataset",
        default="builtin",
        metavar="builtin|MODULE:FACTORY",
        help="builtin (encoded images in a temp folder) or package.module:factory returning a torch Dataset",
    )
    g.add_argument("--loader-images", type=flag_type("dataset_items"), help="built-in images (default 512)")
    g.add_argument(
        "--loader-batch", type=flag_type("micro_batch"), default=32,
        help="samples per DataLoader batch (default 32)",
    )
    g.add_argument(
        "--loader-batches", type=flag_type("steps"), help="timed batches per worker count (default 20)"
    )
    g.add_argument(
        "--max-workers", type=flag_type("loader_workers"), help="largest num_workers (default: CPU cores)"
    )

    g = p.add_argument_group("jitter and noise phases")
    g.add_argument("--jitter-steps", type=flag_type("steps"), help="timed steps (default 30)")
    g.add_argument(
        "--slow-threshold",
        type=flag_type("slow_factor"),
        default=SLOW_DEVICE_FACTOR,
        help="a rank this much slower than the others' median, and slowest in most "
        f"steps, is named slow (default {SLOW_DEVICE_FACTOR:.3f}: 3.5 standard "
        "deviations of healthy GPU speed, docs/model.md section 19)",
    )
    g.add_argument("--noise-steps", type=flag_type("steps"), help="gradient samples (default 8)")
    g.add_argument(
        "--noise-accum",
        type=flag_type("repeats"),
        default=2,
        help="micro-batches per rank per noise sample (default 2)",
    )


# Tokens of the block a GPU calibration times by default. Measured on one H200 (bf16, hidden
# 4096, docs/calibration.md "GPU path"): at 4,096 tokens the block's shards were launch-bound
# (the fit's sustained rate 1,149 TFLOP/s, above the 989 peak), at 16,384 still above the
# device's own 8192^3 matmul rate (886 vs 808), at 65,536 at it (801).
GPU_BLOCK_TOKENS = 65536

DEFAULTS_CPU = {
    "batches": [16, 32, 64, 128],
    "warmup": 3,
    "repeats": 10,
    "block_repeats": 30,
    "max_size_mib": 32.0,
    "size_factor": 4,
    "coll_time_s": 0.1,
    "loader_images": 512,
    "loader_batches": 20,
    "jitter_steps": 30,
    "noise_steps": 8,
}
DEFAULTS_GPU = dict(
    DEFAULTS_CPU, batches=[16, 32, 64, 128, 256], max_size_mib=256.0, size_factor=2, block_repeats=10
)


# The packages of the calibration extra (pyproject.toml: calibration = ["torch>=2.1",
# "tqdm>=4.60"]): a measurement imports both; scalesim's other commands need neither.
EXTRA_MODULES = ("torch", "tqdm")


def require_extra(modules=EXTRA_MODULES) -> None:
    """Raise a one-line ScalesimError when a package of the calibration extra cannot be
    imported here, before anything is measured or torchrun is started: without torch, a
    calibration ended in a ModuleNotFoundError traceback (and tqdm's only at the first phase)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            absent = isinstance(exc, ModuleNotFoundError) and exc.name == name
            why = "is not installed" if absent else f"cannot be imported ({one_line(str(exc))})"
            raise ScalesimError(
                f"{name} {why} in this Python ({sys.executable}): a calibration runs real torch "
                "steps; pip install -e \".[calibration]\" (install torch your usual way first on "
                "GPUs), or read what you already have with --from-nccl-tests, --from-trace or "
                "--from-topo, which need neither"
            ) from None


def exit_calibration(code: int) -> None:
    """Leave a calibration entry point (``python -m scalesim.calibration``, ``ddp_bench``) with
    ``code``: plainly where torch never loaded (its ``main`` refused in one line without it,
    ``require_extra``), else through ``dist.exit_process``, which imports torch and skips its
    teardown under torchrun."""
    if "torch" not in sys.modules:
        sys.exit(code)
    from scalesim.calibration.dist import exit_process

    exit_process(code)


def default_threads(local_world: int, environ=None, load: float | None = None) -> int:
    """Torch CPU threads per process when ``--threads`` is not given: ``OMP_NUM_THREADS`` when
    the user (or torchrun) set it, else the node's cores shared by its processes, less the cores
    other work keeps busy (``load``: runnable processes, default the 1-minute load average; each
    whole unit takes a core). The threads of one op wait for each other, so a thread that shares
    its core with other work stalls them all (docs/calibration.md, "Threads on a busy machine")."""
    environ = os.environ if environ is None else environ
    omp = omp_threads(environ)
    if omp is not None:
        return omp
    free_cores = _cores() - int(machine_load() if load is None else load)
    return max(1, min(_core_share(local_world), free_cores // max(local_world, 1)))


def _cores() -> int:
    """The node's CPU cores (1 where the system does not say)."""
    return os.cpu_count() or 1


def _core_share(local_world: int) -> int:
    """One process's share of the node's cores: the threads it gets on an idle machine."""
    return max(1, _cores() // max(local_world, 1))


def busy_threads_note(local_world: int, threads: int, load: float) -> str | None:
    """The line a calibration prints when the load took cores from its default threads."""
    share = _core_share(local_world)
    if threads >= share:
        return None
    return (
        f"the machine is busy (load average {load:.1f} on {count(_cores(), 'core')}): "
        f"{count(threads, 'torch thread')} per process, not {share} (threads that share a core with other "
        f"work stall each other's ops); give --threads {share} to time {share}"
    )


# Set by ``scalesim calibrate --nproc-per-node N`` in its children's environment beside the
# OMP_NUM_THREADS it chose: the line it printed, which rank 0 keeps in the profile's notes.
THREADS_NOTE_ENV = "SCALESIM_CALIBRATE_THREADS_NOTE"


def ranks_on_cpu(device: str, cuda_available) -> bool:
    """Whether the ranks of ``--device device`` ('auto', 'cpu', 'cuda') compute on CPU, where
    torch threads per process matter (``dist.choose_device``): 'cpu', or 'auto' where
    ``cuda_available()`` (called only then, e.g. ``torch.cuda.is_available``) is False."""
    return device == "cpu" or (device == "auto" and not cuda_available())


def threads_line(local_world: int, threads: int, load: float) -> str:
    """The line that says the torch threads per process a calibration chose and why: the busy
    machine's note (``busy_threads_note``), else the cores the processes share."""
    from scalesim.device_nouns import CPU_DEVICE_PREFIX, nouns_for

    processes = nouns_for(CPU_DEVICE_PREFIX).count(local_world)
    return busy_threads_note(local_world, threads, load) or (
        f"{count(threads, 'torch thread')} per process: {count(_cores(), 'core')} shared by "
        f"{processes} (load average {load:.1f}); give --threads N to time N"
    )


def machine_load() -> float:
    """The 1-minute load average (0 where the system does not report one)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def omp_threads(environ) -> int | None:
    """``OMP_NUM_THREADS`` as a thread count (its first level, '8,2' -> 8), None when unset or
    empty; a value that is not a whole number of 1 or more is a one-line error."""
    text = environ.get("OMP_NUM_THREADS", "").strip()
    if not text:
        return None
    first = text.split(",")[0].strip()
    try:
        return parse_number(first, "threads", "OMP_NUM_THREADS")
    except ScalesimError as exc:
        raise ScalesimError(f"{exc}; unset it or give --threads N") from None


def resolve_defaults(args: argparse.Namespace, on_gpu: bool) -> argparse.Namespace:
    """Fill flags left unset: --quick values first, then the device's defaults."""
    base = DEFAULTS_GPU if on_gpu else DEFAULTS_CPU
    for key, value in base.items():
        if getattr(args, key, None) is None:
            quick = QUICK.get(key) if args.quick else None
            setattr(args, key, quick if quick is not None else value)
    if getattr(args, "block_batch", None) is None:
        args.block_batch = -(-GPU_BLOCK_TOKENS // args.block_seq) if on_gpu else 1
    return args


def build_parser(prog: str = "python -m scalesim.calibration") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Measure this machine and write a scalesim calibration profile."
    )
    add_arguments(parser)
    return parser


def to_argv(args: argparse.Namespace, skip: tuple[str, ...] = ()) -> list[str]:
    """The flags that rebuild ``args`` (those that differ from the defaults), for a child run."""
    parser = build_parser()
    argv: list[str] = []
    for action in parser._actions:  # argparse keeps its actions here; no public accessor
        if not action.option_strings or action.dest in skip or action.dest == "help":
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default:
            continue
        flag = (
            action.option_strings[-1]
            if action.option_strings[-1].startswith("--")
            else action.option_strings[0]
        )
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv
