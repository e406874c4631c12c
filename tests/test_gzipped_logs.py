"""Logs kept gzipped (logrotate, a cluster's archive, ``gzip log.txt``) read as the text they hold:
nccl-tests logs, ``nvidia-smi topo -m`` and ``--query-gpu`` CSVs (``jsonio.open_text``, the
same opener as the profiler traces'); a cut or corrupt stream is one line naming the file."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from test_sources_nvidia_smi import smi_csv

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.sources import nccl_tests, nvidia_smi

FIX = Path(__file__).parent / "fixtures"
H100_1N = FIX / "nccl_tests" / "h100_8gpu_all_reduce.txt"
TOPO = FIX / "nvidia_smi" / "h100_x8_nics_topo.txt"


def _gzipped(src: Path, dest: Path) -> Path:
    dest.write_bytes(gzip.compress(src.read_bytes()))
    return dest


def test_a_gzipped_nccl_tests_log_reads_as_its_text(tmp_path):
    packed = nccl_tests.parse_file(_gzipped(H100_1N, tmp_path / "all_reduce.txt.gz"))
    plain = nccl_tests.parse_file(H100_1N)
    assert packed.points == plain.points and packed.ranks == 8 and packed.hosts == ["host"]
    # the fixture's last row, by hand: 2 GiB in place in 7985.2 us, busbw 470.63 GB/s
    assert packed.points[-1].time_s == pytest.approx(7985.2e-6)
    assert packed.points[-1].busbw_GBps == pytest.approx(470.63, rel=2e-3)


def test_gzipped_nvidia_smi_outputs_read_as_their_text(tmp_path):
    topo = nvidia_smi.parse_topo_file(_gzipped(TOPO, tmp_path / "topo.txt.gz"))
    plain = nvidia_smi.parse_topo_file(TOPO)
    assert topo.links == plain.links and len(topo.gpus) == 8 and topo.nics == plain.nics
    csv = smi_csv(tmp_path / "smi.csv", slow=5)
    report = nvidia_smi.parse_smi_csv(_gzipped(csv, tmp_path / "smi.csv.gz"))
    assert report.slow == [5]


@pytest.mark.parametrize("cut", [lambda b: b[: len(b) // 2], lambda b: b[:10] + b"\x00" * 64])
def test_a_cut_or_corrupt_gzipped_log_is_one_line(tmp_path, capsys, cut):
    path = tmp_path / "all_reduce.txt.gz"
    path.write_bytes(cut(gzip.compress(H100_1N.read_bytes())))
    with pytest.raises(ScalesimError, match="corrupt or cut gzip data") as exc:
        nccl_tests.parse_file(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)
    assert main(["calibrate", "--from-nccl-tests", str(path), "--out",
                 str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt or cut gzip data" in err
