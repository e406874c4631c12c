"""nccl-tests logs of every version and as users paste them: the 2017-2019 tables (``bytes N ...
res`` header, times in ms, rank lines without a Pid), the all_gather / reduce_scatter tables of
2019-2020 (algbw = S (n-1)/n / t, busbw equal to it), NCCL's debug lines split into the rows, a
table under inter= beside a one-server log, and a rank list cut short. Each log is written here
with nccl-tests' own printf formats (NVIDIA/nccl-tests src/common.cu at b188a15, cbe7f65 and
today's src/util.cu), from a known alpha and bus bandwidth, so every figure read back is known."""

from __future__ import annotations

import pytest

from scalesim.errors import ScalesimError
from scalesim.sources import nccl_tests

ALPHA_US = 10.0
BUSBW_GBPS = 100.0
SIZES = [2**k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB


def _time_us(op: str, size: int, ranks: int) -> float:
    """The collective's time from ALPHA_US and BUSBW_GBPS: busbw = S x factor / t."""
    factor = 2 * (ranks - 1) / ranks if op == "all_reduce" else (ranks - 1) / ranks
    return ALPHA_US + size * factor / BUSBW_GBPS / 1e3


def _old_gather_log(op: str, ranks: int = 8) -> str:
    """A 2019-2020 all_gather / reduce_scatter table: size the full buffer, count one rank's,
    algbw = busbw = S (n-1)/n / t ("%7.1f" time, "%6.2f" bandwidths, ``error`` columns)."""
    lines = [f"# nThread 1 nGpus {ranks} minBytes 1024 maxBytes 1073741824 step: 4(factor) "
             "warmup iters: 5 iters: 20 validation: 1", "#", "# Using devices"]
    lines += [f"#   Rank {r:2d} Pid  41234 on    dgx1-01 device {r:2d} [0x{6 + r:02x}] "
              "Tesla V100-SXM2-32GB" for r in range(ranks)]
    lines += ["#", "#       size         count    type     time   algbw   busbw  error     time "
              "  algbw   busbw  error"]
    for size in SIZES:
        t = _time_us(op, size, ranks)
        bw = size * (ranks - 1) / ranks / t / 1e3
        half = f"{t:7.1f}  {bw:6.2f}  {bw:6.2f}  0e+00"
        lines.append(f"{size:12d}  {size // 4 // ranks:12d}   float  {half}  {half}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 50.1", "#"]
    return "\n".join(lines) + "\n"


def _all_reduce_rows(ranks: int, half: str, row: str) -> list[str]:
    """An all_reduce table's rows of SIZES in float, each half (out-of-place, in-place) printed
    by ``half`` (fields t_ms, t_us, algbw = S / t, busbw = algbw 2(n-1)/n) in ``row`` (size,
    count, half)."""
    rows = []
    for size in SIZES:
        t = _time_us("all_reduce", size, ranks)
        algbw = size / t / 1e3
        cells = half.format(t_ms=t / 1e3, t_us=t, algbw=algbw, busbw=algbw * 2 * (ranks - 1) / ranks)
        rows.append(row.format(size=size, count=size // 4, half=cells))
    return rows


def _old_all_reduce_log(ranks: int = 8) -> str:
    """A 2017-2019 all_reduce table: ``bytes N type op time algbw busbw res``, times in ms
    ("%7.3f"), rank lines without a Pid."""
    lines = [f"nThread 1 nGpus {ranks} minBytes 1024 maxBytes 1073741824 step: 4(factor) "
             "warmup iters: 5 iters: 20 validation: 1", "# NCCL Tests compiled with NCCL 2.2",
             "# Using devices"]
    lines += [f"#   Rank {r:2d} on       dgx1 device {r:2d} [0x{6 + r:02x}] Tesla V100-SXM2-16GB"
              for r in range(ranks)]
    lines += ["", "#      bytes             N    type      op     time  algbw  busbw      res"
              "     time  algbw  busbw      res"]
    lines += _all_reduce_rows(ranks, "{t_ms:7.3f}  {algbw:5.2f}  {busbw:5.2f}    0e+00",
                              "{size:12d}  {count:12d}   float     sum  {half}  {half}")
    lines += [" Out of bounds values : 0 OK", " Avg bus bandwidth    : 60.1", ""]
    return "\n".join(lines) + "\n"


def _all_reduce_log(ranks: int, per_host: int, listed: int | None = None,
                    ellipsis: bool = False, rank_lines: bool = True) -> str:
    """Today's all_reduce table of ``ranks`` ranks, ``per_host`` a host, its first ``listed``
    rank lines kept (all by default), a '#  ...' line after them if ``ellipsis``."""
    lines = ["# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup "
             "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    if rank_lines:
        lines += [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {f'n{r // per_host}':>10} device "
                  f"{r % per_host:2d} [0x{16 + r % per_host:02x}] NVIDIA A100-SXM4-80GB"
                  for r in range(ranks if listed is None else listed)]
    lines += ["#  ..."] if ellipsis else []
    lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw "
              "#wrong     time   algbw   busbw #wrong"]
    lines += _all_reduce_rows(ranks, "{t_us:8.1f}  {algbw:6.2f}  {busbw:6.2f}      0",
                              "{size:12d}  {count:12d}     float     sum      -1  {half}  {half}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 40.1", "#"]
    return "\n".join(lines) + "\n"


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
def test_a_gather_table_of_2019_reads_its_algbw_the_old_way(tmp_path, op):
    """Was: refused as 'edited or garbled' (algbw x time is S x 7/8, nccl-tests' algbw before
    ec1b5e2, 2020-06). Its sizes and times mean today's: the busbw read back is the log's own,
    100 GB/s x (t - alpha) / t at the largest row: 1 GiB x 7/8 / 100 GB/s = 9,395.2 us of
    transfer in 9,405.2 us (hand-computed)."""
    run = nccl_tests.parse_file(_write(tmp_path, f"{op}_perf.txt", _old_gather_log(op)))
    assert (run.op, run.ranks, run.nodes) == (op, 8, 1)
    top = max(run.points, key=lambda p: p.size_bytes)
    assert top.time_s == pytest.approx(9405.2e-6)
    assert top.busbw_GBps == pytest.approx(100.0 * 9395.24 / 9405.2, rel=1e-4)
    assert any("nccl-tests before 2020-06" in n and "S (n-1)/n / t" in n for n in run.notes)


def test_an_edited_row_of_an_old_gather_table_is_still_refused(tmp_path):
    """The old reading checks each row against S (n-1)/n as today's checks S: a time changed by
    hand (9405.2 -> 4702.6 us at 1 GiB) is named, with the old convention in the message."""
    text = _old_gather_log("all_gather").replace(" 9405.2 ", " 4702.6 ", 1)
    with pytest.raises(ScalesimError, match=r"algbw = size x \(n-1\)/n / time in its all_gather"):
        nccl_tests.parse_file(_write(tmp_path, "all_gather_perf.txt", text))


def test_an_unnamed_old_gather_table_is_not_read_as_an_all_reduce(tmp_path):
    """busbw = algbw is an all-reduce's only on 2 ranks; on 8 listed ranks the table is an old
    all_gather or reduce_scatter, which the rows cannot tell apart: refused, saying how to
    name it (was: taken as an all-reduce over 8 ranks, its times read with the wrong factor)."""
    with pytest.raises(ScalesimError, match=r"busbw equals algbw on 8 ranks.*name the file"):
        nccl_tests.parse_file(_write(tmp_path, "node1.txt", _old_gather_log("all_gather")))


def test_a_2018_table_reads_its_times_in_milliseconds(tmp_path):
    """Was: 'not nccl-tests output'. The 2017-2019 header ``bytes N type op time algbw busbw
    res`` is today's ``size count type redop time algbw busbw error``, its times in ms: the
    1 GiB row's '9,405.2 us' is printed 9.405 ms... here 18.802 ms (2 x 7/8 x 1 GiB / 100 GB/s
    + 10 us = 18,800.5 us, printed to the microsecond)."""
    run = nccl_tests.parse_file(_write(tmp_path, "all_reduce_perf.txt", _old_all_reduce_log()))
    assert (run.op, run.ranks, run.hosts) == ("all_reduce", 8, ["dgx1"])
    top = max(run.points, key=lambda p: p.size_bytes)
    assert top.time_s == pytest.approx(18.800e-3, abs=0.5e-6)
    assert top.busbw_GBps == pytest.approx(BUSBW_GBPS, rel=1e-3)
    assert any("read in milliseconds" in n for n in run.notes)


def test_nccls_debug_lines_inside_a_row_are_refused_naming_the_fix(tmp_path):
    """NCCL_DEBUG=INFO's tuning lines can split a row ('8 2 float sum -1host:1:1 [0] NCCL INFO 8
    Bytes -> Algo 1 ...'); was read as '#wrong is 8', 'fix the cluster'. Now one line naming
    NCCL_DEBUG and NCCL_DEBUG_FILE."""
    text = _all_reduce_log(8, 8)
    row = next(line for line in text.splitlines() if line.strip().startswith("1024 "))
    split = "        1024           256     float     sum      -1h:1:1 [0] NCCL INFO 8 Bytes -> Algo 1"
    with pytest.raises(ScalesimError, match=r"line \d+: NCCL's own messages .*NCCL_DEBUG=WARN.*"
                                            r"NCCL_DEBUG_FILE"):
        nccl_tests.parse_file(_write(tmp_path, "all_reduce_perf.txt", text.replace(row, split)))


def test_a_table_under_inter_takes_its_servers_from_the_one_server_log_beside_it(tmp_path):
    """A pasted 32-rank table (no rank lines) under inter= beside a log of one 8-GPU server: 4
    servers of 8 (was 2 of 16, the per-server alpha (31 - 30 x a_intra) / 1 instead of
    (31 - 28 x a_intra) / 3); alone, 2 servers, said as assumed."""
    node = _write(tmp_path, "node_all_reduce_perf.txt", _all_reduce_log(8, 8))
    table = _write(tmp_path, "table_all_reduce_perf.txt", _all_reduce_log(32, 8, rank_lines=False))
    intra, inter = nccl_tests.load_runs([node, f"inter={table}"])
    assert (intra.nodes, inter.ranks, inter.nodes) == (1, 32, 4)
    assert any("4 servers of 8 GPUs taken" in n for n in inter.notes)
    (alone,) = nccl_tests.load_runs([f"inter={table}"])
    assert alone.nodes == 2
    assert any("2 servers of 16 GPUs assumed" in n for n in alone.notes)


def test_a_rank_list_cut_short_takes_the_ranks_its_bandwidths_pin(tmp_path):
    """Ranks 0-12 of a 32-rank run listed, then '#  ...': busbw/algbw printed to two decimals
    allows only 2 x 31/32 (was: 13 ranks, and 2 servers); the fullest host lists 8, so 4
    servers. A complete list the bandwidths contradict keeps the header (the existing NVL72
    tray test)."""
    path = _write(tmp_path, "cut_all_reduce_perf.txt",
                  _all_reduce_log(32, 8, listed=13, ellipsis=True))
    run = nccl_tests.parse_file(path)
    assert (run.ranks, run.nodes, run.level) == (32, 4, "inter_node")
    assert any("allows only 32 as printed" in n for n in run.notes)
