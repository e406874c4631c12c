"""nccl-tests' JSON report (``-J FILE.json``, nccl-tests >= 2.17, October 2025) as the text log
it stands for, so that ``nccl_tests.parse_text`` reads and checks it as it reads a log.

The report (src/util.cu, ``JSON_FILE_VERSION`` 3) holds what the log prints: ``args`` (argv:
the test binary first), ``env`` (``NAME=value`` strings: NCCL_ALGO among them), ``config``
(``nthreads``, ``ngpus``, ``devices``: one object per process, the rank line of its first GPU
only: ``rank``, ``hostname``, ``device``, ``device_hex``, ``device_info``), ``results`` (one
object per row: ``size``, ``count``, ``type``, ``redop``, ``root``, then ``out_of_place`` and
``in_place`` objects of ``time`` (us; ``cpu_time`` under ``-C``), ``alg_bw``, ``bus_bw`` (GB/s)
and ``nwrong`` (null under ``-c 0``)), ``out_of_bounds`` and ``average_bus_bandwidth``.

A process's other ranks (``nthreads x ngpus`` per process) are listed after its first, on the
next devices of its host (src/util.cu: ``cudaDev = localRank*nThreads*nGpus + i``), as the log
lists them.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from scalesim.errors import ScalesimError, excerpt
from scalesim.jsonio import parse_json_text

_ROW_LINE = re.compile(r"^(.*?) line (\d+):")


def is_report(text: str) -> bool:
    """Whether ``text`` is JSON (an object), not a log: nccl-tests' logs start with '#' or a row."""
    return text.lstrip().startswith("{")


def _field(obj, key: str, what: str, source: str):
    if not isinstance(obj, dict) or key not in obj:
        raise ScalesimError(f"{source}: {what} has no '{key}': not an nccl-tests -J report (or "
                            "one cut short); give the report whole, or the text log nccl-tests "
                            "printed")
    return obj[key]


def _cell(value) -> str:
    """A JSON value as the one cell the log prints for it (``null`` -> N/A, as ``-c 0``; white
    space inside joined by '_', so a cell stays one)."""
    if value is None:
        return "N/A"
    if type(value) is float and value.is_integer() and abs(value) < 1e15:
        value = int(value)  # "%lf" of a count: 3.000000 -> 3, as the log's "%6g"
    return excerpt("_".join(str(value).split()) or "?")


def report_text(text: str, source: str) -> tuple[str, int]:
    """(the log ``text``'s JSON report stands for, the line number of its first result row)."""
    data = parse_json_text(text, source)
    results = _field(data, "results", "the JSON", source)
    if not isinstance(results, list):
        raise ScalesimError(f"{source}: 'results' is not a list: not an nccl-tests -J report")
    args = data.get("args") if isinstance(data.get("args"), list) else []
    program = PurePath(str(args[0])).name if args else ""
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    lines = [f"# Collective test starting: {program}"] if program else []
    env = data.get("env") if isinstance(data.get("env"), list) else []
    lines += [f"# {e}" for e in env if isinstance(e, str) and e.startswith("NCCL_ALGO=")]
    per_process = 1
    for key in ("nthreads", "ngpus"):
        if isinstance(config.get(key), int) and config[key] > 0:
            per_process *= config[key]
    for d in config.get("devices") or []:
        if not isinstance(d, dict) or not all(isinstance(d.get(k), int)
                                              for k in ("rank", "device")):
            continue
        pid = d["pid"] if isinstance(d.get("pid"), int) else 0
        for i in range(per_process):
            lines.append(f"#  Rank {d['rank'] + i} Group 0 Pid {pid} on "
                         f"{_cell(d.get('hostname'))} device {d['device'] + i} "
                         f"[{_cell(d.get('device_hex'))}] {' '.join(str(d.get('device_info')).split())}")
    cpu = any(isinstance(r, dict) and isinstance(r.get("in_place"), dict)
              and "cpu_time" in r["in_place"] for r in results)
    time = "cputime" if cpu else "time"
    lines.append(f"# size count type redop root {time} algbw busbw #wrong {time} algbw busbw "
                 "#wrong")
    first = len(lines) + 1
    for k, r in enumerate(results, 1):
        what = f"result {k}"
        cells = [_cell(_field(r, key, what, source)) for key in ("size", "count", "type", "redop")]
        cells.append(_cell(r.get("root", -1)))
        for place in ("out_of_place", "in_place"):
            timed = _field(r, place, what, source)
            cells += [_cell(_field(timed, "cpu_time" if cpu else "time", f"{what}'s {place}",
                                   source)),
                      _cell(_field(timed, "alg_bw", f"{what}'s {place}", source)),
                      _cell(_field(timed, "bus_bw", f"{what}'s {place}", source)),
                      _cell(timed.get("nwrong"))]
        lines.append("  ".join(cells))
    oob = data.get("out_of_bounds")
    if isinstance(oob, dict) and isinstance(oob.get("count"), int):
        lines.append(f"# Out of bounds values : {oob['count']} "
                     f"{'OK' if oob.get('okay') is True else 'FAILED'}")
    avg = data.get("average_bus_bandwidth")
    if isinstance(avg, dict) and "bandwidth" in avg:
        lines.append(f"# Avg bus bandwidth : {_cell(avg['bandwidth'])}")
    return "\n".join(lines) + "\n", first


def result_words(message: str, first: int) -> str:
    """An error about line N of the rendered text, said of the report's result N - first + 1."""
    m = _ROW_LINE.match(message)
    if m is None or int(m.group(2)) < first:
        return message
    return f"{m.group(1)} result {int(m.group(2)) - first + 1}:{message[m.end():]}"
