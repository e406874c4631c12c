"""Read nccl-tests logs (``all_reduce_perf``, ``reduce_scatter_perf``, ``all_gather_perf``) and fit
link levels from them exactly as ``scalesim calibrate``'s collectives phase fits its own sweep.

What a log holds (nccl-tests ``src/common.cu``; doc/PERFORMANCE.md): a header (``# nThread 1
nGpus 8 minBytes ...``, then ``#  Rank  N Group G Pid P on HOST device D [BUS] NAME`` per rank),
the column line ``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``
(out-of-place, then in-place; older versions: ``error`` instead of ``#wrong``, no ``root``), one
row per message size, and ``# Out of bounds values : N OK|FAILED`` / ``# Avg bus bandwidth : X``.
MPI launchers may prefix lines (``[1,0]<stdout>:``, Slurm's ``srun --label``: `` 0: ``), log
collectors a time stamp (``kubectl logs --timestamps``: ``_TIMESTAMP``), and NCCL interleave
``NCCL INFO`` lines; all are ignored (any other prefix before the rows: one line naming it).
``-d all`` / ``-o all`` print one table whose rows run through every data type, and within it
every reduction op (``src/*.cu``'s ``RunTest`` loops, one header): the rows are told apart by
their ``type`` / ``redop`` cells (``one_kind_of_rows``). nccl-tests 2.17's ``-S 1`` ends each
row with a time stamp and ``-I 1`` adds per-iteration columns (``i_min`` ...) after each
``#wrong``: the columns are found by their names in the header.

Conventions, as the calibration's collectives phase (``calibration/collective_phase.py``):

- time per row: the **in-place** column for all-reduce (``torch.distributed.all_reduce`` is in
  place, as DDP runs it) and the **out-of-place** column for reduce-scatter and all-gather
  (``reduce_scatter_tensor`` / ``all_gather_into_tensor``); ``size`` is nccl-tests' ``S``, the
  full buffer, as there;
- ranks: the number of distinct ranks listed in the header (else ``nranks`` in NCCL INFO lines,
  else the busbw/algbw ratio: ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` otherwise);
- level: one server (one host in the header) -> ``intra_node``; several -> ``inter_node``, the bus
  bandwidth a node sustains across servers with all its GPUs (``scalesim.model.collectives``);
- fit: ``calibration.link_fit.fit_level`` (alpha from every size by ``fit_alpha_beta``, beta
  refitted at the top of the sweep); the all-reduce fit describes the level when present.
"""

from __future__ import annotations

import decimal
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scalesim.bounds import check_number
from scalesim.errors import ScalesimError, check_distinct_files, excerpt, printable
from scalesim.figures import MIB_BYTES, bytes_text, latency_us, link_GBps
from scalesim.jsonio import read_text
from scalesim.model import collectives as coll
from scalesim.schemas import CollectivePoint, LinkCalibration, LinkLevel

OPS = coll.FITTED_OPS
_OP_NAMES = {"all_reduce": ("all_reduce", "allreduce"),
             "reduce_scatter": ("reduce_scatter", "reducescatter"),
             "all_gather": ("all_gather", "allgather")}
OTHER_TESTS = ("broadcast", "reduce", "alltoall", "sendrecv", "scatter", "gather", "hypercube")
US = 1e-6  # nccl-tests prints times in microseconds

_PREFIX = re.compile(r"\[\d+(?:,\d+)*\](?:<std(?:out|err)>:)?")
_SRUN_LABEL = re.compile(r"^\s*\d+:(?:\s+|$)")  # srun --label (-l): the task number, a colon
# A log collector's time stamp before each line, ISO 8601 / RFC 3339: ``kubectl logs --timestamps``
# and ``docker logs -t`` (2025-11-03T10:11:12.123456789Z), a CI job's raw log, ``ts '%F %T'``
# (2025-11-03 10:11:12), bracketed or not. nccl-tests' own -S stamp ends a row, never starts one.
_TIMESTAMP = re.compile(r"^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
                        r"(?:Z|[+-]\d{2}:?\d{2})?\]?(?:\s+|$)")
# the Pid is printed since cbe7f65 (2019-03); the 2017-2018 versions print none ("Rank 0 on HOST
# device 0 [0x06] NAME": NVIDIA/nccl-tests src/common.cu at b188a15 and dcf8189)
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)"
                   r"\s+\[[^\]]*\]\s+(.+?)\s*$")
_TEST_NAME = re.compile(r"\b(\w+?)_perf(?:_mpi)?\b")
_NRANKS = re.compile(r"\bnranks\s+(\d+)\b")
# NCCL_DEBUG=INFO's network transport ("NCCL INFO Using network IB", "NET/Socket : Using ...")
# as the hardware presets' inter-server kind; RoCE, EFA (AWS Libfabric / NET/OFI) and other
# plugins name none of them
_NETWORK = re.compile(r"NCCL INFO (?:Using network (IB|Socket)\b|NET/(IB|Socket) : Using\b)")
NETWORK_KINDS = {"IB": "infiniband", "Socket": "ethernet"}
_ELLIPSIS = re.compile(r"^#?\s*(?:\.{3,}|\u2026)\s*$")  # '#  ...' or '# …': lines left out
# NCCL_DEBUG's messages ("host:pid:tid [dev] NCCL INFO ...", src/debug.cc ``ncclDebugLog``)
_NCCL_MESSAGE = re.compile(r"\bNCCL (?:INFO|WARN)\b")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
# NCCL_ALGO as the log records it: NCCL_DEBUG=INFO's "NCCL INFO NCCL_ALGO set by environment to
# X" (src/graph/tuning.cc), or an environment line a launcher or script echoed ("NCCL_ALGO=X").
# nccl-tests itself prints no algorithm (src/util.cu: no such column).
_ALGO = re.compile(r"\bNCCL_ALGO(?: set by environment to\s+|=)[\"']?([^\s\"']+)")
# NCCL's algorithm names (NCCL_ALGO, src/graph/tuning.cc ``ncclAlgoStr``), lower case
NCCL_ALGORITHMS = ("tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
_NCCL_FUNCS = {"all_reduce": "allreduce", "reduce_scatter": "reducescatter",
               "all_gather": "allgather"}
# a multi-node all-reduce log that does not pin the ring: NCCL's tuner picks per size
ALGO_UNPINNED_NOTE = (
    "the log records no NCCL_ALGO=Ring (NCCL_DEBUG=INFO prints it), so its times are taken as "
    "the ring's; NCCL left to choose runs tree (LL) for small messages across servers, faster "
    "than the ring, which then reads as a lower alpha: rerun with NCCL_ALGO=Ring for the ring's "
    "own times")
ALGO_ASSUMED = ("its times taken as NCCL's ring, the algorithm the model fits a link with "
                "(docs/model.md §2) and scalesim calibrate pins (NCCL_ALGO=Ring)")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
TIME_COLUMNS = ("time", "algbw", "busbw")
PRINTED_HALF_UNIT = 0.005  # GB/s: algbw and busbw are printed with two decimals
ONE_SERVER_ASSUMED = ", and one server assumed (say inter=FILE if it spanned servers)"
# The fastest network per GPU, by the GPU (docs/calibration.md, nccl-tests): a log whose busbw
# across hosts exceeds what such NICs allow (``network_busbw_ceiling_GBps``) did not cross a
# network. NVIDIA's data-center GPUs up to Blackwell Ultra ship on platforms of at most one
# 800 Gb/s NIC per GPU (ConnectX-8 SuperNIC, 100 GB/s: one per GPU on GB300 NVL72 trays, NVIDIA
# Enterprise RA "NVL72 AI factory", docs.nvidia.com; HGX B300). Any other GPU, an unnamed one
# ("NVIDIA Graphics Device", as early drivers name GB200) included, may sit on ConnectX-9's
# 1.6 Tb/s per GPU (200 GB/s; announced with Vera Rubin at GTC DC, October 2025: Network World,
# hardwareluxx.de), the fastest announced.
FASTEST_NIC_GBPS_PER_GPU = 200.0  # 1.6 Tb/s, ConnectX-9
NIC_GBPS_BY_GPU: tuple[tuple[str, ...], ...] = (  # name words (presets.name_has_words) -> 100 GB/s
    ("B300",), ("B200",), ("B100",), ("GB10",), ("H200",), ("H100",), ("H800",), ("H20",),
    ("A100",), ("A800",), ("A40",), ("A30",), ("A10",), ("L40",), ("L4",), ("V100",), ("T4",),
    ("P100",), ("P40",), ("P4",))
SLOWER_NIC_GBPS_PER_GPU = 100.0  # 800 Gb/s, ConnectX-8: the GPUs of NIC_GBPS_BY_GPU
# The most GPUs one NVLink domain holds, by the GPU: GB200 / GB300 NVL72 (all 72 GPUs of a rack
# on its 9 NVSwitch trays; NVIDIA Enterprise RA "NVL72 AI factory", docs.nvidia.com; NVL36x2 is
# 72 over two racks); GH200: DGX GH200, "up to 256 GPUs" on the NVLink Switch System (NVIDIA
# Technical Blog, "Announcing NVIDIA DGX GH200", 2023), the largest shipped; any other GPU: 256.
NVLINK_DOMAIN_GPUS_BY_GPU: tuple[tuple[tuple[str, ...], int], ...] = (
    (("GB200",), 72), (("GB300",), 72), (("GH200",), 256))
LARGEST_NVLINK_DOMAIN_GPUS = 256
# measured above the ceiling by this factor at least: the ceiling is line rate, which no
# algorithm beats (in-network reduction included); the margin absorbs printed busbw's and the
# timing's spread of a few percent
NETWORK_CEILING_MARGIN = 1.05
ONE_DOMAIN_NOTE = "read as one server"  # in the note of an inferred NVLink domain (see below)
CHECK_COLUMNS = ("#wrong", "error")
# A size cell with a unit ('2K', '8M', '1G', '16MiB', or '4 KiB' in two cells): nccl-tests prints
# bytes in every version (``PRINT("%12li  %12li ...", size, count, ...)``, src/*.cu from 2017,
# src/common.cu, then src/util.cu ``writeBenchmarkLinePreamble``: all 270 commits to a0b82b22),
# but tables retyped into a report or a chat carry units. Read as nccl-tests reads its own
# -b / -e sizes (src/common.cu, parsesize: "We use the binary system", K = 1024 bytes); a row
# whose count (``check_unit_sizes_by_count``) or algbw x time (``check_size_units``) says
# otherwise is refused.
_SIZE_WITH_UNIT = re.compile(r"^(\d+(?:\.\d+)?)([KMGT])(?:i?B)?$", re.IGNORECASE)
_UNIT_CELL = re.compile(r"^(?:([KMGT])i?)?B$", re.IGNORECASE)
UNIT_POWERS = {"K": 1, "M": 2, "G": 3, "T": 4}  # a unit = 1024 (nccl-tests -b) or 1000 bytes to the power
# Each row's algbw x time is its size to within what the printed digits allow: nccl-tests prints
# algbw "%6.2f" and time "%7.2f" under 100 us, "%7.1f" under 10,000 us, "%7.0f" above, both of
# one deltaSec (NVIDIA/nccl-tests src/common.cu, BenchTime), so each cell is within half a unit
# of its last printed digit (``printed_half_unit``); a tiny float margin on top
SIZE_CHECK_FLOAT_MARGIN = 1e-9


def size_in_bytes(tokens: list[str], source: str, number: int
                  ) -> tuple[list[str], float | None] | None:
    """(the row's cells with its size in bytes, the size read in decimal units, K = 1000 bytes,
    where it was printed with a unit, else None), or None where the first cell is no size (a
    line that is not a table row)."""
    first = tokens[0]
    if first.isdigit():
        m = _UNIT_CELL.match(tokens[1]) if len(tokens) > 1 else None
        if m is None:
            return tokens, None
        value, unit, cell, rest = first, m.group(1), " ".join(tokens[:2]), tokens[2:]
    elif m := _SIZE_WITH_UNIT.match(first):
        value, unit, cell, rest = m.group(1), m.group(2), first, tokens[1:]
    else:
        return None
    power = UNIT_POWERS[unit.upper()] if unit else 0
    size = float(value) * 1024**power
    if size != int(size):
        raise ScalesimError(f"{source} line {number}: size '{excerpt(cell)}' is "
                            "not a whole number of bytes (K = 1024, as nccl-tests' -b reads "
                            "it); give the sizes in bytes, as nccl-tests prints them")
    return [str(int(size)), *rest], float(value) * 1000**power


def printed_half_unit(cell: str) -> float:
    """Half a unit in the last digit a number cell prints ('12.34' -> 0.005, '1234.5' -> 0.05,
    '1.5e+03' -> 50): the most the printing's rounding moved the value."""
    return 0.5 * 10.0 ** min(decimal.Decimal(cell).as_tuple().exponent, 300)


def _column_pairs(header: list[str], first: str, second: str) -> list[tuple[int, int]]:
    """(``first``, ``second``) column indices of each half of the table (out-of-place,
    in-place): ('time', 'algbw'), ('algbw', 'busbw')."""
    return list(zip([i for i, c in enumerate(header) if c == first],
                    [i for i, c in enumerate(header) if c == second], strict=False))


def _time_algbw_pairs(header: list[str]) -> list[tuple[int, int]]:
    """(time, algbw) column indices of each half of the table (out-of-place, in-place)."""
    return _column_pairs(header, "time", "algbw")


def printed_size_span(tokens: list[str], t_i: int, a_i: int) -> tuple[float, float] | None:
    """(lowest, highest) size in bytes a row's algbw x time allow as printed (each cell within
    ``printed_half_unit`` of its value: [(a - da)(t - dt), (a + da)(t + dt)]), None where
    either cell is no number."""
    if not (_NUMBER.match(tokens[t_i]) and _NUMBER.match(tokens[a_i])):
        return None
    t_us, algbw = float(tokens[t_i]), float(tokens[a_i])
    dt, da = printed_half_unit(tokens[t_i]), printed_half_unit(tokens[a_i])
    low = max(algbw - da, 0.0) * max(t_us - dt, 0.0) * 1e3  # GB/s x us -> bytes
    return low, (algbw + da) * (t_us + dt) * 1e3


def within_span(size: float, span: tuple[float, float]) -> bool:
    """Whether ``size`` (bytes) lies in ``printed_size_span``'s span, a float margin on top."""
    return span[0] * (1 - SIZE_CHECK_FLOAT_MARGIN) <= size <= span[1] * (1 + SIZE_CHECK_FLOAT_MARGIN)


def check_size_units(rows: list[list[str]], row_lines: list[int], with_unit: Mapping[int, float],
                     header: list[str], source: str, share: float = 1.0) -> None:
    """ScalesimError where a row's algbw and time (each pair of them, out-of-place and
    in-place) multiply to other than its size (algbw = S / t, nccl-tests' PERFORMANCE.md) by
    more than their printed digits allow (``printed_size_span``): a size printed with a unit
    (``with_unit``: line numbers) not in binary units (K = 1000 bytes), or a size or time cell
    edited or garbled (a 1 TiB row timed as 8 GiB fits a link 128x too fast), in a row of any
    size. ``share``: the share of the size algbw counts, (n-1)/n in the all-gather and
    reduce-scatter tables of nccl-tests before 2020-06 (``old_gather_algbw``), else 1."""
    for tokens, number in zip(rows, row_lines, strict=True):
        for t_i, a_i in _time_algbw_pairs(header):
            span = printed_size_span(tokens, t_i, a_i)
            size = float(tokens[0]) * share  # a 0-byte row is skipped by the fit
            if span is None or size <= 0 or within_span(size, span):
                continue
            implied = float(tokens[a_i]) * float(tokens[t_i]) * 1e3
            if number in with_unit:
                raise ScalesimError(
                    f"{source} line {number}: its size read with a binary unit (K = 1024 bytes, "
                    f"as nccl-tests reads -b) is {size:,.0f} bytes, but algbw x time "
                    f"({tokens[a_i]} GB/s x {tokens[t_i]} us) is {implied:,.0f}: the units are "
                    "not nccl-tests' (K = 1000?); give the sizes in bytes, as nccl-tests prints "
                    "them")
            low, high = span
            counted = ("size / time" if share == 1.0 else
                       "size x (n-1)/n / time in its all_gather and reduce_scatter tables before "
                       "2020-06")
            raise ScalesimError(
                f"{source} line {number}: its size is {float(tokens[0]):,.0f} bytes, but algbw x "
                f"time ({tokens[a_i]} GB/s x {tokens[t_i]} us) is {implied:,.0f} ({low:,.0f} to "
                f"{high:,.0f} as printed; nccl-tests prints algbw = {counted}"
                f"{'' if share == 1.0 else f', {size:,.0f} here'}): the row was edited or "
                "garbled; give the text nccl-tests printed")


# nccl-tests before ec1b5e2 (2020-06-19, "Change all_gather/reduce_scatter algbw to match the
# documentation", issue #45) printed all_gather's and reduce_scatter's algbw as one rank's share
# times (n-1) over the time, S (n-1)/n / t, and busbw equal to it (``GetBw``: ``baseBw = count *
# typesize * (nranks - 1) / sec``, factor 1; every version from b188a15, 2017-08). Their size and
# time columns mean what they mean today (size S the full buffer, ``max(sendBytes,
# expectedBytes)``), and busbw = S (n-1)/n / t as today; only algbw differs.
OLD_GATHER_ALGBW_FROM = "ec1b5e2"


def busbw_is_algbw(rows: list[list[str]], header: list[str]) -> bool:
    """Whether busbw equals algbw, cell for cell, in every row and half of a table."""
    pairs = _column_pairs(header, "algbw", "busbw")
    return bool(pairs) and all(r[a] == r[b] for r in rows for a, b in pairs)


def old_gather_algbw(rows: list[list[str]], header: list[str], ranks: int) -> bool:
    """Whether an all_gather / reduce_scatter table on ``ranks`` ranks prints algbw as nccl-tests
    did before 2020-06 (``busbw_is_algbw``), where today's busbw = algbw (n-1)/n would print
    apart (algbw / n over a printed unit in its fastest row)."""
    pairs = _column_pairs(header, "algbw", "busbw")
    if not pairs or ranks < 2:
        return False
    top = max(float(r[a]) for r in rows for a, _ in pairs)
    return top / ranks > 2 * PRINTED_HALF_UNIT and busbw_is_algbw(rows, header)


def element_bytes_of_count(tokens: list[str], header: list[str]) -> tuple[int, str] | None:
    """(the row's count column x the bytes of one element of its type, the type's name), None
    where the table has no count or type column, the count is no whole number (retyped with a
    unit too) or the type is none nccl-tests names (``trace_comm_calls.dtype_bytes``)."""
    from scalesim.trace_comm_calls import dtype_bytes

    if "count" not in header or "type" not in header:
        return None
    count, kind = tokens[header.index("count")], tokens[header.index("type")]
    width = dtype_bytes(kind)
    if not count.isdigit() or width is None:
        return None
    return int(count) * width, kind


def check_unit_sizes_by_count(rows: list[list[str]], row_lines: list[int],
                              with_unit: Mapping[int, float], header: list[str], op: str,
                              source: str) -> set[int]:
    """The lines of ``with_unit`` rows whose count column checked their size; ScalesimError
    where it does not: nccl-tests prints size = count x bytes per element exactly (x the ranks
    for reduce-scatter and all-gather, whose count is one rank's share: src/common.cu
    ``max(sendBytes, expectedBytes)`` beside ``nbytes / wordSize(type)``, every version), so a
    size read in binary units that is not so was written in other units (K = 1000: 2.4 % more
    than K = 1024, 4.9 % M, 7.4 % G), whatever the times (a -C table's are CPU-side, a small
    row's algbw too coarse to tell)."""
    checked: set[int] = set()
    shares: set[float] = set()  # size / (count x bytes): 1, or the ranks of a gather/scatter
    for tokens, number in zip(rows, row_lines, strict=True):
        read = element_bytes_of_count(tokens, header) if number in with_unit else None
        if read is None:
            continue
        elements_bytes, kind = read
        size = float(tokens[0])
        if size <= 0 or elements_bytes <= 0:  # a 0-byte row is skipped by the fit
            continue
        share = size / elements_bytes
        shares.add(share)
        per = "" if op == "all_reduce" else " (x the ranks: one rank's count, the same each row)"
        if share != 1.0 if op == "all_reduce" else share != int(share) or len(shares) > 1:
            raise ScalesimError(
                f"{source} line {number}: its size read with a binary unit (K = 1024 bytes, as "
                f"nccl-tests reads -b) is {size:,.0f} bytes, but its count of {kind} elements is "
                f"{elements_bytes:,} bytes{per} and nccl-tests prints size = count x element "
                "bytes: the units are not nccl-tests' (K = 1000?); give the sizes in bytes, as "
                "nccl-tests prints them")
        checked.add(number)
    return checked


def unit_sizes_note(rows: list[list[str]], row_lines: list[int], with_unit: Mapping[int, float],
                    header: list[str], op: str, cpu_timed: bool, source: str) -> str:
    """The note of a table whose sizes were printed with a unit: read in binary units; the rows
    neither their count (``check_unit_sizes_by_count``) nor their algbw x time (a span that
    excludes the K = 1000 reading; none under -C, CPU-side) tell from K = 1000 said, with the
    most their sizes would be off."""
    checked = check_unit_sizes_by_count(rows, row_lines, with_unit, header, op, source)
    off = []  # binary over decimal reading of each row nothing told apart
    for tokens, number in zip(rows, row_lines, strict=True):
        if number not in with_unit or number in checked:
            continue
        spans = [] if cpu_timed else [printed_size_span(tokens, t_i, a_i)
                                      for t_i, a_i in _time_algbw_pairs(header)]
        decimal = with_unit[number]
        if not any(s is not None and not within_span(decimal, s) for s in spans):
            off.append(float(tokens[0]) / decimal - 1)
    note = (f"{Path(source).name}: {len(with_unit)} size(s) printed with a unit, read in binary "
            "units (K = 1024 bytes) as nccl-tests reads -b and -e")
    if not off:
        return note
    times = ("a -C table's times are CPU-side, so algbw x time cannot tell" if cpu_timed else
             "their algbw x time is printed to too few digits to tell")
    return (f"{note}; {len(off)} of them not checked against K = 1000 (no whole count of a known "
            f"type beside them, and {times}): up to {max(off):.1%} too large if written so; give "
            "the sizes in bytes, as nccl-tests prints them")


@dataclass
class NcclTestsRun:
    """One nccl-tests log: its op, ranks, servers and the rows scalesim fits."""

    path: str
    op: str
    ranks: int
    hosts: list[str]
    devices: list[str]
    points: list[CollectivePoint]
    notes: list[str] = field(default_factory=list)
    forced_level: str | None = None  # "intra_node" / "inter_node" as the user said (intra=FILE)
    # the hosts share one NVLink domain, inferred from busbw above any network's (parse_text)
    one_domain: bool = False
    network: str | None = None  # NCCL's transport in its INFO lines as a preset inter-server
    # kind (infiniband, ethernet: ``NETWORK_KINDS``); None: the log names none of them
    algorithm: str | None = None  # NCCL_ALGO as the log records it (``_ALGO``); None: none
    cpu_timed: bool = False  # -C: printed times CPU-side, each row's taken from algbw
    # servers where the hosts listed are not all of them (a rank list cut short, a table without
    # one under inter=): from the fullest listed host, or an intra-server log's GPUs (load_runs)
    servers: int | None = None

    @property
    def nodes(self) -> int:
        """Servers in scalesim's sense (one intra-server link domain each): the hosts listed;
        at least 2 under ``inter=`` (of a log whose rank list is cut or missing: one listing
        every rank on one host is refused there, ``_parse_log``); 1 under ``intra=``, which
        says the hosts share one NVLink domain (GB200 NVL72 trays, multi-node NVLink), so all
        ranks are one server's, and 1 where the log's busbw says so (``one_domain``) unless
        ``inter=`` was given."""
        if self.forced_level == "inter_node":
            return max(len(self.hosts), self.servers or 2)
        if self.servers and self.forced_level is None and not self.one_domain:
            return self.servers
        if self.forced_level == "intra_node" or (self.one_domain and self.forced_level is None):
            return 1
        return max(len(self.hosts), 1)

    @property
    def level(self) -> str:
        if self.forced_level is not None:
            return self.forced_level
        return "inter_node" if self.nodes > 1 else "intra_node"


def point_from_time(op: str, size_bytes: float, ranks: int, time_s: float) -> CollectivePoint:
    """A timed collective as nccl-tests reports it: algbw ``S/t`` and busbw (PERFORMANCE.md);
    for these tables and for the calibration's own timings."""
    return CollectivePoint(op=op, size_bytes=size_bytes, ranks=ranks, time_s=time_s,
                           algbw_GBps=float(coll.algbw_GBps(size_bytes, time_s)),
                           busbw_GBps=float(coll.busbw_from_time_GBps(op, size_bytes, ranks,
                                                                       time_s)))


def algorithms_left(value: str, op: str) -> set[str] | None:
    """The NCCL algorithms ``NCCL_ALGO=value`` leaves ``op``, in NCCL's syntax (``parseList``,
    src/graph/tuning.cc): ``Ring``, ``ring,tree``, ``^tree`` (all but), and per function
    ``allreduce:tree;allgather:ring``; None where it leaves ``op`` every algorithm (a list for
    other functions only)."""
    every = None
    for part in value.lower().split(";"):
        func, sep, names = part.rpartition(":")
        if sep and func.strip() != _NCCL_FUNCS[op]:
            continue
        listed = {n.strip() for n in names.lstrip("^").split(",") if n.strip()}
        left = set(NCCL_ALGORITHMS) - listed if names.startswith("^") else listed
        if sep:
            return left
        every = left
    return every


def ring_pinned(run: NcclTestsRun) -> bool:
    """Whether the log records NCCL_ALGO leaving its op the ring alone."""
    return run.algorithm is not None and algorithms_left(run.algorithm, run.op) == {"ring"}


def tree_pinned(run: NcclTestsRun) -> bool:
    """Whether the log is an all-reduce with NCCL_ALGO leaving it the tree alone."""
    return (run.op == "all_reduce" and run.algorithm is not None
            and algorithms_left(run.algorithm, run.op) == {"tree"})


def algorithm_words(runs: list[NcclTestsRun]) -> str:
    """What the fit took the logs' algorithm to be, for the level's source."""
    s = "s" * (len(runs) > 1)
    values = "/".join(sorted({str(r.algorithm) for r in runs}))
    if all(ring_pinned(r) for r in runs):
        return f"ring, as NCCL_ALGO={values} in the log{s} says"
    if all(tree_pinned(r) for r in runs):
        return f"tree, as NCCL_ALGO={values} in the log{s} says"
    return f"no NCCL_ALGO=Ring in the logs: {ALGO_ASSUMED}"


def _clean(line: str) -> str:
    line = _TIMESTAMP.sub(" ", line, count=1)
    return _PREFIX.sub(" ", _SRUN_LABEL.sub(" ", line, count=1)).strip()


def _prefixed_row(tokens: list[str], width: int) -> int | None:
    """Where a table row of ``width`` cells starts in ``tokens`` after other words (a prefix
    some log collector put before every line: host, process, time), None where it does not:
    two whole numbers (size, count) after a word that is no number, ``width`` cells in all."""
    for k in range(1, len(tokens) - width + 1):
        if tokens[k].isdigit() and tokens[k + 1].isdigit() and not _NUMBER.match(tokens[k - 1]):
            return k
    return None


def _op_from_name(text: str) -> str | None:
    low = text.lower()
    for op, names in _OP_NAMES.items():
        if any(n in low for n in names):
            return op
    return None


def _named_tests(lines: list[str]) -> set[str]:
    """Test binaries named in the log (``all_reduce_perf``, ``broadcast_perf``...)."""
    found = set()
    for line in lines:
        for m in _TEST_NAME.finditer(line):
            found.add(m.group(1).lower())
    return found


# all_reduce_perf -C (report_cputime) heads its time columns "cputime": the host's time to
# enqueue one iteration (``cputimeSec``, read before ``completeColl`` waits for the GPUs), while
# algbw and busbw are computed from the GPU-complete time (``deltaSec``) as ever (NVIDIA/
# nccl-tests src/common.cu lines 767-796 and 858 at a0b82b22, ``getBw(..., deltaSec, ...)`` and
# ``timeUsec = report_cputime ? cputimeSec : deltaSec``; the same since d313d20, 2022; src/util.cu
# ``timeStr = report_cputime ? "cputime" : "time"``). A -C row's time is so no collective's: it is
# taken from its algbw (t = S / algbw), in rows whose algbw is printed to within this share
# (half a unit of its last digit over its value; "%6.2f": 0.5 GB/s and up)
CPU_TIMED_ALGBW_MAX_ROUNDING = 0.01
CPU_TIME_NOTE = ("its printed times are CPU-side (the 'cputime' header of nccl-tests -C: the "
                 "host's time to enqueue each iteration, not the collective's); each row's time "
                 "is taken from its algbw (t = size / algbw), which nccl-tests computes from the "
                 "GPU-timed one")


def halves_problem(index: dict[str, list[int]]) -> str | None:
    """Why a table header's time, algbw and busbw columns do not come in whole halves (each
    once, or once out-of-place and once in-place), or None: a renamed or lost column name would
    pair one half's time with the other's algbw, or none."""
    counts = {name: len(index[name]) for name in TIME_COLUMNS}
    if len(set(counts.values())) == 1:
        return None
    said = ", ".join(f"{n} {name}" for name, n in counts.items())
    return (f"the column header holds {said} columns, where each half of the table (out-of-place, "
            "in-place) has one of each; keep the header nccl-tests printed")


# The column names of nccl-tests' first versions (b188a15, 2017-08, to cbe7f65, 2019-03: ``bytes
# N type [op] time algbw busbw res``, times in milliseconds, ``PRINT("  %7.3f ...", deltaSec *
# 1.0E3, ...)``) as today's, and ms in the time columns
OLD_COLUMN_NAMES = {"bytes": "size", "N": "count", "op": "redop", "res": "error"}
OLD_TIME_UNIT_US = 1e3


def _columns(line: str) -> tuple[list[str], float] | None:
    """(column names, microseconds per printed time unit) of a table header line (``size count
    type ... busbw #wrong ...``; ``cputime`` (``-C``) read as ``time``), or of the 2017-2019
    header (``bytes N type op time algbw busbw res``: ``OLD_COLUMN_NAMES``, times in ms)."""
    tokens = ["time" if t == "cputime" else t for t in line.lstrip("#").split()]
    if "size" in tokens and "count" in tokens and "time" in tokens and "busbw" in tokens:
        return tokens[tokens.index("size"):], 1.0
    if "bytes" in tokens and "N" in tokens and "time" in tokens and "busbw" in tokens:
        return ([OLD_COLUMN_NAMES.get(t, t) for t in tokens[tokens.index("bytes"):]],
                OLD_TIME_UNIT_US)
    return None


def in_microseconds(cell: str, unit_us: float) -> str:
    """A time cell printed in ``unit_us`` microseconds as printed in microseconds, with its
    printed precision kept (``printed_half_unit``): '0.035' ms -> '35', '1.977' ms -> '1977'."""
    if unit_us == 1.0 or not _NUMBER.match(cell):
        return cell
    shift = int(round(np.log10(unit_us)))
    return format(decimal.Decimal(cell).scaleb(shift), "f")


def _ranks_from_ratio(rows: list[list[str]], cols: dict[str, int], op: str | None
                      ) -> tuple[str | None, int | None, tuple[float, float] | None]:
    """(op family, ranks, the span of rank counts the printed digits allow) from busbw/algbw:
    2(n-1)/n (all-reduce, >= 1) or (n-1)/n (< 1). Both are printed to two decimals, so each
    row's ratio is only known within its rounding (half a unit in the last digit each); the
    span is the rank counts every kept row allows (None where the rows disagree)."""
    read = _ratio_read(rows, cols)
    if read is None:
        return op, None, None
    ratio, lo, hi = read
    is_allreduce = op == "all_reduce" if op else ratio >= 0.995
    limit = 2.0 if is_allreduce else 1.0

    def ranks_of(r: float) -> float:
        return float("inf") if r >= limit else limit / (limit - r)

    n = ranks_of(ratio) if ratio < limit else None
    if n is None or n < 1.5:
        return op, None, None
    span = (ranks_of(lo), ranks_of(hi)) if lo <= hi else None
    return (op or ("all_reduce" if is_allreduce else None)), int(round(n)), span


def _ratio_read(rows: list[list[str]], cols: dict[str, int]) -> tuple[float, float, float] | None:
    """(median busbw/algbw, the lowest and highest ratio every kept row allows) of the rows near
    the top bandwidth (and at least 0.5 GB/s: both are printed to two decimals, each within
    half a unit); None where no row is kept."""
    algbws = np.array([float(r[cols["algbw"]]) for r in rows])
    busbws = np.array([float(r[cols["busbw"]]) for r in rows])
    keep = (algbws >= max(0.5 * algbws.max(), 0.5))
    if not keep.any():
        return None
    half = PRINTED_HALF_UNIT
    lo = float(np.max((busbws[keep] - half) / (algbws[keep] + half)))
    hi = float(np.min((busbws[keep] + half) / (algbws[keep] - half)))
    return float(np.median(busbws[keep] / algbws[keep])), lo, hi


def check_named_op(rows: list[list[str]], cols: dict[str, int], op: str, named_by: str,
                   source: str) -> None:
    """ScalesimError where the rows' busbw/algbw (``_ratio_read``) cannot be ``op``'s on any
    number of ranks: all-reduce's 2(n-1)/n is 1 or more, reduce-scatter's and all-gather's
    (n-1)/n below 1 (nccl-tests' PERFORMANCE.md). ``named_by``: what named ``op`` (the test
    name in the log, the file name), as the error says it; the fit would take the other
    collective's times for ``op``'s and be off by 2(n-1)/n over (n-1)/n, twice. A ratio of 0
    is every collective's on one rank (nccl-tests' busbw factors are 0 at n = 1): left to the
    rank count's refusal (one GPU measures no link), not said as another collective's."""
    read = _ratio_read(rows, cols)
    if read is None:
        return
    ratio, lo, hi = read
    if lo <= 0.0:  # one rank's rows, whatever the test
        return
    if op == "all_reduce" and hi < 1.0:
        rows_are, bound = "reduce_scatter or all_gather (busbw/algbw (n-1)/n, below 1)", "1 or more"
    elif op != "all_reduce" and lo > 1.0:
        rows_are, bound = "all_reduce (busbw/algbw 2(n-1)/n, above 1)", "below 1"
    else:
        return
    raise ScalesimError(
        f"{source}: {named_by} says {op}, but its rows' busbw/algbw is {ratio:.3g}, which {op} "
        f"gives {bound} on any number of ranks: the rows are {rows_are}; give each test's own "
        "output, with its header (or a file named after its test)")


def one_kind_of_rows(header: list[str], rows: list[list[str]], row_lines: list[int], source: str
                     ) -> tuple[list[list[str]], list[int], list[str]]:
    """(rows, their line numbers, notes) of one data type and one reduction op. ``-d all`` runs
    every type and ``-o all`` every op under one header: a fit over them would mix a 1-byte
    int8 sweep with a float one. Several types: ScalesimError (which one the gradients travel
    in is not in the log); several ops: the ``sum`` rows (gradients are summed; every op moves
    the same bytes), else ScalesimError."""
    notes: list[str] = []
    if "type" in header:
        i = header.index("type")
        types = list(dict.fromkeys(r[i] for r in rows))
        if len(types) > 1:
            raise ScalesimError(
                f"{source}: the table holds {len(types)} data types ({', '.join(map(excerpt, types[:12]))}"
                f"{', ...' if len(types) > 12 else ''}: -d all?) and a link is fitted from one: rerun "
                "with -d and the type the gradients travel in (e.g. -d bfloat16), or keep one "
                "type's rows")
    if "redop" in header:
        i = header.index("redop")
        ops = list(dict.fromkeys(r[i] for r in rows))
        if len(ops) > 1:
            if "sum" not in ops:
                raise ScalesimError(
                    f"{source}: the table holds {len(ops)} reduction ops "
                    f"({', '.join(map(excerpt, ops[:12]))}) and none is sum: rerun with -o sum, or "
                    "keep one op's rows")
            keep = [k for k, r in enumerate(rows) if r[i] == "sum"]
            rows, row_lines = [rows[k] for k in keep], [row_lines[k] for k in keep]
            notes.append(f"{Path(source).name}: the sum rows taken of {len(ops)} reduction ops "
                         f"({', '.join(map(excerpt, ops[:12]))}: -o all), as gradients are summed")
    return rows, row_lines, notes


def check_one_job(ranks: dict[tuple, str], source: str) -> None:
    """ScalesimError where a rank number is listed twice: each process of a build without MPI
    (``make MPI=1``) started by mpirun/srun runs its own job on its own GPUs and prints its
    own header (NVIDIA/nccl-tests issues #27, #213, #254), or logs were pasted together; read as
    one job, they would be a link across servers that no collective crossed."""
    counts = Counter(int(r) for _, _, _, r in ranks)
    twice = [r for r, k in counts.items() if k > 1]
    if twice:
        r = min(twice)
        hosts = list(dict.fromkeys(h for h, _, _, x in ranks if int(x) == r))
        raise ScalesimError(
            f"{source}: rank {r} is listed {counts[r]} times (on {', '.join(map(excerpt, hosts[:4]))}"
            f"{', ...' if len(hosts) > 4 else ''}): the file holds several nccl-tests jobs that "
            "ran apart, each timing only its own GPUs (mpirun or srun starting a build without "
            "MPI=1, or logs pasted together); rebuild with make MPI=1 and give one run per file")


def parse_text(text: str, source: str, level: str | None = None) -> NcclTestsRun:
    """Parse one nccl-tests log, or its JSON report (``-J``: ``nccl_tests_json``, read as the
    log it stands for, an error about a row naming the report's result); a wrong, truncated or
    foreign file raises a one-line error. ``level``: the link level the user gave
    (intra=/inter=: ``forced_level``), None to read it from the log."""
    from scalesim.sources import nccl_tests_json

    if not nccl_tests_json.is_report(text):
        return _parse_log(text, source, level)
    text, first = nccl_tests_json.report_text(text, source)
    try:
        return _parse_log(text, source, level)
    except ScalesimError as exc:
        raise ScalesimError(nccl_tests_json.result_words(str(exc), first)) from None


def _parse_log(text: str, source: str, level: str | None = None) -> NcclTestsRun:
    """``parse_text`` of a text log."""
    lines = [_clean(line) for line in text.splitlines()]
    tests = _named_tests(lines)
    foreign = sorted(t for t in tests if t in OTHER_TESTS)
    named_ops = sorted({_op_from_name(t) for t in tests} - {None})
    if not named_ops and foreign:
        raise ScalesimError(f"{source}: {foreign[0]}_perf output; scalesim fits all_reduce_perf, "
                            "reduce_scatter_perf and all_gather_perf")
    if len(named_ops) > 1:
        raise ScalesimError(f"{source}: holds several tests ({', '.join(named_ops)}); split it into "
                            "one file per test")
    op = named_ops[0] if named_ops else _op_from_name(Path(source).name)
    named_by = "its header" if named_ops else "its file name"

    header: list[str] | None = None
    header_line = 0  # the line number of the column header
    ranks: dict[tuple, str] = {}
    nranks_info: set[int] = set()
    networks: set[str] = set()
    algos: set[str] = set()
    rows: list[list[str]] = []
    row_lines: list[int] = []
    oob: tuple[int, str] | None = None
    avg_seen = False
    tables = 0  # column header lines: one per run
    cpu_timed = False  # the table's times are the host's (-C)
    time_unit_us = 1.0  # microseconds per printed time unit (1000: the 2017-2019 tables' ms)
    ellipsis_after_ranks = False  # a '#  ...' line where rank lines were left out
    with_unit: dict[int, float] = {}  # line number of a row whose size had a unit -> that size
    # read in decimal units (size_in_bytes)
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        if ranks and header is None and _ELLIPSIS.match(line):
            ellipsis_after_ranks = True
        m = _RANK.search(line)
        if m and (line.startswith("#") or line.startswith("Rank")):
            # a name a colouring launcher left an escape in is kept readable (``printable``):
            # it names the new profile, whose name is one line of printable text
            ranks[(m.group(3), m.group(2), m.group(4), m.group(1))] = printable(m.group(5))
            continue
        cols = _columns(line)
        if cols:
            (header, time_unit_us), header_line = cols, number
            tables += 1
            cpu_timed = "cputime" in line.split()
            continue
        m = _OOB.search(line)
        if m:
            oob = (int(m.group(1)), m.group(2))
            continue
        if "Avg bus bandwidth" in line:
            avg_seen = True
            continue
        for m in _NRANKS.finditer(line):
            nranks_info.add(int(m.group(1)))
        algos.update(m.group(1) for m in _ALGO.finditer(line))
        if m := _NETWORK.search(line):  # RoCE: IB verbs over Ethernet, neither kind
            networks.add("roce" if "/RoCE" in line else NETWORK_KINDS[m.group(1) or m.group(2)])
        tokens = line.split()
        if header is None or line.startswith("#") or not tokens:
            continue
        if _NUMBER.match(tokens[0]) and _NCCL_MESSAGE.search(line):
            raise ScalesimError(
                f"{source} line {number}: NCCL's own messages are printed inside the table's rows "
                "(NCCL_DEBUG=INFO), splitting them: rerun with "
                "NCCL_DEBUG=WARN, or with NCCL_DEBUG_FILE=nccl.%h.%p.log to write NCCL's messages "
                "to files of their own")
        read = size_in_bytes(tokens, source, number)
        if read is None:
            continue
        tokens, decimal_size = read
        if decimal_size is not None:
            with_unit[number] = decimal_size
        if len(tokens) < len(header):
            raise ScalesimError(f"{source} line {number}: a row with {len(tokens)} of "
                                f"{len(header)} columns: the output is cut short (truncated?)")
        rows.append(tokens[:len(header)])
        row_lines.append(number)

    check_one_job(ranks, source)
    if tables > 1:
        raise ScalesimError(f"{source}: holds {tables} nccl-tests tables (runs pasted together, or "
                            "jobs that ran apart); give one run per file")
    if header is None:
        raise ScalesimError(f"{source}: not nccl-tests output (no 'size count type ... time algbw "
                            "busbw' table); give the text all_reduce_perf, reduce_scatter_perf or "
                            "all_gather_perf printed")
    if not rows:
        for number, line in enumerate(lines[header_line:], header_line + 1):
            tokens = line.split()
            if not line.startswith("#") and (k := _prefixed_row(tokens, len(header))):
                raise ScalesimError(
                    f"{source} line {number}: the table's rows start after "
                    f"'{excerpt(' '.join(tokens[:k]))}', words a log collector put before each "
                    "line; strip them from every line (sed, cut) and give the text nccl-tests "
                    "printed")
        raise ScalesimError(f"{source}: the nccl-tests table has no rows (the run stopped before "
                            "its first size: truncated?)")
    if oob is not None and oob[1] == "FAILED":
        raise ScalesimError(f"{source}: nccl-tests reported 'Out of bounds values : {oob[0]} "
                            "FAILED' (wrong results); fix the cluster before calibrating from it")

    rows, row_lines, notes = one_kind_of_rows(header, rows, row_lines, source)
    if cpu_timed:
        notes.append(f"{Path(source).name}: {CPU_TIME_NOTE}")
    index = {}
    for name in (*TIME_COLUMNS, *CHECK_COLUMNS):
        index[name] = [i for i, c in enumerate(header) if c == name]
    if not index["time"] or not index["busbw"] or not index["algbw"]:
        raise ScalesimError(f"{source}: the table has no time/algbw/busbw columns")
    if problem := halves_problem(index):
        raise ScalesimError(f"{source} line {header_line}: {problem}")
    if time_unit_us != 1.0:  # read as today's microseconds from here on
        rows = [[in_microseconds(c, time_unit_us) if i in index["time"] else c
                 for i, c in enumerate(r)] for r in rows]
        notes.append(f"{Path(source).name}: the table of nccl-tests' 2017-2019 versions ('bytes N "
                     "... res' header): its times read in milliseconds, as those versions print "
                     "them")
    check = index["#wrong"] or index["error"]
    unchecked = False
    for tokens, number in zip(rows, row_lines, strict=True):
        for i in check:
            cell = tokens[i]
            if cell == "N/A":
                unchecked = True
            elif _NUMBER.match(cell) and float(cell) > 0 and index["#wrong"]:
                raise ScalesimError(f"{source} line {number}: #wrong is {excerpt(cell)} at "
                                    f"{excerpt(tokens[0])} bytes: "
                                    "nccl-tests found wrong results; fix the cluster before "
                                    "calibrating from it")
        for i in (*index["time"], *index["algbw"], *index["busbw"]):
            if not _NUMBER.match(tokens[i]):
                raise ScalesimError(f"{source} line {number}: '{excerpt(tokens[i])}' is not a number in "
                                    f"the {header[i]} column")
            # bounded here, so a 0 us or 10^30 us time is named by its line (not by the fit)
            quantity, factor = ("positive_duration_s", 1e-6) if i in index["time"] else (
                "bandwidth_GBps", 1.0)
            check_number(quantity, float(tokens[i]) * factor,
                         f"{source} line {number}: the {header[i]} column ({excerpt(tokens[i])})")
        if float(tokens[0]) > 0:  # a 0-byte row carries no time and is skipped below
            check_number("message_bytes", float(tokens[0]),
                         f"{source} line {number}: the size column ({excerpt(tokens[0])})")
    if unchecked:
        notes.append(f"{Path(source).name}: results were not checked (-c 0: #wrong is N/A)")
    if not avg_seen:
        notes.append(f"{Path(source).name}: no 'Avg bus bandwidth' line: the run may have "
                     "stopped before its last size")
    if "root" in header and any(r[header.index("root")] not in ("-1",) for r in rows):
        raise ScalesimError(f"{source}: a rooted collective (root column is not -1: broadcast or "
                            "reduce); scalesim fits all_reduce, reduce_scatter and all_gather")

    first = {name: index[name][0] for name in TIME_COLUMNS}
    if op is None and "redop" in header and all(r[header.index("redop")] == "none" for r in rows):
        op = "all_gather"
    if op is not None:
        check_named_op(rows, first, op, named_by, source)
    ratio_op, ratio_ranks, ratio_span = _ranks_from_ratio(rows, first, op)
    op_from_ratio = op is None
    if op is None:
        if ratio_op is None:
            raise ScalesimError(f"{source}: cannot tell which collective this is; keep the "
                                "'all_reduce_perf ...' header or name the file after the test "
                                "(e.g. reduce_scatter_node1.txt)")
        op = ratio_op
        notes.append(f"{Path(source).name}: taken as {op} from its busbw/algbw ratio (no test "
                     "name in the file)")
    # -C: a row's time and algbw are of different clocks (CPU_TIME_NOTE); a table whose busbw is
    # its algbw may count algbw the old way (OLD_GATHER_ALGBW_FROM), checked once its ranks are
    # known, below
    if not cpu_timed and not busbw_is_algbw(rows, header):
        check_size_units(rows, row_lines, with_unit, header, source)  # the cells are numbers
    if with_unit:
        notes.append(unit_sizes_note(rows, row_lines, with_unit, header, op, cpu_timed, source))
    hosts = list(dict.fromkeys(h for h, _, _, _ in ranks))
    devices = list(dict.fromkeys(ranks.values()))
    listed_up_to = max((int(r) for _, _, _, r in ranks), default=-1) + 1
    if ranks and listed_up_to > len(ranks):  # a pasted excerpt: the rank lines are cut
        n = listed_up_to
        notes.append(f"{Path(source).name}: the header lists {len(ranks)} of ranks 0-{n - 1}: "
                     f"{n} ranks taken; the others' servers are not listed"
                     + (ONE_SERVER_ASSUMED if len(hosts) <= 1 else ""))
    elif ranks:
        n = len(ranks)
    elif nranks_info:
        n = max(nranks_info)
    elif ratio_ranks:
        n = ratio_ranks
        if ratio_span is not None and np.floor(ratio_span[1]) > np.ceil(ratio_span[0]):
            low = f"{np.ceil(ratio_span[0]):.0f}"
            fits = (f"{low} ranks or more" if not np.isfinite(ratio_span[1])
                    else f"anything from {low} to {np.floor(ratio_span[1]):.0f} ranks")
            raise ScalesimError(
                f"{source}: no rank list in the header, and busbw/algbw, printed to two "
                f"decimals, fits {fits}; keep the '#  Rank ...' lines of the header (or the rows "
                "of the largest sizes)")
        notes.append(f"{Path(source).name}: no rank list in the header; {n} ranks inferred from "
                     f"busbw/algbw{ONE_SERVER_ASSUMED}")
    else:
        raise ScalesimError(f"{source}: cannot tell how many ranks ran (no '#  Rank ...' lines and "
                            "no bandwidth to infer it from); keep the whole output")
    if n < 2:
        raise ScalesimError(f"{source}: {n} rank: a collective on one GPU measures no link")
    servers = None  # the servers of a rank list cut short, from its fullest host
    pinned = (ratio_span is not None and ratio_ranks is not None and op == ratio_op
              and np.ceil(ratio_span[0]) == np.floor(ratio_span[1]) == ratio_ranks)
    per_host = Counter(h for h, _, _, _ in ranks)
    looks_cut = ellipsis_after_ranks or len(set(per_host.values())) > 1
    if ranks and pinned and ratio_ranks > n and looks_cut:
        # the rank lines end early (a pasted excerpt: '#  ...', or its last host listed in part)
        # and the digits allow no other count
        notes.append(f"{Path(source).name}: the header lists {n} ranks, but busbw/algbw allows "
                     f"only {ratio_ranks} as printed: {ratio_ranks} ranks taken (the rank lines "
                     "are cut short)")
        n = ratio_ranks
    elif ranks and ratio_ranks and ratio_ranks != n and op == ratio_op:
        notes.append(f"{Path(source).name}: busbw/algbw suggests {ratio_ranks} ranks, the header "
                     f"lists {n}; the header is used")
    if ranks and len(ranks) < n and len(hosts) > 1:
        fullest = max(per_host.values())
        if n % fullest == 0:
            servers = n // fullest
            notes.append(f"{Path(source).name}: {servers} servers of {fullest} GPUs taken (its "
                         f"fullest listed host's {fullest}; {len(hosts)} listed)")

    old_algbw = op != "all_reduce" and old_gather_algbw(rows, header, n)
    if op_from_ratio and op == "all_reduce" and n > 2 and old_gather_algbw(rows, header, n):
        raise ScalesimError(
            f"{source}: busbw equals algbw on {n} ranks: an all_gather or reduce_scatter table of "
            f"nccl-tests before 2020-06 (algbw = S (n-1)/n / t then), not an all_reduce (busbw "
            "2(n-1)/n x algbw); keep the test's name in the log, or name the file after its test "
            "(e.g. all_gather_node1.txt)")
    if old_algbw:
        notes.append(f"{Path(source).name}: busbw equals algbw in every row: nccl-tests before "
                     f"2020-06 ({OLD_GATHER_ALGBW_FROM}), whose {op} algbw is S (n-1)/n / t; its "
                     "sizes and times read as today's")
    if not cpu_timed and busbw_is_algbw(rows, header):
        check_size_units(rows, row_lines, with_unit, header, source,
                         share=(n - 1) / n if old_algbw else 1.0)
    algorithm = _one_algorithm(algos, op, source)
    column = 1 if op == "all_reduce" and len(index["time"]) > 1 else 0
    t_i, a_i = index["time"][column], index["algbw"][column]
    points = []
    coarse = 0  # -C rows whose algbw is printed too coarsely to give their time
    for tokens in rows:
        size, t_us = float(tokens[0]), float(tokens[t_i])
        if cpu_timed and size > 0:
            algbw = float(tokens[a_i])
            if algbw <= 0 or printed_half_unit(tokens[a_i]) > CPU_TIMED_ALGBW_MAX_ROUNDING * algbw:
                coarse += 1
                continue
            t_us = size / algbw / 1e3  # bytes / (GB/s) -> us
        if size <= 0 or t_us <= 0:
            continue
        points.append(point_from_time(op, size, n, t_us * US))
    if coarse:
        notes.append(f"{Path(source).name}: {coarse} row(s) left out: their algbw is printed "
                     f"to more than {CPU_TIMED_ALGBW_MAX_ROUNDING:.0%} of itself (under 0.5 GB/s "
                     "at two decimals), too coarse to give their time, and their printed time is "
                     "CPU-side (-C); rerun without -C for those sizes' latency")
    if len({p.size_bytes for p in points}) < 2:
        raise ScalesimError(f"{source}: only {len(points)} message size with data; a fit needs a "
                            "sweep (e.g. all_reduce_perf -b 8 -e 8G -f 2)")
    run = NcclTestsRun(str(source), op, n, hosts, devices, points, notes,
                       network=next(iter(networks)) if len(networks) == 1
                       and "roce" not in networks else None, algorithm=algorithm,
                       cpu_timed=cpu_timed, servers=servers)
    # every rank listed: the hosts are known; intra=/inter= say the level themselves
    if len(hosts) > 1 and len(ranks) == n and level is None:
        _read_domain(run, op, n, ranks, source)
    if level == "inter_node" and len(hosts) == 1 and len(ranks) == n:
        # every rank listed, on one host: inter= would split them into servers (``nodes``:
        # at least 2) that the log shows none of, and fit that host's own link as a network's
        raise ScalesimError(
            f"{source}: inter= says it ran across servers, but its header lists all {n} ranks "
            f"on one host ({excerpt(hosts[0])}): it crossed no network between servers; give it "
            "without inter= (it measures that server's link) and give inter= a log that ran "
            "across servers")
    run.forced_level = level
    if run.level == "inter_node" and op == "all_reduce" and not (ring_pinned(run)
                                                                  or tree_pinned(run)):
        run.notes.append(f"{Path(source).name}: {ALGO_UNPINNED_NOTE}; {switch_words(run)}")
    return run


# A row's time as printed is taken within this share of its true one (run-to-run spread), both
# ways, when the log's shape is read for a change of algorithm (``faster_from``).
TIME_SPREAD = 0.05


def faster_from(points: list[CollectivePoint]) -> tuple[int, float] | None:
    """(index of the first row, busbw bound in GB/s) from which every row of a sweep, two at
    least, runs faster than one algorithm and protocol allow given the three rows just below;
    None where no row does.

    One algorithm's time is ``t = a + c*S`` (a, c >= 0; docs/model.md §2), whose busbw
    ``k*S/(a + c*S)`` rises toward ``k/c``: from two sizes ``S1 < S2 = m*S1`` with busbw gain
    ``r = b2/b1 < m``, ``a/(c*S2) = x = m(r-1)/(m-r)`` and busbw can rise to ``b2*(1 + x)`` at
    most. ``r`` is taken ``(1 + TIME_SPREAD)^2`` higher and the larger of b1, b2 (a gain below
    1 is spread) ``1 + TIME_SPREAD`` higher (each time off by that share), which only widens
    the bound. Each pair of the three rows below gives one; the largest is taken, so one row
    off by more than the spread leaves a pair that still bounds. Rows above it all ran another
    algorithm or protocol than those below.
    """
    rows = sorted(points, key=lambda p: p.size_bytes)
    busbw = [p.busbw_GBps for p in rows]

    def bound(i: int, k: int) -> float:
        m = rows[k].size_bytes / rows[i].size_bytes
        r = busbw[k] / busbw[i] * (1.0 + TIME_SPREAD) ** 2
        if r >= m:
            return float("inf")
        x = max(m * (r - 1.0) / (m - r), 0.0)
        return max(busbw[i], busbw[k]) * (1.0 + TIME_SPREAD) * (1.0 + x)

    for j in range(3, len(rows) - 1):
        most = max(bound(i, k) for i, k in ((j - 3, j - 2), (j - 3, j - 1), (j - 2, j - 1)))
        if all(b > most for b in busbw[j:]):
            return j, most
    return None


def switch_words(run: NcclTestsRun) -> str:
    """What the log's shape says of where NCCL changed algorithm (``faster_from``), for the
    note of a multi-node all-reduce log that pins none."""
    from scalesim.calibration.link_fit import LARGE_BYTES, TOP_SHARE

    rows = sorted(run.points, key=lambda p: p.size_bytes)
    found = faster_from(rows)
    if found is None:
        return ("its times show no size from which a faster algorithm took over: one "
                "algorithm may have run the whole sweep, the ring or the tree (times alone "
                "cannot show which, nor which ran the small messages, where latency dominates)")
    j, most = found
    top = rows[j:]
    likely = ("likely the tree, which sends S per server where the ring sends 2(p-1)/p S "
              "(docs/model.md §2)" if run.nodes == 2 else "the ring or the tree")
    words = (f"from {bytes_text(top[0].size_bytes)} up ({len(top)} size"
             f"{'s' * (len(top) > 1)}) its busbw ({min(p.busbw_GBps for p in top):.3g}-"
             f"{max(p.busbw_GBps for p in top):.3g} GB/s) is above the {most:.3g} GB/s one "
             f"algorithm's t = a + c*S allows after {bytes_text(rows[j - 3].size_bytes)}-"
             f"{bytes_text(rows[j - 1].size_bytes)} (times within {TIME_SPREAD:.0%}): NCCL "
             f"switched algorithm or protocol there, {likely}")
    if max(LARGE_BYTES, rows[-1].size_bytes * TOP_SHARE) >= top[0].size_bytes:
        words += ", and the beta refitted at the top of the sweep comes from those sizes"
    return words


def _one_algorithm(values: set[str], op: str, source: str) -> str | None:
    """The NCCL_ALGO the log records (None: none); ScalesimError where it records two, or one
    that leaves ``op`` no ring and is not the all-reduce's tree alone (NVLS, CollNet, PAT, or
    a choice among them): a link level is fitted from ring timings
    (``collectives.ring_coeffs``) or an all-reduce's tree timings (``collectives.tree_coeffs``,
    ``link_fit.derive_tree_level``), and other algorithms' times would be read as one of
    those."""
    if len(values) > 1:
        raise ScalesimError(f"{source}: records {len(values)} NCCL_ALGO values "
                            f"({', '.join(map(excerpt, sorted(values)[:4]))}): several runs "
                            "pasted together? give one run per file")
    if not values:
        return None
    value = next(iter(values))
    left = algorithms_left(value, op)
    if left is not None and "ring" not in left and not (op == "all_reduce" and left == {"tree"}):
        raise ScalesimError(
            f"{source}: ran with NCCL_ALGO={excerpt(value)}, so its {op} times are not NCCL's "
            f"ring ({', '.join(sorted(left)) or 'no algorithm'}), and scalesim fits a link level "
            "from ring timings, or an all-reduce's from the tree's alone (docs/model.md §2); "
            "rerun with NCCL_ALGO=Ring, as scalesim calibrate does")
    return value


def nic_GBps_per_gpu(devices: Iterable[str]) -> float:
    """The fastest network per GPU (GB/s) that GPUs of these names may sit on: 100 (800 Gb/s,
    ConnectX-8) where every one is a GPU of ``NIC_GBPS_BY_GPU``, else 200 (1.6 Tb/s,
    ConnectX-9, the fastest announced)."""
    from scalesim.presets import name_has_words

    known = [any(name_has_words(d, words) for words in NIC_GBPS_BY_GPU) for d in devices]
    return SLOWER_NIC_GBPS_PER_GPU if known and all(known) else FASTEST_NIC_GBPS_PER_GPU


def nvlink_domain_gpus(devices: Iterable[str]) -> int:
    """The most GPUs one NVLink domain of GPUs of these names holds (``NVLINK_DOMAIN_GPUS_BY_GPU``;
    ``LARGEST_NVLINK_DOMAIN_GPUS`` for a GPU without a row)."""
    from scalesim.presets import name_has_words

    sizes = [next((size for words, size in NVLINK_DOMAIN_GPUS_BY_GPU
                   if name_has_words(d, words)), LARGEST_NVLINK_DOMAIN_GPUS) for d in devices]
    return max(sizes, default=LARGEST_NVLINK_DOMAIN_GPUS)


def _rate_text(GBps: float) -> str:
    """100 GB/s -> '800 Gb/s', 200 -> '1.6 Tb/s'."""
    gbit = GBps * 8
    return f"{gbit / 1000:g} Tb/s" if gbit >= 1000 else f"{gbit:g} Gb/s"


def _read_domain(run: NcclTestsRun, op: str, n: int, ranks: dict, source: str) -> None:
    """Whether the hosts of a log that lists every rank share one NVLink domain, from busbw over
    what a network of the GPUs' fastest NICs allows (``network_busbw_ceiling_GBps``): sets
    ``run.one_domain`` and says so in a note. A domain of more GPUs than the GPUs' largest
    (two NVL72 racks) is refused (intra=FILE / inter=FILE say how to read such a log); a
    busbw over the 800 Gb/s ceiling but not the 1.6 Tb/s one of GPUs the log does not name is
    read as servers and said."""
    name = Path(source).name
    hosts = {h for h, _, _, _ in ranks}
    per_host = max(Counter(h for h, _, _, _ in ranks).values())
    devices = run.devices
    nic = nic_GBps_per_gpu(devices)
    ceiling = network_busbw_ceiling_GBps(op, n, len(hosts), per_host, nic)
    fastest = max(p.busbw_GBps for p in run.points)
    where = (f"busbw reaches {fastest:.0f} GB/s across {len(hosts)} hosts of up to {per_host} "
             "GPUs")
    shown = ", ".join(excerpt(d) for d in devices[:3]) + (", ..." if len(devices) > 3 else "")
    if fastest <= NETWORK_CEILING_MARGIN * ceiling:
        slower = network_busbw_ceiling_GBps(op, n, len(hosts), per_host,
                                            SLOWER_NIC_GBPS_PER_GPU)
        if nic > SLOWER_NIC_GBPS_PER_GPU and fastest > NETWORK_CEILING_MARGIN * slower:
            run.notes.append(
                f"{name}: {where}, over the {slower:.0f} GB/s one 800 Gb/s NIC per GPU allows "
                f"but within the {ceiling:.0f} GB/s of {_rate_text(nic)} NICs (ConnectX-9), "
                f"and the log does not name a GPU of 800 Gb/s platforms ({shown}): read as "
                f"{len(hosts)} servers on a network (say intra=FILE if the hosts share one "
                "NVLink domain, e.g. GB200 NVL72 trays)")
        return
    run.one_domain = True
    largest = nvlink_domain_gpus(devices)
    if n > largest:
        raise ScalesimError(
            f"{source}: {where}, over {NETWORK_CEILING_MARGIN:g}x the {ceiling:.0f} GB/s a "
            f"network of one {_rate_text(nic)} NIC per GPU allows, so the hosts share NVLink, "
            f"but {n} GPUs ({shown}) are more than one NVLink domain of them holds ({largest}): "
            "the log spans several domains joined by a network and does not say which host is "
            "in which; give it as inter=FILE to fit a network across the hosts, or one domain's "
            "log as intra=FILE")
    run.notes.append(
        f"{name}: {where}, over {NETWORK_CEILING_MARGIN:g}x the {ceiling:.0f} GB/s a network "
        f"of one {_rate_text(nic)} NIC per GPU (the fastest for {shown}) allows: the hosts "
        "share one NVLink domain (multi-node NVLink, e.g. GB200 NVL72 trays), "
        f"{ONE_DOMAIN_NOTE} of {n} GPUs (say inter=FILE if not)")


def network_busbw_ceiling_GBps(op: str, ranks: int, hosts: int, gpus_per_host: int,
                               nic_GBps: float = FASTEST_NIC_GBPS_PER_GPU) -> float:
    """The most busbw (GB/s) a collective ``op`` of ``ranks`` over ``hosts`` can show when the
    hosts are joined by a network of one ``nic_GBps`` (GB/s) NIC per GPU, B GB/s per host,
    whatever the algorithm.

    All-reduce of S bytes: each host must send and receive at least S through its NICs (every
    element of the result depends on the host's partial sum and is needed by the host), so
    t >= S / B, in-network reduction (SHARP) included: the ring's 2(N-1)/N S is more for N > 2
    hosts and the same for 2. nccl-tests' busbw is 2(n-1)/n S / t over n ranks (PERFORMANCE.md),
    so busbw <= 2(n-1)/n B. All-gather (reduce-scatter): each host must receive (send)
    (N-1)/N S, busbw = (n-1)/n S / t <= B (n-1)/n N/(N-1)."""
    host_GBps = gpus_per_host * nic_GBps
    if op == "all_reduce":
        return host_GBps * 2 * (ranks - 1) / ranks
    return host_GBps * (ranks - 1) / ranks * hosts / (hosts - 1)


def parse_file(path: str | os.PathLike[str], level: str | None = None) -> NcclTestsRun:
    return parse_text(read_text(path), str(path), level)


@dataclass
class LevelFit:
    """One link level fitted from nccl-tests runs."""

    level: str
    link: LinkLevel
    calibration: LinkCalibration
    fits: dict[str, dict[str, float]]
    runs: list[NcclTestsRun]
    algorithm: str = "ring"  # "tree": the level's all-reduce logs ran NCCL_ALGO=Tree

    def level_terms(self, op: str) -> dict[str, float]:
        """latency_s and busbw_GBps of the level as ``op``'s fit gives them: the fit itself
        for a ring, the link read through the tree (``derive_tree_level``) for a tree's
        all-reduce."""
        if self.algorithm == "tree" and op == "all_reduce":
            return {"latency_s": self.link.latency_s, "busbw_GBps": self.link.busbw_GBps}
        return self.fits[op]


def _kind(level: str, runs: list[NcclTestsRun]) -> str:
    devices = sorted({d for r in runs for d in r.devices}) or ["unnamed devices"]
    if level == "inter_node":
        nodes = max(r.nodes for r in runs)
        return f"network ({nodes} servers, nccl-tests, {', '.join(devices)})"
    return f"intra-server ({', '.join(devices)}, nccl-tests)"


def fit_runs(runs: Iterable[NcclTestsRun]) -> dict[str, LevelFit]:
    """Per link level: the alpha-beta fit of every run on it (``calibration.link_fit``)."""
    from scalesim.calibration.link_fit import derive_tree_level, fit_level, level_op

    by_level: dict[str, list[NcclTestsRun]] = {}
    for run in runs:
        by_level.setdefault(run.level, []).append(run)
    out = {}
    for level, level_runs in by_level.items():
        points = sorted((p for r in level_runs for p in r.points),
                        key=lambda p: (p.op, p.ranks, p.size_bytes))
        fits = fit_level(points)
        op = level_op(fits)
        fit = fits[op]
        rows = [p for p in points if p.op == op]
        tree = _tree_layout(level_runs, op)
        files = ", ".join(Path(r.path).name for r in level_runs)
        ranks = sorted({p.ranks for p in rows})
        span = (f"{min(p.size_bytes for p in rows):.0f} B-"
                f"{max(p.size_bytes for p in rows) / MIB_BYTES:g} MiB")
        large = (f"beta from messages >= {fit['large_from_bytes'] / MIB_BYTES:g} MiB (all sizes: "
                 f"{fit['busbw_all_sizes_GBps']:.3g} GB/s)" if fit["large_from_bytes"]
                 else "beta from all sizes")
        column = "in-place" if op == "all_reduce" else "out-of-place"
        cpu = [Path(r.path).name for r in level_runs if r.cpu_timed]
        timed = (f"{column} times" if not cpu else
                 f"{column} times from algbw: {', '.join(cpu)} printed CPU-side times (-C)")
        source = (f"nccl-tests logs {files}: {op} on {'/'.join(map(str, ranks))} ranks, {span} "
                  f"({timed}; {algorithm_words(level_runs)}); alpha-beta fit as scalesim "
                  f"calibrate's (fit_alpha_beta), {large}; rel. RMSE {fit['rel_rmse']:.1%}")
        latency, busbw = fit["latency_s"], fit["busbw_GBps"]
        if tree is not None:
            # the busbw is the last level's whatever the intra alpha; the inter alpha needs
            # the intra level's (inter_as_modelled)
            _, busbw, _, _ = derive_tree_level(fit, None, *tree)
            if level == "intra_node":
                latency = derive_tree_level(fit, None, *tree)[0]
                source += (f"; read through the model's tree (docs/model.md §2): the chain "
                           f"sends 2S per GPU, so busbw {link_GBps(busbw)} for the logged "
                           f"{link_GBps(fit['busbw_GBps'])} (nccl-tests' 2(p-1)/p form)")
        if level == "intra_node":
            source += "; one server: says nothing about the inter-server link"
        link = LinkLevel(kind=_kind(level, level_runs), busbw_GBps=busbw,
                         latency_s=latency, source=source)
        cal = LinkCalibration(level=level, measured=True, points=points,
                              rel_rmse=fit["rel_rmse"], note=source)
        out[level] = LevelFit(level, link, cal, fits, level_runs,
                              "tree" if tree is not None else "ring")
    return out


def _tree_layout(runs: list[NcclTestsRun], op: str) -> tuple[int, int] | None:
    """(GPUs per server, servers) of a level's all-reduce logs that ran NCCL_ALGO=Tree, None
    where they ran the ring (or NCCL's choice); ScalesimError where tree and ring logs, or
    tree logs of two layouts, share the level: its fit would mix what one formula cannot
    read back (``derive_tree_level`` reads one layout's tree)."""
    fitted = [r for r in runs if r.op == op]
    trees = [r for r in fitted if tree_pinned(r)]
    if not trees:
        return None
    if len(trees) < len(fitted):
        other = next(r for r in fitted if not tree_pinned(r))
        raise ScalesimError(
            f"{Path(trees[0].path).name} ran NCCL_ALGO={excerpt(str(trees[0].algorithm))} and "
            f"{Path(other.path).name} the ring (or NCCL's choice) on the same link level: a "
            "level is fitted from one algorithm's times; give the logs of one of them")
    layouts = sorted({(r.ranks // r.nodes, r.nodes) for r in trees})
    if len(layouts) > 1:
        raise ScalesimError(
            f"the NCCL_ALGO=Tree logs of one link level ran {len(layouts)} layouts "
            f"({', '.join(f'{n} servers of {g}' for g, n in layouts)}): the tree's time is "
            "not one formula over them; give the logs of one layout")
    return layouts[0]


def inter_as_modelled(fit: LevelFit, intra: dict[str, float], intra_from: str) -> LevelFit:
    """The inter-server level of ``fit`` (a ring over every rank of several servers, fitted
    with one alpha per step) as the model charges it, given the intra level's alpha and busbw
    (``intra``: latency_s, busbw_GBps; ``intra_from``: where they came from, in words):
    ``link_fit.derive_inter_level``, as scalesim calibrate derives its own (the ring's
    ``2(p-1)`` steps are ``2(p-N)`` intra hops and ``2(N-1)`` server-boundary ones,
    ``collectives.ring_coeffs``), so the profile gives back the times of the logs. The layout
    (GPUs per server g, servers N) is the fitted op's log of the most ranks."""
    from scalesim.calibration.link_fit import (
        all_ranks_words,
        derive_inter_level,
        derive_tree_level,
        level_op,
        tree_words,
    )

    op = level_op(fit.fits)
    run = max((r for r in fit.runs if r.op == op), key=lambda r: r.ranks)
    per_node, nodes = run.ranks // run.nodes, run.nodes
    ring = fit.fits[op]
    derive = derive_tree_level if fit.algorithm == "tree" else derive_inter_level
    latency, busbw, lower_bound, method = derive(ring, intra, per_node, nodes)
    source = fit.link.source
    if fit.algorithm == "tree":
        source += ((tree_words(per_node, nodes, latency, busbw, ring, intra, lower_bound)
                    + f" ({intra_from})") if method == "all_ranks" else
                   (f"; one rank per server: the tree's {2 * int(np.log2(nodes))} hops are all "
                    f"server-boundary ones, alpha {latency_us(latency)} each, busbw "
                    f"{link_GBps(busbw)} for the logged {link_GBps(ring['busbw_GBps'])}"))
    elif method == "all_ranks":
        source += (all_ranks_words(per_node, nodes, latency, ring["latency_s"], intra,
                                   lower_bound) + f" ({intra_from})")
        layouts = {(r.ranks // r.nodes, r.nodes) for r in fit.runs if r.op == op}
        if len(layouts) > 1:
            source += (f"; the logs ran {len(layouts)} layouts, the alpha is that of "
                       f"{nodes} servers of {per_node}")
    else:
        source += "; one rank per server: the ring is the inter level itself"
    link = fit.link.model_copy(update={"latency_s": latency, "busbw_GBps": busbw,
                                       "source": source})
    cal = fit.calibration.model_copy(update={"method": method, "ranks_per_node": per_node,
                                             "lower_bound": lower_bound, "note": source})
    return LevelFit(fit.level, link, cal, fit.fits, fit.runs, fit.algorithm)


LEVEL_PREFIXES = {"intra": "intra_node", "inter": "inter_node"}


def _entry_path(entry: str | os.PathLike[str]) -> str:
    """The file of a ``FILE`` or ``intra=FILE`` / ``inter=FILE`` entry (as ``load_runs`` reads
    it: a file whose name holds the prefix and exists is the file)."""
    prefix, sep, rest = str(entry).partition("=")
    prefixed = sep and prefix in LEVEL_PREFIXES and not os.path.exists(entry)  # never raises
    return rest if prefixed else str(entry)


def load_runs(entries: Iterable[str | os.PathLike[str]]) -> list[NcclTestsRun]:
    """Parse ``FILE`` or ``intra=FILE`` / ``inter=FILE`` entries (the prefix sets the link level
    of a log whose header does not list its hosts, e.g. a pasted table)."""
    entries = list(entries)
    check_distinct_files([_entry_path(e) for e in entries], "give each log once")
    runs = []
    for entry in entries:
        rest = _entry_path(entry)
        if rest != str(entry):  # a level prefix
            prefix = str(entry).partition("=")[0]
            run = parse_file(rest, LEVEL_PREFIXES[prefix])
            hosts_say = "inter_node" if len(run.hosts) > 1 else "intra_node"
            if run.hosts and hosts_say != run.forced_level:
                run.notes.append(f"{Path(rest).name}: its header lists {len(run.hosts)} host(s), "
                                 f"taken as {run.forced_level} as {prefix}= says"
                                 + (f": one server of {run.ranks} GPUs (hosts on one NVLink "
                                    "domain)" if prefix == "intra" else ""))
            run.notes = [n.replace(ONE_SERVER_ASSUMED, "") for n in run.notes
                         if ONE_DOMAIN_NOTE not in n]  # the user said which level it is
        else:
            prefix, sep, rest = str(entry).partition("=")
            if sep and not os.path.exists(entry) and os.path.exists(rest):  # never raises
                # 'both=FILE', 'Intra=FILE': read as a file named so, 'no such file'
                raise ScalesimError(
                    f"{str(entry)[:200]}: '{prefix[:40]}=' is not a link level; give "
                    "intra=FILE or inter=FILE (lower case), or the FILE alone to read the "
                    "level from its header")
            run = parse_file(entry)
        runs.append(run)
    if not runs:
        raise ScalesimError("give one or more nccl-tests logs (--from-nccl-tests FILE ...)")
    servers_from_one_server_logs(runs)
    return runs


def servers_from_one_server_logs(runs: list[NcclTestsRun]) -> None:
    """Set the servers of each ``inter=`` log that lists no hosts (a pasted table) from the GPUs
    of the one-server logs beside it (one host, its ranks all on it): ranks / those GPUs where
    they divide, else 2, each said in its notes."""
    per_server = sorted({r.ranks for r in runs if r.level == "intra_node" and len(r.hosts) == 1})
    for run in runs:
        if run.forced_level != "inter_node" or run.hosts or run.servers:
            continue
        fit = [g for g in per_server if run.ranks % g == 0 and run.ranks // g >= 2]
        if len(fit) == 1:
            run.servers = run.ranks // fit[0]
            run.notes.append(f"{Path(run.path).name}: no host list; {run.servers} servers of "
                             f"{fit[0]} GPUs taken, as many as the one-server log beside it ran")
        else:
            run.notes.append(f"{Path(run.path).name}: no host list; {run.nodes} servers of "
                             f"{run.ranks // run.nodes} GPUs assumed: keep the '#  Rank ...' lines, "
                             "or give a one-server log of the same GPUs beside it")
