"""nccl-tests logs as users' tools hand them over: nccl-tests 2.17-2.19's optional columns
(``-S 1`` time stamps, ``-I 1`` per-iteration statistics), lines a log collector prefixed with a
time stamp (``kubectl logs --timestamps``, ``docker logs -t``, ``ts``) or other words.

The table is the H100 fixture's (tests/fixtures/nccl_tests/h100_8gpu_all_reduce.txt) laid out
with nccl-tests 2.19.6's printf widths (src/util.cu ``writeResultHeader``,
``writeBenchmarkLinePreamble``, ``writeBenchmarkLineBody``, ``writePerIterReport``,
``writeTimestamp``)."""

from __future__ import annotations

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.sources import nccl_tests

ROWS = [  # size, count, out-of-place time, algbw, busbw, in-place time, algbw, busbw
    (268435456, 67108864, 1119.8, 239.71, 419.49, 1117.4, 240.24, 420.42),
    (536870912, 134217728, 2157.5, 248.83, 435.46, 2154.8, 249.16, 436.02),
    (1073741824, 268435456, 4027.3, 266.61, 466.57, 4029.1, 266.50, 466.37),
    (2147483648, 536870912, 7983.5, 268.99, 470.73, 7985.2, 268.93, 470.63)]
RANK = ("#  Rank {r:2d} Group  0 Pid 1623025 on {host:>10s} device {r:2d} [0000:{b:02x}:00] "
        "NVIDIA H100 80GB HBM3")
STAMP = "2025-11-03 10:11:12"  # -S 1: strftime "%Y-%m-%d %H:%M:%S", "%21s"


def log_lines(stamps: bool = False, per_iter: bool = False) -> list[str]:
    """The lines of a 2.19.6 all_reduce_perf -b 256M -e 2G -f 2 -g 8 run."""
    ts, fmt = ("timestamp", "%Y-%m-%d %H:%M:%S") if stamps else ("", "")
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803",
             "# Collective test starting: all_reduce_perf",
             "# nThread 1 nGpus 8 minBytes 268435456 maxBytes 2147483648 step: 2(factor) warmup "
             "iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0", "#",
             "# Using devices", *(RANK.format(r=r, host="host", b=0x1b + r) for r in range(8)), "#"]
    names = ["time", "algbw", "busbw", "#wrong"] + (["i_min", "i_max", "i_p99", "i_cv%"]
                                                    if per_iter else [])
    units = ["(us)", "(GB/s)", "(GB/s)", ""] + (["(us)", "(us)", "(us)", "(%)"] if per_iter else [])
    widths = [7, 6, 6, 6] + ([7] * 4 if per_iter else [])
    lead = "# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}"
    lines.append(lead.format("", "", "", "", "") + (
        "              out-of-place (+ per-iteration)                                in-place "
        "(+ per-iteration)" if per_iter else
        "           out-of-place                       in-place          "))
    for first in (["size", "count", "type", "redop", "root"], ["(B)", "(elements)", "", "", ""]):
        cells = names if first[0] == "size" else units
        lines.append(lead.format(*first)
                     + "".join(f"  {c:>{w}s}" for c, w in zip(cells * 2, widths * 2, strict=True))
                     + f" {ts if first[0] == 'size' else fmt:>{19 if stamps else 0}s}")
    for size, count, *cols in ROWS:
        line = f"{size:12d}  {count:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
        for t, a, b in (cols[:3], cols[3:]):
            line += f"  {t:7.1f}  {a:6.2f}  {b:6.2f}  {0:6g}"
            if per_iter:
                line += "".join(f"  {v:7.1f}" for v in (t * 0.98, t * 1.05, t * 1.04)) + "     1.20"
        lines.append(line + (f"{STAMP:>21s}" if stamps else ""))
    return lines + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 448.212 ", "#",
                    "# Collective test concluded: all_reduce_perf", "#"]


def _write(tmp_path, lines, name="all_reduce.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _pinned(run):
    """The H100 table read as DDP runs it: 8 ranks on one host, the in-place column."""
    assert run.op == "all_reduce" and run.ranks == 8 and run.hosts == ["host"]
    assert [p.size_bytes for p in run.points] == [r[0] for r in ROWS]
    assert [p.time_s for p in run.points] == pytest.approx([r[5] * 1e-6 for r in ROWS])
    # busbw from size and time, 2(n-1)/n S/t: 2147483648 B in 7985.2 us on 8 ranks, 470.63 GB/s
    assert run.points[-1].busbw_GBps == pytest.approx(470.63, rel=2e-4)


@pytest.mark.parametrize("stamps, per_iter", [(True, False), (False, True), (True, True)])
def test_nccl_tests_2_19_optional_columns_read_by_their_names(tmp_path, stamps, per_iter):
    lines = log_lines(stamps, per_iter)
    assert (STAMP in lines[-6]) == stamps and ("i_min" in "".join(lines)) == per_iter
    run = nccl_tests.parse_file(_write(tmp_path, lines))
    _pinned(run)
    assert not run.notes


@pytest.mark.parametrize("prefix", [
    "2025-11-03T10:11:12.123456789Z ",  # kubectl logs --timestamps, docker logs -t
    "2025-11-03T10:11:12.1234567Z [1,0]<stdout>:",  # a CI job's raw log of an mpirun
    "2025-11-03 10:11:12 ",  # ts '%Y-%m-%d %H:%M:%S'
    "[2025-11-03 10:11:12,123] ",  # a Python logging-style stamp
    "2025-11-03T10:11:12+01:00  0: ",  # an offset, then srun --label
])
def test_time_stamped_lines_read_as_the_log(tmp_path, prefix):
    run = nccl_tests.parse_file(_write(tmp_path, [prefix + line for line in log_lines()]))
    _pinned(run)


def test_rows_behind_other_words_are_one_line_naming_them(tmp_path, capsys):
    lines = [f"Nov 03 10:11:12 node7 job: {line}" for line in log_lines()]
    path = _write(tmp_path, lines)
    with pytest.raises(ScalesimError, match=r"line 18: the table's rows start after 'Nov 03 "
                       r"10:11:12 node7 job:', words a log collector put before each line; "
                       r"strip them"):
        nccl_tests.parse_file(path)
    assert main(["calibrate", "--from-nccl-tests", str(path), "--out",
                 str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # a table that did stop before its first row is still said to be cut
    with pytest.raises(ScalesimError, match="has no rows .*truncated"):
        nccl_tests.parse_file(_write(tmp_path, log_lines()[:17], "cut.txt"))


CPU_ENQUEUE_US = 8.61  # a -C report's cpu_time, every size


def json_report(nwrong=0, cpu=False, cut=False) -> str:
    """The same run's -J report as nccl-tests 2.19.6 writes it (src/util.cu: ``jsonDouble``
    prints "%lf", ``root`` is the "%6i" cell, ``devices`` the first rank's line of each process,
    here the one process of -g 8)."""
    def timed(t, a, b, wrong):
        # -C: the host's enqueue time per iteration, algbw and busbw the GPU-timed ones (nccl-
        # tests src/common.cu lines 767-796, 858 at a0b82b22)
        t = CPU_ENQUEUE_US if cpu else t
        return (f'{{"{"cpu_time" if cpu else "time"}":{t:f},"alg_bw":{a:f},"bus_bw":{b:f},'
                f'"nwrong":{"null" if wrong is None else f"{wrong:f}"}}}')
    results = ",".join(
        f'{{"size":{s},"count":{c},"type":"float","redop":"sum","root":"    -1",'
        f'"out_of_place":{timed(*cols[:3], nwrong if k == 1 else 0 if nwrong is not None else None)},'
        f'"in_place":{timed(*cols[3:], 0 if nwrong is not None else None)},'
        f'"actual_iterations":20,"experiment_name":""}}'
        for k, (s, c, *cols) in enumerate(ROWS))
    text = ('{"version":3,"start_time":"2025-11-03 10:11:12","args":["./build/all_reduce_perf",'
            '"-b","256M","-e","2G","-f","2","-g","8","-J","ar.json"],"env":["HOME=/root",'
            '"NCCL_ALGO=Ring"],"nccl_version":22803,"config":{"nthreads":1,"ngpus":8,'
            '"minimum_bytes":268435456,"maximum_bytes":2147483648,"step_factor":2,'
            '"warmup_iters":1,"iterations":20,"aggregated_iterations":1,"validation":1,'
            '"graph":0,"blocking_collectives":false,"per_iter_timing":false,"per_iter_skip":0,'
            '"parallel_init":false,"devices":[{"rank":0,"group":0,"pid":1623025,'
            '"hostname":"host","device":0,"device_hex":"0000:1b:00",'
            '"device_info":"NVIDIA H100 80GB HBM3"}]},"results":[' + results + '],'
            '"out_of_bounds":{"count":0,"okay":true},"average_bus_bandwidth":{"bandwidth":'
            '448.212000,"okay":"unchecked"},"errors":[],"end_time":"2025-11-03 10:11:40"}')
    return text[: len(text) // 2] if cut else text


def test_the_json_report_of_nccl_tests_reads_as_its_log(tmp_path):
    path = tmp_path / "ar.json"
    path.write_text(json_report())
    run = nccl_tests.parse_file(path)
    _pinned(run)  # 8 ranks: the process's first rank listed, nthreads 1 x ngpus 8 on it
    assert run.devices == ["NVIDIA H100 80GB HBM3"] and run.algorithm == "Ring"
    assert run.points == nccl_tests.parse_file(_write(tmp_path, log_lines())).points
    path.write_text(json_report(nwrong=None, cpu=True))  # -c 0 -C: nwrong null, cpu_time
    cpu_run = nccl_tests.parse_file(path)
    notes = " ".join(cpu_run.notes)
    assert "#wrong is N/A" in notes and "printed times are CPU-side" in notes
    # each result's time from its alg_bw (S / algbw), not its 8.61 us cpu_time: within the
    # alg_bw's and the time's printed digits of the GPU-timed one (0.005 / 240.24 + 0.05 /
    # 1117.4 = 6.6e-5 at most)
    assert [p.time_s for p in cpu_run.points] == pytest.approx(
        [r[5] * 1e-6 for r in ROWS], rel=6.7e-5)
    assert cpu_run.points[-1].time_s == pytest.approx(2147483648 / 268.93e9, rel=1e-12)


@pytest.mark.parametrize("report, message", [
    (json_report(nwrong=3), r"ar\.json result 2: #wrong is 3 at 536870912 bytes"),
    (json_report(cut=True), r"ar\.json: not valid JSON .*the file is cut short"),
    ('{"version":3,"args":["./build/all_reduce_perf"]}', r"the JSON has no 'results': not an "
     r"nccl-tests -J report"),
    (json_report().replace('"alg_bw"', '"algbw"', 1), r"result 1's out_of_place has no 'alg_bw'"),
    # session 49: a report's results go through the log's algbw x time size check
    # (check_size_units, the report rendered as its log), within the digits "%lf" left after
    # the JSON's trailing zeros: 268.99 x 7983.5 us -> 2,147,481,665 bytes (2,147,428,298 to
    # 2,147,535,032: 268.985-268.995 x 7983.45-7983.55 x 1e3, by hand), not 2^32
    (json_report().replace('"size":2147483648', '"size":4294967296', 1),
     r"ar\.json result 4: its size is 4,294,967,296 bytes, but algbw x time \(268\.99 GB/s x "
     r"7983\.5 us\) is 2,147,481,665 \(2,147,428,298 to 2,147,535,032 as printed;"),
])
def test_a_bad_json_report_is_one_line(tmp_path, capsys, report, message):
    path = tmp_path / "ar.json"
    path.write_text(report)
    with pytest.raises(ScalesimError, match=message) as exc:
        nccl_tests.parse_file(path)
    assert "\n" not in str(exc.value)
    assert main(["calibrate", "--from-nccl-tests", str(path), "--out",
                 str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
